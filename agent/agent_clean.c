/* agent_clean.c — a job's files go with it, whatever modes it set, and its
 * processes go first (see agent.h).
 *
 * What a job wrote on a node — its work folder, and where it runs as a uid
 * of its own (job_uids) every entry of that uid in /tmp, /var/tmp and
 * /dev/shm — is removed once its last rank here has ended, by a child of
 * the agent that keeps the agent's uid but takes the job's uid for file
 * access only (setfsuid): it may change the modes of the job's files as
 * their owner (a folder the job made 0500 or 0000 is made 0700 first) and
 * unlink them in a sticky folder, yet no process of the job's uid may
 * signal it, trace it or read its memory (those checks take the real and
 * effective uids, which stay the agent's).  Nothing is opened by a path the
 * job could change: every step is openat/unlinkat below a folder fd with
 * O_NOFOLLOW, a link is removed and never followed, and a tree deeper than
 * DEPTH_MAX is flattened by moving its deep folders up (so neither the
 * stack nor the fds run out on a hostile nesting).
 *
 * Where the job has a uid of its own, every process of that uid is killed
 * before (ringtrain-launch reap): nothing of the job can race the removal,
 * and a later job with the same uid (job id + the range's size) inherits
 * nothing.  The same walk, without removing, measures what a running job
 * holds (clean_measure, for agent_disk.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "launch.h"
#include "rt_log.h"
#include "rt_time.h"

#define DEPTH_MAX 32          /* folders deeper than this are moved up to be removed */
#define MEASURE_DEPTH_MAX 256 /* a running job's tree cannot be moved: deeper is an error */

/* The folders where a process of a job's own uid may leave entries of its
 * uid (sticky, world-writable): /tmp and /var/tmp are the agent's private
 * ones under the unit (PrivateTmp), /dev/shm the node's. */
static const char *const shared_dirs[] = {"/tmp", "/var/tmp", "/dev/shm"};

/* ---- walking a tree as its owner -------------------------------------------------- */

/* name below dirfd, a folder of fsuid's, opened to read and write its
 * entries: made u+rwx first when the job took that away.  -1 if it is not
 * a folder (or not fsuid's, or a link). */
static int open_owned_dir(int dirfd, const char *name, uid_t uid)
{
    int pfd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat sb;
    if (pfd < 0)
        return -1;
    if (fstat(pfd, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        close(pfd);
        return -1;
    }
    if ((sb.st_mode & S_IRWXU) != S_IRWXU && sb.st_uid == uid) {
        char self[64]; /* chmod through the fd: the very folder stat saw */
        snprintf(self, sizeof self, "/proc/self/fd/%d", pfd);
        chmod(self, (sb.st_mode & 07777) | S_IRWXU);
    }
    int fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    close(pfd);
    return fd;
}

typedef struct walk {
    uid_t uid;      /* whose files (the fsuid) */
    int top;        /* the folder being emptied: deep folders are moved here */
    uint64_t moved; /* names given to moved folders */
    int64_t bytes, files;
    bool remove; /* else only measure */
    bool deep;   /* measuring: deeper than MEASURE_DEPTH_MAX */
} walk;

static bool walk_entry(walk *k, int dirfd, const char *name, int depth);

/* Every entry of the folder fd (closed here), removed or counted. */
static void walk_dir(walk *k, int fd, int depth)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    /* entries removed while reading may make readdir skip others: read
     * again while a pass removes something (measuring reads once) */
    for (bool again = true; again;) {
        again = false;
        for (struct dirent *e; (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            again = walk_entry(k, dirfd(d), e->d_name, depth) && k->remove;
        }
        if (again)
            rewinddir(d);
    }
    closedir(d);
}

/* One entry, removed (true when it is gone) or counted. */
static bool walk_entry(walk *k, int dirfd, const char *name, int depth)
{
    struct stat sb;
    if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
        return false;
    if (!S_ISDIR(sb.st_mode)) {
        k->bytes += (int64_t)sb.st_blocks * 512;
        k->files++;
        return k->remove && unlinkat(dirfd, name, 0) == 0;
    }
    k->files++;
    if (k->remove && depth >= DEPTH_MAX && k->top >= 0) {
        char to[40]; /* flatten: its turn comes in the top folder */
        snprintf(to, sizeof to, ".rt-moved-%llu", (unsigned long long)k->moved++);
        if (renameat(dirfd, name, k->top, to) == 0)
            return true;
    }
    if (!k->remove && depth >= MEASURE_DEPTH_MAX) {
        k->deep = true;
        return false;
    }
    int fd = open_owned_dir(dirfd, name, k->uid);
    if (fd >= 0)
        walk_dir(k, fd, depth + 1);
    return k->remove && unlinkat(dirfd, name, AT_REMOVEDIR) == 0;
}

/* Empty (or measure) the folder path, keeping it; false when it cannot be
 * opened as a folder of uid's (or of this process's). */
static bool walk_tree(walk *k, const char *path)
{
    int fd = open_owned_dir(AT_FDCWD, path, k->uid);
    if (fd < 0)
        return false;
    k->top = k->remove ? dup(fd) : -1;
    walk_dir(k, fd, 0);
    if (k->top >= 0)
        close(k->top);
    k->top = -1;
    return true;
}

/* The entries of uid in the shared folders, removed or counted. */
static void walk_shared(walk *k)
{
    for (size_t i = 0; i < RT_ARRAY_LEN(shared_dirs); i++) {
        int fd = open(shared_dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        for (struct dirent *e; (e = readdir(d));) {
            struct stat sb;
            if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
                sb.st_uid != k->uid || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            k->top = k->remove ? dup(dirfd(d)) : -1; /* moved folders stay in the folder */
            walk_entry(k, dirfd(d), e->d_name, 0);
            if (k->top >= 0)
                close(k->top);
            k->top = -1;
        }
        closedir(d);
    }
}

/* ---- the children ------------------------------------------------------------------ */

/* In a fresh child: default signals, dies with the agent, the job's uid for
 * file access only; false when fsuid could not be taken. */
static bool child_as_files_of(uid_t uid, gid_t gid)
{
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setfsgid(gid);
    setfsuid(uid);
    return (uid_t)setfsuid((uid_t)-1) == uid && (gid_t)setfsgid((gid_t)-1) == gid;
}

/* Kill every process of a job's own uid: ringtrain-launch reap, waited for. */
static int reap_uid(const char *launcher, uid_t uid, gid_t gid)
{
    char u[24], g[24];
    snprintf(u, sizeof u, "%u", (unsigned)uid);
    snprintf(g, sizeof g, "%u", (unsigned)gid);
    pid_t pid = fork();
    if (pid == 0) {
        char *argv[] = {(char *)launcher, "reap", "--uid", u, "--gid", g, NULL};
        char *envp[] = {NULL};
        execve(launcher, argv, envp);
        _exit(LAUNCH_REAP_NOT_BECOME);
    }
    int status = 0;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : LAUNCH_REAP_NOT_BECOME;
}

static void track(agentd *ag, pid_t pid, const char *what, int64_t job)
{
    if (pid < 0) {
        RT_WARN("agent", "job %lld: cannot %s: fork: %s", (long long)job, what, strerror(errno));
        return;
    }
    if (ag->nhelpers < (int)RT_ARRAY_LEN(ag->helpers))
        ag->helpers[ag->nhelpers++] = pid;
}

void clean_job(agentd *ag, int64_t job, uid_t uid, gid_t gid, bool own_uid, bool reap,
               const char *path)
{
    /* what the child logs goes to the agent's stderr, as the agent's lines */
    pid_t pid = fork();
    if (pid != 0) {
        track(ag, pid, "remove its files", job);
        return;
    }
    int rc = LAUNCH_REAP_OK;
    if (own_uid && reap) /* nothing of the job runs while its files go */
        rc = reap_uid(ag->launch_exe, uid, gid);
    if (!child_as_files_of(uid, gid))
        _exit(3);
    walk k = {.uid = uid, .top = -1, .remove = true};
    if (path && path[0])
        walk_tree(&k, path);
    if (own_uid)
        walk_shared(&k);
    /* the emptied folder is an entry of the agent's job-N: removed as the
     * agent (job-N stays: a next attempt may be writing there; the
     * retention sweep takes it) */
    setfsuid(getuid());
    setfsgid(getgid());
    if (path && path[0])
        rmdir(path);
    if (rc != LAUNCH_REAP_OK)
        RT_WARN("agent", "job %lld: %s every process of uid %u before removing its files",
                (long long)job, rc == LAUNCH_REAP_SURVIVED ? "could not kill" : "could not stop",
                (unsigned)uid);
    if (k.files > 0)
        RT_INFO("agent", "job %lld: removed its %lld files and folders on this node (%.1f MiB)",
                (long long)job, (long long)k.files, (double)k.bytes / (1 << 20));
    _exit(0);
}

void clean_shm(agentd *ag, const worker *w, bool as_job)
{
    const int64_t job = w->job, attempt = w->attempt;
    if (!w->shm_tag[0])
        return; /* no rendezvous written: none of its ranks made a segment */
    /* the attempt's ring's, and its hierarchical allreduce's ring within
     * the host (hier.c) */
    const uint64_t id = rt_attempt_id(job, attempt);
    char prefix[2][64];
    snprintf(prefix[0], sizeof prefix[0], RT_SHM_PREFIX "%016llx-%s", (unsigned long long)id,
             w->shm_tag);
    snprintf(prefix[1], sizeof prefix[1], RT_SHM_PREFIX "%016llx-%s",
             (unsigned long long)(id ^ RT_HIER_SALT_LOCAL), w->shm_tag);
    pid_t pid = as_job ? fork() : 0; /* the agent's own files: removed here */
    if (pid != 0) {
        track(ag, pid, "remove its shared memory", job);
        return;
    }
    if (as_job && !child_as_files_of(w->uid, w->gid))
        _exit(3);
    int n = 0, fd = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    for (struct dirent *e; d && (e = readdir(d));)
        for (int k = 0; k < 2; k++)
            if (strncmp(e->d_name, prefix[k], strlen(prefix[k])) == 0 &&
                unlinkat(dirfd(d), e->d_name, 0) == 0)
                n++;
    if (d)
        closedir(d);
    else if (fd >= 0)
        close(fd);
    if (n > 0)
        RT_INFO("agent", "removed %d shared-memory segment%s left by job %lld attempt %lld", n,
                n == 1 ? "" : "s", (long long)job, (long long)attempt);
    if (as_job)
        _exit(0);
}

pid_t clean_measure(agentd *ag, uid_t uid, gid_t gid, bool own_uid, const char *path, int *fd)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = fork();
    if (pid != 0) {
        close(p[1]);
        if (pid < 0) {
            close(p[0]);
            return -1;
        }
        *fd = p[0];
        if (ag->nhelpers < (int)RT_ARRAY_LEN(ag->helpers))
            ag->helpers[ag->nhelpers++] = pid;
        return pid;
    }
    close(p[0]);
    clean_usage u = {.ok = child_as_files_of(uid, gid)};
    walk k = {.uid = uid, .top = -1};
    if (u.ok)
        walk_tree(&k, path);
    if (u.ok && own_uid)
        walk_shared(&k);
    u.bytes = k.bytes;
    u.files = k.files;
    u.deep = k.deep;
    ssize_t n = write(p[1], &u, sizeof u);
    _exit(n == (ssize_t)sizeof u ? 0 : 1);
}

void clean_stale_work(agentd *ag)
{
    /* after a restart no rank of the agent's runs (they die with it): what
     * its jobs left in work_dir/job-N/{work,gone-*} goes now, as its owner */
    DIR *d = opendir(ag->cfg.work_dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        char *end = NULL;
        if (strncmp(e->d_name, "job-", 4) != 0)
            continue;
        long long job = strtoll(e->d_name + 4, &end, 10);
        if (!end || *end || end == e->d_name + 4)
            continue;
        bool busy = false;
        for (worker *w = ag->workers; w && !busy; w = w->next)
            busy = w->job == job;
        char jd[1200];
        snprintf(jd, sizeof jd, "%s/%s", ag->cfg.work_dir, e->d_name);
        DIR *j = busy ? NULL : opendir(jd);
        for (struct dirent *f; j && (f = readdir(j));) {
            struct stat sb;
            if ((strcmp(f->d_name, "work") != 0 && strncmp(f->d_name, "gone-", 5) != 0) ||
                fstatat(dirfd(j), f->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(sb.st_mode))
                continue;
            const bool own = ag->ids_on && sb.st_uid >= ag->uid_lo && sb.st_uid <= ag->uid_hi;
            char path[1300];
            snprintf(path, sizeof path, "%s/%s", jd, f->d_name);
            clean_job(ag, job, sb.st_uid, sb.st_gid, own, false, path);
        }
        if (j)
            closedir(j);
    }
    if (d)
        closedir(d);
}
