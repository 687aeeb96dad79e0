/* conformance.h — the collectives conformance suite, shared by every
 * transport's test: {ranks 1,2,3,4,5,8} x {counts 0,1,63,1000,25000,1<<20} x
 * {segments 4K, 512K}, each collective against a serial reference (bitwise
 * for integer-valued data), random data identical on every rank and across
 * two runs. */
#ifndef RT_CONFORMANCE_H
#define RT_CONFORMANCE_H

#include "rank_harness.h"
#include "rt_comm.h"

rt_comm_opts base_opts(size_t seg);
float val(int r, size_t i);

typedef struct conf_ref conf_ref;
typedef struct conf_arg {
    size_t count;
    uint64_t seed;
    float
        *rand_out[8]; /* each rank's allreduce of random data: f32, then bf16 widened (2 x count) */
    conf_ref *ref;    /* the checks' serial reference: conf_ref_make */
} conf_arg;

/* The serial reference of n ranks' collectives over a->count elements
 * (a->ref), made once before the ranks run; conf_runs makes it itself. */
void conf_ref_make(conf_arg *a, int n);
void conf_ref_free(conf_arg *a);
/* The per-rank body: every collective once, checked against a->ref. */
void conf_body(rt_comm *c, int r, void *varg, rh_result *res);
/* n ranks over `kind` run body(arg) `runs` times, a's random results
 * collected (a->count floats per rank): fails the cmocka test, prefixed by
 * `what`, when a rank fails, when two ranks' results differ, or when two
 * runs' do.  arg is a itself, or a struct that holds it. */
void conf_runs(int n, rt_transport_kind kind, const rt_comm_opts *o, rh_fn body, void *arg,
               conf_arg *a, int runs, const char *what);
/* A broadcast of `bytes` from rank 0 with rank late_rank arriving late_ms
 * late: with more frames than a transport's slots, a rank between them has
 * all it needs from its left and only sends to finish when its left,
 * done, closes — which must fail nothing (test_*_left_done_first). */
typedef struct late_arg {
    size_t bytes;
    int late_rank, late_ms;
} late_arg;
void late_body(rt_comm *c, int r, void *varg, rh_result *res);
/* 128 KiB in 4 KiB frames (32 frames, more than any transport's slots) from
 * rank 0 of 3, rank 2 400 ms late, three rounds; fails the cmocka test. */
void left_done_first(rt_transport_kind kind);
/* The whole matrix over one transport; fails the cmocka test on error. */
void conformance(rt_transport_kind kind);

#endif
