/* prep_import.c — the inputs of `ringtrain prep` as SQLite tables: CSV
 * files, Parquet files and Spark folders (rt_prep.h); a table wider than
 * SQLite allows as blocks of columns (t, t__2, ...), and the values of
 * --from's table looked at as they go in (prep_infer.c). */
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

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* An input table being filled: one SQLite table per block of columns
 * (SQLite takes at most 2000 columns in a table): t holds the first
 * PREP_BLOCK_COLS, t__2 the next, ... each with "_line" — or t all of them
 * when they fit; with p->name_blocks K, K blocks by name (prep_name_block). */
typedef struct importer {
    int nb;
    int *blk, *param; /* per field: its block, its parameter in the block's INSERT */
    sqlite3_stmt *ins[PREP_MAX_BLOCKS];
} importer;

static void importer_close(importer *imp)
{
    for (int b = 0; b < imp->nb; b++)
        sqlite3_finalize(imp->ins[b]);
    free(imp->blk);
    free(imp->param);
    memset(imp, 0, sizeof *imp);
}

/* Block b's name: t, t__2, t__3, ... */
void prep_block_name(const char *table, int b, char *out, size_t len)
{
    if (b == 0)
        snprintf(out, len, "%s", table);
    else
        snprintf(out, len, "%s__%d", table, b + 1);
}

/* v[0..n) all set (each strdup'ed) */
static bool all_set(char *const *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        if (!v[i])
            return false;
    return v != NULL;
}

/* CREATE TABLE "t" ("_line" INTEGER, "c1", ...) (and t__2, ...) and their
 * INSERT statements, the names prep_header_names made.  No declared types:
 * values keep the type they are bound with (text for CSV, Parquet's kind
 * for Parquet). */
static rt_status create_table(prep *p, const char *path, const char *table, const char **names,
                              size_t nf, importer *imp, char *err)
{
    memset(imp, 0, sizeof *imp);
    if (p->wide_by_name && !p->name_blocks && nf > PREP_SQLITE_MAX_COLS - 1)
        p->name_blocks = prep_name_blocks(nf); /* and the tables after it */
    const size_t per = nf <= PREP_SQLITE_MAX_COLS - 1 ? nf : PREP_BLOCK_COLS;
    const size_t nb = p->name_blocks ? (size_t)p->name_blocks : nf == 0 ? 1 : (nf + per - 1) / per;
    if (nb > PREP_MAX_BLOCKS)
        return rt_err(err, RT_ERR_INVALID,
                      "%s: %zu columns: prep reads at most %d (SQLite holds "
                      "them as tables of %d)",
                      path, nf, PREP_MAX_BLOCKS * PREP_BLOCK_COLS, PREP_BLOCK_COLS);
    imp->blk = malloc((nf + 1) * sizeof *imp->blk);
    imp->param = malloc((nf + 1) * sizeof *imp->param);
    if (!imp->blk || !imp->param) {
        importer_close(imp);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    int count[PREP_MAX_BLOCKS] = {0};
    for (size_t i = 0; i < nf; i++) {
        imp->blk[i] = p->name_blocks ? prep_name_block(names[i], (int)nb) : (int)(i / per);
        imp->param[i] = 2 + count[imp->blk[i]]++;
    }
    rt_status st = RT_OK;
    for (int b = 0; b < (int)nb && st == RT_OK; b++) {
        char id[PREP_IDENT_LEN], bname[80];
        prep_block_name(table, b, bname, sizeof bname);
        if (count[b] > PREP_SQLITE_MAX_COLS - 1) {
            st = rt_err(err, RT_ERR_INVALID,
                        "%s: %d of its columns fall in table %s by their names, more than SQLite "
                        "holds in one",
                        path, count[b], bname);
            break;
        }
        size_t cap = 256;
        for (size_t i = 0; i < nf; i++)
            if (imp->blk[i] == b)
                cap += 2 * strlen(names[i]) + 8; /* , "name" with its quotes doubled */
        char *create = malloc(cap), *insert = malloc(cap);
        if (!create || !insert) {
            free(create);
            free(insert);
            st = rt_err(err, RT_ERR_NOMEM, "out of memory");
            break;
        }
        size_t cl = (size_t)snprintf(create, cap, "CREATE TABLE %s (\"_line\" INTEGER",
                                     prep_ident(bname, id, sizeof id));
        size_t il = (size_t)snprintf(insert, cap, "INSERT INTO %s VALUES (?", id);
        for (size_t i = 0; i < nf; i++)
            if (imp->blk[i] == b) {
                cl += (size_t)snprintf(create + cl, cap - cl, ", %s",
                                       prep_ident(names[i], id, sizeof id));
                il += (size_t)snprintf(insert + il, cap - il, ", ?");
            }
        snprintf(create + cl, cap - cl, ")");
        snprintf(insert + il, cap - il, ")");
        char *emsg = NULL;
        if (sqlite3_exec(p->db, create, NULL, NULL, &emsg) != SQLITE_OK)
            st = rt_err(err, RT_ERR_INVALID, "%s: cannot create table %s: %s", path, bname, emsg);
        else if (sqlite3_prepare_v2(p->db, insert, -1, &imp->ins[b], NULL) != SQLITE_OK)
            st = rt_err(err, RT_ERR_IO, "%s: %s", path, sqlite3_errmsg(p->db));
        imp->nb = b + 1;
        free(create);
        free(insert);
        sqlite3_free(emsg);
    }
    if (st != RT_OK)
        importer_close(imp);
    return st;
}

/* The row bound to every block's statement: insert it, _line `line`;
 * an error names path, where and at (its line or row there). */
static rt_status importer_row(prep *p, importer *imp, int64_t line, const char *path,
                              const char *where, int64_t at, char *err)
{
    for (int b = 0; b < imp->nb; b++) {
        sqlite3_bind_int64(imp->ins[b], 1, line);
        int rc = sqlite3_step(imp->ins[b]);
        sqlite3_reset(imp->ins[b]);
        if (rc != SQLITE_DONE)
            return rt_err(err, RT_ERR_IO, "%s: %s %lld: %s", path, where, (long long)at,
                          sqlite3_errmsg(p->db));
    }
    return RT_OK;
}

/* Field i's statement and parameter. */
static sqlite3_stmt *field_stmt(const importer *imp, size_t i, int *param)
{
    *param = imp->param[i];
    return imp->ins[imp->blk[i]];
}

static bool is_csv(const char *path) { return rt_csv_suffix(path) > 0; }

/* One CSV file's rows into the table (its header read and checked by the
 * caller); _line is the row's line in its file plus *line0, which becomes
 * the file's last record's: the part files of a folder follow one another
 * (each _line once, in the files' name order, as Parquet's row numbers). */
static rt_status csv_rows(prep *p, rt_csv *csv, const char *path, size_t nf, importer *imp,
                          prep_stats *stats, int64_t *line0, int64_t *rows, int64_t *skipped,
                          char *err)
{
    rt_status st = RT_OK;
    int r;
    int64_t last = 1; /* the header's line */
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
        for (size_t i = 0; i < nf; i++) {
            size_t len;
            const char *v = rt_csv_field(csv, i, &len);
            int at;
            sqlite3_stmt *ins = field_stmt(imp, i, &at);
            if (len == 0) /* empty, quoted or not: NULL, as Spark reads it */
                sqlite3_bind_null(ins, at);
            else
                sqlite3_bind_text(ins, at, v, (int)len, SQLITE_STATIC);
            if (stats)
                prep_stats_text(stats, i, len ? v : NULL, len);
        }
        last = rt_csv_line(csv);
        st = importer_row(p, imp, *line0 + last, path, "line", last, err);
        if (stats)
            prep_stats_row(stats);
        (*rows)++;
    }
    *line0 += last;
    return st == RT_OK && r < 0 ? RT_ERR_INVALID : st; /* the reader's message is in err */
}

/* A CSV file, or a folder of CSV part files with the same header, as one
 * table of text columns. */
rt_status prep_import_csv(prep *p, const char *path, const char *table, int slot, char *err)
{
    char **files = NULL, **raw = NULL, **names = NULL; /* the header's, the table's */
    int nfiles = 0;
    size_t nf = 0;
    rt_status st = rt_part_files(path, rt_csv_suffixes, RT_CSV_SUFFIX_WORDS, &files, &nfiles, err);
    importer imp = {0};
    prep_stats *stats = NULL;
    int64_t rows = 0, skipped = 0, line0 = 0;
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
            raw = calloc(nf + 1, sizeof *raw);
            for (size_t c = 0; raw && c < nf; c++)
                raw[c] = strdup(rt_csv_field(csv, c, NULL));
            char where[PATH_MAX + 8];
            snprintf(where, sizeof where, "%s:1", files[i]);
            if (rt_csv_delim(csv) != ',' && !rt_csv_tsv_name(files[i]) && !p->o->quiet)
                fprintf(stderr, "prep: %s: fields separated by %s (its first line has no comma)\n",
                        where,
                        rt_csv_delim(csv) == '\t'  ? "tabs"
                        : rt_csv_delim(csv) == ';' ? "';'"
                                                   : "'|'");
            st = all_set(raw, nf) ? prep_header_names(where, "header", (const char *const *)raw, nf,
                                                      p->o->quiet, &names, err)
                                  : rt_err(err, RT_ERR_NOMEM, "out of memory");
            if (st == RT_OK)
                st = create_table(p, where, table, (const char **)names, nf, &imp, err);
            if (st == RT_OK && p->stats_slot == slot + 1 &&
                !(stats = p->stats = prep_stats_new((const char *const *)names, nf)))
                st = rt_err(err, RT_ERR_NOMEM, "out of memory");
            if (stats)
                prep_stats_decimal_comma(stats, rt_csv_delim(csv) != ',');
            if (st == RT_OK)
                sqlite3_exec(p->db, "BEGIN", NULL, NULL, NULL);
        } else {
            bool same = rt_csv_nfields(csv) == nf;
            for (size_t c = 0; same && c < nf; c++)
                same = !strcmp(rt_csv_field(csv, c, NULL), raw[c]);
            if (!same)
                st = rt_err(err, RT_ERR_INVALID,
                            "%s:1: its header differs from %s's (the files "
                            "of one table must have the same columns in the same order)",
                            files[i], files[0]);
        }
        if (st == RT_OK)
            st = csv_rows(p, csv, files[i], nf, &imp, stats, &line0, &rows, &skipped, err);
        rt_csv_close(csv);
    }
    if (imp.nb)
        sqlite3_exec(p->db, st == RT_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
    importer_close(&imp);
    for (size_t c = 0; c < nf; c++) {
        free(raw ? raw[c] : NULL);
        free(names ? names[c] : NULL);
    }
    free(raw);
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
static rt_status insert_group(prep *p, const char *file, rt_pq_file *f, int g, importer *imp,
                              prep_stats *stats, rt_pq_values *v, int64_t *row, char *err)
{
    int nc = rt_pq_ncols(f);
    for (int c = 0; c < nc; c++) {
        rt_status st = rt_pq_read(f, g, c, &v[c], err);
        if (st != RT_OK)
            return st;
    }
    int64_t n = rt_pq_group_rows(f, g);
    for (int64_t k = 0; k < n; k++) {
        ++*row;
        for (int c = 0; c < nc; c++) {
            const rt_pq_values *x = &v[c];
            const rt_pq_kind kind = rt_pq_col(f, c)->kind;
            int at;
            sqlite3_stmt *ins = field_stmt(imp, (size_t)c, &at);
            if (x->null[k])
                sqlite3_bind_null(ins, at);
            else if (kind == RT_PQ_INT)
                sqlite3_bind_int64(ins, at, x->i[k]);
            else if (kind == RT_PQ_REAL)
                sqlite3_bind_double(ins, at, x->r[k]);
            else if (kind == RT_PQ_TEXT)
                sqlite3_bind_text(ins, at, x->bytes + x->off[k], (int)x->len[k], SQLITE_STATIC);
            else
                sqlite3_bind_blob(ins, at, x->bytes + x->off[k], (int)x->len[k], SQLITE_STATIC);
            if (!stats)
                continue;
            if (x->null[k])
                prep_stats_text(stats, (size_t)c, NULL, 0);
            else if (kind == RT_PQ_INT)
                prep_stats_num(stats, (size_t)c, true, (double)x->i[k]);
            else if (kind == RT_PQ_REAL)
                prep_stats_num(stats, (size_t)c, false, x->r[k]);
            else
                prep_stats_text(stats, (size_t)c, x->bytes + x->off[k], x->len[k]);
        }
        rt_status st = importer_row(p, imp, *row, file, "row", *row, err);
        if (stats)
            prep_stats_row(stats);
        if (st != RT_OK)
            return st;
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
    importer imp = {0};
    prep_stats *stats = NULL;
    rt_pq_values *v = NULL;
    char **raw = NULL, **names = NULL; /* the schema's, the table's */
    int ncols = 0;
    int64_t row = 0;
    sqlite3_exec(p->db, "BEGIN", NULL, NULL, NULL);
    for (int i = 0; i < nfiles && st == RT_OK; i++) {
        rt_pq_file *f = NULL;
        if ((st = rt_pq_open(files[i], &f, err)) != RT_OK)
            break;
        if (i == 0) {
            ncols = rt_pq_ncols(f);
            raw = calloc((size_t)ncols + 1, sizeof *raw);
            for (int c = 0; raw && c < ncols; c++)
                raw[c] = strdup(rt_pq_col(f, c)->name);
            st = all_set(raw, (size_t)ncols)
                     ? prep_header_names(files[0], "schema", (const char *const *)raw,
                                         (size_t)ncols, p->o->quiet, &names, err)
                     : rt_err(err, RT_ERR_NOMEM, "out of memory");
            if (st == RT_OK)
                st = create_table(p, files[0], table, (const char **)names, (size_t)ncols, &imp,
                                  err);
            if (st == RT_OK && p->stats_slot == slot + 1 &&
                !(stats = p->stats = prep_stats_new((const char *const *)names, (size_t)ncols)))
                st = rt_err(err, RT_ERR_NOMEM, "out of memory");
            v = calloc((size_t)ncols + 1, sizeof *v);
        } else {
            bool same = rt_pq_ncols(f) == ncols;
            for (int c = 0; same && c < ncols; c++)
                same = !strcmp(rt_pq_col(f, c)->name, raw[c]);
            if (!same)
                st = rt_err(err, RT_ERR_INVALID, "%s: its columns differ from %s's (the files "
                            "of one table must have the same columns in the same order)",
                            files[i], files[0]);
        }
        for (int g = 0; st == RT_OK && g < rt_pq_nrow_groups(f); g++)
            st = insert_group(p, files[i], f, g, &imp, stats, v, &row, err);
        rt_pq_close(f);
    }
    sqlite3_exec(p->db, st == RT_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
    importer_close(&imp);
    for (int c = 0; c < ncols; c++) {
        if (v)
            rt_pq_values_free(&v[c]);
        free(raw ? raw[c] : NULL);
        free(names ? names[c] : NULL);
    }
    free(v);
    free(raw);
    free(names);
    for (int i = 0; i < nfiles; i++)
        free(files[i]);
    free(files);
    p->rep->rows_in[slot] = row;
    return st;
}

/* train.csv, train.tsv (either .gz), train.parquet or a folder train/ or
 * train.parquet/ of Parquet part files -> "train"; false for other entries. */
static bool table_name(const char *dir, const char *file, char *out, size_t len, bool *parquet)
{
    size_t n = strlen(file);
    size_t stem = rt_csv_suffix(file)                          ? n - rt_csv_suffix(file)
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

bool prep_is_csv_input(const char *path) { return is_csv(path) || csv_folder(path); }
