/* rt_parquet.c — see rt_parquet.h: the file, its footer (FileMetaData in
 * Thrift's compact protocol) and the flat schema.  Pages are pq_decode.c. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pq_internal.h"
#include "rt_csv.h"
#include "pq_thrift.h"

/* One SchemaElement, as much of it as a flat reader needs. */
typedef struct schema_el {
    int type, type_length, repetition, num_children, converted, scale, precision;
    int logical;                                  /* LogicalType's union field id, 0 when absent */
    int lt_scale, lt_precision, lt_bits, lt_unit; /* lt_unit: 1 ms, 2 us, 3 ns */
    bool lt_signed;
    char name[128];
} schema_el;

enum {
    LT_STRING = 1,
    LT_MAP,
    LT_LIST,
    LT_ENUM,
    LT_DECIMAL,
    LT_DATE,
    LT_TIME,
    LT_TIMESTAMP,
    LT_INTEGER = 10,
    LT_UNKNOWN,
    LT_JSON,
    LT_BSON,
    LT_UUID,
    LT_FLOAT16
};
enum {
    CT_UTF8,
    CT_MAP,
    CT_MAP_KV,
    CT_LIST,
    CT_ENUM,
    CT_DECIMAL,
    CT_DATE,
    CT_TIME_MILLIS,
    CT_TIME_MICROS,
    CT_TS_MILLIS,
    CT_TS_MICROS,
    CT_UINT8,
    CT_UINT16,
    CT_UINT32,
    CT_UINT64,
    CT_INT8,
    CT_INT16,
    CT_INT32,
    CT_INT64,
    CT_JSON,
    CT_BSON,
    CT_INTERVAL
};

static const char *const physical_name[] = {
    "BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};

/* ---- the footer ---------------------------------------------------------------------- */

/* TimeUnit / IntType / DecimalType / TimestampType inside a LogicalType. */
static void read_logical(tc *t, int type, schema_el *e)
{
    if (!tc_enter(t, type))
        return;
    int16_t last = 0;
    int ft;
    while (tc_field(t, &last, &ft)) {
        int id = last;
        e->logical = id;
        if (!tc_enter(t, ft))
            break;
        int16_t l2 = 0;
        int t2;
        while (tc_field(t, &l2, &t2)) {
            if (id == LT_DECIMAL && l2 == 1)
                e->lt_scale = (int)tc_int(t, t2);
            else if (id == LT_DECIMAL && l2 == 2)
                e->lt_precision = (int)tc_int(t, t2);
            else if (id == LT_INTEGER && l2 == 1)
                e->lt_bits = (int)tc_int(t, t2);
            else if (id == LT_INTEGER && l2 == 2)
                e->lt_signed = tc_int(t, t2) != 0;
            else if ((id == LT_TIMESTAMP || id == LT_TIME) && l2 == 2 && tc_enter(t, t2)) {
                int16_t l3 = 0;
                int t3;
                while (tc_field(t, &l3, &t3)) { /* union TimeUnit: the field id is the unit */
                    e->lt_unit = l3;
                    tc_skip(t, t3);
                }
                tc_leave(t);
            } else
                tc_skip(t, t2);
        }
        tc_leave(t);
    }
    tc_leave(t);
}

static void read_schema_el(tc *t, int type, schema_el *e)
{
    memset(e, 0, sizeof *e);
    e->type = e->repetition = e->converted = -1;
    if (!tc_enter(t, type))
        return;
    int16_t last = 0;
    int ft;
    size_t len;
    while (tc_field(t, &last, &ft)) {
        switch (last) {
        case 1:
            e->type = (int)tc_int(t, ft);
            break;
        case 2:
            e->type_length = (int)tc_int(t, ft);
            break;
        case 3:
            e->repetition = (int)tc_int(t, ft);
            break;
        case 4: {
            const uint8_t *s = tc_binary(t, ft, &len);
            snprintf(e->name, sizeof e->name, "%.*s", (int)(len < 127 ? len : 127),
                     s ? (const char *)s : "");
            break;
        }
        case 5:
            e->num_children = (int)tc_int(t, ft);
            break;
        case 6:
            e->converted = (int)tc_int(t, ft);
            break;
        case 7:
            e->scale = (int)tc_int(t, ft);
            break;
        case 8:
            e->precision = (int)tc_int(t, ft);
            break;
        case 10:
            read_logical(t, ft, e);
            break;
        default:
            tc_skip(t, ft);
        }
    }
    tc_leave(t);
}

/* ColumnMetaData: the codec, counts and where the pages are. */
static void read_column_meta(tc *t, int type, pq_chunk *c, int *ptype, char *path, size_t plen)
{
    if (!tc_enter(t, type))
        return;
    int16_t last = 0;
    int ft, elem;
    size_t n, len;
    int64_t data_off = -1, dict_off = -1;
    while (tc_field(t, &last, &ft)) {
        switch (last) {
        case 1:
            *ptype = (int)tc_int(t, ft);
            break;
        case 3:
            if (tc_list(t, ft, &elem, &n))
                for (size_t i = 0; i < n && !t->bad; i++) {
                    const uint8_t *s = tc_binary(t, elem, &len);
                    if (i == 0)
                        snprintf(path, plen, "%.*s", (int)(len < 127 ? len : 127),
                                 s ? (const char *)s : "");
                    else if (i == 1)
                        snprintf(path, plen, "(nested)");
                }
            break;
        case 4:
            c->codec = (int)tc_int(t, ft);
            break;
        case 5:
            c->num_values = tc_int(t, ft);
            break;
        case 7:
            c->size = tc_int(t, ft);
            break;
        case 9:
            data_off = tc_int(t, ft);
            break;
        case 11:
            dict_off = tc_int(t, ft);
            break;
        default:
            tc_skip(t, ft);
        }
    }
    tc_leave(t);
    /* some writers store 0 for "no dictionary page" */
    c->start = dict_off > 0 && dict_off < data_off ? dict_off : data_off;
}

static void read_chunk(tc *t, int type, pq_chunk *c, int *ptype, char *path, size_t plen,
                       bool *external)
{
    if (!tc_enter(t, type))
        return;
    int16_t last = 0;
    int ft;
    while (tc_field(t, &last, &ft)) {
        if (last == 1) {
            *external = true; /* file_path: the pages are in another file */
            tc_skip(t, ft);
        } else if (last == 3)
            read_column_meta(t, ft, c, ptype, path, plen);
        else
            tc_skip(t, ft);
    }
    tc_leave(t);
}

/* ---- the schema ---------------------------------------------------------------------- */

static const char *group_kind(const schema_el *e)
{
    if (e->logical == LT_LIST || e->converted == CT_LIST)
        return "a LIST";
    if (e->logical == LT_MAP || e->converted == CT_MAP || e->converted == CT_MAP_KV)
        return "a MAP";
    return "a struct (a group of fields, e.g. a Spark vector or other UDT)";
}

/* The output kind and conversion of a leaf; an error for what is not read. */
static rt_status column_of(const schema_el *e, pq_col *c, const char *file, char *err)
{
    memset(c, 0, sizeof *c);
    if (e->type < PQ_BOOLEAN || e->type > PQ_FLBA)
        return rt_err(err, RT_ERR_INVALID, "%s: column '%s': unknown physical type %d", file,
                      e->name, e->type);
    snprintf(c->pub.name, sizeof c->pub.name, "%s", e->name);
    c->pub.physical = e->type;
    c->pub.nullable = e->repetition == 1;
    c->pub.type = c->type_name;
    c->type_length = e->type_length;
    int lt = e->logical, ct = e->converted;
    int scale = lt == LT_DECIMAL ? e->lt_scale : e->scale;
    int precision = lt == LT_DECIMAL ? e->lt_precision : e->precision;
    int unit = lt == LT_TIMESTAMP || lt == LT_TIME          ? e->lt_unit
               : ct == CT_TS_MILLIS || ct == CT_TIME_MILLIS ? 1
               : ct == CT_TS_MICROS || ct == CT_TIME_MICROS ? 2
                                                            : 0;
    bool is_ts = lt == LT_TIMESTAMP || ct == CT_TS_MILLIS || ct == CT_TS_MICROS;
    bool is_time = lt == LT_TIME || ct == CT_TIME_MILLIS || ct == CT_TIME_MICROS;
    bool is_unsigned = (lt == LT_INTEGER && !e->lt_signed) || (ct >= CT_UINT8 && ct <= CT_UINT64);
    c->per_second = unit == 1 ? 1000 : unit == 2 ? 1000000 : 1000000000;
    snprintf(c->type_name, sizeof c->type_name, "%s", physical_name[e->type]);
    switch (e->type) {
    case PQ_BOOLEAN:
        c->conv = CV_INT;
        break;
    case PQ_INT32:
    case PQ_INT64:
        c->conv = is_unsigned ? (e->type == PQ_INT32 ? CV_UINT32 : CV_UINT64) : CV_INT;
        if (is_unsigned)
            snprintf(c->type_name, sizeof c->type_name, "UINT%d",
                     e->lt_bits            ? e->lt_bits
                     : e->type == PQ_INT32 ? 32
                                           : 64);
        if (lt == LT_DATE || ct == CT_DATE) {
            c->conv = CV_DATE;
            snprintf(c->type_name, sizeof c->type_name, "DATE");
        } else if (is_ts || is_time) {
            if (unit < 1 || unit > 3)
                return rt_err(err, RT_ERR_INVALID, "%s: column '%s': a %s without its unit", file,
                              e->name, is_ts ? "TIMESTAMP" : "TIME");
            c->conv = is_ts ? CV_TIMESTAMP : CV_TIME;
            snprintf(c->type_name, sizeof c->type_name, "%s(%s)", is_ts ? "TIMESTAMP" : "TIME",
                     unit == 1   ? "MILLIS"
                     : unit == 2 ? "MICROS"
                                 : "NANOS");
        }
        break;
    case PQ_INT96:
        c->conv = CV_INT96;
        break;
    case PQ_FLOAT:
    case PQ_DOUBLE:
        c->conv = CV_REAL;
        break;
    case PQ_BYTE_ARRAY:
        c->conv = CV_TEXT;
        snprintf(c->type_name, sizeof c->type_name, "%s",
                 lt == LT_STRING || ct == CT_UTF8 ? "STRING" : "BYTE_ARRAY");
        break;
    case PQ_FLBA:
        if (e->type_length <= 0 || e->type_length > (1 << 20))
            return rt_err(err, RT_ERR_INVALID, "%s: column '%s': fixed length %d", file, e->name,
                          e->type_length);
        c->conv = lt == LT_FLOAT16 && e->type_length == 2 ? CV_FLOAT16 : CV_BLOB;
        break;
    }
    if (lt == LT_DECIMAL || ct == CT_DECIMAL) {
        if (e->type != PQ_INT32 && e->type != PQ_INT64 && e->type != PQ_FLBA &&
            e->type != PQ_BYTE_ARRAY)
            return rt_err(err, RT_ERR_INVALID, "%s: column '%s': DECIMAL on %s", file, e->name,
                          physical_name[e->type]);
        if (scale < 0 || scale > 38)
            return rt_err(err, RT_ERR_INVALID, "%s: column '%s': DECIMAL scale %d", file, e->name,
                          scale);
        c->conv = CV_DECIMAL;
        c->scale = scale;
        snprintf(c->type_name, sizeof c->type_name, "DECIMAL(%d,%d)", precision, scale);
    }
    if (c->conv == CV_BLOB && lt == LT_UUID)
        snprintf(c->type_name, sizeof c->type_name, "UUID");
    c->pub.kind = c->conv == CV_INT || c->conv == CV_UINT32 ? RT_PQ_INT
                  : c->conv == CV_UINT64                    ? RT_PQ_INT
                  : c->conv == CV_REAL || c->conv == CV_FLOAT16 || c->conv == CV_DECIMAL
                      ? RT_PQ_REAL
                  : c->conv == CV_BLOB ? RT_PQ_BLOB
                                       : RT_PQ_TEXT;
    return RT_OK;
}

static rt_status read_schema(rt_pq_file *f, schema_el *el, size_t nel, char *err)
{
    if (nel < 1)
        return rt_err(err, RT_ERR_INVALID, "%s: the schema is empty", f->name);
    size_t nchildren = (size_t)(el[0].num_children > 0 ? el[0].num_children : 0);
    if (nchildren > nel - 1)
        return rt_err(err, RT_ERR_INVALID, "%s: the schema names %zu columns but lists %zu",
                      f->name, nchildren, nel - 1);
    f->cols = calloc(nchildren + 1, sizeof *f->cols);
    if (!f->cols)
        return rt_err(err, RT_ERR_NOMEM, "%s: out of memory", f->name);
    size_t i = 1;
    for (size_t k = 0; k < nchildren; k++) {
        if (i >= nel)
            return rt_err(err, RT_ERR_INVALID, "%s: the schema names %zu columns but lists %zu",
                          f->name, nchildren, nel - 1);
        const schema_el *e = &el[i];
        if (e->num_children > 0)
            return rt_err(err, RT_ERR_INVALID,
                          "%s: column '%s' is %s; ringtrain reads flat columns only (select or "
                          "flatten it before writing, e.g. with Spark's col(\"%s.x\") or "
                          "vector_to_array)",
                          f->name, e->name, group_kind(e), e->name);
        if (e->repetition == 2)
            return rt_err(err, RT_ERR_INVALID,
                          "%s: column '%s' is repeated (a list); ringtrain reads flat columns "
                          "only",
                          f->name, e->name);
        if (e->type < 0)
            return rt_err(err, RT_ERR_INVALID, "%s: column '%s' has no type", f->name, e->name);
        for (int j = 0; j < f->ncols; j++)
            if (!strcmp(f->cols[j].pub.name, e->name))
                return rt_err(err, RT_ERR_INVALID, "%s: column '%s' appears twice", f->name,
                              e->name);
        rt_status st = column_of(e, &f->cols[f->ncols], f->name, err);
        if (st != RT_OK)
            return st;
        f->ncols++;
        i++;
    }
    if (i != nel)
        return rt_err(err, RT_ERR_INVALID,
                      "%s: the schema lists %zu elements after its %zu "
                      "columns",
                      f->name, nel - i, nchildren);
    return RT_OK;
}

static rt_status read_footer(rt_pq_file *f, const uint8_t *p, size_t len, char *err)
{
    tc t = {.p = p, .end = p + len};
    int16_t last = 0;
    int ft, elem;
    size_t n, nel = 0;
    schema_el *el = NULL;
    rt_status st = RT_OK;
    bool have_groups = false, external = false;
    while (st == RT_OK && tc_field(&t, &last, &ft)) {
        if (last == 2 && tc_list(&t, ft, &elem, &n)) {
            if (n > 100000) {
                st = rt_err(err, RT_ERR_INVALID, "%s: %zu schema elements (at most 100000)",
                            f->name, n);
                break;
            }
            if (f->cols || el) {
                st = rt_err(err, RT_ERR_INVALID, "%s: the footer has two schemas", f->name);
                break;
            }
            if (!(el = calloc(n ? n : 1, sizeof *el))) {
                st = rt_err(err, RT_ERR_NOMEM, "%s: out of memory", f->name);
                break;
            }
            for (nel = 0; nel < n && !t.bad; nel++)
                read_schema_el(&t, elem, &el[nel]);
            if (!t.bad)
                st = read_schema(f, el, nel, err);
        } else if (last == 3)
            f->nrows = tc_int(&t, ft);
        else if (last == 4 && f->cols && tc_list(&t, ft, &elem, &n)) {
            if (have_groups) {
                st = rt_err(err, RT_ERR_INVALID, "%s: the footer lists row groups twice", f->name);
                break;
            }
            have_groups = true;
            if (n * (size_t)(f->ncols ? f->ncols : 1) > len) { /* a chunk takes bytes */
                st = rt_err(err, RT_ERR_INVALID,
                            "%s: %zu row groups of %d columns cannot fit "
                            "a %zu-byte footer",
                            f->name, n, f->ncols, len);
                break;
            }
            f->ngroups = (int)n;
            f->group_rows = calloc((size_t)f->ngroups + 1, sizeof *f->group_rows);
            f->chunks = calloc((size_t)f->ngroups * (size_t)f->ncols + 1, sizeof *f->chunks);
            if (!f->group_rows || !f->chunks) {
                st = rt_err(err, RT_ERR_NOMEM, "%s: out of memory", f->name);
                break;
            }
            for (int g = 0; g < f->ngroups && !t.bad && st == RT_OK; g++) {
                if (!tc_enter(&t, elem))
                    break;
                int16_t l2 = 0;
                int t2, e2;
                size_t nc;
                while (st == RT_OK && tc_field(&t, &l2, &t2)) {
                    if (l2 == 3)
                        f->group_rows[g] = tc_int(&t, t2);
                    else if (l2 == 1 && tc_list(&t, t2, &e2, &nc)) {
                        if (nc != (size_t)f->ncols)
                            st = rt_err(err, RT_ERR_INVALID,
                                        "%s: row group %d has %zu column chunks for %d columns",
                                        f->name, g, nc, f->ncols);
                        for (size_t c = 0; c < nc && st == RT_OK && !t.bad; c++) {
                            pq_chunk *ch = &f->chunks[(size_t)g * (size_t)f->ncols + c];
                            int ptype = -1;
                            char path[128] = "";
                            read_chunk(&t, e2, ch, &ptype, path, sizeof path, &external);
                            const pq_col *col = &f->cols[c];
                            if (!t.bad &&
                                (ptype != col->pub.physical || strcmp(path, col->pub.name) != 0))
                                st = rt_err(err, RT_ERR_INVALID,
                                            "%s: row group %d: column chunk %zu is '%s' of type "
                                            "%d, the schema says '%s' of type %d",
                                            f->name, g, c, path, ptype, col->pub.name,
                                            col->pub.physical);
                        }
                    } else
                        tc_skip(&t, t2);
                }
                tc_leave(&t);
            }
        } else if (last == 6) {
            const uint8_t *s = tc_binary(&t, ft, &n);
            snprintf(f->created_by, sizeof f->created_by, "%.*s", (int)(n < 127 ? n : 127),
                     s ? (const char *)s : "");
        } else
            tc_skip(&t, ft);
    }
    free(el);
    if (st != RT_OK)
        return st;
    if (t.bad)
        return rt_err(err, RT_ERR_INVALID, "%s: the footer is damaged (%s)", f->name, t.bad);
    if (!f->cols || !have_groups)
        return rt_err(err, RT_ERR_INVALID, "%s: the footer has no %s", f->name,
                      f->cols ? "row groups" : "schema");
    if (external)
        return rt_err(err, RT_ERR_UNSUPPORTED,
                      "%s: its column chunks are in other files (file_path); not read", f->name);
    int64_t total = 0;
    for (int g = 0; g < f->ngroups; g++) {
        if (f->group_rows[g] < 0 || f->group_rows[g] > ((int64_t)1 << 40))
            return rt_err(err, RT_ERR_INVALID, "%s: row group %d claims %lld rows", f->name, g,
                          (long long)f->group_rows[g]);
        total += f->group_rows[g];
    }
    if (total != f->nrows)
        return rt_err(err, RT_ERR_INVALID,
                      "%s: the row groups hold %lld rows, the footer says "
                      "%lld",
                      f->name, (long long)total, (long long)f->nrows);
    return RT_OK;
}

/* ---- the file ------------------------------------------------------------------------ */

static rt_status open_common(rt_pq_file *f, char *err)
{
    if (f->size < 12 || memcmp(f->data, "PAR1", 4) != 0 ||
        memcmp(f->data + f->size - 4, "PAR1", 4) != 0) {
        if (f->size >= 4 && memcmp(f->data + (f->size >= 8 ? f->size - 4 : 0), "PARE", 4) == 0)
            return rt_err(err, RT_ERR_UNSUPPORTED, "%s is an encrypted Parquet file; not read",
                          f->name);
        /* a workbook: a ZIP (xlsx, ods) or an OLE compound file (xls) */
        if (f->size >= 4 &&
            (!memcmp(f->data, "PK\x03\x04", 4) || !memcmp(f->data, "\xD0\xCF\x11\xE0", 4)))
            return rt_err(err, RT_ERR_UNSUPPORTED,
                          "%s is a spreadsheet workbook (Excel or OpenDocument), not a table prep "
                          "reads: save its sheet as CSV (Excel: File > Save As > CSV UTF-8) and "
                          "give that",
                          f->name);
        return rt_err(err, RT_ERR_INVALID, "%s is not a Parquet file (no PAR1 at %s)", f->name,
                      f->size >= 4 && !memcmp(f->data, "PAR1", 4)
                          ? "its end: truncated?"
                          : "its start; a CSV file's name ends in " RT_CSV_SUFFIX_WORDS
                            ", whether commas, semicolons or tabs separate its fields");
    }
    const uint8_t *q = f->data + f->size - 8;
    uint32_t flen =
        (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
    if (flen > f->size - 12)
        return rt_err(err, RT_ERR_INVALID, "%s: footer length %u is beyond the file's %zu bytes",
                      f->name, flen, f->size);
    return read_footer(f, f->data + f->size - 8 - flen, flen, err);
}

rt_status rt_pq_open_mem(const void *buf, size_t len, const char *name, rt_pq_file **out, char *err)
{
    *out = NULL;
    rt_pq_file *f = calloc(1, sizeof *f);
    f->data = buf;
    f->size = len;
    snprintf(f->name, sizeof f->name, "%s", name);
    rt_status st = open_common(f, err);
    if (st != RT_OK)
        rt_pq_close(f);
    else
        *out = f;
    return st;
}

rt_status rt_pq_open(const char *path, rt_pq_file **out, char *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rt_err(err, RT_ERR_NOTFOUND, "cannot open %s: %m", path);
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return rt_err(err, RT_ERR_INVALID, "%s is not a regular file", path);
    }
    rt_pq_file *f = calloc(1, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", path);
    f->size = (size_t)sb.st_size;
    if (f->size > 0) {
        void *m = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            free(f);
            return rt_err(err, RT_ERR_IO, "cannot map %s: %m", path);
        }
        f->data = m;
        f->mapped = true;
    } else
        f->data = (const uint8_t *)"";
    close(fd);
    rt_status st = open_common(f, err);
    if (st != RT_OK)
        rt_pq_close(f);
    else
        *out = f;
    return st;
}

void rt_pq_close(rt_pq_file *f)
{
    if (!f)
        return;
    if (f->mapped)
        munmap((void *)f->data, f->size);
    free(f->cols);
    free(f->group_rows);
    free(f->chunks);
    free(f);
}

int rt_pq_ncols(const rt_pq_file *f) { return f->ncols; }
const rt_pq_column *rt_pq_col(const rt_pq_file *f, int col) { return &f->cols[col].pub; }
int64_t rt_pq_nrows(const rt_pq_file *f) { return f->nrows; }
int rt_pq_nrow_groups(const rt_pq_file *f) { return f->ngroups; }
int64_t rt_pq_group_rows(const rt_pq_file *f, int rg) { return f->group_rows[rg]; }
const char *rt_pq_created_by(const rt_pq_file *f) { return f->created_by; }
uint32_t rt_pq_encodings_seen(const rt_pq_file *f) { return f->enc_seen; }
uint32_t rt_pq_codecs_seen(const rt_pq_file *f) { return f->codec_seen; }

rt_status rt_pq_read(rt_pq_file *f, int rg, int col, rt_pq_values *v, char *err)
{
    if (rg < 0 || rg >= f->ngroups || col < 0 || col >= f->ncols)
        return rt_err(err, RT_ERR_INVALID, "%s: no row group %d / column %d", f->name, rg, col);
    return pq_read_chunk(f, rg, col, v, err);
}

void rt_pq_values_free(rt_pq_values *v)
{
    free(v->null);
    free(v->i);
    free(v->r);
    free(v->off);
    free(v->len);
    free(v->bytes);
    memset(v, 0, sizeof *v);
}

/* ---- a file or Spark's folder of part files ------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && !strcmp(s + n - k, suf);
}

rt_status rt_part_files(const char *path, const char *const *suffixes, const char *what,
                        char ***files, int *n, char *err)
{
    *files = NULL;
    *n = 0;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return rt_err(err, RT_ERR_NOTFOUND, "cannot open %s: %m", path);
    int cap = 16;
    char **list = malloc((size_t)cap * sizeof *list);
    if (!list)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    if (!S_ISDIR(sb.st_mode)) {
        if (!(list[0] = strdup(path))) {
            free(list);
            return rt_err(err, RT_ERR_NOMEM, "out of memory");
        }
        *files = list;
        *n = 1;
        return RT_OK;
    }
    DIR *d = opendir(path);
    if (!d) {
        free(list);
        return rt_err(err, RT_ERR_IO, "cannot open the folder %s: %m", path);
    }
    rt_status st = RT_OK;
    for (struct dirent *e; st == RT_OK && (e = readdir(d));) {
        const char *nm = e->d_name;
        if (!strcmp(nm, "_temporary")) {
            st = rt_err(err, RT_ERR_INVALID,
                        "%s holds _temporary: the job writing it has not finished (or failed)",
                        path);
            break;
        }
        bool wanted = false;
        for (const char *const *s = suffixes; *s && !wanted; s++)
            wanted = has_suffix(nm, *s);
        if (nm[0] == '.' || nm[0] == '_' || !wanted)
            continue; /* hidden .crc files, _SUCCESS, _metadata, other files */
        if (*n == cap) {
            char **l = realloc(list, (size_t)(cap *= 2) * sizeof *list);
            if (!l) {
                st = rt_err(err, RT_ERR_NOMEM, "out of memory");
                break;
            }
            list = l;
        }
        size_t len = strlen(path) + strlen(nm) + 2;
        if (!(list[*n] = malloc(len))) {
            st = rt_err(err, RT_ERR_NOMEM, "out of memory");
            break;
        }
        snprintf(list[*n], len, "%s/%s", path, nm);
        (*n)++;
    }
    closedir(d);
    if (st == RT_OK && *n == 0)
        st = rt_err(err, RT_ERR_NOTFOUND, "the folder %s holds no %s files", path, what);
    if (st != RT_OK) {
        for (int i = 0; i < *n; i++)
            free(list[i]);
        free(list);
        *n = 0;
        return st;
    }
    qsort(list, (size_t)*n, sizeof *list, cmp_str);
    *files = list;
    return RT_OK;
}

rt_status rt_pq_files(const char *path, char ***files, int *n, char *err)
{
    static const char *const parquet[] = {".parquet", NULL};
    return rt_part_files(path, parquet, ".parquet", files, n, err);
}
