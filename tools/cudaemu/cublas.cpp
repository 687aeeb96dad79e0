/* cublas.cpp — cudaemu's cuBLAS and cuBLASLt stand-ins: column-major FP32
 * GEMM with transposes and leading dimensions, run on the handle's stream,
 * with the argument checks the cuBLAS documentation lists.  TF32 math
 * (CUBLAS_TF32_TENSOR_OP_MATH, CUBLAS_COMPUTE_32F_FAST_TF32) rounds the
 * inputs to TF32's 10-bit mantissa, and CUBLAS_COMPUTE_32F_FAST_16BF to
 * bf16's 7 bits (nearest even; cuBLAS may choose TF32 there, the finer of
 * the two, so bf16 is what a test must allow for), so their effect on
 * results shows here as on a GPU.  Pointers that are not device memory are a device fault
 * (cudaErrorIllegalAddress), as the GPU kernel's load would be. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "cublasLt.h"
#include "emu.h"

using namespace cudaemu;

namespace {

const uint64_t ALGO_MAGIC = 0x637564616c7431ull; /* "cudalt1" */

float tf32(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) /* finite: round to nearest, ties away */
        u = (u + 0x1000u) & 0xffffe000u;
    memcpy(&x, &u, 4);
    return x;
}

float bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) /* finite: round to nearest, ties to even */
        u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

enum rounding { ROUND_NONE, ROUND_TF32, ROUND_BF16 };

float round_input(float v, int r)
{
    return r == ROUND_TF32 ? tf32(v) : r == ROUND_BF16 ? bf16(v) : v;
}

struct gemm_args {
    bool ta, tb;
    int round; /* enum rounding: what the inputs are rounded to */
    int64_t m, n, k;
    float alpha, beta;
    const float *A, *B, *C;
    float *D;
    int64_t lda, ldb, ldc, ldd;
    int epilogue; /* cublasLtEpilogue_t; DEFAULT for plain SGEMM */
    float *bias;
    uint8_t *aux;   /* the ReLU bit mask (RELU_AUX_BIAS writes it, DRELU_BGRAD reads it) */
    int64_t aux_ld; /* in bits: element (i, j) is bit (j·aux_ld + i) */
};

/* The arithmetic is not instrumented in sanitizer builds (it would be most
 * of their run time): the matrices' bounds were checked against the device
 * allocations when the call was made (check_matrix). */
#define NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))

NO_SANITIZE float dot(const float *a, const float *b, int64_t k)
{
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t p = 0;
    for (; p + 8 <= k; p += 8)
        for (int q = 0; q < 8; q++)
            s[q] += a[p + q] * b[p + q];
    for (; p < k; p++)
        s[0] += a[p] * b[p];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

NO_SANITIZE void run_gemm(const gemm_args &g)
{
    const int64_t m = g.m, n = g.n, k = g.k;
    std::vector<float> ap((size_t)(m * k)), bp((size_t)(n * k));
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++) {
            float v = g.ta ? g.A[p + i * g.lda] : g.A[i + p * g.lda];
            ap[(size_t)(i * k + p)] = round_input(v, g.round);
        }
    for (int64_t j = 0; j < n; j++)
        for (int64_t p = 0; p < k; p++) {
            float v = g.tb ? g.B[j + p * g.ldb] : g.B[p + j * g.ldb];
            bp[(size_t)(j * k + p)] = round_input(v, g.round);
        }
    const bool drelu = g.epilogue == CUBLASLT_EPILOGUE_DRELU_BGRAD;
    const bool bias = !drelu && (g.epilogue & CUBLASLT_EPILOGUE_BIAS);
    const bool relu = !drelu && (g.epilogue & CUBLASLT_EPILOGUE_RELU);
    const bool aux_out = g.epilogue == CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
    std::vector<double> bgrad(drelu ? (size_t)m : 0);
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            float v = g.alpha * dot(&ap[(size_t)(i * k)], &bp[(size_t)(j * k)], k);
            if (g.beta != 0.0f)
                v += g.beta * g.C[i + j * g.ldc];
            if (bias)
                v += g.bias[i];
            const int64_t bit = j * g.aux_ld + i;
            const uint8_t one = (uint8_t)(1u << (bit & 7));
            if (relu) {
                const bool on = v > 0.0f;
                v = on ? v : 0.0f;
                if (aux_out)
                    g.aux[bit >> 3] =
                        on ? (uint8_t)(g.aux[bit >> 3] | one) : (uint8_t)(g.aux[bit >> 3] & ~one);
            }
            if (drelu) { /* the ReLU's gradient from the mask, then the bias's: the masked sums */
                v = g.aux[bit >> 3] & one ? v : 0.0f;
                bgrad[(size_t)i] += v;
            }
            g.D[i + j * g.ldd] = v;
        }
    for (int64_t i = 0; drelu && i < m; i++)
        g.bias[i] = (float)bgrad[(size_t)i];
    if (g.epilogue == CUBLASLT_EPILOGUE_BGRADA) /* one value per row of D: sum over k of op(A) */
        for (int64_t i = 0; i < m; i++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++)
                s += ap[(size_t)(i * k + p)];
            g.bias[i] = (float)s;
        }
    if (g.epilogue == CUBLASLT_EPILOGUE_BGRADB) /* one value per column of D: sum over k of op(B) */
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++)
                s += bp[(size_t)(j * k + p)];
            g.bias[j] = (float)s;
        }
}

/* A rows x cols column-major matrix at p with leading dimension ld lies in
 * device memory. */
bool check_matrix(const char *fn, const char *which, const void *p, int64_t rows, int64_t cols, int64_t ld)
{
    if (rows == 0 || cols == 0)
        return true;
    size_t bytes = (size_t)((cols - 1) * ld + rows) * 4;
    if (cudaemuIsDevicePointer(p, bytes))
        return true;
    device_fault(cudaErrorIllegalAddress, "%s: %s (%p, %lld x %lld, ld %lld) is not inside one device allocation",
                 fn, which, p, (long long)rows, (long long)cols, (long long)ld);
    return false;
}

cublasStatus_t submit(cudaStream_t s, const gemm_args &g, const char *what)
{
    if (!check_matrix(what, "A", g.A, g.ta ? g.k : g.m, g.ta ? g.m : g.k, g.lda) ||
        !check_matrix(what, "B", g.B, g.tb ? g.n : g.k, g.tb ? g.k : g.n, g.ldb) ||
        (g.beta != 0.0f && !check_matrix(what, "C", g.C, g.m, g.n, g.ldc)) ||
        !check_matrix(what, "D", g.D, g.m, g.n, g.ldd))
        return CUBLAS_STATUS_SUCCESS; /* the fault shows as the sticky CUDA error */
    if (g.m == 0 || g.n == 0)
        return CUBLAS_STATUS_SUCCESS;
    return enqueue(s, [g] { run_gemm(g); }, what) == cudaSuccess ? CUBLAS_STATUS_SUCCESS
                                                                  : CUBLAS_STATUS_EXECUTION_FAILED;
}

} /* namespace */

struct cublasContext {
    cudaStream_t stream = 0;
    void *workspace = nullptr;
    size_t ws_bytes = 0;
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
};

namespace
{

/* C = alpha op(A) op(B) + beta C with the inputs rounded as `round` says:
 * cublasSgemm's and cublasGemmEx's checks and run. */
cublasStatus_t plain_gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                          int n, int k, const float *alpha, const float *A, int lda, const float *B,
                          int ldb, const float *beta, float *C, int ldc, int round,
                          const char *what)
{
    if (m < 0 || n < 0 || k < 0 || ta > CUBLAS_OP_C || tb > CUBLAS_OP_C || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    const bool tA = ta != CUBLAS_OP_N, tB = tb != CUBLAS_OP_N;
    if (lda < (tA ? (k > 1 ? k : 1) : (m > 1 ? m : 1)) ||
        ldb < (tB ? (n > 1 ? n : 1) : (k > 1 ? k : 1)) || ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    gemm_args g = {tA,
                   tB,
                   round,
                   m,
                   n,
                   k,
                   *alpha,
                   *beta,
                   A,
                   B,
                   C,
                   C,
                   lda,
                   ldb,
                   ldc,
                   ldc,
                   CUBLASLT_EPILOGUE_DEFAULT,
                   nullptr,
                   nullptr,
                   0};
    return submit(h->stream, g, what);
}

} /* namespace */

extern "C" {

const char *cublasGetStatusName(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

const char *cublasGetStatusString(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    }
    return "unknown error";
}

cublasStatus_t cublasCreate(cublasHandle_t *h)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaGetLastError();
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    *h = new cublasContext;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t h)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream(cublasHandle_t h, cudaStream_t *s)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    *s = h->stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *ws, size_t bytes)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (bytes > 0 && ((uintptr_t)ws % 256 != 0 || !cudaemuIsDevicePointer(ws, bytes)))
        return CUBLAS_STATUS_INVALID_VALUE; /* 256-byte aligned device memory */
    h->workspace = ws;
    h->ws_bytes = bytes;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode != CUBLAS_DEFAULT_MATH && mode != CUBLAS_PEDANTIC_MATH && mode != CUBLAS_TF32_TENSOR_OP_MATH)
        return CUBLAS_STATUS_INVALID_VALUE;
    h->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t h, cublasMath_t *mode)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    *mode = h->math;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode(cublasHandle_t h, cublasPointerMode_t mode)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    return mode == CUBLAS_POINTER_MODE_HOST ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *A, int lda, const float *B, int ldb,
                           const float *beta, float *C, int ldc)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    return plain_gemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc,
                      h->math == CUBLAS_TF32_TENSOR_OP_MATH ? ROUND_TF32 : ROUND_NONE,
                      "cublasSgemm");
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType Atype,
                            int lda, const void *B, cudaDataType Btype, int ldb, const void *beta,
                            void *C, cudaDataType Ctype, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (Atype != CUDA_R_32F || Btype != CUDA_R_32F || Ctype != CUDA_R_32F)
        return CUBLAS_STATUS_NOT_SUPPORTED; /* not emulated */
    if (algo != CUBLAS_GEMM_DEFAULT && algo != CUBLAS_GEMM_DEFAULT_TENSOR_OP)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    int round;
    switch (compute) {
    case CUBLAS_COMPUTE_32F: /* the handle's math mode may allow TF32 */
        round = h->math == CUBLAS_TF32_TENSOR_OP_MATH ? ROUND_TF32 : ROUND_NONE;
        break;
    case CUBLAS_COMPUTE_32F_PEDANTIC:
        round = ROUND_NONE;
        break;
    case CUBLAS_COMPUTE_32F_FAST_TF32:
        round = ROUND_TF32;
        break;
    case CUBLAS_COMPUTE_32F_FAST_16BF:
        round = ROUND_BF16;
        break;
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return plain_gemm(h, ta, tb, m, n, k, (const float *)alpha, (const float *)A, lda,
                      (const float *)B, ldb, (const float *)beta, (float *)C, ldc, round,
                      "cublasGemmEx");
}

} /* extern "C" */

/* ---- cuBLASLt ------------------------------------------------------------------ */

struct cublasLtContext {
    int unused;
};
struct cublasLtMatmulDescOpaque {
    cublasComputeType_t compute;
    cudaDataType_t scale;
    int ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
    int epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    const void *bias = nullptr;
    void *aux = nullptr; /* EPILOGUE_AUX_POINTER */
    int64_t aux_ld = 0;  /* EPILOGUE_AUX_LD, in bits for the ReLU mask */
};
struct cublasLtMatrixLayoutOpaque {
    cudaDataType type;
    uint64_t rows, cols;
    int64_t ld;
};
struct cublasLtMatmulPreferenceOpaque {
    uint64_t max_ws = 0;
    uint32_t align[4] = {256, 256, 256, 256}; /* A, B, C, D */
};

namespace {

uint32_t alignment_of(const void *p)
{
    if (!p)
        return 256;
    uintptr_t a = (uintptr_t)p;
    uint32_t al = 1;
    while (al < 256 && a % (al * 2) == 0)
        al *= 2;
    return al;
}

bool supported_epilogue(int e)
{
    return e == CUBLASLT_EPILOGUE_DEFAULT || e == CUBLASLT_EPILOGUE_RELU ||
           e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS ||
           e == CUBLASLT_EPILOGUE_BGRADA || e == CUBLASLT_EPILOGUE_BGRADB ||
           e == CUBLASLT_EPILOGUE_RELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DRELU_BGRAD;
}

bool uses_bias(int e)
{
    return (e & CUBLASLT_EPILOGUE_BIAS) || e == CUBLASLT_EPILOGUE_BGRADA ||
           e == CUBLASLT_EPILOGUE_BGRADB || e == CUBLASLT_EPILOGUE_DRELU_BGRAD;
}

bool uses_aux(int e)
{
    return e == CUBLASLT_EPILOGUE_RELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DRELU_BGRAD;
}

/* The ReLU bit mask's leading dimension, as the documentation says: in
 * bits, divisible by 128, at least D's rows; and a pointer set. */
bool aux_ok(cublasLtMatmulDesc_t d, int64_t m)
{
    return !uses_aux(d->epilogue) || (d->aux && d->aux_ld % 128 == 0 && d->aux_ld >= m);
}

/* Shapes: op(A) m x k, op(B) k x n, C and D m x n. */
cublasStatus_t check_shapes(cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                            cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dl, int64_t *m, int64_t *n,
                            int64_t *k)
{
    if (!d || !a || !b || !c || !dl)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (a->type != CUDA_R_32F || b->type != CUDA_R_32F || c->type != CUDA_R_32F || dl->type != CUDA_R_32F ||
        d->scale != CUDA_R_32F)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    *m = (int64_t)(d->ta ? a->cols : a->rows);
    *k = (int64_t)(d->ta ? a->rows : a->cols);
    int64_t kb = (int64_t)(d->tb ? b->cols : b->rows);
    *n = (int64_t)(d->tb ? b->rows : b->cols);
    if (kb != *k || (int64_t)c->rows != *m || (int64_t)c->cols != *n || (int64_t)dl->rows != *m ||
        (int64_t)dl->cols != *n)
        return CUBLAS_STATUS_INVALID_VALUE;
    for (cublasLtMatrixLayout_t l : {a, b, c, dl})
        if (l->ld < (int64_t)(l->rows > 1 ? l->rows : 1))
            return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

} /* namespace */

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaGetLastError();
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    *h = new cublasLtContext;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t h)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute, cudaDataType_t scale)
{
    if (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_TF32 &&
        compute != CUBLAS_COMPUTE_32F_FAST_16BF && compute != CUBLAS_COMPUTE_32F_PEDANTIC)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    *d = new cublasLtMatmulDescOpaque;
    (*d)->compute = compute;
    (*d)->scale = scale;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
    delete d;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a,
                                              const void *buf, size_t size)
{
    if (!d || !buf)
        return CUBLAS_STATUS_INVALID_VALUE;
    switch (a) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB: {
        int32_t v;
        if (size != sizeof v)
            return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&v, buf, sizeof v);
        if (v != CUBLAS_OP_N && v != CUBLAS_OP_T)
            return CUBLAS_STATUS_NOT_SUPPORTED;
        (a == CUBLASLT_MATMUL_DESC_TRANSA ? d->ta : d->tb) = v;
        return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_EPILOGUE: {
        uint32_t v;
        if (size != sizeof v)
            return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&v, buf, sizeof v);
        d->epilogue = (int)v;
        return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
        if (size != sizeof(void *))
            return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&d->bias, buf, sizeof(void *));
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
        if (size != sizeof(void *))
            return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&d->aux, buf, sizeof(void *));
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
        if (size != sizeof(int64_t))
            return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&d->aux_ld, buf, sizeof(int64_t));
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: {
        int32_t v;
        if (size != sizeof v)
            return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&v, buf, sizeof v);
        return v == CUDA_R_32F ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
    }
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED; /* not emulated */
    }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld)
{
    if (ld < 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    *l = new cublasLtMatrixLayoutOpaque{type, rows, cols, ld};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
    delete l;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
    *p = new cublasLtMatmulPreferenceOpaque;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
    delete p;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t a, const void *buf,
                                                    size_t size)
{
    if (!p || !buf)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (a == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) {
        if (size != sizeof p->max_ws)
            return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&p->max_ws, buf, size);
        return CUBLAS_STATUS_SUCCESS;
    }
    if (a >= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES && a <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES) {
        uint32_t v;
        if (size != sizeof v)
            return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&v, buf, size);
        p->align[a - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES] = v;
        return CUBLAS_STATUS_SUCCESS;
    }
    if (a == CUBLASLT_MATMUL_PREF_SEARCH_MODE)
        return CUBLAS_STATUS_SUCCESS;
    return CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                                              cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                                              cublasLtMatrixLayout_t dl, cublasLtMatmulPreference_t pref,
                                              int requested, cublasLtMatmulHeuristicResult_t *results,
                                              int *found)
{
    if (!h || !pref || requested < 1 || !results || !found)
        return CUBLAS_STATUS_INVALID_VALUE;
    *found = 0;
    int64_t m, n, k;
    cublasStatus_t st = check_shapes(d, a, b, c, dl, &m, &n, &k);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (!supported_epilogue(d->epilogue))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!aux_ok(d, m))
        return CUBLAS_STATUS_INVALID_VALUE;
    memset(&results[0], 0, sizeof results[0]);
    uint64_t *x = results[0].algo.data;
    x[0] = ALGO_MAGIC;
    for (int i = 0; i < 4; i++) /* the algorithm relies on the alignment it was told to expect */
        x[1 + i] = pref->align[i];
    x[5] = uses_bias(d->epilogue) ? alignment_of(d->bias) : 1;
    x[6] = k >= 4096 && pref->max_ws >= (1u << 20) ? (1u << 20) : 0; /* split-K needs a workspace */
    results[0].workspaceSize = (size_t)x[6];
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    *found = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t a, const void *B, cublasLtMatrixLayout_t b,
                              const void *beta, const void *C, cublasLtMatrixLayout_t c, void *D,
                              cublasLtMatrixLayout_t dl, const cublasLtMatmulAlgo_t *algo, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream)
{
    if (!h || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    int64_t m, n, k;
    cublasStatus_t st = check_shapes(d, a, b, c, dl, &m, &n, &k);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (!supported_epilogue(d->epilogue))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if ((uses_bias(d->epilogue) && !d->bias) || !aux_ok(d, m))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (algo) {
        const uint64_t *x = algo->data;
        if (x[0] != ALGO_MAGIC)
            return CUBLAS_STATUS_INVALID_VALUE;
        const void *ptr[5] = {A, B, C, D, d->bias};
        const char *name[5] = {"A", "B", "C", "D", "bias"};
        for (int i = 0; i < 5; i++) {
            if (i == 4 && !uses_bias(d->epilogue))
                continue;
            if (alignment_of(ptr[i]) < x[1 + i]) {
                fprintf(stderr, "cudaemu: cublasLtMatmul: %s (%p) is %u-byte aligned; the algorithm from "
                        "cublasLtMatmulAlgoGetHeuristic assumed %llu\n", name[i], ptr[i],
                        alignment_of(ptr[i]), (unsigned long long)x[1 + i]);
                return CUBLAS_STATUS_NOT_SUPPORTED;
            }
        }
        if (workspace_bytes < x[6])
            return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (workspace_bytes > 0 && !cudaemuIsDevicePointer(workspace, workspace_bytes))
        return CUBLAS_STATUS_INVALID_VALUE;
    gemm_args g;
    g.ta = d->ta != CUBLAS_OP_N;
    g.tb = d->tb != CUBLAS_OP_N;
    g.round = d->compute == CUBLAS_COMPUTE_32F_FAST_TF32   ? ROUND_TF32
              : d->compute == CUBLAS_COMPUTE_32F_FAST_16BF ? ROUND_BF16
                                                           : ROUND_NONE;
    g.m = m, g.n = n, g.k = k;
    memcpy(&g.alpha, alpha, 4);
    memcpy(&g.beta, beta, 4);
    g.A = (const float *)A, g.B = (const float *)B, g.C = (const float *)C, g.D = (float *)D;
    g.lda = a->ld, g.ldb = b->ld, g.ldc = c->ld, g.ldd = dl->ld;
    g.epilogue = d->epilogue;
    g.bias = (float *)d->bias;
    g.aux = (uint8_t *)d->aux;
    g.aux_ld = d->aux_ld;
    if (uses_aux(d->epilogue) && !cudaemuIsDevicePointer(d->aux, (size_t)(d->aux_ld / 8 * n))) {
        device_fault(cudaErrorIllegalAddress,
                     "cublasLtMatmul: the ReLU mask (%p, %lld bytes) is not inside "
                     "one device allocation",
                     d->aux, (long long)(d->aux_ld / 8 * n));
        return CUBLAS_STATUS_SUCCESS;
    }
    if (uses_bias(d->epilogue)) {
        int64_t len = d->epilogue == CUBLASLT_EPILOGUE_BGRADB ? n : m;
        if (!cudaemuIsDevicePointer(d->bias, (size_t)len * 4)) {
            device_fault(cudaErrorIllegalAddress, "cublasLtMatmul: the bias (%p, %lld floats) is not inside one "
                         "device allocation", d->bias, (long long)len);
            return CUBLAS_STATUS_SUCCESS;
        }
    }
    return submit(stream, g, "cublasLtMatmul");
}

} /* extern "C" */
