/* reduce.c — the element-wise reductions of the collectives, dst = dst op
 * src, cloned for AVX-512 / AVX2 / baseline at load time. */
#include "reduce.h"

#include <string.h>

#include "rt_bf16.h"

/* GCC only, as kernels/cpu_simd.h: clang 14 compiles target_clones with the
 * x86-64-vN levels but emits no resolver for an exported clone called from
 * another file (the fuzz build's link of rt_bf16_from_f32 failed) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__)
#define RT_MV __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RT_MV
#endif

#define DEFINE_REDUCE(NAME, T)                                                                    \
    RT_MV static void NAME##_sum(T *restrict d, const T *restrict s, size_t n)                  \
    {                                                                                             \
        for (size_t i = 0; i < n; i++)                                                            \
            d[i] += s[i];                                                                         \
    }                                                                                             \
    RT_MV static void NAME##_max(T *restrict d, const T *restrict s, size_t n)                  \
    {                                                                                             \
        for (size_t i = 0; i < n; i++)                                                            \
            d[i] = s[i] > d[i] ? s[i] : d[i];                                                     \
    }                                                                                             \
    RT_MV static void NAME##_min(T *restrict d, const T *restrict s, size_t n)                  \
    {                                                                                             \
        for (size_t i = 0; i < n; i++)                                                            \
            d[i] = s[i] < d[i] ? s[i] : d[i];                                                     \
    }                                                                                             \
    RT_MV static void NAME##_scale(T *restrict d, size_t n, double f)                           \
    {                                                                                             \
        for (size_t i = 0; i < n; i++) /* in double: integer averages truncate once */           \
            d[i] = (T)((double)d[i] * f);                                                         \
    }

RT_MV void rt_bf16_from_f32(uint16_t *restrict d, const float *restrict s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = rt_bf16_bits(s[i]);
}

RT_MV void rt_bf16_to_f32(float *restrict d, const uint16_t *restrict s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = rt_bf16_float(s[i]);
}

RT_MV static void bf16_sum(uint16_t *restrict d, const uint16_t *restrict s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = rt_bf16_bits(rt_bf16_float(d[i]) + rt_bf16_float(s[i]));
}

RT_MV static void bf16_max(uint16_t *restrict d, const uint16_t *restrict s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = rt_bf16_float(s[i]) > rt_bf16_float(d[i]) ? s[i] : d[i];
}

RT_MV static void bf16_min(uint16_t *restrict d, const uint16_t *restrict s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = rt_bf16_float(s[i]) < rt_bf16_float(d[i]) ? s[i] : d[i];
}

RT_MV static void bf16_scale(uint16_t *restrict d, size_t n, double f)
{
    for (size_t i = 0; i < n; i++)
        d[i] = rt_bf16_bits((float)((double)rt_bf16_float(d[i]) * f));
}

DEFINE_REDUCE(f32, float)
DEFINE_REDUCE(f64, double)
DEFINE_REDUCE(i32, int32_t)
DEFINE_REDUCE(i64, int64_t)

void rt_reduce(void *dst, const void *src, size_t n, rt_ctype t, rt_redop op)
{
    switch (t) {
#define CASE(TAG, NAME, T)                                                                        \
    case TAG:                                                                                     \
        if (op == RT_MAX)                                                                         \
            NAME##_max((T *)dst, (const T *)src, n);                                              \
        else if (op == RT_MIN)                                                                    \
            NAME##_min((T *)dst, (const T *)src, n);                                              \
        else                                                                                      \
            NAME##_sum((T *)dst, (const T *)src, n);                                              \
        break;
        CASE(RT_C_F32, f32, float)
        CASE(RT_C_F64, f64, double)
        CASE(RT_C_I32, i32, int32_t)
        CASE(RT_C_I64, i64, int64_t)
        CASE(RT_C_BF16, bf16, uint16_t)
#undef CASE
    }
}

void rt_scale(void *dst, size_t n, rt_ctype t, double f)
{
    switch (t) {
    case RT_C_F32: f32_scale((float *)dst, n, f); break;
    case RT_C_F64: f64_scale((double *)dst, n, f); break;
    case RT_C_I32: i32_scale((int32_t *)dst, n, f); break;
    case RT_C_I64: i64_scale((int64_t *)dst, n, f); break;
    case RT_C_BF16:
        bf16_scale((uint16_t *)dst, n, f);
        break;
    }
}
