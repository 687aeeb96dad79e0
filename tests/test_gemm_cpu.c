/* test_gemm_cpu.c — ringtrain's CPU GEMM (kernels/cpu_gemm.c) gives every
 * output as the plain fused multiply-add chain over k in order, whatever the
 * micro-kernel, the thread count and the rows around it (random shapes
 * each run; RT_TEST_SEED reproduces); its bf16 form (cpu_gemm_bf16.c, where
 * the CPU has AVX512_BF16; each bf16 kernel the CPU has: AMX's too) is the
 * same product of the bf16-rounded inputs summed in fp32, and its bits too
 * do not depend on threads or rows.  With RT_TEST_AMX_REFUSED (the
 * amx_refused test, Linux's grant of the tiles failed by a shim) the AMX
 * kernel must not be offered. */
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

/* One trial's random product: shapes at the edges (empty M, N and K, a
 * single row, odd sizes, K past the k-block every third trial (up to
 * kbig; else up to ksmall), N past the AVX-512 kernel's 512 columns every
 * tenth), each pair of transposes, padded leading dimensions; A and B
 * random in [-1, 1], C's nc floats allocated. */
typedef struct gcase {
    bool ta, tb;
    int64_t M, N, K, lda, ldb, ldc;
    size_t nc;
    float *A, *B, *C;
} gcase;

static gcase gcase_make(tu_rng *r, int trial, int64_t kbig, int64_t ksmall)
{
    gcase g = {.ta = trial & 1, .tb = (trial >> 1) & 1};
    g.M = trial < 3 ? trial : tu_int(r, 1, trial % 7 == 0 ? 300 : 70);
    g.N = trial == 3        ? 0
          : trial % 10 == 5 ? tu_int(r, 513, 600)
                            : tu_int(r, 1, trial % 5 == 0 ? 260 : 70);
    g.K = trial == 4 ? 0 : tu_int(r, 1, trial % 3 == 0 ? kbig : ksmall);
    g.lda = (g.ta ? g.M : g.K) + tu_int(r, 0, 3);
    g.ldb = (g.tb ? g.K : g.N) + tu_int(r, 0, 3);
    g.ldc = g.N + tu_int(r, 0, 3);
    size_t na = (size_t)((g.ta ? g.K : g.M) * g.lda + 1),
           nb = (size_t)((g.tb ? g.N : g.K) * g.ldb + 1);
    g.nc = (size_t)(g.M * g.ldc + 1);
    g.A = malloc(na * 4), g.B = malloc(nb * 4), g.C = malloc(g.nc * 4);
    tu_fill(r, g.A, na, -1, 1);
    tu_fill(r, g.B, nb, -1, 1);
    return g;
}

static void gcase_free(gcase *g)
{
    free(g->A);
    free(g->B);
    free(g->C);
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
        gcase g = gcase_make(&r, trial, 600, 50); /* K past the fp32 k-block (384) */
        const bool ta = g.ta, tb = g.tb;
        const int64_t M = g.M, N = g.N, K = g.K, lda = g.lda, ldb = g.ldb, ldc = g.ldc;
        const size_t nc = g.nc;
        const float *A = g.A, *B = g.B;
        float *C = g.C, *R = malloc(nc * 4);
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
        gcase_free(&g);
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

/* ---- bf16 --------------------------------------------------------------------- */

/* n values as RT_BF16 stores them */
static uint16_t *to_bf16(const float *x, size_t n)
{
    uint16_t *h = malloc(n * 2);
    tu_bf16_bits(x, n, h);
    return h;
}

/* The bf16 product in double: op(A) and op(B) rounded, then summed exactly
 * enough; *mag gets sum |a||b| of each element (the rounding bound's). */
static void gemm_ref_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A,
                          int64_t lda, const float *B, int64_t ldb, double *C, double *mag)
{
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double c = 0, m = 0;
            for (int64_t k = 0; k < K; k++) {
                double p = (double)tu_bf16_round(ta ? A[k * lda + i] : A[i * lda + k]) *
                           tu_bf16_round(tb ? B[j * ldb + k] : B[k * ldb + j]);
                c += p;
                m += fabs(p);
            }
            C[i * N + j] = c;
            mag[i * N + j] = m;
        }
}

/* One bf16 kernel against the product of the rounded inputs, on 1-3
 * threads, with operands in bf16, and row by row */
static void gemm_bf16_kernel(const char *name)
{
    tu_rng r = tu_rng_make(23);
    int differs = 0;
    for (int trial = 0; trial < 40; trial++) {
        /* odd K, and past the k-blocks (768, 512), and under AMX's step (32) */
        gcase g = gcase_make(&r, trial, 1700, trial % 4 == 3 ? 9 : 51);
        const bool ta = g.ta, tb = g.tb;
        const int64_t M = g.M, N = g.N, K = g.K, lda = g.lda, ldb = g.ldb, ldc = g.ldc;
        const size_t nc = g.nc;
        const float *A = g.A, *B = g.B;
        float *C = g.C, *C1 = malloc(nc * 4), *F = malloc(nc * 4);
        double *R = malloc((size_t)(M * N + 1) * 8), *mag = malloc((size_t)(M * N + 1) * 8);
        gemm_ref_bf16(ta, tb, M, N, K, A, lda, B, ldb, R, mag);
        gemm_ref(ta, tb, M, N, K, A, lda, B, ldb, F, ldc);
        for (int t = 0; t < 3; t++) {
            tu_poison(C, nc);
            rt_gemm(ctxs[t], ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double got = C[i * ldc + j], want = R[i * N + j];
                    /* fp32 sums of exact products: K roundings of at most
                     * 2^-24 of the running magnitude */
                    double tol = 1e-30 + (double)(K + 1) * 0x1p-24 * mag[i * N + j];
                    if (!(fabs(got - want) <= tol))
                        fail_msg(
                            "bf16 GEMM %s, %d threads, %s%s M=%lld N=%lld K=%lld: (%lld, %lld) "
                            "is %.9g, the bf16 product %.9g (tolerance %.3g)",
                            name, t + 1, ta ? "T" : "N", tb ? "T" : "N", (long long)M, (long long)N,
                            (long long)K, (long long)i, (long long)j, got, want, tol);
                    differs += C[i * ldc + j] != F[i * ldc + j];
                }
            if (t == 0)
                memcpy(C1, C, nc * 4);
            for (int64_t i = 0; i < M; i++) /* the same bits on any thread count */
                assert_memory_equal(C + i * ldc, C1 + i * ldc, (size_t)N * 4);
        }
        /* operands stored in bf16 already (RT_BF16 tensors): the same bits */
        const size_t na = (size_t)((ta ? K : M) * lda + 1), nb = (size_t)((tb ? N : K) * ldb + 1);
        uint16_t *A16 = to_bf16(A, na), *B16 = to_bf16(B, nb);
        for (int which = 1; which <= 3; which++) {
            const bool a16 = which & 1, b16 = which & 2;
            tu_poison(C, nc);
            rt_gemm_ex(ctxs[trial % 3], ta, tb, M, N, K, a16 ? (const void *)A16 : A, a16, lda,
                       b16 ? (const void *)B16 : B, b16, ldb, C, ldc);
            for (int64_t i = 0; i < M; i++)
                if (memcmp(C + i * ldc, C1 + i * ldc, (size_t)N * 4))
                    fail_msg("bf16 GEMM %s with %s%s in bf16, %s%s M=%lld N=%lld K=%lld: row "
                             "%lld differs from the fp32 operands' product",
                             name, a16 ? "A" : "", b16 ? "B" : "", ta ? "T" : "N", tb ? "T" : "N",
                             (long long)M, (long long)N, (long long)K, (long long)i);
        }
        free(A16);
        free(B16);
        gcase_free(&g);
        free(C1);
        free(F);
        free(R);
        free(mag);
    }
    assert_true(differs > 0); /* the inputs were rounded: not the fp32 product */
    /* a row's bits do not depend on the rows around it */
    const int64_t M = 517, N = 333, K = 901;
    float *A = malloc(M * K * 4), *W = malloc(N * K * 4), *C = malloc(M * N * 4),
          *S = malloc(M * N * 4);
    tu_fill(&r, A, (size_t)(M * K), -1, 1);
    tu_fill(&r, W, (size_t)(N * K), -1, 1);
    rt_gemm(ctxs[1], false, true, M, N, K, A, K, W, K, C, N);
    for (int64_t off = 0; off < M; off += 100) {
        int64_t n = M - off < 100 ? M - off : 100;
        rt_gemm(ctxs[0], false, true, n, N, K, A + off * K, K, W, K, S + off * N, N);
    }
    assert_memory_equal(C, S, (size_t)(M * N) * 4);
    free(A);
    free(W);
    free(C);
    free(S);
}

static void test_gemm_bf16(void **state)
{
    (void)state;
    if (!rt_cpu_bf16_kernel()) {
        printf("skip: this CPU has no AVX512_BF16 (the bf16 GEMMs run on CPUs that do)\n");
        for (int t = 0; t < 3; t++)
            assert_false(rt_kctx_set_bf16(ctxs[t], true));
        return;
    }
    for (int t = 0; t < 3; t++)
        assert_true(rt_kctx_set_bf16(ctxs[t], true));
    const char *names[2];
    const int n = rt_gemm_bf16_kernels(names);
    assert_true(n >= 1);
    if (getenv("RT_TEST_AMX_REFUSED")) /* Linux refused the tiles (tests/deny_amx.c) */
        for (int i = 0; i < n; i++)
            assert_string_not_equal(names[i], "amx-bf16");
    const char *was = rt_cpu_bf16_kernel();
    assert_string_equal(was, names[0]); /* the best one runs */
    for (int i = 0; i < n; i++) {
        printf("bf16 kernel %s\n", names[i]);
        assert_true(rt_gemm_bf16_force(names[i]));
        gemm_bf16_kernel(names[i]);
    }
    assert_true(rt_gemm_bf16_force(was));
    assert_false(rt_gemm_bf16_force("avx512"));
    for (int t = 0; t < 3; t++)
        rt_kctx_set_bf16(ctxs[t], false);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]); /* e.g. test_gemm_bf16 */
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_bits),
        cmocka_unit_test(test_gemm_rows_alone),
        cmocka_unit_test(test_gemm_bf16),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
