/* cuda_loss.cu — the losses (rt_k_loss) and the gradient norm
 * (rt_k_sqnorm) on CUDA: one block each, fixed-order reductions, the rows'
 * math shared with the CPU (loss_math.h).  Contracts in rt_kernels.h. */
#include <math.h>

#include "cuda_common.cuh"
#include "loss_math.h"

#define TL 1024

/* norm NULL: the batch's weight first (a second pass over the rows). */
__global__ void __launch_bounds__(TL) k_loss(rt_loss_desc d, const float *z, int64_t ldz,
                                             const float *y, const float *w, const float *norm,
                                             float *dz, int64_t lddz, int64_t n, double *acc)
{
    __shared__ double shm[TL];
    double wsum = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += TL)
        wsum += rt_loss_row_weight(&d, y[i], w ? w[i] : 1.0f);
    wsum = block_sum<TL>(wsum, shm);
    const double scale = norm && *norm > 0.0f ? (double)*norm : wsum > 0 ? 1.0 / wsum : 0.0;
    double sum = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += TL)
        sum += rt_loss_row(&d, z + i * ldz, y[i], w ? w[i] : 1.0f, dz ? dz + i * lddz : NULL,
                           scale);
    sum = block_sum<TL>(sum, shm);
    if (threadIdx.x == 0) {
        acc[0] += sum;
        acc[1] += wsum;
    }
}

void rt_cuda_loss(rt_kctx *ctx, const rt_loss_desc *d, rt_view z, const float *y, const float *w,
                  const float *norm, rt_view dz, double *acc)
{
    k_loss<<<1, TL, 0, CS(ctx)->stream>>>(*d, RT_F(z), z.ld, y, w, norm, RT_F(dz), dz.ld, z.rows,
                                          acc);
    LAUNCHED(CS(ctx), "k_loss");
}

__global__ void __launch_bounds__(TL) k_sqnorm(const float *g, int64_t n, double *out)
{
    __shared__ double shm[TL];
    double s = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += TL)
        s += (double)g[i] * (double)g[i];
    s = block_sum<TL>(s, shm);
    if (threadIdx.x == 0)
        *out = s;
}

void rt_cuda_sqnorm(rt_kctx *ctx, const float *g, int64_t n, double *out)
{
    k_sqnorm<<<1, TL, 0, CS(ctx)->stream>>>(g, n, out);
    LAUNCHED(CS(ctx), "k_sqnorm");
}
