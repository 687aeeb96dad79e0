/* model_state.c — see model_state.h. */
#include "model_state.h"

#include <stdlib.h>

bool tu_state_get(rt_model *md, tu_state *s, char *err)
{
    if (!s->p) {
        s->np = rt_model_num_params(md);
        s->nb = rt_model_num_buffers(md);
        if (!(s->p = malloc((size_t)(3 * s->np + s->nb + 1) * 4))) {
            rt_err(err, RT_ERR_NOMEM, "out of memory");
            return false;
        }
        s->m = s->p + s->np;
        s->v = s->m + s->np;
        s->buf = s->v + s->np;
    }
    return rt_model_get_state(md, s->p, s->m, s->v, s->buf, &s->step, err) == RT_OK;
}

bool tu_state_set(rt_model *md, const tu_state *s, char *err)
{
    return rt_model_set_state(md, s->p, s->m, s->v, s->buf, &s->step, err) == RT_OK;
}

void tu_state_free(tu_state *s)
{
    free(s->p);
    s->p = NULL;
}
