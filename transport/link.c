/* link.c — authenticated connections to the ring neighbours (see link.h). */
#include "link.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

static void *connect_right(void *arg)
{
    connector *w = arg;
    rt_comm *c = w->c;
    rt_links *L = w->L;
    char sub[RT_ERR_LEN];
    w->st = RT_OK;
    for (int k = 0; k < L->n && w->st == RT_OK; k++) {
        int fd = -1;
        w->st = rt_sock_connect(c->peers[c->right], w->dl, &fd, sub);
        if (w->st == RT_OK)
            w->st = rt_handshake_initiate(fd, &L->hs, c->right, (uint32_t)k, w->dl, &L->out_hs[k],
                                          sub);
        if (w->st != RT_OK) {
            if (fd >= 0)
                close(fd);
            snprintf(w->err, sizeof w->err, "connecting to right neighbour %s: %s", L->right_name,
                     sub);
            break;
        }
        rt_sock_tune(fd, c->o.socket_buffer);
        L->out[k] = fd;
    }
    return NULL;
}

/* Accept n authenticated connections from the left neighbour.  Connections
 * are accepted as they come and wait, all at once, for their first bytes:
 * only one that has sent something is handshaken, so strangers that connect
 * and say nothing cannot hold up the neighbour behind them (each gets 5 s,
 * then is closed); at most PENDING_MAX wait at a time. */
#define PENDING_MAX 64
#define STRANGER_NS 5000000000LL

static void reject_left(rt_comm *c, int fd, const char *why)
{
    char who[96];
    rt_sock_peer_str(fd, who, sizeof who);
    RT_WARN("tcp", "rank %d: rejected connection from %s: %s", c->rank, who, why);
    close(fd);
}

static rt_status accept_left(rt_comm *c, rt_links *L, rt_deadline_t dl, char *err)
{
    int got = 0, np = 0;
    int pend[PENDING_MAX];
    int64_t since[PENDING_MAX];
    rt_status st = RT_OK;
    while (got < L->n) {
        struct pollfd p[PENDING_MAX + 1];
        p[0] = (struct pollfd){.fd = L->listen_fd, .events = POLLIN};
        for (int i = 0; i < np; i++)
            p[i + 1] = (struct pollfd){.fd = pend[i], .events = POLLIN};
        const int64_t now = rt_now_ns();
        int ms = rt_deadline_ms_left(dl);
        for (int i = 0; i < np; i++) { /* wake for the oldest stranger's time too */
            int64_t left = (since[i] + STRANGER_NS - now) / 1000000 + 1;
            if (left < ms)
                ms = (int)(left > 0 ? left : 0);
        }
        int r = poll(p, (nfds_t)np + 1, ms);
        if (r < 0 && errno != EINTR) {
            st = rt_err(err, RT_ERR_IO, "poll on the listening socket: %s", strerror(errno));
            break;
        }
        if (rt_now_ns() >= dl) {
            st = rt_err(err, RT_ERR_TIMEOUT,
                        "%s did not connect before the deadline (%d of %d connections)",
                        L->left_name, got, L->n);
            break;
        }
        /* the waiting ones: handshake those that spoke, drop those silent too long */
        for (int i = np - 1; r > 0 && i >= 0; i--) {
            if (!p[i + 1].revents)
                continue;
            int fd = pend[i];
            pend[i] = pend[--np];
            since[i] = since[np];
            char why[RT_ERR_LEN];
            rt_deadline_t hdl = rt_now_ns() + STRANGER_NS < dl ? rt_now_ns() + STRANGER_NS : dl;
            rt_hs_result res;
            rt_status hs = rt_handshake_respond(fd, &L->hs, c->left, false, hdl, &res, why);
            if (hs == RT_OK && L->in[res.conn] >= 0)
                hs = rt_err(why, RT_ERR_PROTO, "duplicate connection %u from the left neighbour",
                            res.conn);
            if (hs != RT_OK) {
                reject_left(c, fd, why);
                continue;
            }
            rt_sock_tune(fd, c->o.socket_buffer);
            L->in[res.conn] = fd;
            L->in_hs[res.conn] = res;
            got++;
        }
        for (int i = np - 1; i >= 0; i--)
            if (rt_now_ns() - since[i] >= STRANGER_NS) {
                int fd = pend[i];
                pend[i] = pend[--np];
                since[i] = since[np];
                reject_left(c, fd, "said nothing within 5 s");
            }
        if (r > 0 && (p[0].revents & POLLIN)) {
            int fd = accept4(L->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd >= 0 && np == PENDING_MAX)
                reject_left(c, fd, "too many connections waiting for their hello");
            else if (fd >= 0) {
                pend[np] = fd;
                since[np++] = rt_now_ns();
            }
        }
    }
    for (int i = 0; i < np; i++) /* the ring is up (or failed): the rest are strangers */
        reject_left(c, pend[i], st == RT_OK ? "the ring is already connected" : "giving up");
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

rt_status rt_links_open(rt_comm *c, int n, rt_deadline_t dl, rt_links *L, char *err)
{
    memset(L, 0, sizeof *L);
    L->n = n;
    L->listen_fd = -1;
    L->stop_pipe[0] = L->stop_pipe[1] = -1;
    for (int k = 0; k < RT_MAX_SOCKETS; k++)
        L->out[k] = L->in[k] = -1;
    L->hs = (rt_hs_params){.job_id = c->o.job_id, .key = c->o.key, .encrypt = c->o.encrypt,
                           .integrity = c->o.integrity,
                           .rank = c->rank, .world = c->size, .nconn = n};
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
    if (pthread_create(&th, NULL, connect_right, &w) != 0) {
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
        if (L->out[k] >= 0)
            close(L->out[k]);
        if (L->in[k] >= 0)
            close(L->in[k]);
        L->out[k] = L->in[k] = -1;
    }
    if (L->own_listen && L->listen_fd >= 0)
        close(L->listen_fd);
    L->listen_fd = -1;
}
