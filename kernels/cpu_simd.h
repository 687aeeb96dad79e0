/* cpu_simd.h — private to kernels/: the CPU backend's hot inner loops, each
 * built for x86-64-v4 (AVX-512), v3 (AVX2/FMA) and the baseline, chosen at
 * load time (GCC/Clang target_clones).  The binary stays portable and a
 * user's AVX-512 machine runs 16-wide.  Callers do the threading. */
#ifndef RT_CPU_SIMD_H
#define RT_CPU_SIMD_H

#include <stdbool.h>
#include <stdint.h>

/* A function cloned for x86-64-v4 (AVX-512), v3 (AVX2/FMA) and the
 * baseline, picked at load time.  GCC only: clang's target_clones does not
 * take the x86-64-vN levels, and sanitizer builds (clang's fuzzers
 * included) need no clones. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(RT_NO_MULTIVERSION)
#define RT_MV __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RT_MV
#endif

/* Where the clones would contract a product and a sum into one FMA, and so
 * round once where the baseline rounds twice: off for the loops that keep
 * the baseline's bits (GCC: -ffp-contract=fast is its default in GNU C). */
#if defined(__GNUC__) && !defined(__clang__)
#define RT_NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define RT_NO_CONTRACT
#endif

/* y[i] = x[i] rounded to bf16 as the bf16 kernel rounds its operands
 * (nearest even; below fp32's normal range to zero), i < n.  Only where
 * the CPU has the bf16 GEMM kernel (cpu_gemm_bf16.c). */
void rt_bf16_store(const float *x, int64_t n, uint16_t *y);

/* y[r, j] = act(y[r, j] + b[j]) for rows x n (b NULL: no bias). */
void rt_simd_bias_act(float *y, int64_t ldy, int64_t rows, int64_t n, const float *b, bool relu);

/* g[r, j] = relu ? (y[r, j] > 0 ? g[r, j] : 0) : g[r, j]; acc[j] += g[r, j]
 * for rows x n (column j of the strip). */
void rt_simd_mask_colsum(float *g, int64_t ldg, const float *y, int64_t ldy, int64_t rows,
                         int64_t n, bool relu, double *acc);

/* y[r, j] = x[r, j] * w[j] (+ b[j] when b), then max(., 0) when relu, for
 * rows x n (y may be x). */
void rt_simd_scale_rows(const float *x, int64_t ldx, const float *w, const float *b, bool relu,
                        int64_t rows, int64_t n, float *y, int64_t ldy);

/* The backward of rt_simd_scale_rows for rows x n: with g = g[r, j] * c
 * (float), 0 where y[r, j] > 0 fails when y is not NULL: sw[j] += g *
 * x[r, j] and sb[j] += g in double, rows in order; when dx, dx[r, j] = g *
 * w[j] (dx may be g or x); when dxh, the same rounded to bf16 there
 * (rt_bf16_store; neither g nor x). */
void rt_simd_scale_colsum(const float *g, int64_t ldg, float c, const float *y, int64_t ldy,
                          const float *x, int64_t ldx, const float *w, int64_t rows, int64_t n,
                          double *sw, double *sb, float *dx, uint16_t *dxh, int64_t lddx);

/* Two of them, the second's backward feeding the first's (rt_k_scale_pair_bwd
 * for rows x n): s2[j] += g2 * y[r, j] (the second's input y, its g = g2);
 * dy = g2 * w2[j]; then as rt_simd_scale_colsum with g = dy, c and the
 * ReLU's mask by y when relu: sw, sb, and dx or dxh. */
void rt_simd_scale2_colsum(const float *g2, int64_t ldg, const float *y, int64_t ldy,
                           const float *w2, float c, bool relu, const float *x, int64_t ldx,
                           const float *w, int64_t rows, int64_t n, double *s2, double *sw,
                           double *sb, float *dx, uint16_t *dxh, int64_t lddx);

/* y[j] = sum over t of x[t * D + j] in double, members t in order (divided
 * by k when mean), for j < D: ens_math.h's rt_ens_elem for SUM and MEAN. */
void rt_simd_member_sum(const float *x, int64_t k, int64_t D, bool mean, float *y);

/* Adam+L2 on n elements (see rt_k_adam); lrt has the bias correction. */
void rt_simd_adam(float *p, const float *g, float *m, float *v, int64_t n, float grad_scale,
                  float l2x2, float b1, float b2, float lrt, float eps);

/* Inverted dropout of n consecutive elements numbered e0, e0+1, ... with the
 * Philox key (k0, k1) at `step` (same numbers as rt_rng_uniform): with
 * AVX-512 or AVX2 where the CPU has them, else rt_simd_dropout_plain — the
 * portable loop, the same bits (tests compare them); rt_simd_dropout_isa
 * runs the one named ("avx512", "avx2", "plain"), false when the CPU
 * cannot. */
void rt_simd_dropout(float *x, int64_t n, uint64_t e0, float rate, uint32_t k0, uint32_t k1,
                     uint64_t step);
void rt_simd_dropout_plain(float *x, int64_t n, uint64_t e0, float rate, uint32_t k0, uint32_t k1,
                           uint64_t step);
bool rt_simd_dropout_isa(const char *isa, float *x, int64_t n, uint64_t e0, float rate, uint32_t k0,
                         uint32_t k1, uint64_t step);

#endif
