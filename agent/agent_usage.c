/* agent_usage.c — what each running rank uses, from /proc: the CPU time and
 * resident memory of every process in the rank's process group (the rank
 * leads its group; its children and their children stay in it unless they
 * leave on purpose).  Sent with the heartbeat as "usage"; the coordinator
 * shows it in the job's placement, `ringtrain status` and /metrics.
 * GPU utilisation (NVML) is not sampled yet.
 *
 * And what ranks leave behind: the agent is a child subreaper, so a
 * process that left its rank's process group (setsid, a daemon) becomes the
 * agent's child when its parent dies; one whose rank (by the RT_JOB_ID,
 * RT_ATTEMPT and RT_RANK in its environment) no longer runs here is killed. */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#include "agent.h"
#include "rt_log.h"

typedef struct group_use {
    pid_t pgid;
    double cpu_s;
    long long rss_bytes;
    int procs;
} group_use;

/* Add /proc/PID/stat's CPU time and RSS to the group it belongs to, if it
 * is one of ours.  The leader's cutime/cstime keep the time of the
 * children it has waited for. */
static void add_proc(const char *pid, group_use *g, int ng, double tick, long page)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
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
    for (int i = 0; i < ng; i++)
        if (g[i].pgid == pgrp) {
            bool leader = atoi(pid) == pgrp;
            g[i].cpu_s += (double)(ut + st + (leader ? (unsigned long long)(cut + cst) : 0)) / tick;
            g[i].rss_bytes += rss * page;
            g[i].procs++;
            return;
        }
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
                g[k++].pgid = x->pid;
            }
        DIR *d = opendir("/proc");
        const double tick = (double)sysconf(_SC_CLK_TCK);
        const long page = sysconf(_SC_PAGESIZE);
        for (struct dirent *e; d && (e = readdir(d));)
            if (isdigit((unsigned char)e->d_name[0]))
                add_proc(e->d_name, g, k, tick, page);
        if (d)
            closedir(d);
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
            rt_jw_obj_end(w);
        }
    }
    free(g);
    free(ws);
    rt_jw_arr_end(w);
}

/* RT_JOB_ID, RT_ATTEMPT and RT_RANK from /proc/PID/environ; false when it
 * has none (not started by us) or cannot be read. */
static bool rank_of(const char *pid, long long *job, long long *attempt, long long *rank)
{
    char path[64], buf[65536];
    snprintf(path, sizeof path, "/proc/%s/environ", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
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
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = '\0';
        const char *p = strrchr(buf, ')');
        int ppid = 0;
        if (!p || sscanf(p + 2, "%*c %d", &ppid) != 1 || ppid != me)
            continue;
        bool ours = false; /* a rank itself */
        for (worker *w = ag->workers; w && !ours; w = w->next)
            ours = w->pid == pid;
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
