/* dp_impl.h — private to trainer/: the struct behind rt_dp, shared by the
 * common and CPU parts (rt_dp.c) and the GPU step (rt_dp_gpu.c). */
#ifndef RT_DP_IMPL_H
#define RT_DP_IMPL_H

#include "rt_dp.h"
#include "rt_trace.h"

/* captured steps: the full batch and the last one (twice each with a
 * timeline: a graph per set of marks) */
#define DP_GRAPHS 8

/* a pinned batch buffer and the event after its copy to the device */
typedef struct dp_slot {
    int32_t *cat;
    float *cont, *label;
    rt_kevent *copied;
} dp_slot;

typedef struct dp_graph {
    int64_t n;   /* batch rows; 0: unused */
    int set;     /* the timeline's set of marks it records (dpt_graph_key) */
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
    struct dp_timeline *tl; /* GPU: the marks that time its steps (rt_dp_gpu_trace.c) */
    int64_t steps;     /* rt_dp_step calls so far */
    int64_t mark_ns;   /* backward: when the last layer's gradients were final */
    int layer;         /* backward: layers reported so far this step */
    double wait_s;     /* time spent waiting for the last bucket, since the last read */
    float *zeros;      /* labels for inference without labels */
    float *host;       /* scratch for state exchange */
    int64_t nhost;
    bool overlap;      /* buckets allreduce while backward runs (not with a sync BN in it) */

    /* GPU */
    rt_nccl *nccl;     /* size > 1 with NCCL */
    bool staged;       /* size > 1 without NCCL */
    uint16_t *half;    /* GPU, size > 1, allreduce_bf16: the gradients in bf16 (device) */
    int64_t half_lo, half_hi; /* the range of them the step's NCCL buckets rounded */
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

/* rt_dp_gpu_trace.c: the GPU step's timeline.  dpt_begin before a step
 * (reads the marks of the step two before); dpt_mark enqueues a mark;
 * dpt_body_done after the step's body ran (false) or its graph replayed
 * (true); dpt_graph_key picks the graph that records this step's set. */
typedef enum dpt_kind {
    DPT_START, DPT_FORWARD, DPT_LAYER, DPT_BACKWARD, DPT_AR_BEGIN, DPT_AR_END, DPT_JOIN, DPT_UPDATE
} dpt_kind;
typedef struct dp_timeline dp_timeline;
rt_status dpt_create(rt_dp *d, char *err);
void dpt_destroy(rt_dp *d);
void dpt_begin(rt_dp *d);
void dpt_mark(rt_dp *d, dpt_kind kind, int arg, bool comm);
void dpt_body_done(rt_dp *d, bool replayed);
int dpt_graph_key(const rt_dp *d);

/* rt_dp_gpu.c */
rt_status rt_dp_gpu_init(rt_dp *d, char *err);
void rt_dp_gpu_fini(rt_dp *d);
rt_status rt_dp_gpu_step(rt_dp *d, const int32_t *cat, const float *cont, const float *label,
                         int64_t n, const rt_adam_hp *hp, char *err);

#endif
