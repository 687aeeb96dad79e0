/* model_layers.c — each layer kind's forward and backward (model_impl.h),
 * written against the kernel API only, so the same code runs on the CPU
 * and on CUDA (where every call only enqueues: capturable).
 *
 * Backward of a layer: its output slot's gradient is final (every reader
 * of the output ran before it, in reverse order); it writes its parameters'
 * gradients into the arena and, for each input that has a gradient, writes
 * it (gmode 0), or adds to what a later reader wrote through a scratch
 * buffer (gmode 1), zeroing it first when it is the first to touch a slot
 * that covers part of the tensor (gmode 2). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model_impl.h"

rt_view model_slot(const rt_model *m, mslot s, int64_t n, bool grad)
{
    const mtensor *t = &m->tensors[s.t];
    float *base = t->input ? (grad ? NULL : m->in_cont) : grad ? t->gdata : t->data;
    rt_view v;
    if (s.tok < 0)
        v = rt_vf32(base ? base + s.col0 : NULL, n * t->tpr, s.cols, t->cols, m->dev);
    else
        v = rt_vf32(base ? base + (int64_t)s.tok * t->cols + s.col0 : NULL, n, s.cols,
                    t->tpr * t->cols, m->dev);
    if (grad ? t->gbf16 : t->bf16) { /* whole tensors only (model_plan_bf16) */
        RT_ASSERT(s.tok < 0 && s.col0 == 0);
        v.dtype = RT_BF16;
    }
    return v;
}

static rt_view none_view(const rt_model *m)
{
    rt_view v = {0};
    v.dtype = RT_F32;
    v.dev = m->dev;
    return v;
}

static rt_view in_view(const rt_model *m, const mlayer *L, int k, int64_t n)
{
    return model_slot(m, L->in[k], n, false);
}

static rt_view out_view(const rt_model *m, const mlayer *L, int64_t n)
{
    return model_slot(m, L->out, n, false);
}

static float *P(const rt_model *m, const mlayer *L, int k)
{
    return m->params + m->info[L->p0 + k].off;
}
static float *G(const rt_model *m, const mlayer *L, int k)
{
    return m->grads + m->info[L->p0 + k].off;
}

/* A scratch view of a slot's shape (contiguous). */
static rt_view scratch_view(const rt_model *m, int which, rt_view shape)
{
    RT_ASSERT(shape.rows * shape.cols <= m->scratch_len * m->max_batch);
    return rt_vf32(m->scratch[which], shape.rows, shape.cols, shape.cols, m->dev);
}

/* Where input k's gradient goes: its slot's gradient (gmode 0), scratch
 * (otherwise), or nothing (no gradient: p == NULL). */
static rt_view dx_begin(rt_model *m, const mlayer *L, int k, int64_t n)
{
    if (!m->tensors[L->in[k].t].grad)
        return none_view(m);
    rt_view g = model_slot(m, L->in[k], n, true);
    return L->gmode[k] == 0 ? g : scratch_view(m, 0, g);
}

/* gmode 2: the first gradient into a slot covering part of its tensor:
 * the rest of the tensor's gradient starts at 0. */
static void zero_partial(rt_model *m, const mlayer *L, int k, int64_t n)
{
    const mtensor *t = &m->tensors[L->in[k].t];
    if (L->gmode[k] == 2)
        rt_kmemset(m->ctx, t->gdata, 0, (size_t)(n * t->tpr * t->cols) * sizeof(float));
}

/* After dx_begin's view was written: add it where it belongs. */
static void dx_end(rt_model *m, const mlayer *L, int k, int64_t n, rt_view dx)
{
    if (!dx.p || L->gmode[k] == 0)
        return;
    zero_partial(m, L, k, n);
    rt_k_ew(m->ctx, RT_EW_ACC, dx, dx, model_slot(m, L->in[k], n, true));
}

/* Input k's gradient = v (copied, or added without going through scratch). */
static void dx_pass(rt_model *m, const mlayer *L, int k, int64_t n, rt_view v)
{
    if (!m->tensors[L->in[k].t].grad)
        return;
    rt_view g = model_slot(m, L->in[k], n, true);
    if (L->gmode[k] == 0) {
        rt_k_ew(m->ctx, RT_EW_COPY, v, v, g);
        return;
    }
    zero_partial(m, L, k, n);
    rt_k_ew(m->ctx, RT_EW_ACC, v, v, g);
}

/* A contiguous view of n samples' k member rows as n rows of k blocks
 * (tabm's layout: member t of sample b is row b*k + t). */
static rt_view as_members(rt_view v, int64_t k)
{
    RT_ASSERT(v.ld == v.cols && k > 0 && v.rows % k == 0);
    v.rows /= k;
    v.cols *= k;
    v.ld = v.cols;
    return v;
}

/* v, a contiguous view of L's input (or its gradient), as L's output has
 * it: a tensor of T tokens read into a slot of one row per sample (the
 * numeric embeddings' ReLU into the inputs' columns) joins each sample's
 * T rows into one. */
static rt_view joined(const rt_model *m, const mlayer *L, rt_view v)
{
    const int64_t T = m->tensors[L->in[0].t].tpr;
    if (!v.p || L->in[0].tok >= 0 || T == m->tensors[L->out.t].tpr)
        return v;
    return as_members(v, T);
}

/* A dense layer's bias and its gradient (for one without, L->np == 1: none
 * on the CPU; zeros and a throwaway buffer on a GPU, whose fused epilogues
 * take a bias). */
static const float *bias_of(const rt_model *m, const mlayer *L)
{
    return L->np > 1 ? P(m, L, 1) : m->dev == RT_DEVICE_CPU ? NULL : m->zeros;
}
static float *dbias_of(const rt_model *m, const mlayer *L)
{
    return L->np > 1 ? G(m, L, 1) : m->dev == RT_DEVICE_CPU ? NULL : m->dbias;
}

/* Member t's columns of a (n, k*D) view: (n, D) at stride k*D. */
static rt_view member(rt_view v, int64_t k, int64_t t)
{
    const int64_t D = v.cols / k;
    return rt_view_cols(v, t * D, D);
}

/* A dense layer per token: token t of every sample through its own (O, D)
 * kernel and O biases (tabm's members' output layers, the numeric
 * embeddings' per-column layers). */
static void token_linear(rt_model *m, const mlayer *L, int64_t n, bool fwd)
{
    const int64_t k = m->tensors[L->in[0].t].tpr, D = L->in[0].cols, O = L->out.cols;
    rt_view x = as_members(in_view(m, L, 0, n), k), y = as_members(out_view(m, L, n), k);
    if (fwd) {
        for (int64_t t = 0; t < k; t++)
            rt_k_dense_fwd(m->ctx, member(x, k, t), P(m, L, 0) + t * O * D, P(m, L, 1) + t * O,
                           RT_ACT_NONE, member(y, k, t));
        return;
    }
    rt_view dy = as_members(model_slot(m, L->out, n, true), k);
    rt_view dx = dx_begin(m, L, 0, n);
    const rt_view dxm = dx.p ? as_members(dx, k) : dx;
    for (int64_t t = 0; t < k; t++)
        rt_k_dense_bwd(m->ctx, member(x, k, t), P(m, L, 0) + t * O * D, member(y, k, t),
                       RT_ACT_NONE, member(dy, k, t), G(m, L, 0) + t * O * D, G(m, L, 1) + t * O,
                       dx.p ? member(dxm, k, t) : dx);
    dx_end(m, L, 0, n, dx);
}

static rt_attn attn_of(const rt_model *m, const mlayer *L, bool train)
{
    rt_attn a = {m->tokens, L->heads, train ? L->rate : 0.0f, m->dropout_seed, L->stream};
    return a;
}

/* The categorical indices, n rows. */
static rt_view cat_view(const rt_model *m, int64_t n)
{
    return rt_vi32(m->in_cat, n, m->spec.n_cat, m->spec.n_cat, m->dev);
}

/* FT-Transformer's tokens of n samples as one (n, T*d) matrix. */
static rt_view token_rows(const rt_model *m, const mlayer *L, int64_t n, bool grad)
{
    const mtensor *t = &m->tensors[L->out.t];
    return rt_vf32(grad ? t->gdata : t->data, n, t->tpr * t->cols, t->tpr * t->cols, m->dev);
}

static void tokens_fwd(rt_model *m, const mlayer *L, int64_t n)
{
    const rt_model_spec *s = &m->spec;
    const int64_t d = s->d_token, nn = s->n_cont, nc = s->n_cat;
    rt_view y = token_rows(m, L, n, false);
    int k = 0;
    if (nn > 0 && L->embedded) {
        rt_k_ew(m->ctx, RT_EW_COPY, in_view(m, L, 0, n), in_view(m, L, 0, n),
                rt_view_cols(y, 0, nn * d));
    } else if (nn > 0) {
        rt_k_tokens_fwd(m->ctx, in_view(m, L, 0, n), P(m, L, 0), P(m, L, 1), d,
                        rt_view_cols(y, 0, nn * d));
        k = 2;
    }
    if (nc > 0) {
        rt_k_embed_fwd(m->ctx, cat_view(m, n), m->emb_cols, m->params + m->emb_lo, y);
        rt_k_bias_add(m->ctx, P(m, L, k + (int)nc), rt_view_cols(y, nn * d, nc * d));
        k += (int)nc + 1;
    }
    rt_k_tokens_fwd(m->ctx, none_view(m), P(m, L, k), NULL, d, rt_view_cols(y, (nn + nc) * d, d));
}

static void tokens_bwd(rt_model *m, const mlayer *L, int64_t n)
{
    const rt_model_spec *s = &m->spec;
    const int64_t d = s->d_token, nn = s->n_cont, nc = s->n_cat;
    rt_view dy = token_rows(m, L, n, true);
    const int knum = nn > 0 && !L->embedded ? 2 : 0; /* num_weight, num_bias */
    const int kcls = knum + (nc > 0 ? (int)nc + 1 : 0);
    rt_k_tokens_bwd(m->ctx, none_view(m), P(m, L, kcls), rt_view_cols(dy, (nn + nc) * d, d), d,
                    G(m, L, kcls), NULL, none_view(m));
    if (nc > 0) {
        rt_k_colsum(m->ctx, rt_view_cols(dy, nn * d, nc * d), G(m, L, knum + (int)nc));
        rt_k_embed_bwd(m->ctx, cat_view(m, n), m->emb_cols, dy, m->grads + m->emb_lo,
                       m->emb_hi - m->emb_lo);
    }
    if (nn > 0) {
        rt_view dx = dx_begin(m, L, 0, n);
        if (L->embedded && dx.p)
            rt_k_ew(m->ctx, RT_EW_COPY, rt_view_cols(dy, 0, nn * d), rt_view_cols(dy, 0, nn * d),
                    dx);
        else if (!L->embedded)
            rt_k_tokens_bwd(m->ctx, in_view(m, L, 0, n), P(m, L, 0), rt_view_cols(dy, 0, nn * d), d,
                            G(m, L, 0), G(m, L, 1), dx);
        dx_end(m, L, 0, n, dx);
    }
}

/* Sum over the ranks (m->bn_sync); the first failure is kept for
 * rt_model_sync_status and the rank's own values stay. */
static void sync_sum(rt_model *m, double *v, int64_t count)
{
    char err[RT_ERR_LEN];
    rt_status st = m->bn_sync(m->bn_sync_user, v, count, err);
    if (st != RT_OK && m->sync_st == RT_OK) {
        m->sync_st = st;
        snprintf(m->sync_err, sizeof m->sync_err, "synchronized batch norm: %s", err);
    }
}

/* Synchronized batch norm, forward (CPU: host memory): the global batch's
 * mean, then its biased variance, each from the ranks' sums in double (the
 * kernel's own two passes); y, the saved statistics and the moving ones as
 * rt_k_bn_fwd would give for the whole global batch. */
static void bn_sync_fwd(rt_model *m, mlayer *L, int64_t n)
{
    const rt_model_spec *s = &m->spec;
    const rt_view x = in_view(m, L, 0, n);
    const int64_t F = x.cols, R = x.rows;
    double *sum = m->sync_buf, *var = m->sync_buf + F + 1;
    for (int64_t f = 0; f <= F; f++)
        sum[f] = 0.0;
    for (int64_t r = 0; r < R; r++)
        for (int64_t f = 0; f < F; f++)
            sum[f] += RT_F(x)[r * x.ld + f];
    sum[F] = (double)R;
    sync_sum(m, sum, F + 1);
    const double count = sum[F] > 0 ? sum[F] : 1.0;
    m->sync_count = count;
    for (int64_t f = 0; f < F; f++) {
        sum[f] /= count; /* the mean */
        var[f] = 0.0;
    }
    for (int64_t r = 0; r < R; r++)
        for (int64_t f = 0; f < F; f++) {
            const double dv = RT_F(x)[r * x.ld + f] - sum[f];
            var[f] += dv * dv;
        }
    sync_sum(m, var, F);
    float *run_mean = m->buffers + L->boff, *run_var = run_mean + F;
    for (int64_t f = 0; f < F; f++) {
        var[f] = var[f] > 0 ? var[f] / count : 0.0;
        L->save[f] = (float)sum[f];
        L->save[F + f] = (float)(1.0 / sqrt(var[f] + s->bn_eps));
        run_mean[f] = (float)(run_mean[f] * s->bn_momentum + sum[f] * (1.0 - s->bn_momentum));
        run_var[f] = (float)(run_var[f] * s->bn_momentum + var[f] * (1.0 - s->bn_momentum));
    }
    rt_k_bn_fwd_given(m->ctx, x, P(m, L, 0), P(m, L, 1), sum, var, s->bn_eps, out_view(m, L, n));
}

/* Synchronized batch norm, backward: dx from the global sums of dy and
 * dy·xhat (this rank's are its dbeta and dgamma, just computed). */
static void bn_sync_bwd(rt_model *m, mlayer *L, int64_t n, rt_view dy, rt_view dx)
{
    const int64_t F = L->out.cols;
    double *sums = m->sync_buf;
    for (int64_t f = 0; f < F; f++) {
        sums[f] = G(m, L, 1)[f];     /* dbeta: sum of dy */
        sums[F + f] = G(m, L, 0)[f]; /* dgamma: sum of dy * xhat */
    }
    sync_sum(m, sums, 2 * F);
    rt_k_bn_bwd_given(m->ctx, in_view(m, L, 0, n), dy, P(m, L, 0), L->save, L->save + F, sums,
                      sums + F, m->sync_count, dx);
}

void model_layer_fwd(rt_model *m, mlayer *L, int64_t n, bool train)
{
    const rt_model_spec *s = &m->spec;
    rt_kctx *ctx = m->ctx;
    switch (L->kind) {
    case L_EMBED:
        rt_k_embed_fwd(ctx, cat_view(m, n), m->emb_cols, m->params + m->emb_lo, out_view(m, L, n));
        break;
    case L_BATCHNORM: {
        float *run = m->buffers + L->boff;
        const int64_t F = L->out.cols;
        if (train && m->bn_sync)
            bn_sync_fwd(m, L, n);
        else
            rt_k_bn_fwd(ctx, in_view(m, L, 0, n), P(m, L, 0), P(m, L, 1), run, run + F,
                        s->bn_momentum, s->bn_eps, train, L->save, L->save + F, out_view(m, L, n));
        break;
    }
    case L_STANDARDIZE: /* y = x * scale + shift (scale, shift: from the mean and std buffers) */
        rt_k_tokens_fwd(ctx, in_view(m, L, 0, n), L->save, L->save + L->out.cols, 1,
                        out_view(m, L, n));
        break;
    case L_COPY:
        rt_k_ew(ctx, RT_EW_COPY, in_view(m, L, 0, n), in_view(m, L, 0, n), out_view(m, L, n));
        break;
    case L_LINEAR:
        rt_k_dense_fwd(ctx, in_view(m, L, 0, n), P(m, L, 0), bias_of(m, L), L->act,
                       out_view(m, L, n));
        break;
    case L_ACT: /* a tensor of tokens into a slot of one row per sample: its rows joined */
        rt_k_act_fwd(ctx, L->act, joined(m, L, in_view(m, L, 0, n)), out_view(m, L, n));
        break;
    case L_DROPOUT:
        if (train)
            rt_k_dropout(ctx, out_view(m, L, n), L->rate, m->dropout_seed, L->stream, m->step);
        break;
    case L_LAYERNORM: {
        rt_view x = in_view(m, L, 0, n);
        rt_k_ln_fwd(ctx, x, P(m, L, 0), P(m, L, 1), MODEL_LN_EPS, L->save,
                    L->save + m->max_batch * L->save_per_sample / 2, out_view(m, L, n));
        break;
    }
    case L_ADD:
        rt_k_ew(ctx, RT_EW_ADD, in_view(m, L, 0, n), in_view(m, L, 1, n), out_view(m, L, n));
        break;
    case L_CROSS: {
        rt_view y = out_view(m, L, n);
        rt_k_ew(ctx, RT_EW_MUL, in_view(m, L, 0, n), in_view(m, L, 1, n), y);
        if (train && L->rate > 0.0f)
            rt_k_dropout(ctx, y, L->rate, m->dropout_seed, L->stream, m->step);
        rt_k_ew(ctx, RT_EW_ACC, in_view(m, L, 2, n), in_view(m, L, 2, n), y);
        break;
    }
    case L_TOKENS:
        tokens_fwd(m, L, n);
        break;
    case L_ATTENTION: {
        rt_attn a = attn_of(m, L, train);
        rt_k_attn_fwd(ctx, &a, in_view(m, L, 0, n), L->save, m->step, out_view(m, L, n));
        break;
    }
    case L_REGLU:
        rt_k_reglu_fwd(ctx, in_view(m, L, 0, n), out_view(m, L, n));
        break;
    case L_HEAD: {
        rt_view y = out_view(m, L, n);
        rt_k_head_fwd(ctx, in_view(m, L, 0, n).p, y.rows, s->head_scale, y.p);
        break;
    }
    case L_ENS_REPEAT:
        rt_k_ens_repeat(ctx, in_view(m, L, 0, n), as_members(out_view(m, L, n), m->ens_k));
        break;
    case L_ENS_SCALE: /* y = drop(act(x * r (+ b))), r and b (k, D): a scale per column */
        if (L->pair)  /* made with the layer before it (paired) */
            break;
        if (L->paired) { /* and the next layer's y * r in the same pass */
            const mlayer *R = L + 1;
            rt_k_scale_pair_fwd(ctx, as_members(in_view(m, L, 0, n), m->ens_k), P(m, L, 0),
                                L->np > 1 ? P(m, L, 1) : NULL, L->act, train ? L->rate : 0.0f,
                                m->dropout_seed, L->stream, m->step,
                                as_members(out_view(m, L, n), m->ens_k), P(m, R, 0),
                                as_members(out_view(m, R, n), m->ens_k));
            break;
        }
        rt_k_scale_act_fwd(ctx, as_members(in_view(m, L, 0, n), m->ens_k), P(m, L, 0),
                           L->np > 1 ? P(m, L, 1) : NULL, L->act, train ? L->rate : 0.0f,
                           m->dropout_seed, L->stream, m->step,
                           as_members(out_view(m, L, n), m->ens_k));
        break;
    case L_TOKEN_LINEAR:
        token_linear(m, L, n, true);
        break;
    case L_ENS_MEAN:
        rt_k_ens_reduce(ctx, L->ens, as_members(in_view(m, L, 0, n), m->ens_k), out_view(m, L, n));
        break;
    case L_NUM_LINEAR:
        rt_k_tokens_fwd(ctx, in_view(m, L, 0, n), P(m, L, 0), P(m, L, 1), s->d_embedding,
                        out_view(m, L, n));
        break;
    case L_ROBUST:
        rt_k_robust_fwd(ctx, in_view(m, L, 0, n), m->buffers + L->boff,
                        m->buffers + L->boff + s->n_cont, out_view(m, L, n));
        break;
    case L_QUANTILE:
        rt_k_quantile_fwd(ctx, in_view(m, L, 0, n), m->buffers + L->boff, s->n_quantiles,
                          out_view(m, L, n));
        break;
    case L_PLE:
        rt_k_ple_fwd(ctx, in_view(m, L, 0, n), m->buffers + L->boff, s->bins,
                     as_members(out_view(m, L, n), s->n_cont));
        break;
    case L_PERIODIC:
        rt_k_periodic_fwd(ctx, in_view(m, L, 0, n), P(m, L, 0), s->frequencies,
                          as_members(out_view(m, L, n), s->n_cont));
        break;
    default:
        RT_ASSERT(!"unknown layer kind");
    }
}

void model_layer_bwd(rt_model *m, mlayer *L, int64_t n)
{
    const rt_model_spec *s = &m->spec;
    rt_kctx *ctx = m->ctx;
    if (!m->tensors[L->out.t].grad)
        return; /* nothing before it trains */
    rt_view dy = model_slot(m, L->out, n, true);
    switch (L->kind) {
    case L_EMBED:
        rt_k_embed_bwd(ctx, cat_view(m, n), m->emb_cols, dy, m->grads + m->emb_lo,
                       m->emb_hi - m->emb_lo);
        break;
    case L_BATCHNORM: {
        rt_view dx = dx_begin(m, L, 0, n);
        const bool sync = m->bn_sync && dx.p;
        rt_k_bn_bwd(ctx, in_view(m, L, 0, n), dy, P(m, L, 0), L->save, L->save + L->out.cols,
                    G(m, L, 0), G(m, L, 1), sync ? none_view(m) : dx);
        if (sync)
            bn_sync_bwd(m, L, n, dy, dx);
        dx_end(m, L, 0, n, dx);
        break;
    }
    case L_STANDARDIZE:
    case L_QUANTILE:
    case L_ROBUST:
        RT_ASSERT(!m->tensors[L->in[0].t].grad); /* it reads the model's inputs */
        break;
    case L_COPY:
        dx_pass(m, L, 0, n, dy);
        break;
    case L_LINEAR: {
        rt_view dx = dx_begin(m, L, 0, n);
        rt_k_dense_bwd(ctx, in_view(m, L, 0, n), P(m, L, 0), out_view(m, L, n), L->act, dy,
                       G(m, L, 0), dbias_of(m, L), dx);
        dx_end(m, L, 0, n, dx);
        break;
    }
    case L_ACT: {
        /* a ReLU's derivative from its output (y > 0 exactly where x > 0), which
         * a dropout after it zeroed in place where it dropped (mb_dropout) */
        rt_view dx = dx_begin(m, L, 0, n);
        rt_view x = L->act == RT_ACT_RELU ? out_view(m, L, n) : joined(m, L, in_view(m, L, 0, n));
        if (dx.p)
            rt_k_act_bwd(ctx, L->act, x, dy, joined(m, L, dx));
        dx_end(m, L, 0, n, dx);
        break;
    }
    case L_DROPOUT:
        /* the same mask on the gradient, in place; after a ReLU, which masks
         * by its output, the scale alone (mb_dropout) */
        if (L->masked && dy.ld == dy.cols)
            rt_k_scale(ctx, RT_F(dy), dy.rows * dy.cols, 1.0f / (1.0f - L->rate));
        else
            rt_k_dropout(ctx, dy, L->rate, m->dropout_seed, L->stream, m->step);
        break;
    case L_LAYERNORM: {
        rt_view dx = dx_begin(m, L, 0, n);
        rt_k_ln_bwd(ctx, in_view(m, L, 0, n), dy, P(m, L, 0), L->save,
                    L->save + m->max_batch * L->save_per_sample / 2, G(m, L, 0), G(m, L, 1), dx);
        dx_end(m, L, 0, n, dx);
        break;
    }
    case L_ADD:
        dx_pass(m, L, 0, n, dy);
        dx_pass(m, L, 1, n, dy);
        break;
    case L_CROSS: {
        /* y = drop(x0 * u) + x; with g = drop'(dy): dx0 = g * u, du = g * x0,
         * dx = dy — in input order, the order model_plan gave their modes */
        rt_view g = dy;
        if (L->rate > 0.0f) {
            g = scratch_view(m, 1, dy);
            rt_k_ew(ctx, RT_EW_COPY, dy, dy, g);
            rt_k_dropout(ctx, g, L->rate, m->dropout_seed, L->stream, m->step);
        }
        for (int k = 0; k < 2; k++) {
            rt_view dx = dx_begin(m, L, k, n);
            if (dx.p)
                rt_k_ew(ctx, RT_EW_MUL, g, in_view(m, L, 1 - k, n), dx);
            dx_end(m, L, k, n, dx);
        }
        dx_pass(m, L, 2, n, dy);
        break;
    }
    case L_TOKENS:
        tokens_bwd(m, L, n);
        break;
    case L_ATTENTION: {
        rt_attn a = attn_of(m, L, true);
        rt_view dx = dx_begin(m, L, 0, n);
        rt_k_attn_bwd(ctx, &a, in_view(m, L, 0, n), L->save, m->step, dy, dx);
        dx_end(m, L, 0, n, dx);
        break;
    }
    case L_REGLU: {
        rt_view dx = dx_begin(m, L, 0, n);
        rt_k_reglu_bwd(ctx, in_view(m, L, 0, n), dy, dx);
        dx_end(m, L, 0, n, dx);
        break;
    }
    case L_HEAD: {
        if (L->fused)
            break; /* rt_model_loss wrote dx */
        rt_view dx = dx_begin(m, L, 0, n);
        RT_ASSERT(dx.p && dx.ld == 1);
        rt_k_head_bwd(ctx, out_view(m, L, n).p, dy.p, dy.rows, s->head_scale, dx.p);
        dx_end(m, L, 0, n, dx);
        break;
    }
    case L_ENS_REPEAT: {
        rt_view dx = dx_begin(m, L, 0, n);
        if (dx.p)
            rt_k_ens_reduce(ctx, RT_ENS_SUM, as_members(dy, m->ens_k), dx);
        dx_end(m, L, 0, n, dx);
        break;
    }
    case L_ENS_SCALE: {
        if (L->paired) /* done with the next layer's (L->pair) */
            break;
        if (L->pair) {
            mlayer *S = L - 1; /* whose output L scales */
            rt_view dx = dx_begin(m, S, 0, n);
            rt_k_scale_pair_bwd(ctx, as_members(in_view(m, S, 0, n), m->ens_k), P(m, S, 0),
                                as_members(out_view(m, S, n), m->ens_k), S->act, S->rate,
                                P(m, L, 0), as_members(dy, m->ens_k), G(m, L, 0), G(m, S, 0),
                                S->np > 1 ? G(m, S, 1) : NULL,
                                dx.p ? as_members(dx, m->ens_k) : dx);
            dx_end(m, S, 0, n, dx);
            break;
        }
        rt_view dx = dx_begin(m, L, 0, n);
        rt_k_scale_act_bwd(ctx, as_members(in_view(m, L, 0, n), m->ens_k), P(m, L, 0),
                           as_members(out_view(m, L, n), m->ens_k), L->act, L->rate,
                           as_members(dy, m->ens_k), G(m, L, 0), L->np > 1 ? G(m, L, 1) : NULL,
                           dx.p ? as_members(dx, m->ens_k) : dx);
        dx_end(m, L, 0, n, dx);
        break;
    }
    case L_TOKEN_LINEAR:
        token_linear(m, L, n, false);
        break;
    case L_ENS_MEAN: /* the loss reads the members: nothing flows back through the mean */
        break;
    case L_NUM_LINEAR: {
        rt_view dx = dx_begin(m, L, 0, n);
        rt_k_tokens_bwd(ctx, in_view(m, L, 0, n), P(m, L, 0), dy, s->d_embedding, G(m, L, 0),
                        G(m, L, 1), dx);
        dx_end(m, L, 0, n, dx);
        break;
    }
    case L_PLE: {
        rt_view dx = dx_begin(m, L, 0, n);
        rt_k_ple_bwd(ctx, in_view(m, L, 0, n), m->buffers + L->boff, s->bins,
                     as_members(dy, s->n_cont), dx);
        dx_end(m, L, 0, n, dx);
        break;
    }
    case L_PERIODIC: {
        rt_view dx = dx_begin(m, L, 0, n);
        rt_k_periodic_bwd(ctx, in_view(m, L, 0, n), P(m, L, 0), s->frequencies,
                          as_members(dy, s->n_cont), G(m, L, 0), dx);
        dx_end(m, L, 0, n, dx);
        break;
    }
    default:
        RT_ASSERT(!"unknown layer kind");
    }
}
