/* test_transport_gpu.c — collectives on device memory: the pinned-host
 * staging path over TCP (two ranks as threads sharing one GPU, buffers of
 * several pipelined chunks) and NCCL (one rank per GPU; a single-rank
 * communicator when only one GPU is present).  Exits 77 without a GPU. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rank_harness.h"
#include "rt_comm.h"
#include "rt_log.h"

static rt_comm_opts opts(void)
{
    rt_comm_opts o;
    rt_comm_opts_defaults(&o);
    o.job_id = 5;
    memset(o.key, 9, sizeof o.key);
    o.timeout_us = 30000000;
    return o;
}

typedef struct gpu_arg {
    size_t count;
    bool nccl;
} gpu_arg;

static void gpu_body(rt_comm *c, int r, void *varg, rh_result *res)
{
    gpu_arg *a = varg;
    const int n = rt_comm_size(c);
    int ndev = 0;
    cudaGetDeviceCount(&ndev);
    cudaSetDevice(r % ndev);
    cudaStream_t s;
    RH_CHECK(res, cudaStreamCreate(&s) == cudaSuccess, "stream");
    float *h = malloc(a->count * 4), *d;
    for (size_t i = 0; i < a->count; i++)
        h[i] = (float)((r * 7 + (int)(i % 101)) % 50);
    RH_CHECK(res, cudaMalloc((void **)&d, a->count * 4) == cudaSuccess, "cudaMalloc");
    cudaMemcpy(d, h, a->count * 4, cudaMemcpyHostToDevice);
    char err[RT_ERR_LEN];
    if (a->nccl) {
        rt_nccl *nc;
        RH_CHECK(res, rt_nccl_create(c, s, &nc, err) == RT_OK, "nccl create: %s", err);
        RH_CHECK(res, rt_nccl_allreduce(nc, d, a->count, RT_C_F32, RT_SUM, err) == RT_OK, "%s", err);
        RH_CHECK(res, rt_nccl_wait(nc, 30000000, err) == RT_OK, "%s", err);
        rt_nccl_destroy(nc);
    } else {
        RH_CHECK(res, rt_allreduce_device(c, d, a->count, RT_C_F32, RT_SUM, s, err) == RT_OK,
                 "%s", err);
    }
    cudaMemcpy(h, d, a->count * 4, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < a->count; i++) {
        float want = 0;
        for (int k = 0; k < n; k++)
            want += (float)((k * 7 + (int)(i % 101)) % 50);
        RH_CHECK(res, h[i] == want, "[%zu] = %g, want %g", i, h[i], want);
    }
    cudaFree(d);
    cudaStreamDestroy(s);
    free(h);
}

static void test_staging_over_tcp(void **state)
{
    (void)state;
    const size_t counts[] = {1, 1000, 5u << 20}; /* the last spans three 8 MiB chunks */
    for (size_t i = 0; i < 3; i++) {
        gpu_arg a = {counts[i], false};
        rt_comm_opts o = opts();
        rh_result fail;
        if (!rh_run(2, RT_TRANSPORT_TCP, &o, gpu_body, &a, &fail))
            fail_msg("staging, count %zu: %s", counts[i], fail.msg);
    }
}

static void test_nccl(void **state)
{
    (void)state;
    if (!rt_nccl_available())
        skip();
    int ndev = 0;
    cudaGetDeviceCount(&ndev);
    int ranks = ndev >= 2 ? 2 : 1; /* NCCL wants one GPU per rank */
    gpu_arg a = {3u << 20, true};
    rt_comm_opts o = opts();
    rh_result fail;
    if (!rh_run(ranks, RT_TRANSPORT_TCP, &o, gpu_body, &a, &fail))
        fail_msg("nccl, %d ranks: %s", ranks, fail.msg);
}

int main(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("no CUDA device: skipping\n");
        return 77;
    }
    rt_log_set_level(RT_LL_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_staging_over_tcp),
        cmocka_unit_test(test_nccl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
