/* coord_http.c — the HTTP API (libevent evhttp over TLS, bearer token):
 *
 *   GET  /v1/nodes                 agents, slots, capabilities
 *   GET  /v1/jobs                  every job
 *   POST /v1/jobs                  submit (JSON body; 201 {"id": N})
 *   GET  /v1/jobs/ID               status, attempts, placement, events, metrics
 *   POST /v1/jobs/ID/cancel
 *   GET  /v1/jobs/ID/logs?rank=R|all&follow=1   output, streamed from the agents
 *   GET  /metrics                  Prometheus text format
 *   GET  /                         the dashboard (asks for the token itself)
 *
 * Errors are JSON {"error": "..."} with a fitting status code. */
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "rt_addr.h"
#include "dashboard.h"
#include "rt_log.h"

struct log_stream {
    uint64_t id;
    coord *co;
    struct evhttp_request *req;
    int pending;          /* ranks still streaming */
    char agents[64][200]; /* agents asked (for cancel and loss) */
    int nagents;
    log_stream *next;
};

static struct bufferevent *make_bev(struct event_base *base, void *arg)
{
    coord *co = arg;
    SSL *ssl = SSL_new(co->ssl);
    return ssl ? bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                BEV_OPT_CLOSE_ON_FREE)
               : NULL;
}

static void reply_text(struct evhttp_request *req, int code, const char *type, const char *body)
{
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, body, strlen(body));
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
    evhttp_send_reply(req, code, NULL, b);
    evbuffer_free(b);
}

static void reply_json(struct evhttp_request *req, int code, char *json)
{
    reply_text(req, code, "application/json", json ? json : "{\"error\":\"out of memory\"}");
    free(json);
}

static void reply_error(struct evhttp_request *req, int code, const char *msg)
{
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, "error", msg);
    rt_jw_obj_end(&w);
    reply_json(req, code, rt_jw_take(&w, NULL));
}

static bool authorized(coord *co, struct evhttp_request *req)
{
    const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    return h && strncmp(h, "Bearer ", 7) == 0 && rt_token_equal(h + 7, co->token);
}

static void nodes(coord *co, struct evhttp_request *req)
{
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_key(&w, "nodes");
    rt_jw_arr(&w);
    for (agent *a = co->agents; a; a = a->next) {
        if (!a->authed)
            continue;
        rt_jw_obj(&w);
        rt_jw_kstr(&w, "agent", a->key);
        rt_jw_kstr(&w, "host_id", a->host_id);
        rt_jw_kstr(&w, "name", a->name);
        rt_jw_kstr(&w, "hostname", a->hostname);
        rt_jw_kstr(&w, "address", a->addr);
        rt_jw_kstr(&w, "state", a->up ? "up" : "down");
        rt_jw_kint(&w, "slots", a->slots);
        rt_jw_kint(&w, "used", a->used);
        rt_jw_kbool(&w, "cuda", a->cuda);
        rt_jw_kbool(&w, "nccl", a->nccl);
        rt_jw_kbool(&w, "rdma", a->rdma);
        rt_jw_kint(&w, "gpus", a->gpus);
        rt_jw_obj_end(&w);
    }
    rt_jw_arr_end(&w);
    rt_jw_obj_end(&w);
    reply_json(req, 200, rt_jw_take(&w, NULL));
}

static void metrics(coord *co, struct evhttp_request *req)
{
    int up = 0, known = 0, slots = 0, used = 0;
    for (agent *a = co->agents; a; a = a->next)
        if (a->authed) {
            known++;
            if (a->up) {
                up++;
                slots += a->slots;
                used += a->used;
            }
        }
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b,
                        "# HELP ringtrain_agents_up Agents connected to the coordinator.\n"
                        "# TYPE ringtrain_agents_up gauge\nringtrain_agents_up %d\n"
                        "# HELP ringtrain_agents_known Agents ever registered.\n"
                        "# TYPE ringtrain_agents_known gauge\nringtrain_agents_known %d\n"
                        "# HELP ringtrain_slots Slots of connected agents.\n"
                        "# TYPE ringtrain_slots gauge\nringtrain_slots{state=\"free\"} %d\n"
                        "ringtrain_slots{state=\"used\"} %d\n",
                        up, known, slots - used, used);
    evbuffer_add_printf(b, "# HELP ringtrain_jobs Jobs by state.\n# TYPE ringtrain_jobs gauge\n");
    sqlite3_stmt *st = NULL;
    int counts[JOB_CANCELLED + 1] = {0};
    if (sqlite3_prepare_v2(co->db, "SELECT state, COUNT(*) FROM jobs GROUP BY state", -1, &st,
                           NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW)
            for (int s = 0; s <= JOB_CANCELLED; s++)
                if (strcmp((const char *)sqlite3_column_text(st, 0), job_state_name(s)) == 0)
                    counts[s] = sqlite3_column_int(st, 1);
        sqlite3_finalize(st);
    }
    for (int s = 0; s <= JOB_CANCELLED; s++)
        evbuffer_add_printf(b, "ringtrain_jobs{state=\"%s\"} %d\n", job_state_name(s), counts[s]);
    evbuffer_add_printf(b, "# HELP ringtrain_job_steps_per_second Training steps per second.\n"
                           "# TYPE ringtrain_job_steps_per_second gauge\n");
    for (job *j = co->jobs; j; j = j->next)
        if (j->state == JOB_RUNNING)
            evbuffer_add_printf(b, "ringtrain_job_steps_per_second{job=\"%lld\"} %.3f\n",
                                (long long)j->id, j->steps_per_s);
    evbuffer_add_printf(b,
                        "# HELP ringtrain_rejected_connections_total Control connections "
                        "refused (TLS, token, frames).\n"
                        "# TYPE ringtrain_rejected_connections_total counter\n"
                        "ringtrain_rejected_connections_total %lld\n",
                        (long long)co->rejected_connections);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4");
    evhttp_send_reply(req, 200, NULL, b);
    evbuffer_free(b);
}

/* ---- log streams --------------------------------------------------------------- */

static void stream_free(coord *co, log_stream *s)
{
    for (log_stream **p = &co->streams; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    free(s);
}

static void stream_closed(struct evhttp_connection *conn, void *arg)
{
    log_stream *s = arg;
    coord *co = s->co;
    (void)conn;
    for (int i = 0; i < s->nagents; i++) {
        agent *a = coord_agent_by_key(co, s->agents[i]);
        if (!a || !a->up)
            continue;
        rt_jw w;
        rt_jw_init(&w);
        rt_jw_obj(&w);
        rt_jw_kstr(&w, "type", "logs_cancel");
        rt_jw_kint(&w, "req", (int64_t)s->id);
        rt_jw_obj_end(&w);
        coord_send(a, &w);
    }
    stream_free(co, s);
}

static void stream_done(log_stream *s)
{
    evhttp_connection_set_closecb(evhttp_request_get_connection(s->req), NULL, NULL);
    evhttp_send_reply_end(s->req);
    stream_free(s->co, s);
}

void http_on_logs(coord *co, agent *a, const rt_json *m)
{
    int64_t id;
    if (!rt_json_get_int(m, "req", &id))
        return;
    for (log_stream *s = co->streams; s; s = s->next) {
        if (s->id != (uint64_t)id)
            continue;
        const char *data = rt_json_get_str(m, "data");
        const char *error = rt_json_get_str(m, "error");
        struct evbuffer *b = evbuffer_new();
        if (data)
            evbuffer_add(b, data, strlen(data));
        if (error)
            evbuffer_add_printf(b, "[agent %s: %s]\n", a->key, error);
        if (evbuffer_get_length(b))
            evhttp_send_reply_chunk(s->req, b);
        evbuffer_free(b);
        if (rt_json_bool(rt_json_get(m, "eof"), false) && --s->pending == 0)
            stream_done(s);
        return;
    }
}

void http_on_agent_gone(coord *co, agent *a)
{
    for (log_stream *s = co->streams, *next; s; s = next) {
        next = s->next;
        for (int i = 0; i < s->nagents; i++)
            if (strcmp(s->agents[i], a->key) == 0) {
                struct evbuffer *b = evbuffer_new();
                evbuffer_add_printf(b, "[agent %s went away: its log stream ended]\n", a->key);
                evhttp_send_reply_chunk(s->req, b);
                evbuffer_free(b);
                s->pending = 0;
                stream_done(s);
                break;
            }
    }
}

static void logs(coord *co, struct evhttp_request *req, int64_t id, const char *query)
{
    struct evkeyvalq q;
    evhttp_parse_query_str(query ? query : "", &q);
    const char *rank_s = evhttp_find_header(&q, "rank");
    bool follow = evhttp_find_header(&q, "follow") && strcmp(evhttp_find_header(&q, "follow"), "0");
    long want = rank_s && strcmp(rank_s, "all") != 0 ? strtol(rank_s, NULL, 10) : -1;
    bool all = !rank_s || strcmp(rank_s, "all") == 0;
    evhttp_clear_headers(&q);
    /* placement of the latest attempt, from the database: finished jobs too */
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(co->db,
                       "SELECT p.rank, p.agent, j.attempt FROM placement p JOIN jobs j ON "
                       "j.id=p.job_id AND j.attempt=p.attempt WHERE p.job_id=? ORDER BY p.rank",
                       -1, &st, NULL);
    sqlite3_bind_int64(st, 1, id);
    log_stream *s = calloc(1, sizeof *s);
    s->id = ++co->next_stream_id;
    s->co = co;
    s->req = req;
    int asked = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int r = sqlite3_column_int(st, 0);
        const char *key = (const char *)sqlite3_column_text(st, 1);
        int64_t attempt = sqlite3_column_int64(st, 2);
        if (!all && r != want)
            continue;
        agent *a = coord_agent_by_key(co, key);
        if (!a || !a->up)
            continue;
        rt_jw w;
        rt_jw_init(&w);
        rt_jw_obj(&w);
        rt_jw_kstr(&w, "type", "logs");
        rt_jw_kint(&w, "req", (int64_t)s->id);
        rt_jw_kint(&w, "job", id);
        rt_jw_kint(&w, "attempt", attempt);
        rt_jw_kint(&w, "rank", r);
        rt_jw_kbool(&w, "follow", follow);
        rt_jw_kbool(&w, "prefix", all);
        rt_jw_obj_end(&w);
        if (coord_send(a, &w) != RT_OK)
            continue;
        asked++;
        bool known = false;
        for (int i = 0; i < s->nagents && !known; i++)
            known = strcmp(s->agents[i], key) == 0;
        if (!known && s->nagents < 64)
            snprintf(s->agents[s->nagents++], sizeof s->agents[0], "%s", key);
    }
    sqlite3_finalize(st);
    if (asked == 0) {
        free(s);
        reply_error(req, 404, all ? "no agent holding this job's logs is connected"
                                  : "no connected agent holds that rank's logs");
        return;
    }
    s->pending = asked;
    s->next = co->streams;
    co->streams = s;
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; charset=utf-8");
    evhttp_send_reply_start(req, 200, "OK");
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), stream_closed, s);
}

/* ---- routing ------------------------------------------------------------------- */

static void handle(struct evhttp_request *req, void *arg)
{
    coord *co = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = evhttp_uri_get_path(uri);
    enum evhttp_cmd_type method = evhttp_request_get_command(req);
    if (!path)
        path = "/";
    if (strcmp(path, "/") == 0 && method == EVHTTP_REQ_GET) {
        reply_text(req, 200, "text/html; charset=utf-8", RT_DASHBOARD_HTML);
        return;
    }
    if (!authorized(co, req)) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer");
        reply_error(req, 401, "missing or wrong bearer token");
        return;
    }
    if (strcmp(path, "/metrics") == 0 && method == EVHTTP_REQ_GET) {
        metrics(co, req);
        return;
    }
    if (strcmp(path, "/v1/nodes") == 0 && method == EVHTTP_REQ_GET) {
        nodes(co, req);
        return;
    }
    if (strcmp(path, "/v1/jobs") == 0) {
        if (method == EVHTTP_REQ_GET) {
            reply_json(req, 200, cdb_job_list(co));
        } else if (method == EVHTTP_REQ_POST) {
            struct evbuffer *in = evhttp_request_get_input_buffer(req);
            size_t len = evbuffer_get_length(in);
            char *body = malloc(len + 1);
            evbuffer_copyout(in, body, len);
            body[len] = '\0';
            int64_t id = 0;
            char err[RT_ERR_LEN];
            rt_status st = sched_submit(co, body, len, &id, err);
            free(body);
            if (st != RT_OK) {
                reply_error(req, st == RT_ERR_INVALID ? 400 : 500, err);
                return;
            }
            char out[64];
            snprintf(out, sizeof out, "{\"id\":%lld}", (long long)id);
            reply_text(req, 201, "application/json", out);
        } else {
            reply_error(req, 405, "use GET or POST on /v1/jobs");
        }
        return;
    }
    long long id;
    int n = 0;
    char rest[32] = "";
    if (sscanf(path, "/v1/jobs/%lld%n", &id, &n) == 1 && id > 0) {
        snprintf(rest, sizeof rest, "%s", path + n);
        if (rest[0] == '\0' && method == EVHTTP_REQ_GET) {
            char *doc = cdb_job_detail(co, id);
            char msg[64];
            snprintf(msg, sizeof msg, "job %lld not found", id);
            if (doc)
                reply_json(req, 200, doc);
            else
                reply_error(req, 404, msg);
            return;
        }
        if (strcmp(rest, "/cancel") == 0 && method == EVHTTP_REQ_POST) {
            char err[RT_ERR_LEN];
            rt_status st = sched_cancel(co, id, err);
            if (st == RT_OK)
                reply_text(req, 200, "application/json", "{\"cancelled\":true}");
            else
                reply_error(req, st == RT_ERR_NOTFOUND ? 404 : 409, err);
            return;
        }
        if (strcmp(rest, "/logs") == 0 && method == EVHTTP_REQ_GET) {
            logs(co, req, id, evhttp_uri_get_query(uri));
            return;
        }
    }
    reply_error(req, 404, "no such endpoint");
}

rt_status http_start(coord *co, char *err)
{
    co->http = evhttp_new(co->base);
    if (!co->http)
        return rt_err(err, RT_ERR_NOMEM, "evhttp_new failed");
    evhttp_set_bevcb(co->http, make_bev, co);
    evhttp_set_gencb(co->http, handle, co);
    evhttp_set_max_body_size(co->http, RT_FRAME_MAX);
    evhttp_set_max_headers_size(co->http, 16384);
    evhttp_set_timeout(co->http, 60);
    evhttp_set_allowed_methods(co->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
    char host[256];
    int port = 0;
    if (rt_addr_parse(co->cfg.http_listen, true, host, sizeof host, &port, err) != RT_OK) {
        rt_err_prefix(err, "[coordinator] http_listen");
        return RT_ERR_INVALID;
    }
    if (evhttp_bind_socket(co->http, host, (ev_uint16_t)port) != 0)
        return rt_err(err, RT_ERR_IO, "cannot listen on %s for the API: %m", co->cfg.http_listen);
    return RT_OK;
}

void http_stop(coord *co)
{
    while (co->streams)
        stream_free(co, co->streams);
    if (co->http)
        evhttp_free(co->http);
    co->http = NULL;
}
