/* test_layers_cuda.c — the layer graph's CUDA ops against the CPU ones on
 * the same random inputs (strided views, odd sizes), outputs poisoned (NaN)
 * before each run, worst element reported.  Exits 77 (skipped) without a
 * CUDA device.  (Each family's whole step on both devices, captured and
 * op by op: test_dp_gpu.)
 *
 * Tolerances |gpu - cpu| <= atol + rtol*|cpu|, per op:
 *   exact      ReGLU, elementwise add/multiply/copy/accumulate, bias add
 *              (one rounding each, the same on both)
 *   1e-6 rel   activations (device erff/expf/tanhf within an ulp or two of
 *              glibc's), feature tokens (a fused multiply-add or not)
 *   1e-6       column sums, layer norm (double statistics on both sides)
 *   1e-5       attention: float dot products of dh terms in another order,
 *              through a softmax */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_model.h"
#include "test_util.h"

static rt_kctx *cpu, *gpu;

static int setup(void **state)
{
    (void)state;
    char err[RT_ERR_LEN];
    if (rt_kctx_create(RT_DEVICE_CPU, 2, &cpu, err) != RT_OK)
        return -1;
    return rt_kctx_create(RT_DEVICE_CUDA, 0, &gpu, err) == RT_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    rt_kctx_destroy(gpu);
    rt_kctx_destroy(cpu);
    return 0;
}

/* A matrix on both devices: host copy h, device copy d. */
typedef struct pair {
    float *h, *d;
    int64_t rows, cols, ld;
} pair;

static pair mat(tu_rng *g, int64_t rows, int64_t cols, int64_t pad, double lo, double hi)
{
    pair p = {malloc((size_t)(rows * (cols + pad) + 1) * 4), NULL, rows, cols, cols + pad};
    const size_t n = (size_t)(rows * p.ld);
    if (hi > lo)
        tu_fill(g, p.h, n, lo, hi);
    else
        tu_poison(p.h, n);
    assert_int_equal(rt_kmalloc(gpu, n * 4 + 4, (void **)&p.d), RT_OK);
    rt_kmemcpy(gpu, p.d, p.h, n * 4, RT_H2D);
    return p;
}

static pair out_mat(tu_rng *g, int64_t rows, int64_t cols, int64_t pad)
{
    return mat(g, rows, cols, pad, 0, 0);
}

static rt_view hv(pair p) { return rt_vf32(p.h, p.rows, p.cols, p.ld, RT_DEVICE_CPU); }
static rt_view dv(pair p) { return rt_vf32(p.d, p.rows, p.cols, p.ld, RT_DEVICE_CUDA); }

static void pfree(pair *p)
{
    free(p->h);
    rt_kfree(gpu, p->d);
}

/* The device copy against the host one: row by row (the padding is neither's). */
static void same(const char *what, pair p, double atol, double rtol)
{
    const size_t n = (size_t)(p.rows * p.ld);
    float *got = malloc(n * 4 + 4);
    rt_kmemcpy(gpu, got, p.d, n * 4, RT_D2H);
    char err[RT_ERR_LEN];
    if (rt_kctx_sync(gpu, err) != RT_OK)
        fail_msg("%s: %s", what, err);
    for (int64_t r = 0; r < p.rows; r++)
        if (!tu_close_f(what, got + r * p.ld, p.h + r * p.ld, (size_t)p.cols, atol, rtol))
            fail_msg("%s: row %lld", what, (long long)r);
    free(got);
}

static void test_op_activations(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(51);
    const int64_t R = tu_int(&g, 1, 2000), C = tu_int(&g, 1, 90);
    for (int a = RT_ACT_NONE; a < RT_ACT_COUNT; a++) {
        pair x = mat(&g, R, C, 3, -6, 6), dy = mat(&g, R, C, 1, -1, 1);
        pair y = out_mat(&g, R, C, 2), dx = out_mat(&g, R, C, 0);
        rt_k_act_fwd(cpu, (rt_act)a, hv(x), hv(y));
        rt_k_act_fwd(gpu, (rt_act)a, dv(x), dv(y));
        same(rt_act_names[a], y, 1e-7, 1e-6);
        rt_k_act_bwd(cpu, (rt_act)a, hv(x), hv(dy), hv(dx));
        rt_k_act_bwd(gpu, (rt_act)a, dv(x), dv(dy), dv(dx));
        same(rt_act_names[a], dx, 1e-7, 1e-6);
        pfree(&x), pfree(&dy), pfree(&y), pfree(&dx);
    }
    /* ReGLU: exact */
    const int64_t h = tu_int(&g, 1, 70);
    pair x = mat(&g, R, 2 * h, 1, -3, 3), dy = mat(&g, R, h, 2, -1, 1);
    pair y = out_mat(&g, R, h, 0), dx = out_mat(&g, R, 2 * h, 3);
    rt_k_reglu_fwd(cpu, hv(x), hv(y));
    rt_k_reglu_fwd(gpu, dv(x), dv(y));
    same("reglu_fwd", y, 0, 0);
    rt_k_reglu_bwd(cpu, hv(x), hv(dy), hv(dx));
    rt_k_reglu_bwd(gpu, dv(x), dv(dy), dv(dx));
    same("reglu_bwd", dx, 0, 0);
    pfree(&x), pfree(&dy), pfree(&y), pfree(&dx);
}

static void test_op_elementwise(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(52);
    const int64_t R = tu_int(&g, 1, 3000), C = tu_int(&g, 1, 200);
    for (int op = RT_EW_ADD; op <= RT_EW_COPY; op++) {
        pair a = mat(&g, R, C, 1, -2, 2), b = mat(&g, R, C, 0, -2, 2);
        pair y = op == RT_EW_ACC ? mat(&g, R, C, 4, -2, 2) : out_mat(&g, R, C, 4);
        rt_k_ew(cpu, (rt_ew)op, hv(a), hv(b), hv(y));
        rt_k_ew(gpu, (rt_ew)op, dv(a), dv(b), dv(y));
        same("ew", y, 0, 0);
        pfree(&a), pfree(&b), pfree(&y);
    }
    pair y = mat(&g, R, C, 2, -2, 2), b = mat(&g, 1, C, 0, -1, 1);
    rt_k_bias_add(cpu, b.h, hv(y));
    rt_k_bias_add(gpu, b.d, dv(y));
    same("bias_add", y, 0, 0);
    pair s = out_mat(&g, 1, C, 0);
    rt_k_colsum(cpu, hv(y), s.h);
    rt_k_colsum(gpu, dv(y), s.d);
    same("colsum", s, 1e-6, 1e-6);
    pfree(&y), pfree(&b), pfree(&s);
}

static void test_op_layernorm(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(53);
    const int64_t R = tu_int(&g, 1, 3000), F = tu_int(&g, 1, 300);
    pair x = mat(&g, R, F, 5, -4, 9), dy = mat(&g, R, F, 0, -1, 1);
    pair gam = mat(&g, 1, F, 0, 0.5, 1.5), bet = mat(&g, 1, F, 0, -1, 1);
    pair y = out_mat(&g, R, F, 1), dx = out_mat(&g, R, F, 2), mr = out_mat(&g, 2, R, 0);
    pair dg = out_mat(&g, 1, F, 0), db = out_mat(&g, 1, F, 0);
    rt_k_ln_fwd(cpu, hv(x), gam.h, bet.h, 1e-5f, mr.h, mr.h + R, hv(y));
    rt_k_ln_fwd(gpu, dv(x), gam.d, bet.d, 1e-5f, mr.d, mr.d + R, dv(y));
    same("ln_fwd", y, 1e-6, 1e-6);
    same("ln_fwd mean, rstd", mr, 1e-6, 1e-6);
    rt_kmemcpy(gpu, mr.d, mr.h, (size_t)(2 * R) * 4, RT_H2D); /* backward from the same statistics */
    rt_k_ln_bwd(cpu, hv(x), hv(dy), gam.h, mr.h, mr.h + R, dg.h, db.h, hv(dx));
    rt_k_ln_bwd(gpu, dv(x), dv(dy), gam.d, mr.d, mr.d + R, dg.d, db.d, dv(dx));
    same("ln_bwd dx", dx, 1e-5, 1e-5);
    same("ln_bwd dgamma", dg, 1e-5, 1e-6);
    same("ln_bwd dbeta", db, 1e-5, 1e-6);
    pfree(&x), pfree(&dy), pfree(&gam), pfree(&bet), pfree(&y), pfree(&dx), pfree(&mr);
    pfree(&dg), pfree(&db);
}

static void test_op_tokens(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(54);
    for (int rep = 0; rep < 3; rep++) {
        const int64_t R = tu_int(&g, 1, 2000), n = tu_int(&g, 1, 9), d = tu_int(&g, 1, 40);
        pair x = mat(&g, R, n, 1, -3, 3), w = mat(&g, 1, n * d, 0, -1, 1);
        pair b = mat(&g, 1, n * d, 0, -1, 1), dy = mat(&g, R, n * d, 2, -1, 1);
        pair y = out_mat(&g, R, n * d, 3), dw = out_mat(&g, 1, n * d, 0);
        pair db = out_mat(&g, 1, n * d, 0), dx = out_mat(&g, R, n, 0);
        const bool ones = rep == 1, bias = rep != 2; /* the [CLS] token; no bias */
        rt_view hx = ones ? (rt_view){0} : hv(x), gx = ones ? (rt_view){0} : dv(x);
        hx.dtype = gx.dtype = RT_F32;
        hx.dev = RT_DEVICE_CPU;
        gx.dev = RT_DEVICE_CUDA;
        rt_k_tokens_fwd(cpu, hx, w.h, bias ? b.h : NULL, d, hv(y));
        rt_k_tokens_fwd(gpu, gx, w.d, bias ? b.d : NULL, d, dv(y));
        same("tokens_fwd", y, 1e-6, 1e-6);
        rt_view hdx = ones ? hx : hv(dx), gdx = ones ? gx : dv(dx);
        rt_k_tokens_bwd(cpu, hx, w.h, hv(dy), d, dw.h, bias ? db.h : NULL, hdx);
        rt_k_tokens_bwd(gpu, gx, w.d, dv(dy), d, dw.d, bias ? db.d : NULL, gdx);
        same("tokens_bwd dw", dw, 1e-5, 1e-6);
        if (bias)
            same("tokens_bwd db", db, 1e-5, 1e-6);
        if (!ones)
            same("tokens_bwd dx", dx, 1e-5, 1e-6);
        pfree(&x), pfree(&w), pfree(&b), pfree(&dy), pfree(&y), pfree(&dw), pfree(&db), pfree(&dx);
    }
}

/* TabM's block end (scale, bias, ReLU, dropout in one op): the same mask
 * on both; the values to an FMA's rounding, the sums to the order's. */
static void test_op_scale_act(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(58);
    for (int rep = 0; rep < 3; rep++) {
        const int64_t R = tu_int(&g, 1, 1500), C = tu_int(&g, 1, 300);
        const rt_act act = rep == 0 ? RT_ACT_NONE : RT_ACT_RELU;
        const float rate = rep == 2 ? 0.3f : 0.0f;
        const uint64_t seed = (uint64_t)tu_int(&g, 1, 1 << 30);
        int64_t step = tu_int(&g, 0, 1000), *d_step;
        assert_int_equal(rt_kmalloc(gpu, 8, (void **)&d_step), RT_OK);
        rt_kmemcpy(gpu, d_step, &step, 8, RT_H2D);
        pair x = mat(&g, R, C, 1, -3, 3), w = mat(&g, 1, C, 0, -1, 1), b = mat(&g, 1, C, 0, -1, 1);
        pair dy = mat(&g, R, C, 2, -1, 1), y = out_mat(&g, R, C, 3), dx = out_mat(&g, R, C, 0);
        pair dw = out_mat(&g, 1, C, 0), db = out_mat(&g, 1, C, 0);
        const bool bias = rep != 0;
        rt_k_scale_act_fwd(cpu, hv(x), w.h, bias ? b.h : NULL, act, rate, seed, 0x7001u, &step,
                           hv(y));
        rt_k_scale_act_fwd(gpu, dv(x), w.d, bias ? b.d : NULL, act, rate, seed, 0x7001u, d_step,
                           dv(y));
        same("scale_act_fwd", y, 1e-6, 1e-6);
        rt_kmemcpy(gpu, y.d, y.h, (size_t)(R * y.ld) * 4, RT_H2D); /* the same mask by y */
        rt_k_scale_act_bwd(cpu, hv(x), w.h, hv(y), act, rate, hv(dy), dw.h, bias ? db.h : NULL,
                           hv(dx));
        rt_k_scale_act_bwd(gpu, dv(x), w.d, dv(y), act, rate, dv(dy), dw.d, bias ? db.d : NULL,
                           dv(dx));
        same("scale_act_bwd dw", dw, 1e-5, 1e-6);
        if (bias)
            same("scale_act_bwd db", db, 1e-5, 1e-6);
        same("scale_act_bwd dx", dx, 1e-6, 1e-6);
        pfree(&x), pfree(&w), pfree(&b), pfree(&dy), pfree(&y), pfree(&dx), pfree(&dw);
        pfree(&db);
        rt_kfree(gpu, d_step);
    }
}

/* TabM's member copies and reductions: the copy exact, the reductions
 * (double sums in member order on both) to float rounding and the
 * device's exp/log. */
static void test_op_ensemble(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(56);
    for (int op = RT_ENS_SUM; op <= RT_ENS_SIGMOID; op++) {
        const int64_t R = tu_int(&g, 1, 1500), k = tu_int(&g, 1, 33);
        const int64_t D = op == RT_ENS_SIGMOID ? tu_int(&g, 1, 2) : tu_int(&g, 1, 40);
        pair x = mat(&g, R, D, 2, -3, 3), xk = out_mat(&g, R, k * D, 1);
        rt_k_ens_repeat(cpu, hv(x), hv(xk));
        rt_k_ens_repeat(gpu, dv(x), dv(xk));
        same("ens_repeat", xk, 0, 0);
        pair z = mat(&g, R, k * D, 3, -12, 12), y = out_mat(&g, R, D, 2);
        rt_k_ens_reduce(cpu, (rt_ens_op)op, hv(z), hv(y));
        rt_k_ens_reduce(gpu, (rt_ens_op)op, dv(z), dv(y));
        same("ens_reduce", y, 1e-6, 1e-6);
        pfree(&x), pfree(&xk), pfree(&z), pfree(&y);
    }
}

/* Periodic features: cos and sin to the device's sinf/cosf, the
 * frequencies' gradient (double sums over the rows in order on both). */
static void test_op_periodic(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(57);
    for (int rep = 0; rep < 3; rep++) {
        const int64_t R = tu_int(&g, 1, 1200), n = tu_int(&g, 1, 9), k = tu_int(&g, 1, 20);
        pair x = mat(&g, R, n, 2, -3, 3), f = mat(&g, 1, n * k, 0, -0.5, 0.5);
        pair dy = mat(&g, R, n * 2 * k, 1, -1, 1), y = out_mat(&g, R, n * 2 * k, 3);
        pair df = out_mat(&g, 1, n * k, 0), dx = out_mat(&g, R, n, 1);
        rt_k_periodic_fwd(cpu, hv(x), f.h, k, hv(y));
        rt_k_periodic_fwd(gpu, dv(x), f.d, k, dv(y));
        same("periodic_fwd", y, 1e-6, 1e-5);
        rt_view hdx = hv(dx), gdx = dv(dx);
        if (rep == 2) /* without dx */
            hdx.p = gdx.p = NULL;
        rt_k_periodic_bwd(cpu, hv(x), f.h, k, hv(dy), df.h, hdx);
        rt_k_periodic_bwd(gpu, dv(x), f.d, k, dv(dy), df.d, gdx);
        same("periodic_bwd df", df, 1e-4, 1e-5);
        if (rep != 2)
            same("periodic_bwd dx", dx, 1e-5, 1e-5);
        pfree(&x), pfree(&f), pfree(&dy), pfree(&y), pfree(&df), pfree(&dx);
    }
}

/* continuous_norm = quantile's map (double on both: the device's erfc
 * and exp against the host's), and robust's smooth clip. */
static void test_op_quantile(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(58);
    const int64_t R = tu_int(&g, 1, 1500), n = tu_int(&g, 1, 12), nq = tu_int(&g, 2, 40);
    pair x = mat(&g, R, n, 1, -4, 4), q = mat(&g, n, nq, 0, -3, 3), y = out_mat(&g, R, n, 2);
    for (int64_t i = 0; i < n; i++) { /* each column's quantiles ascending, with ties */
        float *qi = q.h + i * nq;
        for (int64_t j = 1; j < nq; j++)
            qi[j] = j % 5 == 0 ? qi[j - 1] : qi[j - 1] + fabsf(qi[j]) * 0.3f;
    }
    rt_kmemcpy(gpu, q.d, q.h, (size_t)(n * nq) * 4, RT_H2D);
    rt_k_quantile_fwd(cpu, hv(x), q.h, nq, hv(y));
    rt_k_quantile_fwd(gpu, dv(x), q.d, nq, dv(y));
    same("quantile_fwd", y, 1e-6, 1e-6);
    pair c = mat(&g, 1, n, 0, -1, 1), sc = mat(&g, 1, n, 0, 0.1, 3), yr = out_mat(&g, R, n, 1);
    rt_k_robust_fwd(cpu, hv(x), c.h, sc.h, hv(yr));
    rt_k_robust_fwd(gpu, dv(x), c.d, sc.d, dv(yr));
    same("robust_fwd", yr, 1e-6, 1e-6);
    pfree(&x), pfree(&q), pfree(&y), pfree(&c), pfree(&sc), pfree(&yr);
}

/* The piecewise-linear encoding and its gradient by x (exact: the same
 * float operations on both). */
static void test_op_ple(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(59);
    const int64_t R = tu_int(&g, 1, 1500), n = tu_int(&g, 1, 8), T = tu_int(&g, 1, 12);
    pair x = mat(&g, R, n, 1, -4, 4), e = mat(&g, n, T + 1, 0, 0.1, 1);
    for (int64_t i = 0; i < n; i++) { /* each column's edges ascending from -3, one tie */
        float *ei = e.h + i * (T + 1);
        ei[0] = -3;
        for (int64_t t = 1; t <= T; t++)
            ei[t] = t == 2 ? ei[t - 1] : ei[t - 1] + ei[t];
    }
    rt_kmemcpy(gpu, e.d, e.h, (size_t)(n * (T + 1)) * 4, RT_H2D);
    pair y = out_mat(&g, R, n * T, 2), dy = mat(&g, R, n * T, 0, -1, 1), dx = out_mat(&g, R, n, 1);
    rt_k_ple_fwd(cpu, hv(x), e.h, T, hv(y));
    rt_k_ple_fwd(gpu, dv(x), e.d, T, dv(y));
    same("ple_fwd", y, 1e-6, 1e-6);
    rt_k_ple_bwd(cpu, hv(x), e.h, T, hv(dy), hv(dx));
    rt_k_ple_bwd(gpu, dv(x), e.d, T, dv(dy), dv(dx));
    same("ple_bwd", dx, 1e-6, 1e-6);
    pfree(&x), pfree(&e), pfree(&y), pfree(&dy), pfree(&dx);
}

static void test_op_attention(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(55);
    for (int rep = 0; rep < 4; rep++) {
        /* the last: a pair too large for shared memory (the kernels that read global memory) */
        const bool big = rep == 3;
        const int64_t B = tu_int(&g, 1, big ? 3 : 60), T = tu_int(&g, big ? 50 : 1, big ? 64 : 12);
        const int64_t H = big ? 1 : tu_int(&g, 1, 4);
        const int64_t d = H * tu_int(&g, big ? 50 : 1, big ? 64 : 40); /* dh past 32 too */
        rt_attn a = {T, H, rep == 0 ? 0.0f : 0.3f, (uint64_t)tu_int(&g, 1, 1 << 30), 0x7003u};
        int64_t step = tu_int(&g, 0, 1000);
        int64_t *d_step;
        assert_int_equal(rt_kmalloc(gpu, 8, (void **)&d_step), RT_OK);
        rt_kmemcpy(gpu, d_step, &step, 8, RT_H2D);
        pair qkv = mat(&g, B * T, 3 * d, 2, -1.5, 1.5), dout = mat(&g, B * T, d, 1, -1, 1);
        pair out = out_mat(&g, B * T, d, 3), dqkv = out_mat(&g, B * T, 3 * d, 0);
        pair probs = out_mat(&g, B * H * T, T, 0);
        rt_k_attn_fwd(cpu, &a, hv(qkv), probs.h, &step, hv(out));
        rt_k_attn_fwd(gpu, &a, dv(qkv), probs.d, d_step, dv(out));
        same("attn_fwd", out, 1e-5, 1e-5);
        same("attn_fwd probs", probs, 1e-6, 1e-5);
        rt_kmemcpy(gpu, probs.d, probs.h, (size_t)(B * H * T * T) * 4, RT_H2D);
        rt_k_attn_bwd(cpu, &a, hv(qkv), probs.h, &step, hv(dout), hv(dqkv));
        rt_k_attn_bwd(gpu, &a, dv(qkv), probs.d, d_step, dv(dout), dv(dqkv));
        same("attn_bwd", dqkv, 1e-5, 1e-5);
        pfree(&qkv), pfree(&dout), pfree(&out), pfree(&dqkv), pfree(&probs);
        rt_kfree(gpu, d_step);
    }
}

int main(int argc, char **argv)
{
    if (argc == 2)
        cmocka_set_test_filter(argv[1]);
    if (!rt_cuda_available()) {
        printf("no CUDA device (or CUDA not built in): skipping\n");
        return 77;
    }
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_op_activations), cmocka_unit_test(test_op_elementwise),
        cmocka_unit_test(test_op_layernorm),   cmocka_unit_test(test_op_tokens),
        cmocka_unit_test(test_op_attention),   cmocka_unit_test(test_op_ensemble),
        cmocka_unit_test(test_op_periodic),    cmocka_unit_test(test_op_quantile),
        cmocka_unit_test(test_op_ple),         cmocka_unit_test(test_op_scale_act),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
