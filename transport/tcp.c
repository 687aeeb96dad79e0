/* tcp.c — the TCP transport.
 *
 * Rank r opens `sockets` connections to its right neighbour (it is the
 * initiator of the handshake on those) and accepts as many from its left.
 * Frames go out on the right connections and come in on the left ones;
 * frame i uses connection i % sockets, so several streams can fill a link.
 * The reverse direction of each connection carries only abort records, so
 * an abort never has to wait for a frame boundary: it travels leftwards,
 * rank to rank, while data flows rightwards.  With three ranks or more a
 * second ring runs the other way round on one connection to each
 * neighbour of its own (d[1]: to the left, from the right), for the small
 * allreduce that sends to both neighbours (ring.c, gather_both); it has the
 * same framing, sealing and abort records as the first.
 *
 * The data path is non-blocking: wait() tries every connection that has
 * work (receives first, so the sender is never held up by us), spins for
 * spin_us on would-block, then yields the core for yield_us (ranks sharing
 * cores) before sleeping in poll(), and hands whole frames
 * to sendmsg/recvmsg as header + payload iovecs.  After the ring is up a
 * thread keeps answering late connections on the listening socket with a
 * refusal and a log line, so a stranger probing the port never disturbs a
 * collective. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ctl.h"
#include "link.h"
#include "rt_log.h"
#include "rt_transport.h"
#include "sock.h"

#define MAX_SOCKETS RT_MAX_SOCKETS
#define SALT_FWD 0x30445746u /* "FWD0" */
#define SALT_REV 0x30564552u /* "REV0" */

/* what the receiving side of a connection is in the middle of */
typedef enum { RD_DATA, RD_SKIP, RD_ABORT } rd_mode;

typedef struct tcp_conn {
    int fd;
    rt_gcm *seal; /* frames this side writes */
    rt_gcm *open; /* frames this side reads */
    /* the frame in progress on the data direction */
    uint64_t next;   /* index of the next op this connection carries */
    size_t done;     /* bytes of it moved so far (header + payload [+ tag]) */
    /* sending: its header and tag (or ciphertext) are made.  Making them
     * takes the next nonce, so a frame is sealed once: again after a send
     * that moved nothing (EAGAIN) put this side one nonce ahead of the
     * receiver, whose check of the frame then failed */
    bool made;
    uint8_t hdr[RT_FRAME_HDR_LEN];
    uint8_t *cipher; /* encrypted payload + tag (encryption only) */
    uint8_t tag[RT_GCM_TAG_LEN]; /* integrity only: the tag after the clear payload */
    /* receiving side: an unposted data frame being skipped, or an abort
     * record that arrived in place of a data frame */
    rd_mode mode;
    size_t need;  /* payload bytes of the frame being read (RD_SKIP / RD_ABORT) */
    rt_frame_hdr ctl; /* RD_ABORT: the record's header */
    uint8_t *scratch; /* frame_cap + tag bytes: where skipped payloads go */
    uint8_t abuf[RT_ABORT_MAX_LEN + RT_GCM_TAG_LEN];
    /* reverse direction: a control record being read */
    uint8_t rev[RT_CTL_MAX];
    size_t rev_fill;
    bool bye;    /* the peer closed its communicator normally */
    bool closed; /* ... and its end of stream has been read */
    bool gone;   /* the right neighbour went away without a goodbye */
    int gone_errno;
} tcp_conn;

/* One direction round the ring: frames go out to `right` and come in from
 * `left`.  d[0] is the ring itself; d[1], when opened (three ranks or more),
 * runs the other way round on connections of its own, for collectives that
 * send to both neighbours (its right is this rank's left neighbour). */
typedef struct tcp_ring {
    int n; /* connections to each neighbour; 0: not opened */
    tcp_conn out[MAX_SOCKETS], in[MAX_SOCKETS];
    rt_postq sq, rq;  /* sends to the right, receives from the left */
    size_t frame_cap; /* largest payload a frame may carry */
    int left, right;  /* ranks */
    char left_name[160], right_name[160];
} tcp_ring;

typedef struct tcp_state {
    rt_links links; /* the sockets, the listener, the late acceptor */
    tcp_ring d[2];
} tcp_state;

/* ---- connect ------------------------------------------------------------- */

static rt_status set_ciphers(rt_comm *c, tcp_conn *k, const rt_hs_result *r, bool initiator,
                             char *err)
{
    if (!rt_comm_sealed(&c->o))
        return RT_OK;
    const bool mac_only = !c->o.encrypt;
    /* the initiator writes data forward and reads aborts back */
    const uint8_t *wkey = initiator ? r->key_fwd : r->key_rev;
    const uint8_t *rkey = initiator ? r->key_rev : r->key_fwd;
    rt_status st = rt_gcm_create(wkey, initiator ? SALT_FWD : SALT_REV, mac_only, &k->seal, err);
    if (st == RT_OK)
        st = rt_gcm_create(rkey, initiator ? SALT_REV : SALT_FWD, mac_only, &k->open, err);
    if (st == RT_OK && !mac_only && !(k->cipher = malloc(c->o.max_segment_bytes + RT_GCM_TAG_LEN)))
        st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    return st;
}

/* Ring g's connections from the links: out[k] initiated, in[k] accepted. */
static rt_status ring_setup(rt_comm *c, tcp_ring *g, const int *out, const rt_hs_result *out_hs,
                            const int *in, const rt_hs_result *in_hs, char *err)
{
    rt_status st = RT_OK;
    for (int k = 0; k < g->n && st == RT_OK; k++) {
        g->out[k].fd = out[k];
        g->in[k].fd = in[k];
        st = set_ciphers(c, &g->out[k], &out_hs[k], true, err);
        if (st == RT_OK)
            st = set_ciphers(c, &g->in[k], &in_hs[k], false, err);
        if (st == RT_OK && !(g->in[k].scratch = malloc(g->frame_cap + RT_GCM_TAG_LEN)))
            st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    return st;
}

static rt_status tcp_connect(rt_comm *c, rt_deadline_t dl, char *err)
{
    tcp_state *s = calloc(1, sizeof *s);
    if (!s)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    c->tp = s;
    for (int d = 0; d < 2; d++) {
        tcp_ring *g = &s->d[d];
        g->frame_cap = c->o.max_segment_bytes;
        g->left = d ? c->right : c->left;
        g->right = d ? c->left : c->right;
        for (int k = 0; k < MAX_SOCKETS; k++) {
            g->out[k].fd = g->in[k].fd = -1;
            g->out[k].next = g->in[k].next = (uint64_t)k; /* connection k: frames k, k+n, ... */
        }
    }
    /* the way back: one connection each, its frames are small */
    rt_status st = rt_links_open(c, c->o.sockets, 1, dl, &s->links, err);
    if (st != RT_OK)
        return st;
    s->d[0].n = c->o.sockets;
    s->d[1].n = s->links.nrev;
    snprintf(s->d[0].left_name, sizeof s->d[0].left_name, "%s", s->links.left_name);
    snprintf(s->d[0].right_name, sizeof s->d[0].right_name, "%s", s->links.right_name);
    snprintf(s->d[1].left_name, sizeof s->d[1].left_name, "%s", s->links.right_name);
    snprintf(s->d[1].right_name, sizeof s->d[1].right_name, "%s", s->links.left_name);
    st = ring_setup(c, &s->d[0], s->links.out, s->links.out_hs, s->links.in, s->links.in_hs, err);
    if (st == RT_OK)
        st = ring_setup(c, &s->d[1], s->links.out_rev, s->links.out_rev_hs, s->links.in_rev,
                        s->links.in_rev_hs, err);
    return st;
}

static void tcp_close(rt_comm *c)
{
    tcp_state *s = c->tp;
    if (!s)
        return;
    /* a normal departure: tell the left neighbour (of each ring) before its
     * end of stream */
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < s->d[d].n && !c->broken; k++)
            if (s->d[d].in[k].fd >= 0) {
                uint8_t bye[RT_CTL_MAX];
                size_t n = rt_ctl_encode(bye, c->seq, NULL, s->d[d].in[k].seal);
                ssize_t r = n ? send(s->d[d].in[k].fd, bye, n, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
                (void)r;
            }
    rt_links_close(&s->links); /* closes the sockets too */
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < MAX_SOCKETS; k++) {
            tcp_conn *cs[2] = {&s->d[d].out[k], &s->d[d].in[k]};
            for (int j = 0; j < 2; j++) {
                rt_gcm_destroy(cs[j]->seal);
                rt_gcm_destroy(cs[j]->open);
                free(cs[j]->cipher);
                free(cs[j]->scratch);
            }
        }
    free(s);
    c->tp = NULL;
}

/* ---- data path ---------------------------------------------------------- */

static void post(tcp_ring *g, rt_postq *q, void *buf, size_t len, uint32_t seq, uint32_t seg)
{
    RT_ASSERT(g->n > 0 && len <= g->frame_cap);
    rt_postq_push(q, buf, len, seq, seg);
}

static rt_status tcp_post_send(rt_comm *c, const void *buf, size_t len, uint32_t seq, uint32_t seg)
{
    tcp_state *s = c->tp;
    post(&s->d[0], &s->d[0].sq, (void *)buf, len, seq, seg);
    return RT_OK;
}

static rt_status tcp_post_recv(rt_comm *c, void *buf, size_t len, uint32_t seq, uint32_t seg)
{
    tcp_state *s = c->tp;
    post(&s->d[0], &s->d[0].rq, buf, len, seq, seg);
    return RT_OK;
}

/* the other way round: to the left neighbour, from the right */
static bool tcp_has_left(rt_comm *c) { return ((tcp_state *)c->tp)->d[1].n > 0; }

static rt_status tcp_post_send_left(rt_comm *c, const void *buf, size_t len, uint32_t seq,
                                    uint32_t seg)
{
    tcp_state *s = c->tp;
    post(&s->d[1], &s->d[1].sq, (void *)buf, len, seq, seg);
    return RT_OK;
}

static rt_status tcp_post_recv_right(rt_comm *c, void *buf, size_t len, uint32_t seq,
                                     uint32_t seg)
{
    tcp_state *s = c->tp;
    post(&s->d[1], &s->d[1].rq, buf, len, seq, seg);
    return RT_OK;
}

static rt_status io_error(rt_comm *c, const tcp_ring *g, int side, int e, char *err)
{
    const bool left = side < 0;
    c->fail_culprit = left ? g->left : g->right;
    const char *who = left ? g->left_name : g->right_name;
    if (e == 0)
        return rt_err(err, RT_ERR_IO, "%s closed the connection (process gone?)", who);
    if (e == EPIPE || e == ECONNRESET)
        return rt_err(err, RT_ERR_IO, "lost the connection to %s (%s): the process died or its "
                                      "host went away", who, strerror(e));
    return rt_err(err, RT_ERR_IO, "connection to %s failed: %s", who, strerror(e));
}

static rt_status reverse_read(rt_comm *c, tcp_ring *g, int k, char *err);

/* A send to the right neighbour failed with errno e.  A neighbour that saw
 * a failure first sends an abort record back and may then exit, and its
 * exit resets this connection: the record, already in our receive buffer,
 * names the rank really at fault, so it wins over blaming the neighbour. */
static rt_status send_failed(rt_comm *c, tcp_ring *g, int k, int e, char *err)
{
    if (!g->out[k].closed && reverse_read(c, g, k, err) == RT_ERR_ABORTED)
        return RT_ERR_ABORTED;
    return io_error(c, g, +1, e, err);
}

/* The iovecs of what is left of a frame laid out as n spans, done bytes of
 * which have moved. */
static int iov_rest(struct iovec iov[3], const struct iovec span[3], int n, size_t done)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (done >= span[i].iov_len) {
            done -= span[i].iov_len;
            continue;
        }
        iov[k++] = (struct iovec){(uint8_t *)span[i].iov_base + done, span[i].iov_len - done};
        done = 0;
    }
    return k;
}

/* A data frame as it goes on the wire: header, then the payload in clear
 * (plain, or integrity with the tag after it) or encrypted with its tag. */
static int frame_spans(tcp_conn *cn, void *payload, size_t len, struct iovec span[3])
{
    int n = 0;
    span[n++] = (struct iovec){cn->hdr, RT_FRAME_HDR_LEN};
    rt_gcm *g = cn->seal ? cn->seal : cn->open;
    if (g && !rt_gcm_mac_only(g)) {
        span[n++] = (struct iovec){cn->cipher, len + RT_GCM_TAG_LEN};
        return n;
    }
    span[n++] = (struct iovec){payload, len};
    if (g)
        span[n++] = (struct iovec){cn->tag, RT_GCM_TAG_LEN};
    return n;
}

/* Push the current frame of connection k; *moved if any byte went. */
static rt_status send_progress(rt_comm *c, tcp_ring *g, int k, bool *moved, char *err)
{
    tcp_conn *cn = &g->out[k];
    if (cn->gone && cn->next < g->sq.posted)
        return io_error(c, g, +1, cn->gone_errno, err);
    if (cn->bye && cn->next < g->sq.posted) {
        c->fail_culprit = g->right;
        return rt_err(err, RT_ERR_IO,
                      "%s closed its communicator while this rank still had data for it (did "
                      "the ranks call different collectives?)",
                      g->right_name);
    }
    while (cn->next < g->sq.posted) {
        rt_post *op = rt_postq_at(&g->sq, cn->next);
        const bool sealed = cn->seal != NULL;
        const size_t plen = op->len + (sealed ? RT_GCM_TAG_LEN : 0);
        if (!cn->made) {
            rt_frame_hdr h = {RT_FRAME_DATA, sealed ? RT_FRAME_SEALED : 0, op->seq, op->seg,
                              (uint32_t)op->len};
            rt_frame_encode(&h, cn->hdr);
            rt_status st = RT_OK;
            if (sealed && rt_gcm_mac_only(cn->seal)) /* integrity: the tag only */
                st = rt_gcm_tag(cn->seal, cn->hdr, op->p, op->len, cn->tag);
            else if (sealed)
                st = rt_gcm_seal(cn->seal, cn->hdr, op->p, op->len, cn->cipher);
            if (st != RT_OK)
                return rt_err(err, RT_ERR_IO, "sealing a frame failed");
            cn->made = true;
        }
        struct iovec span[3], iov[3];
        int niov = iov_rest(iov, span, frame_spans(cn, op->p, op->len, span), cn->done);
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
        ssize_t r = sendmsg(cn->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return RT_OK;
            return send_failed(c, g, k, errno, err);
        }
        *moved = true;
        cn->done += (size_t)r;
        if (cn->done < RT_FRAME_HDR_LEN + plen)
            return RT_OK;
        op->done = true;
        cn->done = 0;
        cn->made = false;
        cn->next += (uint64_t)g->n;
    }
    return RT_OK;
}

/* An abort record (in abuf, need bytes) arrived from the left in place of
 * a data frame: decode it into c->abort_in. */
static rt_status left_abort(rt_comm *c, const tcp_ring *g, tcp_conn *cn, char *err)
{
    char why[RT_ERR_LEN];
    c->fail_culprit = g->left;
    rt_status st = rt_ctl_decode(&cn->ctl, cn->hdr, cn->abuf, cn->need, cn->open, &c->abort_in,
                                 why);
    if (st != RT_OK)
        return rt_err(err, st, "%s from %s", why, g->left_name);
    return rt_err(err, RT_ERR_ABORTED, "%s", c->abort_in.reason);
}

/* Read frames from the left on connection k.  Posted receives land in their
 * buffers (header and payload in one recvmsg); with `drain`, frames nobody
 * posted are read and dropped, so an abort behind them can be seen; an abort
 * record in place of a data frame ends the read with RT_ERR_ABORTED. */
static rt_status recv_progress(rt_comm *c, tcp_ring *g, int k, bool drain, bool *moved, char *err)
{
    tcp_conn *cn = &g->in[k];
    for (;;) {
        const bool posted = cn->next < g->rq.posted;
        rt_post *op = posted ? rt_postq_at(&g->rq, cn->next) : NULL;
        const bool sealed = cn->open != NULL;
        struct iovec iov[3], span[3];
        int niov = 0, nspan = 0;
        size_t total; /* bytes of the current frame, header included */
        if (cn->mode == RD_DATA) {
            if (!posted && !drain)
                return RT_OK;
            if (posted) {
                total = RT_FRAME_HDR_LEN + op->len + (sealed ? RT_GCM_TAG_LEN : 0);
                nspan = frame_spans(cn, op->p, op->len, span);
                niov = iov_rest(iov, span, nspan, cn->done);
            } else { /* draining: the header alone, then we know the size */
                total = RT_FRAME_HDR_LEN;
                iov[niov++] = (struct iovec){cn->hdr + cn->done, RT_FRAME_HDR_LEN - cn->done};
            }
        } else {
            uint8_t *dst = cn->mode == RD_ABORT ? cn->abuf : cn->scratch;
            size_t off = cn->done - RT_FRAME_HDR_LEN;
            total = RT_FRAME_HDR_LEN + cn->need;
            iov[niov++] = (struct iovec){dst + off, cn->need - off};
        }
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
        ssize_t r = total > cn->done ? recvmsg(cn->fd, &mh, MSG_DONTWAIT) : 0;
        if (total > cn->done && r == 0)
            return io_error(c, g, -1, 0, err);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return RT_OK;
            return io_error(c, g, -1, errno, err);
        }
        *moved = *moved || r > 0;
        size_t before = cn->done;
        cn->done += (size_t)r;
        if (cn->mode == RD_DATA && before < RT_FRAME_HDR_LEN && cn->done >= RT_FRAME_HDR_LEN) {
            rt_frame_hdr h;
            char why[RT_ERR_LEN];
            c->fail_culprit = g->left;
            if (rt_frame_decode(cn->hdr, RT_FRAME_HDR_LEN, &h, why) != RT_OK)
                return rt_err(err, RT_ERR_PROTO, "bad frame from %s: %s", g->left_name, why);
            const size_t tag = (h.flags & RT_FRAME_SEALED) ? RT_GCM_TAG_LEN : 0;
            if (h.op == RT_FRAME_ABORT) {
                /* whatever followed the header went into the data buffer */
                size_t early = cn->done - RT_FRAME_HDR_LEN;
                rt_status st = rt_ctl_body_len(cn->hdr, sealed, &cn->ctl, &cn->need, why);
                if (st != RT_OK)
                    return rt_err(err, st, "%s from %s", why, g->left_name);
                cn->mode = RD_ABORT;
                if (early > cn->need)
                    return rt_err(err, RT_ERR_PROTO, "bad abort frame from %s", g->left_name);
                for (int i = 1, got = 0; i < nspan && got < (int)early; i++) {
                    size_t n = early - (size_t)got < span[i].iov_len ? early - (size_t)got
                                                                      : span[i].iov_len;
                    memcpy(cn->abuf + got, span[i].iov_base, n);
                    got += (int)n;
                }
            } else if (h.op != RT_FRAME_DATA) {
                return rt_err(err, RT_ERR_PROTO, "unexpected frame (op %u) from %s", h.op,
                              g->left_name);
            } else if (((h.flags & RT_FRAME_SEALED) != 0) != sealed) {
                return rt_err(err, sealed ? RT_ERR_AUTH : RT_ERR_PROTO,
                              sealed ? "a frame without its authentication tag from %s (this "
                                       "ring's frames are sealed)"
                                     : "a sealed frame from %s on a ring without sealing",
                              g->left_name);
            } else if (!posted) {
                if (h.len > g->frame_cap)
                    return rt_err(err, RT_ERR_PROTO, "oversized frame from %s", g->left_name);
                cn->mode = RD_SKIP;
                cn->need = h.len + tag;
            } else if (h.seq != op->seq || h.seg != op->seg || h.len != op->len) {
                return rt_err(err, RT_ERR_PROTO,
                              "%s sent frame %u of collective #%u (%u bytes), expected frame %u "
                              "of #%u (%zu bytes): the ranks called different collectives",
                              g->left_name, h.seg, h.seq, h.len, op->seg, op->seq, op->len);
            }
            continue;
        }
        if (cn->done < total)
            continue;
        /* a whole frame is in */
        rd_mode m = cn->mode;
        cn->done = 0;
        cn->mode = RD_DATA;
        if (m == RD_ABORT)
            return left_abort(c, g, cn, err);
        if (m == RD_SKIP) {
            if (sealed)
                rt_gcm_skip(cn->open);
            continue;
        }
        if (sealed && (rt_gcm_mac_only(cn->open)
                           ? rt_gcm_verify(cn->open, cn->hdr, op->p, op->len, cn->tag)
                           : rt_gcm_open(cn->open, cn->hdr, cn->cipher, op->len, op->p)) != RT_OK) {
            c->fail_culprit = g->left;
            return rt_err(err, RT_ERR_AUTH, "a frame from %s failed authentication",
                          g->left_name);
        }
        op->done = true;
        cn->next += (uint64_t)g->n;
    }
}

/* Read what ring g's right neighbour sent back on connection k: only an abort
 * record may come; end of stream means it is gone. */
static rt_status reverse_read(rt_comm *c, tcp_ring *g, int k, char *err)
{
    tcp_conn *cn = &g->out[k];
    for (;;) {
        /* only control records come back: BYE, or an ABORT */
        size_t want = RT_FRAME_HDR_LEN, body = 0;
        rt_frame_hdr h = {0};
        char why[RT_ERR_LEN];
        if (cn->rev_fill >= RT_FRAME_HDR_LEN) {
            rt_status st = rt_ctl_body_len(cn->rev, cn->open != NULL, &h, &body, why);
            if (st != RT_OK) {
                c->fail_culprit = g->right;
                return rt_err(err, st, "%s sent unexpected data back: %s", g->right_name, why);
            }
            want += body;
        }
        if (cn->rev_fill == want && cn->rev_fill >= RT_FRAME_HDR_LEN) {
            c->fail_culprit = g->right;
            rt_status st = rt_ctl_decode(&h, cn->rev, cn->rev + RT_FRAME_HDR_LEN, body, cn->open,
                                         &c->abort_in, why);
            cn->rev_fill = 0;
            if (st != RT_OK)
                return rt_err(err, st, "%s from %s", why, g->right_name);
            if (h.op == RT_FRAME_BYE) {
                c->fail_culprit = -1;
                cn->bye = true;
                continue;
            }
            return rt_err(err, RT_ERR_ABORTED, "%s", c->abort_in.reason);
        }
        if (cn->closed)
            return RT_OK;
        ssize_t r = recv(cn->fd, cn->rev + cn->rev_fill, want - cn->rev_fill, MSG_DONTWAIT);
        if (r == 0 && cn->bye) {
            cn->closed = true; /* a normal departure */
            return RT_OK;
        }
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return RT_OK;
        if (r < 0 && cn->bye && (errno == ECONNRESET || errno == EPIPE)) {
            cn->closed = true;
            return RT_OK;
        }
        if (r <= 0) {
            /* gone without a goodbye: an error now only if this rank still
             * has data for it; a neighbour that finished the collective and
             * exited does not fail what can still complete (the next send
             * to it will report the departure) */
            cn->closed = cn->gone = true;
            cn->gone_errno = r == 0 ? 0 : errno;
            if (cn->next < g->sq.posted)
                return io_error(c, g, +1, cn->gone_errno, err);
            return RT_OK;
        }
        cn->rev_fill += (size_t)r;
    }
}

static rt_status tcp_wait(rt_comm *c, rt_deadline_t dl, int *nsend, int *nrecv, char *err)
{
    tcp_state *s = c->tp;
    const int64_t spin_end = rt_now_ns() + c->o.spin_us * 1000;
    const int64_t yield_end = spin_end + c->o.yield_us * 1000;
    for (;;) {
        bool moved = false;
        rt_status st = RT_OK;
        int done[2][2] = {{0, 0}, {0, 0}};
        for (int d = 0; d < 2; d++) {
            tcp_ring *g = &s->d[d];
            for (int k = 0; k < g->n && st == RT_OK; k++)
                st = recv_progress(c, g, k, false, &moved, err);
            for (int k = 0; k < g->n && st == RT_OK; k++)
                st = send_progress(c, g, k, &moved, err);
            if (st != RT_OK)
                return st;
            rt_postq_advance(&g->sq);
            rt_postq_advance(&g->rq);
            done[d][0] = rt_postq_report(&g->sq);
            done[d][1] = rt_postq_report(&g->rq);
        }
        if (done[0][0] || done[0][1] || done[1][0] || done[1][1]) {
            *nsend += done[0][0];
            *nrecv += done[0][1];
            c->left_sent += done[1][0];
            c->right_recvd += done[1][1];
            return RT_OK;
        }
        if (moved || rt_now_ns() < spin_end)
            continue;
        if (rt_now_ns() < yield_end) { /* ranks sharing cores: let the others run */
            sched_yield();
            continue;
        }
        /* nothing moves: sleep until a socket is ready, an abort or end of
         * stream arrives from the right, or the deadline */
        struct pollfd p[4 * MAX_SOCKETS];
        int np = 0;
        for (int d = 0; d < 2; d++) {
            tcp_ring *g = &s->d[d];
            for (int k = 0; k < g->n; k++) {
                bool sending = g->out[k].next < g->sq.posted;
                short ev = (short)((g->out[k].closed ? 0 : POLLIN) | (sending ? POLLOUT : 0));
                p[np++] = (struct pollfd){g->out[k].fd, ev, 0};
            }
        }
        const int nout = np;
        for (int d = 0; d < 2; d++)
            for (int k = 0; k < s->d[d].n; k++)
                if (s->d[d].in[k].next < s->d[d].rq.posted)
                    p[np++] = (struct pollfd){s->d[d].in[k].fd, POLLIN, 0};
        int ms = rt_deadline_ms_left(dl);
        if (ms == 0 && rt_now_ns() >= dl)
            return rt_err(err, RT_ERR_TIMEOUT, "timed out");
        int r = poll(p, (nfds_t)np, ms);
        if (r < 0 && errno != EINTR)
            return rt_err(err, RT_ERR_IO, "poll: %s", strerror(errno));
        for (int i = 0; i < nout && r > 0; i++) {
            tcp_ring *g = &s->d[i < s->d[0].n ? 0 : 1];
            int k = i < s->d[0].n ? i : i - s->d[0].n;
            if (p[i].revents & (POLLIN | POLLHUP | POLLERR)) {
                if ((st = reverse_read(c, g, k, err)) != RT_OK)
                    return st;
                if (g->out[k].bye && g->out[k].next < g->sq.posted)
                    return send_progress(c, g, k, &moved, err); /* reports the departure */
            }
        }
    }
}

static rt_status tcp_await_abort(rt_comm *c, rt_deadline_t dl)
{
    tcp_state *s = c->tp;
    char err[RT_ERR_LEN];
    bool left_gone[2] = {false, s->d[1].n == 0}, right_gone[2] = {false, s->d[1].n == 0};
    for (;;) {
        /* from the left: data frames still in flight (dropped), then maybe an
         * abort; from the right: an abort on the reverse direction (of each
         * ring) */
        bool moved = false;
        struct pollfd p[4 * MAX_SOCKETS];
        int np = 0;
        for (int d = 0; d < 2; d++) {
            tcp_ring *g = &s->d[d];
            for (int k = 0; k < g->n && !left_gone[d]; k++) {
                rt_status st = recv_progress(c, g, k, true, &moved, err);
                if (st == RT_ERR_ABORTED)
                    return st;
                left_gone[d] = st != RT_OK;
            }
            for (int k = 0; k < g->n; k++) {
                p[np++] = (struct pollfd){(g->out[k].closed || right_gone[d]) ? -1 : g->out[k].fd,
                                          POLLIN, 0};
                p[np++] = (struct pollfd){left_gone[d] ? -1 : g->in[k].fd, POLLIN, 0};
            }
        }
        if (left_gone[0] && right_gone[0] && left_gone[1] && right_gone[1])
            return RT_ERR_TIMEOUT; /* nobody left to tell us anything */
        int ms = rt_deadline_ms_left(dl);
        if (ms == 0)
            return RT_ERR_TIMEOUT;
        if (moved)
            continue;
        if (poll(p, (nfds_t)np, ms) <= 0)
            continue;
        for (int d = 0, i = 0; d < 2; d++)
            for (int k = 0; k < s->d[d].n; k++, i += 2)
                if (p[i].revents) {
                    rt_status st = reverse_read(c, &s->d[d], k, err);
                    if (st == RT_ERR_ABORTED)
                        return st;
                    right_gone[d] = right_gone[d] || st != RT_OK;
                }
    }
}

/* Finish the frame in progress on connection k (any bytes will do: the
 * collective is lost) so that an abort record can follow it; never longer
 * than until dl.  A frame sealed but not started is in progress too: the
 * receiver expects its nonce before the record's. */
static bool finish_frame(tcp_ring *g, int k, rt_deadline_t dl)
{
    tcp_conn *cn = &g->out[k];
    if (!cn->made)
        return true;
    const rt_post *op = rt_postq_at(&g->sq, cn->next);
    const size_t total = RT_FRAME_HDR_LEN + op->len + (cn->seal ? RT_GCM_TAG_LEN : 0);
    struct iovec span[3];
    const int nspan = frame_spans(cn, op->p, op->len, span);
    while (cn->done < total) {
        struct iovec iov[3];
        struct msghdr mh = {.msg_iov = iov,
                            .msg_iovlen = (size_t)iov_rest(iov, span, nspan, cn->done)};
        ssize_t r = sendmsg(cn->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r > 0) {
            cn->done += (size_t)r;
            continue;
        }
        if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return false;
        struct pollfd p = {cn->fd, POLLOUT, 0};
        int ms = rt_deadline_ms_left(dl);
        if (ms == 0 || poll(&p, 1, ms) <= 0)
            return false;
    }
    cn->done = 0;
    cn->made = false;
    cn->next += (uint64_t)g->n;
    return true;
}

static void send_abort_frame(tcp_conn *cn, uint32_t seq, const rt_abort_info *info)
{
    uint8_t frame[RT_CTL_MAX];
    size_t n = rt_ctl_encode(frame, seq, info, cn->seal);
    ssize_t r = n ? send(cn->fd, frame, n, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
    (void)r;
}

/* Pass an abort record on in both directions: back to the left on the
 * reverse direction of its connections (always possible), and on to the
 * right in place of the next data frame, after finishing the one in
 * progress (possible unless the right stopped reading; bounded to 50 ms).
 * Both ways matter: a rank that is alive but never arrived forwards nothing,
 * so the news must be able to go round it the other way. */
static void tcp_abort(rt_comm *c, const rt_abort_info *info)
{
    tcp_state *s = c->tp;
    if (!s)
        return;
    rt_deadline_t dl = rt_deadline_in_us(50000);
    for (int d = 0; d < 2; d++) { /* each ring: back on its reverse direction, then on */
        tcp_ring *g = &s->d[d];
        for (int k = 0; k < g->n; k++)
            if (g->in[k].fd >= 0)
                send_abort_frame(&g->in[k], c->seq, info);
        for (int k = 0; k < g->n; k++)
            if (g->out[k].fd >= 0 && !g->out[k].bye && finish_frame(g, k, dl))
                send_abort_frame(&g->out[k], c->seq, info);
    }
}

/* Posted operations only live in this rank's queues; the kernel never writes
 * into them.  Forget them (the communicator is broken anyway). */
static void tcp_cancel(rt_comm *c)
{
    tcp_state *s = c->tp;
    if (!s)
        return;
    for (int d = 0; d < 2; d++) {
        rt_postq_cancel(&s->d[d].sq);
        rt_postq_cancel(&s->d[d].rq);
    }
}

const rt_transport_ops rt_tcp_ops = {
    .name = "tcp",
    .connect = tcp_connect,
    .post_send = tcp_post_send,
    .post_recv = tcp_post_recv,
    .has_left = tcp_has_left,
    .post_send_left = tcp_post_send_left,
    .post_recv_right = tcp_post_recv_right,
    .wait = tcp_wait,
    .await_abort = tcp_await_abort,
    .cancel = tcp_cancel,
    .abort = tcp_abort,
    .close = tcp_close,
};
