/* test_kernels_inputs.c — the CPU ops of TabM and of the inputs' encodings
 * against plain double-precision references (random inputs each run;
 * RT_TEST_SEED reproduces): the members' reductions, the end of a TabM
 * block (scale, bias, ReLU and dropout in one op), continuous_norm =
 * quantile and robust, the piecewise-linear encoding and its gradient.
 * Split from test_kernels_cpu.c (the layers' ops) by subject; the CUDA
 * kernels are compared with these in test_layers_cuda.c. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_kernels.h"
#include "rt_rng.h"
#include "test_util.h"

static rt_kctx *ctx;

static int setup(void **state)
{
    (void)state;
    char err[RT_ERR_LEN];
    return rt_kctx_create(RT_DEVICE_CPU, 2, &ctx, err) == RT_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    rt_kctx_destroy(ctx);
    return 0;
}

/* TabM's reductions against double references: the mean, the log of
 * the members' mean softmax (rows with a tie, logits 200 apart whose
 * probabilities underflow a float), the logit of their mean sigmoid. */
static void test_ensemble(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(31);
    const int64_t R = 37, k = 5, D = 4;
    float x[37 * 5 * 4], y[37 * 4], rep[37 * 5 * 4];
    tu_fill(&g, x, sizeof x / sizeof *x, -6, 6);
    for (int64_t t = 0; t < k; t++) { /* row 0: every member ties; row 1: overflowing logits */
        for (int64_t j = 0; j < D; j++)
            x[t * D + j] = 2.0f, x[(k + t) * D + j] = j == 0 ? 100.0f : -100.0f;
    }
    double ref[37 * 4];
    for (int op = RT_ENS_SUM; op <= RT_ENS_SIGMOID; op++) {
        for (int64_t r = 0; r < R; r++) {
            const float *xr = x + r * k * D;
            for (int64_t j = 0; j < D; j++) {
                double a = 0, b = 0;
                for (int64_t t = 0; t < k; t++) {
                    if (op == RT_ENS_SOFTMAX) {
                        double z = 0;
                        for (int64_t i = 0; i < D; i++)
                            z += exp((double)xr[t * D + i] - xr[t * D + j]);
                        a += 1.0 / z / (double)k;
                    } else if (op == RT_ENS_SIGMOID) {
                        a += 1.0 / (1.0 + exp(-(double)xr[t * D + j])) / (double)k;
                        b += 1.0 / (1.0 + exp((double)xr[t * D + j])) / (double)k;
                    } else {
                        a += xr[t * D + j];
                    }
                }
                ref[r * D + j] = op == RT_ENS_SUM       ? a
                                 : op == RT_ENS_MEAN    ? a / (double)k
                                 : op == RT_ENS_SOFTMAX ? log(a)
                                                        : log(a) - log(b);
            }
        }
        rt_k_ens_reduce(ctx, (rt_ens_op)op, rt_vf32(x, R, k * D, k * D, RT_DEVICE_CPU),
                        rt_vf32(y, R, D, D, RT_DEVICE_CPU));
        double got[37 * 4];
        for (int64_t i = 0; i < R * D; i++)
            got[i] = y[i];
        char what[32];
        snprintf(what, sizeof what, "ens_reduce %d", op);
        assert_true(tu_close_d(what, got, ref, (size_t)(R * D), 1e-5, 1e-5));
    }
    /* the tie: every class 1/D; 200 apart: log p of the winner 0, the others -200 */
    rt_k_ens_reduce(ctx, RT_ENS_SOFTMAX, rt_vf32(x, R, k * D, k * D, RT_DEVICE_CPU),
                    rt_vf32(y, R, D, D, RT_DEVICE_CPU));
    assert_true(fabsf(y[0] - logf(0.25f)) < 1e-6f && fabsf(y[D]) < 1e-6f &&
                fabsf(y[D + 1] + 200.0f) < 1e-4f);
    rt_k_ens_repeat(ctx, rt_vf32(y, R, D, D, RT_DEVICE_CPU),
                    rt_vf32(rep, R, k * D, k * D, RT_DEVICE_CPU));
    for (int64_t r = 0; r < R; r++)
        for (int64_t t = 0; t < k; t++)
            assert_memory_equal(rep + (r * k + t) * D, y + r * D, (size_t)D * sizeof(float));
}

/* The members' sums past one block of columns (rt_simd_member_sum keeps
 * 256 at a time), in member order: the float of the double sum. */
static void test_ensemble_wide(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(32);
    enum { R = 3, K = 3, D = 300 };
    static float x[R * K * D], y[R * D];
    tu_fill(&g, x, R * K * D, -6, 6);
    for (int op = RT_ENS_SUM; op <= RT_ENS_MEAN; op++) {
        rt_k_ens_reduce(ctx, (rt_ens_op)op, rt_vf32(x, R, K * D, K * D, RT_DEVICE_CPU),
                        rt_vf32(y, R, D, D, RT_DEVICE_CPU));
        for (int r = 0; r < R; r++)
            for (int j = 0; j < D; j++) {
                double s = 0.0;
                for (int t = 0; t < K; t++)
                    s += x[(r * K + t) * D + j];
                assert_true(y[r * D + j] == (float)(op == RT_ENS_MEAN ? s / K : s));
            }
    }
}

/* rt_k_scale_act_*: the same floats as the ops it fuses run one after the
 * other (tokens with d = 1, the ReLU, the dropout; backward: the dropout's
 * scale, the ReLU's mask by y, the tokens' sums), which hold on every CPU
 * (the forward is not contracted, the backward's products are single);
 * the forward against a double reference; dx written over x. */
static void test_scale_act(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(33);
    enum { R = 29, C = 37 };
    static float x[R * C], w[C], b[C], y[R * C], y2[R * C], dy[R * C], dy2[R * C], dx[R * C],
        dx2[R * C], dy0[R * C], dw[C], db[C], dw2[C], db2[C];
    const int64_t step = 17;
    const uint64_t seed = 0x1234567890ull;
#define V(p) rt_vf32(p, R, C, C, RT_DEVICE_CPU)
    for (int rep = 0; rep < 4; rep++) {
        const rt_act act = rep == 0 ? RT_ACT_NONE : RT_ACT_RELU;
        const float rate = rep >= 2 ? 0.25f : 0.0f;
        const bool bias = rep != 1;
        tu_fill(&g, x, R * C, -3, 3);
        tu_fill(&g, w, C, -1, 1);
        tu_fill(&g, b, C, -1, 1);
        tu_fill(&g, dy, R * C, -1, 1);
        rt_k_scale_act_fwd(ctx, V(x), w, bias ? b : NULL, act, rate, seed, 0x7002u, &step, V(y));
        rt_k_tokens_fwd(ctx, V(x), w, bias ? b : NULL, 1, V(y2));
        rt_k_act_fwd(ctx, act, V(y2), V(y2));
        rt_k_dropout(ctx, V(y2), rate, seed, 0x7002u, &step);
        assert_memory_equal(y, y2, sizeof y);
        int dropped = 0;
        for (int64_t e = 0; e < R * C; e++) {
            double v = (double)x[e] * w[e % C] + (bias ? b[e % C] : 0.0);
            v = act == RT_ACT_RELU && v < 0 ? 0.0 : v;
            if (rate > 0.0f && rt_rng_uniform(seed, 0x7002u, (uint64_t)step, (uint64_t)e) < rate) {
                v = 0.0;
                dropped++;
            }
            v /= 1.0 - rate;
            assert_true(fabs(y[e] - v) <= 1e-6 * (1 + fabs(v)));
        }
        assert_true(rate == 0.0f ? dropped == 0 : dropped > R * C / 8);
        /* backward both ways from the same dy (scratch to the op: a copy) */
        memcpy(dy0, dy, sizeof dy);
        memcpy(dy2, dy, sizeof dy);
        rt_k_scale_act_bwd(ctx, V(x), w, V(y), act, rate, V(dy), dw, bias ? db : NULL, V(dx));
        rt_k_scale(ctx, dy2, R * C, 1.0f / (1.0f - rate));
        rt_k_act_bwd(ctx, act, V(y), V(dy2), V(dy2));
        rt_k_tokens_bwd(ctx, V(x), w, V(dy2), 1, dw2, bias ? db2 : NULL, V(dx2));
        assert_memory_equal(dx, dx2, sizeof dx);
        assert_memory_equal(dw, dw2, sizeof dw);
        if (bias)
            assert_memory_equal(db, db2, sizeof db);
        /* dx over x: the sums read x before it is written */
        memcpy(dy2, dy0, sizeof dy);
        rt_k_scale_act_bwd(ctx, V(x), w, V(y), act, rate, V(dy2), dw2, NULL, V(x));
        assert_memory_equal(x, dx, sizeof dx);
        assert_memory_equal(dw, dw2, sizeof dw);
    }
#undef V
}

/* rt_k_scale_pair_fwd and _bwd: the same bits as the two rt_k_scale_act_*
 * they fuse (backward: the second's, whose input is the first's output,
 * then the first's from the dx it wrote), for both acts, dropout, with and without a bias,
 * dx fp32, absent or (where the CPU has bf16 GEMMs) bf16; past a chunk of
 * columns and across threads; dy2 left as it was. */
static void test_scale_pair(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(34);
    const bool h16 = rt_cpu_bf16_kernel() != NULL;
    for (int shape = 0; shape < 2; shape++) {
        const int64_t R = shape ? 60 : 29, C = shape ? 600 : 37, n = R * C;
        float *f = malloc((size_t)(8 * n + 3 * C) * sizeof *f);
        float *x = f, *y = x + n, *dy2 = y + n, *t = dy2 + n, *dyb = t + n, *dx = dyb + n,
              *dxr = dx + n, *keep = dxr + n, *w = keep + n, *b = w + C, *w2 = b + C;
        uint16_t *h = malloc((size_t)n * 8), *hr = h + n, *h3 = hr + n, *h4 = h3 + n;
        const int64_t step = 5;
#define V(p) rt_vf32(p, R, C, C, RT_DEVICE_CPU)
        for (int rep = 0; rep < 12; rep++) {
            const rt_act act = rep % 2 ? RT_ACT_RELU : RT_ACT_NONE;
            const float rate = act == RT_ACT_RELU && rep % 4 == 3 ? 0.2f : 0.0f;
            const bool bias = rep % 3 != 0;
            const int out = rep / 4; /* dx: fp32, none, bf16 */
            if (out == 2 && !h16)
                continue;
            tu_fill(&g, x, (size_t)n, -3, 3);
            tu_fill(&g, w, (size_t)C, -1, 1);
            tu_fill(&g, b, (size_t)C, -1, 1);
            tu_fill(&g, w2, (size_t)C, -1, 1);
            tu_fill(&g, dy2, (size_t)n, -1, 1);
            rt_kctx_set_bf16(ctx, out == 2);
            rt_k_scale_act_fwd(ctx, V(x), w, bias ? b : NULL, act, rate, 99, 0x7003u, &step, V(y));
            /* forward: y and y * w2 in one pass, as the two ops give them
             * (y2, then y too, in bf16 where the CPU has it) */
            const float *bb = bias ? b : NULL;
            rt_k_scale_pair_fwd(ctx, V(x), w, bb, act, rate, 99, 0x7003u, &step, V(dyb), w2, V(dx));
            rt_k_scale_act_fwd(ctx, V(y), w2, NULL, RT_ACT_NONE, 0.0f, 0, 0, &step, V(dxr));
            assert_memory_equal(dyb, y, (size_t)n * 4);
            assert_memory_equal(dx, dxr, (size_t)n * 4);
            if (h16) {
                rt_kctx_set_bf16(ctx, true);
                rt_view b1 = {h, R, C, C, RT_BF16, RT_DEVICE_CPU},
                        b2 = {hr, R, C, C, RT_BF16, RT_DEVICE_CPU},
                        b3 = {h3, R, C, C, RT_BF16, RT_DEVICE_CPU};
                rt_k_scale_pair_fwd(ctx, V(x), w, bb, act, rate, 99, 0x7003u, &step, V(dyb), w2,
                                    b1);
                rt_k_scale_act_fwd(ctx, V(y), w2, NULL, RT_ACT_NONE, 0.0f, 0, 0, &step, b2);
                assert_memory_equal(h, hr, (size_t)n * 2);
                /* and the single op's y in bf16 (an unpaired r: block 1's) */
                rt_k_scale_act_fwd(ctx, V(x), w, bb, act, rate, 99, 0x7003u, &step, b3);
                rt_k_scale_act_fwd(ctx, V(x), w, bb, act, rate, 99, 0x7003u, &step, V(dyb));
                tu_bf16_bits(dyb, (size_t)n, h4);
                assert_memory_equal(h3, h4, (size_t)n * 2);
                rt_kctx_set_bf16(ctx, out == 2);
            }
            memcpy(keep, dy2, (size_t)n * 4);
            memcpy(t, dy2, (size_t)n * 4);
            /* dw2, dw, db: the two ops', the fused op's */
            float *ref = malloc((size_t)(3 * C) * 4), *got = malloc((size_t)(3 * C) * 4);
            rt_view rdx = out == 1   ? rt_vf32(NULL, R, C, C, RT_DEVICE_CPU)
                          : out == 2 ? (rt_view){hr, R, C, C, RT_BF16, RT_DEVICE_CPU}
                                     : V(dxr);
            rt_view gdx = out == 1   ? rdx
                          : out == 2 ? (rt_view){h, R, C, C, RT_BF16, RT_DEVICE_CPU}
                                     : V(dx);
            rt_k_scale_act_bwd(ctx, V(y), w2, V(y), RT_ACT_NONE, 0.0f, V(t), ref, NULL, V(dyb));
            rt_k_scale_act_bwd(ctx, V(x), w, V(y), act, rate, V(dyb), ref + C,
                               bias ? ref + 2 * C : NULL, rdx);
            rt_k_scale_pair_bwd(ctx, V(x), w, V(y), act, rate, w2, V(dy2), got, got + C,
                                bias ? got + 2 * C : NULL, gdx);
            assert_memory_equal(got, ref, (size_t)(bias ? 3 : 2) * C * 4);
            if (out == 0)
                assert_memory_equal(dx, dxr, (size_t)n * 4);
            if (out == 2)
                assert_memory_equal(h, hr, (size_t)n * 2);
            assert_memory_equal(dy2, keep, (size_t)n * 4);
            free(ref);
            free(got);
        }
#undef V
        rt_kctx_set_bf16(ctx, false);
        free(f);
        free(h);
    }
}

/* np.interp(x, xp, fp) with xp ascending (ties allowed): the last xp <= x */
static double np_interp(double x, const double *xp, const double *fp, int n)
{
    if (x < xp[0])
        return fp[0];
    if (x >= xp[n - 1])
        return fp[n - 1];
    int j = 0;
    while (j + 1 < n && xp[j + 1] <= x)
        j++;
    return fp[j] + (x - xp[j]) / (xp[j + 1] - xp[j]) * (fp[j + 1] - fp[j]);
}

/* continuous_norm = quantile against sklearn's QuantileTransformer written
 * out: p = (np.interp up the quantiles + np.interp down them) / 2, clipped
 * to [1e-7, 1 - 1e-7], y = Φ^-1(p) (by bisection on erfc here).  Columns
 * with a tied run inside, ties at both ends, one constant; values on the
 * quantiles, between, beyond, on the ties. */
static void test_quantile(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(33);
    enum { NQ = 9, NC = 3, R = 200 };
    const float q[NC][NQ] = {
        {-2, -1, 0, 0, 0, 1, 2.5f, 4, 9}, {1, 1, 1, 2, 3, 4, 5, 5, 5}, {7, 7, 7, 7, 7, 7, 7, 7, 7}};
    float x[R * NC], y[R * NC];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < NC; c++) /* every fourth row a quantile itself */
            x[r * NC + c] = r % 4 == 0 ? q[c][tu_int(&g, 0, NQ - 1)] : (float)tu_range(&g, -4, 12);
    rt_k_quantile_fwd(ctx, rt_vf32(x, R, NC, NC, RT_DEVICE_CPU), &q[0][0], NQ,
                      rt_vf32(y, R, NC, NC, RT_DEVICE_CPU));
    double worst = 0;
    for (int c = 0; c < NC; c++) {
        double xp[NQ], fp[NQ], nxp[NQ], nfp[NQ];
        for (int j = 0; j < NQ; j++) {
            xp[j] = q[c][j], fp[j] = (double)j / (NQ - 1);
            nxp[j] = -q[c][NQ - 1 - j], nfp[j] = -(double)(NQ - 1 - j) / (NQ - 1);
        }
        for (int r = 0; r < R; r++) {
            const double v = x[r * NC + c];
            double p = 0.5 * (np_interp(v, xp, fp, NQ) - np_interp(-v, nxp, nfp, NQ));
            p = fmin(fmax(p, 1e-7), 1 - 1e-7);
            double lo = -10, hi = 10; /* Φ(z) = p */
            for (int it = 0; it < 200; it++) {
                const double mid = 0.5 * (lo + hi);
                if (0.5 * erfc(-mid / sqrt(2.0)) < p)
                    lo = mid;
                else
                    hi = mid;
            }
            const double e = fabs(y[r * NC + c] - 0.5 * (lo + hi)) / fmax(1.0, fabs(lo));
            worst = fmax(worst, e);
            if (e > 2e-6)
                fail_msg("column %d, x = %g: y = %.9g, sklearn's %.9g (p = %.9g)", c, v,
                         (double)y[r * NC + c], 0.5 * (lo + hi), p);
        }
    }
    /* the constant column: its value is the middle (0), others the clipped ends */
    for (int r = 0; r < R; r++)
        if (x[r * NC + 2] == 7)
            assert_true(fabsf(y[r * NC + 2]) < 1e-6f);
    printf("quantile: %d values, worst relative difference %.3g\n", R * NC, worst);
}

/* continuous_norm = robust: RealMLP's smooth clip of (x - center) * scale,
 * in double here: odd, about the identity near 0, bounded by 3 */
static void test_robust(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(34);
    enum { R = 50, NC = 4 };
    float x[R * NC], y[R * NC], c[NC] = {0, 1.5f, -2, 100}, sc[NC] = {1, 0.5f, 2, 1e-3f};
    tu_fill(&g, x, R * NC, -50, 150);
    rt_k_robust_fwd(ctx, rt_vf32(x, R, NC, NC, RT_DEVICE_CPU), c, sc,
                    rt_vf32(y, R, NC, NC, RT_DEVICE_CPU));
    for (int r = 0; r < R; r++)
        for (int i = 0; i < NC; i++) {
            const double z = ((double)x[r * NC + i] - c[i]) * sc[i], want = z / sqrt(1 + z * z / 9);
            if (!(fabs(y[r * NC + i] - want) <= 1e-6 * (1 + fabs(want))) ||
                fabs(y[r * NC + i]) >= 3)
                fail_msg("robust (%g - %g) * %g: %.9g, want %.9g", (double)x[r * NC + i],
                         (double)c[i], (double)sc[i], (double)y[r * NC + i], want);
        }
}

/* The piecewise-linear encoding against its definition in double, a bin
 * of zero width among them, and its gradient by x against central
 * differences of the encoding (x kept off the edges). */
static double ple_ref(double x, const float *e, int t, int T)
{
    const double w = (double)e[t + 1] - e[t];
    if (!(w > 0))
        return x >= e[t] ? 1.0 : 0.0;
    double v = (x - e[t]) / w;
    if (t > 0 && v < 0)
        v = 0;
    if (t < T - 1 && v > 1)
        v = 1;
    return v;
}

static void test_ple(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(35);
    enum { R = 40, NC = 2, T = 5 };
    const float e[NC][T + 1] = {{-2, -1, 0, 0, 1.5f, 3}, {0.5f, 1, 2, 4, 8, 16}};
    float x[R * NC], y[R * NC * T], dy[R * NC * T], dx[R * NC];
    for (int i = 0; i < R * NC; i++) { /* off the edges by more than the difference's step */
        do
            x[i] = (float)tu_range(&g, -4, 20);
        while (fabsf(x[i] - roundf(x[i] * 2) / 2) < 1e-2f);
    }
    tu_fill(&g, dy, R * NC * T, -1, 1);
    rt_k_ple_fwd(ctx, rt_vf32(x, R, NC, NC, RT_DEVICE_CPU), &e[0][0], T,
                 rt_vf32(y, R, NC * T, NC * T, RT_DEVICE_CPU));
    rt_k_ple_bwd(ctx, rt_vf32(x, R, NC, NC, RT_DEVICE_CPU), &e[0][0], T,
                 rt_vf32(dy, R, NC * T, NC * T, RT_DEVICE_CPU),
                 rt_vf32(dx, R, NC, NC, RT_DEVICE_CPU));
    for (int r = 0; r < R; r++)
        for (int i = 0; i < NC; i++) {
            double fd = 0;
            for (int t = 0; t < T; t++) {
                const double want = ple_ref(x[r * NC + i], e[i], t, T);
                if (fabs(y[(r * NC + i) * T + t] - want) > 1e-6 * (1 + fabs(want)))
                    fail_msg("ple x = %g bin %d: %g, want %g", (double)x[r * NC + i], t,
                             (double)y[(r * NC + i) * T + t], want);
                const double h = 1e-4;
                fd += dy[(r * NC + i) * T + t] *
                      (ple_ref(x[r * NC + i] + h, e[i], t, T) -
                       ple_ref(x[r * NC + i] - h, e[i], t, T)) /
                      (2 * h);
            }
            if (fabs(dx[r * NC + i] - fd) > 1e-4 * (1 + fabs(fd)))
                fail_msg("ple dx at x = %g: %g, finite difference %g", (double)x[r * NC + i],
                         (double)dx[r * NC + i], fd);
        }
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ensemble),  cmocka_unit_test(test_ensemble_wide),
        cmocka_unit_test(test_scale_act), cmocka_unit_test(test_scale_pair),
        cmocka_unit_test(test_quantile),  cmocka_unit_test(test_robust),
        cmocka_unit_test(test_ple),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
