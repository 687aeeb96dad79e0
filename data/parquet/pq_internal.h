/* pq_internal.h — the Parquet reader's pieces: rt_parquet.c (file, footer,
 * schema), pq_decode.c (pages, levels, encodings), pq_convert.c (output
 * values, codecs) and pq_thrift.c (the compact protocol). */
#ifndef PQ_INTERNAL_H
#define PQ_INTERNAL_H

#include <stdlib.h>

#include "rt_parquet.h"
#include "rt_endian.h"

enum { PQ_BOOLEAN, PQ_INT32, PQ_INT64, PQ_INT96, PQ_FLOAT, PQ_DOUBLE, PQ_BYTE_ARRAY, PQ_FLBA };
enum {
    ENC_PLAIN = 0,
    ENC_PLAIN_DICT = 2,
    ENC_RLE = 3,
    ENC_BIT_PACKED = 4,
    ENC_DELTA_BP = 5,
    ENC_DELTA_LBA = 6,
    ENC_DELTA_BA = 7,
    ENC_RLE_DICT = 8,
    ENC_BSS = 9
};
enum {
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_GZIP,
    CODEC_LZO,
    CODEC_BROTLI,
    CODEC_LZ4,
    CODEC_ZSTD,
    CODEC_LZ4_RAW
};

/* How a physical value becomes its output value. */
typedef enum pq_conv {
    CV_INT,
    CV_UINT32,
    CV_UINT64,
    CV_REAL,
    CV_FLOAT16,
    CV_DECIMAL,
    CV_DATE,
    CV_TIMESTAMP,
    CV_INT96,
    CV_TIME,
    CV_TEXT,
    CV_BLOB
} pq_conv;

typedef struct pq_col {
    rt_pq_column pub;
    char type_name[48];
    pq_conv conv;
    int type_length;
    int scale;
    int64_t per_second; /* TIMESTAMP / TIME: units per second */
} pq_col;

typedef struct pq_chunk {
    int codec;
    int64_t num_values;
    int64_t start, size; /* the pages: first byte, total compressed size */
} pq_chunk;

struct rt_pq_file {
    const uint8_t *data;
    size_t size;
    bool mapped;
    char name[512];
    char created_by[128];
    int ncols, ngroups;
    int64_t nrows;
    pq_col *cols;
    int64_t *group_rows;
    pq_chunk *chunks; /* ngroups x ncols */
    uint32_t enc_seen, codec_seen;
};

/* A physical value: integers and bools in i, floats in d, bytes in b/len. */
typedef struct phys {
    int64_t i;
    double d;
    const uint8_t *b;
    uint32_t len;
} phys;

/* pq_decode.c: one column chunk's pages into v. */
rt_status pq_read_chunk(rt_pq_file *f, int rg, int col, rt_pq_values *v, char *err);

/* pq_convert.c: x as row k of v (NULL, or what is wrong with the value). */
const char *pq_emit(const pq_col *c, rt_pq_values *v, int64_t k, const phys *x);
/* n bytes of src in codec into exactly out_n bytes at dst (NULL, or why not). */
const char *pq_decompress(int codec, const uint8_t *src, size_t n, uint8_t *dst, size_t out_n);
const char *pq_codec_name(int codec);

/* buf grown (doubling) to hold need bytes; false when out of memory. */
static inline bool grow(void **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c *= 2;
    void *p = realloc(*buf, c);
    if (!p)
        return false;
    *buf = p;
    *cap = c;
    return true;
}

#endif
