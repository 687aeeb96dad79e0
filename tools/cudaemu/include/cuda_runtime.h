/* cuda_runtime.h — cudaemu: the runtime API plus, for C++ (the rewritten
 * .cu files), the device side: execution-space qualifiers, the built-in
 * index variables, barriers, warp intrinsics, atomics, device math and the
 * kernel launch that replaces <<<grid, block, shared, stream>>>.
 *
 * Every CUDA thread of a block is a fiber; a block's threads run round-robin
 * on one OS thread and switch only at __syncthreads and the warp-synchronous
 * intrinsics, which wait for exactly the threads the CUDA programming guide
 * says they wait for (tools/cudaemu/README.md). */
#ifndef CUDAEMU_CUDA_RUNTIME_H
#define CUDAEMU_CUDA_RUNTIME_H

#include "cuda_runtime_api.h"

#ifdef __cplusplus

#include <cmath>
#include <cstring>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include <math.h>

/* C++ conveniences of NVIDIA's cuda_runtime.h */
template <class T> static inline cudaError_t cudaMalloc(T **p, size_t bytes)
{
    return cudaMalloc((void **)p, bytes);
}
template <class T> static inline cudaError_t cudaMallocHost(T **p, size_t bytes)
{
    return cudaMallocHost((void **)p, bytes);
}
template <class T> static inline cudaError_t cudaHostAlloc(T **p, size_t bytes, unsigned int flags)
{
    return cudaHostAlloc((void **)p, bytes, flags);
}

/* ---- qualifiers ------------------------------------------------------------ */

#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
/* Shared memory: one instance per OS thread, and an OS thread runs one block
 * at a time, so every block sees its own. */
#define __shared__ static thread_local

/* CUDA's vector type for 16-byte loads and stores: a float4 access to an
 * address not 16-byte aligned is an error on a GPU, so here too (UBSan's
 * alignment check sees the alignas). */
struct alignas(16) float4 {
    float x, y, z, w;
};

struct uint3 {
    unsigned int x, y, z;
};
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
        : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

extern thread_local uint3 threadIdx;
extern thread_local uint3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;
static constexpr int warpSize = 32;

namespace cudaemu {

enum warp_kind { W_SHFL, W_SHFL_UP, W_SHFL_DOWN, W_SHFL_XOR, W_BALLOT, W_ANY, W_ALL, W_SYNC };

void syncthreads(const char *file, int line);
/* One warp-synchronous operation for the calling lane: waits for the lanes
 * of mask, returns this lane's result (raw bits; all ones for a value read
 * from a lane outside mask). */
uint64_t warp_op(warp_kind kind, const char *file, int line, unsigned mask, uint64_t value,
                 int bytes, int arg, int width);
unsigned activemask();
void *dynamic_shared();

typedef void (*tramp_fn)(const void *closure);
cudaError_t launch(const char *name, dim3 grid, dim3 block, size_t shared, cudaStream_t s,
                   std::shared_ptr<const void> closure, tramp_fn tramp);

template <class... P> struct closure {
    void (*kernel)(P...);
    std::tuple<std::decay_t<P>...> args;
};

template <class... P> void run_closure(const void *c)
{
    const closure<P...> *k = static_cast<const closure<P...> *>(c);
    /* each CUDA thread gets its own copy of the parameters */
    std::tuple<std::decay_t<P>...> mine = k->args;
    std::apply(k->kernel, mine);
}

template <class... P> struct launcher {
    const char *name;
    void (*kernel)(P...);
    dim3 grid, block;
    size_t shared;
    cudaStream_t stream;
    /* the parameters convert at the call, exactly as in a call of the kernel */
    void operator()(std::decay_t<P>... a) const
    {
        auto c = std::make_shared<closure<P...>>(closure<P...>{kernel, std::tuple<std::decay_t<P>...>(a...)});
        launch(name, grid, block, shared, stream, c, &run_closure<P...>);
    }
};

template <class... P> struct launch_config {
    const char *name;
    void (*kernel)(P...);
    launcher<P...> operator()(dim3 grid, dim3 block, size_t shared = 0, cudaStream_t s = 0) const
    {
        return launcher<P...>{name, kernel, grid, block, shared, s};
    }
};

template <class... P> launch_config<P...> launcher_for(const char *name, void (*k)(P...))
{
    return launch_config<P...>{name, k};
}

template <class T> T warp_value(warp_kind kind, const char *file, int line, unsigned mask, T v,
                                int arg, int width)
{
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "shuffles move 4- or 8-byte values");
    uint64_t raw = 0;
    memcpy(&raw, &v, sizeof v);
    raw = warp_op(kind, file, line, mask, raw, (int)sizeof v, arg, width);
    T out;
    memcpy(&out, &raw, sizeof out);
    return out;
}

template <class T> T atomic_cas_float(T *p, T v, T (*f)(T, T))
{
    typedef std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t> U;
    U *u = reinterpret_cast<U *>(p);
    U old = __atomic_load_n(u, __ATOMIC_RELAXED), want;
    T o;
    do {
        memcpy(&o, &old, sizeof o);
        T n = f(o, v);
        memcpy(&want, &n, sizeof want);
    } while (!__atomic_compare_exchange_n(u, &old, want, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
    return o;
}

} /* namespace cudaemu */

/* <<<g, b, s, st>>> is rewritten to CUDAEMU_LAUNCH(kernel)(g, b, s, st) (cu2cpp.cmake) */
#define CUDAEMU_LAUNCH(...) cudaemu::launcher_for(#__VA_ARGS__, __VA_ARGS__)
#define CUDAEMU_DYNAMIC_SHARED(T) ((T *)cudaemu::dynamic_shared())

/* ---- barriers and warp intrinsics ---------------------------------------- */

#define __syncthreads() cudaemu::syncthreads(__FILE__, __LINE__)
#define __syncwarp(...) cudaemu_syncwarp(__FILE__, __LINE__, ##__VA_ARGS__)
static inline void cudaemu_syncwarp(const char *f, int l, unsigned mask = 0xffffffffu)
{
    cudaemu::warp_op(cudaemu::W_SYNC, f, l, mask, 0, 4, 0, 32);
}
#define __shfl_sync(mask, v, ...) cudaemu_shfl(cudaemu::W_SHFL, __FILE__, __LINE__, mask, v, __VA_ARGS__)
#define __shfl_up_sync(mask, v, ...) cudaemu_shfl(cudaemu::W_SHFL_UP, __FILE__, __LINE__, mask, v, __VA_ARGS__)
#define __shfl_down_sync(mask, v, ...) cudaemu_shfl(cudaemu::W_SHFL_DOWN, __FILE__, __LINE__, mask, v, __VA_ARGS__)
#define __shfl_xor_sync(mask, v, ...) cudaemu_shfl(cudaemu::W_SHFL_XOR, __FILE__, __LINE__, mask, v, __VA_ARGS__)
template <class T>
static inline T cudaemu_shfl(cudaemu::warp_kind k, const char *f, int l, unsigned mask, T v, int arg,
                             int width = 32)
{
    return cudaemu::warp_value(k, f, l, mask, v, arg, width);
}
#define __ballot_sync(mask, pred) \
    ((unsigned)cudaemu::warp_op(cudaemu::W_BALLOT, __FILE__, __LINE__, mask, (pred) != 0, 4, 0, 32))
#define __any_sync(mask, pred) \
    ((int)cudaemu::warp_op(cudaemu::W_ANY, __FILE__, __LINE__, mask, (pred) != 0, 4, 0, 32))
#define __all_sync(mask, pred) \
    ((int)cudaemu::warp_op(cudaemu::W_ALL, __FILE__, __LINE__, mask, (pred) != 0, 4, 0, 32))
#define __activemask() cudaemu::activemask()
#define __threadfence() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define __threadfence_block() __atomic_thread_fence(__ATOMIC_SEQ_CST)

/* ---- atomics ------------------------------------------------------------- */

static inline int atomicAdd(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static inline float atomicAdd(float *p, float v)
{
    return cudaemu::atomic_cas_float<float>(p, v, [](float a, float b) { return a + b; });
}
static inline double atomicAdd(double *p, double v)
{
    return cudaemu::atomic_cas_float<double>(p, v, [](double a, double b) { return a + b; });
}
static inline int atomicSub(int *p, int v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned atomicSub(unsigned *p, unsigned v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
template <class T> static inline T atomicExch(T *p, T v)
{
    T old;
    __atomic_exchange(p, &v, &old, __ATOMIC_SEQ_CST);
    return old;
}
template <class T> static inline T atomicCAS(T *p, T cmp, T v)
{
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp;
}
template <class T> static inline T atomicMax(T *p, T v)
{
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        ;
    return old;
}
template <class T> static inline T atomicMin(T *p, T v)
{
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (old > v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        ;
    return old;
}
template <class T> static inline T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }
template <class T> static inline T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
template <class T> static inline T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); }

/* ---- device math and bit functions --------------------------------------- */

static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static inline long min(long a, long b) { return a < b ? a : b; }
static inline long max(long a, long b) { return a > b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
/* glibc declares __expf and friends itself: map the CUDA intrinsics by name */
#define __expf(x) expf(x)
#define __logf(x) logf(x)
#define __powf(x, y) powf(x, y)
static inline float __fdividef(float x, float y) { return x / y; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline int __float_as_int(float x) { int i; memcpy(&i, &x, 4); return i; }
static inline unsigned __float_as_uint(float x) { unsigned i; memcpy(&i, &x, 4); return i; }
static inline float __int_as_float(int i) { float x; memcpy(&x, &i, 4); return x; }
static inline float __uint_as_float(unsigned i) { float x; memcpy(&x, &i, 4); return x; }
static inline long long __double_as_longlong(double x) { long long i; memcpy(&i, &x, 8); return i; }
static inline double __longlong_as_double(long long i) { double x; memcpy(&x, &i, 8); return x; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
template <class T> static inline T __ldg(const T *p) { return *p; }

#endif /* __cplusplus */
#endif
