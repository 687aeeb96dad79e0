/* cfg_internal.h — private to config/: what the loader (rt_config.c) and
 * the printer (rt_config_print.c) share. */
#ifndef RT_CFG_INTERNAL_H
#define RT_CFG_INTERNAL_H

#include "rt_config.h"

/* The field of key k in a parsed object. */
const void *cfg_cfield(const void *obj, const rt_cfg_key *k);
/* Choice idx of "a|b|c" into buf ("?" past the end). */
void cfg_choice_name(const char *choices, int idx, char *buf, size_t len);
/* A bound as the file would write it (sizes and durations in their units). */
void cfg_format_bound(const rt_cfg_key *k, double v, char *buf, size_t len);

#endif
