/* agent_spawn.c — see agent.h: a rank's process, started in named steps
 * with one unwind path (rc_pingpong's pp_init_ctx is the model):
 *
 *   1. who and where (ident_for, files_prepare: the rendezvous file, job.ini)
 *   2. what runs: argv (the worker with job.ini, or the job's argv), its
 *      folder, its environment (rank_env), its log file
 *   3. its descriptors: the output pipe and the control socket
 *   4. its cgroup, with the job's limits
 *   5. fork: the child sets up its descriptors, process group and cgroup
 *      (child(), async-signal-safe) and execs ringtrain-launch, which alone
 *      becomes the job's user and execs the rank (launch.h): no process of
 *      the job's uid ever holds the agent's memory.  The parent keeps the
 *      read ends.
 *
 * Whatever a step made is released by launch_free, whichever step failed. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "rt_proto.h"

/* What the child needs, all of it made before fork: the child may not
 * allocate. */
typedef struct launch {
    const char *type; /* "train" or "exec" */
    char rdv[600], cfgpath[600];
    /* the job's folder ("": its work folder), and whether the agent found it */
    char cwd[4096];
    bool cwd_seen;
    strv argv, env;
    char *prog; /* argv[0] found in the rank's PATH (NULL: not found) */
    strv largv; /* ringtrain-launch run ... -- argv */
    int out[2], ctl[2], devnull;
    bool in_cgroup, limited;
    bool hide;
} launch;

static void launch_free(launch *l)
{
    strv_free(&l->argv);
    strv_free(&l->env);
    strv_free(&l->largv);
    free(l->prog);
    l->prog = NULL;
    int *fds[] = {&l->out[0], &l->out[1], &l->ctl[0], &l->ctl[1], &l->devnull};
    for (size_t i = 0; i < RT_ARRAY_LEN(fds); i++)
        if (*fds[i] >= 0) {
            close(*fds[i]);
            *fds[i] = -1;
        }
}

/* 2. The program, its folder and environment: like horovodrun, an exec
 * job runs in the submitter's folder (or --chdir's) where this node has
 * it and the job's user may enter it, else in the job's work folder, and
 * its log says so. */
static rt_status launch_command(agentd *ag, worker *w, const rt_json *m, launch *l, char *err)
{
    const char *jcwd = rt_json_get_str(m, RT_F_CWD);
    struct stat sb;
    if (jcwd && jcwd[0] == '/' && strlen(jcwd) < sizeof l->cwd) {
        snprintf(l->cwd, sizeof l->cwd, "%s", jcwd);
        l->cwd_seen = stat(jcwd, &sb) == 0 && S_ISDIR(sb.st_mode);
    }
    if (strcmp(l->type, "train") == 0) {
        strv_add(&l->argv, strdup(ag->worker_exe));
        strv_add(&l->argv, strdup(l->cfgpath));
    } else {
        const rt_json *a = rt_json_get(m, RT_F_ARGV);
        for (size_t i = 0; i < rt_json_len(a); i++)
            strv_add(&l->argv, strdup(rt_json_str(rt_json_at(a, i), "")));
    }
    if (l->argv.n == 0)
        return rt_err(err, RT_ERR_INVALID, "no program to run");
    rank_env(ag, w, m, l->type, l->rdv, &l->env);
    /* the program, found in the rank's PATH (a venv's python first) */
    l->prog = program_path(l->argv.v[0], l->env.v, l->cwd_seen ? l->cwd : w->jobwork);
    return rank_log_create(w, err);
}

/* 3. Its output pipe and control socket; /dev/null for its input. */
static rt_status launch_fds(launch *l, char *err)
{
    if (pipe2(l->out, O_CLOEXEC) != 0)
        return rt_err(err, RT_ERR_IO, "pipe: %s", strerror(errno));
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, l->ctl) != 0)
        return rt_err(err, RT_ERR_IO, "socketpair: %s", strerror(errno));
    if ((l->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
        return rt_err(err, RT_ERR_IO, "/dev/null: %s", strerror(errno));
    return RT_OK;
}

/* 4. Its cgroup, with the job's limits (a limit this node cannot enforce
 * fails the rank here: it never runs unlimited). */
static rt_status launch_cgroup(agentd *ag, worker *w, const rt_json *m, launch *l, char *err)
{
    int64_t mem = 0;
    rt_json_get_int(m, RT_F_MEMORY_LIMIT, &mem);
    w->mem_limit = mem > 0 ? mem : 0;
    int64_t disk = 0; /* not a cgroup's: measured (agent_disk.c) */
    rt_json_get_int(m, RT_F_DISK_LIMIT, &disk);
    w->disk_limit = disk > 0 ? disk : 0;
    w->cpu_limit = rt_json_num(rt_json_get(m, RT_F_CPU_LIMIT), 0);
    l->limited = w->mem_limit > 0 || w->cpu_limit > 0;
    return cg_prepare(ag, w, &l->in_cgroup, err);
}

static void say(const char *a, const char *b, const char *c, const char *d)
{
    const char *parts[] = {a, b, c, d, "\n"};
    for (size_t i = 0; i < RT_ARRAY_LEN(parts); i++) {
        ssize_t r = parts[i] ? write(2, parts[i], strlen(parts[i])) : 0;
        (void)r;
    }
}

static char *fmt_id(unsigned long v)
{
    char b[24];
    snprintf(b, sizeof b, "%lu", v);
    return strdup(b);
}

/* ringtrain-launch's argv (launch.h): who, where, then the rank's argv. */
static void launch_argv(const agentd *ag, const worker *w, launch *l)
{
    strv *a = &l->largv;
    strv_add(a, strdup(ag->launch_exe));
    strv_add(a, strdup("run"));
    if (w->as_job) {
        strv_add(a, strdup("--uid"));
        strv_add(a, fmt_id(w->uid));
        strv_add(a, strdup("--gid"));
        strv_add(a, fmt_id(w->gid));
        if (w->ngroups > 0) {
            char groups[64 * 12] = "";
            size_t n = 0;
            for (int i = 0; i < w->ngroups && n + 12 < sizeof groups; i++)
                n += (size_t)snprintf(groups + n, sizeof groups - n, "%s%u", i ? "," : "",
                                      (unsigned)w->groups[i]);
            strv_add(a, strdup("--groups"));
            strv_add(a, strdup(groups));
        }
    }
    strv_add(a, strdup("--parent"));
    strv_add(a, fmt_id((unsigned long)getpid()));
    strv_add(a, strdup("--workdir"));
    strv_add(a, strdup(w->jobwork));
    if (l->cwd[0]) {
        strv_add(a, strdup("--cwd"));
        strv_add(a, strdup(l->cwd));
    }
    if (l->hide) {
        strv_add(a, strdup("--hide"));
        strv_add(a, strdup(ag->cfg.token_file));
    }
    if (l->prog) {
        strv_add(a, strdup("--prog"));
        strv_add(a, strdup(l->prog));
    }
    strv_add(a, strdup("--"));
    for (int i = 0; i < l->argv.n; i++)
        strv_add(a, strdup(l->argv.v[i]));
}

/* 5. The child, after fork: async-signal-safe calls only until exec. */
static _Noreturn void child(const agentd *ag, const worker *w, const launch *l, pid_t parent)
{
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(126);
    int o = fcntl(l->out[1], F_DUPFD, 10), s = fcntl(w->listen_fd, F_DUPFD, 10),
        c = fcntl(l->ctl[1], F_DUPFD, 10);
    dup2(l->devnull, 0);
    dup2(o, 1);
    dup2(o, 2);
    dup2(s, RT_LISTEN_FD_NUM);
    dup2(c, RT_CONTROL_FD_NUM);
    /* into its cgroup before anything else can start (and before the user
     * namespace of hide_token, where the file is not ours) */
    if (l->in_cgroup && cg_enter(w->cg_procs) != 0) {
        say(l->limited ? "[agent] cannot enter the rank's cgroup, where its "
                         "memory_limit/cpu_limit are: not starting it"
                       : "[agent] cannot enter the rank's cgroup: what it starts is contained "
                         "by its process group and RT_* variables only",
            NULL, NULL, NULL);
        if (l->limited)
            _exit(126);
    }
    close_range(RT_CONTROL_FD_NUM + 1, ~0U, 0);
    /* signals stay blocked: ringtrain-launch unblocks them before the rank */
    execve(ag->launch_exe, l->largv.v, l->env.v);
    say("[agent] cannot run ", ag->launch_exe, ": ", strerror(errno));
    _exit(127);
}

rt_status proc_launch(agentd *ag, worker *w, const rt_json *m, pid_t *pid, int *out_fd, int *ctl_fd,
                      char *err)
{
    launch l = {.out = {-1, -1}, .ctl = {-1, -1}, .devnull = -1, .hide = ag->token_hidden};
    l.type = rt_json_str(rt_json_get(m, RT_F_JOB_TYPE), "exec");
    rt_status st = ident_for(ag, w, m, err);
    if (st == RT_OK)
        st = files_prepare(ag, w, m, l.type, l.rdv, sizeof l.rdv, l.cfgpath, sizeof l.cfgpath, err);
    if (st == RT_OK)
        st = launch_command(ag, w, m, &l, err);
    if (st == RT_OK)
        st = launch_fds(&l, err);
    if (st == RT_OK)
        st = launch_cgroup(ag, w, m, &l, err);
    if (st == RT_OK) {
        launch_argv(ag, w, &l);
        if (!l.largv.v || l.largv.n < l.argv.n + 4)
            st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    if (st != RT_OK) {
        launch_free(&l);
        return st;
    }
    if (w->master_fd >= 0) { /* MASTER_PORT is the rank's to bind now */
        close(w->master_fd);
        w->master_fd = -1;
    }
    /* No signal may reach the child with the agent's handlers installed:
     * libevent's handler would write into the socketpair the child shares
     * with the agent, and the agent would act on a signal meant for a rank
     * (a healthy agent stopped itself that way).  So every signal is blocked
     * across fork, and the child resets every disposition before unblocking. */
    sigset_t all, saved;
    sigfillset(&all);
    const pid_t parent = getpid();
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    *pid = fork();
    if (*pid == 0)
        child(ag, w, &l, parent);
    const int e = errno;
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (*pid < 0) {
        launch_free(&l);
        cg_release(ag, w);
        return rt_err(err, RT_ERR_IO, "fork: %s", strerror(e));
    }
    *out_fd = l.out[0]; /* the parent keeps the read ends */
    *ctl_fd = l.ctl[0];
    l.out[0] = l.ctl[0] = -1;
    launch_free(&l);
    return RT_OK;
}
