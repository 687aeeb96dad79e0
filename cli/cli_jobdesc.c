/* cli_jobdesc.c — a job's description for POST /v1/jobs: from a job file
 * (submit, run: the [job] and [data] keys, the config text, the
 * submitter's user and folder) and from exec's command line (argv, the
 * environment it forwards). */
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "rt_json.h"
#include "rt_s3.h"
#include "rt_schemas.h"
#include "rt_sweep.h"

/* Who submits: the login name of this process's user. */
static const char *submitter(void)
{
    const struct passwd *pw = getpwuid(getuid());
    if (pw && pw->pw_name)
        return pw->pw_name;
    const char *u = getenv("USER");
    return u && *u ? u : "?";
}

/* A sweep of no space.* line searches its family's default space (asha,
 * random; a grid was refused): the keys, before anything is submitted. */
static void default_space_note(const rt_job_cfg *j, const char *what)
{
    rt_sweep_space sp;
    rt_cfg_errors e = {0};
    rt_cfg_origin o = {what, NULL};
    if (rt_sweep_space_parse(j, &o, &sp, &e) != RT_OK) { /* validation said why */
        rt_cfg_errors_free(&e);
        return;
    }
    rt_cfg_errors_free(&e);
    char *arch = rt_cfg_value_text(&rt_job_schema, j, "model", "architecture");
    if (sp.arch < 0)
        fprintf(stderr,
                "ringtrain: %s has no [sweep] space.* line: its trials search %s's default "
                "space (docs/sweeps.md):\n",
                what, arch ? arch : "the family");
    else
        fprintf(stderr,
                "ringtrain: %s searches model.architecture alone: each trial searches its "
                "architecture's default space (docs/sweeps.md):\n",
                what);
    free(arch);
    for (int i = 0; i < sp.n; i++) {
        char dist[1200];
        rt_sweep_dim_text(&sp.d[i], dist, sizeof dist);
        fprintf(stderr, "  space.%s = %s%s%s\n", sp.d[i].key, dist, sp.d[i].when[0] ? "    ; " : "",
                sp.d[i].when);
    }
    rt_sweep_space_free(&sp);
}

/* What every submission holds but its argv, env and cwd: who submits and
 * the job's configuration as the job file's text — every key, after the
 * file, --set and the flags — which the coordinator, the agent and the
 * worker each parse with the same schema.  false when out of memory. */
static bool job_fields(rt_jw *w, const rt_job_cfg *j)
{
    char *text = rt_cfg_print_string(&rt_job_schema, j);
    if (!text)
        return false;
    rt_jw_kstr(w, "user", submitter());
    rt_jw_kstr(w, RT_F_TYPE,
               j->type == RT_JOB_EXEC    ? "exec"
               : j->type == RT_JOB_SWEEP ? "sweep"
                                         : "train");
    rt_jw_kstr(w, RT_F_CONFIG, text);
    free(text);
    return true;
}

static bool found_one(void *user, const char *uri, int64_t size)
{
    (void)uri, (void)size;
    *(bool *)user = true;
    return false;
}

/* Whether the store (a folder, or a prefix in S3 reached with the job's
 * [s3] and this shell's settings) holds an earlier sweep: its trials.jsonl
 * or trial-1; *old names what was found.  A prefix that cannot be looked
 * at from here (the nodes may reach an endpoint this machine cannot) is
 * said so and taken as empty. */
static bool earlier_sweep(const rt_job_cfg *j, char *old, size_t len)
{
    struct stat sb;
    if (!rt_s3_is_uri(j->store))
        return (snprintf(old, len, "%s/trials.jsonl", j->store), stat(old, &sb) == 0) ||
               (snprintf(old, len, "%s/trial-1", j->store), stat(old, &sb) == 0);
    rt_s3 *s3 = NULL;
    char uri[RT_S3_URI_MAX], err[RT_ERR_LEN];
    int64_t size;
    bool found = false;
    rt_s3_keys_setenv(&j->s3, true); /* the job's [s3] over this shell's */
    rt_status st = rt_s3_open_env(&s3, j->store, err);
    if (st == RT_OK && rt_s3_uri_join(uri, sizeof uri, j->store, "trials.jsonl") &&
        (st = rt_s3_head(s3, uri, &size, err)) == RT_OK)
        found = true;
    else if ((st == RT_OK || st == RT_ERR_NOTFOUND) &&
             rt_s3_uri_join(uri, sizeof uri, j->store, "trial-1/"))
        st = rt_s3_list(s3, uri, found_one, &found, err);
    rt_s3_close(s3);
    if (!found && st != RT_OK && st != RT_ERR_NOTFOUND)
        fprintf(stderr, "ringtrain: note: could not look for an earlier sweep in %s (%s)\n",
                j->store, err);
    snprintf(old, len, "%s", found ? uri : "");
    return found;
}

int cli_job_load(const cli_args *a, const char *np, const char *nothing, rt_job_cfg *jp)
{
    /* no job file: every key from --set (a job is the defaults and those) */
    const char *const *sets;
    int nsets = cli_list(a, "--set", &sets);
    const char *file = a->npos > 0 ? a->pos[0] : NULL;
    if (!file && nsets == 0) {
        fprintf(stderr,
                "ringtrain: a job needs a job file or --set SECTION.KEY=VALUE "
                "(at least --set data.dataset=DIR --set output.store=DIR)%s\n",
                nothing);
        return 2;
    }
    rt_job_cfg j;
    rt_cfg_errors e = {0};
    int *lines = NULL;
    /* the file's cross-key checks wait for --set: a file without dataset
     * or store runs with them given on the command line */
    rt_status st =
        rt_cfg_load_file_unchecked(&rt_job_schema, file ? file : "/dev/null", &j, &e, &lines);
    for (int i = 0; i < nsets; i++) {
        char key[256];
        const char *eq = strchr(sets[i], '=');
        if (!eq || (size_t)(eq - sets[i]) >= sizeof key) {
            rt_cfg_errors_add(&e, "command line: --set %s: expected SECTION.KEY=VALUE", sets[i]);
            st = RT_ERR_INVALID;
            continue;
        }
        snprintf(key, sizeof key, "%.*s", (int)(eq - sets[i]), sets[i]);
        /* a relative path on the command line is the caller's, not the job
         * file's (nor the temporary folder's of `ringtrain run`) */
        char sec[128], val[4096 + 1024];
        const char *dot = strchr(key, '.');
        const rt_cfg_key *k = NULL;
        if (dot && (size_t)(dot - key) < sizeof sec) {
            snprintf(sec, sizeof sec, "%.*s", (int)(dot - key), key);
            k = rt_cfg_find(&rt_job_schema, sec, dot + 1);
        }
        const char *value = eq + 1;
        char cwd[4096];
        if (k && k->type == RT_CFG_PATH && value[0] && !rt_cfg_path_absolute(value) &&
            getcwd(cwd, sizeof cwd)) {
            snprintf(val, sizeof val, "%s/%s", cwd, value);
            value = val;
        }
        if (rt_cfg_set(&rt_job_schema, &j, key, value, &e) != RT_OK)
            st = RT_ERR_INVALID;
    }
    if (np && rt_cfg_set(&rt_job_schema, &j, "job.np", np, &e) != RT_OK)
        st = RT_ERR_INVALID;
    /* --set changes the file's values: checks name the file's lines but for those */
    for (int i = 0; lines && i < nsets; i++) {
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)strcspn(sets[i], "="), sets[i]);
        char *dot = strchr(key, '.');
        const rt_cfg_key *k = dot ? (*dot = '\0', rt_cfg_find(&rt_job_schema, key, dot + 1)) : NULL;
        if (k)
            lines[k - rt_job_schema.keys] = RT_CFG_LINE_SET;
    }
    rt_cfg_origin origin = {file ? file : "the job given by --set", lines};
    if (st == RT_OK && rt_cfg_validate(&rt_job_schema, &j, &origin, &e) != RT_OK)
        st = RT_ERR_INVALID;
    if (st != RT_OK) {
        if (file)
            fprintf(stderr, "ringtrain: %s is not a valid job file%s:\n", file, nothing);
        else
            fprintf(stderr, "ringtrain: the job given by --set is not valid%s:\n", nothing);
        rt_cfg_errors_print(&e, stderr);
        rt_cfg_errors_free(&e);
        rt_cfg_free(&rt_job_schema, &j);
        free(lines);
        return 2;
    }
    if (j.type == RT_JOB_SWEEP && rt_sweep_uses_default(&j))
        default_space_note(&j, file ? file : "the job given by --set");
    int rc = cli_check_job_model(a, &j, &origin);
    /* a sweep's trials resume from their stores' checkpoints (after a lost
     * agent): an earlier sweep's stores there would be resumed instead */
    char old[4200];
    if (rc == 0 && j.type == RT_JOB_SWEEP && j.store && earlier_sweep(&j, old, sizeof old)) {
        fprintf(stderr,
                "ringtrain: %s: [output] store %s holds an earlier sweep (%s): its "
                "trials would continue from that one's checkpoints; give another store "
                "(--set output.store=DIR) or remove it%s\n",
                file ? file : "the job given by --set", j.store, old, nothing);
        rc = 2;
    }
    free(lines);
    if (rc != 0) {
        rt_cfg_free(&rt_job_schema, &j);
        return rc;
    }
    *jp = j;
    return 0;
}

/* A job whose data, store or predictions are in S3 carries its submitter's
 * S3 settings and credentials (the chain rt_s3_creds_load follows here) in
 * its env: the ranks on other hosts have no other way to them, and the
 * agents' own are never given to a job.  A job's env is shown to nobody but
 * its submitter and admins (docs/security.md).  false, having said why,
 * when there are no credentials here. */
static bool s3_env(rt_jw *w, const rt_job_cfg *j, bool *wrote)
{
    *wrote = false;
    const char *uri = rt_s3_is_uri(j->dataset) ? j->dataset
                      : rt_s3_is_uri(j->store) ? j->store
                                               : j->predictions;
    if (!rt_s3_is_uri(uri))
        return true;
    rt_s3_cfg c;
    rt_s3_creds cr;
    char err[RT_ERR_LEN];
    rt_s3_keys_setenv(&j->s3, true); /* the job's [s3] over this shell's */
    rt_s3_cfg_env(&c);
    if (rt_s3_creds_load(&c, &cr, err) != RT_OK) {
        fprintf(stderr, "ringtrain: the job reads or writes %s: %s; nothing was submitted\n", uri,
                err);
        return false;
    }
    rt_jw_key(w, RT_F_ENV);
    rt_jw_obj(w);
    rt_jw_kstr(w, "AWS_ACCESS_KEY_ID", cr.key_id);
    rt_jw_kstr(w, "AWS_SECRET_ACCESS_KEY", cr.secret);
    if (cr.token[0])
        rt_jw_kstr(w, "AWS_SESSION_TOKEN", cr.token);
    if (c.endpoint[0]) { /* both names: a node's AWS_ENDPOINT_URL_S3 would win over the other */
        rt_jw_kstr(w, "AWS_ENDPOINT_URL", c.endpoint);
        rt_jw_kstr(w, "AWS_ENDPOINT_URL_S3", c.endpoint);
    }
    if (c.region[0])
        rt_jw_kstr(w, "AWS_REGION", c.region);
    if (c.ca_file[0]) /* a path: the nodes must have the bundle there too */
        rt_jw_kstr(w, "AWS_CA_BUNDLE", c.ca_file);
    static const char *const pass[] = {"AWS_MAX_ATTEMPTS", "RINGTRAIN_S3_ADDRESSING"};
    for (size_t i = 0; i < sizeof pass / sizeof *pass; i++)
        if (getenv(pass[i]) && *getenv(pass[i]))
            rt_jw_kstr(w, pass[i], getenv(pass[i]));
    rt_jw_obj_end(w);
    rt_s3_creds_clear(&cr);
    *wrote = true;
    return true;
}

int cli_job_body_from_file(const cli_args *a, char **body, int64_t *np)
{
    *body = NULL;
    rt_job_cfg j;
    int rc = cli_job_load(a, cli_value(a, "--np"), "; nothing was submitted", &j);
    if (rc != 0)
        return rc;
    if (np) /* the slots it asks for at once (a sweep: its trials side by side) */
        *np = j.type == RT_JOB_SWEEP ? j.np * j.sweep_parallel : j.np;
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    bool ok = job_fields(&w, &j), env = false;
    if (ok && j.type != RT_JOB_EXEC && !s3_env(&w, &j, &env)) {
        rt_jw_free(&w);
        rt_cfg_free(&rt_job_schema, &j);
        return 2;
    }
    if (j.type == RT_JOB_EXEC) {
        rt_jw_key(&w, "argv");
        rt_jw_arr(&w);
        for (size_t i = 0; i < j.command.n; i++)
            rt_jw_str(&w, j.command.items[i]);
        rt_jw_arr_end(&w);
    }
    rt_jw_obj_end(&w);
    rt_cfg_free(&rt_job_schema, &j);
    if (!ok) {
        rt_jw_free(&w);
        return 1;
    }
    *body = rt_jw_take(&w, NULL);
    return *body ? 0 : 1;
}

/* An environment variable's name: a letter or _, then letters, digits, _. */
static bool env_name_ok(const char *name, size_t len)
{
    if (len == 0 || len >= 256 || (name[0] >= '0' && name[0] <= '9'))
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    return true;
}

/* exec's flags as a job file's keys in j (the same parser checks their
 * values); 0, or 2 after saying which are bad. */
static int exec_cfg(const cli_args *a, rt_job_cfg *j)
{
    rt_cfg_errors e = {0};
    rt_cfg_set(&rt_job_schema, j, "job.type", "exec", &e);
    rt_cfg_set(&rt_job_schema, j, "job.name", "exec", &e);
    rt_cfg_set(&rt_job_schema, j, "job.transport", "tcp", &e);
    static const struct {
        const char *flag, *key;
    } map[] = {{"--np", "job.np"},
               {"--name", "job.name"},
               {"--max-restarts", "job.max_restarts"},
               {"--min-np", "job.min_np"},
               {"--transport", "job.transport"},
               {"--sockets", "job.sockets"},
               {"--priority", "job.priority"},
               {"--queue-timeout", "job.queue_timeout"},
               {"--deadline", "job.deadline"},
               {"--collective-timeout", "job.collective_timeout"},
               {"--memory-limit", "job.memory_limit"},
               {"--cpu-limit", "job.cpu_limit"},
               {"--disk-limit", "job.disk_limit"}};
    bool bad = false;
    for (size_t k = 0; k < RT_ARRAY_LEN(map); k++) {
        const char *v = cli_value(a, map[k].flag);
        if (v && rt_cfg_set(&rt_job_schema, j, map[k].key, v, &e) != RT_OK)
            bad = true;
    }
    j->encrypt = cli_switch(a, "--encrypt");
    j->integrity = !cli_switch(a, "--no-integrity");
    j->hierarchical = !cli_switch(a, "--flat");
    if (bad) {
        fprintf(stderr, "ringtrain exec: bad flags; nothing was submitted:\n");
        rt_cfg_errors_print(&e, stderr);
    }
    rt_cfg_errors_free(&e);
    return bad ? 2 : 0;
}

/* The ranks' folder into w: --chdir (relative to this one, as srun
 * --chdir), else this one; 0, or 2 after saying what is wrong. */
static int exec_cwd(const cli_args *a, rt_jw *w)
{
    const char *dir = cli_value(a, "--chdir");
    char here[4096], cwd[8192];
    int n = -1;
    if (dir && dir[0] == '/')
        n = snprintf(cwd, sizeof cwd, "%s", dir);
    else if (getcwd(here, sizeof here))
        n = dir ? snprintf(cwd, sizeof cwd, "%s/%s", here, dir)
                : snprintf(cwd, sizeof cwd, "%s", here);
    if (dir && (n < 0 || n >= 4096 || !*dir)) {
        fprintf(stderr, "ringtrain exec: --chdir '%s': %s\n", dir,
                *dir ? "too long a path (at most 4095 bytes)" : "empty");
        return 2;
    }
    if (n > 0)
        rt_jw_kstr(w, "cwd", cwd);
    return 0;
}

/* The ranks' environment into w: --env NAME=VALUE, or NAME for its value
 * here (horovodrun's -x); then what a Python program needs to find its
 * interpreter and packages.  0, or 2 after saying which is bad. */
static int exec_env(const cli_args *a, rt_jw *w)
{
    const char *const *envs;
    int nenv = cli_list(a, "--env", &envs);
    rt_jw_key(w, "env");
    rt_jw_obj(w);
    static const char *const DEFAULT_ENV[] = {"PATH", "PYTHONPATH", "VIRTUAL_ENV"};
    bool given[RT_ARRAY_LEN(DEFAULT_ENV)] = {false};
    for (int i = 0; i < nenv; i++) {
        const char *eq = strchr(envs[i], '=');
        size_t nlen = eq ? (size_t)(eq - envs[i]) : strlen(envs[i]);
        const char *value = eq ? eq + 1 : NULL;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)nlen, envs[i]);
        if (!eq)
            value = getenv(name);
        if (!env_name_ok(name, nlen) || !value) {
            fprintf(stderr, "ringtrain exec: --env %s: %s\n", envs[i],
                    !env_name_ok(name, nlen) ? "expected NAME=VALUE or NAME (letters, digits, _)"
                                             : "not set in this shell (give NAME=VALUE)");
            return 2;
        }
        rt_jw_kstr(w, name, value);
        for (size_t k = 0; k < RT_ARRAY_LEN(DEFAULT_ENV); k++)
            given[k] |= strcmp(name, DEFAULT_ENV[k]) == 0;
    }
    for (size_t k = 0; k < RT_ARRAY_LEN(DEFAULT_ENV) && !cli_switch(a, "--no-default-env"); k++) {
        const char *v = getenv(DEFAULT_ENV[k]);
        if (v && !given[k])
            rt_jw_kstr(w, DEFAULT_ENV[k], v);
    }
    rt_jw_obj_end(w);
    return 0;
}

int cli_job_body_from_exec(const cli_args *a, char **body, int64_t *np)
{
    *body = NULL;
    rt_job_cfg j;
    rt_cfg_init(&rt_job_schema, &j);
    int rc = exec_cfg(a, &j);
    if (rc) {
        rt_cfg_free(&rt_job_schema, &j);
        return rc;
    }
    if (np) /* the slots it asks for at once (a sweep: its trials side by side) */
        *np = j.type == RT_JOB_SWEEP ? j.np * j.sweep_parallel : j.np;
    /* what runs is argv (any bytes); the config names only the program, in
     * characters an INI list keeps as they are */
    char *prog = strdup(a->nrest > 0 ? a->rest[0] : "program");
    for (char *p = prog; p && *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f || strchr(",;#=[] \t", *p))
            *p = '_';
    j.command.items = calloc(1, sizeof *j.command.items);
    if (j.command.items && prog) {
        j.command.items[0] = prog;
        j.command.n = 1;
    } else {
        free(prog);
    }
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    if (!job_fields(&w, &j) || j.command.n != 1) {
        rt_jw_free(&w);
        rt_cfg_free(&rt_job_schema, &j);
        return 1;
    }
    rt_cfg_free(&rt_job_schema, &j);
    rt_jw_key(&w, "argv");
    rt_jw_arr(&w);
    for (int i = 0; i < a->nrest; i++)
        rt_jw_str(&w, a->rest[i]);
    rt_jw_arr_end(&w);
    if ((rc = exec_cwd(a, &w)) != 0 || (rc = exec_env(a, &w)) != 0) {
        rt_jw_free(&w);
        return rc;
    }
    rt_jw_obj_end(&w);
    *body = rt_jw_take(&w, NULL);
    return *body ? 0 : 1;
}
