/* frame_order.c — frame order by anti-diagonal (see frame_order.h), in closed form.
 *
 * With A = min(S, J) and B = max(S, J), diagonal d holds
 *   d + 1 frames for d < A,   A frames for A <= d < B,   S + J - 1 - d after,
 * so the number of frames before diagonal d is
 *   before(d) = d(d+1)/2                              d <= A
 *             = A(A+1)/2 + (d - A)·A                  A <= d <= B
 *             = S·J - (S+J-d)(S+J-d-1)/2              d >= B
 * and a frame index is inverted by solving for d region by region. */
#include "frame_order.h"

#include <math.h>

#include "rt_status.h"

static size_t before(size_t S, size_t J, size_t d)
{
    size_t A = S < J ? S : J, B = S < J ? J : S;
    if (d <= A)
        return d * (d + 1) / 2;
    if (d <= B)
        return A * (A + 1) / 2 + (d - A) * A;
    size_t t = S + J - d;
    return S * J - t * (t - 1) / 2;
}

/* largest d with before(d) <= f */
static size_t diagonal_of(size_t S, size_t J, size_t f)
{
    size_t A = S < J ? S : J, B = S < J ? J : S;
    size_t d;
    if (f < A * (A + 1) / 2) {
        d = (size_t)((sqrt(8.0 * (double)f + 1.0) - 1.0) / 2.0);
    } else if (f < before(S, J, B)) {
        d = A + (f - A * (A + 1) / 2) / A;
    } else {
        /* frames after f: rest = S·J - f = t(t-1)/2 for the smallest t > ... */
        size_t rest = S * J - f;
        size_t t = (size_t)((1.0 + sqrt(8.0 * (double)rest + 1.0)) / 2.0);
        d = S + J - t;
    }
    /* floating point may be off by one near perfect squares: settle exactly */
    while (d > 0 && before(S, J, d) > f)
        d--;
    while (before(S, J, d + 1) <= f)
        d++;
    return d;
}

void rt_frame_order_frame(size_t S, size_t J, size_t f, size_t *s, size_t *j)
{
    RT_ASSERT(S > 0 && J > 0 && f < S * J);
    size_t d = diagonal_of(S, J, f);
    size_t s_lo = d + 1 > J ? d + 1 - J : 0;
    *s = s_lo + (f - before(S, J, d));
    *j = d - *s;
}

size_t rt_frame_order_index(size_t S, size_t J, size_t s, size_t j)
{
    RT_ASSERT(s < S && j < J);
    size_t d = s + j;
    size_t s_lo = d + 1 > J ? d + 1 - J : 0;
    return before(S, J, d) + (s - s_lo);
}
