/* cpu_ops.c — CPU implementations of the elementwise and reduction ops:
 * embedding gather/scatter-add, batch norm, dropout, scaled-sigmoid head,
 * MAE, exp-RMSPE and Adam (contracts in rt_kernels.h).
 *
 * These are the reference the CUDA kernels are tested against, so they are
 * written plainly: fixed iteration orders (bitwise deterministic for a given
 * thread count: every parallel loop partitions the output, never a shared
 * accumulator), double accumulators for sums, OpenMP over the outer loop
 * where the work is large enough to pay for it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu_backend.h"
#include "cpu_gemm.h"
#include "cpu_simd.h"
#include "kctx_impl.h"
#include "loss_math.h"
#include "rt_bf16.h"
#include "rt_rng.h"

/* below this many elements a loop runs on the calling thread */
#define PAR_MIN 32768

void rt_cpu_embed_fwd(rt_kctx *ctx, rt_view idx, const rt_embed_col *cols, const float *tab,
                      rt_view out)
{
    const int64_t B = idx.rows, C = idx.cols;
    const int32_t *ix = RT_I(idx);
    float *o = RT_F(out);
    int64_t work = 0;
    for (int64_t c = 0; c < C; c++)
        work += B * cols[c].dim;
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (work > PAR_MIN)
    for (int64_t b = 0; b < B; b++) {
        for (int64_t c = 0; c < C; c++) {
            const rt_embed_col *ec = &cols[c];
            const int64_t v = ix[b * idx.ld + c];
            RT_ASSERT(v >= 0 && v < ec->vocab && ec->ooff + ec->dim <= out.cols);
            const float *src = tab + ec->toff + v * ec->dim;
            float *dst = o + b * out.ld + ec->ooff;
            for (int64_t j = 0; j < ec->dim; j++)
                dst[j] = src[j];
        }
    }
}

void rt_cpu_embed_bwd(rt_kctx *ctx, rt_view idx, const rt_embed_col *cols, rt_view dout, float *dt,
                      int64_t ntab)
{
    const int64_t B = idx.rows, C = idx.cols;
    const int32_t *ix = RT_I(idx);
    const float *g = RT_F(dout);
    memset(dt, 0, (size_t)ntab * sizeof(float));
    int64_t work = 0;
    for (int64_t c = 0; c < C; c++)
        work += B * cols[c].dim;
    /* each column's table is its own block of rows, so columns can run in
     * parallel without races; within a column rows are added in order */
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (work > PAR_MIN)
    for (int64_t c = 0; c < C; c++) {
        const rt_embed_col *ec = &cols[c];
        RT_ASSERT(ec->toff + (int64_t)ec->vocab * ec->dim <= ntab);
        for (int64_t b = 0; b < B; b++) {
            const int64_t v = ix[b * idx.ld + c];
            RT_ASSERT(v >= 0 && v < ec->vocab);
            float *dst = dt + ec->toff + v * ec->dim;
            const float *src = g + b * dout.ld + ec->ooff;
            for (int64_t j = 0; j < ec->dim; j++)
                dst[j] += src[j];
        }
    }
}

/* Features are processed in blocks so the per-feature accumulators live on
 * the stack whatever F is. */
#define BN_BLOCK 64

/* y = (x - center) * scale + shift over nf columns, the subtraction in
 * double: keeps precision for features with a large offset and small spread */
static void bn_apply(const float *xp, int64_t ldx, int64_t B, int64_t nf, const double *center,
                     const double *scale, const double *shift, float *yp, int64_t ldy)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t f = 0; f < nf; f++)
            yp[b * ldy + f] = (float)(((double)xp[b * ldx + f] - center[f]) * scale[f] + shift[f]);
}

void rt_cpu_bn_fwd(rt_kctx *ctx, rt_view x, const float *gamma, const float *beta, float *run_mean,
                   float *run_var, float momentum, float eps, bool train, float *save_mean,
                   float *save_invstd, rt_view y)
{
    (void)ctx;
    const int64_t B = x.rows, F = x.cols;
    const float *xp = RT_F(x);
    float *yp = RT_F(y);
    for (int64_t f0 = 0; f0 < F; f0 += BN_BLOCK) {
        int64_t nf = F - f0 < BN_BLOCK ? F - f0 : BN_BLOCK;
        double mean[BN_BLOCK], var[BN_BLOCK];
        double center[BN_BLOCK], scale[BN_BLOCK], shift[BN_BLOCK];
        if (train) {
            for (int64_t f = 0; f < nf; f++)
                mean[f] = var[f] = 0.0;
            for (int64_t b = 0; b < B; b++)
                for (int64_t f = 0; f < nf; f++)
                    mean[f] += xp[b * x.ld + f0 + f];
            for (int64_t f = 0; f < nf; f++)
                mean[f] = B > 0 ? mean[f] / (double)B : 0.0;
            for (int64_t b = 0; b < B; b++)
                for (int64_t f = 0; f < nf; f++) {
                    double dv = xp[b * x.ld + f0 + f] - mean[f];
                    var[f] += dv * dv;
                }
            for (int64_t f = 0; f < nf; f++) {
                var[f] = B > 0 ? var[f] / (double)B : 0.0;
                double invstd = 1.0 / sqrt(var[f] + eps);
                save_mean[f0 + f] = (float)mean[f];
                save_invstd[f0 + f] = (float)invstd;
                run_mean[f0 + f] = (float)(run_mean[f0 + f] * momentum + mean[f] * (1.0 - momentum));
                run_var[f0 + f] = (float)(run_var[f0 + f] * momentum + var[f] * (1.0 - momentum));
                center[f] = mean[f];
                scale[f] = gamma[f0 + f] * invstd;
                shift[f] = beta[f0 + f];
            }
        } else {
            for (int64_t f = 0; f < nf; f++) {
                double invstd = 1.0 / sqrt((double)run_var[f0 + f] + eps);
                center[f] = run_mean[f0 + f];
                scale[f] = gamma[f0 + f] * invstd;
                shift[f] = beta[f0 + f];
            }
        }
        bn_apply(xp + f0, x.ld, B, nf, center, scale, shift, yp + f0, y.ld);
    }
}

/* Training-mode forward with the batch's statistics given (sync BN: the
 * global batch's, in double): the same centre and scale, hence the same y, as
 * rt_cpu_bn_fwd computing them itself. Nothing is saved or moved here. */
void rt_cpu_bn_fwd_given(rt_kctx *ctx, rt_view x, const float *gamma, const float *beta,
                         const double *mean, const double *var, float eps, rt_view y)
{
    (void)ctx;
    for (int64_t f0 = 0; f0 < x.cols; f0 += BN_BLOCK) {
        int64_t nf = x.cols - f0 < BN_BLOCK ? x.cols - f0 : BN_BLOCK;
        double scale[BN_BLOCK], shift[BN_BLOCK];
        for (int64_t f = 0; f < nf; f++) {
            scale[f] = gamma[f0 + f] * (1.0 / sqrt(var[f0 + f] + eps));
            shift[f] = beta[f0 + f];
        }
        bn_apply(RT_F(x) + f0, x.ld, x.rows, nf, mean + f0, scale, shift, RT_F(y) + f0, y.ld);
    }
}

void rt_cpu_bn_bwd(rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma, const float *save_mean,
                   const float *save_invstd, float *dgamma, float *dbeta, rt_view dx)
{
    (void)ctx;
    const int64_t B = x.rows, F = x.cols;
    const float *xp = RT_F(x), *g = RT_F(dy);
    for (int64_t f0 = 0; f0 < F; f0 += BN_BLOCK) {
        int64_t nf = F - f0 < BN_BLOCK ? F - f0 : BN_BLOCK;
        double sg[BN_BLOCK] = {0}, sgx[BN_BLOCK] = {0};
        for (int64_t b = 0; b < B; b++)
            for (int64_t f = 0; f < nf; f++) {
                double xhat = (xp[b * x.ld + f0 + f] - save_mean[f0 + f]) * (double)save_invstd[f0 + f];
                double gv = g[b * dy.ld + f0 + f];
                sg[f] += gv;
                sgx[f] += gv * xhat;
            }
        for (int64_t f = 0; f < nf; f++) {
            dbeta[f0 + f] = (float)sg[f];
            dgamma[f0 + f] = (float)sgx[f];
        }
        if (!dx.p || B == 0)
            continue;
        float *dxp = RT_F(dx);
        /* dx = gamma*invstd/B * (B*dy - sum(dy) - xhat*sum(dy*xhat)) */
        for (int64_t b = 0; b < B; b++)
            for (int64_t f = 0; f < nf; f++) {
                double is = save_invstd[f0 + f];
                double xhat = (xp[b * x.ld + f0 + f] - save_mean[f0 + f]) * is;
                double v = (double)B * g[b * dy.ld + f0 + f] - sg[f] - xhat * sgx[f];
                dxp[b * dx.ld + f0 + f] = (float)(gamma[f0 + f] * is / (double)B * v);
            }
    }
}

/* dx of a batch norm whose statistics were the global batch's: the sums
 * over every rank's rows given (double), count the global rows. */
void rt_cpu_bn_bwd_given(rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma,
                         const float *save_mean, const float *save_invstd, const double *sum_dy,
                         const double *sum_dy_xhat, double count, rt_view dx)
{
    (void)ctx;
    const float *xp = RT_F(x), *g = RT_F(dy);
    float *dxp = RT_F(dx);
    for (int64_t b = 0; b < x.rows; b++)
        for (int64_t f = 0; f < x.cols; f++) {
            const double is = save_invstd[f], xhat = (xp[b * x.ld + f] - save_mean[f]) * is;
            const double v = count * g[b * dy.ld + f] - sum_dy[f] - xhat * sum_dy_xhat[f];
            dxp[b * dx.ld + f] = (float)(gamma[f] * is / count * v);
        }
}

void rt_cpu_dropout(rt_kctx *ctx, rt_view x, float rate, uint64_t seed, uint32_t stream,
                    const int64_t *step)
{
    const int64_t R = x.rows, C = x.cols;
    const uint64_t t = (uint64_t)*step;
    float *p = RT_F(x);
    /* element numbering is r*C + j whatever the row stride (see rt_rng_u32) */
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (R * C > PAR_MIN / 8)
    for (int64_t r = 0; r < R; r++)
        rt_simd_dropout(p + r * x.ld, C, (uint64_t)(r * C), rate, (uint32_t)seed ^ stream,
                        (uint32_t)(seed >> 32), t);
}

void rt_cpu_head_fwd(rt_kctx *ctx, const float *z, int64_t n, float scale, float *pred)
{
    (void)ctx;
    for (int64_t i = 0; i < n; i++)
        pred[i] = scale / (1.0f + expf(-z[i]));
}

void rt_cpu_head_bwd(rt_kctx *ctx, const float *pred, const float *dpred, int64_t n, float scale,
                     float *dz)
{
    (void)ctx;
    for (int64_t i = 0; i < n; i++)
        dz[i] = rt_head_grad(dpred[i], pred[i], scale);
}

void rt_cpu_optim(rt_kctx *ctx, float *p, const float *g, float *m, float *v, int64_t n,
                  const rt_adam_seg *segs, int nseg, const rt_adam_hp *hpp, int64_t *step,
                  const double *gsq)
{
    const rt_adam_hp hp = *hpp;
    /* the step size with the bias correction folded in, for the update that
     * makes the step *step + 1: lr * sqrt(1 - b2^t) / (1 - b1^t) */
    const double t = (double)(*step + 1);
    const float lrt = (float)(hp.lr * sqrt(1.0 - pow(hp.beta2, t)) / (1.0 - pow(hp.beta1, t)));
    float gs = hp.grad_scale;
    if (hp.clip_norm > 0 && gsq) { /* PyTorch's clip_grad_norm_ over the averaged gradient */
        const double coef = hp.clip_norm / (sqrt(*gsq) * hp.grad_scale + 1e-6);
        if (coef < 1.0)
            gs = (float)(hp.grad_scale * coef);
    }
    int64_t covered = 0;
    for (int s = 0; s < nseg; s++) {
        const int64_t lo = segs[s].off, len = segs[s].len;
        RT_ASSERT(lo == covered && lo + len <= n);
        covered = lo + len;
        /* adam: weight_decay joins the L2 in the gradient (torch.optim.Adam's
         * weight_decay), on the decay segments only (rt_cpu_optim_seg's set) */
        const float l2x2 = 2.0f * segs[s].l2 +
                           (hp.kind == RT_OPTIM_ADAM && segs[s].decay ? hp.weight_decay : 0.0f);
        /* chunks of 16K elements: enough work per thread, cache-sized */
        const int64_t chunk = 16384, nchunks = (len + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) num_threads(ctx->threads) if (len > PAR_MIN)
        for (int64_t c = 0; c < nchunks; c++) {
            int64_t i = lo + c * chunk, k = len - c * chunk < chunk ? len - c * chunk : chunk;
            if (hp.kind == RT_OPTIM_ADAM) {
                rt_simd_adam(p + i, g + i, m + i, v + i, k, gs, l2x2, hp.beta1, hp.beta2, lrt,
                             hp.eps);
            } else {
                rt_adam_seg part = segs[s];
                part.len = k;
                rt_cpu_optim_seg(&hp, &part, p + i, g + i, m + i, v + i, (int64_t)t, gs);
            }
        }
    }
    RT_ASSERT(covered == n);
    (*step)++;
}

void rt_cpu_scale(rt_kctx *ctx, float *p, int64_t n, float s)
{
#pragma omp parallel for simd schedule(static) num_threads(ctx->threads) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        p[i] *= s;
}

/* bf16 as the CPU ring rounds it (rt_bf16.h) */
void rt_cpu_to_bf16(rt_kctx *ctx, const float *x, uint16_t *y, int64_t n)
{
#pragma omp parallel for simd schedule(static) num_threads(ctx->threads) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        y[i] = rt_bf16_bits(x[i]);
}

void rt_cpu_from_bf16(rt_kctx *ctx, const uint16_t *x, float *y, int64_t n)
{
#pragma omp parallel for simd schedule(static) num_threads(ctx->threads) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        y[i] = rt_bf16_float(x[i]);
}

/* ---- context and memory ------------------------------------------------------ */

static int cpu_count(void) { return 1; }
static int cpu_select(int dev) { return dev == 0 ? 0 : -1; }
static void cpu_name(char *buf, size_t len) { snprintf(buf, len, "cpu"); }

static rt_status cpu_init(rt_kctx *ctx, char *err)
{
    (void)err;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (ctx->threads <= 0)
        ctx->threads = (int)(cores > 0 ? cores : 1);
    rt_cpu_set_threads(ctx->threads);
    return RT_OK;
}

static void cpu_fini(rt_kctx *ctx) { rt_gemm_free(ctx); }

static rt_status cpu_done(rt_kctx *ctx, char *err)
{
    (void)ctx;
    (void)err;
    return RT_OK; /* every CPU op has finished when it returns */
}

/* Tensors of 2 MiB and more (the parameters, gradients and Adam moments,
 * 43 MB for the Rossmann model; the activations at large batches) on
 * transparent huge pages, 2 MiB aligned: fewer TLB misses for Adam's
 * streams and the GEMM's strided packing.  Zen 3, train_step builds with
 * and without, 8 alternating runs: batch 100 27.4 vs 27.8 ms (1 thread),
 * 14.8 vs 15.7 ms (2); batch 1024 204.5 vs 210.7 ms (1). */
#define HUGE_PAGE ((size_t)2 << 20)

static rt_status cpu_malloc(size_t bytes, void **out)
{
    if (bytes >= HUGE_PAGE) {
        size_t rounded = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        *out = aligned_alloc(HUGE_PAGE, rounded);
        if (*out)
            (void)madvise(*out, rounded, MADV_HUGEPAGE);
        return *out ? RT_OK : RT_ERR_NOMEM;
    }
    size_t rounded = (bytes + 63) & ~(size_t)63;
    *out = aligned_alloc(64, rounded ? rounded : 64);
    return *out ? RT_OK : RT_ERR_NOMEM;
}

static void cpu_free(void *p) { free(p); }

/* A number read from a one-line file (cgroup's memory.max: "max" is none). */
static bool read_number(const char *path, int64_t *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    long long v = 0;
    bool ok = fscanf(f, "%lld", &v) == 1;
    fclose(f);
    *out = v;
    return ok;
}

static rt_status cpu_mem_available(rt_kctx *ctx, int64_t *bytes, char *err)
{
    (void)ctx;
    int64_t avail = -1;
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        long long kb;
        if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
            avail = (int64_t)kb * 1024;
    }
    if (f)
        fclose(f);
    if (avail < 0)
        return rt_err(err, RT_ERR_IO, "cannot read MemAvailable from /proc/meminfo");
    /* cgroup v2: this process's group may allow less */
    f = fopen("/proc/self/cgroup", "r");
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::", 3) != 0)
            continue;
        line[strcspn(line, "\n")] = '\0';
        char path[512];
        int64_t max, cur;
        snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.max", line + 3);
        if (!read_number(path, &max))
            break;
        snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.current", line + 3);
        if (read_number(path, &cur) && max - cur < avail)
            avail = max > cur ? max - cur : 0;
    }
    if (f)
        fclose(f);
    *bytes = avail;
    return RT_OK;
}

static void cpu_memcpy(rt_kctx *ctx, void *dst, const void *src, size_t bytes, rt_copy kind)
{
    (void)ctx;
    (void)kind;
    memmove(dst, src, bytes);
}

static void cpu_memset(rt_kctx *ctx, void *p, int value, size_t bytes)
{
    (void)ctx;
    memset(p, value, bytes);
}

#define CPU_OP(name, params) .name = rt_cpu_##name,
const rt_kernel_ops rt_cpu_kernel_ops = {.name = "CPU",
                                         .device_count = cpu_count,
                                         .select_device = cpu_select,
                                         .device_name = cpu_name,
                                         .init = cpu_init,
                                         .fini = cpu_fini,
                                         .sync = cpu_done,
                                         .check = cpu_done,
                                         .mem_available = cpu_mem_available,
                                         .malloc_dev = cpu_malloc,
                                         .free_dev = cpu_free,
                                         .malloc_host = cpu_malloc,
                                         .free_host = cpu_free,
                                         .memcpy_async = cpu_memcpy,
                                         .memset_async = cpu_memset,
                                         RT_KERNEL_OPS(CPU_OP) RT_KERNEL_CPU_OPS(CPU_OP)};
