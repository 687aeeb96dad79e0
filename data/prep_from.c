/* prep_from.c — `ringtrain prep --from FILE`: a table in, its columns
 * inferred (prep_infer.c), the feature script made (prep_script.c),
 * written as out_dir/prep.sql and run as any --sql script is.  What the
 * table alone cannot tell — whether an integer column unique per row is a
 * row id, how many distinct values a text column has past the first 1000,
 * the mean a continuous column's gaps get — is asked of SQLite here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prep_internal.h"
#include "rt_csv.h"
#include "rt_file.h"
#include "rt_time.h"

/* The table name of a path: its file name without .csv/.tsv(.gz)/.parquet,
 * letters, digits and _ only. */
static void table_of(const char *path, char *out, size_t len)
{
    const char *slash = strrchr(path, '/');
    char base[256];
    snprintf(base, sizeof base, "%s", slash && slash[1] ? slash + 1 : path);
    size_t n = strlen(base);
    while (n > 0 && base[n - 1] == '/')
        base[--n] = '\0';
    const size_t e = rt_csv_suffix(base)                          ? rt_csv_suffix(base)
                     : n > 8 && !strcmp(base + n - 8, ".parquet") ? 8
                                                                  : 0;
    base[n - e] = '\0';
    size_t k = 0;
    if (!(base[0] >= 'A' && base[0] <= 'Z') && !(base[0] >= 'a' && base[0] <= 'z'))
        out[k++] = 't';
    for (const char *c = base; *c && k + 1 < len && k < 48; c++)
        out[k++] = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9')
                       ? *c
                       : '_';
    out[k] = '\0';
}

static int64_t one_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* 'text' as an SQL literal into buf */
static const char *sql_lit(const char *text, char *buf, size_t len)
{
    size_t k = 0;
    buf[k++] = '\'';
    for (const char *c = text; *c && k + 3 < len; c++) {
        if (*c == '\'')
            buf[k++] = '\'';
        buf[k++] = *c;
    }
    buf[k++] = '\'';
    buf[k] = '\0';
    return buf;
}

/* What the stats could not settle: ids and mostly-unique text by their
 * distinct values, the means that fill a continuous column's gaps. */
static rt_status settle(prep *p, const char *table, prep_plan *pl, char *err)
{
    char where[3 * PREP_IDENT_LEN] = "";
    for (size_t i = 0; i < pl->ncols; i++) /* where the import put it */
        pl->c[i].block = pl->name_blocks ? prep_name_block(pl->c[i].name, pl->name_blocks) : 0;
    if (pl->test_flag >= 0) { /* the means are of the rows that are not test rows */
        const plan_col *t = &pl->c[pl->test_flag];
        char tb[96], tbq[160], tcol[PREP_IDENT_LEN], tlit[PREP_IDENT_LEN];
        prep_block_name(table, t->block, tb, sizeof tb);
        snprintf(where, sizeof where,
                 " AND _line IN (SELECT _line FROM %s WHERE rt_flag(%s, %s, _line) = 0)",
                 prep_ident(tb, tbq, sizeof tbq), prep_ident(t->name, tcol, sizeof tcol),
                 sql_lit(t->name, tlit, sizeof tlit));
    }
    for (size_t i = 0; i < pl->ncols; i++) {
        plan_col *c = &pl->c[i];
        char bn[96], tq[160], cq[PREP_REF_LEN], sql[4 * sizeof cq + sizeof where];
        prep_block_name(table, c->block, bn, sizeof bn);
        prep_ident(bn, tq, sizeof tq);
        prep_col_ref(c, 0, cq, sizeof cq); /* as the script reads it: 1,5 as 1.5 */
        if (c->maybe_id || c->maybe_text_id) {
            snprintf(sql, sizeof sql, "SELECT count(DISTINCT %s) FROM %s", cq, tq);
            const int64_t d = one_int(p->db, sql), rows = pl->rows;
            if (c->maybe_id && d != rows) {
                c->role = PREP_CONT;
                snprintf(c->why, sizeof c->why, "numbers");
            } else if (c->maybe_text_id && d * 2 <= rows) {
                c->role = PREP_CAT;
                snprintf(c->why, sizeof c->why, "text, %lld values", (long long)d);
            } else if (c->maybe_text_id) {
                snprintf(c->why, sizeof c->why,
                         "text, mostly unique (%lld values: an id, free "
                         "text?)",
                         (long long)d);
            }
        }
        if (c->role != PREP_CONT || !c->impute)
            continue;
        snprintf(sql, sizeof sql, "SELECT avg(CAST(%s AS REAL)) FROM %s WHERE NOT rt_missing(%s)%s",
                 cq, tq, cq, where);
        sqlite3_stmt *st = NULL;
        double mean = 0;
        int rc = sqlite3_prepare_v2(p->db, sql, -1, &st, NULL);
        if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW &&
            sqlite3_column_type(st, 0) != SQLITE_NULL)
            mean = sqlite3_column_double(st, 0);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
            rt_status s = rt_err(err, RT_ERR_INVALID, "%s: the mean of %s: %s", table, c->name,
                                 sqlite3_errmsg(p->db));
            sqlite3_finalize(st);
            return s;
        }
        sqlite3_finalize(st);
        snprintf(c->mean, sizeof c->mean, "%.17g", mean);
    }
    return RT_OK;
}

rt_status prep_from(prep *p, char *err)
{
    const rt_prep_opts *o = p->o;
    char table[64], test[64] = "";
    table_of(o->train_parquet, table, sizeof table);
    if (o->test_parquet) {
        table_of(o->test_parquet, test, sizeof test);
        if (!strcmp(test, table))
            snprintf(test + strlen(test), sizeof test - strlen(test), "_test");
        if (o->infer.test_column)
            return rt_err(err, RT_ERR_INVALID,
                          "--test FILE and --test-column COL both name the "
                          "test rows: give one");
    }
    const char *paths[2] = {o->train_parquet, o->test_parquet}, *names[2] = {table, test};
    rt_status st = RT_OK;
    p->stats_slot = 1;      /* the training table's values are looked at as they go in */
    p->wide_by_name = true; /* a wide training table, and its test file with it, by name */
    for (int i = 0; i < 2 && st == RT_OK && paths[i]; i++) {
        int slot = p->rep->ntables++;
        snprintf(p->rep->table[slot], sizeof p->rep->table[slot], "%s", names[i]);
        snprintf(p->files[slot], sizeof p->files[slot], "%s", paths[i]);
        double t0 = rt_now_s();
        p->by_row[slot] = !prep_is_csv_input(paths[i]);
        st = !p->by_row[slot] ? prep_import_csv(p, paths[i], names[i], slot, err)
                              : prep_import_parquet(p, paths[i], names[i], slot, err);
        p->wide_by_name = false; /* the training table's width decides, not the test file's */
        if (st == RT_OK && !o->quiet)
            fprintf(stderr, "prep: %-20s %9lld rows, table %s (%.1f s)\n", paths[i],
                    (long long)p->rep->rows_in[slot], names[i], rt_now_s() - t0);
    }
    if (st != RT_OK)
        return st;
    if (!p->stats)
        return rt_err(err, RT_ERR_INVALID, "%s: no columns", o->train_parquet);
    prep_plan pl;
    if ((st = prep_plan_make(p->stats, o, &pl, err)) != RT_OK)
        return st;
    pl.name_blocks = p->name_blocks;
    if (st == RT_OK)
        st = settle(p, table, &pl, err);
    if (st == RT_OK)
        st = prep_plan_name(&pl, err);
    if (st == RT_OK && !o->quiet)
        prep_plan_print(&pl, stderr);
    char commands[1400], path[1200];
    if (o->infer.command)
        snprintf(commands, sizeof commands, "%s", o->infer.command);
    else
        snprintf(commands, sizeof commands, "ringtrain prep --from %s%s%s --label %s --out %s",
                 o->train_parquet, o->test_parquet ? " --test " : "",
                 o->test_parquet ? o->test_parquet : "", o->roles.label ? o->roles.label : "?",
                 o->out_dir);
    /* the decisions, also as the script's first comment */
    char *decided = NULL;
    size_t dlen = 0;
    FILE *mf = st == RT_OK ? open_memstream(&decided, &dlen) : NULL;
    if (mf) {
        prep_plan_print(&pl, mf);
        fclose(mf);
    }
    char *script = st == RT_OK ? prep_script(&pl, o, table, o->test_parquet ? test : NULL, commands,
                                             decided ? decided : "")
                               : NULL;
    free(decided);
    if (st == RT_OK && !script)
        st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    snprintf(path, sizeof path, "%s/prep.sql", o->out_dir);
    if (st == RT_OK)
        st = rt_write_atomic(path, &(rt_iov){script, strlen(script)}, 1, err);
    /* new rows' features, for predict --input */
    char *score = st == RT_OK ? prep_score_script(&pl, commands) : NULL;
    if (st == RT_OK && !score)
        st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    char score_path[1200];
    snprintf(score_path, sizeof score_path, "%s/score.sql", o->out_dir);
    if (score)
        st = rt_write_atomic(score_path, &(rt_iov){score, strlen(score)}, 1, err);
    p->rep->score_sql = score && st == RT_OK;
    free(score);
    if (st == RT_OK)
        st = prep_run_sql(p, path, script, err);
    free(script);
    prep_plan_free(&pl);
    return st;
}
