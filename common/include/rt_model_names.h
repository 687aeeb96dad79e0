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

/* The model families (rt_model.h; [model] architecture). */
#define RT_ARCH_LIST(X, S)                                                                         \
    X(RT_ARCH_ROSSMANN, "rossmann") S X(RT_ARCH_MLP, "mlp") S X(RT_ARCH_RESNET, "resnet")         \
    S X(RT_ARCH_DCN2, "dcn2") S X(RT_ARCH_FT_TRANSFORMER, "ft_transformer")
typedef enum rt_arch { RT_ARCH_LIST(RT_NAME_ID, ) RT_ARCH_COUNT } rt_arch;
#define RT_ARCH_CHOICES RT_ARCH_LIST(RT_NAME_STR, "|")

/* Activations (rt_kernels.h): none, then those [model] activation takes
 * (its choice i is rt_act i + 1). */
#define RT_ACT_LIST(X, S)                                                                          \
    X(RT_ACT_RELU, "relu") S X(RT_ACT_GELU, "gelu") S X(RT_ACT_SILU, "silu") S X(RT_ACT_TANH, "tanh")
typedef enum rt_act { RT_ACT_NONE = 0, RT_ACT_LIST(RT_NAME_ID, ) RT_ACT_COUNT } rt_act;
#define RT_ACT_CHOICES RT_ACT_LIST(RT_NAME_STR, "|")

/* How continuous inputs enter the model ([model] continuous_norm): a
 * batch-norm layer, fixed (x - mean) / std with the training rows'
 * statistics, or as they are. */
#define RT_CONT_NORM_LIST(X, S)                                                                    \
    X(RT_CONT_BATCHNORM, "batchnorm") S X(RT_CONT_STANDARDIZE, "standardize")                     \
    S X(RT_CONT_NONE, "none")
typedef enum rt_cont_norm { RT_CONT_NORM_LIST(RT_NAME_ID, ) RT_CONT_NORM_COUNT } rt_cont_norm;
#define RT_CONT_NORM_CHOICES RT_CONT_NORM_LIST(RT_NAME_STR, "|")

#endif
