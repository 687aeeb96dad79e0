/* rt_dp.c — see rt_dp.h. */
#include "rt_run.h"
#include "rt_dp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_impl.h"
#include "rt_log.h"
#include "rt_time.h"

static rt_status comm_error(rt_dp *d, rt_status st, char *err);
static rt_status bn_sync(void *user, double *v, int64_t n, char *err);

static void on_grads_ready(void *user, int64_t off, int64_t count)
{
    rt_dp *d = user;
    if (d->trace) {
        int64_t now = rt_now_ns();
        rt_trace_span(d->trace, RT_SPAN_LAYER, d->mark_ns, now, d->steps, d->layer++);
        d->mark_ns = now;
    }
    if (d->fusion && d->overlap)
        rt_fusion_ready(d->fusion, (size_t)off, (size_t)count);
}

void rt_dp_set_trace(rt_dp *d, rt_trace *t)
{
    d->trace = t;
    if (rt_kctx_device(d->ctx) != RT_DEVICE_CUDA)
        return;
    dpt_destroy(d); /* GPU steps: timed by marks on the device */
    char err[RT_ERR_LEN];
    if (t && dpt_create(d, err) != RT_OK)
        RT_WARN("dp", "no timeline of the GPU steps: %s", err);
}

double rt_dp_wait_seconds(rt_dp *d)
{
    double s = d->wait_s;
    d->wait_s = 0;
    return s;
}

rt_status rt_dp_allgather_f64(rt_dp *d, double mine, double *all, char *err)
{
    all[0] = mine;
    if (d->size == 1)
        return RT_OK;
    rt_status st = rt_allgather(d->comm, &mine, all, sizeof mine);
    return st == RT_OK ? RT_OK : comm_error(d, st, err);
}

void rt_dp_opts_defaults(rt_dp_opts *o)
{
    memset(o, 0, sizeof *o);
    o->device = RT_DEVICE_CPU;
    o->bucket_bytes = (size_t)RT_RUN_BUCKET_MB << 20;
    o->max_batch = 1024;
    o->nccl = true;
    o->graphs = true;
    o->timeout_us = RT_RUN_TIMEOUT_S * 1000000LL;
}

/* "1.5 GiB" */
static const char *gib(int64_t bytes, char *buf, size_t len)
{
    if (bytes >= (int64_t)1 << 30)
        snprintf(buf, len, "%.1f GiB", (double)bytes / (double)(1 << 30));
    else
        snprintf(buf, len, "%.0f MiB", (double)bytes / (double)(1 << 20));
    return buf;
}

rt_status rt_dp_check_memory(const rt_model_spec *spec, rt_kctx *ctx, const rt_dp_opts *o,
                             char *err)
{
    rt_model_memory mem;
    int64_t avail = -1;
    const int64_t rows = o->max_batch;
    rt_status st = rt_model_spec_memory(spec, rows, ctx, &mem, err);
    if (st != RT_OK || rt_kctx_mem_available(ctx, &avail, NULL) != RT_OK)
        return st;
    const bool gpu = rt_kctx_device(ctx) == RT_DEVICE_CUDA;
    const bool half = gpu && o->allreduce_bf16; /* rt_dp_gpu_init's bf16 gradients */
    if (half) {
        const int64_t bytes = 2 * mem.arena;
        mem.param_bytes += bytes;
        mem.total_bytes += bytes;
    }
    const int share = o->mem_share > 0 ? o->mem_share : 1;
    if (mem.total_bytes <= avail / share)
        return RT_OK;
    char a[32], b[32], c[32], dv[32], e[32], name[160] = "the CPU";
    if (gpu)
        rt_cuda_device_name(name, sizeof name);
    return rt_err(err, RT_ERR_NOMEM,
                  "the %s model needs %s at %lld rows a pass (%lld parameters with their "
                  "gradients and Adam's moments%s: %s; activations and their gradients: %s); "
                  "%s has %s available%s%s%s: lower [train] batch_size or eval_batch_size, or "
                  "make the model smaller",
                  rt_arch_names[spec->arch], gib(mem.total_bytes, a, sizeof a), (long long)rows,
                  (long long)mem.params, half ? ", and the gradients' bf16 copy" : "",
                  gib(mem.param_bytes, b, sizeof b), gib(mem.activation_bytes, c, sizeof c), name,
                  gib(avail, dv, sizeof dv), share > 1 ? ", shared by its ranks: " : "",
                  share > 1 ? gib(avail / share, e, sizeof e) : "", share > 1 ? " each" : "");
}

rt_status rt_dp_create(const rt_model_spec *spec, const rt_dp_opts *o, rt_comm *comm, rt_dp **out,
                       char *err)
{
    *out = NULL;
    rt_dp *d = calloc(1, sizeof *d);
    if (!d)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    d->o = *o;
    if (d->o.bucket_bytes == 0)
        d->o.bucket_bytes = (size_t)RT_RUN_BUCKET_MB << 20;
    if (d->o.timeout_us <= 0)
        d->o.timeout_us = RT_RUN_TIMEOUT_S * 1000000LL;
    d->comm = comm;
    d->size = comm ? rt_comm_size(comm) : 1;
    if (o->sync_batch_norm && d->size > 1 && o->device == RT_DEVICE_CUDA) {
        free(d);
        return rt_err(err, RT_ERR_UNSUPPORTED,
                      "[model] sync_batch_norm runs on CPU workers only, not yet on GPUs: set it "
                      "to false or model.device = cpu");
    }
    rt_status st = rt_kctx_create(o->device, o->threads, &d->ctx, err);
    if (st == RT_OK) {
        rt_kctx_set_tf32(d->ctx, o->tf32);
        rt_kctx_set_bf16(d->ctx, o->bf16); /* where it can: the trainer says which ran */
        st = rt_dp_check_memory(spec, d->ctx, o, err);
    }
    if (st == RT_OK)
        st = rt_model_create(spec, d->ctx, o->max_batch, &d->model, err);
    if (st == RT_OK) {
        /* every rank draws its own dropout masks */
        int rank = comm ? rt_comm_rank(comm) : 0;
        rt_model_set_dropout_seed(d->model, spec->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(rank + 1)));
        d->nhost = rt_model_num_params(d->model) > rt_model_num_buffers(d->model)
                       ? rt_model_num_params(d->model)
                       : rt_model_num_buffers(d->model);
        d->host = malloc((size_t)d->nhost * sizeof *d->host);
        d->zeros = calloc((size_t)o->max_batch * 2, sizeof *d->zeros); /* labels, weights */
        if (!d->host || !d->zeros)
            st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    /* synchronized batch norm: every batch norm on the global batch; one
     * inside the network allreduces during backward, on the ring the
     * gradient buckets use, so those wait for backward to finish */
    d->overlap = true;
    if (st == RT_OK && o->sync_batch_norm && d->size > 1 && o->device == RT_DEVICE_CPU) {
        st = rt_model_set_bn_sync(d->model, bn_sync, d, err);
        d->overlap = !rt_model_syncs_in_backward(d->model);
    }
    if (st == RT_OK && d->size > 1 && o->device == RT_DEVICE_CPU)
        st = rt_fusion_create(comm, rt_model_grads(d->model), (size_t)rt_model_arena_len(d->model),
                              d->o.bucket_bytes, &d->fusion, err);
    if (st == RT_OK && d->fusion && o->allreduce_bf16)
        st = rt_fusion_set_bf16(d->fusion, true, err);
    if (st == RT_OK && o->device == RT_DEVICE_CUDA)
        st = rt_dp_gpu_init(d, err);
    if (st != RT_OK) {
        rt_dp_destroy(d);
        return st;
    }
    *out = d;
    return RT_OK;
}

void rt_dp_destroy(rt_dp *d)
{
    if (!d)
        return;
    rt_fusion_destroy(d->fusion);
    rt_dp_gpu_fini(d);
    rt_model_destroy(d->model);
    rt_kctx_destroy(d->ctx);
    free(d->zeros);
    free(d->host);
    free(d);
}

rt_model *rt_dp_model(rt_dp *d) { return d->model; }
int rt_dp_buckets(const rt_dp *d)
{
    return d->fusion ? rt_fusion_buckets(d->fusion) : d->nccl && d->buckets > 0 ? d->buckets : 1;
}

const char *rt_dp_gradient_path(const rt_dp *d)
{
    return d->size == 1 ? "none" : d->fusion ? "fused ring allreduce" : d->nccl ? "NCCL"
                                                                           : "staged through pinned memory";
}

static rt_status comm_error(rt_dp *d, rt_status st, char *err)
{
    return rt_err(err, st, "%s", d->comm ? rt_comm_last_error(d->comm) : "communication failed");
}

/* Broadcast one host copy of a state part (which: 0 params, 1 m, 2 v, 3 buffers). */
static rt_status bcast_part(rt_dp *d, int which, int64_t n, int root, char *err)
{
    rt_model *m = d->model;
    float *p[4] = {NULL, NULL, NULL, NULL};
    p[which] = d->host;
    rt_status st = rt_model_get_state(m, p[0], p[1], p[2], p[3], NULL, err);
    if (st == RT_OK && (st = rt_broadcast(d->comm, d->host, (size_t)n * 4, root)) != RT_OK)
        return comm_error(d, st, err);
    if (st == RT_OK)
        st = rt_model_set_state(m, p[0], p[1], p[2], p[3], NULL, err);
    return st;
}

rt_status rt_dp_broadcast_state(rt_dp *d, int root, bool optimizer, char *err)
{
    if (d->size == 1)
        return RT_OK;
    int64_t np = rt_model_num_params(d->model), nb = rt_model_num_buffers(d->model);
    rt_status st = bcast_part(d, 0, np, root, err);
    if (st == RT_OK && nb > 0)
        st = bcast_part(d, 3, nb, root, err);
    if (st == RT_OK && optimizer) {
        st = bcast_part(d, 1, np, root, err);
        if (st == RT_OK)
            st = bcast_part(d, 2, np, root, err);
        int64_t step = 0;
        if (st == RT_OK)
            st = rt_model_get_state(d->model, NULL, NULL, NULL, NULL, &step, err);
        if (st == RT_OK && (st = rt_broadcast(d->comm, &step, sizeof step, root)) != RT_OK)
            return comm_error(d, st, err);
        if (st == RT_OK)
            st = rt_model_set_state(d->model, NULL, NULL, NULL, NULL, &step, err);
    }
    return st;
}

/* Synchronized batch norm: the model's sums over the ranks. */
static rt_status bn_sync(void *user, double *v, int64_t n, char *err)
{
    rt_dp *d = user;
    rt_status st = rt_allreduce(d->comm, v, (size_t)n, RT_C_F64, RT_SUM);
    return st == RT_OK ? RT_OK : comm_error(d, st, err);
}

rt_status rt_dp_step(rt_dp *d, const int32_t *cat, const float *cont, const float *label,
                     int64_t n, const rt_adam_hp *hp, char *err)
{
    if (rt_kctx_device(d->ctx) == RT_DEVICE_CUDA)
        return rt_dp_gpu_step(d, cat, cont, label, n, hp, err);
    rt_model *m = d->model;
    rt_trace *tr = d->trace;
    const int64_t t0 = rt_now_ns();
    rt_adam_hp h = *hp;
    h.grad_scale = hp->grad_scale / (float)d->size; /* the sum becomes the average */
    rt_model_set_hparams(m, &h); /* the loss reads its loss_norm */
    rt_model_set_batch(m, cat, cont, label, n);
    rt_model_forward(m, n, true);
    rt_model_loss(m, n, true);
    const int64_t t1 = rt_now_ns();
    rt_trace_span(tr, RT_SPAN_FORWARD, t0, t1, d->steps, 0);
    d->mark_ns = t1;
    d->layer = 0;
    if (d->fusion && d->overlap)
        rt_fusion_begin(d->fusion);
    rt_model_backward(m, n, (d->fusion && d->overlap) || tr ? on_grads_ready : NULL, d);
    if (d->fusion && !d->overlap) { /* backward's own allreduces are done: now the buckets */
        rt_fusion_begin(d->fusion);
        rt_fusion_ready(d->fusion, 0, (size_t)rt_model_arena_len(m));
    }
    rt_status sst = rt_model_sync_status(m, err);
    if (sst != RT_OK) {
        if (d->fusion)
            rt_fusion_wait(d->fusion, NULL);
        return sst;
    }
    const int64_t t2 = rt_now_ns();
    rt_trace_span(tr, RT_SPAN_BACKWARD, t1, t2, d->steps, 0);
    if (d->fusion) {
        rt_status st = rt_fusion_wait(d->fusion, err);
        const int64_t t3 = rt_now_ns();
        d->wait_s += (double)(t3 - t2) / 1e9;
        rt_trace_span(tr, RT_SPAN_WAIT, t2, t3, d->steps, 0);
        for (int b = 0; tr && b < rt_fusion_buckets(d->fusion); b++) {
            int64_t s0, s1;
            if (rt_fusion_bucket_time(d->fusion, b, &s0, &s1))
                rt_trace_span(tr, RT_SPAN_ALLREDUCE, s0, s1, d->steps, b);
        }
        if (st != RT_OK)
            return st;
    }
    const int64_t t4 = rt_now_ns();
    rt_model_update(m);
    rt_trace_span(tr, RT_SPAN_OPTIMIZER, t4, rt_now_ns(), d->steps, 0);
    d->steps++;
    return rt_kctx_check(d->ctx, err);
}

rt_status rt_dp_sync_buffers(rt_dp *d, char *err)
{
    int64_t nb = rt_model_num_buffers(d->model);
    if (d->size == 1 || nb == 0)
        return RT_OK;
    rt_status st = rt_model_get_state(d->model, NULL, NULL, NULL, d->host, NULL, err);
    if (st != RT_OK)
        return st;
    if ((st = rt_allreduce(d->comm, d->host, (size_t)nb, RT_C_F32, RT_AVG)) != RT_OK)
        return comm_error(d, st, err);
    return rt_model_set_state(d->model, NULL, NULL, NULL, d->host, NULL, err);
}

rt_status rt_dp_forward_eval(rt_dp *d, const int32_t *cat, const float *cont, const float *label,
                             int64_t n, float *pred, char *err)
{
    rt_model *m = d->model;
    const rt_model_spec *s = rt_model_get_spec(m);
    int64_t B = rt_model_max_batch(m);
    for (int64_t off = 0; off < n; off += B) {
        int64_t k = n - off < B ? n - off : B;
        const float *lab = label ? label + off : d->zeros;
        if (label && s->weighted) { /* this chunk's labels, then its weights */
            memcpy(d->zeros, label + off, (size_t)k * 4);
            memcpy(d->zeros + k, label + n + off, (size_t)k * 4);
            lab = d->zeros;
        }
        rt_model_set_batch(m, cat + off * s->n_cat, cont + off * s->n_cont, lab, k);
        rt_model_forward(m, k, false);
        if (label)
            rt_model_loss(m, k, false);
        if (label && s->weighted)
            memset(d->zeros, 0, (size_t)(2 * k) * 4);
        if (pred) {
            rt_status st = rt_model_read_pred(m, pred + off * s->n_out, k, err);
            if (st != RT_OK)
                return st;
        }
    }
    return rt_kctx_check(d->ctx, err);
}

rt_status rt_dp_metrics_allreduce(rt_dp *d, double out[RT_MODEL_NMETRICS], char *err)
{
    rt_status st = rt_model_metrics_read(d->model, out, err);
    if (st != RT_OK)
        return st;
    rt_model_metrics_reset(d->model);
    if (d->size > 1 && (st = rt_allreduce(d->comm, out, RT_MODEL_NMETRICS, RT_C_F64, RT_SUM)) != RT_OK)
        return comm_error(d, st, err);
    return RT_OK;
}
