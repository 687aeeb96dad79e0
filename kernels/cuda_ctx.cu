/* cuda_ctx.cu — the CUDA backend's context: stream, cuBLAS and cuBLASLt
 * handles with one workspace (set explicitly so that GEMMs are capturable in
 * a graph), memory, error reporting and graph capture. */
#include <stdio.h>
#include <string.h>

#include "cuda_common.cuh"

static rt_status cuda_fail(char *err, cudaError_t e, const char *what)
{
    return rt_err(err, RT_ERR_DEVICE, "%s: %s", what, cudaGetErrorString(e));
}

static int rt_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky "no device" error */
        return 0;
    }
    return n;
}

static int rt_cuda_select(int dev)
{
    if (cudaSetDevice(dev) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return 0;
}

static void rt_cuda_name(char *buf, size_t len)
{
    cudaDeviceProp p;
    int dev = 0;
    cudaGetDevice(&dev);
    if (cudaGetDeviceProperties(&p, dev) == cudaSuccess)
        snprintf(buf, len, "%s (sm_%d%d, %d SMs, %.0f GiB)", p.name, p.major, p.minor,
                 p.multiProcessorCount, (double)p.totalGlobalMem / (1 << 30));
    else
        snprintf(buf, len, "unknown CUDA device");
}

static rt_status rt_cuda_ctx_init(rt_kctx *ctx, char *err)
{
    cuda_state *s = (cuda_state *)calloc(1, sizeof(cuda_state));
    if (!s)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    cudaError_t e;
    cublasStatus_t b;
    rt_status st = RT_OK;
    cudaGetDevice(&s->device);
    if ((e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        st = cuda_fail(err, e, "cudaStreamCreate");
        goto err_stream;
    }
    if ((e = cudaMalloc(&s->workspace, RT_CUDA_WORKSPACE)) != cudaSuccess) {
        st = cuda_fail(err, e, "cudaMalloc(workspace)");
        goto err_ws;
    }
    if ((e = cudaMalloc(&s->partials, RT_CUDA_PARTIALS * sizeof(double))) != cudaSuccess) {
        st = cuda_fail(err, e, "cudaMalloc(partials)");
        goto err_partials;
    }
    if ((b = cublasCreate(&s->blas)) != CUBLAS_STATUS_SUCCESS) {
        st = rt_err(err, RT_ERR_DEVICE, "cublasCreate failed (%d)", (int)b);
        goto err_blas;
    }
    cublasSetStream(s->blas, s->stream);
    cublasSetWorkspace(s->blas, s->workspace, RT_CUDA_WORKSPACE);
    if ((b = cublasLtCreate(&s->lt)) != CUBLAS_STATUS_SUCCESS) {
        st = rt_err(err, RT_ERR_DEVICE, "cublasLtCreate failed (%d)", (int)b);
        goto err_lt;
    }
    ctx->cuda = s;
    ctx->stream = s->stream;
    ctx->threads = 0;
    return RT_OK;

err_lt:
    cublasDestroy(s->blas);
err_blas:
    cudaFree(s->partials);
err_partials:
    cudaFree(s->workspace);
err_ws:
    cudaStreamDestroy(s->stream);
err_stream:
    free(s);
    return st;
}

static void rt_cuda_ctx_fini(rt_kctx *ctx)
{
    cuda_state *s = CS(ctx);
    if (!s)
        return;
    cudaStreamSynchronize(s->stream);
    for (int i = 0; i < RT_LT_CACHE; i++) {
        lt_plan *p = &s->plans[i];
        if (!p->valid)
            continue;
        cublasLtMatrixLayoutDestroy(p->a);
        cublasLtMatrixLayoutDestroy(p->b);
        cublasLtMatrixLayoutDestroy(p->c);
        cublasLtMatmulDescDestroy(p->desc);
    }
    cublasLtDestroy(s->lt);
    cublasDestroy(s->blas);
    cudaFree(s->partials);
    cudaFree(s->workspace);
    cudaStreamDestroy(s->stream);
    free(s);
    ctx->cuda = NULL;
    ctx->stream = NULL;
}

static rt_status rt_cuda_check(rt_kctx *ctx, char *err)
{
    cuda_state *s = CS(ctx);
    record_launch(s);
    if (s->cuda_err != cudaSuccess) {
        cudaError_t e = s->cuda_err;
        s->cuda_err = cudaSuccess;
        return cuda_fail(err, e, "CUDA kernel");
    }
    if (s->blas_err) {
        int b = s->blas_err;
        s->blas_err = 0;
        return rt_err(err, RT_ERR_DEVICE, "%s failed (cuBLAS status %d)", s->blas_what, b);
    }
    return RT_OK;
}

static rt_status rt_cuda_sync(rt_kctx *ctx, char *err)
{
    cudaError_t e = cudaStreamSynchronize(CS(ctx)->stream);
    if (e != cudaSuccess)
        return cuda_fail(err, e, "cudaStreamSynchronize");
    return rt_cuda_check(ctx, err);
}

static rt_status rt_cuda_capture_begin(rt_kctx *ctx, char *err)
{
    cudaError_t e = cudaStreamBeginCapture(CS(ctx)->stream, cudaStreamCaptureModeThreadLocal);
    return e == cudaSuccess ? RT_OK : cuda_fail(err, e, "cudaStreamBeginCapture");
}

static rt_status rt_cuda_capture_end(rt_kctx *ctx, void **graph_exec, char *err)
{
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    cudaError_t e = cudaStreamEndCapture(CS(ctx)->stream, &g);
    if (e != cudaSuccess)
        return cuda_fail(err, e, "cudaStreamEndCapture");
    rt_status st = rt_cuda_check(ctx, err);
    if (st == RT_OK && (e = cudaGraphInstantiate(&x, g, 0)) != cudaSuccess)
        st = cuda_fail(err, e, "cudaGraphInstantiate");
    cudaGraphDestroy(g);
    *graph_exec = st == RT_OK ? (void *)x : NULL;
    return st;
}

static rt_status rt_cuda_graph_launch(rt_kctx *ctx, void *graph_exec, char *err)
{
    cudaError_t e = cudaGraphLaunch((cudaGraphExec_t)graph_exec, CS(ctx)->stream);
    return e == cudaSuccess ? RT_OK : cuda_fail(err, e, "cudaGraphLaunch");
}

static void rt_cuda_graph_destroy(void *graph_exec)
{
    if (graph_exec)
        cudaGraphExecDestroy((cudaGraphExec_t)graph_exec);
}

static rt_status rt_cuda_malloc(size_t bytes, void **out)
{
    return cudaMalloc(out, bytes) == cudaSuccess ? RT_OK : RT_ERR_NOMEM;
}

static void rt_cuda_free(void *p) { cudaFree(p); }

static rt_status rt_cuda_malloc_host(size_t bytes, void **out)
{
    return cudaMallocHost(out, bytes) == cudaSuccess ? RT_OK : RT_ERR_NOMEM;
}

static void rt_cuda_free_host(void *p) { cudaFreeHost(p); }

static void rt_cuda_memcpy(rt_kctx *ctx, void *dst, const void *src, size_t bytes, rt_copy kind)
{
    cudaMemcpyKind k = kind == RT_H2D ? cudaMemcpyHostToDevice
                       : kind == RT_D2H ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, k, CS(ctx)->stream);
    if (e != cudaSuccess && CS(ctx)->cuda_err == cudaSuccess)
        CS(ctx)->cuda_err = e;
}

static void rt_cuda_memset(rt_kctx *ctx, void *p, int value, size_t bytes)
{
    cudaError_t e = cudaMemsetAsync(p, value, bytes, CS(ctx)->stream);
    if (e != cudaSuccess && CS(ctx)->cuda_err == cudaSuccess)
        CS(ctx)->cuda_err = e;
}

const rt_kernel_ops rt_cuda_kernel_ops = {
    .name = "CUDA",
    .device_count = rt_cuda_device_count,
    .select_device = rt_cuda_select,
    .device_name = rt_cuda_name,
    .init = rt_cuda_ctx_init,
    .fini = rt_cuda_ctx_fini,
    .sync = rt_cuda_sync,
    .check = rt_cuda_check,
    .capture_begin = rt_cuda_capture_begin,
    .capture_end = rt_cuda_capture_end,
    .graph_launch = rt_cuda_graph_launch,
    .graph_destroy = rt_cuda_graph_destroy,
    .malloc_dev = rt_cuda_malloc,
    .free_dev = rt_cuda_free,
    .malloc_host = rt_cuda_malloc_host,
    .free_host = rt_cuda_free_host,
    .memcpy_async = rt_cuda_memcpy,
    .memset_async = rt_cuda_memset,
    .embed_fwd = rt_cuda_embed_fwd,
    .embed_bwd = rt_cuda_embed_bwd,
    .bn_fwd = rt_cuda_bn_fwd,
    .bn_bwd = rt_cuda_bn_bwd,
    .dense_fwd = rt_cuda_dense_fwd,
    .dense_bwd = rt_cuda_dense_bwd,
    .dropout = rt_cuda_dropout,
    .head_fwd = rt_cuda_head_fwd,
    .head_bwd = rt_cuda_head_bwd,
    .mae = rt_cuda_mae,
    .rmspe = rt_cuda_rmspe,
    .adam = rt_cuda_adam,
    .step_incr = rt_cuda_step_incr,
    .scale = rt_cuda_scale,
};
