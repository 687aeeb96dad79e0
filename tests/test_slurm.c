/* test_slurm.c — a Slurm job step's layout from its environment
 * (transport/rt_slurm.c): node lists expanded as `scontrol show hostnames`
 * does, and Horovod's ranks for block and cyclic placements, uneven nodes,
 * and the errors that name what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_comm.h"
#include "rt_slurm.h"

static void expect_hosts(const char *spec, const char *want)
{
    char **h = NULL, err[RT_ERR_LEN];
    int n = 0;
    if (rt_slurm_hostlist(spec, &h, &n, err) != RT_OK)
        fail_msg("%s: %s", spec, err);
    char got[2048] = "";
    for (int i = 0; i < n; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "", h[i]);
    rt_slurm_hostlist_free(h, n);
    if (strcmp(got, want) != 0)
        fail_msg("%s: got '%s', want '%s'", spec, got, want);
}

static void expect_bad(const char *spec, const char *says)
{
    char **h = NULL, err[RT_ERR_LEN];
    int n = 0;
    assert_int_equal(rt_slurm_hostlist(spec, &h, &n, err), RT_ERR_INVALID);
    assert_null(h);
    if (!strstr(err, says))
        fail_msg("%s: '%s' does not say '%s'", spec, err, says);
}

static void test_hostlist(void **state)
{
    (void)state;
    expect_hosts("node01", "node01");
    expect_hosts("node[01-04,07]", "node01 node02 node03 node04 node07");
    expect_hosts("a[8-11]", "a8 a9 a10 a11");
    expect_hosts("gpu[1-2]x,login,n[009-011]", "gpu1x gpu2x login n009 n010 n011");
    expect_hosts("rack[1-2]-n[1-2]", "rack1-n1 rack1-n2 rack2-n1 rack2-n2");
    expect_hosts("h[3]", "h3");
    expect_bad("node[1-", "unbalanced brackets");
    expect_bad("node[]", "an empty or unclosed [...] group");
    expect_bad("node[4-2]", "backwards");
    expect_bad("node[a-b]", "not a number range");
    expect_bad("a,,b", "empty");
    expect_bad("", "empty");
}

static void set_step(const char *procid, const char *localid, const char *nodeid,
                     const char *ntasks, const char *list, const char *per)
{
    setenv("SLURM_PROCID", procid, 1);
    setenv("SLURM_LOCALID", localid, 1);
    setenv("SLURM_NODEID", nodeid, 1);
    setenv("SLURM_NTASKS", ntasks, 1);
    setenv("SLURM_STEP_NODELIST", list, 1);
    setenv("SLURM_STEP_TASKS_PER_NODE", per, 1);
    setenv("SLURM_JOB_ID", "4242", 1);
    setenv("SLURM_STEP_ID", "3", 1);
}

static void test_layout(void **state)
{
    (void)state;
    char err[RT_ERR_LEN];
    rt_slurm_step s;
    /* srun -N 2 -n 4, block: ranks 0,1 on n01 and 2,3 on n02; rank 3 */
    set_step("3", "1", "1", "4", "n[01-02]", "2(x2)");
    assert_true(rt_slurm_detected());
    assert_int_equal(rt_slurm_layout(&s, err), RT_OK);
    assert_int_equal(s.rank, 3);
    assert_int_equal(s.size, 4);
    assert_int_equal(s.local_rank, 1);
    assert_int_equal(s.local_size, 2);
    assert_int_equal(s.cross_rank, 1);
    assert_int_equal(s.cross_size, 2);
    assert_int_equal(s.nhosts, 2);
    assert_string_equal(s.hosts[0], "n01");
    assert_int_equal(s.job_id, 4242);
    assert_int_equal(s.step_id, 3);
    assert_true(s.port >= 20000 && s.port < 40000);
    const int port = s.port;
    rt_slurm_free(&s);
    /* cyclic: rank 1 is n02's first task; the same ports for every task */
    set_step("1", "0", "1", "4", "n[01-02]", "2(x2)");
    assert_int_equal(rt_slurm_layout(&s, err), RT_OK);
    assert_int_equal(s.local_rank, 0);
    assert_int_equal(s.cross_rank, 1);
    assert_int_equal(s.port, port);
    rt_slurm_free(&s);
    /* uneven: 3 tasks on n1, 1 on n2; local rank 2 exists on n1 only */
    set_step("2", "2", "0", "4", "n[1-2]", "3,1");
    assert_int_equal(rt_slurm_layout(&s, err), RT_OK);
    assert_int_equal(s.local_size, 3);
    assert_int_equal(s.cross_rank, 0);
    assert_int_equal(s.cross_size, 1);
    rt_slurm_free(&s);
    /* what is wrong is named */
    set_step("4", "0", "0", "4", "n[1-2]", "2(x2)");
    assert_int_equal(rt_slurm_layout(&s, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "SLURM_PROCID 4"));
    set_step("0", "0", "0", "4", "n[1-2]", "2,1");
    assert_int_equal(rt_slurm_layout(&s, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "adds up to 3"));
    set_step("0", "0", "0", "4", "n[1-2]", "2(x3)");
    assert_int_equal(rt_slurm_layout(&s, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "does not give tasks for 2 nodes"));
    unsetenv("SLURM_NTASKS");
    assert_false(rt_slurm_detected());
    assert_int_equal(rt_slurm_layout(&s, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "SLURM_NTASKS is unset"));
    /* the batch script: task 0 of the job's 4, but of no step: not a task,
     * and the Run API says to use srun instead of waiting for 3 others */
    set_step("0", "0", "0", "4", "n[1-2]", "2(x2)");
    unsetenv("SLURM_STEP_ID");
    unsetenv("RT_RANK");
    assert_false(rt_slurm_detected());
    rt_comm *c = NULL;
    rt_rank_info info;
    assert_int_equal(rt_init_from_env(&c, &info, err), RT_ERR_NOTFOUND);
    assert_non_null(strstr(err, "the batch script of Slurm job 4242"));
    assert_non_null(strstr(err, "start the program with srun"));
}

/* The key file: made 0600 on first use, the same step key from it every
 * time, another for another step; refused when others may read it. */
static void test_key_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/rt-slurmkey-XXXXXX", path[128], err[RT_ERR_LEN];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/cfg/ringtrain/slurm.key", dir);
    uint8_t a[32], b[32], c[32];
    assert_int_equal(rt_slurm_key(path, 7, 0, a, err), RT_OK);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    assert_int_equal(rt_slurm_key(path, 7, 0, b, err), RT_OK);
    assert_memory_equal(a, b, 32);
    assert_int_equal(rt_slurm_key(path, 7, 1, c, err), RT_OK);
    assert_memory_not_equal(a, c, 32);
    assert_int_equal(chmod(path, 0640), 0);
    assert_int_equal(rt_slurm_key(path, 7, 0, b, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "can be read by others (mode 0640)"));
    assert_int_equal(chmod(path, 0600), 0);
    int fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0 && write(fd, "short\n", 6) == 6);
    close(fd);
    assert_int_equal(rt_slurm_key(path, 7, 0, b, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "holds 6 bytes"));
    setenv("RINGTRAIN_KEY_FILE", "/some/where.key", 1);
    assert_int_equal(rt_slurm_key_path(path, sizeof path, err), RT_OK);
    assert_string_equal(path, "/some/where.key");
    unsetenv("RINGTRAIN_KEY_FILE");
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The process's open sockets (/proc/self/fd). */
static int open_sockets(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], link[64];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(path, link, sizeof link - 1);
        n += k > 7 && !strncmp(link, "socket:", 7);
    }
    if (d)
        closedir(d);
    return n;
}

/* A step of 3 tasks on two "nodes" (127.0.0.1, 127.0.0.2) of which task 2
 * never starts: the first task's error names it, and the task that came
 * learns the same from it; both within the rendezvous timeout.  Then all
 * three come and sum their ranks.  Either way no socket is left open. */
static void task_env(const char *dir, int rank, int ntasks, const char *job, const char *timeout)
{
    char r[8], node[8], local[8], nt[8], home[128];
    snprintf(r, sizeof r, "%d", rank);
    snprintf(node, sizeof node, "%d", rank < 2 ? 0 : 1);
    snprintf(local, sizeof local, "%d", rank < 2 ? rank : 0);
    snprintf(nt, sizeof nt, "%d", ntasks);
    snprintf(home, sizeof home, "%s/step-%s.key", dir, job);
    set_step(r, local, node, nt, "127.0.0.1,127.0.0.2", "2,1");
    setenv("SLURM_JOB_ID", job, 1);
    setenv("RINGTRAIN_KEY_FILE", home, 1);
    setenv("RINGTRAIN_RENDEZVOUS_TIMEOUT", timeout, 1);
}

static int run_task_of(const char *dir, int rank, int ntasks, const char *job, const char *timeout,
                       char *err)
{
    task_env(dir, rank, ntasks, job, timeout);
    unsetenv("RT_RANK");
    rt_comm *c = NULL;
    rt_rank_info info;
    int before = open_sockets();
    rt_status st = rt_init_from_env(&c, &info, err);
    if (st != RT_OK)
        return open_sockets() == before ? 1 : 3;
    int32_t v = info.rank;
    st = rt_allreduce(c, &v, 1, RT_C_I32, RT_SUM);
    rt_comm_destroy(c);
    if (open_sockets() != before) { /* the rendezvous' listening socket among them */
        snprintf(err, RT_ERR_LEN, "%d sockets open after rt_comm_destroy, %d before",
                 open_sockets(), before);
        return 3;
    }
    return st == RT_OK && v == 3 && info.size == 3 ? 0 : 2;
}

static int run_task(const char *dir, int rank, int ntasks, char *err)
{
    return run_task_of(dir, rank, ntasks, ntasks == 3 ? "5151" : "5152", "2", err);
}

static void test_rendezvous(void **state)
{
    (void)state;
    char dir[] = "/tmp/rt-slurmrdv-XXXXXX";
    assert_non_null(mkdtemp(dir));
    int fds[2][2];
    pid_t pid[2];
    for (int k = 0; k < 2; k++) { /* tasks 0 and 1 of 3; task 2 never comes */
        assert_int_equal(pipe(fds[k]), 0);
        if ((pid[k] = fork()) == 0) {
            alarm(20);
            char err[RT_ERR_LEN] = "";
            int rc = run_task(dir, k, 3, err);
            (void)!write(fds[k][1], err, strlen(err));
            _exit(rc);
        }
        close(fds[k][1]);
    }
    for (int k = 0; k < 2; k++) {
        char said[RT_ERR_LEN + 1] = "";
        ssize_t n = read(fds[k][0], said, RT_ERR_LEN);
        said[n > 0 ? n : 0] = '\0';
        close(fds[k][0]);
        int status = 0;
        assert_int_equal(waitpid(pid[k], &status, 0), pid[k]);
        if (!strstr(said, "task 2 (of 3) did not arrive"))
            fail_msg("task %d said: %s (status %d)", k, said, status);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
        if (k == 1)
            assert_non_null(strstr(said, "task 1 on 127.0.0.1: the step's first task"));
    }
    pid_t all[3];
    for (int k = 0; k < 3; k++)
        if ((all[k] = fork()) == 0) {
            alarm(20);
            char err[RT_ERR_LEN];
            int rc = run_task(dir, k, 3, err);
            if (rc)
                fprintf(stderr, "task %d: %s\n", k, err);
            _exit(rc);
        }
    for (int k = 0; k < 3; k++) {
        int status = 0;
        assert_int_equal(waitpid(all[k], &status, 0), all[k]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* A frame of the step's rendezvous (rt_slurm_rdv.c): u32le length | JSON |
 * HMAC-SHA256(key, label NUL | bind | JSON). */
static void put_frame(int fd, const uint8_t key[32], const char *label, const uint8_t *bind,
                      const char *json)
{
    uint8_t msg[1024], mac[32];
    size_t ll = strlen(label) + 1, n = strlen(json);
    memcpy(msg, label, ll);
    memcpy(msg + ll, bind, 32);
    memcpy(msg + ll + 32, json, n);
    unsigned olen = 32;
    HMAC(EVP_sha256(), key, 32, msg, ll + 32 + n, mac, &olen);
    uint8_t head[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
    assert_true(write(fd, head, 4) == 4 && write(fd, json, n) == (ssize_t)n &&
                write(fd, mac, 32) == 32);
}

/* n bytes from fd within ms (false: fewer came) */
static bool read_n(int fd, void *buf, size_t n, int ms)
{
    size_t got = 0;
    while (got < n) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t r = poll(&p, 1, ms) == 1 ? read(fd, (char *)buf + got, n - got) : -1;
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

/* A connection to 127.0.0.1:port, or -1. */
static int connect_port(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(0x7f000001);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* The first task's rendezvous under attack: 40 connections that say
 * nothing, and a hello of task 2 that proves the key but for another
 * connection's challenge (as one seen on the network and replayed); the
 * three tasks still form their ring, within the timeout. */
static void test_rendezvous_flood(void **state)
{
    (void)state;
    char dir[] = "/tmp/rt-slurmflood-XXXXXX", err[RT_ERR_LEN];
    assert_non_null(mkdtemp(dir));
    task_env(dir, 0, 3, "5153", "6");
    rt_slurm_step s;
    assert_int_equal(rt_slurm_layout(&s, err), RT_OK);
    const int port = s.port;
    rt_slurm_free(&s);
    char path[200];
    snprintf(path, sizeof path, "%s/step-5153.key", dir);
    pid_t all[3];
    if ((all[0] = fork()) == 0) {
        alarm(30);
        _exit(run_task_of(dir, 0, 3, "5153", "6", err));
    }
    /* the leader is up once a port answers with a challenge (the key file
     * is made by the first task that needs it) */
    int fd = -1;
    uint8_t head[4];
    for (int i = 0; i < 200 && fd < 0; i++) {
        for (int k = 0; k < RT_SLURM_PORTS && fd < 0; k++) {
            fd = connect_port(port + k);
            if (fd >= 0 && !read_n(fd, head, 4, 1000)) {
                close(fd);
                fd = -1;
            }
        }
        if (fd < 0)
            usleep(20000);
    }
    assert_true(fd >= 0);
    uint8_t key[32], other[32], rest[300];
    assert_int_equal(rt_slurm_key(path, 5153, 3, key, err), RT_OK);
    size_t clen = head[0] | (size_t)head[1] << 8;
    assert_true(clen + 32 < sizeof rest && read_n(fd, rest, clen + 32, 2000));
    memset(other, 0x5a, sizeof other); /* not this connection's nonce */
    put_frame(fd, key, "rt-slurm-hello", other,
              "{\"rank\":2,\"node\":1,\"host\":\"127.0.0.2\",\"addr\":\"127.0.0.1:9\"}");
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char c;
    assert_int_equal(poll(&p, 1, 5000), 1);
    assert_true(read(fd, &c, 1) <= 0); /* refused: closed without an answer */
    close(fd);
    int silent[40], nsilent = 0;
    for (int i = 0; i < 40; i++) {
        int sfd = connect_port(port + i % RT_SLURM_PORTS);
        if (sfd >= 0)
            silent[nsilent++] = sfd;
    }
    assert_true(nsilent >= 5); /* at least those to the leader's port */
    for (int k = 1; k < 3; k++)
        if ((all[k] = fork()) == 0) {
            alarm(30);
            int rc = run_task_of(dir, k, 3, "5153", "6", err);
            if (rc)
                fprintf(stderr, "task %d: %s\n", k, err);
            _exit(rc);
        }
    for (int k = 0; k < 3; k++) {
        int status = 0;
        assert_int_equal(waitpid(all[k], &status, 0), all[k]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail_msg("task %d of the flooded step: status %d", k, status);
    }
    for (int i = 0; i < nsilent; i++)
        close(silent[i]);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostlist),         cmocka_unit_test(test_layout),
        cmocka_unit_test(test_key_file),         cmocka_unit_test(test_rendezvous),
        cmocka_unit_test(test_rendezvous_flood),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
