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

/* y[r, j] = act(y[r, j] + b[j]) for rows x n. */
void rt_simd_bias_act(float *y, int64_t ldy, int64_t rows, int64_t n, const float *b, bool relu);

/* g[r, j] = relu ? (y[r, j] > 0 ? g[r, j] : 0) : g[r, j]; acc[j] += g[r, j]
 * for rows x n (column j of the strip). */
void rt_simd_mask_colsum(float *g, int64_t ldg, const float *y, int64_t ldy, int64_t rows,
                         int64_t n, bool relu, double *acc);

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
