/* qp.c — verbsemu's queue pairs: create, the state machine of the verbs
 * spec for RC (RESET -> INIT -> RTR -> RTS, each with the attributes it
 * requires; any -> ERR or RESET), destroy. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia)
{
    if (ia->qp_type != IBV_QPT_RC || !ia->send_cq || !ia->recv_cq || ia->srq) {
        emu_log("ibv_create_qp: only RC queue pairs with their own CQs are emulated: EINVAL");
        errno = EINVAL;
        return NULL;
    }
    if (ia->cap.max_send_wr > 16384 || ia->cap.max_recv_wr > 16384 || ia->cap.max_send_sge > 1 ||
        ia->cap.max_recv_sge > 1) {
        emu_log("ibv_create_qp: capacity beyond the emulated adapter's (16384 requests, one "
                "scatter/gather entry): EINVAL");
        errno = EINVAL;
        return NULL;
    }
    emu_qp *q = calloc(1, sizeof *q);
    if (!q) {
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_lock(&emu.lock);
    uint32_t slot = EMU_MAX_QPS;
    for (uint32_t i = 0; i < EMU_MAX_QPS && slot == EMU_MAX_QPS; i++) {
        uint32_t k = (emu.next_qpn + i) % EMU_MAX_QPS;
        if (!emu.qps[k])
            slot = k;
    }
    if (slot == EMU_MAX_QPS) {
        pthread_mutex_unlock(&emu.lock);
        free(q);
        errno = ENOMEM;
        return NULL;
    }
    emu.next_qpn = slot + 1;
    emu.qps[slot] = q;
    q->qp = (struct ibv_qp){.context = pd->context, .qp_context = ia->qp_context, .pd = pd,
                            .send_cq = ia->send_cq, .recv_cq = ia->recv_cq,
                            .qp_num = slot + 1, .state = IBV_QPS_RESET, .qp_type = IBV_QPT_RC};
    q->cap = ia->cap;
    q->sig_all = ia->sq_sig_all != 0;
    pthread_mutex_unlock(&emu.lock);
    return &q->qp;
}

/* What each transition of an RC QP requires (IB spec 11.2.5.2 / ibv_modify_qp(3)). */
static const struct {
    enum ibv_qp_state from, to;
    int need;
} MOVES[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT,
     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
    {IBV_QPS_INIT, IBV_QPS_INIT, IBV_QP_STATE},
    {IBV_QPS_INIT, IBV_QPS_RTR,
     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER},
    {IBV_QPS_RTR, IBV_QPS_RTS,
     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
         IBV_QP_MAX_QP_RD_ATOMIC},
    {IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_STATE},
};

static void clear_queues(emu_qp *q)
{
    for (emu_swr *w = q->sq_head, *n; w; w = n) {
        n = w->next;
        free(w);
    }
    for (emu_swr *w = q->wait_head, *n; w; w = n) {
        n = w->next;
        free(w);
    }
    for (emu_rwr *r = q->rq_head, *n; r; r = n) {
        n = r->next;
        free(r);
    }
    for (emu_held *h = q->held_head, *n; h; h = n) {
        n = h->next;
        free(h->data);
        free(h);
    }
    q->sq_head = q->sq_tail = q->wait_head = q->wait_tail = NULL;
    q->rq_head = q->rq_tail = NULL;
    q->held_head = q->held_tail = NULL;
    q->sq_count = q->rq_count = 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
    emu_qp *q = (emu_qp *)qp;
    pthread_mutex_lock(&emu.lock);
    const enum ibv_qp_state from = q->qp.state;
    const enum ibv_qp_state to = (mask & IBV_QP_STATE) ? a->qp_state : from;
    int rc = 0;
    if (to == IBV_QPS_ERR) {
        emu_qp_error(q, IBV_WC_WR_FLUSH_ERR, 0);
    } else if (to == IBV_QPS_RESET) {
        clear_queues(q);
        nic_qp_gone(q);
        q->qp.state = IBV_QPS_RESET;
    } else {
        int need = -1;
        for (size_t i = 0; i < sizeof MOVES / sizeof *MOVES; i++)
            if (MOVES[i].from == from && MOVES[i].to == to)
                need = MOVES[i].need;
        if (need < 0) {
            emu_log("ibv_modify_qp: QP %u from state %d to %d is not a transition of RC: EINVAL",
                    qp->qp_num, (int)from, (int)to);
            rc = EINVAL;
        } else if ((mask & need) != need) {
            emu_log("ibv_modify_qp: QP %u to state %d lacks attributes 0x%x: EINVAL", qp->qp_num,
                    (int)to, need & ~mask);
            rc = EINVAL;
        } else if (to == IBV_QPS_INIT && a->port_num != 1) {
            rc = EINVAL;
        } else if (to == IBV_QPS_RTR && !a->ah_attr.is_global) {
            emu_log("ibv_modify_qp: QP %u: verbsemu routes by GID (RoCE): the address vector "
                    "needs is_global and the peer's dgid: EINVAL", qp->qp_num);
            rc = EINVAL;
        }
        if (rc == 0) {
            if (mask & IBV_QP_ACCESS_FLAGS)
                q->access = (int)a->qp_access_flags;
            if (to == IBV_QPS_RTR) {
                q->dest_qpn = a->dest_qp_num;
                memcpy(q->dgid, a->ah_attr.grh.dgid.raw, 16);
                q->min_rnr_timer = a->min_rnr_timer;
            }
            if (to == IBV_QPS_RTS && from == IBV_QPS_RTR) {
                q->timeout = a->timeout;
                q->retry_cnt = a->retry_cnt;
                q->rnr_retry = a->rnr_retry;
            }
            q->qp.state = to;
        }
    }
    pthread_mutex_unlock(&emu.lock);
    nic_kick();
    return rc;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
    emu_qp *q = (emu_qp *)qp;
    pthread_mutex_lock(&emu.lock);
    emu.qps[qp->qp_num - 1] = NULL;
    clear_queues(q); /* what was not sent goes: the adapter no longer reads its memory */
    nic_qp_gone(q);
    pthread_mutex_unlock(&emu.lock);
    free(q);
    return 0;
}
