/* cpu_gemm_impl.h — private to cpu_gemm*.c: a GEMM kernel, what the blocked
 * product (cpu_gemm.c) runs — its register tile, block sizes, micro-kernel
 * and packing.  The fp32 kernels pack floats; the bf16 one
 * (cpu_gemm_bf16.c) packs pairs of k as two bf16 in 32 bits, in the same
 * buffers: a panel row then holds ceil(kc / kpack) elements. */
#ifndef RT_CPU_GEMM_IMPL_H
#define RT_CPU_GEMM_IMPL_H

#include <stdbool.h>
#include <stdint.h>

/* the MR x NR tile of c (row stride ldc): its chains over kc packed
 * elements of k, continued from c when load, else started from zero */
typedef void (*micro_fn)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                         bool load);
/* the same chains with A's MR rows read in place (element (r, k) at
 * a[r*lda + k]) instead of from a packed panel */
typedef void (*micro_rows_fn)(int64_t kc, const float *a, int64_t lda, const float *b, float *c,
                              int64_t ldc, bool load);
/* Rows [i0, i0+mc) of op(A) over k in [p0, p0+kc) as panels of mr rows
 * (element (row ip+r, packed k) at ap[ip*kp + k*mr + r], kp = kc / kpack
 * rounded up); columns [j0, j0+nc) of op(B) as panels of nr columns, the
 * same way.  Rows, columns and k past the edges are zeros.  The source is
 * fp32, or bf16 when h (the bf16 kernel's only). */
typedef void (*pack_a_fn)(const void *A, bool h, int64_t lda, bool ta, int64_t i0, int64_t mc,
                          int64_t p0, int64_t kc, int mr, float *ap);
typedef void (*pack_b_fn)(const void *B, bool h, int64_t ldb, bool tb, int64_t j0, int64_t nc,
                          int64_t p0, int64_t kc, int nr, float *bp);

typedef struct kernel {
    const char *name;
    int mr, nr;         /* the register tile */
    int64_t kc, mc, nc; /* blocks: A's MC x KC, B's KC x NC (k-values) */
    /* a_in_l1: the tiles of a row of panels run along B's panels, each A
     * panel (MR x KC) staying in L1 while B's block (KC x NC) streams from
     * L2; else along A's panels, each B panel (KC x NR) staying in L1
     * while A's block (MC x KC) streams from L2 and B's from L3 */
    bool a_in_l1;
    micro_fn fn;
    int kpack; /* k-values per packed element: 1 (fp32), 2 (bf16 pairs) */
    pack_a_fn pack_a;
    pack_b_fn pack_b;
    /* where not NULL (fp32 a_in_l1 kernels): the micro-kernel on A's own
     * rows, for an fp32 op(A) = A whose panel needs no packing */
    micro_rows_fn fn_rows;
    /* k-values per step of the micro-kernel, a multiple of kpack (AMX: 32):
     * k-blocks are multiples of it, and a panel row holds
     * round_up(kc, kalign) / kpack elements, the ones past kc zeros */
    int kalign;
    /* where not NULL, run by each thread before and after its share of a
     * product (AMX: configure the tile registers, then release them) */
    void (*enter)(void);
    void (*leave)(void);
} kernel;

#define MAX_MR 32
#define MAX_NR 32

/* The bf16 kernel — AMX's tiles where the CPU has them and Linux lets the
 * process use them, else AVX512_BF16's vdpbf16ps — or NULL when this CPU has
 * no bf16 instructions (or RT_GEMM_KERNEL names an fp32 kernel: bf16 is
 * then refused; amx-bf16 or avx512-bf16 picks that one where it can run). */
const kernel *rt_gemm_bf16_kernel(void);

#endif
