/* rt_prep.c — see rt_prep.h: the database, the SQL functions the feature
 * script can call (prep_sqlfn.c), running the script, reading and checking
 * its meta.  The inputs are prep_import.c; new data for predict
 * (rt_prep_scan) prep_scan.c. */
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prep_internal.h"
#include "rt_config.h"
#include "rt_csv.h"
#include "rt_dataset.h"
#include "rt_file.h"
#include "rt_parquet.h"
#include "rt_time.h"
#include "rt_tmp.h"

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

rt_status prep_run_sql(prep *p, const char *path, const char *sql, char *err)
{
    rt_status st = RT_OK;
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
            char hint[400] = "";
            if (!strncmp(msg, "no such table: ", 15))
                snprintf(hint, sizeof hint,
                         " (is %.50s.csv in %s? or .tsv, either gzip'ed, or .parquet)", msg + 15,
                         p->o->input_dir);
            const char *col = !strncmp(msg, "no such column: ", 16) ? msg + 16 : NULL;
            if (col && col[0] == 's' && col[1] >= '1' && col[1] <= '9' && strchr(col, '.'))
                col = strchr(col, '.') + 1; /* --from's scripts: sK."name" */
            if (col) /* a file without a column the script reads (new rows, mostly) */
                snprintf(hint, sizeof hint, " (the script reads a column %.100s: has %s one?)", col,
                         p->o->input_dir);
            st = rt_err(err, RT_ERR_INVALID, "%s:%d: %s%s", path, line_of(sql, start), msg, hint);
        }
        sqlite3_finalize(stmt);
        if (tail == start)
            break;
    }
    return st;
}

rt_status prep_read_script(const char *path, char **sql, bool *score, int *name_blocks, char *err)
{
    size_t len = 0;
    *score = false;
    *name_blocks = 0;
    rt_status st = rt_read_file(path, 16u << 20, sql, &len, err);
    if (st != RT_OK)
        return st;
    /* the head: the lines before the first statement, 8 KiB at most */
    const size_t head = len < 8192 ? len : 8192, mlen = strlen(PREP_NAME_BLOCKS);
    const char *k = memmem(*sql, head, PREP_NAME_BLOCKS, mlen);
    *name_blocks = k && (size_t)(k - *sql) + mlen < len ? atoi(k + mlen) : 0;
    if (*name_blocks < 0 || *name_blocks > PREP_MAX_BLOCKS)
        *name_blocks = 0;
    *score = !strncmp(*sql, PREP_SCORE_MARK, strlen(PREP_SCORE_MARK));
    return RT_OK;
}

/* A comma-separated list into *out (malloc'ed, grown as needed); false
 * when out of memory or an item is 64 bytes or longer. */
static bool split_list(const char *s, char (**out)[64], int *n)
{
    int cap = *n;
    while (s && *s) {
        while (*s == ' ' || *s == ',')
            s++;
        const char *e = s;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > s && t[-1] == ' ')
            t--;
        if (t - s >= 64)
            return false;
        if (t > s) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 64;
                char(*g)[64] = realloc(*out, (size_t)cap * sizeof **out);
                if (!g)
                    return false;
                *out = g;
            }
            snprintf((*out)[*n], 64, "%.*s", (int)(t - s), s);
            (*n)++;
        }
        s = e;
    }
    return true;
}

void prep_meta_free(prep_meta *m)
{
    free(m->cat);
    free(m->cont);
    m->cat = m->cont = NULL;
    m->ncat = m->ncont = 0;
}

/* "a,b" into the block names; false when there are too many or one is too long. */
static bool split_tables(const char *list, char (*out)[64], int *n)
{
    char(*tmp)[64] = NULL;
    int k = 0;
    bool ok = split_list(list, &tmp, &k) && k <= PREP_MAX_BLOCKS;
    for (int i = 0; ok && i < k; i++)
        snprintf(out[i], 64, "%s", tmp[i]);
    *n = ok ? k : 0;
    free(tmp);
    return ok;
}

rt_status prep_read_meta(prep *p, prep_meta *m, char *err)
{
    memset(m, 0, sizeof *m);
    snprintf(m->label_transform, sizeof m->label_transform, "none");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(p->db, "SELECT key, value FROM meta", -1, &st, NULL) != SQLITE_OK)
        return rt_err(err, RT_ERR_INVALID, "%s: the script must leave a table meta(key, value) "
                                           "naming its result (%s)", p->what,
                      sqlite3_errmsg(p->db));
    bool have_max = false, auto_max = false;
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
                   {"date", m->date, sizeof m->date},
                   {"task", m->task, sizeof m->task},
                   {"weight", m->weight, sizeof m->weight},
                   {"positive_class", m->positive_class, sizeof m->positive_class}};
        for (size_t i = 0; i < sizeof map / sizeof *map; i++)
            if (!strcmp(k, map[i].key))
                snprintf(map[i].dst, map[i].len, "%s", v);
        bool ok = true;
        if (!strcmp(k, "categorical"))
            ok = split_list(v, &m->cat, &m->ncat);
        else if (!strcmp(k, "continuous"))
            ok = split_list(v, &m->cont, &m->ncont);
        if (!ok) {
            sqlite3_finalize(st);
            prep_meta_free(m);
            return rt_err(err, RT_ERR_INVALID,
                          "%s: meta %s: a column name of 64 bytes or more "
                          "(or out of memory)",
                          p->what, k);
        } else if (!strcmp(k, "max_label")) {
            m->max_label = sqlite3_column_double(st, 1);
            have_max = true;
        } else if (!strcmp(k, "max_label_auto")) {
            auto_max = true;
        }
    }
    sqlite3_finalize(st);
    m->max_given = have_max && !auto_max;
    if (!split_tables(m->train_table, m->train_blocks, &m->ntrain) ||
        !split_tables(m->test_table, m->test_blocks, &m->ntest)) {
        prep_meta_free(m);
        return rt_err(err, RT_ERR_INVALID,
                      "%s: meta train_table or test_table lists more than %d "
                      "tables (or a name of 64 bytes or more)",
                      p->what, PREP_MAX_BLOCKS);
    }
    if (have_max && !(m->max_label > 0))
        m->max_label = -1; /* given, and wrong: a regression refuses it (prep_out.c) */
    const char *missing = !m->train_table[0]              ? "train_table"
                          : !m->label[0]                  ? "label"
                          : m->ncat + m->ncont == 0       ? "categorical or continuous"
                          : m->test_table[0] && !m->id[0] ? "id (the test table needs one)"
                                                          : NULL;
    if (missing)
        prep_meta_free(m);
    if (missing && p->o->train_parquet)
        return rt_err(err, RT_ERR_INVALID, "--from needs %s (flags, or [data] keys of "
                      "the job file given with --job)",
                      !m->label[0]                 ? "--label"
                      : !(m->max_label > 0)        ? "--max-label (a positive number; the label "
                                                     "column's largest value is not)"
                      : m->ncat + m->ncont == 0    ? "--categorical or --continuous"
                                                   : "--id (the test rows need one)");
    if (missing)
        return rt_err(err, RT_ERR_INVALID, "%s: its meta table does not name %s",
                      p->what, missing);
    rt_status rs = rt_label_transform_parse(m->label_transform, NULL, NULL, err);
    if (rs != RT_OK)
        rt_err_prefix(err, "%s: meta label_transform", p->what);
    else if (m->task[0] && strcmp(m->task, "regression") != 0 && strcmp(m->task, "binary") != 0 &&
             strcmp(m->task, "multiclass") != 0)
        rs = rt_err(err, RT_ERR_INVALID,
                    "%s: meta task is '%s' (regression, binary or "
                    "multiclass; leave it out to infer it from the label)",
                    p->what, m->task);
    if (rs != RT_OK)
        prep_meta_free(m);
    return rs;
}

/* The column names of the tables (n of them), or NULL when out of memory;
 * n is 0 when none of them exists. */
char (*prep_tables_columns(sqlite3 *db, char (*tables)[64], int ntables, int *n))[64]
{
    char(*have)[64] = NULL;
    int cap = 0;
    *n = 0;
    for (int t = 0; t < ntables; t++) {
        char q[300], sql[400];
        snprintf(sql, sizeof sql, "PRAGMA table_info(%s)", prep_ident(tables[t], q, sizeof q));
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
            continue;
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 256;
                char(*g)[64] = realloc(have, (size_t)cap * sizeof *have);
                if (!g) {
                    sqlite3_finalize(st);
                    free(have);
                    return NULL;
                }
                have = g;
            }
            snprintf(have[(*n)++], 64, "%s", (const char *)sqlite3_column_text(st, 1));
        }
        sqlite3_finalize(st);
    }
    if (!have)
        have = calloc(1, sizeof *have);
    return have;
}

static char (*table_columns(sqlite3 *db, const char *table, int *n))[64]
{
    char one[1][64];
    snprintf(one[0], sizeof one[0], "%s", table);
    return prep_tables_columns(db, one, 1, n);
}

int prep_block_of(sqlite3 *db, char (*tables)[64], int n, const char *col)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", -1, &st,
                           NULL) != SQLITE_OK)
        return -1;
    int at = -1;
    for (int t = 0; t < n && at < 0; t++) {
        sqlite3_bind_text(st, 1, tables[t], -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, col, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            at = t;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return at;
}

/* Whether want is one of the n names; if not, the nearest within two
 * edits (a suggestion), or NULL. */
const char *prep_closest(char (*have)[64], int n, const char *want, bool *found)
{
    const char *best = NULL;
    size_t bestd = 3;
    *found = false;
    for (int i = 0; i < n && !*found; i++) {
        *found = strcmp(have[i], want) == 0;
        size_t d = rt_edit_distance(have[i], want);
        if (d < bestd) {
            bestd = d;
            best = have[i];
        }
    }
    return best;
}

/* Every column meta names must be a column of its table: SQLite reads a
 * double-quoted unknown name as a string constant, so a typo would make a
 * feature one value (or the label 0) without a word. */
static int cmp_name(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

char (*prep_sorted_names(char (*have)[64], int n))[64]
{
    char(*sorted)[64] = malloc((size_t)(n > 0 ? n : 1) * sizeof *sorted);
    if (sorted && n > 0) {
        memcpy(sorted, have, (size_t)n * sizeof *sorted);
        qsort(sorted, (size_t)n, sizeof *sorted, cmp_name);
    }
    return sorted;
}

bool prep_sorted_has(char (*sorted)[64], int n, const char *want)
{
    return n > 0 && bsearch(want, sorted, (size_t)n, sizeof *sorted, cmp_name) != NULL;
}

static rt_status check_one(prep *p, char (*have)[64], char (*sorted)[64], int n, const char *col,
                           const char *role, const char *table, char *err)
{
    if (prep_sorted_has(sorted, n, col))
        return RT_OK;
    bool found = false;
    const char *best = prep_closest(have, n, col, &found);
    return rt_err(err, RT_ERR_INVALID,
                  "%s: meta names column '%s' (%s), but table %s has no such column%s%s%s", p->what,
                  col, role, table, best ? "; did you mean '" : "", best ? best : "",
                  best ? "'?" : "");
}

static rt_status check_columns(prep *p, const prep_meta *m, bool test, char *err)
{
    char(*tables)[64] = test ? (char(*)[64])m->test_blocks : (char(*)[64])m->train_blocks;
    const int nt = test ? m->ntest : m->ntrain;
    const char *table = test ? m->test_table : m->train_table;
    int n = 0;
    char(*have)[64] = prep_tables_columns(p->db, tables, nt, &n);
    char(*sorted)[64] = have ? prep_sorted_names(have, n) : NULL;
    if (!sorted) {
        free(have);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    rt_status s = RT_OK;
    for (int t = 0; s == RT_OK && t < nt; t++) {
        int k = 0;
        free(table_columns(p->db, tables[t], &k));
        if (k == 0)
            s = rt_err(err, RT_ERR_INVALID,
                       "%s: meta names table '%s', which the script did not "
                       "make",
                       p->what, tables[t]);
    }
    for (int i = 0; s == RT_OK && i < m->ncat; i++)
        s = check_one(p, have, sorted, n, m->cat[i], "categorical", table, err);
    for (int i = 0; s == RT_OK && i < m->ncont; i++)
        s = check_one(p, have, sorted, n, m->cont[i], "continuous", table, err);
    const struct {
        const char *col, *role;
        bool in_test;
    } one[] = {{m->label, "label", false},
               {m->validation, "validation", false},
               {m->weight, "weight", false},
               {m->id, "id", true}};
    for (size_t i = 0; s == RT_OK && i < RT_ARRAY_LEN(one); i++)
        if (one[i].col[0] && one[i].in_test == test)
            s = check_one(p, have, sorted, n, one[i].col, one[i].role, table, err);
    free(sorted);
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
              .what = o->train_parquet ? "--from (the roles given on the command line "
                                         "or by --job)"
                                       : o->sql_path};
    char db_tmp[PATH_MAX];
    rt_status st = rt_mkdirs(o->out_dir, err);
    if (st == RT_OK)
        st = open_db(&p, db_tmp, sizeof db_tmp, err);
    if (st != RT_OK)
        return st;
    const int db_slot = db_tmp[0] ? rt_tmp_track(db_tmp) : -1; /* gigabytes, if killed */
    prep_add_functions(&p);
    { /* a dataset being replaced is not a dataset meanwhile */
        char mf[1200];
        snprintf(mf, sizeof mf, "%s/manifest.json", o->out_dir);
        remove(mf);
    }
    if (st == RT_OK && o->train_parquet)
        st = prep_from(&p, err);
    else if (st == RT_OK) {
        char *sql = NULL; /* (--from's of a wide table reads its inputs by name) */
        bool score;
        st = prep_read_script(o->sql_path, &sql, &score, &p.name_blocks, err);
        if (st == RT_OK)
            st = prep_import_all(&p, err);
        double t1 = rt_now_s();
        if (st == RT_OK)
            st = prep_run_sql(&p, o->sql_path, sql, err);
        free(sql);
        if (st == RT_OK && !o->quiet)
            fprintf(stderr, "prep: %s ran in %.1f s\n", o->sql_path, rt_now_s() - t1);
    }
    prep_meta m = {0};
    if (st == RT_OK)
        st = prep_read_meta(&p, &m, err);
    if (st == RT_OK)
        st = check_columns(&p, &m, false, err);
    if (st == RT_OK && o->folds && !o->train_parquet) /* --from wrote its folds in */
        st = prep_fold(&p, &m, err);
    if (st == RT_OK && m.ntest > 0)
        st = check_columns(&p, &m, true, err);
    if (st == RT_OK)
        st = prep_write_dataset(p.db, &m, o, rep, err);
    prep_meta_free(&m);
    sqlite3_close(p.db);
    prep_stats_free(p.stats);
    rt_tmp_untrack(db_slot);
    if (db_tmp[0])
        remove(db_tmp);
    rep->seconds = rt_now_s() - t0;
    return st;
}
