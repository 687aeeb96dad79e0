/* nic.c — verbsemu's adapter: one thread per process, listening on the
 * abstract Unix socket "verbsemu-<GID in hex>"; a QP in RTS connects to its
 * peer's adapter by the peer's GID and sends its RDMA writes there as
 * messages.  The receiving adapter checks them as a responder would and
 * answers each with an acknowledgement or a NAK:
 *   - the destination QP must exist and be in RTR or RTS, with
 *     IBV_ACCESS_REMOTE_WRITE; the rkey must name a region registered with
 *     REMOTE_WRITE that holds [addr, addr + len): else a remote access
 *     error (the sender's request completes with IBV_WC_REM_ACCESS_ERR, its
 *     QP goes to ERR and every later request is flushed);
 *   - a WRITE WITH IMMEDIATE consumes a posted receive; with none, RC's
 *     receiver-not-ready: the message is held (nothing written) until one
 *     is posted, or, with rnr_retry < 7, until the retries run out
 *     (IBV_WC_RNR_RETRY_EXC_ERR at the sender); later messages to that QP
 *     wait behind it (RC's order);
 *   - the data is in the receiver's memory before its completion, and
 *     before the sender's (RC: a completion means what came before it is
 *     visible);
 *   - the sender's memory is read when the adapter sends, not at post
 *     (memory reused before its completion goes out changed, as with DMA),
 *     through its lkey's region and bounds (IBV_WC_LOC_PROT_ERR otherwise);
 *   - a peer adapter that goes away (its process died): the sender's
 *     outstanding requests fail with IBV_WC_RETRY_EXC_ERR after the QP's
 *     timeout x (retry_cnt + 1), as an adapter's retries would.
 * Output is buffered and non-blocking: two adapters writing to each other
 * never wait on each other. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "emu.h"

enum { MSG_WRITE = 1, MSG_ACK = 2 };

typedef struct __attribute__((packed)) emu_msg {
    uint32_t type, dst_qpn, src_qpn, len;
    uint64_t raddr, seq;
    uint32_t rkey, imm, imm_on, status;
} emu_msg;

static socklen_t gid_addr(const uint8_t gid[16], struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "verbsemu-");
    for (int i = 0; i < 16; i++)
        n += snprintf(a->sun_path + 1 + n, sizeof a->sun_path - 1 - (size_t)n, "%02x", gid[i]);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static emu_conn *conn_new(int fd, bool out)
{
    emu_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->fd = fd;
    c->out = out;
    c->next = emu.conns;
    emu.conns = c;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
    epoll_ctl(emu.epfd, EPOLL_CTL_ADD, fd, &ev);
    return c;
}

static void conn_want_out(emu_conn *c, bool on)
{
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | (on ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(emu.epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void conn_flush(emu_conn *c)
{
    while (!c->dead && c->o_off < c->o_len) {
        ssize_t w = send(c->fd, c->obuf + c->o_off, c->o_len - c->o_off, MSG_NOSIGNAL);
        if (w > 0) {
            c->o_off += (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            conn_want_out(c, true);
            return;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else {
            c->dead = true;
        }
    }
    c->o_off = c->o_len = 0;
    conn_want_out(c, false);
}

static bool conn_put(emu_conn *c, const emu_msg *m, const void *data, size_t len)
{
    if (c->dead)
        return false;
    size_t need = c->o_len + sizeof *m + len;
    if (need > c->o_cap) {
        size_t cap = c->o_cap ? c->o_cap : 65536;
        while (cap < need)
            cap *= 2;
        uint8_t *b = realloc(c->obuf, cap);
        if (!b)
            return false;
        c->obuf = b;
        c->o_cap = cap;
    }
    memcpy(c->obuf + c->o_len, m, sizeof *m);
    if (len)
        memcpy(c->obuf + c->o_len + sizeof *m, data, len);
    c->o_len += sizeof *m + len;
    conn_flush(c);
    return true;
}

static void ack(emu_conn *from, const emu_msg *m, enum ibv_wc_status st)
{
    emu_msg a = {.type = MSG_ACK, .dst_qpn = m->src_qpn, .src_qpn = m->dst_qpn, .seq = m->seq,
                 .status = (uint32_t)st};
    if (from && !from->dead)
        conn_put(from, &a, NULL, 0);
}

/* the adapter's retries: 4.096 us x 2^timeout, retry_cnt + 1 times (max 5 s) */
static int64_t retry_ns(const emu_qp *q)
{
    double one = 4096.0 * (double)(1ull << (q->timeout ? q->timeout : 14));
    double t = one * (q->retry_cnt + 1);
    return t > 5e9 ? 5000000000LL : (int64_t)t;
}

/* ---- receiving ------------------------------------------------------------------- */

/* Check and apply a write to q; false: it must wait for a receive. */
static bool apply(emu_qp *q, emu_conn *from, const emu_msg *m, const uint8_t *data)
{
    emu_mr *mr = emu_mr_find(m->rkey, true);
    const uint64_t lo = mr ? (uint64_t)(uintptr_t)mr->mr.addr : 0;
    if (!(q->access & IBV_ACCESS_REMOTE_WRITE) || !mr || !(mr->access & IBV_ACCESS_REMOTE_WRITE) ||
        m->raddr < lo || m->raddr + m->len > lo + mr->mr.length || m->raddr + m->len < m->raddr) {
        emu_log("QP %u: a remote write of %u bytes at 0x%llx with rkey 0x%x is outside every "
                "region this QP may write: remote access error", q->qp.qp_num, m->len,
                (unsigned long long)m->raddr, m->rkey);
        ack(from, m, IBV_WC_REM_ACCESS_ERR);
        return true;
    }
    if (m->imm_on && !q->rq_head)
        return false; /* receiver not ready */
    if (m->len)
        memcpy((void *)(uintptr_t)m->raddr, data, m->len);
    if (m->imm_on) {
        emu_rwr *r = q->rq_head;
        EMU_POP(q->rq_head, q->rq_tail, next);
        q->rq_count--;
        struct ibv_wc wc = {.wr_id = r->wr_id, .status = IBV_WC_SUCCESS,
                            .opcode = IBV_WC_RECV_RDMA_WITH_IMM, .byte_len = m->len,
                            .imm_data = m->imm, .qp_num = q->qp.qp_num,
                            .src_qp = m->src_qpn, .wc_flags = IBV_WC_WITH_IMM};
        free(r);
        emu_complete((emu_cq *)q->qp.recv_cq, &wc);
    }
    ack(from, m, IBV_WC_SUCCESS);
    return true;
}

static void hold(emu_qp *q, emu_conn *from, const emu_msg *m, const uint8_t *data)
{
    emu_held *h = calloc(1, sizeof *h);
    if (!h || (m->len && !(h->data = malloc(m->len)))) {
        free(h);
        ack(from, m, IBV_WC_RNR_RETRY_EXC_ERR);
        return;
    }
    h->from = from;
    h->src_qpn = m->src_qpn;
    h->rkey = m->rkey;
    h->imm = m->imm;
    h->imm_on = m->imm_on != 0;
    h->len = m->len;
    h->raddr = m->raddr;
    h->seq = m->seq;
    if (m->len)
        memcpy(h->data, data, m->len);
    /* rnr_retry 7 retries for ever; else (rnr_retry + 1) waits of the RNR timer
     * (min_rnr_timer 12 is 0.64 ms; counted as 1 ms here) */
    h->give_up_ns = q->rnr_retry >= 7 ? 0 : emu_now_ns() + 1000000LL * (q->rnr_retry + 1);
    EMU_PUSH(q->held_head, q->held_tail, h, next);
}

void nic_deliver_held(emu_qp *q)
{
    while (q->held_head) {
        emu_held *h = q->held_head;
        emu_msg m = {.type = MSG_WRITE, .dst_qpn = q->qp.qp_num, .src_qpn = h->src_qpn,
                     .len = h->len, .raddr = h->raddr, .seq = h->seq, .rkey = h->rkey,
                     .imm = h->imm, .imm_on = h->imm_on};
        if (!apply(q, h->from, &m, h->data))
            return;
        EMU_POP(q->held_head, q->held_tail, next);
        free(h->data);
        free(h);
    }
}

static void on_write(emu_conn *from, const emu_msg *m, const uint8_t *data)
{
    emu_qp *q = m->dst_qpn >= 1 && m->dst_qpn <= EMU_MAX_QPS ? emu.qps[m->dst_qpn - 1] : NULL;
    if (!q || (q->qp.state != IBV_QPS_RTR && q->qp.state != IBV_QPS_RTS)) {
        /* a real responder drops it; the requester's retries run out */
        ack(from, m, IBV_WC_RETRY_EXC_ERR);
        return;
    }
    if (q->held_head || !apply(q, from, m, data))
        hold(q, from, m, data);
}

static void on_ack(emu_conn *c, const emu_msg *m)
{
    emu_qp *q = c->qp;
    if (!q || !q->wait_head)
        return; /* flushed meanwhile */
    emu_swr *w = q->wait_head;
    if (w->seq != m->seq) {
        emu_log("QP %u: an answer for request %llu while %llu was first (adapter bug)",
                q->qp.qp_num, (unsigned long long)m->seq, (unsigned long long)w->seq);
        return;
    }
    if (m->status != IBV_WC_SUCCESS) {
        emu_qp_error(q, (enum ibv_wc_status)m->status, w->wr_id);
        return;
    }
    EMU_POP(q->wait_head, q->wait_tail, next);
    q->sq_count--;
    if (w->signaled) {
        struct ibv_wc wc = {.wr_id = w->wr_id, .status = IBV_WC_SUCCESS,
                            .opcode = IBV_WC_RDMA_WRITE, .qp_num = q->qp.qp_num};
        emu_complete((emu_cq *)q->qp.send_cq, &wc);
    }
    free(w);
}

static void conn_read(emu_conn *c)
{
    for (;;) {
        if (c->in_cap - c->in_len < 65536) {
            size_t cap = c->in_cap ? c->in_cap * 2 : 131072;
            uint8_t *b = realloc(c->in, cap);
            if (!b) {
                c->dead = true;
                return;
            }
            c->in = b;
            c->in_cap = cap;
        }
        ssize_t r = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            c->dead = true;
            break;
        }
        if (r < 0)
            break;
        c->in_len += (size_t)r;
    }
    size_t off = 0;
    while (c->in_len - off >= sizeof(emu_msg)) {
        emu_msg m;
        memcpy(&m, c->in + off, sizeof m);
        const size_t body = m.type == MSG_WRITE ? m.len : 0;
        if (c->in_len - off - sizeof m < body)
            break;
        if (m.type == MSG_WRITE)
            on_write(c, &m, c->in + off + sizeof m);
        else if (m.type == MSG_ACK)
            on_ack(c, &m);
        off += sizeof m + body;
    }
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
}

/* ---- sending --------------------------------------------------------------------- */

static void transmit(emu_qp *q, int64_t now)
{
    if (q->qp.state != IBV_QPS_RTS || !q->sq_head)
        return;
    if (!q->conn && !q->fail_at_ns) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        struct sockaddr_un a;
        socklen_t len = gid_addr(q->dgid, &a);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, len) == 0) {
            q->conn = conn_new(fd, true);
            if (q->conn)
                q->conn->qp = q;
        } else {
            if (fd >= 0)
                close(fd);
            q->fail_at_ns = now + retry_ns(q); /* nobody answers at that GID */
        }
    }
    if (!q->conn || q->conn->dead) {
        if (!q->fail_at_ns)
            q->fail_at_ns = now + retry_ns(q);
        return;
    }
    while (q->sq_head && q->qp.state == IBV_QPS_RTS) {
        emu_swr *w = q->sq_head;
        emu_mr *mr = w->len ? emu_mr_find(w->lkey, false) : NULL;
        const uint64_t lo = mr ? (uint64_t)(uintptr_t)mr->mr.addr : 0;
        if (w->len && (!mr || w->laddr < lo || w->laddr + w->len > lo + mr->mr.length)) {
            emu_log("QP %u: a send of %u bytes at 0x%llx with lkey 0x%x is outside its region: "
                    "local protection error", q->qp.qp_num, w->len,
                    (unsigned long long)w->laddr, w->lkey);
            EMU_POP(q->sq_head, q->sq_tail, next);
            w->next = q->wait_head; /* completes first, with the error */
            q->wait_head = w;
            if (!q->wait_tail)
                q->wait_tail = w;
            emu_qp_error(q, IBV_WC_LOC_PROT_ERR, w->wr_id);
            return;
        }
        emu_msg m = {.type = MSG_WRITE, .dst_qpn = q->dest_qpn, .src_qpn = q->qp.qp_num,
                     .len = w->len, .raddr = w->raddr, .seq = w->seq, .rkey = w->rkey,
                     .imm = w->imm, .imm_on = w->imm_on};
        if (!conn_put(q->conn, &m, (const void *)(uintptr_t)w->laddr, w->len))
            break;
        EMU_POP(q->sq_head, q->sq_tail, next);
        EMU_PUSH(q->wait_head, q->wait_tail, w, next);
    }
}

void nic_qp_gone(emu_qp *q)
{
    if (q->conn) {
        q->conn->qp = NULL;
        q->conn->dead = true; /* closed and freed by the thread */
        q->conn = NULL;
    }
    q->fail_at_ns = 0;
}

void nic_kick(void)
{
    char one = 1;
    if (emu.up) {
        ssize_t r = write(emu.wake[1], &one, 1);
        (void)r;
    }
}

/* ---- the thread ------------------------------------------------------------------ */

static void reap_conns(int64_t now)
{
    for (emu_conn **p = &emu.conns; *p;) {
        emu_conn *c = *p;
        if (!c->dead) {
            p = &c->next;
            continue;
        }
        if (c->qp) { /* the peer is gone: this QP's requests fail after its retries */
            if (!c->qp->fail_at_ns)
                c->qp->fail_at_ns = now + retry_ns(c->qp);
            p = &c->next; /* kept until the QP fails or goes */
            continue;
        }
        for (uint32_t i = 0; i < EMU_MAX_QPS; i++) /* held messages from it: no one waits */
            for (emu_held **h = emu.qps[i] ? &emu.qps[i]->held_head : NULL; h && *h;) {
                if ((*h)->from == c) {
                    emu_held *x = *h;
                    *h = x->next;
                    free(x->data);
                    free(x);
                } else {
                    h = &(*h)->next;
                }
            }
        for (uint32_t i = 0; i < EMU_MAX_QPS; i++)
            if (emu.qps[i]) {
                emu.qps[i]->held_tail = NULL;
                for (emu_held *h = emu.qps[i]->held_head; h; h = h->next)
                    emu.qps[i]->held_tail = h;
            }
        epoll_ctl(emu.epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        *p = c->next;
        free(c->in);
        free(c->obuf);
        free(c);
    }
}

static int64_t timers(int64_t now)
{
    int64_t next = now + 50000000LL;
    emu_due_events(now, &next);
    for (uint32_t i = 0; i < EMU_MAX_QPS; i++) {
        emu_qp *q = emu.qps[i];
        if (!q)
            continue;
        transmit(q, now);
        if (q->fail_at_ns && q->fail_at_ns <= now) {
            emu_log("QP %u: the adapter at the peer's GID is gone: transport retry counter "
                    "exceeded", q->qp.qp_num);
            const uint64_t first = q->wait_head ? q->wait_head->wr_id
                                   : q->sq_head ? q->sq_head->wr_id : 0;
            if (q->conn) {
                q->conn->qp = NULL;
                q->conn = NULL;
            }
            emu_qp_error(q, IBV_WC_RETRY_EXC_ERR, first);
        } else if (q->fail_at_ns && q->fail_at_ns < next) {
            next = q->fail_at_ns;
        }
        if (q->held_head && q->held_head->give_up_ns) {
            if (q->held_head->give_up_ns <= now) {
                emu_log("QP %u: a write with immediate found no posted receive for its RNR "
                        "retries: RNR retry counter exceeded at the sender", q->qp.qp_num);
                while (q->held_head) {
                    emu_held *h = q->held_head;
                    EMU_POP(q->held_head, q->held_tail, next);
                    emu_msg m = {.dst_qpn = q->qp.qp_num, .src_qpn = h->src_qpn, .seq = h->seq};
                    ack(h->from, &m, IBV_WC_RNR_RETRY_EXC_ERR);
                    free(h->data);
                    free(h);
                }
            } else if (q->held_head->give_up_ns < next) {
                next = q->held_head->give_up_ns;
            }
        }
    }
    return next;
}

static void *nic_thread(void *arg)
{
    (void)arg;
    struct epoll_event evs[64];
    int timeout_ms = 0;
    for (;;) {
        int n = epoll_wait(emu.epfd, evs, 64, timeout_ms);
        pthread_mutex_lock(&emu.lock);
        if (emu.stopping) {
            pthread_mutex_unlock(&emu.lock);
            return NULL;
        }
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &emu.wake) {
                char buf[256];
                while (read(emu.wake[0], buf, sizeof buf) > 0) {
                }
            } else if (p == &emu.listen_fd) {
                for (int fd; (fd = accept4(emu.listen_fd, NULL, NULL,
                                           SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;)
                    conn_new(fd, false);
            } else {
                emu_conn *c = p;
                if (evs[i].events & EPOLLOUT)
                    conn_flush(c);
                if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                    conn_read(c);
            }
        }
        const int64_t now = emu_now_ns();
        reap_conns(now);
        int64_t next = timers(now);
        pthread_mutex_unlock(&emu.lock);
        int64_t ms = (next - emu_now_ns() + 999999) / 1000000;
        timeout_ms = ms < 0 ? 0 : ms > 50 ? 50 : (int)ms;
    }
}

static void after_fork_child(void)
{
    /* the adapter thread stays with the parent: a child opens its own */
    pthread_mutex_init(&emu.lock, NULL);
    memset(emu.qps, 0, sizeof emu.qps);
    memset(emu.cqs, 0, sizeof emu.cqs);
    emu.ncqs = 0;
    emu.mrs = NULL;
    emu.conns = NULL;
    emu.up = false;
    emu.users = 0;
    emu.stopping = false;
    if (emu.listen_fd >= 0)
        close(emu.listen_fd);
    if (emu.epfd >= 0)
        close(emu.epfd);
    emu.listen_fd = emu.epfd = -1;
}

int nic_start(void)
{
    static bool atfork;
    if (!atfork) {
        pthread_atfork(NULL, NULL, after_fork_child);
        atfork = true;
    }
    const char *seed = getenv("VERBSEMU_SEED"), *delay = getenv("VERBSEMU_EVENT_DELAY_US");
    emu.rng = seed ? strtoull(seed, NULL, 0) : 1;
    emu.max_delay_us = delay ? atoi(delay) : 200;
    uint8_t rnd[8];
    int ur = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = ur >= 0 ? read(ur, rnd, sizeof rnd) : -1;
    if (ur >= 0)
        close(ur);
    if (got != (ssize_t)sizeof rnd)
        memset(rnd, 0x5a, sizeof rnd);
    const uint32_t pid = (uint32_t)getpid();
    uint8_t gid[16] = {0xfe, 0x80, 'V', 'E', (uint8_t)(pid >> 24), (uint8_t)(pid >> 16),
                       (uint8_t)(pid >> 8), (uint8_t)pid};
    memcpy(gid + 8, rnd, 8);
    memcpy(emu.gid, gid, 16);
    struct sockaddr_un a;
    socklen_t len = gid_addr(emu.gid, &a);
    emu.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (emu.listen_fd < 0 || bind(emu.listen_fd, (struct sockaddr *)&a, len) != 0 ||
        listen(emu.listen_fd, 256) != 0 || pipe2(emu.wake, O_NONBLOCK | O_CLOEXEC) != 0 ||
        (emu.epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
        int e = errno;
        emu_log("cannot start the emulated adapter: %s", strerror(e));
        return e ? e : EIO;
    }
    struct epoll_event l = {.events = EPOLLIN, .data.ptr = &emu.listen_fd};
    struct epoll_event w = {.events = EPOLLIN, .data.ptr = &emu.wake};
    epoll_ctl(emu.epfd, EPOLL_CTL_ADD, emu.listen_fd, &l);
    epoll_ctl(emu.epfd, EPOLL_CTL_ADD, emu.wake[0], &w);
    emu.stopping = false;
    if (pthread_create(&emu.thread, NULL, nic_thread, NULL) != 0)
        return EAGAIN;
    emu.up = true;
    return 0;
}

void nic_stop(void)
{
    pthread_mutex_lock(&emu.lock);
    emu.stopping = true;
    pthread_mutex_unlock(&emu.lock);
    nic_kick();
    pthread_join(emu.thread, NULL);
    pthread_mutex_lock(&emu.lock);
    for (emu_conn *c = emu.conns, *n; c; c = n) {
        n = c->next;
        close(c->fd);
        free(c->in);
        free(c->obuf);
        free(c);
    }
    emu.conns = NULL;
    close(emu.listen_fd);
    close(emu.epfd);
    close(emu.wake[0]);
    close(emu.wake[1]);
    emu.listen_fd = emu.epfd = -1;
    emu.up = false;
    pthread_mutex_unlock(&emu.lock);
}
