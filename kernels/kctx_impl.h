/* kctx_impl.h — private to kernels/: the context struct and the backend
 * entry points the dispatcher (rt_kernels.c) calls after checking shapes.
 * The C and CUDA translation units both need the struct, so it lives in this
 * internal header rather than in one .c file. */
#ifndef RT_KCTX_IMPL_H
#define RT_KCTX_IMPL_H

#include "rt_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rt_kctx {
    rt_device dev;
    int threads;  /* CPU worker threads */
    bool tf32;    /* CUDA: TF32 tensor cores for fp32 GEMMs */
    void *stream; /* cudaStream_t (CUDA) */
    void *cuda;   /* the CUDA backend's state (cuda_common.cuh), NULL on the CPU */
};

/* CPU backend (cpu_ops.c, cpu_dense.c) */
void rt_cpu_embed_fwd(rt_kctx *ctx, rt_view idx, const int32_t *rowbase, rt_view table, rt_view out);
void rt_cpu_embed_bwd(rt_kctx *ctx, rt_view idx, const int32_t *rowbase, rt_view dout, rt_view dtable);
void rt_cpu_bn_fwd(rt_kctx *ctx, rt_view x, const float *gamma, const float *beta, float *run_mean,
                   float *run_var, float momentum, float eps, bool train, float *save_mean,
                   float *save_invstd, rt_view y);
void rt_cpu_bn_bwd(rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma, const float *save_mean,
                   const float *save_invstd, float *dgamma, float *dbeta, rt_view dx);
void rt_cpu_dense_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act, rt_view y);
void rt_cpu_dense_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act, rt_view dy,
                      float *dw, float *db, rt_view dx);
void rt_cpu_dropout(rt_kctx *ctx, rt_view x, float rate, uint64_t seed, uint32_t stream,
                    const int64_t *step);
void rt_cpu_head_fwd(rt_kctx *ctx, const float *z, int64_t n, float scale, float *pred);
void rt_cpu_head_bwd(rt_kctx *ctx, const float *pred, const float *dpred, int64_t n, float scale,
                     float *dz);
void rt_cpu_mae(rt_kctx *ctx, const float *pred, const float *y, int64_t n, float *dpred, double *acc);
void rt_cpu_rmspe(rt_kctx *ctx, const float *pred, const float *y, int64_t n, double *acc);
void rt_cpu_adam(rt_kctx *ctx, float *p, const float *g, float *m, float *v, int64_t n,
                 const rt_adam_seg *segs, int nseg, rt_adam_hp hp, const int64_t *step);
void rt_cpu_scale(rt_kctx *ctx, float *p, int64_t n, float s);
void rt_cpu_set_threads(int threads);

#ifdef RT_HAVE_CUDA
/* CUDA backend (cuda_*.cu); same contracts, enqueued on ctx->stream. */
rt_status rt_cuda_ctx_init(rt_kctx *ctx, char *err);
void rt_cuda_ctx_fini(rt_kctx *ctx);
rt_status rt_cuda_sync(rt_kctx *ctx, char *err);
rt_status rt_cuda_check(rt_kctx *ctx, char *err);
int rt_cuda_device_count(void);
int rt_cuda_select(int dev); /* cudaSetDevice; 0 or -1 */
void rt_cuda_name(char *buf, size_t len);
rt_status rt_cuda_capture_begin(rt_kctx *ctx, char *err);
rt_status rt_cuda_capture_end(rt_kctx *ctx, void **graph_exec, char *err);
rt_status rt_cuda_graph_launch(rt_kctx *ctx, void *graph_exec, char *err);
void rt_cuda_graph_destroy(void *graph_exec);
rt_status rt_cuda_malloc(size_t bytes, void **out);
void rt_cuda_free(void *p);
rt_status rt_cuda_malloc_host(size_t bytes, void **out);
void rt_cuda_free_host(void *p);
void rt_cuda_memcpy(rt_kctx *ctx, void *dst, const void *src, size_t bytes, rt_copy kind);
void rt_cuda_memset(rt_kctx *ctx, void *p, int value, size_t bytes);
void rt_cuda_embed_fwd(rt_kctx *ctx, rt_view idx, const int32_t *rowbase, rt_view table, rt_view out);
void rt_cuda_embed_bwd(rt_kctx *ctx, rt_view idx, const int32_t *rowbase, rt_view dout, rt_view dtable);
void rt_cuda_bn_fwd(rt_kctx *ctx, rt_view x, const float *gamma, const float *beta, float *run_mean,
                    float *run_var, float momentum, float eps, bool train, float *save_mean,
                    float *save_invstd, rt_view y);
void rt_cuda_bn_bwd(rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma, const float *save_mean,
                    const float *save_invstd, float *dgamma, float *dbeta, rt_view dx);
void rt_cuda_dense_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act, rt_view y);
void rt_cuda_dense_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act, rt_view dy,
                       float *dw, float *db, rt_view dx);
void rt_cuda_dropout(rt_kctx *ctx, rt_view x, float rate, uint64_t seed, uint32_t stream,
                     const int64_t *step);
void rt_cuda_head_fwd(rt_kctx *ctx, const float *z, int64_t n, float scale, float *pred);
void rt_cuda_head_bwd(rt_kctx *ctx, const float *pred, const float *dpred, int64_t n, float scale,
                      float *dz);
void rt_cuda_mae(rt_kctx *ctx, const float *pred, const float *y, int64_t n, float *dpred, double *acc);
void rt_cuda_rmspe(rt_kctx *ctx, const float *pred, const float *y, int64_t n, double *acc);
void rt_cuda_adam(rt_kctx *ctx, float *p, const float *g, float *m, float *v, int64_t n,
                  const rt_adam_seg *segs, int nseg, rt_adam_hp hp, const int64_t *step);
void rt_cuda_step_incr(rt_kctx *ctx, int64_t *step);
void rt_cuda_scale(rt_kctx *ctx, float *p, int64_t n, float s);
#endif

#ifdef __cplusplus
}
#endif
#endif
