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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "rt_hex.h"
#include "rt_json.h"
#include "rt_schemas.h"
#include "rt_time.h"

static bool terminal(const char *state) { return rt_job_state_terminal(rt_job_state_parse(state)); }

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
    cli_stream_pos pos;
    char last[512]; /* the progress line last printed */
} follower;

/* Ctrl-C: detach (submit --follow) or cancel the job once (exec, run).
 * True when the follower is done (rc set). */
static bool on_interrupt(follower *f, int *rc)
{
    if (!cli_interrupted())
        return false;
    if (!f->cancel_on_interrupt) {
        long long id = (long long)f->id;
        fprintf(stderr,
                "\nringtrain: detached; job %lld keeps running (`ringtrain status %lld`, "
                "`ringtrain logs %lld --follow` to watch it, `ringtrain cancel %lld` to stop it)\n",
                id, id, id, id);
        *rc = cli_interrupted_rc();
        return true;
    }
    if (!f->cancelled) {
        char path[64], err[RT_ERR_LEN];
        snprintf(path, sizeof path, "/v1/jobs/%lld/cancel", (long long)f->id);
        http_resp r = {0};
        const bool sent = http_request(&f->conn, "POST", path, NULL, &r, err) == RT_OK;
        const char *how =
            cli_interrupted() == SIGINT ? "interrupted" : strsignal(cli_interrupted());
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
        cli_stream_pos_reset(&f->pos, true);
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
    rt_status st = cli_stream_logs(&f->conn, f->id, -1, 0, !ended, &f->pos, &status, err);
    if (cli_stdout_closed()) { /* nobody reads us: leave the job alone */
        *rc = 128 + SIGPIPE;
        return -1;
    }
    if (st == RT_OK || ended)
        f->streamed = attempt;
    if (st != RT_OK && !cli_interrupted() && (ended || !f->complained))
        fprintf(stderr, "ringtrain: the output of job %lld is incomplete: %s\n", (long long)f->id,
                err);
    if (ended)
        return 1;
    if (st != RT_OK && !cli_interrupted()) { /* e.g. its agent is reconnecting */
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
    return f->cancelled ? cli_interrupted_rc() : rc;
}

static int follow(const cli_conn *c0, int64_t id, bool exec_output, bool cancel_on_interrupt)
{
    follower f = {.conn = *c0,
                  .id = id,
                  .exec_output = exec_output,
                  .cancel_on_interrupt = cancel_on_interrupt,
                  .tty = isatty(STDOUT_FILENO)};
    f.conn.retry_ms = 0; /* get_job failures go through cli_reconnect() */
    cli_stream_pos_reset(&f.pos, true);
    char err[RT_ERR_LEN];
    int rc = 1;
    for (;;) {
        if (on_interrupt(&f, &rc))
            break;
        bool lost;
        rt_json *d = cli_get_job(&f.conn, id, &lost, err);
        if (!d && lost && cli_interrupted() && f.cancelled) { /* the daemons stopped with us */
            rc = cli_interrupted_rc();
            break;
        }
        if (!d && lost && cli_reconnect(&f.conn, id, err))
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
            !(ended && cli_interrupted())) {
            rt_json_free(d);
            int s = stream_attempt(&f, attempt, ended, &rc);
            if (s < 0)
                break;
            if (s == 0)
                continue;
            if (!(d = cli_get_job(&f.conn, id, &lost, err))) {
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
    cli_stream_pos_reset(&f.pos, false);
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
    /* A POST that reached the coordinator and got no answer (it stopped,
     * or the network broke, after the job may have been recorded) is sent
     * again for up to connect_retry, with the same Idempotency-Key: the
     * coordinator answers with the job the first one made, if it made one,
     * never a second. */
    uint8_t raw[16];
    rt_random_bytes(raw, sizeof raw);
    rt_hex_encode(raw, sizeof raw, pc.idem_key);
    const int64_t end = rt_now_ns() + (int64_t)c->retry_ms * 1000000;
    rt_status posted;
    for (;;) {
        posted = http_request(&pc, "POST", "/v1/jobs", body, &r, err);
        const int64_t left_ms = (end - rt_now_ns()) / 1000000;
        if (posted == RT_OK || !r.reached || posted == RT_ERR_AUTH || cli_interrupted() ||
            left_ms <= 0)
            break;
        fprintf(stderr, "ringtrain: %s; posting the job again (as the same job)\n", err);
        pc.retry_ms = (int)left_ms;
        struct timespec ts = {0, 500000000};
        nanosleep(&ts, NULL);
    }
    if (posted != RT_OK) {
        fprintf(stderr, "ringtrain: %s\n", err);
        return cli_interrupted() ? cli_interrupted_rc() : 1;
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
