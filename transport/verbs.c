/* verbs.c — the RDMA transport (libibverbs, RC queue pairs), built when
 * rdma-core's headers are present.
 *
 * Bootstrap: the same authenticated TCP links as the TCP transport (link.c,
 * one connection per neighbour); over them each side sends a 64-byte record
 * with its queue pair (QPN, PSN, LID, GID) and the address and key of the
 * memory the neighbour may write into; both queue pairs go INIT -> RTR -> RTS
 * (rdma-core's rc_pingpong sequence) and a final ready byte is exchanged.
 * The TCP links stay open to carry abort records and the normal-close BYE.
 *
 * Data: the receiver owns a ring of `nslots` slots of (16-byte frame header +
 * max_segment_bytes [+ GCM tag]).  Frame i is copied (sealed, with
 * encryption) into the sender's local staging slot i % nslots and written to
 * the receiver's slot i % nslots with RDMA WRITE WITH IMMEDIATE (immediate =
 * frame index), consuming one pre-posted receive there; RC ordering makes the
 * slot's contents visible when that completion arrives.  After copying a
 * frame out (or reducing it), the receiver writes its consumed-frame count
 * back with another WRITE WITH IMMEDIATE: the sender's credit; the sender
 * never has more than nslots frames unconsumed.  Blocking waits sleep on the
 * completion channel and the TCP links together, so an abort or a dead peer
 * wakes a rank as promptly as on TCP.
 *
 * No verbs device exists on the machines this was written on: it is built
 * everywhere, and runs in CI under tools/verbsemu (an emulated adapter per
 * process, with the verbs contract checked: `scripts/test.sh --rdma-emu`);
 * the conformance suite (tests/test_transport_rdma.c) also runs wherever a
 * real device exists and skips otherwise. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sidelink.h"
#include "rt_log.h"
#include "rt_endian.h"

#define NSLOTS 16
#define INFO_LEN 64
#define WR_DATA 1u  /* wr_id tags */
#define WR_CREDIT 2u
#define SALT_FWD 0x30445746u

typedef struct vb_info {
    uint32_t qpn, psn;
    uint16_t lid;
    uint8_t gid[16];
    uint64_t addr; /* slots (data) or credit word, depending on direction */
    uint32_t rkey;
    uint32_t nslots, slot_bytes;
} vb_info;

typedef struct vb_state {
    rt_sidelink side; /* the TCP links: bootstrap, aborts, BYE */
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_comp_channel *ch;
    struct ibv_cq *cq;
    struct ibv_qp *qp_right, *qp_left;
    uint8_t port;
    int gid_index;
    enum ibv_mtu mtu;
    size_t slot_bytes; /* bytes per slot: header + payload + tag */
    uint8_t *rslots, *sslots;
    struct ibv_mr *rslots_mr, *sslots_mr;
    uint64_t *credit_in;  /* written by the right: frames it consumed */
    uint64_t *credit_out; /* our consumed count, written to the left */
    struct ibv_mr *credit_in_mr, *credit_out_mr;
    vb_info right, left; /* the neighbours' records */
    rt_gcm *seal, *open; /* data frames */
    /* send side: sq.done counts frames issued (copied to staging) */
    rt_postq sq;
    uint64_t s_wr_done, credit;
    /* receive side: rq.done counts frames consumed */
    rt_postq rq;
    uint64_t r_arrived;
    int cq_events; /* to acknowledge */
    bool left_gone; /* the left's end of stream was read (left_gone_why) */
    char left_gone_why[RT_ERR_LEN];
    char left_name[160], right_name[160];
} vb_state;


static void info_encode(const vb_info *v, uint8_t out[INFO_LEN])
{
    memset(out, 0, INFO_LEN);
    memcpy(out, "RTIB", 4);
    rt_put_le32(out + 4, v->qpn);
    rt_put_le32(out + 8, v->psn);
    out[12] = (uint8_t)v->lid;
    out[13] = (uint8_t)(v->lid >> 8);
    memcpy(out + 16, v->gid, 16);
    rt_put_le64(out + 32, v->addr);
    rt_put_le32(out + 40, v->rkey);
    rt_put_le32(out + 44, v->nslots);
    rt_put_le32(out + 48, v->slot_bytes);
}

static rt_status info_decode(const uint8_t in[INFO_LEN], vb_info *v, char *err)
{
    if (memcmp(in, "RTIB", 4) != 0)
        return rt_err(err, RT_ERR_PROTO, "bad queue-pair record from the neighbour");
    v->qpn = rt_get_le32(in + 4);
    v->psn = rt_get_le32(in + 8) & 0xffffff;
    v->lid = (uint16_t)(in[12] | (in[13] << 8));
    memcpy(v->gid, in + 16, 16);
    v->addr = rt_get_le64(in + 32);
    v->rkey = rt_get_le32(in + 40);
    v->nslots = rt_get_le32(in + 44);
    v->slot_bytes = rt_get_le32(in + 48);
    return RT_OK;
}

static rt_status qp_create(vb_state *s, struct ibv_qp **qp, char *err)
{
    struct ibv_qp_init_attr ia = {
        .send_cq = s->cq,
        .recv_cq = s->cq,
        .cap = {.max_send_wr = 2 * NSLOTS + 8, .max_recv_wr = 2 * NSLOTS + 8,
                .max_send_sge = 1, .max_recv_sge = 1},
        .qp_type = IBV_QPT_RC,
    };
    *qp = ibv_create_qp(s->pd, &ia);
    if (!*qp)
        return rt_err(err, RT_ERR_DEVICE, "ibv_create_qp failed: %s", strerror(errno));
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = s->port,
                            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE};
    if (ibv_modify_qp(*qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        return rt_err(err, RT_ERR_DEVICE, "queue pair to INIT failed: %s", strerror(errno));
    return RT_OK;
}

static rt_status qp_connect(vb_state *s, struct ibv_qp *qp, uint32_t my_psn, const vb_info *peer,
                            char *err)
{
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_RTR,
        .path_mtu = s->mtu,
        .dest_qp_num = peer->qpn,
        .rq_psn = peer->psn,
        .max_dest_rd_atomic = 1,
        .min_rnr_timer = 12,
        .ah_attr = {.is_global = 0, .dlid = peer->lid, .sl = 0, .src_path_bits = 0,
                    .port_num = s->port},
    };
    static const uint8_t zero[16];
    if (memcmp(peer->gid, zero, 16) != 0) { /* RoCE, or routed InfiniBand */
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.hop_limit = 1;
        memcpy(&a.ah_attr.grh.dgid, peer->gid, 16);
        a.ah_attr.grh.sgid_index = (uint8_t)s->gid_index;
    }
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        return rt_err(err, RT_ERR_DEVICE, "queue pair to RTR failed: %s", strerror(errno));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = my_psn;
    a.max_rd_atomic = 1;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
        return rt_err(err, RT_ERR_DEVICE, "queue pair to RTS failed: %s", strerror(errno));
    return RT_OK;
}

/* A receive with no buffer: WRITE WITH IMMEDIATE only needs the completion. */
static int post_recv_empty(struct ibv_qp *qp, uint64_t tag)
{
    struct ibv_recv_wr wr = {.wr_id = tag, .sg_list = NULL, .num_sge = 0}, *bad;
    return ibv_post_recv(qp, &wr, &bad);
}

static struct ibv_mr *reg(vb_state *s, void *p, size_t len)
{
    return ibv_reg_mr(s->pd, p, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
}

static void vb_release(vb_state *s)
{
    if (s->qp_left)
        ibv_destroy_qp(s->qp_left);
    if (s->qp_right)
        ibv_destroy_qp(s->qp_right);
    if (s->credit_out_mr)
        ibv_dereg_mr(s->credit_out_mr);
    if (s->credit_in_mr)
        ibv_dereg_mr(s->credit_in_mr);
    if (s->sslots_mr)
        ibv_dereg_mr(s->sslots_mr);
    if (s->rslots_mr)
        ibv_dereg_mr(s->rslots_mr);
    if (s->cq) {
        if (s->cq_events)
            ibv_ack_cq_events(s->cq, (unsigned)s->cq_events);
        ibv_destroy_cq(s->cq);
    }
    if (s->ch)
        ibv_destroy_comp_channel(s->ch);
    if (s->pd)
        ibv_dealloc_pd(s->pd);
    if (s->ctx)
        ibv_close_device(s->ctx);
    free(s->rslots);
    free(s->sslots);
    free(s->credit_in);
    free(s->credit_out);
    rt_gcm_destroy(s->seal);
    rt_gcm_destroy(s->open);
}

/* Open the device and everything that does not depend on the neighbours
 * (device -> PD -> channel -> CQ -> memory -> QPs; vb_release unwinds). */
static rt_status vb_setup(rt_comm *c, vb_state *s, char *err)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list || n == 0) {
        if (list)
            ibv_free_device_list(list);
        return rt_err(err, RT_ERR_UNSUPPORTED, "no RDMA device (ibv_get_device_list found none)");
    }
    const char *want = getenv("RT_IB_DEVICE");
    struct ibv_device *dev = list[0];
    for (int i = 0; want && i < n; i++)
        if (strcmp(ibv_get_device_name(list[i]), want) == 0)
            dev = list[i];
    s->ctx = ibv_open_device(dev);
    ibv_free_device_list(list);
    if (!s->ctx)
        return rt_err(err, RT_ERR_DEVICE, "cannot open the RDMA device");
    s->port = 1;
    s->gid_index = getenv("RT_IB_GID_INDEX") ? atoi(getenv("RT_IB_GID_INDEX")) : 0;
    struct ibv_port_attr pa;
    if (ibv_query_port(s->ctx, s->port, &pa))
        return rt_err(err, RT_ERR_DEVICE, "ibv_query_port failed");
    if (pa.state != IBV_PORT_ACTIVE)
        return rt_err(err, RT_ERR_DEVICE, "RDMA port %u is not active", s->port);
    s->mtu = pa.active_mtu;
    if (!(s->pd = ibv_alloc_pd(s->ctx)))
        return rt_err(err, RT_ERR_DEVICE, "ibv_alloc_pd failed");
    if (!(s->ch = ibv_create_comp_channel(s->ctx)))
        return rt_err(err, RT_ERR_DEVICE, "ibv_create_comp_channel failed");
    fcntl(s->ch->fd, F_SETFL, fcntl(s->ch->fd, F_GETFL, 0) | O_NONBLOCK);
    if (!(s->cq = ibv_create_cq(s->ctx, 8 * NSLOTS + 32, NULL, s->ch, 0)))
        return rt_err(err, RT_ERR_DEVICE, "ibv_create_cq failed");
    s->slot_bytes = RT_FRAME_HDR_LEN + c->o.max_segment_bytes + RT_GCM_TAG_LEN;
    size_t ring = s->slot_bytes * NSLOTS;
    s->rslots = aligned_alloc(4096, (ring + 4095) & ~(size_t)4095);
    s->sslots = aligned_alloc(4096, (ring + 4095) & ~(size_t)4095);
    s->credit_in = aligned_alloc(64, 64);
    s->credit_out = aligned_alloc(64, 64);
    if (!s->rslots || !s->sslots || !s->credit_in || !s->credit_out)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    *s->credit_in = *s->credit_out = 0;
    if (!(s->rslots_mr = reg(s, s->rslots, ring)) || !(s->sslots_mr = reg(s, s->sslots, ring)) ||
        !(s->credit_in_mr = reg(s, s->credit_in, 64)) ||
        !(s->credit_out_mr = reg(s, s->credit_out, 64)))
        return rt_err(err, RT_ERR_DEVICE, "ibv_reg_mr failed: %s", strerror(errno));
    rt_status st = qp_create(s, &s->qp_right, err);
    if (st == RT_OK)
        st = qp_create(s, &s->qp_left, err);
    return st;
}

static rt_status vb_connect(rt_comm *c, rt_deadline_t dl, char *err)
{
    vb_state *s = calloc(1, sizeof *s);
    if (!s)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    c->tp = s;
    rt_status st = vb_setup(c, s, err);
    if (st == RT_OK)
        st = rt_sidelink_open(c, dl, &s->side, err);
    if (st != RT_OK)
        return st;
    snprintf(s->left_name, sizeof s->left_name, "%s", s->side.links.left_name);
    snprintf(s->right_name, sizeof s->right_name, "%s", s->side.links.right_name);
    if (rt_comm_sealed(&c->o)) {
        const bool m = !c->o.encrypt; /* integrity only */
        const rt_hs_result *right = &s->side.links.out_hs[0], *left = &s->side.links.in_hs[0];
        st = rt_gcm_create(right->key_fwd, SALT_FWD, m, &s->seal, err);
        if (st == RT_OK)
            st = rt_gcm_create(left->key_fwd, SALT_FWD, m, &s->open, err);
        if (st != RT_OK)
            return st;
    }
    /* records: to the right, our sending QP and where to put credits; to the
     * left, our receiving QP and the slots it may write */
    union ibv_gid gid;
    memset(&gid, 0, sizeof gid);
    ibv_query_gid(s->ctx, s->port, s->gid_index, &gid);
    struct ibv_port_attr pa;
    ibv_query_port(s->ctx, s->port, &pa);
    uint8_t psn_rand[8];
    rt_random(psn_rand, sizeof psn_rand);
    vb_info to_right = {.qpn = s->qp_right->qp_num, .psn = rt_get_le32(psn_rand) & 0xffffff,
                        .lid = pa.lid, .addr = (uintptr_t)s->credit_in,
                        .rkey = s->credit_in_mr->rkey, .nslots = NSLOTS,
                        .slot_bytes = (uint32_t)s->slot_bytes};
    vb_info to_left = {.qpn = s->qp_left->qp_num, .psn = rt_get_le32(psn_rand + 4) & 0xffffff,
                       .lid = pa.lid, .addr = (uintptr_t)s->rslots, .rkey = s->rslots_mr->rkey,
                       .nslots = NSLOTS, .slot_bytes = (uint32_t)s->slot_bytes};
    memcpy(to_right.gid, &gid, 16);
    memcpy(to_left.gid, &gid, 16);
    uint8_t rb[INFO_LEN], lb[INFO_LEN];
    info_encode(&to_right, rb);
    info_encode(&to_left, lb);
    int fr = s->side.links.out[0], fl = s->side.links.in[0];
    st = rt_sock_write_full(fr, rb, INFO_LEN, dl, err);
    if (st == RT_OK)
        st = rt_sock_write_full(fl, lb, INFO_LEN, dl, err);
    if (st == RT_OK)
        st = rt_sock_read_full(fr, rb, INFO_LEN, dl, err);
    if (st == RT_OK)
        st = info_decode(rb, &s->right, err);
    if (st == RT_OK)
        st = rt_sock_read_full(fl, lb, INFO_LEN, dl, err);
    if (st == RT_OK)
        st = info_decode(lb, &s->left, err);
    if (st != RT_OK) {
        rt_err_prefix(err, "exchanging queue pairs");
        return st;
    }
    if (s->right.nslots != NSLOTS || s->right.slot_bytes != s->slot_bytes)
        return rt_err(err, RT_ERR_PROTO, "%s uses another slot layout (max_segment_bytes differs?)",
                      s->right_name);
    /* receives for incoming data (qp_left) and credits (qp_right), then RTS */
    for (int i = 0; i < 2 * NSLOTS; i++)
        if (post_recv_empty(s->qp_left, WR_DATA) || post_recv_empty(s->qp_right, WR_CREDIT))
            return rt_err(err, RT_ERR_DEVICE, "ibv_post_recv failed");
    st = qp_connect(s, s->qp_right, to_right.psn, &s->right, err);
    if (st == RT_OK)
        st = qp_connect(s, s->qp_left, to_left.psn, &s->left, err);
    if (st != RT_OK)
        return st;
    /* both sides ready before the first write */
    char one = 'R';
    st = rt_sock_write_full(fr, &one, 1, dl, err);
    if (st == RT_OK)
        st = rt_sock_write_full(fl, &one, 1, dl, err);
    if (st == RT_OK)
        st = rt_sock_read_full(fr, &one, 1, dl, err);
    if (st == RT_OK)
        st = rt_sock_read_full(fl, &one, 1, dl, err);
    if (ibv_req_notify_cq(s->cq, 0))
        return rt_err(err, RT_ERR_DEVICE, "ibv_req_notify_cq failed");
    return st;
}

static int poll_cq(rt_comm *c, rt_status *st, char *err);

/* Before the queue pairs go: this rank's data writes are done.  A frame is
 * "sent" for the caller once copied to a staging slot; the adapter may
 * still be writing it, and destroying the QP would drop it (the neighbour,
 * waiting for it, then saw only our end of stream: found under verbsemu, as
 * a barrier at n = 2 that failed "rank 0 closed the connection").  Bounded
 * by the collective deadline, and 5 s: an adapter finishes a queued write
 * in microseconds unless its peer is gone. */
static void drain_writes(rt_comm *c, vb_state *s)
{
    const int64_t wait_us = c->o.timeout_us < 5000000 ? c->o.timeout_us : 5000000;
    const int64_t end = rt_now_ns() + wait_us * 1000;
    char err[RT_ERR_LEN];
    while (s->qp_right && s->s_wr_done < s->sq.done && rt_now_ns() < end) {
        rt_status st = RT_OK;
        if (poll_cq(c, &st, err) == 0)
            usleep(50);
        if (st != RT_OK) /* the neighbour is gone or failed: nothing more to wait for */
            break;
    }
}

static void vb_close(rt_comm *c)
{
    vb_state *s = c->tp;
    if (!s)
        return;
    if (s->cq)
        drain_writes(c, s);
    rt_sidelink_close(c, &s->side);
    vb_release(s);
    free(s);
    c->tp = NULL;
}

static rt_status vb_post_send(rt_comm *c, const void *buf, size_t len, uint32_t seq, uint32_t seg)
{
    vb_state *s = c->tp;
    RT_ASSERT(len <= c->o.max_segment_bytes);
    rt_postq_push(&s->sq, (void *)buf, len, seq, seg);
    return RT_OK;
}

static rt_status vb_post_recv(rt_comm *c, void *buf, size_t len, uint32_t seq, uint32_t seg)
{
    vb_state *s = c->tp;
    RT_ASSERT(len <= c->o.max_segment_bytes);
    rt_postq_push(&s->rq, buf, len, seq, seg);
    return RT_OK;
}

/* Write every send that has a credit and a free staging slot. */
static rt_status issue_sends(rt_comm *c, char *err)
{
    vb_state *s = c->tp;
    while (s->sq.done < s->sq.posted && s->sq.done - s->credit < NSLOTS &&
           s->sq.done - s->s_wr_done < NSLOTS) {
        const rt_post *op = rt_postq_at(&s->sq, s->sq.done);
        size_t slot = s->sq.done % NSLOTS;
        uint8_t *dst = s->sslots + slot * s->slot_bytes;
        rt_frame_hdr h = {RT_FRAME_DATA, s->seal ? RT_FRAME_SEALED : 0, op->seq, op->seg,
                          (uint32_t)op->len};
        rt_frame_encode(&h, dst);
        size_t plen = op->len;
        if (s->seal) {
            if (rt_gcm_seal(s->seal, dst, op->p, op->len, dst + RT_FRAME_HDR_LEN) != RT_OK)
                return rt_err(err, RT_ERR_IO, "sealing a frame failed");
            plen += RT_GCM_TAG_LEN;
        } else if (op->len) {
            memcpy(dst + RT_FRAME_HDR_LEN, op->p, op->len);
        }
        struct ibv_sge sge = {.addr = (uintptr_t)dst, .length = (uint32_t)(RT_FRAME_HDR_LEN + plen),
                              .lkey = s->sslots_mr->lkey};
        struct ibv_send_wr wr = {.wr_id = WR_DATA, .sg_list = &sge, .num_sge = 1,
                                 .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                                 .send_flags = IBV_SEND_SIGNALED,
                                 .imm_data = htonl((uint32_t)s->sq.done)},
                           *bad;
        wr.wr.rdma.remote_addr = s->right.addr + slot * s->slot_bytes;
        wr.wr.rdma.rkey = s->right.rkey;
        if (ibv_post_send(s->qp_right, &wr, &bad)) {
            c->fail_culprit = c->right;
            return rt_err(err, RT_ERR_DEVICE, "ibv_post_send to %s failed", s->right_name);
        }
        s->sq.done++; /* the caller's buffer is free: its bytes are in the staging slot */
    }
    return RT_OK;
}

/* Tell the left neighbour how many of its frames we consumed. */
static rt_status send_credit(rt_comm *c, char *err)
{
    vb_state *s = c->tp;
    *s->credit_out = s->rq.done;
    struct ibv_sge sge = {.addr = (uintptr_t)s->credit_out, .length = 8,
                          .lkey = s->credit_out_mr->lkey};
    struct ibv_send_wr wr = {.wr_id = WR_CREDIT, .sg_list = &sge, .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
                             .imm_data = htonl((uint32_t)s->rq.done)},
                       *bad;
    wr.wr.rdma.remote_addr = s->left.addr;
    wr.wr.rdma.rkey = s->left.rkey;
    if (ibv_post_send(s->qp_left, &wr, &bad)) {
        c->fail_culprit = c->left;
        return rt_err(err, RT_ERR_DEVICE, "ibv_post_send (credit) to %s failed", s->left_name);
    }
    return RT_OK;
}

/* Copy out every frame that has arrived and has a posted receive. */
static rt_status consume(rt_comm *c, char *err)
{
    vb_state *s = c->tp;
    bool any = false;
    while (s->rq.done < s->r_arrived && s->rq.done < s->rq.posted) {
        const rt_post *op = rt_postq_at(&s->rq, s->rq.done);
        const uint8_t *src = s->rslots + (s->rq.done % NSLOTS) * s->slot_bytes;
        rt_frame_hdr h;
        char why[RT_ERR_LEN];
        c->fail_culprit = c->left;
        if (rt_frame_decode(src, RT_FRAME_HDR_LEN, &h, why) != RT_OK)
            return rt_err(err, RT_ERR_PROTO, "bad frame from %s: %s", s->left_name, why);
        if (h.op != RT_FRAME_DATA || h.seq != op->seq || h.seg != op->seg || h.len != op->len)
            return rt_err(err, RT_ERR_PROTO,
                          "%s sent frame %u of collective #%u (%u bytes), expected frame %u of "
                          "#%u (%zu bytes): the ranks called different collectives",
                          s->left_name, h.seg, h.seq, h.len, op->seg, op->seq, op->len);
        if (s->open) {
            if (rt_gcm_open(s->open, src, src + RT_FRAME_HDR_LEN, op->len, op->p) != RT_OK)
                return rt_err(err, RT_ERR_AUTH, "a frame from %s failed authentication",
                              s->left_name);
        } else if (op->len) {
            memcpy(op->p, src + RT_FRAME_HDR_LEN, op->len);
        }
        s->rq.done++;
        any = true;
    }
    return any ? send_credit(c, err) : RT_OK;
}

/* Drain the completion queue; returns how many completions it saw. */
static int poll_cq(rt_comm *c, rt_status *st, char *err)
{
    vb_state *s = c->tp;
    struct ibv_wc wc[32];
    int total = 0, n;
    while ((n = ibv_poll_cq(s->cq, 32, wc)) > 0) {
        for (int i = 0; i < n; i++) {
            bool from_left = wc[i].qp_num == s->qp_left->qp_num;
            if (wc[i].status != IBV_WC_SUCCESS && from_left) {
                /* our QP to the left failed: a credit to a left that has
                 * finished and gone (its last one is written after the
                 * left took every frame it needed), or its flushed
                 * receives.  Fatal only while a receive waits on the left
                 * (vb_wait), as its end of stream is */
                if (!s->left_gone)
                    snprintf(s->left_gone_why, sizeof s->left_gone_why,
                             "RDMA transfer with %s failed: %s", s->left_name,
                             ibv_wc_status_str(wc[i].status));
                s->left_gone = true;
                continue;
            }
            if (wc[i].status != IBV_WC_SUCCESS) {
                c->fail_culprit = from_left ? c->left : c->right;
                *st = rt_err(err, RT_ERR_IO, "RDMA transfer with %s failed: %s",
                             from_left ? s->left_name : s->right_name,
                             ibv_wc_status_str(wc[i].status));
                return total;
            }
            if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
                struct ibv_qp *qp = from_left ? s->qp_left : s->qp_right;
                if (from_left)
                    s->r_arrived++; /* a data frame landed in our slots */
                else
                    s->credit = *(volatile uint64_t *)s->credit_in; /* the right consumed more */
                if (post_recv_empty(qp, from_left ? WR_DATA : WR_CREDIT)) {
                    *st = rt_err(err, RT_ERR_DEVICE, "ibv_post_recv failed");
                    return total;
                }
            } else if (wc[i].opcode == IBV_WC_RDMA_WRITE && wc[i].wr_id == WR_DATA) {
                s->s_wr_done++;
            }
        }
        total += n;
    }
    if (n < 0)
        *st = rt_err(err, RT_ERR_DEVICE, "ibv_poll_cq failed");
    return total;
}

static void report(vb_state *s, int *nsend, int *nrecv)
{
    *nsend += rt_postq_report(&s->sq);
    *nrecv += rt_postq_report(&s->rq);
}

static rt_status vb_wait(rt_comm *c, rt_deadline_t dl, int *nsend, int *nrecv, char *err)
{
    vb_state *s = c->tp;
    const int64_t spin_end = rt_now_ns() + c->o.spin_us * 1000;
    const int64_t yield_end = spin_end + c->o.yield_us * 1000;
    for (;;) {
        rt_status st = RT_OK;
        poll_cq(c, &st, err);
        if (st == RT_OK)
            st = consume(c, err);
        if (st == RT_OK)
            st = issue_sends(c, err);
        if (st != RT_OK)
            return st;
        if (s->side.right_bye && s->sq.done < s->sq.posted) {
            c->fail_culprit = c->right;
            return rt_err(err, RT_ERR_IO, "%s closed its communicator while this rank still had "
                                          "data for it", s->right_name);
        }
        if (s->sq.done > s->sq.seen || s->rq.done > s->rq.seen) {
            report(s, nsend, nrecv);
            return RT_OK;
        }
        if (rt_now_ns() < spin_end)
            continue;
        if (rt_now_ns() < yield_end) { /* ranks sharing cores: let the others run */
            sched_yield();
            continue;
        }
        /* the left's end of stream, with a receive waiting: whatever it wrote
         * before closing has been taken above (its writes complete before its
         * close: drain_writes), so that receive can never be satisfied */
        if (s->left_gone && s->rq.done < s->rq.posted) {
            c->fail_culprit = c->left;
            return rt_err(err, RT_ERR_IO, "%s", s->left_gone_why);
        }
        /* sleep on the completion channel and both control links */
        struct pollfd p[3] = {{s->ch->fd, POLLIN, 0},
                              {s->side.right_closed ? -1 : s->side.links.out[0], POLLIN, 0},
                              {s->left_gone ? -1 : s->side.links.in[0], POLLIN, 0}};
        int ms = rt_deadline_ms_left(dl);
        if (ms == 0 && rt_now_ns() >= dl)
            return rt_err(err, RT_ERR_TIMEOUT, "timed out");
        if (poll(p, 3, ms) < 0 && errno != EINTR)
            return rt_err(err, RT_ERR_IO, "poll: %s", strerror(errno));
        if (p[0].revents & POLLIN) {
            struct ibv_cq *cq;
            void *ctx;
            if (ibv_get_cq_event(s->ch, &cq, &ctx) == 0) {
                s->cq_events++;
                if (s->cq_events >= 64) {
                    ibv_ack_cq_events(s->cq, (unsigned)s->cq_events);
                    s->cq_events = 0;
                }
                ibv_req_notify_cq(s->cq, 0);
            }
        }
        if (p[1].revents && (st = rt_sidelink_read(c, &s->side, true, err)) != RT_OK)
            return st;
        if (p[2].revents && (st = rt_sidelink_read(c, &s->side, false, err)) != RT_OK) {
            /* the left's end of stream fails nothing while no receive waits on
             * it: this rank may have all it needs from the left and only sends
             * to finish (as shm.c; test_rdma_left_done_first) */
            if (!s->side.left_eof)
                return st;
            s->left_gone = true;
            snprintf(s->left_gone_why, sizeof s->left_gone_why, "%s", err);
        }
    }
}

static rt_status vb_await_abort(rt_comm *c, rt_deadline_t dl)
{
    return rt_sidelink_await_abort(c, &((vb_state *)c->tp)->side, dl);
}

static void vb_cancel(rt_comm *c)
{
    vb_state *s = c->tp;
    if (!s)
        return;
    /* data is copied out of our slots only into posted buffers; forgetting
     * the posts keeps later arrivals out of the caller's memory */
    rt_postq_cancel(&s->sq);
    rt_postq_cancel(&s->rq);
}

/* Abort records go on the TCP links, in both directions: no frame boundary
 * to wait for, since no data travels there. */
static void vb_abort(rt_comm *c, const rt_abort_info *info)
{
    vb_state *s = c->tp;
    if (s)
        rt_sidelink_abort(c, &s->side, info);
}

const rt_transport_ops rt_verbs_ops = {
    .name = "rdma",
    .connect = vb_connect,
    .post_send = vb_post_send,
    .post_recv = vb_post_recv,
    .wait = vb_wait,
    .await_abort = vb_await_abort,
    .cancel = vb_cancel,
    .abort = vb_abort,
    .close = vb_close,
};

bool rt_rdma_available(void)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (list)
        ibv_free_device_list(list);
    return n > 0;
}
