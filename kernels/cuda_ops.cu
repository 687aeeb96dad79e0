/* cuda_ops.cu — CUDA kernels for the elementwise and reduction ops (same
 * contracts as the CPU reference in cpu_ops.c; compared against it by
 * tests/test_kernels_cuda.c).  Every launch is on the context's stream,
 * allocates nothing and never synchronises, so it can be graph-captured.
 * Every reduction is deterministic run to run: MAE, RMSPE and the
 * batch-norm statistics use fixed-order trees and chunk partials, and the
 * embedding backward sums in fixed point (integer addition does not depend
 * on the order the atomics land in), so a GPU run is bitwise reproducible
 * for a fixed number of ranks, as a CPU run is. */
#include <math.h>

#include "cuda_common.cuh"
#include "loss_math.h"
#include "rt_bf16.h"
#include "rt_rng.h"

#define T256 256

/* ---- embedding -------------------------------------------------------------- */

/* A grid-stride loop over (row, column) pairs, a warp each (its lanes take
 * the column's vector): pair t of n. */
#define FOR_EACH_PAIR(t, n)                                                                        \
    for (int64_t t = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32; t < (n);         \
         t += (int64_t)gridDim.x * (blockDim.x / 32))

/* One warp per (row, column) pair: its lanes copy the column's vector. */
__global__ void k_embed_fwd(const int32_t *idx, int64_t ldi, const rt_embed_col *cols,
                            const float *tab, float *out, int64_t ldo, int64_t B, int C)
{
    const int lane = threadIdx.x & 31;
    FOR_EACH_PAIR(t, B * C)
    {
        const int64_t b = t / C;
        const int c = (int)(t - b * C);
        const rt_embed_col ec = cols[c];
        const float *src = tab + ec.toff + (int64_t)idx[b * ldi + c] * ec.dim;
        float *dst = out + b * ldo + ec.ooff;
        for (int j = lane; j < ec.dim; j += 32)
            dst[j] = src[j];
    }
}

/* Embedding backward in fixed point.  k_absmax finds m = max |g| over the
 * embeddings' gradients; every contribution is then scaled by 2^e with e
 * chosen so that any sum of B of them stays below 2^62 (e = 61 - ilogb(m) -
 * ceil(log2(B + 1))), rounded to an integer and added with 64-bit integer
 * atomics, whose result does not depend on their order; k_fixed_to_float
 * scales back.  The rounding error per term is 2^-e, below m * 2^-52 / B:
 * far under float precision. */
__global__ void __launch_bounds__(256) k_absmax(const rt_embed_col *cols, const float *g,
                                                int64_t ldg, int64_t B, int C, unsigned *maxbits)
{
    const int lane = threadIdx.x & 31;
    unsigned local = 0;
    FOR_EACH_PAIR(t, B * C)
    {
        const int64_t b = t / C;
        const rt_embed_col ec = cols[t - b * C];
        for (int j = lane; j < ec.dim; j += 32) {
            unsigned u = __float_as_uint(fabsf(g[b * ldg + ec.ooff + j])); /* ordered like the values */
            local = u > local ? u : local;
        }
    }
    /* the block's maximum (warp shuffles, then the 8 warps' through shared
     * memory), one atomic per block: at batch 8192 one same-address atomic
     * per thread took 115 us of an H100's 3.4 ms step */
    __shared__ unsigned warp_max[T256 / 32];
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned other = __shfl_xor_sync(0xffffffffu, local, o);
        local = other > local ? other : local;
    }
    if (lane == 0)
        warp_max[threadIdx.x / 32] = local;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x / 32); w++)
            local = warp_max[w] > local ? warp_max[w] : local;
        if (local)
            atomicMax(maxbits, local);
    }
}

__device__ __forceinline__ int fixed_exponent(const unsigned *maxbits, int64_t B)
{
    float m = __uint_as_float(*maxbits);
    if (!(m > 0.0f) || !isfinite(m))
        return 0;
    int lb = 0;
    while (((int64_t)1 << lb) < B + 1)
        lb++;
    return 61 - ilogbf(m) - lb;
}

__global__ void __launch_bounds__(256) k_embed_bwd_fixed(const int32_t *idx, int64_t ldi,
                                                         const rt_embed_col *cols, const float *g,
                                                         int64_t ldg, long long *acc, int64_t B,
                                                         int C, const unsigned *maxbits)
{
    const int e = fixed_exponent(maxbits, B);
    const int lane = threadIdx.x & 31;
    FOR_EACH_PAIR(t, B * C)
    {
        const int64_t b = t / C;
        const int c = (int)(t - b * C);
        const rt_embed_col ec = cols[c];
        long long *dst = acc + ec.toff + (int64_t)idx[b * ldi + c] * ec.dim;
        for (int j = lane; j < ec.dim; j += 32) {
            long long q = llrint(ldexp((double)g[b * ldg + ec.ooff + j], e));
            if (q)
                atomicAdd((unsigned long long *)&dst[j], (unsigned long long)q);
        }
    }
}

/* Also leaves the state zero for the next step, so that no memset node
 * precedes the embedding backward: each accumulator is zeroed by the thread
 * that reads it, and the block that finishes last (maxbits[1], a ticket)
 * zeroes the maximum, once every block has read it. */
__global__ void __launch_bounds__(256) k_fixed_to_float(long long *acc, int64_t n, float *out,
                                                        int64_t B, unsigned *maxbits)
{
    const int e = fixed_exponent(maxbits, B);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        out[i] = (float)ldexp((double)acc[i], -e);
        acc[i] = 0;
    }
    __syncthreads(); /* every thread of the block has read maxbits[0] */
    if (threadIdx.x == 0 && atomicAdd(&maxbits[1], 1u) == gridDim.x - 1) {
        maxbits[0] = 0;
        maxbits[1] = 0;
    }
}

/* Blocks for a warp per (row, column) pair. */
static unsigned pair_grid(int64_t pairs) { return grid_for(pairs * 32, T256); }

void rt_cuda_embed_fwd(rt_kctx *ctx, rt_view idx, const rt_embed_col *cols, const float *tables,
                       rt_view out)
{
    const int64_t pairs = idx.rows * idx.cols;
    if (pairs == 0)
        return;
    k_embed_fwd<<<pair_grid(pairs), T256, 0, CS(ctx)->stream>>>(RT_I(idx), idx.ld, cols, tables,
                                                                 RT_F(out), out.ld, idx.rows,
                                                                 (int)idx.cols);
    LAUNCHED(CS(ctx), "k_embed_fwd");
}

void rt_cuda_embed_bwd(rt_kctx *ctx, rt_view idx, const rt_embed_col *cols, rt_view dout,
                       float *dtables, int64_t ntab)
{
    cuda_state *s = CS(ctx);
    const size_t n = (size_t)ntab;
    if (n == 0)
        return;
    if (s->emb_acc_len < n) {
        /* the accumulators: made on the first (uncaptured) step, as the
         * trainer runs a step before it captures one */
        if (s->capturing) {
            after_op(s, cudaErrorStreamCaptureUnsupported,
                     "embedding backward (first run inside a graph capture)");
            return;
        }
        cudaFree(s->emb_acc);
        s->emb_acc = NULL;
        s->emb_acc_len = 0;
        cudaError_t e = cudaMalloc(&s->emb_acc, n * sizeof(long long));
        if (e == cudaSuccess) /* zero once: each step leaves them zero (k_fixed_to_float) */
            e = cudaMemsetAsync(s->emb_acc, 0, n * sizeof(long long), s->stream);
        if (e != cudaSuccess) {
            after_op(s, e, "cudaMalloc (embedding gradient accumulators)");
            return;
        }
        s->emb_acc_len = n;
    }
    const int64_t pairs = idx.rows * idx.cols;
    if (pairs > 0) {
        k_absmax<<<pair_grid(pairs), T256, 0, s->stream>>>(cols, RT_F(dout), dout.ld, idx.rows,
                                                           (int)idx.cols, s->maxbits);
        LAUNCHED(s, "k_absmax");
        k_embed_bwd_fixed<<<pair_grid(pairs), T256, 0, s->stream>>>(
            RT_I(idx), idx.ld, cols, RT_F(dout), dout.ld, s->emb_acc, idx.rows, (int)idx.cols,
            s->maxbits);
        LAUNCHED(s, "k_embed_bwd_fixed");
    }
    k_fixed_to_float<<<grid_for((int64_t)n, T256), T256, 0, s->stream>>>(s->emb_acc, (int64_t)n,
                                                                          dtables, idx.rows, s->maxbits);
    LAUNCHED(s, "k_fixed_to_float");
}

/* ---- batch norm: tiled, two-stage, deterministic ----------------------------
 * A (32 x 8) block covers 32 features (coalesced along a row) over one chunk
 * of rows; each thread keeps Welford statistics (or sums) of its rows, the 8
 * row groups and then the chunks are merged in a fixed order (Chan et al.'s
 * pairwise update), and an elementwise kernel applies the result.  The
 * partials buffer holds 2 doubles per feature of finished statistics, then
 * the chunks' partials. */

__device__ __forceinline__ void wf_merge(double &n, double &mean, double &m2, double nb, double meanb,
                                         double m2b)
{
    if (nb == 0.0)
        return;
    double nn = n + nb, d = meanb - mean;
    mean += d * nb / nn;
    m2 += m2b + d * d * n * nb / nn;
    n = nn;
}

/* Merges the chunks' (n, mean, m2) of column f in chunk order, and writes
 * the batch statistics and the running ones. */
__device__ static void bn_finalize_col(const double *part, int64_t chunks, int64_t F, int64_t f, float mom,
                                       float eps, float *rm, float *rv, float *smean, float *sinv,
                                       double *stats)
{
    double N = 0.0, M = 0.0, Q = 0.0;
    for (int64_t c = 0; c < chunks; c++) {
        const double *p = part + (c * F + f) * 3;
        wf_merge(N, M, Q, p[0], p[1], p[2]);
    }
    const double var = N > 0.0 ? Q / N : 0.0, invstd = 1.0 / sqrt(var + eps);
    smean[f] = (float)M;
    sinv[f] = (float)invstd;
    rm[f] = (float)(rm[f] * (double)mom + M * (1.0 - mom));
    rv[f] = (float)(rv[f] * (double)mom + var * (1.0 - mom));
    stats[2 * f] = M;
    stats[2 * f + 1] = invstd;
}

typedef struct bn_out {
    float mom, eps;
    float *rm, *rv, *smean, *sinv;
    double *stats;
} bn_out;

/* Per (32-column tile, chunk of rows) block: the chunk's Welford partials;
 * with tickets, the tile's last block merges them (bn_finalize_col): one
 * kernel for the statistics instead of two. */
__global__ void __launch_bounds__(256) k_bn_stats(const float *x, int64_t ldx, int64_t B, int64_t F,
                                                  int64_t rows_per_chunk, double *part, unsigned *tickets,
                                                  bn_out o)
{
    __shared__ double sh[3][8][33];
    const int64_t f = blockIdx.x * 32 + threadIdx.x;
    const int64_t r0 = blockIdx.y * rows_per_chunk;
    const int64_t r1 = r0 + rows_per_chunk < B ? r0 + rows_per_chunk : B;
    double n = 0.0, mean = 0.0, m2 = 0.0;
    if (f < F)
        for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {
            double v = x[r * ldx + f];
            n += 1.0;
            double dv = v - mean;
            mean += dv / n;
            m2 += dv * (v - mean);
        }
    sh[0][threadIdx.y][threadIdx.x] = n;
    sh[1][threadIdx.y][threadIdx.x] = mean;
    sh[2][threadIdx.y][threadIdx.x] = m2;
    __syncthreads();
    if (threadIdx.y == 0 && f < F) {
        double N = sh[0][0][threadIdx.x], M = sh[1][0][threadIdx.x], Q = sh[2][0][threadIdx.x];
        for (int k = 1; k < 8; k++)
            wf_merge(N, M, Q, sh[0][k][threadIdx.x], sh[1][k][threadIdx.x], sh[2][k][threadIdx.x]);
        double *p = part + (blockIdx.y * F + f) * 3;
        p[0] = N;
        p[1] = M;
        p[2] = Q;
    }
    if (tickets && last_of_tile(tickets, blockIdx.x, gridDim.y) && threadIdx.y == 0 && f < F)
        bn_finalize_col(part, gridDim.y, F, f, o.mom, o.eps, o.rm, o.rv, o.smean, o.sinv, o.stats);
}

__global__ void k_bn_finalize(const double *part, int64_t chunks, int64_t F, bn_out o)
{
    for (int64_t f = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; f < F;
         f += (int64_t)gridDim.x * blockDim.x)
        bn_finalize_col(part, chunks, F, f, o.mom, o.eps, o.rm, o.rv, o.smean, o.sinv, o.stats);
}

__global__ void k_bn_apply(const float *x, int64_t ldx, int64_t B, int64_t F, const float *gamma,
                           const float *beta, const double *stats, float *y, int64_t ldy)
{
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < B * F;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = t / F, f = t - b * F;
        const double scale = gamma[f] * stats[2 * f + 1];
        y[b * ldy + f] = (float)((x[b * ldx + f] - stats[2 * f]) * scale + beta[f]);
    }
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

__global__ void __launch_bounds__(256) k_bn_bwd_sums(const float *x, int64_t ldx, const float *dy,
                                                     int64_t ldg, int64_t B, int64_t F,
                                                     const float *smean, const float *sinv,
                                                     int64_t rows_per_chunk, double *part)
{
    __shared__ double sh[2][8][33];
    const int64_t f = blockIdx.x * 32 + threadIdx.x;
    const int64_t r0 = blockIdx.y * rows_per_chunk;
    const int64_t r1 = r0 + rows_per_chunk < B ? r0 + rows_per_chunk : B;
    double sg = 0.0, sgx = 0.0;
    if (f < F) {
        const double mu = smean[f], is = sinv[f];
        for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {
            double g = dy[r * ldg + f];
            sg += g;
            sgx += g * (x[r * ldx + f] - mu) * is;
        }
    }
    sh[0][threadIdx.y][threadIdx.x] = sg;
    sh[1][threadIdx.y][threadIdx.x] = sgx;
    __syncthreads();
    if (threadIdx.y == 0 && f < F) {
        double a = 0.0, b = 0.0;
        for (int k = 0; k < 8; k++) {
            a += sh[0][k][threadIdx.x];
            b += sh[1][k][threadIdx.x];
        }
        part[(blockIdx.y * F + f) * 2] = a;
        part[(blockIdx.y * F + f) * 2 + 1] = b;
    }
}

__global__ void k_bn_bwd_final(const double *part, int64_t chunks, int64_t F, float *dgamma,
                               float *dbeta, double *stats)
{
    for (int64_t f = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; f < F;
         f += (int64_t)gridDim.x * blockDim.x) {
        double sg = 0.0, sgx = 0.0;
        for (int64_t c = 0; c < chunks; c++) {
            sg += part[(c * F + f) * 2];
            sgx += part[(c * F + f) * 2 + 1];
        }
        dbeta[f] = (float)sg;
        dgamma[f] = (float)sgx;
        stats[2 * f] = sg;
        stats[2 * f + 1] = sgx;
    }
}

__global__ void k_bn_bwd_dx(const float *x, int64_t ldx, const float *dy, int64_t ldg, int64_t B,
                            int64_t F, const float *gamma, const float *smean, const float *sinv,
                            const double *stats, float *dx, int64_t lddx)
{
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < B * F;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = t / F, f = t - b * F;
        const double mu = smean[f], is = sinv[f], k = gamma[f] * is / (double)B;
        const double xhat = (x[b * ldx + f] - mu) * is;
        dx[b * lddx + f] = (float)(k * ((double)B * dy[b * ldg + f] - stats[2 * f] - xhat * stats[2 * f + 1]));
    }
}

void rt_cuda_bn_fwd(rt_kctx *ctx, rt_view x, const float *gamma, const float *beta, float *run_mean,
                    float *run_var, float momentum, float eps, bool train, float *save_mean,
                    float *save_invstd, rt_view y)
{
    cuda_state *s = CS(ctx);
    const int64_t B = x.rows, F = x.cols;
    if (F == 0)
        return;
    if (!train) {
        if (B > 0) {
            k_bn_fwd_eval<<<grid_for(B * F, T256), T256, 0, s->stream>>>(
                RT_F(x), x.ld, B, F, gamma, beta, run_mean, run_var, eps, RT_F(y), y.ld);
            LAUNCHED(s, "k_bn_fwd_eval");
        }
        return;
    }
    int64_t rows_per_chunk;
    const int64_t chunks = chunks_for(B, F, 5, &rows_per_chunk);
    double *stats = s->partials, *part = s->partials + 2 * F;
    dim3 grid((unsigned)((F + 31) / 32), (unsigned)chunks), block(32, 8);
    const bn_out o = {momentum, eps, run_mean, run_var, save_mean, save_invstd, stats};
    const bool fused = grid.x <= RT_CUDA_TICKETS;
    k_bn_stats<<<grid, block, 0, s->stream>>>(RT_F(x), x.ld, B, F, rows_per_chunk, part,
                                              fused ? s->tickets : NULL, o);
    LAUNCHED(s, "k_bn_stats");
    if (!fused) {
        k_bn_finalize<<<grid_for(F, T256), T256, 0, s->stream>>>(part, chunks, F, o);
        LAUNCHED(s, "k_bn_finalize");
    }
    if (B > 0) {
        k_bn_apply<<<grid_for(B * F, T256), T256, 0, s->stream>>>(RT_F(x), x.ld, B, F, gamma, beta, stats,
                                                                 RT_F(y), y.ld);
        LAUNCHED(s, "k_bn_apply");
    }
}

void rt_cuda_bn_bwd(rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma, const float *save_mean,
                    const float *save_invstd, float *dgamma, float *dbeta, rt_view dx)
{
    cuda_state *s = CS(ctx);
    const int64_t B = x.rows, F = x.cols;
    if (F == 0)
        return;
    int64_t rows_per_chunk;
    const int64_t chunks = chunks_for(B, F, 5, &rows_per_chunk);
    double *stats = s->partials, *part = s->partials + 2 * F;
    dim3 grid((unsigned)((F + 31) / 32), (unsigned)chunks), block(32, 8);
    k_bn_bwd_sums<<<grid, block, 0, s->stream>>>(RT_F(x), x.ld, RT_F(dy), dy.ld, B, F, save_mean,
                                                  save_invstd, rows_per_chunk, part);
    LAUNCHED(s, "k_bn_bwd_sums");
    k_bn_bwd_final<<<grid_for(F, T256), T256, 0, s->stream>>>(part, chunks, F, dgamma, dbeta, stats);
    LAUNCHED(s, "k_bn_bwd_final");
    if (dx.p && B > 0) {
        k_bn_bwd_dx<<<grid_for(B * F, T256), T256, 0, s->stream>>>(RT_F(x), x.ld, RT_F(dy), dy.ld, B, F,
                                                                  gamma, save_mean, save_invstd, stats,
                                                                  RT_F(dx), dx.ld);
        LAUNCHED(s, "k_bn_bwd_dx");
    }
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
    LAUNCHED(CS(ctx), "k_dropout");
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
         i += (int64_t)gridDim.x * blockDim.x)
        dz[i] = rt_head_grad(dpred[i], pred[i], scale);
}

void rt_cuda_head_fwd(rt_kctx *ctx, const float *z, int64_t n, float scale, float *pred)
{
    if (n == 0)
        return;
    k_head_fwd<<<grid_for(n, T256), T256, 0, CS(ctx)->stream>>>(z, n, scale, pred);
    LAUNCHED(CS(ctx), "k_head_fwd");
}

void rt_cuda_head_bwd(rt_kctx *ctx, const float *pred, const float *dpred, int64_t n, float scale,
                      float *dz)
{
    if (n == 0)
        return;
    k_head_bwd<<<grid_for(n, T256), T256, 0, CS(ctx)->stream>>>(pred, dpred, n, scale, dz);
    LAUNCHED(CS(ctx), "k_head_bwd");
}

/* ---- Adam over the flat buffer: one launch, segments in shared memory ------- */

#define MAX_SEGS 256

/* The bias corrections for step t, computed once per step: by the block
 * that finishes the step before (the last to take a ticket), which also
 * advances the step counter, so no one-thread kernel does.  t and the betas
 * say which step they are for; otherwise (the first step, a restored
 * counter, other betas) each block computes them as the CPU does. */
struct adam_state {
    int64_t t;             /* the step sq and den are for */
    float beta1, beta2;
    double sq, den;        /* sqrt(1 - b2^t), 1 - b1^t */
    unsigned ticket;       /* blocks done with this step */
};

size_t rt_cuda_adam_state_bytes(void) { return sizeof(struct adam_state); }

__device__ static void adam_corr(float b1, float b2, int64_t t, double *sq, double *den)
{
    *sq = sqrt(1.0 - pow((double)b2, (double)t));
    *den = 1.0 - pow((double)b1, (double)t);
}

__global__ void __launch_bounds__(T256) k_adam(float *p, const float *g, float *m, float *v, int64_t n,
                                               const rt_adam_seg *segs, int nseg, const rt_adam_hp *hpp,
                                               int64_t *step, struct adam_state *as, bool vec,
                                               const double *gsq)
{
    const rt_adam_hp hp = *hpp; /* read when the kernel runs: a replayed graph sees new values */
    __shared__ float s_gs;
    __shared__ int64_t s_end[MAX_SEGS];
    __shared__ float s_l2x2[MAX_SEGS];
    __shared__ int s_decay[MAX_SEGS];
    __shared__ float s_lrt;
    __shared__ int64_t s_t;
    for (int i = threadIdx.x; i < nseg; i += blockDim.x) {
        s_end[i] = segs[i].off + segs[i].len;
        /* adam: weight_decay in the gradient, as the CPU's (cpu_ops.c) */
        s_l2x2[i] = 2.0f * segs[i].l2 +
                    (hp.kind == RT_OPTIM_ADAM && segs[i].decay ? hp.weight_decay : 0.0f);
        s_decay[i] = segs[i].decay;
    }
    if (threadIdx.x == 0) {
        const int64_t t = *step + 1;
        double sq, den;
        if (as->t == t && as->beta1 == hp.beta1 && as->beta2 == hp.beta2) {
            sq = as->sq;
            den = as->den;
        } else {
            adam_corr(hp.beta1, hp.beta2, t, &sq, &den);
        }
        s_t = t;
        /* the CPU's expression (cpu_ops.c), so both round alike */
        s_lrt = (float)(hp.lr * sq / den);
        float gsc = hp.grad_scale;
        if (hp.clip_norm > 0 && gsq) {
            const double coef = hp.clip_norm / (sqrt(*gsq) * hp.grad_scale + 1e-6);
            if (coef < 1.0)
                gsc = (float)(hp.grad_scale * coef);
        }
        s_gs = gsc;
    }
    __syncthreads();
    const float b1 = hp.beta1, b2 = hp.beta2, c1 = 1.0f - b1, c2 = 1.0f - b2;
    const float lrt = s_lrt, eps = hp.eps, gs = s_gs;
    /* AdamW and SGD (rt_k_optim's formulas, as cpu_loss.c's) */
    const float bc1 = (float)(hp.lr / (1.0 - pow((double)hp.beta1, (double)s_t)));
    const float bc2 = (float)sqrt(1.0 - pow((double)hp.beta2, (double)s_t));
    if (hp.kind != RT_OPTIM_ADAM)
        vec = false;
    int seg = 0;
    /* groups of 4 elements (float4 loads and stores where the buffers are
     * 16-byte aligned and the group lies in one segment), grid-stride */
    const int64_t groups = (n + 3) / 4;
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < groups;
         q += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i0 = q * 4;
        /* first segment whose end is past i0 (binary search; segments ordered) */
        if (i0 >= s_end[seg] || (seg > 0 && i0 < s_end[seg - 1])) {
            int lo = 0, hi = nseg - 1;
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (s_end[mid] > i0)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            seg = lo;
        }
        if (vec && i0 + 4 <= s_end[seg]) {
            const float l2x2 = s_l2x2[seg];
            float4 P = *(const float4 *)(p + i0), G = *(const float4 *)(g + i0);
            float4 M = *(const float4 *)(m + i0), V = *(const float4 *)(v + i0);
            float *pp = &P.x, *gg = &G.x, *mm = &M.x, *vv = &V.x;
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const float gi = gg[k] * gs + l2x2 * pp[k];
                mm[k] = b1 * mm[k] + c1 * gi;
                vv[k] = b2 * vv[k] + c2 * gi * gi;
                pp[k] = pp[k] - lrt * mm[k] / (sqrtf(vv[k]) + eps);
            }
            *(float4 *)(m + i0) = M;
            *(float4 *)(v + i0) = V;
            *(float4 *)(p + i0) = P;
            continue;
        }
        for (int64_t i = i0; i < i0 + 4 && i < n; i++) { /* a segment boundary, the tail */
            while (i >= s_end[seg])
                seg++;
            const float pi = p[i];
            const float gi = g[i] * gs + s_l2x2[seg] * pi;
            if (hp.kind != RT_OPTIM_ADAM) {
                const float wd = s_decay[seg] ? hp.weight_decay : 0.0f;
                if (hp.kind == RT_OPTIM_ADAMW) {
                    const float mi = b1 * m[i] + c1 * gi, vi = b2 * v[i] + c2 * gi * gi;
                    m[i] = mi;
                    v[i] = vi;
                    p[i] = pi * (1.0f - hp.lr * wd) - bc1 * mi / (sqrtf(vi) / bc2 + eps);
                } else {
                    const float gw = gi + wd * pi, bi = hp.momentum * m[i] + gw;
                    m[i] = bi;
                    p[i] = pi - hp.lr * (hp.nesterov ? gw + hp.momentum * bi : bi);
                }
                continue;
            }
            const float mi = b1 * m[i] + c1 * gi;
            const float vi = b2 * v[i] + c2 * gi * gi;
            m[i] = mi;
            v[i] = vi;
            p[i] = pi - lrt * mi / (sqrtf(vi) + eps);
        }
    }
    /* the last block done: every other has read *step; advance it and
     * compute the next step's corrections */
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(&as->ticket, 1u) == gridDim.x - 1) {
            const int64_t t = s_t;
            *step = t;
            adam_corr(hp.beta1, hp.beta2, t + 1, &as->sq, &as->den);
            as->t = t + 1;
            as->beta1 = hp.beta1;
            as->beta2 = hp.beta2;
            as->ticket = 0;
            __threadfence();
        }
    }
}

void rt_cuda_optim(rt_kctx *ctx, float *p, const float *g, float *m, float *v, int64_t n,
                   const rt_adam_seg *segs, int nseg, const rt_adam_hp *hp, int64_t *step,
                   const double *gsq)
{
    RT_ASSERT(nseg <= MAX_SEGS);
    if (n == 0 || nseg == 0) { /* still a step */
        k_adam<<<1, 32, 0, CS(ctx)->stream>>>(p, g, m, v, 0, segs, nseg, hp, step, CS(ctx)->adam, false, gsq);
        LAUNCHED(CS(ctx), "k_adam");
        return;
    }
    /* grid-stride: a few blocks per SM (each reads the segments and the
     * corrections once), not one thread per element */
    unsigned grid = grid_for((n + 3) / 4, T256);
    if (grid > 1024)
        grid = 1024;
    const bool vec = (((uintptr_t)p | (uintptr_t)g | (uintptr_t)m | (uintptr_t)v) & 15) == 0;
    k_adam<<<grid, T256, 0, CS(ctx)->stream>>>(p, g, m, v, n, segs, nseg, hp, step, CS(ctx)->adam, vec, gsq);
    LAUNCHED(CS(ctx), "k_adam");
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
    LAUNCHED(CS(ctx), "k_scale");
}

/* bf16 as the CPU ring rounds it (rt_bf16.h) */
__global__ void k_to_bf16(const float *x, uint16_t *y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = rt_bf16_bits(x[i]);
}

__global__ void k_from_bf16(const uint16_t *x, float *y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = rt_bf16_float(x[i]);
}

void rt_cuda_to_bf16(rt_kctx *ctx, const float *x, uint16_t *y, int64_t n)
{
    if (n == 0)
        return;
    k_to_bf16<<<grid_for(n, T256), T256, 0, CS(ctx)->stream>>>(x, y, n);
    LAUNCHED(CS(ctx), "k_to_bf16");
}

void rt_cuda_from_bf16(rt_kctx *ctx, const uint16_t *x, float *y, int64_t n)
{
    if (n == 0)
        return;
    k_from_bf16<<<grid_for(n, T256), T256, 0, CS(ctx)->stream>>>(x, y, n);
    LAUNCHED(CS(ctx), "k_from_bf16");
}
