/* loopback.c — the in-process transport: ranks are threads of one process
 * sharing an rt_loopback_world.  Channel r carries rank r's frames to rank
 * r+1.  A posted send and the matching posted receive meet in the channel
 * and the later of the two copies the payload directly, so nothing is
 * buffered and the results are deterministic.  An abort is world state that
 * every waiting rank sees at once.  Used by the conformance tests and by
 * single-process runs. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_transport.h"

typedef struct lb_op {
    void *p; /* source (send) or destination (receive) */
    size_t len;
    uint32_t seq, seg;
} lb_op;

typedef struct lb_chan {
    lb_op sends[RT_RING_WINDOW], recvs[RT_RING_WINDOW];
    uint64_t s_head, s_tail, r_head, r_tail; /* FIFO indices */
    uint64_t matched;                         /* frames delivered */
    bool proto_error;
    char proto_msg[160];
} lb_chan;

struct rt_loopback_world {
    int size;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    lb_chan *chan;
    bool aborted;
    rt_abort_info abort;
};

typedef struct lb_state {
    rt_loopback_world *w;
    uint64_t sends_seen, recvs_seen; /* completions already reported */
} lb_state;

rt_status rt_loopback_world_create(int size, rt_loopback_world **out)
{
    *out = NULL;
    if (size < 1)
        return RT_ERR_INVALID;
    rt_loopback_world *w = calloc(1, sizeof *w);
    if (!w)
        return RT_ERR_NOMEM;
    w->size = size;
    w->chan = calloc((size_t)size, sizeof *w->chan);
    if (!w->chan) {
        free(w);
        return RT_ERR_NOMEM;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w->mu, NULL);
    *out = w;
    return RT_OK;
}

void rt_loopback_world_destroy(rt_loopback_world *w)
{
    if (!w)
        return;
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w->chan);
    free(w);
}

/* Deliver every send/receive pair at the head of the channel (lock held). */
static void match(lb_chan *ch)
{
    while (ch->s_head < ch->s_tail && ch->r_head < ch->r_tail && !ch->proto_error) {
        lb_op *s = &ch->sends[ch->s_head % RT_RING_WINDOW];
        lb_op *r = &ch->recvs[ch->r_head % RT_RING_WINDOW];
        if (s->seq != r->seq || s->seg != r->seg || s->len != r->len) {
            ch->proto_error = true;
            snprintf(ch->proto_msg, sizeof ch->proto_msg,
                     "expected frame %u of collective #%u (%zu bytes), got frame %u of #%u "
                     "(%zu bytes)",
                     r->seg, r->seq, r->len, s->seg, s->seq, s->len);
            return;
        }
        if (s->len)
            memcpy(r->p, s->p, s->len);
        ch->s_head++;
        ch->r_head++;
        ch->matched++;
    }
}

static rt_status lb_connect(rt_comm *c, rt_deadline_t dl, char *err)
{
    (void)dl;
    if (c->o.world->size != c->size)
        return rt_err(err, RT_ERR_INVALID, "loopback world has %d ranks, communicator %d",
                      c->o.world->size, c->size);
    lb_state *s = calloc(1, sizeof *s);
    if (!s)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    s->w = c->o.world;
    c->tp = s;
    snprintf(c->listen_addr, sizeof c->listen_addr, "loopback:%d", c->rank);
    return RT_OK;
}

static rt_status lb_post(rt_comm *c, bool send, void *buf, size_t len, uint32_t seq, uint32_t seg)
{
    lb_state *s = c->tp;
    rt_loopback_world *w = s->w;
    pthread_mutex_lock(&w->mu);
    lb_chan *ch = &w->chan[send ? c->rank : c->left];
    if (send) {
        RT_ASSERT(ch->s_tail - ch->s_head < RT_RING_WINDOW);
        ch->sends[ch->s_tail++ % RT_RING_WINDOW] = (lb_op){buf, len, seq, seg};
    } else {
        RT_ASSERT(ch->r_tail - ch->r_head < RT_RING_WINDOW);
        ch->recvs[ch->r_tail++ % RT_RING_WINDOW] = (lb_op){buf, len, seq, seg};
    }
    uint64_t before = ch->matched;
    match(ch);
    if (ch->matched != before || ch->proto_error)
        pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return RT_OK;
}

static rt_status lb_post_send(rt_comm *c, const void *buf, size_t len, uint32_t seq, uint32_t seg)
{
    return lb_post(c, true, (void *)buf, len, seq, seg);
}

static rt_status lb_post_recv(rt_comm *c, void *buf, size_t len, uint32_t seq, uint32_t seg)
{
    return lb_post(c, false, buf, len, seq, seg);
}

static struct timespec to_timespec(rt_deadline_t dl)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(dl / 1000000000LL);
    ts.tv_nsec = (long)(dl % 1000000000LL);
    return ts;
}

static rt_status lb_wait(rt_comm *c, rt_deadline_t dl, int *nsend, int *nrecv, char *err)
{
    lb_state *s = c->tp;
    rt_loopback_world *w = s->w;
    rt_status st = RT_OK;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        if (w->aborted) {
            c->abort_in = w->abort;
            st = RT_ERR_ABORTED;
            break;
        }
        lb_chan *in = &w->chan[c->left];
        if (in->proto_error) {
            c->fail_culprit = c->left;
            st = rt_err(err, RT_ERR_PROTO, "protocol error from rank %d: %s", c->left,
                        in->proto_msg);
            break;
        }
        uint64_t sends = w->chan[c->rank].matched, recvs = in->matched;
        if (sends > s->sends_seen || recvs > s->recvs_seen) {
            *nsend += (int)(sends - s->sends_seen);
            *nrecv += (int)(recvs - s->recvs_seen);
            s->sends_seen = sends;
            s->recvs_seen = recvs;
            break;
        }
        struct timespec ts = to_timespec(dl);
        if (dl != RT_NO_DEADLINE && pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT &&
            rt_now_ns() >= dl) {
            st = rt_err(err, RT_ERR_TIMEOUT, "timed out");
            break;
        }
        if (dl == RT_NO_DEADLINE)
            pthread_cond_wait(&w->cv, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return st;
}

static rt_status lb_await_abort(rt_comm *c, rt_deadline_t dl)
{
    lb_state *s = c->tp;
    rt_loopback_world *w = s->w;
    rt_status st = RT_ERR_TIMEOUT;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        if (w->aborted) {
            c->abort_in = w->abort;
            st = RT_ERR_ABORTED;
            break;
        }
        struct timespec ts = to_timespec(dl);
        if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&w->mu);
    return st;
}

static void lb_abort(rt_comm *c, const rt_abort_info *info)
{
    lb_state *s = c->tp;
    if (!s)
        return;
    pthread_mutex_lock(&s->w->mu);
    if (!s->w->aborted) {
        s->w->aborted = true;
        s->w->abort = *info;
    }
    pthread_cond_broadcast(&s->w->cv);
    pthread_mutex_unlock(&s->w->mu);
}

/* Drop this rank's posted sends (channel rank) and receives (channel left);
 * a neighbour posting later then waits on an empty channel instead of
 * copying into memory the caller may have freed. */
static void lb_cancel(rt_comm *c)
{
    lb_state *s = c->tp;
    if (!s)
        return;
    pthread_mutex_lock(&s->w->mu);
    lb_chan *out = &s->w->chan[c->rank], *in = &s->w->chan[c->left];
    out->s_head = out->s_tail;
    in->r_head = in->r_tail;
    pthread_cond_broadcast(&s->w->cv);
    pthread_mutex_unlock(&s->w->mu);
}

static void lb_close(rt_comm *c)
{
    lb_cancel(c);
    free(c->tp);
    c->tp = NULL;
}

const rt_transport_ops rt_loopback_ops = {
    .name = "loopback",
    .connect = lb_connect,
    .post_send = lb_post_send,
    .post_recv = lb_post_recv,
    .wait = lb_wait,
    .await_abort = lb_await_abort,
    .cancel = lb_cancel,
    .abort = lb_abort,
    .close = lb_close,
};
