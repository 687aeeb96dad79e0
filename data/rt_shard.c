/* rt_shard.c — see rt_shard.h. */
#include "rt_shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "rt_file.h"

static const char MAGIC[8] = {'R', 'T', 'S', 'H', 'A', 'R', 'D', 0};
static const char GROUP[4] = {'R', 'G', 'R', 'P'};
static const char TRAILER[8] = {'R', 'T', 'E', 'N', 'D', 0, 0, 0};
#define TRAILER_LEN 24
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

static uint32_t rd_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd_u64(const unsigned char *p) { return rd_u32(p) | (uint64_t)rd_u32(p + 4) << 32; }

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

rt_status rt_shard_write(const char *path, const rt_shard_col *cols, int ncols, int64_t nrows,
                         int64_t rows_per_group, char *err)
{
    if (ncols <= 0 || ncols > RT_SHARD_MAX_COLS || nrows < 0 || nrows > INT32_MAX)
        return rt_err(err, RT_ERR_INVALID, "%s: %d columns, %lld rows: out of range", path, ncols,
                      (long long)nrows);
    if (rows_per_group <= 0)
        rows_per_group = 65536;
    bytes b = {0};
    add(&b, MAGIC, 8);
    add_u32(&b, RT_SHARD_VERSION);
    add_u32(&b, (uint32_t)ncols);
    for (int c = 0; c < ncols; c++) {
        size_t nl = strlen(cols[c].name);
        if (nl == 0 || nl >= RT_SHARD_NAME_LEN || rt_col_type_size(cols[c].type) == 0) {
            free(b.p);
            return rt_err(err, RT_ERR_INVALID, "%s: column %d has a bad name or type", path, c);
        }
        unsigned char h[2] = {(unsigned char)cols[c].type, (unsigned char)nl};
        add(&b, h, 2);
        add(&b, cols[c].name, nl);
    }
    if (!b.failed)
        add_u32(&b, crc(b.p, b.n));
    uint32_t groups = 0;
    for (int64_t r0 = 0; r0 < nrows; r0 += rows_per_group) { /* empty: no groups */
        int64_t n = nrows - r0 < rows_per_group ? nrows - r0 : rows_per_group;
        add(&b, GROUP, 4);
        add_u32(&b, (uint32_t)n);
        for (int c = 0; c < ncols; c++) {
            size_t esz = rt_col_type_size(cols[c].type);
            const unsigned char *raw = (const unsigned char *)cols[c].data + (size_t)r0 * esz;
            uLong rawn = (uLong)((size_t)n * esz);
            uLong bound = compressBound(rawn);
            unsigned char *hdr = reserve(&b, 12 + bound);
            if (!hdr)
                break;
            uLongf comp = bound;
            if (compress2(hdr + 12, &comp, raw, rawn, 6) != Z_OK) {
                free(b.p);
                return rt_err(err, RT_ERR_IO, "%s: zlib failed on column %s", path,
                              cols[c].name);
            }
            uint32_t v[3] = {(uint32_t)rawn, (uint32_t)comp, crc(hdr + 12, comp)};
            for (int k = 0; k < 3; k++)
                for (int i = 0; i < 4; i++)
                    hdr[4 * k + i] = (unsigned char)(v[k] >> (8 * i));
            b.n += 12 + comp;
        }
        groups++;
    }
    add(&b, TRAILER, 8);
    size_t tail = b.n;
    add_u64(&b, (uint64_t)nrows);
    add_u32(&b, groups);
    if (!b.failed)
        add_u32(&b, crc(b.p + tail, 12));
    if (b.failed) {
        free(b.p);
        return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", path);
    }
    rt_iov iov = {b.p, b.n};
    rt_status st = rt_write_atomic(path, &iov, 1, err);
    free(b.p);
    return st;
}

/* ---- reading --------------------------------------------------------------------- */

void rt_shard_free(rt_shard *s)
{
    if (!s)
        return;
    for (int c = 0; c < s->ncols; c++)
        free(s->cols[c].data);
    free(s->cols);
    free(s);
}

const rt_shard_col *rt_shard_find(const rt_shard *s, const char *name)
{
    for (int c = 0; c < s->ncols; c++)
        if (strcmp(s->cols[c].name, name) == 0)
            return &s->cols[c];
    return NULL;
}

rt_status rt_shard_parse(const void *data, size_t len, const char *name, rt_shard **out,
                         char *err)
{
    *out = NULL;
    const unsigned char *p = data, *end = p + len;
    if (len < 16 || memcmp(p, MAGIC, 8) != 0)
        return rt_err(err, RT_ERR_INVALID, "%s is not a ringtrain shard (bad magic)", name);
    uint32_t version = rd_u32(p + 8), ncols = rd_u32(p + 12);
    if (version != RT_SHARD_VERSION)
        return rt_err(err, RT_ERR_INVALID, "%s: shard version %u, this build reads %d", name,
                      version, RT_SHARD_VERSION);
    if (ncols == 0 || ncols > RT_SHARD_MAX_COLS)
        return rt_err(err, RT_ERR_INVALID, "%s: corrupt header (%u columns)", name, ncols);
    if (len < 16 + TRAILER_LEN || memcmp(end - TRAILER_LEN, TRAILER, 8) != 0)
        return rt_err(err, RT_ERR_INVALID,
                      "%s is truncated: no trailer (the file was cut short or is still being "
                      "written)",
                      name);
    const unsigned char *t = end - TRAILER_LEN + 8;
    if (crc(t, 12) != rd_u32(t + 12))
        return rt_err(err, RT_ERR_INVALID, "%s: corrupt trailer (CRC mismatch)", name);
    uint64_t total = rd_u64(t);
    uint32_t groups = rd_u32(t + 8);
    if (total > INT32_MAX)
        return rt_err(err, RT_ERR_INVALID, "%s: corrupt trailer (%llu rows)", name,
                      (unsigned long long)total);
    rt_shard *s = calloc(1, sizeof *s);
    if (!s || !(s->cols = calloc(ncols, sizeof *s->cols))) {
        free(s);
        return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", name);
    }
    s->ncols = (int)ncols;
    s->nrows = (int64_t)total;
    rt_status st = RT_OK;
    const unsigned char *q = p + 16;
    end -= TRAILER_LEN;
    for (uint32_t c = 0; c < ncols && st == RT_OK; c++) {
        if (end - q < 2 || end - q - 2 < q[1]) {
            st = rt_err(err, RT_ERR_INVALID, "%s: corrupt header (column %u)", name, c);
            break;
        }
        rt_shard_col *col = &s->cols[c];
        col->type = (rt_col_type)q[0];
        size_t nl = q[1];
        if (rt_col_type_size(col->type) == 0 || nl == 0 || nl >= RT_SHARD_NAME_LEN) {
            st = rt_err(err, RT_ERR_INVALID, "%s: corrupt header (column %u)", name, c);
            break;
        }
        memcpy(col->name, q + 2, nl);
        col->name[nl] = '\0';
        q += 2 + nl;
        col->data = malloc(total * rt_col_type_size(col->type) + 1);
        if (!col->data)
            st = rt_err(err, RT_ERR_NOMEM, "%s: out of memory for %llu rows", name,
                        (unsigned long long)total);
    }
    if (st == RT_OK && (end - q < 4 || crc(p, (size_t)(q - p)) != rd_u32(q)))
        st = rt_err(err, RT_ERR_INVALID, "%s: corrupt header (CRC mismatch)", name);
    q += 4;
    uint64_t row = 0;
    for (uint32_t g = 0; g < groups && st == RT_OK; g++) {
        if (end - q < 8 || memcmp(q, GROUP, 4) != 0) {
            st = rt_err(err, RT_ERR_INVALID, "%s: row group %u is missing or corrupt", name, g);
            break;
        }
        uint64_t n = rd_u32(q + 4);
        q += 8;
        if (n == 0 || row + n > total) {
            st = rt_err(err, RT_ERR_INVALID, "%s: row group %u has %llu rows, more than the "
                                             "trailer's total", name, g, (unsigned long long)n);
            break;
        }
        for (uint32_t c = 0; c < ncols && st == RT_OK; c++) {
            rt_shard_col *col = &s->cols[c];
            size_t esz = rt_col_type_size(col->type);
            if (end - q < 12) {
                st = rt_err(err, RT_ERR_INVALID, "%s: row group %u, column %s: cut short", name,
                            g, col->name);
                break;
            }
            uint32_t rawn = rd_u32(q), comp = rd_u32(q + 4), want = rd_u32(q + 8);
            q += 12;
            if (rawn != n * esz || (uint64_t)(end - q) < comp) {
                st = rt_err(err, RT_ERR_INVALID, "%s: row group %u, column %s: corrupt sizes",
                            name, g, col->name);
                break;
            }
            unsigned char *dst = (unsigned char *)col->data + row * esz;
            uLongf got = rawn;
            if (crc(q, comp) != want || uncompress(dst, &got, q, comp) != Z_OK || got != rawn) {
                st = rt_err(err, RT_ERR_INVALID,
                            "%s: row group %u, column %s is corrupt (CRC mismatch)", name, g,
                            col->name);
                break;
            }
            q += comp;
        }
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
    *out = s;
    return RT_OK;
}

rt_status rt_shard_read(const char *path, rt_shard **out, char *err)
{
    char *data = NULL;
    size_t len = 0;
    rt_status st = rt_read_file(path, MAX_FILE, &data, &len, err);
    if (st != RT_OK)
        return st;
    st = rt_shard_parse(data, len, path, out, err);
    free(data);
    return st;
}
