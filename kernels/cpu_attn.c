/* cpu_attn.c — multi-head scaled dot-product self-attention on the CPU
 * (contract: rt_k_attn_fwd/_bwd in rt_kernels.h), the reference of the
 * CUDA kernels.
 *
 * Tabular transformers attend over few tokens (one per feature and the
 * [CLS] token: tens, not thousands), so each (sample, head) pair is a
 * handful of T x T x dh products: they run as loops over the pairs, pairs
 * in parallel (each writes its own rows and columns of the outputs).  Each
 * product is a small GEMM with register tiles (small_gemm), the pair's keys,
 * values and score matrices transposed into scratch where a product would
 * otherwise run down a column; every sum keeps a fixed order.
 *
 *   forward   S = q kᵀ / sqrt(dh);  P = softmax(S) (saved);  out = drop(P) v
 *   backward  G = dout vᵀ;  dv = drop(P)ᵀ dout;  Gp = drop'(G);
 *             dS = P ⊙ (Gp - rowsum(P ⊙ Gp)) / sqrt(dh);  dq = dS k;  dk = dSᵀ q
 *
 * The dropout mask of P is drawn for the pair's whole T x T block at once
 * (rt_simd_dropout on P's element numbers: the same numbers as the CUDA
 * kernels and rt_rng), again in backward, where G takes the same mask from
 * drop(P): an element is 0 there where the mask dropped it or P itself is 0
 * (then so is its dS). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "cpu_simd.h"
#include "kctx_impl.h"

/* below this many (sample, head) pairs a call runs on one thread */
#define PAR_PAIRS 16

/* x (T x T block of P's pair bh) with the dropout mask applied, in place. */
static void drop_block(const rt_attn *a, float *x, int64_t bh, uint64_t step)
{
    if (a->rate > 0.0f)
        rt_simd_dropout(x, a->T * a->T, (uint64_t)(bh * a->T * a->T), a->rate,
                        (uint32_t)a->seed ^ a->stream, (uint32_t)(a->seed >> 32), step);
}

/* xt (dh x T) = the pair's rows x (T rows of dh, stride ld), transposed */
static void transpose(const float *x, int64_t ld, int64_t T, int64_t dh, float *xt)
{
    for (int64_t s = 0; s < T; s++)
        for (int64_t e = 0; e < dh; e++)
            xt[e * T + s] = x[s * ld + e];
}

/* C (m x n, ldc) = A (m x k, lda) · B (k x n, ldb), every element summed
 * over k in order.  Tiles of 4 rows x W columns of C (W = 16, then 8 for
 * the next columns) are held in vector registers while k runs, so each row
 * of B is loaded once per 4 rows of C; the last rows and columns run as
 * plain loops in the same order.  The pair's products are tens by tens, too small for rt_gemm's
 * packing to pay. */
#define TR 4
/* GNU C vectors: 16 floats are one AVX-512 register in the v4 clone, two
 * AVX2 registers in v3's, four SSE in the baseline's */
typedef float v16 __attribute__((vector_size(64)));
typedef float v8 __attribute__((vector_size(32)));
#define TILE(V, W)                                                                                 \
    static inline __attribute__((always_inline)) void tile##W(                                     \
        int64_t k, const float *restrict A, int64_t lda, const float *restrict B, int64_t ldb,    \
        float *restrict C, int64_t ldc)                                                           \
    {                                                                                              \
        V acc[TR] = {{0}};                                                                         \
        for (int64_t s = 0; s < k; s++) {                                                          \
            V b;                                                                                   \
            memcpy(&b, B + s * ldb, sizeof b);                                                     \
            for (int r = 0; r < TR; r++)                                                           \
                acc[r] += A[r * lda + s] * b;                                                      \
        }                                                                                          \
        for (int r = 0; r < TR; r++)                                                               \
            memcpy(C + r * ldc, &acc[r], sizeof acc[r]);                                           \
    }
TILE(v16, 16)
TILE(v8, 8)

RT_MV static void small_gemm(int64_t m, int64_t n, int64_t k, const float *restrict A, int64_t lda,
                             const float *restrict B, int64_t ldb, float *restrict C, int64_t ldc)
{
    const int64_t mf = m / TR * TR, n16 = n / 16 * 16, n8 = n16 + (n - n16) / 8 * 8;
    for (int64_t i0 = 0; i0 < mf; i0 += TR) {
        for (int64_t j0 = 0; j0 < n16; j0 += 16)
            tile16(k, A + i0 * lda, lda, B + j0, ldb, C + i0 * ldc + j0, ldc);
        if (n8 > n16)
            tile8(k, A + i0 * lda, lda, B + n16, ldb, C + i0 * ldc + n16, ldc);
    }
    /* the columns past the tiles, then the rows past them */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = i < mf ? n8 : 0; j < n; j++) {
            float c = 0.0f;
            for (int64_t s = 0; s < k; s++)
                c += A[i * lda + s] * B[s * ldb + j];
            C[i * ldc + j] = c;
        }
}

/* One (sample, head) pair forward: P (T x T) and the pair's columns of
 * out; scratch kt (dh x T) and pd (T x T). */
RT_MV static void fwd_pair(const rt_attn *a, int64_t bh, const float *q0, int64_t ld, int64_t d,
                           int64_t dh, uint64_t step, float *P, float *o, int64_t ldo, float *kt,
                           float *pd)
{
    const int64_t T = a->T;
    const float scale = 1.0f / sqrtf((float)dh);
    transpose(q0 + d, ld, T, dh, kt);
    small_gemm(T, T, dh, q0, ld, kt, T, P, T); /* q kᵀ */
    for (int64_t t = 0; t < T; t++) {
        float *pr = P + t * T, mx = -INFINITY;
        for (int64_t s = 0; s < T; s++) {
            pr[s] *= scale;
            mx = pr[s] > mx ? pr[s] : mx;
        }
        double sum = 0.0;
        for (int64_t s = 0; s < T; s++) {
            pr[s] = expf(pr[s] - mx);
            sum += pr[s];
        }
        const float inv = (float)(1.0 / sum);
        for (int64_t s = 0; s < T; s++)
            pr[s] *= inv;
    }
    memcpy(pd, P, (size_t)(T * T) * sizeof *pd);
    drop_block(a, pd, bh, step);
    small_gemm(T, dh, T, pd, T, q0 + 2 * d, ld, o, ldo); /* drop(P) v */
}

/* xt (T x T) = x (T x T) transposed */
static void transpose_sq(const float *x, int64_t T, float *xt)
{
    for (int64_t t = 0; t < T; t++)
        for (int64_t s = 0; s < T; s++)
            xt[s * T + t] = x[t * T + s];
}

/* One pair backward: the pair's columns of dq, dk, dv (rows of stride
 * ldq); scratch vt (dh x T), pd, gp and tr (T x T each). */
RT_MV static void bwd_pair(const rt_attn *a, int64_t bh, const float *q0, int64_t ld, int64_t d,
                           int64_t dh, uint64_t step, const float *P, const float *g0, int64_t ldg,
                           float *dq0, int64_t ldq, float *vt, float *pd, float *gp, float *tr)
{
    const int64_t T = a->T;
    const float scale = 1.0f / sqrtf((float)dh);
    memcpy(pd, P, (size_t)(T * T) * sizeof *pd);
    drop_block(a, pd, bh, step);
    transpose_sq(pd, T, tr);
    small_gemm(T, dh, T, tr, T, g0, ldg, dq0 + 2 * d, ldq); /* dv = drop(P)ᵀ dout */
    transpose(q0 + 2 * d, ld, T, dh, vt);
    small_gemm(T, T, dh, g0, ldg, vt, T, gp, T); /* G = dout vᵀ */
    if (a->rate > 0.0f) { /* forward's mask and scale: drop(P) is 0 where it dropped (or P is) */
        const float keep = 1.0f / (1.0f - a->rate);
        for (int64_t i = 0; i < T * T; i++)
            gp[i] = pd[i] != 0.0f ? gp[i] * keep : 0.0f;
    }
    for (int64_t t = 0; t < T; t++) {
        const float *pr = P + t * T;
        float *gr = gp + t * T;
        double inner = 0.0;
        for (int64_t s = 0; s < T; s++)
            inner += (double)pr[s] * gr[s];
        for (int64_t s = 0; s < T; s++)
            gr[s] = pr[s] * (gr[s] - (float)inner) * scale; /* dS */
    }
    small_gemm(T, dh, T, gp, T, q0 + d, ld, dq0, ldq); /* dq = dS k */
    transpose_sq(gp, T, tr);
    small_gemm(T, dh, T, tr, T, q0, ld, dq0 + d, ldq); /* dk = dSᵀ q */
}

void rt_cpu_attn_fwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                     const int64_t *step, rt_view out)
{
    const int64_t T = a->T, H = a->H, d = out.cols, dh = d / H, B = qkv.rows / T;
    const int nthr = B * H >= PAR_PAIRS ? ctx->threads : 1;
#pragma omp parallel num_threads(nthr)
    {
        float *kt = malloc((size_t)(dh * T + T * T) * sizeof *kt);
        RT_ASSERT(kt);
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < B * H; bh++) {
            const int64_t b = bh / H, h = bh % H;
            fwd_pair(a, bh, RT_F(qkv) + b * T * qkv.ld + h * dh, qkv.ld, d, dh, (uint64_t)*step,
                     probs + bh * T * T, RT_F(out) + b * T * out.ld + h * dh, out.ld, kt,
                     kt + dh * T);
        }
        free(kt);
    }
}

void rt_cpu_attn_bwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                     const int64_t *step, rt_view dout, rt_view dqkv)
{
    const int64_t T = a->T, H = a->H, d = dout.cols, dh = d / H, B = qkv.rows / T;
    const int nthr = B * H >= PAR_PAIRS ? ctx->threads : 1;
#pragma omp parallel num_threads(nthr)
    {
        float *vt = malloc((size_t)(dh * T + 3 * T * T) * sizeof *vt);
        RT_ASSERT(vt);
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < B * H; bh++) {
            const int64_t b = bh / H, h = bh % H;
            bwd_pair(a, bh, RT_F(qkv) + b * T * qkv.ld + h * dh, qkv.ld, d, dh, (uint64_t)*step,
                     probs + bh * T * T, RT_F(dout) + b * T * dout.ld + h * dh, dout.ld,
                     RT_F(dqkv) + b * T * dqkv.ld + h * dh, dqkv.ld, vt, vt + dh * T,
                     vt + dh * T + T * T, vt + dh * T + 2 * T * T);
        }
        free(vt);
    }
}
