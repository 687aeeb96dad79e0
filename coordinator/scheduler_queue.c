/* scheduler_queue.c — placement and the queue (see scheduler.h for the rules):
 * which waiting job starts next, on which slots, and what every waiting
 * job is told about why it waits. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler.h"
#include "scheduler_impl.h"

/* ---- placement ---------------------------------------------------------------- */

bool sc_enforces(const sc_agent *a, const sc_job *j)
{
    return (!j->need_mem || a->lim_mem) && (!j->need_cpu || a->lim_cpu);
}

const char *sc_limits_name(const sc_job *j)
{
    return j->need_mem && j->need_cpu ? "memory_limit and cpu_limit"
           : j->need_mem              ? "memory_limit"
           : j->need_cpu              ? "cpu_limit"
                                      : "no limits";
}

/* Whether a can take ranks of j now: up, not drained, a free slot,
 * enforcing j's limits — and, given spare (the queue's head), one that
 * spare cannot use. */
static bool usable(const sc_agent *a, const sc_job *j, const sc_job *spare)
{
    return a->up && !a->draining && a->slots > a->used && sc_enforces(a, j) &&
           (!spare || !sc_enforces(a, spare));
}

static int cmp_agents(const void *x, const void *y)
{
    const sc_agent *a = *(sc_agent *const *)x, *b = *(sc_agent *const *)y;
    int c = strcmp(a->host_id, b->host_id);
    return c ? c : strcmp(a->name, b->name);
}

/* The job's ranks on host h's machine (the agents' boot id): host h's own
 * when its agent says no machine; hosts by host, not rank by rank, so that
 * a large job's placement stays linear in its ranks. */
static int machine_ranks(const sc_job *j, const int *first, const int *size, int hosts, int h)
{
    const sc_agent *a = j->ranks[first[h]].ag;
    if (!a || !a->machine[0])
        return size[h];
    int n = 0;
    for (int g = 0; g < hosts; g++) {
        const sc_agent *b = j->ranks[first[g]].ag;
        n += b && strcmp(b->machine, a->machine) == 0 ? size[g] : 0;
    }
    return n;
}

/* Whether np ranks of j fit in the free slots now (those spare cannot use,
 * given spare); else why not. */
static bool fits(const sched *S, const sc_job *j, const sc_job *spare, int np, char *why,
                 size_t whylen)
{
    int nfree = 0, up = 0, known = 0, draining = 0, cannot = 0;
    for (const sc_agent *a = S->agents; a; a = a->next) {
        known++;
        up += a->up;
        draining += a->up && a->draining;
        cannot += a->up && !sc_enforces(a, j);
        if (usable(a, j, spare))
            nfree += a->slots - a->used;
    }
    if (nfree >= np)
        return true;
    int n = snprintf(why, whylen, "needs %d slot%s, %d free on %d agent%s (%d known", np,
                     np == 1 ? "" : "s", nfree, up, up == 1 ? "" : "s", known);
    if (draining && n > 0 && (size_t)n < whylen)
        n += snprintf(why + n, whylen - (size_t)n, ", %d draining", draining);
    if (cannot && n > 0 && (size_t)n < whylen)
        n += snprintf(why + n, whylen - (size_t)n, ", %d that cannot enforce its %s", cannot,
                      sc_limits_name(j));
    if (n > 0 && (size_t)n < whylen)
        snprintf(why + n, whylen - (size_t)n, ")");
    return false;
}

bool sc_place(sched *S, sc_job *j, int np, const sc_job *spare, char *why, size_t whylen)
{
    if (!fits(S, j, spare, np, why, whylen))
        return false;
    int n = 0;
    for (sc_agent *a = S->agents; a; a = a->next)
        n += usable(a, j, spare);
    /* no fixed-size array here: the agents (and hosts) are as many as register */
    sc_agent **list = malloc((size_t)n * sizeof *list);
    int *host_first = malloc((size_t)n * sizeof *host_first);
    int *host_size = malloc((size_t)n * sizeof *host_size);
    sc_rank *ranks = calloc((size_t)np, sizeof *ranks);
    if (!list || !host_first || !host_size || !ranks) {
        free(list);
        free(host_first);
        free(host_size);
        free(ranks);
        snprintf(why, whylen, "out of memory");
        return false;
    }
    n = 0;
    for (sc_agent *a = S->agents; a; a = a->next)
        if (usable(a, j, spare))
            list[n++] = a;
    qsort(list, (size_t)n, sizeof *list, cmp_agents);
    /* the previous attempt's ranks have all exited: they hold nothing */
    for (int r = 0; r < j->cur_np; r++)
        sc_rank_exit(&j->ranks[r]);
    free(j->ranks);
    j->ranks = ranks;
    j->cur_np = np;
    /* fill hosts in order, contiguous ranks per host */
    int rank = 0, hosts = 0;
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
            sc_rank *s = &j->ranks[rank];
            snprintf(s->agent_key, sizeof s->agent_key, "%s", list[i]->key);
            snprintf(s->host_id, sizeof s->host_id, "%s", list[i]->host_id);
            snprintf(s->hostname, sizeof s->hostname, "%s", list[i]->hostname);
            s->local_rank = host_size[hosts - 1]++;
            s->state = RS_PREPARING;
            sc_rank_bind(s, list[i]);
        }
    }
    RT_ASSERT(rank == np);
    /* local_size per host; cross communicators group equal local ranks;
     * hosts that are namespaces of one machine share its CPUs: each rank's
     * default thread count divides them among the job's ranks there */
    for (int h = 0; h < hosts; h++) {
        const int on_machine = machine_ranks(j, host_first, host_size, hosts, h);
        for (int r = host_first[h]; r < host_first[h] + host_size[h]; r++) {
            sc_rank *s = &j->ranks[r];
            s->local_size = host_size[h];
            s->machine_ranks = on_machine;
            s->cross_rank = 0;
            s->cross_size = 0;
            for (int g = 0; g < hosts; g++)
                if (host_size[g] > s->local_rank) {
                    if (g < h)
                        s->cross_rank++;
                    s->cross_size++;
                }
        }
    }
    free(list);
    free(host_first);
    free(host_size);
    return true;
}

/* ---- the queue ------------------------------------------------------------------ */

/* a sweep waits for nothing: its trials do */
static bool waiting(const sc_job *j)
{
    return j->type != RT_JOB_SWEEP && (j->state == JOB_QUEUED || j->state == JOB_RESTARTING);
}

/* Restarting jobs first, then higher priority, then earlier submission. */
static int cmp_queue(const void *x, const void *y)
{
    const sc_job *a = *(sc_job *const *)x, *b = *(sc_job *const *)y;
    bool ra = a->state == JOB_RESTARTING, rb = b->state == JOB_RESTARTING;
    if (ra != rb)
        return ra ? -1 : 1;
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Ranks of j that still hold a usable slot (its agent up and undrained) —
 * given for, only slots that job could use. */
static int held_slots(const sc_job *j, const sc_job *for_job)
{
    int n = 0;
    for (int r = 0; r < j->cur_np; r++) {
        const sc_rank *s = &j->ranks[r];
        n += s->state != RS_EXITED && s->ag && s->ag->up && !s->ag->draining &&
             (!for_job || sc_enforces(s->ag, for_job));
    }
    return n;
}

typedef struct release {
    double at; /* when the slots come free at the latest (INFINITY: unknown) */
    int slots;
} release;

static int cmp_release(const void *x, const void *y)
{
    double a = ((const release *)x)->at, b = ((const release *)y)->at;
    return a < b ? -1 : a > b;
}

/* Free slots that j could use now. */
static int free_for(const sched *S, const sc_job *j)
{
    int n = 0;
    for (const sc_agent *a = S->agents; a; a = a->next)
        if (usable(a, j, NULL))
            n += a->slots - a->used;
    return n;
}

/* When np slots that head can use will be free at the latest, from the
 * deadlines of the jobs holding them (a job without one may hold them
 * forever: INFINITY), and how many more than np will be free then. */
static double shadow_time(const sched *S, const sc_job *head, int np, sc_clock now, int *extra)
{
    const int nfree = free_for(S, head);
    int n = 0;
    for (const sc_job *j = S->jobs; j; j = j->next)
        n++;
    release *rel = malloc((size_t)(n ? n : 1) * sizeof *rel);
    *extra = 0;
    if (!rel)
        return INFINITY;
    n = 0;
    for (const sc_job *j = S->jobs; j; j = j->next) {
        int held = held_slots(j, head);
        if (held == 0)
            continue;
        double at = INFINITY;
        if (job_state_terminal(j->state))
            at = now.wall; /* being stopped */
        else if (j->deadline_us > 0)
            at = (j->started > 0 ? j->started : now.wall) + (double)j->deadline_us / 1e6;
        rel[n++] = (release){at, held};
    }
    qsort(rel, (size_t)n, sizeof *rel, cmp_release);
    int avail = nfree;
    double shadow = INFINITY;
    for (int i = 0; i < n && avail < np && isfinite(rel[i].at); i++) {
        avail += rel[i].slots;
        if (avail >= np)
            shadow = rel[i].at;
    }
    free(rel);
    if (isfinite(shadow))
        *extra = avail - np;
    return shadow;
}

/* A waiting job's reason and position, saved when they change. */
static void tell(sched *S, sc_job *j, int pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void tell(sched *S, sc_job *j, int pos, const char *fmt, ...)
{
    char text[sizeof j->reason];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (j->queue_pos == pos && strcmp(j->reason, text) == 0)
        return;
    j->queue_pos = pos;
    snprintf(j->reason, sizeof j->reason, "%s", text);
    sc_job_saved(S, j);
}

static bool timed_out(sched *S, sc_job *j, const char *why, sc_clock now)
{
    if (j->queue_timeout_us <= 0 || now.wall - j->queued_at <= (double)j->queue_timeout_us / 1e6)
        return false;
    char reason[1200];
    if (j->attempt > 0)
        snprintf(reason, sizeof reason,
                 "could not restart within %.0f s: %s; attempt %d had failed: %s",
                 (double)j->queue_timeout_us / 1e6, why, j->attempt, j->last_failure);
    else
        snprintf(reason, sizeof reason, "could not start within %.0f s: %s",
                 (double)j->queue_timeout_us / 1e6, why);
    sc_finish(S, j, JOB_FAILED, reason, now);
    return true;
}

void sc_queue_pass(sched *S, sc_clock now)
{
    sc_sweep_pass(S, now); /* the sweeps' next trials join the queue first */
    int n = 0;
    for (sc_job *j = S->jobs; j; j = j->next)
        n += waiting(j);
    if (n == 0)
        return;
    sc_job **q = malloc((size_t)n * sizeof *q);
    if (!q)
        return;
    n = 0;
    for (sc_job *j = S->jobs; j; j = j->next)
        if (waiting(j))
            q[n++] = j;
    qsort(q, (size_t)n, sizeof *q, cmp_queue);

    const sc_job *head = NULL;
    int head_np = 0, extra = 0, pos = 0;
    double shadow = INFINITY;
    for (int i = 0; i < n; i++) {
        sc_job *j = q[i];
        char why[300];
        if (j->held) {
            tell(S, j, 0, "held (ringtrain release %lld)", (long long)j->id);
            continue;
        }
        int nfree = free_for(S, j);
        if (j->state == JOB_RESTARTING && held_slots(j, NULL) > 0) {
            /* the failed attempt's ranks are still being stopped */
            snprintf(why, sizeof why, "stopping the ranks of attempt %d", j->attempt);
            if (!timed_out(S, j, why, now))
                tell(S, j, ++pos, "restarting: %s", why);
            if (!head) {
                head = j;
                head_np = j->np;
                shadow = INFINITY; /* it takes its slots back as they free */
            }
            continue;
        }
        int np = j->np;
        if (j->state == JOB_RESTARTING && j->min_np > 0 && nfree < np && nfree >= j->min_np)
            np = nfree; /* elastic: as many ranks as are free, down to min_np */
        bool fit = fits(S, j, NULL, np, why, sizeof why);
        if (!head) {
            if (fit && sc_place(S, j, np, NULL, why, sizeof why)) {
                sc_start_attempt(S, j, np, now);
                continue;
            }
            if (timed_out(S, j, why, now))
                continue;
            tell(S, j, ++pos, "waiting: first in the queue; %s", why);
            head = j;
            head_np = np;
            shadow = shadow_time(S, j, np, now, &extra);
            continue;
        }
        /* behind the head: start now only if that cannot delay it */
        bool by_time = j->deadline_us > 0 && isfinite(shadow) &&
                       now.wall + (double)j->deadline_us / 1e6 <= shadow;
        bool by_room = isfinite(shadow) && np <= extra;
        if (fit && (by_time || by_room) && sc_place(S, j, np, NULL, why, sizeof why)) {
            if (!by_time)
                extra -= np; /* it still runs when the head starts */
            sc_event(S, j, "backfilled", "started ahead of job %lld, which it cannot delay",
                     (long long)head->id);
            sc_start_attempt(S, j, np, now);
            continue;
        }
        /* on agents the head cannot use (it has limits they do not enforce) */
        if (fit && (head->need_mem || head->need_cpu) && sc_place(S, j, np, head, NULL, 0)) {
            sc_event(S, j, "backfilled",
                     "started ahead of job %lld on agents that cannot enforce its limits",
                     (long long)head->id);
            sc_start_attempt(S, j, np, now);
            continue;
        }
        if (timed_out(S, j, fit ? "the queue ahead of it" : why, now))
            continue;
        pos++;
        if (fit)
            tell(S, j, pos,
                 "waiting: position %d; starting it now could delay job %lld (needs %d slots); "
                 "a deadline lets a job use free slots it cannot delay",
                 pos, (long long)head->id, head_np);
        else
            tell(S, j, pos, "waiting: position %d, behind job %lld; %s", pos,
                 (long long)head->id, why);
    }
    free(q);
}
