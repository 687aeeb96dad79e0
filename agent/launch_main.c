/* launch_main.c — ringtrain-launch: the one program that becomes a job's
 * uid (launch.h says why and how it is called).
 *
 * The agent forks, sets up the child's descriptors, cgroup and process
 * group, and execs this program still as itself; only here does the process
 * change uid, so no process of a job's uid ever holds the agent's memory.
 * After the change it is not dumpable (a process of the job's uid may not
 * trace it or read /proc/PID/mem) until it execs the rank, whose own image
 * is the job's.  The same idea as runc's `init` and Slurm's slurmstepd
 * exec'ing the task: the privileged daemon never becomes the user itself.
 *
 * Self-contained on purpose (libc only): small enough to read whole. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch.h"

extern char **environ;

typedef struct opts {
    bool as_job; /* --uid given */
    uid_t uid;
    gid_t gid;
    gid_t groups[64];
    int ngroups;
    pid_t parent;
    const char *workdir, *cwd, *hide, *prog, *token;
    bool try_hide;
    char **argv; /* after "--" */
} opts;

/* "[agent] a b c d\n" on fd 2: the rank's log. */
static void say(const char *a, const char *b, const char *c, const char *d)
{
    const char *parts[] = {"[agent] ", a, b, c, d, "\n"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        ssize_t r = parts[i] ? write(2, parts[i], strlen(parts[i])) : 0;
        (void)r;
    }
}

static bool parse_id(const char *s, unsigned long max, unsigned long *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long v = s ? strtoul(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v > max)
        return false;
    *out = v;
    return true;
}

static bool parse_opts(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long n = 0;
        if (!strcmp(a, "--")) {
            o->argv = argv + i + 1;
            return true;
        } else if (!strcmp(a, "--try-hide")) {
            o->try_hide = true;
            continue;
        } else if (!v) {
            return false;
        } else if (!strcmp(a, "--uid") && parse_id(v, 0xfffffffeul, &n)) {
            o->uid = (uid_t)n;
            o->as_job = true;
        } else if (!strcmp(a, "--gid") && parse_id(v, 0xfffffffeul, &n)) {
            o->gid = (gid_t)n;
        } else if (!strcmp(a, "--groups")) {
            char buf[1024];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
                 t = strtok_r(NULL, ",", &save)) {
                if (o->ngroups == (int)(sizeof o->groups / sizeof o->groups[0]) ||
                    !parse_id(t, 0xfffffffeul, &n))
                    return false;
                o->groups[o->ngroups++] = (gid_t)n;
            }
        } else if (!strcmp(a, "--parent") && parse_id(v, 0x7ffffffful, &n)) {
            o->parent = (pid_t)n;
        } else if (!strcmp(a, "--workdir")) {
            o->workdir = v;
        } else if (!strcmp(a, "--cwd")) {
            o->cwd = v;
        } else if (!strcmp(a, "--hide")) {
            o->hide = v;
        } else if (!strcmp(a, "--prog")) {
            o->prog = v;
        } else if (!strcmp(a, "--token")) {
            o->token = v;
        } else {
            return false;
        }
        i++;
    }
    return true;
}

/* No capability left, none to gain by exec. */
static int drop_caps(void)
{
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capset, &h, d) != 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    return 0;
}

/* Become o's uid, gid and groups, keeping no capability; not dumpable
 * (the kernel already made it so at the change unless fs.suid_dumpable is
 * 1: said again here). */
static int become(const opts *o)
{
    if (!o->as_job)
        return geteuid() == 0 ? 0 : drop_caps(); /* allow_root_jobs: root stays root */
    if (setgroups((size_t)o->ngroups, o->groups) != 0 || setresgid(o->gid, o->gid, o->gid) != 0 ||
        setresuid(o->uid, o->uid, o->uid) != 0)
        return -1;
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (drop_caps() != 0)
        return -1;
    if (getuid() != o->uid || geteuid() != o->uid || getegid() != o->gid) {
        errno = EPERM;
        return -1;
    }
    umask(022); /* what it writes to the store is readable, its work folder is 0700 */
    return 0;
}

/* The token file, seen as an empty file from a user and mount namespace of
 * this process's own (identity maps: the rank's ids look the same). */
static int hide_token(const char *token_path)
{
    char uidmap[48], gidmap[48];
    snprintf(uidmap, sizeof uidmap, "%u %u 1\n", (unsigned)getuid(), (unsigned)getuid());
    snprintf(gidmap, sizeof gidmap, "%u %u 1\n", (unsigned)getgid(), (unsigned)getgid());
    /* a non-dumpable process cannot write its own uid_map; this one holds
     * nothing of the agent's */
    prctl(PR_SET_DUMPABLE, 1);
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
        return -1;
    const char *files[3] = {"/proc/self/setgroups", "/proc/self/uid_map", "/proc/self/gid_map"};
    const char *texts[3] = {"deny", uidmap, gidmap};
    for (int i = 0; i < 3; i++) {
        int fd = open(files[i], O_WRONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? write(fd, texts[i], strlen(texts[i])) : -1;
        if (fd >= 0)
            close(fd);
        if (n < 0)
            return -1;
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("/dev/null", token_path, NULL, MS_BIND, NULL) != 0)
        return -1;
    return 0;
}

static int do_run(const opts *o)
{
    if (!o->argv || !o->argv[0] || !o->workdir) {
        say("ringtrain-launch run: no program or work folder", NULL, NULL, NULL);
        return 126;
    }
    char who[64];
    snprintf(who, sizeof who, "uid %u", (unsigned)o->uid);
    if (become(o) != 0) {
        say("cannot run the rank as the job's user (", who, "): ", strerror(errno));
        return 126;
    }
    /* a job's own user that cannot read the token (its folder is
     * root:ringtrain 0750) has nothing to hide, and could not mount over a
     * file it cannot reach */
    if (o->hide && access(o->hide, R_OK) == 0 && hide_token(o->hide) != 0) {
        /* it worked when the agent tried: do not run with the token visible */
        say("cannot hide the agent's token from this rank (hide_token): not starting it", NULL,
            NULL, NULL);
        return 126;
    }
    /* the job's folder, entered as the job's user; else its work folder */
    if (!o->cwd || !o->cwd[0] || chdir(o->cwd) != 0) {
        if (o->cwd && o->cwd[0])
            say("cannot enter ", o->cwd,
                ", running in the job's work folder instead: ", strerror(errno));
        if (chdir(o->workdir) != 0) {
            say("cannot enter the job's work folder ", o->workdir, ": ", strerror(errno));
            return 126;
        }
    }
    /* a change of user cleared it: dies with the agent all the same */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (o->parent > 0 && getppid() != o->parent)
        return 126;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (o->prog) /* found in the rank's PATH by the agent */
        execve(o->prog, o->argv, environ);
    else if (strchr(o->argv[0], '/')) /* a path, from the rank's folder */
        execve(o->argv[0], o->argv, environ);
    else /* in no folder of the rank's PATH: not the agent's PATH either */
        errno = ENOENT;
    say("cannot run the program: ", o->argv[0], ": ", strerror(errno));
    return 127;
}

/* Whether hide_token works here (tried in a child: it changes the process). */
static bool hides(const char *token)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(hide_token(token) == 0 ? 0 : 1);
    int status = 0;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int do_probe(const opts *o)
{
    launch_probe r = {0};
    if (!o->workdir || !o->token) {
        r.stage = 1;
        r.err = EINVAL;
    } else if (become(o) != 0) {
        r.stage = 1;
        r.err = errno;
    } else if (!o->as_job) { /* as the agent's own user: only whether hiding works */
        r.token_readable = access(o->token, R_OK) == 0;
        r.hidden = o->try_hide && hides(o->token);
    } else if (access(o->workdir, X_OK) != 0) {
        r.stage = 2;
        r.err = errno;
    } else if (access(o->workdir, R_OK) == 0 || access(o->workdir, W_OK) == 0) {
        r.stage = 3; /* a job could list the others' folders, or plant one */
    } else {
        r.token_readable = access(o->token, R_OK) == 0;
        r.hidden = o->try_hide && hides(o->token);
    }
    ssize_t n = write(1, &r, sizeof r);
    char c;
    while (read(0, &c, 1) > 0) /* until the agent has tried to signal it */
        ;
    return n == (ssize_t)sizeof r ? 0 : 1;
}

/* Whether a process of uid other than this one is alive (not a zombie). */
static bool uid_alive(uid_t uid)
{
    const pid_t me = getpid();
    bool alive = false;
    DIR *d = opendir("/proc");
    if (!d)
        return true;
    for (struct dirent *e; !alive && (e = readdir(d));) {
        long pid = strtol(e->d_name, NULL, 10);
        if (pid <= 1 || pid == me)
            continue;
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%ld/status", pid);
        FILE *f = fopen(path, "r");
        bool zombie = false, mine = false;
        while (f && fgets(line, sizeof line, f)) {
            if (!strncmp(line, "State:", 6))
                zombie = strchr(line + 6, 'Z') || strchr(line + 6, 'X');
            else if (!strncmp(line, "Uid:", 4))
                mine = strtoul(line + 4, NULL, 10) == uid;
        }
        if (f)
            fclose(f);
        alive = mine && !zombie;
    }
    closedir(d);
    return alive;
}

/* System V IPC objects of uid: removed (an IPC_RMID by their owner). */
static void remove_ipc(uid_t uid)
{
    /* the owner's uid is column 8 of msg, 8 of shm, 5 of sem */
    const struct {
        const char *file;
        int id_col, uid_col, kind;
    } tables[] = {{"/proc/sysvipc/shm", 2, 8, 0},
                  {"/proc/sysvipc/msg", 2, 8, 1},
                  {"/proc/sysvipc/sem", 2, 5, 2}};
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
        FILE *f = fopen(tables[t].file, "r");
        char line[512];
        if (!f)
            continue;
        if (!fgets(line, sizeof line, f)) { /* the header */
            fclose(f);
            continue;
        }
        while (fgets(line, sizeof line, f)) {
            long cols[12] = {0};
            int n = 0;
            for (char *save = NULL, *tok = strtok_r(line, " \t\n", &save); tok && n < 12;
                 tok = strtok_r(NULL, " \t\n", &save))
                cols[n++] = strtol(tok, NULL, 10);
            if (n < tables[t].uid_col || cols[tables[t].uid_col - 1] != (long)uid)
                continue;
            const int id = (int)cols[tables[t].id_col - 1];
            if (tables[t].kind == 0)
                shmctl(id, IPC_RMID, NULL);
            else if (tables[t].kind == 1)
                msgctl(id, IPC_RMID, NULL);
            else
                semctl(id, 0, IPC_RMID);
        }
        fclose(f);
    }
}

static int do_reap(const opts *o)
{
    if (!o->as_job || o->uid == 0)
        return LAUNCH_REAP_NOT_BECOME;
    opts bare = *o;
    bare.ngroups = 0;
    if (become(&bare) != 0)
        return LAUNCH_REAP_NOT_BECOME;
    /* kill(-1) as this uid and no capability: every process the uid may
     * signal, which is every process of the uid; repeated until none is
     * left alive (a fork in flight when it ran leaves a child) */
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (kill(-1, SIGKILL) != 0 && errno == ESRCH)
            break;
        if (!uid_alive(o->uid))
            break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= 2)
            return LAUNCH_REAP_SURVIVED;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    remove_ipc(o->uid);
    return LAUNCH_REAP_OK;
}

int main(int argc, char **argv)
{
    opts o;
    if (argc < 2 || !parse_opts(argc, argv, &o)) {
        fprintf(stderr,
                "usage: %s run|probe|reap --uid U --gid G [...] (started by "
                "ringtrain-agent only)\n",
                LAUNCH_PROGRAM);
        return 126;
    }
    if (!strcmp(argv[1], "run"))
        return do_run(&o);
    if (!strcmp(argv[1], "probe"))
        return do_probe(&o);
    if (!strcmp(argv[1], "reap"))
        return do_reap(&o);
    fprintf(stderr, "%s: unknown mode '%s'\n", LAUNCH_PROGRAM, argv[1]);
    return 126;
}
