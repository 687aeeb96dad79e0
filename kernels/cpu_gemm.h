/* cpu_gemm.h — private to the CPU backend: ringtrain's own single-precision
 * matrix multiply.
 *
 * Every element of C is one fused multiply-add chain over k = 0 .. K-1 in
 * order, from zero: c = fma(a[k], b[k], c).  Blocking, packing, the split
 * of the work over threads (rows or columns, never k) and the vector width
 * of the kernel (AVX-512, AVX2, or scalar fmaf) change which elements are
 * computed together, never how one is computed.  So a result does not
 * depend on the batch size, on a row's position in the batch, on the thread
 * count or on which of the kernels ran — unlike OpenBLAS, whose sums depend
 * on all of these (measured: rows of the same input differ in the last
 * bits between M = 1000 and M = 4096, and between 1 and 2 threads).
 * (Model: the GotoBLAS/BLIS blocking of packed panels around a register
 * micro-kernel.) */
#ifndef RT_CPU_GEMM_H
#define RT_CPU_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "kctx_impl.h"

/* Row-major C (M x N, ldc) = op(A) · op(B), where op(A) is M x K (A stored
 * M x K, or K x M when ta) and op(B) is K x N (B stored K x N, or N x K
 * when tb).  K = 0 gives zeros.  Uses ctx's threads and workspace. */
void rt_gemm(rt_kctx *ctx, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A,
             int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc);
/* rt_gemm with A (a16) or B (b16) given in bf16 (uint16_t, RT_BF16's
 * rounding): the bf16 kernel's product, the same bits as rt_gemm's with
 * ctx's bf16 on and those operands in fp32.  Only where the CPU has the
 * bf16 kernel. */
void rt_gemm_ex(rt_kctx *ctx, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void *A,
                bool a16, int64_t lda, const void *B, bool b16, int64_t ldb, float *C, int64_t ldc);

/* The micro-kernels this CPU can run, best first ("avx512", "avx2",
 * "scalar", and "scalar-12x32": the AVX-512 kernel's shape in plain C, for
 * tests), and forcing one (tests; also RT_GEMM_KERNEL in the environment).
 * false when the CPU cannot run it. */
#define RT_GEMM_MAX_KERNELS 5
int rt_gemm_kernels(const char *names[RT_GEMM_MAX_KERNELS]);
bool rt_gemm_force(const char *name);
const char *rt_gemm_kernel_name(void);
/* The same for the bf16 kernels this CPU (and its kernel) allow ("amx-bf16",
 * "avx512-bf16"; the first is what bf16 GEMMs run) and forcing one. */
int rt_gemm_bf16_kernels(const char *names[2]);
bool rt_gemm_bf16_force(const char *name);

/* Free the context's workspace (cpu fini). */
void rt_gemm_free(rt_kctx *ctx);

#endif
