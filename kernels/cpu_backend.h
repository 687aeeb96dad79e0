/* cpu_backend.h — private to the CPU backend (cpu_*.c): what cpu_dense.c
 * gives the ops table in cpu_ops.c. */
#ifndef RT_CPU_BACKEND_H
#define RT_CPU_BACKEND_H

#include "kctx_impl.h"

/* OpenBLAS sgemm plus the fused epilogues (contracts: rt_k_dense_*). */
void rt_cpu_dense_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act,
                      rt_view y);
void rt_cpu_dense_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act, rt_view dy,
                      float *dw, float *db, rt_view dx);
/* Threads of the BLAS library (and the OpenMP pool it shares with us). */
void rt_cpu_set_threads(int threads);

#endif
