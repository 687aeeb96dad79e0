/* prep_out.c — the second half of the prep: vocabularies over the
 * feature tables, the rows dealt into shards, the manifest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prep_internal.h"
#include "rt_config.h"
#include "rt_dataset.h"
#include "rt_json.h"
#include "rt_model_names.h"

/* ---- a vocabulary: value -> index, open addressing over "type:text" keys ---- */

typedef struct vocab {
    char **values; /* by index; NULL for SQL NULL */
    int32_t n;
    char **keys; /* hash table */
    int32_t *idx;
    size_t cap;
} vocab;

/* The key of a column value: its storage class and its text. */
static void value_key(sqlite3_stmt *st, int col, char *buf, size_t len)
{
    int t = sqlite3_column_type(st, col);
    const char *txt = (const char *)sqlite3_column_text(st, col);
    snprintf(buf, len, "%d:%s", t, t == SQLITE_NULL || !txt ? "" : txt);
}

static int32_t vocab_find(const vocab *v, const char *key)
{
    for (size_t i = rt_hash_str(key) & (v->cap - 1);; i = (i + 1) & (v->cap - 1)) {
        if (!v->keys[i])
            return -1;
        if (!strcmp(v->keys[i], key))
            return v->idx[i];
    }
}

static bool vocab_add(vocab *v, const char *key, const char *text)
{
    if ((size_t)(v->n + 1) * 2 > v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        char **k = calloc(cap, sizeof *k);
        int32_t *ix = calloc(cap, sizeof *ix);
        if (!k || !ix) {
            free(k);
            free(ix);
            return false;
        }
        for (size_t i = 0; i < v->cap; i++)
            if (v->keys[i]) {
                size_t j = rt_hash_str(v->keys[i]) & (cap - 1);
                while (k[j])
                    j = (j + 1) & (cap - 1);
                k[j] = v->keys[i];
                ix[j] = v->idx[i];
            }
        free(v->keys);
        free(v->idx);
        v->keys = k;
        v->idx = ix;
        v->cap = cap;
    }
    char **vals = realloc(v->values, (size_t)(v->n + 1) * sizeof *vals);
    if (!vals)
        return false;
    v->values = vals;
    v->values[v->n] = text ? strdup(text) : NULL;
    size_t j = rt_hash_str(key) & (v->cap - 1);
    while (v->keys[j])
        j = (j + 1) & (v->cap - 1);
    v->keys[j] = strdup(key);
    v->idx[j] = v->n++;
    return true;
}

static void vocab_free(vocab *v)
{
    for (size_t i = 0; i < v->cap; i++)
        free(v->keys[i]);
    free(v->keys);
    free(v->idx);
    /* values are handed to the manifest's columns */
}

static rt_status build_vocab(sqlite3 *db, const prep_meta *m, const char *col, vocab *v, char *err)
{
    char q[1024], ic[140], it[140], ie[140];
    prep_ident(col, ic, sizeof ic);
    if (m->test_table[0])
        snprintf(q, sizeof q,
                 "SELECT DISTINCT %s FROM (SELECT %s FROM %s UNION ALL SELECT %s FROM %s) "
                 "ORDER BY 1",
                 ic, ic, prep_ident(m->train_table, it, sizeof it), ic,
                 prep_ident(m->test_table, ie, sizeof ie));
    else
        snprintf(q, sizeof q, "SELECT DISTINCT %s FROM %s ORDER BY 1", ic,
                 prep_ident(m->train_table, it, sizeof it));
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
        return rt_err(err, RT_ERR_INVALID, "categorical column %s: %s", col, sqlite3_errmsg(db));
    rt_status s = RT_OK;
    while (s == RT_OK && sqlite3_step(st) == SQLITE_ROW) {
        char key[600];
        value_key(st, 0, key, sizeof key);
        const char *txt = sqlite3_column_type(st, 0) == SQLITE_NULL
                              ? NULL
                              : (const char *)sqlite3_column_text(st, 0);
        if (!vocab_add(v, key, txt))
            s = rt_err(err, RT_ERR_NOMEM, "out of memory");
        if (v->n > 10000000)
            s = rt_err(err, RT_ERR_INVALID,
                       "categorical column %s has more than 10 million distinct values", col);
    }
    sqlite3_finalize(st);
    return s;
}

/* ---- rows -> shards ------------------------------------------------------------------ */

typedef struct outcol {
    rt_shard_col c;
    rt_col_role role;
    int sql;             /* column in the SELECT */
    vocab *v;            /* categorical; a classification's label: its classes */
    int64_t *class_rows; /* a classification's label: training rows per class */
    double n, mean, m2;  /* continuous (and the label): Welford over the training rows */
} outcol;

static int64_t count_rows(sqlite3 *db, const char *table)
{
    char q[300], it[140];
    snprintf(q, sizeof q, "SELECT count(*) FROM %s", prep_ident(table, it, sizeof it));
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* Read `table` (in row order) into nparts shards, row i into part i % nparts. */
/* A validation flag: 0/1 (any number), or true/false, yes/no, t/f, y/n. */
static bool flag_value(sqlite3_stmt *st, int c, uint8_t *out)
{
    int t = sqlite3_column_type(st, c);
    if (t == SQLITE_INTEGER || t == SQLITE_FLOAT) {
        *out = sqlite3_column_double(st, c) != 0;
        return true;
    }
    const char *s = t == SQLITE_TEXT ? (const char *)sqlite3_column_text(st, c) : NULL;
    static const char *const yes[] = {"1", "true", "t", "yes", "y"}, *const no[] = {"0", "false",
                                                                                    "f", "no", "n"};
    for (size_t i = 0; s && i < 5; i++) {
        if (strcasecmp(s, yes[i]) == 0)
            return (*out = 1), true;
        if (strcasecmp(s, no[i]) == 0)
            return (*out = 0), true;
    }
    return false;
}

/* A continuous value as a float; false (and 0) for NULL, text that is not a
 * number, or a non-finite number. */
static bool number_value(sqlite3_stmt *st, int c, float *out)
{
    *out = 0;
    int t = sqlite3_column_type(st, c);
    if (t == SQLITE_NULL || t == SQLITE_BLOB)
        return false;
    if (t == SQLITE_TEXT) {
        const char *s = (const char *)sqlite3_column_text(st, c);
        char *end = NULL;
        double x = s ? strtod(s, &end) : 0;
        if (!s || end == s || *end || !isfinite(x))
            return false;
        *out = (float)x;
        return true;
    }
    double x = sqlite3_column_double(st, c);
    if (!isfinite(x))
        return false;
    *out = (float)x;
    return true;
}

/* A label value as a class name: text as it is, a number (1, 1.0, '1')
 * written as %.17g so every spelling of it is one class; false for NULL. */
static bool class_key(sqlite3_stmt *st, int c, char *buf, size_t len)
{
    int t = sqlite3_column_type(st, c);
    if (t == SQLITE_NULL)
        return false;
    const char *s = (const char *)sqlite3_column_text(st, c);
    char *end = NULL;
    double x = s ? strtod(s, &end) : 0;
    if (t == SQLITE_INTEGER || t == SQLITE_FLOAT || (s && end != s && !*end && isfinite(x)))
        snprintf(buf, len, "%.17g", t == SQLITE_TEXT ? x : sqlite3_column_double(st, c));
    else
        snprintf(buf, len, "%s", s ? s : "");
    return true;
}

static int cmp_class(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    char *ex, *ey;
    double dx = strtod(x, &ex), dy = strtod(y, &ey);
    if (!*ex && ex != x && !*ey && ey != y) /* numbers in numeric order */
        return dx < dy ? -1 : dx > dy;
    return strcmp(x, y);
}

#define MAX_CLASSES 256
#define INFER_MAX_INT_CLASSES 20

/* The task (meta's, or inferred from the label's distinct values: text, or
 * at most 20 integers, is a classification) and a classification's classes
 * in order (numbers numerically, text by bytes) into v. */
static rt_status label_task(sqlite3 *db, const prep_meta *m, rt_prep_report *rep, vocab *v,
                            char *err)
{
    char q[512], il[140], it[140];
    snprintf(q, sizeof q, "SELECT DISTINCT %s FROM %s", prep_ident(m->label, il, sizeof il),
             prep_ident(m->train_table, it, sizeof it));
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
        return rt_err(err, RT_ERR_INVALID, "label %s: %s", m->label, sqlite3_errmsg(db));
    char **names = NULL, first_text[80] = "";
    int n = 0;
    bool text = false, integral = true, many = false;
    rt_status s = RT_OK;
    while (s == RT_OK && sqlite3_step(st) == SQLITE_ROW) {
        char key[600];
        if (!class_key(st, 0, key, sizeof key))
            continue; /* NULL: write_table names its row */
        char *end;
        double x = strtod(key, &end);
        bool num = end != key && !*end;
        if (!num && !text) {
            text = true;
            snprintf(first_text, sizeof first_text, "%s", key);
        }
        if (!num || x != floor(x))
            integral = false;
        bool dup = false; /* '1' and 1 are one class, but SQL's DISTINCT keeps both */
        for (int k = 0; k < n && !dup; k++)
            dup = !strcmp(names[k], key);
        if (dup)
            continue;
        if (n == MAX_CLASSES) {
            many = true;
            if (!text && !m->task[0])
                continue; /* a regression label: keep counting nothing */
            break;
        }
        char **nn = realloc(names, (size_t)(n + 1) * sizeof *nn);
        if (!nn || !(nn[n] = strdup(key)))
            s = rt_err(err, RT_ERR_NOMEM, "out of memory");
        else
            names = nn, n++;
    }
    sqlite3_finalize(st);
    const bool transformed = strcmp(m->label_transform, "none") != 0;
    const char *task = m->task;
    if (!task[0]) {
        if (transformed || m->max_given) {
            task = "regression";
            snprintf(rep->task_why, sizeof rep->task_why, "%s%s",
                     transformed ? "label_transform " : "meta gives max_label",
                     transformed ? m->label_transform : "");
        } else if (text || (integral && !many && n <= INFER_MAX_INT_CLASSES)) {
            task = n == 2 ? "binary" : "multiclass";
            if (text)
                snprintf(rep->task_why, sizeof rep->task_why,
                         "inferred: the label %s holds text ('%s')", m->label, first_text);
            else
                snprintf(rep->task_why, sizeof rep->task_why,
                         "inferred: the label %s holds %d integer values; set meta task = "
                         "regression if they are amounts",
                         m->label, n);
        } else {
            task = "regression";
            snprintf(rep->task_why, sizeof rep->task_why, "inferred: the label %s holds numbers",
                     m->label);
        }
    } else {
        snprintf(rep->task_why, sizeof rep->task_why, "meta task");
    }
    snprintf(rep->task, sizeof rep->task, "%s", task);
    const bool cls = strcmp(task, "regression") != 0;
    if (s == RT_OK && cls && many)
        s = rt_err(err, RT_ERR_INVALID, "label %s has more than %d classes", m->label, MAX_CLASSES);
    else if (s == RT_OK && cls && n < 2)
        s = rt_err(err, RT_ERR_INVALID,
                   "label %s has %d class%s in table %s: a classification "
                   "needs two at least",
                   m->label, n, n == 1 ? "" : "es", m->train_table);
    else if (s == RT_OK && !strcmp(task, "binary") && n != 2)
        s = rt_err(err, RT_ERR_INVALID,
                   "label %s has %d classes: task binary needs 2 "
                   "(multiclass takes more)",
                   m->label, n);
    else if (s == RT_OK && cls && transformed)
        s = rt_err(err, RT_ERR_INVALID, "label_transform %s is for a regression, not task %s",
                   m->label_transform, task);
    else if (s == RT_OK && !cls && text)
        s = rt_err(err, RT_ERR_INVALID,
                   "task regression, but the label %s holds text ('%s'): "
                   "a regression's label must be a number (or leave task out: a text label is "
                   "a classification)",
                   m->label, first_text);
    if (s == RT_OK && cls) {
        qsort(names, (size_t)n, sizeof *names, cmp_class);
        for (int k = 0; k < n && s == RT_OK; k++)
            if (!vocab_add(v, names[k], names[k]))
                s = rt_err(err, RT_ERR_NOMEM, "out of memory");
        rep->nclasses = n;
    }
    for (int k = 0; k < n; k++)
        free(names[k]);
    free(names);
    return s;
}

/* A row group of a part: its n rows from data[c] into the shard. */
static rt_status flush_group(rt_shard_writer *w, rt_shard_col *sc, int ncols, void **data,
                             int64_t n, int vcol, int64_t *validation_rows, char *err)
{
    for (int c = 0; c < ncols; c++)
        sc[c].data = data[c];
    if (vcol >= 0)
        for (int64_t r = 0; r < n; r++)
            *validation_rows += ((uint8_t *)data[vcol])[r];
    return rt_shard_writer_group(w, sc, n, err);
}

/* The rows of table into nparts shards (round robin); with stats, the
 * continuous columns' mean and variance over the rows not flagged for
 * validation accumulate in cols. */
static rt_status write_table(sqlite3 *db, const char *table, outcol *cols, int ncols, int nparts,
                             const rt_prep_opts *o, const char *prefix, rt_ds_part *parts, int vcol,
                             bool stats, double max_log_label, int64_t *defaulted, char *err)
{
    int64_t n = count_rows(db, table);
    if (n < 0)
        return rt_err(err, RT_ERR_INVALID, "table %s: %s", table, sqlite3_errmsg(db));
    if (n > (int64_t)INT32_MAX * nparts)
        return rt_err(err, RT_ERR_INVALID, "table %s: too many rows", table);
    size_t cap = 256 + (size_t)ncols * 140;
    char *q = malloc(cap), id[140];
    size_t ql = (size_t)snprintf(q, cap, "SELECT ");
    for (int c = 0; c < ncols; c++)
        ql += (size_t)snprintf(q + ql, cap - ql, "%s%s", c ? ", " : "",
                               prep_ident(cols[c].c.name, id, sizeof id));
    snprintf(q + ql, cap - ql, " FROM %s ORDER BY rowid", prep_ident(table, id, sizeof id));
    sqlite3_stmt *st = NULL;
    rt_status s = RT_OK;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
        s = rt_err(err, RT_ERR_INVALID, "table %s: %s (the script's meta names it)", table,
                   sqlite3_errmsg(db));
    free(q);
    /* per part: a shard writer and one row group's columns (memory: nparts
     * row groups, whatever the table's size) */
    int64_t group = o->rows_per_group > 0 ? o->rows_per_group : 65536;
    void **data = calloc((size_t)nparts * (size_t)ncols, sizeof *data);
    int64_t *rows = calloc((size_t)nparts, sizeof *rows),
            *fill = calloc((size_t)nparts, sizeof *fill);
    rt_shard_writer **w = calloc((size_t)nparts, sizeof *w);
    rt_shard_col sc[PREP_MAX_COLS + 8];
    for (int c = 0; c < ncols; c++)
        sc[c] = cols[c].c;
    for (int p = 0; s == RT_OK && p < nparts; p++) {
        for (int c = 0; c < ncols; c++) {
            data[p * ncols + c] = malloc((size_t)group * rt_col_type_size(cols[c].c.type));
            if (!data[p * ncols + c])
                s = rt_err(err, RT_ERR_NOMEM, "out of memory for %d row groups", nparts);
        }
        snprintf(parts[p].file, sizeof parts[p].file, "%s-%05d.rts", prefix, p);
        parts[p].validation_rows = 0;
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", o->out_dir, parts[p].file);
        if (s == RT_OK)
            s = rt_shard_writer_open(path, sc, ncols, &w[p], err);
    }
    int64_t i = 0;
    while (s == RT_OK && sqlite3_step(st) == SQLITE_ROW) {
        int p = (int)(i % nparts);
        int64_t r = fill[p]++;
        rows[p]++;
        for (int c = 0; c < ncols && s == RT_OK; c++) {
            outcol *oc = &cols[c];
            void *d = data[p * ncols + c];
            int t = sqlite3_column_type(st, c);
            switch (oc->role) {
            case RT_ROLE_CATEGORICAL: {
                char key[600];
                value_key(st, c, key, sizeof key);
                int32_t k = vocab_find(oc->v, key);
                if (k < 0)
                    s = rt_err(err, RT_ERR_INVALID, "%s row %lld: %s value not in its vocabulary",
                               table, (long long)i + 1, oc->c.name);
                ((int32_t *)d)[r] = k;
                break;
            }
            case RT_ROLE_CONTINUOUS: /* NULL and non-numbers become 0, counted */
                if (!number_value(st, c, &((float *)d)[r]))
                    (*defaulted)++;
                break;
            case RT_ROLE_LABEL: {
                float xf = 0;
                double x = 0;
                if (oc->v) { /* a class: its index */
                    char key[600];
                    int32_t k = class_key(st, c, key, sizeof key) ? vocab_find(oc->v, key) : -1;
                    if (k < 0)
                        s = rt_err(err, RT_ERR_INVALID, "%s row %lld: the label %s is %s", table,
                                   (long long)i + 1, oc->c.name,
                                   t == SQLITE_NULL ? "NULL" : "not one of its classes");
                    ((float *)d)[r] = (float)k;
                    break;
                }
                if (number_value(st, c, &xf))
                    x = sqlite3_column_type(st, c) == SQLITE_TEXT ? xf
                                                                  : sqlite3_column_double(st, c);
                if (t == SQLITE_NULL || !number_value(st, c, &xf))
                    s = rt_err(err, RT_ERR_INVALID,
                               "%s row %lld: the label %s is %s%s%s (a "
                               "regression's label is a finite number)",
                               table, (long long)i + 1, oc->c.name, t == SQLITE_NULL ? "NULL" : "'",
                               t == SQLITE_NULL ? "" : (const char *)sqlite3_column_text(st, c),
                               t == SQLITE_NULL ? "" : "'");
                else if (max_log_label > 0 && x > max_log_label * 1.01 + 1e-6)
                    s = rt_err(err, RT_ERR_INVALID,
                               "%s row %lld: the label %s is %g, above ln(max_label) = %g: with "
                               "label_transform = log the script must write the log of the target "
                               "(and max_label the largest raw target)",
                               table, (long long)i + 1, oc->c.name, x, max_log_label);
                ((float *)d)[r] = (float)x;
                break;
            }
            case RT_ROLE_WEIGHT:
                if (!number_value(st, c, &((float *)d)[r]) || ((float *)d)[r] < 0)
                    s = rt_err(err, RT_ERR_INVALID,
                               "%s row %lld: the weight %s is '%s' (a finite number >= 0)", table,
                               (long long)i + 1, oc->c.name,
                               t == SQLITE_NULL ? "NULL"
                                                : (const char *)sqlite3_column_text(st, c));
                break;
            case RT_ROLE_VALIDATION:
                if (!flag_value(st, c, &((uint8_t *)d)[r]))
                    s = rt_err(err, RT_ERR_INVALID,
                               "%s row %lld: the validation flag %s is '%s' (0 or 1, true or "
                               "false, yes or no)",
                               table, (long long)i + 1, oc->c.name,
                               t == SQLITE_NULL ? "NULL"
                                                : (const char *)sqlite3_column_text(st, c));
                break;
            case RT_ROLE_ID:
                if (t != SQLITE_INTEGER && !(t == SQLITE_TEXT && sqlite3_column_int64(st, c) != 0))
                    s = rt_err(err, RT_ERR_INVALID, "%s row %lld: the id %s is not an integer",
                               table, (long long)i + 1, oc->c.name);
                ((int32_t *)d)[r] = (int32_t)sqlite3_column_int64(st, c);
                break;
            case RT_ROLE_DATE: {
                const char *txt = (const char *)sqlite3_column_text(st, c);
                int32_t days = 0;
                if (!txt || !rt_parse_date(txt, &days))
                    s = rt_err(err, RT_ERR_INVALID, "%s row %lld: %s '%s' is not a YYYY-MM-DD date",
                               table, (long long)i + 1, oc->c.name, txt ? txt : "NULL");
                ((int32_t *)d)[r] = days;
                break;
            }
            }
        }
        /* the continuous columns' statistics of the training rows (Welford) */
        for (int c = 0; stats && s == RT_OK && c < ncols; c++) {
            outcol *oc = &cols[c];
            if ((oc->role != RT_ROLE_CONTINUOUS && oc->role != RT_ROLE_LABEL) ||
                (vcol >= 0 && ((uint8_t *)data[p * ncols + vcol])[r]))
                continue;
            if (oc->class_rows) {
                oc->class_rows[(int32_t)((float *)data[p * ncols + c])[r]]++;
                continue;
            }
            const double x = ((float *)data[p * ncols + c])[r], dv = x - oc->mean;
            oc->n += 1;
            oc->mean += dv / oc->n;
            oc->m2 += dv * (x - oc->mean);
        }
        i++;
        if (s == RT_OK && fill[p] == group) {
            s = flush_group(w[p], sc, ncols, data + p * ncols, group, vcol,
                            &parts[p].validation_rows, err);
            fill[p] = 0;
        }
    }
    sqlite3_finalize(st);
    if (s == RT_OK && i != n)
        s = rt_err(err, RT_ERR_INVALID, "table %s: %lld rows counted, %lld read", table,
                   (long long)n, (long long)i);
    for (int p = 0; p < nparts; p++) {
        if (s == RT_OK && fill[p] > 0) /* the last, partial group */
            s = flush_group(w[p], sc, ncols, data + p * ncols, fill[p], vcol,
                            &parts[p].validation_rows, err);
        parts[p].rows = rows[p];
        if (s == RT_OK)
            s = rt_shard_writer_close(w[p], err);
        else
            rt_shard_writer_abort(w[p]);
    }
    for (int k = 0; k < nparts * ncols; k++)
        free(data[k]);
    free(data);
    free(rows);
    free(fill);
    free(w);
    return s;
}

static void add_col(outcol *cols, int *n, const char *name, rt_col_role role, rt_col_type type)
{
    outcol *c = &cols[(*n)++];
    memset(c, 0, sizeof *c);
    snprintf(c->c.name, sizeof c->c.name, "%s", name);
    c->c.type = type;
    c->role = role;
}

rt_status prep_write_dataset(sqlite3 *db, const prep_meta *m, const rt_prep_opts *o,
                             rt_prep_report *rep, char *err)
{
    int nc = m->ncat + m->ncont;
    vocab *vocabs = calloc((size_t)(m->ncat ? m->ncat : 1), sizeof *vocabs);
    outcol *tr = calloc((size_t)nc + 4, sizeof *tr), *te = calloc((size_t)nc + 4, sizeof *te);
    rt_dataset ds = {0};
    rt_status s = vocabs && tr && te ? RT_OK : rt_err(err, RT_ERR_NOMEM, "out of memory");
    /* with a log label, no training label may be above ln(max_label) */
    const double max_log = strcmp(m->label_transform, "log") == 0 ? log(m->max_label) : 0;
    rep->cont_defaulted = 0;
    rep->nclasses = 0;
    rep->has_validation = m->validation[0] != 0;
    vocab classes = {0};
    if (s == RT_OK)
        s = label_task(db, m, rep, &classes, err);
    const bool cls = rep->nclasses > 0;
    if (s == RT_OK && !cls && strcmp(m->label_transform, "standardize") != 0 && !(m->max_label > 0))
        s = rt_err(err, RT_ERR_INVALID,
                   "%s: a regression needs max_label (a positive number: the "
                   "largest raw target), or label_transform = standardize",
                   o->sql_path ? o->sql_path : "--from (--max-label)");
    for (int c = 0; c < m->ncat && s == RT_OK; c++)
        s = build_vocab(db, m, m->cat[c], &vocabs[c], err);
    int ntr = 0, nte = 0, vcol = -1;
    for (int c = 0; c < m->ncat; c++) {
        add_col(tr, &ntr, m->cat[c], RT_ROLE_CATEGORICAL, RT_COL_I32);
        tr[ntr - 1].v = &vocabs[c];
    }
    for (int c = 0; c < m->ncont; c++)
        add_col(tr, &ntr, m->cont[c], RT_ROLE_CONTINUOUS, RT_COL_F32);
    memcpy(te, tr, (size_t)ntr * sizeof *tr);
    nte = ntr;
    add_col(tr, &ntr, m->label, RT_ROLE_LABEL, RT_COL_F32);
    outcol *label = &tr[ntr - 1];
    if (cls) {
        label->v = &classes;
        label->class_rows = calloc((size_t)rep->nclasses, sizeof *label->class_rows);
        if (!label->class_rows && s == RT_OK)
            s = rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    if (m->weight[0])
        add_col(tr, &ntr, m->weight, RT_ROLE_WEIGHT, RT_COL_F32);
    if (m->validation[0]) {
        vcol = ntr;
        add_col(tr, &ntr, m->validation, RT_ROLE_VALIDATION, RT_COL_U8);
    }
    if (m->date[0]) {
        add_col(tr, &ntr, m->date, RT_ROLE_DATE, RT_COL_I32);
        add_col(te, &nte, m->date, RT_ROLE_DATE, RT_COL_I32);
    }
    if (m->id[0])
        add_col(te, &nte, m->id, RT_ROLE_ID, RT_COL_I32);
    ds.nparts = o->partitions;
    ds.ntest = m->test_table[0] ? 1 : 0;
    ds.parts = calloc((size_t)ds.nparts, sizeof *ds.parts);
    ds.test = calloc(1, sizeof *ds.test);
    if (s == RT_OK && (!ds.parts || !ds.test))
        s = rt_err(err, RT_ERR_NOMEM, "out of memory");
    if (s == RT_OK)
        s = write_table(db, m->train_table, tr, ntr, ds.nparts, o, "train", ds.parts, vcol, true,
                        max_log, &rep->cont_defaulted, err);
    if (s == RT_OK && ds.ntest)
        s = write_table(db, m->test_table, te, nte, 1, o, "test", ds.test, -1, false, 0,
                        &rep->cont_defaulted, err);
    if (s == RT_OK) {
        snprintf(ds.dir, sizeof ds.dir, "%s", o->out_dir);
        snprintf(ds.label, sizeof ds.label, "%s", m->label);
        snprintf(ds.label_transform, sizeof ds.label_transform, "%s", m->label_transform);
        snprintf(ds.validation, sizeof ds.validation, "%s", m->validation);
        snprintf(ds.id, sizeof ds.id, "%s", m->id);
        snprintf(ds.date, sizeof ds.date, "%s", m->date);
        ds.max_label = cls ? 0 : m->max_label;
        ds.task = !cls                                                    ? RT_TASK_REGRESSION
                  : rep->nclasses == 2 && strcmp(rep->task, "multiclass") ? RT_TASK_BINARY
                                                                          : RT_TASK_MULTICLASS;
        snprintf(ds.weight, sizeof ds.weight, "%s", m->weight);
        ds.label_mean = label->n > 0 ? label->mean : 0.0;
        ds.label_std = label->n > 0 && label->m2 > 0 ? sqrt(label->m2 / label->n) : 1.0;
        ds.ncols = ntr + (m->id[0] ? 1 : 0);
        ds.cols = calloc((size_t)ds.ncols, sizeof *ds.cols);
        for (int c = 0; ds.cols && c < ds.ncols; c++) {
            const outcol *oc = c < ntr ? &tr[c] : &te[nte - 1];
            rt_ds_column *dc = &ds.cols[c];
            snprintf(dc->name, sizeof dc->name, "%s", oc->c.name);
            dc->role = oc->role;
            dc->type = oc->c.type;
            if (oc->v) {
                dc->vocab_size = oc->v->n;
                dc->vocab = oc->v->values;
                oc->v->values = NULL;
            }
            if (oc->class_rows && c < ntr) {
                dc->class_rows = oc->class_rows;
                for (int32_t k = 0; k < dc->vocab_size && s == RT_OK; k++)
                    if (dc->class_rows[k] == 0) /* only validation rows have it */
                        s = rt_err(err, RT_ERR_INVALID,
                                   "class '%s' of the label %s is in validation rows only: the "
                                   "training rows never have it, so the model could not learn "
                                   "it (move some of its rows to training, or drop them)",
                                   dc->vocab[k], m->label);
            }
            if (oc->role == RT_ROLE_CONTINUOUS && c < ntr) {
                dc->has_stats = true;
                dc->mean = oc->n > 0 ? oc->mean : 0.0;
                dc->std = oc->n > 0 ? sqrt(oc->m2 / oc->n) : 0.0;
            }
        }
        for (int p = 0; p < ds.nparts; p++) {
            ds.train_rows += ds.parts[p].rows - ds.parts[p].validation_rows;
            ds.validation_rows += ds.parts[p].validation_rows;
        }
        ds.test_rows = ds.ntest ? ds.test[0].rows : 0;
        rt_jw w;
        rt_jw_init(&w);
        rt_jw_obj(&w);
        if (o->train_parquet) { /* prep --from-parquet */
            rt_jw_kstr(&w, "from_parquet", o->train_parquet);
            if (o->test_parquet)
                rt_jw_kstr(&w, "test_parquet", o->test_parquet);
        } else {
            rt_jw_kstr(&w, "sql", o->sql_path);
            rt_jw_kstr(&w, "input", o->input_dir);
        }
        char when[32];
        time_t now = time(NULL);
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        rt_jw_kstr(&w, "created", when);
        rt_jw_key(&w, "tables");
        rt_jw_obj(&w);
        for (int t = 0; t < rep->ntables; t++)
            rt_jw_kint(&w, rep->table[t], rep->rows_in[t]);
        rt_jw_obj_end(&w);
        rt_jw_obj_end(&w);
        ds.source_json = rt_jw_take(&w, NULL);
        if (s == RT_OK)
            s = ds.cols ? rt_dataset_write_manifest(&ds, err)
                        : rt_err(err, RT_ERR_NOMEM, "out of memory");
        rep->train_rows = ds.train_rows;
        rep->validation_rows = ds.validation_rows;
        rep->test_rows = ds.test_rows;
        /* the vocab values now belong to ds */
        for (int c = 0; ds.cols && c < ds.ncols; c++) {
            for (int32_t v = 0; ds.cols[c].vocab && v < ds.cols[c].vocab_size; v++)
                free(ds.cols[c].vocab[v]);
            free(ds.cols[c].vocab);
        }
        free(ds.cols);
        free(ds.source_json);
    }
    for (int c = 0; c < m->ncat; c++) {
        for (int32_t v = 0; vocabs[c].values && v < vocabs[c].n; v++)
            free(vocabs[c].values[v]);
        free(vocabs[c].values);
        vocab_free(&vocabs[c]);
    }
    free(vocabs);
    for (int32_t v = 0; classes.values && v < classes.n; v++)
        free(classes.values[v]);
    free(classes.values);
    vocab_free(&classes);
    free(label->class_rows);
    free(tr);
    free(te);
    free(ds.parts);
    free(ds.test);
    return s;
}
