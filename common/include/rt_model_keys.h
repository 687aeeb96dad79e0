/* rt_model_keys.h — the model hyperparameters that go unchanged from a job
 * file's [model] section into the network, each written once.  One line
 * makes the job-file key (rt_schemas.c: type, default, bounds, help), the
 * families that take it (rt_schema_model.c), the rt_job_cfg and
 * rt_model_spec fields of that name, the spec's default and bounds check
 * (model_spec.c), its record in a checkpoint (model_spec.c writes it,
 * rt_ckpt.c reads it back) and the trainer's copy (trainer_model.c).
 *
 *   RT_MODEL_KEYS(I, F, B, E) expands, for each key,
 *     I(name, default, lo, hi, families, help)   an integer: int64_t in the
 *                                                job, int in the spec
 *     F(name, default, lo, hi, families, help)   a number: double, float
 *     B(name, default, families, help)           a bool
 *     E(name, type, LIST, "default", families, help)  one of LIST's names
 *                                                (rt_model_names.h): int in
 *                                                the job, `type` in the spec
 *   families: RT_FAM(...) bits, or RT_FAMS_ALL for a key every family takes.
 *
 * The [model] keys that are not here need more than a copy: lists
 * (hidden, dropout, batch_norm, embedding_dims), keys with an `auto`
 * resolved from the task or family (continuous_norm, head), and those the
 * trainer derives a spec value from (embedding_dim and embedding_rule per
 * column, head_scale_factor, activation's offset).  rt_schemas.c and
 * trainer_model.c keep those by hand. */
#ifndef RT_MODEL_KEYS_H
#define RT_MODEL_KEYS_H

#include "rt_model_names.h"

#define RT_FAM(a) (1u << RT_ARCH_##a)
#define RT_FAMS_ALL ((1u << RT_ARCH_COUNT) - 1u)
#define RT_FAMS_NOT_FT (RT_FAMS_ALL & ~RT_FAM(FT_TRANSFORMER))
/* the families whose continuous columns may be embedded one by one
 * (ft_transformer's in a token of d_token: no d_embedding) */
#define RT_FAMS_NUM_EMB (RT_FAMS_ALL & ~RT_FAM(ROSSMANN))
#define RT_FAMS_D_EMB (RT_FAMS_NUM_EMB & ~RT_FAM(FT_TRANSFORMER))

/* clang-format off */
#define RT_MODEL_KEYS(I, F, B, E)                                                                   \
    F(embedding_dropout, 0, 0, 0.99, RT_FAMS_NOT_FT,                                                \
      "dropout on the embeddings (fastai's emb_drop)")                                              \
    E(numeric_embedding, rt_num_emb, RT_NUM_EMB_LIST, "none", RT_FAMS_NUM_EMB,                      \
      "every family but rossmann: each continuous column (after continuous_norm) embedded in "      \
      "d_embedding values (ft_transformer: its token, d_token): linear (x w + b per column; "       \
      "ft_transformer's own tokens), periodic (PLR: cos and sin of 2 pi "                           \
      "f x for `frequencies` trained f, a linear layer per column, ReLU), "                         \
      "piecewise_linear (PLE over `bins` quantile bins, a linear layer per column, ReLU), "         \
      "or none (the value itself)")                                                                 \
    I(bins, 48, 1, 256, RT_FAMS_NUM_EMB,                                                            \
      "numeric_embedding = piecewise_linear: bins per column, their edges the training "            \
      "rows' quantiles (from the dataset's manifest)")                                              \
    I(d_embedding, 24, 1, 1024, RT_FAMS_D_EMB,                                                      \
      "numeric_embedding: the width of each continuous column's embedding")                         \
    I(frequencies, 48, 1, 1024, RT_FAMS_NUM_EMB,                                                    \
      "numeric_embedding = periodic: frequencies per column (rtdl's n_frequencies)")                \
    F(frequency_scale, 0.01, 1e-6, 100, RT_FAMS_NUM_EMB,                                            \
      "numeric_embedding = periodic: the frequencies' initial standard deviation "                  \
      "(rtdl's frequency_init_scale, sigma; the paper tunes it in [0.01, 100])")                    \
    I(blocks, 3, 1, 64, RT_FAM(RESNET) | RT_FAM(FT_TRANSFORMER) | RT_FAM(TABM),                     \
      "resnet: residual blocks; ft_transformer: transformer blocks; tabm: the shared "              \
      "MLP's layers (the paper's n_blocks)")                                                        \
    I(width, 256, 1, 65536, RT_FAM(RESNET) | RT_FAM(DCN2) | RT_FAM(TABM),                           \
      "resnet: the blocks' width (rtdl's d_main); dcn2: the cross and deep layers'; "               \
      "tabm: the shared layers' (d_block)")                                                         \
    F(hidden_multiplier, 2, 0.01, 64, RT_FAM(RESNET),                                               \
      "resnet: each block's inner width is width * hidden_multiplier (rtdl's d_hidden)")            \
    F(dropout1, 0.25, 0, 0.99, RT_FAM(RESNET),                                                      \
      "resnet: dropout after each block's first linear layer (rtdl's dropout_first)")               \
    F(dropout2, 0, 0, 0.99, RT_FAM(RESNET),                                                         \
      "resnet: dropout after each block's second linear layer (rtdl's dropout_second)")             \
    I(cross_layers, 3, 0, 64, RT_FAM(DCN2), "dcn2: cross layers x0 * (W x + b) + x")                \
    I(deep_layers, 2, 0, 16, RT_FAM(DCN2), "dcn2: ReLU layers of the deep network")                 \
    B(stacked, false, RT_FAM(DCN2),                                                                 \
      "dcn2: the deep network on the cross network's output (true) or beside it, both "             \
      "on the first layer's output, concatenated (false)")                                          \
    F(cross_dropout, 0, 0, 0.99, RT_FAM(DCN2), "dcn2: dropout of each cross layer's x0 * (W x + b)") \
    I(d_token, 192, 1, 8192, RT_FAM(FT_TRANSFORMER),                                                \
      "ft_transformer: the width of every token (a multiple of heads)")                             \
    I(heads, 8, 1, 256, RT_FAM(FT_TRANSFORMER),                                                     \
      "ft_transformer: attention heads (with one, no output projection: rtdl's)")                   \
    F(attention_dropout, 0.2, 0, 0.99, RT_FAM(FT_TRANSFORMER),                                      \
      "ft_transformer: dropout on the attention probabilities")                                     \
    F(ffn_multiplier, 1.3333333333333333, 0.01, 64, RT_FAM(FT_TRANSFORMER),                         \
      "ft_transformer: the feed-forward's inner width is d_token * ffn_multiplier "                 \
      "(ReGLU: its first layer is twice that)")                                                     \
    F(ffn_dropout, 0.1, 0, 0.99, RT_FAM(FT_TRANSFORMER),                                            \
      "ft_transformer: dropout inside the feed-forward network")                                    \
    F(residual_dropout, 0, 0, 0.99, RT_FAM(FT_TRANSFORMER),                                         \
      "ft_transformer: dropout of each residual branch before its add")                             \
    I(ensemble_size, 32, 1, 256, RT_FAM(TABM),                                                      \
      "tabm: the members k (each sample trains as k rows of one batch)")                            \
    E(variant, rt_tabm_variant, RT_TABM_VARIANT_LIST, "tabm", RT_FAM(TABM),                         \
      "tabm: BatchEnsemble adapters in every layer (tabm), or one scaling of the "                  \
      "inputs before the shared layers (mini: TabM-mini)")                                          \
    B(tabm_init, true, RT_FAM(TABM),                                                                \
      "tabm: only the first adapter starts random (+-1), the others at 1 (the paper's "             \
      "TabM); false: every adapter random (BatchEnsemble's, TabM-naive)")                           \
    F(l2, 5e-5, 0, 1, RT_FAMS_ALL, "L2 penalty on the dense kernels (the output layer's excepted)") \
    F(bn_momentum, 0.99, 0, 1, RT_FAMS_ALL, "batch-norm moving-average momentum")                   \
    F(bn_eps, 1e-3, 1e-12, 1, RT_FAMS_ALL, "batch-norm epsilon")
/* clang-format on */

/* Helpers for expansions that skip a kind. */
#define RT_MK_SKIP6(n, a, b, c, d, e)
#define RT_MK_SKIP4(n, a, b, c)

#endif
