/* coord_db_schema.c — the state database's settings, its schema and the
 * migrations of older files to it (cdb_open, coord_db.c, calls cdb_schema
 * on every start). */
#include <stdio.h>

#include "coord.h"
#include "rt_log.h"

/* version 1: the first schema; version 2 adds the queue (user, priority,
 * held, queue times and position), drained agents and the stored next id;
 * 3 results, GPUs and tokens; 4 incremental vacuum (the file shrinks as
 * job_retention deletes old jobs); 5 a job's last epoch line; 6 Unix users;
 * 7 sweeps (coord_db_sweep.c): their trials, and a job's sweep; 8 the
 * jobs' environment values sealed (coord_seal.c: no table changes, the
 * values stored in clear before are sealed once) */
#define SCHEMA_VERSION 9

static const char *SCHEMA_V1 =
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

static const char *MIGRATE_V2 =
    "ALTER TABLE jobs ADD COLUMN user TEXT;"
    "ALTER TABLE jobs ADD COLUMN priority INTEGER DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN held INTEGER DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN queued_at REAL;"
    "ALTER TABLE jobs ADD COLUMN attempt_started REAL;"
    "ALTER TABLE jobs ADD COLUMN queue_pos INTEGER DEFAULT 0;"
    "ALTER TABLE agents ADD COLUMN draining INTEGER DEFAULT 0;"
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER);"
    "INSERT OR IGNORE INTO meta(key, value) SELECT 'next_job_id', COALESCE(MAX(id), 0) + 1"
    " FROM jobs;"
    "CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);";

static const char *MIGRATE_V3 =
    "CREATE TABLE IF NOT EXISTS results(job_id INTEGER, attempt INTEGER, rank INTEGER, time REAL,"
    " value TEXT, PRIMARY KEY(job_id, attempt, rank));"
    "ALTER TABLE placement ADD COLUMN gpu TEXT;"
    "CREATE TABLE IF NOT EXISTS tokens(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE,"
    " role TEXT, hash TEXT, created REAL, revoked REAL);";

static rt_status run(coord *co, const char *sql, const char *what, char *err)
{
    char *msg = NULL;
    if (sqlite3_exec(co->db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return RT_OK;
    rt_err(err, RT_ERR_IO, "state database: %s: %s", what, msg ? msg : sqlite3_errmsg(co->db));
    sqlite3_free(msg);
    return RT_ERR_IO;
}

/* A migration to schema `to` as one transaction: sql, then sql2 (either
 * may be NULL), then the version mark; rolled back whole when a step fails. */
static rt_status migrate(coord *co, int to, const char *sql, const char *sql2, char *err)
{
    char what[40], mark[48];
    snprintf(what, sizeof what, "migration to schema %d", to);
    snprintf(mark, sizeof mark, "PRAGMA user_version = %d; COMMIT", to);
    rt_status st = run(co, "BEGIN", what, err);
    if (st == RT_OK && sql)
        st = run(co, sql, what, err);
    if (st == RT_OK && sql2)
        st = run(co, sql2, what, err);
    if (st == RT_OK)
        st = run(co, mark, what, err);
    if (st != RT_OK)
        sqlite3_exec(co->db, "ROLLBACK", NULL, NULL, NULL);
    return st;
}

rt_status cdb_schema(coord *co, const char *path, int version, char *err)
{
    /* a new file: pages freed by deletions go back (before any table exists) */
    rt_status st =
        version == 0 ? run(co, "PRAGMA auto_vacuum=INCREMENTAL", "settings", err) : RT_OK;
    if (st == RT_OK)
        /* secure_delete: what a deleted or rewritten row held (a job's sealed
         * environment, a revoked token's hash) is zeroed in the file */
        st = run(co, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA secure_delete=ON;",
                 "settings", err);
    if (st == RT_OK && version > SCHEMA_VERSION)
        st = rt_err(err, RT_ERR_INVALID,
                    "state database %s is of a newer ringtrain (schema %d; this one knows %d)",
                    path, version, SCHEMA_VERSION);
    if (st == RT_OK && version < 2)
        st = migrate(co, 2, SCHEMA_V1, MIGRATE_V2, err);
    if (st == RT_OK && version < 3)
        st = migrate(co, 3, MIGRATE_V3, NULL, err);
    if (st == RT_OK && version < 4) {
        /* an older file: switched to incremental vacuum by one VACUUM */
        if (version > 0)
            st = run(co, "PRAGMA auto_vacuum=INCREMENTAL; VACUUM", "migration to schema 4", err);
        if (st == RT_OK)
            st = run(co, "PRAGMA user_version = 4", "migration", err);
    }
    if (st == RT_OK && version < 5)
        st = migrate(co, 5, "ALTER TABLE jobs ADD COLUMN last_epoch TEXT", NULL, err);
    if (st == RT_OK && version < 6) /* the Unix user a token's jobs run as (issue 28.2) */
        st = migrate(co, 6,
                     "ALTER TABLE tokens ADD COLUMN unix_user TEXT;"
                     " ALTER TABLE jobs ADD COLUMN unix_user TEXT",
                     NULL, err);
    if (st == RT_OK && version < 7)
        st = migrate(co, 7, CDB_SWEEP_SCHEMA, NULL, err);
    if (st == RT_OK && version < 8) {
        st = run(co, "BEGIN", "migration", err);
        if (st == RT_OK)
            st = cseal_migrate(co, err);
        if (st == RT_OK)
            st = run(co, "PRAGMA user_version = 8; COMMIT", "migration", err);
        if (st != RT_OK)
            sqlite3_exec(co->db, "ROLLBACK", NULL, NULL, NULL);
        /* the clear values' old pages leave the write-ahead log */
        if (st == RT_OK && version > 0)
            st = run(co, "PRAGMA wal_checkpoint(TRUNCATE)", "migration to schema 8", err);
    }
    if (st == RT_OK && version < 9) { /* submissions' Idempotency-Key, unique per user */
        sqlite3_stmt *c = NULL;       /* the column, unless a file marked older has it */
        bool has = sqlite3_prepare_v2(co->db, "SELECT idem_key FROM jobs LIMIT 0", -1, &c, NULL) ==
                   SQLITE_OK;
        sqlite3_finalize(c);
        st = migrate(co, 9, has ? NULL : "ALTER TABLE jobs ADD COLUMN idem_key TEXT",
                     "CREATE UNIQUE INDEX IF NOT EXISTS jobs_idem ON jobs(user, idem_key)", err);
        if (st == RT_OK && version > 0)
            RT_INFO("db", "state database %s upgraded to schema %d", path, SCHEMA_VERSION);
    }
    return st;
}
