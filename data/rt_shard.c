/* rt_shard.c — see rt_shard.h. */
#include "rt_data_io.h"
#include "rt_shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "rt_file.h"
#include "shard_internal.h"
#include "rt_endian.h"

static const char MAGIC[8] = {'R', 'T', 'S', 'H', 'A', 'R', 'D', 0};
static const char GROUP[4] = {'R', 'G', 'R', 'P'};
static const char TRAILER[8] = {'R', 'T', 'E', 'N', 'D', 0, 0, 0};
static const char INDEX[8] = {'R', 'T', 'I', 'D', 'X', 0, 0, 0};
#define MAX_FILE (8ull << 30)

size_t rt_col_type_size(rt_col_type t)
{
    return t == RT_COL_U8 ? 1 : t == RT_COL_I32 || t == RT_COL_F32 ? 4 : 0;
}

const char *rt_col_type_name(rt_col_type t)
{
    return t == RT_COL_I32 ? "i32" : t == RT_COL_F32 ? "f32" : t == RT_COL_U8 ? "u8" : "?";
}

/* ---- a growable byte buffer ---------------------------------------------------- */

typedef struct bytes {
    unsigned char *p;
    size_t n, cap;
    bool failed;
} bytes;

static void *reserve(bytes *b, size_t more)
{
    if (b->failed)
        return NULL;
    if (b->n + more > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + more)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return NULL;
        }
        b->p = p;
        b->cap = cap;
    }
    return b->p + b->n;
}

static void add(bytes *b, const void *p, size_t n)
{
    void *d = reserve(b, n);
    if (d) {
        memcpy(d, p, n);
        b->n += n;
    }
}

static void add_u32(bytes *b, uint32_t v)
{
    unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    add(b, x, 4);
}

static void add_u64(bytes *b, uint64_t v)
{
    add_u32(b, (uint32_t)v);
    add_u32(b, (uint32_t)(v >> 32));
}


static uint32_t crc(const void *p, size_t n)
{
    uLong c = crc32(0L, Z_NULL, 0);
    const unsigned char *b = p;
    while (n > 0) { /* crc32 takes uInt lengths */
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, b, k);
        b += k;
        n -= k;
    }
    return (uint32_t)c;
}

/* ---- writing --------------------------------------------------------------------- */

struct rt_shard_writer {
    rt_atomic_file f;
    int ncols;
    rt_col_type *types;               /* ncols of them */
    char (*names)[RT_SHARD_NAME_LEN]; /* ncols of them */
    uint64_t rows;
    uint32_t groups;
    uint64_t at; /* bytes written */
    bytes b;     /* the row group being written */
    bytes idx;   /* the index: each group's offset and rows */
};

static void writer_free(rt_shard_writer *w)
{
    free(w->b.p);
    free(w->idx.p);
    free(w->types);
    free(w->names);
    free(w);
}

rt_status rt_shard_writer_open(const char *path, const rt_shard_col *cols, int ncols,
                               rt_shard_writer **out, char *err)
{
    *out = NULL;
    if (ncols <= 0 || ncols > RT_SHARD_MAX_COLS)
        return rt_err(err, RT_ERR_INVALID, "%s: %d columns: a shard holds 1 to %d", path, ncols,
                      RT_SHARD_MAX_COLS);
    rt_shard_writer *w = calloc(1, sizeof *w);
    if (w && (!(w->types = calloc((size_t)ncols, sizeof *w->types)) ||
              !(w->names = calloc((size_t)ncols, sizeof *w->names)))) {
        writer_free(w);
        w = NULL;
    }
    if (!w)
        return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", path);
    w->ncols = ncols;
    bytes *b = &w->b;
    add(b, MAGIC, 8);
    add_u32(b, RT_SHARD_VERSION);
    add_u32(b, (uint32_t)ncols);
    for (int c = 0; c < ncols; c++) {
        size_t nl = strlen(cols[c].name);
        if (nl == 0 || nl >= RT_SHARD_NAME_LEN || rt_col_type_size(cols[c].type) == 0) {
            writer_free(w);
            return rt_err(err, RT_ERR_INVALID, "%s: column %d has a bad name or type", path, c);
        }
        w->types[c] = cols[c].type;
        memcpy(w->names[c], cols[c].name, nl + 1);
        unsigned char h[2] = {(unsigned char)cols[c].type, (unsigned char)nl};
        add(b, h, 2);
        add(b, cols[c].name, nl);
    }
    if (!b->failed)
        add_u32(b, crc(b->p, b->n));
    rt_status st = b->failed ? rt_err(err, RT_ERR_NOMEM, "%s: out of memory", path)
                             : rt_atomic_open(&w->f, path, err);
    if (st == RT_OK)
        st = rt_atomic_write(&w->f, b->p, b->n, err);
    if (st != RT_OK) {
        free(b->p);
        free(w);
        return st;
    }
    w->at = b->n;
    b->n = 0;
    add(&w->idx, INDEX, 8);
    *out = w;
    return RT_OK;
}

rt_status rt_shard_writer_group(rt_shard_writer *w, const rt_shard_col *cols, int64_t n,
                                char *err)
{
    if (n <= 0)
        return RT_OK;
    if (n > INT32_MAX || w->rows + (uint64_t)n > INT32_MAX) {
        rt_atomic_abort(&w->f);
        return rt_err(err, RT_ERR_INVALID, "%s: more than 2^31 rows", w->f.path);
    }
    bytes *b = &w->b;
    b->n = 0;
    add(b, GROUP, 4);
    add_u32(b, (uint32_t)n);
    for (int c = 0; c < w->ncols && !b->failed; c++) {
        size_t esz = rt_col_type_size(w->types[c]);
        const unsigned char *raw = cols[c].data;
        uLong rawn = (uLong)((size_t)n * esz);
        uLong bound = compressBound(rawn);
        unsigned char *hdr = reserve(b, 12 + bound);
        if (!hdr)
            break;
        uLongf comp = bound;
        if (compress2(hdr + 12, &comp, raw, rawn, 6) != Z_OK) {
            rt_atomic_abort(&w->f);
            return rt_err(err, RT_ERR_IO, "%s: zlib failed on column %s", w->f.path,
                          w->names[c]);
        }
        uint32_t v[3] = {(uint32_t)rawn, (uint32_t)comp, crc(hdr + 12, comp)};
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < 4; i++)
                hdr[4 * k + i] = (unsigned char)(v[k] >> (8 * i));
        b->n += 12 + comp;
    }
    add_u64(&w->idx, w->at);
    add_u32(&w->idx, (uint32_t)n);
    if (b->failed || w->idx.failed) {
        rt_atomic_abort(&w->f);
        return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", w->f.path);
    }
    w->rows += (uint64_t)n;
    w->groups++;
    w->at += b->n;
    return rt_atomic_write(&w->f, b->p, b->n, err);
}

rt_status rt_shard_writer_close(rt_shard_writer *w, char *err)
{
    bytes *b = &w->b;
    b->n = 0;
    if (!w->idx.failed)
        add_u32(&w->idx, crc(w->idx.p, w->idx.n));
    add(b, w->idx.p, w->idx.n);
    b->failed |= w->idx.failed;
    add(b, TRAILER, 8);
    add_u64(b, w->rows);
    add_u32(b, w->groups);
    if (!b->failed)
        add_u32(b, crc(b->p + b->n - 12, 12)); /* the rows and groups */
    rt_status st = b->failed ? rt_err(err, RT_ERR_NOMEM, "%s: out of memory", w->f.path)
                             : rt_atomic_write(&w->f, b->p, b->n, err);
    if (st == RT_OK)
        st = rt_atomic_commit(&w->f, err);
    else
        rt_atomic_abort(&w->f);
    writer_free(w);
    return st;
}

void rt_shard_writer_abort(rt_shard_writer *w)
{
    if (!w)
        return;
    rt_atomic_abort(&w->f);
    writer_free(w);
}

rt_status rt_shard_write(const char *path, const rt_shard_col *cols, int ncols, int64_t nrows,
                         int64_t rows_per_group, char *err)
{
    if (nrows < 0 || nrows > INT32_MAX)
        return rt_err(err, RT_ERR_INVALID, "%s: %lld rows: out of range", path,
                      (long long)nrows);
    if (rows_per_group <= 0)
        rows_per_group = 65536;
    rt_shard_writer *w = NULL;
    rt_status st = rt_shard_writer_open(path, cols, ncols, &w, err);
    rt_shard_col *at = st == RT_OK ? calloc((size_t)ncols, sizeof *at) : NULL;
    if (st == RT_OK && !at)
        st = rt_err(err, RT_ERR_NOMEM, "%s: out of memory", path);
    for (int64_t r0 = 0; st == RT_OK && r0 < nrows; r0 += rows_per_group) {
        int64_t n = nrows - r0 < rows_per_group ? nrows - r0 : rows_per_group;
        for (int c = 0; c < ncols; c++) {
            at[c] = cols[c];
            at[c].data = (unsigned char *)cols[c].data + (size_t)r0 * rt_col_type_size(cols[c].type);
        }
        st = rt_shard_writer_group(w, at, n, err);
    }
    free(at);
    if (st != RT_OK) {
        rt_shard_writer_abort(w);
        return st;
    }
    return rt_shard_writer_close(w, err);
}

/* ---- reading --------------------------------------------------------------------- */

void rt_shard_free(rt_shard *s)
{
    if (!s)
        return;
    for (int c = 0; c < s->ncols; c++)
        free(s->cols[c].data);
    free(s->cols);
    rt_name_index_free(&s->index);
    free(s);
}

void shard_by_name(rt_shard *s)
{
    (void)rt_name_index_build(&s->index, s->cols, s->ncols, sizeof *s->cols); /* else linear */
}

const rt_shard_col *rt_shard_find(const rt_shard *s, const char *name)
{
    int c = rt_name_find(&s->index, s->cols, s->ncols, sizeof *s->cols, name);
    return c < 0 ? NULL : &s->cols[c];
}

/* Whether a header of len bytes (16 or more) may hold n columns: 1 to
 * RT_SHARD_MAX_COLS, 3 bytes each at least.  shard_header_cols sizes the
 * array shard_header fills by it: the two must agree. */
static bool count_fits(uint32_t n, size_t len)
{
    return n >= 1 && n <= RT_SHARD_MAX_COLS && n <= (len - 16) / 3;
}

size_t shard_header_cols(const void *head, size_t len)
{
    const uint32_t n = len >= 16 ? rt_get_le32((const unsigned char *)head + 12) : 0;
    return len >= 16 && count_fits(n, len) ? n : 1;
}

rt_status shard_header(const unsigned char *p, size_t len, const char *name, rt_shard_col *cols,
                       int *ncols, size_t *hlen, int *version, char *err)
{
    if (len < 16 || memcmp(p, MAGIC, 8) != 0)
        return rt_err(err, RT_ERR_INVALID, "%s is not a ringtrain shard (bad magic)", name);
    uint32_t v = rt_get_le32(p + 8), n = rt_get_le32(p + 12);
    if (v < 1 || v > RT_SHARD_VERSION)
        return rt_err(err, RT_ERR_INVALID, "%s: shard version %u, this build reads 1 to %d", name,
                      v, RT_SHARD_VERSION);
    if (!count_fits(n, len))
        return rt_err(err, RT_ERR_INVALID, "%s: corrupt header (%u columns)", name, n);
    const unsigned char *q = p + 16, *end = p + len;
    for (uint32_t c = 0; c < n; c++) {
        if (end - q < 2 || end - q - 2 < q[1])
            return rt_err(err, RT_ERR_INVALID, "%s: corrupt header (column %u)", name, c);
        rt_shard_col *col = &cols[c];
        col->type = (rt_col_type)q[0];
        col->data = NULL;
        size_t nl = q[1];
        if (rt_col_type_size(col->type) == 0 || nl == 0 || nl >= RT_SHARD_NAME_LEN)
            return rt_err(err, RT_ERR_INVALID, "%s: corrupt header (column %u)", name, c);
        memcpy(col->name, q + 2, nl);
        col->name[nl] = '\0';
        q += 2 + nl;
    }
    if (end - q < 4 || crc(p, (size_t)(q - p)) != rt_get_le32(q))
        return rt_err(err, RT_ERR_INVALID, "%s: corrupt header (CRC mismatch)", name);
    *ncols = (int)n;
    *hlen = (size_t)(q + 4 - p);
    *version = (int)v;
    return RT_OK;
}

rt_status shard_index(const unsigned char *x, uint32_t groups, uint64_t total, int ncols,
                      uint64_t hlen, uint64_t idx_off, const char *name, int64_t *off, int64_t *len,
                      int64_t *grows, char *err)
{
    size_t n = (size_t)SHARD_INDEX_LEN(groups);
    if (memcmp(x, INDEX, 8) != 0 || crc(x, n - 4) != rt_get_le32(x + n - 4))
        return rt_err(err, RT_ERR_INVALID, "%s: corrupt row group index (%s)", name,
                      memcmp(x, INDEX, 8) != 0 ? "no index where the trailer puts it"
                                               : "CRC mismatch");
    uint64_t at = hlen, rows = 0, least = 8 + 12 * (uint64_t)ncols;
    for (uint32_t g = 0; g < groups; g++) {
        uint64_t o = rt_get_le64(x + 8 + 12 * (size_t)g), r = rt_get_le32(x + 16 + 12 * (size_t)g);
        uint64_t next = g + 1 < groups ? rt_get_le64(x + 20 + 12 * (size_t)g) : idx_off;
        if (o != at || next < o || next - o < least || next > idx_off || r == 0 || r > total - rows)
            return rt_err(err, RT_ERR_INVALID, "%s: corrupt row group index (row group %u)", name,
                          g);
        off[g] = (int64_t)o;
        len[g] = (int64_t)(next - o);
        grows[g] = (int64_t)r;
        at = next;
        rows += r;
    }
    if (at != idx_off || rows != total)
        return rt_err(err, RT_ERR_INVALID,
                      "%s: the row group index holds %llu rows, the "
                      "trailer says %llu",
                      name, (unsigned long long)rows, (unsigned long long)total);
    return RT_OK;
}

rt_status shard_trailer(const unsigned char *t, const char *name, uint64_t *rows,
                        uint32_t *groups, char *err)
{
    if (memcmp(t, TRAILER, 8) != 0)
        return rt_err(err, RT_ERR_INVALID,
                      "%s is truncated: no trailer (the file was cut short or is still being "
                      "written)",
                      name);
    if (crc(t + 8, 12) != rt_get_le32(t + 20))
        return rt_err(err, RT_ERR_INVALID, "%s: corrupt trailer (CRC mismatch)", name);
    *rows = rt_get_le64(t + 8);
    *groups = rt_get_le32(t + 16);
    if (*rows > INT32_MAX)
        return rt_err(err, RT_ERR_INVALID, "%s: corrupt trailer (%llu rows)", name,
                      (unsigned long long)*rows);
    return RT_OK;
}

rt_status shard_group(const unsigned char *q, const unsigned char *end, const char *name,
                      uint32_t g, uint64_t max_rows, rt_shard_col *cols, int ncols,
                      uint64_t row, uint64_t *n, size_t *used, char *err)
{
    const unsigned char *q0 = q;
    if (end - q < 8 || memcmp(q, GROUP, 4) != 0)
        return rt_err(err, RT_ERR_INVALID, "%s: row group %u is missing or corrupt", name, g);
    *n = rt_get_le32(q + 4);
    q += 8;
    if (*n == 0 || *n > max_rows)
        return rt_err(err, RT_ERR_INVALID, "%s: row group %u has %llu rows, more than the "
                                           "trailer's total", name, g, (unsigned long long)*n);
    for (int c = 0; c < ncols; c++) {
        rt_shard_col *col = &cols[c];
        size_t esz = rt_col_type_size(col->type);
        if (end - q < 12)
            return rt_err(err, RT_ERR_INVALID, "%s: row group %u, column %s: cut short", name, g,
                          col->name);
        uint32_t rawn = rt_get_le32(q), comp = rt_get_le32(q + 4), want = rt_get_le32(q + 8);
        q += 12;
        /* deflate expands at most ~1032:1: a larger claim is a crafted size,
         * refused before anything is allocated for it */
        if (rawn != *n * esz || (uint64_t)(end - q) < comp ||
            rawn > (uint64_t)comp * SHARD_MAX_RATIO + 64)
            return rt_err(err, RT_ERR_INVALID, "%s: row group %u, column %s: corrupt sizes",
                          name, g, col->name);
        if (col->data) { /* NULL: only walk over it */
            unsigned char *dst = (unsigned char *)col->data + row * esz;
            uLongf got = rawn;
            if (crc(q, comp) != want || uncompress(dst, &got, q, comp) != Z_OK || got != rawn)
                return rt_err(err, RT_ERR_INVALID,
                              "%s: row group %u, column %s is corrupt (CRC mismatch)", name, g,
                              col->name);
        }
        q += comp;
    }
    *used = (size_t)(q - q0);
    return RT_OK;
}

/* rt_shard_parse with cols (as many as the header has) to parse it into */
static rt_status parse(const void *data, size_t len, const char *name, rt_shard_col *cols,
                       rt_shard **out, char *err)
{
    *out = NULL;
    const unsigned char *p = data, *end = p + len;
    int ncols = 0, version = 0;
    size_t hlen = 0;
    rt_status st = shard_header(p, len, name, cols, &ncols, &hlen, &version, err);
    if (st != RT_OK)
        return st;
    if (len < hlen + TRAILER_LEN)
        return rt_err(err, RT_ERR_INVALID,
                      "%s is truncated: no trailer (the file was cut short or is still being "
                      "written)",
                      name);
    uint64_t total;
    uint32_t groups;
    if ((st = shard_trailer(end - TRAILER_LEN, name, &total, &groups, err)) != RT_OK)
        return st;
    /* version 2: the index, then every group where it says */
    uint64_t ilen = version >= 2 ? SHARD_INDEX_LEN(groups) : 0;
    if (ilen > len - hlen - TRAILER_LEN)
        return rt_err(err, RT_ERR_INVALID, "%s: corrupt trailer (%u row groups)", name, groups);
    end -= TRAILER_LEN + ilen;
    int64_t *ix = NULL;
    if (version >= 2) {
        ix = malloc(3 * (size_t)(groups + 1) * sizeof *ix);
        if (!ix)
            return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", name);
        st = shard_index(end, groups, total, ncols, hlen, (uint64_t)(end - p), name, ix,
                         ix + groups + 1, ix + 2 * (groups + 1), err);
    }
    /* the row groups' sizes first (cols' data NULL: walked, not decoded):
     * memory for the trailer's rows only once the file holds them */
    const unsigned char *w = p + hlen;
    uint64_t seen = 0;
    for (uint32_t g = 0; g < groups && st == RT_OK; g++) {
        uint64_t n = 0;
        size_t used = 0;
        st = shard_group(w, end, name, g, total - seen, cols, ncols, 0, &n, &used, err);
        if (st == RT_OK && ix && (w - p != ix[g] || n != (uint64_t)ix[2 * (groups + 1) + g]))
            st = rt_err(err, RT_ERR_INVALID, "%s: row group %u does not match the index", name, g);
        w += used;
        seen += n;
    }
    free(ix);
    if (st != RT_OK)
        return st;
    if (seen != total || w != end)
        return rt_err(err, RT_ERR_INVALID, "%s: the row groups hold %llu rows, the trailer says "
                                           "%llu", name, (unsigned long long)seen,
                      (unsigned long long)total);
    rt_shard *s = calloc(1, sizeof *s);
    if (!s || !(s->cols = calloc((size_t)ncols, sizeof *s->cols))) {
        free(s);
        return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", name);
    }
    s->ncols = ncols;
    s->nrows = (int64_t)total;
    for (int c = 0; c < ncols && st == RT_OK; c++) {
        s->cols[c] = cols[c];
        s->cols[c].data = malloc(total * rt_col_type_size(cols[c].type) + 1);
        if (!s->cols[c].data)
            st = rt_err(err, RT_ERR_NOMEM, "%s: out of memory for %llu rows", name,
                        (unsigned long long)total);
    }
    const unsigned char *q = p + hlen;
    uint64_t row = 0;
    for (uint32_t g = 0; g < groups && st == RT_OK; g++) {
        uint64_t n = 0;
        size_t used = 0;
        st = shard_group(q, end, name, g, total - row, s->cols, ncols, row, &n, &used, err);
        q += used;
        row += n;
    }
    if (st == RT_OK && (row != total || q != end))
        st = rt_err(err, RT_ERR_INVALID, "%s: the row groups hold %llu rows, the trailer says "
                                         "%llu", name, (unsigned long long)row,
                    (unsigned long long)total);
    if (st != RT_OK) {
        rt_shard_free(s);
        return st;
    }
    shard_by_name(s);
    *out = s;
    return RT_OK;
}

rt_status rt_shard_parse(const void *data, size_t len, const char *name, rt_shard **out, char *err)
{
    rt_shard_col *cols = calloc(shard_header_cols(data, len), sizeof *cols);
    if (!cols) {
        *out = NULL;
        return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", name);
    }
    rt_status st = parse(data, len, name, cols, out, err);
    free(cols);
    return st;
}

rt_status rt_shard_read(const char *path, rt_shard **out, char *err)
{
    char *data = NULL;
    size_t len = 0;
    rt_status st = rt_data_read_file(path, MAX_FILE, &data, &len, err);
    if (st != RT_OK)
        return st;
    st = rt_shard_parse(data, len, path, out, err);
    free(data);
    return st;
}
