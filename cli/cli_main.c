/* cli_main.c — `ringtrain`, the command line of a ringtrain cluster.
 *
 *   ringtrain COMMAND [FLAGS] [ARGS]    (ringtrain help, ringtrain COMMAND --help)
 *
 * Every command is a row of the table at the end: its name, usage, flags
 * and handler; one parser (cli_args.c) refuses unknown flags and bad values
 * before anything is contacted.  Where the coordinator is: --coordinator
 * HOST:PORT, --ca FILE, --token-file FILE, --server-name NAME; else
 * RINGTRAIN_COORDINATOR, RINGTRAIN_CA, RINGTRAIN_TOKEN_FILE (or
 * RINGTRAIN_TOKEN), RINGTRAIN_SERVER_NAME; else ~/.config/ringtrain/cli.conf
 * (or RINGTRAIN_CLI_CONFIG). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_config.h"

#include "cli.h"
#include "rt_addr.h"
#include "rt_json.h"
#include "rt_schemas.h"
#include "trainer.h"

typedef struct cli_cfg {
    char *coordinator, *ca, *token_file, *server_name;
    int64_t connect_retry_us, reconnect_us;
    rt_s3_keys s3;
} cli_cfg;

static const rt_cfg_key cli_keys[] = {
    RT_CFG_S("cli", "coordinator", "127.0.0.1:7071", cli_cfg, coordinator,
             "host:port of the coordinator's HTTP API"),
    RT_CFG_P("cli", "ca", "ca.crt", cli_cfg, ca, "the cluster CA certificate"),
    RT_CFG_P("cli", "token_file", "token", cli_cfg, token_file,
             "file holding your API token (`ringtrain token create NAME --role ...`, or the "
             "admin.token of init-cluster); the agents' registration token is refused by the API"),
    RT_CFG_S("cli", "server_name", NULL, cli_cfg, server_name,
             "name in the coordinator's certificate (default: its host)"),
    RT_CFG_D("cli", "connect_retry", "30s", 0, 3600e6, cli_cfg, connect_retry_us,
             "submit, exec and run keep trying a coordinator that refuses connections this long, "
             "and post a job again (with its `Idempotency-Key`: never a second job) when a POST "
             "the coordinator took got no answer"),
    RT_CFG_D("cli", "reconnect_timeout", "10min", 0, 7 * 86400e6, cli_cfg, reconnect_us,
             "a follower (--follow, exec, logs --follow) waits this long for a coordinator that "
             "went away (a restart), then resumes where it stopped"),
    RT_CFG_S3_KEYS(cli_cfg),
};
static const rt_cfg_schema cli_schema = {"cli.conf", cli_keys, RT_ARRAY_LEN(cli_keys),
                                         sizeof(cli_cfg), NULL};

/* cli.conf's path: RINGTRAIN_CLI_CONFIG, else ~/.config/ringtrain/cli.conf. */
static const char *cli_conf_path(char *buf, size_t len)
{
    const char *p = getenv("RINGTRAIN_CLI_CONFIG");
    if (!p && getenv("HOME")) {
        snprintf(buf, len, "%s/.config/ringtrain/cli.conf", getenv("HOME"));
        p = buf;
    }
    return p;
}

/* cli.conf's [s3] under the environment, as the AWS tools take their
 * config file (an error in the file is reported by the commands that
 * connect to the coordinator). */
static void s3_defaults(void)
{
    char path[1024];
    const char *p = cli_conf_path(path, sizeof path);
    cli_cfg f;
    rt_cfg_errors e = {0};
    if (p && rt_cfg_load_file(&cli_schema, p, &f, &e) == RT_OK)
        rt_s3_keys_setenv(&f.s3, false);
    rt_cfg_errors_free(&e);
    if (p)
        rt_cfg_free(&cli_schema, &f);
}

rt_status cli_conn_load(cli_conn *c, const cli_args *a, char *err)
{
    const char *coordinator = cli_value(a, "--coordinator"), *ca = cli_value(a, "--ca"),
               *token_file = cli_value(a, "--token-file"),
               *server_name = cli_value(a, "--server-name");
    memset(c, 0, sizeof *c);
    c->timeout_ms = 15000;
    cli_cfg f;
    rt_cfg_errors e = {0};
    char path[1024];
    const char *cfgpath = cli_conf_path(path, sizeof path);
    rt_status st = cfgpath ? rt_cfg_load_file(&cli_schema, cfgpath, &f, &e) : RT_ERR_NOTFOUND;
    if (st == RT_ERR_NOTFOUND) { /* no file: defaults */
        rt_cfg_errors_free(&e);
        rt_cfg_free(&cli_schema, &f);
        rt_cfg_init(&cli_schema, &f);
    } else if (st != RT_OK) {
        rt_cfg_errors_join(&e, err, RT_ERR_LEN);
        rt_cfg_errors_free(&e);
        rt_cfg_free(&cli_schema, &f);
        return RT_ERR_INVALID;
    }
    const char *coord = coordinator ? coordinator
                        : getenv("RINGTRAIN_COORDINATOR") ? getenv("RINGTRAIN_COORDINATOR")
                                                          : f.coordinator;
    const char *caf = ca ? ca : getenv("RINGTRAIN_CA") ? getenv("RINGTRAIN_CA") : f.ca;
    const char *tokf = token_file ? token_file
                       : getenv("RINGTRAIN_TOKEN_FILE") ? getenv("RINGTRAIN_TOKEN_FILE")
                                                        : f.token_file;
    const char *sn = server_name ? server_name : getenv("RINGTRAIN_SERVER_NAME")
                                                     ? getenv("RINGTRAIN_SERVER_NAME")
                                                     : f.server_name;
    if (rt_addr_parse(coord, false, c->host, sizeof c->host, &c->port, err) != RT_OK) {
        rt_err_prefix(err, "coordinator address");
        st = RT_ERR_INVALID;
    } else {
        snprintf(c->server_name, sizeof c->server_name, "%s", sn && *sn ? sn : c->host);
        snprintf(c->ca, sizeof c->ca, "%s", caf ? caf : "ca.crt");
        const char *tok = getenv("RINGTRAIN_TOKEN");
        if (!token_file && tok && strlen(tok) == RT_TOKEN_HEX)
            snprintf(c->token, sizeof c->token, "%s", tok);
        else
            st = rt_token_load(tokf ? tokf : "token", c->token, err);
    }
    c->connect_retry_ms = (int)(f.connect_retry_us / 1000);
    c->reconnect_ms = (int)(f.reconnect_us / 1000);
    rt_cfg_free(&cli_schema, &f);
    return st;
}


void cli_conf_reference(FILE *f) { rt_cfg_print_reference(&cli_schema, f); }

/* ---- talking to the coordinator -------------------------------------------------- */

static bool connect_or_say(const cli_args *a, cli_conn *c)
{
    char err[RT_ERR_LEN];
    if (cli_conn_load(c, a, err) == RT_OK)
        return true;
    fprintf(stderr, "ringtrain: %s\n", err);
    return false;
}

/* GET path: the parsed document (or, with --json, the text printed and
 * *doc NULL).  The exit status on failure: 3 for "not found", else 1. */
static int get_doc(const cli_args *a, const char *path, rt_json **doc)
{
    *doc = NULL;
    cli_conn c;
    if (!connect_or_say(a, &c))
        return 1;
    http_resp r;
    char err[RT_ERR_LEN];
    if (http_request(&c, "GET", path, NULL, &r, err) != RT_OK) {
        fprintf(stderr, "ringtrain: %s\n", err);
        return 1;
    }
    int rc = 0;
    if (r.status != 200) {
        char buf[RT_ERR_LEN];
        fprintf(stderr, "ringtrain: %s\n", http_error_text(&r, buf, sizeof buf));
        rc = r.status == 404 ? 3 : 1;
    } else if (cli_switch(a, "--json")) {
        printf("%s\n", r.body);
    } else if (rt_json_parse(r.body, r.len, doc, err) != RT_OK) {
        fprintf(stderr, "ringtrain: the coordinator's answer is not JSON: %s\n", err);
        rc = 1;
    }
    free(r.body);
    return rc;
}

/* POST a change; prints `done` on success.  3 for "not found". */
static int post_change(const cli_args *a, const char *path, const char *body, const char *done)
{
    cli_conn c;
    if (!connect_or_say(a, &c))
        return 1;
    http_resp r;
    char err[RT_ERR_LEN];
    if (http_request(&c, "POST", path, body, &r, err) != RT_OK) {
        fprintf(stderr, "ringtrain: %s\n", err);
        return 1;
    }
    int rc = r.status == 200 ? 0 : r.status == 404 ? 3 : 1;
    char buf[RT_ERR_LEN];
    if (rc)
        fprintf(stderr, "ringtrain: %s\n", http_error_text(&r, buf, sizeof buf));
    else
        printf("%s\n", done);
    free(r.body);
    return rc;
}

static int show(const cli_args *a, const char *path, int (*fn)(const rt_json *))
{
    rt_json *d = NULL;
    int rc = get_doc(a, path, &d);
    if (rc == 0 && d)
        rc = fn(d);
    rt_json_free(d);
    return rc;
}

/* ---- commands ---------------------------------------------------------------------- */

static int cmd_nodes(const cli_args *a) { return show(a, "/v1/nodes", cli_show_nodes); }

/* --since: "2h" (that long ago), "2026-11-24", "2026-11-24 14:00", or unix seconds. */
static bool parse_since(const char *v, double *out)
{
    int64_t us;
    char err[RT_ERR_LEN];
    if (rt_parse_duration(v, &us, err) == RT_OK) {
        *out = (double)time(NULL) - (double)us / 1e6;
        return true;
    }
    struct tm tm;
    const char *fmts[] = {"%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d"};
    for (size_t i = 0; i < 3; i++) {
        memset(&tm, 0, sizeof tm);
        const char *end = strptime(v, fmts[i], &tm);
        if (end && !*end) {
            tm.tm_isdst = -1;
            *out = (double)mktime(&tm);
            return true;
        }
    }
    return false;
}

static int cmd_jobs(const cli_args *a)
{
    char path[512];
    size_t n = (size_t)snprintf(path, sizeof path, "/v1/jobs?");
    const char *state = cli_value(a, "--state"), *user = cli_value(a, "--user"),
               *since = cli_value(a, "--since");
    if (state) {
        if (rt_job_state_parse(state) < 0) {
            fprintf(stderr, "ringtrain jobs: --state %s: one of %s\n", cli_safe(state),
                    rt_job_state_list());
            return 2;
        }
        n += (size_t)snprintf(path + n, sizeof path - n, "state=%s&", state);
    }
    if (user) {
        for (const char *p = user; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                  *p == '_' || *p == '-' || *p == '.')) {
                fprintf(stderr, "ringtrain jobs: --user %s: not a user name\n", user);
                return 2;
            }
        n += (size_t)snprintf(path + n, sizeof path - n, "user=%s&", user);
    }
    if (since) {
        double t;
        if (!parse_since(since, &t)) {
            fprintf(stderr, "ringtrain jobs: --since %s: a duration (2h, 3d) or a date "
                            "(2026-11-24, \"2026-11-24 14:00\")\n", since);
            return 2;
        }
        n += (size_t)snprintf(path + n, sizeof path - n, "since=%.0f&", t);
    }
    int64_t limit = 100, before = 0;
    if (cli_int(a, "--limit", 1, 10000, &limit) < 0 || cli_int(a, "--before", 1, INT64_MAX, &before) < 0)
        return 2;
    n += (size_t)snprintf(path + n, sizeof path - n, "limit=%lld", (long long)limit);
    if (before)
        snprintf(path + n, sizeof path - n, "&before=%lld", (long long)before);
    return show(a, path, cli_show_jobs);
}

static int cmd_status(const cli_args *a)
{
    int64_t id;
    if (cli_job_id(a, &id) < 0)
        return 2;
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    if (cli_switch(a, "--results") && !cli_switch(a, "--json"))
        return show(a, path, cli_show_results);
    return show(a, path, cli_show_job);
}

static int cmd_logs(const cli_args *a)
{
    int64_t id, rank = -1, attempt = 0;
    if (cli_job_id(a, &id) < 0 || cli_int(a, "--rank", 0, 65535, &rank) < 0 ||
        cli_int(a, "--attempt", 1, 1000000, &attempt) < 0)
        return 2;
    cli_conn c;
    if (!connect_or_say(a, &c))
        return 1;
    cli_raw = cli_switch(a, "--raw");
    return cli_logs(&c, id, (int)rank, attempt, cli_switch(a, "--follow"));
}

static int job_action(const cli_args *a, const char *action, const char *done)
{
    int64_t id;
    if (cli_job_id(a, &id) < 0)
        return 2;
    char path[96], msg[96];
    snprintf(path, sizeof path, "/v1/jobs/%lld/%s", (long long)id, action);
    snprintf(msg, sizeof msg, "job %lld %s", (long long)id, done);
    return post_change(a, path, NULL, msg);
}

static int cmd_cancel(const cli_args *a) { return job_action(a, "cancel", "cancelled"); }
static int cmd_hold(const cli_args *a) { return job_action(a, "hold", "held"); }
static int cmd_release(const cli_args *a) { return job_action(a, "release", "released"); }

static int node_action(const cli_args *a, bool drain)
{
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, "agent", a->pos[0]);
    rt_jw_obj_end(&w);
    char *body = rt_jw_take(&w, NULL), msg[300];
    snprintf(msg, sizeof msg, drain ? "%s is draining: no new ranks; running ones finish"
                                    : "%s takes ranks again", a->pos[0]);
    int rc = body ? post_change(a, drain ? "/v1/nodes/drain" : "/v1/nodes/resume", body, msg) : 1;
    free(body);
    return rc;
}

static int cmd_drain(const cli_args *a) { return node_action(a, true); }
static int cmd_resume(const cli_args *a) { return node_action(a, false); }

static int cmd_submit(const cli_args *a)
{
    char *body = NULL;
    int rc = cli_job_body_from_file(a, &body, NULL); /* a bad job file costs no connection */
    if (rc != 0)
        return rc;
    cli_conn c;
    if (!connect_or_say(a, &c)) {
        free(body);
        return 1;
    }
    rt_json *bj = NULL;
    char err[RT_ERR_LEN];
    bool exec_job = rt_json_parse(body, strlen(body), &bj, err) == RT_OK &&
                    !strcmp(rt_json_str(rt_json_get(bj, RT_F_TYPE), ""), "exec");
    rt_json_free(bj);
    c.retry_ms = c.connect_retry_ms;
    rc = cli_submit_and_follow(&c, body, cli_switch(a, "--follow"), exec_job,
                               cli_switch(a, "--json"), false);
    free(body);
    return rc;
}

static int cmd_exec(const cli_args *a)
{
    if (cli_switch(a, "--local"))
        return cli_local(a, true);
    char *body = NULL;
    int rc = cli_job_body_from_exec(a, &body, NULL);
    if (rc != 0)
        return rc;
    cli_conn c;
    if (!connect_or_say(a, &c)) {
        free(body);
        return 1;
    }
    c.retry_ms = c.connect_retry_ms;
    rc = cli_submit_and_follow(&c, body, true, true, cli_switch(a, "--json"), true);
    free(body);
    return rc;
}

static int cmd_run(const cli_args *a) { return cli_local(a, false); }

/* One rank of a training job in a Slurm step (`srun ringtrain worker JOB.INI`):
 * the job file with --set, np = the step's tasks, checked as `run` checks it,
 * trained by the rank with its step's rendezvous (docs/slurm.md). */
static int cmd_worker(const cli_args *a)
{
    rt_job_cfg j;
    int rc = cli_job_load(a, getenv("SLURM_NTASKS"), "", &j);
    if (rc != 0)
        return rc;
    if (j.type != RT_JOB_TRAIN) {
        fprintf(stderr,
                "ringtrain worker: %s is not a training job (type = exec runs its "
                "program under srun itself: srun PROGRAM)\n",
                a->pos[0]);
        rt_cfg_free(&rt_job_schema, &j);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    rc = rt_worker_run(&j);
    rt_cfg_free(&rt_job_schema, &j);
    return rc;
}

static int cmd_config_reference(const cli_args *a)
{
    (void)a;
    /* docs/config.md is this output (a test keeps them equal) */
    printf("# Configuration reference\n\nGenerated by `ringtrain config-reference` from the "
           "tables the programs parse with; every key, its type, default and meaning. "
           "Relative paths are relative to the file that names them.\n");
    const struct {
        const char *title;
        const rt_cfg_schema *s;
    } all[] = {{"Job files (`ringtrain submit`, `ringtrain run`)", &rt_job_schema},
               {"`agent.conf` (`ringtrain-agent`)", &rt_agent_schema},
               {"`coordinator.conf` (`ringtrain-coordinator`)", &rt_coord_schema}};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        printf("\n## %s\n", all[i].title);
        rt_cfg_print_reference(all[i].s, stdout);
    }
    printf("\n## `cli.conf` (`~/.config/ringtrain/cli.conf`)\n");
    cli_conf_reference(stdout);
    return 0;
}

static int cmd_version(const cli_args *a)
{
    (void)a;
    printf("ringtrain %s\n", RT_VERSION);
    return 0;
}

static int cmd_help(const cli_args *a);

/* ---- the table ------------------------------------------------------------------------ */

static const cli_cmd COMMANDS[] = {
    {.name = "submit",
     .usage = "[JOB.INI]",
     .summary = "queue a job on the cluster",
     .flags = CLI_SUBMIT_FLAGS,
     .min_pos = 0,
     .max_pos = 1,
     .connects = true,
     .run = cmd_submit},
    {.name = "exec",
     .usage = "[FLAGS] -- PROGRAM ARGS...",
     .summary = "run a program on N ranks with ringtrain's rendezvous (like horovodrun); Ctrl-C "
                "cancels it",
     .flags = CLI_EXEC_FLAGS,
     .rest = true,
     .rest_required = true,
     .connects = true,
     .run = cmd_exec},
    {.name = "run",
     .usage = "[JOB.INI]",
     .summary = "run a job on this machine: coordinator and agent just for it",
     .flags = CLI_RUN_FLAGS,
     .min_pos = 0,
     .max_pos = 1,
     .run = cmd_run},
    {.name = "jobs",
     .usage = "",
     .summary = "list jobs, newest first",
     .flags = CLI_JOBS_FLAGS,
     .connects = true,
     .run = cmd_jobs},
    {.name = "status",
     .usage = "JOB",
     .summary = "a job's state, placement, failure, events and results",
     .flags = CLI_STATUS_FLAGS,
     .min_pos = 1,
     .max_pos = 1,
     .connects = true,
     .run = cmd_status},
    {.name = "logs",
     .usage = "JOB",
     .summary = "the output of a job's ranks",
     .flags = CLI_LOGS_FLAGS,
     .min_pos = 1,
     .max_pos = 1,
     .connects = true,
     .run = cmd_logs},
    {.name = "cancel",
     .usage = "JOB",
     .summary = "stop a job",
     .min_pos = 1,
     .max_pos = 1,
     .connects = true,
     .run = cmd_cancel},
    {.name = "hold",
     .usage = "JOB",
     .summary = "keep a queued job from starting",
     .min_pos = 1,
     .max_pos = 1,
     .connects = true,
     .run = cmd_hold},
    {.name = "release",
     .usage = "JOB",
     .summary = "let a held job start",
     .min_pos = 1,
     .max_pos = 1,
     .connects = true,
     .run = cmd_release},
    {.name = "nodes",
     .usage = "",
     .summary = "the agents, their slots, CPUs, memory and GPUs",
     .flags = CLI_JSON_FLAGS,
     .connects = true,
     .run = cmd_nodes},
    {.name = "drain",
     .usage = "NODE",
     .summary = "no new ranks on NODE (host_id/name or name); running ones finish",
     .min_pos = 1,
     .max_pos = 1,
     .connects = true,
     .run = cmd_drain},
    {.name = "resume",
     .usage = "NODE",
     .summary = "let a drained NODE take ranks again",
     .min_pos = 1,
     .max_pos = 1,
     .connects = true,
     .run = cmd_resume},
    {.name = "token",
     .usage = "create NAME --role ROLE [--unix-user USER] | list | revoke ID-OR-NAME",
     .summary = "API tokens with roles (needs an admin token)",
     .flags = CLI_TOKEN_FLAGS,
     .min_pos = 1,
     .max_pos = 2,
     .connects = true,
     .run = cli_token},
    {.name = "init-cluster",
     .usage = "DIR",
     .summary = "make a cluster's CA, coordinator certificate, tokens and configs",
     .flags = CLI_INIT_FLAGS,
     .min_pos = 1,
     .max_pos = 1,
     .run = cli_init_cluster},
    {.name = "prep",
     .usage = "--input DIR --sql FILE --out DIR | --from PATH --label COL --out DIR",
     .summary = "turn CSV and Parquet files into a dataset",
     .flags = CLI_PREP_FLAGS,
     .run = cli_prep},
    {.name = "worker",
     .usage = "JOB.INI",
     .summary = "one rank of a training job in a Slurm step: srun ringtrain worker JOB.INI",
     .flags = CLI_WORKER_FLAGS,
     .min_pos = 1,
     .max_pos = 1,
     .run = cmd_worker},
    {.name = "predict",
     .usage = "--model CKPT --dataset DIR|--input PATH --out FILE",
     .summary = "predictions from a checkpoint or an ensemble",
     .flags = CLI_PREDICT_FLAGS,
     .run = cli_predict},
    {.name = "ensemble",
     .usage = "STORE... --out DIR",
     .summary = "a weighted ensemble of trained jobs' predictions, its weights chosen on the "
                "validation rows",
     .flags = CLI_ENSEMBLE_FLAGS,
     .min_pos = 1,
     .max_pos = -1,
     .run = cli_ensemble},
    {.name = "model",
     .usage = "summary CKPT [--tensors]",
     .summary = "what a checkpoint holds: its architecture and a Keras-style table of its layers",
     .flags = CLI_MODEL_FLAGS,
     .min_pos = 2,
     .max_pos = 2,
     .run = cli_model},
    {.name = "trace",
     .usage = "STORE|JOB --out FILE",
     .summary = "the ranks' timelines of a job run with [train] trace = true, as one Chrome trace "
                "(a job id: its store, read here)",
     .flags = CLI_TRACE_FLAGS,
     .min_pos = 1,
     .max_pos = 1,
     .connects = true,
     .run = cli_trace},
    {.name = "config-reference",
     .usage = "",
     .summary = "every configuration key, as Markdown",
     .run = cmd_config_reference},
    {.name = "version", .usage = "", .summary = "ringtrain's version", .run = cmd_version},
    {.name = "help",
     .usage = "[COMMAND]",
     .summary = "the commands, or one command's flags",
     .max_pos = 1,
     .run = cmd_help},
};

static const cli_cmd *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof COMMANDS / sizeof *COMMANDS; i++)
        if (!strcmp(COMMANDS[i].name, name))
            return &COMMANDS[i];
    return NULL;
}

/* The command closest to a mistyped one (at most 2 edits away), or NULL. */
static const char *closest_command(const char *name)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < sizeof COMMANDS / sizeof *COMMANDS; i++) {
        size_t d = rt_edit_distance(name, COMMANDS[i].name);
        if (d < best_d) {
            best_d = d;
            best = COMMANDS[i].name;
        }
    }
    return best;
}

static void no_command(const char *lead, const char *name)
{
    const char *near = closest_command(name);
    fprintf(stderr, "%s: no command '%s'", lead, name);
    if (near)
        fprintf(stderr, "; did you mean %s?", near);
    fprintf(stderr, " (ringtrain help lists them)\n");
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ringtrain COMMAND [FLAGS] [ARGS]\n\n");
    for (size_t i = 0; i < sizeof COMMANDS / sizeof *COMMANDS; i++)
        fprintf(f, "  %-17s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(f, "\n`ringtrain COMMAND --help` lists a command's flags.\n");
}

static int cmd_help(const cli_args *a)
{
    if (a->npos == 0) {
        usage(stdout);
        return 0;
    }
    const cli_cmd *c = find_command(a->pos[0]);
    if (!c) {
        no_command("ringtrain help", a->pos[0]);
        return 2;
    }
    cli_usage(c, stdout);
    return 0;
}

int main(int argc, char **argv)
{
    /* a coordinator that dies mid-request must be an error we handle (and
     * reconnect from), not SIGPIPE; a closed stdout is noticed by its writers */
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version"))
        return cmd_version(NULL);
    const cli_cmd *cmd = find_command(argv[1]);
    if (!cmd) {
        no_command("ringtrain", argv[1]);
        return 2;
    }
    s3_defaults();
    cli_args a;
    int rc = cli_parse(cmd, argc - 2, argv + 2, &a);
    if (rc == 0 && !a.help)
        rc = cmd->run(&a);
    cli_args_free(&a);
    return rc;
}
