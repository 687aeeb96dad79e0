/* coord_http.c — the HTTP API (libevent evhttp over TLS, bearer token): one
 * route table (http_routes, below: method, path, the least role, handler)
 * that dispatch and authorisation both read — docs/protocol.md describes
 * each route.  Every request but the dashboard's page and login
 * (coord_web.c) carries an API token whose role allows it (coord_auth.c):
 * 401 without one, 403 when its role is short.
 *
 * Errors are JSON {"error": "..."} with a fitting status code.  A reply
 * that reports a change is sent only after the change is committed. */
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/keyvalq_struct.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "coord.h"
#include "rt_addr.h"
#include "rt_hex.h"
#include "rt_log.h"

void http_reply_text(struct evhttp_request *req, int code, const char *type, const char *body)
{
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, body, strlen(body));
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
    evhttp_send_reply(req, code, NULL, b);
    evbuffer_free(b);
}

void http_reply_json(struct evhttp_request *req, int code, char *json)
{
    http_reply_text(req, code, "application/json", json ? json : "{\"error\":\"out of memory\"}");
    free(json);
}

void http_reply_error(struct evhttp_request *req, int code, const char *msg)
{
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, "error", msg);
    rt_jw_obj_end(&w);
    http_reply_json(req, code, rt_jw_take(&w, NULL));
}

/* The reply to a change: its status, once the change is committed. */
static void reply_change(coord *co, struct evhttp_request *req, rt_status st, const char *err,
                         const char *ok_json, int ok_code)
{
    rt_status written = coord_flush(co);
    if (st == RT_OK && written != RT_OK)
        http_reply_error(req, 503, "the change could not be recorded in the state database (see "
                              "the coordinator's log)");
    else if (st == RT_OK)
        http_reply_text(req, ok_code, "application/json", ok_json);
    else
        http_reply_error(req, st == RT_ERR_NOTFOUND ? 404 : st == RT_ERR_INVALID ? 409 : 500, err);
}


char *http_body_text(struct evhttp_request *req, size_t *len)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    *len = evbuffer_get_length(in);
    char *body = malloc(*len + 1);
    if (body) {
        evbuffer_copyout(in, body, *len);
        body[*len] = '\0';
    }
    return body;
}

static void nodes(coord *co, struct evhttp_request *req)
{
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_key(&w, "nodes");
    rt_jw_arr(&w);
    for (sc_agent *a = co->S.agents; a; a = a->next) {
        rt_jw_obj(&w);
        rt_jw_kstr(&w, "agent", a->key);
        rt_jw_kstr(&w, "host_id", a->host_id);
        rt_jw_kstr(&w, "name", a->name);
        rt_jw_kstr(&w, "hostname", a->hostname);
        rt_jw_kstr(&w, "address", a->addr);
        rt_jw_kstr(&w, "state", a->up ? "up" : "down");
        rt_jw_kbool(&w, "draining", a->draining);
        rt_jw_knum(&w, "since", a->since);
        rt_jw_kint(&w, "slots", a->slots);
        rt_jw_kint(&w, "used", a->used);
        rt_jw_kbool(&w, "cuda", a->cuda);
        rt_jw_kbool(&w, "nccl", a->nccl);
        rt_jw_kbool(&w, "rdma", a->rdma);
        rt_jw_kint(&w, "gpus", a->gpus);
        rt_jw_key(&w, "caps");
        rt_jw_raw(&w, a->caps ? a->caps : "{}");
        rt_jw_obj_end(&w);
    }
    rt_jw_arr_end(&w);
    rt_jw_obj_end(&w);
    http_reply_json(req, 200, rt_jw_take(&w, NULL));
}

static void drain(coord *co, struct evhttp_request *req, bool on)
{
    size_t len;
    char *body = http_body_text(req, &len), err[RT_ERR_LEN];
    rt_json *j = NULL;
    const char *who = NULL;
    if (body && rt_json_parse(body, len, &j, err) == RT_OK)
        who = rt_json_get_str(j, "agent");
    if (!who)
        http_reply_error(req, 400, "the body must be {\"agent\": \"HOST_ID/NAME or NAME\"}");
    else
        reply_change(co, req, sched_drain(&co->S, who, on, coord_now(), err), err,
                     on ? "{\"draining\":true}" : "{\"draining\":false}", 200);
    rt_json_free(j);
    free(body);
}

/* ---- what ranks use --------------------------------------------------------------- */

/* "steps": rank 0's step reports of the current epoch (attempt, epoch,
 * points [step, mae or null, steps/s]), when there are any. */
static void steps_json(const sc_job *j, rt_jw *w)
{
    const sc_steps *s = j->steps;
    if (!s || s->n == 0 || s->attempt != j->attempt)
        return;
    rt_jw_key(w, "steps");
    rt_jw_obj(w);
    rt_jw_kint(w, "attempt", s->attempt);
    rt_jw_kint(w, "epoch", s->epoch);
    rt_jw_key(w, "points");
    rt_jw_arr(w);
    for (int i = 0; i < s->n; i++) {
        rt_jw_arr(w);
        rt_jw_int(w, s->p[i].step);
        if (isfinite(s->p[i].loss))
            rt_jw_num(w, s->p[i].loss);
        else
            rt_jw_null(w);
        rt_jw_num(w, s->p[i].steps_per_s);
        rt_jw_arr_end(w);
    }
    rt_jw_arr_end(w);
    rt_jw_obj_end(w);
}

/* A job's document (from the database) with "usage": what its running ranks
 * use, from the agents' latest samples, and "steps" (both kept in memory
 * only). */
static char *with_usage(coord *co, int64_t id, char *doc)
{
    const sc_job *j = sched_job(&co->S, id);
    size_t len = doc ? strlen(doc) : 0;
    if (!j || len < 2 || doc[len - 1] != '}')
        return doc;
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w); /* {"usage": [...], "steps": {...}}: its members go into doc */
    rt_jw_key(&w, "usage");
    rt_jw_arr(&w);
    const int64_t now = coord_now().mono_ns;
    for (int r = 0; r < j->cur_np; r++) {
        const sc_rank *s = &j->ranks[r];
        if (s->usage_ns == 0 || s->state != RS_RUNNING)
            continue;
        rt_jw_obj(&w);
        rt_jw_kint(&w, "rank", r);
        rt_jw_knum(&w, "cpu_s", s->cpu_s);
        rt_jw_knum(&w, "cpu_pct", s->cpu_pct);
        rt_jw_kint(&w, "rss_bytes", s->rss_bytes);
        rt_jw_kint(&w, "procs", s->procs);
        if (s->gpu_util >= 0) {
            rt_jw_kint(&w, "gpu_util", s->gpu_util);
            rt_jw_kint(&w, "gpu_mem_bytes", s->gpu_mem_bytes);
        }
        rt_jw_knum(&w, "age_s", (double)(now - s->usage_ns) / 1e9);
        rt_jw_obj_end(&w);
    }
    rt_jw_arr_end(&w);
    steps_json(j, &w);
    rt_jw_obj_end(&w);
    size_t ulen;
    char *u = rt_jw_take(&w, &ulen);
    /* doc without its closing brace, a comma, u without its opening one */
    char *out = u && ulen >= 2 ? malloc(len + ulen + 1) : NULL;
    if (!out) {
        free(u);
        return doc;
    }
    memcpy(out, doc, len - 1);
    out[len - 1] = ',';
    memcpy(out + len, u + 1, ulen - 1);
    out[len + ulen - 1] = '\0';
    free(u);
    free(doc);
    return out;
}

/* ---- routing ------------------------------------------------------------------- */

static void jobs_get(coord *co, struct evhttp_request *req, const char *query)
{
    struct evkeyvalq q;
    evhttp_parse_query_str(query ? query : "", &q);
    cdb_job_filter f = {0};
    f.state = evhttp_find_header(&q, "state");
    f.user = evhttp_find_header(&q, "user");
    const char *since = evhttp_find_header(&q, "since"), *limit = evhttp_find_header(&q, "limit"),
               *before = evhttp_find_header(&q, "before");
    char *e1 = NULL, *e2 = NULL, *e3 = NULL;
    f.since = since ? strtod(since, &e1) : 0;
    f.limit = limit ? strtoll(limit, &e2, 10) : 100;
    f.before_id = before ? strtoll(before, &e3, 10) : 0;
    if ((f.state && job_state_parse(f.state) < 0) || (e1 && *e1) || (e2 && *e2) || (e3 && *e3) ||
        f.limit < 1 || f.limit > 10000) {
        http_reply_error(req, 400, "filters: state=queued|starting|running|restarting|succeeded|"
                              "failed|cancelled, user=NAME, since=UNIX-SECONDS, limit=1..10000, "
                              "before=JOB-ID");
    } else {
        http_reply_json(req, 200, cdb_job_list(co, &f));
    }
    evhttp_clear_headers(&q);
}

/* ?events_skip=N&events_limit=N&metrics_skip=N&metrics_limit=N of a job's
 * detail (defaults: the newest CDB_DETAIL_EVENTS and CDB_DETAIL_METRICS);
 * false, answered 400, when one is out of range. */
static bool detail_pages(struct evhttp_request *req, cdb_page *ev, cdb_page *me)
{
    *ev = (cdb_page){0, CDB_DETAIL_EVENTS};
    *me = (cdb_page){0, CDB_DETAIL_METRICS};
    struct evkeyvalq q;
    const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    evhttp_parse_query_str(query ? query : "", &q);
    const struct {
        const char *key;
        int64_t *v, lo, hi;
    } ks[] = {{"events_skip", &ev->skip, 0, INT64_MAX / 2},
              {"events_limit", &ev->limit, 1, CDB_DETAIL_EVENTS},
              {"metrics_skip", &me->skip, 0, INT64_MAX / 2},
              {"metrics_limit", &me->limit, 1, CDB_DETAIL_METRICS}};
    bool ok = true;
    for (size_t i = 0; i < RT_ARRAY_LEN(ks) && ok; i++) {
        const char *v = evhttp_find_header(&q, ks[i].key);
        char *end = NULL;
        long long x = v ? strtoll(v, &end, 10) : 0;
        if (v && (!*v || *end || x < ks[i].lo || x > ks[i].hi)) {
            char msg[160];
            snprintf(msg, sizeof msg, "%s must be a number from %lld to %lld", ks[i].key,
                     (long long)ks[i].lo, (long long)ks[i].hi);
            http_reply_error(req, 400, msg);
            ok = false;
        } else if (v) {
            *ks[i].v = x;
        }
    }
    evhttp_clear_headers(&q);
    return ok;
}

/* A job's user is who its token says (issue 28.3: it was whatever the
 * body said); an admin may submit for another user ("user" in the body).
 * Its ranks run as the Unix user that user's token names, if any (28.2). */
static void jobs_post(coord *co, struct evhttp_request *req, auth_role role, const char *who)
{
    size_t len;
    char *body = http_body_text(req, &len), err[RT_ERR_LEN];
    if (!body) {
        http_reply_error(req, 500, "out of memory");
        return;
    }
    rt_json *j = NULL;
    const char *user = auth_user(who);
    if (role >= ROLE_ADMIN && rt_json_parse(body, len, &j, err) == RT_OK)
        user = rt_json_str(rt_json_get(j, "user"), user ? user : "admin");
    if (!user)
        user = "?";
    /* Idempotency-Key (the IETF draft's header, as Stripe's API): a client
     * whose POST got no answer — the coordinator stopped after recording the
     * job — sends it again with the same key and gets that job back, not a
     * second one */
    const char *key = evhttp_find_header(evhttp_request_get_input_headers(req), "Idempotency-Key");
    int64_t id = 0;
    char out[64];
    static const char key_chars[] = "0123456789abcdefghijklmnopqrstuvwxyz"
                                    "ABCDEFGHIJKLMNOPQRSTUVWXYZ-_";
    if (key && (!*key || strlen(key) > 64 || strspn(key, key_chars) != strlen(key))) {
        rt_json_free(j);
        free(body);
        http_reply_error(req, 400, "Idempotency-Key: 1 to 64 letters, digits, - or _");
        return;
    }
    if (key && (id = cdb_job_by_key(co, user, key)) > 0) {
        RT_INFO("http", "job %lld submitted again by %s (the same Idempotency-Key)", (long long)id,
                user);
        rt_json_free(j);
        free(body);
        snprintf(out, sizeof out, "{\"id\":%lld}", (long long)id);
        http_reply_text(req, 201, "application/json", out);
        return;
    }
    rt_status st = sched_submit(&co->S, body, len, user, auth_unix_user(co, user), coord_now(),
                                &id, err);
    rt_json_free(j);
    free(body);
    if (st != RT_OK) {
        coord_flush(co);
        http_reply_error(req, st == RT_ERR_INVALID ? 400 : st == RT_ERR_BUSY ? 429 : 500, err);
        return;
    }
    sc_job *jb = key ? sched_job(&co->S, id) : NULL;
    if (jb) /* recorded with the job, in the same transaction (coord_flush) */
        snprintf(jb->idem_key, sizeof jb->idem_key, "%s", key);
    snprintf(out, sizeof out, "{\"id\":%lld}", (long long)id);
    reply_change(co, req, RT_OK, NULL, out, 201);
}

/* ---- the routes --------------------------------------------------------------- */

static void r_session(coord *co, struct evhttp_request *req, const http_call *c)
{
    web_session_get(co, req, c->who, c->role);
}

static void r_logout(coord *co, struct evhttp_request *req, const http_call *c)
{
    (void)c;
    web_logout(co, req);
}

static void r_tokens(coord *co, struct evhttp_request *req, const http_call *c)
{
    (void)c;
    char *doc = cdb_token_list(co);
    if (doc)
        http_reply_json(req, 200, doc);
    else
        http_reply_error(req, 500, "out of memory");
}

static void r_token_new(coord *co, struct evhttp_request *req, const http_call *c)
{
    (void)c;
    auth_token_create(co, req);
}

static void r_token_revoke(coord *co, struct evhttp_request *req, const http_call *c)
{
    auth_token_revoke(co, req, c->name);
}

static void r_metrics(coord *co, struct evhttp_request *req, const http_call *c)
{
    (void)c;
    http_metrics(co, req);
}

static void r_nodes(coord *co, struct evhttp_request *req, const http_call *c)
{
    (void)c;
    nodes(co, req);
}

static void r_drain(coord *co, struct evhttp_request *req, const http_call *c)
{
    (void)c;
    drain(co, req, true);
}

static void r_resume(coord *co, struct evhttp_request *req, const http_call *c)
{
    (void)c;
    drain(co, req, false);
}

static void r_jobs(coord *co, struct evhttp_request *req, const http_call *c)
{
    jobs_get(co, req, c->query);
}

static void r_submit(coord *co, struct evhttp_request *req, const http_call *c)
{
    jobs_post(co, req, c->role, c->who);
}

/* A job's document; its environment's values for its own user (its token)
 * or an admin only. */
static void r_job(coord *co, struct evhttp_request *req, const http_call *c)
{
    cdb_page ev, me;
    if (!detail_pages(req, &ev, &me))
        return;
    const sc_job *jb = sched_job(&co->S, c->id);
    char *doc = with_usage(co, c->id, cdb_job_detail(co, c->id, &ev, &me));
    if (!auth_owns(c->role, c->who, jb ? jb->user : NULL)) /* the environment: names only */
        doc = auth_hide_env(doc);
    char msg[64];
    snprintf(msg, sizeof msg, "job %lld not found", c->id);
    if (doc)
        http_reply_json(req, 200, doc);
    else
        http_reply_error(req, 404, msg);
}

/* Cancel, hold and release: the job's own user or an admin (as scancel). */
static bool owner(coord *co, struct evhttp_request *req, const http_call *c)
{
    const sc_job *jb = sched_job(&co->S, c->id);
    if (!jb || auth_owns(c->role, c->who, jb->user))
        return true;
    char msg[300];
    snprintf(msg, sizeof msg, "job %lld is %s's; %s may change only its own jobs", c->id, jb->user,
             c->who);
    RT_WARN("http", "job %lld from %s: refused: %s", c->id, c->peer, msg);
    http_reply_error(req, 403, msg);
    return false;
}

static void r_cancel(coord *co, struct evhttp_request *req, const http_call *c)
{
    char err[RT_ERR_LEN];
    if (owner(co, req, c))
        reply_change(co, req, sched_cancel(&co->S, c->id, coord_now(), err), err,
                     "{\"cancelled\":true}", 200);
}

static void r_hold(coord *co, struct evhttp_request *req, const http_call *c)
{
    char err[RT_ERR_LEN];
    if (owner(co, req, c))
        reply_change(co, req, sched_hold(&co->S, c->id, true, coord_now(), err), err,
                     "{\"held\":true}", 200);
}

static void r_release(coord *co, struct evhttp_request *req, const http_call *c)
{
    char err[RT_ERR_LEN];
    if (owner(co, req, c))
        reply_change(co, req, sched_hold(&co->S, c->id, false, coord_now(), err), err,
                     "{\"held\":false}", 200);
}

static void r_logs(coord *co, struct evhttp_request *req, const http_call *c)
{
    http_logs(co, req, c->id, c->query);
}

/* Every API route: dispatch and authorisation both read this table, and
 * test_cluster_http walks it (no token: 401; a role below: 403; each in
 * docs/protocol.md).  {id}: a job id (digits); {name}: one path segment.
 * The dashboard's files and its login (POST /v1/session) need no token and
 * are coord_web.c's. */
const http_route http_routes[] = {
    {"GET", "/v1/session", ROLE_READ, r_session},
    {"POST", "/v1/session/logout", ROLE_READ, r_logout},
    {"GET", "/v1/nodes", ROLE_READ, r_nodes},
    {"POST", "/v1/nodes/drain", ROLE_ADMIN, r_drain},
    {"POST", "/v1/nodes/resume", ROLE_ADMIN, r_resume},
    {"GET", "/v1/jobs", ROLE_READ, r_jobs},
    {"POST", "/v1/jobs", ROLE_SUBMIT, r_submit},
    {"GET", "/v1/jobs/{id}", ROLE_READ, r_job},
    {"POST", "/v1/jobs/{id}/cancel", ROLE_SUBMIT, r_cancel},
    {"POST", "/v1/jobs/{id}/hold", ROLE_SUBMIT, r_hold},
    {"POST", "/v1/jobs/{id}/release", ROLE_SUBMIT, r_release},
    {"GET", "/v1/jobs/{id}/logs", ROLE_READ, r_logs},
    {"GET", "/metrics", ROLE_METRICS, r_metrics},
    {"GET", "/v1/tokens", ROLE_ADMIN, r_tokens},
    {"POST", "/v1/tokens", ROLE_ADMIN, r_token_new},
    {"POST", "/v1/tokens/{name}/revoke", ROLE_ADMIN, r_token_revoke},
};
const size_t http_nroutes = RT_ARRAY_LEN(http_routes);

/* Whether path fits pattern, segment by segment; {id} and {name} into c. */
static bool route_match(const char *pattern, const char *path, http_call *c)
{
    const char *p = pattern, *q = path;
    while (*p && *q) {
        size_t pl = strcspn(p, "/"), ql = strcspn(q, "/");
        if (pl == 4 && !strncmp(p, "{id}", 4)) {
            if (ql == 0 || ql > 18 || strspn(q, "0123456789") != ql)
                return false;
            c->id = strtoll(q, NULL, 10);
        } else if (pl == 6 && !strncmp(p, "{name}", 6)) {
            if (ql == 0 || ql >= sizeof c->name)
                return false;
            snprintf(c->name, sizeof c->name, "%.*s", (int)ql, q);
        } else if (pl != ql || strncmp(p, q, pl) != 0) {
            return false;
        }
        p += pl;
        q += ql;
        if (*p != *q) /* one ends, or has a '/' where the other has none */
            return false;
        if (*p)
            p++, q++;
    }
    return !*p && !*q;
}

/* May a token of role use a route that needs `need`?  Each role may what
 * the ones before it may, but metrics only what needs metrics. */
bool http_role_allows(auth_role role, auth_role need)
{
    return role == ROLE_METRICS ? need == ROLE_METRICS : role >= need;
}

static void handle(struct evhttp_request *req, void *arg)
{
    coord *co = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = evhttp_uri_get_path(uri);
    enum evhttp_cmd_type method = evhttp_request_get_command(req);
    bool get = method == EVHTTP_REQ_GET, post = method == EVHTTP_REQ_POST;
    const char *mname = get ? "GET" : post ? "POST" : "?";
    if (!path)
        path = "/";
    http_conn_served(req, false); /* read whole: the next request's deadline starts */
    char *peer = NULL;
    ev_uint16_t port = 0;
    evhttp_connection_get_peer(evhttp_request_get_connection(req), &peer, &port);
    RT_DEBUG("http", "%s %s from %s:%u", mname, path, peer ? peer : "?", (unsigned)port);
    if (web_serve(co, req, path, get, post))
        return; /* the dashboard's files, and its login */
    http_call c = {.query = evhttp_uri_get_query(uri), .peer = peer ? peer : "?"};
    char who[96];
    const char *why = NULL;
    bool by_cookie = false;
    const struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    c.role = auth_check(co, evhttp_find_header(in, "Authorization"),
                        evhttp_find_header(in, "Cookie"), who, sizeof who, &why, NULL, &by_cookie);
    c.who = who;
    if (c.role == ROLE_NONE) {
        RT_WARN("http", "%s %s from %s: %s", mname, path, c.peer, why);
        evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer");
        http_reply_error(req, 401, why);
        return;
    }
    if (by_cookie && post && !evhttp_find_header(in, "X-Requested-With")) {
        /* a cookie alone could come from another site's form */
        http_reply_error(req, 403, "a change with the dashboard's session needs the header "
                                   "X-Requested-With: ringtrain");
        return;
    }
    const http_route *r = NULL;
    for (size_t i = 0; i < http_nroutes && !r; i++)
        if (!strcmp(http_routes[i].method, mname) && route_match(http_routes[i].pattern, path, &c))
            r = &http_routes[i];
    if (!r) {
        http_reply_error(req, 404, "no such endpoint");
        return;
    }
    if (!http_role_allows(c.role, r->need)) {
        char msg[300];
        snprintf(msg, sizeof msg, "%s has role %s; %s %s needs role %s", who,
                 auth_role_name(c.role), mname, path, auth_role_name(r->need));
        RT_WARN("http", "%s from %s: refused: %s", path, c.peer, msg);
        http_reply_error(req, 403, msg);
        return;
    }
    r->fn(co, req, &c);
}

rt_status http_start(coord *co, char *err)
{
    co->http = evhttp_new(co->base);
    if (!co->http)
        return rt_err(err, RT_ERR_NOMEM, "evhttp_new failed");
    evhttp_set_bevcb(co->http, http_conn_bev, co);
    evhttp_set_gencb(co->http, handle, co);
    evhttp_set_max_body_size(co->http, RT_FRAME_MAX);
    evhttp_set_max_headers_size(co->http, 16384);
    struct timeval tmo = {co->cfg.http_timeout_us / 1000000, co->cfg.http_timeout_us % 1000000};
    evhttp_set_timeout_tv(co->http, &tmo);
    evhttp_set_allowed_methods(co->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
    char host[256];
    int port = 0;
    if (rt_addr_parse(co->cfg.http_listen, true, host, sizeof host, &port, err) != RT_OK) {
        rt_err_prefix(err, "[coordinator] http_listen");
        return RT_ERR_INVALID;
    }
    struct evhttp_bound_socket *bound = evhttp_bind_socket_with_handle(co->http, host,
                                                                        (ev_uint16_t)port);
    if (!bound)
        return rt_err(err, RT_ERR_IO, "cannot listen on %s for the API: %m", co->cfg.http_listen);
    http_conn_listener(bound);
    return RT_OK;
}

void http_stop(coord *co)
{
    http_logs_stop(co);
    if (co->http)
        evhttp_free(co->http);
    co->http = NULL;
}

