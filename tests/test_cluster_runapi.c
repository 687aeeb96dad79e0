/* test_cluster_runapi.c — the cluster of test_cluster.c seen by programs
 * written for torchrun and horovodrun (their environment variables, a
 * store at MASTER_ADDR:MASTER_PORT), by the Python binding, and through the
 * Run API's results, logs of earlier attempts and progress reports; what
 * ranks leave behind; and API tokens with their roles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_proto.h"
#include "rt_time.h"
#include "test_cluster.h"

/* ---- programs written for torchrun and horovodrun -------------------------------- */

/* Every rank gets torchrun's and Horovod's variables, MASTER_ADDR:MASTER_PORT
 * is free for rank 0 to open and the others reach it, and --env passes
 * NAME=VALUE, NAME (this shell's value) and PYTHONPATH by default. */
void test_launcher_env(void **state)
{
    (void)state;
    static const struct {
        int local_rank, local_size, group_rank, cross_rank, cross_size;
    } want[5] = {{0, 3, 0, 0, 2}, {1, 3, 0, 0, 2}, {2, 3, 0, 0, 1}, {0, 2, 1, 1, 2}, {1, 2, 1, 1, 2}};
    setenv("FOO", "from the shell", 1);
    setenv("PYTHONPATH", "/opt/pp", 1);
    char *out = NULL;
    const char *args[] = {"exec", "--np", "5", "--max-restarts", "1", "--env", "FOO", "-x", "BAR=2",
                          "--", "python3", RT_TESTS_DIR "/launcher_env.py", C.marker, NULL};
    int rc = cl_cli(&C, &out, 60, args);
    unsetenv("FOO");
    unsetenv("PYTHONPATH");
    if (rc != 0)
        fprintf(stderr, "exec output:\n%s\n", out);
    CHECK(rc == 0);
    int seen = 0, stores = 0;
    char *copy = strdup(out);
    for (char *line = copy; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        int pr, r;
        char expect[1024];
        if (sscanf(line, "[%d] env RANK=%d", &pr, &r) == 2 && r >= 0 && r < 5 && pr == r) {
            snprintf(expect, sizeof expect,
                     "env RANK=%d WORLD_SIZE=5 LOCAL_RANK=%d LOCAL_WORLD_SIZE=%d GROUP_RANK=%d "
                     "GROUP_WORLD_SIZE=2 ROLE_RANK=%d ROLE_WORLD_SIZE=5 ROLE_NAME=default "
                     "TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=1 "
                     "TORCHELASTIC_RUN_ID=ringtrain-job-",
                     r, want[r].local_rank, want[r].local_size, want[r].group_rank, r);
            const char *got = strchr(line, ']') + 2;
            if (strncmp(got, expect, strlen(expect)) != 0)
                fprintf(stderr, "rank %d: got\n  %s\nwant\n  %s...\n", r, got, expect);
            CHECK(strncmp(got, expect, strlen(expect)) == 0);
            snprintf(expect, sizeof expect,
                     " HOROVOD_RANK=%d HOROVOD_SIZE=5 HOROVOD_LOCAL_RANK=%d HOROVOD_LOCAL_SIZE=%d "
                     "HOROVOD_CROSS_RANK=%d HOROVOD_CROSS_SIZE=%d FOO=from the shell BAR=2 "
                     "PYTHONPATH=/opt/pp CUDA_VISIBLE_DEVICES=%s",
                     r, want[r].local_rank, want[r].local_size, want[r].cross_rank,
                     want[r].cross_size, r == 3 ? "0" : r == 4 ? "1" : "-");
            if (!strstr(got, expect))
                fprintf(stderr, "rank %d: got\n  %s\nwant\n  ...%s\n", r, got, expect);
            CHECK(strstr(got, expect) != NULL);
            seen |= 1 << r;
        }
        if (strstr(line, "] store total 10"))
            stores++;
        line = nl ? nl + 1 : NULL;
    }
    free(copy);
    CHECK(seen == 31);
    CHECK(stores == 5);
    free(out);
    /* the GPU each rank was given is in the job's placement */
    rt_json *list = cl_get(&C, "/v1/jobs?limit=1");
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld",
             (long long)rt_json_num(rt_json_get(rt_json_at(rt_json_get(list, "jobs"), 0), "id"), 0));
    rt_json_free(list);
    rt_json *doc = cl_get(&C, path);
    const rt_json *pl = rt_json_get(doc, "placement");
    CHECK(rt_json_len(pl) == 5);
    for (size_t r = 0; r < rt_json_len(pl); r++) {
        const rt_json *gpu = rt_json_get(rt_json_at(pl, r), "gpu");
        const char *want_gpu = r == 3 ? "0" : r == 4 ? "1" : "";
        CHECK(!strcmp(rt_json_str(gpu, ""), want_gpu));
    }
    rt_json_free(doc);
    /* a variable that is not set here is named, and nothing is submitted */
    int before = njobs();
    const char *unset[] = {"exec", "--np", "1", "--env", "RT_SURELY_NOT_SET", "--", "true", NULL};
    CHECK(cl_cli(&C, &out, 30, unset) == 2);
    CHECK(strstr(out, "--env RT_SURELY_NOT_SET: not set in this shell") != NULL);
    free(out);
    const char *bad[] = {"exec", "--np", "1", "--env", "1X=3", "--", "true", NULL};
    CHECK(cl_cli(&C, &out, 30, bad) == 2);
    CHECK(strstr(out, "--env 1X=3: expected NAME=VALUE") != NULL);
    free(out);
    CHECK(njobs() == before);
}

/* ---- what ranks leave behind ------------------------------------------------------- */

/* A rank starts a process in a session of its own (out of the rank's
 * process group, which the agent kills) and exits: the agent, its child
 * subreaper, kills it within a few seconds. */
void test_escaped_process(void **state)
{
    (void)state;
    char cmd[300], *out = NULL;
    /* the rank lives a second more: the child has left its group by then */
    snprintf(cmd, sizeof cmd, "setsid sh -c 'sleep 300' %s-escapee & sleep 1; echo left-one-behind",
             C.marker);
    const char *args[] = {"exec", "--np", "1", "--", "sh", "-c", cmd, NULL};
    CHECK(cl_cli(&C, &out, 60, args) == 0 && strstr(out, "left-one-behind"));
    free(out);
    CHECK(cl_wait_no_marker(&C, 10000) == 0);
}

/* The same escapee with its environment emptied as well (no RT_* to know
 * it by): where the agent makes cgroups it is killed with its rank's, as
 * anything the rank started; where it cannot (said in its log) the process
 * outlives the rank, as docs/security.md says, and the test ends it. */
void test_escaped_process_no_env(void **state)
{
    (void)state;
    char cmd[400], *out = NULL, mark[96];
    snprintf(mark, sizeof mark, "%s-noenv", C.marker);
    snprintf(cmd, sizeof cmd,
             "setsid env -i sh -c 'sleep 300; :' %s & sleep 1; "
             "pgrep -f %s > /dev/null && echo escapee-running; echo left-one-behind",
             mark, mark);
    const char *args[] = {"exec", "--np", "1", "--", "sh", "-c", cmd, NULL};
    CHECK(cl_cli(&C, &out, 60, args) == 0 && strstr(out, "left-one-behind"));
    CHECK(strstr(out, "escapee-running") != NULL); /* it ran, outside the group, no RT_* */
    free(out);
    if (agent_has_cgroups()) {
        CHECK(cl_wait_no_marker(&C, 10000) == 0);
    } else {
        fprintf(stderr, "no cgroups for this agent: the escapee outlives its rank (documented)\n");
        char kill_cmd[160];
        snprintf(kill_cmd, sizeof kill_cmd, "pkill -KILL -f %s", mark);
        CHECK(system(kill_cmd) == 0);
        CHECK(cl_wait_no_marker(&C, 10000) == 0);
    }
}

/* A rank killed while setting up a shared-memory ring leaves its segment's
 * name in /dev/shm: this rank leaves two of its attempt's (as shm.c names
 * them: the attempt's id, its ring key's tag) and one of its hierarchical
 * ring's within the host, and beside them one of another attempt's and one
 * of the same attempt number under another key (another cluster on this
 * host numbers its jobs alike); when it has exited its agent removes its
 * own three and only those. */
void test_shm_leftovers(void **state)
{
    (void)state;
    const char *other = "/dev/shm/" RT_SHM_PREFIX "00000000deadbeef-notours";
    FILE *f = fopen(other, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
    char cmd[900], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "key=$(sed -n 's/.*\"key\": *\"\\([0-9a-f]*\\)\".*/\\1/p' \"$RT_RENDEZVOUS_FILE\"); "
             "tag=$(printf 'ringtrain-shm:%%s' \"$key\" | sha256sum | cut -c1-16); "
             "id=$(( (RT_JOB_ID << 16) ^ RT_ATTEMPT )); "
             "hid=$(printf %%016x $(( id ^ %#llx ))); id=$(printf %%016x $id); "
             "s=/dev/shm/" RT_SHM_PREFIX "; "
             "touch $s$id-${tag}a $s$id-${tag}b $s$hid-${tag}c $s$id-0000000000000000d; "
             "echo shm-id=$id-$tag hier=$hid",
             (unsigned long long)RT_HIER_SALT_LOCAL);
    const char *args[] = {"exec", "--np", "1", "--", "sh", "-c", cmd, NULL};
    CHECK(cl_cli(&C, &out, 60, args) == 0 && out);
    char id[34] = "", hid[17] = "", path[160];
    const char *at = out ? strstr(out, "shm-id=") : NULL, *ht = out ? strstr(out, "hier=") : NULL;
    if (at && strspn(at + 7, "0123456789abcdef-") == 33 && at[7 + 16] == '-')
        memcpy(id, at + 7, 33);
    if (ht && strspn(ht + 5, "0123456789abcdef") == 16)
        memcpy(hid, ht + 5, 16);
    free(out);
    CHECK(id[0] != 0 && hid[0] != 0);
    snprintf(path, sizeof path, "/dev/shm/" RT_SHM_PREFIX "%sa", id);
    bool gone = false;
    for (int i = 0; i < 100 && !gone; i++) { /* the exit is reported, then the sweep */
        gone = access(path, F_OK) != 0;
        if (!gone)
            cl_sleep_ms(50);
    }
    CHECK(gone);
    snprintf(path, sizeof path, "/dev/shm/" RT_SHM_PREFIX "%sb", id);
    CHECK(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "/dev/shm/" RT_SHM_PREFIX "%s-%sc", hid, id + 17);
    CHECK(access(path, F_OK) != 0);  /* the hierarchical ring's */
    CHECK(access(other, F_OK) == 0); /* another attempt's stays */
    unlink(other);
    snprintf(path, sizeof path, "/dev/shm/" RT_SHM_PREFIX "%.16s-0000000000000000d", id);
    CHECK(access(path, F_OK) == 0); /* the same attempt number under another key stays */
    unlink(path);
}

/* ---- progress floods --------------------------------------------------------------- */

static int api(const char *token, const char *method, const char *path, const char *body,
               char **out);
/* A rank printing 3000 step reports in a tight loop: its agent relays at
 * most 10 a second (and says so), and the result it reports after them
 * still arrives. */
void test_progress_flood(void **state)
{
    (void)state;
    char *out = NULL;
    const char *args[] = {"exec", "--np", "1", "--name", "flood", "--", "sh", "-c",
                          "i=0; while [ $i -lt 3000 ]; do echo \"{\\\"kind\\\":\\\"step\\\","
                          "\\\"step\\\":$i}\" >&4; i=$((i+1)); done; "
                          "i=0; while [ $i -lt 20000 ]; do echo \"{\\\"kind\\\":\\\"epoch\\\","
                          "\\\"epoch\\\":$i}\" >&4; i=$((i+1)); done; "
                          "echo '{\"kind\":\"result\",\"value\":\"after the flood\"}' >&4",
                          NULL};
    const int64_t t0 = rt_now_ns();
    CHECK(cl_cli(&C, &out, 60, args) == 0);
    free(out);
    rt_json *list = cl_get(&C, "/v1/jobs?limit=1");
    char id[32];
    snprintf(id, sizeof id, "%lld",
             (long long)rt_json_num(rt_json_get(rt_json_at(rt_json_get(list, "jobs"), 0), "id"), 0));
    rt_json_free(list);
    const char *st[] = {"status", id, "--results", NULL};
    CHECK(cl_cli(&C, &out, 30, st) == 0);
    CHECK(strstr(out, "0: \"after the flood\"") != NULL);
    free(out);
    /* 20,000 epoch lines (issue 28.5: each an fsync'd insert, unbounded): at
     * most a burst of 100 and 20 a second reach the history, the rest are
     * counted in the job's events, and the job's document stays small */
    const double secs = (double)(rt_now_ns() - t0) / 1e9;
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%s", id);
    char *doc = NULL;
    CHECK(api(C.conn.token, "GET", path, NULL, &doc) == 200);
    rt_json *d = NULL;
    char err[RT_ERR_LEN];
    CHECK(doc && rt_json_parse(doc, strlen(doc), &d, err) == RT_OK);
    int64_t metrics = -1;
    CHECK(rt_json_get_int(d, "metrics_total", &metrics));
    fprintf(stderr, "flood: %lld epoch lines kept of 20000 in %.1f s, the job's document %zu bytes\n",
            (long long)metrics, secs, doc ? strlen(doc) : 0);
    CHECK(metrics >= 100 && metrics <= 100 + 20 * (secs + 1));
    CHECK(doc && strlen(doc) < 1000000);
    CHECK(doc && strstr(doc, "progress lines dropped by its agent"));
    rt_json_free(d);
    free(doc);
    /* older epochs page by page: the 10 newest, then the 10 before them */
    double t_first_newer = 0, t_last_older = 1e300;
    int64_t n_pages[2] = {-1, -1};
    for (int pg = 0; pg < 2; pg++) {
        snprintf(path, sizeof path, "/v1/jobs/%s?metrics_limit=10&metrics_skip=%d", id, pg * 10);
        CHECK(api(C.conn.token, "GET", path, NULL, &doc) == 200);
        CHECK(doc && rt_json_parse(doc, strlen(doc), &d, err) == RT_OK);
        const rt_json *ms = rt_json_get(d, "metrics");
        n_pages[pg] = (int64_t)rt_json_len(ms);
        if (pg == 0 && n_pages[pg] > 0)
            t_first_newer = rt_json_num(rt_json_get(rt_json_at(ms, 0), "time"), 0);
        if (pg == 1 && n_pages[pg] > 0)
            t_last_older = rt_json_num(rt_json_get(rt_json_at(ms, n_pages[pg] - 1), "time"), 0);
        rt_json_free(d);
        free(doc);
    }
    CHECK(n_pages[0] == 10 && n_pages[1] == 10 && t_last_older <= t_first_newer);
    snprintf(path, sizeof path, "/v1/jobs/%s?events_limit=0", id);
    CHECK(api(C.conn.token, "GET", path, NULL, &doc) == 400);
    free(doc);
    bool said = false;
    for (int a = 0; a < C.nagents && !said; a++) {
        FILE *f = fopen(C.agent[a].log, "r");
        char line[1024];
        while (f && fgets(line, sizeof line, f) && !said)
            said = strstr(line, "reports progress faster than 10 step and 20 epoch lines a second") != NULL;
        if (f)
            fclose(f);
    }
    CHECK(said);
}

/* ---- the output of earlier attempts ---------------------------------------------- */

/* A job restarted once: `logs --attempt 1` shows the failed attempt's
 * output, plain `logs` the latest's; an attempt that never was is named. */
void test_logs_of_attempts(void **state)
{
    (void)state;
    char *out = NULL;
    /* each rank prints, then waits (up to 30 s) until both have printed:
     * the agent stops an attempt's other ranks as soon as one fails, and
     * a rank slow to start (ASan on a slow VM) was stopped before it said
     * anything */
    char dir[] = "/tmp/rt-attempts-XXXXXX", script[512];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(script, sizeof script,
             "echo output-of-attempt-$RT_ATTEMPT; touch %s/$RT_ATTEMPT.$RT_RANK; i=0; "
             "while [ ! -e %s/$RT_ATTEMPT.0 ] || [ ! -e %s/$RT_ATTEMPT.1 ]; do "
             "i=$((i+1)); [ $i -gt 300 ] && break; sleep 0.1; done; [ $RT_ATTEMPT -ge 2 ]",
             dir, dir, dir);
    const char *args[] = {"exec", "--np", "2",  "--name", "attempts", "--max-restarts",
                          "1",    "--",   "sh", "-c",     script,     NULL};
    CHECK(cl_cli(&C, &out, 60, args) == 0);
    free(out);
    char path[64];
    for (int a = 1; a <= 2; a++)
        for (int r = 0; r < 2; r++) {
            snprintf(path, sizeof path, "%s/%d.%d", dir, a, r);
            CHECK(unlink(path) == 0); /* both ranks of both attempts were there */
        }
    CHECK(rmdir(dir) == 0);
    rt_json *list = cl_get(&C, "/v1/jobs?limit=1");
    char id[32];
    snprintf(id, sizeof id, "%lld",
             (long long)rt_json_num(rt_json_get(rt_json_at(rt_json_get(list, "jobs"), 0), "id"), 0));
    rt_json_free(list);
    const char *first[] = {"logs", id, "--attempt", "1", NULL};
    CHECK(cl_cli(&C, &out, 30, first) == 0);
    CHECK(strstr(out, "[0] output-of-attempt-1") && strstr(out, "[1] output-of-attempt-1"));
    CHECK(!strstr(out, "output-of-attempt-2"));
    free(out);
    const char *latest[] = {"logs", id, "--rank", "1", NULL};
    CHECK(cl_cli(&C, &out, 30, latest) == 0);
    CHECK(strstr(out, "output-of-attempt-2") && !strstr(out, "output-of-attempt-1"));
    free(out);
    const char *none[] = {"logs", id, "--attempt", "3", NULL};
    CHECK(cl_cli(&C, &out, 30, none) == 3);
    CHECK(strstr(out, "has no attempt 3") != NULL);
    free(out);
}

/* ---- per-rank results ------------------------------------------------------------ */

/* Each rank reports a result just before it exits; every one is kept, in rank
 * order, shown by status --results and in the API's document.  A result that
 * is not JSON is refused by rt_report_result itself (test_units). */
void test_results(void **state)
{
    (void)state;
    char *out = NULL;
    const char *args[] = {"exec", "--np", "4", "--name", "results", "--json", "--", CL_PROBE,
                          "--result", "1", "--marker", C.marker, NULL};
    CHECK(cl_cli(&C, &out, 60, args) == 0);
    free(out);
    rt_json *list = cl_get(&C, "/v1/jobs?limit=1");
    int64_t id = (int64_t)rt_json_num(rt_json_get(rt_json_at(rt_json_get(list, "jobs"), 0), "id"), 0);
    rt_json_free(list);
    char idtxt[32];
    snprintf(idtxt, sizeof idtxt, "%lld", (long long)id);
    const char *st[] = {"status", idtxt, "--results", NULL};
    CHECK(cl_cli(&C, &out, 30, st) == 0);
    char want[256] = "";
    for (int r = 0; r < 4; r++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%d: {\"rank\":%d,\"sum\":10}\n", r, r);
    if (strcmp(out, want) != 0)
        fprintf(stderr, "status --results:\n%s\nwant:\n%s", out, want);
    CHECK(strcmp(out, want) == 0);
    free(out);
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    rt_json *doc = cl_get(&C, path);
    const rt_json *rs = rt_json_get(doc, "results");
    CHECK(rt_json_len(rs) == 4);
    int64_t sum = 0;
    CHECK(rt_json_get_int(rt_json_get(rt_json_at(rs, 3), "value"), "sum", &sum) && sum == 10);
    rt_json_free(doc);
}

/* ---- the Python binding ---------------------------------------------------------- */

/* python/ringtrain on NumPy arrays of every dtype against a serial reference
 * (tests/binding_check.py), its results in status --results, and a dead
 * peer raising RingtrainError that names the rank. */
void test_python_binding(void **state)
{
    (void)state;
    const char *py = "/usr/bin/python3";
    char *out = NULL;
    const char *probe[] = {"exec", "--np", "1", "--", py, "-c", "import numpy", NULL};
    if (cl_cli(&C, &out, 60, probe) != 0) {
        fprintf(stderr, "no NumPy for %s (scripts/install-deps.sh installs python3-numpy):\n%s\n",
                py, out);
        CHECK(false);
    }
    free(out);
    const char *lib = "RINGTRAIN_LIBRARY=" RT_LIBRINGTRAIN;
    /* the sanitizer build: the ASan runtime first, no leak report of python */
    const char *pre = RT_PRELOAD[0] ? "LD_PRELOAD=" RT_PRELOAD : "RT_NOTHING=1";
    const char *asan = RT_PRELOAD[0] ? "ASAN_OPTIONS=detect_leaks=0" : "RT_NOTHING=1";
    const char *args[] = {"exec", "--np", "4", "--env", "PYTHONPATH=" RT_TESTS_DIR "/../python",
                          "--env", lib, "--env", pre, "--env", asan, "--", py,
                          RT_TESTS_DIR "/binding_check.py", "collectives", C.marker, NULL};
    int rc = cl_cli(&C, &out, 120, args);
    if (rc != 0)
        fprintf(stderr, "exec output:\n%s\n", out);
    CHECK(rc == 0);
    for (int r = 0; r < 4; r++) {
        char want[64];
        snprintf(want, sizeof want, "[%d] binding ok: rank %d, 28 reductions", r, r);
        CHECK(strstr(out, want) != NULL);
    }
    free(out);
    rt_json *list = cl_get(&C, "/v1/jobs?limit=1");
    char id[32];
    snprintf(id, sizeof id, "%lld",
             (long long)rt_json_num(rt_json_get(rt_json_at(rt_json_get(list, "jobs"), 0), "id"), 0));
    rt_json_free(list);
    const char *st[] = {"status", id, "--results", NULL};
    CHECK(cl_cli(&C, &out, 30, st) == 0);
    CHECK(strstr(out, "3: {\"rank\":3,\"checks\":28,\"gathered\":[0,1,4,9]}") != NULL);
    free(out);
    /* the last rank leaves after init: the others get an exception naming it */
    const char *dead[] = {"exec", "--np", "3", "--collective-timeout", "10s", "--env",
                          "PYTHONPATH=" RT_TESTS_DIR "/../python", "--env", lib, "--env", pre,
                          "--env", asan, "--", py, RT_TESTS_DIR "/binding_check.py", "dead-peer",
                          C.marker, NULL};
    rc = cl_cli(&C, &out, 120, dead);
    if (rc != 0 || !strstr(out, "[0] rank 0 caught: ") || !strstr(out, "[1] rank 1 caught: ") ||
        !strstr(out, "rank 2"))
        fprintf(stderr, "dead peer: rc %d, output:\n%s\n", rc, out);
    CHECK(rc == 0);
    CHECK(strstr(out, "[0] rank 0 caught: ") && strstr(out, "[1] rank 1 caught: "));
    CHECK(strstr(out, "[0] rank 0 then: ") && strstr(out, "[1] rank 1 then: "));
    /* the exception names the rank that left, with its address */
    if (!strstr(out, "rank 2 (127.0.0.1:"))
        fprintf(stderr, "dead peer: no exception names rank 2:\n%s\n", out);
    CHECK(strstr(out, "rank 2 (127.0.0.1:") != NULL);
    free(out);
    CHECK(cl_count_marker(&C) == 0);
}


/* ---- API tokens and roles ------------------------------------------------------- */

/* One request with the given token; its status, the body in *body when asked. */
static int api(const char *token, const char *method, const char *path, const char *body,
               char **out)
{
    cli_conn c = C.conn;
    snprintf(c.token, sizeof c.token, "%s", token);
    http_resp r = {0};
    char err[RT_ERR_LEN];
    if (http_request(&c, method, path, body, &r, err) != RT_OK) {
        fprintf(stderr, "%s %s: %s\n", method, path, err);
        return -1;
    }
    if (out)
        *out = r.body;
    else
        free(r.body);
    return r.status;
}

/* POST /v1/jobs of body as token with Idempotency-Key key: the HTTP status,
 * and the id answered in *id (0 when none). */
static int post_keyed(const char *token, const char *key, const char *body, int64_t *id)
{
    cli_conn c = C.conn;
    snprintf(c.token, sizeof c.token, "%s", token);
    snprintf(c.idem_key, sizeof c.idem_key, "%s", key);
    http_resp r = {0};
    char err[RT_ERR_LEN];
    *id = 0;
    if (http_request(&c, "POST", "/v1/jobs", body, &r, err) != RT_OK) {
        fprintf(stderr, "POST /v1/jobs: %s\n", err);
        return -1;
    }
    rt_json *j = NULL;
    if (r.status == 201 && rt_json_parse(r.body, r.len, &j, err) == RT_OK)
        rt_json_get_int(j, "id", id);
    rt_json_free(j);
    free(r.body);
    return r.status;
}

/* A new token with role, made with the CLI; its secret. */
static char *make_token(const char *name, const char *role)
{
    char *out = NULL;
    const char *args[] = {"token", "create", name, "--role", role, NULL};
    int rc = cl_cli(&C, &out, 30, args);
    if (rc != 0) {
        fprintf(stderr, "token create %s: %s", name, out);
        free(out);
        return NULL;
    }
    /* the token is the first line (stdout), the note follows (stderr) */
    char *nl = strchr(out, '\n');
    if (nl)
        *nl = '\0';
    return out;
}

/* Every role may do what it should and nothing more; the agents' token is
 * no API credential; a revoked token stops at once; tokens outlive a
 * coordinator restart, stored hashed. */
void test_tokens_and_roles(void **state)
{
    (void)state;
    char *rd = make_token("reader", "read"), *sb = make_token("ci-bot", "submit"),
         *mx = make_token("prometheus", "metrics"), *sb2 = make_token("other-bot", "submit");
    CHECK(rd && sb && mx && sb2);
    if (!rd || !sb || !mx || !sb2)
        return;
    CHECK(strlen(rd) == RT_TOKEN_HEX && strlen(sb) == RT_TOKEN_HEX);
    const char *job = "{\"type\":\"exec\",\"np\":1,\"argv\":[\"/bin/true\"],\"hold\":true,"
                      "\"user\":\"mallory\",\"env\":{\"SECRET_API_KEY\":\"hunter2\"}}";
    char *body = NULL;
    /* the agents' token: refused on the API, and told why */
    CHECK(api(C.agent_token, "GET", "/v1/jobs", NULL, &body) == 401);
    CHECK(body && strstr(body, "agents' registration token"));
    free(body);
    /* metrics: /metrics only */
    CHECK(api(mx, "GET", "/metrics", NULL, NULL) == 200);
    CHECK(api(mx, "GET", "/v1/jobs", NULL, NULL) == 403);
    CHECK(api(mx, "GET", "/v1/nodes", NULL, NULL) == 403);
    /* read: looks, never changes */
    CHECK(api(rd, "GET", "/v1/jobs", NULL, NULL) == 200);
    CHECK(api(rd, "GET", "/v1/nodes", NULL, NULL) == 200);
    CHECK(api(rd, "GET", "/metrics", NULL, NULL) == 200);
    CHECK(api(rd, "POST", "/v1/jobs", job, &body) == 403);
    CHECK(body && strstr(body, "token reader has role read; POST /v1/jobs needs role submit"));
    free(body);
    CHECK(api(rd, "GET", "/v1/tokens", NULL, NULL) == 403);
    /* submit: submits and cancels, but does not drain nodes or make tokens */
    CHECK(api(sb, "POST", "/v1/jobs", job, &body) == 201);
    rt_json *j = NULL;
    char err[RT_ERR_LEN];
    int64_t id = 0;
    CHECK(body && rt_json_parse(body, strlen(body), &j, err) == RT_OK && rt_json_get_int(j, "id", &id));
    rt_json_free(j);
    free(body);
    char path[64];
    /* the job is the token's user's, whatever the body says (issue 28.3);
     * its environment (exec -x SECRET=...): names for every role, the
     * values for its own token and admins (28.4) */
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    CHECK(api(rd, "GET", path, NULL, &body) == 200);
    CHECK(body && strstr(body, "\"user\":\"ci-bot\"") && !strstr(body, "\"user\":\"mallory\""));
    CHECK(body && strstr(body, "SECRET_API_KEY") && !strstr(body, "hunter2"));
    free(body);
    CHECK(api(sb2, "GET", path, NULL, &body) == 200);
    CHECK(body && strstr(body, "SECRET_API_KEY") && !strstr(body, "hunter2"));
    free(body);
    CHECK(api(sb, "GET", path, NULL, &body) == 200);
    CHECK(body && strstr(body, "hunter2"));
    free(body);
    CHECK(api(C.conn.token, "GET", path, NULL, &body) == 200);
    CHECK(body && strstr(body, "hunter2"));
    free(body);
    /* another submit token may not cancel, hold or release it (scancel) */
    snprintf(path, sizeof path, "/v1/jobs/%lld/release", (long long)id);
    CHECK(api(sb2, "POST", path, NULL, &body) == 403);
    CHECK(body && strstr(body, "is ci-bot's; token other-bot may change only its own jobs"));
    free(body);
    snprintf(path, sizeof path, "/v1/jobs/%lld/cancel", (long long)id);
    CHECK(api(sb2, "POST", path, NULL, NULL) == 403);
    CHECK(api(rd, "POST", path, NULL, NULL) == 403);
    CHECK(api(sb, "POST", path, NULL, NULL) == 200);
    CHECK(api(sb, "POST", "/v1/nodes/drain", "{\"agent\":\"a1\"}", NULL) == 403);
    CHECK(api(sb, "POST", "/v1/tokens", "{\"name\":\"x\",\"role\":\"admin\"}", NULL) == 403);
    /* names are unique; roles are checked */
    CHECK(api(C.conn.token, "POST", "/v1/tokens", "{\"name\":\"reader\",\"role\":\"read\"}", NULL) == 409);
    CHECK(api(C.conn.token, "POST", "/v1/tokens", "{\"name\":\"y\",\"role\":\"root\"}", NULL) == 400);
    /* the list shows names and roles, never a secret or its hash */
    char *out = NULL;
    const char *list[] = {"token", "list", NULL};
    CHECK(cl_cli(&C, &out, 30, list) == 0);
    CHECK(strstr(out, "reader") && strstr(out, "ci-bot") && strstr(out, "metrics"));
    CHECK(!strstr(out, rd) && !strstr(out, "hash"));
    free(out);
    /* revoked: refused from the next request on */
    const char *rv[] = {"token", "revoke", "reader", NULL};
    CHECK(cl_cli(&C, &out, 30, rv) == 0);
    free(out);
    CHECK(api(rd, "GET", "/v1/jobs", NULL, NULL) == 401);
    /* the database holds hashes only */
    char db[400], cmd[600];
    snprintf(db, sizeof db, "%s/state.db", C.dir);
    snprintf(cmd, sizeof cmd, "grep -c %s %s > /dev/null", sb, db);
    CHECK(system(cmd) != 0);
    /* Idempotency-Key: the same key from the same user names the job the
     * first POST made (a CLI whose POST got no answer sends it again);
     * another user's key is another job; a malformed key is refused */
    char *kb = cl_exec_body((const char *[]){"--name", "keyed", "--np", "1", "--", "true", NULL});
    CHECK(kb != NULL);
    int64_t k1 = 0, k2 = 0, k3 = 0;
    CHECK(post_keyed(sb, "0123abcd-key_1", kb, &k1) == 201 && k1 > 0);
    CHECK(post_keyed(sb, "0123abcd-key_1", kb, &k2) == 201 && k2 == k1);
    CHECK(post_keyed(sb2, "0123abcd-key_1", kb, &k3) == 201 && k3 > 0 && k3 != k1);
    CHECK(post_keyed(sb, "not a key!", kb, &k2) == 400);
    char *jl = NULL;
    CHECK(api(C.conn.token, "GET", "/v1/jobs?limit=100", NULL, &jl) == 200);
    int keyed = 0; /* two jobs named keyed: k1 and k3 */
    for (const char *q = jl; q && (q = strstr(q, "\"name\":\"keyed\"")); q++)
        keyed++;
    CHECK(keyed == 2);
    free(jl);
    /* after a coordinator restart: the submit token still works, the revoked one not;
     * the key still names its job */
    CHECK(cl_stop(&C.coord, SIGTERM) == 0);
    CHECK(cl_start_coord(&C, NULL, NULL));
    CHECK(cl_wait_agents_up(&C, 3, 20000));
    CHECK(post_keyed(sb, "0123abcd-key_1", kb, &k2) == 201 && k2 == k1);
    free(kb);
    CHECK(api(sb, "GET", "/v1/jobs", NULL, NULL) == 200);
    CHECK(api(rd, "GET", "/v1/jobs", NULL, NULL) == 401);
    CHECK(api(mx, "GET", "/metrics", NULL, NULL) == 200);
    free(rd);
    free(sb);
    free(mx);
    free(sb2);
}


/* ---- the program a rank runs ------------------------------------------------------ */

/* Submit an exec body (freed), wait for the job's end, check it ended in
 * state, and return `ringtrain logs ID`'s output (NULL on failure). */
static char *run_to_end(char *body, const char *state)
{
    CHECK(body != NULL);
    int64_t id = body ? cl_submit(&C, body) : -1;
    free(body);
    CHECK(id > 0);
    rt_json *doc = id > 0 ? cl_wait_job(&C, id, NULL, 30000) : NULL;
    CHECK(doc && !strcmp(cl_job_state(doc), state));
    rt_json_free(doc);
    char idtxt[32], *out = NULL;
    snprintf(idtxt, sizeof idtxt, "%lld", (long long)id);
    const char *logs[] = {"logs", idtxt, NULL};
    if (id <= 0 || (cl_cli(&C, &out, 30, logs) != 0 && !out))
        fprintf(stderr, "ringtrain logs %s: failed\n", idtxt);
    return out;
}

/* exec's PROGRAM is looked up in the PATH the ranks run with (a venv's bin
 * first), as srun and horovodrun do, not in the agent's own: np = 5 over
 * the three agents of two hosts all run the venv's `python`; a name in no
 * folder of that PATH fails the job naming it.  The two hosts are one
 * machine (one boot id): every rank is told the job has 5 ranks on it
 * (RT_MACHINE_RANKS, which divides the CPUs), beside its host's 3 or 2,
 * and runs in the folder --chdir named. */
void test_exec_program_path(void **state)
{
    (void)state;
    char bin[600], tool[700];
    snprintf(bin, sizeof bin, "%s/venv", C.dir);
    CHECK(mkdir(bin, 0755) == 0 || errno == EEXIST);
    snprintf(bin, sizeof bin, "%s/venv/bin", C.dir);
    CHECK(mkdir(bin, 0755) == 0 || errno == EEXIST);
    snprintf(tool, sizeof tool, "%s/python", bin);
    FILE *f = fopen(tool, "w");
    CHECK(f != NULL);
    fprintf(f, "#!/bin/sh\necho \"venv python rank $RT_RANK host $RT_LOCAL_SIZE machine "
               "$RT_MACHINE_RANKS cwd $(pwd -P)\"\n");
    fclose(f);
    CHECK(chmod(tool, 0755) == 0);
    char path[800];
    snprintf(path, sizeof path, "PATH=%s:/usr/local/bin:/usr/bin:/bin", bin);
    char *out = run_to_end(
        cl_exec_body((const char *[]){"--name", "venv", "--np", "5", "--chdir", "/", "--env", path,
                                      "--", "python", "-c", "import numpy", C.marker, NULL}),
        "succeeded");
    CHECK(out && strstr(out, "[0] venv python rank 0 host 3 machine 5 cwd /\n") &&
          strstr(out, "[2] venv python rank 2 host 3 machine 5 cwd /\n") &&
          strstr(out, "[3] venv python rank 3 host 2 machine 5 cwd /\n") &&
          strstr(out, "[4] venv python rank 4 host 2 machine 5 cwd /\n"));
    free(out);
    /* a program in no folder of the rank's PATH */
    snprintf(path, sizeof path, "PATH=%s", bin);
    out = run_to_end(cl_exec_body((const char *[]){"--name", "nosuch", "--np", "1", "--env", path,
                                                   "--", "no-such-program-rt", C.marker, NULL}),
                     "failed");
    CHECK(out && strstr(out, "cannot run the program: no-such-program-rt"));
    free(out);
}

/* --chdir: a relative folder is the submitter's joined with it (as srun
 * --chdir), an empty one is refused before anything is sent, and a folder
 * this node does not have leaves the rank in its job's work folder, which
 * the rank's log says. */
void test_exec_chdir(void **state)
{
    (void)state;
    char here[4096], want[4200];
    CHECK(getcwd(here, sizeof here) != NULL);
    snprintf(want, sizeof want, "%s/sub/dir", here);
    char *body =
        cl_exec_body((const char *[]){"--np", "1", "--chdir", "sub/dir", "--", "true", NULL});
    rt_json *j = NULL;
    char err[RT_ERR_LEN];
    CHECK(body && rt_json_parse(body, strlen(body), &j, err) == RT_OK);
    CHECK(j && !strcmp(rt_json_get_str(j, "cwd"), want));
    rt_json_free(j);
    free(body);
    CHECK(cl_exec_body((const char *[]){"--np", "1", "--chdir", "", "--", "true", NULL}) == NULL);

    char *out = run_to_end(
        cl_exec_body((const char *[]){
            "--name", "nofolder", "--np", "1", "--chdir", "/no-such-folder-rt", "--", "sh", "-c",
            "[ \"$(pwd -P)\" = \"$(cd \"$RT_WORK_DIR\" && pwd -P)\" ] && echo in the work folder",
            C.marker, NULL}),
        "succeeded");
    CHECK(out && strstr(out, "[0] in the work folder") &&
          strstr(out, "[0] [agent] cannot enter /no-such-folder-rt, running in the job's work "
                      "folder instead: No such file or directory"));
    free(out);
}

/* A job file's [job] ring settings reach the rank with no code of their own
 * on the way: the CLI sends the file's text (after --set), the coordinator
 * parses it with the job schema, the start message carries the settings,
 * the agent writes them into the rank's rendezvous file, which the rank
 * (here: cat) reads. */
void test_job_file_reaches_rank(void **state)
{
    (void)state;
    char ini[600], idtxt[32], *out = NULL;
    snprintf(ini, sizeof ini, "%s/ring.ini", C.dir);
    FILE *f = fopen(ini, "w");
    CHECK(f != NULL);
    fprintf(f,
            "[job]\ntype = exec\nname = ring-settings\nnp = 2\nsockets = 3\n"
            "command = sh, -c, cat \"$RT_RENDEZVOUS_FILE\" && echo && echo %s\n",
            C.marker);
    fclose(f);
    const char *args[] = {
        "submit", ini, "--set", "job.collective_timeout=77s", "--set", "job.integrity=false", NULL};
    CHECK(cl_cli(&C, &out, 30, args) == 0);
    const char *said = out ? strstr(out, "submitted job ") : NULL;
    long long id = said ? atoll(said + strlen("submitted job ")) : 0;
    free(out);
    CHECK(id > 0);
    rt_json *doc = cl_wait_job(&C, id, NULL, 30000);
    CHECK(doc && !strcmp(cl_job_state(doc), "succeeded"));
    rt_json_free(doc);
    snprintf(idtxt, sizeof idtxt, "%lld", id);
    const char *logs[] = {"logs", idtxt, NULL};
    CHECK(cl_cli(&C, &out, 30, logs) == 0);
    for (int r = 0; r < 2; r++) {
        char want[64];
        snprintf(want, sizeof want, "[%d] {\"job\":%lld", r, id);
        CHECK(out && strstr(out, want));
    }
    CHECK(strstr(out, "\"sockets\":3") && strstr(out, "\"collective_timeout_ms\":77000") &&
          strstr(out, "\"integrity\":false") && strstr(out, "\"hierarchical\":true"));
    free(out);
}
