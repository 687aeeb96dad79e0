/* rt_buf.c — see rt_buf.h. */
#include "rt_buf.h"

#include <stdlib.h>
#include <string.h>

bool rt_buf_reserve(rt_buf *b, size_t n)
{
    const size_t need = b->len + n + 1;
    if (need <= b->cap)
        return true;
    size_t nc = b->cap ? b->cap * 2 : 4096; /* doubling: appends cost O(1) each */
    if (nc < need) /* a large reserve gets what it asks for, not twice it */
        nc = need;
    char *p = realloc(b->p, nc);
    if (!p)
        return false;
    if (!b->p)
        p[0] = '\0';
    b->p = p;
    b->cap = nc;
    return true;
}

bool rt_buf_add(rt_buf *b, const void *data, size_t n)
{
    if (!rt_buf_reserve(b, n))
        return false;
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return true;
}

void rt_buf_free(rt_buf *b)
{
    free(b->p);
    *b = (rt_buf){0};
}
