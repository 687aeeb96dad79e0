/* scheduler_agents.c — the scheduler's side of the agents (see scheduler.h): an
 * agent coming up (its hello, reconciling restored jobs with what it runs)
 * or going down, its reports on the ranks (prepared, started, exited,
 * progress), and the timers. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_proto.h"
#include "scheduler.h"
#include "scheduler_impl.h"

/* An agent's capabilities as the API and the dashboard show them: an
 * object of scalars (strings up to 256 bytes, finite numbers, booleans)
 * and arrays of such strings (gpu_names, limits; up to 64), whatever the
 * agent sent: anything else (objects, other types, long values) is
 * dropped, so a rogue agent cannot put objects or megabytes there (the
 * dashboard escapes every string it shows). */
static char *caps_clean(const rt_json *caps)
{
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    for (size_t i = 0; i < rt_json_len(caps) && i < 64 && rt_json_type_of(caps) == RT_JSON_OBJECT;
         i++) {
        const char *k = rt_json_key_at(caps, i);
        const rt_json *v = rt_json_value_at(caps, i);
        if (!k || strlen(k) > 64)
            continue;
        switch (rt_json_type_of(v)) {
        case RT_JSON_BOOL:
            rt_jw_kbool(&w, k, rt_json_bool(v, false));
            break;
        case RT_JSON_NUMBER: {
            const double x = rt_json_num(v, 0);
            if (x == floor(x) && fabs(x) < 9e15)
                rt_jw_kint(&w, k, (int64_t)x);
            else if (isfinite(x))
                rt_jw_knum(&w, k, x);
            break;
        }
        case RT_JSON_STRING:
            if (strlen(rt_json_str(v, "")) <= 256)
                rt_jw_kstr(&w, k, rt_json_str(v, ""));
            break;
        case RT_JSON_ARRAY: {
            size_t n = rt_json_len(v), ok = 0;
            for (size_t e = 0; e < n; e++)
                ok += rt_json_type_of(rt_json_at(v, e)) == RT_JSON_STRING &&
                      strlen(rt_json_str(rt_json_at(v, e), "")) <= 256;
            if (n > 64 || ok != n)
                break;
            rt_jw_key(&w, k);
            rt_jw_arr(&w);
            for (size_t e = 0; e < n; e++)
                rt_jw_str(&w, rt_json_str(rt_json_at(v, e), ""));
            rt_jw_arr_end(&w);
            break;
        }
        default:
            break;
        }
    }
    rt_jw_obj_end(&w);
    return rt_jw_take(&w, NULL);
}

/* ---- agents ---------------------------------------------------------------------- */

/* Whether the attempt's failure is already decided (or the job is past
 * failing): what happens to its other ranks now is the consequence. */
static bool failure_decided(const sc_job *j)
{
    return job_state_terminal(j->state) || j->have_failure || j->state == JOB_RESTARTING;
}

/* The first failure of a rank that ended without an exit of its own (its
 * agent lost, or silent about it after a coordinator restart). */
static void lost_rank_failure(sc_job *j, int rank, const char *host, const char *agent,
                              const char *why)
{
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kint(&w, RT_F_ATTEMPT, j->attempt);
    rt_jw_kint(&w, RT_F_RANK, rank);
    rt_jw_kstr(&w, "host", host);
    rt_jw_kstr(&w, RT_F_AGENT, agent);
    rt_jw_kstr(&w, "cause", why);
    rt_jw_obj_end(&w);
    sc_set_first_failure(j, &w);
}

/* A rank of a restored job that its agent did not account for: gone. */
static void rank_unaccounted(sched *S, sc_job *j, int r, const char *why, sc_clock now)
{
    sc_rank *s = &j->ranks[r];
    sc_rank_exit(s);
    s->exit_signal = -1;
    sc_rank_saved(S, j, r);
    if (failure_decided(j))
        return;
    lost_rank_failure(j, r, s->hostname, s->agent_key, why);
    char reason[700];
    snprintf(reason, sizeof reason, "rank %d (agent %s) %s", r, s->agent_key, why);
    /* an attempt that never ran was interrupted, not failed: no restart used */
    sc_attempt_failed(S, j, reason, j->state != JOB_STARTING && !j->launch_unsure, now);
}

/* A restored job is reconciled once every rank is accounted for. */
static void reconcile_check(sched *S, sc_job *j)
{
    if (!j->reconciling)
        return;
    for (int r = 0; r < j->cur_np; r++)
        if (j->ranks[r].state == RS_NONE)
            return;
    j->reconciling = false;
    if (job_state_terminal(j->state) || j->state == JOB_RESTARTING)
        return;
    if (j->running == j->cur_np && j->state != JOB_RUNNING) {
        j->state = JOB_RUNNING;
        sc_job_saved(S, j);
    }
    sc_event(S, j, "reconciled", "all %d ranks found after the coordinator restart", j->cur_np);
}

sc_agent *sched_agent_up(sched *S, const rt_json *m, sc_clock now, char *err)
{
    const char *host_id = rt_json_get_str(m, RT_F_HOST_ID), *name = rt_json_get_str(m, RT_F_NAME);
    int64_t slots = 0;
    rt_json_get_int(m, RT_F_SLOTS, &slots);
    if (!host_id || !name || !*host_id || !*name || strlen(host_id) >= 80 || strlen(name) >= 80 ||
        strchr(host_id, '/') || strchr(name, '/') || slots < 0 || slots > 4096) {
        rt_err(err, RT_ERR_INVALID, "hello without a valid host_id, name and slots");
        return NULL;
    }
    char key[SC_KEY_LEN];
    snprintf(key, sizeof key, "%s/%s", host_id, name);
    sc_agent *a = sched_agent(S, key);
    if (a && a->up) {
        rt_err(err, RT_ERR_EXISTS, "an agent named %s is already connected from host %s", name,
               host_id);
        return NULL;
    }
    if (!a && !(a = sc_agent_new(S, key))) {
        rt_err(err, RT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    snprintf(a->host_id, sizeof a->host_id, "%s", host_id);
    snprintf(a->name, sizeof a->name, "%s", name);
    snprintf(a->hostname, sizeof a->hostname, "%s", rt_json_str(rt_json_get(m, RT_F_HOSTNAME), "?"));
    snprintf(a->addr, sizeof a->addr, "%s", rt_json_str(rt_json_get(m, RT_F_ADDRESS), ""));
    const char *machine = rt_json_str(rt_json_get(m, RT_F_MACHINE), "");
    snprintf(a->machine, sizeof a->machine, "%s",
             strlen(machine) < sizeof a->machine ? machine : "");
    a->slots = (int)slots;
    /* what the scheduler uses comes from what the API shows: the cleaned object */
    free(a->caps);
    a->caps = caps_clean(rt_json_get(m, RT_F_CAPS));
    rt_json *caps = NULL;
    char jerr[RT_ERR_LEN];
    if (!a->caps || rt_json_parse(a->caps, strlen(a->caps), &caps, jerr) != RT_OK)
        caps = NULL; /* out of memory: no capabilities */
    a->cuda = rt_json_bool(rt_json_get(caps, "cuda"), false);
    a->nccl = rt_json_bool(rt_json_get(caps, "nccl"), false);
    a->rdma = rt_json_bool(rt_json_get(caps, "rdma"), false);
    const rt_json *lim = rt_json_get(caps, "limits");
    a->lim_mem = a->lim_cpu = false;
    for (size_t k = 0; k < rt_json_len(lim); k++) {
        const char *l = rt_json_str(rt_json_at(lim, k), "");
        a->lim_mem = a->lim_mem || !strcmp(l, "memory");
        a->lim_cpu = a->lim_cpu || !strcmp(l, "cpu");
    }
    int64_t g = 0;
    a->gpus = rt_json_get_int(caps, "gpus", &g) && g >= 0 && g <= 4096 ? (int)g : 0;
    rt_json_free(caps);
    a->up = true;
    a->since = now.wall;
    sc_agent_saved(S, a);

    /* what the agent runs: ours if the job and attempt are current, else
     * leftovers to stop */
    const rt_json *running = rt_json_get(m, RT_F_RUNNING);
    for (size_t i = 0; i < rt_json_len(running); i++) {
        const rt_json *e = rt_json_at(running, i);
        int64_t id, att, r, pid = 0;
        if (!rt_json_get_int(e, RT_F_JOB, &id) || !rt_json_get_int(e, RT_F_ATTEMPT, &att) ||
            !rt_json_get_int(e, RT_F_RANK, &r))
            continue;
        rt_json_get_int(e, RT_F_PID, &pid);
        sc_job *j = sched_job(S, id);
        bool ours = j && !job_state_terminal(j->state) && att == j->attempt && r >= 0 &&
                    r < j->cur_np && strcmp(j->ranks[r].agent_key, a->key) == 0 &&
                    j->ranks[r].state != RS_EXITED;
        if (!ours) {
            sc_send_abort_attempt(S, a, id, att, "the job's attempt is over");
            continue;
        }
        sc_rank *s = &j->ranks[r];
        sc_rank_bind(s, a);
        if (s->state != RS_RUNNING) {
            s->state = RS_RUNNING;
            j->running++;
        }
        s->pid = pid;
        sc_rank_saved(S, j, (int)r);
    }
    const rt_json *exited = rt_json_get(m, RT_F_EXITED);
    for (size_t i = 0; i < rt_json_len(exited); i++)
        sched_on_exited(S, a, rt_json_at(exited, i), now);
    /* restored jobs: a rank of this agent it neither runs nor reported is
     * gone (also when its attempt has failed meanwhile: its slot is free) */
    for (sc_job *j = S->jobs; j; j = j->next) {
        for (int r = 0; r < j->cur_np; r++)
            if (j->ranks[r].state == RS_NONE && strcmp(j->ranks[r].agent_key, a->key) == 0)
                rank_unaccounted(S, j, r,
                                 "was not running when its agent reconnected after the "
                                 "coordinator restart",
                                 now);
        reconcile_check(S, j);
    }
    sc_queue_pass(S, now);
    return a;
}

void sched_agent_down(sched *S, sc_agent *a, const char *why, sc_clock now)
{
    if (!a->up)
        return;
    a->up = false;
    a->since = now.wall;
    sc_agent_saved(S, a);
    for (sc_job *j = S->jobs; j; j = j->next) {
        if (!j->ranks)
            continue;
        int lost = -1;
        for (int r = 0; r < j->cur_np; r++)
            if (j->ranks[r].ag == a && j->ranks[r].state != RS_EXITED) {
                sc_rank_exit(&j->ranks[r]);
                j->ranks[r].exit_signal = -1;
                sc_rank_saved(S, j, r);
                if (lost < 0)
                    lost = r;
            }
        if (lost < 0 || failure_decided(j) || j->state == JOB_QUEUED)
            continue;
        char reason[700];
        snprintf(reason, sizeof reason, "agent %s on host %s was lost (%s) with rank %d", a->key,
                 a->hostname, why, lost);
        lost_rank_failure(j, lost, a->hostname, a->key, why);
        sc_attempt_failed(S, j, reason, true, now);
    }
    a->used = 0;
    sc_queue_pass(S, now);
}

/* ---- reports from agents --------------------------------------------------------- */

/* The job and rank a message refers to, when it is this agent's rank of
 * the current attempt (of a live job unless any_state). */
static sc_job *msg_job(sched *S, sc_agent *a, const rt_json *m, int *rank, bool any_state)
{
    int64_t id, att, r = -1;
    if (!rt_json_get_int(m, RT_F_JOB, &id) || !rt_json_get_int(m, RT_F_ATTEMPT, &att))
        return NULL;
    sc_job *j = sched_job(S, id);
    if (!j || att != j->attempt || (!any_state && job_state_terminal(j->state)))
        return NULL;
    if (rank) {
        if (!rt_json_get_int(m, RT_F_RANK, &r) || r < 0 || r >= j->cur_np ||
            strcmp(j->ranks[r].agent_key, a->key) != 0)
            return NULL;
        *rank = (int)r;
    }
    return j;
}

void sched_on_prepared(sched *S, sc_agent *a, const rt_json *m, sc_clock now)
{
    sc_job *j = msg_job(S, a, m, NULL, false);
    if (!j || j->state != JOB_STARTING)
        return;
    /* only an agent asked to prepare ranks of this attempt speaks for it */
    bool asked = false;
    for (int r = 0; r < j->cur_np && !asked; r++)
        asked = j->ranks[r].state == RS_PREPARING && strcmp(j->ranks[r].agent_key, a->key) == 0;
    if (!asked)
        return;
    const char *error = rt_json_get_str(m, RT_F_ERROR);
    if (error) {
        char why[700];
        snprintf(why, sizeof why, "agent %s could not prepare its ranks: %s", a->key, error);
        j->have_failure = true;
        sc_attempt_failed(S, j, why, true, now);
        return;
    }
    const rt_json *addrs = rt_json_get(m, RT_F_RANKS);
    for (size_t i = 0; i < rt_json_len(addrs); i++) {
        const rt_json *e = rt_json_at(addrs, i);
        int64_t r;
        const char *addr = rt_json_get_str(e, RT_F_ADDR);
        if (!rt_json_get_int(e, RT_F_RANK, &r) || r < 0 || r >= j->cur_np || !addr ||
            strlen(addr) >= sizeof j->ranks[r].addr ||
            strcmp(j->ranks[r].agent_key, a->key) != 0 || j->ranks[r].state != RS_PREPARING)
            continue;
        snprintf(j->ranks[r].addr, sizeof j->ranks[r].addr, "%s", addr);
        int64_t mp = 0;
        if (r == 0 && rt_json_get_int(e, RT_F_MASTER_PORT, &mp) && mp > 0 && mp < 65536)
            j->master_port = (int)mp;
        j->ranks[r].state = RS_PREPARED;
        j->prepared++;
        sc_rank_saved(S, j, (int)r);
    }
    if (j->prepared == j->cur_np)
        sc_send_start(S, j, now);
}

void sched_on_started(sched *S, sc_agent *a, const rt_json *m, sc_clock now)
{
    int r;
    sc_job *j = msg_job(S, a, m, &r, false);
    if (!j || j->ranks[r].state != RS_STARTING)
        return;
    int64_t pid = 0;
    rt_json_get_int(m, RT_F_PID, &pid);
    j->ranks[r].pid = pid;
    snprintf(j->ranks[r].gpu, sizeof j->ranks[r].gpu, "%s", rt_json_str(rt_json_get(m, RT_F_GPU), ""));
    j->ranks[r].state = RS_RUNNING;
    sc_rank_saved(S, j, r);
    if (++j->running == j->cur_np && j->state == JOB_STARTING) {
        j->state = JOB_RUNNING;
        j->attempt_started = now.wall;
        if (j->started == 0)
            j->started = now.wall;
        sc_attempt_saved(S, j, "running", "");
        sc_job_saved(S, j);
        sc_event(S, j, "running", "attempt %d: all %d ranks started", j->attempt, j->cur_np);
    }
}

static void describe_exit(char *buf, size_t len, int code, int sig)
{
    if (sig > 0)
        snprintf(buf, len, "was killed by signal %d (%s)", sig, strsignal(sig));
    else if (sig < 0)
        snprintf(buf, len, "was lost with its agent");
    else if (code == RT_EXIT_PEER)
        snprintf(buf, len, "exited with code %d (a collective with its peers failed)", code);
    else
        snprintf(buf, len, "exited with code %d", code);
}

static bool all_exited(const sc_job *j)
{
    for (int r = 0; r < j->cur_np; r++)
        if (j->ranks[r].state != RS_EXITED)
            return false;
    return true;
}

/* The held RT_EXIT_PEER failure becomes the attempt's: no other rank
 * failed on its own in time (every rank exited, or SC_PEER_GRACE_S). */
static void decide_held(sched *S, sc_job *j, sc_clock now)
{
    char why[700];
    snprintf(why, sizeof why, "%s", j->peer_why ? j->peer_why : "a rank's peers were lost");
    free(j->first_failure);
    j->first_failure = j->peer_failure;
    j->peer_failure = NULL;
    j->have_failure = true;
    sc_peer_failure_clear(j);
    sc_attempt_failed(S, j, why, !j->launch_unsure, now);
    if (job_state_terminal(j->state))
        sc_queue_pass(S, now);
}

void sched_on_exited(sched *S, sc_agent *a, const rt_json *m, sc_clock now)
{
    int r;
    /* an exit always frees its slot, even after the job has ended (its
     * ranks are stopped after a failure or a cancel) */
    sc_job *j = msg_job(S, a, m, &r, true);
    if (!j)
        return;
    sc_rank *s = &j->ranks[r];
    if (s->state == RS_EXITED)
        return;
    int64_t code = 0, sig = 0;
    rt_json_get_int(m, RT_F_CODE, &code);
    rt_json_get_int(m, RT_F_SIGNAL, &sig);
    sc_rank_bind(s, a);
    if (s->state == RS_RUNNING && j->running > 0)
        j->running--;
    sc_rank_exit(s);
    s->exit_code = (int)code;
    s->exit_signal = (int)sig;
    sc_rank_saved(S, j, r);
    reconcile_check(S, j);
    if (job_state_terminal(j->state)) {
        if (j->asha_stop) /* a trial its sweep stopped may have finished first */
            sc_sweep_stopped_exit(S, j);
        sc_queue_pass(S, now); /* a stopped rank's slot is free again */
        return;
    }
    if (code == 0 && sig == 0) {
        if (++j->exited_ok == j->cur_np && !j->have_failure) {
            sc_finish(S, j, JOB_SUCCEEDED, "all ranks exited with code 0", now);
            sc_queue_pass(S, now); /* its slots may start the next job */
        } else if (j->peer_failure && !j->have_failure && all_exited(j)) {
            decide_held(S, j, now);
        }
        return;
    }
    if (j->have_failure || j->state == JOB_RESTARTING) {
        sc_queue_pass(S, now); /* a failed attempt's slot is free again */
        return; /* a rank stopped by the abort of an attempt that already failed */
    }
    char how[128], why[700];
    describe_exit(how, sizeof how, (int)code, (int)sig);
    /* what the agent knows of it (the OOM killer at the rank's memory_limit) */
    const char *said = rt_json_get_str(m, RT_F_REASON);
    snprintf(why, sizeof why, "rank %d on host %s (agent %s) %s%s%.300s", r, s->hostname, a->key,
             how, said ? ": " : "", said ? said : "");
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kint(&w, RT_F_ATTEMPT, j->attempt);
    rt_jw_kint(&w, RT_F_RANK, r);
    rt_jw_kstr(&w, "host", s->hostname);
    rt_jw_kstr(&w, RT_F_HOST_ID, s->host_id);
    rt_jw_kstr(&w, RT_F_AGENT, a->key);
    rt_jw_kint(&w, "exit_code", code);
    rt_jw_kint(&w, RT_F_SIGNAL, sig);
    if (said)
        rt_jw_kstr(&w, RT_F_REASON, said);
    rt_jw_key(&w, RT_F_TAIL);
    const rt_json *tail = rt_json_get(m, RT_F_TAIL);
    if (tail)
        rt_jw_value(&w, tail);
    else
        rt_jw_null(&w);
    rt_jw_obj_end(&w);
    /* A training rank whose collective failed is most often the
     * consequence of another rank's failure, which races it here (that
     * rank closes its connections before its exit is reported): held, so
     * that the cause, when it comes, is the attempt's failure. */
    if (code == RT_EXIT_PEER && sig == 0 && j->type == RT_JOB_TRAIN) {
        if (!j->peer_failure) {
            j->peer_failure = rt_jw_take(&w, NULL);
            j->peer_why = strdup(why);
            j->peer_at_ns = now.mono_ns;
        } else {
            free(rt_jw_take(&w, NULL));
        }
        if (all_exited(j))
            decide_held(S, j, now);
        return;
    }
    sc_set_first_failure(j, &w);
    /* a rank of an attempt whose launch the coordinator's restart may have
     * cut short (its peers never started) fails through no fault of its own */
    sc_attempt_failed(S, j, why, !j->launch_unsure, now);
    if (job_state_terminal(j->state))
        sc_queue_pass(S, now); /* its exited rank's slot may start the next job */
}

/* One step report into the current epoch's curve (a new epoch or attempt
 * starts it again). */
static void add_step(sc_job *j, const rt_json *data)
{
    int64_t epoch = 0, step = 0;
    if (!rt_json_get_int(data, "epoch", &epoch) || !rt_json_get_int(data, "step", &step))
        return;
    sc_steps *s = j->steps;
    if (!s && !(s = j->steps = calloc(1, sizeof *s)))
        return;
    if (s->attempt != j->attempt || s->epoch != epoch || (s->n && step <= s->p[s->n - 1].step)) {
        s->attempt = j->attempt;
        s->epoch = epoch;
        s->n = 0;
        s->stride = 1;
        s->since = 0;
    }
    if (++s->since < s->stride)
        return;
    s->since = 0;
    if (s->n == SC_STEP_POINTS) { /* keep every other point, take every other report */
        for (int i = 0; i < SC_STEP_POINTS / 2; i++)
            s->p[i] = s->p[2 * i + 1];
        s->n = SC_STEP_POINTS / 2;
        s->stride *= 2;
    }
    const rt_json *loss = rt_json_get(data, RT_P_LOSS);
    s->p[s->n].step = step;
    s->p[s->n].loss = loss ? rt_json_num(loss, NAN) : NAN;
    s->p[s->n].steps_per_s = rt_json_num(rt_json_get(data, RT_P_STEPS_PER_S), 0);
    s->n++;
}

/* A progress line as it is kept and served: its keys names (rt_name_ok),
 * its values scalars (strings of at most 256 bytes), the rest dropped and
 * counted in *dropped — a job's names reach every user's dashboard and
 * Prometheus labels (docs/security.md).  NULL when out of memory. */
#define PROGRESS_STR_MAX 256
static char *progress_clean(const rt_json *data, int *dropped)
{
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    *dropped = 0;
    for (size_t i = 0; i < rt_json_len(data); i++) {
        const char *k = rt_json_key_at(data, i);
        const rt_json *v = rt_json_value_at(data, i);
        const rt_json_type t = rt_json_type_of(v);
        const bool scalar = t == RT_JSON_NUMBER || t == RT_JSON_BOOL || t == RT_JSON_NULL ||
                            (t == RT_JSON_STRING && strlen(rt_json_str(v, "")) <= PROGRESS_STR_MAX);
        if (!rt_name_ok(k) || !scalar || (!strcmp(k, "kind") && !rt_name_ok(rt_json_str(v, "")))) {
            (*dropped)++;
            continue;
        }
        rt_jw_key(&w, k);
        rt_jw_value(&w, v);
    }
    rt_jw_obj_end(&w);
    return rt_jw_take(&w, NULL);
}

/* A rank's {"kind": "warning", "text": "..."} (the trainer's, or a
 * program's through the Run API): an event of the job, "rank R: TEXT" —
 * what `ringtrain status` and the dashboard show — the text at most
 * SC_WARNING_TEXT_MAX bytes with control characters as blanks, and at most
 * SC_WARNINGS_MAX of them per attempt, then one saying the rest are in the
 * ranks' logs. */
static void progress_warning(sched *S, sc_job *j, int r, const rt_json *data)
{
    const char *t = rt_json_get_str(data, "text");
    if (j->warnings > SC_WARNINGS_MAX)
        return;
    if (j->warnings++ == SC_WARNINGS_MAX) {
        sc_event(S, j, "warning",
                 "rank %d: more warnings than %d: the rest are in the ranks' "
                 "logs (ringtrain logs %lld)",
                 r, SC_WARNINGS_MAX, (long long)j->id);
        return;
    }
    char text[SC_WARNING_TEXT_MAX + 1];
    const char *src = t && *t ? t : "(a warning without text)";
    size_t n = strlen(src);
    if (n > SC_WARNING_TEXT_MAX) /* cut before the character that does not fit (the text
                                    is valid UTF-8: the JSON parser checked it) */
        for (n = SC_WARNING_TEXT_MAX; n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80; n--)
            ;
    memcpy(text, src, n);
    text[n] = '\0';
    for (char *c = text; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = ' ';
    sc_event(S, j, "warning", "rank %d: %s", r, text);
}

void sched_on_progress(sched *S, sc_agent *a, const rt_json *m, sc_clock now)
{
    int r;
    /* a result is kept even when it comes after the job ended (the rank's
     * exit may have been processed first on a reconnect) */
    sc_job *j = msg_job(S, a, m, &r, true);
    const rt_json *data = rt_json_get(m, RT_F_DATA);
    const char *kind = rt_json_get_str(data, "kind");
    int64_t dropped = 0;
    if (j && rt_json_get_int(m, "dropped", &dropped) && dropped > 0)
        sc_event(S, j, "progress", "rank %d: %lld progress lines dropped by its agent (more than "
                 "10 step and 20 epoch lines a second, or the link to the coordinator backed up)",
                 r, (long long)dropped);
    if (kind && strcmp(kind, "dropped") == 0)
        return; /* only the count */
    /* after its end only results, and a stopped trial's epochs (its ranks
     * ran on until the abort reached them: sc_sweep_epoch) */
    if (!j || rt_json_type_of(data) != RT_JSON_OBJECT ||
        (job_state_terminal(j->state) && !(kind && strcmp(kind, "result") == 0) &&
         !(j->asha_stop && kind && strcmp(kind, "epoch") == 0)))
        return;
    if (kind && strcmp(kind, "result") == 0) { /* rt_report_result: kept per rank, any JSON */
        const rt_json *v = rt_json_get(data, "value");
        rt_jw vw;
        rt_jw_init(&vw);
        if (v)
            rt_jw_value(&vw, v);
        else
            rt_jw_null(&vw);
        sc_emit(S, SC_RESULT, j->id, NULL, NULL, rt_jw_take(&vw, NULL));
        S->out[S->nout - 1].attempt = j->attempt;
        S->out[S->nout - 1].rank = r;
        return;
    }
    if (kind && strcmp(kind, "warning") == 0) { /* said as the job's event, not progress */
        progress_warning(S, j, r, data);
        return;
    }
    int bad = 0;
    char *text = progress_clean(data, &bad);
    if (!text)
        return;
    if (bad > 0 && j->bad_names++ < 3) /* said a few times, not per line */
        sc_event(S, j, "progress",
                 "rank %d: %d progress key%s dropped: a key is 1 to %d letters, digits, '_', "
                 "'.' or '-', a value a number, true/false/null or a string of at most %d bytes",
                 r, bad, bad == 1 ? "" : "s", RT_NAME_MAX, PROGRESS_STR_MAX);
    if (kind && strcmp(kind, "epoch") == 0) {
        sc_emit(S, SC_METRIC, j->id, NULL, NULL, strdup(text)); /* the history */
        S->out[S->nout - 1].attempt = j->attempt;
    }
    if (r != 0) {
        free(text);
        return;
    }
    j->steps_per_s = rt_json_num(rt_json_get(data, RT_P_STEPS_PER_S), j->steps_per_s);
    if (kind && strcmp(kind, "step") == 0)
        add_step(j, data);
    if (kind && strcmp(kind, "epoch") == 0) {
        free(j->last_epoch);
        j->last_epoch = strdup(text);
        if (j->sweep_id) /* a trial: its rungs */
            sc_sweep_epoch(S, j, data, now);
    }
    free(j->progress);
    j->progress = text;
    sc_job_saved(S, j);
}

void sched_on_usage(sched *S, sc_agent *a, const rt_json *m, sc_clock now)
{
    const rt_json *us = rt_json_get(m, RT_F_USAGE);
    for (size_t i = 0; i < rt_json_len(us); i++) {
        const rt_json *u = rt_json_at(us, i);
        int r;
        sc_job *j = msg_job(S, a, u, &r, false);
        if (!j)
            continue;
        sc_rank *s = &j->ranks[r];
        double cpu = rt_json_num(rt_json_get(u, "cpu_s"), -1);
        int64_t rss = 0;
        if (cpu < 0 || !rt_json_get_int(u, "rss_bytes", &rss) || rss < 0)
            continue;
        if (s->usage_ns > 0 && now.mono_ns > s->usage_ns && cpu >= s->cpu_s)
            s->cpu_pct = 100.0 * (cpu - s->cpu_s) / ((double)(now.mono_ns - s->usage_ns) / 1e9);
        s->cpu_s = cpu;
        s->rss_bytes = rss;
        int64_t procs = 0;
        s->procs = rt_json_get_int(u, "procs", &procs) && procs >= 0 && procs < (1 << 30) ? (int)procs : 0;
        s->usage_ns = now.mono_ns;
        int64_t gu = -1, gm = 0; /* GPU use, where the agent has NVML */
        s->gpu_util = rt_json_get_int(u, "gpu_util", &gu) && gu >= 0 && gu <= 100000 ? (int)gu : -1;
        s->gpu_mem_bytes = s->gpu_util >= 0 && rt_json_get_int(u, "gpu_mem_bytes", &gm) && gm >= 0
                               ? gm
                               : 0;
    }
}

/* agent_retention: agents long down, on no job's rank, leave the model */
int sched_forget_agents(sched *S, double cutoff, char (*keys)[SC_KEY_LEN], int max)
{
    int n = 0;
    for (sc_agent **p = &S->agents; *p && n < max;) {
        sc_agent *a = *p;
        bool used = false;
        for (sc_job *j = S->jobs; j && !used; j = j->next)
            for (int r = 0; r < j->cur_np && !used; r++)
                used = j->ranks[r].ag == a;
        if (a->up || used || a->conn || a->since >= cutoff) {
            p = &a->next;
            continue;
        }
        snprintf(keys[n++], SC_KEY_LEN, "%s", a->key);
        *p = a->next;
        free(a->caps);
        free(a);
    }
    return n;
}

/* ---- timers ---------------------------------------------------------------------- */

/* Finished jobs stay in memory while a rank still holds a slot and for a
 * minute after (retire_after_us); then their record lives on in the
 * database only. */
static void retire(sched *S, sc_clock now)
{
    for (sc_job **p = &S->jobs; *p;) {
        sc_job *j = *p;
        bool holding = false;
        for (int r = 0; r < j->cur_np && !holding; r++)
            holding = j->ranks[r].state != RS_EXITED && j->ranks[r].ag && j->ranks[r].ag->up;
        const double after = S->cfg.retire_after_us > 0 ? (double)S->cfg.retire_after_us / 1e6 : 60.0;
        if (job_state_terminal(j->state) && !holding && now.wall - j->finished > after) {
            *p = j->next;
            for (int r = 0; r < j->cur_np; r++)
                sc_rank_exit(&j->ranks[r]);
            sc_job_free(j);
        } else {
            p = &j->next;
        }
    }
}

void sched_tick(sched *S, sc_clock now)
{
    for (sc_job *j = S->jobs; j; j = j->next) {
        if (j->state == JOB_STARTING && !j->reconciling && now.mono_ns > j->prepare_deadline_ns &&
            j->prepared < j->cur_np) {
            for (int r = 0; r < j->cur_np; r++)
                if (j->ranks[r].state == RS_PREPARING) {
                    char why[512];
                    snprintf(why, sizeof why, "agent %s did not prepare rank %d in time",
                             j->ranks[r].agent_key, r);
                    j->have_failure = true;
                    sc_attempt_failed(S, j, why, true, now);
                    break;
                }
        }
        if (!job_state_terminal(j->state) && j->deadline_us > 0 && j->started > 0 &&
            now.wall - j->started > (double)j->deadline_us / 1e6) {
            char why[256];
            snprintf(why, sizeof why, "deadline of %.0f s exceeded", (double)j->deadline_us / 1e6);
            sc_send_abort(S, j, why);
            sc_finish(S, j, JOB_FAILED, why, now);
        }
        if (j->peer_failure && !failure_decided(j) &&
            now.mono_ns - j->peer_at_ns > (int64_t)SC_PEER_GRACE_S * 1000000000)
            decide_held(S, j, now);
        /* after a coordinator restart: ranks whose agents never came back */
        if (j->reconciling && now.mono_ns > S->reconcile_until_ns) {
            for (int r = 0; r < j->cur_np && j->reconciling; r++)
                if (j->ranks[r].state == RS_NONE) {
                    char why[256];
                    snprintf(why, sizeof why,
                             "was not reported: its agent did not reconnect within %.0f s of the "
                             "coordinator restart",
                             (double)S->cfg.reconcile_timeout_us / 1e6);
                    rank_unaccounted(S, j, r, why, now);
                }
            reconcile_check(S, j);
        }
    }
    sc_queue_pass(S, now);
    retire(S, now);
}
