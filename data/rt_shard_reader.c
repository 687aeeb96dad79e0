/* rt_shard_reader.c — see rt_shard.h: a shard read one row group at a time
 * (pread, or ranged GETs of an object in S3: rt_data_io.h; memory: the row
 * group asked for).  Opening reads the header, the trailer and the index
 * of the row groups before it — three reads, for an object in S3 three
 * GETs — so a damaged or cut-short file is refused before the first row is
 * used; a version-1 shard (no index) has its row groups' headers walked,
 * a pass over the whole file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_data_io.h"
#include "rt_endian.h"
#include "shard_internal.h"

struct rt_shard_reader {
    rt_src *src;
    char name[1100];
    int ncols;
    rt_shard_col *cols; /* ncols of them */
    int64_t rows;
    int ngroups;
    int64_t *off, *len, *grows; /* per row group */
};

static bool read_at(rt_src *src, void *buf, size_t n, int64_t off, char *err)
{
    return rt_src_read_at(src, buf, n, off, err) == RT_OK;
}

/* Version 1: every row group's header, from the first on. */
static rt_status walk_groups(rt_shard_reader *r, int64_t hlen, int64_t size, char *err)
{
    char e[RT_ERR_LEN];
    int64_t at = hlen, end = size - TRAILER_LEN, row = 0;
    for (int g = 0; g < r->ngroups; g++) {
        unsigned char gh[12];
        if (end - at < 8 || !read_at(r->src, gh, 8, at, e) || memcmp(gh, "RGRP", 4) != 0)
            return rt_err(err, RT_ERR_INVALID, "%s: row group %d is missing or corrupt", r->name,
                          g);
        int64_t n = rt_get_le32(gh + 4);
        if (n == 0 || row + n > r->rows)
            return rt_err(err, RT_ERR_INVALID,
                          "%s: row group %d has %lld rows, more than the "
                          "trailer's total",
                          r->name, g, (long long)n);
        r->off[g] = at;
        r->grows[g] = n;
        at += 8;
        for (int c = 0; c < r->ncols; c++) {
            if (end - at < 12 || !read_at(r->src, gh, 12, at, e))
                return rt_err(err, RT_ERR_INVALID, "%s: row group %d, column %s: cut short",
                              r->name, g, r->cols[c].name);
            at += 12 + (int64_t)rt_get_le32(gh + 4);
            if (at > end)
                return rt_err(err, RT_ERR_INVALID, "%s: row group %d, column %s: corrupt sizes",
                              r->name, g, r->cols[c].name);
        }
        r->len[g] = at - r->off[g];
        row += n;
    }
    if (row != r->rows || at != end)
        return rt_err(err, RT_ERR_INVALID, "%s: the row groups hold %lld rows, the trailer says "
                                           "%lld", r->name, (long long)row, (long long)r->rows);
    return RT_OK;
}

/* Version 2: the index before the trailer — in the file's tail already
 * read (tl bytes), or in one more read when it is longer. */
static rt_status read_index(rt_shard_reader *r, int64_t hlen, int64_t size,
                            const unsigned char *tail, int64_t tl, char *err)
{
    int64_t ilen = (int64_t)SHARD_INDEX_LEN(r->ngroups);
    if (ilen > size - hlen - TRAILER_LEN)
        return rt_err(err, RT_ERR_INVALID, "%s: corrupt trailer (%d row groups)", r->name,
                      r->ngroups);
    int64_t at = size - TRAILER_LEN - ilen;
    bool in_tail = ilen <= tl - TRAILER_LEN;
    unsigned char *x = in_tail ? NULL : malloc((size_t)ilen);
    char e[RT_ERR_LEN];
    rt_status st = RT_OK;
    if (!in_tail && !x)
        st = rt_err(err, RT_ERR_NOMEM, "%s: out of memory", r->name);
    else if (!in_tail && !read_at(r->src, x, (size_t)ilen, at, e))
        st = rt_err(err, RT_ERR_IO, "cannot read %s: %s", r->name, e);
    else
        st = shard_index(in_tail ? tail + tl - TRAILER_LEN - ilen : x, (uint32_t)r->ngroups,
                         (uint64_t)r->rows, r->ncols, (uint64_t)hlen, (uint64_t)at, r->name, r->off,
                         r->len, r->grows, err);
    free(x);
    return st;
}

/* The file's last bytes read at once: the trailer and (version 2) an index
 * of up to about 21,000 row groups, one ranged GET in S3. */
#define TAIL_READ (256 << 10)

/* The header's bytes: its column count first (in the first 16), then at
 * most what that many columns' names take — one read for a header of up
 * to ~1,000 columns, a second for a wider one (65,536 columns: ~4 MB). */
static rt_status header_bytes(rt_shard_reader *r, int64_t size, unsigned char **out, size_t *len,
                              char *err)
{
    enum { FIRST = 64 << 10 };
    size_t have = (size_t)size < FIRST ? (size_t)size : FIRST;
    unsigned char *head = malloc(have ? have : 1);
    char e[RT_ERR_LEN];
    *out = NULL;
    if (!head)
        return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", r->name);
    if (!read_at(r->src, head, have, 0, e)) {
        free(head);
        return rt_err(err, RT_ERR_IO, "cannot read %s: %s", r->name, e);
    }
    uint32_t n = have >= 16 ? rt_get_le32(head + 12) : 0;
    n = n < RT_SHARD_MAX_COLS ? n : RT_SHARD_MAX_COLS; /* more: shard_header refuses it */
    size_t need = 16 + (size_t)n * (2 + RT_SHARD_NAME_LEN) + 32;
    need = (size_t)size < need ? (size_t)size : need;
    if (need > have) {
        unsigned char *more = realloc(head, need);
        if (!more) {
            free(head);
            return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", r->name);
        }
        head = more;
        if (!read_at(r->src, head + have, need - have, (int64_t)have, e)) {
            free(head);
            return rt_err(err, RT_ERR_IO, "cannot read %s: %s", r->name, e);
        }
        have = need;
    }
    *out = head;
    *len = have;
    return RT_OK;
}

/* The header's columns into r->cols (as many as it has) */
static rt_status read_header(rt_shard_reader *r, int64_t size, size_t *hlen, int *version,
                             char *err)
{
    size_t len = 0;
    unsigned char *head = NULL;
    rt_status st = header_bytes(r, size, &head, &len, err);
    if (st != RT_OK)
        return st;
    if (!(r->cols = calloc(shard_header_cols(head, len), sizeof *r->cols)))
        st = rt_err(err, RT_ERR_NOMEM, "%s: out of memory", r->name);
    else
        st = shard_header(head, len, r->name, r->cols, &r->ncols, hlen, version, err);
    free(head);
    return st;
}

static rt_status walk(rt_shard_reader *r, int64_t size, char *err)
{
    size_t hlen = 0;
    int version = 0;
    rt_status st = read_header(r, size, &hlen, &version, err);
    if (st != RT_OK)
        return st;
    char e[RT_ERR_LEN];
    if (size < (int64_t)(hlen + TRAILER_LEN))
        return rt_err(err, RT_ERR_INVALID,
                      "%s is truncated: no trailer (the file was cut short "
                      "or is still being written)",
                      r->name);
    int64_t tl = size - (int64_t)hlen < TAIL_READ ? size - (int64_t)hlen : TAIL_READ;
    unsigned char *tail = malloc((size_t)tl);
    if (!tail)
        return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", r->name);
    uint64_t total;
    uint32_t groups;
    if (!read_at(r->src, tail, (size_t)tl, size - tl, e))
        st = rt_err(err, RT_ERR_IO, "cannot read %s: %s", r->name, e);
    else if ((st = shard_trailer(tail + tl - TRAILER_LEN, r->name, &total, &groups, err)) ==
                 RT_OK &&
             (int64_t)groups > (size - (int64_t)hlen) / 8)
        st = rt_err(err, RT_ERR_INVALID, "%s: corrupt trailer (%u row groups)", r->name, groups);
    if (st == RT_OK) {
        r->rows = (int64_t)total;
        r->ngroups = (int)groups;
        r->off = calloc(groups + 1, sizeof *r->off);
        r->len = calloc(groups + 1, sizeof *r->len);
        r->grows = calloc(groups + 1, sizeof *r->grows);
        if (!r->off || !r->len || !r->grows)
            st = rt_err(err, RT_ERR_NOMEM, "%s: out of memory", r->name);
    }
    if (st == RT_OK)
        st = version >= 2 ? read_index(r, (int64_t)hlen, size, tail, tl, err)
                          : walk_groups(r, (int64_t)hlen, size, err);
    free(tail);
    return st;
}

rt_status rt_shard_reader_open(const char *path, rt_shard_reader **out, char *err)
{
    *out = NULL;
    rt_shard_reader *r = calloc(1, sizeof *r);
    if (!r)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    snprintf(r->name, sizeof r->name, "%s", path);
    int64_t size = 0;
    rt_status st = rt_src_open(path, &r->src, &size, err);
    if (st == RT_OK)
        st = walk(r, size, err);
    if (st != RT_OK) {
        rt_shard_reader_close(r);
        return st;
    }
    *out = r;
    return RT_OK;
}

void rt_shard_reader_close(rt_shard_reader *r)
{
    if (!r)
        return;
    rt_src_close(r->src);
    free(r->off);
    free(r->len);
    free(r->grows);
    free(r->cols);
    free(r);
}

int rt_shard_reader_ncols(const rt_shard_reader *r) { return r->ncols; }
const rt_shard_col *rt_shard_reader_col(const rt_shard_reader *r, int c) { return &r->cols[c]; }
int64_t rt_shard_reader_rows(const rt_shard_reader *r) { return r->rows; }
int rt_shard_reader_groups(const rt_shard_reader *r) { return r->ngroups; }
int64_t rt_shard_reader_group_rows(const rt_shard_reader *r, int g) { return r->grows[g]; }

rt_status rt_shard_reader_group(rt_shard_reader *r, int g, rt_shard **out, char *err)
{
    *out = NULL;
    if (g < 0 || g >= r->ngroups)
        return rt_err(err, RT_ERR_INVALID, "%s: no row group %d", r->name, g);
    unsigned char *buf = malloc((size_t)r->len[g]);
    rt_shard *s = calloc(1, sizeof *s);
    char e[RT_ERR_LEN];
    rt_status st = RT_OK;
    if (!buf || !s || !(s->cols = calloc((size_t)r->ncols, sizeof *s->cols)))
        st = rt_err(err, RT_ERR_NOMEM, "%s: out of memory", r->name);
    else if (rt_src_read_at(r->src, buf, (size_t)r->len[g], r->off[g], e) != RT_OK)
        st = rt_err(err, RT_ERR_IO, "cannot read %s: %s", r->name, e);
    if (st == RT_OK) {
        s->ncols = r->ncols;
        s->nrows = r->grows[g];
        for (int c = 0; c < r->ncols && st == RT_OK; c++) {
            s->cols[c] = r->cols[c];
            s->cols[c].data = malloc((size_t)s->nrows * rt_col_type_size(s->cols[c].type) + 1);
            if (!s->cols[c].data)
                st = rt_err(err, RT_ERR_NOMEM, "%s: out of memory", r->name);
        }
    }
    uint64_t n = 0;
    size_t used = 0;
    if (st == RT_OK)
        st = shard_group(buf, buf + r->len[g], r->name, (uint32_t)g, (uint64_t)r->grows[g],
                         s->cols, r->ncols, 0, &n, &used, err);
    if (st == RT_OK && (n != (uint64_t)r->grows[g] || used != (size_t)r->len[g]))
        st = rt_err(err, RT_ERR_INVALID, "%s: row group %d does not match the index", r->name, g);
    free(buf);
    if (st != RT_OK) {
        if (s && s->cols)
            rt_shard_free(s);
        else
            free(s);
        return st;
    }
    shard_by_name(s);
    *out = s;
    return RT_OK;
}
