/* cuda_common.cuh — private to the CUDA backend: its state behind
 * rt_kctx.cuda, error recording, and launch-size helpers. */
#ifndef RT_CUDA_COMMON_CUH
#define RT_CUDA_COMMON_CUH

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kctx_impl.h"

/* a cached cuBLASLt plan for one GEMM shape (descriptors + chosen algorithm) */
struct lt_plan {
    bool valid, ok;
    int64_t m, n, k, lda, ldb, ldc;
    int epilogue; /* cublasLtEpilogue_t */
    bool tf32;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
};

#define RT_LT_CACHE 32
#define RT_CUDA_WORKSPACE (32u << 20)       /* cuBLAS/cuBLASLt workspace, as NVIDIA suggests for Hopper */
#define RT_CUDA_PARTIALS (1u << 19)         /* doubles for two-stage column sums (4 MiB) */

struct cuda_state {
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;
    cublasLtHandle_t lt;
    void *workspace;
    double *partials;
    lt_plan plans[RT_LT_CACHE];
    int next_plan;
    /* first error seen since the last check: CUDA or cuBLAS */
    cudaError_t cuda_err;
    int blas_err;
    const char *blas_what;
};

static inline cuda_state *CS(rt_kctx *ctx) { return (cuda_state *)ctx->cuda; }

/* What cuda_ops.cu and cuda_dense.cu give the ops table in cuda_ctx.cu
 * (contracts: the rt_k_ functions of rt_kernels.h). */
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

static inline void record_blas(cuda_state *s, cublasStatus_t st, const char *what)
{
    if (st != CUBLAS_STATUS_SUCCESS && s->blas_err == 0) {
        s->blas_err = (int)st;
        s->blas_what = what;
    }
}

static inline void record_launch(cuda_state *s)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess && s->cuda_err == cudaSuccess)
        s->cuda_err = e;
}

/* Grid for a grid-stride loop over n items. */
static inline unsigned grid_for(int64_t n, int threads)
{
    int64_t g = (n + threads - 1) / threads;
    if (g < 1)
        g = 1;
    if (g > 65535 * 8)
        g = 65535 * 8;
    return (unsigned)g;
}

/* Fixed-order tree reduction over a block of BLOCK threads (power of two):
 * deterministic for a given launch shape. */
template <int BLOCK>
__device__ __forceinline__ double block_sum(double v, double *shm)
{
    shm[threadIdx.x] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s)
            shm[threadIdx.x] += shm[threadIdx.x + s];
        __syncthreads();
    }
    double r = shm[0];
    __syncthreads();
    return r;
}

#endif
