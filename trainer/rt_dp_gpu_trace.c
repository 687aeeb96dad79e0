/* rt_dp_gpu_trace.c — the timeline (rt_trace.h) of GPU steps.  The step is
 * device work enqueued ahead of the host, mostly as one CUDA graph replay,
 * so host clocks cannot time its parts.  Instead the step records timing
 * marks (rt_kevent_mark: CUDA events, as record nodes inside the captured
 * graph) at its boundaries: its start, the end of forward, each layer's
 * gradients, the end of backward, each bucket's allreduce on the
 * communication stream (begin, end), the compute stream's join with it, the
 * end of Adam.  A step's marks are read two steps later (or at a flush),
 * when they have long been reached, as milliseconds from an anchor mark
 * whose host time is known, and become the same spans as a CPU step's.
 * Two sets of marks alternate between steps (a graph per set: a replay
 * records the marks it was captured with); the anchor is renewed every 10 s
 * (elapsed times are floats). */
#include <stdlib.h>
#include <string.h>

#include "dp_impl.h"
#include "rt_log.h"
#include "rt_time.h"

#define DPT_MARKS 256
#define DPT_REANCHOR_NS (10 * 1000000000LL)

typedef struct dpt_set {
    rt_kevent *ev[DPT_MARKS];
    uint8_t kind[DPT_MARKS]; /* dpt_kind */
    int16_t arg[DPT_MARKS];
    int n;        /* marks of the step recorded with this set */
    int64_t step; /* that step; -1: nothing to read */
} dpt_set;

struct dp_timeline {
    rt_kevent *ref; /* the anchor: reached at ref_ns (rt_now_ns) */
    int64_t ref_ns;
    dpt_set set[2];
    int cur;  /* the set of the step being enqueued */
    int body; /* marks step_body records (a graph replay records as many) */
    int64_t last_ns; /* the compute stream's last mark read */
    bool broken;
};

static void dpt_fail(rt_dp *d, const char *what, const char *err)
{
    if (!d->tl->broken)
        RT_WARN("dp", "the GPU timeline stops: %s: %s", what, err);
    d->tl->broken = true;
}

/* Mark the anchor now and wait until the device reaches it. */
static void anchor(rt_dp *d)
{
    char err[RT_ERR_LEN];
    double ms;
    rt_kevent_mark(d->ctx, d->tl->ref, false);
    if (rt_kevent_ms(d->ctx, d->tl->ref, d->tl->ref, &ms, err) != RT_OK)
        dpt_fail(d, "its anchor", err);
    d->tl->ref_ns = rt_now_ns();
}

rt_status dpt_create(rt_dp *d, char *err)
{
    dp_timeline *tl = calloc(1, sizeof *tl);
    if (!tl)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    tl->set[0].step = tl->set[1].step = -1;
    rt_status st = rt_kevent_create_timer(d->ctx, &tl->ref, err);
    d->tl = tl;
    if (st != RT_OK) {
        dpt_destroy(d);
        return st;
    }
    anchor(d);
    return RT_OK;
}

void dpt_destroy(rt_dp *d)
{
    dp_timeline *tl = d->tl;
    if (!tl)
        return;
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < DPT_MARKS; i++)
            rt_kevent_destroy(d->ctx, tl->set[s].ev[i]);
    rt_kevent_destroy(d->ctx, tl->ref);
    free(tl);
    d->tl = NULL;
}

/* The spans of the step recorded with set s, into the trace. */
static void dpt_read(rt_dp *d, dpt_set *s)
{
    dp_timeline *tl = d->tl;
    const int n = s->n;
    const int64_t step = s->step;
    s->step = -1;
    if (step < 0 || n == 0 || tl->broken)
        return;
    int64_t t[DPT_MARKS];
    char err[RT_ERR_LEN];
    for (int i = 0; i < n; i++) {
        double ms;
        if (rt_kevent_ms(d->ctx, tl->ref, s->ev[i], &ms, err) != RT_OK) {
            dpt_fail(d, "reading a mark", err);
            return;
        }
        t[i] = tl->ref_ns + (int64_t)(ms * 1e6);
    }
    /* The compute stream's marks in its order: float milliseconds (a
     * microsecond apart 10 s from the anchor, more when a slow step reads
     * its marks later) and a renewed anchor (its host time read after the
     * device reached it, late by a delay that varies) can put a mark a
     * little before the one that came before it.  Moved up to that one,
     * spans neither overlap nor run backwards. */
    for (int i = 0, ar = -1; i < n; i++) {
        if (s->kind[i] == DPT_AR_BEGIN) {
            ar = i;
        } else if (s->kind[i] == DPT_AR_END) { /* the communication stream's */
            if (ar >= 0 && t[i] < t[ar])
                t[i] = t[ar];
        } else {
            if (t[i] < tl->last_ns)
                t[i] = tl->last_ns;
            tl->last_ns = t[i];
        }
    }
    int64_t t0 = -1, fwd = -1, prev = -1, bwd = -1, join = -1, ar0 = -1;
    for (int i = 0; i < n; i++) {
        switch (s->kind[i]) {
        case DPT_START:
            t0 = t[i];
            break;
        case DPT_FORWARD:
            rt_trace_span(d->trace, RT_SPAN_FORWARD, t0, t[i], step, 0);
            fwd = prev = t[i];
            break;
        case DPT_LAYER:
            rt_trace_span(d->trace, RT_SPAN_LAYER, prev, t[i], step, s->arg[i]);
            prev = t[i];
            break;
        case DPT_BACKWARD:
            rt_trace_span(d->trace, RT_SPAN_BACKWARD, fwd, t[i], step, 0);
            bwd = t[i];
            break;
        case DPT_AR_BEGIN:
            ar0 = t[i];
            break;
        case DPT_AR_END:
            rt_trace_span(d->trace, RT_SPAN_ALLREDUCE, ar0, t[i], step, s->arg[i]);
            break;
        case DPT_JOIN: /* the last bucket (the slowest rank) held the step this long */
            rt_trace_span(d->trace, RT_SPAN_WAIT, bwd, t[i], step, 0);
            d->wait_s += (double)(t[i] - bwd) / 1e9;
            join = t[i];
            break;
        case DPT_UPDATE:
            rt_trace_span(d->trace, RT_SPAN_OPTIMIZER, join >= 0 ? join : bwd, t[i], step, 0);
            break;
        }
    }
    if (t[n - 1] - tl->ref_ns > DPT_REANCHOR_NS)
        anchor(d);
}

void dpt_begin(rt_dp *d)
{
    dp_timeline *tl = d->tl;
    if (!tl)
        return;
    tl->cur = (int)(d->steps & 1);
    dpt_set *s = &tl->set[tl->cur];
    dpt_read(d, s); /* the step two before this one */
    s->n = 0;
    s->step = d->steps;
}

void dpt_mark(rt_dp *d, dpt_kind kind, int arg, bool comm)
{
    dp_timeline *tl = d->tl;
    if (!tl || tl->broken)
        return;
    dpt_set *s = &tl->set[tl->cur];
    if (s->n == DPT_MARKS)
        return; /* more layers and buckets than marks: the rest untimed */
    char err[RT_ERR_LEN];
    /* made in a step run op by op, before any capture of the set */
    if (!s->ev[s->n] && rt_kevent_create_timer(d->ctx, &s->ev[s->n], err) != RT_OK) {
        dpt_fail(d, "making a mark", err);
        return;
    }
    s->kind[s->n] = (uint8_t)kind;
    s->arg[s->n] = (int16_t)arg;
    rt_kevent_mark(d->ctx, s->ev[s->n], comm);
    s->n++;
}

void dpt_body_done(rt_dp *d, bool replayed)
{
    dp_timeline *tl = d->tl;
    if (!tl)
        return;
    if (replayed)
        tl->set[tl->cur].n = tl->body; /* the graph recorded what its capture marked */
    else
        tl->body = tl->set[tl->cur].n;
}

int dpt_graph_key(const rt_dp *d) { return d->tl ? (int)(d->steps & 1) : 0; }

void rt_dp_trace_flush(rt_dp *d)
{
    if (!d->tl)
        return;
    /* steps done: the last was step steps - 1, the one before it is in set
     * steps & 1 (read first: spans are read in the order they ran) */
    const int older = (int)(d->steps & 1);
    dpt_read(d, &d->tl->set[older]);
    dpt_read(d, &d->tl->set[older ^ 1]);
}
