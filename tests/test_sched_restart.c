/* test_sched_restart.c — the scheduler in-process (see test_sched.c) when
 * things fail: elastic restarts after a lost agent, restoring after a
 * coordinator restart (queue order intact, running jobs reconciled with what
 * agents report, a launch cut short), an agent that may not fail another's
 * job, oversized start frames, reconcile timeouts, deadlines, and 2,000
 * agents. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sched_world.h"

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
                            a->draining, a->since);
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
    assert_int_equal(sched_submit(&w.S, spec, strlen(spec), "u", NULL, w.now, &id, err), RT_OK);
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
    assert_int_equal(sched_submit(&w.S, spec, strlen(spec), "u", NULL, w.now, &id, err), RT_ERR_INVALID);
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
