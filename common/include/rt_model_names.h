/* rt_model_names.h — the model's enumerations and their names, each
 * written once as a list: the kernels (rt_kernels.h, rt_model.h) take the
 * enums, the job-file schema its choices ("a|b|c"), checkpoints and
 * summaries the names (rt_model.h's tables).
 *
 *   RT_ARCH_LIST(X, S) expands X(id, "name") for each entry, S between
 *   entries: RT_ARCH_LIST(RT_NAME_ID, ) is the enum's body, and
 *   RT_ARCH_LIST(RT_NAME_STR, "|") the string "rossmann|mlp|...". */
#ifndef RT_MODEL_NAMES_H
#define RT_MODEL_NAMES_H

#define RT_NAME_ID(id, name) id,
#define RT_NAME_STR(id, name) name
#define RT_NAME_STR_COMMA(id, name) name,
#define RT_NAME_ONE(id, name) +1

/* The model families (rt_model.h; [model] architecture). */
#define RT_ARCH_LIST(X, S)                                                               \
    X(RT_ARCH_ROSSMANN, "rossmann")                                                      \
    S X(RT_ARCH_MLP, "mlp") S X(RT_ARCH_RESNET, "resnet") S X(RT_ARCH_DCN2, "dcn2") S X( \
        RT_ARCH_FT_TRANSFORMER, "ft_transformer") S                                      \
    X(RT_ARCH_TABM, "tabm")
typedef enum rt_arch { RT_ARCH_LIST(RT_NAME_ID, ) RT_ARCH_COUNT } rt_arch;
#define RT_ARCH_CHOICES RT_ARCH_LIST(RT_NAME_STR, "|")

/* Embeddings of the numeric columns ([model] numeric_embedding; Gorishniy
 * et al. 2022): none (the values themselves), linear (x w_i + b_i per
 * column), periodic (PLR: cos and sin of 2π f x, a linear layer per
 * column, ReLU). */
/* clang-format off */
#define RT_NUM_EMB_LIST(X, S)                                         \
    X(RT_NUM_EMB_NONE, "none") S                                      \
    X(RT_NUM_EMB_LINEAR, "linear") S                                  \
    X(RT_NUM_EMB_PERIODIC, "periodic") S                              \
    X(RT_NUM_EMB_PLE, "piecewise_linear")
/* clang-format on */
typedef enum rt_num_emb { RT_NUM_EMB_LIST(RT_NAME_ID, ) RT_NUM_EMB_COUNT } rt_num_emb;
#define RT_NUM_EMB_CHOICES RT_NUM_EMB_LIST(RT_NAME_STR, "|")

/* TabM's variants ([model] variant): BatchEnsemble adapters in every
 * layer, or one scaling before the first (TabM-mini). */
#define RT_TABM_VARIANT_LIST(X, S) X(RT_TABM_FULL, "tabm") S X(RT_TABM_MINI, "mini")
typedef enum rt_tabm_variant {
    RT_TABM_VARIANT_LIST(RT_NAME_ID, ) RT_TABM_VARIANT_COUNT
} rt_tabm_variant;
#define RT_TABM_VARIANT_CHOICES RT_TABM_VARIANT_LIST(RT_NAME_STR, "|")

/* Activations (rt_kernels.h): none, then those [model] activation takes
 * (its choice i is rt_act i + 1). */
#define RT_ACT_LIST(X, S)                                                                          \
    X(RT_ACT_RELU, "relu") S X(RT_ACT_GELU, "gelu") S X(RT_ACT_SILU, "silu") S X(RT_ACT_TANH, "tanh")
typedef enum rt_act { RT_ACT_NONE = 0, RT_ACT_LIST(RT_NAME_ID, ) RT_ACT_COUNT } rt_act;
#define RT_ACT_CHOICES RT_ACT_LIST(RT_NAME_STR, "|")

/* How continuous inputs enter the model ([model] continuous_norm): a
 * batch-norm layer, fixed (x - mean) / std with the training rows'
 * statistics, or as they are. */
/* clang-format off */
#define RT_CONT_NORM_LIST(X, S)                                       \
    X(RT_CONT_BATCHNORM, "batchnorm") S                               \
    X(RT_CONT_STANDARDIZE, "standardize") S                           \
    X(RT_CONT_NONE, "none") S                                         \
    X(RT_CONT_QUANTILE, "quantile") S                                 \
    X(RT_CONT_ROBUST, "robust")
/* clang-format on */
typedef enum rt_cont_norm { RT_CONT_NORM_LIST(RT_NAME_ID, ) RT_CONT_NORM_COUNT } rt_cont_norm;
#define RT_CONT_NORM_CHOICES RT_CONT_NORM_LIST(RT_NAME_STR, "|")

/* Tasks (the dataset's manifest; [train] loss must fit it). */
#define RT_TASK_LIST(X, S)                                                                         \
    X(RT_TASK_REGRESSION, "regression") S X(RT_TASK_BINARY, "binary")                             \
    S X(RT_TASK_MULTICLASS, "multiclass")
typedef enum rt_task { RT_TASK_LIST(RT_NAME_ID, ) RT_TASK_COUNT } rt_task;
#define RT_TASK_CHOICES RT_TASK_LIST(RT_NAME_STR, "|")

/* Losses ([train] loss; rt_k_loss): regression's four, binary's, multiclass's. */
#define RT_LOSS_LIST(X, S)                                                                         \
    X(RT_LOSS_MAE, "mae") S X(RT_LOSS_MSE, "mse") S X(RT_LOSS_HUBER, "huber")                     \
    S X(RT_LOSS_POISSON, "poisson") S X(RT_LOSS_BCE, "bce") S X(RT_LOSS_CE, "cross_entropy")
typedef enum rt_loss { RT_LOSS_LIST(RT_NAME_ID, ) RT_LOSS_COUNT } rt_loss;
#define RT_LOSS_CHOICES RT_LOSS_LIST(RT_NAME_STR, "|")

/* The output layer's head ([model] head): the Rossmann scale * sigmoid(z),
 * or z itself (logits for classification). */
#define RT_HEAD_LIST(X, S) X(RT_HEAD_SCALED_SIGMOID, "scaled_sigmoid") S X(RT_HEAD_LINEAR, "linear")
typedef enum rt_head { RT_HEAD_LIST(RT_NAME_ID, ) RT_HEAD_COUNT } rt_head;
#define RT_HEAD_CHOICES RT_HEAD_LIST(RT_NAME_STR, "|")

/* Optimizers ([train] optimizer; rt_k_optim). */
#define RT_OPTIM_LIST(X, S) X(RT_OPTIM_ADAM, "adam") S X(RT_OPTIM_ADAMW, "adamw") S X(RT_OPTIM_SGD, "sgd")
typedef enum rt_optim { RT_OPTIM_LIST(RT_NAME_ID, ) RT_OPTIM_COUNT } rt_optim;
#define RT_OPTIM_CHOICES RT_OPTIM_LIST(RT_NAME_STR, "|")

/* Validation metrics ([train] metrics; monitor = val_ and a name):
 * classification's, then regression's, as X(id, "name", higher) with
 * higher 1 where a larger value is better (monitor_mode = auto).  The
 * ranking ones (average_precision, *_at_k) rank the rows by the positive
 * class's probability: binary tasks only ([train] at_k says k). */
/* clang-format off */
#define RT_CLS_METRIC_LIST(X, S)                                      \
    X(RT_METRIC_ACCURACY, "accuracy", 1) S                            \
    X(RT_METRIC_BALANCED_ACCURACY, "balanced_accuracy", 1) S          \
    X(RT_METRIC_MACRO_F1, "macro_f1", 1) S                            \
    X(RT_METRIC_LOG_LOSS, "log_loss", 0) S                            \
    X(RT_METRIC_AUC, "auc", 1) S                                      \
    X(RT_METRIC_AVERAGE_PRECISION, "average_precision", 1) S          \
    X(RT_METRIC_PRECISION_AT_K, "precision_at_k", 1) S                \
    X(RT_METRIC_RECALL_AT_K, "recall_at_k", 1) S                      \
    X(RT_METRIC_HITS_AT_K, "hits_at_k", 1)
#define RT_REG_METRIC_LIST(X, S)                                      \
    X(RT_METRIC_RMSE, "rmse", 0) S                                    \
    X(RT_METRIC_MAE, "mae", 0) S                                      \
    X(RT_METRIC_R2, "r2", 1) S                                        \
    X(RT_METRIC_EXP_RMSPE, "exp_rmspe", 0)
/* clang-format on */
#define RT_METRIC_ID(id, name, higher) id,
#define RT_METRIC_STR(id, name, higher) name
#define RT_METRIC_STR_COMMA(id, name, higher) name,
#define RT_METRIC_HIGHER(id, name, higher) higher,
#define RT_METRIC_ONE(id, name, higher) +1
#define RT_METRIC_HIGHER_NAME(id, name, higher) ((higher) ? name : NULL),
/* "name, " for each metric better higher */
#define RT_METRIC_HIGHER_STR(id, name, higher) RT_METRIC_HIGHER_STR_##higher(name)
#define RT_METRIC_HIGHER_STR_1(name) name ", "
#define RT_METRIC_HIGHER_STR_0(name)
typedef enum rt_metric {
    RT_CLS_METRIC_LIST(RT_METRIC_ID, ) RT_REG_METRIC_LIST(RT_METRIC_ID, ) RT_METRIC_COUNT
} rt_metric;
enum { RT_CLS_METRIC_COUNT = 0 RT_CLS_METRIC_LIST(RT_METRIC_ONE, ) };
#define RT_CLS_METRICS RT_CLS_METRIC_LIST(RT_METRIC_STR, ", ")
#define RT_REG_METRICS RT_REG_METRIC_LIST(RT_METRIC_STR, ", ")
#define RT_HIGHER_METRICS \
    RT_CLS_METRIC_LIST(RT_METRIC_HIGHER_STR, ) RT_REG_METRIC_LIST(RT_METRIC_HIGHER_STR, )

#endif
