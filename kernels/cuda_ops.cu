/* cuda_ops.cu — CUDA kernels for the elementwise and reduction ops (same
 * contracts as the CPU reference in cpu_ops.c; compared against it by
 * tests/test_kernels_cuda.c).  Every launch is on the context's stream,
 * allocates nothing and never synchronises, so it can be graph-captured.
 * Reductions that feed reported values (MAE, RMSPE, batch-norm statistics)
 * use fixed-order block trees: deterministic run to run.  The embedding
 * backward uses atomics: its summation order, and so its last bits, vary. */
#include <math.h>

#include "cuda_common.cuh"
#include "rt_rng.h"

#define T256 256

/* ---- embedding -------------------------------------------------------------- */

__global__ void k_embed_fwd(const int32_t *idx, int64_t ldi, const int32_t *rowbase,
                            const float *tab, int64_t ldt, float *out, int64_t ldo, int64_t B,
                            int C, int d)
{
    const int64_t per_row = (int64_t)C * d, total = B * per_row;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = t / per_row, rem = t - b * per_row;
        int c = (int)(rem / d), j = (int)(rem - (int64_t)c * d);
        int64_t row = (int64_t)rowbase[c] + idx[b * ldi + c];
        out[b * ldo + rem] = tab[row * ldt + j];
    }
}

__global__ void k_embed_bwd(const int32_t *idx, int64_t ldi, const int32_t *rowbase,
                            const float *g, int64_t ldg, float *dtab, int64_t ldt, int64_t B,
                            int C, int d)
{
    const int64_t per_row = (int64_t)C * d, total = B * per_row;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = t / per_row, rem = t - b * per_row;
        int c = (int)(rem / d), j = (int)(rem - (int64_t)c * d);
        int64_t row = (int64_t)rowbase[c] + idx[b * ldi + c];
        atomicAdd(&dtab[row * ldt + j], g[b * ldg + rem]);
    }
}

void rt_cuda_embed_fwd(rt_kctx *ctx, rt_view idx, const int32_t *rowbase, rt_view table, rt_view out)
{
    const int64_t total = idx.rows * idx.cols * table.cols;
    if (total == 0)
        return;
    k_embed_fwd<<<grid_for(total, T256), T256, 0, CS(ctx)->stream>>>(
        RT_I(idx), idx.ld, rowbase, RT_F(table), table.ld, RT_F(out), out.ld, idx.rows,
        (int)idx.cols, (int)table.cols);
    record_launch(CS(ctx));
}

void rt_cuda_embed_bwd(rt_kctx *ctx, rt_view idx, const int32_t *rowbase, rt_view dout, rt_view dtable)
{
    cudaMemsetAsync(dtable.p, 0, (size_t)(dtable.rows * dtable.ld) * sizeof(float), CS(ctx)->stream);
    const int64_t total = idx.rows * idx.cols * dtable.cols;
    if (total == 0)
        return;
    k_embed_bwd<<<grid_for(total, T256), T256, 0, CS(ctx)->stream>>>(
        RT_I(idx), idx.ld, rowbase, RT_F(dout), dout.ld, RT_F(dtable), dtable.ld, idx.rows,
        (int)idx.cols, (int)dtable.cols);
    record_launch(CS(ctx));
}

/* ---- batch norm: one block per feature ------------------------------------- */

__global__ void k_bn_fwd_train(const float *x, int64_t ldx, int64_t B, const float *gamma,
                               const float *beta, float *rm, float *rv, float mom, float eps,
                               float *smean, float *sinv, float *y, int64_t ldy)
{
    __shared__ double shm[T256];
    const int f = blockIdx.x;
    double s = 0.0;
    for (int64_t b = threadIdx.x; b < B; b += T256)
        s += x[b * ldx + f];
    const double mean = B > 0 ? block_sum<T256>(s, shm) / (double)B : 0.0;
    double v = 0.0;
    for (int64_t b = threadIdx.x; b < B; b += T256) {
        double dv = x[b * ldx + f] - mean;
        v += dv * dv;
    }
    const double var = B > 0 ? block_sum<T256>(v, shm) / (double)B : 0.0;
    const double invstd = 1.0 / sqrt(var + eps);
    if (threadIdx.x == 0) {
        smean[f] = (float)mean;
        sinv[f] = (float)invstd;
        rm[f] = (float)(rm[f] * (double)mom + mean * (1.0 - mom));
        rv[f] = (float)(rv[f] * (double)mom + var * (1.0 - mom));
    }
    const double scale = gamma[f] * invstd, shift = beta[f];
    for (int64_t b = threadIdx.x; b < B; b += T256)
        y[b * ldy + f] = (float)((x[b * ldx + f] - mean) * scale + shift);
}

__global__ void k_bn_fwd_eval(const float *x, int64_t ldx, int64_t B, int64_t F, const float *gamma,
                              const float *beta, const float *rm, const float *rv, float eps,
                              float *y, int64_t ldy)
{
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < B * F;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = t / F, f = t - b * F;
        double invstd = 1.0 / sqrt((double)rv[f] + eps);
        y[b * ldy + f] = (float)(((double)x[b * ldx + f] - rm[f]) * gamma[f] * invstd + beta[f]);
    }
}

__global__ void k_bn_bwd(const float *x, int64_t ldx, const float *dy, int64_t ldg, int64_t B,
                         const float *gamma, const float *smean, const float *sinv, float *dgamma,
                         float *dbeta, float *dx, int64_t lddx)
{
    __shared__ double shm[T256];
    const int f = blockIdx.x;
    const double mu = smean[f], is = sinv[f];
    double sg = 0.0, sgx = 0.0;
    for (int64_t b = threadIdx.x; b < B; b += T256) {
        double g = dy[b * ldg + f];
        sg += g;
        sgx += g * (x[b * ldx + f] - mu) * is;
    }
    sg = block_sum<T256>(sg, shm);
    sgx = block_sum<T256>(sgx, shm);
    if (threadIdx.x == 0) {
        dbeta[f] = (float)sg;
        dgamma[f] = (float)sgx;
    }
    if (!dx || B == 0)
        return;
    const double k = gamma[f] * is / (double)B;
    for (int64_t b = threadIdx.x; b < B; b += T256) {
        double xhat = (x[b * ldx + f] - mu) * is;
        dx[b * lddx + f] = (float)(k * ((double)B * dy[b * ldg + f] - sg - xhat * sgx));
    }
}

void rt_cuda_bn_fwd(rt_kctx *ctx, rt_view x, const float *gamma, const float *beta, float *run_mean,
                    float *run_var, float momentum, float eps, bool train, float *save_mean,
                    float *save_invstd, rt_view y)
{
    if (x.cols == 0)
        return;
    cudaStream_t st = CS(ctx)->stream;
    if (train)
        k_bn_fwd_train<<<(unsigned)x.cols, T256, 0, st>>>(RT_F(x), x.ld, x.rows, gamma, beta,
                                                          run_mean, run_var, momentum, eps,
                                                          save_mean, save_invstd, RT_F(y), y.ld);
    else if (x.rows > 0)
        k_bn_fwd_eval<<<grid_for(x.rows * x.cols, T256), T256, 0, st>>>(
            RT_F(x), x.ld, x.rows, x.cols, gamma, beta, run_mean, run_var, eps, RT_F(y), y.ld);
    record_launch(CS(ctx));
}

void rt_cuda_bn_bwd(rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma, const float *save_mean,
                    const float *save_invstd, float *dgamma, float *dbeta, rt_view dx)
{
    if (x.cols == 0)
        return;
    k_bn_bwd<<<(unsigned)x.cols, T256, 0, CS(ctx)->stream>>>(
        RT_F(x), x.ld, RT_F(dy), dy.ld, x.rows, gamma, save_mean, save_invstd, dgamma, dbeta,
        dx.p ? RT_F(dx) : NULL, dx.ld);
    record_launch(CS(ctx));
}

/* ---- dropout: one thread per Philox block of four elements ---------------- */

__global__ void k_dropout(float *x, int64_t C, int64_t ld, uint64_t total, float rate, uint32_t k0,
                          uint32_t k1, const int64_t *step)
{
    const uint64_t t = (uint64_t)*step;
    const float keep_scale = 1.0f / (1.0f - rate);
    const uint64_t nq = (total + 3) / 4;
    for (uint64_t q = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; q < nq;
         q += (uint64_t)gridDim.x * blockDim.x) {
        rt_u32x4 c = {{(uint32_t)q, (uint32_t)(q >> 32), (uint32_t)t, (uint32_t)(t >> 32)}};
        rt_u32x4 bits = rt_philox4x32(c, k0, k1);
        for (int w = 0; w < 4; w++) {
            uint64_t e = q * 4 + (uint64_t)w;
            if (e >= total)
                break;
            uint64_t r = e / (uint64_t)C, j = e - r * (uint64_t)C;
            float u = (float)(bits.v[w] >> 8) * (1.0f / 16777216.0f);
            float *p = x + r * (uint64_t)ld + j;
            *p = u >= rate ? *p * keep_scale : 0.0f;
        }
    }
}

void rt_cuda_dropout(rt_kctx *ctx, rt_view x, float rate, uint64_t seed, uint32_t stream,
                     const int64_t *step)
{
    const uint64_t total = (uint64_t)(x.rows * x.cols);
    if (total == 0)
        return;
    k_dropout<<<grid_for((int64_t)((total + 3) / 4), T256), T256, 0, CS(ctx)->stream>>>(
        RT_F(x), x.cols, x.ld, total, rate, (uint32_t)seed ^ stream, (uint32_t)(seed >> 32), step);
    record_launch(CS(ctx));
}

/* ---- head ---------------------------------------------------------------------- */

__global__ void k_head_fwd(const float *z, int64_t n, float scale, float *pred)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        pred[i] = scale / (1.0f + expf(-z[i]));
}

__global__ void k_head_bwd(const float *pred, const float *dpred, int64_t n, float scale, float *dz)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float s = pred[i] / scale;
        dz[i] = dpred[i] * scale * s * (1.0f - s);
    }
}

void rt_cuda_head_fwd(rt_kctx *ctx, const float *z, int64_t n, float scale, float *pred)
{
    if (n == 0)
        return;
    k_head_fwd<<<grid_for(n, T256), T256, 0, CS(ctx)->stream>>>(z, n, scale, pred);
    record_launch(CS(ctx));
}

void rt_cuda_head_bwd(rt_kctx *ctx, const float *pred, const float *dpred, int64_t n, float scale,
                      float *dz)
{
    if (n == 0)
        return;
    k_head_bwd<<<grid_for(n, T256), T256, 0, CS(ctx)->stream>>>(pred, dpred, n, scale, dz);
    record_launch(CS(ctx));
}

/* ---- loss and metric: one block, fixed-order reduction ---------------------- */

#define T1K 1024

__global__ void k_mae(const float *pred, const float *y, int64_t n, float *dpred, double *acc)
{
    __shared__ double shm[T1K];
    const float inv = n > 0 ? 1.0f / (float)n : 0.0f;
    double s = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += T1K) {
        double d = (double)pred[i] - (double)y[i];
        s += fabs(d);
        if (dpred)
            dpred[i] = d > 0.0 ? inv : (d < 0.0 ? -inv : 0.0f);
    }
    s = block_sum<T1K>(s, shm);
    if (threadIdx.x == 0) {
        acc[0] += s;
        acc[1] += (double)n;
    }
}

__global__ void k_rmspe(const float *pred, const float *y, int64_t n, double *acc)
{
    __shared__ double shm[T1K];
    double s = 0.0, c = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += T1K) {
        if (y[i] > 0.001f) {
            double r = 1.0 - exp((double)pred[i] - (double)y[i]);
            s += r * r;
            c += 1.0;
        }
    }
    s = block_sum<T1K>(s, shm);
    c = block_sum<T1K>(c, shm);
    if (threadIdx.x == 0) {
        acc[0] += s;
        acc[1] += c;
    }
}

void rt_cuda_mae(rt_kctx *ctx, const float *pred, const float *y, int64_t n, float *dpred, double *acc)
{
    k_mae<<<1, T1K, 0, CS(ctx)->stream>>>(pred, y, n, dpred, acc);
    record_launch(CS(ctx));
}

void rt_cuda_rmspe(rt_kctx *ctx, const float *pred, const float *y, int64_t n, double *acc)
{
    k_rmspe<<<1, T1K, 0, CS(ctx)->stream>>>(pred, y, n, acc);
    record_launch(CS(ctx));
}

/* ---- Adam over the flat buffer: one launch, segments in shared memory ------- */

#define MAX_SEGS 256

__global__ void k_adam(float *p, const float *g, float *m, float *v, int64_t n,
                       const rt_adam_seg *segs, int nseg, rt_adam_hp hp, const int64_t *step)
{
    __shared__ int64_t s_end[MAX_SEGS];
    __shared__ float s_l2x2[MAX_SEGS];
    __shared__ float s_lrt;
    for (int i = threadIdx.x; i < nseg; i += blockDim.x) {
        s_end[i] = segs[i].off + segs[i].len;
        s_l2x2[i] = 2.0f * segs[i].l2;
    }
    if (threadIdx.x == 0) {
        double t = (double)(*step + 1);
        s_lrt = (float)(hp.lr * sqrt(1.0 - pow((double)hp.beta2, t)) / (1.0 - pow((double)hp.beta1, t)));
    }
    __syncthreads();
    const float b1 = hp.beta1, b2 = hp.beta2, c1 = 1.0f - b1, c2 = 1.0f - b2;
    int seg = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        /* first segment whose end is past i (binary search; segments ordered) */
        if (i >= s_end[seg] || (seg > 0 && i < s_end[seg - 1])) {
            int lo = 0, hi = nseg - 1;
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (s_end[mid] > i)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            seg = lo;
        }
        float pi = p[i];
        float gi = g[i] * hp.grad_scale + s_l2x2[seg] * pi;
        float mi = b1 * m[i] + c1 * gi;
        float vi = b2 * v[i] + c2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = pi - s_lrt * mi / (sqrtf(vi) + hp.eps);
    }
}

void rt_cuda_adam(rt_kctx *ctx, float *p, const float *g, float *m, float *v, int64_t n,
                  const rt_adam_seg *segs, int nseg, rt_adam_hp hp, const int64_t *step)
{
    RT_ASSERT(nseg <= MAX_SEGS);
    if (n == 0 || nseg == 0)
        return;
    k_adam<<<grid_for(n, T256), T256, 0, CS(ctx)->stream>>>(p, g, m, v, n, segs, nseg, hp, step);
    record_launch(CS(ctx));
}

__global__ void k_step_incr(int64_t *step) { *step += 1; }

void rt_cuda_step_incr(rt_kctx *ctx, int64_t *step)
{
    k_step_incr<<<1, 1, 0, CS(ctx)->stream>>>(step);
    record_launch(CS(ctx));
}

__global__ void k_scale(float *p, int64_t n, float s)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        p[i] *= s;
}

void rt_cuda_scale(rt_kctx *ctx, float *p, int64_t n, float s)
{
    if (n == 0)
        return;
    k_scale<<<grid_for(n, T256), T256, 0, CS(ctx)->stream>>>(p, n, s);
    record_launch(CS(ctx));
}
