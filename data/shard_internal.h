/* shard_internal.h — the shard format's pieces shared by rt_shard.c (whole
 * files) and rt_shard_reader.c (one row group at a time). */
#ifndef SHARD_INTERNAL_H
#define SHARD_INTERNAL_H

#include "rt_shard.h"

#define TRAILER_LEN 24
/* Version 2 adds the row groups' index before the trailer: "RTIDX\0\0\0",
 * per group { u64 offset of its "RGRP", u32 rows }, u32 CRC32 of the
 * block before it.  A reader finds every group from the last bytes of the
 * file (for an object in S3: a ranged GET, not a pass over it). */
#define SHARD_INDEX_LEN(groups) (8 + 12 * (uint64_t)(groups) + 4)
/* deflate's largest expansion is about 1032:1 (zlib's FAQ): a column chunk
 * that claims more is refused as corrupt */
#define SHARD_MAX_RATIO 1032

/* s's columns indexed by name for rt_shard_find (out of memory: none,
 * and rt_shard_find searches) */
void shard_by_name(rt_shard *s);
/* How many columns the header at head (len bytes) holds, for a cols
 * array to parse it into: 1 where the count is out of range or more than
 * len bytes can hold (shard_header refuses it) */
size_t shard_header_cols(const void *head, size_t len);
/* The header at p (len bytes available): columns (names, types; data
 * NULL), their count, the header's length and the format's version (1, 2). */
rt_status shard_header(const unsigned char *p, size_t len, const char *name, rt_shard_col *cols,
                       int *ncols, size_t *hlen, int *version, char *err);
/* The TRAILER_LEN bytes at t: total rows and row groups. */
rt_status shard_trailer(const unsigned char *t, const char *name, uint64_t *rows,
                        uint32_t *groups, char *err);
/* The index at x (SHARD_INDEX_LEN(groups) bytes, at idx_off of the file):
 * each group's offset, length and rows, checked — the CRC, the groups in
 * order from the header's end (hlen) to the index, each one at least a
 * group's header long (ncols columns), rows above 0 adding up to total. */
rt_status shard_index(const unsigned char *x, uint32_t groups, uint64_t total, int ncols,
                      uint64_t hlen, uint64_t idx_off, const char *name, int64_t *off, int64_t *len,
                      int64_t *grows, char *err);
/* Row group g at q: its row count (at most max_rows) and bytes used; each
 * column's values are checked and decompressed into cols[c].data at row
 * `row`, or only walked over where cols[c].data is NULL. */
rt_status shard_group(const unsigned char *q, const unsigned char *end, const char *name,
                      uint32_t g, uint64_t max_rows, rt_shard_col *cols, int ncols,
                      uint64_t row, uint64_t *n, size_t *used, char *err);

#endif
