/* prep_vocab.c — what prep_out.c reads values with: a categorical
 * column's vocabulary (value -> index, open addressing over "type:text"
 * keys), the label's classes and task (the binary positive class second),
 * and a cell read as a flag, a number or a class. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prep_internal.h"
#include "rt_config.h"

/* The key of a column value: its storage class and its text. */
void prep_value_key(sqlite3_stmt *st, int col, char *buf, size_t len)
{
    int t = sqlite3_column_type(st, col);
    const char *txt = (const char *)sqlite3_column_text(st, col);
    snprintf(buf, len, "%d:%s", t, t == SQLITE_NULL || !txt ? "" : txt);
}

int32_t prep_vocab_find(const prep_vocab *v, const char *key)
{
    for (size_t i = rt_hash_str(key) & (v->cap - 1);; i = (i + 1) & (v->cap - 1)) {
        if (!v->keys[i])
            return -1;
        if (!strcmp(v->keys[i], key))
            return v->idx[i];
    }
}

static bool vocab_add(prep_vocab *v, const char *key, const char *text)
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

void prep_vocab_free(prep_vocab *v)
{
    for (size_t i = 0; i < v->cap; i++)
        free(v->keys[i]);
    free(v->keys);
    free(v->idx);
    /* values are handed to the manifest's columns */
}

rt_status prep_build_vocab(sqlite3 *db, const prep_meta *m, const char *col, prep_vocab *v,
                           char *err)
{
    char q[1024], ic[140], it[140], ie[140];
    prep_ident(col, ic, sizeof ic);
    /* the blocks that hold the column (check_columns found it in each table) */
    int bt = prep_block_of(db, (char(*)[64])m->train_blocks, m->ntrain, col);
    int be = m->ntest ? prep_block_of(db, (char(*)[64])m->test_blocks, m->ntest, col) : -1;
    if (bt < 0 || (m->ntest && be < 0))
        return rt_err(err, RT_ERR_INVALID, "categorical column %s: not in %s", col,
                      bt < 0 ? m->train_table : m->test_table);
    if (m->ntest)
        snprintf(q, sizeof q,
                 "SELECT DISTINCT %s FROM (SELECT %s FROM %s UNION ALL SELECT %s FROM %s) "
                 "ORDER BY 1",
                 ic, ic, prep_ident(m->train_blocks[bt], it, sizeof it), ic,
                 prep_ident(m->test_blocks[be], ie, sizeof ie));
    else
        snprintf(q, sizeof q, "SELECT DISTINCT %s FROM %s ORDER BY 1", ic,
                 prep_ident(m->train_blocks[bt], it, sizeof it));
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
        return rt_err(err, RT_ERR_INVALID, "categorical column %s: %s", col, sqlite3_errmsg(db));
    rt_status s = RT_OK;
    while (s == RT_OK && sqlite3_step(st) == SQLITE_ROW) {
        char key[600];
        prep_value_key(st, 0, key, sizeof key);
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

int64_t prep_count_rows(sqlite3 *db, const char *table)
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

/* A validation flag: 0/1 (any number), or true/false, yes/no, t/f, y/n. */
bool prep_flag_value(sqlite3_stmt *st, int c, uint8_t *out)
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
bool prep_number_value(sqlite3_stmt *st, int c, float *out)
{
    *out = 0;
    int t = sqlite3_column_type(st, c);
    if (t == SQLITE_NULL || t == SQLITE_BLOB)
        return false;
    if (t == SQLITE_TEXT) {
        const char *s = (const char *)sqlite3_column_text(st, c);
        double x = 0;
        if (s && prep_decimal(s, &x)) /* (plain decimals fast, the same value) */
            return (*out = (float)x), true;
        char *end = NULL;
        x = s ? strtod(s, &end) : 0;
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

/* An id: an integer, or text that is one (0 too), within 32 bits. */
bool prep_id_value(sqlite3_stmt *st, int c, int32_t *out)
{
    *out = 0;
    int t = sqlite3_column_type(st, c);
    long long v = 0;
    if (t == SQLITE_INTEGER) {
        v = sqlite3_column_int64(st, c);
    } else if (t == SQLITE_TEXT) {
        const char *s = (const char *)sqlite3_column_text(st, c);
        char *end = NULL;
        errno = 0;
        v = s ? strtoll(s, &end, 10) : 0;
        if (!s || end == s || *end || errno)
            return false;
    } else {
        return false;
    }
    if (v < INT32_MIN || v > INT32_MAX)
        return false;
    *out = (int32_t)v;
    return true;
}

/* A label value as a class name: text as it is, a number (1, 1.0, '1')
 * written as %.17g so every spelling of it is one class; false for NULL. */
bool prep_class_key(sqlite3_stmt *st, int c, char *buf, size_t len)
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
/* Binary: the positive class (the model's class 1) goes second — the one
 * meta names (positive_class), else the minority of the training table's
 * rows (a tie keeps the sorted order). */
static rt_status positive_second(sqlite3 *db, const prep_meta *m, const char *table, char **names,
                                 rt_prep_report *rep, char *err)
{
    int64_t rows[2] = {0, 0};
    char q[512], il[140], it[140];
    snprintf(q, sizeof q, "SELECT %s, count(*) FROM %s GROUP BY 1",
             prep_ident(m->label, il, sizeof il), prep_ident(table, it, sizeof it));
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
        return rt_err(err, RT_ERR_INVALID, "label %s: %s", m->label, sqlite3_errmsg(db));
    while (sqlite3_step(st) == SQLITE_ROW) {
        char key[600];
        if (prep_class_key(st, 0, key, sizeof key))
            rows[strcmp(key, names[0]) == 0 ? 0 : 1] += sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    int pos = 1;
    if (m->positive_class[0]) {
        pos = !strcmp(m->positive_class, names[0])   ? 0
              : !strcmp(m->positive_class, names[1]) ? 1
                                                     : -1;
        if (pos < 0)
            return rt_err(err, RT_ERR_INVALID,
                          "positive_class '%s' is not a class of the label %s (its classes: "
                          "'%s', '%s')",
                          m->positive_class, m->label, names[0], names[1]);
        snprintf(rep->positive_why, sizeof rep->positive_why, "as given (%.1f%% of the rows)",
                 100.0 * (double)rows[pos] / (double)(rows[0] + rows[1] ? rows[0] + rows[1] : 1));
    } else {
        pos = rows[0] < rows[1] ? 0 : 1;
        snprintf(rep->positive_why, sizeof rep->positive_why,
                 "the minority class, %.1f%% of the rows; positive_class chooses",
                 100.0 * (double)rows[pos] / (double)(rows[0] + rows[1] ? rows[0] + rows[1] : 1));
    }
    if (pos == 0) {
        char *t = names[0];
        names[0] = names[1];
        names[1] = t;
    }
    snprintf(rep->positive_class, sizeof rep->positive_class, "%s", names[1]);
    return RT_OK;
}

rt_status prep_label_task(sqlite3 *db, const prep_meta *m, rt_prep_report *rep, prep_vocab *v,
                          char *err)
{
    char q[512], il[140], it[140];
    int lb = prep_block_of(db, (char(*)[64])m->train_blocks, m->ntrain, m->label);
    const char *table = m->train_blocks[lb < 0 ? 0 : lb];
    snprintf(q, sizeof q, "SELECT DISTINCT %s FROM %s", prep_ident(m->label, il, sizeof il),
             prep_ident(table, it, sizeof it));
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
        return rt_err(err, RT_ERR_INVALID, "label %s: %s", m->label, sqlite3_errmsg(db));
    char **names = NULL, first_text[80] = "";
    int n = 0;
    bool text = false, integral = true, many = false;
    rt_status s = RT_OK;
    while (s == RT_OK && sqlite3_step(st) == SQLITE_ROW) {
        char key[600];
        if (!prep_class_key(st, 0, key, sizeof key))
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
    if (s == RT_OK && m->positive_class[0] && strcmp(task, "binary") != 0)
        s = rt_err(err, RT_ERR_INVALID,
                   "positive_class '%s' is for a binary task; the label %s "
                   "makes this one %s",
                   m->positive_class, m->label, task);
    if (s == RT_OK && cls) {
        qsort(names, (size_t)n, sizeof *names, cmp_class);
        if (!strcmp(task, "binary"))
            s = positive_second(db, m, table, names, rep, err);
        for (int k = 0; k < n && s == RT_OK; k++)
            if (s == RT_OK && !vocab_add(v, names[k], names[k]))
                s = rt_err(err, RT_ERR_NOMEM, "out of memory");
        rep->nclasses = n;
    }
    for (int k = 0; k < n; k++)
        free(names[k]);
    free(names);
    return s;
}
