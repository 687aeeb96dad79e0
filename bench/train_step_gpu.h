/* train_step_gpu.h — the CUDA half of bench/train_step: the step captured as
 * a CUDA graph and timed with events, and cuBLAS's rate on the same shape
 * in the step's math (FP32, TF32 or bf16 inputs).  Without CUDA in the build the function reports that and fails. */
#ifndef RT_BENCH_TRAIN_STEP_GPU_H
#define RT_BENCH_TRAIN_STEP_GPU_H

#include <stdbool.h>

#include "rt_model.h"

#ifdef __cplusplus
extern "C" {
#endif

int rt_train_step_gpu(rt_model *m, long batch, const rt_adam_hp *hp, double seconds, bool tf32,
                      bool bf16, double *step_us, double *gemm_peak_gflops, char *err);

#ifdef __cplusplus
}
#endif
#endif
