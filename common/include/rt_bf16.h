/* rt_bf16.h — one float32 <-> bfloat16 rule for every place that converts
 * gradients: the CPU ring's RT_C_BF16 reductions (transport/reduce.c) and
 * the kernels' conversions for a GPU's bf16 allreduce (rt_k_to_bf16 on the
 * CPU and in CUDA), so that both round to the same bits.  bf16 is the top
 * half of a float32: rounded to nearest even, a NaN kept a quiet NaN
 * (never rounded into infinity); widening back is exact.  (The bf16 GEMMs
 * round while they pack, in kernels/cpu_gemm_bf16.c, with the CPU's own
 * instruction.) */
#ifndef RT_BF16_H
#define RT_BF16_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define RT_BF16_FN static __host__ __device__ __forceinline__
#else
#define RT_BF16_FN static inline
#endif

RT_BF16_FN uint16_t rt_bf16_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet */
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

RT_BF16_FN float rt_bf16_float(uint16_t h)
{
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#endif
