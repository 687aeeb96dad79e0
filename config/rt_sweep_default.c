/* rt_sweep_default.c — the space a sweep searches when its file gives no
 * space.* line (asha and random): the searched keys of the job's family,
 * after the spaces the rtdl and TabM papers tuned with (docs/sweeps.md,
 * "The default space"), in the keys and distributions ringtrain has — a
 * mixture {0, loguniform(a, b)} becomes a choice of 0 and powers of ten. */
#include "rt_sweep.h"

#include <string.h>

bool rt_sweep_uses_default(const rt_job_cfg *c)
{
    if (c->sweep_scheduler == RT_SWEEP_GRID)
        return false;
    return c->space.n == 0 ||
           (c->space.n == 1 && !strcmp(c->space.names[0], "space.model.architecture"));
}

/* rtdl ("Revisiting Deep Learning Models for Tabular Data"): MLP layers
 * 1-8 of 1-512 units (here a choice of 10 shapes, 1-4 layers of 128-1024),
 * dropout [0, 0.5], lr [1e-5, 1e-2], weight decay {0, [1e-6, 1e-3]} */
static const rt_sweep_default MLP[] = {
    {"model.hidden", "choice(128 | 256 | 512 | 256,256 | 512,512 | 512,256 | 256,256,256 | "
                     "512,512,512 | 512,512,512,512 | 1024,512,256)"},
    {"model.dropout", "uniform(0, 0.5)"},
    {"train.learning_rate", "loguniform(1e-5, 1e-2)"},
    {"train.weight_decay", "choice(0 | 1e-6 | 1e-5 | 1e-4 | 1e-3)"},
};
/* rtdl's ResNet: blocks 1-8, width 64-512, inner factor 1-4, dropouts */
static const rt_sweep_default RESNET[] = {
    {"model.blocks", "int(1, 8)"},
    {"model.width", "int(64, 512)"},
    {"model.hidden_multiplier", "uniform(1, 4)"},
    {"model.dropout1", "uniform(0, 0.5)"},
    {"model.dropout2", "uniform(0, 0.5)"},
    {"train.learning_rate", "loguniform(1e-5, 1e-2)"},
    {"train.weight_decay", "choice(0 | 1e-6 | 1e-5 | 1e-4 | 1e-3)"},
};
/* rtdl's DCN V2: cross and deep layers 1-8, width 64-512, dropouts */
static const rt_sweep_default DCN2[] = {
    {"model.cross_layers", "int(1, 8)"},
    {"model.deep_layers", "int(1, 8)"},
    {"model.width", "int(64, 512)"},
    {"model.dropout", "uniform(0, 0.5)"},
    {"model.cross_dropout", "uniform(0, 0.5)"},
    {"train.learning_rate", "loguniform(1e-5, 1e-2)"},
    {"train.weight_decay", "choice(0 | 1e-6 | 1e-5 | 1e-4 | 1e-3)"},
};
/* rtdl's FT-Transformer: blocks 1-4, d_token 64-512 (here multiples of
 * 64, so that 1, 2, 4, 8, 16, 32 or 64 heads divide it), the three
 * dropouts, the feed-forward factor 2/3-8/3, lr [1e-5, 1e-3], weight decay
 * [1e-6, 1e-3] */
static const rt_sweep_default FT[] = {
    {"model.blocks", "int(1, 4)"},
    {"model.d_token", "choice(64 | 128 | 192 | 256 | 320 | 384 | 448 | 512)"},
    {"model.attention_dropout", "uniform(0, 0.5)"},
    {"model.ffn_dropout", "uniform(0, 0.5)"},
    {"model.residual_dropout", "uniform(0, 0.2)"},
    {"model.ffn_multiplier", "uniform(0.6667, 2.667)"},
    {"train.learning_rate", "loguniform(1e-5, 1e-3)"},
    {"train.weight_decay", "loguniform(1e-6, 1e-3)"},
};
/* TabM's (the paper's tuning files): blocks 2-5, d_block 128-1024,
 * dropout {0, [0, 0.5]}, lr [1e-4, 3e-3], weight decay {0, [1e-4, 1e-1]} */
static const rt_sweep_default TABM[] = {
    {"model.blocks", "int(2, 5)"},
    {"model.width", "int(128, 1024)"},
    {"model.dropout", "uniform(0, 0.5)"},
    {"train.learning_rate", "loguniform(1e-4, 3e-3)"},
    {"train.weight_decay", "choice(0 | 1e-4 | 1e-3 | 1e-2 | 1e-1)"},
};
/* The Rossmann network keeps its layers: its one dropout, Keras' L2 and
 * the rate of its Adam */
static const rt_sweep_default ROSSMANN[] = {
    {"model.dropout", "uniform(0, 0.5)"},
    {"model.l2", "choice(0 | 1e-6 | 1e-5 | 5e-5 | 1e-4 | 1e-3)"},
    {"train.learning_rate", "loguniform(3e-5, 3e-3)"},
};
/* The numeric embeddings the job uses ("On Embeddings for Numerical
 * Features in Tabular Deep Learning"; TabM's PLE space) */
static const rt_sweep_default PERIODIC[] = {
    {"model.frequencies", "int(16, 96)"},
    {"model.frequency_scale", "loguniform(0.01, 100)"},
    {"model.d_embedding", "int(16, 64)"},
};
static const rt_sweep_default PLE[] = {
    {"model.bins", "int(2, 128)"},
    {"model.d_embedding", "int(8, 32)"},
};
static const rt_sweep_default LINEAR[] = {
    {"model.d_embedding", "int(8, 32)"},
};
/* The papers tuned with AdamW: a job on Keras' Adam (the default) takes it */
static const rt_sweep_default ADAMW[] = {
    {"train.optimizer", "choice(adamw)"},
};

/* list's keys after out's n (at most max), but d_embedding for an
 * FT-Transformer (its token's width is d_token) */
static void add(const rt_job_cfg *c, const rt_sweep_default *list, size_t len,
                rt_sweep_default *out, int *n, int max)
{
    for (size_t i = 0; i < len && *n < max; i++)
        if (c->architecture != RT_ARCH_FT_TRANSFORMER || strcmp(list[i].key, "model.d_embedding"))
            out[(*n)++] = list[i];
}

#define ADD(list) add(c, list, sizeof list / sizeof *list, out, &n, max)

int rt_sweep_default_space(const rt_job_cfg *c, rt_sweep_default *out, int max)
{
    int n = 0;
    switch (c->architecture) {
    case RT_ARCH_MLP:
        ADD(MLP);
        break;
    case RT_ARCH_RESNET:
        ADD(RESNET);
        break;
    case RT_ARCH_DCN2:
        ADD(DCN2);
        break;
    case RT_ARCH_FT_TRANSFORMER:
        ADD(FT);
        break;
    case RT_ARCH_TABM:
        ADD(TABM);
        break;
    default:
        ADD(ROSSMANN);
        return n; /* no numeric embeddings */
    }
    if (c->optimizer == RT_OPTIM_ADAM)
        ADD(ADAMW);
    switch (c->numeric_embedding) {
    case RT_NUM_EMB_PERIODIC:
        ADD(PERIODIC);
        break;
    case RT_NUM_EMB_PLE:
        ADD(PLE);
        break;
    case RT_NUM_EMB_LINEAR:
        ADD(LINEAR);
        break;
    default:
        break;
    }
    return n;
}
