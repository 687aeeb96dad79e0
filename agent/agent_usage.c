/* agent_usage.c — what each running rank uses, from /proc: the CPU time and
 * resident memory of every process in the rank's process group (the rank
 * leads its group; its children and their children stay in it unless they
 * leave on purpose).  Sent with the heartbeat as "usage"; the coordinator
 * shows it in the job's placement, `ringtrain status` and /metrics.
 * GPU utilisation (NVML) is not sampled yet. */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

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
