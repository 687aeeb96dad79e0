/* cluster_harness.h — real clusters on loopback for the cluster tests: a
 * temporary folder with fresh TLS material (`ringtrain init-cluster`), the
 * coordinator and agents started as processes from this build, the CLI run
 * as a process with its output captured, the HTTP API read as JSON, and the
 * /proc scan that proves no worker outlived its job.  Every wait is bounded. */
#ifndef RT_CLUSTER_HARNESS_H
#define RT_CLUSTER_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli.h"
#include "rt_json.h"

#define CL_MAX_AGENTS 8

typedef struct cl_daemon {
    pid_t pid;
    char conf[512];
    char log[512];
} cl_daemon;

typedef struct cluster {
    char dir[256];
    char marker[64]; /* passed to every probe: finds leftovers in /proc */
    int cport, hport;
    cl_daemon coord;
    cl_daemon agent[CL_MAX_AGENTS];
    int nagents;
    cli_conn conn;                    /* the API, with the admin token */
    char agent_token[RT_TOKEN_HEX + 1]; /* the agents' registration token */
    const char *agent_extra; /* more [agent] lines for the agents started next, or NULL */
} cluster;

/* mkdtemp + init-cluster + ports; false (and a message) on failure. */
bool cl_init(cluster *c, const char *tag);
/* Write coordinator.conf (extra lines appended to [coordinator]) and start
 * it; env: extra NAME=VALUE entries (NULL-terminated) or NULL.  Starting it
 * again after a kill reuses the same configuration and state database. */
bool cl_start_coord(cluster *c, const char *extra, const char *const *env);
/* Agent i: write its agent.conf and start it. */
bool cl_start_agent(cluster *c, int i, const char *name, const char *host_id, int slots,
                    const char *const *env);
/* cl_init, a coordinator and one agent, a1 on host A with `slots` slots
 * and the [agent] lines agent_extra (or none), registered. */
bool cl_one_agent(cluster *c, const char *tag, const char *agent_extra, int slots);
/* Signal a daemon and wait for it (SIGKILL after 10 s); its wait status,
 * or -1 when it had to be killed. */
int cl_stop(cl_daemon *d, int sig);
/* Until the coordinator answers and n agents are up (per /v1/nodes), at
 * most timeout_ms. */
bool cl_wait_agents_up(cluster *c, int n, int timeout_ms);

/* The ringtrain-agent program of this build. */
const char *cl_agent_exe(void);
/* Run `ringtrain ARGS...` (NULL-terminated) against this cluster; its
 * stdout+stderr in *out (caller frees); the exit code, or -1 on timeout. */
int cl_cli(cluster *c, char **out, int timeout_s, const char *const *args);
/* The same, sending it SIGINT (Ctrl-C) after sigint_after_ms. */
int cl_cli_sigint(cluster *c, char **out, int timeout_s, int sigint_after_ms, const char *const *args);
/* The same with signal sig after after_ms (SIGTERM: `timeout`, a batch kill). */
int cl_cli_signal(cluster *c, char **out, int timeout_s, int sig, int after_ms,
                  const char *const *args);
/* The same, its output left unread for the first stall_ms (a paused pager). */
int cl_cli_stalled(cluster *c, char **out, int timeout_s, int stall_ms, const char *const *args);
/* GET path and parse the JSON answer (NULL on any failure, printed). */
rt_json *cl_get(cluster *c, const char *path);
/* The value of the series NAME (no labels) in /metrics, or -1. */
int64_t cl_metric(cluster *c, const char *name);
/* POST a JSON body to /v1/jobs; the new job's id, or -1. */
int64_t cl_submit(cluster *c, const char *body);
/* `ringtrain submit INI` (30 s at most): the id it says ("submitted job
 * N"), or -1 (its output printed) when it fails or says none. */
int64_t cl_submit_file(cluster *c, const char *ini);
/* The submission `ringtrain exec ARGS...` would POST (the CLI's own parser
 * and builder: cli_parse, cli_job_body_from_exec), args ending with NULL;
 * NULL on a bad flag (said on stderr).  The caller frees it. */
char *cl_exec_body(const char *const *args);
/* Until the job's state is `state` (or any terminal state when NULL); the
 * job document (caller frees) or NULL on timeout. */
rt_json *cl_wait_job(cluster *c, int64_t id, const char *state, int timeout_ms);
/* The job's state string inside a /v1/jobs/ID document. */
const char *cl_job_state(const rt_json *doc);

/* Processes whose command line holds the marker (the probes of this cluster). */
int cl_count_marker(const cluster *c);
/* Until no such process is left, at most timeout_ms; the count left. */
int cl_wait_no_marker(const cluster *c, int timeout_ms);

/* Stop every daemon with SIGTERM; false when one did not exit 0 or a
 * sanitizer reported in a daemon's log.  Prints the logs' last lines and
 * keeps the folder when `dump` or on such a failure; else removes it unless
 * RT_TEST_KEEP is set. */
bool cl_destroy(cluster *c, bool dump);

/* A cmocka fixture of one fresh cluster per test (*state points to it; the
 * test calls cl_init); teardown is cl_destroy, which keeps the files and
 * prints the logs when a check failed. */
typedef struct cl_fixture {
    cluster c;
    bool failed;
} cl_fixture;
int cl_fixture_setup(void **state);
int cl_fixture_teardown(void **state);

/* cmocka's assert_true that also sets *failed (a test's flag: its cluster's
 * files and logs are kept and printed when a check failed). */
#define CL_CHECK(failed, cond)                                                                 \
    do {                                                                                       \
        bool ok_ = (cond);                                                                     \
        if (!ok_)                                                                              \
            *(failed) = true;                                                                  \
        assert_true(ok_ && #cond);                                                             \
    } while (0)

/* Sleep for ms milliseconds. */
void cl_sleep_ms(int ms);

/* Paths of this build's programs. */
extern const char *const CL_PROBE;

#endif
