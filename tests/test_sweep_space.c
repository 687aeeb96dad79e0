/* test_sweep_space.c — a sweep's file (config/rt_sweep.c): the space.*
 * keys with their lines, each distribution's checks, every bound and
 * choice through the job schema (messages naming file:line and key), and
 * the sampling: reproducible, within bounds, a function of (seed, trial,
 * key), the grid in order; the families' default spaces. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_config.h"
#include "rt_schemas.h"
#include "rt_sweep.h"

#define HEAD                                                                            \
    "[job]\ntype = sweep\n[data]\ndataset = /d\n[model]\narchitecture = mlp\n[train]\n" \
    "epochs = 27\n[output]\nstore = /s\n[sweep]\n"

/* the sweep text after HEAD (line 12 on): RT_OK, or the joined messages */
static rt_status load(const char *tail, rt_job_cfg *j, char *msgs, size_t len)
{
    char text[4096];
    snprintf(text, sizeof text, "%s%s", HEAD, tail);
    rt_cfg_errors e = {0};
    rt_status st = rt_cfg_load_string(&rt_job_schema, text, strlen(text), "s.ini", NULL, j, &e);
    rt_cfg_errors_join(&e, msgs, len);
    rt_cfg_errors_free(&e);
    return st;
}

static void refused(const char *tail, const char *want)
{
    rt_job_cfg j;
    char msgs[4096];
    if (load(tail, &j, msgs, sizeof msgs) == RT_OK || !strstr(msgs, want))
        fail_msg("'%s': expected '%s', got '%s'", tail, want, msgs);
    rt_cfg_free(&rt_job_schema, &j);
}

static void test_space_checks(void **state)
{
    (void)state;
    refused("scheduler = grid\n", "s.ini: [sweep]: no space.SECTION.KEY line: a grid tries");
    refused("space.train.learning_rate = uniform(1, 1e-3)\ntrials = 4\n",
            "s.ini:12: [sweep] space.train.learning_rate: uniform(1, 0.001): lo must be below hi");
    refused("trials = 4\nspace.train.learning_rate = loguniform(0, 1)\n",
            "s.ini:13: [sweep] space.train.learning_rate: loguniform(0, 1): a log range must lie "
            "above 0");
    refused("trials = 4\nspace.train.lerning_rate = uniform(0, 1)\n",
            "s.ini:13: [sweep] space.train.lerning_rate: no job key train.lerning_rate");
    refused("trials = 4\nspace.job.np = int(1, 4)\n", "[job] keys are the sweep's own");
    refused("trials = 4\nspace.train.epochs = uniform(1, 4)\n",
            "train.epochs is an integer: int(lo, hi) or loguniform(lo, hi)");
    refused("trials = 4\nspace.train.optimizer = uniform(1, 4)\n",
            "train.optimizer is not a number: search it with choice(a | b)");
    refused("trials = 4\nspace.train.optimizer = choice(adam | lion)\n",
            "s.ini:13: [sweep] space.train.optimizer: the choice lion: [train] optimizer: expected "
            "one of adam, adamw, sgd, got 'lion'");
    refused("trials = 4\nspace.model.dropout = uniform(0.1, 1.5)\n",
            "the upper bound 1.5: [model] dropout");
    /* a key of another family: the model's checks, through the schema */
    refused("trials = 4\nspace.model.d_token = choice(64 | 128)\n",
            "s.ini:13: [sweep] space.model.d_token: the choice 64:");
    refused("trials = 4\nspace.train.seed = uniform(1, 2\n", "expected uniform(lo, hi)");
    refused("trials = 4\nspace.train.seed = int(1, 2)\nspace.train.seed = int(3, 4)\n",
            "s.ini:14: [sweep] space.train.seed: set twice (first at line 13)");
    refused("space.train.seed = int(1, 4)\n", "[sweep] trials: how many configurations");
    refused("scheduler = grid\nspace.train.seed = int(1, 4)\n",
            "a grid takes choice(a | b) keys only");
    refused("scheduler = grid\ntrials = 5\nspace.train.seed = choice(1 | 2)\n",
            "[sweep] trials: the grid has 2 combinations; leave trials out");
    refused("scheduler = grid\nbaseline = true\nspace.train.seed = choice(1 | 2)\n",
            "s.ini:13: [sweep] baseline: a grid tries every combination already");
    refused("trials = 3\ngrace_epochs = 27\nspace.train.seed = int(1, 4)\n",
            "[sweep] grace_epochs: 27 is not below [train] epochs (27)");
    /* the space in a training job's file: said, not ignored */
    rt_job_cfg j;
    char msgs[4096];
    const char *train = "[job]\ntype = train\n[data]\ndataset = /d\n[output]\nstore = /s\n"
                        "[sweep]\nspace.train.seed = int(1, 4)\n";
    rt_cfg_errors e = {0};
    assert_int_equal(
        rt_cfg_load_string(&rt_job_schema, train, strlen(train), "t.ini", NULL, &j, &e),
        RT_ERR_INVALID);
    rt_cfg_errors_join(&e, msgs, sizeof msgs);
    assert_non_null(strstr(msgs, "t.ini:8: [sweep] space.train.seed: a search space in a "
                                 "training job: a sweep is [job] type = sweep"));
    rt_cfg_errors_free(&e);
    rt_cfg_free(&rt_job_schema, &j);
}

static void test_sampling(void **state)
{
    (void)state;
    rt_job_cfg j;
    char msgs[4096];
    const char *tail =
        "trials = 200\nseed = 3\nspace.train.learning_rate = loguniform(1e-4, 1e-2)\n"
        "space.model.dropout = uniform(0, 0.5)\nspace.train.batch_size = int(16, 20)\n"
        "space.model.hidden = choice(64 | 128,64)\n";
    assert_int_equal(load(tail, &j, msgs, sizeof msgs), RT_OK);
    rt_cfg_origin o = {"s.ini", NULL};
    rt_cfg_errors e = {0};
    rt_sweep_space sp;
    assert_int_equal(rt_sweep_space_parse(&j, &o, &sp, &e), RT_OK);
    assert_int_equal(sp.n, 4);
    assert_int_equal(rt_sweep_trials(&j, &sp), 200);
    char(*a)[RT_SWEEP_VALUE_MAX] = calloc(4, sizeof *a),
    (*b)[RT_SWEEP_VALUE_MAX] = calloc(4, sizeof *b);
    int seen_int[5] = {0}, seen_choice[2] = {0}, low_lr = 0;
    for (int t = 0; t < 200; t++) {
        rt_sweep_sample(&j, &sp, t, a);
        rt_sweep_sample(&j, &sp, t, b);
        for (int i = 0; i < 4; i++)
            assert_string_equal(a[i], b[i]); /* the same trial, the same values */
        double lr = atof(a[0]), dr = atof(a[1]);
        int bs = atoi(a[2]);
        assert_true(lr >= 1e-4 && lr <= 1e-2 && dr >= 0 && dr <= 0.5 && bs >= 16 && bs <= 20);
        low_lr += lr < 1e-3; /* log-uniform: half the draws below the geometric middle */
        seen_int[bs - 16]++;
        seen_choice[!strcmp(a[3], "128,64")]++;
        /* every trial's job passes the schema, with its store */
        char *text = rt_sweep_trial_text(&j, &sp, a, t, &e);
        assert_non_null(text);
        char want[64];
        snprintf(want, sizeof want, "store = /s/trial-%d\n", t + 1);
        assert_non_null(strstr(text, want));
        assert_non_null(strstr(text, "type = train\n"));
        free(text);
    }
    assert_true(low_lr > 70 && low_lr < 130);
    for (int k = 0; k < 5; k++)
        assert_true(seen_int[k] > 15); /* both ends of int() included */
    assert_true(seen_choice[0] > 60 && seen_choice[1] > 60);
    /* another seed, other values; a key added leaves the others' values */
    rt_sweep_sample(&j, &sp, 7, a);
    rt_job_cfg j2;
    char tail2[1024];
    snprintf(tail2, sizeof tail2, "%sspace.train.weight_decay = uniform(0, 0.1)\n", tail);
    assert_int_equal(load(tail2, &j2, msgs, sizeof msgs), RT_OK);
    rt_sweep_space sp2;
    assert_int_equal(rt_sweep_space_parse(&j2, &o, &sp2, &e), RT_OK);
    char(*c)[RT_SWEEP_VALUE_MAX] = calloc(5, sizeof *c);
    rt_sweep_sample(&j2, &sp2, 7, c);
    for (int i = 0; i < 4; i++)
        assert_string_equal(a[i], c[i]);
    j2.sweep_seed = 4;
    rt_sweep_sample(&j2, &sp2, 7, c);
    assert_string_not_equal(a[0], c[0]);
    free(c);
    rt_sweep_space_free(&sp2);
    rt_cfg_free(&rt_job_schema, &j2);
    /* printed and loaded again: the same space, the same trials */
    char *printed = rt_cfg_print_string(&rt_job_schema, &j);
    assert_int_equal(
        rt_cfg_load_string(&rt_job_schema, printed, strlen(printed), "p", NULL, &j2, &e), RT_OK);
    rt_sweep_space sp3;
    assert_int_equal(rt_sweep_space_parse(&j2, &o, &sp3, &e), RT_OK);
    rt_sweep_sample(&j2, &sp3, 7, b);
    for (int i = 0; i < 4; i++)
        assert_string_equal(a[i], b[i]);
    rt_sweep_space_free(&sp3);
    rt_cfg_free(&rt_job_schema, &j2);
    free(printed);
    /* baseline: trial 1 has the file's own values, the others theirs as before */
    rt_sweep_sample(&j, &sp, 1, b);
    j.sweep_baseline = true;
    rt_sweep_sample(&j, &sp, 1, c = calloc(4, sizeof *c));
    for (int i = 0; i < 4; i++)
        assert_string_equal(b[i], c[i]);
    rt_sweep_sample(&j, &sp, 0, c);
    assert_string_equal(c[0], "0.0001"); /* learning_rate's default, 1e-4 */
    assert_string_equal(c[1], "0.5");    /* dropout's */
    assert_string_equal(c[2], "100");    /* batch_size's */
    assert_string_equal(c[3], "1000, 1000, 1000, 500");
    free(c);
    j.sweep_baseline = false;
    /* ASHA's rungs: grace derived (27 / 3^3 = 1), reduction 3, 27 epochs:
     * 1, 3, 9; 100 epochs: grace 4 (3.7 rounded), 4, 12, 36; grace 1
     * given: 1, 3, 9, 27, 81; 5 epochs: at least 1 */
    int64_t r[8];
    assert_int_equal(rt_sweep_rungs(&j, r, 8), 3);
    assert_true(r[0] == 1 && r[1] == 3 && r[2] == 9);
    j.epochs = 100;
    assert_int_equal(rt_sweep_grace(&j), 4);
    assert_int_equal(rt_sweep_rungs(&j, r, 8), 3);
    assert_true(r[0] == 4 && r[1] == 12 && r[2] == 36);
    j.grace_epochs = 1;
    assert_int_equal(rt_sweep_rungs(&j, r, 8), 5);
    assert_true(r[0] == 1 && r[3] == 27 && r[4] == 81);
    j.grace_epochs = 0;
    j.epochs = 5;
    assert_int_equal(rt_sweep_grace(&j), 1);
    j.epochs = 27;
    assert_true(rt_job_monitor_max(&j) == false); /* val_loss */
    free(a);
    free(b);
    rt_sweep_space_free(&sp);
    rt_cfg_free(&rt_job_schema, &j);
    rt_cfg_errors_free(&e);
}

static void test_grid(void **state)
{
    (void)state;
    rt_job_cfg j;
    char msgs[4096];
    assert_int_equal(load("scheduler = grid\nspace.train.optimizer = choice(adam | sgd)\n"
                          "space.model.hidden = choice(64 | 128 | 256,128)\n",
                          &j, msgs, sizeof msgs),
                     RT_OK);
    rt_cfg_origin o = {"s.ini", NULL};
    rt_cfg_errors e = {0};
    rt_sweep_space sp;
    assert_int_equal(rt_sweep_space_parse(&j, &o, &sp, &e), RT_OK);
    assert_int_equal(rt_sweep_trials(&j, &sp), 6);
    const char *want[6][2] = {{"adam", "64"}, {"adam", "128"}, {"adam", "256,128"},
                              {"sgd", "64"},  {"sgd", "128"},  {"sgd", "256,128"}};
    char(*v)[RT_SWEEP_VALUE_MAX] = calloc(2, sizeof *v);
    for (int t = 0; t < 6; t++) {
        rt_sweep_sample(&j, &sp, t, v);
        assert_string_equal(v[0], want[t][0]);
        assert_string_equal(v[1], want[t][1]);
    }
    free(v);
    rt_sweep_space_free(&sp);
    rt_cfg_free(&rt_job_schema, &j);
}

/* A sweep of FAMILY with [model] lines model (after architecture) and no
 * space.* line: RT_OK or the messages */
static rt_status load_family(const char *family, const char *model, rt_job_cfg *j, char *msgs,
                             size_t len)
{
    char text[2048];
    snprintf(text, sizeof text,
             "[job]\ntype = sweep\n[data]\ndataset = /d\n[model]\narchitecture = %s\n%s"
             "[train]\nepochs = 27\n[output]\nstore = /s\n[sweep]\ntrials = 40\n",
             family, model);
    rt_cfg_errors e = {0};
    rt_status st = rt_cfg_load_string(&rt_job_schema, text, strlen(text), "s.ini", NULL, j, &e);
    rt_cfg_errors_join(&e, msgs, len);
    rt_cfg_errors_free(&e);
    return st;
}

/* No space.* line: the family's default space (and its numeric
 * embedding's), every trial's values through the job schema; a space of
 * the file's own replaces it whole; a default that the file's other keys
 * refuse is named as the default space's. */
static void test_default_space(void **state)
{
    (void)state;
    static const struct {
        const char *family, *model;
        int n;             /* keys searched */
        const char *has;   /* one of them */
        const char *hasnt; /* a key it must not search, or NULL */
    } cases[] = {
        {"mlp", "", 5, "model.hidden", "model.d_embedding"},
        {"resnet", "", 8, "model.hidden_multiplier", NULL},
        {"dcn2", "", 8, "model.cross_layers", NULL},
        {"ft_transformer", "", 9, "model.d_token", NULL},
        {"tabm", "", 6, "train.optimizer", NULL},
        {"rossmann", "", 3, "model.l2", "train.optimizer"},
        {"tabm", "numeric_embedding = piecewise_linear\n", 8, "model.bins", NULL},
        {"mlp", "numeric_embedding = periodic\n", 8, "model.frequency_scale", NULL},
        {"resnet", "numeric_embedding = linear\n", 9, "model.d_embedding", NULL},
        {"ft_transformer", "numeric_embedding = periodic\n", 11, "model.frequencies",
         "model.d_embedding"},
        {"ft_transformer", "numeric_embedding = linear\n", 9, "model.d_token", "model.d_embedding"},
        /* a job on sgd keeps it */
        {"tabm", "[train]\noptimizer = sgd\n[model]\n", 5, "model.width", "train.optimizer"},
    };
    rt_cfg_origin o = {"s.ini", NULL};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        rt_job_cfg j;
        char msgs[4096];
        if (load_family(cases[c].family, cases[c].model, &j, msgs, sizeof msgs) != RT_OK)
            fail_msg("%s %s: %s", cases[c].family, cases[c].model, msgs);
        rt_cfg_errors e = {0};
        rt_sweep_space sp;
        assert_int_equal(rt_sweep_space_parse(&j, &o, &sp, &e), RT_OK);
        if (sp.n != cases[c].n)
            fail_msg("%s %s: %d keys, expected %d", cases[c].family, cases[c].model, sp.n,
                     cases[c].n);
        bool has = false;
        for (int i = 0; i < sp.n; i++) {
            assert_int_equal(sp.d[i].line, RT_SWEEP_LINE_DEFAULT);
            has |= !strcmp(sp.d[i].key, cases[c].has);
            assert_false(cases[c].hasnt && !strcmp(sp.d[i].key, cases[c].hasnt));
        }
        assert_true(has);
        /* 40 trials' values, each job valid for the family */
        char(*v)[RT_SWEEP_VALUE_MAX] = calloc((size_t)sp.n, sizeof *v);
        for (int t = 0; t < 40; t++) {
            rt_sweep_sample(&j, &sp, t, v);
            char *text = rt_sweep_trial_text(&j, &sp, v, t, &e);
            if (!text) {
                rt_cfg_errors_join(&e, msgs, sizeof msgs);
                fail_msg("%s trial %d: %s", cases[c].family, t + 1, msgs);
            }
            free(text);
        }
        free(v);
        rt_sweep_space_free(&sp);
        rt_cfg_errors_free(&e);
        rt_cfg_free(&rt_job_schema, &j);
    }
    /* a space of the file's own is the whole space */
    rt_job_cfg j;
    char msgs[4096];
    assert_int_equal(load("trials = 4\nspace.train.seed = int(1, 4)\n", &j, msgs, sizeof msgs),
                     RT_OK);
    rt_cfg_errors e = {0};
    rt_sweep_space sp;
    assert_int_equal(rt_sweep_space_parse(&j, &o, &sp, &e), RT_OK);
    assert_int_equal(sp.n, 1);
    assert_int_equal(sp.d[0].line, 13);
    rt_sweep_space_free(&sp);
    rt_cfg_free(&rt_job_schema, &j);
    /* the file's keys against a default: said as the default space's */
    assert_int_equal(load_family("mlp", "hidden = 64, 64, 64\nbatch_norm = true, true, true\n", &j,
                                 msgs, sizeof msgs),
                     RT_ERR_INVALID);
    assert_non_null(strstr(msgs, "s.ini: mlp's default space (no space.* line; docs/sweeps.md): "
                                 "[sweep] space.model.hidden: the choice 128: [model] batch_norm"));
    rt_cfg_free(&rt_job_schema, &j);
    assert_int_equal(
        load_family("ft_transformer", "heads = 3\nd_token = 96\n", &j, msgs, sizeof msgs),
        RT_ERR_INVALID);
    assert_non_null(strstr(msgs, "ft_transformer's default space (no space.* line; "
                                 "docs/sweeps.md): [sweep] space.model.d_token: the choice 64"));
    rt_cfg_free(&rt_job_schema, &j);
}

/* model.architecture = choice(...) as the one space.* line: every trial
 * searches its architecture's default space (rt_sweep_dim.when), the keys
 * of the others left as the file has them; with other space.* lines, or
 * in a grid, the file's lines are the whole space; a file key that one of
 * the architectures refuses is named with it. */
static void test_architecture_choice(void **state)
{
    (void)state;
    rt_job_cfg j;
    char msgs[4096];
    rt_cfg_origin o = {"s.ini", NULL};
    assert_int_equal(load("trials = 60\nspace.model.architecture = choice(mlp | tabm | rossmann)\n",
                          &j, msgs, sizeof msgs),
                     RT_OK);
    rt_cfg_errors e = {0};
    rt_sweep_space sp;
    assert_int_equal(rt_sweep_space_parse(&j, &o, &sp, &e), RT_OK);
    assert_int_equal(sp.arch, 0);
    assert_int_equal(sp.n, 1 + 5 + 6 + 3); /* mlp's, tabm's, rossmann's keys */
    assert_string_equal(sp.d[0].when, "");
    int width = -1;
    for (int i = 1; i < sp.n; i++) {
        assert_true(sp.d[i].when[0] != '\0');
        if (!strcmp(sp.d[i].key, "model.width"))
            width = i;
    }
    assert_true(width > 0);
    assert_string_equal(sp.d[width].when, "tabm");
    char(*v)[RT_SWEEP_VALUE_MAX] = calloc((size_t)sp.n, sizeof *v);
    int drawn[3] = {0};
    for (int t = 0; t < 60; t++) {
        rt_sweep_sample(&j, &sp, t, v);
        const char *fam[3] = {"mlp", "tabm", "rossmann"};
        int a = -1;
        for (int k = 0; k < 3; k++)
            if (!strcmp(v[0], fam[k]))
                a = k;
        assert_true(a >= 0);
        drawn[a]++;
        for (int i = 1; i < sp.n; i++) /* a value exactly where the family searches it */
            assert_int_equal(v[i][0] != '\0', !strcmp(sp.d[i].when, v[0]));
        char *text = rt_sweep_trial_text(&j, &sp, v, t, &e);
        if (!text) {
            rt_cfg_errors_join(&e, msgs, sizeof msgs);
            fail_msg("trial %d (%s): %s", t + 1, v[0], msgs);
        }
        char want[64];
        snprintf(want, sizeof want, "architecture = %s\n", v[0]);
        assert_non_null(strstr(text, want));
        if (a == 1) { /* tabm's width, from its own range */
            snprintf(want, sizeof want, "width = %s\n", v[width]);
            assert_non_null(strstr(text, want));
            assert_true(atoi(v[width]) >= 128 && atoi(v[width]) <= 1024);
        }
        free(text);
    }
    assert_true(drawn[0] > 0 && drawn[1] > 0 && drawn[2] > 0);
    free(v);
    rt_sweep_space_free(&sp);
    rt_cfg_free(&rt_job_schema, &j);
    /* with another line, or in a grid: the lines alone */
    static const char *const alone[] = {
        "trials = 4\nspace.model.architecture = choice(mlp | tabm)\n"
        "space.train.batch_size = choice(64 | 128)\n",
        "scheduler = grid\nspace.model.architecture = choice(mlp | tabm)\n",
    };
    for (int c = 0; c < 2; c++) {
        assert_int_equal(load(alone[c], &j, msgs, sizeof msgs), RT_OK);
        assert_int_equal(rt_sweep_space_parse(&j, &o, &sp, &e), RT_OK);
        assert_int_equal(sp.n, 2 - c);
        assert_string_equal(sp.d[sp.n - 1].when, "");
        rt_sweep_space_free(&sp);
        rt_cfg_free(&rt_job_schema, &j);
    }
    rt_cfg_errors_free(&e);
    /* an mlp key in the file: tabm's trials refuse it */
    refused("trials = 4\nspace.model.architecture = choice(mlp | tabm)\n[model]\nhidden = 64\n",
            "s.ini:13: [sweep] space.model.architecture: the choice tabm: [model] hidden");
    /* the file's keys against a family's default: said as that space's */
    refused("trials = 4\nspace.model.architecture = choice(tabm | mlp)\n[model]\n"
            "batch_norm = true, true, true\nhidden = 64, 64, 64\n",
            "the choice tabm: [model] hidden");
    refused("trials = 4\nspace.model.architecture = choice(mlp)\n[model]\n"
            "batch_norm = true, true, true\nhidden = 64, 64, 64\n",
            "s.ini: mlp's default space (its trials of that architecture; docs/sweeps.md): "
            "[sweep] space.model.hidden: the choice 128: [model] batch_norm");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_space_checks),
        cmocka_unit_test(test_sampling),
        cmocka_unit_test(test_grid),
        cmocka_unit_test(test_default_space),
        cmocka_unit_test(test_architecture_choice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
