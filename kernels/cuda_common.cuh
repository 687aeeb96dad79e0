/* cuda_common.cuh — private to the CUDA backend: its state behind
 * rt_kctx.cuda, error recording, and launch-size helpers.
 *
 * Errors: every CUDA, cuBLAS and cuBLASLt return is checked where it
 * happens and the first failure is kept with the name of the call (or
 * kernel) that failed; rt_kctx_check/sync report it as
 * "<call>: <CUDA message>".  With RINGTRAIN_CUDA_SYNC=1 in the environment
 * the backend synchronises after every op (outside graph capture), so an
 * asynchronous fault is reported against the op that caused it — the
 * debugging mode CUDA_LAUNCH_BLOCKING gives for the runtime. */
#ifndef RT_CUDA_COMMON_CUH
#define RT_CUDA_COMMON_CUH

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kctx_impl.h"

/* a cached cuBLASLt plan for one GEMM shape and pointer alignment */
struct lt_plan {
    bool valid, ok;
    int64_t m, n, k, lda, ldb, ldc;
    int epilogue; /* cublasLtEpilogue_t */
    bool tf32;
    uint32_t align[5]; /* A, B, C/D, bias: the alignments the plan was made for */
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    size_t workspace;
};

#define RT_LT_CACHE 32
#define RT_CUDA_WORKSPACE (32u << 20)       /* cuBLAS/cuBLASLt workspace, as NVIDIA suggests for Hopper */
#define RT_CUDA_PARTIALS (1u << 19)         /* doubles for two-stage reductions (4 MiB) */

struct cuda_state {
    int device;
    cudaStream_t stream, comm;
    cudaEvent_t fork_ev, join_ev;
    cublasHandle_t blas;
    cublasLtHandle_t lt;
    void *workspace;
    double *partials;
    unsigned *maxbits;       /* embedding backward: max |gradient| as float bits, and a
                                ticket; zero between steps (k_fixed_to_float) */
    struct adam_state *adam; /* Adam's bias corrections for the next step (cuda_ops.cu) */
    unsigned *tickets;       /* per column tile: blocks done (last_of_tile), zero between uses */
    long long *emb_acc;      /* embedding backward: fixed-point accumulators */
    size_t emb_acc_len;
    lt_plan plans[RT_LT_CACHE];
    int next_plan;
    bool capturing;
    bool sync_each;          /* RINGTRAIN_CUDA_SYNC=1 */
    /* first error seen since the last check */
    cudaError_t cuda_err;
    int blas_err;
    const char *err_what;
};

static inline cuda_state *CS(rt_kctx *ctx) { return (cuda_state *)ctx->cuda; }

/* What cuda_ops.cu and cuda_dense.cu give the ops table in cuda_ctx.cu
 * (contracts: the rt_k_ functions of rt_kernels.h). */
void rt_cuda_embed_fwd(rt_kctx *ctx, rt_view idx, const rt_embed_col *cols, const float *tables,
                       rt_view out);
void rt_cuda_embed_bwd(rt_kctx *ctx, rt_view idx, const rt_embed_col *cols, rt_view dout,
                       float *dtables, int64_t ntab);
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
void rt_cuda_optim(rt_kctx *ctx, float *p, const float *g, float *m, float *v, int64_t n,
                   const rt_adam_seg *segs, int nseg, const rt_adam_hp *hp, int64_t *step,
                   const double *gsq);
/* cuda_loss.cu */
void rt_cuda_loss(rt_kctx *ctx, const rt_loss_desc *d, rt_view z, const float *y, const float *w,
                  const float *norm, rt_view dz, double *acc);
void rt_cuda_sqnorm(rt_kctx *ctx, const float *g, int64_t n, double *out);
size_t rt_cuda_adam_state_bytes(void);
void rt_cuda_scale(rt_kctx *ctx, float *p, int64_t n, float s);
void rt_cuda_free_lt_plans(cuda_state *s);
/* cuda_layers.cu and cuda_attn.cu: the layer graph's ops (contracts: rt_k_*) */
void rt_cuda_act_fwd(rt_kctx *ctx, rt_act act, rt_view x, rt_view y);
void rt_cuda_act_bwd(rt_kctx *ctx, rt_act act, rt_view x, rt_view dy, rt_view dx);
void rt_cuda_reglu_fwd(rt_kctx *ctx, rt_view x, rt_view y);
void rt_cuda_reglu_bwd(rt_kctx *ctx, rt_view x, rt_view dy, rt_view dx);
void rt_cuda_ln_fwd(rt_kctx *ctx, rt_view x, const float *gamma, const float *beta, float eps,
                    float *save_mean, float *save_rstd, rt_view y);
void rt_cuda_ln_bwd(rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma,
                    const float *save_mean, const float *save_rstd, float *dgamma, float *dbeta,
                    rt_view dx);
void rt_cuda_ew(rt_kctx *ctx, rt_ew op, rt_view a, rt_view b, rt_view y);
void rt_cuda_bias_add(rt_kctx *ctx, const float *b, rt_view y);
void rt_cuda_colsum(rt_kctx *ctx, rt_view dy, float *out);
void rt_cuda_tokens_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, int64_t d,
                        rt_view y);
void rt_cuda_tokens_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view dy, int64_t d, float *dw,
                        float *db, rt_view dx);
void rt_cuda_quantile_fwd(rt_kctx *ctx, rt_view x, const float *q, int64_t nq, rt_view y);
void rt_cuda_robust_fwd(rt_kctx *ctx, rt_view x, const float *center, const float *scale,
                        rt_view y);
void rt_cuda_ple_fwd(rt_kctx *ctx, rt_view x, const float *edges, int64_t T, rt_view y);
void rt_cuda_ple_bwd(rt_kctx *ctx, rt_view x, const float *edges, int64_t T, rt_view dy,
                     rt_view dx);
void rt_cuda_periodic_fwd(rt_kctx *ctx, rt_view x, const float *f, int64_t k, rt_view y);
void rt_cuda_periodic_bwd(rt_kctx *ctx, rt_view x, const float *f, int64_t k, rt_view dy, float *df,
                          rt_view dx);
void rt_cuda_ens_repeat(rt_kctx *ctx, rt_view x, rt_view y);
void rt_cuda_ens_reduce(rt_kctx *ctx, rt_ens_op op, rt_view x, rt_view y);
void rt_cuda_attn_fwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                      const int64_t *step, rt_view out);
void rt_cuda_attn_bwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                      const int64_t *step, rt_view dout, rt_view dqkv);

/* After an op (the call named `what`): keep the first error; in debug mode
 * wait for the op so that a fault is blamed on it. */
static inline void after_op(cuda_state *s, cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        e = cudaGetLastError(); /* a launch's configuration error */
    if (e == cudaSuccess && s->sync_each && !s->capturing)
        e = cudaStreamSynchronize(s->stream);
    if (e != cudaSuccess && s->cuda_err == cudaSuccess && s->blas_err == 0) {
        s->cuda_err = e;
        s->err_what = what;
    }
}

static inline void record_blas(cuda_state *s, cublasStatus_t st, const char *what)
{
    if (st != CUBLAS_STATUS_SUCCESS && s->blas_err == 0 && s->cuda_err == cudaSuccess) {
        s->blas_err = (int)st;
        s->err_what = what;
        return;
    }
    after_op(s, cudaSuccess, what);
}

/* A kernel launch just enqueued. */
#define LAUNCHED(s, name) after_op((s), cudaSuccess, name)

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

/* Column tiles (of 32) whose two-stage reductions finish in their last
 * block: up to this many; wider ops launch the final stage on its own. */
#define RT_CUDA_TICKETS (1u << 14)

/* After a block has written its partials for column tile `tile` (one of
 * `blocks` blocks of that tile): true in the one block that finishes last,
 * which then sees every other block's partials and finishes the tile; its
 * ticket is back to 0 for the next op.  Call from all threads of the block. */
__device__ static inline bool last_of_tile(unsigned *tickets, unsigned tile, unsigned blocks)
{
    __shared__ bool last;
    __threadfence(); /* each thread's partials visible to the block that finishes */
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        last = atomicAdd(&tickets[tile], 1u) == blocks - 1;
        if (last)
            tickets[tile] = 0;
    }
    __syncthreads();
    if (last)
        __threadfence(); /* then read what the others wrote */
    return last;
}

/* Row chunks for a two-stage column reduction of a (B, n) matrix: enough
 * chunks to fill the GPU, within the partials buffer (per doubles_per_col
 * doubles per column and chunk). */
static inline int64_t chunks_for(int64_t B, int64_t n, int64_t doubles_per_col, int64_t *rows_per_chunk)
{
    /* chunks of >= 32 rows (4 per thread of a 32 x 8 block): at batch 100
     * one chunk of 100 rows left 12 dependent loads per thread and 32 blocks
     * on 132 SMs (a bias gradient of 1000 columns took 10 us on an H100, 6
     * with 4 chunks).  At most 32: the tile's last block sums the chunks in
     * a chain, and 64 made it 60 -> 85 us at batch 8192 (H100, ncu). */
    int64_t chunks = (B + 31) / 32;
    int64_t cap = (int64_t)RT_CUDA_PARTIALS / (n * doubles_per_col > 0 ? n * doubles_per_col : 1);
    if (chunks > 32)
        chunks = 32;
    if (chunks > cap)
        chunks = cap;
    if (chunks < 1)
        chunks = 1;
    *rows_per_chunk = (B + chunks - 1) / chunks;
    if (*rows_per_chunk < 1)
        *rows_per_chunk = 1;
    chunks = B > 0 ? (B + *rows_per_chunk - 1) / *rows_per_chunk : 1;
    RT_ASSERT(chunks * n * doubles_per_col <= (int64_t)RT_CUDA_PARTIALS);
    return chunks;
}

#endif
