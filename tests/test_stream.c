/* test_stream.c — [data] stream_rows: a rank's training rows read a window
 * at a time.  One window holding everything gives exactly the batches of
 * the rows in memory; small windows give every training row once per pass,
 * deterministically from (seed, epoch, rank), in bounded memory — under a
 * data limit that rows in memory exceed; a damaged row group is named when
 * it is read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_prep.h"
#include "trainer.h"

static char g_dir[64] = "/tmp/rt_stream_XXXXXX", g_ds[128];

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_ds, sizeof g_ds, "%s/ds", g_dir);
    rt_prep_opts o = {.input_dir = RT_PARQUET_FIXTURES "/rossmann", .sql_path = RT_PREP_SQL,
                      .out_dir = g_ds, .partitions = 2, .rows_per_group = 100, .quiet = true};
    rt_prep_report rep;
    char err[RT_ERR_LEN];
    if (rt_prep_run(&o, &rep, err) != RT_OK) {
        fprintf(stderr, "prep: %s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

typedef struct fixture {
    rt_dataset *ds;
    rt_columns c;
    rt_rows train, val;
} fixture;

static void open_fixture(fixture *f, const char *dir, int rank)
{
    char err[RT_ERR_LEN];
    rt_job_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    if (rt_dataset_open(dir, &f->ds, err) != RT_OK)
        fail_msg("%s", err);
    assert_int_equal(rt_columns_resolve(f->ds, &cfg, &f->c, err), RT_OK);
    if (rt_rows_load(f->ds, &f->c, rank, 2, &f->train, &f->val, err) != RT_OK)
        fail_msg("%s", err);
}

static void close_fixture(fixture *f)
{
    rt_rows_free(&f->train);
    rt_rows_free(&f->val);
    rt_columns_free(&f->c);
    rt_dataset_free(f->ds);
}

typedef struct batch {
    int32_t cat[64 * 32];
    float cont[64 * 32], label[64];
} batch;

static void test_one_window_is_in_memory(void **state)
{
    (void)state;
    for (int rank = 0; rank < 2; rank++) {
        fixture f;
        open_fixture(&f, g_ds, rank);
        char err[RT_ERR_LEN];
        rt_stream *s = NULL;
        rt_rows val;
        int64_t n = 0, nv = 0;
        if (rt_stream_open(f.ds, &f.c, rank, 2, 1 << 30, 7, &s, &val, &n, &nv, err) != RT_OK)
            fail_msg("%s", err);
        assert_int_equal(n, f.train.n);
        assert_int_equal(val.n, f.val.n);
        assert_int_equal(nv, f.val.n);
        assert_memory_equal(val.label, f.val.label, (size_t)val.n * 4);
        assert_memory_equal(val.cat, f.val.cat, (size_t)val.n * (size_t)val.ncat * 4);
        enum { B = 32 };
        int64_t *perm = malloc((size_t)n * sizeof *perm), idx[B];
        static batch a, b;
        for (int64_t epoch = 1; epoch <= 2; epoch++) {
            rt_shuffle(perm, n, 7, epoch, rank);
            assert_int_equal(rt_stream_epoch(s, epoch, err), RT_OK);
            for (int64_t k = 0; k < n / B + 3; k++) { /* past the end: both wrap around */
                for (int i = 0; i < B; i++)
                    idx[i] = perm[(k * B + i) % n];
                rt_rows_gather(&f.train, idx, B, a.cat, a.cont, a.label, NULL);
                assert_int_equal(rt_stream_batch(s, B, b.cat, b.cont, b.label, NULL, err), RT_OK);
                assert_memory_equal(a.label, b.label, sizeof(float) * B);
                assert_memory_equal(a.cat, b.cat, sizeof(int32_t) * B * (size_t)f.c.ncat);
                assert_memory_equal(a.cont, b.cont, sizeof(float) * B * (size_t)f.c.ncont);
            }
        }
        assert_int_equal(rt_stream_peak_rows(s), n);
        free(perm);
        rt_stream_close(s);
        rt_rows_free(&val);
        close_fixture(&f);
    }
}

/* A row as bytes, to compare multisets of rows (the fixture's two
 * dozen categorical columns, 30 continuous ones at most). */
#define ROW_CAT_MAX 64
typedef struct row {
    unsigned char b[4 * (ROW_CAT_MAX + 40)];
} row;

static int cmp_row(const void *x, const void *y)
{
    return memcmp(x, y, sizeof(row));
}

static void take_rows(rt_stream *s, const rt_columns *c, row *out, int64_t n)
{
    char err[RT_ERR_LEN];
    static batch b;
    for (int64_t i = 0; i < n; i++) {
        if (rt_stream_batch(s, 1, b.cat, b.cont, b.label, NULL, err) != RT_OK)
            fail_msg("%s", err);
        memset(&out[i], 0, sizeof out[i]);
        memcpy(out[i].b, b.label, 4);
        memcpy(out[i].b + 4, b.cat, 4 * (size_t)c->ncat);
        memcpy(out[i].b + 4 + 4 * c->ncat, b.cont, 4 * (size_t)(c->ncont < 30 ? c->ncont : 30));
    }
}

static void test_windows_cover_every_row(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, g_ds, 1);
    char err[RT_ERR_LEN];
    rt_stream *s = NULL;
    rt_rows val;
    int64_t n = 0, nv = 0;
    if (rt_stream_open(f.ds, &f.c, 1, 2, 150, 7, &s, &val, &n, &nv, err) != RT_OK)
        fail_msg("%s", err);
    assert_true(n > 500);
    assert_int_equal(val.n, 0); /* streamed too */
    assert_int_equal(nv, f.val.n);
    assert_true(f.c.ncat <= ROW_CAT_MAX);
    row *want = calloc((size_t)n, sizeof *want), *e1 = calloc((size_t)n + 5, sizeof *e1),
        *e1b = calloc((size_t)n, sizeof *e1b), *e2 = calloc((size_t)n, sizeof *e2);
    for (int64_t i = 0; i < n; i++) { /* the rows in memory */
        memcpy(want[i].b, &f.train.label[i], 4);
        memcpy(want[i].b + 4, &f.train.cat[i * f.c.ncat], 4 * (size_t)f.c.ncat);
        memcpy(want[i].b + 4 + 4 * f.c.ncat, &f.train.cont[i * f.c.ncont],
               4 * (size_t)(f.c.ncont < 30 ? f.c.ncont : 30));
    }
    assert_int_equal(rt_stream_epoch(s, 1, err), RT_OK);
    take_rows(s, &f.c, e1, n + 5);
    assert_memory_equal(e1 + n, e1, 5 * sizeof(row)); /* past the end: the epoch's start */
    assert_int_equal(rt_stream_epoch(s, 1, err), RT_OK);
    take_rows(s, &f.c, e1b, n);
    assert_memory_equal(e1, e1b, (size_t)n * sizeof(row)); /* deterministic */
    assert_int_equal(rt_stream_epoch(s, 2, err), RT_OK);
    take_rows(s, &f.c, e2, n);
    assert_memory_not_equal(e1, e2, (size_t)n * sizeof(row)); /* reshuffled */
    rt_stream_set_prefetch(s, false); /* read ahead or not: the same rows */
    assert_int_equal(rt_stream_epoch(s, 1, err), RT_OK);
    take_rows(s, &f.c, e1b, n);
    assert_memory_equal(e1, e1b, (size_t)n * sizeof(row));
    rt_stream_set_prefetch(s, true);
    /* at most the window plus one row group (of at most 100 rows) held */
    assert_true(rt_stream_peak_rows(s) >= 150 && rt_stream_peak_rows(s) < 250);
    qsort(want, (size_t)n, sizeof *want, cmp_row);
    qsort(e1, (size_t)n, sizeof *e1, cmp_row);
    qsort(e2, (size_t)n, sizeof *e2, cmp_row);
    assert_memory_equal(want, e1, (size_t)n * sizeof(row)); /* every row once */
    assert_memory_equal(want, e2, (size_t)n * sizeof(row));
    free(want);
    free(e1);
    free(e1b);
    free(e2);
    rt_stream_close(s);
    rt_rows_free(&val);
    close_fixture(&f);
}

static void test_damaged_group(void **state)
{
    (void)state;
    char copy[160], cmd[400], path[256], err[RT_ERR_LEN];
    snprintf(copy, sizeof copy, "%s/damaged", g_dir);
    snprintf(cmd, sizeof cmd, "rm -rf %s && cp -r %s %s", copy, g_ds, copy);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/train-00000.rts", copy);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    fseek(fp, sb.st_size * 2 / 3, SEEK_SET); /* inside a later row group's data */
    int c = fgetc(fp);
    fseek(fp, sb.st_size * 2 / 3, SEEK_SET);
    fputc(c ^ 0x5a, fp);
    fclose(fp);
    fixture f;
    memset(&f, 0, sizeof f);
    rt_job_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    assert_int_equal(rt_dataset_open(copy, &f.ds, err), RT_OK);
    assert_int_equal(rt_columns_resolve(f.ds, &cfg, &f.c, err), RT_OK);
    rt_stream *s = NULL;
    rt_rows val;
    int64_t n = 0, nv = 0;
    /* opening reads every group once: the damage is found there */
    assert_int_not_equal(rt_stream_open(f.ds, &f.c, 0, 2, 150, 7, &s, &val, &n, &nv, err), RT_OK);
    assert_non_null(strstr(err, "train-00000.rts"));
    assert_non_null(strstr(err, "row group"));
    /* cut short: refused at open, before any row */
    assert_int_equal(truncate(path, sb.st_size - 10), 0);
    assert_int_not_equal(rt_stream_open(f.ds, &f.c, 0, 2, 150, 7, &s, &val, &n, &nv, err), RT_OK);
    assert_non_null(strstr(err, "truncated"));
    rt_columns_free(&f.c);
    rt_dataset_free(f.ds);
}

/* VmData of this process (what RLIMIT_DATA counts), in bytes. */
static long vm_data(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmData: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb * 1024;
}

/* What the capped process may allocate above what it uses once the dataset
 * is open; the rows in memory must need at least twice this. */
#define CAP_HEADROOM (4L << 20)

/* In a process of its own (test_stream --capped DIR, exec'd: no heap
 * inherited from the parent, whose freed memory would count in VmData and
 * could take the rows) under a data limit CAP_HEADROOM above what it uses:
 * rows in memory (rt_rows_load) must fail, streamed ones (a window of 2048
 * rows) must go through an epoch and the validation rows. 0 = as expected. */
static int capped(const char *dir)
{
    fixture f;
    memset(&f, 0, sizeof f);
    char err[RT_ERR_LEN];
    rt_job_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    if (rt_dataset_open(dir, &f.ds, err) != RT_OK ||
        rt_columns_resolve(f.ds, &cfg, &f.c, err) != RT_OK)
        return 10;
    struct rlimit rl = {(rlim_t)(vm_data() + CAP_HEADROOM), RLIM_INFINITY};
    if (setrlimit(RLIMIT_DATA, &rl) != 0)
        return 11;
    if (rt_rows_load(f.ds, &f.c, 0, 1, &f.train, &f.val, err) == RT_OK)
        return 12; /* fitted after all: the test's data are too small */
    fprintf(stderr, "in memory, under the cap: %s\n", err);
    rt_rows_free(&f.train);
    rt_rows_free(&f.val);
    rt_stream *s = NULL;
    rt_rows val;
    int64_t n = 0, nv = 0;
    if (rt_stream_open(f.ds, &f.c, 0, 1, 2048, 7, &s, &val, &n, &nv, err) != RT_OK) {
        fprintf(stderr, "streamed: %s\n", err);
        return 13;
    }
    static batch b;
    if (rt_stream_epoch(s, 1, err) != RT_OK)
        return 14;
    for (int64_t k = 0; k < n; k += 64)
        if (rt_stream_batch(s, 64, b.cat, b.cont, b.label, NULL, err) != RT_OK) {
            fprintf(stderr, "streamed: %s\n", err);
            return 15;
        }
    const long need = (long)n * (f.c.ncat + f.c.ncont + 1) * 4;
    fprintf(stderr, "streamed under the cap (%ld MiB above use): %lld training rows (%ld MiB in "
                    "memory), %lld validation rows, at most %lld rows held\n",
            CAP_HEADROOM >> 20, (long long)n, need >> 20, (long long)nv,
            (long long)rt_stream_peak_rows(s));
    if (need < 2 * CAP_HEADROOM)
        return 16; /* the rows in memory did not need clearly more than the cap */
    rt_stream_close(s);
    rt_columns_free(&f.c);
    rt_dataset_free(f.ds);
    return 0;
}

static void test_memory_cap(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    skip(); /* ASan's shadow memory and allocator make a data limit meaningless */
#endif
    char in[160], ds[160], cmd[600], err[RT_ERR_LEN];
    snprintf(in, sizeof in, "%s/big_in", g_dir);
    snprintf(ds, sizeof ds, "%s/big", g_dir);
    snprintf(cmd, sizeof cmd, "%s --out %s --stores 150 --days 942 --seed 2 --quiet", RT_TEST_GEN, in);
    assert_int_equal(system(cmd), 0);
    rt_prep_opts o = {.input_dir = in, .sql_path = RT_PREP_SQL, .out_dir = ds, .partitions = 1,
                      .rows_per_group = 2048, .quiet = true};
    rt_prep_report rep;
    if (rt_prep_run(&o, &rep, err) != RT_OK)
        fail_msg("%s", err);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/proc/self/exe", "test_stream", "--capped", ds, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the capped child: %s %d", WIFEXITED(status) ? "exit" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--capped") == 0)
        return capped(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_window_is_in_memory),
        cmocka_unit_test(test_windows_cover_every_row),
        cmocka_unit_test(test_damaged_group),
        cmocka_unit_test(test_memory_cap),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
