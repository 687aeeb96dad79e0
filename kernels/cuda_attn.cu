/* cuda_attn.cu — multi-head self-attention on CUDA (contract: rt_k_attn_fwd
 * and _bwd in rt_kernels.h; the reference is cpu_attn.c).
 *
 * One block per (sample, head) pair; its threads take the pair's query
 * rows (forward) or, phase by phase, key rows and query rows (backward), so
 * every output element is summed by one thread in a fixed order: no
 * atomics, bitwise reproducible.  Tabular transformers have tens of tokens,
 * so a row's T scores fit a thread's loop; a row of the output is summed in
 * registers 32 columns at a time.  Dropout on the probabilities is drawn
 * from rt_rng at P's element numbers, like rt_k_dropout, in forward, and
 * kept in the saved P's sign bits for backward.
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
    k_attn_bwd<<<pair_blocks(r.pairs), ATT_THREADS, 0, CS(ctx)->stream>>>(
        r, probs, RT_F(dout), dout.ld, RT_F(dqkv), dqkv.ld);
    LAUNCHED(CS(ctx), "k_attn_bwd");
}
