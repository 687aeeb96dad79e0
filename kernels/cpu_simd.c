/* cpu_simd.c — the CPU backend's hot loops (see cpu_simd.h), written so the
 * compiler vectorises them, and cloned per instruction-set level. */
#include "cpu_simd.h"

#include <math.h>

/* GCC only: clang's target_clones does not take the x86-64-vN levels, and
 * sanitizer builds (clang's fuzzers included) need no clones */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(RT_NO_MULTIVERSION)
#define RT_MV __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RT_MV
#endif

RT_MV void rt_simd_bias_act(float *y, int64_t ldy, int64_t rows, int64_t n, const float *b,
                            bool relu)
{
    for (int64_t r = 0; r < rows; r++) {
        float *restrict row = y + r * ldy;
        if (relu) {
            for (int64_t j = 0; j < n; j++) {
                float v = row[j] + b[j];
                row[j] = v > 0.0f ? v : 0.0f;
            }
        } else {
            for (int64_t j = 0; j < n; j++)
                row[j] += b[j];
        }
    }
}

RT_MV void rt_simd_mask_colsum(float *g, int64_t ldg, const float *y, int64_t ldy, int64_t rows,
                               int64_t n, bool relu, double *restrict acc)
{
    for (int64_t r = 0; r < rows; r++) {
        /* restrict: the three streams never overlap, which lets the compiler
         * turn the select into a masked vector operation */
        float *restrict gr = g + r * ldg;
        const float *restrict yr = y + r * ldy;
        /* two simple loops (mask, then widen-and-add) vectorise where the
         * fused one does not; the row strip is still in L1 for the second */
        if (relu)
            for (int64_t j = 0; j < n; j++)
                gr[j] = yr[j] > 0.0f ? gr[j] : 0.0f;
        for (int64_t j = 0; j < n; j++)
            acc[j] += (double)gr[j];
    }
}

RT_MV void rt_simd_adam(float *restrict p, const float *restrict g, float *restrict m,
                        float *restrict v, int64_t n, float grad_scale,
                        float l2x2, float b1, float b2, float lrt, float eps)
{
    const float c1 = 1.0f - b1, c2 = 1.0f - b2;
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i] * grad_scale + l2x2 * p[i];
        float mi = b1 * m[i] + c1 * gi;
        float vi = b2 * v[i] + c2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] -= lrt * mi / (sqrtf(vi) + eps);
    }
}

/* Philox4x32-10 on LANES consecutive counters at once, in structure-of-arrays
 * form so the rounds vectorise (32x32->64 multiplies map to vpmuludq).  Same
 * arithmetic as rt_philox4x32() in rt_rng.h. */
#define LANES 16
RT_MV void rt_simd_dropout(float *x, int64_t n, uint64_t e0, float rate, uint32_t k0, uint32_t k1,
                           uint64_t step)
{
    const float keep_scale = 1.0f / (1.0f - rate);
    const uint64_t e_end = e0 + (uint64_t)n;
    uint64_t q = e0 >> 2;
    const uint64_t q_end = (e_end + 3) >> 2;
    while (q < q_end) {
        uint32_t x0[LANES], x1[LANES], x2[LANES], x3[LANES];
        int lanes = q_end - q < LANES ? (int)(q_end - q) : LANES;
        for (int i = 0; i < LANES; i++) {
            uint64_t qi = q + (uint64_t)i;
            x0[i] = (uint32_t)qi;
            x1[i] = (uint32_t)(qi >> 32);
            x2[i] = (uint32_t)step;
            x3[i] = (uint32_t)(step >> 32);
        }
        uint32_t a = k0, b = k1;
        for (int r = 0; r < 10; r++) {
            for (int i = 0; i < LANES; i++) {
                uint64_t p0 = (uint64_t)0xD2511F53u * x0[i];
                uint64_t p1 = (uint64_t)0xCD9E8D57u * x2[i];
                uint32_t n0 = (uint32_t)(p1 >> 32) ^ x1[i] ^ a;
                uint32_t n2 = (uint32_t)(p0 >> 32) ^ x3[i] ^ b;
                x1[i] = (uint32_t)p1;
                x3[i] = (uint32_t)p0;
                x0[i] = n0;
                x2[i] = n2;
            }
            a += 0x9E3779B9u;
            b += 0xBB67AE85u;
        }
        for (int i = 0; i < lanes; i++) {
            uint32_t w[4] = {x0[i], x1[i], x2[i], x3[i]};
            uint64_t base = (q + (uint64_t)i) << 2;
            for (int k = 0; k < 4; k++) {
                uint64_t e = base + (uint64_t)k;
                if (e < e0 || e >= e_end)
                    continue;
                float u = (float)(w[k] >> 8) * (1.0f / 16777216.0f);
                float *px = x + (e - e0);
                *px = u >= rate ? *px * keep_scale : 0.0f;
            }
        }
        q += (uint64_t)lanes;
    }
}
