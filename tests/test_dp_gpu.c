/* test_dp_gpu.c — the data-parallel step on GPUs: 2 ranks as threads over
 * TCP on loopback, each on its own CUDA device (the emulator gives 2), or
 * both on the one GPU a machine has, where the ranks stage their gradients
 * (every check below then asserts the staged path; the NCCL ones need 2):
 *   - one rank: the step captured as a CUDA graph, bitwise the step op by
 *     op, near the CPU's;
 *   - NCCL (per-bucket allreduces overlapping backward, inside a CUDA graph)
 *     against the same step on the CPU: the same parameters within float
 *     tolerance after K steps; both ranks bitwise equal; graphs on and off
 *     bitwise equal; gradients staged through pinned memory bitwise equal
 *     to NCCL (at 2 ranks every allreduce is the same a + b); and so for
 *     every model family (graphs against op by op, CPU against GPU);
 *   - [model] precision = bf16 on the GPU, every family (test_families_bf16);
 *   - [train] allreduce_precision = bf16: NCCL and staged (test_allreduce_bf16);
 *   - two ranks on one GPU: the ranks agree not to use NCCL and stage,
 *     with the same result;
 *   - a peer that leaves, or stays silent: the next step fails within the
 *     collective timeout with an error naming the rank, no crash, no hang;
 *   - the timeline of GPU steps (timing marks inside the graph): every step's
 *     spans, in the order the streams run them, eager, captured and replayed.
 * Exits 77 (skipped) with no CUDA device. */
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
#include "rt_dp.h"
#include "rt_file.h"
#include "rt_json.h"
#include "rt_log.h"
#include "rt_time.h"
#include "rt_trace.h"
#include "test_util.h"

enum { B = 48, K = 6, NCAT = 3, NCONT = 2 };

static rt_model_spec small_spec(void)
{
    rt_model_spec s;
    rt_model_spec_defaults(&s);
    s.n_cat = NCAT;
    int32_t v[NCAT] = {50, 7, 2};
    for (int i = 0; i < NCAT; i++)
        s.vocab[i] = v[i];
    rt_model_spec_set_emb_dim(&s, 4);
    s.n_cont = NCONT;
    s.n_hidden = 2;
    s.hidden[0] = 64;
    s.hidden[1] = 32;
    s.dropout[3] = 0;
    s.dropout[1] = 0.2f; /* after the last hidden layer */
    s.l2 = 1e-4f;
    s.head_scale = 10;
    s.seed = 7;
    return s;
}

/* The other families, as small: each with its dropouts, its norms (batch
 * or layer), its residual or cross wiring, its ensemble; numeric
 * embeddings (periodic on mlp and as ft_transformer's tokens, linear on
 * tabm). */
static rt_model_spec family_spec(rt_arch arch)
{
    rt_model_spec s = small_spec();
    s.arch = arch;
    switch (arch) {
    case RT_ARCH_MLP:
        s.activation = RT_ACT_GELU;
        s.batch_norm[0] = true;
        s.dropout[0] = s.dropout[1] = 0.1f;
        s.embedding_dropout = 0.1f;
        s.numeric_embedding = RT_NUM_EMB_PERIODIC;
        s.d_embedding = 4;
        s.frequencies = 3;
        s.frequency_scale = 0.1f;
        break;
    case RT_ARCH_RESNET:
        s.blocks = 2;
        s.width = 16;
        s.dropout1 = 0.1f;
        s.dropout2 = 0.05f;
        break;
    case RT_ARCH_DCN2:
        s.cross_layers = 2;
        s.deep_layers = 1;
        s.width = 16;
        s.cross_dropout = 0.1f;
        s.dropout[0] = 0.1f;
        break;
    case RT_ARCH_FT_TRANSFORMER:
        s.blocks = 2;
        s.d_token = 8;
        s.heads = 2;
        s.attention_dropout = s.ffn_dropout = s.residual_dropout = 0.1f;
        s.numeric_embedding = RT_NUM_EMB_PERIODIC;
        s.frequencies = 3;
        s.frequency_scale = 0.1f;
        break;
    case RT_ARCH_TABM:
        s.blocks = 2;
        s.width = 16;
        s.ensemble_size = 4;
        s.dropout[0] = s.dropout[1] = 0.1f;
        s.numeric_embedding = RT_NUM_EMB_LINEAR;
        s.d_embedding = 3;
        break;
    default:
        break;
    }
    return s;
}

static int32_t g_cat[K * 2 * B * NCAT];
static float g_cont[K * 2 * B * NCONT], g_label[K * 2 * B];

/* The rows every test trains on; draw 0 is theirs, others are redrawn where
 * a comparison met a kink (test_families_bf16). */
static void make_rows(int draw)
{
    tu_rng r = tu_rng_make(5 + 1000u * (uint64_t)draw);
    for (int i = 0; i < K * 2 * B; i++) {
        g_cat[i * NCAT + 0] = (int32_t)tu_int(&r, 0, 49);
        g_cat[i * NCAT + 1] = (int32_t)tu_int(&r, 0, 6);
        g_cat[i * NCAT + 2] = (int32_t)tu_int(&r, 0, 1);
        g_cont[i * NCONT] = (float)tu_range(&r, -2, 2);
        g_cont[i * NCONT + 1] = (float)tu_range(&r, 0, 5);
        g_label[i] = 4.0f + 0.4f * g_cat[i * NCAT + 1] + 0.3f * g_cont[i * NCONT] +
                     (float)tu_range(&r, -0.1, 0.1);
    }
}

static const rt_adam_hp HP = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-3f, .grad_scale = 1.0f};
static int g_gpus; /* CUDA devices visible: with one, both ranks share it */
static const char *const STAGED = "staged through pinned memory";

typedef struct run {
    rt_arch arch;
    rt_device device;
    bool nccl, graphs, same_gpu;
    bool bf16;           /* [model] precision = bf16 */
    bool ran_bf16;       /* the model's context ran bf16 GEMMs */
    bool allreduce_bf16; /* [train] allreduce_precision = bf16 */
    int leave_after;     /* rank 1 stops after this many steps (0: never) */
    bool silent;         /* ... and stays, without stepping, instead of leaving */
    bool trace;          /* each rank's timeline into trace[rank] */
    char trace_path[2][96];
    int buckets[2];      /* rt_dp_buckets after the steps */
    int64_t timeout_us;
    float *params[2];
    int64_t nparams;
    char path[2][48];
    rt_status last_st[2];
    char last_err[2][RT_ERR_LEN];
    bool broken[2];      /* the rank's ring broken after its steps */
    double fail_s;       /* rank 0: seconds its failing step took */
} run;

static void rank_body(rt_comm *c, int rank, void *arg, rh_result *res)
{
    run *r = arg;
    char err[RT_ERR_LEN];
    rt_model_spec s = family_spec(r->arch);
    if (r->device == RT_DEVICE_CUDA)
        RH_CHECK(res, rt_cuda_set_device(r->same_gpu ? 0 : rank % g_gpus, err) == RT_OK, "%s", err);
    rt_dp_opts o;
    rt_dp_opts_defaults(&o);
    o.device = r->device;
    o.threads = 1;
    o.bucket_bytes = 4096; /* several buckets */
    o.max_batch = B;
    o.nccl = r->nccl;
    o.graphs = r->graphs;
    o.bf16 = r->bf16;
    o.allreduce_bf16 = r->allreduce_bf16;
    o.timeout_us = r->timeout_us ? r->timeout_us : 20000000;
    rt_dp *d = NULL;
    RH_CHECK(res, rt_dp_create(&s, &o, c, &d, err) == RT_OK, "create: %s", err);
    snprintf(r->path[rank], sizeof r->path[rank], "%s", rt_dp_gradient_path(d));
    r->ran_bf16 = rt_kctx_bf16(rt_model_kctx(rt_dp_model(d)));
    rt_trace *tr = NULL;
    if (r->trace) {
        RH_CHECK(res, rt_trace_create(4096, rank, &tr, err) == RT_OK, "trace: %s", err);
        rt_dp_set_trace(d, tr);
    }
    rt_status st = rt_dp_broadcast_state(d, 0, false, err);
    for (int k = 0; k < K && st == RT_OK; k++) {
        if (rank == 1 && r->leave_after && k == r->leave_after) {
            if (r->silent)
                usleep((useconds_t)(3 * r->timeout_us)); /* alive, but never arrives */
            break;
        }
        int64_t first = (int64_t)k * 2 * B + (int64_t)rank * B;
        double t0 = rt_now_s();
        st = rt_dp_step(d, g_cat + first * NCAT, g_cont + first * NCONT, g_label + first, B, &HP, err);
        if (st != RT_OK && rank == 0)
            r->fail_s = rt_now_s() - t0;
    }
    r->last_st[rank] = st;
    snprintf(r->last_err[rank], sizeof r->last_err[rank], "%s", st == RT_OK ? "" : err);
    r->broken[rank] = rt_comm_broken(c);
    r->buckets[rank] = rt_dp_buckets(d); /* allreduces a step, after steps */
    if (tr) {
        rt_dp_trace_flush(d);
        snprintf(r->trace_path[rank], sizeof r->trace_path[rank], "/tmp/rt_dp_gpu_trace_%d_%p_%d.json",
                 (int)getpid(), (void *)r, rank); /* one file per run and rank */
        RH_CHECK(res, rt_trace_write(tr, r->trace_path[rank], err) == RT_OK, "%s", err);
    }
    if (st == RT_OK && !r->leave_after) {
        r->nparams = rt_model_num_params(rt_dp_model(d));
        r->params[rank] = malloc((size_t)r->nparams * 4);
        st = rt_model_get_state(rt_dp_model(d), r->params[rank], NULL, NULL, NULL, NULL, err);
    }
    rt_dp_destroy(d);
    rt_trace_destroy(tr);
    RH_CHECK(res, st == RT_OK || r->leave_after, "rank %d: %s", rank, err);
}

static void run_n(run *r, int n)
{
    rt_comm_opts o;
    rt_comm_opts_defaults(&o);
    /* as the trainer: the step's deadline is the collectives' (the staged
     * path's allreduce runs on the ring) */
    o.timeout_us = r->timeout_us ? r->timeout_us : 30000000;
    rh_result res;
    if (!rh_run(n, RT_TRANSPORT_TCP, &o, rank_body, r, &res))
        fail_msg("%s", res.msg);
}

static void run_two(run *r) { run_n(r, 2); }

static void free_run(run *r)
{
    free(r->params[0]);
    free(r->params[1]);
}

/* The gradient path a run of 2 ranks takes: NCCL where asked for and each
 * rank has a GPU of its own, else staged through pinned memory. */
static const char *want_path(const run *r)
{
    return r->nccl && !r->same_gpu && g_gpus >= 2 ? "NCCL" : STAGED;
}

/* One rank: no allreduce; the step captured as a graph and replayed is
 * bitwise the step op by op, and near the CPU's. */
static void test_one_rank(void **state)
{
    (void)state;
    for (int a = RT_ARCH_ROSSMANN; a < RT_ARCH_COUNT; a++) {
        run cpu = {.arch = (rt_arch)a, .device = RT_DEVICE_CPU};
        run graph = {.arch = (rt_arch)a, .device = RT_DEVICE_CUDA, .graphs = true};
        run eager = {.arch = (rt_arch)a, .device = RT_DEVICE_CUDA, .graphs = false};
        run_n(&cpu, 1);
        run_n(&graph, 1);
        run_n(&eager, 1);
        const size_t n = (size_t)cpu.nparams;
        assert_memory_equal(graph.params[0], eager.params[0], n * 4);
        char what[64];
        snprintf(what, sizeof what, "%s: GPU vs CPU parameters, np=1", rt_arch_names[a]);
        assert_true(tu_close_f(what, graph.params[0], cpu.params[0], n, 1e-4, 1e-4));
        free_run(&cpu);
        free_run(&graph);
        free_run(&eager);
    }
}

/* The step on 2 GPU ranks three ways, with base's settings: NCCL (captured
 * into nccl, op by op into eager) and staged through pinned memory; the
 * gradients' paths as they should be, each run's ranks bitwise equal, and
 * the three runs bitwise equal (at 2 ranks every allreduce is the same
 * a + b, whichever path sums it). */
static void gpu_three_ways(run base, run *nccl, run *eager, run *staged)
{
    base.device = RT_DEVICE_CUDA;
    *nccl = base, *eager = base, *staged = base;
    nccl->nccl = eager->nccl = true;
    nccl->graphs = staged->graphs = true;
    run_two(nccl);
    run_two(eager);
    run_two(staged);
    const size_t n = (size_t)nccl->nparams * 4;
    assert_string_equal(nccl->path[0], want_path(nccl));
    assert_string_equal(staged->path[0], STAGED);
    assert_memory_equal(nccl->params[0], nccl->params[1], n);
    assert_memory_equal(staged->params[0], staged->params[1], n);
    assert_memory_equal(nccl->params[0], eager->params[0], n);
    assert_memory_equal(nccl->params[0], staged->params[0], n);
}

static void test_gpu_matches_cpu(void **state)
{
    (void)state;
    run cpu = {.device = RT_DEVICE_CPU}, nccl, eager, staged;
    run_two(&cpu);
    gpu_three_ways((run){0}, &nccl, &eager, &staged);
    const size_t n = (size_t)cpu.nparams;
    /* K Adam steps of at most lr = 1e-3 each: GPU and CPU rounding differ
     * by a small part of that (as in test_kernels_cuda's whole step) */
    assert_true(tu_close_f("GPU vs CPU parameters, np=2", nccl.params[0], cpu.params[0], n, 1e-4, 1e-4));
    free_run(&cpu);
    free_run(&nccl);
    free_run(&eager);
    free_run(&staged);
}

/* Every family: its step captured as a graph with NCCL buckets, replayed,
 * bitwise the step op by op; both ranks bitwise equal; near the CPU's. */
static void test_families(void **state)
{
    (void)state;
    for (int a = RT_ARCH_MLP; a < RT_ARCH_COUNT; a++) {
        run cpu = {.arch = (rt_arch)a, .device = RT_DEVICE_CPU};
        run nccl = {.arch = (rt_arch)a, .device = RT_DEVICE_CUDA, .nccl = true, .graphs = true};
        run eager = {.arch = (rt_arch)a, .device = RT_DEVICE_CUDA, .nccl = true, .graphs = false};
        run_two(&cpu);
        run_two(&nccl);
        run_two(&eager);
        const size_t n = (size_t)cpu.nparams;
        assert_string_equal(nccl.path[0], want_path(&nccl));
        if (!strcmp(nccl.path[0], "NCCL"))
            assert_true(nccl.buckets[0] > 1);
        assert_memory_equal(nccl.params[0], nccl.params[1], n * 4);
        assert_memory_equal(nccl.params[0], eager.params[0], n * 4);
        char what[64];
        snprintf(what, sizeof what, "%s: GPU vs CPU parameters, np=2", rt_arch_names[a]);
        assert_true(tu_close_f(what, nccl.params[0], cpu.params[0], n, 1e-4, 1e-4));
        printf("%s: %zu parameters, gradients %s (%d allreduces a step), graph == op by op\n",
               rt_arch_names[a], n, nccl.path[0], nccl.buckets[0]);
        free_run(&cpu);
        free_run(&nccl);
        free_run(&eager);
    }
}

/* [model] precision = bf16 on the GPU (cuBLAS's FAST_16BF), every family,
 * one rank: captured bitwise op by op; not the fp32 step (the inputs were
 * rounded); near the CPU's fp32 step within bf16's rounding; and, under the
 * emulator (which rounds to bf16 as the CPU does; a GPU may use TF32) on a
 * CPU with AVX512_BF16, near the CPU's bf16 step as fp32 is near fp32
 * (bf16_twins_near). */
static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Two trainings K steps apart in their GEMMs' rounding (bf16 inputs against
 * fp32): Adam moves a parameter about lr a step at most, and the rounding
 * moves most of them by a small part of that, but where a trajectory meets
 * a kink (the MAE loss's sign, a ReLU) it parts from the other: measured
 * (the CPU's own bf16 against its fp32, 6 seeds x 6 families) a median of
 * 0.001-0.05 lr, 99th percentiles to 0.9 lr, single values to 1.9 lr.
 * Allowed: a median of 0.25 lr, no value beyond 2K lr (or not finite).  A
 * GEMM in the wrong type or layout, or a missing term, moves most values
 * by a sizeable part of lr. */
static bool steps_near(const char *what, const float *got, const float *ref, size_t n)
{
    double *d = malloc(n * sizeof *d);
    assert_non_null(d);
    for (size_t i = 0; i < n; i++)
        d[i] = fabs((double)got[i] - ref[i]) / HP.lr;
    qsort(d, n, sizeof *d, cmp_double); /* NaN compares as neither: caught below */
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++)
        ok = d[i] <= 2.0 * K;
    const double median = d[n / 2], worst = d[n - 1];
    ok = ok && median <= 0.25;
    if (!ok)
        printf("%s: |difference| / lr median %.3g (0.25 allowed), largest %.3g (%d allowed)\n",
               what, median, worst, 2 * K);
    free(d);
    return ok;
}

/* The emulated GPU's bf16 step against the CPU's: both round each GEMM's
 * inputs to bf16, but their fp32 sums run in different orders, so now and
 * then a value 1 ulp apart rounds to the other bf16 neighbour, 2^-8 of
 * itself away.  That is lost in the noise unless it meets a kink (a ReLU
 * at 0): there the gradients differ by a whole term and the trajectories
 * part, as bf16 against fp32 do, only less.  Measured (the emulator against
 * AVX512_BF16, 30 seeds x 6 families): most parameters bitwise equal and
 * the largest difference 0.017 lr, but once (resnet,
 * RT_TEST_SEED=1796051752221885) a median of 0.003 lr and 8 of 2737 values
 * past 1e-4 + 1e-4|ref|.  A kink is the rows' property, not the kernels':
 * where the two part, draw other rows and compare again, up to 3 draws (a
 * kernel that rounds otherwise parts on every draw).  gpu_params: the GPU's
 * bf16 run on rows 0. */
static bool bf16_twins_near(rt_arch a, const float *gpu_params)
{
    bool near = false;
    for (int draw = 0; draw < 3 && !near; draw++) {
        run cpu = {.arch = a, .device = RT_DEVICE_CPU, .bf16 = true};
        run gpu = {.arch = a, .device = RT_DEVICE_CUDA, .graphs = true, .bf16 = true};
        if (draw) {
            make_rows(draw);
            run_n(&gpu, 1);
        }
        run_n(&cpu, 1);
        char what[96];
        snprintf(what, sizeof what, "%s: GPU bf16 vs CPU bf16 parameters, rows %d",
                 rt_arch_names[a], draw);
        near = tu_close_f(what, draw ? gpu.params[0] : gpu_params, cpu.params[0],
                          (size_t)cpu.nparams, 1e-4, 1e-4);
        free_run(&cpu);
        free_run(&gpu);
    }
    make_rows(0); /* the other tests' rows */
    return near;
}

static void test_families_bf16(void **state)
{
    (void)state;
    char dev[160];
    const bool emu = strstr(rt_cuda_device_name(dev, sizeof dev), "cudaemu") != NULL;
    const bool cpu16 = rt_cpu_bf16_kernel() != NULL;
    for (int a = RT_ARCH_ROSSMANN; a < RT_ARCH_COUNT; a++) {
        run cpu = {.arch = (rt_arch)a, .device = RT_DEVICE_CPU};
        run fp32 = {.arch = (rt_arch)a, .device = RT_DEVICE_CUDA, .graphs = true};
        run graph = {.arch = (rt_arch)a, .device = RT_DEVICE_CUDA, .graphs = true, .bf16 = true};
        run eager = {.arch = (rt_arch)a, .device = RT_DEVICE_CUDA, .bf16 = true};
        run_n(&cpu, 1);
        run_n(&fp32, 1);
        run_n(&graph, 1);
        run_n(&eager, 1);
        const size_t n = (size_t)cpu.nparams;
        assert_true(graph.ran_bf16 && eager.ran_bf16 && !fp32.ran_bf16);
        assert_memory_equal(graph.params[0], eager.params[0], n * 4);
        assert_true(memcmp(graph.params[0], fp32.params[0], n * 4) != 0);
        char what[80];
        snprintf(what, sizeof what, "%s: GPU bf16 vs CPU fp32 parameters", rt_arch_names[a]);
        assert_true(steps_near(what, graph.params[0], cpu.params[0], n));
        if (emu && cpu16)
            assert_true(bf16_twins_near((rt_arch)a, graph.params[0])); /* rows 0's run */
        free_run(&cpu);
        free_run(&fp32);
        free_run(&graph);
        free_run(&eager);
    }
}

/* [train] allreduce_precision = bf16 on GPUs, 2 ranks: each bucket rounded
 * on the device, summed as NCCL's bfloat16 (inside the captured graph) or
 * round the staged ring, widened back.  Both ranks bitwise equal; captured
 * bitwise op by op; NCCL bitwise the staged ring (at 2 ranks both are one
 * FP32 add of the two rounded values, rounded once); not the FP32
 * allreduce's bits; near the CPU's bf16 allreduce as FP32 is near FP32. */
static void test_allreduce_bf16(void **state)
{
    (void)state;
    run cpu = {.device = RT_DEVICE_CPU, .allreduce_bf16 = true}, nccl, eager, staged;
    run fp32 = {.device = RT_DEVICE_CUDA, .nccl = true, .graphs = true};
    run_two(&cpu);
    run_two(&fp32);
    gpu_three_ways((run){.allreduce_bf16 = true}, &nccl, &eager, &staged);
    const size_t n = (size_t)cpu.nparams;
    assert_true(memcmp(nccl.params[0], fp32.params[0], n * 4) != 0);
    assert_true(tu_close_f("GPU vs CPU parameters, bf16 allreduce", nccl.params[0], cpu.params[0],
                           n, 1e-4, 1e-4));
    free_run(&cpu);
    free_run(&fp32);
    free_run(&nccl);
    free_run(&eager);
    free_run(&staged);
}

static void test_shared_gpu_stages(void **state)
{
    (void)state;
    run shared = {.device = RT_DEVICE_CUDA, .nccl = true, .graphs = true, .same_gpu = true};
    run nccl = {.device = RT_DEVICE_CUDA, .nccl = true, .graphs = true};
    run_two(&shared);
    run_two(&nccl);
    assert_string_equal(shared.path[0], STAGED);
    assert_string_equal(shared.path[1], STAGED);
    assert_memory_equal(shared.params[0], nccl.params[0], (size_t)nccl.nparams * 4);
    free_run(&shared);
    free_run(&nccl);
}

static void test_dead_peer(void **state)
{
    (void)state;
    for (int silent = 0; silent < 2; silent++) {
        run r = {.device = RT_DEVICE_CUDA, .nccl = true, .graphs = true, .leave_after = 3,
                 .silent = silent, .timeout_us = 1500000};
        run_two(&r);
        fprintf(stderr, "%s peer: rank 0 failed after %.2f s: %s\n", silent ? "silent" : "vanished",
                r.fail_s, r.last_err[0]);
        assert_int_not_equal(r.last_st[0], RT_OK);
        /* NCCL names the failing rank; the ring, the peer it lost */
        assert_non_null(strstr(r.last_err[0], strcmp(r.path[0], "NCCL") ? "rank 1" : "rank 0 of 2"));
        assert_true(r.fail_s < 1.5 + 5.0);
        if (silent)
            assert_int_equal(r.last_st[0], RT_ERR_TIMEOUT);
        /* the ring broken with NCCL: the worker exits as one that lost its
         * peers (RT_EXIT_PEER), which the coordinator holds */
        assert_true(r.broken[0]);
        free_run(&r);
    }
}

/* One span of a trace file, in microseconds. */
typedef struct tspan {
    char cat[16];
    int64_t step, arg;
    double t0, t1;
} tspan;

/* The spans of a Chrome trace file written by rt_trace_write. */
static int read_trace(const char *path, tspan *out, int max)
{
    char *text = NULL, err[RT_ERR_LEN];
    size_t len = 0;
    rt_json *j = NULL;
    if (rt_read_file(path, 16 << 20, &text, &len, err) != RT_OK ||
        rt_json_parse(text, len, &j, err) != RT_OK)
        fail_msg("%s: %s", path, err);
    free(text);
    const rt_json *ev = rt_json_get(j, "traceEvents");
    int n = 0;
    for (size_t i = 0; i < rt_json_len(ev) && n < max; i++) {
        const rt_json *e = rt_json_at(ev, i);
        if (strcmp(rt_json_str(rt_json_get(e, "ph"), ""), "X") != 0)
            continue;
        tspan *s = &out[n++];
        snprintf(s->cat, sizeof s->cat, "%s", rt_json_str(rt_json_get(e, "cat"), "?"));
        rt_json_get_int(rt_json_get(e, "args"), "step", &s->step);
        const char *name = rt_json_str(rt_json_get(e, "name"), "");
        const char *sp = strrchr(name, ' ');
        s->arg = sp ? atoi(sp + 1) : 0;
        s->t0 = rt_json_num(rt_json_get(e, "ts"), 0);
        s->t1 = s->t0 + rt_json_num(rt_json_get(e, "dur"), -1);
    }
    rt_json_free(j);
    unlink(path);
    return n;
}

/* Checks one rank's GPU timeline: every step 0..K-1 has forward, backward
 * (with its layers inside, in order), the optimizer, and with ranks the
 * allreduces (buckets of them) and the wait for them, in stream order. */
static void check_timeline(const char *path, bool ranks, int buckets, int *layers_out)
{
    static tspan sp[4096];
    const int n = read_trace(path, sp, 4096);
    const double eps = 1.0; /* us: marks are read as float milliseconds */
    int layers = -1;
    double prev_end = -1e18;
    for (int64_t k = 0; k < K; k++) {
        const tspan *fwd = NULL, *bwd = NULL, *opt = NULL, *wait = NULL;
        int nl = 0, nar = 0;
        double last_layer = -1e18;
        for (int i = 0; i < n; i++) {
            const tspan *s = &sp[i];
            if (s->step != k)
                continue;
            assert_true(s->t1 >= s->t0); /* no span ends before it starts */
            if (!strcmp(s->cat, "forward"))
                fwd = s;
            else if (!strcmp(s->cat, "backward"))
                bwd = s;
            else if (!strcmp(s->cat, "optimizer"))
                opt = s;
            else if (!strcmp(s->cat, "wait"))
                wait = s;
            else if (!strcmp(s->cat, "allreduce"))
                nar++;
            else if (!strcmp(s->cat, "layer")) {
                assert_int_equal(s->arg, nl); /* in order, each once */
                assert_true(s->t0 >= last_layer - eps);
                last_layer = s->t1;
                nl++;
            }
        }
        if (!fwd || !bwd || !opt || (ranks && !wait))
            fail_msg("%s: step %lld lacks a span (forward %d, backward %d, optimizer %d, wait %d)",
                     path, (long long)k, !!fwd, !!bwd, !!opt, !!wait);
        assert_true(fwd->t0 >= prev_end - eps);   /* after the step before */
        assert_true(fabs(fwd->t1 - bwd->t0) <= eps); /* one mark between them */
        assert_true(opt->t0 >= bwd->t1 - eps);
        if (wait)
            assert_true(fabs(wait->t0 - bwd->t1) <= eps && opt->t0 >= wait->t1 - eps);
        assert_true(nl > 0 && last_layer <= bwd->t1 + eps);
        if (layers < 0)
            layers = nl;
        if (nl != layers || nar != (ranks ? buckets : 0)) /* the same in every step */
            fail_msg("%s: step %lld has %d layers (step 0: %d), %d allreduces (want %d)", path,
                     (long long)k, nl, layers, nar, ranks ? buckets : 0);
        for (int i = 0; i < n; i++) /* allreduces within the step's backward and wait */
            if (sp[i].step == k && !strcmp(sp[i].cat, "allreduce"))
                assert_true(sp[i].t0 >= bwd->t0 - eps && sp[i].t1 <= wait->t1 + eps);
        prev_end = opt->t1;
    }
    *layers_out = layers;
}

/* [train] trace on GPUs: the timeline of 6 steps (2 op by op, 2 captured, 2
 * replayed) for one GPU, two with NCCL (several buckets) and two staged,
 * with as many layers as the same model's CPU steps report. */
static void test_gpu_timeline(void **state)
{
    (void)state;
    run cpu = {.device = RT_DEVICE_CPU, .trace = true};
    run one = {.device = RT_DEVICE_CUDA, .nccl = true, .graphs = true, .trace = true};
    run nccl = {.device = RT_DEVICE_CUDA, .nccl = true, .graphs = true, .trace = true};
    run staged = {.device = RT_DEVICE_CUDA, .nccl = false, .graphs = true, .trace = true};
    run_n(&cpu, 1);
    run_n(&one, 1);
    run_two(&nccl);
    run_two(&staged);
    int cpu_layers = 0, layers = 0;
    check_timeline(cpu.trace_path[0], false, 0, &cpu_layers);
    check_timeline(one.trace_path[0], false, 0, &layers);
    assert_int_equal(layers, cpu_layers);
    const bool use_nccl = !strcmp(nccl.path[0], "NCCL"); /* 2 GPUs */
    assert_true(!use_nccl || nccl.buckets[0] > 1);
    for (int r = 0; r < 2; r++) {
        check_timeline(nccl.trace_path[r], true, use_nccl ? nccl.buckets[r] : 1, &layers);
        assert_int_equal(layers, cpu_layers);
        check_timeline(staged.trace_path[r], true, 1, &layers);
        assert_int_equal(layers, cpu_layers);
    }
    fprintf(stderr, "GPU timelines: %d layers a step, gradients %s, %d allreduces a step\n", layers,
            nccl.path[0], use_nccl ? nccl.buckets[0] : 1);
    free_run(&cpu);
    free_run(&one);
    free_run(&nccl);
    free_run(&staged);
}

int main(int argc, char **argv)
{
    if (argc == 2)
        cmocka_set_test_filter(argv[1]);
    g_gpus = rt_cuda_device_count_visible();
    if (g_gpus < 1) {
        printf("no CUDA device: skipping\n");
        return 77;
    }
    printf("%d CUDA device(s): 2 ranks %s\n", g_gpus,
           g_gpus >= 2 ? "on 2 GPUs, NCCL" : "share GPU 0, gradients staged");
    rt_log_set_level(RT_LL_ERROR);
    make_rows(0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rank),       cmocka_unit_test(test_gpu_matches_cpu),
        cmocka_unit_test(test_families),       cmocka_unit_test(test_families_bf16),
        cmocka_unit_test(test_allreduce_bf16), cmocka_unit_test(test_shared_gpu_stages),
        cmocka_unit_test(test_dead_peer),      cmocka_unit_test(test_gpu_timeline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
