/* agent_cgroup.c — each rank in a cgroup of its own (cgroup v2), where the
 * agent may make them: below its own cgroup, which systemd hands to it with
 * Delegate=yes (root may anywhere).  The rank's process enters it before
 * exec; everything it starts stays in it whatever it does — a new session,
 * an emptied environment, a double fork — so when the rank's main process
 * has exited, cgroup.kill (or, before Linux 5.14, a SIGKILL to every pid
 * listed) ends them all, and the empty cgroup is removed.
 *
 * Names: ringtrain-<pid namespace>-<agent pid>-<job>-<attempt>-<rank>.  A
 * cgroup left by an agent of this PID namespace that no longer runs (killed
 * -9: its ranks died with it, PDEATHSIG, but not what they started) is
 * emptied and removed when an agent starts; another namespace's agents, whose
 * pids mean nothing here, are left alone.
 * Where no cgroup can be made (cgroup v1 only, a read-only /sys/fs/cgroup,
 * no delegation) ranks are contained by their process group and by the
 * RT_* variables of what comes back to the agent (agent_usage.c), and the
 * agent says so once. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "rt_log.h"
#include "rt_time.h"

#define CG_PREFIX "ringtrain-"
#define CG_GIVE_UP_NS (60 * 1000000000LL) /* a cgroup still busy this long is left */

/* The mount point of the cgroup v2 hierarchy (mounted at its root); false if none. */
static bool cgroup2_mount(char *mnt, size_t n)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    char line[4096];
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SOURCE SUPER */
        char root[1024], point[1024];
        const char *sep = strstr(line, " - ");
        if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
            continue;
        if (sscanf(line, "%*s %*s %*s %1023s %1023s", root, point) == 2 && !strcmp(root, "/") &&
            strlen(point) < n) {
            snprintf(mnt, n, "%s", point);
            found = true;
        }
    }
    if (f)
        fclose(f);
    return found;
}

/* This process's cgroup v2 path ("0::/path" in /proc/self/cgroup). */
static bool own_cgroup(char *path, size_t n)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[4096];
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f))
        if (!strncmp(line, "0::", 3)) {
            line[strcspn(line, "\n")] = 0;
            found = strlen(line + 3) < n && strstr(line + 3, "(deleted)") == NULL;
            if (found)
                snprintf(path, n, "%s", line + 3);
        }
    if (f)
        fclose(f);
    return found;
}

static bool write_file(const char *dir, const char *name, const char *text)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    close(fd);
    return ok;
}

/* Kill every process in cgroup dir: cgroup.kill, or each pid it lists
 * (a few passes: a fork may race the reading). */
static void kill_all(const char *dir)
{
    if (write_file(dir, "cgroup.kill", "1"))
        return;
    char path[600];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    for (int pass = 0; pass < 4; pass++) {
        FILE *f = fopen(path, "r");
        int pid, n = 0;
        while (f && fscanf(f, "%d", &pid) == 1) {
            kill(pid, SIGKILL);
            n++;
        }
        if (f)
            fclose(f);
        if (n == 0)
            return;
    }
}

/* Remove dir later (it is busy until its killed processes are reaped). */
static void remove_later(agentd *ag, const char *dir)
{
    if (rmdir(dir) == 0 || errno == ENOENT)
        return;
    if (ag->cg_npending == CG_MAX_PENDING) {
        RT_WARN("agent", "cgroup %s is left (too many waiting for removal)", dir);
        return;
    }
    cg_pending *p = &ag->cg_pending[ag->cg_npending++];
    snprintf(p->dir, sizeof p->dir, "%s", dir);
    p->since_ns = rt_now_ns();
}

/* The inode of this process's PID namespace (0 if unknown). */
static unsigned long pid_ns(void)
{
    char link[64] = "";
    unsigned long ino = 0;
    ssize_t n = readlink("/proc/self/ns/pid", link, sizeof link - 1);
    if (n > 0) {
        link[n] = 0;
        sscanf(link, "pid:[%lu]", &ino);
    }
    return ino;
}

/* The cgroups of agents that no longer run: kill what is left in them. */
static void sweep_stale(agentd *ag)
{
    DIR *d = opendir(ag->cg_base);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        unsigned long ns = 0;
        int pid = 0;
        if (strncmp(e->d_name, CG_PREFIX, strlen(CG_PREFIX)) != 0 ||
            sscanf(e->d_name + strlen(CG_PREFIX), "%lu-%d-", &ns, &pid) != 2 || pid <= 0 ||
            ns != ag->cg_ns)
            continue;
        if (pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH)
            continue; /* ours, or another agent's that runs */
        char dir[600];
        snprintf(dir, sizeof dir, "%s/%s", ag->cg_base, e->d_name);
        kill_all(dir);
        remove_later(ag, dir);
        n++;
    }
    if (d)
        closedir(d);
    if (n)
        RT_WARN("agent", "emptied %d cgroup%s of ranks of an agent that no longer runs", n,
                n == 1 ? "" : "s");
}

void cg_init(agentd *ag)
{
    char mnt[512], own[1024], probe[600];
    ag->cg_on = false;
    if (!cgroup2_mount(mnt, sizeof mnt) || !own_cgroup(own, sizeof own)) {
        RT_INFO("agent", "no cgroup v2 here: a rank's processes are contained by its process "
                         "group and its RT_* variables only");
        return;
    }
    snprintf(ag->cg_base, sizeof ag->cg_base, "%s%s", mnt, strcmp(own, "/") ? own : "");
    ag->cg_ns = pid_ns();
    snprintf(probe, sizeof probe, "%s/" CG_PREFIX "%lu-%d-probe", ag->cg_base, ag->cg_ns,
             (int)getpid());
    if (mkdir(probe, 0755) != 0 && errno != EEXIST) {
        RT_INFO("agent", "cannot make cgroups in %s (%s; under systemd: Delegate=yes and "
                         "ProtectControlGroups=no): a rank's processes are contained by its "
                         "process group and its RT_* variables only",
                ag->cg_base, strerror(errno));
        return;
    }
    rmdir(probe);
    ag->cg_on = true;
    RT_INFO("agent", "each rank runs in a cgroup of its own under %s", ag->cg_base);
    sweep_stale(ag);
}

bool cg_prepare(agentd *ag, worker *w)
{
    w->cg_dir[0] = w->cg_procs[0] = 0;
    if (!ag->cg_on)
        return false;
    snprintf(w->cg_dir, sizeof w->cg_dir, "%s/" CG_PREFIX "%lu-%d-%lld-%lld-%d", ag->cg_base,
             ag->cg_ns, (int)getpid(), (long long)w->job, (long long)w->attempt, w->rank);
    if (mkdir(w->cg_dir, 0755) != 0 && errno != EEXIST) {
        RT_WARN("agent", "cannot make the cgroup %s: %s; rank %d runs without one", w->cg_dir,
                strerror(errno), w->rank);
        w->cg_dir[0] = 0;
        return false;
    }
    snprintf(w->cg_procs, sizeof w->cg_procs, "%s/cgroup.procs", w->cg_dir);
    return true;
}

int cg_enter(const char *procs)
{
    /* in the child between fork and exec: async-signal-safe calls only */
    int fd = open(procs, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int ok = write(fd, "0", 1) == 1 ? 0 : -1;
    close(fd);
    return ok;
}

void cg_release(agentd *ag, worker *w)
{
    if (!w->cg_dir[0])
        return;
    kill_all(w->cg_dir);
    remove_later(ag, w->cg_dir);
    w->cg_dir[0] = 0;
}

void cg_tick(agentd *ag)
{
    const int64_t now = rt_now_ns();
    for (int i = 0; i < ag->cg_npending;) {
        cg_pending *p = &ag->cg_pending[i];
        bool done = rmdir(p->dir) == 0 || errno == ENOENT;
        if (!done && now - p->since_ns > CG_GIVE_UP_NS) {
            RT_WARN("agent", "cgroup %s still holds processes a minute after they were killed; "
                             "left as it is", p->dir);
            done = true;
        } else if (!done) {
            kill_all(p->dir); /* a process that raced the first kill */
        }
        if (done)
            ag->cg_pending[i] = ag->cg_pending[--ag->cg_npending];
        else
            i++;
    }
}
