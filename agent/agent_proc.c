/* agent_proc.c — the agent's workers.
 *
 * prepare: bind a listening socket on the data address for each of the
 *   agent's ranks and report the addresses (gang start: nobody runs until
 *   every rank has one).
 * start: per rank (agent_spawn.c), write the rendezvous file (mode 0400:
 *   peers and the job key) and fork/exec the program in a process group of its own, with
 *   fd 0 /dev/null, fds 1 and 2 a pipe into the rank's log, fd 3 the bound
 *   listening socket (RT_LISTEN_FD) and fd 4 a control socket for progress
 *   reports (RT_CONTROL_FD), and the rank environment (agent_env.c: RT_*,
 *   torchrun's and Horovod's variables, its GPU), in a namespace where the
 *   agent's token is hidden, and in a cgroup of its own where the agent can
 *   make one (agent_cgroup.c).  PR_SET_PDEATHSIG kills a worker if the agent
 *   itself dies; what leaves the group is killed once its rank is over (its
 *   cgroup; without one, by its RT_* variables: agent_usage.c).
 * abort / stop: SIGTERM to the process group, SIGKILL after kill_grace.
 * exit: reported with the code or signal and the last lines of output, once
 *   the output pipe is drained (or 1 s after the process is reaped); after an
 *   attempt's last rank here, its shared-memory names left in /dev/shm go,
 *   and after the job's, its files (agent_clean.c). */
#include <dirent.h>
#include <event2/buffer.h>
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
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "rt_addr.h"
#include "rt_comm.h"
#include "rt_file.h"
#include "rt_log.h"
#include "rt_proto.h"
#include "rt_time.h"

extern char **environ;

void worker_free(worker *w)
{
    if (!w)
        return;
    if (w->out_ev)
        event_free(w->out_ev);
    if (w->ctl_ev)
        event_free(w->ctl_ev);
    if (w->out_fd >= 0)
        close(w->out_fd);
    if (w->ctl_fd >= 0)
        close(w->ctl_fd);
    if (w->listen_fd >= 0)
        close(w->listen_fd);
    if (w->master_fd >= 0)
        close(w->master_fd);
    if (w->log)
        fclose(w->log);
    free(w);
}

static void unlink_worker(agentd *ag, worker *w)
{
    for (worker **p = &ag->workers; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            return;
        }
}

int proc_live(const agentd *ag)
{
    int n = 0;
    for (const worker *w = ag->workers; w; w = w->next)
        n += w->started && !w->reaped;
    return n;
}

int proc_unreported(const agentd *ag)
{
    int n = 0;
    for (const worker *w = ag->workers; w; w = w->next)
        n += w->started && !w->reported;
    return n;
}

void proc_running_json(agentd *ag, rt_jw *jw)
{
    rt_jw_arr(jw);
    /* a rank that has ended but whose exit is not reported yet (its output
     * is being drained) is still running for the coordinator: its exit
     * follows, never neither */
    for (worker *w = ag->workers; w; w = w->next)
        if (w->started && !w->reported) {
            rt_jw_obj(jw);
            rt_jw_kint(jw, RT_F_JOB, w->job);
            rt_jw_kint(jw, RT_F_ATTEMPT, w->attempt);
            rt_jw_kint(jw, RT_F_RANK, w->rank);
            rt_jw_kint(jw, RT_F_PID, w->pid);
            rt_jw_obj_end(jw);
        }
    rt_jw_arr_end(jw);
}

static worker *find(agentd *ag, int64_t job, int64_t attempt, int rank)
{
    for (worker *w = ag->workers; w; w = w->next)
        if (w->job == job && w->attempt == attempt && w->rank == rank)
            return w;
    return NULL;
}

/* ---- reporting ---------------------------------------------------------------- */

/* The start of a frame about rank w to the coordinator: its type, job,
 * attempt and rank; the caller adds the rest and closes the object. */
static void rank_frame_begin(rt_jw *jw, rt_msg type, const worker *w)
{
    rt_jw_init(jw);
    rt_jw_obj(jw);
    rt_jw_kstr(jw, RT_F_TYPE, rt_msg_name(type));
    rt_jw_kint(jw, RT_F_JOB, w->job);
    rt_jw_kint(jw, RT_F_ATTEMPT, w->attempt);
    rt_jw_kint(jw, RT_F_RANK, w->rank);
}

static void report_exit(agentd *ag, worker *w)
{
    w->reported = true;
    if (w->workdir[0])
        files_clean(ag, w);
    bool attempt_left = false;
    for (worker *o = ag->workers; o; o = o->next)
        attempt_left = attempt_left ||
                       (o != w && o->job == w->job && o->attempt == w->attempt && !o->reported);
    /* shared-memory segments of the attempt still named in /dev/shm (a rank
     * killed while setting up its ring; the ranks unlink their own as soon
     * as both ends have them), removed as their owner */
    if (!attempt_left)
        clean_shm(ag, w, w->as_job && w->started);
    char line[300];
    if (w->sig)
        snprintf(line, sizeof line, "[agent] rank %d was killed by signal %d (%s)\n", w->rank,
                 w->sig, strsignal(w->sig));
    else
        snprintf(line, sizeof line, "[agent] rank %d exited with code %d\n", w->rank, w->code);
    if (w->started)
        log_write(w, line, strlen(line));
    if (w->oom_kills > 0) {
        char lim[64] = "the node ran out of memory";
        if (w->mem_limit > 0)
            snprintf(lim, sizeof lim, "at its memory_limit of %.1f MiB",
                     (double)w->mem_limit / (1 << 20));
        snprintf(w->why, sizeof w->why, "the kernel's OOM killer ended %lld of its processes, %s",
                 (long long)w->oom_kills, lim);
        snprintf(line, sizeof line, "[agent] rank %d: %s\n", w->rank, w->why);
        log_write(w, line, strlen(line));
    }
    rt_jw jw;
    rank_frame_begin(&jw, RT_MSG_EXITED, w);
    rt_jw_kint(&jw, RT_F_CODE, w->code);
    rt_jw_kint(&jw, RT_F_SIGNAL, w->sig);
    if (w->why[0])
        rt_jw_kstr(&jw, RT_F_REASON, w->why);
    rt_jw_key(&jw, RT_F_TAIL);
    log_tail_json(w, &jw);
    rt_jw_obj_end(&jw);
    RT_INFO("agent", "job %lld attempt %lld: %.*s", (long long)w->job, (long long)w->attempt,
            (int)strlen(line) - 9, line + 8); /* without "[agent] " and the newline */
    agent_send_exit(ag, &jw); /* kept for the next hello while the coordinator is away */
}

/* ---- prepare -------------------------------------------------------------------- */

/* Rank 0's agent holds a free port on its data address for the attempt's
 * MASTER_PORT (torch.distributed's env:// store on rank 0), so that no other
 * socket takes it before the rank starts; released just before the rank runs. */
static rt_status reserve_master_port(agentd *ag, worker *w, char *err)
{
    char *addr = NULL, host[256];
    rt_status st = rt_listen_tcp(ag->data_addr, 0, &w->master_fd, &addr, err);
    if (st == RT_OK)
        st = rt_addr_parse(addr, false, host, sizeof host, &w->master_port, err);
    free(addr);
    if (st != RT_OK)
        rt_err_prefix(err, "MASTER_PORT");
    return st;
}

void proc_prepare(agentd *ag, const rt_json *m)
{
    int64_t job = 0, attempt = 0, size = 0;
    rt_json_get_int(m, RT_F_JOB, &job);
    rt_json_get_int(m, RT_F_ATTEMPT, &attempt);
    rt_json_get_int(m, RT_F_SIZE, &size);
    const rt_json *ranks = rt_json_get(m, RT_F_RANKS);
    rt_jw jw;
    rt_jw_init(&jw);
    rt_jw_obj(&jw);
    rt_jw_kstr(&jw, RT_F_TYPE, rt_msg_name(RT_MSG_PREPARED));
    rt_jw_kint(&jw, RT_F_JOB, job);
    rt_jw_kint(&jw, RT_F_ATTEMPT, attempt);
    rt_jw_key(&jw, RT_F_RANKS);
    rt_jw_arr(&jw);
    char err[RT_ERR_LEN] = "";
    rt_status st = RT_OK;
    for (size_t i = 0; i < rt_json_len(ranks) && st == RT_OK; i++) {
        const rt_json *r = rt_json_at(ranks, i);
        int64_t rank = -1, v;
        rt_json_get_int(r, RT_F_RANK, &rank);
        worker *w = find(ag, job, attempt, (int)rank);
        if (!w) {
            w = calloc(1, sizeof *w);
            if (!w) {
                st = rt_err(err, RT_ERR_NOMEM, "out of memory");
                break;
            }
            w->ag = ag;
            w->job = job;
            w->attempt = attempt;
            w->rank = (int)rank;
            w->size = (int)size;
            w->out_fd = w->ctl_fd = w->listen_fd = w->master_fd = -1;
            w->local_rank = rt_json_get_int(r, RT_F_LOCAL_RANK, &v) ? (int)v : 0;
            w->local_size = rt_json_get_int(r, RT_F_LOCAL_SIZE, &v) ? (int)v : 1;
            w->machine_ranks = rt_json_get_int(r, RT_F_MACHINE_RANKS, &v) ? (int)v : 0;
            w->cross_rank = rt_json_get_int(r, RT_F_CROSS_RANK, &v) ? (int)v : 0;
            w->cross_size = rt_json_get_int(r, RT_F_CROSS_SIZE, &v) ? (int)v : 1;
            w->node_rank = rt_json_get_int(r, RT_F_NODE_RANK, &v) ? (int)v : w->cross_rank;
            w->nodes = rt_json_get_int(r, RT_F_NODES, &v) ? (int)v : w->cross_size;
            char *addr = NULL;
            st = rt_listen_tcp(ag->data_addr, 0, &w->listen_fd, &addr, err);
            if (st == RT_OK && w->rank == 0)
                st = reserve_master_port(ag, w, err);
            if (st != RT_OK) {
                free(addr);
                worker_free(w);
                break;
            }
            snprintf(w->addr, sizeof w->addr, "%s", addr);
            free(addr);
            w->next = ag->workers;
            ag->workers = w;
        }
        rt_jw_obj(&jw);
        rt_jw_kint(&jw, RT_F_RANK, w->rank);
        rt_jw_kstr(&jw, RT_F_ADDR, w->addr);
        if (w->master_port > 0)
            rt_jw_kint(&jw, RT_F_MASTER_PORT, w->master_port);
        rt_jw_obj_end(&jw);
    }
    rt_jw_arr_end(&jw);
    if (st != RT_OK) {
        RT_ERROR("agent", "job %lld attempt %lld: cannot prepare its ranks: %s", (long long)job,
                 (long long)attempt, err);
        rt_jw_kstr(&jw, RT_F_ERROR, err);
        proc_abort(ag, job, attempt, err);
    } else {
        RT_DEBUG("agent", "job %lld attempt %lld: %zu rank%s prepared", (long long)job,
                 (long long)attempt, rt_json_len(ranks), rt_json_len(ranks) == 1 ? "" : "s");
    }
    rt_jw_obj_end(&jw);
    agent_send(ag, &jw);
}

/* ---- start ---------------------------------------------------------------------- */

static void on_output(evutil_socket_t fd, short what, void *arg)
{
    worker *w = arg;
    (void)what;
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
        log_write(w, buf, (size_t)n);
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    w->out_eof = true;
    event_del(w->out_ev);
}

#define PROGRESS_RATE 10 /* step reports relayed per second per rank (bursts of twice) */
#define EPOCH_RATE 20    /* epoch lines per second per rank (bursts of 100) */
#define EPOCH_BURST 100
#define RESULTS_MAX 1000 /* result lines per rank (rt_report_result: a few) */
#define BACKLOG_MAX (8u << 20) /* bytes queued for the coordinator past which progress waits */

/* The progress frame for one relayed line (data), or, with data NULL, one
 * that only says how many lines were dropped ({"kind":"dropped"}): the
 * coordinator puts the count in the job's events. */
static void send_progress(worker *w, const rt_json *data)
{
    rt_jw jw;
    rank_frame_begin(&jw, RT_MSG_PROGRESS, w);
    rt_jw_key(&jw, RT_F_DATA);
    if (data)
        rt_jw_value(&jw, data);
    else
        rt_jw_raw(&jw, "{\"kind\":\"dropped\"}");
    if (w->ctl_unreported)
        rt_jw_kint(&jw, "dropped", w->ctl_unreported);
    rt_jw_obj_end(&jw);
    if (agent_send(w->ag, &jw))
        w->ctl_unreported = 0;
}

void progress_flush_dropped(worker *w)
{
    if (w->ctl_unreported)
        send_progress(w, NULL);
}


/* One read of the rank's control lines, each relayed as progress; false
 * when nothing more is there now (or ever). */
static bool control_read(worker *w)
{
    ssize_t n = read(w->ctl_fd, w->ctl_buf + w->ctl_fill, sizeof w->ctl_buf - 1 - w->ctl_fill);
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return false;
        event_del(w->ctl_ev);
        return false;
    }
    w->ctl_fill += (size_t)n;
    char *start = w->ctl_buf, *nl;
    /* every kind is bounded (a program printing them in a tight loop must
     * not flood the coordinator: 319,110 epoch lines in 10 s once made the
     * agent 670 MB and the coordinator 50 s late): step reports at
     * PROGRESS_RATE, epochs at EPOCH_RATE with bursts of EPOCH_BURST, results
     * up to RESULTS_MAX; and nothing while the link to the coordinator has
     * BACKLOG_MAX queued.  What is dropped is counted for the job's events. */
    const int64_t now = rt_now_ns();
    const double dt = w->ctl_refill_ns ? (double)(now - w->ctl_refill_ns) / 1e9 : 1e9;
    w->ctl_tokens += dt * PROGRESS_RATE;
    if (w->ctl_tokens > 2 * PROGRESS_RATE)
        w->ctl_tokens = 2 * PROGRESS_RATE;
    w->ctl_etokens += dt * EPOCH_RATE;
    if (w->ctl_etokens > EPOCH_BURST)
        w->ctl_etokens = EPOCH_BURST;
    w->ctl_refill_ns = now;
    const bool backlog = w->ag->bev &&
                         evbuffer_get_length(bufferevent_get_output(w->ag->bev)) > BACKLOG_MAX;
    while ((nl = memchr(start, '\n', w->ctl_fill - (size_t)(start - w->ctl_buf)))) {
        rt_json *data = NULL;
        char err[RT_ERR_LEN];
        rt_status ps = rt_json_parse(start, (size_t)(nl - start), &data, err);
        const char *kind = ps == RT_OK ? rt_json_get_str(data, "kind") : NULL;
        const bool result = kind && strcmp(kind, "result") == 0;
        double *bucket = kind && strcmp(kind, "epoch") == 0 ? &w->ctl_etokens : &w->ctl_tokens;
        /* results are counted (every one seen), the others take a token */
        const bool within = result ? w->ctl_results++ < RESULTS_MAX : *bucket >= 1;
        if (ps == RT_OK && rt_json_type_of(data) == RT_JSON_OBJECT && (!within || backlog)) {
            w->ctl_unreported++;
            if (w->ctl_dropped++ == 0)
                RT_WARN("agent", "job %lld rank %d reports progress faster than %d step and %d "
                                 "epoch lines a second%s: the excess is dropped",
                        (long long)w->job, w->rank, PROGRESS_RATE, EPOCH_RATE,
                        backlog ? " (or faster than the coordinator takes them)" : "");
        } else if (ps == RT_OK && rt_json_type_of(data) == RT_JSON_OBJECT) {
            if (!result)
                *bucket -= 1;
            send_progress(w, data);
        } else if (w->ctl_dropped++ < 5) {
            RT_WARN("agent", "job %lld rank %d sent a malformed progress line: %s",
                    (long long)w->job, w->rank, ps == RT_OK ? "not a JSON object" : err);
        }
        rt_json_free(data);
        start = nl + 1;
    }
    size_t rest = w->ctl_fill - (size_t)(start - w->ctl_buf);
    memmove(w->ctl_buf, start, rest);
    w->ctl_fill = rest;
    if (w->ctl_fill == sizeof w->ctl_buf - 1)
        w->ctl_fill = 0; /* a line longer than the buffer: dropped */
    return true;
}

static void on_control(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    control_read(arg);
}


static rt_status spawn(agentd *ag, worker *w, const rt_json *m, char *err)
{
    pid_t pid = -1;
    int out_fd = -1, ctl_fd = -1;
    rt_status st = proc_launch(ag, w, m, &pid, &out_fd, &ctl_fd, err);
    if (st != RT_OK)
        return st;
    setpgid(pid, pid); /* also here: no race with a kill before the child ran */
    close(w->listen_fd); /* the worker owns it now */
    w->listen_fd = -1;
    w->pid = pid;
    w->started = true;
    if (ag->blas_set[0] && !rt_json_get(rt_json_get(m, RT_F_ENV), "OPENBLAS_CORETYPE")) {
        char line[200]; /* the rank's log says what rank_env chose for it */
        snprintf(line, sizeof line, "[agent] OPENBLAS_CORETYPE=%s (OpenBLAS alone picks worse "
                 "kernels on this CPU; set it in the job to choose)\n", ag->blas_set);
        log_write(w, line, strlen(line));
    }
    w->out_fd = out_fd;
    w->ctl_fd = ctl_fd;
    fcntl(w->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(w->ctl_fd, F_SETFL, O_NONBLOCK);
    w->out_ev = event_new(ag->base, w->out_fd, EV_READ | EV_PERSIST, on_output, w);
    w->ctl_ev = event_new(ag->base, w->ctl_fd, EV_READ | EV_PERSIST, on_control, w);
    event_add(w->out_ev, NULL);
    event_add(w->ctl_ev, NULL);
    return RT_OK;
}

void proc_start(agentd *ag, const rt_json *m)
{
    int64_t job = 0, attempt = 0;
    rt_json_get_int(m, RT_F_JOB, &job);
    rt_json_get_int(m, RT_F_ATTEMPT, &attempt);
    for (worker *w = ag->workers; w; w = w->next) {
        if (w->job != job || w->attempt != attempt || w->started || w->reported)
            continue;
        char err[RT_ERR_LEN];
        rt_status st = spawn(ag, w, m, err);
        if (st != RT_OK) {
            RT_ERROR("agent", "job %lld rank %d: %s", (long long)job, w->rank, err);
            w->reaped = w->out_eof = true;
            w->code = 127;
            snprintf(w->tail[0], TAIL_LINE_LEN, "[agent] %s", err);
            snprintf(w->why, sizeof w->why, "%s", err);
            w->tail_count = 1;
            w->tail_next = 1;
            report_exit(ag, w);
            continue;
        }
        rt_jw jw;
        rank_frame_begin(&jw, RT_MSG_STARTED, w); /* w's job and attempt: these */
        rt_jw_kint(&jw, RT_F_PID, w->pid);
        if (w->gpu[0])
            rt_jw_kstr(&jw, RT_F_GPU, w->gpu);
        rt_jw_obj_end(&jw);
        agent_send(ag, &jw);
        RT_INFO("agent", "job %lld attempt %lld: rank %d started (pid %d, as %s%s%s)",
                (long long)job, (long long)attempt, w->rank, (int)w->pid, w->who,
                w->gpu[0] ? ", GPU " : "", w->gpu);
    }
}

/* ---- stop ----------------------------------------------------------------------- */

static void terminate(agentd *ag, worker *w, const char *reason)
{
    if (w->reaped || w->reported)
        return;
    if (!w->started) { /* prepared only: nothing runs, release the socket */
        w->reaped = w->out_eof = true;
        w->sig = SIGTERM;
        report_exit(ag, w);
        return;
    }
    if (w->kill_at_ns)
        return;
    char line[300];
    snprintf(line, sizeof line, "[agent] stopping rank %d: %s\n", w->rank, reason);
    log_write(w, line, strlen(line));
    kill(-w->pid, SIGTERM);
    w->kill_at_ns = rt_now_ns() + ag->cfg.kill_grace_us * 1000;
}

void proc_abort(agentd *ag, int64_t job, int64_t attempt, const char *reason)
{
    int n = 0;
    for (worker *w = ag->workers; w; w = w->next)
        n += w->job == job && w->attempt == attempt && !w->reported;
    if (n)
        RT_INFO("agent", "job %lld attempt %lld: stopping %d rank%s: %s", (long long)job,
                (long long)attempt, n, n == 1 ? "" : "s", reason);
    for (worker *w = ag->workers; w; w = w->next)
        if (w->job == job && w->attempt == attempt)
            terminate(ag, w, reason);
}

void proc_fail_job(agentd *ag, int64_t job, const char *why)
{
    for (worker *w = ag->workers; w; w = w->next)
        if (w->job == job && !w->reported) {
            snprintf(w->why, sizeof w->why, "%s", why);
            terminate(ag, w, why);
        }
}

void proc_stop_all(agentd *ag)
{
    for (worker *w = ag->workers; w; w = w->next)
        terminate(ag, w, "the agent is stopping");
}

void proc_reap(agentd *ag)
{
    for (;;) {
        int status = 0;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0)
            return;
        ident_reaped(ag, pid);
        for (worker *w = ag->workers; w; w = w->next) {
            if (w->pid != pid || w->reaped)
                continue;
            w->reaped = true;
            w->reaped_ns = rt_now_ns();
            w->code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
            w->sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
            kill(-pid, SIGKILL); /* whatever the worker left behind in its group */
            w->oom_kills = cg_oom_kills(w);
            cg_release(ag, w); /* and in its cgroup, wherever it went */
            break;
        }
    }
}

void proc_tick(agentd *ag)
{
    const int64_t now = rt_now_ns();
    for (worker *w = ag->workers, *next; w; w = next) {
        next = w->next;
        if (w->started && !w->reaped && w->kill_at_ns && now > w->kill_at_ns) {
            kill(-w->pid, SIGKILL);
            w->kill_at_ns = 0;
        }
        /* report once the output is drained, or a second after the reap (a
         * grandchild may hold the pipe open) */
        if (w->reaped && !w->reported && (w->out_eof || now - w->reaped_ns > 1000000000LL)) {
            if (!w->out_eof)
                on_output(w->out_fd, EV_READ, w); /* whatever is buffered */
            /* its last progress and its result go before its exit */
            for (int k = 0; k < 64 && w->ctl_fd >= 0 && control_read(w); k++) {
            }
            progress_flush_dropped(w); /* the job's events say how many were dropped */
            report_exit(ag, w);
        }
        if (w->reported) {
            unlink_worker(ag, w);
            worker_free(w);
        }
    }
}
