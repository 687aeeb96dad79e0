/* cpu_layers.c — CPU implementations of the layer graph's elementwise,
 * normalisation and token ops: activations, ReGLU, layer norm, the
 * elementwise add/multiply/accumulate, bias add and column sums, and the
 * feature tokens of FT-Transformer (contracts in rt_kernels.h).
 *
 * Like cpu_ops.c these are the reference the CUDA kernels are tested
 * against: plain loops, fixed orders, double accumulators for every sum.
 * Loops over rows run in parallel (each thread writes its own rows); sums
 * over rows run in parallel over columns (each column summed by one
 * thread, rows in order), so results do not depend on the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "act_math.h"
#include "ens_math.h"
#include "quantile_math.h"
#include "cpu_backend.h"
#include "cpu_simd.h"
#include "kctx_impl.h"

/* below this many elements a loop runs on the calling thread */
#define PAR_MIN 32768

/* ---- activations ------------------------------------------------------------ */

/* One row each, cloned per instruction-set level (RT_MV) so that the
 * loops run as wide as the CPU allows; the activation is chosen outside
 * the element loop. */
RT_MV static void act_fwd_row(rt_act act, const float *x, float *y, int64_t n)
{
    switch (act) {
    case RT_ACT_RELU:
        for (int64_t j = 0; j < n; j++)
            y[j] = x[j] > 0.0f ? x[j] : 0.0f;
        break;
    default:
        for (int64_t j = 0; j < n; j++)
            y[j] = rt_act_f(act, x[j]);
    }
}

RT_MV static void act_bwd_row(rt_act act, const float *x, const float *g, float *dx, int64_t n)
{
    switch (act) {
    case RT_ACT_RELU:
        for (int64_t j = 0; j < n; j++)
            dx[j] = x[j] > 0.0f ? g[j] : 0.0f;
        break;
    default:
        for (int64_t j = 0; j < n; j++)
            dx[j] = g[j] * rt_act_df(act, x[j]);
    }
}

RT_MV static void reglu_fwd_row(const float *a, const float *b, float *y, int64_t h)
{
    for (int64_t j = 0; j < h; j++)
        y[j] = a[j] * (b[j] > 0.0f ? b[j] : 0.0f);
}

RT_MV static void reglu_bwd_row(const float *a, const float *b, const float *g, float *da,
                                float *db, int64_t h)
{
    for (int64_t j = 0; j < h; j++) {
        const float gj = g[j], aj = a[j], bj = b[j]; /* dx may alias x */
        da[j] = gj * (bj > 0.0f ? bj : 0.0f);
        db[j] = bj > 0.0f ? gj * aj : 0.0f;
    }
}

void rt_cpu_act_fwd(rt_kctx *ctx, rt_act act, rt_view x, rt_view y)
{
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (x.rows * x.cols > PAR_MIN)
    for (int64_t r = 0; r < x.rows; r++)
        act_fwd_row(act, RT_F(x) + r * x.ld, RT_F(y) + r * y.ld, x.cols);
}

void rt_cpu_act_bwd(rt_kctx *ctx, rt_act act, rt_view x, rt_view dy, rt_view dx)
{
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (x.rows * x.cols > PAR_MIN)
    for (int64_t r = 0; r < x.rows; r++)
        act_bwd_row(act, RT_F(x) + r * x.ld, RT_F(dy) + r * dy.ld, RT_F(dx) + r * dx.ld, x.cols);
}

void rt_cpu_reglu_fwd(rt_kctx *ctx, rt_view x, rt_view y)
{
    const int64_t h = y.cols;
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (x.rows * h > PAR_MIN)
    for (int64_t r = 0; r < x.rows; r++)
        reglu_fwd_row(RT_F(x) + r * x.ld, RT_F(x) + r * x.ld + h, RT_F(y) + r * y.ld, h);
}

void rt_cpu_reglu_bwd(rt_kctx *ctx, rt_view x, rt_view dy, rt_view dx)
{
    const int64_t h = dy.cols;
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (x.rows * h > PAR_MIN)
    for (int64_t r = 0; r < x.rows; r++)
        reglu_bwd_row(RT_F(x) + r * x.ld, RT_F(x) + r * x.ld + h, RT_F(dy) + r * dy.ld,
                      RT_F(dx) + r * dx.ld, RT_F(dx) + r * dx.ld + h, h);
}

/* ---- layer norm ----------------------------------------------------------------- */

void rt_cpu_ln_fwd(rt_kctx *ctx, rt_view x, const float *gamma, const float *beta, float eps,
                       float *save_mean, float *save_rstd, rt_view y)
{
    const int64_t F = x.cols;
    const float *xp = RT_F(x);
    float *yp = RT_F(y);
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (x.rows * F > PAR_MIN)
    for (int64_t r = 0; r < x.rows; r++) {
        const float *xr = xp + r * x.ld;
        double mean = 0.0, var = 0.0;
        for (int64_t j = 0; j < F; j++)
            mean += xr[j];
        mean = F > 0 ? mean / (double)F : 0.0;
        for (int64_t j = 0; j < F; j++) {
            const double dv = xr[j] - mean;
            var += dv * dv;
        }
        var = F > 0 ? var / (double)F : 0.0;
        const double rstd = 1.0 / sqrt(var + eps);
        save_mean[r] = (float)mean;
        save_rstd[r] = (float)rstd;
        float *yr = yp + r * y.ld;
        for (int64_t j = 0; j < F; j++)
            yr[j] = (float)((xr[j] - mean) * rstd * gamma[j] + beta[j]);
    }
}

/* This thread's share [c0, c1) of n columns (inside a parallel region). */
static inline void thread_cols(int64_t n, int64_t *c0, int64_t *c1, int *t, int *nt)
{
#ifdef _OPENMP
    *t = omp_get_thread_num();
    *nt = omp_get_num_threads();
#endif
    *c0 = n * *t / *nt;
    *c1 = n * (*t + 1) / *nt;
}

void rt_cpu_ln_bwd(rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma,
                       const float *save_mean, const float *save_rstd, float *dgamma, float *dbeta,
                       rt_view dx)
{
    const int64_t B = x.rows, F = x.cols;
    const float *xp = RT_F(x), *g = RT_F(dy);
    /* dgamma, dbeta: every column by one thread, rows in order (a thread
     * walks the rows along its columns: one pass over memory) */
    const int nthr = B * F > PAR_MIN ? ctx->threads : 1;
#pragma omp parallel num_threads(nthr)
    {
        int64_t c0 = 0, c1 = F;
        int t = 0, nt = 1;
        thread_cols(F, &c0, &c1, &t, &nt);
        double *acc = calloc(2 * (size_t)(c1 - c0) + 1, sizeof *acc), *sg = acc, *sgx = acc + (c1 - c0);
        RT_ASSERT(acc);
        for (int64_t r = 0; r < B; r++) {
            const float *gr = g + r * dy.ld, *xr = xp + r * x.ld;
            const double mu = save_mean[r], rs = save_rstd[r];
            for (int64_t j = c0; j < c1; j++) {
                const double gv = gr[j];
                sg[j - c0] += gv;
                sgx[j - c0] += gv * ((xr[j] - mu) * rs);
            }
        }
        for (int64_t j = c0; j < c1; j++) {
            dbeta[j] = (float)sg[j - c0];
            dgamma[j] = (float)sgx[j - c0];
        }
        free(acc);
    }
    if (!dx.p)
        return;
    float *o = RT_F(dx);
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (B * F > PAR_MIN)
    for (int64_t r = 0; r < B; r++) {
        const float *xr = xp + r * x.ld, *gr = g + r * dy.ld;
        const double mu = save_mean[r], rs = save_rstd[r];
        double mg = 0.0, mgx = 0.0;
        for (int64_t j = 0; j < F; j++) {
            const double gj = (double)gr[j] * gamma[j];
            mg += gj;
            mgx += gj * (xr[j] - mu) * rs;
        }
        mg /= (double)F;
        mgx /= (double)F;
        float *dr = o + r * dx.ld; /* may alias dy: each element read before it is written */
        for (int64_t j = 0; j < F; j++) {
            const double xhat = (xr[j] - mu) * rs;
            dr[j] = (float)(rs * ((double)gr[j] * gamma[j] - mg - xhat * mgx));
        }
    }
}

/* ---- elementwise, bias, column sums ------------------------------------------------ */

RT_MV static void ew_row(rt_ew op, const float *a, const float *b, float *y, int64_t n)
{
    switch (op) {
    case RT_EW_ACC:
        for (int64_t j = 0; j < n; j++)
            y[j] += a[j];
        break;
    case RT_EW_COPY:
        for (int64_t j = 0; j < n; j++)
            y[j] = a[j];
        break;
    case RT_EW_ADD:
        for (int64_t j = 0; j < n; j++)
            y[j] = a[j] + b[j];
        break;
    default:
        for (int64_t j = 0; j < n; j++)
            y[j] = a[j] * b[j];
    }
}

void rt_cpu_ew(rt_kctx *ctx, rt_ew op, rt_view a, rt_view b, rt_view y)
{
    const bool two = op == RT_EW_ADD || op == RT_EW_MUL;
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (a.rows * a.cols > PAR_MIN)
    for (int64_t r = 0; r < a.rows; r++)
        ew_row(op, RT_F(a) + r * a.ld, two ? RT_F(b) + r * b.ld : NULL, RT_F(y) + r * y.ld, a.cols);
}

void rt_cpu_bias_add(rt_kctx *ctx, const float *b, rt_view y)
{
    float *yp = RT_F(y);
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (y.rows * y.cols > PAR_MIN)
    for (int64_t r = 0; r < y.rows; r++)
        for (int64_t j = 0; j < y.cols; j++)
            yp[r * y.ld + j] += b[j];
}

void rt_cpu_colsum(rt_kctx *ctx, rt_view dy, float *out)
{
    if (dy.rows == 0) {
        memset(out, 0, (size_t)dy.cols * sizeof *out);
        return;
    }
    rt_cpu_mask_colsum(ctx, dy, RT_ACT_NONE, dy, out);
}

/* ---- feature tokens ----------------------------------------------------------------- */

void rt_cpu_tokens_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, int64_t d,
                           rt_view y)
{
    const int64_t n = y.cols / d;
    const float *xp = RT_F(x);
    float *yp = RT_F(y);
    if (d == 1 && xp) { /* a scale per column (tabm's adapters), vectorised */
#pragma omp parallel num_threads(ctx->threads) if (y.rows * y.cols > PAR_MIN)
        {
            int64_t r0 = 0, r1 = y.rows;
            int t = 0, nt = 1;
            thread_cols(y.rows, &r0, &r1, &t, &nt);
            rt_simd_scale_rows(xp + r0 * x.ld, x.ld, w, b, false, r1 - r0, n, yp + r0 * y.ld, y.ld);
        }
        return;
    }
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (y.rows * y.cols > PAR_MIN)
    for (int64_t r = 0; r < y.rows; r++)
        for (int64_t i = 0; i < n; i++) {
            const float xv = xp ? xp[r * x.ld + i] : 1.0f;
            const float *wi = w + i * d;
            float *yr = yp + r * y.ld + i * d;
            if (b)
                for (int64_t j = 0; j < d; j++)
                    yr[j] = xv * wi[j] + b[i * d + j];
            else
                for (int64_t j = 0; j < d; j++)
                    yr[j] = xv * wi[j];
        }
}

/* The tokens' column sums: dw[c] = sum_r g * x[r, c / d], db[c] = sum_r g,
 * each of the N columns by one thread over the rows in order (a thread
 * walks the rows along its columns).  g = dy, except for a scale per column
 * (d == 1 with x: rt_simd_scale_colsum, vectorised), where g = dy * c masked
 * by y > 0 when y.p, and dx = g * w is written with the sums. */
static void token_sums(rt_kctx *ctx, rt_view x, const float *w, int64_t d, rt_view y, float c,
                       rt_view dy, float *dw, float *db, rt_view dx)
{
    const int64_t B = dy.rows, N = dy.cols;
    const float *xp = RT_F(x), *g = RT_F(dy);
    const bool scale = d == 1 && xp;
    RT_ASSERT(scale || (c == 1.0f && !y.p));
    RT_ASSERT(scale || !dx.p || dx.dtype == RT_F32);
    const int nthr = B * N > PAR_MIN ? ctx->threads : 1;
#pragma omp parallel num_threads(nthr)
    {
        int64_t c0 = 0, c1 = N;
        int t = 0, nt = 1;
        thread_cols(N, &c0, &c1, &t, &nt);
        double *acc = calloc(2 * (size_t)(c1 - c0) + 1, sizeof *acc), *sw = acc,
               *sb = acc + (c1 - c0);
        RT_ASSERT(acc);
        if (scale)
            rt_simd_scale_colsum(g + c0, dy.ld, c, y.p ? RT_F(y) + c0 : NULL, y.ld, xp + c0, x.ld,
                                 w + c0, B, c1 - c0, sw, sb,
                                 dx.p && dx.dtype == RT_F32 ? RT_F(dx) + c0 : NULL,
                                 dx.p && dx.dtype == RT_BF16 ? RT_H(dx) + c0 : NULL, dx.ld);
        else
            for (int64_t r = 0; r < B; r++) {
                const float *gr = g + r * dy.ld;
                for (int64_t j = c0; j < c1; j++) {
                    const double gv = gr[j];
                    sw[j - c0] += gv * (xp ? xp[r * x.ld + j / d] : 1.0f);
                    sb[j - c0] += gv;
                }
            }
        for (int64_t j = c0; j < c1; j++) {
            dw[j] = (float)sw[j - c0];
            if (db)
                db[j] = (float)sb[j - c0];
        }
        free(acc);
    }
}

void rt_cpu_tokens_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view dy, int64_t d, float *dw,
                       float *db, rt_view dx)
{
    const int64_t B = dy.rows, N = dy.cols, n = N / d;
    const float *g = RT_F(dy);
    token_sums(ctx, x, w, d, (rt_view){0}, 1.0f, dy, dw, db, dx);
    if (!dx.p || d == 1) /* d == 1: written with the sums (dx.p implies x.p) */
        return;
    float *o = RT_F(dx);
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (B * N > PAR_MIN)
    for (int64_t r = 0; r < B; r++)
        for (int64_t i = 0; i < n; i++) {
            double s = 0.0;
            for (int64_t j = 0; j < d; j++)
                s += (double)g[r * dy.ld + i * d + j] * w[i * d + j];
            o[r * dx.ld + i] = (float)s;
        }
}

/* ---- TabM's block end: scale, bias, ReLU and dropout in one pass -------------------- */

/* y = drop(act(x * w + b)) a row at a time, dropped while it is in cache
 * (rt_k_dropout's element numbering, r * C + j); y in bf16 from a row of
 * floats; then, with w2, y2 = y * w2 from the same row (f32 or bf16) */
static void scale_rows_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act,
                           float rate, uint64_t seed, uint32_t stream, const int64_t *step,
                           rt_view y, const float *w2, rt_view y2)
{
    const int64_t C = y.cols;
    const uint64_t t = (uint64_t)*step;
    const bool h = y.dtype == RT_BF16, h2 = w2 && y2.dtype == RT_BF16;
#pragma omp parallel num_threads(ctx->threads) if (y.rows * C > PAR_MIN)
    {
        int64_t r0 = 0, r1 = y.rows;
        int th = 0, nt = 1;
        thread_cols(y.rows, &r0, &r1, &th, &nt);
        float *row = h || h2 ? malloc((size_t)C * sizeof *row) : NULL;
        RT_ASSERT(row || !(h || h2));
        for (int64_t r = r0; r < r1; r++) {
            float *yr = h ? row : RT_F(y) + r * y.ld;
            rt_simd_scale_rows(RT_F(x) + r * x.ld, x.ld, w, b, act == RT_ACT_RELU, 1, C, yr, y.ld);
            if (rate > 0.0f)
                rt_simd_dropout(yr, C, (uint64_t)(r * C), rate, (uint32_t)seed ^ stream,
                                (uint32_t)(seed >> 32), t);
            if (h)
                rt_bf16_store(row, C, RT_H(y) + r * y.ld);
            if (!w2)
                continue;
            float *y2r = h2 ? row : RT_F(y2) + r * y2.ld; /* row may be yr: in place */
            rt_simd_scale_rows(yr, C, w2, NULL, false, 1, C, y2r, C);
            if (h2)
                rt_bf16_store(row, C, RT_H(y2) + r * y2.ld);
        }
        free(row);
    }
}

void rt_cpu_scale_act_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act,
                          float rate, uint64_t seed, uint32_t stream, const int64_t *step,
                          rt_view y)
{
    scale_rows_fwd(ctx, x, w, b, act, rate, seed, stream, step, y, NULL, y);
}

void rt_cpu_scale_pair_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act,
                           float rate, uint64_t seed, uint32_t stream, const int64_t *step,
                           rt_view y, const float *w2, rt_view y2)
{
    scale_rows_fwd(ctx, x, w, b, act, rate, seed, stream, step, y, w2, y2);
}

void rt_cpu_scale_act_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act,
                          float rate, rt_view dy, float *dw, float *db, rt_view dx)
{
    /* the dropout's backward scale, then the ReLU's mask: rt_k_scale's and
     * rt_k_act_bwd's floats */
    token_sums(ctx, x, w, 1, act == RT_ACT_RELU ? y : (rt_view){0}, 1.0f / (1.0f - rate), dy, dw,
               db, dx);
}

void rt_cpu_scale_pair_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act,
                           float rate, const float *w2, rt_view dy2, float *dw2, float *dw,
                           float *db, rt_view dx)
{
    const int64_t B = dy2.rows, N = dy2.cols;
    const int nthr = B * N > PAR_MIN ? ctx->threads : 1;
#pragma omp parallel num_threads(nthr)
    {
        int64_t c0 = 0, c1 = N;
        int t = 0, nt = 1;
        thread_cols(N, &c0, &c1, &t, &nt);
        const size_t nc = (size_t)(c1 - c0);
        double *acc = calloc(3 * nc + 1, sizeof *acc), *s2 = acc, *sw = acc + nc,
               *sb = acc + 2 * nc;
        RT_ASSERT(acc);
        /* token_sums' c and threading: each column's sums by one thread, rows in order */
        rt_simd_scale2_colsum(RT_F(dy2) + c0, dy2.ld, RT_F(y) + c0, y.ld, w2 + c0,
                              1.0f / (1.0f - rate), act == RT_ACT_RELU, RT_F(x) + c0, x.ld, w + c0,
                              B, c1 - c0, s2, sw, sb,
                              dx.p && dx.dtype == RT_F32 ? RT_F(dx) + c0 : NULL,
                              dx.p && dx.dtype == RT_BF16 ? RT_H(dx) + c0 : NULL, dx.ld);
        for (int64_t j = c0; j < c1; j++) {
            dw2[j] = (float)s2[j - c0];
            dw[j] = (float)sw[j - c0];
            if (db)
                db[j] = (float)sb[j - c0];
        }
        free(acc);
    }
}

/* ---- ensembles (TabM) ---------------------------------------------------------------- */

void rt_cpu_ens_repeat(rt_kctx *ctx, rt_view x, rt_view y)
{
    const int64_t D = x.cols, k = y.cols / D;
    const float *xp = RT_F(x);
    float *yp = RT_F(y);
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (y.rows * y.cols > PAR_MIN)
    for (int64_t r = 0; r < y.rows; r++)
        for (int64_t t = 0; t < k; t++)
            memcpy(yp + r * y.ld + t * D, xp + r * x.ld, (size_t)D * sizeof(float));
}

void rt_cpu_ens_reduce(rt_kctx *ctx, rt_ens_op op, rt_view x, rt_view y)
{
    const int64_t D = y.cols, k = x.cols / D;
    const float *xp = RT_F(x);
    float *yp = RT_F(y);
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (x.rows * x.cols > PAR_MIN)
    for (int64_t r = 0; r < y.rows; r++) {
        double tmp[2 * RT_ENS_MAX_K];
        if (op == RT_ENS_SOFTMAX) {
            rt_ens_softmax_row(xp + r * x.ld, k, D, yp + r * y.ld, tmp);
            continue;
        }
        if (op == RT_ENS_SUM || op == RT_ENS_MEAN) { /* rt_ens_elem's sums, vectorised */
            rt_simd_member_sum(xp + r * x.ld, k, D, op == RT_ENS_MEAN, yp + r * y.ld);
            continue;
        }
        for (int64_t j = 0; j < D; j++)
            yp[r * y.ld + j] = rt_ens_elem((int)op, xp + r * x.ld, k, D, j, tmp);
    }
}

/* ---- periodic features of the numeric columns ----------------------------------------- */

void rt_cpu_periodic_fwd(rt_kctx *ctx, rt_view x, const float *f, int64_t k, rt_view y)
{
    const int64_t n = x.cols;
    const float *xp = RT_F(x);
    float *yp = RT_F(y);
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (y.rows * y.cols > PAR_MIN)
    for (int64_t r = 0; r < y.rows; r++)
        for (int64_t i = 0; i < n; i++) {
            float *yr = yp + r * y.ld + i * 2 * k;
            for (int64_t j = 0; j < k; j++) {
                const float th = rt_periodic_theta(f[i * k + j], xp[r * x.ld + i]);
                yr[j] = cosf(th);
                yr[k + j] = sinf(th);
            }
        }
}

void rt_cpu_periodic_bwd(rt_kctx *ctx, rt_view x, const float *f, int64_t k, rt_view dy, float *df,
                         rt_view dx)
{
    const int64_t B = x.rows, n = x.cols;
    const float *xp = RT_F(x), *g = RT_F(dy);
    const float twopi = 6.28318530717958648f;
    /* df: each frequency summed over the rows in order by one thread */
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (B * n * k > PAR_MIN)
    for (int64_t p = 0; p < n * k; p++) {
        const int64_t i = p / k, j = p - i * k;
        double s = 0.0;
        for (int64_t r = 0; r < B; r++) {
            const float xv = xp[r * x.ld + i], th = rt_periodic_theta(f[p], xv);
            const float *gr = g + r * dy.ld + i * 2 * k;
            s += (double)(twopi * xv) * rt_periodic_dtheta(th, gr[j], gr[k + j]);
        }
        df[p] = (float)s;
    }
    if (!dx.p)
        return;
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (B * n * k > PAR_MIN)
    for (int64_t r = 0; r < B; r++)
        for (int64_t i = 0; i < n; i++) {
            const float xv = xp[r * x.ld + i];
            const float *gr = g + r * dy.ld + i * 2 * k;
            double s = 0.0;
            for (int64_t j = 0; j < k; j++) {
                const float fv = f[i * k + j];
                s += (double)(twopi * fv) *
                     rt_periodic_dtheta(rt_periodic_theta(fv, xv), gr[j], gr[k + j]);
            }
            RT_F(dx)[r * dx.ld + i] = (float)s;
        }
}

/* ---- continuous_norm = quantile -------------------------------------------------------- */

void rt_cpu_quantile_fwd(rt_kctx *ctx, rt_view x, const float *q, int64_t nq, rt_view y)
{
#pragma omp parallel for schedule(static) \
    num_threads(ctx->threads) if (x.rows * x.cols * 8 > PAR_MIN)
    for (int64_t r = 0; r < x.rows; r++)
        for (int64_t i = 0; i < x.cols; i++)
            RT_F(y)[r * y.ld + i] = rt_quantile_normal(q + i * nq, nq, RT_F(x)[r * x.ld + i]);
}

void rt_cpu_robust_fwd(rt_kctx *ctx, rt_view x, const float *center, const float *scale, rt_view y)
{
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (x.rows * x.cols > PAR_MIN)
    for (int64_t r = 0; r < x.rows; r++)
        for (int64_t i = 0; i < x.cols; i++)
            RT_F(y)[r * y.ld + i] = rt_robust_value(RT_F(x)[r * x.ld + i], center[i], scale[i]);
}

/* ---- piecewise-linear encoding of the numeric columns -------------------------------- */

void rt_cpu_ple_fwd(rt_kctx *ctx, rt_view x, const float *edges, int64_t T, rt_view y)
{
    const float *xp = RT_F(x);
    float *yp = RT_F(y);
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (y.rows * y.cols > PAR_MIN)
    for (int64_t r = 0; r < x.rows; r++)
        for (int64_t i = 0; i < x.cols; i++)
            for (int64_t t = 0; t < T; t++)
                yp[r * y.ld + i * T + t] =
                    rt_ple_value(xp[r * x.ld + i], edges + i * (T + 1), t, T, NULL);
}

void rt_cpu_ple_bwd(rt_kctx *ctx, rt_view x, const float *edges, int64_t T, rt_view dy, rt_view dx)
{
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (dy.rows * dy.cols > PAR_MIN)
    for (int64_t r = 0; r < x.rows; r++)
        for (int64_t i = 0; i < x.cols; i++) {
            double s = 0.0;
            for (int64_t t = 0; t < T; t++) {
                float d;
                rt_ple_value(RT_F(x)[r * x.ld + i], edges + i * (T + 1), t, T, &d);
                s += (double)d * RT_F(dy)[r * dy.ld + i * T + t];
            }
            RT_F(dx)[r * dx.ld + i] = (float)s;
        }
}
