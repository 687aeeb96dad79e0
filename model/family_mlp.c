/* family_mlp.c — rtdl's MLP (Gorishniy et al. 2021) with fastai's order
 * inside a layer: the inputs -> [Dense -> activation -> (BatchNorm) ->
 * Dropout] x k -> Dense(n_out).  Its hidden-layer keys (hidden, dropout,
 * batch_norm, activation) are rossmann's too: their checks are here. */
#include <stdio.h>

#include "model_build.h"

static void plan_mlp(mplan *p)
{
    const rt_model_spec *s = &p->m->spec;
    mslot x = mb_input_block(p, false);
    char name[48];
    for (int l = 0; l < s->n_hidden; l++) {
        snprintf(name, sizeof name, "dense_%d", l + 1);
        bool fuse = s->activation == RT_ACT_RELU;
        x = mb_linear(p, name, x, s->hidden[l], fuse ? RT_ACT_RELU : RT_ACT_NONE, false, s->l2,
                      MB_NO_SLOT);
        if (!fuse) {
            snprintf(name, sizeof name, "dense_%d/act", l + 1);
            x = mb_act_layer(p, name, x, s->activation);
        }
        if (s->batch_norm[l]) {
            snprintf(name, sizeof name, "dense_%d/bn", l + 1);
            x = mb_batchnorm(p, name, x);
        }
        snprintf(name, sizeof name, "dense_%d/dropout", l + 1);
        mb_dropout(p, name, x, s->dropout[l]);
    }
    mb_head(p, mb_linear(p, "output", x, p->m->spec.n_out, RT_ACT_NONE, false, 0.0f, MB_NO_SLOT));
}

rt_status mb_check_hidden(const rt_model_spec *s, char *err)
{
    if (s->n_hidden < 1 || s->n_hidden > RT_MODEL_MAX_HIDDEN)
        return rt_err(err, RT_ERR_INVALID, "%d hidden layers (1 to %d)", s->n_hidden,
                      RT_MODEL_MAX_HIDDEN);
    for (int l = 0; l < s->n_hidden; l++) {
        if (s->hidden[l] < 1 || s->hidden[l] > 65536)
            return rt_err(err, RT_ERR_INVALID, "hidden layer %d has %d units (1 to 65536)", l + 1,
                          s->hidden[l]);
        if (!mb_rate_ok(s->dropout[l]))
            return rt_err(err, RT_ERR_INVALID, "dropout %g is out of range [0, 1)", s->dropout[l]);
    }
    if (s->activation < RT_ACT_RELU || s->activation > RT_ACT_TANH)
        return rt_err(err, RT_ERR_INVALID, "unknown activation %d", (int)s->activation);
    return RT_OK;
}

bool mb_same_hidden(const rt_model_spec *a, const rt_model_spec *b, char *why, size_t len)
{
    MB_DIFF(a->n_hidden != b->n_hidden, "%d hidden layers, the job has %d", a->n_hidden,
            b->n_hidden);
    for (int i = 0; i < a->n_hidden; i++) {
        MB_DIFF(a->hidden[i] != b->hidden[i], "hidden layer %d has %d units, the job's %d", i + 1,
                a->hidden[i], b->hidden[i]);
        MB_DIFF(a->arch == RT_ARCH_MLP && a->batch_norm[i] != b->batch_norm[i],
                "hidden layer %d %s batch norm, the job's %s", i + 1,
                a->batch_norm[i] ? "has" : "has no", b->batch_norm[i] ? "has" : "has none");
    }
    MB_DIFF(a->arch == RT_ARCH_MLP && a->activation != b->activation,
            "activation %s, the job's is %s", rt_act_names[a->activation],
            rt_act_names[b->activation]);
    return true;
}

const model_family model_family_mlp = {
    .arch = RT_ARCH_MLP,
    .plan = plan_mlp,
    .check = mb_check_hidden,
    .same_net = mb_same_hidden,
};
