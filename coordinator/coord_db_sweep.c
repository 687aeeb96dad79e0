/* coord_db_sweep.c — the sweeps' part of the state database (coord_db.c
 * holds the rest and the transaction): one row per trial (its job, values,
 * state, rungs, best value) and one per sweep (its monitor, rungs, last step
 * and best trial), written with the job rows of the same event; read back
 * for the unfinished sweeps after a restart, and for the API. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "rt_log.h"

const char *const CDB_SWEEP_SCHEMA =
    "CREATE TABLE IF NOT EXISTS trials(job_id INTEGER, trial INTEGER, trial_job INTEGER,"
    " params TEXT, state TEXT, rung INTEGER, epochs INTEGER, best REAL, best_epoch INTEGER,"
    " rung_values TEXT, reason TEXT, PRIMARY KEY(job_id, trial));"
    "CREATE TABLE IF NOT EXISTS sweeps(job_id INTEGER PRIMARY KEY, trials INTEGER,"
    " monitor TEXT, mode TEXT, rungs TEXT, finish_job INTEGER, best_trial INTEGER);"
    "ALTER TABLE jobs ADD COLUMN sweep INTEGER DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN trial INTEGER DEFAULT 0;"
    "CREATE INDEX IF NOT EXISTS jobs_sweep ON jobs(sweep);";

bool cdb_save_trial(coord *co, const sc_job *sw, int n)
{
    const sc_sweep *w = sw->sweep;
    if (!w)
        return true;
    if (n == 0) {
        char rungs[SC_MAX_RUNGS * 24 + 4];
        size_t k = (size_t)snprintf(rungs, sizeof rungs, "[");
        for (int r = 0; r < w->nrungs; r++)
            k += (size_t)snprintf(rungs + k, sizeof rungs - k, "%s%lld", r ? "," : "",
                                  (long long)w->rung_epoch[r]);
        snprintf(rungs + k, sizeof rungs - k, "]");
        return cdb_exec(co,
                        "INSERT OR REPLACE INTO sweeps(job_id,trials,monitor,mode,rungs,"
                        "finish_job,best_trial) VALUES(?,?,?,?,?,?,?)",
                        "iitttii", sw->id, w->ntrials, w->monitor, w->maximize ? "max" : "min",
                        rungs, w->finish_job, (int64_t)w->best);
    }
    if (n < 1 || n > w->ntrials)
        return true;
    const sc_trial *t = &w->t[n - 1];
    char vals[SC_MAX_RUNGS * 26 + 4];
    size_t k = (size_t)snprintf(vals, sizeof vals, "[");
    for (int r = 0; r < w->nrungs; r++)
        k += isnan(t->rung_val[r])
                 ? (size_t)snprintf(vals + k, sizeof vals - k, "%snull", r ? "," : "")
                 : (size_t)snprintf(vals + k, sizeof vals - k, "%s%.17g", r ? "," : "",
                                    t->rung_val[r]);
    snprintf(vals + k, sizeof vals - k, "]");
    return cdb_exec(co,
                    "INSERT OR REPLACE INTO trials(job_id,trial,trial_job,params,state,rung,"
                    "epochs,best,best_epoch,rung_values,reason) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                    "iiittiidiit", sw->id, (int64_t)n, t->job, t->params,
                    trial_state_name(t->state), (int64_t)t->rung, t->epochs,
                    isnan(t->best) ? NAN : t->best, t->best_epoch, vals,
                    t->reason[0] ? t->reason : NULL);
}

void cdb_load_sweeps(coord *co)
{
    for (sc_job *j = co->S.jobs; j; j = j->next) {
        if (j->type != RT_JOB_SWEEP || !j->sweep)
            continue;
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(co->db,
                               "SELECT trial,trial_job,params,state,rung,epochs,best,best_epoch,"
                               "rung_values,reason FROM trials WHERE job_id=? ORDER BY trial",
                               -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, j->id);
            while (sqlite3_step(st) == SQLITE_ROW)
                sched_restore_trial(
                    &co->S, j, sqlite3_column_int(st, 0), sqlite3_column_int64(st, 1),
                    cdb_col(st, 2), cdb_col(st, 3), sqlite3_column_int(st, 4),
                    sqlite3_column_int64(st, 5),
                    sqlite3_column_type(st, 6) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 6),
                    sqlite3_column_int64(st, 7), cdb_col(st, 8), cdb_col(st, 9));
        }
        sqlite3_finalize(st);
        st = NULL;
        if (sqlite3_prepare_v2(co->db, "SELECT finish_job,best_trial FROM sweeps WHERE job_id=?",
                               -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, j->id);
            if (sqlite3_step(st) == SQLITE_ROW)
                sched_restore_sweep(&co->S, j, sqlite3_column_int64(st, 0),
                                    sqlite3_column_int(st, 1));
        }
        sqlite3_finalize(st);
    }
}

void cdb_sweep_detail(coord *co, rt_jw *w, int64_t id)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(co->db,
                           "SELECT trials,monitor,mode,rungs,finish_job,best_trial FROM sweeps"
                           " WHERE job_id=?",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return;
    }
    rt_jw_key(w, "sweep");
    rt_jw_obj(w);
    rt_jw_kint(w, "trials", sqlite3_column_int64(st, 0));
    rt_jw_kstr(w, "monitor", cdb_col(st, 1));
    rt_jw_kstr(w, "mode", cdb_col(st, 2));
    rt_jw_key(w, "rungs");
    rt_jw_raw(w, cdb_col(st, 3) ? cdb_col(st, 3) : "[]");
    rt_jw_kint(w, "finish_job", sqlite3_column_int64(st, 4));
    rt_jw_kint(w, "best_trial", sqlite3_column_int64(st, 5));
    sqlite3_finalize(st);
    /* each trial's record, and its validation curve (epoch, value) */
    rt_jw_key(w, "trial_list");
    rt_jw_arr(w);
    if (sqlite3_prepare_v2(co->db,
                           "SELECT trial,trial_job AS job,params,state,rung,epochs,best,best_epoch,"
                           "rung_values,reason FROM trials WHERE job_id=? ORDER BY trial",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, id);
        while (sqlite3_step(st) == SQLITE_ROW)
            cdb_row_json(w, st);
    }
    sqlite3_finalize(st);
    rt_jw_arr_end(w);
    rt_jw_obj_end(w);
}
