/* coord_db.c — the coordinator's state in SQLite (write-ahead log,
 * synchronous=FULL: a commit survives a power cut): agents, jobs, attempts,
 * rank placement, events and metrics.  With coord_db_schema.c (the schema
 * and its migrations), coord_db_sweep.c and coord_seal.c, the only files
 * that speak SQL.  The
 * scheduler's writes of one event are applied in one transaction, before
 * any frame or reply about them goes out; after a restart cdb_load() brings
 * back the known agents and the unfinished jobs.  Job ids are never reused:
 * the next one is stored. */
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "rt_log.h"

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
    int version = 0;
    sqlite3_stmt *v = NULL;
    if (sqlite3_prepare_v2(co->db, "PRAGMA user_version", -1, &v, NULL) == SQLITE_OK &&
        sqlite3_step(v) == SQLITE_ROW)
        version = sqlite3_column_int(v, 0);
    sqlite3_finalize(v);
    rt_status st = cdb_schema(co, path, version, err);
    if (st != RT_OK) {
        sqlite3_close(co->db);
        co->db = NULL;
    }
    return st;
}

void cdb_close(coord *co)
{
    if (co->db)
        sqlite3_close(co->db);
    co->db = NULL;
}

/* the terminal states' names, for "state IN (?, ?, ?)" */
_Static_assert(RT_JS_COUNT - RT_JS_SUCCEEDED == 3, "three terminal job states");
#define TERMINAL_NAMES                                                   \
    rt_job_state_name(RT_JS_SUCCEEDED), rt_job_state_name(RT_JS_FAILED), \
        rt_job_state_name(RT_JS_CANCELLED)

bool cdb_exec(coord *co, const char *sql, const char *types, ...)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(co->db, sql, -1, &st, NULL) != SQLITE_OK) {
        RT_ERROR("db", "prepare failed: %s (%s)", sqlite3_errmsg(co->db), sql);
        co->db_errors++;
        return false;
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
    sqlite3_finalize(st);
    if (r != SQLITE_DONE && r != SQLITE_ROW) {
        RT_ERROR("db", "write failed: %s", sqlite3_errmsg(co->db));
        co->db_errors++;
        return false;
    }
    return true;
}

/* ---- retention ---------------------------------------------------------------- */

int cdb_prune_jobs(coord *co, double cutoff)
{
    if (!co->db)
        return 0;
    /* finished before cutoff and no longer in the scheduler's memory */
    bool ok = sqlite3_exec(co->db, "BEGIN; CREATE TEMP TABLE IF NOT EXISTS gone(id INTEGER PRIMARY"
                                   " KEY); DELETE FROM gone;", NULL, NULL, NULL) == SQLITE_OK;
    ok = ok && cdb_exec(co,
                        "INSERT INTO gone SELECT id FROM jobs WHERE state IN (?, ?, ?) AND "
                        "finished IS NOT NULL AND finished < ?",
                        "tttd", TERMINAL_NAMES, cutoff);
    for (sc_job *j = co->S.jobs; ok && j; j = j->next)
        ok = cdb_exec(co, "DELETE FROM gone WHERE id = ?", "i", j->id);
    int n = 0;
    sqlite3_stmt *c = NULL;
    if (ok && sqlite3_prepare_v2(co->db, "SELECT COUNT(*) FROM gone", -1, &c, NULL) == SQLITE_OK &&
        sqlite3_step(c) == SQLITE_ROW)
        n = sqlite3_column_int(c, 0);
    sqlite3_finalize(c);
    static const char *const tables[] = {"events",   "metrics", "results", "placement",
                                         "attempts", "trials",  "sweeps"};
    char sql[160];
    for (size_t i = 0; ok && n > 0 && i < RT_ARRAY_LEN(tables); i++) {
        snprintf(sql, sizeof sql, "DELETE FROM %s WHERE job_id IN (SELECT id FROM gone)", tables[i]);
        ok = cdb_exec(co, sql, "");
    }
    ok = ok && (n == 0 || cdb_exec(co, "DELETE FROM jobs WHERE id IN (SELECT id FROM gone)", ""));
    if (!ok || sqlite3_exec(co->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_exec(co->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    if (n > 0) /* the freed pages back to the file system */
        sqlite3_exec(co->db, "PRAGMA incremental_vacuum", NULL, NULL, NULL);
    return n;
}

bool cdb_forget_agent(coord *co, const char *key)
{
    return cdb_exec(co, "DELETE FROM agents WHERE key = ?", "t", key);
}

/* ---- writes ------------------------------------------------------------------- */

static bool save_agent(coord *co, const sc_agent *a)
{
    return cdb_exec(
        co,
        "INSERT INTO agents(key,host_id,name,hostname,address,slots,caps,state,last_seen,"
        "draining) VALUES(?,?,?,?,?,?,?,?,?,?) ON CONFLICT(key) DO UPDATE SET"
        " host_id=excluded.host_id, name=excluded.name, hostname=excluded.hostname,"
        " address=excluded.address, slots=excluded.slots, caps=excluded.caps,"
        " state=excluded.state, last_seen=excluded.last_seen, draining=excluded.draining",
        "tttttittdi", a->key, a->host_id, a->name, a->hostname, a->addr, (int64_t)a->slots,
        a->caps ? a->caps : "{}", a->up ? "up" : "down", a->since, (int64_t)a->draining);
}

static bool save_job(coord *co, const sc_job *j)
{
    char *spec = cseal_spec(co, j->id, j->spec); /* its env values sealed */
    if (!spec)
        return false;
    bool ok =
        cdb_exec(co,
                 "INSERT INTO jobs(id,name,type,np,state,reason,spec,attempt,restarts,created,"
                 "started,finished,first_failure,progress,user,priority,held,queued_at,"
                 "attempt_started,queue_pos,last_epoch,unix_user,sweep,trial,idem_key)"
                 " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
                 " ON CONFLICT(id) DO UPDATE SET state=excluded.state, reason=excluded.reason,"
                 " attempt=excluded.attempt, restarts=excluded.restarts, started=excluded.started,"
                 " finished=excluded.finished, first_failure=excluded.first_failure,"
                 " progress=excluded.progress, held=excluded.held, queued_at=excluded.queued_at,"
                 " attempt_started=excluded.attempt_started, queue_pos=excluded.queue_pos,"
                 " last_epoch=excluded.last_epoch",
                 "ittitttiidddtttiidditt"
                 "iit",
                 j->id, j->name, job_type_name(j->type), (int64_t)j->np, job_state_name(j->state),
                 j->reason, spec, (int64_t)j->attempt, (int64_t)j->restarts, j->created, j->started,
                 j->finished, j->first_failure, j->progress, j->user, (int64_t)j->priority,
                 (int64_t)j->held, j->queued_at, j->attempt_started, (int64_t)j->queue_pos,
                 j->last_epoch, j->unix_user[0] ? j->unix_user : NULL, j->sweep_id,
                 (int64_t)j->trial, j->idem_key[0] ? j->idem_key : NULL) &&
        cdb_exec(co, "INSERT OR REPLACE INTO meta(key,value) VALUES('next_job_id',?)", "i",
                 co->S.next_id);
    free(spec);
    return ok;
}

static bool save_rank(coord *co, const sc_job *j, int r)
{
    const sc_rank *s = &j->ranks[r];
    return cdb_exec(
        co,
        "INSERT OR REPLACE INTO placement(job_id,attempt,rank,agent,host_id,hostname,"
        "local_rank,local_size,cross_rank,cross_size,address,pid,state,exit_code,signal,gpu)"
        " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        "iiitttiiiititiit", j->id, (int64_t)j->attempt, (int64_t)r, s->agent_key, s->host_id,
        s->hostname, (int64_t)s->local_rank, (int64_t)s->local_size, (int64_t)s->cross_rank,
        (int64_t)s->cross_size, s->addr, s->pid, rank_state_name(s->state), (int64_t)s->exit_code,
        (int64_t)s->exit_signal, s->gpu);
}

static bool apply_one(coord *co, const sc_action *a, double wall)
{
    sc_job *j = a->job ? sched_job(&co->S, a->job) : NULL;
    switch (a->kind) {
    case SC_SEND: return true;
    case SC_SAVE_AGENT: {
        const sc_agent *ag = sched_agent(&co->S, a->agent);
        return !ag || save_agent(co, ag);
    }
    case SC_SAVE_JOB: return !j || save_job(co, j);
    case SC_SAVE_ATTEMPT: {
        bool done = strcmp(a->tag, "running") != 0 && strcmp(a->tag, "starting") != 0;
        return cdb_exec(co,
                        "INSERT INTO attempts(job_id,attempt,np,state,reason,started,finished)"
                        " VALUES(?,?,?,?,?,?,?) ON CONFLICT(job_id,attempt) DO UPDATE SET"
                        " state=excluded.state, reason=excluded.reason, finished=excluded.finished,"
                        " np=excluded.np",
                        "iiittdd", a->job, (int64_t)a->attempt, (int64_t)(j ? j->cur_np : 0),
                        a->tag, a->text, wall, done ? wall : 0.0);
    }
    case SC_SAVE_RANKS: {
        bool ok = true;
        for (int r = 0; j && r < j->cur_np; r++)
            ok = save_rank(co, j, r) && ok;
        return ok;
    }
    case SC_SAVE_RANK: return !j || a->rank < 0 || a->rank >= j->cur_np || save_rank(co, j, a->rank);
    case SC_EVENT:
        return cdb_exec(co, "INSERT INTO events(job_id,time,kind,message) VALUES(?,?,?,?)", "idtt",
                        a->job, wall, a->tag, a->text ? a->text : "");
    case SC_RESULT:
        return cdb_exec(
            co, "INSERT OR REPLACE INTO results(job_id,attempt,rank,time,value) VALUES(?,?,?,?,?)",
            "iiidt", a->job, (int64_t)a->attempt, (int64_t)a->rank, wall, a->text);
    case SC_METRIC:
        return cdb_exec(co, "INSERT INTO metrics(job_id,attempt,time,data) VALUES(?,?,?,?)", "iidt",
                        a->job, (int64_t)a->attempt, wall, a->text);
    case SC_SAVE_TRIAL:
        return !j || cdb_save_trial(co, j, a->rank);
    }
    return true;
}

rt_status cdb_apply(coord *co, const sc_action *acts, int n)
{
    int writes = 0;
    for (int i = 0; i < n; i++)
        writes += acts[i].kind != SC_SEND;
    if (writes == 0)
        return RT_OK;
    double wall = coord_now().wall;
    bool ok = cdb_exec(co, "BEGIN IMMEDIATE", "");
    for (int i = 0; ok && i < n; i++)
        ok = apply_one(co, &acts[i], wall);
    if (ok && cdb_exec(co, "COMMIT", ""))
        return RT_OK;
    sqlite3_exec(co->db, "ROLLBACK", NULL, NULL, NULL);
    RT_ERROR("db", "the state database could not record %d change%s: they live only in memory "
                   "until the next write succeeds", writes, writes == 1 ? "" : "s");
    return RT_ERR_IO;
}

/* ---- loading ----------------------------------------------------------------------- */

const char *cdb_col(sqlite3_stmt *st, int c)
{
    const unsigned char *t = sqlite3_column_text(st, c);
    return t ? (const char *)t : NULL;
}

rt_status cdb_load(coord *co, sc_clock now, char *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(co->db,
                           "SELECT key,host_id,name,hostname,slots,draining,last_seen FROM agents"
                           " ORDER BY key",
                           -1, &st, NULL) != SQLITE_OK)
        return rt_err(err, RT_ERR_IO, "loading agents: %s", sqlite3_errmsg(co->db));
    while (sqlite3_step(st) == SQLITE_ROW)
        if (cdb_col(st, 0))
            sched_restore_agent(&co->S, cdb_col(st, 0), cdb_col(st, 1), cdb_col(st, 2),
                                cdb_col(st, 3), sqlite3_column_int(st, 4),
                                sqlite3_column_int(st, 5) != 0, sqlite3_column_double(st, 6));
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(co->db, "SELECT value FROM meta WHERE key='next_job_id'", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        co->S.next_id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    const char *sql =
        "SELECT id,spec,user,state,reason,attempt,restarts,held,created,started,"
        "queued_at,attempt_started,progress,last_epoch,unix_user FROM jobs WHERE state NOT IN"
        " (?, ?, ?) ORDER BY id";
    if (sqlite3_prepare_v2(co->db, sql, -1, &st, NULL) != SQLITE_OK)
        return rt_err(err, RT_ERR_IO, "loading jobs: %s", sqlite3_errmsg(co->db));
    for (int s = RT_JS_SUCCEEDED; s < RT_JS_COUNT; s++)
        sqlite3_bind_text(st, s - RT_JS_SUCCEEDED + 1, rt_job_state_name(s), -1, SQLITE_STATIC);
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        int state = job_state_parse(cdb_col(st, 3));
        char why[RT_ERR_LEN] = "";
        char *spec = state < 0 ? NULL : cseal_open_spec(co, id, cdb_col(st, 1), why);
        sc_job *j =
            !spec ? NULL
                  : sched_restore_job(&co->S, id, spec, cdb_col(st, 2), state, cdb_col(st, 4),
                                      sqlite3_column_int(st, 5), sqlite3_column_int(st, 6),
                                      sqlite3_column_int(st, 7) != 0, sqlite3_column_double(st, 8),
                                      sqlite3_column_double(st, 9), sqlite3_column_double(st, 10),
                                      sqlite3_column_double(st, 11), now, why);
        if (spec)
            OPENSSL_cleanse(spec, strlen(spec));
        free(spec);
        if (!j) {
            RT_ERROR("db", "job %lld cannot be restored (%s): marked failed", (long long)id,
                     why[0] ? why : "unknown state");
            char reason[RT_ERR_LEN + 64];
            snprintf(reason, sizeof reason, "its stored record is unreadable%s%s",
                     why[0] ? ": " : "", why);
            cdb_exec(co, "UPDATE jobs SET state='failed', reason=?, finished=? WHERE id=?", "tdi",
                     reason, now.wall, id);
            continue;
        }
        /* the latest reports, shown until the next ones come */
        if (cdb_col(st, 12))
            j->progress = strdup(cdb_col(st, 12));
        if (cdb_col(st, 13))
            j->last_epoch = strdup(cdb_col(st, 13));
        snprintf(j->unix_user, sizeof j->unix_user, "%s", cdb_col(st, 14) ? cdb_col(st, 14) : "");
        n++;
    }
    sqlite3_finalize(st);
    /* the placement of the jobs being reconciled */
    for (sc_job *j = co->S.jobs; j; j = j->next) {
        if (!j->reconciling)
            continue;
        sqlite3_stmt *ps = NULL;
        sqlite3_prepare_v2(co->db,
                           "SELECT rank,agent,host_id,hostname,local_rank,local_size,cross_rank,"
                           "cross_size,address,pid,state,exit_code,signal,gpu FROM placement"
                           " WHERE job_id=? AND attempt=?"
                           " ORDER BY rank",
                           -1, &ps, NULL);
        sqlite3_bind_int64(ps, 1, j->id);
        sqlite3_bind_int64(ps, 2, j->attempt);
        while (sqlite3_step(ps) == SQLITE_ROW)
            sched_restore_rank(&co->S, j, sqlite3_column_int(ps, 0), cdb_col(ps, 1), cdb_col(ps, 2),
                               cdb_col(ps, 3), sqlite3_column_int(ps, 4), sqlite3_column_int(ps, 5),
                               sqlite3_column_int(ps, 6), sqlite3_column_int(ps, 7), cdb_col(ps, 8),
                               sqlite3_column_int64(ps, 9), cdb_col(ps, 10),
                               sqlite3_column_int(ps, 11), sqlite3_column_int(ps, 12),
                               cdb_col(ps, 13));
        sqlite3_finalize(ps);
    }
    cdb_load_sweeps(co);
    if (n)
        RT_INFO("coord", "restored %d unfinished job(s) from the state database", n);
    return RT_OK;
}

/* ---- API documents ------------------------------------------------------------------ */

/* A row's first n columns as the keys of an open object. */
static void row_fields(rt_jw *w, sqlite3_stmt *st, int n)
{
    for (int c = 0; c < n; c++) {
        const char *name = sqlite3_column_name(st, c);
        rt_jw_key(w, name);
        switch (sqlite3_column_type(st, c)) {
        case SQLITE_INTEGER: rt_jw_int(w, sqlite3_column_int64(st, c)); break;
        case SQLITE_FLOAT: rt_jw_num(w, sqlite3_column_double(st, c)); break;
        case SQLITE_NULL: rt_jw_null(w); break;
        default: {
            const char *t = cdb_col(st, c);
            /* stored JSON documents are inlined, everything else is text */
            bool is_json =
                (!strcmp(name, "first_failure") || !strcmp(name, "progress") ||
                 !strcmp(name, "last_epoch") || !strcmp(name, "params") ||
                 !strcmp(name, "rung_values") || !strcmp(name, "data") || !strcmp(name, "caps")) &&
                t && (t[0] == '{' || t[0] == '[');
            if (is_json || (!strcmp(name, "value") && t && *t)) /* a result: any JSON value */
                rt_jw_raw(w, t);
            else
                rt_jw_str(w, t);
        }
        }
    }
}

void cdb_row_json(rt_jw *w, sqlite3_stmt *st)
{
    rt_jw_obj(w);
    row_fields(w, st, sqlite3_column_count(st));
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
            cdb_row_json(w, st);
        sqlite3_finalize(st);
    }
    rt_jw_arr_end(w);
}

/* rows() of a page: ?2 the rows to skip (newest first), ?3 how many */
static void rows_page(coord *co, rt_jw *w, const char *key, const char *sql, int64_t id,
                      const cdb_page *pg)
{
    sqlite3_stmt *st = NULL;
    rt_jw_key(w, key);
    rt_jw_arr(w);
    if (sqlite3_prepare_v2(co->db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, pg->skip);
        sqlite3_bind_int64(st, 3, pg->limit);
        while (sqlite3_step(st) == SQLITE_ROW)
            cdb_row_json(w, st);
        sqlite3_finalize(st);
    }
    rt_jw_arr_end(w);
}

static int64_t count_rows(coord *co, const char *sql, int64_t id)
{
    sqlite3_stmt *st = NULL;
    int64_t n = 0;
    if (sqlite3_prepare_v2(co->db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, id);
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return n;
}

#define JOB_COLUMNS                                                                              \
    "id,name,type,np,state,reason,attempt,restarts,created,started,finished,user,priority,held," \
    "queue_pos,progress,last_epoch,unix_user,sweep,trial"

char *cdb_job_list(coord *co, const cdb_job_filter *f)
{
    sqlite3_stmt *st = NULL;
    const char *sql = "SELECT " JOB_COLUMNS " FROM jobs WHERE (?1 IS NULL OR state=?1) AND"
                      " (?2 IS NULL OR user=?2) AND created>=?3 AND (?4=0 OR id<?4)"
                      " ORDER BY id DESC LIMIT ?5";
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_key(&w, "jobs");
    rt_jw_arr(&w);
    int64_t last = 0;
    int count = 0;
    if (sqlite3_prepare_v2(co->db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (f->state)
            sqlite3_bind_text(st, 1, f->state, -1, SQLITE_TRANSIENT);
        if (f->user)
            sqlite3_bind_text(st, 2, f->user, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(st, 3, f->since);
        sqlite3_bind_int64(st, 4, f->before_id);
        sqlite3_bind_int64(st, 5, f->limit > 0 ? f->limit : 100);
        while (sqlite3_step(st) == SQLITE_ROW) {
            cdb_row_json(&w, st);
            last = sqlite3_column_int64(st, 0);
            count++;
        }
        sqlite3_finalize(st);
    }
    rt_jw_arr_end(&w);
    /* the next page: the jobs older than the last one listed */
    if (count == (f->limit > 0 ? f->limit : 100))
        rt_jw_kint(&w, "next_before", last);
    rt_jw_obj_end(&w);
    return rt_jw_take(&w, NULL);
}

int64_t cdb_job_by_key(coord *co, const char *user, const char *key)
{
    sqlite3_stmt *st = NULL;
    int64_t id = 0;
    if (sqlite3_prepare_v2(co->db, "SELECT id FROM jobs WHERE user = ? AND idem_key = ?", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            id = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return id;
}

char *cdb_job_detail(coord *co, int64_t id, const cdb_page *events, const cdb_page *metrics)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(co->db, "SELECT " JOB_COLUMNS ",first_failure,spec FROM jobs WHERE id=?",
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
    rt_jw_obj(&w);
    const int last = sqlite3_column_count(st) - 1; /* the spec */
    row_fields(&w, st, last);
    /* the spec with its environment opened: the API hides the values from
     * whoever may not see them (auth_hide_env) */
    const char *stored = cdb_col(st, last);
    char why[RT_ERR_LEN];
    char *spec = stored ? cseal_open_spec(co, id, stored, why) : NULL;
    if (stored && !spec)
        RT_WARN("db", "job %lld: %s (shown sealed)", (long long)id, why);
    rt_jw_key(&w, "spec");
    rt_jw_str(&w, spec ? spec : stored);
    if (spec)
        OPENSSL_cleanse(spec, strlen(spec));
    free(spec);
    sqlite3_finalize(st);
    rt_jw_obj_end(&w);
    rows(co, &w, "attempts",
         "SELECT attempt,np,state,reason,started,finished FROM attempts WHERE job_id=?"
         " ORDER BY attempt",
         id);
    rows(co, &w, "placement",
         "SELECT attempt,rank,agent,host_id,hostname,local_rank,local_size,cross_rank,cross_size,"
         "address,pid,state,exit_code,signal,gpu FROM placement WHERE job_id=? AND attempt="
         "(SELECT attempt FROM jobs WHERE id=job_id) ORDER BY rank",
         id);
    rows(co, &w, "results",
         "SELECT rank,time,value FROM results WHERE job_id=? AND attempt="
         "(SELECT attempt FROM jobs WHERE id=job_id) ORDER BY rank",
         id);
    /* a page of events and of epochs (the newest CDB_DETAIL_EVENTS and
     * CDB_DETAIL_METRICS unless asked for older ones), in order, and how many
     * there are: a job that floods them (issue 28.5: one answer was 12 MB)
     * does not make the answer unbounded, and the rest can still be read */
    rows_page(co, &w, "events",
              "SELECT time,kind,message FROM (SELECT id,time,kind,message FROM events WHERE"
              " job_id=?1 ORDER BY id DESC LIMIT ?3 OFFSET ?2) ORDER BY id",
              id, events);
    rt_jw_kint(&w, "events_total", count_rows(co, "SELECT COUNT(*) FROM events WHERE job_id=?", id));
    rt_jw_kint(&w, "events_skip", events->skip);
    rows_page(co, &w, "metrics",
              "SELECT attempt,time,data FROM (SELECT rowid AS r,attempt,time,data FROM metrics"
              " WHERE job_id=?1 ORDER BY rowid DESC LIMIT ?3 OFFSET ?2) ORDER BY r",
              id, metrics);
    rt_jw_kint(&w, "metrics_total", count_rows(co, "SELECT COUNT(*) FROM metrics WHERE job_id=?", id));
    rt_jw_kint(&w, "metrics_skip", metrics->skip);
    cdb_sweep_detail(co, &w, id);
    rt_jw_obj_end(&w);
    return rt_jw_take(&w, NULL);
}

int cdb_job_counts(coord *co, int counts[JOB_CANCELLED + 1])
{
    memset(counts, 0, sizeof(int) * (JOB_CANCELLED + 1));
    sqlite3_stmt *st = NULL;
    int total = 0;
    if (sqlite3_prepare_v2(co->db, "SELECT state, COUNT(*) FROM jobs GROUP BY state", -1, &st,
                           NULL) != SQLITE_OK)
        return 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int s = job_state_parse(cdb_col(st, 0));
        if (s >= 0) {
            counts[s] = sqlite3_column_int(st, 1);
            total += counts[s];
        }
    }
    sqlite3_finalize(st);
    return total;
}

bool cdb_job_ranks(coord *co, int64_t id, int64_t attempt, int rank,
                   void (*fn)(void *user, int rank, const char *agent, int64_t attempt),
                   void *user)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(co->db,
                           "SELECT j.id, p.rank, p.agent, p.attempt FROM jobs j LEFT JOIN placement"
                           " p ON j.id=p.job_id AND p.attempt=(CASE WHEN ?2>0 THEN ?2 ELSE"
                           " j.attempt END) WHERE j.id=?1 ORDER BY p.rank",
                           -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, attempt);
    bool found = false;
    while (sqlite3_step(st) == SQLITE_ROW) {
        found = true;
        if (sqlite3_column_type(st, 1) == SQLITE_NULL)
            continue; /* a job that never started */
        int r = sqlite3_column_int(st, 1);
        if (rank < 0 || r == rank)
            fn(user, r, cdb_col(st, 2), sqlite3_column_int64(st, 3));
    }
    sqlite3_finalize(st);
    return found;
}

/* ---- API tokens ------------------------------------------------------------------ */

rt_status cdb_token_insert(coord *co, const char *name, const char *role, const char *hash,
                           const char *unix_user, int64_t *id, char *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(co->db, "INSERT INTO tokens(name,role,hash,created,unix_user) VALUES(?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return rt_err(err, RT_ERR_IO, "state database: %s", sqlite3_errmsg(co->db));
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, role, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 4, coord_now().wall);
    if (unix_user)
        sqlite3_bind_text(st, 5, unix_user, -1, SQLITE_TRANSIENT);
    int r = sqlite3_step(st);
    sqlite3_finalize(st);
    if (r == SQLITE_CONSTRAINT)
        return rt_err(err, RT_ERR_EXISTS, "a token named '%s' exists (names are never reused)", name);
    if (r != SQLITE_DONE) {
        co->db_errors++;
        return rt_err(err, RT_ERR_IO, "state database: %s", sqlite3_errmsg(co->db));
    }
    *id = sqlite3_last_insert_rowid(co->db);
    return RT_OK;
}

rt_status cdb_token_revoke(coord *co, const char *id_or_name, int64_t *id, char *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(co->db,
                           "SELECT id, revoked FROM tokens WHERE name=?1 OR CAST(id AS TEXT)=?1",
                           -1, &st, NULL) != SQLITE_OK)
        return rt_err(err, RT_ERR_IO, "state database: %s", sqlite3_errmsg(co->db));
    sqlite3_bind_text(st, 1, id_or_name, -1, SQLITE_TRANSIENT);
    bool found = sqlite3_step(st) == SQLITE_ROW;
    *id = found ? sqlite3_column_int64(st, 0) : 0;
    bool revoked = found && sqlite3_column_type(st, 1) != SQLITE_NULL;
    sqlite3_finalize(st);
    if (!found)
        return rt_err(err, RT_ERR_NOTFOUND, "no token '%s'", id_or_name);
    if (revoked)
        return RT_OK;
    if (!cdb_exec(co, "UPDATE tokens SET revoked=? WHERE id=?", "di", coord_now().wall, *id))
        return rt_err(err, RT_ERR_IO, "state database: the revocation was not recorded");
    return RT_OK;
}

char *cdb_token_list(coord *co)
{
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rows(co, &w, "tokens", "SELECT id,name,role,created,revoked,unix_user FROM tokens ORDER BY id", -1);
    rt_jw_obj_end(&w);
    return rt_jw_take(&w, NULL);
}

rt_status cdb_token_load(coord *co, char *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(co->db, "SELECT id,name,role,hash,unix_user FROM tokens WHERE revoked IS NULL",
                           -1, &st, NULL) != SQLITE_OK)
        return rt_err(err, RT_ERR_IO, "state database: %s", sqlite3_errmsg(co->db));
    rt_status s = RT_OK;
    while (s == RT_OK && sqlite3_step(st) == SQLITE_ROW) {
        auth_role role = auth_role_parse(cdb_col(st, 2));
        const char *hash = cdb_col(st, 3);
        if (role == ROLE_NONE || !hash || strlen(hash) != 64) {
            RT_WARN("db", "token %lld has a role or hash this coordinator does not know: ignored",
                    (long long)sqlite3_column_int64(st, 0));
            continue;
        }
        s = auth_add(co, sqlite3_column_int64(st, 0), cdb_col(st, 1) ? cdb_col(st, 1) : "?", role,
                     hash, cdb_col(st, 4));
    }
    sqlite3_finalize(st);
    return s == RT_OK ? RT_OK : rt_err(err, s, "out of memory");
}
