/* test_util.c — see test_util.h. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t tu_seed(void)
{
    static uint64_t seed;
    static bool done;
    if (!done) {
        const char *env = getenv("RT_TEST_SEED");
        if (env && *env) {
            seed = strtoull(env, NULL, 0);
        } else {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
        }
        done = true;
        printf("test seed: RT_TEST_SEED=%llu\n", (unsigned long long)seed);
        fflush(stdout);
    }
    return seed;
}

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

tu_rng tu_rng_make(uint64_t salt)
{
    tu_rng r = {tu_seed() ^ (salt * 0x2545F4914F6CDD1Dull)};
    splitmix(&r.s);
    return r;
}

double tu_uniform(tu_rng *r) { return (double)(splitmix(&r->s) >> 11) * (1.0 / 9007199254740992.0); }
double tu_range(tu_rng *r, double lo, double hi) { return lo + (hi - lo) * tu_uniform(r); }
int64_t tu_int(tu_rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(splitmix(&r->s) % (uint64_t)(hi - lo + 1));
}

void tu_fill(tu_rng *r, float *p, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)tu_range(r, lo, hi);
}

void tu_poison(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = NAN;
}

#define CLOSE_BODY(T)                                                                           \
    size_t worst = 0;                                                                           \
    double worst_excess = -1.0;                                                                 \
    bool ok = true;                                                                             \
    for (size_t i = 0; i < n; i++) {                                                            \
        double g = (double)got[i], e = (double)ref[i];                                          \
        double lim = atol + rtol * fabs(e);                                                     \
        double diff = fabs(g - e);                                                              \
        double excess = isnan(diff) ? INFINITY : diff - lim;                                    \
        if (excess > worst_excess) {                                                            \
            worst_excess = excess;                                                              \
            worst = i;                                                                          \
        }                                                                                       \
        if (!(diff <= lim))                                                                     \
            ok = false;                                                                         \
    }                                                                                           \
    if (!ok)                                                                                    \
        printf("%s: worst element %zu of %zu: got %.9g ref %.9g (|diff| %.3g > %.3g + %.3g*|ref|)\n", \
               what, worst, n, (double)got[worst], (double)ref[worst],                          \
               fabs((double)got[worst] - (double)ref[worst]), atol, rtol);                      \
    return ok;

bool tu_close_f(const char *what, const float *got, const float *ref, size_t n, double atol,
                double rtol)
{
    CLOSE_BODY(float)
}

bool tu_close_d(const char *what, const double *got, const double *ref, size_t n, double atol,
                double rtol)
{
    CLOSE_BODY(double)
}

bool tu_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

float tu_bf16_round(float x)
{
    if (fabsf(x) < 1.17549435e-38f)
        return copysignf(0.0f, x);
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

void tu_bf16_bits(const float *x, size_t n, uint16_t *y)
{
    for (size_t i = 0; i < n; i++) {
        const float v = tu_bf16_round(x[i]);
        uint32_t u;
        memcpy(&u, &v, 4);
        y[i] = (uint16_t)(u >> 16);
    }
}
