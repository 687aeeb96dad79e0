/* train_step — samples/s of one training step (forward + backward + Adam) of
 * a model family on the Rossmann columns (18 categorical, 18 continuous),
 * next to the GEMM rate measured in the same run.
 *
 *   train_step [--architecture NAME] [--set model.KEY=VALUE]... [--print-spec]
 *              [--device cpu|cuda] [--threads T] [--batch B] [--seconds S] [--tf32]
 *              [--precision fp32|bf16] [--json]
 *
 * The model is the job file's: its [model] defaults for the family (the
 * Rossmann network by default), changed by --set as a job's; --print-spec
 * prints its spec as JSON (what bench/torch_step.py builds in PyTorch).
 *
 * Without --device/--threads/--batch it runs every configuration: CPU with 1
 * and 2 threads (or the given count) and, when a GPU is present, CUDA, each at
 * batch 100, 1024 and 8192.  GFLOP/s counts the dense layers' GEMM work:
 * 2·B·Σ(in·out) forward and twice that backward (dW and dX, the first layer's
 * dX included since it feeds the embeddings) — 16.19 MFLOP per sample for the
 * Rossmann model.  gemm_peak_gflops is sgemm (cuBLAS on CUDA) on the model's
 * dominant shape B x 1000 x 1000, same threads, the best of a tight loop
 * measured right before (operands warm in cache).  On the CPU the output
 * adds gemm_side: one sgemm before each step over the measuring window, its
 * median — the same conditions as the step's own GEMMs (operands evicted by
 * the step, the machine's drift shared), so ratio_side compares two medians
 * taken side by side; ratio (against the warm best) is the stricter one.
 * --tf32 runs the CUDA GEMMs (model and reference alike) on TF32 tensor
 * cores; the default is exact fp32 on both sides.  --precision bf16 runs the
 * model's GEMMs as `[model] precision = bf16` does (CPUs with AVX512_BF16 —
 * on AMX's tiles where the CPU has them; gemm_kernel in the output says
 * which ran — and GPUs from sm_80: inputs rounded to bf16, fp32 sums; on the CPU gemm_peak
 * stays OpenBLAS's fp32 sgemm, Debian's OpenBLAS having no sbgemm; on a GPU
 * it is cuBLAS in the same bf16 compute type).  OpenBLAS runs the best
 * kernels it has for this CPU (rt_blas_reexec) unless OPENBLAS_CORETYPE is
 * set; the output names them (blas_core). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_json.h"
#include "rt_model.h"
#include "rt_time.h"
#include "train_step_gpu.h"
#include "trainer.h"

/* Realistic Rossmann vocabulary sizes (18 categorical columns). */
static const int32_t VOCAB[18] = {1116, 13, 8, 4, 13, 32, 53, 26, 27, 5, 4, 4, 24, 9, 22, 3, 5, 3};

typedef struct result {
    const char *device;
    int threads;
    long batch;
    double samples_per_s, gflops, gemm_peak;
    double gemm_side; /* CPU: sgemm's median between the steps (0 on CUDA) */
    double step_us;
} result;

/* The sgemm baseline: the model's dominant shape B x 1000 x 1000, N·Tᵀ. */
typedef struct sgemm_case {
    int M, N, K;
    float *a, *b, *c;
} sgemm_case;

static void sgemm_init(sgemm_case *g, long B)
{
    g->M = (int)B, g->N = 1000, g->K = 1000;
    g->a = malloc((size_t)g->M * g->K * 4);
    g->b = malloc((size_t)g->N * g->K * 4);
    g->c = malloc((size_t)g->M * g->N * 4);
    for (long i = 0; i < (long)g->M * g->K; i++)
        g->a[i] = (float)(i % 13) * 0.01f;
    for (long i = 0; i < (long)g->N * g->K; i++)
        g->b[i] = (float)(i % 7) * 0.01f;
}

static double sgemm_once(const sgemm_case *g)
{
    double t = rt_now_s();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, g->M, g->N, g->K, 1, g->a, g->K, g->b,
                g->K, 0, g->c, g->N);
    return rt_now_s() - t;
}

static void sgemm_free(sgemm_case *g)
{
    free(g->a);
    free(g->b);
    free(g->c);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The job file's model (its defaults, then --set) on the Rossmann
 * columns: a dataset that holds only its manifest's columns. */
static rt_status make_spec(const char *arch, const char *const *sets, int nsets, rt_model_spec *s,
                           char *err)
{
    rt_job_cfg cfg;
    rt_cfg_errors e = {0};
    rt_cfg_init(&rt_job_schema, &cfg);
    rt_status st = rt_cfg_set(&rt_job_schema, &cfg, "data.dataset", "/", &e);
    if (st == RT_OK)
        st = rt_cfg_set(&rt_job_schema, &cfg, "output.store", "/", &e);
    if (st == RT_OK && arch)
        st = rt_cfg_set(&rt_job_schema, &cfg, "model.architecture", arch, &e);
    for (int i = 0; st == RT_OK && i < nsets; i++) {
        char key[128];
        const char *eq = strchr(sets[i], '=');
        snprintf(key, sizeof key, "%.*s", eq ? (int)(eq - sets[i]) : 0, sets[i]);
        st = rt_cfg_set(&rt_job_schema, &cfg, key, eq ? eq + 1 : "", &e);
    }
    rt_cfg_origin o = {"--set", NULL};
    if (st == RT_OK)
        st = rt_cfg_validate(&rt_job_schema, &cfg, &o, &e);
    if (st != RT_OK) {
        rt_cfg_errors_join(&e, err, RT_ERR_LEN);
        rt_cfg_errors_free(&e);
        rt_cfg_free(&rt_job_schema, &cfg);
        return RT_ERR_INVALID;
    }
    rt_ds_column cols[37];
    rt_dataset ds = {.ncols = 37, .cols = cols, .label_transform = "log", .max_label = 41551};
    snprintf(ds.dir, sizeof ds.dir, "the Rossmann columns");
    snprintf(ds.label, sizeof ds.label, "Sales");
    for (int c = 0; c < 37; c++) {
        rt_ds_column *dc = &cols[c];
        memset(dc, 0, sizeof *dc);
        snprintf(dc->name, sizeof dc->name, c < 18 ? "cat%d" : c < 36 ? "cont%d" : "Sales",
                 c < 18 ? c : c - 18);
        dc->role = c < 18 ? RT_ROLE_CATEGORICAL : c < 36 ? RT_ROLE_CONTINUOUS : RT_ROLE_LABEL;
        dc->type = c < 18 ? RT_COL_I32 : RT_COL_F32;
        dc->vocab_size = c < 18 ? VOCAB[c] : 0;
        dc->has_stats = c >= 18 && c < 36;
        dc->std = 1.0;
    }
    rt_columns *rc = calloc(1, sizeof *rc);
    st = rc ? rt_columns_resolve(&ds, &cfg, rc, err) : rt_err(err, RT_ERR_NOMEM, "out of memory");
    if (st == RT_OK)
        st = rt_job_model_spec(&cfg, NULL, &ds, rc, s, err);
    if (rc)
        rt_columns_free(rc);
    free(rc);
    rt_cfg_free(&rt_job_schema, &cfg);
    return st;
}

static int run_one(const rt_model_spec *spec, rt_device dev, int threads, long batch,
                   double seconds, bool tf32, bool bf16, result *r)
{
    char err[RT_ERR_LEN];
    rt_kctx *ctx;
    if (rt_kctx_create(dev, threads, &ctx, err) != RT_OK) {
        fprintf(stderr, "train_step: %s\n", err);
        return 1;
    }
    rt_kctx_set_tf32(ctx, tf32);
    if (bf16 && !rt_kctx_set_bf16(ctx, true)) {
        fprintf(stderr, "train_step: --precision bf16: this device has no bf16 GEMMs (CPUs with "
                        "AVX512_BF16, GPUs from sm_80)\n");
        rt_kctx_destroy(ctx);
        return 1;
    }
    rt_model *m;
    if (rt_model_create(spec, ctx, batch, &m, err) != RT_OK) {
        fprintf(stderr, "train_step: %s\n", err);
        rt_kctx_destroy(ctx);
        return 1;
    }
    /* one random batch, reused: the data path is not what is measured */
    int32_t *cat = malloc((size_t)batch * 18 * 4);
    float *cont = malloc((size_t)batch * 18 * 4), *label = malloc((size_t)batch * 4);
    uint64_t x = 88172645463325252ull;
    for (long i = 0; i < batch; i++) {
        for (int c = 0; c < 18; c++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            cat[i * 18 + c] = (int32_t)(x % (uint64_t)VOCAB[c]);
            cont[i * 18 + c] = (float)(x % 1000) * 0.01f;
        }
        label[i] = 7.0f + (float)(x % 100) * 0.02f;
    }
    rt_model_set_batch(m, cat, cont, label, batch);
    rt_adam_hp hp = {.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-3f, .grad_scale = 1.0f};
    r->device = dev == RT_DEVICE_CPU ? "cpu" : "cuda";
    r->gemm_side = 0;
    r->threads = dev == RT_DEVICE_CPU ? rt_kctx_threads(ctx) : 0;
    r->batch = batch;
    if (dev == RT_DEVICE_CPU) {
        sgemm_case g;
        sgemm_init(&g, batch);
        /* the warm best: a tight loop over a quarter of the window */
        double best = 1e30, until = rt_now_s() + seconds / 4;
        for (int reps = 0; rt_now_s() < until || reps < 3; reps++) {
            double tg = sgemm_once(&g);
            best = tg < best ? tg : best;
        }
        r->gemm_peak = 2.0 * g.M * g.N * g.K / best / 1e9;
        /* then the step and one sgemm alternate over the window, so that the
         * machine's drift (±20% from one minute to the next on a shared VM)
         * falls on both alike: medians of each */
        for (int i = 0; i < 3; i++)
            rt_model_train_step(m, batch, &hp);
        int cap = 100000, n = 0;
        double *t = malloc((size_t)cap * sizeof(double)), *tg = malloc((size_t)cap * sizeof(double));
        double deadline = rt_now_s() + seconds;
        while ((rt_now_s() < deadline || n < 5) && n < cap) {
            tg[n] = sgemm_once(&g);
            double t0 = rt_now_s();
            rt_model_train_step(m, batch, &hp);
            t[n++] = rt_now_s() - t0;
        }
        qsort(t, (size_t)n, sizeof *t, cmp_double);
        qsort(tg, (size_t)n, sizeof *tg, cmp_double);
        r->step_us = t[n / 2] * 1e6;
        r->gemm_side = 2.0 * g.M * g.N * g.K / tg[n / 2] / 1e9;
        free(t);
        free(tg);
        sgemm_free(&g);
    } else if (rt_train_step_gpu(m, batch, &hp, seconds, tf32, bf16, &r->step_us, &r->gemm_peak,
                                 err) != 0) {
        fprintf(stderr, "train_step: %s\n", err);
        return 1;
    }
    r->samples_per_s = (double)batch / (r->step_us * 1e-6);
    r->gflops = rt_model_flops_per_sample(m) * r->samples_per_s / 1e9;
    free(cat);
    free(cont);
    free(label);
    rt_model_destroy(m);
    rt_kctx_destroy(ctx);
    return 0;
}

/* the kernels the step's GEMMs ran on: ours on the CPU, cuBLAS(Lt) in the
 * compute type train_step_gpu.cu's baseline also uses on a GPU */
static const char *gemm_kernel(const char *device, bool tf32, bool bf16)
{
    if (strcmp(device, "cuda") == 0)
        return bf16 ? "cublasLt-fast-16bf" : tf32 ? "cublasLt-fast-tf32" : "cublasLt-fp32";
    return bf16 && rt_cpu_bf16_kernel() ? rt_cpu_bf16_kernel() : rt_cpu_gemm_kernel();
}

int main(int argc, char **argv)
{
    rt_blas_reexec(argv); /* the sgemm baseline on the best OpenBLAS kernels */
    const char *device = NULL, *arch = NULL;
    const char *sets[64];
    int threads = 0, json = 0, nsets = 0, print_spec = 0;
    bool tf32 = false, bf16 = false;
    long batch = 0;
    double seconds = 3.0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            device = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
            batch = atol(argv[++i]);
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--tf32") == 0)
            tf32 = true;
        else if (strcmp(argv[i], "--precision") == 0 && i + 1 < argc &&
                 (!strcmp(argv[i + 1], "fp32") || !strcmp(argv[i + 1], "bf16")))
            bf16 = !strcmp(argv[++i], "bf16");
        else if (strcmp(argv[i], "--architecture") == 0 && i + 1 < argc)
            arch = argv[++i];
        else if (strcmp(argv[i], "--set") == 0 && i + 1 < argc && nsets < 64)
            sets[nsets++] = argv[++i];
        else if (strcmp(argv[i], "--print-spec") == 0)
            print_spec = 1;
        else {
            fprintf(stderr, "usage: train_step [--architecture NAME] [--set model.KEY=VALUE]... "
                            "[--print-spec] [--device cpu|cuda] [--threads T] [--batch B] "
                            "[--seconds S] [--tf32] [--precision fp32|bf16] [--json]\n");
            return 2;
        }
    }
    rt_model_spec spec;
    char err[RT_ERR_LEN];
    if (make_spec(arch, sets, nsets, &spec, err) != RT_OK) {
        fprintf(stderr, "train_step: %s\n", err);
        return 2;
    }
    if (print_spec) {
        rt_jw w;
        rt_jw_init(&w);
        rt_model_spec_json(&spec, &w);
        char *text = rt_jw_take(&w, NULL);
        puts(text ? text : "null");
        free(text);
        return 0;
    }
    if (device && strcmp(device, "cpu") != 0 && strcmp(device, "cuda") != 0) {
        fprintf(stderr, "train_step: --device must be cpu or cuda\n");
        return 2;
    }
    if (device && strcmp(device, "cuda") == 0 && !rt_cuda_available()) {
        fprintf(stderr, "train_step: no CUDA device\n");
        return 77;
    }
    long batches[3] = {100, 1024, 8192};
    int nb = 3;
    if (batch > 0) {
        batches[0] = batch;
        nb = 1;
    }
    struct {
        rt_device dev;
        int threads;
    } cfg[4];
    int nc = 0;
    if (!device || strcmp(device, "cpu") == 0) {
        if (threads > 0) {
            cfg[nc].dev = RT_DEVICE_CPU;
            cfg[nc++].threads = threads;
        } else {
            cfg[nc].dev = RT_DEVICE_CPU;
            cfg[nc++].threads = 1;
            cfg[nc].dev = RT_DEVICE_CPU;
            cfg[nc++].threads = 2;
        }
    }
    if ((!device && rt_cuda_available()) || (device && strcmp(device, "cuda") == 0)) {
        cfg[nc].dev = RT_DEVICE_CUDA;
        cfg[nc++].threads = 0;
    }
    char name[128];
    if (!json && nc > 0 && cfg[0].dev == RT_DEVICE_CPU)
        printf("%s; ringtrain GEMM kernel %s; gemm_peak: OpenBLAS sgemm on its %s kernels\n",
               rt_arch_names[spec.arch], gemm_kernel("cpu", tf32, bf16), rt_cpu_blas_core());
    else if (!json)
        printf("%s; GEMMs on %s; gemm_peak: the same on B x 1000 x 1000\n",
               rt_arch_names[spec.arch], gemm_kernel("cuda", tf32, bf16));
    if (!json)
        printf("%-6s %7s %6s %12s %10s %9s %10s %6s %10s %10s\n", "device", "threads", "batch",
               "samples/s",
               "step_us", "GFLOP/s", "gemm_peak", "ratio", "gemm_side", "ratio_side");
    for (int c = 0; c < nc; c++)
        for (int b = 0; b < nb; b++) {
            result r;
            if (run_one(&spec, cfg[c].dev, cfg[c].threads, batches[b], seconds, tf32, bf16, &r) !=
                0)
                return 1;
            if (json)
                printf("{\"architecture\":\"%s\",\"device\":\"%s\",\"threads\":%d,\"batch\":%ld,"
                       "\"samples_per_s\":%.1f,"
                       "\"gflops\":%.2f,\"gemm_peak_gflops\":%.2f,\"gemm_side_gflops\":%.2f,"
                       "\"step_us\":%.1f,\"tf32\":%s,\"precision\":\"%s\",\"blas_core\":\"%s\","
                       "\"gemm_kernel\":\"%s\"}\n",
                       rt_arch_names[spec.arch], r.device, r.threads, r.batch, r.samples_per_s,
                       r.gflops, r.gemm_peak, r.gemm_side, r.step_us,
                       strcmp(r.device, "cuda") == 0 && tf32 ? "true" : "false",
                       bf16 ? "bf16" : "fp32", rt_cpu_blas_core(),
                       gemm_kernel(r.device, tf32, bf16));
            else if (r.gemm_side > 0)
                printf("%-6s %7d %6ld %12.0f %10.1f %9.1f %10.1f %5.0f%% %10.1f %9.0f%%\n",
                       r.device, r.threads, r.batch, r.samples_per_s, r.step_us, r.gflops,
                       r.gemm_peak, 100.0 * r.gflops / r.gemm_peak, r.gemm_side,
                       100.0 * r.gflops / r.gemm_side);
            else
                printf("%-6s %7d %6ld %12.0f %10.1f %9.1f %10.1f %5.0f%% %10s %10s\n", r.device,
                       r.threads, r.batch, r.samples_per_s, r.step_us, r.gflops, r.gemm_peak,
                       100.0 * r.gflops / r.gemm_peak, "-", "-");
            fflush(stdout);
        }
    if (!json && rt_cuda_available())
        printf("gpu: %s\n", rt_cuda_device_name(name, sizeof name));
    return 0;
}
