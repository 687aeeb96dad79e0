/* rt_buf.h — a growable byte buffer, NUL-terminated after its len bytes
 * (a reply's body, a stream's lines): zero-initialised it is empty. */
#ifndef RT_BUF_H
#define RT_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct rt_buf {
    char *p; /* NULL until the first byte (or rt_buf_reserve) */
    size_t len, cap;
} rt_buf;

/* Append n bytes; false when out of memory (b unchanged). */
bool rt_buf_add(rt_buf *b, const void *data, size_t n);
/* Room for n more bytes and the NUL at once (a length known beforehand);
 * false when out of memory (b unchanged). */
bool rt_buf_reserve(rt_buf *b, size_t n);
void rt_buf_free(rt_buf *b);

#endif
