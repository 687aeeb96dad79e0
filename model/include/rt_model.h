/* rt_model.h — the tabular model runtime: a model is a list of layers over
 * one flat arena of parameters, built from a spec by a family preset:
 *
 *   rossmann        Horovod's Rossmann Keras model (the default):
 *                   embeddings ┐
 *                   batch norm ┴ concat -> Dense+ReLU x k -> Dropout -> Dense(1)
 *   mlp             the same inputs -> [Dense -> act -> (BN) -> Dropout] x k -> Dense(1)
 *   resnet          rtdl's ResNet: Linear -> [BN -> Linear -> ReLU -> Dropout ->
 *                   Linear -> Dropout, + skip] x blocks -> BN -> ReLU -> Linear
 *   dcn2            DCN-V2: Linear -> cross layers x0 * (W x + b) + x, deep
 *                   layers stacked on them or beside them -> Linear
 *   ft_transformer  rtdl's FT-Transformer: feature tokens + [CLS] -> pre-LN
 *                   transformer blocks (attention, ReGLU feed-forward) ->
 *                   [CLS] -> LN -> ReLU -> Linear
 *   tabm            TabM (Gorishniy et al. 2025): k MLPs sharing their
 *                   weights, each with its own BatchEnsemble adapters and
 *                   output layer, trained as one batch of k·B rows; the
 *                   loss is the members' mean, the prediction their mean
 *
 * every one ending in an output layer of n_out units and a head: Rossmann's
 * pred = head_scale * sigmoid(z) with MAE on the (log) label (the default,
 * metric exp-RMSPE), or z itself (logits) with any loss of rt_k_loss
 * (docs/tasks.md).  docs/models.md draws each family.
 * Each layer kind (embedding, linear, activation, dropout, batch norm,
 * layer norm, residual add, cross, attention, feature tokens, head) has a
 * forward and a backward written against the kernel API (rt_kernels.h), so
 * one layer list runs on both backends.
 *
 * Parameters, gradients and the two Adam moments each live in one flat
 * allocation (the arena) carved by the same offsets table (rt_param_info),
 * in layer order, so a gradient bucket is a range of elements.  Every
 * tensor starts on a 256-byte boundary (RT_MODEL_ALIGN floats) — cuBLASLt's
 * fast kernels and vector loads need it; the padding between tensors stays
 * zero — except the Rossmann embedding tables, which form one matrix.  The
 * state calls and checkpoints use the packed order without padding.
 * Backward runs in reverse layer order and calls a hook as each layer's
 * gradient range is final, so the trainer can start allreducing it while
 * backward continues.  On CUDA every step call only enqueues work (no
 * sync, no allocation): forward, loss, backward and apply can be captured
 * in one CUDA graph.
 * (Model: llm.c malloc_and_point_parameters / gpt2_backward; rtdl's
 * reference models for the tabular families.) */
#ifndef RT_MODEL_H
#define RT_MODEL_H

#include <stdio.h>

#include "rt_kernels.h"
#include "rt_model_keys.h"

#ifdef __cplusplus
extern "C" {
#endif

/* categorical and continuous inputs of a model (a shard holds
 * RT_SHARD_MAX_COLS columns) */
#define RT_MODEL_MAX_CAT 65536
#define RT_MODEL_MAX_CONT 65536
#define RT_MODEL_MAX_HIDDEN 16
#define RT_MODEL_NAME_LEN 64 /* a dataset's column names are at most 63 bytes */
#define RT_MODEL_MAX_CLASSES 256
/* RNG stream of the dropout masks: the k-th dropout layer draws from
 * stream RT_MODEL_DROPOUT_STREAM + k (element b*units + j, at the model step) */
#define RT_MODEL_DROPOUT_STREAM 0x7000u

/* The families' names (rt_arch: rt_model_names.h), as the job file and
 * checkpoints write them; the activations' and continuous_norm's. */
extern const char *const rt_arch_names[RT_ARCH_COUNT];
extern const char *const rt_act_names[RT_ACT_COUNT];
extern const char *const rt_cont_norm_names[RT_CONT_NORM_COUNT];
extern const char *const rt_loss_names[RT_LOSS_COUNT];
extern const char *const rt_head_names[RT_HEAD_COUNT];
extern const char *const rt_task_names[RT_TASK_COUNT];
extern const char *const rt_optim_names[RT_OPTIM_COUNT];
extern const char *const rt_tabm_variant_names[RT_TABM_VARIANT_COUNT];
extern const char *const rt_num_emb_names[RT_NUM_EMB_COUNT];
/* The index of name in one of those tables (n entries), or -1 (name NULL too). */
int rt_model_name_index(const char *const *names, int n, const char *name);

/* rt_model_keys.h's keys as rt_model_spec fields */
#define RT_SPEC_KEY_I(n, def, lo, hi, fam, help) int n;
#define RT_SPEC_KEY_F(n, def, lo, hi, fam, help) float n;
#define RT_SPEC_KEY_B(n, def, fam, help) bool n;
#define RT_SPEC_KEY_E(n, type, list, def, fam, help) type n;

typedef struct rt_model_spec {
    rt_arch arch;
    /* inputs */
    int n_cat;                         /* categorical columns */
    int32_t vocab[RT_MODEL_MAX_CAT];   /* rows of each embedding table */
    int32_t emb_dim[RT_MODEL_MAX_CAT]; /* width of each (not ft_transformer) */
    /* their names (n_cat; NULL: none), lent: by the columns the spec was
     * made from, or a checkpoint; a model keeps a copy of its own */
    char (*cat_names)[RT_MODEL_NAME_LEN];
    int n_cont; /* continuous columns */
    rt_cont_norm cont_norm;
    int n_quantiles; /* continuous_norm quantile: quantiles per column (the model's buffers) */
    /* rossmann and mlp: the hidden layers (dcn2: its deep layers' dropout) */
    int n_hidden;
    int hidden[RT_MODEL_MAX_HIDDEN];
    float dropout[RT_MODEL_MAX_HIDDEN]; /* after each hidden layer; rossmann: only the last's */
    bool batch_norm[RT_MODEL_MAX_HIDDEN];
    rt_act activation;
    /* the keys of rt_model_keys.h, as the job file names them: the numeric
     * columns' embeddings (not rossmann, ft_transformer), resnet's, dcn2's,
     * ft_transformer's and tabm's (tabm: also dropout[] per block), l2 (loss
     * += l2 * sum(w^2) per hidden kernel), the batch norms' momentum and eps */
    RT_MODEL_KEYS(RT_SPEC_KEY_I, RT_SPEC_KEY_F, RT_SPEC_KEY_B, RT_SPEC_KEY_E)
    /* every family */
    float head_scale; /* pred = head_scale * sigmoid(z) (head scaled_sigmoid) */
    /* the task: the output layer, its head and the loss (rt_k_loss) */
    rt_head head; /* scaled_sigmoid (Rossmann's regression head) or linear (z itself) */
    int n_out;    /* outputs per row: 1, or K logits for cross_entropy */
    rt_loss loss;
    float huber_delta, label_smoothing;
    int n_classes; /* classification: K (bce: 2); 0 for regression */
    bool class_weighted;
    float class_weight[RT_MODEL_MAX_CLASSES]; /* n_classes, when class_weighted */
    bool weighted; /* rows carry sample weights: a label buffer of n rows holds the n
                          labels, then the n weights */
    uint64_t seed; /* initialisation (and default dropout) seed */
} rt_model_spec;

/* Categorical column i's name, "" when the spec names none. */
static inline const char *rt_model_cat_name(const rt_model_spec *s, int i)
{
    return s->cat_names ? s->cat_names[i] : "";
}

/* The Rossmann defaults (d = 10, 1000-1000-1000-500, dropout 0.5 after the
 * last, L2 5e-5, BN momentum 0.99 / eps 1e-3) and every other family's
 * keys at their job-file defaults; the caller fills columns and head_scale. */
void rt_model_spec_defaults(rt_model_spec *spec);
/* Set every categorical column's embedding width to d. */
void rt_model_spec_set_emb_dim(rt_model_spec *spec, int d);
/* Check a spec; RT_ERR_INVALID with a sentence in err. */
rt_status rt_model_spec_check(const rt_model_spec *spec, char *err);
/* Whether two specs build the same network (layers, widths, activations,
 * inputs; dropout rates, l2 and the seed may differ); else a sentence
 * naming the first difference, a's then b's. */
bool rt_model_spec_same_net(const rt_model_spec *a, const rt_model_spec *b, char *why, size_t len);
/* The spec as a JSON object: the architecture, the columns ("categorical":
 * name, vocab, dim; "n_cont"), every family's keys — what a checkpoint's
 * "model" holds and bench/torch_models.py builds the same network from. */
typedef struct rt_jw rt_jw;
void rt_model_spec_json(const rt_model_spec *spec, rt_jw *w);
/* Read back rt_model_keys.h's keys from such a record (a key absent keeps
 * its value); NULL, or the name of the first key of the wrong type or an
 * unknown name.  The caller reads the rest and checks the spec. */
typedef struct rt_json rt_json;
const char *rt_model_spec_keys_read(rt_model_spec *spec, const rt_json *record);
/* Bytes the model needs at max_batch rows on ctx's device (NULL: a CPU's,
 * FP32): parameters with gradients and Adam's moments, and the activations
 * and their gradients (training) — what rt_model_create would allocate
 * there, to the byte, without allocating it. */
typedef struct rt_model_memory {
    int64_t params, param_bytes, activation_bytes, total_bytes;
    int64_t arena;   /* floats of the flat parameter buffer (rt_model_arena_len) */
    int batch_norms; /* its batch-norm layers (rt_model_batch_norms) */
} rt_model_memory;
rt_status rt_model_spec_memory(const rt_model_spec *spec, int64_t max_batch, const rt_kctx *ctx,
                               rt_model_memory *mem, char *err);

typedef struct rt_param_info {
    char name[RT_MODEL_NAME_LEN + 16]; /* "emb_Store", "dense_1/kernel", ... */
    int64_t off, count;                /* elements in the flat buffers (the arena) */
    int64_t pos;                       /* offset in the packed state (no padding) */
    int64_t rows, cols;
    float l2;
    bool trainable; /* false: BN moving statistics (own buffer) */
    bool decay;     /* a dense kernel: weight decay applies (rtdl's groups) */
} rt_param_info;

typedef struct rt_model rt_model;

/* Create the model on ctx's device with activations for up to max_batch
 * rows, and initialise it from the seed: rossmann with Keras' defaults
 * (Glorot-uniform kernels, zero biases, uniform(-0.05, 0.05) embeddings),
 * the other families with their PyTorch references' (uniform(+-1/sqrt(fan
 * in)) kernels and biases, rtdl's token and embedding uniform(+-1/sqrt(d)),
 * zero attention biases); norms gamma 1, beta 0, moving mean 0, variance 1.
 * Initial values are drawn on the host from the counter-based RNG, so CPU
 * and CUDA models start identical.  The model borrows ctx (which must
 * outlive it). */
rt_status rt_model_create(const rt_model_spec *spec, rt_kctx *ctx, int64_t max_batch,
                          rt_model **out, char *err);
void rt_model_destroy(rt_model *m);
const rt_model_spec *rt_model_get_spec(const rt_model *m);
rt_kctx *rt_model_kctx(rt_model *m);
int64_t rt_model_max_batch(const rt_model *m);

/* Trainable parameter count (the packed state's length), the count of
 * non-trainable values (BN moving mean and variance), and the length of the
 * flat buffers with their padding (what rt_model_params/grads point to,
 * what the gradient allreduce covers). */
#define RT_MODEL_ALIGN 64
int64_t rt_model_num_params(const rt_model *m);
int64_t rt_model_num_buffers(const rt_model *m);
/* Batch-norm layers (their moving statistics are what evaluation uses) */
int rt_model_batch_norms(const rt_model *m);
/* A batch norm evaluates with moving statistics that start at mean 0 and
 * variance 1 and move (1 - momentum) of the way each training step: after
 * `steps` steps momentum^steps of the start is left.  True, and why it
 * matters in buf, where that is over 5%. */
bool rt_model_bn_lag(double momentum, int64_t steps, char *buf, size_t len);
int64_t rt_model_arena_len(const rt_model *m);
/* Bytes of device memory the model allocated (rt_model_spec_memory's
 * total_bytes for its spec, batch and context). */
int64_t rt_model_device_bytes(const rt_model *m);
/* Parameter table: trainable tensors in buffer order, then the
 * non-trainable ones (offsets into the buffer of rt_model_buffers()). */
const rt_param_info *rt_model_param_table(const rt_model *m, int *n);
/* Multiply-add work of one training sample, in FLOP: 2·in·out per token
 * of every dense layer forward and twice that backward, and the
 * attention's two T x T x dh products per head (forward and backward
 * alike); what benchmarks divide by the step time. */
double rt_model_flops_per_sample(const rt_model *m);
/* Keras-style summary: one line per layer (name, kind, output shape per
 * row, parameters), then the totals. */
void rt_model_summary(const rt_model *m, FILE *f);
/* Every tensor of the parameter table (name, shape, values). */
void rt_model_summary_tensors(const rt_model *m, FILE *f);

/* Flat buffers in the context's memory (owned by the model). */
float *rt_model_params(rt_model *m);
float *rt_model_grads(rt_model *m);
/* each batch-norm layer's moving mean then variance, then the
 * standardisation's mean and std (continuous_norm = standardize) */
float *rt_model_buffers(rt_model *m);
/* continuous_norm = standardize: each continuous column's mean and std
 * (n_cont each, host memory; a std of 0 is taken as 1).  RT_ERR_INVALID
 * when the model does not standardise. */
rt_status rt_model_set_standardize(rt_model *m, const float *mean, const float *std, char *err);
/* continuous_norm = quantile: each continuous column's n_quantiles
 * ascending quantiles (n_cont * n_quantiles floats, column after column,
 * host memory), into the buffers.  RT_ERR_INVALID when the model does not
 * take them or they are not ascending. */
rt_status rt_model_set_quantiles(rt_model *m, const float *q, char *err);
/* continuous_norm = robust: each continuous column's center (median) and
 * scale (1 / IQR), n_cont each, host memory. */
rt_status rt_model_set_robust(rt_model *m, const float *center, const float *scale, char *err);
/* numeric_embedding = piecewise_linear: each continuous column's bins + 1
 * ascending edges (n_cont * (bins + 1) floats, column after column, host
 * memory). */
rt_status rt_model_set_ple_edges(rt_model *m, const float *edges, char *err);

/* Input buffers in the context's memory, max_batch rows each:
 * cat (B, n_cat) i32, cont (B, n_cont) f32, label (B) f32. */
typedef struct rt_model_inputs {
    int32_t *cat;
    float *cont;
    float *label;
} rt_model_inputs;
rt_model_inputs rt_model_input_buffers(rt_model *m);
/* Copy n host rows into the input buffers (enqueued on CUDA). */
void rt_model_set_batch(rt_model *m, const int32_t *cat, const float *cont, const float *label,
                        int64_t n);

/* ---- the step ------------------------------------------------------------ */

/* Forward over the first n input rows; train enables dropout and batch
 * statistics (and updates the BN moving statistics). */
void rt_model_forward(rt_model *m, int64_t n, bool train);
/* Synchronized batch norm (CPU models): with fn set, every batch-norm
 * layer of a training forward normalises with the statistics of every
 * rank's batch and moves its moving statistics towards them — fn sums n
 * doubles over the ranks in place (an allreduce) — and its backward sums
 * dy and dy·xhat the same way for the gradient it passes on, so N ranks
 * of batch B train like one of batch N·B (its own dgamma, dbeta stay each
 * rank's, for the gradients' allreduce).  fn NULL: each rank's own batch.
 * RT_ERR_UNSUPPORTED on CUDA.  A failure of fn does not stop the step: it
 * is reported by rt_model_sync_status after it. */
typedef rt_status (*rt_bn_sync_fn)(void *user, double *v, int64_t n, char *err);
rt_status rt_model_set_bn_sync(rt_model *m, rt_bn_sync_fn fn, void *user, char *err);
/* The first failure of fn since the last call, which clears it. */
rt_status rt_model_sync_status(rt_model *m, char *err);
/* Whether backward calls fn (a batch norm whose input trains: inside the
 * network, not on the continuous inputs). */
bool rt_model_syncs_in_backward(const rt_model *m);
/* The loss of the last forward into the accumulators (rt_k_loss: [0] the
 * sum of the weighted row losses, [1] the sum of the weights); with_grad
 * also writes d(loss)/d(pred) for backward, scaled by the hyper-parameters'
 * loss_norm (when > 0; else by 1 / this batch's weight). */
void rt_model_loss(rt_model *m, int64_t n, bool with_grad);

/* Called during backward when the gradients of [off, off+count) elements
 * are final (enqueued, on CUDA: work on the context's stream after this
 * call sees them).  Ranges arrive from the end of the arena to the start
 * and cover [0, rt_model_arena_len) exactly once. */
typedef void (*rt_grad_hook)(void *user, int64_t off, int64_t count);
void rt_model_backward(rt_model *m, int64_t n, rt_grad_hook hook, void *user);

/* One Adam step over all parameters (grad_scale folds in 1/world), then the
 * step counter advances: rt_model_set_hparams + rt_model_update. */
void rt_model_apply(rt_model *m, const rt_adam_hp *hp);
/* The hyper-parameters the next update uses, copied to the context's
 * memory (stream-ordered; hp may be reused at once).  Not capturable. */
void rt_model_set_hparams(rt_model *m, const rt_adam_hp *hp);
/* Adam with the hyper-parameters last set, then step + 1 (capturable: a
 * replayed graph uses the values set before each launch). */
void rt_model_update(rt_model *m);

/* forward(train) + loss + backward + apply, for one process. */
void rt_model_train_step(rt_model *m, int64_t n, const rt_adam_hp *hp);

/* Seed of the dropout masks, of every dropout layer and the attention's
 * (defaults to spec.seed); ranks use different seeds so their masks differ. */
void rt_model_set_dropout_seed(rt_model *m, uint64_t seed);

/* The loss accumulated since the last reset (rt_k_loss's): [0] the sum of
 * the weighted row losses, [1] the sum of the weights.  Validation
 * metrics are computed from the predictions (trainer_task.c).  Reading
 * synchronises the context. */
#define RT_MODEL_NMETRICS 2
void rt_model_metrics_reset(rt_model *m);
rt_status rt_model_metrics_read(rt_model *m, double out[RT_MODEL_NMETRICS], char *err);

/* L2 penalty sum(l2 * w^2) over the kernels (synchronises; for reporting). */
rt_status rt_model_l2_penalty(rt_model *m, double *out, char *err);

/* Predictions of the last forward, n rows of n_out values to host memory
 * (synchronises): the head's output, or the logits. */
rt_status rt_model_read_pred(rt_model *m, float *host, int64_t n, char *err);

/* ---- state --------------------------------------------------------------- */

/* Host copies of the state (synchronise).  NULL pointers are skipped.
 * params/adam_m/adam_v: num_params floats, packed (rt_param_info.pos);
 * buffers: num_buffers floats. */
rt_status rt_model_get_state(rt_model *m, float *params, float *adam_m, float *adam_v,
                             float *buffers, int64_t *step, char *err);
rt_status rt_model_set_state(rt_model *m, const float *params, const float *adam_m,
                             const float *adam_v, const float *buffers, const int64_t *step,
                             char *err);
int64_t rt_model_step(rt_model *m); /* synchronises on CUDA */

#ifdef __cplusplus
}
#endif

#endif
