/* test_data.c — the data layer: the CSV reader on the Rossmann files'
 * quirks and on malformed input, the shard format (round trip, and damage
 * of every kind detected), the manifest, dates and ISO weeks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "rt_csv.h"
#include "rt_dataset.h"
#include "rt_endian.h"
#include "rt_file.h"
#include "prep_internal.h"
#include "rt_prep.h"
#include "rt_shard.h"
#include "test_util.h"

/* ---- CSV ------------------------------------------------------------------------------ */

static rt_csv *mem(const char *text)
{
    rt_csv *c = NULL;
    char err[RT_ERR_LEN];
    assert_int_equal(rt_csv_open_mem(text, strlen(text), "t.csv", &c, err), RT_OK);
    return c;
}

static void expect_fields(rt_csv *c, int n, ...)
{
    char err[RT_ERR_LEN];
    int r = rt_csv_next(c, err);
    if (r != 1)
        fail_msg("expected a record, got %d (%s)", r, r < 0 ? err : "end");
    assert_int_equal(rt_csv_nfields(c), n);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        assert_string_equal(rt_csv_field(c, (size_t)i, NULL), va_arg(ap, const char *));
    va_end(ap);
}

static void test_csv_quirks(void **state)
{
    (void)state;
    /* quoted header, quoted strings with commas, empty fields, NA, CRLF,
     * blank lines between blocks, "" inside quotes, a newline in quotes */
    rt_csv *c = mem("\"Store\",\"PromoInterval\",\"State\"\r\n"
                    "1,\"Jan,Apr,Jul,Oct\",\"HB,NI\"\r\n"
                    "\r\n"
                    "2,,NA\n"
                    "\n\n"
                    "3,\"say \"\"hi\"\"\",\"two\nlines\"\n"
                    "4,\"\",x");
    expect_fields(c, 3, "Store", "PromoInterval", "State");
    assert_int_equal(rt_csv_line(c), 1);
    assert_true(rt_csv_quoted(c, 0));
    expect_fields(c, 3, "1", "Jan,Apr,Jul,Oct", "HB,NI");
    assert_int_equal(rt_csv_line(c), 2);
    expect_fields(c, 3, "2", "", "NA");
    assert_int_equal(rt_csv_line(c), 4);
    assert_false(rt_csv_quoted(c, 1));
    expect_fields(c, 3, "3", "say \"hi\"", "two\nlines");
    assert_int_equal(rt_csv_line(c), 7);
    expect_fields(c, 3, "4", "", "x"); /* no newline at the end */
    assert_int_equal(rt_csv_line(c), 9);
    assert_true(rt_csv_quoted(c, 1));
    char err[RT_ERR_LEN];
    assert_int_equal(rt_csv_next(c, err), 0);
    assert_int_equal(rt_csv_next(c, err), 0);
    rt_csv_close(c);
}

/* A UTF-8 byte order mark (Excel's "CSV UTF-8") is not part of the first
 * name; one anywhere else is data, and a file of nothing else is empty. */
static void test_csv_bom(void **state)
{
    (void)state;
    rt_csv *c = mem("\xEF\xBB\xBF\"Customer ID\",Age\r\nC1,\xEF\xBB\xBF"
                    "7\r\n");
    expect_fields(c, 2, "Customer ID", "Age");
    assert_true(rt_csv_quoted(c, 0));
    expect_fields(c, 2, "C1",
                  "\xEF\xBB\xBF"
                  "7");
    char err[RT_ERR_LEN];
    assert_int_equal(rt_csv_next(c, err), 0);
    rt_csv_close(c);
    c = mem("\xEF\xBB\xBF");
    assert_int_equal(rt_csv_next(c, err), 0);
    rt_csv_close(c);
}

/* The delimiter is the first line's: a comma where it has one outside
 * quotes, else the most of ';', tab and '|'; later lines are read by it. */
static void test_csv_delimiter(void **state)
{
    (void)state;
    rt_csv *c = mem("a;\"b,c\";d\r\n1,5;x;\"y;z\"\r\n");
    expect_fields(c, 3, "a", "b,c", "d");
    assert_int_equal(rt_csv_delim(c), ';');
    expect_fields(c, 3, "1,5", "x", "y;z");
    rt_csv_close(c);
    c = mem("a\tb\tc\n1\t2;3\t,\n");
    expect_fields(c, 3, "a", "b", "c");
    assert_int_equal(rt_csv_delim(c), '\t');
    expect_fields(c, 3, "1", "2;3", ",");
    rt_csv_close(c);
    c = mem("\xEF\xBB\xBF"
            "a;b|c,d\nx;y|z,w\n"); /* a comma: commas, whatever else */
    expect_fields(c, 2, "a;b|c", "d");
    assert_int_equal(rt_csv_delim(c), ',');
    rt_csv_close(c);
    c = mem("only\n1\n");
    expect_fields(c, 1, "only");
    assert_int_equal(rt_csv_delim(c), ',');
    rt_csv_close(c);
    /* a .tsv name: tabs, though the first line has a comma */
    char err[RT_ERR_LEN];
    static const char tsv[] = "Sales, EUR\tStore\n3,5\t1\n";
    assert_int_equal(rt_csv_open_mem(tsv, sizeof tsv - 1, "dir.csv/new.tsv.gz", &c, err), RT_OK);
    expect_fields(c, 2, "Sales, EUR", "Store");
    assert_int_equal(rt_csv_delim(c), '\t');
    expect_fields(c, 2, "3,5", "1");
    rt_csv_close(c);
    assert_int_equal(rt_csv_suffix("a.tsv"), 4);
    assert_int_equal(rt_csv_suffix("a.csv.gz"), 7);
    assert_int_equal(rt_csv_suffix("a.tsv.gz"), 7);
    assert_int_equal(rt_csv_suffix(".csv"), 0);
    assert_int_equal(rt_csv_suffix("a.parquet"), 0);
    assert_int_equal(rt_csv_suffix("a.tsv.bz2"), 0);
}

/* Numbers as a spreadsheet shows them: each spelling's value and what it
 * had, or not a number at all. */
static void test_formatted_numbers(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        char point;
        double x; /* NAN: not a number */
        unsigned what;
    } cases[] = {
        {"$2,317.00", '.', 2317, PREP_NUM_CURRENCY | PREP_NUM_GROUPS},
        {"(1,234.50)", '.', -1234.5, PREP_NUM_GROUPS | PREP_NUM_PARENS},
        {" $ (1,234.00) ", '.', -1234, PREP_NUM_CURRENCY | PREP_NUM_GROUPS | PREP_NUM_PARENS},
        {"$5 ", '.', 5, PREP_NUM_CURRENCY},
        {"-$5", '.', -5, PREP_NUM_CURRENCY},
        {"$-5", '.', -5, PREP_NUM_CURRENCY},
        {"15%", '.', 0.15, PREP_NUM_PERCENT},
        {"45 %", ',', 0.45, PREP_NUM_PERCENT},
        {"12,5 %", ',', 0.125, PREP_NUM_PERCENT | PREP_NUM_COMMA},
        {"1.234,50 \xE2\x82\xAC", ',', 1234.5,
         PREP_NUM_CURRENCY | PREP_NUM_GROUPS | PREP_NUM_COMMA},
        {"1\xC2\xA0"
         "234,5",
         ',', 1234.5, PREP_NUM_GROUPS | PREP_NUM_COMMA},
        {"3000,25", ',', 3000.25, PREP_NUM_COMMA},
        {"1'234.5", '.', 1234.5, PREP_NUM_GROUPS},
        {"\xC2\xA3"
         "12",
         '.', 12, PREP_NUM_CURRENCY},
        {"1,234,567", '.', 1234567, PREP_NUM_GROUPS},
        /* not numbers */
        {"1,23", '.', NAN, 0},       /* a group of two */
        {"1,5", '.', NAN, 0},        /* a decimal comma where the point is '.' */
        {"1234,567.8", '.', NAN, 0}, /* a first group of four */
        {"1.234.567", '.', NAN, 0},  /* points where they are the decimal mark */
        {"5", '.', NAN, 0},          /* plain: prep_decimal's, not this */
        {"$", '.', NAN, 0},
        {"%", '.', NAN, 0},
        {"()", '.', NAN, 0},
        {"$$5", '.', NAN, 0},
        {"5 $ %x", '.', NAN, 0},
        {"12abc", '.', NAN, 0},
        {"1.", ',', NAN, 0},
        {"5,", ',', NAN, 0},
        {"ab 12", '.', NAN, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double x = 0;
        unsigned what = 0;
        const bool ok = prep_formatted_number(cases[i].text, cases[i].point, &x, &what);
        if (ok != !isnan(cases[i].x) ||
            (ok && (fabs(x - cases[i].x) > 1e-12 * fabs(cases[i].x) || what != cases[i].what)))
            fail_msg("'%s' with point '%c': got %d %.17g what %u, wanted %.17g what %u",
                     cases[i].text, cases[i].point, ok, x, what, cases[i].x, cases[i].what);
    }
}

/* prep_decimal's fast path (15 digits or fewer, no exponent) gives strtod's
 * value bit for bit, on random decimals of every length and place of the
 * point, signs, leading zeros; longer ones and exponents go to strtod. */
static void test_decimal_fast(void **state)
{
    (void)state;
    tu_rng r = tu_rng_make(0xdec1);
    char t[48];
    for (int i = 0; i < 200000; i++) {
        int nd = (int)tu_int(&r, 1, 20), point = (int)tu_int(&r, -1, nd), k = 0;
        int sign = (int)tu_int(&r, 0, 2);
        if (sign)
            t[k++] = sign == 1 ? '-' : '+';
        for (int d = 0; d < nd; d++) {
            if (d == point)
                t[k++] = '.';
            t[k++] = (char)('0' + (tu_int(&r, 0, 3) == 0 ? 0 : tu_int(&r, 0, 9)));
        }
        if (point == nd)
            t[k++] = '.';
        if (tu_int(&r, 0, 9) == 0)
            k += snprintf(t + k, sizeof t - (size_t)k, "e%d", (int)tu_int(&r, -30, 30));
        t[k] = '\0';
        double x = 0, want = strtod(t, NULL);
        if (!prep_decimal(t, &x) || memcmp(&x, &want, sizeof x) != 0)
            fail_msg("prep_decimal('%s') = %.17g, strtod %.17g", t, x, want);
    }
    const char *bad[] = {"", "-", "+.", ".", "1.2.3", "1e", "1e+", "0x10", " 1", "1 ", "1e999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        double x;
        if (prep_decimal(bad[i], &x))
            fail_msg("prep_decimal('%s') took it, as %g", bad[i], x);
    }
}

static void expect_error_n(const char *text, size_t len, const char *want)
{
    rt_csv *c = NULL;
    char err[RT_ERR_LEN] = "";
    assert_int_equal(rt_csv_open_mem(text, len, "t.csv", &c, err), RT_OK);
    int r;
    while ((r = rt_csv_next(c, err)) == 1) {
    }
    if (r != -1 || !strstr(err, want))
        fail_msg("for %s: got %d '%s', wanted an error with '%s'", text, r, err, want);
    rt_csv_close(c);
}

static void expect_error(const char *text, const char *want)
{
    expect_error_n(text, strlen(text), want);
}

static void test_csv_errors(void **state)
{
    (void)state;
    expect_error("a,b\n1,\"open\n2,3\n", "t.csv:2: the quoted field opened on line 2 is never closed");
    expect_error("a,b\n1,x\"y\n", "t.csv:2: a quote inside the unquoted field 2");
    expect_error("a,b\n1,\"x\"y\n", "t.csv:2: text after the closing quote of field 2");
    expect_error_n("a,b\n1,2\n3,\0\n", 11, "t.csv:3: a NUL byte");
    size_t big = RT_CSV_MAX_RECORD + 10;
    char *huge = malloc(big + 8);
    memcpy(huge, "a\n", 2);
    memset(huge + 2, 'x', big);
    huge[big + 2] = '\0';
    expect_error(huge, "t.csv:2: a record longer than");
    free(huge);
}

static void test_csv_gzip(void **state)
{
    (void)state;
    char path[] = "/tmp/rt_csv_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    gzFile gz = gzopen(path, "wb");
    for (int i = 0; i < 20000; i++)
        gzprintf(gz, "%d,\"s%d\",%d.5\r\n", i, i, i);
    gzclose(gz);
    rt_csv *c = NULL;
    char err[RT_ERR_LEN];
    assert_int_equal(rt_csv_open(path, &c, err), RT_OK);
    for (int i = 0; i < 20000; i++) {
        char a[16], b[16], d[16];
        snprintf(a, sizeof a, "%d", i);
        snprintf(b, sizeof b, "s%d", i);
        snprintf(d, sizeof d, "%d.5", i);
        expect_fields(c, 3, a, b, d);
        assert_int_equal(rt_csv_line(c), i + 1);
    }
    assert_int_equal(rt_csv_next(c, err), 0);
    rt_csv_close(c);
    unlink(path);
    assert_int_equal(rt_csv_open("/nonexistent/x.csv", &c, err), RT_ERR_NOTFOUND);
    assert_non_null(strstr(err, "/nonexistent/x.csv"));
}

/* ---- shards ----------------------------------------------------------------------------- */

static void make_cols(rt_shard_col *cols, int64_t n, tu_rng *r)
{
    int32_t *a = malloc((size_t)n * 4);
    float *b = malloc((size_t)n * 4);
    uint8_t *c = malloc((size_t)n);
    for (int64_t i = 0; i < n; i++) {
        a[i] = (int32_t)tu_int(r, 0, 1000);
        b[i] = (float)tu_range(r, -5, 5);
        c[i] = (uint8_t)tu_int(r, 0, 1);
    }
    cols[0] = (rt_shard_col){"Store", RT_COL_I32, a};
    cols[1] = (rt_shard_col){"CompetitionDistance", RT_COL_F32, b};
    cols[2] = (rt_shard_col){"Validation", RT_COL_U8, c};
}

static void test_shard_roundtrip(void **state)
{
    (void)state;
    tu_rng r = tu_rng_make(11);
    char path[] = "/tmp/rt_shard_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    int64_t sizes[] = {0, 1, 999, 1000, 1001, 25000};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int64_t n = sizes[k];
        rt_shard_col cols[3];
        make_cols(cols, n, &r);
        char err[RT_ERR_LEN];
        assert_int_equal(rt_shard_write(path, cols, 3, n, 1000, err), RT_OK);
        rt_shard *s = NULL;
        if (rt_shard_read(path, &s, err) != RT_OK)
            fail_msg("%s", err);
        assert_int_equal(s->nrows, n);
        assert_int_equal(s->ncols, 3);
        for (int c = 0; c < 3; c++) {
            const rt_shard_col *sc = rt_shard_find(s, cols[c].name);
            assert_non_null(sc);
            assert_int_equal(sc->type, cols[c].type);
            assert_memory_equal(sc->data, cols[c].data,
                                (size_t)n * rt_col_type_size(cols[c].type) + 0 * (n == 0));
            free(cols[c].data);
        }
        assert_null(rt_shard_find(s, "Nope"));
        rt_shard_free(s);
    }
    unlink(path);
}

/* The bytes of a shard of make_cols' three columns, nrows rows in groups
 * of 1000 (written to a temporary file and read back). */
static char *shard_bytes(uint64_t seed, int64_t nrows, size_t *len)
{
    tu_rng r = tu_rng_make(seed);
    char path[] = "/tmp/rt_shard_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    rt_shard_col cols[3];
    make_cols(cols, nrows, &r);
    char err[RT_ERR_LEN];
    assert_int_equal(rt_shard_write(path, cols, 3, nrows, 1000, err), RT_OK);
    for (int c = 0; c < 3; c++)
        free(cols[c].data);
    char *data = NULL;
    assert_int_equal(rt_read_file(path, 1 << 30, &data, len, err), RT_OK);
    unlink(path);
    return data;
}

/* Every truncation and every flipped byte of a shard is reported, never
 * returned as data. */
static void test_shard_damage(void **state)
{
    (void)state;
    size_t len = 0;
    char *data = shard_bytes(12, 3000, &len);
    char err[RT_ERR_LEN];
    rt_shard *s = NULL;
    for (size_t cut = 0; cut < len; cut += (cut < 64 ? 1 : 97)) {
        assert_int_equal(rt_shard_parse(data, cut, "cut.rts", &s, err), RT_ERR_INVALID);
        assert_null(s);
    }
    assert_int_equal(rt_shard_parse(data, len - 1, "cut.rts", &s, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "truncated"));
    int caught_crc = 0;
    for (size_t i = 0; i < len; i += (i < 200 ? 1 : 13)) {
        data[i] ^= 0x20;
        rt_status st = rt_shard_parse(data, len, "flip.rts", &s, err);
        data[i] ^= 0x20;
        if (st == RT_OK)
            fail_msg("a flipped byte at %zu of %zu went unnoticed", i, len);
        assert_null(s);
        caught_crc += strstr(err, "CRC mismatch") != NULL;
        assert_non_null(strstr(err, "flip.rts"));
    }
    assert_true(caught_crc > 0);
    /* a damaged column chunk names its row group and column */
    size_t mid = len / 2;
    data[mid] ^= 0xff;
    assert_int_equal(rt_shard_parse(data, len, "mid.rts", &s, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "row group"));
    free(data);
}

/* A shard whose sizes claim 2^30 - 1 rows (CRCs made to match, as a crafted
 * file's would be): refused as corrupt before memory for the rows is taken
 * (issue 28.15's fuzzing: the reader allocated 4.9 GB for a 200-byte file). */
static void test_shard_crafted_sizes(void **state)
{
    (void)state;
    size_t len = 0;
    char *data = shard_bytes(13, 10, &len);
    char err[RT_ERR_LEN];
    unsigned char *p = (unsigned char *)data, *t = p + len - 24;
    unsigned char *g = memmem(p + 16, len - 16, "RGRP", 4);
    assert_non_null(g);
    const uint32_t n = (1u << 30) - 1; /* n * 4 bytes still fits a chunk's 32-bit size */
    rt_put_le32(g + 4, n);
    unsigned char *q = g + 8;
    for (int c = 0; c < 3; c++) { /* each chunk claims n rows of its type */
        size_t esz = rt_get_le32(q) / 10;
        rt_put_le32(q, (uint32_t)(n * esz));
        q += 12 + rt_get_le32(q + 4);
    }
    rt_put_le64(t + 8, n);
    rt_put_le32(t + 20, (uint32_t)crc32(crc32(0L, Z_NULL, 0), t + 8, 12));
    unsigned char *x = t - 24; /* the index of the one group agrees */
    assert_memory_equal(x, "RTIDX", 5);
    rt_put_le32(x + 16, n);
    rt_put_le32(x + 20, (uint32_t)crc32(crc32(0L, Z_NULL, 0), x, 20));
    rt_shard *s = NULL;
    assert_int_equal(rt_shard_parse(data, len, "crafted.rts", &s, err), RT_ERR_INVALID);
    assert_null(s);
    assert_non_null(strstr(err, "corrupt sizes"));
    free(data);
}

/* A shard of 20,000 columns (more than the 8,208 a shard held until
 * 2026-12-01) reads back whole and through the streaming reader, whose
 * header takes a second read; 65,553 columns are refused naming the most;
 * a header claiming more columns than its bytes hold is refused as
 * corrupt before a column is parsed. */
static void test_shard_wide(void **state)
{
    (void)state;
    enum { NC = 20000, NR = 3 };
    char path[] = "/tmp/rt_shard_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    rt_shard_col *cols = calloc(NC + RT_SHARD_MAX_COLS, sizeof *cols);
    float *v = calloc((size_t)NC * NR, sizeof *v);
    assert_true(cols && v);
    for (int c = 0; c < NC; c++) {
        snprintf(cols[c].name, sizeof cols[c].name, "feature_number_%d", c);
        cols[c].type = RT_COL_F32;
        cols[c].data = v + (size_t)c * NR;
        for (int r = 0; r < NR; r++)
            v[(size_t)c * NR + r] = (float)(c * 10 + r);
    }
    char err[RT_ERR_LEN];
    assert_int_equal(rt_shard_write(path, cols, NC, NR, 2, err), RT_OK);
    rt_shard *s = NULL;
    assert_int_equal(rt_shard_read(path, &s, err), RT_OK);
    assert_int_equal(s->ncols, NC);
    const rt_shard_col *last = rt_shard_find(s, "feature_number_19999");
    assert_non_null(last);
    assert_true(((const float *)last->data)[2] == 199992.0f);
    rt_shard_free(s);
    rt_shard_reader *rd = NULL;
    if (rt_shard_reader_open(path, &rd, err) != RT_OK)
        fail_msg("%s", err);
    assert_int_equal(rt_shard_reader_ncols(rd), NC);
    assert_string_equal(rt_shard_reader_col(rd, NC - 1)->name, "feature_number_19999");
    assert_int_equal(rt_shard_reader_groups(rd), 2);
    assert_int_equal(rt_shard_reader_group(rd, 1, &s, err), RT_OK);
    assert_true(((const float *)rt_shard_find(s, "feature_number_7")->data)[0] == 72.0f);
    rt_shard_free(s);
    rt_shard_reader_close(rd);
    /* too many */
    for (int c = NC; c < RT_SHARD_MAX_COLS + 1; c++) {
        snprintf(cols[c].name, sizeof cols[c].name, "c%d", c);
        cols[c].type = RT_COL_F32;
        cols[c].data = v;
    }
    assert_int_equal(rt_shard_write(path, cols, RT_SHARD_MAX_COLS + 1, 1, 1, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "65553 columns: a shard holds 1 to 65552"));
    /* a header of 40 bytes that claims 60,000 columns */
    unsigned char head[40] = "RTSHARD";
    size_t len = 0;
    char *good = shard_bytes(14, 2, &len);
    memcpy(head, good, 16);
    free(good);
    rt_put_le32(head + 12, 60000);
    assert_int_equal(rt_shard_parse(head, sizeof head, "claims.rts", &s, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "claims.rts: corrupt header (60000 columns)"));
    free(cols);
    free(v);
    unlink(path);
}

/* rt_name_index: the first item of a name, -1 for none, the same answers
 * with the index as by a search (a zeroed index), over 5,000 names. */
static void test_name_index(void **state)
{
    (void)state;
    enum { N = 5000 };
    rt_shard_col *c = calloc(N, sizeof *c);
    assert_non_null(c);
    for (int i = 0; i < N; i++)
        snprintf(c[i].name, sizeof c[i].name, "col_%d", i % 4999); /* col_0 twice */
    rt_name_index ix, none = {0};
    assert_true(rt_name_index_build(&ix, c, N, sizeof *c));
    for (int i = 0; i < N; i += 7) {
        const int want = i % 4999;
        assert_int_equal(rt_name_find(&ix, c, N, sizeof *c, c[i].name), want);
        assert_int_equal(rt_name_find(&none, c, N, sizeof *c, c[i].name), want);
    }
    assert_int_equal(rt_name_find(&ix, c, N, sizeof *c, "col_5000"), -1);
    assert_int_equal(rt_name_find(&none, c, N, sizeof *c, "col_5000"), -1);
    assert_int_equal(rt_name_find(&ix, c, N, sizeof *c, ""), -1);
    rt_name_index_free(&ix);
    assert_true(rt_name_index_build(&ix, c, 0, sizeof *c)); /* none: nothing found */
    assert_int_equal(rt_name_find(&ix, c, 0, sizeof *c, "col_1"), -1);
    rt_name_index_free(&ix);
    free(c);
}

/* The row group index (version 2): the streaming reader finds every group
 * from it, as the whole-file parser does by walking, and refuses an index
 * or a group that does not agree; a version-1 shard (no index: the fuzz
 * corpus keeps one) is still read both ways. */
static bool write_bytes(const char *path, const void *p, size_t n)
{
    rt_iov iov = {p, n};
    char err[RT_ERR_LEN];
    return rt_write_atomic(path, &iov, 1, err) == RT_OK;
}

static void test_shard_index(void **state)
{
    (void)state;
    tu_rng r = tu_rng_make(14);
    char path[] = "/tmp/rt_shard_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    rt_shard_col cols[3];
    make_cols(cols, 2500, &r);
    char err[RT_ERR_LEN];
    assert_int_equal(rt_shard_write(path, cols, 3, 2500, 1000, err), RT_OK);
    rt_shard_reader *rd = NULL;
    assert_int_equal(rt_shard_reader_open(path, &rd, err), RT_OK);
    assert_int_equal(rt_shard_reader_groups(rd), 3);
    int64_t row = 0;
    for (int g = 0; g < 3; g++) {
        rt_shard *s = NULL;
        assert_int_equal(rt_shard_reader_group(rd, g, &s, err), RT_OK);
        assert_int_equal(s->nrows, g < 2 ? 1000 : 500);
        assert_int_equal(rt_shard_reader_group_rows(rd, g), s->nrows);
        assert_memory_equal(s->cols[1].data, (float *)cols[1].data + row, s->nrows * 4);
        row += s->nrows;
        rt_shard_free(s);
    }
    rt_shard_reader_close(rd);
    for (int c = 0; c < 3; c++)
        free(cols[c].data);
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(rt_read_file(path, 1 << 30, &data, &len, err), RT_OK);
    assert_int_equal(rt_get_le32((unsigned char *)data + 8), 2);
    unsigned char *x = (unsigned char *)data + len - 24 - (8 + 12 * 3 + 4);
    assert_memory_equal(x, "RTIDX", 5);
    /* each byte of the index flipped: refused by both readers, naming it */
    for (size_t i = 0; i < 8 + 12 * 3 + 4; i++) {
        x[i] ^= 0x10;
        assert_true(write_bytes(path, data, len));
        rt_shard *s = NULL;
        assert_int_equal(rt_shard_parse(data, len, "flip.rts", &s, err), RT_ERR_INVALID);
        assert_non_null(strstr(err, "index"));
        assert_int_not_equal(rt_shard_reader_open(path, &rd, err), RT_OK);
        assert_non_null(strstr(err, "index"));
        x[i] ^= 0x10;
    }
    /* a group whose header disagrees with the index (its row count is not
     * under a CRC): found when the group is read */
    unsigned char *g1 = (unsigned char *)data + rt_get_le64(x + 8 + 12);
    assert_memory_equal(g1, "RGRP", 4);
    rt_put_le32(g1 + 4, 999);
    assert_true(write_bytes(path, data, len));
    assert_int_equal(rt_shard_reader_open(path, &rd, err), RT_OK);
    rt_shard *s = NULL;
    assert_int_equal(rt_shard_reader_group(rd, 1, &s, err), RT_ERR_INVALID);
    assert_null(s);
    assert_non_null(strstr(err, "row group 1"));
    rt_shard_reader_close(rd);
    free(data);
    /* version 1 */
    char v1[600];
    snprintf(v1, sizeof v1, "%s/fuzz/corpus/shard/small.rts", RT_SOURCE_DIR);
    assert_int_equal(rt_read_file(v1, 1 << 20, &data, &len, err), RT_OK);
    assert_int_equal(rt_get_le32((unsigned char *)data + 8), 1);
    assert_int_equal(rt_shard_parse(data, len, "small.rts", &s, err), RT_OK);
    assert_int_equal(rt_shard_reader_open(v1, &rd, err), RT_OK);
    assert_int_equal(rt_shard_reader_rows(rd), s->nrows);
    rt_shard *g = NULL;
    assert_int_equal(rt_shard_reader_group(rd, 0, &g, err), RT_OK);
    assert_memory_equal(g->cols[0].data, s->cols[0].data, g->nrows * 4);
    rt_shard_free(g);
    rt_shard_reader_close(rd);
    rt_shard_free(s);
    free(data);
    unlink(path);
}

/* ---- manifest ---------------------------------------------------------------------- */

static void test_manifest(void **state)
{
    (void)state;
    char dir[] = "/tmp/rt_ds_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char err[RT_ERR_LEN];
    rt_dataset *ds = NULL;
    assert_int_equal(rt_dataset_open(dir, &ds, err), RT_ERR_NOTFOUND);
    assert_non_null(strstr(err, "no manifest.json"));
    /* write one by hand, with a partition of two rows */
    char *vocab[3] = {NULL, "a", "b"};
    float dist_q[3] = {0.1f, 0.1f, 4}; /* ascending, with a tie of a float not exact in decimal */
    rt_ds_column cols[4] = {
        {"Type", RT_ROLE_CATEGORICAL, RT_COL_I32, 3, vocab, false, 0, 0, NULL, 0, NULL},
        {"Dist", RT_ROLE_CONTINUOUS, RT_COL_F32, 0, NULL, true, 12.5, 0.25, NULL, 3, dist_q},
        {"Sales", RT_ROLE_LABEL, RT_COL_F32, 0, NULL, false, 0, 0, NULL, 0, NULL},
        {"Validation", RT_ROLE_VALIDATION, RT_COL_U8, 0, NULL, false, 0, 0, NULL, 0, NULL}};
    rt_ds_part part = {"train-00000.rts", 2, 1};
    rt_dataset w = {0};
    snprintf(w.dir, sizeof w.dir, "%s", dir);
    w.ncols = 4;
    w.cols = cols;
    snprintf(w.label, sizeof w.label, "Sales");
    snprintf(w.validation, sizeof w.validation, "Validation");
    snprintf(w.label_transform, sizeof w.label_transform, "log");
    w.max_label = 41551;
    w.nparts = 1;
    w.parts = &part;
    assert_int_equal(rt_dataset_write_manifest(&w, err), RT_OK);
    assert_int_equal(rt_dataset_open(dir, &ds, err), RT_OK);
    assert_int_equal(ds->ncols, 4);
    assert_int_equal(ds->cols[0].vocab_size, 3);
    assert_null(ds->cols[0].vocab[0]);
    assert_string_equal(ds->cols[0].vocab[2], "b");
    assert_true(ds->cols[1].has_stats && ds->cols[1].mean == 12.5 && ds->cols[1].std == 0.25);
    assert_false(ds->cols[0].has_stats);
    assert_int_equal(ds->cols[1].nquantiles, 3); /* the quantiles round-trip */
    assert_true(ds->cols[1].quantiles[1] == 0.1f && ds->cols[1].quantiles[2] == 4);
    assert_int_equal(ds->cols[0].nquantiles, 0);
    assert_true(ds->max_label == 41551);
    assert_int_equal(ds->train_rows, 1);
    assert_int_equal(ds->validation_rows, 1);
    /* the partition: a vocabulary index out of range is caught */
    int32_t t[2] = {1, 3};
    float d[2] = {1, 2}, y[2] = {3, 4};
    uint8_t v[2] = {0, 1};
    rt_shard_col sc[4] = {{"Type", RT_COL_I32, t}, {"Dist", RT_COL_F32, d},
                          {"Sales", RT_COL_F32, y}, {"Validation", RT_COL_U8, v}};
    char path[1200];
    snprintf(path, sizeof path, "%s/train-00000.rts", dir);
    assert_int_equal(rt_shard_write(path, sc, 4, 2, 0, err), RT_OK);
    rt_shard *s = NULL;
    assert_int_equal(rt_dataset_read_part(ds, 0, false, &s, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "outside its vocabulary"));
    t[1] = 2;
    assert_int_equal(rt_shard_write(path, sc, 3, 2, 0, err), RT_OK); /* no Validation */
    assert_int_equal(rt_dataset_read_part(ds, 0, false, &s, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "no column Validation"));
    assert_int_equal(rt_shard_write(path, sc, 4, 2, 0, err), RT_OK);
    assert_int_equal(rt_dataset_read_part(ds, 0, false, &s, err), RT_OK);
    rt_shard_free(s);
    rt_dataset_free(ds);
    /* a damaged manifest is named */
    char mf[1200];
    snprintf(mf, sizeof mf, "%s/manifest.json", dir);
    FILE *f = fopen(mf, "w");
    fputs("{\"format\":\"ringtrain-dataset\",\"version\":1,\"label\":\"Sales\",\"max_label\":-1}", f);
    fclose(f);
    assert_int_equal(rt_dataset_open(dir, &ds, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "max_label"));
    unlink(mf);
    unlink(path);
    rmdir(dir);
}

/* ---- dates ------------------------------------------------------------------------- */

static void test_dates(void **state)
{
    (void)state;
    int32_t d;
    assert_true(rt_parse_date("1970-01-01", &d) && d == 0);
    assert_true(rt_parse_date("2013-01-01", &d) && d == 15706);
    assert_true(rt_parse_date("2015-07-31", &d) && d == 16647);
    assert_true(rt_parse_date("2016-02-29", &d));
    assert_false(rt_parse_date("2015-02-29", &d));
    assert_false(rt_parse_date("2015-13-01", &d));
    assert_false(rt_parse_date("2015-1-01", &d));
    assert_false(rt_parse_date("2015-01-01x", &d));
    char buf[11];
    for (int32_t k = -1000; k < 30000; k += 7) {
        rt_format_date(k, buf);
        assert_true(rt_parse_date(buf, &d) && d == k);
    }
    /* ISO weeks (Spark's weekofyear) across year ends */
    assert_int_equal(rt_iso_week("2013-01-01"), 1);
    assert_int_equal(rt_iso_week("2013-12-30"), 1);  /* Monday of 2014's week 1 */
    assert_int_equal(rt_iso_week("2014-12-29"), 1);
    assert_int_equal(rt_iso_week("2015-12-31"), 53);
    assert_int_equal(rt_iso_week("2016-01-03"), 53);
    assert_int_equal(rt_iso_week("2012-12-30"), 52); /* a Sunday: googletrend's week start */
    assert_int_equal(rt_iso_week("2015-07-31"), 31);
    assert_int_equal(rt_iso_week("nope"), -1);
    /* dates of three numbers as Excel and locales write them */
    int v[3];
    assert_int_equal(rt_date_parts("7/31/2015", v), '/');
    assert_true(v[0] == 7 && v[1] == 31 && v[2] == 2015);
    assert_int_equal(rt_date_parts("31.07.2015 14:05", v), '.');
    assert_int_equal(rt_date_parts("2015/7/31T14:05:00", v), 'y');
    assert_int_equal(rt_date_parts("2015-07-31", v), 'y');
    static const char *const not_dates[] = {"7/31/15",
                                            "7/31",
                                            "7/31/2015x",
                                            "7/31-2015",
                                            "123/1/2015",
                                            "2015/1/123",
                                            "2015/1/2015",
                                            "1/2/3",
                                            "7/31/2015 x",
                                            "/1/2015",
                                            ""};
    for (size_t i = 0; i < sizeof not_dates / sizeof *not_dates; i++)
        if (rt_date_parts(not_dates[i], v))
            fail_msg("'%s' read as a date", not_dates[i]);
    assert_true(rt_parse_date_order("7/31/2015", 'm', &d) && d == 16647);
    assert_true(rt_parse_date_order("31.7.2015", 'd', &d) && d == 16647);
    assert_true(rt_parse_date_order("31-07-2015 23:59", 'd', &d) && d == 16647);
    assert_true(rt_parse_date_order("2015/07/31", 'y', &d) && d == 16647);
    assert_false(rt_parse_date_order("7/31/2015", 'd', &d));  /* no month 31 */
    assert_false(rt_parse_date_order("2/29/2015", 'm', &d));  /* not a leap year */
    assert_false(rt_parse_date_order("2015/07/31", 'm', &d)); /* year first is 'y' only */
    assert_false(rt_parse_date_order("7/31/2015", 'y', &d));
    assert_false(rt_parse_date_order("1/2/0000", 'm', &d));
    char kind;
    assert_int_equal(rt_date_orders("1/2/2015", &kind), RT_DATE_M | RT_DATE_D);
    assert_int_equal(kind, '/');
    assert_int_equal(rt_date_orders("7/31/2015", NULL), RT_DATE_M);
    assert_int_equal(rt_date_orders("31.7.2015", &kind), RT_DATE_D);
    assert_int_equal(kind, '.');
    assert_int_equal(rt_date_orders("2015-07-31T10:00", NULL), RT_DATE_Y);
    assert_int_equal(rt_date_orders("13/13/2015", NULL), 0);
    assert_int_equal(rt_date_orders("x", &kind), 0);
    assert_int_equal(kind, 0);
    for (int32_t k = 0; k < 30000; k += 11) { /* every day's M/D/YYYY and D.M.YYYY */
        rt_format_date(k, buf);
        char us[16], eu[16];
        snprintf(us, sizeof us, "%d/%d/%.4s", atoi(buf + 5), atoi(buf + 8), buf);
        snprintf(eu, sizeof eu, "%d.%d.%.4s", atoi(buf + 8), atoi(buf + 5), buf);
        assert_true(rt_parse_date_order(us, 'm', &d) && d == k);
        assert_true(rt_parse_date_order(eu, 'd', &d) && d == k);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_quirks),
        cmocka_unit_test(test_csv_bom),
        cmocka_unit_test(test_csv_delimiter),
        cmocka_unit_test(test_formatted_numbers),
        cmocka_unit_test(test_decimal_fast),
        cmocka_unit_test(test_csv_errors),
        cmocka_unit_test(test_csv_gzip),
        cmocka_unit_test(test_shard_roundtrip),
        cmocka_unit_test(test_shard_index),
        cmocka_unit_test(test_shard_damage),
        cmocka_unit_test(test_shard_crafted_sizes),
        cmocka_unit_test(test_manifest),
        cmocka_unit_test(test_dates),
        cmocka_unit_test(test_shard_wide),
        cmocka_unit_test(test_name_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
