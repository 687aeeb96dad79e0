/* coord_core.c — the coordinator's event loop and the agents' control
 * channel: TLS on every connection (bufferevent_openssl), a hello carrying
 * the cluster token within 10 s, then length-prefixed JSON frames.  A
 * connection that fails TLS, sends an oversized or malformed frame, a wrong
 * token or an unknown message type is closed and logged; nothing it sent is
 * acted on, and the coordinator keeps serving everyone else. */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "coord.h"
#include "rt_addr.h"
#include "rt_log.h"
#include "rt_time.h"

#define HELLO_TIMEOUT_S 10
#define TICK_US 200000

double coord_unix_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

agent *coord_agent_by_key(coord *co, const char *key)
{
    for (agent *a = co->agents; a; a = a->next)
        if (a->authed && strcmp(a->key, key) == 0)
            return a;
    return NULL;
}

rt_status coord_send(agent *a, rt_jw *w)
{
    if (!a || !a->bev) {
        rt_jw_free(w);
        return RT_ERR_IO;
    }
    return rt_frame_push(a->bev, w);
}

static void agent_unlink(coord *co, agent *a)
{
    for (agent **p = &co->agents; *p; p = &(*p)->next)
        if (*p == a) {
            *p = a->next;
            break;
        }
}

/* Close the connection; an authenticated agent stays known, marked down. */
static void drop_connection(agent *a, const char *why, bool lost)
{
    coord *co = a->co;
    if (a->bev) {
        bufferevent_free(a->bev);
        a->bev = NULL;
    }
    if (!a->authed) {
        agent_unlink(co, a);
        free(a);
        return;
    }
    if (a->up) {
        a->up = false;
        cdb_agent(co, a);
        RT_WARN("coord", "agent %s (%s) is down: %s", a->key, a->peer, why);
        http_on_agent_gone(co, a);
        if (lost)
            sched_on_agent_lost(co, a, why);
    }
}

/* A rejected connection that is still writing the reason it was rejected. */
struct closing_conn {
    coord *co;
    struct bufferevent *bev;
    closing_conn *next;
};

static void closing_free(closing_conn *c)
{
    for (closing_conn **p = &c->co->closing; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    bufferevent_free(c->bev);
    free(c);
}

static void close_when_written(struct bufferevent *bev, void *arg)
{
    if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        closing_free(arg);
}

static void close_on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    (void)what;
    closing_free(arg);
}

static void bev_setcb(agent *a);
static void reject(agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reject(agent *a, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    a->co->rejected_connections++;
    RT_WARN("coord", "closing connection from %s%s%s: %s", a->peer, a->authed ? " agent " : "",
            a->authed ? a->key : "", why);
    if (a->bev && !a->authed) {
        /* tell an honest but misconfigured agent why: the connection leaves
         * the agent record and closes once the reason is written (or in 2 s) */
        struct bufferevent *bev = a->bev;
        a->bev = NULL;
        closing_conn *cc = calloc(1, sizeof *cc);
        if (!cc) {
            bufferevent_free(bev);
            drop_connection(a, why, true);
            return;
        }
        *cc = (closing_conn){a->co, bev, a->co->closing};
        a->co->closing = cc;
        rt_jw w;
        rt_jw_init(&w);
        rt_jw_obj(&w);
        rt_jw_kstr(&w, "type", "error");
        rt_jw_kstr(&w, "reason", why);
        rt_jw_obj_end(&w);
        bufferevent_disable(bev, EV_READ);
        bufferevent_setcb(bev, NULL, close_when_written, close_on_event, cc);
        struct timeval tv = {2, 0};
        bufferevent_set_timeouts(bev, NULL, &tv);
        if (rt_frame_push(bev, &w) != RT_OK)
            closing_free(cc);
    }
    drop_connection(a, why, true);
}

/* The record now holding the connection (a reconnecting agent's known
 * record takes it over), or NULL when the hello was rejected. */
static agent *on_hello(agent *a, const rt_json *m)
{
    coord *co = a->co;
    const char *token = rt_json_get_str(m, "token");
    if (!rt_token_equal(token, co->token)) {
        reject(a, "wrong cluster token");
        return NULL;
    }
    const char *host_id = rt_json_get_str(m, "host_id"), *name = rt_json_get_str(m, "name");
    int64_t slots = 0;
    if (!host_id || !name || !*host_id || !*name || strlen(host_id) >= sizeof a->host_id ||
        strlen(name) >= sizeof a->name || !rt_json_get_int(m, "slots", &slots) || slots < 0 ||
        slots > 4096) {
        reject(a, "hello without a valid host_id, name and slots");
        return NULL;
    }
    char key[200];
    snprintf(key, sizeof key, "%s/%s", host_id, name);
    agent *known = coord_agent_by_key(co, key);
    if (known && known->up) {
        reject(a, "an agent named %s is already connected from host %s", name, host_id);
        return NULL;
    }
    if (known) { /* a reconnect: the known record takes over this connection */
        known->bev = a->bev;
        snprintf(known->peer, sizeof known->peer, "%s", a->peer);
        agent_unlink(co, a);
        free(a);
        a = known;
        bev_setcb(a);
    }
    a->authed = true;
    a->up = true;
    a->last_seen_ns = rt_now_ns();
    snprintf(a->key, sizeof a->key, "%s", key);
    snprintf(a->host_id, sizeof a->host_id, "%s", host_id);
    snprintf(a->name, sizeof a->name, "%s", name);
    snprintf(a->hostname, sizeof a->hostname, "%s", rt_json_str(rt_json_get(m, "hostname"), "?"));
    snprintf(a->addr, sizeof a->addr, "%s", rt_json_str(rt_json_get(m, "address"), ""));
    a->slots = (int)slots;
    const rt_json *caps = rt_json_get(m, "caps");
    a->cuda = rt_json_bool(rt_json_get(caps, "cuda"), false);
    a->nccl = rt_json_bool(rt_json_get(caps, "nccl"), false);
    a->rdma = rt_json_bool(rt_json_get(caps, "rdma"), false);
    int64_t g = 0;
    a->gpus = rt_json_get_int(caps, "gpus", &g) ? (int)g : 0;
    bufferevent_set_timeouts(a->bev, NULL, NULL); /* heartbeats are checked by the tick */
    cdb_agent(co, a);
    RT_INFO("coord", "agent %s up (%s, %d slots%s)", a->key, a->peer, a->slots,
            a->cuda ? ", CUDA" : "");
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, "type", "welcome");
    rt_jw_kstr(&w, "agent", a->key);
    rt_jw_kint(&w, "heartbeat_ms", co->cfg.heartbeat_interval_us / 1000);
    rt_jw_obj_end(&w);
    coord_send(a, &w);
    sched_on_agent_hello(co, a, rt_json_get(m, "running"));
    const rt_json *exited = rt_json_get(m, "exited");
    for (size_t i = 0; i < rt_json_len(exited); i++)
        sched_on_exited(co, a, rt_json_at(exited, i));
    return a;
}

/* Handle one message; the record holding the connection afterwards, or
 * NULL when an unauthenticated record was rejected (and freed). */
static agent *dispatch(agent *a, const rt_json *m)
{
    const char *type = rt_json_get_str(m, "type");
    if (!a->authed) {
        if (strcmp(type, "hello") == 0)
            return on_hello(a, m);
        reject(a, "'%s' before hello", type);
        return NULL;
    }
    coord *co = a->co;
    a->last_seen_ns = rt_now_ns();
    if (strcmp(type, "heartbeat") == 0)
        return a;
    if (strcmp(type, "bye") == 0) { /* a clean stop: not counted as rejected */
        char why[300];
        snprintf(why, sizeof why, "stopped (%s)",
                 rt_json_str(rt_json_get(m, "reason"), "no reason given"));
        drop_connection(a, why, true);
        return a;
    }
    if (strcmp(type, "prepared") == 0)
        sched_on_prepared(co, a, m);
    else if (strcmp(type, "started") == 0)
        sched_on_started(co, a, m);
    else if (strcmp(type, "exited") == 0)
        sched_on_exited(co, a, m);
    else if (strcmp(type, "progress") == 0)
        sched_on_progress(co, a, m);
    else if (strcmp(type, "logs") == 0)
        http_on_logs(co, a, m);
    else
        reject(a, "unknown message type '%s'", type);
    return a;
}

static void on_read(struct bufferevent *bev, void *arg)
{
    agent *a = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        rt_json *m = NULL;
        char err[RT_ERR_LEN];
        int r = rt_frame_pull(in, &m, err);
        if (r == 0)
            return;
        if (r < 0) {
            reject(a, "bad frame: %s", err);
            return;
        }
        /* dispatch may close the connection (and free an unauthenticated
         * record) or hand it to the known record of a reconnecting agent:
         * go on with the record that holds it, if any */
        a = dispatch(a, m);
        rt_json_free(m);
        if (!a || a->bev != bev)
            return;
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    agent *a = arg;
    (void)bev;
    if (what & BEV_EVENT_CONNECTED)
        return;
    char why[256];
    if (what & BEV_EVENT_TIMEOUT)
        snprintf(why, sizeof why, "no hello within %d s", HELLO_TIMEOUT_S);
    else if (what & BEV_EVENT_ERROR) {
        unsigned long e = bufferevent_get_openssl_error(bev);
        if (e && ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
            snprintf(why, sizeof why, "connection closed abruptly");
        else if (e)
            ERR_error_string_n(e, why, sizeof why);
        else
            snprintf(why, sizeof why, "connection error");
    } else
        snprintf(why, sizeof why, "connection closed");
    if (!a->authed) {
        a->co->rejected_connections++;
        RT_WARN("coord", "rejected connection from %s: %s", a->peer, why);
    }
    drop_connection(a, why, true);
}

static void bev_setcb(agent *a) { bufferevent_setcb(a->bev, on_read, NULL, on_event, a); }

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
                      void *arg)
{
    coord *co = arg;
    (void)l;
    (void)len;
    if (co->stopping) {
        evutil_closesocket(fd);
        return;
    }
    agent *a = calloc(1, sizeof *a);
    SSL *ssl = SSL_new(co->ssl);
    if (!a || !ssl) {
        free(a);
        SSL_free(ssl);
        evutil_closesocket(fd);
        return;
    }
    a->co = co;
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, host, sizeof host);
        port = ntohs(((struct sockaddr_in *)sa)->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof host);
        port = ntohs(((struct sockaddr_in6 *)sa)->sin6_port);
    }
    snprintf(a->peer, sizeof a->peer, "%s:%d", host, port);
    a->bev = bufferevent_openssl_socket_new(co->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                            BEV_OPT_CLOSE_ON_FREE);
    if (!a->bev) {
        free(a);
        evutil_closesocket(fd);
        return;
    }
    a->next = co->agents;
    co->agents = a;
    bev_setcb(a);
    struct timeval tv = {HELLO_TIMEOUT_S, 0};
    bufferevent_set_timeouts(a->bev, &tv, NULL);
    /* a frame is at most 1 MiB: stop reading until the frame is consumed */
    bufferevent_setwatermark(a->bev, EV_READ, 0, RT_FRAME_MAX + 8);
    bufferevent_enable(a->bev, EV_READ | EV_WRITE);
}

static void status_line(coord *co)
{
    int up = 0, running = 0, queued = 0;
    for (agent *a = co->agents; a; a = a->next)
        up += a->up;
    for (job *j = co->jobs; j; j = j->next) {
        running += j->state == JOB_RUNNING || j->state == JOB_STARTING;
        queued += j->state == JOB_QUEUED || j->state == JOB_RESTARTING;
    }
    sd_notifyf(0, "STATUS=%d agents up, %d jobs running, %d queued", up, running, queued);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    coord *co = arg;
    (void)fd;
    (void)what;
    const int64_t now = rt_now_ns();
    for (agent *a = co->agents; a;) {
        agent *next = a->next;
        if (a->authed && a->up && now - a->last_seen_ns > co->cfg.heartbeat_timeout_us * 1000) {
            char why[128];
            snprintf(why, sizeof why, "no heartbeat for %.1f s",
                     (double)(now - a->last_seen_ns) / 1e9);
            drop_connection(a, why, true);
        }
        a = next;
    }
    sched_tick(co);
    static int64_t last_status, last_watchdog;
    if (now - last_status > 5000000000LL) {
        status_line(co);
        last_status = now;
    }
    uint64_t wd = 0;
    if (sd_watchdog_enabled(0, &wd) > 0 && (now - last_watchdog) / 1000 > (int64_t)wd / 2) {
        sd_notify(0, "WATCHDOG=1");
        last_watchdog = now;
    }
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    coord *co = arg;
    (void)what;
    RT_INFO("coord", "signal %d: stopping (jobs keep their state; agents keep their workers)",
            (int)sig);
    sd_notify(0, "STOPPING=1");
    co->stopping = true;
    event_base_loopexit(co->base, NULL);
}

static rt_status parse_listen(const char *addr, struct sockaddr_storage *ss, int *len, char *err)
{
    char host[256], port[16];
    int portn = 0;
    if (rt_addr_parse(addr, true, host, sizeof host, &portn, err) != RT_OK) {
        rt_err_prefix(err, "[coordinator] listen");
        return RT_ERR_INVALID;
    }
    snprintf(port, sizeof port, "%d", portn);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV}, *res;
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0)
        return rt_err(err, RT_ERR_INVALID, "cannot resolve listen address '%s': %s", addr,
                      gai_strerror(g));
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = (int)res->ai_addrlen;
    freeaddrinfo(res);
    return RT_OK;
}

rt_status coord_create(const rt_coord_cfg *cfg, coord **out, char *err)
{
    *out = NULL;
    coord *co = calloc(1, sizeof *co);
    if (!co)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    co->cfg = *cfg;
    rt_status st = rt_token_load(cfg->token_file, co->token, err);
    if (st != RT_OK)
        goto fail;
    if (!(co->ssl = rt_tls_server_ctx(cfg->cert, cfg->key, err))) {
        st = RT_ERR_IO;
        goto fail;
    }
    if ((st = cdb_open(co, cfg->state_db, err)) != RT_OK)
        goto fail;
    if ((st = cdb_load_jobs(co, err)) != RT_OK)
        goto fail;
    co->base = event_base_new();
    if (!co->base) {
        st = rt_err(err, RT_ERR_NOMEM, "event_base_new failed");
        goto fail;
    }
    struct sockaddr_storage ss;
    int sl = 0;
    if ((st = parse_listen(cfg->listen, &ss, &sl, err)) != RT_OK)
        goto fail;
    co->listener = evconnlistener_new_bind(co->base, on_accept, co,
                                           LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
                                               LEV_OPT_CLOSE_ON_EXEC,
                                           128, (struct sockaddr *)&ss, sl);
    if (!co->listener) {
        st = rt_err(err, RT_ERR_IO, "cannot listen on %s: %m", cfg->listen);
        goto fail;
    }
    if ((st = http_start(co, err)) != RT_OK)
        goto fail;
    /* jobs restored from the database get until then to be found again */
    co->reconcile_until_ns = rt_now_ns() + 2 * cfg->heartbeat_timeout_us * 1000;
    co->tick = event_new(co->base, -1, EV_PERSIST, on_tick, co);
    struct timeval tv = {0, TICK_US};
    event_add(co->tick, &tv);
    co->sigint = evsignal_new(co->base, SIGINT, on_signal, co);
    co->sigterm = evsignal_new(co->base, SIGTERM, on_signal, co);
    event_add(co->sigint, NULL);
    event_add(co->sigterm, NULL);
    signal(SIGPIPE, SIG_IGN);
    *out = co;
    return RT_OK;
fail:
    coord_destroy(co);
    return st;
}

int coord_run(coord *co)
{
    RT_INFO("coord", "listening for agents on %s, API on %s", co->cfg.listen, co->cfg.http_listen);
    sd_notify(0, "READY=1");
    status_line(co);
    event_base_dispatch(co->base);
    return 0;
}

void coord_destroy(coord *co)
{
    if (!co)
        return;
    http_stop(co);
    if (co->tick)
        event_free(co->tick);
    if (co->sigint)
        event_free(co->sigint);
    if (co->sigterm)
        event_free(co->sigterm);
    if (co->listener)
        evconnlistener_free(co->listener);
    for (agent *a = co->agents; a;) {
        agent *n = a->next;
        if (a->bev)
            bufferevent_free(a->bev);
        free(a);
        a = n;
    }
    while (co->closing)
        closing_free(co->closing);
    for (job *j = co->jobs; j;) {
        job *n = j->next;
        job_free(j);
        j = n;
    }
    if (co->base)
        event_base_free(co->base);
    cdb_close(co);
    if (co->ssl)
        SSL_CTX_free(co->ssl);
    free(co);
}
