/* cuda_dense.cu — dense layer forward/backward on CUDA.
 *
 * Row-major y (B, out) = x (B, in) · wᵀ is, seen column-major by cuBLAS,
 * Yc (out, B) = Wcᵀ · Xc with Wc (in, out) ld=in and Xc (in, B) ld=ldx.
 *   forward   cuBLASLt matmul (transa = T) with the BIAS or RELU_BIAS
 *             epilogue: bias and activation fused into the GEMM; plans are
 *             cached per shape.  Plain cuBLAS + our epilogue kernel if
 *             cuBLASLt offers no algorithm.
 *   backward  our kernel: dz = dy ⊙ relu'(y) in place and the bias gradient
 *             as two-stage column sums (fixed order: deterministic);
 *             dWc (in, out) = Xc · dZcᵀ   (N, T)
 *             dXc (in, B)   = Wc · dZc    (N, N)
 * TF32 tensor cores are used when the context asks for them. */
#include <string.h>

#include "cuda_common.cuh"

static const lt_plan *get_plan(cuda_state *s, int64_t m, int64_t n, int64_t k, int64_t lda,
                               int64_t ldb, int64_t ldc, cublasLtEpilogue_t epi, bool tf32)
{
    for (int i = 0; i < RT_LT_CACHE; i++) {
        lt_plan *p = &s->plans[i];
        if (p->valid && p->m == m && p->n == n && p->k == k && p->lda == lda && p->ldb == ldb &&
            p->ldc == ldc && p->epilogue == (int)epi && p->tf32 == tf32)
            return p->ok ? p : NULL;
    }
    lt_plan *p = &s->plans[s->next_plan];
    s->next_plan = (s->next_plan + 1) % RT_LT_CACHE;
    if (p->valid) {
        cublasLtMatrixLayoutDestroy(p->a);
        cublasLtMatrixLayoutDestroy(p->b);
        cublasLtMatrixLayoutDestroy(p->c);
        cublasLtMatmulDescDestroy(p->desc);
    }
    memset(p, 0, sizeof *p);
    p->valid = true;
    p->m = m, p->n = n, p->k = k, p->lda = lda, p->ldb = ldb, p->ldc = ldc;
    p->epilogue = (int)epi;
    p->tf32 = tf32;
    cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
    cublasComputeType_t ct = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    if (cublasLtMatmulDescCreate(&p->desc, ct, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS)
        return NULL;
    cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT);
    cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof opN);
    cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    /* A is stored (k, m) and transposed; B (k, n); C = D (m, n) */
    cublasLtMatrixLayoutCreate(&p->a, CUDA_R_32F, (uint64_t)k, (uint64_t)m, lda);
    cublasLtMatrixLayoutCreate(&p->b, CUDA_R_32F, (uint64_t)k, (uint64_t)n, ldb);
    cublasLtMatrixLayoutCreate(&p->c, CUDA_R_32F, (uint64_t)m, (uint64_t)n, ldc);
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    uint64_t ws = RT_CUDA_WORKSPACE;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(s->lt, p->desc, p->a, p->b, p->c, p->c, pref,
                                                       1, &res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0)
        return NULL; /* p stays valid with ok = false: the fallback is used */
    p->algo = res.algo;
    p->ok = true;
    return p;
}

__global__ void k_bias_act(float *y, int64_t ldy, int64_t rows, int64_t n, const float *b, int relu)
{
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < rows * n;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = t / n, j = t - r * n;
        float v = y[r * ldy + j] + b[j];
        y[r * ldy + j] = relu && v < 0.0f ? 0.0f : v;
    }
}

static void set_math(cuda_state *s, bool tf32)
{
    cublasSetMathMode(s->blas, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
}

void rt_cuda_dense_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act, rt_view y)
{
    cuda_state *s = CS(ctx);
    const int64_t B = x.rows, in = x.cols, out = y.cols;
    if (B == 0 || out == 0)
        return;
    const float one = 1.0f, zero = 0.0f;
    cublasLtEpilogue_t epi = act == RT_ACT_RELU ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    const lt_plan *p = in > 0 ? get_plan(s, out, B, in, in, x.ld, y.ld, epi, ctx->tf32) : NULL;
    if (p) {
        cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b);
        record_blas(s,
                    cublasLtMatmul(s->lt, p->desc, &one, w, p->a, x.p, p->b, &zero, y.p, p->c, y.p,
                                   p->c, &p->algo, s->workspace, RT_CUDA_WORKSPACE, s->stream),
                    "cublasLtMatmul");
        return;
    }
    set_math(s, ctx->tf32);
    record_blas(s,
                cublasSgemm(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)out, (int)B, (int)in, &one, w,
                            (int)(in > 0 ? in : 1), RT_F(x), (int)x.ld, &zero, RT_F(y), (int)y.ld),
                "cublasSgemm (dense forward)");
    k_bias_act<<<grid_for(B * out, 256), 256, 0, s->stream>>>(RT_F(y), y.ld, B, out, b,
                                                               act == RT_ACT_RELU);
    record_launch(s);
}

/* Stage 1: a (32 x 8) block masks a 32-column tile over one chunk of rows
 * and writes the tile's partial column sums for that chunk. */
__global__ void k_mask_colsum(float *g, int64_t ldg, const float *y, int64_t ldy, int64_t B,
                              int64_t n, int relu, int64_t rows_per_chunk, double *partials)
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

void rt_cuda_dense_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act, rt_view dy,
                       float *dw, float *db, rt_view dx)
{
    cuda_state *s = CS(ctx);
    const int64_t B = x.rows, in = x.cols, out = dy.cols;
    if (B == 0) {
        cudaMemsetAsync(dw, 0, (size_t)(out * in) * sizeof(float), s->stream);
        cudaMemsetAsync(db, 0, (size_t)out * sizeof(float), s->stream);
        return;
    }
    if (out > 0) {
        /* enough row chunks to fill the GPU, within the partials buffer */
        int64_t chunks = (B + 255) / 256;
        int64_t cap = (int64_t)RT_CUDA_PARTIALS / out;
        if (chunks > 64)
            chunks = 64;
        if (chunks > cap)
            chunks = cap > 0 ? cap : 1;
        int64_t rows_per_chunk = (B + chunks - 1) / chunks;
        chunks = (B + rows_per_chunk - 1) / rows_per_chunk;
        dim3 grid((unsigned)((out + 31) / 32), (unsigned)chunks), block(32, 8);
        k_mask_colsum<<<grid, block, 0, s->stream>>>(RT_F(dy), dy.ld, RT_F(y), y.ld, B, out,
                                                      act == RT_ACT_RELU, rows_per_chunk,
                                                      s->partials);
        k_colsum_final<<<grid_for(out, 256), 256, 0, s->stream>>>(s->partials, chunks, out, db);
        record_launch(s);
    }
    set_math(s, ctx->tf32);
    const float one = 1.0f, zero = 0.0f;
    if (in > 0 && out > 0)
        record_blas(s,
                    cublasSgemm(s->blas, CUBLAS_OP_N, CUBLAS_OP_T, (int)in, (int)out, (int)B, &one,
                                RT_F(x), (int)x.ld, RT_F(dy), (int)dy.ld, &zero, dw, (int)in),
                    "cublasSgemm (dense dW)");
    if (dx.p && in > 0)
        record_blas(s,
                    cublasSgemm(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)in, (int)B, (int)out, &one, w,
                                (int)in, RT_F(dy), (int)dy.ld, &zero, RT_F(dx), (int)dx.ld),
                    "cublasSgemm (dense dX)");
}
