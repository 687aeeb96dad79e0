/* rt_csv.c — see rt_csv.h.  A byte-at-a-time state machine over a 64 KiB
 * read buffer; the record is assembled in one growable buffer with the
 * fields NUL-terminated in place. */
#include "rt_csv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define CHUNK (64 * 1024)

struct rt_csv {
    char name[512];
    gzFile gz;                 /* file input, or NULL */
    unsigned char *mem;        /* memory input */
    size_t mem_len, mem_pos;
    unsigned char buf[CHUNK];
    size_t len, pos;
    bool eof;
    bool began;                /* the first bytes were read (BOM skipped, delimiter chosen) */
    char delim;                /* ',', or what the header shows instead (sniff_delim) */
    bool tabs;                 /* a .tsv name: tabs, whatever the header shows */
    int64_t line;              /* line of the next byte */
    int64_t rec_line;          /* line where the current record starts */
    char *rec;                 /* fields, each NUL-terminated */
    size_t rec_len, rec_cap;
    size_t *start;             /* offsets into rec */
    size_t *flen;
    bool *quoted;
    size_t nf, fcap;
};

static rt_csv *alloc_csv(const char *name)
{
    rt_csv *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    snprintf(c->name, sizeof c->name, "%s", name);
    c->line = 1;
    c->tabs = rt_csv_tsv_name(name);
    c->delim = c->tabs ? '\t' : ',';
    return c;
}

const char *const rt_csv_suffixes[] = {".csv", ".csv.gz", ".tsv", ".tsv.gz", NULL};

bool rt_csv_tsv_name(const char *name)
{
    const size_t n = strlen(name), k = rt_csv_suffix(name);
    return k > 0 && !strncmp(name + n - k, ".tsv", 4);
}

size_t rt_csv_suffix(const char *name)
{
    const size_t n = strlen(name);
    for (int i = 0; rt_csv_suffixes[i]; i++) {
        const size_t k = strlen(rt_csv_suffixes[i]);
        if (n > k && !strcmp(name + n - k, rt_csv_suffixes[i]))
            return k;
    }
    return 0;
}

rt_status rt_csv_open(const char *path, rt_csv **out, char *err)
{
    *out = NULL;
    gzFile gz = gzopen(path, "rb");
    if (!gz)
        return rt_err(err, errno == ENOENT ? RT_ERR_NOTFOUND : RT_ERR_IO, "%s: cannot open: %s",
                      path, strerror(errno ? errno : EIO));
    gzbuffer(gz, CHUNK);
    rt_csv *c = alloc_csv(path);
    if (!c) {
        gzclose(gz);
        return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", path);
    }
    c->gz = gz;
    *out = c;
    return RT_OK;
}

rt_status rt_csv_open_mem(const void *data, size_t len, const char *name, rt_csv **out, char *err)
{
    *out = NULL;
    rt_csv *c = alloc_csv(name);
    if (!c || !(c->mem = malloc(len ? len : 1))) {
        free(c);
        return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", name);
    }
    memcpy(c->mem, data, len);
    c->mem_len = len;
    *out = c;
    return RT_OK;
}

void rt_csv_close(rt_csv *c)
{
    if (!c)
        return;
    if (c->gz)
        gzclose(c->gz);
    free(c->mem);
    free(c->rec);
    free(c->start);
    free(c->flen);
    free(c->quoted);
    free(c);
}

size_t rt_csv_nfields(const rt_csv *c) { return c->nf; }
int64_t rt_csv_line(const rt_csv *c) { return c->rec_line; }
const char *rt_csv_name(const rt_csv *c) { return c->name; }
bool rt_csv_quoted(const rt_csv *c, size_t i) { return i < c->nf && c->quoted[i]; }

const char *rt_csv_field(const rt_csv *c, size_t i, size_t *len)
{
    if (i >= c->nf) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = c->flen[i];
    return c->rec + c->start[i];
}

/* The delimiter of the first line in buf[from, len): ',' where it has one
 * outside quotes, else the most frequent of ';', tab and '|' (as Excel
 * writes CSV where the comma is the decimal mark, and TSV), else ','. */
static char sniff_delim(const rt_csv *c, size_t from)
{
    static const char cand[] = {';', '\t', '|'};
    size_t count[3] = {0};
    bool quoted = false;
    for (size_t i = from; i < c->len && (quoted || c->buf[i] != '\n'); i++) {
        const unsigned char ch = c->buf[i];
        if (ch == '"')
            quoted = !quoted;
        else if (!quoted && ch == ',')
            return ',';
        for (int k = 0; !quoted && k < 3; k++)
            count[k] += ch == (unsigned char)cand[k];
    }
    int best = -1;
    for (int k = 0; k < 3; k++)
        if (count[k] > 0 && (best < 0 || count[k] > count[best]))
            best = k;
    return best < 0 ? ',' : cand[best];
}

char rt_csv_delim(const rt_csv *c) { return c->delim; }

/* Next byte, or -1 at the end; -2 on a read error (message in err). */
static int next_byte(rt_csv *c, char *err)
{
    if (c->pos == c->len) {
        if (c->eof)
            return -1;
        if (c->gz) {
            int n = gzread(c->gz, c->buf, CHUNK);
            if (n < 0) {
                int e;
                const char *msg = gzerror(c->gz, &e);
                rt_err(err, RT_ERR_IO, "%s:%lld: read error: %s", c->name, (long long)c->line,
                       e == Z_ERRNO ? strerror(errno) : msg);
                return -2;
            }
            c->len = (size_t)n;
        } else {
            size_t n = c->mem_len - c->mem_pos < CHUNK ? c->mem_len - c->mem_pos : CHUNK;
            memcpy(c->buf, c->mem + c->mem_pos, n);
            c->mem_pos += n;
            c->len = n;
        }
        c->pos = 0;
        /* a UTF-8 byte order mark (Excel's "CSV UTF-8", Notepad) is not part
         * of the first column's name */
        if (!c->began && c->len >= 3 && !memcmp(c->buf, "\xEF\xBB\xBF", 3))
            c->pos = 3;
        if (!c->began && !c->tabs)
            c->delim = sniff_delim(c, c->pos);
        c->began = true;
        if (c->pos == c->len) {
            c->eof = c->len == 0;
            if (c->eof)
                return -1;
            return next_byte(c, err);
        }
    }
    return c->buf[c->pos++];
}

static bool put(rt_csv *c, char ch)
{
    if (c->rec_len + 1 >= c->rec_cap) {
        size_t cap = c->rec_cap ? c->rec_cap * 2 : 1024;
        char *r = realloc(c->rec, cap);
        if (!r)
            return false;
        c->rec = r;
        c->rec_cap = cap;
    }
    c->rec[c->rec_len++] = ch;
    return true;
}

static bool begin_field(rt_csv *c)
{
    if (c->nf == c->fcap) {
        size_t cap = c->fcap ? c->fcap * 2 : 32;
        size_t *s = realloc(c->start, cap * sizeof *s);
        if (s)
            c->start = s;
        size_t *l = realloc(c->flen, cap * sizeof *l);
        if (l)
            c->flen = l;
        bool *q = realloc(c->quoted, cap * sizeof *q);
        if (q)
            c->quoted = q;
        if (!s || !l || !q)
            return false;
        c->fcap = cap;
    }
    c->start[c->nf] = c->rec_len;
    c->flen[c->nf] = 0;
    c->quoted[c->nf] = false;
    c->nf++;
    return true;
}

static bool end_field(rt_csv *c)
{
    size_t i = c->nf - 1;
    c->flen[i] = c->rec_len - c->start[i];
    return put(c, '\0');
}

enum { S_START, S_UNQUOTED, S_QUOTED, S_QUOTE };

int rt_csv_next(rt_csv *c, char *err)
{
    for (;;) { /* one iteration per physical record; blank lines loop */
        c->rec_len = 0;
        c->nf = 0;
        c->rec_line = c->line;
        int64_t quote_line = 0;
        int state = S_START;
        bool any = false; /* a byte of the record other than the line end */
        if (!begin_field(c))
            goto nomem;
        for (;;) {
            int b = next_byte(c, err);
            if (b == -2)
                return -1;
            if (b == -1) {
                if (state == S_QUOTED) {
                    rt_err(err, RT_ERR_INVALID,
                           "%s:%lld: the quoted field opened on line %lld is never closed",
                           c->name, (long long)c->rec_line, (long long)quote_line);
                    return -1;
                }
                if (!any)
                    return 0;
                if (!end_field(c))
                    goto nomem;
                return 1;
            }
            if (b == '\0') {
                rt_err(err, RT_ERR_INVALID, "%s:%lld: a NUL byte (binary data, not CSV)",
                       c->name, (long long)c->line);
                return -1;
            }
            if (c->rec_len >= RT_CSV_MAX_RECORD) {
                rt_err(err, RT_ERR_INVALID, "%s:%lld: a record longer than %u bytes", c->name,
                       (long long)c->rec_line, RT_CSV_MAX_RECORD);
                return -1;
            }
            if (b == '\n')
                c->line++;
            switch (state) {
            case S_QUOTED:
                if (b == '"')
                    state = S_QUOTE;
                else if (!put(c, (char)b))
                    goto nomem;
                continue;
            case S_QUOTE:
                if (b == '"') { /* "" inside quotes */
                    if (!put(c, '"'))
                        goto nomem;
                    state = S_QUOTED;
                    continue;
                }
                if (b == '\r') { /* only as part of CRLF */
                    int n2 = next_byte(c, err);
                    if (n2 == '\n') {
                        c->line++;
                        b = '\n';
                    } else {
                        rt_err(err, RT_ERR_INVALID,
                               "%s:%lld: text after the closing quote of field %zu", c->name,
                               (long long)c->rec_line, c->nf);
                        return -1;
                    }
                }
                if (b != c->delim && b != '\n') {
                    rt_err(err, RT_ERR_INVALID,
                           "%s:%lld: text after the closing quote of field %zu", c->name,
                           (long long)c->rec_line, c->nf);
                    return -1;
                }
                break; /* handled below as a separator */
            case S_START:
                if (b == '"') {
                    c->quoted[c->nf - 1] = true;
                    quote_line = c->line;
                    state = S_QUOTED;
                    any = true;
                    continue;
                }
                /* fall through */
            case S_UNQUOTED:
                if (b == '"') {
                    rt_err(err, RT_ERR_INVALID,
                           "%s:%lld: a quote inside the unquoted field %zu (quote the whole "
                           "field and double the quote)",
                           c->name, (long long)c->rec_line, c->nf);
                    return -1;
                }
                if (b == '\r') {
                    int n2 = next_byte(c, err);
                    if (n2 == -2)
                        return -1;
                    if (n2 == '\n') {
                        c->line++;
                        b = '\n';
                    } else {
                        if (!put(c, '\r'))
                            goto nomem;
                        any = true;
                        if (n2 == -1)
                            continue;
                        c->pos--; /* look again at n2 (still in the buffer) */
                        state = S_UNQUOTED;
                        continue;
                    }
                }
                if (b != c->delim && b != '\n') {
                    if (!put(c, (char)b))
                        goto nomem;
                    any = true;
                    state = S_UNQUOTED;
                    continue;
                }
                break;
            }
            /* a separator: the delimiter or the end of the record */
            if (!end_field(c))
                goto nomem;
            if (b == c->delim) {
                any = true;
                if (!begin_field(c))
                    goto nomem;
                state = S_START;
                continue;
            }
            if (!any) /* a blank line */
                break;
            return 1;
        }
    }
nomem:
    rt_err(err, RT_ERR_NOMEM, "%s:%lld: out of memory", c->name, (long long)c->rec_line);
    return -1;
}
