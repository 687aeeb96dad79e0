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
 *     finds the same state;
 *   - a job's environment values (exec -x, S3 credentials) are sealed in it:
 *     neither the database nor its write-ahead log holds one in clear, the
 *     API shows them to an admin, a job restored after a coordinator's
 *     SIGKILL runs with them, one whose values do not open with the state
 *     key fails, saying so, and a database of schema 7 (values in clear)
 *     has them sealed when a coordinator first opens it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cluster_harness.h"
#include "rt_file.h"
#include "test_util.h"

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

/* Whether the file holds the bytes of s (a missing file holds nothing). */
static bool file_holds(const char *path, const char *s)
{
    char *data = NULL, err[RT_ERR_LEN];
    size_t n = 0;
    bool found = rt_read_file(path, (size_t)1 << 30, &data, &n, err) == RT_OK &&
                 memmem(data, n, s, strlen(s)) != NULL;
    free(data);
    return found;
}

/* The state database's files (the database, its write-ahead log and
 * shared memory): whether one holds s. */
static bool db_holds(const cluster *c, const char *s)
{
    const char *files[] = {"state.db", "state.db-wal", "state.db-shm"};
    bool found = false;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[400];
        snprintf(path, sizeof path, "%s/%s", c->dir, files[i]);
        found |= file_holds(path, s);
    }
    return found;
}

/* The value of env NAME in job ID's spec as GET /v1/jobs/ID shows it to an
 * admin (malloc'd), or NULL. */
static char *shown_env(cluster *c, int64_t id, const char *name)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    rt_json *d = cl_get(c, path);
    const char *text = rt_json_get_str(rt_json_get(d, "job"), "spec");
    rt_json *spec = NULL;
    char err[RT_ERR_LEN];
    char *v = NULL;
    if (text && rt_json_parse(text, strlen(text), &spec, err) == RT_OK) {
        const char *s = rt_json_get_str(rt_json_get(spec, "env"), name);
        v = s ? strdup(s) : NULL;
    }
    rt_json_free(spec);
    rt_json_free(d);
    return v;
}

/* What a schema-7 coordinator left: job ID's env NAME in clear. */
static bool as_schema7(const cluster *c, int64_t id, const char *name, const char *value)
{
    char path[400], set[128];
    snprintf(path, sizeof path, "%s/state.db", c->dir);
    snprintf(set, sizeof set, "$.env.%s", name);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    bool ok = sqlite3_open(path, &db) == SQLITE_OK &&
              sqlite3_prepare_v2(db, "UPDATE jobs SET spec=json_set(spec, ?, ?) WHERE id=?", -1,
                                 &st, NULL) == SQLITE_OK &&
              sqlite3_bind_text(st, 1, set, -1, SQLITE_STATIC) == SQLITE_OK &&
              sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC) == SQLITE_OK &&
              sqlite3_bind_int64(st, 3, id) == SQLITE_OK && sqlite3_step(st) == SQLITE_DONE &&
              sqlite3_changes(db) == 1;
    sqlite3_finalize(st);
    ok = ok && sqlite3_exec(db, "PRAGMA user_version = 7", NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_close(db);
    return ok;
}

static int64_t submit_exec(cluster *c, const char *env, const char *cmd)
{
    char *body = cl_exec_body(
        (const char *[]){"--np", "1", "-x", env, "--", "sh", "-c", cmd, c->marker, NULL});
    int64_t id = body ? cl_submit(c, body) : -1;
    free(body);
    return id;
}

static void test_env_sealed(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CHECK(cl_one_agent(c, "sealed", NULL, 1));
    char key[400], out[400], cmd[600];
    snprintf(key, sizeof key, "%s/state.key", c->dir);
    struct stat st;
    CHECK(stat(key, &st) == 0 && (st.st_mode & 0777) == 0600); /* made at the first start */

    /* A holds the only slot; B waits, then writes its secret */
    int64_t a = submit_exec(c, "X_A=alpha-0123456789-sealed", "sleep 60");
    CHECK(a > 0);
    rt_json_free(cl_wait_job(c, a, "running", 20000));
    snprintf(out, sizeof out, "%s/b.out", c->dir);
    snprintf(cmd, sizeof cmd, "printf %%s \"$X_B\" > %s", out);
    int64_t b = submit_exec(c, "X_B=bravo-9876543210-sealed", cmd);
    CHECK(b > 0);
    cl_sleep_ms(300);
    CHECK(db_holds(c, "X_B"));                      /* the names are there */
    CHECK(!db_holds(c, "alpha-0123456789-sealed")); /* the values are not */
    CHECK(!db_holds(c, "bravo-9876543210-sealed"));
    char *v = shown_env(c, b, "X_B");
    CHECK(v && !strcmp(v, "bravo-9876543210-sealed")); /* an admin sees it */
    free(v);

    /* restored after a SIGKILL: B runs with its value */
    cl_stop(&c->coord, SIGKILL);
    CHECK(cl_start_coord(c, NULL, NULL));
    CHECK(cl_wait_agents_up(c, 1, 20000));
    char idtext[32];
    snprintf(idtext, sizeof idtext, "%lld", (long long)a);
    char *text = NULL;
    CHECK(cl_cli(c, &text, 30, (const char *[]){"cancel", idtext, NULL}) == 0);
    free(text);
    rt_json *doc = cl_wait_job(c, b, "succeeded", 20000);
    CHECK(doc != NULL);
    rt_json_free(doc);
    text = NULL;
    FILE *f = fopen(out, "r");
    char got[64] = "";
    if (f) {
        CHECK(fgets(got, sizeof got, f) != NULL);
        fclose(f);
    }
    CHECK(!strcmp(got, "bravo-9876543210-sealed"));
    CHECK(!db_holds(c, "bravo-9876543210-sealed"));

    /* another key: the waiting job E cannot get its values, and fails so;
     * so does D, running: its ranks are stopped (restarting it would need them) */
    int64_t d = submit_exec(c, "X_D=delta", "sleep 60");
    CHECK(d > 0);
    rt_json_free(cl_wait_job(c, d, "running", 20000));
    int64_t e = submit_exec(c, "X_E=echo-55555-sealed", "true");
    CHECK(e > 0);
    cl_sleep_ms(300);
    cl_stop(&c->coord, SIGKILL);
    CHECK(tu_write_text(key, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"));
    chmod(key, 0600);
    CHECK(cl_start_coord(c, NULL, NULL));
    CHECK(cl_wait_agents_up(c, 1, 20000));
    doc = cl_wait_job(c, e, "failed", 20000);
    CHECK(doc != NULL);
    const char *reason = rt_json_get_str(rt_json_get(doc, "job"), "reason");
    CHECK(reason && strstr(reason, "state key") && strstr(reason, "state.key"));
    rt_json_free(doc);
    v = shown_env(c, e, "X_E");
    CHECK(v && !strstr(v, "echo-55555")); /* shown sealed */
    free(v);

    doc = cl_wait_job(c, d, "failed", 20000);
    CHECK(doc != NULL);
    rt_json_free(doc);

    /* an older database: G's value in clear, schema 7; sealed at the start */
    int64_t h = submit_exec(c, "X_H=hotel", "sleep 60");
    CHECK(h > 0);
    rt_json_free(cl_wait_job(c, h, "running", 20000));
    snprintf(out, sizeof out, "%s/f.out", c->dir);
    snprintf(cmd, sizeof cmd, "printf %%s \"$X_F\" > %s", out);
    int64_t g = submit_exec(c, "X_F=sealed-at-submit", cmd);
    CHECK(g > 0);
    cl_sleep_ms(300);
    cl_stop(&c->coord, SIGKILL);
    CHECK(as_schema7(c, g, "X_F", "foxtrot-7777-plain"));
    CHECK(db_holds(c, "foxtrot-7777-plain"));
    CHECK(cl_start_coord(c, NULL, NULL));
    CHECK(cl_wait_agents_up(c, 1, 20000));
    CHECK(!db_holds(c, "foxtrot-7777-plain"));
    snprintf(idtext, sizeof idtext, "%lld", (long long)h);
    text = NULL;
    CHECK(cl_cli(c, &text, 30, (const char *[]){"cancel", idtext, NULL}) == 0);
    free(text);
    doc = cl_wait_job(c, g, "succeeded", 20000);
    CHECK(doc != NULL);
    rt_json_free(doc);
    got[0] = '\0';
    if ((f = fopen(out, "r"))) {
        CHECK(fgets(got, sizeof got, f) != NULL);
        fclose(f);
    }
    CHECK(!strcmp(got, "foxtrot-7777-plain"));
    CHECK(cl_wait_no_marker(c, 20000) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_retention, cl_fixture_setup, cl_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_env_sealed, cl_fixture_setup, cl_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
