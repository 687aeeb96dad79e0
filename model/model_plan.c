/* model_plan.c — the plan builder (model_build.h): the layer list, its
 * tensors and the parameter table (model_impl.h) a family's preset
 * (family_*.c) expands a spec into; then the plan is completed: which
 * tensors need gradients, whether each layer writes or adds its input
 * gradients, the hook ranges and the saved buffers' sizes.  Nothing here
 * touches device memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_build.h"

static const char *const KIND_NAMES[L_KINDS] = {
    [L_EMBED] = "Embedding",
    [L_BATCHNORM] = "BatchNorm",
    [L_STANDARDIZE] = "Standardize",
    [L_COPY] = "Identity",
    [L_LINEAR] = "Dense",
    [L_ACT] = "Activation",
    [L_DROPOUT] = "Dropout",
    [L_LAYERNORM] = "LayerNorm",
    [L_ADD] = "Add",
    [L_CROSS] = "Cross",
    [L_TOKENS] = "FeatureTokens",
    [L_ATTENTION] = "Attention",
    [L_REGLU] = "ReGLU",
    [L_HEAD] = "ScaledSigmoid",
    [L_ENS_REPEAT] = "EnsembleCopy",
    [L_ENS_SCALE] = "EnsembleScale",
    [L_TOKEN_LINEAR] = "TokenDense",
    [L_ENS_MEAN] = "EnsembleMean",
    [L_NUM_LINEAR] = "NumLinear",
    [L_PERIODIC] = "Periodic",
    [L_QUANTILE] = "Quantile",
    [L_ROBUST] = "Robust",
    [L_PLE] = "PiecewiseLinear",
};

const char *model_kind_name(layer_kind k) { return k < L_KINDS ? KIND_NAMES[k] : "?"; }

void mb_fail(mplan *p, const char *what)
{
    if (!p->failed)
        snprintf(p->why, sizeof p->why, "%s", what);
    p->failed = true;
}

int mb_tensor(mplan *p, int64_t tpr, int64_t cols)
{
    rt_model *m = p->m;
    if (m->ntensors >= MODEL_MAX_TENSORS) {
        mb_fail(p, "the model has too many layers");
        return 0;
    }
    mtensor *t = &m->tensors[m->ntensors];
    memset(t, 0, sizeof *t);
    t->tpr = tpr;
    t->cols = cols;
    return m->ntensors++;
}

mslot mb_whole(const mplan *p, int t) { return (mslot){t, 0, p->m->tensors[t].cols, -1}; }

mslot mb_colrange(int t, int64_t c0, int64_t n) { return (mslot){t, c0, n, -1}; }

mlayer *mb_layer(mplan *p, layer_kind k, const char *name, mslot out)
{
    rt_model *m = p->m;
    if (m->nlayers >= MODEL_MAX_LAYERS) {
        mb_fail(p, "the model has too many layers");
        memset(&p->spare, 0, sizeof p->spare);
        return &p->spare;
    }
    mlayer *L = &m->layers[m->nlayers++];
    memset(L, 0, sizeof *L);
    L->kind = k;
    snprintf(L->name, sizeof L->name, "%s", name);
    L->out = out;
    L->p0 = m->ninfo;
    return L;
}

void mb_input(mlayer *L, mslot s)
{
    RT_ASSERT(L->nin < MODEL_MAX_IN);
    L->in[L->nin++] = s;
}

/* The next tensor's offset: past off + count, on an RT_MODEL_ALIGN boundary. */
static int64_t next_off(int64_t off, int64_t count)
{
    return (off + count + RT_MODEL_ALIGN - 1) / RT_MODEL_ALIGN * RT_MODEL_ALIGN;
}

/* A trainable tensor of L: rows x cols in the arena, initialised by init
 * (fan_in for INIT_FAN_IN), with an L2 coefficient. */
void mb_param(mplan *p, mlayer *L, const char *suffix, int64_t rows, int64_t cols, init_kind init,
              int64_t fan_in, float l2)
{
    rt_model *m = p->m;
    if (m->ninfo == m->info_cap) {
        int cap = m->info_cap ? 2 * m->info_cap : 64;
        rt_param_info *ni = realloc(m->info, (size_t)cap * sizeof *ni);
        init_kind *nk = ni ? realloc(m->init, (size_t)cap * sizeof *nk) : NULL;
        int64_t *nf = nk ? realloc(m->fan_in, (size_t)cap * sizeof *nf) : NULL;
        if (ni)
            m->info = ni;
        if (nk)
            m->init = nk;
        if (!nf) {
            mb_fail(p, "out of memory");
            return;
        }
        m->fan_in = nf;
        m->info_cap = cap;
    }
    rt_param_info *pi = &m->info[m->ninfo];
    memset(pi, 0, sizeof *pi);
    if (suffix[0] == '/')
        snprintf(pi->name, sizeof pi->name, "%s%s", L->name, suffix);
    else
        snprintf(pi->name, sizeof pi->name, "%s", suffix);
    pi->off = m->arena;
    pi->rows = rows;
    pi->cols = cols;
    pi->count = rows * cols;
    pi->pos = m->n_params;
    pi->l2 = l2;
    pi->trainable = true;
    pi->decay = strcmp(suffix, "/kernel") == 0; /* not biases, norms, embeddings, tokens */
    m->init[m->ninfo] = init;
    m->fan_in[m->ninfo] = fan_in;
    m->ninfo++;
    m->n_params += pi->count;
    m->arena = p->adjacent ? m->arena + pi->count : next_off(m->arena, pi->count);
    L->np++;
}

/* Non-trainable values of L (moving statistics), `count` floats. */
void mb_buffer(mplan *p, mlayer *L, const char *suffix, int64_t count)
{
    if (p->nbuf == p->buf_cap) {
        int cap = p->buf_cap ? 2 * p->buf_cap : 16;
        rt_param_info *nb = realloc(p->buf, (size_t)cap * sizeof *nb);
        if (!nb) {
            mb_fail(p, "out of memory");
            return;
        }
        p->buf = nb;
        p->buf_cap = cap;
    }
    rt_param_info *pi = &p->buf[p->nbuf++];
    memset(pi, 0, sizeof *pi);
    snprintf(pi->name, sizeof pi->name, "%s%s", L->name, suffix);
    pi->off = pi->pos = p->m->n_buffers;
    pi->rows = 1;
    pi->cols = count;
    pi->count = count;
    if (L->nbuf == 0)
        L->boff = p->m->n_buffers;
    L->nbuf += count;
    p->m->n_buffers += count;
}

/* ---- building blocks ---------------------------------------------------------------- */

uint32_t mb_next_stream(mplan *p) { return RT_MODEL_DROPOUT_STREAM + (uint32_t)p->m->ndropout++; }

static bool same_slot(mslot a, mslot b)
{
    return a.t == b.t && a.col0 == b.col0 && a.cols == b.cols && a.tok == b.tok;
}

/* In-place dropout on s (nothing when rate is 0).  Right after a ReLU that
 * wrote s (a dense layer's or an activation layer's), the ReLU's backward
 * masks the gradient by its output y > 0 (rt_k_dense_bwd, model_layer_bwd's
 * L_ACT), where the dropped elements are 0 too: the dropout's backward then
 * only scales by 1 / (1 - rate) — the same bits as applying the mask again,
 * without drawing it. */
void mb_dropout(mplan *p, const char *name, mslot s, float rate)
{
    if (rate <= 0.0f)
        return;
    const rt_model *m = p->m;
    const mlayer *prev = m->nlayers > 0 ? &m->layers[m->nlayers - 1] : NULL;
    const bool masked = prev && (prev->kind == L_LINEAR || prev->kind == L_ACT) &&
                        prev->act == RT_ACT_RELU && same_slot(prev->out, s);
    mlayer *L = mb_layer(p, L_DROPOUT, name, s);
    mb_input(L, s);
    L->rate = rate;
    L->masked = masked;
    L->stream = mb_next_stream(p);
}

/* Dense layer from in to a new tensor (or the slot `to` when to.t >= 0). */
mslot mb_linear(mplan *p, const char *name, mslot in, int64_t out, rt_act act, bool keras, float l2,
                mslot to)
{
    mslot o = to.t >= 0 ? to : mb_whole(p, mb_tensor(p, p->m->tensors[in.t].tpr, out));
    mlayer *L = mb_layer(p, L_LINEAR, name, o);
    mb_input(L, in);
    L->act = act;
    mb_param(p, L, "/kernel", out, in.cols, keras ? INIT_GLOROT : INIT_FAN_IN, in.cols, l2);
    mb_param(p, L, "/bias", 1, out, keras ? INIT_ZERO : INIT_FAN_IN, in.cols, 0.0f);
    return o;
}

mslot mb_linear_nobias(mplan *p, const char *name, mslot in, int64_t out, float l2)
{
    mslot o = mb_whole(p, mb_tensor(p, p->m->tensors[in.t].tpr, out));
    mlayer *L = mb_layer(p, L_LINEAR, name, o);
    mb_input(L, in);
    L->act = RT_ACT_NONE;
    mb_param(p, L, "/kernel", out, in.cols, INIT_FAN_IN, in.cols, l2);
    if (out > p->m->nobias_len)
        p->m->nobias_len = out;
    return o;
}

static void batchnorm_params(mplan *p, mlayer *L, int64_t F)
{
    mb_param(p, L, "/gamma", 1, F, INIT_ONE, 0, 0.0f);
    mb_param(p, L, "/beta", 1, F, INIT_ZERO, 0, 0.0f);
    mb_buffer(p, L, "/moving_mean", F);
    mb_buffer(p, L, "/moving_variance", F);
    L->save_fixed = 2 * F;
}

mslot mb_batchnorm(mplan *p, const char *name, mslot in)
{
    mslot o = mb_whole(p, mb_tensor(p, 1, in.cols));
    mlayer *L = mb_layer(p, L_BATCHNORM, name, o);
    mb_input(L, in);
    batchnorm_params(p, L, in.cols);
    return o;
}

mslot mb_layernorm(mplan *p, const char *name, mslot in)
{
    const int64_t tpr = in.tok >= 0 ? 1 : p->m->tensors[in.t].tpr;
    mslot o = mb_whole(p, mb_tensor(p, tpr, in.cols));
    mlayer *L = mb_layer(p, L_LAYERNORM, name, o);
    mb_input(L, in);
    mb_param(p, L, "/gamma", 1, in.cols, INIT_ONE, 0, 0.0f);
    mb_param(p, L, "/beta", 1, in.cols, INIT_ZERO, 0, 0.0f);
    L->save_per_sample = 2 * tpr;
    return o;
}

mslot mb_act_layer(mplan *p, const char *name, mslot in, rt_act act)
{
    mslot o = mb_whole(p, mb_tensor(p, p->m->tensors[in.t].tpr, in.cols));
    mlayer *L = mb_layer(p, L_ACT, name, o);
    mb_input(L, in);
    L->act = act;
    return o;
}

mslot mb_add(mplan *p, const char *name, mslot a, mslot b)
{
    mslot o = mb_whole(p, mb_tensor(p, p->m->tensors[a.t].tpr, a.cols));
    mlayer *L = mb_layer(p, L_ADD, name, o);
    mb_input(L, a);
    mb_input(L, b);
    return o;
}

/* The continuous inputs: the model's input buffer, n_cont columns. */
static mslot cont_input(mplan *p)
{
    int t = mb_tensor(p, 1, p->m->spec.n_cont);
    p->m->tensors[t].input = true;
    return mb_whole(p, t);
}

/* The continuous inputs as the spec normalises them, into `to` (a column
 * range) or a new tensor; rossmann names its batch norm batch_norm. */
mslot mb_cont_block(mplan *p, mslot to)
{
    const rt_model_spec *s = &p->m->spec;
    mslot in = cont_input(p);
    if (s->cont_norm == RT_CONT_NONE && to.t < 0)
        return in; /* read where it is */
    mslot o = to.t >= 0 ? to : mb_whole(p, mb_tensor(p, 1, s->n_cont));
    layer_kind k = s->cont_norm == RT_CONT_BATCHNORM     ? L_BATCHNORM
                   : s->cont_norm == RT_CONT_STANDARDIZE ? L_STANDARDIZE
                   : s->cont_norm == RT_CONT_QUANTILE    ? L_QUANTILE
                   : s->cont_norm == RT_CONT_ROBUST      ? L_ROBUST
                                                         : L_COPY;
    mlayer *L = mb_layer(p, k,
                         k == L_BATCHNORM     ? "batch_norm"
                         : k == L_STANDARDIZE ? "standardize"
                         : k == L_QUANTILE    ? "quantile"
                         : k == L_ROBUST      ? "robust"
                                              : "continuous",
                         o);
    mb_input(L, in);
    if (k == L_BATCHNORM) {
        batchnorm_params(p, L, s->n_cont);
    } else if (k == L_STANDARDIZE) {
        mb_buffer(p, L, "/mean", s->n_cont);
        mb_buffer(p, L, "/std", s->n_cont);
        p->m->std_off = L->boff;
        L->save_fixed = 2 * (int64_t)s->n_cont; /* scale and shift, from mean and std */
    } else if (k == L_ROBUST) {
        mb_buffer(p, L, "/center", s->n_cont);
        mb_buffer(p, L, "/scale", s->n_cont);
        p->m->robust_off = L->boff;
    } else if (k == L_QUANTILE) {
        mb_buffer(p, L, "/quantiles", (int64_t)s->n_cont * s->n_quantiles);
        p->m->quant_off = L->boff;
    }
    return o;
}

/* The embedding tables of every categorical column, adjacent in the arena;
 * out offsets ooff[c] (per column) within the consumer's row. */
void mb_embedding_tables(mplan *p, mlayer *L, const int64_t *ooff, bool keras)
{
    rt_model *m = p->m;
    const rt_model_spec *s = &m->spec;
    char name[RT_MODEL_NAME_LEN + 16];
    m->emb_host = calloc((size_t)(s->n_cat ? s->n_cat : 1), sizeof *m->emb_host);
    if (!m->emb_host) {
        mb_fail(p, "out of memory");
        return;
    }
    m->emb_lo = m->arena;
    p->adjacent = true; /* the tables are one region for the gather and scatter kernels */
    for (int c = 0; c < s->n_cat; c++) {
        const int64_t d = s->arch == RT_ARCH_FT_TRANSFORMER ? s->d_token : s->emb_dim[c];
        if (rt_model_cat_name(s, c)[0])
            snprintf(name, sizeof name, "emb_%s", s->cat_names[c]);
        else
            snprintf(name, sizeof name, "emb_%d", c);
        m->emb_host[c] =
            (rt_embed_col){m->arena - m->emb_lo, s->vocab[c], (int32_t)d, (int32_t)ooff[c], 0};
        mb_param(p, L, name, s->vocab[c], d, keras ? INIT_UNIFORM_005 : INIT_TOKEN, 0, 0.0f);
    }
    p->adjacent = false;
    m->emb_hi = m->arena;
    m->arena = next_off(m->arena, 0);
}

/* The continuous columns' embeddings (rtdl_num_embeddings), d values
 * each, into `to` (n_cont * d columns): linear, x_i w_i + b_i; periodic
 * (PLR), ReLU(Linear_i([cos 2π f_i x_i, sin 2π f_i x_i])) with each
 * column's own frequencies and layer; piecewise_linear, ReLU(Linear_i(
 * PLE(x_i))) of the raw value over the column's bins (edges: buffers the
 * trainer sets from the training rows' quantiles). */
static void num_embeddings(mplan *p, mslot to, int64_t d)
{
    const rt_model_spec *s = &p->m->spec;
    const int64_t n = s->n_cont, k = s->frequencies;
    const bool ple = s->numeric_embedding == RT_NUM_EMB_PLE;
    /* PLE's bins are the raw values' quantiles: it reads the values as they are
     * (scale-free already; continuous_norm does not apply to it) */
    mslot x = ple ? cont_input(p) : mb_cont_block(p, MB_NO_SLOT);
    if (s->numeric_embedding == RT_NUM_EMB_LINEAR) {
        mlayer *L = mb_layer(p, L_NUM_LINEAR, "numeric/linear", to);
        mb_input(L, x);
        mb_param(p, L, "/weight", n, d, INIT_TOKEN, 0, 0.0f);
        mb_param(p, L, "/bias", n, d, INIT_TOKEN, 0, 0.0f);
        return;
    }
    const int64_t fw = ple ? s->bins : 2 * k; /* the features of a column */
    mslot f = mb_whole(p, mb_tensor(p, n, fw));
    mlayer *L = mb_layer(p, ple ? L_PLE : L_PERIODIC, ple ? "numeric/ple" : "numeric/periodic", f);
    mb_input(L, x);
    if (ple) {
        mb_buffer(p, L, "/edges", n * (s->bins + 1));
        p->m->ple_off = L->boff;
    } else {
        mb_param(p, L, "/frequencies", n, k, INIT_FREQ, 0, 0.0f);
    }
    mslot z = mb_whole(p, mb_tensor(p, n, d));
    L = mb_layer(p, L_TOKEN_LINEAR, "numeric/linear", z);
    mb_input(L, f);
    mb_param(p, L, "/kernel", n * d, fw, INIT_FAN_IN, fw, 0.0f);
    mb_param(p, L, "/bias", n, d, INIT_FAN_IN, fw, 0.0f);
    L = mb_layer(p, L_ACT, "numeric/relu", to);
    mb_input(L, z);
    L->act = RT_ACT_RELU;
}

mslot mb_num_embedding(mplan *p, int64_t d)
{
    mslot to = mb_whole(p, mb_tensor(p, 1, (int64_t)p->m->spec.n_cont * d));
    num_embeddings(p, to, d);
    return to;
}

/* Embeddings and continuous inputs side by side in one tensor (Rossmann's
 * concat; rtdl's MLP, ResNet and DCN-V2 inputs). */
mslot mb_input_block(mplan *p, bool keras)
{
    const rt_model_spec *s = &p->m->spec;
    int64_t E = 0;
    int64_t *ooff = calloc((size_t)(s->n_cat ? s->n_cat : 1), sizeof *ooff);
    if (!ooff) {
        mb_fail(p, "out of memory");
        return MB_NO_SLOT;
    }
    for (int c = 0; c < s->n_cat; c++) {
        ooff[c] = E;
        E += s->emb_dim[c];
    }
    const bool numemb = s->numeric_embedding != RT_NUM_EMB_NONE && s->n_cont > 0;
    if (s->n_cat == 0 && !numemb) { /* the continuous inputs alone */
        free(ooff);
        return mb_cont_block(p, MB_NO_SLOT);
    }
    const int64_t ncw = numemb ? (int64_t)s->n_cont * s->d_embedding : s->n_cont;
    int x0 = mb_tensor(p, 1, E + ncw);
    if (numemb) {
        num_embeddings(p, mb_colrange(x0, E, ncw), s->d_embedding);
        if (s->n_cat == 0) {
            free(ooff);
            return mb_whole(p, x0);
        }
    }
    mslot emb = mb_colrange(x0, 0, E);
    mlayer *L = mb_layer(p, L_EMBED, "embedding", emb);
    mb_embedding_tables(p, L, ooff, keras);
    free(ooff);
    mb_dropout(p, "embedding_dropout", emb, s->embedding_dropout);
    /* rossmann declares its (empty) batch norm without continuous columns
     * too: its tensors keep their numbers, and so their initial values */
    if (!numemb && (s->n_cont > 0 || keras))
        mb_cont_block(p, mb_colrange(x0, E, s->n_cont));
    return mb_whole(p, x0);
}

/* The head on the output layer's slot: the scaled sigmoid of its one
 * column, or (linear) the n_out columns themselves. */
void mb_head(mplan *p, mslot z)
{
    if (p->m->spec.head == RT_HEAD_LINEAR) {
        p->m->t_pred = p->m->t_loss = z.t;
        return;
    }
    mslot o = mb_whole(p, mb_tensor(p, p->m->tensors[z.t].tpr, 1));
    mlayer *L = mb_layer(p, L_HEAD, "head", o);
    mb_input(L, z);
    p->m->t_pred = p->m->t_loss = o.t;
}

/* ---- completing the plan ---------------------------------------------------------------- */

static bool partial(const rt_model *m, mslot s)
{
    return s.tok >= 0 || s.col0 != 0 || s.cols != m->tensors[s.t].cols;
}

/* Whether slot s is the whole of its tensor */
static bool whole(const rt_model *m, mslot s)
{
    return s.tok < 0 && s.col0 == 0 && s.cols == m->tensors[s.t].cols;
}

/* Which tensors need gradients (something before them trains), whether
 * each layer writes or adds its inputs' gradients, hook ranges, scratch. */
static void complete(mplan *p)
{
    rt_model *m = p->m;
    for (int i = 0; i < m->nlayers; i++) {
        mlayer *L = &m->layers[i];
        bool g = L->np > 0;
        for (int k = 0; k < L->nin; k++)
            g = g || m->tensors[L->in[k].t].grad;
        if (g)
            m->tensors[L->out.t].grad = true;
    }
    m->scratch_len = 0;
    for (int i = m->nlayers - 1; i >= 0; i--) {
        mlayer *L = &m->layers[i];
        if (L->kind == L_DROPOUT || L->kind == L_ENS_MEAN)
            continue; /* in place: its gradient is its slot's; or no gradient */
        for (int k = 0; k < L->nin; k++) {
            mtensor *t = &m->tensors[L->in[k].t];
            if (!t->grad)
                continue;
            if (!t->writer) {
                L->gmode[k] = partial(m, L->in[k]) ? 2 : 0;
                t->writer = 1;
            } else {
                L->gmode[k] = 1;
            }
            if (L->gmode[k] != 0 || L->kind == L_CROSS) {
                int64_t per = (L->in[k].tok >= 0 ? 1 : t->tpr) * L->in[k].cols;
                m->scratch_len = per > m->scratch_len ? per : m->scratch_len;
            }
        }
    }
    /* the scaled-sigmoid head's backward inside the loss, which reads its
     * output (not tabm's members' loss) and then writes the whole of its
     * input's gradient: one pass over the rows fewer, one kernel on a GPU */
    for (int i = 0; m->ens_k == 0 && i < m->nlayers; i++) {
        mlayer *L = &m->layers[i];
        if (L->kind == L_HEAD && L->out.t == m->t_loss && m->tensors[L->in[0].t].grad &&
            L->gmode[0] == 0 && whole(m, L->in[0]))
            L->fused = m->tensors[L->out.t].gunused = true;
    }
    /* TabM's block end and the next block's r, one pass each way on the CPU:
     * r without bias or act reading the whole output of the scaling just
     * before it (not itself the second of a pair), its one reader, whose
     * gradient it writes */
    for (int i = 1; m->dev == RT_DEVICE_CPU && i < m->nlayers; i++) {
        mlayer *L = &m->layers[i], *S = &m->layers[i - 1];
        if (!(L->kind == L_ENS_SCALE && L->act == RT_ACT_NONE && L->rate == 0.0f && L->np == 1 &&
              S->kind == L_ENS_SCALE && !S->pair && L->in[0].t == S->out.t && whole(m, L->in[0]) &&
              whole(m, S->out) && L->gmode[0] == 0 && m->tensors[S->out.t].grad))
            continue;
        int readers = 0;
        for (int j = 0; j < m->nlayers; j++)
            for (int k = 0; k < m->layers[j].nin; k++)
                readers += m->layers[j].in[k].t == S->out.t;
        if (readers == 1)
            L->pair = S->paired = m->tensors[S->out.t].gunused = true;
    }
    /* hook ranges: each layer with parameters, up to the next such layer */
    int64_t end = m->arena;
    for (int i = m->nlayers - 1; i >= 0; i--) {
        mlayer *L = &m->layers[i];
        if (L->np == 0)
            continue;
        L->goff = m->info[L->p0].off;
        L->glen = end - L->goff;
        end = L->goff;
    }
    if (end != 0)
        mb_fail(p, "internal error: the layers' parameters do not start the arena");
}

void model_plan_bf16(rt_model *m)
{
    for (int t = 0; t < m->ntensors; t++) {
        mtensor *x = &m->tensors[t];
        if (x->input || t == m->t_pred || t == m->t_loss)
            continue;
        /* its writers (a dropout in place counts) and its readers */
        const mlayer *w = NULL, *r = NULL;
        int nw = 0, nr = 0, nlin = 0, k_r = 0;
        for (int i = 0; i < m->nlayers; i++) {
            const mlayer *L = &m->layers[i];
            if (L->out.t == t)
                w = L, nw++;
            for (int k = 0; k < L->nin; k++)
                if (L->in[k].t == t) {
                    r = L, k_r = k, nr++;
                    nlin += L->kind == L_LINEAR && k == 0 && whole(m, L->in[k]);
                }
        }
        if (nw != 1 || nr == 0 || !whole(m, w->out))
            continue;
        /* the value: x ⊙ r written by a block's scale, read by linear layers alone */
        x->bf16 = w->kind == L_ENS_SCALE && nlin == nr;
        /* the gradient: of a linear layer's output without bias or ReLU (its
         * backward only multiplies it), written whole by its one reader, a
         * scale (which rounds it) */
        x->gbf16 = x->grad && w->kind == L_LINEAR && w->np == 1 && w->act == RT_ACT_NONE &&
                   nr == 1 && r->kind == L_ENS_SCALE && k_r == 0 && whole(m, r->in[0]) &&
                   r->gmode[0] == 0;
    }
}

rt_status model_plan(rt_model *m, char *err)
{
    mplan p = {.m = m};
    m->std_off = -1;
    m->quant_off = -1;
    m->robust_off = -1;
    m->ple_off = -1;
    m->arena = 0;
    const model_family *f = model_family_of(m->spec.arch);
    if (f)
        f->plan(&p);
    else
        mb_fail(&p, "unknown architecture");
    if (!p.failed)
        complete(&p);
    /* the non-trainable values follow the trainable tensors in the table */
    if (!p.failed && m->ninfo + p.nbuf > m->info_cap) {
        rt_param_info *ni = realloc(m->info, (size_t)(m->ninfo + p.nbuf) * sizeof *ni);
        if (!ni)
            mb_fail(&p, "out of memory");
        else
            m->info = ni, m->info_cap = m->ninfo + p.nbuf;
    }
    if (!p.failed) {
        if (p.nbuf > 0)
            memcpy(m->info + m->ninfo, p.buf, (size_t)p.nbuf * sizeof *p.buf);
        m->nseg = m->ninfo;
        m->ninfo += p.nbuf;
    }
    free(p.buf);
    if (p.failed)
        return rt_err(err, RT_ERR_INVALID, "%s", p.why);
    return RT_OK;
}
