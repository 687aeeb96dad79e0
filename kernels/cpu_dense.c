/* cpu_dense.c — dense layer forward/backward on the CPU: ringtrain's GEMM
 * (cpu_gemm.h: results independent of batch size and threads) for the three
 * products, and one pass each for the fused epilogues (bias + ReLU forward;
 * ReLU mask + bias gradient backward).
 *
 * Row-major throughout: x (B, in), w (out, in), y (B, out).
 *   forward   y  = x · wᵀ            sgemm(N, T), then y = act(y + b)
 *   backward  dz = dy ⊙ act'(y), db = Σ_rows dz      (one pass)
 *             dw = dzᵀ · x           sgemm(T, N)
 *             dx = dz · w            sgemm(N, N) */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu_backend.h"
#include "cpu_gemm.h"
#include "cpu_gemm_impl.h"
#include "cpu_simd.h"

#define PAR_MIN 32768
#define COL_BLOCK 512

void rt_cpu_set_threads(int threads) { openblas_set_num_threads(threads); }

const char *rt_cpu_gemm_kernel(void) { return rt_gemm_kernel_name(); }
const char *rt_cpu_bf16_kernel(void)
{
    const kernel *k = rt_gemm_bf16_kernel();
    return k ? k->name : NULL;
}

void rt_cpu_dense_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act, rt_view y)
{
    const int64_t B = x.rows, in = x.cols, out = y.cols;
    if (B == 0 || out == 0)
        return;
    float *yp = RT_F(y);
    rt_gemm_ex(ctx, false, true, B, out, in, x.p, x.dtype == RT_BF16, x.ld, w, false, in, yp, y.ld);
    if (!b && act == RT_ACT_NONE)
        return;
    /* rows in blocks of 16 per call: the epilogue is memory-bound */
    const int64_t nblk = (B + 15) / 16;
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (B * out > PAR_MIN)
    for (int64_t k = 0; k < nblk; k++) {
        int64_t r0 = k * 16, nr = B - r0 < 16 ? B - r0 : 16;
        rt_simd_bias_act(yp + r0 * y.ld, y.ld, nr, out, b, act == RT_ACT_RELU);
    }
}

/* dz = dy * act'(y) in place (ReLU; y is unread otherwise: pass dy) and db = column
 * sums of dz.  Threads own column ranges, so each db[j] is summed by one
 * thread in row order: deterministic, and the same bits for any thread
 * count. */
void rt_cpu_mask_colsum(rt_kctx *ctx, rt_view y, rt_act act, rt_view dy, float *db)
{
    const int64_t B = dy.rows, out = dy.cols;
    const int nthr = B * out > PAR_MIN ? ctx->threads : 1;
#pragma omp parallel num_threads(nthr)
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        int64_t c0 = out * t / nt, c1 = out * (t + 1) / nt;
        double acc[COL_BLOCK];
        for (int64_t cb = c0; cb < c1; cb += COL_BLOCK) {
            int64_t ce = cb + COL_BLOCK < c1 ? cb + COL_BLOCK : c1;
            for (int64_t j = cb; j < ce; j++)
                acc[j - cb] = 0.0;
            rt_simd_mask_colsum(RT_F(dy) + cb, dy.ld, RT_F(y) + cb, y.ld, B, ce - cb,
                                act == RT_ACT_RELU, acc);
            for (int64_t j = cb; j < ce; j++)
                db[j] = (float)acc[j - cb];
        }
    }
}

void rt_cpu_dense_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act, rt_view dy,
                      float *dw, float *db, rt_view dx)
{
    const int64_t B = x.rows, in = x.cols, out = dy.cols;
    if (B == 0) {
        memset(dw, 0, (size_t)(out * in) * sizeof(float));
        if (db)
            memset(db, 0, (size_t)out * sizeof(float));
        if (dx.p)
            for (int64_t r = 0; r < dx.rows; r++)
                memset(RT_F(dx) + r * dx.ld, 0, (size_t)in * sizeof(float));
        return;
    }
    if (db || act != RT_ACT_NONE) { /* no bias and no ReLU: dy as it is */
        float *sums = db ? db : malloc((size_t)out * sizeof *sums);
        RT_ASSERT(sums);
        rt_cpu_mask_colsum(ctx, y, act, dy, sums);
        if (!db)
            free(sums);
    }
    const bool x16 = x.dtype == RT_BF16, dy16 = dy.dtype == RT_BF16;
    rt_gemm_ex(ctx, true, false, out, in, B, dy.p, dy16, dy.ld, x.p, x16, x.ld, dw, in);
    if (dx.p)
        rt_gemm_ex(ctx, false, false, B, in, out, dy.p, dy16, dy.ld, w, false, in, RT_F(dx), dx.ld);
}
