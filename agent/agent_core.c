/* agent_core.c — the agent's link to the coordinator and its event loop.
 *
 * The agent connects over TLS (the coordinator's certificate must chain to
 * the cluster CA and name server_name), sends a hello with the cluster
 * token, its host id, slots, capabilities, the workers it is running and the
 * exits the coordinator has not heard of, then heartbeats.  When the link
 * drops it retries with exponential backoff (0.5 s doubling up to
 * reconnect_max); its workers keep running meanwhile.  Under systemd it
 * reports READY=1 at start, STATUS= lines, WATCHDOG=1 at half the watchdog
 * interval and STOPPING=1 on SIGTERM, when it stops its workers (SIGTERM,
 * then SIGKILL after kill_grace), reports their exits and leaves. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "agent.h"
#include "rt_addr.h"
#include "rt_daemon.h"
#include "rt_comm.h"
#include "rt_file.h"
#include "rt_hex.h"
#include "rt_log.h"
#include "rt_time.h"

#define CONNECT_TIMEOUT_S 10
#define TICK_US 200000

static void schedule_reconnect(agentd *ag, const char *why);
#define HELLO_ANSWER_S 10 /* a coordinator answers a hello at once */

/* STATUS= for systemctl status: the connection state (NULL: unchanged) and
 * the number of running workers, which on_tick keeps current. */
static void status(agentd *ag, const char *state)
{
    if (state)
        snprintf(ag->status_text, sizeof ag->status_text, "%s", state);
    ag->status_live = proc_live(ag);
    sd_notifyf(0, "STATUS=%s; %d worker%s running", ag->status_text, ag->status_live,
               ag->status_live == 1 ? "" : "s");
}

static void send_hello(agentd *ag)
{
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, RT_F_TYPE, rt_msg_name(RT_MSG_HELLO));
    rt_jw_kstr(&w, RT_F_TOKEN, ag->token);
    rt_jw_kstr(&w, RT_F_HOST_ID, ag->host_id);
    rt_jw_kstr(&w, RT_F_MACHINE, ag->machine);
    rt_jw_kstr(&w, RT_F_NAME, ag->name);
    rt_jw_kstr(&w, RT_F_HOSTNAME, ag->hostname);
    rt_jw_kint(&w, RT_F_SLOTS, ag->slots);
    rt_jw_kstr(&w, RT_F_ADDRESS, ag->data_addr);
    rt_jw_kint(&w, RT_F_PROTO, RT_PROTO_VERSION);
    rt_jw_kstr(&w, RT_F_VERSION, RT_VERSION);
    rt_jw_key(&w, RT_F_CAPS);
    rt_jw_raw(&w, ag->caps);
    rt_jw_key(&w, RT_F_RUNNING);
    proc_running_json(ag, &w);
    rt_jw_key(&w, RT_F_EXITED);
    agent_backlog_json(ag, &w, RT_HELLO_MAX - (64u << 10)); /* the hello must fit the limit */
    rt_jw_obj_end(&w);
    rt_frame_push(ag->bev, &w);
}

static void on_welcome(agentd *ag, const rt_json *m)
{
    int64_t hb = 2000;
    rt_json_get_int(m, RT_F_HEARTBEAT_MS, &hb);
    ag->heartbeat_ms = hb < 10 ? 10 : hb;
    ag->welcomed = true;
    agent_backlog_since(ag, ag->hello_ns); /* exits after the hello was written */
    ag->backoff_us = 0;
    ag->attempts = 0;
    struct timeval tv = {ag->heartbeat_ms / 1000, (ag->heartbeat_ms % 1000) * 1000};
    event_add(ag->heartbeat, &tv);
    RT_INFO("agent", "registered with the coordinator at %s:%d as %s", ag->coord_host,
            ag->coord_port, rt_json_str(rt_json_get(m, RT_F_AGENT), "?"));
    char st[300];
    snprintf(st, sizeof st, "connected to %s:%d", ag->coord_host, ag->coord_port);
    status(ag, st);
}

static void on_refused(agentd *ag, const rt_json *m)
{
    (void)ag;
    RT_ERROR("agent", "the coordinator refused this agent: %s",
             rt_json_str(rt_json_get(m, RT_F_REASON), "?"));
}

static void on_abort(agentd *ag, const rt_json *m)
{
    int64_t job = 0, att = 0;
    rt_json_get_int(m, RT_F_JOB, &job);
    rt_json_get_int(m, RT_F_ATTEMPT, &att);
    proc_abort(ag, job, att, rt_json_get_str(m, RT_F_REASON));
}

static void on_log_close(agentd *ag, const rt_json *m)
{
    int64_t req = 0;
    rt_json_get_int(m, RT_F_REQ, &req);
    logs_cancel(ag, req);
}

const agent_handler agent_handlers[RT_MSG_COUNT] = {
    [RT_MSG_WELCOME] = on_welcome,     [RT_MSG_ERROR] = on_refused,
    [RT_MSG_PREPARE] = proc_prepare,   [RT_MSG_START] = proc_start,
    [RT_MSG_ABORT] = on_abort,         [RT_MSG_LOG_OPEN] = logs_request,
    [RT_MSG_LOG_CLOSE] = on_log_close,
};

/* A frame from the coordinator; false when it breaks the protocol (the
 * connection is then dropped and made again). */
static bool dispatch(agentd *ag, const rt_json *m, char *err)
{
    rt_msg t = rt_msg_check(m, RT_TO_AGENT, err);
    if (t == RT_MSG_COUNT)
        return false;
    if (!ag->welcomed && t != RT_MSG_WELCOME && t != RT_MSG_ERROR) {
        RT_WARN("agent", "'%s' from the coordinator before welcome: ignored", rt_msg_name(t));
        return true;
    }
    RT_TRACE("agent", "<- %s", rt_msg_name(t));
    agent_handlers[t](ag, m);
    return true;
}

static void on_read(struct bufferevent *bev, void *arg)
{
    agentd *ag = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        rt_json *m = NULL;
        char err[RT_ERR_LEN];
        int r = rt_frame_pull(in, &m, err);
        if (r == 0)
            return;
        if (r < 0 || !dispatch(ag, m, err)) {
            rt_json_free(m);
            schedule_reconnect(ag, err);
            return;
        }
        rt_json_free(m);
        if (!ag->bev)
            return;
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    agentd *ag = arg;
    if (what & BEV_EVENT_CONNECTED) {
        ag->connected = true;
        bufferevent_set_timeouts(bev, NULL, NULL);
        if (!ag->cfg.data_address || !*ag->cfg.data_address) {
            /* the address the coordinator reaches us on is the one peers use */
            struct sockaddr_storage ss;
            socklen_t sl = sizeof ss;
            char ip[INET6_ADDRSTRLEN] = "127.0.0.1";
            if (getsockname(bufferevent_getfd(bev), (struct sockaddr *)&ss, &sl) == 0) {
                if (ss.ss_family == AF_INET)
                    inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, ip, sizeof ip);
                else if (ss.ss_family == AF_INET6)
                    inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, ip, sizeof ip);
            }
            snprintf(ag->data_addr, sizeof ag->data_addr, "%s", ip);
        }
        send_hello(ag);
        ag->hello_ns = rt_now_ns();
        return;
    }
    char why[700];
    unsigned long e = bufferevent_get_openssl_error(bev);
    int sock_err = EVUTIL_SOCKET_ERROR();
    if (e && !ERR_SYSTEM_ERROR(e) && ERR_GET_LIB(e) != 0) {
        char buf[256];
        rt_tls_describe(e, buf, sizeof buf);
        snprintf(why, sizeof why, "TLS: %s (is ca = the cluster CA, and server_name right?)", buf);
    } else if (e) { /* the socket failed under TLS: refused, reset, unreachable */
        rt_tls_describe(e, why, sizeof why);
    } else if (what & BEV_EVENT_TIMEOUT) {
        snprintf(why, sizeof why, "timed out connecting");
    } else if (what & BEV_EVENT_EOF) {
        snprintf(why, sizeof why, "the coordinator closed the connection");
    } else {
        snprintf(why, sizeof why, "%s", sock_err ? evutil_socket_error_to_string(sock_err)
                                                 : "connection failed");
    }
    if (ag->hello_ns && !ag->welcomed) { /* TLS was fine; the hello was not understood */
        char more[700];
        snprintf(more, sizeof more, "the server closed the connection instead of answering the "
                 "hello (%s): is coordinator = %s:%d the control port (listen, 7070 by default) "
                 "and not the HTTP API's (http_listen)?", why, ag->coord_host, ag->coord_port);
        snprintf(why, sizeof why, "%s", more);
    }
    schedule_reconnect(ag, why);
}

static void connect_now(evutil_socket_t fd, short what, void *arg)
{
    agentd *ag = arg;
    (void)fd;
    (void)what;
    if (ag->stopping)
        return;
    ag->attempts++;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", ag->coord_port);
    int g = getaddrinfo(ag->coord_host, port, &hints, &res);
    if (g != 0) {
        char why[300];
        snprintf(why, sizeof why, "cannot resolve %s: %s", ag->coord_host, gai_strerror(g));
        schedule_reconnect(ag, why);
        return;
    }
    SSL *ssl = rt_tls_client_ssl(ag->ssl, ag->server_name);
    ag->bev = bufferevent_openssl_socket_new(ag->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                             BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(ag->bev, on_read, NULL, on_event, ag);
    struct timeval tv = {CONNECT_TIMEOUT_S, 0};
    bufferevent_set_timeouts(ag->bev, &tv, &tv);
    bufferevent_setwatermark(ag->bev, EV_READ, 0, RT_FRAME_MAX + 8);
    bufferevent_enable(ag->bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(ag->bev, res->ai_addr, (int)res->ai_addrlen) != 0) {
        freeaddrinfo(res);
        schedule_reconnect(ag, "connect failed");
        return;
    }
    freeaddrinfo(res);
}

static void schedule_reconnect(agentd *ag, const char *why)
{
    if (ag->bev) {
        bufferevent_free(ag->bev);
        ag->bev = NULL;
    }
    bool was_up = ag->welcomed;
    ag->connected = ag->welcomed = false;
    ag->hello_ns = 0;
    event_del(ag->heartbeat);
    logs_drop_all(ag);
    if (ag->stopping)
        return;
    ag->backoff_us = ag->backoff_us ? ag->backoff_us * 2 : 500000;
    if (ag->backoff_us > ag->cfg.reconnect_max_us)
        ag->backoff_us = ag->cfg.reconnect_max_us;
    /* a little jitter, so a restarted coordinator is not hit by every agent
     * at once (from the system's random source: rand() unseeded would give
     * every agent the same sequence) */
    uint32_t jitter = 0;
    rt_random_bytes((uint8_t *)&jitter, sizeof jitter);
    int64_t us = ag->backoff_us - ag->backoff_us / 8 + (int64_t)(jitter % (uint32_t)(ag->backoff_us / 4 + 1));
    if (was_up || ag->attempts <= 1 || ag->attempts % 10 == 0)
        RT_WARN("agent", "lost the coordinator at %s:%d (%s); retrying in %.1f s", ag->coord_host,
                ag->coord_port, why, (double)us / 1e6);
    char st[400];
    snprintf(st, sizeof st, "reconnecting to %s:%d: %s", ag->coord_host, ag->coord_port, why);
    status(ag, st);
    struct timeval tv = {us / 1000000, us % 1000000};
    event_add(ag->reconnect, &tv);
}

static void on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
    agentd *ag = arg;
    (void)fd;
    (void)what;
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    RT_TRACE("agent", "heartbeat: %d workers", proc_live(ag));
    rt_jw_kstr(&w, RT_F_TYPE, rt_msg_name(RT_MSG_HEARTBEAT));
    rt_jw_kint(&w, RT_F_WORKERS, proc_live(ag));
    /* what the ranks use, at most once a second */
    if (proc_live(ag) > 0 && rt_now_ns() - ag->usage_ns >= 1000000000LL) {
        ag->usage_ns = rt_now_ns();
        usage_json(ag, &w);
    }
    rt_jw_obj_end(&w);
    agent_send(ag, &w);
    struct timeval tv = {ag->heartbeat_ms / 1000, (ag->heartbeat_ms % 1000) * 1000};
    event_add(ag->heartbeat, &tv);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    agentd *ag = arg;
    (void)fd;
    (void)what;
    proc_tick(ag);
    cg_tick(ag);
    disk_tick(ag);
    if (rt_now_ns() - ag->leftovers_ns > 1000000000LL) {
        ag->leftovers_ns = rt_now_ns();
        proc_kill_leftovers(ag);
    }
    logs_sweep(ag);
    logs_pump(ag);
    /* a server that takes the TLS handshake but never answers the hello:
     * most likely the HTTP API's port, not the control channel's */
    if (ag->connected && !ag->welcomed && ag->hello_ns &&
        rt_now_ns() - ag->hello_ns > HELLO_ANSWER_S * 1000000000LL) {
        char why[400];
        snprintf(why, sizeof why, "no answer to the hello within %d s: is coordinator = %s:%d the "
                 "control port (listen, 7070 by default) and not the HTTP API's (http_listen)?",
                 HELLO_ANSWER_S, ag->coord_host, ag->coord_port);
        schedule_reconnect(ag, why);
    }
    if (proc_live(ag) != ag->status_live)
        status(ag, NULL);
    static int64_t last_wd;
    uint64_t wd = 0;
    int64_t now = rt_now_ns();
    if (sd_watchdog_enabled(0, &wd) > 0 && (now - last_wd) / 1000 > (int64_t)wd / 2) {
        sd_notify(0, "WATCHDOG=1");
        last_wd = now;
    }
    /* stopping: once every worker's exit is sent (or the deadline passed),
     * say goodbye and leave when that is written (at most 2 s later) */
    if (ag->stopping && !ag->bye_deadline_ns &&
        (proc_unreported(ag) == 0 || now > ag->stop_deadline_ns)) {
        rt_jw w;
        rt_jw_init(&w);
        rt_jw_obj(&w);
        rt_jw_kstr(&w, RT_F_TYPE, rt_msg_name(RT_MSG_BYE));
        rt_jw_kstr(&w, RT_F_REASON, "the agent is stopping");
        rt_jw_obj_end(&w);
        agent_send(ag, &w);
        ag->bye_deadline_ns = now + 2000000000LL;
    }
    if (ag->bye_deadline_ns &&
        (!ag->bev || evbuffer_get_length(bufferevent_get_output(ag->bev)) == 0 ||
         now > ag->bye_deadline_ns))
        event_base_loopexit(ag->base, NULL);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    agentd *ag = arg;
    (void)what;
    if (sig == SIGCHLD) {
        proc_reap(ag);
        return;
    }
    if (ag->stopping)
        return;
    RT_INFO("agent", "signal %d: stopping %d workers", (int)sig, proc_live(ag));
    sd_notify(0, "STOPPING=1");
    ag->stopping = true;
    ag->stop_deadline_ns = rt_now_ns() + 2 * ag->cfg.kill_grace_us * 1000 + 2000000000LL;
    proc_stop_all(ag);
}

/* A folder the agent writes into must exist (it is made) and be writable
 * by this user: otherwise the agent would report itself up and then fail
 * every rank it is given. */
static rt_status check_writable(const char *key, const char *dir, char *err)
{
    rt_status st = rt_mkdirs(dir, err);
    if (st != RT_OK)
        return rt_err(err, st, "[agent] %s %s cannot be created: %s", key, dir, err);
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.ringtrain-write-test-%d", dir, (int)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return rt_err(err, RT_ERR_IO, "[agent] %s %s is not writable by this user (uid %d): %s", key,
                      dir, (int)getuid(), strerror(errno));
    close(fd);
    unlink(probe);
    return RT_OK;
}

rt_status agent_create(const rt_agent_cfg *cfg, agentd **out, char *err)
{
    *out = NULL;
    agentd *ag = calloc(1, sizeof *ag);
    if (!ag)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    ag->cfg = *cfg;
    ag->uid_claim_fd = -1;
    /* orphans of the ranks come back to the agent (proc_kill_leftovers) */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    cg_init(ag); /* and, where it can, each rank runs in a cgroup of its own */
    /* a rank may not read this process's memory or environment */
    prctl(PR_SET_DUMPABLE, 0);
    rt_status st = rt_token_load(cfg->token_file, ag->token, err);
    if (st == RT_OK && (st = rt_addr_parse(cfg->coordinator, false, ag->coord_host,
                                           sizeof ag->coord_host, &ag->coord_port, err)) != RT_OK)
        rt_err_prefix(err, "[agent] coordinator");
    if (st == RT_OK && !(ag->ssl = rt_tls_client_ctx(cfg->ca, err)))
        st = RT_ERR_IO;
    if (st == RT_OK)
        st = check_writable("work_dir", cfg->work_dir, err);
    if (st == RT_OK)
        st = check_writable("log_dir", cfg->log_dir, err);
    if (st == RT_OK)
        st = ident_init(ag, err); /* whom jobs run as */
    if (st == RT_OK)
        clean_stale_work(ag); /* what jobs left before a restart */
    if (st != RT_OK) {
        agent_destroy(ag);
        return st;
    }
    snprintf(ag->server_name, sizeof ag->server_name, "%s",
             cfg->server_name && *cfg->server_name ? cfg->server_name : ag->coord_host);
    gethostname(ag->hostname, sizeof ag->hostname - 1);
    if (cfg->host_id && *cfg->host_id)
        snprintf(ag->host_id, sizeof ag->host_id, "%s", cfg->host_id);
    else
        rt_host_id(ag->host_id, sizeof ag->host_id);
    rt_machine_id(ag->machine, sizeof ag->machine);
    snprintf(ag->name, sizeof ag->name, "%s", cfg->name && *cfg->name ? cfg->name : ag->hostname);
    if (cfg->data_address && *cfg->data_address)
        snprintf(ag->data_addr, sizeof ag->data_addr, "%s", cfg->data_address);
    /* this program's folder ("." when unknown): the worker program and the
     * Run API's library are found beside it */
    char self[900];
    ssize_t sn = readlink("/proc/self/exe", self, sizeof self - 1);
    self[sn > 0 ? sn : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(self, sizeof self, ".");
    /* the worker program: configured, or beside this one */
    if (cfg->worker && *cfg->worker)
        snprintf(ag->worker_exe, sizeof ag->worker_exe, "%s", cfg->worker);
    else
        snprintf(ag->worker_exe, sizeof ag->worker_exe, "%s/ringtrain-worker", self);
    /* the Run API's library of this ringtrain, for ranks that load it (the
     * Python binding): installed beside it, or in its build folder */
    const char *rel[] = {"/../" RT_INSTALL_LIBDIR "/libringtrain.so.0",
                         "/../transport/libringtrain.so.0"};
    for (size_t i = 0; slash && i < RT_ARRAY_LEN(rel) && !ag->lib_path[0]; i++) {
        char cand[1100];
        snprintf(cand, sizeof cand, "%s%s", self, rel[i]);
        char *real = realpath(cand, NULL);
        if (real && access(real, R_OK) == 0)
            snprintf(ag->lib_path, sizeof ag->lib_path, "%s", real);
        free(real);
    }
    agent_probe(ag);
    ag->slots = cfg->slots > 0 ? (int)cfg->slots : (ag->gpus > 0 ? ag->gpus : 1);
    ag->base = event_base_new();
    ag->reconnect = evtimer_new(ag->base, connect_now, ag);
    ag->heartbeat = evtimer_new(ag->base, on_heartbeat, ag);
    ag->tick = event_new(ag->base, -1, EV_PERSIST, on_tick, ag);
    ag->sigterm = evsignal_new(ag->base, SIGTERM, on_signal, ag);
    ag->sigint = evsignal_new(ag->base, SIGINT, on_signal, ag);
    ag->sigchld = evsignal_new(ag->base, SIGCHLD, on_signal, ag);
    struct timeval tv = {0, TICK_US};
    event_add(ag->tick, &tv);
    event_add(ag->sigterm, NULL);
    event_add(ag->sigint, NULL);
    event_add(ag->sigchld, NULL);
    rt_daemon_signals_ready(); /* a SIGTERM during start-up is taken here */
    signal(SIGPIPE, SIG_IGN);
    RT_INFO("agent", "ringtrain %s agent %s/%s: %d slot%s, %d GPU%s, coordinator %s:%d; node: %s",
            RT_VERSION, ag->host_id, ag->name, ag->slots, ag->slots == 1 ? "" : "s", ag->gpus,
            ag->gpus == 1 ? "" : "s", ag->coord_host, ag->coord_port, ag->caps);
    *out = ag;
    return RT_OK;
}

int agent_run(agentd *ag)
{
    sd_notify(0, "READY=1");
    status(ag, "connecting");
    connect_now(-1, 0, ag);
    event_base_dispatch(ag->base);
    return 0;
}

void agent_destroy(agentd *ag)
{
    if (!ag)
        return;
    logs_drop_all(ag);
    while (ag->workers) {
        worker *w = ag->workers;
        ag->workers = w->next;
        worker_free(w);
    }
    struct event *evs[] = {ag->reconnect, ag->heartbeat, ag->tick,
                           ag->sigterm,   ag->sigint,    ag->sigchld};
    for (size_t i = 0; i < RT_ARRAY_LEN(evs); i++)
        if (evs[i])
            event_free(evs[i]);
    if (ag->bev)
        bufferevent_free(ag->bev);
    if (ag->base)
        event_base_free(ag->base);
    if (ag->ssl)
        SSL_CTX_free(ag->ssl);
    agent_backlog_free(ag);
    disk_free_all(ag);
    if (ag->uid_claim_fd >= 0)
        close(ag->uid_claim_fd);
    free(ag->caps);
    free(ag);
}
