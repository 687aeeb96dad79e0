/* test_transport_fail.c — the communicator under failure, ranks as threads:
 * a rank that never arrives (every other rank returns within the deadline
 * plus a short grace, with an error naming it), ranks that call different
 * collectives, a broken communicator refusing further work, and strangers
 * on the data port (wrong key, wrong job id, truncated hello, random bytes)
 * both while the ring connects and while collectives run: they are refused
 * and logged, and the collectives complete with correct results; and
 * control records forged into an encrypted connection after the handshake
 * (unsealed, too short for a tag) are refused with an error, never acted
 * on and never a crash; and data frames injected into a ring with the
 * default integrity (a made-up tag, no tag) fail the collective. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "rank_harness.h"
#include "rt_comm.h"
#include "rt_log.h"
#include "rt_time.h"
#include "sock.h"
#include "test_util.h"
#include "wire.h"

static rt_comm_opts base_opts(void)
{
    rt_comm_opts o;
    rt_comm_opts_defaults(&o);
    o.job_id = 77;
    memset(o.key, 0x11, sizeof o.key);
    o.max_segment_bytes = 64u << 10;
    o.small_bytes = 4096;
    o.timeout_us = 600000; /* 0.6 s: short, the tests wait for it */
    o.connect_timeout_us = 20000000;
    o.spin_us = 10;
    return o;
}

/* ---- a rank that never arrives ---------------------------------------------- */

typedef struct absent_arg {
    int absent;
    rt_status st[8];
    char msg[8][RT_ERR_LEN];
    double secs[8];
    pthread_barrier_t ready; /* the ranks that take part, before the collective */
    pthread_barrier_t done;
} absent_arg;

static void absent_body(rt_comm *c, int r, void *varg, rh_result *res)
{
    absent_arg *a = varg;
    (void)res;
    if (r != a->absent) {
        float buf[20000];
        for (int i = 0; i < 20000; i++)
            buf[i] = (float)i;
        /* the present ranks start their collective together: one that came
         * out of its setup late (ASan on a slow VM: rank 0 over 0.6 s
         * behind) was itself reported as not arriving, not the absent one */
        pthread_barrier_wait(&a->ready);
        double t = rt_now_s();
        a->st[r] = rt_allreduce(c, buf, 20000, RT_C_F32, RT_SUM);
        a->secs[r] = rt_now_s() - t;
        snprintf(a->msg[r], RT_ERR_LEN, "%s", rt_comm_last_error(c));
        /* broken now: another collective fails at once with the same story */
        double t2 = rt_now_s();
        rt_status again = rt_allreduce(c, buf, 10, RT_C_F32, RT_SUM);
        if (again != RT_ERR_BROKEN || rt_now_s() - t2 > 0.05)
            a->st[r] = RT_OK; /* flag it: checked by the caller */
    }
    /* the absent rank keeps its connections open until the others are done */
    pthread_barrier_wait(&a->done);
}

static void absent_case(rt_transport_kind kind, int n, int absent)
{
    absent_arg a = {.absent = absent};
    pthread_barrier_init(&a.ready, NULL, (unsigned)n - 1);
    pthread_barrier_init(&a.done, NULL, (unsigned)n);
    rt_comm_opts o = base_opts();
    rh_result fail;
    if (!rh_run(n, kind, &o, absent_body, &a, &fail))
        fail_msg("%s", fail.msg);
    pthread_barrier_destroy(&a.ready);
    pthread_barrier_destroy(&a.done);
    char name[32];
    snprintf(name, sizeof name, "rank %d", absent);
    for (int r = 0; r < n; r++) {
        if (r == absent)
            continue;
        if (a.st[r] != RT_ERR_TIMEOUT)
            fail_msg("rank %d returned %d (%s), want a timeout", r, a.st[r], a.msg[r]);
        if (!strstr(a.msg[r], name))
            fail_msg("rank %d's error does not name %s: %s", r, name, a.msg[r]);
        /* deadline 0.6 s, grace at most 0.03 s: all back well within 1.5 s */
        if (a.secs[r] > 1.5)
            fail_msg("rank %d took %.2f s", r, a.secs[r]);
    }
    char want[64];
    snprintf(want, sizeof want, "rank %d", absent);
    /* the absent rank's right neighbour saw nothing from it at all */
    int right = (absent + 1) % n;
    if (!strstr(a.msg[right], "did not arrive"))
        fail_msg("rank %d: %s", right, a.msg[right]);
}

static void test_absent_rank(void **state)
{
    (void)state;
    absent_case(RT_TRANSPORT_LOOPBACK, 4, 2);
    absent_case(RT_TRANSPORT_TCP, 4, 2);
    absent_case(RT_TRANSPORT_TCP, 2, 0);
    absent_case(RT_TRANSPORT_TCP, 5, 4);
    absent_case(RT_TRANSPORT_SHM, 4, 2);
    absent_case(RT_TRANSPORT_SHM, 2, 0);
    if (rt_rdma_available()) { /* a device, or tools/verbsemu (scripts/test.sh --rdma-emu) */
        absent_case(RT_TRANSPORT_RDMA, 4, 2);
        absent_case(RT_TRANSPORT_RDMA, 2, 0);
    }
}

/* ---- ranks calling different collectives -------------------------------------- */

typedef struct mismatch_arg {
    rt_status st[4];
    char msg[4][RT_ERR_LEN];
} mismatch_arg;

static void mismatch_body(rt_comm *c, int r, void *varg, rh_result *res)
{
    mismatch_arg *a = varg;
    (void)res;
    float buf[300000] = {0};
    size_t count = r == 1 ? 200000 : 300000; /* rank 1 disagrees on the size */
    a->st[r] = rt_allreduce(c, buf, count, RT_C_F32, RT_SUM);
    snprintf(a->msg[r], RT_ERR_LEN, "%s", rt_comm_last_error(c));
}

static void test_mismatched_collectives(void **state)
{
    (void)state;
    rt_transport_kind kinds[] = {RT_TRANSPORT_LOOPBACK, RT_TRANSPORT_TCP, RT_TRANSPORT_SHM,
                                 RT_TRANSPORT_RDMA};
    for (int k = 0; k < 3 + rt_rdma_available(); k++) {
        static mismatch_arg a;
        memset(&a, 0, sizeof a);
        rt_comm_opts o = base_opts();
        o.timeout_us = 5000000;
        rh_result fail;
        if (!rh_run(3, kinds[k], &o, mismatch_body, &a, &fail))
            fail_msg("%s", fail.msg);
        bool proto = false;
        for (int r = 0; r < 3; r++) {
            if (a.st[r] == RT_OK)
                fail_msg("rank %d succeeded on mismatched collectives", r);
            proto |= a.st[r] == RT_ERR_PROTO || strstr(a.msg[r], "different") != NULL ||
                     strstr(a.msg[r], "expected frame") != NULL;
        }
        if (!proto)
            fail_msg("no rank diagnosed the mismatch: %s | %s | %s", a.msg[0], a.msg[1], a.msg[2]);
    }
}

/* ---- strangers on the data port ------------------------------------------------ */

static int rejected;
static pthread_mutex_t rej_mu = PTHREAD_MUTEX_INITIALIZER;
static void count_rejections(void *u, rt_log_level lvl, const char *line)
{
    (void)u;
    (void)lvl;
    if (strstr(line, "rejected connection")) {
        pthread_mutex_lock(&rej_mu);
        rejected++;
        pthread_mutex_unlock(&rej_mu);
    }
}

typedef enum { BAD_KEY, BAD_JOB, TRUNCATED, RANDOM, SILENT_CLOSE, NBAD } bad_kind;

/* Play one kind of bad peer against addr, pretending to be `from`. */
static void bad_peer(const char *addr, bad_kind kind, int from, int to, int world)
{
    int fd;
    char err[RT_ERR_LEN];
    if (rt_sock_connect(addr, rt_deadline_in_us(5000000), &fd, err) != RT_OK)
        return;
    rt_hs_params p = {.job_id = 77, .rank = from, .world = world, .nconn = 1};
    uint8_t wrong_key[32];
    memset(wrong_key, 0x22, sizeof wrong_key);
    p.key = wrong_key;
    rt_hs_result r;
    switch (kind) {
    case BAD_KEY:
        rt_handshake_initiate(fd, &p, to, 0, rt_deadline_in_us(3000000), &r, err);
        break;
    case BAD_JOB:
        p.job_id = 78;
        rt_handshake_initiate(fd, &p, to, 0, rt_deadline_in_us(3000000), &r, err);
        break;
    case TRUNCATED:
        rt_sock_write_full(fd, "RTDP\x01\x00", 6, rt_deadline_in_us(1000000), err);
        break;
    case RANDOM: {
        uint8_t junk[200];
        rt_random(junk, sizeof junk);
        rt_sock_write_full(fd, junk, sizeof junk, rt_deadline_in_us(1000000), err);
        break;
    }
    case SILENT_CLOSE:
    case NBAD:
        break;
    }
    close(fd);
}

typedef struct stranger_arg {
    char **addrs;
    int rounds;
} stranger_arg;

static void sum_rounds_body(rt_comm *c, int r, void *varg, rh_result *res)
{
    stranger_arg *a = varg;
    const int n = rt_comm_size(c);
    static __thread float buf[50000];
    for (int round = 0; round < a->rounds; round++) {
        for (int i = 0; i < 50000; i++)
            buf[i] = (float)(r + i % 7 + round);
        RH_CHECK(res, rt_allreduce(c, buf, 50000, RT_C_F32, RT_SUM) == RT_OK, "round %d: %s",
                 round, rt_comm_last_error(c));
        for (int i = 0; i < 50000; i++)
            RH_CHECK(res, buf[i] == (float)(n * (n - 1) / 2 + n * (i % 7 + round)),
                     "round %d wrong value", round);
    }
}

typedef struct attacker {
    const char *addr;
    int to, world;
    pthread_t th;
} attacker;

static void *attack_all(void *p)
{
    attacker *a = p;
    for (int k = 0; k < NBAD; k++)
        bad_peer(a->addr, (bad_kind)k, (a->to + a->world - 1) % a->world, a->to, a->world);
    return NULL;
}

/* Build n communicators on the given listeners, concurrently. */
typedef struct create_job {
    rt_comm_opts o;
    rt_comm *c;
    rt_status st;
    char err[RT_ERR_LEN];
} create_job;

static void *create_one(void *p)
{
    create_job *j = p;
    j->st = rt_comm_create(&j->o, &j->c, j->err);
    return NULL;
}

static void make_ring(int n, int *fds, char **addrs, const rt_comm_opts *o, rt_comm **cs)
{
    create_job jobs[8];
    pthread_t th[8];
    for (int r = 0; r < n; r++) {
        jobs[r].o = *o;
        jobs[r].o.rank = r;
        jobs[r].o.size = n;
        jobs[r].o.peers = (const char *const *)addrs;
        jobs[r].o.listen_fd = fds[r];
        pthread_create(&th[r], NULL, create_one, &jobs[r]);
    }
    for (int r = 0; r < n; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < n; r++) {
        if (jobs[r].st != RT_OK)
            fail_msg("rank %d: %s", r, jobs[r].err);
        cs[r] = jobs[r].c;
    }
}

typedef struct run_job {
    rt_comm *c;
    int rank;
    stranger_arg *a;
    rh_result res;
} run_job;

static void *run_one(void *p)
{
    run_job *j = p;
    sum_rounds_body(j->c, j->rank, j->a, &j->res);
    return NULL;
}

static void start_rounds(int n, rt_comm **cs, stranger_arg *a, run_job *jobs, pthread_t *th)
{
    for (int r = 0; r < n; r++) {
        jobs[r] = (run_job){cs[r], r, a, {0}};
        pthread_create(&th[r], NULL, run_one, &jobs[r]);
    }
}

static void finish_rounds(int n, rt_comm **cs, run_job *jobs, pthread_t *th)
{
    for (int r = 0; r < n; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < n; r++) {
        if (jobs[r].res.failed)
            fail_msg("%s", jobs[r].res.msg);
        rt_comm_destroy(cs[r]); /* joins the late acceptor: every stranger handled */
    }
}

static void test_strangers(void **state)
{
    (void)state;
    rt_log_set_sink(count_rejections, NULL);
    rt_log_set_level(RT_LL_WARN);
    rt_comm_opts o = base_opts();
    o.timeout_us = 10000000;
    int fds[4];
    char *addrs[4];
    rt_comm *cs[4];
    run_job jobs[4];
    pthread_t th[4];

    /* while the ring connects: every stranger is queued on rank 1's port
     * before the real left neighbour shows up */
    rh_listeners(3, fds, addrs);
    rejected = 0;
    for (int k = 0; k < NBAD; k++)
        bad_peer(addrs[1], (bad_kind)k, 0, 1, 3);
    make_ring(3, fds, addrs, &o, cs);
    stranger_arg a = {addrs, 20};
    start_rounds(3, cs, &a, jobs, th);
    finish_rounds(3, cs, jobs, th);
    rh_close_listeners(3, fds, addrs);
    /* the silent close says nothing, but is still refused: all five */
    if (rejected < NBAD)
        fail_msg("only %d of %d strangers were logged as rejected", rejected, NBAD);

    /* while collectives run: strangers hit every rank's port */
    rejected = 0;
    rh_listeners(4, fds, addrs);
    make_ring(4, fds, addrs, &o, cs);
    stranger_arg b = {addrs, 200};
    start_rounds(4, cs, &b, jobs, th);
    attacker att[4];
    for (int r = 0; r < 4; r++) {
        att[r] = (attacker){addrs[r], r, 4, 0};
        pthread_create(&att[r].th, NULL, attack_all, &att[r]);
    }
    for (int r = 0; r < 4; r++)
        pthread_join(att[r].th, NULL);
    finish_rounds(4, cs, jobs, th);
    rh_close_listeners(4, fds, addrs);
    if (rejected < 4 * NBAD)
        fail_msg("only %d of %d strangers were logged as rejected", rejected, 4 * NBAD);
    rt_log_set_sink(NULL, NULL);
    rt_log_set_level(RT_LL_ERROR);
}

/* `n` connections on rank 1's port before its real left neighbour, every
 * odd one sending a well-formed hello (the right job, ranks and world, as
 * someone who watched the network could) when `hellos`, the rest silent;
 * then a ring of 3 and `rounds` allreduces.  The seconds the ring took. */
static double ring_despite_strangers(int n, bool hellos, int rounds)
{
    rt_comm_opts o = base_opts();
    o.connect_timeout_us = 20000000;
    int fds[3], silent[80];
    char *addrs[3];
    rt_comm *cs[3];
    assert_true(n <= 80);
    rh_listeners(3, fds, addrs);
    for (int k = 0; k < n; k++) {
        char err[RT_ERR_LEN];
        silent[k] = -1;
        rt_sock_connect(addrs[1], rt_deadline_in_us(2000000), &silent[k], err);
        if (hellos && k % 2 && silent[k] >= 0) { /* a hello from rank 0 to rank 1, then nothing */
            rt_hello h = {.version = RT_WIRE_VERSION, .flags = RT_HELLO_F_INTEGRITY,
                          .job_id = o.job_id, .from = 0, .to = 1, .conn = 0, .world = 3};
            uint8_t hello[RT_HELLO_LEN];
            rt_hello_encode(&h, hello);
            assert_int_equal(rt_sock_write_full(silent[k], hello, sizeof hello,
                                                rt_deadline_in_us(2000000), err),
                             RT_OK);
        }
    }
    const int64_t t0 = rt_now_ns();
    make_ring(3, fds, addrs, &o, cs);
    double s = (double)(rt_now_ns() - t0) / 1e9;
    run_job jobs[3];
    pthread_t th[3];
    stranger_arg a = {addrs, rounds};
    start_rounds(3, cs, &a, jobs, th);
    finish_rounds(3, cs, jobs, th);
    for (int k = 0; k < n; k++)
        if (silent[k] >= 0)
            close(silent[k]);
    rh_close_listeners(3, fds, addrs);
    return s;
}

/* 20 connections that say nothing and 20 that send a well-formed hello and
 * then stall: they do not hold the neighbour up (each would cost 5 s if
 * strangers were served one at a time: 200 s, far past the deadline). */
static void test_silent_strangers(void **state)
{
    (void)state;
    double s = ring_despite_strangers(40, true, 5);
    fprintf(stderr, "ring of 3 up in %.2f s with 20 silent strangers and 20 stalled hellos on "
                    "rank 1's port\n", s);
    assert_true(s < 4.0);
}

/* Issue 28.7: 80 connections that say nothing, more than the 64 handshake
 * slots (16 of them per address), on rank 1's port before its real left
 * neighbour: the neighbour is turned away while they hold the slots, tries
 * again with backoff, and the ring forms once their 5 s run out (before, it
 * never retried and the ring failed at its deadline). */
static void test_slot_flood(void **state)
{
    (void)state;
    double s = ring_despite_strangers(80, false, 2);
    fprintf(stderr, "ring of 3 up in %.2f s with 80 silent connections on rank 1's port\n", s);
    assert_true(s < 15.0);
}

/* the honest initiator learns why it was refused, and the responder says who */
typedef struct responder {
    int lfd;
    rt_hs_params p;
    rt_status st;
    char err[RT_ERR_LEN];
} responder;

static void *respond_once(void *p)
{
    responder *r = p;
    struct pollfd pf = {.fd = r->lfd, .events = POLLIN};
    poll(&pf, 1, 5000);
    int c = accept4(r->lfd, NULL, NULL, SOCK_NONBLOCK);
    rt_hs_result res;
    r->st = rt_handshake_respond(c, &r->p, 0, false, rt_deadline_in_us(3000000), &res, r->err);
    close(c);
    return NULL;
}

static void test_refusal_reasons(void **state)
{
    (void)state;
    int fd;
    char *addr;
    assert_int_equal(rt_listen_tcp("127.0.0.1", 0, &fd, &addr, NULL), RT_OK);
    uint8_t key[32];
    memset(key, 0x11, sizeof key);
    responder rs = {.lfd = fd,
                    .p = {.job_id = 77, .key = key, .rank = 1, .world = 2, .nconn = 1}};
    /* wrong job id: both sides say so; wrong key: our initiator checks the
     * responder's MAC first and hangs up, which the responder reports */
    const struct {
        uint64_t job;
        uint8_t keybyte;
        const char *want_init, *want_resp;
    } cases[] = {
        {78, 0x11, "rank 1 refused the connection: wrong job id", "wrong job id"},
        {77, 0x33, "the peer listening for rank 1 does not hold the job key",
         "hung up during authentication"},
    };
    for (size_t i = 0; i < RT_ARRAY_LEN(cases); i++) {
        pthread_t th;
        pthread_create(&th, NULL, respond_once, &rs);
        int cfd;
        char err[RT_ERR_LEN];
        assert_int_equal(rt_sock_connect(addr, rt_deadline_in_us(3000000), &cfd, err), RT_OK);
        uint8_t k2[32];
        memset(k2, cases[i].keybyte, sizeof k2);
        rt_hs_params p = {.job_id = cases[i].job, .key = k2, .rank = 0, .world = 2, .nconn = 1};
        rt_hs_result r;
        rt_status st = rt_handshake_initiate(cfd, &p, 1, 0, rt_deadline_in_us(3000000), &r, err);
        close(cfd);
        pthread_join(th, NULL);
        assert_int_not_equal(st, RT_OK);
        if (!strstr(err, cases[i].want_init))
            fail_msg("initiator said: %s", err);
        assert_int_not_equal(rs.st, RT_OK);
        if (!strstr(rs.err, cases[i].want_resp))
            fail_msg("responder said: %s", rs.err);
    }
    /* a peer that knows the job and ranks but not the key, and sends a
     * made-up proof: refused as such */
    pthread_t th;
    pthread_create(&th, NULL, respond_once, &rs);
    int cfd;
    char err[RT_ERR_LEN];
    assert_int_equal(rt_sock_connect(addr, rt_deadline_in_us(3000000), &cfd, err), RT_OK);
    rt_hello h = {RT_WIRE_VERSION, 0, 77, 0, 1, 0, 2, {0}};
    uint8_t hello[RT_HELLO_LEN], chal[RT_CHALLENGE_LEN], proof[RT_PROOF_LEN] = {1, 2, 3};
    rt_hello_encode(&h, hello);
    assert_int_equal(rt_sock_write_full(cfd, hello, sizeof hello, rt_deadline_in_us(2000000), err),
                     RT_OK);
    assert_int_equal(rt_sock_read_full(cfd, chal, sizeof chal, rt_deadline_in_us(2000000), err),
                     RT_OK);
    assert_int_equal(rt_sock_write_full(cfd, proof, sizeof proof, rt_deadline_in_us(2000000), err),
                     RT_OK);
    pthread_join(th, NULL);
    close(cfd);
    assert_int_equal(rs.st, RT_ERR_AUTH);
    assert_string_equal(rs.err, "authentication failed (wrong job key) (hello claims rank 0 of job 77)");
    close(fd);
    free(addr);
}

/* ---- forged control records on an encrypted ring ------------------------------ */

typedef struct victim {
    rt_comm_opts o;
    rt_status st;
    char msg[RT_ERR_LEN];
} victim;

static void *victim_run(void *p)
{
    victim *v = p;
    rt_comm *c = NULL;
    v->st = rt_comm_create(&v->o, &c, v->msg);
    if (v->st == RT_OK) {
        float buf[1024] = {0};
        v->st = rt_allreduce(c, buf, 1024, RT_C_F32, RT_SUM);
        snprintf(v->msg, sizeof v->msg, "%s", rt_comm_last_error(c));
    }
    rt_comm_destroy(c);
    return NULL;
}

/* The test as rank 0 of 2 against a real rank 1 running victim_run on
 * v->o (its ring fields filled in here): rank 1 connects to us (its right,
 * *back) and we connect to it (its left, *fwd); both handshakes done with
 * the job key and v->o's sealing. */
typedef struct impostor {
    int fds[2];
    char *addrs[2];
    pthread_t th;
    int back, fwd;
} impostor;

static void impostor_start(victim *v, impostor *m)
{
    rh_listeners(2, m->fds, m->addrs);
    v->o.rank = 1;
    v->o.size = 2;
    v->o.peers = (const char *const *)m->addrs;
    v->o.listen_fd = m->fds[1];
    pthread_create(&m->th, NULL, victim_run, v);
    rt_hs_params p = {.job_id = v->o.job_id, .key = v->o.key, .encrypt = v->o.encrypt,
                      .integrity = v->o.integrity, .rank = 0, .world = 2, .nconn = 1};
    char err[RT_ERR_LEN];
    struct pollfd pf = {.fd = m->fds[0], .events = POLLIN};
    assert_true(poll(&pf, 1, 10000) == 1);
    m->back = accept4(m->fds[0], NULL, NULL, SOCK_NONBLOCK);
    rt_hs_result r1, r2;
    assert_int_equal(
        rt_handshake_respond(m->back, &p, 1, false, rt_deadline_in_us(5000000), &r1, err), RT_OK);
    m->fwd = -1;
    assert_int_equal(rt_sock_connect(m->addrs[1], rt_deadline_in_us(5000000), &m->fwd, err), RT_OK);
    assert_int_equal(rt_handshake_initiate(m->fwd, &p, 1, 0, rt_deadline_in_us(5000000), &r2, err),
                     RT_OK);
}

/* Wait for rank 1 to return and close everything. */
static void impostor_end(impostor *m)
{
    pthread_join(m->th, NULL);
    close(m->back);
    close(m->fwd);
    rh_close_listeners(2, m->fds, m->addrs);
}

/* Rank 1 of 2 is real and encrypts; the test plays rank 0 (it holds the key,
 * like someone injecting into the TCP stream after the handshake) and,
 * instead of data, sends an unsealed ABORT of 3 bytes on the forward
 * direction (forward) or back on rank 1's own connection (reverse). */
static void forged_abort(bool forward)
{
    victim v = {.o = base_opts()};
    v.o.encrypt = true;
    v.o.timeout_us = 5000000;
    impostor m;
    impostor_start(&v, &m);
    char err[RT_ERR_LEN];
    uint8_t frame[RT_FRAME_HDR_LEN + 3] = {0};
    rt_frame_hdr h = {RT_FRAME_ABORT, 0, 0, 0, 3};
    rt_frame_encode(&h, frame);
    assert_int_equal(rt_sock_write_full(forward ? m.fwd : m.back, frame, sizeof frame,
                                        rt_deadline_in_us(2000000), err),
                     RT_OK);
    impostor_end(&m);
    printf("forged %s abort: status %d: %s\n", forward ? "forward" : "reverse", v.st, v.msg);
    assert_int_equal(v.st, RT_ERR_AUTH);
    assert_non_null(strstr(v.msg, "unsealed control record"));
    assert_non_null(strstr(v.msg, "rank 0"));
}

static void test_forged_control_records(void **state)
{
    (void)state;
    forged_abort(true);
    forged_abort(false);
}

/* Integrity (the default, no encryption): rank 1 is real; the test plays
 * rank 0 as someone who took over the stream after the handshake and does
 * not hold the connection's keys.  A data frame with a made-up tag, and one
 * without a tag, are refused; the allreduce fails naming rank 0. */
static void tampered_data(bool with_tag)
{
    victim v = {.o = base_opts()};
    v.o.timeout_us = 5000000;
    assert_true(v.o.integrity && !v.o.encrypt); /* the defaults */
    impostor m;
    impostor_start(&v, &m);
    char err[RT_ERR_LEN];
    /* what rank 1 expects first: frame 0 of collective #1, rank 0's 4 KiB */
    static uint8_t frame[RT_FRAME_HDR_LEN + 4096 + RT_GCM_TAG_LEN];
    memset(frame, 0, sizeof frame);
    for (size_t i = RT_FRAME_HDR_LEN; i < sizeof frame; i++)
        frame[i] = (uint8_t)(i * 7);
    rt_frame_hdr h = {RT_FRAME_DATA, with_tag ? RT_FRAME_SEALED : 0, 1, 0, 4096};
    rt_frame_encode(&h, frame);
    assert_int_equal(rt_sock_write_full(m.fwd, frame, sizeof frame - (with_tag ? 0 : RT_GCM_TAG_LEN),
                                        rt_deadline_in_us(2000000), err),
                     RT_OK);
    impostor_end(&m);
    printf("tampered frame %s a tag: status %d: %s\n", with_tag ? "with" : "without", v.st, v.msg);
    assert_int_equal(v.st, RT_ERR_AUTH);
    assert_non_null(
        strstr(v.msg, with_tag ? "failed authentication" : "without its authentication tag"));
    assert_non_null(strstr(v.msg, "rank 0"));
}

static void test_tampered_data(void **state)
{
    (void)state;
    tampered_data(true);
    tampered_data(false);
}

/* ---- a hostile neighbour on the shared-memory transport --------------------------- */

/* Rank 1 is real and uses shared memory; the test plays rank 0, which holds
 * the job key but names, instead of its private segment, something else:
 * garbage, a path outside /dev/shm, or a segment other users can read (as
 * one planted by another user would be).  Rank 1 refuses each, naming rank 0,
 * and opens nothing. */
static void hostile_shm_record(int kind)
{
    victim v = {.o = base_opts()};
    v.o.transport = RT_TRANSPORT_SHM;
    impostor m;
    impostor_start(&v, &m);
    char err[RT_ERR_LEN];
    /* rank 1's own record (its segment's layout), then ours in its place */
    uint8_t rec[96]; /* shm.c's record: magic, slots, slot bytes, 64 bytes of name */
    assert_int_equal(rt_sock_read_full(m.fwd, rec, sizeof rec, rt_deadline_in_us(5000000), err),
                     RT_OK);
    uint32_t nslots, slot_bytes;
    memcpy(&nslots, rec + 8, 4);
    memcpy(&slot_bytes, rec + 12, 4);
    char name[64] = "/ringtrain-planted-by-a-test";
    if (kind == 0)
        memset(rec, 0, sizeof rec);
    else if (kind == 1)
        snprintf(name, sizeof name, "/ringtrain-x/../../etc/passwd");
    if (kind != 0) {
        memset(rec + 16, 0, 64);
        memcpy(rec + 16, name, strlen(name));
    }
    int sfd = -1;
    if (kind == 2) { /* a segment of the right size, readable by all */
        sfd = shm_open(name, O_RDWR | O_CREAT | O_TRUNC, 0644);
        assert_true(sfd >= 0);
        assert_int_equal(fchmod(sfd, 0644), 0);
        assert_int_equal(ftruncate(sfd, (off_t)(192 + (size_t)nslots * slot_bytes)), 0);
    }
    assert_int_equal(rt_sock_write_full(m.back, rec, sizeof rec, rt_deadline_in_us(2000000), err),
                     RT_OK);
    impostor_end(&m);
    printf("shm record %d: status %d: %s\n", kind, v.st, v.msg);
    if (kind == 2) {
        assert_int_equal(v.st, RT_ERR_AUTH);
        assert_non_null(strstr(v.msg, "not this user's private segment"));
        close(sfd);
        shm_unlink(name);
    } else {
        assert_int_equal(v.st, RT_ERR_PROTO);
        assert_non_null(strstr(v.msg, "sent no shared-memory record"));
    }
    assert_non_null(strstr(v.msg, "rank 0"));
}

static void test_hostile_shm_peer(void **state)
{
    (void)state;
    for (int kind = 0; kind < 3; kind++)
        hostile_shm_record(kind);
}

int main(void)
{
    tu_seed();
    rt_log_set_level(RT_LL_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absent_rank),
        cmocka_unit_test(test_mismatched_collectives),
        cmocka_unit_test(test_strangers),
        cmocka_unit_test(test_silent_strangers),
        cmocka_unit_test(test_slot_flood),
        cmocka_unit_test(test_refusal_reasons),
        cmocka_unit_test(test_forged_control_records),
        cmocka_unit_test(test_tampered_data),
        cmocka_unit_test(test_hostile_shm_peer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
