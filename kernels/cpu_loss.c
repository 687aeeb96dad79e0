/* cpu_loss.c — the CPU's losses (rt_k_loss), the gradient norm
 * (rt_k_sqnorm) and the optimizers other than Adam's fast path
 * (rt_k_optim); contracts in rt_kernels.h, the rows' math in loss_math.h. */
#include <math.h>

#include "cpu_backend.h"
#include "cpu_simd.h"
#include "loss_math.h"

double rt_loss_weight(const rt_loss_desc *d, const float *y, const float *w, int64_t n)
{
    double wsum = 0.0;
    for (int64_t i = 0; i < n; i++)
        wsum += rt_loss_row_weight(d, y[i], w ? w[i] : 1.0f);
    return wsum;
}

void rt_cpu_loss(rt_kctx *ctx, const rt_loss_desc *d, rt_view z, const float *y, const float *w,
                 const float *norm, rt_view dz, double *acc)
{
    (void)ctx;
    const int64_t n = z.rows;
    double scale;
    if (norm && *norm > 0.0f) {
        scale = *norm;
    } else { /* this batch's weight */
        const double wsum = rt_loss_weight(d, y, w, n);
        scale = wsum > 0 ? 1.0 / wsum : 0.0;
    }
    double sum = acc[0], wsum = acc[1]; /* row by row: the same however rows are batched */
    for (int64_t i = 0; i < n; i++) {
        const float wi = w ? w[i] : 1.0f;
        sum += rt_loss_row(d, RT_F(z) + i * z.ld, y[i], wi, dz.p ? RT_F(dz) + i * dz.ld : NULL,
                           scale);
        wsum += rt_loss_row_weight(d, y[i], wi);
    }
    acc[0] = sum;
    acc[1] = wsum;
}

void rt_cpu_sqnorm(rt_kctx *ctx, const float *g, int64_t n, double *out)
{
    (void)ctx;
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += (double)g[i] * (double)g[i];
    *out = s;
}

/* AdamW and SGD on one segment (rt_k_optim's formulas); gs has the clip. */
void rt_cpu_optim_seg(const rt_adam_hp *hp, const rt_adam_seg *sg, float *p, const float *g,
                      float *m, float *v, int64_t t, float gs)
{
    const float l2x2 = 2.0f * sg->l2, wd = sg->decay ? hp->weight_decay : 0.0f;
    if (hp->kind == RT_OPTIM_ADAMW) {
        const float b1 = hp->beta1, b2 = hp->beta2, c1 = 1.0f - b1, c2 = 1.0f - b2;
        const float step = (float)(hp->lr / (1.0 - pow(hp->beta1, (double)t)));
        const float bc2 = (float)sqrt(1.0 - pow(hp->beta2, (double)t));
        const float decay = 1.0f - hp->lr * wd;
        for (int64_t i = 0; i < sg->len; i++) {
            const float pi = p[i] * decay, gi = g[i] * gs + l2x2 * p[i];
            const float mi = b1 * m[i] + c1 * gi, vi = b2 * v[i] + c2 * gi * gi;
            m[i] = mi;
            v[i] = vi;
            p[i] = pi - step * mi / (sqrtf(vi) / bc2 + hp->eps);
        }
        return;
    }
    const float mom = hp->momentum; /* sgd */
    for (int64_t i = 0; i < sg->len; i++) {
        const float gi = g[i] * gs + l2x2 * p[i] + wd * p[i];
        const float bi = mom * m[i] + gi;
        m[i] = bi;
        p[i] -= hp->lr * (hp->nesterov ? gi + mom * bi : bi);
    }
}
