/* trainer_cpus.c — see trainer.h: how many threads a rank's CPU kernels
 * use by default — the CPUs it may actually run on (its affinity mask and
 * its cgroup's cpu.max quota, as a container or the agent's cpu_limit
 * sets them), divided among this job's ranks on the host, as torchrun sets
 * OMP_NUM_THREADS for several processes per node. */
#include <math.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "trainer.h"

double rt_cgroup_cpus(const char *cgroup_root, const char *self_cgroup)
{
    char line[4096], path[4200];
    FILE *f = fopen(self_cgroup, "r");
    double cpus = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::", 3) != 0) /* the unified hierarchy's line */
            continue;
        line[strcspn(line, "\n")] = '\0';
        /* cpu.max of the cgroup and of each parent: the smallest binds */
        for (char *end = line + strlen(line); end >= line + 3;) {
            *end = '\0';
            snprintf(path, sizeof path, "%s%s/cpu.max", cgroup_root, line + 3);
            FILE *m = fopen(path, "r");
            char quota[32] = "";
            long period = 0;
            if (m && fscanf(m, "%31s %ld", quota, &period) == 2 && strcmp(quota, "max") != 0 &&
                period > 0) {
                double c = atof(quota) / (double)period;
                if (c > 0 && (cpus == 0 || c < cpus))
                    cpus = c;
            }
            if (m)
                fclose(m);
            char *slash = strrchr(line + 3, '/');
            if (!slash || slash == line + 3)
                break;
            end = slash;
        }
    }
    if (f)
        fclose(f);
    return cpus;
}

int rt_default_threads(int local_size, int machine_ranks, int node_slots, char *why, size_t len)
{
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int affinity = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                                : (int)(online > 0 ? online : 1);
    const double quota = rt_cgroup_cpus("/sys/fs/cgroup", "/proc/self/cgroup");
    int usable = affinity;
    if (quota > 0 && (int)ceil(quota) < usable)
        usable = (int)ceil(quota);
    const int host = local_size > 0 ? local_size : 1;
    const bool machine = machine_ranks > host;
    const int job = machine ? machine_ranks : host;
    const bool slots = node_slots > job;
    const int ranks = slots ? node_slots : job;
    int n = usable / ranks;
    n = n > 0 ? n : 1;
    char q[48] = "no cpu.max quota";
    if (quota > 0)
        snprintf(q, sizeof q, "cpu.max %.3g CPUs", quota);
    snprintf(why, len,
             "%d usable CPU%s (affinity %d of %ld online, %s) for %d rank%s of %s "
             "on this %s%s",
             usable, usable == 1 ? "" : "s", affinity, online, q, ranks, ranks == 1 ? "" : "s",
             slots ? "the agent's slots (jobs side by side share the CPUs)" : "this job",
             slots     ? "host"
             : machine ? "machine (its hosts share the CPUs)"
                       : "host",
             usable < ranks ? ": oversubscribed, more ranks than CPUs (fewer ranks per machine, or "
                              "more CPUs, will be faster)"
                            : "");
    return n;
}
