/* cuda_layers.cu — CUDA kernels of the layer graph's elementwise,
 * normalisation and token ops (contracts in rt_kernels.h; the CPU
 * reference is cpu_layers.c, compared by tests/test_kernels_cuda.c).
 * Every launch is on the context's stream, allocates nothing and never
 * synchronises (capturable).  Sums are deterministic: a warp's shuffle tree
 * for a row, fixed-order chunk partials (double) for a column. */
#include <math.h>

#include "act_math.h"
#include "ens_math.h"
#include "quantile_math.h"
#include "cuda_common.cuh"

#define T256 256

/* a grid-stride loop over the rows x cols elements of a view */
#define FOR_EACH(rows, cols)                                                                       \
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, r = 0, j = 0;                 \
         t < (rows) * (cols) && ((r = t / (cols)), (j = t - r * (cols)), true);                    \
         t += (int64_t)gridDim.x * blockDim.x)

/* ---- activations ----------------------------------------------------------------- */

__global__ void k_act_fwd(int act, const float *x, int64_t ldx, float *y, int64_t ldy, int64_t rows,
                          int64_t cols)
{
    FOR_EACH(rows, cols) y[r * ldy + j] = rt_act_f(act, x[r * ldx + j]);
}

__global__ void k_act_bwd(int act, const float *x, int64_t ldx, const float *g, int64_t ldg,
                          float *dx, int64_t lddx, int64_t rows, int64_t cols)
{
    FOR_EACH(rows, cols)
    {
        const float xv = x[r * ldx + j], gv = g[r * ldg + j];
        /* ReLU selects, as on the CPU (a non-finite gradient where x <= 0 is 0) */
        dx[r * lddx + j] = act == RT_ACT_RELU ? (xv > 0.0f ? gv : 0.0f) : gv * rt_act_df(act, xv);
    }
}

void rt_cuda_act_fwd(rt_kctx *ctx, rt_act act, rt_view x, rt_view y)
{
    if (x.rows * x.cols == 0)
        return;
    k_act_fwd<<<grid_for(x.rows * x.cols, T256), T256, 0, CS(ctx)->stream>>>(
        (int)act, RT_F(x), x.ld, RT_F(y), y.ld, x.rows, x.cols);
    LAUNCHED(CS(ctx), "k_act_fwd");
}

void rt_cuda_act_bwd(rt_kctx *ctx, rt_act act, rt_view x, rt_view dy, rt_view dx)
{
    if (x.rows * x.cols == 0)
        return;
    k_act_bwd<<<grid_for(x.rows * x.cols, T256), T256, 0, CS(ctx)->stream>>>(
        (int)act, RT_F(x), x.ld, RT_F(dy), dy.ld, RT_F(dx), dx.ld, x.rows, x.cols);
    LAUNCHED(CS(ctx), "k_act_bwd");
}

__global__ void k_reglu_fwd(const float *x, int64_t ldx, float *y, int64_t ldy, int64_t rows,
                            int64_t h)
{
    FOR_EACH(rows, h)
    {
        const float b = x[r * ldx + h + j];
        y[r * ldy + j] = x[r * ldx + j] * (b > 0.0f ? b : 0.0f);
    }
}

__global__ void k_reglu_bwd(const float *x, int64_t ldx, const float *g, int64_t ldg, float *dx,
                            int64_t lddx, int64_t rows, int64_t h)
{
    FOR_EACH(rows, h)
    {
        const float gj = g[r * ldg + j], a = x[r * ldx + j], b = x[r * ldx + h + j];
        dx[r * lddx + j] = gj * (b > 0.0f ? b : 0.0f);
        dx[r * lddx + h + j] = b > 0.0f ? gj * a : 0.0f;
    }
}

void rt_cuda_reglu_fwd(rt_kctx *ctx, rt_view x, rt_view y)
{
    if (y.rows * y.cols == 0)
        return;
    k_reglu_fwd<<<grid_for(y.rows * y.cols, T256), T256, 0, CS(ctx)->stream>>>(
        RT_F(x), x.ld, RT_F(y), y.ld, y.rows, y.cols);
    LAUNCHED(CS(ctx), "k_reglu_fwd");
}

void rt_cuda_reglu_bwd(rt_kctx *ctx, rt_view x, rt_view dy, rt_view dx)
{
    if (dy.rows * dy.cols == 0)
        return;
    k_reglu_bwd<<<grid_for(dy.rows * dy.cols, T256), T256, 0, CS(ctx)->stream>>>(
        RT_F(x), x.ld, RT_F(dy), dy.ld, RT_F(dx), dx.ld, dy.rows, dy.cols);
    LAUNCHED(CS(ctx), "k_reglu_bwd");
}

/* ---- elementwise, bias -------------------------------------------------------------- */

__global__ void k_ew(int op, const float *a, int64_t lda, const float *b, int64_t ldb, float *y,
                     int64_t ldy, int64_t rows, int64_t cols)
{
    FOR_EACH(rows, cols)
    {
        const float av = a[r * lda + j];
        float *yp = &y[r * ldy + j];
        if (op == RT_EW_ADD)
            *yp = av + b[r * ldb + j];
        else if (op == RT_EW_MUL)
            *yp = av * b[r * ldb + j];
        else if (op == RT_EW_ACC)
            *yp += av;
        else
            *yp = av;
    }
}

void rt_cuda_ew(rt_kctx *ctx, rt_ew op, rt_view a, rt_view b, rt_view y)
{
    if (a.rows * a.cols == 0)
        return;
    const bool two = op == RT_EW_ADD || op == RT_EW_MUL;
    k_ew<<<grid_for(a.rows * a.cols, T256), T256, 0, CS(ctx)->stream>>>(
        (int)op, RT_F(a), a.ld, two ? RT_F(b) : NULL, two ? b.ld : 0, RT_F(y), y.ld, a.rows,
        a.cols);
    LAUNCHED(CS(ctx), "k_ew");
}

__global__ void k_bias_add(const float *b, float *y, int64_t ldy, int64_t rows, int64_t cols)
{
    FOR_EACH(rows, cols) y[r * ldy + j] += b[j];
}

void rt_cuda_bias_add(rt_kctx *ctx, const float *b, rt_view y)
{
    if (y.rows * y.cols == 0)
        return;
    k_bias_add<<<grid_for(y.rows * y.cols, T256), T256, 0, CS(ctx)->stream>>>(b, RT_F(y), y.ld,
                                                                             y.rows, y.cols);
    LAUNCHED(CS(ctx), "k_bias_add");
}

/* ---- two column sums at once, two-stage -------------------------------------------
 * A (32 x 8) block sums a 32-column tile over one chunk of rows, its 8 row
 * groups merged in order; k_pair_final adds the chunks in order.  What is
 * summed per element: LN's dy * xhat and dy, or the tokens' dy * x and dy. */

enum { PAIR_LN = 0, PAIR_TOKENS = 1 };

__global__ void __launch_bounds__(256) k_pair_partials(int mode, const float *x, int64_t ldx,
                                                       const float *g, int64_t ldg, int64_t B,
                                                       int64_t n, int64_t d, const float *mean,
                                                       const float *rstd, int64_t rows_per_chunk,
                                                       double *part)
{
    __shared__ double sh[2][8][33];
    const int64_t c = blockIdx.x * 32 + threadIdx.x;
    const int64_t r0 = blockIdx.y * rows_per_chunk;
    const int64_t r1 = r0 + rows_per_chunk < B ? r0 + rows_per_chunk : B;
    double sa = 0.0, sb = 0.0;
    if (c < n)
        for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {
            const double gv = g[r * ldg + c];
            double w;
            if (mode == PAIR_LN)
                w = ((double)x[r * ldx + c] - mean[r]) * (double)rstd[r];
            else
                w = x ? (double)x[r * ldx + c / d] : 1.0;
            sa += gv * w;
            sb += gv;
        }
    sh[0][threadIdx.y][threadIdx.x] = sa;
    sh[1][threadIdx.y][threadIdx.x] = sb;
    __syncthreads();
    if (threadIdx.y == 0 && c < n) {
        double a = 0.0, b = 0.0;
        for (int k = 0; k < 8; k++) {
            a += sh[0][k][threadIdx.x];
            b += sh[1][k][threadIdx.x];
        }
        part[(blockIdx.y * n + c) * 2] = a;
        part[(blockIdx.y * n + c) * 2 + 1] = b;
    }
}

__global__ void k_pair_final(const double *part, int64_t chunks, int64_t n, float *outa,
                             float *outb)
{
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < n;
         c += (int64_t)gridDim.x * blockDim.x) {
        double a = 0.0, b = 0.0;
        for (int64_t k = 0; k < chunks; k++) {
            a += part[(k * n + c) * 2];
            b += part[(k * n + c) * 2 + 1];
        }
        outa[c] = (float)a;
        if (outb)
            outb[c] = (float)b;
    }
}

static void pair_sums(cuda_state *s, int mode, const float *x, int64_t ldx, rt_view dy, int64_t d,
                      const float *mean, const float *rstd, float *outa, float *outb)
{
    const int64_t B = dy.rows, n = dy.cols;
    if (n == 0)
        return;
    int64_t rows_per_chunk;
    const int64_t chunks = chunks_for(B, n, 2, &rows_per_chunk);
    dim3 grid((unsigned)((n + 31) / 32), (unsigned)chunks), block(32, 8);
    k_pair_partials<<<grid, block, 0, s->stream>>>(mode, x, ldx, RT_F(dy), dy.ld, B, n, d, mean,
                                                    rstd, rows_per_chunk, s->partials);
    LAUNCHED(s, "k_pair_partials");
    k_pair_final<<<grid_for(n, T256), T256, 0, s->stream>>>(s->partials, chunks, n, outa, outb);
    LAUNCHED(s, "k_pair_final");
}

/* ---- layer norm: a warp per row ---------------------------------------------------- */

__device__ __forceinline__ double warp_sum(double v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void k_ln_fwd(const float *x, int64_t ldx, int64_t rows, int64_t F, const float *gamma,
                         const float *beta, float eps, float *smean, float *srstd, float *y,
                         int64_t ldy)
{
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t r = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32; r < rows;
         r += warps) {
        const float *xr = x + r * ldx;
        double s = 0.0;
        for (int64_t j = lane; j < F; j += 32)
            s += xr[j];
        const double mean = F > 0 ? warp_sum(s) / (double)F : 0.0;
        double v = 0.0;
        for (int64_t j = lane; j < F; j += 32) {
            const double dv = xr[j] - mean;
            v += dv * dv;
        }
        const double var = F > 0 ? warp_sum(v) / (double)F : 0.0, rs = 1.0 / sqrt(var + eps);
        if (lane == 0) {
            smean[r] = (float)mean;
            srstd[r] = (float)rs;
        }
        for (int64_t j = lane; j < F; j += 32)
            y[r * ldy + j] = (float)((xr[j] - mean) * rs * gamma[j] + beta[j]);
    }
}

__global__ void k_ln_bwd_dx(const float *x, int64_t ldx, const float *g, int64_t ldg, int64_t rows,
                            int64_t F, const float *gamma, const float *smean, const float *srstd,
                            float *dx, int64_t lddx)
{
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t r = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32; r < rows;
         r += warps) {
        const float *xr = x + r * ldx, *gr = g + r * ldg;
        const double mu = smean[r], rs = srstd[r];
        double mg = 0.0, mgx = 0.0;
        for (int64_t j = lane; j < F; j += 32) {
            const double gj = (double)gr[j] * gamma[j];
            mg += gj;
            mgx += gj * (xr[j] - mu) * rs;
        }
        mg = warp_sum(mg) / (double)F;
        mgx = warp_sum(mgx) / (double)F;
        for (int64_t j = lane; j < F; j += 32) {
            const double xhat = (xr[j] - mu) * rs;
            dx[r * lddx + j] = (float)(rs * ((double)gr[j] * gamma[j] - mg - xhat * mgx));
        }
    }
}

static unsigned row_grid(int64_t rows) { return grid_for(rows * 32, T256); }

void rt_cuda_ln_fwd(rt_kctx *ctx, rt_view x, const float *gamma, const float *beta, float eps,
                    float *save_mean, float *save_rstd, rt_view y)
{
    if (x.rows == 0)
        return;
    k_ln_fwd<<<row_grid(x.rows), T256, 0, CS(ctx)->stream>>>(RT_F(x), x.ld, x.rows, x.cols, gamma,
                                                             beta, eps, save_mean, save_rstd,
                                                             RT_F(y), y.ld);
    LAUNCHED(CS(ctx), "k_ln_fwd");
}

void rt_cuda_ln_bwd(rt_kctx *ctx, rt_view x, rt_view dy, const float *gamma,
                    const float *save_mean, const float *save_rstd, float *dgamma, float *dbeta,
                    rt_view dx)
{
    cuda_state *s = CS(ctx);
    pair_sums(s, PAIR_LN, RT_F(x), x.ld, dy, 1, save_mean, save_rstd, dgamma, dbeta);
    if (!dx.p || x.rows == 0)
        return;
    k_ln_bwd_dx<<<row_grid(x.rows), T256, 0, s->stream>>>(RT_F(x), x.ld, RT_F(dy), dy.ld, x.rows,
                                                          x.cols, gamma, save_mean, save_rstd,
                                                          RT_F(dx), dx.ld);
    LAUNCHED(s, "k_ln_bwd_dx");
}

/* ---- feature tokens --------------------------------------------------------------- */

__global__ void k_tokens_fwd(const float *x, int64_t ldx, const float *w, const float *b, int64_t d,
                             float *y, int64_t ldy, int64_t rows, int64_t N)
{
    FOR_EACH(rows, N)
    {
        const float xv = x ? x[r * ldx + j / d] : 1.0f;
        y[r * ldy + j] = b ? xv * w[j] + b[j] : xv * w[j];
    }
}

__global__ void k_tokens_dx(const float *g, int64_t ldg, const float *w, int64_t d, float *dx,
                            int64_t lddx, int64_t rows, int64_t n)
{
    FOR_EACH(rows, n)
    {
        double s = 0.0;
        for (int64_t k = 0; k < d; k++)
            s += (double)g[r * ldg + j * d + k] * w[j * d + k];
        dx[r * lddx + j] = (float)s;
    }
}

void rt_cuda_tokens_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, int64_t d,
                        rt_view y)
{
    if (y.rows * y.cols == 0)
        return;
    k_tokens_fwd<<<grid_for(y.rows * y.cols, T256), T256, 0, CS(ctx)->stream>>>(
        RT_F(x), x.ld, w, b, d, RT_F(y), y.ld, y.rows, y.cols);
    LAUNCHED(CS(ctx), "k_tokens_fwd");
}

void rt_cuda_tokens_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view dy, int64_t d, float *dw,
                        float *db, rt_view dx)
{
    cuda_state *s = CS(ctx);
    pair_sums(s, PAIR_TOKENS, RT_F(x), x.ld, dy, d, NULL, NULL, dw, db);
    if (!dx.p || dy.rows == 0)
        return;
    k_tokens_dx<<<grid_for(dy.rows * dx.cols, T256), T256, 0, s->stream>>>(
        RT_F(dy), dy.ld, w, d, RT_F(dx), dx.ld, dy.rows, dx.cols);
    LAUNCHED(s, "k_tokens_dx");
}

/* ---- TabM's block end ------------------------------------------------------------ */

/* y = act(x * w + b), the expression k_tokens_fwd contracts for d = 1 */
__global__ void k_scale_act(const float *x, int64_t ldx, const float *w, const float *b, int relu,
                            float *y, int64_t ldy, int64_t rows, int64_t N)
{
    FOR_EACH(rows, N)
    {
        const float v = b ? x[r * ldx + j] * w[j] + b[j] : x[r * ldx + j] * w[j];
        y[r * ldy + j] = relu && !(v > 0.0f) ? 0.0f : v;
    }
}

/* g = dy * c, 0 where y > 0 fails (y not NULL), in place */
__global__ void k_scale_act_mask(float *g, int64_t ldg, const float *y, int64_t ldy, float c,
                                 int64_t rows, int64_t N)
{
    FOR_EACH(rows, N)
    {
        const float v = g[r * ldg + j] * c;
        g[r * ldg + j] = y && !(y[r * ldy + j] > 0.0f) ? 0.0f : v;
    }
}

/* the three passes the CPU fuses, as three launches (the GPU's are cheap
 * beside its GEMMs; a fused kernel waits for a measurement on one) */
void rt_cuda_scale_act_fwd(rt_kctx *ctx, rt_view x, const float *w, const float *b, rt_act act,
                           float rate, uint64_t seed, uint32_t stream, const int64_t *step,
                           rt_view y)
{
    if (y.rows * y.cols == 0)
        return;
    k_scale_act<<<grid_for(y.rows * y.cols, T256), T256, 0, CS(ctx)->stream>>>(
        RT_F(x), x.ld, w, b, act == RT_ACT_RELU, RT_F(y), y.ld, y.rows, y.cols);
    LAUNCHED(CS(ctx), "k_scale_act");
    if (rate > 0.0f)
        rt_cuda_dropout(ctx, y, rate, seed, stream, step);
}

void rt_cuda_scale_act_bwd(rt_kctx *ctx, rt_view x, const float *w, rt_view y, rt_act act,
                           float rate, rt_view dy, float *dw, float *db, rt_view dx)
{
    if ((act == RT_ACT_RELU || rate > 0.0f) && dy.rows * dy.cols > 0) {
        k_scale_act_mask<<<grid_for(dy.rows * dy.cols, T256), T256, 0, CS(ctx)->stream>>>(
            RT_F(dy), dy.ld, act == RT_ACT_RELU ? RT_F(y) : NULL, y.ld, 1.0f / (1.0f - rate),
            dy.rows, dy.cols);
        LAUNCHED(CS(ctx), "k_scale_act_mask");
    }
    rt_cuda_tokens_bwd(ctx, x, w, dy, 1, dw, db, dx);
}

/* ---- ensembles (TabM) ---------------------------------------------------------------- */

__global__ void k_ens_repeat(const float *x, int64_t ldx, int64_t D, float *y, int64_t ldy,
                             int64_t rows, int64_t N)
{
    FOR_EACH(rows, N) y[r * ldy + j] = x[r * ldx + j % D];
}

/* SUM, MEAN: one thread per element */
__global__ void k_ens_sum(int op, const float *x, int64_t ldx, int64_t k, float *y, int64_t ldy,
                          int64_t rows, int64_t D)
{
    FOR_EACH(rows, D) y[r * ldy + j] = rt_ens_elem(op, x + r * ldx, k, D, j, NULL);
}

/* SIGMOID: one thread per element; SOFTMAX: one per row (its 2k logs in
 * the thread's local memory) */
__global__ void k_ens_prob(int op, const float *x, int64_t ldx, int64_t k, float *y, int64_t ldy,
                           int64_t rows, int64_t D)
{
    double tmp[2 * RT_ENS_MAX_K];
    if (op == RT_ENS_SIGMOID) {
        FOR_EACH(rows, D) y[r * ldy + j] = rt_ens_elem(op, x + r * ldx, k, D, j, tmp);
        return;
    }
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows;
         r += (int64_t)gridDim.x * blockDim.x)
        rt_ens_softmax_row(x + r * ldx, k, D, y + r * ldy, tmp);
}

void rt_cuda_ens_repeat(rt_kctx *ctx, rt_view x, rt_view y)
{
    if (y.rows * y.cols == 0)
        return;
    k_ens_repeat<<<grid_for(y.rows * y.cols, T256), T256, 0, CS(ctx)->stream>>>(
        RT_F(x), x.ld, x.cols, RT_F(y), y.ld, y.rows, y.cols);
    LAUNCHED(CS(ctx), "k_ens_repeat");
}

void rt_cuda_ens_reduce(rt_kctx *ctx, rt_ens_op op, rt_view x, rt_view y)
{
    if (y.rows * y.cols == 0)
        return;
    const int64_t k = x.cols / y.cols;
    if (op == RT_ENS_SUM || op == RT_ENS_MEAN) {
        k_ens_sum<<<grid_for(y.rows * y.cols, T256), T256, 0, CS(ctx)->stream>>>(
            (int)op, RT_F(x), x.ld, k, RT_F(y), y.ld, y.rows, y.cols);
        LAUNCHED(CS(ctx), "k_ens_sum");
        return;
    }
    const int64_t n = op == RT_ENS_SOFTMAX ? y.rows : y.rows * y.cols;
    k_ens_prob<<<grid_for(n, T256), T256, 0, CS(ctx)->stream>>>((int)op, RT_F(x), x.ld, k, RT_F(y),
                                                                y.ld, y.rows, y.cols);
    LAUNCHED(CS(ctx), "k_ens_prob");
}

/* ---- periodic features of the numeric columns ----------------------------------------- */

__global__ void k_periodic_fwd(const float *x, int64_t ldx, const float *f, int64_t k, float *y,
                               int64_t ldy, int64_t rows, int64_t nk)
{
    FOR_EACH(rows, nk) /* j: column i = j / k, frequency j % k */
    {
        const int64_t i = j / k, q = j - i * k;
        const float th = rt_periodic_theta(f[j], x[r * ldx + i]);
        y[r * ldy + i * 2 * k + q] = cosf(th);
        y[r * ldy + i * 2 * k + k + q] = sinf(th);
    }
}

/* df: one thread per frequency, the rows in order */
__global__ void k_periodic_df(const float *x, int64_t ldx, const float *f, int64_t k,
                              const float *g, int64_t ldg, int64_t rows, int64_t nk, float *df)
{
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < nk;
         p += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = p / k, q = p - i * k;
        double s = 0.0;
        for (int64_t r = 0; r < rows; r++) {
            const float xv = x[r * ldx + i], th = rt_periodic_theta(f[p], xv);
            const float *gr = g + r * ldg + i * 2 * k;
            s += (double)(6.28318530717958648f * xv) * rt_periodic_dtheta(th, gr[q], gr[k + q]);
        }
        df[p] = (float)s;
    }
}

__global__ void k_periodic_dx(const float *x, int64_t ldx, const float *f, int64_t k,
                              const float *g, int64_t ldg, float *dx, int64_t lddx, int64_t rows,
                              int64_t n)
{
    FOR_EACH(rows, n)
    {
        const float xv = x[r * ldx + j];
        const float *gr = g + r * ldg + j * 2 * k;
        double s = 0.0;
        for (int64_t q = 0; q < k; q++) {
            const float fv = f[j * k + q];
            s += (double)(6.28318530717958648f * fv) *
                 rt_periodic_dtheta(rt_periodic_theta(fv, xv), gr[q], gr[k + q]);
        }
        dx[r * lddx + j] = (float)s;
    }
}

void rt_cuda_periodic_fwd(rt_kctx *ctx, rt_view x, const float *f, int64_t k, rt_view y)
{
    if (x.rows * x.cols == 0)
        return;
    k_periodic_fwd<<<grid_for(x.rows * x.cols * k, T256), T256, 0, CS(ctx)->stream>>>(
        RT_F(x), x.ld, f, k, RT_F(y), y.ld, x.rows, x.cols * k);
    LAUNCHED(CS(ctx), "k_periodic_fwd");
}

void rt_cuda_periodic_bwd(rt_kctx *ctx, rt_view x, const float *f, int64_t k, rt_view dy, float *df,
                          rt_view dx)
{
    cuda_state *s = CS(ctx);
    if (x.cols == 0)
        return;
    k_periodic_df<<<grid_for(x.cols * k, T256), T256, 0, s->stream>>>(
        RT_F(x), x.ld, f, k, RT_F(dy), dy.ld, x.rows, x.cols * k, df);
    LAUNCHED(s, "k_periodic_df");
    if (!dx.p || x.rows == 0)
        return;
    k_periodic_dx<<<grid_for(x.rows * x.cols, T256), T256, 0, s->stream>>>(
        RT_F(x), x.ld, f, k, RT_F(dy), dy.ld, RT_F(dx), dx.ld, x.rows, x.cols);
    LAUNCHED(s, "k_periodic_dx");
}

/* ---- continuous_norm = quantile -------------------------------------------------------- */

__global__ void k_quantile_fwd(const float *x, int64_t ldx, const float *q, int64_t nq, float *y,
                               int64_t ldy, int64_t rows, int64_t n)
{
    FOR_EACH(rows, n) y[r * ldy + j] = rt_quantile_normal(q + j * nq, nq, x[r * ldx + j]);
}

void rt_cuda_quantile_fwd(rt_kctx *ctx, rt_view x, const float *q, int64_t nq, rt_view y)
{
    if (x.rows * x.cols == 0)
        return;
    k_quantile_fwd<<<grid_for(x.rows * x.cols, T256), T256, 0, CS(ctx)->stream>>>(
        RT_F(x), x.ld, q, nq, RT_F(y), y.ld, x.rows, x.cols);
    LAUNCHED(CS(ctx), "k_quantile_fwd");
}

__global__ void k_robust_fwd(const float *x, int64_t ldx, const float *c, const float *s, float *y,
                             int64_t ldy, int64_t rows, int64_t n)
{
    FOR_EACH(rows, n) y[r * ldy + j] = rt_robust_value(x[r * ldx + j], c[j], s[j]);
}

void rt_cuda_robust_fwd(rt_kctx *ctx, rt_view x, const float *center, const float *scale, rt_view y)
{
    if (x.rows * x.cols == 0)
        return;
    k_robust_fwd<<<grid_for(x.rows * x.cols, T256), T256, 0, CS(ctx)->stream>>>(
        RT_F(x), x.ld, center, scale, RT_F(y), y.ld, x.rows, x.cols);
    LAUNCHED(CS(ctx), "k_robust_fwd");
}

/* ---- piecewise-linear encoding of the numeric columns -------------------------------- */

__global__ void k_ple_fwd(const float *x, int64_t ldx, const float *e, int64_t T, float *y,
                          int64_t ldy, int64_t rows, int64_t nT)
{
    FOR_EACH(rows, nT) /* j: column j / T, bin j % T */
    {
        const int64_t i = j / T;
        y[r * ldy + j] = rt_ple_value(x[r * ldx + i], e + i * (T + 1), j - i * T, T, NULL);
    }
}

__global__ void k_ple_bwd(const float *x, int64_t ldx, const float *e, int64_t T, const float *g,
                          int64_t ldg, float *dx, int64_t lddx, int64_t rows, int64_t n)
{
    FOR_EACH(rows, n)
    {
        double s = 0.0;
        for (int64_t t = 0; t < T; t++) {
            float d;
            rt_ple_value(x[r * ldx + j], e + j * (T + 1), t, T, &d);
            s += (double)d * g[r * ldg + j * T + t];
        }
        dx[r * lddx + j] = (float)s;
    }
}

void rt_cuda_ple_fwd(rt_kctx *ctx, rt_view x, const float *edges, int64_t T, rt_view y)
{
    if (y.rows * y.cols == 0)
        return;
    k_ple_fwd<<<grid_for(y.rows * y.cols, T256), T256, 0, CS(ctx)->stream>>>(
        RT_F(x), x.ld, edges, T, RT_F(y), y.ld, y.rows, y.cols);
    LAUNCHED(CS(ctx), "k_ple_fwd");
}

void rt_cuda_ple_bwd(rt_kctx *ctx, rt_view x, const float *edges, int64_t T, rt_view dy, rt_view dx)
{
    if (x.rows * x.cols == 0)
        return;
    k_ple_bwd<<<grid_for(x.rows * x.cols, T256), T256, 0, CS(ctx)->stream>>>(
        RT_F(x), x.ld, edges, T, RT_F(dy), dy.ld, RT_F(dx), dx.ld, x.rows, x.cols);
    LAUNCHED(CS(ctx), "k_ple_bwd");
}
