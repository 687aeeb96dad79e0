/* family_resnet.c — rtdl's ResNet (Gorishniy et al. 2021): Linear ->
 * [BatchNorm -> Linear -> ReLU -> Dropout -> Linear -> Dropout, + skip] x
 * blocks -> BatchNorm -> ReLU -> Linear. */
#include <stdio.h>

#include "model_build.h"

static void plan_resnet(mplan *p)
{
    const rt_model_spec *s = &p->m->spec;
    const int64_t w = s->width, hid = (int64_t)((double)s->width * s->hidden_multiplier);
    mslot x = mb_linear(p, "first_layer", mb_input_block(p, false), w, RT_ACT_NONE, false, s->l2,
                        MB_NO_SLOT);
    char name[48];
    for (int b = 1; b <= s->blocks; b++) {
        snprintf(name, sizeof name, "block_%d/norm", b);
        mslot z = mb_batchnorm(p, name, x);
        snprintf(name, sizeof name, "block_%d/linear_first", b);
        z = mb_linear(p, name, z, hid, RT_ACT_RELU, false, s->l2, MB_NO_SLOT);
        snprintf(name, sizeof name, "block_%d/dropout_first", b);
        mb_dropout(p, name, z, s->dropout1);
        snprintf(name, sizeof name, "block_%d/linear_second", b);
        z = mb_linear(p, name, z, w, RT_ACT_NONE, false, s->l2, MB_NO_SLOT);
        snprintf(name, sizeof name, "block_%d/dropout_second", b);
        mb_dropout(p, name, z, s->dropout2);
        snprintf(name, sizeof name, "block_%d/add", b);
        x = mb_add(p, name, x, z);
    }
    x = mb_act_layer(p, "head/relu", mb_batchnorm(p, "head/norm", x), RT_ACT_RELU);
    mb_head(p, mb_linear(p, "output", x, p->m->spec.n_out, RT_ACT_NONE, false, 0.0f, MB_NO_SLOT));
}

static rt_status check_resnet(const rt_model_spec *s, char *err)
{
    /* the keys' own bounds: rt_model_spec_check (rt_model_keys.h) */
    if ((int64_t)(s->width * s->hidden_multiplier) < 1 || s->width * s->hidden_multiplier > 65536)
        return rt_err(err, RT_ERR_INVALID,
                      "resnet: width %d x hidden_multiplier %g is not "
                      "a layer width (1 to 65536)",
                      s->width, s->hidden_multiplier);
    return RT_OK;
}

static bool same_resnet(const rt_model_spec *a, const rt_model_spec *b, char *why, size_t len)
{
    MB_DIFF(a->blocks != b->blocks || a->width != b->width ||
                (int64_t)(a->width * a->hidden_multiplier) !=
                    (int64_t)(b->width * b->hidden_multiplier),
            "%d blocks of width %d (hidden %lld), the job's %d of %d (hidden %lld)", a->blocks,
            a->width, (long long)(a->width * a->hidden_multiplier), b->blocks, b->width,
            (long long)(b->width * b->hidden_multiplier));
    return true;
}

const model_family model_family_resnet = {
    .arch = RT_ARCH_RESNET,
    .plan = plan_resnet,
    .check = check_resnet,
    .same_net = same_resnet,
};
