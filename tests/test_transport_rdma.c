/* test_transport_rdma.c — the collectives conformance suite over the RDMA
 * (libibverbs) transport, plus encryption and a left neighbour that finishes
 * first.  It needs a verbs device (an InfiniBand or RoCE adapter, soft-RoCE
 * set up with `rdma link add`, or tools/verbsemu's emulated one in the
 * RINGTRAIN_VERBS=EMU build: scripts/test.sh --rdma-emu); where there is
 * none it says so and exits 77 (skipped). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conformance.h"
#include "rt_log.h"
#include "test_util.h"

static void test_conformance_rdma(void **state)
{
    (void)state;
    conformance(RT_TRANSPORT_RDMA);
}

static void test_rdma_encrypted(void **state)
{
    (void)state;
    rt_comm_opts o = base_opts(64u << 10);
    o.encrypt = true;
    conf_arg a = {.count = 100000, .seed = tu_seed()};
    for (int r = 0; r < 3; r++)
        a.rand_out[r] = calloc(2 * a.count + 1, 4); /* the f32 and bf16 results */
    conf_ref_make(&a, 3);
    rh_result fail;
    if (!rh_run(3, RT_TRANSPORT_RDMA, &o, conf_body, &a, &fail))
        fail_msg("encrypted: %s", fail.msg);
    for (int r = 0; r < 3; r++)
        free(a.rand_out[r]);
    conf_ref_free(&a);
}

/* The left's end of stream (and its failed last credit) while this rank
 * only has sends left fails nothing: 32 frames into 16 slots, rank 2 late
 * (under verbsemu this failed "rank 0 closed the connection" at once
 * before verbs.c learned it; shm.c's test_shm_left_done_first) */
static void test_rdma_left_done_first(void **state)
{
    (void)state;
    left_done_first(RT_TRANSPORT_RDMA);
}

int main(void)
{
    if (!rt_rdma_available()) {
        printf("no RDMA device (libibverbs %s, but ibv_get_device_list found none): skipping\n",
#ifdef RT_HAVE_IBVERBS
               "is built in"
#else
               "is not built in"
#endif
        );
        return 77;
    }
    tu_seed();
    rt_log_set_level(RT_LL_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rdma_left_done_first),
        cmocka_unit_test(test_conformance_rdma),
        cmocka_unit_test(test_rdma_encrypted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
