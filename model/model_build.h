/* model_build.h — private to model/: what a family's file uses to expand
 * a spec into layers (model_plan.c implements it) and the family
 * descriptor each family_*.c defines.
 *
 * A family is one file: its descriptor names the family, expands the spec
 * into layers with the builders below (plan), checks the family's own keys
 * (check) and names the first difference that makes two specs different
 * networks (same_net).  families.c registers the descriptors by rt_arch.
 * The builders record the first failure in the plan (reported once at the
 * end), so a family's plan is straight-line code. */
#ifndef RT_MODEL_BUILD_H
#define RT_MODEL_BUILD_H

#include "model_impl.h"

/* The builder's state: errors are kept and reported once at the end. */
typedef struct mplan {
    rt_model *m;
    rt_param_info *buf; /* the non-trainable values, appended after the plan */
    int nbuf, buf_cap;
    bool failed;
    char why[RT_ERR_LEN];
    bool adjacent; /* the next tensor follows the last without alignment */
    mlayer spare;  /* what a layer past the limit is written to (the plan fails) */
} mplan;

/* "No slot": a builder's `to` argument meaning "a new tensor". */
#define MB_NO_SLOT ((mslot){-1, 0, 0, -1})

void mb_fail(mplan *p, const char *what);
/* A new tensor of tpr rows per sample and cols columns; its whole slot, a
 * column range of it. */
int mb_tensor(mplan *p, int64_t tpr, int64_t cols);
mslot mb_whole(const mplan *p, int t);
mslot mb_colrange(int t, int64_t c0, int64_t n);
/* A layer of kind k writing out; its inputs are added with mb_input. */
mlayer *mb_layer(mplan *p, layer_kind k, const char *name, mslot out);
void mb_input(mlayer *L, mslot s);
/* A trainable tensor of L: rows x cols in the arena, initialised by init
 * (fan_in for INIT_FAN_IN), with an L2 coefficient; suffix "/kernel" is
 * the decayed group.  A suffix not starting with '/' is the whole name. */
void mb_param(mplan *p, mlayer *L, const char *suffix, int64_t rows, int64_t cols, init_kind init,
              int64_t fan_in, float l2);
/* Non-trainable values of L (moving statistics), `count` floats. */
void mb_buffer(mplan *p, mlayer *L, const char *suffix, int64_t count);
/* The next dropout RNG stream. */
uint32_t mb_next_stream(mplan *p);

/* ---- layers --------------------------------------------------------------------------- */

/* In-place dropout on s (nothing when rate is 0). */
void mb_dropout(mplan *p, const char *name, mslot s, float rate);
/* Dense layer from in to a new tensor (or the slot `to` when to.t >= 0);
 * keras: Glorot kernel and zero bias, else PyTorch's fan-in init. */
mslot mb_linear(mplan *p, const char *name, mslot in, int64_t out, rt_act act, bool keras, float l2,
                mslot to);
/* The same without a bias (TabM's shared layers: their adapters add one). */
mslot mb_linear_nobias(mplan *p, const char *name, mslot in, int64_t out, float l2);
mslot mb_batchnorm(mplan *p, const char *name, mslot in);
mslot mb_layernorm(mplan *p, const char *name, mslot in);
mslot mb_act_layer(mplan *p, const char *name, mslot in, rt_act act);
mslot mb_add(mplan *p, const char *name, mslot a, mslot b);
/* The continuous inputs as the spec normalises them, into `to` (a column
 * range) or a new tensor. */
mslot mb_cont_block(mplan *p, mslot to);
/* The embedding tables of every categorical column, adjacent in the arena;
 * ooff[c]: column c's offset within the consumer's row. */
void mb_embedding_tables(mplan *p, mlayer *L, const int64_t *ooff, bool keras);
/* Embeddings and continuous inputs side by side in one tensor. */
mslot mb_input_block(mplan *p, bool keras);
/* The continuous columns embedded as numeric_embedding says, d values
 * each, in a new tensor of n_cont * d columns. */
mslot mb_num_embedding(mplan *p, int64_t d);
/* The head on the output layer's slot (sets the model's prediction). */
void mb_head(mplan *p, mslot z);

/* ---- families ------------------------------------------------------------------------- */

typedef struct model_family {
    rt_arch arch;
    void (*plan)(mplan *p);
    /* the family's keys of a spec; RT_ERR_INVALID with a sentence */
    rt_status (*check)(const rt_model_spec *s, char *err);
    /* false with the first difference (a's, then b's) in why */
    bool (*same_net)(const rt_model_spec *a, const rt_model_spec *b, char *why, size_t len);
} model_family;

/* The hidden-layer keys rossmann and mlp share (family_mlp.c). */
rt_status mb_check_hidden(const rt_model_spec *s, char *err);
bool mb_same_hidden(const rt_model_spec *a, const rt_model_spec *b, char *why, size_t len);

/* The family of an architecture (NULL for an unknown one). */
const model_family *model_family_of(rt_arch arch);

/* The helpers of same_net: DIFF(cond, fmt, ...) returns false with the
 * sentence when cond holds. */
#define MB_DIFF(cond, ...)                   \
    do {                                     \
        if (cond) {                          \
            snprintf(why, len, __VA_ARGS__); \
            return false;                    \
        }                                    \
    } while (0)
static inline bool mb_rate_ok(float r) { return r >= 0.0f && r < 1.0f; }

#endif
