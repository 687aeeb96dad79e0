/* rt_dp.h — one rank's share of data-parallel training: the model on this
 * rank's device, its gradients allreduced across the communicator as
 * backward produces them, one Adam step over the averaged gradients.
 *
 * Step (CPU): forward, loss, backward; each layer's gradient range is
 * handed to the fused bucketed allreduce (rt_fusion, sum) as soon as it is
 * final, so communication overlaps the rest of backward; then Adam with
 * grad_scale = 1/size turns the sum into the average.  On a GPU the whole
 * gradient buffer is allreduced after backward (NCCL when every rank has a
 * GPU and NCCL is built in, else staged through pinned host memory).
 * With batch B on each of N ranks this is the step of one process with
 * batch N*B, up to float rounding, as long as the model has no batch
 * statistics: batch normalisation uses each rank's own batch (as Keras
 * under Horovod does), and its moving statistics are averaged by
 * rt_dp_sync_buffers (the trainer does it every epoch).
 * (Model: PyTorch DDP's Reducer buckets; Horovod's fusion buffer.) */
#ifndef RT_DP_H
#define RT_DP_H

#include "rt_comm.h"
#include "rt_model.h"

typedef struct rt_dp rt_dp;

/* comm may be NULL (one process).  threads: CPU threads (0: all cores).
 * device: RT_DEVICE_CUDA uses the current CUDA device. */
rt_status rt_dp_create(const rt_model_spec *spec, rt_device device, int threads, bool tf32,
                       rt_comm *comm, size_t bucket_bytes, int64_t max_batch, rt_dp **out,
                       char *err);
void rt_dp_destroy(rt_dp *d);
rt_model *rt_dp_model(rt_dp *d);
int rt_dp_buckets(const rt_dp *d);

/* Every rank gets root's parameters and batch-norm statistics, and with
 * optimizer also Adam's moments and step (a resumed checkpoint). */
rt_status rt_dp_broadcast_state(rt_dp *d, int root, bool optimizer, char *err);
/* One synchronous data-parallel step on n rows (n may differ per rank but
 * must be >= 1).  Metrics of the batch accumulate in the model. */
rt_status rt_dp_step(rt_dp *d, const int32_t *cat, const float *cont, const float *label,
                     int64_t n, const rt_adam_hp *hp, char *err);
/* Batch-norm moving statistics averaged over the ranks. */
rt_status rt_dp_sync_buffers(rt_dp *d, char *err);
/* Forward (inference) over n rows in chunks; predictions to host `pred`
 * when not NULL, metrics accumulated in the model.  Local, no
 * communication. */
rt_status rt_dp_forward_eval(rt_dp *d, const int32_t *cat, const float *cont, const float *label,
                             int64_t n, float *pred, char *err);
/* The model's metrics summed over the ranks (and reset): [0] sum |err|,
 * [1] rows, [2] sum of squared percentage errors, [3] rows in [2]. */
rt_status rt_dp_metrics_allreduce(rt_dp *d, double out[RT_MODEL_NMETRICS], char *err);

#endif
