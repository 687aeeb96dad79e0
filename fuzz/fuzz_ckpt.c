/* fuzz_ckpt.c — the checkpoint reader on arbitrary bytes: a damaged file is
 * reported and never loaded; what loads has a model spec that checks out. */
#include <stdint.h>
#include <stdlib.h>

#include "rt_ckpt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rt_ckpt c;
    char err[RT_ERR_LEN];
    if (rt_ckpt_parse(data, size, "fuzz.ckpt", &c, err) != RT_OK)
        return 0;
    if (rt_model_spec_check(&c.spec, err) != RT_OK || c.nparams <= 0 || !c.params)
        abort();
    rt_ckpt_free(&c);
    return 0;
}
