/* test_sched.c — the scheduler in-process (coordinator/scheduler.h): events in,
 * actions out, time passed in.  A small fake plays the agents: it answers
 * the prepare and start frames the scheduler sends and reports exits when a
 * test says so.  Covers Horovod's placement, gang start, FIFO with
 * priority, no starvation of a large job, backfill that cannot delay the
 * head (by deadline and by room), hold/release, refusal of a job larger
 * than the cluster, queue timeouts, elastic restarts after a lost agent,
 * restoring after a coordinator restart (queue order intact, running jobs
 * reconciled with what agents report), deadlines, and 2,000 agents. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_proto.h"
#include "scheduler.h"

/* ---- the fake world --------------------------------------------------------- */

typedef struct world {
    sched S;
    sc_clock now;
    int sent[RT_MSG_COUNT]; /* frames sent, by type */
    char transport[16];     /* of the last start */
    int64_t mem_limit;      /* its memory_limit_bytes (-1: absent) */
    double cpu_limit;       /* its cpu_limit (-1: absent) */
    int saved_jobs;
} world;

static void fake_random(uint8_t *out, size_t len)
{
    static uint8_t c;
    for (size_t i = 0; i < len; i++)
        out[i] = c++;
}

static void world_init(world *w)
{
    memset(w, 0, sizeof *w);
    sc_config cfg = {.prepare_timeout_us = 30000000,
                     .reconcile_timeout_us = 60000000,
                     .default_max_restarts = 0,
                     .default_queue_timeout_us = 0,
                     .random = fake_random};
    sched_init(&w->S, &cfg);
    w->now = (sc_clock){.mono_ns = 1000000000LL, .wall = 1.7e9};
}

static rt_json *parse(const char *text)
{
    rt_json *j = NULL;
    char err[RT_ERR_LEN];
    if (rt_json_parse(text, strlen(text), &j, err) != RT_OK)
        fail_msg("bad JSON in the test: %s: %s", err, text);
    return j;
}

/* Run the actions as the core would, with every agent answering at once:
 * prepare -> prepared (addresses), start -> started.  Repeats until quiet. */
static void settle(world *w)
{
    for (int round = 0; round < 100; round++) {
        int n;
        const sc_action *acts = sched_actions(&w->S, &n);
        if (n == 0)
            return;
        /* copy the frames out: answering appends new actions */
        char **frames = calloc((size_t)n, sizeof *frames);
        char (*agents)[SC_KEY_LEN] = calloc((size_t)n, SC_KEY_LEN);
        int nf = 0;
        for (int i = 0; i < n; i++) {
            if (acts[i].kind == SC_SAVE_JOB)
                w->saved_jobs++;
            if (acts[i].kind != SC_SEND)
                continue;
            frames[nf] = strdup(acts[i].text);
            snprintf(agents[nf++], SC_KEY_LEN, "%s", acts[i].agent);
        }
        sched_actions_clear(&w->S);
        for (int i = 0; i < nf; i++) {
            rt_json *m = parse(frames[i]);
            sc_agent *a = sched_agent(&w->S, agents[i]);
            char err[RT_ERR_LEN];
            rt_msg t = rt_msg_check(m, RT_TO_AGENT, err);
            if (t == RT_MSG_COUNT) {
                fail_msg("the scheduler sent a bad frame (%s): %s", err, frames[i]);
                continue;
            }
            w->sent[t]++;
            if (t == RT_MSG_PREPARE && a && a->up) {
                char buf[8192];
                int64_t job = 0, att = 0;
                rt_json_get_int(m, RT_F_JOB, &job);
                rt_json_get_int(m, RT_F_ATTEMPT, &att);
                int len = snprintf(buf, sizeof buf,
                                   "{\"type\":\"prepared\",\"job\":%lld,\"attempt\":%lld,\"ranks\":[",
                                   (long long)job, (long long)att);
                const rt_json *rk = rt_json_get(m, RT_F_RANKS);
                for (size_t k = 0; k < rt_json_len(rk) && len < 8000; k++) {
                    int64_t r = 0;
                    rt_json_get_int(rt_json_at(rk, k), RT_F_RANK, &r);
                    len += snprintf(buf + len, sizeof buf - (size_t)len,
                                    "%s{\"rank\":%lld,\"addr\":\"127.0.0.1:%lld\"}", k ? "," : "",
                                    (long long)r, 20000 + (long long)r);
                }
                snprintf(buf + len, sizeof buf - (size_t)len, "]}");
                rt_json *p = parse(buf);
                sched_on_prepared(&w->S, a, p, w->now);
                rt_json_free(p);
            } else if (t == RT_MSG_START && a && a->up) {
                int64_t job = 0, att = 0, size = 0;
                rt_json_get_int(m, RT_F_JOB, &job);
                rt_json_get_int(m, RT_F_ATTEMPT, &att);
                rt_json_get_int(m, RT_F_SIZE, &size);
                snprintf(w->transport, sizeof w->transport, "%s",
                         rt_json_str(rt_json_get(m, RT_F_TRANSPORT), "?"));
                w->mem_limit = -1;
                rt_json_get_int(m, RT_F_MEMORY_LIMIT, &w->mem_limit);
                w->cpu_limit = rt_json_num(rt_json_get(m, RT_F_CPU_LIMIT), -1);
                sc_job *j = sched_job(&w->S, job);
                for (int r = 0; j && r < j->cur_np; r++) {
                    if (j->ranks[r].ag != a)
                        continue;
                    char buf[256];
                    snprintf(buf, sizeof buf,
                             "{\"type\":\"started\",\"job\":%lld,\"attempt\":%lld,\"rank\":%d,"
                             "\"pid\":%d}",
                             (long long)job, (long long)att, r, 1000 + r);
                    rt_json *s = parse(buf);
                    sched_on_started(&w->S, a, s, w->now);
                    rt_json_free(s);
                }
            }
            rt_json_free(m);
            free(frames[i]);
        }
        free(frames);
        free(agents);
    }
    fail_msg("the scheduler did not settle");
}

static sc_agent *agent_hello(world *w, const char *host, const char *name, int slots,
                             const char *running, const char *caps)
{
    char buf[4096], err[RT_ERR_LEN];
    snprintf(buf, sizeof buf,
             "{\"type\":\"hello\",\"token\":\"t\",\"proto\":%d,\"version\":\"x\",\"host_id\":\"%s\","
             "\"name\":\"%s\",\"hostname\":\"%s-host\",\"slots\":%d,\"address\":\"127.0.0.1\","
             "\"caps\":%s,\"running\":%s,\"exited\":[]}",
             RT_PROTO_VERSION, host, name, host, slots, caps, running ? running : "[]");
    rt_json *m = parse(buf);
    sc_agent *a = sched_agent_up(&w->S, m, w->now, err);
    rt_json_free(m);
    if (!a)
        fail_msg("agent %s/%s refused: %s", host, name, err);
    settle(w);
    return a;
}

static sc_agent *agent_up_with(world *w, const char *host, const char *name, int slots,
                               const char *running)
{
    return agent_hello(w, host, name, slots, running, "{}");
}

static sc_agent *agent_up(world *w, const char *host, const char *name, int slots)
{
    return agent_up_with(w, host, name, slots, NULL);
}

static int64_t submit_ok(world *w, const char *extra, int np)
{
    char buf[1024], err[RT_ERR_LEN];
    snprintf(buf, sizeof buf,
             "{\"type\":\"exec\",\"name\":\"t\",\"np\":%d,\"argv\":[\"/bin/true\"]%s%s}", np,
             extra && *extra ? "," : "", extra ? extra : "");
    int64_t id = 0;
    if (sched_submit(&w->S, buf, strlen(buf), "tester", w->now, &id, err) != RT_OK)
        fail_msg("submission refused: %s", err);
    settle(w);
    return id;
}

static int job_state(world *w, int64_t id)
{
    sc_job *j = sched_job(&w->S, id);
    return j ? j->state : -1;
}

/* Every rank of job id exits with code (0: success). */
static void finish_job(world *w, int64_t id, int code)
{
    sc_job *j = sched_job(&w->S, id);
    assert_non_null(j);
    int att = j->attempt, np = j->cur_np;
    for (int r = 0; r < np; r++) {
        j = sched_job(&w->S, id);
        if (!j || j->ranks[r].state == RS_EXITED)
            continue;
        char buf[256];
        snprintf(buf, sizeof buf,
                 "{\"type\":\"exited\",\"job\":%lld,\"attempt\":%d,\"rank\":%d,\"code\":%d,"
                 "\"signal\":0,\"tail\":[]}",
                 (long long)id, att, r, code);
        rt_json *m = parse(buf);
        sched_on_exited(&w->S, j->ranks[r].ag, m, w->now);
        rt_json_free(m);
    }
    settle(w);
}

static void tick(world *w, double seconds)
{
    w->now.mono_ns += (int64_t)(seconds * 1e9);
    w->now.wall += seconds;
    sched_tick(&w->S, w->now);
    settle(w);
}

static void world_free(world *w)
{
    sched_free(&w->S);
}

/* ---- tests -------------------------------------------------------------------------- */

static void test_placement_horovod(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a1", 2);
    agent_up(&w, "A", "a2", 1);
    agent_up(&w, "B", "b1", 2);
    int64_t id = submit_ok(&w, NULL, 5);
    assert_int_equal(job_state(&w, id), JOB_RUNNING);
    sc_job *j = sched_job(&w.S, id);
    /* host A: ranks 0-2 (local 0..2 of 3); host B: ranks 3-4 (local 0..1 of 2) */
    const struct { const char *agent; int lr, ls, cr, cs; } want[5] = {
        {"A/a1", 0, 3, 0, 2}, {"A/a1", 1, 3, 0, 2}, {"A/a2", 2, 3, 0, 1},
        {"B/b1", 0, 2, 1, 2}, {"B/b1", 1, 2, 1, 2}};
    for (int r = 0; r < 5; r++) {
        assert_string_equal(j->ranks[r].agent_key, want[r].agent);
        assert_int_equal(j->ranks[r].local_rank, want[r].lr);
        assert_int_equal(j->ranks[r].local_size, want[r].ls);
        assert_int_equal(j->ranks[r].cross_rank, want[r].cr);
        assert_int_equal(j->ranks[r].cross_size, want[r].cs);
    }
    /* gang start: one prepare and one start per agent */
    assert_int_equal(w.sent[RT_MSG_PREPARE], 3);
    assert_int_equal(w.sent[RT_MSG_START], 3);
    assert_string_equal(w.transport, "tcp"); /* "auto" across two hosts, no RDMA */
    assert_int_equal(sched_free_slots(&w.S), 0);
    finish_job(&w, id, 0);
    assert_int_equal(job_state(&w, id), JOB_SUCCEEDED);
    assert_int_equal(sched_free_slots(&w.S), 5);
    /* every rank on host A (two agents): shared memory */
    id = submit_ok(&w, NULL, 3);
    j = sched_job(&w.S, id);
    for (int r = 0; r < 3; r++)
        assert_string_equal(j->ranks[r].host_id, "A");
    assert_string_equal(w.transport, "shm");
    finish_job(&w, id, 0);
    world_free(&w);
}

/* Rank 0's step reports make the current epoch's curve: bounded however
 * many come (thinned, steps still increasing, the last one near the end),
 * started again by a new epoch; other ranks' reports are not in it. */
static void progress(world *w, sc_job *j, int rank, int epoch, int step, double mae)
{
    char buf[256];
    snprintf(buf, sizeof buf,
             "{\"type\":\"progress\",\"job\":%lld,\"attempt\":%d,\"rank\":%d,\"data\":"
             "{\"kind\":\"step\",\"epoch\":%d,\"step\":%d,\"mae\":%g,\"steps_per_s\":5}}",
             (long long)j->id, (int)j->attempt, rank, epoch, step, mae);
    rt_json *m = parse(buf);
    sched_on_progress(&w->S, j->ranks[rank].ag, m, w->now);
    rt_json_free(m);
}

static void test_step_curve(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a1", 2);
    int64_t id = submit_ok(&w, NULL, 2);
    sc_job *j = sched_job(&w.S, id);
    assert_int_equal(j->state, JOB_RUNNING);
    for (int k = 1; k <= 5000; k++)
        progress(&w, j, 0, 1, k, 1.0 / k);
    progress(&w, j, 1, 1, 5001, 99); /* not rank 0's */
    const sc_steps *s = j->steps;
    assert_non_null(s);
    assert_int_equal(s->epoch, 1);
    assert_true(s->n > SC_STEP_POINTS / 4 && s->n <= SC_STEP_POINTS);
    for (int i = 1; i < s->n; i++)
        assert_true(s->p[i].step > s->p[i - 1].step && s->p[i].mae < s->p[i - 1].mae);
    assert_true(s->p[s->n - 1].step > 5000 - 5000 / (SC_STEP_POINTS / 4));
    progress(&w, j, 0, 2, 1, 0.5); /* a new epoch starts the curve again */
    assert_int_equal(s->epoch, 2);
    assert_int_equal(s->n, 1);
    assert_int_equal(s->p[0].step, 1);
    finish_job(&w, id, 0);
    world_free(&w);
}

static void test_fifo_and_no_starvation(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 4);
    int64_t j1 = submit_ok(&w, NULL, 2); /* runs */
    int64_t big = submit_ok(&w, NULL, 4); /* waits: the head */
    assert_int_equal(job_state(&w, j1), JOB_RUNNING);
    assert_int_equal(job_state(&w, big), JOB_QUEUED);
    assert_int_equal(sched_job(&w.S, big)->queue_pos, 1);
    /* small jobs without deadlines keep coming; two slots are free, but any
     * of them could delay the big one: none overtakes it */
    int64_t small[5];
    for (int i = 0; i < 5; i++) {
        small[i] = submit_ok(&w, NULL, 1);
        assert_int_equal(job_state(&w, small[i]), JOB_QUEUED);
        assert_int_equal(sched_job(&w.S, small[i])->queue_pos, i + 2);
        assert_non_null(strstr(sched_job(&w.S, small[i])->reason, "could delay job"));
    }
    tick(&w, 3600);
    assert_int_equal(job_state(&w, big), JOB_QUEUED); /* no queue timeout by default */
    finish_job(&w, j1, 0);
    assert_int_equal(job_state(&w, big), JOB_RUNNING);
    for (int i = 0; i < 5; i++)
        assert_int_equal(job_state(&w, small[i]), JOB_QUEUED);
    finish_job(&w, big, 0);
    /* then the small ones, in submission order, four at a time */
    for (int i = 0; i < 4; i++)
        assert_int_equal(job_state(&w, small[i]), JOB_RUNNING);
    assert_int_equal(job_state(&w, small[4]), JOB_QUEUED);
    finish_job(&w, small[0], 0);
    assert_int_equal(job_state(&w, small[4]), JOB_RUNNING);
    world_free(&w);
}

static void test_backfill_by_deadline(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 4);
    int64_t run = submit_ok(&w, "\"deadline_ms\":100000", 3); /* holds 3 slots for <= 100 s */
    int64_t head = submit_ok(&w, NULL, 4);                     /* can start in 100 s at the latest */
    int64_t quick = submit_ok(&w, "\"deadline_ms\":50000", 1); /* ends before: backfills */
    int64_t slow = submit_ok(&w, "\"deadline_ms\":200000", 1); /* would delay the head */
    int64_t open = submit_ok(&w, NULL, 1);                     /* unbounded: would delay it */
    assert_int_equal(job_state(&w, run), JOB_RUNNING);
    assert_int_equal(job_state(&w, head), JOB_QUEUED);
    assert_int_equal(job_state(&w, quick), JOB_RUNNING);
    assert_int_equal(job_state(&w, slow), JOB_QUEUED);
    assert_int_equal(job_state(&w, open), JOB_QUEUED);
    /* the head starts as soon as the slots are free */
    finish_job(&w, quick, 0);
    finish_job(&w, run, 0);
    assert_int_equal(job_state(&w, head), JOB_RUNNING);
    world_free(&w);
}

static void test_backfill_by_room(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 4);
    agent_up(&w, "B", "b", 2);
    int64_t run = submit_ok(&w, "\"deadline_ms\":100000", 4); /* 2 free now */
    int64_t head = submit_ok(&w, NULL, 4); /* in 100 s: 6 free, 2 to spare */
    int64_t fits = submit_ok(&w, NULL, 2);  /* no deadline, but the spare room holds it */
    int64_t more = submit_ok(&w, NULL, 1);  /* the spare room is used up */
    assert_int_equal(job_state(&w, run), JOB_RUNNING);
    assert_int_equal(job_state(&w, head), JOB_QUEUED);
    assert_int_equal(job_state(&w, fits), JOB_RUNNING);
    assert_int_equal(job_state(&w, more), JOB_QUEUED);
    finish_job(&w, run, 0);
    assert_int_equal(job_state(&w, head), JOB_RUNNING); /* not delayed */
    world_free(&w);
}

static void test_priority_hold_and_refusal(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 2);
    char err[RT_ERR_LEN];
    int64_t id = 0;
    const char *big = "{\"type\":\"exec\",\"np\":3,\"argv\":[\"x\"]}";
    assert_int_equal(sched_submit(&w.S, big, strlen(big), "u", w.now, &id, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "asks for 3 ranks but the whole cluster has 2 slots"));
    int64_t run = submit_ok(&w, NULL, 2);
    int64_t low = submit_ok(&w, NULL, 2);
    int64_t high = submit_ok(&w, "\"priority\":5", 2);
    int64_t held = submit_ok(&w, "\"priority\":9,\"hold\":true", 2);
    assert_int_equal(sched_job(&w.S, held)->queue_pos, 0);
    assert_non_null(strstr(sched_job(&w.S, held)->reason, "held"));
    assert_int_equal(sched_job(&w.S, high)->queue_pos, 1);
    assert_int_equal(sched_job(&w.S, low)->queue_pos, 2);
    finish_job(&w, run, 0);
    assert_int_equal(job_state(&w, high), JOB_RUNNING);
    assert_int_equal(job_state(&w, held), JOB_QUEUED);
    assert_int_equal(sched_hold(&w.S, high, true, w.now, err), RT_ERR_INVALID); /* running */
    assert_int_equal(sched_hold(&w.S, held, false, w.now, err), RT_OK);
    settle(&w);
    finish_job(&w, high, 0);
    assert_int_equal(job_state(&w, held), JOB_RUNNING); /* released: priority 9 goes first */
    assert_int_equal(job_state(&w, low), JOB_QUEUED);
    assert_int_equal(sched_cancel(&w.S, low, w.now, err), RT_OK);
    settle(&w);
    assert_int_equal(job_state(&w, low), JOB_CANCELLED);
    assert_int_equal(sched_cancel(&w.S, 999, w.now, err), RT_ERR_NOTFOUND);
    world_free(&w);
}

/* memory_limit and cpu_limit: bad values refused at submission; a job with
 * them runs only on agents that enforce them (caps "limits"), is refused when
 * those have too few slots, waits saying why while they are busy, and its
 * start frame carries them (absent when not set); what an agent says of a
 * rank's end (the OOM killer) is in the job's reason and first failure. */
static void test_job_limits(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 2);
    sc_agent *b = agent_hello(&w, "B", "b", 2, NULL, "{\"limits\":[\"memory\",\"cpu\"]}");
    char err[RT_ERR_LEN];
    int64_t id = 0;
    const char *bad[] = {"\"memory_limit_bytes\":-1", "\"memory_limit_bytes\":\"1G\"",
                         "\"cpu_limit\":-0.5", "\"cpu_limit\":5000", "\"cpu_limit\":\"2\""};
    for (size_t i = 0; i < RT_ARRAY_LEN(bad); i++) {
        char spec[200];
        snprintf(spec, sizeof spec, "{\"type\":\"exec\",\"np\":1,\"argv\":[\"x\"],%s}", bad[i]);
        assert_int_equal(sched_submit(&w.S, spec, strlen(spec), "u", w.now, &id, err),
                         RT_ERR_INVALID);
        assert_non_null(strstr(err, i < 2 ? "memory_limit_bytes" : "cpu_limit"));
    }
    const char *three = "{\"type\":\"exec\",\"np\":3,\"argv\":[\"x\"],\"cpu_limit\":1}";
    assert_int_equal(sched_submit(&w.S, three, strlen(three), "u", w.now, &id, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "3 ranks with cpu_limit, but the agents that can enforce it have 2 slots"));
    int64_t plain = submit_ok(&w, NULL, 2); /* on A, the first host */
    assert_int_equal(w.mem_limit, -1);
    assert_true(w.cpu_limit == -1);
    assert_string_equal(sched_job(&w.S, plain)->ranks[0].agent_key, "A/a");
    finish_job(&w, plain, 0);
    int64_t lim = submit_ok(&w, "\"memory_limit_bytes\":67108864,\"cpu_limit\":1.5", 2);
    assert_int_equal(job_state(&w, lim), JOB_RUNNING);
    assert_string_equal(sched_job(&w.S, lim)->ranks[1].agent_key, "B/b"); /* A is free: not it */
    assert_int_equal(w.mem_limit, 67108864);
    assert_true(w.cpu_limit == 1.5);
    int64_t next = submit_ok(&w, "\"memory_limit_bytes\":1048576", 1);
    assert_int_equal(job_state(&w, next), JOB_QUEUED);
    assert_non_null(strstr(sched_job(&w.S, next)->reason, "1 that cannot enforce its memory_limit"));
    char buf[300];
    snprintf(buf, sizeof buf,
             "{\"type\":\"exited\",\"job\":%lld,\"attempt\":1,\"rank\":0,\"code\":0,"
             "\"signal\":9,\"reason\":\"the kernel's OOM killer ended 1 of its processes\","
             "\"tail\":[]}", (long long)lim);
    rt_json *m = parse(buf);
    sched_on_exited(&w.S, b, m, w.now);
    rt_json_free(m);
    settle(&w);
    sc_job *j = sched_job(&w.S, lim);
    assert_int_equal(j->state, JOB_FAILED);
    assert_non_null(strstr(j->reason, "killed by signal 9"));
    assert_non_null(strstr(j->reason, ": the kernel's OOM killer ended 1 of its processes"));
    assert_non_null(strstr(j->first_failure, "\"reason\":\"the kernel's OOM killer"));
    finish_job(&w, lim, 0); /* the other rank, stopped by the abort */
    assert_int_equal(job_state(&w, next), JOB_RUNNING);
    assert_string_equal(sched_job(&w.S, next)->ranks[0].agent_key, "B/b");
    world_free(&w);
}

/* Backfill around a head with limits: A does not enforce them, B does.
 * While the head waits for B (held by a job without a deadline), a job
 * without limits starts on A, which the head could never use, though
 * nothing tells when B frees; one that would need B's slot does not. */
static void test_backfill_beside_limits(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 2);
    agent_hello(&w, "B", "b", 2, NULL, "{\"limits\":[\"memory\"]}");
    int64_t hold = submit_ok(&w, "\"memory_limit_bytes\":1048576", 1); /* B, no deadline */
    assert_string_equal(sched_job(&w.S, hold)->ranks[0].agent_key, "B/b");
    int64_t head = submit_ok(&w, "\"memory_limit_bytes\":1048576", 2);
    assert_int_equal(job_state(&w, head), JOB_QUEUED);
    int64_t on_a = submit_ok(&w, NULL, 2);
    assert_int_equal(job_state(&w, on_a), JOB_RUNNING);
    assert_string_equal(sched_job(&w.S, on_a)->ranks[0].agent_key, "A/a");
    assert_string_equal(sched_job(&w.S, on_a)->ranks[1].agent_key, "A/a");
    int64_t on_b = submit_ok(&w, NULL, 1); /* only B's free slot: the head's */
    assert_int_equal(job_state(&w, on_b), JOB_QUEUED);
    finish_job(&w, hold, 0);
    assert_int_equal(job_state(&w, head), JOB_RUNNING);
    assert_int_equal(job_state(&w, on_b), JOB_QUEUED);
    world_free(&w);
}

static void test_queue_timeout_and_drain(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 1);
    agent_up(&w, "B", "b", 1);
    char err[RT_ERR_LEN];
    assert_int_equal(sched_drain(&w.S, "b", true, w.now, err), RT_OK);
    int64_t id = submit_ok(&w, "\"queue_timeout_ms\":5000", 2);
    assert_int_equal(job_state(&w, id), JOB_QUEUED);
    assert_non_null(strstr(sched_job(&w.S, id)->reason, "1 draining"));
    tick(&w, 4);
    assert_int_equal(job_state(&w, id), JOB_QUEUED);
    tick(&w, 2);
    assert_int_equal(job_state(&w, id), JOB_FAILED);
    assert_non_null(strstr(sched_job(&w.S, id)->reason, "could not start within 5 s"));
    assert_int_equal(sched_drain(&w.S, "b", false, w.now, err), RT_OK);
    int64_t id2 = submit_ok(&w, NULL, 2);
    assert_int_equal(job_state(&w, id2), JOB_RUNNING);
    assert_int_equal(sched_drain(&w.S, "nobody", true, w.now, err), RT_ERR_NOTFOUND);
    world_free(&w);
}

static void test_lost_agent_elastic_restart(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 2);
    sc_agent *b = agent_up(&w, "B", "b", 2);
    int64_t id = submit_ok(&w, "\"max_restarts\":1,\"min_np\":2", 4);
    assert_int_equal(job_state(&w, id), JOB_RUNNING);
    sched_agent_down(&w.S, b, "no heartbeat for 10.0 s", w.now);
    settle(&w);
    sc_job *j = sched_job(&w.S, id);
    /* the ranks on A are being stopped: the restart waits for their exits */
    assert_int_equal(j->state, JOB_RESTARTING);
    assert_non_null(strstr(j->last_failure, "agent B/b on host B-host was lost"));
    assert_int_equal(w.sent[RT_MSG_ABORT], 1);
    for (int r = 0; r < 2; r++) {
        char buf[200];
        snprintf(buf, sizeof buf,
                 "{\"type\":\"exited\",\"job\":%lld,\"attempt\":1,\"rank\":%d,\"code\":0,"
                 "\"signal\":15,\"tail\":[]}",
                 (long long)id, r);
        rt_json *m = parse(buf);
        sched_on_exited(&w.S, j->ranks[r].ag, m, w.now);
        rt_json_free(m);
    }
    settle(&w);
    tick(&w, 0.2);
    j = sched_job(&w.S, id);
    assert_int_equal(j->state, JOB_RUNNING); /* elastic: 2 ranks on A */
    assert_int_equal(j->attempt, 2);
    assert_int_equal(j->cur_np, 2);
    assert_int_equal(j->restarts, 1);
    world_free(&w);
}

/* The coordinator restarts: a new scheduler restored from what the first
 * one would have stored (as coord_db.c does). */
static void restore_into(world *to, world *from)
{
    for (sc_agent *a = from->S.agents; a; a = a->next)
        sched_restore_agent(&to->S, a->key, a->host_id, a->name, a->hostname, a->slots,
                            a->draining);
    for (sc_job *j = from->S.jobs; j; j = j->next) {
        if (job_state_terminal(j->state))
            continue;
        char err[RT_ERR_LEN];
        sc_job *r = sched_restore_job(&to->S, j->id, j->spec, j->user, j->state, j->reason,
                                      j->attempt, j->restarts, j->held, j->created, j->started,
                                      j->queued_at, j->attempt_started, to->now, err);
        if (!r)
            fail_msg("job %lld not restored: %s", (long long)j->id, err);
        if (j->state == JOB_STARTING || j->state == JOB_RUNNING)
            for (int k = 0; k < j->cur_np; k++) {
                const sc_rank *s = &j->ranks[k];
                sched_restore_rank(&to->S, r, k, s->agent_key, s->host_id, s->hostname,
                                   s->local_rank, s->local_size, s->cross_rank, s->cross_size,
                                   s->addr, s->pid, rank_state_name(s->state), s->exit_code,
                                   s->exit_signal, s->gpu);
            }
    }
}

static void test_restart_keeps_queue_and_reconciles(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 2);
    agent_up(&w, "B", "b", 2);
    int64_t run = submit_ok(&w, "\"max_restarts\":3", 2);   /* on A */
    int64_t run2 = submit_ok(&w, "\"max_restarts\":3", 2);  /* on B */
    int64_t q1 = submit_ok(&w, "\"queue_timeout_ms\":600000", 4);
    int64_t q2 = submit_ok(&w, "\"priority\":1", 1);
    assert_string_equal(sched_job(&w.S, run)->ranks[0].agent_key, "A/a");
    assert_string_equal(sched_job(&w.S, run2)->ranks[0].agent_key, "B/b");
    int64_t next = w.S.next_id;
    tick(&w, 100); /* the queued job has waited 100 s of its 600 */

    world w2;
    world_init(&w2);
    w2.now = w.now;
    restore_into(&w2, &w);
    assert_int_equal(w2.S.next_id, next);
    /* A reconnects still running job `run`; B reconnects without run2's ranks */
    agent_up_with(&w2, "A", "a", 2,
                  "[{\"job\":1,\"attempt\":1,\"rank\":0,\"pid\":5},"
                  "{\"job\":1,\"attempt\":1,\"rank\":1,\"pid\":6}]");
    assert_int_equal(job_state(&w2, run), JOB_RUNNING);
    assert_false(sched_job(&w2.S, run)->reconciling);
    agent_up(&w2, "B", "b", 2);
    /* its rank is gone: a failure, and the restart goes first in the queue */
    sc_job *j2 = sched_job(&w2.S, run2);
    assert_non_null(strstr(j2->last_failure, "was not running when its agent reconnected"));
    assert_int_equal(j2->restarts, 1); /* the budget survived the restart */
    assert_int_equal(j2->attempt, 2);
    assert_int_equal(j2->state, JOB_RUNNING);
    /* queue order intact: q2 (priority) before q1 */
    assert_int_equal(sched_job(&w2.S, q2)->queue_pos, 1);
    assert_int_equal(sched_job(&w2.S, q1)->queue_pos, 2);
    /* the queue time was restored: 100 s waited before, 450 more is 550 < 600 */
    tick(&w2, 450);
    assert_int_equal(job_state(&w2, q1), JOB_QUEUED);
    tick(&w2, 60);
    assert_int_equal(job_state(&w2, q1), JOB_FAILED);
    world_free(&w);
    world_free(&w2);
}

/* The coordinator died between launching a job's ranks and hearing that
 * they started: the launch may have reached one agent only, whose rank then
 * failed to find its peer.  That attempt uses no restart. */
static void test_restart_mid_launch(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 1);
    agent_up(&w, "B", "b", 1);
    int64_t id = submit_ok(&w, NULL, 2); /* max_restarts 0 */
    sched_job(&w.S, id)->state = JOB_STARTING; /* as stored before "started" came */
    world w2;
    world_init(&w2);
    w2.now = w.now;
    restore_into(&w2, &w);
    assert_true(sched_job(&w2.S, id)->launch_unsure);
    char buf[512], err[RT_ERR_LEN];
    snprintf(buf, sizeof buf,
             "{\"type\":\"hello\",\"token\":\"t\",\"proto\":%d,\"version\":\"x\","
             "\"host_id\":\"A\",\"name\":\"a\",\"hostname\":\"A-host\",\"slots\":1,"
             "\"address\":\"127.0.0.1\",\"caps\":{},\"running\":[],\"exited\":[{\"job\":%lld,"
             "\"attempt\":1,\"rank\":0,\"code\":10,\"signal\":0,\"tail\":[]}]}",
             RT_PROTO_VERSION, (long long)id);
    rt_json *m = parse(buf);
    assert_non_null(sched_agent_up(&w2.S, m, w2.now, err));
    rt_json_free(m);
    settle(&w2);
    sc_job *j = sched_job(&w2.S, id);
    assert_int_equal(j->state, JOB_RESTARTING);
    assert_int_equal(j->restarts, 0);
    assert_non_null(strstr(j->last_failure, "exited with code 10"));
    /* B comes back without its rank: its slot is free, the restart goes on */
    agent_up(&w2, "B", "b", 1);
    tick(&w2, 0.2);
    j = sched_job(&w2.S, id);
    assert_int_equal(j->state, JOB_RUNNING);
    assert_int_equal(j->attempt, 2);
    assert_false(j->launch_unsure);
    /* the new attempt's failure counts as usual: no restarts left */
    finish_job(&w2, id, 3);
    assert_int_equal(job_state(&w2, id), JOB_FAILED);
    world_free(&w);
    world_free(&w2);
}

/* A rank that exited cleanly before the coordinator restart, and that its
 * agent no longer reports (its exit is older than the agent remembers):
 * it stays exited, and the job succeeds with the other rank. */
static void test_restart_keeps_exited_rank(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 2);
    int64_t id = submit_ok(&w, NULL, 2);
    rt_json *m = parse("{\"type\":\"exited\",\"job\":1,\"attempt\":1,\"rank\":0,\"code\":0,"
                       "\"signal\":0,\"tail\":[]}");
    sched_on_exited(&w.S, sched_job(&w.S, id)->ranks[0].ag, m, w.now);
    rt_json_free(m);
    settle(&w);
    world w2;
    world_init(&w2);
    w2.now = w.now;
    restore_into(&w2, &w);
    agent_up_with(&w2, "A", "a", 2, "[{\"job\":1,\"attempt\":1,\"rank\":1,\"pid\":6}]");
    sc_job *j = sched_job(&w2.S, id);
    assert_int_equal(j->state, JOB_RUNNING);
    assert_false(j->reconciling);
    assert_int_equal(sched_free_slots(&w2.S), 1);
    finish_job(&w2, id, 0);
    assert_int_equal(job_state(&w2, id), JOB_SUCCEEDED);
    world_free(&w);
    world_free(&w2);
}

/* An agent speaks only for its own ranks: a "prepared" error from an agent
 * that holds none of the attempt's ranks changes nothing. */
static void test_agent_cannot_fail_others_job(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 1);
    sc_agent *b = agent_up(&w, "B", "b", 1);
    sched_drain(&w.S, "b", true, w.now, NULL);
    const char *spec = "{\"type\":\"exec\",\"np\":1,\"argv\":[\"x\"]}";
    int64_t id = 0;
    char err[RT_ERR_LEN];
    assert_int_equal(sched_submit(&w.S, spec, strlen(spec), "u", w.now, &id, err), RT_OK);
    assert_int_equal(job_state(&w, id), JOB_STARTING); /* its prepare is not answered yet */
    char buf[256];
    snprintf(buf, sizeof buf,
             "{\"type\":\"prepared\",\"job\":%lld,\"attempt\":1,\"ranks\":[],\"error\":\"evil\"}",
             (long long)id);
    rt_json *m = parse(buf);
    sched_on_prepared(&w.S, b, m, w.now);
    rt_json_free(m);
    assert_int_equal(job_state(&w, id), JOB_STARTING);
    settle(&w);
    assert_int_equal(job_state(&w, id), JOB_RUNNING);
    world_free(&w);
}

/* A job whose start message could not be sent (more than a frame holds) is
 * refused at submission, with the reason. */
static void test_oversized_job(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 2);
    size_t big = RT_FRAME_MAX - 2000;
    char *spec = malloc(big + 200);
    int n = snprintf(spec, 200, "{\"type\":\"exec\",\"np\":2,\"argv\":[\"x\"],\"env\":{\"BIG\":\"");
    memset(spec + n, 'a', big);
    strcpy(spec + n + big, "\"}}");
    int64_t id = 0;
    char err[RT_ERR_LEN];
    assert_int_equal(sched_submit(&w.S, spec, strlen(spec), "u", w.now, &id, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "would pass the 1048576-byte limit of a control frame"));
    free(spec);
    world_free(&w);
}

static void test_reconcile_timeout(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 1);
    int64_t id = submit_ok(&w, NULL, 1);
    world w2;
    world_init(&w2);
    w2.now = w.now;
    restore_into(&w2, &w);
    tick(&w2, 30); /* its agent has not reconnected: still waiting */
    assert_int_equal(job_state(&w2, id), JOB_RUNNING);
    assert_true(sched_job(&w2.S, id)->reconciling);
    tick(&w2, 31);
    assert_int_equal(job_state(&w2, id), JOB_FAILED);
    assert_non_null(strstr(sched_job(&w2.S, id)->reason, "did not reconnect within 60 s"));
    world_free(&w);
    world_free(&w2);
}

static void test_deadline_and_failure(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 2);
    int64_t id = submit_ok(&w, "\"deadline_ms\":10000", 2);
    tick(&w, 9);
    assert_int_equal(job_state(&w, id), JOB_RUNNING);
    tick(&w, 2);
    assert_int_equal(job_state(&w, id), JOB_FAILED);
    assert_non_null(strstr(sched_job(&w.S, id)->reason, "deadline of 10 s exceeded"));
    /* its ranks hold their slots until they have exited */
    assert_int_equal(sched_free_slots(&w.S), 0);
    finish_job(&w, id, 0);
    assert_int_equal(sched_free_slots(&w.S), 2);
    int64_t f = submit_ok(&w, NULL, 2);
    char buf[200];
    sc_job *j = sched_job(&w.S, f);
    snprintf(buf, sizeof buf,
             "{\"type\":\"exited\",\"job\":%lld,\"attempt\":1,\"rank\":1,\"code\":3,\"signal\":0,"
             "\"tail\":[\"boom\"]}",
             (long long)f);
    rt_json *m = parse(buf);
    sched_on_exited(&w.S, j->ranks[1].ag, m, w.now);
    rt_json_free(m);
    settle(&w);
    j = sched_job(&w.S, f);
    assert_int_equal(j->state, JOB_FAILED);
    assert_non_null(strstr(j->reason, "rank 1 on host A-host (agent A/a) exited with code 3"));
    assert_non_null(strstr(j->first_failure, "\"boom\""));
    world_free(&w);
}

static void test_two_thousand_agents(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    for (int i = 0; i < 2000; i++) {
        char host[32];
        snprintf(host, sizeof host, "h%04d", i);
        agent_up(&w, host, "a", 1);
    }
    int64_t id = submit_ok(&w, NULL, 1500);
    sc_job *j = sched_job(&w.S, id);
    assert_int_equal(j->state, JOB_RUNNING);
    assert_int_equal(j->cur_np, 1500);
    assert_string_equal(j->ranks[1499].agent_key, "h1499/a");
    assert_int_equal(j->ranks[1499].cross_rank, 1499);
    assert_int_equal(j->ranks[1499].cross_size, 1500);
    assert_int_equal(sched_free_slots(&w.S), 500);
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_placement_horovod),
        cmocka_unit_test(test_step_curve),
        cmocka_unit_test(test_fifo_and_no_starvation),
        cmocka_unit_test(test_backfill_by_deadline),
        cmocka_unit_test(test_backfill_by_room),
        cmocka_unit_test(test_priority_hold_and_refusal),
        cmocka_unit_test(test_job_limits),
        cmocka_unit_test(test_backfill_beside_limits),
        cmocka_unit_test(test_queue_timeout_and_drain),
        cmocka_unit_test(test_lost_agent_elastic_restart),
        cmocka_unit_test(test_restart_keeps_queue_and_reconciles),
        cmocka_unit_test(test_restart_mid_launch),
        cmocka_unit_test(test_restart_keeps_exited_rank),
        cmocka_unit_test(test_agent_cannot_fail_others_job),
        cmocka_unit_test(test_oversized_job),
        cmocka_unit_test(test_reconcile_timeout),
        cmocka_unit_test(test_deadline_and_failure),
        cmocka_unit_test(test_two_thousand_agents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
