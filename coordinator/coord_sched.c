/* coord_sched.c — placement, gang start and the job life cycle.
 *
 * Placement (Horovod's get_host_assignments): agents are grouped by host id;
 * hosts are taken in order, each filled with as many ranks as its free
 * slots allow, so ranks are contiguous per host and the ring's hops stay
 * local.  local_rank / local_size are the position and count on the host;
 * cross_rank / cross_size are the position and count of the host among the
 * hosts that have a rank with the same local_rank (for equal hosts: the
 * host's index and the number of hosts).
 *
 * Gang start: every rank's agent first binds its rank's data-plane socket
 * ("prepare", answered with the address); only when all have answered does
 * anyone start ("start", with the full ring and the attempt's key).  A job
 * waits Queued until enough slots are free, at most start_timeout.
 *
 * Life cycle: queued -> starting -> running -> succeeded | failed |
 * cancelled, with restarting in between when a failure leaves restarts.
 * The first failure of an attempt (rank, host, exit code or signal, last
 * lines of output) is kept; every other rank is then aborted. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "rt_log.h"
#include "rt_time.h"
#include "rt_hex.h"

static const char *const STATE_NAMES[] = {"queued",    "starting", "running",  "restarting",
                                          "succeeded", "failed",   "cancelled"};
const char *job_state_name(int s) { return s >= 0 && s <= JOB_CANCELLED ? STATE_NAMES[s] : "?"; }
bool job_state_terminal(int s) { return s == JOB_SUCCEEDED || s == JOB_FAILED || s == JOB_CANCELLED; }

void job_free(job *j)
{
    if (!j)
        return;
    free(j->spec);
    rt_json_free(j->specj);
    free(j->ranks);
    free(j->first_failure);
    free(j->progress);
    free(j);
}

job *sched_job(coord *co, int64_t id)
{
    for (job *j = co->jobs; j; j = j->next)
        if (j->id == id)
            return j;
    return NULL;
}

static int64_t spec_int(const job *j, const char *key, int64_t def)
{
    int64_t v;
    return rt_json_get_int(j->specj, key, &v) ? v : def;
}

/* ---- submission ------------------------------------------------------------ */

rt_status sched_submit(coord *co, const char *body, size_t len, int64_t *id, char *err)
{
    rt_json *s = NULL;
    rt_status st = rt_json_parse(body, len, &s, err);
    if (st != RT_OK)
        return st;
    const char *type = rt_json_get_str(s, "type");
    int64_t np = 0, v;
    if (!type || (strcmp(type, "exec") != 0 && strcmp(type, "train") != 0)) {
        st = rt_err(err, RT_ERR_INVALID, "\"type\" must be \"exec\" or \"train\"");
    } else if (!rt_json_get_int(s, "np", &np) || np < 1 || np > 65536) {
        st = rt_err(err, RT_ERR_INVALID, "\"np\" must be an integer in [1, 65536]");
    } else if (strcmp(type, "exec") == 0) {
        const rt_json *argv = rt_json_get(s, "argv");
        if (rt_json_len(argv) == 0)
            st = rt_err(err, RT_ERR_INVALID, "an exec job needs a non-empty \"argv\" array");
        for (size_t i = 0; st == RT_OK && i < rt_json_len(argv); i++)
            if (!rt_json_str(rt_json_at(argv, i), NULL))
                st = rt_err(err, RT_ERR_INVALID, "\"argv\" must hold strings");
        const rt_json *cwd = rt_json_get(s, "cwd");
        if (st == RT_OK && cwd && (!rt_json_str(cwd, NULL) || rt_json_str(cwd, "")[0] != '/'))
            st = rt_err(err, RT_ERR_INVALID, "\"cwd\" must be an absolute path");
    } else {
        /* a training job carries its whole configuration: check it here too,
         * so nothing malformed reaches the agents */
        const char *cfg = rt_json_get_str(s, "config");
        rt_job_cfg jc;
        rt_cfg_errors e = {0};
        if (!cfg)
            st = rt_err(err, RT_ERR_INVALID, "a train job needs its \"config\" text");
        else if (rt_cfg_load_string(&rt_job_schema, cfg, strlen(cfg), "job", NULL, &jc, &e) !=
                 RT_OK) {
            char all[RT_ERR_LEN];
            rt_cfg_errors_join(&e, all, sizeof all);
            st = rt_err(err, RT_ERR_INVALID, "%s", all);
        }
        if (cfg)
            rt_cfg_free(&rt_job_schema, &jc);
        rt_cfg_errors_free(&e);
    }
    int64_t min_np = 0;
    if (st == RT_OK && rt_json_get_int(s, "min_np", &min_np) && (min_np < 0 || min_np > np))
        st = rt_err(err, RT_ERR_INVALID, "\"min_np\" must be in [0, np]");
    if (st != RT_OK) {
        rt_json_free(s);
        return st;
    }
    job *j = calloc(1, sizeof *j);
    if (!j || !(j->spec = strndup(body, len))) {
        free(j);
        rt_json_free(s);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    j->specj = s;
    snprintf(j->name, sizeof j->name, "%s", rt_json_str(rt_json_get(s, "name"), type));
    j->type = strcmp(type, "exec") == 0 ? RT_JOB_EXEC : RT_JOB_TRAIN;
    j->np = (int)np;
    j->state = JOB_QUEUED;
    j->created = coord_unix_now();
    j->queued_ns = rt_now_ns();
    if (cdb_job_insert(co, j) != RT_OK) {
        job_free(j);
        return rt_err(err, RT_ERR_IO, "cannot record the job in the state database");
    }
    (void)v;
    job **tail = &co->jobs;
    while (*tail)
        tail = &(*tail)->next;
    *tail = j;
    cdb_event(co, j->id, "submitted", "%s job '%s' for %d ranks", type, j->name, j->np);
    *id = j->id;
    sched_tick(co);
    return RT_OK;
}

/* ---- placement --------------------------------------------------------------- */

static int cmp_agents(const void *a, const void *b)
{
    const agent *x = *(agent *const *)a, *y = *(agent *const *)b;
    int c = strcmp(x->host_id, y->host_id);
    return c ? c : strcmp(x->name, y->name);
}

/* Free slots of up agents, sorted by host then name. */
static int free_agents(coord *co, agent **list, int *total)
{
    int n = 0;
    *total = 0;
    for (agent *a = co->agents; a; a = a->next)
        if (a->authed && a->up && a->slots > a->used) {
            list[n++] = a;
            *total += a->slots - a->used;
        }
    qsort(list, (size_t)n, sizeof *list, cmp_agents);
    return n;
}

static int count_agents(coord *co)
{
    int n = 0;
    for (agent *a = co->agents; a; a = a->next)
        n += a->authed;
    return n;
}

/* Place np ranks; false with the reason when the free slots do not suffice. */
static bool place(coord *co, job *j, int np, char *why, size_t whylen)
{
    agent *list[1024];
    int total, n = free_agents(co, list, &total);
    if (total < np) {
        int up = 0;
        for (agent *a = co->agents; a; a = a->next)
            up += a->authed && a->up;
        snprintf(why, whylen, "needs %d slots, %d free on %d agent%s (%d known)", np, total, up,
                 up == 1 ? "" : "s", count_agents(co));
        return false;
    }
    free(j->ranks);
    j->ranks = calloc((size_t)np, sizeof *j->ranks);
    if (!j->ranks) {
        snprintf(why, whylen, "out of memory");
        return false;
    }
    j->cur_np = np;
    /* fill hosts in order, contiguous ranks per host */
    int rank = 0, hosts = 0;
    int host_first[1024], host_size[1024];
    for (int i = 0; i < n && rank < np; i++) {
        bool new_host = i == 0 || strcmp(list[i]->host_id, list[i - 1]->host_id) != 0;
        if (new_host) {
            host_first[hosts] = rank;
            host_size[hosts++] = 0;
        }
        int take = list[i]->slots - list[i]->used;
        if (take > np - rank)
            take = np - rank;
        for (int k = 0; k < take; k++, rank++) {
            rank_slot *s = &j->ranks[rank];
            s->ag = list[i];
            snprintf(s->agent_key, sizeof s->agent_key, "%s", list[i]->key);
            snprintf(s->host_id, sizeof s->host_id, "%s", list[i]->host_id);
            snprintf(s->hostname, sizeof s->hostname, "%s", list[i]->hostname);
            s->local_rank = host_size[hosts - 1]++;
            s->state = RS_PREPARING;
        }
        list[i]->used += take;
    }
    /* local_size per host; cross communicators group equal local ranks */
    for (int h = 0; h < hosts; h++)
        for (int r = host_first[h]; r < host_first[h] + host_size[h]; r++) {
            rank_slot *s = &j->ranks[r];
            s->local_size = host_size[h];
            s->cross_rank = 0;
            s->cross_size = 0;
            for (int g = 0; g < hosts; g++)
                if (host_size[g] > s->local_rank) {
                    if (g < h)
                        s->cross_rank++;
                    s->cross_size++;
                }
        }
    return true;
}

static void release_slot(rank_slot *s)
{
    if (s->ag && s->ag->used > 0 && s->state != RS_EXITED)
        s->ag->used--;
}

/* ---- messages to agents ------------------------------------------------------ */

static void send_abort(coord *co, job *j, const char *reason)
{
    (void)co;
    agent *sent[1024];
    int ns = 0;
    for (int r = 0; r < j->cur_np; r++) {
        agent *a = j->ranks[r].ag;
        bool dup = false;
        for (int k = 0; k < ns && !dup; k++)
            dup = sent[k] == a;
        if (!a || dup || !a->up || j->ranks[r].state == RS_EXITED)
            continue;
        sent[ns++] = a;
        rt_jw w;
        rt_jw_init(&w);
        rt_jw_obj(&w);
        rt_jw_kstr(&w, "type", "abort");
        rt_jw_kint(&w, "job", j->id);
        rt_jw_kint(&w, "attempt", j->attempt);
        rt_jw_kstr(&w, "reason", reason);
        rt_jw_obj_end(&w);
        coord_send(a, &w);
    }
}

static void finish(coord *co, job *j, int state, const char *reason)
{
    /* the attempt's own record ends too, unless it already ended (a job
     * that never started, or one waiting to restart) */
    bool attempt_live = j->state == JOB_STARTING || j->state == JOB_RUNNING;
    j->state = state;
    snprintf(j->reason, sizeof j->reason, "%s", reason);
    j->finished = coord_unix_now();
    if (attempt_live)
        cdb_attempt(co, j, job_state_name(state), reason);
    cdb_job_update(co, j);
    cdb_event(co, j->id, job_state_name(state), "%s", reason);
}

/* The attempt failed: stop every rank, then restart or fail the job. */
static void attempt_failed(coord *co, job *j, const char *reason)
{
    send_abort(co, j, reason);
    cdb_attempt(co, j, "failed", reason);
    snprintf(j->last_failure, sizeof j->last_failure, "%s", reason);
    if (j->restarts < j->max_restarts) {
        j->restarts++;
        j->state = JOB_RESTARTING;
        j->queued_ns = rt_now_ns();
        snprintf(j->reason, sizeof j->reason, "%s; restarting (%d of %d)", reason, j->restarts,
                 j->max_restarts);
        cdb_job_update(co, j);
        cdb_event(co, j->id, "restarting", "%s", j->reason);
    } else {
        char why[1100];
        snprintf(why, sizeof why, "%s%s", reason,
                 j->max_restarts ? " (no restarts left)" : "");
        j->state = JOB_RESTARTING; /* the attempt's record is written above */
        finish(co, j, JOB_FAILED, why);
    }
}

/* Whether rank r is the first of the job's ranks on its agent (one
 * message per agent lists all of that agent's ranks). */
static bool first_of_agent(const job *j, int r)
{
    for (int q = 0; q < r; q++)
        if (j->ranks[q].ag == j->ranks[r].ag)
            return false;
    return true;
}

/* {"type": type, "job", "attempt", "size", ... (the caller ends the object) */
static void msg_begin(rt_jw *w, const char *type, const job *j, int size)
{
    rt_jw_init(w);
    rt_jw_obj(w);
    rt_jw_kstr(w, "type", type);
    rt_jw_kint(w, "job", j->id);
    rt_jw_kint(w, "attempt", j->attempt);
    rt_jw_kint(w, "size", size);
}

static void start_attempt(coord *co, job *j, int np)
{
    j->attempt++;
    j->prepared = j->running = j->exited_ok = 0;
    j->have_failure = false;
    j->attempt_ns = rt_now_ns();
    j->prepare_deadline_ns = j->attempt_ns + co->cfg.prepare_timeout_us * 1000;
    rt_random_bytes(j->key, sizeof j->key);
    j->state = JOB_STARTING;
    cdb_attempt(co, j, "starting", "");
    cdb_placement(co, j);
    cdb_job_update(co, j);
    cdb_event(co, j->id, "starting", "attempt %d on %d ranks", j->attempt, np);
    /* one prepare per agent, listing its ranks */
    for (int r = 0; r < np; r++) {
        agent *a = j->ranks[r].ag;
        if (!first_of_agent(j, r))
            continue;
        rt_jw w;
        msg_begin(&w, "prepare", j, np);
        rt_jw_key(&w, "ranks");
        rt_jw_arr(&w);
        for (int q = r; q < np; q++)
            if (j->ranks[q].ag == a) {
                const rank_slot *s = &j->ranks[q];
                rt_jw_obj(&w);
                rt_jw_kint(&w, "rank", q);
                rt_jw_kint(&w, "local_rank", s->local_rank);
                rt_jw_kint(&w, "local_size", s->local_size);
                rt_jw_kint(&w, "cross_rank", s->cross_rank);
                rt_jw_kint(&w, "cross_size", s->cross_size);
                rt_jw_obj_end(&w);
            }
        rt_jw_arr_end(&w);
        rt_jw_obj_end(&w);
        coord_send(a, &w);
    }
}

static const char *resolve_transport(const job *j)
{
    const char *t = rt_json_str(rt_json_get(j->specj, "transport"), "auto");
    if (strcmp(t, "auto") != 0)
        return t;
    bool all_gpu = j->type == RT_JOB_TRAIN, all_rdma = true;
    for (int r = 0; r < j->cur_np; r++) {
        const agent *a = j->ranks[r].ag;
        all_gpu = all_gpu && a && a->cuda && a->nccl;
        all_rdma = all_rdma && a && a->rdma;
    }
    return all_gpu ? "nccl" : all_rdma ? "rdma" : "tcp";
}

static void send_start(coord *co, job *j)
{
    char key[65];
    rt_hex_encode(j->key, sizeof j->key, key);
    const char *transport = resolve_transport(j);
    for (int r = 0; r < j->cur_np; r++) {
        agent *a = j->ranks[r].ag;
        if (!first_of_agent(j, r))
            continue;
        rt_jw w;
        msg_begin(&w, "start", j, j->cur_np);
        rt_jw_kstr(&w, "job_type", j->type == RT_JOB_EXEC ? "exec" : "train");
        rt_jw_kstr(&w, "key", key);
        rt_jw_kstr(&w, "transport", transport);
        rt_jw_kint(&w, "sockets", spec_int(j, "sockets", 1));
        rt_jw_kint(&w, "collective_timeout_ms", spec_int(j, "collective_timeout_ms", 60000));
        rt_jw_kbool(&w, "encrypt", rt_json_bool(rt_json_get(j->specj, "encrypt"), false));
        rt_jw_key(&w, "peers");
        rt_jw_arr(&w);
        for (int q = 0; q < j->cur_np; q++)
            rt_jw_str(&w, j->ranks[q].addr);
        rt_jw_arr_end(&w);
        const char *fields[] = {"argv", "env", "cwd", "config"};
        for (size_t f = 0; f < RT_ARRAY_LEN(fields); f++) {
            const rt_json *v = rt_json_get(j->specj, fields[f]);
            if (v) {
                rt_jw_key(&w, fields[f]);
                rt_jw_value(&w, v);
            }
        }
        rt_jw_obj_end(&w);
        coord_send(a, &w);
        for (int q = r; q < j->cur_np; q++)
            if (j->ranks[q].ag == a)
                j->ranks[q].state = RS_STARTING;
    }
    cdb_event(co, j->id, "launching", "attempt %d: all %d ranks prepared, transport %s",
              j->attempt, j->cur_np, transport);
}

/* ---- reports from agents ------------------------------------------------------ */

/* The job and rank a message refers to, when it is this agent's rank of
 * the current attempt (of a live job unless any_state). */
static job *msg_job_any(coord *co, agent *a, const rt_json *m, int *rank, bool any_state)
{
    int64_t id, att, r = -1;
    if (!rt_json_get_int(m, "job", &id) || !rt_json_get_int(m, "attempt", &att))
        return NULL;
    job *j = sched_job(co, id);
    if (!j || att != j->attempt || (!any_state && job_state_terminal(j->state)))
        return NULL;
    if (rank) {
        if (!rt_json_get_int(m, "rank", &r) || r < 0 || r >= j->cur_np ||
            strcmp(j->ranks[r].agent_key, a->key) != 0)
            return NULL;
        *rank = (int)r;
    }
    return j;
}

static job *msg_job(coord *co, agent *a, const rt_json *m, int *rank)
{
    return msg_job_any(co, a, m, rank, false);
}

void sched_on_prepared(coord *co, agent *a, const rt_json *m)
{
    job *j = msg_job(co, a, m, NULL);
    if (!j || j->state != JOB_STARTING)
        return;
    const char *error = rt_json_get_str(m, "error");
    if (error) {
        char why[700];
        snprintf(why, sizeof why, "agent %s could not prepare its ranks: %s", a->key, error);
        attempt_failed(co, j, why);
        return;
    }
    const rt_json *addrs = rt_json_get(m, "ranks");
    for (size_t i = 0; i < rt_json_len(addrs); i++) {
        const rt_json *e = rt_json_at(addrs, i);
        int64_t r;
        const char *addr = rt_json_get_str(e, "addr");
        if (!rt_json_get_int(e, "rank", &r) || r < 0 || r >= j->cur_np || !addr ||
            strcmp(j->ranks[r].agent_key, a->key) != 0 || j->ranks[r].state != RS_PREPARING)
            continue;
        snprintf(j->ranks[r].addr, sizeof j->ranks[r].addr, "%s", addr);
        j->ranks[r].state = RS_PREPARED;
        j->prepared++;
        cdb_rank(co, j, (int)r);
    }
    if (j->prepared == j->cur_np)
        send_start(co, j);
}

void sched_on_started(coord *co, agent *a, const rt_json *m)
{
    int r;
    job *j = msg_job(co, a, m, &r);
    if (!j || j->ranks[r].state != RS_STARTING)
        return;
    int64_t pid = 0;
    rt_json_get_int(m, "pid", &pid);
    j->ranks[r].pid = pid;
    j->ranks[r].state = RS_RUNNING;
    cdb_rank(co, j, r);
    if (++j->running == j->cur_np && j->state == JOB_STARTING) {
        j->state = JOB_RUNNING;
        if (j->started == 0)
            j->started = coord_unix_now();
        cdb_attempt(co, j, "running", "");
        cdb_job_update(co, j);
        cdb_event(co, j->id, "running", "attempt %d: all %d ranks started", j->attempt, j->cur_np);
    }
}

static void describe_exit(char *buf, size_t len, int code, int sig)
{
    if (sig > 0)
        snprintf(buf, len, "was killed by signal %d (%s)", sig, strsignal(sig));
    else if (sig < 0)
        snprintf(buf, len, "was lost with its agent");
    else
        snprintf(buf, len, "exited with code %d", code);
}

void sched_on_exited(coord *co, agent *a, const rt_json *m)
{
    int r;
    /* an exit always frees its slot, even after the job has ended (its
     * ranks are stopped after a failure or a cancel) */
    job *j = msg_job_any(co, a, m, &r, true);
    if (!j)
        return;
    rank_slot *s = &j->ranks[r];
    if (s->state == RS_EXITED)
        return;
    int64_t code = 0, sig = 0;
    rt_json_get_int(m, "code", &code);
    rt_json_get_int(m, "signal", &sig);
    release_slot(s);
    s->state = RS_EXITED;
    s->exit_code = (int)code;
    s->exit_signal = (int)sig;
    cdb_rank(co, j, r);
    if (job_state_terminal(j->state))
        return;
    if (code == 0 && sig == 0) {
        if (++j->exited_ok == j->cur_np && !j->have_failure)
            finish(co, j, JOB_SUCCEEDED, "all ranks exited with code 0");
        return;
    }
    if (j->have_failure || j->state == JOB_RESTARTING)
        return; /* a rank stopped by the abort of an attempt that already failed */
    j->have_failure = true;
    char how[128], why[700];
    describe_exit(how, sizeof how, (int)code, (int)sig);
    snprintf(why, sizeof why, "rank %d on host %s (agent %s) %s", r, s->hostname, a->key, how);
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kint(&w, "attempt", j->attempt);
    rt_jw_kint(&w, "rank", r);
    rt_jw_kstr(&w, "host", s->hostname);
    rt_jw_kstr(&w, "host_id", s->host_id);
    rt_jw_kstr(&w, "agent", a->key);
    rt_jw_kint(&w, "exit_code", code);
    rt_jw_kint(&w, "signal", sig);
    const rt_json *tail = rt_json_get(m, "tail");
    rt_jw_key(&w, "tail");
    if (tail)
        rt_jw_value(&w, tail);
    else
        rt_jw_null(&w);
    rt_jw_obj_end(&w);
    free(j->first_failure);
    j->first_failure = rt_jw_take(&w, NULL);
    attempt_failed(co, j, why);
}

void sched_on_progress(coord *co, agent *a, const rt_json *m)
{
    int r;
    job *j = msg_job(co, a, m, &r);
    const rt_json *data = rt_json_get(m, "data");
    if (!j || rt_json_type_of(data) != RT_JSON_OBJECT)
        return;
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_value(&w, data);
    char *text = rt_jw_take(&w, NULL);
    if (!text)
        return;
    const char *kind = rt_json_get_str(data, "kind");
    if (kind && strcmp(kind, "epoch") == 0)
        cdb_metric(co, j, text); /* the history */
    if (r == 0) {
        j->steps_per_s = rt_json_num(rt_json_get(data, "steps_per_s"), j->steps_per_s);
        free(j->progress);
        j->progress = text;
        cdb_job_update(co, j);
    } else {
        free(text);
    }
}

void sched_on_agent_lost(coord *co, agent *a, const char *why)
{
    for (job *j = co->jobs; j; j = j->next) {
        if (job_state_terminal(j->state) || !j->ranks)
            continue;
        int lost = -1;
        for (int r = 0; r < j->cur_np; r++)
            if (j->ranks[r].ag == a && j->ranks[r].state != RS_EXITED) {
                j->ranks[r].state = RS_EXITED;
                j->ranks[r].exit_signal = -1;
                cdb_rank(co, j, r);
                if (lost < 0)
                    lost = r;
            }
        if (lost < 0 || j->have_failure || j->state == JOB_RESTARTING ||
            j->state == JOB_QUEUED)
            continue;
        j->have_failure = true;
        char reason[700];
        snprintf(reason, sizeof reason, "agent %s on host %s was lost (%s) with rank %d", a->key,
                 a->hostname, why, lost);
        free(j->first_failure);
        rt_jw w;
        rt_jw_init(&w);
        rt_jw_obj(&w);
        rt_jw_kint(&w, "attempt", j->attempt);
        rt_jw_kint(&w, "rank", lost);
        rt_jw_kstr(&w, "host", a->hostname);
        rt_jw_kstr(&w, "agent", a->key);
        rt_jw_kstr(&w, "cause", why);
        rt_jw_obj_end(&w);
        j->first_failure = rt_jw_take(&w, NULL);
        attempt_failed(co, j, reason);
    }
    a->used = 0;
}

void sched_on_agent_hello(coord *co, agent *a, const rt_json *running)
{
    /* what the agent is running: ours if the job and attempt are current,
     * otherwise leftovers to stop */
    for (size_t i = 0; i < rt_json_len(running); i++) {
        const rt_json *e = rt_json_at(running, i);
        int64_t id, att, r, pid = 0;
        if (!rt_json_get_int(e, "job", &id) || !rt_json_get_int(e, "attempt", &att) ||
            !rt_json_get_int(e, "rank", &r))
            continue;
        rt_json_get_int(e, "pid", &pid);
        job *j = sched_job(co, id);
        bool ours = j && !job_state_terminal(j->state) && att == j->attempt && r >= 0 &&
                    r < j->cur_np && strcmp(j->ranks[r].agent_key, a->key) == 0 &&
                    j->ranks[r].state != RS_EXITED;
        if (!ours) {
            rt_jw w;
            rt_jw_init(&w);
            rt_jw_obj(&w);
            rt_jw_kstr(&w, "type", "abort");
            rt_jw_kint(&w, "job", id);
            rt_jw_kint(&w, "attempt", att);
            rt_jw_kstr(&w, "reason", "the job's attempt is over");
            rt_jw_obj_end(&w);
            coord_send(a, &w);
            continue;
        }
        rank_slot *s = &j->ranks[r];
        if (s->ag != a) {
            s->ag = a;
            a->used++;
        }
        if (s->state != RS_RUNNING) {
            s->state = RS_RUNNING;
            j->running++;
        }
        s->pid = pid;
        cdb_rank(co, j, (int)r);
    }
}

rt_status sched_cancel(coord *co, int64_t id, char *err)
{
    job *j = sched_job(co, id);
    if (!j)
        return rt_err(err, RT_ERR_NOTFOUND, "job %lld is not running or queued", (long long)id);
    if (job_state_terminal(j->state))
        return rt_err(err, RT_ERR_INVALID, "job %lld has already %s", (long long)id,
                      job_state_name(j->state));
    send_abort(co, j, "cancelled");
    finish(co, j, JOB_CANCELLED, "cancelled by request");
    return RT_OK;
}

/* ---- the periodic pass ------------------------------------------------------------ */

static bool holds_slots(const job *j)
{
    for (int r = 0; r < j->cur_np; r++)
        if (j->ranks[r].state != RS_EXITED && j->ranks[r].ag && j->ranks[r].ag->up)
            return true;
    return false;
}

static void try_start(coord *co, job *j)
{
    if (j->state == JOB_RESTARTING && holds_slots(j))
        return; /* the previous attempt's ranks are still being stopped */
    if (!j->started && j->attempt == 0) {
        j->max_restarts = (int)spec_int(j, "max_restarts", co->cfg.default_max_restarts);
        j->start_timeout_us = spec_int(j, "start_timeout_ms", co->cfg.default_start_timeout_us / 1000) * 1000;
        j->deadline_us = spec_int(j, "deadline_ms", 0) * 1000;
        j->min_np = (int)spec_int(j, "min_np", 0);
    }
    char why[256];
    int np = j->np;
    if (j->state == JOB_RESTARTING && j->min_np > 0) {
        /* elastic: as many ranks as are free, down to min_np */
        agent *list[1024];
        int total;
        free_agents(co, list, &total);
        if (total < np && total >= j->min_np)
            np = total;
    }
    if (place(co, j, np, why, sizeof why)) {
        start_attempt(co, j, np);
        return;
    }
    if (j->start_timeout_us > 0 && rt_now_ns() - j->queued_ns > j->start_timeout_us * 1000) {
        char reason[1100];
        if (j->attempt > 0)
            snprintf(reason, sizeof reason,
                     "could not restart within %.0f s: %s; attempt %d had failed: %s",
                     (double)j->start_timeout_us / 1e6, why, j->attempt, j->last_failure);
        else
            snprintf(reason, sizeof reason, "could not start within %.0f s: %s",
                     (double)j->start_timeout_us / 1e6, why);
        finish(co, j, JOB_FAILED, reason);
    } else if (strcmp(j->reason, why) != 0) {
        snprintf(j->reason, sizeof j->reason, "waiting: %s", why);
    }
}

void sched_tick(coord *co)
{
    const int64_t now = rt_now_ns();
    for (job *j = co->jobs; j; j = j->next) {
        switch (j->state) {
        case JOB_QUEUED:
        case JOB_RESTARTING:
            try_start(co, j);
            break;
        case JOB_STARTING:
            if (j->reconciling)
                break;
            if (now > j->prepare_deadline_ns && j->prepared < j->cur_np) {
                for (int r = 0; r < j->cur_np; r++)
                    if (j->ranks[r].state == RS_PREPARING) {
                        char why[512];
                        snprintf(why, sizeof why, "agent %s did not prepare rank %d in time",
                                 j->ranks[r].agent_key, r);
                        j->have_failure = true;
                        attempt_failed(co, j, why);
                        break;
                    }
            }
            break;
        case JOB_RUNNING:
            if (j->deadline_us > 0 && j->started > 0 &&
                coord_unix_now() - j->started > (double)j->deadline_us / 1e6) {
                char why[256];
                snprintf(why, sizeof why, "deadline of %.0f s exceeded",
                         (double)j->deadline_us / 1e6);
                send_abort(co, j, why);
                finish(co, j, JOB_FAILED, why);
            }
            break;
        default:
            break;
        }
        /* after a coordinator restart, ranks nobody reported are gone */
        if (j->reconciling && now > co->reconcile_until_ns) {
            j->reconciling = false;
            int missing = -1;
            for (int r = 0; r < j->cur_np && missing < 0; r++)
                if (j->ranks[r].state == RS_NONE)
                    missing = r;
            if (missing >= 0 && !job_state_terminal(j->state)) {
                char why[512];
                snprintf(why, sizeof why,
                         "rank %d (agent %s) was not reported by any agent after the "
                         "coordinator restarted",
                         missing, j->ranks[missing].agent_key);
                j->have_failure = true;
                attempt_failed(co, j, why);
            } else if (!job_state_terminal(j->state)) {
                j->state = j->running == j->cur_np ? JOB_RUNNING : j->state;
                cdb_event(co, j->id, "reconciled", "all %d ranks found after the restart",
                          j->cur_np);
            }
        }
    }
}
