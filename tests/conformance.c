/* conformance.c — see conformance.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "conformance.h"
#include "test_util.h"

rt_comm_opts base_opts(size_t seg)
{
    rt_comm_opts o;
    rt_comm_opts_defaults(&o);
    o.job_id = 0xC0FFEE;
    memset(o.key, 0x5a, sizeof o.key);
    o.max_segment_bytes = seg;
    o.small_bytes = seg < (64u << 10) ? seg : (64u << 10);
    o.timeout_us = 30000000;
    o.connect_timeout_us = 30000000;
    o.spin_us = 20;
    return o;
}

/* ---- conformance ----------------------------------------------------------- */

float val(int r, size_t i) { return (float)((int)((r * 131 + i * 7) % 61) - 30); }

/* The serial reference of conf_body's checks, made once for all ranks:
 * each rank recomputing it from every rank's values took n^2 x count work,
 * half of test_conformance_tcp's time at 8 ranks. */
struct conf_ref {
    int n;
    size_t count, span; /* span: the reduce-scatter's n blocks of count / n + 1 */
    float *sum;         /* val(0, i) + ... + val(n - 1, i), in that order, i < span */
    int32_t *max;
    double *min; /* of val + 0.25 */
    int64_t *isum;
    double *rsum, *rmag; /* the bf16 run's random inputs: exact sum, sum of magnitudes */
};

void conf_ref_make(conf_arg *a, int n)
{
    conf_ref *f = calloc(1, sizeof *f);
    assert_non_null(f);
    const size_t count = a->count, blk = count / (size_t)n + 1;
    f->n = n;
    f->count = count;
    f->span = blk * (size_t)n > count ? blk * (size_t)n : count;
    f->sum = calloc(f->span, sizeof *f->sum);
    f->max = malloc((count ? count : 1) * sizeof *f->max);
    f->min = malloc((count ? count : 1) * sizeof *f->min);
    f->isum = calloc(count ? count : 1, sizeof *f->isum);
    f->rsum = calloc(count ? count : 1, sizeof *f->rsum);
    f->rmag = calloc(count ? count : 1, sizeof *f->rmag);
    float *buf = malloc((count ? count : 1) * sizeof *buf);
    assert_true(f->sum && f->max && f->min && f->isum && f->rsum && f->rmag && buf);
    for (size_t i = 0; i < count; i++) {
        f->max[i] = INT32_MIN;
        f->min[i] = 1e300;
    }
    for (int k = 0; k < n; k++) {
        for (size_t i = 0; i < f->span; i++)
            f->sum[i] += val(k, i);
        for (size_t i = 0; i < count; i++) {
            const float v = val(k, i);
            f->max[i] = (int32_t)v > f->max[i] ? (int32_t)v : f->max[i];
            f->min[i] = v + 0.25 < f->min[i] ? v + 0.25 : f->min[i];
            f->isum[i] += (int64_t)v * 1000000007LL;
        }
        tu_rng gk = {a->seed ^ (uint64_t)(k + 1) * 0x9E3779B97F4A7C15ull};
        tu_fill(&gk, buf, count, -1, 1);
        tu_fill(&gk, buf, count, -1, 1); /* the second draw: the bf16 run's */
        for (size_t i = 0; i < count; i++) {
            f->rsum[i] += buf[i];
            f->rmag[i] += buf[i] < 0 ? -buf[i] : buf[i];
        }
    }
    free(buf);
    a->ref = f;
}

void conf_ref_free(conf_arg *a)
{
    conf_ref *f = a->ref;
    if (f) {
        free(f->sum);
        free(f->max);
        free(f->min);
        free(f->isum);
        free(f->rsum);
        free(f->rmag);
        free(f);
    }
    a->ref = NULL;
}

void conf_body(rt_comm *c, int r, void *varg, rh_result *res)
{
    conf_arg *a = varg;
    const int n = rt_comm_size(c);
    const size_t count = a->count;
    const conf_ref *ref = a->ref;
    RH_CHECK(res, ref && ref->n == n && ref->count == count,
             "conf_body: no conf_ref_make(a, %d) for %zu elements", n, count);
    float *buf = malloc((count ? count : 1) * 4);

    /* allreduce sum of integer-valued floats: exact */
    for (size_t i = 0; i < count; i++)
        buf[i] = val(r, i);
    RH_CHECK(res, rt_allreduce(c, buf, count, RT_C_F32, RT_SUM) == RT_OK, "allreduce: %s",
             rt_comm_last_error(c));
    for (size_t i = 0; i < count; i++)
        RH_CHECK(res, buf[i] == ref->sum[i], "allreduce sum [%zu] = %g, want %g", i, buf[i],
                 ref->sum[i]);
    /* other types and operations */
    int32_t *ib = malloc((count ? count : 1) * 4);
    double *db = malloc((count ? count : 1) * 8);
    int64_t *lb = malloc((count ? count : 1) * 8);
    for (size_t i = 0; i < count; i++) {
        ib[i] = (int32_t)val(r, i);
        db[i] = val(r, i) + 0.25;
        lb[i] = (int64_t)val(r, i) * 1000000007LL;
    }
    RH_CHECK(res, rt_allreduce(c, ib, count, RT_C_I32, RT_MAX) == RT_OK, "max");
    RH_CHECK(res, rt_allreduce(c, db, count, RT_C_F64, RT_MIN) == RT_OK, "min");
    RH_CHECK(res, rt_allreduce(c, lb, count, RT_C_I64, RT_SUM) == RT_OK, "i64 sum");
    for (size_t i = 0; i < count; i++)
        RH_CHECK(res, ib[i] == ref->max[i] && db[i] == ref->min[i] && lb[i] == ref->isum[i],
                 "max/min/i64 sum at %zu", i);
    /* bfloat16 sums of integers of at most 256 in size: exact */
    uint16_t *hb = malloc((count ? count : 1) * 2);
    for (size_t i = 0; i < count; i++)
        buf[i] = val(r, i);
    rt_bf16_from_f32(hb, buf, count);
    RH_CHECK(res, rt_allreduce(c, hb, count, RT_C_BF16, RT_SUM) == RT_OK, "bf16 sum: %s",
             rt_comm_last_error(c));
    rt_bf16_to_f32(buf, hb, count);
    for (size_t i = 0; i < count; i++)
        RH_CHECK(res, buf[i] == ref->sum[i], "bf16 sum [%zu] = %g, want %g", i, buf[i],
                 ref->sum[i]);
    /* average: the sum scaled by 1/n the way rt_allreduce does it */
    for (size_t i = 0; i < count; i++)
        buf[i] = val(r, i);
    RH_CHECK(res, rt_allreduce(c, buf, count, RT_C_F32, RT_AVG) == RT_OK, "avg");
    for (size_t i = 0; i < count; i++)
        RH_CHECK(res, buf[i] == (float)((double)ref->sum[i] * (1.0 / n)), "avg at %zu", i);
    /* broadcast from the first and the last rank */
    for (int root = 0; root < n; root += (n > 1 ? n - 1 : 1)) {
        for (size_t i = 0; i < count; i++)
            buf[i] = r == root ? val(root + 1, i) : -1.0f;
        RH_CHECK(res, rt_broadcast(c, buf, count * 4, root) == RT_OK, "broadcast: %s",
                 rt_comm_last_error(c));
        for (size_t i = 0; i < count; i++)
            RH_CHECK(res, buf[i] == val(root + 1, i), "broadcast from %d [%zu]", root, i);
    }
    /* allgather of count/n + 1 floats per rank (send aliased into recv) */
    size_t blk = count / (size_t)n + 1;
    float *all = malloc(blk * (size_t)n * 4);
    for (size_t i = 0; i < blk; i++)
        all[(size_t)r * blk + i] = val(r, i);
    RH_CHECK(res, rt_allgather(c, all + (size_t)r * blk, all, blk * 4) == RT_OK, "allgather");
    for (int k = 0; k < n; k++)
        for (size_t i = 0; i < blk; i++)
            RH_CHECK(res, all[(size_t)k * blk + i] == val(k, i), "allgather block %d [%zu]", k, i);
    /* reduce-scatter: block r of the sum */
    for (int k = 0; k < n; k++)
        for (size_t i = 0; i < blk; i++)
            all[(size_t)k * blk + i] = val(r, (size_t)k * blk + i);
    float *mine = malloc(blk * 4);
    RH_CHECK(res, rt_reduce_scatter(c, all, mine, blk, RT_C_F32, RT_SUM) == RT_OK,
             "reduce_scatter: %s", rt_comm_last_error(c));
    for (size_t i = 0; i < blk; i++)
        RH_CHECK(res, mine[i] == ref->sum[(size_t)r * blk + i], "reduce_scatter [%zu] = %g want %g",
                 i, mine[i], ref->sum[(size_t)r * blk + i]);
    RH_CHECK(res, rt_barrier(c) == RT_OK, "barrier");
    /* random data: same bits on every rank (checked by the caller) */
    tu_rng g = {a->seed ^ (uint64_t)(r + 1) * 0x9E3779B97F4A7C15ull};
    tu_fill(&g, buf, count, -1, 1);
    RH_CHECK(res, rt_allreduce(c, buf, count, RT_C_F32, RT_SUM) == RT_OK, "random allreduce");
    memcpy(a->rand_out[r], buf, count * 4);
    /* ... and in bfloat16: within its rounding of the exact sum (each
     * input and each hop's sum rounded once, 2^-9 relative), same bits on
     * every rank (the caller compares rand_out's second half) */
    tu_rng g2 = g;
    tu_fill(&g2, buf, count, -1, 1);
    rt_bf16_from_f32(hb, buf, count);
    RH_CHECK(res, rt_allreduce(c, hb, count, RT_C_BF16, RT_SUM) == RT_OK, "random bf16 allreduce");
    rt_bf16_to_f32(a->rand_out[r] + count, hb, count);
    for (size_t i = 0; i < count; i++) {
        double got = a->rand_out[r][count + i], d = got - ref->rsum[i];
        RH_CHECK(res, (d < 0 ? -d : d) <= (double)n * ref->rmag[i] / 256.0 + 1e-6,
                 "bf16 random sum [%zu] = %g, exact %g", i, got, ref->rsum[i]);
    }
    free(hb);
    free(buf); free(ib); free(db); free(lb); free(all); free(mine);
}

void conf_runs(int n, rt_transport_kind kind, const rt_comm_opts *o, rh_fn body, void *arg,
               conf_arg *a, int runs, const char *what)
{
    float *first = NULL;
    conf_ref_make(a, n);
    for (int run = 0; run < runs; run++) {
        for (int r = 0; r < n; r++)
            a->rand_out[r] = calloc(2 * a->count + 1, 4); /* the f32 and bf16 results */
        rh_result fail;
        if (!rh_run(n, kind, o, body, arg, &fail))
            fail_msg("%s: %s", what, fail.msg);
        for (int r = 1; r < n; r++)
            if (memcmp(a->rand_out[r], a->rand_out[0], 2 * a->count * 4) != 0)
                fail_msg("%s: rank %d's result differs from rank 0's", what, r);
        if (run == 0) {
            first = a->rand_out[0];
            a->rand_out[0] = NULL;
        } else if (memcmp(first, a->rand_out[0], 2 * a->count * 4) != 0) {
            fail_msg("%s: two runs gave different bits", what);
        }
        for (int r = 0; r < n; r++)
            free(a->rand_out[r]);
    }
    conf_ref_free(a);
    free(first);
}

void conformance(rt_transport_kind kind)
{
    const int ranks[] = {1, 2, 3, 4, 5, 8};
    /* 25000 floats (100 kB): the chunked ring with one frame per chunk at 512 KiB segments */
    const size_t counts[] = {0, 1, 63, 1000, 25000, 1u << 20};
    const size_t segs[] = {4096, 512u << 10};
    const char *name = kind == RT_TRANSPORT_TCP    ? "tcp"
                       : kind == RT_TRANSPORT_RDMA ? "rdma"
                       : kind == RT_TRANSPORT_SHM  ? "shm"
                                                   : "loopback";
    for (size_t ri = 0; ri < RT_ARRAY_LEN(ranks); ri++)
        for (size_t ci = 0; ci < RT_ARRAY_LEN(counts); ci++)
            for (size_t si = 0; si < RT_ARRAY_LEN(segs); si++) {
                const int n = ranks[ri];
                conf_arg a = {.count = counts[ci], .seed = tu_seed() + ci};
                rt_comm_opts o = base_opts(segs[si]);
                if (n >= 5) { /* as rt_init sets ranks that share cores */
                    o.spin_us = 0;
                    o.yield_us = RT_COMM_SHARED_YIELD_US;
                }
                char what[96];
                snprintf(what, sizeof what, "%s n=%d count=%zu seg=%zu", name, n, counts[ci],
                         segs[si]);
                conf_runs(n, kind, &o, conf_body, &a, &a, counts[ci] >= 1000 ? 2 : 1, what);
            }
}

/* ---- a neighbour that finishes first ------------------------------------------- */

void late_body(rt_comm *c, int r, void *varg, rh_result *res)
{
    const late_arg *a = varg;
    uint8_t *buf = malloc(a->bytes);
    RH_CHECK(res, buf, "out of memory");
    for (size_t i = 0; i < a->bytes; i++)
        buf[i] = r == 0 ? (uint8_t)(i * 7 + 1) : 0;
    if (r == a->late_rank)
        usleep((useconds_t)a->late_ms * 1000);
    RH_CHECK(res, rt_broadcast(c, buf, a->bytes, 0) == RT_OK, "rank %d: %s", r,
             rt_comm_last_error(c));
    for (size_t i = 0; i < a->bytes; i++)
        RH_CHECK(res, buf[i] == (uint8_t)(i * 7 + 1), "rank %d: [%zu] = %u", r, i, buf[i]);
    free(buf);
}

void left_done_first(rt_transport_kind kind)
{
    rt_comm_opts o = base_opts(4096);
    late_arg a = {.bytes = 128u << 10, .late_rank = 2, .late_ms = 400};
    for (int round = 0; round < 3; round++) {
        rh_result fail;
        if (!rh_run(3, kind, &o, late_body, &a, &fail))
            fail_msg("round %d: %s", round, fail.msg);
    }
}
