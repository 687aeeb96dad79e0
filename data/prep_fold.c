/* prep_fold.c — `ringtrain prep --sql FILE --fold K/F`: the script's
 * validation column recomputed as fold K of F cross-validation folds of its
 * training rows, the same folds `prep --from --fold K/F` writes into the
 * script it makes (prep_script.c's put_validation): within each class for
 * a classification, rows in rt_hash(seed, _line) order, every F-th from the
 * K-th.  One script then gives every fold's dataset (docs/prep.md). */
#include "prep_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The order key of a training row: the label's block's _line where it has
 * one (the line a script's rows come from), else the row's position. */
static const char *order_key(sqlite3 *db, const char *block)
{
    char one[1][64];
    snprintf(one[0], sizeof one[0], "%s", block);
    return prep_block_of(db, one, 1, "_line") == 0 ? "_line" : "rowid";
}

static bool is_view(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st = NULL;
    bool view = false;
    if (sqlite3_prepare_v2(
            db,
            "SELECT 1 FROM sqlite_schema WHERE type = 'view' AND name = ?1 UNION ALL "
            "SELECT 1 FROM sqlite_temp_schema WHERE type = 'view' AND name = ?1",
            -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        view = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return view;
}

rt_status prep_fold(prep *p, prep_meta *m, char *err)
{
    const rt_prep_opts *o = p->o;
    /* stratified exactly when prep will make it a classification */
    rt_prep_report task = {0};
    prep_vocab classes = {0};
    rt_status st = prep_label_task(p->db, m, &task, &classes, err);
    for (int32_t i = 0; i < classes.n; i++) /* prep_vocab_free leaves them to a manifest */
        free(classes.values[i]);
    free(classes.values);
    prep_vocab_free(&classes);
    if (st != RT_OK)
        return st;
    char(*blocks)[64] = m->train_blocks;
    const int lb = prep_block_of(p->db, blocks, m->ntrain, m->label);
    if (lb < 0)
        return rt_err(err, RT_ERR_INVALID, "%s: --fold: no training table holds the label %s",
                      p->what, m->label);
    for (int b = 0; b < m->ntrain; b++)
        if (is_view(p->db, blocks[b]))
            return rt_err(err, RT_ERR_INVALID,
                          "%s: --fold rewrites the validation column of the training table, "
                          "but %s is a view: make it a table (CREATE TABLE %s AS SELECT ...)",
                          p->what, blocks[b], blocks[b]);
    char q[2048], il[140], ib[140], iv[140];
    if (!m->validation[0]) { /* the script has none: rt_validation beside the label */
        snprintf(q, sizeof q,
                 "ALTER TABLE %s ADD COLUMN rt_validation INTEGER;"
                 "DELETE FROM meta WHERE key = 'validation';"
                 "INSERT INTO meta VALUES ('validation', 'rt_validation');",
                 prep_ident(blocks[lb], ib, sizeof ib));
        if ((st = prep_run_sql(p, "--fold (adding rt_validation)", q, err)) != RT_OK)
            return st;
        snprintf(m->validation, sizeof m->validation, "rt_validation");
    }
    const int vb = prep_block_of(p->db, blocks, m->ntrain, m->validation);
    const char *key = order_key(p->db, blocks[lb]);
    char part[200] = "";
    if (task.nclasses > 0)
        snprintf(part, sizeof part, "PARTITION BY %s ", prep_ident(m->label, il, sizeof il));
    /* the fold of each row of the label's block, by position; then the
     * validation column's block, row for row (blocks are read in lockstep
     * in rowid order: prep_out.c) */
    int n = snprintf(q, sizeof q,
                     "CREATE TEMP TABLE rt_fold AS SELECT ROW_NUMBER() OVER (ORDER BY rowid) AS i, "
                     "CASE WHEN (ROW_NUMBER() OVER (%sORDER BY rt_hash(%llu, %s), %s, rowid) - 1) "
                     "%% %d = %d THEN 1 ELSE 0 END AS v FROM %s;",
                     part, (unsigned long long)o->seed, key, key, o->folds, o->fold,
                     prep_ident(blocks[lb], ib, sizeof ib));
    prep_ident(blocks[vb], ib, sizeof ib);
    snprintf(q + n, sizeof q - (size_t)n,
             "UPDATE %s SET %s = f.v FROM (SELECT rowid AS r, ROW_NUMBER() OVER (ORDER BY rowid) "
             "AS i FROM %s) AS g JOIN temp.rt_fold AS f USING (i) WHERE %s.rowid = g.r;"
             "DROP TABLE temp.rt_fold;",
             ib, prep_ident(m->validation, iv, sizeof iv), ib, ib);
    char what[64];
    snprintf(what, sizeof what, "--fold %d/%d", o->fold, o->folds);
    return prep_run_sql(p, what, q, err);
}
