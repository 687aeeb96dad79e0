/* test_task.c — the pieces of a task on their own, on random inputs
 * (RT_TEST_SEED reproduces):
 *   - every loss (rt_k_loss, CPU) against a plain double reference of its
 *     definition, and its gradient against central finite differences of
 *     that reference, with sample weights, class weights, smoothing and the
 *     step's norm;
 *   - AdamW and SGD (momentum, Nesterov, weight decay on the decay segments
 *     only, gradient clipping) against their formulas in double;
 *   - the validation metrics of 4 ranks, each with a part of the rows,
 *     against one process with all of them (1e-6), AUC against its
 *     definition (the pairs ranked right, ties half);
 *   - the monitor: Keras' EarlyStopping and ReduceLROnPlateau on scripted
 *     values, and ranks that see different values stopping together.
 * PyTorch's losses, optimizers and schedulers on the same numbers:
 * task_dump.c and task_parity.py. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rank_harness.h"
#include "rt_kernels.h"
#include "test_util.h"
#include "rt_predict.h"
#include "trainer.h"

static rt_kctx *ctx;

static int setup(void **state)
{
    (void)state;
    char err[RT_ERR_LEN];
    return rt_kctx_create(RT_DEVICE_CPU, 1, &ctx, err) == RT_OK ? 0 : -1;
}
static int teardown(void **state)
{
    (void)state;
    rt_kctx_destroy(ctx);
    return 0;
}

/* ---- losses ------------------------------------------------------------------ */

typedef struct loss_case {
    rt_loss kind;
    int K;           /* outputs per row */
    float delta, smoothing;
    bool weights, class_weights;
} loss_case;

static const loss_case LOSSES[] = {
    {RT_LOSS_MAE, 1, 0, 0, false, false},    {RT_LOSS_MAE, 1, 0, 0, true, false},
    {RT_LOSS_MSE, 1, 0, 0, true, false},     {RT_LOSS_HUBER, 1, 0.7f, 0, false, false},
    {RT_LOSS_HUBER, 1, 2.0f, 0, true, false}, {RT_LOSS_POISSON, 1, 0, 0, true, false},
    {RT_LOSS_BCE, 1, 0, 0, false, false},    {RT_LOSS_BCE, 1, 0, 0.1f, true, true},
    {RT_LOSS_CE, 2, 0, 0, false, false},     {RT_LOSS_CE, 5, 0, 0, false, false},
    {RT_LOSS_CE, 5, 0, 0.1f, false, true},   {RT_LOSS_CE, 7, 0, 0.2f, true, true},
};

/* The weighted loss of one row, in double, from the definitions (PyTorch's). */
static double ref_row(const loss_case *lc, const double *z, double y, double w, const float *cw)
{
    const int yc = (int)y;
    const double sm = lc->smoothing; /* in double, as the kernel */
    const double c = w * (cw && lc->kind >= RT_LOSS_BCE ? cw[yc] : 1.0), x = z[0], r = x - y;
    switch (lc->kind) {
    case RT_LOSS_MAE:
        return c * fabs(r);
    case RT_LOSS_MSE:
        return c * r * r;
    case RT_LOSS_HUBER:
        return c * (fabs(r) <= lc->delta ? 0.5 * r * r : lc->delta * (fabs(r) - 0.5 * lc->delta));
    case RT_LOSS_POISSON:
        return c * (exp(x) - y * x);
    case RT_LOSS_BCE: {
        const double t = y * (1 - sm) + sm / 2, p = 1 / (1 + exp(-x));
        return c * -(t * log(p) + (1 - t) * log(1 - p));
    }
    default: { /* cross entropy: (1-s) c (-log p_y) + s/K w sum_k cw_k (-log p_k) */
        double sum = 0, smooth = 0;
        for (int k = 0; k < lc->K; k++)
            sum += exp(z[k]);
        for (int k = 0; k < lc->K; k++)
            smooth += (cw ? cw[k] : 1.0) * -(z[k] - log(sum));
        return (1 - sm) * c * -(z[yc] - log(sum)) + sm / lc->K * w * smooth;
    }
    }
}

static double ref_sum(const loss_case *lc, const float *z, const float *y, const float *w,
                      const float *cw, int64_t n, int64_t at, double shift)
{
    double s = 0, zr[16];
    for (int64_t i = 0; i < n; i++) {
        for (int k = 0; k < lc->K; k++)
            zr[k] = z[i * lc->K + k] + (i * lc->K + k == at ? shift : 0.0);
        s += ref_row(lc, zr, y[i], w ? w[i] : 1.0, cw);
    }
    return s;
}

static void one_loss(tu_rng *g, const loss_case *lc)
{
    const int64_t n = tu_int(g, 1, 300), K = lc->K;
    float *z = calloc((size_t)(n * K), 4), *dz = calloc((size_t)(n * K), 4);
    float *y = calloc((size_t)n, 4), *w = calloc((size_t)n, 4), cw[16];
    const int classes = lc->kind == RT_LOSS_BCE ? 2 : lc->kind == RT_LOSS_CE ? (int)K : 0;
    tu_fill(g, z, (size_t)(n * K), lc->kind == RT_LOSS_POISSON ? -2 : -4, 2);
    for (int64_t i = 0; i < n; i++) {
        if (classes)
            y[i] = (float)tu_int(g, 0, classes - 1);
        else if (lc->kind == RT_LOSS_POISSON)
            y[i] = (float)tu_int(g, 0, 6);
        else /* away from the kinks by more than the finite difference's step: |r|'s
              * at 0, and Huber's second derivative's at |r| = delta (RT_TEST_SEED=20
              * drew |r| within 1e-4 of it: the difference straddled both pieces) */
            do
                y[i] = z[i] + (float)((tu_uniform(g) < 0.5 ? -1 : 1) * tu_range(g, 0.05, 3));
            while (lc->kind == RT_LOSS_HUBER && fabs(fabs((double)y[i] - z[i]) - lc->delta) < 0.01);
        w[i] = lc->weights ? (float)tu_range(g, 0, 3) : 1.0f;
    }
    for (int k = 0; k < 16; k++)
        cw[k] = (float)tu_range(g, 0.2, 4);
    rt_loss_desc d = {.kind = lc->kind,
                      .K = K,
                      .huber_delta = lc->delta,
                      .smoothing = lc->smoothing,
                      .class_w = lc->class_weights ? cw : NULL};
    const float *wp = lc->weights ? w : NULL, *cwp = lc->class_weights ? cw : NULL;
    double acc[2] = {1.5, 2.0}; /* added to */
    rt_k_loss(ctx, &d, rt_vf32(z, n, K, K, RT_DEVICE_CPU), y, wp, NULL,
              rt_vf32(dz, n, K, K, RT_DEVICE_CPU), acc);
    double wsum = 0;
    for (int64_t i = 0; i < n; i++)
        wsum += (wp ? w[i] : 1.0) * (cwp && classes ? cw[(int)y[i]] : 1.0);
    const double sum = ref_sum(lc, z, y, wp, cwp, n, -1, 0);
    /* the host's sum of the row weights (the trainer's share of the step's) */
    assert_true(fabs(rt_loss_weight(&d, y, wp, n) - wsum) <= 1e-9 * (1 + wsum));
    char what[64];
    snprintf(what, sizeof what, "loss %d K=%d s=%g w=%d cw=%d", lc->kind, (int)K,
             (double)lc->smoothing, lc->weights, lc->class_weights);
    if (fabs(acc[0] - 1.5 - sum) > 1e-9 * (1 + fabs(sum)) || fabs(acc[1] - 2.0 - wsum) > 1e-9 * (1 + wsum))
        fail_msg("%s: sum %.12g weight %.12g, want %.12g %.12g", what, acc[0] - 1.5,
                 acc[1] - 2.0, sum, wsum);
    /* dz = d(sum)/dz / (the batch's weight): central differences */
    double worst = 0, gscale = 0;
    for (int64_t i = 0; i < n * K; i++)
        gscale = fmax(gscale, fabs(dz[i]));
    for (int64_t i = 0; i < n * K; i++) {
        const double h = 1e-4;
        const double fd = (ref_sum(lc, z, y, wp, cwp, n, i, h) - ref_sum(lc, z, y, wp, cwp, n, i, -h)) /
                          (2 * h) / wsum;
        const double e = fabs(dz[i] - fd);
        worst = fmax(worst, e);
        if (e > 1e-6 * fmax(gscale, 1e-3) + 1e-5 * fabs(fd))
            fail_msg("%s: dz[%lld] = %.9g, finite difference %.9g", what, (long long)i,
                     (double)dz[i], fd);
    }
    /* the step's norm replaces the batch's own weight */
    float *dz2 = calloc((size_t)(n * K), 4), norm = 0.125f;
    double acc2[2] = {0, 0};
    rt_k_loss(ctx, &d, rt_vf32(z, n, K, K, RT_DEVICE_CPU), y, wp, &norm,
              rt_vf32(dz2, n, K, K, RT_DEVICE_CPU), acc2);
    for (int64_t i = 0; i < n * K; i++)
        if (fabs(dz2[i] - dz[i] * wsum * 0.125) > 1e-6 * fmax(fabs(dz2[i]), 1e-6))
            fail_msg("%s: with norm 1/8, dz[%lld] = %g, want %g", what, (long long)i,
                     (double)dz2[i], dz[i] * wsum * 0.125);
    free(z); free(dz); free(dz2); free(y); free(w);
}

static void test_losses(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(31);
    for (size_t c = 0; c < sizeof LOSSES / sizeof LOSSES[0]; c++)
        for (int rep = 0; rep < 3; rep++)
            one_loss(&g, &LOSSES[c]);
}

/* ---- optimizers ---------------------------------------------------------------- */

typedef struct optim_case {
    rt_optim kind;
    float momentum, wd, clip;
    int nesterov;
} optim_case;

static void one_optim(tu_rng *g, const optim_case *oc)
{
    rt_adam_seg segs[3];
    int64_t n = 0;
    for (int s = 0; s < 3; s++) {
        segs[s] = (rt_adam_seg){n, tu_int(g, 1, 400), s == 2 ? 1e-3f : 0.0f, s != 1};
        n += segs[s].len;
    }
    rt_adam_hp hp = {.lr = (float)tu_range(g, 1e-3, 5e-2), .beta1 = 0.9f, .beta2 = 0.999f,
                     .eps = 1e-8f, .grad_scale = 0.5f, .kind = oc->kind,
                     .weight_decay = oc->wd, .momentum = oc->momentum,
                     .nesterov = oc->nesterov, .clip_norm = oc->clip};
    float *p = calloc((size_t)n, 4), *gr = calloc((size_t)n, 4), *m = calloc((size_t)n, 4),
          *v = calloc((size_t)n, 4);
    double *pd = calloc((size_t)n, 8), *md = calloc((size_t)n, 8), *vd = calloc((size_t)n, 8);
    tu_fill(g, p, (size_t)n, -1, 1);
    for (int64_t i = 0; i < n; i++)
        pd[i] = p[i];
    int64_t step = 0;
    for (int t = 1; t <= 6; t++) {
        tu_fill(g, gr, (size_t)n, -2, 2);
        double gsq = 0;
        rt_k_sqnorm(ctx, gr, n, &gsq);
        double want = 0;
        for (int64_t i = 0; i < n; i++)
            want += (double)gr[i] * gr[i];
        assert_true(fabs(gsq - want) <= 1e-12 * want);
        rt_k_optim(ctx, p, gr, m, v, n, segs, 3, &hp, &step, oc->clip > 0 ? &gsq : NULL);
        assert_int_equal(step, t);
        /* clip_grad_norm_ on the averaged gradient: coef = max / (norm + 1e-6), at most 1 */
        double clip = 1;
        if (oc->clip > 0)
            clip = fmin(1.0, oc->clip / (sqrt(want) * hp.grad_scale + 1e-6));
        for (int s = 0; s < 3; s++)
            for (int64_t i = segs[s].off; i < segs[s].off + segs[s].len; i++) {
                const double wd = segs[s].decay ? oc->wd : 0.0;
                double gi = gr[i] * (double)hp.grad_scale * clip + 2.0 * segs[s].l2 * pd[i];
                if (oc->kind == RT_OPTIM_ADAMW) {
                    pd[i] *= 1 - (double)hp.lr * wd;
                    md[i] = 0.9 * md[i] + 0.1 * gi;
                    vd[i] = 0.999 * vd[i] + 0.001 * gi * gi;
                    pd[i] -= hp.lr / (1 - pow(0.9, t)) * md[i] /
                             (sqrt(vd[i]) / sqrt(1 - pow(0.999, t)) + 1e-8);
                } else {
                    gi += wd * pd[i];
                    md[i] = oc->momentum * md[i] + gi;
                    pd[i] -= hp.lr * (oc->nesterov ? gi + oc->momentum * md[i] : md[i]);
                }
            }
        /* float against double over 6 steps: a few ulps of the parameters */
        for (int64_t i = 0; i < n; i++)
            if (fabs(p[i] - pd[i]) > 2e-6 * fmax(1.0, fabs(pd[i])))
                fail_msg("optimizer %d (momentum %g nesterov %d wd %g clip %g) step %d: "
                         "p[%lld] = %.9g, want %.9g", oc->kind, (double)oc->momentum,
                         oc->nesterov, (double)oc->wd, (double)oc->clip, t, (long long)i,
                         (double)p[i], pd[i]);
    }
    free(p); free(gr); free(m); free(v); free(pd); free(md); free(vd);
}

static void test_optimizers(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(32);
    const optim_case cases[] = {
        {RT_OPTIM_ADAMW, 0, 0.01f, 0, 0},   {RT_OPTIM_ADAMW, 0, 0.1f, 1.0f, 0},
        {RT_OPTIM_SGD, 0, 0, 0, 0},         {RT_OPTIM_SGD, 0.9f, 1e-3f, 0, 0},
        {RT_OPTIM_SGD, 0.9f, 1e-2f, 0, 1},  {RT_OPTIM_SGD, 0.5f, 0, 0.5f, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        one_optim(&g, &cases[c]);
}

/* ---- metrics over ranks ------------------------------------------------------------ */

enum { MROWS = 997, MRANKS = 4 };

typedef struct metric_world {
    rt_task_info task;
    float *pred, *label; /* every row */
    double one[RT_METRIC_COUNT], ranks[MRANKS][RT_METRIC_COUNT];
} metric_world;

static void metric_rank(rt_comm *c, int rank, void *arg, rh_result *res)
{
    metric_world *w = arg;
    char err[RT_ERR_LEN];
    rt_metrics m;
    RH_CHECK(res, rt_metrics_init(&m, &w->task, err) == RT_OK, "%s", err);
    /* uneven shares, added in two pieces; rank 3 has none */
    const int64_t lo = rank == 0 ? 0 : rank == 1 ? 100 : rank == 2 ? 130 : MROWS;
    const int64_t hi = rank == 0 ? 100 : rank == 1 ? 130 : MROWS;
    const int64_t mid = lo + (hi - lo) / 3, K = w->task.n_out;
    rt_status st = rt_metrics_add(&m, w->pred + lo * K, w->label + lo, mid - lo, err);
    if (st == RT_OK)
        st = rt_metrics_add(&m, w->pred + mid * K, w->label + mid, hi - mid, err);
    if (st == RT_OK)
        st = rt_metrics_reduce(&m, c, MRANKS, w->ranks[rank], err);
    rt_metrics_free(&m);
    RH_CHECK(res, st == RT_OK, "rank %d: %s", rank, err);
}

/* AUC of class k by its definition: P(score of a k row > score of another), ties half. */
static double pair_auc(const metric_world *w, int k)
{
    const int K = w->task.n_out;
    double good = 0, pairs = 0, p[RT_MODEL_MAX_CLASSES], q[RT_MODEL_MAX_CLASSES];
    for (int64_t i = 0; i < MROWS; i++) {
        if ((int)w->label[i] != k)
            continue;
        rt_task_proba(&w->task, w->pred + i * K, p);
        for (int64_t j = 0; j < MROWS; j++) {
            if ((int)w->label[j] == k)
                continue;
            rt_task_proba(&w->task, w->pred + j * K, q);
            good += (float)p[k] > (float)q[k] ? 1 : (float)p[k] == (float)q[k] ? 0.5 : 0;
            pairs++;
        }
    }
    return good / pairs;
}

/* The ranking metrics by their definitions: average precision as the mean,
 * over the positive rows, of the precision among the rows scored at least
 * as high; the top k (200 = ceil(0.2 x 997) rows) with a tie at the k-th
 * score counted at its share of the places left. */
static void check_ranking(const metric_world *w)
{
    double p[2], q[2], pos = 0, ap = 0;
    float *sc = malloc(MROWS * sizeof *sc);
    for (int64_t i = 0; i < MROWS; i++) {
        rt_task_proba(&w->task, w->pred + i, p);
        sc[i] = (float)p[1];
        pos += (int)w->label[i] == 1;
    }
    for (int64_t i = 0; i < MROWS; i++) {
        if ((int)w->label[i] != 1)
            continue;
        double n = 0, tp = 0;
        for (int64_t j = 0; j < MROWS; j++)
            if (sc[j] >= sc[i])
                n++, tp += (int)w->label[j] == 1;
        ap += tp / n;
    }
    ap /= pos;
    float *sorted = malloc(MROWS * sizeof *sorted);
    memcpy(sorted, sc, MROWS * sizeof *sc);
    for (int64_t i = 1; i < MROWS; i++) /* descending, by insertion */
        for (int64_t j = i; j > 0 && sorted[j] > sorted[j - 1]; j--) {
            float x = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = x;
        }
    const int64_t kk = 200;
    const float t = sorted[kk - 1];
    double above = 0, above_pos = 0, tie = 0, tie_pos = 0;
    for (int64_t i = 0; i < MROWS; i++) {
        const bool y = (int)w->label[i] == 1;
        if (sc[i] > t)
            above++, above_pos += y;
        else if (sc[i] == t)
            tie++, tie_pos += y;
    }
    const double hits = above_pos + tie_pos * ((double)kk - above) / tie;
    (void)q;
    if (fabs(w->one[5] - ap) > 1e-9 || fabs(w->one[8] - hits) > 1e-9 ||
        fabs(w->one[6] - hits / (double)kk) > 1e-9 || fabs(w->one[7] - hits / pos) > 1e-9)
        fail_msg("ranking: ap %.12g (want %.12g), hits %.12g (want %.12g), precision %.12g, "
                 "recall %.12g",
                 w->one[5], ap, w->one[8], hits, w->one[6], w->one[7]);
    free(sorted);
    free(sc);
}

static void metrics_case(tu_rng *g, rt_task t)
{
    metric_world w = {0};
    rt_task_info *k = &w.task;
    k->task = t;
    k->nclasses = t == RT_TASK_BINARY ? 2 : t == RT_TASK_MULTICLASS ? 6 : 0;
    k->loss = t == RT_TASK_BINARY ? RT_LOSS_BCE : t == RT_TASK_MULTICLASS ? RT_LOSS_CE : RT_LOSS_MSE;
    k->n_out = t == RT_TASK_MULTICLASS ? 6 : 1;
    k->label_std = t == RT_TASK_REGRESSION ? 2.5 : 1;
    k->label_mean = t == RT_TASK_REGRESSION ? 8.0 : 0;
    const int cls[] = {RT_METRIC_ACCURACY,
                       RT_METRIC_BALANCED_ACCURACY,
                       RT_METRIC_MACRO_F1,
                       RT_METRIC_LOG_LOSS,
                       RT_METRIC_AUC,
                       RT_METRIC_AVERAGE_PRECISION,
                       RT_METRIC_PRECISION_AT_K,
                       RT_METRIC_RECALL_AT_K,
                       RT_METRIC_HITS_AT_K};
    const int reg[] = {RT_METRIC_RMSE, RT_METRIC_MAE, RT_METRIC_R2, RT_METRIC_EXP_RMSPE};
    /* the ranking metrics: a binary task's; k = 0.2 of the rows (200 of 997) */
    k->nmetrics = t == RT_TASK_REGRESSION ? 4 : t == RT_TASK_BINARY ? 9 : 5;
    k->at_k = 0.2;
    for (int i = 0; i < k->nmetrics; i++)
        k->metric[i] = t == RT_TASK_REGRESSION ? reg[i] : cls[i];
    w.pred = calloc((size_t)(MROWS * k->n_out), 4);
    w.label = calloc(MROWS, 4);
    for (int64_t i = 0; i < MROWS; i++) {
        w.label[i] = k->nclasses ? (float)tu_int(g, 0, k->nclasses - 1) : (float)tu_range(g, 0, 3);
        for (int j = 0; j < k->n_out; j++) /* informative, with ties: scores on a grid */
            w.pred[i * k->n_out + j] = k->nclasses
                ? (float)(round(tu_range(g, -2, 2) * 4) / 4 + (j == (int)w.label[i] ||
                                                              (k->nclasses == 2 && w.label[i] > 0)))
                : w.label[i] + (float)tu_range(g, -0.5, 0.5);
    }
    char err[RT_ERR_LEN];
    rt_metrics m;
    assert_int_equal(rt_metrics_init(&m, k, err), RT_OK);
    assert_int_equal(rt_metrics_add(&m, w.pred, w.label, MROWS, err), RT_OK);
    assert_int_equal(rt_metrics_reduce(&m, NULL, 1, w.one, err), RT_OK);
    rt_metrics_free(&m);
    rt_comm_opts o;
    rt_comm_opts_defaults(&o);
    o.timeout_us = 20000000;
    rh_result res;
    if (!rh_run(MRANKS, RT_TRANSPORT_LOOPBACK, &o, metric_rank, &w, &res))
        fail_msg("%s", res.msg);
    for (int r = 0; r < MRANKS; r++)
        for (int i = 0; i < k->nmetrics; i++) {
            const double a = w.ranks[r][i], b = w.one[i];
            if (!(isfinite(b)) || fabs(a - b) > 1e-6 * fmax(1, fabs(b)))
                fail_msg("task %d: %s on rank %d of %d = %.12g, one process %.12g", t,
                         rt_metric_names[k->metric[i]], r, MRANKS, a, b);
        }
    if (k->nclasses) { /* AUC: the binary's positive class, or the mean over classes */
        double want = 0;
        for (int c = k->nclasses == 2 ? 1 : 0; c < k->nclasses; c++)
            want += pair_auc(&w, c);
        want /= k->nclasses == 2 ? 1 : k->nclasses;
        if (fabs(w.one[4] - want) > 1e-9)
            fail_msg("task %d: auc %.12g, by its definition %.12g", t, w.one[4], want);
        double right = 0, ll = 0, p[RT_MODEL_MAX_CLASSES];
        for (int64_t i = 0; i < MROWS; i++) { /* accuracy and log loss by hand */
            rt_task_proba(k, w.pred + i * k->n_out, p);
            right += rt_task_predict_class(k, p, 0.5) == (int)w.label[i];
            ll -= log(p[(int)w.label[i]]);
        }
        assert_true(fabs(w.one[0] - right / MROWS) < 1e-12);
        assert_true(fabs(w.one[3] - ll / MROWS) < 1e-9);
        if (k->nclasses == 2)
            check_ranking(&w);
    } else {
        double se = 0, ae = 0, my = 0, sst = 0;
        for (int64_t i = 0; i < MROWS; i++)
            my += (w.label[i] * 2.5 + 8.0) / MROWS;
        for (int64_t i = 0; i < MROWS; i++) {
            const double e = (w.pred[i] - (double)w.label[i]) * 2.5, y = w.label[i] * 2.5 + 8.0;
            se += e * e, ae += fabs(e), sst += (y - my) * (y - my);
        }
        assert_true(fabs(w.one[0] - sqrt(se / MROWS)) < 1e-9);
        assert_true(fabs(w.one[1] - ae / MROWS) < 1e-9);
        assert_true(fabs(w.one[2] - (1 - se / sst)) < 1e-9);
    }
    free(w.pred);
    free(w.label);
}

static void test_metrics_over_ranks(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(33);
    metrics_case(&g, RT_TASK_MULTICLASS);
    metrics_case(&g, RT_TASK_BINARY);
    metrics_case(&g, RT_TASK_REGRESSION);
}

/* ---- the monitor --------------------------------------------------------------------- */

static rt_job_cfg monitor_cfg(int64_t patience, double min_delta, int sched, int64_t lr_patience)
{
    rt_job_cfg c;
    memset(&c, 0, sizeof c);
    c.epochs = 100;
    c.early_stopping_patience = patience;
    c.min_delta = min_delta;
    c.lr_schedule = sched;
    c.lr_patience = lr_patience;
    c.lr_gamma = 0.5;
    return c;
}

static void test_monitor(void **state)
{
    (void)state;
    /* Keras' EarlyStopping(patience = 2, min_delta = 0.1), mode min */
    rt_job_cfg c = monitor_cfg(2, 0.1, RT_LR_CONSTANT, 0);
    rt_monitor m;
    rt_monitor_init(&m, "val_loss", false);
    const double v[] = {1.0, 0.95, 0.85, NAN, 0.80, 0.70};
    const bool best[] = {true, false, true, false, false, false};
    for (int e = 0; e < 5; e++) {
        assert_int_equal(rt_monitor_update(&m, &c, e + 1, v[e]), best[e]);
        assert_int_equal(m.stop, e == 4); /* 0.95 and 0.80 are within min_delta of the best */
    }
    assert_int_equal(m.best_epoch, 3);
    assert_true(m.best == 0.85);
    assert_non_null(strstr(m.why, "val_loss has not improved for 2 epochs (best 0.85 at epoch 3)"));
    /* mode max; no patience: never stops */
    c = monitor_cfg(0, 0, RT_LR_CONSTANT, 0);
    rt_monitor_init(&m, "val_auc", true);
    for (int e = 1; e <= 50; e++)
        rt_monitor_update(&m, &c, e, 0.5);
    assert_false(m.stop);
    assert_int_equal(m.best_epoch, 1);
    /* ReduceLROnPlateau(patience = 1, factor = 0.5, threshold_mode 'abs', threshold 0):
     * the rate halves after two epochs without a better value */
    c = monitor_cfg(0, 0, RT_LR_PLATEAU, 1);
    rt_monitor_init(&m, "val_loss", false);
    const double pv[] = {3, 2, 2, 2, 1, 1.5, 1.5, 1.5, 1.5, 1.5};
    const double factor[] = {1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.125, 0.125};
    for (int e = 0; e < 10; e++) {
        rt_monitor_update(&m, &c, e + 1, pv[e]);
        if (m.lr_factor != factor[e])
            fail_msg("plateau: after epoch %d the factor is %g, want %g", e + 1, m.lr_factor,
                     factor[e]);
        assert_true(fabs(rt_lr_at(&(rt_job_cfg){.learning_rate = 0.1, .lr_schedule = RT_LR_PLATEAU,
                                                .epochs = 10},
                                  1, 5, e + 2, 0, m.lr_factor) - 0.1 * factor[e]) < 1e-15);
    }
}

/* The metric table: every name found by itself, classification's before
 * regression's, and monitor_mode = auto's direction per metric. */
static void test_metric_table(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        bool cls, higher;
    } want[] = {{"accuracy", true, true},
                {"balanced_accuracy", true, true},
                {"macro_f1", true, true},
                {"log_loss", true, false},
                {"auc", true, true},
                {"average_precision", true, true},
                {"precision_at_k", true, true},
                {"recall_at_k", true, true},
                {"hits_at_k", true, true},
                {"rmse", false, false},
                {"mae", false, false},
                {"r2", false, true},
                {"exp_rmspe", false, false}};
    assert_int_equal(RT_METRIC_COUNT, (int)(sizeof want / sizeof want[0]));
    for (int k = 0; k < RT_METRIC_COUNT; k++) {
        assert_string_equal(rt_metric_names[k], want[k].name);
        assert_int_equal(k < RT_CLS_METRIC_COUNT, want[k].cls);
        assert_int_equal(rt_metric_higher_better(k), want[k].higher);
    }
    assert_false(rt_metric_higher_better(-1));
    assert_false(rt_metric_higher_better(RT_METRIC_COUNT));
    assert_string_equal(RT_HIGHER_METRICS, "accuracy, balanced_accuracy, macro_f1, auc, "
                                           "average_precision, precision_at_k, recall_at_k, "
                                           "hits_at_k, r2, ");
}

/* Ranks that see different values (as ranks whose local metrics differ
 * would) all stop after the epoch rank 0 stops, with rank 0's rate. */
static void monitor_rank(rt_comm *c, int rank, void *arg, rh_result *res)
{
    int64_t *stopped = arg;
    rt_job_cfg cfg = monitor_cfg(3, 0, RT_LR_PLATEAU, 0);
    rt_monitor m;
    rt_monitor_init(&m, "val_accuracy", true);
    char err[RT_ERR_LEN];
    double factor = -1;
    for (int64_t e = 1; e <= 40; e++) {
        /* rank r improves for 2 + 5 r epochs, then stalls */
        double v = e <= 2 + 5 * rank ? (double)e : 0.0;
        rt_monitor_update(&m, &cfg, e, v);
        RH_CHECK(res, rt_monitor_agree(&m, c, MRANKS, err) == RT_OK, "rank %d: %s", rank, err);
        if (e == 3)
            factor = m.lr_factor;
        if (m.stop) {
            stopped[rank] = e;
            stopped[MRANKS + rank] = (int64_t)(factor * 1024);
            return;
        }
    }
    stopped[rank] = 0;
}

static void test_monitor_ranks_agree(void **state)
{
    (void)state;
    int64_t stopped[2 * MRANKS];
    rt_comm_opts o;
    rt_comm_opts_defaults(&o);
    o.timeout_us = 20000000;
    rh_result res;
    if (!rh_run(MRANKS, RT_TRANSPORT_LOOPBACK, &o, monitor_rank, stopped, &res))
        fail_msg("%s", res.msg);
    for (int r = 0; r < MRANKS; r++) {
        assert_int_equal(stopped[r], 5); /* rank 0: best at 2, three epochs without */
        assert_int_equal(stopped[MRANKS + r], 512); /* its plateau halved the rate at 3 */
    }
}

/* Prediction headers: a log label's column is the target's name. */
static void test_prediction_header(void **state)
{
    (void)state;
    const struct {
        const char *label, *transform, *want;
    } cases[] = {
        {"log_price", "log", ",price"},
        {"LogSales", "log", ",Sales"},
        {"Sales", "log", ",Sales"},
        {"logistic", "log", ",logistic"},
        {"log", "log", ",log"},
        {"ln_y", "log", ",y"},
        {"log_price", "none", ",log_price"},
        {"log_price", "standardize", ",log_price"},
        {"log_price", "log,standardize", ",price"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rt_pred_format f = {.label = cases[i].label, .label_transform = cases[i].transform,
                            .n_out = 1};
        char buf[100];
        rt_pred_header(&f, buf, sizeof buf);
        assert_string_equal(buf, cases[i].want);
    }
    static const char *cls[] = {"no", "yes, really"};
    rt_pred_format f = {.label = "log_y", .label_transform = "none", .n_out = 1, .nclasses = 2,
                        .loss = RT_LOSS_BCE, .classes = (char **)cls, .proba = true};
    char buf[100];
    rt_pred_header(&f, buf, sizeof buf);
    assert_string_equal(buf, ",log_y,p_no,\"p_yes, really\"");
}

/* Issue 43.4: a regression's value back in the label's unit through
 * log,standardize; predictions past the training targets' range by more
 * than the factor are counted (the first named) and clipped when asked. */
static void test_prediction_range(void **state)
{
    (void)state;
    rt_pred_range seen = {0};
    rt_pred_format f = {.label = "price",
                        .label_transform = "log,standardize",
                        .n_out = 1,
                        .label_mean = 2.0,
                        .label_std = 0.5,
                        .lo = 10,
                        .hi = 20,
                        .range_factor = 10,
                        .range = &seen};
    const float z = 0.4f; /* exp(0.4 * 0.5 + 2.0) */
    assert_true(fabs(rt_pred_value(&f, &z) - exp(0.4f * 0.5 + 2.0)) < 1e-9);
    char buf[200];
    /* allowed: [10 - 9 x 10, 20 + 9 x 10] = [-80, 110] */
    const float inside = (float)((log(100.0) - 2.0) / 0.5), far = (float)((log(1e6) - 2.0) / 0.5);
    rt_pred_fields(&f, 7, &inside, buf, sizeof buf);
    assert_int_equal(seen.n, 0);
    rt_pred_fields(&f, 8, &far, buf, sizeof buf);
    assert_int_equal(seen.n, 1);
    assert_int_equal(seen.first[0], 8);
    assert_true(strtod(buf + 1, NULL) > 9e5); /* written as it is */
    char said[RT_ERR_LEN];
    rt_pred_range_say(&f, "ids", said, sizeof said);
    assert_non_null(strstr(said, "1 prediction outside the training targets' range [10, 20] by "
                                 "more than 10x its width (ids 8: 1e+06"));
    assert_non_null(strstr(said, "clip_predictions = true clips them"));
    f.clip = true;
    rt_pred_fields(&f, 9, &far, buf, sizeof buf);
    assert_string_equal(buf, ",110");
    assert_int_equal(seen.n, 2);
    f.range_factor = 0; /* no check */
    rt_pred_fields(&f, 10, &far, buf, sizeof buf);
    assert_int_equal(seen.n, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prediction_range),
        cmocka_unit_test(test_losses),
        cmocka_unit_test(test_optimizers),
        cmocka_unit_test(test_metrics_over_ranks),
        cmocka_unit_test(test_monitor),
        cmocka_unit_test(test_metric_table),
        cmocka_unit_test(test_monitor_ranks_agree),
        cmocka_unit_test(test_prediction_header),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
