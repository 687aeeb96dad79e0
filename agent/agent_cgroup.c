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
 * agent says so once.
 *
 * Limits: a job's memory_limit and cpu_limit become the rank's memory.max
 * (memory.swap.max 0: the limit is RAM and swap together) and cpu.max.  They
 * need the memory and cpu controllers enabled for the agent's children; a
 * cgroup other than the root may not hand controllers to its children while
 * it holds processes itself, so an agent alone in its cgroup (systemd's
 * Delegate=yes gives it one) first moves into a leaf of its own,
 * ringtrain-<pid namespace>-<agent pid>-agent.  A job with a limit this node
 * cannot enforce fails on it, saying why; it never runs unlimited. */
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

/* Write text into dir/name; false with errno set on failure. */
static bool write_file(const char *dir, const char *name, const char *text)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    int e = errno;
    close(fd);
    errno = e;
    return ok;
}

/* The first line of dir/name, without its newline ("" if unreadable). */
static void read_line(const char *dir, const char *name, char *buf, size_t n)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    buf[0] = 0;
    if (f && fgets(buf, (int)n, f))
        buf[strcspn(buf, "\n")] = 0;
    if (f)
        fclose(f);
}

/* Whether word is one of the space-separated words of dir/name. */
static bool has_word(const char *dir, const char *name, const char *word)
{
    char line[512];
    read_line(dir, name, line, sizeof line);
    const size_t n = strlen(word);
    for (const char *p = line; (p = strstr(p, word)) != NULL; p += n)
        if ((p == line || p[-1] == ' ') && (p[n] == 0 || p[n] == ' '))
            return true;
    return false;
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

/* Whether this process is the only one in cgroup dir. */
static bool alone_in(const char *dir)
{
    char path[600];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    FILE *f = fopen(path, "r");
    int pid, n = 0;
    bool others = false;
    while (f && fscanf(f, "%d", &pid) == 1) {
        n++;
        others = others || pid != getpid();
    }
    if (f)
        fclose(f);
    return n == 1 && !others;
}

/* Enable the memory and cpu controllers for the ranks' cgroups where this
 * node allows it; say why not where it does not. */
static void enable_limits(agentd *ag)
{
    static const char *const name[] = {"memory", "cpu"};
    bool *on[] = {&ag->cg_mem, &ag->cg_cpu};
    char *why[] = {ag->cg_mem_why, ag->cg_cpu_why};
    bool moved = false;
    for (int k = 0; k < 2; k++) {
        char plus[16];
        snprintf(plus, sizeof plus, "+%s", name[k]);
        if (!has_word(ag->cg_base, "cgroup.controllers", name[k])) {
            char have[256];
            read_line(ag->cg_base, "cgroup.controllers", have, sizeof have);
            snprintf(why[k], 300, "the %s controller is not available in %s (it has: %s; on a "
                     "host that mounts cgroup v1 controllers it is bound there, and under "
                     "systemd the agent's unit needs Delegate=yes)", name[k], ag->cg_base,
                     have[0] ? have : "none");
            continue;
        }
        bool ok = has_word(ag->cg_base, "cgroup.subtree_control", name[k]) ||
                  write_file(ag->cg_base, "cgroup.subtree_control", plus);
        if (!ok && errno == EBUSY && !moved && alone_in(ag->cg_base)) {
            /* processes here: the agent moves into a leaf of its own */
            char leaf[600];
            snprintf(leaf, sizeof leaf, "%s/" CG_PREFIX "%lu-%d-agent", ag->cg_base, ag->cg_ns,
                     (int)getpid());
            moved = (mkdir(leaf, 0755) == 0 || errno == EEXIST) &&
                    write_file(leaf, "cgroup.procs", "0");
            if (moved)
                RT_INFO("agent", "moved into %s, so that its ranks' cgroups can have limits", leaf);
            ok = moved && write_file(ag->cg_base, "cgroup.subtree_control", plus);
        }
        if (!ok)
            snprintf(why[k], 300, "cannot enable the %s controller for the ranks' cgroups in %s "
                     "(%s; the agent must be alone in its cgroup, as systemd's Delegate=yes "
                     "gives it)", name[k], ag->cg_base, strerror(errno));
        *on[k] = ok;
    }
    if (ag->cg_mem && ag->cg_cpu)
        RT_INFO("agent", "memory_limit and cpu_limit are enforced on the ranks' cgroups");
    for (int k = 0; k < 2; k++)
        if (!*on[k])
            RT_INFO("agent", "jobs with %s fail on this node: %s",
                    k == 0 ? "memory_limit" : "cpu_limit", why[k]);
}

void cg_init(agentd *ag)
{
    char mnt[512], own[1024], probe[600];
    ag->cg_on = ag->cg_mem = ag->cg_cpu = false;
    snprintf(ag->cg_mem_why, sizeof ag->cg_mem_why, "no cgroup v2 here");
    snprintf(ag->cg_cpu_why, sizeof ag->cg_cpu_why, "no cgroup v2 here");
    if (!cgroup2_mount(mnt, sizeof mnt) || !own_cgroup(own, sizeof own)) {
        RT_INFO("agent", "no cgroup v2 here: a rank's processes are contained by its process "
                         "group and its RT_* variables only, and jobs with memory_limit or "
                         "cpu_limit fail on this node");
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
        snprintf(ag->cg_mem_why, sizeof ag->cg_mem_why, "cannot make cgroups in %s: %s",
                 ag->cg_base, strerror(errno));
        snprintf(ag->cg_cpu_why, sizeof ag->cg_cpu_why, "%s", ag->cg_mem_why);
        return;
    }
    rmdir(probe);
    ag->cg_on = true;
    RT_INFO("agent", "each rank runs in a cgroup of its own under %s", ag->cg_base);
    sweep_stale(ag);
    enable_limits(ag);
}

rt_status cg_prepare(agentd *ag, worker *w, bool *in_cgroup, char *err)
{
    *in_cgroup = false;
    w->cg_dir[0] = w->cg_procs[0] = 0;
    const bool limited = w->mem_limit > 0 || w->cpu_limit > 0;
    if (w->mem_limit > 0 && !ag->cg_mem)
        return rt_err(err, RT_ERR_UNSUPPORTED,
                      "the job's memory_limit cannot be enforced on this node: %s", ag->cg_mem_why);
    if (w->cpu_limit > 0 && !ag->cg_cpu)
        return rt_err(err, RT_ERR_UNSUPPORTED,
                      "the job's cpu_limit cannot be enforced on this node: %s", ag->cg_cpu_why);
    if (!ag->cg_on)
        return RT_OK;
    snprintf(w->cg_dir, sizeof w->cg_dir, "%s/" CG_PREFIX "%lu-%d-%lld-%lld-%d", ag->cg_base,
             ag->cg_ns, (int)getpid(), (long long)w->job, (long long)w->attempt, w->rank);
    if (mkdir(w->cg_dir, 0755) != 0 && errno != EEXIST) {
        rt_status st = rt_err(err, RT_ERR_IO, "cannot make the cgroup %s: %s", w->cg_dir,
                              strerror(errno));
        w->cg_dir[0] = 0;
        if (limited) /* its limits would not hold */
            return st;
        RT_WARN("agent", "%s; rank %d runs without one", err, w->rank);
        return RT_OK;
    }
    char text[64];
    const char *file = NULL;
    if (w->mem_limit > 0) {
        snprintf(text, sizeof text, "%lld", (long long)w->mem_limit);
        /* RAM and swap together: no swap beyond memory.max (a kernel
         * without swap accounting has no memory.swap.max) */
        if (!write_file(w->cg_dir, "memory.max", text))
            file = "memory.max";
        else if (!write_file(w->cg_dir, "memory.swap.max", "0") && errno != ENOENT)
            file = "memory.swap.max";
    }
    if (!file && w->cpu_limit > 0) {
        /* quota per 100 ms period; the kernel's smallest quota is 1 ms */
        long long quota = (long long)(w->cpu_limit * 100000 + 0.5);
        snprintf(text, sizeof text, "%lld 100000", quota < 1000 ? 1000 : quota);
        file = write_file(w->cg_dir, "cpu.max", text) ? NULL : "cpu.max";
    }
    if (file) {
        rt_status st = rt_err(err, RT_ERR_IO, "cannot set the rank's limit in %s/%s: %s",
                              w->cg_dir, file, strerror(errno));
        rmdir(w->cg_dir);
        w->cg_dir[0] = 0;
        return st;
    }
    snprintf(w->cg_procs, sizeof w->cg_procs, "%s/cgroup.procs", w->cg_dir);
    *in_cgroup = true;
    return RT_OK;
}

int64_t cg_key(const char *dir, const char *file, const char *key)
{
    char path[700], k[64];
    long long v, found = -1;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    while (f && found < 0 && fscanf(f, "%63s %lld", k, &v) == 2)
        if (!strcmp(k, key))
            found = v;
    if (f)
        fclose(f);
    return found;
}

int64_t cg_oom_kills(const worker *w)
{
    int64_t n = w->cg_dir[0] ? cg_key(w->cg_dir, "memory.events", "oom_kill") : 0;
    return n > 0 ? n : 0;
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
