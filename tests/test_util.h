/* test_util.h — helpers shared by the test binaries: a per-run random seed
 * (fresh each run, printed, reproducible with RT_TEST_SEED=<n>), random fills
 * and the tolerance comparison |got - ref| <= atol + rtol*|ref| that reports
 * the worst element. */
#ifndef RT_TEST_UTIL_H
#define RT_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Seed for this run: RT_TEST_SEED if set, else from the clock; printed once. */
uint64_t tu_seed(void);
/* xorshift-style generator seeded from tu_seed() and a salt. */
typedef struct tu_rng {
    uint64_t s;
} tu_rng;
tu_rng tu_rng_make(uint64_t salt);
double tu_uniform(tu_rng *r);                 /* [0, 1) */
double tu_range(tu_rng *r, double lo, double hi);
int64_t tu_int(tu_rng *r, int64_t lo, int64_t hi); /* [lo, hi] */
void tu_fill(tu_rng *r, float *p, size_t n, double lo, double hi);

/* Compare n values; on failure print the worst element (index, got, ref)
 * with `what` and return false. */
bool tu_close_f(const char *what, const float *got, const float *ref, size_t n, double atol,
                double rtol);
bool tu_close_d(const char *what, const double *got, const double *ref, size_t n, double atol,
                double rtol);

/* Write text to path (created or truncated); false when it could not. */
bool tu_write_text(const char *path, const char *text);

/* Fill with a NaN pattern so an output the op forgot to write is caught. */
void tu_poison(float *p, size_t n);

/* x rounded to bf16 (nearest even) as vcvtneps2bf16 rounds, numbers below
 * fp32's normal range to a zero of their sign: as a float, and as the 16
 * bits an RT_BF16 view stores (tu_bf16_bits: n values into y). */
float tu_bf16_round(float x);
void tu_bf16_bits(const float *x, size_t n, uint16_t *y);

#endif
