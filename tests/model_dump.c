/* model_dump — one training forward and backward of a small model of a
 * family, as JSON on stdout, for tests/model_parity.py to compare with the
 * same network in PyTorch (bench/torch_models.py):
 *
 *   model_dump CONFIG SEED   ->  {"spec", "n", "cat", "cont", "label", "mean",
 *                                 "std", "params", "pred", "loss", "grads"}
 *
 * CONFIG picks a family and its options (0 .. model_dump_configs - 1, see
 * CONFIGS); SEED draws the columns, widths, weights and rows.  Dropout
 * rates are 0 (PyTorch draws other masks; dropout's own gradient is
 * test_model_graph's), batch norm runs on the batch's statistics. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_json.h"
#include "rt_model.h"

static char CAT_NAMES[4][RT_MODEL_NAME_LEN] = {"col0", "col1", "col2", "col3"};
static uint64_t rng_state;
static double uni(void)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}
static int irange(int lo, int hi) { return lo + (int)(uni() * (hi - lo + 1)); }

typedef struct config {
    rt_arch arch;
    const char *act, *norm;
    bool cats, conts, bn, stacked;
    int heads;
    int tabm; /* 1 tabm, 2 mini, 3 tabm with BatchEnsemble's init */
    rt_num_emb numeric_embedding;
} config;

static const config CONFIGS[] = {
    {RT_ARCH_ROSSMANN, "relu", "batchnorm", true, true, false, false, 0, 0, RT_NUM_EMB_NONE},
    {RT_ARCH_MLP, "relu", "standardize", true, true, true, false, 0, 0, RT_NUM_EMB_NONE},
    {RT_ARCH_MLP, "gelu", "none", true, true, true, false, 0, 0, RT_NUM_EMB_NONE},
    {RT_ARCH_MLP, "silu", "batchnorm", false, true, false, false, 0, 0, RT_NUM_EMB_NONE},
    {RT_ARCH_MLP, "tanh", "batchnorm", true, false, true, false, 0, 0, RT_NUM_EMB_NONE},
    {RT_ARCH_RESNET, "relu", "batchnorm", true, true, false, false, 0, 0, RT_NUM_EMB_NONE},
    {RT_ARCH_DCN2, "relu", "batchnorm", true, true, false, true, 0, 0, RT_NUM_EMB_NONE},
    {RT_ARCH_DCN2, "relu", "standardize", true, true, false, false, 0, 0, RT_NUM_EMB_NONE},
    {RT_ARCH_FT_TRANSFORMER, "relu", "batchnorm", true, true, false, false, 2, 0, RT_NUM_EMB_NONE},
    {RT_ARCH_FT_TRANSFORMER, "relu", "none", true, false, false, false, 1, 0, RT_NUM_EMB_NONE},
    {RT_ARCH_FT_TRANSFORMER, "relu", "standardize", false, true, false, false, 4, 0,
     RT_NUM_EMB_NONE},
    {RT_ARCH_TABM, "relu", "standardize", true, true, false, false, 0, 1, RT_NUM_EMB_NONE},
    {RT_ARCH_TABM, "relu", "batchnorm", true, false, false, false, 0, 2, RT_NUM_EMB_NONE},
    {RT_ARCH_TABM, "relu", "none", false, true, false, false, 0, 3, RT_NUM_EMB_NONE},
    {RT_ARCH_MLP, "relu", "standardize", true, true, false, false, 0, 0, RT_NUM_EMB_PERIODIC},
    {RT_ARCH_RESNET, "relu", "batchnorm", false, true, false, false, 0, 0, RT_NUM_EMB_LINEAR},
    {RT_ARCH_TABM, "relu", "standardize", true, true, false, false, 0, 1, RT_NUM_EMB_PERIODIC},
    {RT_ARCH_DCN2, "relu", "none", true, true, false, true, 0, 0, RT_NUM_EMB_PERIODIC},
    {RT_ARCH_MLP, "relu", "batchnorm", true, true, false, false, 0, 0, RT_NUM_EMB_PLE},
    {RT_ARCH_TABM, "relu", "standardize", false, true, false, false, 0, 2, RT_NUM_EMB_PLE},
    {RT_ARCH_FT_TRANSFORMER, "relu", "standardize", true, true, false, false, 2, 0,
     RT_NUM_EMB_PERIODIC},
    {RT_ARCH_FT_TRANSFORMER, "relu", "batchnorm", false, true, false, false, 1, 0, RT_NUM_EMB_PLE},
};

static int name_of(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s))
            return i;
    return 0;
}

static void spec_of(const config *c, rt_model_spec *s)
{
    rt_model_spec_defaults(s);
    memset(s->dropout, 0, sizeof s->dropout);
    s->arch = c->arch;
    s->activation = (rt_act)name_of(rt_act_names, RT_ACT_COUNT, c->act);
    s->cont_norm = (rt_cont_norm)name_of(rt_cont_norm_names, RT_CONT_NORM_COUNT, c->norm);
    s->n_cat = c->cats ? irange(1, 4) : 0;
    for (int i = 0; i < s->n_cat; i++) {
        s->vocab[i] = irange(2, 9);
        s->emb_dim[i] = c->arch == RT_ARCH_ROSSMANN ? 4 : irange(1, 6);
    }
    s->cat_names = CAT_NAMES;
    s->n_cont = c->conts ? irange(1, 4) : 0;
    s->n_hidden = irange(1, 3);
    for (int l = 0; l < s->n_hidden; l++) {
        s->hidden[l] = irange(8, 24);
        s->batch_norm[l] = c->bn && (l % 2 == 0);
    }
    s->blocks = irange(1, 2);
    s->width = irange(6, 16);
    s->hidden_multiplier = 1.5f;
    s->cross_layers = irange(1, 3);
    s->deep_layers = irange(1, 2);
    s->stacked = c->stacked;
    s->d_token = c->heads ? c->heads * irange(2, 6) : 8;
    s->heads = c->heads ? c->heads : 1;
    s->ffn_multiplier = 4.0f / 3.0f;
    s->attention_dropout = s->ffn_dropout = s->residual_dropout = 0;
    s->dropout1 = s->dropout2 = s->cross_dropout = 0;
    s->ensemble_size = irange(2, 5);
    s->numeric_embedding = c->numeric_embedding;
    s->d_embedding = irange(1, 5);
    s->frequencies = irange(1, 4);
    s->frequency_scale = 0.3f;
    s->bins = irange(1, 5);
    s->variant = c->tabm == 2 ? RT_TABM_MINI : RT_TABM_FULL;
    s->tabm_init = c->tabm != 3;
    s->head_scale = 9.0f;
    s->seed = rng_state;
}

static void floats(rt_jw *w, const char *key, const float *v, int64_t n)
{
    rt_jw_key(w, key);
    rt_jw_arr(w);
    for (int64_t i = 0; i < n; i++)
        rt_jw_num(w, v[i]);
    rt_jw_arr_end(w);
}

int main(int argc, char **argv)
{
    const int nconfigs = (int)(sizeof CONFIGS / sizeof *CONFIGS);
    if (argc == 2 && !strcmp(argv[1], "--configs")) {
        printf("%d\n", nconfigs);
        return 0;
    }
    int ci = argc == 3 ? atoi(argv[1]) : -1;
    if (ci < 0 || ci >= nconfigs) {
        fprintf(stderr, "usage: model_dump CONFIG(0..%d) SEED | model_dump --configs\n",
                nconfigs - 1);
        return 2;
    }
    rng_state = strtoull(argv[2], NULL, 10) * 2654435761u + 88172645463325252ull + (uint64_t)ci;
    rt_model_spec s;
    spec_of(&CONFIGS[ci], &s);
    const int64_t n = irange(6, 16);
    char err[RT_ERR_LEN];
    rt_kctx *ctx;
    rt_model *m;
    if (rt_kctx_create(RT_DEVICE_CPU, 1, &ctx, err) != RT_OK ||
        rt_model_create(&s, ctx, n, &m, err) != RT_OK) {
        fprintf(stderr, "model_dump: %s\n", err);
        return 1;
    }
    int32_t *cat = calloc((size_t)(n * s.n_cat) + 1, 4);
    float *cont = calloc((size_t)(n * s.n_cont) + 1, 4), *label = calloc((size_t)n, 4);
    float mean[8], sd[8];
    for (int f = 0; f < s.n_cont; f++)
        mean[f] = (float)(uni() - 0.5), sd[f] = (float)(0.5 + uni());
    for (int64_t i = 0; i < n; i++) {
        for (int c = 0; c < s.n_cat; c++)
            cat[i * s.n_cat + c] = (int32_t)(uni() * s.vocab[c]);
        for (int f = 0; f < s.n_cont; f++)
            cont[i * s.n_cont + f] = (float)((uni() * 4 - 2) * (f + 1));
        /* below every prediction (the scaled sigmoid is positive): the
         * MAE's gradient is +1/n on every row, so the head's gradients are
         * sums of terms of one sign.  With labels among the predictions
         * the signs cancel, and what is left (1e-4 of the terms at seed 8,
         * config 8) is float32 rounding, which no relative tolerance
         * compares; the loss's own sign is tested in test_kernels_cpu. */
        label[i] = (float)(-1 - uni() * 7);
    }
    if (s.cont_norm == RT_CONT_STANDARDIZE &&
        s.numeric_embedding != RT_NUM_EMB_PLE && /* PLE: raw values */
        rt_model_set_standardize(m, mean, sd, err) != RT_OK) {
        fprintf(stderr, "model_dump: %s\n", err);
        return 1;
    }
    /* piecewise_linear: each column's edges across its values, a tie among them */
    float edges[8 * 8] = {0};
    const int E = s.bins + 1;
    for (int f = 0; s.numeric_embedding == RT_NUM_EMB_PLE && f < s.n_cont; f++) {
        edges[f * E] = (float)(-2 * (f + 1) * uni());
        for (int t = 1; t < E; t++)
            edges[f * E + t] =
                edges[f * E + t - 1] + (t == 2 ? 0.0f : (float)(0.2 + uni()) * (f + 1));
    }
    if (s.numeric_embedding == RT_NUM_EMB_PLE && s.n_cont > 0 &&
        rt_model_set_ple_edges(m, edges, err) != RT_OK) {
        fprintf(stderr, "model_dump: %s\n", err);
        return 1;
    }
    /* weights off their initial values: biases, norms and all.  A draw
     * whose ReLUs all die before the output predicts one value for every
     * row: then every gradient is the rounding of terms that cancel (the
     * MAE's signs over equal predictions), in float32 and float64 alike, and
     * no tolerance compares it (seed 29917, config 9: the FT-Transformer's
     * head ReLU dead, all gradients below 1e-6 and apart in their third
     * digit).  Such a draw is drawn again, from the same seed's sequence. */
    const int64_t P = rt_model_num_params(m);
    float *p = malloc((size_t)P * 4), *pred = malloc((size_t)n * 4);
    rt_model_set_batch(m, cat, cont, label, n);
    for (int tries = 0;; tries++) {
        for (int64_t i = 0; i < P; i++)
            p[i] = (float)((uni() - 0.5) * 0.8);
        rt_model_set_state(m, p, NULL, NULL, NULL, NULL, err);
        rt_model_forward(m, n, true);
        rt_model_read_pred(m, pred, n, err);
        float lo = pred[0], hi = pred[0];
        for (int64_t i = 1; i < n; i++)
            lo = pred[i] < lo ? pred[i] : lo, hi = pred[i] > hi ? pred[i] : hi;
        if (hi - lo > 1e-3f * (fabsf(hi) + 1e-3f) || tries == 50)
            break;
    }
    rt_model_loss(m, n, true);
    rt_model_backward(m, n, NULL, NULL);
    double met[RT_MODEL_NMETRICS];
    rt_model_metrics_read(m, met, err);
    rt_model_read_pred(m, pred, n, err);

    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_key(&w, "spec");
    rt_model_spec_json(&s, &w);
    rt_jw_kint(&w, "n", n);
    rt_jw_key(&w, "cat");
    rt_jw_arr(&w);
    for (int64_t i = 0; i < n * s.n_cat; i++)
        rt_jw_int(&w, cat[i]);
    rt_jw_arr_end(&w);
    floats(&w, "cont", cont, n * s.n_cont);
    floats(&w, "label", label, n);
    floats(&w, "mean", mean, s.n_cont);
    floats(&w, "ple_edges", edges, s.numeric_embedding == RT_NUM_EMB_PLE ? s.n_cont * E : 0);
    floats(&w, "std", sd, s.n_cont);
    int ninfo;
    const rt_param_info *info = rt_model_param_table(m, &ninfo);
    const float *grads = rt_model_grads(m); /* host memory on the CPU */
    for (int pass = 0; pass < 2; pass++) {
        rt_jw_key(&w, pass ? "grads" : "params");
        rt_jw_obj(&w);
        for (int t = 0; t < ninfo; t++)
            if (info[t].trainable)
                floats(&w, info[t].name, pass ? grads + info[t].off : p + info[t].pos, info[t].count);
        rt_jw_obj_end(&w);
    }
    floats(&w, "pred", pred, n);
    rt_jw_knum(&w, "loss", met[0] / met[1]);
    rt_jw_obj_end(&w);
    char *text = rt_jw_take(&w, NULL);
    puts(text);
    free(text);
    free(cat), free(cont), free(label), free(p), free(pred);
    rt_model_destroy(m);
    rt_kctx_destroy(ctx);
    return 0;
}
