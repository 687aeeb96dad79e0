/* rt_shard.h — one partition of a dataset: a binary columnar file.
 *
 *   header   "RTSHARD\0", u32 version (1), u32 column count, per column
 *            { u8 type, u8 name length, name }, u32 CRC32 of the header
 *   groups   per row group: "RGRP", u32 rows, per column
 *            { u32 raw bytes, u32 compressed bytes, u32 CRC32 of the
 *              compressed bytes, zlib data }
 *   index    (version 2) "RTIDX\0\0\0", per row group { u64 offset, u32 rows },
 *            u32 CRC32 of the block
 *   trailer  "RTEND\0\0\0", u64 rows, u32 groups, u32 CRC32 of the two
 *
 * Version 1 (no index) is still read.
 * All integers little-endian.  A reader checks everything (magic, version,
 * CRCs, sizes, the trailer's totals) and names the file, the row group and
 * the column of any damage; a file without its trailer was cut short.
 * Files are written atomically (rt_write_atomic). */
#ifndef RT_SHARD_H
#define RT_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "rt_name_index.h"

#define RT_SHARD_VERSION 2
#define RT_SHARD_NAME_LEN 64
#define RT_SHARD_MAX_COLS 65552 /* 65,536 features and the label, validation, id, ... */

typedef enum rt_col_type { RT_COL_I32 = 1, RT_COL_F32 = 2, RT_COL_U8 = 3 } rt_col_type;
size_t rt_col_type_size(rt_col_type t);
const char *rt_col_type_name(rt_col_type t);

/* A whole column in memory: rows values of `type`. */
typedef struct rt_shard_col {
    char name[RT_SHARD_NAME_LEN];
    rt_col_type type;
    void *data;
} rt_shard_col;

typedef struct rt_shard {
    int ncols;
    int64_t nrows;
    rt_shard_col *cols;  /* data owned by the shard */
    rt_name_index index; /* the columns by name (rt_shard_find); zeroed: none */
} rt_shard;

/* Write columns of nrows rows, cut in row groups of rows_per_group. */
rt_status rt_shard_write(const char *path, const rt_shard_col *cols, int ncols, int64_t nrows,
                         int64_t rows_per_group, char *err);
/* The same, a row group at a time (memory: one row group): open with the
 * columns' names and types, append row groups (cols[c].data holds n
 * values), close (the file appears atomically) or abort.  After an error
 * the writer is aborted already, and only free is left: call
 * rt_shard_writer_abort. */
typedef struct rt_shard_writer rt_shard_writer;
rt_status rt_shard_writer_open(const char *path, const rt_shard_col *cols, int ncols,
                               rt_shard_writer **out, char *err);
rt_status rt_shard_writer_group(rt_shard_writer *w, const rt_shard_col *cols, int64_t n,
                                char *err);
rt_status rt_shard_writer_close(rt_shard_writer *w, char *err);
void rt_shard_writer_abort(rt_shard_writer *w);
/* Read and check a whole shard. */
rt_status rt_shard_read(const char *path, rt_shard **out, char *err);
/* The same from memory (tests, fuzzing); `name` is used in messages. */
rt_status rt_shard_parse(const void *data, size_t len, const char *name, rt_shard **out,
                         char *err);
void rt_shard_free(rt_shard *s);
/* A shard a row group at a time (memory: one row group).  Opening checks
 * the header, the trailer and the index (version 1: every row group's
 * header, walked); reading a group checks it against the index, and its
 * CRCs, and gives it as an rt_shard of its rows. */
typedef struct rt_shard_reader rt_shard_reader;
rt_status rt_shard_reader_open(const char *path, rt_shard_reader **out, char *err);
int rt_shard_reader_ncols(const rt_shard_reader *r);
const rt_shard_col *rt_shard_reader_col(const rt_shard_reader *r, int c); /* data NULL */
int64_t rt_shard_reader_rows(const rt_shard_reader *r);
int rt_shard_reader_groups(const rt_shard_reader *r);
int64_t rt_shard_reader_group_rows(const rt_shard_reader *r, int g);
rt_status rt_shard_reader_group(rt_shard_reader *r, int g, rt_shard **out, char *err);
void rt_shard_reader_close(rt_shard_reader *r);
/* Column by name, or NULL. */
const rt_shard_col *rt_shard_find(const rt_shard *s, const char *name);

#ifdef __cplusplus
}
#endif
#endif
