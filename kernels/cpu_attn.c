/* cpu_attn.c — multi-head scaled dot-product self-attention on the CPU
 * (contract: rt_k_attn_fwd/_bwd in rt_kernels.h), the reference of the
 * CUDA kernels.
 *
 * Tabular transformers attend over few tokens (one per feature and the
 * [CLS] token: tens, not thousands), so each (sample, head) pair is a
 * handful of T x T x dh products: they run as loops over the pairs, pairs
 * in parallel (each writes its own rows and columns of the outputs).  Each
 * product is a small GEMM with register tiles (small_gemm), reading its A
 * down rows or, for a product with Aᵀ, down columns; only the pair's keys
 * and values are transposed into scratch (kᵀ, vᵀ: B operands), padded with
 * zero columns to whole vectors so the scores' rows are whole tiles too.
 * The softmax and its backward run on those padded rows with vectors.
 * Every sum keeps a fixed order.
 *
 *   forward   S = q kᵀ / sqrt(dh);  P = softmax(S) (saved);  out = drop(P) v
 *   backward  G = dout vᵀ;  dv = drop(P)ᵀ dout;  Gp = drop'(G);
 *             dS = P ⊙ (Gp - rowsum(P ⊙ Gp)) / sqrt(dh);  dq = dS k;  dk = dSᵀ q
 *
 * The dropout mask of P is drawn for the pair's whole T x T block at once
 * in forward (rt_simd_dropout on P's element numbers: the same numbers as
 * the CUDA kernels and rt_rng) and kept in the saved P's sign bits, where
 * backward reads it: an element is dropped there where the mask dropped it
 * or P itself is 0 (then so is its dS). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "cpu_simd.h"
#include "kctx_impl.h"

/* below this many (sample, head) pairs a call runs on one thread */
#define PAR_PAIRS 16

/* GNU C vectors: 16 floats are one AVX-512 register in the v4 clone, two
 * AVX2 registers in v3's, four SSE in the baseline's */
typedef float v16 __attribute__((vector_size(64)));
typedef float v8 __attribute__((vector_size(32)));
typedef int32_t vi16 __attribute__((vector_size(64)));
#define VW 16
/* load_n returns a vector but is always inlined into the cloned
 * functions: no call passes one, so no ABI is involved */
#pragma GCC diagnostic ignored "-Wpsabi"

/* a score row's length: T rounded up to whole vectors */
static inline int64_t padded(int64_t T) { return (T + VW - 1) / VW * VW; }
/* the columns of the scores computed: T up to a whole tile of 8 (its zero
 * columns of kᵀ make zero scores; a tile of 8 costs half one of 16) */
static inline int64_t cols8(int64_t T) { return (T + 7) / 8 * 8; }

/* xt (dh x tp) = the pair's rows x (T rows of dh, stride ld), transposed;
 * xt's columns T .. tp stay as they are (zero: the scratch is calloc'd). */
static void transpose(const float *x, int64_t ld, int64_t T, int64_t dh, int64_t tp, float *xt)
{
    for (int64_t e = 0; e < dh; e++)
        for (int64_t s = 0; s < T; s++)
            xt[e * tp + s] = x[s * ld + e];
}

/* Register tiles of small_gemm: 4 rows x W columns of C (W = 16 or 8) held
 * in vector registers while k runs, so each row of B is loaded once per 4
 * rows of C.  A's element (r, s) is A[r * ars + s * acs]: ars = lda,
 * acs = 1 for A, ars = 1, acs = lda for a stored Aᵀ.  The pair's products
 * are tens by tens, too small for rt_gemm's packing to pay. */
#define TR 4
#define TILE(V, W)                                                                             \
    static inline __attribute__((always_inline)) void tile##W(                                 \
        int64_t k, const float *restrict A, int64_t ars, int64_t acs, const float *restrict B, \
        int64_t ldb, float *restrict C, int64_t ldc)                                           \
    {                                                                                          \
        V acc[TR] = {{0}};                                                                     \
        for (int64_t s = 0; s < k; s++) {                                                      \
            V b;                                                                               \
            memcpy(&b, B + s * ldb, sizeof b);                                                 \
            for (int r = 0; r < TR; r++)                                                       \
                acc[r] += A[r * ars + s * acs] * b;                                            \
        }                                                                                      \
        for (int r = 0; r < TR; r++)                                                           \
            memcpy(C + r * ldc, &acc[r], sizeof acc[r]);                                       \
    }
TILE(v16, 16)
TILE(v8, 8)

/* Scratch floats small_gemm needs for a k of at most kmax: the tails of B
 * and A zero-padded to a tile, and a tile of C. */
#define SMALL_PAD(kmax) ((size_t)(16 * (kmax) + TR * (kmax) + TR * 16))

/* One tile of width w (16 or 8) of C: at full width, or, for the last
 * n < w columns or rows < TR, into the scratch tile and copied out; the
 * same sums (each element one chain over k in order: padding only adds
 * columns). */
static inline __attribute__((always_inline)) void tile_w(int w, int64_t k, const float *A,
                                                         int64_t ars, int64_t acs, const float *B,
                                                         int64_t ldb, float *C, int64_t ldc,
                                                         int64_t rows, int64_t n, float *ct)
{
    float *dst = rows == TR && n == w ? C : ct;
    const int64_t ldd = dst == C ? ldc : 16;
    if (w == 16)
        tile16(k, A, ars, acs, B, ldb, dst, ldd);
    else
        tile8(k, A, ars, acs, B, ldb, dst, ldd);
    if (dst != C)
        for (int64_t r = 0; r < rows; r++)
            memcpy(C + r * ldc, ct + r * 16, (size_t)n * sizeof *C);
}

/* C (m x n, ldc) = A (m x k; element (r, s) at A[r*ars + s*acs]) · B (k x n,
 * ldb), every element summed over k in order, all of it in register
 * tiles: B's last columns (fewer than a tile) and A's last rows (fewer than
 * TR) are copied zero-padded to a whole tile in pad (SMALL_PAD(k) floats). */
RT_MV static void small_gemm(int64_t m, int64_t n, int64_t k, const float *restrict A, int64_t ars,
                             int64_t acs, const float *restrict B, int64_t ldb, float *restrict C,
                             int64_t ldc, float *restrict pad)
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
        const float *a = A + i0 * ars;
        int64_t rs = ars, cs = acs;
        if (rows < TR) { /* A's last rows, zero-padded to TR */
            for (int64_t r = 0; r < TR; r++)
                for (int64_t s = 0; s < k; s++)
                    at[r * k + s] = r < rows ? a[r * ars + s * acs] : 0.0f;
            a = at;
            rs = k;
            cs = 1;
        }
        float *c = C + i0 * ldc;
        for (int64_t j0 = 0; j0 < n16; j0 += 16)
            tile_w(16, k, a, rs, cs, B + j0, ldb, c + j0, ldc, rows, 16, ct);
        if (rest > 0)
            tile_w((int)wt, k, a, rs, cs, bt, wt, c + n16, ldc, rows, rest, ct);
    }
}

/* ---- a row's softmax and its backward, VW lanes at a time ----
 * The vector helpers are macros: GCC lowers a vector comparison to scalar
 * code in a function built for the baseline before inlining it into a
 * clone, so each is expanded where it runs, inside the cloned functions. */

#define SPLAT(x) ((v16){0} + (x))
/* a where the mask's lanes are all ones, else b */
#define PICK(m, a, b) ((v16)(((vi16)(a) & (m)) | ((vi16)(b) & ~(m))))
#define VMAX(a, b)                    \
    ({                                \
        const v16 a_ = (a), b_ = (b); \
        PICK(a_ > b_, a_, b_);        \
    })
static const int32_t tail_ones[2 * VW] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                          -1, -1, -1, -1, -1, -1, -1, -1};
/* lanes < n (1 <= n) all ones */
#define LANES_BELOW(n)                                                  \
    ({                                                                  \
        vi16 m_;                                                        \
        memcpy(&m_, tail_ones + VW - ((n) < VW ? (n) : VW), sizeof m_); \
        m_;                                                             \
    })
/* the lanes folded with OP in a fixed tree order; the result in every lane */
#define FOLD(v, OP)                                                                               \
    ({                                                                                            \
        v16 f_ = (v);                                                                             \
        f_ = OP(f_, __builtin_shufflevector(f_, f_, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4,  \
                                            5, 6, 7));                                            \
        f_ = OP(f_, __builtin_shufflevector(f_, f_, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, \
                                            10, 11));                                             \
        f_ = OP(f_, __builtin_shufflevector(f_, f_, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, \
                                            12, 13));                                             \
        f_ = OP(f_, __builtin_shufflevector(f_, f_, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, \
                                            15, 14));                                             \
        f_[0];                                                                                    \
    })
#define VADD(a, b) ((a) + (b))

/* exp(x) for x <= 0 (a score minus its row's maximum): Cody-Waite
 * reduction x = n ln2 + r and a degree-6 polynomial in r (Cephes' expf
 * coefficients, within 2 ulp of expf); 0 below -87.33, where expf's
 * results are subnormal. */
#define VEXP(xin)                                                                               \
    ({                                                                                          \
        const v16 lo_ = SPLAT(-87.33654f), big_ = SPLAT(12582912.0f); /* + 1.5 * 2^23 rounds */ \
        const vi16 under_ = (xin) < lo_;                                                        \
        const v16 x_ = PICK(under_, lo_, (xin));                                                \
        const v16 n_ = (x_ * 1.44269504088896341f + big_) - big_;                               \
        const v16 r_ = (x_ - n_ * 0.693359375f) - n_ * -2.12194440e-4f;                         \
        v16 p_ = SPLAT(1.9875691500e-4f);                                                       \
        p_ = p_ * r_ + 1.3981999507e-3f;                                                        \
        p_ = p_ * r_ + 8.3334519073e-3f;                                                        \
        p_ = p_ * r_ + 4.1665795894e-2f;                                                        \
        p_ = p_ * r_ + 1.6666665459e-1f;                                                        \
        p_ = p_ * r_ + 5.0000001201e-1f;                                                        \
        p_ = p_ * r_ * r_ + r_ + 1.0f;                                                          \
        const vi16 e_ = (__builtin_convertvector(n_, vi16) + 127) << 23; /* 2^n, n >= -126 */   \
        PICK(under_, (v16){0}, p_ *(v16)e_);                                                    \
    })

/* n <= VW floats from x, lanes past n zero (never read past x + n) */
static inline __attribute__((always_inline)) v16 load_n(const float *x, int64_t n)
{
    v16 v = {0};
    if (n == VW)
        memcpy(&v, x, sizeof v);
    else
        for (int64_t i = 0; i < n; i++)
            v[i] = x[i];
    return v;
}

static inline __attribute__((always_inline)) void store_n(float *x, const v16 *v, int64_t n)
{
    if (n == VW)
        memcpy(x, v, sizeof *v);
    else
        for (int64_t i = 0; i < n; i++)
            x[i] = (*v)[i];
}

/* Row t of the scores (s: T values, padded) to P's row p and a copy pd
 * (none where pd is p): softmax(s * scale), the exponentials summed in
 * fixed lane order. */
RT_MV static void softmax_row(float *s, int64_t T, float scale, float *p, float *pd)
{
    v16 mx = SPLAT(-INFINITY);
    for (int64_t j = 0; j < T; j += VW) {
        v16 x;
        memcpy(&x, s + j, sizeof x);
        mx = VMAX(mx, PICK(LANES_BELOW(T - j), x, SPLAT(-INFINITY)));
    }
    const float m = FOLD(mx, VMAX) * scale; /* scale > 0: the maximum of the scaled scores */
    v16 sum = {0};
    for (int64_t j = 0; j < T; j += VW) {
        v16 x;
        memcpy(&x, s + j, sizeof x);
        x = x * scale - m;
        x = PICK(LANES_BELOW(T - j), VEXP(x), (v16){0});
        memcpy(s + j, &x, sizeof x);
        sum += x;
    }
    const float inv = 1.0f / FOLD(sum, VADD);
    for (int64_t j = 0; j < T; j += VW) {
        const int64_t n = T - j < VW ? T - j : VW;
        v16 x;
        memcpy(&x, s + j, sizeof x);
        x *= inv;
        store_n(p + j, &x, n);
        if (pd != p)
            store_n(pd + j, &x, n);
    }
}

/* Row t of P (T values, the mask in their signs) to pa's row (|P|) and,
 * where drop, pd's row (drop(P): 0 where the mask dropped, else |P| *
 * keep, as forward's rt_simd_dropout made it), both padded with zeros. */
RT_MV static void unmask_row(const float *p, int64_t T, bool drop, float keep, float *pa, float *pd)
{
    const vi16 sign = (vi16){0} + INT32_MIN;
    for (int64_t j = 0; j < T; j += VW) {
        const v16 x = load_n(p + j, T - j < VW ? T - j : VW);
        const v16 ax = (v16)((vi16)x & ~sign);
        memcpy(pa + j, &ax, sizeof ax);
        if (drop) {
            const v16 kept = PICK(((vi16)x & sign) == (vi16){0}, ax * keep, (v16){0});
            memcpy(pd + j, &kept, sizeof kept);
        }
    }
}

/* Row t of the backward, on padded rows: g (dout vᵀ's) and p (P's) to dS
 * in ds, which holds drop(P) coming in where drop: the gradient of a
 * dropped element is 0, of a kept one scaled by keep. */
#define GRAD_AFTER_DROP(j)                                     \
    ({                                                         \
        v16 g_, d_;                                            \
        memcpy(&g_, g + (j), sizeof g_);                       \
        memcpy(&d_, ds + (j), sizeof d_);                      \
        drop ? PICK(d_ != (v16){0}, g_ * keep, (v16){0}) : g_; \
    })
RT_MV static void ds_row(const float *p, float *ds, const float *g, int64_t T, bool drop,
                         float keep, float scale)
{
    v16 acc = {0};
    for (int64_t j = 0; j < T; j += VW) {
        v16 pv;
        memcpy(&pv, p + j, sizeof pv);
        acc += pv * GRAD_AFTER_DROP(j);
    }
    const float inner = FOLD(acc, VADD);
    for (int64_t j = 0; j < T; j += VW) {
        v16 pv;
        memcpy(&pv, p + j, sizeof pv);
        const v16 d = pv * (GRAD_AFTER_DROP(j) - inner) * scale; /* 0 in the padding, as p */
        memcpy(ds + j, &d, sizeof d);
    }
}

/* One (sample, head) pair forward: P (T x T) and the pair's columns of
 * out; scratch kt (dh x tp), sc (T x tp), pd (T x T: drop(P), where
 * dropout is on) and small_gemm's pad. */
RT_MV static void fwd_pair(const rt_attn *a, int64_t bh, const float *q0, int64_t ld, int64_t d,
                           int64_t dh, uint64_t step, float *P, float *o, int64_t ldo, float *kt,
                           float *sc, float *pd, float *pad)
{
    const int64_t T = a->T, tp = padded(T);
    const float scale = 1.0f / sqrtf((float)dh);
    if (a->rate <= 0.0f)
        pd = P;
    transpose(q0 + d, ld, T, dh, tp, kt);
    small_gemm(T, cols8(T), dh, q0, ld, 1, kt, tp, sc, tp, pad); /* q kᵀ */
    for (int64_t t = 0; t < T; t++)
        softmax_row(sc + t * tp, T, scale, P + t * T, pd + t * T);
    if (a->rate > 0.0f) { /* the mask into P's sign bits, where drop(P) is 0 */
        rt_simd_dropout(pd, T * T, (uint64_t)(bh * T * T), a->rate, (uint32_t)a->seed ^ a->stream,
                        (uint32_t)(a->seed >> 32), step);
        for (int64_t i = 0; i < T * T; i++)
            P[i] = pd[i] == 0.0f ? -P[i] : P[i];
    }
    small_gemm(T, dh, T, pd, T, 1, q0 + 2 * d, ld, o, ldo, pad); /* drop(P) v */
}

/* One pair backward: the pair's columns of dq, dk, dv (rows of stride
 * ldq); scratch vt (dh x tp), and T x tp blocks gs (dout vᵀ), pa (|P|)
 * and pd (drop(P), then dS; pa itself without dropout), small_gemm's pad. */
RT_MV static void bwd_pair(const rt_attn *a, const float *q0, int64_t ld, int64_t d, int64_t dh,
                           const float *P, const float *g0, int64_t ldg, float *dq0, int64_t ldq,
                           float *vt, float *gs, float *pa, float *pd, float *pad)
{
    const int64_t T = a->T, tp = padded(T);
    const float scale = 1.0f / sqrtf((float)dh), keep = 1.0f / (1.0f - a->rate);
    const bool drop = a->rate > 0.0f;
    if (!drop)
        pd = pa;
    for (int64_t t = 0; t < T; t++)
        unmask_row(P + t * T, T, drop, keep, pa + t * tp, pd + t * tp);
    small_gemm(T, dh, T, pd, 1, tp, g0, ldg, dq0 + 2 * d, ldq, pad); /* dv = drop(P)ᵀ dout */
    transpose(q0 + 2 * d, ld, T, dh, tp, vt);
    small_gemm(T, cols8(T), dh, g0, ldg, 1, vt, tp, gs, tp, pad); /* G = dout vᵀ */
    for (int64_t t = 0; t < T; t++)
        ds_row(pa + t * tp, pd + t * tp, gs + t * tp, T, drop, keep, scale);
    small_gemm(T, dh, T, pd, tp, 1, q0 + d, ld, dq0, ldq, pad); /* dq = dS k */
    small_gemm(T, dh, T, pd, 1, tp, q0, ld, dq0 + d, ldq, pad); /* dk = dSᵀ q */
}

/* A thread's scratch: a transposed key or value block (dh x tp, its
 * padding zero), three blocks of padded rows (T x tp) and small_gemm's
 * pad; NULL if out of memory. */
static float *scratch(int64_t T, int64_t dh)
{
    const int64_t tp = padded(T), kmax = T > dh ? T : dh;
    return calloc((size_t)(dh * tp + 3 * T * tp) + SMALL_PAD(kmax), sizeof(float));
}

void rt_cpu_attn_fwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                     const int64_t *step, rt_view out)
{
    const int64_t T = a->T, H = a->H, d = out.cols, dh = d / H, B = qkv.rows / T, tp = padded(T);
    const int nthr = B * H >= PAR_PAIRS ? ctx->threads : 1;
#pragma omp parallel num_threads(nthr)
    {
        float *kt = scratch(T, dh);
        RT_ASSERT(kt);
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < B * H; bh++) {
            const int64_t b = bh / H, h = bh % H;
            fwd_pair(a, bh, RT_F(qkv) + b * T * qkv.ld + h * dh, qkv.ld, d, dh, (uint64_t)*step,
                     probs + bh * T * T, RT_F(out) + b * T * out.ld + h * dh, out.ld, kt,
                     kt + dh * tp, kt + dh * tp + T * tp, kt + dh * tp + 3 * T * tp);
        }
        free(kt);
    }
}

void rt_cpu_attn_bwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                     const int64_t *step, rt_view dout, rt_view dqkv)
{
    const int64_t T = a->T, H = a->H, d = dout.cols, dh = d / H, B = qkv.rows / T, tp = padded(T);
    const int nthr = B * H >= PAR_PAIRS ? ctx->threads : 1;
    (void)step; /* the mask is in P's sign bits */
#pragma omp parallel num_threads(nthr)
    {
        float *vt = scratch(T, dh);
        RT_ASSERT(vt);
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < B * H; bh++) {
            const int64_t b = bh / H, h = bh % H;
            bwd_pair(a, RT_F(qkv) + b * T * qkv.ld + h * dh, qkv.ld, d, dh, probs + bh * T * T,
                     RT_F(dout) + b * T * dout.ld + h * dh, dout.ld,
                     RT_F(dqkv) + b * T * dqkv.ld + h * dh, dqkv.ld, vt, vt + dh * tp,
                     vt + dh * tp + T * tp, vt + dh * tp + 2 * T * tp, vt + dh * tp + 3 * T * tp);
        }
        free(vt);
    }
}
