/* model_state.h — the whole state of a model on the host (parameters, Adam
 * moments, moving statistics, step), for tests that compare two models'
 * states or start both from the same one. */
#ifndef RT_TEST_MODEL_STATE_H
#define RT_TEST_MODEL_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_model.h"

typedef struct tu_state {
    float *p, *m, *v, *buf; /* p owns the block */
    int64_t np, nb, step;
} tu_state;

/* Read md's state into s: its block is allocated on first use (s zeroed
 * before), for md's sizes.  False with err on failure. */
bool tu_state_get(rt_model *md, tu_state *s, char *err);
/* Give md the state s. */
bool tu_state_set(rt_model *md, const tu_state *s, char *err);
void tu_state_free(tu_state *s);

#endif
