/* cpu_attn.c — multi-head scaled dot-product self-attention on the CPU
 * (contract: rt_k_attn_fwd/_bwd in rt_kernels.h), the reference of the
 * CUDA kernels.
 *
 * Tabular transformers attend over few tokens (one per feature and the
 * [CLS] token: tens, not thousands), so each (sample, head) pair is a
 * handful of T x T x dh products: they run as plain loops over the pairs,
 * pairs in parallel (each writes its own rows and columns), the inner loops
 * along the head's columns so that they vectorise.  Per query row t:
 *
 *   forward   s = q_t kᵀ / sqrt(dh);  P_t = softmax(s) (saved);
 *             out_t = drop(P_t) v
 *   backward  g = dout_t vᵀ;  dv += drop(P_t)ᵀ dout_t;  gp = drop'(g);
 *             ds = P_t ⊙ (gp - <P_t, gp>) / sqrt(dh);
 *             dq_t = ds k;  dk += dsᵀ q_t
 *
 * The dropout mask of P_t is drawn again in backward (rt_simd_dropout on
 * element numbers of P: the same numbers as the CUDA kernels and rt_rng). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "cpu_simd.h"
#include "kctx_impl.h"

/* below this many (sample, head) pairs a call runs on one thread */
#define PAR_PAIRS 16

/* Row t of P with the dropout mask applied, into out (T floats). */
static void dropped_row(const rt_attn *a, const float *p, uint64_t e0, uint64_t step, float *out)
{
    memcpy(out, p, (size_t)a->T * sizeof *out);
    if (a->rate > 0.0f)
        rt_simd_dropout(out, a->T, e0, a->rate, (uint32_t)a->seed ^ a->stream,
                        (uint32_t)(a->seed >> 32), step);
}

void rt_cpu_attn_fwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                     const int64_t *step, rt_view out)
{
    const int64_t T = a->T, H = a->H, d = out.cols, dh = d / H, B = qkv.rows / T;
    const float scale = 1.0f / sqrtf((float)dh);
    const uint64_t t_step = (uint64_t)*step;
    const float *base = RT_F(qkv);
    float *o = RT_F(out);
    const int nthr = B * H >= PAR_PAIRS ? ctx->threads : 1;
#pragma omp parallel num_threads(nthr)
    {
        float *pd = malloc((size_t)T * sizeof *pd);
        RT_ASSERT(pd);
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < B * H; bh++) {
            const int64_t b = bh / H, h = bh % H;
            const float *q0 = base + b * T * qkv.ld + h * dh, *k0 = q0 + d, *v0 = q0 + 2 * d;
            float *P = probs + bh * T * T;
            for (int64_t t = 0; t < T; t++) {
                const float *q = q0 + t * qkv.ld;
                float *pr = P + t * T, mx = -INFINITY;
                for (int64_t s = 0; s < T; s++) {
                    const float *k = k0 + s * qkv.ld;
                    float dot = 0.0f;
                    for (int64_t e = 0; e < dh; e++)
                        dot += q[e] * k[e];
                    pr[s] = dot * scale;
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
                dropped_row(a, pr, (uint64_t)(bh * T + t) * (uint64_t)T, t_step, pd);
                float *orow = o + (b * T + t) * out.ld + h * dh;
                for (int64_t e = 0; e < dh; e++)
                    orow[e] = 0.0f;
                for (int64_t s = 0; s < T; s++) {
                    const float w = pd[s], *v = v0 + s * qkv.ld;
                    for (int64_t e = 0; e < dh; e++)
                        orow[e] += w * v[e];
                }
            }
        }
        free(pd);
    }
}

void rt_cpu_attn_bwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                     const int64_t *step, rt_view dout, rt_view dqkv)
{
    const int64_t T = a->T, H = a->H, d = dout.cols, dh = d / H, B = qkv.rows / T;
    const float scale = 1.0f / sqrtf((float)dh);
    const uint64_t t_step = (uint64_t)*step;
    const float *base = RT_F(qkv), *go = RT_F(dout);
    float *gbase = RT_F(dqkv);
    const int nthr = B * H >= PAR_PAIRS ? ctx->threads : 1;
#pragma omp parallel num_threads(nthr)
    {
        float *pd = malloc((size_t)(2 * T) * sizeof *pd), *gp = pd + T;
        RT_ASSERT(pd);
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < B * H; bh++) {
            const int64_t b = bh / H, h = bh % H;
            const float *q0 = base + b * T * qkv.ld + h * dh, *k0 = q0 + d, *v0 = q0 + 2 * d;
            float *dq0 = gbase + b * T * dqkv.ld + h * dh, *dk0 = dq0 + d, *dv0 = dq0 + 2 * d;
            const float *P = probs + bh * T * T;
            for (int64_t s = 0; s < T; s++)
                for (int64_t e = 0; e < dh; e++)
                    dk0[s * dqkv.ld + e] = dv0[s * dqkv.ld + e] = 0.0f;
            for (int64_t t = 0; t < T; t++) {
                const float *pr = P + t * T, *gt = go + (b * T + t) * dout.ld + h * dh;
                const uint64_t e0 = (uint64_t)(bh * T + t) * (uint64_t)T;
                dropped_row(a, pr, e0, t_step, pd);
                for (int64_t s = 0; s < T; s++) {
                    const float *v = v0 + s * qkv.ld;
                    float *dv = dv0 + s * dqkv.ld, dot = 0.0f, w = pd[s];
                    for (int64_t e = 0; e < dh; e++) {
                        dot += gt[e] * v[e];
                        dv[e] += w * gt[e];
                    }
                    gp[s] = dot;
                }
                if (a->rate > 0.0f) /* the same mask and scale as forward's */
                    rt_simd_dropout(gp, T, e0, a->rate, (uint32_t)a->seed ^ a->stream,
                                    (uint32_t)(a->seed >> 32), t_step);
                double inner = 0.0;
                for (int64_t s = 0; s < T; s++)
                    inner += (double)pr[s] * gp[s];
                const float *q = q0 + t * qkv.ld;
                float *dq = dq0 + t * dqkv.ld;
                for (int64_t e = 0; e < dh; e++)
                    dq[e] = 0.0f;
                for (int64_t s = 0; s < T; s++) {
                    const float ds = pr[s] * (gp[s] - (float)inner) * scale;
                    const float *k = k0 + s * qkv.ld;
                    float *dk = dk0 + s * dqkv.ld;
                    for (int64_t e = 0; e < dh; e++) {
                        dq[e] += ds * k[e];
                        dk[e] += ds * q[e];
                    }
                }
            }
        }
        free(pd);
    }
}
