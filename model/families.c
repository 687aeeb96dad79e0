/* families.c — the registered families, by rt_arch (rt_model_names.h
 * lists the names).  A new family: its family_NAME.c, its name in
 * RT_ARCH_LIST and one line here. */
#include "model_build.h"

extern const model_family model_family_rossmann, model_family_mlp, model_family_resnet,
    model_family_dcn2, model_family_ft_transformer, model_family_tabm;

static const model_family *const FAMILIES[RT_ARCH_COUNT] = {
    [RT_ARCH_ROSSMANN] = &model_family_rossmann,
    [RT_ARCH_MLP] = &model_family_mlp,
    [RT_ARCH_RESNET] = &model_family_resnet,
    [RT_ARCH_DCN2] = &model_family_dcn2,
    [RT_ARCH_FT_TRANSFORMER] = &model_family_ft_transformer,
    [RT_ARCH_TABM] = &model_family_tabm,
};

const model_family *model_family_of(rt_arch arch)
{
    return (unsigned)arch < RT_ARCH_COUNT ? FAMILIES[arch] : NULL;
}
