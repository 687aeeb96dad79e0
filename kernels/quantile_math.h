/* quantile_math.h — private to kernels/: continuous_norm = quantile's map
 * (and robust's smooth clip, at the end)
 * of a value to a standard normal through a column's quantiles
 * (rt_k_quantile_fwd), one definition for the CPU (cpu_layers.c) and CUDA
 * (cuda_layers.cu).  sklearn's QuantileTransformer(output_distribution=
 * "normal"): the value's position among the nq quantiles, which stand at
 * probabilities j / (nq - 1), linearly interpolated and — where quantiles
 * tie — the middle of the tied run (sklearn's average of np.interp up the
 * quantiles and down them); clipped to [1e-7, 1 - 1e-7]; then the normal's
 * inverse CDF (Acklam's rational approximation, refined by one Halley step
 * on erfc: double precision). */
#ifndef RT_QUANTILE_MATH_H
#define RT_QUANTILE_MATH_H

#include <math.h>
#include <stdint.h>

#include "rt_rng.h" /* RT_HD: host and device */

#define RT_QUANTILE_BOUND 1e-7

/* Φ^-1(p) for p in (0, 1) */
RT_HD double rt_norm_ppf(double p)
{
    const double a1 = -3.969683028665376e+01, a2 = 2.209460984245205e+02,
                 a3 = -2.759285104469687e+02, a4 = 1.383577518672690e+02,
                 a5 = -3.066479806614716e+01, a6 = 2.506628277459239e+00;
    const double b1 = -5.447609879822406e+01, b2 = 1.615858368580409e+02,
                 b3 = -1.556989798598866e+02, b4 = 6.680131188771972e+01,
                 b5 = -1.328068155288572e+01;
    const double c1 = -7.784894002430293e-03, c2 = -3.223964580411365e-01,
                 c3 = -2.400758277161838e+00, c4 = -2.549732539343734e+00,
                 c5 = 4.374664141464968e+00, c6 = 2.938163982698783e+00;
    const double d1 = 7.784695709041462e-03, d2 = 3.224671290700398e-01, d3 = 2.445134137142996e+00,
                 d4 = 3.754408661907416e+00;
    double x;
    if (p < 0.02425) {
        const double q = sqrt(-2 * log(p));
        x = (((((c1 * q + c2) * q + c3) * q + c4) * q + c5) * q + c6) /
            ((((d1 * q + d2) * q + d3) * q + d4) * q + 1);
    } else if (p > 1 - 0.02425) {
        const double q = sqrt(-2 * log(1 - p));
        x = -(((((c1 * q + c2) * q + c3) * q + c4) * q + c5) * q + c6) /
            ((((d1 * q + d2) * q + d3) * q + d4) * q + 1);
    } else {
        const double q = p - 0.5, r = q * q;
        x = (((((a1 * r + a2) * r + a3) * r + a4) * r + a5) * r + a6) * q /
            (((((b1 * r + b2) * r + b3) * r + b4) * r + b5) * r + 1);
    }
    const double e = 0.5 * erfc(-x / 1.4142135623730951) - p; /* Halley */
    const double u = e * 2.5066282746310002 * exp(x * x / 2);
    return x - u / (1 + x * u / 2);
}

/* The probability of x among q[0..nq) (ascending; nq >= 2), clipped. */
RT_HD double rt_quantile_prob(const float *q, int64_t nq, float x)
{
    double p;
    if (!(x > q[0])) { /* at or below the first (NaN too) */
        int64_t hi = 0;
        while (hi + 1 < nq && q[hi + 1] <= x)
            hi++;
        p = x < q[0] ? 0.0 : 0.5 * (double)hi / (double)(nq - 1);
    } else if (!(x < q[nq - 1])) { /* at or above the last */
        int64_t lo = nq - 1;
        while (lo > 0 && q[lo - 1] >= x)
            lo--;
        p = x > q[nq - 1] ? 1.0 : 0.5 * ((double)lo / (double)(nq - 1) + 1.0);
    } else {
        int64_t lo = 0, hi = nq - 1; /* q[lo] < x < q[hi]... narrow to neighbours */
        while (hi - lo > 1) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (q[mid] < x)
                lo = mid;
            else
                hi = mid;
        }
        /* now q[lo] < x <= q[hi]: a tied run q[hi..t] == x takes its middle */
        if (q[hi] == x) {
            int64_t t = hi;
            while (t + 1 < nq && q[t + 1] == x)
                t++;
            p = 0.5 * (double)(hi + t) / (double)(nq - 1);
        } else {
            const double f = ((double)x - q[lo]) / ((double)q[hi] - q[lo]);
            p = ((double)lo + f) / (double)(nq - 1);
        }
    }
    return p < RT_QUANTILE_BOUND       ? RT_QUANTILE_BOUND
           : p > 1 - RT_QUANTILE_BOUND ? 1 - RT_QUANTILE_BOUND
                                       : p;
}

RT_HD float rt_quantile_normal(const float *q, int64_t nq, float x)
{
    return (float)rt_norm_ppf(rt_quantile_prob(q, nq, x));
}

/* continuous_norm = robust: RealMLP's smooth clip of the robustly scaled value */
RT_HD float rt_robust_value(float x, float center, float scale)
{
    const float z = (x - center) * scale;
    return z / sqrtf(1.0f + (z / 3.0f) * (z / 3.0f));
}

#endif
