/* ensemble_select.c — the decision half of rt_ensemble.h: the metrics an
 * ensemble is chosen by and Caruana's greedy selection, pure functions of
 * the predictions (ensemble.c reads and writes the files around them). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_ensemble.h"

static const char *const NAMES[] = {
    [RT_ENS_AUTO] = "auto",         [RT_ENS_LOG_LOSS] = "log_loss", [RT_ENS_ACCURACY] = "accuracy",
    [RT_ENS_AUC] = "auc",           [RT_ENS_RMSE] = "rmse",         [RT_ENS_MAE] = "mae",
    [RT_ENS_RMSE_LOG] = "rmse_log",
};

bool rt_ens_metric_parse(const char *name, rt_ens_metric *m)
{
    for (size_t i = 0; i < sizeof NAMES / sizeof *NAMES; i++)
        if (!strcmp(name, NAMES[i])) {
            *m = (rt_ens_metric)i;
            return true;
        }
    return false;
}

const char *rt_ens_metric_list(void)
{
    static char list[128];
    if (!list[0])
        for (size_t i = RT_ENS_AUTO + 1, n = 0; i < sizeof NAMES / sizeof *NAMES; i++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i > 1 ? ", " : "", NAMES[i]);
    return list;
}

const char *rt_ens_metric_name(rt_ens_metric m)
{
    return (size_t)m < sizeof NAMES / sizeof *NAMES ? NAMES[m] : "?";
}

bool rt_ens_metric_higher_better(rt_ens_metric m)
{
    return m == RT_ENS_ACCURACY || m == RT_ENS_AUC;
}

typedef struct {
    double s;
    int32_t pos;
} scored;

static int by_score(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    return (x->s > y->s) - (x->s < y->s);
}

/* ROC AUC of column 1 against label 1, ties counted half (the rank-sum
 * form: the mean rank of the positives among all rows); 0.5 without
 * both classes, NaN when out of memory. */
static double auc(const rt_ens_problem *p, const double *pred)
{
    scored *r = malloc((size_t)(p->nrows ? p->nrows : 1) * sizeof *r);
    if (!r)
        return NAN;
    for (int64_t i = 0; i < p->nrows; i++)
        r[i] = (scored){pred[i * p->ncols + 1], p->label[i] == 1};
    qsort(r, (size_t)p->nrows, sizeof *r, by_score);
    double rank_sum = 0, npos = 0;
    for (int64_t i = 0; i < p->nrows;) {
        int64_t j = i;
        while (j < p->nrows && r[j].s == r[i].s)
            j++;
        const double mid = 0.5 * (double)(i + 1 + j); /* the tied block's mean rank (1-based) */
        for (int64_t k = i; k < j; k++)
            if (r[k].pos) {
                rank_sum += mid;
                npos++;
            }
        i = j;
    }
    free(r);
    const double nneg = (double)p->nrows - npos;
    if (npos == 0 || nneg == 0)
        return 0.5;
    return (rank_sum - npos * (npos + 1) / 2) / (npos * nneg);
}

double rt_ens_score(const rt_ens_problem *p, const double *pred)
{
    const int64_t n = p->nrows;
    const int K = p->ncols;
    double sum = 0;
    if (n == 0)
        return NAN;
    switch (p->metric) {
    case RT_ENS_LOG_LOSS: /* probabilities clipped at 1e-15, as scikit-learn's log_loss */
        for (int64_t i = 0; i < n; i++)
            sum -= log(fmax(pred[i * K + p->label[i]], 1e-15));
        return sum / (double)n;
    case RT_ENS_ACCURACY:
        for (int64_t i = 0; i < n; i++) {
            int best = 0; /* the first of equal probabilities */
            for (int k = 1; k < K; k++)
                if (pred[i * K + k] > pred[i * K + best])
                    best = k;
            sum += best == p->label[i];
        }
        return sum / (double)n;
    case RT_ENS_AUC:
        return auc(p, pred);
    case RT_ENS_RMSE:
        for (int64_t i = 0; i < n; i++)
            sum += (pred[i] - p->target[i]) * (pred[i] - p->target[i]);
        return sqrt(sum / (double)n);
    case RT_ENS_MAE:
        for (int64_t i = 0; i < n; i++)
            sum += fabs(pred[i] - p->target[i]);
        return sum / (double)n;
    case RT_ENS_RMSE_LOG: /* the values were checked positive when read */
        for (int64_t i = 0; i < n; i++) {
            const double d = log(pred[i]) - log(p->target[i]);
            sum += d * d;
        }
        return sqrt(sum / (double)n);
    case RT_ENS_AUTO:
        break;
    }
    return NAN;
}

/* The figure as a loss (lower better; NaN the worst of all). */
static double as_loss(const rt_ens_problem *p, double v)
{
    if (isnan(v))
        return INFINITY;
    return rt_ens_metric_higher_better(p->metric) ? -v : v;
}

rt_status rt_ens_select(const rt_ens_problem *p, int rounds, rt_ens_fit *fit, char *err)
{
    memset(fit, 0, sizeof *fit);
    if (p->nmembers < 1 || p->nmembers > RT_ENS_MAX_MEMBERS)
        return rt_err(err, RT_ERR_INVALID, "%d members: 1 to %d can be ensembled", p->nmembers,
                      RT_ENS_MAX_MEMBERS);
    if (rounds < 1 || rounds > RT_ENS_MAX_ROUNDS)
        return rt_err(err, RT_ERR_INVALID, "%d rounds: 1 to %d", rounds, RT_ENS_MAX_ROUNDS);
    if (p->nrows < 1)
        return rt_err(err, RT_ERR_INVALID, "no validation rows to choose the weights by");
    const size_t cells = (size_t)p->nrows * (size_t)p->ncols;
    double *sum = calloc(cells, sizeof *sum), *cand = malloc(cells * sizeof *cand);
    int *picks = malloc((size_t)rounds * sizeof *picks);
    if (!sum || !cand || !picks) {
        free(sum), free(cand), free(picks);
        return rt_err(err, RT_ERR_NOMEM, "out of memory for %lld x %d predictions",
                      (long long)p->nrows, p->ncols);
    }
    for (int m = 0; m < p->nmembers; m++)
        fit->member[m] = rt_ens_score(p, p->pred[m]);
    double best_loss = INFINITY;
    for (int r = 0; r < rounds; r++) {
        int pick = 0;
        double pick_loss = INFINITY;
        for (int m = 0; m < p->nmembers; m++) {
            const double *x = p->pred[m];
            for (size_t c = 0; c < cells; c++)
                cand[c] = (sum[c] + x[c]) / (double)(r + 1);
            const double loss = as_loss(p, rt_ens_score(p, cand));
            if (loss < pick_loss) { /* strictly: the first member at a tie */
                pick_loss = loss;
                pick = m;
            }
        }
        for (size_t c = 0; c < cells; c++)
            sum[c] += p->pred[pick][c];
        picks[r] = pick;
        /* the earliest best prefix: a later one better past rounding (the
         * same members averaged again differ in the last bits) */
        if (r == 0 || pick_loss < best_loss - 1e-12 * fabs(best_loss)) {
            best_loss = pick_loss;
            fit->rounds_kept = r + 1;
        }
    }
    for (int r = 0; r < fit->rounds_kept; r++)
        fit->counts[picks[r]]++;
    for (int m = 0; m < p->nmembers; m++)
        fit->weight[m] = (double)fit->counts[m] / (double)fit->rounds_kept;
    fit->best = picks[0];
    fit->ensemble = rt_ens_metric_higher_better(p->metric) ? -best_loss : best_loss;
    free(sum), free(cand), free(picks);
    return RT_OK;
}
