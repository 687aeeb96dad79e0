/* cuda_dense.cu — dense layer forward/backward on CUDA.
 *
 * Row-major y (B, out) = x (B, in) · wᵀ is, seen column-major by cuBLAS,
 * Yc (out, B) = Wcᵀ · Xc with Wc (in, out) ld=in and Xc (in, B) ld=ldx.
 *   forward   cuBLASLt matmul (transa = T) with the BIAS or RELU_BIAS
 *             epilogue: bias and activation fused into the GEMM; plans are
 *             cached per shape and pointer alignment (see get_plan).
 *             Plain cuBLAS + our epilogue kernel if cuBLASLt offers no
 *             algorithm or a matmul fails.
 *   backward  our kernel: dz = dy ⊙ relu'(y) in place and the bias gradient
 *             as two-stage column sums (fixed order: deterministic), the
 *             second stage done by each column tile's last block;
 *             dWc (in, out) = Xc · dZcᵀ   (N, T)
 *             dXc (in, B)   = Wc · dZc    (N, N)
 *             With out <= 8 (a head) all of it is one kernel of ours
 *             (k_dense_bwd_narrow): the two GEMMs have a GEMV's shape there.
 * Every GEMM's compute type follows the context (compute_of): exact fp32,
 * TF32 tensor cores (rt_kctx_set_tf32), or inputs rounded to bf16 with
 * fp32 sums ([model] precision = bf16: CUBLAS_COMPUTE_32F_FAST_16BF, which
 * lets cuBLAS down-convert the fp32 operands itself — no conversion pass
 * of ours, no bf16 copies to keep; it may pick TF32 instead where it finds
 * that faster, never less than bf16's precision). */
#include <string.h>

#include "cuda_common.cuh"
#include "rt_bf16.h"

static uint32_t alignment_of(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    uint32_t al = 4;
    while (al < 256 && a % (al * 2) == 0)
        al *= 2;
    return al;
}

static cublasComputeType_t compute_of(const rt_kctx *ctx)
{
    return ctx->bf16   ? CUBLAS_COMPUTE_32F_FAST_16BF
           : ctx->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                       : CUBLAS_COMPUTE_32F;
}

static void plan_free(lt_plan *p)
{
    if (!p->valid)
        return;
    if (p->a)
        rt_cublas.cublasLtMatrixLayoutDestroy(p->a);
    if (p->b)
        rt_cublas.cublasLtMatrixLayoutDestroy(p->b);
    if (p->c)
        rt_cublas.cublasLtMatrixLayoutDestroy(p->c);
    if (p->desc)
        rt_cublas.cublasLtMatmulDescDestroy(p->desc);
    memset(p, 0, sizeof *p);
}

void rt_cuda_free_lt_plans(cuda_state *s)
{
    for (int i = 0; i < RT_LT_CACHE; i++)
        plan_free(&s->plans[i]);
}

/* The cuBLASLt plan for D (m, n) = op(A) B + bias with these pointers: made
 * once per shape and alignment.  cublasLtMatmulAlgoGetHeuristic assumes
 * 256-byte aligned matrices unless told otherwise, and takes the bias
 * alignment from the bias pointer on the descriptor, so both are set to
 * what this call really has before asking.  NULL when cuBLASLt has no
 * algorithm (the caller falls back to cublasGemmEx + our epilogue). */
static lt_plan *get_plan(cuda_state *s, int64_t m, int64_t n, int64_t k, const float *A,
                         int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc,
                         const float *bias, cublasLtEpilogue_t epi, cublasComputeType_t ct)
{
    const uint32_t al[5] = {alignment_of(A), alignment_of(B), alignment_of(C), alignment_of(C),
                            alignment_of(bias)};
    for (int i = 0; i < RT_LT_CACHE; i++) {
        lt_plan *p = &s->plans[i];
        if (p->valid && p->m == m && p->n == n && p->k == k && p->lda == lda && p->ldb == ldb &&
            p->ldc == ldc && p->epilogue == (int)epi && p->compute == (int)ct &&
            memcmp(p->align, al, sizeof al) == 0)
            return p->ok ? p : NULL;
    }
    lt_plan *p = &s->plans[s->next_plan];
    s->next_plan = (s->next_plan + 1) % RT_LT_CACHE;
    plan_free(p);
    p->valid = true;
    p->m = m, p->n = n, p->k = k, p->lda = lda, p->ldb = ldb, p->ldc = ldc;
    p->epilogue = (int)epi;
    p->compute = (int)ct;
    memcpy(p->align, al, sizeof al);
    cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    uint64_t ws = RT_CUDA_WORKSPACE;
    bool ok =
        rt_cublas.cublasLtMatmulDescCreate(&p->desc, ct, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
        rt_cublas.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT,
                                                 sizeof opT) == CUBLAS_STATUS_SUCCESS &&
        rt_cublas.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN,
                                                 sizeof opN) == CUBLAS_STATUS_SUCCESS &&
        rt_cublas.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                                 sizeof epi) == CUBLAS_STATUS_SUCCESS &&
        rt_cublas.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                 sizeof bias) == CUBLAS_STATUS_SUCCESS &&
        /* A is stored (k, m) and transposed; B (k, n); C = D (m, n) */
        rt_cublas.cublasLtMatrixLayoutCreate(&p->a, CUDA_R_32F, (uint64_t)k, (uint64_t)m, lda) ==
            CUBLAS_STATUS_SUCCESS &&
        rt_cublas.cublasLtMatrixLayoutCreate(&p->b, CUDA_R_32F, (uint64_t)k, (uint64_t)n, ldb) ==
            CUBLAS_STATUS_SUCCESS &&
        rt_cublas.cublasLtMatrixLayoutCreate(&p->c, CUDA_R_32F, (uint64_t)m, (uint64_t)n, ldc) ==
            CUBLAS_STATUS_SUCCESS &&
        rt_cublas.cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
        rt_cublas.cublasLtMatmulPreferenceSetAttribute(pref,
                                                       CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                       &ws, sizeof ws) == CUBLAS_STATUS_SUCCESS;
    for (int i = 0; ok && i < 4; i++) /* A, B, C, D */
        ok = rt_cublas.cublasLtMatmulPreferenceSetAttribute(
                 pref,
                 (cublasLtMatmulPreferenceAttributes_t)(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES +
                                                        i),
                 &al[i], sizeof al[i]) == CUBLAS_STATUS_SUCCESS;
    ok = ok &&
         rt_cublas.cublasLtMatmulAlgoGetHeuristic(s->lt, p->desc, p->a, p->b, p->c, p->c, pref, 1,
                                                  &res, &found) == CUBLAS_STATUS_SUCCESS &&
         found > 0 && res.workspaceSize <= RT_CUDA_WORKSPACE;
    if (pref)
        rt_cublas.cublasLtMatmulPreferenceDestroy(pref);
    if (!ok)
        return NULL; /* stays cached with ok = false: the fallback is used */
    p->algo = res.algo;
    p->workspace = res.workspaceSize;
    p->ok = true;
    return p;
}

__global__ void k_bias_act(float *y, int64_t ldy, int64_t rows, int64_t n, const float *b, int relu)
{
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < rows * n;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = t / n, j = t - r * n;
        float v = y[r * ldy + j] + b[j];
        y[r * ldy + j] = relu && !(v > 0.0f) ? 0.0f : v; /* NaN -> 0, as on the CPU */
    }
}

/* C (m, n) = op(A) op(B), column-major fp32, in the context's compute type */
static void gemm(rt_kctx *ctx, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n,
                 int64_t k, const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                 int64_t ldc, const char *what)
{
    cuda_state *s = CS(ctx);
    const float one = 1.0f, zero = 0.0f;
    record_blas(s,
                rt_cublas.cublasGemmEx(s->blas, ta, tb, (int)m, (int)n, (int)k, &one, A, CUDA_R_32F,
                                       (int)lda, B, CUDA_R_32F, (int)ldb, &zero, C, CUDA_R_32F,
                                       (int)ldc, compute_of(ctx), CUBLAS_GEMM_DEFAULT),
                what);
}

void rt_cuda_dense_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act, rt_view y)
{
    cuda_state *s = CS(ctx);
    const int64_t B = x.rows, in = x.cols, out = y.cols;
    if (B == 0 || out == 0)
        return;
    const float one = 1.0f, zero = 0.0f;
    cublasLtEpilogue_t epi = act == RT_ACT_RELU ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    lt_plan *p = in > 0 ? get_plan(s, out, B, in, w, in, RT_F(x), x.ld, RT_F(y), y.ld, b, epi,
                                   compute_of(ctx))
                        : NULL;
    if (p) {
        cublasStatus_t st = rt_cublas.cublasLtMatmulDescSetAttribute(
            p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b);
        if (st == CUBLAS_STATUS_SUCCESS)
            st = rt_cublas.cublasLtMatmul(s->lt, p->desc, &one, w, p->a, x.p, p->b, &zero, y.p,
                                          p->c, y.p, p->c, &p->algo, s->workspace,
                                          RT_CUDA_WORKSPACE, s->stream);
        if (st == CUBLAS_STATUS_SUCCESS) {
            after_op(s, cudaSuccess, "cublasLtMatmul (dense forward)");
            return;
        }
        p->ok = false; /* this shape and alignment use the fallback from now on */
    }
    gemm(ctx, CUBLAS_OP_T, CUBLAS_OP_N, out, B, in, w, in > 0 ? in : 1, RT_F(x), x.ld, RT_F(y),
         y.ld, "cublasGemmEx (dense forward)");
    k_bias_act<<<grid_for(B * out, 256), 256, 0, s->stream>>>(RT_F(y), y.ld, B, out, b,
                                                               act == RT_ACT_RELU);
    LAUNCHED(s, "k_bias_act");
}

/* Stage 1: a (32 x 8) block masks a 32-column tile over one chunk of rows
 * and writes the tile's partial column sums for that chunk.  With db, the
 * tile's last block to finish also does stage 2 for the tile (tickets):
 * one kernel, the same sums in the same order. */
__global__ void __launch_bounds__(256) k_mask_colsum(float *g, int64_t ldg, const float *y, int64_t ldy, int64_t B,
                              int64_t n, int relu, int64_t rows_per_chunk, double *partials,
                              unsigned *tickets, float *db)
{
    __shared__ double shm[8][33];
    const int64_t j = blockIdx.x * 32 + threadIdx.x;
    const int64_t r0 = blockIdx.y * rows_per_chunk;
    const int64_t r1 = r0 + rows_per_chunk < B ? r0 + rows_per_chunk : B;
    double acc = 0.0;
    if (j < n) {
        for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {
            float v = g[r * ldg + j];
            if (relu && !(y[r * ldy + j] > 0.0f)) {
                v = 0.0f;
                g[r * ldg + j] = 0.0f;
            }
            acc += v;
        }
    }
    shm[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && j < n) {
        double t = 0.0;
        for (int k = 0; k < 8; k++)
            t += shm[k][threadIdx.x];
        partials[blockIdx.y * n + j] = t;
    }
    if (db && last_of_tile(tickets, blockIdx.x, gridDim.y) && threadIdx.y == 0 && j < n) {
        double t = 0.0; /* k_colsum_final's sum */
        for (unsigned c = 0; c < gridDim.y; c++)
            t += partials[c * n + j];
        db[j] = (float)t;
    }
}

/* Stage 2: db[j] = sum over chunks, in chunk order. */
__global__ void k_colsum_final(const double *partials, int64_t chunks, int64_t n, float *db)
{
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < n;
         j += (int64_t)gridDim.x * blockDim.x) {
        double t = 0.0;
        for (int64_t c = 0; c < chunks; c++)
            t += partials[c * n + j];
        db[j] = (float)t;
    }
}

/* A narrow layer's backward (out <= NARROW_OUT: a regression or binary
 * head, a multiclass one of a few classes) in one kernel where cuBLAS would
 * take two GEMMs of a GEMV's shape after k_mask_colsum.  A (32 x 8) block
 * takes a 32-column tile of x over one chunk of rows; with db, column `in`
 * is the bias's, x = 1 there.  Per row a thread reads the row's dz = dy ⊙
 * relu'(y) (out values, the same for the whole block; the first tile's
 * blocks write them back, as the contract says), adds x·dz to its column's
 * out sums and writes dx = Σ_o dz_o w_o.  The sums are k_mask_colsum's: in
 * double, per chunk in a fixed order, then over chunks by the tile's last
 * block.  bf16: x, dz and w rounded to bf16 for the products, as
 * CUBLAS_COMPUTE_32F_FAST_16BF rounds them (the bias sums dz itself); with
 * TF32 or fp32 the products are exact. */
#define NARROW_OUT 8

__device__ static inline float narrow_in(float v, int bf16)
{
    return bf16 ? rt_bf16_float(rt_bf16_bits(v)) : v;
}

__global__ void __launch_bounds__(256)
    k_dense_bwd_narrow(const float *x, int64_t ldx, const float *w, const float *y, int64_t ldy,
                       float *dy, int64_t lddy, int64_t B, int64_t in, int64_t out, int64_t ncols,
                       int relu, int bf16, int64_t rows_per_chunk, double *partials,
                       unsigned *tickets, float *dw, float *db, float *dx, int64_t lddx)
{
    __shared__ double shm[8][33];
    const int64_t j = blockIdx.x * 32 + threadIdx.x;
    const int64_t r0 = blockIdx.y * rows_per_chunk;
    const int64_t r1 = r0 + rows_per_chunk < B ? r0 + rows_per_chunk : B;
    const bool col = j < in, bias = j == in && db;
    float wj[NARROW_OUT];
    double acc[NARROW_OUT];
#pragma unroll
    for (int o = 0; o < NARROW_OUT; o++) {
        wj[o] = o < out && col ? narrow_in(w[o * in + j], bf16) : 0.0f;
        acc[o] = 0.0;
    }
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {
        const float xv = col ? narrow_in(x[r * ldx + j], bf16) : 1.0f;
        float dxv = 0.0f;
#pragma unroll
        for (int o = 0; o < NARROW_OUT; o++) {
            if (o < out) {
                float z = dy[r * lddy + o];
                if (relu && !(y[r * ldy + o] > 0.0f))
                    z = 0.0f;
                if (blockIdx.x == 0 && (int)threadIdx.x == o)
                    dy[r * lddy + o] = z; /* the others read it masked or not: the same z */
                const float zm = bias ? z : narrow_in(z, bf16);
                acc[o] += (double)xv * zm;
                dxv += zm * wj[o];
            }
        }
        if (dx && col)
            dx[r * lddx + j] = dxv;
    }
#pragma unroll
    for (int o = 0; o < NARROW_OUT; o++) { /* o < out: the same in every thread */
        if (o < out) {
            shm[threadIdx.y][threadIdx.x] = acc[o];
            __syncthreads();
            if (threadIdx.y == 0 && j < ncols) {
                double t = 0.0;
                for (int k = 0; k < 8; k++)
                    t += shm[k][threadIdx.x];
                partials[(blockIdx.y * ncols + j) * out + o] = t;
            }
            __syncthreads();
        }
    }
    if (last_of_tile(tickets, blockIdx.x, gridDim.y) && threadIdx.y == 0 && j < ncols) {
        for (int o = 0; o < out; o++) {
            double t = 0.0;
            for (unsigned c = 0; c < gridDim.y; c++)
                t += partials[(c * ncols + j) * out + o];
            if (col)
                dw[o * in + j] = (float)t;
            else
                db[o] = (float)t;
        }
    }
}

/* The narrow kernel where it applies; false: the GEMMs' way. */
static bool dense_bwd_narrow(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act,
                             rt_view dy, float *dw, float *db, rt_view dx)
{
    cuda_state *s = CS(ctx);
    const int64_t B = x.rows, in = x.cols, out = dy.cols, ncols = in + (db != NULL);
    if (out < 1 || out > NARROW_OUT || ncols < 1 || (ncols + 31) / 32 > (int64_t)RT_CUDA_TICKETS)
        return false;
    int64_t rows_per_chunk;
    int64_t chunks = chunks_for(B, ncols, out, &rows_per_chunk);
    dim3 grid((unsigned)((ncols + 31) / 32), (unsigned)chunks), block(32, 8);
    k_dense_bwd_narrow<<<grid, block, 0, s->stream>>>(
        RT_F(x), x.ld, w, RT_F(y), y.ld, RT_F(dy), dy.ld, B, in, out, ncols, act == RT_ACT_RELU,
        ctx->bf16, rows_per_chunk, s->partials, s->tickets, dw, db, dx.p ? RT_F(dx) : NULL, dx.ld);
    LAUNCHED(s, "k_dense_bwd_narrow");
    return true;
}

void rt_cuda_dense_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act, rt_view dy,
                       float *dw, float *db, rt_view dx)
{
    cuda_state *s = CS(ctx);
    const int64_t B = x.rows, in = x.cols, out = dy.cols;
    if (B == 0) {
        after_op(s, cudaMemsetAsync(dw, 0, (size_t)(out * in) * sizeof(float), s->stream), "cudaMemsetAsync");
        if (db)
            after_op(s, cudaMemsetAsync(db, 0, (size_t)out * sizeof(float), s->stream),
                     "cudaMemsetAsync");
        return;
    }
    if (dense_bwd_narrow(ctx, x, w, y, act, dy, dw, db, dx))
        return;
    if (out > 0) {
        int64_t rows_per_chunk;
        int64_t chunks = chunks_for(B, out, 1, &rows_per_chunk);
        dim3 grid((unsigned)((out + 31) / 32), (unsigned)chunks), block(32, 8);
        const bool fused = grid.x <= RT_CUDA_TICKETS;
        k_mask_colsum<<<grid, block, 0, s->stream>>>(RT_F(dy), dy.ld, RT_F(y), y.ld, B, out,
                                                      act == RT_ACT_RELU, rows_per_chunk,
                                                      s->partials, s->tickets, fused ? db : NULL);
        LAUNCHED(s, "k_mask_colsum");
        if (!fused) {
            k_colsum_final<<<grid_for(out, 256), 256, 0, s->stream>>>(s->partials, chunks, out, db);
            LAUNCHED(s, "k_colsum_final");
        }
    }
    if (in > 0 && out > 0)
        gemm(ctx, CUBLAS_OP_N, CUBLAS_OP_T, in, out, B, RT_F(x), x.ld, RT_F(dy), dy.ld, dw, in,
             "cublasGemmEx (dense dW)");
    if (dx.p && in > 0)
        gemm(ctx, CUBLAS_OP_N, CUBLAS_OP_N, in, B, out, w, in, RT_F(dy), dy.ld, RT_F(dx), dx.ld,
             "cublasGemmEx (dense dX)");
}

void rt_cuda_colsum(rt_kctx *ctx, rt_view dy, float *out)
{
    cuda_state *s = CS(ctx);
    const int64_t B = dy.rows, n = dy.cols;
    if (n == 0)
        return;
    int64_t rows_per_chunk;
    int64_t chunks = chunks_for(B, n, 1, &rows_per_chunk);
    dim3 grid((unsigned)((n + 31) / 32), (unsigned)chunks), block(32, 8);
    const bool fused = grid.x <= RT_CUDA_TICKETS;
    /* without the ReLU mask the first stage only reads dy */
    k_mask_colsum<<<grid, block, 0, s->stream>>>(RT_F(dy), dy.ld, RT_F(dy), dy.ld, B, n, 0,
                                                  rows_per_chunk, s->partials, s->tickets,
                                                  fused ? out : NULL);
    LAUNCHED(s, "k_mask_colsum (column sums)");
    if (!fused) {
        k_colsum_final<<<grid_for(n, 256), 256, 0, s->stream>>>(s->partials, chunks, n, out);
        LAUNCHED(s, "k_colsum_final");
    }
}
