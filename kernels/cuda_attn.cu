/* cuda_attn.cu — multi-head self-attention on CUDA (contract: rt_k_attn_fwd
 * and _bwd in rt_kernels.h; the reference is cpu_attn.c).
 *
 * One block per (sample, head) pair, every output element summed by one
 * thread in a fixed order: no atomics, bitwise reproducible.  Where the
 * pair fits in shared memory (tabular transformers have tens of tokens:
 * 37 tokens and heads of 24 take 16 KB forward, 25 KB backward), it is
 * read there once and each phase spreads its T x T scores or T x dh
 * products over all the block's threads (k_attn_*_sm); else the threads
 * take the pair's query rows (forward) or, phase by phase, key rows and
 * query rows (backward), reading global memory, a row's T scores in a
 * thread's loop and a row of the output summed in registers 32 columns at
 * a time.  Dropout on the probabilities is drawn from rt_rng at P's
 * element numbers, like rt_k_dropout, in forward, and kept in the saved
 * P's sign bits for backward.
 *
 * Backward, per pair (P saved by forward):
 *   A  threads over keys s:    dv_s = sum_t drop(P)[t,s] dout_t
 *   B  threads over queries t: gp = drop'(dout_t vᵀ); ds = P_t ⊙ (gp - <P_t, gp>) / sqrt(dh),
 *                              written over P_t; dq_t = ds k
 *   C  threads over keys s:    dk_s = sum_t ds[t,s] q_t */
#include <math.h>

#include "cuda_common.cuh"
#include "rt_rng.h"

#define ATT_THREADS 128
#define CHUNK 32

struct attn_args {
    const float *qkv;
    int64_t ld, T, H, d, dh, pairs;
    float scale, rate, keep;
    uint64_t seed;
    uint32_t stream;
};

/* Whether dropout drops P's element e = ((b*H + h)*T + t)*T + s */
__device__ __forceinline__ bool drops(const attn_args &a, uint64_t e, uint64_t step)
{
    return a.rate > 0.0f && rt_rng_uniform(a.seed, a.stream, step, e) < a.rate;
}

/* x after dropout, x an element of P or of its gradient; p the saved P's
 * element, whose sign bit says whether forward dropped it */
__device__ __forceinline__ float dropped(const attn_args &a, float x, float p)
{
    if (a.rate <= 0.0f)
        return x;
    return signbit(p) ? 0.0f : x * a.keep;
}

__device__ __forceinline__ float dot(const float *x, const float *y, int64_t n)
{
    float s = 0.0f;
    for (int64_t e = 0; e < n; e++)
        s += x[e] * y[e];
    return s;
}

/* out[e] = sum_s w(s) * R[s*ldr + e] for e < dh, s < T, summed in order 32
 * columns at a time in registers; w(s) = W[s*ws], drop(W[s*ws]) when drop
 * (W the saved P, the mask in its signs). */
__device__ __forceinline__ void weighted_rows(const attn_args &a, const float *W, int64_t ws,
                                              bool drop, const float *R, int64_t ldr, float *out)
{
    for (int64_t c0 = 0; c0 < a.dh; c0 += CHUNK) {
        const int64_t nc = a.dh - c0 < CHUNK ? a.dh - c0 : CHUNK;
        float acc[CHUNK];
        for (int k = 0; k < CHUNK; k++)
            acc[k] = 0.0f;
        for (int64_t s = 0; s < a.T; s++) {
            const float w = drop ? dropped(a, W[s * ws], W[s * ws]) : W[s * ws];
            const float *r = R + s * ldr + c0;
            for (int k = 0; k < nc; k++)
                acc[k] += w * r[k];
        }
        for (int k = 0; k < nc; k++)
            out[c0 + k] = acc[k];
    }
}

__global__ void __launch_bounds__(ATT_THREADS) k_attn_fwd(attn_args a, float *probs,
                                                          const int64_t *step, float *out,
                                                          int64_t ldo)
{
    const uint64_t st = (uint64_t)*step;
    for (int64_t bh = blockIdx.x; bh < a.pairs; bh += gridDim.x) {
        const int64_t b = bh / a.H, h = bh % a.H;
        const float *q0 = a.qkv + b * a.T * a.ld + h * a.dh, *k0 = q0 + a.d, *v0 = q0 + 2 * a.d;
        for (int64_t t = threadIdx.x; t < a.T; t += blockDim.x) {
            float *pr = probs + (bh * a.T + t) * a.T, mx = -INFINITY;
            for (int64_t s = 0; s < a.T; s++) {
                pr[s] = dot(q0 + t * a.ld, k0 + s * a.ld, a.dh) * a.scale;
                mx = pr[s] > mx ? pr[s] : mx;
            }
            double sum = 0.0;
            for (int64_t s = 0; s < a.T; s++) {
                pr[s] = expf(pr[s] - mx);
                sum += pr[s];
            }
            const float inv = (float)(1.0 / sum);
            const uint64_t e0 = (uint64_t)(bh * a.T + t) * (uint64_t)a.T;
            for (int64_t s = 0; s < a.T; s++) /* the mask into the sign bits */
                pr[s] = drops(a, e0 + (uint64_t)s, st) ? -(pr[s] * inv) : pr[s] * inv;
            weighted_rows(a, pr, 1, true, v0, a.ld, out + (b * a.T + t) * ldo + h * a.dh);
        }
    }
}

__global__ void __launch_bounds__(ATT_THREADS)
    k_attn_bwd(attn_args a, float *probs, const float *go, int64_t ldg, float *dqkv, int64_t ldq)
{
    for (int64_t bh = blockIdx.x; bh < a.pairs; bh += gridDim.x) {
        const int64_t b = bh / a.H, h = bh % a.H;
        const float *q0 = a.qkv + b * a.T * a.ld + h * a.dh, *k0 = q0 + a.d, *v0 = q0 + 2 * a.d;
        const float *g0 = go + b * a.T * ldg + h * a.dh;
        float *dq0 = dqkv + b * a.T * ldq + h * a.dh, *dk0 = dq0 + a.d, *dv0 = dq0 + 2 * a.d;
        float *P = probs + bh * a.T * a.T;
        /* A: dv_s = sum_t drop(P)[t,s] dout_t */
        for (int64_t s = threadIdx.x; s < a.T; s += blockDim.x)
            weighted_rows(a, P + s, a.T, true, g0, ldg, dv0 + s * ldq);
        __syncthreads();
        /* B: ds over P's row, then dq */
        for (int64_t t = threadIdx.x; t < a.T; t += blockDim.x) {
            float *pr = P + t * a.T;
            double inner = 0.0;
            for (int64_t s = 0; s < a.T; s++)
                inner += (double)fabsf(pr[s]) *
                         dropped(a, dot(g0 + t * ldg, v0 + s * a.ld, a.dh), pr[s]);
            for (int64_t s = 0; s < a.T; s++) {
                const float gp = dropped(a, dot(g0 + t * ldg, v0 + s * a.ld, a.dh), pr[s]);
                pr[s] = fabsf(pr[s]) * (gp - (float)inner) * a.scale;
            }
            weighted_rows(a, pr, 1, false, k0, a.ld, dq0 + t * ldq);
        }
        __syncthreads();
        /* C: dk_s = sum_t ds[t,s] q_t */
        for (int64_t s = threadIdx.x; s < a.T; s += blockDim.x)
            weighted_rows(a, P + s, a.T, false, q0, a.ld, dk0 + s * ldq);
        __syncthreads(); /* the next pair's phase A may not overtake this one's C */
    }
}

/* ---- the pair in shared memory (where it fits) ----
 * q, k, v (and dout) of the pair are read from global memory once into
 * shared rows of dh + 1 floats (odd: threads reading one column of
 * consecutive rows hit different banks), P into a T x T block; every
 * phase spreads its outputs (T x T scores, T x dh products) over all the
 * block's threads, and each row's softmax over a warp's lanes. */

#define FULL 0xffffffffu
#define SM_BUDGET (48 * 1024) /* dynamic shared memory without an opt-in */

/* the floats of shared memory a pair needs: nrows blocks of T x (dh + 1)
 * and nsq of T x T */
static int64_t sm_floats(int64_t T, int64_t dh, int nrows, int nsq)
{
    return nrows * T * (dh + 1) + nsq * T * T;
}

/* the pair's T rows of dh floats (stride ld) into shared rows of dh + 1 */
__device__ __forceinline__ void load_rows(const float *x, int64_t ld, int64_t T, int64_t dh,
                                          float *sh)
{
    for (int64_t i = threadIdx.x; i < T * dh; i += blockDim.x)
        sh[(i / dh) * (dh + 1) + i % dh] = x[(i / dh) * ld + i % dh];
}

/* the lanes' values summed / maximised over the warp, a fixed tree */
__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_xor_sync(FULL, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o /= 2)
        v = fmaxf(v, __shfl_xor_sync(FULL, v, o));
    return v;
}

/* C (T x dh, rows of stride ldc, global) = A (T x T) · R (T rows of ld1
 * floats, shared), A's element (t, s) at A[t*ar + s*ac], dropped (its sign
 * the mask) when drop; each element summed over s in order by one thread */
__device__ __forceinline__ void sm_product(const attn_args &a, const float *A, int64_t ar,
                                           int64_t ac, bool drop, const float *R, float *C,
                                           int64_t ldc)
{
    const int64_t T = a.T, dh = a.dh, ld1 = dh + 1;
    for (int64_t i = threadIdx.x; i < T * dh; i += blockDim.x) {
        const int64_t t = i / dh, e = i % dh;
        float acc = 0.0f;
        for (int64_t s = 0; s < T; s++) {
            const float w = A[t * ar + s * ac];
            acc += (drop ? dropped(a, w, w) : w) * R[s * ld1 + e];
        }
        C[t * ldc + e] = acc;
    }
}

/* S (T x T, shared) = X Yᵀ: X, Y shared rows of dh + 1 */
__device__ __forceinline__ void sm_scores(const attn_args &a, const float *X, const float *Y,
                                          float *S)
{
    const int64_t T = a.T, dh = a.dh, ld1 = dh + 1;
    for (int64_t i = threadIdx.x; i < T * T; i += blockDim.x) {
        const float *x = X + (i / T) * ld1, *y = Y + (i % T) * ld1;
        float acc = 0.0f;
        for (int64_t e = 0; e < dh; e++)
            acc += x[e] * y[e];
        S[i] = acc;
    }
}

__global__ void __launch_bounds__(ATT_THREADS)
    k_attn_fwd_sm(attn_args a, float *probs, const int64_t *step, float *out, int64_t ldo)
{
    extern __shared__ float sm[];
    const int64_t T = a.T, dh = a.dh, ld1 = dh + 1;
    float *q = sm, *k = q + T * ld1, *v = k + T * ld1, *P = v + T * ld1;
    const uint64_t st = (uint64_t)*step;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int64_t bh = blockIdx.x; bh < a.pairs; bh += gridDim.x) {
        const int64_t b = bh / a.H, h = bh % a.H;
        const float *q0 = a.qkv + b * T * a.ld + h * dh;
        load_rows(q0, a.ld, T, dh, q);
        load_rows(q0 + a.d, a.ld, T, dh, k);
        load_rows(q0 + 2 * a.d, a.ld, T, dh, v);
        __syncthreads();
        sm_scores(a, q, k, P);
        __syncthreads();
        for (int64_t t = warp; t < T; t += warps) { /* a warp per row: softmax, the mask */
            float *pr = P + t * T, mx = -INFINITY, sum = 0.0f;
            for (int64_t s = lane; s < T; s += 32)
                mx = fmaxf(mx, pr[s] * a.scale);
            mx = warp_max(mx);
            for (int64_t s = lane; s < T; s += 32)
                sum += pr[s] = expf(pr[s] * a.scale - mx);
            const float inv = 1.0f / warp_sum(sum);
            const uint64_t e0 = (uint64_t)(bh * T + t) * (uint64_t)T;
            float *gp = probs + (bh * T + t) * T;
            for (int64_t s = lane; s < T; s += 32) /* the mask into the sign bits */
                gp[s] = pr[s] = drops(a, e0 + (uint64_t)s, st) ? -(pr[s] * inv) : pr[s] * inv;
        }
        __syncthreads();
        sm_product(a, P, T, 1, true, v, out + b * T * ldo + h * dh, ldo); /* drop(P) v */
        __syncthreads(); /* the next pair's rows may not overwrite these yet */
    }
}

__global__ void __launch_bounds__(ATT_THREADS)
    k_attn_bwd_sm(attn_args a, const float *probs, const float *go, int64_t ldg, float *dqkv,
                  int64_t ldq)
{
    extern __shared__ float sm[];
    const int64_t T = a.T, dh = a.dh, ld1 = dh + 1;
    float *q = sm, *k = q + T * ld1, *v = k + T * ld1, *g = v + T * ld1, *P = g + T * ld1;
    float *G = P + T * T;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int64_t bh = blockIdx.x; bh < a.pairs; bh += gridDim.x) {
        const int64_t b = bh / a.H, h = bh % a.H;
        const float *q0 = a.qkv + b * T * a.ld + h * dh;
        float *dq0 = dqkv + b * T * ldq + h * dh;
        load_rows(q0, a.ld, T, dh, q);
        load_rows(q0 + a.d, a.ld, T, dh, k);
        load_rows(q0 + 2 * a.d, a.ld, T, dh, v);
        load_rows(go + b * T * ldg + h * dh, ldg, T, dh, g);
        for (int64_t i = threadIdx.x; i < T * T; i += blockDim.x)
            P[i] = probs[bh * T * T + i];
        __syncthreads();
        sm_product(a, P, 1, T, true, g, dq0 + 2 * a.d, ldq); /* dv = drop(P)ᵀ dout */
        sm_scores(a, g, v, G);                               /* G = dout vᵀ */
        __syncthreads();
        for (int64_t t = warp; t < T; t += warps) { /* dS over the row, into G */
            float *pr = P + t * T, *gr = G + t * T, inner = 0.0f;
            for (int64_t s = lane; s < T; s += 32)
                inner += fabsf(pr[s]) * (gr[s] = dropped(a, gr[s], pr[s]));
            inner = warp_sum(inner);
            for (int64_t s = lane; s < T; s += 32)
                gr[s] = fabsf(pr[s]) * (gr[s] - inner) * a.scale;
        }
        __syncthreads();
        sm_product(a, G, T, 1, false, k, dq0, ldq);       /* dq = dS k */
        sm_product(a, G, 1, T, false, q, dq0 + a.d, ldq); /* dk = dSᵀ q */
        __syncthreads(); /* the next pair's rows may not overwrite these yet */
    }
}

static attn_args args_of(const rt_attn *a, rt_view qkv, int64_t d)
{
    attn_args r;
    r.qkv = RT_F(qkv);
    r.ld = qkv.ld;
    r.T = a->T;
    r.H = a->H;
    r.d = d;
    r.dh = d / a->H;
    r.pairs = qkv.rows / a->T * a->H;
    r.scale = 1.0f / sqrtf((float)r.dh);
    r.rate = a->rate;
    r.keep = 1.0f / (1.0f - a->rate);
    r.seed = a->seed;
    r.stream = a->stream;
    return r;
}

static unsigned pair_blocks(int64_t pairs) { return (unsigned)(pairs < 65535 * 8 ? pairs : 65535 * 8); }

void rt_cuda_attn_fwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                      const int64_t *step, rt_view out)
{
    attn_args r = args_of(a, qkv, out.cols);
    if (r.pairs == 0)
        return;
    const size_t sm = (size_t)sm_floats(r.T, r.dh, 3, 1) * sizeof(float);
    if (sm <= SM_BUDGET) {
        k_attn_fwd_sm<<<pair_blocks(r.pairs), ATT_THREADS, sm, CS(ctx)->stream>>>(
            r, probs, step, RT_F(out), out.ld);
        LAUNCHED(CS(ctx), "k_attn_fwd_sm");
        return;
    }
    k_attn_fwd<<<pair_blocks(r.pairs), ATT_THREADS, 0, CS(ctx)->stream>>>(r, probs, step, RT_F(out),
                                                                          out.ld);
    LAUNCHED(CS(ctx), "k_attn_fwd");
}

void rt_cuda_attn_bwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                      const int64_t *step, rt_view dout, rt_view dqkv)
{
    (void)step; /* the mask is in P's sign bits */
    attn_args r = args_of(a, qkv, dout.cols);
    if (r.pairs == 0)
        return;
    const size_t sm = (size_t)sm_floats(r.T, r.dh, 4, 2) * sizeof(float);
    if (sm <= SM_BUDGET) {
        k_attn_bwd_sm<<<pair_blocks(r.pairs), ATT_THREADS, sm, CS(ctx)->stream>>>(
            r, probs, RT_F(dout), dout.ld, RT_F(dqkv), dqkv.ld);
        LAUNCHED(CS(ctx), "k_attn_bwd_sm");
        return;
    }
    k_attn_bwd<<<pair_blocks(r.pairs), ATT_THREADS, 0, CS(ctx)->stream>>>(
        r, probs, RT_F(dout), dout.ld, RT_F(dqkv), dqkv.ld);
    LAUNCHED(CS(ctx), "k_attn_bwd");
}
