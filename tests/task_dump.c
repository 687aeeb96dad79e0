/* task_dump.c — the task's numbers for task_parity.py to check against
 * PyTorch: every loss (rt_k_loss, CPU) on random outputs, labels, sample
 * and class weights (its sum, weight and gradient), a few steps of every
 * optimizer (rt_k_optim, with weight decay, momentum, Nesterov and
 * clipping) and the learning rate of every schedule (rt_lr_at, the
 * plateau through rt_monitor), as one JSON document on stdout.
 *
 *     task_dump [SEED]     (the same seed, the same numbers) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_kernels.h"
#include "trainer.h"

static uint64_t rng_state;
static double uni(void) /* splitmix64: [0, 1) */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}
static float range(double lo, double hi) { return (float)(lo + (hi - lo) * uni()); }

static void floats(const char *key, const float *p, int64_t n, bool comma)
{
    printf("\"%s\":[", key);
    for (int64_t i = 0; i < n; i++)
        printf("%s%.9g", i ? "," : "", (double)p[i]);
    printf("]%s", comma ? "," : "");
}

/* ---- losses -------------------------------------------------------------------- */

static void dump_loss(rt_kctx *ctx, rt_loss kind, int K, float delta, float s, bool weights,
                      bool class_weights, bool comma)
{
    const int64_t n = 37;
    float z[37 * 8], dz[37 * 8], y[37], w[37], cw[8];
    const int classes = kind == RT_LOSS_BCE ? 2 : kind == RT_LOSS_CE ? K : 0;
    for (int64_t i = 0; i < n; i++) {
        for (int k = 0; k < K; k++)
            z[i * K + k] = range(-3, 3);
        y[i] = classes ? (float)(int)(uni() * classes)
             : kind == RT_LOSS_POISSON ? (float)(int)(uni() * 6) : range(-3, 3);
        w[i] = weights ? range(0, 3) : 1.0f;
    }
    for (int k = 0; k < 8; k++)
        cw[k] = range(0.2, 4);
    rt_loss_desc d = {.kind = kind,
                      .K = K,
                      .huber_delta = delta,
                      .smoothing = s,
                      .class_w = class_weights ? cw : NULL};
    double acc[2] = {0, 0};
    rt_k_loss(ctx, &d, rt_vf32(z, n, K, K, RT_DEVICE_CPU), y, weights ? w : NULL, NULL,
              rt_vf32(dz, n, K, K, RT_DEVICE_CPU), acc);
    printf("{\"loss\":\"%s\",\"K\":%d,\"delta\":%.9g,\"smoothing\":%.9g,", rt_loss_names[kind], K,
           (double)delta, (double)s);
    floats("z", z, n * K, true);
    floats("y", y, n, true);
    if (weights)
        floats("w", w, n, true);
    if (class_weights)
        floats("class_w", cw, classes, true);
    floats("dz", dz, n * K, true);
    printf("\"sum\":%.17g,\"wsum\":%.17g}%s\n", acc[0], acc[1], comma ? "," : "");
}

/* ---- optimizers ------------------------------------------------------------------- */

static void dump_optim(rt_kctx *ctx, rt_optim kind, float lr, float eps, float wd, float mom,
                       int nesterov, float clip, float l2, bool comma)
{
    enum { N = 60, STEPS = 5 };
    rt_adam_seg segs[3] = {{0, 25, l2, 1}, {25, 10, 0, 0}, {35, 25, l2, 1}};
    rt_adam_hp hp = {.lr = lr, .beta1 = 0.9f, .beta2 = 0.999f, .eps = eps, .grad_scale = 0.5f,
                     .kind = kind, .weight_decay = wd, .momentum = mom, .nesterov = nesterov,
                     .clip_norm = clip};
    float p[N], g[N], m[N] = {0}, v[N] = {0};
    for (int i = 0; i < N; i++)
        p[i] = range(-1, 1);
    printf("{\"optimizer\":\"%s\",\"lr\":%.9g,\"eps\":%.9g,\"weight_decay\":%.9g,"
           "\"momentum\":%.9g,\"nesterov\":%d,\"clip_norm\":%.9g,\"l2\":%.9g,"
           "\"grad_scale\":0.5,\"decay\":[[0,25],[35,60]],",
           rt_optim_names[kind], (double)lr, (double)eps, (double)wd, (double)mom, nesterov,
           (double)clip, (double)l2);
    floats("p0", p, N, true);
    printf("\"steps\":[");
    int64_t step = 0;
    for (int t = 0; t < STEPS; t++) {
        for (int i = 0; i < N; i++)
            g[i] = range(-2, 2);
        double gsq;
        rt_k_sqnorm(ctx, g, N, &gsq);
        rt_k_optim(ctx, p, g, m, v, N, segs, 3, &hp, &step, &gsq);
        printf("%s{", t ? "," : "");
        floats("g", g, N, true);
        floats("p", p, N, false);
        printf("}");
    }
    printf("]}%s\n", comma ? "," : "");
}

/* ---- schedules ------------------------------------------------------------------------ */

static void dump_schedule(const char *name, rt_job_cfg c, bool comma)
{
    const int64_t steps = 5;
    printf("{\"schedule\":\"%s\",\"lr\":%.17g,\"lr_min\":%.17g,\"epochs\":%lld,\"steps\":%lld,"
           "\"gamma\":%.17g,\"step_epochs\":%lld,\"pct_start\":%.17g,\"div_factor\":%.17g,"
           "\"final_div_factor\":%.17g,\"patience\":%lld,\"min_delta\":%.17g,\"rates\":[",
           name, c.learning_rate, c.lr_min, (long long)c.epochs, (long long)steps, c.lr_gamma,
           (long long)c.lr_step_epochs, c.lr_pct_start, c.lr_div_factor, c.lr_final_div_factor,
           (long long)c.lr_patience, c.min_delta);
    /* the plateau's monitored values: improving, then stalling, then noise */
    static const double vals[] = {5, 4, 4.5, 4.2, 3.9, 3.95, 3.95, 4, 3.85, 3.9, 3.9, 3.9};
    rt_monitor mon;
    rt_monitor_init(&mon, "val_loss", false);
    for (int64_t e = 1; e <= c.epochs; e++) {
        for (int64_t k = 0; k < steps; k++)
            printf("%s%.17g", e == 1 && k == 0 ? "" : ",", rt_lr_at(&c, 1, steps, e, k, mon.lr_factor));
        rt_monitor_update(&mon, &c, e, vals[(e - 1) % 12]);
    }
    printf("],\"values\":[");
    for (int i = 0; i < 12; i++)
        printf("%s%.17g", i ? "," : "", vals[i]);
    printf("]}%s\n", comma ? "," : "");
}

int main(int argc, char **argv)
{
    rng_state = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    rt_kctx *ctx;
    char err[RT_ERR_LEN];
    if (rt_kctx_create(RT_DEVICE_CPU, 1, &ctx, err) != RT_OK) {
        fprintf(stderr, "task_dump: %s\n", err);
        return 1;
    }
    printf("{\"losses\":[\n");
    dump_loss(ctx, RT_LOSS_MAE, 1, 0, 0, true, false, true);
    dump_loss(ctx, RT_LOSS_MSE, 1, 0, 0, true, false, true);
    dump_loss(ctx, RT_LOSS_HUBER, 1, 1.0f, 0, false, false, true);
    dump_loss(ctx, RT_LOSS_HUBER, 1, 0.5f, 0, true, false, true);
    dump_loss(ctx, RT_LOSS_POISSON, 1, 0, 0, true, false, true);
    dump_loss(ctx, RT_LOSS_BCE, 1, 0, 0, false, false, true);
    dump_loss(ctx, RT_LOSS_BCE, 1, 0, 0, true, true, true);
    dump_loss(ctx, RT_LOSS_BCE, 1, 0, 0.1f, false, false, true);
    dump_loss(ctx, RT_LOSS_CE, 6, 0, 0, false, false, true);
    dump_loss(ctx, RT_LOSS_CE, 6, 0, 0, false, true, true);
    dump_loss(ctx, RT_LOSS_CE, 6, 0, 0.1f, false, true, true);
    dump_loss(ctx, RT_LOSS_CE, 3, 0, 0.2f, true, true, false);
    printf("],\"optimizers\":[\n");
    dump_optim(ctx, RT_OPTIM_ADAM, 0.01f, 1e-8f, 0, 0, 0, 0, 0, true);
    dump_optim(ctx, RT_OPTIM_ADAM, 0.01f, 1e-8f, 0, 0, 0, 0, 1e-2f, true);
    dump_optim(ctx, RT_OPTIM_ADAM, 0.01f, 1e-3f, 0, 0, 0, 0, 0, true); /* Keras' eps */
    dump_optim(ctx, RT_OPTIM_ADAM, 0.01f, 1e-8f, 0.05f, 0, 0, 0, 0, true); /* Adam's wd */
    dump_optim(ctx, RT_OPTIM_ADAM, 0.01f, 1e-8f, 0.05f, 0, 0, 0, 1e-2f, true);
    dump_optim(ctx, RT_OPTIM_ADAMW, 0.01f, 1e-8f, 0.05f, 0, 0, 0, 0, true);
    dump_optim(ctx, RT_OPTIM_ADAMW, 0.01f, 1e-8f, 0.05f, 0, 0, 1.5f, 0, true);
    dump_optim(ctx, RT_OPTIM_SGD, 0.05f, 0, 0, 0, 0, 0, 0, true);
    dump_optim(ctx, RT_OPTIM_SGD, 0.05f, 0, 1e-2f, 0.9f, 0, 0, 0, true);
    dump_optim(ctx, RT_OPTIM_SGD, 0.05f, 0, 1e-2f, 0.9f, 1, 0, 0, true);
    dump_optim(ctx, RT_OPTIM_SGD, 0.05f, 0, 0, 0.8f, 1, 0.5f, 0, false);
    printf("],\"schedules\":[\n");
    rt_job_cfg c;
    memset(&c, 0, sizeof c);
    c.learning_rate = 0.01;
    c.epochs = 12;
    c.lr_gamma = 0.5;
    c.lr_step_epochs = 3;
    c.lr_pct_start = 0.3;
    c.lr_div_factor = 25;
    c.lr_final_div_factor = 1e4;
    c.lr_patience = 1;
    c.min_delta = 0.01;
    c.lr_schedule = RT_LR_CONSTANT;
    dump_schedule("constant", c, true);
    c.lr_schedule = RT_LR_COSINE;
    c.lr_min = 1e-4;
    dump_schedule("cosine", c, true);
    c.lr_min = 0;
    c.lr_schedule = RT_LR_STEP;
    dump_schedule("step", c, true);
    c.lr_schedule = RT_LR_EXPONENTIAL;
    c.lr_gamma = 0.8;
    dump_schedule("exponential", c, true);
    c.lr_schedule = RT_LR_ONE_CYCLE;
    dump_schedule("one_cycle", c, true);
    c.lr_schedule = RT_LR_PLATEAU;
    c.lr_gamma = 0.5;
    dump_schedule("plateau", c, false);
    printf("]}\n");
    rt_kctx_destroy(ctx);
    return 0;
}
