/* test_verbsemu.c — tools/verbsemu's own contract checks, each shown
 * firing through the plain libibverbs calls (built only with
 * -DRINGTRAIN_VERBS=EMU, CTest label rdma-emu):
 *   - a WRITE WITH IMMEDIATE lands, with both completions;
 *   - posting a send on a QP in RTR, and transitions out of order or
 *     lacking attributes: EINVAL;
 *   - a write outside the remote region, or into one registered without
 *     REMOTE_WRITE: IBV_WC_REM_ACCESS_ERR at the sender, its QP in ERR,
 *     the next request flushed (IBV_WC_WR_FLUSH_ERR);
 *   - a WRITE WITH IMMEDIATE with no posted receive: held, nothing written,
 *     until one is posted (rnr_retry 7); IBV_WC_RNR_RETRY_EXC_ERR with
 *     rnr_retry 0;
 *   - a CQ overrun: ibv_poll_cq fails;
 *   - the completion channel: one event per arming, to acknowledge before
 *     the CQ goes (EBUSY otherwise);
 *   - a peer process that dies: the survivor's write completes with
 *     IBV_WC_RETRY_EXC_ERR within its retry time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BUF 65536

typedef struct pair {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_comp_channel *ch;
    struct ibv_cq *cq_a, *cq_b;
    struct ibv_qp *a, *b; /* a writes into b */
    uint8_t *src, *dst;
    struct ibv_mr *src_mr, *dst_mr;
    union ibv_gid gid;
} pair;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct ibv_qp *make_qp(pair *p, struct ibv_cq *cq, int access)
{
    struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = 16, .max_recv_wr = 16,
                                          .max_send_sge = 1, .max_recv_sge = 1}};
    struct ibv_qp *q = ibv_create_qp(p->pd, &ia);
    assert_non_null(q);
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = access};
    assert_int_equal(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                              IBV_QP_ACCESS_FLAGS), 0);
    return q;
}

static int to_rtr(struct ibv_qp *q, uint32_t dest, const union ibv_gid *gid)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_4096,
                            .dest_qp_num = dest, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
                            .ah_attr = {.is_global = 1, .port_num = 1}};
    memcpy(&a.ah_attr.grh.dgid, gid, 16);
    return ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                    IBV_QP_MIN_RNR_TIMER);
}

static int to_rts(struct ibv_qp *q, int rnr_retry)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS, .timeout = 10, .retry_cnt = 7,
                            .rnr_retry = (uint8_t)rnr_retry, .max_rd_atomic = 1};
    return ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* a and b connected to each other in this process; b may be written with
 * b_access, its region registered with dst_access */
static void pair_open(pair *p, int b_access, int dst_access, int rnr_retry, int cqe)
{
    memset(p, 0, sizeof *p);
    struct ibv_device **l = ibv_get_device_list(NULL);
    assert_non_null(l);
    p->ctx = ibv_open_device(l[0]);
    ibv_free_device_list(l);
    assert_non_null(p->ctx);
    p->pd = ibv_alloc_pd(p->ctx);
    p->ch = ibv_create_comp_channel(p->ctx);
    p->cq_a = ibv_create_cq(p->ctx, cqe, NULL, p->ch, 0);
    p->cq_b = ibv_create_cq(p->ctx, 64, NULL, NULL, 0);
    assert_true(p->pd && p->ch && p->cq_a && p->cq_b);
    assert_int_equal(ibv_query_gid(p->ctx, 1, 0, &p->gid), 0);
    p->src = calloc(1, BUF);
    p->dst = calloc(1, BUF);
    p->src_mr = ibv_reg_mr(p->pd, p->src, BUF, IBV_ACCESS_LOCAL_WRITE);
    p->dst_mr = ibv_reg_mr(p->pd, p->dst, BUF, dst_access);
    assert_true(p->src_mr && p->dst_mr);
    p->a = make_qp(p, p->cq_a, IBV_ACCESS_LOCAL_WRITE);
    p->b = make_qp(p, p->cq_b, b_access);
    assert_int_equal(to_rtr(p->a, p->b->qp_num, &p->gid), 0);
    assert_int_equal(to_rtr(p->b, p->a->qp_num, &p->gid), 0);
    assert_int_equal(to_rts(p->a, rnr_retry), 0);
    assert_int_equal(to_rts(p->b, rnr_retry), 0);
}

static void pair_close(pair *p)
{
    ibv_destroy_qp(p->a);
    ibv_destroy_qp(p->b);
    ibv_dereg_mr(p->src_mr);
    ibv_dereg_mr(p->dst_mr);
    ibv_destroy_cq(p->cq_a);
    ibv_destroy_cq(p->cq_b);
    ibv_destroy_comp_channel(p->ch);
    ibv_dealloc_pd(p->pd);
    ibv_close_device(p->ctx);
    free(p->src);
    free(p->dst);
}

static int post_write(pair *p, uint64_t wr_id, size_t off, size_t len, bool imm, uint32_t rkey)
{
    struct ibv_sge sge = {.addr = (uintptr_t)p->src, .length = (uint32_t)len,
                          .lkey = p->src_mr->lkey};
    struct ibv_send_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
                             .opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(77)},
                       *bad;
    wr.wr.rdma.remote_addr = (uintptr_t)p->dst + off;
    wr.wr.rdma.rkey = rkey;
    return ibv_post_send(p->a, &wr, &bad);
}

static int post_recv(struct ibv_qp *q, uint64_t wr_id)
{
    struct ibv_recv_wr wr = {.wr_id = wr_id}, *bad;
    return ibv_post_recv(q, &wr, &bad);
}

/* one completion from cq within ms (status -1: none) */
static struct ibv_wc wait_one(struct ibv_cq *cq, int ms)
{
    struct ibv_wc wc = {.status = (enum ibv_wc_status)-1};
    for (int64_t end = now_ms() + ms; now_ms() < end;) {
        int n = ibv_poll_cq(cq, 1, &wc);
        assert_true(n >= 0);
        if (n == 1)
            return wc;
        usleep(1000);
    }
    wc.status = (enum ibv_wc_status)-1;
    return wc;
}

static void test_write_imm(void **state)
{
    (void)state;
    pair p;
    pair_open(&p, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE,
              IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE, 7, 64);
    for (int i = 0; i < 4096; i++)
        p.src[i] = (uint8_t)(i * 13 + 1);
    assert_int_equal(post_recv(p.b, 9), 0);
    assert_int_equal(post_write(&p, 1, 100, 4096, true, p.dst_mr->rkey), 0);
    struct ibv_wc r = wait_one(p.cq_b, 2000), s = wait_one(p.cq_a, 2000);
    assert_int_equal(r.status, IBV_WC_SUCCESS);
    assert_int_equal(r.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    assert_int_equal(r.wr_id, 9);
    assert_int_equal(ntohl(r.imm_data), 77);
    assert_int_equal(r.byte_len, 4096);
    assert_int_equal(s.status, IBV_WC_SUCCESS);
    assert_int_equal(s.wr_id, 1);
    assert_memory_equal(p.dst + 100, p.src, 4096); /* visible when the completion is */
    pair_close(&p);
}

static void test_state_machine(void **state)
{
    (void)state;
    pair p;
    pair_open(&p, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE,
              IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE, 7, 64);
    struct ibv_qp *q = make_qp(&p, p.cq_a, IBV_ACCESS_LOCAL_WRITE);
    assert_int_equal(to_rts(q, 7), EINVAL); /* INIT -> RTS skips RTR */
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR};
    assert_int_equal(ibv_modify_qp(q, &a, IBV_QP_STATE), EINVAL); /* lacks the path */
    assert_int_equal(to_rtr(q, p.b->qp_num, &p.gid), 0);
    struct ibv_sge sge = {.addr = (uintptr_t)p.src, .length = 8, .lkey = p.src_mr->lkey};
    struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE},
                       *bad = NULL;
    assert_int_equal(ibv_post_send(q, &wr, &bad), EINVAL); /* RTR: receive only */
    assert_ptr_equal(bad, &wr);
    wr.opcode = IBV_WR_SEND;
    assert_int_equal(to_rts(q, 7), 0);
    assert_int_equal(ibv_post_send(q, &wr, &bad), EINVAL); /* not emulated: said so */
    ibv_destroy_qp(q);
    pair_close(&p);
}

static void access_case(int b_access, int dst_access, size_t off, size_t len)
{
    pair p;
    pair_open(&p, b_access, dst_access, 7, 64);
    assert_int_equal(post_write(&p, 1, off, len, false, p.dst_mr->rkey), 0);
    struct ibv_wc s = wait_one(p.cq_a, 2000);
    assert_int_equal(s.status, IBV_WC_REM_ACCESS_ERR);
    assert_int_equal(p.a->state, IBV_QPS_ERR);
    assert_int_equal(post_write(&p, 2, 0, 8, false, p.dst_mr->rkey), 0);
    s = wait_one(p.cq_a, 2000);
    assert_int_equal(s.status, IBV_WC_WR_FLUSH_ERR); /* later requests are flushed */
    assert_int_equal(s.wr_id, 2);
    for (size_t i = 0; i < BUF; i++)
        assert_int_equal(p.dst[i], 0); /* nothing was written */
    pair_close(&p);
}

static void test_remote_access(void **state)
{
    (void)state;
    const int rw = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    access_case(rw, rw, BUF - 100, 200);                    /* past the region's end */
    access_case(rw, IBV_ACCESS_LOCAL_WRITE, 0, 64);         /* a region not remote-writable */
    access_case(IBV_ACCESS_LOCAL_WRITE, rw, 0, 64);         /* a QP that takes no writes */
}

static void test_receiver_not_ready(void **state)
{
    (void)state;
    const int rw = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    pair p;
    pair_open(&p, rw, rw, 7, 64); /* rnr_retry 7: for ever */
    memset(p.src, 0xab, 64);
    assert_int_equal(post_write(&p, 1, 0, 64, true, p.dst_mr->rkey), 0);
    struct ibv_wc s = wait_one(p.cq_a, 150);
    assert_int_equal((int)s.status, -1); /* held: no completion, */
    assert_int_equal(p.dst[0], 0);  /* nothing written */
    assert_int_equal(post_recv(p.b, 5), 0);
    assert_int_equal(wait_one(p.cq_b, 2000).status, IBV_WC_SUCCESS);
    assert_int_equal(wait_one(p.cq_a, 2000).status, IBV_WC_SUCCESS);
    assert_int_equal(p.dst[63], 0xab);
    pair_close(&p);
    pair_open(&p, rw, rw, 0, 64); /* rnr_retry 0 */
    assert_int_equal(post_write(&p, 1, 0, 64, true, p.dst_mr->rkey), 0);
    assert_int_equal(wait_one(p.cq_a, 2000).status, IBV_WC_RNR_RETRY_EXC_ERR);
    pair_close(&p);
}

static void test_cq_overrun(void **state)
{
    (void)state;
    const int rw = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    pair p;
    pair_open(&p, rw, rw, 7, 2); /* a's CQ holds 2 */
    for (int i = 0; i < 3; i++)
        assert_int_equal(post_write(&p, (uint64_t)i, 0, 8, false, p.dst_mr->rkey), 0);
    struct ibv_wc wc[4];
    int n = 0;
    for (int64_t end = now_ms() + 2000; now_ms() < end && n >= 0;) {
        usleep(20000);
        n = ibv_poll_cq(p.cq_a, 0, wc); /* look without taking */
    }
    assert_int_equal(n, -1);
    assert_int_equal(errno, EOVERFLOW);
    pair_close(&p);
}

static void test_channel(void **state)
{
    (void)state;
    const int rw = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    pair p;
    pair_open(&p, rw, rw, 7, 64);
    assert_int_equal(ibv_req_notify_cq(p.cq_a, 0), 0);
    assert_int_equal(post_write(&p, 1, 0, 8, false, p.dst_mr->rkey), 0);
    struct pollfd pf = {p.ch->fd, POLLIN, 0};
    assert_int_equal(poll(&pf, 1, 2000), 1); /* one event for the armed CQ (maybe late) */
    struct ibv_cq *cq = NULL;
    void *ctx = NULL;
    assert_int_equal(ibv_get_cq_event(p.ch, &cq, &ctx), 0);
    assert_ptr_equal(cq, p.cq_a);
    assert_int_equal(wait_one(p.cq_a, 2000).status, IBV_WC_SUCCESS);
    assert_int_equal(post_write(&p, 2, 0, 8, false, p.dst_mr->rkey), 0); /* not armed: */
    assert_int_equal(wait_one(p.cq_a, 2000).status, IBV_WC_SUCCESS);
    assert_int_equal(poll(&pf, 1, 100), 0); /* no event */
    assert_int_equal(ibv_destroy_cq(p.cq_a), EBUSY); /* its event not acknowledged */
    ibv_ack_cq_events(p.cq_a, 1);
    pair_close(&p);
}

/* A peer in another process that dies: the write to it fails in time. */
static void test_peer_dies(void **state)
{
    (void)state;
    const int rw = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    pair p;
    pair_open(&p, rw, rw, 7, 64);
    int up[2], down[2];
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    pid_t pid = fork();
    if (pid == 0) { /* the peer: its own adapter, one QP and region */
        pair c;
        pair_open(&c, rw, rw, 7, 64);
        struct { uint32_t qpn, rkey; uint64_t addr; union ibv_gid gid; } me = {
            c.b->qp_num, c.dst_mr->rkey, (uintptr_t)c.dst, c.gid};
        uint32_t theirs = 0;
        if (write(up[1], &me, sizeof me) != (ssize_t)sizeof me || read(down[0], &theirs, 4) != 4)
            _exit(1);
        _exit(0); /* without closing anything: as a killed process */
    }
    struct { uint32_t qpn, rkey; uint64_t addr; union ibv_gid gid; } peer;
    assert_int_equal(read(up[0], &peer, sizeof peer), sizeof peer);
    struct ibv_qp *q = make_qp(&p, p.cq_a, IBV_ACCESS_LOCAL_WRITE);
    assert_int_equal(to_rtr(q, peer.qpn, &peer.gid), 0);
    assert_int_equal(to_rts(q, 7), 0);
    uint32_t mine = q->qp_num;
    assert_int_equal(write(down[1], &mine, 4), 4);
    int st = 0;
    waitpid(pid, &st, 0); /* it has exited: its adapter with it */
    struct ibv_sge sge = {.addr = (uintptr_t)p.src, .length = 8, .lkey = p.src_mr->lkey};
    struct ibv_send_wr wr = {.wr_id = 3, .sg_list = &sge, .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED},
                       *bad;
    wr.wr.rdma.remote_addr = peer.addr;
    wr.wr.rdma.rkey = peer.rkey;
    const int64_t t0 = now_ms();
    assert_int_equal(ibv_post_send(q, &wr, &bad), 0);
    struct ibv_wc s = wait_one(p.cq_a, 5000);
    assert_int_equal(s.status, IBV_WC_RETRY_EXC_ERR);
    assert_true(now_ms() - t0 < 3000); /* timeout 10 x 8 retries: about 0.03 s */
    ibv_destroy_qp(q);
    pair_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_imm),          cmocka_unit_test(test_state_machine),
        cmocka_unit_test(test_remote_access),      cmocka_unit_test(test_receiver_not_ready),
        cmocka_unit_test(test_cq_overrun),         cmocka_unit_test(test_channel),
        cmocka_unit_test(test_peer_dies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
