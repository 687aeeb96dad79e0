/* dp_impl.h — private to trainer/: the struct behind rt_dp, shared by the
 * common and CPU parts (rt_dp.c) and the GPU step (rt_dp_gpu.c). */
#ifndef RT_DP_IMPL_H
#define RT_DP_IMPL_H

#include "rt_dp.h"
#include "rt_trace.h"

#define DP_GRAPHS 4 /* batch sizes with a captured step: the full batch, the last one, eval */

/* a pinned batch buffer and the event after its copy to the device */
typedef struct dp_slot {
    int32_t *cat;
    float *cont, *label;
    rt_kevent *copied;
} dp_slot;

typedef struct dp_graph {
    int64_t n;   /* batch rows; 0: unused */
    int seen;    /* eager steps of this size so far */
    rt_kgraph *g;
    uint64_t used;
} dp_graph;

struct rt_dp {
    rt_dp_opts o;
    rt_kctx *ctx;
    rt_model *model;
    rt_comm *comm;
    int size;
    rt_fusion *fusion; /* CPU, size > 1 */
    rt_trace *trace;   /* the timeline, or NULL */
    int64_t steps;     /* rt_dp_step calls so far */
    int64_t mark_ns;   /* backward: when the last layer's gradients were final */
    int layer;         /* backward: layers reported so far this step */
    double wait_s;     /* time spent waiting for the last bucket, since the last read */
    float *zeros;      /* labels for inference without labels */
    float *host;       /* scratch for state exchange */
    int64_t nhost;
    double *bn_sums;   /* sync BN: 2 * n_cont + 1 (sums, count; then means, variances) */

    /* GPU */
    rt_nccl *nccl;     /* size > 1 with NCCL */
    bool staged;       /* size > 1 without NCCL */
    dp_slot slot[2];
    int cur;
    dp_graph graph[DP_GRAPHS];
    uint64_t clock;
    bool graphs;       /* still capturing graphs (off after a failed capture) */
    int64_t bucket_lo, bucket_hi; /* the gradient range waiting for its allreduce */
    int buckets;       /* NCCL allreduces per step */
    rt_status hook_st;
    char hook_err[RT_ERR_LEN];
};

/* rt_dp_gpu.c */
rt_status rt_dp_gpu_init(rt_dp *d, char *err);
void rt_dp_gpu_fini(rt_dp *d);
rt_status rt_dp_gpu_step(rt_dp *d, const int32_t *cat, const float *cont, const float *label,
                         int64_t n, const rt_adam_hp *hp, char *err);

#endif
