/* test_parquet.c — the Parquet reader against files written by an
 * independent writer (arrow-rs, through parquet-wasm: tests/parquet/
 * make_fixtures.mjs): every value of every column equals expected.tsv in
 * each combination of encodings, codecs and page versions; Spark's folder
 * layout; a nested column refused by name; damaged files give errors, not
 * crashes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pq_internal.h"
#include "rt_file.h"
#include "rt_parquet.h"
#include "rt_prep.h"

#define FIX RT_PARQUET_FIXTURES

enum { E_PLAIN = 1 << 0, E_PLAIN_DICT = 1 << 2, E_RLE = 1 << 3, E_DELTA_BP = 1 << 5,
       E_DELTA_LBA = 1 << 6, E_DELTA_BA = 1 << 7, E_RLE_DICT = 1 << 8, E_BSS = 1 << 9 };
enum { C_NONE = 1 << 0, C_SNAPPY = 1 << 1, C_GZIP = 1 << 2, C_LZ4 = 1 << 5, C_ZSTD = 1 << 6,
       C_LZ4_RAW = 1 << 7 };

/* expected.tsv: a header, then one row per line, cells as the reader returns them */
typedef struct expected {
    int ncols, nrows;
    char names[32][32];
    char **cell; /* nrows x ncols */
} expected;

static expected *load_expected(const char *path)
{
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    expected *e = calloc(1, sizeof *e);
    e->cell = calloc(2000 * 32, sizeof *e->cell);
    static char line[8192];
    int row = -1;
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = '\0';
        int c = 0;
        for (char *s = line, *tab; s; s = tab ? tab + 1 : NULL, c++) {
            tab = strchr(s, '\t');
            if (tab)
                *tab = '\0';
            if (row < 0)
                snprintf(e->names[c], sizeof e->names[c], "%s", s);
            else
                e->cell[row * 32 + c] = strdup(s);
        }
        if (row < 0)
            e->ncols = c;
        else
            assert_int_equal(c, e->ncols);
        row++;
    }
    fclose(fp);
    e->nrows = row;
    return e;
}

static void free_expected(expected *e)
{
    for (int i = 0; i < 2000 * 32; i++)
        free(e->cell[i]);
    free(e->cell);
    free(e);
}

/* Compares the rows of f with expected rows [first, first + nrows(f)). */
static void check_file(rt_pq_file *f, const expected *e, int first)
{
    char err[RT_ERR_LEN];
    assert_int_equal(rt_pq_ncols(f), e->ncols);
    rt_pq_values v = {0};
    for (int c = 0; c < e->ncols; c++) {
        const rt_pq_column *col = rt_pq_col(f, c);
        assert_string_equal(col->name, e->names[c]);
        int row = first;
        for (int g = 0; g < rt_pq_nrow_groups(f); g++) {
            if (rt_pq_read(f, g, c, &v, err) != RT_OK)
                fail_msg("%s", err);
            assert_int_equal(v.n, rt_pq_group_rows(f, g));
            for (int64_t k = 0; k < v.n; k++, row++) {
                const char *want = e->cell[row * 32 + c];
                if (!strcmp(want, "-")) {
                    if (!v.null[k])
                        fail_msg("%s row %d: want NULL", col->name, row);
                    continue;
                }
                if (v.null[k])
                    fail_msg("%s row %d: NULL, want %s", col->name, row, want);
                switch (want[0]) {
                case 'i':
                    assert_int_equal(col->kind, RT_PQ_INT);
                    if (v.i[k] != strtoll(want + 2, NULL, 10))
                        fail_msg("%s row %d: %lld, want %s", col->name, row, (long long)v.i[k],
                                 want);
                    break;
                case 'r':
                    assert_int_equal(col->kind, RT_PQ_REAL);
                    if (v.r[k] != strtod(want + 2, NULL))
                        fail_msg("%s row %d: %.17g, want %s", col->name, row, v.r[k], want);
                    break;
                default:
                    assert_int_equal(col->kind, RT_PQ_TEXT);
                    if (v.len[k] != strlen(want + 2) ||
                        memcmp(v.bytes + v.off[k], want + 2, v.len[k]) != 0)
                        fail_msg("%s row %d: '%.*s', want '%s'", col->name, row, (int)v.len[k],
                                 v.bytes + v.off[k], want + 2);
                }
            }
        }
        assert_int_equal(row - first, rt_pq_nrows(f));
    }
    rt_pq_values_free(&v);
}

static rt_pq_file *open_fixture(const char *name)
{
    char path[512], err[RT_ERR_LEN];
    snprintf(path, sizeof path, "%s/%s", FIX, name);
    rt_pq_file *f = NULL;
    if (rt_pq_open(path, &f, err) != RT_OK)
        fail_msg("%s", err);
    return f;
}

static void test_fixtures(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        int groups;
        uint32_t encodings, codecs; /* that must have been decoded */
    } fx[] = {
        {"plain_v1_uncompressed.parquet", 1, E_PLAIN, C_NONE},
        {"dict_v1_snappy.parquet", 3, E_PLAIN, C_SNAPPY},              /* + a dictionary one */
        {"dict_v2_gzip.parquet", 1, E_PLAIN, C_GZIP},                  /* + a dictionary one */
        {"delta_v2_zstd.parquet", 1, E_DELTA_BP | E_DELTA_LBA | E_BSS | E_RLE, C_ZSTD},
        {"deltaba_v1_lz4raw.parquet", 4, E_DELTA_BP | E_DELTA_BA, C_LZ4_RAW},
        {"plain_v2_lz4hadoop.parquet", 1, E_PLAIN, C_LZ4}, /* codec LZ4: Hadoop's framing */
    };
    expected *e = load_expected(FIX "/expected.tsv");
    assert_int_equal(e->nrows, 1000);
    for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++) {
        rt_pq_file *f = open_fixture(fx[i].file);
        assert_int_equal(rt_pq_nrows(f), 1000);
        assert_int_equal(rt_pq_nrow_groups(f), fx[i].groups);
        assert_non_null(strstr(rt_pq_created_by(f), "parquet-wasm"));
        check_file(f, e, 0);
        uint32_t enc = rt_pq_encodings_seen(f);
        if ((enc & fx[i].encodings) != fx[i].encodings || (rt_pq_codecs_seen(f) != fx[i].codecs))
            fail_msg("%s: encodings 0x%x codecs 0x%x", fx[i].file, enc, rt_pq_codecs_seen(f));
        if (strstr(fx[i].file, "dict") && !(enc & (E_PLAIN_DICT | E_RLE_DICT)))
            fail_msg("%s: no dictionary-encoded page (0x%x)", fx[i].file, enc);
        /* the types as the reader names them */
        static const char *const types[] = {"INT64", "BOOLEAN", "INT32", "INT32", "UINT32",
                                            "INT64", "FLOAT", "DOUBLE", "STRING", "DATE",
                                            "TIMESTAMP(MILLIS)", "TIMESTAMP(MICROS)",
                                            "DECIMAL(7,2)", "DECIMAL(15,3)", "DECIMAL(25,4)"};
        for (int c = 0; c < rt_pq_ncols(f); c++)
            assert_string_equal(rt_pq_col(f, c)->type, types[c]);
        for (int c = 0; c < rt_pq_ncols(f); c++) /* id, i8, f32, d are REQUIRED */
            assert_int_equal(rt_pq_col(f, c)->nullable, !(c == 0 || c == 2 || c == 6 || c == 9));
        rt_pq_close(f);
    }
    free_expected(e);
}

static void test_spark_folder(void **state)
{
    (void)state;
    char **files, err[RT_ERR_LEN];
    int n;
    if (rt_pq_files(FIX "/spark_out", &files, &n, err) != RT_OK)
        fail_msg("%s", err);
    assert_int_equal(n, 3); /* not _SUCCESS, not the hidden .crc files */
    expected *e = load_expected(FIX "/expected.tsv");
    int first = 0;
    for (int i = 0; i < n; i++) {
        assert_non_null(strstr(files[i], i == 0 ? "part-00000" : i == 1 ? "part-00001" : "part-00002"));
        rt_pq_file *f = NULL;
        if (rt_pq_open(files[i], &f, err) != RT_OK)
            fail_msg("%s", err);
        check_file(f, e, first);
        first += (int)rt_pq_nrows(f);
        assert_true(rt_pq_codecs_seen(f) == C_SNAPPY);
        rt_pq_close(f);
        free(files[i]);
    }
    free(files);
    assert_int_equal(first, 1000);
    free_expected(e);

    /* a plain file is a list of itself; a folder still being written is refused */
    assert_int_equal(rt_pq_files(FIX "/dict_v1_snappy.parquet", &files, &n, err), RT_OK);
    assert_int_equal(n, 1);
    free(files[0]);
    free(files);
    char dir[] = "/tmp/rt_pq_XXXXXX", sub[64];
    assert_non_null(mkdtemp(dir));
    assert_int_not_equal(rt_pq_files(dir, &files, &n, err), RT_OK);
    assert_non_null(strstr(err, "no .parquet files"));
    snprintf(sub, sizeof sub, "%s/_temporary", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    assert_int_not_equal(rt_pq_files(dir, &files, &n, err), RT_OK);
    assert_non_null(strstr(err, "not finished"));
    rmdir(sub);
    rmdir(dir);
}

static void test_nested_refused(void **state)
{
    (void)state;
    char err[RT_ERR_LEN];
    rt_pq_file *f = NULL;
    assert_int_equal(rt_pq_open(FIX "/nested_list.parquet", &f, err), RT_ERR_INVALID);
    assert_null(f);
    assert_non_null(strstr(err, "column 'tags' is a LIST"));
    assert_non_null(strstr(err, "flat columns only"));
}

/* TIMESTAMP values at the ends of int64 in every unit: rendered or refused
 * by name, never an overflow (the fuzzer's INT64_MIN milliseconds once
 * overflowed whole seconds times 1000; the sanitizer build checks). */
static void test_timestamp_extremes(void **state)
{
    (void)state;
    const int64_t units[3] = {1000, 1000000, 1000000000};
    const int64_t vals[6] = {INT64_MIN, INT64_MIN + 1, -1, 0, INT64_MAX - 1, INT64_MAX};
    uint64_t off[6];
    uint32_t len[6];
    rt_pq_values v = {.n = 6, .off = off, .len = len};
    for (int u = 0; u < 3; u++) {
        pq_col c = {.conv = CV_TIMESTAMP, .per_second = units[u]};
        for (int i = 0; i < 6; i++) {
            phys x = {.i = vals[i]};
            const char *why = pq_emit(&c, &v, i, &x);
            if (vals[i] == -1 || vals[i] == 0) {
                assert_null(why);
                /* 0: no fraction; -1: one unit before, all nines (3, 6 or 9) */
                const int digits = 3 * (u + 1);
                assert_memory_equal(v.bytes + off[i],
                                    vals[i] == 0 ? "1970-01-01 00:00:00" : "1969-12-31 23:59:59",
                                    19);
                assert_int_equal(len[i], vals[i] == 0 ? 19 : 20 + digits);
                for (int d = 0; vals[i] == -1 && d < digits; d++)
                    assert_int_equal(v.bytes[off[i] + 20 + (uint32_t)d], '9');
            } else if (units[u] == 1000000000) { /* years 1677 to 2262: inside */
                assert_null(why);
            } else {
                assert_string_equal(why, "a TIMESTAMP outside the years 1..9999");
            }
        }
    }
    free(v.bytes);
}

/* Spark's legacy INT96 timestamps (see make_fixtures.mjs for how the file
 * was made): Julian day and nanoseconds into text, with nulls. */
static void test_int96(void **state)
{
    (void)state;
    expected *e = load_expected(FIX "/expected_int96.tsv");
    rt_pq_file *f = open_fixture("int96.parquet");
    assert_string_equal(rt_pq_col(f, 1)->type, "INT96");
    assert_int_equal(rt_pq_col(f, 1)->kind, RT_PQ_TEXT);
    check_file(f, e, 0);
    rt_pq_close(f);
    free_expected(e);
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    *len = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = malloc(*len);
    assert_int_equal(fread(b, 1, *len, fp), *len);
    fclose(fp);
    return b;
}

/* Reads everything; returns whether it all decoded. */
static bool read_all(const uint8_t *b, size_t len, char *err)
{
    rt_pq_file *f = NULL;
    if (rt_pq_open_mem(b, len, "damaged.parquet", &f, err) != RT_OK)
        return false;
    rt_pq_values v = {0};
    bool ok = true;
    for (int g = 0; g < rt_pq_nrow_groups(f) && ok; g++)
        for (int c = 0; c < rt_pq_ncols(f) && ok; c++)
            ok = rt_pq_read(f, g, c, &v, err) == RT_OK;
    rt_pq_values_free(&v);
    rt_pq_close(f);
    return ok;
}

static void test_damaged(void **state)
{
    (void)state;
    char err[RT_ERR_LEN];
    static const char *const files[] = {"dict_v2_gzip.parquet", "delta_v2_zstd.parquet",
                                        "deltaba_v1_lz4raw.parquet", "dict_v1_snappy.parquet",
                                        "plain_v1_uncompressed.parquet"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", FIX, files[i]);
        size_t len;
        uint8_t *b = slurp(path, &len);
        assert_true(read_all(b, len, err));
        /* cut short anywhere: an error naming the file */
        for (size_t cut = 0; cut < len; cut += len / 97 + 1) {
            err[0] = '\0';
            assert_false(read_all(b, cut, err));
            assert_non_null(strstr(err, "damaged.parquet"));
        }
        /* bytes changed anywhere: never a crash (the sanitizer run checks the rest) */
        uint8_t *c = malloc(len);
        unsigned seed = 7 + (unsigned)i;
        for (int round = 0; round < 300; round++) {
            memcpy(c, b, len);
            for (int k = 0; k < 1 + round % 4; k++) {
                seed = seed * 1103515245u + 12345u;
                size_t at = (size_t)(seed >> 8) % len;
                seed = seed * 1103515245u + 12345u;
                c[at] = (uint8_t)(seed >> 16);
            }
            if (!read_all(c, len, err))
                assert_true(strlen(err) > 10);
        }
        free(c);
        free(b);
    }
    /* not Parquet at all */
    assert_false(read_all((const uint8_t *)"Store,Sales\n1,2\n", 16, err));
    assert_non_null(strstr(err, "not a Parquet file"));
    assert_non_null(strstr(err, ".tsv"));
    /* a workbook (xlsx, ods: a ZIP; xls: an OLE file) says what to do */
    static const uint8_t zip[] = "PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00",
                         ole[] = "\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1\x00\x00\x00\x00\x00";
    assert_false(read_all(zip, sizeof zip - 1, err));
    assert_non_null(strstr(err, "spreadsheet workbook"));
    assert_non_null(strstr(err, "CSV UTF-8"));
    assert_false(read_all(ole, sizeof ole - 1, err));
    assert_non_null(strstr(err, "spreadsheet workbook"));
}

/* ---- prep: Parquet files and folders as SQL tables ----------------------------------- */

static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static char *slurp_text(const char *path)
{
    size_t len;
    char *t = (char *)slurp(path, &len);
    t = realloc(t, len + 1);
    t[len] = '\0';
    return t;
}

/* Typed values arrive typed; _line is the row number; bad rows name it. */
static void test_prep_typed(void **state)
{
    (void)state;
    char dir[] = "/tmp/rt_pq_prep_XXXXXX", in[128], path[256], out[128], err[RT_ERR_LEN];
    assert_non_null(mkdtemp(dir));
    snprintf(in, sizeof in, "%s/in", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    assert_int_equal(mkdir(in, 0755), 0);
    snprintf(path, sizeof path, "%s/types.parquet", in);
    assert_int_equal(symlink(FIX "/plain_v1_uncompressed.parquet", path), 0);
    snprintf(path, sizeof path, "%s/feats.sql", dir);
    write_text(path,
        "SELECT rt_check((SELECT typeof(i32) FROM types WHERE i32 IS NOT NULL LIMIT 1) = 'integer', 'i32');\n"
        "SELECT rt_check((SELECT typeof(b) FROM types WHERE b IS NOT NULL LIMIT 1) = 'integer', 'b');\n"
        "SELECT rt_check((SELECT typeof(f64) FROM types WHERE f64 IS NOT NULL LIMIT 1) = 'real', 'f64');\n"
        "SELECT rt_check((SELECT typeof(dec25) FROM types WHERE dec25 IS NOT NULL LIMIT 1) = 'real', 'dec25');\n"
        "SELECT rt_check((SELECT typeof(s) FROM types WHERE s IS NOT NULL LIMIT 1) = 'text', 's');\n"
        "SELECT rt_check((SELECT d || '|' || ts_ms FROM types WHERE _line = 1) = "
        "'1987-10-30|2006-04-19 09:43:53.588', 'first row');\n"
        "SELECT rt_check((SELECT count(*) || '/' || max(_line) || '/' || count(i32) FROM types) = "
        "'1000/1000/909', 'counts');\n"
        "CREATE TABLE feats AS SELECT i8 % 5 AS cat, f32 AS x, abs(i8) + 1.0 AS y, "
        "id % 10 = 0 AS val FROM types;\n"
        "CREATE TABLE meta(key, value);\n"
        "INSERT INTO meta VALUES ('train_table', 'feats'), ('categorical', 'cat'), "
        "('continuous', 'x'), ('label', 'y'), ('label_transform', 'none'), ('max_label', '200'), "
        "('validation', 'val');\n");
    rt_prep_opts o = {.input_dir = in, .sql_path = path, .out_dir = out, .partitions = 1,
                      .quiet = true};
    rt_prep_report rep;
    if (rt_prep_run(&o, &rep, err) != RT_OK)
        fail_msg("%s", err);
    assert_int_equal(rep.rows_in[0], 1000);
    assert_int_equal(rep.train_rows + rep.validation_rows, 1000);
    assert_int_equal(rep.validation_rows, 100);

    /* a Spark folder still being written (_temporary) is refused, not passed over */
    char sub[300];
    snprintf(sub, sizeof sub, "%s/late", in);
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(sub, sizeof sub, "%s/late/_temporary", in);
    assert_int_equal(mkdir(sub, 0755), 0);
    char out3[160];
    snprintf(out3, sizeof out3, "%s/out3", dir);
    o.out_dir = out3;
    assert_int_not_equal(rt_prep_run(&o, &rep, err), RT_OK);
    assert_non_null(strstr(err, "late holds _temporary"));
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/late", in);
    rmdir(sub);
    o.out_dir = out;

    /* a bad row is named by its row number in the table */
    write_text(path, "INSERT INTO bad_rows SELECT 'types', _line, 'i32 is NULL' FROM types "
                     "WHERE i32 IS NULL;\nSELECT rt_bad_rows();\n");
    char out2[160];
    snprintf(out2, sizeof out2, "%s/out2", dir);
    o.out_dir = out2;
    assert_int_not_equal(rt_prep_run(&o, &rep, err), RT_OK);
    assert_non_null(strstr(err, "types.parquet: row 7: i32 is NULL"));
    assert_non_null(strstr(err, "(91 bad rows in all"));
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The Rossmann dataset prepared from Parquet (Spark's layout for train, as
 * Spark writes CSVs read without inferSchema) is the one prepared from the
 * CSVs, byte for byte: shards and manifest (its source block aside). */
static void test_rossmann_identity(void **state)
{
    (void)state;
    char dir[] = "/tmp/rt_pq_ross_XXXXXX", csv[128], o1[128], o2[128], cmd[1024],
         err[RT_ERR_LEN];
    assert_non_null(mkdtemp(dir));
    snprintf(csv, sizeof csv, "%s/csv", dir);
    snprintf(o1, sizeof o1, "%s/from_csv", dir);
    snprintf(o2, sizeof o2, "%s/from_parquet", dir);
    assert_int_equal(mkdir(csv, 0755), 0);
    snprintf(cmd, sizeof cmd, "%s --out %s --stores 4 --days 400 --seed 5 --quiet", RT_TEST_GEN,
             csv);
    assert_int_equal(system(cmd), 0);
    rt_prep_opts o = {.input_dir = csv, .sql_path = RT_PREP_SQL, .out_dir = o1, .partitions = 2,
                      .quiet = true};
    rt_prep_report r1, r2;
    if (rt_prep_run(&o, &r1, err) != RT_OK)
        fail_msg("from CSV: %s", err);
    o.input_dir = FIX "/rossmann";
    o.out_dir = o2;
    if (rt_prep_run(&o, &r2, err) != RT_OK)
        fail_msg("from Parquet: %s", err);
    assert_int_equal(r1.ntables, r2.ntables);
    for (int i = 0; i < r1.ntables; i++)
        if (r1.rows_in[i] != r2.rows_in[i])
            fail_msg("table %s: %lld rows from CSV, %lld from Parquet (rossmann-gen changed? "
                     "regenerate tests/parquet/rossmann: see csv_to_parquet.mjs)",
                     r1.table[i], (long long)r1.rows_in[i], (long long)r2.rows_in[i]);
    assert_true(r1.train_rows > 1000 && r1.test_rows == 96);
    static const char *const files[] = {"train-00000.rts", "train-00001.rts", "test-00000.rts",
                                        "manifest.json"};
    for (int i = 0; i < 4; i++) {
        char a[256], b[256];
        snprintf(a, sizeof a, "%s/%s", o1, files[i]);
        snprintf(b, sizeof b, "%s/%s", o2, files[i]);
        char *x = slurp_text(a), *y = slurp_text(b);
        if (i == 3) { /* the source block names the input folder and the time */
            char *sx = strstr(x, "\"source\":"), *sy = strstr(y, "\"source\":");
            assert_non_null(sx);
            assert_non_null(sy);
            assert_string_equal(strstr(sx, "\"tables\":"), strstr(sy, "\"tables\":"));
            *sx = *sy = '\0';
        }
        if (strcmp(x, y) != 0)
            fail_msg("%s differs between the CSV and the Parquet inputs", files[i]);
        free(x);
        free(y);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* --from-parquet (Horovod's fit_on_parquet): featurised Parquet and roles
 * give the dataset its own script (out/prep.sql) gives through the SQL
 * path, byte for byte. */
static void test_from_parquet(void **state)
{
    (void)state;
    char dir[] = "/tmp/rt_pq_feat_XXXXXX", in[128], path[256], o1[128], o2[128], o3[128],
         err[RT_ERR_LEN];
    assert_non_null(mkdtemp(dir));
    snprintf(in, sizeof in, "%s/in", dir);
    snprintf(o1, sizeof o1, "%s/featurised", dir);
    snprintf(o2, sizeof o2, "%s/scripted", dir);
    snprintf(o3, sizeof o3, "%s/bad", dir);
    rt_prep_opts o = {.train_parquet = FIX "/spark_out",
                      .test_parquet = FIX "/dict_v1_snappy.parquet",
                      .out_dir = o1, .partitions = 2, .quiet = true};
    o.roles.label = "u32";
    o.roles.categorical = "i8,s";
    o.roles.continuous = "f32,f64,dec7";
    o.roles.id = "id";
    o.roles.date = "d";
    rt_prep_report rep;
    if (rt_prep_run(&o, &rep, err) != RT_OK)
        fail_msg("%s", err);
    assert_int_equal(rep.train_rows, 1000);
    assert_int_equal(rep.test_rows, 1000);
    assert_false(rep.has_validation);

    /* the same through an input folder and the script --from wrote (its
     * tables are named after the files) */
    assert_int_equal(mkdir(in, 0755), 0);
    snprintf(path, sizeof path, "%s/spark_out", in);
    assert_int_equal(symlink(FIX "/spark_out", path), 0);
    snprintf(path, sizeof path, "%s/dict_v1_snappy.parquet", in);
    assert_int_equal(symlink(FIX "/dict_v1_snappy.parquet", path), 0);
    snprintf(path, sizeof path, "%s/prep.sql", o1);
    rt_prep_opts s = {.input_dir = in, .sql_path = path, .out_dir = o2, .partitions = 2,
                      .quiet = true};
    if (rt_prep_run(&s, &rep, err) != RT_OK)
        fail_msg("%s", err);
    static const char *const files[] = {"train-00000.rts", "train-00001.rts", "test-00000.rts"};
    for (int i = 0; i < 3; i++) {
        char a[256], b[256];
        snprintf(a, sizeof a, "%s/%s", o1, files[i]);
        snprintf(b, sizeof b, "%s/%s", o2, files[i]);
        size_t la, lb;
        uint8_t *x = slurp(a, &la), *y = slurp(b, &lb);
        if (la != lb || memcmp(x, y, la) != 0)
            fail_msg("%s differs between --from-parquet and its prep.sql", files[i]);
        free(x);
        free(y);
    }

    /* mistakes are named */
    o.out_dir = o3;
    o.roles.label = "u3";
    assert_int_not_equal(rt_prep_run(&o, &rep, err), RT_OK);
    assert_non_null(strstr(err, "--label u3: the table has no such column"));
    assert_non_null(strstr(err, "did you mean 'u32'?"));
    o.roles.label = NULL;
    assert_int_not_equal(rt_prep_run(&o, &rep, err), RT_OK);
    assert_non_null(strstr(err, "--from needs --label"));
    o.roles.label = "u32";
    o.roles.validation = "b"; /* nullable: a NULL flag is no flag */
    assert_int_not_equal(rt_prep_run(&o, &rep, err), RT_OK);
    assert_non_null(strstr(err, "the validation flag b is 'NULL'"));
    o.roles.validation = NULL;
    o.test_parquet = FIX "/nested_list.parquet";
    assert_int_not_equal(rt_prep_run(&o, &rep, err), RT_OK);
    assert_non_null(strstr(err, "column 'tags' is a LIST"));
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures),           cmocka_unit_test(test_int96),
        cmocka_unit_test(test_timestamp_extremes), cmocka_unit_test(test_spark_folder),
        cmocka_unit_test(test_nested_refused),     cmocka_unit_test(test_damaged),
        cmocka_unit_test(test_prep_typed),         cmocka_unit_test(test_rossmann_identity),
        cmocka_unit_test(test_from_parquet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
