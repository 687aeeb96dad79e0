/* rt_kernels.h — the math of the tabular model, one API over two
 * implementations: plain C on the CPU (OpenBLAS sgemm for the GEMMs; the
 * reference and the fallback) and CUDA (cuBLAS/cuBLASLt plus our kernels).
 *
 * Every op takes a kernel context (device, stream, library handles, thread
 * count) and device-agnostic views (pointer, shape, device).  Pointers are
 * device pointers when the context is CUDA.  On the CPU an op has finished
 * when it returns; on CUDA it is enqueued on the context's stream, never
 * synchronises, allocates nothing and is therefore capturable in a CUDA
 * graph.  Shape mismatches are programming errors (RT_ASSERT); CUDA launch
 * errors are collected by rt_kctx_check().
 *
 * Matrices are row-major.  A dense layer's kernel is stored (out, in), as in
 * llm.c and PyTorch: y (B, out) = x (B, in) · wᵀ + b.
 * (Model: llm.c train_gpt2.c / dev/cuda kernels with shape comments.) */
#ifndef RT_KERNELS_H
#define RT_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rt_device { RT_DEVICE_CPU = 0, RT_DEVICE_CUDA = 1 } rt_device;
typedef enum rt_dtype { RT_F32 = 0, RT_I32 = 1 } rt_dtype;

/* A 2-D view: rows x cols, `ld` elements between row starts (ld >= cols). */
typedef struct rt_view {
    void *p;
    int64_t rows, cols, ld;
    rt_dtype dtype;
    rt_device dev;
} rt_view;

static inline rt_view rt_vf32(float *p, int64_t rows, int64_t cols, int64_t ld, rt_device dev)
{
    rt_view v = {p, rows, cols, ld, RT_F32, dev};
    return v;
}
static inline rt_view rt_vi32(int32_t *p, int64_t rows, int64_t cols, int64_t ld, rt_device dev)
{
    rt_view v = {p, rows, cols, ld, RT_I32, dev};
    return v;
}
/* Columns [c0, c0+n) of v, same rows and ld. */
static inline rt_view rt_view_cols(rt_view v, int64_t c0, int64_t n)
{
    size_t esz = 4; /* both dtypes are 4 bytes */
    rt_view r = v;
    r.p = v.p ? (char *)v.p + (size_t)c0 * esz : NULL;
    r.cols = n;
    return r;
}
/* The first n rows of v. */
static inline rt_view rt_view_rows(rt_view v, int64_t n)
{
    rt_view r = v;
    r.rows = n;
    return r;
}
#define RT_F(v) ((float *)(v).p)
#define RT_I(v) ((int32_t *)(v).p)

/* ---- context and memory ------------------------------------------------ */

typedef struct rt_kctx rt_kctx;

/* Create a context.  CPU: `threads` worker threads for BLAS and the
 * elementwise kernels (0 = all cores).  CUDA: device `threads` is ignored;
 * the current CUDA device is used with a new stream, cuBLAS and cuBLASLt
 * handles and a cuBLASLt workspace.  RT_ERR_UNSUPPORTED when CUDA is not
 * built in or no device is present. */
rt_status rt_kctx_create(rt_device dev, int threads, rt_kctx **out, char *err);
void rt_kctx_destroy(rt_kctx *ctx);
rt_device rt_kctx_device(const rt_kctx *ctx);
int rt_kctx_threads(const rt_kctx *ctx);
/* cudaStream_t of a CUDA context, NULL on the CPU. */
void *rt_kctx_stream(rt_kctx *ctx);
/* Wait for all enqueued work and report any asynchronous error. */
rt_status rt_kctx_sync(rt_kctx *ctx, char *err);
/* Report (and clear) a launch error without waiting. */
rt_status rt_kctx_check(rt_kctx *ctx, char *err);
/* The name of the CPU kernels the BLAS library (OpenBLAS) runs in this
 * process ("Zen", "SkylakeX", "Haswell", "Prescott", ...).  ringtrain's own
 * layers do not use it (rt_cpu_gemm_kernel); programs under `exec` may. */
const char *rt_cpu_blas_core(void);
/* ringtrain's GEMM micro-kernel on this CPU ("avx512", "avx2", "scalar"). */
const char *rt_cpu_gemm_kernel(void);

/* What an x86 CPU can run (and its OS saves the registers of). */
typedef struct {
    bool amd;      /* AMD: OpenBLAS's Zen kernels rather than Haswell's */
    bool avx;
    bool avx2_fma; /* AVX2 and FMA3 */
    bool avx512;   /* AVX-512 F, BW, DQ and VL */
} rt_cpu_isa;
rt_cpu_isa rt_cpu_isa_detect(void);
/* The OpenBLAS core type (OPENBLAS_CORETYPE) to give a CPU with these
 * features when OpenBLAS itself picked `picked`: the best it has for them,
 * or NULL when its pick is as good (or a name this table does not know). */
const char *rt_blas_core_pick(rt_cpu_isa isa, const char *picked);
/* For this process's CPU and OpenBLAS: the core type to set for programs
 * started from here, NULL when OpenBLAS's pick is right or the user set
 * OPENBLAS_CORETYPE (which always wins). */
const char *rt_blas_core_advice(void);
/* Programs that call OpenBLAS themselves (bench/): when rt_blas_core_advice
 * has a core, say so on stderr and execute argv again with it set; returns
 * only when nothing was done (or the re-execution failed). */
void rt_blas_reexec(char **argv);
/* Use TF32 tensor cores for fp32 GEMMs on CUDA (default off: exact fp32). */
void rt_kctx_set_tf32(rt_kctx *ctx, bool on);

/* Events: a point in the context's stream.  Recording enqueues it;
 * rt_kevent_sync waits on the host until the work before it is done.  On the
 * CPU (where every op has finished when it returns) both do nothing. */
typedef struct rt_kevent rt_kevent;
rt_status rt_kevent_create(rt_kctx *ctx, rt_kevent **out, char *err);
void rt_kevent_destroy(rt_kctx *ctx, rt_kevent *ev);
void rt_kevent_record(rt_kctx *ctx, rt_kevent *ev);
rt_status rt_kevent_sync(rt_kctx *ctx, rt_kevent *ev, char *err);

/* Timing marks, for a timeline of the device's work (rt_trace): an event
 * from rt_kevent_create_timer records the time the stream reaches it —
 * the compute stream, or with comm the communication stream — also when
 * marked during a graph capture, where each replay of the graph records it
 * again.  rt_kevent_ms gives the milliseconds from mark a to mark b, waiting
 * for b.  The CPU has none (RT_ERR_UNSUPPORTED; marking does nothing). */
rt_status rt_kevent_create_timer(rt_kctx *ctx, rt_kevent **out, char *err);
void rt_kevent_mark(rt_kctx *ctx, rt_kevent *ev, bool comm);
rt_status rt_kevent_ms(rt_kctx *ctx, rt_kevent *a, rt_kevent *b, double *ms, char *err);

/* The communication stream of a CUDA context (NULL on the CPU): collectives
 * run there so that they overlap the compute stream.  rt_kctx_fork makes
 * the communication stream wait for the work enqueued on the compute stream
 * so far; rt_kctx_join makes the compute stream wait for the communication
 * stream's.  Both are stream-ordered (no host wait) and capturable. */
void *rt_kctx_comm_stream(rt_kctx *ctx);
void rt_kctx_fork(rt_kctx *ctx);
void rt_kctx_join(rt_kctx *ctx);

/* CUDA graphs: everything enqueued on ctx between begin and end is recorded
 * (nothing runs), then replayed by rt_kgraph_launch.  RT_ERR_UNSUPPORTED on
 * a CPU context.  Ops, rt_kmemcpy/rt_kmemset and the model's step calls are
 * all capturable. */
typedef struct rt_kgraph rt_kgraph;
rt_status rt_kctx_capture_begin(rt_kctx *ctx, char *err);
rt_status rt_kctx_capture_end(rt_kctx *ctx, rt_kgraph **out, char *err);
rt_status rt_kgraph_launch(rt_kctx *ctx, rt_kgraph *g, char *err);
void rt_kgraph_destroy(rt_kgraph *g);

/* True when CUDA is built in and at least one device is visible. */
bool rt_cuda_available(void);
/* Number of visible CUDA devices (0 without CUDA). */
int rt_cuda_device_count_visible(void);
const char *rt_cuda_device_name(char *buf, size_t len);
/* Make device `dev` current for this thread (before rt_kctx_create). */
rt_status rt_cuda_set_device(int dev, char *err);

/* Memory of the context's device; host memory is 64-byte aligned.
 * rt_kmalloc_host returns pinned memory on CUDA (for async copies). */
rt_status rt_kmalloc(rt_kctx *ctx, size_t bytes, void **out);
void rt_kfree(rt_kctx *ctx, void *p);
rt_status rt_kmalloc_host(rt_kctx *ctx, size_t bytes, void **out);
void rt_kfree_host(rt_kctx *ctx, void *p);
typedef enum rt_copy { RT_H2D, RT_D2H, RT_D2D } rt_copy;
/* Asynchronous on CUDA (stream-ordered); synchronous memcpy on the CPU. */
void rt_kmemcpy(rt_kctx *ctx, void *dst, const void *src, size_t bytes, rt_copy kind);
void rt_kmemset(rt_kctx *ctx, void *p, int value, size_t bytes);

/* ---- ops ----------------------------------------------------------------
 * Shapes: B rows (batch), C categorical columns, d embedding dim, F features. */

/* Embedding gather for all categorical columns at once.
 *   idx   (B, C) i32, 0 <= idx[b,c] < rows of column c's table
 *   rowbase (C) i32: first row of column c's table in `table`
 *   table (R, d) f32: all tables stacked
 *   out   (B, >= C*d): out[b, c*d + j] = table[rowbase[c] + idx[b,c], j] */
void rt_k_embed_fwd(rt_kctx *ctx, rt_view idx, const int32_t *rowbase, rt_view table, rt_view out);

/* Embedding backward: dtable (R, d) = 0, then for every b, c:
 * dtable[rowbase[c] + idx[b,c], :] += dout[b, c*d : (c+1)*d].  Repeated
 * indices accumulate.  The CPU order is fixed (deterministic). */
void rt_k_embed_bwd(rt_kctx *ctx, rt_view idx, const int32_t *rowbase, rt_view dout,
                    rt_view dtable);

/* Batch normalisation over the rows of x (B, F), per feature (Keras
 * BatchNormalization: biased batch variance, moving statistics updated as
 * run = run*momentum + batch*(1-momentum)).
 *   train: normalise with batch statistics, save mean and 1/sqrt(var+eps)
 *          (F each) for backward, update run_mean/run_var;
 *   eval:  normalise with run_mean/run_var; save_* may be NULL.
 *   y (B, F) may be a column view of a wider matrix. */
void rt_k_bn_fwd(rt_kctx *ctx, rt_view x, const float *gamma, const float *beta, float *run_mean,
                 float *run_var, float momentum, float eps, bool train, float *save_mean,
                 float *save_invstd, rt_view y);

/* Training-mode forward normalising with given batch statistics (mean and
 * biased variance per feature, double: synchronized BN's global batch), y
 * exactly as rt_k_bn_fwd would give had it computed the same values itself.
 * CPU contexts only. */
void rt_k_bn_fwd_given(rt_kctx *ctx, rt_view x, const float *gamma, const float *beta,
                       const double *mean, const double *var, float eps, rt_view y);

/* Backward of training-mode batch norm: dgamma, dbeta (F) are written;
 * dx (B, F) is written when dx.p != NULL. */
void rt_k_bn_bwd(rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma, const float *save_mean,
                 const float *save_invstd, float *dgamma, float *dbeta, rt_view dx);

typedef enum rt_act { RT_ACT_NONE = 0, RT_ACT_RELU = 1 } rt_act;

/* Dense forward: y (B, out) = act(x (B, in) · wᵀ + b); w (out, in), b (out). */
void rt_k_dense_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act,
                    rt_view y);

/* Dense backward.  dy (B, out) is overwritten with dz = dy * act'(y), where y
 * is this layer's forward output.  Writes dw (out, in) = dzᵀ·x,
 * db (out) = column sums of dz, and dx (B, in) = dz·w when dx.p != NULL. */
void rt_k_dense_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act, rt_view dy,
                    float *dw, float *db, rt_view dx);

/* Inverted dropout in place: x[b, j] *= keep / (1 - rate), keep drawn from
 * rt_rng_uniform(seed, stream, *step, b*cols + j) >= rate.  The same call
 * applies the mask in forward and to the gradient in backward.  `step` points
 * to the step counter in the context's memory (so a captured graph reads the
 * current value).  rate 0 is the identity. */
void rt_k_dropout(rt_kctx *ctx, rt_view x, float rate, uint64_t seed, uint32_t stream,
                  const int64_t *step);

/* Scaled-sigmoid head: pred = scale * sigmoid(z), n values. */
void rt_k_head_fwd(rt_kctx *ctx, const float *z, int64_t n, float scale, float *pred);
/* dz = dpred * scale * s * (1 - s), with s = pred / scale. */
void rt_k_head_bwd(rt_kctx *ctx, const float *pred, const float *dpred, int64_t n, float scale,
                   float *dz);

/* Mean absolute error: acc[0] += sum |pred - y| (double, fixed order),
 * acc[1] += n; dpred = sign(pred - y) / n when dpred != NULL (sign(0) = 0,
 * as TF's). */
void rt_k_mae(rt_kctx *ctx, const float *pred, const float *y, int64_t n, float *dpred,
              double *acc);

/* exp-RMSPE partial sums over the rows with y > 0.001 (the seed's
 * definition on log-sales): acc[0] += sum ((e^y - e^p) / e^y)^2,
 * acc[1] += count.  exp_rmspe = sqrt(acc[0] / acc[1]) after summing ranks. */
void rt_k_rmspe(rt_kctx *ctx, const float *pred, const float *y, int64_t n, double *acc);

/* One parameter tensor's range in the flat buffer and its L2 coefficient. */
typedef struct rt_adam_seg {
    int64_t off, len;
    float l2; /* loss += l2 * sum(w^2), so grad += 2 * l2 * w */
} rt_adam_seg;

typedef struct rt_adam_hp {
    float lr, beta1, beta2, eps;
    float grad_scale; /* applied to g first: 1/world for averaged gradients */
} rt_adam_hp;

/* Adam with L2 over the whole flat buffer in one launch (Keras/TF2 form),
 * the hyper-parameters read from *hp in the context's memory when the op
 * runs (so a captured graph picks up new values):
 *   t = *step + 1;  g' = g*grad_scale + 2*l2*p
 *   m = b1*m + (1-b1)*g';  v = b2*v + (1-b2)*g'^2
 *   p -= lr * sqrt(1-b2^t)/(1-b1^t) * m / (sqrt(v) + eps)
 * segs (nseg, in the context's memory) cover [0, n) in order, no gaps. */
void rt_k_adam(rt_kctx *ctx, float *p, const float *g, float *m, float *v, int64_t n,
               const rt_adam_seg *segs, int nseg, const rt_adam_hp *hp, const int64_t *step);

/* *step += 1 (in the context's memory). */
void rt_k_step_incr(rt_kctx *ctx, int64_t *step);

/* Scale n floats in place: p *= s. */
void rt_k_scale(rt_kctx *ctx, float *p, int64_t n, float s);

#ifdef __cplusplus
}
#endif

#endif
