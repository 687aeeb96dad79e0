/* shard_internal.h — the shard format's pieces shared by rt_shard.c (whole
 * files) and rt_shard_reader.c (one row group at a time). */
#ifndef SHARD_INTERNAL_H
#define SHARD_INTERNAL_H

#include "rt_shard.h"

#define TRAILER_LEN 24
/* deflate's largest expansion is about 1032:1 (zlib's FAQ): a column chunk
 * that claims more is refused as corrupt */
#define SHARD_MAX_RATIO 1032

/* The header at p (len bytes available): columns (names, types; data
 * NULL), their count, and the header's length. */
rt_status shard_header(const unsigned char *p, size_t len, const char *name, rt_shard_col *cols,
                       int *ncols, size_t *hlen, char *err);
/* The TRAILER_LEN bytes at t: total rows and row groups. */
rt_status shard_trailer(const unsigned char *t, const char *name, uint64_t *rows,
                        uint32_t *groups, char *err);
/* Row group g at q: its row count (at most max_rows) and bytes used; each
 * column's values are checked and decompressed into cols[c].data at row
 * `row`, or only walked over where cols[c].data is NULL. */
rt_status shard_group(const unsigned char *q, const unsigned char *end, const char *name,
                      uint32_t g, uint64_t max_rows, rt_shard_col *cols, int ncols,
                      uint64_t row, uint64_t *n, size_t *used, char *err);

#endif
