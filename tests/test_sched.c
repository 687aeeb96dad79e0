/* test_sched.c — the scheduler in-process (coordinator/scheduler.h): events in,
 * actions out, time passed in, agents played by a fake (sched_world.c).
 * Placement and the queue: Horovod's placement, the step curve, gang start,
 * FIFO with priority, no starvation of a large job, backfill that cannot
 * delay the head (by deadline, by room, beside a head with limits),
 * hold/release, refusal of a job larger than the cluster, job limits
 * (memory_limit, cpu_limit) and queue timeouts.  Restarts and failures are
 * in test_sched_restart.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sched_world.h"

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

/* Hosts that are namespaces of one machine (one kernel boot id) share its
 * CPUs: each rank learns how many of the job's ranks are on its machine,
 * whatever host they are on; an agent that says no machine is its own. */
static void test_machine_ranks(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_on_machine(&w, "A", "a", 2, "boot-1");
    agent_on_machine(&w, "B", "b", 1, "boot-1");
    agent_on_machine(&w, "C", "c", 2, "boot-2");
    agent_up(&w, "D", "d", 1);
    int64_t id = submit_ok(&w, NULL, 6);
    sc_job *j = sched_job(&w.S, id);
    const struct {
        const char *host;
        int ls, mr;
    } want[6] = {{"A", 2, 3}, {"A", 2, 3}, {"B", 1, 3}, {"C", 2, 2}, {"C", 2, 2}, {"D", 1, 1}};
    for (int r = 0; r < 6; r++) {
        assert_string_equal(j->ranks[r].host_id, want[r].host);
        assert_int_equal(j->ranks[r].local_size, want[r].ls);
        assert_int_equal(j->ranks[r].machine_ranks, want[r].mr);
    }
    finish_job(&w, id, 0);
    world_free(&w);
}

/* A submission is its job file's text, parsed by the job schema: np, the
 * queue's fields and the ring settings of the start message all come from
 * it (the JSON fields an API client may give instead go through the same
 * schema, errors naming the field and its key). */
static void test_submission_config(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 4);
    char err[RT_ERR_LEN];
    int64_t id = 0;
    const char *body = "{\"type\":\"exec\",\"argv\":[\"x\"],\"config\":\"[job]\\nname = cfg\\n"
                       "type = exec\\nnp = 3\\npriority = 7\\ncommand = x\\ntransport = tcp\\n"
                       "sockets = 3\\ncollective_timeout = 90s\\nencrypt = true\\n\"}";
    assert_int_equal(sched_submit(&w.S, body, strlen(body), "u", NULL, w.now, &id, err), RT_OK);
    settle(&w);
    const sc_job *j = sched_job(&w.S, id);
    assert_string_equal(j->name, "cfg");
    assert_true(j->np == 3 && j->priority == 7 && j->type == RT_JOB_EXEC);
    assert_string_equal(w.transport, "tcp");
    assert_int_equal(w.sockets, 3);
    assert_int_equal(w.collective_timeout_ms, 90000);
    assert_true(w.encrypt);
    finish_job(&w, id, 0);
    const struct {
        const char *body, *says;
    } bad[] = {
        {"{\"type\":\"train\",\"config\":\"[job]\\ntype = exec\\ncommand = x\\n\"}",
         "\"type\" is train but its config says type = exec"},
        {"{\"type\":\"exec\",\"argv\":[\"x\"],\"config\":\"[job]\\ntype = exec\\nnp = 0\\n"
         "command = x\\n\"}",
         "np"},
        {"{\"type\":\"exec\",\"argv\":[\"x\"],\"np\":70000}", "\"np\" (job.np)"},
        {"{\"type\":\"exec\",\"argv\":[\"x\"],\"np\":2,\"transport\":\"carrier-pigeon\"}",
         "\"transport\" (job.transport)"},
        {"{\"type\":\"exec\",\"argv\":[\"x\"],\"np\":2,\"min_np\":3}",
         "min_np (3) must be at most np"},
        {"{\"type\":\"exec\",\"argv\":[\"x\"]}", "\"np\" must be given"},
        {"{\"type\":\"exec\",\"argv\":[\"x\"],\"np\":2,\"encrypt\":1}",
         "\"encrypt\" must be true or false"},
    };
    for (size_t i = 0; i < RT_ARRAY_LEN(bad); i++) {
        assert_int_equal(
            sched_submit(&w.S, bad[i].body, strlen(bad[i].body), "u", NULL, w.now, &id, err),
            RT_ERR_INVALID);
        if (!strstr(err, bad[i].says))
            fail_msg("%s: said '%s', not '%s'", bad[i].body, err, bad[i].says);
    }
    world_free(&w);
}

/* Rank 0's step reports make the current epoch's curve: bounded however
 * many come (thinned, steps still increasing, the last one near the end),
 * started again by a new epoch; other ranks' reports are not in it. */
static void progress(world *w, sc_job *j, int rank, int epoch, int step, double loss)
{
    char buf[256];
    snprintf(buf, sizeof buf,
             "{\"type\":\"progress\",\"job\":%lld,\"attempt\":%d,\"rank\":%d,\"data\":"
             "{\"kind\":\"step\",\"epoch\":%d,\"step\":%d,\"loss\":%g,\"steps_per_s\":5}}",
             (long long)j->id, (int)j->attempt, rank, epoch, step, loss);
    rt_json *m = parse(buf);
    sched_on_progress(&w->S, j->ranks[rank].ag, m, w->now);
    rt_json_free(m);
}

/* Rank rank's warning line: {"kind": "warning", "text": text} */
static void warning(world *w, sc_job *j, int rank, const char *text)
{
    rt_jw jw;
    rt_jw_init(&jw);
    rt_jw_obj(&jw);
    rt_jw_kstr(&jw, "type", "progress");
    rt_jw_kint(&jw, "job", j->id);
    rt_jw_kint(&jw, "attempt", j->attempt);
    rt_jw_kint(&jw, "rank", rank);
    rt_jw_key(&jw, "data");
    rt_jw_obj(&jw);
    rt_jw_kstr(&jw, "kind", "warning");
    rt_jw_kstr(&jw, "text", text);
    rt_jw_obj_end(&jw);
    rt_jw_obj_end(&jw);
    char *buf = rt_jw_take(&jw, NULL);
    rt_json *m = parse(buf);
    sched_on_progress(&w->S, j->ranks[rank].ag, m, w->now);
    rt_json_free(m);
    free(buf);
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
        assert_true(s->p[i].step > s->p[i - 1].step && s->p[i].loss < s->p[i - 1].loss);
    assert_true(s->p[s->n - 1].step > 5000 - 5000 / (SC_STEP_POINTS / 4));
    progress(&w, j, 0, 2, 1, 0.5); /* a new epoch starts the curve again */
    assert_int_equal(s->epoch, 2);
    assert_int_equal(s->n, 1);
    assert_int_equal(s->p[0].step, 1);
    finish_job(&w, id, 0);
    world_free(&w);
}

/* A rank's warning line is an event of the job ("rank R: TEXT", control
 * characters as blanks), not its progress; past SC_WARNINGS_MAX an attempt
 * says once that the rest are in the logs. */
static void test_warnings_are_events(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a1", 2);
    int64_t id = submit_ok(&w, NULL, 2);
    sc_job *j = sched_job(&w.S, id);
    progress(&w, j, 0, 1, 1, 0.5);
    char *before = strdup(j->progress);
    sched_actions_clear(&w.S);
    for (int k = 0; k < SC_WARNINGS_MAX + 5; k++) {
        char text[64];
        snprintf(text, sizeof text, "lag %d\nsecond line", k);
        warning(&w, j, k % 2, text);
    }
    int n, said = 0, more = 0;
    const sc_action *a = sched_actions(&w.S, &n);
    for (int i = 0; i < n; i++) {
        if (a[i].kind != SC_EVENT || strcmp(a[i].tag, "warning") != 0)
            continue;
        char want[64];
        snprintf(want, sizeof want, "rank %d: lag %d second line", said % 2, said);
        if (said < SC_WARNINGS_MAX)
            assert_string_equal(a[i].text, want);
        else
            more +=
                strstr(a[i].text, "more warnings than 8: the rest are in the ranks' logs") != NULL;
        said++;
    }
    assert_int_equal(said, SC_WARNINGS_MAX + 1);
    assert_int_equal(more, 1);
    assert_string_equal(j->progress, before); /* not progress */
    free(before);
    /* (the count reset, as sc_start_attempt does) a long text is cut before
     * the character that does not fit, not inside it (the events' JSON
     * stays UTF-8) */
    j->warnings = 0;
    sched_actions_clear(&w.S);
    char text[1300] = "x";
    for (int k = 0; k < 600; k++) /* 1 + 1,200 bytes: é is 2 */
        strcat(text, "\xc3\xa9");
    warning(&w, j, 0, text);
    a = sched_actions(&w.S, &n);
    const char *cut = NULL;
    for (int i = 0; i < n; i++)
        if (a[i].kind == SC_EVENT && !strcmp(a[i].tag, "warning"))
            cut = a[i].text;
    assert_non_null(cut);
    assert_int_equal(strlen(cut), strlen("rank 0: ") + SC_WARNING_TEXT_MAX - 1); /* x + 499 é */
    rt_json *ok = NULL;
    char js[1200], perr[RT_ERR_LEN];
    snprintf(js, sizeof js, "\"%s\"", cut);
    assert_int_equal(rt_json_parse(js, strlen(js), &ok, perr), RT_OK); /* valid UTF-8 */
    rt_json_free(ok);
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
    assert_int_equal(sched_submit(&w.S, big, strlen(big), "u", NULL, w.now, &id, err), RT_ERR_INVALID);
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

/* Issue 42: one user's waiting jobs are bounded (max_queued_per_user),
 * another user's are not affected; a started job frees a place. */
static void test_queued_per_user(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    w.S.cfg.max_queued_per_user = 2;
    agent_up(&w, "A", "a", 1);
    int64_t run = submit_ok(&w, NULL, 1); /* "tester"'s, running: not waiting */
    submit_ok(&w, NULL, 1);
    submit_ok(&w, NULL, 1);
    char err[RT_ERR_LEN];
    int64_t id = 0;
    const char *one = "{\"type\":\"exec\",\"np\":1,\"argv\":[\"x\"]}";
    assert_int_equal(sched_submit(&w.S, one, strlen(one), "tester", NULL, w.now, &id, err),
                     RT_ERR_BUSY);
    assert_non_null(
        strstr(err, "tester already has 2 jobs waiting in the queue ([jobs] max_queued_per_user)"));
    assert_int_equal(sched_submit(&w.S, one, strlen(one), "v", NULL, w.now, &id, err), RT_OK);
    finish_job(&w, run, 0); /* the next of "tester" starts: a place frees */
    assert_int_equal(sched_submit(&w.S, one, strlen(one), "tester", NULL, w.now, &id, err), RT_OK);
    world_free(&w);
}

/* Issue 28.9: an agent's capabilities are shown by the API and the
 * dashboard; what the coordinator keeps is an object of bounded scalars and
 * string arrays, whatever the agent sent (the dashboard escapes the rest). */
static void test_agent_caps_cleaned(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    char big[600], caps[1400];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    snprintf(caps, sizeof caps,
             "{\"cores\":{\"a\":\"<img src=x>\"},\"memory_bytes\":25276510208,\"cuda\":true,"
             "\"cpu\":\"<b>EPYC</b>\",\"isa\":\"%s\",\"gpus\":-5,\"limits\":[\"memory\",{}],"
             "\"gpu_names\":[\"H100\"],\"load\":0.25,\"nested\":[[1]]}", big);
    sc_agent *a = agent_hello(&w, "A", "a", 2, NULL, caps);
    rt_json *c = parse(a->caps);
    assert_int_equal(rt_json_type_of(c), RT_JSON_OBJECT);
    assert_null(rt_json_get(c, "cores"));             /* an object: dropped */
    assert_null(rt_json_get(c, "isa"));               /* 599 bytes: dropped */
    assert_null(rt_json_get(c, "limits"));            /* an array with an object */
    assert_null(rt_json_get(c, "nested"));
    assert_string_equal(rt_json_get_str(c, "cpu"), "<b>EPYC</b>"); /* a string: escaped when shown */
    int64_t mem = 0;
    assert_true(rt_json_get_int(c, "memory_bytes", &mem) && mem == 25276510208LL);
    assert_true(rt_json_bool(rt_json_get(c, "cuda"), false));
    assert_true(rt_json_num(rt_json_get(c, "load"), 0) == 0.25);
    assert_string_equal(rt_json_str(rt_json_at(rt_json_get(c, "gpu_names"), 0), ""), "H100");
    assert_int_equal(a->gpus, 0); /* a negative count is none */
    assert_false(a->lim_mem);     /* the scheduler uses what is shown: no limits */
    rt_json_free(c);
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
        assert_int_equal(sched_submit(&w.S, spec, strlen(spec), "u", NULL, w.now, &id, err),
                         RT_ERR_INVALID);
        assert_non_null(strstr(err, i < 2 ? "memory_limit_bytes" : "cpu_limit"));
    }
    const char *three = "{\"type\":\"exec\",\"np\":3,\"argv\":[\"x\"],\"cpu_limit\":1}";
    assert_int_equal(sched_submit(&w.S, three, strlen(three), "u", NULL, w.now, &id, err), RT_ERR_INVALID);
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

static int64_t submit_train(world *w, int np)
{
    char body[512], err[RT_ERR_LEN];
    snprintf(body, sizeof body,
             "{\"type\":\"train\",\"config\":\"[job]\\nname = t\\ntype = train\\nnp = %d\\n"
             "[data]\\ndataset = /data/ds\\n[output]\\nstore = /data/store\\n\"}",
             np);
    int64_t id = 0;
    if (sched_submit(&w->S, body, strlen(body), "tester", NULL, w->now, &id, err) != RT_OK)
        fail_msg("refused: %s", err);
    settle(w);
    assert_int_equal(job_state(w, id), JOB_RUNNING);
    return id;
}

/* A training rank that exits RT_EXIT_PEER (its collective lost a peer)
 * reports the consequence of another rank's failure, whose exit races it:
 * the job waits for that failure and names it; with none (every rank
 * exited, or SC_PEER_GRACE_S passed) the held one is the job's.  An exec
 * job's code 75 is its own. */
static void test_peer_exit_waits_for_cause(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 3);
    /* the cause follows the consequence */
    int64_t id = submit_train(&w, 3);
    exit_rank(&w, id, 0, RT_EXIT_PEER);
    assert_int_equal(job_state(&w, id), JOB_RUNNING);
    exit_rank(&w, id, 2, 1);
    sc_job *j = sched_job(&w.S, id);
    assert_int_equal(j->state, JOB_FAILED);
    assert_non_null(strstr(j->reason, "rank 2 on host A-host"));
    assert_non_null(strstr(j->first_failure, "\"rank\":2"));
    finish_job(&w, id, 0); /* rank 1, stopped by the abort */
    /* no other failure: every rank exited */
    id = submit_train(&w, 3);
    exit_rank(&w, id, 1, RT_EXIT_PEER);
    exit_rank(&w, id, 0, RT_EXIT_PEER);
    assert_int_equal(job_state(&w, id), JOB_RUNNING);
    exit_rank(&w, id, 2, 0);
    j = sched_job(&w.S, id);
    assert_int_equal(j->state, JOB_FAILED);
    assert_non_null(strstr(j->reason, "rank 1 on host A-host (agent A/a) exited with code 75 (a "
                                      "collective with its peers failed)"));
    /* none in time (a peer hangs): the grace passes */
    id = submit_train(&w, 3);
    exit_rank(&w, id, 2, RT_EXIT_PEER);
    tick(&w, SC_PEER_GRACE_S - 1);
    assert_int_equal(job_state(&w, id), JOB_RUNNING);
    tick(&w, 2);
    j = sched_job(&w.S, id);
    assert_int_equal(j->state, JOB_FAILED);
    assert_non_null(strstr(j->reason, "rank 2 on host A-host"));
    assert_true(w.sent[RT_MSG_ABORT] > 0);
    finish_job(&w, id, 0);
    /* a new attempt starts with nothing held: a restart after a held failure */
    char body[512], err[RT_ERR_LEN];
    snprintf(
        body, sizeof body,
        "{\"type\":\"train\",\"config\":\"[job]\\nname = t\\ntype = train\\nnp = 2\\n"
        "max_restarts = 1\\n[data]\\ndataset = /data/ds\\n[output]\\nstore = /data/store\\n\"}");
    assert_int_equal(sched_submit(&w.S, body, strlen(body), "tester", NULL, w.now, &id, err),
                     RT_OK);
    settle(&w);
    exit_rank(&w, id, 0, RT_EXIT_PEER);
    exit_rank(&w, id, 1, 1);
    assert_int_equal(sched_job(&w.S, id)->attempt, 1); /* restarting: waits to start again */
    tick(&w, 1);
    j = sched_job(&w.S, id);
    assert_int_equal(j->attempt, 2);
    assert_null(j->peer_failure);
    finish_job(&w, id, 0);
    assert_int_equal(job_state(&w, id), JOB_SUCCEEDED);
    /* an exec job's 75 is its own */
    id = submit_ok(&w, NULL, 2);
    exit_rank(&w, id, 0, RT_EXIT_PEER);
    assert_int_equal(job_state(&w, id), JOB_FAILED);
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_placement_horovod),
        cmocka_unit_test(test_machine_ranks),
        cmocka_unit_test(test_submission_config),
        cmocka_unit_test(test_step_curve),
        cmocka_unit_test(test_warnings_are_events),
        cmocka_unit_test(test_fifo_and_no_starvation),
        cmocka_unit_test(test_backfill_by_deadline),
        cmocka_unit_test(test_backfill_by_room),
        cmocka_unit_test(test_priority_hold_and_refusal),
        cmocka_unit_test(test_queued_per_user),
        cmocka_unit_test(test_job_limits),
        cmocka_unit_test(test_agent_caps_cleaned),
        cmocka_unit_test(test_backfill_beside_limits),
        cmocka_unit_test(test_queue_timeout_and_drain),
        cmocka_unit_test(test_peer_exit_waits_for_cause),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
