/* rt_config.c — the table-driven INI loader (see rt_config.h).
 *
 * inih does the tokenising.  It is fed through our own reader so that we know
 * the line number of every handler call (Debian's inih is built without
 * INI_HANDLER_LINENO), can see section headers with no keys under them, and
 * can report every syntax error rather than only the first.  Heap line
 * buffers with realloc are switched on so long lists are not cut at inih's
 * 200-byte default. */
#include "rt_config.h"
#include "cfg_internal.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE_BYTES (16u << 20)

/* ---- error list ---------------------------------------------------------- */

void rt_cfg_errors_add(rt_cfg_errors *e, const char *fmt, ...)
{
    if (!e)
        return;
    if (e->n >= RT_CFG_MAX_ERRORS) {
        e->dropped++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    char *m = NULL;
    if (vasprintf(&m, fmt, ap) < 0)
        m = NULL;
    va_end(ap);
    if (m)
        e->msg[e->n++] = m;
    else
        e->dropped++;
}

void rt_cfg_errors_print(const rt_cfg_errors *e, FILE *f)
{
    for (size_t i = 0; i < e->n; i++)
        fprintf(f, "%s\n", e->msg[i]);
    if (e->dropped)
        fprintf(f, "(%zu more errors not shown)\n", e->dropped);
}

void rt_cfg_errors_join(const rt_cfg_errors *e, char *buf, size_t len)
{
    size_t off = 0;
    if (len == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < e->n && off < len; i++) {
        int w = snprintf(buf + off, len - off, "%s%s", i ? "\n" : "", e->msg[i]);
        if (w < 0)
            break;
        off += (size_t)w;
    }
    if (e->dropped && off < len)
        snprintf(buf + off, len - off, "\n(%zu more errors not shown)", e->dropped);
}

void rt_cfg_errors_free(rt_cfg_errors *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->n; i++)
        free(e->msg[i]);
    e->n = 0;
    e->dropped = 0;
}

/* ---- field access -------------------------------------------------------- */

static void *field(void *obj, const rt_cfg_key *k) { return (char *)obj + k->offset; }
const void *cfg_cfield(const void *obj, const rt_cfg_key *k)
{
    return (const char *)obj + k->offset;
}

static void free_field(void *obj, const rt_cfg_key *k)
{
    switch (k->type) {
    case RT_CFG_STRING:
    case RT_CFG_PATH: {
        char **s = field(obj, k);
        free(*s);
        *s = NULL;
        break;
    }
    case RT_CFG_LIST:
        rt_strlist_free(field(obj, k));
        break;
    case RT_CFG_MAP: {
        rt_cfgmap *m = field(obj, k);
        for (size_t i = 0; i < m->n; i++) {
            free(m->names[i]);
            free(m->values[i]);
        }
        free(m->names);
        free(m->values);
        free(m->lines);
        memset(m, 0, sizeof *m);
        break;
    }
    default:
        break;
    }
}

const char *rt_cfgmap_get(const rt_cfgmap *m, const char *name)
{
    for (size_t i = 0; m && i < m->n; i++)
        if (strcmp(m->names[i], name) == 0)
            return m->values[i];
    return NULL;
}

/* name = text into a map key's entries; the line it was set on (an entry
 * a file sets twice is refused; --set replaces) */
static rt_status map_set(const rt_cfg_key *k, void *obj, const char *name, const char *text,
                         int line, char *why)
{
    rt_cfgmap *m = field(obj, k);
    if (strlen(name) <= strlen(k->name) || strlen(name) > 200)
        return rt_err(why, RT_ERR_INVALID, "expected %sSECTION.KEY (at most 200 bytes)", k->name);
    for (size_t i = 0; i < m->n; i++) {
        if (strcmp(m->names[i], name) != 0)
            continue;
        if (line > 0 && m->lines[i] > 0)
            return rt_err(why, RT_ERR_INVALID, "set twice (first at line %d)", m->lines[i]);
        char *v = strdup(text);
        if (!v)
            return rt_err(why, RT_ERR_NOMEM, "out of memory");
        free(m->values[i]);
        m->values[i] = v;
        m->lines[i] = line;
        return RT_OK;
    }
    char **nn = realloc(m->names, (m->n + 1) * sizeof *nn);
    if (nn)
        m->names = nn;
    char **nv = nn ? realloc(m->values, (m->n + 1) * sizeof *nv) : NULL;
    if (nv)
        m->values = nv;
    int *nl = nv ? realloc(m->lines, (m->n + 1) * sizeof *nl) : NULL;
    if (nl)
        m->lines = nl;
    char *a = nl ? strdup(name) : NULL, *b = a ? strdup(text) : NULL;
    if (!b) {
        free(a);
        return rt_err(why, RT_ERR_NOMEM, "out of memory");
    }
    m->names[m->n] = a;
    m->values[m->n] = b;
    m->lines[m->n++] = line;
    return RT_OK;
}

/* Index of text in "a|b|c", or -1. */
static int choice_index(const char *choices, const char *text)
{
    int idx = 0;
    const char *p = choices;
    size_t tl = strlen(text);
    for (;;) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == tl && strncmp(p, text, n) == 0)
            return idx;
        if (!bar)
            return -1;
        p = bar + 1;
        idx++;
    }
}

void cfg_choice_name(const char *choices, int idx, char *buf, size_t len)
{
    const char *p = choices;
    for (int i = 0; i < idx && p; i++) {
        p = strchr(p, '|');
        if (p)
            p++;
    }
    if (!p) {
        snprintf(buf, len, "?");
        return;
    }
    const char *bar = strchr(p, '|');
    int n = bar ? (int)(bar - p) : (int)strlen(p);
    snprintf(buf, len, "%.*s", n, p);
}

void cfg_format_bound(const rt_cfg_key *k, double v, char *buf, size_t len)
{
    if (v >= RT_CFG_NOLIMIT_HI || v <= RT_CFG_NOLIMIT_LO) { /* no bound that side */
        snprintf(buf, len, "%s", v > 0 ? "inf" : "-inf");
        return;
    }
    switch (k->type) {
    case RT_CFG_SIZE:
        rt_format_size(v <= 0 ? 0 : (uint64_t)v, buf, len);
        break;
    case RT_CFG_DURATION:
        rt_format_duration(v <= 0 ? 0 : (int64_t)v, buf, len);
        break;
    case RT_CFG_INT:
        snprintf(buf, len, "%.0f", v);
        break;
    default:
        snprintf(buf, len, "%g", v);
        break;
    }
}

static bool in_bounds(const rt_cfg_key *k, double v) { return v >= k->min && v <= k->max; }

bool rt_cfg_path_absolute(const char *value)
{
    return value[0] == '/' || !strncmp(value, "s3://", 5);
}

static char *join_path(const char *basedir, const char *value)
{
    char *out = NULL;
    if (rt_cfg_path_absolute(value) || !basedir || !basedir[0] || strcmp(basedir, ".") == 0)
        return strdup(value);
    if (asprintf(&out, "%s/%s", basedir, value) < 0)
        return NULL;
    return out;
}

/* Parse text into the key's field.  On failure writes a message of the form
 * "expected ..., got '...'" into why and returns RT_ERR_INVALID; the field
 * is unchanged. */
static rt_status set_value(const rt_cfg_key *k, void *obj, const char *text,
                           const char *basedir, char *why)
{
    char e[RT_ERR_LEN];
    char lo[48], hi[48];
    cfg_format_bound(k, k->min, lo, sizeof lo);
    cfg_format_bound(k, k->max, hi, sizeof hi);
    switch (k->type) {
    case RT_CFG_INT: {
        int64_t v;
        if (rt_parse_int(text, &v, e) != RT_OK)
            return rt_err(why, RT_ERR_INVALID, "expected an integer, got '%s'", text);
        if (!in_bounds(k, (double)v))
            return rt_err(why, RT_ERR_INVALID, "%" PRId64 " is out of range [%s, %s]", v, lo, hi);
        *(int64_t *)field(obj, k) = v;
        return RT_OK;
    }
    case RT_CFG_FLOAT: {
        double v;
        if (rt_parse_double(text, &v, e) != RT_OK)
            return rt_err(why, RT_ERR_INVALID, "expected a number, got '%s'", text);
        if (!in_bounds(k, v))
            return rt_err(why, RT_ERR_INVALID, "%g is out of range [%s, %s]", v, lo, hi);
        *(double *)field(obj, k) = v;
        return RT_OK;
    }
    case RT_CFG_BOOL: {
        bool v;
        if (rt_parse_bool(text, &v, e) != RT_OK)
            return rt_err(why, RT_ERR_INVALID,
                          "expected true or false (yes/no, on/off, 1/0), got '%s'", text);
        *(bool *)field(obj, k) = v;
        return RT_OK;
    }
    case RT_CFG_SIZE: {
        uint64_t v;
        if (rt_parse_size(text, &v, e) != RT_OK)
            return rt_err(why, RT_ERR_INVALID, "expected a size like 64M or 1G (%s), got '%s'", e,
                          text);
        if (!in_bounds(k, (double)v))
            return rt_err(why, RT_ERR_INVALID, "%s is out of range [%s, %s]", text, lo, hi);
        *(uint64_t *)field(obj, k) = v;
        return RT_OK;
    }
    case RT_CFG_DURATION: {
        int64_t v;
        if (rt_parse_duration(text, &v, e) != RT_OK)
            return rt_err(why, RT_ERR_INVALID,
                          "expected a duration like 500ms, 30s or 5m (%s), got '%s'", e, text);
        if (!in_bounds(k, (double)v))
            return rt_err(why, RT_ERR_INVALID, "%s is out of range [%s, %s]", text, lo, hi);
        *(int64_t *)field(obj, k) = v;
        return RT_OK;
    }
    case RT_CFG_ENUM: {
        int idx = choice_index(k->choices, text);
        if (idx < 0) {
            char list[256];
            size_t j = 0;
            for (const char *p = k->choices; *p && j + 3 < sizeof list; p++) {
                if (*p == '|') {
                    list[j++] = ',';
                    list[j++] = ' ';
                } else {
                    list[j++] = *p;
                }
            }
            list[j] = '\0';
            return rt_err(why, RT_ERR_INVALID, "expected one of %s, got '%s'", list, text);
        }
        *(int *)field(obj, k) = idx;
        return RT_OK;
    }
    case RT_CFG_STRING:
    case RT_CFG_PATH: {
        char *v = (k->type == RT_CFG_PATH && text[0]) ? join_path(basedir, text) : strdup(text);
        if (!v)
            return rt_err(why, RT_ERR_NOMEM, "out of memory");
        char **slot = field(obj, k);
        free(*slot);
        *slot = text[0] || k->type == RT_CFG_STRING ? v : (free(v), NULL);
        return RT_OK;
    }
    case RT_CFG_LIST: {
        rt_strlist l;
        rt_status st = rt_strlist_parse(text, &l, e);
        if (st != RT_OK)
            return rt_err(why, st, "expected a comma-separated list (%s), got '%s'", e, text);
        rt_strlist *slot = field(obj, k);
        rt_strlist_free(slot);
        *slot = l;
        return RT_OK;
    }
    case RT_CFG_MAP: /* map_set takes each entry */
        break;
    }
    return rt_err(why, RT_ERR_INVALID, "unknown key type");
}

void rt_cfg_init(const rt_cfg_schema *s, void *obj)
{
    memset(obj, 0, s->struct_size);
    for (size_t i = 0; i < s->nkeys; i++) {
        const rt_cfg_key *k = &s->keys[i];
        if (!k->def)
            continue;
        char why[RT_ERR_LEN];
        rt_status st = set_value(k, obj, k->def, NULL, why);
        if (st != RT_OK) {
            fprintf(stderr, "config table bug: [%s] %s default '%s': %s\n", k->section, k->name,
                    k->def, why);
            RT_ASSERT(st == RT_OK);
        }
    }
}

void rt_cfg_free(const rt_cfg_schema *s, void *obj)
{
    if (!obj)
        return;
    for (size_t i = 0; i < s->nkeys; i++)
        free_field(obj, &s->keys[i]);
}

const rt_cfg_key *rt_cfg_find(const rt_cfg_schema *s, const char *section, const char *name)
{
    for (size_t i = 0; i < s->nkeys; i++)
        if (strcmp(s->keys[i].section, section) == 0 && strcmp(s->keys[i].name, name) == 0)
            return &s->keys[i];
    for (size_t i = 0; i < s->nkeys; i++)
        if (s->keys[i].type == RT_CFG_MAP && strcmp(s->keys[i].section, section) == 0 &&
            strncmp(s->keys[i].name, name, strlen(s->keys[i].name)) == 0)
            return &s->keys[i];
    return NULL;
}

const char *rt_cfg_enum_name(const rt_cfg_schema *s, const char *section, const char *name, int v,
                             char *buf, size_t len)
{
    const rt_cfg_key *k = rt_cfg_find(s, section, name);
    snprintf(buf, len, "?");
    if (!k || k->type != RT_CFG_ENUM || !k->choices || v < 0)
        return buf;
    const char *p = k->choices;
    for (int i = 0; i < v && p; i++) {
        p = strchr(p, '|');
        p = p ? p + 1 : NULL;
    }
    if (p)
        snprintf(buf, len, "%.*s", (int)strcspn(p, "|"), p);
    return buf;
}

int rt_cfg_enum_value(const rt_cfg_schema *s, const char *section, const char *name,
                      const char *text)
{
    const rt_cfg_key *k = rt_cfg_find(s, section, name);
    return k && k->type == RT_CFG_ENUM && k->choices && text ? choice_index(k->choices, text) : -1;
}

static bool section_known(const rt_cfg_schema *s, const char *section)
{
    for (size_t i = 0; i < s->nkeys; i++)
        if (strcmp(s->keys[i].section, section) == 0)
            return true;
    return false;
}

/* A hint is offered when the distance is small for the word's length. */
static bool close_enough(const char *typed, size_t dist)
{
    size_t len = strlen(typed);
    size_t limit = len <= 4 ? 1 : (len <= 8 ? 2 : 3);
    return dist <= limit;
}

static const char *closest_section(const rt_cfg_schema *s, const char *typed)
{
    const char *best = NULL;
    size_t bestd = (size_t)-1;
    for (size_t i = 0; i < s->nkeys; i++) {
        size_t d = rt_edit_distance(typed, s->keys[i].section);
        if (d < bestd) {
            bestd = d;
            best = s->keys[i].section;
        }
    }
    return best && close_enough(typed, bestd) ? best : NULL;
}

/* Hint for an unknown key: the closest key of the same section, else the
 * same (or a close) key that belongs in another section. */
static void key_hint(const rt_cfg_schema *s, const char *section, const char *name, char *buf,
                     size_t len)
{
    const rt_cfg_key *best = NULL;
    size_t bestd = (size_t)-1;
    for (size_t i = 0; i < s->nkeys; i++) {
        if (strcmp(s->keys[i].section, section) != 0)
            continue;
        size_t d = rt_edit_distance(name, s->keys[i].name);
        if (d < bestd) {
            bestd = d;
            best = &s->keys[i];
        }
    }
    if (best && close_enough(name, bestd)) {
        snprintf(buf, len, "; did you mean '%s'?", best->name);
        return;
    }
    best = NULL;
    bestd = (size_t)-1;
    for (size_t i = 0; i < s->nkeys; i++) {
        size_t d = rt_edit_distance(name, s->keys[i].name);
        if (d < bestd) {
            bestd = d;
            best = &s->keys[i];
        }
    }
    if (best && close_enough(name, bestd))
        snprintf(buf, len, "; did you mean '%s' in section [%s]?", best->name, best->section);
    else
        buf[0] = '\0';
}

/* ---- the parse ----------------------------------------------------------- */

typedef struct load_ctx {
    const rt_cfg_schema *s;
    void *obj;
    rt_cfg_errors *errs;
    const char *fname;
    const char *basedir;
    const char *text; /* reader state */
    size_t pos, len;
    int lineno;       /* number of lines handed to inih completely */
    bool at_line_start;
    int *set_line;    /* per key: line where it was set, 0 if not */
    bool cur_section_known;
} load_ctx;

/* Look at one whole line before inih sees it: record syntax errors and
 * unknown sections with their line numbers. */
static void inspect_line(load_ctx *c, const char *line, size_t n, int lineno)
{
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        n--;
    size_t i = 0;
    if (lineno == 1 && n >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0)
        i = 3; /* UTF-8 byte-order mark */
    while (i < n && isspace((unsigned char)line[i]))
        i++;
    if (i == n || line[i] == ';' || line[i] == '#')
        return;
    if (memchr(line + i, '\0', n - i)) {
        rt_cfg_errors_add(c->errs, "%s:%d: syntax error: line contains a NUL byte", c->fname,
                          lineno);
        return;
    }
    if (line[i] == '[') {
        const char *close = memchr(line + i, ']', n - i);
        if (!close) {
            /* inih keeps the previous section; ignore keys until the next
             * header rather than misfile them */
            c->cur_section_known = false;
            rt_cfg_errors_add(c->errs, "%s:%d: syntax error: section header without ']'",
                              c->fname, lineno);
            return;
        }
        char name[128];
        /* inih takes the name between the brackets as written, untrimmed */
        snprintf(name, sizeof name, "%.*s", (int)(close - (line + i + 1)), line + i + 1);
        c->cur_section_known = section_known(c->s, name);
        if (!c->cur_section_known) {
            const char *hint = closest_section(c->s, name);
            if (hint)
                rt_cfg_errors_add(c->errs, "%s:%d: unknown section [%s]; did you mean [%s]?",
                                  c->fname, lineno, name, hint);
            else
                rt_cfg_errors_add(c->errs, "%s:%d: unknown section [%s]", c->fname, lineno, name);
        }
        return;
    }
    if (!memchr(line + i, '=', n - i) && !memchr(line + i, ':', n - i)) {
        rt_cfg_errors_add(c->errs,
                          "%s:%d: syntax error: expected '[section]' or 'key = value', got '%.*s'",
                          c->fname, lineno, (int)(n - i > 60 ? 60 : n - i), line + i);
    }
}

/* fgets-like reader over the in-memory text. */
static char *reader(char *str, int num, void *stream)
{
    load_ctx *c = stream;
    if (c->pos >= c->len || num <= 1)
        return NULL;
    if (c->at_line_start) {
        const char *nl = memchr(c->text + c->pos, '\n', c->len - c->pos);
        size_t linelen = nl ? (size_t)(nl - (c->text + c->pos)) + 1 : c->len - c->pos;
        inspect_line(c, c->text + c->pos, linelen, c->lineno + 1);
    }
    size_t room = (size_t)num - 1;
    size_t n = 0;
    while (n < room && c->pos + n < c->len) {
        char ch = c->text[c->pos + n];
        str[n++] = ch == '\0' ? ' ' : ch;
        if (ch == '\n')
            break;
    }
    str[n] = '\0';
    c->pos += n;
    c->at_line_start = (n > 0 && str[n - 1] == '\n') || c->pos >= c->len;
    if (c->at_line_start)
        c->lineno++;
    return str;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    load_ctx *c = user;
    int line = c->lineno;
    if (section[0] == '\0' && !section_known(c->s, "")) {
        rt_cfg_errors_add(c->errs, "%s:%d: key '%s' appears before any [section]", c->fname, line,
                          name);
        return 1;
    }
    if (!c->cur_section_known && section[0] != '\0')
        return 1; /* the unknown section was reported once, at its header */
    const rt_cfg_key *k = rt_cfg_find(c->s, section, name);
    if (!k) {
        char hint[160];
        key_hint(c->s, section, name, hint, sizeof hint);
        rt_cfg_errors_add(c->errs, "%s:%d: unknown key '%s' in section [%s]%s", c->fname, line,
                          name, section, hint);
        return 1;
    }
    size_t idx = (size_t)(k - c->s->keys);
    char why[RT_ERR_LEN];
    if (k->type == RT_CFG_MAP) {
        if (!c->set_line[idx])
            c->set_line[idx] = line;
        if (map_set(k, c->obj, name, value, line, why) != RT_OK)
            rt_cfg_errors_add(c->errs, "%s:%d: [%s] %s: %s", c->fname, line, section, name, why);
        return 1;
    }
    if (c->set_line[idx]) {
        rt_cfg_errors_add(c->errs, "%s:%d: [%s] %s: set twice (first at line %d)", c->fname, line,
                          section, name, c->set_line[idx]);
        return 1;
    }
    c->set_line[idx] = line;
    if (set_value(k, c->obj, value, c->basedir, why) != RT_OK)
        rt_cfg_errors_add(c->errs, "%s:%d: [%s] %s: %s", c->fname, line, section, name, why);
    return 1;
}

/* inih's line-buffer settings are process globals in Debian's build; set them
 * once, before the first parse. */
static void inih_setup(void)
{
    ini_use_stack = false;
    ini_allow_realloc = true;
    ini_max_line = 1 << 20;
    ini_initial_alloc = 256;
    ini_allow_multiline = false; /* a repeated key is an error, not a continuation */
    ini_stop_on_first_error = false;
}
static pthread_once_t inih_once = PTHREAD_ONCE_INIT;

/* Parse text into obj, which already holds the defaults; lines_out (when
 * not NULL) gets the per-key lines (the caller frees them). */
static rt_status parse_text(const rt_cfg_schema *s, const char *text, size_t len, const char *fname,
                            const char *basedir, void *obj, rt_cfg_errors *errs, int **lines_out,
                            bool checks)
{
    pthread_once(&inih_once, inih_setup);
    load_ctx c = {.s = s, .obj = obj, .errs = errs, .fname = fname ? fname : "<string>",
                  .basedir = basedir, .text = text, .len = len, .at_line_start = true,
                  .cur_section_known = section_known(s, "")};
    c.set_line = calloc(s->nkeys ? s->nkeys : 1, sizeof *c.set_line);
    if (!c.set_line) {
        rt_cfg_errors_add(errs, "%s: out of memory", c.fname);
        return RT_ERR_NOMEM;
    }
    size_t before = errs->n + errs->dropped;
    int r = ini_parse_stream(reader, &c, handler, &c);
    if (r == -2)
        rt_cfg_errors_add(errs, "%s: out of memory", c.fname);
    for (size_t i = 0; i < s->nkeys; i++) {
        const rt_cfg_key *k = &s->keys[i];
        if (checks && (k->flags & RT_CFG_REQUIRED) && !c.set_line[i])
            rt_cfg_errors_add(errs, "%s: [%s] %s: required key is missing (%s)", c.fname,
                              k->section, k->name, k->help);
        /* a default path is relative to the file too, like a written one, or
         * to the folder systemd made for the service */
        char **pv = k->type == RT_CFG_PATH && !c.set_line[i] ? field(obj, k) : NULL;
        if (pv && *pv && (*pv)[0]) {
            const char *env = (k->flags & RT_CFG_IN_STATE_DIR) ? getenv("STATE_DIRECTORY")
                              : (k->flags & RT_CFG_IN_LOGS_DIR) ? getenv("LOGS_DIRECTORY") : NULL;
            char first[4096];
            const char *base = basedir;
            if (env && env[0] == '/' && strcspn(env, ":") < sizeof first) {
                snprintf(first, sizeof first, "%.*s", (int)strcspn(env, ":"), env); /* a list: the first */
                base = first;
            }
            /* the logs folder is the service's LogsDirectory itself */
            char *joined = base != basedir && (k->flags & RT_CFG_IN_LOGS_DIR) ? strdup(base)
                                                                            : join_path(base, *pv);
            if (joined) {
                free(*pv);
                *pv = joined;
            }
        }
    }
    if (checks && errs->n + errs->dropped == before && s->validate) {
        rt_cfg_origin o = {c.fname, c.set_line};
        s->validate(obj, &o, errs);
    }
    if (lines_out)
        *lines_out = c.set_line;
    else
        free(c.set_line);
    return errs->n + errs->dropped == before ? RT_OK : RT_ERR_INVALID;
}

rt_status rt_cfg_load_string(const rt_cfg_schema *s, const char *text, size_t len,
                             const char *fname, const char *basedir, void *obj,
                             rt_cfg_errors *errs)
{
    rt_cfg_init(s, obj);
    return parse_text(s, text, len, fname, basedir, obj, errs, NULL, true);
}

rt_status rt_cfg_load_file(const rt_cfg_schema *s, const char *path, void *obj,
                           rt_cfg_errors *errs)
{
    return rt_cfg_load_file_at(s, path, obj, errs, NULL);
}

static rt_status load_file(const rt_cfg_schema *s, const char *path, void *obj, rt_cfg_errors *errs,
                           int **lines, bool checks)
{
    if (lines)
        *lines = NULL;
    rt_cfg_init(s, obj);
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        rt_cfg_errors_add(errs, "%s: cannot open: %s", path, strerror(e));
        return e == ENOENT ? RT_ERR_NOTFOUND : RT_ERR_IO;
    }
    char *buf = malloc(MAX_FILE_BYTES + 1);
    size_t n = buf ? fread(buf, 1, MAX_FILE_BYTES + 1, f) : 0;
    bool bad = !buf || ferror(f);
    fclose(f);
    if (bad || n > MAX_FILE_BYTES) {
        free(buf);
        rt_cfg_errors_add(errs, "%s: %s", path,
                          bad ? "read error" : "larger than 16 MiB, not a config file");
        return bad ? RT_ERR_IO : RT_ERR_INVALID;
    }
    buf[n] = '\0';
    /* relative paths in the file are relative to its folder, made absolute
     * so that the values still hold where the file's text travels (a job's
     * configuration reaches workers in another folder) */
    char *dir = strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    const char *basedir = ".";
    if (slash) {
        slash[slash == dir ? 1 : 0] = '\0';
        basedir = dir;
    }
    char *abs = realpath(basedir, NULL);
    if (abs) {
        free(dir);
        dir = abs;
        basedir = dir;
    }
    rt_status st = parse_text(s, buf, n, path, basedir, obj, errs, lines, checks);
    free(dir);
    free(buf);
    return st;
}

rt_status rt_cfg_load_file_at(const rt_cfg_schema *s, const char *path, void *obj,
                              rt_cfg_errors *errs, int **lines)
{
    return load_file(s, path, obj, errs, lines, true);
}

rt_status rt_cfg_load_file_unchecked(const rt_cfg_schema *s, const char *path, void *obj,
                                     rt_cfg_errors *errs, int **lines)
{
    return load_file(s, path, obj, errs, lines, false);
}

rt_status rt_cfg_set(const rt_cfg_schema *s, void *obj, const char *dotted, const char *value,
                     rt_cfg_errors *errs)
{
    const char *dot = strchr(dotted, '.'); /* section names hold no dot; key names may */
    char section[128];
    if (!dot || (size_t)(dot - dotted) >= sizeof section) {
        rt_cfg_errors_add(errs, "command line: '%s': expected section.key=value", dotted);
        return RT_ERR_INVALID;
    }
    snprintf(section, sizeof section, "%.*s", (int)(dot - dotted), dotted);
    const char *name = dot + 1;
    if (!section_known(s, section)) {
        const char *hint = closest_section(s, section);
        if (hint)
            rt_cfg_errors_add(errs, "command line: unknown section [%s]; did you mean [%s]?",
                              section, hint);
        else
            rt_cfg_errors_add(errs, "command line: unknown section [%s]", section);
        return RT_ERR_INVALID;
    }
    const rt_cfg_key *k = rt_cfg_find(s, section, name);
    if (!k) {
        char hint[160];
        key_hint(s, section, name, hint, sizeof hint);
        rt_cfg_errors_add(errs, "command line: unknown key '%s' in section [%s]%s", name, section,
                          hint);
        return RT_ERR_INVALID;
    }
    char why[RT_ERR_LEN];
    if (k->type == RT_CFG_MAP ? map_set(k, obj, name, value, RT_CFG_LINE_SET, why) != RT_OK
                              : set_value(k, obj, value, NULL, why) != RT_OK) {
        rt_cfg_errors_add(errs, "command line: [%s] %s: %s", section, name, why);
        return RT_ERR_INVALID;
    }
    return RT_OK;
}
