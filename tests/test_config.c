/* test_config.c — the table-driven INI loader: every error class with its
 * exact message (file:line, key, hint), defaults, path resolution, overrides
 * and the --print-config round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "rt_config.h"
#include "rt_schemas.h"
#include "rt_sweep.h"

typedef struct tcfg {
    int64_t epochs, batch_size;
    double lr;
    bool shuffle;
    uint64_t bucket;
    int64_t timeout_us;
    int transport;
    char *dataset;
    char *label;
    char *cache;
    rt_strlist columns;
} tcfg;

static const rt_cfg_key keys[] = {
    RT_CFG_I("train", "epochs", "10", 1, 1000, tcfg, epochs, "passes over the data"),
    RT_CFG_I("train", "batch_size", "100", 1, 1 << 20, tcfg, batch_size, "rows per step per rank"),
    RT_CFG_F("train", "lr", "1e-4", 0, 1, tcfg, lr, "learning rate"),
    RT_CFG_B("train", "shuffle", "true", tcfg, shuffle, "shuffle each epoch"),
    RT_CFG_Z("train", "bucket", "25M", 1, 1 << 30, tcfg, bucket, "allreduce bucket size"),
    RT_CFG_D("train", "timeout", "60s", 1000, 3600e6, tcfg, timeout_us, "collective timeout"),
    RT_CFG_E("comm", "transport", "tcp", "tcp|loopback|rdma", tcfg, transport, "data plane"),
    RT_CFG_KEY("data", "dataset", RT_CFG_PATH, NULL, 0, 0, NULL, tcfg, dataset,
               "prepared dataset folder", RT_CFG_REQUIRED),
    RT_CFG_S("data", "label", "Sales", tcfg, label, "label column"),
    RT_CFG_P("data", "cache", "cache", tcfg, cache, "cache folder"),
    RT_CFG_L("data", "columns", "Store, DayOfWeek", tcfg, columns, "categorical columns"),
};
static const rt_cfg_schema schema = {"test file", keys, RT_ARRAY_LEN(keys), sizeof(tcfg), NULL};

/* Load text as "t.ini" from folder /jobs; returns the status. */
static rt_status load(const char *text, tcfg *c, rt_cfg_errors *e)
{
    memset(e, 0, sizeof *e);
    return rt_cfg_load_string(&schema, text, strlen(text), "t.ini", "/jobs", c, e);
}

/* The text must fail with exactly one message equal to want. */
static void one_error(const char *text, const char *want)
{
    tcfg c;
    rt_cfg_errors e;
    rt_status st = load(text, &c, &e);
    if (st != RT_ERR_INVALID || e.n != 1 || strcmp(e.msg[0], want) != 0) {
        char all[4096];
        rt_cfg_errors_join(&e, all, sizeof all);
        fail_msg("status %d, %zu errors:\n%s\nwanted exactly:\n%s", st, e.n, all, want);
    }
    rt_cfg_errors_free(&e);
    rt_cfg_free(&schema, &c);
}

#define REQ "[data]\ndataset = ds\n"

static void test_valid_and_defaults(void **state)
{
    (void)state;
    tcfg c;
    rt_cfg_errors e;
    const char *text = "; comment\n# another\n[train]\nepochs = 3\nlr=0.001 ; inline comment\n"
                       "bucket = 64M\ntimeout = 500ms\nshuffle = no\n\n[comm]\ntransport = rdma\n"
                       "[data]\ndataset = prepared/rossmann\ncolumns = Store,  Year ,Month\n";
    assert_int_equal(load(text, &c, &e), RT_OK);
    assert_int_equal(e.n, 0);
    assert_int_equal(c.epochs, 3);
    assert_int_equal(c.batch_size, 100); /* default */
    assert_true(c.lr == 0.001);
    assert_false(c.shuffle);
    assert_true(c.bucket == 64ull << 20);
    assert_int_equal(c.timeout_us, 500000);
    assert_int_equal(c.transport, 2);
    assert_string_equal(c.dataset, "/jobs/prepared/rossmann");
    assert_string_equal(c.cache, "/jobs/cache"); /* a default path is relative to the file too */
    assert_string_equal(c.label, "Sales");
    assert_int_equal(c.columns.n, 3);
    assert_string_equal(c.columns.items[1], "Year");
    rt_cfg_free(&schema, &c);

    /* absolute paths stay as written; CRLF line endings are fine */
    assert_int_equal(load("[data]\r\ndataset = /abs/ds\r\n[train]\r\nepochs = 7\r\n", &c, &e), RT_OK);
    assert_string_equal(c.dataset, "/abs/ds");
    assert_int_equal(c.epochs, 7);
    rt_cfg_free(&schema, &c);
}

static void test_unknown_keys_and_sections(void **state)
{
    (void)state;
    one_error(REQ "[train]\nbatch_sise = 10\n",
              "t.ini:4: unknown key 'batch_sise' in section [train]; did you mean 'batch_size'?");
    one_error(REQ "[train]\nepcohs = 10\n",
              "t.ini:4: unknown key 'epcohs' in section [train]; did you mean 'epochs'?");
    one_error(REQ "[data]\nepochs = 10\n",
              "t.ini:4: unknown key 'epochs' in section [data]; did you mean 'epochs' in section "
              "[train]?");
    one_error(REQ "[train]\nfrobnicate = 1\n",
              "t.ini:4: unknown key 'frobnicate' in section [train]");
    /* one message per unknown section, none for the keys under it */
    one_error(REQ "[trian]\nepochs = 10\nlr = 1\n",
              "t.ini:3: unknown section [trian]; did you mean [train]?");
    one_error(REQ "[zzzzzzzz]\n", "t.ini:3: unknown section [zzzzzzzz]");
    one_error("epochs = 1\n" REQ, "t.ini:1: key 'epochs' appears before any [section]");
}

static void test_bad_values(void **state)
{
    (void)state;
    one_error(REQ "[train]\nepochs = ten\n", "t.ini:4: [train] epochs: expected an integer, got 'ten'");
    one_error(REQ "[train]\nlr = fast\n", "t.ini:4: [train] lr: expected a number, got 'fast'");
    one_error(REQ "[train]\nshuffle = maybe\n",
              "t.ini:4: [train] shuffle: expected true or false (yes/no, on/off, 1/0), got 'maybe'");
    one_error(REQ "[comm]\ntransport = udp\n",
              "t.ini:4: [comm] transport: expected one of tcp, loopback, rdma, got 'udp'");
    one_error(REQ "[train]\nbucket = 64Q\n",
              "t.ini:4: [train] bucket: expected a size like 64M or 1G (unknown unit 'Q' (use B, "
              "K, M, G or T)), got '64Q'");
    one_error(REQ "[train]\nbucket = -1M\n",
              "t.ini:4: [train] bucket: expected a size like 64M or 1G (negative size), got '-1M'");
    one_error(REQ "[train]\ntimeout = 5 fortnights\n",
              "t.ini:4: [train] timeout: expected a duration like 500ms, 30s or 5m (unknown unit "
              "'fortnights' (use us, ms, s, m, h, d)), got '5 fortnights'");
    one_error(REQ "[train]\ntimeout =\n",
              "t.ini:4: [train] timeout: expected a duration like 500ms, 30s or 5m (empty value), "
              "got ''");
    one_error(REQ "[data]\ncolumns = a,,b\n",
              "t.ini:4: [data] columns: expected a comma-separated list (item 2 is empty), got "
              "'a,,b'");
}

static void test_out_of_range(void **state)
{
    (void)state;
    one_error(REQ "[train]\nepochs = 0\n", "t.ini:4: [train] epochs: 0 is out of range [1, 1000]");
    one_error(REQ "[train]\nepochs = 99999999999\n",
              "t.ini:4: [train] epochs: 99999999999 is out of range [1, 1000]");
    one_error(REQ "[train]\nlr = 2.5\n", "t.ini:4: [train] lr: 2.5 is out of range [0, 1]");
    one_error(REQ "[train]\nbucket = 2G\n", "t.ini:4: [train] bucket: 2G is out of range [1, 1G]");
    one_error(REQ "[train]\ntimeout = 2h\n",
              "t.ini:4: [train] timeout: 2h is out of range [1ms, 1h]");
    one_error(REQ "[train]\ntimeout = 999us\n",
              "t.ini:4: [train] timeout: 999us is out of range [1ms, 1h]");
}

static void test_missing_duplicate_syntax(void **state)
{
    (void)state;
    one_error("[train]\nepochs = 2\n",
              "t.ini: [data] dataset: required key is missing (prepared dataset folder)");
    one_error(REQ "[train]\nepochs = 2\nlr = 0.1\nepochs = 3\n",
              "t.ini:6: [train] epochs: set twice (first at line 4)");
    one_error(REQ "[train]\nthis line has no equals sign\n",
              "t.ini:4: syntax error: expected '[section]' or 'key = value', got 'this line has "
              "no equals sign'");
    one_error(REQ "[train\nepochs = 2\n", "t.ini:3: syntax error: section header without ']'");
}

static void test_many_errors_in_order(void **state)
{
    (void)state;
    tcfg c;
    rt_cfg_errors e;
    const char *text = "[train]\nepochs = x\nlr = 7\nbogus\n[comm]\ntransport = ?\n";
    assert_int_equal(load(text, &c, &e), RT_ERR_INVALID);
    assert_int_equal(e.n, 5);
    assert_string_equal(e.msg[0], "t.ini:2: [train] epochs: expected an integer, got 'x'");
    assert_string_equal(e.msg[1], "t.ini:3: [train] lr: 7 is out of range [0, 1]");
    assert_true(strncmp(e.msg[2], "t.ini:4: syntax error", 21) == 0);
    assert_string_equal(e.msg[3],
                        "t.ini:6: [comm] transport: expected one of tcp, loopback, rdma, got '?'");
    assert_string_equal(e.msg[4],
                        "t.ini: [data] dataset: required key is missing (prepared dataset folder)");
    rt_cfg_errors_free(&e);
    rt_cfg_free(&schema, &c);

    /* a flood of bad lines is capped, not unbounded */
    char *big = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&big, &len);
    fputs("[train]\n", f);
    for (int i = 0; i < 500; i++)
        fputs("nonsense\n", f);
    fclose(f);
    assert_int_equal(load(big, &c, &e), RT_ERR_INVALID);
    assert_int_equal(e.n, RT_CFG_MAX_ERRORS);
    assert_true(e.dropped > 0);
    free(big);
    rt_cfg_errors_free(&e);
    rt_cfg_free(&schema, &c);
}

static void test_long_lines_and_nul(void **state)
{
    (void)state;
    tcfg c;
    rt_cfg_errors e;
    /* a list far longer than inih's 200-byte default line */
    char text[8192];
    int n = snprintf(text, sizeof text, REQ "[data]\ncolumns = ");
    for (int i = 0; i < 300; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "%scol%d", i ? ", " : "", i);
    snprintf(text + n, sizeof text - (size_t)n, "\n[train]\nepochs = 4\n");
    assert_int_equal(load(text, &c, &e), RT_OK);
    assert_int_equal(c.columns.n, 300);
    assert_string_equal(c.columns.items[299], "col299");
    assert_int_equal(c.epochs, 4);
    rt_cfg_free(&schema, &c);

    const char withnul[] = REQ "[train]\nepo\0chs = 1\n";
    memset(&e, 0, sizeof e);
    assert_int_equal(rt_cfg_load_string(&schema, withnul, sizeof withnul - 1, "t.ini", NULL, &c, &e),
                     RT_ERR_INVALID);
    assert_string_equal(e.msg[0], "t.ini:4: syntax error: line contains a NUL byte");
    rt_cfg_errors_free(&e);
    rt_cfg_free(&schema, &c);
}

static void test_files(void **state)
{
    (void)state;
    tcfg c;
    rt_cfg_errors e = {0};
    assert_int_equal(rt_cfg_load_file(&schema, "/nonexistent/job.ini", &c, &e), RT_ERR_NOTFOUND);
    assert_string_equal(e.msg[0], "/nonexistent/job.ini: cannot open: No such file or directory");
    rt_cfg_errors_free(&e);
    rt_cfg_free(&schema, &c);

    char dir[] = "/tmp/rt_cfg_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/job.ini", dir);
    FILE *f = fopen(path, "w");
    fputs("[data]\ndataset = ds\n[train]\nepochs = nine\n", f);
    fclose(f);
    assert_int_equal(rt_cfg_load_file(&schema, path, &c, &e), RT_ERR_INVALID);
    char want[512];
    snprintf(want, sizeof want, "%s:4: [train] epochs: expected an integer, got 'nine'", path);
    assert_string_equal(e.msg[0], want);
    char ds[300];
    snprintf(ds, sizeof ds, "%s/ds", dir);
    assert_string_equal(c.dataset, ds); /* relative to the file's folder */
    rt_cfg_errors_free(&e);
    rt_cfg_free(&schema, &c);
    unlink(path);
    rmdir(dir);
}

static void test_set_and_print_roundtrip(void **state)
{
    (void)state;
    tcfg c, d;
    rt_cfg_errors e;
    assert_int_equal(load(REQ "[train]\nepochs = 3\ntimeout = 90s\n", &c, &e), RT_OK);
    assert_int_equal(rt_cfg_set(&schema, &c, "train.lr", "0.5", &e), RT_OK);
    assert_true(c.lr == 0.5);
    assert_int_equal(rt_cfg_set(&schema, &c, "data.label", "Customers", &e), RT_OK);
    assert_string_equal(c.label, "Customers");
    assert_int_equal(rt_cfg_set(&schema, &c, "train.epocs", "4", &e), RT_ERR_INVALID);
    assert_string_equal(e.msg[0], "command line: unknown key 'epocs' in section [train]; did you "
                                  "mean 'epochs'?");
    assert_int_equal(rt_cfg_set(&schema, &c, "train.epochs", "0", &e), RT_ERR_INVALID);
    assert_string_equal(e.msg[1], "command line: [train] epochs: 0 is out of range [1, 1000]");
    assert_int_equal(rt_cfg_set(&schema, &c, "epochs", "1", &e), RT_ERR_INVALID);
    assert_string_equal(e.msg[2], "command line: 'epochs': expected section.key=value");
    rt_cfg_errors_free(&e);

    char *text = rt_cfg_print_string(&schema, &c);
    assert_non_null(text);
    assert_non_null(strstr(text, "[train]\nepochs = 3\n"));
    assert_non_null(strstr(text, "timeout = 1m30s\n"));
    assert_non_null(strstr(text, "bucket = 25M\n"));
    assert_non_null(strstr(text, "dataset = /jobs/ds\n"));
    memset(&e, 0, sizeof e);
    assert_int_equal(rt_cfg_load_string(&schema, text, strlen(text), "printed", NULL, &d, &e), RT_OK);
    char *again = rt_cfg_print_string(&schema, &d);
    assert_string_equal(text, again);
    free(text);
    free(again);
    rt_cfg_free(&schema, &c);
    rt_cfg_free(&schema, &d);
}

/* Under systemd the agent's and coordinator's folders default to the
 * unit's StateDirectory/LogsDirectory (never the read-only /etc beside the
 * file); without it, beside the file; a written value always wins. */
static void test_service_directories(void **state)
{
    (void)state;
    const char *agent = "[agent]\ncoordinator = c:7070\n";
    rt_agent_cfg a;
    rt_cfg_errors e;
    memset(&e, 0, sizeof e);
    unsetenv("STATE_DIRECTORY");
    unsetenv("LOGS_DIRECTORY");
    assert_int_equal(rt_cfg_load_string(&rt_agent_schema, agent, strlen(agent), "agent.conf",
                                        "/etc/ringtrain", &a, &e), RT_OK);
    assert_string_equal(a.work_dir, "/etc/ringtrain/work");
    assert_string_equal(a.log_dir, "/etc/ringtrain/logs");
    rt_cfg_free(&rt_agent_schema, &a);
    setenv("STATE_DIRECTORY", "/var/lib/ringtrain:/var/lib/other", 1);
    setenv("LOGS_DIRECTORY", "/var/log/ringtrain", 1);
    assert_int_equal(rt_cfg_load_string(&rt_agent_schema, agent, strlen(agent), "agent.conf",
                                        "/etc/ringtrain", &a, &e), RT_OK);
    assert_string_equal(a.work_dir, "/var/lib/ringtrain/work");
    assert_string_equal(a.log_dir, "/var/log/ringtrain");
    rt_cfg_free(&rt_agent_schema, &a);
    const char *written = "[agent]\ncoordinator = c:7070\nwork_dir = w\nlog_dir = /srv/l\n";
    assert_int_equal(rt_cfg_load_string(&rt_agent_schema, written, strlen(written), "agent.conf",
                                        "/etc/ringtrain", &a, &e), RT_OK);
    assert_string_equal(a.work_dir, "/etc/ringtrain/w");
    assert_string_equal(a.log_dir, "/srv/l");
    rt_cfg_free(&rt_agent_schema, &a);
    rt_coord_cfg c;
    const char *coord = "[coordinator]\n";
    assert_int_equal(rt_cfg_load_string(&rt_coord_schema, coord, strlen(coord), "coordinator.conf",
                                        "/etc/ringtrain", &c, &e), RT_OK);
    assert_string_equal(c.state_db, "/var/lib/ringtrain/state.db");
    assert_string_equal(c.token_file, "/etc/ringtrain/token"); /* the material stays beside the file */
    rt_cfg_free(&rt_coord_schema, &c);
    unsetenv("STATE_DIRECTORY");
    unsetenv("LOGS_DIRECTORY");
}

/* The job file's [model] checks: each message names file:line and key. */
static void job_errors(const char *model, const char *const *want, int nwant)
{
    char text[1024];
    snprintf(text, sizeof text, "[data]\ndataset = /d\n[output]\nstore = /s\n[model]\n%s", model);
    rt_job_cfg j;
    rt_cfg_errors e = {0};
    rt_status st = rt_cfg_load_string(&rt_job_schema, text, strlen(text), "job.ini", NULL, &j, &e);
    char all[4096];
    rt_cfg_errors_join(&e, all, sizeof all);
    if (nwant == 0 && st != RT_OK)
        fail_msg("unexpected errors:\n%s", all);
    if (nwant > 0 && (st != RT_ERR_INVALID || (int)e.n != nwant))
        fail_msg("%d errors wanted, got %zu:\n%s", nwant, e.n, all);
    for (int i = 0; i < nwant; i++)
        if (!strstr(e.msg[i], want[i]))
            fail_msg("error %d is '%s', wanted '%s'", i, e.msg[i], want[i]);
    rt_cfg_errors_free(&e);
    rt_cfg_free(&rt_job_schema, &j);
}

static void test_job_model_keys(void **state)
{
    (void)state;
    job_errors("architecture = mlp\nhidden = 64, 32\ndropout = 0.1, 0.2\nbatch_norm = true\n"
               "activation = gelu\nembedding_dims = Store:16, DayOfWeek:4\n", NULL, 0);
    job_errors("architecture = ft_transformer\nd_token = 96\nheads = 8\nblocks = 2\n", NULL, 0);
    /* a key of another family, at its line, with the family that takes it */
    const char *e1[] = {"job.ini:7: [model] cross_layers: architecture = mlp does not take it "
                        "(dcn2 does)"};
    job_errors("architecture = mlp\ncross_layers = 5\n", e1, 1);
    const char *e2[] = {
        "job.ini:7: [model] embedding_dim: architecture = ft_transformer does "
        "not take it (rossmann, mlp, resnet, dcn2 and tabm do); ft_transformer embeds "
        "every column in a token of d_token",
        "job.ini:8: [model] heads: 5 heads do not divide d_token = 192"};
    job_errors("architecture = ft_transformer\nembedding_dim = 16\nheads = 5\n", e2, 2);
    const char *e3[] = {
        "job.ini:7: [model] dropout: architecture = resnet does not take it "
        "(rossmann, mlp, dcn2 and tabm do); resnet's dropouts are dropout1 and dropout2"};
    job_errors("architecture = resnet\ndropout = 0.3\n", e3, 1);
    const char *e4[] = {"job.ini:8: [model] dropout: 3 values for 2 hidden layers"};
    job_errors("architecture = mlp\nhidden = 8, 8\ndropout = 0.1, 0.1, 0.1\n", e4, 1);
    const char *e5[] = {"job.ini:6: [model] embedding_dims: 'Store16' is not COLUMN:WIDTH",
                        "job.ini:6: [model] embedding_dims: column Store is given twice"};
    job_errors("embedding_dims = Store16, Store:3, Store:4\n", e5, 2);
    const char *e6[] = {"job.ini:6: [model] dropout: rossmann takes one rate"};
    job_errors("dropout = 0.5, 0.5\n", e6, 1);
    const char *e7[] = {"job.ini:7: [model] batch_norm: 'maybe' is not true or false"};
    job_errors("architecture = mlp\nbatch_norm = maybe\n", e7, 1);
}

/* An enum key's choice by number, as the CLI names [job] transport. */
static void test_enum_name(void **state)
{
    (void)state;
    /* every numbered enum of rt_schemas.h against its key's choices: they
     * disagreed once (the transports' RT_TP_AUTO was 3, which the schema
     * called shm: that enum is gone, the names are RT_RUN_TRANSPORTS) */
    static const struct {
        const char *sec, *key;
        int v;
        const char *name;
    } E[] = {
        {"job", "type", RT_JOB_TRAIN, "train"},
        {"job", "type", RT_JOB_EXEC, "exec"},
        {"job", "type", RT_JOB_SWEEP, "sweep"},
        {"sweep", "scheduler", RT_SWEEP_ASHA, "asha"},
        {"sweep", "scheduler", RT_SWEEP_RANDOM, "random"},
        {"sweep", "scheduler", RT_SWEEP_GRID, "grid"},
        {"model", "device", RT_DEV_AUTO, "auto"},
        {"model", "device", RT_DEV_CPU, "cpu"},
        {"model", "device", RT_DEV_CUDA, "cuda"},
        {"train", "checkpoint", RT_CKPT_BEST, "best"},
        {"train", "checkpoint", RT_CKPT_LAST, "last"},
        {"train", "checkpoint", RT_CKPT_NONE, "none"},
        {"train", "monitor_mode", RT_MON_AUTO, "auto"},
        {"train", "monitor_mode", RT_MON_MIN, "min"},
        {"train", "monitor_mode", RT_MON_MAX, "max"},
        {"train", "resume", RT_RESUME_AUTO, "auto"},
        {"train", "resume", RT_RESUME_NEVER, "never"},
        {"train", "lr_schedule", RT_LR_CONSTANT, "constant"},
        {"train", "lr_schedule", RT_LR_COSINE, "cosine"},
        {"train", "lr_schedule", RT_LR_STEP, "step"},
        {"train", "lr_schedule", RT_LR_EXPONENTIAL, "exponential"},
        {"train", "lr_schedule", RT_LR_ONE_CYCLE, "one_cycle"},
        {"train", "lr_schedule", RT_LR_PLATEAU, "plateau"},
        {"model", "embedding_rule", RT_EMB_RULE_FIXED, "fixed"},
        {"model", "embedding_rule", RT_EMB_RULE_FASTAI, "fastai"},
    };
    char b[32];
    for (size_t i = 0; i < sizeof E / sizeof *E; i++)
        if (strcmp(rt_cfg_enum_name(&rt_job_schema, E[i].sec, E[i].key, E[i].v, b, sizeof b),
                   E[i].name) != 0)
            fail_msg("[%s] %s choice %d is '%s' in the schema, '%s' in rt_schemas.h", E[i].sec,
                     E[i].key, E[i].v, b, E[i].name);
    assert_string_equal(rt_cfg_enum_name(&rt_job_schema, "job", "transport", 99, b, sizeof b), "?");
    assert_string_equal(rt_cfg_enum_name(&rt_job_schema, "job", "np", 0, b, sizeof b), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_and_defaults),
        cmocka_unit_test(test_enum_name),
        cmocka_unit_test(test_unknown_keys_and_sections),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_missing_duplicate_syntax),
        cmocka_unit_test(test_many_errors_in_order),
        cmocka_unit_test(test_long_lines_and_nul),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_set_and_print_roundtrip),
        cmocka_unit_test(test_service_directories),
        cmocka_unit_test(test_job_model_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
