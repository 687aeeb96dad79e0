/* rt_units.c — value parsers for configuration and command-line flags:
 * integers, numbers, booleans, byte sizes with binary units, durations, and
 * comma-separated lists; plus the edit distance used for "did you mean" hints.
 *
 * Sizes: "<number>[ ]<unit>", unit one of B, K, KB, KiB, M, MB, MiB, G, GB,
 * GiB, T, TB, TiB (any case), all powers of 1024 as in systemd and PyTorch's
 * "25 MiB" bucket; a fraction is allowed when the result is whole bytes.
 * Durations: one or more "<number><unit>" groups ("1m30s", "1h 5m"), units
 * us, ms, s, m/min, h, d; a bare number is seconds; the result must be whole
 * microseconds. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rt_config.h"

/* Copy text without leading/trailing blanks into buf; false if too long. */
static bool trimmed(const char *text, char *buf, size_t len)
{
    while (*text && isspace((unsigned char)*text))
        text++;
    size_t n = strlen(text);
    while (n > 0 && isspace((unsigned char)text[n - 1]))
        n--;
    if (n >= len)
        return false;
    memcpy(buf, text, n);
    buf[n] = '\0';
    return true;
}

rt_status rt_parse_int(const char *text, int64_t *out, char *err)
{
    char t[64];
    if (!text || !trimmed(text, t, sizeof t))
        return rt_err(err, RT_ERR_INVALID, "too long");
    if (t[0] == '\0')
        return rt_err(err, RT_ERR_INVALID, "empty value");
    char *end;
    errno = 0;
    long long v = strtoll(t, &end, 10);
    if (end == t || *end != '\0')
        return rt_err(err, RT_ERR_INVALID, "not an integer");
    if (errno == ERANGE)
        return rt_err(err, RT_ERR_INVALID, "too large");
    *out = v;
    return RT_OK;
}

rt_status rt_parse_double(const char *text, double *out, char *err)
{
    char t[64];
    if (!text || !trimmed(text, t, sizeof t))
        return rt_err(err, RT_ERR_INVALID, "too long");
    if (t[0] == '\0')
        return rt_err(err, RT_ERR_INVALID, "empty value");
    char *end;
    errno = 0;
    double v = strtod(t, &end);
    if (end == t || *end != '\0')
        return rt_err(err, RT_ERR_INVALID, "not a number");
    if (!isfinite(v) || errno == ERANGE)
        return rt_err(err, RT_ERR_INVALID, "not a finite number");
    *out = v;
    return RT_OK;
}

rt_status rt_parse_bool(const char *text, bool *out, char *err)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    char t[16];
    if (text && trimmed(text, t, sizeof t)) {
        for (size_t i = 0; i < RT_ARRAY_LEN(yes); i++) {
            if (strcasecmp(t, yes[i]) == 0) {
                *out = true;
                return RT_OK;
            }
            if (strcasecmp(t, no[i]) == 0) {
                *out = false;
                return RT_OK;
            }
        }
    }
    return rt_err(err, RT_ERR_INVALID, "not a boolean");
}

/* Parse "<digits>[.<digits>]" at *p into an exact rational: whole part and a
 * fraction numerator/denominator (denominator a power of ten, at most 1e18).
 * Advances *p.  Returns false if no digit was found or the whole part
 * overflows. */
typedef struct {
    uint64_t whole, frac_num, frac_den;
    bool overflow;
} decimal;

static bool parse_decimal(const char **p, decimal *d)
{
    const char *s = *p;
    d->whole = 0;
    d->frac_num = 0;
    d->frac_den = 1;
    d->overflow = false;
    int digits = 0;
    while (isdigit((unsigned char)*s)) {
        if (__builtin_mul_overflow(d->whole, 10, &d->whole) ||
            __builtin_add_overflow(d->whole, (uint64_t)(*s - '0'), &d->whole))
            d->overflow = true;
        s++;
        digits++;
    }
    if (*s == '.') {
        s++;
        while (isdigit((unsigned char)*s)) {
            if (d->frac_den < 1000000000000000000ULL) { /* ignore digits past 1e-18 */
                d->frac_num = d->frac_num * 10 + (uint64_t)(*s - '0');
                d->frac_den *= 10;
            }
            s++;
            digits++;
        }
    }
    *p = s;
    return digits > 0;
}

/* value = d * mult exactly, or fail (overflow / not whole). */
static rt_status scale_decimal(const decimal *d, uint64_t mult, uint64_t *out, const char *what,
                               char *err)
{
    uint64_t w;
    if (d->overflow || __builtin_mul_overflow(d->whole, mult, &w))
        return rt_err(err, RT_ERR_INVALID, "too large");
    /* fraction part: frac_num/frac_den * mult must be an integer */
    unsigned __int128 f = (unsigned __int128)d->frac_num * mult;
    if (f % d->frac_den != 0)
        return rt_err(err, RT_ERR_INVALID, "not a whole number of %s", what);
    uint64_t fi = (uint64_t)(f / d->frac_den);
    if (__builtin_add_overflow(w, fi, &w))
        return rt_err(err, RT_ERR_INVALID, "too large");
    *out = w;
    return RT_OK;
}

rt_status rt_parse_size(const char *text, uint64_t *out, char *err)
{
    static const struct {
        const char *unit;
        int shift;
    } units[] = {{"", 0},     {"b", 0},    {"k", 10},   {"kb", 10}, {"kib", 10},
                 {"m", 20},   {"mb", 20},  {"mib", 20}, {"g", 30},  {"gb", 30},
                 {"gib", 30}, {"t", 40},   {"tb", 40},  {"tib", 40}};
    char t[64];
    if (!text || !trimmed(text, t, sizeof t))
        return rt_err(err, RT_ERR_INVALID, "too long");
    if (t[0] == '\0')
        return rt_err(err, RT_ERR_INVALID, "empty value");
    if (t[0] == '-')
        return rt_err(err, RT_ERR_INVALID, "negative size");
    const char *p = t;
    if (*p == '+')
        p++;
    decimal d;
    if (!parse_decimal(&p, &d))
        return rt_err(err, RT_ERR_INVALID, "no number");
    while (*p == ' ' || *p == '\t')
        p++;
    for (size_t i = 0; i < RT_ARRAY_LEN(units); i++) {
        if (strcasecmp(p, units[i].unit) == 0)
            return scale_decimal(&d, 1ULL << units[i].shift, out, "bytes", err);
    }
    return rt_err(err, RT_ERR_INVALID, "unknown unit '%s' (use B, K, M, G or T)", p);
}

rt_status rt_parse_duration(const char *text, int64_t *out_us, char *err)
{
    static const struct {
        const char *unit;
        uint64_t us;
    } units[] = {{"us", 1},          {"ms", 1000},         {"s", 1000000},
                 {"min", 60000000},  {"m", 60000000},      {"h", 3600000000ULL},
                 {"d", 86400000000ULL}};
    char t[64];
    if (!text || !trimmed(text, t, sizeof t))
        return rt_err(err, RT_ERR_INVALID, "too long");
    if (t[0] == '\0')
        return rt_err(err, RT_ERR_INVALID, "empty value");
    if (t[0] == '-')
        return rt_err(err, RT_ERR_INVALID, "negative duration");
    const char *p = t;
    uint64_t total = 0;
    int groups = 0;
    while (*p) {
        decimal d;
        if (!parse_decimal(&p, &d))
            return rt_err(err, RT_ERR_INVALID, "expected a number at '%s'", p);
        while (*p == ' ' || *p == '\t')
            p++;
        size_t ulen = 0;
        while (isalpha((unsigned char)p[ulen]))
            ulen++;
        uint64_t mult = 0;
        if (ulen == 0) {
            if (groups > 0 || *p != '\0')
                return rt_err(err, RT_ERR_INVALID, "missing unit (us, ms, s, m, h, d)");
            mult = 1000000; /* a bare number is seconds */
        } else {
            for (size_t i = 0; i < RT_ARRAY_LEN(units); i++)
                if (strlen(units[i].unit) == ulen && strncasecmp(p, units[i].unit, ulen) == 0)
                    mult = units[i].us;
            if (mult == 0)
                return rt_err(err, RT_ERR_INVALID, "unknown unit '%.*s' (use us, ms, s, m, h, d)",
                              (int)ulen, p);
        }
        p += ulen;
        uint64_t v = 0;
        rt_status st = scale_decimal(&d, mult, &v, "microseconds", err);
        if (st != RT_OK)
            return st;
        if (__builtin_add_overflow(total, v, &total) || total > (uint64_t)INT64_MAX)
            return rt_err(err, RT_ERR_INVALID, "too large");
        groups++;
        while (*p == ' ' || *p == '\t')
            p++;
    }
    *out_us = (int64_t)total;
    return RT_OK;
}

void rt_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char units[] = "KMGT";
    int u = -1;
    uint64_t v = bytes;
    while (u < 3 && v != 0 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%" PRIu64, bytes);
    else
        snprintf(buf, len, "%" PRIu64 "%c", v, units[u]);
}

void rt_format_duration(int64_t us, char *buf, size_t len)
{
    static const struct {
        const char *unit;
        int64_t us;
    } units[] = {{"d", 86400000000LL}, {"h", 3600000000LL}, {"m", 60000000LL},
                 {"s", 1000000LL},     {"ms", 1000LL},      {"us", 1LL}};
    if (us <= 0) {
        snprintf(buf, len, "0s");
        return;
    }
    size_t off = 0;
    int64_t left = us;
    for (size_t i = 0; i < RT_ARRAY_LEN(units) && left > 0 && off < len; i++) {
        int64_t q = left / units[i].us;
        if (q == 0)
            continue;
        int w = snprintf(buf + off, len - off, "%" PRId64 "%s", q, units[i].unit);
        if (w < 0)
            break;
        off += (size_t)w;
        left -= q * units[i].us;
    }
}

uint64_t rt_hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

uint64_t rt_hash_u64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

size_t rt_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return (size_t)-1;
    size_t d[65][65];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    }
    return d[la][lb];
}

void rt_strlist_free(rt_strlist *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

/* Lists: items separated by commas, spaces around them dropped.  An item in
 * double quotes keeps commas and spaces; in any item \" \\ \, and \; stand
 * for the character (INI files take " ;" as the start of a comment, so a
 * ';' after a space must be written \;).  An unterminated quote is an error:
 * it is what a comment cutting the line short leaves. */
rt_status rt_strlist_parse(const char *text, rt_strlist *out, char *err)
{
    out->items = NULL;
    out->n = 0;
    const char *p = text ? text : "";
    while (*p && isspace((unsigned char)*p))
        p++;
    if (*p == '\0')
        return RT_OK;
    size_t cap = 1, len = strlen(p);
    for (const char *q = p; *q; q++)
        cap += *q == ',';
    out->items = calloc(cap, sizeof *out->items);
    char *buf = malloc(len + 1);
    if (!out->items || !buf) {
        free(buf);
        rt_strlist_free(out);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    rt_status st = RT_OK;
    for (;;) {
        while (*p && isspace((unsigned char)*p))
            p++;
        size_t n = 0, keep = 0; /* keep: length up to the last character that is not trailing space */
        bool quoted = *p == '"';
        if (quoted)
            p++;
        for (; *p && (quoted ? *p != '"' : *p != ','); p++) {
            char ch = *p;
            if (ch == '\\' && p[1] && strchr("\"\\,;", p[1]))
                ch = *++p;
            else if (!quoted && isspace((unsigned char)ch)) {
                buf[n++] = ch;
                continue;
            }
            buf[n++] = ch;
            keep = n;
        }
        if (quoted) {
            if (*p != '"') {
                st = rt_err(err, RT_ERR_INVALID, "item %zu: the quote is not closed (a ' ;' starts "
                            "a comment in these files: write ';' as \\;)", out->n + 1);
                break;
            }
            keep = n;
            p++;
            while (*p && isspace((unsigned char)*p))
                p++;
            if (*p && *p != ',') {
                st = rt_err(err, RT_ERR_INVALID, "item %zu: text after the closing quote", out->n + 1);
                break;
            }
        }
        if (keep == 0 && !quoted) {
            st = rt_err(err, RT_ERR_INVALID, "item %zu is empty", out->n + 1);
            break;
        }
        char *item = strndup(buf, keep);
        if (!item) {
            st = rt_err(err, RT_ERR_NOMEM, "out of memory");
            break;
        }
        out->items[out->n++] = item;
        if (!*p)
            break;
        p++; /* the comma */
    }
    free(buf);
    if (st != RT_OK)
        rt_strlist_free(out);
    return st;
}

long rt_strlist_index(const rt_strlist *l, const char *item)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i], item) == 0)
            return (long)i;
    return -1;
}
