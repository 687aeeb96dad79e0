/* rt_dp.h — one rank's share of data-parallel training: the model on this
 * rank's device, its gradients allreduced across the communicator as
 * backward produces them, one Adam step over the averaged gradients.
 *
 * Step (CPU): forward, loss, backward; each layer's gradient range is
 * handed to the fused bucketed allreduce (rt_fusion, sum) as soon as it is
 * final, so communication overlaps the rest of backward; then Adam with
 * grad_scale = 1/size turns the sum into the average.
 *
 * Step (GPU): the batch goes through one of two pinned host buffers
 * (filled while the previous step runs, copied asynchronously), the
 * hyper-parameters to device memory, and forward + backward + Adam run as
 * one CUDA graph per batch size (captured on the second step of that size,
 * replayed after).  With NCCL, each gradient bucket is allreduced on the
 * context's communication stream as soon as backward has produced it (an
 * event orders it after the producing kernels, another orders Adam after
 * the last bucket), inside the same graph: no host round trip between the
 * allreduce and Adam.  Without NCCL (a CPU transport was chosen, or two
 * ranks share a GPU) gradients are staged through pinned host memory over
 * the communicator between a forward/backward graph and the update.
 *
 * With batch B on each of N ranks this is the step of one process with
 * batch N*B, up to float rounding, as long as the model has no batch
 * statistics: batch normalisation uses each rank's own batch (as Keras
 * under Horovod does), and its moving statistics are averaged by
 * rt_dp_sync_buffers (the trainer does it every epoch) — unless
 * sync_batch_norm: then every batch-norm layer normalises with the global
 * batch's statistics (two allreduces of sums in double: mean, then squared
 * deviations) and one inside the network sums dy and dy·xhat over the
 * ranks in its backward (PyTorch's SyncBatchNorm), deterministic like
 * every other reduction here.  Those backward allreduces share the ring
 * with the gradient buckets, so the buckets then start once backward is
 * done.  CPU models only.
 * (Model: PyTorch DDP's Reducer buckets; Horovod's fusion buffer.) */
#ifndef RT_DP_H
#define RT_DP_H

#include "rt_comm.h"
#include "rt_model.h"

typedef struct rt_dp rt_dp;

typedef struct rt_dp_opts {
    rt_device device;     /* RT_DEVICE_CUDA uses the current CUDA device */
    int threads;          /* CPU threads (0: all cores) */
    bool tf32;            /* TF32 GEMMs on the GPU */
    bool bf16;            /* bf16 GEMM inputs where the device can (rt_kctx_bf16 says where) */
    size_t bucket_bytes;  /* gradient bucket size (0: 25 MiB) */
    bool allreduce_bf16; /* the buckets allreduced in bf16 (CPU: the fusion; GPU: NCCL or staged) */
    int64_t max_batch;    /* rows per step or evaluation chunk */
    bool nccl;            /* GPU gradients over NCCL when every rank can (the job's transport) */
    bool graphs;          /* capture the GPU step as CUDA graphs */
    int64_t timeout_us;   /* GPU collectives: NCCL start-up, each step (0: 60 s) */
    bool sync_batch_norm; /* batch-norm statistics of the global batch (CPU) */
    int mem_share;        /* processes sharing the device's memory (CPU: the node's ranks; 0: 1) */
} rt_dp_opts;
void rt_dp_opts_defaults(rt_dp_opts *o);

/* RT_ERR_NOMEM with a sentence (what the model needs at o->max_batch rows,
 * what the device has) when the model — and on a GPU, with
 * o->allreduce_bf16, its gradients' bf16 copy — would not fit in ctx's
 * device memory shared by o->mem_share processes; RT_OK when it does or the
 * memory is unknown.  ctx's precision (rt_kctx_bf16_store) counts. */
rt_status rt_dp_check_memory(const rt_model_spec *spec, rt_kctx *ctx, const rt_dp_opts *o,
                             char *err);

/* comm may be NULL (one process).  Refuses (rt_dp_check_memory) a model
 * that would not fit before allocating it.  Collective over comm: the ranks agree
 * on NCCL or staging. */
rt_status rt_dp_create(const rt_model_spec *spec, const rt_dp_opts *o, rt_comm *comm, rt_dp **out,
                       char *err);
void rt_dp_destroy(rt_dp *d);
rt_model *rt_dp_model(rt_dp *d);
int rt_dp_buckets(const rt_dp *d);
/* How the gradients travel: "fused ring allreduce", "NCCL", "staged through
 * pinned memory" or "none" (one rank). */
const char *rt_dp_gradient_path(const rt_dp *d);

/* Every rank gets root's parameters and batch-norm statistics, and with
 * optimizer also Adam's moments and step (a resumed checkpoint). */
rt_status rt_dp_broadcast_state(rt_dp *d, int root, bool optimizer, char *err);
/* One data-parallel step on n rows (n may differ per rank but must be
 * >= 1; a weighted model's label holds the n labels, then the n weights).  Metrics of the batch accumulate in the model.  On a GPU without
 * communication the step may still run when this returns; every call that
 * reads results synchronises. */
rt_status rt_dp_step(rt_dp *d, const int32_t *cat, const float *cont, const float *label,
                     int64_t n, const rt_adam_hp *hp, char *err);
/* Batch-norm moving statistics averaged over the ranks. */
rt_status rt_dp_sync_buffers(rt_dp *d, char *err);
/* Forward (inference) over n rows in chunks; predictions (n rows of the
 * model's n_out values) to host `pred` when not NULL, the loss and metrics
 * accumulated in the model when label is not NULL (a weighted model's:
 * the n labels, then the n weights).  Local, no communication. */
rt_status rt_dp_forward_eval(rt_dp *d, const int32_t *cat, const float *cont, const float *label,
                             int64_t n, float *pred, char *err);
/* The model's metrics summed over the ranks (and reset): [0] sum |err|,
 * [1] rows, [2] sum of squared percentage errors, [3] rows in [2]. */
rt_status rt_dp_metrics_allreduce(rt_dp *d, double out[RT_MODEL_NMETRICS], char *err);

/* The timeline (rt_trace.h): spans of every step from now on (NULL: none).
 * A GPU step's spans are timed on the device and reach the trace two steps
 * later; rt_dp_trace_flush puts in those still pending (before writing it). */
typedef struct rt_trace rt_trace;
void rt_dp_set_trace(rt_dp *d, rt_trace *t);
void rt_dp_trace_flush(rt_dp *d);
/* Seconds the steps spent waiting for their last gradient bucket since the
 * previous call (the slowest rank waits least). */
double rt_dp_wait_seconds(rt_dp *d);
/* Every rank's value, in rank order (a collective). */
rt_status rt_dp_allgather_f64(rt_dp *d, double mine, double *all, char *err);

#endif
