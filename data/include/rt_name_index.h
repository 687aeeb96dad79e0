/* rt_name_index.h — finding a column by its name among many: a hash of
 * the names of an array of structs whose first member is the name (a
 * shard's columns, a dataset's).  A lookup by a linear search per column
 * made reading a 33,000-column dataset's columns by name a billion string
 * compares (predict: 14 s of a 50-row table).  An index that was never
 * built (zeroed) makes rt_name_find search linearly, as before. */
#ifndef RT_NAME_INDEX_H
#define RT_NAME_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rt_name_index {
    int32_t *slot; /* index + 1 of the first item of a name, 0 empty */
    uint32_t mask; /* slots - 1 (a power of two, at least twice the items) */
} rt_name_index;

/* The index of n items of stride bytes at base, each starting with its
 * NUL-terminated name; false out of memory (the index then stays empty). */
bool rt_name_index_build(rt_name_index *ix, const void *base, int n, size_t stride);
void rt_name_index_free(rt_name_index *ix);
/* The position of the first item named name, or -1 */
int rt_name_find(const rt_name_index *ix, const void *base, int n, size_t stride, const char *name);

#endif
