/* trainer_task.c — the job's task: the loss, head, class weights, metrics
 * and monitor from [train] and the dataset's manifest (checked where the
 * CLI and every worker build the model, rt_job_model_spec), and the
 * validation metrics: partial sums on each rank (a confusion matrix, sums
 * of errors and squares), reduced over the ranks, with every rank's scores
 * gathered for AUC, so that np ranks report what one process would on the
 * same predictions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer.h"

const char *const rt_metric_names[RT_METRIC_COUNT] = {
    RT_CLS_METRIC_LIST(RT_METRIC_STR_COMMA, ) RT_REG_METRIC_LIST(RT_METRIC_STR_COMMA, )};

bool rt_metric_higher_better(int metric)
{
    static const bool higher[RT_METRIC_COUNT] = {RT_CLS_METRIC_LIST(RT_METRIC_HIGHER, )
                                                     RT_REG_METRIC_LIST(RT_METRIC_HIGHER, )};
    return metric >= 0 && metric < RT_METRIC_COUNT && higher[metric];
}

static int metric_index(const char *name)
{
    return rt_model_name_index(rt_metric_names, RT_METRIC_COUNT, name);
}

/* The ranking metrics: a binary task's only. */
static bool ranking(int k)
{
    return k == RT_METRIC_AVERAGE_PRECISION || k == RT_METRIC_PRECISION_AT_K ||
           k == RT_METRIC_RECALL_AT_K || k == RT_METRIC_HITS_AT_K;
}

/* Whether a metric fits a task, a loss a task; (int, int), so that
 * name_list takes them as they are. */
static bool metric_fits(int k, int task)
{
    if (task == RT_TASK_REGRESSION)
        return k >= RT_CLS_METRIC_COUNT;
    return k < RT_CLS_METRIC_COUNT && (task == RT_TASK_BINARY || !ranking(k));
}

static bool loss_fits(int loss, int task)
{
    return task == RT_TASK_BINARY       ? loss == RT_LOSS_BCE || loss == RT_LOSS_CE
           : task == RT_TASK_MULTICLASS ? loss == RT_LOSS_CE
                                        : loss != RT_LOSS_BCE && loss != RT_LOSS_CE;
}

/* "a, b or c": the names that fit (fits(i, arg)), from the table. */
static const char *name_list(const char *const *names, int n, bool (*fits)(int, int), int arg,
                             char *buf, size_t len)
{
    int last = -1, k = 0;
    size_t m = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        last = fits(i, arg) ? i : last;
    for (int i = 0; i < n && m < len; i++)
        if (fits(i, arg))
            m += (size_t)snprintf(buf + m, len - m, "%s%s",
                                  !k++        ? ""
                                  : i == last ? " or "
                                              : ", ",
                                  names[i]);
    return buf;
}

/* "FILE:LINE: [train] KEY" when the origin is known, else "[train] KEY". */
static const char *at(const rt_cfg_origin *o, const char *sec, const char *key, char *buf,
                      size_t len)
{
    char w[480] = "";
    if (o)
        rt_cfg_where(&rt_job_schema, o, sec, key, w, sizeof w);
    snprintf(buf, len, "%s%s[%s] %s", w, o ? ": " : "", sec, key);
    return buf;
}

static void class_list(const rt_ds_column *lc, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int k = 0; k < lc->vocab_size && n + 1 < len; k++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", k ? ", " : "", lc->vocab[k]);
}

rt_status rt_job_task(const rt_job_cfg *cfg, const rt_cfg_origin *o, const rt_dataset *ds,
                      const rt_columns *cols, rt_task_info *t, char *err)
{
    memset(t, 0, sizeof *t);
    char w[600], names[2048];
    const rt_ds_column *lc = rt_dataset_column(ds, cols->label);
    t->task = ds->task;
    const bool cls = ds->task != RT_TASK_REGRESSION;
    t->nclasses = cls && lc ? lc->vocab_size : 0;
    t->classes = cls && lc ? lc->vocab : NULL;
    /* the loss */
    t->loss = cfg->loss > 0 ? (rt_loss)(cfg->loss - 1)
              : ds->task == RT_TASK_BINARY     ? RT_LOSS_BCE
              : ds->task == RT_TASK_MULTICLASS ? RT_LOSS_CE
                                               : RT_LOSS_MAE;
    const bool cls_loss = t->loss == RT_LOSS_BCE || t->loss == RT_LOSS_CE;
    if (!loss_fits(t->loss, ds->task)) {
        char fit[256];
        if (cls)
            class_list(lc, names, sizeof names);
        return rt_err(
            err, RT_ERR_INVALID, "%s: %s does not fit %s's %s label %s%s%s (use %s)",
            at(o, "train", "loss", w, sizeof w), rt_loss_names[t->loss], ds->dir,
            rt_task_names[ds->task], cols->label, cls ? " with classes " : "", cls ? names : "",
            name_list(rt_loss_names, RT_LOSS_COUNT, loss_fits, ds->task, fit, sizeof fit));
    }
    bool logged = false, stdz = false;
    rt_label_transform_parse(ds->label_transform, &logged, &stdz, NULL);
    t->head = cfg->head > 0                                  ? (rt_head)(cfg->head - 1)
              : !cls_loss && t->loss == RT_LOSS_MAE && !stdz ? RT_HEAD_SCALED_SIGMOID
                                                             : RT_HEAD_LINEAR;
    if (t->head == RT_HEAD_SCALED_SIGMOID && (cls_loss || !(ds->max_label > 0)))
        return rt_err(err, RT_ERR_INVALID, "%s = scaled_sigmoid needs a regression with "
                      "max_label (%s)", at(o, "model", "head", w, sizeof w),
                      cls_loss ? "a classification's logits need the linear head"
                               : "the manifest has none");
    t->n_out = t->loss == RT_LOSS_CE ? t->nclasses : 1;
    /* class weights */
    const rt_strlist *cw = &cfg->class_weights;
    bool none = cw->n == 0 || (cw->n == 1 && !strcmp(cw->items[0], "none"));
    if (!none && !cls)
        return rt_err(err, RT_ERR_INVALID, "%s: a regression has no classes to weigh",
                      at(o, "train", "class_weights", w, sizeof w));
    const bool sq = !none && cw->n == 1 && !strcmp(cw->items[0], "balanced_sqrt");
    if (!none && cw->n == 1 && (sq || !strcmp(cw->items[0], "balanced"))) {
        int64_t total = 0;
        for (int k = 0; k < t->nclasses; k++)
            total += lc->class_rows[k];
        for (int k = 0; k < t->nclasses; k++) { /* scikit-learn's; or its square root */
            double b = lc->class_rows[k] > 0 ? (double)total / ((double)t->nclasses *
                                                                (double)lc->class_rows[k])
                                             : 0.0;
            t->class_weight[k] = (float)(sq ? sqrt(b) : b);
        }
        t->class_weighted = true;
    } else if (!none) {
        class_list(lc, names, sizeof names);
        if ((int)cw->n != t->nclasses)
            return rt_err(err, RT_ERR_INVALID, "%s: %zu weights for %d classes (%s, in this "
                          "order), or none, balanced or balanced_sqrt", at(o, "train", "class_weights", w,
                          sizeof w), cw->n, t->nclasses, names);
        for (int k = 0; k < t->nclasses; k++) {
            char *end;
            double x = strtod(cw->items[k], &end);
            if (*end || end == cw->items[k] || !isfinite(x) || x < 0)
                return rt_err(err, RT_ERR_INVALID, "%s: '%s' (class %s) is not a number >= 0",
                              at(o, "train", "class_weights", w, sizeof w), cw->items[k],
                              lc->vocab[k]);
            t->class_weight[k] = (float)x;
        }
        t->class_weighted = true;
    }
    t->weighted = cols->weight[0] != 0;
    t->at_k = cfg->at_k;
    t->label_mean = stdz ? ds->label_mean : 0.0;
    t->label_std = stdz ? ds->label_std : 1.0;
    /* metrics */
    if (cfg->metrics.n == 0) {
        static const int reg[] = {RT_METRIC_RMSE, RT_METRIC_MAE, RT_METRIC_R2},
                         bin[] = {RT_METRIC_ACCURACY, RT_METRIC_AUC, RT_METRIC_LOG_LOSS},
                         mul[] = {RT_METRIC_ACCURACY, RT_METRIC_BALANCED_ACCURACY,
                                  RT_METRIC_MACRO_F1, RT_METRIC_LOG_LOSS};
        const int *d = !cls ? reg : ds->task == RT_TASK_BINARY ? bin : mul;
        t->nmetrics = !cls ? 3 : ds->task == RT_TASK_BINARY ? 3 : 4;
        memcpy(t->metric, d, (size_t)t->nmetrics * sizeof *d);
        if (!cls && logged)
            t->metric[t->nmetrics++] = RT_METRIC_EXP_RMSPE;
    }
    for (size_t i = 0; i < cfg->metrics.n && i < RT_METRIC_COUNT; i++) {
        int k = metric_index(cfg->metrics.items[i]);
        if (k >= 0 && ranking(k) && ds->task != RT_TASK_BINARY)
            return rt_err(err, RT_ERR_INVALID,
                          "%s: %s ranks rows by the positive class's probability: a binary "
                          "task's metric, not %s's",
                          at(o, "train", "metrics", w, sizeof w), cfg->metrics.items[i],
                          rt_task_names[ds->task]);
        if (k < 0 || !metric_fits(k, (int)ds->task))
            return rt_err(err, RT_ERR_INVALID, "%s: '%s' is not a %s metric (%s)",
                          at(o, "train", "metrics", w, sizeof w), cfg->metrics.items[i],
                          rt_task_names[ds->task],
                          name_list(rt_metric_names, RT_METRIC_COUNT, metric_fits, (int)ds->task,
                                    names, sizeof names));
        t->metric[t->nmetrics++] = k;
    }
    /* the monitor: loss, val_loss, or val_ + a metric of the job */
    const char *mon = cfg->monitor ? cfg->monitor : "";
    snprintf(t->monitor, sizeof t->monitor, "%s", mon);
    t->monitor_metric = -1;
    if (strcmp(mon, "loss") != 0 && strcmp(mon, "val_loss") != 0) {
        int k = !strncmp(mon, "val_", 4) ? metric_index(mon + 4) : -1;
        for (int i = 0; k >= 0 && i < t->nmetrics; i++)
            if (t->metric[i] == k)
                t->monitor_metric = k;
        if (t->monitor_metric < 0) {
            size_t n = (size_t)snprintf(names, sizeof names, "loss, val_loss");
            for (int i = 0; i < t->nmetrics && n < sizeof names; i++)
                n += (size_t)snprintf(names + n, sizeof names - n, ", val_%s",
                                      rt_metric_names[t->metric[i]]);
            return rt_err(err, RT_ERR_INVALID, "%s: '%s' is not computed by this job (it "
                          "computes %s; add the metric to [train] metrics)",
                          at(o, "train", "monitor", w, sizeof w), mon, names);
        }
    }
    t->monitor_max = cfg->monitor_mode == RT_MON_MAX ||
                     (cfg->monitor_mode == RT_MON_AUTO && t->monitor_metric >= 0 &&
                      rt_metric_higher_better(t->monitor_metric));
    return RT_OK;
}

/* ---- validation metrics -------------------------------------------------------- */

static double sigmoid(double z) { return 1.0 / (1.0 + exp(-z)); }

/* The probabilities of a row's K classes from its outputs (bce: one logit). */
static void row_proba(const rt_task_info *t, const float *z, double *p)
{
    if (t->loss == RT_LOSS_BCE) {
        p[1] = sigmoid(z[0]);
        p[0] = 1.0 - p[1];
        return;
    }
    double mx = z[0], sum = 0;
    for (int k = 1; k < t->n_out; k++)
        mx = z[k] > mx ? z[k] : mx;
    for (int k = 0; k < t->n_out; k++)
        sum += (p[k] = exp((double)z[k] - mx));
    for (int k = 0; k < t->n_out; k++)
        p[k] /= sum;
}

int rt_task_predict_class(const rt_task_info *t, const double *p, double threshold)
{
    if (t->nclasses == 2)
        return p[1] >= threshold ? 1 : 0;
    int best = 0;
    for (int k = 1; k < t->nclasses; k++)
        if (p[k] > p[best])
            best = k;
    return best;
}

void rt_task_proba(const rt_task_info *t, const float *z, double *p) { row_proba(t, z, p); }

rt_status rt_metrics_init(rt_metrics *m, const rt_task_info *t, char *err)
{
    memset(m, 0, sizeof *m);
    m->t = t;
    const int K = t->nclasses;
    m->nsums = K > 0 ? K * K + 4 : 8;
    m->sums = calloc((size_t)m->nsums, sizeof *m->sums);
    if (!m->sums)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < t->nmetrics; i++) /* the metrics of ranks: every row's scores */
        m->auc |= t->metric[i] == RT_METRIC_AUC || ranking(t->metric[i]);
    return RT_OK;
}

void rt_metrics_free(rt_metrics *m)
{
    free(m->sums);
    free(m->scores);
    memset(m, 0, sizeof *m);
}

void rt_metrics_reset(rt_metrics *m)
{
    memset(m->sums, 0, (size_t)m->nsums * sizeof *m->sums);
    m->nscores = 0;
}

rt_status rt_metrics_add(rt_metrics *m, const float *pred, const float *label, int64_t n,
                         char *err)
{
    const rt_task_info *t = m->t;
    const int K = t->nclasses;
    double *s = m->sums;
    if (K == 0) { /* [0] n, [1] sum|e|, [2] sum e^2, [3] sum y, [4] sum y^2, [5..6] rmspe */
        for (int64_t i = 0; i < n; i++) {
            const double p = pred[i] * t->label_std + t->label_mean,
                         y = label[i] * t->label_std + t->label_mean, e = p - y;
            s[0] += 1;
            s[1] += fabs(e);
            s[2] += e * e;
            s[3] += y;
            s[4] += y * y;
            if (label[i] > 0.001f) { /* the seed's rows (a sale), on the log label */
                const double r = 1.0 - exp((double)pred[i] - (double)label[i]);
                s[5] += r * r;
                s[6] += 1;
            }
        }
        return RT_OK;
    }
    /* [K*K] confusion (true row, predicted column), then n, sum -log p_y */
    if (m->auc && (m->nscores + n) * (K + 1) > m->cap) {
        int64_t cap = m->cap ? m->cap : 1024;
        while (cap < (m->nscores + n) * (K + 1))
            cap *= 2;
        float *sc = realloc(m->scores, (size_t)cap * sizeof *sc);
        if (!sc)
            return rt_err(err, RT_ERR_NOMEM, "out of memory for %lld validation scores",
                          (long long)(m->nscores + n));
        m->scores = sc;
        m->cap = cap;
    }
    double p[RT_MODEL_MAX_CLASSES];
    for (int64_t i = 0; i < n; i++) {
        row_proba(t, pred + i * t->n_out, p);
        const int y = (int)label[i], c = rt_task_predict_class(t, p, 0.5);
        s[y * K + c] += 1;
        s[K * K] += 1;
        s[K * K + 1] += -log(fmax(p[y], 1e-15)); /* scikit-learn's clip */
        if (m->auc) {
            float *row = m->scores + m->nscores++ * (K + 1);
            row[0] = (float)y;
            for (int k = 0; k < K; k++)
                row[k + 1] = (float)p[k];
        }
    }
    return RT_OK;
}

static int cmp_score(const void *a, const void *b)
{
    float x = ((const float *)a)[0], y = ((const float *)b)[0];
    return x < y ? -1 : x > y;
}

/* One-vs-rest AUC of class k over the gathered rows: the Mann-Whitney
 * statistic with tied scores counted half (scikit-learn's roc_auc_score). */
static double auc_of(const float *rows, int64_t n, int K, int k, float *tmp)
{
    for (int64_t i = 0; i < n; i++) {
        tmp[2 * i] = rows[i * (K + 1) + 1 + k];
        tmp[2 * i + 1] = (int)rows[i * (K + 1)] == k ? 1.0f : 0.0f;
    }
    qsort(tmp, (size_t)n, 2 * sizeof *tmp, cmp_score);
    double pos = 0, neg = 0, ranks = 0;
    for (int64_t i = 0; i < n;) {
        int64_t j = i;
        double npos = 0;
        while (j < n && tmp[2 * j] == tmp[2 * i])
            npos += tmp[2 * j++ + 1];
        ranks += npos * ((double)(i + 1) + (double)j) / 2.0; /* the tie's mean rank */
        pos += npos;
        neg += (double)(j - i) - npos;
        i = j;
    }
    return pos > 0 && neg > 0 ? (ranks - pos * (pos + 1) / 2.0) / (pos * neg) : NAN;
}

/* A binary task's rows ranked by the positive class's probability (desc):
 * average precision as scikit-learn's average_precision_score (a step per
 * distinct score), and the positives among the first k rows — a tie across
 * the k-th row counts as its expected share, so the value does not depend
 * on the rows' order (nor on how the ranks split them). */
static void ranked(const float *rows, int64_t n, double at_k, float *tmp, double *ap, double *hits,
                   double *k_out, double *positives)
{
    for (int64_t i = 0; i < n; i++) {
        tmp[2 * i] = -rows[i * 3 + 2]; /* ascending order of -p: descending p */
        tmp[2 * i + 1] = (int)rows[i * 3] == 1 ? 1.0f : 0.0f;
    }
    qsort(tmp, (size_t)n, 2 * sizeof *tmp, cmp_score);
    double pos = 0;
    for (int64_t i = 0; i < n; i++)
        pos += tmp[2 * i + 1];
    double k = at_k >= 1 ? floor(at_k) : ceil(at_k * (double)n);
    if (k > (double)n)
        k = (double)n;
    double tp = 0, seen = 0, a = 0, prev_recall = 0, h = 0;
    for (int64_t i = 0; i < n;) {
        int64_t j = i;
        double gpos = 0;
        while (j < n && tmp[2 * j] == tmp[2 * i])
            gpos += tmp[2 * j++ + 1];
        const double g = (double)(j - i);
        if (seen < k) /* the part of this tie inside the top k, at its mean share */
            h += gpos * (fmin(k - seen, g) / g);
        tp += gpos;
        seen += g;
        if (pos > 0) {
            const double recall = tp / pos;
            a += (recall - prev_recall) * (tp / seen);
            prev_recall = recall;
        }
        i = j;
    }
    *ap = pos > 0 ? a : NAN;
    *hits = h;
    *k_out = k;
    *positives = pos;
}

rt_status rt_metrics_reduce(rt_metrics *m, rt_comm *comm, int size, double *out, char *err)
{
    const rt_task_info *t = m->t;
    const int K = t->nclasses;
    rt_status st = RT_OK;
    if (comm && size > 1 &&
        (st = rt_allreduce(comm, m->sums, (size_t)m->nsums, RT_C_F64, RT_SUM)) != RT_OK)
        return rt_err(err, st, "%s", rt_comm_last_error(comm));
    float *all = m->scores, *tmp = NULL;
    int64_t total = m->nscores;
    if (m->auc && comm && size > 1) { /* every rank's rows, padded to the longest */
        int64_t most = m->nscores;
        if ((st = rt_allreduce(comm, &most, 1, RT_C_I64, RT_MAX)) != RT_OK)
            return rt_err(err, st, "%s", rt_comm_last_error(comm));
        const size_t row = (size_t)(K + 1), blk = (size_t)(most > 0 ? most : 1) * row;
        float *mine = malloc(blk * sizeof *mine);
        all = malloc(blk * (size_t)size * sizeof *all);
        if (!mine || !all) {
            free(mine);
            free(all);
            return rt_err(err, RT_ERR_NOMEM, "out of memory for the validation scores");
        }
        for (size_t i = 0; i < blk; i++)
            mine[i] = -1.0f; /* padding: label -1 */
        if (m->nscores > 0) /* a rank without validation rows has no scores */
            memcpy(mine, m->scores, (size_t)m->nscores * row * sizeof *mine);
        st = rt_allgather(comm, mine, all, blk * sizeof *mine);
        free(mine);
        if (st != RT_OK) {
            free(all);
            return rt_err(err, st, "%s", rt_comm_last_error(comm));
        }
        total = 0; /* compact: drop the padding */
        for (size_t r = 0; r < (size_t)size * (blk / row); r++)
            if (all[r * row] >= 0)
                memmove(all + (size_t)total++ * row, all + r * row, row * sizeof *all);
    }
    if (m->auc && !(tmp = malloc((size_t)(2 * total + 2) * sizeof *tmp)))
        st = rt_err(err, RT_ERR_NOMEM, "out of memory for the validation scores");
    const double *s = m->sums;
    for (int i = 0; st == RT_OK && i < t->nmetrics; i++) {
        double v = NAN;
        switch (t->metric[i]) {
        case RT_METRIC_ACCURACY: {
            double right = 0;
            for (int k = 0; k < K; k++)
                right += s[k * K + k];
            v = s[K * K] > 0 ? right / s[K * K] : NAN;
            break;
        }
        case RT_METRIC_BALANCED_ACCURACY:
        case RT_METRIC_MACRO_F1: {
            double sum = 0;
            int seen = 0;
            for (int k = 0; k < K; k++) {
                double tp = s[k * K + k], row = 0, col = 0;
                for (int j = 0; j < K; j++)
                    row += s[k * K + j], col += s[j * K + k];
                if (t->metric[i] == RT_METRIC_BALANCED_ACCURACY) {
                    if (row > 0) /* classes without rows are left out, as scikit-learn */
                        sum += tp / row, seen++;
                } else if (row + col > 0) {
                    sum += 2 * tp / (row + col), seen++;
                }
            }
            v = seen ? sum / seen : NAN;
            break;
        }
        case RT_METRIC_LOG_LOSS:
            v = s[K * K] > 0 ? s[K * K + 1] / s[K * K] : NAN;
            break;
        case RT_METRIC_AUC: {
            double sum = 0;
            int seen = 0;
            for (int k = K == 2 ? 1 : 0; k < K; k++) { /* binary: the positive class */
                double a = auc_of(all, total, K, k, tmp);
                if (!isnan(a))
                    sum += a, seen++;
            }
            v = seen ? sum / seen : NAN;
            break;
        }
        case RT_METRIC_AVERAGE_PRECISION:
        case RT_METRIC_PRECISION_AT_K:
        case RT_METRIC_RECALL_AT_K:
        case RT_METRIC_HITS_AT_K: {
            double ap, hits, k, pos;
            ranked(all, total, t->at_k, tmp, &ap, &hits, &k, &pos);
            v = t->metric[i] == RT_METRIC_AVERAGE_PRECISION ? ap
                : t->metric[i] == RT_METRIC_HITS_AT_K       ? hits
                : t->metric[i] == RT_METRIC_PRECISION_AT_K  ? (k > 0 ? hits / k : NAN)
                                                            : (pos > 0 ? hits / pos : NAN);
            break;
        }
        case RT_METRIC_RMSE:
            v = s[0] > 0 ? sqrt(s[2] / s[0]) : NAN;
            break;
        case RT_METRIC_MAE:
            v = s[0] > 0 ? s[1] / s[0] : NAN;
            break;
        case RT_METRIC_R2: {
            double sst = s[4] - s[3] * s[3] / s[0];
            v = s[0] > 1 && sst > 0 ? 1.0 - s[2] / sst : NAN;
            break;
        }
        case RT_METRIC_EXP_RMSPE:
            v = s[6] > 0 ? sqrt(s[5] / s[6]) : NAN;
            break;
        }
        out[i] = v;
    }
    if (all != m->scores)
        free(all);
    free(tmp);
    return st;
}

rt_status rt_eval_rows(rt_dp *d, const rt_rows *r, rt_metrics *metrics, char *err)
{
    const rt_model_spec *s = rt_model_get_spec(rt_dp_model(d));
    if (r->n == 0)
        return RT_OK;
    float *lw = r->label, *pred = NULL;
    if (s->weighted && !(lw = malloc((size_t)r->n * 2 * sizeof *lw)))
        return rt_err(err, RT_ERR_NOMEM, "out of memory for %lld rows' labels", (long long)r->n);
    if (s->weighted) { /* the labels, then the weights */
        memcpy(lw, r->label, (size_t)r->n * sizeof *lw);
        memcpy(lw + r->n, r->weight, (size_t)r->n * sizeof *lw);
    }
    rt_status st = RT_OK;
    if (metrics && !(pred = malloc((size_t)(r->n * s->n_out) * sizeof *pred)))
        st = rt_err(err, RT_ERR_NOMEM, "out of memory for %lld rows' predictions",
                    (long long)r->n);
    if (st == RT_OK)
        st = rt_dp_forward_eval(d, r->cat, r->cont, lw, r->n, pred, err);
    if (st == RT_OK && metrics)
        st = rt_metrics_add(metrics, pred, r->label, r->n, err);
    if (lw != r->label)
        free(lw);
    free(pred);
    return st;
}
