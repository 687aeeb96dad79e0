/* cli_main.c — `ringtrain`, the command line of a ringtrain cluster.
 *
 *   ringtrain submit JOB.INI [--np N] [--set SECTION.KEY=VALUE]... [--follow] [--json]
 *   ringtrain exec [--np N] [--name NAME] [--max-restarts K] [--min-np M] [--env K=V]...
 *                  [--transport T] [--start-timeout D] [--deadline D] [--local] -- PROGRAM ARGS...
 *   ringtrain run JOB.INI [--np N] [--set ...]       one machine: embedded coordinator + agent
 *   ringtrain jobs | nodes [--json]
 *   ringtrain status JOB [--json]
 *   ringtrain logs JOB [--rank R] [--follow]
 *   ringtrain cancel JOB
 *   ringtrain init-cluster DIR [--san NAME]... [--force]
 *
 * Where the coordinator is: --coordinator HOST:PORT, --ca FILE, --token-file
 * FILE, --server-name NAME; else RINGTRAIN_COORDINATOR, RINGTRAIN_CA,
 * RINGTRAIN_TOKEN_FILE (or RINGTRAIN_TOKEN), RINGTRAIN_SERVER_NAME; else
 * ~/.config/ringtrain/cli.conf (or RINGTRAIN_CLI_CONFIG). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "rt_addr.h"
#include "rt_json.h"
#include "rt_schemas.h"

typedef struct cli_cfg {
    char *coordinator, *ca, *token_file, *server_name;
} cli_cfg;

static const rt_cfg_key cli_keys[] = {
    RT_CFG_S("cli", "coordinator", "127.0.0.1:7071", cli_cfg, coordinator,
             "host:port of the coordinator's HTTP API"),
    RT_CFG_P("cli", "ca", "ca.crt", cli_cfg, ca, "the cluster CA certificate"),
    RT_CFG_P("cli", "token_file", "token", cli_cfg, token_file, "file holding the cluster token"),
    RT_CFG_S("cli", "server_name", NULL, cli_cfg, server_name,
             "name in the coordinator's certificate (default: its host)"),
};
static const rt_cfg_schema cli_schema = {"cli.conf", cli_keys, RT_ARRAY_LEN(cli_keys),
                                         sizeof(cli_cfg), NULL};

rt_status cli_conn_load(cli_conn *c, const char *coordinator, const char *ca,
                        const char *token_file, const char *server_name, char *err)
{
    memset(c, 0, sizeof *c);
    c->timeout_ms = 15000;
    cli_cfg f;
    rt_cfg_errors e = {0};
    char path[1024];
    const char *cfgpath = getenv("RINGTRAIN_CLI_CONFIG");
    if (!cfgpath && getenv("HOME")) {
        snprintf(path, sizeof path, "%s/.config/ringtrain/cli.conf", getenv("HOME"));
        cfgpath = path;
    }
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
    rt_cfg_free(&cli_schema, &f);
    return st;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: ringtrain COMMAND ...\n"
            "  submit JOB.INI [--np N] [--set SECTION.KEY=VALUE]... [--follow] [--json]\n"
            "  exec [--np N] [--local] [--name NAME] [--max-restarts K] [--env K=V]... -- PROG ARGS...\n"
            "  run JOB.INI [--np N] [--set SECTION.KEY=VALUE]...   (one machine, nothing to set up)\n"
            "  jobs | nodes [--json]\n"
            "  status JOB [--json]\n"
            "  logs JOB [--rank R] [--follow]\n"
            "  cancel JOB\n"
            "  init-cluster DIR [--san HOSTNAME-OR-IP]... [--force]\n"
            "  prep --input DIR --sql FILE --out DIR [--partitions N] [--skip-bad-rows]\n"
            "  predict --model CKPT --dataset DIR --out FILE [--threads N]\n"
            "  model summary CKPT\n"
            "  config-reference    (every configuration key, as Markdown)\n"

            "connection: --coordinator HOST:PORT --ca FILE --token-file FILE --server-name NAME\n");
}

static double age(double t)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return t > 0 ? (double)ts.tv_sec - t : 0;
}

static int get_and_print(const cli_conn *c, const char *path, bool json, int kind)
{
    http_resp r;
    char err[RT_ERR_LEN];
    if (http_request(c, "GET", path, NULL, &r, err) != RT_OK) {
        fprintf(stderr, "ringtrain: %s\n", err);
        return 1;
    }
    if (r.status != 200) {
        char buf[RT_ERR_LEN];
        fprintf(stderr, "ringtrain: %s\n", http_error_text(&r, buf, sizeof buf));
        free(r.body);
        return r.status == 404 ? 3 : 1;
    }
    if (json) {
        printf("%s\n", r.body);
        free(r.body);
        return 0;
    }
    rt_json *d = NULL;
    rt_json_parse(r.body, r.len, &d, err);
    free(r.body);
    if (kind == 0) { /* nodes */
        const rt_json *n = rt_json_get(d, "nodes");
        printf("%-28s %-20s %-5s %5s %5s %4s %s\n", "AGENT", "HOST", "STATE", "SLOTS", "USED",
               "GPUS", "CAPS");
        for (size_t i = 0; i < rt_json_len(n); i++) {
            const rt_json *a = rt_json_at(n, i);
            int64_t s = 0, u = 0, g = 0;
            rt_json_get_int(a, "slots", &s);
            rt_json_get_int(a, "used", &u);
            rt_json_get_int(a, "gpus", &g);
            printf("%-28s %-20s %-5s %5lld %5lld %4lld %s%s%s\n", rt_json_get_str(a, "agent"),
                   rt_json_get_str(a, "hostname"), rt_json_get_str(a, "state"), (long long)s,
                   (long long)u, (long long)g, rt_json_bool(rt_json_get(a, "cuda"), 0) ? "cuda " : "",
                   rt_json_bool(rt_json_get(a, "nccl"), 0) ? "nccl " : "",
                   rt_json_bool(rt_json_get(a, "rdma"), 0) ? "rdma" : "");
        }
    } else if (kind == 1) { /* jobs */
        const rt_json *n = rt_json_get(d, "jobs");
        printf("%5s %-16s %-5s %4s %-10s %7s %8s  %s\n", "ID", "NAME", "TYPE", "NP", "STATE",
               "ATTEMPT", "AGE", "REASON");
        for (size_t i = 0; i < rt_json_len(n); i++) {
            const rt_json *j = rt_json_at(n, i);
            int64_t id = 0, np = 0, at = 0;
            rt_json_get_int(j, "id", &id);
            rt_json_get_int(j, "np", &np);
            rt_json_get_int(j, "attempt", &at);
            printf("%5lld %-16.16s %-5s %4lld %-10s %7lld %7.0fs  %s\n", (long long)id,
                   rt_json_get_str(j, "name"), rt_json_get_str(j, "type"), (long long)np,
                   rt_json_get_str(j, "state"), (long long)at,
                   age(rt_json_num(rt_json_get(j, "created"), 0)),
                   rt_json_str(rt_json_get(j, "reason"), ""));
        }
    } else { /* one job */
        const rt_json *j = rt_json_get(d, "job");
        int64_t id = 0, np = 0, at = 0, rs = 0;
        rt_json_get_int(j, "id", &id);
        rt_json_get_int(j, "np", &np);
        rt_json_get_int(j, "attempt", &at);
        rt_json_get_int(j, "restarts", &rs);
        printf("job %lld '%s' (%s, %lld ranks): %s, attempt %lld, %lld restart%s\n", (long long)id,
               rt_json_get_str(j, "name"), rt_json_get_str(j, "type"), (long long)np,
               rt_json_get_str(j, "state"), (long long)at, (long long)rs, rs == 1 ? "" : "s");
        const char *reason = rt_json_str(rt_json_get(j, "reason"), "");
        if (*reason)
            printf("  reason: %s\n", reason);
        const rt_json *ff = rt_json_get(j, "first_failure");
        if (rt_json_type_of(ff) == RT_JSON_OBJECT) {
            const rt_json *tail = rt_json_get(ff, "tail");
            printf("  first failure, last output:\n");
            for (size_t i = 0; i < rt_json_len(tail); i++)
                printf("    | %s\n", rt_json_str(rt_json_at(tail, i), ""));
        }
        const rt_json *pl = rt_json_get(d, "placement");
        if (rt_json_len(pl)) {
            printf("  %4s  %-20s %-24s %5s %5s %-22s %8s %-8s %s\n", "RANK", "HOST", "AGENT",
                   "LOCAL", "CROSS", "ADDRESS", "PID", "STATE", "EXIT");
            for (size_t i = 0; i < rt_json_len(pl); i++) {
                const rt_json *p = rt_json_at(pl, i);
                int64_t v[7] = {0};
                const char *k[] = {"rank", "local_rank", "local_size", "cross_rank",
                                   "cross_size", "pid", "exit_code"};
                for (int q = 0; q < 7; q++)
                    rt_json_get_int(p, k[q], &v[q]);
                int64_t sig = 0;
                rt_json_get_int(p, "signal", &sig);
                char lr[16], cr[16], ex[32] = "";
                snprintf(lr, sizeof lr, "%lld/%lld", (long long)v[1], (long long)v[2]);
                snprintf(cr, sizeof cr, "%lld/%lld", (long long)v[3], (long long)v[4]);
                if (!strcmp(rt_json_str(rt_json_get(p, "state"), ""), "exited"))
                    snprintf(ex, sizeof ex, sig ? "signal %lld" : "code %lld",
                             (long long)(sig ? sig : v[6]));
                printf("  %4lld  %-20s %-24s %5s %5s %-22s %8lld %-8s %s\n", (long long)v[0],
                       rt_json_str(rt_json_get(p, "hostname"), ""),
                       rt_json_str(rt_json_get(p, "agent"), ""), lr, cr,
                       rt_json_str(rt_json_get(p, "address"), ""), (long long)v[5],
                       rt_json_str(rt_json_get(p, "state"), ""), ex);
            }
        }
        const rt_json *ev = rt_json_get(d, "events");
        size_t ne = rt_json_len(ev), from = ne > 12 ? ne - 12 : 0;
        if (ne)
            printf("  events:\n");
        for (size_t i = from; i < ne; i++) {
            const rt_json *e = rt_json_at(ev, i);
            time_t t = (time_t)rt_json_num(rt_json_get(e, "time"), 0);
            struct tm tm;
            localtime_r(&t, &tm);
            printf("    %02d:%02d:%02d %-10s %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
                   rt_json_str(rt_json_get(e, "kind"), ""), rt_json_str(rt_json_get(e, "message"), ""));
        }
        const rt_json *pr = rt_json_get(j, "progress");
        if (pr) {
            rt_jw w;
            rt_jw_init(&w);
            rt_jw_value(&w, pr);
            char *t = rt_jw_take(&w, NULL);
            printf("  progress: %s\n", t ? t : "");
            free(t);
        }
    }
    rt_json_free(d);
    return 0;
}

static int logs_out(void *user, const char *data, size_t n)
{
    (void)user;
    fwrite(data, 1, n, stdout);
    fflush(stdout);
    return 0;
}

/* Parse the connection flags out of argv (they may appear anywhere). */
typedef struct conn_flags {
    const char *coordinator, *ca, *token_file, *server_name;
} conn_flags;

static int strip_conn_flags(int argc, char **argv, conn_flags *f)
{
    int out = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            while (i < argc)
                argv[out++] = argv[i++];
            break;
        }
        const char **slot = !strcmp(argv[i], "--coordinator")   ? &f->coordinator
                            : !strcmp(argv[i], "--ca")          ? &f->ca
                            : !strcmp(argv[i], "--token-file")  ? &f->token_file
                            : !strcmp(argv[i], "--server-name") ? &f->server_name
                                                                : NULL;
        if (slot && i + 1 < argc) {
            *slot = argv[++i];
            continue;
        }
        argv[out++] = argv[i];
    }
    return out;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage();
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "init-cluster"))
        return cli_init_cluster(argc - 1, argv + 1);
    if (!strcmp(cmd, "prep"))
        return cli_prep(argc - 1, argv + 1);
    if (!strcmp(cmd, "config-reference")) {
        /* docs/config.md is this output (a test keeps them equal) */
        printf("# Configuration reference\n\nGenerated by `ringtrain config-reference` from the "
               "tables the programs parse with; every key, its type, default and meaning. "
               "Relative paths are relative to the file that names them.\n");
        const struct {
            const char *title;
            const rt_cfg_schema *s;
        } all[] = {{"Job files (`ringtrain submit`, `ringtrain run`)", &rt_job_schema},
                   {"`agent.conf` (`ringtrain-agent`)", &rt_agent_schema},
                   {"`coordinator.conf` (`ringtrain-coordinator`)", &rt_coord_schema},
                   {"`cli.conf` (`~/.config/ringtrain/cli.conf`)", &cli_schema}};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
            printf("\n## %s\n", all[i].title);
            rt_cfg_print_reference(all[i].s, stdout);
        }
        return 0;
    }
    if (!strcmp(cmd, "predict"))
        return cli_predict(argc - 1, argv + 1);
    if (!strcmp(cmd, "model"))
        return cli_model(argc - 1, argv + 1);
    if (!strcmp(cmd, "run"))
        return cli_local(argc - 1, argv + 1, false);
    if (!strcmp(cmd, "exec"))
        for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
            if (!strcmp(argv[i], "--local"))
                return cli_local(argc - 1, argv + 1, true);
    conn_flags cf = {0};
    argc = strip_conn_flags(argc, argv, &cf);
    bool json = false, follow = false;
    int64_t rank = -1;
    for (int i = 2; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "--json"))
            json = true;
        else if (!strcmp(argv[i], "--follow") || !strcmp(argv[i], "-f"))
            follow = true;
        else if (!strcmp(argv[i], "--rank") && i + 1 < argc)
            rank = atoll(argv[++i]);
    }
    cli_conn c;
    char err[RT_ERR_LEN];
    /* job files are checked before the coordinator is contacted at all */
    char *body = NULL;
    bool exec_job = false;
    if (!strcmp(cmd, "submit") || !strcmp(cmd, "exec")) {
        int rc = !strcmp(cmd, "submit") ? cli_job_body_from_file(argc - 1, argv + 1, &body)
                                        : cli_job_body_from_exec(argc - 1, argv + 1, &body);
        if (rc != 0)
            return rc;
        exec_job = !strcmp(cmd, "exec") || strstr(body, "\"type\":\"exec\"") != NULL;
    }
    if (cli_conn_load(&c, cf.coordinator, cf.ca, cf.token_file, cf.server_name, err) != RT_OK) {
        fprintf(stderr, "ringtrain: %s\n", err);
        free(body);
        return 1;
    }
    if (body) {
        int rc = cli_submit_and_follow(&c, body, follow || !strcmp(cmd, "exec"), exec_job, json);
        free(body);
        return rc;
    }
    if (!strcmp(cmd, "nodes"))
        return get_and_print(&c, "/v1/nodes", json, 0);
    if (!strcmp(cmd, "jobs"))
        return get_and_print(&c, "/v1/jobs", json, 1);
    long long id = argc > 2 ? atoll(argv[2]) : 0;
    if ((!strcmp(cmd, "status") || !strcmp(cmd, "logs") || !strcmp(cmd, "cancel")) && id <= 0) {
        fprintf(stderr, "ringtrain %s: a job id is needed\n", cmd);
        return 2;
    }
    char path[128];
    if (!strcmp(cmd, "status")) {
        snprintf(path, sizeof path, "/v1/jobs/%lld", id);
        return get_and_print(&c, path, json, 2);
    }
    if (!strcmp(cmd, "cancel")) {
        snprintf(path, sizeof path, "/v1/jobs/%lld/cancel", id);
        http_resp r;
        if (http_request(&c, "POST", path, NULL, &r, err) != RT_OK) {
            fprintf(stderr, "ringtrain: %s\n", err);
            return 1;
        }
        int rc = r.status == 200 ? 0 : r.status == 404 ? 3 : 1;
        char buf[RT_ERR_LEN];
        if (rc)
            fprintf(stderr, "ringtrain: %s\n", http_error_text(&r, buf, sizeof buf));
        else
            printf("job %lld cancelled\n", id);
        free(r.body);
        return rc;
    }
    if (!strcmp(cmd, "logs")) {
        if (rank >= 0)
            snprintf(path, sizeof path, "/v1/jobs/%lld/logs?rank=%lld&follow=%d", id,
                     (long long)rank, follow);
        else
            snprintf(path, sizeof path, "/v1/jobs/%lld/logs?rank=all&follow=%d", id, follow);
        int status = 0;
        if (http_stream(&c, path, logs_out, NULL, NULL, &status, err) != RT_OK) {
            fprintf(stderr, "ringtrain: %s\n", err);
            return status == 404 ? 3 : 1;
        }
        return 0;
    }
    usage();
    return 2;
}
