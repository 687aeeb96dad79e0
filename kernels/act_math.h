/* act_math.h — private to kernels/: the activations and their derivatives,
 * one definition for the CPU kernels (cpu_layers.c) and the CUDA ones
 * (cuda_layers.cu), as rt_rng.h is for the random numbers.  GELU is the
 * exact erf form (PyTorch's default), as 0.5 x erfc(-x/sqrt 2): 1 + erf(x/sqrt 2)
 * cancels for x < -3 (a GPU's erff and the CPU's then differ by 6%). */
#ifndef RT_ACT_MATH_H
#define RT_ACT_MATH_H

#include <math.h>
#include <stdbool.h>

#include "rt_model_names.h"
#include "rt_rng.h" /* RT_HD: host and device */

RT_HD float rt_act_f(int act, float x)
{
    switch (act) {
    case RT_ACT_RELU:
        return x > 0.0f ? x : 0.0f;
    case RT_ACT_GELU:
        return 0.5f * x * erfcf(-x * 0.70710678118654752f);
    case RT_ACT_SILU:
        return x / (1.0f + expf(-x));
    case RT_ACT_TANH:
        return tanhf(x);
    default:
        return x;
    }
}

/* d act(x) / dx */
RT_HD float rt_act_df(int act, float x)
{
    switch (act) {
    case RT_ACT_RELU:
        return x > 0.0f ? 1.0f : 0.0f;
    case RT_ACT_GELU: {
        const float cdf = 0.5f * erfcf(-x * 0.70710678118654752f);
        const float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
        return cdf + x * pdf;
    }
    case RT_ACT_SILU: {
        const float s = 1.0f / (1.0f + expf(-x));
        return s * (1.0f + x * (1.0f - s));
    }
    case RT_ACT_TANH: { /* sech^2: 1 - tanh^2 cancels where |tanh| is near 1 */
        const float c = coshf(x);
        return 1.0f / (c * c);
    }
    default:
        return 1.0f;
    }
}

/* Periodic features (rt_k_periodic_*): the angle 2π f x, and the
 * derivative of (cos θ, sin θ)·(gc, gs) by θ. */
RT_HD float rt_periodic_theta(float f, float x) { return 6.28318530717958648f * f * x; }
RT_HD float rt_periodic_dtheta(float th, float gc, float gs)
{
    return cosf(th) * gs - sinf(th) * gc;
}

/* Piecewise-linear encoding (rt_k_ple_*): bin t of T with edges e[t],
 * e[t + 1]; *d (when not NULL) the derivative by x (0 where clipped). */
RT_HD float rt_ple_value(float x, const float *e, int64_t t, int64_t T, float *d)
{
    const float w = e[t + 1] - e[t];
    if (!(w > 0.0f)) { /* a bin of zero width: a step */
        if (d)
            *d = 0.0f;
        return x >= e[t] ? 1.0f : 0.0f;
    }
    const float v = (x - e[t]) / w;
    const bool low = t > 0 && v < 0.0f, high = t < T - 1 && v > 1.0f;
    if (d)
        *d = low || high ? 0.0f : 1.0f / w;
    return low ? 0.0f : high ? 1.0f : v;
}

#endif
