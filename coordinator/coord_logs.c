/* coord_logs.c — GET /v1/jobs/ID/logs: a rank's output (or every rank's,
 * line by line), streamed from the agents that hold it (log_open /
 * log_data / log_close, docs/protocol.md) into the HTTP reply — as text
 * (every rank's lines led by "[R] ", what a person reads; the dashboard's)
 * or, with format=ndjson, one JSON object per chunk whose rank is a field
 * (the CLI's: it counts each rank's lines from the field, never from the
 * text, so that a resumed stream skips exactly what it has) —
 * following until the ranks have exited when asked; a follower that stops
 * reading is cut off past a backlog limit (the agents told to stop) and
 * resumes with skip.  The routing is coord_http.c's. */
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "coord.h"
#include "rt_log.h"

struct log_stream {
    uint64_t id;
    coord *co;
    struct evhttp_request *req;
    int pending;                /* ranks still streaming */
    bool all;                   /* every rank: whole lines, each led by "[R] " as text */
    bool ndjson;                /* one JSON object per chunk: {"rank", "data"} or an error */
    char (*agents)[SC_KEY_LEN]; /* agents asked (for cancel, loss, and who may write) */
    int nagents, cap;
    log_stream *next;
};

/* When a client goes away during a stream, evhttp detaches the request from
 * its connection and leaves it to us (libevent: a request whose reply the
 * user has not finished is not freed with the connection): ending it frees
 * it.  A request still attached belongs to its connection. */
static void stream_release_req(log_stream *s)
{
    struct evhttp_connection *evc = evhttp_request_get_connection(s->req);
    if (!evc)
        evhttp_send_reply_end(s->req); /* frees a detached request */
    else
        evhttp_connection_set_closecb(evc, NULL, NULL);
    s->req = NULL;
}

static void stream_free(coord *co, log_stream *s)
{
    for (log_stream **p = &co->streams; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    free(s->agents);
    free(s);
}

static void stream_closed(struct evhttp_connection *conn, void *arg)
{
    log_stream *s = arg;
    coord *co = s->co;
    (void)conn;
    for (int i = 0; i < s->nagents; i++) {
        sc_agent *a = sched_agent(&co->S, s->agents[i]);
        if (!a || !a->up)
            continue;
        rt_jw w;
        rt_jw_init(&w);
        rt_jw_obj(&w);
        rt_jw_kstr(&w, RT_F_TYPE, rt_msg_name(RT_MSG_LOG_CLOSE));
        rt_jw_kint(&w, RT_F_REQ, (int64_t)s->id);
        rt_jw_obj_end(&w);
        coord_send(co, a, &w);
    }
    stream_release_req(s);
    stream_free(co, s);
}

static void stream_done(log_stream *s)
{
    http_conn_served(s->req, false);
    evhttp_connection_set_closecb(evhttp_request_get_connection(s->req), NULL, NULL);
    evhttp_send_reply_end(s->req);
    stream_free(s->co, s);
}

/* A client that stops reading a stream (a follower piped into a paused
 * pager, or a hostile one) would have the coordinator hold the job's output
 * for as long as it runs: evhttp queues every chunk.  Past this much unsent
 * the stream is cut — the agents told to stop, the connection closed; the
 * CLI reconnects and resumes from what it has (skip=), losing nothing. */
#define LOG_BACKLOG_MAX (4u << 20)

static size_t stream_backlog(const log_stream *s)
{
    struct evhttp_connection *evc = evhttp_request_get_connection(s->req);
    struct bufferevent *bev = evc ? evhttp_connection_get_bufferevent(evc) : NULL;
    return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

/* An NDJSON object w has written, as one line of the reply (w is taken). */
static void put_line(struct evbuffer *b, rt_jw *w)
{
    size_t n = 0;
    char *t = rt_jw_take(w, &n);
    if (t) {
        evbuffer_add(b, t, n);
        evbuffer_add(b, "\n", 1);
    }
    free(t);
}

/* A rank's output into the reply: text (every rank's lines led by "[R] "),
 * or an NDJSON object with the rank as a field. */
static void put_data(const log_stream *s, struct evbuffer *b, int64_t rank, const char *data)
{
    if (s->ndjson) {
        rt_jw w;
        rt_jw_init(&w);
        rt_jw_obj(&w);
        rt_jw_kint(&w, RT_F_RANK, rank);
        rt_jw_kstr(&w, RT_F_DATA, data);
        rt_jw_obj_end(&w);
        put_line(b, &w);
        return;
    }
    if (!s->all) {
        evbuffer_add(b, data, strlen(data));
        return;
    }
    for (const char *p = data; *p;) { /* whole lines (log_open's lines) */
        size_t n = strcspn(p, "\n");
        evbuffer_add_printf(b, "[%lld] ", (long long)rank);
        evbuffer_add(b, p, n);
        evbuffer_add(b, "\n", 1);
        p += n + (p[n] == '\n');
    }
}

/* What an agent or the coordinator says about a stream: a line of its own
 * in text, an object without a rank in NDJSON (never a rank's output). */
static void put_error(const log_stream *s, struct evbuffer *b, const char *agent, const char *error)
{
    if (!s->ndjson) {
        evbuffer_add_printf(b, "[agent %s: %s]\n", agent, error);
        return;
    }
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, RT_F_AGENT, agent);
    rt_jw_kstr(&w, RT_F_ERROR, error);
    rt_jw_obj_end(&w);
    put_line(b, &w);
}

void logs_on_agent_data(coord *co, conn *c, const rt_json *m)
{
    int64_t id = 0;
    rt_json_get_int(m, RT_F_REQ, &id);
    for (log_stream *s = co->streams; s; s = s->next) {
        if (s->id != (uint64_t)id)
            continue;
        /* only an agent the stream was asked of may write into it */
        bool asked = false;
        for (int i = 0; i < s->nagents && !asked; i++)
            asked = strcmp(s->agents[i], c->ag->key) == 0;
        if (!asked) {
            RT_WARN("coord",
                    "agent %s sent output for log stream %lld, which it was not asked "
                    "for: dropped",
                    c->ag->key, (long long)id);
            return;
        }
        size_t backlog = stream_backlog(s);
        if (backlog > LOG_BACKLOG_MAX) {
            struct evhttp_connection *evc = evhttp_request_get_connection(s->req);
            RT_WARN("coord",
                    "log stream %llu: its client has not read %zu KiB of it: closed (a "
                    "follower resumes where it was)",
                    (unsigned long long)s->id, backlog >> 10);
            stream_closed(evc, s); /* the agents stop; frees s, leaves the request to evc */
            evhttp_connection_free(evc);
            return;
        }
        const char *data = rt_json_get_str(m, RT_F_DATA);
        const char *error = rt_json_get_str(m, RT_F_ERROR);
        int64_t rank = -1;
        rt_json_get_int(m, RT_F_RANK, &rank);
        struct evbuffer *b = evbuffer_new();
        if (data && *data)
            put_data(s, b, rank, data);
        if (error)
            put_error(s, b, c->ag->key, error);
        if (evbuffer_get_length(b))
            evhttp_send_reply_chunk(s->req, b);
        evbuffer_free(b);
        if (rt_json_bool(rt_json_get(m, RT_F_EOF), false) && --s->pending == 0)
            stream_done(s);
        return;
    }
}

void logs_on_agent_gone(coord *co, const sc_agent *a)
{
    for (log_stream *s = co->streams, *next; s; s = next) {
        next = s->next;
        for (int i = 0; i < s->nagents; i++)
            if (strcmp(s->agents[i], a->key) == 0) {
                struct evbuffer *b = evbuffer_new();
                put_error(s, b, a->key, "went away: its log stream ended");
                evhttp_send_reply_chunk(s->req, b);
                evbuffer_free(b);
                s->pending = 0;
                stream_done(s);
                break;
            }
    }
}

typedef struct log_ask {
    coord *co;
    log_stream *s;
    int64_t job;
    bool follow, all;
    int asked, ranks;
    const char *skip; /* "R:N,R:N" (rank=all) or "N" (one rank), or NULL */
} log_ask;

/* What a reconnecting follower already has of rank r: lines with rank=all,
 * bytes of a single rank. */
static int64_t skip_of(const log_ask *q, int rank)
{
    if (!q->skip)
        return 0;
    if (!q->all)
        return strtoll(q->skip, NULL, 10);
    for (const char *p = q->skip; *p;) {
        char *e;
        long r = strtol(p, &e, 10);
        if (*e != ':')
            return 0;
        long long n = strtoll(e + 1, &e, 10);
        if (r == rank)
            return n > 0 ? n : 0;
        p = *e == ',' ? e + 1 : e;
        if (!*e)
            break;
    }
    return 0;
}

static void ask_rank(void *user, int rank, const char *key, int64_t attempt)
{
    log_ask *q = user;
    q->ranks++;
    sc_agent *a = sched_agent(&q->co->S, key);
    if (!a || !a->up)
        return;
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, RT_F_TYPE, rt_msg_name(RT_MSG_LOG_OPEN));
    rt_jw_kint(&w, RT_F_REQ, (int64_t)q->s->id);
    rt_jw_kint(&w, RT_F_JOB, q->job);
    rt_jw_kint(&w, RT_F_ATTEMPT, attempt);
    rt_jw_kint(&w, RT_F_RANK, rank);
    rt_jw_kbool(&w, RT_F_FOLLOW, q->follow);
    rt_jw_kbool(&w, RT_F_LINES, q->all);
    int64_t skip = skip_of(q, rank);
    if (skip > 0)
        rt_jw_kint(&w, RT_F_SKIP, skip);
    rt_jw_obj_end(&w);
    if (coord_send(q->co, a, &w) != RT_OK)
        return;
    q->asked++;
    log_stream *s = q->s;
    bool known = false;
    for (int i = 0; i < s->nagents && !known; i++)
        known = strcmp(s->agents[i], key) == 0;
    if (!known && s->nagents == s->cap) {
        int cap = s->cap ? s->cap * 2 : 8;
        char(*g)[SC_KEY_LEN] = realloc(s->agents, (size_t)cap * sizeof *g);
        if (!g)
            return; /* its output is refused; the stream ends with the others */
        s->agents = g;
        s->cap = cap;
    }
    if (!known)
        snprintf(s->agents[s->nagents++], sizeof s->agents[0], "%s", key);
}

void http_logs(coord *co, struct evhttp_request *req, int64_t id, const char *query)
{
    struct evkeyvalq q;
    evhttp_parse_query_str(query ? query : "", &q);
    const char *rank_s = evhttp_find_header(&q, "rank");
    const char *follow_s = evhttp_find_header(&q, "follow");
    const char *attempt_s = evhttp_find_header(&q, "attempt");
    const char *format = evhttp_find_header(&q, "format");
    if (format && strcmp(format, "text") != 0 && strcmp(format, "ndjson") != 0) {
        evhttp_clear_headers(&q);
        http_reply_error(req, 400, "format must be text or ndjson");
        return;
    }
    const bool ndjson = format && !strcmp(format, "ndjson");
    long long attempt = 0; /* the latest */
    if (attempt_s && (strspn(attempt_s, "0123456789") != strlen(attempt_s) || !*attempt_s ||
                      strlen(attempt_s) > 9 || (attempt = atoll(attempt_s)) < 1)) {
        evhttp_clear_headers(&q);
        http_reply_error(req, 400, "attempt must be a number from 1");
        return;
    }
    bool all = !rank_s || strcmp(rank_s, "all") == 0;
    long want = -1;
    char *end = NULL;
    if (!all) {
        want = strtol(rank_s, &end, 10);
        if (!*rank_s || *end || want < 0 || want > 65535) {
            evhttp_clear_headers(&q);
            http_reply_error(req, 400, "rank must be a rank number or \"all\"");
            return;
        }
    }
    log_stream *s = calloc(1, sizeof *s);
    if (!s) {
        evhttp_clear_headers(&q);
        http_reply_error(req, 500, "out of memory");
        return;
    }
    s->id = ++co->next_stream_id;
    s->co = co;
    s->req = req;
    s->all = all;
    s->ndjson = ndjson;
    const char *skip_s = evhttp_find_header(&q, "skip");
    char *skip = skip_s && strspn(skip_s, "0123456789:,") == strlen(skip_s) ? strdup(skip_s) : NULL;
    log_ask ask = {co, s, id, follow_s && strcmp(follow_s, "0") != 0, all, 0, 0, skip};
    evhttp_clear_headers(&q);
    char msg[160];
    bool found = cdb_job_ranks(co, id, attempt, all ? -1 : (int)want, ask_rank, &ask);
    free(skip);
    if (!found) {
        free(s->agents);
        free(s);
        snprintf(msg, sizeof msg, "job %lld not found", (long long)id);
        http_reply_error(req, 404, msg);
        return;
    }
    if (ask.asked == 0) {
        free(s->agents);
        free(s);
        if (ask.ranks == 0 && attempt > 0)
            snprintf(msg, sizeof msg, "job %lld has no attempt %lld%s", (long long)id, attempt,
                     all ? "" : " with that rank");
        else if (ask.ranks == 0 && all)
            snprintf(msg, sizeof msg, "job %lld has not started: no output yet", (long long)id);
        else if (ask.ranks == 0)
            snprintf(msg, sizeof msg, "job %lld has no rank %ld in its latest attempt",
                     (long long)id, want);
        else
            snprintf(msg, sizeof msg,
                     "the agent%s holding the output of job %lld%s %s not "
                     "connected",
                     all ? "s" : "", (long long)id, all ? "" : "'s rank", all ? "are" : "is");
        /* 503 when the ranks are known but their agents are away (after a
         * coordinator restart they come back within seconds): a follower
         * waits and asks again, where a 404 is final */
        http_reply_error(req, ask.ranks == 0 ? 404 : 503, msg);
        return;
    }
    s->pending = ask.asked;
    s->next = co->streams;
    co->streams = s;
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      ndjson ? "application/x-ndjson" : "text/plain; charset=utf-8");
    evhttp_send_reply_start(req, 200, "OK");
    http_conn_served(req, true); /* no request deadline while the output streams */
    struct evhttp_connection *evc = evhttp_request_get_connection(req);
    evhttp_connection_set_closecb(evc, stream_closed, s);
    /* a stream may be silent for days: no idle timeout, but TCP keep-alive
     * so that a vanished client is still noticed */
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evc);
    bufferevent_set_timeouts(bev, NULL, NULL);
    int one = 1;
    setsockopt(bufferevent_getfd(bev), SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
}

void http_logs_stop(coord *co)
{
    while (co->streams) {
        stream_release_req(co->streams);
        stream_free(co, co->streams);
    }
}
