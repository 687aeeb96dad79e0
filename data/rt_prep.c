/* rt_prep.c — see rt_prep.h: importing the CSV files, the SQL functions
 * the feature script can call, running the script, reading its meta. */
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prep_internal.h"
#include "rt_config.h"
#include "rt_csv.h"
#include "rt_file.h"
#include "rt_parquet.h"
#include "rt_time.h"

typedef struct prep {
    sqlite3 *db;
    const rt_prep_opts *o;
    rt_prep_report *rep;
    char files[RT_PREP_MAX_TABLES][300]; /* file name of each table, for messages */
    bool by_row[RT_PREP_MAX_TABLES];     /* _line is a row number (Parquet), not a line */
    const char *what; /* what named the meta table: the script, or --from-parquet */
} prep;

const char *prep_ident(const char *name, char *buf, size_t len)
{
    size_t k = 0;
    if (len < 3)
        return "\"\"";
    buf[k++] = '"';
    for (const char *p = name; *p && k + 3 < len; p++) {
        if (*p == '"')
            buf[k++] = '"';
        buf[k++] = *p;
    }
    buf[k++] = '"';
    buf[k] = '\0';
    return buf;
}

/* ---- import ------------------------------------------------------------------------ */

/* CREATE TABLE "t" ("_line" INTEGER, "c1", ...) and its INSERT statement.
 * No declared types: values keep the type they are bound with (text for
 * CSV, Parquet's kind for Parquet).  what[i] says where name i is, for
 * messages ("column 3 of the header"). */
static rt_status create_table(prep *p, const char *path, const char *table, const char **names,
                              size_t nf, const char *what, sqlite3_stmt **ins, char *err)
{
    *ins = NULL;
    if (nf > PREP_MAX_COLS)
        return rt_err(err, RT_ERR_INVALID, "%s: %zu columns (at most %d)", path, nf,
                      PREP_MAX_COLS);
    size_t cap = 256 + nf * 140;
    char *create = malloc(cap), *insert = malloc(cap), id[140];
    size_t cl = (size_t)snprintf(create, cap, "CREATE TABLE %s (\"_line\" INTEGER",
                                 prep_ident(table, id, sizeof id));
    size_t il = (size_t)snprintf(insert, cap, "INSERT INTO %s VALUES (?", id);
    rt_status st = RT_OK;
    for (size_t i = 0; i < nf; i++) {
        const char *name = names[i];
        size_t len = strlen(name);
        bool dup = false;
        for (size_t k = 0; k < i && !dup; k++)
            dup = strcmp(names[k], name) == 0;
        if (len == 0 || len > 60 || dup || !strcmp(name, "_line")) {
            st = rt_err(err, RT_ERR_INVALID, "%s: column %zu of the %s is %s", path, i + 1, what,
                        len == 0 ? "empty" : len > 60 ? "longer than 60 characters"
                                   : dup          ? "a repeated name"
                                                  : "the reserved name _line");
            break;
        }
        cl += (size_t)snprintf(create + cl, cap - cl, ", %s", prep_ident(name, id, sizeof id));
        il += (size_t)snprintf(insert + il, cap - il, ", ?");
    }
    snprintf(create + cl, cap - cl, ")");
    snprintf(insert + il, cap - il, ")");
    char *emsg = NULL;
    if (st == RT_OK && sqlite3_exec(p->db, create, NULL, NULL, &emsg) != SQLITE_OK)
        st = rt_err(err, RT_ERR_INVALID, "%s: cannot create table %s: %s", path, table, emsg);
    if (st == RT_OK && sqlite3_prepare_v2(p->db, insert, -1, ins, NULL) != SQLITE_OK)
        st = rt_err(err, RT_ERR_IO, "%s: %s", path, sqlite3_errmsg(p->db));
    free(create);
    free(insert);
    sqlite3_free(emsg);
    return st;
}

static rt_status import_csv(prep *p, const char *path, const char *table, int slot, char *err)
{
    rt_csv *csv = NULL;
    rt_status st = rt_csv_open(path, &csv, err);
    if (st != RT_OK)
        return st;
    int r = rt_csv_next(csv, err);
    if (r <= 0) {
        rt_csv_close(csv);
        return r < 0 ? RT_ERR_INVALID : rt_err(err, RT_ERR_INVALID, "%s is empty (no header)", path);
    }
    size_t nf = rt_csv_nfields(csv);
    const char **names = calloc(nf + 1, sizeof *names);
    for (size_t i = 0; i < nf; i++)
        names[i] = rt_csv_field(csv, i, NULL);
    sqlite3_stmt *ins = NULL;
    char where[PATH_MAX + 8];
    snprintf(where, sizeof where, "%s:1", path);
    st = create_table(p, where, table, names, nf, "header", &ins, err);
    free(names);
    sqlite3_exec(p->db, "BEGIN", NULL, NULL, NULL);
    int64_t rows = 0, skipped = 0;
    while (st == RT_OK && (r = rt_csv_next(csv, err)) == 1) {
        if (rt_csv_nfields(csv) != nf) {
            if (p->o->skip_bad_rows) {
                skipped++;
                continue;
            }
            st = rt_err(err, RT_ERR_INVALID,
                        "%s:%lld: %zu fields, the header has %zu (--skip-bad-rows skips such "
                        "rows and counts them)",
                        path, (long long)rt_csv_line(csv), rt_csv_nfields(csv), nf);
            break;
        }
        sqlite3_bind_int64(ins, 1, rt_csv_line(csv));
        for (size_t i = 0; i < nf; i++) {
            size_t len;
            const char *v = rt_csv_field(csv, i, &len);
            if (len == 0) /* empty, quoted or not: NULL, as Spark reads it */
                sqlite3_bind_null(ins, (int)i + 2);
            else
                sqlite3_bind_text(ins, (int)i + 2, v, (int)len, SQLITE_STATIC);
        }
        if (sqlite3_step(ins) != SQLITE_DONE)
            st = rt_err(err, RT_ERR_IO, "%s:%lld: %s", path, (long long)rt_csv_line(csv),
                        sqlite3_errmsg(p->db));
        sqlite3_reset(ins);
        rows++;
    }
    if (st == RT_OK && r < 0)
        st = RT_ERR_INVALID; /* the reader's message (file:line) is in err */
    sqlite3_exec(p->db, st == RT_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
    sqlite3_finalize(ins);
    rt_csv_close(csv);
    p->rep->rows_in[slot] = rows;
    p->rep->skipped[slot] = skipped;
    return st;
}

/* One row group of a Parquet file into the table: _line is the row's
 * number in the table (1-based, across the folder's files in name order). */
static rt_status insert_group(prep *p, const char *file, rt_pq_file *f, int g, sqlite3_stmt *ins,
                              rt_pq_values *v, int64_t *row, char *err)
{
    int nc = rt_pq_ncols(f);
    for (int c = 0; c < nc; c++) {
        rt_status st = rt_pq_read(f, g, c, &v[c], err);
        if (st != RT_OK)
            return st;
    }
    int64_t n = rt_pq_group_rows(f, g);
    for (int64_t k = 0; k < n; k++) {
        sqlite3_bind_int64(ins, 1, ++*row);
        for (int c = 0; c < nc; c++) {
            const rt_pq_values *x = &v[c];
            int at = c + 2;
            if (x->null[k])
                sqlite3_bind_null(ins, at);
            else if (rt_pq_col(f, c)->kind == RT_PQ_INT)
                sqlite3_bind_int64(ins, at, x->i[k]);
            else if (rt_pq_col(f, c)->kind == RT_PQ_REAL)
                sqlite3_bind_double(ins, at, x->r[k]);
            else if (rt_pq_col(f, c)->kind == RT_PQ_TEXT)
                sqlite3_bind_text(ins, at, x->bytes + x->off[k], (int)x->len[k], SQLITE_STATIC);
            else
                sqlite3_bind_blob(ins, at, x->bytes + x->off[k], (int)x->len[k], SQLITE_STATIC);
        }
        if (sqlite3_step(ins) != SQLITE_DONE) {
            rt_status st = rt_err(err, RT_ERR_IO, "%s: row %lld: %s", file, (long long)*row,
                                  sqlite3_errmsg(p->db));
            sqlite3_reset(ins);
            return st;
        }
        sqlite3_reset(ins);
    }
    return RT_OK;
}

/* A .parquet file or a folder of part files (Spark's output) as one table;
 * every file must have the first one's column names, in its order. */
static rt_status import_parquet(prep *p, const char *path, const char *table, int slot,
                                char *err)
{
    char **files = NULL;
    int nfiles = 0;
    rt_status st = rt_pq_files(path, &files, &nfiles, err);
    if (st != RT_OK)
        return st;
    sqlite3_stmt *ins = NULL;
    rt_pq_values *v = NULL;
    const char **names = NULL;
    int ncols = 0;
    int64_t row = 0;
    sqlite3_exec(p->db, "BEGIN", NULL, NULL, NULL);
    for (int i = 0; i < nfiles && st == RT_OK; i++) {
        rt_pq_file *f = NULL;
        if ((st = rt_pq_open(files[i], &f, err)) != RT_OK)
            break;
        if (i == 0) {
            ncols = rt_pq_ncols(f);
            names = calloc((size_t)ncols + 1, sizeof *names);
            for (int c = 0; c < ncols; c++)
                names[c] = strdup(rt_pq_col(f, c)->name);
            st = create_table(p, files[0], table, names, (size_t)ncols, "schema", &ins, err);
            v = calloc((size_t)ncols + 1, sizeof *v);
        } else {
            bool same = rt_pq_ncols(f) == ncols;
            for (int c = 0; same && c < ncols; c++)
                same = !strcmp(rt_pq_col(f, c)->name, names[c]);
            if (!same)
                st = rt_err(err, RT_ERR_INVALID, "%s: its columns differ from %s's (the files "
                            "of one table must have the same columns in the same order)",
                            files[i], files[0]);
        }
        for (int g = 0; st == RT_OK && g < rt_pq_nrow_groups(f); g++)
            st = insert_group(p, files[i], f, g, ins, v, &row, err);
        rt_pq_close(f);
    }
    sqlite3_exec(p->db, st == RT_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
    sqlite3_finalize(ins);
    for (int c = 0; c < ncols; c++) {
        if (v)
            rt_pq_values_free(&v[c]);
        free((char *)names[c]);
    }
    free(v);
    free(names);
    for (int i = 0; i < nfiles; i++)
        free(files[i]);
    free(files);
    p->rep->rows_in[slot] = row;
    return st;
}

/* train.csv, train.csv.gz, train.parquet or a folder train/ or
 * train.parquet/ of Parquet part files -> "train"; false for other entries. */
static bool table_name(const char *dir, const char *file, char *out, size_t len, bool *parquet)
{
    size_t n = strlen(file);
    size_t stem = n > 7 && !strcmp(file + n - 7, ".csv.gz")   ? n - 7
                  : n > 4 && !strcmp(file + n - 4, ".csv")     ? n - 4
                  : n > 8 && !strcmp(file + n - 8, ".parquet") ? n - 8
                                                               : n;
    *parquet = stem == n - 8;
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return false;
    if (S_ISDIR(sb.st_mode)) { /* a folder is a table when it holds Parquet files */
        char **files = NULL;
        int nf = 0;
        if (file[0] == '.' || rt_pq_files(path, &files, &nf, NULL) != RT_OK)
            return false;
        for (int i = 0; i < nf; i++)
            free(files[i]);
        free(files);
        *parquet = true;
    } else if (stem == n)
        return false;
    if (stem == 0 || stem >= len)
        return false;
    for (size_t i = 0; i < stem; i++) {
        char c = file[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return false;
    }
    memcpy(out, file, stem);
    out[stem] = '\0';
    return true;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static rt_status import_all(prep *p, char *err)
{
    DIR *d = opendir(p->o->input_dir);
    if (!d)
        return rt_err(err, RT_ERR_NOTFOUND, "cannot open the input folder %s", p->o->input_dir);
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        char t[64];
        bool pq;
        if (table_name(p->o->input_dir, e->d_name, t, sizeof t, &pq))
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    rt_status st = RT_OK;
    if (n == 0)
        st = rt_err(err, RT_ERR_NOTFOUND, "%s holds no .csv, .csv.gz or .parquet files (nor "
                    "folders of Parquet part files)", p->o->input_dir);
    for (int i = 0; i < n && st == RT_OK; i++) {
        char t[64];
        bool pq = false;
        table_name(p->o->input_dir, names[i], t, sizeof t, &pq);
        for (int k = 0; k < p->rep->ntables; k++)
            if (!strcmp(p->rep->table[k], t))
                st = rt_err(err, RT_ERR_INVALID, "%s holds both %s and %s: which one is table %s?",
                            p->o->input_dir, p->files[k], names[i], t);
        if (st != RT_OK)
            break;
        if (p->rep->ntables == RT_PREP_MAX_TABLES) {
            st = rt_err(err, RT_ERR_INVALID, "more than %d input files", RT_PREP_MAX_TABLES);
            break;
        }
        int slot = p->rep->ntables++;
        snprintf(p->rep->table[slot], sizeof p->rep->table[slot], "%s", t);
        snprintf(p->files[slot], sizeof p->files[slot], "%s", names[i]);
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", p->o->input_dir, names[i]);
        double t0 = rt_now_s();
        p->by_row[slot] = pq;
        st = pq ? import_parquet(p, path, t, slot, err) : import_csv(p, path, t, slot, err);
        if (st == RT_OK && !p->o->quiet)
            fprintf(stderr, "prep: %-20s %9lld rows%s (%.1f s)\n", names[i],
                    (long long)p->rep->rows_in[slot],
                    p->rep->skipped[slot] ? " (some malformed rows skipped)" : "",
                    rt_now_s() - t0);
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    return st;
}

/* ---- SQL functions ----------------------------------------------------------------- */

static void fn_iso_week(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *s = (const char *)sqlite3_value_text(argv[0]);
    int w = s ? rt_iso_week(s) : -1;
    if (w < 0)
        sqlite3_result_null(ctx);
    else
        sqlite3_result_int(ctx, w);
}

static void fn_valid_date(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *s = (const char *)sqlite3_value_text(argv[0]);
    int32_t d;
    sqlite3_result_int(ctx, s && rt_parse_date(s, &d));
}

static void fn_check(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) != SQLITE_NULL && sqlite3_value_int(argv[0])) {
        sqlite3_result_int(ctx, 1);
        return;
    }
    const char *msg = (const char *)sqlite3_value_text(argv[1]);
    sqlite3_result_error(ctx, msg ? msg : "a check failed", -1);
}

static void fn_bad_rows(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    (void)argv;
    prep *p = sqlite3_user_data(ctx);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(p->db, "SELECT tbl, line, why FROM bad_rows ORDER BY tbl, line", -1,
                           &st, NULL) != SQLITE_OK) {
        sqlite3_result_error(ctx, sqlite3_errmsg(p->db), -1);
        return;
    }
    int64_t n = 0;
    char msg[2048] = "";
    size_t ml = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n < 5 && !p->o->skip_bad_rows) {
            const char *tbl = (const char *)sqlite3_column_text(st, 0);
            const char *file = tbl;
            bool by_row = false;
            for (int k = 0; tbl && k < p->rep->ntables; k++)
                if (!strcmp(p->rep->table[k], tbl)) {
                    file = p->files[k];
                    by_row = p->by_row[k];
                }
            ml += (size_t)snprintf(msg + ml, sizeof msg - ml, "%s%s%s%lld: %s", n ? "\n" : "",
                                   file ? file : "?", by_row ? ": row " : ":",
                                   (long long)sqlite3_column_int64(st, 1),
                                   sqlite3_column_text(st, 2) ? (const char *)sqlite3_column_text(st, 2) : "bad row");
            if (ml >= sizeof msg)
                ml = sizeof msg - 1;
        }
        n++;
    }
    sqlite3_finalize(st);
    if (n > 0 && !p->o->skip_bad_rows) {
        snprintf(msg + ml, sizeof msg - ml,
                 "\n(%lld bad row%s in all; --skip-bad-rows drops them and counts them)",
                 (long long)n, n == 1 ? "" : "s");
        sqlite3_result_error(ctx, msg, -1);
        return;
    }
    p->rep->bad_rows_skipped += n;
    sqlite3_result_int64(ctx, n);
}

/* ---- the script ---------------------------------------------------------------------- */

static int line_of(const char *text, const char *at)
{
    /* the statement's first token: past blanks and -- comments */
    for (;;) {
        while (*at == ' ' || *at == '\t' || *at == '\n' || *at == '\r')
            at++;
        if (at[0] == '-' && at[1] == '-') {
            while (*at && *at != '\n')
                at++;
            continue;
        }
        break;
    }
    int line = 1;
    for (const char *c = text; c < at; c++)
        line += *c == '\n';
    return line;
}

static rt_status run_script(prep *p, const char *path, char *err)
{
    char *sql = NULL;
    size_t len = 0;
    rt_status st = rt_read_file(path, 16u << 20, &sql, &len, err);
    if (st != RT_OK)
        return st;
    const char *tail = sql;
    while (st == RT_OK && *tail) {
        const char *start = tail;
        sqlite3_stmt *stmt = NULL;
        int rc = sqlite3_prepare_v2(p->db, start, -1, &stmt, &tail);
        if (rc == SQLITE_OK && stmt) {
            double t0 = rt_now_s();
            while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
            }
            if (rc == SQLITE_DONE)
                rc = SQLITE_OK;
            if (!p->o->quiet && rt_now_s() - t0 > 1.0)
                fprintf(stderr, "prep: %s:%d took %.1f s\n", path, line_of(sql, start),
                        rt_now_s() - t0);
        }
        if (rc != SQLITE_OK) {
            const char *msg = sqlite3_errmsg(p->db);
            char hint[200] = "";
            if (!strncmp(msg, "no such table: ", 15))
                snprintf(hint, sizeof hint, " (is %.50s.csv, .csv.gz or .parquet in %s?)",
                         msg + 15, p->o->input_dir);
            st = rt_err(err, RT_ERR_INVALID, "%s:%d: %s%s", path, line_of(sql, start), msg, hint);
        }
        sqlite3_finalize(stmt);
        if (tail == start)
            break;
    }
    free(sql);
    return st;
}

/* --from-parquet: tables train (and test) from the Parquet paths, and the
 * meta table from the roles, as a script would leave it. */
static rt_status import_featurised(prep *p, char *err)
{
    const rt_prep_opts *o = p->o;
    const char *paths[2] = {o->train_parquet, o->test_parquet}, *names[2] = {"train", "test"};
    rt_status st = RT_OK;
    for (int i = 0; i < 2 && st == RT_OK && paths[i]; i++) {
        int slot = p->rep->ntables++;
        snprintf(p->rep->table[slot], sizeof p->rep->table[slot], "%s", names[i]);
        snprintf(p->files[slot], sizeof p->files[slot], "%s", paths[i]);
        p->by_row[slot] = true;
        double t0 = rt_now_s();
        st = import_parquet(p, paths[i], names[i], slot, err);
        if (st == RT_OK && !o->quiet)
            fprintf(stderr, "prep: %-20s %9lld rows (%.1f s)\n", paths[i],
                    (long long)p->rep->rows_in[slot], rt_now_s() - t0);
    }
    if (st != RT_OK)
        return st;
    const char *transform = o->roles.label_transform ? o->roles.label_transform : "none";
    double max_label = o->roles.max_label;
    if (max_label <= 0 && o->roles.label) { /* the label's largest value */
        sqlite3_stmt *s = NULL;
        bool is_col = false;
        if (sqlite3_prepare_v2(p->db, "SELECT 1 FROM pragma_table_info('train') WHERE name = ?",
                               -1, &s, NULL) == SQLITE_OK) {
            sqlite3_bind_text(s, 1, o->roles.label, -1, SQLITE_STATIC);
            is_col = sqlite3_step(s) == SQLITE_ROW;
        }
        sqlite3_finalize(s);
        char q[300], sql[400];
        snprintf(sql, sizeof sql, "SELECT max(CAST(%s AS REAL)) FROM train",
                 prep_ident(o->roles.label, q, sizeof q));
        s = NULL;
        if (!is_col)
            max_label = 1; /* check_columns names the missing label, with a suggestion */
        else if (sqlite3_prepare_v2(p->db, sql, -1, &s, NULL) == SQLITE_OK &&
                 sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
            max_label = !strcmp(transform, "log") ? exp(sqlite3_column_double(s, 0))
                                                  : sqlite3_column_double(s, 0);
        sqlite3_finalize(s);
    }
    char max_text[64];
    snprintf(max_text, sizeof max_text, "%.17g", max_label);
    const char *kv[][2] = {{"train_table", "train"},
                           {"test_table", o->test_parquet ? "test" : NULL},
                           {"label", o->roles.label},
                           {"label_transform", transform},
                           {"max_label", max_label > 0 ? max_text : NULL},
                           {"categorical", o->roles.categorical},
                           {"continuous", o->roles.continuous},
                           {"validation", o->roles.validation},
                           {"id", o->roles.id},
                           {"date", o->roles.date}};
    sqlite3_stmt *ins = NULL;
    if (sqlite3_exec(p->db, "CREATE TABLE meta(key, value)", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(p->db, "INSERT INTO meta VALUES (?, ?)", -1, &ins, NULL) != SQLITE_OK)
        st = rt_err(err, RT_ERR_IO, "cannot make the meta table: %s", sqlite3_errmsg(p->db));
    for (size_t i = 0; st == RT_OK && i < sizeof kv / sizeof kv[0]; i++) {
        if (!kv[i][1])
            continue;
        sqlite3_bind_text(ins, 1, kv[i][0], -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 2, kv[i][1], -1, SQLITE_STATIC);
        if (sqlite3_step(ins) != SQLITE_DONE)
            st = rt_err(err, RT_ERR_IO, "cannot fill the meta table: %s", sqlite3_errmsg(p->db));
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    return st;
}

static void split_list(const char *s, char out[][64], int *n)
{
    *n = 0;
    while (s && *s && *n < PREP_MAX_COLS) {
        while (*s == ' ' || *s == ',')
            s++;
        const char *e = s;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > s && t[-1] == ' ')
            t--;
        if (t > s) {
            snprintf(out[*n], 64, "%.*s", (int)(t - s), s);
            (*n)++;
        }
        s = e;
    }
}

static rt_status read_meta(prep *p, prep_meta *m, char *err)
{
    memset(m, 0, sizeof *m);
    snprintf(m->label_transform, sizeof m->label_transform, "none");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(p->db, "SELECT key, value FROM meta", -1, &st, NULL) != SQLITE_OK)
        return rt_err(err, RT_ERR_INVALID, "%s: the script must leave a table meta(key, value) "
                                           "naming its result (%s)", p->what,
                      sqlite3_errmsg(p->db));
    bool have_max = false;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(st, 0);
        const char *v = (const char *)sqlite3_column_text(st, 1);
        if (!k || !v)
            continue;
        struct {
            const char *key;
            char *dst;
            size_t len;
        } map[] = {{"train_table", m->train_table, sizeof m->train_table},
                   {"test_table", m->test_table, sizeof m->test_table},
                   {"label", m->label, sizeof m->label},
                   {"label_transform", m->label_transform, sizeof m->label_transform},
                   {"validation", m->validation, sizeof m->validation},
                   {"id", m->id, sizeof m->id},
                   {"date", m->date, sizeof m->date}};
        for (size_t i = 0; i < sizeof map / sizeof *map; i++)
            if (!strcmp(k, map[i].key))
                snprintf(map[i].dst, map[i].len, "%s", v);
        if (!strcmp(k, "categorical"))
            split_list(v, m->cat, &m->ncat);
        else if (!strcmp(k, "continuous"))
            split_list(v, m->cont, &m->ncont);
        else if (!strcmp(k, "max_label")) {
            m->max_label = sqlite3_column_double(st, 1);
            have_max = true;
        }
    }
    sqlite3_finalize(st);
    const char *missing = !m->train_table[0]              ? "train_table"
                          : !m->label[0]                  ? "label"
                          : !have_max || !(m->max_label > 0) ? "max_label (a positive number)"
                          : m->ncat + m->ncont == 0       ? "categorical or continuous"
                          : m->test_table[0] && !m->id[0] ? "id (the test table needs one)"
                                                          : NULL;
    if (missing && p->o->train_parquet)
        return rt_err(err, RT_ERR_INVALID, "--from-parquet needs %s (flags, or [data] keys of "
                      "the job file given with --job)",
                      !m->label[0]                 ? "--label"
                      : !(m->max_label > 0)        ? "--max-label (a positive number; the label "
                                                     "column's largest value is not)"
                      : m->ncat + m->ncont == 0    ? "--categorical or --continuous"
                                                   : "--id (the test rows need one)");
    if (missing)
        return rt_err(err, RT_ERR_INVALID, "%s: its meta table does not name %s",
                      p->what, missing);
    if (strcmp(m->label_transform, "log") != 0 && strcmp(m->label_transform, "none") != 0)
        return rt_err(err, RT_ERR_INVALID, "%s: meta label_transform is '%s' (log or none)",
                      p->what, m->label_transform);
    return RT_OK;
}

/* Every column meta names must be a column of its table: SQLite reads a
 * double-quoted unknown name as a string constant, so a typo would make a
 * feature one value (or the label 0) without a word. */
static rt_status check_columns(prep *p, const prep_meta *m, const char *table, bool test,
                               char *err)
{
    char q[300], sql[400];
    snprintf(sql, sizeof sql, "PRAGMA table_info(%s)", prep_ident(table, q, sizeof q));
    sqlite3_stmt *st = NULL;
    char (*have)[64] = calloc(PREP_MAX_COLS * 4, 64);
    int n = 0;
    if (!have)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    if (sqlite3_prepare_v2(p->db, sql, -1, &st, NULL) == SQLITE_OK)
        while (sqlite3_step(st) == SQLITE_ROW && n < PREP_MAX_COLS * 4)
            snprintf(have[n++], 64, "%s", (const char *)sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
    rt_status s = RT_OK;
    if (n == 0)
        s = rt_err(err, RT_ERR_INVALID, "%s: meta names table '%s', which the script did not "
                                        "make", p->what, table);
    typedef struct {
        const char *col, *role;
    } want_col;
    want_col want[2 * PREP_MAX_COLS + 4];
    int nw = 0;
    for (int i = 0; i < m->ncat; i++)
        want[nw++] = (want_col){m->cat[i], "categorical"};
    for (int i = 0; i < m->ncont; i++)
        want[nw++] = (want_col){m->cont[i], "continuous"};
    if (!test)
        want[nw++] = (want_col){m->label, "label"};
    if (!test && m->validation[0])
        want[nw++] = (want_col){m->validation, "validation"};
    if (test && m->id[0])
        want[nw++] = (want_col){m->id, "id"};
    for (int k = 0; s == RT_OK && k < nw; k++) {
        bool found = false;
        const char *best = NULL;
        size_t bestd = 3; /* suggest within two edits */
        for (int i = 0; i < n && !found; i++) {
            found = strcmp(have[i], want[k].col) == 0;
            size_t d = rt_edit_distance(have[i], want[k].col);
            if (d < bestd) {
                bestd = d;
                best = have[i];
            }
        }
        if (!found)
            s = rt_err(err, RT_ERR_INVALID,
                       "%s: meta names column '%s' (%s), but table %s has no such column%s%s%s",
                       p->what, want[k].col, want[k].role, table,
                       best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
    }
    free(have);
    return s;
}

/* Bytes of input SQLite will hold, roughly: files as they are, compressed
 * ones (.gz, .parquet) five times. */
static int64_t path_bytes(const char *path, int depth)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return 0;
    if (!S_ISDIR(sb.st_mode)) {
        size_t n = strlen(path);
        bool packed = (n > 3 && !strcmp(path + n - 3, ".gz")) ||
                      (n > 8 && !strcmp(path + n - 8, ".parquet"));
        return (int64_t)sb.st_size * (packed ? 5 : 1);
    }
    int64_t total = 0;
    DIR *d = depth < 2 ? opendir(path) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char sub[PATH_MAX];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        total += path_bytes(sub, depth + 1);
    }
    if (d)
        closedir(d);
    return total;
}

/* The database SQLite works in: o->db_path, memory, or a temporary file
 * (db_tmp, removed by the caller) in the output folder. */
static rt_status open_db(prep *p, char *db_tmp, size_t len, char *err)
{
    const rt_prep_opts *o = p->o;
    db_tmp[0] = '\0';
    p->rep->input_bytes = o->train_parquet ? path_bytes(o->train_parquet, 0) +
                                                 (o->test_parquet ? path_bytes(o->test_parquet, 0) : 0)
                                           : path_bytes(o->input_dir, 0);
    const char *mode = o->db_mode ? o->db_mode : "auto";
    if (strcmp(mode, "auto") && strcmp(mode, "memory") && strcmp(mode, "disk"))
        return rt_err(err, RT_ERR_INVALID, "--db %s: memory, disk or auto", mode);
    int64_t limit = RT_PREP_MEMORY_MAX, avail = 0;
    FILE *mi = fopen("/proc/meminfo", "r");
    char line[128];
    while (mi && fgets(line, sizeof line, mi))
        if (sscanf(line, "MemAvailable: %" SCNd64 " kB", &avail) == 1 && avail * 1024 / 4 < limit)
            limit = avail * 1024 / 4;
    if (mi)
        fclose(mi);
    int64_t need = p->rep->input_bytes * RT_PREP_MEMORY_FACTOR;
    bool disk = o->db_path || !strcmp(mode, "disk") || (!strcmp(mode, "auto") && need > limit);
    const char *dbp = ":memory:";
    if (o->db_path) {
        dbp = o->db_path;
        remove(o->db_path);
    } else if (disk) {
        snprintf(db_tmp, len, "%s/.prep-%d.sqlite", o->out_dir, (int)getpid());
        remove(db_tmp);
        dbp = db_tmp;
    }
    p->rep->db_on_disk = disk;
    if (sqlite3_open(dbp, &p->db) != SQLITE_OK) {
        rt_status st = rt_err(err, RT_ERR_IO, "cannot open SQLite database %s: %s", dbp,
                              sqlite3_errmsg(p->db));
        sqlite3_close(p->db);
        p->db = NULL;
        return st;
    }
    /* on disk, sorts and temporary tables spill to files too: memory stays
     * near the page cache (256 MiB) */
    sqlite3_exec(p->db, disk ? "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; "
                               "PRAGMA temp_store=FILE; PRAGMA cache_size=-262144;"
                             : "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; "
                               "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-262144;",
                 NULL, NULL, NULL);
    if (!o->quiet)
        fprintf(stderr, "prep: SQLite works %s%s (inputs ~%lld MB, ~%lld MB in memory%s)\n",
                disk ? "on disk in " : "in memory", disk ? dbp : "",
                (long long)(p->rep->input_bytes >> 20), (long long)(need >> 20),
                o->db_path ? "; --keep-db"
                : disk && !strcmp(mode, "auto") ? "; more than it may take: --db memory to "
                                                  "work in memory anyway"
                : !disk && !strcmp(mode, "auto") ? "; --db disk for less memory"
                                                 : "");
    return RT_OK;
}

rt_status rt_prep_run(const rt_prep_opts *o, rt_prep_report *rep, char *err)
{
    memset(rep, 0, sizeof *rep);
    double t0 = rt_now_s();
    if (o->partitions < 1 || o->partitions > 100000)
        return rt_err(err, RT_ERR_INVALID, "--partitions must be 1 to 100000, not %d",
                      o->partitions);
    prep p = {.o = o, .rep = rep,
              .what = o->train_parquet ? "--from-parquet (the roles given on the command line "
                                         "or by --job)"
                                       : o->sql_path};
    char db_tmp[PATH_MAX];
    rt_status st = rt_mkdirs(o->out_dir, err);
    if (st == RT_OK)
        st = open_db(&p, db_tmp, sizeof db_tmp, err);
    if (st != RT_OK)
        return st;
    sqlite3_create_function(p.db, "iso_week", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            fn_iso_week, NULL, NULL);
    sqlite3_create_function(p.db, "valid_date", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            fn_valid_date, NULL, NULL);
    sqlite3_create_function(p.db, "rt_check", 2, SQLITE_UTF8, NULL, fn_check, NULL, NULL);
    sqlite3_create_function(p.db, "rt_bad_rows", 0, SQLITE_UTF8, &p, fn_bad_rows, NULL, NULL);
    char opts[200];
    snprintf(opts, sizeof opts,
             "CREATE TABLE prep_options(skip_bad_rows INTEGER); INSERT INTO prep_options "
             "VALUES(%d); CREATE TABLE bad_rows(tbl TEXT, line INTEGER, why TEXT);",
             o->skip_bad_rows ? 1 : 0);
    sqlite3_exec(p.db, opts, NULL, NULL, NULL);
    { /* a dataset being replaced is not a dataset meanwhile */
        char mf[1200];
        snprintf(mf, sizeof mf, "%s/manifest.json", o->out_dir);
        remove(mf);
    }
    if (st == RT_OK && o->train_parquet)
        st = import_featurised(&p, err);
    else if (st == RT_OK) {
        st = import_all(&p, err);
        double t1 = rt_now_s();
        if (st == RT_OK)
            st = run_script(&p, o->sql_path, err);
        if (st == RT_OK && !o->quiet)
            fprintf(stderr, "prep: %s ran in %.1f s\n", o->sql_path, rt_now_s() - t1);
    }
    prep_meta m;
    if (st == RT_OK)
        st = read_meta(&p, &m, err);
    if (st == RT_OK)
        st = check_columns(&p, &m, m.train_table, false, err);
    if (st == RT_OK && m.test_table[0])
        st = check_columns(&p, &m, m.test_table, true, err);
    if (st == RT_OK)
        st = prep_write_dataset(p.db, &m, o, rep, err);
    sqlite3_close(p.db);
    if (db_tmp[0])
        remove(db_tmp);
    rep->seconds = rt_now_s() - t0;
    return st;
}
