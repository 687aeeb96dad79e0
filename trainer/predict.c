/* predict.c — predictions for a dataset's test rows: from the trainer's
 * model at the end of a job, or from a checkpoint (`ringtrain predict`). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_ckpt.h"
#include "rt_file.h"
#include "trainer.h"

typedef struct pair {
    int32_t id;
    float v;
} pair;

static int by_id(const void *a, const void *b)
{
    int32_t x = ((const pair *)a)->id, y = ((const pair *)b)->id;
    return (x > y) - (x < y);
}

rt_status rt_predict_rows(rt_dp *d, const rt_rows *test, const char *label,
                          const char *label_transform, const char *path, char *err)
{
    float *pred = malloc((size_t)(test->n ? test->n : 1) * sizeof *pred);
    if (!pred)
        return rt_err(err, RT_ERR_NOMEM, "out of memory for %lld predictions",
                      (long long)test->n);
    rt_status st = rt_dp_forward_eval(d, test->cat, test->cont, NULL, test->n, pred, err);
    if (st == RT_OK)
        st = rt_predict_write(test, pred, label, label_transform, path, err);
    free(pred);
    return st;
}

rt_status rt_predict_write(const rt_rows *test, const float *pred, const char *label,
                           const char *label_transform, const char *path, char *err)
{
    pair *pr = malloc((size_t)(test->n ? test->n : 1) * sizeof *pr);
    if (!pr)
        return rt_err(err, RT_ERR_NOMEM, "out of memory for %lld predictions",
                      (long long)test->n);
    bool log_label = strcmp(label_transform, "log") == 0;
    for (int64_t i = 0; i < test->n; i++) {
        pr[i].id = test->id[i];
        pr[i].v = log_label ? expf(pred[i]) : pred[i];
    }
    rt_status st;
    qsort(pr, (size_t)test->n, sizeof *pr, by_id);
    /* "Id,Sales" then one line per row; ~24 bytes a line */
    size_t cap = 64 + (size_t)test->n * 32, len = 0;
    char *csv = malloc(cap);
    if (!csv) {
        free(pr);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    len += (size_t)snprintf(csv, cap, "Id,%s\n", label);
    for (int64_t i = 0; i < test->n; i++)
        len += (size_t)snprintf(csv + len, cap - len, "%d,%.6g\n", pr[i].id, (double)pr[i].v);
    free(pr);
    rt_iov iov = {csv, len};
    st = rt_write_atomic(path, &iov, 1, err);
    free(csv);
    return st;
}

rt_status rt_predict_checkpoint(const char *ckpt_path, const char *dataset_dir, const char *path,
                                int threads, int64_t batch, int64_t *rows, char *err)
{
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
        rt_model_spec spec = ck.spec;
        spec.dropout = 0;
        rt_dp_opts o;
        rt_dp_opts_defaults(&o);
        o.threads = threads;
        o.max_batch = batch > 0 ? batch : 4096;
        st = rt_dp_create(&spec, &o, NULL, &d, err);
    }
    if (st == RT_OK)
        st = rt_ckpt_to_model(&ck, rt_dp_model(d), err);
    if (st == RT_OK)
        st = rt_predict_rows(d, &test, cols.label, ck.label_transform, path, err);
    if (st == RT_OK)
        *rows = test.n;
    rt_dp_destroy(d);
    rt_rows_free(&test);
    rt_dataset_free(ds);
    rt_ckpt_free(&ck);
    return st;
}
