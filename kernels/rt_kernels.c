/* rt_kernels.c — kernel contexts, memory, and the op dispatcher: every public
 * op checks its shapes once here and calls the context's backend through
 * its ops table (kctx_impl.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kctx_impl.h"
#include "rt_log.h"

/* Each public rt_k_NAME has its op's signature (kctx_impl.h's lists): a
 * parameter added to one and not the other does not compile. */
#define SAME_SIGNATURE(name, params) \
    static void(*const signature_##name) params __attribute__((unused)) = rt_k_##name;
RT_KERNEL_OPS(SAME_SIGNATURE)
RT_KERNEL_CPU_OPS(SAME_SIGNATURE)

/* The backend of a device kind; NULL when this build has none. */
static const rt_kernel_ops *backend(rt_device dev)
{
    if (dev == RT_DEVICE_CPU)
        return &rt_cpu_kernel_ops;
#ifdef RT_HAVE_CUDA
    if (dev == RT_DEVICE_CUDA)
        return &rt_cuda_kernel_ops;
#endif
    return NULL;
}

rt_status rt_kctx_create(rt_device dev, int threads, rt_kctx **out, char *err)
{
    *out = NULL;
    const rt_kernel_ops *ops = backend(dev);
    if (!ops)
        return rt_err(err, RT_ERR_UNSUPPORTED, "this build has no CUDA support");
    if (ops->device_count() <= 0)
        return rt_err(err, RT_ERR_UNSUPPORTED, "no %s device is visible", ops->name);
    rt_kctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    ctx->dev = dev;
    ctx->ops = ops;
    ctx->threads = threads;
    rt_status st = ops->init(ctx, err);
    if (st != RT_OK) {
        free(ctx);
        return st;
    }
    *out = ctx;
    return RT_OK;
}

void rt_kctx_destroy(rt_kctx *ctx)
{
    if (!ctx)
        return;
    ctx->ops->fini(ctx);
    free(ctx);
}

rt_device rt_kctx_device(const rt_kctx *ctx) { return ctx->dev; }
int rt_kctx_threads(const rt_kctx *ctx) { return ctx->threads; }
void *rt_kctx_stream(rt_kctx *ctx) { return ctx->stream; }
void rt_kctx_set_tf32(rt_kctx *ctx, bool on) { ctx->tf32 = on; }
bool rt_kctx_set_bf16(rt_kctx *ctx, bool on)
{
    const bool can = ctx->dev == RT_DEVICE_CPU ? rt_cpu_bf16_kernel() != NULL : ctx->gpu_bf16;
    ctx->bf16 = on && can;
    return ctx->bf16 == on;
}
bool rt_kctx_bf16(const rt_kctx *ctx) { return ctx->bf16; }
void rt_kctx_set_bf16_store(rt_kctx *ctx, bool on) { ctx->no_bf16_store = !on; }
bool rt_kctx_bf16_store(const rt_kctx *ctx)
{
    return ctx->bf16 && ctx->dev == RT_DEVICE_CPU && !ctx->no_bf16_store;
}
rt_status rt_kctx_sync(rt_kctx *ctx, char *err) { return ctx->ops->sync(ctx, err); }
rt_status rt_kctx_check(rt_kctx *ctx, char *err) { return ctx->ops->check(ctx, err); }
void *rt_kctx_comm_stream(rt_kctx *ctx) { return ctx->comm_stream; }

void rt_kctx_fork(rt_kctx *ctx)
{
    if (ctx->ops->fork)
        ctx->ops->fork(ctx);
}

void rt_kctx_join(rt_kctx *ctx)
{
    if (ctx->ops->join)
        ctx->ops->join(ctx);
}

/* An event is the backend's handle; a CPU event is a non-NULL placeholder. */
struct rt_kevent {
    void *h;
};

rt_status rt_kevent_create(rt_kctx *ctx, rt_kevent **out, char *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    rt_status st = ctx->ops->event_create ? ctx->ops->event_create(ctx, &(*out)->h, err) : RT_OK;
    if (st != RT_OK) {
        free(*out);
        *out = NULL;
    }
    return st;
}

void rt_kevent_destroy(rt_kctx *ctx, rt_kevent *ev)
{
    if (!ev)
        return;
    if (ctx->ops->event_destroy)
        ctx->ops->event_destroy(ev->h);
    free(ev);
}

void rt_kevent_record(rt_kctx *ctx, rt_kevent *ev)
{
    if (ctx->ops->event_record)
        ctx->ops->event_record(ctx, ev->h);
}

rt_status rt_kevent_sync(rt_kctx *ctx, rt_kevent *ev, char *err)
{
    return ctx->ops->event_sync ? ctx->ops->event_sync(ctx, ev->h, err) : RT_OK;
}

rt_status rt_kevent_create_timer(rt_kctx *ctx, rt_kevent **out, char *err)
{
    *out = NULL;
    if (!ctx->ops->timer_create)
        return rt_err(err, RT_ERR_UNSUPPORTED, "timing marks need a CUDA context");
    if (!(*out = calloc(1, sizeof **out)))
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    rt_status st = ctx->ops->timer_create(ctx, &(*out)->h, err);
    if (st != RT_OK) {
        free(*out);
        *out = NULL;
    }
    return st;
}

void rt_kevent_mark(rt_kctx *ctx, rt_kevent *ev, bool comm)
{
    if (ctx->ops->timer_mark && ev)
        ctx->ops->timer_mark(ctx, ev->h, comm);
}

rt_status rt_kevent_ms(rt_kctx *ctx, rt_kevent *a, rt_kevent *b, double *ms, char *err)
{
    if (!ctx->ops->timer_ms)
        return rt_err(err, RT_ERR_UNSUPPORTED, "timing marks need a CUDA context");
    return ctx->ops->timer_ms(ctx, a->h, b->h, ms, err);
}

struct rt_kgraph {
    const rt_kernel_ops *ops;
    void *exec; /* cudaGraphExec_t */
};

rt_status rt_kctx_capture_begin(rt_kctx *ctx, char *err)
{
    if (!ctx->ops->capture_begin)
        return rt_err(err, RT_ERR_UNSUPPORTED, "graph capture needs a CUDA context");
    return ctx->ops->capture_begin(ctx, err);
}

rt_status rt_kctx_capture_end(rt_kctx *ctx, rt_kgraph **out, char *err)
{
    *out = NULL;
    if (!ctx->ops->capture_end)
        return rt_err(err, RT_ERR_UNSUPPORTED, "graph capture needs a CUDA context");
    rt_kgraph *g = calloc(1, sizeof *g);
    if (!g)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    g->ops = ctx->ops;
    rt_status st = ctx->ops->capture_end(ctx, &g->exec, err);
    if (st != RT_OK) {
        free(g);
        return st;
    }
    *out = g;
    return RT_OK;
}

rt_status rt_kgraph_launch(rt_kctx *ctx, rt_kgraph *g, char *err)
{
    if (!ctx->ops->graph_launch || g->ops != ctx->ops)
        return rt_err(err, RT_ERR_UNSUPPORTED, "graph capture needs a CUDA context");
    return ctx->ops->graph_launch(ctx, g->exec, err);
}

void rt_kgraph_destroy(rt_kgraph *g)
{
    if (!g)
        return;
    if (g->ops->graph_destroy)
        g->ops->graph_destroy(g->exec);
    free(g);
}

/* ---- devices ----------------------------------------------------------------- */

bool rt_cuda_available(void) { return rt_cuda_device_count_visible() > 0; }

int rt_cuda_device_count_visible(void)
{
    const rt_kernel_ops *cuda = backend(RT_DEVICE_CUDA);
    return cuda ? cuda->device_count() : 0;
}

rt_status rt_cuda_set_device(int dev, char *err)
{
    const rt_kernel_ops *cuda = backend(RT_DEVICE_CUDA);
    if (!cuda)
        return rt_err(err, RT_ERR_UNSUPPORTED, "this build has no CUDA");
    int n = cuda->device_count();
    if (dev < 0 || dev >= n || cuda->select_device(dev) != 0)
        return rt_err(err, RT_ERR_INVALID, "cannot use CUDA device %d (%d visible)", dev, n);
    return RT_OK;
}

const char *rt_cuda_device_name(char *buf, size_t len)
{
    const rt_kernel_ops *cuda = backend(RT_DEVICE_CUDA);
    if (cuda && cuda->device_count() > 0)
        cuda->device_name(buf, len);
    else
        snprintf(buf, len, "none");
    return buf;
}

/* ---- memory ------------------------------------------------------------------- */

rt_status rt_kctx_mem_available(rt_kctx *ctx, int64_t *bytes, char *err)
{
    return ctx->ops->mem_available(ctx, bytes, err);
}

rt_status rt_kmalloc(rt_kctx *ctx, size_t bytes, void **out)
{
    *out = NULL;
    return ctx->ops->malloc_dev(bytes, out);
}

void rt_kfree(rt_kctx *ctx, void *p)
{
    if (p)
        ctx->ops->free_dev(p);
}

rt_status rt_kmalloc_host(rt_kctx *ctx, size_t bytes, void **out)
{
    *out = NULL;
    return ctx->ops->malloc_host(bytes, out);
}

void rt_kfree_host(rt_kctx *ctx, void *p)
{
    if (p)
        ctx->ops->free_host(p);
}

void rt_kmemcpy(rt_kctx *ctx, void *dst, const void *src, size_t bytes, rt_copy kind)
{
    if (bytes)
        ctx->ops->memcpy_async(ctx, dst, src, bytes, kind);
}

void rt_kmemset(rt_kctx *ctx, void *p, int value, size_t bytes)
{
    if (bytes)
        ctx->ops->memset_async(ctx, p, value, bytes);
}

/* ---- shape checks ------------------------------------------------------ */

static void check_view(const rt_kctx *ctx, rt_view v, rt_dtype t)
{
    RT_ASSERT(v.dtype == t);
    RT_ASSERT(v.dev == ctx->dev);
    RT_ASSERT(v.rows >= 0 && v.cols >= 0 && v.ld >= v.cols);
    RT_ASSERT(v.p != NULL || v.rows == 0 || v.cols == 0);
}

void rt_k_embed_fwd(rt_kctx *ctx, rt_view idx, const rt_embed_col *cols, const float *tables,
                    rt_view out)
{
    check_view(ctx, idx, RT_I32);
    check_view(ctx, out, RT_F32);
    RT_ASSERT(out.rows == idx.rows && (cols || idx.cols == 0));
    ctx->ops->embed_fwd(ctx, idx, cols, tables, out);
}

void rt_k_embed_bwd(rt_kctx *ctx, rt_view idx, const rt_embed_col *cols, rt_view dout,
                    float *dtables, int64_t ntab)
{
    check_view(ctx, idx, RT_I32);
    check_view(ctx, dout, RT_F32);
    RT_ASSERT(dout.rows == idx.rows && ntab >= 0 && (cols || idx.cols == 0));
    ctx->ops->embed_bwd(ctx, idx, cols, dout, dtables, ntab);
}

void rt_k_bn_fwd(rt_kctx *ctx, rt_view x, const float *gamma, const float *beta, float *run_mean,
                 float *run_var, float momentum, float eps, bool train, float *save_mean,
                 float *save_invstd, rt_view y)
{
    check_view(ctx, x, RT_F32);
    check_view(ctx, y, RT_F32);
    RT_ASSERT(x.rows == y.rows && x.cols == y.cols);
    RT_ASSERT(!train || (save_mean && save_invstd));
    ctx->ops->bn_fwd(ctx, x, gamma, beta, run_mean, run_var, momentum, eps, train, save_mean,
                     save_invstd, y);
}

void rt_k_bn_fwd_given(rt_kctx *ctx, rt_view x, const float *gamma, const float *beta,
                       const double *mean, const double *var, float eps, rt_view y)
{
    check_view(ctx, x, RT_F32);
    check_view(ctx, y, RT_F32);
    RT_ASSERT(x.rows == y.rows && x.cols == y.cols);
    RT_ASSERT(ctx->ops->bn_fwd_given);
    ctx->ops->bn_fwd_given(ctx, x, gamma, beta, mean, var, eps, y);
}

void rt_k_bn_bwd(rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma, const float *save_mean,
                 const float *save_invstd, float *dgamma, float *dbeta, rt_view dx)
{
    check_view(ctx, x, RT_F32);
    check_view(ctx, dy, RT_F32);
    RT_ASSERT(x.rows == dy.rows && x.cols == dy.cols);
    if (dx.p) {
        check_view(ctx, dx, RT_F32);
        RT_ASSERT(dx.rows == x.rows && dx.cols == x.cols);
    }
    ctx->ops->bn_bwd(ctx, x, dy, gamma, save_mean, save_invstd, dgamma, dbeta, dx);
}

void rt_k_bn_bwd_given(rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma,
                       const float *save_mean, const float *save_invstd, const double *sum_dy,
                       const double *sum_dy_xhat, double count, rt_view dx)
{
    check_view(ctx, x, RT_F32);
    check_view(ctx, dy, RT_F32);
    check_view(ctx, dx, RT_F32);
    RT_ASSERT(x.rows == dy.rows && x.cols == dy.cols && dx.rows == x.rows && dx.cols == x.cols);
    RT_ASSERT(ctx->ops->bn_bwd_given && count > 0);
    ctx->ops->bn_bwd_given(ctx, x, dy, gamma, save_mean, save_invstd, sum_dy, sum_dy_xhat, count, dx);
}

/* v is f32, or bf16 where the context keeps GEMM operands in bf16 */
static void check_operand(const rt_kctx *ctx, rt_view v)
{
    check_view(ctx, v, v.dtype == RT_BF16 && rt_kctx_bf16_store(ctx) ? RT_BF16 : RT_F32);
}

void rt_k_dense_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act, rt_view y)
{
    check_operand(ctx, x);
    check_view(ctx, y, RT_F32);
    RT_ASSERT(x.rows == y.rows && (act == RT_ACT_NONE || act == RT_ACT_RELU));
    RT_ASSERT(b || ctx->dev == RT_DEVICE_CPU);
    ctx->ops->dense_fwd(ctx, x, w, b, act, y);
}

/* The views of a dense layer's backward (rt_k_dense_bwd, _adam). */
static void check_dense_bwd(rt_kctx *ctx, rt_view x, rt_view y, rt_view dy, rt_view dx)
{
    check_operand(ctx, x);
    check_view(ctx, y, RT_F32);
    check_operand(ctx, dy);
    RT_ASSERT(x.rows == y.rows && dy.rows == y.rows && dy.cols == y.cols);
    if (dx.p) {
        check_view(ctx, dx, RT_F32);
        RT_ASSERT(dx.rows == x.rows && dx.cols == x.cols);
    }
}

void rt_k_dense_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act, rt_view dy,
                    float *dw, float *db, rt_view dx)
{
    check_dense_bwd(ctx, x, y, dy, dx);
    RT_ASSERT(act == RT_ACT_NONE || act == RT_ACT_RELU);
    RT_ASSERT(db || ctx->dev == RT_DEVICE_CPU);
    RT_ASSERT(dy.dtype == RT_F32 || (act == RT_ACT_NONE && !db)); /* bf16 dy: read only */
    ctx->ops->dense_bwd(ctx, x, w, y, act, dy, dw, db, dx);
}

void rt_k_dropout(rt_kctx *ctx, rt_view x, float rate, uint64_t seed, uint32_t stream,
                  const int64_t *step)
{
    check_view(ctx, x, RT_F32);
    RT_ASSERT(rate >= 0.0f && rate < 1.0f);
    if (rate == 0.0f)
        return;
    ctx->ops->dropout(ctx, x, rate, seed, stream, step);
}

/* Two views of one shape. */
static void check_same(const rt_kctx *ctx, rt_view a, rt_view b)
{
    check_view(ctx, a, RT_F32);
    check_view(ctx, b, RT_F32);
    RT_ASSERT(a.rows == b.rows && a.cols == b.cols);
}

void rt_k_act_fwd(rt_kctx *ctx, rt_act act, rt_view x, rt_view y)
{
    check_same(ctx, x, y);
    RT_ASSERT(act >= RT_ACT_NONE && act <= RT_ACT_TANH);
    ctx->ops->act_fwd(ctx, act, x, y);
}

void rt_k_act_bwd(rt_kctx *ctx, rt_act act, rt_view x, rt_view dy, rt_view dx)
{
    check_same(ctx, x, dy);
    check_same(ctx, x, dx);
    RT_ASSERT(act >= RT_ACT_NONE && act <= RT_ACT_TANH);
    ctx->ops->act_bwd(ctx, act, x, dy, dx);
}

void rt_k_reglu_fwd(rt_kctx *ctx, rt_view x, rt_view y)
{
    check_view(ctx, x, RT_F32);
    check_view(ctx, y, RT_F32);
    RT_ASSERT(x.rows == y.rows && x.cols == 2 * y.cols);
    ctx->ops->reglu_fwd(ctx, x, y);
}

void rt_k_reglu_bwd(rt_kctx *ctx, rt_view x, rt_view dy, rt_view dx)
{
    check_same(ctx, x, dx);
    check_view(ctx, dy, RT_F32);
    RT_ASSERT(dy.rows == x.rows && x.cols == 2 * dy.cols);
    ctx->ops->reglu_bwd(ctx, x, dy, dx);
}

void rt_k_ln_fwd(rt_kctx *ctx, rt_view x, const float *gamma, const float *beta, float eps,
                 float *save_mean, float *save_rstd, rt_view y)
{
    check_same(ctx, x, y);
    RT_ASSERT(eps > 0.0f && save_mean && save_rstd);
    ctx->ops->ln_fwd(ctx, x, gamma, beta, eps, save_mean, save_rstd, y);
}

void rt_k_ln_bwd(rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma, const float *save_mean,
                 const float *save_rstd, float *dgamma, float *dbeta, rt_view dx)
{
    check_same(ctx, x, dy);
    if (dx.p)
        check_same(ctx, x, dx);
    ctx->ops->ln_bwd(ctx, x, dy, gamma, save_mean, save_rstd, dgamma, dbeta, dx);
}

void rt_k_ew(rt_kctx *ctx, rt_ew op, rt_view a, rt_view b, rt_view y)
{
    check_same(ctx, a, y);
    if (op == RT_EW_ADD || op == RT_EW_MUL)
        check_same(ctx, a, b);
    RT_ASSERT(op >= RT_EW_ADD && op <= RT_EW_COPY);
    ctx->ops->ew(ctx, op, a, b, y);
}

void rt_k_bias_add(rt_kctx *ctx, const float *b, rt_view y)
{
    check_view(ctx, y, RT_F32);
    ctx->ops->bias_add(ctx, b, y);
}

void rt_k_colsum(rt_kctx *ctx, rt_view dy, float *out)
{
    check_view(ctx, dy, RT_F32);
    ctx->ops->colsum(ctx, dy, out);
}

/* x of a token op: n columns (or NULL: ones) for y's n tokens of d */
static void check_tokens(const rt_kctx *ctx, rt_view x, rt_view y, int64_t d)
{
    check_view(ctx, y, RT_F32);
    RT_ASSERT(d > 0 && y.cols % d == 0);
    if (x.p) {
        check_view(ctx, x, RT_F32);
        RT_ASSERT(x.rows == y.rows && x.cols * d == y.cols);
    }
}

void rt_k_tokens_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, int64_t d, rt_view y)
{
    check_tokens(ctx, x, y, d);
    ctx->ops->tokens_fwd(ctx, x, w, b, d, y);
}

void rt_k_tokens_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view dy, int64_t d, float *dw,
                     float *db, rt_view dx)
{
    check_tokens(ctx, x, dy, d);
    if (dx.p) {
        RT_ASSERT(x.p);
        check_same(ctx, x, dx);
    }
    ctx->ops->tokens_bwd(ctx, x, w, dy, d, dw, db, dx);
}

/* a block end's act and rate: a dropout only after a ReLU */
static void check_scale_act(rt_act act, float rate)
{
    RT_ASSERT(act == RT_ACT_NONE || act == RT_ACT_RELU);
    RT_ASSERT(rate >= 0.0f && rate < 1.0f && (rate == 0.0f || act == RT_ACT_RELU));
}

void rt_k_scale_act_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act,
                        float rate, uint64_t seed, uint32_t stream, const int64_t *step, rt_view y)
{
    check_view(ctx, x, RT_F32);
    check_operand(ctx, y);
    RT_ASSERT(x.rows == y.rows && x.cols == y.cols && x.p != y.p);
    check_scale_act(act, rate);
    ctx->ops->scale_act_fwd(ctx, x, w, b, act, rate, seed, stream, step, y);
}

void rt_k_scale_act_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act, float rate,
                        rt_view dy, float *dw, float *db, rt_view dx)
{
    check_same(ctx, x, dy);
    if (act == RT_ACT_NONE) /* unread without the ReLU */
        check_operand(ctx, y);
    else
        check_view(ctx, y, RT_F32);
    RT_ASSERT(y.rows == x.rows && y.cols == x.cols);
    if (dx.p) {
        check_operand(ctx, dx);
        RT_ASSERT(dx.rows == x.rows && dx.cols == x.cols);
        RT_ASSERT(dx.dtype == RT_F32 || (dx.p != x.p && dx.p != dy.p));
    }
    check_scale_act(act, rate);
    ctx->ops->scale_act_bwd(ctx, x, w, y, act, rate, dy, dw, db, dx);
}

void rt_k_scale_pair_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act,
                         float rate, uint64_t seed, uint32_t stream, const int64_t *step, rt_view y,
                         const float *w2, rt_view y2)
{
    check_same(ctx, x, y);
    check_operand(ctx, y2);
    RT_ASSERT(y2.rows == x.rows && y2.cols == x.cols && x.p != y.p && y2.p != y.p && y2.p != x.p);
    check_scale_act(act, rate);
    RT_ASSERT(ctx->ops->scale_pair_fwd);
    ctx->ops->scale_pair_fwd(ctx, x, w, b, act, rate, seed, stream, step, y, w2, y2);
}

void rt_k_scale_pair_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act, float rate,
                         const float *w2, rt_view dy2, float *dw2, float *dw, float *db, rt_view dx)
{
    check_same(ctx, x, y);
    check_same(ctx, x, dy2);
    if (dx.p) {
        check_operand(ctx, dx);
        RT_ASSERT(dx.rows == x.rows && dx.cols == x.cols && dx.p != dy2.p && dx.p != y.p);
    }
    check_scale_act(act, rate);
    RT_ASSERT(ctx->ops->scale_pair_bwd);
    ctx->ops->scale_pair_bwd(ctx, x, w, y, act, rate, w2, dy2, dw2, dw, db, dx);
}

void rt_k_quantile_fwd(rt_kctx *ctx, rt_view x, const float *q, int64_t nq, rt_view y)
{
    check_view(ctx, x, RT_F32);
    check_same(ctx, x, y);
    RT_ASSERT(nq >= 2);
    ctx->ops->quantile_fwd(ctx, x, q, nq, y);
}

void rt_k_robust_fwd(rt_kctx *ctx, rt_view x, const float *center, const float *scale, rt_view y)
{
    check_view(ctx, x, RT_F32);
    check_same(ctx, x, y);
    ctx->ops->robust_fwd(ctx, x, center, scale, y);
}

void rt_k_ple_fwd(rt_kctx *ctx, rt_view x, const float *edges, int64_t T, rt_view y)
{
    check_view(ctx, x, RT_F32);
    check_view(ctx, y, RT_F32);
    RT_ASSERT(T > 0 && x.rows == y.rows && y.cols == x.cols * T);
    ctx->ops->ple_fwd(ctx, x, edges, T, y);
}

void rt_k_ple_bwd(rt_kctx *ctx, rt_view x, const float *edges, int64_t T, rt_view dy, rt_view dx)
{
    check_view(ctx, x, RT_F32);
    check_view(ctx, dy, RT_F32);
    RT_ASSERT(T > 0 && x.rows == dy.rows && dy.cols == x.cols * T);
    if (!dx.p)
        return;
    check_same(ctx, x, dx);
    ctx->ops->ple_bwd(ctx, x, edges, T, dy, dx);
}

void rt_k_periodic_fwd(rt_kctx *ctx, rt_view x, const float *f, int64_t k, rt_view y)
{
    check_view(ctx, x, RT_F32);
    check_view(ctx, y, RT_F32);
    RT_ASSERT(k > 0 && x.rows == y.rows && y.cols == x.cols * 2 * k);
    ctx->ops->periodic_fwd(ctx, x, f, k, y);
}

void rt_k_periodic_bwd(rt_kctx *ctx, rt_view x, const float *f, int64_t k, rt_view dy, float *df,
                       rt_view dx)
{
    check_view(ctx, x, RT_F32);
    check_view(ctx, dy, RT_F32);
    RT_ASSERT(k > 0 && x.rows == dy.rows && dy.cols == x.cols * 2 * k);
    if (dx.p)
        check_same(ctx, x, dx);
    ctx->ops->periodic_bwd(ctx, x, f, k, dy, df, dx);
}

void rt_k_ens_repeat(rt_kctx *ctx, rt_view x, rt_view y)
{
    check_view(ctx, x, RT_F32);
    check_view(ctx, y, RT_F32);
    RT_ASSERT(x.rows == y.rows && x.cols > 0 && y.cols % x.cols == 0);
    ctx->ops->ens_repeat(ctx, x, y);
}

void rt_k_ens_reduce(rt_kctx *ctx, rt_ens_op op, rt_view x, rt_view y)
{
    check_view(ctx, x, RT_F32);
    check_view(ctx, y, RT_F32);
    RT_ASSERT(x.rows == y.rows && y.cols > 0 && x.cols % y.cols == 0 && x.cols > 0 &&
              x.cols / y.cols <= RT_ENS_MAX_K);
    RT_ASSERT(op >= RT_ENS_SUM && op <= RT_ENS_SIGMOID);
    ctx->ops->ens_reduce(ctx, op, x, y);
}

/* qkv (B*T, 3d) and out (B*T, d) of an attention op */
static void check_attn(const rt_kctx *ctx, const rt_attn *a, rt_view qkv, rt_view out)
{
    check_view(ctx, qkv, RT_F32);
    check_view(ctx, out, RT_F32);
    RT_ASSERT(a->T > 0 && a->H > 0 && out.cols % a->H == 0);
    RT_ASSERT(qkv.rows == out.rows && qkv.rows % a->T == 0 && qkv.cols == 3 * out.cols);
    RT_ASSERT(a->rate >= 0.0f && a->rate < 1.0f);
}

void rt_k_attn_fwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                   const int64_t *step, rt_view out)
{
    check_attn(ctx, a, qkv, out);
    ctx->ops->attn_fwd(ctx, a, qkv, probs, step, out);
}

void rt_k_attn_bwd(rt_kctx *ctx, const rt_attn *a, rt_view qkv, float *probs,
                   const int64_t *step, rt_view dout, rt_view dqkv)
{
    check_attn(ctx, a, qkv, dout);
    check_same(ctx, qkv, dqkv);
    ctx->ops->attn_bwd(ctx, a, qkv, probs, step, dout, dqkv);
}

void rt_k_head_fwd(rt_kctx *ctx, const float *z, int64_t n, float scale, float *pred)
{
    RT_ASSERT(n >= 0);
    ctx->ops->head_fwd(ctx, z, n, scale, pred);
}

void rt_k_head_bwd(rt_kctx *ctx, const float *pred, const float *dpred, int64_t n, float scale,
                   float *dz)
{
    RT_ASSERT(n >= 0 && scale > 0);
    ctx->ops->head_bwd(ctx, pred, dpred, n, scale, dz);
}

void rt_k_optim(rt_kctx *ctx, float *p, const float *g, float *m, float *v, int64_t n,
                const rt_adam_seg *segs, int nseg, const rt_adam_hp *hp, int64_t *step,
                const double *gsq)
{
    RT_ASSERT(n >= 0 && nseg >= 0);
    ctx->ops->optim(ctx, p, g, m, v, n, segs, nseg, hp, step, gsq);
}

void rt_k_adam(rt_kctx *ctx, float *p, const float *g, float *m, float *v, int64_t n,
               const rt_adam_seg *segs, int nseg, const rt_adam_hp *hp, int64_t *step)
{
    rt_k_optim(ctx, p, g, m, v, n, segs, nseg, hp, step, NULL);
}

void rt_k_sqnorm(rt_kctx *ctx, const float *g, int64_t n, double *out)
{
    RT_ASSERT(n >= 0);
    ctx->ops->sqnorm(ctx, g, n, out);
}

void rt_k_loss(rt_kctx *ctx, const rt_loss_desc *d, rt_view z, const float *y, const float *w,
               const float *norm, rt_view dz, double *acc)
{
    check_view(ctx, z, RT_F32);
    RT_ASSERT(d->kind >= 0 && d->kind < RT_LOSS_COUNT && d->K == z.cols);
    RT_ASSERT(d->kind == RT_LOSS_CE ? d->K >= 2 : d->K == 1);
    if (dz.p)
        check_same(ctx, z, dz);
    ctx->ops->loss(ctx, d, z, y, w, norm, dz, acc);
}

void rt_k_scale(rt_kctx *ctx, float *p, int64_t n, float s)
{
    RT_ASSERT(n >= 0);
    ctx->ops->scale(ctx, p, n, s);
}

void rt_k_to_bf16(rt_kctx *ctx, const float *x, uint16_t *y, int64_t n)
{
    RT_ASSERT(n >= 0);
    ctx->ops->to_bf16(ctx, x, y, n);
}

void rt_k_from_bf16(rt_kctx *ctx, const uint16_t *x, float *y, int64_t n)
{
    RT_ASSERT(n >= 0);
    ctx->ops->from_bf16(ctx, x, y, n);
}
