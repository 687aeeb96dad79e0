/* rt_model.c — the model runtime (see rt_model.h): layout of the flat
 * buffers, initialisation, and the forward / backward / apply sequences
 * written against the kernel API, identical for CPU and CUDA. */
#include "rt_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rt_rng.h"

/* RNG streams: initialisation uses INIT_STREAM + tensor index at step 0;
 * dropout uses DROPOUT_STREAM at the current step. */
#define INIT_STREAM 0x1000u
#define DROPOUT_STREAM RT_MODEL_DROPOUT_STREAM
#define MAX_ALLOCS 48

struct rt_model {
    rt_model_spec spec;
    rt_kctx *ctx;
    rt_device dev;
    int64_t max_batch;
    int64_t emb_cols; /* C * d */
    int64_t f0;       /* C * d + n_cont */
    int64_t rows;     /* sum of vocab sizes */

    rt_param_info *info; /* trainable tensors, then the two BN buffers */
    int ninfo;
    int64_t n_params, n_buffers, arena;
    int64_t off_emb, off_gamma, off_beta;
    int64_t off_w[RT_MODEL_MAX_HIDDEN + 1], off_b[RT_MODEL_MAX_HIDDEN + 1];
    int64_t in_dim[RT_MODEL_MAX_HIDDEN + 1], out_dim[RT_MODEL_MAX_HIDDEN + 1];

    /* flat buffers and small device tables */
    float *params, *grads, *adam_m, *adam_v, *buffers;
    rt_adam_hp *hp; /* the hyper-parameters of the next update */
    rt_adam_seg *segs;
    int nseg;
    int32_t *rowbase;
    int64_t *step;
    double *metrics;
    uint64_t dropout_seed;

    /* inputs and activations, max_batch rows */
    int32_t *in_cat;
    float *in_cont, *in_label;
    float *x0, *h[RT_MODEL_MAX_HIDDEN], *z, *pred, *dpred, *dz, *ga, *gb, *dx0;
    float *bn_mean, *bn_invstd;
    double *bn_given_mean, *bn_given_var; /* sync BN: the global batch's (host, CPU only) */
    bool bn_given;

    void *allocs[MAX_ALLOCS];
    int nallocs;
};

void rt_model_spec_defaults(rt_model_spec *s)
{
    memset(s, 0, sizeof *s);
    s->emb_dim = 10;
    s->n_hidden = 4;
    s->hidden[0] = s->hidden[1] = s->hidden[2] = 1000;
    s->hidden[3] = 500;
    s->dropout = 0.5f;
    s->l2 = 5e-5f;
    s->head_scale = 1.0f;
    s->bn_momentum = 0.99f;
    s->bn_eps = 1e-3f;
    s->seed = 42;
}

rt_status rt_model_spec_check(const rt_model_spec *s, char *err)
{
    if (s->n_cat < 0 || s->n_cat > RT_MODEL_MAX_CAT)
        return rt_err(err, RT_ERR_INVALID, "%d categorical columns (at most %d)", s->n_cat,
                      RT_MODEL_MAX_CAT);
    if (s->n_cont < 0 || s->n_cont > 4096)
        return rt_err(err, RT_ERR_INVALID, "%d continuous columns (at most 4096)", s->n_cont);
    if (s->n_cat + s->n_cont == 0)
        return rt_err(err, RT_ERR_INVALID, "the model has no input columns");
    if (s->n_cat > 0 && (s->emb_dim < 1 || s->emb_dim > 1024))
        return rt_err(err, RT_ERR_INVALID, "embedding dimension %d is out of range [1, 1024]",
                      s->emb_dim);
    int64_t rows = 0;
    for (int c = 0; c < s->n_cat; c++) {
        if (s->vocab[c] < 1)
            return rt_err(err, RT_ERR_INVALID, "categorical column %d has an empty vocabulary", c);
        rows += s->vocab[c];
    }
    if (rows * (int64_t)(s->emb_dim > 0 ? s->emb_dim : 1) > INT32_MAX)
        return rt_err(err, RT_ERR_INVALID, "embedding tables hold more than 2^31 values");
    if (s->n_hidden < 1 || s->n_hidden > RT_MODEL_MAX_HIDDEN)
        return rt_err(err, RT_ERR_INVALID, "%d hidden layers (1 to %d)", s->n_hidden,
                      RT_MODEL_MAX_HIDDEN);
    for (int l = 0; l < s->n_hidden; l++)
        if (s->hidden[l] < 1 || s->hidden[l] > 65536)
            return rt_err(err, RT_ERR_INVALID, "hidden layer %d has %d units (1 to 65536)", l + 1,
                          s->hidden[l]);
    if (!(s->dropout >= 0.0f && s->dropout < 1.0f))
        return rt_err(err, RT_ERR_INVALID, "dropout %g is out of range [0, 1)", s->dropout);
    if (!(s->l2 >= 0.0f) || !(s->head_scale > 0.0f) || !(s->bn_eps > 0.0f) ||
        !(s->bn_momentum >= 0.0f && s->bn_momentum <= 1.0f))
        return rt_err(err, RT_ERR_INVALID,
                      "l2 must be >= 0, head_scale and bn_eps > 0, bn_momentum in [0, 1]");
    return RT_OK;
}

static void *alloc_dev(rt_model *m, size_t bytes, rt_status *st)
{
    void *p = NULL;
    if (*st != RT_OK)
        return NULL;
    RT_ASSERT(m->nallocs < MAX_ALLOCS);
    *st = rt_kmalloc(m->ctx, bytes ? bytes : 4, &p);
    if (*st == RT_OK)
        m->allocs[m->nallocs++] = p;
    return p;
}

static void add_info(rt_model *m, const char *name, int64_t off, int64_t rows, int64_t cols,
                     float l2, bool trainable)
{
    rt_param_info *pi = &m->info[m->ninfo++];
    snprintf(pi->name, sizeof pi->name, "%s", name);
    pi->off = off;
    pi->rows = rows;
    pi->cols = cols;
    pi->count = rows * cols;
    pi->pos = trainable ? m->n_params : off;
    pi->l2 = l2;
    pi->trainable = trainable;
    if (trainable)
        m->n_params += pi->count;
}

/* The next tensor's offset: past off + count, on an RT_MODEL_ALIGN boundary. */
static int64_t next_off(int64_t off, int64_t count)
{
    return (off + count + RT_MODEL_ALIGN - 1) / RT_MODEL_ALIGN * RT_MODEL_ALIGN;
}

/* Lay out the flat buffer in forward order: embeddings, BN gamma/beta, then
 * each dense layer's kernel and bias, the output layer last; every tensor
 * aligned (see rt_model.h), except that the embedding tables follow each
 * other without a gap: the gather and scatter kernels see them as one
 * matrix with a row base per column. */
static void plan_layout(rt_model *m)
{
    const rt_model_spec *s = &m->spec;
    int64_t off = 0;
    char name[RT_MODEL_NAME_LEN + 16];
    m->n_params = 0;
    m->off_emb = 0;
    for (int c = 0; c < s->n_cat; c++) {
        if (s->cat_names[c][0])
            snprintf(name, sizeof name, "emb_%s", s->cat_names[c]);
        else
            snprintf(name, sizeof name, "emb_%d", c);
        add_info(m, name, off, s->vocab[c], s->emb_dim, 0.0f, true);
        off += (int64_t)s->vocab[c] * s->emb_dim; /* the tables are one (rows, d) matrix */
    }
    off = next_off(off, 0);
    m->off_gamma = off;
    add_info(m, "batch_norm/gamma", off, 1, s->n_cont, 0.0f, true);
    off = next_off(off, s->n_cont);
    m->off_beta = off;
    add_info(m, "batch_norm/beta", off, 1, s->n_cont, 0.0f, true);
    off = next_off(off, s->n_cont);
    int64_t in = m->f0;
    for (int l = 0; l <= s->n_hidden; l++) {
        bool last = l == s->n_hidden;
        int64_t out = last ? 1 : s->hidden[l];
        m->in_dim[l] = in;
        m->out_dim[l] = out;
        if (last)
            snprintf(name, sizeof name, "output/kernel");
        else
            snprintf(name, sizeof name, "dense_%d/kernel", l + 1);
        m->off_w[l] = off;
        add_info(m, name, off, out, in, last ? 0.0f : s->l2, true);
        off = next_off(off, out * in);
        if (last)
            snprintf(name, sizeof name, "output/bias");
        else
            snprintf(name, sizeof name, "dense_%d/bias", l + 1);
        m->off_b[l] = off;
        add_info(m, name, off, 1, out, 0.0f, true);
        off = next_off(off, out);
        in = out;
    }
    m->arena = off;
    add_info(m, "batch_norm/moving_mean", 0, 1, s->n_cont, 0.0f, false);
    add_info(m, "batch_norm/moving_variance", s->n_cont, 1, s->n_cont, 0.0f, false);
    m->n_buffers = 2 * (int64_t)s->n_cont;
}

/* Keras defaults, drawn on the host from the counter-based RNG. */
static void init_host(const rt_model *m, float *p, float *buf)
{
    const rt_model_spec *s = &m->spec;
    for (int t = 0; t < m->ninfo; t++) {
        const rt_param_info *pi = &m->info[t];
        if (!pi->trainable)
            continue;
        float *dst = p + pi->off;
        uint32_t stream = INIT_STREAM + (uint32_t)t;
        if (strncmp(pi->name, "emb_", 4) == 0) {
            for (int64_t e = 0; e < pi->count; e++)
                dst[e] = -0.05f + 0.1f * rt_rng_uniform(s->seed, stream, 0, (uint64_t)e);
        } else if (strstr(pi->name, "/kernel")) {
            /* Glorot uniform: limit sqrt(6 / (fan_in + fan_out)) */
            float limit = sqrtf(6.0f / (float)(pi->rows + pi->cols));
            for (int64_t e = 0; e < pi->count; e++)
                dst[e] = limit * (2.0f * rt_rng_uniform(s->seed, stream, 0, (uint64_t)e) - 1.0f);
        } else if (strcmp(pi->name, "batch_norm/gamma") == 0) {
            for (int64_t e = 0; e < pi->count; e++)
                dst[e] = 1.0f;
        } else {
            memset(dst, 0, (size_t)pi->count * sizeof(float)); /* biases, beta */
        }
    }
    for (int f = 0; f < s->n_cont; f++) {
        buf[f] = 0.0f;           /* moving mean */
        buf[s->n_cont + f] = 1.0f; /* moving variance */
    }
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
    m->ctx = ctx;
    m->dev = rt_kctx_device(ctx);
    m->max_batch = max_batch;
    m->dropout_seed = spec->seed;
    m->emb_cols = (int64_t)spec->n_cat * spec->emb_dim;
    m->f0 = m->emb_cols + spec->n_cont;
    for (int c = 0; c < spec->n_cat; c++)
        m->rows += spec->vocab[c];
    m->info = calloc((size_t)(spec->n_cat + 2 * (spec->n_hidden + 1) + 4), sizeof *m->info);
    if (!m->info) {
        free(m);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    plan_layout(m);

    const size_t P = (size_t)m->arena, Bm = (size_t)max_batch;
    int maxh = 1;
    for (int l = 0; l < spec->n_hidden; l++)
        maxh = spec->hidden[l] > maxh ? spec->hidden[l] : maxh;
    m->params = alloc_dev(m, P * 4, &st);
    m->grads = alloc_dev(m, P * 4, &st);
    m->adam_m = alloc_dev(m, P * 4, &st);
    m->adam_v = alloc_dev(m, P * 4, &st);
    m->buffers = alloc_dev(m, (size_t)m->n_buffers * 4, &st);
    m->nseg = 0;
    for (int t = 0; t < m->ninfo; t++)
        m->nseg += m->info[t].trainable;
    m->segs = alloc_dev(m, (size_t)m->nseg * sizeof(rt_adam_seg), &st);
    m->hp = alloc_dev(m, sizeof(rt_adam_hp), &st);
    m->rowbase = alloc_dev(m, (size_t)(spec->n_cat ? spec->n_cat : 1) * 4, &st);
    m->step = alloc_dev(m, sizeof(int64_t), &st);
    m->metrics = alloc_dev(m, RT_MODEL_NMETRICS * sizeof(double), &st);
    m->in_cat = alloc_dev(m, Bm * (size_t)spec->n_cat * 4, &st);
    m->in_cont = alloc_dev(m, Bm * (size_t)spec->n_cont * 4, &st);
    m->in_label = alloc_dev(m, Bm * 4, &st);
    m->x0 = alloc_dev(m, Bm * (size_t)m->f0 * 4, &st);
    for (int l = 0; l < spec->n_hidden; l++)
        m->h[l] = alloc_dev(m, Bm * (size_t)spec->hidden[l] * 4, &st);
    m->z = alloc_dev(m, Bm * 4, &st);
    m->pred = alloc_dev(m, Bm * 4, &st);
    m->dpred = alloc_dev(m, Bm * 4, &st);
    m->dz = alloc_dev(m, Bm * 4, &st);
    m->ga = alloc_dev(m, Bm * (size_t)maxh * 4, &st);
    m->gb = alloc_dev(m, Bm * (size_t)maxh * 4, &st);
    m->dx0 = alloc_dev(m, Bm * (size_t)m->f0 * 4, &st);
    m->bn_mean = alloc_dev(m, (size_t)spec->n_cont * 4, &st);
    m->bn_invstd = alloc_dev(m, (size_t)spec->n_cont * 4, &st);
    if (st != RT_OK) {
        long long np = (long long)m->n_params;
        rt_model_destroy(m);
        return rt_err(err, st, "cannot allocate the model's buffers (%lld parameters, batch %lld)",
                      np, (long long)max_batch);
    }

    /* host-side tables and initial values, copied once */
    float *hp = calloc(P + (size_t)m->n_buffers + 1, 4);
    rt_adam_seg *segs = malloc((size_t)m->nseg * sizeof *segs + sizeof *segs);
    int32_t *rowbase = malloc((size_t)(spec->n_cat + 1) * 4);
    if (!hp || !segs || !rowbase) {
        free(hp);
        free(segs);
        free(rowbase);
        rt_model_destroy(m);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    float *hbuf = hp + P;
    init_host(m, hp, hbuf);
    /* Adam's segments cover the arena without gaps: each tensor's takes the
     * padding after it (zero parameters with zero gradients stay zero) */
    int k = 0;
    for (int t = 0; t < m->ninfo; t++)
        if (m->info[t].trainable) {
            int64_t end = k + 1 < m->nseg ? m->info[t + 1].off : m->arena;
            segs[k++] = (rt_adam_seg){m->info[t].off, end - m->info[t].off, m->info[t].l2};
        }
    int32_t base = 0;
    for (int c = 0; c < spec->n_cat; c++) {
        rowbase[c] = base;
        base += spec->vocab[c];
    }
    int64_t zero = 0;
    rt_kmemcpy(ctx, m->params, hp, P * 4, RT_H2D);
    rt_kmemcpy(ctx, m->buffers, hbuf, (size_t)m->n_buffers * 4, RT_H2D);
    rt_kmemcpy(ctx, m->segs, segs, (size_t)m->nseg * sizeof *segs, RT_H2D);
    rt_kmemcpy(ctx, m->rowbase, rowbase, (size_t)spec->n_cat * 4, RT_H2D);
    rt_kmemcpy(ctx, m->step, &zero, sizeof zero, RT_H2D);
    rt_kmemset(ctx, m->adam_m, 0, P * 4);
    rt_kmemset(ctx, m->adam_v, 0, P * 4);
    rt_kmemset(ctx, m->grads, 0, P * 4);
    rt_kmemset(ctx, m->metrics, 0, RT_MODEL_NMETRICS * sizeof(double));
    st = rt_kctx_sync(ctx, err); /* the host tables are freed next */
    free(hp);
    free(segs);
    free(rowbase);
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
    free(m->info);
    free(m->bn_given_mean);
    free(m);
}

const rt_model_spec *rt_model_get_spec(const rt_model *m) { return &m->spec; }
rt_kctx *rt_model_kctx(rt_model *m) { return m->ctx; }
int64_t rt_model_max_batch(const rt_model *m) { return m->max_batch; }
int64_t rt_model_num_params(const rt_model *m) { return m->n_params; }
int64_t rt_model_num_buffers(const rt_model *m) { return m->n_buffers; }
int64_t rt_model_arena_len(const rt_model *m) { return m->arena; }
float *rt_model_params(rt_model *m) { return m->params; }
float *rt_model_grads(rt_model *m) { return m->grads; }
float *rt_model_buffers(rt_model *m) { return m->buffers; }
void rt_model_set_dropout_seed(rt_model *m, uint64_t seed) { m->dropout_seed = seed; }

const rt_param_info *rt_model_param_table(const rt_model *m, int *n)
{
    *n = m->ninfo;
    return m->info;
}

void rt_model_summary(const rt_model *m, FILE *f)
{
    fprintf(f, "%-34s %14s %12s\n", "tensor", "shape", "values");
    int64_t trainable = 0, fixed = 0;
    for (int t = 0; t < m->ninfo; t++) {
        const rt_param_info *pi = &m->info[t];
        char shape[48];
        if (pi->rows == 1)
            snprintf(shape, sizeof shape, "(%lld)", (long long)pi->cols);
        else
            snprintf(shape, sizeof shape, "(%lld, %lld)", (long long)pi->rows, (long long)pi->cols);
        fprintf(f, "%-34s %14s %12lld%s\n", pi->name, shape, (long long)pi->count,
                pi->trainable ? "" : "  (non-trainable)");
        if (pi->trainable)
            trainable += pi->count;
        else
            fixed += pi->count;
    }
    fprintf(f, "total params:         %lld\n", (long long)(trainable + fixed));
    fprintf(f, "trainable params:     %lld\n", (long long)trainable);
    fprintf(f, "non-trainable params: %lld\n", (long long)fixed);
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
}

/* ---- step ----------------------------------------------------------------- */

static rt_view mat(const rt_model *m, float *p, int64_t rows, int64_t cols)
{
    return rt_vf32(p, rows, cols, cols, m->dev);
}

rt_status rt_model_set_bn_batch_stats(rt_model *m, const double *mean, const double *var,
                                      char *err)
{
    const rt_model_spec *s = &m->spec;
    if (m->dev != RT_DEVICE_CPU)
        return rt_err(err, RT_ERR_UNSUPPORTED,
                      "synchronized batch norm runs on CPU models only (not yet on GPUs)");
    if (!m->bn_given_mean) {
        m->bn_given_mean = calloc(2 * (size_t)(s->n_cont > 0 ? s->n_cont : 1), sizeof(double));
        if (!m->bn_given_mean)
            return rt_err(err, RT_ERR_NOMEM, "out of memory");
        m->bn_given_var = m->bn_given_mean + s->n_cont;
    }
    /* what the training kernel would have saved and moved, from these */
    for (int f = 0; f < s->n_cont; f++) {
        double v = var[f] > 0 ? var[f] : 0.0;
        m->bn_given_mean[f] = mean[f];
        m->bn_given_var[f] = v;
        m->bn_mean[f] = (float)mean[f];
        m->bn_invstd[f] = (float)(1.0 / sqrt(v + s->bn_eps));
        float *run_mean = m->buffers + f, *run_var = m->buffers + s->n_cont + f;
        *run_mean = (float)(*run_mean * s->bn_momentum + mean[f] * (1.0 - s->bn_momentum));
        *run_var = (float)(*run_var * s->bn_momentum + v * (1.0 - s->bn_momentum));
    }
    m->bn_given = true;
    return RT_OK;
}

void rt_model_forward(rt_model *m, int64_t n, bool train)
{
    RT_ASSERT(n >= 0 && n <= m->max_batch);
    const rt_model_spec *s = &m->spec;
    rt_kctx *ctx = m->ctx;
    rt_view x0 = mat(m, m->x0, n, m->f0);
    if (s->n_cat > 0)
        rt_k_embed_fwd(ctx, rt_vi32(m->in_cat, n, s->n_cat, s->n_cat, m->dev), m->rowbase,
                       mat(m, m->params + m->off_emb, m->rows, s->emb_dim),
                       rt_view_cols(x0, 0, m->emb_cols));
    if (s->n_cont > 0 && train && m->bn_given) {
        /* statistics given (sync BN), in double as the kernel's own: the same
         * y as one process holding the whole global batch */
        rt_k_bn_fwd_given(ctx, mat(m, m->in_cont, n, s->n_cont), m->params + m->off_gamma,
                          m->params + m->off_beta, m->bn_given_mean, m->bn_given_var, s->bn_eps,
                          rt_view_cols(x0, m->emb_cols, s->n_cont));
        m->bn_given = false;
    } else if (s->n_cont > 0) {
        rt_k_bn_fwd(ctx, mat(m, m->in_cont, n, s->n_cont), m->params + m->off_gamma,
                    m->params + m->off_beta, m->buffers, m->buffers + s->n_cont, s->bn_momentum,
                    s->bn_eps, train, m->bn_mean, m->bn_invstd,
                    rt_view_cols(x0, m->emb_cols, s->n_cont));
    }
    rt_view x = x0;
    for (int l = 0; l < s->n_hidden; l++) {
        rt_view y = mat(m, m->h[l], n, s->hidden[l]);
        rt_k_dense_fwd(ctx, x, m->params + m->off_w[l], m->params + m->off_b[l], RT_ACT_RELU, y);
        x = y;
    }
    if (train && s->dropout > 0.0f)
        rt_k_dropout(ctx, x, s->dropout, m->dropout_seed, DROPOUT_STREAM, m->step);
    int L = s->n_hidden;
    rt_k_dense_fwd(ctx, x, m->params + m->off_w[L], m->params + m->off_b[L], RT_ACT_NONE,
                   mat(m, m->z, n, 1));
    rt_k_head_fwd(ctx, m->z, n, s->head_scale, m->pred);
}

void rt_model_loss(rt_model *m, int64_t n, bool with_grad)
{
    rt_k_mae(m->ctx, m->pred, m->in_label, n, with_grad ? m->dpred : NULL, m->metrics);
    rt_k_rmspe(m->ctx, m->pred, m->in_label, n, m->metrics + 2);
}

/* Dense layer l's backward: its gradients into the arena. */
static void dense_bwd(rt_model *m, int l, rt_view x, rt_view y, rt_act act, rt_view dy, rt_view dx)
{
    float *g = m->grads;
    rt_k_dense_bwd(m->ctx, x, m->params + m->off_w[l], y, act, dy, g + m->off_w[l],
                   g + m->off_b[l], dx);
}

void rt_model_backward(rt_model *m, int64_t n, rt_grad_hook hook, void *user)
{
    RT_ASSERT(n >= 0 && n <= m->max_batch);
    const rt_model_spec *s = &m->spec;
    rt_kctx *ctx = m->ctx;
    const int L = s->n_hidden;
    float *g = m->grads;
    rt_view none = {0};
    none.dtype = RT_F32;
    none.dev = m->dev;

    /* head and output layer: d(loss)/dz, then the output Dense(1) */
    rt_k_head_bwd(ctx, m->pred, m->dpred, n, s->head_scale, m->dz);
    rt_view hl = mat(m, m->h[L - 1], n, s->hidden[L - 1]);
    float *gcur = m->ga, *gnext = m->gb;
    dense_bwd(m, L, hl, mat(m, m->z, n, 1), RT_ACT_NONE, mat(m, m->dz, n, 1),
              mat(m, gcur, n, s->hidden[L - 1]));
    if (hook)
        hook(user, m->off_w[L], m->arena - m->off_w[L]);
    if (s->dropout > 0.0f)
        rt_k_dropout(ctx, mat(m, gcur, n, s->hidden[L - 1]), s->dropout, m->dropout_seed,
                     DROPOUT_STREAM, m->step);

    /* hidden layers, last to first; the first one's input gradient is dx0 */
    for (int l = L - 1; l >= 0; l--) {
        rt_view x = l == 0 ? mat(m, m->x0, n, m->f0) : mat(m, m->h[l - 1], n, s->hidden[l - 1]);
        rt_view dx = l == 0 ? mat(m, m->dx0, n, m->f0)
                            : mat(m, gnext, n, s->hidden[l - 1]);
        dense_bwd(m, l, x, mat(m, m->h[l], n, s->hidden[l]), RT_ACT_RELU,
                  mat(m, gcur, n, s->hidden[l]), dx);
        if (hook)
            hook(user, m->off_w[l], m->off_w[l + 1] - m->off_w[l]); /* with the padding */
        float *t = gcur;
        gcur = gnext;
        gnext = t;
    }

    /* inputs: batch norm and embeddings */
    rt_view dx0 = mat(m, m->dx0, n, m->f0);
    if (s->n_cont > 0)
        rt_k_bn_bwd(ctx, mat(m, m->in_cont, n, s->n_cont),
                    rt_view_cols(dx0, m->emb_cols, s->n_cont), m->params + m->off_gamma,
                    m->bn_mean, m->bn_invstd, g + m->off_gamma, g + m->off_beta, none);
    if (s->n_cat > 0)
        rt_k_embed_bwd(ctx, rt_vi32(m->in_cat, n, s->n_cat, s->n_cat, m->dev), m->rowbase,
                       rt_view_cols(dx0, 0, m->emb_cols),
                       mat(m, g + m->off_emb, m->rows, s->emb_dim));
    if (hook)
        hook(user, 0, m->off_w[0]);
}

void rt_model_set_hparams(rt_model *m, const rt_adam_hp *hp)
{
    rt_kmemcpy(m->ctx, m->hp, hp, sizeof *hp, RT_H2D);
}

void rt_model_update(rt_model *m)
{
    rt_k_adam(m->ctx, m->params, m->grads, m->adam_m, m->adam_v, m->arena, m->segs, m->nseg, m->hp,
              m->step);
    rt_k_step_incr(m->ctx, m->step);
}

void rt_model_apply(rt_model *m, const rt_adam_hp *hp)
{
    rt_model_set_hparams(m, hp);
    rt_model_update(m);
}

void rt_model_train_step(rt_model *m, int64_t n, const rt_adam_hp *hp)
{
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
    rt_kmemcpy(m->ctx, host, m->pred, (size_t)n * 4, RT_D2H);
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
    if (buffers)
        rt_kmemcpy(m->ctx, m->buffers, buffers, (size_t)m->n_buffers * 4, RT_H2D);
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
