/* pq_convert.c — see pq_internal.h: a physical value into its output
 * value (rt_parquet.h's kinds: dates and timestamps as text, decimals as
 * reals), and the page codecs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "pq_internal.h"
#include "rt_prep.h"

/* ---- physical values into output values ---------------------------------------------- */

static bool put_bytes(rt_pq_values *v, int64_t k, const void *b, size_t len)
{
    if (len > UINT32_MAX || !grow((void **)&v->bytes, &v->cap, v->nbytes + len + 1))
        return false;
    memcpy(v->bytes + v->nbytes, b, len);
    v->off[k] = v->nbytes;
    v->len[k] = (uint32_t)len;
    v->nbytes += len;
    return true;
}

/* 'YYYY-MM-DD HH:MM:SS[.fraction]' of a day number and time of day. */
static int render_time(char *buf, size_t cap, int64_t days, int64_t sec_of_day, int64_t frac,
                       int digits, bool with_date)
{
    int n = 0;
    if (with_date) {
        if (days < -719162 || days > 2932896) /* 0001-01-01 .. 9999-12-31 */
            return -1;
        rt_format_date((int32_t)days, buf);
        buf[10] = ' ';
        n = 11;
    }
    n += snprintf(buf + n, cap - (size_t)n, "%02d:%02d:%02d", (int)(sec_of_day / 3600),
                  (int)(sec_of_day / 60 % 60), (int)(sec_of_day % 60));
    if (frac)
        n += snprintf(buf + n, cap - (size_t)n, ".%0*lld", digits, (long long)frac);
    return n;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static double decimal_bytes(const uint8_t *b, uint32_t len)
{
    if (len == 0)
        return 0;
    if (len <= 16) {
        __int128 x = (int8_t)b[0]; /* sign-extended big-endian two's complement */
        for (uint32_t i = 1; i < len; i++)
            x = x * 256 + b[i];
        return (double)x;
    }
    double x = (int8_t)b[0]; /* beyond 128 bits: rounded as it goes */
    for (uint32_t i = 1; i < len; i++)
        x = x * 256 + b[i];
    return x;
}

static double half_to_double(uint32_t h)
{
    int e = (int)(h >> 10 & 0x1f), m = (int)(h & 0x3ff);
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

const char *pq_emit(const pq_col *c, rt_pq_values *v, int64_t k, const phys *x)
{
    char buf[64];
    int n;
    switch (c->conv) {
    case CV_INT:
        v->i[k] = x->i;
        return NULL;
    case CV_UINT32:
        v->i[k] = (int64_t)(uint32_t)x->i;
        return NULL;
    case CV_UINT64:
        if (x->i < 0)
            return "an unsigned 64-bit value above 2^63-1 (SQLite's integers are signed)";
        v->i[k] = x->i;
        return NULL;
    case CV_REAL:
        v->r[k] = x->d;
        return NULL;
    case CV_FLOAT16:
        v->r[k] = half_to_double((uint32_t)x->b[0] | (uint32_t)x->b[1] << 8);
        return NULL;
    case CV_DECIMAL: {
        double u = c->pub.physical == PQ_INT32 || c->pub.physical == PQ_INT64
                       ? (double)x->i
                       : decimal_bytes(x->b, x->len);
        static const double exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
        v->r[k] = u / (c->scale <= 22 ? exact[c->scale] : pow(10, c->scale));
        return NULL;
    }
    case CV_DATE:
        if (x->i < -719162 || x->i > 2932896)
            return "a DATE outside the years 1..9999";
        rt_format_date((int32_t)x->i, buf);
        return put_bytes(v, k, buf, 10) ? NULL : "out of memory";
    case CV_TIMESTAMP: {
        /* whole seconds and the fraction as x->i % per gives them: sec * per
         * would overflow for the most negative values */
        int64_t per = c->per_second, sec = x->i / per, frac = x->i % per;
        if (frac < 0)
            frac += per, sec--;
        int64_t days = floor_div(sec, 86400);
        n = render_time(buf, sizeof buf, days, sec - days * 86400, frac,
                        per == 1000      ? 3
                        : per == 1000000 ? 6
                                         : 9,
                        true);
        if (n < 0)
            return "a TIMESTAMP outside the years 1..9999";
        return put_bytes(v, k, buf, (size_t)n) ? NULL : "out of memory";
    }
    case CV_INT96: { /* nanoseconds of the day, then the Julian day */
        int64_t nanos = (int64_t)rt_get_le64(x->b),
                days = (int64_t)(int32_t)rt_get_le32(x->b + 8) - 2440588;
        if (nanos < 0 || nanos >= INT64_C(86400000000000))
            return "an INT96 timestamp with a bad time of day";
        n = render_time(buf, sizeof buf, days, nanos / 1000000000, nanos % 1000000000, 9, true);
        if (n < 0)
            return "an INT96 timestamp outside the years 1..9999";
        return put_bytes(v, k, buf, (size_t)n) ? NULL : "out of memory";
    }
    case CV_TIME: {
        int64_t per = c->per_second;
        if (x->i < 0 || x->i >= 86400 * per)
            return "a TIME outside one day";
        n = render_time(buf, sizeof buf, 0, x->i / per, x->i % per,
                        per == 1000      ? 3
                        : per == 1000000 ? 6
                                         : 9,
                        false);
        return put_bytes(v, k, buf, (size_t)n) ? NULL : "out of memory";
    }
    case CV_TEXT:
    case CV_BLOB:
        return put_bytes(v, k, x->b, x->len) ? NULL : "out of memory";
    }
    return "unknown conversion";
}

/* ---- codecs -------------------------------------------------------------------------- */

const char *pq_codec_name(int codec)
{
    static const char *const names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                        "BROTLI",       "LZ4",    "ZSTD", "LZ4_RAW"};
    return codec >= 0 && codec <= CODEC_LZ4_RAW ? names[codec] : "an unknown codec";
}

/* Hadoop's LZ4 framing (big-endian sizes before each block), as parquet-mr
 * wrote codec LZ4; some writers put a bare block there instead. */
static bool lz4_hadoop(const uint8_t *src, size_t n, uint8_t *dst, size_t out_n)
{
    size_t in = 0, out = 0;
    while (n - in >= 8) {
        uint32_t usize = (uint32_t)src[in] << 24 | (uint32_t)src[in + 1] << 16 |
                         (uint32_t)src[in + 2] << 8 | src[in + 3];
        uint32_t csize = (uint32_t)src[in + 4] << 24 | (uint32_t)src[in + 5] << 16 |
                         (uint32_t)src[in + 6] << 8 | src[in + 7];
        in += 8;
        if (csize > n - in || usize > out_n - out || csize > INT32_MAX || usize > INT32_MAX)
            return false;
        if (LZ4_decompress_safe((const char *)src + in, (char *)dst + out, (int)csize,
                                (int)usize) != (int)usize)
            return false;
        in += csize;
        out += usize;
    }
    return in == n && out == out_n;
}

const char *pq_decompress(int codec, const uint8_t *src, size_t n, uint8_t *dst, size_t out_n)
{
    switch (codec) {
    case CODEC_SNAPPY: {
        size_t len;
        if (snappy_uncompressed_length((const char *)src, n, &len) != SNAPPY_OK || len != out_n)
            return "SNAPPY data of the wrong size";
        if (snappy_uncompress((const char *)src, n, (char *)dst, &len) != SNAPPY_OK)
            return "damaged SNAPPY data";
        return NULL;
    }
    case CODEC_GZIP: {
        z_stream z = {0};
        if (inflateInit2(&z, 15 + 32) != Z_OK)
            return "zlib could not start";
        z.next_in = (Bytef *)src;
        z.avail_in = (uInt)n;
        z.next_out = dst;
        z.avail_out = (uInt)out_n;
        int r = inflate(&z, Z_FINISH);
        size_t got = z.total_out;
        inflateEnd(&z);
        return r == Z_STREAM_END && got == out_n ? NULL : "damaged GZIP data";
    }
    case CODEC_ZSTD: {
        size_t r = ZSTD_decompress(dst, out_n, src, n);
        return !ZSTD_isError(r) && r == out_n ? NULL : "damaged ZSTD data";
    }
    case CODEC_LZ4_RAW:
        return n <= INT32_MAX && LZ4_decompress_safe((const char *)src, (char *)dst, (int)n,
                                                     (int)out_n) == (int)out_n
                   ? NULL
                   : "damaged LZ4_RAW data";
    case CODEC_LZ4:
        if (lz4_hadoop(src, n, dst, out_n) ||
            (n <= INT32_MAX &&
             LZ4_decompress_safe((const char *)src, (char *)dst, (int)n, (int)out_n) == (int)out_n))
            return NULL;
        return "damaged LZ4 data";
    default:
        return NULL; /* refused before: see page_bytes */
    }
}
