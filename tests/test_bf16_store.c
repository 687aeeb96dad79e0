/* test_bf16_store.c — the tensors a bf16 model keeps in bf16
 * (rt_kctx_bf16_store, model_plan_bf16) change nothing but the bytes.
 *
 * With precision = bf16 every GEMM rounds its inputs to bf16; TabM's scaled
 * inputs (x ⊙ r) and its linear layers' output gradients are read by GEMMs
 * alone, so they are stored rounded by the layers that write them.  The
 * same training, with that storage and without it, must give the same
 * parameters, Adam moments and predictions bit for bit — on random TabM
 * networks (both variants, odd member and row counts, so that a GEMM's k
 * ends in half a pair, dropout, batch norm, numeric embeddings) — while
 * FP32 gives others (bf16 ran) and the plan did mark tensors (the test is
 * not empty), and fewer bytes.  Skipped on a CPU without AVX512_BF16
 * (nothing is stored in bf16 there).  And the memory estimate a job is
 * refused by is the allocation, to the byte, for every family. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "model_impl.h"
#include "test_util.h"

#define STEPS 4

static char CAT_NAMES[2][RT_MODEL_NAME_LEN] = {"c0", "c1"};

typedef struct run {
    float *params, *m, *v, *pred;
    size_t P;            /* parameters */
    int marked, gmarked; /* tensors stored in bf16: values, gradients */
    int64_t bytes;       /* the model's device buffers */
} run;

static void run_free(run *r)
{
    free(r->params);
    free(r->m);
    free(r->v);
    free(r->pred);
}

/* A model on a CPU context of this precision, and rt_model_spec_memory
 * (what rt_dp_check_memory refuses a job by) against what it allocated:
 * the same bytes. */
static rt_model *model_on(const rt_model_spec *s, bool bf16, bool store, int64_t n, rt_kctx **ctx,
                          const char *what)
{
    char err[RT_ERR_LEN];
    assert_int_equal(rt_kctx_create(RT_DEVICE_CPU, 2, ctx, err), RT_OK);
    assert_true(rt_kctx_set_bf16(*ctx, bf16));
    rt_kctx_set_bf16_store(*ctx, store);
    rt_model *m;
    if (rt_model_create(s, *ctx, n, &m, err) != RT_OK)
        fail_msg("%s: %s", what, err);
    rt_model_memory mem;
    assert_int_equal(rt_model_spec_memory(s, n, *ctx, &mem, err), RT_OK);
    if (mem.total_bytes != rt_model_device_bytes(m))
        fail_msg("%s%s: estimated %lld bytes, allocated %lld", what, store ? " (bf16 storage)" : "",
                 (long long)mem.total_bytes, (long long)rt_model_device_bytes(m));
    assert_true(mem.param_bytes > 0 && mem.activation_bytes > 0);
    assert_int_equal(mem.arena, rt_model_arena_len(m));
    return m;
}

/* STEPS training steps on one batch, then a prediction */
static run train(const rt_model_spec *s, bool bf16, bool store, int64_t n, const int32_t *cat,
                 const float *cont, const float *label)
{
    rt_kctx *ctx;
    char err[RT_ERR_LEN];
    rt_model *m = model_on(s, bf16, store, n, &ctx, rt_arch_names[s->arch]);
    run r = {.bytes = rt_model_device_bytes(m)};
    for (int t = 0; t < m->ntensors; t++) {
        r.marked += m->tensors[t].bf16;
        r.gmarked += m->tensors[t].gbf16;
    }
    const rt_adam_hp hp = {
        .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-7f, .grad_scale = 1.0f};
    rt_model_set_batch(m, cat, cont, label, n);
    for (int i = 0; i < STEPS; i++)
        rt_model_train_step(m, n, &hp);
    const size_t P = r.P = (size_t)rt_model_num_params(m);
    r.params = malloc((size_t)P * 4), r.m = malloc((size_t)P * 4), r.v = malloc((size_t)P * 4);
    r.pred = malloc((size_t)(n * s->n_out) * 4);
    assert_int_equal(rt_model_get_state(m, r.params, r.m, r.v, NULL, NULL, err), RT_OK);
    rt_model_forward(m, n, false);
    assert_int_equal(rt_model_read_pred(m, r.pred, n, err), RT_OK);
    rt_model_destroy(m);
    rt_kctx_destroy(ctx);
    return r;
}

/* The memory estimate is the allocation (model_on), to the byte: every
 * family, FP32 and, where the CPU has it, bf16's storage. */
static void test_estimate_is_allocation(void **state)
{
    (void)state;
    for (int store = 0; store < (rt_cpu_bf16_kernel() ? 2 : 1); store++)
        for (int a = 0; a < RT_ARCH_COUNT; a++) {
            rt_model_spec s;
            rt_model_spec_defaults(&s);
            s.arch = (rt_arch)a;
            s.n_cat = 2;
            for (int c = 0; c < s.n_cat; c++) {
                s.vocab[c] = 5 + c;
                s.emb_dim[c] = 3;
            }
            s.cat_names = CAT_NAMES;
            s.n_cont = 4;
            s.n_hidden = 2;
            s.hidden[0] = 24;
            s.hidden[1] = 16;
            rt_kctx *ctx;
            rt_model_destroy(model_on(&s, store, store, 77, &ctx, rt_arch_names[a]));
            rt_kctx_destroy(ctx);
        }
}

static void test_same_bits(void **state)
{
    (void)state;
    if (!rt_cpu_bf16_kernel()) {
        printf("skip: this CPU has no AVX512_BF16 (nothing is stored in bf16)\n");
        return;
    }
    tu_rng g = tu_rng_make(48);
    for (int rep = 0; rep < 4; rep++) {
        rt_model_spec s;
        rt_model_spec_defaults(&s);
        s.arch = RT_ARCH_TABM;
        s.n_cat = 2;
        for (int c = 0; c < s.n_cat; c++) {
            s.vocab[c] = (int32_t)tu_int(&g, 2, 9);
            s.emb_dim[c] = (int32_t)tu_int(&g, 1, 5);
        }
        s.cat_names = CAT_NAMES;
        s.n_cont = (int)tu_int(&g, 3, 9);
        s.seed = (uint64_t)tu_int(&g, 1, 1 << 30);
        s.variant = rep == 1 ? RT_TABM_MINI : RT_TABM_FULL;
        s.tabm_init = rep != 2;
        s.ensemble_size = rep == 0 ? 3 : (int)tu_int(&g, 2, 8);
        s.blocks = rep == 1 ? 2 : 3;
        s.width = (int)tu_int(&g, 20, 70);
        for (int b = 0; b < s.blocks; b++)
            s.dropout[b] = rep == 3 ? 0.0f : 0.15f;
        s.cont_norm = rep == 3 ? RT_CONT_BATCHNORM : RT_CONT_STANDARDIZE;
        s.numeric_embedding = rep == 2 ? RT_NUM_EMB_PERIODIC : RT_NUM_EMB_NONE;
        s.frequencies = 4;
        s.d_embedding = 5;
        const int64_t n = rep == 0 ? 37 : tu_int(&g, 20, 90);
        int32_t *cat = malloc((size_t)(n * s.n_cat) * 4);
        float *cont = malloc((size_t)(n * s.n_cont) * 4), *label = malloc((size_t)n * 4);
        for (int64_t i = 0; i < n; i++) {
            for (int c = 0; c < s.n_cat; c++)
                cat[i * s.n_cat + c] = (int32_t)tu_int(&g, 0, s.vocab[c] - 1);
            for (int f = 0; f < s.n_cont; f++)
                cont[i * s.n_cont + f] = (float)tu_range(&g, -3, 3);
            label[i] = (float)tu_range(&g, 1, 9);
        }
        run a = train(&s, true, true, n, cat, cont, label);
        run b = train(&s, true, false, n, cat, cont, label);
        run c = train(&s, false, true, n, cat, cont, label);
        /* full: each block's x ⊙ r and its linear's output gradient; mini:
         * the one adapter's output */
        assert_int_equal(a.marked, s.variant == RT_TABM_MINI ? 1 : s.blocks);
        assert_int_equal(a.gmarked, s.variant == RT_TABM_MINI ? 0 : s.blocks);
        assert_int_equal(b.marked + b.gmarked + c.marked + c.gmarked, 0);
        assert_true(a.bytes < b.bytes && b.bytes == c.bytes);
        const size_t P = a.P;
        if (memcmp(a.params, b.params, P * 4) || memcmp(a.m, b.m, P * 4) || memcmp(a.v, b.v, P * 4))
            fail_msg("tabm rep %d (%s, k=%d, width %d, %lld rows): the state after %d bf16 steps "
                     "differs with the bf16 tensors",
                     rep, rt_tabm_variant_names[s.variant], s.ensemble_size, s.width, (long long)n,
                     STEPS);
        assert_memory_equal(a.pred, b.pred, (size_t)(n * s.n_out) * 4);
        assert_true(memcmp(a.params, c.params, P * 4) != 0); /* bf16 ran */
        run_free(&a);
        run_free(&b);
        run_free(&c);
        free(cat);
        free(cont);
        free(label);
    }
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimate_is_allocation),
        cmocka_unit_test(test_same_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
