/* test_hier.c — the hierarchical allreduce: ranks as threads over TCP on
 * 127.0.0.1, grouped into "hosts" of L contiguous ranks (shared memory
 * within, TCP across).  The conformance body (every collective against a
 * serial reference, integer-valued data bitwise; random data the same bits
 * on every rank and in two runs) on grids of 2 x 2 to 4 x 2 and 2 x 4, both
 * plans (two steps for fewer elements than ranks per host, three from there,
 * the sub-rings on their small paths and chunked); the layouts that must
 * keep the flat ring; and a rank that leaves in the middle, which every
 * other rank must hear about by name.  (SIGKILL: test_transport_kill.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conformance.h"
#include "rank_harness.h"
#include "rt_comm.h"
#include "rt_log.h"
#include "test_util.h"

typedef struct hier_arg {
    conf_arg conf;
    int local_size;      /* what every rank claims */
    int odd_rank, odd_l; /* this rank claims local rank odd_l instead (-1: none) */
    int want_local;      /* rt_comm_hierarchy_local_size afterwards */
} hier_arg;

static void hier_body(rt_comm *c, int r, void *varg, rh_result *res)
{
    hier_arg *a = varg;
    char err[RT_ERR_LEN];
    int l = r == a->odd_rank ? a->odd_l : r % a->local_size;
    RH_CHECK(res, rt_comm_hierarchy(c, l, a->local_size, err) == RT_OK, "rank %d: %s", r, err);
    RH_CHECK(res, rt_comm_hierarchy_local_size(c) == a->want_local,
             "rank %d: %d ranks per host, want %d", r, rt_comm_hierarchy_local_size(c),
             a->want_local);
    conf_body(c, r, &a->conf, res);
}

static void run_grid(int n, int L, int odd_rank, int odd_l, int want_local, const size_t *counts,
                     size_t ncounts)
{
    const size_t segs[] = {4096, 512u << 10};
    for (size_t ci = 0; ci < ncounts; ci++)
        for (size_t si = 0; si < RT_ARRAY_LEN(segs); si++) {
            hier_arg a = {.conf = {.count = counts[ci], .seed = tu_seed() + ci},
                          .local_size = L,
                          .odd_rank = odd_rank,
                          .odd_l = odd_l,
                          .want_local = want_local};
            rt_comm_opts o = base_opts(segs[si]);
            o.spin_us = 0; /* ranks share two cores */
            o.yield_us = RT_COMM_SHARED_YIELD_US;
            char what[96];
            snprintf(what, sizeof what, "%d ranks, %d per host, count %zu, seg %zu", n, L,
                     counts[ci], segs[si]);
            conf_runs(n, RT_TRANSPORT_TCP, &o, hier_body, &a, &a.conf, 2, what);
        }
}

/* counts: empty, fewer elements than ranks per host (two steps), then three
 * steps whose parts take the sub-rings' small paths, one frame and many */
static const size_t COUNTS[] = {0, 1, 3, 63, 1000, 16384, 16385, 25000, 300000};

static void test_hier_2x2(void **state)
{
    (void)state;
    run_grid(4, 2, -1, 0, 2, COUNTS, RT_ARRAY_LEN(COUNTS));
}

static void test_hier_3x2(void **state)
{
    (void)state;
    run_grid(6, 2, -1, 0, 2, COUNTS, RT_ARRAY_LEN(COUNTS));
}

static void test_hier_2x3(void **state)
{
    (void)state;
    run_grid(6, 3, -1, 0, 3, COUNTS, RT_ARRAY_LEN(COUNTS));
}

static void test_hier_4x2_2x4(void **state)
{
    (void)state;
    const size_t counts[] = {5, 1000, 25000, 300000};
    run_grid(8, 2, -1, 0, 2, counts, RT_ARRAY_LEN(counts));
    run_grid(8, 4, -1, 0, 4, counts, RT_ARRAY_LEN(counts));
}

/* Layouts that are not a grid keep the flat ring, and say nothing wrong. */
static void test_hier_not_a_grid(void **state)
{
    (void)state;
    const size_t counts[] = {1000, 25000};
    run_grid(5, 2, -1, 0, 0, counts, 2);  /* 5 ranks in hosts of 2 */
    run_grid(4, 4, -1, 0, 0, counts, 2);  /* one host */
    run_grid(3, 1, -1, 0, 0, counts, 2);  /* one rank per host */
    run_grid(4, 2, 2, 1, 0, counts, 2);   /* rank 2 says it is local rank 1 */
}

/* Rank `quit` leaves after a few allreduces (its communicator closed with
 * the others in the middle of one); every other rank must fail, name it,
 * and find the communicator broken afterwards. */
typedef struct quit_arg {
    int quit;
    size_t count;
} quit_arg;

static void quit_body(rt_comm *c, int r, void *varg, rh_result *res)
{
    quit_arg *a = varg;
    char err[RT_ERR_LEN];
    RH_CHECK(res, rt_comm_hierarchy(c, r % 2, 2, err) == RT_OK, "rank %d: %s", r, err);
    float *buf = calloc(a->count, 4);
    rt_status st = RT_OK;
    for (int round = 0; round < 20 && st == RT_OK; round++) {
        if (r == a->quit && round == 5) {
            free(buf);
            return; /* rank_main closes its communicator */
        }
        st = rt_allreduce(c, buf, a->count, RT_C_F32, RT_SUM);
    }
    free(buf);
    char want[32];
    snprintf(want, sizeof want, "rank %d", a->quit);
    RH_CHECK(res, st != RT_OK, "rank %d: 20 allreduces succeeded without rank %d", r, a->quit);
    RH_CHECK(res, strstr(rt_comm_last_error(c), want), "rank %d's error does not name %s: %s", r,
             want, rt_comm_last_error(c));
    float x = 1;
    RH_CHECK(res, rt_allreduce(c, &x, 1, RT_C_F32, RT_SUM) == RT_ERR_BROKEN,
             "rank %d: the communicator is not broken", r);
}

static void test_hier_rank_leaves(void **state)
{
    (void)state;
    const size_t counts[] = {1000, 300000};
    for (int quit = 0; quit < 6; quit += 3) /* local rank 0 of host 0, local rank 1 of host 1 */
        for (size_t ci = 0; ci < RT_ARRAY_LEN(counts); ci++) {
            quit_arg a = {.quit = quit, .count = counts[ci]};
            rt_comm_opts o = base_opts(512u << 10);
            o.spin_us = 0;
            o.yield_us = RT_COMM_SHARED_YIELD_US;
            o.timeout_us = 5000000;
            rh_result fail;
            if (!rh_run(6, RT_TRANSPORT_TCP, &o, quit_body, &a, &fail))
                fail_msg("rank %d leaves, count %zu: %s", quit, counts[ci], fail.msg);
        }
}

int main(void)
{
    rt_log_set_level(RT_LL_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hier_2x2),         cmocka_unit_test(test_hier_3x2),
        cmocka_unit_test(test_hier_2x3),         cmocka_unit_test(test_hier_4x2_2x4),
        cmocka_unit_test(test_hier_not_a_grid),  cmocka_unit_test(test_hier_rank_leaves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
