/* test_attn_cpu.c — the CPU attention (rt_k_attn_fwd/_bwd) against a plain
 * double-precision reference written from the definition, on random shapes
 * (token counts past and between whole vectors, head widths past a
 * register tile, dropout on and off; RT_TEST_SEED reproduces):
 *
 *   forward   P = softmax(q kᵀ / sqrt(dh)) per sample and head, out = drop(P) v,
 *             the saved P's sign bits the mask (rt_rng at P's element numbers);
 *   backward  the analytic gradient of L = Σ R ⊙ out, itself checked against
 *             central finite differences of the reference forward;
 *   threads   one and two threads give the same bits. */
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

static rt_kctx *ctx1, *ctx2;

static int setup(void **state)
{
    (void)state;
    char err[RT_ERR_LEN];
    if (rt_kctx_create(RT_DEVICE_CPU, 1, &ctx1, err) != RT_OK)
        return -1;
    return rt_kctx_create(RT_DEVICE_CPU, 2, &ctx2, err) == RT_OK ? 0 : -1;
}
static int teardown(void **state)
{
    (void)state;
    rt_kctx_destroy(ctx1);
    rt_kctx_destroy(ctx2);
    return 0;
}

typedef struct shape {
    int64_t B, T, H, dh, d;
    rt_attn a;
    uint64_t step;
} shape;

/* the mask's factor for P's element e: 0 where dropout drops it, else 1 / (1 - rate) */
static double mask(const shape *s, uint64_t e)
{
    if (s->a.rate <= 0.0f)
        return 1.0;
    return rt_rng_uniform(s->a.seed, s->a.stream, s->step, e) >= s->a.rate
               ? 1.0 / (1.0 - (double)s->a.rate)
               : 0.0;
}

/* The reference forward of one (sample, head) pair: P (T x T) and out's
 * columns; qkv in double. */
static void ref_fwd(const shape *s, const double *qkv, int64_t bh, double *P, double *out)
{
    const int64_t T = s->T, d = s->d, dh = s->dh, b = bh / s->H, h = bh % s->H;
    const double *q = qkv + b * T * 3 * d + h * dh, *k = q + d, *v = q + 2 * d;
    for (int64_t t = 0; t < T; t++) {
        double *p = P + t * T, mx = -INFINITY, sum = 0.0;
        for (int64_t u = 0; u < T; u++) {
            double x = 0.0;
            for (int64_t e = 0; e < dh; e++)
                x += q[t * 3 * d + e] * k[u * 3 * d + e];
            p[u] = x / sqrt((double)dh);
            mx = fmax(mx, p[u]);
        }
        for (int64_t u = 0; u < T; u++)
            sum += p[u] = exp(p[u] - mx);
        for (int64_t u = 0; u < T; u++)
            p[u] /= sum;
        for (int64_t e = 0; e < dh; e++)
            out[(b * T + t) * d + h * dh + e] = 0.0;
        for (int64_t u = 0; u < T; u++) {
            const double w = p[u] * mask(s, (uint64_t)((bh * T + t) * T + u));
            for (int64_t e = 0; e < dh; e++)
                out[(b * T + t) * d + h * dh + e] += w * v[u * 3 * d + e];
        }
    }
}

/* L = Σ R ⊙ out of the reference forward */
static double ref_loss(const shape *s, const double *qkv, const double *R, double *P, double *out)
{
    double L = 0.0;
    for (int64_t bh = 0; bh < s->B * s->H; bh++)
        ref_fwd(s, qkv, bh, P, out);
    for (int64_t i = 0; i < s->B * s->T * s->d; i++)
        L += R[i] * out[i];
    return L;
}

/* dL/dqkv of the reference (dout = R), pair by pair, from the definition:
 * dv = drop(P)ᵀ R; G = R vᵀ ⊙ mask; dS = P ⊙ (G - rowsum(P ⊙ G)) / sqrt(dh);
 * dq = dS k; dk = dSᵀ q */
static void ref_bwd(const shape *s, const double *qkv, const double *R, double *dqkv)
{
    const int64_t T = s->T, d = s->d, dh = s->dh;
    double *P = calloc((size_t)(T * T), sizeof *P), *dS = calloc((size_t)(T * T), sizeof *dS);
    double *Pm = calloc((size_t)(T * T), sizeof *Pm); /* drop(P) */
    double *out = calloc((size_t)(s->B * T * d), sizeof *out);
    for (int64_t bh = 0; bh < s->B * s->H; bh++) {
        const int64_t b = bh / s->H, h = bh % s->H;
        const double *q = qkv + b * T * 3 * d + h * dh, *k = q + d, *v = q + 2 * d;
        const double *g = R + b * T * d + h * dh;
        double *dq = dqkv + b * T * 3 * d + h * dh, *dk = dq + d, *dv = dq + 2 * d;
        ref_fwd(s, qkv, bh, P, out);
        for (int64_t t = 0; t < T; t++) {
            double inner = 0.0;
            for (int64_t u = 0; u < T; u++) {
                double x = 0.0;
                for (int64_t e = 0; e < dh; e++)
                    x += g[t * d + e] * v[u * 3 * d + e];
                const double m = mask(s, (uint64_t)((bh * T + t) * T + u));
                dS[t * T + u] = x * m;
                Pm[t * T + u] = P[t * T + u] * m;
                inner += P[t * T + u] * dS[t * T + u];
            }
            for (int64_t u = 0; u < T; u++)
                dS[t * T + u] = P[t * T + u] * (dS[t * T + u] - inner) / sqrt((double)dh);
        }
        for (int64_t t = 0; t < T; t++)
            for (int64_t e = 0; e < dh; e++) {
                double xq = 0.0, xk = 0.0, xv = 0.0;
                for (int64_t u = 0; u < T; u++) {
                    xq += dS[t * T + u] * k[u * 3 * d + e];
                    xk += dS[u * T + t] * q[u * 3 * d + e];
                    xv += Pm[u * T + t] * g[u * d + e];
                }
                dq[t * 3 * d + e] = xq, dk[t * 3 * d + e] = xk, dv[t * 3 * d + e] = xv;
            }
    }
    free(P), free(dS), free(Pm), free(out);
}

static shape draw(tu_rng *g, int rep)
{
    shape s;
    /* every other shape with at least 16 (sample, head) pairs: two threads split them */
    s.B = rep % 2 ? tu_int(g, 1, 5) : 8;
    /* token counts in and past whole vectors of 16, one to a few */
    const int64_t Ts[] = {1, 5, 16, 17, 33, 37, 48, 70};
    s.T = rep < 8 ? Ts[rep] : tu_int(g, 1, 70);
    s.H = rep % 2 ? tu_int(g, 1, 3) : tu_int(g, 2, 3);
    s.dh = tu_int(g, 1, 40);
    s.d = s.H * s.dh;
    s.a = (rt_attn){s.T, s.H, rep % 3 == 0 ? 0.0f : (float)tu_range(g, 0.1, 0.5),
                    (uint64_t)tu_int(g, 1, 1 << 30) << 20 | 7u, (uint32_t)tu_int(g, 1, 1 << 20)};
    s.step = (uint64_t)tu_int(g, 0, 1000);
    return s;
}

static void test_attention(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(71);
    for (int rep = 0; rep < 14; rep++) {
        const shape s = draw(&g, rep);
        const int64_t T = s.T, d = s.d, nq = s.B * T * 3 * d, no = s.B * T * d;
        const int64_t np = s.B * s.H * T * T, step = (int64_t)s.step;
        float *qkv = malloc((size_t)nq * 4), *dout = malloc((size_t)no * 4);
        float *out = malloc((size_t)no * 4), *probs = malloc((size_t)np * 4);
        float *dqkv = malloc((size_t)nq * 4), *out2 = malloc((size_t)no * 4);
        float *probs2 = malloc((size_t)np * 4), *dqkv2 = malloc((size_t)nq * 4);
        double *dq = calloc((size_t)nq, 8), *dr = calloc((size_t)no, 8),
               *ref = calloc((size_t)nq, 8);
        double *rout = calloc((size_t)no, 8), *rP = calloc((size_t)(T * T), 8);
        for (int64_t i = 0; i < nq; i++)
            dq[i] = qkv[i] = (float)tu_range(&g, -2.0, 2.0);
        for (int64_t i = 0; i < no; i++)
            dr[i] = dout[i] = (float)tu_range(&g, -1.0, 1.0);
        const rt_view vq = rt_vf32(qkv, s.B * T, 3 * d, 3 * d, RT_DEVICE_CPU);
        rt_k_attn_fwd(ctx1, &s.a, vq, probs, &step, rt_vf32(out, s.B * T, d, d, RT_DEVICE_CPU));
        rt_k_attn_fwd(ctx2, &s.a, vq, probs2, &step, rt_vf32(out2, s.B * T, d, d, RT_DEVICE_CPU));
        assert_memory_equal(out, out2, (size_t)no * 4);
        assert_memory_equal(probs, probs2, (size_t)np * 4);
        /* P and its signs against the reference, pair by pair */
        for (int64_t bh = 0; bh < s.B * s.H; bh++) {
            ref_fwd(&s, dq, bh, rP, rout);
            for (int64_t i = 0; i < T * T; i++) {
                const float p = probs[bh * T * T + i];
                if (fabs(fabsf(p) - rP[i]) > 2e-6 + 1e-5 * rP[i])
                    fail_msg("T %lld H %lld dh %lld: P[%lld, %lld] %g, reference %g", (long long)T,
                             (long long)s.H, (long long)s.dh, (long long)bh, (long long)i,
                             (double)p, rP[i]);
                /* dropped: the sign set (a P of 0 may carry either sign) */
                if (fabsf(p) > 0.0f &&
                    (signbit(p) != 0) != (mask(&s, (uint64_t)(bh * T * T + i)) == 0.0))
                    fail_msg("P[%lld, %lld]: the sign does not match the mask", (long long)bh,
                             (long long)i);
            }
        }
        for (int64_t i = 0; i < no; i++)
            if (fabs(out[i] - rout[i]) > 1e-5 + 1e-5 * fabs(rout[i]))
                fail_msg("T %lld dh %lld: out[%lld] %g, reference %g", (long long)T,
                         (long long)s.dh, (long long)i, (double)out[i], rout[i]);
        memcpy(probs2, probs, (size_t)np * 4);
        rt_k_attn_bwd(ctx1, &s.a, vq, probs, &step, rt_vf32(dout, s.B * T, d, d, RT_DEVICE_CPU),
                      rt_vf32(dqkv, s.B * T, 3 * d, 3 * d, RT_DEVICE_CPU));
        rt_k_attn_bwd(ctx2, &s.a, vq, probs2, &step, rt_vf32(dout, s.B * T, d, d, RT_DEVICE_CPU),
                      rt_vf32(dqkv2, s.B * T, 3 * d, 3 * d, RT_DEVICE_CPU));
        assert_memory_equal(dqkv, dqkv2, (size_t)nq * 4);
        ref_bwd(&s, dq, dr, ref);
        double scale = 0.0;
        for (int64_t i = 0; i < nq; i++)
            scale = fmax(scale, fabs(ref[i]));
        for (int64_t i = 0; i < nq; i++)
            if (fabs(dqkv[i] - ref[i]) > 1e-5 * (1.0 + scale))
                fail_msg("T %lld H %lld dh %lld rate %g: dqkv[%lld] %g, reference %g", (long long)T,
                         (long long)s.H, (long long)s.dh, (double)s.a.rate, (long long)i,
                         (double)dqkv[i], ref[i]);
        /* the reference's gradient against central differences, a few elements */
        for (int c = 0; c < 6; c++) {
            const int64_t i = tu_int(&g, 0, nq - 1);
            const double x = dq[i], h = 1e-6;
            dq[i] = x + h;
            const double lp = ref_loss(&s, dq, dr, rP, rout);
            dq[i] = x - h;
            const double lm = ref_loss(&s, dq, dr, rP, rout);
            dq[i] = x;
            const double fd = (lp - lm) / (2 * h);
            if (fabs(fd - ref[i]) > 1e-6 * (1.0 + scale))
                fail_msg("the reference's dqkv[%lld] %g, central differences %g", (long long)i,
                         ref[i], fd);
        }
        free(qkv), free(dout), free(out), free(probs), free(dqkv), free(out2), free(probs2);
        free(dqkv2), free(dq), free(dr), free(ref), free(rout), free(rP);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
