/* test_cudaemu.cu — the CUDA emulator's own tests (GPU-emulation build
 * only): the execution model (barriers with early-exiting threads,
 * partial-mask shuffles, reads of lanes outside the mask, deadlocks and
 * divergent barriers detected, launch errors, dynamic shared memory,
 * contended atomics), streams and events, graph capture (arguments frozen at
 * capture, unjoined forks and synchronisation during capture refused), the
 * cuBLAS/cuBLASLt contract (GEMM against a reference, the alignment rules)
 * and NCCL (ring all-reduce over 3 ranks, non-blocking init, duplicate GPU,
 * a vanished peer, use after destroy).  Cases that must abort run in a
 * forked child whose stderr is checked. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

extern "C" {
#include <cmocka.h>
}

#define CK(x) assert_int_equal((int)(x), 0)

template <class T> static T *dalloc(size_t n)
{
    void *p = NULL;
    CK(cudaMalloc(&p, n * sizeof(T)));
    return (T *)p;
}

static const char *self_exe;

/* Run this program again with `--case name` (a fresh process: the
 * emulator's threads do not survive fork); it must abort with `want` in its
 * stderr. */
static void expect_abort(const char *name, const char *want)
{
    char path[] = "/tmp/cudaemu-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 2);
        alarm(20);
        execl(self_exe, self_exe, "--case", name, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    char buf[4096] = {0};
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    (void)n;
    close(fd);
    unlink(path);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT || !strstr(buf, want))
        fail_msg("case %s: expected an abort mentioning '%s'; status %d, stderr: %s", name, want, status, buf);
}

/* ---- execution model --------------------------------------------------------- */

/* threads >= live exit before the barriers; the rest sum in shared memory */
__global__ void k_early_exit(int live, int *out)
{
    __shared__ int s[128];
    int t = threadIdx.x;
    if (t >= live)
        return;
    s[t] = t + 1;
    __syncthreads();
    for (int w = 64; w > 0; w >>= 1) {
        if (t < w && t + w < live)
            s[t] += s[t + w];
        __syncthreads();
    }
    if (t == 0)
        *out = s[0];
}

static void test_exec_barrier_early_exit(void **state)
{
    (void)state;
    int *d = dalloc<int>(1), h = 0;
    k_early_exit<<<1, 128>>>(40, d);
    CK(cudaGetLastError());
    CK(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost));
    assert_int_equal(h, 40 * 41 / 2);
    cudaFree(d);
}

/* only the first 16 lanes shuffle down by one: lane 15 reads lane 16,
 * outside the mask, which is undefined (NaN here) */
__global__ void k_partial_shfl(float *out)
{
    int lane = threadIdx.x;
    float v = (float)lane;
    if (lane < 16)
        v = __shfl_down_sync(0x0000ffffu, v, 1);
    out[lane] = v;
}

/* warp 0 reduces 32 values with xor shuffles; the other warps do nothing */
__global__ void k_warp0_sum(const float *in, float *out)
{
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (warp == 0) {
        float v = in[lane];
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, o);
        unsigned b = __ballot_sync(0xffffffffu, v > 0.0f);
        if (lane == 0) {
            out[0] = v;
            out[1] = (float)__popc(b);
        }
    }
}

static void test_exec_warp_ops(void **state)
{
    (void)state;
    float *d = dalloc<float>(32), h[32];
    k_partial_shfl<<<1, 32>>>(d);
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int l = 0; l < 15; l++)
        assert_true(h[l] == (float)(l + 1));
    assert_true(isnan(h[15])); /* read of a lane outside the mask */
    for (int l = 16; l < 32; l++)
        assert_true(h[l] == (float)l);
    float in[32], *din = dalloc<float>(32);
    for (int i = 0; i < 32; i++)
        in[i] = (float)i;
    CK(cudaMemcpy(din, in, sizeof in, cudaMemcpyHostToDevice));
    k_warp0_sum<<<1, 96>>>(din, d);
    CK(cudaMemcpy(h, d, 8, cudaMemcpyDeviceToHost));
    assert_true(h[0] == 496.0f && h[1] == 32.0f);
    cudaFree(d);
    cudaFree(din);
}

__global__ void k_deadlock(float *out)
{
    if (threadIdx.x == 0) {
        __syncthreads(); /* lane 0 waits here, lanes 1..31 in the shuffle below */
    } else {
        out[threadIdx.x] = __shfl_sync(0xffffffffu, 1.0f, 0);
    }
}
static void run_deadlock(void)
{
    float *d = dalloc<float>(32);
    k_deadlock<<<1, 32>>>(d);
    cudaDeviceSynchronize();
}

__global__ void k_divergent_barrier(void)
{
    if (threadIdx.x < 16)
        __syncthreads();
    else
        __syncthreads();
}
static void run_divergent(void)
{
    k_divergent_barrier<<<1, 32>>>();
    cudaDeviceSynchronize();
}

__global__ void k_lane_exits(float *out)
{
    if (threadIdx.x == 3)
        return;
    out[threadIdx.x] = __shfl_sync(0xffffffffu, 2.0f, 0);
}
static void run_lane_exits(void)
{
    float *d = dalloc<float>(32);
    k_lane_exits<<<1, 32>>>(d);
    cudaDeviceSynchronize();
}

static void test_exec_hangs_detected(void **state)
{
    (void)state;
    expect_abort("deadlock", "deadlock");
    expect_abort("divergent", "different __syncthreads");
    expect_abort("lane-exits", "exited while lane");
}

__global__ void k_nothing(int *p) { (void)p; }

static void test_exec_launch_errors(void **state)
{
    (void)state;
    k_nothing<<<1, 2048>>>(NULL);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidConfiguration);
    k_nothing<<<0, 32>>>(NULL);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidConfiguration);
    k_nothing<<<dim3(1, 70000), 32>>>(NULL);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidConfiguration);
    k_nothing<<<1, dim3(8, 8, 65)>>>(NULL);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidConfiguration);
    assert_int_equal(cudaGetLastError(), cudaSuccess); /* read and cleared */
}

/* dynamic shared memory and an atomic scatter-add with repeated indices */
__global__ void k_scatter(const int *idx, int n, float *bins)
{
    extern __shared__ float buf[];
    int t = threadIdx.x;
    buf[t] = 1.0f;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + t;
    if (i < n)
        atomicAdd(&bins[idx[i]], buf[(t + 1) % blockDim.x]);
}

static void test_exec_shared_and_atomics(void **state)
{
    (void)state;
    const int n = 512 * 64;
    int *h = (int *)malloc(n * sizeof(int)), *d = dalloc<int>(n);
    for (int i = 0; i < n; i++)
        h[i] = i % 7;
    float *bins = dalloc<float>(7), hb[7];
    CK(cudaMemset(bins, 0, sizeof hb));
    CK(cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice));
    k_scatter<<<512, 64, 64 * sizeof(float)>>>(d, n, bins);
    CK(cudaGetLastError());
    CK(cudaMemcpy(hb, bins, sizeof hb, cudaMemcpyDeviceToHost));
    float total = 0;
    for (int b = 0; b < 7; b++)
        total += hb[b];
    assert_true(total == (float)n);
    assert_true(hb[0] == (float)((n + 6) / 7));
    free(h);
    cudaFree(d);
    cudaFree(bins);
}

/* ---- streams, events, graphs ------------------------------------------------------- */

__global__ void k_fill(float *p, int n, float v)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = v;
}
__global__ void k_axpy_from(float *y, const float *x, int n, float a)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] += a * x[i];
}
__global__ void k_axpy_dev(float *y, const float *x, int n, const float *a)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] += *a * x[i];
}

static void test_stream_events(void **state)
{
    (void)state;
    const int n = 4096;
    cudaStream_t a, b;
    CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    cudaEvent_t e;
    CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    float *x = dalloc<float>(n), *y = dalloc<float>(n), *h;
    CK(cudaMallocHost((void **)&h, n * sizeof(float)));
    k_fill<<<8, 128, 0, a>>>(x, n, 2.0f);
    k_fill<<<8, 128, 0, a>>>(y, n, 1.0f);
    CK(cudaEventRecord(e, a));
    CK(cudaStreamWaitEvent(b, e, 0));
    k_axpy_from<<<8, 128, 0, b>>>(y, x, n, 3.0f);
    CK(cudaMemcpyAsync(h, y, n * sizeof(float), cudaMemcpyDeviceToHost, b));
    CK(cudaStreamSynchronize(b));
    for (int i = 0; i < n; i++)
        assert_true(h[i] == 7.0f);
    /* copies check where pointers live */
    assert_int_equal(cudaMemcpy(h, h + 1, 4, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    assert_int_equal(cudaMemcpy(x, h, (n + 1) * sizeof(float), cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    cudaGetLastError();
    CK(cudaEventDestroy(e));
    CK(cudaStreamDestroy(a));
    CK(cudaStreamDestroy(b));
    cudaFreeHost(h);
    cudaFree(x);
    cudaFree(y);
}

static void test_stream_graph_replay(void **state)
{
    (void)state;
    const int n = 256;
    cudaStream_t s, side;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    float *x = dalloc<float>(n), *y = dalloc<float>(n), *lr = dalloc<float>(1), h[256];
    k_fill<<<2, 128, 0, s>>>(x, n, 1.0f);
    k_fill<<<2, 128, 0, s>>>(y, n, 0.0f);
    float host_lr = 0.5f;
    CK(cudaMemcpyAsync(lr, &host_lr, 4, cudaMemcpyHostToDevice, s));
    CK(cudaStreamSynchronize(s));

    /* y += 0.5 x (by value, frozen) then y += lr x (read from device memory),
     * the second on a forked stream joined back */
    cudaEvent_t fork, join;
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    k_axpy_from<<<2, 128, 0, s>>>(y, x, n, host_lr);
    CK(cudaEventRecord(fork, s));
    CK(cudaStreamWaitEvent(side, fork, 0));
    k_axpy_dev<<<2, 128, 0, side>>>(y, x, n, lr);
    CK(cudaEventRecord(join, side));
    CK(cudaStreamWaitEvent(s, join, 0));
    cudaGraph_t g;
    CK(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t ge;
    CK(cudaGraphInstantiate(&ge, g, 0));
    assert_int_equal(cudaStreamQuery(s), cudaSuccess); /* capture ran nothing */

    host_lr = 2.0f; /* the captured by-value argument stays 0.5 */
    CK(cudaMemcpyAsync(lr, &host_lr, 4, cudaMemcpyHostToDevice, s)); /* the device value changes */
    CK(cudaGraphLaunch(ge, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaMemcpyAsync(h, y, sizeof h, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; i++)
        assert_true(h[i] == 2 * (0.5f + 2.0f));
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);

    /* a fork never joined back */
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CK(cudaEventRecord(fork, s));
    CK(cudaStreamWaitEvent(side, fork, 0));
    k_fill<<<1, 32, 0, side>>>(x, n, 0.0f);
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureUnjoined);
    assert_null(g);
    /* synchronising a capturing stream invalidates the capture */
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    k_fill<<<1, 32, 0, s>>>(x, n, 0.0f);
    assert_int_equal(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    /* so do allocation and copies from pageable memory */
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    void *p;
    assert_int_equal(cudaMalloc(&p, 64), cudaErrorStreamCaptureUnsupported);
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    assert_int_equal(cudaMemcpyAsync(x, h, 16, cudaMemcpyHostToDevice, s), cudaErrorStreamCaptureUnsupported);
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    cudaGetLastError();
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
    cudaStreamDestroy(s);
    cudaStreamDestroy(side);
    cudaFree(x);
    cudaFree(y);
    cudaFree(lr);
}

/* ---- cuBLAS / cuBLASLt ---------------------------------------------------------- */

static void ref_gemm(bool ta, bool tb, int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                     float *C, int ldc)
{
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0;
            for (int p = 0; p < k; p++)
                s += (double)(ta ? A[p + i * lda] : A[i + p * lda]) * (tb ? B[j + p * ldb] : B[p + j * ldb]);
            C[i + j * ldc] = (float)s;
        }
}

/* The cuBLAS tests' operands: A and B (40 x 40 host values, one fixed
 * pattern each), D (m x n) = op(A) op(B) with m 13, n 7, k 29, ld 40. */
enum { LT_M = 13, LT_N = 7, LT_K = 29, LT_LD = 40 };

static void fill_ab(float *A, float *B)
{
    for (int i = 0; i < LT_LD * LT_LD; i++) {
        A[i] = (float)((i * 37) % 17) / 8.0f - 1.0f;
        B[i] = (float)((i * 11) % 13) / 6.0f - 1.0f;
    }
}

/* A cuBLASLt handle with those shapes' layouts (A m x k, B k x n, C = D
 * m x n, ld 40) and default preferences. */
struct lt_gemm {
    cublasLtHandle_t lt;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulPreference_t pref;
};

static void lt_open(lt_gemm *g)
{
    CK(cublasLtCreate(&g->lt));
    CK(cublasLtMatrixLayoutCreate(&g->la, CUDA_R_32F, LT_M, LT_K, LT_LD));
    CK(cublasLtMatrixLayoutCreate(&g->lb, CUDA_R_32F, LT_K, LT_N, LT_LD));
    CK(cublasLtMatrixLayoutCreate(&g->lc, CUDA_R_32F, LT_M, LT_N, LT_LD));
    CK(cublasLtMatmulPreferenceCreate(&g->pref));
}

static void lt_close(lt_gemm *g)
{
    cublasLtMatmulPreferenceDestroy(g->pref);
    cublasLtMatrixLayoutDestroy(g->la);
    cublasLtMatrixLayoutDestroy(g->lb);
    cublasLtMatrixLayoutDestroy(g->lc);
    cublasLtDestroy(g->lt);
}

static void test_lib_cublas(void **state)
{
    (void)state;
    cublasHandle_t h;
    CK(cublasCreate(&h));
    const int m = LT_M, n = LT_N, k = LT_K, ld = LT_LD;
    float A[40 * 40], B[40 * 40], C[40 * 40], R[40 * 40];
    fill_ab(A, B);
    float *dA = dalloc<float>(1600), *dB = dalloc<float>(1600), *dC = dalloc<float>(1600);
    CK(cudaMemcpy(dA, A, sizeof A, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dB, B, sizeof B, cudaMemcpyHostToDevice));
    const float one = 1.0f, zero = 0.0f;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            CK(cublasSgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &one, dA,
                           ld, dB, ld, &zero, dC, ld));
            CK(cudaMemcpy(C, dC, sizeof C, cudaMemcpyDeviceToHost));
            ref_gemm(ta, tb, m, n, k, A, ld, B, ld, R, ld);
            for (int j = 0; j < n; j++)
                for (int i = 0; i < m; i++)
                    assert_true(fabsf(C[i + j * ld] - R[i + j * ld]) <= 1e-5f * k);
        }
    /* a leading dimension below the rows is refused */
    assert_int_equal(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dA, m - 1, dB, ld, &zero, dC, ld),
                     CUBLAS_STATUS_INVALID_VALUE);

    /* cuBLASLt: D (m x n) = op(A) op(B) + bias, ReLU */
    lt_gemm g;
    lt_open(&g);
    cublasLtMatmulDesc_t desc;
    CK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_RELU_BIAS;
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    /* the heuristic with default preferences and no bias pointer assumes 256-byte alignment */
    CK(cublasLtMatmulAlgoGetHeuristic(g.lt, desc, g.la, g.lb, g.lc, g.lc, g.pref, 1, &res, &found));
    assert_int_equal(found, 1);
    float *bias = dalloc<float>(64);
    const float *b8 = bias + 2; /* 8-byte aligned */
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b8, sizeof b8));
    assert_int_equal(cublasLtMatmul(g.lt, desc, &one, dA, g.la, dB, g.lb, &zero, dC, g.lc, dC, g.lc,
                                    &res.algo, NULL, 0, 0),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    assert_int_equal(cublasLtMatmul(g.lt, desc, &one, dA + 2, g.la, dB, g.lb, &zero, dC, g.lc, dC,
                                    g.lc, &res.algo, NULL, 0, 0),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    /* told the real alignments (bias pointer set, 8-byte preferences), it works */
    uint32_t al = 8;
    for (int a = CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES; a <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES; a++)
        CK(cublasLtMatmulPreferenceSetAttribute(g.pref, (cublasLtMatmulPreferenceAttributes_t)a,
                                                &al, sizeof al));
    CK(cublasLtMatmulAlgoGetHeuristic(g.lt, desc, g.la, g.lb, g.lc, g.lc, g.pref, 1, &res, &found));
    float hb[64];
    for (int i = 0; i < 64; i++)
        hb[i] = (float)i / 10.0f - 0.5f;
    CK(cudaMemcpy(bias, hb, sizeof hb, cudaMemcpyHostToDevice));
    CK(cublasLtMatmul(g.lt, desc, &one, dA + 2, g.la, dB, g.lb, &zero, dC, g.lc, dC, g.lc,
                      &res.algo, NULL, 0, 0));
    CK(cudaMemcpy(C, dC, sizeof C, cudaMemcpyDeviceToHost));
    ref_gemm(false, false, m, n, k, A + 2, ld, B, ld, R, ld);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float want = R[i + j * ld] + hb[2 + i];
            want = want > 0 ? want : 0;
            assert_true(fabsf(C[i + j * ld] - want) <= 1e-5f * k);
        }
    cublasLtMatmulDescDestroy(desc);
    lt_close(&g);
    cublasDestroy(h);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    cudaFree(bias);
}

/* ---- NCCL --------------------------------------------------------------------- */

struct nrank {
    int rank, n, device;
    ncclUniqueId id;
    int mode; /* 0 all-reduce, 1 non-blocking init + all-reduce, 2 rank 1 vanishes */
    int result;
    ncclResult_t init, async;
    float out[4];
};

static void *nccl_rank(void *arg)
{
    nrank *r = (nrank *)arg;
    cudaSetDevice(r->device);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    ncclComm_t c;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = r->mode == 1 ? 0 : 1;
    r->init = ncclCommInitRankConfig(&c, r->n, r->id, r->rank, &cfg);
    if (r->mode == 1) {
        ncclResult_t a = ncclInProgress;
        while (r->init == ncclInProgress && a == ncclInProgress)
            ncclCommGetAsyncError(c, &a);
        r->init = a;
    }
    if (r->init != ncclSuccess) {
        cudaStreamDestroy(s);
        return NULL;
    }
    float *d = dalloc<float>(1001), h[1001];
    for (int i = 0; i < 1001; i++)
        h[i] = (float)(r->rank + 1) * (float)(i % 5);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    if (r->mode == 2 && r->rank == 1) {
        ncclCommAbort(c); /* the peer vanishes */
    } else {
        r->result = ncclAllReduce(d, d, 1001, ncclFloat32, ncclSum, c, s);
        for (int i = 0; i < 4000 && cudaStreamQuery(s) == cudaErrorNotReady; i++) {
            ncclCommGetAsyncError(c, &r->async);
            if (r->async != ncclSuccess)
                break;
            usleep(1000);
        }
        if (r->async != ncclSuccess) {
            ncclCommAbort(c);
        } else {
            cudaStreamSynchronize(s);
            cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
            memcpy(r->out, h, sizeof r->out);
            ncclCommFinalize(c);
            ncclCommDestroy(c);
        }
    }
    cudaFree(d);
    cudaStreamDestroy(s);
    return NULL;
}

static void run_ranks(int n, int mode, const int *devices, nrank *r)
{
    ncclUniqueId id;
    CK(ncclGetUniqueId(&id));
    pthread_t th[8];
    for (int i = 0; i < n; i++) {
        memset(&r[i], 0, sizeof r[i]);
        r[i].rank = i, r[i].n = n, r[i].device = devices[i], r[i].id = id, r[i].mode = mode;
        pthread_create(&th[i], NULL, nccl_rank, &r[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
}

/* cuBLASLt's ReLU mask: RELU_AUX_BIAS writes a bit per element of D
 * (leading dimension in bits, a multiple of 128), DRELU_BGRAD reads it in
 * the backward GEMM, zeroes D where the ReLU was off and writes the bias
 * gradient, D's row sums after the mask; a leading dimension that is no
 * multiple of 128, or below D's rows, is refused. */
static void test_lib_cublaslt_relu_mask(void **state)
{
    (void)state;
    const int m = LT_M, n = LT_N, k = LT_K, ld = LT_LD;
    const int64_t aux_ld = 128;
    float A[40 * 40], B[40 * 40], Y[40 * 40], G[40 * 40], R[40 * 40], hb[16], db[16];
    fill_ab(A, B);
    for (int i = 0; i < 16; i++)
        hb[i] = (float)i / 10.0f - 0.5f;
    float *dA = dalloc<float>(1600), *dB = dalloc<float>(1600), *dY = dalloc<float>(1600),
          *dG = dalloc<float>(1600), *bias = dalloc<float>(16), *dbias = dalloc<float>(16);
    uint8_t *mask = dalloc<uint8_t>((size_t)(aux_ld / 8 * n));
    CK(cudaMemcpy(dA, A, sizeof A, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dB, B, sizeof B, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(bias, hb, sizeof hb, cudaMemcpyHostToDevice));
    lt_gemm g;
    lt_open(&g);
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    const float one = 1.0f, zero = 0.0f;
    /* forward: Y = relu(A B + bias), the mask of Y > 0 */
    cublasLtMatmulDesc_t fwd, bwd;
    CK(cublasLtMatmulDescCreate(&fwd, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
    CK(cublasLtMatmulDescSetAttribute(fwd, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    CK(cublasLtMatmulDescSetAttribute(fwd, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    CK(cublasLtMatmulDescSetAttribute(fwd, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &mask,
                                      sizeof mask));
    const int64_t bad_ld[2] = {96, 0}; /* no multiple of 128; below the rows */
    for (int i = 0; i < 2; i++) {
        CK(cublasLtMatmulDescSetAttribute(fwd, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &bad_ld[i],
                                          sizeof bad_ld[i]));
        assert_int_equal(cublasLtMatmulAlgoGetHeuristic(g.lt, fwd, g.la, g.lb, g.lc, g.lc, g.pref,
                                                        1, &res, &found),
                         CUBLAS_STATUS_INVALID_VALUE);
    }
    CK(cublasLtMatmulDescSetAttribute(fwd, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld,
                                      sizeof aux_ld));
    CK(cublasLtMatmulAlgoGetHeuristic(g.lt, fwd, g.la, g.lb, g.lc, g.lc, g.pref, 1, &res, &found));
    CK(cublasLtMatmul(g.lt, fwd, &one, dA, g.la, dB, g.lb, &zero, dY, g.lc, dY, g.lc, &res.algo,
                      NULL, 0, 0));
    CK(cudaMemcpy(Y, dY, sizeof Y, cudaMemcpyDeviceToHost));
    ref_gemm(false, false, m, n, k, A, ld, B, ld, R, ld);
    int on = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float want = R[i + j * ld] + hb[i];
            on += want > 0;
            assert_true(fabsf(Y[i + j * ld] - (want > 0 ? want : 0)) <= 1e-5f * k);
        }
    assert_true(on > 10 && on < m * n - 10); /* both sides of the ReLU */
    /* backward: G = (A B) masked by Y > 0, the bias gradient its row sums */
    CK(cublasLtMatmulDescCreate(&bwd, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    epi = CUBLASLT_EPILOGUE_DRELU_BGRAD;
    CK(cublasLtMatmulDescSetAttribute(bwd, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    CK(cublasLtMatmulDescSetAttribute(bwd, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias,
                                      sizeof dbias));
    CK(cublasLtMatmulDescSetAttribute(bwd, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &mask,
                                      sizeof mask));
    CK(cublasLtMatmulDescSetAttribute(bwd, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld,
                                      sizeof aux_ld));
    CK(cublasLtMatmulAlgoGetHeuristic(g.lt, bwd, g.la, g.lb, g.lc, g.lc, g.pref, 1, &res, &found));
    CK(cublasLtMatmul(g.lt, bwd, &one, dA, g.la, dB, g.lb, &zero, dG, g.lc, dG, g.lc, &res.algo,
                      NULL, 0, 0));
    CK(cudaMemcpy(G, dG, sizeof G, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(db, dbias, sizeof db, cudaMemcpyDeviceToHost));
    for (int i = 0; i < m; i++) {
        double sum = 0;
        for (int j = 0; j < n; j++) {
            float want = Y[i + j * ld] > 0 ? R[i + j * ld] : 0.0f;
            assert_true(fabsf(G[i + j * ld] - want) <= 1e-5f * k);
            sum += want;
        }
        assert_true(fabs(db[i] - sum) <= 1e-5 * k * n);
    }
    cublasLtMatmulDescDestroy(fwd);
    cublasLtMatmulDescDestroy(bwd);
    lt_close(&g);
    for (void *p : {(void *)dA, (void *)dB, (void *)dY, (void *)dG, (void *)bias, (void *)dbias,
                    (void *)mask})
        cudaFree(p);
}

static void test_lib_nccl(void **state)
{
    (void)state;
    const int devs[3] = {0, 1, 2};
    nrank r[3];
    for (int mode = 0; mode < 2; mode++) {
        run_ranks(3, mode, devs, r);
        for (int i = 0; i < 3; i++) {
            assert_int_equal(r[i].init, ncclSuccess);
            assert_int_equal(r[i].result, ncclSuccess);
            for (int e = 0; e < 4; e++)
                assert_true(r[i].out[e] == 6.0f * (float)(e % 5));
        }
    }
    /* two ranks on one GPU: NCCL refuses */
    const int same[2] = {1, 1};
    run_ranks(2, 0, same, r);
    assert_int_equal(r[0].init, ncclInvalidUsage);
    assert_int_equal(r[1].init, ncclInvalidUsage);
    /* rank 1 vanishes: rank 0's all-reduce reports a remote error, no hang */
    run_ranks(2, 2, devs, r);
    assert_int_equal(r[0].init, ncclSuccess);
    assert_int_equal(r[0].async, ncclRemoteError);
}

static void run_abort_after_destroy(void)
{
    ncclUniqueId id;
    ncclGetUniqueId(&id);
    ncclComm_t c;
    ncclCommInitRank(&c, 1, id, 0);
    ncclCommAbort(c);
    ncclCommAbort(c);
}

static void test_lib_nccl_use_after_free(void **state)
{
    (void)state;
    expect_abort("abort-twice", "not a live communicator");
}

int main(int argc, char **argv)
{
    setenv("CUDAEMU_DEVICES", "3", 1);
    self_exe = argv[0];
    if (argc == 3 && strcmp(argv[1], "--case") == 0) {
        const struct {
            const char *name;
            void (*fn)(void);
        } cases[] = {{"deadlock", run_deadlock},
                     {"divergent", run_divergent},
                     {"lane-exits", run_lane_exits},
                     {"abort-twice", run_abort_after_destroy}};
        for (const auto &c : cases)
            if (strcmp(argv[2], c.name) == 0)
                c.fn();
        return 0;
    }
    if (argc == 2) /* one group: test_exec_*, test_stream_*, test_lib_* */
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exec_barrier_early_exit), cmocka_unit_test(test_exec_warp_ops),
        cmocka_unit_test(test_exec_hangs_detected),     cmocka_unit_test(test_exec_launch_errors),
        cmocka_unit_test(test_exec_shared_and_atomics), cmocka_unit_test(test_stream_events),
        cmocka_unit_test(test_stream_graph_replay),     cmocka_unit_test(test_lib_cublas),
        cmocka_unit_test(test_lib_cublaslt_relu_mask),  cmocka_unit_test(test_lib_nccl),
        cmocka_unit_test(test_lib_nccl_use_after_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
