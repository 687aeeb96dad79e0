/* cpu_simd.c — the CPU backend's hot loops (see cpu_simd.h), written so the
 * compiler vectorises them, and cloned per instruction-set level. */
#include "cpu_simd.h"

#include <math.h>
#include <string.h>

RT_MV void rt_simd_bias_act(float *y, int64_t ldy, int64_t rows, int64_t n, const float *b,
                            bool relu)
{
    for (int64_t r = 0; r < rows; r++) {
        float *restrict row = y + r * ldy;
        if (relu && !b) {
            for (int64_t j = 0; j < n; j++)
                row[j] = row[j] > 0.0f ? row[j] : 0.0f;
        } else if (relu) {
            for (int64_t j = 0; j < n; j++) {
                float v = row[j] + b[j];
                row[j] = v > 0.0f ? v : 0.0f;
            }
        } else if (b) {
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

RT_MV RT_NO_CONTRACT void rt_simd_scale_rows(const float *x, int64_t ldx, const float *w,
                                             const float *b, bool relu, int64_t rows, int64_t n,
                                             float *y, int64_t ldy)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * ldx;
        float *yr = y + r * ldy;
        if (b)
            for (int64_t j = 0; j < n; j++)
                yr[j] = xr[j] * w[j] + b[j];
        else
            for (int64_t j = 0; j < n; j++)
                yr[j] = xr[j] * w[j];
        if (relu)
            for (int64_t j = 0; j < n; j++)
                yr[j] = yr[j] > 0.0f ? yr[j] : 0.0f;
    }
}

/* m values of dx = g * w from a piece of g in a stack buffer: into dx, or
 * (g then scratch) rounded to bf16 into dxh */
__attribute__((always_inline)) static inline void
put_dx(float *restrict g, const float *restrict w, int64_t m, float *restrict dx, uint16_t *dxh)
{
    if (dx) {
        for (int64_t j = 0; j < m; j++)
            dx[j] = g[j] * w[j];
    } else if (dxh) {
        for (int64_t j = 0; j < m; j++)
            g[j] = g[j] * w[j];
        rt_bf16_store(g, m, dxh);
    }
}

/* the gradient is made a piece of SCALE_ROWS rows x SCALE_CHUNK columns at
 * a time in a buffer on the stack: simple loops (make, sum, scale)
 * vectorise where one with the select inside did not, and each column's
 * two double sums are read and written once per SCALE_ROWS rows (the rows
 * still added one after the other: the same bits) */
#define SCALE_CHUNK 512
#define SCALE_ROWS 4

RT_MV void rt_simd_scale_colsum(const float *g, int64_t ldg, float c, const float *y, int64_t ldy,
                                const float *x, int64_t ldx, const float *w, int64_t rows,
                                int64_t n, double *restrict sw, double *restrict sb, float *dx,
                                uint16_t *dxh, int64_t lddx)
{
    float gb[SCALE_ROWS][SCALE_CHUNK];
    for (int64_t r0 = 0; r0 < rows; r0 += SCALE_ROWS) {
        const int64_t nr = rows - r0 < SCALE_ROWS ? rows - r0 : SCALE_ROWS;
        for (int64_t j0 = 0; j0 < n; j0 += SCALE_CHUNK) {
            const int64_t m = n - j0 < SCALE_CHUNK ? n - j0 : SCALE_CHUNK;
            for (int64_t i = 0; i < nr; i++) {
                const float *gr = g + (r0 + i) * ldg + j0;
                float *restrict o = gb[i];
                if (y) {
                    const float *yr = y + (r0 + i) * ldy + j0;
                    for (int64_t j = 0; j < m; j++)
                        o[j] = yr[j] > 0.0f ? gr[j] * c : 0.0f;
                } else {
                    for (int64_t j = 0; j < m; j++)
                        o[j] = gr[j] * c;
                }
            }
            /* the product of two floats is exact in a double: one rounding,
             * contracted or not */
            double *restrict aw = sw + j0, *restrict ab = sb + j0;
            const float *x0 = x + r0 * ldx + j0;
            if (nr == SCALE_ROWS) {
                const float *x1 = x0 + ldx, *x2 = x1 + ldx, *x3 = x2 + ldx;
                for (int64_t j = 0; j < m; j++) {
                    double a = aw[j], b = ab[j];
                    a += (double)gb[0][j] * (double)x0[j];
                    b += (double)gb[0][j];
                    a += (double)gb[1][j] * (double)x1[j];
                    b += (double)gb[1][j];
                    a += (double)gb[2][j] * (double)x2[j];
                    b += (double)gb[2][j];
                    a += (double)gb[3][j] * (double)x3[j];
                    b += (double)gb[3][j];
                    aw[j] = a;
                    ab[j] = b;
                }
            } else {
                for (int64_t i = 0; i < nr; i++)
                    for (int64_t j = 0; j < m; j++) {
                        aw[j] += (double)gb[i][j] * (double)x0[i * ldx + j];
                        ab[j] += (double)gb[i][j];
                    }
            }
            /* after the piece's sums: dx may be g or x */
            for (int64_t i = 0; i < nr; i++)
                put_dx(gb[i], w + j0, m, dx ? dx + (r0 + i) * lddx + j0 : NULL,
                       dxh ? dxh + (r0 + i) * lddx + j0 : NULL);
        }
    }
}

/* rt_simd_scale_colsum twice, the second scaling's backward feeding the
 * first's: the same floats and sums in the same order, one pass */
RT_MV void rt_simd_scale2_colsum(const float *g2, int64_t ldg, const float *y, int64_t ldy,
                                 const float *w2, float c, bool relu, const float *x, int64_t ldx,
                                 const float *w, int64_t rows, int64_t n, double *restrict s2,
                                 double *restrict sw, double *restrict sb, float *dx, uint16_t *dxh,
                                 int64_t lddx)
{
    float gb[SCALE_ROWS][SCALE_CHUNK];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j0 = 0; j0 < n; j0 += SCALE_CHUNK) {
            const int64_t m = n - j0 < SCALE_CHUNK ? n - j0 : SCALE_CHUNK;
            const float *restrict gr = g2 + r * ldg + j0, *restrict yr = y + r * ldy + j0,
                                  *restrict xr = x + r * ldx + j0;
            double *restrict a2 = s2 + j0, *restrict aw = sw + j0, *restrict ab = sb + j0;
            float *restrict o = gb[0];
            /* the second's sums (its g is dy2 times 1) and its dx, dy = g2 * w2 */
            for (int64_t j = 0; j < m; j++) {
                a2[j] += (double)gr[j] * (double)yr[j];
                o[j] = gr[j] * w2[j0 + j];
            }
            /* the first's g from dy, then its sums */
            if (relu)
                for (int64_t j = 0; j < m; j++)
                    o[j] = yr[j] > 0.0f ? o[j] * c : 0.0f;
            else
                for (int64_t j = 0; j < m; j++)
                    o[j] = o[j] * c;
            for (int64_t j = 0; j < m; j++) {
                aw[j] += (double)o[j] * (double)xr[j];
                ab[j] += (double)o[j];
            }
            put_dx(o, w + j0, m, dx ? dx + r * lddx + j0 : NULL, dxh ? dxh + r * lddx + j0 : NULL);
        }
}

/* the members' sums per block of columns, kept in registers or L1 */
#define MEMBER_COLS 256

RT_MV void rt_simd_member_sum(const float *x, int64_t k, int64_t D, bool mean, float *y)
{
    double acc[MEMBER_COLS];
    for (int64_t j0 = 0; j0 < D; j0 += MEMBER_COLS) {
        const int64_t m = D - j0 < MEMBER_COLS ? D - j0 : MEMBER_COLS;
        for (int64_t j = 0; j < m; j++)
            acc[j] = 0.0;
        for (int64_t t = 0; t < k; t++) {
            const float *xt = x + t * D + j0;
            for (int64_t j = 0; j < m; j++)
                acc[j] += (double)xt[j];
        }
        for (int64_t j = 0; j < m; j++)
            y[j0 + j] = (float)(mean ? acc[j] / (double)k : acc[j]);
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
RT_MV void rt_simd_dropout_plain(float *x, int64_t n, uint64_t e0, float rate, uint32_t k0,
                                 uint32_t k1, uint64_t step)
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

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Philox4x32-10's rounds on vectors of blocks (x0..x3; key a, b), the same
 * in every width: VEC, its 32x32 multiply (MULHILO), xor and broadcast */
#define PHILOX_ROUNDS(VEC, MULHILO, XOR, SET1) \
    for (int r = 0; r < 10; r++) {             \
        VEC hi0, lo0, hi1, lo1;                \
        MULHILO(m0, x0, &hi0, &lo0);           \
        MULHILO(m1, x2, &hi1, &lo1);           \
        x0 = XOR(XOR(hi1, x1), SET1((int)a));  \
        x2 = XOR(XOR(hi0, x3), SET1((int)b));  \
        x1 = lo1;                              \
        x3 = lo0;                              \
        a += 0x9E3779B9u;                      \
        b += 0xBB67AE85u;                      \
    }

/* hi and lo 32 bits of c * x in each of the 8 lanes (vpmuludq on the even
 * lanes and on the odd ones shifted down, blended back) */
__attribute__((target("avx2"), always_inline)) static inline void
mulhilo8(__m256i c, __m256i x, __m256i *hi, __m256i *lo)
{
    __m256i even = _mm256_mul_epu32(x, c), odd = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), c);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
    *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

/* The same numbers with AVX2: 8 Philox blocks (32 elements) at a time, the
 * rounds in vector registers, the words put back in element order by a 4 x 8
 * transpose, and the keep/drop a compare and a mask — no branch per element
 * (the plain loop's were mispredicted half the time at rate 0.5: dropout was
 * 4.6% of a batch-1024 step).  Integer rounds, and x * keep_scale or +0:
 * the same bits as rt_simd_dropout_plain (test_dropout_avx2). */
__attribute__((target("avx2"))) static void dropout_avx2(float *x, int64_t n, uint64_t e0,
                                                          float rate, uint32_t k0, uint32_t k1,
                                                          uint64_t step)
{
    const float keep_scale = 1.0f / (1.0f - rate);
    const uint64_t e_end = e0 + (uint64_t)n;
    const __m256i m0 = _mm256_set1_epi32((int)0xD2511F53u);
    const __m256i m1 = _mm256_set1_epi32((int)0xCD9E8D57u);
    const __m256 vrate = _mm256_set1_ps(rate), vscale = _mm256_set1_ps(keep_scale);
    const __m256 unit = _mm256_set1_ps(1.0f / 16777216.0f);
    uint64_t q = e0 >> 2;
    while ((q << 2) < e_end) {
        uint32_t c0[8], c1[8];
        for (int i = 0; i < 8; i++) {
            c0[i] = (uint32_t)(q + (uint64_t)i);
            c1[i] = (uint32_t)((q + (uint64_t)i) >> 32);
        }
        __m256i x0 = _mm256_loadu_si256((const __m256i *)c0);
        __m256i x1 = _mm256_loadu_si256((const __m256i *)c1);
        __m256i x2 = _mm256_set1_epi32((int)(uint32_t)step);
        __m256i x3 = _mm256_set1_epi32((int)(uint32_t)(step >> 32));
        uint32_t a = k0, b = k1;
        PHILOX_ROUNDS(__m256i, mulhilo8, _mm256_xor_si256, _mm256_set1_epi32)
        /* lane i holds block q+i's words 0..3 in x0..x3: element 4(q+i)+k */
        __m256i t0 = _mm256_unpacklo_epi32(x0, x1), t1 = _mm256_unpackhi_epi32(x0, x1);
        __m256i t2 = _mm256_unpacklo_epi32(x2, x3), t3 = _mm256_unpackhi_epi32(x2, x3);
        __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
        __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
        __m256i w[4] = {_mm256_permute2x128_si256(u0, u1, 0x20),
                        _mm256_permute2x128_si256(u2, u3, 0x20),
                        _mm256_permute2x128_si256(u0, u1, 0x31),
                        _mm256_permute2x128_si256(u2, u3, 0x31)};
        const uint64_t base = q << 2; /* element of w's first word */
        for (int v = 0; v < 4; v++) {
            const uint64_t e = base + 8 * (uint64_t)v;
            __m256 u = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(w[v], 8)), unit);
            __m256 keep = _mm256_cmp_ps(u, vrate, _CMP_GE_OQ);
            if (e >= e0 && e + 8 <= e_end) {
                float *px = x + (e - e0);
                __m256 kept = _mm256_mul_ps(_mm256_loadu_ps(px), vscale);
                _mm256_storeu_ps(px, _mm256_and_ps(keep, kept));
                continue;
            }
            uint32_t kv[8] __attribute__((aligned(32)));
            _mm256_store_si256((__m256i *)kv, _mm256_castps_si256(keep));
            for (int k = 0; k < 8; k++) /* the first and last pieces */
                if (e + (uint64_t)k >= e0 && e + (uint64_t)k < e_end) {
                    float *px = x + (e + (uint64_t)k - e0);
                    *px = kv[k] ? *px * keep_scale : 0.0f;
                }
        }
        q += 8;
    }
}

#define T512 __attribute__((target("avx512f")))

/* mulhilo8's, 16 lanes */
T512 __attribute__((always_inline)) static inline void mulhilo16(__m512i c, __m512i x, __m512i *hi,
                                                                 __m512i *lo)
{
    __m512i even = _mm512_mul_epu32(x, c), odd = _mm512_mul_epu32(_mm512_srli_epi64(x, 32), c);
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
    *lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

/* dropout_avx2's numbers with AVX-512: 16 Philox blocks (64 elements) at a
 * time; the words back in element order by unpacks within 128-bit lanes and
 * a 4 x 4 transpose of the lanes; the drop a mask (+0, as AVX2's and).
 * The same bits as rt_simd_dropout_plain (test_dropout_isas). */
T512 static void dropout_avx512(float *x, int64_t n, uint64_t e0, float rate, uint32_t k0,
                                uint32_t k1, uint64_t step)
{
    const float keep_scale = 1.0f / (1.0f - rate);
    const uint64_t e_end = e0 + (uint64_t)n;
    const __m512i m0 = _mm512_set1_epi32((int)0xD2511F53u);
    const __m512i m1 = _mm512_set1_epi32((int)0xCD9E8D57u);
    const __m512 vrate = _mm512_set1_ps(rate), vscale = _mm512_set1_ps(keep_scale);
    const __m512 unit = _mm512_set1_ps(1.0f / 16777216.0f);
    uint64_t q = e0 >> 2;
    while ((q << 2) < e_end) {
        uint32_t c0[16] __attribute__((aligned(64))), c1[16] __attribute__((aligned(64)));
        for (int i = 0; i < 16; i++) {
            c0[i] = (uint32_t)(q + (uint64_t)i);
            c1[i] = (uint32_t)((q + (uint64_t)i) >> 32);
        }
        __m512i x0 = _mm512_load_si512(c0), x1 = _mm512_load_si512(c1);
        __m512i x2 = _mm512_set1_epi32((int)(uint32_t)step);
        __m512i x3 = _mm512_set1_epi32((int)(uint32_t)(step >> 32));
        uint32_t a = k0, b = k1;
        PHILOX_ROUNDS(__m512i, mulhilo16, _mm512_xor_si512, _mm512_set1_epi32)
        /* u_k's 128-bit lane L: block q+4L+k's words 0..3 */
        __m512i t0 = _mm512_unpacklo_epi32(x0, x1), t1 = _mm512_unpackhi_epi32(x0, x1);
        __m512i t2 = _mm512_unpacklo_epi32(x2, x3), t3 = _mm512_unpackhi_epi32(x2, x3);
        __m512i u0 = _mm512_unpacklo_epi64(t0, t2), u1 = _mm512_unpackhi_epi64(t0, t2);
        __m512i u2 = _mm512_unpacklo_epi64(t1, t3), u3 = _mm512_unpackhi_epi64(t1, t3);
        /* w[L] = lanes L of u0..u3: blocks q+4L .. q+4L+3, elements in order */
        __m512i s0 = _mm512_shuffle_i32x4(u0, u1, 0x44), s1 = _mm512_shuffle_i32x4(u0, u1, 0xEE);
        __m512i s2 = _mm512_shuffle_i32x4(u2, u3, 0x44), s3 = _mm512_shuffle_i32x4(u2, u3, 0xEE);
        __m512i w[4] = {_mm512_shuffle_i32x4(s0, s2, 0x88), _mm512_shuffle_i32x4(s0, s2, 0xDD),
                        _mm512_shuffle_i32x4(s1, s3, 0x88), _mm512_shuffle_i32x4(s1, s3, 0xDD)};
        const uint64_t base = q << 2;
        for (int v = 0; v < 4; v++) {
            const uint64_t e = base + 16 * (uint64_t)v;
            __m512 u = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(w[v], 8)), unit);
            __mmask16 keep = _mm512_cmp_ps_mask(u, vrate, _CMP_GE_OQ);
            if (e >= e0 && e + 16 <= e_end) {
                float *px = x + (e - e0);
                _mm512_storeu_ps(px, _mm512_maskz_mul_ps(keep, _mm512_loadu_ps(px), vscale));
                continue;
            }
            for (int k = 0; k < 16; k++) /* the first and last pieces */
                if (e + (uint64_t)k >= e0 && e + (uint64_t)k < e_end) {
                    float *px = x + (e + (uint64_t)k - e0);
                    *px = (keep >> k) & 1 ? *px * keep_scale : 0.0f;
                }
        }
        q += 16;
    }
}
#endif

bool rt_simd_dropout_isa(const char *isa, float *x, int64_t n, uint64_t e0, float rate, uint32_t k0,
                         uint32_t k1, uint64_t step)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (!strcmp(isa, "avx512") && __builtin_cpu_supports("avx512f")) {
        dropout_avx512(x, n, e0, rate, k0, k1, step);
        return true;
    }
    if (!strcmp(isa, "avx2") && __builtin_cpu_supports("avx2")) {
        dropout_avx2(x, n, e0, rate, k0, k1, step);
        return true;
    }
#endif
    if (!strcmp(isa, "plain")) {
        rt_simd_dropout_plain(x, n, e0, rate, k0, k1, step);
        return true;
    }
    return false;
}

void rt_simd_dropout(float *x, int64_t n, uint64_t e0, float rate, uint32_t k0, uint32_t k1,
                     uint64_t step)
{
    if (!rt_simd_dropout_isa("avx512", x, n, e0, rate, k0, k1, step) &&
        !rt_simd_dropout_isa("avx2", x, n, e0, rate, k0, k1, step))
        rt_simd_dropout_plain(x, n, e0, rate, k0, k1, step);
}
