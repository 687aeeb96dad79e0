/* scheduler.c — the scheduler's model and the job life cycle (see scheduler.h):
 * submissions, agents coming and going, the agents' reports, failures and
 * restarts, timers.  Placement and the queue are in scheduler_queue.c. */
#include "scheduler.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_hex.h"
#include "rt_proto.h"
#include "rt_run.h"
#include "rt_schemas.h"
#include "scheduler_impl.h"

static const char *const RANK_STATES[] = {"none",     "preparing", "prepared",
                                          "starting", "running",   "exited"};

const char *job_state_name(int s) { return rt_job_state_name(s); }
const char *job_type_name(int t)
{
    return t == RT_JOB_EXEC ? "exec" : t == RT_JOB_SWEEP ? "sweep" : "train";
}
bool job_state_terminal(int s) { return rt_job_state_terminal(s); }
const char *rank_state_name(int s) { return s >= 0 && s <= RS_EXITED ? RANK_STATES[s] : "?"; }

int job_state_parse(const char *name) { return rt_job_state_parse(name); }

int rank_state_parse(const char *name)
{
    for (int s = 0; name && s <= RS_EXITED; s++)
        if (strcmp(RANK_STATES[s], name) == 0)
            return s;
    return RS_NONE;
}

/* ---- the model -------------------------------------------------------------- */

void sched_init(sched *S, const sc_config *cfg)
{
    memset(S, 0, sizeof *S);
    S->cfg = *cfg;
    S->next_id = 1;
}

void sc_job_free(sc_job *j)
{
    if (!j)
        return;
    free(j->spec);
    rt_json_free(j->specj);
    rt_cfg_free(&rt_job_schema, &j->cfg);
    free(j->ranks);
    free(j->first_failure);
    free(j->peer_failure);
    free(j->peer_why);
    free(j->progress);
    free(j->last_epoch);
    free(j->steps);
    sc_sweep_free(j->sweep);
    free(j);
}

void sched_free(sched *S)
{
    while (S->agents) {
        sc_agent *a = S->agents;
        S->agents = a->next;
        free(a->caps);
        free(a);
    }
    while (S->jobs) {
        sc_job *j = S->jobs;
        S->jobs = j->next;
        sc_job_free(j);
    }
    sched_actions_clear(S);
    free(S->out);
    S->out = NULL;
    S->capout = 0;
}

sc_job *sched_job(sched *S, int64_t id)
{
    for (sc_job *j = S->jobs; j; j = j->next)
        if (j->id == id)
            return j;
    return NULL;
}

sc_agent *sched_agent(sched *S, const char *key)
{
    for (sc_agent *a = S->agents; a; a = a->next)
        if (strcmp(a->key, key) == 0)
            return a;
    return NULL;
}

int sched_total_slots(const sched *S)
{
    int n = 0;
    for (const sc_agent *a = S->agents; a; a = a->next)
        n += a->slots;
    return n;
}

int sched_free_slots(const sched *S)
{
    int n = 0;
    for (const sc_agent *a = S->agents; a; a = a->next)
        if (a->up && !a->draining && a->slots > a->used)
            n += a->slots - a->used;
    return n;
}

/* A rank holds a slot of its agent until it has exited. */
void sc_rank_bind(sc_rank *s, sc_agent *a)
{
    if (s->ag == a)
        return;
    if (s->ag && s->state != RS_EXITED && s->ag->used > 0)
        s->ag->used--;
    s->ag = a;
    if (a && s->state != RS_EXITED)
        a->used++;
}

void sc_rank_exit(sc_rank *s)
{
    if (s->ag && s->state != RS_EXITED && s->ag->used > 0)
        s->ag->used--;
    s->state = RS_EXITED;
}

/* ---- actions ---------------------------------------------------------------- */

const sc_action *sched_actions(const sched *S, int *n)
{
    *n = S->nout;
    return S->out;
}

void sched_actions_clear(sched *S)
{
    for (int i = 0; i < S->nout; i++)
        free(S->out[i].text);
    S->nout = 0;
}

void sc_emit(sched *S, sc_act_kind kind, int64_t job, const char *agent, const char *tag,
             char *text)
{
    if (S->nout == S->capout) {
        int nc = S->capout ? 2 * S->capout : 64;
        sc_action *o = realloc(S->out, (size_t)nc * sizeof *o);
        RT_ASSERT(o); /* a few hundred bytes: out of memory here is fatal anyway */
        S->out = o;
        S->capout = nc;
    }
    sc_action *a = &S->out[S->nout++];
    memset(a, 0, sizeof *a);
    a->kind = kind;
    a->job = job;
    a->rank = -1;
    if (agent)
        snprintf(a->agent, sizeof a->agent, "%s", agent);
    if (tag)
        snprintf(a->tag, sizeof a->tag, "%s", tag);
    a->text = text;
}

void sc_event(sched *S, const sc_job *j, const char *kind, const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    sc_emit(S, SC_EVENT, j->id, NULL, kind, msg);
    S->out[S->nout - 1].attempt = j->attempt;
}

void sc_job_saved(sched *S, const sc_job *j) { sc_emit(S, SC_SAVE_JOB, j->id, NULL, NULL, NULL); }

void sc_attempt_saved(sched *S, const sc_job *j, const char *state, const char *reason)
{
    sc_emit(S, SC_SAVE_ATTEMPT, j->id, NULL, state, strdup(reason ? reason : ""));
    S->out[S->nout - 1].attempt = j->attempt;
}

void sc_rank_saved(sched *S, const sc_job *j, int r)
{
    sc_emit(S, SC_SAVE_RANK, j->id, NULL, NULL, NULL);
    S->out[S->nout - 1].rank = r;
    S->out[S->nout - 1].attempt = j->attempt;
}

void sc_agent_saved(sched *S, const sc_agent *a)
{
    sc_emit(S, SC_SAVE_AGENT, 0, a->key, NULL, NULL);
}

static void send(sched *S, const sc_agent *a, rt_jw *w)
{
    char *text = rt_jw_take(w, NULL);
    if (text)
        sc_emit(S, SC_SEND, 0, a->key, NULL, text);
}

/* ---- messages to agents ----------------------------------------------------- */

/* {"type": type, "job", "attempt"[, "size"] ... (the caller ends the object) */
static void msg_begin(rt_jw *w, rt_msg type, const sc_job *j, int size)
{
    rt_jw_init(w);
    rt_jw_obj(w);
    rt_jw_kstr(w, RT_F_TYPE, rt_msg_name(type));
    rt_jw_kint(w, RT_F_JOB, j->id);
    rt_jw_kint(w, RT_F_ATTEMPT, j->attempt);
    if (size >= 0)
        rt_jw_kint(w, RT_F_SIZE, size);
}

void sc_send_abort_attempt(sched *S, const sc_agent *a, int64_t job, int64_t attempt,
                               const char *reason)
{
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, RT_F_TYPE, rt_msg_name(RT_MSG_ABORT));
    rt_jw_kint(&w, RT_F_JOB, job);
    rt_jw_kint(&w, RT_F_ATTEMPT, attempt);
    rt_jw_kstr(&w, RT_F_REASON, reason);
    rt_jw_obj_end(&w);
    send(S, a, &w);
}

/* Whether rank r is the first of the attempt's ranks on its agent (one
 * message per agent lists all of that agent's ranks). */
static bool first_of_agent(const sc_job *j, int r)
{
    for (int q = 0; q < r; q++)
        if (j->ranks[q].ag == j->ranks[r].ag)
            return false;
    return true;
}

void sc_send_abort(sched *S, sc_job *j, const char *reason)
{
    for (int r = 0; r < j->cur_np; r++) {
        sc_agent *a = j->ranks[r].ag;
        if (!a || !a->up || j->ranks[r].state == RS_EXITED)
            continue;
        bool sent = false; /* once per agent: it stops all its ranks of the attempt */
        for (int q = 0; q < r && !sent; q++)
            sent = j->ranks[q].ag == a && j->ranks[q].state != RS_EXITED;
        if (!sent)
            sc_send_abort_attempt(S, a, j->id, j->attempt, reason);
    }
}

/* The attempt's ring settings, "auto" resolved from its placement
 * (rt_run_resolve_transport: the one rule, also a Slurm step's). */
static void run_settings(const sc_job *j, rt_run_settings *rs)
{
    rt_job_run_settings(&j->cfg, rs);
    bool all_gpu = j->type == RT_JOB_TRAIN, all_rdma = true, one_host = true;
    for (int r = 0; r < j->cur_np; r++) {
        const sc_agent *a = j->ranks[r].ag, *a0 = j->ranks[0].ag;
        all_gpu = all_gpu && a && a->cuda && a->nccl;
        all_rdma = all_rdma && a && a->rdma;
        one_host = one_host && a && a0 && strcmp(a->host_id, a0->host_id) == 0;
    }
    const char *tp =
        rt_run_resolve_transport(rs->transport, all_gpu, one_host, j->cur_np, all_rdma);
    if (tp != rs->transport) /* a name of its own when "auto" was resolved */
        snprintf(rs->transport, sizeof rs->transport, "%s", tp);
}

void sc_send_start(sched *S, sc_job *j, sc_clock now)
{
    char key[65];
    rt_hex_encode(j->key, sizeof j->key, key);
    rt_run_settings rs;
    run_settings(j, &rs);
    const char *transport = rs.transport;
    const rt_job_cfg *c = &j->cfg;
    /* one frame, the same for every agent of the attempt */
    rt_jw w;
    msg_begin(&w, RT_MSG_START, j, j->cur_np);
    {
        rt_jw_kstr(&w, RT_F_JOB_TYPE, j->type == RT_JOB_EXEC ? "exec" : "train");
        if (j->sweep_id) /* a sweep's jobs run as the sweep's uid (job_uids) */
            rt_jw_kint(&w, RT_F_IDENTITY_JOB, j->sweep_id);
        rt_jw_kstr(&w, RT_F_KEY, key);
        rt_run_write_json(&rs, &w); /* the ring's settings, one list (rt_run.h) */
        rt_jw_kint(&w, RT_F_MAX_RESTARTS, j->max_restarts);
        if (j->unix_user[0])
            rt_jw_kstr(&w, RT_F_UNIX_USER, j->unix_user);
        if (c->memory_limit > 0)
            rt_jw_kint(&w, RT_F_MEMORY_LIMIT, (int64_t)c->memory_limit);
        if (c->cpu_limit > 0)
            rt_jw_knum(&w, RT_F_CPU_LIMIT, c->cpu_limit);
        if (c->disk_limit > 0)
            rt_jw_kint(&w, RT_F_DISK_LIMIT, (int64_t)c->disk_limit);
        if (j->master_port > 0)
            rt_jw_kint(&w, RT_F_MASTER_PORT, j->master_port);
        rt_jw_key(&w, RT_F_PEERS);
        rt_jw_arr(&w);
        for (int q = 0; q < j->cur_np; q++)
            rt_jw_str(&w, j->ranks[q].addr);
        rt_jw_arr_end(&w);
        const char *fields[] = {RT_F_ARGV, RT_F_ENV, RT_F_CWD, RT_F_CONFIG, RT_F_SWEEP_RESULTS};
        for (size_t f = 0; f < RT_ARRAY_LEN(fields); f++) {
            const rt_json *v = rt_json_get(j->specj, fields[f]);
            if (v) {
                rt_jw_key(&w, fields[f]);
                rt_jw_value(&w, v);
            }
        }
        rt_jw_obj_end(&w);
    }
    size_t len = 0;
    char *text = rt_jw_take(&w, &len);
    if (!text || len > RT_FRAME_MAX) {
        char why[300];
        snprintf(why, sizeof why,
                 "its start message is %zu bytes, more than the %u a control frame may hold "
                 "(%d ranks' addresses and its argv, env and config): make those smaller",
                 len, RT_FRAME_MAX, j->cur_np);
        free(text);
        sc_send_abort(S, j, why); /* the agents release the prepared ranks */
        for (int r = 0; r < j->cur_np; r++)
            sc_rank_exit(&j->ranks[r]);
        sc_finish(S, j, JOB_FAILED, why, now);
        return;
    }
    for (int r = 0; r < j->cur_np; r++) {
        sc_agent *a = j->ranks[r].ag;
        if (!first_of_agent(j, r))
            continue;
        char *copy = strdup(text);
        if (copy)
            sc_emit(S, SC_SEND, 0, a->key, NULL, copy);
        for (int q = r; q < j->cur_np; q++)
            if (j->ranks[q].ag == a)
                j->ranks[q].state = RS_STARTING;
    }
    free(text);
    sc_event(S, j, "launching", "attempt %d: all %d ranks prepared, transport %s", j->attempt,
             j->cur_np, transport);
}

void sc_start_attempt(sched *S, sc_job *j, int np, sc_clock now)
{
    j->attempt++;
    j->prepared = j->running = j->exited_ok = j->warnings = 0;
    j->have_failure = false;
    sc_peer_failure_clear(j);
    j->reconciling = false;
    j->launch_unsure = false;
    j->queue_pos = 0;
    j->prepare_deadline_ns = now.mono_ns + S->cfg.prepare_timeout_us * 1000;
    S->cfg.random(j->key, sizeof j->key);
    j->state = JOB_STARTING;
    j->reason[0] = '\0';
    sc_attempt_saved(S, j, "starting", "");
    sc_emit(S, SC_SAVE_RANKS, j->id, NULL, NULL, NULL);
    S->out[S->nout - 1].attempt = j->attempt;
    sc_job_saved(S, j);
    char hosts[256] = "";
    size_t hl = 0;
    for (int r = 0; r < np && hl < sizeof hosts - 40; r++)
        if (r == 0 || strcmp(j->ranks[r].host_id, j->ranks[r - 1].host_id) != 0)
            hl += (size_t)snprintf(hosts + hl, sizeof hosts - hl, "%s%s", hl ? ", " : "",
                                   j->ranks[r].hostname);
    sc_event(S, j, "starting", "attempt %d on %d ranks (hosts: %s)", j->attempt, np, hosts);
    /* hosts in placement order (each host's ranks are contiguous) */
    int nodes = 0;
    for (int r = 0; r < np; r++)
        nodes += r == 0 || strcmp(j->ranks[r].host_id, j->ranks[r - 1].host_id) != 0;
    j->master_port = 0;
    /* one prepare per agent, listing its ranks */
    for (int r = 0; r < np; r++) {
        sc_agent *a = j->ranks[r].ag;
        if (!first_of_agent(j, r))
            continue;
        rt_jw w;
        msg_begin(&w, RT_MSG_PREPARE, j, np);
        rt_jw_key(&w, RT_F_RANKS);
        rt_jw_arr(&w);
        int node = 0;
        for (int q = 0; q < np; q++) {
            node += q > 0 && strcmp(j->ranks[q].host_id, j->ranks[q - 1].host_id) != 0;
            if (j->ranks[q].ag == a && q >= r) {
                const sc_rank *s = &j->ranks[q];
                rt_jw_obj(&w);
                rt_jw_kint(&w, RT_F_RANK, q);
                rt_jw_kint(&w, RT_F_NODE_RANK, node);
                rt_jw_kint(&w, RT_F_NODES, nodes);
                rt_jw_kint(&w, RT_F_LOCAL_RANK, s->local_rank);
                rt_jw_kint(&w, RT_F_LOCAL_SIZE, s->local_size);
                if (s->machine_ranks > 0)
                    rt_jw_kint(&w, RT_F_MACHINE_RANKS, s->machine_ranks);
                rt_jw_kint(&w, RT_F_CROSS_RANK, s->cross_rank);
                rt_jw_kint(&w, RT_F_CROSS_SIZE, s->cross_size);
                rt_jw_obj_end(&w);
            }
        }
        rt_jw_arr_end(&w);
        rt_jw_obj_end(&w);
        send(S, a, &w);
    }
}

/* ---- outcomes ------------------------------------------------------------------ */

void sc_finish(sched *S, sc_job *j, int state, const char *reason, sc_clock now)
{
    /* the attempt's record ends too, unless it already ended (a job that
     * never started, or one waiting to restart) */
    bool attempt_live = j->state == JOB_STARTING || j->state == JOB_RUNNING;
    j->state = state;
    j->queue_pos = 0;
    j->reconciling = false;
    snprintf(j->reason, sizeof j->reason, "%s", reason);
    j->finished = now.wall;
    if (attempt_live)
        sc_attempt_saved(S, j, job_state_name(state), reason);
    sc_job_saved(S, j);
    sc_event(S, j, job_state_name(state), "%s", reason);
    sc_sweep_job_ended(S, j, now); /* a trial's record; a sweep's trials */
}

/* The attempt failed: stop every rank, then restart or fail the job.  A
 * restart counts against max_restarts unless `counted` is false (the
 * coordinator itself interrupted the attempt). */
void sc_attempt_failed(sched *S, sc_job *j, const char *reason, bool counted, sc_clock now)
{
    sc_send_abort(S, j, reason);
    sc_attempt_saved(S, j, "failed", reason);
    snprintf(j->last_failure, sizeof j->last_failure, "%s", reason);
    j->reconciling = false;
    if (!counted || j->restarts < j->max_restarts) {
        if (counted)
            j->restarts++;
        j->state = JOB_RESTARTING;
        j->queued_at = now.wall;
        if (counted)
            snprintf(j->reason, sizeof j->reason, "%s; restarting (%d of %d)", reason,
                     j->restarts, j->max_restarts);
        else
            snprintf(j->reason, sizeof j->reason, "%s; starting again", reason);
        sc_job_saved(S, j);
        sc_event(S, j, "restarting", "%s", j->reason);
    } else {
        char why[1100];
        snprintf(why, sizeof why, "%s%s", reason, j->max_restarts ? " (no restarts left)" : "");
        j->state = JOB_RESTARTING; /* the attempt's record is written above */
        sc_finish(S, j, JOB_FAILED, why, now);
    }
}

/* The first failure of the attempt, kept as a JSON object. */
void sc_set_first_failure(sc_job *j, rt_jw *w)
{
    free(j->first_failure);
    j->first_failure = rt_jw_take(w, NULL);
    j->have_failure = true;
    sc_peer_failure_clear(j); /* decided: the held one was a consequence */
}

void sc_peer_failure_clear(sc_job *j)
{
    free(j->peer_failure);
    free(j->peer_why);
    j->peer_failure = j->peer_why = NULL;
    j->peer_at_ns = 0;
}

/* ---- submissions --------------------------------------------------------------- */

/* The submission parsed by the job schema (sc_parse_spec) and checked
 * against the cluster here, so that nothing malformed reaches the agents
 * (and a stored job reads back). */
static rt_status submit(sched *S, const char *body, size_t len, const char *user,
                        const char *unix_user, const sc_job *parent, sc_clock now, int64_t *id,
                        char *err)
{
    rt_json *s = NULL;
    rt_status st = rt_json_parse(body, len, &s, err);
    if (st != RT_OK)
        return st;
    sc_job *j = calloc(1, sizeof *j);
    if (!j) {
        rt_json_free(s);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    j->specj = s;
    st = sc_parse_spec(S, j, s, err);
    if (st == RT_OK && !parent &&
        (rt_json_get(s, RT_F_SWEEP) || rt_json_get(s, RT_F_TRIAL) ||
         rt_json_get(s, RT_F_SWEEP_RESULTS)))
        st = rt_err(err, RT_ERR_INVALID,
                    "\"%s\", \"%s\" and \"%s\" are set by the "
                    "coordinator for a sweep's own jobs, not by a submission",
                    RT_F_SWEEP, RT_F_TRIAL, RT_F_SWEEP_RESULTS);
    if (st == RT_OK && j->type == RT_JOB_SWEEP)
        st = sc_sweep_init(j, err);
    int total = sched_total_slots(S), nagents = 0;
    for (const sc_agent *a = S->agents; a; a = a->next)
        nagents++;
    if (st == RT_OK && j->np > total)
        st = nagents == 0 ? rt_err(err, RT_ERR_INVALID,
                                   "the job asks for %d ranks but no agent has registered yet",
                                   j->np)
                          : rt_err(err, RT_ERR_INVALID,
                                   "the job asks for %d ranks but the whole cluster has %d slots "
                                   "(%d agent%s)",
                                   j->np, total, nagents, nagents == 1 ? "" : "s");
    /* with limits, only agents that enforce them count (known once each has
     * said hello since the coordinator started: a down one may yet) */
    int able = 0, down = 0;
    for (const sc_agent *a = S->agents; a; a = a->next) {
        down += !a->up;
        able += sc_enforces(a, j) ? a->slots : 0;
    }
    if (st == RT_OK && (j->need_mem || j->need_cpu) && nagents > 0 && down == 0 && j->np > able)
        st = rt_err(err, RT_ERR_INVALID,
                    "the job asks for %d ranks with %s, but the agents that can enforce it have "
                    "%d slots (`ringtrain nodes`: the limits: each agent enforces, none where it "
                    "cannot enable cgroup v2's memory and cpu controllers; its log says why)",
                    j->np, sc_limits_name(j), able);
    /* what its start message will carry must fit in a frame, with every
     * rank's address (at most ~64 bytes each) */
    if (st == RT_OK && len + (size_t)j->np * 64 + 4096 > RT_FRAME_MAX)
        st = rt_err(err, RT_ERR_INVALID,
                    "the job's description is %zu bytes: with %d ranks its start message would "
                    "pass the %u-byte limit of a control frame (a smaller config, env or argv)",
                    len, j->np, RT_FRAME_MAX);
    int waiting = 0; /* a flood of jobs from one token stops here (a sweep's own jobs are
                        bound by its parallel) */
    for (const sc_job *o = S->jobs; st == RT_OK && !parent && o; o = o->next)
        waiting += o->state == JOB_QUEUED && !strcmp(o->user, user && *user ? user : "?");
    if (st == RT_OK && S->cfg.max_queued_per_user > 0 && waiting >= S->cfg.max_queued_per_user)
        st = rt_err(err, RT_ERR_BUSY,
                    "%s already has %d jobs waiting in the queue ([jobs] max_queued_per_user): "
                    "submit more once some have started",
                    user && *user ? user : "?", waiting);
    if (st == RT_OK && !(j->spec = strndup(body, len)))
        st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    if (st != RT_OK) {
        sc_job_free(j);
        return st;
    }
    snprintf(j->user, sizeof j->user, "%s", user && *user ? user : "?");
    snprintf(j->unix_user, sizeof j->unix_user, "%s", unix_user ? unix_user : "");
    j->held = rt_json_bool(rt_json_get(s, "hold"), false);
    j->id = S->next_id++;
    j->state = JOB_QUEUED;
    j->created = j->queued_at = now.wall;
    sc_job **tail = &S->jobs;
    while (*tail)
        tail = &(*tail)->next;
    *tail = j;
    sc_job_saved(S, j);
    if (j->type == RT_JOB_SWEEP) /* its record: monitor, rungs */
        sc_trial_saved(S, j, 0);
    if (parent)
        sc_event(S, j, "submitted", "%s of sweep %lld, for %d ranks",
                 j->trial ? "a trial" : "the last step", (long long)parent->id, j->np);
    else
        sc_event(S, j, "submitted", "%s job '%s' for %d ranks by %s%s", job_type_name(j->type),
                 j->name, j->np, j->user, j->held ? " (held)" : "");
    *id = j->id;
    return RT_OK;
}

rt_status sched_submit(sched *S, const char *body, size_t len, const char *user,
                       const char *unix_user, sc_clock now, int64_t *id, char *err)
{
    rt_status st = submit(S, body, len, user, unix_user, NULL, now, id, err);
    if (st == RT_OK)
        sc_queue_pass(S, now);
    return st;
}

rt_status sc_submit_child(sched *S, const sc_job *sweep, const char *body, size_t len, sc_clock now,
                          int64_t *id, char *err)
{
    return submit(S, body, len, sweep->user, sweep->unix_user, sweep, now, id, err);
}

rt_status sched_cancel(sched *S, int64_t id, sc_clock now, char *err)
{
    sc_job *j = sched_job(S, id);
    if (!j || job_state_terminal(j->state))
        return rt_err(err, j ? RT_ERR_INVALID : RT_ERR_NOTFOUND,
                      j ? "job %lld has already %s" : "job %lld is not running or queued",
                      (long long)id, j ? job_state_name(j->state) : "");
    sc_send_abort(S, j, "cancelled");
    sc_finish(S, j, JOB_CANCELLED, "cancelled by request", now);
    sc_queue_pass(S, now);
    return RT_OK;
}

rt_status sched_hold(sched *S, int64_t id, bool hold, sc_clock now, char *err)
{
    sc_job *j = sched_job(S, id);
    if (!j)
        return rt_err(err, RT_ERR_NOTFOUND, "job %lld is not running or queued", (long long)id);
    if (j->type == RT_JOB_SWEEP && j->state == JOB_RUNNING) { /* no new trials meanwhile */
        if (j->held != hold) {
            j->held = hold;
            sc_job_saved(S, j);
            sc_event(S, j, hold ? "held" : "released",
                     hold ? "held: its running trials go on; no new trial starts until released"
                          : "released: new trials may start");
        }
        sc_queue_pass(S, now);
        return RT_OK;
    }
    if (j->state != JOB_QUEUED)
        return rt_err(err, RT_ERR_INVALID, "job %lld is %s: only a queued job can be %s",
                      (long long)id, job_state_name(j->state), hold ? "held" : "released");
    if (j->held == hold)
        return RT_OK;
    j->held = hold;
    sc_job_saved(S, j);
    sc_event(S, j, hold ? "held" : "released", hold ? "held: it will not start until released"
                                                    : "released: it may start");
    sc_queue_pass(S, now);
    return RT_OK;
}

rt_status sched_drain(sched *S, const char *who, bool drain, sc_clock now, char *err)
{
    sc_agent *a = sched_agent(S, who);
    int matches = 0;
    if (!a)
        for (sc_agent *b = S->agents; b; b = b->next)
            if (strcmp(b->name, who) == 0 || strcmp(b->hostname, who) == 0) {
                a = b;
                matches++;
            }
    if (!a)
        return rt_err(err, RT_ERR_NOTFOUND, "no agent %s (use `ringtrain nodes`)", who);
    if (matches > 1)
        return rt_err(err, RT_ERR_INVALID, "%d agents are called %s: give its host_id/name",
                      matches, who);
    if (a->draining != drain) {
        a->draining = drain;
        sc_agent_saved(S, a);
    }
    sc_queue_pass(S, now);
    return RT_OK;
}

sc_agent *sc_agent_new(sched *S, const char *key)
{
    sc_agent *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    snprintf(a->key, sizeof a->key, "%s", key);
    sc_agent **tail = &S->agents;
    while (*tail)
        tail = &(*tail)->next;
    *tail = a;
    return a;
}

/* ---- restoring ------------------------------------------------------------------- */

sc_agent *sched_restore_agent(sched *S, const char *key, const char *host_id, const char *name,
                              const char *hostname, int slots, bool draining, double since)
{
    sc_agent *a = sched_agent(S, key);
    if (!a && !(a = sc_agent_new(S, key)))
        return NULL;
    snprintf(a->host_id, sizeof a->host_id, "%s", host_id ? host_id : "");
    snprintf(a->name, sizeof a->name, "%s", name ? name : "");
    snprintf(a->hostname, sizeof a->hostname, "%s", hostname ? hostname : "");
    a->slots = slots;
    a->draining = draining;
    a->up = false;
    a->since = since;
    return a;
}

sc_job *sched_restore_job(sched *S, int64_t id, const char *spec, const char *user, int state,
                          const char *reason, int attempt, int restarts, bool held,
                          double created, double started, double queued_at,
                          double attempt_started, sc_clock now, char *err)
{
    sc_job *j = calloc(1, sizeof *j);
    if (!j) {
        rt_err(err, RT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (!spec || rt_json_parse(spec, strlen(spec), &j->specj, err) != RT_OK ||
        sc_parse_spec(S, j, j->specj, err) != RT_OK ||
        (j->type == RT_JOB_SWEEP && sc_sweep_init(j, err) != RT_OK) || !(j->spec = strdup(spec))) {
        sc_job_free(j);
        return NULL;
    }
    j->id = id;
    snprintf(j->user, sizeof j->user, "%s", user ? user : "?");
    j->state = state;
    snprintf(j->reason, sizeof j->reason, "%s", reason ? reason : "");
    j->attempt = attempt;
    j->restarts = restarts;
    j->held = held;
    j->created = created;
    j->started = started;
    j->queued_at = queued_at > 0 ? queued_at : created;
    j->attempt_started = attempt_started;
    /* placed jobs are reconciled with the agents' reports */
    j->reconciling = j->type != RT_JOB_SWEEP && (state == JOB_STARTING || state == JOB_RUNNING);
    j->launch_unsure = j->reconciling && state == JOB_STARTING;
    if (j->reconciling)
        S->reconcile_until_ns = now.mono_ns + S->cfg.reconcile_timeout_us * 1000;
    if (id >= S->next_id)
        S->next_id = id + 1;
    sc_job **tail = &S->jobs;
    while (*tail)
        tail = &(*tail)->next;
    *tail = j;
    return j;
}

void sched_restore_rank(sched *S, sc_job *j, int rank, const char *agent_key, const char *host_id,
                        const char *hostname, int local_rank, int local_size, int cross_rank,
                        int cross_size, const char *addr, int64_t pid, const char *state,
                        int exit_code, int exit_signal, const char *gpu)
{
    if (rank < 0 || rank >= 65536)
        return;
    if (rank >= j->cur_np) {
        sc_rank *g = realloc(j->ranks, (size_t)(rank + 1) * sizeof *g);
        RT_ASSERT(g);
        memset(g + j->cur_np, 0, (size_t)(rank + 1 - j->cur_np) * sizeof *g);
        j->ranks = g;
        j->cur_np = rank + 1;
    }
    sc_rank *s = &j->ranks[rank];
    snprintf(s->agent_key, sizeof s->agent_key, "%s", agent_key ? agent_key : "");
    snprintf(s->host_id, sizeof s->host_id, "%s", host_id ? host_id : "");
    snprintf(s->hostname, sizeof s->hostname, "%s", hostname ? hostname : "");
    snprintf(s->addr, sizeof s->addr, "%s", addr ? addr : "");
    s->local_rank = local_rank;
    s->local_size = local_size;
    s->cross_rank = cross_rank;
    s->cross_size = cross_size;
    s->pid = pid;
    snprintf(s->gpu, sizeof s->gpu, "%s", gpu ? gpu : "");
    s->state = RS_NONE; /* unknown until its agent reports */
    if (state && strcmp(state, rank_state_name(RS_EXITED)) == 0) {
        s->state = RS_EXITED;
        s->exit_code = exit_code;
        s->exit_signal = exit_signal;
        j->exited_ok += exit_code == 0 && exit_signal == 0;
    }
    sc_rank_bind(s, sched_agent(S, s->agent_key));
}
