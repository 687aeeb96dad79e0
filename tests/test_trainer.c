/* test_trainer.c — the trainer's pieces in one process:
 *   - data-parallel correctness: 2 ranks with batch B each (over the real
 *     ring, TCP on loopback) end with the parameters of 1 rank with batch
 *     2B on the same rows, step after step (dropout off, no batch norm);
 *     both ranks hold bitwise-equal parameters; the gradient bucket size
 *     changes nothing;
 *   - synchronized batch norm: the same with continuous columns whose
 *     distribution differs between the ranks' halves — equal to one rank
 *     with [model] sync_batch_norm, clearly not without it;
 *   - checkpoints: exact round trip, another model refused, every kind of
 *     damage reported;
 *   - the epoch shuffle: a permutation, reproducible, new each epoch and rank. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rank_harness.h"
#include "rt_ckpt.h"
#include "rt_dataset.h"
#include "rt_dp.h"
#include "rt_file.h"
#include "test_util.h"
#include "trainer.h"

enum { B = 32, K = 12, NCAT = 3, NCONT = 0 };

static rt_model_spec small_spec(int ncont)
{
    rt_model_spec s;
    rt_model_spec_defaults(&s);
    s.n_cat = NCAT;
    int32_t v[NCAT] = {50, 7, 2};
    for (int i = 0; i < NCAT; i++) {
        s.vocab[i] = v[i];
        snprintf(s.cat_names[i], sizeof s.cat_names[i], "c%d", i);
    }
    s.emb_dim = 4;
    s.n_cont = ncont;
    s.n_hidden = 2;
    s.hidden[0] = 64;
    s.hidden[1] = 32;
    s.dropout = 0;
    s.l2 = 1e-4f;
    s.head_scale = 10;
    s.seed = 7;
    return s;
}

/* The rows of K global batches of 2B: row i of step k is global row k*2B + i. */
static int32_t g_cat[K * 2 * B * NCAT];
static float g_label[K * 2 * B];

static void make_rows(void)
{
    tu_rng r = tu_rng_make(3);
    for (int i = 0; i < K * 2 * B; i++) {
        g_cat[i * NCAT + 0] = (int32_t)tu_int(&r, 0, 49);
        g_cat[i * NCAT + 1] = (int32_t)tu_int(&r, 0, 6);
        g_cat[i * NCAT + 2] = (int32_t)tu_int(&r, 0, 1);
        g_label[i] = 4.0f + 0.4f * g_cat[i * NCAT + 1] + 0.5f * g_cat[i * NCAT + 2] +
                     0.01f * (float)g_cat[i * NCAT + 0] + (float)tu_range(&r, -0.1, 0.1);
    }
}

static const rt_adam_hp HP = {1e-2f, 0.9f, 0.999f, 1e-3f, 1.0f};

typedef struct dp_run {
    size_t bucket;
    float *params[2]; /* out: each rank's final parameters */
    int64_t nparams;
    int buckets;
} dp_run;

static void rank_body(rt_comm *c, int rank, void *arg, rh_result *res)
{
    dp_run *run = arg;
    rt_model_spec s = small_spec(NCONT);
    rt_dp *d = NULL;
    char err[RT_ERR_LEN];
    rt_dp_opts o;
    rt_dp_opts_defaults(&o);
    o.threads = 1;
    o.bucket_bytes = run->bucket;
    o.max_batch = B;
    RH_CHECK(res, rt_dp_create(&s, &o, c, &d, err) == RT_OK, "create: %s", err);
    RH_CHECK(res, rt_dp_broadcast_state(d, 0, false, err) == RT_OK, "broadcast: %s", err);
    float dummy = 0;
    for (int k = 0; k < K; k++) {
        int64_t first = (int64_t)k * 2 * B + (int64_t)rank * B; /* this rank's half */
        rt_status st = rt_dp_step(d, g_cat + first * NCAT, &dummy, g_label + first, B, &HP, err);
        RH_CHECK(res, st == RT_OK, "step %d: %s", k, err);
    }
    run->nparams = rt_model_num_params(rt_dp_model(d));
    run->buckets = rt_dp_buckets(d);
    run->params[rank] = malloc((size_t)run->nparams * 4);
    RH_CHECK(res, rt_model_get_state(rt_dp_model(d), run->params[rank], NULL, NULL, NULL, NULL,
                                     err) == RT_OK, "%s", err);
    rt_dp_destroy(d);
}

static float *single_process(int64_t *nparams)
{
    rt_model_spec s = small_spec(NCONT);
    rt_dp *d = NULL;
    char err[RT_ERR_LEN];
    rt_dp_opts o;
    rt_dp_opts_defaults(&o);
    o.threads = 1;
    o.max_batch = 2 * B;
    assert_int_equal(rt_dp_create(&s, &o, NULL, &d, err), RT_OK);
    float dummy = 0;
    for (int k = 0; k < K; k++)
        assert_int_equal(rt_dp_step(d, g_cat + (int64_t)k * 2 * B * NCAT, &dummy,
                                    g_label + (int64_t)k * 2 * B, 2 * B, &HP, err),
                         RT_OK);
    *nparams = rt_model_num_params(rt_dp_model(d));
    float *p = malloc((size_t)*nparams * 4);
    assert_int_equal(rt_model_get_state(rt_dp_model(d), p, NULL, NULL, NULL, NULL, err), RT_OK);
    rt_dp_destroy(d);
    return p;
}

static void run_two(dp_run *run)
{
    rt_comm_opts o;
    rt_comm_opts_defaults(&o);
    o.timeout_us = 20000000;
    rh_result res;
    if (!rh_run(2, RT_TRANSPORT_TCP, &o, rank_body, run, &res))
        fail_msg("%s", res.msg);
}

static void test_data_parallel_equivalence(void **state)
{
    (void)state;
    make_rows();
    int64_t n1 = 0;
    float *ref = single_process(&n1);
    dp_run one = {.bucket = 25u << 20}, many = {.bucket = 4096};
    run_two(&one);
    run_two(&many);
    assert_int_equal(one.nparams, n1);
    fprintf(stderr, "np=2 x B=%d vs np=1 x B=%d after %d steps, %lld parameters; buckets %d and %d\n",
            B, 2 * B, K, (long long)n1, one.buckets, many.buckets);
    assert_true(many.buckets > 1);
    /* the two ranks agree exactly, whatever the buckets */
    assert_memory_equal(one.params[0], one.params[1], (size_t)n1 * 4);
    assert_memory_equal(one.params[0], many.params[0], (size_t)n1 * 4);
    assert_memory_equal(many.params[0], many.params[1], (size_t)n1 * 4);
    /* and are the one-process model up to float rounding of the sums */
    assert_true(tu_close_f("np=2 vs np=1 parameters", one.params[0], ref, (size_t)n1, 2e-5, 1e-4));
    /* the parameters moved: equality is not "nothing happened" */
    rt_model_spec s = small_spec(NCONT);
    char err[RT_ERR_LEN];
    rt_kctx *ctx = NULL;
    rt_model *m = NULL;
    assert_int_equal(rt_kctx_create(RT_DEVICE_CPU, 1, &ctx, err), RT_OK);
    assert_int_equal(rt_model_create(&s, ctx, 1, &m, err), RT_OK);
    float *init = malloc((size_t)n1 * 4);
    assert_int_equal(rt_model_get_state(m, init, NULL, NULL, NULL, NULL, err), RT_OK);
    double moved = 0;
    for (int64_t i = 0; i < n1; i++)
        moved = fmax(moved, fabs((double)ref[i] - init[i]));
    assert_true(moved > 1e-3);
    free(init);
    rt_model_destroy(m);
    rt_kctx_destroy(ctx);
    for (int r = 0; r < 2; r++) {
        free(one.params[r]);
        free(many.params[r]);
    }
    free(ref);
}

/* ---- synchronized batch norm ------------------------------------------------------- */

enum { BN_F = 2 };
static float g_cont[K * 2 * B * BN_F], g_label_bn[K * 2 * B];

/* Continuous columns whose first half of every global batch (rank 0's)
 * sits far from the second (rank 1's): per-rank statistics are wrong. */
static void make_cont(void)
{
    tu_rng r = tu_rng_make(11);
    for (int i = 0; i < K * 2 * B; i++) {
        bool first = i % (2 * B) < B;
        g_cont[i * BN_F + 0] = (first ? 5.0f : -5.0f) + (float)tu_range(&r, -1, 1);
        g_cont[i * BN_F + 1] = 300.0f + (first ? 50.0f : 0.0f) + 20.0f * (float)tu_range(&r, -1, 1);
        g_label_bn[i] = g_label[i] + 0.05f * g_cont[i * BN_F] + 0.002f * g_cont[i * BN_F + 1];
    }
}

typedef struct bn_run {
    bool sync;
    float *state[2]; /* each rank's parameters, then its BN moving statistics */
    int64_t n;
} bn_run;

static float *model_state(rt_model *m, int64_t *n, char *err)
{
    int64_t np = rt_model_num_params(m), nb = rt_model_num_buffers(m);
    float *p = malloc((size_t)(np + nb) * 4);
    if (p && rt_model_get_state(m, p, NULL, NULL, p + np, NULL, err) != RT_OK) {
        free(p);
        return NULL;
    }
    *n = np + nb;
    return p;
}

static void bn_rank_body(rt_comm *c, int rank, void *arg, rh_result *res)
{
    bn_run *run = arg;
    rt_model_spec s = small_spec(BN_F);
    rt_dp *d = NULL;
    char err[RT_ERR_LEN];
    rt_dp_opts o;
    rt_dp_opts_defaults(&o);
    o.threads = 1;
    o.max_batch = B;
    o.sync_batch_norm = run->sync;
    RH_CHECK(res, rt_dp_create(&s, &o, c, &d, err) == RT_OK, "create: %s", err);
    RH_CHECK(res, rt_dp_broadcast_state(d, 0, false, err) == RT_OK, "broadcast: %s", err);
    for (int k = 0; k < K; k++) {
        int64_t first = (int64_t)k * 2 * B + (int64_t)rank * B;
        rt_status st = rt_dp_step(d, g_cat + first * NCAT, g_cont + first * BN_F, g_label_bn + first,
                                  B, &HP, err);
        RH_CHECK(res, st == RT_OK, "step %d: %s", k, err);
    }
    run->state[rank] = model_state(rt_dp_model(d), &run->n, err);
    RH_CHECK(res, run->state[rank] != NULL, "%s", err);
    rt_dp_destroy(d);
}

static void test_sync_batch_norm(void **state)
{
    (void)state;
    make_rows();
    make_cont();
    /* one process, batch 2B */
    rt_model_spec s = small_spec(BN_F);
    rt_dp *d = NULL;
    char err[RT_ERR_LEN];
    rt_dp_opts o;
    rt_dp_opts_defaults(&o);
    o.threads = 1;
    o.max_batch = 2 * B;
    o.sync_batch_norm = true; /* nothing to synchronise with: the plain step */
    assert_int_equal(rt_dp_create(&s, &o, NULL, &d, err), RT_OK);
    for (int k = 0; k < K; k++) {
        int64_t first = (int64_t)k * 2 * B;
        assert_int_equal(rt_dp_step(d, g_cat + first * NCAT, g_cont + first * BN_F,
                                    g_label_bn + first, 2 * B, &HP, err),
                         RT_OK);
    }
    int64_t n = 0;
    float *ref = model_state(rt_dp_model(d), &n, err);
    assert_non_null(ref);
    rt_dp_destroy(d);
    bn_run runs[2] = {{.sync = true}, {.sync = false}};
    for (int i = 0; i < 2; i++) {
        rt_comm_opts co;
        rt_comm_opts_defaults(&co);
        co.timeout_us = 20000000;
        rh_result res;
        if (!rh_run(2, RT_TRANSPORT_TCP, &co, bn_rank_body, &runs[i], &res))
            fail_msg("%s", res.msg);
        assert_int_equal(runs[i].n, n);
    }
    double off = 0;
    for (int64_t i = 0; i < n; i++)
        off = fmax(off, fabs((double)runs[1].state[0][i] - ref[i]));
    fprintf(stderr, "np=2 x B=%d vs np=1 x B=%d: without sync_batch_norm %.3g apart at most\n", B,
            2 * B, off);
    /* with it: both ranks agree exactly and are the one-process model,
     * parameters and moving statistics, up to float rounding */
    assert_memory_equal(runs[0].state[0], runs[0].state[1], (size_t)n * 4);
    assert_true(tu_close_f("sync BN np=2 vs np=1", runs[0].state[0], ref, (size_t)n, 2e-5, 1e-4));
    /* without it the ranks' own statistics give another model */
    assert_true(off > 1e-2);
    for (int i = 0; i < 2; i++)
        for (int r = 0; r < 2; r++)
            free(runs[i].state[r]);
    free(ref);
}

/* ---- checkpoints ----------------------------------------------------------------- */

static void fill_ckpt(rt_ckpt *c, rt_model **m, rt_kctx **ctx)
{
    rt_model_spec s = small_spec(2);
    char err[RT_ERR_LEN];
    assert_int_equal(rt_kctx_create(RT_DEVICE_CPU, 1, ctx, err), RT_OK);
    assert_int_equal(rt_model_create(&s, *ctx, 8, m, err), RT_OK);
    /* a few steps so that moments, step and BN statistics are not initial */
    int32_t cat[8 * NCAT] = {0};
    float cont[16], label[8];
    for (int i = 0; i < 16; i++)
        cont[i] = (float)i;
    for (int i = 0; i < 8; i++)
        label[i] = 3.0f + 0.1f * (float)i;
    rt_model_set_batch(*m, cat, cont, label, 8);
    for (int k = 0; k < 3; k++)
        rt_model_train_step(*m, 8, &HP);
    memset(c, 0, sizeof *c);
    assert_int_equal(rt_ckpt_from_model(c, *m, err), RT_OK);
    c->epoch = 4;
    c->world_size = 2;
    c->best_val_loss = 0.125;
    c->best_epoch = 3;
    c->max_label = 41551;
    snprintf(c->label_transform, sizeof c->label_transform, "log");
    snprintf(c->label, sizeof c->label, "Sales");
    c->n_cont = 2;
    snprintf(c->cont_names[0], 64, "Dist");
    snprintf(c->cont_names[1], 64, "trend");
}

static void test_checkpoint(void **state)
{
    (void)state;
    rt_ckpt c, back;
    rt_model *m = NULL;
    rt_kctx *ctx = NULL;
    fill_ckpt(&c, &m, &ctx);
    /* the values of categorical column 0 (lent, as the trainer does); the
     * first is SQL NULL */
    char *vals[64] = {NULL}, buf[64][8];
    for (int k = 1; k < c.spec.vocab[0] && k < 64; k++) {
        snprintf(buf[k], sizeof buf[k], "v%d", k);
        vals[k] = buf[k];
    }
    assert_true(c.spec.vocab[0] <= 64);
    c.values[0] = vals;
    char path[] = "/tmp/rt_ckpt_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    char err[RT_ERR_LEN];
    assert_int_equal(rt_ckpt_write(path, &c, err), RT_OK);
    assert_int_equal(rt_ckpt_read(path, &back, err), RT_OK);
    assert_int_equal(back.epoch, 4);
    assert_int_equal(back.step, 3);
    /* the values come back; a dataset with the same values fits, one whose
     * categories are the same number but others does not */
    assert_null(back.values[0][0]);
    assert_string_equal(back.values[0][1], "v1");
    assert_null(back.values[1]);
    rt_ds_column col = {.role = RT_ROLE_CATEGORICAL, .vocab_size = c.spec.vocab[0], .vocab = vals};
    snprintf(col.name, sizeof col.name, "%s", c.spec.cat_names[0]);
    rt_dataset ds = {.ncols = 1, .cols = &col};
    assert_int_equal(rt_ckpt_check_values(&back, &ds, err), RT_OK);
    char w7[8] = "w7";
    char *was = vals[7];
    vals[7] = w7;
    assert_int_equal(rt_ckpt_check_values(&back, &ds, err), RT_ERR_INVALID);
    fprintf(stderr, "other values: %s\n", err);
    assert_non_null(strstr(err, "the dataset's value #7 is 'w7', the model's 'v7'"));
    vals[7] = was;
    assert_int_equal(back.best_epoch, 3);
    assert_true(back.best_val_loss == 0.125 && back.max_label == 41551);
    assert_string_equal(back.cont_names[1], "trend");
    assert_string_equal(back.spec.cat_names[0], "c0");
    assert_int_equal(back.nparams, c.nparams);
    assert_memory_equal(back.params, c.params, (size_t)c.nparams * 4);
    assert_memory_equal(back.adam_m, c.adam_m, (size_t)c.nparams * 4);
    assert_memory_equal(back.adam_v, c.adam_v, (size_t)c.nparams * 4);
    assert_memory_equal(back.buffers, c.buffers, (size_t)c.nbuffers * 4);
    assert_int_equal(rt_ckpt_compatible(&back, &c.spec, err), RT_OK);
    /* loading it into a fresh model gives the same state */
    assert_int_equal(rt_ckpt_to_model(&back, m, err), RT_OK);
    assert_int_equal(rt_model_step(m), 3);
    /* another model is refused, with the difference named */
    rt_model_spec other = c.spec;
    other.hidden[0] = 128;
    assert_int_equal(rt_ckpt_compatible(&back, &other, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "hidden layer 1 has 64 units, the job's 128"));
    other = c.spec;
    other.vocab[0] = 51;
    assert_int_equal(rt_ckpt_compatible(&back, &other, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "c0 with 50 values"));
    /* a header whose tensor counts are not the model's (a crafted file with
     * a matching body passes the size and CRC checks): refused, not over-read */
    back.nparams += 1000;
    float *big = calloc((size_t)back.nparams, 4);
    free(back.params);
    back.params = big;
    assert_int_equal(rt_ckpt_to_model(&back, m, err), RT_ERR_CORRUPT);
    assert_non_null(strstr(err, "not written for this model"));
    back.nparams -= 1000;
    back.nbuffers += 1;
    assert_int_equal(rt_ckpt_to_model(&back, m, err), RT_ERR_CORRUPT);
    back.nbuffers -= 1;
    rt_ckpt_free(&back);

    /* damage: cut short anywhere, a byte flipped anywhere, not a checkpoint */
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(rt_read_file(path, 1 << 30, &data, &len, err), RT_OK);
    for (size_t cut = 0; cut < len; cut += (cut < 64 ? 1 : 37)) {
        assert_int_equal(rt_ckpt_parse(data, cut, "x.ckpt", &back, err), RT_ERR_INVALID);
        assert_null(back.params);
    }
    assert_int_equal(rt_ckpt_parse(data, len - 100, "x.ckpt", &back, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "truncated"));
    for (size_t i = 8; i < len - 8; i += 7) {
        data[i] ^= 0x01;
        rt_status st = rt_ckpt_parse(data, len, "x.ckpt", &back, err);
        data[i] ^= 0x01;
        if (st == RT_OK)
            fail_msg("a flipped bit at %zu of %zu went unnoticed", i, len);
        assert_non_null(strstr(err, "x.ckpt"));
    }
    data[len / 2] ^= 0x40;
    assert_int_equal(rt_ckpt_parse(data, len, "x.ckpt", &back, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "CRC mismatch"));
    assert_non_null(strstr(err, "was not loaded"));
    assert_int_equal(rt_ckpt_parse("hello world, not a checkpoint", 29, "x.ckpt", &back, err),
                     RT_ERR_INVALID);
    assert_non_null(strstr(err, "not a ringtrain checkpoint"));
    assert_int_equal(rt_ckpt_read("/nonexistent/last.ckpt", &back, err), RT_ERR_NOTFOUND);
    free(data);
    unlink(path);
    rt_ckpt_free(&c);
    rt_model_destroy(m);
    rt_kctx_destroy(ctx);
}

static void test_shuffle(void **state)
{
    (void)state;
    enum { N = 1000 };
    int64_t a[N], b[N], c[N], d[N];
    rt_shuffle(a, N, 42, 1, 0);
    rt_shuffle(b, N, 42, 1, 0);
    rt_shuffle(c, N, 42, 2, 0);
    rt_shuffle(d, N, 42, 1, 1);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
    assert_memory_not_equal(a, d, sizeof a);
    char seen[N] = {0};
    for (int i = 0; i < N; i++) {
        assert_true(a[i] >= 0 && a[i] < N && !seen[a[i]]);
        seen[a[i]] = 1;
    }
    int64_t one[1];
    rt_shuffle(one, 1, 1, 1, 0);
    assert_int_equal(one[0], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_parallel_equivalence),
        cmocka_unit_test(test_sync_batch_norm),
        cmocka_unit_test(test_checkpoint),
        cmocka_unit_test(test_shuffle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
