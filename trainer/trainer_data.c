/* trainer_data.c — the trainer's rows: which columns, which partitions,
 * row-major copies for batching, the per-epoch shuffle. */
#include <stdlib.h>
#include <string.h>

#include "trainer.h"

void rt_rows_free(rt_rows *r)
{
    free(r->cat);
    free(r->cont);
    free(r->label);
    free(r->weight);
    free(r->id);
    memset(r, 0, sizeof *r);
}

static bool is_none(const rt_strlist *l)
{
    return l->n == 1 && strcmp(l->items[0], "none") == 0;
}

bool rt_columns_alloc(rt_columns *c, int ncat, int ncont)
{
    c->ncat = c->ncont = 0;
    c->cat = calloc((size_t)(ncat > 0 ? ncat : 1), sizeof *c->cat);
    c->vocab = calloc((size_t)(ncat > 0 ? ncat : 1), sizeof *c->vocab);
    c->cont = calloc((size_t)(ncont > 0 ? ncont : 1), sizeof *c->cont);
    return c->cat && c->vocab && c->cont;
}

void rt_columns_free(rt_columns *c)
{
    free(c->cat);
    free(c->vocab);
    free(c->cont);
    c->cat = NULL;
    c->vocab = NULL;
    c->cont = NULL;
    c->ncat = c->ncont = 0;
}

rt_status rt_columns_resolve(const rt_dataset *ds, const rt_job_cfg *cfg, rt_columns *c,
                             char *err)
{
    memset(c, 0, sizeof *c);
    const rt_ds_column **cols = calloc((size_t)(ds->ncols > 0 ? ds->ncols : 1), sizeof *cols);
    const int ncat = rt_dataset_columns(ds, RT_ROLE_CATEGORICAL, cols, ds->ncols);
    const int ncont = rt_dataset_columns(ds, RT_ROLE_CONTINUOUS, cols, ds->ncols);
    const int wcat = cfg->categorical.n > 0 ? (int)cfg->categorical.n : ncat,
              wcont = cfg->continuous.n > 0 ? (int)cfg->continuous.n : ncont;
    if (!cols || !rt_columns_alloc(c, wcat, wcont)) {
        free(cols);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    rt_status st = RT_OK;
    /* categorical */
    if (is_none(&cfg->categorical)) {
        c->ncat = 0;
    } else if (cfg->categorical.n > 0) {
        if (cfg->categorical.n > RT_MODEL_MAX_CAT)
            st = rt_err(err, RT_ERR_INVALID, "[data] categorical: at most %d columns",
                        RT_MODEL_MAX_CAT);
        for (size_t i = 0; st == RT_OK && i < cfg->categorical.n; i++)
            snprintf(c->cat[c->ncat++], 64, "%s", cfg->categorical.items[i]);
    } else {
        int n = rt_dataset_columns(ds, RT_ROLE_CATEGORICAL, cols, ds->ncols);
        if (n > RT_MODEL_MAX_CAT)
            st = rt_err(err, RT_ERR_INVALID,
                        "%s has %d categorical columns, at most %d fit a "
                        "model: [data] categorical lists the ones to use",
                        ds->dir, n, RT_MODEL_MAX_CAT);
        for (int i = 0; st == RT_OK && i < n; i++)
            snprintf(c->cat[c->ncat++], 64, "%s", cols[i]->name);
    }
    /* continuous */
    if (st != RT_OK || is_none(&cfg->continuous)) {
        c->ncont = 0;
    } else if (cfg->continuous.n > 0) {
        if (cfg->continuous.n > RT_MODEL_MAX_CONT)
            st = rt_err(err, RT_ERR_INVALID, "[data] continuous: at most %d columns",
                        RT_MODEL_MAX_CONT);
        for (size_t i = 0; st == RT_OK && i < cfg->continuous.n; i++)
            snprintf(c->cont[c->ncont++], 64, "%s", cfg->continuous.items[i]);
    } else {
        int n = rt_dataset_columns(ds, RT_ROLE_CONTINUOUS, cols, ds->ncols);
        if (n > RT_MODEL_MAX_CONT)
            st = rt_err(err, RT_ERR_INVALID,
                        "%s has %d continuous columns, at most %d fit a "
                        "model: [data] continuous lists the ones to use",
                        ds->dir, n, RT_MODEL_MAX_CONT);
        for (int i = 0; st == RT_OK && i < n; i++)
            snprintf(c->cont[c->ncont++], 64, "%s", cols[i]->name);
    }
    free(cols);
    if (st != RT_OK)
        return st;
    for (int i = 0; i < c->ncat; i++) {
        const rt_ds_column *dc = rt_dataset_column(ds, c->cat[i]);
        if (!dc || dc->role != RT_ROLE_CATEGORICAL)
            return rt_err(err, RT_ERR_INVALID,
                          "[data] categorical: %s is not a categorical "
                          "column of %s",
                          c->cat[i], ds->dir);
        c->vocab[i] = dc->vocab_size;
    }
    for (int i = 0; i < c->ncont; i++) {
        const rt_ds_column *dc = rt_dataset_column(ds, c->cont[i]);
        if (!dc || dc->role != RT_ROLE_CONTINUOUS)
            return rt_err(err, RT_ERR_INVALID, "[data] continuous: %s is not a continuous "
                                               "column of %s", c->cont[i], ds->dir);
    }
    if (c->ncat + c->ncont == 0)
        return rt_err(err, RT_ERR_INVALID, "[data]: the model needs at least one column");
    snprintf(c->label, sizeof c->label, "%s", cfg->label && *cfg->label ? cfg->label : ds->label);
    const rt_ds_column *lc = rt_dataset_column(ds, c->label);
    if (!lc || lc->role != RT_ROLE_LABEL)
        return rt_err(err, RT_ERR_INVALID, "[data] label: %s is not the label of %s", c->label,
                      ds->dir);
    snprintf(c->validation, sizeof c->validation, "%s",
             cfg->validation && *cfg->validation ? cfg->validation : ds->validation);
    if (c->validation[0]) {
        const rt_ds_column *vc = rt_dataset_column(ds, c->validation);
        if (!vc || vc->role != RT_ROLE_VALIDATION)
            return rt_err(err, RT_ERR_INVALID, "[data] validation: %s is not a validation "
                                               "column of %s", c->validation, ds->dir);
    }
    snprintf(c->id, sizeof c->id, "%s", ds->id);
    const char *wc = cfg->weight && *cfg->weight ? cfg->weight : ds->weight;
    if (wc[0] && strcmp(wc, "none") != 0) {
        const rt_ds_column *dc = rt_dataset_column(ds, wc);
        if (!dc || dc->role != RT_ROLE_WEIGHT)
            return rt_err(err, RT_ERR_INVALID, "[data] weight: %s is not a weight column of %s "
                          "(prep's meta names it: weight = COLUMN)", wc, ds->dir);
        snprintf(c->weight, sizeof c->weight, "%s", wc);
    }
    return RT_OK;
}

static bool grow(rt_rows *r, int64_t need)
{
    if (need <= r->cap)
        return true;
    int64_t cap = r->cap ? r->cap : 1024;
    while (cap < need)
        cap *= 2;
    int32_t *cat = realloc(r->cat, (size_t)cap * (size_t)(r->ncat ? r->ncat : 1) * 4);
    if (cat)
        r->cat = cat;
    float *cont = realloc(r->cont, (size_t)cap * (size_t)(r->ncont ? r->ncont : 1) * 4);
    if (cont)
        r->cont = cont;
    float *label = realloc(r->label, (size_t)cap * 4);
    if (label)
        r->label = label;
    int32_t *id = realloc(r->id, (size_t)cap * 4);
    if (id)
        r->id = id;
    float *weight = realloc(r->weight, (size_t)cap * 4);
    if (weight)
        r->weight = weight;
    if (!cat || !cont || !label || !id || !weight)
        return false;
    r->cap = cap;
    return true;
}

rt_status rt_rows_append(rt_rows *r, const rt_shard *s, const rt_columns *c, const uint8_t *vflag,
                         int want_val, const char *what, char *err)
{
    const rt_shard_col **cat = malloc((size_t)(c->ncat + c->ncont + 1) * sizeof *cat),
                       **cont = cat ? cat + c->ncat : NULL;
    if (!cat)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < c->ncat; i++)
        cat[i] = rt_shard_find(s, c->cat[i]);
    for (int i = 0; i < c->ncont; i++)
        cont[i] = rt_shard_find(s, c->cont[i]);
    const rt_shard_col *label = rt_shard_find(s, c->label), *id = rt_shard_find(s, c->id);
    const rt_shard_col *weight = c->weight[0] ? rt_shard_find(s, c->weight) : NULL;
    const double mean = r->label_std > 0 ? r->label_mean : 0.0,
                 inv = r->label_std > 0 ? 1.0 / r->label_std : 1.0;
    int64_t count = 0;
    for (int64_t k = 0; k < s->nrows; k++)
        count += !vflag || vflag[k] == want_val;
    if (!grow(r, r->n + count)) {
        free(cat);
        return rt_err(err, RT_ERR_NOMEM, "out of memory for %lld %s rows",
                      (long long)(r->n + count), what);
    }
    for (int64_t k = 0; k < s->nrows; k++) {
        if (vflag && vflag[k] != want_val)
            continue;
        int64_t o = r->n++;
        for (int i = 0; i < c->ncat; i++)
            r->cat[o * c->ncat + i] = ((const int32_t *)cat[i]->data)[k];
        for (int i = 0; i < c->ncont; i++)
            r->cont[o * c->ncont + i] = ((const float *)cont[i]->data)[k];
        r->label[o] = !label ? 0.0f
                      : r->label_std > 0 ? (float)((((const float *)label->data)[k] - mean) * inv)
                                         : ((const float *)label->data)[k];
        r->weight[o] = weight ? ((const float *)weight->data)[k] : 1.0f;
        r->id[o] = id ? ((const int32_t *)id->data)[k] : (int32_t)o;
    }
    free(cat);
    return RT_OK;
}

rt_status rt_rows_load(const rt_dataset *ds, const rt_columns *c, int rank, int size,
                       rt_rows *train, rt_rows *val, char *err)
{
    memset(train, 0, sizeof *train);
    memset(val, 0, sizeof *val);
    train->ncat = val->ncat = c->ncat;
    train->ncont = val->ncont = c->ncont;
    bool stdz = false;
    rt_label_transform_parse(ds->label_transform, NULL, &stdz, NULL);
    if (stdz) {
        train->label_mean = val->label_mean = ds->label_mean;
        train->label_std = val->label_std = ds->label_std;
    }
    if (ds->nparts < size)
        return rt_err(err, RT_ERR_INVALID,
                      "%s has %d training partition%s for %d ranks: prep it again with "
                      "--partitions %d (or a multiple)",
                      ds->dir, ds->nparts, ds->nparts == 1 ? "" : "s", size, size);
    rt_status st = RT_OK;
    for (int p = rank; p < ds->nparts && st == RT_OK; p += size) {
        rt_shard *s = NULL;
        st = rt_dataset_read_part(ds, p, false, &s, err);
        if (st != RT_OK)
            break;
        const rt_shard_col *v = c->validation[0] ? rt_shard_find(s, c->validation) : NULL;
        st = rt_rows_append(train, s, c, v ? v->data : NULL, 0, "training", err);
        if (st == RT_OK && v)
            st = rt_rows_append(val, s, c, v->data, 1, "validation", err);
        rt_shard_free(s);
    }
    return st;
}

rt_status rt_rows_load_test(const rt_dataset *ds, const rt_columns *c, rt_rows *test, char *err)
{
    memset(test, 0, sizeof *test);
    test->ncat = c->ncat;
    test->ncont = c->ncont;
    rt_status st = RT_OK;
    for (int p = 0; p < ds->ntest && st == RT_OK; p++) {
        rt_shard *s = NULL;
        st = rt_dataset_read_part(ds, p, true, &s, err);
        if (st == RT_OK && !rt_shard_find(s, c->id))
            st = rt_err(err, RT_ERR_INVALID, "%s: test partition %d has no id column %s",
                        ds->dir, p, c->id);
        if (st == RT_OK)
            st = rt_rows_append(test, s, c, NULL, 0, "test", err);
        rt_shard_free(s);
    }
    return st;
}

void rt_rows_gather(const rt_rows *r, const int64_t *idx, int64_t n, int32_t *cat, float *cont,
                    float *label, float *weight)
{
    for (int64_t b = 0; b < n; b++) {
        int64_t k = idx[b];
        if (r->ncat)
            memcpy(cat + b * r->ncat, r->cat + k * r->ncat, (size_t)r->ncat * 4);
        if (r->ncont)
            memcpy(cont + b * r->ncont, r->cont + k * r->ncont, (size_t)r->ncont * 4);
        label[b] = r->label[k];
        if (weight)
            weight[b] = r->weight[k];
    }
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void rt_shuffle(int64_t *perm, int64_t n, uint64_t seed, int64_t epoch, int rank)
{
    uint64_t s = seed ^ 0x5bd1e995ull * (uint64_t)(epoch + 1) ^ 0xc2b2ae35ull * (uint64_t)(rank + 1);
    splitmix(&s);
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
        int64_t j = (int64_t)(splitmix(&s) % (uint64_t)(i + 1));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* Rows [from, from + n) of shard s as a view (no copy) appended to r. */
static rt_status append_slice(rt_rows *r, const rt_shard *s, const rt_columns *c, int64_t from,
                              int64_t n, bool ids_only, char *err)
{
    if (ids_only) {
        const rt_shard_col *id = rt_shard_find(s, c->id);
        memcpy(r->id + r->n, (const int32_t *)id->data + from, (size_t)n * 4);
        r->n += n;
        return RT_OK;
    }
    rt_shard_col *cols = malloc((size_t)(s->ncols ? s->ncols : 1) * sizeof *cols);
    if (!cols)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    for (int k = 0; k < s->ncols; k++) {
        cols[k] = s->cols[k];
        cols[k].data = (char *)s->cols[k].data + (size_t)from * rt_col_type_size(s->cols[k].type);
    }
    rt_shard view = {.ncols = s->ncols, .nrows = n, .cols = cols, .index = s->index}; /* s's */
    rt_status st = rt_rows_append(r, &view, c, NULL, 0, "test", err);
    free(cols);
    return st;
}

rt_status rt_rows_check_vocab(const rt_shard *s, const rt_columns *c, const char *file, int g,
                              char *err)
{
    for (int i = 0; i < c->ncat; i++) {
        const int32_t *v = rt_shard_find(s, c->cat[i])->data;
        for (int64_t r = 0; r < s->nrows; r++)
            if (v[r] < 0 || v[r] >= c->vocab[i])
                return rt_err(err, RT_ERR_INVALID,
                              "%s: row group %d, row %lld of %s has index %d outside its "
                              "vocabulary of %d",
                              file, g, (long long)r, c->cat[i], v[r], c->vocab[i]);
    }
    return RT_OK;
}

/* The columns the model reads (all of them, or the id alone) are in the
 * row group, and its categorical indices inside their vocabularies. */
static rt_status check_test_group(const rt_shard *s, const rt_columns *c, bool ids_only,
                                  const char *file, int g, char *err)
{
    const rt_shard_col *id = rt_shard_find(s, c->id);
    if (!id || id->type != RT_COL_I32)
        return rt_err(err, RT_ERR_INVALID, "%s has no integer id column %s", file, c->id);
    for (int i = 0; !ids_only && i < c->ncat; i++) {
        const rt_shard_col *col = rt_shard_find(s, c->cat[i]);
        if (!col || col->type != RT_COL_I32)
            return rt_err(err, RT_ERR_INVALID, "%s has no categorical column %s", file, c->cat[i]);
    }
    for (int i = 0; !ids_only && i < c->ncont; i++) {
        const rt_shard_col *col = rt_shard_find(s, c->cont[i]);
        if (!col || col->type != RT_COL_F32)
            return rt_err(err, RT_ERR_INVALID, "%s has no continuous column %s", file, c->cont[i]);
    }
    return ids_only ? RT_OK : rt_rows_check_vocab(s, c, file, g, err);
}

rt_status rt_rows_load_test_range(const rt_dataset *ds, const rt_columns *c, int64_t lo,
                                  int64_t len, bool ids_only, rt_rows *r, char *err)
{
    memset(r, 0, sizeof *r);
    r->ncat = c->ncat;
    r->ncont = c->ncont;
    if (ids_only ? !(r->id = malloc((size_t)(len ? len : 1) * 4)) : !grow(r, len))
        return rt_err(err, RT_ERR_NOMEM, "out of memory for %lld test rows", (long long)len);
    rt_status st = RT_OK;
    int64_t base = 0;
    for (int p = 0; p < ds->ntest && st == RT_OK && r->n < len; base += ds->test[p].rows, p++) {
        if (base + ds->test[p].rows <= lo)
            continue;
        char path[1300];
        snprintf(path, sizeof path, "%s/%s", ds->dir, ds->test[p].file);
        rt_shard_reader *rd = NULL;
        if ((st = rt_shard_reader_open(path, &rd, err)) != RT_OK)
            break;
        if (rt_shard_reader_rows(rd) != ds->test[p].rows)
            st = rt_err(err, RT_ERR_INVALID, "%s has %lld rows, the manifest says %lld", path,
                        (long long)rt_shard_reader_rows(rd), (long long)ds->test[p].rows);
        int64_t gbase = base;
        for (int g = 0; st == RT_OK && g < rt_shard_reader_groups(rd) && r->n < len; g++) {
            int64_t gr = rt_shard_reader_group_rows(rd, g);
            int64_t from = lo + r->n - gbase; /* the next row wanted, in this group */
            if (from < gr) {
                rt_shard *s = NULL;
                st = rt_shard_reader_group(rd, g, &s, err);
                if (st == RT_OK)
                    st = check_test_group(s, c, ids_only, path, g, err);
                int64_t take = gr - from < len - r->n ? gr - from : len - r->n;
                if (st == RT_OK)
                    st = append_slice(r, s, c, from, take, ids_only, err);
                rt_shard_free(s);
            }
            gbase += gr;
        }
        rt_shard_reader_close(rd);
    }
    if (st == RT_OK && r->n != len)
        st = rt_err(err, RT_ERR_INVALID, "%s: %lld test rows wanted from row %lld, %lld found",
                    ds->dir, (long long)len, (long long)lo, (long long)r->n);
    if (st != RT_OK)
        rt_rows_free(r);
    return st;
}
