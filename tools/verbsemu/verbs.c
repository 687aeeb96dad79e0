/* verbs.c — verbsemu's libibverbs: the calls transport/verbs.c makes, with
 * the contract a real adapter and rdma-core enforce (README.md):
 *   - one device, "verbsemu0", port 1 active, RoCE-style (LID 0, one GID
 *     that names this process's adapter);
 *   - queue pairs: RC only, RESET -> INIT -> RTR -> RTS with the attribute
 *     masks the verbs spec requires (EINVAL otherwise), any -> ERR/RESET;
 *     posting a send outside RTS, a receive in RESET: EINVAL; in ERR every
 *     request completes with IBV_WC_WR_FLUSH_ERR; more outstanding than the
 *     QP's capacity: ENOMEM; opcodes other than RDMA WRITE [WITH IMM] and
 *     more than one gather entry: EINVAL (not emulated);
 *   - completion queues of the size asked: one more completion is an
 *     overrun (logged; ibv_poll_cq fails from then on); an armed CQ gives
 *     one event on its channel for the next completion (seeded lateness);
 *     a CQ destroyed with events not acknowledged: EBUSY (rdma-core would
 *     block for ever);
 *   - memory regions: local and remote bounds and access flags checked by
 *     the adapter (nic.c) as the data moves. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"

#undef ibv_query_port
#undef ibv_reg_mr

emu_state emu = {.lock = PTHREAD_MUTEX_INITIALIZER, .listen_fd = -1, .epfd = -1};

static struct ibv_device emu_device = {.name = "verbsemu0", .dev_name = "uverbsemu0",
                                       .node_type = IBV_NODE_CA,
                                       .transport_type = IBV_TRANSPORT_IB};

int64_t emu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

uint64_t emu_rand(void)
{
    uint64_t x = emu.rng += 0x9e3779b97f4a7c15ull; /* splitmix64 */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void emu_log(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "verbsemu[%d]: %s\n", (int)getpid(), line);
}

/* ---- completions ---------------------------------------------------------------- */

static void channel_push(emu_cq *c)
{
    emu_channel *ch = (emu_channel *)c->cq.channel;
    EMU_PUSH(ch->q_head, ch->q_tail, c, next_event);
    char one = 1;
    ssize_t r = write(ch->wfd, &one, 1);
    (void)r;
}

void emu_complete(emu_cq *c, const struct ibv_wc *wc)
{
    if (c->overrun)
        return;
    if (c->count == c->cap) {
        c->overrun = true;
        emu_log("CQ overrun: a completion found all %d entries full (ibv_poll_cq fails from "
                "now on, as the adapter's CQ would be in error)", c->cap);
        return;
    }
    c->ring[(c->head + c->count) % c->cap] = *wc;
    c->count++;
    if (c->armed && c->cq.channel) { /* one event per arming, maybe late */
        c->armed = false;
        int64_t delay = emu.max_delay_us > 0 ? (int64_t)(emu_rand() % (uint64_t)emu.max_delay_us)
                                             : 0;
        if (delay == 0)
            channel_push(c);
        else
            c->event_at_ns = emu_now_ns() + delay * 1000;
    }
}

/* the adapter thread, for delayed events whose time has come */
void emu_due_events(int64_t now, int64_t *next)
{
    for (int i = 0; i < emu.ncqs; i++) {
        emu_cq *c = emu.cqs[i];
        if (!c || !c->event_at_ns)
            continue;
        if (c->event_at_ns <= now) {
            c->event_at_ns = 0;
            channel_push(c);
        } else if (c->event_at_ns < *next) {
            *next = c->event_at_ns;
        }
    }
}

static void flush_one(emu_cq *c, uint64_t wr_id, uint32_t qpn, enum ibv_wc_opcode op)
{
    struct ibv_wc wc = {.wr_id = wr_id, .status = IBV_WC_WR_FLUSH_ERR, .opcode = op,
                        .qp_num = qpn};
    emu_complete(c, &wc);
}

void emu_qp_error(emu_qp *q, enum ibv_wc_status first, uint64_t first_wr)
{
    const uint32_t qpn = q->qp.qp_num;
    emu_cq *scq = (emu_cq *)q->qp.send_cq, *rcq = (emu_cq *)q->qp.recv_cq;
    bool firstdone = first == IBV_WC_SUCCESS;
    if (q->qp.state != IBV_QPS_ERR && getenv("VERBSEMU_VERBOSE"))
        emu_log("QP %u to the error state: %s", qpn, ibv_wc_status_str(first));
    q->qp.state = IBV_QPS_ERR;
    for (int list = 0; list < 2; list++) {
        emu_swr **head = list == 0 ? &q->wait_head : &q->sq_head;
        while (*head) {
            emu_swr *w = *head;
            *head = w->next;
            if (!firstdone && w->wr_id == first_wr) {
                struct ibv_wc wc = {.wr_id = w->wr_id, .status = first, .opcode = IBV_WC_RDMA_WRITE,
                                    .qp_num = qpn};
                emu_complete(scq, &wc);
                firstdone = true;
            } else {
                flush_one(scq, w->wr_id, qpn, IBV_WC_RDMA_WRITE);
            }
            free(w);
        }
    }
    q->wait_tail = q->sq_tail = NULL;
    q->sq_count = 0;
    while (q->rq_head) {
        emu_rwr *r = q->rq_head;
        q->rq_head = r->next;
        flush_one(rcq, r->wr_id, qpn, IBV_WC_RECV);
        free(r);
    }
    q->rq_tail = NULL;
    q->rq_count = 0;
    q->fail_at_ns = 0;
}

/* ---- the context ops the inline wrappers call ------------------------------------- */

static int emu_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
    emu_cq *c = (emu_cq *)cq;
    pthread_mutex_lock(&emu.lock);
    if (c->overrun) {
        pthread_mutex_unlock(&emu.lock);
        errno = EOVERFLOW;
        return -1;
    }
    int k = 0;
    for (; k < n && c->count > 0; k++) {
        wc[k] = c->ring[c->head];
        c->head = (c->head + 1) % c->cap;
        c->count--;
    }
    pthread_mutex_unlock(&emu.lock);
    return k;
}

static int emu_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
    (void)solicited_only;
    pthread_mutex_lock(&emu.lock);
    ((emu_cq *)cq)->armed = true; /* for the next completion, not those already there */
    pthread_mutex_unlock(&emu.lock);
    return 0;
}

static int emu_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    emu_qp *q = (emu_qp *)qp;
    int rc = 0;
    pthread_mutex_lock(&emu.lock);
    for (; wr; wr = wr->next) {
        if (q->qp.state == IBV_QPS_ERR) { /* accepted, and flushed */
            flush_one((emu_cq *)qp->send_cq, wr->wr_id, qp->qp_num, IBV_WC_RDMA_WRITE);
            continue;
        }
        if (q->qp.state != IBV_QPS_RTS) {
            emu_log("ibv_post_send on QP %u in state %d (not RTS): EINVAL", qp->qp_num,
                    (int)q->qp.state);
            rc = EINVAL;
        } else if (wr->opcode != IBV_WR_RDMA_WRITE && wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM) {
            emu_log("ibv_post_send: opcode %d is not emulated (RDMA WRITE [WITH IMM] only)",
                    (int)wr->opcode);
            rc = EINVAL;
        } else if (wr->num_sge < 0 || wr->num_sge > 1 ||
                   (uint32_t)wr->num_sge > q->cap.max_send_sge) {
            emu_log("ibv_post_send: %d gather entries (this QP takes %u, verbsemu 1)",
                    wr->num_sge, q->cap.max_send_sge);
            rc = EINVAL;
        } else if ((uint32_t)q->sq_count >= q->cap.max_send_wr) {
            emu_log("ibv_post_send: QP %u already has max_send_wr = %u requests outstanding: "
                    "ENOMEM", qp->qp_num, q->cap.max_send_wr);
            rc = ENOMEM;
        }
        if (rc)
            break;
        emu_swr *w = calloc(1, sizeof *w);
        if (!w) {
            rc = ENOMEM;
            break;
        }
        w->wr_id = wr->wr_id;
        w->raddr = wr->wr.rdma.remote_addr;
        w->rkey = wr->wr.rdma.rkey;
        w->imm_on = wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
        w->imm = wr->imm_data;
        w->signaled = (wr->send_flags & IBV_SEND_SIGNALED) || q->sig_all;
        if (wr->num_sge == 1) {
            w->laddr = wr->sg_list[0].addr;
            w->len = wr->sg_list[0].length;
            w->lkey = wr->sg_list[0].lkey;
        }
        w->seq = q->next_seq++;
        EMU_PUSH(q->sq_head, q->sq_tail, w, next);
        q->sq_count++;
    }
    if (rc && bad)
        *bad = wr;
    pthread_mutex_unlock(&emu.lock);
    nic_kick(); /* the adapter reads the source when it sends, as DMA would */
    return rc;
}

static int emu_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    emu_qp *q = (emu_qp *)qp;
    int rc = 0;
    pthread_mutex_lock(&emu.lock);
    for (; wr; wr = wr->next) {
        if (q->qp.state == IBV_QPS_ERR) {
            flush_one((emu_cq *)qp->recv_cq, wr->wr_id, qp->qp_num, IBV_WC_RECV);
            continue;
        }
        if (q->qp.state == IBV_QPS_RESET) {
            emu_log("ibv_post_recv on QP %u in RESET: EINVAL", qp->qp_num);
            rc = EINVAL;
        } else if ((uint32_t)q->rq_count >= q->cap.max_recv_wr) {
            emu_log("ibv_post_recv: QP %u already has max_recv_wr = %u receives: ENOMEM",
                    qp->qp_num, q->cap.max_recv_wr);
            rc = ENOMEM;
        }
        emu_rwr *r = rc ? NULL : calloc(1, sizeof *r);
        if (!r) {
            rc = rc ? rc : ENOMEM;
            break;
        }
        r->wr_id = wr->wr_id;
        EMU_PUSH(q->rq_head, q->rq_tail, r, next);
        q->rq_count++;
    }
    if (rc && bad)
        *bad = wr;
    if (q->held_head)
        nic_deliver_held(q); /* a write waiting for a receive (RNR) lands now */
    pthread_mutex_unlock(&emu.lock);
    return rc;
}

/* ---- device, PD, memory ----------------------------------------------------------- */

struct ibv_device **ibv_get_device_list(int *num)
{
    struct ibv_device **l = calloc(2, sizeof *l);
    if (!l) {
        errno = ENOMEM;
        return NULL;
    }
    l[0] = &emu_device;
    if (num)
        *num = 1;
    return l;
}

void ibv_free_device_list(struct ibv_device **list) { free(list); }

const char *ibv_get_device_name(struct ibv_device *d) { return d ? d->name : NULL; }

struct ibv_context *ibv_open_device(struct ibv_device *d)
{
    if (d != &emu_device) {
        errno = ENODEV;
        return NULL;
    }
    struct ibv_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return NULL;
    ctx->device = d;
    ctx->ops.poll_cq = emu_poll_cq;
    ctx->ops.req_notify_cq = emu_req_notify_cq;
    ctx->ops.post_send = emu_post_send;
    ctx->ops.post_recv = emu_post_recv;
    ctx->cmd_fd = ctx->async_fd = -1;
    ctx->num_comp_vectors = 1;
    pthread_mutex_init(&ctx->mutex, NULL);
    pthread_mutex_lock(&emu.lock);
    int rc = emu.up ? 0 : nic_start();
    if (rc == 0)
        emu.users++;
    pthread_mutex_unlock(&emu.lock);
    if (rc) {
        free(ctx);
        errno = rc;
        return NULL;
    }
    return ctx;
}

int ibv_close_device(struct ibv_context *ctx)
{
    pthread_mutex_lock(&emu.lock);
    bool last = --emu.users == 0;
    pthread_mutex_unlock(&emu.lock);
    if (last)
        nic_stop();
    free(ctx);
    return 0;
}

int ibv_query_port(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *out)
{
    (void)ctx;
    if (port != 1)
        return EINVAL;
    struct ibv_port_attr *a = (struct ibv_port_attr *)out;
    memset(a, 0, sizeof *a);
    a->state = IBV_PORT_ACTIVE;
    a->max_mtu = a->active_mtu = IBV_MTU_4096;
    a->gid_tbl_len = 1;
    a->max_msg_sz = 1u << 30;
    a->lid = 0;
    a->link_layer = IBV_LINK_LAYER_ETHERNET;
    return 0;
}

int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
    (void)ctx;
    if (port != 1 || index != 0)
        return -1;
    memcpy(gid->raw, emu.gid, 16);
    return 0;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
    struct ibv_pd *pd = calloc(1, sizeof *pd);
    if (pd)
        pd->context = ctx;
    return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
    free(pd);
    return 0;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    if ((access & IBV_ACCESS_REMOTE_WRITE) && !(access & IBV_ACCESS_LOCAL_WRITE)) {
        emu_log("ibv_reg_mr: REMOTE_WRITE without LOCAL_WRITE: EINVAL (as the verbs spec)");
        errno = EINVAL;
        return NULL;
    }
    emu_mr *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    pthread_mutex_lock(&emu.lock);
    uint32_t key = (emu.next_key += 0x101) ^ 0x5a000000u;
    m->mr = (struct ibv_mr){.context = pd->context, .pd = pd, .addr = addr, .length = length,
                            .lkey = key, .rkey = key ^ 0x00a5a5a5u};
    m->access = access;
    m->next = emu.mrs;
    emu.mrs = m;
    pthread_mutex_unlock(&emu.lock);
    return &m->mr;
}

/* what __ibv_reg_mr calls when the access flags are not a constant */
struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                unsigned int access)
{
    if (iova != (uint64_t)(uintptr_t)addr) {
        emu_log("ibv_reg_mr_iova2: an iova other than the address is not emulated: EINVAL");
        errno = EINVAL;
        return NULL;
    }
    return ibv_reg_mr(pd, addr, length, (int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
    pthread_mutex_lock(&emu.lock);
    for (emu_mr **p = &emu.mrs; *p; p = &(*p)->next)
        if (&(*p)->mr == mr) {
            emu_mr *m = *p;
            *p = m->next;
            free(m);
            break;
        }
    pthread_mutex_unlock(&emu.lock);
    return 0;
}

emu_mr *emu_mr_find(uint32_t key, bool remote)
{
    for (emu_mr *m = emu.mrs; m; m = m->next)
        if ((remote ? m->mr.rkey : m->mr.lkey) == key)
            return m;
    return NULL;
}

/* ---- channels and CQs -------------------------------------------------------------- */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
    emu_channel *ch = calloc(1, sizeof *ch);
    int p[2];
    if (!ch || pipe2(p, O_CLOEXEC) != 0) {
        free(ch);
        return NULL;
    }
    ch->ch.context = ctx;
    ch->ch.fd = p[0];
    ch->wfd = p[1];
    return &ch->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *c)
{
    emu_channel *ch = (emu_channel *)c;
    close(ch->ch.fd);
    close(ch->wfd);
    free(ch);
    return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
                             struct ibv_comp_channel *channel, int vector)
{
    (void)vector;
    if (cqe < 1 || cqe > 65536) {
        errno = EINVAL;
        return NULL;
    }
    emu_cq *c = calloc(1, sizeof *c);
    if (!c || !(c->ring = calloc((size_t)cqe, sizeof *c->ring))) {
        free(c);
        errno = ENOMEM;
        return NULL;
    }
    c->cap = cqe;
    c->cq = (struct ibv_cq){.context = ctx, .channel = channel, .cq_context = cq_context,
                            .cqe = cqe};
    pthread_mutex_lock(&emu.lock);
    int slot = -1;
    for (int i = 0; i < emu.ncqs && slot < 0; i++)
        if (!emu.cqs[i])
            slot = i;
    if (slot < 0 && emu.ncqs < (int)(sizeof emu.cqs / sizeof *emu.cqs))
        slot = emu.ncqs++;
    if (slot >= 0)
        emu.cqs[slot] = c;
    pthread_mutex_unlock(&emu.lock);
    if (slot < 0) {
        free(c->ring);
        free(c);
        errno = ENOMEM;
        return NULL;
    }
    return &c->cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
    emu_cq *c = (emu_cq *)cq;
    pthread_mutex_lock(&emu.lock);
    if (c->events_acked != c->events_sent) {
        emu_log("ibv_destroy_cq with %d completion events returned by ibv_get_cq_event and not "
                "acknowledged "
                "(ibv_ack_cq_events): EBUSY (rdma-core would wait for ever)",
                c->events_sent - c->events_acked);
        pthread_mutex_unlock(&emu.lock);
        return EBUSY;
    }
    for (int i = 0; i < emu.ncqs; i++)
        if (emu.cqs[i] == c)
            emu.cqs[i] = NULL;
    emu_channel *ch = (emu_channel *)c->cq.channel;
    for (emu_cq **p = ch ? &ch->q_head : NULL; p && *p;) { /* not yet taken: gone */
        if (*p == c)
            *p = c->next_event;
        else
            p = &(*p)->next_event;
    }
    if (ch) {
        ch->q_tail = NULL;
        for (emu_cq *e = ch->q_head; e; e = e->next_event)
            ch->q_tail = e;
    }
    pthread_mutex_unlock(&emu.lock);
    free(c->ring);
    free(c);
    return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
    emu_channel *ch = (emu_channel *)channel;
    char one;
    if (read(ch->ch.fd, &one, 1) != 1)
        return -1; /* EAGAIN on a non-blocking channel with nothing delivered */
    pthread_mutex_lock(&emu.lock);
    emu_cq *c = ch->q_head;
    if (c) {
        EMU_POP(ch->q_head, ch->q_tail, next_event);
        c->events_sent++; /* returned: to be acknowledged before the CQ goes */
    }
    pthread_mutex_unlock(&emu.lock);
    if (!c)
        return -1;
    *cq = &c->cq;
    *cq_context = c->cq.cq_context;
    return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
    emu_cq *c = (emu_cq *)cq;
    pthread_mutex_lock(&emu.lock);
    c->events_acked += (int)n;
    if (c->events_acked > c->events_sent)
        emu_log("ibv_ack_cq_events acknowledged %d events of %d delivered", c->events_acked,
                c->events_sent);
    pthread_mutex_unlock(&emu.lock);
}

const char *ibv_wc_status_str(enum ibv_wc_status s)
{
    static const char *const names[] = {
        [IBV_WC_SUCCESS] = "success",
        [IBV_WC_LOC_LEN_ERR] = "local length error",
        [IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
        [IBV_WC_LOC_PROT_ERR] = "local protection error",
        [IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
        [IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
        [IBV_WC_REM_ACCESS_ERR] = "remote access error",
        [IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
        [IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
    };
    return (unsigned)s < sizeof names / sizeof *names && names[s] ? names[s] : "unknown";
}
