/* agent_disk.c — what a running job may keep on its node's disk, as the
 * kubelet bounds a pod's ephemeral storage: measured, not guessed.
 *
 * Every job with a rank running here is measured every few seconds by a
 * child of the agent walking its files as their owner (clean_measure: the
 * job's work folder, and for a job with a uid of its own that uid's entries
 * in /tmp, /var/tmp and /dev/shm).  A job whose files exceed its disk_limit
 * (the job's, capped by [agent] job_disk_limit) is stopped, saying so; when
 * the filesystem of work_dir has less than [agent] min_free_disk free, the
 * job holding the most there is stopped (the kubelet's eviction).  A walk
 * that took T is not repeated within 20 T (at least 2 s apart), so a job of
 * a million files costs the node a few percent of one core.
 *
 * Between two measurements a job can still fill the disk; the agent's own
 * writes (rendezvous files, job.ini) then use a reserve it keeps in
 * work_dir (disk_reserve_release), recreated once there is room again. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "agent.h"
#include "rt_log.h"
#include "rt_time.h"

#define MEASURE_MIN_NS (2 * 1000000000LL)
#define MEASURE_MAX_NS (120 * 1000000000LL) /* a walk still going this long is stopped */
#define RESERVE_BYTES (8u << 20)
#define RESERVE_NAME ".ringtrain-reserve"

typedef struct disk_watch {
    int64_t job;
    uid_t uid;
    gid_t gid;
    bool own_uid;
    char path[600]; /* the job's work folder */
    int64_t limit;  /* bytes (0: none) */
    pid_t pid;      /* the measuring child (0: none) */
    int fd;
    clean_usage got;
    size_t got_len;
    int64_t started_ns, next_ns;
    int64_t bytes; /* the last measurement */
    bool stopped;  /* already told to stop */
    struct disk_watch *next;
} disk_watch;

static void fmt_bytes(char *out, size_t n, double b)
{
    if (b >= 1024.0 * 1024 * 1024)
        snprintf(out, n, "%.2f GiB", b / (1024.0 * 1024 * 1024));
    else
        snprintf(out, n, "%.1f MiB", b / (1024.0 * 1024));
}

static void watch_free(disk_watch *d)
{
    if (d->pid > 0)
        kill(d->pid, SIGKILL); /* our own child: reaped by proc_reap */
    if (d->fd >= 0)
        close(d->fd);
    free(d);
}

static int64_t effective_limit(const agentd *ag, int64_t job_limit)
{
    const int64_t cap = (int64_t)ag->cfg.job_disk_limit;
    if (job_limit > 0 && (cap <= 0 || job_limit < cap))
        return job_limit;
    return cap;
}

/* The watches follow the jobs with a rank running here. */
static void sync_watches(agentd *ag)
{
    for (worker *w = ag->workers; w; w = w->next) {
        if (!w->started || w->reaped || !w->jobwork[0])
            continue;
        disk_watch *d = ag->disks;
        while (d && d->job != w->job)
            d = d->next;
        if (d)
            continue;
        if (!(d = calloc(1, sizeof *d)))
            return;
        d->job = w->job;
        d->uid = w->as_job ? w->uid : getuid();
        d->gid = w->as_job ? w->gid : getgid();
        d->own_uid = w->own_uid;
        d->fd = -1;
        d->limit = effective_limit(ag, w->disk_limit);
        d->next_ns = rt_now_ns() + 500000000LL; /* let it start first */
        snprintf(d->path, sizeof d->path, "%s", w->jobwork);
        d->next = ag->disks;
        ag->disks = d;
    }
    for (disk_watch **p = &ag->disks; *p;) {
        bool live = false;
        for (worker *w = ag->workers; w && !live; w = w->next)
            live = w->job == (*p)->job && w->started && !w->reaped;
        if (live) {
            p = &(*p)->next;
            continue;
        }
        disk_watch *d = *p;
        *p = d->next;
        watch_free(d);
    }
}

static void stop_job(agentd *ag, disk_watch *d, const char *why)
{
    d->stopped = true;
    RT_WARN("agent", "job %lld: %s: stopping its ranks here", (long long)d->job, why);
    proc_fail_job(ag, d->job, why);
}

/* A measurement is in: compare it with the job's limit. */
static void judge(agentd *ag, disk_watch *d, int64_t took_ns)
{
    int64_t gap = 20 * took_ns;
    d->next_ns = rt_now_ns() + (gap > MEASURE_MIN_NS ? gap : MEASURE_MIN_NS);
    if (!d->got.ok)
        return;
    d->bytes = d->got.bytes;
    char why[300], have[32], lim[32];
    if (d->got.deep && !d->stopped) {
        snprintf(why, sizeof why,
                 "its work folder nests folders deeper than the agent measures "
                 "(256 levels)");
        stop_job(ag, d, why);
    } else if (d->limit > 0 && d->bytes > d->limit && !d->stopped) {
        fmt_bytes(have, sizeof have, (double)d->bytes);
        fmt_bytes(lim, sizeof lim, (double)d->limit);
        snprintf(why, sizeof why,
                 "its files on this node take %s (%lld files and folders in $RT_WORK_DIR%s), "
                 "over its disk_limit of %s",
                 have, (long long)d->got.files, d->own_uid ? ", /tmp, /var/tmp and /dev/shm" : "",
                 lim);
        stop_job(ag, d, why);
    }
}

/* The result of a running walk, when it is complete. */
static void collect(agentd *ag, disk_watch *d, int64_t now)
{
    ssize_t n = read(d->fd, (char *)&d->got + d->got_len, sizeof d->got - d->got_len);
    if (n > 0)
        d->got_len += (size_t)n;
    const bool done = d->got_len == sizeof d->got;
    const bool dead = n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
    if (!done && !dead && now - d->started_ns < MEASURE_MAX_NS)
        return;
    if (!done && !dead) {
        RT_WARN("agent",
                "job %lld: measuring its files took over %lld s: stopped, tried again "
                "later",
                (long long)d->job, MEASURE_MAX_NS / 1000000000LL);
        kill(d->pid, SIGKILL);
    }
    close(d->fd);
    d->fd = -1;
    d->pid = 0;
    if (!done)
        d->got.ok = false;
    judge(ag, d, now - d->started_ns);
}

/* Below min_free_disk: the job holding the most here is stopped. */
static void check_free(agentd *ag)
{
    struct statvfs vs;
    if (ag->cfg.min_free_disk <= 0 || statvfs(ag->cfg.work_dir, &vs) != 0)
        return;
    const int64_t free_b = (int64_t)vs.f_bavail * (int64_t)vs.f_frsize;
    if (free_b >= (int64_t)ag->cfg.min_free_disk)
        return;
    disk_watch *most = NULL;
    for (disk_watch *d = ag->disks; d; d = d->next)
        if (!d->stopped && d->bytes >= (1 << 20) && (!most || d->bytes > most->bytes))
            most = d;
    if (!most)
        return;
    char why[300], f[32], m[32], have[32];
    fmt_bytes(f, sizeof f, (double)free_b);
    fmt_bytes(m, sizeof m, (double)ag->cfg.min_free_disk);
    fmt_bytes(have, sizeof have, (double)most->bytes);
    snprintf(why, sizeof why,
             "this node's work_dir has %s free, below its min_free_disk of %s, and this job's "
             "files take the most there (%s)",
             f, m, have);
    stop_job(ag, most, why);
}

/* The reserve: RESERVE_BYTES of work_dir's filesystem held for the agent's
 * own files, made when there is room for it. */
static void keep_reserve(agentd *ag)
{
    if (ag->reserve_held)
        return;
    char path[1200];
    snprintf(path, sizeof path, "%s/" RESERVE_NAME, ag->cfg.work_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    ag->reserve_held = posix_fallocate(fd, 0, RESERVE_BYTES) == 0;
    close(fd);
    if (!ag->reserve_held)
        unlink(path);
}

bool disk_reserve_release(agentd *ag)
{
    if (!ag->reserve_held)
        return false;
    char path[1200];
    snprintf(path, sizeof path, "%s/" RESERVE_NAME, ag->cfg.work_dir);
    ag->reserve_held = false;
    RT_WARN("agent", "work_dir's filesystem is full: using the agent's reserve for its own files");
    return unlink(path) == 0;
}

void disk_tick(agentd *ag)
{
    const int64_t now = rt_now_ns();
    if (now - ag->disk_ns < 250000000LL)
        return;
    ag->disk_ns = now;
    sync_watches(ag);
    for (disk_watch *d = ag->disks; d; d = d->next) {
        if (d->pid > 0) {
            collect(ag, d, now);
        } else if (now >= d->next_ns && !d->stopped) {
            d->got_len = 0;
            memset(&d->got, 0, sizeof d->got);
            d->pid = clean_measure(ag, d->uid, d->gid, d->own_uid, d->path, &d->fd);
            d->started_ns = now;
            if (d->pid < 0) {
                d->pid = 0;
                d->next_ns = now + MEASURE_MIN_NS;
            } else {
                fcntl(d->fd, F_SETFL, O_NONBLOCK);
            }
        }
    }
    check_free(ag);
    keep_reserve(ag);
}

void disk_free_all(agentd *ag)
{
    while (ag->disks) {
        disk_watch *d = ag->disks;
        ag->disks = d->next;
        watch_free(d);
    }
}
