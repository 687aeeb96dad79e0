/* rt_init.c — the Run API (see rt_comm.h): a program started by an agent
 * joins its job's ring from the environment and the rendezvous file; a task
 * started by srun, from Slurm's environment and a rendezvous of its own
 * (rt_slurm.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <openssl/crypto.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rt_comm.h"
#include "rt_file.h"
#include "rt_json.h"
#include "rt_proto.h"
#include "rt_rendezvous.h"
#include "rt_run.h"
#include "rt_hex.h"
#include "rt_slurm.h"
#include "rt_time.h"
#include "rt_transport.h"

static bool env_int(const char *name, int64_t *out)
{
    const char *v = getenv(name);
    char *end;
    if (!v || !*v)
        return false;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*end || errno)
        return false;
    *out = x;
    return true;
}

/* What a rank needs to join its ring, from the rendezvous file or from a
 * Slurm step's rendezvous. */
typedef struct ring_plan {
    const char **peers;
    uint8_t key[RT_COMM_KEY_LEN];
    rt_run_settings run; /* the ring's settings, "auto" resolved (rt_run.h) */
    int listen_fd;
    uint64_t job_id; /* the data plane's: the attempt's (and the step's) */
} ring_plan;

static rt_status join(const ring_plan *p, rt_rank_info *info, rt_comm **out, char *err)
{
    rt_comm_opts o;
    rt_comm_opts_defaults(&o);
    o.rank = info->rank;
    o.size = info->size;
    memcpy(o.key, p->key, sizeof o.key);
    snprintf(info->transport, sizeof info->transport, "%s", p->run.transport);
    info->collective_timeout_us = p->run.collective_timeout_ms * 1000;
    o.peers = p->peers;
    o.job_id = p->job_id;
    o.encrypt = p->run.encrypt;
    o.integrity = p->run.integrity;
    o.sockets = (int)p->run.sockets;
    o.timeout_us = p->run.collective_timeout_ms * 1000;
    o.connect_timeout_us = p->run.collective_timeout_ms * 1000;
    o.transport = strcmp(p->run.transport, "rdma") == 0  ? RT_TRANSPORT_RDMA
                  : strcmp(p->run.transport, "shm") == 0 ? RT_TRANSPORT_SHM
                                                         : RT_TRANSPORT_TCP;
    o.listen_fd = p->listen_fd;
    /* ranks busy-poll only when each has a core of its own; ranks that share
     * cores yield to each other before sleeping (Open MPI's yield_when_idle) */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    bool shared = info->local_size > cores;
    o.spin_us = shared ? 0 : 50;
    o.yield_us = shared ? RT_COMM_SHARED_YIELD_US : 0;
    rt_status st = rt_comm_create(&o, out, err);
    OPENSSL_cleanse(o.key, sizeof o.key);
    /* every rank of a networked job takes part; the ranks' table decides */
    bool netted = o.transport == RT_TRANSPORT_RDMA || strcmp(p->run.transport, "tcp") == 0;
    if (st == RT_OK && netted && info->size > 1 && p->run.hierarchical &&
        (st = rt_comm_hierarchy(*out, info->local_rank, info->local_size, err)) != RT_OK) {
        rt_comm_destroy(*out);
        *out = NULL;
    }
    return st;
}

/* A task of a Slurm job step (srun): the layout from Slurm's variables, the
 * step's key from the user's key file, the peers from the rendezvous over
 * the first node; the ring's settings from RINGTRAIN_* (docs/slurm.md). */
static rt_status init_slurm(rt_comm **out, rt_rank_info *info, char *err)
{
    rt_slurm_step s;
    rt_status st = rt_slurm_layout(&s, err);
    if (st != RT_OK)
        return st;
    info->rank = s.rank;
    info->size = s.size;
    info->local_rank = s.local_rank;
    info->local_size = s.local_size;
    info->cross_rank = s.cross_rank;
    info->cross_size = s.cross_size;
    info->job_id = s.job_id;
    int64_t restarts = 0; /* a requeued job is the same job, run again */
    env_int("SLURM_RESTART_COUNT", &restarts);
    info->attempt = restarts + 1;
    /* the ring's settings from RINGTRAIN_* (the worker sets them from the
     * job file; rt_run.h); "auto": shared memory on one node, else TCP — a
     * task cannot see the other nodes' RDMA devices, so a Slurm step asks
     * for rdma by name */
    ring_plan p = {.listen_fd = -1};
    rt_run_defaults(&p.run);
    snprintf(p.run.transport, sizeof p.run.transport, "auto");
    p.job_id = rt_attempt_id(s.job_id, info->attempt) ^ ((uint64_t)s.step_id << 40);
    int64_t v, rdv_s = 120;
    if (env_int("RINGTRAIN_RENDEZVOUS_TIMEOUT", &v) && v > 0 && v <= 86400)
        rdv_s = v;
    st = rt_run_getenv(&p.run, err);
    /* nccl: gradients over NCCL, the ring over TCP */
    const char *tp = rt_run_resolve_transport(p.run.transport, false, s.nhosts == 1, s.size, false);
    if (tp != p.run.transport)
        snprintf(p.run.transport, sizeof p.run.transport, "%s", tp);
    if (st == RT_OK && strcmp(p.run.transport, "shm") == 0 && s.nhosts > 1)
        st = rt_err(err, RT_ERR_INVALID,
                    "RINGTRAIN_TRANSPORT is shm, but the step runs on %d nodes", s.nhosts);
    char path[4096];
    char **peers = NULL;
    if (st == RT_OK)
        st = rt_slurm_key_path(path, sizeof path, err);
    if (st == RT_OK)
        st = rt_slurm_key(path, s.job_id, s.step_id, p.key, err);
    if (st == RT_OK)
        st = rt_slurm_rendezvous(&s, p.key, rdv_s * 1000000, &p.listen_fd, &peers, err);
    if (st == RT_OK) {
        p.peers = (const char **)peers;
        st = join(&p, info, out, err);
    }
    if (st == RT_OK)
        rt_comm_adopt_listen(*out); /* the rendezvous opened it: closed with the comm */
    else if (p.listen_fd >= 0)
        close(p.listen_fd);
    rt_slurm_peers_free(peers, s.size);
    OPENSSL_cleanse(p.key, sizeof p.key);
    rt_slurm_free(&s);
    return st;
}

rt_status rt_init_from_env(rt_comm **out, rt_rank_info *info, char *err)
{
    *out = NULL;
    memset(info, 0, sizeof *info);
    if (!getenv(RT_ENV_RANK) && rt_slurm_detected())
        return init_slurm(out, info, err);
    if (!getenv(RT_ENV_RANK) && getenv("SLURM_JOB_ID") && !getenv("SLURM_STEP_ID"))
        return rt_err(err, RT_ERR_NOTFOUND,
                      "this is the batch script of Slurm job %s (no SLURM_STEP_ID), not a task "
                      "of a job step: start the program with srun (srun PROGRAM, srun ringtrain "
                      "worker JOB.INI)",
                      getenv("SLURM_JOB_ID"));
    int64_t v[8];
    const char *names[] = {RT_ENV_RANK,       RT_ENV_SIZE,       RT_ENV_LOCAL_RANK,
                           RT_ENV_LOCAL_SIZE, RT_ENV_CROSS_RANK, RT_ENV_CROSS_SIZE,
                           RT_ENV_JOB_ID,     RT_ENV_ATTEMPT};
    for (int i = 0; i < 8; i++)
        if (!env_int(names[i], &v[i]))
            return rt_err(err, RT_ERR_NOTFOUND,
                          "%s is not set: this program was not started by a ringtrain agent "
                          "(use `ringtrain exec`) nor by srun",
                          names[i]);
    info->rank = (int)v[0];
    info->size = (int)v[1];
    info->local_rank = (int)v[2];
    info->local_size = (int)v[3];
    info->cross_rank = (int)v[4];
    info->cross_size = (int)v[5];
    info->job_id = v[6];
    info->attempt = v[7];
    const char *path = getenv(RT_ENV_RENDEZVOUS_FILE);
    size_t len = 0;
    char *text = NULL;
    if (!path)
        return rt_err(err, RT_ERR_NOTFOUND, "cannot read the rendezvous file: "
                      RT_ENV_RENDEZVOUS_FILE " is unset");
    /* a whole control frame's worth (every peer's address): never cut short */
    rt_status rst = rt_read_file(path, RT_FRAME_MAX, &text, &len, err);
    if (rst != RT_OK) {
        rt_err_prefix(err, "the rendezvous file");
        return rst;
    }
    rt_rendezvous r;
    rt_status st = rt_rendezvous_parse(text, len, &r, err);
    free(text);
    ring_plan p = {.listen_fd = -1};
    if (st == RT_OK &&
        (r.rank != info->rank || r.size != info->size || r.job != info->job_id ||
         r.attempt != info->attempt || rt_hex_decode(r.key, p.key, sizeof p.key) != RT_OK))
        st = rt_err(err, RT_ERR_INVALID,
                    "it is rank %d of %d, job %lld attempt %lld: not this rank's", r.rank, r.size,
                    (long long)r.job, (long long)r.attempt);
    if (st != RT_OK) {
        rt_rendezvous_free(&r);
        rt_err_prefix(err, "rendezvous file %s", path);
        return st;
    }
    p.peers = (const char **)r.peers;
    p.run = r.run;
    p.job_id = rt_attempt_id(info->job_id, info->attempt);
    int64_t lfd = -1;
    p.listen_fd = env_int(RT_ENV_LISTEN_FD, &lfd) ? (int)lfd : -1;
    st = join(&p, info, out, err);
    OPENSSL_cleanse(p.key, sizeof p.key);
    OPENSSL_cleanse(r.key, sizeof r.key);
    rt_rendezvous_free(&r);
    return st;
}

rt_status rt_report_result(const char *json_value, char *err)
{
    int64_t fd;
    if (!env_int(RT_ENV_CONTROL_FD, &fd) || fd < 0)
        return rt_err(err, RT_ERR_NOTFOUND,
                      "%s is not set: this program was not started by a ringtrain agent",
                      RT_ENV_CONTROL_FD);
    size_t n = json_value ? strlen(json_value) : 0;
    rt_json *v = NULL;
    if (n == 0 || n > 60 * 1024)
        return rt_err(err, RT_ERR_INVALID, "a result is one JSON value of 1 byte to 60 KiB (%zu bytes)", n);
    rt_status st = rt_json_parse(json_value, n, &v, err);
    rt_json_free(v);
    if (st != RT_OK) {
        rt_err_prefix(err, "the result is not JSON");
        return st;
    }
    /* one line; a newline inside the value would split it: JSON allows
     * whitespace there, so it becomes a space */
    const char head[] = "{\"kind\":\"result\",\"value\":";
    size_t len = sizeof head - 1 + n + 2;
    char *line = malloc(len);
    if (!line)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    memcpy(line, head, sizeof head - 1);
    for (size_t i = 0; i < n; i++)
        line[sizeof head - 1 + i] = json_value[i] == '\n' || json_value[i] == '\r' ? ' ' : json_value[i];
    memcpy(line + len - 2, "}\n", 2);
    size_t off = 0;
    const int64_t end = rt_now_ns() + 5000000000LL;
    while (off < len) {
        ssize_t w = send((int)fd, line + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            break;
        int64_t left_ms = (end - rt_now_ns()) / 1000000;
        struct pollfd p = {(int)fd, POLLOUT, 0};
        if (left_ms <= 0 || (poll(&p, 1, (int)left_ms) < 0 && errno != EINTR))
            break;
    }
    free(line);
    if (off < len)
        return rt_err(err, RT_ERR_IO, "cannot send the result to the agent: %s",
                      errno ? strerror(errno) : "timed out");
    return RT_OK;
}

void rt_report_progress(const char *json_object)
{
    int64_t fd;
    if (!env_int(RT_ENV_CONTROL_FD, &fd) || fd < 0)
        return;
    size_t n = strlen(json_object);
    char *line = malloc(n + 2);
    if (!line)
        return;
    memcpy(line, json_object, n);
    line[n] = '\n';
    /* one datagram-sized write keeps lines whole; a full pipe drops it */
    ssize_t r = send((int)fd, line, n + 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)r;
    free(line);
}
