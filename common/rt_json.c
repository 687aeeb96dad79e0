/* rt_json.c — see rt_json.h.  A recursive-descent parser over the bytes,
 * bounded in depth; each node is one allocation, children in arrays. */
#include "rt_json.h"

#include "rt_hex.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rt_json {
    rt_json_type type;
    bool b;
    bool is_int;
    int64_t i;
    double n;
    char *s;        /* string value */
    size_t len;     /* children */
    rt_json **kids; /* values */
    char **keys;    /* object keys */
};

typedef struct parser {
    const char *p, *end, *start;
    char *err;
    int depth;
} parser;

static rt_status fail(parser *ps, const char *what)
{
    return rt_err(ps->err, RT_ERR_INVALID, "invalid JSON at byte %zu: %s",
                  (size_t)(ps->p - ps->start), what);
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static rt_json *node(rt_json_type t)
{
    rt_json *j = calloc(1, sizeof *j);
    if (j)
        j->type = t;
    return j;
}

void rt_json_free(rt_json *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->len; i++) {
        rt_json_free(j->kids[i]);
        if (j->keys)
            free(j->keys[i]);
    }
    free(j->kids);
    free(j->keys);
    free(j->s);
    free(j);
}

static bool read_hex4(parser *ps, unsigned *out)
{
    if (ps->end - ps->p < 4)
        return false;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = rt_hex_digit(ps->p[i]);
        if (h < 0)
            return false;
        v = v * 16 + (unsigned)h;
    }
    ps->p += 4;
    *out = v;
    return true;
}

static size_t put_utf8(char *dst, unsigned cp)
{
    if (cp < 0x80) {
        dst[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        dst[0] = (char)(0xC0 | (cp >> 6));
        dst[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        dst[0] = (char)(0xE0 | (cp >> 12));
        dst[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    dst[0] = (char)(0xF0 | (cp >> 18));
    dst[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    dst[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    dst[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of a valid UTF-8 sequence starting at p, or 0. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n;
    unsigned min, cp;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0) {
        n = 2;
        min = 0x80;
        cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3;
        min = 0x800;
        cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        n = 4;
        min = 0x10000;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static rt_status parse_string(parser *ps, char **out)
{
    ps->p++; /* opening quote */
    /* decoded text is never longer than the source */
    const char *q = ps->p;
    while (q < ps->end && *q != '"') {
        if (*q == '\\' && q + 1 < ps->end)
            q++;
        q++;
    }
    if (q >= ps->end)
        return fail(ps, "unterminated string");
    char *buf = malloc((size_t)(q - ps->p) + 1);
    if (!buf)
        return rt_err(ps->err, RT_ERR_NOMEM, "out of memory");
    size_t n = 0;
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20) {
            free(buf);
            return fail(ps, "control character in string");
        }
        if (c != '\\') {
            size_t k = utf8_seq((const unsigned char *)ps->p, (const unsigned char *)ps->end);
            if (k == 0) {
                free(buf);
                return fail(ps, "invalid UTF-8 in string");
            }
            memcpy(buf + n, ps->p, k);
            n += k;
            ps->p += k;
            continue;
        }
        ps->p++;
        char e = *ps->p++;
        switch (e) {
        case '"': buf[n++] = '"'; break;
        case '\\': buf[n++] = '\\'; break;
        case '/': buf[n++] = '/'; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (!read_hex4(ps, &cp)) {
                free(buf);
                return fail(ps, "bad \\u escape");
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) { /* high surrogate: a low one must follow */
                unsigned lo;
                if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u') {
                    free(buf);
                    return fail(ps, "lone surrogate in \\u escape");
                }
                ps->p += 2;
                if (!read_hex4(ps, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                    free(buf);
                    return fail(ps, "bad surrogate pair");
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                free(buf);
                return fail(ps, "lone surrogate in \\u escape");
            } else if (cp == 0) {
                free(buf);
                return fail(ps, "\\u0000 is not supported");
            }
            n += put_utf8(buf + n, cp);
            break;
        }
        default:
            free(buf);
            ps->p--;
            return fail(ps, "unknown escape");
        }
    }
    ps->p++; /* closing quote */
    buf[n] = '\0';
    *out = buf;
    return RT_OK;
}

static rt_status parse_number(parser *ps, rt_json *j)
{
    const char *s = ps->p;
    bool is_int = true;
    if (ps->p < ps->end && *ps->p == '-')
        ps->p++;
    if (ps->p >= ps->end)
        return fail(ps, "bad number");
    if (*ps->p == '0') {
        ps->p++;
    } else if (*ps->p >= '1' && *ps->p <= '9') {
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    } else {
        return fail(ps, "bad number");
    }
    if (ps->p < ps->end && *ps->p == '.') {
        is_int = false;
        ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return fail(ps, "digit expected after '.'");
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        is_int = false;
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return fail(ps, "digit expected in exponent");
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    char tmp[64];
    size_t n = (size_t)(ps->p - s);
    if (n >= sizeof tmp)
        return fail(ps, "number too long");
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    j->n = strtod(tmp, NULL);
    if (!isfinite(j->n))
        return fail(ps, "number out of range");
    if (is_int) {
        char *e;
        errno = 0;
        long long v = strtoll(tmp, &e, 10);
        j->is_int = errno == 0;
        j->i = v;
    } else if (j->n == floor(j->n) && fabs(j->n) < 9.007199254740992e15) {
        j->is_int = true; /* 1e3, 2.0 */
        j->i = (int64_t)j->n;
    }
    return RT_OK;
}

static rt_status parse_value(parser *ps, rt_json **out);

static rt_status add_child(rt_json *j, rt_json *kid, char *key, size_t *cap)
{
    if (j->len == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        rt_json **k = realloc(j->kids, nc * sizeof *k);
        if (!k)
            return RT_ERR_NOMEM;
        j->kids = k;
        if (j->type == RT_JSON_OBJECT) {
            char **ks = realloc(j->keys, nc * sizeof *ks);
            if (!ks)
                return RT_ERR_NOMEM;
            j->keys = ks;
        }
        *cap = nc;
    }
    j->kids[j->len] = kid;
    if (j->type == RT_JSON_OBJECT)
        j->keys[j->len] = key;
    j->len++;
    return RT_OK;
}

static rt_status parse_container(parser *ps, rt_json *j, char close)
{
    size_t cap = 0;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return RT_OK;
    }
    for (;;) {
        char *key = NULL;
        if (j->type == RT_JSON_OBJECT) {
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != '"')
                return fail(ps, "object key expected");
            rt_status st = parse_string(ps, &key);
            if (st != RT_OK)
                return st;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                free(key);
                return fail(ps, "':' expected");
            }
            ps->p++;
        }
        rt_json *kid = NULL;
        rt_status st = parse_value(ps, &kid);
        if (st == RT_OK && add_child(j, kid, key, &cap) != RT_OK) {
            rt_json_free(kid);
            st = rt_err(ps->err, RT_ERR_NOMEM, "out of memory");
        }
        if (st != RT_OK) {
            free(key);
            return st;
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return RT_OK;
        }
        return fail(ps, close == '}' ? "',' or '}' expected" : "',' or ']' expected");
    }
}

static bool literal(parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return false;
    ps->p += n;
    return true;
}

static rt_status parse_value(parser *ps, rt_json **out)
{
    skip_ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, "value expected");
    if (++ps->depth > RT_JSON_MAX_DEPTH)
        return fail(ps, "nested too deeply");
    rt_json *j = NULL;
    rt_status st = RT_OK;
    char c = *ps->p;
    if (c == '{' || c == '[') {
        j = node(c == '{' ? RT_JSON_OBJECT : RT_JSON_ARRAY);
        st = j ? parse_container(ps, j, c == '{' ? '}' : ']') : RT_ERR_NOMEM;
    } else if (c == '"') {
        j = node(RT_JSON_STRING);
        st = j ? parse_string(ps, &j->s) : RT_ERR_NOMEM;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        j = node(RT_JSON_NUMBER);
        st = j ? parse_number(ps, j) : RT_ERR_NOMEM;
    } else if (literal(ps, "true") || literal(ps, "false")) {
        j = node(RT_JSON_BOOL);
        if (j)
            j->b = ps->p[-1] == 'e' && ps->p[-2] == 'u';
        st = j ? RT_OK : RT_ERR_NOMEM;
    } else if (literal(ps, "null")) {
        j = node(RT_JSON_NULL);
        st = j ? RT_OK : RT_ERR_NOMEM;
    } else {
        st = fail(ps, "unexpected character");
    }
    ps->depth--;
    if (st == RT_ERR_NOMEM)
        rt_err(ps->err, st, "out of memory");
    if (st != RT_OK) {
        rt_json_free(j);
        return st;
    }
    *out = j;
    return RT_OK;
}

rt_status rt_json_parse(const char *text, size_t len, rt_json **out, char *err)
{
    *out = NULL;
    parser ps = {text, text + len, text, err, 0};
    rt_json *j = NULL;
    rt_status st = parse_value(&ps, &j);
    if (st != RT_OK)
        return st;
    skip_ws(&ps);
    if (ps.p != ps.end) {
        rt_json_free(j);
        return fail(&ps, "trailing characters after the value");
    }
    *out = j;
    return RT_OK;
}

rt_json_type rt_json_type_of(const rt_json *j) { return j ? j->type : RT_JSON_NULL; }
size_t rt_json_len(const rt_json *j)
{
    return j && (j->type == RT_JSON_ARRAY || j->type == RT_JSON_OBJECT) ? j->len : 0;
}
const rt_json *rt_json_at(const rt_json *a, size_t i)
{
    return a && a->type == RT_JSON_ARRAY && i < a->len ? a->kids[i] : NULL;
}
const char *rt_json_key_at(const rt_json *o, size_t i)
{
    return o && o->type == RT_JSON_OBJECT && i < o->len ? o->keys[i] : NULL;
}
const rt_json *rt_json_value_at(const rt_json *o, size_t i)
{
    return o && o->type == RT_JSON_OBJECT && i < o->len ? o->kids[i] : NULL;
}
const rt_json *rt_json_get(const rt_json *o, const char *key)
{
    if (!o || o->type != RT_JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < o->len; i++)
        if (strcmp(o->keys[i], key) == 0)
            return o->kids[i];
    return NULL;
}
const char *rt_json_str(const rt_json *j, const char *def)
{
    return j && j->type == RT_JSON_STRING ? j->s : def;
}
double rt_json_num(const rt_json *j, double def)
{
    return j && j->type == RT_JSON_NUMBER ? j->n : def;
}
bool rt_json_bool(const rt_json *j, bool def) { return j && j->type == RT_JSON_BOOL ? j->b : def; }
bool rt_json_int(const rt_json *j, int64_t *out)
{
    if (!j || j->type != RT_JSON_NUMBER || !j->is_int)
        return false;
    *out = j->i;
    return true;
}
const char *rt_json_get_str(const rt_json *o, const char *key)
{
    return rt_json_str(rt_json_get(o, key), NULL);
}
bool rt_json_get_int(const rt_json *o, const char *key, int64_t *out)
{
    return rt_json_int(rt_json_get(o, key), out);
}

/* ---- writer ----------------------------------------------------------------- */

void rt_jw_init(rt_jw *w)
{
    memset(w, 0, sizeof *w);
    w->first[0] = true;
}

void rt_jw_free(rt_jw *w)
{
    free(w->buf);
    rt_jw_init(w);
}

static void put(rt_jw *w, const char *s, size_t n)
{
    if (w->failed)
        return;
    if (w->len + n + 1 > w->cap) {
        size_t nc = w->cap ? w->cap : 256;
        while (nc < w->len + n + 1)
            nc *= 2;
        char *b = realloc(w->buf, nc);
        if (!b) {
            w->failed = true;
            return;
        }
        w->buf = b;
        w->cap = nc;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

/* comma handling before a value (not after a key) */
static void before_value(rt_jw *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (!w->first[w->depth])
        put(w, ",", 1);
    w->first[w->depth] = false;
}

static void open_(rt_jw *w, const char *c)
{
    before_value(w);
    put(w, c, 1);
    if (w->depth >= RT_JSON_MAX_DEPTH) {
        w->failed = true;
        return;
    }
    w->first[++w->depth] = true;
}

static void close_(rt_jw *w, const char *c)
{
    if (w->depth == 0) {
        w->failed = true;
        return;
    }
    w->depth--;
    put(w, c, 1);
}

void rt_jw_obj(rt_jw *w) { open_(w, "{"); }
void rt_jw_obj_end(rt_jw *w) { close_(w, "}"); }
void rt_jw_arr(rt_jw *w) { open_(w, "["); }
void rt_jw_arr_end(rt_jw *w) { close_(w, "]"); }

static void put_escaped(rt_jw *w, const char *s, size_t n)
{
    put(w, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c == 0) /* the parser refuses \u0000 (C strings): as invalid UTF-8 */
            esc = "\\ufffd";
        else if (c < 0x20 || c == 0x7f) {
            snprintf(u, sizeof u, "\\u%04x", c);
            esc = u;
        } else if (c >= 0x80) {
            size_t k = utf8_seq((const unsigned char *)s + i, (const unsigned char *)s + n);
            if (k == 0) { /* not UTF-8 (e.g. raw log bytes): replacement character */
                put(w, s + i - run, run);
                run = 0;
                put(w, "\\ufffd", 6);
                continue;
            }
            run += k;
            i += k - 1;
            continue;
        }
        if (esc) {
            put(w, s + i - run, run);
            run = 0;
            put(w, esc, strlen(esc));
        } else {
            run++;
        }
    }
    put(w, s + n - run, run);
    put(w, "\"", 1);
}

void rt_jw_key(rt_jw *w, const char *key)
{
    before_value(w);
    put_escaped(w, key, strlen(key));
    put(w, ":", 1);
    w->after_key = true;
}

void rt_jw_strn(rt_jw *w, const char *s, size_t n)
{
    before_value(w);
    put_escaped(w, s, n);
}

void rt_jw_str(rt_jw *w, const char *s)
{
    if (!s) {
        rt_jw_null(w);
        return;
    }
    rt_jw_strn(w, s, strlen(s));
}

void rt_jw_int(rt_jw *w, int64_t v)
{
    char b[32];
    int n = snprintf(b, sizeof b, "%lld", (long long)v);
    before_value(w);
    put(w, b, (size_t)n);
}

void rt_jw_num(rt_jw *w, double v)
{
    if (!isfinite(v)) {
        rt_jw_null(w);
        return;
    }
    char b[40];
    int n = snprintf(b, sizeof b, "%.17g", v);
    before_value(w);
    put(w, b, (size_t)n);
}

void rt_jw_numf(rt_jw *w, float v)
{
    if (!isfinite(v)) {
        rt_jw_null(w);
        return;
    }
    char b[40];
    int n = snprintf(b, sizeof b, "%.9g", (double)v);
    before_value(w);
    put(w, b, (size_t)n);
}

void rt_jw_bool(rt_jw *w, bool v)
{
    before_value(w);
    put(w, v ? "true" : "false", v ? 4 : 5);
}

void rt_jw_null(rt_jw *w)
{
    before_value(w);
    put(w, "null", 4);
}

void rt_jw_raw(rt_jw *w, const char *json)
{
    before_value(w);
    put(w, json, strlen(json));
}

void rt_jw_kstr(rt_jw *w, const char *key, const char *s)
{
    rt_jw_key(w, key);
    rt_jw_str(w, s);
}
void rt_jw_kint(rt_jw *w, const char *key, int64_t v)
{
    rt_jw_key(w, key);
    rt_jw_int(w, v);
}
void rt_jw_knum(rt_jw *w, const char *key, double v)
{
    rt_jw_key(w, key);
    rt_jw_num(w, v);
}
void rt_jw_kbool(rt_jw *w, const char *key, bool v)
{
    rt_jw_key(w, key);
    rt_jw_bool(w, v);
}

void rt_jw_value(rt_jw *w, const rt_json *j)
{
    switch (rt_json_type_of(j)) {
    case RT_JSON_NULL: rt_jw_null(w); break;
    case RT_JSON_BOOL: rt_jw_bool(w, j->b); break;
    case RT_JSON_NUMBER:
        if (j->is_int)
            rt_jw_int(w, j->i);
        else
            rt_jw_num(w, j->n);
        break;
    case RT_JSON_STRING: rt_jw_str(w, j->s); break;
    case RT_JSON_ARRAY:
        rt_jw_arr(w);
        for (size_t i = 0; i < j->len; i++)
            rt_jw_value(w, j->kids[i]);
        rt_jw_arr_end(w);
        break;
    case RT_JSON_OBJECT:
        rt_jw_obj(w);
        for (size_t i = 0; i < j->len; i++) {
            rt_jw_key(w, j->keys[i]);
            rt_jw_value(w, j->kids[i]);
        }
        rt_jw_obj_end(w);
        break;
    }
}

char *rt_jw_take(rt_jw *w, size_t *len)
{
    if (w->failed || w->depth != 0 || !w->buf) {
        rt_jw_free(w);
        return NULL;
    }
    char *b = w->buf;
    if (len)
        *len = w->len;
    w->buf = NULL;
    rt_jw_free(w);
    return b;
}
