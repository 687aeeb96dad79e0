/* family_tabm.c — TabM (Gorishniy, Kotelnikov, Babenko, "TabM: Advancing
 * Tabular Deep Learning with Parameter-Efficient Ensembling", ICLR 2025;
 * the tabm package's formulas): k MLPs that share their weights, trained
 * at once.  The input is copied to the k members (member t of sample b is
 * row b·k + t of every tensor after it), so each shared layer is one GEMM
 * of k·B rows; the members differ by their adapters, their dropout masks
 * and their own output layers.
 *
 *   tabm  every block: BatchEnsemble's ((x ⊙ r_t) W) ⊙ s_t + b_t -> ReLU ->
 *         Dropout, with r_t, s_t, b_t member t's (k, width) adapters (the
 *         last four one layer, block_b/s);
 *         tabm_init: the first block's r random signs, every other r and s
 *         ones (the paper's TabM); false: every r and s random signs
 *         (BatchEnsemble's, the paper's TabM-naive)
 *   mini  one adapter: x ⊙ r_t (random signs) before the first block, then
 *         the plain shared blocks Linear -> ReLU -> Dropout (TabM-mini)
 *
 * then member t's output layer Linear(width, n_out) and the head.  The
 * training loss is the mean of the members' losses (rt_model_loss); the
 * prediction their mean — of the probabilities for a classification, as
 * logits (rt_k_ens_reduce). */
#include <stdio.h>

#include "model_build.h"

/* x ⊙ r[member] (+ b[member]): the layer `name` with its (k, D) tensor
 * `scale` initialised by init, and `bias` (initialised as a dense bias of
 * fan_in inputs) when not NULL; then, with act RT_ACT_RELU, the ReLU and a
 * dropout of `rate` in the same pass (rt_k_scale_act_fwd; the dropout's RNG
 * stream where a dropout layer after it would have had it). */
static mslot ens_scale(mplan *p, const char *name, mslot x, const char *scale, init_kind init,
                       const char *bias, int64_t fan_in, rt_act act, float rate)
{
    const int64_t k = p->m->ens_k, D = x.cols;
    mslot o = mb_whole(p, mb_tensor(p, k, D));
    mlayer *L = mb_layer(p, L_ENS_SCALE, name, o);
    mb_input(L, x);
    mb_param(p, L, scale, k, D, init, 0, 0.0f);
    if (bias)
        mb_param(p, L, bias, k, D, INIT_FAN_IN, fan_in, 0.0f);
    L->act = act;
    if (rate > 0.0f) {
        L->rate = rate;
        L->stream = mb_next_stream(p);
    }
    return o;
}

static void plan_tabm(mplan *p)
{
    rt_model *m = p->m;
    const rt_model_spec *s = &m->spec;
    const int64_t k = s->ensemble_size, w = s->width;
    const bool mini = s->variant == RT_TABM_MINI;
    m->ens_k = k;
    mslot in = mb_input_block(p, false);
    mslot x = mb_whole(p, mb_tensor(p, k, in.cols));
    mlayer *L = mb_layer(p, L_ENS_REPEAT, "ensemble", x);
    mb_input(L, in);
    if (mini)
        x = ens_scale(p, "ensemble/r", x, "ensemble/r", INIT_SIGNS, NULL, 0, RT_ACT_NONE, 0.0f);
    char name[48], t1[48], t2[48];
    for (int b = 1; b <= s->blocks; b++) {
        if (mini) {
            snprintf(name, sizeof name, "block_%d/linear", b);
            x = mb_linear(p, name, x, w, RT_ACT_RELU, false, s->l2, MB_NO_SLOT);
            snprintf(name, sizeof name, "block_%d/dropout", b);
            mb_dropout(p, name, x, s->dropout[b - 1]);
            continue;
        }
        /* tensors block_b/r, block_b/linear/kernel, block_b/s, block_b/bias;
         * the layer block_b/s is the scale, the bias, the ReLU and the
         * dropout (one pass over the k·B rows each way) */
        const int64_t fan_in = x.cols;
        snprintf(name, sizeof name, "block_%d/r", b);
        x = ens_scale(p, name, x, name, b == 1 || !s->tabm_init ? INIT_SIGNS : INIT_ONE, NULL, 0,
                      RT_ACT_NONE, 0.0f);
        snprintf(name, sizeof name, "block_%d/linear", b);
        x = mb_linear_nobias(p, name, x, w, s->l2);
        snprintf(t1, sizeof t1, "block_%d/s", b);
        snprintf(t2, sizeof t2, "block_%d/bias", b);
        x = ens_scale(p, t1, x, t1, s->tabm_init ? INIT_ONE : INIT_SIGNS, t2, fan_in, RT_ACT_RELU,
                      s->dropout[b - 1]);
    }
    /* each member's output layer: (k * n_out, width) kernels, (k, n_out) biases */
    mslot z = mb_whole(p, mb_tensor(p, k, s->n_out));
    L = mb_layer(p, L_TOKEN_LINEAR, "output", z);
    mb_input(L, x);
    mb_param(p, L, "/kernel", k * s->n_out, w, INIT_FAN_IN, w, 0.0f);
    mb_param(p, L, "/bias", k, s->n_out, INIT_FAN_IN, w, 0.0f);
    mb_head(p, z); /* per member: the members' predictions are what the loss reads */
    mslot pred = mb_whole(p, mb_tensor(p, 1, s->n_out));
    L = mb_layer(p, L_ENS_MEAN, "mean", pred);
    mb_input(L, mb_whole(p, m->t_loss));
    L->ens = s->loss == RT_LOSS_CE    ? RT_ENS_SOFTMAX
             : s->loss == RT_LOSS_BCE ? RT_ENS_SIGMOID
                                      : RT_ENS_MEAN;
    m->t_pred = pred.t;
}

static rt_status check_tabm(const rt_model_spec *s, char *err)
{
    /* the keys' own bounds: rt_model_spec_check (rt_model_keys.h); one
     * dropout rate per block */
    if (s->blocks > RT_MODEL_MAX_HIDDEN)
        return rt_err(err, RT_ERR_INVALID, "tabm: %d blocks (1 to %d)", s->blocks,
                      RT_MODEL_MAX_HIDDEN);
    for (int l = 0; l < s->blocks; l++)
        if (!mb_rate_ok(s->dropout[l]))
            return rt_err(err, RT_ERR_INVALID, "dropout %g is out of range [0, 1)", s->dropout[l]);
    return RT_OK;
}

static bool same_tabm(const rt_model_spec *a, const rt_model_spec *b, char *why, size_t len)
{
    MB_DIFF(a->blocks != b->blocks || a->width != b->width ||
                a->ensemble_size != b->ensemble_size || a->variant != b->variant,
            "%d blocks of width %d, %d members (%s), the job's %d of %d, %d (%s)", a->blocks,
            a->width, a->ensemble_size, rt_tabm_variant_names[a->variant], b->blocks, b->width,
            b->ensemble_size, rt_tabm_variant_names[b->variant]);
    return true;
}

const model_family model_family_tabm = {
    .arch = RT_ARCH_TABM,
    .plan = plan_tabm,
    .check = check_tabm,
    .same_net = same_tabm,
};
