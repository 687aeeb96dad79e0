/* cli_http.c — a small HTTP/1.1 client over TLS for the CLI: connect with a
 * timeout, verify the coordinator's certificate against the cluster CA and
 * its name, send one request with the bearer token, read a Content-Length,
 * chunked, or read-until-close body.  Blocking, with socket timeouts: a
 * request fails when the coordinator is silent for the request timeout; a
 * stream (logs --follow) waits through any silence — a rank may print
 * nothing for days — waking every second to see whether the caller wants
 * to stop, with TCP keep-alive so a dead peer is still noticed. */
#include <errno.h>
#include <time.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli.h"
#include "rt_time.h"

typedef struct conn {
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
    char buf[16384];
    size_t have, pos;
    bool stream;                 /* silence is not an error */
    volatile sig_atomic_t *stop; /* a stream ends when this becomes true */
} conn;

static void conn_close(conn *k)
{
    if (k->ssl) {
        SSL_shutdown(k->ssl);
        SSL_free(k->ssl);
    }
    if (k->ctx)
        SSL_CTX_free(k->ctx);
    if (k->fd >= 0)
        close(k->fd);
}

/* A failure to connect that a coordinator coming back would cure. */
static bool transient(int e)
{
    return e == ECONNREFUSED || e == ETIMEDOUT || e == EHOSTUNREACH || e == ENETUNREACH ||
           e == ECONNRESET || e == EAGAIN;
}

static rt_status conn_open_once(conn *k, const cli_conn *c, int rcv_timeout_ms, int *sys_err,
                                char *err);

/* Connect, retrying a refused or unreachable coordinator for c->retry_ms
 * (it may be restarting), with backoff; said once on stderr. */
static rt_status conn_open(conn *k, const cli_conn *c, int rcv_timeout_ms, char *err)
{
    static bool said;
    const int64_t end = rt_now_ns() + (int64_t)c->retry_ms * 1000000;
    int backoff_ms = 100, e = 0;
    for (;;) {
        rt_status st = conn_open_once(k, c, rcv_timeout_ms, &e, err);
        if (st != RT_OK && cli_interrupted()) /* Ctrl-C (or as it) while connecting */
            return rt_err(err, st,
                          "%s while connecting to the coordinator at %s:%d; nothing "
                          "was sent",
                          strsignal(cli_interrupted()), c->host, c->port);
        if (st == RT_OK || !transient(e) || rt_now_ns() >= end)
            return st;
        if (!said) {
            fprintf(stderr, "ringtrain: %s; retrying for up to %d s\n", err, c->retry_ms / 1000);
            said = true;
        }
        struct timespec ts = {backoff_ms / 1000, (long)(backoff_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
        backoff_ms = backoff_ms < 1000 ? backoff_ms * 2 : 2000;
    }
}

static rt_status conn_open_once(conn *k, const cli_conn *c, int rcv_timeout_ms, int *sys_err,
                                char *err)
{
    *sys_err = 0;
    memset(k, 0, sizeof *k);
    k->fd = -1;
    char port[16];
    snprintf(port, sizeof port, "%d", c->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int g = getaddrinfo(c->host, port, &hints, &res);
    if (g != 0)
        return rt_err(err, RT_ERR_IO, "cannot resolve the coordinator %s: %s", c->host,
                      gai_strerror(g));
    k->fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int r = k->fd >= 0 ? connect(k->fd, res->ai_addr, res->ai_addrlen) : -1;
    freeaddrinfo(res);
    if (r != 0 && errno == EINPROGRESS) {
        struct pollfd p = {k->fd, POLLOUT, 0};
        int so = ETIMEDOUT;
        if (poll(&p, 1, c->timeout_ms) > 0) {
            socklen_t sl = sizeof so;
            getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &so, &sl);
        }
        r = so ? -1 : 0;
        errno = so;
    }
    if (r != 0) {
        int e = errno;
        *sys_err = e;
        conn_close(k);
        return rt_err(err, RT_ERR_IO, "cannot reach the coordinator at %s:%d: %s", c->host,
                      c->port, strerror(e));
    }
    fcntl(k->fd, F_SETFL, fcntl(k->fd, F_GETFL, 0) & ~O_NONBLOCK);
    int one = 1;
    setsockopt(k->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    struct timeval tv = {rcv_timeout_ms / 1000, (rcv_timeout_ms % 1000) * 1000};
    setsockopt(k->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct timeval sv = {c->timeout_ms / 1000, (c->timeout_ms % 1000) * 1000};
    setsockopt(k->fd, SOL_SOCKET, SO_SNDTIMEO, &sv, sizeof sv);
    if (!(k->ctx = rt_tls_client_ctx(c->ca, err))) {
        conn_close(k);
        return RT_ERR_IO;
    }
    k->ssl = rt_tls_client_ssl(k->ctx, c->server_name);
    SSL_set_fd(k->ssl, k->fd);
    int rc = SSL_connect(k->ssl);
    if (rc != 1) {
        char why[256];
        long v = SSL_get_verify_result(k->ssl);
        /* the connection closed (or went unanswered) during the handshake,
         * with no certificate problem: a coordinator going down (or just
         * restarted); nothing was sent, so trying again is safe */
        int se = SSL_get_error(k->ssl, rc);
        unsigned long top = ERR_peek_error();
        if (v == X509_V_OK &&
            (se == SSL_ERROR_SYSCALL || se == SSL_ERROR_ZERO_RETURN ||
             /* no answer within the receive timeout: a coordinator whose
              * socket is bound but whose loop has not started (restarting) */
             se == SSL_ERROR_WANT_READ || se == SSL_ERROR_WANT_WRITE ||
             (top && ERR_GET_REASON(top) == SSL_R_UNEXPECTED_EOF_WHILE_READING)))
            *sys_err = ECONNRESET;
        if (v != X509_V_OK)
            snprintf(why, sizeof why, "certificate check failed: %s (is --ca the cluster CA, "
                     "and does the coordinator's certificate name %s?)",
                     X509_verify_cert_error_string(v), c->server_name);
        else
            rt_tls_error(why, sizeof why);
        conn_close(k);
        return rt_err(err, RT_ERR_AUTH, "TLS handshake with the coordinator at %s:%d failed: %s",
                      c->host, c->port, why);
    }
    return RT_OK;
}

/* Whether the read that returned n timed out (the socket's receive
 * timeout): OpenSSL reports it as want-read, or as a system-call error with
 * EAGAIN, depending on where in a record it was. */
static bool timed_out(conn *k, int n)
{
    int e = SSL_get_error(k->ssl, n);
    return e == SSL_ERROR_WANT_READ ||
           (e == SSL_ERROR_SYSCALL && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

/* Next byte of the response; -1 at the end or on an error (a request's
 * timeout included), -2 when a stream's caller asked to stop. */
static int next_byte(conn *k)
{
    while (k->pos == k->have) {
        if (k->stream && k->stop && *k->stop)
            return -2;
        int n = SSL_read(k->ssl, k->buf, sizeof k->buf);
        if (n > 0) {
            k->have = (size_t)n;
            k->pos = 0;
        } else if (!(k->stream && timed_out(k, n))) {
            return -1;
        } /* a stream: silence; look at *stop and wait on */
    }
    return (unsigned char)k->buf[k->pos++];
}

/* Whether a byte can be had without waiting. */
static bool buffered(const conn *k) { return k->pos < k->have || SSL_pending(k->ssl) > 0; }

static int read_line(conn *k, char *line, size_t len)
{
    size_t n = 0;
    for (;;) {
        int b = next_byte(k);
        if (b < 0)
            return b;
        if (b == '\n')
            break;
        if (b != '\r' && n + 1 < len)
            line[n++] = (char)b;
    }
    line[n] = '\0';
    return (int)n;
}

static rt_status send_request(conn *k, const cli_conn *c, const char *method, const char *path,
                              const char *body, char *err)
{
    char head[2048], idem[96] = "";
    size_t blen = body ? strlen(body) : 0;
    if (c->idem_key[0])
        snprintf(idem, sizeof idem, "Idempotency-Key: %s\r\n", c->idem_key);
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\n"
                     "User-Agent: ringtrain-cli\r\nConnection: close\r\n%s%s"
                     "Content-Length: %zu\r\n\r\n",
                     method, path, c->server_name, c->port, c->token,
                     body ? "Content-Type: application/json\r\n" : "", idem, blen);
    if (SSL_write(k->ssl, head, n) != n || (blen && SSL_write(k->ssl, body, (int)blen) != (int)blen))
        return rt_err(err, RT_ERR_IO, "sending the request to the coordinator failed");
    return RT_OK;
}

typedef struct body_state {
    bool chunked;
    long long length; /* -1: until close */
} body_state;

static rt_status read_head(conn *k, int *status, body_state *b, char *err)
{
    char line[4096];
    int n = read_line(k, line, sizeof line);
    /* "HTTP/1.1 200 OK" */
    char *end = NULL;
    long code = n > 9 && !strncmp(line, "HTTP/1.", 7) && line[8] == ' '
                    ? strtol(line + 9, &end, 10) : 0;
    if (code < 100 || code > 599 || (end && *end && *end != ' '))
        return rt_err(err, RT_ERR_PROTO, "the coordinator sent no HTTP response");
    *status = (int)code;
    b->chunked = false;
    b->length = -1;
    while ((n = read_line(k, line, sizeof line)) > 0) {
        if (strncasecmp(line, "Content-Length:", 15) == 0)
            b->length = atoll(line + 15);
        else if (strncasecmp(line, "Transfer-Encoding:", 18) == 0 && strstr(line, "chunked"))
            b->chunked = true;
    }
    return n < 0 ? rt_err(err, RT_ERR_PROTO, "truncated HTTP response") : RT_OK;
}

/* Deliver the body to fn; returns when done, fn asks to stop, or *stop
 * (k->stop, a stream). */
static rt_status read_body(conn *k, body_state *b, http_chunk_fn fn, void *user, char *err)
{
    char buf[8192];
    for (;;) {
        long long want = b->length;
        if (b->chunked) {
            char line[64];
            int n = read_line(k, line, sizeof line);
            if (n == -2)
                return RT_OK;
            if (n < 0)
                return rt_err(err, RT_ERR_PROTO, "the coordinator's answer was cut short (a "
                                                 "chunk header is missing)");
            want = strtoll(line, NULL, 16);
            if (want == 0)
                return RT_OK;
        }
        long long got = 0;
        while (want < 0 || got < want) {
            size_t n = 0;
            int c = 0;
            /* hand over what has arrived instead of waiting for a full buffer */
            while (n < sizeof buf && (want < 0 || got + (long long)n < want) &&
                   (n == 0 || buffered(k))) {
                if ((c = next_byte(k)) < 0)
                    break;
                buf[n++] = (char)c;
            }
            got += (long long)n;
            if (n && fn(user, buf, n))
                return RT_OK;
            if (c == -2)
                return RT_OK;
            if (c == -1)
                return want < 0 ? RT_OK
                                : rt_err(err, RT_ERR_PROTO, "the coordinator's answer was cut short");
        }
        if (!b->chunked)
            return RT_OK;
        char crlf[8];
        if (read_line(k, crlf, sizeof crlf) == -2)
            return RT_OK;
    }
}

static int collect_fn(void *user, const char *d, size_t n)
{
    return rt_buf_add(user, d, n) ? 0 : 1;
}

rt_status http_request(const cli_conn *c, const char *method, const char *path, const char *body,
                       http_resp *out, char *err)
{
    memset(out, 0, sizeof *out);
    conn k;
    rt_status st = conn_open(&k, c, c->timeout_ms, err);
    if (st != RT_OK)
        return st;
    out->reached = true;
    sigset_t hold, old;
    sigemptyset(&hold);
    if (c->hold_signals) {
        sigaddset(&hold, SIGINT);
        sigaddset(&hold, SIGTERM);
        sigaddset(&hold, SIGHUP);
    }
    sigprocmask(SIG_BLOCK, &hold, &old);
    body_state b;
    rt_buf col = {0};
    st = send_request(&k, c, method, path, body, err);
    if (st == RT_OK)
        st = read_head(&k, &out->status, &b, err);
    if (st == RT_OK)
        st = read_body(&k, &b, collect_fn, &col, err);
    conn_close(&k);
    sigprocmask(SIG_SETMASK, &old, NULL); /* a signal held is delivered here */
    if (st != RT_OK) {
        free(col.p);
        return st;
    }
    out->body = col.p ? col.p : strdup("");
    out->len = col.len;
    return RT_OK;
}

rt_status http_stream(const cli_conn *c, const char *path, http_chunk_fn fn, void *user,
                      volatile sig_atomic_t *stop, int *status, char *err)
{
    conn k;
    rt_status st = conn_open(&k, c, 1000, err);
    if (st != RT_OK)
        return st;
    body_state b;
    st = send_request(&k, c, "GET", path, NULL, err);
    k.stream = true; /* the head may be slow too: it comes when the agents answer */
    k.stop = stop;
    if (st == RT_OK)
        st = read_head(&k, status, &b, err);
    if (st == RT_OK && *status == 200)
        st = read_body(&k, &b, fn, user, err);
    else if (st == RT_OK) {
        rt_buf col = {0};
        read_body(&k, &b, collect_fn, &col, err);
        http_resp r = {*status, col.p, col.len, true};
        char buf[512];
        rt_err(err, RT_ERR_IO, "%s", http_error_text(&r, buf, sizeof buf));
        free(col.p);
        st = RT_ERR_IO;
    }
    conn_close(&k);
    return st;
}

const char *http_error_text(const http_resp *r, char *buf, size_t len)
{
    rt_json *j = NULL;
    char err[RT_ERR_LEN];
    if (r->body && rt_json_parse(r->body, r->len, &j, err) == RT_OK &&
        rt_json_get_str(j, "error")) {
        snprintf(buf, len, "%s", rt_json_get_str(j, "error"));
    } else if (r->status == 401) {
        snprintf(buf, len, "the coordinator refused the token");
    } else {
        snprintf(buf, len, "HTTP %d: %.200s", r->status, r->body ? r->body : "");
    }
    if (r->status == 401 && !strstr(buf, "token"))
        snprintf(buf + strlen(buf), len - strlen(buf), " (token refused)");
    rt_json_free(j);
    return buf;
}
