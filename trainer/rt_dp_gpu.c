/* rt_dp_gpu.c — the data-parallel step on a GPU (see rt_dp.h): pinned
 * double-buffered batches, hyper-parameters in device memory, one CUDA
 * graph per batch size, per-bucket NCCL allreduces on the communication
 * stream overlapping backward, or gradients staged over the ring.  In a
 * CPU-only build the CUDA context cannot be created, so none of this runs. */
#include <stdlib.h>
#include <string.h>

#include "dp_impl.h"
#include "rt_log.h"
#include "rt_time.h"

/* ---- pinned batches ------------------------------------------------------- */

static rt_status slots_init(rt_dp *d, char *err)
{
    const rt_model_spec *s = rt_model_get_spec(d->model);
    const size_t B = (size_t)d->o.max_batch;
    for (int i = 0; i < 2; i++) {
        dp_slot *sl = &d->slot[i];
        void *a = NULL, *b = NULL, *c = NULL;
        rt_status st = rt_kmalloc_host(d->ctx, B * (size_t)s->n_cat * 4 + 4, &a);
        if (st == RT_OK)
            st = rt_kmalloc_host(d->ctx, B * (size_t)s->n_cont * 4 + 4, &b);
        if (st == RT_OK)
            st = rt_kmalloc_host(d->ctx, B * 4 * (s->weighted ? 2 : 1), &c);
        sl->cat = a, sl->cont = b, sl->label = c;
        if (st != RT_OK)
            return rt_err(err, st, "cannot allocate %zu MiB of pinned memory for the batches",
                          (B * (size_t)(s->n_cat + s->n_cont + 1) * 8) >> 20);
        if ((st = rt_kevent_create(d->ctx, &sl->copied, err)) != RT_OK)
            return st;
    }
    return RT_OK;
}

/* Copy the batch into the pinned buffer not used by the previous step and
 * enqueue its copy to the device; the host returns at once. */
static rt_status stage_batch(rt_dp *d, const int32_t *cat, const float *cont, const float *label,
                             int64_t n, char *err)
{
    const rt_model_spec *s = rt_model_get_spec(d->model);
    dp_slot *sl = &d->slot[d->cur];
    d->cur ^= 1;
    /* the copy that last read this buffer (two steps ago) has run */
    rt_status st = rt_kevent_sync(d->ctx, sl->copied, err);
    if (st != RT_OK)
        return st;
    memcpy(sl->cat, cat, (size_t)(n * s->n_cat) * 4);
    memcpy(sl->cont, cont, (size_t)(n * s->n_cont) * 4);
    memcpy(sl->label, label, (size_t)n * 4 * (rt_model_get_spec(d->model)->weighted ? 2 : 1));
    rt_model_set_batch(d->model, sl->cat, sl->cont, sl->label, n);
    rt_kevent_record(d->ctx, sl->copied);
    return RT_OK;
}

/* ---- the step's work ------------------------------------------------------ */

/* Allreduce the pending gradient range on the communication stream, after
 * the kernels that produced it. */
static void nccl_flush(rt_dp *d)
{
    if (d->bucket_hi <= d->bucket_lo)
        return;
    float *g = rt_model_grads(d->model) + d->bucket_lo;
    const int64_t n = d->bucket_hi - d->bucket_lo;
    void *buf = g;
    rt_ctype t = RT_C_F32;
    if (d->half) { /* rounded on the compute stream, after the kernels that wrote them */
        rt_k_to_bf16(d->ctx, g, d->half + d->bucket_lo, n);
        buf = d->half + d->bucket_lo;
        t = RT_C_BF16;
        if (d->half_hi < 0)
            d->half_hi = d->bucket_hi;
        d->half_lo = d->bucket_lo; /* the buckets run from the arena's end to its start */
    }
    rt_kctx_fork(d->ctx);
    dpt_mark(d, DPT_AR_BEGIN, d->buckets, true);
    if (d->hook_st == RT_OK)
        d->hook_st = rt_nccl_allreduce(d->nccl, buf, (size_t)n, t, RT_SUM, d->hook_err);
    dpt_mark(d, DPT_AR_END, d->buckets, true);
    d->buckets++;
    d->bucket_lo = d->bucket_hi = -1;
}

/* Backward's hook: a layer's gradients are enqueued (the timeline's mark);
 * ranges arrive from the end of the arena to its start (NCCL's buckets).
 * Why these buckets are whole layers up to bucket_bytes while the CPU's
 * (transport/fusion.c) are fixed slices of bucket_bytes: here the hook
 * runs while the step's CUDA graph is captured, and an allreduce may only
 * be enqueued at a point of the stream where a whole layer's gradients
 * are written (a slice would end inside a kernel's output); the CPU's
 * communication thread waits on ranges as backward reports them, so it
 * can cut anywhere and keeps every bucket the same size. */
static void grads_hook(void *user, int64_t off, int64_t count)
{
    rt_dp *d = user;
    dpt_mark(d, DPT_LAYER, d->layer++, false);
    if (!d->nccl)
        return;
    if (d->bucket_hi < 0)
        d->bucket_hi = off + count;
    d->bucket_lo = off;
    if ((size_t)(d->bucket_hi - d->bucket_lo) * 4 >= d->o.bucket_bytes)
        nccl_flush(d);
}

/* Forward, loss, backward (with the NCCL buckets), and the update unless
 * the gradients still have to be staged.  Enqueues only: capturable. */
static void step_body(rt_dp *d, int64_t n)
{
    rt_model *m = d->model;
    d->hook_st = RT_OK;
    d->buckets = 0;
    d->bucket_lo = d->bucket_hi = -1;
    d->half_lo = d->half_hi = -1;
    d->layer = 0;
    dpt_mark(d, DPT_START, 0, false);
    rt_model_forward(m, n, true);
    rt_model_loss(m, n, true);
    dpt_mark(d, DPT_FORWARD, 0, false);
    rt_model_backward(m, n, d->nccl || d->tl ? grads_hook : NULL, d);
    dpt_mark(d, DPT_BACKWARD, 0, false);
    if (d->nccl) {
        nccl_flush(d);
        rt_kctx_join(d->ctx); /* Adam after the last bucket */
        if (d->half && d->half_hi > d->half_lo) /* the bf16 sums widened back for Adam */
            rt_k_from_bf16(d->ctx, d->half + d->half_lo, rt_model_grads(m) + d->half_lo,
                           d->half_hi - d->half_lo);
        dpt_mark(d, DPT_JOIN, 0, false);
    }
    if (!d->staged) {
        rt_model_update(m);
        dpt_mark(d, DPT_UPDATE, 0, false);
    }
}

/* The graph for batch size n: NULL (run eagerly) the first time a size is
 * seen — that step also makes what capture may not allocate (cuBLASLt
 * plans, scratch) — captured the second time, replayed after. */
static rt_kgraph *graph_for(rt_dp *d, int64_t n)
{
    if (!d->graphs)
        return NULL;
    dp_graph *e = NULL, *victim = &d->graph[0];
    const int set = dpt_graph_key(d);
    for (int i = 0; i < DP_GRAPHS; i++) {
        if (d->graph[i].n == n && d->graph[i].set == set)
            e = &d->graph[i];
        if (d->graph[i].used < victim->used)
            victim = &d->graph[i];
    }
    d->clock++;
    if (!e) {
        rt_kgraph_destroy(victim->g);
        *victim = (dp_graph){.n = n, .set = set, .seen = 1, .used = d->clock};
        return NULL;
    }
    e->used = d->clock;
    if (e->g || e->seen++ < 1)
        return e->g;
    char err[RT_ERR_LEN];
    rt_status st = rt_kctx_capture_begin(d->ctx, err);
    if (st == RT_OK) {
        step_body(d, n);
        st = rt_kctx_capture_end(d->ctx, &e->g, err);
        if (st == RT_OK && d->hook_st != RT_OK)
            st = rt_err(err, d->hook_st, "%s", d->hook_err);
    }
    if (st != RT_OK) {
        RT_WARN("dp", "capturing the step as a CUDA graph failed (%s); steps run op by op", err);
        rt_kgraph_destroy(e->g);
        e->g = NULL;
        d->graphs = false;
        rt_kctx_check(d->ctx, err); /* clear what the capture left */
    }
    return e->g;
}

rt_status rt_dp_gpu_step(rt_dp *d, const int32_t *cat, const float *cont, const float *label,
                         int64_t n, const rt_adam_hp *hp, char *err)
{
    rt_model *m = d->model;
    rt_status st = stage_batch(d, cat, cont, label, n, err);
    if (st != RT_OK)
        return st;
    rt_adam_hp h = *hp;
    h.grad_scale = hp->grad_scale / (float)d->size; /* the sum becomes the average */
    rt_model_set_hparams(m, &h);
    dpt_begin(d);
    rt_kgraph *g = graph_for(d, n);
    if (g)
        st = rt_kgraph_launch(d->ctx, g, err);
    else
        step_body(d, n);
    dpt_body_done(d, g != NULL);
    if (st == RT_OK && d->hook_st != RT_OK)
        st = rt_err(err, d->hook_st, "%s", d->hook_err);
    if (st == RT_OK && d->staged) {
        /* host-driven, so timed on the host: from when backward is done */
        if (d->tl)
            st = rt_kctx_sync(d->ctx, err);
        const int64_t a0 = d->tl ? rt_now_ns() : 0;
        const int64_t len = rt_model_arena_len(m);
        if (st == RT_OK && d->half) { /* in bf16: rounded, summed round the ring, widened */
            rt_k_to_bf16(d->ctx, rt_model_grads(m), d->half, len);
            st = rt_allreduce_device(d->comm, d->half, (size_t)len, RT_C_BF16, RT_SUM,
                                     rt_kctx_stream(d->ctx), err);
            if (st == RT_OK)
                rt_k_from_bf16(d->ctx, d->half, rt_model_grads(m), len);
        } else if (st == RT_OK) {
            st = rt_allreduce_device(d->comm, rt_model_grads(m), (size_t)len, RT_C_F32, RT_SUM,
                                     rt_kctx_stream(d->ctx), err);
        }
        if (d->tl)
            rt_trace_span(d->trace, RT_SPAN_ALLREDUCE, a0, rt_now_ns(), d->steps, 0);
        dpt_mark(d, DPT_JOIN, 0, false);
        if (st == RT_OK)
            rt_model_update(m);
        dpt_mark(d, DPT_UPDATE, 0, false);
    }
    /* bounded: a peer that never arrives fails the step instead of hanging it */
    if (st == RT_OK && d->nccl)
        st = rt_nccl_wait_stream(d->nccl, rt_kctx_stream(d->ctx), d->o.timeout_us, err);
    if (st == RT_OK)
        st = rt_kctx_check(d->ctx, err);
    if (st == RT_OK)
        d->steps++;
    return st;
}

/* ---- set-up ------------------------------------------------------------------- */

rt_status rt_dp_gpu_init(rt_dp *d, char *err)
{
    d->graphs = d->o.graphs;
    d->buckets = (int)((rt_model_arena_len(d->model) * 4 + (int64_t)d->o.bucket_bytes - 1) /
                       (int64_t)d->o.bucket_bytes);
    rt_status st = slots_init(d, err);
    if (st != RT_OK || d->size == 1)
        return st;
    /* the ranks agree: NCCL only if every one wants it and has it */
    int32_t want = d->o.nccl && rt_nccl_available();
    if ((st = rt_allreduce(d->comm, &want, 1, RT_C_I32, RT_MIN)) != RT_OK)
        return rt_err(err, st, "%s", rt_comm_last_error(d->comm));
    if (want) {
        st = rt_nccl_create(d->comm, rt_kctx_comm_stream(d->ctx), &d->nccl, err);
        if (st == RT_ERR_UNSUPPORTED) { /* the same answer on every rank: staging works */
            if (rt_comm_rank(d->comm) == 0)
                RT_WARN("dp", "not using NCCL: %s; gradients are staged through pinned memory", err);
            st = RT_OK;
        }
        if (st != RT_OK)
            return st;
    }
    d->staged = d->nccl == NULL;
    if (d->o.allreduce_bf16) { /* [train] allreduce_precision = bf16 */
        const size_t bytes = (size_t)rt_model_arena_len(d->model) * 2;
        void *p = NULL;
        if ((st = rt_kmalloc(d->ctx, bytes, &p)) != RT_OK)
            return rt_err(err, st, "cannot allocate %zu MiB of GPU memory for the bf16 gradients",
                          bytes >> 20);
        d->half = p;
    }
    return RT_OK;
}

void rt_dp_gpu_fini(rt_dp *d)
{
    dpt_destroy(d);
    if (d->nccl)
        rt_nccl_destroy(d->nccl);
    d->nccl = NULL;
    if (d->ctx)
        rt_kfree(d->ctx, d->half);
    d->half = NULL;
    for (int i = 0; i < DP_GRAPHS; i++)
        rt_kgraph_destroy(d->graph[i].g);
    if (!d->ctx)
        return;
    for (int i = 0; i < 2; i++) {
        rt_kfree_host(d->ctx, d->slot[i].cat);
        rt_kfree_host(d->ctx, d->slot[i].cont);
        rt_kfree_host(d->ctx, d->slot[i].label);
        rt_kevent_destroy(d->ctx, d->slot[i].copied);
    }
}
