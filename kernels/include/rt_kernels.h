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

#include "rt_model_names.h"
#include "rt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rt_device { RT_DEVICE_CPU = 0, RT_DEVICE_CUDA = 1 } rt_device;
/* RT_BF16: bfloat16 values as 16 bits (uint16_t), rounded to nearest even
 * as the bf16 GEMMs round their inputs; CPU views only, where the context
 * runs bf16 GEMMs (rt_kctx_bf16_store), and only where an op says so. */
typedef enum rt_dtype { RT_F32 = 0, RT_I32 = 1, RT_BF16 = 2 } rt_dtype;

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
#define RT_H(v) ((uint16_t *)(v).p)

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
/* bf16 GEMMs ([model] precision = bf16): every GEMM's inputs rounded to
 * bf16, its sums in fp32; everything else stays fp32.  On a CPU with
 * AVX512_BF16 (cpu_gemm_bf16.c) and on a GPU with bf16 tensor cores
 * (compute capability 8.0 on: cuBLAS's CUBLAS_COMPUTE_32F_FAST_16BF, which
 * may also round to TF32 where it chooses); false when asked for where it
 * cannot run (the GEMMs stay fp32, or TF32 as rt_kctx_set_tf32 says). */
bool rt_kctx_set_bf16(rt_kctx *ctx, bool on);
bool rt_kctx_bf16(const rt_kctx *ctx);
/* Whether a model on this context keeps the tensors that only ever are GEMM
 * inputs (TabM's scaled inputs and its linear layers' output gradients) in
 * bf16 (RT_BF16 views): what the GEMM would round them to anyway, so the
 * same bits with half the bytes.  True where rt_kctx_bf16 is on a CPU,
 * unless turned off (tests compare both); read when a model is created. */
void rt_kctx_set_bf16_store(rt_kctx *ctx, bool on);
bool rt_kctx_bf16_store(const rt_kctx *ctx);
/* Whether this CPU can run the bf16 GEMMs (and, as rt_cpu_gemm_kernel, the
 * name of their kernel: "amx-bf16" or "avx512-bf16"; NULL when it cannot). */
const char *rt_cpu_bf16_kernel(void);

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

/* Bytes the context may still allocate on its device: the GPU's free
 * memory, or on the CPU the memory the kernel reports available
 * (MemAvailable) within what the process's cgroup still allows. */
rt_status rt_kctx_mem_available(rt_kctx *ctx, int64_t *bytes, char *err);

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

/* Where each categorical column's embedding table lives and where its
 * vectors go: table c is (vocab, dim) row-major at element toff of the
 * tables buffer; its vector for row b goes to out[b, ooff .. ooff+dim).
 * Columns may have different widths (fastai's rule) and their outputs
 * need not be adjacent (FT-Transformer's token slots). */
typedef struct rt_embed_col {
    int64_t toff;
    int32_t vocab, dim, ooff, pad;
} rt_embed_col;

/* Embedding gather for all categorical columns at once.
 *   idx    (B, C) i32, 0 <= idx[b,c] < cols[c].vocab
 *   cols   (C) in the context's memory
 *   tables the parameters (ntab floats: every table)
 *   out    (B, >= max ooff+dim): out[b, ooff_c + j] = table_c[idx[b,c], j] */
void rt_k_embed_fwd(rt_kctx *ctx, rt_view idx, const rt_embed_col *cols, const float *tables,
                    rt_view out);

/* Embedding backward: dtables[0 .. ntab) = 0, then for every b, c:
 * table_c's gradient row idx[b,c] += dout[b, ooff_c .. ooff_c+dim).
 * Repeated indices accumulate.  The CPU order is fixed (deterministic). */
void rt_k_embed_bwd(rt_kctx *ctx, rt_view idx, const rt_embed_col *cols, rt_view dout,
                    float *dtables, int64_t ntab);

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

/* Activations (rt_act: rt_model_names.h).  GELU is the exact (erf) form,
 * PyTorch's default. */

/* dx of synchronized batch norm (the statistics were every rank's rows):
 * dx = gamma*invstd/count * (count*dy - sum_dy - xhat*sum_dy_xhat), the sums
 * (F each, double) and count over the global batch.  CPU contexts only. */
void rt_k_bn_bwd_given(rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma,
                       const float *save_mean, const float *save_invstd, const double *sum_dy,
                       const double *sum_dy_xhat, double count, rt_view dx);

/* Dense forward: y (B, out) = act(x (B, in) · wᵀ + b); w (out, in), b (out);
 * act is RT_ACT_NONE or RT_ACT_RELU (the others are their own op).  On a
 * CPU context, b may be NULL (no bias) and x RT_BF16 (rt_kctx_bf16). */
void rt_k_dense_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act,
                    rt_view y);

/* Dense backward.  dy (B, out) is overwritten with dz = dy * act'(y), where y
 * is this layer's forward output.  Writes dw (out, in) = dzᵀ·x,
 * db (out) = column sums of dz, and dx (B, in) = dz·w when dx.p != NULL.
 * On a CPU context, db may be NULL (no bias: not summed), and x and dy
 * RT_BF16 (rt_kctx_bf16; dy only with RT_ACT_NONE and db NULL, so that it
 * is only read). */
void rt_k_dense_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act, rt_view dy,
                    float *dw, float *db, rt_view dx);

/* Inverted dropout in place: x[b, j] *= keep / (1 - rate), keep drawn from
 * rt_rng_uniform(seed, stream, *step, b*cols + j) >= rate.  The same call
 * applies the mask in forward and to the gradient in backward.  `step` points
 * to the step counter in the context's memory (so a captured graph reads the
 * current value).  rate 0 is the identity. */
void rt_k_dropout(rt_kctx *ctx, rt_view x, float rate, uint64_t seed, uint32_t stream,
                  const int64_t *step);

/* ---- the layer graph's other ops (rt_model's layer kinds) ---------------- */

/* y = act(x) elementwise; y may be x. */
void rt_k_act_fwd(rt_kctx *ctx, rt_act act, rt_view x, rt_view y);
/* dx = dy * act'(x), x the forward's input; dx may be dy.  RT_ACT_RELU
 * selects (dx = x > 0 ? dy : 0), and its output serves as x as well (y > 0
 * exactly where x > 0: a dropout applied to y in place then masks too). */
void rt_k_act_bwd(rt_kctx *ctx, rt_act act, rt_view x, rt_view dy, rt_view dx);

/* ReGLU (Shazeer 2020, FT-Transformer's feed-forward): x (B, 2h) = [a | b],
 * y (B, h) = a * relu(b). */
void rt_k_reglu_fwd(rt_kctx *ctx, rt_view x, rt_view y);
/* dx (B, 2h) = [dy * relu(b) | dy * a * (b > 0)]. */
void rt_k_reglu_bwd(rt_kctx *ctx, rt_view x, rt_view dy, rt_view dx);

/* Layer normalisation of each row of x (B, F): y = (x - mean) * rstd *
 * gamma + beta with rstd = 1/sqrt(biased var + eps); mean and rstd (B each)
 * are saved for backward. */
void rt_k_ln_fwd(rt_kctx *ctx, rt_view x, const float *gamma, const float *beta, float eps,
                 float *save_mean, float *save_rstd, rt_view y);
/* dgamma, dbeta (F) = column sums of dy * xhat and dy (fixed order);
 * dx (B, F) = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma. */
void rt_k_ln_bwd(rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma, const float *save_mean,
                 const float *save_rstd, float *dgamma, float *dbeta, rt_view dx);

/* Elementwise on views of one shape: y = a + b, y = a * b, y += a or
 * y = a (b unused by the last two).  y may be a or b. */
typedef enum rt_ew { RT_EW_ADD = 0, RT_EW_MUL = 1, RT_EW_ACC = 2, RT_EW_COPY = 3 } rt_ew;
void rt_k_ew(rt_kctx *ctx, rt_ew op, rt_view a, rt_view b, rt_view y);

/* y[r, j] += b[j] for a (B, n) view. */
void rt_k_bias_add(rt_kctx *ctx, const float *b, rt_view y);
/* out[j] = sum over the rows of dy[r, j] (fixed order). */
void rt_k_colsum(rt_kctx *ctx, rt_view dy, float *out);

/* Feature tokens (rtdl's NumericalFeatureTokenizer): y (B, n*d) holds n
 * tokens of d per row, y[r, i*d + j] = x[r, i] * w[i*d + j] + b[i*d + j];
 * x.p == NULL stands for ones (the [CLS] token), b == NULL for zeros. */
void rt_k_tokens_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, int64_t d,
                     rt_view y);
/* dw[i*d+j] = sum_r x[r,i] * dy[r, i*d+j]; db (when not NULL) = sum_r dy;
 * dx[r, i] = sum_j dy[r, i*d+j] * w[i*d+j] when dx.p != NULL. */
void rt_k_tokens_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view dy, int64_t d, float *dw,
                     float *db, rt_view dx);

/* The end of a TabM block in one pass: y = drop(act(x * w + b)) on (B, n)
 * views, w and b (b NULL: zeros) per column as rt_k_tokens_fwd's with d = 1,
 * act RT_ACT_NONE or RT_ACT_RELU, then rt_k_dropout's mask (seed, stream,
 * *step; rate 0: none, rate > 0 only after RT_ACT_RELU, whose backward masks
 * by y).  The same values as those three ops one after the other; y is not
 * x.  y may be RT_BF16 (a CPU context with bf16 GEMMs): the values rounded. */
void rt_k_scale_act_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act,
                        float rate, uint64_t seed, uint32_t stream, const int64_t *step, rt_view y);
/* Its backward from its output y: g = dy * (1 / (1 - rate)) in float where
 * y > 0 (everywhere with RT_ACT_NONE), else 0 — the dropout's and the ReLU's
 * backward one after the other; then dw = sum_r g * x, db (when not NULL) =
 * sum_r g, dx = g * w when dx.p (dx may be x or dy), as rt_k_tokens_bwd's.
 * dy is scratch: undefined afterwards.  dx may be RT_BF16 (a CPU context
 * with bf16 GEMMs; then neither x nor dy), y RT_BF16 with RT_ACT_NONE
 * (unread then). */
void rt_k_scale_act_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act, float rate,
                        rt_view dy, float *dw, float *db, rt_view dx);

/* Two scalings back to back, forward in one pass (CPU contexts only):
 * rt_k_scale_act_fwd's y, and y2 = y * w2 (a scale per column; RT_BF16
 * allowed, as rt_k_scale_act_fwd's y) from each row of y while it is in
 * cache — the same values as the two ops one after the other. */
void rt_k_scale_pair_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act,
                         float rate, uint64_t seed, uint32_t stream, const int64_t *step, rt_view y,
                         const float *w2, rt_view y2);
/* Two scalings back to back, backward in one pass (CPU contexts only): y =
 * drop(act(x * w + b)), then y2 = y * w2 (no bias, act or dropout; TabM's
 * block end and the next block's r).  From y2's gradient dy2: dw2 = sum_r
 * dy2 * y, then with dy = dy2 * w2 (float), rt_k_scale_act_bwd's dw, db
 * (when not NULL) and dx (when dx.p; RT_BF16 allowed, as there) — the same
 * bits as the two backward ops one after the other, without writing dy
 * and reading it and y again.  dy2 is read only. */
void rt_k_scale_pair_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act, float rate,
                         const float *w2, rt_view dy2, float *dw2, float *dw, float *db,
                         rt_view dx);

/* continuous_norm = quantile: y (B, n) = Φ^-1(p), p the position of
 * x[r, i] among column i's nq ascending quantiles q[i*nq .. i*nq + nq)
 * (sklearn's QuantileTransformer to a normal: linear between quantiles, a
 * tied run's middle, p clipped to [1e-7, 1 - 1e-7]); nq >= 2. */
void rt_k_quantile_fwd(rt_kctx *ctx, rt_view x, const float *q, int64_t nq, rt_view y);

/* continuous_norm = robust (RealMLP, Holzmüller et al. 2024): z = (x[r, i]
 * - center[i]) * scale[i], then the smooth clip y = z / sqrt(1 + (z/3)^2). */
void rt_k_robust_fwd(rt_kctx *ctx, rt_view x, const float *center, const float *scale, rt_view y);

/* Piecewise-linear encoding of the numeric columns (PLE; Gorishniy et al.
 * 2022): x (B, n), column i's T + 1 ascending bin edges e[i*(T+1) ..], y
 * (B, n*T) with, for bin t of column i, v = (x - e_t) / (e_{t+1} - e_t)
 * clipped to [0, 1] — the first bin not below, the last not above (one
 * bin: neither) — and a bin of zero width 1 where x >= e_t, else 0.
 * Backward: dx[r, i] = sum_t dy[r, i*T + t] / (e_{t+1} - e_t) over the bins
 * where v was not clipped (when dx.p). */
void rt_k_ple_fwd(rt_kctx *ctx, rt_view x, const float *edges, int64_t T, rt_view y);
void rt_k_ple_bwd(rt_kctx *ctx, rt_view x, const float *edges, int64_t T, rt_view dy, rt_view dx);

/* Periodic features of the numeric columns (PLR's first step; Gorishniy
 * et al. 2022, "On Embeddings for Numerical Features in Tabular Deep
 * Learning"): x (B, n), f (n, k) frequencies, y (B, n*2k) with, for column
 * i and frequency j, θ = 2π f[i*k + j] x[r, i]:
 *   y[r, i*2k + j] = cos θ,  y[r, i*2k + k + j] = sin θ. */
void rt_k_periodic_fwd(rt_kctx *ctx, rt_view x, const float *f, int64_t k, rt_view y);
/* df[i*k + j] = sum_r 2π x[r, i] (cos θ dy_sin - sin θ dy_cos) (fixed order);
 * dx[r, i] = sum_j 2π f[i*k + j] (cos θ dy_sin - sin θ dy_cos) when dx.p. */
void rt_k_periodic_bwd(rt_kctx *ctx, rt_view x, const float *f, int64_t k, rt_view dy, float *df,
                       rt_view dx);

/* TabM's ensembles (rt_model): the k members of a sample side by side in
 * one row, member t's D values at columns t*D .. t*D + D - 1.
 * rt_k_ens_repeat: y (B, k*D)[b, t*D + j] = x (B, D)[b, j].
 * rt_k_ens_reduce: y (B, D) from the k blocks of x (B, k*D), k = x.cols /
 * y.cols, each sum in member order (double):
 *   RT_ENS_SUM      y = sum_t x_t (rt_k_ens_repeat's gradient)
 *   RT_ENS_MEAN     y = mean_t x_t (a regression's ensemble prediction)
 *   RT_ENS_SOFTMAX  y = log(mean_t softmax(x_t)): logits whose softmax is
 *                   the members' mean probabilities (cross_entropy)
 *   RT_ENS_SIGMOID  y = logit(mean_t sigmoid(x_t)), per column (bce)
 * (the means of probabilities kept as logs: finite however small); k at
 * most RT_ENS_MAX_K. */
#define RT_ENS_MAX_K 256
typedef enum rt_ens_op { RT_ENS_SUM, RT_ENS_MEAN, RT_ENS_SOFTMAX, RT_ENS_SIGMOID } rt_ens_op;
void rt_k_ens_repeat(rt_kctx *ctx, rt_view x, rt_view y);
void rt_k_ens_reduce(rt_kctx *ctx, rt_ens_op op, rt_view x, rt_view y);

/* Multi-head scaled dot-product self-attention over the T tokens of each
 * sample (rtdl's MultiheadAttention between its projections):
 *   qkv (B*T, 3d): row b*T + t is [q | k | v] of token t of sample b; head h
 *        uses columns h*dh .. (h+1)*dh of each part (dh = d / H);
 *   probs (B*H*T*T) saved for backward: P = softmax(q kᵀ / sqrt(dh)) per
 *        sample and head, row t at ((b*H + h)*T + t)*T, its sign bit set
 *        where dropout dropped the element (backward reads the mask there);
 *   out (B*T, d): out[b*T + t, h*dh + e] = sum_s drop(P)[t, s] * v[b*T + s, h*dh + e].
 * Dropout on the probabilities as rt_k_dropout with P's element numbering. */
typedef struct rt_attn {
    int64_t T, H;
    float rate;
    uint64_t seed;
    uint32_t stream;
} rt_attn;
void rt_k_attn_fwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                   const int64_t *step, rt_view out);
/* dqkv (B*T, 3d) from dout and the saved probabilities, which backward
 * may overwrite (CUDA's kernels for pairs too large for shared memory keep
 * the scores' gradients there). */
void rt_k_attn_bwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                   const int64_t *step, rt_view dout, rt_view dqkv);

/* Scaled-sigmoid head: pred = scale * sigmoid(z), n values. */
void rt_k_head_fwd(rt_kctx *ctx, const float *z, int64_t n, float scale, float *pred);
/* dz = dpred * scale * s * (1 - s), with s = pred / scale. */
void rt_k_head_bwd(rt_kctx *ctx, const float *pred, const float *dpred, int64_t n, float scale,
                   float *dz);

/* One parameter tensor's range in the flat buffer, its L2 coefficient and
 * whether weight decay (AdamW's, SGD's) applies to it. */
typedef struct rt_adam_seg {
    int64_t off, len;
    float l2;      /* loss += l2 * sum(w^2), so grad += 2 * l2 * w */
    int32_t decay; /* 1: a kernel; 0: a bias, norm, embedding or token (rtdl's no_decay) */
} rt_adam_seg;

/* The optimizer's hyper-parameters, read from the context's memory when
 * the update runs (a replayed graph picks up new values).  The fields
 * after grad_scale are zero for the Rossmann default (Keras' Adam + L2). */
typedef struct rt_adam_hp {
    float lr, beta1, beta2, eps;
    float grad_scale;    /* applied to g first: 1/world for averaged gradients */
    int32_t kind;        /* rt_optim */
    float weight_decay;  /* adamw: decoupled; adam, sgd: added to the gradient (decay segments) */
    float momentum;      /* sgd */
    int32_t nesterov;    /* sgd */
    float clip_norm;     /* > 0: the global gradient norm (after grad_scale) clipped to it */
    float loss_norm;     /* rt_k_loss's factor on every row's gradient (1 / global weight) */
} rt_adam_hp;

/* The update over the whole flat buffer in one launch, then *step = t
 * (the counter, in the context's memory, advances with the update):
 *   t = *step + 1;  g' = g * grad_scale * clip + 2*l2*p, where clip = 1, or
 *     with clip_norm > 0 min(1, clip_norm / (sqrt(*gsq) * grad_scale + 1e-6))
 *     (PyTorch's clip_grad_norm_; *gsq from rt_k_sqnorm of the same g)
 *   adam  (Keras/TF2): g' += wd*p (decay segments: torch.optim.Adam's
 *         weight_decay); m = b1*m + (1-b1)*g';  v = b2*v + (1-b2)*g'^2;
 *         p -= lr * sqrt(1-b2^t)/(1-b1^t) * m / (sqrt(v) + eps)
 *   adamw (PyTorch's AdamW): p *= 1 - lr*wd (decay segments); m, v as adam;
 *         p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
 *   sgd   (PyTorch's SGD): g' += wd*p (decay segments); m = momentum*m + g';
 *         p -= lr * (nesterov ? g' + momentum*m : m)  (m is the momentum buffer)
 * segs (nseg, in the context's memory) cover [0, n) in order, no gaps;
 * gsq may be NULL when clip_norm is 0. */
void rt_k_optim(rt_kctx *ctx, float *p, const float *g, float *m, float *v, int64_t n,
                const rt_adam_seg *segs, int nseg, const rt_adam_hp *hp, int64_t *step,
                const double *gsq);
/* rt_k_optim with Adam's kind and no clipping (hp->kind must be adam). */
void rt_k_adam(rt_kctx *ctx, float *p, const float *g, float *m, float *v, int64_t n,
               const rt_adam_seg *segs, int nseg, const rt_adam_hp *hp, int64_t *step);
/* *out = sum of g[i]^2 over n floats (double, fixed order; context memory). */
void rt_k_sqnorm(rt_kctx *ctx, const float *g, int64_t n, double *out);

/* ---- the losses (rt_loss: rt_model_names.h), PyTorch's definitions --------
 * z (n, K) the model's outputs, y (n) the labels (a class index as a float
 * for classification), w (n) sample weights or NULL (ones), class_w (K, in
 * the context's memory) per-class weights or NULL.  Row i's weight
 * c_i = w_i * class_w[y_i] (regression: w_i).  Row losses l_i:
 *   mae |r|, mse r^2, huber 0.5 r^2 (|r| <= delta) else delta (|r| - 0.5 delta),
 *     poisson exp(z) - y z (log input, PyTorch's poisson_nll_loss), r = z - y;
 *   bce    max(z,0) - z t + log(1 + e^-|z|), t = y (1 - s) + s / 2 (s: smoothing);
 *   cross_entropy  (1-s) c_i (-log p_y) + (s/K) w_i sum_k class_w[k] (-log p_k),
 *     p = softmax(z) (torch.nn.functional.cross_entropy with weight and
 *     label_smoothing); for the others the row's loss is c_i * l_i.
 * acc[0] += sum of the weighted row losses, acc[1] += sum of c_i (the mean
 * loss is acc[0] / acc[1], PyTorch's weighted mean); when dz != NULL,
 * dz = d(weighted row loss)/dz * (*norm), norm in the context's memory
 * (the step's 1 / global weight sum; NULL or <= 0: 1 / this batch's sum of c_i). */
typedef struct rt_loss_desc {
    rt_loss kind;
    int64_t K;
    float huber_delta, smoothing;
    const float *class_w;
    /* > 0 (K = 1): z is a scaled-sigmoid head's output (rt_k_head_fwd with
     * this scale) and dz the gradient of the head's input — rt_k_head_bwd's
     * formula and rounding on the gradient above, the head's backward fused */
    float head_scale;
} rt_loss_desc;
void rt_k_loss(rt_kctx *ctx, const rt_loss_desc *d, rt_view z, const float *y, const float *w,
               const float *norm, rt_view dz, double *acc);
/* The sum of the rows' weights c_i (what rt_k_loss adds to acc[1]) of n
 * rows whose labels, weights and d->class_w are in host memory: a rank's
 * share of the step's global weight. */
double rt_loss_weight(const rt_loss_desc *d, const float *y, const float *w, int64_t n);

/* Scale n floats in place: p *= s. */
void rt_k_scale(rt_kctx *ctx, float *p, int64_t n, float s);

/* n floats to bfloat16 bits (rounded to nearest even, NaN kept quiet) and
 * back (exact): a gradient's allreduce in bf16 ([train] allreduce_precision)
 * on a GPU; the same bits as the CPU ring's conversion (rt_bf16.h). */
void rt_k_to_bf16(rt_kctx *ctx, const float *x, uint16_t *y, int64_t n);
void rt_k_from_bf16(rt_kctx *ctx, const uint16_t *x, float *y, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
