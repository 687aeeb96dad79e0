/* test_kernels_cpu.c — every CPU op against a plain double-precision
 * reference, and every backward against central finite differences of that
 * reference (random shapes and inputs each run; RT_TEST_SEED reproduces).
 *
 * Method: for an op y = f(θ), take L = Σ R ⊙ y with random R.  The analytic
 * gradient is the op's backward fed dy = R (float); the numeric one is
 * (L(θ+h) − L(θ−h)) / 2h with L evaluated by the double reference, h = 1e-6.
 * The finite difference is accurate to ~1e-8 here, so the tolerance below
 * is set by float rounding in the backward (rtol 2e-3, atol 2e-4 relative to
 * the gradient scale), not by the numeric side.  The GEMM under the dense
 * layers is checked bit for bit in test_gemm_cpu.c. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cpu_simd.h"
#include "rt_kernels.h"
#include "rt_rng.h"
#include "test_util.h"

#define H 1e-6
#define G_RTOL 2e-3
#define G_ATOL 2e-4

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

static rt_view vf(float *p, int64_t r, int64_t c) { return rt_vf32(p, r, c, c, RT_DEVICE_CPU); }
static float *fal(size_t n) { return calloc(n ? n : 1, sizeof(float)); }
static double *dal(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

/* ---- RNG ------------------------------------------------------------------ */

static void test_philox_kat(void **state)
{
    (void)state;
    /* Random123 known-answer vectors for Philox4x32-10 */
    rt_u32x4 z = {{0, 0, 0, 0}};
    rt_u32x4 r = rt_philox4x32(z, 0, 0);
    assert_true(r.v[0] == 0x6627e8d5u && r.v[1] == 0xe169c58du && r.v[2] == 0xbc57ac4cu &&
                r.v[3] == 0x9b00dbd8u);
    rt_u32x4 f = {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}};
    r = rt_philox4x32(f, 0xffffffffu, 0xffffffffu);
    assert_true(r.v[0] == 0x408f276du && r.v[1] == 0x41c83b0eu && r.v[2] == 0xa20bc7c6u &&
                r.v[3] == 0x6d5451fdu);
}

/* Each dropout this CPU can run (AVX-512, AVX2) against the portable loop,
 * bit for bit, on random values, lengths and first elements — misaligned
 * starts and ends, and element numbers whose Philox counter crosses 2^32. */
static void test_dropout_isas(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(7);
    float *a = fal(2000), *b = fal(2000), *c = fal(2000);
    int ran[2] = {0, 0};
    for (int t = 0; t < 300; t++) {
        const int64_t n = tu_int(&g, 0, 1999);
        uint64_t e0 = (uint64_t)tu_int(&g, 0, 1 << 20);
        if (t % 3 == 0) /* counters around 2^32 (element 2^34) */
            e0 += (1ull << 34) - 1000;
        const float rate = (float)tu_range(&g, 0.05, 0.9);
        const uint32_t k0 = (uint32_t)tu_int(&g, 0, 1 << 30), k1 = (uint32_t)t * 2654435761u;
        const uint64_t step = (uint64_t)tu_int(&g, 0, 1 << 30) << (t % 2 ? 20 : 0);
        for (int64_t i = 0; i < n; i++)
            a[i] = b[i] = c[i] = (float)tu_range(&g, -4, 4);
        rt_simd_dropout_plain(b, n, e0, rate, k0, k1, step);
        const char *isas[2] = {"avx512", "avx2"};
        for (int k = 0; k < 2; k++) {
            memcpy(a, c, (size_t)n * sizeof *a);
            if (!rt_simd_dropout_isa(isas[k], a, n, e0, rate, k0, k1, step))
                continue;
            ran[k]++;
            if (n && memcmp(a, b, (size_t)n * sizeof *a) != 0)
                fail_msg("dropout (%s) differs from the plain loop: n %lld, e0 %llu", isas[k],
                         (long long)n, (unsigned long long)e0);
        }
        memcpy(a, c, (size_t)n * sizeof *a);
        rt_simd_dropout(a, n, e0, rate, k0, k1, step); /* the one that runs */
        if (n && memcmp(a, b, (size_t)n * sizeof *a) != 0)
            fail_msg("dropout differs from the plain loop: n %lld", (long long)n);
    }
    printf("dropout kernels compared with the plain loop: avx512 %s, avx2 %s\n",
           ran[0] ? "yes" : "no (CPU)", ran[1] ? "yes" : "no (CPU)");
    free(a);
    free(b);
    free(c);
}

static void test_dropout_mask(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(1);
    const int64_t R = tu_int(&g, 50, 300), C = tu_int(&g, 1, 700), ld = C + tu_int(&g, 0, 5);
    const float rate = (float)tu_range(&g, 0.1, 0.7);
    const uint64_t seed = (uint64_t)tu_int(&g, 0, 1 << 30);
    int64_t step = tu_int(&g, 0, 1000);
    float *x = fal((size_t)(R * ld)), *c = fal((size_t)(R * C));
    for (int64_t i = 0; i < R * ld; i++)
        x[i] = 1.0f;
    for (int64_t i = 0; i < R * C; i++)
        c[i] = 1.0f;
    rt_k_dropout(ctx, rt_vf32(x, R, C, ld, RT_DEVICE_CPU), rate, seed, 3, &step);
    rt_k_dropout(ctx, vf(c, R, C), rate, seed, 3, &step);
    int64_t zeros = 0;
    const float kept = 1.0f / (1.0f - rate);
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < C; j++) {
            float v = x[r * ld + j];
            assert_true(v == 0.0f || v == kept);
            assert_true(v == c[r * C + j]); /* element numbering ignores ld */
            zeros += v == 0.0f;
            /* the reference definition, element by element */
            bool keep = rt_rng_uniform(seed, 3, (uint64_t)step, (uint64_t)(r * C + j)) >= rate;
            assert_true(keep == (v != 0.0f));
        }
    double frac = (double)zeros / (double)(R * C);
    if (R * C >= 20000 && fabs(frac - rate) > 0.02)
        fail_msg("dropped fraction %.4f, rate %.4f", frac, rate);
    /* the same key applied again reuses the mask (backward = forward) */
    rt_k_dropout(ctx, vf(c, R, C), rate, seed, 3, &step);
    for (int64_t i = 0; i < R * C; i++)
        assert_true(c[i] == 0.0f || fabsf(c[i] - kept * kept) < 1e-5f);
    /* another step draws another mask */
    int64_t next = step + 1, differ = 0;
    for (int64_t i = 0; i < R * C; i++)
        c[i] = 1.0f;
    rt_k_dropout(ctx, vf(c, R, C), rate, seed, 3, &next);
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < C; j++)
            differ += (c[r * C + j] == 0.0f) != (x[r * ld + j] == 0.0f);
    assert_true(differ > 0);
    free(x);
    free(c);
}

/* ---- embedding ----------------------------------------------------------- */

/* Columns of different widths, their outputs apart (gaps between them). */
static void test_embedding(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(2);
    for (int rep = 0; rep < 5; rep++) {
        const int64_t B = tu_int(&g, 1, 200), C = tu_int(&g, 1, 6);
        rt_embed_col cols[6];
        int64_t R = 0, W = 0;
        for (int c = 0; c < C; c++) {
            cols[c].vocab = (int32_t)tu_int(&g, 1, 9); /* small: indices repeat */
            cols[c].dim = (int32_t)tu_int(&g, 1, 12);
            cols[c].toff = R;
            cols[c].ooff = (int32_t)(W + tu_int(&g, 0, 3));
            R += (int64_t)cols[c].vocab * cols[c].dim;
            W = cols[c].ooff + cols[c].dim;
        }
        const int64_t ld = W + tu_int(&g, 0, 7);
        int32_t *idx = calloc((size_t)(B * C), 4);
        for (int64_t b = 0; b < B; b++)
            for (int c = 0; c < C; c++)
                idx[b * C + c] = (int32_t)tu_int(&g, 0, cols[c].vocab - 1);
        float *tab = fal((size_t)R), *out = fal((size_t)(B * ld));
        float *dout = fal((size_t)(B * ld)), *dtab = fal((size_t)R);
        tu_fill(&g, tab, (size_t)R, -1, 1);
        tu_fill(&g, dout, (size_t)(B * ld), -1, 1);
        tu_poison(out, (size_t)(B * ld));
        tu_poison(dtab, (size_t)R);
        rt_view vidx = rt_vi32(idx, B, C, C, RT_DEVICE_CPU);
        rt_k_embed_fwd(ctx, vidx, cols, tab, rt_vf32(out, B, W, ld, RT_DEVICE_CPU));
        for (int64_t b = 0; b < B; b++)
            for (int c = 0; c < C; c++)
                for (int j = 0; j < cols[c].dim; j++)
                    assert_true(out[b * ld + cols[c].ooff + j] ==
                                tab[cols[c].toff + idx[b * C + c] * cols[c].dim + j]);
        rt_k_embed_bwd(ctx, vidx, cols, rt_vf32(dout, B, W, ld, RT_DEVICE_CPU), dtab, R);
        /* L = Σ dout ⊙ out is linear in the tables: its gradient, summed in
         * double, is the reference; the finite difference agrees with it */
        double *ref = dal((size_t)R);
        for (int64_t b = 0; b < B; b++)
            for (int c = 0; c < C; c++)
                for (int j = 0; j < cols[c].dim; j++)
                    ref[cols[c].toff + idx[b * C + c] * cols[c].dim + j] +=
                        dout[b * ld + cols[c].ooff + j];
        double *got = dal((size_t)R);
        for (int64_t i = 0; i < R; i++)
            got[i] = dtab[i];
        assert_true(tu_close_d("embed_bwd", got, ref, (size_t)R, 1e-5, 1e-5));
        /* finite differences on a few entries */
        for (int k = 0; k < 10; k++) {
            int64_t e = tu_int(&g, 0, R - 1);
            double lp = 0, lm = 0;
            for (int64_t b = 0; b < B; b++)
                for (int c = 0; c < C; c++)
                    for (int j = 0; j < cols[c].dim; j++) {
                        int64_t te = cols[c].toff + idx[b * C + c] * cols[c].dim + j;
                        double t = tab[te];
                        lp += dout[b * ld + cols[c].ooff + j] * (t + (te == e ? H : 0));
                        lm += dout[b * ld + cols[c].ooff + j] * (t - (te == e ? H : 0));
                    }
            double fd = (lp - lm) / (2 * H);
            assert_true(fabs(fd - dtab[e]) <= 1e-4 + 1e-4 * fabs(fd));
        }
        free(idx);
        free(tab);
        free(out);
        free(dout);
        free(dtab);
        free(ref);
        free(got);
    }
}

/* ---- batch norm ----------------------------------------------------------- */

/* L = Σ R ⊙ BN_train(x; γ, β), in double. */
static double bn_loss(const double *x, const double *gam, const double *bet, const double *R,
                      int64_t B, int64_t F, double eps)
{
    double L = 0;
    for (int64_t f = 0; f < F; f++) {
        double mu = 0, var = 0;
        for (int64_t b = 0; b < B; b++)
            mu += x[b * F + f];
        mu /= (double)B;
        for (int64_t b = 0; b < B; b++)
            var += (x[b * F + f] - mu) * (x[b * F + f] - mu);
        var /= (double)B;
        for (int64_t b = 0; b < B; b++)
            L += R[b * F + f] * (gam[f] * (x[b * F + f] - mu) / sqrt(var + eps) + bet[f]);
    }
    return L;
}

static void test_batchnorm(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(3);
    for (int rep = 0; rep < 4; rep++) {
        const int64_t B = tu_int(&g, 2, 40), F = rep == 0 ? 70 : tu_int(&g, 1, 20);
        const float eps = 1e-3f, mom = 0.99f;
        float *x = fal((size_t)(B * F)), *y = fal((size_t)(B * F)), *dy = fal((size_t)(B * F));
        float *dx = fal((size_t)(B * F)), *gam = fal((size_t)F), *bet = fal((size_t)F);
        float *rm = fal((size_t)F), *rv = fal((size_t)F), *sm = fal((size_t)F), *si = fal((size_t)F);
        float *dg = fal((size_t)F), *db = fal((size_t)F);
        for (int64_t f = 0; f < F; f++) {
            double off = tu_range(&g, -50, 50), sc = tu_range(&g, 0.1, 20);
            for (int64_t b = 0; b < B; b++)
                x[b * F + f] = (float)(off + sc * tu_range(&g, -1, 1));
            gam[f] = (float)tu_range(&g, 0.5, 1.5);
            bet[f] = (float)tu_range(&g, -1, 1);
            rm[f] = (float)tu_range(&g, -1, 1);
            rv[f] = (float)tu_range(&g, 0.5, 2);
        }
        float *rm0 = fal((size_t)F), *rv0 = fal((size_t)F);
        memcpy(rm0, rm, (size_t)F * 4);
        memcpy(rv0, rv, (size_t)F * 4);
        tu_fill(&g, dy, (size_t)(B * F), -1, 1);
        tu_poison(y, (size_t)(B * F));
        rt_k_bn_fwd(ctx, vf(x, B, F), gam, bet, rm, rv, mom, eps, true, sm, si, vf(y, B, F));
        /* forward and moving statistics against the double reference */
        double *yr = dal((size_t)(B * F)), *yg = dal((size_t)(B * F));
        double rmr[80], rvr[80], rmg[80], rvg[80], mur[80], varr[80];
        for (int64_t f = 0; f < F; f++) {
            double mu = 0, var = 0;
            for (int64_t b = 0; b < B; b++)
                mu += x[b * F + f];
            mu /= (double)B;
            for (int64_t b = 0; b < B; b++)
                var += ((double)x[b * F + f] - mu) * ((double)x[b * F + f] - mu);
            var /= (double)B;
            mur[f] = mu;
            varr[f] = var;
            for (int64_t b = 0; b < B; b++) {
                yr[b * F + f] = gam[f] * ((double)x[b * F + f] - mu) / sqrt(var + eps) + bet[f];
                yg[b * F + f] = y[b * F + f];
            }
            rmr[f] = rm0[f] * (double)mom + mu * (1.0 - mom);
            rvr[f] = rv0[f] * (double)mom + var * (1.0 - mom);
            rmg[f] = rm[f];
            rvg[f] = rv[f];
        }
        /* float output of values of order 1: a few float ulps */
        assert_true(tu_close_d("bn_fwd(train)", yg, yr, (size_t)(B * F), 1e-5, 1e-5));
        assert_true(tu_close_d("bn moving mean", rmg, rmr, (size_t)F, 1e-5, 1e-6));
        assert_true(tu_close_d("bn moving var", rvg, rvr, (size_t)F, 1e-5, 1e-6));
        /* the same statistics given (sync BN's global batch, in double): the
         * same y to within an ulp (these, summed in another order, may
         * differ from the kernel's own in their last bits) */
        float *y2 = fal((size_t)(B * F));
        rt_k_bn_fwd_given(ctx, vf(x, B, F), gam, bet, mur, varr, eps, vf(y2, B, F));
        for (int64_t i = 0; i < B * F; i++)
            if (!(fabsf(y2[i] - y[i]) <= 1.2e-7f * fabsf(y[i]) + 1e-30f))
                fail_msg("bn_fwd_given: element %lld: %.9g, training mode %.9g", (long long)i,
                         (double)y2[i], (double)y[i]);
        free(y2);
        /* eval mode uses the moving statistics */
        rt_k_bn_fwd(ctx, vf(x, B, F), gam, bet, rm, rv, mom, eps, false, NULL, NULL, vf(y, B, F));
        for (int64_t b = 0; b < B; b++)
            for (int64_t f = 0; f < F; f++) {
                yr[b * F + f] = gam[f] * ((double)x[b * F + f] - rm[f]) / sqrt((double)rv[f] + eps) + bet[f];
                yg[b * F + f] = y[b * F + f];
            }
        assert_true(tu_close_d("bn_fwd(eval)", yg, yr, (size_t)(B * F), 1e-4, 1e-5));

        /* backward against finite differences of L = Σ dy ⊙ y */
        tu_poison(dx, (size_t)(B * F));
        rt_k_bn_bwd(ctx, vf(x, B, F), vf(dy, B, F), gam, sm, si, dg, db, vf(dx, B, F));
        double *xd = dal((size_t)(B * F)), *Rd = dal((size_t)(B * F)), gd[80], bd[80];
        for (int64_t i = 0; i < B * F; i++) {
            xd[i] = x[i];
            Rd[i] = dy[i];
        }
        for (int64_t f = 0; f < F; f++) {
            gd[f] = gam[f];
            bd[f] = bet[f];
        }
        double *fdx = dal((size_t)(B * F)), *adx = dal((size_t)(B * F));
        double fdg[80], fdb[80], adg[80], adb[80];
        for (int64_t i = 0; i < B * F; i++) {
            double h = H * fmax(1.0, fabs(xd[i])), s = xd[i];
            xd[i] = s + h;
            double lp = bn_loss(xd, gd, bd, Rd, B, F, eps);
            xd[i] = s - h;
            double lm = bn_loss(xd, gd, bd, Rd, B, F, eps);
            xd[i] = s;
            fdx[i] = (lp - lm) / (2 * h);
            adx[i] = dx[i];
        }
        for (int64_t f = 0; f < F; f++) {
            double s = gd[f];
            gd[f] = s + H;
            double lp = bn_loss(xd, gd, bd, Rd, B, F, eps);
            gd[f] = s - H;
            double lm = bn_loss(xd, gd, bd, Rd, B, F, eps);
            gd[f] = s;
            fdg[f] = (lp - lm) / (2 * H);
            s = bd[f];
            bd[f] = s + H;
            lp = bn_loss(xd, gd, bd, Rd, B, F, eps);
            bd[f] = s - H;
            lm = bn_loss(xd, gd, bd, Rd, B, F, eps);
            bd[f] = s;
            fdb[f] = (lp - lm) / (2 * H);
            adg[f] = dg[f];
            adb[f] = db[f];
        }
        /* dx carries 1/std of each feature (std up to ~20 here): absolute
         * tolerance scaled to the largest gradient */
        double scale = 0;
        for (int64_t i = 0; i < B * F; i++)
            scale = fmax(scale, fabs(fdx[i]));
        assert_true(tu_close_d("bn_bwd dx", adx, fdx, (size_t)(B * F), G_ATOL * fmax(scale, 1), G_RTOL));
        assert_true(tu_close_d("bn_bwd dgamma", adg, fdg, (size_t)F, G_ATOL * sqrt((double)B), G_RTOL));
        assert_true(tu_close_d("bn_bwd dbeta", adb, fdb, (size_t)F, G_ATOL * sqrt((double)B), G_RTOL));
        free(x); free(y); free(dy); free(dx); free(gam); free(bet); free(rm); free(rv);
        free(sm); free(si); free(dg); free(db); free(rm0); free(rv0); free(yr); free(yg);
        free(xd); free(Rd); free(fdx); free(adx);
    }
}

/* ---- dense ----------------------------------------------------------------- */

static double dense_loss(const double *x, const double *w, const double *b, const double *R,
                         int64_t B, int64_t in, int64_t out, rt_act act)
{
    double L = 0;
    for (int64_t r = 0; r < B; r++)
        for (int64_t o = 0; o < out; o++) {
            double z = b[o];
            for (int64_t i = 0; i < in; i++)
                z += x[r * in + i] * w[o * in + i];
            if (act == RT_ACT_RELU && z < 0)
                z = 0;
            L += R[r * out + o] * z;
        }
    return L;
}

/* central difference of dense_loss in one coordinate of p */
static double fd_at(double *p, int64_t i, const double *x, const double *w, const double *b,
                    const double *R, int64_t B, int64_t in, int64_t out, rt_act act)
{
    double s = p[i], h = H * fmax(1.0, fabs(s));
    p[i] = s + h;
    double lp = dense_loss(x, w, b, R, B, in, out, act);
    p[i] = s - h;
    double lm = dense_loss(x, w, b, R, B, in, out, act);
    p[i] = s;
    return (lp - lm) / (2 * h);
}

static void test_dense(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(4);
    for (int rep = 0; rep < 6; rep++) {
        rt_act act = rep % 2 ? RT_ACT_RELU : RT_ACT_NONE;
        const int64_t B = tu_int(&g, 1, 24), in = tu_int(&g, 1, 40), out = tu_int(&g, 1, 30);
        /* x is a column view of a wider matrix, as the model's concat input */
        const int64_t xld = in + tu_int(&g, 0, 5), xoff = xld - in;
        float *xw = fal((size_t)(B * xld)), *w = fal((size_t)(out * in)), *b = fal((size_t)out);
        float *y = fal((size_t)(B * out)), *dy = fal((size_t)(B * out));
        float *dw = fal((size_t)(out * in)), *db = fal((size_t)out), *dxw = fal((size_t)(B * xld));
        tu_fill(&g, xw, (size_t)(B * xld), -1, 1);
        tu_fill(&g, w, (size_t)(out * in), -0.5, 0.5);
        tu_fill(&g, b, (size_t)out, -0.2, 0.2);
        tu_fill(&g, dy, (size_t)(B * out), -1, 1);
        tu_poison(y, (size_t)(B * out));
        tu_poison(dw, (size_t)(out * in));
        tu_poison(db, (size_t)out);
        tu_poison(dxw, (size_t)(B * xld));
        rt_view xv = rt_view_cols(rt_vf32(xw, B, xld, xld, RT_DEVICE_CPU), xoff, in);
        rt_k_dense_fwd(ctx, xv, w, b, act, vf(y, B, out));
        double *xd = dal((size_t)(B * in)), *wd = dal((size_t)(out * in)), *bd = dal((size_t)out);
        double *Rd = dal((size_t)(B * out)), *yr = dal((size_t)(B * out)), *yg = dal((size_t)(B * out));
        for (int64_t r = 0; r < B; r++)
            for (int64_t i = 0; i < in; i++)
                xd[r * in + i] = xw[r * xld + xoff + i];
        for (int64_t i = 0; i < out * in; i++)
            wd[i] = w[i];
        for (int64_t o = 0; o < out; o++)
            bd[o] = b[o];
        for (int64_t r = 0; r < B; r++)
            for (int64_t o = 0; o < out; o++) {
                double z = bd[o];
                for (int64_t i = 0; i < in; i++)
                    z += xd[r * in + i] * wd[o * in + i];
                yr[r * out + o] = act == RT_ACT_RELU && z < 0 ? 0 : z;
                yg[r * out + o] = y[r * out + o];
            }
        /* sgemm in float: error grows like sqrt(in) ulps of the terms */
        assert_true(tu_close_d("dense_fwd", yg, yr, (size_t)(B * out), 1e-5 * sqrt((double)in), 1e-5));

        /* no bias (b and db NULL, TabM's shared layers): the values of a zero
         * bias, and the same dw and dx without its gradient summed */
        float *zb = calloc((size_t)out, 4), *y0 = fal((size_t)(B * out)),
              *y1 = fal((size_t)(B * out)), *dy0 = fal((size_t)(B * out)),
              *dy1 = fal((size_t)(B * out)), *dw0 = fal((size_t)(out * in)),
              *dw1 = fal((size_t)(out * in)), *dx0 = fal((size_t)(B * in)),
              *dx1 = fal((size_t)(B * in)), *db0 = fal((size_t)out);
        rt_k_dense_fwd(ctx, xv, w, zb, act, vf(y0, B, out));
        rt_k_dense_fwd(ctx, xv, w, NULL, act, vf(y1, B, out));
        memcpy(dy0, dy, (size_t)(B * out) * 4);
        memcpy(dy1, dy, (size_t)(B * out) * 4);
        rt_k_dense_bwd(ctx, xv, w, vf(y0, B, out), act, vf(dy0, B, out), dw0, db0, vf(dx0, B, in));
        rt_k_dense_bwd(ctx, xv, w, vf(y1, B, out), act, vf(dy1, B, out), dw1, NULL, vf(dx1, B, in));
        for (int64_t i = 0; i < B * out; i++)
            assert_true(y0[i] == y1[i] && dy0[i] == dy1[i]);
        assert_memory_equal(dw0, dw1, (size_t)(out * in) * 4);
        assert_memory_equal(dx0, dx1, (size_t)(B * in) * 4);
        free(zb);
        free(y0);
        free(y1);
        free(dy0);
        free(dy1);
        free(dw0);
        free(dw1);
        free(dx0);
        free(dx1);
        free(db0);

        /* backward: dz = dy ⊙ act'(y) is formed in place from dy = R */
        for (int64_t i = 0; i < B * out; i++)
            Rd[i] = dy[i];
        rt_view dxv = rt_view_cols(rt_vf32(dxw, B, xld, xld, RT_DEVICE_CPU), xoff, in);
        rt_k_dense_bwd(ctx, xv, w, vf(y, B, out), act, vf(dy, B, out), dw, db, dxv);
        double *a = dal((size_t)(out * in)), *n = dal((size_t)(out * in));
        for (int64_t i = 0; i < out * in; i++) {
            a[i] = dw[i];
            n[i] = fd_at(wd, i, xd, wd, bd, Rd, B, in, out, act);
        }
        assert_true(tu_close_d("dense_bwd dw", a, n, (size_t)(out * in), G_ATOL * sqrt((double)B), G_RTOL));
        for (int64_t o = 0; o < out; o++) {
            a[o] = db[o];
            n[o] = fd_at(bd, o, xd, wd, bd, Rd, B, in, out, act);
        }
        assert_true(tu_close_d("dense_bwd db", a, n, (size_t)out, G_ATOL * sqrt((double)B), G_RTOL));
        double *ax = dal((size_t)(B * in)), *nx = dal((size_t)(B * in));
        for (int64_t r = 0; r < B; r++)
            for (int64_t i = 0; i < in; i++) {
                ax[r * in + i] = dxw[r * xld + xoff + i];
                nx[r * in + i] = fd_at(xd, r * in + i, xd, wd, bd, Rd, B, in, out, act);
            }
        assert_true(tu_close_d("dense_bwd dx", ax, nx, (size_t)(B * in), G_ATOL * sqrt((double)out), G_RTOL));
        /* columns outside the view were not touched */
        for (int64_t r = 0; r < B; r++)
            for (int64_t i = 0; i < xoff; i++)
                assert_true(isnan(dxw[r * xld + i]));
        free(xw); free(w); free(b); free(y); free(dy); free(dw); free(db); free(dxw);
        free(xd); free(wd); free(bd); free(Rd); free(yr); free(yg); free(a); free(n);
        free(ax); free(nx);
    }
}

/* ---- the scaled-sigmoid head ----------------------------------------------------- */

static void test_head(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(5);
    const int64_t n = tu_int(&g, 1, 500);
    const float scale = (float)tu_range(&g, 5, 15);
    float *z = fal((size_t)n), *p = fal((size_t)n), *dp = fal((size_t)n), *dz = fal((size_t)n);
    tu_fill(&g, z, (size_t)n, -4, 4);
    tu_fill(&g, dp, (size_t)n, -1, 1);
    rt_k_head_fwd(ctx, z, n, scale, p);
    rt_k_head_bwd(ctx, p, dp, n, scale, dz);
    for (int64_t i = 0; i < n; i++) {
        double s = 1.0 / (1.0 + exp(-(double)z[i]));
        assert_true(fabs(p[i] - scale * s) <= 1e-5 * scale);
        double fd = dp[i] * scale * (1.0 / (1.0 + exp(-((double)z[i] + H))) -
                                     1.0 / (1.0 + exp(-((double)z[i] - H)))) / (2 * H);
        assert_true(fabs(dz[i] - fd) <= G_ATOL + G_RTOL * fabs(fd));
    }
    free(z);
    free(p);
    free(dp);
    free(dz);
}

/* ---- Adam --------------------------------------------------------------------- */

static void test_adam(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(6);
    const int nseg = (int)tu_int(&g, 1, 6);
    rt_adam_seg segs[6];
    int64_t n = 0;
    for (int s = 0; s < nseg; s++) {
        segs[s].off = n;
        segs[s].len = tu_int(&g, 0, 5000);
        segs[s].l2 = s % 2 ? (float)tu_range(&g, 1e-5, 1e-2) : 0.0f;
        n += segs[s].len;
    }
    rt_adam_hp hp = {.lr = (float)tu_range(&g, 1e-4, 1e-2), .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-3f, .grad_scale = 0.5f};
    float *p = fal((size_t)n), *gr = fal((size_t)n), *m = fal((size_t)n), *v = fal((size_t)n);
    double *pd = dal((size_t)n), *md = dal((size_t)n), *vd = dal((size_t)n), *pg = dal((size_t)n);
    tu_fill(&g, p, (size_t)n, -1, 1);
    for (int64_t i = 0; i < n; i++)
        pd[i] = p[i];
    /* the plain float formula, no fused multiply-add (the build says
     * -ffp-contract=off): the kernel's bits on every CPU, whichever clone
     * of its loop runs */
    float *pf = fal((size_t)n), *mf = fal((size_t)n), *vf_ = fal((size_t)n);
    memcpy(pf, p, (size_t)n * 4);
    int64_t step = 0;
    for (int it = 0; it < 5; it++) {
        tu_fill(&g, gr, (size_t)n, -1, 1);
        rt_k_adam(ctx, p, gr, m, v, n, segs, nseg, &hp, &step);
        assert_int_equal(step, it + 1); /* the update advances the counter */
        {
            const double t = (double)step;
            const float lrt = (float)(hp.lr * sqrt(1.0 - pow(hp.beta2, t)) / (1.0 - pow(hp.beta1, t)));
            const float c1 = 1.0f - hp.beta1, c2 = 1.0f - hp.beta2;
            for (int s = 0; s < nseg; s++)
                for (int64_t i = segs[s].off; i < segs[s].off + segs[s].len; i++) {
                    float gi = gr[i] * hp.grad_scale + 2.0f * segs[s].l2 * pf[i];
                    mf[i] = hp.beta1 * mf[i] + c1 * gi;
                    vf_[i] = hp.beta2 * vf_[i] + c2 * gi * gi;
                    pf[i] -= lrt * mf[i] / (sqrtf(vf_[i]) + hp.eps);
                }
            assert_memory_equal(p, pf, (size_t)n * 4);
            assert_memory_equal(m, mf, (size_t)n * 4);
            assert_memory_equal(v, vf_, (size_t)n * 4);
        }
        double t = (double)step;
        double lrt = hp.lr * sqrt(1 - pow(hp.beta2, t)) / (1 - pow(hp.beta1, t));
        for (int s = 0; s < nseg; s++)
            for (int64_t i = segs[s].off; i < segs[s].off + segs[s].len; i++) {
                double gi = (double)gr[i] * hp.grad_scale + 2.0 * segs[s].l2 * pd[i];
                md[i] = hp.beta1 * md[i] + (1 - hp.beta1) * gi;
                vd[i] = hp.beta2 * vd[i] + (1 - hp.beta2) * gi * gi;
                pd[i] -= lrt * md[i] / (sqrt(vd[i]) + hp.eps);
            }
    }
    assert_int_equal(step, 5);
    for (int64_t i = 0; i < n; i++)
        pg[i] = p[i];
    /* five float updates of size <= lr each: a few ulps of p plus lr*1e-5 */
    assert_true(tu_close_d("adam params", pg, pd, (size_t)n, 1e-6 + hp.lr * 1e-4, 1e-6));
    free(p); free(gr); free(m); free(v); free(pd); free(md); free(vd); free(pg);
    free(pf); free(mf); free(vf_);
}

/* ---- OpenBLAS's kernels for programs under exec (cpu_blas.c) -------------- */

static void test_blas_core_choice(void **state)
{
    (void)state;
    const rt_cpu_isa sse = {0}, avx = {.avx = true},
                     intel2 = {.avx = true, .avx2_fma = true},
                     amd2 = {.amd = true, .avx = true, .avx2_fma = true},
                     intel512 = {.avx = true, .avx2_fma = true, .avx512 = true},
                     amd512 = {.amd = true, .avx = true, .avx2_fma = true, .avx512 = true};
    const struct {
        rt_cpu_isa isa;
        const char *picked, *want; /* want NULL: leave OpenBLAS's pick */
    } cases[] = {
        {intel512, "Prescott", "SkylakeX"}, /* Emerald Rapids, OpenBLAS 0.3.21 */
        {intel512, "prescott", "SkylakeX"}, /* names compare without case */
        {intel512, "Haswell", "SkylakeX"},  {intel512, "SkylakeX", NULL},
        {intel512, "Sapphirerapids", NULL}, {amd512, "Cooperlake", NULL}, /* Zen 4 */
        {amd512, "Zen", "SkylakeX"},        {amd2, "Zen", NULL},          /* Zen 3 */
        {amd2, "Prescott", "Zen"},          {amd2, "Haswell", NULL},
        {amd2, "Bulldozer", "Zen"},         {intel2, "Prescott", "Haswell"},
        {intel2, "Sandybridge", "Haswell"}, {intel2, "Nehalem", "Haswell"},
        {intel2, "Zen", NULL},              {avx, "Nehalem", "Sandybridge"},
        {avx, "Sandybridge", NULL},         {sse, "Prescott", NULL},
        {intel512, "Granite9000", NULL}, /* a newer OpenBLAS's name: trusted */
        {intel512, NULL, NULL},          {intel512, "", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *got = rt_blas_core_pick(cases[i].isa, cases[i].picked);
        if (!cases[i].want != !got || (got && strcmp(got, cases[i].want) != 0))
            fail_msg("case %zu (picked %s): want %s, got %s", i,
                     cases[i].picked ? cases[i].picked : "NULL",
                     cases[i].want ? cases[i].want : "NULL", got ? got : "NULL");
    }

    /* this CPU: the features agree with what the kernel reports, and the
     * advice is the table's answer unless the user set the variable */
    rt_cpu_isa me = rt_cpu_isa_detect();
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192], flags[8200] = "";
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "flags", 5)) {
            snprintf(flags, sizeof flags, " %s", strchr(line, ':') + 1);
            flags[strcspn(flags, "\n")] = ' ';
            break;
        }
    if (f)
        fclose(f);
    if (flags[0]) {
        assert_int_equal(me.avx2_fma, strstr(flags, " avx2 ") && strstr(flags, " fma "));
        assert_int_equal(me.avx512, strstr(flags, " avx512f ") && strstr(flags, " avx512bw ") &&
                                        strstr(flags, " avx512dq ") && strstr(flags, " avx512vl "));
    }
    const char *user = getenv("OPENBLAS_CORETYPE");
    const char *advice = rt_blas_core_advice(), *table = rt_blas_core_pick(me, rt_cpu_blas_core());
    if (user && *user)
        assert_null(advice);
    else
        assert_true(advice == table);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_kat),
        cmocka_unit_test(test_dropout_mask),
        cmocka_unit_test(test_dropout_isas),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_batchnorm),
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_head),
        cmocka_unit_test(test_adam),
        cmocka_unit_test(test_blas_core_choice),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
