/* link.c — authenticated connections to the ring neighbours (see link.h). */
#include "link.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rt_addr.h"
#include "rt_log.h"
#include "rt_time.h"

typedef struct connector {
    rt_comm *c;
    rt_links *L;
    rt_deadline_t dl;
    rt_status st;
    char err[RT_ERR_LEN];
} connector;

/* Connect to the right neighbour (and, nrev times, to the left).  A
 * connection the neighbour dropped before the handshake ended (its
 * handshake slots full of strangers: issue 28.7, 80 silent connections
 * kept a ring from forming) is tried again, backing off from 20 ms to
 * 1 s, until the deadline; a refusal for a reason (the key, the job) is
 * not. */
static void *connect_out(void *arg)
{
    connector *w = arg;
    rt_comm *c = w->c;
    rt_links *L = w->L;
    char sub[RT_ERR_LEN];
    w->st = RT_OK;
    for (int k = 0; k < L->n + L->nrev && w->st == RT_OK; k++) {
        const bool rev = k >= L->n; /* the other way round: to the left */
        const int to = rev ? c->left : c->right;
        int fd = -1, tries = 0;
        int64_t backoff_us = 20000;
        rt_hs_result *hs = rev ? &L->out_rev_hs[k - L->n] : &L->out_hs[k];
        for (;;) {
            w->st = rt_sock_connect(c->peers[to], w->dl, &fd, sub);
            if (w->st == RT_OK)
                w->st = rt_handshake_initiate(fd, &L->hs, to, (uint32_t)k, w->dl, hs, sub);
            if (w->st != RT_ERR_IO || rt_now_ns() + backoff_us * 1000 >= w->dl)
                break;
            if (tries++ == 0)
                RT_INFO("tcp", "rank %d: %s neighbour %s dropped the connection before its "
                        "handshake (%s): trying again until the deadline",
                        rt_comm_grank(c, c->rank), rev ? "left" : "right",
                        rev ? L->left_name : L->right_name, sub);
            if (fd >= 0)
                close(fd);
            fd = -1;
            usleep((useconds_t)backoff_us);
            backoff_us = backoff_us * 2 > 1000000 ? 1000000 : backoff_us * 2;
        }
        if (w->st != RT_OK) {
            if (fd >= 0)
                close(fd);
            snprintf(w->err, sizeof w->err, "connecting to %s neighbour %s: %s",
                     rev ? "left" : "right", rev ? L->left_name : L->right_name, sub);
            break;
        }
        rt_sock_tune(fd, c->o.socket_buffer);
        if (rev)
            L->out_rev[k - L->n] = fd;
        else
            L->out[k] = fd;
    }
    return NULL;
}

/* Accept n authenticated connections from the left neighbour (and nrev from
 * the right, the ring the other way round).  Every
 * connection is handshaken on a thread of its own (at most PENDING_MAX at a
 * time), each within 5 s of its arrival, and the main loop takes the ones
 * that prove the key as they finish: strangers that connect and say
 * nothing, or send a hello and stall, cannot hold up the neighbour behind
 * them. */
#define PENDING_MAX 64
#define PENDING_PER_ADDR 16 /* of them from one address other than the neighbours' */
#define STRANGER_NS 5000000000LL

static void reject_left(rt_comm *c, int fd, const char *why)
{
    char who[96];
    rt_sock_peer_str(fd, who, sizeof who);
    RT_WARN("tcp", "rank %d: rejected connection from %s: %s", rt_comm_grank(c, c->rank), who, why);
    close(fd);
}

typedef struct pending {
    int fd;
    int slot;
    char addr[64]; /* the peer's address, without the port */
    int done_fd; /* write end of the loop's pipe: the slot number when done */
    const rt_hs_params *hs;
    int expect_from;
    rt_deadline_t dl;
    rt_status st;
    rt_hs_result res;
    char why[RT_ERR_LEN];
    pthread_t th;
    bool busy;
} pending;

static void *handshake_one(void *arg)
{
    pending *p = arg;
    p->st = rt_handshake_respond(p->fd, p->hs, p->expect_from, false, p->dl, &p->res, p->why);
    unsigned char slot = (unsigned char)p->slot;
    ssize_t r = write(p->done_fd, &slot, 1);
    (void)r;
    return NULL;
}

static rt_status accept_left(rt_comm *c, rt_links *L, rt_deadline_t dl, char *err)
{
    int got = 0, got_rev = 0;
    int done[2];
    if (pipe2(done, O_CLOEXEC) != 0)
        return rt_err(err, RT_ERR_IO, "pipe: %s", strerror(errno));
    pending *pend = calloc(PENDING_MAX, sizeof *pend);
    if (!pend) {
        close(done[0]);
        close(done[1]);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    rt_status st = RT_OK;
    /* the neighbours' hosts, as written in the peer list (an address, or a
     * name that then never matches and is capped as any other) */
    char left_host[256] = "", right_host[256] = "";
    int port_unused;
    rt_addr_parse(c->peers[c->left], true, left_host, sizeof left_host, &port_unused, NULL);
    rt_addr_parse(c->peers[c->right], true, right_host, sizeof right_host, &port_unused, NULL);
    while (got < L->n + L->nrev) {
        struct pollfd p[2] = {{.fd = L->listen_fd, .events = POLLIN},
                              {.fd = done[0], .events = POLLIN}};
        int r = poll(p, 2, rt_deadline_ms_left(dl));
        if (r < 0 && errno != EINTR) {
            st = rt_err(err, RT_ERR_IO, "poll on the listening socket: %s", strerror(errno));
            break;
        }
        if (r > 0 && (p[1].revents & POLLIN)) { /* a handshake finished */
            unsigned char slot;
            if (read(done[0], &slot, 1) == 1 && slot < PENDING_MAX && pend[slot].busy) {
                pending *q = &pend[slot];
                pthread_join(q->th, NULL);
                q->busy = false;
                /* the handshake took connections n.. only from the right */
                const bool rev = q->st == RT_OK && q->res.conn >= (uint32_t)L->n;
                int *fdp = NULL;
                if (q->st == RT_OK)
                    fdp = rev ? &L->in_rev[q->res.conn - (uint32_t)L->n] : &L->in[q->res.conn];
                if (fdp && *fdp >= 0)
                    q->st = rt_err(q->why, RT_ERR_PROTO,
                                   "duplicate connection %u from the %s neighbour", q->res.conn,
                                   rev ? "right" : "left");
                if (q->st != RT_OK) {
                    reject_left(c, q->fd, q->why);
                } else {
                    rt_sock_tune(q->fd, c->o.socket_buffer);
                    *fdp = q->fd;
                    if (rev)
                        L->in_rev_hs[q->res.conn - (uint32_t)L->n] = q->res;
                    else
                        L->in_hs[q->res.conn] = q->res;
                    got++;
                    got_rev += rev;
                }
            }
            continue; /* the listening socket's turn comes with the next poll */
        }
        if (rt_now_ns() >= dl) {
            st = rt_err(err, RT_ERR_TIMEOUT,
                        "%s did not connect before the deadline (%d of %d connections)",
                        got - got_rev < L->n ? L->left_name : L->right_name,
                        got - got_rev < L->n ? got - got_rev : got_rev,
                        got - got_rev < L->n ? L->n : L->nrev);
            break;
        }
        if (r > 0 && (p[0].revents & POLLIN)) {
            int fd = accept4(L->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0)
                continue;
            char addr[96];
            rt_sock_peer_str(fd, addr, sizeof addr);
            char *colon = strrchr(addr, ':'); /* the address without the port */
            if (colon)
                *colon = '\0';
            int slot = -1, same = 0;
            for (int i = 0; i < PENDING_MAX; i++) {
                if (!pend[i].busy && slot < 0)
                    slot = i;
                same += pend[i].busy && !strcmp(pend[i].addr, addr);
            }
            /* a flood from elsewhere takes at most PENDING_PER_ADDR slots; the
             * neighbours' own address is not capped (a flood from there, as
             * from a rank's own host, is outlasted: strangers' slots free
             * after 5 s, and the neighbour tries again) */
            const bool neighbour = !strcmp(addr, left_host) || !strcmp(addr, right_host);
            if (slot < 0 || (same >= PENDING_PER_ADDR && !neighbour)) {
                reject_left(c, fd, slot < 0 ? "too many connections waiting for their handshake"
                                            : "too many connections from this address waiting "
                                              "for their handshake");
                continue;
            }
            pending *q = &pend[slot];
            *q = (pending){.fd = fd, .slot = slot, .done_fd = done[1], .hs = &L->hs,
                           .expect_from = c->left, .busy = true,
                           .dl = rt_now_ns() + STRANGER_NS < dl ? rt_now_ns() + STRANGER_NS : dl};
            snprintf(q->addr, sizeof q->addr, "%s", addr);
            if (pthread_create(&q->th, NULL, handshake_one, q) != 0) {
                q->busy = false;
                reject_left(c, fd, "no thread for its handshake");
            }
        }
    }
    /* the ring is up (or failed): cut the handshakes still going short */
    for (int i = 0; i < PENDING_MAX; i++)
        if (pend[i].busy)
            shutdown(pend[i].fd, SHUT_RDWR);
    for (int i = 0; i < PENDING_MAX; i++)
        if (pend[i].busy) {
            pthread_join(pend[i].th, NULL);
            reject_left(c, pend[i].fd,
                        st == RT_OK ? "the ring is already connected" : "giving up");
        }
    free(pend);
    close(done[0]);
    close(done[1]);
    return st;
}

typedef struct acceptor_arg {
    rt_links *L;
    int rank;
} acceptor_arg;

/* After the ring is up: refuse and log every further connection. */
static void *late_acceptor(void *arg)
{
    rt_links *L = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = L->listen_fd, .events = POLLIN},
                              {.fd = L->stop_pipe[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            return NULL;
        if (p[1].revents)
            return NULL;
        if (!(p[0].revents & POLLIN))
            continue;
        int fd = accept4(L->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        char who[96], why[RT_ERR_LEN];
        rt_sock_peer_str(fd, who, sizeof who);
        rt_hs_result res;
        rt_handshake_respond(fd, &L->hs, -1, true, rt_deadline_in_us(2000000), &res, why);
        RT_WARN("tcp", "rank %d: rejected connection from %s: %s", L->hs.rank, who, why);
        close(fd);
    }
}

rt_status rt_links_open(rt_comm *c, int n, int nrev, rt_deadline_t dl, rt_links *L, char *err)
{
    memset(L, 0, sizeof *L);
    L->n = n;
    L->nrev = c->size >= 3 ? nrev : 0;
    L->listen_fd = -1;
    L->stop_pipe[0] = L->stop_pipe[1] = -1;
    for (int k = 0; k < RT_MAX_SOCKETS; k++)
        L->out[k] = L->in[k] = L->out_rev[k] = L->in_rev[k] = -1;
    L->hs = (rt_hs_params){.job_id = c->o.job_id, .key = c->o.key, .encrypt = c->o.encrypt,
                           .integrity = c->o.integrity, .rank = c->rank, .world = c->size,
                           .nconn = n + L->nrev, .nconn_fwd = L->nrev ? n : 0,
                           .rev_from = c->right};
    rt_comm_peer_name(c, c->left, L->left_name, sizeof L->left_name);
    rt_comm_peer_name(c, c->right, L->right_name, sizeof L->right_name);
    rt_status st;
    if (c->o.listen_fd >= 0) {
        L->listen_fd = c->o.listen_fd;
        fcntl(L->listen_fd, F_SETFL, fcntl(L->listen_fd, F_GETFL, 0) | O_NONBLOCK);
        snprintf(c->listen_addr, sizeof c->listen_addr, "%s", c->peers[c->rank]);
    } else {
        char host[256], *addr = NULL;
        int port = 0;
        st = rt_addr_parse(c->peers[c->rank], true, host, sizeof host, &port, err);
        if (st == RT_OK)
            st = rt_listen_tcp(host, port, &L->listen_fd, &addr, err);
        if (st != RT_OK)
            return st;
        L->own_listen = true;
        snprintf(c->listen_addr, sizeof c->listen_addr, "%s", addr);
        free(addr);
    }
    connector w = {.c = c, .L = L, .dl = dl};
    pthread_t th;
    if (pthread_create(&th, NULL, connect_out, &w) != 0) {
        rt_links_close(L);
        return rt_err(err, RT_ERR_IO, "cannot start the connector thread");
    }
    st = accept_left(c, L, dl, err);
    pthread_join(th, NULL);
    if (st == RT_OK && w.st != RT_OK)
        st = rt_err(err, w.st, "%s", w.err);
    if (st != RT_OK) {
        rt_links_close(L);
        return st;
    }
    if (pipe2(L->stop_pipe, O_CLOEXEC) == 0 &&
        pthread_create(&L->acceptor, NULL, late_acceptor, L) == 0)
        L->acceptor_running = true;
    return RT_OK;
}

void rt_links_close(rt_links *L)
{
    if (L->acceptor_running) {
        ssize_t r = write(L->stop_pipe[1], "x", 1);
        (void)r;
        pthread_join(L->acceptor, NULL);
        L->acceptor_running = false;
    }
    for (int i = 0; i < 2; i++)
        if (L->stop_pipe[i] >= 0) {
            close(L->stop_pipe[i]);
            L->stop_pipe[i] = -1;
        }
    for (int k = 0; k < RT_MAX_SOCKETS; k++) {
        int *fds[4] = {&L->out[k], &L->in[k], &L->out_rev[k], &L->in_rev[k]};
        for (int i = 0; i < 4; i++) {
            if (*fds[i] >= 0)
                close(*fds[i]);
            *fds[i] = -1;
        }
    }
    if (L->own_listen && L->listen_fd >= 0)
        close(L->listen_fd);
    L->listen_fd = -1;
}
