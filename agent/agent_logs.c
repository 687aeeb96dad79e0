/* agent_logs.c — each rank's output: appended to
 * log_dir/job-J/attempt-A/rank-R.log, rotated past log_max_bytes (rank-R.log.1
 * ... .log_keep), the last TAIL_LINES lines kept in memory for the failure
 * report, and streamed to the coordinator on request (from the start of the
 * current file; with follow, until the rank has exited and everything is
 * sent; with lines — a stream of every rank — whole lines only, so that
 * the coordinator can interleave ranks line by line; the rank is the
 * message's field, never text in the data).
 *
 * The folders are the agent's, but a job's ranks may write there (they run
 * as the agent's user until jobs have users of their own), so no file in
 * them is trusted: every open refuses a symbolic link (O_NOFOLLOW) and
 * anything but a regular file with one link (a hard link to the agent's
 * token would otherwise be read back by `ringtrain logs`, or appended to);
 * a rotated file larger than a rotation makes is not streamed; and a
 * stream moves to another file at most log_keep + 1 times a tick, so no
 * arrangement of names keeps the event loop (and SIGTERM) waiting. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "rt_file.h"
#include "rt_log.h"
#include "rt_time.h"

#define CHUNK 49152 /* raw bytes per frame: far below the 1 MiB limit once escaped */

/* Opens a log file as one the agent wrote: -1 (errno set) for a symbolic
 * link, a hard-linked file, anything not a regular file, or (max > 0) one
 * larger than max bytes. */
static int open_log(const char *path, int flags, int64_t max)
{
    int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0640);
    if (fd < 0)
        return -1; /* ELOOP for a link */
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
        (max > 0 && st.st_size > max)) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

/* The largest a kept file can be: what rotation leaves (a write may pass
 * the limit by up to one read of a rank's output). */
static int64_t kept_max(const agentd *ag) { return (int64_t)ag->cfg.log_max_bytes + (1 << 20); }

static void log_path(const agentd *ag, int64_t job, int64_t attempt, int rank, char *out,
                     size_t len)
{
    snprintf(out, len, "%s/job-%lld/attempt-%lld/rank-%d.log", ag->cfg.log_dir, (long long)job,
             (long long)attempt, rank);
}

rt_status rank_log_create(worker *w, char *err)
{
    log_path(w->ag, w->job, w->attempt, w->rank, w->log_path, sizeof w->log_path);
    char dir[512];
    snprintf(dir, sizeof dir, "%s", w->log_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    rt_status st0 = slash ? rt_mkdirs(dir, err) : RT_OK;
    if (st0 != RT_OK)
        return st0;
    int fd = open_log(w->log_path, O_WRONLY | O_APPEND | O_CREAT, 0);
    w->log = fd >= 0 ? fdopen(fd, "a") : NULL;
    if (!w->log) {
        if (fd >= 0)
            close(fd);
        return rt_err(err, RT_ERR_IO, "cannot open %s: %s (a link or a linked file is refused)",
                      w->log_path, strerror(errno));
    }
    struct stat st;
    w->log_bytes = fstat(fileno(w->log), &st) == 0 ? (uint64_t)st.st_size : 0;
    return RT_OK;
}

static void rotate(worker *w)
{
    const agentd *ag = w->ag;
    fclose(w->log);
    char from[600], to[600];
    for (int64_t k = ag->cfg.log_keep - 1; k >= 1; k--) {
        snprintf(from, sizeof from, "%s.%lld", w->log_path, (long long)k);
        snprintf(to, sizeof to, "%s.%lld", w->log_path, (long long)k + 1);
        rename(from, to);
    }
    if (ag->cfg.log_keep > 0) {
        snprintf(to, sizeof to, "%s.1", w->log_path);
        rename(w->log_path, to);
    }
    int fd = open_log(w->log_path, O_WRONLY | O_CREAT | (ag->cfg.log_keep > 0 ? O_APPEND : O_TRUNC), 0);
    w->log = fd >= 0 ? fdopen(fd, ag->cfg.log_keep > 0 ? "a" : "w") : NULL;
    if (!w->log) {
        if (fd >= 0)
            close(fd);
        RT_WARN("agent", "job %lld rank %d: cannot reopen %s after rotating it (%s); its further "
                "output is kept only in memory", (long long)w->job, w->rank, w->log_path,
                strerror(errno));
    }
    w->log_bytes = 0;
}

static void tail_push(worker *w, const char *line, size_t n)
{
    if (n >= TAIL_LINE_LEN)
        n = TAIL_LINE_LEN - 1;
    memcpy(w->tail[w->tail_next], line, n);
    w->tail[w->tail_next][n] = '\0';
    w->tail_next = (w->tail_next + 1) % TAIL_LINES;
    if (w->tail_count < TAIL_LINES)
        w->tail_count++;
}

void log_write(worker *w, const char *data, size_t n)
{
    if (w->log) {
        fwrite(data, 1, n, w->log);
        fflush(w->log); /* followers read the file */
        w->log_bytes += n;
        if (w->log_bytes > w->ag->cfg.log_max_bytes) {
            /* followers take what they have not read yet before the file
             * moves: output faster than the tick then loses nothing */
            logs_pump(w->ag);
            rotate(w);
        }
    }
    /* the last lines, for the failure report */
    for (size_t i = 0; i < n; i++) {
        if (data[i] == '\n') {
            tail_push(w, w->partial, w->partial_len);
            w->partial_len = 0;
        } else if (w->partial_len < TAIL_LINE_LEN - 1) {
            w->partial[w->partial_len++] = data[i];
        }
    }
}

void log_tail_json(const worker *w, rt_jw *jw)
{
    rt_jw_arr(jw);
    int first = (w->tail_next - w->tail_count + TAIL_LINES) % TAIL_LINES;
    for (int i = 0; i < w->tail_count; i++)
        rt_jw_str(jw, w->tail[(first + i) % TAIL_LINES]);
    if (w->partial_len)
        rt_jw_strn(jw, w->partial, w->partial_len);
    rt_jw_arr_end(jw);
}

/* ---- streams ----------------------------------------------------------------- */

static void send_chunk(agentd *ag, log_req *r, const char *data, size_t n, bool eof,
                       const char *error)
{
    rt_jw jw;
    rt_jw_init(&jw);
    rt_jw_obj(&jw);
    rt_jw_kstr(&jw, RT_F_TYPE, rt_msg_name(RT_MSG_LOG_DATA));
    rt_jw_kint(&jw, RT_F_REQ, r->req);
    rt_jw_kint(&jw, RT_F_RANK, r->rank);
    if (n)
        rt_jw_key(&jw, RT_F_DATA), rt_jw_strn(&jw, data, n);
    if (error)
        rt_jw_kstr(&jw, RT_F_ERROR, error);
    rt_jw_kbool(&jw, RT_F_EOF, eof);
    rt_jw_obj_end(&jw);
    agent_send(ag, &jw);
}

static void remove_req(agentd *ag, log_req *r)
{
    for (log_req **p = &ag->logs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    if (r->fd >= 0)
        close(r->fd);
    free(r);
}

void logs_request(agentd *ag, const rt_json *m)
{
    log_req *r = calloc(1, sizeof *r);
    if (!r)
        return;
    int64_t rank = 0;
    rt_json_get_int(m, RT_F_REQ, &r->req);
    rt_json_get_int(m, RT_F_JOB, &r->job);
    rt_json_get_int(m, RT_F_ATTEMPT, &r->attempt);
    rt_json_get_int(m, RT_F_RANK, &rank);
    r->rank = (int)rank;
    r->follow = rt_json_bool(rt_json_get(m, RT_F_FOLLOW), false);
    r->lines = rt_json_bool(rt_json_get(m, RT_F_LINES), false);
    if (!rt_json_get_int(m, RT_F_SKIP, &r->skip) || r->skip < 0)
        r->skip = 0;
    log_path(ag, r->job, r->attempt, r->rank, r->path, sizeof r->path);
    /* from the oldest rotated file kept, so that a stream shows all there is */
    r->fd = -1;
    for (int64_t k = ag->cfg.log_keep; k >= 1 && r->fd < 0; k--) {
        char old[600];
        snprintf(old, sizeof old, "%s.%lld", r->path, (long long)k);
        r->fd = open_log(old, O_RDONLY, kept_max(ag));
    }
    if (r->fd < 0)
        r->fd = open_log(r->path, O_RDONLY, 0);
    r->next = ag->logs;
    ag->logs = r;
    RT_DEBUG("agent", "log stream %lld: job %lld attempt %lld rank %d%s", (long long)r->req,
             (long long)r->job, (long long)r->attempt, r->rank, r->follow ? ", following" : "");
    if (r->fd < 0) {
        char why[700];
        snprintf(why, sizeof why, "no output of rank %d here (%s)", r->rank, strerror(errno));
        send_chunk(ag, r, NULL, 0, true, why);
        remove_req(ag, r);
        return;
    }
    logs_pump(ag);
}

void logs_cancel(agentd *ag, int64_t req)
{
    for (log_req *r = ag->logs; r; r = r->next)
        if (r->req == req) {
            remove_req(ag, r);
            return;
        }
}

void logs_drop_all(agentd *ag)
{
    while (ag->logs)
        remove_req(ag, ag->logs);
}

static bool rank_running(agentd *ag, const log_req *r)
{
    for (worker *w = ag->workers; w; w = w->next)
        if (w->job == r->job && w->attempt == r->attempt && w->rank == r->rank)
            return !w->reported;
    return false;
}

/* Whole lines only (a stream of every rank): the coordinator interleaves
 * the ranks line by line and says whose each is from the message's rank. */
static void send_lines(agentd *ag, log_req *r, const char *data, size_t n, bool flush)
{
    char out[CHUNK * 2];
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (r->line_len < sizeof r->line - 2)
            r->line[r->line_len++] = data[i];
        if (data[i] == '\n' || r->line_len >= sizeof r->line - 2) {
            if (r->line[r->line_len - 1] != '\n')
                r->line[r->line_len++] = '\n';
            if (r->skip > 0) { /* the follower has this line from before */
                r->skip--;
                r->line_len = 0;
                continue;
            }
            if (o + r->line_len > sizeof out) {
                send_chunk(ag, r, out, o, false, NULL);
                o = 0;
            }
            memcpy(out + o, r->line, r->line_len);
            o += r->line_len;
            r->line_len = 0;
        }
    }
    if (flush && r->line_len) {
        memcpy(out + o, r->line, r->line_len);
        o += r->line_len;
        out[o++] = '\n';
        r->line_len = 0;
    }
    if (o)
        send_chunk(ag, r, out, o, false, NULL);
}

/* The file written after the one r has read to its end, when that one has
 * been rotated: path.(j-1) when it is path.j now (path itself after path.1);
 * when it was rotated out of the kept files, the oldest kept one. -1 when
 * r's file is still the current one. */
static int next_file(agentd *ag, log_req *r)
{
    struct stat mine, cur;
    if (fstat(r->fd, &mine) != 0 || lstat(r->path, &cur) != 0 || !S_ISREG(cur.st_mode))
        return -1;
    if (mine.st_ino == cur.st_ino) {
        /* log_keep = 0 rotates by truncating in place: start over */
        if (lseek(r->fd, 0, SEEK_CUR) > cur.st_size)
            lseek(r->fd, 0, SEEK_SET);
        return -1;
    }
    char p[600];
    int64_t found = -1, oldest = 0;
    for (int64_t k = 1; k <= ag->cfg.log_keep; k++) {
        struct stat sb;
        snprintf(p, sizeof p, "%s.%lld", r->path, (long long)k);
        if (lstat(p, &sb) != 0 || !S_ISREG(sb.st_mode))
            break;
        oldest = k;
        if (sb.st_ino == mine.st_ino)
            found = k;
    }
    int64_t want = found > 0 ? found - 1 : oldest;
    if (want == 0)
        snprintf(p, sizeof p, "%s", r->path);
    else
        snprintf(p, sizeof p, "%s.%lld", r->path, (long long)want);
    return open_log(p, O_RDONLY, want == 0 ? 0 : kept_max(ag));
}

void logs_pump(agentd *ag)
{
    int switches = 0; /* of the request being pumped: bounded, whatever the names */
    const log_req *cur = NULL;
    for (log_req *r = ag->logs, *next; r; r = next) {
        next = r->next;
        if (r != cur) {
            cur = r;
            switches = 0;
        }
        char buf[CHUNK];
        int rounds = 0;
        ssize_t n = 0;
        bool running = rank_running(ag, r);
        while (rounds++ < 8 && (n = read(r->fd, buf, sizeof buf)) > 0) {
            if (r->lines) {
                send_lines(ag, r, buf, (size_t)n, false);
                continue;
            }
            size_t drop = r->skip > 0 ? ((size_t)r->skip < (size_t)n ? (size_t)r->skip : (size_t)n) : 0;
            r->skip -= (int64_t)drop; /* bytes the follower has from before */
            if ((size_t)n > drop)
                send_chunk(ag, r, buf + drop, (size_t)n - drop, false, NULL);
        }
        if (n > 0)
            continue; /* more next tick: do not starve the event loop */
        /* at the end of the file: rotated under us (go on with the next
         * newer file), still growing, or done */
        int nfd = switches <= ag->cfg.log_keep ? next_file(ag, r) : -1;
        if (nfd >= 0) {
            close(r->fd);
            r->fd = nfd;
            next = r; /* read it now */
            switches++;
            continue;
        }
        if (switches > ag->cfg.log_keep)
            continue; /* the rest next tick */
        if (r->follow && running)
            continue;
        if (r->lines)
            send_lines(ag, r, NULL, 0, true);
        send_chunk(ag, r, NULL, 0, true, NULL);
        remove_req(ag, r);
    }
}

/* ---- retention ------------------------------------------------------------------ */

static double newest_mtime; /* nftw has no user pointer: the sweep's state */

static int note_mtime(const char *path, const struct stat *sb, int type, struct FTW *f)
{
    (void)path;
    (void)type;
    (void)f;
    double t = (double)sb->st_mtim.tv_sec + (double)sb->st_mtim.tv_nsec / 1e9;
    if (t > newest_mtime)
        newest_mtime = t;
    return 0;
}

static void sweep_dir(agentd *ag, const char *dir, const char *what, double now)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    const double keep_s = (double)ag->cfg.log_retention_us / 1e6;
    for (struct dirent *e; (e = readdir(d));) {
        char *end = NULL;
        if (strncmp(e->d_name, "job-", 4) != 0)
            continue;
        long long job = strtoll(e->d_name + 4, &end, 10);
        if (!end || *end || end == e->d_name + 4)
            continue;
        bool busy = false;
        for (worker *w = ag->workers; w && !busy; w = w->next)
            busy = w->job == job;
        if (busy)
            continue;
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        newest_mtime = 0;
        nftw(path, note_mtime, 16, FTW_PHYS);
        if (newest_mtime == 0 || now - newest_mtime < keep_s)
            continue;
        rt_remove_tree(path);
        RT_INFO("agent", "removed the %s of job %lld: last written %.0f s ago (log_retention %.0f s)",
                what, job, now - newest_mtime, keep_s);
    }
    closedir(d);
}

void logs_sweep(agentd *ag)
{
    if (ag->cfg.log_retention_us <= 0)
        return;
    int64_t every_ns = ag->cfg.log_retention_us * 1000 / 4;
    if (every_ns < 1000000000LL)
        every_ns = 1000000000LL;
    if (every_ns > 600000000000LL)
        every_ns = 600000000000LL;
    const int64_t now_ns = rt_now_ns();
    if (ag->sweep_ns && now_ns - ag->sweep_ns < every_ns)
        return;
    ag->sweep_ns = now_ns;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    const double now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    sweep_dir(ag, ag->cfg.log_dir, "output", now);
    sweep_dir(ag, ag->cfg.work_dir, "work folder", now);
}
