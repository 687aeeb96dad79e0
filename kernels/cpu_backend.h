/* cpu_backend.h — private to the CPU backend (cpu_*.c): what cpu_dense.c
 * gives the ops table in cpu_ops.c. */
#ifndef RT_CPU_BACKEND_H
#define RT_CPU_BACKEND_H

#include <math.h>

#include "kctx_impl.h"

/* OpenBLAS sgemm plus the fused epilogues (contracts: rt_k_dense_*). */
void rt_cpu_dense_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act,
                      rt_view y);
void rt_cpu_dense_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act, rt_view dy,
                      float *dw, float *db, rt_view dx);
/* Adam's step size with the bias correction folded in, for the update that
 * makes the step *step + 1: lr * sqrt(1 - b2^t) / (1 - b1^t). */
static inline float rt_cpu_adam_lrt(const rt_adam_hp *hp, int64_t step)
{
    const double t = (double)(step + 1);
    return (float)(hp->lr * sqrt(1.0 - pow(hp->beta2, t)) / (1.0 - pow(hp->beta1, t)));
}
/* Threads of the BLAS library (and the OpenMP pool it shares with us). */
void rt_cpu_set_threads(int threads);

#endif
