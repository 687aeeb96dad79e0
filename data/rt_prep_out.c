/* rt_prep_out.c — the second half of the prep: vocabularies over the
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

/* ---- a vocabulary: value -> index, open addressing over "type:text" keys ---- */

typedef struct vocab {
    char **values;  /* by index; NULL for SQL NULL */
    int32_t n;
    char **keys;    /* hash table */
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

static rt_status build_vocab(sqlite3 *db, const prep_meta *m, const char *col, vocab *v,
                             char *err)
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
    int sql;        /* column in the SELECT */
    vocab *v;       /* categorical */
    double n, mean, m2; /* continuous: Welford over the training rows */
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
    static const char *const yes[] = {"1", "true", "t", "yes", "y"}, *const no[] = {"0", "false", "f", "no", "n"};
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
                             const rt_prep_opts *o, const char *prefix, rt_ds_part *parts,
                             int vcol, bool stats, double max_log_label, int64_t *defaulted,
                             char *err)
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
    int64_t *rows = calloc((size_t)nparts, sizeof *rows), *fill = calloc((size_t)nparts, sizeof *fill);
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
                double x = sqlite3_column_double(st, c);
                if (t == SQLITE_NULL || !isfinite(x))
                    s = rt_err(err, RT_ERR_INVALID, "%s row %lld: the label %s is %s", table,
                               (long long)i + 1, oc->c.name, t == SQLITE_NULL ? "NULL" : "not finite");
                else if (max_log_label > 0 && x > max_log_label * 1.01 + 1e-6)
                    s = rt_err(err, RT_ERR_INVALID,
                               "%s row %lld: the label %s is %g, above ln(max_label) = %g: with "
                               "label_transform = log the script must write the log of the target "
                               "(and max_label the largest raw target)",
                               table, (long long)i + 1, oc->c.name, x, max_log_label);
                ((float *)d)[r] = (float)x;
                break;
            }
            case RT_ROLE_VALIDATION:
                if (!flag_value(st, c, &((uint8_t *)d)[r]))
                    s = rt_err(err, RT_ERR_INVALID,
                               "%s row %lld: the validation flag %s is '%s' (0 or 1, true or "
                               "false, yes or no)",
                               table, (long long)i + 1, oc->c.name,
                               t == SQLITE_NULL ? "NULL" : (const char *)sqlite3_column_text(st, c));
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
        for (int c = 0; stats && c < ncols; c++) {
            outcol *oc = &cols[c];
            if (oc->role != RT_ROLE_CONTINUOUS || (vcol >= 0 && ((uint8_t *)data[p * ncols + vcol])[r]))
                continue;
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
    rep->has_validation = m->validation[0] != 0;
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
        ds.max_label = m->max_label;
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
        s = ds.cols ? rt_dataset_write_manifest(&ds, err) : rt_err(err, RT_ERR_NOMEM, "out of memory");
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
    free(tr);
    free(te);
    free(ds.parts);
    free(ds.test);
    return s;
}
