/* rt_model.c — the model runtime (see rt_model.h): memory for the plan
 * model_plan.c builds, initialisation, the forward / backward / apply
 * sequences over the layer list (model_layers.c), state and summaries. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "rt_rng.h"

/* RNG streams: initialisation uses INIT_STREAM + tensor index at step 0;
 * dropout uses RT_MODEL_DROPOUT_STREAM + k at the current step. */
#define INIT_STREAM 0x1000u
/* Adam's segments (runs of tensors with one L2 coefficient): the CUDA
 * kernel keeps them in shared memory */
#define MAX_SEGS 256

static void *alloc_dev(rt_model *m, size_t bytes, rt_status *st)
{
    void *p = NULL;
    if (*st != RT_OK)
        return NULL;
    bytes = bytes ? bytes : 4;
    m->alloc_bytes += (int64_t)bytes;
    if (m->dry)
        return NULL;
    if (m->nallocs == m->allocs_cap) {
        int cap = m->allocs_cap ? 2 * m->allocs_cap : 64;
        void **na = realloc(m->allocs, (size_t)cap * sizeof *na);
        if (!na) {
            *st = RT_ERR_NOMEM;
            return NULL;
        }
        m->allocs = na;
        m->allocs_cap = cap;
    }
    *st = rt_kmalloc(m->ctx, bytes, &p);
    if (*st == RT_OK)
        m->allocs[m->nallocs++] = p;
    return p;
}

/* Initial values, drawn on the host from the counter-based RNG: tensor t
 * of the table from stream INIT_STREAM + t. */
static void init_host(const rt_model *m, float *p, float *buf)
{
    const rt_model_spec *s = &m->spec;
    for (int t = 0; t < m->ninfo; t++) {
        const rt_param_info *pi = &m->info[t];
        if (!pi->trainable)
            continue;
        float *dst = p + pi->off;
        const uint32_t stream = INIT_STREAM + (uint32_t)t;
        float bound = 0.0f;
        switch (m->init[t]) {
        case INIT_ONE:
            for (int64_t e = 0; e < pi->count; e++)
                dst[e] = 1.0f;
            continue;
        case INIT_ZERO:
            memset(dst, 0, (size_t)pi->count * sizeof(float));
            continue;
        case INIT_UNIFORM_005:
            for (int64_t e = 0; e < pi->count; e++)
                dst[e] = -0.05f + 0.1f * rt_rng_uniform(s->seed, stream, 0, (uint64_t)e);
            continue;
        case INIT_GLOROT: /* sqrt(6 / (fan_in + fan_out)) */
            bound = sqrtf(6.0f / (float)(pi->rows + pi->cols));
            break;
        case INIT_FAN_IN:
            bound = 1.0f / sqrtf((float)(m->fan_in[t] > 0 ? m->fan_in[t] : 1));
            break;
        case INIT_TOKEN:
            bound = 1.0f / sqrtf((float)(pi->cols > 0 ? pi->cols : 1));
            break;
        case INIT_FREQ: /* Box-Muller from two draws, again (further counters) past 3 std */
            for (int64_t e = 0; e < pi->count; e++) {
                float z = 4.0f;
                for (uint64_t a = 0; a < 64 && !(fabsf(z) <= 3.0f); a++) {
                    const uint64_t c = 2 * ((uint64_t)e + a * (uint64_t)pi->count);
                    const float u1 = 1.0f - rt_rng_uniform(s->seed, stream, 0, c); /* (0, 1] */
                    const float u2 = rt_rng_uniform(s->seed, stream, 0, c + 1);
                    z = sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958648f * u2);
                }
                dst[e] = s->frequency_scale * (fabsf(z) <= 3.0f ? z : 0.0f);
            }
            continue;
        case INIT_SIGNS:
            for (int64_t e = 0; e < pi->count; e++)
                dst[e] = rt_rng_uniform(s->seed, stream, 0, (uint64_t)e) < 0.5f ? -1.0f : 1.0f;
            continue;
        }
        for (int64_t e = 0; e < pi->count; e++)
            dst[e] = bound * (2.0f * rt_rng_uniform(s->seed, stream, 0, (uint64_t)e) - 1.0f);
    }
    /* batch norm: moving mean 0, variance 1; standardize: mean 0, std 1 */
    for (int t = 0; t < m->ninfo; t++) {
        const rt_param_info *pi = &m->info[t];
        if (pi->trainable)
            continue;
        const char *tail = strrchr(pi->name, '/');
        float v = tail && (!strcmp(tail, "/moving_variance") || !strcmp(tail, "/std") ||
                           !strcmp(tail, "/scale"))
                      ? 1.0f
                      : 0.0f;
        const bool edges = tail && !strcmp(tail, "/edges") && s->bins > 0;
        for (int64_t e = 0; e < pi->count; e++) /* edges: -3 to 3 until the trainer's */
            buf[pi->off + e] =
                edges ? -3.0f + 6.0f * (float)(e % (s->bins + 1)) / (float)s->bins : v;
    }
}

/* The optimizer's segments: runs of tensors with the same L2 coefficient
 * and weight-decay flag cover the
 * arena without gaps, each taking the padding after its tensors (zero
 * parameters with zero gradients stay zero). */
static int make_segs(const rt_model *m, rt_adam_seg *segs)
{
    int k = 0;
    for (int t = 0; t < m->nseg; t++) {
        const rt_param_info *pi = &m->info[t];
        int64_t end = t + 1 < m->nseg ? m->info[t + 1].off : m->arena;
        if (k > 0 && segs[k - 1].l2 == pi->l2 && segs[k - 1].decay == (int32_t)pi->decay &&
            segs[k - 1].off + segs[k - 1].len == pi->off)
            segs[k - 1].len = end - segs[k - 1].off;
        else
            segs[k++] = (rt_adam_seg){pi->off, end - pi->off, pi->l2, pi->decay};
    }
    return k;
}

/* The standardisation's scale and shift from its buffers' mean and std
 * (host copy hbuf): y = x / std - mean / std. */
static void refresh_standardize(rt_model *m, const float *hbuf)
{
    if (m->std_off < 0)
        return;
    for (int i = 0; i < m->nlayers; i++) {
        mlayer *L = &m->layers[i];
        if (L->kind != L_STANDARDIZE)
            continue;
        const int64_t F = L->out.cols;
        float *tmp = malloc((size_t)(2 * F + 1) * sizeof *tmp);
        RT_ASSERT(tmp);
        for (int64_t f = 0; f < F; f++) {
            const float mean = hbuf[L->boff + f], sd = hbuf[L->boff + F + f];
            const float scale = sd > 0.0f && isfinite(sd) ? 1.0f / sd : 1.0f;
            tmp[f] = scale;
            tmp[F + f] = -mean * scale;
        }
        rt_kmemcpy(m->ctx, L->save, tmp, (size_t)(2 * F) * sizeof *tmp, RT_H2D);
        rt_kctx_sync(m->ctx, NULL); /* tmp is freed next */
        free(tmp);
    }
}

/* Device memory: flat buffers, inputs, activations, saved statistics. */
rt_status model_allocate(rt_model *m)
{
    const size_t P = (size_t)m->arena, Bm = (size_t)m->max_batch;
    const rt_model_spec *s = &m->spec;
    rt_status st = RT_OK;
    const int64_t before = m->alloc_bytes;
    m->params = alloc_dev(m, P * 4, &st);
    m->grads = alloc_dev(m, P * 4, &st);
    m->adam_m = alloc_dev(m, P * 4, &st);
    m->adam_v = alloc_dev(m, P * 4, &st);
    m->buffers = alloc_dev(m, (size_t)m->n_buffers * 4, &st);
    m->param_bytes = m->alloc_bytes - before; /* the flat buffers: the parameters' share */
    m->segs = alloc_dev(m, (size_t)MAX_SEGS * sizeof(rt_adam_seg), &st);
    m->hp = alloc_dev(m, sizeof(rt_adam_hp), &st);
    m->step = alloc_dev(m, sizeof(int64_t), &st);
    m->metrics = alloc_dev(m, RT_MODEL_NMETRICS * sizeof(double), &st);
    m->gsq = alloc_dev(m, sizeof(double), &st);
    if (s->class_weighted)
        m->class_w = alloc_dev(m, (size_t)s->n_classes * 4, &st);
    m->emb_cols = alloc_dev(m, (size_t)(s->n_cat ? s->n_cat : 1) * sizeof(rt_embed_col), &st);
    m->in_cat = alloc_dev(m, Bm * (size_t)s->n_cat * 4, &st);
    m->in_cont = alloc_dev(m, Bm * (size_t)s->n_cont * 4, &st);
    m->in_label = alloc_dev(m, Bm * 4 * (s->weighted ? 2 : 1), &st);
    for (int t = 0; t < m->ntensors; t++) {
        mtensor *x = &m->tensors[t];
        if (x->input)
            continue;
        const size_t n = Bm * (size_t)(x->tpr * x->cols);
        x->data = alloc_dev(m, n * (x->bf16 ? 2 : 4), &st);
        if (x->grad && !x->gunused)
            x->gdata = alloc_dev(m, n * (x->gbf16 ? 2 : 4), &st);
    }
    for (int i = 0; i < m->nlayers; i++) {
        mlayer *L = &m->layers[i];
        if (L->save_fixed + L->save_per_sample > 0 || L->kind == L_BATCHNORM) /* F may be 0 */
            L->save =
                alloc_dev(m, (size_t)(L->save_fixed + L->save_per_sample * m->max_batch) * 4, &st);
    }
    for (int k = 0; k < 2 && m->scratch_len > 0; k++)
        m->scratch[k] = alloc_dev(m, Bm * (size_t)m->scratch_len * 4, &st);
    if (m->nobias_len > 0 && m->dev != RT_DEVICE_CPU) { /* the GPU's epilogues' (bias_of) */
        m->zeros = alloc_dev(m, (size_t)m->nobias_len * 4, &st);
        m->dbias = alloc_dev(m, (size_t)m->nobias_len * 4, &st);
    }
    if (m->ens_k > 0) {
        m->ens_label = alloc_dev(m, Bm * (size_t)m->ens_k * 4 * 2, &st);
        m->ens_invk = alloc_dev(m, Bm * (size_t)m->ens_k * 4, &st);
    }
    return st;
}

rt_status rt_model_create(const rt_model_spec *spec, rt_kctx *ctx, int64_t max_batch,
                          rt_model **out, char *err)
{
    *out = NULL;
    rt_status st = rt_model_spec_check(spec, err);
    if (st != RT_OK)
        return st;
    if (max_batch < 1 || max_batch > (1 << 24))
        return rt_err(err, RT_ERR_INVALID, "batch size %lld is out of range [1, 2^24]",
                      (long long)max_batch);
    rt_model *m = calloc(1, sizeof *m);
    if (!m)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    m->spec = *spec;
    if (spec->n_cat > 0 && spec->cat_names) { /* the names the spec lends, the model's own */
        const size_t bytes = (size_t)spec->n_cat * sizeof *spec->cat_names;
        if (!(m->cat_names = malloc(bytes))) {
            free(m);
            return rt_err(err, RT_ERR_NOMEM, "out of memory");
        }
        memcpy(m->cat_names, spec->cat_names, bytes);
        m->spec.cat_names = m->cat_names;
    }
    m->ctx = ctx;
    m->dev = rt_kctx_device(ctx);
    m->max_batch = max_batch;
    m->dropout_seed = spec->seed;
    if ((st = model_plan(m, err)) != RT_OK) {
        rt_model_destroy(m);
        return st;
    }
    if (rt_kctx_bf16_store(ctx))
        model_plan_bf16(m);
    rt_adam_seg *segs = malloc((size_t)(m->nseg + 1) * sizeof *segs);
    const int nseg = segs ? make_segs(m, segs) : 0;
    if (!segs || nseg > MAX_SEGS) {
        free(segs);
        rt_model_destroy(m);
        return segs ? rt_err(err, RT_ERR_INVALID,
                             "the model has %d runs of parameters with different L2 (at most %d)",
                             nseg, MAX_SEGS)
                    : rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    if ((st = model_allocate(m)) != RT_OK) {
        long long np = (long long)m->n_params;
        free(segs);
        rt_model_destroy(m);
        return rt_err(err, st, "cannot allocate the model's buffers (%lld parameters, batch %lld)",
                      np, (long long)max_batch);
    }
    /* host-side initial values and tables, copied once */
    const size_t P = (size_t)m->arena;
    float *hp = calloc(P + (size_t)m->n_buffers + 1, 4);
    if (!hp) {
        free(segs);
        rt_model_destroy(m);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    float *hbuf = hp + P;
    init_host(m, hp, hbuf);
    m->nseg = nseg;
    int64_t zero = 0;
    rt_kmemcpy(ctx, m->params, hp, P * 4, RT_H2D);
    rt_kmemcpy(ctx, m->buffers, hbuf, (size_t)m->n_buffers * 4, RT_H2D);
    rt_kmemcpy(ctx, m->segs, segs, (size_t)nseg * sizeof *segs, RT_H2D);
    if (m->class_w)
        rt_kmemcpy(ctx, m->class_w, spec->class_weight, (size_t)spec->n_classes * 4, RT_H2D);
    if (m->emb_host)
        rt_kmemcpy(ctx, m->emb_cols, m->emb_host, (size_t)spec->n_cat * sizeof *m->emb_host,
                   RT_H2D);
    rt_kmemcpy(ctx, m->step, &zero, sizeof zero, RT_H2D);
    rt_kmemset(ctx, m->adam_m, 0, P * 4);
    rt_kmemset(ctx, m->adam_v, 0, P * 4);
    rt_kmemset(ctx, m->grads, 0, P * 4);
    rt_kmemset(ctx, m->metrics, 0, RT_MODEL_NMETRICS * sizeof(double));
    /* the hyper-parameters are zero until set: a loss with gradients before
     * rt_model_set_hparams reads loss_norm 0 (the batch's own weight) */
    rt_kmemset(ctx, m->hp, 0, sizeof(rt_adam_hp));
    if (m->zeros)
        rt_kmemset(ctx, m->zeros, 0, (size_t)m->nobias_len * 4);
    if (m->ens_invk) { /* 1/k per member row: the weights of rows without weights */
        const size_t len = (size_t)(m->ens_k * m->max_batch);
        float *inv = malloc(len * 4);
        st = inv ? RT_OK : RT_ERR_NOMEM;
        for (size_t i = 0; inv && i < len; i++)
            inv[i] = 1.0f / (float)m->ens_k;
        if (inv)
            rt_kmemcpy(ctx, m->ens_invk, inv, len * 4, RT_H2D);
        if (inv && (st = rt_kctx_sync(ctx, err)) != RT_OK) {
            free(inv);
            inv = NULL;
        }
        free(inv);
        if (st != RT_OK) {
            free(hp);
            free(segs);
            rt_model_destroy(m);
            return st == RT_ERR_NOMEM ? rt_err(err, st, "out of memory") : st;
        }
    }
    refresh_standardize(m, hbuf);
    st = rt_kctx_sync(ctx, err); /* the host tables are freed next */
    free(hp);
    free(segs);
    if (st != RT_OK) {
        rt_model_destroy(m);
        return st;
    }
    *out = m;
    return RT_OK;
}

void rt_model_destroy(rt_model *m)
{
    if (!m)
        return;
    for (int i = m->nallocs - 1; i >= 0; i--)
        rt_kfree(m->ctx, m->allocs[i]);
    free(m->allocs);
    free(m->info);
    free(m->init);
    free(m->fan_in);
    free(m->emb_host);
    free(m->sync_buf);
    free(m->cat_names);
    free(m);
}

const rt_model_spec *rt_model_get_spec(const rt_model *m) { return &m->spec; }
rt_kctx *rt_model_kctx(rt_model *m) { return m->ctx; }
int64_t rt_model_max_batch(const rt_model *m) { return m->max_batch; }
int64_t rt_model_num_params(const rt_model *m) { return m->n_params; }
int64_t rt_model_num_buffers(const rt_model *m) { return m->n_buffers; }

int rt_model_batch_norms(const rt_model *m)
{
    int n = 0;
    for (int i = 0; i < m->nlayers; i++)
        n += m->layers[i].kind == L_BATCHNORM;
    return n;
}

bool rt_model_bn_lag(double momentum, int64_t steps, char *buf, size_t len)
{
    const double left = steps > 0 ? pow(momentum, (double)steps) : 1;
    if (!(left > 0.05))
        return false;
    snprintf(buf, len,
             "the batch norm's moving statistics, which validation and predictions use, keep "
             "%.0f%% of their start (mean 0, variance 1) after the job's %lld steps "
             "(bn_momentum %g): its validation figures will lag its training, most where inputs "
             "are far from mean 0 and variance 1 (more steps, a lower [model] bn_momentum, or "
             "continuous_norm = standardize avoid it)",
             100 * left, (long long)steps, momentum);
    return true;
}
int64_t rt_model_arena_len(const rt_model *m) { return m->arena; }
int64_t rt_model_device_bytes(const rt_model *m) { return m->alloc_bytes; }
float *rt_model_params(rt_model *m) { return m->params; }
float *rt_model_grads(rt_model *m) { return m->grads; }
float *rt_model_buffers(rt_model *m) { return m->buffers; }
void rt_model_set_dropout_seed(rt_model *m, uint64_t seed) { m->dropout_seed = seed; }

const rt_param_info *rt_model_param_table(const rt_model *m, int *n)
{
    *n = m->ninfo;
    return m->info;
}

rt_model_inputs rt_model_input_buffers(rt_model *m)
{
    rt_model_inputs io = {m->in_cat, m->in_cont, m->in_label};
    return io;
}

void rt_model_set_batch(rt_model *m, const int32_t *cat, const float *cont, const float *label,
                        int64_t n)
{
    RT_ASSERT(n >= 0 && n <= m->max_batch);
    const rt_model_spec *s = &m->spec;
    if (cat)
        rt_kmemcpy(m->ctx, m->in_cat, cat, (size_t)(n * s->n_cat) * 4, RT_H2D);
    if (cont)
        rt_kmemcpy(m->ctx, m->in_cont, cont, (size_t)(n * s->n_cont) * 4, RT_H2D);
    if (label)
        rt_kmemcpy(m->ctx, m->in_label, label, (size_t)n * 4, RT_H2D);
    if (label && s->weighted) /* the weights after the labels, at a fixed place */
        rt_kmemcpy(m->ctx, m->in_label + m->max_batch, label + n, (size_t)n * 4, RT_H2D);
}

rt_status rt_model_set_standardize(rt_model *m, const float *mean, const float *std, char *err)
{
    const int64_t F = m->spec.n_cont;
    if (m->std_off < 0)
        return rt_err(err, RT_ERR_INVALID, "the model does not standardise its continuous inputs");
    float *hbuf = malloc((size_t)(m->n_buffers + 1) * sizeof *hbuf);
    if (!hbuf)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    rt_kmemcpy(m->ctx, hbuf, m->buffers, (size_t)m->n_buffers * 4, RT_D2H);
    rt_status st = rt_kctx_sync(m->ctx, err);
    if (st == RT_OK) {
        memcpy(hbuf + m->std_off, mean, (size_t)F * sizeof *hbuf);
        memcpy(hbuf + m->std_off + F, std, (size_t)F * sizeof *hbuf);
        rt_kmemcpy(m->ctx, m->buffers, hbuf, (size_t)m->n_buffers * 4, RT_H2D);
        refresh_standardize(m, hbuf);
        st = rt_kctx_sync(m->ctx, err);
    }
    free(hbuf);
    return st;
}

/* n_cont rows of `width` values, each row ascending (`what` names them in
 * the error), copied into the buffers at off (-1: the model has none:
 * `none` says so). */
static rt_status set_ascending_rows(rt_model *m, int64_t off, int64_t width, const float *v,
                                    const char *what, const char *none, char *err)
{
    const int64_t len = (int64_t)m->spec.n_cont * width;
    if (off < 0)
        return rt_err(err, RT_ERR_INVALID, "%s", none);
    for (int64_t i = 1; i < len; i++)
        if (i % width != 0 && !(v[i] >= v[i - 1]))
            return rt_err(err, RT_ERR_INVALID, "continuous column %lld's %s are not ascending",
                          (long long)(i / width), what);
    rt_kmemcpy(m->ctx, m->buffers + off, v, (size_t)len * sizeof *v, RT_H2D);
    return rt_kctx_sync(m->ctx, err);
}

rt_status rt_model_set_ple_edges(rt_model *m, const float *edges, char *err)
{
    return set_ascending_rows(m, m->ple_off, m->spec.bins + 1, edges, "bin edges",
                              "the model has no piecewise-linear embeddings", err);
}

rt_status rt_model_set_robust(rt_model *m, const float *center, const float *scale, char *err)
{
    const int64_t F = m->spec.n_cont;
    if (m->robust_off < 0)
        return rt_err(err, RT_ERR_INVALID, "the model does not scale its inputs robustly");
    rt_kmemcpy(m->ctx, m->buffers + m->robust_off, center, (size_t)F * sizeof *center, RT_H2D);
    rt_kmemcpy(m->ctx, m->buffers + m->robust_off + F, scale, (size_t)F * sizeof *scale, RT_H2D);
    return rt_kctx_sync(m->ctx, err);
}

rt_status rt_model_set_quantiles(rt_model *m, const float *q, char *err)
{
    return set_ascending_rows(m, m->quant_off, m->spec.n_quantiles, q, "quantiles",
                              "the model does not map its inputs by quantiles", err);
}

/* ---- step ----------------------------------------------------------------- */

rt_status rt_model_set_bn_sync(rt_model *m, rt_bn_sync_fn fn, void *user, char *err)
{
    if (fn && m->dev != RT_DEVICE_CPU)
        return rt_err(err, RT_ERR_UNSUPPORTED,
                      "synchronized batch norm runs on CPU models only (not yet on GPUs)");
    int64_t F = 0;
    for (int i = 0; i < m->nlayers; i++)
        if (m->layers[i].kind == L_BATCHNORM && m->layers[i].out.cols > F)
            F = m->layers[i].out.cols;
    if (fn && !m->sync_buf && !(m->sync_buf = calloc(2 * (size_t)F + 2, sizeof(double))))
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    m->bn_sync = fn;
    m->bn_sync_user = user;
    m->sync_st = RT_OK;
    return RT_OK;
}

rt_status rt_model_sync_status(rt_model *m, char *err)
{
    rt_status st = m->sync_st;
    if (st != RT_OK)
        rt_err(err, st, "%s", m->sync_err);
    m->sync_st = RT_OK;
    return st;
}

bool rt_model_syncs_in_backward(const rt_model *m)
{
    for (int i = 0; m->bn_sync && i < m->nlayers; i++)
        if (m->layers[i].kind == L_BATCHNORM && m->tensors[m->layers[i].in[0].t].grad)
            return true;
    return false;
}

void rt_model_forward(rt_model *m, int64_t n, bool train)
{
    RT_ASSERT(n >= 0 && n <= m->max_batch);
    for (int i = 0; i < m->nlayers; i++)
        model_layer_fwd(m, &m->layers[i], n, train);
}

/* tabm's training loss: the mean of the k members' losses — the loss of
 * each member's row against its copy of the label, each row weighing 1/k
 * of its sample (so the weights still sum to the batch's and loss_norm
 * keeps its meaning). */
static void members_loss(rt_model *m, int64_t n)
{
    const mtensor *t = &m->tensors[m->t_loss];
    const rt_model_spec *s = &m->spec;
    const int64_t k = m->ens_k, N = n * k;
    float *lab = m->ens_label, *w = m->ens_invk;
    rt_k_ens_repeat(m->ctx, rt_vf32(m->in_label, n, 1, 1, m->dev), rt_vf32(lab, n, k, k, m->dev));
    if (s->weighted) {
        w = lab + k * m->max_batch;
        rt_k_ens_repeat(m->ctx, rt_vf32(m->in_label + m->max_batch, n, 1, 1, m->dev),
                        rt_vf32(w, n, k, k, m->dev));
        rt_k_scale(m->ctx, w, N, 1.0f / (float)k);
    }
    const rt_loss_desc d = {.kind = s->loss,
                            .K = s->n_out,
                            .huber_delta = s->huber_delta,
                            .smoothing = s->label_smoothing,
                            .class_w = m->class_w};
    rt_k_loss(m->ctx, &d, rt_vf32(t->data, N, s->n_out, s->n_out, m->dev), lab, w,
              &m->hp->loss_norm, rt_vf32(t->gdata, N, s->n_out, s->n_out, m->dev), m->metrics);
}

/* The scaled-sigmoid head whose backward the loss runs (model_plan), or NULL */
static const mlayer *fused_head(const rt_model *m)
{
    for (int i = m->nlayers - 1; i >= 0; i--)
        if (m->layers[i].kind == L_HEAD && m->layers[i].fused)
            return &m->layers[i];
    return NULL;
}

void rt_model_loss(rt_model *m, int64_t n, bool with_grad)
{
    if (m->ens_k > 0 && with_grad) {
        members_loss(m, n);
        return;
    }
    const mtensor *t = &m->tensors[m->t_pred];
    const rt_model_spec *s = &m->spec;
    rt_loss_desc d = {.kind = s->loss,
                      .K = s->n_out,
                      .huber_delta = s->huber_delta,
                      .smoothing = s->label_smoothing,
                      .class_w = m->class_w};
    rt_view z = rt_vf32(t->data, n, s->n_out, s->n_out, m->dev);
    rt_view dz = rt_vf32(with_grad ? t->gdata : NULL, n, s->n_out, s->n_out, m->dev);
    const mlayer *head = with_grad ? fused_head(m) : NULL;
    if (head) { /* the gradient of the head's input, the head's backward done here */
        d.head_scale = s->head_scale;
        dz = model_slot(m, head->in[0], n, true);
        RT_ASSERT(dz.p && dz.cols == 1 && dz.ld == 1 && dz.dtype == RT_F32);
    }
    rt_k_loss(m->ctx, &d, z, m->in_label, s->weighted ? m->in_label + m->max_batch : NULL,
              with_grad ? &m->hp->loss_norm : NULL, dz, m->metrics);
}

void rt_model_backward(rt_model *m, int64_t n, rt_grad_hook hook, void *user)
{
    RT_ASSERT(n >= 0 && n <= m->max_batch);
    for (int i = m->nlayers - 1; i >= 0; i--) {
        mlayer *L = &m->layers[i];
        model_layer_bwd(m, L, n);
        if (hook && L->np > 0)
            hook(user, L->goff, L->glen);
    }
}

void rt_model_set_hparams(rt_model *m, const rt_adam_hp *hp)
{
    m->clip = hp->clip_norm > 0; /* fixed for a job: a captured graph keeps the norm's op */
    rt_kmemcpy(m->ctx, m->hp, hp, sizeof *hp, RT_H2D);
}

void rt_model_update(rt_model *m)
{
    if (m->clip)
        rt_k_sqnorm(m->ctx, m->grads, m->arena, m->gsq);
    rt_k_optim(m->ctx, m->params, m->grads, m->adam_m, m->adam_v, m->arena, m->segs, m->nseg, m->hp,
               m->step, m->clip ? m->gsq : NULL);
}

void rt_model_apply(rt_model *m, const rt_adam_hp *hp)
{
    rt_model_set_hparams(m, hp);
    rt_model_update(m);
}

void rt_model_train_step(rt_model *m, int64_t n, const rt_adam_hp *hp)
{
    rt_model_set_hparams(m, hp); /* the loss reads loss_norm */
    rt_model_forward(m, n, true);
    rt_model_loss(m, n, true);
    rt_model_backward(m, n, NULL, NULL);
    rt_model_apply(m, hp);
}

/* ---- metrics and state ------------------------------------------------------ */

void rt_model_metrics_reset(rt_model *m)
{
    rt_kmemset(m->ctx, m->metrics, 0, RT_MODEL_NMETRICS * sizeof(double));
}

rt_status rt_model_metrics_read(rt_model *m, double out[RT_MODEL_NMETRICS], char *err)
{
    rt_kmemcpy(m->ctx, out, m->metrics, RT_MODEL_NMETRICS * sizeof(double), RT_D2H);
    return rt_kctx_sync(m->ctx, err);
}

rt_status rt_model_read_pred(rt_model *m, float *host, int64_t n, char *err)
{
    RT_ASSERT(n >= 0 && n <= m->max_batch);
    rt_kmemcpy(m->ctx, host, m->tensors[m->t_pred].data, (size_t)(n * m->spec.n_out) * 4, RT_D2H);
    return rt_kctx_sync(m->ctx, err);
}

rt_status rt_model_l2_penalty(rt_model *m, double *out, char *err)
{
    *out = 0.0;
    float *p = malloc((size_t)m->n_params * 4 + 4);
    if (!p)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    rt_status st = rt_model_get_state(m, p, NULL, NULL, NULL, NULL, err);
    double total = 0.0;
    for (int t = 0; st == RT_OK && t < m->ninfo; t++) {
        const rt_param_info *pi = &m->info[t];
        if (!pi->trainable || pi->l2 == 0.0f)
            continue;
        double s2 = 0.0;
        for (int64_t e = 0; e < pi->count; e++)
            s2 += (double)p[pi->pos + e] * p[pi->pos + e];
        total += pi->l2 * s2;
    }
    free(p);
    *out = total;
    return st;
}

/* Copy each trainable tensor between the packed host state and the arena. */
static void copy_tensors(rt_model *m, float *host, float *arena, rt_copy kind)
{
    for (int t = 0; t < m->ninfo; t++) {
        const rt_param_info *pi = &m->info[t];
        if (!pi->trainable)
            continue;
        size_t bytes = (size_t)pi->count * 4;
        if (kind == RT_D2H)
            rt_kmemcpy(m->ctx, host + pi->pos, arena + pi->off, bytes, RT_D2H);
        else
            rt_kmemcpy(m->ctx, arena + pi->off, host + pi->pos, bytes, RT_H2D);
    }
}

rt_status rt_model_get_state(rt_model *m, float *params, float *adam_m, float *adam_v,
                             float *buffers, int64_t *step, char *err)
{
    if (params)
        copy_tensors(m, params, m->params, RT_D2H);
    if (adam_m)
        copy_tensors(m, adam_m, m->adam_m, RT_D2H);
    if (adam_v)
        copy_tensors(m, adam_v, m->adam_v, RT_D2H);
    if (buffers)
        rt_kmemcpy(m->ctx, buffers, m->buffers, (size_t)m->n_buffers * 4, RT_D2H);
    if (step)
        rt_kmemcpy(m->ctx, step, m->step, sizeof *step, RT_D2H);
    return rt_kctx_sync(m->ctx, err);
}

rt_status rt_model_set_state(rt_model *m, const float *params, const float *adam_m,
                             const float *adam_v, const float *buffers, const int64_t *step,
                             char *err)
{
    if (params)
        copy_tensors(m, (float *)params, m->params, RT_H2D);
    if (adam_m)
        copy_tensors(m, (float *)adam_m, m->adam_m, RT_H2D);
    if (adam_v)
        copy_tensors(m, (float *)adam_v, m->adam_v, RT_H2D);
    if (buffers) {
        rt_kmemcpy(m->ctx, m->buffers, buffers, (size_t)m->n_buffers * 4, RT_H2D);
        refresh_standardize(m, buffers);
    }
    if (step)
        rt_kmemcpy(m->ctx, m->step, step, sizeof *step, RT_H2D);
    return rt_kctx_sync(m->ctx, err);
}

int64_t rt_model_step(rt_model *m)
{
    int64_t s = 0;
    rt_model_get_state(m, NULL, NULL, NULL, NULL, &s, NULL);
    return s;
}

/* ---- summaries ----------------------------------------------------------------- */

double rt_model_flops_per_sample(const rt_model *m)
{
    double f = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const mlayer *L = &m->layers[i];
        const mtensor *t = &m->tensors[L->out.t];
        const double rows = L->out.tok >= 0 ? 1.0 : (double)t->tpr;
        if (L->kind == L_LINEAR || L->kind == L_TOKEN_LINEAR) /* the latter: each token's */
            f += 6.0 * rows * (double)L->in[0].cols * (double)L->out.cols;
        else if (L->kind == L_ATTENTION) /* q kᵀ and P v, forward; four products backward */
            f += 6.0 * 2.0 * (double)m->tokens * (double)m->tokens * (double)L->out.cols;
    }
    return f;
}

void rt_model_summary(const rt_model *m, FILE *f)
{
    fprintf(f, "%-44s %-22s %-16s %12s\n", "layer", "type", "output shape", "params");
    int64_t trainable = 0, fixed = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const mlayer *L = &m->layers[i];
        const mtensor *t = &m->tensors[L->out.t];
        int64_t count = L->nbuf;
        for (int k = 0; k < L->np; k++)
            count += m->info[L->p0 + k].count;
        char shape[48];
        if (t->tpr > 1 && L->out.tok < 0)
            snprintf(shape, sizeof shape, "(%lld, %lld)", (long long)t->tpr,
                     (long long)L->out.cols);
        else
            snprintf(shape, sizeof shape, "(%lld)", (long long)L->out.cols);
        char kind[32];
        if (L->kind == L_ACT || (L->kind == L_LINEAR && L->act != RT_ACT_NONE)) {
            snprintf(kind, sizeof kind, "%s%s", L->kind == L_LINEAR ? "Dense+" : "",
                     rt_act_names[L->act]);
        } else if (L->kind == L_ENS_SCALE && L->act != RT_ACT_NONE) {
            snprintf(kind, sizeof kind, "EnsScale+%s%s", rt_act_names[L->act],
                     L->rate > 0.0f ? "+Dropout" : "");
        } else {
            snprintf(kind, sizeof kind, "%s", model_kind_name(L->kind));
        }
        fprintf(f, "%-44s %-22s %-16s %12lld\n", L->name, kind, shape, (long long)count);
        trainable += count - L->nbuf;
        fixed += L->nbuf;
    }
    fprintf(f, "total params:         %lld\n", (long long)(trainable + fixed));
    fprintf(f, "trainable params:     %lld\n", (long long)trainable);
    fprintf(f, "non-trainable params: %lld\n", (long long)fixed);
}

void rt_model_summary_tensors(const rt_model *m, FILE *f)
{
    fprintf(f, "%-44s %14s %12s\n", "tensor", "shape", "values");
    for (int t = 0; t < m->ninfo; t++) {
        const rt_param_info *pi = &m->info[t];
        char shape[48];
        if (pi->rows == 1)
            snprintf(shape, sizeof shape, "(%lld)", (long long)pi->cols);
        else
            snprintf(shape, sizeof shape, "(%lld, %lld)", (long long)pi->rows, (long long)pi->cols);
        fprintf(f, "%-44s %14s %12lld%s\n", pi->name, shape, (long long)pi->count,
                pi->trainable ? "" : "  (non-trainable)");
    }
}
