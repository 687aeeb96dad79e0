/* cli_jobs.c — submitting and following jobs.
 *
 * Following an exec job prints every rank's output as it comes, each line
 * led by "[rank] " (like horovodrun), across restarts, and ends with the
 * job's outcome: on failure one line naming the first failing rank, its host
 * and its exit code or signal, and the CLI exits with that code (128+signal
 * for a signal).  Following a training job shows a live progress line on a
 * terminal (epoch, step, rate, ETA, latest metrics) and plain lines
 * otherwise.  Ctrl-C while following cancels the job for `exec` and `run`
 * (the job is the command, as with horovodrun) and detaches for
 * `submit --follow` (the job keeps running; `logs --follow` re-attaches). */
#include <ctype.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "rt_json.h"
#include "rt_schemas.h"
#include "rt_time.h"

/* The signal that interrupted a follower (0: none). SIGTERM and SIGHUP
 * count as Ctrl-C does: `timeout`, a batch system's kill or a closed
 * terminal cancel an exec or `run` job (as srun's and mpirun's do theirs)
 * and end `submit --follow`'s watch, saying so, rather than killing the
 * CLI silently (`run` then said nothing of the folder it kept). */
static volatile sig_atomic_t interrupted;
static void on_interrupt_signal(int sig)
{
    if (!interrupted)
        interrupted = sig;
}

void cli_catch_interrupts(void)
{
    struct sigaction sa = {.sa_handler = on_interrupt_signal};
    sigemptyset(&sa.sa_mask);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction old;
        /* an ignored signal (nohup) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN && sigs[i] != SIGINT)
            continue;
        sigaction(sigs[i], &sa, NULL);
    }
}

int cli_interrupted(void) { return interrupted; }

/* The exit code of a follower a signal ended: the shell's 128 + signal. */
static int interrupted_rc(void) { return 128 + (interrupted ? (int)interrupted : SIGINT); }

static bool terminal(const char *state) { return rt_job_state_terminal(rt_job_state_parse(state)); }

/* The job's document; NULL with *lost set when the coordinator could not
 * be reached (it may be restarting), NULL alone when it answered no. */
static rt_json *get_job(const cli_conn *c, int64_t id, bool *lost, char *err)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    http_resp r;
    *lost = false;
    if (http_request(c, "GET", path, NULL, &r, err) != RT_OK) {
        *lost = true;
        return NULL;
    }
    rt_json *j = NULL;
    if (r.status != 200) {
        char buf[512];
        rt_err(err, RT_ERR_NOTFOUND, "%s", http_error_text(&r, buf, sizeof buf));
    } else {
        rt_json_parse(r.body, r.len, &j, err);
    }
    free(r.body);
    return j;
}

/* Whether job id has ended (false when that cannot be told). */
static bool job_ended(const cli_conn *c, int64_t id)
{
    char err[RT_ERR_LEN];
    bool lost;
    rt_json *d = get_job(c, id, &lost, err);
    bool ended = d && terminal(rt_json_str(rt_json_get(rt_json_get(d, "job"), "state"), ""));
    rt_json_free(d);
    return ended;
}

/* What a follower has printed of a stream, so that after a reconnect it
 * asks only for the rest: complete lines per rank of an all-ranks stream,
 * or bytes of one rank's — counted from the NDJSON objects' rank field
 * (the coordinator's and agents' notes are objects without one), never
 * from the text: a note counted as a rank's line made a resumed stream
 * skip a real one. */
typedef struct stream_pos {
    bool prefixed; /* every rank: lines printed led by "[R] " */
    int64_t bytes;
    int64_t *lines;
    int nranks;
    rt_buf pend; /* an NDJSON line not complete yet */
} stream_pos;

static void pos_reset(stream_pos *p, bool prefixed)
{
    free(p->lines);
    free(p->pend.p);
    memset(p, 0, sizeof *p);
    p->prefixed = prefixed;
}

static void pos_count(stream_pos *p, int64_t rank, const char *data, size_t n)
{
    p->bytes += (int64_t)n;
    if (!p->prefixed || rank < 0 || rank >= 1000000)
        return;
    if (rank >= p->nranks) {
        int want = (int)rank + 16;
        int64_t *l = realloc(p->lines, (size_t)want * sizeof *l);
        if (!l)
            return;
        memset(l + p->nranks, 0, (size_t)(want - p->nranks) * sizeof *l);
        p->lines = l;
        p->nranks = want;
    }
    for (size_t i = 0; i < n; i++)
        p->lines[rank] += data[i] == '\n';
}

/* One object of the stream: a rank's data, or a note (rank -1) */
typedef int (*stream_emit)(void *user, int64_t rank, const char *text, size_t n);

/* Feed NDJSON bytes; each whole line's object to emit (nonzero: stop). */
static int ndjson_feed(stream_pos *p, const char *d, size_t n, stream_emit emit, void *user)
{
    for (size_t i = 0; i < n; i++) {
        if (d[i] != '\n') {
            size_t k = i; /* the rest of the line at once */
            while (k < n && d[k] != '\n')
                k++;
            if (!rt_buf_add(&p->pend, d + i, k - i))
                return 1;
            i = k - 1;
            continue;
        }
        rt_json *o = NULL;
        char err[RT_ERR_LEN];
        int stop = 0;
        if (p->pend.len && rt_json_parse(p->pend.p, p->pend.len, &o, err) == RT_OK) {
            const char *data = rt_json_get_str(o, RT_F_DATA), *error = rt_json_get_str(o, "error");
            int64_t rank = -1;
            rt_json_get_int(o, RT_F_RANK, &rank);
            char note[600];
            if (data) {
                pos_count(p, rank, data, strlen(data));
                stop = emit(user, rank, data, strlen(data));
            } else if (error) {
                int k = snprintf(note, sizeof note, "[agent %s: %s]\n",
                                 rt_json_str(rt_json_get(o, "agent"), "?"), error);
                stop = emit(user, -1, note, (size_t)k < sizeof note ? (size_t)k : sizeof note - 1);
            }
        }
        rt_json_free(o);
        p->pend.len = 0;
        if (stop)
            return stop;
    }
    return 0;
}

/* A rank's data as a person reads it: "[R] " before each line of an
 * all-ranks stream. */
static bool write_lines(FILE *f, bool prefixed, int64_t rank, const char *t, size_t n)
{
    if (!prefixed || rank < 0)
        return cli_write_out(f, t, n);
    bool ok = true;
    for (size_t i = 0; i < n && ok;) {
        size_t k = i;
        while (k < n && t[k] != '\n')
            k++;
        char tag[32];
        int tl = snprintf(tag, sizeof tag, "[%lld] ", (long long)rank);
        ok = cli_write_out(f, tag, (size_t)tl) && cli_write_out(f, t + i, k - i + (k < n));
        i = k + 1;
    }
    return ok;
}

/* "&skip=..." for the stream's next request ("" when nothing was seen). */
static char *pos_query(const stream_pos *p)
{
    size_t cap = 32 + (size_t)p->nranks * 24, len = 0;
    char *q = malloc(cap);
    if (!q)
        return NULL;
    q[0] = '\0';
    if (!p->prefixed) {
        if (p->bytes > 0)
            snprintf(q, cap, "&skip=%lld", (long long)p->bytes);
        return q;
    }
    for (int r = 0; r < p->nranks; r++)
        if (p->lines[r] > 0)
            len += (size_t)snprintf(q + len, cap - len, "%s%d:%lld", len ? "," : "&skip=", r,
                                    (long long)p->lines[r]);
    return q;
}

/* stdout was closed (`ringtrain logs 3 | head`): stop as SIGPIPE would */
static volatile sig_atomic_t stdout_closed;

static int print_one(void *user, int64_t rank, const char *text, size_t n)
{
    const stream_pos *p = user;
    if (!write_lines(stdout, p->prefixed, rank, text, n) || fflush(stdout) != 0) {
        stdout_closed = 1;
        return 1;
    }
    return interrupted ? 1 : 0;
}

static int stream_out(void *user, const char *data, size_t n)
{
    return ndjson_feed(user, data, n, print_one, user);
}

/* Sleep *ms, then double it (0.2, 0.4, 0.8, 1.6 s, then 2 s). */
static void backoff(int *ms)
{
    struct timespec ts = {*ms / 1000, (long)(*ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
    *ms = *ms < 1000 ? *ms * 2 : 2000;
}

/* Wait, with backoff, until the coordinator answers again (it restarted)
 * or reconnect_timeout passes; true when it answers. */
static bool reconnect(const cli_conn *c, int64_t id, const char *why)
{
    fprintf(stderr, "ringtrain: lost the connection to the coordinator (%s); reconnecting for up "
                    "to %d s\n", why,
            c->reconnect_ms / 1000);
    const int64_t end = rt_now_ns() + (int64_t)c->reconnect_ms * 1000000;
    int backoff_ms = 200;
    while (!interrupted && rt_now_ns() < end) {
        backoff(&backoff_ms);
        char err[RT_ERR_LEN];
        bool lost;
        rt_json *d = get_job(c, id, &lost, err);
        if (d || !lost) {
            rt_json_free(d);
            fprintf(stderr, "ringtrain: reconnected\n");
            return true;
        }
    }
    return false;
}

/* Stream job id's output (rank < 0: every rank, lines led by "[R] ") from
 * where pos says, following or not, resuming after a coordinator restart.
 * RT_OK when the stream ended normally. */
static rt_status stream_logs(const cli_conn *c, int64_t id, int rank, int64_t attempt,
                             bool follow, stream_pos *pos, int *status, char *err)
{
    int64_t away_since = 0; /* when the agents were first found away (503) */
    int backoff_ms = 200;
    for (;;) {
        char *skip = pos_query(pos);
        size_t plen = 96 + (skip ? strlen(skip) : 0);
        char *path = malloc(plen);
        if (!skip || !path) {
            free(skip);
            free(path);
            return rt_err(err, RT_ERR_NOMEM, "out of memory");
        }
        char rs[24] = "all";
        if (rank >= 0)
            snprintf(rs, sizeof rs, "%d", rank);
        char att[32] = "";
        if (attempt > 0)
            snprintf(att, sizeof att, "&attempt=%lld", (long long)attempt);
        snprintf(path, plen, "/v1/jobs/%lld/logs?rank=%s&follow=%d&format=ndjson%s%s",
                 (long long)id, rs, follow, att, skip);
        free(skip);
        *status = 0;
        rt_status st = http_stream(c, path, stream_out, pos, &interrupted, status, err);
        free(path);
        /* a follower waits for agents that are away (503: they come back
         * after a coordinator restart) as long as for the coordinator */
        if (st != RT_OK && follow && *status == 503 && !interrupted && !stdout_closed) {
            const int64_t now = rt_now_ns();
            if (!away_since) {
                away_since = now;
                fprintf(stderr, "ringtrain: %s; waiting for up to %d s\n", err,
                        c->reconnect_ms / 1000);
            }
            if (now - away_since > (int64_t)c->reconnect_ms * 1000000 || job_ended(c, id))
                return st;
            backoff(&backoff_ms);
            continue;
        }
        /* an answer (200 that ended, or 404 and such) is final; a lost
         * connection is the coordinator going away */
        if (st == RT_OK || *status >= 300 || interrupted || stdout_closed)
            return st;
        away_since = 0;
        if (!reconnect(c, id, err))
            return st;
    }
}

/* A finished stream of every rank, printed in rank order: the agents answer
 * in any order, a reader wants rank 0's output first. */
typedef struct by_rank {
    rt_buf out;     /* "[R] " lines */
    stream_pos pos; /* the NDJSON decoder */
} by_rank;

static bool collect_add(by_rank *b, const char *data, size_t n)
{
    return rt_buf_add(&b->out, data, n);
}

/* each line of a rank led by "[R] " (a note as it is: it sorts last) */
static int collect_one(void *user, int64_t rank, const char *t, size_t n)
{
    by_rank *b = user;
    for (size_t i = 0; i < n;) {
        size_t k = i;
        while (k < n && t[k] != '\n')
            k++;
        char tag[32];
        int tl = rank >= 0 ? snprintf(tag, sizeof tag, "[%lld] ", (long long)rank) : 0;
        if (!collect_add(b, tag, (size_t)tl) || !collect_add(b, t + i, k - i) ||
            !collect_add(b, "\n", 1))
            return 1;
        i = k + 1;
    }
    return interrupted ? 1 : 0;
}

static int collect_out(void *user, const char *data, size_t n)
{
    by_rank *b = user;
    return ndjson_feed(&b->pos, data, n, collect_one, b);
}

typedef struct line_ref {
    long rank;
    size_t order, off, len;
} line_ref;

static int line_cmp(const void *a, const void *b)
{
    const line_ref *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static void print_by_rank(const rt_buf *b)
{
    size_t nl = 0;
    for (size_t i = 0; i < b->len; i++)
        nl += b->p[i] == '\n';
    line_ref *lines = calloc(nl + 1, sizeof *lines);
    if (!lines) {
        cli_write_out(stdout, b->p, b->len);
        return;
    }
    size_t k = 0, start = 0;
    for (size_t i = 0; i <= b->len; i++) {
        if (i < b->len && b->p[i] != '\n')
            continue;
        if (i > start || i < b->len) {
            long r = LONG_MAX; /* lines without a "[R] " tag (notes) last, in order */
            if (b->p[start] == '[' && start + 1 < b->len && isdigit((unsigned char)b->p[start + 1]))
                r = strtol(b->p + start + 1, NULL, 10);
            lines[k] = (line_ref){r, k, start, i - start + (i < b->len)};
            k++;
        }
        start = i + 1;
    }
    qsort(lines, k, sizeof *lines, line_cmp);
    for (size_t i = 0; i < k; i++)
        cli_write_out(stdout, b->p + lines[i].off, lines[i].len);
    free(lines);
}

int cli_logs(const cli_conn *c0, int64_t id, int rank, int64_t attempt, bool follow)
{
    if (!follow && rank < 0) {
        char path[128], err[RT_ERR_LEN];
        snprintf(path, sizeof path, "/v1/jobs/%lld/logs?rank=all&follow=0&format=ndjson",
                 (long long)id);
        if (attempt > 0)
            snprintf(path + strlen(path), sizeof path - strlen(path), "&attempt=%lld",
                     (long long)attempt);
        by_rank b = {0};
        pos_reset(&b.pos, true);
        int status = 0;
        rt_status st = http_stream(c0, path, collect_out, &b, &interrupted, &status, err);
        /* an answer cut short (seen rarely in CI under ASan, cause not found):
         * nothing was printed yet, so ask again, twice at most */
        for (int again = 0; again < 2 && st == RT_ERR_PROTO && status == 200 && !interrupted;
             again++) {
            b.out.len = 0;
            pos_reset(&b.pos, true);
            st = http_stream(c0, path, collect_out, &b, &interrupted, &status, err);
        }
        if (b.out.len)
            print_by_rank(&b.out);
        free(b.out.p);
        pos_reset(&b.pos, false);
        if (st != RT_OK) {
            fprintf(stderr, "ringtrain: %s\n", err);
            return status == 404 ? 3 : 1;
        }
        return 0;
    }
    cli_conn c = *c0;
    c.retry_ms = follow ? c.reconnect_ms : 0;
    stream_pos pos;
    memset(&pos, 0, sizeof pos);
    pos_reset(&pos, rank < 0);
    char err[RT_ERR_LEN];
    int status = 0;
    cli_catch_interrupts();
    rt_status st = stream_logs(&c, id, rank, attempt, follow, &pos, &status, err);
    pos_reset(&pos, false);
    if (stdout_closed)
        return 128 + SIGPIPE;
    if (st != RT_OK && !interrupted) {
        fprintf(stderr, "ringtrain: %s\n", err);
        return status == 404 ? 3 : 1;
    }
    return interrupted ? interrupted_rc() : 0;
}

/* " loss X val_loss Y" and the epoch's first three other val_ metrics
 * (val_exp_rmspe, val_accuracy, val_auc, ...: what the job computes). */
static int epoch_metrics(const rt_json *e, char *out, size_t len)
{
    int n = 0, shown = 0;
    out[0] = '\0';
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < rt_json_len(e) && (size_t)n < len; i++) {
            const char *k = rt_json_key_at(e, i);
            const rt_json *v = rt_json_value_at(e, i);
            bool head = !strcmp(k, RT_P_LOSS) || !strcmp(k, RT_P_VAL_LOSS);
            if (rt_json_type_of(v) != RT_JSON_NUMBER || (pass == 0) != head ||
                (!head && (strncmp(k, RT_P_VAL_PREFIX, 4) != 0 || ++shown > 3)))
                continue;
            n += snprintf(out + n, len - (size_t)n, " %s %.4f", k, rt_json_num(v, 0));
        }
    return (size_t)n < len ? n : (int)len - 1;
}

static void progress_line(const rt_json *p, const rt_json *last_epoch, bool tty, char *last,
                          size_t lastlen)
{
    if (!p)
        return;
    char line[512];
    int64_t epoch = 0, epochs = 0, step = 0, steps = 0;
    rt_json_get_int(p, "epoch", &epoch);
    rt_json_get_int(p, "epochs", &epochs);
    rt_json_get_int(p, "step", &step);
    rt_json_get_int(p, "steps", &steps);
    double rate = rt_json_num(rt_json_get(p, RT_P_STEPS_PER_S), 0);
    double frac = epochs > 0 && steps > 0
                      ? ((double)(epoch > 0 ? epoch - 1 : 0) + (double)step / (double)steps) / (double)epochs
                      : (steps > 0 ? (double)step / (double)steps : 0);
    double eta = rate > 0 && steps > 0
                     ? ((double)(epochs > 0 ? epochs : 1) * (double)steps * (1.0 - frac)) / rate
                     : -1;
    char bar[24];
    int fill = (int)(frac * 20 + 0.5);
    for (int i = 0; i < 20; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[20] = '\0';
    int n = snprintf(line, sizeof line, "epoch %lld/%lld step %lld/%lld [%s] %3.0f%% %.1f steps/s",
                     (long long)epoch, (long long)epochs, (long long)step, (long long)steps, bar,
                     100 * frac, rate);
    if (eta >= 0)
        n += snprintf(line + n, sizeof line - (size_t)n, " ETA %d:%02d", (int)eta / 60,
                      (int)eta % 60);
    /* mid-epoch (a step's report) the last finished epoch's metrics */
    const bool is_epoch = !strcmp(rt_json_str(rt_json_get(p, "kind"), ""), "epoch");
    n += epoch_metrics(is_epoch || !last_epoch ? p : last_epoch, line + n, sizeof line - (size_t)n);
    if (tty) { /* its metrics' names are the job's: escaped */
        printf("\r%-120s", cli_safe(line));
        fflush(stdout);
    } else if (strcmp(line, last) != 0 && (strcmp(rt_json_str(rt_json_get(p, "kind"), ""), "epoch") == 0)) {
        printf("%s\n", cli_safe(line));
        fflush(stdout);
    }
    snprintf(last, lastlen, "%s", line);
}

/* A finished training job's best epoch, from its metrics (the history). */
static void training_summary(const rt_json *d)
{
    const rt_json *ms = rt_json_get(d, "metrics");
    const rt_json *best = NULL;
    int64_t epochs = 0;
    for (size_t i = 0; i < rt_json_len(ms); i++) {
        const rt_json *e = rt_json_get(rt_json_at(ms, i), "data");
        rt_json_get_int(e, "epochs", &epochs);
        if (rt_json_bool(rt_json_get(e, "best"), false))
            best = e;
    }
    if (!best)
        return;
    int64_t be = 0;
    rt_json_get_int(best, "epoch", &be);
    char shown[300];
    epoch_metrics(best, shown, sizeof shown);
    printf("best epoch %lld of %lld:%s\n", (long long)be, (long long)epochs, cli_safe(shown));
    fflush(stdout);
}

/* Exit status for the outcome: 0, or the first failing rank's code. */
static int outcome(const rt_json *job, int64_t id, bool show_tail)
{
    const char *state = rt_json_str(rt_json_get(job, "state"), "?");
    const char *reason = rt_json_str(rt_json_get(job, "reason"), "");
    if (rt_job_state_parse(state) == RT_JS_SUCCEEDED) {
        fprintf(stderr, "ringtrain: job %lld succeeded\n", (long long)id);
        return 0;
    }
    fprintf(stderr, "ringtrain: job %lld %s: %s\n", (long long)id, cli_safe(state),
            cli_safe(reason));
    const rt_json *ff = rt_json_get(job, "first_failure");
    const rt_json *tail = rt_json_get(ff, "tail");
    size_t nt = rt_json_len(tail);
    if (show_tail && nt > 0) { /* the failing rank's last words */
        int64_t fr = -1;
        rt_json_get_int(ff, "rank", &fr);
        fprintf(stderr, "ringtrain: the last lines of rank %lld:\n", (long long)fr);
        for (size_t i = nt > 10 ? nt - 10 : 0; i < nt; i++)
            fprintf(stderr, "  %s\n", cli_safe(rt_json_str(rt_json_at(tail, i), "")));
    }
    int64_t code = 0, sig = 0;
    rt_json_get_int(ff, "exit_code", &code);
    rt_json_get_int(ff, "signal", &sig);
    if (sig > 0)
        return 128 + (int)sig;
    if (code > 0 && code < 256)
        return (int)code;
    return 1;
}

/* Off a terminal, one line per epoch: every epoch of the current attempt
 * in the job's metrics after *printed (a fast job finishes several epochs
 * between two polls); a restarted attempt starts again. */
static void epoch_lines(const rt_json *d, int64_t attempt, int64_t *printed, int64_t *of,
                        char *last, size_t lastlen)
{
    if (*of != attempt) {
        *of = attempt;
        *printed = 0;
    }
    const rt_json *ms = rt_json_get(d, "metrics");
    for (size_t i = 0; i < rt_json_len(ms); i++) {
        const rt_json *m = rt_json_at(ms, i), *e = rt_json_get(m, "data");
        int64_t att = 0, epoch = 0;
        rt_json_get_int(m, "attempt", &att);
        rt_json_get_int(e, "epoch", &epoch);
        if (att == attempt && epoch > *printed) {
            progress_line(e, NULL, false, last, lastlen);
            *printed = epoch;
        }
    }
}

/* A follower of one job: what it has said and printed so far. */
typedef struct follower {
    cli_conn conn;
    int64_t id;
    bool exec_output, cancel_on_interrupt, tty;
    int64_t announced;           /* the last attempt whose start was said */
    int64_t streamed;            /* the last attempt whose output was streamed whole */
    int64_t pos_attempt;         /* the attempt pos counts lines of */
    int64_t printed, printed_of; /* epoch lines printed (off a terminal), of which attempt */
    bool cancelled, complained;
    int64_t events_seen;   /* a sweep: its events looked at */
    int64_t warnings_seen; /* a training job: its events looked at for warnings */
    stream_pos pos;
    char last[512]; /* the progress line last printed */
} follower;

/* Ctrl-C: detach (submit --follow) or cancel the job once (exec, run).
 * True when the follower is done (rc set). */
static bool on_interrupt(follower *f, int *rc)
{
    if (!interrupted)
        return false;
    if (!f->cancel_on_interrupt) {
        long long id = (long long)f->id;
        fprintf(stderr,
                "\nringtrain: detached; job %lld keeps running (`ringtrain status %lld`, "
                "`ringtrain logs %lld --follow` to watch it, `ringtrain cancel %lld` to stop it)\n",
                id, id, id, id);
        *rc = interrupted_rc();
        return true;
    }
    if (!f->cancelled) {
        char path[64], err[RT_ERR_LEN];
        snprintf(path, sizeof path, "/v1/jobs/%lld/cancel", (long long)f->id);
        http_resp r = {0};
        const bool sent = http_request(&f->conn, "POST", path, NULL, &r, err) == RT_OK;
        const char *how = interrupted == SIGINT ? "interrupted" : strsignal(interrupted);
        if (sent && r.status / 100 == 2)
            fprintf(stderr, "\nringtrain: %s: job %lld cancelled\n", how, (long long)f->id);
        else
            fprintf(stderr, "\nringtrain: %s: cancelling job %lld: %s\n", how, (long long)f->id,
                    sent ? cli_safe(r.body ? r.body : "") : err);
        free(r.body);
        f->cancelled = true;
    }
    return false;
}

/* Why attempt `attempt` ended, from the job's attempt records ("" when
 * not recorded yet). The job's own reason is no help: a new attempt clears it. */
static const char *attempt_reason(const rt_json *d, int64_t attempt)
{
    const rt_json *arr = rt_json_get(d, "attempts");
    for (size_t i = rt_json_len(arr); i-- > 0;) {
        int64_t a = 0;
        if (rt_json_get_int(rt_json_at(arr, i), "attempt", &a) && a == attempt)
            return rt_json_str(rt_json_get(rt_json_at(arr, i), "reason"), "");
    }
    return "";
}

/* A restarted attempt is said once, with why the one before ended; an exec
 * job's output starts over. */
static void on_attempt(follower *f, const rt_json *d, const rt_json *job, int64_t attempt,
                       const char *state)
{
    if (attempt > f->announced && attempt > 1 && !terminal(state)) {
        const char *why = attempt_reason(d, attempt - 1);
        if (*why)
            fprintf(stderr, "ringtrain: job %lld attempt %lld: attempt %lld ended: %s\n",
                    (long long)f->id, (long long)attempt, (long long)attempt - 1, cli_safe(why));
        else
            fprintf(stderr, "ringtrain: job %lld attempt %lld\n", (long long)f->id,
                    (long long)attempt);
    }
    f->announced = attempt > f->announced ? attempt : f->announced;
    if (f->exec_output && attempt != f->pos_attempt) {
        pos_reset(&f->pos, true);
        f->pos_attempt = attempt;
    }
}

/* An exec job's output, running (followed) or ended (what is left): 0 to
 * look at the job again, 1 when it ended (its state is to be read again),
 * -1 when nobody reads our output (rc set). */
static int stream_attempt(follower *f, int64_t attempt, bool ended, int *rc)
{
    char err[RT_ERR_LEN];
    int status = 0;
    rt_status st = stream_logs(&f->conn, f->id, -1, 0, !ended, &f->pos, &status, err);
    if (stdout_closed) { /* nobody reads us: leave the job alone */
        *rc = 128 + SIGPIPE;
        return -1;
    }
    if (st == RT_OK || ended)
        f->streamed = attempt;
    if (st != RT_OK && !interrupted && (ended || !f->complained))
        fprintf(stderr, "ringtrain: the output of job %lld is incomplete: %s\n", (long long)f->id,
                err);
    if (ended)
        return 1;
    if (st != RT_OK && !interrupted) { /* e.g. its agent is reconnecting */
        f->complained = true;
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* A training job's progress: the step line on a terminal, else one line
 * per finished epoch, and its ranks' warnings; a sweep's: a line per trial
 * event. */
static void show_progress(follower *f, const rt_json *d, const rt_json *job, int64_t attempt)
{
    if (!strcmp(rt_json_str(rt_json_get(job, "type"), ""), "sweep")) {
        cli_sweep_events(d, &f->events_seen);
        return;
    }
    cli_show_warnings(d, f->id, &f->warnings_seen, f->tty && f->last[0]);
    if (f->tty)
        progress_line(rt_json_get(job, "progress"), rt_json_get(job, "last_epoch"), f->tty, f->last,
                      sizeof f->last);
    else
        epoch_lines(d, attempt, &f->printed, &f->printed_of, f->last, sizeof f->last);
}

/* The job ended: a training job's last line and summary, then the outcome. */
static int finish(follower *f, const rt_json *d, const rt_json *job, int64_t attempt)
{
    if (!f->exec_output) {
        show_progress(f, d, job, attempt);
        if (f->tty && f->last[0])
            printf("\n");
        training_summary(d);
        cli_show_sweep(d);
    }
    int rc = outcome(job, f->id, !f->exec_output);
    return f->cancelled ? interrupted_rc() : rc;
}

static int follow(const cli_conn *c0, int64_t id, bool exec_output, bool cancel_on_interrupt)
{
    follower f = {.conn = *c0,
                  .id = id,
                  .exec_output = exec_output,
                  .cancel_on_interrupt = cancel_on_interrupt,
                  .tty = isatty(STDOUT_FILENO)};
    f.conn.retry_ms = 0; /* get_job failures go through reconnect() */
    pos_reset(&f.pos, true);
    char err[RT_ERR_LEN];
    int rc = 1;
    for (;;) {
        if (on_interrupt(&f, &rc))
            break;
        bool lost;
        rt_json *d = get_job(&f.conn, id, &lost, err);
        if (!d && lost && interrupted && f.cancelled) { /* the daemons stopped with us */
            rc = interrupted_rc();
            break;
        }
        if (!d && lost && reconnect(&f.conn, id, err))
            continue;
        if (!d) {
            fprintf(stderr, "ringtrain: %s\n", err);
            break;
        }
        const rt_json *job = rt_json_get(d, "job");
        const char *state = rt_json_str(rt_json_get(job, "state"), "?");
        int64_t attempt = 0;
        rt_json_get_int(job, "attempt", &attempt);
        on_attempt(&f, d, job, attempt, state);
        const bool ended = terminal(state);
        if (exec_output && attempt > f.streamed && (ended || !strcmp(state, "running")) &&
            !(ended && interrupted)) {
            rt_json_free(d);
            int s = stream_attempt(&f, attempt, ended, &rc);
            if (s < 0)
                break;
            if (s == 0)
                continue;
            if (!(d = get_job(&f.conn, id, &lost, err))) {
                if (lost) /* the coordinator went away: the loop's top waits for it */
                    continue;
                fprintf(stderr, "ringtrain: %s\n", err);
                break;
            }
            job = rt_json_get(d, "job");
        }
        if (ended) {
            rc = finish(&f, d, job, attempt);
            rt_json_free(d);
            break;
        }
        if (!exec_output)
            show_progress(&f, d, job, attempt);
        rt_json_free(d);
        struct timespec ts = {0, 300000000};
        nanosleep(&ts, NULL);
    }
    pos_reset(&f.pos, false);
    return rc;
}

int cli_submit_and_follow(const cli_conn *c, const char *body, bool do_follow, bool exec_output,
                          bool json, bool cancel_on_interrupt)
{
    http_resp r;
    char err[RT_ERR_LEN];
    /* exec and run: a signal while the job is posted is held until the
     * coordinator answers, then cancels the job it created, rather than
     * ending the CLI with that job left running unwatched */
    cli_conn pc = *c;
    pc.hold_signals = do_follow && cancel_on_interrupt;
    if (pc.hold_signals)
        cli_catch_interrupts();
    const rt_status posted = http_request(&pc, "POST", "/v1/jobs", body, &r, err);
    if (posted != RT_OK) {
        fprintf(stderr, "ringtrain: %s\n", err);
        return interrupted ? interrupted_rc() : 1;
    }
    if (r.status != 201) {
        char buf[RT_ERR_LEN];
        fprintf(stderr, "ringtrain: the coordinator refused the job:\n%s\n",
                http_error_text(&r, buf, sizeof buf));
        free(r.body);
        return 2;
    }
    rt_json *j = NULL;
    int64_t id = 0;
    if (rt_json_parse(r.body, r.len, &j, err) == RT_OK)
        rt_json_get_int(j, "id", &id);
    rt_json_free(j);
    if (json) {
        printf("%s\n", r.body);
    } else {
        fprintf(stderr, "ringtrain: submitted job %lld\n", (long long)id);
        if (!do_follow) /* the id alone on stdout, for scripts (sbatch --parsable) */
            printf("%lld\n", (long long)id);
    }
    free(r.body);
    if (!do_follow)
        return 0;
    cli_catch_interrupts();
    return follow(c, id, exec_output, cancel_on_interrupt);
}
