/* test_cluster_chaos.c — clients and jobs through daemons killed under
 * them, each case on a fresh cluster on loopback:
 *   - followers across a coordinator restart (kill -9, back a second later):
 *     `exec` and `logs --follow` print every line exactly once and `exec`
 *     returns the job's exit code;
 *   - chaos: 24 exec jobs (np 1-4, 1-3 s, every fifth exiting 3,
 *     max_restarts = 2), each followed by `exec`, while the coordinator is
 *     killed -9 and restarted 5 times and agents 3 times: every job ends,
 *     those that should succeed do, the others fail naming exit code 3,
 *     every follower returns its job's code, nothing is left running. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_harness.h"

#define CHECK(cond) CL_CHECK(failed, cond)

/* ---- followers across a coordinator restart ---------------------------------------- */

typedef struct restarter {
    cluster *c;
    int64_t job; /* > 0: count after_ms from this job running */
    int after_ms, away_ms;
    bool ok;
} restarter;

/* job id running within timeout_ms; quiet while it does not exist yet */
static bool job_running(cluster *c, int64_t id, int timeout_ms)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    for (int waited = 0; waited < timeout_ms; waited += 100) {
        http_resp hr = {0};
        char err[RT_ERR_LEN];
        rt_json *j = NULL;
        bool running = http_request(&c->conn, "GET", path, NULL, &hr, err) == RT_OK &&
                       hr.status == 200 && rt_json_parse(hr.body, hr.len, &j, err) == RT_OK &&
                       !strcmp(cl_job_state(j), "running");
        rt_json_free(j);
        free(hr.body);
        if (running)
            return true;
        cl_sleep_ms(100);
    }
    fprintf(stderr, "job %lld not running after %d ms\n", (long long)id, timeout_ms);
    return false;
}

static void *restart_coordinator(void *arg)
{
    restarter *r = arg;
    if (r->job > 0 && !job_running(r->c, r->job, 30000))
        return NULL;
    cl_sleep_ms(r->after_ms);
    cl_stop(&r->c->coord, SIGKILL);
    cl_sleep_ms(r->away_ms);
    r->ok = cl_start_coord(r->c, NULL, NULL);
    return NULL;
}

/* every "[0] line N" for N in 1..n once, in order */
static bool lines_once(const char *out, int n)
{
    const char *p = out;
    for (int i = 1; i <= n; i++) {
        char want[32];
        snprintf(want, sizeof want, "[0] line %d\n", i);
        const char *q = strstr(p, want);
        if (!q || strstr(q + 1, want))
            return false;
        p = q;
    }
    return true;
}

static void test_followers_survive_restart(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CHECK(cl_init(c, "follow"));
    CHECK(cl_start_coord(c, NULL, NULL));
    CHECK(cl_start_agent(c, 0, "a1", "A", 2, NULL));
    CHECK(cl_wait_agents_up(c, 1, 20000));
    /* exec: one line every 0.25 s for 4 s, exit code 7; the coordinator dies
     * 1 s after the job (the cluster's first) runs and is back 1 s later.
     * Counted from the job, not from the CLI's start: a CLI slow to start
     * under load submitted after the restart and saw none. */
    restarter r = {c, 1, 1000, 1000, false};
    pthread_t th;
    pthread_create(&th, NULL, restart_coordinator, &r);
    const char *ex[] = {"exec", "--np", "1", "--", "sh", "-c",
                        "for i in $(seq 16); do echo line $i; sleep 0.25; done; exit 7", NULL};
    char *out = NULL;
    int rc = cl_cli(c, &out, 60, ex);
    pthread_join(th, NULL);
    CHECK(r.ok);
    if (rc != 7 || !lines_once(out, 16))
        fprintf(stderr, "exec across the restart: rc %d, output:\n%s\n", rc, out);
    CHECK(rc == 7);
    CHECK(lines_once(out, 16));
    CHECK(strstr(out, "reconnected") != NULL);
    free(out);
    CHECK(cl_wait_agents_up(c, 1, 20000));
    /* logs --follow of a running job, across another restart */
    restarter r2 = {c, 0, 1500, 1000, false};
    char *body = cl_exec_body(
        (const char *[]){"--name", "lines", "--np", "1", "--", "sh", "-c",
                         "for i in $(seq 16); do echo line $i; sleep 0.25; done", NULL});
    CHECK(body != NULL);
    int64_t id = cl_submit(c, body);
    free(body);
    CHECK(id > 0);
    rt_json_free(cl_wait_job(c, id, "running", 20000));
    char ids[32];
    snprintf(ids, sizeof ids, "%lld", (long long)id);
    const char *lg[] = {"logs", ids, "--follow", NULL};
    pthread_create(&th, NULL, restart_coordinator, &r2);
    rc = cl_cli(c, &out, 60, lg);
    pthread_join(th, NULL);
    CHECK(r2.ok);
    if (rc != 0 || !lines_once(out, 16))
        fprintf(stderr, "logs --follow across the restart: rc %d, output:\n%s\n", rc, out);
    CHECK(rc == 0 && lines_once(out, 16));
    free(out);
}

/* log_retention: a finished job's output and work folder go once they are
 * older than the retention; a running job's stay however old. */

/* ---- chaos ---------------------------------------------------------------------- */

enum { CHAOS_JOBS = 24 };

typedef struct chaos_job {
    cluster *c;
    int k, rc;
    char *out;
} chaos_job;

static void *chaos_follow(void *arg)
{
    chaos_job *j = arg;
    char np[8], secs[8], code[8], name[32];
    snprintf(np, sizeof np, "%d", 1 + j->k % 4);
    snprintf(secs, sizeof secs, "%d", 1 + j->k % 3);
    snprintf(code, sizeof code, "%d", j->k % 5 == 4 ? 3 : 0);
    snprintf(name, sizeof name, "chaos-%d", j->k);
    /* rank 0 exits with `code` after its allreduce; every rank first sleeps */
    const char *args[] = {"exec", "--np", np, "--name", name, "--max-restarts", "2",
                          "--collective-timeout", "10s", "--", CL_PROBE, "--sleep", secs,
                          "--fail-rank", "0", "--code", code, "--marker", j->c->marker, NULL};
    j->rc = cl_cli(j->c, &j->out, 240, args);
    return NULL;
}

/* What happened to job id, for a failure's report: its events, then every
 * rank's output of its last attempt. */
static void dump_job(cluster *c, int64_t id)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    rt_json *d = cl_get(c, path);
    const rt_json *ev = rt_json_get(d, "events");
    for (size_t i = 0; i < rt_json_len(ev); i++) {
        const rt_json *e = rt_json_at(ev, i);
        fprintf(stderr, "  event %s: %s\n", rt_json_str(rt_json_get(e, "kind"), "?"),
                rt_json_str(rt_json_get(e, "message"), ""));
    }
    rt_json_free(d);
    char ids[24], *out = NULL;
    snprintf(ids, sizeof ids, "%lld", (long long)id);
    const char *args[] = {"logs", ids, NULL};
    cl_cli(c, &out, 30, args);
    fprintf(stderr, "  its output (last attempt):\n%s\n", out ? out : "");
    free(out);
}

static void test_chaos(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CHECK(cl_init(c, "chaos"));
    CHECK(cl_start_coord(c, NULL, NULL));
    const char *names[3] = {"a1", "b1", "c1"}, *hosts[3] = {"A", "B", "C"};
    for (int a = 0; a < 3; a++)
        CHECK(cl_start_agent(c, a, names[a], hosts[a], 2, NULL));
    CHECK(cl_wait_agents_up(c, 3, 20000));
    chaos_job jobs[CHAOS_JOBS];
    pthread_t th[CHAOS_JOBS];
    for (int k = 0; k < CHAOS_JOBS; k++) {
        jobs[k] = (chaos_job){c, k, -1, NULL};
        pthread_create(&th[k], NULL, chaos_follow, &jobs[k]);
        cl_sleep_ms(150);
    }
    /* 5 coordinator kills and 3 agent kills, spread over ~30 s */
    for (int round = 0; round < 8 && !*failed; round++) {
        cl_sleep_ms(2500);
        if (round % 3 == 1) {
            int a = round / 3;
            cl_stop(&c->agent[a], SIGKILL);
            cl_sleep_ms(700);
            CHECK(cl_start_agent(c, a, names[a], hosts[a], 2, NULL));
        } else {
            cl_stop(&c->coord, SIGKILL);
            cl_sleep_ms(700);
            CHECK(cl_start_coord(c, NULL, NULL));
        }
    }
    for (int k = 0; k < CHAOS_JOBS; k++)
        pthread_join(th[k], NULL);
    /* every job is recorded and ended; its outcome is what it should be */
    bool lost[CHAOS_JOBS] = {false}; /* a failing job whose last attempt lost an agent */
    rt_json *list = cl_get(c, "/v1/jobs?limit=100");
    const rt_json *js = rt_json_get(list, "jobs");
    int ended = 0;
    for (size_t i = 0; i < rt_json_len(js); i++) {
        const rt_json *j = rt_json_at(js, i);
        const char *name = rt_json_get_str(j, "name"), *st = rt_json_get_str(j, "state");
        int k = -1;
        if (!name || sscanf(name, "chaos-%d", &k) != 1 || k < 0 || k >= CHAOS_JOBS)
            continue;
        ended++;
        bool should_fail = k % 5 == 4;
        if (strcmp(st, should_fail ? "failed" : "succeeded") != 0) {
            fprintf(stderr, "chaos job %d: %s (%s)\n", k, st, rt_json_str(rt_json_get(j, "reason"), ""));
            dump_job(c, (int64_t)rt_json_num(rt_json_get(j, "id"), 0));
            fprintf(stderr, "its follower's output:\n%s\n", jobs[k].out ? jobs[k].out : "");
        }
        CHECK(!strcmp(st, should_fail ? "failed" : "succeeded"));
        /* the last attempt's real cause: its exit code, or (when chaos hit
         * that attempt) the agent it lost */
        const char *why = rt_json_str(rt_json_get(j, "reason"), "");
        if (should_fail)
            CHECK(strstr(why, "exited with code 3") || strstr(why, "was lost"));
        lost[k] = should_fail && !strstr(why, "exited with code 3");
    }
    rt_json_free(list);
    /* each follower returns its job's code: the failing rank's 3, or 1 when
     * the job failed because it lost an agent (its reason above) */
    int want[CHAOS_JOBS];
    for (int k = 0; k < CHAOS_JOBS; k++) {
        want[k] = k % 5 == 4 ? (lost[k] ? 1 : 3) : 0;
        if (jobs[k].rc != want[k])
            fprintf(stderr, "chaos follower %d: rc %d, want %d; output:\n%s\n", k, jobs[k].rc,
                    want[k], jobs[k].out ? jobs[k].out : "");
    }
    if (ended != CHAOS_JOBS)
        fprintf(stderr, "%d of the %d chaos jobs are recorded\n", ended, CHAOS_JOBS);
    CHECK(ended == CHAOS_JOBS);
    for (int k = 0; k < CHAOS_JOBS; k++) {
        CHECK(jobs[k].rc == want[k]);
        free(jobs[k].out);
        jobs[k].out = NULL;
    }
    CHECK(cl_wait_no_marker(c, 20000) == 0);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]); /* e.g. test_chaos */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_followers_survive_restart, cl_fixture_setup,
                                        cl_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_chaos, cl_fixture_setup, cl_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
