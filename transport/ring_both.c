/* ring_both.c — the plans for transports that link each rank to both ring
 * neighbours (TCP with three ranks or more: a second ring the other way
 * round).  Each posts and counts its own frames beside ring.c's engine,
 * which streams one way only.  Four ranks' pairs (0,1) and (2,3), then (1,2)
 * and (3,0), are all neighbours, so the classic pairwise algorithms run on
 * neighbour links alone. */
#include <string.h>

#include "reduce.h"
#include "ring.h"

static size_t mod(long a, long n) { return (size_t)(((a % n) + n) % n); }

/* The small path both ways round (transports that link each rank to its
 * left neighbour too: has_left): this rank's buffer goes to both
 * neighbours and each stream passes on what it brings, so the n - 1 buffers
 * arrive in n/2 hops instead of n - 1, the same bytes moved.  From the left
 * come ranks r-1 .. r-nl, from the right r+1 .. r+nr.  all holds n buffers
 * of `bytes`, this rank's in place; on return every slot is filled. */
rt_status gather_both(rt_comm *c, char *all, size_t bytes)
{
    const long n = c->size, r = c->rank;
    const long nl = n / 2, nr = n - 1 - nl;
    const uint32_t seq = ++c->seq;
    const rt_deadline_t dl = rt_deadline_in_us(c->timeout_us);
    char msg[RT_ERR_LEN];
    long sent_r = 0, sent_l = 0, got_l = 0, got_r = 0; /* completed */
    long post_r = 1, post_l = 1;                       /* sends posted */
    rt_status st = RT_OK;
    c->recv_frames = 0;
    c->left_sent = c->right_recvd = 0;
    for (long f = 0; f < nl && st == RT_OK; f++)
        st = c->ops->post_recv(c, all + mod(r - 1 - f, n) * bytes, bytes, seq, (uint32_t)f);
    for (long f = 0; f < nr && st == RT_OK; f++)
        st = c->ops->post_recv_right(c, all + mod(r + 1 + f, n) * bytes, bytes, seq,
                                     (uint32_t)f);
    if (st == RT_OK)
        st = c->ops->post_send(c, all + (size_t)r * bytes, bytes, seq, 0);
    if (st == RT_OK)
        st = c->ops->post_send_left(c, all + (size_t)r * bytes, bytes, seq, 0);
    if (st != RT_OK)
        return ring_failure(c, st, "cannot post a frame", 0, seq, c->left);
    while (got_l < nl || got_r < nr || sent_r < nl || sent_l < nr) {
        int ns = 0, nrc = 0;
        c->fail_culprit = -1;
        st = c->ops->wait(c, dl, &ns, &nrc, msg);
        if (st != RT_OK)
            return ring_failure(c, st, msg, (size_t)(got_l + got_r), seq, c->left);
        sent_r += ns;
        got_l += nrc;
        sent_l += c->left_sent;
        got_r += c->right_recvd;
        c->left_sent = c->right_recvd = 0;
        c->recv_frames = (uint64_t)(got_l + got_r);
        /* send f onwards carries what receive f - 1 brought */
        for (; post_r < nl && post_r <= got_l && st == RT_OK; post_r++)
            st = c->ops->post_send(c, all + mod(r - post_r, n) * bytes, bytes, seq,
                                   (uint32_t)post_r);
        for (; post_l < nr && post_l <= got_r && st == RT_OK; post_l++)
            st = c->ops->post_send_left(c, all + mod(r + post_l, n) * bytes, bytes, seq,
                                        (uint32_t)post_l);
        if (st != RT_OK)
            return ring_failure(c, st, "cannot post a send", (size_t)(got_l + got_r), seq, c->left);
    }
    return RT_OK;
}

/* Progress until something completes or dl passes, counting only what
 * moves between this rank and its partner on the right or the left: the
 * sends and receives completed are added to *sent and *got.  A failure
 * becomes the communicator's, naming the partner (ring_failure). */
static rt_status wait_partner(rt_comm *c, rt_deadline_t dl, bool right, uint32_t seq,
                              size_t recvd, size_t *sent, size_t *got)
{
    char msg[RT_ERR_LEN];
    int ns = 0, nr = 0;
    c->fail_culprit = -1;
    rt_status st = c->ops->wait(c, dl, &ns, &nr, msg);
    if (st != RT_OK)
        return ring_failure(c, st, msg, recvd, seq, right ? c->right : c->left);
    *sent += (size_t)(right ? ns : c->left_sent);
    *got += (size_t)(right ? c->right_recvd : nr);
    c->left_sent = c->right_recvd = 0;
    return RT_OK;
}

/* Four ranks with both rings: recursive doubling on neighbour pairs, (0,1)
 * and (2,3), then (1,2) and (3,0): two hops of one frame each way, where
 * the small path needs three.  Each step adds the partner's buffer to this
 * rank's; the partner adds this one's to its own, and a + b == b + a, so
 * every rank ends with (a0 + a1) + (a2 + a3), the same bits everywhere.
 * tmp holds `bytes`. */
rt_status pairs4(rt_comm *c, char *buf, char *tmp, size_t count, size_t es, rt_ctype t,
                 rt_redop op)
{
    const size_t bytes = count * es;
    const uint32_t seq = ++c->seq;
    const rt_deadline_t dl = rt_deadline_in_us(c->timeout_us);
    c->recv_frames = 0;
    for (uint32_t step = 0; step < 2; step++) {
        const bool right = (c->rank % 2 == 0) == (step == 0);
        rt_status st = right ? c->ops->post_recv_right(c, tmp, bytes, seq, step)
                             : c->ops->post_recv(c, tmp, bytes, seq, step);
        if (st == RT_OK)
            st = right ? c->ops->post_send(c, buf, bytes, seq, step)
                       : c->ops->post_send_left(c, buf, bytes, seq, step);
        if (st != RT_OK)
            return ring_failure(c, st, "cannot post a frame", step, seq,
                                right ? c->right : c->left);
        size_t sent = 0, got = 0;
        c->left_sent = c->right_recvd = 0;
        while (sent < 1 || got < 1)
            if ((st = wait_partner(c, dl, right, seq, step, &sent, &got)) != RT_OK)
                return st;
        c->recv_frames = step + 1;
        rt_reduce(buf, tmp, count, t, op);
    }
    return RT_OK;
}

/* Elements [off, off + len) of a buffer, moved in nseg segments of at most
 * max_segment_bytes: both ends split the same length alike (rt_split). */
typedef struct span {
    size_t off, len, nseg;
} span;

static span make_span(const rt_comm *c, size_t off, size_t len, size_t es)
{
    size_t per = c->o.max_segment_bytes / es;
    return (span){off, len, len == 0 ? 0 : (len + per - 1) / per};
}

static void seg_of(const span *s, size_t j, size_t *off, size_t *len)
{
    rt_split(s->len, s->nseg, j, off, len);
    *off += s->off;
}

/* One step of halving4 with the partner on the right or the left: send the
 * span snd of buf, receive the span rcv — reduced into buf through c->tmp
 * when `reduce`, else in place — as frames (seq, step << 24 | segment). */
static rt_status exchange(rt_comm *c, uint32_t seq, rt_deadline_t dl, uint32_t step,
                          bool right, char *buf, size_t es, span snd, span rcv, bool reduce,
                          rt_ctype t, rt_redop op)
{
    const int from = right ? c->right : c->left;
    const uint32_t tag = step << 24; /* frame indices: step, then segment */
    const size_t rwin = reduce ? RT_RING_TMP : RT_RING_WINDOW;
    size_t sp = 0, sd = 0, rp = 0, rd = 0;
    c->left_sent = c->right_recvd = 0;
    while (sd < snd.nseg || rd < rcv.nseg) {
        rt_status st = RT_OK;
        for (; st == RT_OK && sp < snd.nseg && sp - sd < RT_RING_WINDOW; sp++) {
            size_t off, len;
            seg_of(&snd, sp, &off, &len);
            st = right ? c->ops->post_send(c, buf + off * es, len * es, seq, tag | (uint32_t)sp)
                       : c->ops->post_send_left(c, buf + off * es, len * es, seq,
                                                tag | (uint32_t)sp);
        }
        for (; st == RT_OK && rp < rcv.nseg && rp - rd < rwin; rp++) {
            size_t off, len;
            seg_of(&rcv, rp, &off, &len);
            void *dst = reduce ? c->tmp[rp % RT_RING_TMP] : buf + off * es;
            st = right ? c->ops->post_recv_right(c, dst, len * es, seq, tag | (uint32_t)rp)
                       : c->ops->post_recv(c, dst, len * es, seq, tag | (uint32_t)rp);
        }
        if (st != RT_OK)
            return ring_failure(c, st, "cannot post a frame", c->recv_frames, seq, from);
        size_t sent = 0, got = 0;
        if ((st = wait_partner(c, dl, right, seq, c->recv_frames, &sent, &got)) != RT_OK)
            return st;
        sd += sent;
        /* receives complete in the order posted: reduce each as it lands */
        for (size_t k = 0; k < got; k++, rd++) {
            if (!reduce)
                continue;
            size_t off, len;
            seg_of(&rcv, rd, &off, &len);
            rt_reduce(buf + off * es, c->tmp[rd % RT_RING_TMP], len, t, op);
        }
        c->recv_frames += got;
    }
    return RT_OK;
}

/* Rabenseifner's allreduce on neighbour pairs: the pairs (0,1), (2,3)
 * exchange halves, ranks 1 and 2 keeping the lower one and 0 and 3 the
 * upper, and each adds its partner's copy of the half it keeps; then the
 * pairs (1,2), (3,0), who now keep the same half, do the same with its
 * quarters; the allgather retraces both steps.  Four steps where the
 * chunked ring takes six, the same bytes per rank.  Quarter q is computed
 * once, as (a_k + a_partner) + (the other pair's sum): by a + b == b + a the
 * bits of (a0 + a1) + (a2 + a3), as pairs4 gives. */
rt_status halving4(rt_comm *c, char *buf, size_t count, size_t es, rt_ctype t, rt_redop op)
{
    const int r = c->rank;
    const bool right_a = r % 2 == 0, right_b = r % 2 == 1; /* where the partner is */
    const bool lower_h = r == 1 || r == 2, lower_q = r % 2 == 1;
    size_t hoff, hlen, ooff, olen; /* the half kept and the half given */
    rt_split(count, 2, lower_h ? 0 : 1, &hoff, &hlen);
    rt_split(count, 2, lower_h ? 1 : 0, &ooff, &olen);
    size_t qoff, qlen, poff, plen; /* the quarter of it kept and the one given */
    rt_split(hlen, 2, lower_q ? 0 : 1, &qoff, &qlen);
    rt_split(hlen, 2, lower_q ? 1 : 0, &poff, &plen);
    qoff += hoff;
    poff += hoff;
    const uint32_t seq = ++c->seq;
    const rt_deadline_t dl = rt_deadline_in_us(c->timeout_us);
    c->recv_frames = 0;
    rt_status st = exchange(c, seq, dl, 0, right_a, buf, es, make_span(c, ooff, olen, es),
                            make_span(c, hoff, hlen, es), true, t, op);
    if (st == RT_OK)
        st = exchange(c, seq, dl, 1, right_b, buf, es, make_span(c, poff, plen, es),
                      make_span(c, qoff, qlen, es), true, t, op);
    if (st == RT_OK)
        st = exchange(c, seq, dl, 2, right_b, buf, es, make_span(c, qoff, qlen, es),
                      make_span(c, poff, plen, es), false, t, op);
    if (st == RT_OK)
        st = exchange(c, seq, dl, 3, right_a, buf, es, make_span(c, hoff, hlen, es),
                      make_span(c, ooff, olen, es), false, t, op);
    return st;
}
