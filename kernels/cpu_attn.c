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

/* Register tiles of small_gemm: 4 rows x W columns of C (W = 16 or 8) held
 * in vector registers while k runs, so each row of B is loaded once per 4
 * rows of C.  The pair's products are tens by tens, too small for
 * rt_gemm's packing to pay. */
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

/* Scratch floats small_gemm needs for a k of at most kmax: the tails of B
 * and A zero-padded to a tile, and a tile of C. */
#define SMALL_PAD(kmax) ((size_t)(16 * (kmax) + TR * (kmax) + TR * 16))

/* One tile of width w (16 or 8) of C: op at full width, or, for the last
 * n < w columns, into the scratch tile and copied out; the same sums
 * (each element one chain over k in order: padding only adds columns). */
static inline __attribute__((always_inline)) void tile_w(int w, int64_t k, const float *A,
                                                         int64_t lda, const float *B, int64_t ldb,
                                                         float *C, int64_t ldc, int64_t rows,
                                                         int64_t n, float *ct)
{
    float *dst = rows == TR && n == w ? C : ct;
    const int64_t ldd = dst == C ? ldc : 16;
    if (w == 16)
        tile16(k, A, lda, B, ldb, dst, ldd);
    else
        tile8(k, A, lda, B, ldb, dst, ldd);
    if (dst != C)
        for (int64_t r = 0; r < rows; r++)
            memcpy(C + r * ldc, ct + r * 16, (size_t)n * sizeof *C);
}

/* C (m x n, ldc) = A (m x k, lda) · B (k x n, ldb), every element summed
 * over k in order, all of it in register tiles: B's last columns (fewer
 * than a tile) and A's last rows (fewer than TR) are copied zero-padded to
 * a whole tile in pad (SMALL_PAD(k) floats) — a T of 37 tokens left a
 * seventh of every product to a scalar loop before. */
RT_MV static void small_gemm(int64_t m, int64_t n, int64_t k, const float *restrict A, int64_t lda,
                             const float *restrict B, int64_t ldb, float *restrict C, int64_t ldc,
                             float *restrict pad)
{
    const int64_t n16 = n / 16 * 16, rest = n - n16, wt = rest > 8 ? 16 : 8;
    float *bt = pad, *at = pad + 16 * k, *ct = at + TR * k;
    if (rest > 0) /* B's last columns, zero-padded to a tile of wt */
        for (int64_t s = 0; s < k; s++) {
            memcpy(bt + s * wt, B + s * ldb + n16, (size_t)rest * sizeof *bt);
            memset(bt + s * wt + rest, 0, (size_t)(wt - rest) * sizeof *bt);
        }
    for (int64_t i0 = 0; i0 < m; i0 += TR) {
        const int64_t rows = m - i0 < TR ? m - i0 : TR;
        const float *a = A + i0 * lda;
        int64_t la = lda;
        if (rows < TR) { /* A's last rows, zero-padded to TR */
            for (int64_t r = 0; r < TR; r++)
                if (r < rows)
                    memcpy(at + r * k, a + r * lda, (size_t)k * sizeof *at);
                else
                    memset(at + r * k, 0, (size_t)k * sizeof *at);
            a = at;
            la = k;
        }
        float *c = C + i0 * ldc;
        for (int64_t j0 = 0; j0 < n16; j0 += 16)
            tile_w(16, k, a, la, B + j0, ldb, c + j0, ldc, rows, 16, ct);
        if (rest > 0)
            tile_w((int)wt, k, a, la, bt, wt, c + n16, ldc, rows, rest, ct);
    }
}

/* One (sample, head) pair forward: P (T x T) and the pair's columns of
 * out; scratch kt (dh x T), pd (T x T) and small_gemm's pad. */
RT_MV static void fwd_pair(const rt_attn *a, int64_t bh, const float *q0, int64_t ld, int64_t d,
                           int64_t dh, uint64_t step, float *P, float *o, int64_t ldo, float *kt,
                           float *pd, float *pad)
{
    const int64_t T = a->T;
    const float scale = 1.0f / sqrtf((float)dh);
    transpose(q0 + d, ld, T, dh, kt);
    small_gemm(T, T, dh, q0, ld, kt, T, P, T, pad); /* q kᵀ */
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
    small_gemm(T, dh, T, pd, T, q0 + 2 * d, ld, o, ldo, pad); /* drop(P) v */
}

/* xt (T x T) = x (T x T) transposed */
static void transpose_sq(const float *x, int64_t T, float *xt)
{
    for (int64_t t = 0; t < T; t++)
        for (int64_t s = 0; s < T; s++)
            xt[s * T + t] = x[t * T + s];
}

/* One pair backward: the pair's columns of dq, dk, dv (rows of stride
 * ldq); scratch vt (dh x T), pd, gp and tr (T x T each), small_gemm's pad. */
RT_MV static void bwd_pair(const rt_attn *a, int64_t bh, const float *q0, int64_t ld, int64_t d,
                           int64_t dh, uint64_t step, const float *P, const float *g0, int64_t ldg,
                           float *dq0, int64_t ldq, float *vt, float *pd, float *gp, float *tr,
                           float *pad)
{
    const int64_t T = a->T;
    const float scale = 1.0f / sqrtf((float)dh);
    memcpy(pd, P, (size_t)(T * T) * sizeof *pd);
    drop_block(a, pd, bh, step);
    transpose_sq(pd, T, tr);
    small_gemm(T, dh, T, tr, T, g0, ldg, dq0 + 2 * d, ldq, pad); /* dv = drop(P)ᵀ dout */
    transpose(q0 + 2 * d, ld, T, dh, vt);
    small_gemm(T, T, dh, g0, ldg, vt, T, gp, T, pad); /* G = dout vᵀ */
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
    small_gemm(T, dh, T, gp, T, q0 + d, ld, dq0, ldq, pad); /* dq = dS k */
    transpose_sq(gp, T, tr);
    small_gemm(T, dh, T, tr, T, q0, ld, dq0 + d, ldq, pad); /* dk = dSᵀ q */
}

void rt_cpu_attn_fwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                     const int64_t *step, rt_view out)
{
    const int64_t T = a->T, H = a->H, d = out.cols, dh = d / H, B = qkv.rows / T;
    const int nthr = B * H >= PAR_PAIRS ? ctx->threads : 1;
#pragma omp parallel num_threads(nthr)
    {
        float *kt = malloc(((size_t)(dh * T + T * T) + SMALL_PAD(T > dh ? T : dh)) * sizeof *kt);
        RT_ASSERT(kt);
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < B * H; bh++) {
            const int64_t b = bh / H, h = bh % H;
            fwd_pair(a, bh, RT_F(qkv) + b * T * qkv.ld + h * dh, qkv.ld, d, dh, (uint64_t)*step,
                     probs + bh * T * T, RT_F(out) + b * T * out.ld + h * dh, out.ld, kt,
                     kt + dh * T, kt + dh * T + T * T);
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
        float *vt =
            malloc(((size_t)(dh * T + 3 * T * T) + SMALL_PAD(T > dh ? T : dh)) * sizeof *vt);
        RT_ASSERT(vt);
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < B * H; bh++) {
            const int64_t b = bh / H, h = bh % H;
            bwd_pair(a, bh, RT_F(qkv) + b * T * qkv.ld + h * dh, qkv.ld, d, dh, (uint64_t)*step,
                     probs + bh * T * T, RT_F(dout) + b * T * dout.ld + h * dh, dout.ld,
                     RT_F(dqkv) + b * T * dqkv.ld + h * dh, dqkv.ld, vt, vt + dh * T,
                     vt + dh * T + T * T, vt + dh * T + 2 * T * T, vt + dh * T + 3 * T * T);
        }
        free(vt);
    }
}
