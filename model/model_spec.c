/* model_spec.c — the model spec: the family names, defaults, checks, the
 * comparison a checkpoint needs, and the memory a spec takes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_build.h"
#include "rt_json.h"

const char *const rt_arch_names[RT_ARCH_COUNT] = {RT_ARCH_LIST(RT_NAME_STR_COMMA, )};
const char *const rt_act_names[RT_ACT_COUNT] = {"none", RT_ACT_LIST(RT_NAME_STR_COMMA, )};
const char *const rt_cont_norm_names[RT_CONT_NORM_COUNT] = {RT_CONT_NORM_LIST(RT_NAME_STR_COMMA, )};
const char *const rt_loss_names[RT_LOSS_COUNT] = {RT_LOSS_LIST(RT_NAME_STR_COMMA, )};
const char *const rt_head_names[RT_HEAD_COUNT] = {RT_HEAD_LIST(RT_NAME_STR_COMMA, )};
const char *const rt_task_names[RT_TASK_COUNT] = {RT_TASK_LIST(RT_NAME_STR_COMMA, )};
const char *const rt_optim_names[RT_OPTIM_COUNT] = {RT_OPTIM_LIST(RT_NAME_STR_COMMA, )};
const char *const rt_num_emb_names[RT_NUM_EMB_COUNT] = {RT_NUM_EMB_LIST(RT_NAME_STR_COMMA, )};
const char *const rt_tabm_variant_names[RT_TABM_VARIANT_COUNT] = {
    RT_TABM_VARIANT_LIST(RT_NAME_STR_COMMA, )};

/* rt_model_keys.h's keys: the index of name in LIST's names (-1: none),
 * their defaults, bounds (a float's against the bound as a float: 0.99 is
 * in [0, 0.99]), record and reading back */
#define NAMES(list) ((const char *const[]){list(RT_NAME_STR_COMMA, )})
#define COUNT(list) (0 list(RT_NAME_ONE, ))
int rt_model_name_index(const char *const *names, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (!strcmp(names[i], name))
            return i;
    return -1;
}
#define DEF_I(n, def, lo, hi, fam, help) s->n = def;
#define DEF_F(n, def, lo, hi, fam, help) s->n = (float)(def);
#define DEF_B(n, def, fam, help) s->n = def;
#define DEF_E(n, type, list, def, fam, help) \
    s->n = (type)rt_model_name_index(NAMES(list), COUNT(list), def);
#define CHECK_I(n, def, lo, hi, fam, help)                                                        \
    if (s->n < (lo) || s->n > (hi))                                                               \
        return rt_err(err, RT_ERR_INVALID, #n " %d is out of range [%g, %g]", s->n, (double)(lo), \
                      (double)(hi));
#define CHECK_F(n, def, lo, hi, fam, help)                                                  \
    if (!(s->n >= (float)(lo) && s->n <= (float)(hi)))                                      \
        return rt_err(err, RT_ERR_INVALID, #n " %g is out of range [%g, %g]", (double)s->n, \
                      (double)(lo), (double)(hi));
#define CHECK_B(n, def, fam, help)
#define CHECK_E(n, type, list, def, fam, help)   \
    if ((unsigned)s->n >= (unsigned)COUNT(list)) \
        return rt_err(err, RT_ERR_INVALID, "unknown " #n " %d", (int)s->n);
#define JSON_I(n, def, lo, hi, fam, help) rt_jw_kint(w, #n, s->n);
#define JSON_F(n, def, lo, hi, fam, help) rt_jw_knum(w, #n, s->n);
#define JSON_B(n, def, fam, help) rt_jw_kbool(w, #n, s->n);
#define JSON_E(n, type, list, def, fam, help) rt_jw_kstr(w, #n, NAMES(list)[s->n]);
#define READ_I(n, def, lo, hi, fam, help)                          \
    if ((x = rt_json_get(m, #n)) != NULL) {                        \
        if (!rt_json_int(x, &v) || v < INT32_MIN || v > INT32_MAX) \
            return #n;                                             \
        s->n = (int)v;                                             \
    }
#define READ_F(n, def, lo, hi, fam, help)         \
    if ((x = rt_json_get(m, #n)) != NULL) {       \
        if (rt_json_type_of(x) != RT_JSON_NUMBER) \
            return #n;                            \
        s->n = (float)rt_json_num(x, 0);          \
    }
#define READ_B(n, def, fam, help) s->n = rt_json_bool(rt_json_get(m, #n), s->n);
#define READ_E(n, type, list, def, fam, help)                                        \
    if ((x = rt_json_get(m, #n)) != NULL) {                                          \
        int e = rt_model_name_index(NAMES(list), COUNT(list), rt_json_str(x, NULL)); \
        if (e < 0)                                                                   \
            return #n;                                                               \
        s->n = (type)e;                                                              \
    }

void rt_model_spec_set_emb_dim(rt_model_spec *s, int d)
{
    for (int c = 0; c < RT_MODEL_MAX_CAT; c++)
        s->emb_dim[c] = d;
}

void rt_model_spec_defaults(rt_model_spec *s)
{
    memset(s, 0, sizeof *s);
    RT_MODEL_KEYS(DEF_I, DEF_F, DEF_B, DEF_E)
    s->arch = RT_ARCH_ROSSMANN;
    rt_model_spec_set_emb_dim(s, 10);
    s->cont_norm = RT_CONT_BATCHNORM;
    s->n_hidden = 4;
    s->hidden[0] = s->hidden[1] = s->hidden[2] = 1000;
    s->hidden[3] = 500;
    s->dropout[3] = 0.5f;
    s->activation = RT_ACT_RELU;
    s->head_scale = 1.0f;
    s->head = RT_HEAD_SCALED_SIGMOID;
    s->n_out = 1;
    s->loss = RT_LOSS_MAE;
    s->huber_delta = 1.0f;
    s->seed = 42;
}

/* The head, outputs and loss fit together (the trainer's errors name the
 * job's keys first; this is the model's own contract). */
static rt_status check_task(const rt_model_spec *s, char *err)
{
    const bool cls = s->loss == RT_LOSS_BCE || s->loss == RT_LOSS_CE;
    if (s->loss < 0 || s->loss >= RT_LOSS_COUNT || s->head < 0 || s->head >= RT_HEAD_COUNT)
        return rt_err(err, RT_ERR_INVALID, "unknown loss or head");
    if (cls && s->head != RT_HEAD_LINEAR)
        return rt_err(err, RT_ERR_INVALID, "loss %s needs the linear head (logits)",
                      rt_loss_names[s->loss]);
    if (s->loss == RT_LOSS_CE && (s->n_classes < 2 || s->n_out != s->n_classes))
        return rt_err(err, RT_ERR_INVALID,
                      "cross_entropy needs one output per class (%d "
                      "outputs, %d classes)",
                      s->n_out, s->n_classes);
    if (s->loss == RT_LOSS_BCE && (s->n_classes != 2 || s->n_out != 1))
        return rt_err(err, RT_ERR_INVALID, "bce needs two classes and one output (%d classes)",
                      s->n_classes);
    if (!cls && (s->n_out != 1 || s->n_classes != 0))
        return rt_err(err, RT_ERR_INVALID,
                      "loss %s is a regression loss (one output, no "
                      "classes)",
                      rt_loss_names[s->loss]);
    if (s->n_classes > RT_MODEL_MAX_CLASSES)
        return rt_err(err, RT_ERR_INVALID, "%d classes (at most %d)", s->n_classes,
                      RT_MODEL_MAX_CLASSES);
    if (!(s->huber_delta > 0.0f) || !(s->label_smoothing >= 0.0f && s->label_smoothing < 1.0f))
        return rt_err(err, RT_ERR_INVALID, "huber_delta must be > 0, label_smoothing in [0, 1)");
    for (int k = 0; s->class_weighted && k < s->n_classes; k++)
        if (!(s->class_weight[k] >= 0.0f) || !isfinite(s->class_weight[k]))
            return rt_err(err, RT_ERR_INVALID, "class weight %d is %g (a finite number >= 0)", k,
                          s->class_weight[k]);
    return RT_OK;
}

rt_status rt_model_spec_check(const rt_model_spec *s, char *err)
{
    if ((unsigned)s->arch >= RT_ARCH_COUNT)
        return rt_err(err, RT_ERR_INVALID, "unknown architecture %d", (int)s->arch);
    if (s->n_cat < 0 || s->n_cat > RT_MODEL_MAX_CAT)
        return rt_err(err, RT_ERR_INVALID, "%d categorical columns (at most %d)", s->n_cat,
                      RT_MODEL_MAX_CAT);
    if (s->n_cont < 0 || s->n_cont > RT_MODEL_MAX_CONT)
        return rt_err(err, RT_ERR_INVALID, "%d continuous columns (at most %d)", s->n_cont,
                      RT_MODEL_MAX_CONT);
    if (s->n_cat + s->n_cont == 0)
        return rt_err(err, RT_ERR_INVALID, "the model has no input columns");
    if ((unsigned)s->cont_norm >= RT_CONT_NORM_COUNT)
        return rt_err(err, RT_ERR_INVALID, "unknown continuous_norm %d", (int)s->cont_norm);
    int64_t values = 0;
    for (int c = 0; c < s->n_cat; c++) {
        if (s->vocab[c] < 1)
            return rt_err(err, RT_ERR_INVALID, "categorical column %d has an empty vocabulary", c);
        const bool ft = s->arch == RT_ARCH_FT_TRANSFORMER; /* d_token: checked with its family */
        const int d = ft ? s->d_token : s->emb_dim[c];
        if (!ft && (d < 1 || d > 1024))
            return rt_err(err, RT_ERR_INVALID, "embedding dimension %d is out of range [1, 1024]",
                          d);
        values += (int64_t)s->vocab[c] * d;
    }
    if (values > INT32_MAX)
        return rt_err(err, RT_ERR_INVALID, "embedding tables hold more than 2^31 values");
    if (s->cont_norm == RT_CONT_QUANTILE && s->n_cont > 0 &&
        (s->n_quantiles < 2 || s->n_quantiles > 1000))
        return rt_err(err, RT_ERR_INVALID,
                      "continuous_norm quantile with %d quantiles a column "
                      "(2 to 1000)",
                      s->n_quantiles);
    RT_MODEL_KEYS(CHECK_I, CHECK_F, CHECK_B, CHECK_E)
    if (s->numeric_embedding != RT_NUM_EMB_NONE && s->arch == RT_ARCH_ROSSMANN)
        return rt_err(err, RT_ERR_INVALID,
                      "numeric_embedding %s: rossmann takes its columns as they are",
                      rt_num_emb_names[s->numeric_embedding]);
    if (s->numeric_embedding != RT_NUM_EMB_NONE && (int64_t)s->n_cont * s->d_embedding > 1 << 20)
        return rt_err(err, RT_ERR_INVALID,
                      "numeric embeddings of %d columns of d_embedding %d: more than 2^20 "
                      "values a row",
                      s->n_cont, s->d_embedding);
    rt_status st = model_family_of(s->arch)->check(s, err);
    if (st != RT_OK)
        return st;
    if ((st = check_task(s, err)) != RT_OK)
        return st;
    if (!(s->head_scale > 0.0f))
        return rt_err(err, RT_ERR_INVALID, "head_scale %g must be > 0", (double)s->head_scale);
    return RT_OK;
}

bool rt_model_spec_same_net(const rt_model_spec *a, const rt_model_spec *b, char *why, size_t len)
{
    MB_DIFF(a->arch != b->arch, "architecture %s, the job's is %s", rt_arch_names[a->arch],
            rt_arch_names[b->arch]);
    MB_DIFF(a->n_cat != b->n_cat || a->n_cont != b->n_cont,
            "%d categorical and %d continuous columns, the job has %d and %d", a->n_cat, a->n_cont,
            b->n_cat, b->n_cont);
    for (int i = 0; i < a->n_cat; i++) {
        const char *an = rt_model_cat_name(a, i), *bn = rt_model_cat_name(b, i);
        MB_DIFF(a->vocab[i] != b->vocab[i] || strcmp(an, bn) != 0,
                "column %d is %s with %d values, the job's is %s with %d", i, an, a->vocab[i], bn,
                b->vocab[i]);
        MB_DIFF(a->arch != RT_ARCH_FT_TRANSFORMER && a->emb_dim[i] != b->emb_dim[i],
                "column %s has embeddings of %d, the job's %d", an, a->emb_dim[i], b->emb_dim[i]);
    }
    MB_DIFF(a->n_out != b->n_out || a->head != b->head, "%d output%s (head %s), the job's %d (%s)",
            a->n_out, a->n_out == 1 ? "" : "s", rt_head_names[a->head], b->n_out,
            rt_head_names[b->head]);
    MB_DIFF(
        a->numeric_embedding != b->numeric_embedding ||
            (a->numeric_embedding != RT_NUM_EMB_NONE &&
             (a->d_embedding != b->d_embedding ||
              (a->numeric_embedding == RT_NUM_EMB_PERIODIC && a->frequencies != b->frequencies) ||
              (a->numeric_embedding == RT_NUM_EMB_PLE && a->bins != b->bins))),
        "numeric_embedding %s (d_embedding %d, %d frequencies, %d bins), the job's %s (%d, "
        "%d, %d)",
        rt_num_emb_names[a->numeric_embedding], a->d_embedding, a->frequencies, a->bins,
        rt_num_emb_names[b->numeric_embedding], b->d_embedding, b->frequencies, b->bins);
    MB_DIFF(a->cont_norm == RT_CONT_QUANTILE && a->n_quantiles != b->n_quantiles,
            "%d quantiles a column, the job's dataset %d", a->n_quantiles, b->n_quantiles);
    MB_DIFF(a->cont_norm != b->cont_norm, "continuous_norm %s, the job's is %s",
            rt_cont_norm_names[a->cont_norm], rt_cont_norm_names[b->cont_norm]);
    return model_family_of(a->arch)->same_net(a, b, why, len);
}

rt_status rt_model_spec_memory(const rt_model_spec *spec, int64_t max_batch, const rt_kctx *ctx,
                               rt_model_memory *mem, char *err)
{
    memset(mem, 0, sizeof *mem);
    rt_status st = rt_model_spec_check(spec, err);
    if (st != RT_OK)
        return st;
    rt_model *m = calloc(1, sizeof *m);
    if (!m)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    m->spec = *spec;
    m->max_batch = max_batch;
    m->dev = ctx ? rt_kctx_device(ctx) : RT_DEVICE_CPU;
    m->dry = true; /* rt_model_create's buffers, counted, not allocated */
    if ((st = model_plan(m, err)) == RT_OK) {
        if (ctx && rt_kctx_bf16_store(ctx))
            model_plan_bf16(m);
        st = model_allocate(m);
        mem->params = m->n_params;
        mem->arena = m->arena;
        mem->param_bytes = m->param_bytes;
        mem->activation_bytes = m->alloc_bytes - mem->param_bytes;
        mem->total_bytes = m->alloc_bytes;
        mem->batch_norms = rt_model_batch_norms(m);
    }
    free(m->info);
    free(m->init);
    free(m->fan_in);
    free(m->emb_host);
    free(m->allocs);
    free(m);
    return st;
}

void rt_model_spec_json(const rt_model_spec *s, rt_jw *w)
{
    rt_jw_obj(w);
    rt_jw_kstr(w, "architecture", rt_arch_names[s->arch]);
    rt_jw_key(w, "categorical");
    rt_jw_arr(w);
    for (int i = 0; i < s->n_cat; i++) {
        rt_jw_obj(w);
        rt_jw_kstr(w, "name", rt_model_cat_name(s, i));
        rt_jw_kint(w, "vocab", s->vocab[i]);
        rt_jw_kint(w, "dim", s->emb_dim[i]);
        rt_jw_obj_end(w);
    }
    rt_jw_arr_end(w);
    rt_jw_kint(w, "n_cont", s->n_cont);
    rt_jw_kint(w, "embedding_dim", s->n_cat > 0 ? s->emb_dim[0] : 10);
    rt_jw_kint(w, "n_quantiles", s->n_quantiles);
    rt_jw_kstr(w, "continuous_norm", rt_cont_norm_names[s->cont_norm]);
    rt_jw_key(w, "hidden");
    rt_jw_arr(w);
    for (int i = 0; i < s->n_hidden; i++)
        rt_jw_int(w, s->hidden[i]);
    rt_jw_arr_end(w);
    rt_jw_key(w, "dropout");
    rt_jw_arr(w);
    for (int i = 0; i < RT_MODEL_MAX_HIDDEN; i++)
        rt_jw_num(w, s->dropout[i]);
    rt_jw_arr_end(w);
    rt_jw_key(w, "batch_norm");
    rt_jw_arr(w);
    for (int i = 0; i < RT_MODEL_MAX_HIDDEN; i++)
        rt_jw_bool(w, s->batch_norm[i]);
    rt_jw_arr_end(w);
    rt_jw_kstr(w, "activation", rt_act_names[s->activation]);
    RT_MODEL_KEYS(JSON_I, JSON_F, JSON_B, JSON_E)
    rt_jw_knum(w, "head_scale", s->head_scale);
    rt_jw_kint(w, "seed", (int64_t)s->seed);
    rt_jw_kstr(w, "head", rt_head_names[s->head]);
    rt_jw_kint(w, "n_out", s->n_out);
    rt_jw_kstr(w, "loss", rt_loss_names[s->loss]);
    rt_jw_knum(w, "huber_delta", s->huber_delta);
    rt_jw_knum(w, "label_smoothing", s->label_smoothing);
    rt_jw_kint(w, "n_classes", s->n_classes);
    if (s->class_weighted) {
        rt_jw_key(w, "class_weight");
        rt_jw_arr(w);
        for (int k = 0; k < s->n_classes; k++)
            rt_jw_num(w, s->class_weight[k]);
        rt_jw_arr_end(w);
    }
    rt_jw_kbool(w, "weighted", s->weighted);
    rt_jw_obj_end(w);
}

const char *rt_model_spec_keys_read(rt_model_spec *s, const rt_json *m)
{
    const rt_json *x;
    int64_t v;
    RT_MODEL_KEYS(READ_I, READ_F, READ_B, READ_E)
    return NULL;
}
