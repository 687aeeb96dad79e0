/* scheduler_sweep.c — sweeps (scheduler.h): the trials submitted at most
 * `parallel` at a time, ASHA's rungs, failures counted, the last step that
 * writes the results, cancel and hold passed on.  Pure like the rest of the
 * scheduler: events in, actions out.
 *
 * ASHA (Li et al. 2018, "A System for Massively Parallel Hyperparameter
 * Tuning", the asynchronous stopping rule): rung k is at epoch
 * grace_epochs * reduction^k (below [train] epochs).  A trial whose epoch
 * line reaches a rung records there its best monitor value so far; of the n
 * values recorded at that rung (its own included, in arrival order) the
 * best max(1, floor(n / reduction)) go on, and a trial not among them stops
 * at once, its checkpoints kept.  The first trial at a rung always goes on;
 * a trial is judged once per rung, against the trials that reached it
 * before it (a later, better one does not stop it after the fact). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_json.h"
#include "rt_sweep.h"
#include "scheduler_impl.h"

_Static_assert(RT_SWEEP_VALUE_MAX == 256, "sc_trial's vals are RT_SWEEP_VALUE_MAX wide");

static const char *const TRIAL_STATES[] = {"pending",   "running", "stopped",
                                           "completed", "failed",  "cancelled"};

const char *trial_state_name(int s)
{
    return s >= 0 && s <= TRIAL_CANCELLED ? TRIAL_STATES[s] : "?";
}

int trial_state_parse(const char *name)
{
    for (int s = 0; name && s <= TRIAL_CANCELLED; s++)
        if (!strcmp(name, TRIAL_STATES[s]))
            return s;
    return -1;
}

static bool trial_done(int s) { return s >= TRIAL_STOPPED; }

/* A stopped trial's reason when the time budget stopped it (the reason is
 * what the coordinator keeps of a trial across a restart). */
static bool by_budget(const sc_trial *t)
{
    return !strncmp(t->reason, RT_SWEEP_BUDGET_STOP, sizeof RT_SWEEP_BUDGET_STOP - 1);
}

void sc_sweep_free(sc_sweep *w)
{
    if (!w)
        return;
    if (w->space) {
        rt_sweep_space_free(w->space);
        free(w->space);
    }
    for (int64_t i = 0; w->t && i < w->ntrials; i++) {
        free(w->t[i].params);
        free(w->t[i].vals);
    }
    free(w->t);
    free(w);
}

rt_status sc_sweep_init(sc_job *j, char *err)
{
    sc_sweep *w = calloc(1, sizeof *w);
    rt_sweep_space *sp = calloc(1, sizeof *sp);
    if (!w || !sp) {
        free(w);
        free(sp);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    w->space = sp;
    rt_cfg_errors e = {0};
    rt_cfg_origin o = {"the sweep", NULL};
    rt_status st = rt_sweep_space_parse(&j->cfg, &o, sp, &e);
    if (st != RT_OK) {
        char all[RT_ERR_LEN];
        rt_cfg_errors_join(&e, all, sizeof all);
        rt_err(err, st, "%s", all);
        free(sp);
        w->space = NULL;
    }
    rt_cfg_errors_free(&e);
    const rt_job_cfg *c = &j->cfg;
    w->ntrials = st == RT_OK ? rt_sweep_trials(c, sp) : 0;
    if (st == RT_OK && (w->ntrials < 1 || w->ntrials > 2000))
        st = rt_err(err, RT_ERR_INVALID, "a sweep runs 1 to 2000 trials, not %lld",
                    (long long)w->ntrials);
    if (st == RT_OK && !(w->t = calloc((size_t)w->ntrials, sizeof *w->t)))
        st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    if (st != RT_OK) {
        sc_sweep_free(w);
        return st;
    }
    w->parallel = (int)c->sweep_parallel;
    w->max_failed = (int)c->max_failed_trials;
    w->scheduler = c->sweep_scheduler;
    w->reduction = (int)c->reduction;
    w->maximize = rt_job_monitor_max(c);
    snprintf(w->monitor, sizeof w->monitor, "%s", c->monitor ? c->monitor : RT_P_VAL_LOSS);
    w->nrungs = w->scheduler == RT_SWEEP_ASHA ? rt_sweep_rungs(c, w->rung_epoch, SC_MAX_RUNGS) : 0;
    w->budget_us = c->time_budget_us;
    for (int64_t i = 0; i < w->ntrials; i++) {
        sc_trial *t = &w->t[i];
        t->n = (int)i + 1;
        t->rung = -1;
        t->best = NAN;
        for (int k = 0; k < SC_MAX_RUNGS; k++)
            t->rung_val[k] = NAN;
    }
    j->sweep = w;
    return RT_OK;
}

void sc_trial_saved(sched *S, const sc_job *sweep, int n)
{
    sc_emit(S, SC_SAVE_TRIAL, sweep->id, NULL, NULL, NULL);
    S->out[S->nout - 1].rank = n;
}

static bool better(const sc_sweep *w, double a, double b)
{
    return isnan(b) || (w->maximize ? a > b : a < b);
}

/* ---- submitting ---------------------------------------------------------------- */

/* The trial's values as a JSON object and its job's body. */
/* The sweep's environment (its submitter's S3 credentials: docs/storage.md)
 * goes with each of its jobs: the trials and the last step. */
static void sweep_env(rt_jw *b, const sc_job *sw)
{
    const rt_json *env = rt_json_get(sw->specj, RT_F_ENV);
    if (!env)
        return;
    rt_jw_key(b, RT_F_ENV);
    rt_jw_value(b, env);
}

/* A trial's values by dimension from its params (kept in t->vals); NULL
 * without params, or out of memory. */
static char (*params_vals(const rt_sweep_space *sp, sc_trial *t))[RT_SWEEP_VALUE_MAX]
{
    if (t->vals || !t->params)
        return t->vals;
    char(*vals)[RT_SWEEP_VALUE_MAX] = calloc((size_t)(sp->n ? sp->n : 1), sizeof *vals);
    rt_json *p = NULL;
    char perr[RT_ERR_LEN];
    if (vals && rt_json_parse(t->params, strlen(t->params), &p, perr) == RT_OK)
        for (int i = 0; i < sp->n; i++)
            snprintf(vals[i], sizeof vals[i], "%s",
                     rt_json_get_str(p, sp->d[i].key) ? rt_json_get_str(p, sp->d[i].key) : "");
    rt_json_free(p);
    if (vals) /* a key of two architectures is the drawn one's */
        rt_sweep_blank_inactive(sp, vals);
    return t->vals = vals;
}

/* Trial t's values: drawn as [sweep] search says — random, or TPE from the
 * trials that have ended with a value. */
static void draw(sc_sweep *w, const rt_job_cfg *c, const sc_trial *t,
                 char (*vals)[RT_SWEEP_VALUE_MAX])
{
    const rt_sweep_space *sp = w->space;
    rt_sweep_obs *obs =
        c->sweep_search == RT_SEARCH_TPE ? calloc((size_t)w->ntrials, sizeof *obs) : NULL;
    int n = 0;
    for (int64_t i = 0; obs && i < w->ntrials; i++) {
        sc_trial *o = &w->t[i];
        if ((o->state == TRIAL_COMPLETED || o->state == TRIAL_STOPPED) && isfinite(o->best) &&
            params_vals(sp, o))
            obs[n++] = (rt_sweep_obs){o->vals, o->best, o->state == TRIAL_COMPLETED, o->epochs};
    }
    if (obs)
        rt_sweep_sample_tpe(c, sp, t->n - 1, obs, n, vals);
    else
        rt_sweep_sample(c, sp, t->n - 1, vals);
    free(obs);
}

static rt_status trial_body(const sc_job *sw, sc_trial *t, char **body, char *err)
{
    sc_sweep *w = sw->sweep;
    const rt_sweep_space *sp = w->space;
    char(*vals)[RT_SWEEP_VALUE_MAX] = calloc((size_t)(sp->n ? sp->n : 1), sizeof *vals);
    if (!vals)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    if (t->params && params_vals(sp, t))
        memcpy(vals, t->vals, (size_t)sp->n * sizeof *vals); /* drawn before */
    else
        draw(w, &sw->cfg, t, vals);
    rt_cfg_errors e = {0};
    char *text = rt_sweep_trial_text(&sw->cfg, sp, vals, t->n - 1, &e);
    rt_status st = RT_OK;
    if (!text) {
        char all[RT_ERR_LEN];
        rt_cfg_errors_join(&e, all, sizeof all);
        st = rt_err(err, RT_ERR_INVALID, "%s", all);
    }
    rt_cfg_errors_free(&e);
    if (st == RT_OK && !t->params) {
        rt_jw p;
        rt_jw_init(&p);
        rt_jw_obj(&p);
        for (int i = 0; i < sp->n; i++)
            if (vals[i][0]) /* not a key of another architecture's */
                rt_jw_kstr(&p, sp->d[i].key, vals[i]);
        rt_jw_obj_end(&p);
        t->params = rt_jw_take(&p, NULL);
    }
    free(vals);
    if (st != RT_OK)
        return st;
    rt_jw b;
    rt_jw_init(&b);
    rt_jw_obj(&b);
    rt_jw_kstr(&b, RT_F_TYPE, "train");
    rt_jw_kstr(&b, RT_F_CONFIG, text);
    rt_jw_kint(&b, RT_F_SWEEP, sw->id);
    rt_jw_kint(&b, RT_F_TRIAL, t->n);
    sweep_env(&b, sw);
    rt_jw_obj_end(&b);
    free(text);
    *body = rt_jw_take(&b, NULL);
    return *body ? RT_OK : rt_err(err, RT_ERR_NOMEM, "out of memory");
}

/* The last step: the sweep's own file (np 1) and every trial's record. */
static rt_status finish_body(const sc_job *sw, char **body, char *err)
{
    const sc_sweep *w = sw->sweep;
    rt_job_cfg c = sw->cfg; /* shallow: printed only */
    c.np = 1;
    c.min_np = 0;
    char name[160];
    snprintf(name, sizeof name, "%s-results", sw->name);
    c.name = name;
    char *text = rt_cfg_print_string(&rt_job_schema, &c);
    char *best_text = NULL;
    if (w->best > 0) { /* best.ini: the winner's file, trained again into best/retrain */
        sc_trial *t = &w->t[w->best - 1];
        rt_sweep_space *sp = w->space;
        char(*vals)[RT_SWEEP_VALUE_MAX] = params_vals(sp, t);
        rt_cfg_errors e = {0};
        best_text = vals ? rt_sweep_trial_text(&sw->cfg, sp, vals, t->n - 1, &e) : NULL;
        rt_cfg_errors_free(&e);
    }
    rt_jw b;
    rt_jw_init(&b);
    rt_jw_obj(&b);
    rt_jw_kstr(&b, RT_F_TYPE, "train");
    rt_jw_kstr(&b, RT_F_CONFIG, text ? text : "");
    rt_jw_kint(&b, RT_F_SWEEP, sw->id);
    rt_jw_kint(&b, RT_F_TRIAL, 0);
    sweep_env(&b, sw);
    rt_jw_key(&b, RT_F_SWEEP_RESULTS);
    rt_jw_obj(&b);
    rt_jw_kint(&b, "sweep", sw->id);
    rt_jw_kstr(&b, "monitor", w->monitor);
    rt_jw_kstr(&b, "mode", w->maximize ? "max" : "min");
    rt_jw_kint(&b, "best", w->best);
    if (best_text)
        rt_jw_kstr(&b, "best_config", best_text);
    rt_jw_key(&b, "trials");
    rt_jw_arr(&b);
    for (int64_t i = 0; i < w->ntrials; i++) {
        const sc_trial *t = &w->t[i];
        rt_jw_obj(&b);
        rt_jw_kint(&b, "trial", t->n);
        rt_jw_kint(&b, "job", t->job);
        rt_jw_key(&b, "params");
        rt_jw_raw(&b, t->params ? t->params : "{}");
        rt_jw_kstr(&b, "state", trial_state_name(t->state));
        rt_jw_kint(&b, "rung", t->rung);
        rt_jw_kint(&b, "epochs", t->epochs);
        rt_jw_knum(&b, "best", t->best);
        rt_jw_kint(&b, "best_epoch", t->best_epoch);
        if (t->reason[0])
            rt_jw_kstr(&b, "reason", t->reason);
        if (t->state == TRIAL_STOPPED)
            rt_jw_kstr(&b, "stopped_by", by_budget(t) ? "time budget" : "asha");
        rt_jw_obj_end(&b);
    }
    rt_jw_arr_end(&b);
    rt_jw_obj_end(&b);
    rt_jw_obj_end(&b);
    free(text);
    free(best_text);
    *body = rt_jw_take(&b, NULL);
    return *body ? RT_OK : rt_err(err, RT_ERR_NOMEM, "out of memory");
}

static void end_sweep(sched *S, sc_job *sw, int state, const char *why, sc_clock now);

/* Submit the next trial; false when it could not be (the sweep failed). */
static bool submit_trial(sched *S, sc_job *sw, sc_trial *t, sc_clock now)
{
    char *body = NULL, err[RT_ERR_LEN];
    int64_t id = 0;
    rt_status st = trial_body(sw, t, &body, err);
    if (st == RT_OK)
        st = sc_submit_child(S, sw, body, strlen(body), now, &id, err);
    free(body);
    if (st != RT_OK) {
        char why[RT_ERR_LEN + 64];
        snprintf(why, sizeof why, "trial %d could not be submitted: %s", t->n, err);
        end_sweep(S, sw, JOB_FAILED, why, now);
        return false;
    }
    t->job = id;
    t->state = TRIAL_RUNNING;
    sc_trial_saved(S, sw, t->n);
    sc_event(S, sw, "trial", "trial %d submitted as job %lld: %s", t->n, (long long)id,
             t->params ? t->params : "{}");
    if (sw->state == JOB_QUEUED) {
        sw->state = JOB_RUNNING;
        sw->started = now.wall;
        sw->reason[0] = '\0';
        sc_job_saved(S, sw);
    }
    return true;
}

/* The winner: the best value among the trials that ran (ties: the lower
 * number); 0 when none has one. */
static int best_trial(const sc_sweep *w)
{
    int best = 0;
    for (int64_t i = 0; i < w->ntrials; i++) {
        const sc_trial *t = &w->t[i];
        if ((t->state == TRIAL_COMPLETED || t->state == TRIAL_STOPPED) && !isnan(t->best) &&
            (best == 0 || better(w, t->best, w->t[best - 1].best)))
            best = t->n;
    }
    return best;
}

/* "trial 2 (job 7): ..." of the first failed trials */
static void first_failures(const sc_sweep *w, char *buf, size_t len)
{
    size_t n = 0;
    int shown = 0;
    buf[0] = '\0';
    for (int64_t i = 0; i < w->ntrials && shown < 3 && n + 40 < len; i++)
        if (w->t[i].state == TRIAL_FAILED) {
            n += (size_t)snprintf(buf + n, len - n, "%strial %d (job %lld): %.200s",
                                  shown++ ? "; " : "", w->t[i].n, (long long)w->t[i].job,
                                  w->t[i].reason);
        }
}

/* Whether a trial its sweep stopped (ASHA, the time budget) still has
 * ranks running (on an agent that is up): their last epoch lines may yet
 * change its record, and they may still be writing its store. */
static bool stopping(sched *S, const sc_sweep *w)
{
    for (int64_t i = 0; i < w->ntrials; i++) {
        const sc_job *j = w->t[i].job ? sched_job(S, w->t[i].job) : NULL;
        for (int r = 0; j && j->asha_stop && r < j->cur_np; r++)
            if (j->ranks[r].state != RS_EXITED && j->ranks[r].ag && j->ranks[r].ag->up)
                return true;
    }
    return false;
}

/* [sweep] time_budget, counted from the sweep's start: once it has run
 * out no trial starts (the pending ones, and those still queued, are
 * cancelled) and the running ones stop as ASHA stops them (aborted,
 * checkpoints kept, "stopped"); the results then come from the trials that
 * ran.  Again after a coordinator restart, to the same effect. */
static void out_of_time(sched *S, sc_job *sw, sc_clock now)
{
    sc_sweep *w = sw->sweep;
    if (!w->budget_us || sw->started <= 0 || w->finish_job ||
        now.wall - sw->started < (double)w->budget_us / 1e6)
        return;
    char budget[32];
    rt_format_duration(w->budget_us, budget, sizeof budget);
    int stopped = 0, cancelled = 0;
    for (int64_t i = 0; i < w->ntrials; i++) {
        sc_trial *t = &w->t[i];
        sc_job *j = t->state == TRIAL_RUNNING ? sched_job(S, t->job) : NULL;
        if (t->state == TRIAL_PENDING) {
            t->state = TRIAL_CANCELLED;
            snprintf(t->reason, sizeof t->reason,
                     "not started: the sweep's time budget (%s) ran out", budget);
            sc_trial_saved(S, sw, t->n);
            cancelled++;
        } else if (j && j->state == JOB_QUEUED) {
            char why[128];
            snprintf(why, sizeof why, "not started: the sweep's time budget (%s) ran out", budget);
            sc_finish(S, j, JOB_CANCELLED, why, now); /* the trial: cancelled, this reason */
            cancelled++;
        } else if (j && !job_state_terminal(j->state)) {
            snprintf(t->reason, sizeof t->reason, RT_SWEEP_BUDGET_STOP " (%s) after %lld epochs",
                     budget, (long long)t->epochs);
            j->asha_stop = true;
            sc_send_abort(S, j, "stopped by its sweep (time budget)");
            sc_finish(S, j, JOB_SUCCEEDED, t->reason, now); /* the trial: stopped */
            stopped++;
        }
    }
    if (!w->out_of_time || stopped || cancelled)
        sc_event(S, sw, "trial",
                 "the sweep's time budget (%s) ran out: %d running trial%s stopped, %d not "
                 "started",
                 budget, stopped, stopped == 1 ? "" : "s", cancelled);
    w->out_of_time = true;
}

static void sweep_step(sched *S, sc_job *sw, sc_clock now)
{
    sc_sweep *w = sw->sweep;
    out_of_time(S, sw, now);
    int active = 0, failed = 0, done = 0;
    for (int64_t i = 0; i < w->ntrials; i++) {
        active += w->t[i].state == TRIAL_RUNNING;
        failed += w->t[i].state == TRIAL_FAILED;
        done += trial_done(w->t[i].state);
    }
    if (failed > w->max_failed) {
        char why[1200], ff[900];
        first_failures(w, ff, sizeof ff);
        snprintf(why, sizeof why, "%d trials failed, more than max_failed_trials = %d: %s", failed,
                 w->max_failed, ff);
        end_sweep(S, sw, JOB_FAILED, why, now);
        return;
    }
    for (int64_t i = 0; !sw->held && active < w->parallel && i < w->ntrials; i++)
        if (w->t[i].state == TRIAL_PENDING) {
            if (!submit_trial(S, sw, &w->t[i], now))
                return;
            active++;
        }
    if (sw->state == JOB_RUNNING && !w->finish_job) { /* what `ringtrain jobs` says of it */
        char why[sizeof sw->reason];
        snprintf(why, sizeof why, "trials: %d running, %d ended of %lld%s%s", active, done,
                 (long long)w->ntrials, sw->held ? "; held: no new trial starts" : "",
                 w->out_of_time ? "; its time budget ran out" : "");
        if (strcmp(why, sw->reason) != 0) {
            snprintf(sw->reason, sizeof sw->reason, "%s", why);
            sc_job_saved(S, sw);
        }
    }
    if (done < w->ntrials || w->finish_job || stopping(S, w))
        return;
    w->best = best_trial(w);
    if (w->best == 0) {
        char why[1200], ff[900];
        first_failures(w, ff, sizeof ff);
        snprintf(why, sizeof why, "no trial reported a %s value%s%s", w->monitor, ff[0] ? ": " : "",
                 ff);
        end_sweep(S, sw, JOB_FAILED, why, now);
        return;
    }
    char *body = NULL, err[RT_ERR_LEN];
    int64_t id = 0;
    rt_status st = finish_body(sw, &body, err);
    if (st == RT_OK)
        st = sc_submit_child(S, sw, body, strlen(body), now, &id, err);
    free(body);
    if (st != RT_OK) {
        char why[RT_ERR_LEN + 64];
        snprintf(why, sizeof why, "its results could not be written: %s", err);
        end_sweep(S, sw, JOB_FAILED, why, now);
        return;
    }
    w->finish_job = id;
    snprintf(sw->reason, sizeof sw->reason, "every trial has ended; job %lld writes the results",
             (long long)id);
    sc_job_saved(S, sw);
    sc_trial_saved(S, sw, 0);
    const sc_trial *b = &w->t[w->best - 1];
    sc_event(S, sw, "best",
             "every trial has ended; the best is trial %d (job %lld): %s %.6g at "
             "epoch %lld; job %lld writes trials.jsonl and best/",
             b->n, (long long)b->job, w->monitor, b->best, (long long)b->best_epoch, (long long)id);
}

void sc_sweep_pass(sched *S, sc_clock now)
{
    for (sc_job *j = S->jobs; j; j = j->next)
        if (j->type == RT_JOB_SWEEP && j->sweep && !job_state_terminal(j->state))
            sweep_step(S, j, now);
}

/* ---- trials' events ---------------------------------------------------------- */

static sc_trial *trial_of(sched *S, const sc_job *j, sc_job **sweep)
{
    *sweep = j->sweep_id ? sched_job(S, j->sweep_id) : NULL;
    sc_sweep *w = *sweep ? (*sweep)->sweep : NULL;
    if (!w || j->trial < 1 || j->trial > w->ntrials || w->t[j->trial - 1].job != j->id)
        return NULL;
    return &w->t[j->trial - 1];
}

/* Stop and cancel what the sweep still runs, then end it. */
static void end_sweep(sched *S, sc_job *sw, int state, const char *why, sc_clock now)
{
    if (job_state_terminal(sw->state))
        return;
    sc_finish(S, sw, state, why, now); /* sc_sweep_job_ended cancels its jobs */
}

void sc_sweep_job_ended(sched *S, sc_job *j, sc_clock now)
{
    if (j->type == RT_JOB_SWEEP && j->sweep) { /* cancel what it still runs */
        for (sc_job *c = S->jobs; c; c = c->next)
            if (c->sweep_id == j->id && !job_state_terminal(c->state)) {
                sc_send_abort(S, c, "its sweep ended");
                sc_finish(S, c, JOB_CANCELLED,
                          j->state == JOB_CANCELLED ? "its sweep was cancelled" : "its sweep ended",
                          now);
            }
        return;
    }
    sc_job *sw = NULL;
    if (!j->sweep_id)
        return;
    if (j->trial == 0) { /* the last step */
        sw = sched_job(S, j->sweep_id);
        if (!sw || !sw->sweep || sw->sweep->finish_job != j->id || job_state_terminal(sw->state))
            return;
        char why[1200];
        if (j->state == JOB_SUCCEEDED)
            snprintf(why, sizeof why,
                     "%lld trials; the best is trial %d: its results are in the "
                     "store's trials.jsonl and best/",
                     (long long)sw->sweep->ntrials, sw->sweep->best);
        else
            snprintf(why, sizeof why, "writing its results (job %lld) failed: %s", (long long)j->id,
                     j->reason);
        sc_finish(S, sw, j->state == JOB_SUCCEEDED ? JOB_SUCCEEDED : JOB_FAILED, why, now);
        return;
    }
    sc_trial *t = trial_of(S, j, &sw);
    if (!t || trial_done(t->state))
        return;
    t->state = j->asha_stop                ? TRIAL_STOPPED
               : j->state == JOB_SUCCEEDED ? TRIAL_COMPLETED
               : j->state == JOB_CANCELLED ? TRIAL_CANCELLED
                                           : TRIAL_FAILED;
    if (t->state != TRIAL_STOPPED)
        snprintf(t->reason, sizeof t->reason, "%s", j->reason);
    sc_trial_saved(S, sw, t->n);
    if (t->state != TRIAL_STOPPED)
        sc_event(S, sw, "trial", "trial %d (job %lld) %s after %lld epochs: %s", t->n,
                 (long long)j->id, trial_state_name(t->state), (long long)t->epochs, j->reason);
}

/* Its best value up to and including epoch e (the monitor's), from the line. */
static bool epoch_value(const sc_sweep *w, const rt_json *data, double *v)
{
    const rt_json *x = rt_json_get(data, w->monitor);
    if (!x && !strcmp(w->monitor, RT_P_VAL_LOSS)) /* no validation rows: the training loss */
        x = rt_json_get(data, RT_P_LOSS);
    if (rt_json_type_of(x) != RT_JSON_NUMBER)
        return false;
    *v = rt_json_num(x, NAN);
    return isfinite(*v);
}

/* ASHA at rung k for trial t: whether it goes on; the cut-off into *cut. */
static bool asha_keeps(const sc_sweep *w, const sc_trial *t, int k, int *n_out, double *cut)
{
    double *v = malloc((size_t)w->ntrials * sizeof *v);
    int n = 0;
    for (int64_t i = 0; v && i < w->ntrials; i++)
        if (!isnan(w->t[i].rung_val[k]))
            v[n++] = w->t[i].rung_val[k];
    if (!v || n == 0) {
        free(v);
        return true;
    }
    /* sort best first (n is small: insertion sort) */
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && better(w, v[b], v[b - 1]); b--) {
            double x = v[b];
            v[b] = v[b - 1];
            v[b - 1] = x;
        }
    int keep = n / w->reduction;
    keep = keep < 1 ? 1 : keep;
    *cut = v[keep - 1];
    *n_out = n;
    free(v);
    return !better(w, *cut, t->rung_val[k]); /* at least as good as the cut-off */
}

/* Epoch e's line into t's record: the epochs it ran, its best value */
static void record_epoch(const sc_sweep *w, sc_trial *t, const rt_json *data, int64_t e)
{
    double v;
    if (e > t->epochs)
        t->epochs = e;
    if (epoch_value(w, data, &v) && better(w, v, t->best)) {
        t->best = v;
        t->best_epoch = e;
    }
}

/* An epoch line of a trial its sweep stopped, come after the stop: it ran
 * on before the abort reached its ranks (its store has those epochs), and
 * its record follows them.  Whether it completed, its ranks' exits say
 * (sc_sweep_stopped_exit): a last epoch line is not yet its predictions. */
static void late_epoch(sched *S, sc_job *sw, sc_trial *t, const rt_json *data, int64_t e)
{
    if (e <= t->epochs)
        return;
    record_epoch(sw->sweep, t, data, e);
    sc_trial_saved(S, sw, t->n);
}

/* Every rank of a trial its sweep stopped has exited with code 0: it
 * finished — its last epoch, its own early stopping, its predictions —
 * before the abort reached it, so it has completed after all. */
void sc_sweep_stopped_exit(sched *S, sc_job *j)
{
    sc_job *sw = NULL;
    sc_trial *t = trial_of(S, j, &sw);
    if (!t || t->state != TRIAL_STOPPED)
        return;
    for (int r = 0; r < j->cur_np; r++)
        if (j->ranks[r].state != RS_EXITED || j->ranks[r].exit_code != 0 ||
            j->ranks[r].exit_signal != 0)
            return;
    t->state = TRIAL_COMPLETED;
    snprintf(t->reason, sizeof t->reason,
             "finished (%lld epochs) before the sweep's stop reached it", (long long)t->epochs);
    sc_event(S, sw, "trial", "trial %d (job %lld) completed: %s", t->n, (long long)j->id,
             t->reason);
    sc_trial_saved(S, sw, t->n);
}

void sc_sweep_epoch(sched *S, sc_job *j, const rt_json *data, sc_clock now)
{
    sc_job *sw = NULL;
    sc_trial *t = trial_of(S, j, &sw);
    int64_t e = 0;
    if (!t || !rt_json_get_int(data, "epoch", &e) || e < 1)
        return;
    if (j->asha_stop && t->state == TRIAL_STOPPED) {
        late_epoch(S, sw, t, data, e);
        return;
    }
    if (trial_done(t->state) || job_state_terminal(j->state))
        return;
    sc_sweep *w = sw->sweep;
    record_epoch(w, t, data, e);
    int k = -1;
    for (int r = 0; r < w->nrungs; r++)
        if (w->rung_epoch[r] == e)
            k = r;
    if (k < 0 || !isnan(t->rung_val[k]) || isnan(t->best)) {
        sc_trial_saved(S, sw, t->n);
        return;
    }
    t->rung_val[k] = t->best;
    t->rung = k;
    int n = 1;
    double cut = t->best;
    bool keep = asha_keeps(w, t, k, &n, &cut);
    sc_trial_saved(S, sw, t->n);
    if (keep) {
        sc_event(S, sw, "trial",
                 "trial %d (job %lld) passes rung %d (epoch %lld): %s %.6g, "
                 "among the best %d of %d there",
                 t->n, (long long)j->id, k, (long long)e, w->monitor, t->best,
                 n / w->reduction < 1 ? 1 : n / w->reduction, n);
        return;
    }
    snprintf(t->reason, sizeof t->reason,
             "stopped by the sweep's ASHA at rung %d (epoch %lld): %s %.6g is not among the "
             "best %d of the %d trials there (%.6g or %s needed)",
             k, (long long)e, w->monitor, t->best, n / w->reduction < 1 ? 1 : n / w->reduction, n,
             cut, w->maximize ? "more" : "less");
    j->asha_stop = true;
    sc_event(S, sw, "trial", "trial %d (job %lld) %s", t->n, (long long)j->id, t->reason);
    sc_send_abort(S, j, "stopped by its sweep (ASHA)");
    sc_finish(S, j, JOB_SUCCEEDED, t->reason, now);
}

/* ---- restoring ------------------------------------------------------------------ */

void sched_restore_trial(sched *S, sc_job *sw, int n, int64_t job, const char *params,
                         const char *state, int rung, int64_t epochs, double best,
                         int64_t best_epoch, const char *rung_vals, const char *reason)
{
    (void)S;
    sc_sweep *w = sw ? sw->sweep : NULL;
    if (!w || n < 1 || n > w->ntrials)
        return;
    sc_trial *t = &w->t[n - 1];
    t->job = job;
    free(t->params);
    free(t->vals);
    t->vals = NULL;
    t->params = params ? strdup(params) : NULL;
    int s = trial_state_parse(state);
    t->state = s < 0 ? TRIAL_PENDING : s;
    t->rung = rung;
    t->epochs = epochs;
    t->best = best;
    t->best_epoch = best_epoch;
    snprintf(t->reason, sizeof t->reason, "%s", reason ? reason : "");
    rt_json *a = NULL;
    char err[RT_ERR_LEN];
    if (rung_vals && rt_json_parse(rung_vals, strlen(rung_vals), &a, err) == RT_OK)
        for (size_t k = 0; k < rt_json_len(a) && k < SC_MAX_RUNGS; k++)
            t->rung_val[k] = rt_json_num(rt_json_at(a, k), NAN);
    rt_json_free(a);
}

void sched_restore_sweep(sched *S, sc_job *sw, int64_t finish_job, int best)
{
    (void)S;
    if (!sw || !sw->sweep)
        return;
    sw->sweep->finish_job = finish_job;
    sw->sweep->best = best >= 0 && best <= sw->sweep->ntrials ? best : 0;
}
