/* cli_sweep.c — a sweep for people: its trials as a table sorted by the
 * monitor (`ringtrain status SWEEP`), one line per trial event while it
 * runs (`--follow`, `ringtrain run SWEEP.INI`), and the best so far. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rt_json.h"
#include "rt_proto.h"

static double value(const rt_json *t)
{
    const rt_json *b = rt_json_get(t, "best");
    return rt_json_type_of(b) == RT_JSON_NUMBER ? rt_json_num(b, NAN) : NAN;
}

static bool maximize(const rt_json *sw)
{
    return !strcmp(rt_json_str(rt_json_get(sw, "mode"), "min"), "max");
}

/* Whether key has the same value in every trial (two or more, each with
 * params): such a key is said once above the table, not on every row
 * (train.optimizer = adamw, the default space's one-value choice) */
static bool same_in_all(const rt_json *ts, const char *key)
{
    const char *first = NULL;
    size_t n = rt_json_len(ts);
    for (size_t i = 0; i < n; i++) {
        const char *v =
            rt_json_str(rt_json_get(rt_json_get(rt_json_at(ts, i), "params"), key), NULL);
        if (!v || (first && strcmp(v, first) != 0))
            return false;
        first = v;
    }
    return n >= 2;
}

/* The keys the same in every trial, found once for the table: the first
 * trial's params' keys (at most 64), each flagged */
typedef struct common_keys {
    const rt_json *p; /* the first trial's params */
    bool same[64];
} common_keys;

static void common_find(const rt_json *ts, common_keys *ck)
{
    ck->p = rt_json_get(rt_json_at(ts, 0), "params");
    for (size_t i = 0; i < rt_json_len(ck->p) && i < 64; i++)
        ck->same[i] = same_in_all(ts, rt_json_key_at(ck->p, i));
}

static bool is_common(const common_keys *ck, const char *key)
{
    for (size_t i = 0; i < rt_json_len(ck->p) && i < 64; i++)
        if (ck->same[i] && !strcmp(rt_json_key_at(ck->p, i), key))
            return true;
    return false;
}

/* a trial's values, "key=value ..." (the section dropped): those that
 * differ among the trials, or (common) those the same in every trial */
static void params_text(const rt_json *p, const common_keys *ck, bool common, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < rt_json_len(p) && n + 8 < len; i++) {
        const char *k = rt_json_key_at(p, i), *dot = strchr(k, '.');
        if (is_common(ck, k) == common)
            n += (size_t)snprintf(buf + n, len - n, "%s%s=%s", n ? " " : "", dot ? dot + 1 : k,
                                  cli_safe(rt_json_str(rt_json_value_at(p, i), "")));
    }
}

/* the trial with the best value so far (NULL: none yet) */
static const rt_json *best_so_far(const rt_json *sw)
{
    const rt_json *ts = rt_json_get(sw, "trial_list"), *best = NULL;
    for (size_t i = 0; i < rt_json_len(ts); i++) {
        const rt_json *t = rt_json_at(ts, i);
        double v = value(t);
        if (!isnan(v) && (!best || (maximize(sw) ? v > value(best) : v < value(best))))
            best = t;
    }
    return best;
}

/* the last rung a trial reached ("1@30"), "-" for none, "budget" for a
 * trial the time budget stopped (its reason says so: the coordinator's) */
static void rung_text(const rt_json *sw, const rt_json *t, char *buf, size_t len)
{
    if (!strcmp(rt_json_str(rt_json_get(t, "state"), ""), "stopped") &&
        !strncmp(rt_json_str(rt_json_get(t, "reason"), ""), RT_SWEEP_BUDGET_STOP,
                 sizeof RT_SWEEP_BUDGET_STOP - 1)) {
        snprintf(buf, len, "budget");
        return;
    }
    int64_t r = -1;
    rt_json_get_int(t, "rung", &r);
    const rt_json *rungs = rt_json_get(sw, "rungs");
    if (r < 0 || (size_t)r >= rt_json_len(rungs))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%lld@%.0f", (long long)r, rt_json_num(rt_json_at(rungs, (size_t)r), 0));
}

static int cmp_value(const void *a, const void *b, void *arg)
{
    const rt_json *x = *(const rt_json *const *)a, *y = *(const rt_json *const *)b;
    double vx = value(x), vy = value(y);
    if (isnan(vx) != isnan(vy))
        return isnan(vx) ? 1 : -1;
    if (!isnan(vx) && vx != vy)
        return (*(bool *)arg ? vx > vy : vx < vy) ? -1 : 1;
    return (int)(rt_json_num(rt_json_get(x, "trial"), 0) - rt_json_num(rt_json_get(y, "trial"), 0));
}

void cli_show_sweep(const rt_json *d)
{
    const rt_json *sw = rt_json_get(d, "sweep");
    if (rt_json_type_of(sw) != RT_JSON_OBJECT)
        return;
    const rt_json *ts = rt_json_get(sw, "trial_list");
    size_t n = rt_json_len(ts);
    const char *mon = rt_json_str(rt_json_get(sw, "monitor"), "?");
    bool max = maximize(sw);
    int64_t total = 0, best = 0, finish = 0;
    rt_json_get_int(sw, "trials", &total);
    rt_json_get_int(sw, "best_trial", &best);
    rt_json_get_int(sw, "finish_job", &finish);
    char rungs[200] = "none (every trial trains in full)";
    const rt_json *rj = rt_json_get(sw, "rungs");
    size_t k = 0;
    for (size_t i = 0; i < rt_json_len(rj) && k + 16 < sizeof rungs; i++)
        k += (size_t)snprintf(rungs + k, sizeof rungs - k, "%s%.0f", i ? ", " : "",
                              rt_json_num(rt_json_at(rj, i), 0));
    printf("  sweep: %lld trials, %zu submitted; %s, %s better; rungs at epochs %s\n",
           (long long)total, n, mon, max ? "higher" : "lower", rungs);
    const rt_json *b = best_so_far(sw);
    if (b)
        printf("  best%s:  trial %lld (job %lld), %s %.6g at epoch %lld%s\n", best ? "" : " so far",
               (long long)rt_json_num(rt_json_get(b, "trial"), 0),
               (long long)rt_json_num(rt_json_get(b, "job"), 0), mon, value(b),
               (long long)rt_json_num(rt_json_get(b, "best_epoch"), 0), finish ? "" : "");
    if (finish)
        printf("  results: job %lld writes trials.jsonl and best/ into the sweep's store\n",
               (long long)finish);
    if (!n)
        return;
    const rt_json **order = malloc(n * sizeof *order);
    if (!order)
        return;
    for (size_t i = 0; i < n; i++)
        order[i] = rt_json_at(ts, i);
    qsort_r(order, n, sizeof *order, cmp_value, &max);
    common_keys ck;
    common_find(ts, &ck);
    char common[600];
    params_text(ck.p, &ck, true, common, sizeof common);
    if (common[0])
        printf("  every trial: %s\n", common);
    printf("  %5s %6s %-10s %6s %6s %12s %5s  %s\n", "TRIAL", "JOB", "STATE", "RUNG", "EPOCHS", mon,
           "AT", "VALUES");
    for (size_t i = 0; i < n; i++) {
        const rt_json *t = order[i];
        char p[600], r[32], v[32] = "-";
        params_text(rt_json_get(t, "params"), &ck, false, p, sizeof p);
        rung_text(sw, t, r, sizeof r);
        if (!isnan(value(t)))
            snprintf(v, sizeof v, "%.6g", value(t));
        printf("  %5lld %6lld %-10s %6s %6lld %12s %5lld  %s\n",
               (long long)rt_json_num(rt_json_get(t, "trial"), 0),
               (long long)rt_json_num(rt_json_get(t, "job"), 0),
               cli_safe(rt_json_str(rt_json_get(t, "state"), "?")), r,
               (long long)rt_json_num(rt_json_get(t, "epochs"), 0), v,
               (long long)rt_json_num(rt_json_get(t, "best_epoch"), 0), p);
    }
    free(order);
}

void cli_sweep_events(const rt_json *d, int64_t *seen)
{
    const rt_json *ev = rt_json_get(d, "events");
    int64_t total;
    const rt_json *sw = rt_json_get(d, "sweep");
    for (size_t i = cli_events_after(d, *seen, &total); i < rt_json_len(ev); i++) {
        const rt_json *e = rt_json_at(ev, i);
        const char *kind = rt_json_str(rt_json_get(e, "kind"), "");
        if (strcmp(kind, "trial") != 0 && strcmp(kind, "best") != 0)
            continue;
        const rt_json *b = best_so_far(sw);
        char tail[160] = "";
        if (b && strcmp(kind, "best") != 0)
            snprintf(tail, sizeof tail, "  [best so far: trial %lld, %s %.6g]",
                     (long long)rt_json_num(rt_json_get(b, "trial"), 0),
                     rt_json_str(rt_json_get(sw, "monitor"), "?"), value(b));
        printf("%s%s\n", cli_safe(rt_json_str(rt_json_get(e, "message"), "")), tail);
    }
    fflush(stdout);
    if (total > *seen)
        *seen = total;
}
