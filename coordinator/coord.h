/* coord.h — private to coordinator/: the coordinator's in-memory model and
 * the functions its files share.
 *
 *   coord_core.c   event loop, the agents' control channel, messages
 *   coord_sched.c  placement (Horovod host-by-host), gang start, job life
 *                  cycle, failures, restarts, deadlines
 *   coord_db.c     SQLite state: every change is written before it is acted
 *                  on, so a restart loses nothing
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
#include "rt_schemas.h"

typedef struct coord coord;
typedef struct agent agent;
typedef struct job job;

typedef struct agent {
    coord *co;
    struct bufferevent *bev; /* NULL while disconnected */
    bool authed;
    char key[200];           /* host_id/name: unique */
    char host_id[80], name[80], hostname[256], addr[96];
    int slots, used;
    bool cuda, nccl, rdma;
    int gpus;
    int64_t last_seen_ns;
    bool up;
    char peer[96];           /* remote address of the connection */
    agent *next;
} agent;

enum job_state {
    JOB_QUEUED,
    JOB_STARTING,
    JOB_RUNNING,
    JOB_RESTARTING,
    JOB_SUCCEEDED,
    JOB_FAILED,
    JOB_CANCELLED,
};
const char *job_state_name(int state);
bool job_state_terminal(int state);

enum rank_state { RS_NONE, RS_PREPARING, RS_PREPARED, RS_STARTING, RS_RUNNING, RS_EXITED };

typedef struct rank_slot {
    agent *ag;
    char agent_key[200], host_id[80], hostname[256];
    int local_rank, local_size, cross_rank, cross_size;
    char addr[96];
    int64_t pid;
    int state;
    int exit_code, exit_signal;
} rank_slot;

typedef struct job {
    int64_t id;
    char name[128];
    int type;        /* RT_JOB_TRAIN / RT_JOB_EXEC */
    char *spec;      /* the submission as JSON text (kept and stored) */
    rt_json *specj;  /* parsed */
    int np, min_np, cur_np;
    int state;
    char reason[1024];
    char last_failure[700]; /* why the last attempt failed (kept through a restart) */
    int attempt, restarts, max_restarts;
    int64_t start_timeout_us, deadline_us;
    double created, started, finished; /* unix seconds */
    int64_t queued_ns, attempt_ns, prepare_deadline_ns;
    uint8_t key[32]; /* data-plane secret of the current attempt */
    rank_slot *ranks; /* cur_np of them */
    int prepared, running, exited_ok;
    bool have_failure;
    char *first_failure; /* JSON object */
    char *progress;      /* latest progress JSON from rank 0 */
    double steps_per_s;
    bool reconciling;    /* loaded after a coordinator restart */
    job *next;
} job;

typedef struct log_stream log_stream;
typedef struct closing_conn closing_conn;

struct coord {
    rt_coord_cfg cfg;
    char token[RT_TOKEN_HEX + 1];
    struct event_base *base;
    SSL_CTX *ssl;
    struct evconnlistener *listener;
    struct evhttp *http;
    sqlite3 *db;
    agent *agents;
    job *jobs;
    struct event *tick, *sigint, *sigterm;
    int64_t reconcile_until_ns;
    log_stream *streams;
    uint64_t next_stream_id;
    int64_t rejected_connections;
    closing_conn *closing; /* rejected connections still writing their reason */
    bool stopping;
};

/* coord_core.c */
rt_status coord_create(const rt_coord_cfg *cfg, coord **out, char *err);
int coord_run(coord *co);
void coord_destroy(coord *co);
rt_status coord_send(agent *a, rt_jw *w); /* consumes w */
agent *coord_agent_by_key(coord *co, const char *key);
double coord_unix_now(void);

/* coord_sched.c */
void sched_tick(coord *co);
rt_status sched_submit(coord *co, const char *body, size_t len, int64_t *id, char *err);
rt_status sched_cancel(coord *co, int64_t id, char *err);
job *sched_job(coord *co, int64_t id);
void sched_on_prepared(coord *co, agent *a, const rt_json *msg);
void sched_on_started(coord *co, agent *a, const rt_json *msg);
void sched_on_exited(coord *co, agent *a, const rt_json *msg);
void sched_on_progress(coord *co, agent *a, const rt_json *msg);
void sched_on_agent_lost(coord *co, agent *a, const char *why);
void sched_on_agent_hello(coord *co, agent *a, const rt_json *running);
void job_free(job *j);

/* coord_db.c */
rt_status cdb_open(coord *co, const char *path, char *err);
void cdb_close(coord *co);
void cdb_event(coord *co, int64_t job_id, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void cdb_agent(coord *co, const agent *a);
rt_status cdb_job_insert(coord *co, job *j);
void cdb_job_update(coord *co, const job *j);
void cdb_attempt(coord *co, const job *j, const char *state, const char *reason);
void cdb_placement(coord *co, const job *j);
void cdb_rank(coord *co, const job *j, int rank);
void cdb_metric(coord *co, const job *j, const char *json);
rt_status cdb_load_jobs(coord *co, char *err);
/* JSON documents for the API, from the database (terminal jobs too). */
char *cdb_job_list(coord *co);
char *cdb_job_detail(coord *co, int64_t id);

/* coord_http.c */
rt_status http_start(coord *co, char *err);
void http_stop(coord *co);
void http_on_logs(coord *co, agent *a, const rt_json *msg);
void http_on_agent_gone(coord *co, agent *a);

#endif
