/* train_step_nogpu.c — stand-in for builds without CUDA: the CUDA
 * configuration cannot run, and says so. */
#include "train_step_gpu.h"

int rt_train_step_gpu(rt_model *m, long batch, const rt_adam_hp *hp, double seconds, bool tf32,
                      bool bf16, double *step_us, double *gemm_peak_gflops, char *err)
{
    (void)m, (void)batch, (void)hp, (void)seconds, (void)tf32, (void)bf16, (void)step_us,
        (void)gemm_peak_gflops;
    rt_err(err, RT_ERR_UNSUPPORTED, "this build has no CUDA support");
    return 1;
}
