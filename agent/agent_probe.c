/* agent_probe.c — what this node can do, asked of the worker program once
 * at start: `ringtrain-worker --probe` prints one JSON object (GPUs and
 * their names, NCCL, the CPU model and its vector extensions, the BLAS
 * kernels, cores, memory).  The daemon itself never loads CUDA or BLAS:
 * the worker, which does, answers.  The agent adds what it knows itself
 * (RDMA) and sends the object in its hello. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "rt_comm.h"
#include "rt_log.h"
#include "rt_time.h"

#define PROBE_TIMEOUT_MS 60000
#define PROBE_MAX 65536

/* The probe's output, or NULL with the reason. */
static char *run_probe(const char *exe, char *err)
{
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
        rt_err(err, RT_ERR_IO, "pipe: %s", strerror(errno));
        return NULL;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out[1], 1);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 2);
        }
        execl(exe, exe, "--probe", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    if (pid < 0) {
        close(out[0]);
        rt_err(err, RT_ERR_IO, "fork: %s", strerror(errno));
        return NULL;
    }
    char *buf = malloc(PROBE_MAX);
    size_t n = 0;
    rt_deadline_t dl = rt_deadline_in_us((int64_t)PROBE_TIMEOUT_MS * 1000);
    bool timed_out = false;
    while (buf && n < PROBE_MAX - 1) {
        struct pollfd p = {out[0], POLLIN, 0};
        int ms = rt_deadline_ms_left(dl);
        if (ms == 0 || poll(&p, 1, ms) == 0) {
            timed_out = true;
            break;
        }
        ssize_t r = read(out[0], buf + n, PROBE_MAX - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(out[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!buf || timed_out || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        rt_err(err, RT_ERR_IO, "%s --probe %s", exe,
               !buf ? "ran out of memory"
               : timed_out ? "did not answer within 60 s"
               : WIFEXITED(st) && WEXITSTATUS(st) == 127 ? "could not be run"
                                                          : "failed");
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

void agent_probe(agentd *ag)
{
    char err[RT_ERR_LEN];
    rt_json *p = NULL;
    char *text = run_probe(ag->worker_exe, err);
    if (text && rt_json_parse(text, strlen(text), &p, err) == RT_OK &&
        rt_json_type_of(p) != RT_JSON_OBJECT) {
        rt_json_free(p);
        p = NULL;
        snprintf(err, sizeof err, "%s --probe printed no JSON object", ag->worker_exe);
    }
    free(text);
    if (!p)
        RT_WARN("agent", "%s: this node is reported without GPUs, and training jobs will fail "
                         "on it until the worker program runs (ringtrain-worker beside the "
                         "agent, or [agent] worker)", err);
    int64_t g = 0;
    ag->cuda = rt_json_bool(rt_json_get(p, "cuda"), false);
    ag->nccl = rt_json_bool(rt_json_get(p, "nccl"), false);
    ag->gpus = rt_json_get_int(p, "gpus", &g) ? (int)g : 0;
    if (ag->cfg.gpus >= 0) /* [agent] gpus: the operator's count wins */
        ag->gpus = (int)ag->cfg.gpus;
    ag->rdma = rt_rdma_available();
    snprintf(ag->blas_set, sizeof ag->blas_set, "%s", rt_json_str(rt_json_get(p, "blas_set"), ""));
    if (ag->blas_set[0])
        RT_INFO("agent", "OpenBLAS picks its %s kernels on this CPU (%s); ranks get "
                         "OPENBLAS_CORETYPE=%s unless their job sets it",
                rt_json_str(rt_json_get(p, "blas_own"), "?"),
                rt_json_str(rt_json_get(p, "isa"), "?"), ag->blas_set);
    /* the probe's object, with what the agent knows itself */
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    for (size_t i = 0; i < rt_json_len(p); i++)
        if (strcmp(rt_json_key_at(p, i), "rdma") != 0 && strcmp(rt_json_key_at(p, i), "gpus") != 0) {
            rt_jw_key(&w, rt_json_key_at(p, i));
            rt_jw_value(&w, rt_json_value_at(p, i));
        }
    rt_jw_kbool(&w, "rdma", ag->rdma);
    rt_jw_kint(&w, "gpus", ag->gpus);
    rt_jw_kbool(&w, "train", p != NULL);
    rt_jw_key(&w, "limits"); /* the job limits this node enforces (agent_cgroup.c) */
    rt_jw_arr(&w);
    if (ag->cg_mem)
        rt_jw_str(&w, "memory");
    if (ag->cg_cpu)
        rt_jw_str(&w, "cpu");
    rt_jw_arr_end(&w);
    rt_jw_obj_end(&w);
    free(ag->caps);
    ag->caps = rt_jw_take(&w, NULL);
    if (!ag->caps)
        ag->caps = strdup("{}");
    rt_json_free(p);
}
