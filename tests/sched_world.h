/* sched_world.h — a fake world for the scheduler's tests (test_sched.c,
 * test_sched_restart.c): the scheduler in-process, fed events with the time
 * passed in, and a fake that plays the agents — it answers the prepare and
 * start frames the scheduler sends, and reports exits when a test says so. */
#ifndef RT_TEST_SCHED_WORLD_H
#define RT_TEST_SCHED_WORLD_H

#include <stdint.h>

#include "rt_json.h"
#include "rt_proto.h"
#include "scheduler.h"

typedef struct world {
    sched S;
    sc_clock now;
    int sent[RT_MSG_COUNT]; /* frames sent, by type */
    char transport[16];     /* of the last start */
    int64_t mem_limit;      /* its memory_limit_bytes (-1: absent) */
    double cpu_limit;       /* its cpu_limit (-1: absent) */
    int64_t sockets, collective_timeout_ms; /* its ring settings */
    bool encrypt;
    int saved_jobs;
} world;

/* A scheduler with test settings (no restarts by default), at time 1 s. */
void world_init(world *w);
void world_free(world *w);
/* Parsed JSON of the test's own text (the test fails if it is not JSON). */
rt_json *parse(const char *text);
/* Run the actions as the core would, with every agent answering at once:
 * prepare -> prepared (addresses), start -> started.  Repeats until quiet. */
void settle(world *w);
/* An agent host_id/name with slots says hello: running (JSON array, NULL:
 * none) is what it runs, caps its capabilities object. */
sc_agent *agent_hello(world *w, const char *host, const char *name, int slots,
                      const char *running, const char *caps);
/* An agent on the machine whose boot id is machine (several hosts — containers,
 * namespaces — on one machine share it). */
sc_agent *agent_on_machine(world *w, const char *host, const char *name, int slots,
                           const char *machine);
sc_agent *agent_up_with(world *w, const char *host, const char *name, int slots,
                        const char *running);
sc_agent *agent_up(world *w, const char *host, const char *name, int slots);
/* An exec job of np ranks with the extra JSON members; fails the test if
 * refused.  Its id. */
int64_t submit_ok(world *w, const char *extra, int np);
/* The job's state (-1: no such job). */
int job_state(world *w, int64_t id);
/* Rank r of job id (its current attempt) exits with code. */
void exit_rank(world *w, int64_t id, int r, int code);
/* Every rank of job id exits with code (0: success). */
void finish_job(world *w, int64_t id, int code);
/* Time passes: the scheduler's timers run. */
void tick(world *w, double seconds);

#endif
