/* test_model_graph.c — every model family's gradient against central
 * finite differences, on the CPU.
 *
 * The reference is a double-precision forward written here, layer kind by
 * layer kind, independent of the kernels: it walks the model's layer list
 * (model_impl.h) and computes each layer from its definition (batch
 * statistics, the dropout masks drawn from rt_rng as the kernels draw
 * them).  It uses no gradient routing, so the finite differences check the
 * float backward end to end: each kind's backward, the gradients the plan
 * adds where a tensor has several readers, the partial slots (the [CLS]
 * token, the concatenations) and the hooks' ranges.  Models are small and
 * random (widths, columns, rates, residual and cross wiring), fresh each
 * run (RT_TEST_SEED); tabm's loss is its members' mean. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "model_impl.h"
#include "rt_rng.h"
#include "test_util.h"

static rt_kctx *ctx;

/* ---- the double-precision forward ------------------------------------------------- */

typedef struct dnet {
    const rt_model *m;
    int64_t n;
    const int32_t *cat;
    const float *cont, *label;
    const float *buf; /* the model's buffers (host) */
    double **t;       /* per tensor: n * tpr rows of cols */
} dnet;

static double *tens(dnet *d, int t)
{
    const mtensor *x = &d->m->tensors[t];
    if (!d->t[t])
        d->t[t] = calloc((size_t)(d->n * x->tpr * x->cols) + 1, sizeof(double));
    return d->t[t];
}

static int64_t slot_rows(const dnet *d, mslot s)
{
    return s.tok >= 0 ? d->n : d->n * d->m->tensors[s.t].tpr;
}

/* element (r, j) of a slot: a pointer into its tensor */
static double *at(dnet *d, mslot s, int64_t r, int64_t j)
{
    const mtensor *x = &d->m->tensors[s.t];
    int64_t row = s.tok >= 0 ? r * x->tpr + s.tok : r;
    return tens(d, s.t) + row * x->cols + s.col0 + j;
}

static double in(dnet *d, mslot s, int64_t r, int64_t j)
{
    if (d->m->tensors[s.t].input)
        return d->cont[r * d->m->spec.n_cont + j];
    return *at(d, s, r, j);
}

static double keep(const dnet *d, float rate, uint32_t stream, uint64_t e)
{
    if (rate <= 0)
        return 1.0;
    return rt_rng_uniform(d->m->dropout_seed, stream, 0, e) >= rate ? 1.0 / (1.0 - rate) : 0.0;
}

static double act(rt_act a, double x)
{
    switch (a) {
    case RT_ACT_RELU:
        return x > 0 ? x : 0;
    case RT_ACT_GELU:
        return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case RT_ACT_SILU:
        return x / (1 + exp(-x));
    case RT_ACT_TANH:
        return tanh(x);
    default:
        return x;
    }
}

/* P's tensor k of layer L */
static const double *prm(const dnet *d, const double *P, const mlayer *L, int k)
{
    return P + d->m->info[L->p0 + k].pos;
}

static void normalise_rows(dnet *d, const mlayer *L, const double *g, const double *b, bool ln)
{
    const int64_t R = slot_rows(d, L->in[0]), F = L->in[0].cols;
    const double eps = ln ? MODEL_LN_EPS : d->m->spec.bn_eps;
    if (ln) {
        for (int64_t r = 0; r < R; r++) {
            double mu = 0, var = 0;
            for (int64_t j = 0; j < F; j++)
                mu += in(d, L->in[0], r, j) / (double)F;
            for (int64_t j = 0; j < F; j++)
                var += pow(in(d, L->in[0], r, j) - mu, 2) / (double)F;
            for (int64_t j = 0; j < F; j++)
                *at(d, L->out, r, j) = (in(d, L->in[0], r, j) - mu) / sqrt(var + eps) * g[j] + b[j];
        }
        return;
    }
    for (int64_t j = 0; j < F; j++) { /* batch norm: over the rows */
        double mu = 0, var = 0;
        for (int64_t r = 0; r < R; r++)
            mu += in(d, L->in[0], r, j) / (double)R;
        for (int64_t r = 0; r < R; r++)
            var += pow(in(d, L->in[0], r, j) - mu, 2) / (double)R;
        for (int64_t r = 0; r < R; r++)
            *at(d, L->out, r, j) = (in(d, L->in[0], r, j) - mu) / sqrt(var + eps) * g[j] + b[j];
    }
}

static void attention(dnet *d, const mlayer *L)
{
    const int64_t T = d->m->tokens, D = L->out.cols, H = L->heads, dh = D / H;
    double *s = calloc((size_t)T, sizeof *s);
    for (int64_t b = 0; b < d->n; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t t = 0; t < T; t++) {
                double mx = -INFINITY, sum = 0;
                for (int64_t u = 0; u < T; u++) {
                    double dot = 0;
                    for (int64_t e = 0; e < dh; e++)
                        dot += in(d, L->in[0], b * T + t, h * dh + e) *
                               in(d, L->in[0], b * T + u, D + h * dh + e);
                    s[u] = dot / sqrt((double)dh);
                    mx = s[u] > mx ? s[u] : mx;
                }
                for (int64_t u = 0; u < T; u++)
                    sum += (s[u] = exp(s[u] - mx));
                for (int64_t e = 0; e < dh; e++) {
                    double o = 0;
                    for (int64_t u = 0; u < T; u++)
                        o += s[u] / sum *
                             keep(d, L->rate, L->stream, (uint64_t)(((b * H + h) * T + t) * T + u)) *
                             in(d, L->in[0], b * T + u, 2 * D + h * dh + e);
                    *at(d, L->out, b * T + t, h * dh + e) = o;
                }
            }
    free(s);
}

static void tokens(dnet *d, const mlayer *L, const double *P)
{
    const rt_model_spec *sp = &d->m->spec;
    const int64_t D = sp->d_token, nn = sp->n_cont, nc = sp->n_cat, T = d->m->tokens;
    const int kcat = nn > 0 && !L->embedded ? 2 : 0, kcls = kcat + (nc > 0 ? (int)nc + 1 : 0);
    for (int64_t b = 0; b < d->n; b++) {
        for (int64_t i = 0; i < nn; i++) /* x w + b, or the column's embedding */
            for (int64_t j = 0; j < D; j++)
                *at(d, L->out, b * T + i, j) =
                    L->embedded ? in(d, L->in[0], b, i * D + j)
                                : in(d, L->in[0], b, i) * prm(d, P, L, 0)[i * D + j] +
                                      prm(d, P, L, 1)[i * D + j];
        for (int64_t c = 0; c < nc; c++)
            for (int64_t j = 0; j < D; j++)
                *at(d, L->out, b * T + nn + c, j) =
                    prm(d, P, L, kcat + (int)c)[d->cat[b * nc + c] * D + j] +
                    prm(d, P, L, kcat + (int)nc)[c * D + j];
        for (int64_t j = 0; j < D; j++)
            *at(d, L->out, b * T + T - 1, j) = prm(d, P, L, kcls)[j];
    }
}

static void layer(dnet *d, const mlayer *L, const double *P)
{
    const rt_model_spec *sp = &d->m->spec;
    const int64_t R = slot_rows(d, L->out), C = L->out.cols;
    switch (L->kind) {
    case L_EMBED:
        for (int64_t b = 0; b < d->n; b++)
            for (int c = 0; c < sp->n_cat; c++) {
                const rt_embed_col *ec = &d->m->emb_host[c];
                for (int j = 0; j < ec->dim; j++)
                    *at(d, L->out, b, ec->ooff + j) =
                        prm(d, P, L, c)[d->cat[b * sp->n_cat + c] * ec->dim + j];
            }
        break;
    case L_BATCHNORM:
        normalise_rows(d, L, prm(d, P, L, 0), prm(d, P, L, 1), false);
        break;
    case L_LAYERNORM:
        normalise_rows(d, L, prm(d, P, L, 0), prm(d, P, L, 1), true);
        break;
    case L_STANDARDIZE:
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < C; j++) {
                double sd = d->buf[L->boff + C + j];
                *at(d, L->out, r, j) = (in(d, L->in[0], r, j) - d->buf[L->boff + j]) / (sd > 0 ? sd : 1);
            }
        break;
    case L_COPY:
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < C; j++)
                *at(d, L->out, r, j) = in(d, L->in[0], r, j);
        break;
    case L_LINEAR: {
        const double *w = prm(d, P, L, 0), *bias = L->np > 1 ? prm(d, P, L, 1) : NULL;
        const int64_t K = L->in[0].cols;
        for (int64_t r = 0; r < R; r++)
            for (int64_t o = 0; o < C; o++) {
                double z = bias ? bias[o] : 0.0;
                for (int64_t k = 0; k < K; k++)
                    z += in(d, L->in[0], r, k) * w[o * K + k];
                *at(d, L->out, r, o) = act(L->act, z);
            }
        break;
    }
    case L_ACT: {
        /* T tokens into one row per sample (the numeric embeddings): row r
         * of the output reads the sample's T rows one after the other */
        const int64_t T = d->m->tensors[L->in[0].t].tpr;
        const bool join = L->in[0].tok < 0 && T != d->m->tensors[L->out.t].tpr;
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < C; j++)
                *at(d, L->out, r, j) =
                    act(L->act, join ? tens(d, L->in[0].t)[r * T * L->in[0].cols + j]
                                     : in(d, L->in[0], r, j));
        break;
    }
    case L_DROPOUT:
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < C; j++)
                *at(d, L->out, r, j) *= keep(d, L->rate, L->stream, (uint64_t)(r * C + j));
        break;
    case L_ADD:
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < C; j++)
                *at(d, L->out, r, j) = in(d, L->in[0], r, j) + in(d, L->in[1], r, j);
        break;
    case L_CROSS:
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < C; j++)
                *at(d, L->out, r, j) = in(d, L->in[0], r, j) * in(d, L->in[1], r, j) *
                                           keep(d, L->rate, L->stream, (uint64_t)(r * C + j)) +
                                       in(d, L->in[2], r, j);
        break;
    case L_TOKENS:
        tokens(d, L, P);
        break;
    case L_ATTENTION:
        attention(d, L);
        break;
    case L_REGLU:
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < C; j++) {
                double b = in(d, L->in[0], r, C + j);
                *at(d, L->out, r, j) = in(d, L->in[0], r, j) * (b > 0 ? b : 0);
            }
        break;
    case L_HEAD:
        for (int64_t r = 0; r < R; r++)
            *at(d, L->out, r, 0) = sp->head_scale / (1 + exp(-in(d, L->in[0], r, 0)));
        break;
    case L_ENS_REPEAT: /* member row r of sample r / k */
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < C; j++)
                *at(d, L->out, r, j) = in(d, L->in[0], r / d->m->ens_k, j);
        break;
    case L_ENS_SCALE: /* then its ReLU and dropout (tabm's blocks) */
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < C; j++) {
                const int64_t e = (r % d->m->ens_k) * C + j;
                const double v = in(d, L->in[0], r, j) * prm(d, P, L, 0)[e] +
                                 (L->np > 1 ? prm(d, P, L, 1)[e] : 0.0);
                *at(d, L->out, r, j) = L->rate > 0.0f ? act(L->act, v) * keep(d, L->rate, L->stream,
                                                                              (uint64_t)(r * C + j))
                                                      : act(L->act, v);
            }
        break;
    case L_TOKEN_LINEAR: { /* token t's kernel (C, K) and bias (C) */
        const int64_t K = L->in[0].cols, T = d->m->tensors[L->in[0].t].tpr;
        for (int64_t r = 0; r < R; r++)
            for (int64_t o = 0; o < C; o++) {
                const int64_t t = r % T;
                double z = prm(d, P, L, 1)[t * C + o];
                for (int64_t c = 0; c < K; c++)
                    z += in(d, L->in[0], r, c) * prm(d, P, L, 0)[(t * C + o) * K + c];
                *at(d, L->out, r, o) = z;
            }
        break;
    }
    case L_ENS_MEAN: /* regression: the members' mean */
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < C; j++) {
                double m = 0;
                for (int64_t t = 0; t < d->m->ens_k; t++)
                    m += in(d, L->in[0], r * d->m->ens_k + t, j) / (double)d->m->ens_k;
                *at(d, L->out, r, j) = m;
            }
        break;
    case L_NUM_LINEAR: /* column i: x w_i + b_i, d_embedding wide */
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < C; j++) {
                const int64_t i = j / sp->d_embedding;
                *at(d, L->out, r, j) =
                    in(d, L->in[0], r, i) * prm(d, P, L, 0)[j] + prm(d, P, L, 1)[j];
            }
        break;
    case L_PLE: { /* sample b's column i: token b*n + i, its T bins (edges: the buffers) */
        const int64_t n = sp->n_cont, T = sp->bins;
        for (int64_t b = 0; b < d->n; b++)
            for (int64_t i = 0; i < n; i++)
                for (int64_t t = 0; t < T; t++) {
                    const double *e = NULL;
                    double ed[2] = {d->buf[L->boff + i * (T + 1) + t],
                                    d->buf[L->boff + i * (T + 1) + t + 1]};
                    e = ed;
                    const double x = in(d, L->in[0], b, i), w = e[1] - e[0];
                    double v = w > 0 ? (x - e[0]) / w : x >= e[0] ? 1.0 : 0.0;
                    if (w > 0 && t > 0 && v < 0)
                        v = 0;
                    if (w > 0 && t < T - 1 && v > 1)
                        v = 1;
                    *at(d, L->out, b * n + i, t) = v;
                }
        break;
    }
    case L_PERIODIC: { /* sample b's column i: token b*n + i, cos then sin of 2 pi f x */
        const int64_t n = sp->n_cont, k = sp->frequencies;
        for (int64_t b = 0; b < d->n; b++)
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < k; j++) {
                    const double th = 2 * M_PI * prm(d, P, L, 0)[i * k + j] * in(d, L->in[0], b, i);
                    *at(d, L->out, b * n + i, j) = cos(th);
                    *at(d, L->out, b * n + i, k + j) = sin(th);
                }
        break;
    }
    default:
        fail_msg("layer kind %d has no reference", (int)L->kind);
    }
}

/* mean |pred - label| of the network with parameters P (tabm: over its
 * members' predictions, each against its sample's label) */
static double ref_loss(dnet *d, const double *P)
{
    for (int t = 0; t < d->m->ntensors; t++)
        if (d->t[t])
            memset(d->t[t], 0, (size_t)(d->n * d->m->tensors[t].tpr * d->m->tensors[t].cols) * 8);
    for (int i = 0; i < d->m->nlayers; i++)
        layer(d, &d->m->layers[i], P);
    const double *pred = tens(d, d->m->t_loss);
    const int64_t k = d->m->tensors[d->m->t_loss].tpr, N = d->n * k;
    double loss = 0;
    for (int64_t i = 0; i < N; i++)
        loss += fabs(pred[i] - d->label[i / k]) / (double)N;
    return loss;
}

/* ---- the check ---------------------------------------------------------------------- */

typedef struct hooks {
    int64_t end;
    int n;
} hooks;

static void on_hook(void *user, int64_t off, int64_t count)
{
    hooks *h = user;
    assert_int_equal(off + count, h->end); /* from the end of the arena to its start */
    h->end = off;
    h->n++;
}

/* Dropouts right after a ReLU only scale in backward (mb_dropout: the
 * ReLU's derivative from its output masks what they dropped): the same
 * gradients, bit for bit, as drawing their masks again.  Counts such
 * dropouts (the families' tests ask that some ran). */
static int masked_seen;
/* tabm's ReLUs and dropouts run inside its scaling layers (L_ENS_SCALE,
 * rt_k_scale_act_*): how many such layers with a dropout the tests ran */
static int fused_seen;
static int heads_fused; /* scaled-sigmoid heads whose backward the loss ran */

static void same_without_masked(rt_model *m, int64_t n, const char *what)
{
    bool was[MODEL_MAX_LAYERS] = {false};
    int masked = 0;
    for (int l = 0; l < m->nlayers; l++) {
        was[l] = m->layers[l].masked;
        masked += was[l];
        RT_ASSERT(!was[l] || m->layers[l].kind == L_DROPOUT);
    }
    if (!masked)
        return;
    masked_seen += masked;
    const int64_t A = rt_model_arena_len(m);
    float *g1 = malloc((size_t)A * sizeof(float));
    memcpy(g1, m->grads, (size_t)A * sizeof(float));
    for (int l = 0; l < m->nlayers; l++)
        m->layers[l].masked = false;
    rt_model_forward(m, n, true);
    rt_model_loss(m, n, true);
    hooks hk = {A, 0};
    rt_model_backward(m, n, on_hook, &hk);
    if (memcmp(g1, m->grads, (size_t)A * sizeof(float)) != 0)
        fail_msg("%s: %d dropouts after a ReLU scaling only: other gradients than their masks "
                 "drawn again",
                 what, masked);
    for (int l = 0; l < m->nlayers; l++)
        m->layers[l].masked = was[l];
    free(g1);
}

static char CAT_NAMES[3][RT_MODEL_NAME_LEN] = {"c0", "c1", "c2"};

/* Random small columns for a spec of `arch`. */
static void columns(tu_rng *g, rt_model_spec *s, bool cats, bool conts)
{
    s->n_cat = cats ? (int)tu_int(g, 1, 3) : 0;
    for (int c = 0; c < s->n_cat; c++) {
        s->vocab[c] = (int32_t)tu_int(g, 2, 6);
        s->emb_dim[c] = (int32_t)tu_int(g, 1, 4);
    }
    s->cat_names = CAT_NAMES;
    s->n_cont = conts ? (int)tu_int(g, 1, 3) : 0;
    s->head_scale = 10.0f;
    s->seed = (uint64_t)tu_int(g, 1, 1 << 30);
}

/* The model's gradient against the reference's finite differences. */
static void check_family(const char *what, const rt_model_spec *s, tu_rng *g)
{
    const int64_t n = tu_int(g, 3, 7);
    rt_model *m;
    char err[RT_ERR_LEN];
    if (rt_model_create(s, ctx, n, &m, err) != RT_OK)
        fail_msg("%s: %s", what, err);
    for (int l = 0; l < m->nlayers; l++) {
        fused_seen += m->layers[l].kind == L_ENS_SCALE && m->layers[l].rate > 0.0f;
        heads_fused += m->layers[l].kind == L_HEAD && m->layers[l].fused;
    }
    int32_t *cat = calloc((size_t)(n * s->n_cat) + 1, 4);
    float *cont = calloc((size_t)(n * s->n_cont) + 1, 4), *label = calloc((size_t)n, 4);
    for (int64_t i = 0; i < n; i++) {
        for (int c = 0; c < s->n_cat; c++)
            cat[i * s->n_cat + c] = (int32_t)tu_int(g, 0, s->vocab[c] - 1);
        for (int f = 0; f < s->n_cont; f++)
            cont[i * s->n_cont + f] = (float)tu_range(g, -2, 2) * (float)(f + 1);
        label[i] = (float)tu_range(g, 1, 9);
    }
    if (s->cont_norm == RT_CONT_STANDARDIZE && s->n_cont > 0 &&
        s->numeric_embedding != RT_NUM_EMB_PLE) {
        float mean[8], sd[8];
        for (int f = 0; f < s->n_cont; f++) {
            mean[f] = (float)tu_range(g, -1, 1);
            sd[f] = f == 0 ? 0.0f : (float)tu_range(g, 0.5, 3); /* a constant column: std 0 */
        }
        assert_int_equal(rt_model_set_standardize(m, mean, sd, err), RT_OK);
    }
    if (s->numeric_embedding == RT_NUM_EMB_PLE &&
        s->n_cont > 0) { /* edges across the inputs, one tie */
        const int E = s->bins + 1;
        float edges[8 * 64];
        for (int f = 0; f < s->n_cont; f++) {
            edges[f * E] = (float)tu_range(g, -3, -1);
            for (int t = 1; t < E; t++)
                edges[f * E + t] =
                    edges[f * E + t - 1] + (t == 2 ? 0.0f : (float)tu_range(g, 0.3, 1.5));
        }
        assert_int_equal(rt_model_set_ple_edges(m, edges, err), RT_OK);
    }
    /* parameters off the kinks: every tensor random, O(1) */
    const int64_t P = rt_model_num_params(m);
    float *pf = calloc((size_t)P, 4);
    tu_fill(g, pf, (size_t)P, -0.6, 0.6);
    assert_int_equal(rt_model_set_state(m, pf, NULL, NULL, NULL, NULL, err), RT_OK);
    rt_model_set_batch(m, cat, cont, label, n);
    const rt_adam_hp hp = {0}; /* loss_norm 0: a loss other than Rossmann's divides by the rows */
    rt_model_set_hparams(m, &hp);
    rt_model_forward(m, n, true);
    rt_model_loss(m, n, true);
    hooks hk = {rt_model_arena_len(m), 0};
    rt_model_backward(m, n, on_hook, &hk);
    assert_int_equal(hk.end, 0);
    double met[RT_MODEL_NMETRICS];
    assert_int_equal(rt_model_metrics_read(m, met, err), RT_OK);
    same_without_masked(m, n, what);

    float *buf = calloc((size_t)rt_model_num_buffers(m) + 1, 4);
    rt_model_get_state(m, NULL, NULL, NULL, buf, NULL, err);
    dnet d = {m, n, cat, cont, label, buf, calloc((size_t)m->ntensors, sizeof(double *))};
    double *Pd = calloc((size_t)P, sizeof(double)), *fd = calloc((size_t)P, sizeof(double));
    double *an = calloc((size_t)P, sizeof(double));
    for (int64_t i = 0; i < P; i++)
        Pd[i] = pf[i];
    double ref = ref_loss(&d, Pd);
    if (!(fabs(met[0] / met[1] - ref) <= 1e-5 * (1 + ref)))
        fail_msg("%s: model loss %.9g, reference %.9g", what, met[0] / met[1], ref);
    int ninfo;
    const rt_param_info *info = rt_model_param_table(m, &ninfo);
    for (int t = 0; t < ninfo; t++)
        for (int64_t e = 0; info[t].trainable && e < info[t].count; e++)
            an[info[t].pos + e] = m->grads[info[t].off + e];
    /* Central differences; where the one-sided ones disagree, a kink (a
     * ReLU's, a clamp's) lies within h of the parameter and the central
     * difference straddles it: again with a step 100 times smaller (one
     * seed in a few hundred put a ReLU's input within 1e-6 of 0). */
    for (int64_t i = 0; i < P; i++) {
        const double sv = Pd[i];
        double h = 1e-6;
        for (int tries = 0; tries < 3; tries++, h /= 100) { /* 1e-6, 1e-8, 1e-10 */
            Pd[i] = sv + h;
            const double lp = ref_loss(&d, Pd);
            Pd[i] = sv - h;
            const double lm = ref_loss(&d, Pd);
            Pd[i] = sv;
            fd[i] = (lp - lm) / (2 * h);
            if (fabs((lp - ref) - (ref - lm)) / h <= 1e-3 * (1 + fabs(fd[i])))
                break;
        }
    }
    char name[96];
    snprintf(name, sizeof name, "%s gradient", what);
    /* float backward of an O(1) loss against double differences: tight
     * enough that a 0.1% error in one tensor (a layer norm's dgamma) fails */
    if (!tu_close_d(name, an, fd, (size_t)P, 2e-5, 5e-4)) {
        for (int t = 0; t < ninfo; t++)
            if (info[t].trainable)
                fprintf(stderr, "  %s: packed %lld..%lld\n", info[t].name, (long long)info[t].pos,
                        (long long)(info[t].pos + info[t].count));
        fail_msg("%s: gradient", what);
    }
    printf("%s: %lld parameters, %d layers, loss %.6f\n", what, (long long)P, m->nlayers, ref);
    for (int t = 0; t < m->ntensors; t++)
        free(d.t[t]);
    free(d.t);
    free(Pd); free(fd); free(an); free(pf); free(buf); free(cat); free(cont); free(label);
    rt_model_destroy(m);
}

static void test_rossmann(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(41);
    for (int rep = 0; rep < 2; rep++) {
        rt_model_spec s;
        rt_model_spec_defaults(&s);
        columns(&g, &s, true, rep == 0);
        s.n_hidden = 2;
        s.hidden[0] = (int)tu_int(&g, 3, 8);
        s.hidden[1] = (int)tu_int(&g, 3, 8);
        s.dropout[3] = 0;
        s.dropout[1] = 0.3f;
        check_family("rossmann", &s, &g);
    }
    assert_true(masked_seen > 0); /* its dropout follows the last hidden ReLU */
    /* its head's backward ran in the loss */
    assert_int_equal(heads_fused, 2);
}

static void test_mlp(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(42);
    for (int a = RT_ACT_RELU; a <= RT_ACT_TANH; a++) {
        rt_model_spec s;
        rt_model_spec_defaults(&s);
        s.arch = RT_ARCH_MLP;
        columns(&g, &s, a != RT_ACT_GELU, a != RT_ACT_SILU);
        s.activation = (rt_act)a;
        s.cont_norm = (rt_cont_norm)(a % 3);
        s.embedding_dropout = a == RT_ACT_RELU ? 0.3f : 0.0f;
        s.numeric_embedding =
            (rt_num_emb)(a % RT_NUM_EMB_COUNT); /* linear, periodic, piecewise, none */
        s.bins = (int)tu_int(&g, 1, 4);
        s.d_embedding = (int)tu_int(&g, 1, 4);
        s.frequencies = (int)tu_int(&g, 1, 3);
        s.frequency_scale = 0.3f;
        s.n_hidden = (int)tu_int(&g, 1, 3);
        for (int l = 0; l < s.n_hidden; l++) {
            s.hidden[l] = (int)tu_int(&g, 3, 7);
            s.dropout[l] = l % 2 ? 0.25f : 0.0f;
            s.batch_norm[l] = (l + a) % 2 == 0;
        }
        check_family(rt_act_names[a], &s, &g);
    }
    /* the periodic embeddings behind a batch norm (their gradient by x flows
     * on); PLE reads the raw values whatever continuous_norm says */
    for (int e = RT_NUM_EMB_PERIODIC; e <= RT_NUM_EMB_PLE; e++) {
        rt_model_spec s;
        rt_model_spec_defaults(&s);
        s.arch = RT_ARCH_MLP;
        columns(&g, &s, true, true);
        s.cont_norm = RT_CONT_BATCHNORM;
        s.numeric_embedding = (rt_num_emb)e;
        s.bins = 4;
        s.d_embedding = 3;
        s.frequencies = 2;
        s.frequency_scale = 0.3f;
        s.n_hidden = 1;
        s.hidden[0] = 5;
        s.dropout[0] = 0;
        check_family(rt_num_emb_names[e], &s, &g);
    }
}

static void test_resnet(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(43);
    rt_model_spec s;
    rt_model_spec_defaults(&s);
    s.arch = RT_ARCH_RESNET;
    columns(&g, &s, true, true);
    s.blocks = 2;
    s.width = (int)tu_int(&g, 3, 6);
    s.hidden_multiplier = 1.5f;
    s.dropout1 = 0.2f;
    s.dropout2 = 0.1f;
    check_family("resnet", &s, &g);
}

static void test_dcn2(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(44);
    const int shapes[][3] = {{2, 1, 1}, {2, 2, 0}, {0, 1, 0}, {1, 0, 0}, {3, 2, 1}};
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        rt_model_spec s;
        rt_model_spec_defaults(&s);
        s.arch = RT_ARCH_DCN2;
        columns(&g, &s, true, k != 2);
        s.cross_layers = shapes[k][0];
        s.deep_layers = shapes[k][1];
        s.stacked = shapes[k][2];
        s.width = (int)tu_int(&g, 3, 6);
        s.cross_dropout = k % 2 ? 0.2f : 0.0f;
        for (int l = 0; l < s.deep_layers; l++)
            s.dropout[l] = 0.15f;
        char what[48];
        snprintf(what, sizeof what, "dcn2 %d cross, %d deep, %s", s.cross_layers, s.deep_layers,
                 s.stacked ? "stacked" : "side by side");
        check_family(what, &s, &g);
    }
}

static void test_ft_transformer(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(45);
    for (int rep = 0; rep < 5; rep++) {
        rt_model_spec s;
        rt_model_spec_defaults(&s);
        s.arch = RT_ARCH_FT_TRANSFORMER;
        columns(&g, &s, rep != 1 && rep != 4, rep != 2);
        s.blocks = rep == 0 ? 2 : 1;
        s.heads = rep == 1 ? 1 : 2;
        s.d_token = 2 * (int)tu_int(&g, 2, 3);
        s.ffn_multiplier = 1.5f;
        s.attention_dropout = rep == 0 ? 0.3f : 0.0f;
        s.ffn_dropout = 0.1f;
        s.residual_dropout = rep == 2 ? 0.2f : 0.0f;
        s.cont_norm = rep == 0 || rep == 3 ? RT_CONT_BATCHNORM : RT_CONT_NONE;
        /* the continuous columns' tokens from their embeddings (periodic
         * behind a batch norm, PLE of the raw values) */
        s.numeric_embedding = rep == 3   ? RT_NUM_EMB_PERIODIC
                              : rep == 4 ? RT_NUM_EMB_PLE
                                         : RT_NUM_EMB_NONE;
        s.bins = 3;
        s.frequencies = 2;
        s.frequency_scale = 0.3f;
        check_family(rep >= 3 ? rt_num_emb_names[s.numeric_embedding] : "ft_transformer", &s, &g);
    }
}

static void test_tabm(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(46);
    const int before = fused_seen;
    for (int rep = 0; rep < 4; rep++) {
        rt_model_spec s;
        rt_model_spec_defaults(&s);
        s.arch = RT_ARCH_TABM;
        columns(&g, &s, rep != 1, rep != 2);
        s.cont_norm = rep == 3 ? RT_CONT_BATCHNORM : RT_CONT_STANDARDIZE;
        s.variant = rep == 1 ? RT_TABM_MINI : RT_TABM_FULL;
        s.tabm_init = rep != 2;
        s.ensemble_size = (int)tu_int(&g, 2, 4);
        s.blocks = rep == 0 ? 2 : 1;
        s.width = (int)tu_int(&g, 3, 6);
        s.dropout[0] = rep == 0 ? 0.2f : 0.0f;
        s.head = rep == 3 ? RT_HEAD_LINEAR : RT_HEAD_SCALED_SIGMOID;
        s.numeric_embedding = rep == 0   ? RT_NUM_EMB_PERIODIC
                              : rep == 3 ? RT_NUM_EMB_LINEAR
                              : rep == 2 ? RT_NUM_EMB_NONE
                                         : RT_NUM_EMB_PLE;
        s.bins = 3;
        s.d_embedding = 3;
        s.frequencies = 2;
        char what[48];
        snprintf(what, sizeof what, "tabm %s k=%d", rt_tabm_variant_names[s.variant],
                 s.ensemble_size);
        check_family(what, &s, &g);
    }
    assert_true(fused_seen > before); /* rep 0's dropouts, in its blocks' scaling layers */
}

static int setup(void **state)
{
    (void)state;
    return rt_kctx_create(RT_DEVICE_CPU, 2, &ctx, NULL) == RT_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    rt_kctx_destroy(ctx);
    return 0;
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rossmann),       cmocka_unit_test(test_mlp),
        cmocka_unit_test(test_resnet),         cmocka_unit_test(test_dcn2),
        cmocka_unit_test(test_ft_transformer), cmocka_unit_test(test_tabm),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
