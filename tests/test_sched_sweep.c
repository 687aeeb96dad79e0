/* test_sched_sweep.c — a sweep in the scheduler (scheduler_sweep.c), with
 * the fake world of sched_world.c: ASHA's rung decisions against a trace
 * computed by hand — trials reaching rungs out of order, one failing before
 * its rung, completions out of order, the coordinator restarted in the
 * middle — then the last step's results; parallel, hold, cancel, the
 * failure limit, a submission that names a sweep, a stopped trial's epoch
 * lines that come after its stop, and the time budget. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_sweep.h"
#include "sched_world.h"

/* The sweep's file: trials (6 but where said), parallel at once, epochs 9, grace 1,
 * reduction 3: rungs at epochs 1 and 3; val_accuracy, higher better. */
#define SWEEP_INI                                                                   \
    "[job]\nname = sw\ntype = sweep\nnp = 1\n[data]\ndataset = /data/ds\n[model]\n" \
    "architecture = mlp\n[train]\nepochs = 9\nmonitor = val_accuracy\n[output]\n"   \
    "store = /data/store\n[sweep]\ntrials = %d\nparallel = %d\ngrace_epochs = 1\n"  \
    "max_failed_trials = %d\nspace.train.learning_rate = loguniform(1e-4, 1e-2)\n"  \
    "space.model.hidden = choice(64 | 128,64)\n"

/* the sweep file with more [sweep] keys (lines) */
static int64_t submit_sweep_with(world *w, int trials, int parallel, int max_failed,
                                 const char *more)
{
    char ini[2048], body[4096], err[RT_ERR_LEN];
    int n = snprintf(ini, sizeof ini, SWEEP_INI, trials, parallel, max_failed);
    snprintf(ini + n, sizeof ini - (size_t)n, "%s", more);
    rt_jw j;
    rt_jw_init(&j);
    rt_jw_obj(&j);
    rt_jw_kstr(&j, "type", "sweep");
    rt_jw_kstr(&j, "config", ini);
    rt_jw_obj_end(&j);
    char *text = rt_jw_take(&j, NULL);
    snprintf(body, sizeof body, "%s", text);
    free(text);
    int64_t id = 0;
    if (sched_submit(&w->S, body, strlen(body), "tester", NULL, w->now, &id, err) != RT_OK)
        fail_msg("sweep refused: %s", err);
    settle(w);
    return id;
}

static int64_t submit_sweep(world *w, int parallel, int max_failed)
{
    return submit_sweep_with(w, 6, parallel, max_failed, "");
}

static sc_trial *trial(world *w, int64_t sweep, int n)
{
    sc_job *s = sched_job(&w->S, sweep);
    assert_non_null(s);
    assert_non_null(s->sweep);
    return &s->sweep->t[n - 1];
}

/* trial n's epoch line from its rank 0: epoch e, val_accuracy v, more keys */
static void epoch_with(world *w, int64_t sweep, int n, int e, double v, const char *more)
{
    int64_t id = trial(w, sweep, n)->job;
    sc_job *j = sched_job(&w->S, id);
    assert_non_null(j);
    char buf[512];
    snprintf(buf, sizeof buf,
             "{\"type\":\"progress\",\"job\":%lld,\"attempt\":%d,\"rank\":0,\"data\":{\"kind\":"
             "\"epoch\",\"epoch\":%d,\"epochs\":9,\"loss\":0.5,\"val_accuracy\":%.17g%s}}",
             (long long)id, j->attempt, e, v, more);
    rt_json *m = parse(buf);
    sched_on_progress(&w->S, j->ranks[0].ag, m, w->now);
    rt_json_free(m);
    settle(w);
}

static void epoch(world *w, int64_t sweep, int n, int e, double v)
{
    epoch_with(w, sweep, n, e, v, "");
}

/* the ranks of a trial's job exit (a stopped or cancelled one: killed) */
static void exits(world *w, int64_t sweep, int n, int code)
{
    finish_job(w, trial(w, sweep, n)->job, code);
}

static void expect(world *w, int64_t sweep, int n, int state, int rung)
{
    sc_trial *t = trial(w, sweep, n);
    if (t->state != state || t->rung != rung)
        fail_msg("trial %d: %s at rung %d, expected %s at rung %d (%s)", n,
                 trial_state_name(t->state), t->rung, trial_state_name(state), rung, t->reason);
}

/* The coordinator restarts: a new scheduler restored from what the first
 * one stored (every change was an action; coord_db.c writes this). */
static void restore_into(world *to, world *from)
{
    for (sc_agent *a = from->S.agents; a; a = a->next)
        sched_restore_agent(&to->S, a->key, a->host_id, a->name, a->hostname, a->slots, a->draining,
                            a->since);
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
        if (!j->sweep)
            continue;
        for (int64_t i = 0; i < j->sweep->ntrials; i++) {
            const sc_trial *t = &j->sweep->t[i];
            char vals[600];
            size_t n = (size_t)snprintf(vals, sizeof vals, "[");
            for (int k = 0; k < j->sweep->nrungs; k++)
                n += isnan(t->rung_val[k])
                         ? (size_t)snprintf(vals + n, sizeof vals - n, "%snull", k ? "," : "")
                         : (size_t)snprintf(vals + n, sizeof vals - n, "%s%.17g", k ? "," : "",
                                            t->rung_val[k]);
            snprintf(vals + n, sizeof vals - n, "]");
            sched_restore_trial(&to->S, r, t->n, t->job, t->params, trial_state_name(t->state),
                                t->rung, t->epochs, t->best, t->best_epoch, vals, t->reason);
        }
        sched_restore_sweep(&to->S, r, j->sweep->finish_job, j->sweep->best);
    }
}

static void test_asha_trace(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 3);
    int64_t sw = submit_sweep(&w, 3, 3);
    sc_job *s = sched_job(&w.S, sw);
    assert_int_equal(s->state, JOB_RUNNING);
    assert_int_equal(s->sweep->nrungs, 2);
    assert_int_equal(s->sweep->rung_epoch[0], 1);
    assert_int_equal(s->sweep->rung_epoch[1], 3);
    for (int n = 1; n <= 3; n++) { /* parallel 3: three trials, running */
        expect(&w, sw, n, TRIAL_RUNNING, -1);
        assert_int_equal(job_state(&w, trial(&w, sw, n)->job), JOB_RUNNING);
    }
    expect(&w, sw, 4, TRIAL_PENDING, -1);
    /* every trial's job runs as the sweep's uid, and says which trial it is */
    sc_job *t1 = sched_job(&w.S, trial(&w, sw, 1)->job);
    assert_int_equal(t1->sweep_id, sw);
    assert_int_equal(t1->trial, 1);
    assert_string_equal(t1->user, "tester");

    /* rung 0 (epoch 1), out of order: 2 (0.60), 1 (0.70), 3 (0.50) */
    epoch(&w, sw, 2, 1, 0.60); /* n=1: keep 1 -> goes on */
    expect(&w, sw, 2, TRIAL_RUNNING, 0);
    epoch(&w, sw, 1, 1, 0.70); /* n=2: keep max(1, 0) = 1, 0.70 is it */
    expect(&w, sw, 1, TRIAL_RUNNING, 0);
    epoch(&w, sw, 3, 1, 0.50); /* n=3: keep 1 (0.70): stopped */
    expect(&w, sw, 3, TRIAL_STOPPED, 0);
    assert_non_null(strstr(trial(&w, sw, 3)->reason, "not among the best 1 of the 3 trials"));
    assert_int_equal(job_state(&w, trial(&w, sw, 3)->job), JOB_SUCCEEDED);
    expect(&w, sw, 4, TRIAL_PENDING, -1); /* its rank still holds the slot */
    exits(&w, sw, 3, 137);
    expect(&w, sw, 4, TRIAL_RUNNING, -1); /* the slot went to trial 4 */
    /* trial 1 fails between rungs: recorded, the sweep goes on */
    epoch(&w, sw, 1, 2, 0.72);
    exits(&w, sw, 1, 1);
    expect(&w, sw, 1, TRIAL_FAILED, 0);
    expect(&w, sw, 5, TRIAL_RUNNING, -1);

    /* the coordinator restarts here */
    world w2;
    world_init(&w2);
    w2.now = w.now;
    restore_into(&w2, &w);
    char running[512];
    snprintf(running, sizeof running,
             "[{\"job\":%lld,\"attempt\":1,\"rank\":0,\"pid\":5},"
             "{\"job\":%lld,\"attempt\":1,\"rank\":0,\"pid\":6},"
             "{\"job\":%lld,\"attempt\":1,\"rank\":0,\"pid\":7}]",
             (long long)trial(&w, sw, 2)->job, (long long)trial(&w, sw, 4)->job,
             (long long)trial(&w, sw, 5)->job);
    world_free(&w);
    agent_up_with(&w2, "A", "a", 3, running);
    expect(&w2, sw, 1, TRIAL_FAILED, 0);
    expect(&w2, sw, 3, TRIAL_STOPPED, 0);
    expect(&w2, sw, 6, TRIAL_PENDING, -1); /* no trial submitted twice */

    /* trial 4 at rung 0: 0.65 among 0.60, 0.70, 0.50 (kept through the
     * restart, the failed trial's too): n=4, keep 1 (0.70) -> stopped */
    epoch(&w2, sw, 4, 1, 0.65);
    expect(&w2, sw, 4, TRIAL_STOPPED, 0);
    exits(&w2, sw, 4, 137);
    expect(&w2, sw, 6, TRIAL_RUNNING, -1);
    /* rung 1 (epoch 3): trial 2 first (its best 0.75), alone -> on */
    epoch(&w2, sw, 2, 3, 0.75);
    expect(&w2, sw, 2, TRIAL_RUNNING, 1);
    /* trial 5: rung 0 with 0.80 (n=5, keep 1: the best) -> on */
    epoch(&w2, sw, 5, 1, 0.80);
    expect(&w2, sw, 5, TRIAL_RUNNING, 0);
    /* rung 1 with 0.74 at epoch 3: its best so far is 0.80 (epoch 1), and
     * that is what the rung records: n=2, keep 1 (0.80) -> on */
    epoch(&w2, sw, 5, 3, 0.74);
    expect(&w2, sw, 5, TRIAL_RUNNING, 1);
    assert_true(trial(&w2, sw, 5)->rung_val[1] == 0.80);
    /* trial 6: rung 0, 0.62: n=6, keep 2 (0.80, 0.70) -> stopped */
    epoch(&w2, sw, 6, 1, 0.62);
    expect(&w2, sw, 6, TRIAL_STOPPED, 0);
    exits(&w2, sw, 6, 137);
    /* completions out of order: 5 then 2; a repeated epoch line changes nothing */
    epoch(&w2, sw, 5, 9, 0.85);
    epoch(&w2, sw, 5, 9, 0.85);
    exits(&w2, sw, 5, 0);
    expect(&w2, sw, 5, TRIAL_COMPLETED, 1);
    s = sched_job(&w2.S, sw);
    assert_int_equal(s->sweep->finish_job, 0); /* trial 2 still runs */
    epoch(&w2, sw, 2, 9, 0.78);
    exits(&w2, sw, 2, 0);
    expect(&w2, sw, 2, TRIAL_COMPLETED, 1);

    /* every trial ended: the last step, np 1, with the results; best: 5 */
    s = sched_job(&w2.S, sw);
    assert_int_equal(s->sweep->best, 5);
    assert_true(s->sweep->t[4].best == 0.85 && s->sweep->t[4].best_epoch == 9);
    sc_job *fin = sched_job(&w2.S, s->sweep->finish_job);
    assert_non_null(fin);
    assert_int_equal(fin->trial, 0);
    assert_int_equal(fin->np, 1);
    assert_int_equal(fin->state, JOB_RUNNING);
    const rt_json *res = rt_json_get(fin->specj, RT_F_SWEEP_RESULTS);
    int64_t best = 0;
    assert_true(rt_json_get_int(res, "best", &best) && best == 5);
    const char *want[] = {"failed", "completed", "stopped", "stopped", "completed", "stopped"};
    const rt_json *ts = rt_json_get(res, "trials");
    assert_int_equal(rt_json_len(ts), 6);
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(rt_json_str(rt_json_get(rt_json_at(ts, i), "state"), ""), want[i]);
    assert_non_null(strstr(rt_json_str(rt_json_get(res, "best_config"), ""), "trial-5"));
    assert_int_equal(s->state, JOB_RUNNING);
    finish_job(&w2, fin->id, 0);
    assert_int_equal(job_state(&w2, sw), JOB_SUCCEEDED);
    world_free(&w2);
}

static void test_failures_hold_cancel(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 4);
    /* more than max_failed_trials (1) fail: the sweep fails, the rest cancelled */
    int64_t sw = submit_sweep(&w, 3, 1);
    exits(&w, sw, 1, 3);
    assert_int_equal(job_state(&w, sw), JOB_RUNNING);
    exits(&w, sw, 2, 4);
    sc_job *s = sched_job(&w.S, sw);
    assert_int_equal(s->state, JOB_FAILED);
    assert_non_null(strstr(s->reason, "2 trials failed, more than max_failed_trials = 1"));
    assert_non_null(strstr(s->reason, "trial 1 (job"));
    assert_int_equal(job_state(&w, trial(&w, sw, 3)->job), JOB_CANCELLED);
    expect(&w, sw, 3, TRIAL_CANCELLED, -1);
    expect(&w, sw, 5, TRIAL_PENDING, -1);
    exits(&w, sw, 3, 137);

    /* hold: running trials go on, no new one starts until released */
    int64_t sw2 = submit_sweep(&w, 2, 3);
    char err[RT_ERR_LEN];
    assert_int_equal(sched_hold(&w.S, sw2, true, w.now, err), RT_OK);
    settle(&w);
    epoch(&w, sw2, 1, 1, 0.5);
    exits(&w, sw2, 1, 0); /* completed */
    expect(&w, sw2, 3, TRIAL_PENDING, -1);
    assert_int_equal(sched_hold(&w.S, sw2, false, w.now, err), RT_OK);
    settle(&w);
    expect(&w, sw2, 3, TRIAL_RUNNING, -1);
    /* cancel: its trials are cancelled, nothing new starts */
    assert_int_equal(sched_cancel(&w.S, sw2, w.now, err), RT_OK);
    settle(&w);
    assert_int_equal(job_state(&w, sw2), JOB_CANCELLED);
    assert_int_equal(job_state(&w, trial(&w, sw2, 2)->job), JOB_CANCELLED);
    expect(&w, sw2, 3, TRIAL_CANCELLED, -1);
    expect(&w, sw2, 4, TRIAL_PENDING, -1);

    /* a submission may not claim to be a sweep's job */
    const char *forged = "{\"type\":\"exec\",\"np\":1,\"argv\":[\"/bin/true\"],\"sweep\":2,"
                         "\"trial\":1}";
    int64_t id = 0;
    assert_int_equal(sched_submit(&w.S, forged, strlen(forged), "mallory", NULL, w.now, &id, err),
                     RT_ERR_INVALID);
    assert_non_null(strstr(err, "are set by the coordinator for a sweep's own jobs"));
    world_free(&w);
}

/* A trial that trained on after ASHA stopped it (its lines came before the
 * abort reached its ranks, as on a fast data set): its record follows the
 * lines; one whose ranks then all exit with code 0 finished before the
 * abort (its predictions written) and has completed, and can be the best;
 * one killed after its last epoch line (before it predicted) stays
 * stopped; the results wait for the stopped trials' ranks to exit. */
static void test_asha_late_lines(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 6);
    int64_t sw = submit_sweep(&w, 6, 6);
    epoch(&w, sw, 1, 1, 0.70); /* rung 0: on */
    epoch(&w, sw, 2, 1, 0.60); /* n=2, keep 1 (0.70): stopped */
    expect(&w, sw, 2, TRIAL_STOPPED, 0);
    epoch(&w, sw, 3, 1, 0.50); /* n=3: stopped */
    expect(&w, sw, 3, TRIAL_STOPPED, 0);
    /* trial 2's ranks had run on: epochs 2..9 arrive, the last its end */
    for (int e = 2; e <= 8; e++)
        epoch(&w, sw, 2, e, 0.60 + 0.03 * e);
    assert_int_equal(trial(&w, sw, 2)->epochs, 8);
    epoch(&w, sw, 2, 9, 0.80);           /* its best stays 0.84 at epoch 8 */
    expect(&w, sw, 2, TRIAL_STOPPED, 0); /* its last line, not yet its end */
    sc_trial *t2 = trial(&w, sw, 2);
    assert_int_equal(t2->epochs, 9);
    assert_true(fabs(t2->best - 0.84) < 1e-12 && t2->best_epoch == 8);
    epoch(&w, sw, 2, 9, 0.99); /* a repeated line changes nothing */
    assert_true(fabs(t2->best - 0.84) < 1e-12);
    /* trial 3 ran on to its own early stopping at epoch 4, then was killed
     * before it predicted: its record follows, stopped it stays */
    epoch(&w, sw, 3, 2, 0.55);
    epoch_with(&w, sw, 3, 4, 0.52, ",\"stopped\":\"val_accuracy did not improve\"");
    assert_true(trial(&w, sw, 3)->best == 0.55 && trial(&w, sw, 3)->epochs == 4);
    exits(&w, sw, 3, 137);
    expect(&w, sw, 3, TRIAL_STOPPED, 0);
    /* trial 4 is stopped and killed at its rung: stopped it stays */
    epoch(&w, sw, 4, 1, 0.40);
    expect(&w, sw, 4, TRIAL_STOPPED, 0);
    exits(&w, sw, 4, 137);
    epoch(&w, sw, 1, 9, 0.82);
    exits(&w, sw, 1, 0);
    exits(&w, sw, 5, 1);
    exits(&w, sw, 6, 1);
    /* every trial has ended, but trial 2's ranks have not exited yet */
    sc_job *s = sched_job(&w.S, sw);
    assert_int_equal(s->sweep->finish_job, 0);
    exits(&w, sw, 2, 0); /* it finished before the abort reached it */
    expect(&w, sw, 2, TRIAL_COMPLETED, 0);
    assert_non_null(strstr(t2->reason, "finished (9 epochs) before the sweep's stop reached it"));
    assert_int_not_equal(s->sweep->finish_job, 0);
    assert_int_equal(s->sweep->best, 2); /* 0.84 beats trial 1's 0.82 */
    const rt_json *ts = rt_json_get(
        rt_json_get(sched_job(&w.S, s->sweep->finish_job)->specj, RT_F_SWEEP_RESULTS), "trials");
    const char *want[] = {"completed", "completed", "stopped", "stopped", "failed", "failed"};
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(rt_json_str(rt_json_get(rt_json_at(ts, i), "state"), ""), want[i]);
    int64_t epochs = 0;
    assert_true(rt_json_get_int(rt_json_at(ts, 1), "epochs", &epochs) && epochs == 9);
    assert_true(rt_json_get_int(rt_json_at(ts, 2), "epochs", &epochs) && epochs == 4);
    world_free(&w);
}

/* [sweep] time_budget: once spent, the running trials stop (kept: they
 * can be the best), a queued one and the pending ones are cancelled, and
 * the results wait for the stopped trials' ranks. */
static void test_time_budget(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 2);
    int64_t sw = submit_sweep_with(&w, 6, 3, 3, "scheduler = random\ntime_budget = 100s\n");
    expect(&w, sw, 1, TRIAL_RUNNING, -1);
    expect(&w, sw, 3, TRIAL_RUNNING, -1); /* submitted; no slot for it yet */
    assert_int_equal(job_state(&w, trial(&w, sw, 3)->job), JOB_QUEUED);
    epoch(&w, sw, 1, 1, 0.70);
    epoch(&w, sw, 1, 9, 0.72);
    exits(&w, sw, 1, 0); /* completed; trial 3 takes its slot, trial 4 queues */
    expect(&w, sw, 1, TRIAL_COMPLETED, -1);
    assert_int_equal(job_state(&w, trial(&w, sw, 3)->job), JOB_RUNNING);
    epoch(&w, sw, 2, 1, 0.60);
    epoch(&w, sw, 2, 2, 0.75);
    tick(&w, 50); /* 50 s: within the budget */
    expect(&w, sw, 2, TRIAL_RUNNING, -1);
    tick(&w, 60); /* 110 s: spent */
    expect(&w, sw, 2, TRIAL_STOPPED, -1);
    assert_string_equal(trial(&w, sw, 2)->reason,
                        "stopped by the sweep's time budget (1m40s) after 2 epochs");
    assert_int_equal(job_state(&w, trial(&w, sw, 2)->job), JOB_SUCCEEDED);
    expect(&w, sw, 3, TRIAL_STOPPED, -1);   /* running, no epoch yet */
    expect(&w, sw, 4, TRIAL_CANCELLED, -1); /* queued */
    assert_string_equal(trial(&w, sw, 4)->reason,
                        "not started: the sweep's time budget (1m40s) ran out");
    for (int n = 5; n <= 6; n++) {
        expect(&w, sw, n, TRIAL_CANCELLED, -1);
        assert_int_equal(trial(&w, sw, n)->job, 0);
    }
    sc_job *s = sched_job(&w.S, sw);
    assert_int_equal(s->sweep->finish_job, 0); /* trials 2 and 3 still have ranks */
    assert_non_null(strstr(s->reason, "its time budget ran out"));
    exits(&w, sw, 2, 137);
    exits(&w, sw, 3, 137);
    assert_int_not_equal(s->sweep->finish_job, 0);
    assert_int_equal(s->sweep->best, 2); /* 0.75, stopped, beats trial 1's 0.72 */
    const rt_json *ts = rt_json_get(
        rt_json_get(sched_job(&w.S, s->sweep->finish_job)->specj, RT_F_SWEEP_RESULTS), "trials");
    assert_string_equal(rt_json_str(rt_json_get(rt_json_at(ts, 1), "stopped_by"), ""),
                        "time budget");
    assert_null(rt_json_get(rt_json_at(ts, 0), "stopped_by")); /* completed */
    world_free(&w);
}

/* search = tpe: once 10 trials have ended, the next one's values come from
 * them (not random search's for that trial), recorded with the trial as
 * any trial's are. */
static void test_tpe_draws(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    agent_up(&w, "A", "a", 1);
    int64_t sw = submit_sweep_with(&w, 12, 1, 3, "scheduler = random\nsearch = tpe\n");
    sc_job *s = sched_job(&w.S, sw);
    char want[2][RT_SWEEP_VALUE_MAX];
    for (int n = 1; n <= 10; n++) { /* the startup: random search's values */
        rt_sweep_sample(&s->cfg, s->sweep->space, n - 1, want);
        const char *p = trial(&w, sw, n)->params;
        assert_non_null(strstr(p, want[0]));
        const double lr = atof(strstr(p, "learning_rate\":\"") + 16);
        epoch(&w, sw, n, 9, 1 - fabs(log10(lr) + 3)); /* best at 1e-3 */
        exits(&w, sw, n, 0);
    }
    rt_sweep_sample(&s->cfg, s->sweep->space, 10, want);
    const char *p = trial(&w, sw, 11)->params;
    assert_non_null(p);
    assert_null(strstr(p, want[0])); /* drawn by TPE, not random search's value */
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_asha_trace),      cmocka_unit_test(test_failures_hold_cancel),
        cmocka_unit_test(test_asha_late_lines), cmocka_unit_test(test_time_budget),
        cmocka_unit_test(test_tpe_draws),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
