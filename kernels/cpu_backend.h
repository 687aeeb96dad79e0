/* cpu_backend.h — private to the CPU backend (cpu_*.c): what its files
 * give the ops table in cpu_ops.c and one another. */
#ifndef RT_CPU_BACKEND_H
#define RT_CPU_BACKEND_H

#include "kctx_impl.h"

/* The ops of kctx_impl.h's lists, rt_cpu_NAME each (contracts: rt_k_NAME):
 * cpu_ops.c the elementwise and reduction ops, cpu_dense.c OpenBLAS sgemm
 * plus the fused epilogues, cpu_layers.c and cpu_attn.c the layer graph's
 * ops, cpu_loss.c rt_k_loss and rt_k_sqnorm. */
#define RT_CPU_OP_DECL(name, params) void rt_cpu_##name params;
RT_KERNEL_OPS(RT_CPU_OP_DECL)
RT_KERNEL_CPU_OPS(RT_CPU_OP_DECL)

/* dy *= relu'(y) in place when act is RT_ACT_RELU (y unread otherwise),
 * then db = dy's column sums (fixed order per column). */
void rt_cpu_mask_colsum(rt_kctx *ctx, rt_view y, rt_act act, rt_view dy, float *db);
/* cpu_loss.c: rt_k_optim's AdamW and SGD on one segment (len elements
 * from p, g, m, v; gs the gradient's factor). */
void rt_cpu_optim_seg(const rt_adam_hp *hp, const rt_adam_seg *sg, float *p, const float *g,
                      float *m, float *v, int64_t t, float gs);
/* Threads of the BLAS library (and the OpenMP pool it shares with us). */
void rt_cpu_set_threads(int threads);

#endif
