/* rt_rng.h — Philox4x32-10 counter-based random numbers, identical on the CPU
 * and in CUDA kernels (Salmon et al., "Parallel random numbers: as easy as
 * 1, 2, 3", SC'11; checked against Random123's known-answer vectors in
 * tests/test_kernels_cpu.c).
 *
 * A counter-based generator has no state: the value for element e of stream
 * s at step t is a pure function of (seed, s, t, e), so dropout masks can be
 * recomputed in backward instead of stored, any element can be drawn in any
 * order by any thread, and the CPU and GPU builds draw the same numbers. */
#ifndef RT_RNG_H
#define RT_RNG_H

#include <stdint.h>

#if defined(__CUDACC__)
#define RT_HD __host__ __device__ __forceinline__
#else
#define RT_HD static inline
#endif

typedef struct rt_u32x4 {
    uint32_t v[4];
} rt_u32x4;

RT_HD void rt_philox_mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
    uint64_t p = (uint64_t)a * b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
}

/* One Philox4x32-10 block: 128-bit counter, 64-bit key -> 128 random bits. */
RT_HD rt_u32x4 rt_philox4x32(rt_u32x4 ctr, uint32_t k0, uint32_t k1)
{
    for (int r = 0; r < 10; r++) {
        uint32_t hi0, lo0, hi1, lo1;
        rt_philox_mulhilo(0xD2511F53u, ctr.v[0], &hi0, &lo0);
        rt_philox_mulhilo(0xCD9E8D57u, ctr.v[2], &hi1, &lo1);
        rt_u32x4 n = {{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
        ctr = n;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return ctr;
}

/* 32 random bits for element `e` of stream `stream` at step `step`, under
 * `seed`.  Four consecutive elements share one Philox block. */
RT_HD uint32_t rt_rng_u32(uint64_t seed, uint32_t stream, uint64_t step, uint64_t e)
{
    uint64_t q = e >> 2;
    rt_u32x4 c = {{(uint32_t)q, (uint32_t)(q >> 32), (uint32_t)step, (uint32_t)(step >> 32)}};
    rt_u32x4 r = rt_philox4x32(c, (uint32_t)seed ^ stream, (uint32_t)(seed >> 32));
    return r.v[e & 3];
}

/* Uniform float in [0, 1) with 24 random bits. */
RT_HD float rt_rng_uniform(uint64_t seed, uint32_t stream, uint64_t step, uint64_t e)
{
    return (float)(rt_rng_u32(seed, stream, step, e) >> 8) * (1.0f / 16777216.0f);
}

#endif
