/* test_gemm_cpu.c — ringtrain's CPU GEMM (kernels/cpu_gemm.c) gives every
 * output as the plain fused multiply-add chain over k in order, whatever the
 * micro-kernel, the thread count and the rows around it (random shapes
 * each run; RT_TEST_SEED reproduces). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "cpu_gemm.h"
#include "rt_kernels.h"
#include "test_util.h"

static rt_kctx *ctxs[3]; /* 1, 2 and 3 threads */

static int setup(void **state)
{
    (void)state;
    for (int t = 0; t < 3; t++)
        if (rt_kctx_create(RT_DEVICE_CPU, t + 1, &ctxs[t], NULL) != RT_OK)
            return -1;
    return 0;
}
static int teardown(void **state)
{
    (void)state;
    for (int t = 0; t < 3; t++)
        rt_kctx_destroy(ctxs[t]);
    return 0;
}

/* ---- the GEMM: the plain chain, whatever the kernel, threads and rows ---------- */

/* c[i][j] = fma chain over k of op(A)[i][k] * op(B)[k][j], from 0 */
static void gemm_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A,
                     int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc)
{
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            float c = 0.0f;
            for (int64_t k = 0; k < K; k++)
                c = fmaf(ta ? A[k * lda + i] : A[i * lda + k], tb ? B[j * ldb + k] : B[k * ldb + j],
                         c);
            C[i * ldc + j] = c;
        }
}

static void test_gemm_bits(void **state)
{
    (void)state;
    tu_rng r = tu_rng_make(21);
    const char *kernels[RT_GEMM_MAX_KERNELS];
    int nk = rt_gemm_kernels(kernels);
    printf("GEMM kernels on this CPU:");
    for (int k = 0; k < nk; k++)
        printf(" %s", kernels[k]);
    printf("\n");
    for (int trial = 0; trial < 40; trial++) {
        /* edges: empty, single, odd, past the blocks (K > KC, N > NC: 512
         * columns for the AVX-512 shape) */
        int64_t M = trial < 3 ? trial : tu_int(&r, 1, trial % 7 == 0 ? 300 : 70);
        int64_t N = trial == 3 ? 0 : trial % 10 == 5 ? tu_int(&r, 513, 600)
                                     : tu_int(&r, 1, trial % 5 == 0 ? 260 : 70);
        int64_t K = trial == 4 ? 0 : tu_int(&r, 1, trial % 3 == 0 ? 600 : 50);
        bool ta = trial & 1, tb = (trial >> 1) & 1;
        int64_t lda = (ta ? M : K) + tu_int(&r, 0, 3), ldb = (tb ? K : N) + tu_int(&r, 0, 3);
        int64_t ldc = N + tu_int(&r, 0, 3);
        size_t na = (size_t)((ta ? K : M) * lda + 1), nb = (size_t)((tb ? N : K) * ldb + 1);
        size_t nc = (size_t)(M * ldc + 1);
        float *A = malloc(na * 4), *B = malloc(nb * 4), *C = malloc(nc * 4), *R = malloc(nc * 4);
        tu_fill(&r, A, na, -1, 1);
        tu_fill(&r, B, nb, -1, 1);
        gemm_ref(ta, tb, M, N, K, A, lda, B, ldb, R, ldc);
        for (int k = 0; k < nk; k++)
            for (int t = 0; t < 3; t++) {
                assert_true(rt_gemm_force(kernels[k]));
                tu_poison(C, nc);
                rt_gemm(ctxs[t], ta, tb, M, N, K, A, lda, B, ldb, C,
                        ldc);
                for (int64_t i = 0; i < M; i++)
                    if (memcmp(C + i * ldc, R + i * ldc, (size_t)N * 4) != 0)
                        fail_msg("GEMM %s, %d threads, %s%s M=%lld N=%lld K=%lld: row %lld is not "
                                 "the plain fma chain",
                                 kernels[k], t + 1, ta ? "T" : "N",
                                 tb ? "T" : "N", (long long)M, (long long)N, (long long)K,
                                 (long long)i);
            }
        free(A);
        free(B);
        free(C);
        free(R);
    }
    assert_true(rt_gemm_force(kernels[0]));
}

/* A row's result does not depend on the rows around it: the rows of a big
 * product equal the same rows computed alone and in other batch sizes. */
static void test_gemm_rows_alone(void **state)
{
    (void)state;
    tu_rng r = tu_rng_make(22);
    const int64_t M = 517, N = 333, K = 700;
    float *A = malloc(M * K * 4), *W = malloc(N * K * 4), *C = malloc(M * N * 4),
          *S = malloc(M * N * 4);
    tu_fill(&r, A, (size_t)(M * K), -1, 1);
    tu_fill(&r, W, (size_t)(N * K), -1, 1);
    rt_gemm(ctxs[1], false, true, M, N, K, A, K, W, K, C, N);
    const int64_t batches[] = {1, 7, 64, 100, 256};
    for (size_t b = 0; b < sizeof batches / sizeof *batches; b++)
        for (int64_t off = 0; off < M; off += batches[b]) {
            int64_t n = M - off < batches[b] ? M - off : batches[b];
            rt_gemm(ctxs[1], false, true, n, N, K, A + off * K, K, W, K, S + off * N, N);
            if (off + n == M)
                assert_memory_equal(C, S, (size_t)(M * N) * 4);
        }
    free(A);
    free(W);
    free(C);
    free(S);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_bits),
        cmocka_unit_test(test_gemm_rows_alone),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
