/* agent_usage.c — what each running rank uses: the CPU time and resident
 * memory of its processes.  Where the rank has a cgroup (agent_cgroup.c)
 * they are every process in it, whatever session or group it made, and the
 * CPU time is the cgroup's (cpu.stat usage_usec: also that of the processes
 * that have exited); elsewhere they are the processes of its process group
 * (the rank leads its group; its children stay in it unless they leave on
 * purpose), from /proc.  Sent with the heartbeat as "usage"; the coordinator
 * shows it in the job's placement, `ringtrain status` and /metrics.
 * On a node with NVIDIA's driver, also each rank's GPU memory and SM
 * utilisation, through NVML: libnvidia-ml is opened at run time (nodes
 * without it report none; RINGTRAIN_NVML_LIBRARY names another file, which
 * the tests use for a stand-in).
 *
 * And what ranks leave behind: the agent is a child subreaper, so a
 * process that left its rank's process group (setsid, a daemon) becomes the
 * agent's child when its parent dies; one whose rank (by the RT_JOB_ID,
 * RT_ATTEMPT and RT_RANK in its environment) no longer runs here is killed. */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#include "agent.h"
#include "rt_log.h"

typedef struct group_use {
    pid_t pgid;
    const char *cg_dir;       /* the rank's cgroup, or NULL: its process group */
    pid_t *cg_pids;           /* the processes in it (sorted) */
    int cg_n;
    double cpu_s;
    long long rss_bytes;
    int procs;
    bool gpu;                 /* NVML lists one of its processes */
    long long gpu_mem_bytes;  /* their GPU memory */
    int gpu_util;             /* SM utilisation, % (summed over its processes and GPUs) */
} group_use;

/* ---- NVML, opened at run time (the types as nvml.h has them) ---------------- */

typedef struct nv_proc { /* nvmlProcessInfo_t of the _v2/_v3 calls */
    unsigned int pid;
    unsigned long long used_bytes;
    unsigned int gpu_instance, compute_instance;
} nv_proc;
typedef struct nv_sample { /* nvmlProcessUtilizationSample_t */
    unsigned int pid;
    unsigned long long ts_us;
    unsigned int sm, mem, enc, dec;
} nv_sample;
typedef struct nv_util { /* nvmlUtilization_t */
    unsigned int gpu, memory;
} nv_util;

#define NV_MAX_DEVICES 64
#define NV_MAX_PROCS 256
#define NV_NOT_FOUND 6 /* NVML_ERROR_NOT_FOUND: no samples since the time given */

static struct {
    bool tried, ok;
    int (*count)(unsigned int *);
    int (*handle)(unsigned int, void **);
    int (*procs)(void *, unsigned int *, nv_proc *);
    int (*putil)(void *, nv_sample *, unsigned int *, unsigned long long);
    int (*util)(void *, nv_util *);
    unsigned long long seen_ts[NV_MAX_DEVICES]; /* newest process sample taken */
} nv;

static bool nv_load(void)
{
    if (nv.tried)
        return nv.ok;
    nv.tried = true;
    const char *path = getenv("RINGTRAIN_NVML_LIBRARY");
    void *lib = dlopen(path && *path ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        RT_DEBUG("agent", "no NVML (%s): the ranks' GPU use is not sampled", dlerror());
        return false;
    }
    int (*init)(void) = (int (*)(void))dlsym(lib, "nvmlInit_v2");
    *(void **)&nv.count = dlsym(lib, "nvmlDeviceGetCount_v2");
    *(void **)&nv.handle = dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&nv.procs = dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (!nv.procs)
        *(void **)&nv.procs = dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v2");
    *(void **)&nv.putil = dlsym(lib, "nvmlDeviceGetProcessUtilization");
    *(void **)&nv.util = dlsym(lib, "nvmlDeviceGetUtilizationRates");
    if (!init || !nv.count || !nv.handle || !nv.procs || init() != 0) {
        RT_WARN("agent", "NVML (%s) is there but could not be used: the ranks' GPU use is not "
                         "sampled", path && *path ? path : "libnvidia-ml.so.1");
        dlclose(lib);
        return false;
    }
    RT_INFO("agent", "NVML: sampling each rank's GPU memory and utilisation");
    nv.ok = true;
    return true; /* the library stays loaded for the agent's life */
}

/* /proc/PID/NAME into buf, NUL-terminated; its length, or -1 when it
 * cannot be read (the process is gone). */
static long proc_read(const char *pid, const char *name, char *buf, size_t len)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%s/%s", pid, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (long)n;
}

static group_use *group_of(unsigned int pid, group_use *g, int ng)
{
    char id[16], buf[1024];
    snprintf(id, sizeof id, "%u", pid);
    if (proc_read(id, "stat", buf, sizeof buf) < 0)
        return NULL;
    const char *p = strrchr(buf, ')');
    int pgrp = -1;
    if (!p || sscanf(p + 2, "%*c %*d %d", &pgrp) != 1)
        return NULL;
    for (int i = 0; i < ng; i++)
        if (g[i].pgid == pgrp)
            return &g[i];
    return NULL;
}

/* Each GPU's compute processes: their memory, and their SM utilisation
 * since the last sample (or, where the driver keeps no per-process samples,
 * the GPU's own utilisation), added to the rank they belong to. */
static void add_gpu_use(group_use *g, int ng)
{
    unsigned int ndev = 0;
    if (!nv_load() || nv.count(&ndev) != 0)
        return;
    nv_proc *procs = calloc(NV_MAX_PROCS, sizeof *procs);
    nv_sample *samples = calloc(NV_MAX_PROCS, sizeof *samples);
    for (unsigned int d = 0; procs && samples && d < ndev && d < NV_MAX_DEVICES; d++) {
        void *dev = NULL;
        unsigned int np = NV_MAX_PROCS;
        if (nv.handle(d, &dev) != 0 || nv.procs(dev, &np, procs) != 0)
            continue;
        bool on[NV_MAX_PROCS] = {false}; /* which groups use this GPU */
        for (unsigned int i = 0; i < np && i < NV_MAX_PROCS; i++) {
            group_use *u = group_of(procs[i].pid, g, ng);
            if (u) {
                u->gpu = true;
                u->gpu_mem_bytes += (long long)procs[i].used_bytes;
                if (u - g < NV_MAX_PROCS)
                    on[u - g] = true;
            }
        }
        unsigned int ns = NV_MAX_PROCS;
        int rc = nv.putil ? nv.putil(dev, samples, &ns, nv.seen_ts[d]) : -1;
        if (rc == NV_NOT_FOUND)
            continue; /* no process used the SMs since the last sample */
        if (rc == 0) {
            /* several samples of a process may come: its newest counts */
            unsigned long long newest = nv.seen_ts[d];
            for (unsigned int i = 0; i < ns && i < NV_MAX_PROCS; i++) {
                bool superseded = false;
                for (unsigned int j = 0; j < ns && j < NV_MAX_PROCS && !superseded; j++)
                    superseded = j != i && samples[j].pid == samples[i].pid &&
                                 (samples[j].ts_us > samples[i].ts_us ||
                                  (samples[j].ts_us == samples[i].ts_us && j > i));
                group_use *u = superseded ? NULL : group_of(samples[i].pid, g, ng);
                if (u)
                    u->gpu_util += (int)samples[i].sm;
                if (samples[i].ts_us > newest)
                    newest = samples[i].ts_us;
            }
            nv.seen_ts[d] = newest;
        } else if (nv.util) {
            nv_util ut;
            if (nv.util(dev, &ut) == 0)
                for (int i = 0; i < ng && i < NV_MAX_PROCS; i++)
                    if (on[i])
                        g[i].gpu_util += (int)ut.gpu;
        }
    }
    free(procs);
    free(samples);
}

static int cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

/* Add /proc/PID/stat's CPU time and RSS to the group it belongs to, if it
 * is one of ours.  The leader's cutime/cstime keep the time of the
 * children it has waited for. */
static void add_proc(const char *pid, group_use *g, int ng, double tick, long page)
{
    char buf[1024];
    if (proc_read(pid, "stat", buf, sizeof buf) < 0)
        return;
    const char *p = strrchr(buf, ')'); /* the command name may hold anything */
    if (!p)
        return;
    char state;
    int ppid, pgrp;
    unsigned long long ut, st;
    long long cut, cst, rss;
    /* fields 3.. after "pid (comm) ": state ppid pgrp session tty tpgid flags
     * minflt cminflt majflt cmajflt utime stime cutime cstime ... rss is 24 */
    if (sscanf(p + 2,
               "%c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld %*d %*d %*d %*d "
               "%*u %*u %lld",
               &state, &ppid, &pgrp, &ut, &st, &cut, &cst, &rss) != 8)
        return;
    const pid_t me = (pid_t)atoi(pid);
    for (int i = 0; i < ng; i++) {
        if (g[i].cg_dir) { /* its cgroup's members, its CPU time from cpu.stat */
            if (g[i].cg_n > 0 && bsearch(&me, g[i].cg_pids, (size_t)g[i].cg_n, sizeof me, cmp_pid)) {
                g[i].rss_bytes += rss * page;
                g[i].procs++;
                return;
            }
        } else if (g[i].pgid == pgrp) {
            bool leader = me == pgrp;
            g[i].cpu_s += (double)(ut + st + (leader ? (unsigned long long)(cut + cst) : 0)) / tick;
            g[i].rss_bytes += rss * page;
            g[i].procs++;
            return;
        }
    }
}

/* A rank's cgroup: its processes (sorted, for add_proc) and its CPU time. */
static void read_cgroup(group_use *g)
{
    char path[700];
    snprintf(path, sizeof path, "%s/cgroup.procs", g->cg_dir);
    FILE *f = fopen(path, "r");
    int pid, cap = 0;
    while (f && fscanf(f, "%d", &pid) == 1) {
        if (g->cg_n == cap) {
            cap = cap ? 2 * cap : 16;
            pid_t *more = realloc(g->cg_pids, (size_t)cap * sizeof *more);
            if (!more)
                break;
            g->cg_pids = more;
        }
        g->cg_pids[g->cg_n++] = (pid_t)pid;
    }
    if (f)
        fclose(f);
    if (g->cg_n > 1)
        qsort(g->cg_pids, (size_t)g->cg_n, sizeof *g->cg_pids, cmp_pid);
    const int64_t us = cg_key(g->cg_dir, "cpu.stat", "usage_usec");
    g->cpu_s = us > 0 ? (double)us / 1e6 : 0;
}

void usage_json(agentd *ag, rt_jw *w)
{
    int n = 0;
    for (worker *x = ag->workers; x; x = x->next)
        n += x->started && !x->reaped;
    rt_jw_key(w, RT_F_USAGE);
    rt_jw_arr(w);
    group_use *g = n ? calloc((size_t)n, sizeof *g) : NULL;
    worker **ws = n ? calloc((size_t)n, sizeof *ws) : NULL;
    if (g && ws) {
        int k = 0;
        for (worker *x = ag->workers; x; x = x->next)
            if (x->started && !x->reaped) {
                ws[k] = x;
                g[k].pgid = x->pid;
                if (x->cg_dir[0]) {
                    g[k].cg_dir = x->cg_dir;
                    read_cgroup(&g[k]);
                    if (g[k].cg_n == 0) /* not entered yet (or could not): its group */
                        g[k].cg_dir = NULL;
                }
                k++;
            }
        DIR *d = opendir("/proc");
        const double tick = (double)sysconf(_SC_CLK_TCK);
        const long page = sysconf(_SC_PAGESIZE);
        for (struct dirent *e; d && (e = readdir(d));)
            if (isdigit((unsigned char)e->d_name[0]))
                add_proc(e->d_name, g, k, tick, page);
        if (d)
            closedir(d);
        add_gpu_use(g, k);
        for (int i = 0; i < k; i++) {
            if (g[i].procs == 0)
                continue; /* gone between the reap and now */
            rt_jw_obj(w);
            rt_jw_kint(w, RT_F_JOB, ws[i]->job);
            rt_jw_kint(w, RT_F_ATTEMPT, ws[i]->attempt);
            rt_jw_kint(w, RT_F_RANK, ws[i]->rank);
            rt_jw_knum(w, "cpu_s", g[i].cpu_s);
            rt_jw_kint(w, "rss_bytes", g[i].rss_bytes);
            rt_jw_kint(w, "procs", g[i].procs);
            if (g[i].gpu) {
                rt_jw_kint(w, "gpu_util", g[i].gpu_util);
                rt_jw_kint(w, "gpu_mem_bytes", g[i].gpu_mem_bytes);
            }
            rt_jw_obj_end(w);
        }
    }
    for (int i = 0; g && i < n; i++)
        free(g[i].cg_pids);
    free(g);
    free(ws);
    rt_jw_arr_end(w);
}

/* RT_JOB_ID, RT_ATTEMPT and RT_RANK from /proc/PID/environ; false when it
 * has none (not started by us) or cannot be read. */
static bool rank_of(const char *pid, long long *job, long long *attempt, long long *rank)
{
    char buf[65536];
    long got = proc_read(pid, "environ", buf, sizeof buf);
    if (got < 0)
        return false;
    size_t n = (size_t)got;
    int found = 0;
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1) {
        if (sscanf(buf + i, "RT_JOB_ID=%lld", job) == 1 ||
            sscanf(buf + i, "RT_ATTEMPT=%lld", attempt) == 1 ||
            sscanf(buf + i, "RT_RANK=%lld", rank) == 1)
            found++;
    }
    return found == 3;
}

void proc_kill_leftovers(agentd *ag)
{
    const pid_t me = getpid();
    DIR *d = opendir("/proc");
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        char buf[512];
        if (proc_read(e->d_name, "stat", buf, sizeof buf) < 0)
            continue;
        const char *p = strrchr(buf, ')');
        int ppid = 0;
        if (!p || sscanf(p + 2, "%*c %d", &ppid) != 1 || ppid != me)
            continue;
        bool ours = false; /* a rank itself */
        for (worker *w = ag->workers; w && !ours; w = w->next)
            ours = w->pid == pid;
        if (!ours && ident_leftover(ag, e->d_name)) { /* a job uid no rank here holds */
            RT_WARN("agent", "killed process %d left behind by a job whose ranks have ended "
                             "(it runs as that job's uid)", (int)pid);
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            continue;
        }
        long long job, attempt, rank;
        if (ours || !rank_of(e->d_name, &job, &attempt, &rank))
            continue;
        bool live = false;
        for (worker *w = ag->workers; w && !live; w = w->next)
            live = w->job == job && w->attempt == attempt && w->rank == rank && w->started &&
                   !w->reaped;
        if (live)
            continue;
        RT_WARN("agent", "killed process %d left behind by job %lld attempt %lld rank %lld "
                         "(it had left the rank's process group)",
                (int)pid, job, attempt, rank);
        kill(-pid, SIGKILL); /* its own group, if it made one */
        kill(pid, SIGKILL);
    }
    if (d)
        closedir(d);
}
