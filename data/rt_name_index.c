/* rt_name_index.c — see rt_name_index.h: open addressing, linear probing. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rt_config.h" /* rt_hash_str */
#include "rt_name_index.h"

static const char *name_at(const void *base, size_t stride, int i)
{
    return (const char *)base + (size_t)i * stride;
}

bool rt_name_index_build(rt_name_index *ix, const void *base, int n, size_t stride)
{
    memset(ix, 0, sizeof *ix);
    size_t cap = 16;
    while (cap < 2 * (size_t)(n > 0 ? n : 0))
        cap *= 2;
    if (!(ix->slot = calloc(cap, sizeof *ix->slot)))
        return false;
    ix->mask = (uint32_t)(cap - 1);
    for (int i = 0; i < n; i++) {
        const char *name = name_at(base, stride, i);
        uint32_t h = (uint32_t)rt_hash_str(name) & ix->mask;
        while (ix->slot[h] && strcmp(name_at(base, stride, ix->slot[h] - 1), name) != 0)
            h = (h + 1) & ix->mask;
        if (!ix->slot[h]) /* a name given twice keeps its first */
            ix->slot[h] = i + 1;
    }
    return true;
}

void rt_name_index_free(rt_name_index *ix)
{
    free(ix->slot);
    memset(ix, 0, sizeof *ix);
}

int rt_name_find(const rt_name_index *ix, const void *base, int n, size_t stride, const char *name)
{
    if (!ix->slot) {
        for (int i = 0; i < n; i++)
            if (!strcmp(name_at(base, stride, i), name))
                return i;
        return -1;
    }
    for (uint32_t h = (uint32_t)rt_hash_str(name) & ix->mask; ix->slot[h]; h = (h + 1) & ix->mask)
        if (!strcmp(name_at(base, stride, ix->slot[h] - 1), name))
            return ix->slot[h] - 1;
    return -1;
}
