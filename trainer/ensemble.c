/* ensemble.c — `ringtrain ensemble` (rt_ensemble.h): each member's
 * validation_predictions.csv and submission.csv read (from a folder or an
 * S3 prefix) and checked against the first member's, the selection
 * (ensemble_select.c) fitted on the validation rows, then the weighted
 * predictions and ensemble.json written. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_ckpt.h"
#include "rt_csv.h"
#include "rt_data_io.h"
#include "rt_ensemble.h"
#include "rt_file.h"
#include "rt_json.h"
#include "rt_predict.h"
#include "rt_s3.h"

#define MAX_FILE (1ll << 34) /* 16 GiB: a predictions file is read whole */
#define DEFAULT_ROUNDS 25

/* One predictions file: "Id[,true_LABEL],LABEL[,p_CLASS...]". */
typedef struct pfile {
    char path[1200];
    int nhead;
    char **head; /* the header's fields */
    bool truth;  /* validation_predictions.csv: the true_ column */
    int K;       /* probability columns (0: a regression's one value) */
    int64_t n;
    int64_t *id;
    int32_t *cls; /* truth, classification: the class (by the p_ columns) */
    double *y;    /* truth, regression */
    double *pred; /* n x max(K, 1) */
    /* loose: a file of `ringtrain predict --input`: its first column by any
     * name, its values any text in any order (--id), kept as they are, and
     * columns after the prediction's (--keep) carried along */
    bool loose;
    char **key;  /* loose: each row's first field */
    int nkeep;   /* loose: the --keep columns at the end */
    char **keep; /* loose: n x nkeep */
} pfile;

typedef struct member {
    const char *store;
    pfile val, test;
} member;

static void pfile_free(pfile *f)
{
    for (int i = 0; i < f->nhead; i++)
        free(f->head[i]);
    for (int64_t r = 0; f->key && r < f->n; r++)
        free(f->key[r]);
    for (int64_t r = 0; f->keep && r < f->n * f->nkeep; r++)
        free(f->keep[r]);
    free(f->head), free(f->id), free(f->cls), free(f->y), free(f->pred), free(f->key),
        free(f->keep);
    memset(f, 0, sizeof *f);
}

static int width(const pfile *f) { return f->K ? f->K : 1; }

/* s, whole, as a finite number */
static bool number(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return *s && !*end && !errno && isfinite(*v);
}

static rt_status read_header(rt_csv *c, pfile *f, char *err)
{
    const int r = rt_csv_next(c, err);
    if (r != 1)
        return r < 0 ? RT_ERR_INVALID : rt_err(err, RT_ERR_INVALID, "%s is empty", f->path);
    f->nhead = (int)rt_csv_nfields(c);
    if (!(f->head = calloc((size_t)f->nhead, sizeof *f->head)))
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < f->nhead; i++)
        if (!(f->head[i] = strdup(rt_csv_field(c, (size_t)i, NULL))))
            return rt_err(err, RT_ERR_NOMEM, "out of memory");
    const int lab = f->truth ? 2 : 1; /* the prediction's column */
    if (f->nhead <= lab || (!f->loose && strcmp(f->head[0], "Id") != 0) ||
        (f->truth && strncmp(f->head[1], "true_", 5) != 0))
        return rt_err(err, RT_ERR_INVALID,
                      "%s is not a predictions file of ringtrain's (its header should be "
                      "Id,%sLABEL[,p_CLASS...])",
                      f->path, f->truth ? "true_LABEL," : "");
    f->K = f->nhead - lab - 1;
    if (f->loose) { /* the p_ columns, then the kept ones */
        f->K = 0;
        while (lab + 1 + f->K < f->nhead && !strncmp(f->head[lab + 1 + f->K], "p_", 2))
            f->K++;
        f->nkeep = f->nhead - lab - 1 - f->K;
    }
    for (int k = 0; k < f->K; k++)
        if (strncmp(f->head[lab + 1 + k], "p_", 2) != 0)
            return rt_err(err, RT_ERR_INVALID,
                          "%s: column %d, '%s', is not a class probability (p_CLASS)", f->path,
                          lab + 2 + k, f->head[lab + 1 + k]);
    if (f->K == 1)
        return rt_err(err, RT_ERR_INVALID,
                      "%s has one class probability column: a classifier's "
                      "files have one per class",
                      f->path);
    return RT_OK;
}

/* The class whose p_ column is named p_NAME, or -1 */
static int class_of(const pfile *f, const char *name)
{
    const int lab = f->truth ? 2 : 1;
    for (int k = 0; k < f->K; k++)
        if (!strcmp(f->head[lab + 1 + k] + 2, name))
            return k;
    return -1;
}

static rt_status grow(pfile *f, int64_t *cap)
{
    int64_t c = *cap ? *cap * 2 : 1024;
    int64_t *id = realloc(f->id, (size_t)c * sizeof *id);
    if (id)
        f->id = id;
    double *pred = realloc(f->pred, (size_t)c * (size_t)width(f) * sizeof *pred);
    if (pred)
        f->pred = pred;
    bool ok = id && pred;
    if (ok && f->loose) {
        char **key = realloc(f->key, (size_t)c * sizeof *key);
        if (key)
            f->key = key;
        char **keep =
            realloc(f->keep, (size_t)c * (size_t)(f->nkeep ? f->nkeep : 1) * sizeof *keep);
        if (keep)
            f->keep = keep;
        ok = key && keep;
    }
    if (ok && f->truth && f->K) {
        int32_t *cls = realloc(f->cls, (size_t)c * sizeof *cls);
        ok = cls != NULL;
        if (cls)
            f->cls = cls;
    } else if (ok && f->truth) {
        double *y = realloc(f->y, (size_t)c * sizeof *y);
        ok = y != NULL;
        if (y)
            f->y = y;
    }
    if (!ok)
        return RT_ERR_NOMEM;
    *cap = c;
    return RT_OK;
}

/* One record's id, truth and prediction (line: where it starts) */
static rt_status read_row(rt_csv *c, pfile *f, char *err)
{
    const int64_t line = rt_csv_line(c), i = f->n;
    if ((int)rt_csv_nfields(c) != f->nhead)
        return rt_err(err, RT_ERR_INVALID, "%s:%lld: %zu fields, the header has %d", f->path,
                      (long long)line, rt_csv_nfields(c), f->nhead);
    double v;
    const char *s = rt_csv_field(c, 0, NULL);
    if (!f->loose && (!number(s, &v) || v != floor(v) || fabs(v) > 9e15))
        return rt_err(err, RT_ERR_INVALID, "%s:%lld: the Id '%s' is not an integer", f->path,
                      (long long)line, s);
    f->id[i] = f->loose ? i : (int64_t)v;
    if (!f->loose && i > 0 && f->id[i] <= f->id[i - 1])
        return rt_err(err, RT_ERR_INVALID,
                      "%s:%lld: Id %lld after %lld: ringtrain writes the rows in increasing Id "
                      "order, once each",
                      f->path, (long long)line, (long long)f->id[i], (long long)f->id[i - 1]);
    if (f->truth) {
        s = rt_csv_field(c, 1, NULL);
        if (f->K && (f->cls[i] = class_of(f, s)) < 0)
            return rt_err(err, RT_ERR_INVALID, "%s:%lld: the true class '%s' has no p_ column",
                          f->path, (long long)line, s);
        if (!f->K && !number(s, &f->y[i]))
            return rt_err(err, RT_ERR_INVALID, "%s:%lld: the true value '%s' is not a number",
                          f->path, (long long)line, s);
    }
    const int lab = f->truth ? 2 : 1, w = width(f);
    for (int k = 0; k < w; k++) {
        const int col = f->K ? lab + 1 + k : lab;
        s = rt_csv_field(c, (size_t)col, NULL);
        if (!number(s, &f->pred[i * w + k]) ||
            (f->K && (f->pred[i * w + k] < 0 || f->pred[i * w + k] > 1)))
            return rt_err(err, RT_ERR_INVALID, "%s:%lld: %s '%s' is not a %s", f->path,
                          (long long)line, f->head[col], s, f->K ? "probability" : "finite number");
    }
    /* loose: the key and the kept fields as they are (the row counts only
     * once they are all held) */
    for (int k = -1; f->loose && k < f->nkeep; k++) {
        char **to = k < 0 ? &f->key[i] : &f->keep[i * f->nkeep + k];
        if (!(*to = strdup(rt_csv_field(c, k < 0 ? 0 : (size_t)(f->nhead - f->nkeep + k), NULL)))) {
            while (--k >= -1)
                free(k < 0 ? f->key[i] : f->keep[i * f->nkeep + k]);
            return rt_err(err, RT_ERR_NOMEM, "out of memory reading %s", f->path);
        }
    }
    f->n++;
    return RT_OK;
}

/* f (its path and truth set) from the text: the header, then, when the
 * model's classes are known (-1: not), whether the files fit it — a
 * classifier's must carry its probabilities, else a numeric class would be
 * averaged as a value — then the rows. */
static rt_status parse_pfile(const void *data, size_t len, int classes, pfile *f, char *err)
{
    rt_csv *c = NULL;
    rt_status st = rt_csv_open_mem(data, len, f->path, &c, err);
    if (st == RT_OK)
        st = read_header(c, f, err);
    if (st == RT_OK && classes > 0 && f->K == 0)
        st = rt_err(err, RT_ERR_INVALID,
                    "%s: the model is a classifier, but the file has no class probabilities to "
                    "average: train it with [output] proba = true (the default)",
                    f->path);
    else if (st == RT_OK && classes == 0 && f->K > 0)
        st = rt_err(err, RT_ERR_INVALID, "%s: the model is a regression, the file a classifier's",
                    f->path);
    int64_t cap = 0;
    int r = 0;
    while (st == RT_OK && (r = rt_csv_next(c, err)) == 1) {
        if (f->n == cap && grow(f, &cap) != RT_OK)
            st = rt_err(err, RT_ERR_NOMEM, "out of memory reading %s", f->path);
        else
            st = read_row(c, f, err);
    }
    if (st == RT_OK && r < 0)
        st = RT_ERR_INVALID;
    rt_csv_close(c);
    return st;
}

/* f->path (a file or an object) into f */
static rt_status load_pfile(pfile *f, int classes, char *err)
{
    char *data = NULL;
    size_t len = 0;
    rt_status st = rt_data_read_file(f->path, (size_t)MAX_FILE, &data, &len, err);
    if (st == RT_OK)
        st = parse_pfile(data, len, classes, f, err);
    free(data);
    return st;
}

static rt_status read_pfile(const char *store, const char *name, bool truth, int classes, pfile *f,
                            char *err)
{
    memset(f, 0, sizeof *f);
    if (!rt_s3_uri_join(f->path, sizeof f->path, store, name))
        return rt_err(err, RT_ERR_INVALID, "%s: too long a path", store);
    f->truth = truth;
    rt_status st = load_pfile(f, classes, err);
    if (st == RT_ERR_NOTFOUND)
        return rt_err(err, st, "%s has no %s%s", store, name,
                      truth ? ": the ensemble's weights are fitted on the validation rows' "
                              "predictions, which a job writes with [output] "
                              "predict_validation = true"
                            : ": the job wrote no test predictions (its data set has no test "
                              "rows, or [output] predictions named another file)");
    return st;
}

rt_status rt_ens_check_file(const void *data, size_t len, const char *name, bool truth, bool loose,
                            int64_t *rows, char *err)
{
    pfile f = {.truth = truth, .loose = loose && !truth};
    snprintf(f.path, sizeof f.path, "%s", name);
    rt_status st = parse_pfile(data, len, -1, &f, err);
    *rows = st == RT_OK ? f.n : 0;
    pfile_free(&f);
    return st;
}

/* The store's model, when it has a checkpoint: *classes its class count
 * (0: a regression), else -1 ([train] checkpoint = none: the files say). */
static rt_status model_task(const char *store, int *classes, char *err)
{
    char path[1300];
    rt_ckpt ck;
    rt_status st = rt_ckpt_find_header(store, path, sizeof path, &ck, err);
    *classes = st == RT_OK ? ck.spec.n_classes : -1;
    if (st == RT_OK)
        rt_ckpt_free(&ck);
    return st == RT_ERR_NOTFOUND ? RT_OK : st;
}

/* Whether the store holds the file (or the object) */
static bool has_file(const char *store, const char *name)
{
    char path[1300], e[RT_ERR_LEN];
    rt_src *src = NULL;
    int64_t size;
    if (!rt_s3_uri_join(path, sizeof path, store, name) ||
        rt_src_open(path, &src, &size, e) != RT_OK)
        return false;
    rt_src_close(src);
    return true;
}

/* b against a (the first member's): the same columns */
static rt_status same_columns(const pfile *a, const pfile *b, char *err)
{
    for (int i = 0; i < a->nhead || i < b->nhead; i++)
        if (i >= a->nhead || i >= b->nhead || strcmp(a->head[i], b->head[i]) != 0)
            return rt_err(err, RT_ERR_INVALID,
                          "%s's column %d is '%s', %s's '%s': the members must predict the "
                          "same label and classes",
                          b->path, i + 1, i < b->nhead ? b->head[i] : "(none)", a->path,
                          i < a->nhead ? a->head[i] : "(none)");
    return RT_OK;
}

/* b against a: the same columns, rows and truths */
static rt_status same_as(const pfile *a, const pfile *b, char *err)
{
    rt_status st = same_columns(a, b, err);
    for (int64_t i = 0; st == RT_OK && (i < a->n || i < b->n); i++) {
        if (i >= a->n || i >= b->n ||
            (a->loose ? strcmp(a->key[i], b->key[i]) != 0 : a->id[i] != b->id[i]))
            return rt_err(err, RT_ERR_INVALID,
                          "%s has %lld rows, %s %lld%s: the members must be scored on the same "
                          "rows (the same data set and validation split%s)",
                          b->path, (long long)b->n, a->path, (long long)a->n,
                          a->n == b->n ? ", with other Ids" : "",
                          a->truth ? "; cross-validation folds' models: --bag" : "");
        if (a->truth && (a->K ? a->cls[i] != b->cls[i] : a->y[i] != b->y[i]))
            return rt_err(err, RT_ERR_INVALID,
                          "%s's row Id %lld has another true label than in %s: the members "
                          "must be trained on the same data set",
                          b->path, (long long)b->id[i], a->path);
    }
    return st;
}

/* The stores' files into m[0..rep->nmembers) (skip_incomplete: a store
 * without one of them is left out, its index in rep->skipped).  Where no
 * store holds a submission.csv — their data set has no test rows — the
 * ensemble is of the validation rows alone (rep->no_test), and its
 * ensemble.json scores new rows (predict --input). */
static rt_status load_members(const rt_ens_opts *o, member *m, rt_ens_report *rep, char *err)
{
    rt_status st = RT_OK;
    rep->no_test = true;
    for (int s = 0; rep->no_test && s < o->nstores; s++)
        rep->no_test = !has_file(o->stores[s], "submission.csv");
    for (int s = 0; st == RT_OK && s < o->nstores; s++) {
        member *x = &m[rep->nmembers];
        x->store = o->stores[s];
        int classes;
        st = model_task(x->store, &classes, err);
        if (st == RT_OK)
            st = read_pfile(x->store, "validation_predictions.csv", true, classes, &x->val, err);
        if (st == RT_OK && !rep->no_test)
            st = read_pfile(x->store, "submission.csv", false, classes, &x->test, err);
        if (st == RT_ERR_NOTFOUND && o->skip_incomplete) {
            pfile_free(&x->val), pfile_free(&x->test);
            rep->skipped[rep->nskipped++] = s;
            st = RT_OK;
            continue;
        }
        if (st == RT_OK && !rep->no_test && x->test.K != x->val.K)
            st = rt_err(err, RT_ERR_INVALID,
                        "%s has %d class probabilities, %s %d: write both with [output] proba = "
                        "true",
                        x->test.path, x->test.K, x->val.path, x->val.K);
        if (st == RT_OK && x != m &&
            (st = o->bag ? same_columns(&m[0].val, &x->val, err)
                         : same_as(&m[0].val, &x->val, err)) == RT_OK &&
            !rep->no_test)
            st = same_as(&m[0].test, &x->test, err);
        if (st == RT_OK)
            rep->member[rep->nmembers++] = s;
        else
            pfile_free(&x->val), pfile_free(&x->test);
    }
    if (st == RT_OK && rep->nmembers == 0)
        st = rt_err(err, RT_ERR_NOTFOUND,
                    "none of the %d stores holds validation_predictions.csv%s (a job writes "
                    "the first with [output] predict_validation = true)",
                    o->nstores, rep->no_test ? "" : " and submission.csv");
    return st;
}

/* The metric the task allows (AUTO: log_loss or rmse) */
static rt_status pick_metric(const rt_ens_opts *o, const member *m, int n, rt_ens_metric *out,
                             char *err)
{
    const int K = m[0].val.K;
    rt_ens_metric x = o->metric != RT_ENS_AUTO ? o->metric : K ? RT_ENS_LOG_LOSS : RT_ENS_RMSE;
    const bool cls_metric = x == RT_ENS_LOG_LOSS || x == RT_ENS_ACCURACY || x == RT_ENS_AUC;
    if (cls_metric != (K > 0))
        return rt_err(err, RT_ERR_INVALID, "metric %s is for %s; the members' task is a %s",
                      rt_ens_metric_name(x), cls_metric ? "classification" : "regression",
                      K ? "classification (log_loss, accuracy, auc)"
                        : "regression (rmse, mae, rmse_log)");
    if (x == RT_ENS_AUC && K != 2)
        return rt_err(err, RT_ERR_INVALID,
                      "metric auc is for two classes; the members have %d "
                      "(log_loss or accuracy)",
                      K);
    for (int i = 0; x == RT_ENS_RMSE_LOG && i < n; i++)
        for (int64_t r = 0; r < m[i].val.n; r++)
            if (m[i].val.pred[r] <= 0 || m[i].val.y[r] <= 0)
                return rt_err(err, RT_ERR_INVALID,
                              "metric rmse_log needs positive values: %s's row Id %lld has "
                              "%s %g",
                              m[i].val.path, (long long)m[i].val.id[r],
                              m[i].val.y[r] <= 0 ? "the true value" : "the prediction",
                              m[i].val.y[r] <= 0 ? m[i].val.y[r] : m[i].val.pred[r]);
    *out = x;
    return RT_OK;
}

/* The weighted mean of the members' predictions of f's rows (which = val
 * or test) */
static double *blend(const member *m, int n, bool val, const double *weight)
{
    const pfile *f0 = val ? &m[0].val : &m[0].test;
    const size_t cells = (size_t)f0->n * (size_t)width(f0);
    double *out = calloc(cells ? cells : 1, sizeof *out);
    for (int i = 0; out && i < n; i++) {
        const double w = weight[i];
        const double *x = val ? m[i].val.pred : m[i].test.pred;
        for (size_t c = 0; w > 0 && c < cells; c++)
            out[c] += w * x[c];
    }
    return out;
}

/* --bag: the members' validation rows — cross-validation folds, each row
 * in one member's file — merged into one out-of-fold file in Id order, each
 * row as the member that did not train on it predicted it; a row in two
 * members' files, or a member without rows, is refused */
static rt_status out_of_fold(const member *m, int n, pfile *o, char *err)
{
    const pfile *f0 = &m[0].val;
    const size_t w = (size_t)width(f0);
    int64_t total = 0;
    *o = (pfile){0};
    for (int i = 0; i < n; i++) {
        if (m[i].val.n == 0)
            return rt_err(err, RT_ERR_INVALID,
                          "%s has no rows: --bag's members each validate a fold", m[i].val.path);
        total += m[i].val.n;
    }
    const size_t rows = (size_t)(total ? total : 1);
    *o = (pfile){.truth = true, .K = f0->K, .n = total, .nhead = f0->nhead};
    snprintf(o->path, sizeof o->path, "the out-of-fold predictions");
    o->head = calloc((size_t)f0->nhead, sizeof *o->head);
    o->id = malloc(rows * sizeof *o->id);
    o->pred = malloc(rows * w * sizeof *o->pred);
    if (f0->K)
        o->cls = malloc(rows * sizeof *o->cls);
    else
        o->y = malloc(rows * sizeof *o->y);
    int64_t *at = calloc((size_t)n, sizeof *at);
    bool ok = o->head && o->id && o->pred && (o->cls || o->y) && at;
    for (int i = 0; ok && i < f0->nhead; i++)
        ok = (o->head[i] = strdup(f0->head[i])) != NULL;
    rt_status st = ok ? RT_OK : rt_err(err, RT_ERR_NOMEM, "out of memory");
    /* each file's Ids ascend (read_row checks): take the smallest next one */
    for (int64_t r = 0, prev = -1; st == RT_OK && r < total; r++) {
        int b = -1;
        for (int i = 0; i < n; i++)
            if (at[i] < m[i].val.n && (b < 0 || m[i].val.id[at[i]] < m[b].val.id[at[b]]))
                b = i;
        const pfile *f = &m[b].val;
        const int64_t k = at[b]++;
        if (r > 0 && o->id[r - 1] == f->id[k]) {
            st = rt_err(err, RT_ERR_INVALID,
                        "row Id %lld is a validation row of both %s and %s: --bag takes the "
                        "models of cross-validation folds, each row validating one",
                        (long long)f->id[k], m[prev].val.path, f->path);
            break;
        }
        o->id[r] = f->id[k];
        if (f0->K)
            o->cls[r] = f->cls[k];
        else
            o->y[r] = f->y[k];
        memcpy(o->pred + (size_t)r * w, f->pred + (size_t)k * w, w * sizeof *o->pred);
        prev = b;
    }
    free(at);
    if (st != RT_OK)
        pfile_free(o);
    return st;
}

/* The metric of a validation file's own predictions against its truths */
static double score_file(const pfile *f, rt_ens_metric metric)
{
    const rt_ens_problem p = {.nmembers = 1,
                              .nrows = f->n,
                              .ncols = width(f),
                              .label = f->cls,
                              .target = f->y,
                              .metric = metric};
    return rt_ens_score(&p, f->pred);
}

/* --bag's fit: the members weighed alike, each scored on its own fold, the
 * bag on the out-of-fold rows */
static void fit_bag(const member *m, int n, const pfile *oof, rt_ens_metric metric, rt_ens_fit *fit)
{
    memset(fit, 0, sizeof *fit);
    fit->rounds_kept = n;
    const bool up = rt_ens_metric_higher_better(metric);
    for (int i = 0; i < n; i++) {
        fit->counts[i] = 1;
        fit->weight[i] = 1.0 / n;
        fit->member[i] = score_file(&m[i].val, metric);
        if (up ? fit->member[i] > fit->member[fit->best] : fit->member[i] < fit->member[fit->best])
            fit->best = i;
    }
    fit->ensemble = score_file(oof, metric);
}

/* f's layout with pred in place of the member's predictions */
static rt_status write_pfile(const pfile *f, const double *pred, bool proba, const char *path,
                             char *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    const int lab = f->truth ? 2 : 1, w = width(f);
    for (int i = 0; i < f->nhead; i++) /* without the p_ columns when not proba */
        if (proba || i <= lab || i > lab + f->K) {
            if (i)
                fputc(',', out);
            rt_pred_csv_put(out, f->head[i]);
        }
    fputc('\n', out);
    for (int64_t r = 0; r < f->n; r++) {
        if (f->loose)
            rt_pred_csv_put(out, f->key[r]), fputc(',', out);
        else
            fprintf(out, "%lld,", (long long)f->id[r]);
        if (f->truth && f->K) { /* the class's name, as its p_ column names it */
            rt_pred_csv_put(out, f->head[lab + 1 + f->cls[r]] + 2);
            fputc(',', out);
        } else if (f->truth)
            fprintf(out, "%.6g,", f->y[r]);
        const double *p = pred + r * w;
        if (!f->K)
            fprintf(out, "%.6g", p[0]);
        else {
            int best = 0;
            for (int k = 1; k < f->K; k++)
                if (p[k] > p[best])
                    best = k;
            rt_pred_csv_put(out, f->head[lab + 1 + best] + 2);
            for (int k = 0; proba && k < f->K; k++)
                fprintf(out, ",%.6g", p[k]);
        }
        for (int k = 0; k < f->nkeep; k++)
            fputc(',', out), rt_pred_csv_put(out, f->keep[r * f->nkeep + k]);
        fputc('\n', out);
    }
    fclose(out);
    rt_iov iov = {text, len};
    rt_status st = rt_write_atomic(path, &iov, 1, err);
    free(text);
    return st;
}

/* A local store as an absolute path (`ringtrain predict --model` reads the
 * members from wherever it runs); an S3 URI as it is */
static const char *absolute(const char *store, char *buf, size_t len)
{
    char *r = rt_s3_is_uri(store) ? NULL : realpath(store, NULL);
    snprintf(buf, len, "%s", r ? r : store);
    free(r);
    return buf;
}

static rt_status write_report(const rt_ens_opts *o, const rt_ens_report *rep, const char *path,
                              char *err)
{
    char key[64], abs[4200];
    snprintf(key, sizeof key, "val_%s", rt_ens_metric_name(rep->metric));
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, "metric", rt_ens_metric_name(rep->metric));
    rt_jw_kstr(&w, "task", rep->nclasses ? "classification" : "regression");
    rt_jw_kbool(&w, "bag", o->bag);
    rt_jw_kint(&w, "rounds", rep->rounds);
    rt_jw_kint(&w, "rounds_kept", rep->fit.rounds_kept);
    rt_jw_kint(&w, "validation_rows", rep->val_rows);
    rt_jw_kint(&w, "test_rows", rep->test_rows);
    rt_jw_knum(&w, key, rep->fit.ensemble);
    rt_jw_key(&w, "members");
    rt_jw_arr(&w);
    for (int i = 0; i < rep->nmembers; i++) {
        rt_jw_obj(&w);
        rt_jw_kstr(&w, "store", absolute(o->stores[rep->member[i]], abs, sizeof abs));
        rt_jw_knum(&w, "weight", rep->fit.weight[i]);
        rt_jw_kint(&w, "picks", rep->fit.counts[i]);
        rt_jw_knum(&w, key, rep->fit.member[i]);
        rt_jw_obj_end(&w);
    }
    rt_jw_arr_end(&w);
    rt_jw_key(&w, "skipped");
    rt_jw_arr(&w);
    for (int i = 0; i < rep->nskipped; i++)
        rt_jw_str(&w, absolute(o->stores[rep->skipped[i]], abs, sizeof abs));
    rt_jw_arr_end(&w);
    rt_jw_obj_end(&w);
    size_t len = 0;
    char *text = rt_jw_take(&w, &len);
    if (!text)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    rt_iov iov[2] = {{text, len}, {"\n", 1}};
    rt_status st = rt_write_atomic(path, iov, 2, err);
    free(text);
    return st;
}

/* oof: --bag's out-of-fold validation predictions, written as they are */
static rt_status write_outputs(const rt_ens_opts *o, const member *m, const pfile *oof,
                               const rt_ens_report *rep, char *err)
{
    char path[1300];
    rt_status st = rt_mkdirs(o->out, err);
    const double *w = rep->fit.weight;
    double *val = NULL, *test = NULL;
    if (st == RT_OK && ((!oof && !(val = blend(m, rep->nmembers, true, w))) ||
                        (!rep->no_test && !(test = blend(m, rep->nmembers, false, w)))))
        st = rt_err(err, RT_ERR_NOMEM, "out of memory for the ensemble's predictions");
    if (st == RT_OK) {
        snprintf(path, sizeof path, "%s/validation_predictions.csv", o->out);
        st = oof ? write_pfile(oof, oof->pred, true, path, err)
                 : write_pfile(&m[0].val, val, true, path, err);
    }
    if (st == RT_OK && !rep->no_test) {
        snprintf(path, sizeof path, "%s/submission.csv", o->out);
        st = write_pfile(&m[0].test, test, true, path, err);
    }
    if (st == RT_OK) {
        snprintf(path, sizeof path, "%s/ensemble.json", o->out);
        st = write_report(o, rep, path, err);
    }
    free(val), free(test);
    return st;
}

rt_status rt_ensemble_run(const rt_ens_opts *o, rt_ens_report *rep, char *err)
{
    memset(rep, 0, sizeof *rep);
    if (o->nstores < 1 || o->nstores > RT_ENS_MAX_MEMBERS)
        return rt_err(err, RT_ERR_INVALID, "%d stores: 1 to %d can be ensembled", o->nstores,
                      RT_ENS_MAX_MEMBERS);
    rep->rounds = o->rounds ? o->rounds : DEFAULT_ROUNDS;
    member *m = calloc((size_t)o->nstores, sizeof *m);
    const double **pred = calloc((size_t)o->nstores, sizeof *pred);
    rt_status st = m && pred ? RT_OK : rt_err(err, RT_ERR_NOMEM, "out of memory");
    if (st == RT_OK)
        st = load_members(o, m, rep, err);
    if (st == RT_OK)
        st = pick_metric(o, m, rep->nmembers, &rep->metric, err);
    pfile oof = {0};
    if (st == RT_OK && o->bag && (st = out_of_fold(m, rep->nmembers, &oof, err)) == RT_OK) {
        rep->nclasses = oof.K;
        rep->val_rows = oof.n;
        rep->test_rows = m[0].test.n;
        rep->rounds = rep->nmembers;
        fit_bag(m, rep->nmembers, &oof, rep->metric, &rep->fit);
    } else if (st == RT_OK) {
        for (int i = 0; i < rep->nmembers; i++)
            pred[i] = m[i].val.pred;
        const rt_ens_problem p = {.nmembers = rep->nmembers,
                                  .nrows = m[0].val.n,
                                  .ncols = width(&m[0].val),
                                  .pred = pred,
                                  .label = m[0].val.cls,
                                  .target = m[0].val.y,
                                  .metric = rep->metric};
        rep->nclasses = m[0].val.K;
        rep->val_rows = m[0].val.n;
        rep->test_rows = m[0].test.n;
        st = rt_ens_select(&p, rep->rounds, &rep->fit, err);
    }
    if (st == RT_OK)
        st = write_outputs(o, m, o->bag ? &oof : NULL, rep, err);
    pfile_free(&oof);
    for (int i = 0; m && i < o->nstores; i++)
        pfile_free(&m[i].val), pfile_free(&m[i].test);
    free(m), free(pred);
    return st;
}

rt_status rt_ensemble_combine(const char *const *files, const double *weights, int n, bool proba,
                              const char *out, char *err)
{
    if (n < 1 || n > RT_ENS_MAX_MEMBERS)
        return rt_err(err, RT_ERR_INVALID, "%d members: 1 to %d can be combined", n,
                      RT_ENS_MAX_MEMBERS);
    member *m = calloc((size_t)n, sizeof *m);
    rt_status st = m ? RT_OK : rt_err(err, RT_ERR_NOMEM, "out of memory");
    for (int i = 0; st == RT_OK && i < n; i++) {
        snprintf(m[i].test.path, sizeof m[i].test.path, "%s", files[i]);
        m[i].test.loose = true;
        if ((st = load_pfile(&m[i].test, -1, err)) == RT_OK && i > 0)
            st = same_as(&m[0].test, &m[i].test, err);
    }
    double *pred = st == RT_OK ? blend(m, n, false, weights) : NULL;
    if (st == RT_OK && !pred)
        st = rt_err(err, RT_ERR_NOMEM, "out of memory for the ensemble's predictions");
    if (st == RT_OK)
        st = write_pfile(&m[0].test, pred, proba, out, err);
    free(pred);
    for (int i = 0; m && i < n; i++)
        pfile_free(&m[i].test);
    free(m);
    return st;
}
