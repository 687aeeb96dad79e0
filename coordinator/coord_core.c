/* coord_core.c — the coordinator's event loop and the agents' control
 * channel: TLS on every connection (bufferevent_openssl), a hello with the
 * cluster token before an absolute deadline, then length-prefixed JSON
 * frames checked against the protocol table (rt_proto.h) and handed to one
 * handler per message.  A connection that fails TLS, sends an oversized or
 * malformed frame, a wrong token or a message it may not send is closed and
 * logged; nothing it sent is acted on, and everyone else is served on.
 *
 * Every event goes to the scheduler (scheduler.h), whose actions are then
 * performed by coord_flush: the writes first, committed in one
 * transaction, then the frames — so nothing is announced that a crash
 * could take back. */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "coord.h"
#include "rt_addr.h"
#include "rt_daemon.h"
#include "rt_hex.h"
#include "rt_log.h"
#include "rt_time.h"

#define HELLO_TIMEOUT_S 10
#define PREAUTH_TOTAL 256   /* connections without a hello yet, in all */
#define PREAUTH_PER_ADDR 16 /* ... and from one address */
#define TICK_US 200000

sc_clock coord_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (sc_clock){rt_now_ns(), (double)ts.tv_sec + ts.tv_nsec * 1e-9};
}

rt_status coord_send(coord *co, const sc_agent *a, rt_jw *w)
{
    (void)co;
    conn *c = a ? a->conn : NULL;
    if (!c || !c->bev) {
        rt_jw_free(w);
        return RT_ERR_IO;
    }
    return rt_frame_push(c->bev, w);
}

rt_status coord_flush(coord *co)
{
    int n;
    const sc_action *acts = sched_actions(&co->S, &n);
    if (n == 0)
        return RT_OK;
    rt_status st = cdb_apply(co, acts, n);
    for (int i = 0; i < n; i++) {
        const sc_action *a = &acts[i];
        if (a->kind == SC_EVENT) {
            RT_INFO("coord", "job %lld %s: %s", (long long)a->job, a->tag, a->text ? a->text : "");
        } else if (a->kind == SC_SAVE_AGENT) {
            sc_agent *ag = sched_agent(&co->S, a->agent);
            if (ag && ag->up)
                RT_INFO("coord", "agent %s: %d slot%s, %s", ag->key, ag->slots,
                        ag->slots == 1 ? "" : "s", ag->draining ? "draining (no new ranks)"
                                                                : "taking ranks");
        } else if (a->kind == SC_SEND && a->text) {
            sc_agent *ag = sched_agent(&co->S, a->agent);
            conn *c = ag ? ag->conn : NULL;
            if (!c || !c->bev) {
                RT_DEBUG("coord", "frame for %s dropped: not connected", a->agent);
                continue;
            }
            if (rt_frame_push_text(c->bev, a->text, strlen(a->text)) != RT_OK)
                RT_ERROR("coord", "a frame for agent %s is larger than %u bytes and was not sent",
                         a->agent, RT_FRAME_MAX);
            /* its kind only: a start frame holds the attempt's key and the
             * job's environment, which no log may */
            const char *kind = strstr(a->text, "\"type\":\"");
            kind = kind ? kind + 8 : "?";
            RT_DEBUG("coord", "-> %s: %.*s job %lld (%zu bytes)", a->agent,
                     (int)strcspn(kind, "\""), kind, (long long)a->job, strlen(a->text));
        }
    }
    sched_actions_clear(&co->S);
    return st;
}

/* ---- connections ------------------------------------------------------------ */

static void conn_unlink(coord *co, conn *c)
{
    for (conn **p = &co->conns; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
}

/* Close the connection; its agent (if registered) is down. */
static void drop_connection(conn *c, const char *why)
{
    coord *co = c->co;
    if (c->bev) {
        bufferevent_free(c->bev);
        c->bev = NULL;
    }
    conn_unlink(co, c);
    sc_agent *a = c->ag;
    free(c);
    if (!a)
        return;
    a->conn = NULL;
    RT_WARN("coord", "agent %s is down: %s", a->key, why);
    logs_on_agent_gone(co, a);
    sched_agent_down(&co->S, a, why, coord_now());
    coord_flush(co);
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

static void reject(conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reject(conn *c, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    coord *co = c->co;
    co->rejected_connections++;
    RT_WARN("coord", "closing connection from %s%s%s: %s", c->peer, c->ag ? " agent " : "",
            c->ag ? c->ag->key : "", why);
    if (c->bev && !c->ag) {
        /* tell an honest but misconfigured agent why: the connection closes
         * once the reason is written (or in 2 s) */
        struct bufferevent *bev = c->bev;
        c->bev = NULL;
        closing_conn *cc = calloc(1, sizeof *cc);
        if (!cc) {
            bufferevent_free(bev);
        } else {
            *cc = (closing_conn){co, bev, co->closing};
            co->closing = cc;
            rt_jw w;
            rt_jw_init(&w);
            rt_jw_obj(&w);
            rt_jw_kstr(&w, RT_F_TYPE, rt_msg_name(RT_MSG_ERROR));
            rt_jw_kstr(&w, RT_F_REASON, why);
            rt_jw_obj_end(&w);
            bufferevent_disable(bev, EV_READ);
            bufferevent_setcb(bev, NULL, close_when_written, close_on_event, cc);
            struct timeval tv = {2, 0};
            bufferevent_set_timeouts(bev, NULL, &tv);
            if (rt_frame_push(bev, &w) != RT_OK)
                closing_free(cc);
        }
    }
    drop_connection(c, why);
}

/* ---- the messages agents send ---------------------------------------------------- */

/* The first message of a connection: checked here (who may connect), then
 * the scheduler decides (a known agent reconnecting, a name clash). */
static bool on_hello(coord *co, conn *c, const rt_json *m)
{
    const char *why = auth_agent_hello(co, rt_json_get_str(m, RT_F_TOKEN),
                                       rt_json_get_str(m, RT_F_NAME));
    if (why) {
        reject(c, "%s", why);
        return false;
    }
    char err[RT_ERR_LEN];
    if (rt_msg_check(m, RT_TO_COORD, err) != RT_MSG_HELLO) {
        reject(c, "%s", err);
        return false;
    }
    int64_t proto = 0;
    rt_json_get_int(m, RT_F_PROTO, &proto);
    if (proto != RT_PROTO_VERSION) {
        reject(c, "the agent speaks control protocol %lld, this coordinator %d: install the same "
                  "ringtrain version on both", (long long)proto, RT_PROTO_VERSION);
        return false;
    }
    sc_agent *a = sched_agent_up(&co->S, m, coord_now(), err);
    if (!a) {
        coord_flush(co);
        reject(c, "%s", err);
        return false;
    }
    c->ag = a;
    /* registered: frames of up to 1 MiB from now on */
    bufferevent_setwatermark(c->bev, EV_READ, 0, RT_FRAME_MAX + 8);
    a->conn = c;
    c->last_seen_ns = rt_now_ns();
    RT_INFO("coord", "agent %s up (%s, %s, %d slot%s%s)", a->key, c->peer,
            rt_json_str(rt_json_get(m, RT_F_VERSION), "?"), a->slots, a->slots == 1 ? "" : "s",
            a->cuda ? ", CUDA" : "");
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, RT_F_TYPE, rt_msg_name(RT_MSG_WELCOME));
    rt_jw_kstr(&w, RT_F_AGENT, a->key);
    rt_jw_kint(&w, RT_F_HEARTBEAT_MS, co->cfg.heartbeat_interval_us / 1000);
    rt_jw_obj_end(&w);
    coord_send(co, a, &w);
    coord_flush(co); /* after the welcome: aborts of leftovers, starts */
    return true;
}

static void on_hello_again(coord *co, conn *c, const rt_json *m)
{
    (void)co;
    (void)m;
    reject(c, "a second hello on the same connection");
}

static void on_heartbeat(coord *co, conn *c, const rt_json *m)
{
    /* every frame counts as a sign of life; this one may bring the usage */
    sched_on_usage(&co->S, c->ag, m, coord_now());
}

static void on_bye(coord *co, conn *c, const rt_json *m)
{
    (void)co;
    char why[300];
    snprintf(why, sizeof why, "stopped (%s)", rt_json_str(rt_json_get(m, RT_F_REASON), "?"));
    drop_connection(c, why); /* a clean stop: not counted as rejected */
}

#define SCHED_HANDLER(name, fn)                                                                    \
    static void name(coord *co, conn *c, const rt_json *m)                                          \
    {                                                                                              \
        fn(&co->S, c->ag, m, coord_now());                                                         \
        coord_flush(co);                                                                           \
    }
SCHED_HANDLER(on_prepared, sched_on_prepared)
SCHED_HANDLER(on_started, sched_on_started)
SCHED_HANDLER(on_exited, sched_on_exited)
SCHED_HANDLER(on_progress, sched_on_progress)

const coord_handler coord_handlers[RT_MSG_COUNT] = {
    [RT_MSG_HELLO] = on_hello_again, [RT_MSG_HEARTBEAT] = on_heartbeat,
    [RT_MSG_BYE] = on_bye,           [RT_MSG_PREPARED] = on_prepared,
    [RT_MSG_STARTED] = on_started,   [RT_MSG_EXITED] = on_exited,
    [RT_MSG_PROGRESS] = on_progress, [RT_MSG_LOG_DATA] = logs_on_agent_data,
};

/* One frame; false when the connection was closed. */
static bool dispatch(coord *co, conn *c, const rt_json *m)
{
    const char *type = rt_json_get_str(m, RT_F_TYPE);
    if (!c->ag) {
        if (strcmp(type, rt_msg_name(RT_MSG_HELLO)) != 0) {
            reject(c, "'%.40s' before hello", type);
            return false;
        }
        return on_hello(co, c, m);
    }
    c->last_seen_ns = rt_now_ns();
    char err[RT_ERR_LEN];
    rt_msg t = rt_msg_check(m, RT_TO_COORD, err);
    if (t == RT_MSG_COUNT) {
        reject(c, "%s", err);
        return false;
    }
    RT_DEBUG("coord", "<- %s: %s", c->ag->key, type);
    struct bufferevent *bev = c->bev;
    coord_handlers[t](co, c, m);
    /* the handler may have closed the connection: only then is the bev gone */
    for (conn *k = co->conns; k; k = k->next)
        if (k == c && k->bev == bev)
            return true;
    return false;
}

static void on_read(struct bufferevent *bev, void *arg)
{
    conn *c = arg;
    coord *co = c->co;
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        rt_json *m = NULL;
        char err[RT_ERR_LEN];
        int r = rt_frame_pull_max(in, c->ag ? RT_FRAME_MAX : RT_HELLO_MAX, &m, err);
        if (r == 0)
            return;
        if (r < 0) {
            reject(c, "bad frame: %s", err);
            return;
        }
        bool open = dispatch(co, c, m);
        rt_json_free(m);
        if (!open)
            return;
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    conn *c = arg;
    if (what & BEV_EVENT_CONNECTED)
        return;
    char why[256];
    if (what & BEV_EVENT_ERROR) {
        unsigned long e = bufferevent_get_openssl_error(bev);
        if (e)
            rt_tls_describe(e, why, sizeof why);
        else
            snprintf(why, sizeof why, "connection error");
    } else {
        snprintf(why, sizeof why, "connection closed");
    }
    if (!c->ag) {
        c->co->rejected_connections++;
        RT_WARN("coord", "rejected connection from %s: %s", c->peer, why);
    }
    drop_connection(c, why);
}

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
    /* connections that have not registered yet are bounded, in all and per
     * address: a flood of strangers cannot exhaust the coordinator, and
     * registered agents (not counted) keep working */
    char from[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, from, sizeof from);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, from, sizeof from);
    int pending = 0, same = 0;
    for (conn *o = co->conns; o; o = o->next)
        if (!o->ag) {
            pending++;
            size_t fl = strlen(from);
            same += strncmp(o->peer, from, fl) == 0 && o->peer[fl] == ':';
        }
    if (pending >= PREAUTH_TOTAL || same >= PREAUTH_PER_ADDR) {
        co->rejected_connections++;
        if (co->rejected_connections % 100 == 1) /* not a log line per connection of a flood */
            RT_WARN("coord", "refused a connection from %s: %d connections without a hello (%d "
                             "from there; limits %d and %d)",
                    from, pending, same, PREAUTH_TOTAL, PREAUTH_PER_ADDR);
        evutil_closesocket(fd);
        return;
    }
    conn *c = calloc(1, sizeof *c);
    SSL *ssl = SSL_new(co->ssl);
    if (!c || !ssl) {
        free(c);
        SSL_free(ssl);
        evutil_closesocket(fd);
        return;
    }
    c->co = co;
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, host, sizeof host);
        port = ntohs(((struct sockaddr_in *)sa)->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof host);
        port = ntohs(((struct sockaddr_in6 *)sa)->sin6_port);
    }
    snprintf(c->peer, sizeof c->peer, "%s:%d", host, port);
    c->bev = bufferevent_openssl_socket_new(co->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                            BEV_OPT_CLOSE_ON_FREE);
    if (!c->bev) {
        free(c);
        evutil_closesocket(fd);
        return;
    }
    c->next = co->conns;
    co->conns = c;
    /* an absolute deadline for the hello: bytes trickling in do not extend it */
    c->hello_deadline_ns = rt_now_ns() + HELLO_TIMEOUT_S * 1000000000LL;
    bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
    /* before the hello, at most a hello's worth is read (then frames of up
     * to 1 MiB): reading stops until the frame is consumed */
    bufferevent_setwatermark(c->bev, EV_READ, 0, RT_HELLO_MAX + 8);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    RT_DEBUG("coord", "connection from %s", c->peer);
}

/* ---- the loop ------------------------------------------------------------------ */

static void status_line(coord *co)
{
    int up = 0, running = 0, queued = 0;
    for (sc_agent *a = co->S.agents; a; a = a->next)
        up += a->up;
    for (sc_job *j = co->S.jobs; j; j = j->next) {
        running += j->state == JOB_RUNNING || j->state == JOB_STARTING;
        queued += j->state == JOB_QUEUED || j->state == JOB_RESTARTING;
    }
    sd_notifyf(0, "STATUS=%d agents up, %d jobs running, %d queued", up, running, queued);
}

/* job_retention and agent_retention: old records out of the database and
 * long-gone agents out of memory, every tenth of the shorter retention
 * (between 1 s and an hour). */
static void prune(coord *co, int64_t now_ns)
{
    static int64_t last;
    const int64_t jr = co->cfg.job_retention_us, ar = co->cfg.agent_retention_us;
    int64_t every = (jr > 0 && (ar == 0 || jr < ar) ? jr : ar) / 10 * 1000;
    every = every < 1000000000LL ? 1000000000LL : every > 3600000000000LL ? 3600000000000LL : every;
    if ((jr == 0 && ar == 0) || now_ns - last < every)
        return;
    last = now_ns;
    const double wall = coord_now().wall;
    if (jr > 0) {
        int n = cdb_prune_jobs(co, wall - (double)jr / 1e6);
        if (n > 0)
            RT_INFO("coord", "deleted %d jobs that finished more than %.0f s ago (job_retention)",
                    n, (double)jr / 1e6);
    }
    char keys[64][SC_KEY_LEN];
    int n = ar > 0 ? sched_forget_agents(&co->S, wall - (double)ar / 1e6, keys, 64) : 0;
    for (int i = 0; i < n; i++) {
        cdb_forget_agent(co, keys[i]);
        RT_INFO("coord", "agent %s forgotten: down for more than %.0f s (agent_retention)", keys[i],
                (double)ar / 1e6);
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    coord *co = arg;
    (void)fd;
    (void)what;
    const int64_t now = rt_now_ns();
    for (conn *c = co->conns, *next; c; c = next) {
        next = c->next;
        if (c->revoked) {
            drop_connection(c, "its agent token was revoked");
        } else if (!c->ag && now > c->hello_deadline_ns) {
            reject(c, "no hello within %d s", HELLO_TIMEOUT_S);
        } else if (c->ag && now - c->last_seen_ns > co->cfg.heartbeat_timeout_us * 1000) {
            char why[128];
            snprintf(why, sizeof why, "no heartbeat for %.1f s",
                     (double)(now - c->last_seen_ns) / 1e9);
            drop_connection(c, why);
        }
    }
    sched_tick(&co->S, coord_now());
    coord_flush(co);
    prune(co, now);
    http_conn_tick(co);
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
    sc_config sc = {.prepare_timeout_us = cfg->prepare_timeout_us,
                    .reconcile_timeout_us = cfg->reconcile_timeout_us,
                    .default_max_restarts = (int)cfg->default_max_restarts,
                    .max_queued_per_user = (int)cfg->max_queued_per_user,
                    .default_queue_timeout_us = cfg->default_queue_timeout_us,
                    /* a minute, or job_retention when shorter: its record goes then */
                    .retire_after_us = cfg->job_retention_us > 0 && cfg->job_retention_us < 60000000
                                           ? cfg->job_retention_us
                                           : 60000000,
                    .random = rt_random_bytes};
    sched_init(&co->S, &sc);
    rt_status st = rt_token_load(cfg->token_file, co->token, err);
    if (st == RT_OK && (st = rt_token_load(cfg->admin_token_file, co->admin_token, err)) != RT_OK)
        rt_err_prefix(err, "[coordinator] admin_token_file (the API's admin token; `ringtrain "
                           "init-cluster` writes admin.token)");
    if (st == RT_OK && rt_token_equal(co->token, co->admin_token))
        st = rt_err(err, RT_ERR_INVALID, "the admin token must differ from the agents' token");
    if (st != RT_OK)
        goto fail;
    if (!(co->ssl = rt_tls_server_ctx(cfg->cert, cfg->key, err))) {
        st = RT_ERR_IO;
        goto fail;
    }
    if ((st = cseal_load(co, cfg->state_key_file, err)) != RT_OK ||
        (st = cdb_open(co, cfg->state_db, err)) != RT_OK)
        goto fail;
    if ((st = cdb_load(co, coord_now(), err)) != RT_OK || (st = cdb_token_load(co, err)) != RT_OK)
        goto fail;
    coord_flush(co); /* what loading decided (a stored job that no longer reads) */
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
    co->tick = event_new(co->base, -1, EV_PERSIST, on_tick, co);
    struct timeval tv = {0, TICK_US};
    event_add(co->tick, &tv);
    co->sigint = evsignal_new(co->base, SIGINT, on_signal, co);
    co->sigterm = evsignal_new(co->base, SIGTERM, on_signal, co);
    event_add(co->sigint, NULL);
    event_add(co->sigterm, NULL);
    rt_daemon_signals_ready(); /* a SIGTERM during start-up is taken here */
    signal(SIGPIPE, SIG_IGN);
    *out = co;
    return RT_OK;
fail:
    coord_destroy(co);
    return st;
}

int coord_run(coord *co)
{
    RT_INFO("coord", "ringtrain %s: listening for agents on %s, API on %s", RT_VERSION,
            co->cfg.listen, co->cfg.http_listen);
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
    auth_free(co);
    if (co->tick)
        event_free(co->tick);
    if (co->sigint)
        event_free(co->sigint);
    if (co->sigterm)
        event_free(co->sigterm);
    if (co->listener)
        evconnlistener_free(co->listener);
    while (co->conns) {
        conn *c = co->conns;
        co->conns = c->next;
        if (c->bev)
            bufferevent_free(c->bev);
        if (c->ag)
            c->ag->conn = NULL;
        free(c);
    }
    while (co->closing)
        closing_free(co->closing);
    if (co->base)
        event_base_free(co->base);
    sched_free(&co->S);
    cdb_close(co);
    OPENSSL_cleanse(co->seal_key, sizeof co->seal_key);
    if (co->ssl)
        SSL_CTX_free(co->ssl);
    free(co);
}
