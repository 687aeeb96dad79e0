/* ens_math.h — private to kernels/: the reduction of an ensemble's k
 * member blocks (rt_k_ens_reduce), one definition for the CPU kernels
 * (cpu_layers.c) and the CUDA ones (cuda_layers.cu).  Sums run in member
 * order, in double.  The mean probabilities are kept as logs throughout
 * (log-sum-exp over the members of each member's log-probability), so a
 * class whose probability underflows even a double (a logit 1000 below
 * the winner's) still gets a finite log, and a confident member does not
 * round the others away. */
#ifndef RT_ENS_MATH_H
#define RT_ENS_MATH_H

#include <math.h>

#include "rt_kernels.h"
#include "rt_rng.h" /* RT_HD: host and device */

/* log(1 + e^z), without overflow */
RT_HD double rt_softplus(double z) { return (z > 0 ? z : 0.0) + log1p(exp(-fabs(z))); }

/* log(mean_t e^(a_t)) over k values a_t = f(t) (a macro-free two-pass
 * log-sum-exp: the caller passes the values at stride s). */
RT_HD double rt_log_mean_exp(const double *a, int64_t k, int64_t s)
{
    double mx = a[0];
    for (int64_t t = 1; t < k; t++)
        mx = a[t * s] > mx ? a[t * s] : mx;
    double z = 0.0;
    for (int64_t t = 0; t < k; t++)
        z += exp(a[t * s] - mx);
    return mx + log(z / (double)k);
}

/* Element j of row x (k blocks of D at stride D) for SUM, MEAN, SIGMOID;
 * tmp: 2k doubles. */
RT_HD float rt_ens_elem(int op, const float *x, int64_t k, int64_t D, int64_t j, double *tmp)
{
    if (op == RT_ENS_SIGMOID) { /* logit(mean p) = log mean p - log mean (1 - p) */
        for (int64_t t = 0; t < k; t++) {
            tmp[t] = -rt_softplus(-(double)x[t * D + j]);    /* log sigmoid(z) */
            tmp[k + t] = -rt_softplus((double)x[t * D + j]); /* log (1 - sigmoid(z)) */
        }
        return (float)(rt_log_mean_exp(tmp, k, 1) - rt_log_mean_exp(tmp + k, k, 1));
    }
    double s = 0.0;
    for (int64_t t = 0; t < k; t++)
        s += x[t * D + j];
    return (float)(op == RT_ENS_MEAN ? s / (double)k : s);
}

/* Row x (k blocks of D logits) -> y[j] = log(mean_t softmax(x_t)[j]);
 * tmp: 2k doubles. */
RT_HD void rt_ens_softmax_row(const float *x, int64_t k, int64_t D, float *y, double *tmp)
{
    double *lse = tmp, *lp = tmp + k;
    for (int64_t t = 0; t < k; t++) { /* member t's log-normaliser */
        const float *xt = x + t * D;
        double mx = xt[0], z = 0.0;
        for (int64_t j = 1; j < D; j++)
            mx = xt[j] > mx ? xt[j] : mx;
        for (int64_t j = 0; j < D; j++)
            z += exp(xt[j] - mx);
        lse[t] = mx + log(z);
    }
    for (int64_t j = 0; j < D; j++) {
        for (int64_t t = 0; t < k; t++)
            lp[t] = (double)x[t * D + j] - lse[t];
        y[j] = (float)rt_log_mean_exp(lp, k, 1);
    }
}

#endif
