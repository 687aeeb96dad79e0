/* sock.c — sockets with deadlines and the data-plane handshake (see sock.h
 * and the protocol description in wire.h). */
#include "sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rt_addr.h"
#include "rt_comm.h"
#include "rt_endian.h"

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL, 0);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

const char *rt_sock_peer_str(int fd, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char h[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &a->sin_addr, h, sizeof h);
            port = ntohs(a->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a->sin6_addr, h, sizeof h);
            port = ntohs(a->sin6_port);
        }
    }
    snprintf(buf, len, ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", h, port);
    return buf;
}

rt_status rt_listen_tcp(const char *host, int port, int *fd_out, char **addr_out, char *err)
{
    *fd_out = -1;
    if (addr_out)
        *addr_out = NULL;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int gai = getaddrinfo(host && *host ? host : NULL, ps, &hints, &res);
    if (gai != 0)
        return rt_err(err, RT_ERR_INVALID, "cannot resolve '%s': %s", host ? host : "*",
                      gai_strerror(gai));
    int fd = -1, e = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            e = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0)
            break;
        e = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return rt_err(err, RT_ERR_IO, "cannot listen on %s:%d: %s", host ? host : "*", port,
                      strerror(e));
    set_nonblock(fd);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    int bound = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                         : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (addr_out) {
        const char *h = host && *host ? host : "127.0.0.1";
        int n = strchr(h, ':') ? asprintf(addr_out, "[%s]:%d", h, bound)
                               : asprintf(addr_out, "%s:%d", h, bound);
        if (n < 0) {
            close(fd);
            return rt_err(err, RT_ERR_NOMEM, "out of memory");
        }
    }
    *fd_out = fd;
    return RT_OK;
}

rt_status rt_sock_connect(const char *addr, rt_deadline_t dl, int *fd_out, char *err)
{
    char host[256], port[16];
    int portn = 0;
    rt_status st = rt_addr_parse(addr, false, host, sizeof host, &portn, err);
    if (st != RT_OK)
        return st;
    snprintf(port, sizeof port, "%d", portn);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0)
        return rt_err(err, RT_ERR_INVALID, "cannot resolve '%s': %s", addr, gai_strerror(gai));
    int64_t backoff_ms = 5;
    int last = 0;
    for (;;) {
        int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                        res->ai_protocol);
        if (fd < 0) {
            last = errno;
            break;
        }
        int r = connect(fd, res->ai_addr, res->ai_addrlen);
        if (r != 0 && errno == EINPROGRESS) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int ms = rt_deadline_ms_left(dl);
            int pr = poll(&p, 1, ms < 0 ? -1 : ms);
            if (pr > 0) {
                int so = 0;
                socklen_t sl = sizeof so;
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl);
                r = so == 0 ? 0 : -1;
                errno = so;
            } else {
                int e = pr == 0 ? ETIMEDOUT : errno;
                r = -1;
                errno = e;
            }
        }
        if (r == 0) {
            freeaddrinfo(res);
            *fd_out = fd;
            return RT_OK;
        }
        last = errno;
        close(fd);
        if (rt_now_ns() >= dl)
            break;
        if (last != ECONNREFUSED && last != ETIMEDOUT && last != EHOSTUNREACH &&
            last != ENETUNREACH && last != ECONNRESET)
            break;
        /* the peer is not listening yet: try again shortly */
        int ms = rt_deadline_ms_left(dl);
        struct timespec ts = {0, (long)(backoff_ms < ms ? backoff_ms : ms) * 1000000L};
        nanosleep(&ts, NULL);
        backoff_ms = backoff_ms * 2 > 200 ? 200 : backoff_ms * 2;
    }
    freeaddrinfo(res);
    if (rt_now_ns() >= dl)
        return rt_err(err, RT_ERR_TIMEOUT, "cannot connect to %s before the deadline: %s", addr,
                      strerror(last ? last : ETIMEDOUT));
    return rt_err(err, RT_ERR_IO, "cannot connect to %s: %s", addr, strerror(last));
}

static rt_status wait_fd(int fd, short ev, rt_deadline_t dl, char *err)
{
    struct pollfd p = {.fd = fd, .events = ev};
    for (;;) {
        int ms = rt_deadline_ms_left(dl);
        if (ms == 0 && rt_now_ns() >= dl)
            return rt_err(err, RT_ERR_TIMEOUT, "timed out");
        int r = poll(&p, 1, ms);
        if (r > 0)
            return RT_OK;
        if (r < 0 && errno != EINTR)
            return rt_err(err, RT_ERR_IO, "poll: %s", strerror(errno));
    }
}

rt_status rt_sock_read_full(int fd, void *buf, size_t len, rt_deadline_t dl, char *err)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = recv(fd, (char *)buf + got, len - got, 0);
        if (r > 0) {
            got += (size_t)r;
        } else if (r == 0) {
            return rt_err(err, RT_ERR_IO, "connection closed after %zu of %zu bytes", got, len);
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            rt_status st = wait_fd(fd, POLLIN, dl, err);
            if (st != RT_OK)
                return rt_err(err, st, "timed out after %zu of %zu bytes", got, len);
        } else if (errno != EINTR) {
            return rt_err(err, RT_ERR_IO, "receive failed: %s", strerror(errno));
        }
    }
    return RT_OK;
}

rt_status rt_sock_write_full(int fd, const void *buf, size_t len, rt_deadline_t dl, char *err)
{
    size_t put = 0;
    while (put < len) {
        ssize_t r = send(fd, (const char *)buf + put, len - put, MSG_NOSIGNAL);
        if (r > 0) {
            put += (size_t)r;
        } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            rt_status st = wait_fd(fd, POLLOUT, dl, err);
            if (st != RT_OK)
                return st;
        } else if (r < 0 && errno != EINTR) {
            return rt_err(err, RT_ERR_IO, "send failed: %s", strerror(errno));
        }
    }
    return RT_OK;
}

void rt_sock_tune(int fd, size_t bufsize)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    if (bufsize > 0) {
        int b = bufsize > (size_t)INT32_MAX ? INT32_MAX : (int)bufsize;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof b);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &b, sizeof b);
    }
}

/* ---- handshake ------------------------------------------------------------ */

/* What the data plane's frames carry, as the hello states it: both ends
 * must agree. */
static uint16_t hello_flags(const rt_hs_params *p)
{
    return p->encrypt ? RT_HELLO_F_ENCRYPT : p->integrity ? RT_HELLO_F_INTEGRITY : 0;
}

rt_status rt_handshake_initiate(int fd, const rt_hs_params *p, int to, uint32_t conn,
                                rt_deadline_t dl, rt_hs_result *out, char *err)
{
    rt_hello h = {.version = RT_WIRE_VERSION,
                  .flags = hello_flags(p),
                  .job_id = p->job_id,
                  .from = (uint32_t)p->rank,
                  .to = (uint32_t)to,
                  .conn = conn,
                  .world = (uint32_t)p->world};
    if (rt_random(h.nonce, sizeof h.nonce) != RT_OK)
        return rt_err(err, RT_ERR_IO, "no random numbers for the handshake nonce");
    uint8_t hello[RT_HELLO_LEN], chal[RT_CHALLENGE_LEN], mac[RT_MAC_LEN], acc[RT_ACCEPT_LEN];
    rt_hello_encode(&h, hello);
    rt_status st = rt_sock_write_full(fd, hello, sizeof hello, dl, err);
    if (st == RT_OK)
        st = rt_sock_read_full(fd, chal, sizeof chal, dl, err);
    if (st != RT_OK) {
        rt_err_prefix(err, "handshake");
        return st;
    }
    rt_challenge ch;
    if ((st = rt_challenge_decode(chal, sizeof chal, &ch, err)) != RT_OK)
        return st;
    if (ch.status != RT_REFUSE_OK)
        return rt_err(err, ch.status == RT_REFUSE_AUTH ? RT_ERR_AUTH : RT_ERR_PROTO,
                      "rank %d refused the connection: %s", to, rt_refuse_str(ch.status));
    rt_auth_mac(p->key, "rt-resp", hello, ch.nonce, mac);
    if (!rt_mac_equal(mac, ch.mac))
        return rt_err(err, RT_ERR_AUTH, "the peer listening for rank %d does not hold the job key",
                      to);
    rt_auth_mac(p->key, "rt-init", hello, ch.nonce, mac);
    st = rt_sock_write_full(fd, mac, sizeof mac, dl, err);
    if (st == RT_OK)
        st = rt_sock_read_full(fd, acc, sizeof acc, dl, err);
    if (st != RT_OK) {
        rt_err_prefix(err, "handshake");
        return st;
    }
    uint32_t status = rt_get_le32(acc);
    if (status != RT_REFUSE_OK)
        return rt_err(err, status == RT_REFUSE_AUTH ? RT_ERR_AUTH : RT_ERR_PROTO,
                      "rank %d refused the connection: %s", to, rt_refuse_str(status));
    out->conn = conn;
    out->from = (uint32_t)to;
    if ((p->encrypt || p->integrity) &&
        rt_derive_keys(p->key, hello, ch.nonce, out->key_fwd, out->key_rev) != RT_OK)
        return rt_err(err, RT_ERR_IO, "key derivation failed");
    return RT_OK;
}

/* Send a challenge carrying a refusal and give up on the connection. */
static rt_status refuse(int fd, unsigned why, const rt_hello *h, rt_deadline_t dl, char *err)
{
    rt_challenge ch = {.version = RT_WIRE_VERSION, .status = (uint16_t)why};
    uint8_t buf[RT_CHALLENGE_LEN];
    rt_challenge_encode(&ch, buf);
    rt_sock_write_full(fd, buf, sizeof buf, dl, NULL);
    return rt_err(err, why == RT_REFUSE_AUTH ? RT_ERR_AUTH : RT_ERR_PROTO,
                  "%s (hello from rank %u to rank %u, job %llu)", rt_refuse_str(why), h->from,
                  h->to, (unsigned long long)h->job_id);
}

rt_status rt_handshake_respond(int fd, const rt_hs_params *p, int expect_from, bool refuse_all,
                               rt_deadline_t dl, rt_hs_result *out, char *err)
{
    uint8_t hello[RT_HELLO_LEN], buf[RT_CHALLENGE_LEN], mac[RT_MAC_LEN], proof[RT_PROOF_LEN];
    rt_status st = rt_sock_read_full(fd, hello, sizeof hello, dl, err);
    if (st != RT_OK) {
        rt_err_prefix(err, "truncated or missing hello");
        return st == RT_ERR_TIMEOUT ? st : RT_ERR_PROTO;
    }
    rt_hello h;
    if ((st = rt_hello_decode(hello, sizeof hello, &h, err)) != RT_OK)
        return st;
    if (h.version != RT_WIRE_VERSION)
        return refuse(fd, RT_REFUSE_VERSION, &h, dl, err);
    if (h.job_id != p->job_id)
        return refuse(fd, RT_REFUSE_JOB, &h, dl, err);
    if (h.world != (uint32_t)p->world)
        return refuse(fd, RT_REFUSE_WORLD, &h, dl, err);
    if (p->nconn_fwd > 0 && h.conn >= (uint32_t)p->nconn_fwd && expect_from >= 0)
        expect_from = p->rev_from;
    if (h.to != (uint32_t)p->rank || (expect_from >= 0 && h.from != (uint32_t)expect_from) ||
        h.from >= (uint32_t)p->world)
        return refuse(fd, RT_REFUSE_RANK, &h, dl, err);
    if (h.conn >= (uint32_t)p->nconn)
        return refuse(fd, RT_REFUSE_CONN, &h, dl, err);
    if ((h.flags & (RT_HELLO_F_ENCRYPT | RT_HELLO_F_INTEGRITY)) != hello_flags(p))
        return refuse(fd, RT_REFUSE_ENCRYPT, &h, dl, err);
    if (refuse_all)
        return refuse(fd, RT_REFUSE_UNEXPECTED, &h, dl, err);
    rt_challenge ch = {.version = RT_WIRE_VERSION, .status = RT_REFUSE_OK};
    if (rt_random(ch.nonce, sizeof ch.nonce) != RT_OK)
        return rt_err(err, RT_ERR_IO, "no random numbers for the handshake nonce");
    rt_auth_mac(p->key, "rt-resp", hello, ch.nonce, ch.mac);
    rt_challenge_encode(&ch, buf);
    st = rt_sock_write_full(fd, buf, sizeof buf, dl, err);
    if (st == RT_OK)
        st = rt_sock_read_full(fd, proof, sizeof proof, dl, err);
    if (st == RT_ERR_IO)
        return rt_err(err, RT_ERR_AUTH,
                      "the peer (claiming rank %u) hung up during authentication: it does not "
                      "accept this rank's key",
                      h.from);
    if (st != RT_OK) {
        rt_err_prefix(err, "handshake with claimed rank %u", h.from);
        return st;
    }
    rt_auth_mac(p->key, "rt-init", hello, ch.nonce, mac);
    uint8_t acc[RT_ACCEPT_LEN];
    if (!rt_mac_equal(mac, proof)) {
        rt_put_le32(acc, RT_REFUSE_AUTH);
        rt_sock_write_full(fd, acc, sizeof acc, dl, NULL);
        return rt_err(err, RT_ERR_AUTH, "%s (hello claims rank %u of job %llu)",
                      rt_refuse_str(RT_REFUSE_AUTH), h.from, (unsigned long long)h.job_id);
    }
    rt_put_le32(acc, RT_REFUSE_OK);
    if ((st = rt_sock_write_full(fd, acc, sizeof acc, dl, err)) != RT_OK)
        return st;
    out->conn = h.conn;
    out->from = h.from;
    if ((p->encrypt || p->integrity) &&
        rt_derive_keys(p->key, hello, ch.nonce, out->key_fwd, out->key_rev) != RT_OK)
        return rt_err(err, RT_ERR_IO, "key derivation failed");
    return RT_OK;
}
