/* pq_decode.c — a column chunk's pages into values: page headers,
 * definition levels and the value encodings (codecs and the conversion
 * into rt_parquet.h's kinds are pq_convert.c).  Every length, count
 * and offset read from the file is checked against the bytes that hold it
 * before it is used. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "pq_internal.h"
#include "pq_thrift.h"

#define MAX_PAGE (256u << 20) /* uncompressed bytes of one page */

/* What decoding one column chunk needs; buffers reused across its pages. */
typedef struct dec {
    rt_pq_file *f;
    const pq_col *col;
    rt_pq_values *v;
    int rg;
    char *err;
    uint8_t *page, *levels, *scratch, *dict_buf;
    size_t page_cap, levels_cap, scratch_cap;
    phys *vals, *dict;
    size_t vals_cap;
    int64_t ndict;
    bool have_dict;
} dec;

static rt_status bad(dec *d, const char *what)
{
    return rt_err(d->err, RT_ERR_INVALID, "%s: column '%s', row group %d: %s", d->f->name,
                  d->col->pub.name, d->rg, what);
}

/* bw (<= 64) bits at bit position pos of p, least significant first. */
static uint64_t unpack(const uint8_t *p, uint64_t pos, int bw)
{
    if (bw == 0)
        return 0;
    const uint8_t *q = p + (pos >> 3);
    int shift = (int)(pos & 7), need = (shift + bw + 7) / 8;
    unsigned __int128 w = 0;
    for (int i = 0; i < need; i++)
        w |= (unsigned __int128)q[i] << (8 * i);
    w >>= shift;
    return bw == 64 ? (uint64_t)w : (uint64_t)w & ((UINT64_C(1) << bw) - 1);
}

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* ---- the RLE / bit-packed hybrid (levels, dictionary indices, booleans) -------------- */

typedef struct hyb {
    const uint8_t *p, *end, *packed;
    int bw;
    uint64_t rle_left, packed_left, pos, value;
} hyb;

static bool hyb_next(hyb *h, uint64_t *out)
{
    while (h->rle_left == 0 && h->packed_left == 0) {
        uint64_t hdr;
        if (!varint(&h->p, h->end, &hdr))
            return false;
        if (hdr & 1) {
            uint64_t groups = hdr >> 1;
            if (groups > (uint64_t)(h->end - h->p) ||
                groups * (uint64_t)h->bw > (uint64_t)(h->end - h->p))
                return false;
            h->packed = h->p;
            h->p += groups * (uint64_t)h->bw;
            h->packed_left = groups * 8;
            h->pos = 0;
        } else {
            int nb = (h->bw + 7) / 8;
            if (h->end - h->p < nb)
                return false;
            h->value = 0;
            for (int i = 0; i < nb; i++)
                h->value |= (uint64_t)h->p[i] << (8 * i);
            h->p += nb;
            h->rle_left = hdr >> 1;
        }
    }
    if (h->rle_left) {
        h->rle_left--;
        *out = h->value;
    } else {
        h->packed_left--;
        *out = unpack(h->packed, h->pos, h->bw);
        h->pos += (uint64_t)h->bw;
    }
    return true;
}

/* ---- DELTA_BINARY_PACKED ------------------------------------------------------------- */

/* Decodes exactly `count` values (the header must say so) into out;
 * *after is where the encoded data ends. */
static const char *delta_decode(const uint8_t *p, const uint8_t *end, int64_t count, int64_t *out,
                                const uint8_t **after)
{
    uint64_t block, nmini, total, first;
    if (!varint(&p, end, &block) || !varint(&p, end, &nmini) || !varint(&p, end, &total) ||
        !varint(&p, end, &first))
        return "truncated DELTA_BINARY_PACKED header";
    if (block == 0 || block > (1u << 16) || nmini == 0 || block % nmini || (block / nmini) % 8)
        return "bad DELTA_BINARY_PACKED block size";
    if (total != (uint64_t)count)
        return "DELTA_BINARY_PACKED holds a different number of values than the page";
    uint64_t per_mini = block / nmini;
    uint64_t cur = (first >> 1) ^ -(first & 1);
    int64_t n = 0;
    if (count > 0)
        out[n++] = (int64_t)cur;
    while (n < count) {
        uint64_t zz;
        if (!varint(&p, end, &zz) || (uint64_t)(end - p) < nmini)
            return "truncated DELTA_BINARY_PACKED block";
        uint64_t min_delta = (zz >> 1) ^ -(zz & 1);
        const uint8_t *widths = p;
        p += nmini;
        for (uint64_t m = 0; m < nmini && n < count; m++) {
            int bw = widths[m];
            if (bw > 64)
                return "DELTA_BINARY_PACKED bit width above 64";
            uint64_t bytes = per_mini * (uint64_t)bw / 8;
            if (bytes > (uint64_t)(end - p))
                return "truncated DELTA_BINARY_PACKED miniblock";
            for (uint64_t j = 0; j < per_mini && n < count; j++) {
                cur += min_delta + unpack(p, j * (uint64_t)bw, bw);
                out[n++] = (int64_t)cur;
            }
            p += bytes;
        }
    }
    *after = p;
    return NULL;
}

/* ---- values -------------------------------------------------------------------------- */

static phys *vals_for(dec *d, int64_t n)
{
    if (!grow((void **)&d->vals, &d->vals_cap, (size_t)(n + 1) * sizeof(phys)))
        return NULL;
    memset(d->vals, 0, (size_t)(n + 1) * sizeof(phys));
    return d->vals;
}

static int width_of(const pq_col *c)
{
    switch (c->pub.physical) {
    case PQ_INT32:
    case PQ_FLOAT:
        return 4;
    case PQ_INT64:
    case PQ_DOUBLE:
        return 8;
    case PQ_INT96:
        return 12;
    case PQ_FLBA:
        return c->type_length;
    default:
        return 0;
    }
}

/* A fixed-width value's bytes into x (little-endian numbers). */
static void fixed_value(const pq_col *c, const uint8_t *b, phys *x)
{
    switch (c->pub.physical) {
    case PQ_INT32:
        x->i = (int32_t)rt_get_le32(b);
        break;
    case PQ_INT64:
        x->i = (int64_t)rt_get_le64(b);
        break;
    case PQ_FLOAT: {
        uint32_t u = rt_get_le32(b);
        float fl;
        memcpy(&fl, &u, 4);
        x->d = fl;
        break;
    }
    case PQ_DOUBLE: {
        uint64_t u = rt_get_le64(b);
        memcpy(&x->d, &u, 8);
        break;
    }
    default:
        x->b = b;
        x->len = (uint32_t)width_of(c);
    }
}

static const char *decode_plain(const pq_col *c, const uint8_t *p, const uint8_t *end, int64_t n,
                                phys *out)
{
    size_t left = (size_t)(end - p);
    if (c->pub.physical == PQ_BOOLEAN) {
        if ((uint64_t)n > (uint64_t)left * 8)
            return "PLAIN booleans: page too short";
        for (int64_t k = 0; k < n; k++)
            out[k].i = p[k >> 3] >> (k & 7) & 1;
        return NULL;
    }
    if (c->pub.physical == PQ_BYTE_ARRAY) {
        for (int64_t k = 0; k < n; k++) {
            if (end - p < 4)
                return "PLAIN BYTE_ARRAY: page too short";
            uint32_t len = rt_get_le32(p);
            p += 4;
            if (len > (uint64_t)(end - p))
                return "PLAIN BYTE_ARRAY: a value runs past the page";
            out[k].b = p;
            out[k].len = len;
            p += len;
        }
        return NULL;
    }
    int w = width_of(c);
    if ((uint64_t)n * (uint64_t)w > left)
        return "PLAIN: page too short for its values";
    for (int64_t k = 0; k < n; k++)
        fixed_value(c, p + (size_t)k * (size_t)w, &out[k]);
    return NULL;
}

static const char *decode_bss(dec *d, const uint8_t *p, const uint8_t *end, int64_t n, phys *out)
{
    int w = width_of(d->col);
    if (w == 0 || d->col->pub.physical == PQ_INT96)
        return "BYTE_STREAM_SPLIT on a type it does not apply to";
    if ((uint64_t)n * (uint64_t)w > (uint64_t)(end - p))
        return "BYTE_STREAM_SPLIT: page too short for its values";
    if (!grow((void **)&d->scratch, &d->scratch_cap, (size_t)n * (size_t)w + 1))
        return "out of memory";
    for (int64_t k = 0; k < n; k++) {
        uint8_t *dst = d->scratch + (size_t)k * (size_t)w;
        for (int b = 0; b < w; b++)
            dst[b] = p[(size_t)b * (size_t)n + (size_t)k];
        fixed_value(d->col, dst, &out[k]);
    }
    return NULL;
}

/* DELTA_LENGTH_BYTE_ARRAY (prefix NULL) and DELTA_BYTE_ARRAY. */
static const char *decode_delta_bytes(dec *d, bool with_prefix, const uint8_t *p,
                                      const uint8_t *end, int64_t n, phys *out)
{
    int physical = d->col->pub.physical;
    if (physical != PQ_BYTE_ARRAY && !(with_prefix && physical == PQ_FLBA))
        return "a DELTA byte-array encoding on a type it does not apply to";
    int64_t *pre = calloc((size_t)n + 1, sizeof *pre), *len = calloc((size_t)n + 1, sizeof *len);
    const char *why = NULL;
    if (!pre || !len)
        why = "out of memory";
    if (!why && with_prefix)
        why = delta_decode(p, end, n, pre, &p);
    if (!why)
        why = delta_decode(p, end, n, len, &p);
    size_t total = 0, prev_off = 0, prev_len = 0;
    for (int64_t k = 0; k < n && !why; k++) {
        if (pre[k] < 0 || len[k] < 0 || (uint64_t)len[k] > (uint64_t)(end - p) ||
            (uint64_t)pre[k] > prev_len)
            why = "a DELTA byte-array value's length is out of range";
        else {
            size_t vl = (size_t)pre[k] + (size_t)len[k];
            if (vl > UINT32_MAX || !grow((void **)&d->scratch, &d->scratch_cap, total + vl + 1)) {
                why = "a DELTA byte-array value is too large";
                break;
            }
            memmove(d->scratch + total, d->scratch + prev_off, (size_t)pre[k]);
            memcpy(d->scratch + total + pre[k], p, (size_t)len[k]);
            p += len[k];
            out[k].i = (int64_t)total; /* an offset until the arena stops moving */
            out[k].len = (uint32_t)vl;
            prev_off = total;
            prev_len = vl;
            total += vl;
        }
    }
    for (int64_t k = 0; k < n && !why; k++) {
        out[k].b = d->scratch + out[k].i;
        if (physical == PQ_FLBA && out[k].len != (uint32_t)d->col->type_length)
            why = "a DELTA_BYTE_ARRAY value has the wrong fixed length";
    }
    free(pre);
    free(len);
    return why;
}

static const char *decode_values(dec *d, int enc, const uint8_t *p, const uint8_t *end, int64_t n,
                                 phys *out)
{
    const pq_col *c = d->col;
    switch (enc) {
    case ENC_PLAIN:
        return decode_plain(c, p, end, n, out);
    case ENC_PLAIN_DICT:
    case ENC_RLE_DICT: {
        if (!d->have_dict)
            return "dictionary-encoded page without a dictionary page";
        if (n == 0)
            return NULL;
        if (p >= end || *p > 32)
            return "bad dictionary index width";
        hyb h = {.p = p + 1, .end = end, .bw = *p};
        for (int64_t k = 0; k < n; k++) {
            uint64_t idx;
            if (!hyb_next(&h, &idx))
                return "truncated dictionary indices";
            if (idx >= (uint64_t)d->ndict)
                return "dictionary index out of range";
            out[k] = d->dict[idx];
        }
        return NULL;
    }
    case ENC_RLE: {
        if (c->pub.physical != PQ_BOOLEAN)
            return "RLE values on a column that is not BOOLEAN";
        if (end - p < 4 || rt_get_le32(p) > (uint64_t)(end - p - 4))
            return "truncated RLE booleans";
        hyb h = {.p = p + 4, .end = p + 4 + rt_get_le32(p), .bw = 1};
        for (int64_t k = 0; k < n; k++) {
            uint64_t b;
            if (!hyb_next(&h, &b))
                return "truncated RLE booleans";
            out[k].i = (int64_t)b;
        }
        return NULL;
    }
    case ENC_DELTA_BP: {
        if (c->pub.physical != PQ_INT32 && c->pub.physical != PQ_INT64)
            return "DELTA_BINARY_PACKED on a column that is not INT32 or INT64";
        int64_t *tmp = malloc(((size_t)n + 1) * sizeof *tmp);
        const uint8_t *after;
        const char *why = tmp ? delta_decode(p, end, n, tmp, &after) : "out of memory";
        for (int64_t k = 0; !why && k < n; k++)
            out[k].i = c->pub.physical == PQ_INT32 ? (int32_t)(uint32_t)tmp[k] : tmp[k];
        free(tmp);
        return why;
    }
    case ENC_DELTA_LBA:
        return decode_delta_bytes(d, false, p, end, n, out);
    case ENC_DELTA_BA:
        return decode_delta_bytes(d, true, p, end, n, out);
    case ENC_BSS:
        return decode_bss(d, p, end, n, out);
    default:
        return "an encoding ringtrain does not read";
    }
}

/* ---- pages --------------------------------------------------------------------------- */

typedef struct page_hdr {
    int type;
    int64_t usize, csize, crc, nvalues, nnulls, def_len, rep_len, dict_n;
    int enc, def_enc;
    bool has_crc, compressed;
} page_hdr;

enum { PAGE_DATA = 0, PAGE_INDEX = 1, PAGE_DICT = 2, PAGE_DATA_V2 = 3 };

static void read_sub(tc *t, int type, int which, page_hdr *h)
{
    if (!tc_enter(t, type))
        return;
    int16_t last = 0;
    int ft;
    while (tc_field(t, &last, &ft)) {
        if (ft == TC_STRUCT || ft == TC_BINARY || ft == TC_LIST || ft == TC_MAP || ft == TC_SET ||
            ft == TC_DOUBLE) {
            tc_skip(t, ft); /* statistics */
            continue;
        }
        int64_t x = tc_int(t, ft);
        if (which == 5) { /* DataPageHeader */
            if (last == 1)
                h->nvalues = x;
            else if (last == 2)
                h->enc = (int)x;
            else if (last == 3)
                h->def_enc = (int)x;
        } else if (which == 7) { /* DictionaryPageHeader */
            if (last == 1)
                h->dict_n = x;
            else if (last == 2)
                h->enc = (int)x;
        } else { /* DataPageHeaderV2 */
            if (last == 1)
                h->nvalues = x;
            else if (last == 2)
                h->nnulls = x;
            else if (last == 4)
                h->enc = (int)x;
            else if (last == 5)
                h->def_len = x;
            else if (last == 6)
                h->rep_len = x;
            else if (last == 7)
                h->compressed = x != 0;
        }
    }
    tc_leave(t);
}

static const char *read_page_header(const uint8_t *p, const uint8_t *end, page_hdr *h, size_t *hlen)
{
    memset(h, 0, sizeof *h);
    h->type = -1;
    h->enc = h->def_enc = -1;
    h->compressed = true;
    tc t = {.p = p, .end = end};
    int16_t last = 0;
    int ft;
    while (tc_field(&t, &last, &ft)) {
        if (last == 1)
            h->type = (int)tc_int(&t, ft);
        else if (last == 2)
            h->usize = tc_int(&t, ft);
        else if (last == 3)
            h->csize = tc_int(&t, ft);
        else if (last == 4) {
            h->crc = tc_int(&t, ft);
            h->has_crc = true;
        } else if (last == 5 || last == 7 || last == 8)
            read_sub(&t, ft, last, h);
        else
            tc_skip(&t, ft);
    }
    if (t.bad)
        return t.bad;
    if (h->usize < 0 || h->csize < 0 || h->usize > MAX_PAGE || h->nvalues < 0 || h->nnulls < 0 ||
        h->def_len < 0 || h->rep_len < 0 || h->dict_n < 0)
        return "a page header with a negative or oversized count";
    *hlen = (size_t)(t.p - p);
    return NULL;
}

/* The page's bytes after decompression (the data section of a v2 page). */
static const char *page_bytes(dec *d, int codec, const uint8_t *src, size_t n, size_t out_n,
                              const uint8_t **out)
{
    if (codec == CODEC_NONE) {
        if (n != out_n)
            return "an uncompressed page whose two sizes differ";
        *out = src;
        return NULL;
    }
    if (!grow((void **)&d->page, &d->page_cap, out_n + 1))
        return "out of memory";
    *out = d->page;
    return pq_decompress(codec, src, n, d->page, out_n);
}

static const char *dictionary_page(dec *d, int codec, const page_hdr *h, const uint8_t *src)
{
    if (d->have_dict)
        return "a second dictionary page";
    if (h->enc != ENC_PLAIN && h->enc != ENC_PLAIN_DICT)
        return "a dictionary page not PLAIN-encoded";
    int w = d->col->pub.physical == PQ_BYTE_ARRAY ? 4 : width_of(d->col); /* bytes a value takes */
    if (d->col->pub.physical == PQ_BOOLEAN ? h->dict_n > h->usize * 8 : h->dict_n > h->usize / w)
        return "a dictionary page with more values than its bytes can hold";
    const uint8_t *bytes;
    const char *why = page_bytes(d, codec, src, (size_t)h->csize, (size_t)h->usize, &bytes);
    if (why)
        return why;
    if (bytes == d->page) { /* keep it: the page buffer is reused */
        d->dict_buf = malloc((size_t)h->usize + 1);
        if (!d->dict_buf)
            return "out of memory";
        memcpy(d->dict_buf, bytes, (size_t)h->usize);
        bytes = d->dict_buf;
    }
    d->dict = calloc((size_t)h->dict_n + 1, sizeof *d->dict);
    if (!d->dict)
        return "out of memory";
    d->ndict = h->dict_n;
    d->have_dict = true;
    return decode_plain(d->col, bytes, bytes + h->usize, h->dict_n, d->dict);
}

/* A data page (v1 or v2) into rows [done, done + nvalues) of the output. */
static const char *data_page(dec *d, int codec, const page_hdr *h, const uint8_t *src, int64_t done)
{
    int64_t n = h->nvalues;
    const uint8_t *lv = NULL, *lv_end = NULL, *vals = NULL, *vals_end;
    bool v2 = h->type == PAGE_DATA_V2;
    const char *why;
    if (v2) {
        if (h->rep_len + h->def_len > h->csize || h->rep_len + h->def_len > h->usize)
            return "v2 page levels longer than the page";
        lv = src + h->rep_len;
        lv_end = lv + h->def_len;
        size_t body = (size_t)(h->csize - h->rep_len - h->def_len);
        size_t ubody = (size_t)(h->usize - h->rep_len - h->def_len);
        if ((why = page_bytes(d, h->compressed ? codec : CODEC_NONE, lv_end, body, ubody, &vals)))
            return why;
        vals_end = vals + ubody;
    } else {
        if ((why = page_bytes(d, codec, src, (size_t)h->csize, (size_t)h->usize, &vals)))
            return why;
        vals_end = vals + h->usize;
        if (d->col->pub.nullable) {
            if (h->def_enc != ENC_RLE)
                return "definition levels not RLE-encoded (BIT_PACKED levels are not read)";
            if (vals_end - vals < 4 || rt_get_le32(vals) > (uint64_t)(vals_end - vals - 4))
                return "truncated definition levels";
            lv = vals + 4;
            lv_end = lv + rt_get_le32(vals);
            vals = lv_end;
        }
    }
    if (!grow((void **)&d->levels, &d->levels_cap, (size_t)n + 1))
        return "out of memory";
    int64_t nonnull = n;
    if (d->col->pub.nullable) {
        hyb hl = {.p = lv, .end = lv_end, .bw = 1};
        nonnull = 0;
        for (int64_t k = 0; k < n; k++) {
            uint64_t x;
            if (!hyb_next(&hl, &x))
                return "truncated definition levels";
            d->levels[k] = (uint8_t)x;
            nonnull += x;
        }
    } else if (v2 && h->nnulls)
        return "NULLs in a required column";
    if (v2 && h->nnulls != n - nonnull)
        return "the v2 page header's NULL count disagrees with its levels";
    phys *x = vals_for(d, nonnull);
    if (!x)
        return "out of memory";
    if ((why = decode_values(d, h->enc, vals, vals_end, nonnull, x)))
        return why;
    for (int64_t k = 0, j = 0; k < n; k++) {
        if (d->col->pub.nullable && !d->levels[k]) {
            d->v->null[done + k] = 1;
            continue;
        }
        if ((why = pq_emit(d->col, d->v, done + k, &x[j++])))
            return why;
    }
    return NULL;
}

/* Output arrays for n rows of the column's kind, reusing v's buffers. */
static bool prepare_values(rt_pq_values *v, rt_pq_kind kind, int64_t n)
{
    size_t rows = (size_t)n + 1;
    v->n = n;
    v->nbytes = 0;
    free(v->null);
    v->null = calloc(rows, 1);
    if (!v->null)
        return false;
    if (kind == RT_PQ_INT)
        return (v->i = realloc(v->i, rows * sizeof *v->i)) != NULL;
    if (kind == RT_PQ_REAL)
        return (v->r = realloc(v->r, rows * sizeof *v->r)) != NULL;
    return (v->off = realloc(v->off, rows * sizeof *v->off)) != NULL &&
           (v->len = realloc(v->len, rows * sizeof *v->len)) != NULL;
}

rt_status pq_read_chunk(rt_pq_file *f, int rg, int col, rt_pq_values *v, char *err)
{
    const pq_chunk *ch = &f->chunks[(size_t)rg * (size_t)f->ncols + (size_t)col];
    dec d = {.f = f, .col = &f->cols[col], .v = v, .rg = rg, .err = err};
    int64_t rows = f->group_rows[rg];
    if (ch->codec == CODEC_LZO || ch->codec == CODEC_BROTLI || ch->codec < 0 ||
        ch->codec > CODEC_LZ4_RAW)
        return rt_err(err, RT_ERR_UNSUPPORTED,
                      "%s: column '%s' is compressed with %s, which ringtrain does not read "
                      "(write with SNAPPY, GZIP, ZSTD or LZ4_RAW)",
                      f->name, d.col->pub.name, pq_codec_name(ch->codec));
    if (ch->num_values != rows)
        return bad(&d, "the column chunk holds a different number of values than the row "
                       "group has rows");
    if (rows > INT32_MAX)
        return bad(&d, "more than 2^31 rows in one row group");
    if (ch->start < 4 || ch->size < 0 || (uint64_t)ch->start > f->size ||
        (uint64_t)ch->size > f->size - (uint64_t)ch->start)
        return bad(&d, "the column chunk lies outside the file");
    if (!prepare_values(v, d.col->pub.kind, rows))
        return rt_err(err, RT_ERR_NOMEM, "%s: column '%s': no memory for %lld rows", f->name,
                      d.col->pub.name, (long long)rows);
    const uint8_t *p = f->data + ch->start, *end = p + ch->size;
    const char *why = NULL;
    int64_t done = 0;
    char where[64] = "";
    while (!why && done < rows) {
        page_hdr h;
        size_t hlen = 0;
        if (p >= end) {
            why = "the column chunk ends before all its values";
            break;
        }
        snprintf(where, sizeof where, " (page at byte %lld)", (long long)(p - f->data));
        if ((why = read_page_header(p, end, &h, &hlen)))
            break;
        const uint8_t *src = p + hlen;
        if (h.csize > end - src) {
            why = "a page runs past its column chunk";
            break;
        }
        p = src + h.csize;
        if (h.has_crc && (uint32_t)crc32(0, src, (uInt)h.csize) != (uint32_t)h.crc) {
            why = "page CRC mismatch: the file is damaged";
            break;
        }
        f->codec_seen |= 1u << ch->codec;
        if (h.type == PAGE_DICT) {
            why = done ? "a dictionary page after data pages"
                       : dictionary_page(&d, ch->codec, &h, src);
            f->enc_seen |= 1u << (h.enc & 31);
        } else if (h.type == PAGE_DATA || h.type == PAGE_DATA_V2) {
            if (h.nvalues > rows - done)
                why = "a page holds more values than the row group has rows left";
            else if ((why = data_page(&d, ch->codec, &h, src, done)) == NULL) {
                done += h.nvalues;
                f->enc_seen |= 1u << (h.enc & 31);
            }
        } /* index pages and unknown page types are skipped */
    }
    free(d.page);
    free(d.levels);
    free(d.scratch);
    free(d.dict_buf);
    free(d.vals);
    free(d.dict);
    if (why)
        return rt_err(err, strcmp(why, "out of memory") ? RT_ERR_INVALID : RT_ERR_NOMEM,
                      "%s: column '%s', row group %d: %s%s", f->name, d.col->pub.name, rg, why,
                      where);
    return RT_OK;
}
