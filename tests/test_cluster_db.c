/* test_cluster_db.c — the coordinator's state database over a cluster's
 * life, on loopback:
 *   - job_retention: a finished job's record (the job, its attempts, events,
 *     metrics) is deleted once older than it — GET /v1/jobs/ID says 404 and
 *     the list no longer has it — while a running job's stays, and the ids
 *     go on (never reused);
 *   - agent_retention: an agent down for longer is forgotten (no longer in
 *     /v1/nodes nor counted in /metrics), one still up stays, and the
 *     forgotten one registers again when it comes back;
 *   - the database keeps its pages in check: a coordinator restarted on it
 *     finds the same state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_harness.h"

#define CHECK(cond) CL_CHECK(failed, cond)

/* The HTTP status of GET path. */
static int status_of(cluster *c, const char *path)
{
    http_resp r = {0};
    char err[RT_ERR_LEN];
    int code = http_request(&c->conn, "GET", path, NULL, &r, err) == RT_OK ? r.status : -1;
    free(r.body);
    return code;
}

/* Whether /v1/nodes lists the agent KEY. */
static bool node_listed(cluster *c, const char *key)
{
    rt_json *d = cl_get(c, "/v1/nodes");
    bool found = false;
    const rt_json *ns = rt_json_get(d, "nodes");
    for (size_t i = 0; i < rt_json_len(ns) && !found; i++)
        found = !strcmp(rt_json_get_str(rt_json_at(ns, i), "agent"), key);
    rt_json_free(d);
    return found;
}

static void test_retention(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CHECK(cl_init(c, "retention"));
    CHECK(cl_start_coord(c, "agent_retention = 3s\n[jobs]\njob_retention = 3s\n", NULL));
    CHECK(cl_start_agent(c, 0, "a1", "A", 2, NULL) && cl_start_agent(c, 1, "b1", "B", 1, NULL));
    CHECK(cl_wait_agents_up(c, 2, 20000));
    CHECK(cl_metric(c, "ringtrain_agents_known") == 2);

    /* job 1 finishes at once, with events and a progress line; job 2 runs on */
    char *body = cl_exec_body((const char *[]){"--name", "short", "--np", "1", "--", "sh", "-c",
                                               "echo done", c->marker, NULL});
    CHECK(body != NULL);
    int64_t id1 = cl_submit(c, body);
    free(body);
    CHECK(id1 > 0);
    rt_json *doc = cl_wait_job(c, id1, "succeeded", 20000);
    CHECK(doc != NULL);
    rt_json_free(doc);
    body = cl_exec_body((const char *[]){"--name", "long", "--np", "1", "--", "sh", "-c",
                                         "sleep 60", c->marker, NULL});
    CHECK(body != NULL);
    int64_t id2 = cl_submit(c, body);
    free(body);
    CHECK(id2 == id1 + 1);
    rt_json_free(cl_wait_job(c, id2, "running", 20000));

    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id1);
    CHECK(status_of(c, path) == 200);
    int code = 200;
    for (int i = 0; i < 150 && code == 200; i++) { /* 3 s, then at most a prune interval */
        cl_sleep_ms(100);
        code = status_of(c, path);
    }
    CHECK(code == 404);
    rt_json *list = cl_get(c, "/v1/jobs");
    const rt_json *jobs = rt_json_get(list, "jobs");
    CHECK(rt_json_len(jobs) == 1); /* the running job only */
    int64_t listed = 0;
    rt_json_get_int(rt_json_at(jobs, 0), "id", &listed);
    CHECK(listed == id2);
    rt_json_free(list);
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id2);
    CHECK(status_of(c, path) == 200); /* running for longer than 3 s: kept */

    /* b1 killed: down, then forgotten; a1 (up, running job 2) stays */
    cl_stop(&c->agent[1], SIGKILL);
    bool gone = false;
    for (int i = 0; i < 200 && !gone; i++) { /* heartbeat_timeout 2 s + 3 s + the interval */
        cl_sleep_ms(100);
        gone = !node_listed(c, "B/b1");
    }
    CHECK(gone);
    CHECK(node_listed(c, "A/a1"));
    CHECK(cl_metric(c, "ringtrain_agents_known") == 1);

    /* the coordinator restarted on the same database finds the same state */
    cl_stop(&c->coord, SIGKILL);
    CHECK(cl_start_coord(c, NULL, NULL));
    CHECK(cl_wait_agents_up(c, 1, 20000));
    CHECK(!node_listed(c, "B/b1") && node_listed(c, "A/a1"));
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id1);
    CHECK(status_of(c, path) == 404);

    /* b1 comes back: registered again */
    CHECK(cl_start_agent(c, 1, "b1", "B", 1, NULL));
    CHECK(cl_wait_agents_up(c, 2, 20000));
    CHECK(node_listed(c, "B/b1"));

    /* a new job takes the next id, not a deleted one */
    body = cl_exec_body((const char *[]){"--name", "after", "--np", "1", "--", "sh", "-c", "true",
                                         c->marker, NULL});
    CHECK(body != NULL);
    int64_t id3 = cl_submit(c, body);
    free(body);
    CHECK(id3 == id2 + 1);
    char *out = NULL;
    char idtext[32];
    snprintf(idtext, sizeof idtext, "%lld", (long long)id2);
    const char *cancel[] = {"cancel", idtext, NULL};
    CHECK(cl_cli(c, &out, 30, cancel) == 0);
    free(out);
    CHECK(cl_wait_no_marker(c, 10000) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_retention, cl_fixture_setup, cl_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
