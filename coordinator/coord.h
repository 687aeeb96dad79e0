/* coord.h — private to coordinator/: the coordinator daemon around the
 * scheduler (scheduler.h), and the functions its files share.
 *
 *   sched*.c       the model and every decision (no I/O)
 *   coord_core.c   event loop, the agents' control connections, one
 *                  handler per protocol message, performing the
 *                  scheduler's actions
 *   coord_db.c     SQLite: the only files that speak SQL (with
 *                  coord_db_sweep.c); every change is committed before
 *                  anyone is told of it
 *   coord_http.c   HTTP API, /metrics, dashboard, log streaming
 *
 * Everything runs on one libevent thread. */
#ifndef RT_COORD_H
#define RT_COORD_H

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <openssl/ssl.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "rt_json.h"
#include "rt_net.h"
#include "rt_proto.h"
#include "rt_schemas.h"
#include "scheduler.h"

typedef struct coord coord;
typedef struct log_stream log_stream;
typedef struct http_conn http_conn;

/* API roles (coord_auth.c): each may do what the ones before it may, but
 * metrics, which may read /metrics only. */
typedef enum auth_role {
    ROLE_NONE = -1,
    ROLE_METRICS = 0,
    ROLE_READ,
    ROLE_SUBMIT,
    ROLE_ADMIN,
    ROLE_AGENT /* not an API role: one agent's own registration token, bound to its name */
} auth_role;

/* A dashboard login: a random id in an HttpOnly cookie, standing for the
 * token it was opened with (dropped when that token is revoked). */
typedef struct web_session {
    char id[65];
    auth_role role;
    int64_t token_id; /* 0: the admin token */
    char who[96];
    double expires;
    struct web_session *next;
} web_session;

typedef struct api_token {
    int64_t id;
    char name[64];
    auth_role role;
    char hash[65]; /* SHA-256 of the token, hex */
    char unix_user[33]; /* its jobs run as this Unix user ("": as the agent decides) */
    struct api_token *next;
} api_token;
typedef struct closing_conn closing_conn;

/* One control connection; bound to an agent record once its hello passed. */
typedef struct conn {
    coord *co;
    struct bufferevent *bev;
    sc_agent *ag;             /* NULL until registered */
    char peer[96];            /* remote address */
    int64_t hello_deadline_ns; /* absolute: the hello must be in by then */
    int64_t last_seen_ns;
    bool revoked; /* its agent token was revoked: dropped at the next tick */
    struct conn *next;
} conn;

struct coord {
    rt_coord_cfg cfg;
    char token[RT_TOKEN_HEX + 1];       /* the agents' registration token */
    char admin_token[RT_TOKEN_HEX + 1]; /* the API's bootstrap admin token */
    api_token *tokens;                  /* API tokens that are not revoked */
    web_session *sessions;              /* the dashboard's logins */
    struct event_base *base;
    SSL_CTX *ssl;
    struct evconnlistener *listener;
    struct evhttp *http;
    sqlite3 *db;
    uint8_t seal_key[32]; /* state_key_file's key (coord_seal.c) */
    sched S;
    conn *conns;
    struct event *tick, *sigint, *sigterm;
    log_stream *streams;
    uint64_t next_stream_id;
    http_conn *http_conns; /* the API's open connections, newest first */
    int http_nconns;
    int64_t rejected_connections;
    int64_t db_errors;
    closing_conn *closing; /* rejected connections still writing their reason */
    bool stopping;
};

/* coord_core.c */
rt_status coord_create(const rt_coord_cfg *cfg, coord **out, char *err);
int coord_run(coord *co);
void coord_destroy(coord *co);
sc_clock coord_now(void);
/* Perform the scheduler's pending actions: every write in one transaction,
 * then the frames to the agents.  RT_ERR_IO when the writes failed (the
 * caller must not report success). */
rt_status coord_flush(coord *co);
/* Send a frame to a registered agent (consumes w); RT_ERR_IO when it is not
 * connected. */
rt_status coord_send(coord *co, const sc_agent *a, rt_jw *w);

/* The receivers of the messages agents send, indexed by rt_msg (NULL for
 * the messages a coordinator never receives); test_protocol checks it. */
typedef void (*coord_handler)(coord *co, conn *c, const rt_json *m);
extern const coord_handler coord_handlers[RT_MSG_COUNT];

/* coord_db.c */
rt_status cdb_open(coord *co, const char *path, char *err);
/* coord_db_schema.c: settings, then the schema of a new file or the
 * migrations of an older one (at schema `version`, its user_version) */
rt_status cdb_schema(coord *co, const char *path, int version, char *err);
/* coord_seal.c: the job environments in the database, sealed with the key
 * of state_key_file (made at the first start).  cseal_spec: the spec text
 * to store (malloc'd; NULL when it cannot be sealed: logged);
 * cseal_open_spec: the stored text opened (NULL and err when a value does
 * not open); cseal_migrate seals what an older database holds in clear. */
rt_status cseal_load(coord *co, const char *path, char *err);
char *cseal_spec(const coord *co, int64_t job, const char *spec);
char *cseal_open_spec(const coord *co, int64_t job, const char *stored, char *err);
rt_status cseal_migrate(coord *co, char *err);
/* What coord_db.c shares with coord_db_sweep.c: prepare, bind with a tiny
 * format ("i" int64, "d" double, "t" text, "n" null), step once (false,
 * counted and logged, when it failed); a column's text (NULL for NULL); a
 * row as a JSON object (stored JSON documents inlined). */
bool cdb_exec(coord *co, const char *sql, const char *types, ...);
const char *cdb_col(sqlite3_stmt *st, int c);
void cdb_row_json(rt_jw *w, sqlite3_stmt *st);
/* coord_db_sweep.c: the sweeps' tables (schema 7), a trial's or a sweep's
 * record written, the unfinished sweeps' trials read back into the
 * scheduler, a sweep's trials in its API document */
extern const char *const CDB_SWEEP_SCHEMA;
bool cdb_save_trial(coord *co, const sc_job *sweep, int n);
void cdb_load_sweeps(coord *co);
void cdb_sweep_detail(coord *co, rt_jw *w, int64_t id);
void cdb_close(coord *co);
/* The writes among the actions, in one transaction. */
rt_status cdb_apply(coord *co, const sc_action *acts, int n);
/* Known agents and unfinished jobs into the scheduler. */
rt_status cdb_load(coord *co, sc_clock now, char *err);
/* [jobs] job_retention: delete the finished jobs (and their attempts,
 * placement, events, metrics, results) that finished before cutoff (wall
 * seconds) and are no longer in the scheduler's memory, then give the
 * freed pages back.  Returns how many, or -1 when the database failed. */
int cdb_prune_jobs(coord *co, double cutoff);
/* An agent forgotten by the scheduler (agent_retention). */
bool cdb_forget_agent(coord *co, const char *key);
/* JSON documents for the API, from the database (finished jobs too). */
typedef struct cdb_job_filter {
    const char *state, *user;
    double since; /* submitted at or after (unix seconds), 0: any */
    int64_t limit, before_id; /* newest first; before_id 0: from the newest */
} cdb_job_filter;
char *cdb_job_list(coord *co, const cdb_job_filter *f);
/* GET /v1/jobs/ID: a page of its events and of its epochs (metrics): the
 * newest `limit` after skipping the `skip` newest */
typedef struct cdb_page {
    int64_t skip, limit;
} cdb_page;
#define CDB_DETAIL_EVENTS 1000
#define CDB_DETAIL_METRICS 2000
char *cdb_job_detail(coord *co, int64_t id, const cdb_page *events, const cdb_page *metrics);
/* the job user submitted with Idempotency-Key key; 0: none */
int64_t cdb_job_by_key(coord *co, const char *user, const char *key);
int cdb_job_counts(coord *co, int counts[JOB_CANCELLED + 1]);
/* The agent holding each rank of an attempt of job id (attempt 0: the
 * latest; rank < 0: all): fn(user, rank, agent_key, attempt); false when
 * the job is unknown. */
bool cdb_job_ranks(coord *co, int64_t id, int64_t attempt, int rank,
                   void (*fn)(void *user, int rank, const char *agent, int64_t attempt),
                   void *user);

/* API tokens in the database: insert (its id, or RT_ERR_EXISTS for a
 * taken name), revoke, list (JSON), and load the live ones into co->tokens. */
rt_status cdb_token_insert(coord *co, const char *name, const char *role, const char *hash,
                           const char *unix_user, int64_t *id, char *err);
rt_status cdb_token_revoke(coord *co, const char *id_or_name, int64_t *id, char *err);
char *cdb_token_list(coord *co);
rt_status cdb_token_load(coord *co, char *err);

/* coord_auth.c */
const char *auth_role_name(auth_role r);
auth_role auth_role_parse(const char *name);
void auth_hash(const char *token, char hex[65]);
rt_status auth_add(coord *co, int64_t id, const char *name, auth_role role, const char *hash,
                   const char *unix_user);
/* The Unix user the live token named user submits as ("" when none). */
const char *auth_unix_user(const coord *co, const char *user);
/* POST /v1/tokens and POST /v1/tokens/ID|NAME/revoke (admin) */
void auth_token_create(coord *co, struct evhttp_request *req);
void auth_token_revoke(coord *co, struct evhttp_request *req, const char *which);
void auth_remove(coord *co, int64_t id);
void auth_free(coord *co);
/* The role of a request: its Authorization header's bearer token, else its
 * Cookie header's dashboard session (ROLE_NONE and why when none); who it
 * is, for logs; the token's id (0: the admin token) when token_id is given;
 * *by_cookie when a session cookie was what counted. */
auth_role auth_check(coord *co, const char *bearer, const char *cookie, char *who, size_t wholen,
                     const char **why, int64_t *token_id, bool *by_cookie);
/* The user a request acts as: its token's name (who is "token NAME"); NULL
 * for the admin token.  auth_owns: whether it may see and change a job of
 * job_user (NULL: not in memory) as its own: admins any, others theirs. */
const char *auth_user(const char *who);
bool auth_owns(auth_role role, const char *who, const char *job_user);
/* A job's document as a role below admin may see it: every "env" object's
 * values replaced by "(hidden)", the names kept (issue 28.4: a read token
 * saw the secrets passed with exec -x).  Takes doc (frees it); NULL stays
 * NULL. */
char *auth_hide_env(char *doc);
/* May this hello's token register an agent named `name`?  The agents'
 * shared token, unless that name is enrolled (or enrollment is required),
 * or the agent's own token (role agent, made for that name).  NULL, or the
 * reason to refuse. */
const char *auth_agent_hello(coord *co, const char *token, const char *name);
/* A new dashboard session (its id in out, 64 hex digits), one per login. */
rt_status auth_session_new(coord *co, auth_role role, int64_t token_id, const char *who,
                           char out[65]);
void auth_session_drop(coord *co, const char *cookie);
void auth_sessions_of_token_drop(coord *co, int64_t token_id);
#define AUTH_SESSION_S (12 * 3600) /* a login lasts 12 hours */
#define AUTH_SESSIONS_PER_TOKEN 16 /* logins kept per token: a new one ends the oldest */

/* coord_http.c: the API's routes — one table that dispatch and
 * authorisation read (test_cluster_http walks it) */
typedef struct http_call {
    auth_role role;
    const char *who;   /* "token NAME", "admin token", ... */
    const char *query; /* the URI's query (NULL: none) */
    const char *peer;  /* the client's address, for logs */
    long long id;      /* {id} of the pattern */
    char name[80];     /* {name} of the pattern */
} http_call;
typedef struct http_route {
    const char *method;  /* "GET" or "POST" */
    const char *pattern; /* "/v1/jobs/{id}/cancel": {id} digits, {name} one segment */
    auth_role need;      /* the least role (http_role_allows) */
    void (*fn)(coord *co, struct evhttp_request *req, const http_call *c);
} http_route;
extern const http_route http_routes[];
extern const size_t http_nroutes;
bool http_role_allows(auth_role role, auth_role need);
/* coord_http.c: replies (a JSON body is freed), a request's body (NUL-ended) */
void http_reply_text(struct evhttp_request *req, int code, const char *type, const char *body);
void http_reply_json(struct evhttp_request *req, int code, char *json);
void http_reply_error(struct evhttp_request *req, int code, const char *msg);
/* coord_metrics.c: GET /metrics */
void http_metrics(coord *co, struct evhttp_request *req);
char *http_body_text(struct evhttp_request *req, size_t *len);

/* coord_web.c: the dashboard's files and logins.  web_serve answers GET of
 * the page's files and POST /v1/session (log in with a token); false when
 * the request is none of those. */
bool web_serve(coord *co, struct evhttp_request *req, const char *path, bool get, bool post);
void web_session_get(coord *co, struct evhttp_request *req, const char *who, auth_role role);
void web_logout(coord *co, struct evhttp_request *req);

rt_status http_start(coord *co, char *err);
/* coord_http_conn.c: the API's connections, capped, with request deadlines */
struct bufferevent *http_conn_bev(struct event_base *base, void *arg); /* evhttp's bevcb */
/* A request was read whole (handle()): the next has http_request_timeout
 * from now; streaming: none while its reply streams. */
void http_conn_served(struct evhttp_request *req, bool streaming);
void http_conn_tick(coord *co); /* caps and deadlines, each tick */
void http_conn_listener(struct evhttp_bound_socket *bound); /* accept errors paced */
rt_status http_start(coord *co, char *err);
void http_stop(coord *co);
/* coord_logs.c: the log streams of GET /v1/jobs/ID/logs */
void http_logs(coord *co, struct evhttp_request *req, int64_t id, const char *query);
void http_logs_stop(coord *co); /* every stream ended (the API stops) */
/* an agent's log_data frame (control channel) into the streams it serves;
 * an agent lost: its streams told */
void logs_on_agent_data(coord *co, conn *c, const rt_json *m);
void logs_on_agent_gone(coord *co, const sc_agent *a);

#endif
