/* gemm.c — ringtrain's GEMM (kernels/cpu_gemm.c) against OpenBLAS sgemm on
 * the three products of a dense layer of the Rossmann model, in one run:
 *
 *   forward  Y (B x out) = X (B x in) · Wᵀ        (N, T)
 *   dW       (out x in)  = dZᵀ (out x B) · X       (T, N)
 *   dX       (B x in)    = dZ (B x out) · W        (N, N)
 *
 * for batch 100 (the seed's) and 1024, in = out = 1000 (--tabm: TabM's
 * shared layers instead, 32 members x batch 1024 rows of width 256, with
 * the operands TabM keeps in bf16 — x ⊙ r and the output's gradient —
 * stored in bf16 for the bf16 runs, as rt_gemm_ex gets them); where the CPU has
 * AVX512_BF16 also ringtrain's bf16 GEMM (precision = bf16: inputs rounded
 * to bf16, fp32 sums; AMX's kernel where the CPU has it, RT_GEMM_KERNEL=
 * avx512-bf16 for the other; Debian's OpenBLAS 0.3.21 has no sbgemm to
 * compare with: built without BUILD_BFLOAT16).  The two run
 * alternately, each timing the best of several rounds, so a noisy machine
 * affects both alike; the ratio is what to read.  Also checks that every
 * kernel this CPU has gives the same bits as plain fmaf chains.
 *
 *   bench/gemm [--threads N] [--rounds R] [--tabm] [--json]
 * OPENBLAS_CORETYPE: as the caller set it, else the best core type for this
 * CPU (rt_blas_reexec); the output names the kernels that ran.
 * With one thread the time measured is the process's CPU time, which a
 * virtual machine's stolen time does not inflate; with more, wall time. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "cpu_gemm.h"
#include "cpu_simd.h"
#include "rt_kernels.h"
#include "rt_time.h"

static int threads = 1;

static double now(void)
{
    if (threads > 1)
        return rt_now_s();
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct shape {
    const char *name;
    bool ta, tb;
    int64_t M, N, K;
    bool a16, b16; /* the bf16 runs get A, B stored in bf16 (--tabm) */
} shape;

static void fill(float *p, int64_t n, unsigned seed)
{
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
}

int main(int argc, char **argv)
{
    rt_blas_reexec(argv); /* OpenBLAS on the best kernels it has for this CPU */
    int rounds = 7;
    bool json = false, tabm = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json"))
            json = true;
        else if (!strcmp(argv[i], "--tabm"))
            tabm = true;
        else {
            fprintf(stderr, "usage: gemm [--threads N] [--rounds R] [--tabm] [--json]\n");
            return 2;
        }
    }
    rt_kctx *ctx;
    char err[RT_ERR_LEN];
    if (rt_kctx_create(RT_DEVICE_CPU, threads, &ctx, err) != RT_OK) {
        fprintf(stderr, "gemm: %s\n", err);
        return 1;
    }
    openblas_set_num_threads(threads);
    rt_kctx *ctx16 = NULL; /* the bf16 GEMM, where the CPU has it */
    if (rt_cpu_bf16_kernel() && rt_kctx_create(RT_DEVICE_CPU, threads, &ctx16, err) == RT_OK)
        rt_kctx_set_bf16(ctx16, true);
    const int64_t D = 1000;
    const int64_t T = 256, KB = 32 * 1024; /* TabM: width 256, k = 32 members of 1024 rows */
    const shape dense[] = {
        {"forward B=100", false, true, 100, D, D, false, false},
        {"dW B=100", true, false, D, D, 100, false, false},
        {"dX B=100", false, false, 100, D, D, false, false},
        {"forward B=1024", false, true, 1024, D, D, false, false},
        {"dW B=1024", true, false, D, D, 1024, false, false},
        {"dX B=1024", false, false, 1024, D, D, false, false},
    };
    const shape tabm_shapes[] = {
        {"tabm forward", false, true, KB, T, T, true, false},
        {"tabm dW", true, false, T, T, KB, true, true},
        {"tabm dX", false, false, KB, T, T, true, false},
    };
    const shape *shapes = tabm ? tabm_shapes : dense;
    const int ns = tabm ? 3 : 6;
    const char *kernels[RT_GEMM_MAX_KERNELS];
    int nk = rt_gemm_kernels(kernels);
    if (!json)
        printf("ringtrain GEMM (%s) vs OpenBLAS %s (%s kernels), %d thread%s, best of %d\n",
               rt_gemm_kernel_name(), openblas_get_config(), openblas_get_corename(), threads,
               threads == 1 ? "" : "s", rounds);
    else
        printf("{\"threads\":%d,\"kernel\":\"%s\",\"blas_core\":\"%s\",\"shapes\":[", threads,
               rt_gemm_kernel_name(), openblas_get_corename());
    double sum_rt = 0, sum_ob = 0;
    for (int s = 0; s < ns; s++) {
        const shape *sh = &shapes[s];
        int64_t M = sh->M, N = sh->N, K = sh->K;
        int64_t lda = sh->ta ? M : K, ldb = sh->tb ? K : N;
        float *A = malloc((size_t)(M * K) * 4), *B = malloc((size_t)(N * K) * 4),
              *C = malloc((size_t)(M * N) * 4), *R = malloc((size_t)(M * N) * 4);
        fill(A, M * K, 1 + (unsigned)s);
        fill(B, N * K, 99 + (unsigned)s);
        uint16_t *A16 = sh->a16 ? malloc((size_t)(M * K) * 2) : NULL,
                 *B16 = sh->b16 ? malloc((size_t)(N * K) * 2) : NULL;
        if (A16)
            rt_bf16_store(A, M * K, A16);
        if (B16)
            rt_bf16_store(B, N * K, B16);
        const void *A_16 = A16 ? (const void *)A16 : A, *B_16 = B16 ? (const void *)B16 : B;
        int reps = (int)(4e8 / (2.0 * (double)(M * N * K))) + 1;
        double best_rt = 1e30, best_ob = 1e30, best_16 = 1e30;
        for (int r = 0; r < rounds; r++) {
            double t0 = now();
            for (int k = 0; k < reps; k++)
                cblas_sgemm(CblasRowMajor, sh->ta ? CblasTrans : CblasNoTrans,
                            sh->tb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N,
                            (blasint)K, 1.0f, A, (blasint)lda, B, (blasint)ldb, 0.0f, R,
                            (blasint)N);
            double t1 = now();
            for (int k = 0; k < reps; k++)
                rt_gemm(ctx, sh->ta, sh->tb, M, N, K, A, lda, B, ldb, C, N);
            double t2 = now();
            best_ob = fmin(best_ob, (t1 - t0) / reps);
            best_rt = fmin(best_rt, (t2 - t1) / reps);
            if (ctx16) {
                for (int k = 0; k < reps; k++)
                    rt_gemm_ex(ctx16, sh->ta, sh->tb, M, N, K, A_16, A16 != NULL, lda, B_16,
                               B16 != NULL, ldb, C, N);
                best_16 = fmin(best_16, (now() - t2) / reps);
            }
        }
        /* every kernel gives the bits of the plain chain (sampled rows, and
         * columns where K is long) */
        const int64_t jstep = K > 4096 ? 17 : 1;
        const char *mismatch = NULL;
        for (int kk = 0; kk < nk && !mismatch; kk++) {
            rt_gemm_force(kernels[kk]);
            rt_gemm(ctx, sh->ta, sh->tb, M, N, K, A, lda, B, ldb, C, N);
            for (int64_t i = 0; i < M && !mismatch; i += 97)
                for (int64_t j = 0; j < N; j += jstep) {
                    float c = 0.0f;
                    for (int64_t k = 0; k < K; k++)
                        c = fmaf(sh->ta ? A[k * lda + i] : A[i * lda + k],
                                 sh->tb ? B[j * ldb + k] : B[k * ldb + j], c);
                    if (memcmp(&c, &C[i * N + j], 4) != 0) {
                        mismatch = kernels[kk];
                        break;
                    }
                }
        }
        rt_gemm_force(kernels[0]);
        double fl = 2.0 * (double)(M * N * K);
        sum_rt += best_rt;
        sum_ob += best_ob;
        char b16[96] = "";
        if (json && ctx16)
            snprintf(b16, sizeof b16, ",\"bf16_gflops\":%.2f,\"bf16_vs_fp32\":%.3f",
                     fl / best_16 / 1e9, best_rt / best_16);
        else if (ctx16)
            snprintf(b16, sizeof b16, "  bf16 %6.1f GFLOP/s (%.2fx fp32)", fl / best_16 / 1e9,
                     best_rt / best_16);
        if (json)
            printf("%s{\"name\":\"%s\",\"openblas_gflops\":%.2f,\"ringtrain_gflops\":%.2f,"
                   "\"ratio\":%.3f,\"bitwise_reference\":%s%s}",
                   s ? "," : "", sh->name, fl / best_ob / 1e9, fl / best_rt / 1e9,
                   best_ob / best_rt, mismatch ? "false" : "true", b16);
        else
            printf("  %-16s OpenBLAS %6.1f GFLOP/s  ringtrain %6.1f GFLOP/s  ratio %.2f%s%s%s\n",
                   sh->name, fl / best_ob / 1e9, fl / best_rt / 1e9, best_ob / best_rt, b16,
                   mismatch ? "  MISMATCH in kernel " : "", mismatch ? mismatch : "");
        free(A);
        free(B);
        free(C);
        free(R);
        free(A16);
        free(B16);
        if (mismatch)
            return 1;
    }
    if (json)
        printf("],\"time_ratio\":%.3f}\n", sum_ob / sum_rt);
    else
        printf("  all %s: ringtrain at %.2fx OpenBLAS's speed\n", tabm ? "three" : "six",
               sum_ob / sum_rt);
    rt_kctx_destroy(ctx);
    rt_kctx_destroy(ctx16);
    return 0;
}
