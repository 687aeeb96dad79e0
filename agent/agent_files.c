/* agent_files.c — what the agent writes on a node for a job's ranks:
 *
 *   work_dir/job-N/                 the agent's: 0711 when the job runs as a
 *                                   uid of its own (it may pass, not list
 *                                   nor write), else 0700
 *   work_dir/job-N/rank-R.rendezvous the rank's peers and the attempt's key
 *   work_dir/job-N/job.ini          a training job's configuration
 *   work_dir/job-N/sweep.json       a sweep's last step: every trial's record
 *                                   (all 0400, the job's: it reads them,
 *                                   cannot replace them, no other job can)
 *   work_dir/job-N/work/            the job's own folder, 0700 (RT_WORK_DIR,
 *                                   and the ranks' folder when the
 *                                   submitter's is not on this node)
 *
 * Everything is opened relative to a directory fd with O_NOFOLLOW, and files
 * are made with O_EXCL after the old name is removed: a link the job planted
 * (it can, where it runs as the agent's user) is refused, never followed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "rt_file.h"
#include "rt_log.h"
#include "rt_rendezvous.h"
#include "rt_time.h"

/* A folder below dirfd, made if missing, opened without following a link;
 * -1 with errno. */
static int open_dir_at(int dirfd, const char *name, mode_t mode)
{
    if (mkdirat(dirfd, name, mode) != 0 && errno != EEXIST)
        return -1;
    return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static rt_status write_at(int dirfd, const char *dir, const char *name, const char *text,
                          size_t len, const worker *w, char *err)
{
    if (unlinkat(dirfd, name, 0) != 0 && errno != ENOENT)
        return rt_err(err, RT_ERR_IO, "cannot replace %s/%s: %s", dir, name, strerror(errno));
    for (int tries = 0;; tries++) {
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
        bool ok = fd >= 0 && write(fd, text, len) == (ssize_t)len &&
                  (!w->as_job || fchown(fd, w->uid, w->gid) == 0);
        int e = errno;
        if (fd >= 0)
            close(fd);
        if (ok)
            return RT_OK;
        if (fd >= 0)
            unlinkat(dirfd, name, 0);
        /* a job filled the disk between two measurements: the reserve
         * (agent_disk.c) makes room for this one */
        if (!((e == ENOSPC || e == EDQUOT) && tries == 0 && disk_reserve_release(w->ag)))
            return rt_err(err, RT_ERR_IO, "cannot write %s/%s: %s", dir, name, strerror(e));
    }
}

/* The rank's rendezvous file: its place in the attempt, and the start
 * message's ring settings (rt_rendezvous.h holds the defaults). */
static char *rendezvous_text(const worker *w, const rt_json *m, size_t *len, char *err)
{
    rt_rendezvous r;
    rt_rendezvous_defaults(&r);
    r.job = w->job;
    r.attempt = w->attempt;
    r.rank = w->rank;
    r.size = w->size;
    r.local_rank = w->local_rank;
    r.local_size = w->local_size;
    r.cross_rank = w->cross_rank;
    r.cross_size = w->cross_size;
    const rt_json *peers = rt_json_get(m, RT_F_PEERS);
    r.peers = calloc((size_t)(r.size > 0 ? r.size : 1), sizeof *r.peers); /* borrowed strings */
    if (!r.peers) {
        rt_err(err, RT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (int i = 0; i < r.size; i++)
        r.peers[i] = (char *)rt_json_str(rt_json_at(peers, (size_t)i), "");
    snprintf(r.key, sizeof r.key, "%s", rt_json_str(rt_json_get(m, RT_F_KEY), ""));
    /* the ring's settings, as the start frame has them (rt_run.h) */
    if (rt_run_read_json(m, &r.run, err) != RT_OK) {
        rt_err_prefix(err, "the start message");
        free(r.peers);
        return NULL;
    }
    char *text = rt_rendezvous_format(&r, len);
    if (!text)
        rt_err(err, RT_ERR_NOMEM, "out of memory");
    free(r.peers);
    return text;
}

/* The job's work folder, its own: made here, or kept when it is already the
 * job's (another rank, an earlier attempt); one of someone else's is moved
 * aside (a job of the same id under another identity: a restarted agent's
 * stale folder). */
static rt_status job_work(agentd *ag, worker *w, int jd, char *err)
{
    (void)ag;
    for (int tries = 0; tries < 2; tries++) {
        /* O_PATH: the agent may not read a job's folder, only look at it */
        int fd = -1;
        if (mkdirat(jd, "work", 0700) == 0 || errno == EEXIST)
            fd = openat(jd, "work", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return rt_err(err, RT_ERR_IO, "cannot make %s: %s", w->jobwork, strerror(errno));
        struct stat sb;
        bool ok = fstat(fd, &sb) == 0;
        close(fd);
        const uid_t want = w->as_job ? w->uid : getuid();
        if (ok && sb.st_uid == getuid() && w->as_job) { /* just made: the job's */
            fd = openat(jd, "work", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            ok = fd >= 0 && fchmod(fd, 0700) == 0 && fchown(fd, w->uid, w->gid) == 0 &&
                 fstat(fd, &sb) == 0; /* mode first: then it is no longer ours */
            if (fd >= 0)
                close(fd);
        }
        if (ok && sb.st_uid == want)
            return RT_OK;
        char aside[64];
        snprintf(aside, sizeof aside, "gone-%lld", (long long)rt_now_ns());
        if (renameat(jd, "work", jd, aside) != 0)
            return rt_err(err, RT_ERR_IO, "%s is not the job's and cannot be moved aside: %s",
                          w->jobwork, strerror(errno));
    }
    return rt_err(err, RT_ERR_IO, "%s: cannot make it the job's", w->jobwork);
}

rt_status files_prepare(agentd *ag, worker *w, const rt_json *m, const char *type, char *rdv,
                        size_t rdv_len, char *cfgpath, size_t cfg_len, char *err)
{
    char name[64];
    snprintf(name, sizeof name, "job-%lld", (long long)w->job);
    snprintf(w->workdir, sizeof w->workdir, "%s/%s", ag->cfg.work_dir, name);
    snprintf(w->jobwork, sizeof w->jobwork, "%s/work", w->workdir);
    rt_status st = rt_mkdirs(ag->cfg.work_dir, err);
    if (st != RT_OK)
        return st;
    int wd = open(ag->cfg.work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int jd = wd >= 0 ? open_dir_at(wd, name, 0700) : -1;
    struct stat sb;
    if (jd < 0 || fstat(jd, &sb) != 0 || sb.st_uid != getuid()) {
        st = rt_err(err, RT_ERR_IO, "cannot make %s (the agent's): %s", w->workdir,
                    jd >= 0 ? "it is another user's" : strerror(errno));
    } else {
        fchmod(jd, w->as_job ? 0711 : 0700);
        st = job_work(ag, w, jd, err);
    }
    snprintf(name, sizeof name, "rank-%d.rendezvous", w->rank);
    snprintf(rdv, rdv_len, "%s/%s", w->workdir, name);
    if (st == RT_OK) {
        size_t len = 0;
        char *text = rendezvous_text(w, m, &len, err);
        st = text ? write_at(jd, w->workdir, name, text, len, w, err) : RT_ERR_INVALID;
        free(text);
        /* its shared-memory names' tag, for clean_shm (before it can start) */
        rt_shm_tag(rt_json_str(rt_json_get(m, RT_F_KEY), ""), w->shm_tag);
    }
    cfgpath[0] = '\0';
    if (st == RT_OK && strcmp(type, "train") == 0) {
        snprintf(cfgpath, cfg_len, "%s/job.ini", w->workdir);
        const char *cfg = rt_json_str(rt_json_get(m, RT_F_CONFIG), "");
        st = write_at(jd, w->workdir, "job.ini", cfg, strlen(cfg), w, err);
    }
    const rt_json *results = rt_json_get(m, RT_F_SWEEP_RESULTS);
    if (st == RT_OK && results && strcmp(type, "train") == 0) { /* a sweep's last step */
        rt_jw jw;
        rt_jw_init(&jw);
        rt_jw_value(&jw, results);
        size_t len = 0;
        char *text = rt_jw_take(&jw, &len);
        st = text ? write_at(jd, w->workdir, "sweep.json", text, len, w, err)
                  : rt_err(err, RT_ERR_NOMEM, "out of memory");
        free(text);
    }
    if (jd >= 0)
        close(jd);
    if (wd >= 0)
        close(wd);
    return st;
}

void files_clean(agentd *ag, worker *w)
{
    int jd = open(w->workdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (jd < 0)
        return;
    char name[64];
    snprintf(name, sizeof name, "rank-%d.rendezvous", w->rank);
    unlinkat(jd, name, 0);
    bool last = true;
    int here = 0; /* this attempt's ranks at this agent */
    for (worker *o = ag->workers; o; o = o->next) {
        last = last && !(o != w && o->job == w->job && !o->reported);
        here += o->job == w->job && o->attempt == w->attempt;
    }
    /* every process of the job's uid may be killed (kill(-1) as that uid)
     * only where no other agent of this machine runs a rank of the job:
     * the coordinator counts them (machine_ranks, 0: unknown) */
    /* a sweep's jobs share a uid: while another of them runs here, only
     * this job's folder goes (its /tmp entries and processes are the
     * last one's to clear) */
    const bool shared = w->own_uid && ident_shared(ag, w);
    const bool reap = w->own_uid && !shared && w->machine_ranks > 0 && w->machine_ranks <= here;
    if (last) {
        unlinkat(jd, "job.ini", 0);
        unlinkat(jd, "sweep.json", 0);
        /* the job's files go now, as their owner (agent_clean.c), whatever
         * modes the job set; moved aside first, so that a next attempt
         * starts afresh */
        char aside[64], path[700];
        snprintf(aside, sizeof aside, "gone-%lld", (long long)rt_now_ns());
        snprintf(path, sizeof path, "%s/%s", w->workdir, aside);
        if (renameat(jd, "work", jd, aside) == 0)
            clean_job(ag, w->job, w->as_job ? w->uid : getuid(), w->as_job ? w->gid : getgid(),
                      w->own_uid && !shared, reap, path);
        else if (w->own_uid &&
                 !shared) /* no folder, but what it left elsewhere and its processes */
            clean_job(ag, w->job, w->uid, w->gid, true, reap, NULL);
    }
    close(jd);
}
