/* predict.c — predictions for a dataset's test rows: from the trainer's
 * model at the end of a job, or from a checkpoint (`ringtrain predict`). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_ckpt.h"
#include "rt_config.h"
#include "rt_file.h"
#include "rt_prep.h"
#include "rt_predict.h"
#include "trainer.h"

typedef struct pair {
    int32_t id;
    int64_t row;
} pair;

static int by_id(const void *a, const void *b)
{
    int32_t x = ((const pair *)a)->id, y = ((const pair *)b)->id;
    return (x > y) - (x < y);
}

void rt_pred_format_of(const rt_ckpt *ck, rt_pred_format *f)
{
    *f = (rt_pred_format){
        ck->label,          ck->label_transform, ck->label_mean,    ck->label_std, ck->spec.n_out,
        ck->spec.n_classes, ck->spec.loss,       ck->classes,       true,          0.5,
        .lo = ck->label_lo, .hi = ck->label_hi,  .range_factor = 10};
}

double rt_pred_value(const rt_pred_format *f, const float *z)
{
    bool logged = false, stdz = false;
    rt_label_transform_parse(f->label_transform, &logged, &stdz, NULL);
    double v = z[0];
    if (stdz)
        v = v * f->label_std + f->label_mean;
    return logged ? exp(v) : v;
}

double rt_pred_check_range(const rt_pred_format *f, int64_t id, double v)
{
    if (!(f->range_factor > 0) || !(f->lo <= f->hi))
        return v;
    double span = f->hi - f->lo;
    if (!(span > 0))
        span = fabs(f->hi) > 0 ? fabs(f->hi) : 1;
    const double lo = f->lo - (f->range_factor - 1) * span,
                 hi = f->hi + (f->range_factor - 1) * span;
    if (v >= lo && v <= hi) /* also false for NaN: counted */
        return v;
    if (f->range) {
        if (f->range->n < RT_PRED_RANGE_SHOWN) {
            f->range->first[f->range->n] = id;
            f->range->value[f->range->n] = v;
        }
        f->range->n++;
    }
    if (!f->clip)
        return v;
    return v < lo ? lo : v > hi ? hi : v != v ? f->lo : v;
}

void rt_pred_range_say(const rt_pred_format *f, const char *what, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!f->range || f->range->n == 0)
        return;
    size_t n = (size_t)snprintf(buf, len,
                                "%lld prediction%s outside the training targets' range [%g, %g] "
                                "by more than %gx its width (%s",
                                (long long)f->range->n, f->range->n == 1 ? "" : "s", f->lo, f->hi,
                                f->range_factor, what);
    for (int64_t i = 0; i < f->range->n && i < RT_PRED_RANGE_SHOWN && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%lld: %g", i ? ", " : " ",
                              (long long)f->range->first[i], f->range->value[i]);
    if (n < len)
        snprintf(buf + n, len - n, "%s)%s", f->range->n > RT_PRED_RANGE_SHOWN ? ", ..." : "",
                 f->clip ? ": clipped to it" : ": [output] clip_predictions = true clips them");
}

/* CSV quoting of a class name (commas, quotes, newlines). */
static size_t csv_text(const char *s, char *buf, size_t len)
{
    if (!strpbrk(s, ",\"\n\r"))
        return (size_t)snprintf(buf, len, "%s", s);
    size_t n = (size_t)snprintf(buf, len, "\"");
    for (; *s && n + 3 < len; s++) {
        if (*s == '"')
            buf[n++] = '"';
        buf[n++] = *s;
    }
    n += (size_t)snprintf(buf + n, len > n ? len - n : 0, "\"");
    return n;
}

/* A regression with label_transform = log writes exp(output), the target
 * itself: its column drops the label's log prefix (log_price -> price,
 * LogSales -> Sales; Rossmann's Sales, the log of sales, stays Sales). */
static const char *target_name(const rt_pred_format *f)
{
    static const char *const prefix[] = {"log_", "log", "ln_", "Log_", "Log", "LOG_"};
    bool logged = false;
    rt_label_transform_parse(f->label_transform, &logged, NULL, NULL);
    if (!logged)
        return f->label;
    for (size_t i = 0; i < sizeof prefix / sizeof prefix[0]; i++) {
        size_t n = strlen(prefix[i]);
        /* "log" alone, or "logistic": no prefix to drop */
        if (!strncmp(f->label, prefix[i], n) && f->label[n] &&
            (prefix[i][n - 1] == '_' || (f->label[n] >= 'A' && f->label[n] <= 'Z')))
            return f->label + n;
    }
    return f->label;
}

size_t rt_pred_header(const rt_pred_format *f, char *buf, size_t len)
{
    if (f->nclasses == 0)
        return (size_t)snprintf(buf, len, ",%s", target_name(f));
    size_t n = (size_t)snprintf(buf, len, ",%s", f->label);
    for (int k = 0; f->proba && k < f->nclasses && n + 1 < len; k++) {
        char name[300];
        snprintf(name, sizeof name, "p_%s", f->classes[k] ? f->classes[k] : "");
        n += (size_t)snprintf(buf + n, len - n, ",");
        n += csv_text(name, buf + n, len - n);
    }
    return n;
}

size_t rt_pred_fields(const rt_pred_format *f, int64_t id, const float *z, char *buf, size_t len)
{
    if (f->nclasses == 0) {
        bool logged = false, stdz = false;
        rt_label_transform_parse(f->label_transform, &logged, &stdz, NULL);
        /* a log label alone: exp in float, as the numbers always were */
        double v = logged && !stdz ? expf(z[0]) : rt_pred_value(f, z);
        v = rt_pred_check_range(f, id, v);
        return (size_t)snprintf(buf, len, ",%.6g", v);
    }
    rt_task_info t = {.nclasses = f->nclasses, .n_out = f->n_out, .loss = f->loss};
    double p[RT_MODEL_MAX_CLASSES];
    rt_task_proba(&t, z, p);
    int c = rt_task_predict_class(&t, p, f->threshold);
    size_t n = (size_t)snprintf(buf, len, ",");
    n += csv_text(f->classes[c] ? f->classes[c] : "", buf + n, len - n);
    for (int k = 0; f->proba && k < f->nclasses && n + 1 < len; k++)
        n += (size_t)snprintf(buf + n, len - n, ",%.6g", p[k]);
    return n;
}

rt_status rt_predict_rows(rt_dp *d, const rt_rows *test, const rt_pred_format *f,
                          const char *path, char *err)
{
    float *pred = malloc((size_t)(test->n ? test->n : 1) * (size_t)f->n_out * sizeof *pred);
    if (!pred)
        return rt_err(err, RT_ERR_NOMEM, "out of memory for %lld predictions",
                      (long long)test->n);
    rt_status st = rt_dp_forward_eval(d, test->cat, test->cont, NULL, test->n, pred, err);
    if (st == RT_OK)
        st = rt_predict_write(test, pred, f, path, err);
    free(pred);
    return st;
}

/* The rows' CSV sorted by id: "Id[,true_LABEL],..." (truth: the label as
 * the rows hold it, in the label's unit or its class name). */
static rt_status write_csv(const rt_rows *r, const float *pred, const rt_pred_format *f, bool truth,
                           const char *path, char *err)
{
    pair *pr = malloc((size_t)(r->n ? r->n : 1) * sizeof *pr);
    if (!pr)
        return rt_err(err, RT_ERR_NOMEM, "out of memory for %lld predictions", (long long)r->n);
    for (int64_t i = 0; i < r->n; i++)
        pr[i] = (pair){r->id[i], i};
    rt_status st;
    qsort(pr, (size_t)r->n, sizeof *pr, by_id);
    /* "Id,Sales" then one line per row */
    const size_t line = 40 + (f->nclasses ? (size_t)f->nclasses * 16 + 300 : 0) + (truth ? 340 : 0);
    size_t cap = 400 + line + (size_t)r->n * line, len = 0;
    char *csv = malloc(cap);
    if (!csv) {
        free(pr);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    len += (size_t)snprintf(csv, cap, "Id");
    if (truth) {
        char name[300];
        snprintf(name, sizeof name, "true_%s", f->label);
        len += (size_t)snprintf(csv + len, cap - len, ",");
        len += csv_text(name, csv + len, cap - len);
    }
    len += rt_pred_header(f, csv + len, cap - len);
    len += (size_t)snprintf(csv + len, cap - len, "\n");
    bool logged = false, stdz = false;
    rt_label_transform_parse(f->label_transform, &logged, &stdz, NULL);
    for (int64_t i = 0; i < r->n; i++) {
        len += (size_t)snprintf(csv + len, cap - len, "%d", pr[i].id);
        if (truth && f->nclasses > 0) {
            const char *c = f->classes[(int)r->label[pr[i].row]];
            len += (size_t)snprintf(csv + len, cap - len, ",");
            len += csv_text(c ? c : "", csv + len, cap - len);
        } else if (truth) { /* the rows hold it standardised (label_mean, label_std) */
            double y = (double)r->label[pr[i].row] * r->label_std + r->label_mean;
            if (r->label_std == 0)
                y = r->label[pr[i].row];
            len += (size_t)snprintf(csv + len, cap - len, ",%.6g", logged ? exp(y) : y);
        }
        len += rt_pred_fields(f, pr[i].id, pred + pr[i].row * f->n_out, csv + len, cap - len);
        len += (size_t)snprintf(csv + len, cap - len, "\n");
    }
    free(pr);
    rt_iov iov = {csv, len};
    st = rt_write_atomic(path, &iov, 1, err);
    free(csv);
    return st;
}

rt_status rt_predict_write(const rt_rows *test, const float *pred, const rt_pred_format *f,
                           const char *path, char *err)
{
    return write_csv(test, pred, f, false, path, err);
}

rt_status rt_predict_validation(rt_dp *d, const rt_dataset *ds, const rt_columns *cols,
                                const rt_pred_format *f, const char *path, int64_t *rows, char *err)
{
    *rows = 0;
    rt_rows train = {0}, val = {0};
    /* every partition's rows as one rank would read them (the training
     * rows are read too, then dropped) */
    rt_status st = rt_rows_load(ds, cols, 0, 1, &train, &val, err);
    rt_rows_free(&train);
    float *pred =
        st == RT_OK ? malloc((size_t)(val.n ? val.n : 1) * (size_t)f->n_out * sizeof *pred) : NULL;
    if (st == RT_OK && !pred)
        st = rt_err(err, RT_ERR_NOMEM, "out of memory for %lld predictions", (long long)val.n);
    if (st == RT_OK)
        st = rt_dp_forward_eval(d, val.cat, val.cont, NULL, val.n, pred, err);
    if (st == RT_OK)
        st = write_csv(&val, pred, f, true, path, err);
    if (st == RT_OK)
        *rows = val.n;
    free(pred);
    rt_rows_free(&val);
    return st;
}

rt_status rt_predict_checkpoint(const char *ckpt_path, const char *dataset_dir, const char *path,
                                int threads, int64_t batch, const rt_pred_opts *po, int64_t *rows,
                                char *range, char *err)
{
    range[0] = '\0';
    *rows = 0;
    rt_ckpt ck;
    rt_status st = rt_ckpt_read(ckpt_path, &ck, err);
    if (st != RT_OK)
        return st;
    rt_dataset *ds = NULL;
    st = rt_dataset_open(dataset_dir, &ds, err);
    if (st == RT_OK && (st = rt_ckpt_check_values(&ck, ds, err)) != RT_OK)
        rt_err_prefix(err, "%s does not fit the model of %s", dataset_dir, ckpt_path);
    /* the model's columns, which must mean the same in this dataset */
    rt_columns cols = {0};
    if (st == RT_OK && !rt_columns_alloc(&cols, ck.spec.n_cat, ck.n_cont))
        st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    for (int i = 0; st == RT_OK && i < ck.spec.n_cat; i++) {
        const rt_ds_column *c = rt_dataset_column(ds, ck.spec.cat_names[i]);
        if (!c || c->role != RT_ROLE_CATEGORICAL || c->vocab_size != ck.spec.vocab[i])
            st = rt_err(err, RT_ERR_INVALID,
                        "%s does not fit the model of %s: its column %s %s (the model has %d "
                        "values)",
                        dataset_dir, ckpt_path, ck.spec.cat_names[i],
                        !c ? "is missing" : "has another vocabulary", ck.spec.vocab[i]);
        else {
            snprintf(cols.cat[i], 64, "%s", c->name);
            cols.vocab[i] = c->vocab_size;
        }
    }
    cols.ncat = ck.spec.n_cat;
    for (int i = 0; st == RT_OK && i < ck.n_cont; i++) {
        const rt_ds_column *c = rt_dataset_column(ds, ck.cont_names[i]);
        if (!c || c->role != RT_ROLE_CONTINUOUS)
            st = rt_err(err, RT_ERR_INVALID, "%s has no continuous column %s (the model's)",
                        dataset_dir, ck.cont_names[i]);
        else
            snprintf(cols.cont[i], 64, "%s", c->name);
    }
    cols.ncont = ck.n_cont;
    if (st == RT_OK) {
        snprintf(cols.label, sizeof cols.label, "%s", ck.label[0] ? ck.label : ds->label);
        snprintf(cols.id, sizeof cols.id, "%s", ds->id);
        if (ds->ntest == 0 || !ds->id[0])
            st = rt_err(err, RT_ERR_INVALID, "%s has no test rows to predict", dataset_dir);
    }
    rt_rows test = {0};
    if (st == RT_OK)
        st = rt_rows_load_test(ds, &cols, &test, err);
    rt_dp *d = NULL;
    if (st == RT_OK) {
        rt_dp_opts o;
        rt_dp_opts_defaults(&o);
        o.threads = threads;
        o.max_batch = batch > 0 ? batch : 4096;
        st = rt_dp_create(&ck.spec, &o, NULL, &d, err);
    }
    if (st == RT_OK)
        st = rt_ckpt_to_model(&ck, rt_dp_model(d), err);
    rt_pred_format f;
    rt_pred_format_of(&ck, &f);
    rt_pred_range out = {0};
    f.proba = po->proba;
    f.range_factor = po->range_factor;
    f.clip = po->clip;
    f.range = &out;
    if (st == RT_OK)
        st = rt_predict_rows(d, &test, &f, path, err);
    if (st == RT_OK)
        rt_pred_range_say(&f, "ids", range, RT_ERR_LEN);
    if (st == RT_OK)
        *rows = test.n;
    rt_dp_destroy(d);
    rt_rows_free(&test);
    rt_columns_free(&cols);
    rt_dataset_free(ds);
    rt_ckpt_free(&ck);
    return st;
}

/* ---- new data: `ringtrain predict --input` ------------------------------------------ */

/* A categorical column's values (the checkpoint's, in index order) by text. */
typedef struct value_map {
    char **keys;
    int32_t *idx, null_idx; /* null_idx: the index of SQL NULL, or -1 */
    size_t cap;
} value_map;

static bool map_build(value_map *m, char **values, int32_t n)
{
    m->cap = 64;
    while (m->cap < (size_t)n * 2 + 2)
        m->cap *= 2;
    m->keys = calloc(m->cap, sizeof *m->keys);
    m->idx = calloc(m->cap, sizeof *m->idx);
    m->null_idx = -1;
    if (!m->keys || !m->idx)
        return false;
    for (int32_t i = 0; i < n; i++) {
        if (!values[i]) {
            m->null_idx = i;
            continue;
        }
        size_t j = rt_hash_str(values[i]) & (m->cap - 1);
        while (m->keys[j] && strcmp(m->keys[j], values[i]) != 0)
            j = (j + 1) & (m->cap - 1);
        if (!m->keys[j]) { /* the first index of a text (types apart, "1" and 1 read alike) */
            m->keys[j] = values[i];
            m->idx[j] = i;
        }
    }
    return true;
}

static int32_t map_find(const value_map *m, const char *text)
{
    if (!text)
        return m->null_idx;
    for (size_t j = rt_hash_str(text) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1))
        if (!strcmp(m->keys[j], text))
            return m->idx[j];
    return -1;
}

typedef struct scan_ctx {
    const rt_ckpt *ck;
    value_map maps[RT_MODEL_MAX_CAT];
    int ncat, ncont, nkeep;
    bool has_id;
    rt_rows rows;
    char **ids, **keep;  /* per row; keep: nkeep per row */
    int64_t cap;
    int64_t unknown[RT_MODEL_MAX_CAT], defaulted;
} scan_ctx;

static rt_status take_row(void *arg, int64_t row, const char *const *text, char *err)
{
    scan_ctx *s = arg;
    (void)row;
    rt_rows *r = &s->rows;
    if (r->n == s->cap) {
        int64_t cap = s->cap ? s->cap * 2 : 1024;
        int32_t *cat = realloc(r->cat, (size_t)cap * (size_t)(s->ncat ? s->ncat : 1) * 4);
        if (cat)
            r->cat = cat;
        float *cont = realloc(r->cont, (size_t)cap * (size_t)(s->ncont ? s->ncont : 1) * 4);
        if (cont)
            r->cont = cont;
        char **ids = realloc(s->ids, (size_t)cap * sizeof *ids);
        if (ids)
            s->ids = ids;
        char **keep = realloc(s->keep, (size_t)cap * (size_t)(s->nkeep ? s->nkeep : 1) * sizeof *keep);
        if (keep)
            s->keep = keep;
        if (!cat || !cont || !ids || !keep)
            return rt_err(err, RT_ERR_NOMEM, "out of memory for %lld rows", (long long)cap);
        s->cap = cap;
    }
    int64_t o = r->n;
    int k = 0;
    for (int i = 0; i < s->ncat; i++, k++) {
        int32_t x = map_find(&s->maps[i], text[k]);
        if (x < 0) { /* a value the model never saw: the column's extra row */
            x = s->ck->spec.vocab[i];
            s->unknown[i]++;
        }
        r->cat[o * s->ncat + i] = x;
    }
    for (int i = 0; i < s->ncont; i++, k++) {
        char *end = NULL;
        double v = text[k] ? strtod(text[k], &end) : 0;
        if (!text[k] || end == text[k] || *end || !isfinite(v)) {
            v = 0; /* as prep does: NULL and non-numbers become 0, counted */
            s->defaulted++;
        }
        r->cont[o * s->ncont + i] = (float)v;
    }
    s->ids[o] = s->has_id ? (text[k] ? strdup(text[k]) : NULL) : NULL;
    k += s->has_id;
    for (int i = 0; i < s->nkeep; i++, k++)
        s->keep[o * s->nkeep + i] = text[k] ? strdup(text[k]) : NULL;
    r->n++;
    return RT_OK;
}

/* The checkpoint's state for a model whose embedding tables have one more
 * row each: the unknown value's row, the mean of the column's learnt rows
 * (the embedding an unseen category is most like on average). */
static rt_status widen_embeddings(const rt_ckpt *ck, const rt_model_spec *wide, float **out,
                                  char *err)
{
    rt_kctx *ctx = NULL;
    rt_model *old = NULL, *neu = NULL;
    rt_status st = rt_kctx_create(RT_DEVICE_CPU, 1, &ctx, err);
    if (st == RT_OK)
        st = rt_model_create(&ck->spec, ctx, 1, &old, err);
    if (st == RT_OK)
        st = rt_ckpt_fits(ck, old, err); /* the tensors are read by old's sizes */
    if (st == RT_OK)
        st = rt_model_create(wide, ctx, 1, &neu, err);
    if (st == RT_OK && rt_model_num_buffers(neu) != ck->nbuffers) /* set with ck's buffers */
        st = rt_err(err, RT_ERR_INVALID, "the widened model has %lld buffer values, the "
                    "checkpoint %lld", (long long)rt_model_num_buffers(neu), (long long)ck->nbuffers);
    float *p = st == RT_OK ? calloc((size_t)rt_model_num_params(neu) + 1, sizeof *p) : NULL;
    if (st == RT_OK && !p)
        st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    int no = 0, nn = 0;
    const rt_param_info *to = st == RT_OK ? rt_model_param_table(old, &no) : NULL,
                        *tn = st == RT_OK ? rt_model_param_table(neu, &nn) : NULL;
    for (int i = 0; st == RT_OK && i < nn; i++) {
        if (!tn[i].trainable)
            continue;
        const rt_param_info *src = NULL;
        for (int j = 0; j < no && !src; j++)
            if (!strcmp(to[j].name, tn[i].name))
                src = &to[j];
        if (!src || src->cols != tn[i].cols) {
            st = rt_err(err, RT_ERR_INVALID, "tensor %s has no counterpart", tn[i].name);
            break;
        }
        memcpy(p + tn[i].pos, ck->params + src->pos, (size_t)src->count * sizeof *p);
        if (tn[i].rows == src->rows + 1) /* an embedding table: the mean row */
            for (int64_t r = 0; r < src->rows; r++)
                for (int64_t c = 0; c < src->cols; c++)
                    p[tn[i].pos + src->rows * src->cols + c] +=
                        ck->params[src->pos + r * src->cols + c] / (float)src->rows;
    }
    rt_model_destroy(old);
    rt_model_destroy(neu);
    rt_kctx_destroy(ctx);
    if (st != RT_OK)
        free(p);
    else
        *out = p;
    return st;
}

void rt_pred_csv_put(FILE *f, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* The input's rows in the checkpoint's columns (its vocabularies map the
 * categories; an unknown value is counted), their ids and kept columns. */
static rt_status scan_input(const rt_predict_input_opts *o, rt_ckpt *ck, scan_ctx *s, char *err)
{
    rt_status st = RT_OK;
    const char **cols =
        calloc((size_t)(ck->spec.n_cat + ck->n_cont + 1 + o->nkeep) + 1, sizeof *cols);
    if (!cols)
        st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    for (int i = 0; st == RT_OK && i < ck->spec.n_cat; i++)
        if (!ck->values || !ck->values[i])
            st = rt_err(err, RT_ERR_INVALID,
                        "%s holds no vocabularies (written by an older ringtrain): score a "
                        "prepared dataset with --dataset, or train again",
                        o->model);
        else if (!map_build(&s->maps[i], ck->values[i], ck->spec.vocab[i]))
            st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    if (st == RT_OK) {
        int n = 0;
        s->ck = ck;
        s->ncat = ck->spec.n_cat;
        s->ncont = ck->n_cont;
        s->nkeep = o->nkeep;
        s->has_id = o->id != NULL;
        s->rows.ncat = s->ncat;
        s->rows.ncont = s->ncont;
        for (int i = 0; i < ck->spec.n_cat; i++)
            cols[n++] = ck->spec.cat_names[i];
        for (int i = 0; i < ck->n_cont; i++)
            cols[n++] = ck->cont_names[i];
        if (o->id)
            cols[n++] = o->id;
        for (int i = 0; i < o->nkeep; i++)
            cols[n++] = o->keep[i];
        rt_prep_opts po = {.input_dir = o->input, .sql_path = o->sql, .quiet = true};
        st = rt_prep_scan(&po, cols, n, take_row, s, err);
    }
    free(cols);
    return st;
}

/* The checkpoint's network, each embedding table one row wider (the
 * unknown value's), on s's rows: *pred (malloc'd), n_out per row. */
static rt_status score_rows(const rt_predict_input_opts *o, const rt_ckpt *ck, const scan_ctx *s,
                            float **pred, char *err)
{
    rt_dp *d = NULL;
    float *wide_params = NULL;
    rt_model_spec wide = ck->spec;
    for (int i = 0; i < wide.n_cat; i++)
        wide.vocab[i]++;
    rt_status st = widen_embeddings(ck, &wide, &wide_params, err);
    if (st == RT_OK) {
        rt_dp_opts dopts;
        rt_dp_opts_defaults(&dopts);
        dopts.threads = o->threads;
        dopts.max_batch = o->batch > 0 ? o->batch : 4096;
        st = rt_dp_create(&wide, &dopts, NULL, &d, err);
    }
    if (st == RT_OK)
        st = rt_model_set_state(rt_dp_model(d), wide_params, NULL, NULL, ck->buffers, NULL, err);
    *pred =
        st == RT_OK
            ? malloc((size_t)(s->rows.n ? s->rows.n : 1) * (size_t)ck->spec.n_out * sizeof **pred)
            : NULL;
    if (st == RT_OK && !*pred)
        st = rt_err(err, RT_ERR_NOMEM, "out of memory for %lld predictions",
                    (long long)s->rows.n);
    if (st == RT_OK)
        st = rt_dp_forward_eval(d, s->rows.cat, s->rows.cont, NULL, s->rows.n, *pred, err);
    free(wide_params);
    rt_dp_destroy(d);
    return st;
}

/* o->out, in the input's order: the id (or the row's number), the
 * prediction, the kept columns; the range note into rep. */
static rt_status write_output(const rt_predict_input_opts *o, const rt_ckpt *ck, const scan_ctx *s,
                              const float *pred, rt_predict_input_report *rep, char *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    rt_pred_format pf;
    rt_pred_format_of(ck, &pf);
    rt_pred_range out = {0};
    pf.label = ck->label[0] ? ck->label : "prediction";
    pf.proba = !o->no_proba;
    pf.range_factor = o->range_factor;
    pf.clip = o->clip;
    pf.range = &out;
    char fields[8192];
    rt_pred_header(&pf, fields, sizeof fields);
    fprintf(f, "%s%s", o->id ? o->id : "row", fields);
    for (int i = 0; i < o->nkeep; i++) {
        fputc(',', f);
        rt_pred_csv_put(f, o->keep[i]);
    }
    fputc('\n', f);
    for (int64_t r = 0; r < s->rows.n; r++) {
        if (o->id)
            rt_pred_csv_put(f, s->ids[r]);
        else
            fprintf(f, "%lld", (long long)r + 1);
        rt_pred_fields(&pf, r + 1, pred + r * pf.n_out, fields, sizeof fields);
        fputs(fields, f);
        for (int i = 0; i < o->nkeep; i++) {
            fputc(',', f);
            rt_pred_csv_put(f, s->keep[r * o->nkeep + i]);
        }
        fputc('\n', f);
    }
    fclose(f);
    rt_pred_range_say(&pf, "rows", rep->range, sizeof rep->range);
    rt_iov iov = {buf, len};
    rt_status st = rt_write_atomic(o->out, &iov, 1, err);
    free(buf);
    return st;
}

static void scan_free(scan_ctx *s)
{
    if (!s)
        return;
    for (int64_t r = 0; r < s->rows.n; r++) {
        free(s->ids[r]);
        for (int i = 0; i < s->nkeep; i++)
            free(s->keep[r * s->nkeep + i]);
    }
    free(s->ids);
    free(s->keep);
    for (int i = 0; i < RT_MODEL_MAX_CAT; i++) {
        free(s->maps[i].keys);
        free(s->maps[i].idx);
    }
    rt_rows_free(&s->rows);
    free(s);
}

rt_status rt_predict_input(const rt_predict_input_opts *o, rt_predict_input_report *rep, char *err)
{
    memset(rep, 0, sizeof *rep);
    rt_ckpt ck;
    rt_status st = rt_ckpt_read(o->model, &ck, err);
    if (st != RT_OK)
        return st;
    scan_ctx *s = calloc(1, sizeof *s);
    float *pred = NULL;
    st = s ? scan_input(o, &ck, s, err) : rt_err(err, RT_ERR_NOMEM, "out of memory");
    if (st == RT_OK)
        st = score_rows(o, &ck, s, &pred, err);
    if (st == RT_OK)
        st = write_output(o, &ck, s, pred, rep, err);
    const size_t nc = s ? (size_t)(s->ncat ? s->ncat : 1) : 1;
    if (st == RT_OK && (!(rep->cat = calloc(nc, sizeof *rep->cat)) ||
                        !(rep->unknown = calloc(nc, sizeof *rep->unknown))))
        st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    if (st == RT_OK) {
        rep->rows = s->rows.n;
        rep->ncat = s->ncat;
        rep->defaulted = s->defaulted;
        for (int i = 0; i < s->ncat; i++) {
            rep->unknown[i] = s->unknown[i];
            snprintf(rep->cat[i], sizeof rep->cat[i], "%s", rt_model_cat_name(&ck.spec, i));
        }
    }
    free(pred);
    scan_free(s);
    rt_ckpt_free(&ck);
    return st;
}

void rt_predict_input_report_free(rt_predict_input_report *rep)
{
    free(rep->cat);
    free(rep->unknown);
    rep->cat = NULL;
    rep->unknown = NULL;
}
