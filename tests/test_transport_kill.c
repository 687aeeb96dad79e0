/* test_transport_kill.c — real processes over TCP on 127.0.0.1, over
 * shared memory (with its TCP links for set-up and aborts), and in two
 * "hosts" of two ranks (the hierarchical allreduce: shared memory within,
 * TCP across): while the ranks run back-to-back 4 MiB allreduces (and 4 kB
 * ones: over TCP the small path both ways round, in the hierarchy the
 * sub-rings' small paths), one of them is killed with SIGKILL.  Every
 * survivor must return RT_ERR_IO (or the TIMEOUT a rank further away may
 * see) with a message naming the killed rank, long before the 5 s
 * collective deadline (the failure travels round the ring), and then exit
 * normally: under the sanitizer build that includes LeakSanitizer finding
 * nothing. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "rank_harness.h"
#include "rt_comm.h"
#include "rt_log.h"
#include "rt_time.h"

#define N 4
#define COUNT (1u << 20) /* the chunked ring */
#define SMALL 1000        /* the small path, both ways round over TCP */

typedef struct report {
    int rank;
    int status;
    int64_t t_fail; /* CLOCK_MONOTONIC ns, comparable across processes */
    int rounds;
    char msg[RT_ERR_LEN];
} report;

static void child(rt_transport_kind kind, size_t count, int hier, int rank, int *fds,
                  char **addrs, int ready_fd, int out_fd)
{
    rt_comm_opts o;
    rt_comm_opts_defaults(&o);
    o.transport = kind;
    o.rank = rank;
    o.size = N;
    o.peers = (const char *const *)addrs;
    o.listen_fd = fds[rank];
    o.job_id = 9;
    memset(o.key, 7, sizeof o.key);
    o.timeout_us = 5000000;
    o.connect_timeout_us = 10000000;
    report rep = {.rank = rank};
    rt_comm *c;
    char err[RT_ERR_LEN];
    rt_status cst = rt_comm_create(&o, &c, err);
    if (cst == RT_OK && hier && (cst = rt_comm_hierarchy(c, rank % hier, hier, err)) == RT_OK &&
        rt_comm_hierarchy_local_size(c) != hier)
        cst = rt_err(err, RT_ERR_INVALID, "no hierarchy of %d ranks per host", hier);
    if (cst != RT_OK) {
        rep.status = 1;
        snprintf(rep.msg, sizeof rep.msg, "create: %s", err);
        ssize_t w = write(out_fd, &rep, sizeof rep);
        (void)w;
        exit(2);
    }
    float *buf = malloc(count * 4);
    for (size_t i = 0; i < count; i++)
        buf[i] = 1.0f;
    rt_status st = RT_OK;
    for (int round = 0; round < 100000 && st == RT_OK; round++) {
        st = rt_allreduce(c, buf, count, RT_C_F32, RT_SUM);
        rep.rounds = round + 1;
        if (round == 2) {
            char x = 1;
            ssize_t w = write(ready_fd, &x, 1);
            (void)w;
        }
    }
    rep.t_fail = rt_now_ns();
    rep.status = st;
    snprintf(rep.msg, sizeof rep.msg, "%s", rt_comm_last_error(c));
    ssize_t w = write(out_fd, &rep, sizeof rep);
    (void)w;
    free(buf);
    rt_comm_destroy(c);
    exit(0);
}

static void kill_one_rank(rt_transport_kind kind, size_t count, int hier)
{
    const int victim = 2;
    int fds[N];
    char *addrs[N];
    rh_listeners(N, fds, addrs);
    int ready[2], out[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(out), 0);
    pid_t pids[N];
    fflush(stdout); /* or each child prints what the parent has not yet */
    for (int r = 0; r < N; r++) {
        pids[r] = fork();
        assert_true(pids[r] >= 0);
        if (pids[r] == 0) {
            close(ready[0]);
            close(out[0]);
            child(kind, count, hier, r, fds, addrs, ready[1], out[1]);
        }
    }
    close(ready[1]);
    close(out[1]);
    /* all ranks running allreduces: kill the victim in the middle of one */
    int nready = 0;
    while (nready < N) {
        struct pollfd p = {ready[0], POLLIN, 0};
        if (poll(&p, 1, 20000) <= 0)
            break;
        char x;
        if (read(ready[0], &x, 1) == 1)
            nready++;
    }
    assert_int_equal(nready, N);
    struct timespec ts = {0, 30 * 1000000};
    nanosleep(&ts, NULL);
    int64_t t_kill = rt_now_ns();
    kill(pids[victim], SIGKILL);

    int got = 0;
    report reps[N];
    while (got < N - 1) {
        struct pollfd p = {out[0], POLLIN, 0};
        if (poll(&p, 1, 20000) <= 0)
            break;
        ssize_t n = read(out[0], &reps[got], sizeof reps[got]);
        if (n != (ssize_t)sizeof reps[got])
            break;
        got++;
    }
    /* no orphans: every child is reaped, the survivors exit cleanly */
    for (int r = 0; r < N; r++) {
        int wst = 0;
        pid_t w = waitpid(pids[r], &wst, 0);
        assert_int_equal(w, pids[r]);
        if (r == victim)
            assert_true(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL);
        else if (!WIFEXITED(wst) || WEXITSTATUS(wst) != 0)
            fail_msg("rank %d exited with status 0x%x (a leak under ASan?)", r, wst);
    }
    assert_int_equal(got, N - 1);
    for (int i = 0; i < got; i++) {
        const report *rp = &reps[i];
        double after = (double)(rp->t_fail - t_kill) / 1e9;
        printf("%s%s, %zu floats: rank %d: status %d after %.3f s, %d rounds: %s\n",
               kind == RT_TRANSPORT_SHM ? "shm" : kind == RT_TRANSPORT_RDMA ? "rdma" : "tcp",
               hier ? " (2 x 2)" : "", count,
               rp->rank, rp->status, after, rp->rounds, rp->msg);
        if (rp->status != RT_ERR_IO && rp->status != RT_ERR_TIMEOUT)
            fail_msg("rank %d returned %d", rp->rank, rp->status);
        if (!strstr(rp->msg, "rank 2"))
            fail_msg("rank %d's error does not name rank 2: %s", rp->rank, rp->msg);
        /* the deadline is 5 s; news of a dead process travels in milliseconds */
        if (after > 2.5)
            fail_msg("rank %d took %.2f s to notice", rp->rank, after);
    }
    close(ready[0]);
    close(out[0]);
    rh_close_listeners(N, fds, addrs);
}

static void test_kill_one_rank(void **state)
{
    (void)state;
    kill_one_rank(RT_TRANSPORT_TCP, COUNT, 0);
}

/* Small allreduces: every rank sends to both neighbours (two rings). */
static void test_kill_one_rank_small(void **state)
{
    (void)state;
    kill_one_rank(RT_TRANSPORT_TCP, SMALL, 0);
}

/* The victim's segments stay mapped by its neighbours; its links close. */
static void test_kill_one_rank_shm(void **state)
{
    (void)state;
    kill_one_rank(RT_TRANSPORT_SHM, COUNT, 0);
}

/* Over RDMA (a device, or tools/verbsemu): the victim's QPs vanish with it;
 * its neighbours hear of it from their TCP links, or from their adapter's
 * retries running out, within the deadline. */
static void test_kill_one_rank_rdma(void **state)
{
    (void)state;
    if (!rt_rdma_available())
        skip();
    kill_one_rank(RT_TRANSPORT_RDMA, COUNT, 0);
    kill_one_rank(RT_TRANSPORT_RDMA, SMALL, 0);
}

/* Two hosts of two ranks: the victim (rank 2, local rank 0 of the second
 * host) shares a ring with ranks 0 (across) and 3 (within); rank 1 hears of
 * it from those. */
static void test_kill_one_rank_hier(void **state)
{
    (void)state;
    kill_one_rank(RT_TRANSPORT_TCP, COUNT, 2);
    kill_one_rank(RT_TRANSPORT_TCP, SMALL, 2);
}

int main(void)
{
    rt_log_set_level(RT_LL_ERROR);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_kill_one_rank),
                                       cmocka_unit_test(test_kill_one_rank_small),
                                       cmocka_unit_test(test_kill_one_rank_shm),
                                       cmocka_unit_test(test_kill_one_rank_rdma),
                                       cmocka_unit_test(test_kill_one_rank_hier)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
