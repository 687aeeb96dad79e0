/* prep_import.c — the inputs of `ringtrain prep` as SQLite tables: CSV
 * files, Parquet files and Spark folders (rt_prep.h), and --from-parquet's
 * featurised tables with the meta table its flags describe. */
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "prep_internal.h"
#include "rt_csv.h"
#include "rt_parquet.h"
#include "rt_time.h"

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

static bool is_csv(const char *path)
{
    size_t n = strlen(path);
    return (n > 4 && !strcmp(path + n - 4, ".csv")) || (n > 7 && !strcmp(path + n - 7, ".csv.gz"));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One CSV file's rows into the table (its header read and checked by the
 * caller); _line is the row's line in its file. */
static rt_status csv_rows(prep *p, rt_csv *csv, const char *path, size_t nf, sqlite3_stmt *ins,
                          int64_t *rows, int64_t *skipped, char *err)
{
    rt_status st = RT_OK;
    int r;
    while (st == RT_OK && (r = rt_csv_next(csv, err)) == 1) {
        if (rt_csv_nfields(csv) != nf) {
            if (p->o->skip_bad_rows) {
                (*skipped)++;
                continue;
            }
            return rt_err(err, RT_ERR_INVALID,
                          "%s:%lld: %zu fields, the header has %zu (--skip-bad-rows skips such "
                          "rows and counts them)",
                          path, (long long)rt_csv_line(csv), rt_csv_nfields(csv), nf);
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
        (*rows)++;
    }
    return st == RT_OK && r < 0 ? RT_ERR_INVALID : st; /* the reader's message is in err */
}

/* A CSV file, or a folder of CSV part files with the same header, as one
 * table of text columns. */
rt_status prep_import_csv(prep *p, const char *path, const char *table, int slot, char *err)
{
    char **files = NULL, **names = NULL;
    int nfiles = 0;
    size_t nf = 0;
    static const char *const csv[] = {".csv", ".csv.gz", NULL};
    rt_status st = rt_part_files(path, csv, ".csv or .csv.gz", &files, &nfiles, err);
    sqlite3_stmt *ins = NULL;
    int64_t rows = 0, skipped = 0;
    for (int i = 0; i < nfiles && st == RT_OK; i++) {
        rt_csv *csv = NULL;
        if ((st = rt_csv_open(files[i], &csv, err)) != RT_OK)
            break;
        int r = rt_csv_next(csv, err);
        if (r <= 0) {
            st = r < 0 ? RT_ERR_INVALID
                       : rt_err(err, RT_ERR_INVALID, "%s is empty (no header)", files[i]);
        } else if (i == 0) {
            nf = rt_csv_nfields(csv);
            names = calloc(nf + 1, sizeof *names);
            for (size_t c = 0; names && c < nf; c++)
                names[c] = strdup(rt_csv_field(csv, c, NULL));
            char where[PATH_MAX + 8];
            snprintf(where, sizeof where, "%s:1", files[i]);
            st = names
                     ? create_table(p, where, table, (const char **)names, nf, "header", &ins, err)
                     : rt_err(err, RT_ERR_NOMEM, "out of memory");
            if (st == RT_OK)
                sqlite3_exec(p->db, "BEGIN", NULL, NULL, NULL);
        } else {
            bool same = rt_csv_nfields(csv) == nf;
            for (size_t c = 0; same && c < nf; c++)
                same = !strcmp(rt_csv_field(csv, c, NULL), names[c]);
            if (!same)
                st = rt_err(err, RT_ERR_INVALID,
                            "%s:1: its header differs from %s's (the files "
                            "of one table must have the same columns in the same order)",
                            files[i], files[0]);
        }
        if (st == RT_OK)
            st = csv_rows(p, csv, files[i], nf, ins, &rows, &skipped, err);
        rt_csv_close(csv);
    }
    if (ins)
        sqlite3_exec(p->db, st == RT_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
    sqlite3_finalize(ins);
    for (size_t c = 0; names && c < nf; c++)
        free(names[c]);
    free(names);
    for (int i = 0; i < nfiles; i++)
        free(files[i]);
    free(files);
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
rt_status prep_import_parquet(prep *p, const char *path, const char *table, int slot,
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
        char **files = NULL, why[RT_ERR_LEN];
        int nf = 0;
        if (file[0] == '.')
            return false;
        /* no Parquet files: no table; one a Spark job is still writing is a table, which
         * the import refuses saying why */
        if (rt_pq_files(path, &files, &nf, why) != RT_OK && !strstr(why, "_temporary"))
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

rt_status prep_import_all(prep *p, char *err)
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
        st = pq ? prep_import_parquet(p, path, t, slot, err) : prep_import_csv(p, path, t, slot, err);
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

/* A folder of CSV part files (and no Parquet ones): read as CSV. */
static bool csv_folder(const char *path)
{
    DIR *d = opendir(path);
    int csv = 0, pq = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        csv += e->d_name[0] != '.' && is_csv(e->d_name);
        pq += n > 8 && !strcmp(e->d_name + n - 8, ".parquet");
    }
    if (d)
        closedir(d);
    return csv > 0 && pq == 0;
}

/* --from (--from-parquet): tables train (and test) from a Parquet file or
 * Spark folder, or a CSV file (.csv, .csv.gz: text columns, as --input
 * reads them) or folder of CSV part files, and the meta table from the
 * roles, as a script would leave it. */
rt_status prep_import_featurised(prep *p, char *err)
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
        st = is_csv(paths[i]) || csv_folder(paths[i])
                 ? prep_import_csv(p, paths[i], names[i], slot, err)
                 : prep_import_parquet(p, paths[i], names[i], slot, err);
        if (st == RT_OK && !o->quiet)
            fprintf(stderr, "prep: %-20s %9lld rows (%.1f s)\n", paths[i],
                    (long long)p->rep->rows_in[slot], rt_now_s() - t0);
    }
    if (st != RT_OK)
        return st;
    const char *transform = o->roles.label_transform ? o->roles.label_transform : "none";
    double max_label = o->roles.max_label;
    const bool cls = o->roles.task && strcmp(o->roles.task, "regression") != 0;
    if (max_label <= 0 && o->roles.label && !cls) { /* the label's largest value */
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
                           {"max_label_auto", o->roles.max_label > 0 ? NULL : "1"},
                           {"categorical", o->roles.categorical},
                           {"continuous", o->roles.continuous},
                           {"validation", o->roles.validation},
                           {"id", o->roles.id},
                           {"date", o->roles.date},
                           {"task", o->roles.task},
                           {"weight", o->roles.weight}};
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

