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
/* dy *= relu'(y) in place when act is RT_ACT_RELU (y unread otherwise),
 * then db = dy's column sums (fixed order per column). */
void rt_cpu_mask_colsum(rt_kctx *ctx, rt_view y, rt_act act, rt_view dy, float *db);
/* cpu_layers.c and cpu_attn.c: the layer graph's ops (contracts: rt_k_*). */
void rt_cpu_act_fwd(rt_kctx *ctx, rt_act act, rt_view x, rt_view y);
void rt_cpu_act_bwd(rt_kctx *ctx, rt_act act, rt_view x, rt_view dy, rt_view dx);
void rt_cpu_reglu_fwd(rt_kctx *ctx, rt_view x, rt_view y);
void rt_cpu_reglu_bwd(rt_kctx *ctx, rt_view x, rt_view dy, rt_view dx);
void rt_cpu_ln_fwd(rt_kctx *ctx, rt_view x, const float *gamma, const float *beta, float eps,
                   float *save_mean, float *save_rstd, rt_view y);
void rt_cpu_ln_bwd(rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma,
                   const float *save_mean, const float *save_rstd, float *dgamma, float *dbeta,
                   rt_view dx);
void rt_cpu_ew(rt_kctx *ctx, rt_ew op, rt_view a, rt_view b, rt_view y);
void rt_cpu_bias_add(rt_kctx *ctx, const float *b, rt_view y);
void rt_cpu_colsum(rt_kctx *ctx, rt_view dy, float *out);
void rt_cpu_tokens_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, int64_t d,
                       rt_view y);
void rt_cpu_tokens_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view dy, int64_t d, float *dw,
                       float *db, rt_view dx);
void rt_cpu_quantile_fwd(rt_kctx *ctx, rt_view x, const float *q, int64_t nq, rt_view y);
void rt_cpu_robust_fwd(rt_kctx *ctx, rt_view x, const float *center, const float *scale, rt_view y);
void rt_cpu_ple_fwd(rt_kctx *ctx, rt_view x, const float *edges, int64_t T, rt_view y);
void rt_cpu_ple_bwd(rt_kctx *ctx, rt_view x, const float *edges, int64_t T, rt_view dy, rt_view dx);
void rt_cpu_periodic_fwd(rt_kctx *ctx, rt_view x, const float *f, int64_t k, rt_view y);
void rt_cpu_periodic_bwd(rt_kctx *ctx, rt_view x, const float *f, int64_t k, rt_view dy, float *df,
                         rt_view dx);
void rt_cpu_ens_repeat(rt_kctx *ctx, rt_view x, rt_view y);
void rt_cpu_ens_reduce(rt_kctx *ctx, rt_ens_op op, rt_view x, rt_view y);
void rt_cpu_attn_fwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                     const int64_t *step, rt_view out);
void rt_cpu_attn_bwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                     const int64_t *step, rt_view dout, rt_view dqkv);
/* cpu_loss.c: rt_k_loss, rt_k_sqnorm, and rt_k_optim's AdamW and SGD on
 * one segment (len elements from p, g, m, v; gs the gradient's factor). */
void rt_cpu_loss(rt_kctx *ctx, const rt_loss_desc *d, rt_view z, const float *y, const float *w,
                 const float *norm, rt_view dz, double *acc);
void rt_cpu_sqnorm(rt_kctx *ctx, const float *g, int64_t n, double *out);
void rt_cpu_optim_seg(const rt_adam_hp *hp, const rt_adam_seg *sg, float *p, const float *g,
                      float *m, float *v, int64_t t, float gs);
/* Threads of the BLAS library (and the OpenMP pool it shares with us). */
void rt_cpu_set_threads(int threads);

#endif
