/* kctx_impl.h — private to kernels/: the context struct and the table of
 * operations a backend implements.  The dispatcher (rt_kernels.c) checks
 * shapes once and calls through ctx->ops; the CPU backend (cpu_*.c) and the
 * CUDA backend (cuda_*.cu) each fill one table with designated
 * initialisers.  Which backends exist is decided at build time
 * (RT_HAVE_CUDA), not by loading plugins.
 * (Model: Redis ConnectionType; UCC's component tables.) */
#ifndef RT_KCTX_IMPL_H
#define RT_KCTX_IMPL_H

#include "rt_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_kernel_ops rt_kernel_ops;

/* The compute ops, each written once as X(name, (parameters)): the ops
 * table's entries below, the backends' declarations (rt_cpu_NAME in
 * cpu_backend.h, rt_cuda_NAME in cuda_common.cuh) and both tables
 * (cpu_ops.c, cuda_ctx.cu) are made from these lists.  Each has the contract
 * of the public rt_k_NAME in rt_kernels.h, whose shapes rt_kernels.c checks
 * before it calls through (and where the compiler checks that the public
 * function and the op agree).  RT_KERNEL_CPU_OPS: the CPU's alone (sync
 * batch norm, TabM's paired scalings); NULL in the CUDA table. */
/* clang-format off */
#define RT_KERNEL_OPS(X)                                                                      \
    X(embed_fwd, (rt_kctx *ctx, rt_view idx, const rt_embed_col *cols, const float *tables,   \
                  rt_view out))                                                               \
    X(embed_bwd, (rt_kctx *ctx, rt_view idx, const rt_embed_col *cols, rt_view dout,          \
                  float *dtables, int64_t ntab))                                              \
    X(bn_fwd, (rt_kctx *ctx, rt_view x, const float *gamma, const float *beta,                \
               float *run_mean, float *run_var, float momentum, float eps, bool train,        \
               float *save_mean, float *save_invstd, rt_view y))                              \
    X(bn_bwd, (rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma,                       \
               const float *save_mean, const float *save_invstd, float *dgamma, float *dbeta, \
               rt_view dx))                                                                   \
    X(dense_fwd, (rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act,        \
                  rt_view y))                                                                 \
    X(dense_bwd, (rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act, rt_view dy, \
                  float *dw, float *db, rt_view dx))                                          \
    X(dropout, (rt_kctx *ctx, rt_view x, float rate, uint64_t seed, uint32_t stream,          \
                const int64_t *step))                                                         \
    X(act_fwd, (rt_kctx *ctx, rt_act act, rt_view x, rt_view y))                              \
    X(act_bwd, (rt_kctx *ctx, rt_act act, rt_view x, rt_view dy, rt_view dx))                 \
    X(reglu_fwd, (rt_kctx *ctx, rt_view x, rt_view y))                                        \
    X(reglu_bwd, (rt_kctx *ctx, rt_view x, rt_view dy, rt_view dx))                           \
    X(ln_fwd, (rt_kctx *ctx, rt_view x, const float *gamma, const float *beta, float eps,     \
               float *save_mean, float *save_rstd, rt_view y))                                \
    X(ln_bwd, (rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma,                       \
               const float *save_mean, const float *save_rstd, float *dgamma, float *dbeta,   \
               rt_view dx))                                                                   \
    X(ew, (rt_kctx *ctx, rt_ew op, rt_view a, rt_view b, rt_view y))                          \
    X(bias_add, (rt_kctx *ctx, const float *b, rt_view y))                                    \
    X(colsum, (rt_kctx *ctx, rt_view dy, float *out))                                         \
    X(tokens_fwd, (rt_kctx *ctx, rt_view x, const float *w, const float *b, int64_t d,        \
                   rt_view y))                                                                \
    X(tokens_bwd, (rt_kctx *ctx, rt_view x, const float *w, rt_view dy, int64_t d, float *dw, \
                   float *db, rt_view dx))                                                    \
    X(scale_act_fwd, (rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act,    \
                      float rate, uint64_t seed, uint32_t stream, const int64_t *step,        \
                      rt_view y))                                                             \
    X(scale_act_bwd, (rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act,         \
                      float rate, rt_view dy, float *dw, float *db, rt_view dx))              \
    X(quantile_fwd, (rt_kctx *ctx, rt_view x, const float *q, int64_t nq, rt_view y))         \
    X(robust_fwd, (rt_kctx *ctx, rt_view x, const float *center, const float *scale,          \
                   rt_view y))                                                                \
    X(ple_fwd, (rt_kctx *ctx, rt_view x, const float *edges, int64_t T, rt_view y))           \
    X(ple_bwd, (rt_kctx *ctx, rt_view x, const float *edges, int64_t T, rt_view dy,           \
                rt_view dx))                                                                  \
    X(periodic_fwd, (rt_kctx *ctx, rt_view x, const float *f, int64_t k, rt_view y))          \
    X(periodic_bwd, (rt_kctx *ctx, rt_view x, const float *f, int64_t k, rt_view dy,          \
                     float *df, rt_view dx))                                                  \
    X(ens_repeat, (rt_kctx *ctx, rt_view x, rt_view y))                                       \
    X(ens_reduce, (rt_kctx *ctx, rt_ens_op op, rt_view x, rt_view y))                         \
    X(attn_fwd, (rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,                   \
                 const int64_t *step, rt_view out))                                           \
    X(attn_bwd, (rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,                   \
                 const int64_t *step, rt_view dout, rt_view dqkv))                            \
    X(head_fwd, (rt_kctx *ctx, const float *z, int64_t n, float scale, float *pred))          \
    X(head_bwd, (rt_kctx *ctx, const float *pred, const float *dpred, int64_t n, float scale, \
                 float *dz))                                                                  \
    X(optim, (rt_kctx *ctx, float *p, const float *g, float *m, float *v, int64_t n,          \
              const rt_adam_seg *segs, int nseg, const rt_adam_hp *hp, int64_t *step,         \
              const double *gsq))                                                             \
    X(sqnorm, (rt_kctx *ctx, const float *g, int64_t n, double *out))                         \
    X(loss, (rt_kctx *ctx, const rt_loss_desc *d, rt_view z, const float *y, const float *w,  \
             const float *norm, rt_view dz, double *acc))                                     \
    X(scale, (rt_kctx *ctx, float *p, int64_t n, float s))                                    \
    X(to_bf16, (rt_kctx *ctx, const float *x, uint16_t *y, int64_t n))                        \
    X(from_bf16, (rt_kctx *ctx, const uint16_t *x, float *y, int64_t n))
#define RT_KERNEL_CPU_OPS(X)                                                                 \
    X(bn_fwd_given, (rt_kctx *ctx, rt_view x, const float *gamma, const float *beta,         \
                     const double *mean, const double *var, float eps, rt_view y))           \
    X(bn_bwd_given, (rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma,                \
                     const float *save_mean, const float *save_invstd, const double *sum_dy, \
                     const double *sum_dy_xhat, double count, rt_view dx))                \
    X(scale_pair_fwd, (rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act,   \
                       float rate, uint64_t seed, uint32_t stream, const int64_t *step,       \
                       rt_view y, const float *w2, rt_view y2))                               \
    X(scale_pair_bwd, (rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act,        \
                       float rate, const float *w2, rt_view dy2, float *dw2, float *dw,       \
                       float *db, rt_view dx))
/* clang-format on */
#define RT_KOP_FIELD(name, params) void(*name) params;

struct rt_kctx {
    rt_device dev;
    const rt_kernel_ops *ops;
    int threads;  /* CPU worker threads */
    bool tf32;    /* CUDA: TF32 tensor cores for fp32 GEMMs */
    bool bf16;    /* GEMM inputs rounded to bf16, fp32 sums (rt_kctx_set_bf16) */
    bool gpu_bf16;      /* CUDA: the device has bf16 tensor cores (set by its init) */
    bool no_bf16_store; /* rt_kctx_set_bf16_store(false) */
    void *stream; /* cudaStream_t (CUDA) */
    void *comm_stream; /* cudaStream_t for collectives (CUDA) */
    void *cuda;   /* the CUDA backend's state (cuda_common.cuh), NULL on the CPU */
    float *ws;    /* CPU: the GEMM's packing buffers (cpu_gemm.c), grown on demand */
    size_t ws_floats;
};

/* Every entry has the contract of the public function of the same name in
 * rt_kernels.h (shapes already checked).  The graph entries are NULL on a
 * backend without graphs. */
struct rt_kernel_ops {
    const char *name;
    /* devices of this kind visible to the process; make one current; its name */
    int (*device_count)(void);
    int (*select_device)(int dev); /* 0, or -1 when it cannot be used */
    void (*device_name)(char *buf, size_t len);
    /* context */
    rt_status (*init)(rt_kctx *ctx, char *err);
    void (*fini)(rt_kctx *ctx);
    rt_status (*sync)(rt_kctx *ctx, char *err);
    rt_status (*check)(rt_kctx *ctx, char *err);
    rt_status (*capture_begin)(rt_kctx *ctx, char *err);
    rt_status (*capture_end)(rt_kctx *ctx, void **graph, char *err);
    rt_status (*graph_launch)(rt_kctx *ctx, void *graph, char *err);
    void (*graph_destroy)(void *graph);
    /* events and the communication stream (NULL on the CPU: no-ops) */
    rt_status (*event_create)(rt_kctx *ctx, void **ev, char *err);
    void (*event_destroy)(void *ev);
    void (*event_record)(rt_kctx *ctx, void *ev);
    rt_status (*event_sync)(rt_kctx *ctx, void *ev, char *err);
    /* timing marks (NULL on the CPU: unsupported) */
    rt_status (*timer_create)(rt_kctx *ctx, void **ev, char *err);
    void (*timer_mark)(rt_kctx *ctx, void *ev, bool comm);
    rt_status (*timer_ms)(rt_kctx *ctx, void *a, void *b, double *ms, char *err);
    void (*fork)(rt_kctx *ctx);
    void (*join)(rt_kctx *ctx);
    /* memory */
    rt_status (*mem_available)(rt_kctx *ctx, int64_t *bytes, char *err);
    rt_status (*malloc_dev)(size_t bytes, void **out);
    void (*free_dev)(void *p);
    rt_status (*malloc_host)(size_t bytes, void **out);
    void (*free_host)(void *p);
    void (*memcpy_async)(rt_kctx *ctx, void *dst, const void *src, size_t bytes, rt_copy kind);
    void (*memset_async)(rt_kctx *ctx, void *p, int value, size_t bytes);
    /* ops: RT_KERNEL_OPS, RT_KERNEL_CPU_OPS */
    RT_KERNEL_OPS(RT_KOP_FIELD)
    RT_KERNEL_CPU_OPS(RT_KOP_FIELD)
};

extern const rt_kernel_ops rt_cpu_kernel_ops; /* cpu_ops.c */
#ifdef RT_HAVE_CUDA
extern const rt_kernel_ops rt_cuda_kernel_ops; /* cuda_ctx.cu */
#endif

#ifdef __cplusplus
}
#endif
#endif
