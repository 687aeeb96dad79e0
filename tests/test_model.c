/* test_model.c — the model runtime on the CPU: parameter count of the
 * Rossmann model, the whole model's gradient against central finite
 * differences of an independent double-precision forward, gradient-hook
 * coverage, bitwise determinism of a fixed-seed run and across thread
 * counts, state round trip, that training actually reduces the loss, and
 * the record of the hyperparameters of rt_model_keys.h. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_json.h"
#include "rt_model.h"
#include "rt_rng.h"
#include "test_util.h"

static rt_kctx *ctx;

static int setup(void **state)
{
    (void)state;
    return rt_kctx_create(RT_DEVICE_CPU, 2, &ctx, NULL) == RT_OK ? 0 : -1;
}
static int teardown(void **state)
{
    (void)state;
    rt_kctx_destroy(ctx);
    return 0;
}

static void test_rossmann_param_count(void **state)
{
    (void)state;
    rt_model_spec s;
    rt_model_spec_defaults(&s);
    /* 18 categorical columns with realistic vocabulary sizes, 18 continuous */
    const int32_t vocab[18] = {1116, 13, 8, 4, 13, 32, 53, 26, 27, 5, 4, 4, 24, 9, 22, 3, 5, 3};
    s.n_cat = 18;
    int64_t sum_v = 0;
    for (int c = 0; c < 18; c++) {
        s.vocab[c] = vocab[c];
        sum_v += vocab[c];
    }
    s.n_cont = 18;
    s.head_scale = (float)(log(41551.0) * 1.2);
    rt_model *m;
    char err[RT_ERR_LEN];
    assert_int_equal(rt_model_create(&s, ctx, 8, &m, err), RT_OK);
    const int64_t d = 10, nc = 18;
    int64_t formula = sum_v * d + 4 * nc + (198 * 1000 + 1000) + 2 * (1000 * 1000 + 1000) +
                      (1000 * 500 + 500) + (500 + 1);
    assert_int_equal(rt_model_num_params(m) + rt_model_num_buffers(m), formula);
    assert_int_equal(rt_model_num_buffers(m), 2 * nc);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    rt_model_summary(m, f);
    rt_model_summary_tensors(m, f);
    fclose(f);
    char want[64];
    snprintf(want, sizeof want, "total params:         %lld\n", (long long)formula);
    assert_non_null(strstr(text, want));
    snprintf(want, sizeof want, "non-trainable params: %lld\n", (long long)(2 * nc));
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, "dense_1/kernel"));
    assert_non_null(strstr(text, "Dense+relu"));
    free(text);
    rt_model_destroy(m);

    /* bad specs are refused with a reason */
    s.hidden[1] = 0;
    assert_int_equal(rt_model_create(&s, ctx, 8, &m, err), RT_ERR_INVALID);
    assert_string_equal(err, "hidden layer 2 has 0 units (1 to 65536)");
}

/* ---- an independent double-precision forward of the whole model ---------- */

typedef struct refnet {
    const rt_model_spec *s;
    const rt_param_info *info;
    int ninfo;
    int64_t n;
    const int32_t *cat;
    const float *cont, *label;
    const double *mask; /* dropout multiplier per element of the last hidden layer */
} refnet;

static int64_t off_of(const refnet *r, const char *name)
{
    for (int i = 0; i < r->ninfo; i++)
        if (r->info[i].trainable && strcmp(r->info[i].name, name) == 0)
            return r->info[i].pos; /* the reference works on the packed state */
    fail_msg("no tensor %s", name);
    return -1;
}

/* mean |pred - label| with parameters P */
static double ref_loss(const refnet *r, const double *P)
{
    const rt_model_spec *s = r->s;
    const int64_t n = r->n, d = s->emb_dim[0], F0 = (int64_t)s->n_cat * d + s->n_cont;
    double *a = calloc((size_t)(n * 2048), sizeof(double));
    double *b = calloc((size_t)(n * 2048), sizeof(double));
    /* embeddings */
    int64_t base = 0;
    for (int c = 0; c < s->n_cat; c++) {
        char nm[64];
        snprintf(nm, sizeof nm, "emb_%d", c);
        int64_t off = off_of(r, nm);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < d; j++)
                a[i * F0 + c * d + j] = P[off + r->cat[i * s->n_cat + c] * d + j];
        base += s->vocab[c];
    }
    /* batch norm with batch statistics */
    int64_t og = off_of(r, "batch_norm/gamma"), ob = off_of(r, "batch_norm/beta");
    for (int f = 0; f < s->n_cont; f++) {
        double mu = 0, var = 0;
        for (int64_t i = 0; i < n; i++)
            mu += r->cont[i * s->n_cont + f];
        mu /= (double)n;
        for (int64_t i = 0; i < n; i++)
            var += (r->cont[i * s->n_cont + f] - mu) * (r->cont[i * s->n_cont + f] - mu);
        var /= (double)n;
        for (int64_t i = 0; i < n; i++)
            a[i * F0 + s->n_cat * d + f] =
                P[og + f] * (r->cont[i * s->n_cont + f] - mu) / sqrt(var + s->bn_eps) + P[ob + f];
    }
    /* dense layers */
    int64_t in = F0;
    for (int l = 0; l <= s->n_hidden; l++) {
        bool last = l == s->n_hidden;
        int64_t out = last ? 1 : s->hidden[l];
        char nw[64], nb[64];
        if (last) {
            snprintf(nw, sizeof nw, "output/kernel");
            snprintf(nb, sizeof nb, "output/bias");
        } else {
            snprintf(nw, sizeof nw, "dense_%d/kernel", l + 1);
            snprintf(nb, sizeof nb, "dense_%d/bias", l + 1);
        }
        int64_t ow = off_of(r, nw), obb = off_of(r, nb);
        for (int64_t i = 0; i < n; i++)
            for (int64_t o = 0; o < out; o++) {
                double z = P[obb + o];
                for (int64_t k = 0; k < in; k++)
                    z += a[i * in + k] * P[ow + o * in + k];
                b[i * out + o] = last ? z : (z > 0 ? z : 0);
            }
        if (l == s->n_hidden - 1 && r->mask)
            for (int64_t e = 0; e < n * out; e++)
                b[e] *= r->mask[e];
        double *t = a;
        a = b;
        b = t;
        in = out;
    }
    double loss = 0;
    for (int64_t i = 0; i < n; i++) {
        double pred = s->head_scale / (1 + exp(-a[i]));
        loss += fabs(pred - r->label[i]);
    }
    free(a);
    free(b);
    return loss / (double)n;
}

typedef struct hook_log {
    int64_t off[32], cnt[32];
    int n;
} hook_log;

static void record_hook(void *user, int64_t off, int64_t count)
{
    hook_log *h = user;
    h->off[h->n] = off;
    h->cnt[h->n] = count;
    h->n++;
}

static void make_small_spec(rt_model_spec *s, tu_rng *g, float dropout)
{
    rt_model_spec_defaults(s);
    s->n_cat = (int)tu_int(g, 1, 4);
    for (int c = 0; c < s->n_cat; c++)
        s->vocab[c] = (int32_t)tu_int(g, 2, 7);
    rt_model_spec_set_emb_dim(s, (int)tu_int(g, 1, 4));
    s->n_cont = (int)tu_int(g, 1, 5);
    s->n_hidden = (int)tu_int(g, 1, 3);
    for (int l = 0; l < s->n_hidden; l++)
        s->hidden[l] = (int)tu_int(g, 3, 12);
    s->dropout[s->n_hidden - 1] = dropout;
    s->head_scale = 10.0f;
    s->seed = (uint64_t)tu_int(g, 1, 1 << 30);
}

static void fill_batch(rt_model *m, tu_rng *g, int64_t n, int32_t *cat, float *cont, float *label)
{
    const rt_model_spec *s = rt_model_get_spec(m);
    for (int64_t i = 0; i < n; i++) {
        for (int c = 0; c < s->n_cat; c++)
            cat[i * s->n_cat + c] = (int32_t)tu_int(g, 0, s->vocab[c] - 1);
        for (int f = 0; f < s->n_cont; f++)
            cont[i * s->n_cont + f] = (float)tu_range(g, -3, 3) * (float)(f + 1);
        label[i] = (float)tu_range(g, 0.5, 9.5);
    }
    rt_model_set_batch(m, cat, cont, label, n);
}

static void test_whole_model_gradient(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(11);
    for (int rep = 0; rep < 3; rep++) {
        rt_model_spec s;
        make_small_spec(&s, &g, rep == 2 ? 0.4f : 0.0f);
        const int64_t n = tu_int(&g, 4, 24);
        rt_model *m;
        char err[RT_ERR_LEN];
        assert_int_equal(rt_model_create(&s, ctx, n, &m, err), RT_OK);
        int32_t *cat = calloc((size_t)(n * s.n_cat), 4);
        float *cont = calloc((size_t)(n * s.n_cont), 4), *label = calloc((size_t)n, 4);
        fill_batch(m, &g, n, cat, cont, label);
        /* Biases start at exactly 0, so a row whose previous layer is all
         * dead sits exactly on the ReLU kink, where a central difference
         * averages the two one-sided slopes.  Random biases move every
         * pre-activation off the kink. */
        {
            int ni;
            const rt_param_info *t = rt_model_param_table(m, &ni);
            float *p0 = rt_model_params(m); /* host memory on the CPU */
            for (int k = 0; k < ni; k++)
                if (t[k].trainable && strstr(t[k].name, "/bias"))
                    tu_fill(&g, p0 + t[k].off, (size_t)t[k].count, -0.3, 0.3);
        }

        rt_model_forward(m, n, true);
        rt_model_loss(m, n, true);
        hook_log hl = {0};
        rt_model_backward(m, n, record_hook, &hl);
        const int64_t P = rt_model_num_params(m);
        /* hooks: from the end of the arena to the start, covering it once */
        int64_t expect_end = rt_model_arena_len(m);
        for (int i = 0; i < hl.n; i++) {
            assert_int_equal(hl.off[i] + hl.cnt[i], expect_end);
            expect_end = hl.off[i];
        }
        assert_int_equal(expect_end, 0);
        assert_int_equal(hl.n, s.n_hidden + 3); /* + output, batch norm, embeddings */

        float *grad = rt_model_grads(m);
        double *Pd = calloc((size_t)P, sizeof(double));
        float *pf = calloc((size_t)P, 4);
        assert_int_equal(rt_model_get_state(m, pf, NULL, NULL, NULL, NULL, err), RT_OK);
        for (int64_t i = 0; i < P; i++)
            Pd[i] = pf[i];
        int ninfo;
        refnet r = {&s, rt_model_param_table(m, &ninfo), 0, n, cat, cont, label, NULL};
        r.ninfo = ninfo;
        const int L = s.n_hidden;
        double *mask = NULL;
        const float rate = s.dropout[L - 1];
        if (rate > 0) {
            /* the same mask the model drew: step 0, the model's seed */
            mask = calloc((size_t)(n * s.hidden[L - 1]), sizeof(double));
            for (int64_t e = 0; e < n * s.hidden[L - 1]; e++)
                mask[e] = rt_rng_uniform(s.seed, RT_MODEL_DROPOUT_STREAM, 0, (uint64_t)e) >= rate
                              ? 1.0 / (1.0 - rate) : 0.0;
            r.mask = mask;
        }
        /* the model's own loss agrees with the reference */
        double met[RT_MODEL_NMETRICS];
        assert_int_equal(rt_model_metrics_read(m, met, err), RT_OK);
        double ref = ref_loss(&r, Pd);
        if (!(fabs(met[0] / met[1] - ref) <= 1e-5 * (1 + ref)))
            fail_msg("model loss %.9g, reference %.9g", met[0] / met[1], ref);

        double *fd = calloc((size_t)P, sizeof(double)), *an = calloc((size_t)P, sizeof(double));
        for (int t = 0; t < ninfo; t++) /* the arena's gradients, packed */
            for (int64_t e = 0; r.info[t].trainable && e < r.info[t].count; e++)
                an[r.info[t].pos + e] = grad[r.info[t].off + e];
        for (int64_t i = 0; i < P; i++) {
            double sv = Pd[i], h = 1e-6;
            Pd[i] = sv + h;
            double lp = ref_loss(&r, Pd);
            Pd[i] = sv - h;
            double lm = ref_loss(&r, Pd);
            Pd[i] = sv;
            fd[i] = (lp - lm) / (2 * h);
        }
        /* float backward of an O(1) loss; MAE gradients are O(1/n) per row */
        assert_true(tu_close_d("whole-model gradient", an, fd, (size_t)P, 2e-4, 3e-3));
        free(cat); free(cont); free(label); free(Pd); free(pf); free(fd); free(an); free(mask);
        rt_model_destroy(m);
    }
}

/* Train N steps from a fixed seed on fixed data; return the final params. */
static float *run_fixed(int threads, int64_t *np_out)
{
    rt_kctx *c;
    assert_int_equal(rt_kctx_create(RT_DEVICE_CPU, threads, &c, NULL), RT_OK);
    rt_model_spec s;
    rt_model_spec_defaults(&s);
    s.n_cat = 3;
    s.vocab[0] = 50;
    s.vocab[1] = 7;
    s.vocab[2] = 12;
    s.n_cont = 6;
    s.hidden[0] = 64;
    s.hidden[1] = 64;
    s.hidden[2] = 32;
    s.hidden[3] = 16;
    s.head_scale = 12.0f;
    s.seed = 1234;
    rt_model *m;
    const int64_t n = 256;
    assert_int_equal(rt_model_create(&s, c, n, &m, NULL), RT_OK);
    tu_rng g = {987654321}; /* fixed data, independent of the test seed */
    int32_t *cat = calloc((size_t)(n * 3), 4);
    float *cont = calloc((size_t)(n * 6), 4), *label = calloc((size_t)n, 4);
    rt_adam_hp hp = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-3f, .grad_scale = 1.0f};
    for (int step = 0; step < 8; step++) {
        fill_batch(m, &g, n, cat, cont, label);
        rt_model_train_step(m, n, &hp);
    }
    int64_t P = rt_model_num_params(m);
    float *p = malloc((size_t)P * 4);
    assert_int_equal(rt_model_get_state(m, p, NULL, NULL, NULL, NULL, NULL), RT_OK);
    *np_out = P;
    free(cat); free(cont); free(label);
    rt_model_destroy(m);
    rt_kctx_destroy(c);
    return p;
}

static void test_determinism(void **state)
{
    (void)state;
    int64_t n1, n2;
    float *a = run_fixed(2, &n1), *b = run_fixed(2, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, (size_t)n1 * 4);
    free(a);
    free(b);
}

/* The training step on 1 and on 2 threads: the same bits after every step —
 * parameters, moments, moving statistics, step — with dropout, L2, batch
 * norm and without (empty tensors at the first kernel's offset), batches
 * above and below the GEMM's k-block (256) and an empty one. */
static void threads_case(rt_model_spec s)
{
    const int64_t maxb = 300, sizes[] = {300, 7, 0, 64, 257, 1};
    const int nsteps = (int)(sizeof sizes / sizeof *sizes);
    int32_t *cat = calloc((size_t)(maxb * s.n_cat), 4);
    float *cont = calloc((size_t)(maxb * s.n_cont), 4), *label = calloc((size_t)maxb, 4);
    rt_kctx *c[2];
    rt_model *m[2];
    for (int t = 0; t < 2; t++) {
        assert_int_equal(rt_kctx_create(RT_DEVICE_CPU, t + 1, &c[t], NULL), RT_OK);
        assert_int_equal(rt_model_create(&s, c[t], maxb, &m[t], NULL), RT_OK);
    }
    const int64_t P = rt_model_num_params(m[0]), NB = rt_model_num_buffers(m[0]);
    const size_t all = (size_t)(3 * P + NB);
    float *st[2] = {malloc(all * 4), malloc(all * 4)};
    tu_rng data = tu_rng_make(32);
    for (int step = 0; step < nsteps; step++) {
        rt_adam_hp hp = {.lr = 1e-3f * (float)(step + 1), .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-3f, .grad_scale = 1.0f};
        const int64_t n = sizes[step];
        fill_batch(m[0], &data, n, cat, cont, label);
        rt_model_set_batch(m[1], cat, cont, label, n);
        for (int t = 0; t < 2; t++) {
            rt_model_train_step(m[t], n, &hp);
            int64_t at = -1;
            float *d = st[t];
            assert_int_equal(rt_model_get_state(m[t], d, d + P, d + 2 * P, d + 3 * P, &at, NULL),
                             RT_OK);
            assert_int_equal(at, step + 1);
        }
        for (size_t i = 0; i < all; i++)
            if (memcmp(&st[0][i], &st[1][i], 4) != 0)
                fail_msg("step %d (batch %lld): state value %zu: 1 thread %.9g, 2 threads %.9g",
                         step, (long long)n, i, (double)st[0][i], (double)st[1][i]);
    }
    for (int t = 0; t < 2; t++) {
        rt_model_destroy(m[t]);
        rt_kctx_destroy(c[t]);
        free(st[t]);
    }
    free(cat); free(cont); free(label);
}

static void test_threads_agree(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(31);
    rt_model_spec s;
    make_small_spec(&s, &g, 0.2f);
    s.l2 = 1e-3f;
    for (int l = 0; l < s.n_hidden; l++)
        s.hidden[l] = (int)tu_int(&g, 20, 90);
    threads_case(s);
    s.n_cont = 0;
    threads_case(s);
}

static void test_state_roundtrip_and_eval(void **state)
{
    (void)state;
    tu_rng g = tu_rng_make(12);
    rt_model_spec s;
    make_small_spec(&s, &g, 0.5f);
    const int64_t n = 32;
    rt_model *a, *b;
    assert_int_equal(rt_model_create(&s, ctx, n, &a, NULL), RT_OK);
    const uint64_t seed_a = s.seed;
    s.seed += 1; /* different initial values */
    assert_int_equal(rt_model_create(&s, ctx, n, &b, NULL), RT_OK);
    rt_model_set_dropout_seed(b, seed_a); /* the masks come from config, not state */
    int32_t *cat = calloc((size_t)(n * s.n_cat), 4);
    float *cont = calloc((size_t)(n * s.n_cont), 4), *label = calloc((size_t)n, 4);
    rt_adam_hp hp = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-3f, .grad_scale = 1.0f};
    for (int i = 0; i < 3; i++) {
        fill_batch(a, &g, n, cat, cont, label);
        rt_model_train_step(a, n, &hp);
    }
    int64_t P = rt_model_num_params(a), NB = rt_model_num_buffers(a), step;
    float *p = malloc((size_t)P * 4), *mm = malloc((size_t)P * 4), *vv = malloc((size_t)P * 4);
    float *bf = malloc((size_t)NB * 4 + 4);
    assert_int_equal(rt_model_get_state(a, p, mm, vv, bf, &step, NULL), RT_OK);
    assert_int_equal(step, 3);
    assert_int_equal(rt_model_set_state(b, p, mm, vv, bf, &step, NULL), RT_OK);
    /* eval mode: no dropout, moving statistics: identical predictions, and
     * twice the same */
    rt_model_set_batch(a, cat, cont, label, n);
    rt_model_set_batch(b, cat, cont, label, n);
    float *pa = malloc((size_t)n * 4), *pb = malloc((size_t)n * 4), *pa2 = malloc((size_t)n * 4);
    rt_model_forward(a, n, false);
    rt_model_read_pred(a, pa, n, NULL);
    rt_model_forward(a, n, false);
    rt_model_read_pred(a, pa2, n, NULL);
    rt_model_forward(b, n, false);
    rt_model_read_pred(b, pb, n, NULL);
    assert_memory_equal(pa, pb, (size_t)n * 4);
    assert_memory_equal(pa, pa2, (size_t)n * 4);
    /* and the next training step is identical too (same step counter) */
    rt_model_train_step(a, n, &hp);
    rt_model_train_step(b, n, &hp);
    float *qa = malloc((size_t)P * 4), *qb = malloc((size_t)P * 4);
    rt_model_get_state(a, qa, NULL, NULL, NULL, NULL, NULL);
    rt_model_get_state(b, qb, NULL, NULL, NULL, NULL, NULL);
    assert_memory_equal(qa, qb, (size_t)P * 4);
    free(cat); free(cont); free(label); free(p); free(mm); free(vv); free(bf);
    free(pa); free(pb); free(pa2); free(qa); free(qb);
    rt_model_destroy(a);
    rt_model_destroy(b);
}

static void test_training_learns(void **state)
{
    (void)state;
    /* label = f(category, continuous) with interactions; MAE must fall well
     * below that of the best constant predictor */
    rt_model_spec s;
    rt_model_spec_defaults(&s);
    s.n_cat = 2;
    s.vocab[0] = 20;
    s.vocab[1] = 7;
    rt_model_spec_set_emb_dim(&s, 4);
    s.n_cont = 2;
    s.hidden[0] = 64;
    s.hidden[1] = 32;
    s.n_hidden = 2;
    s.dropout[1] = 0.1f;
    s.head_scale = 10.0f;
    rt_model *m;
    const int64_t n = 128;
    assert_int_equal(rt_model_create(&s, ctx, n, &m, NULL), RT_OK);
    tu_rng g = tu_rng_make(13);
    int32_t cat[128 * 2];
    float cont[128 * 2], label[128];
    rt_adam_hp hp = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-3f, .grad_scale = 1.0f};
    double first = 0, last = 0;
    for (int step = 0; step < 1200; step++) {
        for (int64_t i = 0; i < n; i++) {
            int a = (int)tu_int(&g, 0, 19), b = (int)tu_int(&g, 0, 6);
            float x0 = (float)tu_range(&g, -1, 1), x1 = (float)tu_range(&g, -1, 1);
            cat[i * 2] = a;
            cat[i * 2 + 1] = b;
            cont[i * 2] = x0;
            cont[i * 2 + 1] = x1;
            label[i] = 5.0f + 0.1f * (float)a + ((a + b) % 3 == 0 ? 1.0f : 0.0f) + 0.5f * x0 * (float)(b % 2);
        }
        rt_model_set_batch(m, cat, cont, label, n);
        rt_model_metrics_reset(m);
        rt_model_train_step(m, n, &hp);
        double met[RT_MODEL_NMETRICS];
        rt_model_metrics_read(m, met, NULL);
        if (step < 20)
            first += met[0] / met[1] / 20;
        if (step >= 1180)
            last += met[0] / met[1] / 20;
    }
    printf("MAE first 20 steps %.4f, last 20 steps %.4f\n", first, last);
    assert_true(last < 0.3 * first);
    assert_true(last < 0.25); /* the constant predictor's MAE is about 0.7 */
    rt_model_destroy(m);
}

/* rt_model_keys.h's list: each key set off its default is in the spec's
 * record (rt_model_spec_json) and comes back (rt_model_spec_keys_read); a
 * key absent from the record keeps its value; one past a bound is refused
 * naming the key; a record with a key of the wrong type names it. */
#define OFF_I(n, def, lo, hi, fam, help) s.n = (def) == (hi) ? (lo) : (hi);
#define OFF_F(n, def, lo, hi, fam, help) s.n = (float)((def) == (hi) ? (lo) : (hi));
#define OFF_B(n, def, fam, help) s.n = !(def);
#define OFF_E(n, type, list, def, fam, help) s.n = (type)(s.n == 0 ? 1 : 0);
#define BACK_I(n, def, lo, hi, fam, help) \
    assert_int_equal(back.n, s.n);        \
    assert_int_not_equal(back.n, d.n);
#define BACK_F(n, def, lo, hi, fam, help) assert_true(back.n == s.n && back.n != d.n);
#define BACK_B(n, def, fam, help) assert_true(back.n == s.n && back.n != d.n);
#define BACK_E(n, type, list, def, fam, help) BACK_B(n, def, fam, help)
#define KEPT_I(n, def, lo, hi, fam, help) assert_true(back.n == d.n);
#define KEPT_F(n, def, lo, hi, fam, help) assert_true(back.n == d.n);
#define KEPT_B(n, def, fam, help) assert_true(back.n == d.n);
#define KEPT_E(n, type, list, def, fam, help) assert_true(back.n == d.n);
#define PAST_I(n, def, lo, hi, fam, help)                           \
    s = d;                                                          \
    s.n = (int)(hi) + 1;                                            \
    assert_int_equal(rt_model_spec_check(&s, err), RT_ERR_INVALID); \
    assert_non_null(strstr(err, #n));                               \
    checked++;
#define PAST_F(n, def, lo, hi, fam, help)                           \
    s = d;                                                          \
    s.n = (float)(lo)-1.0f;                                         \
    assert_int_equal(rt_model_spec_check(&s, err), RT_ERR_INVALID); \
    assert_non_null(strstr(err, #n));                               \
    checked++;
#define PAST_B(n, def, fam, help)
#define PAST_E(n, type, list, def, fam, help) PAST_I(n, 0, 0, 0 list(RT_NAME_ONE, ) - 1, fam, help)
static void test_spec_keys_record(void **state)
{
    (void)state;
    static rt_model_spec d, s, back;
    rt_model_spec_defaults(&d);
    d.n_cat = 1;
    d.vocab[0] = 5;
    d.n_cont = 3;
    d.head_scale = 2.0f;
    char err[RT_ERR_LEN];
    assert_int_equal(rt_model_spec_check(&d, err), RT_OK);
    s = d;
    RT_MODEL_KEYS(OFF_I, OFF_F, OFF_B, OFF_E)
    rt_jw w;
    rt_jw_init(&w);
    rt_model_spec_json(&s, &w);
    rt_json *rec = NULL;
    assert_int_equal(rt_json_parse(w.buf, w.len, &rec, err), RT_OK);
    back = d;
    assert_null(rt_model_spec_keys_read(&back, rec));
    RT_MODEL_KEYS(BACK_I, BACK_F, BACK_B, BACK_E)
    rt_json_free(rec);
    /* an empty record changes nothing; a wrong type is named */
    assert_int_equal(rt_json_parse("{}", 2, &rec, err), RT_OK);
    back = d;
    assert_null(rt_model_spec_keys_read(&back, rec));
    RT_MODEL_KEYS(KEPT_I, KEPT_F, KEPT_B, KEPT_E)
    rt_json_free(rec);
    const char *bad = "{\"blocks\": 2.5, \"l2\": 0}";
    assert_int_equal(rt_json_parse(bad, strlen(bad), &rec, err), RT_OK);
    assert_string_equal(rt_model_spec_keys_read(&back, rec), "blocks");
    rt_json_free(rec);
    bad = "{\"variant\": \"maxi\"}";
    assert_int_equal(rt_json_parse(bad, strlen(bad), &rec, err), RT_OK);
    assert_string_equal(rt_model_spec_keys_read(&back, rec), "variant");
    rt_json_free(rec);
    rt_jw_free(&w);
    int checked = 0;
    RT_MODEL_KEYS(PAST_I, PAST_F, PAST_B, PAST_E)
    assert_true(checked >= 20);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rossmann_param_count),
        cmocka_unit_test(test_whole_model_gradient),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_threads_agree),
        cmocka_unit_test(test_state_roundtrip_and_eval),
        cmocka_unit_test(test_training_learns),
        cmocka_unit_test(test_spec_keys_record),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
