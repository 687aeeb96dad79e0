/* cuda_ctx.cu — the CUDA backend's context: the compute and communication
 * streams with the events that order them, cuBLAS and cuBLASLt handles
 * (their libraries loaded by the first context, cuda_blas.cuh) with one
 * workspace (set explicitly so that GEMMs are capturable in a graph),
 * memory, error reporting and graph capture. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.cuh"

static rt_status cuda_fail(char *err, cudaError_t e, const char *what)
{
    cudaGetLastError(); /* the error is reported here; do not leave it for the next check */
    return rt_err(err, e == cudaErrorMemoryAllocation ? RT_ERR_NOMEM : RT_ERR_DEVICE, "%s: %s (%s)",
                  what, cudaGetErrorString(e), cudaGetErrorName(e));
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
    rt_status st = rt_cublas_load(err); /* before any allocation: nothing to undo */
    if (st != RT_OK)
        return st;
    cuda_state *s = (cuda_state *)calloc(1, sizeof(cuda_state));
    if (!s)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    cudaError_t e;
    cublasStatus_t b;
    const char *dbg = getenv("RINGTRAIN_CUDA_SYNC");
    s->sync_each = dbg && strcmp(dbg, "1") == 0;
    cudaGetDevice(&s->device);
    if ((e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        st = cuda_fail(err, e, "cudaStreamCreateWithFlags");
        goto err_stream;
    }
    if ((e = cudaStreamCreateWithFlags(&s->comm, cudaStreamNonBlocking)) != cudaSuccess) {
        st = cuda_fail(err, e, "cudaStreamCreateWithFlags (communication)");
        goto err_comm;
    }
    if ((e = cudaEventCreateWithFlags(&s->fork_ev, cudaEventDisableTiming)) != cudaSuccess ||
        (e = cudaEventCreateWithFlags(&s->join_ev, cudaEventDisableTiming)) != cudaSuccess) {
        st = cuda_fail(err, e, "cudaEventCreateWithFlags");
        goto err_events;
    }
    if ((e = cudaMalloc(&s->workspace, RT_CUDA_WORKSPACE)) != cudaSuccess) {
        st = cuda_fail(err, e, "cudaMalloc (cuBLAS workspace, 32 MiB)");
        goto err_ws;
    }
    if ((e = cudaMalloc(&s->partials, RT_CUDA_PARTIALS * sizeof(double))) != cudaSuccess ||
        (e = cudaMalloc(&s->maxbits, 2 * sizeof(unsigned))) != cudaSuccess ||
        (e = cudaMemset(s->maxbits, 0, 2 * sizeof(unsigned))) != cudaSuccess ||
        (e = cudaMalloc(&s->adam, rt_cuda_adam_state_bytes())) != cudaSuccess ||
        (e = cudaMemset(s->adam, 0, rt_cuda_adam_state_bytes())) != cudaSuccess ||
        (e = cudaMalloc(&s->tickets, RT_CUDA_TICKETS * sizeof(unsigned))) != cudaSuccess ||
        (e = cudaMemset(s->tickets, 0, RT_CUDA_TICKETS * sizeof(unsigned))) != cudaSuccess) {
        st = cuda_fail(err, e, "cudaMalloc (reduction scratch)");
        goto err_partials;
    }
    if ((b = rt_cublas.cublasCreate(&s->blas)) != CUBLAS_STATUS_SUCCESS) {
        st = rt_err(err, RT_ERR_DEVICE, "cublasCreate: %s", rt_cublas.cublasGetStatusString(b));
        goto err_blas;
    }
    /* an explicit workspace: cuBLAS allocates nothing during graph capture */
    if ((b = rt_cublas.cublasSetStream(s->blas, s->stream)) != CUBLAS_STATUS_SUCCESS ||
        (b = rt_cublas.cublasSetWorkspace(s->blas, s->workspace, RT_CUDA_WORKSPACE)) !=
            CUBLAS_STATUS_SUCCESS) {
        st = rt_err(err, RT_ERR_DEVICE, "cublasSetStream/cublasSetWorkspace: %s",
                    rt_cublas.cublasGetStatusString(b));
        goto err_lt;
    }
    if ((b = rt_cublas.cublasLtCreate(&s->lt)) != CUBLAS_STATUS_SUCCESS) {
        st = rt_err(err, RT_ERR_DEVICE, "cublasLtCreate: %s", rt_cublas.cublasGetStatusString(b));
        goto err_lt;
    }
    cudaDeviceProp prop;
    /* bf16 tensor cores from Ampere (sm_80) on: [model] precision = bf16 */
    ctx->gpu_bf16 = cudaGetDeviceProperties(&prop, s->device) == cudaSuccess && prop.major >= 8;
    ctx->cuda = s;
    ctx->stream = s->stream;
    ctx->comm_stream = s->comm;
    ctx->threads = 0;
    return RT_OK;

err_lt:
    rt_cublas.cublasDestroy(s->blas);
err_blas:
err_partials:
    cudaFree(s->tickets);
    cudaFree(s->adam);
    cudaFree(s->maxbits);
    cudaFree(s->partials);
    cudaFree(s->workspace);
err_ws:
err_events:
    if (s->fork_ev)
        cudaEventDestroy(s->fork_ev);
    if (s->join_ev)
        cudaEventDestroy(s->join_ev);
    cudaStreamDestroy(s->comm);
err_comm:
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
    cudaStreamSynchronize(s->comm);
    rt_cuda_free_lt_plans(s);
    rt_cublas.cublasLtDestroy(s->lt);
    rt_cublas.cublasDestroy(s->blas);
    cudaFree(s->emb_acc);
    cudaFree(s->tickets);
    cudaFree(s->adam);
    cudaFree(s->maxbits);
    cudaFree(s->partials);
    cudaFree(s->workspace);
    cudaEventDestroy(s->fork_ev);
    cudaEventDestroy(s->join_ev);
    cudaStreamDestroy(s->comm);
    cudaStreamDestroy(s->stream);
    free(s);
    ctx->cuda = NULL;
    ctx->stream = NULL;
    ctx->comm_stream = NULL;
}

static rt_status rt_cuda_check(rt_kctx *ctx, char *err)
{
    cuda_state *s = CS(ctx);
    after_op(s, cudaSuccess, "a kernel launch");
    const char *what = s->err_what ? s->err_what : "CUDA";
    if (s->cuda_err != cudaSuccess) {
        cudaError_t e = s->cuda_err;
        s->cuda_err = cudaSuccess;
        s->err_what = NULL;
        return rt_err(err, RT_ERR_DEVICE, "%s: %s (%s)%s", what, cudaGetErrorString(e),
                      cudaGetErrorName(e),
                      s->sync_each ? "" : "; set RINGTRAIN_CUDA_SYNC=1 to find the op that failed");
    }
    if (s->blas_err) {
        int b = s->blas_err;
        s->blas_err = 0;
        s->err_what = NULL;
        return rt_err(err, RT_ERR_DEVICE, "%s: %s", what,
                      rt_cublas.cublasGetStatusString((cublasStatus_t)b));
    }
    return RT_OK;
}

static rt_status rt_cuda_sync(rt_kctx *ctx, char *err)
{
    cuda_state *s = CS(ctx);
    cudaError_t e = cudaStreamSynchronize(s->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(s->comm);
    if (e != cudaSuccess)
        after_op(s, e, "cudaStreamSynchronize");
    return rt_cuda_check(ctx, err);
}

static rt_status rt_cuda_capture_begin(rt_kctx *ctx, char *err)
{
    cudaError_t e = cudaStreamBeginCapture(CS(ctx)->stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess)
        return cuda_fail(err, e, "cudaStreamBeginCapture");
    CS(ctx)->capturing = true;
    return RT_OK;
}

static rt_status rt_cuda_capture_end(rt_kctx *ctx, void **graph_exec, char *err)
{
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    cudaError_t e = cudaStreamEndCapture(CS(ctx)->stream, &g);
    CS(ctx)->capturing = false;
    rt_status st = rt_cuda_check(ctx, err); /* the first error inside the capture, if any */
    if (st == RT_OK && e != cudaSuccess)
        st = cuda_fail(err, e, "cudaStreamEndCapture");
    if (st == RT_OK && (e = cudaGraphInstantiate(&x, g, 0)) != cudaSuccess)
        st = cuda_fail(err, e, "cudaGraphInstantiate");
    if (g)
        cudaGraphDestroy(g);
    *graph_exec = st == RT_OK ? (void *)x : NULL;
    return st;
}

static rt_status rt_cuda_graph_launch(rt_kctx *ctx, void *graph_exec, char *err)
{
    cudaError_t e = cudaGraphLaunch((cudaGraphExec_t)graph_exec, CS(ctx)->stream);
    if (e != cudaSuccess)
        return cuda_fail(err, e, "cudaGraphLaunch");
    after_op(CS(ctx), cudaSuccess, "the step's CUDA graph");
    return RT_OK;
}

static void rt_cuda_graph_destroy(void *graph_exec)
{
    if (graph_exec)
        cudaGraphExecDestroy((cudaGraphExec_t)graph_exec);
}

static rt_status rt_cuda_event_create(rt_kctx *ctx, void **ev, char *err)
{
    (void)ctx;
    cudaEvent_t e = NULL;
    cudaError_t r = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    *ev = e;
    return r == cudaSuccess ? RT_OK : cuda_fail(err, r, "cudaEventCreateWithFlags");
}

static void rt_cuda_event_destroy(void *ev) { cudaEventDestroy((cudaEvent_t)ev); }

static void rt_cuda_event_record(rt_kctx *ctx, void *ev)
{
    after_op(CS(ctx), cudaEventRecord((cudaEvent_t)ev, CS(ctx)->stream), "cudaEventRecord");
}

static rt_status rt_cuda_event_sync(rt_kctx *ctx, void *ev, char *err)
{
    cudaError_t e = cudaEventSynchronize((cudaEvent_t)ev);
    if (e != cudaSuccess)
        after_op(CS(ctx), e, "cudaEventSynchronize");
    return rt_cuda_check(ctx, err);
}

static rt_status rt_cuda_timer_create(rt_kctx *ctx, void **ev, char *err)
{
    (void)ctx;
    cudaEvent_t e = NULL;
    cudaError_t r = cudaEventCreateWithFlags(&e, cudaEventDefault);
    *ev = e;
    return r == cudaSuccess ? RT_OK : cuda_fail(err, r, "cudaEventCreateWithFlags (timing)");
}

/* External: in a capture, an event record node of the graph (each replay
 * records the time), not the dependency a plain record would become.  CUDA
 * refuses the flag outside a capture (cudaErrorIllegalState). */
static void rt_cuda_timer_mark(rt_kctx *ctx, void *ev, bool comm)
{
    cuda_state *s = CS(ctx);
    cudaStream_t st = comm ? s->comm : s->stream;
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    after_op(s, cudaStreamIsCapturing(st, &cap), "cudaStreamIsCapturing (timing mark)");
    after_op(s, cudaEventRecordWithFlags((cudaEvent_t)ev, st,
                                         cap == cudaStreamCaptureStatusActive ? cudaEventRecordExternal
                                                                             : cudaEventRecordDefault),
             "cudaEventRecordWithFlags (timing mark)");
}

static rt_status rt_cuda_timer_ms(rt_kctx *ctx, void *a, void *b, double *ms, char *err)
{
    (void)ctx;
    float f = 0;
    cudaError_t e = cudaEventSynchronize((cudaEvent_t)b);
    if (e == cudaSuccess)
        e = cudaEventElapsedTime(&f, (cudaEvent_t)a, (cudaEvent_t)b);
    *ms = f;
    return e == cudaSuccess ? RT_OK : cuda_fail(err, e, "cudaEventElapsedTime");
}

static void rt_cuda_fork(rt_kctx *ctx)
{
    cuda_state *s = CS(ctx);
    after_op(s, cudaEventRecord(s->fork_ev, s->stream), "cudaEventRecord (fork)");
    after_op(s, cudaStreamWaitEvent(s->comm, s->fork_ev, 0), "cudaStreamWaitEvent (fork)");
}

static void rt_cuda_join(rt_kctx *ctx)
{
    cuda_state *s = CS(ctx);
    after_op(s, cudaEventRecord(s->join_ev, s->comm), "cudaEventRecord (join)");
    after_op(s, cudaStreamWaitEvent(s->stream, s->join_ev, 0), "cudaStreamWaitEvent (join)");
}

static rt_status rt_cuda_malloc(size_t bytes, void **out)
{
    cudaError_t e = cudaMalloc(out, bytes);
    if (e == cudaSuccess)
        return RT_OK;
    cudaGetLastError();
    return e == cudaErrorMemoryAllocation ? RT_ERR_NOMEM : RT_ERR_DEVICE;
}

static void rt_cuda_free(void *p) { cudaFree(p); }

static rt_status rt_cuda_mem_available(rt_kctx *ctx, int64_t *bytes, char *err)
{
    (void)ctx;
    size_t free_b = 0, total = 0;
    cudaError_t e = cudaMemGetInfo(&free_b, &total);
    *bytes = (int64_t)free_b;
    return e == cudaSuccess ? RT_OK : cuda_fail(err, e, "cudaMemGetInfo");
}

static rt_status rt_cuda_malloc_host(size_t bytes, void **out)
{
    cudaError_t e = cudaMallocHost(out, bytes);
    if (e == cudaSuccess)
        return RT_OK;
    cudaGetLastError();
    return e == cudaErrorMemoryAllocation ? RT_ERR_NOMEM : RT_ERR_DEVICE;
}

static void rt_cuda_free_host(void *p) { cudaFreeHost(p); }

static void rt_cuda_memcpy(rt_kctx *ctx, void *dst, const void *src, size_t bytes, rt_copy kind)
{
    cudaMemcpyKind k = kind == RT_H2D ? cudaMemcpyHostToDevice
                       : kind == RT_D2H ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
    after_op(CS(ctx), cudaMemcpyAsync(dst, src, bytes, k, CS(ctx)->stream),
             kind == RT_H2D ? "cudaMemcpyAsync (host to device)"
             : kind == RT_D2H ? "cudaMemcpyAsync (device to host)" : "cudaMemcpyAsync (device to device)");
}

static void rt_cuda_memset(rt_kctx *ctx, void *p, int value, size_t bytes)
{
    after_op(CS(ctx), cudaMemsetAsync(p, value, bytes, CS(ctx)->stream), "cudaMemsetAsync");
}

#define CUDA_OP(name, params) .name = rt_cuda_##name,
const rt_kernel_ops rt_cuda_kernel_ops = {.name = "CUDA",
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
                                          .event_create = rt_cuda_event_create,
                                          .event_destroy = rt_cuda_event_destroy,
                                          .event_record = rt_cuda_event_record,
                                          .event_sync = rt_cuda_event_sync,
                                          .timer_create = rt_cuda_timer_create,
                                          .timer_mark = rt_cuda_timer_mark,
                                          .timer_ms = rt_cuda_timer_ms,
                                          .fork = rt_cuda_fork,
                                          .join = rt_cuda_join,
                                          .mem_available = rt_cuda_mem_available,
                                          .malloc_dev = rt_cuda_malloc,
                                          .free_dev = rt_cuda_free,
                                          .malloc_host = rt_cuda_malloc_host,
                                          .free_host = rt_cuda_free_host,
                                          .memcpy_async = rt_cuda_memcpy,
                                          .memset_async = rt_cuda_memset,
                                          RT_KERNEL_OPS(CUDA_OP)};
