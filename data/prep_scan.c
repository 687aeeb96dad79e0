/* prep_scan.c — rt_prep_scan (rt_prep.h): the rows of new data for
 * `ringtrain predict --input`, read as prep reads them.  A table wider than
 * SQLite's 2000 columns is blocks of it (input, input__2, ...; a script's
 * rt_score, rt_score__2, ...), read in lockstep (prep_cursor), and a wide
 * --from table's score.sql says how its input is split (by column name). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "prep_internal.h"
#include "rt_csv.h"
#include "rt_parquet.h"

/* The one table of a file or folder (of CSV or Parquet part files), as
 * table input. */
static rt_status import_one(prep *p, const char *path, char *err)
{
    size_t n = strlen(path);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return rt_err(err, RT_ERR_NOTFOUND, "cannot open %s: %m", path);
    snprintf(p->rep->table[0], sizeof p->rep->table[0], "input");
    snprintf(p->files[0], sizeof p->files[0], "%s", path);
    p->rep->ntables = 1;
    if (S_ISDIR(sb.st_mode) && prep_is_csv_input(path))
        return prep_import_csv(p, path, "input", 0, err);
    if (S_ISDIR(sb.st_mode) || (n > 8 && !strcmp(path + n - 8, ".parquet"))) {
        p->by_row[0] = true;
        return prep_import_parquet(p, path, "input", 0, err);
    }
    if (rt_csv_suffix(path))
        return prep_import_csv(p, path, "input", 0, err);
    return rt_err(err, RT_ERR_INVALID,
                  "%s: a " RT_CSV_SUFFIX_WORDS " or .parquet file, or a folder of Parquet files, "
                  "please",
                  path);
}

/* The blocks of table t there are (t, t__2, ...) into out (max of them); how many. */
static int table_blocks(sqlite3 *db, const char *t, char (*out)[64], int max)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", -1,
                           &st, NULL) != SQLITE_OK)
        return 0;
    int n = 0;
    for (; n < max; n++) {
        prep_block_name(t, n, out[n], 64);
        sqlite3_bind_text(st, 1, out[n], -1, SQLITE_STATIC);
        const bool there = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_reset(st);
        if (!there)
            break;
    }
    sqlite3_finalize(st);
    return n;
}

/* Whether the folder is one table's part files: CSV, or Parquet. */
static bool one_table(const char *dir)
{
    if (prep_is_csv_input(dir))
        return true;
    char **files = NULL, why[RT_ERR_LEN];
    int n = 0;
    const bool pq = rt_pq_files(dir, &files, &n, why) == RT_OK && n > 0;
    for (int i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return pq;
}

/* Input (one table, scoring: its other columns may be --id and --keep) and
 * the script's result, or the input alone: blocks[0..nout) the table whose
 * rows are read, then for scoring the input's blocks (*nin). */
static rt_status load(prep *p, bool *scoring, char (*blocks)[64], int *nout, int *nin, char *err)
{
    const rt_prep_opts *o = p->o;
    *nin = 0;
    if (!o->sql_path) {
        rt_status st = import_one(p, o->input_dir, err);
        *nout = st == RT_OK ? table_blocks(p->db, "input", blocks, PREP_MAX_BLOCKS) : 0;
        return st;
    }
    char *sql = NULL;
    bool score;
    rt_status st = prep_read_script(o->sql_path, &sql, &score, &p->name_blocks, err);
    /* a folder of tables, or one file: table input; for score.sql, a folder
     * of part files (Spark's) too, and a folder of one table (an S3 object
     * comes down as one) */
    struct stat sb;
    const bool dir = stat(o->input_dir, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (st == RT_OK)
        st = !dir || (score && one_table(o->input_dir)) ? import_one(p, o->input_dir, err)
                                                        : prep_import_all(p, err);
    *scoring = st == RT_OK && score && p->rep->ntables == 1;
    if (*scoring && strcmp(p->rep->table[0], "input") != 0) {
        char from[PREP_MAX_BLOCKS][64], to[80], q[160], qt[200], alter[400];
        const int nb = table_blocks(p->db, p->rep->table[0], from, PREP_MAX_BLOCKS);
        for (int b = 0; b < nb; b++) {
            prep_block_name("input", b, to, sizeof to);
            snprintf(alter, sizeof alter, "ALTER TABLE %s RENAME TO %s",
                     prep_ident(from[b], q, sizeof q), prep_ident(to, qt, sizeof qt));
            sqlite3_exec(p->db, alter, NULL, NULL, NULL);
        }
    }
    if (st == RT_OK)
        st = prep_run_sql(p, o->sql_path, sql, err);
    free(sql);
    prep_meta m = {0};
    if (st == RT_OK)
        st = prep_read_meta(p, &m, err);
    if (st == RT_OK) { /* its test table, else its training table */
        *nout = m.ntest ? m.ntest : m.ntrain;
        memcpy(blocks, m.ntest ? m.test_blocks : m.train_blocks, (size_t)*nout * sizeof *blocks);
        if (*scoring)
            *nin = table_blocks(p->db, "input", blocks + *nout, PREP_MAX_BLOCKS);
    }
    prep_meta_free(&m);
    return st;
}

rt_status rt_prep_scan(const rt_prep_opts *o, const char *const *cols, int ncols, rt_prep_row_fn fn,
                       void *arg, char *err)
{
    rt_prep_report rep;
    memset(&rep, 0, sizeof rep);
    prep p = {.o = o, .rep = &rep, .what = o->sql_path};
    if (sqlite3_open(o->db_path ? o->db_path : ":memory:", &p.db) != SQLITE_OK) {
        rt_status st = rt_err(err, RT_ERR_IO, "cannot open SQLite: %s", sqlite3_errmsg(p.db));
        sqlite3_close(p.db);
        return st;
    }
    sqlite3_exec(p.db,
                 "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; "
                 "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-262144;",
                 NULL, NULL, NULL);
    prep_add_functions(&p);
    char blocks[PREP_CURSOR_BLOCKS][64];
    int nout = 0, nin = 0;
    bool scoring = false;
    rt_status st = load(&p, &scoring, blocks, &nout, &nin, err);
    /* the columns asked for, each checked to exist (with a suggestion); for
     * score.sql, a column of its input the features lack (a dropped id, a
     * kept column) is read from the input, row by row */
    const char *table = o->sql_path ? blocks[0] : o->input_dir;
    int nhave = 0, ninput = 0;
    char(*have)[64] = st == RT_OK ? prep_tables_columns(p.db, blocks, nout, &nhave) : NULL;
    char(*input)[64] =
        st == RT_OK && nin ? prep_tables_columns(p.db, blocks + nout, nin, &ninput) : NULL;
    char(*have_sorted)[64] = have ? prep_sorted_names(have, nhave) : NULL;
    char(*input_sorted)[64] = input ? prep_sorted_names(input, ninput) : NULL;
    bool any_input = false;
    if (st == RT_OK && (!have_sorted || (nin && !input_sorted)))
        st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    for (int c = 0; st == RT_OK && c < ncols; c++) {
        const bool found = prep_sorted_has(have_sorted, nhave, cols[c]);
        const bool in_input = !found && nin && prep_sorted_has(input_sorted, ninput, cols[c]);
        any_input = any_input || in_input;
        if (!found && !in_input) {
            bool exact = false;
            const char *best = prep_closest(have, nhave, cols[c], &exact);
            st = rt_err(err, RT_ERR_INVALID, "%s has no column '%s'%s%s%s", table, cols[c],
                        best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
        }
    }
    free(have_sorted);
    free(input_sorted);
    free(have);
    free(input);
    /* the rows: the script's blocks (and the input's, in the same order:
     * score.sql makes its rows from the input's, ORDER BY _line) */
    prep_cursor cur = {0};
    if (st == RT_OK)
        st = prep_cursor_open(p.db, blocks, nout + (any_input ? nin : 0), table, cols, ncols, &cur,
                              err);
    const char **text = calloc((size_t)ncols + 1, sizeof *text);
    if (st == RT_OK && !text)
        st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    int more = 0;
    for (int64_t row = 0; st == RT_OK && (more = prep_cursor_next(&cur, blocks, err)) == 1; row++) {
        for (int c = 0; c < ncols; c++) {
            int k;
            sqlite3_stmt *s = prep_cursor_col(&cur, c, &k);
            text[c] = (const char *)sqlite3_column_text(s, k); /* NULL for SQL NULL */
        }
        st = fn(arg, row, text, err);
    }
    if (st == RT_OK && more < 0)
        st = RT_ERR_INVALID;
    free(text);
    prep_cursor_close(&cur);
    sqlite3_close(p.db);
    return st;
}
