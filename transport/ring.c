/* ring.c — the collectives, written once against the transport interface.
 *
 * Everything runs on one engine, ring_run(): this rank sends a stream of
 * frames to its right neighbour and receives a stream from its left.  A plan
 * says which buffer each frame comes from or lands in, and which received
 * frame a send waits for.  Up to RT_RING_WINDOW frames are posted ahead in
 * each direction; frames that must be reduced land in one of RT_RING_TMP
 * temporary buffers and are reduced as soon as they arrive, while the
 * transport keeps the next ones moving (double buffering).
 *
 * Allreduce (Gloo's AllreduceRingChunked, Patarasuk & Yuan 2009): the buffer
 * is cut into `size` chunks, each chunk into nseg segments (plan_nseg).
 *   reduce-scatter, steps s = 0..n-2: send chunk (r - s), receive chunk
 *     (r - s - 1) and reduce it in; after it rank r holds chunk r+1 summed;
 *   allgather, steps s = 0..n-2: send chunk (r + 1 - s), receive chunk (r - s)
 *     in place.
 * Frames go out by anti-diagonal (frame_order.h): segment j of step s right after
 * segment j of step s-1 arrived and was reduced, so the segment is passed
 * on while still in cache and consecutive steps overlap.  Each chunk is reduced in one fixed order
 * around the ring and then copied, so every rank ends with the same bits,
 * run after run.  Small buffers (small_path(): at most small_bytes, less as
 * n grows) instead allgather whole buffers (n-1 frames instead of 2(n-1))
 * and reduce them in rank order; where the transport also links each rank
 * to its left neighbour (TCP, three ranks or more) that allgather goes both
 * ways round in n/2 hops (gather_both, ring_both.c), and four ranks
 * exchange whole buffers in neighbour pairs, two hops (pairs4, up to
 * small_bytes), then halves and quarters, four steps (halving4, up to
 * RT_HALVING_MAX).  Job ranks on hosts of several ranks each allreduce in
 * three steps over a ring within the host and one across (rt_hier_allreduce,
 * hier.c). */
#include <stdio.h>
#include <string.h>

#include "frame_order.h"
#include "reduce.h"
#include "ring.h"
#include "rt_log.h"
#include "rt_transport.h"

typedef struct ring_plan {
    size_t nsend, nrecv; /* frames sent / received by this rank */
    size_t nfirst;       /* sends [0, nfirst) depend on nothing received */
    size_t dep;          /* send f >= nfirst waits for receive f - dep ... */
    /* ... unless given: the receive send f waits for, SIZE_MAX for none */
    size_t (*dep_of)(void *u, size_t f);
    void *u;
    void (*send_at)(void *u, size_t f, const void **p, size_t *len);
    /* *tmp: land in a temporary buffer and call reduce() on arrival */
    void (*recv_at)(void *u, size_t f, void **p, size_t *len, bool *tmp);
    void (*reduce)(void *u, size_t f, const void *buf, size_t len);
} ring_plan;

static void fmt_duration(int64_t us, char *buf, size_t len)
{
    if (us % 1000000 == 0)
        snprintf(buf, len, "%llds", (long long)(us / 1000000));
    else
        snprintf(buf, len, "%.3gs", (double)us / 1e6);
}

/* Turn a transport failure into the communicator's error, with the best
 * attribution available: an abort record from another rank if one arrives
 * shortly, else this rank's own view of the neighbour it waited on. */
rt_status ring_failure(rt_comm *c, rt_status st, const char *msg, size_t recvd, uint32_t seq,
                       int from)
{
    if (c->broken)
        return c->broken_st;
    char peer[160], dur[32];
    rt_comm_peer_name(c, from, peer, sizeof peer);
    fmt_duration(c->timeout_us, dur, sizeof dur);
    /* (of two ranks, a neighbour that went away is the whole story: an abort
     * it sent would have come before its end of stream) */
    bool local_view_weak = (st == RT_ERR_TIMEOUT && recvd > 0) ||
                           (st == RT_ERR_IO && c->fail_culprit == from && c->size > 2);
    if (st != RT_ERR_ABORTED && local_view_weak && c->ops->await_abort) {
        /* the neighbour arrived (or just went away): a rank nearer the
         * real failure may be sending a better diagnosis round the ring */
        int64_t grace = c->timeout_us / 20 < 500000 ? c->timeout_us / 20 : 500000;
        if (c->ops->await_abort(c, rt_deadline_in_us(grace)) == RT_ERR_ABORTED)
            st = RT_ERR_ABORTED;
    }
    if (st == RT_ERR_ABORTED) {
        rt_abort_info a = c->abort_in; /* the transport may reuse abort_in */
        return rt_comm_fail_forward(c, &a);
    }
    if (st == RT_ERR_TIMEOUT) {
        if (recvd == 0)
            return rt_comm_fail(c, st, from,
                                "%s did not arrive at collective #%u within %s", peer, seq, dur);
        return rt_comm_fail(c, st, from,
                            "collective #%u timed out after %s waiting for %s, which arrived "
                            "but stalled (a rank further round the ring did not arrive)",
                            seq, dur, peer);
    }
    return rt_comm_fail(c, st, c->fail_culprit, "%s", msg);
}

static rt_status ring_run_posted(rt_comm *c, const ring_plan *p);

/* Run a plan; whatever happens, nothing stays posted on return. */
static rt_status ring_run(rt_comm *c, const ring_plan *p)
{
    rt_status st = ring_run_posted(c, p);
    if (st != RT_OK)
        c->ops->cancel(c);
    return st;
}

static rt_status ring_run_posted(rt_comm *c, const ring_plan *p)
{
    const uint32_t seq = ++c->seq;
    const rt_deadline_t dl = rt_deadline_in_us(c->timeout_us);
    size_t sp = 0, sd = 0, rp = 0, rd = 0;
    size_t tmp_posted = 0, tmp_done = 0;
    signed char slot_of[RT_RING_WINDOW];
    char msg[RT_ERR_LEN];
    c->recv_frames = 0;
    while (sd < p->nsend || rd < p->nrecv) {
        while (rp < p->nrecv && rp - rd < RT_RING_WINDOW) {
            void *buf;
            size_t len;
            bool tmp;
            p->recv_at(p->u, rp, &buf, &len, &tmp);
            int slot = -1;
            if (tmp) {
                if (tmp_posted - tmp_done >= RT_RING_TMP)
                    break;
                RT_ASSERT(len <= c->tmp_bytes);
                slot = (int)(tmp_posted++ % RT_RING_TMP);
                buf = c->tmp[slot];
            }
            slot_of[rp % RT_RING_WINDOW] = (signed char)slot;
            rt_status st = c->ops->post_recv(c, buf, len, seq, (uint32_t)rp);
            if (st != RT_OK)
                return ring_failure(c, st, "cannot post a receive", rd, seq, c->left);
            rp++;
        }
        while (sp < p->nsend && sp - sd < RT_RING_WINDOW) {
            if (p->dep_of) {
                size_t need = p->dep_of(p->u, sp);
                if (need != SIZE_MAX && need >= rd)
                    break;
            } else if (!(sp < p->nfirst || (sp >= p->dep && sp - p->dep < rd))) {
                break;
            }
            const void *buf;
            size_t len;
            p->send_at(p->u, sp, &buf, &len);
            rt_status st = c->ops->post_send(c, buf, len, seq, (uint32_t)sp);
            if (st != RT_OK)
                return ring_failure(c, st, "cannot post a send", rd, seq, c->left);
            sp++;
        }
        int ns = 0, nr = 0;
        c->fail_culprit = -1;
        rt_status st = c->ops->wait(c, dl, &ns, &nr, msg);
        if (st != RT_OK)
            return ring_failure(c, st, msg, rd, seq, c->left);
        for (int k = 0; k < nr; k++) {
            size_t f = rd + (size_t)k;
            int slot = slot_of[f % RT_RING_WINDOW];
            if (slot >= 0) {
                void *buf;
                size_t len;
                bool tmp;
                p->recv_at(p->u, f, &buf, &len, &tmp);
                p->reduce(p->u, f, c->tmp[slot], len);
                tmp_done++;
            }
        }
        rd += (size_t)nr;
        sd += (size_t)ns;
        c->recv_frames = rd;
    }
    return RT_OK;
}

static size_t mod(long a, long n) { return (size_t)(((a % n) + n) % n); }

/* ---- chunked reduce-scatter + allgather ----------------------------------- */

typedef struct chunked {
    rt_comm *c;
    char *buf;
    size_t count, es, nseg;
    size_t block;   /* > 0: chunk k is [k*block, (k+1)*block) (reduce-scatter);
                       0: balanced split of count (allreduce) */
    long shift;     /* reduce-scatter ends with rank r owning chunk r + 1 + shift */
    size_t s0;      /* the first step: 0, or n-1 for an allgather alone */
    size_t steps;   /* steps run: n-1 (either half) or 2(n-1) (both) */
    rt_ctype t;
    rt_redop op;
} chunked;

/* element range of segment j of chunk k */
static void seg_range(const chunked *u, size_t k, size_t j, size_t *off, size_t *len)
{
    size_t coff, clen;
    if (u->block) {
        coff = k * u->block;
        clen = u->block;
    } else {
        rt_split(u->count, (size_t)u->c->size, k, &coff, &clen);
    }
    size_t soff, slen;
    rt_split(clen, u->nseg, j, &soff, &slen);
    *off = coff + soff;
    *len = slen;
}

/* Element range moved by frame f, and whether it is a reduce-scatter frame.
 * Reduce-scatter step s sends chunk r+shift-s and receives r+shift-s-1;
 * allgather step s' = s-(n-1) sends chunk r+1+shift-s' and receives the one
 * before it. */
static bool frame_range(const chunked *u, size_t f, bool sending, size_t *off, size_t *len)
{
    const long n = u->c->size, r = u->c->rank;
    size_t s, j;
    rt_frame_order_frame(u->steps, u->nseg, f, &s, &j);
    s += u->s0;
    const bool rs = s < (size_t)(n - 1);
    long base = rs ? r + u->shift - (long)s : r + 1 + u->shift - (long)(s - (size_t)(n - 1));
    seg_range(u, mod(base - (sending ? 0 : 1), n), j, off, len);
    return rs;
}

static void chunked_send(void *vu, size_t f, const void **p, size_t *len)
{
    chunked *u = vu;
    size_t off, n;
    frame_range(u, f, true, &off, &n);
    *p = u->buf + off * u->es;
    *len = n * u->es;
}

static void chunked_recv(void *vu, size_t f, void **p, size_t *len, bool *tmp)
{
    chunked *u = vu;
    size_t off, n;
    *tmp = frame_range(u, f, false, &off, &n);
    *p = u->buf + off * u->es;
    *len = n * u->es;
}

static void chunked_reduce(void *vu, size_t f, const void *src, size_t len)
{
    chunked *u = vu;
    size_t off, n;
    frame_range(u, f, false, &off, &n);
    RT_ASSERT(n * u->es == len);
    rt_reduce(u->buf + off * u->es, src, n, u->t, u->op);
}

/* step 0 sends this rank's own data; step s forwards what step s-1 brought */
static size_t chunked_dep(void *vu, size_t f)
{
    chunked *u = vu;
    size_t s, j;
    rt_frame_order_frame(u->steps, u->nseg, f, &s, &j);
    return s == 0 ? SIZE_MAX : rt_frame_order_index(u->steps, u->nseg, s - 1, j);
}

/* Segments per chunk: none larger than RT_RING_SEG (nor max_segment_bytes),
 * and two (one moving while one is reduced) where each is at least
 * RT_RING_PIPE_MIN bytes.  Below that a frame's wake-up costs more than the
 * overlap gains: bench/allreduce, sealed frames, one chunk in one frame vs
 * two, medians of 5 alternating runs: np = 4 on 2 cores 64 KiB 383 vs 535
 * us, 128 KiB 639 vs 801; np = 2, 96 KiB 123 vs 144 (plain 43 vs 64);
 * while two frames win at np = 2, 256 KiB (64 KiB each: 276 vs 389 us) and
 * hold their own at np = 4, 256 KiB (32 KiB each: 902 vs 965 us). */
#define RT_RING_PIPE_MIN (32u << 10)
/* 64 KiB: a segment stays in cache from the socket through its tag, its
 * reduction and its send onwards, while the next is on the wire.  Sealed
 * frames, Intel Xeon (AMX), 2 cores, medians of 3-5 alternated rounds, the
 * time with 64 KiB segments over that with 512 KiB (max_segment_bytes'
 * default, the segment before): TCP over lo, np = 2: 1 MiB 0.76-0.85x,
 * 4 MiB 0.57-0.69x, 16 MiB 0.60-0.72x, 64 MiB 0.66x; np = 3: 256 KiB
 * 0.86x, 1 MiB 0.94x, 4 MiB 0.55x, 16 MiB 0.59x; np = 2 across a
 * 10 Gbit/s veth: 1 MiB 0.81-1.02x, 4 MiB 0.62x, 16 MiB 0.93-1.16x; shared
 * memory np = 2: 1 MiB 1.05x, 4-64 MiB 0.83-0.85x, np = 4 0.87-0.93x.
 * 128 KiB was erratic (0.88-1.32x over lo, 1.18-1.24x across the veth).
 * The one loss: TCP, np = 4 on the 2 cores (two ranks a core, a frame a
 * context switch), 32 MiB 1.26x, 64 MiB 1.14x.  The segment cannot follow
 * a host's own layout: every rank of the ring must cut alike. */
#define RT_RING_SEG (64u << 10)

static size_t plan_nseg(const rt_comm *c, size_t chunk_elems, size_t es)
{
    size_t seg = c->o.max_segment_bytes < RT_RING_SEG ? c->o.max_segment_bytes : RT_RING_SEG;
    size_t per = seg / es;
    size_t nseg = (chunk_elems + per - 1) / per;
    if (nseg == 1 && chunk_elems * es >= 2 * (size_t)RT_RING_PIPE_MIN)
        nseg = 2;
    return nseg;
}

/* Steps [s0, s0 + steps) of the 2(n-1): reduce-scatter, allgather or both. */
static rt_status ring_chunked(rt_comm *c, chunked *u, size_t s0, size_t steps)
{
    u->s0 = s0;
    u->steps = steps;
    ring_plan p = {.nsend = u->steps * u->nseg,
                   .dep_of = chunked_dep,
                   .u = u,
                   .send_at = chunked_send,
                   .recv_at = chunked_recv,
                   .reduce = chunked_reduce};
    p.nrecv = p.nsend;
    return ring_run(c, &p);
}

/* ---- allgather of equal blocks ----------------------------------------------- */

typedef struct gather {
    rt_comm *c;
    char *buf; /* size blocks of `bytes` */
    size_t bytes, nseg;
} gather;

static void gather_range(const gather *u, size_t f, bool sending, size_t *off, size_t *len)
{
    const long n = u->c->size, r = u->c->rank;
    long s = (long)(f / u->nseg);
    size_t blk = mod(r - s - (sending ? 0 : 1), n);
    size_t soff, slen;
    rt_split(u->bytes, u->nseg, f % u->nseg, &soff, &slen);
    *off = blk * u->bytes + soff;
    *len = slen;
}

static void gather_send(void *vu, size_t f, const void **p, size_t *len)
{
    gather *u = vu;
    size_t off;
    gather_range(u, f, true, &off, len);
    *p = u->buf + off;
}

static void gather_recv(void *vu, size_t f, void **p, size_t *len, bool *tmp)
{
    gather *u = vu;
    size_t off;
    gather_range(u, f, false, &off, len);
    *p = u->buf + off;
    *tmp = false;
}

static rt_status ring_gather(rt_comm *c, char *buf, size_t bytes)
{
    gather u = {c, buf, bytes, 1};
    if (bytes > c->o.max_segment_bytes)
        u.nseg = (bytes + c->o.max_segment_bytes - 1) / c->o.max_segment_bytes;
    ring_plan p = {.nsend = ((size_t)c->size - 1) * u.nseg, .nfirst = u.nseg, .dep = u.nseg,
                   .u = &u, .send_at = gather_send, .recv_at = gather_recv};
    p.nrecv = p.nsend;
    return ring_run(c, &p);
}

/* ---- public collectives --------------------------------------------------------- */

static rt_status check_usable(rt_comm *c)
{
    if (c->broken)
        return c->broken_st == RT_OK ? RT_ERR_BROKEN : RT_ERR_BROKEN;
    return RT_OK;
}

/* Four ranks with both rings take recursive halving and doubling (halving4)
 * above small_bytes up to this size, the chunked ring above it.  np = 4 on 2
 * cores over TCP (Intel Xeon, python3 bench/ab_allreduce.py 3 4 ..., medians
 * of the two alternated, plain frames): 96 KiB 0.69x the ring's time, 256 KiB
 * 0.71x, 1 MiB 0.60x, 4 MiB 0.90x, 16 MiB 0.93x, 64 MiB 1.02x. */
#define RT_HALVING_MAX (16u << 20)

/* The small path sends n-1 whole buffers of B bytes in n-1 hops, the
 * chunked ring 2(n-1) frames of B/n: with a cost of a + B·b a hop, the small
 * path is cheaper while B < (a/b)·n/(n-2), for any B at n = 2.  a/b is taken
 * as small_bytes / 4 (16 KiB by default, which puts the limit at 48 KiB for
 * n = 3 and 32 KiB for n = 4: on 2 cores the crossovers measured there lie
 * between 32 and 64 KiB), and small_bytes bounds it at every n. */
static bool small_path(const rt_comm *c, size_t bytes)
{
    const size_t n = (size_t)c->size;
    return bytes <= c->o.small_bytes && bytes * (n - 2) * 4 <= c->o.small_bytes * n;
}

rt_status rt_allreduce(rt_comm *c, void *buf, size_t count, rt_ctype t, rt_redop op)
{
    rt_status st = check_usable(c);
    if (st != RT_OK)
        return st;
    const size_t es = rt_ctype_size(t), n = (size_t)c->size;
    if (es == 0)
        return RT_ERR_INVALID;
    if (n == 1 || count == 0)
        return RT_OK;
    const size_t bytes = count * es;
    const bool both = c->ops->has_left && c->ops->has_left(c);
    if (c->cross) { /* sums within and across hosts; the average below */
        st = rt_hier_allreduce(c, buf, count, t, op == RT_AVG ? RT_SUM : op);
        if (st != RT_OK)
            return st;
    } else if (both && n == 4 && bytes <= c->o.small_bytes) {
        st = pairs4(c, buf, c->small, count, es, t, op);
        if (st != RT_OK) {
            c->ops->cancel(c);
            return st;
        }
    } else if (both && n == 4 && bytes <= RT_HALVING_MAX) {
        st = halving4(c, buf, count, es, t, op);
        if (st != RT_OK) {
            c->ops->cancel(c);
            return st;
        }
    } else if (small_path(c, bytes)) {
        /* gather every rank's buffer, then reduce in rank order */
        char *all = c->small;
        memcpy(all + (size_t)c->rank * bytes, buf, bytes);
        if (both && n / 2 <= RT_RING_WINDOW) {
            st = gather_both(c, all, bytes);
            if (st != RT_OK)
                c->ops->cancel(c);
        } else {
            st = ring_gather(c, all, bytes);
        }
        if (st != RT_OK)
            return st;
        memcpy(buf, all, bytes);
        for (size_t k = 1; k < n; k++)
            rt_reduce(buf, all + k * bytes, count, t, op);
    } else {
        chunked u = {.c = c, .buf = buf, .count = count, .es = es, .t = t, .op = op, .shift = 0};
        u.nseg = plan_nseg(c, (count + n - 1) / n, es);
        st = ring_chunked(c, &u, 0, 2 * (n - 1));
        if (st != RT_OK)
            return st;
    }
    if (op == RT_AVG)
        rt_scale(buf, count, t, 1.0 / (double)n);
    return RT_OK;
}

/* ---- hierarchical allreduce (c->local, c->cross: hier.c) -------------------
 * Within the host, a reduce-scatter of the balanced split (local rank l ends
 * with part l summed over its host); across hosts, an allreduce of part l
 * among the ranks with local rank l (L rings side by side, each over 1/L of
 * the data); within the host, an allgather of the parts.  (Two steps
 * instead — an allreduce within the host, then one of the whole buffer on
 * each ring across hosts — measured slower from 4 KiB to 128 KiB, np = 4 as
 * 2 x 2 on one machine: 1.2-1.6x with integrity tags, 0.8-1.6x plain; they
 * serve only buffers of fewer elements than ranks per host.)  Every element
 * is reduced in one fixed order, so every rank ends with the same bits.  A
 * failure on either communicator breaks the other and c too, passing the
 * abort record on over each: every rank waits on one of them, and hears. */
static rt_status hier_failed(rt_comm *c, rt_comm *sub, rt_status st)
{
    if (!sub->broken) /* a failure before anything was sent: make it stick */
        rt_comm_fail(sub, st, -1, "%s", rt_strerror(st));
    rt_comm_fail_like(sub == c->local ? c->cross : c->local, sub);
    rt_comm_fail_like(c, sub);
    return c->broken_st;
}

rt_status rt_hier_allreduce(rt_comm *c, void *buf, size_t count, rt_ctype t, rt_redop op)
{
    rt_comm *lc = c->local, *xc = c->cross;
    const size_t es = rt_ctype_size(t), L = (size_t)lc->size;
    rt_status st;
    if (count < L) { /* parts of nothing: the whole buffer on every ring */
        if ((st = rt_allreduce(lc, buf, count, t, op)) != RT_OK)
            return hier_failed(c, lc, st);
        if ((st = rt_allreduce(xc, buf, count, t, op)) != RT_OK)
            return hier_failed(c, xc, st);
        return RT_OK;
    }
    chunked u = {.c = lc, .buf = buf, .count = count, .es = es, .shift = -1, .t = t, .op = op};
    u.nseg = plan_nseg(lc, (count + L - 1) / L, es);
    st = ring_chunked(lc, &u, 0, L - 1);
    if (st != RT_OK)
        return hier_failed(c, lc, st);
    size_t off, len;
    rt_split(count, L, (size_t)lc->rank, &off, &len);
    st = rt_allreduce(xc, (char *)buf + off * es, len, t, op);
    if (st != RT_OK)
        return hier_failed(c, xc, st);
    st = ring_chunked(lc, &u, L - 1, L - 1);
    if (st != RT_OK)
        return hier_failed(c, lc, st);
    return RT_OK;
}

rt_status rt_reduce_scatter(rt_comm *c, void *buf, void *out, size_t count, rt_ctype t,
                            rt_redop op)
{
    rt_status st = check_usable(c);
    if (st != RT_OK)
        return st;
    const size_t es = rt_ctype_size(t), n = (size_t)c->size;
    if (es == 0)
        return RT_ERR_INVALID;
    char *mine = (char *)buf + (size_t)c->rank * count * es;
    if (n > 1 && count > 0) {
        /* shift -1: the reduce-scatter ends with rank r owning block r */
        chunked u = {.c = c, .buf = buf, .count = count * n, .es = es, .block = count,
                     .shift = -1, .t = t, .op = op};
        u.nseg = plan_nseg(c, count, es);
        st = ring_chunked(c, &u, 0, n - 1);
        if (st != RT_OK)
            return st;
    }
    if (op == RT_AVG)
        rt_scale(mine, count, t, 1.0 / (double)n);
    if (out && out != mine)
        memcpy(out, mine, count * es);
    return RT_OK;
}

rt_status rt_allgather(rt_comm *c, const void *send, void *recv, size_t bytes)
{
    rt_status st = check_usable(c);
    if (st != RT_OK)
        return st;
    char *mine = (char *)recv + (size_t)c->rank * bytes;
    if (send && send != mine)
        memmove(mine, send, bytes);
    if (c->size == 1 || bytes == 0)
        return RT_OK;
    return ring_gather(c, recv, bytes);
}

/* ---- broadcast: a pipelined chain from the root round the ring -------------- */

typedef struct bcast {
    char *buf;
    size_t bytes, nseg;
} bcast;

static void bcast_at(const bcast *u, size_t f, void **p, size_t *len)
{
    size_t off;
    rt_split(u->bytes, u->nseg, f, &off, len);
    *p = u->buf + off;
}
static void bcast_send(void *vu, size_t f, const void **p, size_t *len)
{
    void *q;
    bcast_at(vu, f, &q, len);
    *p = q;
}
static void bcast_recv(void *vu, size_t f, void **p, size_t *len, bool *tmp)
{
    bcast_at(vu, f, p, len);
    *tmp = false;
}

rt_status rt_broadcast(rt_comm *c, void *buf, size_t bytes, int root)
{
    rt_status st = check_usable(c);
    if (st != RT_OK)
        return st;
    if (root < 0 || root >= c->size)
        return RT_ERR_INVALID;
    if (c->size == 1 || bytes == 0)
        return RT_OK;
    bcast u = {buf, bytes, (bytes + c->o.max_segment_bytes - 1) / c->o.max_segment_bytes};
    const bool is_root = c->rank == root;
    const bool is_last = c->right == root; /* end of the chain */
    ring_plan p = {.nsend = is_last ? 0 : u.nseg,
                   .nrecv = is_root ? 0 : u.nseg,
                   .nfirst = is_root ? u.nseg : 0,
                   .dep = 0,
                   .u = &u,
                   .send_at = bcast_send,
                   .recv_at = bcast_recv};
    return ring_run(c, &p);
}

rt_status rt_barrier(rt_comm *c)
{
    int32_t one = 1;
    rt_status st = rt_allreduce(c, &one, 1, RT_C_I32, RT_SUM);
    if (st == RT_OK && one != c->size)
        return rt_comm_fail(c, RT_ERR_PROTO, -1, "barrier counted %d ranks, expected %d", one,
                            c->size);
    return st;
}
