/* model_plan.c — the family presets: each expands a spec into the layer
 * list, its tensors and the parameter table (model_impl.h), then the plan
 * is completed: which tensors need gradients, whether each layer writes or
 * adds its input gradients, the hook ranges and the saved buffers' sizes.
 * Nothing here touches device memory.
 *
 * The families follow their reference implementations: rossmann Horovod's
 * Keras model (its parameter order and names, so its checkpoints and
 * results are those of the model before the layer graph); mlp, resnet and
 * ft_transformer rtdl's (Gorishniy et al. 2021), mlp with fastai's order
 * inside a layer (Linear, activation, BatchNorm, Dropout); dcn2 the DCN-V2
 * of the same paper's code (cross layers x0 * (W x + b) + x behind a first
 * linear layer, deep layers stacked on them or beside them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"

static const char *const KIND_NAMES[L_KINDS] = {
    [L_EMBED] = "Embedding",        [L_BATCHNORM] = "BatchNorm", [L_STANDARDIZE] = "Standardize",
    [L_COPY] = "Identity",          [L_LINEAR] = "Dense",        [L_ACT] = "Activation",
    [L_DROPOUT] = "Dropout",        [L_LAYERNORM] = "LayerNorm", [L_ADD] = "Add",
    [L_CROSS] = "Cross",            [L_TOKENS] = "FeatureTokens", [L_ATTENTION] = "Attention",
    [L_REGLU] = "ReGLU",            [L_HEAD] = "ScaledSigmoid",
};

const char *model_kind_name(layer_kind k) { return k < L_KINDS ? KIND_NAMES[k] : "?"; }

/* The builder's state: errors are kept and reported once at the end. */
typedef struct plan {
    rt_model *m;
    rt_param_info *buf;   /* the non-trainable values, appended after the plan */
    int nbuf, buf_cap;
    bool failed;
    char why[RT_ERR_LEN];
    bool adjacent;        /* the next tensor follows the last without alignment */
    mlayer spare;         /* what a layer past the limit is written to (the plan fails) */
} plan;

static void fail(plan *p, const char *what)
{
    if (!p->failed)
        snprintf(p->why, sizeof p->why, "%s", what);
    p->failed = true;
}

static int tensor(plan *p, int64_t tpr, int64_t cols)
{
    rt_model *m = p->m;
    if (m->ntensors >= MODEL_MAX_TENSORS) {
        fail(p, "the model has too many layers");
        return 0;
    }
    mtensor *t = &m->tensors[m->ntensors];
    memset(t, 0, sizeof *t);
    t->tpr = tpr;
    t->cols = cols;
    return m->ntensors++;
}

static mslot whole(const plan *p, int t)
{
    return (mslot){t, 0, p->m->tensors[t].cols, -1};
}

static mslot colrange(int t, int64_t c0, int64_t n) { return (mslot){t, c0, n, -1}; }

static mlayer *layer(plan *p, layer_kind k, const char *name, mslot out)
{
    rt_model *m = p->m;
    if (m->nlayers >= MODEL_MAX_LAYERS) {
        fail(p, "the model has too many layers");
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

static void input(mlayer *L, mslot s)
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
static void param(plan *p, mlayer *L, const char *suffix, int64_t rows, int64_t cols,
                  init_kind init, int64_t fan_in, float l2)
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
            fail(p, "out of memory");
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
static void buffer(plan *p, mlayer *L, const char *suffix, int64_t count)
{
    if (p->nbuf == p->buf_cap) {
        int cap = p->buf_cap ? 2 * p->buf_cap : 16;
        rt_param_info *nb = realloc(p->buf, (size_t)cap * sizeof *nb);
        if (!nb) {
            fail(p, "out of memory");
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

static uint32_t next_stream(plan *p) { return RT_MODEL_DROPOUT_STREAM + (uint32_t)p->m->ndropout++; }

/* In-place dropout on s (nothing when rate is 0). */
static void dropout(plan *p, const char *name, mslot s, float rate)
{
    if (rate <= 0.0f)
        return;
    mlayer *L = layer(p, L_DROPOUT, name, s);
    input(L, s);
    L->rate = rate;
    L->stream = next_stream(p);
}

/* Dense layer from in to a new tensor (or the slot `to` when to.t >= 0). */
static mslot linear(plan *p, const char *name, mslot in, int64_t out, rt_act act, bool keras,
                    float l2, mslot to)
{
    mslot o = to.t >= 0 ? to : whole(p, tensor(p, p->m->tensors[in.t].tpr, out));
    mlayer *L = layer(p, L_LINEAR, name, o);
    input(L, in);
    L->act = act;
    param(p, L, "/kernel", out, in.cols, keras ? INIT_GLOROT : INIT_FAN_IN, in.cols, l2);
    param(p, L, "/bias", 1, out, keras ? INIT_ZERO : INIT_FAN_IN, in.cols, 0.0f);
    return o;
}

static const mslot NO_SLOT = {-1, 0, 0, -1};

static void batchnorm_params(plan *p, mlayer *L, int64_t F)
{
    param(p, L, "/gamma", 1, F, INIT_ONE, 0, 0.0f);
    param(p, L, "/beta", 1, F, INIT_ZERO, 0, 0.0f);
    buffer(p, L, "/moving_mean", F);
    buffer(p, L, "/moving_variance", F);
    L->save_fixed = 2 * F;
}

static mslot batchnorm(plan *p, const char *name, mslot in)
{
    mslot o = whole(p, tensor(p, 1, in.cols));
    mlayer *L = layer(p, L_BATCHNORM, name, o);
    input(L, in);
    batchnorm_params(p, L, in.cols);
    return o;
}

static mslot layernorm(plan *p, const char *name, mslot in)
{
    const int64_t tpr = in.tok >= 0 ? 1 : p->m->tensors[in.t].tpr;
    mslot o = whole(p, tensor(p, tpr, in.cols));
    mlayer *L = layer(p, L_LAYERNORM, name, o);
    input(L, in);
    param(p, L, "/gamma", 1, in.cols, INIT_ONE, 0, 0.0f);
    param(p, L, "/beta", 1, in.cols, INIT_ZERO, 0, 0.0f);
    L->save_per_sample = 2 * tpr;
    return o;
}

static mslot act_layer(plan *p, const char *name, mslot in, rt_act act)
{
    mslot o = whole(p, tensor(p, p->m->tensors[in.t].tpr, in.cols));
    mlayer *L = layer(p, L_ACT, name, o);
    input(L, in);
    L->act = act;
    return o;
}

static mslot add(plan *p, const char *name, mslot a, mslot b)
{
    mslot o = whole(p, tensor(p, p->m->tensors[a.t].tpr, a.cols));
    mlayer *L = layer(p, L_ADD, name, o);
    input(L, a);
    input(L, b);
    return o;
}

/* The continuous inputs: the model's input buffer, n_cont columns. */
static mslot cont_input(plan *p)
{
    int t = tensor(p, 1, p->m->spec.n_cont);
    p->m->tensors[t].input = true;
    return whole(p, t);
}

/* The continuous inputs as the spec normalises them, into `to` (a column
 * range) or a new tensor; rossmann names its batch norm batch_norm. */
static mslot cont_block(plan *p, mslot to)
{
    const rt_model_spec *s = &p->m->spec;
    mslot in = cont_input(p);
    if (s->cont_norm == RT_CONT_NONE && to.t < 0)
        return in; /* read where it is */
    mslot o = to.t >= 0 ? to : whole(p, tensor(p, 1, s->n_cont));
    layer_kind k = s->cont_norm == RT_CONT_BATCHNORM     ? L_BATCHNORM
                   : s->cont_norm == RT_CONT_STANDARDIZE ? L_STANDARDIZE
                                                         : L_COPY;
    mlayer *L = layer(p, k, k == L_BATCHNORM ? "batch_norm" : k == L_STANDARDIZE ? "standardize"
                                                                               : "continuous",
                      o);
    input(L, in);
    if (k == L_BATCHNORM) {
        batchnorm_params(p, L, s->n_cont);
    } else if (k == L_STANDARDIZE) {
        buffer(p, L, "/mean", s->n_cont);
        buffer(p, L, "/std", s->n_cont);
        p->m->std_off = L->boff;
        L->save_fixed = 2 * (int64_t)s->n_cont; /* scale and shift, from mean and std */
    }
    return o;
}

/* The embedding tables of every categorical column, adjacent in the arena;
 * out offsets ooff[c] (per column) within the consumer's row. */
static void embedding_tables(plan *p, mlayer *L, const int64_t *ooff, bool keras)
{
    rt_model *m = p->m;
    const rt_model_spec *s = &m->spec;
    char name[RT_MODEL_NAME_LEN + 16];
    m->emb_host = calloc((size_t)(s->n_cat ? s->n_cat : 1), sizeof *m->emb_host);
    if (!m->emb_host) {
        fail(p, "out of memory");
        return;
    }
    m->emb_lo = m->arena;
    p->adjacent = true; /* the tables are one region for the gather and scatter kernels */
    for (int c = 0; c < s->n_cat; c++) {
        const int64_t d = s->arch == RT_ARCH_FT_TRANSFORMER ? s->d_token : s->emb_dim[c];
        if (s->cat_names[c][0])
            snprintf(name, sizeof name, "emb_%s", s->cat_names[c]);
        else
            snprintf(name, sizeof name, "emb_%d", c);
        m->emb_host[c] = (rt_embed_col){m->arena - m->emb_lo, s->vocab[c], (int32_t)d,
                                        (int32_t)ooff[c], 0};
        param(p, L, name, s->vocab[c], d, keras ? INIT_UNIFORM_005 : INIT_TOKEN, 0, 0.0f);
    }
    p->adjacent = false;
    m->emb_hi = m->arena;
    m->arena = next_off(m->arena, 0);
}

/* Embeddings and continuous inputs side by side in one tensor (Rossmann's
 * concat; rtdl's MLP, ResNet and DCN-V2 inputs). */
static mslot input_block(plan *p, bool keras)
{
    const rt_model_spec *s = &p->m->spec;
    int64_t E = 0;
    int64_t *ooff = calloc((size_t)(s->n_cat ? s->n_cat : 1), sizeof *ooff);
    if (!ooff) {
        fail(p, "out of memory");
        return NO_SLOT;
    }
    for (int c = 0; c < s->n_cat; c++) {
        ooff[c] = E;
        E += s->emb_dim[c];
    }
    if (s->n_cat == 0) { /* the continuous inputs alone */
        free(ooff);
        return cont_block(p, NO_SLOT);
    }
    int x0 = tensor(p, 1, E + s->n_cont);
    mslot emb = colrange(x0, 0, E);
    mlayer *L = layer(p, L_EMBED, "embedding", emb);
    embedding_tables(p, L, ooff, keras);
    free(ooff);
    dropout(p, "embedding_dropout", emb, s->emb_dropout);
    /* rossmann declares its (empty) batch norm without continuous columns
     * too: its tensors keep their numbers, and so their initial values */
    if (s->n_cont > 0 || keras)
        cont_block(p, colrange(x0, E, s->n_cont));
    return whole(p, x0);
}

/* The head on the output layer's slot: the scaled sigmoid of its one
 * column, or (linear) the n_out columns themselves. */
static void head(plan *p, mslot z)
{
    if (p->m->spec.head == RT_HEAD_LINEAR) {
        p->m->t_pred = z.t;
        return;
    }
    mslot o = whole(p, tensor(p, 1, 1));
    mlayer *L = layer(p, L_HEAD, "head", o);
    input(L, z);
    p->m->t_pred = o.t;
}

/* ---- the families -------------------------------------------------------------------- */

static void plan_rossmann(plan *p)
{
    const rt_model_spec *s = &p->m->spec;
    mslot x = input_block(p, true);
    char name[32];
    for (int l = 0; l < s->n_hidden; l++) {
        snprintf(name, sizeof name, "dense_%d", l + 1);
        x = linear(p, name, x, s->hidden[l], RT_ACT_RELU, true, s->l2, NO_SLOT);
    }
    dropout(p, "dropout", x, s->dropout[s->n_hidden - 1]);
    head(p, linear(p, "output", x, p->m->spec.n_out, RT_ACT_NONE, true, 0.0f, NO_SLOT));
}

static void plan_mlp(plan *p)
{
    const rt_model_spec *s = &p->m->spec;
    mslot x = input_block(p, false);
    char name[48];
    for (int l = 0; l < s->n_hidden; l++) {
        snprintf(name, sizeof name, "dense_%d", l + 1);
        bool fuse = s->activation == RT_ACT_RELU;
        x = linear(p, name, x, s->hidden[l], fuse ? RT_ACT_RELU : RT_ACT_NONE, false, s->l2,
                   NO_SLOT);
        if (!fuse) {
            snprintf(name, sizeof name, "dense_%d/act", l + 1);
            x = act_layer(p, name, x, s->activation);
        }
        if (s->batch_norm[l]) {
            snprintf(name, sizeof name, "dense_%d/bn", l + 1);
            x = batchnorm(p, name, x);
        }
        snprintf(name, sizeof name, "dense_%d/dropout", l + 1);
        dropout(p, name, x, s->dropout[l]);
    }
    head(p, linear(p, "output", x, p->m->spec.n_out, RT_ACT_NONE, false, 0.0f, NO_SLOT));
}

static void plan_resnet(plan *p)
{
    const rt_model_spec *s = &p->m->spec;
    const int64_t w = s->width, hid = (int64_t)((double)s->width * s->hidden_multiplier);
    mslot x = linear(p, "first_layer", input_block(p, false), w, RT_ACT_NONE, false, s->l2,
                     NO_SLOT);
    char name[48];
    for (int b = 1; b <= s->blocks; b++) {
        snprintf(name, sizeof name, "block_%d/norm", b);
        mslot z = batchnorm(p, name, x);
        snprintf(name, sizeof name, "block_%d/linear_first", b);
        z = linear(p, name, z, hid, RT_ACT_RELU, false, s->l2, NO_SLOT);
        snprintf(name, sizeof name, "block_%d/dropout_first", b);
        dropout(p, name, z, s->dropout1);
        snprintf(name, sizeof name, "block_%d/linear_second", b);
        z = linear(p, name, z, w, RT_ACT_NONE, false, s->l2, NO_SLOT);
        snprintf(name, sizeof name, "block_%d/dropout_second", b);
        dropout(p, name, z, s->dropout2);
        snprintf(name, sizeof name, "block_%d/add", b);
        x = add(p, name, x, z);
    }
    x = act_layer(p, "head/relu", batchnorm(p, "head/norm", x), RT_ACT_RELU);
    head(p, linear(p, "output", x, p->m->spec.n_out, RT_ACT_NONE, false, 0.0f, NO_SLOT));
}

static void plan_dcn2(plan *p)
{
    const rt_model_spec *s = &p->m->spec;
    const int64_t w = s->width;
    mslot x0 = linear(p, "first_linear", input_block(p, false), w, RT_ACT_NONE, false, s->l2,
                      NO_SLOT);
    /* side by side: the last cross layer and the last deep layer write halves of one tensor */
    const bool side = !s->stacked;
    const int cat = side ? tensor(p, 1, 2 * w) : -1;
    mslot x = x0;
    char name[48];
    for (int c = 1; c <= s->cross_layers; c++) {
        snprintf(name, sizeof name, "cross_%d/linear", c);
        mslot u = linear(p, name, x, w, RT_ACT_NONE, false, s->l2, NO_SLOT);
        mslot o = side && c == s->cross_layers ? colrange(cat, 0, w) : whole(p, tensor(p, 1, w));
        snprintf(name, sizeof name, "cross_%d", c);
        mlayer *L = layer(p, L_CROSS, name, o);
        input(L, x0);
        input(L, u);
        input(L, x);
        L->rate = s->cross_dropout;
        L->stream = s->cross_dropout > 0 ? next_stream(p) : 0;
        x = o;
    }
    if (side && s->cross_layers == 0) { /* the cross network is the identity */
        mlayer *L = layer(p, L_COPY, "cross", colrange(cat, 0, w));
        input(L, x0);
    }
    mslot d = side ? x0 : x;
    for (int l = 1; l <= s->deep_layers; l++) {
        snprintf(name, sizeof name, "deep_%d", l);
        mslot to = side && l == s->deep_layers ? colrange(cat, w, w) : NO_SLOT;
        d = linear(p, name, d, w, RT_ACT_RELU, false, s->l2, to);
        snprintf(name, sizeof name, "deep_%d/dropout", l);
        dropout(p, name, d, s->dropout[l - 1]);
    }
    if (side && s->deep_layers == 0) {
        mlayer *L = layer(p, L_COPY, "deep", colrange(cat, w, w));
        input(L, x0);
    }
    head(p, linear(p, "output", side ? whole(p, cat) : d, p->m->spec.n_out, RT_ACT_NONE, false, 0.0f, NO_SLOT));
}

static void plan_ft_transformer(plan *p)
{
    rt_model *m = p->m;
    const rt_model_spec *s = &m->spec;
    const int64_t d = s->d_token, T = (int64_t)s->n_cont + s->n_cat + 1;
    const int64_t hid = (int64_t)((double)d * s->ffn_multiplier);
    m->tokens = T;
    mslot xc = s->n_cont > 0 ? cont_block(p, NO_SLOT) : NO_SLOT;
    mslot x = whole(p, tensor(p, T, d));
    mlayer *L = layer(p, L_TOKENS, "tokenizer", x);
    if (s->n_cont > 0) {
        input(L, xc);
        param(p, L, "/num_weight", s->n_cont, d, INIT_TOKEN, 0, 0.0f);
        param(p, L, "/num_bias", s->n_cont, d, INIT_TOKEN, 0, 0.0f);
    }
    if (s->n_cat > 0) {
        int64_t *ooff = calloc((size_t)s->n_cat, sizeof *ooff);
        if (!ooff) {
            fail(p, "out of memory");
            return;
        }
        for (int c = 0; c < s->n_cat; c++)
            ooff[c] = ((int64_t)s->n_cont + c) * d;
        embedding_tables(p, L, ooff, false);
        free(ooff);
        param(p, L, "/cat_bias", s->n_cat, d, INIT_TOKEN, 0, 0.0f);
    }
    param(p, L, "/cls", 1, d, INIT_TOKEN, 0, 0.0f);
    char name[48];
    for (int b = 1; b <= s->blocks; b++) {
        mslot h = x;
        if (b > 1) { /* rtdl: no normalisation before the first block's attention */
            snprintf(name, sizeof name, "block_%d/attention_norm", b);
            h = layernorm(p, name, x);
        }
        snprintf(name, sizeof name, "block_%d/attention/qkv", b);
        mslot qkv = linear(p, name, h, 3 * d, RT_ACT_NONE, false, s->l2, NO_SLOT);
        /* rtdl's W_q, W_k, W_v: zero biases */
        m->init[m->ninfo - 1] = INIT_ZERO;
        snprintf(name, sizeof name, "block_%d/attention", b);
        mslot a = whole(p, tensor(p, T, d));
        L = layer(p, L_ATTENTION, name, a);
        input(L, qkv);
        L->heads = s->heads;
        L->rate = s->attention_dropout;
        L->stream = next_stream(p);
        L->save_per_sample = s->heads * T * T;
        if (s->heads > 1) {
            snprintf(name, sizeof name, "block_%d/attention/out", b);
            a = linear(p, name, a, d, RT_ACT_NONE, false, s->l2, NO_SLOT);
            m->init[m->ninfo - 1] = INIT_ZERO; /* rtdl: W_out's bias is zero */
        }
        snprintf(name, sizeof name, "block_%d/attention_residual_dropout", b);
        dropout(p, name, a, s->residual_dropout);
        snprintf(name, sizeof name, "block_%d/attention_add", b);
        x = add(p, name, x, a);
        snprintf(name, sizeof name, "block_%d/ffn_norm", b);
        h = layernorm(p, name, x);
        snprintf(name, sizeof name, "block_%d/ffn/linear_first", b);
        h = linear(p, name, h, 2 * hid, RT_ACT_NONE, false, s->l2, NO_SLOT);
        snprintf(name, sizeof name, "block_%d/ffn/reglu", b);
        mslot g = whole(p, tensor(p, T, hid));
        L = layer(p, L_REGLU, name, g);
        input(L, h);
        snprintf(name, sizeof name, "block_%d/ffn/dropout", b);
        dropout(p, name, g, s->ffn_dropout);
        snprintf(name, sizeof name, "block_%d/ffn/linear_second", b);
        h = linear(p, name, g, d, RT_ACT_NONE, false, s->l2, NO_SLOT);
        snprintf(name, sizeof name, "block_%d/ffn_residual_dropout", b);
        dropout(p, name, h, s->residual_dropout);
        snprintf(name, sizeof name, "block_%d/ffn_add", b);
        x = add(p, name, x, h);
    }
    /* rtdl's head: the [CLS] token (the last), LayerNorm, ReLU, Linear */
    mslot cls = {x.t, 0, d, (int)(T - 1)};
    mslot h = act_layer(p, "head/relu", layernorm(p, "head/norm", cls), RT_ACT_RELU);
    head(p, linear(p, "output", h, p->m->spec.n_out, RT_ACT_NONE, false, 0.0f, NO_SLOT));
}

/* ---- completing the plan ---------------------------------------------------------------- */

static bool partial(const rt_model *m, mslot s)
{
    return s.tok >= 0 || s.col0 != 0 || s.cols != m->tensors[s.t].cols;
}

/* Which tensors need gradients (something before them trains), whether
 * each layer writes or adds its inputs' gradients, hook ranges, scratch. */
static void complete(plan *p)
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
        if (L->kind == L_DROPOUT)
            continue; /* in place: its gradient is its slot's */
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
        fail(p, "internal error: the layers' parameters do not start the arena");
}

rt_status model_plan(rt_model *m, char *err)
{
    plan p = {.m = m};
    m->std_off = -1;
    m->arena = 0;
    switch (m->spec.arch) {
    case RT_ARCH_ROSSMANN:
        plan_rossmann(&p);
        break;
    case RT_ARCH_MLP:
        plan_mlp(&p);
        break;
    case RT_ARCH_RESNET:
        plan_resnet(&p);
        break;
    case RT_ARCH_DCN2:
        plan_dcn2(&p);
        break;
    case RT_ARCH_FT_TRANSFORMER:
        plan_ft_transformer(&p);
        break;
    default:
        fail(&p, "unknown architecture");
    }
    if (!p.failed)
        complete(&p);
    /* the non-trainable values follow the trainable tensors in the table */
    if (!p.failed && m->ninfo + p.nbuf > m->info_cap) {
        rt_param_info *ni = realloc(m->info, (size_t)(m->ninfo + p.nbuf) * sizeof *ni);
        if (!ni)
            fail(&p, "out of memory");
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
