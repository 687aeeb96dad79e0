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

#include <cuda_runtime.h>

#include "cuda_blas.cuh"
#include "kctx_impl.h"

/* a cached cuBLASLt plan for one GEMM shape and pointer alignment */
struct lt_plan {
    bool valid, ok;
    int64_t m, n, k, lda, ldb, ldc;
    int epilogue; /* cublasLtEpilogue_t */
    int compute;  /* cublasComputeType_t: fp32, TF32 or bf16 inputs (compute_of) */
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

/* The ops of kctx_impl.h's RT_KERNEL_OPS, rt_cuda_NAME each (contracts:
 * rt_k_NAME of rt_kernels.h), for the ops table in cuda_ctx.cu: cuda_ops.cu
 * and cuda_dense.cu the Rossmann network's ops, cuda_loss.cu rt_k_loss and
 * rt_k_sqnorm, cuda_layers.cu and cuda_attn.cu the layer graph's. */
#define RT_CUDA_OP_DECL(name, params) void rt_cuda_##name params;
RT_KERNEL_OPS(RT_CUDA_OP_DECL)
size_t rt_cuda_adam_state_bytes(void);
void rt_cuda_free_lt_plans(cuda_state *s);

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
