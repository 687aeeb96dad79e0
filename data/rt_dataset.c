/* rt_dataset.c — see rt_dataset.h. */
#include "rt_data_io.h"
#include "rt_dataset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_file.h"
#include "rt_json.h"
#include "rt_model_names.h"

#define MAX_MANIFEST (64u << 20)

static const char *const ROLES[] = {"categorical", "continuous", "label", "validation",
                                    "id",          "date",       "weight"};
#define NROLES 7
static const char *const TASKS[RT_TASK_COUNT] = {RT_TASK_LIST(RT_NAME_STR_COMMA, )};

const char *rt_col_role_name(rt_col_role r)
{
    return (unsigned)r < NROLES ? ROLES[r] : "?";
}

void rt_dataset_free(rt_dataset *ds)
{
    if (!ds)
        return;
    for (int c = 0; c < ds->ncols; c++) {
        for (int32_t v = 0; ds->cols[c].vocab && v < ds->cols[c].vocab_size; v++)
            free(ds->cols[c].vocab[v]);
        free(ds->cols[c].vocab);
        free(ds->cols[c].class_rows);
        free(ds->cols[c].quantiles);
    }
    free(ds->cols);
    rt_name_index_free(&ds->index);
    free(ds->parts);
    free(ds->test);
    free(ds->source_json);
    free(ds);
}

const rt_ds_column *rt_dataset_column(const rt_dataset *ds, const char *name)
{
    int c = rt_name_find(&ds->index, ds->cols, ds->ncols, sizeof *ds->cols, name);
    return c < 0 ? NULL : &ds->cols[c];
}

int rt_dataset_columns(const rt_dataset *ds, rt_col_role role, const rt_ds_column **out, int max)
{
    int n = 0;
    for (int c = 0; c < ds->ncols; c++)
        if (ds->cols[c].role == role) {
            if (n < max && out)
                out[n] = &ds->cols[c];
            n++;
        }
    return n;
}

/* ---- writing ------------------------------------------------------------------- */

static void parts_json(rt_jw *w, const char *key, const rt_ds_part *p, int n, bool val)
{
    rt_jw_key(w, key);
    rt_jw_arr(w);
    for (int i = 0; i < n; i++) {
        rt_jw_obj(w);
        rt_jw_kstr(w, "file", p[i].file);
        rt_jw_kint(w, "rows", p[i].rows);
        if (val)
            rt_jw_kint(w, "validation_rows", p[i].validation_rows);
        rt_jw_obj_end(w);
    }
    rt_jw_arr_end(w);
}

rt_status rt_dataset_write_manifest(const rt_dataset *ds, char *err)
{
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, "format", "ringtrain-dataset");
    rt_jw_kint(&w, "version", 1);
    rt_jw_kstr(&w, "task", TASKS[ds->task]);
    rt_jw_kstr(&w, "label", ds->label);
    rt_jw_kstr(&w, "label_transform", ds->label_transform);
    if (ds->max_label > 0)
        rt_jw_knum(&w, "max_label", ds->max_label);
    bool stdz = false;
    rt_label_transform_parse(ds->label_transform, NULL, &stdz, NULL);
    if (stdz) {
        rt_jw_knum(&w, "label_mean", ds->label_mean);
        rt_jw_knum(&w, "label_std", ds->label_std);
    }
    if (ds->task == RT_TASK_REGRESSION && ds->label_lo <= ds->label_hi) {
        rt_jw_key(&w, "label_range");
        rt_jw_arr(&w);
        rt_jw_num(&w, ds->label_lo);
        rt_jw_num(&w, ds->label_hi);
        rt_jw_arr_end(&w);
    }
    if (ds->weight[0])
        rt_jw_kstr(&w, "weight", ds->weight);
    rt_jw_kstr(&w, "validation", ds->validation);
    rt_jw_kstr(&w, "id", ds->id);
    rt_jw_kstr(&w, "date", ds->date);
    rt_jw_key(&w, "columns");
    rt_jw_arr(&w);
    for (int c = 0; c < ds->ncols; c++) {
        const rt_ds_column *col = &ds->cols[c];
        rt_jw_obj(&w);
        rt_jw_kstr(&w, "name", col->name);
        rt_jw_kstr(&w, "role", rt_col_role_name(col->role));
        rt_jw_kstr(&w, "type", rt_col_type_name(col->type));
        if (col->role == RT_ROLE_CATEGORICAL || (col->role == RT_ROLE_LABEL && col->vocab)) {
            rt_jw_key(&w, "vocab");
            rt_jw_arr(&w);
            for (int32_t v = 0; v < col->vocab_size; v++)
                rt_jw_str(&w, col->vocab ? col->vocab[v] : NULL);
            rt_jw_arr_end(&w);
        }
        if (col->role == RT_ROLE_LABEL && col->class_rows) {
            rt_jw_key(&w, "class_rows");
            rt_jw_arr(&w);
            for (int32_t v = 0; v < col->vocab_size; v++)
                rt_jw_int(&w, col->class_rows[v]);
            rt_jw_arr_end(&w);
        }
        if (col->role == RT_ROLE_CONTINUOUS && col->has_stats) {
            rt_jw_knum(&w, "mean", col->mean);
            rt_jw_knum(&w, "std", col->std);
        }
        if (col->role == RT_ROLE_CONTINUOUS && col->nquantiles > 0) {
            rt_jw_key(&w, "quantiles");
            rt_jw_arr(&w);
            for (int32_t q = 0; q < col->nquantiles; q++)
                rt_jw_numf(&w, col->quantiles[q]);
            rt_jw_arr_end(&w);
        }
        rt_jw_obj_end(&w);
    }
    rt_jw_arr_end(&w);
    parts_json(&w, "partitions", ds->parts, ds->nparts, true);
    parts_json(&w, "test", ds->test, ds->ntest, false);
    rt_jw_key(&w, "rows");
    rt_jw_obj(&w);
    rt_jw_kint(&w, "train", ds->train_rows);
    rt_jw_kint(&w, "validation", ds->validation_rows);
    rt_jw_kint(&w, "test", ds->test_rows);
    rt_jw_obj_end(&w);
    if (ds->source_json) {
        rt_jw_key(&w, "source");
        rt_jw_raw(&w, ds->source_json);
    }
    rt_jw_obj_end(&w);
    size_t len;
    char *text = rt_jw_take(&w, &len);
    if (!text)
        return rt_err(err, RT_ERR_NOMEM, "out of memory writing the manifest");
    char path[1100];
    snprintf(path, sizeof path, "%s/manifest.json", ds->dir);
    rt_iov iov[2] = {{text, len}, {"\n", 1}};
    rt_status st = rt_write_atomic(path, iov, 2, err);
    free(text);
    return st;
}

/* ---- reading ------------------------------------------------------------------- */

static rt_status bad(char *err, const char *path, const char *what)
{
    return rt_err(err, RT_ERR_INVALID, "%s: %s", path, what);
}

static bool copy_name(char *dst, size_t len, const char *src)
{
    if (!src || !*src || strlen(src) >= len)
        return false;
    snprintf(dst, len, "%s", src);
    return true;
}

static rt_status read_parts(const rt_json *arr, rt_ds_part **out, int *n, const char *path,
                            const char *key, char *err)
{
    *n = (int)rt_json_len(arr);
    if (rt_json_type_of(arr) != RT_JSON_ARRAY || *n > 100000)
        return rt_err(err, RT_ERR_INVALID, "%s: \"%s\" must be an array of partitions", path,
                      key);
    *out = calloc((size_t)(*n ? *n : 1), sizeof **out);
    if (!*out)
        return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", path);
    for (int i = 0; i < *n; i++) {
        const rt_json *p = rt_json_at(arr, (size_t)i);
        const char *file = rt_json_get_str(p, "file");
        int64_t rows = -1, vrows = 0;
        if (!copy_name((*out)[i].file, sizeof (*out)[i].file, file) || strchr(file, '/') ||
            !rt_json_get_int(p, "rows", &rows) || rows < 0 ||
            (rt_json_get(p, "validation_rows") &&
             (!rt_json_get_int(p, "validation_rows", &vrows) || vrows < 0 || vrows > rows)))
            return rt_err(err, RT_ERR_INVALID,
                          "%s: \"%s\"[%d] needs a plain \"file\" name and row counts", path, key,
                          i);
        (*out)[i].rows = rows;
        (*out)[i].validation_rows = vrows;
    }
    return RT_OK;
}

static rt_status parse_manifest(rt_dataset *ds, const rt_json *m, const char *path, char *err)
{
    if (strcmp(rt_json_str(rt_json_get(m, "format"), ""), "ringtrain-dataset") != 0)
        return bad(err, path, "not a ringtrain dataset manifest (\"format\")");
    int64_t version = 0;
    if (!rt_json_get_int(m, "version", &version) || version != 1)
        return bad(err, path, "unsupported manifest version (this build reads 1)");
    if (!copy_name(ds->label, sizeof ds->label, rt_json_get_str(m, "label")))
        return bad(err, path, "\"label\" is missing");
    copy_name(ds->validation, sizeof ds->validation, rt_json_get_str(m, "validation"));
    copy_name(ds->id, sizeof ds->id, rt_json_get_str(m, "id"));
    copy_name(ds->date, sizeof ds->date, rt_json_get_str(m, "date"));
    const char *task = rt_json_str(rt_json_get(m, "task"), "regression");
    ds->task = -1;
    for (int k = 0; k < RT_TASK_COUNT; k++)
        if (!strcmp(task, TASKS[k]))
            ds->task = k;
    if (ds->task < 0)
        return bad(err, path, "\"task\" must be regression, binary or multiclass");
    copy_name(ds->weight, sizeof ds->weight, rt_json_get_str(m, "weight"));
    const char *tr = rt_json_str(rt_json_get(m, "label_transform"), "none");
    bool stdz = false;
    if (rt_label_transform_parse(tr, NULL, &stdz, NULL) != RT_OK || strlen(tr) >= 16)
        return bad(err, path,
                   "\"label_transform\" must be \"none\", \"log\", \"standardize\" "
                   "or \"log,standardize\"");
    snprintf(ds->label_transform, sizeof ds->label_transform, "%s", tr);
    ds->max_label = rt_json_num(rt_json_get(m, "max_label"), 0);
    ds->label_mean = rt_json_num(rt_json_get(m, "label_mean"), 0);
    ds->label_std = rt_json_num(rt_json_get(m, "label_std"), 1);
    const rt_json *range = rt_json_get(m, "label_range");
    ds->label_lo = rt_json_num(rt_json_at(range, 0), 1);
    ds->label_hi = rt_json_num(rt_json_at(range, 1), 0); /* absent: lo > hi, unknown */
    if (ds->task == RT_TASK_REGRESSION && !stdz && !(ds->max_label > 0))
        return bad(err, path, "\"max_label\" must be a positive number");
    if (stdz && (!isfinite(ds->label_mean) || !(ds->label_std > 0)))
        return bad(err, path, "\"label_mean\" and \"label_std\" must be finite (std > 0)");
    const rt_json *cols = rt_json_get(m, "columns");
    ds->ncols = (int)rt_json_len(cols);
    if (ds->ncols == 0 || ds->ncols > RT_SHARD_MAX_COLS) {
        char msg[120];
        snprintf(msg, sizeof msg, "\"columns\" must list 1 to %d columns", RT_SHARD_MAX_COLS);
        return bad(err, path, msg);
    }
    ds->cols = calloc((size_t)ds->ncols, sizeof *ds->cols);
    if (!ds->cols)
        return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", path);
    for (int c = 0; c < ds->ncols; c++) {
        const rt_json *j = rt_json_at(cols, (size_t)c);
        rt_ds_column *col = &ds->cols[c];
        const char *role = rt_json_get_str(j, "role"), *type = rt_json_get_str(j, "type");
        int r = -1;
        for (int k = 0; role && k < NROLES; k++)
            if (strcmp(role, ROLES[k]) == 0)
                r = k;
        col->type = !type ? 0 : !strcmp(type, "i32") ? RT_COL_I32
                            : !strcmp(type, "f32") ? RT_COL_F32
                            : !strcmp(type, "u8")  ? RT_COL_U8
                                                   : 0;
        if (!copy_name(col->name, sizeof col->name, rt_json_get_str(j, "name")) || r < 0 ||
            col->type == 0) {
            char msg[200];
            snprintf(msg, sizeof msg, "column %d needs a name, a role (categorical, continuous, "
                                      "label, validation, id, date, weight) and a type (i32, f32, "
                                      "u8)", c);
            return bad(err, path, msg);
        }
        col->role = (rt_col_role)r;
        if (col->role == RT_ROLE_LABEL && ds->task != RT_TASK_REGRESSION) {
            const rt_json *v = rt_json_get(j, "vocab"), *cr = rt_json_get(j, "class_rows");
            col->vocab_size = (int32_t)rt_json_len(v);
            if (col->vocab_size < 2 || col->vocab_size > 256 ||
                (ds->task == RT_TASK_BINARY && col->vocab_size != 2) ||
                rt_json_len(cr) != (size_t)col->vocab_size)
                return bad(err, path, "a classification's label column needs its classes "
                                      "(\"vocab\": 2 for binary, 2 to 256) and \"class_rows\"");
            col->vocab = calloc((size_t)col->vocab_size, sizeof *col->vocab);
            col->class_rows = calloc((size_t)col->vocab_size, sizeof *col->class_rows);
            if (!col->vocab || !col->class_rows)
                return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", path);
            for (int32_t k = 0; k < col->vocab_size; k++) {
                const char *s = rt_json_str(rt_json_at(v, (size_t)k), "");
                col->vocab[k] = strdup(s);
                if (!rt_json_int(rt_json_at(cr, (size_t)k), &col->class_rows[k]))
                    return bad(err, path, "\"class_rows\" must hold integers");
            }
        }
        if (col->role == RT_ROLE_CATEGORICAL) {
            const rt_json *v = rt_json_get(j, "vocab");
            col->vocab_size = (int32_t)rt_json_len(v);
            if (col->type != RT_COL_I32 || col->vocab_size == 0) {
                char msg[200];
                snprintf(msg, sizeof msg, "categorical column %s needs type i32 and a vocab",
                         col->name);
                return bad(err, path, msg);
            }
            col->vocab = calloc((size_t)col->vocab_size, sizeof *col->vocab);
            if (!col->vocab)
                return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", path);
            for (int32_t k = 0; k < col->vocab_size; k++) {
                const char *s = rt_json_str(rt_json_at(v, (size_t)k), NULL);
                col->vocab[k] = s ? strdup(s) : NULL;
            }
        }
        const rt_json *mean = rt_json_get(j, "mean"), *sd = rt_json_get(j, "std");
        if (col->role == RT_ROLE_CONTINUOUS && mean && sd) {
            col->mean = rt_json_num(mean, NAN);
            col->std = rt_json_num(sd, NAN);
            if (!isfinite(col->mean) || !(col->std >= 0)) {
                char msg[200];
                snprintf(msg, sizeof msg, "continuous column %s has a mean or std that is not a "
                         "finite number (std >= 0)", col->name);
                return bad(err, path, msg);
            }
            col->has_stats = true;
        }
        const rt_json *qs = rt_json_get(j, "quantiles");
        if (col->role == RT_ROLE_CONTINUOUS && qs) {
            const size_t nq = rt_json_len(qs);
            col->quantiles = nq >= 2 && nq <= 1000 ? malloc(nq * sizeof *col->quantiles) : NULL;
            for (size_t q = 0; col->quantiles && q < nq; q++) {
                /* compared as the floats they become: "0.100000001" twice is a tie */
                const double v = rt_json_num(rt_json_at(qs, q), NAN);
                if (!isfinite(v) || !isfinite((float)v) ||
                    (q > 0 && (float)v < col->quantiles[q - 1])) {
                    free(col->quantiles);
                    col->quantiles = NULL;
                    break;
                }
                col->quantiles[q] = (float)v;
            }
            if (!col->quantiles) {
                char msg[200];
                snprintf(msg, sizeof msg,
                         "continuous column %s's quantiles are not 2 to 1000 "
                         "ascending finite numbers",
                         col->name);
                return bad(err, path, msg);
            }
            col->nquantiles = (int32_t)nq;
        }
    }
    if (!rt_dataset_column(ds, ds->label))
        return bad(err, path, "the label column is not among \"columns\"");
    if (ds->weight[0] && !rt_dataset_column(ds, ds->weight))
        return bad(err, path, "the weight column is not among \"columns\"");
    rt_status st = read_parts(rt_json_get(m, "partitions"), &ds->parts, &ds->nparts, path,
                              "partitions", err);
    if (st == RT_OK && rt_json_get(m, "test")) /* a dataset may have no test rows */
        st = read_parts(rt_json_get(m, "test"), &ds->test, &ds->ntest, path, "test", err);
    if (st != RT_OK)
        return st;
    if (ds->nparts == 0)
        return bad(err, path, "no training partitions");
    for (int i = 0; i < ds->nparts; i++) {
        ds->train_rows += ds->parts[i].rows - ds->parts[i].validation_rows;
        ds->validation_rows += ds->parts[i].validation_rows;
    }
    for (int i = 0; i < ds->ntest; i++)
        ds->test_rows += ds->test[i].rows;
    const rt_json *src = rt_json_get(m, "source");
    if (rt_json_type_of(src) == RT_JSON_OBJECT) {
        rt_jw w;
        rt_jw_init(&w);
        rt_jw_value(&w, src);
        ds->source_json = rt_jw_take(&w, NULL);
    }
    return RT_OK;
}

rt_status rt_dataset_open(const char *dir, rt_dataset **out, char *err)
{
    *out = NULL;
    char path[1100];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    char *text = NULL;
    size_t len = 0;
    rt_status st = rt_data_read_file(path, MAX_MANIFEST, &text, &len, err);
    if (st == RT_ERR_NOTFOUND)
        return rt_err(err, st, "%s is not a prepared dataset: no manifest.json (run `ringtrain "
                               "prep` first; an interrupted prep leaves none)", dir);
    if (st != RT_OK)
        return st;
    rt_json *m = NULL;
    char jerr[RT_ERR_LEN];
    if (rt_json_parse(text, len, &m, jerr) != RT_OK) {
        free(text);
        return rt_err(err, RT_ERR_INVALID, "%s: %s", path, jerr);
    }
    free(text);
    rt_dataset *ds = calloc(1, sizeof *ds);
    if (!ds) {
        rt_json_free(m);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    snprintf(ds->dir, sizeof ds->dir, "%s", dir);
    st = parse_manifest(ds, m, path, err);
    rt_json_free(m);
    if (st != RT_OK) {
        rt_dataset_free(ds);
        return st;
    }
    (void)rt_name_index_build(&ds->index, ds->cols, ds->ncols, sizeof *ds->cols); /* else linear */
    *out = ds;
    return RT_OK;
}

rt_status rt_dataset_read_part(const rt_dataset *ds, int part, bool test, rt_shard **out,
                               char *err)
{
    *out = NULL;
    int n = test ? ds->ntest : ds->nparts;
    if (part < 0 || part >= n)
        return rt_err(err, RT_ERR_INVALID, "%s: no %s partition %d (it has %d)", ds->dir,
                      test ? "test" : "training", part, n);
    const rt_ds_part *p = test ? &ds->test[part] : &ds->parts[part];
    char path[1300];
    snprintf(path, sizeof path, "%s/%s", ds->dir, p->file);
    rt_shard *s = NULL;
    rt_status st = rt_shard_read(path, &s, err);
    if (st != RT_OK)
        return st;
    if (s->nrows != p->rows) {
        st = rt_err(err, RT_ERR_INVALID, "%s has %lld rows, the manifest says %lld", path,
                    (long long)s->nrows, (long long)p->rows);
    }
    for (int c = 0; c < ds->ncols && st == RT_OK; c++) {
        const rt_ds_column *col = &ds->cols[c];
        bool wanted = test ? col->role != RT_ROLE_LABEL && col->role != RT_ROLE_VALIDATION &&
                                 col->role != RT_ROLE_WEIGHT
                           : col->role != RT_ROLE_ID;
        if (!wanted)
            continue;
        const rt_shard_col *sc = rt_shard_find(s, col->name);
        if (!sc)
            st = rt_err(err, RT_ERR_INVALID, "%s has no column %s", path, col->name);
        else if (sc->type != col->type)
            st = rt_err(err, RT_ERR_INVALID, "%s: column %s is %s, the manifest says %s", path,
                        col->name, rt_col_type_name(sc->type), rt_col_type_name(col->type));
        else if (col->role == RT_ROLE_CATEGORICAL) {
            const int32_t *v = sc->data;
            for (int64_t r = 0; r < s->nrows; r++)
                if (v[r] < 0 || v[r] >= col->vocab_size) {
                    st = rt_err(err, RT_ERR_INVALID,
                                "%s: row %lld of %s has index %d outside its vocabulary of %d",
                                path, (long long)r, col->name, v[r], col->vocab_size);
                    break;
                }
        }
    }
    if (st != RT_OK) {
        rt_shard_free(s);
        return st;
    }
    *out = s;
    return RT_OK;
}

rt_status rt_label_transform_parse(const char *s, bool *log, bool *standardize, char *err)
{
    static const struct {
        const char *name;
        bool log, stdz;
    } forms[] = {{"none", false, false},
                 {"log", true, false},
                 {"standardize", false, true},
                 {"log,standardize", true, true}};
    for (size_t i = 0; s && i < sizeof forms / sizeof *forms; i++)
        if (!strcmp(s, forms[i].name)) {
            if (log)
                *log = forms[i].log;
            if (standardize)
                *standardize = forms[i].stdz;
            return RT_OK;
        }
    return rt_err(err, RT_ERR_INVALID,
                  "'%s': none, log (the label holds log(target)), standardize (the trainer fits "
                  "(label - mean) / std) or log,standardize (both, the log first)",
                  s ? s : "");
}
