/* dense_epilogue_gpu.cu — whether two changes to the GPU's dense layers
 * would pay, measured before they are built (issue 48's Rossmann step):
 *
 *   1. cuBLASLt's DRELU_BGRAD: the backward GEMM that makes a ReLU layer's
 *      output gradient (dX of the layer above) also applies the ReLU's mask
 *      and sums the bias gradient, in place of our k_mask_colsum after it;
 *      the forward then writes the mask with RELU_AUX_BIAS instead of
 *      RELU_BIAS.  Measured on the Rossmann network's 1000-wide layer under
 *      the 500-wide one: forward RELU_BIAS against RELU_AUX_BIAS; backward
 *      "plain" (cublasGemmEx dX of the layer above, then the layer's own
 *      rt_k_dense_bwd: k_mask_colsum and its two GEMMs) against "fused"
 *      (cublasLt with DRELU_BGRAD, then the same two GEMMs with
 *      cublasGemmEx).  The two backward results are compared (dz, db, dW,
 *      dX): on a GPU this is the check that the epilogue means what
 *      tools/cudaemu makes it mean.
 *   2. The first layer's input rows padded from 198 floats to 200 (16-byte
 *      rows): rt_k_dense_fwd + rt_k_dense_bwd of the 198 -> 1000 layer with
 *      x's leading dimension 198 and 200.
 *
 * Each variant is captured as a CUDA graph of 20 repetitions and replayed
 * for about --seconds; TF32 GEMMs (the GPU's default) unless --fp32.
 *
 *   dense_epilogue [--batch B]... [--seconds S] [--fp32]
 *
 * Without a GPU it says so and exits 77; under tools/cudaemu it runs (the
 * times mean nothing there, the comparison does). */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_kernels.h"

#define REPS 20
#define CK(x)                                                                       \
    do {                                                                            \
        if (!(x)) {                                                                 \
            fprintf(stderr, "dense_epilogue: %s failed (line %d)\n", #x, __LINE__); \
            exit(1);                                                                \
        }                                                                           \
    } while (0)
#define CU(x) CK((x) == cudaSuccess)
#define BL(x) CK((x) == CUBLAS_STATUS_SUCCESS)

typedef struct bench {
    rt_kctx *ctx;
    cudaStream_t s;
    cublasHandle_t blas;
    cublasLtHandle_t lt;
    void *ws;
    cublasComputeType_t ct;
    double seconds;
} bench;

static float *dev_random(bench *b, size_t n, unsigned seed)
{
    float *h = (float *)malloc(n * sizeof(float)), *d = NULL;
    CK(h);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        h[i] = (float)(seed >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
    CU(cudaMalloc(&d, n * sizeof(float)));
    CU(cudaMemcpyAsync(d, h, n * sizeof(float), cudaMemcpyHostToDevice, b->s));
    CU(cudaStreamSynchronize(b->s));
    free(h);
    return d;
}

static float *dev_zero(bench *b, size_t n)
{
    float *d = NULL;
    CU(cudaMalloc(&d, n * sizeof(float)));
    CU(cudaMemsetAsync(d, 0, n * sizeof(float), b->s));
    return d;
}

/* µs per repetition of fn(arg): REPS of them captured as one graph */
static double time_graph(bench *b, void (*fn)(bench *, void *), void *arg)
{
    char err[RT_ERR_LEN];
    fn(b, arg); /* cuBLASLt's and our plans chosen outside the capture */
    CK(rt_kctx_sync(b->ctx, err) == RT_OK);
    rt_kgraph *g = NULL;
    CK(rt_kctx_capture_begin(b->ctx, err) == RT_OK);
    for (int r = 0; r < REPS; r++)
        fn(b, arg);
    CK(rt_kctx_capture_end(b->ctx, &g, err) == RT_OK);
    cudaEvent_t e0, e1;
    CU(cudaEventCreate(&e0));
    CU(cudaEventCreate(&e1));
    int iters = 1;
    double us = 0;
    for (int round = 0; round < 2; round++) { /* one to size the count, one to measure */
        CU(cudaEventRecord(e0, b->s));
        for (int i = 0; i < iters; i++)
            CK(rt_kgraph_launch(b->ctx, g, err) == RT_OK);
        CU(cudaEventRecord(e1, b->s));
        CU(cudaEventSynchronize(e1));
        float ms = 0;
        CU(cudaEventElapsedTime(&ms, e0, e1));
        us = ms * 1e3 / (iters * REPS);
        double n = b->seconds * 1e6 / (us * REPS > 1 ? us * REPS : 1);
        iters = n < 3 ? 3 : (n > 20000 ? 20000 : (int)n);
    }
    CU(cudaEventDestroy(e0));
    CU(cudaEventDestroy(e1));
    rt_kgraph_destroy(g);
    return us;
}

/* ---- 1. DRELU_BGRAD ---------------------------------------------------------------- */

typedef struct pair {
    int64_t B, in, mid, top; /* x (B, in) -> y (B, mid) ReLU -> (B, top) */
    float *x, *w, *bias, *y, *w_top, *dz_top;
    float *dy, *dw, *db, *dx; /* the ReLU layer's gradients */
    uint8_t *mask;
    int64_t mask_ld; /* bits */
    cublasLtMatmulDesc_t fwd_plain, fwd_aux, bwd_fused;
    cublasLtMatrixLayout_t lw, lx, ly, lwt, ldzt;
    cublasLtMatmulAlgo_t a_plain, a_aux, a_fused;
} pair;

/* cuBLASLt's algorithm for this epilogue; false (said on stdout) when it has none */
static bool lt_algo(bench *b, const char *what, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t A,
                    cublasLtMatrixLayout_t B, cublasLtMatrixLayout_t C, cublasLtMatmulAlgo_t *out)
{
    cublasLtMatmulPreference_t pref;
    BL(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = 32u << 20;
    BL(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                            sizeof ws));
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(b->lt, d, A, B, C, C, pref, 1, &res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found < 1) {
        printf("cuBLASLt offers no algorithm for %s with these operands (status %d): not "
               "usable here\n",
               what, (int)st);
        return false;
    }
    *out = res.algo;
    return true;
}

static cublasLtMatmulDesc_t lt_desc(bench *b, cublasOperation_t ta, cublasLtEpilogue_t epi,
                                    const void *bias, const void *aux, int64_t aux_ld)
{
    cublasLtMatmulDesc_t d;
    cublasOperation_t tb = CUBLAS_OP_N;
    BL(cublasLtMatmulDescCreate(&d, b->ct, CUDA_R_32F));
    BL(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    BL(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    BL(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    BL(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    if (aux) {
        BL(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux,
                                          sizeof aux));
        BL(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld,
                                          sizeof aux_ld));
    }
    return d;
}

static bool pair_init(bench *b, pair *p, int64_t B, int64_t in, int64_t mid, int64_t top)
{
    memset(p, 0, sizeof *p);
    p->B = B, p->in = in, p->mid = mid, p->top = top;
    p->x = dev_random(b, (size_t)(B * in), 1);
    p->w = dev_random(b, (size_t)(mid * in), 2);
    p->bias = dev_random(b, (size_t)mid, 3);
    p->w_top = dev_random(b, (size_t)(top * mid), 4);
    p->dz_top = dev_random(b, (size_t)(B * top), 5);
    p->y = dev_zero(b, (size_t)(B * mid));
    p->dy = dev_zero(b, (size_t)(B * mid));
    p->dw = dev_zero(b, (size_t)(mid * in));
    p->db = dev_zero(b, (size_t)mid);
    p->dx = dev_zero(b, (size_t)(B * in));
    p->mask_ld = (mid + 127) / 128 * 128;
    CU(cudaMalloc((void **)&p->mask, (size_t)(p->mask_ld / 8 * B)));
    /* column-major: Yc (mid, B) = Wc(in, mid)ᵀ · Xc (in, B); dYc (mid, B) = Wt_c (mid, top) · dZt_c (top, B) */
    BL(cublasLtMatrixLayoutCreate(&p->lw, CUDA_R_32F, (uint64_t)in, (uint64_t)mid, in));
    BL(cublasLtMatrixLayoutCreate(&p->lx, CUDA_R_32F, (uint64_t)in, (uint64_t)B, in));
    BL(cublasLtMatrixLayoutCreate(&p->ly, CUDA_R_32F, (uint64_t)mid, (uint64_t)B, mid));
    BL(cublasLtMatrixLayoutCreate(&p->lwt, CUDA_R_32F, (uint64_t)mid, (uint64_t)top, mid));
    BL(cublasLtMatrixLayoutCreate(&p->ldzt, CUDA_R_32F, (uint64_t)top, (uint64_t)B, top));
    p->fwd_plain = lt_desc(b, CUBLAS_OP_T, CUBLASLT_EPILOGUE_RELU_BIAS, p->bias, NULL, 0);
    p->fwd_aux =
        lt_desc(b, CUBLAS_OP_T, CUBLASLT_EPILOGUE_RELU_AUX_BIAS, p->bias, p->mask, p->mask_ld);
    p->bwd_fused =
        lt_desc(b, CUBLAS_OP_N, CUBLASLT_EPILOGUE_DRELU_BGRAD, p->db, p->mask, p->mask_ld);
    return lt_algo(b, "RELU_BIAS", p->fwd_plain, p->lw, p->lx, p->ly, &p->a_plain) &&
           lt_algo(b, "RELU_AUX_BIAS", p->fwd_aux, p->lw, p->lx, p->ly, &p->a_aux) &&
           lt_algo(b, "DRELU_BGRAD", p->bwd_fused, p->lwt, p->ldzt, p->ly, &p->a_fused);
}

static void lt_run(bench *b, cublasLtMatmulDesc_t d, const cublasLtMatmulAlgo_t *algo,
                   const float *A, cublasLtMatrixLayout_t la, const float *B,
                   cublasLtMatrixLayout_t lb, float *D, cublasLtMatrixLayout_t ld)
{
    const float one = 1.0f, zero = 0.0f;
    BL(cublasLtMatmul(b->lt, d, &one, A, la, B, lb, &zero, D, ld, D, ld, algo, b->ws, 32u << 20,
                      b->s));
}

static void gemm(bench *b, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n,
                 int64_t k, const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                 int64_t ldc)
{
    const float one = 1.0f, zero = 0.0f;
    BL(cublasGemmEx(b->blas, ta, tb, (int)m, (int)n, (int)k, &one, A, CUDA_R_32F, (int)lda, B,
                    CUDA_R_32F, (int)ldb, &zero, C, CUDA_R_32F, (int)ldc, b->ct,
                    CUBLAS_GEMM_DEFAULT));
}

static void fwd_plain(bench *b, void *arg)
{
    pair *p = (pair *)arg;
    lt_run(b, p->fwd_plain, &p->a_plain, p->w, p->lw, p->x, p->lx, p->y, p->ly);
}

static void fwd_aux(bench *b, void *arg)
{
    pair *p = (pair *)arg;
    lt_run(b, p->fwd_aux, &p->a_aux, p->w, p->lw, p->x, p->lx, p->y, p->ly);
}

/* dY = dZ_top · W_top, then the ReLU layer's backward as ringtrain runs it */
static void bwd_plain(bench *b, void *arg)
{
    pair *p = (pair *)arg;
    gemm(b, CUBLAS_OP_N, CUBLAS_OP_N, p->mid, p->B, p->top, p->w_top, p->mid, p->dz_top, p->top,
         p->dy, p->mid);
    rt_k_dense_bwd(b->ctx, rt_vf32(p->x, p->B, p->in, p->in, RT_DEVICE_CUDA), p->w,
                   rt_vf32(p->y, p->B, p->mid, p->mid, RT_DEVICE_CUDA), RT_ACT_RELU,
                   rt_vf32(p->dy, p->B, p->mid, p->mid, RT_DEVICE_CUDA), p->dw, p->db,
                   rt_vf32(p->dx, p->B, p->in, p->in, RT_DEVICE_CUDA));
}

/* dY masked and db from DRELU_BGRAD, then the same two GEMMs */
static void bwd_fused(bench *b, void *arg)
{
    pair *p = (pair *)arg;
    lt_run(b, p->bwd_fused, &p->a_fused, p->w_top, p->lwt, p->dz_top, p->ldzt, p->dy, p->ly);
    gemm(b, CUBLAS_OP_N, CUBLAS_OP_T, p->in, p->mid, p->B, p->x, p->in, p->dy, p->mid, p->dw,
         p->in);
    gemm(b, CUBLAS_OP_N, CUBLAS_OP_N, p->in, p->B, p->mid, p->w, p->in, p->dy, p->mid, p->dx,
         p->in);
}

/* max |a - b| / max(1, max |a|) over n device floats */
static double rel_diff(const float *a, const float *b, size_t n)
{
    float *ha = (float *)malloc(n * 4), *hb = (float *)malloc(n * 4);
    CK(ha && hb);
    CU(cudaMemcpy(ha, a, n * 4, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(hb, b, n * 4, cudaMemcpyDeviceToHost));
    double d = 0, m = 1;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)ha[i] - hb[i]));
        m = fmax(m, fabs((double)ha[i]));
    }
    free(ha);
    free(hb);
    return d / m;
}

static float *dev_copy(bench *b, const float *src, size_t n)
{
    float *d = dev_zero(b, n);
    CU(cudaMemcpyAsync(d, src, n * 4, cudaMemcpyDeviceToDevice, b->s));
    return d;
}

static void pair_free(pair *p)
{
    for (float *f : {p->x, p->w, p->bias, p->y, p->w_top, p->dz_top, p->dy, p->dw, p->db, p->dx})
        cudaFree(f);
    cudaFree(p->mask);
    for (cublasLtMatmulDesc_t d : {p->fwd_plain, p->fwd_aux, p->bwd_fused})
        if (d)
            cublasLtMatmulDescDestroy(d);
    for (cublasLtMatrixLayout_t l : {p->lw, p->lx, p->ly, p->lwt, p->ldzt})
        if (l)
            cublasLtMatrixLayoutDestroy(l);
}

static void measure_drelu(bench *b, pair *p)
{
    const int64_t B = p->B;
    const double t_fp = time_graph(b, fwd_plain, p), t_fa = time_graph(b, fwd_aux, p);
    /* the results of both backward forms from the same forward */
    const size_t nmid = (size_t)(B * p->mid), nw = (size_t)(p->mid * p->in);
    const size_t nx = (size_t)(B * p->in);
    fwd_aux(b, p);
    bwd_plain(b, p);
    float *dz0 = dev_copy(b, p->dy, nmid), *db0 = dev_copy(b, p->db, (size_t)p->mid);
    float *dw0 = dev_copy(b, p->dw, nw), *dx0 = dev_copy(b, p->dx, nx);
    bwd_fused(b, p);
    CU(cudaStreamSynchronize(b->s));
    const double e_dz = rel_diff(dz0, p->dy, nmid), e_db = rel_diff(db0, p->db, (size_t)p->mid);
    const double e_dw = rel_diff(dw0, p->dw, nw), e_dx = rel_diff(dx0, p->dx, nx);
    for (float *f : {dz0, db0, dw0, dx0})
        cudaFree(f);
    const double t_bp = time_graph(b, bwd_plain, p), t_bf = time_graph(b, bwd_fused, p);
    printf("drelu_bgrad batch %lld (%lld -> %lld relu, under %lld): forward relu_bias %.1f us, "
           "relu_aux_bias %.1f us; backward plain %.1f us, fused %.1f us; forward+backward "
           "%.2fx; fused vs plain: dz %.1e, db %.1e, dW %.1e, dX %.1e\n",
           (long long)B, (long long)p->in, (long long)p->mid, (long long)p->top, t_fp, t_fa, t_bp,
           t_bf, (t_fp + t_bp) / (t_fa + t_bf), e_dz, e_db, e_dw, e_dx);
    printf("{\"bench\":\"drelu_bgrad\",\"batch\":%lld,\"fwd_relu_bias_us\":%.2f,"
           "\"fwd_relu_aux_bias_us\":%.2f,\"bwd_plain_us\":%.2f,\"bwd_fused_us\":%.2f,"
           "\"diff_dz\":%.3g,\"diff_db\":%.3g,\"diff_dw\":%.3g,\"diff_dx\":%.3g}\n",
           (long long)B, t_fp, t_fa, t_bp, t_bf, e_dz, e_db, e_dw, e_dx);
}

static void run_drelu(bench *b, int64_t B)
{
    pair p;
    /* Rossmann: the 198 -> 1000 layer under the 1000 -> 500 one; where
     * cuBLASLt has no algorithm for an epilogue with these operands, that
     * is the answer (said), and the padding is measured all the same */
    if (pair_init(b, &p, B, 198, 1000, 500))
        measure_drelu(b, &p);
    pair_free(&p);
}

/* ---- 2. the first layer's rows padded ------------------------------------------------ */

typedef struct first {
    int64_t B, in, out, ldx;
    float *x, *w, *bias, *y, *dy, *dw, *db, *dx;
} first;

static void first_step(bench *b, void *arg)
{
    first *f = (first *)arg;
    const rt_view x = rt_vf32(f->x, f->B, f->in, f->ldx, RT_DEVICE_CUDA);
    const rt_view y = rt_vf32(f->y, f->B, f->out, f->out, RT_DEVICE_CUDA);
    rt_k_dense_fwd(b->ctx, x, f->w, f->bias, RT_ACT_RELU, y);
    rt_k_dense_bwd(b->ctx, x, f->w, y, RT_ACT_RELU,
                   rt_vf32(f->dy, f->B, f->out, f->out, RT_DEVICE_CUDA), f->dw, f->db,
                   rt_vf32(f->dx, f->B, f->in, f->ldx, RT_DEVICE_CUDA));
}

static void run_padding(bench *b, int64_t B)
{
    double us[2];
    const int64_t lds[2] = {198, 200};
    for (int i = 0; i < 2; i++) {
        first f = {B, 198, 1000, lds[i]};
        f.x = dev_random(b, (size_t)(B * f.ldx), 6);
        f.w = dev_random(b, (size_t)(f.out * f.in), 7);
        f.bias = dev_random(b, (size_t)f.out, 8);
        f.dy = dev_random(b, (size_t)(B * f.out), 9);
        f.y = dev_zero(b, (size_t)(B * f.out));
        f.dw = dev_zero(b, (size_t)(f.out * f.in));
        f.db = dev_zero(b, (size_t)f.out);
        f.dx = dev_zero(b, (size_t)(B * f.ldx));
        us[i] = time_graph(b, first_step, &f);
        for (float *p : {f.x, f.w, f.bias, f.y, f.dy, f.dw, f.db, f.dx})
            cudaFree(p);
    }
    printf("padding batch %lld (198 -> 1000 relu, forward + backward): x rows of 198 floats "
           "%.1f us, of 200 %.1f us (%.2fx)\n",
           (long long)B, us[0], us[1], us[0] / us[1]);
    printf("{\"bench\":\"padding\",\"batch\":%lld,\"ld198_us\":%.2f,\"ld200_us\":%.2f}\n",
           (long long)B, us[0], us[1]);
}

int main(int argc, char **argv)
{
    int64_t batches[8] = {100, 8192};
    int nb = 0;
    bool fp32 = false;
    double seconds = 0.5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--batch") && i + 1 < argc && nb < 8)
            batches[nb++] = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--fp32"))
            fp32 = true;
        else {
            fprintf(stderr, "usage: dense_epilogue [--batch B]... [--seconds S] [--fp32]\n");
            return 2;
        }
    }
    if (nb == 0)
        nb = 2;
    if (!rt_cuda_available()) {
        printf("dense_epilogue: no GPU\n");
        return 77;
    }
    bench b = {0};
    char err[RT_ERR_LEN], name[256];
    CK(rt_kctx_create(RT_DEVICE_CUDA, 0, &b.ctx, err) == RT_OK);
    rt_kctx_set_tf32(b.ctx, !fp32);
    b.s = (cudaStream_t)rt_kctx_stream(b.ctx);
    b.ct = fp32 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
    b.seconds = seconds;
    BL(cublasCreate(&b.blas));
    BL(cublasLtCreate(&b.lt));
    CU(cudaMalloc(&b.ws, 32u << 20));
    BL(cublasSetStream(b.blas, b.s));
    BL(cublasSetWorkspace(b.blas, b.ws, 32u << 20));
    printf("dense_epilogue on %s, %s GEMMs, graphs of %d repetitions\n",
           rt_cuda_device_name(name, sizeof name), fp32 ? "FP32" : "TF32", REPS);
    for (int i = 0; i < nb; i++) {
        run_drelu(&b, batches[i]);
        run_padding(&b, batches[i]);
    }
    CU(cudaStreamSynchronize(b.s));
    cudaFree(b.ws);
    cublasLtDestroy(b.lt);
    cublasDestroy(b.blas);
    rt_kctx_destroy(b.ctx);
    return 0;
}
