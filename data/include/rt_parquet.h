/* rt_parquet.h — reading Parquet files (flat schemas), as Spark 3, arrow
 * (pyarrow, arrow-rs, DuckDB, Polars) and parquet-mr write them.
 *
 * One column of one row group at a time, so memory follows the row group,
 * not the file.  Read: BOOLEAN, INT32, INT64, INT96, FLOAT, DOUBLE,
 * BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY; encodings PLAIN, PLAIN_DICTIONARY,
 * RLE_DICTIONARY, RLE (booleans), DELTA_BINARY_PACKED,
 * DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT; data pages
 * v1 and v2; codecs UNCOMPRESSED, SNAPPY, GZIP, ZSTD, LZ4_RAW and the
 * Hadoop-framed LZ4.  Optional (nullable) and required columns; a nested
 * column (group, LIST, MAP, a Spark UDT) or a repeated one is refused with
 * its name.  Page CRCs are checked when the writer stored them.
 *
 * Values come out as one of four kinds, the way SQL sees them:
 *   INT   BOOLEAN (0/1), integers (signed or unsigned, 8..64 bits)
 *   REAL  FLOAT, DOUBLE, FLOAT16, DECIMAL (unscaled / 10^scale, as a double)
 *   TEXT  strings (UTF8/STRING, ENUM, JSON, and unannotated BYTE_ARRAY);
 *         DATE as 'YYYY-MM-DD'; TIMESTAMP (millis, micros, nanos) and
 *         INT96 as 'YYYY-MM-DD HH:MM:SS' plus '.fff', '.ffffff' or
 *         '.fffffffff' when the fraction is not 0 (UTC, as stored); TIME as
 *         'HH:MM:SS[.f...]'
 *   BLOB  FIXED_LEN_BYTE_ARRAY without an annotation, UUID
 * Every error names the file, and the column and row group when it is in
 * one. */
#ifndef RT_PARQUET_H
#define RT_PARQUET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_pq_file rt_pq_file;

typedef enum rt_pq_kind { RT_PQ_INT = 1, RT_PQ_REAL, RT_PQ_TEXT, RT_PQ_BLOB } rt_pq_kind;

typedef struct rt_pq_column {
    char name[128];
    rt_pq_kind kind;
    int physical;     /* Parquet's Type: 0 BOOLEAN .. 7 FIXED_LEN_BYTE_ARRAY */
    bool nullable;
    const char *type; /* "INT32", "DATE", "DECIMAL(7,2)", "TIMESTAMP(MILLIS)" ... */
} rt_pq_column;

/* One column of one row group: n values; null[k] set for a NULL. */
typedef struct rt_pq_values {
    int64_t n;
    uint8_t *null;
    int64_t *i;          /* RT_PQ_INT */
    double *r;           /* RT_PQ_REAL */
    uint64_t *off;       /* TEXT / BLOB: value k is bytes + off[k], len[k] bytes */
    uint32_t *len;
    char *bytes;
    size_t nbytes, cap;  /* used / allocated bytes */
} rt_pq_values;

/* Opens a file (mapped, read on demand) or parses a buffer the caller
 * keeps alive (name used in messages). */
rt_status rt_pq_open(const char *path, rt_pq_file **out, char *err);
rt_status rt_pq_open_mem(const void *buf, size_t len, const char *name, rt_pq_file **out,
                         char *err);
void rt_pq_close(rt_pq_file *f);

int rt_pq_ncols(const rt_pq_file *f);
const rt_pq_column *rt_pq_col(const rt_pq_file *f, int col);
int64_t rt_pq_nrows(const rt_pq_file *f);
int rt_pq_nrow_groups(const rt_pq_file *f);
int64_t rt_pq_group_rows(const rt_pq_file *f, int rg);
const char *rt_pq_created_by(const rt_pq_file *f);

/* Decodes column col of row group rg into v (reusing its buffers; start
 * with a zeroed rt_pq_values, free with rt_pq_values_free). */
rt_status rt_pq_read(rt_pq_file *f, int rg, int col, rt_pq_values *v, char *err);
void rt_pq_values_free(rt_pq_values *v);

/* Bit (1 << Encoding) for every encoding of the data and dictionary pages
 * decoded so far, and (1 << codec) for their codecs: what was exercised. */
uint32_t rt_pq_encodings_seen(const rt_pq_file *f);
uint32_t rt_pq_codecs_seen(const rt_pq_file *f);

/* A file, or a folder of part files as Spark writes one (part-*,
 * _SUCCESS, hidden .crc files): the path itself, or the folder's files
 * ending in one of suffixes (NULL-terminated), sorted by name (free each
 * and the array).  A folder without any, or with a _temporary folder (a
 * job still writing), is an error; what names the suffixes in it. */
rt_status rt_part_files(const char *path, const char *const *suffixes, const char *what,
                        char ***files, int *n, char *err);
/* rt_part_files of .parquet files. */
rt_status rt_pq_files(const char *path, char ***files, int *n, char *err);

#ifdef __cplusplus
}
#endif
#endif
