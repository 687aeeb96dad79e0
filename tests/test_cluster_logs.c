/* test_cluster_logs.c — the ranks' output on a real cluster on loopback,
 * each case on a fresh cluster:
 *   - a rank's output is rotated at log_max_bytes, log_keep files kept, and
 *     `ringtrain logs` still serves it;
 *   - a job that plants links, a FIFO and an oversized file among its own
 *     rotated logs (and a link where its next attempt's log will be) makes
 *     the agent read or write neither the agents' token nor anything else
 *     outside its logs, and the agent stays small and stops on SIGTERM;
 *   - log_retention: a finished job's folders go, a running one's stay;
 *   - output with NUL bytes is kept and served as it is;
 *   - a follower across a coordinator restart (issue 47.3): rank 1's log is
 * made unreadable (a link where its file was), so the agent answers every
 * request for it with an error, which the coordinator puts into the stream;
 * rank 0 prints numbered lines.  The coordinator is SIGKILLed while
 * `ringtrain logs --follow` reads, and started again while the agent is
 * stopped (SIGSTOP); the follower reconnects, waits for the agent (the
 * coordinator answers 503 until it is back) and resumes.  Every line of rank 0 must be there exactly once:
 * when the error line was counted as one of rank 0's (the rank was parsed
 * back from "[R] " text), the resumed stream skipped a real one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster_harness.h"
#include "rt_file.h"
#include "rt_time.h"

#define CHECK(cond) CL_CHECK(failed, cond)

#define LINES 60

typedef struct follower {
    cluster *c;
    int64_t id;
    char *out;
    int rc;
} follower;

static void *follow(void *arg)
{
    follower *f = arg;
    char ids[24];
    snprintf(ids, sizeof ids, "%lld", (long long)f->id);
    const char *args[] = {"logs", ids, "--follow", NULL};
    f->rc = cl_cli(f->c, &f->out, 120, args);
    return NULL;
}

static void test_follower_resumes_after_agent_error(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CL_CHECK(failed, cl_init(c, "logs"));
    CL_CHECK(failed, cl_start_coord(c, NULL, NULL));
    CL_CHECK(failed, cl_start_agent(c, 0, "a1", "A", 2, NULL));
    CL_CHECK(failed, cl_wait_agents_up(c, 1, 20000));
    char ini[600];
    snprintf(ini, sizeof ini, "%s/lines.ini", c->dir);
    FILE *f = fopen(ini, "w");
    CL_CHECK(failed, f != NULL);
    fprintf(f,
            "[job]\ntype = exec\nname = lines\nnp = 2\n"
            "command = /bin/sh, -c, "
            "if [ $RT_RANK = 1 ]; then l=%s/logs-a1/job-$RT_JOB_ID/attempt-$RT_ATTEMPT/rank-1.log; "
            "rm -f $l; ln -s /nonexistent $l; sleep 9; "
            "else sleep 0.5; for i in $(seq 1 %d); do echo line-$i; sleep 0.1; done; fi\n",
            c->dir, LINES);
    fclose(f);
    const long long id = cl_submit_file(c, ini);
    CL_CHECK(failed, id > 0);
    rt_json *running = cl_wait_job(c, id, "running", 20000);
    CL_CHECK(failed, running != NULL);
    rt_json_free(running);
    char link[512]; /* rank 1's log becomes a link before the follower starts */
    snprintf(link, sizeof link, "%s/logs-a1/job-%lld/attempt-1/rank-1.log", c->dir, id);
    struct stat lsb;
    for (int i = 0; i < 200 && !(lstat(link, &lsb) == 0 && S_ISLNK(lsb.st_mode)); i++)
        cl_sleep_ms(100);
    CL_CHECK(failed, lstat(link, &lsb) == 0 && S_ISLNK(lsb.st_mode));
    follower fo = {c, id, NULL, -1};
    pthread_t th;
    pthread_create(&th, NULL, follow, &fo);
    cl_sleep_ms(2000); /* some of rank 0's lines, and the agent's error, are printed */
    cl_stop(&c->coord, SIGKILL);
    /* the agent comes back after the coordinator, as it may on a real
     * cluster: the follower, reconnected first, is told the agent is away
     * (503) and waits for it instead of ending */
    kill(c->agent[0].pid, SIGSTOP);
    cl_sleep_ms(500);
    CL_CHECK(failed, cl_start_coord(c, NULL, NULL));
    cl_sleep_ms(2500);
    kill(c->agent[0].pid, SIGCONT);
    pthread_join(th, NULL);
    fprintf(stderr, "the follower (rc %d):\n%s\n", fo.rc, fo.out ? fo.out : "");
    CL_CHECK(failed, fo.rc == 0);
    CL_CHECK(failed, fo.out && strstr(fo.out, "[agent A/a1: no output of rank 1 here"));
    CL_CHECK(failed, fo.out && strstr(fo.out, "reconnected"));
    CL_CHECK(failed, fo.out && strstr(fo.out, "not connected; waiting for up to"));
    for (int i = 1; i <= LINES; i++) { /* each of rank 0's lines once */
        char want[32];
        snprintf(want, sizeof want, "[0] line-%d\n", i);
        int n = 0;
        for (const char *q = fo.out; q && (q = strstr(q, want)); q += strlen(want))
            n++;
        if (n != 1)
            fprintf(stderr, "rank 0's line-%d was printed %d times\n", i, n);
        CL_CHECK(failed, n == 1);
    }
    free(fo.out);
}

/* ---- log rotation ---------------------------------------------------------------- */

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static void test_log_rotation(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CHECK(cl_one_agent(c, "logs", "log_max_bytes = 8K\nlog_keep = 2\n", 1));
    /* 3000 lines of 32 bytes: 96 KB through an 8 KB log with 2 kept */
    char *out = NULL;
    const char *args[] = {
        "exec",
        "--np",
        "1",
        "--",
        "/bin/sh",
        "-c",
        "i=0; while [ $i -lt 3000 ]; do printf 'line %05d xxxxxxxxxxxxxxxxxxx\\n' "
        "$i; i=$((i+1)); done; echo done-marker",
        NULL};
    CHECK(cl_cli(c, &out, 60, args) == 0);
    CHECK(strstr(out, "[0] done-marker") != NULL);
    /* the stream followed the output across the rotations: from where it
     * started (the oldest file kept when it began) no line is missing */
    int first = -1, last = -1, gaps = 0;
    for (const char *p = out; (p = strstr(p, "[0] line ")); p += 9) {
        int n = atoi(p + 9);
        if (first < 0)
            first = n;
        else if (n != last + 1)
            gaps++;
        last = n;
    }
    fprintf(stderr, "exec output: lines %d..%d, %d gaps\n", first, last, gaps);
    CHECK(first >= 0 && last == 2999 && gaps == 0);
    free(out);
    char base[600], path[700];
    snprintf(base, sizeof base, "%s/logs-a1/job-1/attempt-1/rank-0.log", c->dir);
    long total = 0;
    for (int k = 0; k <= 3; k++) {
        if (k == 0)
            snprintf(path, sizeof path, "%s", base);
        else
            snprintf(path, sizeof path, "%s.%d", base, k);
        long n = file_size(path);
        fprintf(stderr, "%s: %ld bytes\n", path, n);
        if (k <= 2)
            CHECK(n >= 0 && n <= 8192 + 65536); /* at most one pipe read beyond the limit */
        else
            CHECK(n < 0); /* only log_keep rotated files */
        total += n > 0 ? n : 0;
    }
    CHECK(total < 96000); /* older output was dropped */
    /* the newest output is in the current file, and `ringtrain logs` serves it */
    const char *largs[] = {"logs", "1", "--rank", "0", NULL};
    CHECK(cl_cli(c, &out, 30, largs) == 0);
    CHECK(strstr(out, "done-marker") != NULL);
    free(out);
}

/* Issue 28.1: ranks run as the agent's user and can write in their log
 * folder.  Attempt 1 plants, among its rotated logs, a hard link and a
 * symbolic link to the agents' token, a link to its own current log (a
 * loop), a FIFO and a file larger than a rotation makes, and a link to the
 * token where attempt 2's log will be, then fails; attempt 2 runs.  Then
 * `ringtrain logs` of attempt 1 returns without the token, the token file
 * is unchanged, and the agent is small and stops on SIGTERM at once.
 * (Before: the token was printed, and the loop made the agent read the
 * same files forever, growing without bound and deaf to SIGTERM.) */
static void test_log_links(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CHECK(cl_one_agent(c, "links", "log_max_bytes = 8K\nlog_keep = 5\n", 1));
    char token_path[400], *token_before = NULL, *token_after = NULL;
    snprintf(token_path, sizeof token_path, "%s/token", c->dir);
    size_t len = 0;
    char err[RT_ERR_LEN];
    CHECK(rt_read_file(token_path, 4096, &token_before, &len, err) == RT_OK);
    char ini[600], *out = NULL;
    snprintf(ini, sizeof ini, "%s/links.ini", c->dir);
    FILE *f = fopen(ini, "w");
    CHECK(f != NULL);
    fprintf(f,
            "[job]\ntype = exec\nname = links\nnp = 1\nmax_restarts = 1\n"
            "command = /bin/sh, -c, "
            "d=%s/logs-a1/job-$RT_JOB_ID; a=$d/attempt-$RT_ATTEMPT/rank-0.log; "
            "if [ $RT_ATTEMPT = 1 ]; then echo first-attempt; "
            "ln %s $a.5; ln -s %s $a.4; ln -s $a $a.3; mkfifo $a.2; "
            "head -c 3000000 /dev/zero > $a.1; "
            "mkdir -p $d/attempt-2; ln -s %s $d/attempt-2/rank-0.log; exit 3; fi; "
            "echo second-attempt\n",
            c->dir, token_path, token_path, token_path);
    fclose(f);
    const char *sub[] = {"submit", ini, "--follow", NULL};
    int rc = cl_cli(c, &out, 60, sub);
    fprintf(stderr, "the job (rc %d):\n%s\n", rc, out ? out : "");
    free(out);
    /* attempt 1's logs: the job's own output, none of the planted files */
    const char *lg[] = {"logs", "1", "--attempt", "1", "--rank", "0", NULL};
    int64_t t0 = rt_now_ns();
    CHECK(cl_cli(c, &out, 30, lg) == 0);
    const double took = (double)(rt_now_ns() - t0) / 1e9;
    fprintf(stderr, "ringtrain logs --attempt 1 (%.1f s, %zu bytes): %.300s\n", took,
            out ? strlen(out) : 0, out ? out : "");
    CHECK(out && strstr(out, "first-attempt") != NULL);
    CHECK(out && strstr(out, c->agent_token) == NULL);
    CHECK(out && strlen(out) < 100000); /* not the 3 MB file, not a loop */
    free(out);
    /* the token: never appended to (attempt 2's log was a link to it) */
    CHECK(rt_read_file(token_path, 4096, &token_after, &len, err) == RT_OK);
    CHECK(token_before && token_after && strcmp(token_before, token_after) == 0);
    free(token_before);
    free(token_after);
    /* the agent: small, and SIGTERM stops it at once */
    char status[64], line[256];
    snprintf(status, sizeof status, "/proc/%d/status", (int)c->agent[0].pid);
    long rss_kb = -1;
    FILE *st = fopen(status, "r");
    while (st && fgets(line, sizeof line, st))
        if (sscanf(line, "VmRSS: %ld kB", &rss_kb) == 1)
            break;
    if (st)
        fclose(st);
    fprintf(stderr, "agent RSS %ld kB\n", rss_kb);
    CHECK(rss_kb > 0 && rss_kb < 200 * 1024);
    t0 = rt_now_ns();
    CHECK(cl_stop(&c->agent[0], SIGTERM) >= 0); /* -1: it had to be killed */
    fprintf(stderr, "agent stopped in %.1f s\n", (double)(rt_now_ns() - t0) / 1e9);
}

static void test_log_retention(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CHECK(cl_one_agent(c, "retention", "log_retention = 2s\n", 2));
    char *out = NULL;
    const char *quick[] = {"exec", "--np", "1", "--", "sh", "-c", "echo short-lived", NULL};
    CHECK(cl_cli(c, &out, 60, quick) == 0);
    free(out);
    char logs1[400], logs2[400];
    snprintf(logs1, sizeof logs1, "%s/logs-a1/job-1", c->dir);
    snprintf(logs2, sizeof logs2, "%s/logs-a1/job-2", c->dir);
    struct stat sb;
    CHECK(stat(logs1, &sb) == 0);
    /* a job that runs longer than the retention, silent after its first line */
    char *body =
        cl_exec_body((const char *[]){"--name", "long", "--np", "1", "--chdir", "/", "--", "sh",
                                      "-c", "echo started; sleep 60", c->marker, NULL});
    CHECK(body != NULL);
    int64_t id = cl_submit(c, body);
    free(body);
    CHECK(id == 2);
    rt_json_free(cl_wait_job(c, id, "running", 20000));
    bool gone = false;
    for (int i = 0; i < 60 && !gone; i++) {
        cl_sleep_ms(100);
        gone = stat(logs1, &sb) != 0;
    }
    CHECK(gone);                  /* finished, older than 2 s: removed */
    cl_sleep_ms(2500);            /* the running job's log is older than 2 s now */
    CHECK(stat(logs2, &sb) == 0); /* ... and kept: its rank still runs */
    char *l = NULL;
    const char *lg[] = {"logs", "2", NULL};
    CHECK(cl_cli(c, &l, 30, lg) == 0 && strstr(l, "[0] started"));
    free(l);
    const char *cancel[] = {"cancel", "2", NULL};
    CHECK(cl_cli(c, &l, 30, cancel) == 0);
    free(l);
}

/* A rank whose last output holds NUL bytes: the exit report carries them
 * (as U+FFFD: the JSON writer once wrote \u0000, which the coordinator's
 * parser refuses, and it dropped the agent and failed every job on it). */
static void test_nul_output(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CHECK(cl_one_agent(c, "nul", NULL, 2));
    char *out = NULL;
    const char *nul[] = {"exec", "--np", "1", "--", "sh", "-c", "printf 'a\\000b\\n'; exit 3",
                         NULL};
    CHECK(cl_cli(c, &out, 60, nul) != 0 && strstr(out, "exited with code 3"));
    free(out);
    const char *ok[] = {"exec", "--np", "1", "--", "true", NULL};
    CHECK(cl_cli(c, &out, 60, ok) == 0);
    free(out);
    char *log = NULL; /* the agent was never dropped for what it sent */
    size_t len = 0;
    char err[RT_ERR_LEN];
    CHECK(rt_read_file(c->coord.log, 1 << 24, &log, &len, err) == RT_OK);
    CHECK(!strstr(log, "bad frame"));
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_log_rotation, cl_fixture_setup, cl_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_log_links, cl_fixture_setup, cl_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_log_retention, cl_fixture_setup, cl_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_nul_output, cl_fixture_setup, cl_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_follower_resumes_after_agent_error, cl_fixture_setup,
                                        cl_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
