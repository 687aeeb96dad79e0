/* loss_math.h — private to kernels/: one row of each loss (rt_k_loss's
 * contract in rt_kernels.h) and its gradient, one definition for the CPU
 * kernel (cpu_loss.c) and the CUDA one (cuda_loss.cu), in double so both
 * round alike.  PyTorch's definitions: F.l1_loss, mse_loss, huber_loss,
 * poisson_nll_loss (log_input), binary_cross_entropy_with_logits and
 * cross_entropy with weight and label_smoothing. */
#ifndef RT_LOSS_MATH_H
#define RT_LOSS_MATH_H

#include <math.h>

#include "rt_kernels.h"
#include "rt_rng.h" /* RT_HD: host and device */

/* The scaled-sigmoid head's gradient, in float: dz = dpred * scale * s *
 * (1 - s), s = pred / scale (rt_k_head_bwd's contract) — one definition
 * for the head's own backward (cpu_ops.c, cuda_ops.cu) and the loss's
 * fused one (rt_loss_desc.head_scale), so that both give the same bits. */
RT_HD float rt_head_grad(float dpred, float pred, float scale)
{
    const float s = pred / scale;
    return dpred * scale * s * (1.0f - s);
}

/* The class of a label (a float holding an index), kept inside [0, n). */
RT_HD int rt_loss_class(float y, int64_t n)
{
    int c = (int)y;
    return c < 0 ? 0 : c >= n ? (int)n - 1 : c;
}

/* Row i's weight c_i = w * class_w[y] (regression: w). */
RT_HD double rt_loss_row_weight(const rt_loss_desc *d, float y, float w)
{
    if (!d->class_w || d->kind < RT_LOSS_BCE)
        return w;
    return (double)w * d->class_w[rt_loss_class(y, d->kind == RT_LOSS_BCE ? 2 : d->K)];
}

/* The weighted loss of a row with outputs z (K), label y and sample weight
 * w; with dz, dz = its gradient * scale. */
RT_HD double rt_loss_row(const rt_loss_desc *d, const float *z, float y, float w, float *dz,
                         double scale)
{
    const double c = rt_loss_row_weight(d, y, w);
    if (d->kind == RT_LOSS_CE) {
        const int64_t K = d->K;
        const int yc = rt_loss_class(y, K);
        double mx = z[0];
        for (int64_t k = 1; k < K; k++)
            mx = z[k] > mx ? z[k] : mx;
        double sum = 0.0, wsum = 0.0, wnll = 0.0;
        for (int64_t k = 0; k < K; k++)
            sum += exp((double)z[k] - mx);
        const double lse = mx + log(sum), s = d->smoothing;
        for (int64_t k = 0; k < K; k++) {
            const double cwk = d->class_w ? d->class_w[k] : 1.0;
            wsum += cwk;
            wnll += cwk * (lse - (double)z[k]);
        }
        const double loss = (1.0 - s) * c * (lse - (double)z[yc]) + s / (double)K * w * wnll;
        if (dz) {
            const double a = (1.0 - s) * c + s / (double)K * w * wsum;
            for (int64_t k = 0; k < K; k++) {
                const double p = exp((double)z[k] - lse);
                const double cwk = d->class_w ? d->class_w[k] : 1.0;
                double g = p * a - s / (double)K * w * cwk;
                if (k == yc)
                    g -= (1.0 - s) * c;
                dz[k] = (float)(g * scale);
            }
        }
        return loss;
    }
    const double x = z[0];
    double l, g;
    switch (d->kind) {
    case RT_LOSS_BCE: {
        const double t = (double)y * (1.0 - d->smoothing) + 0.5 * d->smoothing;
        l = (x > 0 ? x : 0.0) - x * t + log1p(exp(-fabs(x)));
        g = 1.0 / (1.0 + exp(-x)) - t;
        break;
    }
    case RT_LOSS_MSE:
        l = (x - y) * (x - y);
        g = 2.0 * (x - y);
        break;
    case RT_LOSS_HUBER: {
        const double r = x - y, a = fabs(r), dl = d->huber_delta;
        l = a <= dl ? 0.5 * r * r : dl * (a - 0.5 * dl);
        g = a <= dl ? r : (r > 0 ? dl : -dl);
        break;
    }
    case RT_LOSS_POISSON:
        l = exp(x) - (double)y * x;
        g = exp(x) - (double)y;
        break;
    default: /* mae */
        l = fabs(x - y);
        g = x > y ? 1.0 : x < y ? -1.0 : 0.0;
        break;
    }
    if (dz) {
        const float dp = (float)(c * g * scale);
        dz[0] = d->head_scale > 0.0f ? rt_head_grad(dp, z[0], d->head_scale) : dp;
    }
    return c * l;
}

#endif
