/* coord_http_conn.c — the HTTP API's connections, bounded (evhttp counts
 * none and re-arms its idle timer with every byte):
 *   - at most [coordinator] http_max_connections in all and
 *     http_max_per_address from one address: one more is shut down when
 *     its TLS handshake starts (or at the next tick, if it never sends a
 *     ClientHello), counted in ringtrain_rejected_connections_total;
 *   - an absolute deadline: a client has http_request_timeout from
 *     connecting, or from its last reply, to send a whole request (headers
 *     and body); bytes trickling in do not extend it, and a log stream
 *     being sent has none;
 *   - accept errors (EMFILE: out of descriptors) logged once a second with
 *     a count, the listener paused for 100 ms rather than spinning.
 * A connection is closed by shutting its socket down: evhttp sees the end
 * of the stream and frees it; the SSL object's ex_data destructor unlinks
 * our record when it goes. */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "coord.h"
#include "rt_log.h"
#include "rt_time.h"

struct http_conn {
    coord *co;
    SSL *ssl;
    char addr[INET6_ADDRSTRLEN]; /* "" until the socket is known */
    int64_t deadline_ns;         /* 0: none (a stream being sent) */
    bool checked;                /* against the caps */
    bool closing;
    http_conn *prev, *next;
};

static int ex_index = -1;

/* SSL_free's ex_data destructor: the connection is gone */
static void conn_gone(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
    (void)parent;
    (void)ad;
    (void)idx;
    (void)argl;
    (void)argp;
    http_conn *h = ptr;
    if (!h)
        return;
    if (h->prev)
        h->prev->next = h->next;
    else
        h->co->http_conns = h->next;
    if (h->next)
        h->next->prev = h->prev;
    h->co->http_nconns--;
    free(h);
}

static void shut(http_conn *h, const char *why)
{
    if (h->closing)
        return;
    h->closing = true;
    int fd = SSL_get_fd(h->ssl);
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
    RT_DEBUG("http", "closed a connection from %s: %s", h->addr[0] ? h->addr : "?", why);
}

/* The peer's address, once evhttp has given the SSL object its socket. */
static bool peer_of(http_conn *h)
{
    if (h->addr[0])
        return true;
    int fd = SSL_get_fd(h->ssl);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &len) != 0)
        return false;
    if (ss.ss_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, h->addr, sizeof h->addr);
    else if (ss.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, h->addr, sizeof h->addr);
    else
        snprintf(h->addr, sizeof h->addr, "local");
    return true;
}

/* Whether h is past the caps: among the open connections (older ones
 * first), the total and those from its address before it. */
static bool over_caps(coord *co, http_conn *h)
{
    int older = 0, same = 0;
    for (http_conn *o = h->next; o; o = o->next) /* the list is newest first */
        if (!o->closing) {
            older++;
            same += peer_of(o) && !strcmp(o->addr, h->addr);
        }
    return older >= co->cfg.http_max_connections || same >= co->cfg.http_max_per_address;
}

static void refuse(coord *co, http_conn *h)
{
    co->rejected_connections++;
    static int64_t last_ns, quiet;
    const int64_t now = rt_now_ns();
    if (now - last_ns >= 1000000000LL) { /* a line a second, not one per connection */
        RT_WARN("http", "refused a connection from %s: %d open (limits %lld in all, %lld per "
                        "address)%s", h->addr, co->http_nconns,
                (long long)co->cfg.http_max_connections, (long long)co->cfg.http_max_per_address,
                quiet ? " (and more since the last such line)" : "");
        last_ns = now;
        quiet = 0;
    } else {
        quiet++;
    }
    shut(h, "over the connection limits");
}

static void check(http_conn *h)
{
    if (h->checked || h->closing || !peer_of(h))
        return;
    h->checked = true;
    if (over_caps(h->co, h))
        refuse(h->co, h);
}

/* The handshake starts: the socket is known, the caps apply at once. */
static void on_ssl_info(const SSL *ssl, int where, int ret)
{
    (void)ret;
    http_conn *h = SSL_get_ex_data(ssl, ex_index);
    if ((where & SSL_CB_HANDSHAKE_START) && h)
        check(h);
}

struct bufferevent *http_conn_bev(struct event_base *base, void *arg)
{
    coord *co = arg;
    if (ex_index < 0)
        ex_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, conn_gone);
    SSL *ssl = SSL_new(co->ssl);
    http_conn *h = ssl && ex_index >= 0 ? calloc(1, sizeof *h) : NULL;
    if (h && !SSL_set_ex_data(ssl, ex_index, h)) {
        free(h); /* out of memory: served, but not counted */
        h = NULL;
    }
    if (h) {
        h->co = co;
        h->ssl = ssl;
        h->deadline_ns = rt_now_ns() + co->cfg.http_request_timeout_us * 1000;
        h->next = co->http_conns;
        if (h->next)
            h->next->prev = h;
        co->http_conns = h;
        co->http_nconns++;
        SSL_set_info_callback(ssl, on_ssl_info);
    }
    return ssl ? bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                BEV_OPT_CLOSE_ON_FREE)
               : NULL;
}

static http_conn *conn_of(struct evhttp_request *req)
{
    struct evhttp_connection *evc = req ? evhttp_request_get_connection(req) : NULL;
    struct bufferevent *bev = evc ? evhttp_connection_get_bufferevent(evc) : NULL;
    SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
    return ssl && ex_index >= 0 ? SSL_get_ex_data(ssl, ex_index) : NULL;
}

void http_conn_served(struct evhttp_request *req, bool streaming)
{
    http_conn *h = conn_of(req);
    if (h)
        h->deadline_ns = streaming ? 0 : rt_now_ns() + h->co->cfg.http_request_timeout_us * 1000;
}

void http_conn_tick(coord *co)
{
    const int64_t now = rt_now_ns();
    http_conn *h = co->http_conns;
    while (h && h->next) /* the oldest first: they keep their places */
        h = h->next;
    for (; h; h = h->prev) {
        check(h); /* one that never started a handshake */
        if (!h->closing && h->deadline_ns > 0 && now > h->deadline_ns)
            shut(h, "no whole request within http_request_timeout");
    }
}

/* ---- accept errors ---------------------------------------------------------------- */

static void resume_listener(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    evconnlistener_enable(arg);
}

static void on_accept_error(struct evconnlistener *l, void *arg)
{
    (void)arg; /* evhttp's */
    const int e = EVUTIL_SOCKET_ERROR();
    static int64_t last_ns, count;
    count++;
    const int64_t now = rt_now_ns();
    if (now - last_ns >= 1000000000LL) {
        RT_WARN("http", "accepting API connections failed %lld time%s in the last second: %s",
                (long long)count, count == 1 ? "" : "s", evutil_socket_error_to_string(e));
        last_ns = now;
        count = 0;
    }
    /* out of descriptors: the pending connection stays readable, so accepting
     * again at once would spin; pause (connections wait in the backlog) */
    evconnlistener_disable(l);
    struct timeval tv = {0, 100000};
    event_base_once(evconnlistener_get_base(l), -1, EV_TIMEOUT, resume_listener, l, &tv);
}

void http_conn_listener(struct evhttp_bound_socket *bound)
{
    struct evconnlistener *l = bound ? evhttp_bound_socket_get_listener(bound) : NULL;
    if (l)
        evconnlistener_set_error_cb(l, on_accept_error);
}
