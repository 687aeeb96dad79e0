/* family_rossmann.c — Horovod's Rossmann Keras model (the default family):
 * embeddings and the batch-normalised continuous inputs, concatenated ->
 * Dense+ReLU x k -> Dropout -> Dense(1) -> scale * sigmoid.  Its parameter
 * order, names and Keras initialisers are the model's before the layer
 * graph, so its checkpoints and results are unchanged.  Its keys are mlp's
 * hidden list and one dropout rate (after the last hidden layer). */
#include <stdio.h>

#include "model_build.h"

static void plan_rossmann(mplan *p)
{
    const rt_model_spec *s = &p->m->spec;
    mslot x = mb_input_block(p, true);
    char name[32];
    for (int l = 0; l < s->n_hidden; l++) {
        snprintf(name, sizeof name, "dense_%d", l + 1);
        x = mb_linear(p, name, x, s->hidden[l], RT_ACT_RELU, true, s->l2, MB_NO_SLOT);
    }
    mb_dropout(p, "dropout", x, s->dropout[s->n_hidden - 1]);
    mb_head(p, mb_linear(p, "output", x, p->m->spec.n_out, RT_ACT_NONE, true, 0.0f, MB_NO_SLOT));
}

const model_family model_family_rossmann = {
    .arch = RT_ARCH_ROSSMANN,
    .plan = plan_rossmann,
    .check = mb_check_hidden,
    .same_net = mb_same_hidden,
};
