/* train_step_gpu.cu — the CUDA half of bench/train_step: the training step
 * (forward, loss, backward, Adam) captured once as a CUDA graph and replayed,
 * timed with CUDA events; and cuBLAS's GEMM on the model's dominant shape
 * (B x 1000 x 1000, fp32 operands in the step's compute type — FP32, TF32
 * or bf16 inputs (CUBLAS_COMPUTE_32F_FAST_16BF) — random data), same
 * stream. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>

#include "train_step_gpu.h"

static double elapsed_per_iter(cudaStream_t s, int iters, void (*fn)(void *), void *arg)
{
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a, s);
    for (int i = 0; i < iters; i++)
        fn(arg);
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms * 1e3 / iters;
}

struct step_arg {
    rt_kctx *ctx;
    rt_kgraph *g;
};
static void launch_step(void *p)
{
    struct step_arg *a = (struct step_arg *)p;
    rt_kgraph_launch(a->ctx, a->g, NULL);
}

struct gemm_arg {
    cublasHandle_t h;
    int m, n, k;
    const float *a, *b;
    float *c;
    cublasComputeType_t compute;
};
static void launch_gemm(void *p)
{
    struct gemm_arg *g = (struct gemm_arg *)p;
    const float one = 1.0f, zero = 0.0f;
    cublasGemmEx(g->h, CUBLAS_OP_T, CUBLAS_OP_N, g->m, g->n, g->k, &one, g->a, CUDA_R_32F, g->k,
                 g->b, CUDA_R_32F, g->k, &zero, g->c, CUDA_R_32F, g->m, g->compute,
                 CUBLAS_GEMM_DEFAULT);
}

/* uniform in [-1, 1) from a hash of the index: the GEMM baseline runs on
 * random data (on zeros a GPU draws less power and clocks higher) */
__global__ void k_fill_random(float *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned x = (unsigned)i * 2654435761u ^ seed;
        x ^= x >> 16;
        x *= 0x7feb352du;
        x ^= x >> 15;
        x *= 0x846ca68bu;
        x ^= x >> 16;
        p[i] = (float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

/* iterations that fill about `seconds` given one measured iteration */
static int iters_for(double us_per_iter, double seconds)
{
    double n = seconds * 1e6 / (us_per_iter > 1 ? us_per_iter : 1);
    return n < 10 ? 10 : (n > 100000 ? 100000 : (int)n);
}

int rt_train_step_gpu(rt_model *m, long batch, const rt_adam_hp *hp, double seconds, bool tf32,
                      bool bf16, double *step_us, double *gemm_peak_gflops, char *err)
{
    rt_kctx *ctx = rt_model_kctx(m);
    cudaStream_t s = (cudaStream_t)rt_kctx_stream(ctx);
    rt_kgraph *g = NULL;
    /* warm up op by op (cuBLASLt plans are chosen here, outside the graph) */
    for (int i = 0; i < 3; i++)
        rt_model_train_step(m, batch, hp);
    if (rt_kctx_sync(ctx, err) != RT_OK)
        return 1;
    /* the hyper-parameters live in device memory, set outside the graph */
    rt_model_set_hparams(m, hp);
    if (rt_kctx_capture_begin(ctx, err) != RT_OK)
        return 1;
    rt_model_forward(m, batch, true);
    rt_model_loss(m, batch, true);
    rt_model_backward(m, batch, NULL, NULL);
    rt_model_update(m);
    if (rt_kctx_capture_end(ctx, &g, err) != RT_OK)
        return 1;
    struct step_arg sa = {ctx, g};
    double one = elapsed_per_iter(s, 3, launch_step, &sa);
    *step_us = elapsed_per_iter(s, iters_for(one, seconds), launch_step, &sa);
    rt_kgraph_destroy(g);
    if (rt_kctx_sync(ctx, err) != RT_OK)
        return 1;

    /* cuBLAS on the dominant GEMM shape, on a handle of its own */
    struct gemm_arg ga;
    cublasCreate(&ga.h);
    cublasSetStream(ga.h, s);
    ga.m = 1000;
    ga.n = (int)batch;
    ga.k = 1000;
    float *a, *b, *c;
    cudaMalloc(&a, (size_t)ga.m * ga.k * 4);
    cudaMalloc(&b, (size_t)ga.n * ga.k * 4);
    cudaMalloc(&c, (size_t)ga.m * ga.n * 4);
    k_fill_random<<<256, 256, 0, s>>>(a, (size_t)ga.m * ga.k, 1u);
    k_fill_random<<<256, 256, 0, s>>>(b, (size_t)ga.n * ga.k, 2u);
    ga.a = a;
    ga.b = b;
    ga.c = c;
    ga.compute = bf16   ? CUBLAS_COMPUTE_32F_FAST_16BF
                 : tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                        : CUBLAS_COMPUTE_32F;
    launch_gemm(&ga);
    one = elapsed_per_iter(s, 3, launch_gemm, &ga);
    double us = elapsed_per_iter(s, iters_for(one, seconds / 2), launch_gemm, &ga);
    *gemm_peak_gflops = 2.0 * ga.m * ga.n * ga.k / (us * 1e-6) / 1e9;
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cublasDestroy(ga.h);
    return rt_kctx_sync(ctx, err) == RT_OK ? 0 : 1;
}
