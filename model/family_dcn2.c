/* family_dcn2.c — DCN-V2 as Gorishniy et al. 2021's code has it: a first
 * Linear, cross layers x0 * (W x + b) + x, and deep layers stacked on them
 * or beside them (their outputs concatenated), then Linear. */
#include <stdio.h>

#include "model_build.h"

static void plan_dcn2(mplan *p)
{
    const rt_model_spec *s = &p->m->spec;
    const int64_t w = s->width;
    mslot x0 = mb_linear(p, "first_linear", mb_input_block(p, false), w, RT_ACT_NONE, false, s->l2,
                         MB_NO_SLOT);
    /* side by side: the last cross layer and the last deep layer write halves of one tensor */
    const bool side = !s->stacked;
    const int cat = side ? mb_tensor(p, 1, 2 * w) : -1;
    mslot x = x0;
    char name[48];
    for (int c = 1; c <= s->cross_layers; c++) {
        snprintf(name, sizeof name, "cross_%d/linear", c);
        mslot u = mb_linear(p, name, x, w, RT_ACT_NONE, false, s->l2, MB_NO_SLOT);
        mslot o =
            side && c == s->cross_layers ? mb_colrange(cat, 0, w) : mb_whole(p, mb_tensor(p, 1, w));
        snprintf(name, sizeof name, "cross_%d", c);
        mlayer *L = mb_layer(p, L_CROSS, name, o);
        mb_input(L, x0);
        mb_input(L, u);
        mb_input(L, x);
        L->rate = s->cross_dropout;
        L->stream = s->cross_dropout > 0 ? mb_next_stream(p) : 0;
        x = o;
    }
    if (side && s->cross_layers == 0) { /* the cross network is the identity */
        mlayer *L = mb_layer(p, L_COPY, "cross", mb_colrange(cat, 0, w));
        mb_input(L, x0);
    }
    mslot d = side ? x0 : x;
    for (int l = 1; l <= s->deep_layers; l++) {
        snprintf(name, sizeof name, "deep_%d", l);
        mslot to = side && l == s->deep_layers ? mb_colrange(cat, w, w) : MB_NO_SLOT;
        d = mb_linear(p, name, d, w, RT_ACT_RELU, false, s->l2, to);
        snprintf(name, sizeof name, "deep_%d/dropout", l);
        mb_dropout(p, name, d, s->dropout[l - 1]);
    }
    if (side && s->deep_layers == 0) {
        mlayer *L = mb_layer(p, L_COPY, "deep", mb_colrange(cat, w, w));
        mb_input(L, x0);
    }
    mb_head(p, mb_linear(p, "output", side ? mb_whole(p, cat) : d, p->m->spec.n_out, RT_ACT_NONE,
                         false, 0.0f, MB_NO_SLOT));
}

static rt_status check_dcn2(const rt_model_spec *s, char *err)
{
    /* the keys' own bounds: rt_model_spec_check (rt_model_keys.h) */
    for (int l = 0; l < s->deep_layers; l++)
        if (!mb_rate_ok(s->dropout[l]))
            return rt_err(err, RT_ERR_INVALID, "dropout %g is out of range [0, 1)", s->dropout[l]);
    return RT_OK;
}

static bool same_dcn2(const rt_model_spec *a, const rt_model_spec *b, char *why, size_t len)
{
    MB_DIFF(a->width != b->width || a->cross_layers != b->cross_layers ||
                a->deep_layers != b->deep_layers || a->stacked != b->stacked,
            "width %d, %d cross and %d deep layers %s, the job's width %d, %d and %d %s", a->width,
            a->cross_layers, a->deep_layers, a->stacked ? "stacked" : "side by side", b->width,
            b->cross_layers, b->deep_layers, b->stacked ? "stacked" : "side by side");
    return true;
}

const model_family model_family_dcn2 = {
    .arch = RT_ARCH_DCN2,
    .plan = plan_dcn2,
    .check = check_dcn2,
    .same_net = same_dcn2,
};
