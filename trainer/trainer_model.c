/* trainer_model.c — the job's model: the spec from the job file's [model]
 * keys (checked by the schema, rt_schema_model.c) and the dataset (its
 * columns, vocabularies, label), with the checks only the dataset can
 * answer: an embedding width for a column the model does not have, the
 * statistics standardize needs (the memory a model needs is
 * rt_dp_check_memory's). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer.h"

/* fastai's emb_sz_rule: min(600, round(1.6 * n^0.56)) for n values. */
static int fastai_width(int32_t n) { return (int)fmin(600.0, round(1.6 * pow((double)n, 0.56))); }

/* The categorical column of cols nearest to name (for a hint), or NULL. */
static const char *closest(const rt_columns *cols, const char *name)
{
    const char *best = NULL;
    size_t bestd = (size_t)-1;
    for (int i = 0; i < cols->ncat; i++) {
        size_t d = rt_edit_distance(name, cols->cat[i]);
        if (d < bestd) {
            bestd = d;
            best = cols->cat[i];
        }
    }
    return best && bestd <= strlen(name) / 2 + 1 ? best : NULL;
}

/* "FILE:LINE: " of a [model] key when the origin is known, else "". */
static const char *where(const rt_cfg_origin *o, const char *key, char *buf, size_t len)
{
    if (!o)
        return "";
    char w[480];
    rt_cfg_where(&rt_job_schema, o, "model", key, w, sizeof w);
    snprintf(buf, len, "%s: ", w);
    return buf;
}

/* embedding_dims: COLUMN:WIDTH for columns of the model. */
static rt_status emb_overrides(const rt_job_cfg *cfg, const rt_cfg_origin *o, const rt_dataset *ds,
                               const rt_columns *cols, rt_model_spec *s, char *err)
{
    for (size_t i = 0; i < cfg->embedding_dims.n; i++) {
        const char *it = cfg->embedding_dims.items[i], *colon = strrchr(it, ':');
        char name[RT_SHARD_NAME_LEN];
        snprintf(name, sizeof name, "%.*s", colon ? (int)(colon - it) : 0, it);
        int c = 0;
        while (c < cols->ncat && strcmp(cols->cat[c], name) != 0)
            c++;
        if (c == cols->ncat) {
            const rt_ds_column *dc = rt_dataset_column(ds, name);
            const char *near = closest(cols, name);
            char hint[160] = "";
            if (dc)
                snprintf(hint, sizeof hint, " (%s is a %s column, not one of the model's "
                         "categorical columns)", name, rt_col_role_name(dc->role));
            else if (near)
                snprintf(hint, sizeof hint, "; did you mean %s?", near);
            char at[512];
            return rt_err(err, RT_ERR_INVALID, "%s[model] embedding_dims: %s has no categorical "
                          "column '%s'%s", where(o, "embedding_dims", at, sizeof at), ds->dir,
                          name, hint);
        }
        s->emb_dim[c] = atoi(colon + 1);
    }
    return RT_OK;
}

/* rt_model_keys.h's keys, from the job file to the spec */
#define COPY_I(n, def, lo, hi, fam, help) s->n = (int)cfg->n;
#define COPY_F(n, def, lo, hi, fam, help) s->n = (float)cfg->n;
#define COPY_B(n, def, fam, help) s->n = cfg->n;
#define COPY_E(n, type, list, def, fam, help) s->n = (type)cfg->n;

rt_status rt_job_model_spec(const rt_job_cfg *cfg, const rt_cfg_origin *o, const rt_dataset *ds,
                            const rt_columns *cols, rt_model_spec *s, char *err)
{
    rt_model_spec_defaults(s);
    s->arch = (rt_arch)cfg->architecture;
    s->n_cat = cols->ncat;
    s->cat_names = cols->cat; /* lent */
    for (int i = 0; i < s->n_cat; i++) {
        s->vocab[i] = cols->vocab[i];
        s->emb_dim[i] = cfg->embedding_rule == RT_EMB_RULE_FASTAI ? fastai_width(cols->vocab[i])
                                                                  : (int)cfg->embedding_dim;
    }
    rt_status st = emb_overrides(cfg, o, ds, cols, s, err);
    if (st != RT_OK)
        return st;
    RT_MODEL_KEYS(COPY_I, COPY_F, COPY_B, COPY_E)
    s->n_cont = cols->ncont;
    s->cont_norm = (rt_cont_norm)rt_job_continuous_norm(cfg);
    for (int i = 0; s->numeric_embedding == RT_NUM_EMB_PLE && i < cols->ncont; i++) {
        const rt_ds_column *dc = rt_dataset_column(ds, cols->cont[i]);
        char at[512];
        if (!dc || dc->nquantiles < 2)
            return rt_err(err, RT_ERR_INVALID,
                          "%s[model] numeric_embedding = piecewise_linear: the manifest of %s has "
                          "no quantiles for its continuous column %s (the bins' edges; a dataset "
                          "prepared before ringtrain wrote them): prepare it again",
                          where(o, "numeric_embedding", at, sizeof at), ds->dir, cols->cont[i]);
    }
    const bool quantiles = s->cont_norm == RT_CONT_QUANTILE || s->cont_norm == RT_CONT_ROBUST;
    for (int i = 0; quantiles && i < cols->ncont; i++) {
        const rt_ds_column *dc = rt_dataset_column(ds, cols->cont[i]);
        char at[512];
        if (!dc || dc->nquantiles < 2)
            return rt_err(err, RT_ERR_INVALID,
                          "%s[model] continuous_norm = %s: the manifest of %s has no "
                          "quantiles for its continuous column %s (a dataset prepared before "
                          "ringtrain wrote them, or one without training rows): prepare it "
                          "again, or use standardize",
                          where(o, "continuous_norm", at, sizeof at),
                          rt_cont_norm_names[s->cont_norm], ds->dir, cols->cont[i]);
        if (s->cont_norm == RT_CONT_ROBUST) /* the median and IQR come from them */
            continue;
        if (i > 0 && dc->nquantiles != s->n_quantiles)
            return rt_err(err, RT_ERR_INVALID,
                          "the manifest of %s has %d quantiles for %s and "
                          "%d for %s: prepare it again",
                          ds->dir, dc->nquantiles, cols->cont[i], s->n_quantiles, cols->cont[0]);
        s->n_quantiles = dc->nquantiles;
    }
    for (int i = 0; s->cont_norm == RT_CONT_STANDARDIZE && i < cols->ncont; i++) {
        const rt_ds_column *dc = rt_dataset_column(ds, cols->cont[i]);
        char at[512];
        if (!dc || !dc->has_stats)
            return rt_err(err, RT_ERR_INVALID,
                          "%s[model] continuous_norm = standardize: the manifest of %s has no "
                          "statistics for its continuous column %s (a dataset prepared before "
                          "ringtrain wrote them): prepare it again, or use batchnorm",
                          where(o, "continuous_norm", at, sizeof at), ds->dir, cols->cont[i]);
    }
    s->n_hidden = (int)cfg->hidden.n < RT_MODEL_MAX_HIDDEN ? (int)cfg->hidden.n : RT_MODEL_MAX_HIDDEN;
    for (int i = 0; i < s->n_hidden; i++)
        s->hidden[i] = atoi(cfg->hidden.items[i]);
    float rates[RT_MODEL_MAX_HIDDEN];
    rt_job_model_rates(cfg, RT_MODEL_MAX_HIDDEN, rates, s->batch_norm);
    memset(s->dropout, 0, sizeof s->dropout);
    if (s->arch == RT_ARCH_ROSSMANN) /* one rate, after the last hidden layer */
        s->dropout[s->n_hidden > 0 ? s->n_hidden - 1 : 0] = rates[0];
    else
        memcpy(s->dropout, rates, sizeof rates);
    s->activation = (rt_act)(cfg->activation + 1);
    rt_task_info t;
    if ((st = rt_job_task(cfg, o, ds, cols, &t, err)) != RT_OK)
        return st;
    s->head = t.head;
    s->n_out = t.n_out;
    s->loss = t.loss;
    s->huber_delta = (float)cfg->huber_delta;
    s->label_smoothing = (float)cfg->label_smoothing;
    s->n_classes = t.nclasses;
    s->class_weighted = t.class_weighted;
    memcpy(s->class_weight, t.class_weight, sizeof s->class_weight);
    s->weighted = t.weighted;
    bool logged = false;
    rt_label_transform_parse(ds->label_transform, &logged, NULL, NULL);
    double top = logged ? log(ds->max_label) : ds->max_label;
    if (s->head == RT_HEAD_SCALED_SIGMOID)
        s->head_scale = (float)(cfg->head_scale_factor * top);
    s->seed = (uint64_t)cfg->seed;
    return rt_model_spec_check(s, err);
}

/* Continuous column i's quantiles in the manifest (at least 2), or NULL
 * with an error naming the column. */
static const rt_ds_column *column_quantiles(const rt_dataset *ds, const rt_columns *cols, int i,
                                            char *err)
{
    const rt_ds_column *dc = rt_dataset_column(ds, cols->cont[i]);
    if (dc && dc->nquantiles >= 2)
        return dc;
    rt_err(err, RT_ERR_INVALID, "the manifest of %s has no quantiles for %s", ds->dir,
           cols->cont[i]);
    return NULL;
}

/* continuous_norm = quantile: the manifest's quantiles into the model */
static rt_status job_model_quantiles(rt_model *m, const rt_dataset *ds, const rt_columns *cols,
                                     char *err)
{
    const int64_t nq = rt_model_get_spec(m)->n_quantiles;
    float *q = malloc((size_t)(cols->ncont * nq) * sizeof *q);
    if (!q)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < cols->ncont; i++) {
        const rt_ds_column *dc = column_quantiles(ds, cols, i, err);
        if (!dc || dc->nquantiles != nq) {
            free(q);
            return dc ? rt_err(err, RT_ERR_INVALID,
                               "the manifest of %s has no %lld quantiles "
                               "for %s",
                               ds->dir, (long long)nq, cols->cont[i])
                      : RT_ERR_INVALID;
        }
        memcpy(q + i * nq, dc->quantiles, (size_t)nq * sizeof *q);
    }
    rt_status st = rt_model_set_quantiles(m, q, err);
    free(q);
    return st;
}

/* The quantile at probability p of a column's nq quantiles (linear). */
static double quantile_at(const rt_ds_column *dc, double p)
{
    const double pos = p * (dc->nquantiles - 1);
    const int lo = (int)pos;
    const double f = pos - lo;
    return lo + 1 < dc->nquantiles
               ? dc->quantiles[lo] + f * (dc->quantiles[lo + 1] - dc->quantiles[lo])
               : dc->quantiles[lo];
}

/* continuous_norm = robust: each column's median and 1 / IQR from the
 * manifest's quantiles (RealMLP's robust scale: half the range where the
 * IQR is 0, 1 where the column is constant) */
static rt_status job_model_robust(rt_model *m, const rt_dataset *ds, const rt_columns *cols,
                                  char *err)
{
    float *c = malloc((size_t)cols->ncont * 2 * sizeof *c), *sc = c + cols->ncont;
    if (!c)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < cols->ncont; i++) {
        const rt_ds_column *dc = column_quantiles(ds, cols, i, err);
        if (!dc) {
            free(c);
            return RT_ERR_INVALID;
        }
        const double iqr = quantile_at(dc, 0.75) - quantile_at(dc, 0.25);
        const double range = dc->quantiles[dc->nquantiles - 1] - dc->quantiles[0];
        c[i] = (float)quantile_at(dc, 0.5);
        sc[i] = (float)(iqr > 0 ? 1.0 / iqr : range > 0 ? 2.0 / range : 1.0);
    }
    rt_status st = rt_model_set_robust(m, c, sc, err);
    free(c);
    return st;
}

/* numeric_embedding = piecewise_linear: each column's bins + 1 edges at
 * probabilities t / bins of its training rows (the manifest's quantiles) */
static rt_status job_model_ple(rt_model *m, const rt_dataset *ds, const rt_columns *cols, char *err)
{
    const int64_t E = rt_model_get_spec(m)->bins + 1;
    float *e = malloc((size_t)(cols->ncont * E) * sizeof *e);
    if (!e)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < cols->ncont; i++) {
        const rt_ds_column *dc = column_quantiles(ds, cols, i, err);
        if (!dc) {
            free(e);
            return RT_ERR_INVALID;
        }
        for (int64_t t = 0; t < E; t++) {
            e[i * E + t] = (float)quantile_at(dc, (double)t / (double)(E - 1));
            if (t > 0 && e[i * E + t] < e[i * E + t - 1]) /* rounding: keep them ascending */
                e[i * E + t] = e[i * E + t - 1];
        }
    }
    rt_status st = rt_model_set_ple_edges(m, e, err);
    free(e);
    return st;
}

rt_status rt_job_model_standardize(rt_model *m, const rt_dataset *ds, const rt_columns *cols,
                                   char *err)
{
    if (rt_model_get_spec(m)->numeric_embedding == RT_NUM_EMB_PLE && cols->ncont > 0)
        return job_model_ple(m, ds, cols, err); /* it reads the raw values: no norm */
    if (rt_model_get_spec(m)->cont_norm == RT_CONT_QUANTILE && cols->ncont > 0)
        return job_model_quantiles(m, ds, cols, err);
    if (rt_model_get_spec(m)->cont_norm == RT_CONT_ROBUST && cols->ncont > 0)
        return job_model_robust(m, ds, cols, err);
    if (rt_model_get_spec(m)->cont_norm != RT_CONT_STANDARDIZE || cols->ncont == 0)
        return RT_OK;
    float *mean = malloc((size_t)cols->ncont * sizeof *mean),
          *sd = malloc((size_t)cols->ncont * sizeof *sd);
    if (!mean || !sd) {
        free(mean);
        free(sd);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < cols->ncont; i++) {
        const rt_ds_column *dc = rt_dataset_column(ds, cols->cont[i]);
        mean[i] = dc ? (float)dc->mean : 0.0f;
        sd[i] = dc ? (float)dc->std : 1.0f;
    }
    rt_status st = rt_model_set_standardize(m, mean, sd, err);
    free(mean);
    free(sd);
    return st;
}
