/* family_ft_transformer.c — rtdl's FT-Transformer (Gorishniy et al.
 * 2021): feature tokens (a weight and bias per continuous column, or its
 * periodic or piecewise-linear embedding of d_token values; an embedding
 * per categorical one) and [CLS] -> pre-LN transformer blocks
 * (multi-head attention, ReGLU feed-forward; no norm before the first
 * block's attention) -> [CLS] -> LayerNorm -> ReLU -> Linear. */
#include <stdio.h>
#include <stdlib.h>

#include "model_build.h"

static void plan_ft_transformer(mplan *p)
{
    rt_model *m = p->m;
    const rt_model_spec *s = &m->spec;
    const int64_t d = s->d_token, T = (int64_t)s->n_cont + s->n_cat + 1;
    const int64_t hid = (int64_t)((double)d * s->ffn_multiplier);
    m->tokens = T;
    /* numeric_embedding = linear is the tokenizer's own x w + b */
    const bool embedded =
        s->numeric_embedding == RT_NUM_EMB_PERIODIC || s->numeric_embedding == RT_NUM_EMB_PLE;
    mslot xc = s->n_cont == 0 ? MB_NO_SLOT
               : embedded     ? mb_num_embedding(p, d)
                              : mb_cont_block(p, MB_NO_SLOT);
    mslot x = mb_whole(p, mb_tensor(p, T, d));
    mlayer *L = mb_layer(p, L_TOKENS, "tokenizer", x);
    if (s->n_cont > 0) {
        mb_input(L, xc);
        L->embedded = embedded;
    }
    if (s->n_cont > 0 && !embedded) {
        mb_param(p, L, "/num_weight", s->n_cont, d, INIT_TOKEN, 0, 0.0f);
        mb_param(p, L, "/num_bias", s->n_cont, d, INIT_TOKEN, 0, 0.0f);
    }
    if (s->n_cat > 0) {
        int64_t *ooff = calloc((size_t)s->n_cat, sizeof *ooff);
        if (!ooff) {
            mb_fail(p, "out of memory");
            return;
        }
        for (int c = 0; c < s->n_cat; c++)
            ooff[c] = ((int64_t)s->n_cont + c) * d;
        mb_embedding_tables(p, L, ooff, false);
        free(ooff);
        mb_param(p, L, "/cat_bias", s->n_cat, d, INIT_TOKEN, 0, 0.0f);
    }
    mb_param(p, L, "/cls", 1, d, INIT_TOKEN, 0, 0.0f);
    char name[48];
    for (int b = 1; b <= s->blocks; b++) {
        mslot h = x;
        if (b > 1) { /* rtdl: no normalisation before the first block's attention */
            snprintf(name, sizeof name, "block_%d/attention_norm", b);
            h = mb_layernorm(p, name, x);
        }
        snprintf(name, sizeof name, "block_%d/attention/qkv", b);
        mslot qkv = mb_linear(p, name, h, 3 * d, RT_ACT_NONE, false, s->l2, MB_NO_SLOT);
        /* rtdl's W_q, W_k, W_v: zero biases */
        m->init[m->ninfo - 1] = INIT_ZERO;
        snprintf(name, sizeof name, "block_%d/attention", b);
        mslot a = mb_whole(p, mb_tensor(p, T, d));
        L = mb_layer(p, L_ATTENTION, name, a);
        mb_input(L, qkv);
        L->heads = s->heads;
        L->rate = s->attention_dropout;
        L->stream = mb_next_stream(p);
        L->save_per_sample = s->heads * T * T;
        if (s->heads > 1) {
            snprintf(name, sizeof name, "block_%d/attention/out", b);
            a = mb_linear(p, name, a, d, RT_ACT_NONE, false, s->l2, MB_NO_SLOT);
            m->init[m->ninfo - 1] = INIT_ZERO; /* rtdl: W_out's bias is zero */
        }
        snprintf(name, sizeof name, "block_%d/attention_residual_dropout", b);
        mb_dropout(p, name, a, s->residual_dropout);
        snprintf(name, sizeof name, "block_%d/attention_add", b);
        x = mb_add(p, name, x, a);
        snprintf(name, sizeof name, "block_%d/ffn_norm", b);
        h = mb_layernorm(p, name, x);
        snprintf(name, sizeof name, "block_%d/ffn/linear_first", b);
        h = mb_linear(p, name, h, 2 * hid, RT_ACT_NONE, false, s->l2, MB_NO_SLOT);
        snprintf(name, sizeof name, "block_%d/ffn/reglu", b);
        mslot g = mb_whole(p, mb_tensor(p, T, hid));
        L = mb_layer(p, L_REGLU, name, g);
        mb_input(L, h);
        snprintf(name, sizeof name, "block_%d/ffn/dropout", b);
        mb_dropout(p, name, g, s->ffn_dropout);
        snprintf(name, sizeof name, "block_%d/ffn/linear_second", b);
        h = mb_linear(p, name, g, d, RT_ACT_NONE, false, s->l2, MB_NO_SLOT);
        snprintf(name, sizeof name, "block_%d/ffn_residual_dropout", b);
        mb_dropout(p, name, h, s->residual_dropout);
        snprintf(name, sizeof name, "block_%d/ffn_add", b);
        x = mb_add(p, name, x, h);
    }
    /* rtdl's head: the [CLS] token (the last), LayerNorm, ReLU, Linear */
    mslot cls = {x.t, 0, d, (int)(T - 1)};
    mslot h = mb_act_layer(p, "head/relu", mb_layernorm(p, "head/norm", cls), RT_ACT_RELU);
    mb_head(p, mb_linear(p, "output", h, p->m->spec.n_out, RT_ACT_NONE, false, 0.0f, MB_NO_SLOT));
}

static rt_status check_ft_transformer(const rt_model_spec *s, char *err)
{
    /* the keys' own bounds: rt_model_spec_check (rt_model_keys.h) */
    if (s->d_token % s->heads != 0)
        return rt_err(err, RT_ERR_INVALID,
                      "ft_transformer: d_token %d in %d heads (a divisor of "
                      "d_token)",
                      s->d_token, s->heads);
    const double hid = (double)s->d_token * s->ffn_multiplier;
    if (!(hid >= 1.0) || hid > 65536)
        return rt_err(err, RT_ERR_INVALID,
                      "ft_transformer: d_token %d x ffn_multiplier %g "
                      "is not a layer width (1 to 65536)",
                      s->d_token, s->ffn_multiplier);
    if ((int64_t)s->n_cat + s->n_cont + 1 > 4096)
        return rt_err(err, RT_ERR_INVALID,
                      "ft_transformer: %d features make %d tokens "
                      "(at most 4096)",
                      s->n_cat + s->n_cont, s->n_cat + s->n_cont + 1);
    return RT_OK;
}

static bool same_ft_transformer(const rt_model_spec *a, const rt_model_spec *b, char *why,
                                size_t len)
{
    MB_DIFF(a->blocks != b->blocks || a->d_token != b->d_token || a->heads != b->heads ||
                (int64_t)(a->d_token * a->ffn_multiplier) !=
                    (int64_t)(b->d_token * b->ffn_multiplier),
            "%d blocks, d_token %d, %d heads, feed-forward %lld; the job's %d, %d, %d, %lld",
            a->blocks, a->d_token, a->heads, (long long)(a->d_token * a->ffn_multiplier), b->blocks,
            b->d_token, b->heads, (long long)(b->d_token * b->ffn_multiplier));
    return true;
}

const model_family model_family_ft_transformer = {
    .arch = RT_ARCH_FT_TRANSFORMER,
    .plan = plan_ft_transformer,
    .check = check_ft_transformer,
    .same_net = same_ft_transformer,
};
