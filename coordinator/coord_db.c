/* coord_db.c — the coordinator's state in SQLite (write-ahead log): agents,
 * jobs, attempts, rank placement, events and metrics.  Every change is
 * written when it happens; after a restart cdb_load_jobs() brings back the
 * jobs that had not finished. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "rt_log.h"

static const char *SCHEMA =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "CREATE TABLE IF NOT EXISTS agents(key TEXT PRIMARY KEY, host_id TEXT, name TEXT,"
    " hostname TEXT, address TEXT, slots INTEGER, caps TEXT, state TEXT, last_seen REAL);"
    "CREATE TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY, name TEXT, type TEXT, np INTEGER,"
    " state TEXT, reason TEXT, spec TEXT, attempt INTEGER, restarts INTEGER, created REAL,"
    " started REAL, finished REAL, first_failure TEXT, progress TEXT);"
    "CREATE TABLE IF NOT EXISTS attempts(job_id INTEGER, attempt INTEGER, np INTEGER, state TEXT,"
    " reason TEXT, started REAL, finished REAL, PRIMARY KEY(job_id, attempt));"
    "CREATE TABLE IF NOT EXISTS placement(job_id INTEGER, attempt INTEGER, rank INTEGER,"
    " agent TEXT, host_id TEXT, hostname TEXT, local_rank INTEGER, local_size INTEGER,"
    " cross_rank INTEGER, cross_size INTEGER, address TEXT, pid INTEGER, state TEXT,"
    " exit_code INTEGER, signal INTEGER, PRIMARY KEY(job_id, attempt, rank));"
    "CREATE TABLE IF NOT EXISTS events(id INTEGER PRIMARY KEY AUTOINCREMENT, job_id INTEGER,"
    " time REAL, kind TEXT, message TEXT);"
    "CREATE TABLE IF NOT EXISTS metrics(job_id INTEGER, attempt INTEGER, time REAL, data TEXT);"
    "CREATE INDEX IF NOT EXISTS events_job ON events(job_id);"
    "CREATE INDEX IF NOT EXISTS metrics_job ON metrics(job_id);";

rt_status cdb_open(coord *co, const char *path, char *err)
{
    if (sqlite3_open_v2(path, &co->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        rt_err(err, RT_ERR_IO, "cannot open state database %s: %s", path,
               co->db ? sqlite3_errmsg(co->db) : "out of memory");
        sqlite3_close(co->db);
        co->db = NULL;
        return RT_ERR_IO;
    }
    sqlite3_busy_timeout(co->db, 5000);
    char *msg = NULL;
    if (sqlite3_exec(co->db, SCHEMA, NULL, NULL, &msg) != SQLITE_OK) {
        rt_err(err, RT_ERR_IO, "state database %s: %s", path, msg ? msg : "?");
        sqlite3_free(msg);
        sqlite3_close(co->db);
        co->db = NULL;
        return RT_ERR_IO;
    }
    return RT_OK;
}

void cdb_close(coord *co)
{
    if (co->db)
        sqlite3_close(co->db);
    co->db = NULL;
}

/* Prepare, bind with a tiny format ("i" int64, "d" double, "t" text, "n"
 * null), step once; logs failures (the coordinator keeps serving). */
static void exec(coord *co, const char *sql, const char *types, ...)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(co->db, sql, -1, &st, NULL) != SQLITE_OK) {
        RT_ERROR("db", "prepare failed: %s (%s)", sqlite3_errmsg(co->db), sql);
        return;
    }
    va_list ap;
    va_start(ap, types);
    for (int i = 0; types[i]; i++) {
        switch (types[i]) {
        case 'i': sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t)); break;
        case 'd': sqlite3_bind_double(st, i + 1, va_arg(ap, double)); break;
        case 't': {
            const char *t = va_arg(ap, const char *);
            if (t)
                sqlite3_bind_text(st, i + 1, t, -1, SQLITE_TRANSIENT);
            else
                sqlite3_bind_null(st, i + 1);
            break;
        }
        default: sqlite3_bind_null(st, i + 1); break;
        }
    }
    va_end(ap);
    int r = sqlite3_step(st);
    if (r != SQLITE_DONE && r != SQLITE_ROW)
        RT_ERROR("db", "write failed: %s", sqlite3_errmsg(co->db));
    sqlite3_finalize(st);
}

void cdb_event(coord *co, int64_t job_id, const char *kind, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    RT_INFO("coord", "job %lld %s: %s", (long long)job_id, kind, msg);
    exec(co, "INSERT INTO events(job_id,time,kind,message) VALUES(?,?,?,?)", "idtt", job_id,
         coord_unix_now(), kind, msg);
}

void cdb_agent(coord *co, const agent *a)
{
    char caps[128];
    snprintf(caps, sizeof caps, "{\"cuda\":%s,\"nccl\":%s,\"rdma\":%s,\"gpus\":%d}",
             a->cuda ? "true" : "false", a->nccl ? "true" : "false", a->rdma ? "true" : "false",
             a->gpus);
    exec(co,
         "INSERT INTO agents(key,host_id,name,hostname,address,slots,caps,state,last_seen)"
         " VALUES(?,?,?,?,?,?,?,?,?) ON CONFLICT(key) DO UPDATE SET host_id=excluded.host_id,"
         " name=excluded.name, hostname=excluded.hostname, address=excluded.address,"
         " slots=excluded.slots, caps=excluded.caps, state=excluded.state,"
         " last_seen=excluded.last_seen",
         "tttttittd", a->key, a->host_id, a->name, a->hostname, a->addr, (int64_t)a->slots, caps,
         a->up ? "up" : "down", coord_unix_now());
}

static const char *type_name(int t) { return t == RT_JOB_EXEC ? "exec" : "train"; }

rt_status cdb_job_insert(coord *co, job *j)
{
    exec(co, "INSERT INTO jobs(name,type,np,state,reason,spec,attempt,restarts,created)"
             " VALUES(?,?,?,?,?,?,?,?,?)",
         "ttitttiid", j->name, type_name(j->type), (int64_t)j->np, job_state_name(j->state),
         j->reason, j->spec, (int64_t)j->attempt, (int64_t)j->restarts, j->created);
    j->id = sqlite3_last_insert_rowid(co->db);
    return j->id > 0 ? RT_OK : RT_ERR_IO;
}

void cdb_job_update(coord *co, const job *j)
{
    exec(co, "UPDATE jobs SET state=?, reason=?, attempt=?, restarts=?, started=?, finished=?,"
             " first_failure=?, progress=?, np=? WHERE id=?",
         "ttiiddttii", job_state_name(j->state), j->reason, (int64_t)j->attempt,
         (int64_t)j->restarts, j->started, j->finished, j->first_failure, j->progress,
         (int64_t)j->np, j->id);
}

void cdb_attempt(coord *co, const job *j, const char *state, const char *reason)
{
    bool done = strcmp(state, "running") != 0 && strcmp(state, "starting") != 0;
    exec(co,
         "INSERT INTO attempts(job_id,attempt,np,state,reason,started,finished) VALUES(?,?,?,?,?,?,?)"
         " ON CONFLICT(job_id,attempt) DO UPDATE SET state=excluded.state,"
         " reason=excluded.reason, finished=excluded.finished, np=excluded.np",
         "iiittdd", j->id, (int64_t)j->attempt, (int64_t)j->cur_np, state, reason,
         coord_unix_now(), done ? coord_unix_now() : 0.0);
}

static const char *rank_state_name(int s)
{
    static const char *n[] = {"none", "preparing", "prepared", "starting", "running", "exited"};
    return s >= 0 && s <= RS_EXITED ? n[s] : "?";
}

void cdb_rank(coord *co, const job *j, int r)
{
    const rank_slot *s = &j->ranks[r];
    exec(co,
         "INSERT OR REPLACE INTO placement(job_id,attempt,rank,agent,host_id,hostname,local_rank,"
         "local_size,cross_rank,cross_size,address,pid,state,exit_code,signal)"
         " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
         "iiitttiiiititii", j->id, (int64_t)j->attempt, (int64_t)r, s->agent_key, s->host_id,
         s->hostname, (int64_t)s->local_rank, (int64_t)s->local_size, (int64_t)s->cross_rank,
         (int64_t)s->cross_size, s->addr, s->pid, rank_state_name(s->state),
         (int64_t)s->exit_code, (int64_t)s->exit_signal);
}

void cdb_placement(coord *co, const job *j)
{
    exec(co, "BEGIN", "");
    for (int r = 0; r < j->cur_np; r++)
        cdb_rank(co, j, r);
    exec(co, "COMMIT", "");
}

void cdb_metric(coord *co, const job *j, const char *json)
{
    exec(co, "INSERT INTO metrics(job_id,attempt,time,data) VALUES(?,?,?,?)", "iidt", j->id,
         (int64_t)j->attempt, coord_unix_now(), json);
}

static int state_of(const char *name)
{
    for (int s = JOB_QUEUED; s <= JOB_CANCELLED; s++)
        if (strcmp(job_state_name(s), name) == 0)
            return s;
    return JOB_FAILED;
}

static char *dup_col(sqlite3_stmt *st, int c)
{
    const unsigned char *t = sqlite3_column_text(st, c);
    return t ? strdup((const char *)t) : NULL;
}

rt_status cdb_load_jobs(coord *co, char *err)
{
    sqlite3_stmt *st = NULL;
    const char *sql = "SELECT id,name,type,np,state,reason,spec,attempt,restarts,created,started,"
                      "first_failure,progress FROM jobs WHERE state NOT IN"
                      " ('succeeded','failed','cancelled') ORDER BY id";
    if (sqlite3_prepare_v2(co->db, sql, -1, &st, NULL) != SQLITE_OK)
        return rt_err(err, RT_ERR_IO, "loading jobs: %s", sqlite3_errmsg(co->db));
    job **tail = &co->jobs;
    while (*tail)
        tail = &(*tail)->next;
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        job *j = calloc(1, sizeof *j);
        if (!j)
            break;
        j->id = sqlite3_column_int64(st, 0);
        snprintf(j->name, sizeof j->name, "%s", (const char *)sqlite3_column_text(st, 1));
        j->type = strcmp((const char *)sqlite3_column_text(st, 2), "exec") == 0 ? RT_JOB_EXEC
                                                                               : RT_JOB_TRAIN;
        j->np = sqlite3_column_int(st, 3);
        j->state = state_of((const char *)sqlite3_column_text(st, 4));
        const unsigned char *why = sqlite3_column_text(st, 5);
        snprintf(j->reason, sizeof j->reason, "%s", why ? (const char *)why : "");
        j->spec = dup_col(st, 6);
        j->attempt = sqlite3_column_int(st, 7);
        j->restarts = sqlite3_column_int(st, 8);
        j->created = sqlite3_column_double(st, 9);
        j->started = sqlite3_column_double(st, 10);
        j->first_failure = dup_col(st, 11);
        j->progress = dup_col(st, 12);
        char perr[RT_ERR_LEN];
        if (!j->spec || rt_json_parse(j->spec, strlen(j->spec), &j->specj, perr) != RT_OK) {
            cdb_event(co, j->id, "failed", "stored job specification is unreadable");
            j->state = JOB_FAILED;
            snprintf(j->reason, sizeof j->reason, "stored job specification is unreadable");
            cdb_job_update(co, j);
            job_free(j);
            continue;
        }
        /* jobs that were placed are reconciled with the agents' reports */
        j->reconciling = j->state == JOB_STARTING || j->state == JOB_RUNNING;
        *tail = j;
        tail = &j->next;
        n++;
    }
    sqlite3_finalize(st);
    /* placement of the jobs being reconciled */
    for (job *j = co->jobs; j; j = j->next) {
        if (!j->reconciling)
            continue;
        sqlite3_stmt *ps = NULL;
        sqlite3_prepare_v2(co->db,
                           "SELECT rank,agent,host_id,hostname,local_rank,local_size,cross_rank,"
                           "cross_size,address,pid,state FROM placement WHERE job_id=? AND "
                           "attempt=? ORDER BY rank",
                           -1, &ps, NULL);
        sqlite3_bind_int64(ps, 1, j->id);
        sqlite3_bind_int64(ps, 2, j->attempt);
        int count = 0;
        rank_slot *slots = NULL;
        while (sqlite3_step(ps) == SQLITE_ROW) {
            int r = sqlite3_column_int(ps, 0);
            if (r >= count) {
                rank_slot *g = realloc(slots, (size_t)(r + 1) * sizeof *g);
                if (!g)
                    break;
                memset(g + count, 0, (size_t)(r + 1 - count) * sizeof *g);
                slots = g;
                count = r + 1;
            }
            rank_slot *s = &slots[r];
            snprintf(s->agent_key, sizeof s->agent_key, "%s", sqlite3_column_text(ps, 1));
            snprintf(s->host_id, sizeof s->host_id, "%s", sqlite3_column_text(ps, 2));
            snprintf(s->hostname, sizeof s->hostname, "%s", sqlite3_column_text(ps, 3));
            s->local_rank = sqlite3_column_int(ps, 4);
            s->local_size = sqlite3_column_int(ps, 5);
            s->cross_rank = sqlite3_column_int(ps, 6);
            s->cross_size = sqlite3_column_int(ps, 7);
            snprintf(s->addr, sizeof s->addr, "%s",
                     sqlite3_column_text(ps, 8) ? (const char *)sqlite3_column_text(ps, 8) : "");
            s->pid = sqlite3_column_int64(ps, 9);
            s->state = RS_NONE; /* unknown until an agent reports it */
        }
        sqlite3_finalize(ps);
        j->ranks = slots;
        j->cur_np = count;
    }
    if (n)
        RT_INFO("coord", "restored %d unfinished job(s) from the state database", n);
    return RT_OK;
}

/* ---- API documents ------------------------------------------------------------- */

static void row_to_json(rt_jw *w, sqlite3_stmt *st)
{
    rt_jw_obj(w);
    for (int c = 0; c < sqlite3_column_count(st); c++) {
        const char *name = sqlite3_column_name(st, c);
        rt_jw_key(w, name);
        switch (sqlite3_column_type(st, c)) {
        case SQLITE_INTEGER: rt_jw_int(w, sqlite3_column_int64(st, c)); break;
        case SQLITE_FLOAT: rt_jw_num(w, sqlite3_column_double(st, c)); break;
        case SQLITE_NULL: rt_jw_null(w); break;
        default: {
            const char *t = (const char *)sqlite3_column_text(st, c);
            /* stored JSON documents are inlined, everything else is text */
            bool is_json = (!strcmp(name, "first_failure") || !strcmp(name, "progress") ||
                            !strcmp(name, "data") || !strcmp(name, "caps")) &&
                           t && (t[0] == '{' || t[0] == '[');
            if (is_json)
                rt_jw_raw(w, t);
            else
                rt_jw_str(w, t);
        }
        }
    }
    rt_jw_obj_end(w);
}

static void rows(coord *co, rt_jw *w, const char *key, const char *sql, int64_t id)
{
    sqlite3_stmt *st = NULL;
    rt_jw_key(w, key);
    rt_jw_arr(w);
    if (sqlite3_prepare_v2(co->db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (id >= 0)
            sqlite3_bind_int64(st, 1, id);
        while (sqlite3_step(st) == SQLITE_ROW)
            row_to_json(w, st);
        sqlite3_finalize(st);
    }
    rt_jw_arr_end(w);
}

char *cdb_job_list(coord *co)
{
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rows(co, &w, "jobs",
         "SELECT id,name,type,np,state,reason,attempt,restarts,created,started,finished,progress"
         " FROM jobs ORDER BY id",
         -1);
    rt_jw_obj_end(&w);
    return rt_jw_take(&w, NULL);
}

char *cdb_job_detail(coord *co, int64_t id)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(co->db,
                           "SELECT id,name,type,np,state,reason,attempt,restarts,created,started,"
                           "finished,first_failure,progress FROM jobs WHERE id=?",
                           -1, &st, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return NULL;
    }
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_key(&w, "job");
    row_to_json(&w, st);
    sqlite3_finalize(st);
    rows(co, &w, "attempts",
         "SELECT attempt,np,state,reason,started,finished FROM attempts WHERE job_id=?"
         " ORDER BY attempt",
         id);
    rows(co, &w, "placement",
         "SELECT attempt,rank,agent,host_id,hostname,local_rank,local_size,cross_rank,cross_size,"
         "address,pid,state,exit_code,signal FROM placement WHERE job_id=? AND attempt="
         "(SELECT attempt FROM jobs WHERE id=job_id) ORDER BY rank",
         id);
    rows(co, &w, "events", "SELECT time,kind,message FROM events WHERE job_id=? ORDER BY id", id);
    rows(co, &w, "metrics",
         "SELECT attempt,time,data FROM metrics WHERE job_id=? ORDER BY rowid", id);
    rt_jw_obj_end(&w);
    return rt_jw_take(&w, NULL);
}
