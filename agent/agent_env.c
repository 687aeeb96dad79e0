/* agent_env.c — what a rank is given besides its program: its environment
 * (the agent's, the job's, ringtrain's RT_* variables, the launcher
 * variables of torchrun and horovodrun, its GPU).  The view of the file
 * system without the agent's token is ringtrain-launch's (launch.h). */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "rt_addr.h"

extern char **environ;

static bool inherit(const char *entry)
{
    /* systemd's for the agent, and any S3 credentials the agent has: a job
     * uses its submitter's (its env), never the agent's */
    static const char *const drop[] = {"NOTIFY_SOCKET=",
                                       "WATCHDOG_USEC=",
                                       "WATCHDOG_PID=",
                                       "LISTEN_FDS=",
                                       "LISTEN_PID=",
                                       "LISTEN_FDNAMES=",
                                       "INVOCATION_ID=",
                                       "AWS_ACCESS_KEY_ID=",
                                       "AWS_SECRET_ACCESS_KEY=",
                                       "AWS_SESSION_TOKEN=",
                                       "AWS_SHARED_CREDENTIALS_FILE=",
                                       "AWS_PROFILE="};
    for (size_t i = 0; i < RT_ARRAY_LEN(drop); i++)
        if (strncmp(entry, drop[i], strlen(drop[i])) == 0)
            return false;
    return strncmp(entry, "RT_", 3) != 0;
}

void strv_add(strv *s, char *item)
{
    if (!item)
        return;
    if (s->n + 2 > s->cap) {
        int nc = s->cap ? s->cap * 2 : 32;
        char **v = realloc(s->v, (size_t)nc * sizeof *v);
        if (!v) {
            free(item);
            return;
        }
        s->v = v;
        s->cap = nc;
    }
    s->v[s->n++] = item;
    s->v[s->n] = NULL;
}

/* Add "key=value", replacing an earlier entry of the same key: the job's
 * variables override the agent's, and getenv() sees the first entry. */
static void strv_set(strv *s, char *item)
{
    if (!item)
        return;
    const char *eq = strchr(item, '=');
    size_t klen = eq ? (size_t)(eq - item) + 1 : strlen(item);
    for (int i = 0; i < s->n; i++)
        if (strncmp(s->v[i], item, klen) == 0) {
            free(s->v[i]);
            s->v[i] = item;
            return;
        }
    strv_add(s, item);
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

/* Exec jobs get one GPU per slot, as Slurm's --gpus-per-task gives: the
 * local rank's share of the devices this agent sees (its own
 * CUDA_VISIBLE_DEVICES list when it has one). */
static char *gpu_for_slot(int local_rank, int gpus)
{
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    if (!vis || !*vis)
        return fmt("CUDA_VISIBLE_DEVICES=%d", local_rank % gpus);
    int n = 1;
    for (const char *p = vis; *p; p++)
        n += *p == ',';
    int k = local_rank % n;
    const char *p = vis;
    for (int i = 0; i < k; i++)
        p = strchr(p, ',') + 1;
    size_t len = strcspn(p, ",");
    return fmt("CUDA_VISIBLE_DEVICES=%.*s", (int)len, p);
}

void strv_free(strv *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    char *out = NULL;
    va_list ap;
    va_start(ap, f);
    if (vasprintf(&out, f, ap) < 0)
        out = NULL;
    va_end(ap);
    return out;
}


/* What torchrun and horovodrun give each process, so that programs written
 * for them run unchanged (docs/run-api.md has the table).  One role, one
 * worker group per host; rank 0's host and the port its agent reserved are
 * the env:// store's address. */
static void launcher_env(const agentd *ag, const worker *w, const rt_json *m, strv *env)
{
    const struct {
        const char *name;
        int value;
    } ints[] = {{"RANK", w->rank},
                {"WORLD_SIZE", w->size},
                {"LOCAL_RANK", w->local_rank},
                {"LOCAL_WORLD_SIZE", w->local_size},
                {"GROUP_RANK", w->node_rank},
                {"GROUP_WORLD_SIZE", w->nodes},
                {"ROLE_RANK", w->rank},
                {"ROLE_WORLD_SIZE", w->size},
                {"TORCHELASTIC_RESTART_COUNT", (int)w->attempt - 1},
                {"HOROVOD_RANK", w->rank},
                {"HOROVOD_SIZE", w->size},
                {"HOROVOD_LOCAL_RANK", w->local_rank},
                {"HOROVOD_LOCAL_SIZE", w->local_size},
                {"HOROVOD_CROSS_RANK", w->cross_rank},
                {"HOROVOD_CROSS_SIZE", w->cross_size}};
    for (size_t i = 0; i < RT_ARRAY_LEN(ints); i++)
        strv_set(env, fmt("%s=%d", ints[i].name, ints[i].value));
    int64_t max_restarts = 0, port = 0;
    rt_json_get_int(m, RT_F_MAX_RESTARTS, &max_restarts);
    strv_set(env, fmt("TORCHELASTIC_MAX_RESTARTS=%lld", (long long)max_restarts));
    strv_set(env, fmt("TORCHELASTIC_RUN_ID=ringtrain-job-%lld", (long long)w->job));
    strv_set(env, fmt("ROLE_NAME=default"));
    strv_set(env, fmt("HOROVOD_HOSTNAME=%s", ag->hostname));
    char host[256], err[RT_ERR_LEN];
    int p0 = 0;
    const char *peer0 = rt_json_str(rt_json_at(rt_json_get(m, RT_F_PEERS), 0), "");
    if (rt_json_get_int(m, RT_F_MASTER_PORT, &port) && port > 0 &&
        rt_addr_parse(peer0, false, host, sizeof host, &p0, err) == RT_OK) {
        strv_set(env, fmt("MASTER_ADDR=%s", host));
        strv_set(env, fmt("MASTER_PORT=%lld", (long long)port));
    }
}

/* In a child before exec (async-signal-safe calls only): a user and a mount
 * namespace of its own, where token_path shows /dev/null.  Nothing the rank
 * does can undo it from inside (its namespace's mounts are its own, and the
 * agent is not dumpable: no ptrace, no /proc/AGENT/mem).  0, or -1. */
/* Everything a rank finds in its environment: the agent's (without its
 * own systemd and RT_ variables), the job's, the GPU of its slot, ringtrain's
 * RT_* (docs/protocol.md), and torchrun's and Horovod's (launcher_env); and
 * the device it was given, in w->gpu for `ringtrain status`. */
void rank_env(agentd *ag, worker *w, const rt_json *m, const char *type, const char *rdv,
              strv *env)
{
    for (char **e = environ; *e; e++)
        if (inherit(*e))
            strv_add(env, strdup(*e));
    if (ag->blas_set[0]) /* OpenBLAS's pick was worse than the CPU (the job's wins) */
        strv_set(env, fmt("OPENBLAS_CORETYPE=%s", ag->blas_set));
    if (w->as_job) { /* who it runs as, as login(1) says (the job's own variables win); a
                      * job uid has no account: its work folder is its home */
        strv_set(env, fmt("HOME=%s", w->home[0] ? w->home : w->jobwork));
        strv_set(env, fmt("USER=%s", w->login));
        strv_set(env, fmt("LOGNAME=%s", w->login));
    }
    const rt_json *jenv = rt_json_get(m, RT_F_ENV);
    if (strcmp(type, "train") != 0 && ag->gpus > 0 && !rt_json_get(jenv, "CUDA_VISIBLE_DEVICES"))
        strv_set(env, gpu_for_slot(w->local_rank, ag->gpus));
    for (size_t i = 0; i < rt_json_len(jenv); i++)
        strv_set(env, fmt("%s=%s", rt_json_key_at(jenv, i),
                           rt_json_str(rt_json_value_at(jenv, i), "")));
    strv_add(env, fmt("%s=%lld", RT_ENV_JOB_ID, (long long)w->job));
    strv_add(env, fmt("%s=%lld", RT_ENV_ATTEMPT, (long long)w->attempt));
    strv_add(env, fmt("%s=%d", RT_ENV_RANK, w->rank));
    strv_add(env, fmt("%s=%d", RT_ENV_SIZE, w->size));
    strv_add(env, fmt("%s=%d", RT_ENV_LOCAL_RANK, w->local_rank));
    strv_add(env, fmt("%s=%d", RT_ENV_LOCAL_SIZE, w->local_size));
    if (w->machine_ranks > 0)
        strv_add(env, fmt("%s=%d", RT_ENV_MACHINE_RANKS, w->machine_ranks));
    if (ag->slots > 0)
        strv_add(env, fmt("%s=%d", RT_ENV_NODE_SLOTS, ag->slots));
    strv_add(env, fmt("%s=%d", RT_ENV_CROSS_RANK, w->cross_rank));
    strv_add(env, fmt("%s=%d", RT_ENV_CROSS_SIZE, w->cross_size));
    strv_add(env, fmt("%s=%s", RT_ENV_RENDEZVOUS_FILE, rdv));
    strv_add(env, fmt("%s=%d", RT_ENV_LISTEN_FD, RT_LISTEN_FD_NUM));
    strv_add(env, fmt("%s=%d", RT_ENV_CONTROL_FD, RT_CONTROL_FD_NUM));
    strv_add(env, fmt("%s=%s", RT_ENV_WORK_DIR, w->jobwork));
    if (ag->lib_path[0])
        strv_add(env, fmt("%s=%s", RT_ENV_LIBRARY, ag->lib_path));
    launcher_env(ag, w, m, env);
    /* the device the rank sees, for `ringtrain status`: its own list, or the
     * one a training worker picks (local rank modulo the GPUs) */
    w->gpu[0] = '\0';
    for (int i = 0; i < env->n; i++)
        if (strncmp(env->v[i], "CUDA_VISIBLE_DEVICES=", 21) == 0)
            snprintf(w->gpu, sizeof w->gpu, "%s", env->v[i] + 21);
    if (strcmp(type, "train") == 0 && ag->gpus > 0 && !w->gpu[0])
        snprintf(w->gpu, sizeof w->gpu, "%d", w->local_rank % ag->gpus);
}

char *program_path(const char *prog, char *const *env, const char *cwd)
{
    if (!prog || !*prog || strchr(prog, '/'))
        return NULL; /* a path: run as given, relative to the rank's folder */
    const char *path = "/usr/local/bin:/usr/bin:/bin"; /* glibc's default */
    for (char *const *e = env; *e; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            path = *e + 5;
    for (const char *p = path;; p++) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char cand[4096];
        int n;
        if (len == 0) /* an empty entry is the current folder */
            n = snprintf(cand, sizeof cand, "%s/%s", cwd, prog);
        else if (p[0] == '/')
            n = snprintf(cand, sizeof cand, "%.*s/%s", (int)len, p, prog);
        else
            n = snprintf(cand, sizeof cand, "%s/%.*s/%s", cwd, (int)len, p, prog);
        struct stat sb;
        if (n > 0 && (size_t)n < sizeof cand && stat(cand, &sb) == 0 && S_ISREG(sb.st_mode) &&
            access(cand, X_OK) == 0)
            return strdup(cand);
        if (!end)
            return NULL;
        p = end;
    }
}
