/* model_impl.h — private to model/: the layer graph behind rt_model.
 *
 * A model is a list of layers in forward order over tensors (activations).
 * A tensor is a matrix of max_batch * tpr rows ("tokens per row": 1, or
 * FT-Transformer's T tokens of each sample) and `cols` columns, with a
 * gradient of the same shape when anything before it is trainable.  A
 * layer reads input slots and writes an output slot; a slot is a tensor,
 * a range of its columns (the concatenation of the embeddings and the
 * continuous inputs is two producers writing column ranges of one tensor)
 * and optionally one token of each sample (FT-Transformer's [CLS]).
 *
 * Backward walks the list in reverse.  A tensor read by several layers
 * (residual skips, DCN-V2's x0) gets the gradient of the last reader
 * written and every other reader's added: model_plan.c decides, per
 * input, whether a layer writes the gradient or adds to it (through a
 * scratch buffer).  Dropout works in place (its slot is its input's), in
 * forward on the values and in backward on their gradient.
 *
 * model_plan.c builds the list from a spec with a family's preset
 * (family_*.c, model_build.h),
 * model_layers.c runs each kind's forward and backward, rt_model.c owns the
 * memory, the state and the public calls. */
#ifndef RT_MODEL_IMPL_H
#define RT_MODEL_IMPL_H

#include "rt_model.h"

#define MODEL_MAX_LAYERS 512
#define MODEL_MAX_TENSORS 512
#define MODEL_MAX_IN 3
#define MODEL_LN_EPS 1e-5f /* PyTorch's LayerNorm default */

typedef enum layer_kind {
    L_EMBED,       /* categorical columns -> their embeddings (out: a column range) */
    L_BATCHNORM,   /* Keras batch norm over the rows (buffers: moving mean, variance) */
    L_STANDARDIZE, /* (x - mean) / std with fixed statistics (buffers) */
    L_COPY,        /* the input as it is */
    L_LINEAR,      /* x wᵀ + b, with ReLU fused (act) */
    L_ACT,         /* an activation on its own */
    L_DROPOUT,     /* in place */
    L_LAYERNORM,
    L_ADD,       /* in[0] + in[1] */
    L_CROSS,     /* DCN-V2's mix: drop(in[0] * in[1]) + in[2] (x0, W x + b, x) */
    L_TOKENS,    /* FT-Transformer's feature tokens and [CLS] */
    L_ATTENTION, /* multi-head attention between its projections */
    L_REGLU,
    L_HEAD,         /* head_scale * sigmoid */
    L_ENS_REPEAT,   /* TabM: the k members' copies of the input (out: tpr = k) */
    L_ENS_SCALE,    /* TabM: x * r[member] (+ b[member]) (BatchEnsemble's adapters), then
                       act and a dropout of rate when act is RT_ACT_RELU */
    L_TOKEN_LINEAR, /* a dense layer of each token's own (TabM's members' outputs, per column) */
    L_ENS_MEAN,     /* TabM: the members' prediction (rt_ens_op); forward only */
    L_NUM_LINEAR,   /* numeric embeddings: x_i w_i + b_i per column (out: n*d columns) */
    L_PERIODIC,     /* numeric embeddings: cos, sin of 2π f x (out: tpr = n, 2k columns) */
    L_QUANTILE,     /* continuous_norm quantile: x to a normal by fixed quantiles (buffers) */
    L_ROBUST,       /* continuous_norm robust: (x - center) * scale, smooth-clipped (buffers) */
    L_PLE,          /* numeric embeddings: piecewise-linear encoding (out: tpr = n, T columns) */
    L_KINDS
} layer_kind;

typedef struct mtensor {
    int64_t tpr, cols;
    bool grad;  /* has a gradient (something before it trains) */
    bool input; /* the continuous inputs: the model's input buffer */
    /* stored in bf16 (RT_BF16 views; model_plan_bf16): the value, the
     * gradient — where only GEMMs read them */
    bool bf16, gbf16;
    bool gunused;        /* its gradient is never made (a paired or fused backward): no memory */
    float *data, *gdata; /* (uint16_t where bf16, gbf16) */
    int writer;          /* planning: a gradient has been written (backward order) */
} mtensor;

typedef struct mslot {
    int t;              /* tensor */
    int64_t col0, cols; /* its columns */
    int tok;            /* -1: every row; k: token k of each sample */
} mslot;

typedef struct mlayer {
    layer_kind kind;
    char name[48];
    mslot in[MODEL_MAX_IN];
    int nin;
    mslot out;
    rt_act act;
    float rate;         /* dropout rate (L_DROPOUT, L_CROSS, L_ATTENTION, L_ENS_SCALE) */
    bool masked;        /* L_DROPOUT on a ReLU's output: its backward masks by y > 0, which
                           the dropped zeros are part of, so the dropout's backward only
                           scales (mb_dropout) */
    uint32_t stream;    /* its RNG stream */
    int64_t heads;      /* L_ATTENTION */
    rt_ens_op ens;      /* L_ENS_MEAN */
    bool embedded;      /* L_TOKENS: input 0 holds the continuous columns' tokens already */
    int p0, np;         /* its trainable tensors: info[p0 .. p0+np) */
    int64_t boff, nbuf; /* its non-trainable values: buffers[boff .. boff+nbuf) */
    int64_t goff, glen; /* backward's hook: its gradients' range of the arena */
    /* saved for backward (device memory): save_fixed + save_per_sample *
     * max_batch floats (BN's statistics, LN's per row, attention's probs) */
    int64_t save_fixed, save_per_sample;
    float *save;
    /* backward, per input: 0 writes the gradient, 1 adds to it (via
     * scratch), 2 adds after zeroing it first (a partial slot written first) */
    int gmode[MODEL_MAX_IN];
    /* L_ENS_SCALE on the CPU: a scaling (pair) and the one before it, whose
     * output only it reads (paired), run as one pass each way
     * (rt_k_scale_pair_fwd at the first's turn, rt_k_scale_pair_bwd at the
     * second's); the other turn is skipped (model_plan) */
    bool pair, paired;
    /* L_HEAD: its backward runs inside the training loss (rt_loss_desc's
     * head_scale), which writes its input's gradient (model_plan) */
    bool fused;
} mlayer;

/* Parameter initialisers. */
typedef enum init_kind {
    INIT_ZERO,
    INIT_ONE,
    INIT_GLOROT,      /* Keras: U(+-sqrt(6 / (fan_in + fan_out))) */
    INIT_UNIFORM_005, /* Keras embeddings: U(-0.05, 0.05) */
    INIT_FAN_IN,      /* PyTorch Linear (weight and bias): U(+-1/sqrt(fan_in)) */
    INIT_TOKEN,       /* rtdl tokens and embeddings: U(+-1/sqrt(d)), d = cols */
    INIT_SIGNS,       /* TabM's adapters: +1 or -1 with equal probability */
    INIT_FREQ,        /* periodic embeddings: N(0, frequency_scale²) cut at 3 std */
} init_kind;

struct rt_model {
    rt_model_spec spec;                   /* its cat_names: */
    char (*cat_names)[RT_MODEL_NAME_LEN]; /* the model's copy (NULL in a dry plan: lent) */
    rt_kctx *ctx;
    rt_device dev;
    int64_t max_batch;

    /* the graph (model_plan.c) */
    mlayer layers[MODEL_MAX_LAYERS];
    int nlayers;
    mtensor tensors[MODEL_MAX_TENSORS];
    int ntensors;
    int t_pred;         /* the head's output (tabm: the members' mean) */
    int t_loss;         /* what the training loss reads: t_pred, or tabm's members */
    int64_t ens_k;      /* tabm: members per sample (0 otherwise) */
    int64_t nobias_len; /* the widest dense layer without a bias (0: none) */
    int ndropout;       /* dropout streams handed out */
    int64_t tokens;     /* FT-Transformer: tokens per sample (0 otherwise) */

    /* the parameter table: trainable tensors in arena order, then buffers */
    rt_param_info *info;
    init_kind *init; /* per info entry */
    int64_t *fan_in; /* per info entry, for INIT_FAN_IN */
    int ninfo, info_cap;
    int64_t n_params, n_buffers, arena;
    int64_t std_off;        /* standardize: mean then std in the buffers (-1: none) */
    int64_t quant_off;      /* quantile: the quantiles in the buffers (-1: none) */
    int64_t robust_off;     /* robust: center then scale in the buffers (-1: none) */
    int64_t ple_off;        /* piecewise_linear: the bins' edges in the buffers (-1: none) */
    rt_embed_col *emb_host; /* per categorical column (host copy), and its device copy */
    rt_embed_col *emb_cols;
    int64_t emb_lo, emb_hi; /* the arena range of the embedding tables */

    /* flat buffers and small device tables */
    float *params, *grads, *adam_m, *adam_v, *buffers;
    rt_adam_hp *hp; /* the hyper-parameters of the next update */
    rt_adam_seg *segs;
    int nseg;
    int64_t *step;
    double *metrics;
    double *gsq;    /* the gradient's squared norm (clip_norm) */
    float *class_w; /* the spec's class weights (class_weighted), device copy */
    bool clip;      /* the update clips the gradient norm */
    uint64_t dropout_seed;

    /* inputs, the loss's gradient, accumulation scratch; max_batch rows */
    int32_t *in_cat;
    float *in_cont, *in_label;
    float *scratch[2];
    int64_t scratch_len;
    /* on a GPU, dense layers without a bias add zeros and write their bias
     * gradient to a throwaway buffer (the fused epilogues take a bias; the
     * CPU's pass NULL); tabm's
     * loss reads each member's copy of the labels (then of the weights,
     * divided by k; ens_invk: 1/k for rows without weights) */
    float *zeros, *dbias;
    float *ens_label, *ens_invk;
    /* synchronized batch norm (CPU): the ranks' sum, its failure, host scratch */
    rt_bn_sync_fn bn_sync;
    void *bn_sync_user;
    rt_status sync_st;
    char sync_err[RT_ERR_LEN];
    double *sync_buf, sync_count; /* 2F + 1 of the widest batch norm; the global rows */

    void **allocs;
    int nallocs, allocs_cap;
    /* device bytes asked for, and of them the flat buffers' (parameters,
     * gradients, Adam's moments, non-trainable values); with dry, only
     * counted (rt_model_spec_memory) */
    int64_t alloc_bytes, param_bytes;
    bool dry;
};

/* model_plan.c: the layer list, tensors and parameter table of m->spec
 * (nothing allocated on the device); RT_ERR_INVALID when the spec cannot be
 * built (a sentence in err). */
rt_status model_plan(rt_model *m, char *err);
/* On a context with rt_kctx_bf16_store: mark the tensors whose value or
 * gradient only ever is a GEMM's input, and is written by a layer that can
 * round it, to be stored in bf16 (TabM: each block's x ⊙ r, which only its
 * linear layer reads, and that layer's output gradient, which only its
 * backward reads).  After model_plan, before the memory is allocated. */
void model_plan_bf16(rt_model *m);

/* rt_model.c: the device buffers of a planned model (m->dev, and
 * model_plan_bf16's marks, say their sizes); with m->dry, nothing is
 * allocated and m->alloc_bytes says what would be. */
rt_status model_allocate(rt_model *m);
/* The kind's name in summaries ("Dense", "BatchNorm", ...). */
const char *model_kind_name(layer_kind k);

/* model_layers.c */
void model_layer_fwd(rt_model *m, mlayer *L, int64_t n, bool train);
void model_layer_bwd(rt_model *m, mlayer *L, int64_t n);
/* A slot's view at n samples: the value, or its gradient. */
rt_view model_slot(const rt_model *m, mslot s, int64_t n, bool grad);

#endif
