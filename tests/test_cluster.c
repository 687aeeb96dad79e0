/* test_cluster.c — one real cluster on loopback (coordinator + 3 agents on
 * host ids A, A, B with 2, 1, 2 slots) shared by these tests:
 *   - an exec job with np = 5 gets Horovod's placement and every rank reads
 *     it and completes an allreduce through rt_init_from_env();
 *   - a rank exiting 3 fails the job with the rank, host and code named, the
 *     other ranks are stopped at once and no process is left;
 *   - an invalid job file is reported with file:line and nothing is submitted;
 *   - per-rank CPU and memory, the CLI's errors, output after silence,
 *     Ctrl-C, unwritable agent folders.
 * test_cluster_runapi.c adds, on the same cluster, the Run API's tests
 * (torchrun/Horovod variables, results, logs of attempts, progress floods,
 * the Python binding, escaped processes) and API tokens with roles;
 * test_cluster_hostile.c hostile clients of the control port and the API. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_cluster.h"
#include "rt_time.h"

cluster C;
bool failed_once;

static int group_setup(void **state)
{
    (void)state;
    if (!cl_init(&C, "cluster"))
        return -1;
    /* a short HTTP timeout: log streams must outlive it (test_silent_program) */
    static const char *const nvml[] = {"RINGTRAIN_NVML_LIBRARY=" RT_FAKE_NVML, NULL};
    if (!cl_start_coord(&C, "http_timeout = 1s\n", NULL) || !cl_start_agent(&C, 0, "a1", "A", 2, nvml) ||
        !cl_start_agent(&C, 1, "a2", "A", 1, nvml))
        return -1;
    C.agent_extra = "gpus = 2\n"; /* host B hands out two (pretend) GPUs, one per slot */
    bool b1 = cl_start_agent(&C, 2, "b1", "B", 2, nvml);
    C.agent_extra = NULL;
    if (!b1)
        return -1;
    if (!cl_wait_agents_up(&C, 3, 20000)) {
        cl_destroy(&C, true);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    return cl_destroy(&C, failed_once) ? 0 : -1;
}


int njobs(void)
{
    rt_json *j = cl_get(&C, "/v1/jobs");
    int n = j ? (int)rt_json_len(rt_json_get(j, "jobs")) : -1;
    rt_json_free(j);
    return n;
}

bool agent_has_cgroups(void)
{
    FILE *f = fopen(C.agent[0].log, "r");
    char line[1024];
    bool yes = false;
    while (f && !yes && fgets(line, sizeof line, f))
        yes = strstr(line, "each rank runs in a cgroup of its own") != NULL;
    if (f)
        fclose(f);
    return yes;
}

/* ---- placement ----------------------------------------------------------------- */
/* (host A: agents a1 and a2, no GPUs; host B: agent b1 with `gpus = 2`) */

static void test_placement_np5(void **state)
{
    (void)state;
    static const struct {
        const char *agent;
        int local_rank, local_size, cross_rank, cross_size;
    } want[5] = {{"A/a1", 0, 3, 0, 2},
                 {"A/a1", 1, 3, 0, 2},
                 {"A/a2", 2, 3, 0, 1}, /* only host A has a local rank 2 */
                 {"B/b1", 0, 2, 1, 2},
                 {"B/b1", 1, 2, 1, 2}};
    char *out = NULL;
    const char *args[] = {"exec", "--np", "5", "--name", "placement", "--", CL_PROBE,
                          "--marker", C.marker, NULL};
    int rc = cl_cli(&C, &out, 60, args);
    if (rc != 0)
        fprintf(stderr, "exec output:\n%s\n", out);
    CHECK(rc == 0);
    /* each rank printed what rt_init_from_env() handed it, under its prefix */
    int seen = 0;
    char *copy = strdup(out);
    for (char *line = copy; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        int pr, r, size, lr, ls, cr, cs;
        if (sscanf(line, "[%d] rank=%d size=%d local_rank=%d local_size=%d cross_rank=%d "
                         "cross_size=%d",
                   &pr, &r, &size, &lr, &ls, &cr, &cs) == 7) {
            CHECK(pr == r && r >= 0 && r < 5);
            CHECK(size == 5);
            CHECK(lr == want[r].local_rank && ls == want[r].local_size);
            CHECK(cr == want[r].cross_rank && cs == want[r].cross_size);
            seen |= 1 << r;
        }
        line = nl ? nl + 1 : NULL;
    }
    free(copy);
    if (seen != 0x1f)
        fprintf(stderr, "ranks seen 0x%x; exec output:\n%s\n", seen, out);
    CHECK(seen == 0x1f);
    for (int r = 0; r < 5; r++) { /* every rank's allreduce of rank+1 gave 15 */
        char want_line[64];
        snprintf(want_line, sizeof want_line, "[%d] allreduce ok: sum 15", r);
        CHECK(strstr(out, want_line) != NULL);
    }
    free(out);

    /* the coordinator's record agrees, and every slot is free again */
    rt_json *jobs = cl_get(&C, "/v1/jobs");
    const rt_json *list = rt_json_get(jobs, "jobs");
    int64_t id = 0;
    CHECK(rt_json_len(list) >= 1);
    rt_json_get_int(rt_json_at(list, 0), "id", &id); /* newest first */
    rt_json_free(jobs);
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    rt_json *doc = cl_get(&C, path);
    CHECK(doc != NULL);
    CHECK(!strcmp(cl_job_state(doc), "succeeded"));
    const rt_json *pl = rt_json_get(doc, "placement");
    CHECK(rt_json_len(pl) == 5);
    for (size_t i = 0; i < rt_json_len(pl); i++) {
        const rt_json *p = rt_json_at(pl, i);
        int64_t r = -1, lr = -1, cr = -1, code = -1;
        rt_json_get_int(p, "rank", &r);
        rt_json_get_int(p, "local_rank", &lr);
        rt_json_get_int(p, "cross_rank", &cr);
        rt_json_get_int(p, "exit_code", &code);
        CHECK(r == (int64_t)i);
        CHECK(!strcmp(rt_json_get_str(p, "agent"), want[i].agent));
        CHECK(lr == want[i].local_rank && cr == want[i].cross_rank);
        CHECK(code == 0);
    }
    rt_json_free(doc);
    rt_json *nodes = cl_get(&C, "/v1/nodes");
    const rt_json *nl = rt_json_get(nodes, "nodes");
    CHECK(rt_json_len(nl) == 3);
    for (size_t i = 0; i < rt_json_len(nl); i++) {
        int64_t used = -1;
        rt_json_get_int(rt_json_at(nl, i), "used", &used);
        CHECK(used == 0);
    }
    rt_json_free(nodes);

    /* the CLI's views of the same job */
    char idtxt[32];
    snprintf(idtxt, sizeof idtxt, "%lld", (long long)id);
    const char *st_args[] = {"status", idtxt, "--json", NULL};
    CHECK(cl_cli(&C, &out, 30, st_args) == 0);
    rt_json *sj = NULL;
    char err[RT_ERR_LEN];
    CHECK(rt_json_parse(out, strlen(out), &sj, err) == RT_OK);
    CHECK(!strcmp(cl_job_state(sj), "succeeded"));
    rt_json_free(sj);
    free(out);
    const char *log_args[] = {"logs", idtxt, "--rank", "3", NULL};
    CHECK(cl_cli(&C, &out, 30, log_args) == 0);
    CHECK(strstr(out, "rank=3 size=5") != NULL);
    CHECK(strstr(out, "rank=2 size=5") == NULL);
    free(out);
    /* no results were reported */
    const char *res_args[] = {"status", idtxt, "--results", NULL};
    CHECK(cl_cli(&C, &out, 30, res_args) == 0);
    CHECK(strstr(out, "has no results") != NULL);
    free(out);
    /* every rank's output, in rank order, each line tagged once */
    const char *all_args[] = {"logs", idtxt, NULL};
    int lrc = cl_cli(&C, &out, 30, all_args);
    if (lrc != 0) /* seen once in CI under ASan, not reproduced: say what it said */
        fprintf(stderr, "ringtrain logs %s: exit %d: %s\n", idtxt, lrc, out ? out : "(nothing)");
    CHECK(lrc == 0);
    const char *prev = out;
    for (int r = 0; r < 5; r++) {
        char tag[48];
        snprintf(tag, sizeof tag, "[%d] rank=%d size=5", r, r);
        const char *at = strstr(out, tag);
        CHECK(at != NULL && at >= prev);
        prev = at ? at : prev;
    }
    free(out);
    CHECK(cl_count_marker(&C) == 0);
}

/* ---- a failing rank ------------------------------------------------------------- */

static void test_rank_failure(void **state)
{
    (void)state;
    /* rank 2 exits 3; the others would sleep 60 s if nobody stopped them */
    char *out = NULL;
    const char *args[] = {"exec", "--np", "5", "--name", "fails", "--", CL_PROBE,
                          "--fail-rank", "2", "--code", "3", "--sleep", "60",
                          "--marker", C.marker, NULL};
    int64_t t0 = rt_now_ns();
    int rc = cl_cli(&C, &out, 60, args);
    double secs = (double)(rt_now_ns() - t0) / 1e9;
    fprintf(stderr, "exec with a failing rank returned %d after %.1f s\n", rc, secs);
    CHECK(rc == 3); /* like horovodrun: the first failure's code */
    CHECK(secs < 30);
    CHECK(strstr(out, "rank 2 on host") != NULL);
    CHECK(strstr(out, "(agent A/a2) exited with code 3") != NULL);
    free(out);
    CHECK(cl_wait_no_marker(&C, 10000) == 0); /* no orphans */

    rt_json *jobs = cl_get(&C, "/v1/jobs");
    const rt_json *list = rt_json_get(jobs, "jobs");
    int64_t id = 0;
    rt_json_get_int(rt_json_at(list, 0), "id", &id); /* newest first */
    rt_json_free(jobs);
    /* the job is failed at the first failure; the stopped ranks' exits are
     * recorded as the agents report them */
    rt_json *doc = NULL;
    for (int tries = 0; tries < 100; tries++) {
        rt_json_free(doc);
        doc = cl_wait_job(&C, id, NULL, 10000);
        CHECK(doc != NULL);
        const rt_json *pl = rt_json_get(doc, "placement");
        int exited = 0;
        for (size_t i = 0; i < rt_json_len(pl); i++)
            exited += !strcmp(rt_json_str(rt_json_get(rt_json_at(pl, i), "state"), ""), "exited");
        if (exited == 5)
            break;
        cl_sleep_ms(100);
    }
    CHECK(!strcmp(cl_job_state(doc), "failed"));
    const rt_json *job = rt_json_get(doc, "job");
    const char *reason = rt_json_get_str(job, "reason");
    fprintf(stderr, "reason: %s\n", reason);
    CHECK(strstr(reason, "rank 2") && strstr(reason, "code 3"));
    const rt_json *ff = rt_json_get(job, "first_failure");
    int64_t frank = -1, fcode = -1;
    rt_json_get_int(ff, "rank", &frank);
    rt_json_get_int(ff, "exit_code", &fcode);
    CHECK(frank == 2 && fcode == 3);
    const rt_json *tail = rt_json_get(ff, "tail"); /* the rank's last output lines */
    bool said = false;
    for (size_t i = 0; i < rt_json_len(tail); i++)
        said |= strstr(rt_json_str(rt_json_at(tail, i), ""), "failing on purpose") != NULL;
    CHECK(said);
    /* the other ranks were stopped by a signal, not left to finish */
    const rt_json *pl = rt_json_get(doc, "placement");
    int stopped = 0;
    for (size_t i = 0; i < rt_json_len(pl); i++) {
        int64_t sig = 0;
        rt_json_get_int(rt_json_at(pl, i), "signal", &sig);
        stopped += sig > 0;
    }
    CHECK(stopped == 4);
    rt_json_free(doc);
}

/* ---- an invalid job file -------------------------------------------------------- */

static void test_invalid_job_file(void **state)
{
    (void)state;
    char path[400];
    snprintf(path, sizeof path, "%s/bad.ini", C.dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("[job]\nname = typo\ntype = exec\nnp = 0\nmax_restrats = 2\ndeadline = 5 parsecs\n", f);
    fclose(f);
    int before = njobs();
    char *out = NULL;
    const char *args[] = {"submit", path, NULL};
    int rc = cl_cli(&C, &out, 30, args);
    fprintf(stderr, "submit of a bad job file (rc %d):\n%s", rc, out);
    CHECK(rc == 2);
    CHECK(strstr(out, "bad.ini:4") != NULL); /* np out of range */
    CHECK(strstr(out, "bad.ini:5") != NULL && strstr(out, "max_restarts") != NULL);
    CHECK(strstr(out, "bad.ini:6") != NULL); /* not a duration */
    free(out);
    CHECK(njobs() == before);
}

/* ---- the CLI's errors ------------------------------------------------------------------ */

static void test_cli_errors(void **state)
{
    (void)state;
    char *out = NULL;
    const char *nf[] = {"status", "999", NULL};
    CHECK(cl_cli(&C, &out, 30, nf) != 0);
    fprintf(stderr, "status 999: %s", out);
    CHECK(strstr(out, "999") && strstr(out, "not found"));
    free(out);

    const char *down[] = {"jobs", "--coordinator", "127.0.0.1:1", NULL};
    CHECK(cl_cli(&C, &out, 30, down) != 0);
    fprintf(stderr, "unreachable: %s", out);
    CHECK(strstr(out, "127.0.0.1:1") != NULL);
    free(out);

    /* the CA of another cluster: the coordinator's certificate does not verify */
    char other[400];
    snprintf(other, sizeof other, "%s/other", C.dir);
    const char *mk[] = {"init-cluster", other, NULL};
    CHECK(cl_cli(&C, &out, 60, mk) == 0);
    free(out);
    char ca[450];
    snprintf(ca, sizeof ca, "%s/ca.crt", other);
    const char *tls[] = {"nodes", "--ca", ca, NULL};
    CHECK(cl_cli(&C, &out, 30, tls) != 0);
    fprintf(stderr, "other CA: %s", out);
    CHECK(strstr(out, "certificate") != NULL);
    free(out);
    /* the right CA, but a name the certificate does not carry */
    const char *name[] = {"nodes", "--server-name", "evil.example.com", NULL};
    CHECK(cl_cli(&C, &out, 30, name) != 0);
    fprintf(stderr, "wrong name: %s", out);
    CHECK(strstr(out, "certificate") != NULL);
    free(out);
    /* mistakes on the command line are named before anything is contacted
     * (the coordinator given is unreachable: none of these may try it) */
    const struct {
        const char *args[8];
        const char *says;
    } cases[] = {
        {{"frobnicate", "--coordinator", "127.0.0.1:1", NULL}, "no command 'frobnicate'"},
        {{"submt", "x.ini", NULL}, "no command 'submt'; did you mean submit?"},
        {{"jobs", "--jsn", "--coordinator", "127.0.0.1:1", NULL}, "unknown flag '--jsn'; did you mean --json?"},
        {{"logs", "1", "--rank", "x", "--coordinator", "127.0.0.1:1", NULL}, "--rank x: expected a whole number"},
        {{"status", "2abc", "--coordinator", "127.0.0.1:1", NULL}, "'2abc' is not a job id"},
        {{"cancel", "--coordinator", "127.0.0.1:1", NULL}, "missing arguments"},
        {{"exec", "--np", "2", "--coordinator", "127.0.0.1:1", NULL}, "no program"},
        {{"jobs", "--state", "sleeping", "--coordinator", "127.0.0.1:1", NULL}, "one of queued"},
        {{"submit", "x.ini", "--np", "--coordinator", "127.0.0.1:1", NULL}, "unexpected argument"},
    };
    for (size_t i = 0; i < RT_ARRAY_LEN(cases); i++) {
        CHECK(cl_cli(&C, &out, 30, cases[i].args) == 2);
        if (!strstr(out, cases[i].says))
            fprintf(stderr, "%s: %s", cases[i].args[0], out);
        CHECK(strstr(out, cases[i].says) != NULL);
        CHECK(strstr(out, "cannot reach") == NULL);
        free(out);
    }
    /* --help is an answer, on standard output */
    const char *help[] = {"logs", "--help", NULL};
    CHECK(cl_cli(&C, &out, 30, help) == 0);
    CHECK(strstr(out, "--follow") != NULL);
    free(out);
}

/* ---- output after silence --------------------------------------------------------- */

/* Submit the job file ini (not followed) and wait until it runs; its id. */
static int64_t submit_running(const char *ini)
{
    char *out = NULL;
    const char *sub[] = {"submit", ini, NULL};
    CHECK(cl_cli(&C, &out, 30, sub) == 0);
    rt_json *jobs = cl_get(&C, "/v1/jobs?limit=1");
    int64_t id = 0;
    rt_json_get_int(rt_json_at(rt_json_get(jobs, "jobs"), 0), "id", &id);
    rt_json_free(jobs);
    /* the id alone on a line (stdout, for scripts), besides stderr's words */
    char line[32];
    snprintf(line, sizeof line, "\n%lld\n", (long long)id);
    CHECK(out && (strncmp(out, line + 1, strlen(line + 1)) == 0 || strstr(out, line) != NULL));
    free(out);
    rt_json_free(cl_wait_job(&C, id, "running", 20000));
    return id;
}

/* A program silent for 3 s (three times the coordinator's HTTP timeout, and
 * three of the CLI's 1 s receive timeouts) is followed to its end by exec,
 * submit --follow and logs --follow: nothing is lost or cut short. */
static void test_silent_program(void **state)
{
    (void)state;
    char *out = NULL;
    const char *ex[] = {"exec", "--np", "2", "--", "sh", "-c", "echo before; sleep 3; echo after",
                        NULL};
    CHECK(cl_cli(&C, &out, 60, ex) == 0);
    CHECK(strstr(out, "[0] before") && strstr(out, "[0] after") && strstr(out, "[1] after"));
    CHECK(strstr(out, "incomplete") == NULL && strstr(out, "cut short") == NULL);
    free(out);
    /* a job file, followed; then its logs followed again while it is silent */
    char ini[400];
    snprintf(ini, sizeof ini, "%s/silent.ini", C.dir);
    FILE *f = fopen(ini, "w");
    CHECK(f != NULL);
    fprintf(f, "[job]\ntype = exec\nname = silent\nnp = 1\n"
               "command = sh, -c, echo start; sleep 3; echo end\n");
    fclose(f);
    const char *sub[] = {"submit", ini, "--follow", NULL};
    CHECK(cl_cli(&C, &out, 60, sub) == 0);
    CHECK(strstr(out, "[0] start") && strstr(out, "[0] end"));
    free(out);
    int64_t id = submit_running(ini);
    char ids[32];
    snprintf(ids, sizeof ids, "%lld", (long long)id);
    const char *lg[] = {"logs", ids, "--follow", NULL};
    CHECK(cl_cli(&C, &out, 60, lg) == 0);
    CHECK(strstr(out, "[0] end") != NULL);
    free(out);
    /* the ranks' rendezvous files (they hold the job's key) are gone with them */
    rt_json_free(cl_wait_job(&C, id, NULL, 20000));
    cl_sleep_ms(500);
    char pattern[400];
    snprintf(pattern, sizeof pattern, "%s/work-*/job-*/rank-*.rendezvous", C.dir);
    glob_t g;
    int gr = glob(pattern, 0, NULL, &g);
    if (gr == 0)
        fprintf(stderr, "left behind: %s (and %zu more)\n", g.gl_pathv[0], g.gl_pathc - 1);
    CHECK(gr == GLOB_NOMATCH);
    if (gr == 0)
        globfree(&g);
}

/* ---- a follower that stops reading ----------------------------------------------- */

/* `ringtrain logs --follow` into a pager left paused for 12 s while the job
 * writes 24 MB: the coordinator does not queue the output for it without
 * bound (it held all of it before) but cuts the stream past its backlog
 * limit and tells the agent to stop; the CLI, read again, reconnects and
 * resumes where it was — every line exactly once. */
static void test_stalled_follower(void **state)
{
    (void)state;
    char ini[400], *out = NULL;
    snprintf(ini, sizeof ini, "%s/chatty.ini", C.dir);
    FILE *f = fopen(ini, "w");
    CHECK(f != NULL);
    fprintf(f, "[job]\ntype = exec\nname = chatty\nnp = 1\n"
               "command = sh, -c, yes 0123456789012345678901234567890123456789012345678 | "
               "head -c 24000000; sleep 2\n");
    fclose(f);
    int64_t id = submit_running(ini);
    char ids[32];
    snprintf(ids, sizeof ids, "%lld", (long long)id);
    const char *lg[] = {"logs", ids, "--rank", "0", "--follow", NULL};
    int rc = cl_cli_stalled(&C, &out, 180, 12000, lg);
    CHECK(strstr(out, "reconnected") != NULL); /* it was cut, and came back */
    /* stderr shares the pipe: its "ringtrain: ..." lines can land inside a
     * line of the job's output; take them out, then count */
    for (char *m; (m = strstr(out, "ringtrain: ")) != NULL;) {
        char *e = strchr(m, '\n');
        memmove(m, e ? e + 1 : m + strlen(m), strlen(e ? e + 1 : m + strlen(m)) + 1);
    }
    size_t lines = 0, other = 0;
    for (char *p = out, *nl; p && *p; p = nl + 1) {
        nl = strchr(p, '\n');
        if (!nl)
            break;
        if (nl - p == 49 && !strncmp(p, "0123456789012345678901234567890123456789012345678", 49))
            lines++;
        else if (other++ < 5)
            printf("stalled follower: %.*s\n", (int)(nl - p), p);
    }
    printf("stalled follower: exit %d, %zu of 480000 lines\n", rc, lines);
    CHECK(rc == 0 && lines == 480000);
    free(out);
    FILE *lf = fopen(C.coord.log, "r");
    CHECK(lf != NULL);
    char line[1024];
    bool said = false;
    while (fgets(line, sizeof line, lf))
        said = said || strstr(line, "has not read") != NULL;
    fclose(lf);
    CHECK(said);
    rt_json_free(cl_wait_job(&C, id, NULL, 20000));
}

/* An agent that cannot write its log (or work) folder refuses to start,
 * with the reason, and a non-zero exit (systemd's Restart=on-failure and
 * `systemctl status` show it) — instead of reporting itself up and failing
 * every rank.  (Root can write any folder, so the test uses one that cannot
 * be made at all.) */
static void test_agent_unwritable_dirs(void **state)
{
    (void)state;
    char conf[400], cmd[1200];
    snprintf(conf, sizeof conf, "%s/bad-agent.conf", C.dir);
    FILE *f = fopen(conf, "w");
    CHECK(f != NULL);
    fprintf(f, "[agent]\ncoordinator = 127.0.0.1:%d\nca = ca.crt\ntoken_file = token\n"
               "log_dir = /proc/ringtrain-test-logs\n", C.cport);
    fclose(f);
    snprintf(cmd, sizeof cmd, "timeout 20 %s --config %s 2>&1", cl_agent_exe(), conf);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    char out[4096] = "";
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 124);
    if (!strstr(out, "log_dir /proc/ringtrain-test-logs"))
        fprintf(stderr, "agent said: %s\n", out);
    CHECK(strstr(out, "log_dir /proc/ringtrain-test-logs") != NULL);
    /* pointed at the HTTP API's port: it says what is wrong instead of hanging */
    f = fopen(conf, "w");
    CHECK(f != NULL);
    fprintf(f, "[agent]\ncoordinator = 127.0.0.1:%d\nca = ca.crt\ntoken_file = token\n"
               "reconnect_max = 1s\n", C.hport);
    fclose(f);
    snprintf(cmd, sizeof cmd, "timeout -s INT 13 %s --config %s 2>&1", cl_agent_exe(), conf);
    p = popen(cmd, "r");
    CHECK(p != NULL);
    n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    pclose(p);
    if (!strstr(out, "not the HTTP API's (http_listen)?"))
        fprintf(stderr, "agent said: %s\n", out);
    CHECK(strstr(out, "not the HTTP API's (http_listen)?") != NULL);
}

/* Ctrl-C: `submit --follow` detaches (the job keeps running), `exec`
 * cancels (the job is the command); SIGTERM and SIGHUP the same. */
static void test_ctrl_c(void **state)
{
    (void)state;
    char ini[400];
    snprintf(ini, sizeof ini, "%s/long.ini", C.dir);
    FILE *f = fopen(ini, "w");
    CHECK(f != NULL);
    fprintf(f, "[job]\ntype = exec\nname = long\nnp = 1\ncommand = sh, -c, echo up; sleep 60\n");
    fclose(f);
    char *out = NULL;
    const char *sub[] = {"submit", ini, "--follow", NULL};
    CHECK(cl_cli_sigint(&C, &out, 30, 3000, sub) == 130);
    CHECK(strstr(out, "detached") != NULL);
    free(out);
    rt_json *jobs = cl_get(&C, "/v1/jobs?limit=1");
    int64_t id = 0;
    rt_json_get_int(rt_json_at(rt_json_get(jobs, "jobs"), 0), "id", &id);
    rt_json_free(jobs);
    rt_json *d = cl_wait_job(&C, id, "running", 2000); /* still */
    CHECK(d != NULL);
    rt_json_free(d);
    char ids[32];
    snprintf(ids, sizeof ids, "%lld", (long long)id);
    const char *cancel[] = {"cancel", ids, NULL};
    CHECK(cl_cli(&C, &out, 30, cancel) == 0);
    free(out);
    rt_json_free(cl_wait_job(&C, id, "cancelled", 20000));
    const char *ex[] = {"exec", "--np", "1", "--", "sh", "-c", "echo up; sleep 60", NULL};
    CHECK(cl_cli_sigint(&C, &out, 30, 3000, ex) == 130);
    CHECK(strstr(out, "cancelled") != NULL);
    free(out);
    jobs = cl_get(&C, "/v1/jobs?limit=1");
    rt_json_get_int(rt_json_at(rt_json_get(jobs, "jobs"), 0), "id", &id);
    rt_json_free(jobs);
    d = cl_wait_job(&C, id, "cancelled", 20000);
    CHECK(d != NULL);
    rt_json_free(d);
    /* SIGTERM (`timeout`, a batch system's kill) and SIGHUP (a closed
     * terminal) as Ctrl-C: the job cancelled, the CLI exits 128 + signal;
     * the watch of submit --follow ends saying the job keeps running */
    const int sigs[] = {SIGTERM, SIGHUP};
    for (int k = 0; k < 2; k++) {
        const int rc = cl_cli_signal(&C, &out, 30, sigs[k], 3000, ex);
        if (rc != 128 + sigs[k] || !strstr(out, ": job ") || !strstr(out, " cancelled"))
            fprintf(stderr, "exec given signal %d: rc %d: %s\n", sigs[k], rc, out);
        CHECK(rc == 128 + sigs[k] && strstr(out, " cancelled") != NULL);
        free(out);
        jobs = cl_get(&C, "/v1/jobs?limit=1");
        rt_json_get_int(rt_json_at(rt_json_get(jobs, "jobs"), 0), "id", &id);
        rt_json_free(jobs);
        d = cl_wait_job(&C, id, "cancelled", 20000);
        CHECK(d != NULL);
        rt_json_free(d);
    }
    CHECK(cl_cli_signal(&C, &out, 30, SIGTERM, 3000, sub) == 128 + SIGTERM);
    CHECK(strstr(out, "detached") != NULL);
    free(out);
    jobs = cl_get(&C, "/v1/jobs?limit=1");
    rt_json_get_int(rt_json_at(rt_json_get(jobs, "jobs"), 0), "id", &id);
    rt_json_free(jobs);
    snprintf(ids, sizeof ids, "%lld", (long long)id);
    d = cl_wait_job(&C, id, "running", 2000); /* still */
    CHECK(d != NULL);
    rt_json_free(d);
    CHECK(cl_cli(&C, &out, 30, cancel) == 0);
    free(out);
    rt_json_free(cl_wait_job(&C, id, "cancelled", 20000));
}

int main(void)
{
    /* test_cluster_runapi.c has the Run API's and the tokens' tests */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_placement_np5),
        cmocka_unit_test(test_launcher_env),
        cmocka_unit_test(test_results),
        cmocka_unit_test(test_logs_of_attempts),
        cmocka_unit_test(test_progress_flood),
        cmocka_unit_test(test_escaped_process),
        cmocka_unit_test(test_escaped_process_no_env),
        cmocka_unit_test(test_shm_leftovers),
        cmocka_unit_test(test_python_binding),
        cmocka_unit_test(test_exec_program_path),
        cmocka_unit_test(test_exec_chdir),
        cmocka_unit_test(test_job_file_reaches_rank),
        cmocka_unit_test(test_rank_usage),
        cmocka_unit_test(test_gpu_usage),
        cmocka_unit_test(test_job_limits),
        cmocka_unit_test(test_escaped_usage),
        cmocka_unit_test(test_tokens_and_roles),
        cmocka_unit_test(test_rank_failure),
        cmocka_unit_test(test_invalid_job_file),
        cmocka_unit_test(test_hostile_clients),
        cmocka_unit_test(test_cli_errors),
        cmocka_unit_test(test_silent_program),
        cmocka_unit_test(test_stalled_follower),
        cmocka_unit_test(test_ctrl_c),
        cmocka_unit_test(test_agent_unwritable_dirs),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
