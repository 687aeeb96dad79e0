/* prep_quantile.c — the quantiles of each continuous column's training
 * rows that [model] continuous_norm = quantile maps to a standard normal
 * (sklearn's QuantileTransformer(output_distribution="normal") as the TabM
 * paper fits it: a little noise on the fitting rows so that a column of
 * few distinct values still spreads over the normal's range).
 *
 * Each column keeps a uniform sample of its training rows (all of them up
 * to the cap, then a reservoir drawn by a hash of the row's number, so the
 * sample does not depend on the machine); at the end the sample is sorted,
 * noise of 1e-3 of the column's standard deviation times a standard normal
 * value is added to the k-th smallest value (the normal drawn from k by
 * prep_quantile_noise, so a reference written elsewhere can add the same),
 * sorted again, and n_q = clamp(rows / 30, 10, 1000) quantiles (fewer, down
 * to 10, where the columns would hold over 10^6 together) are taken at
 * probabilities j / (n_q - 1) with numpy's default (linear) interpolation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prep_internal.h"

/* splitmix64: the hash behind the reservoir's draws and the noise */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static double unit(uint64_t x) { return (double)(mix(x) >> 11) * (1.0 / 9007199254740992.0); }

double prep_quantile_noise(int64_t k)
{
    /* Box-Muller on two draws from k: u1 in (0, 1] */
    const double u1 = 1.0 - unit(2 * (uint64_t)k), u2 = unit(2 * (uint64_t)k + 1);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

rt_status prep_quantile_init(prep_sample *s, int ncont, char *err)
{
    memset(s, 0, sizeof *s);
    const int64_t per = ncont > 0 ? PREP_QUANTILE_BUDGET / ncont : PREP_QUANTILE_SAMPLE;
    s->cap = per < 1000 ? 1000 : per > PREP_QUANTILE_SAMPLE ? PREP_QUANTILE_SAMPLE : per;
    s->ncont = ncont;
    return RT_OK;
    (void)err;
}

rt_status prep_quantile_add(prep_sample *s, uint64_t column, double x, char *err)
{
    if (s->n < s->cap) {
        if (s->n == s->len) {
            const int64_t len = s->len ? 2 * s->len : 1024;
            float *v = realloc(s->v, (size_t)(len < s->cap ? len : s->cap) * sizeof *v);
            if (!v)
                return rt_err(err, RT_ERR_NOMEM, "out of memory (the quantiles' sample)");
            s->v = v;
            s->len = len < s->cap ? len : s->cap;
        }
        s->v[s->n++] = (float)x;
        return RT_OK;
    }
    /* reservoir: row n replaces a kept one with probability cap / (n + 1) */
    const uint64_t j = mix(column * 0x100000001b3ull + (uint64_t)s->n) % (uint64_t)(s->n + 1);
    if (j < (uint64_t)s->cap)
        s->v[j] = (float)x;
    s->n++;
    return RT_OK;
}

static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

int32_t prep_quantile_count(int64_t rows, int ncont)
{
    /* at most PREP_QUANTILE_TOTAL over the columns (the manifest's size) */
    const int64_t most = ncont > 0 ? PREP_QUANTILE_TOTAL / ncont : 1000;
    int64_t q = rows / 30;
    q = q > 1000 ? 1000 : q;
    q = q > most ? most : q;
    return (int32_t)(q < 10 ? 10 : q);
}

rt_status prep_quantile_finish(prep_sample *s, double std, float **out, int32_t *nq, char *err)
{
    *out = NULL;
    *nq = 0;
    const int64_t m = s->n < s->cap ? s->n : s->cap;
    if (m == 0)
        return RT_OK; /* no training rows: no quantiles */
    qsort(s->v, (size_t)m, sizeof *s->v, cmp_float);
    const double noise = 1e-3 * (std > 0 ? std : 0);
    for (int64_t k = 0; k < m && noise > 0; k++)
        s->v[k] = (float)(s->v[k] + noise * prep_quantile_noise(k));
    qsort(s->v, (size_t)m, sizeof *s->v, cmp_float);
    const int32_t n = prep_quantile_count(s->n, s->ncont);
    float *q = malloc((size_t)n * sizeof *q);
    if (!q)
        return rt_err(err, RT_ERR_NOMEM, "out of memory (quantiles)");
    for (int32_t j = 0; j < n; j++) { /* numpy.percentile's linear interpolation */
        const double pos = (double)j / (n - 1) * (double)(m - 1);
        const int64_t lo = (int64_t)floor(pos);
        const double f = pos - (double)lo;
        q[j] = lo + 1 < m ? (float)(s->v[lo] + f * ((double)s->v[lo + 1] - s->v[lo])) : s->v[lo];
    }
    for (int32_t j = 1; j < n; j++) /* rounding must not unsort them */
        if (q[j] < q[j - 1])
            q[j] = q[j - 1];
    *out = q;
    *nq = n;
    return RT_OK;
}

void prep_quantile_free(prep_sample *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}
