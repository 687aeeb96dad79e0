/* rt_trace.h — a training timeline (Horovod's timeline, bounded): spans of
 * each step — data, forward, backward (and each layer's gradients), each
 * bucket's allreduce on the communication thread, the wait for the last
 * bucket (the time spent waiting for the slowest rank), the optimizer —
 * kept in a ring of `capacity` events (the oldest are overwritten, so the
 * memory and the file are bounded however long the job), and written as
 * Chrome trace JSON (chrome://tracing, ui.perfetto.dev): one process per
 * rank, thread 0 the step, thread 1 the allreduces.  Recording a span is two
 * clock reads and a store; one thread records (the trainer's). */
#ifndef RT_TRACE_H
#define RT_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "rt_status.h"

typedef enum rt_span_kind {
    RT_SPAN_DATA,      /* gathering the batch's rows */
    RT_SPAN_FORWARD,   /* forward and loss */
    RT_SPAN_BACKWARD,  /* the whole backward pass */
    RT_SPAN_LAYER,     /* backward up to one layer's gradients being final (arg: layer) */
    RT_SPAN_ALLREDUCE, /* one bucket's allreduce (arg: bucket), thread 1 */
    RT_SPAN_WAIT,      /* waiting for the last bucket: the slowest rank, the network */
    RT_SPAN_OPTIMIZER, /* Adam */
    RT_SPAN_EVAL,      /* validation at the epoch's end */
    RT_SPAN_COUNT
} rt_span_kind;

typedef struct rt_trace rt_trace;

rt_status rt_trace_create(size_t capacity, int rank, rt_trace **out, char *err);
void rt_trace_destroy(rt_trace *t);
const char *rt_span_name(rt_span_kind k);
/* One span; start/end from rt_now_ns().  A NULL trace records nothing. */
void rt_trace_span(rt_trace *t, rt_span_kind k, int64_t start_ns, int64_t end_ns, int64_t step,
                   int arg);
/* Spans recorded since the start (also those overwritten) and held now. */
int64_t rt_trace_recorded(const rt_trace *t);
size_t rt_trace_held(const rt_trace *t);
/* The ring as Chrome trace JSON, written atomically to path. */
rt_status rt_trace_write(const rt_trace *t, const char *path, char *err);

#endif
