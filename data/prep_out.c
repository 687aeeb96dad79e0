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

/* ---- rows -> shards ------------------------------------------------------------------ */

typedef struct outcol {
    rt_shard_col c;
    rt_col_role role;
    prep_vocab *v;       /* categorical; a classification's label: its classes */
    int64_t *class_rows; /* a classification's label: training rows per class */
    double n, mean, m2;  /* continuous (and the label): Welford over the training rows */
    int64_t defaulted, text_defaulted; /* continuous: NULLs, and text made missing (lenient) */
    double lo, hi;                     /* the label: its training rows' range */
    prep_sample qs;                    /* continuous: a sample for its quantiles */
} outcol;

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

/* A continuous value: its float, or missing (0, counted in the column):
 * NULL, a missing mark (NA, NaN, ...: prep_is_missing), a non-finite
 * number, or — only when lenient, else an error naming the row — other
 * text that is not a number. */
static rt_status continuous_value(sqlite3_stmt *st, int k, outcol *oc, const char *table,
                                  int64_t row, bool lenient, float *out, char *err)
{
    if (prep_number_value(st, k, out))
        return RT_OK;
    const int t = sqlite3_column_type(st, k);
    const bool mark = t == SQLITE_TEXT && prep_is_missing((const char *)sqlite3_column_text(st, k));
    if (t == SQLITE_TEXT && !mark && !lenient)
        return rt_err(err, RT_ERR_INVALID,
                      "%s row %lld: the continuous column %s holds '%.60s', not a number (make it "
                      "categorical, or --lenient to read such values as missing, counted per "
                      "column)",
                      table, (long long)row, oc->c.name, (const char *)sqlite3_column_text(st, k));
    if (t == SQLITE_TEXT && !mark)
        oc->text_defaulted++;
    else
        oc->defaulted++;
    return RT_OK;
}

/* Rows per row group: 64 MiB of columns at most, 1024 to 65536 rows. */
static int64_t group_rows(const rt_prep_opts *o, int ncols)
{
    if (o->rows_per_group > 0)
        return o->rows_per_group;
    int64_t g = (64ll << 20) / (4 * (int64_t)(ncols > 0 ? ncols : 1));
    return g < 1024 ? 1024 : g > 65536 ? 65536 : g;
}

/* The rows of the feature table (its blocks) into nparts shards (round
 * robin); with stats, the continuous columns' mean and variance over the
 * rows not flagged for validation accumulate in cols. */
static rt_status write_table(sqlite3 *db, char (*blocks)[64], int nb, const char *table,
                             outcol *cols, int ncols, int nparts, const rt_prep_opts *o,
                             const char *prefix, rt_ds_part *parts, int vcol, bool stats,
                             double max_log_label, char *err)
{
    int64_t n = prep_count_rows(db, blocks[0]);
    if (n < 0)
        return rt_err(err, RT_ERR_INVALID, "table %s: %s", table, sqlite3_errmsg(db));
    if (n > (int64_t)INT32_MAX * nparts)
        return rt_err(err, RT_ERR_INVALID, "table %s: too many rows", table);
    const char **names = malloc(((size_t)ncols + 1) * sizeof *names);
    if (!names)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    for (int c = 0; c < ncols; c++)
        names[c] = cols[c].c.name;
    prep_cursor cur;
    rt_status s = prep_cursor_open(db, blocks, nb, table, names, ncols, &cur, err);
    free(names);
    if (s != RT_OK)
        return s;
    /* per part: a shard writer and one row group's columns (memory: nparts
     * row groups, whatever the table's size; no more than a part's rows:
     * a 9,000-column table of 500 rows took 134 MB for 2 x 1,864 rows) */
    int64_t group = group_rows(o, ncols);
    const int64_t part_rows = (n + nparts - 1) / nparts;
    group = part_rows > 0 && part_rows < group ? part_rows : group;
    void **data = calloc((size_t)nparts * (size_t)ncols, sizeof *data);
    int64_t *rows = calloc((size_t)nparts, sizeof *rows),
            *fill = calloc((size_t)nparts, sizeof *fill);
    rt_shard_writer **w = calloc((size_t)nparts, sizeof *w);
    rt_shard_col *sc = calloc((size_t)ncols, sizeof *sc);
    if (!data || !rows || !fill || !w || !sc)
        s = rt_err(err, RT_ERR_NOMEM, "out of memory");
    for (int c = 0; sc && c < ncols; c++)
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
    int more = 0;
    while (s == RT_OK && (more = prep_cursor_next(&cur, blocks, err)) == 1) {
        int p = (int)(i % nparts);
        int64_t r = fill[p]++;
        rows[p]++;
        for (int c = 0; c < ncols && s == RT_OK; c++) {
            outcol *oc = &cols[c];
            int k;
            sqlite3_stmt *st = prep_cursor_col(&cur, c, &k);
            void *d = data[p * ncols + c];
            int t = sqlite3_column_type(st, k);
            switch (oc->role) {
            case RT_ROLE_CATEGORICAL: {
                char key[600];
                prep_value_key(st, k, key, sizeof key);
                int32_t x = prep_vocab_find(oc->v, key);
                if (x < 0)
                    s = rt_err(err, RT_ERR_INVALID, "%s row %lld: %s value not in its vocabulary",
                               table, (long long)i + 1, oc->c.name);
                ((int32_t *)d)[r] = x;
                break;
            }
            case RT_ROLE_CONTINUOUS: /* NULL becomes 0, counted; text: see continuous_value */
                s = continuous_value(st, k, oc, table, i + 1, o->lenient, &((float *)d)[r], err);
                break;
            case RT_ROLE_LABEL: {
                float xf = 0;
                double x = 0;
                if (oc->v) { /* a class: its index */
                    char key[600];
                    int32_t cl =
                        prep_class_key(st, k, key, sizeof key) ? prep_vocab_find(oc->v, key) : -1;
                    if (cl < 0)
                        s = rt_err(err, RT_ERR_INVALID, "%s row %lld: the label %s is %s", table,
                                   (long long)i + 1, oc->c.name,
                                   t == SQLITE_NULL ? "NULL" : "not one of its classes");
                    ((float *)d)[r] = (float)cl;
                    break;
                }
                if (prep_number_value(st, k, &xf))
                    x = sqlite3_column_type(st, k) == SQLITE_TEXT ? xf
                                                                  : sqlite3_column_double(st, k);
                if (t == SQLITE_NULL || !prep_number_value(st, k, &xf))
                    s = rt_err(err, RT_ERR_INVALID,
                               "%s row %lld: the label %s is %s%s%s (a "
                               "regression's label is a finite number)",
                               table, (long long)i + 1, oc->c.name, t == SQLITE_NULL ? "NULL" : "'",
                               t == SQLITE_NULL ? "" : (const char *)sqlite3_column_text(st, k),
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
                if (!prep_number_value(st, k, &((float *)d)[r]) || ((float *)d)[r] < 0)
                    s = rt_err(err, RT_ERR_INVALID,
                               "%s row %lld: the weight %s is '%s' (a finite number >= 0)", table,
                               (long long)i + 1, oc->c.name,
                               t == SQLITE_NULL ? "NULL"
                                                : (const char *)sqlite3_column_text(st, k));
                break;
            case RT_ROLE_VALIDATION:
                if (!prep_flag_value(st, k, &((uint8_t *)d)[r]))
                    s = rt_err(err, RT_ERR_INVALID,
                               "%s row %lld: the validation flag %s is '%s' (0 or 1, true or "
                               "false, yes or no)",
                               table, (long long)i + 1, oc->c.name,
                               t == SQLITE_NULL ? "NULL"
                                                : (const char *)sqlite3_column_text(st, k));
                break;
            case RT_ROLE_ID:
                if (!prep_id_value(st, k, &((int32_t *)d)[r]))
                    s = rt_err(err, RT_ERR_INVALID,
                               "%s row %lld: the id %s is '%.60s', not an integer of 32 bits",
                               table, (long long)i + 1, oc->c.name,
                               t == SQLITE_NULL ? "NULL"
                                                : (const char *)sqlite3_column_text(st, k));
                break;
            case RT_ROLE_DATE: {
                const char *txt = (const char *)sqlite3_column_text(st, k);
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
            if (oc->role == RT_ROLE_CONTINUOUS)
                s = prep_quantile_add(&oc->qs, (uint64_t)c, x, err);
            if (oc->n == 0 || x < oc->lo)
                oc->lo = x;
            if (oc->n == 0 || x > oc->hi)
                oc->hi = x;
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
    if (s == RT_OK && more < 0)
        s = RT_ERR_INVALID;
    prep_cursor_close(&cur);
    if (s == RT_OK && i != n)
        s = rt_err(err, RT_ERR_INVALID, "table %s: %lld rows counted, %lld read", table,
                   (long long)n, (long long)i);
    for (int p = 0; w && p < nparts; p++) {
        if (s == RT_OK && fill[p] > 0) /* the last, partial group */
            s = flush_group(w[p], sc, ncols, data + p * ncols, fill[p], vcol,
                            &parts[p].validation_rows, err);
        parts[p].rows = rows ? rows[p] : 0;
        if (s == RT_OK)
            s = rt_shard_writer_close(w[p], err);
        else if (w[p])
            rt_shard_writer_abort(w[p]);
    }
    for (int k = 0; data && k < nparts * ncols; k++)
        free(data[k]);
    free(data);
    free(rows);
    free(fill);
    free(w);
    free(sc);
    return s;
}

/* The continuous values that were missing (or text, when lenient), in all
 * and for the columns with the most of them. */
static void report_defaulted(const outcol *tr, const outcol *te, int nfeat, rt_prep_report *rep)
{
    rep->cont_defaulted = 0;
    rep->ndefaulted = 0;
    for (int c = 0; c < nfeat; c++) {
        if (tr[c].role != RT_ROLE_CONTINUOUS)
            continue;
        int64_t miss = tr[c].defaulted + te[c].defaulted,
                text = tr[c].text_defaulted + te[c].text_defaulted;
        rep->cont_defaulted += miss + text;
        if (miss + text == 0)
            continue;
        int at = rep->ndefaulted < 8 ? rep->ndefaulted++ : 7;
        if (at == 7 && rep->ndefaulted == 8 &&
            rep->defaulted[7].missing + rep->defaulted[7].text >= miss + text)
            continue;
        snprintf(rep->defaulted[at].name, sizeof rep->defaulted[at].name, "%s", tr[c].c.name);
        rep->defaulted[at].missing = miss;
        rep->defaulted[at].text = text;
        for (int k = at; k > 0 && rep->defaulted[k].missing + rep->defaulted[k].text >
                                      rep->defaulted[k - 1].missing + rep->defaulted[k - 1].text;
             k--) { /* most first */
            rt_prep_defaulted t = rep->defaulted[k];
            rep->defaulted[k] = rep->defaulted[k - 1];
            rep->defaulted[k - 1] = t;
        }
    }
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
    prep_vocab *vocabs = calloc((size_t)(m->ncat ? m->ncat : 1), sizeof *vocabs);
    outcol *tr = calloc((size_t)nc + 4, sizeof *tr), *te = calloc((size_t)nc + 4, sizeof *te);
    rt_dataset ds = {0};
    rt_status s = vocabs && tr && te ? RT_OK : rt_err(err, RT_ERR_NOMEM, "out of memory");
    /* with a log label, no training label may be above ln(max_label) */
    bool logged = false, stdz = false;
    rt_label_transform_parse(m->label_transform, &logged, &stdz, NULL);
    const double max_log = logged && m->max_label > 0 ? log(m->max_label) : 0;
    rep->cont_defaulted = 0;
    rep->nclasses = 0;
    rep->has_validation = m->validation[0] != 0;
    prep_vocab classes = {0};
    if (s == RT_OK)
        s = prep_label_task(db, m, rep, &classes, err);
    const bool cls = rep->nclasses > 0;
    if (s == RT_OK && !cls && !stdz && !(m->max_label > 0))
        s = rt_err(err, RT_ERR_INVALID,
                   "%s: a regression needs max_label (a positive number: the "
                   "largest raw target), or label_transform = standardize",
                   o->sql_path ? o->sql_path : "--from (--max-label)");
    for (int c = 0; c < m->ncat && s == RT_OK; c++)
        s = prep_build_vocab(db, m, m->cat[c], &vocabs[c], err);
    int ntr = 0, nte = 0, vcol = -1;
    for (int c = 0; c < m->ncat; c++) {
        add_col(tr, &ntr, m->cat[c], RT_ROLE_CATEGORICAL, RT_COL_I32);
        tr[ntr - 1].v = &vocabs[c];
    }
    for (int c = 0; c < m->ncont; c++)
        add_col(tr, &ntr, m->cont[c], RT_ROLE_CONTINUOUS, RT_COL_F32);
    memcpy(te, tr, (size_t)ntr * sizeof *tr); /* before any sample: te's stay empty */
    for (int c = 0; c < ntr && s == RT_OK; c++)
        if (tr[c].role == RT_ROLE_CONTINUOUS)
            s = prep_quantile_init(&tr[c].qs, m->ncont, err);
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
    /* the id: the test rows', and the training rows' where their table has
     * it (a validation row's predictions name it: predict_validation) */
    const bool train_ids =
        m->id[0] && prep_block_of(db, (char(*)[64])m->train_blocks, m->ntrain, m->id) >= 0;
    if (train_ids)
        add_col(tr, &ntr, m->id, RT_ROLE_ID, RT_COL_I32);
    if (m->id[0])
        add_col(te, &nte, m->id, RT_ROLE_ID, RT_COL_I32);
    ds.nparts = o->partitions;
    ds.ntest = m->ntest > 0 ? 1 : 0;
    ds.parts = calloc((size_t)ds.nparts, sizeof *ds.parts);
    ds.test = calloc(1, sizeof *ds.test);
    if (s == RT_OK && (!ds.parts || !ds.test))
        s = rt_err(err, RT_ERR_NOMEM, "out of memory");
    if (s == RT_OK)
        s = write_table(db, (char(*)[64])m->train_blocks, m->ntrain, m->train_table, tr, ntr,
                        ds.nparts, o, "train", ds.parts, vcol, true, max_log, err);
    if (s == RT_OK && ds.ntest)
        s = write_table(db, (char(*)[64])m->test_blocks, m->ntest, m->test_table, te, nte, 1, o,
                        "test", ds.test, -1, false, 0, err);
    if (s == RT_OK)
        report_defaulted(tr, te, m->ncat + m->ncont, rep);
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
        ds.label_lo = label->n > 0 && !cls ? (logged ? exp(label->lo) : label->lo) : 1;
        ds.label_hi = label->n > 0 && !cls ? (logged ? exp(label->hi) : label->hi) : 0;
        ds.label_mean = label->n > 0 ? label->mean : 0.0;
        ds.label_std = label->n > 0 && label->m2 > 0 ? sqrt(label->m2 / label->n) : 1.0;
        ds.ncols = ntr + (m->id[0] && !train_ids ? 1 : 0); /* the id once */
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
                if (s == RT_OK)
                    s = prep_quantile_finish(&tr[c].qs, dc->std, &dc->quantiles, &dc->nquantiles,
                                             err);
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
        /* the vocabularies' values now belong to ds */
        for (int c = 0; ds.cols && c < ds.ncols; c++) {
            for (int32_t v = 0; ds.cols[c].vocab && v < ds.cols[c].vocab_size; v++)
                free(ds.cols[c].vocab[v]);
            free(ds.cols[c].vocab);
            free(ds.cols[c].quantiles);
        }
        free(ds.cols);
        free(ds.source_json);
    }
    for (int c = 0; c < m->ncat; c++) {
        for (int32_t v = 0; vocabs[c].values && v < vocabs[c].n; v++)
            free(vocabs[c].values[v]);
        free(vocabs[c].values);
        prep_vocab_free(&vocabs[c]);
    }
    free(vocabs);
    for (int32_t v = 0; classes.values && v < classes.n; v++)
        free(classes.values[v]);
    free(classes.values);
    prep_vocab_free(&classes);
    free(label->class_rows);
    for (int c = 0; tr && c < nc + 4; c++)
        prep_quantile_free(&tr[c].qs);
    free(tr);
    free(te);
    free(ds.parts);
    free(ds.test);
    return s;
}
