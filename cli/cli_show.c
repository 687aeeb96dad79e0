/* cli_show.c — the coordinator's documents as tables for people: nodes,
 * the job list and one job's status.  Times are local, durations read
 * "3m04s", nothing absent is printed as null. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "rt_json.h"
#include "rt_proto.h"
#include "rt_schemas.h"

void cli_fmt_duration(double s, char *buf, size_t len)
{
    if (!(s >= 0) || !isfinite(s))
        s = 0;
    long long t = (long long)(s + 0.5);
    if (t < 60)
        snprintf(buf, len, "%llds", t);
    else if (t < 3600)
        snprintf(buf, len, "%lldm%02llds", t / 60, t % 60);
    else if (t < 86400)
        snprintf(buf, len, "%lldh%02lldm", t / 3600, t % 3600 / 60);
    else
        snprintf(buf, len, "%lldd%02lldh", t / 86400, t % 86400 / 3600);
}

static double now_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "14:05:09" today, "11-23 14:05" before, "-" for none. */
static void fmt_time(double t, char *buf, size_t len)
{
    if (!(t > 0)) {
        snprintf(buf, len, "-");
        return;
    }
    time_t tt = (time_t)t, now = (time_t)now_wall();
    struct tm a, b;
    localtime_r(&tt, &a);
    localtime_r(&now, &b);
    if (a.tm_year == b.tm_year && a.tm_yday == b.tm_yday)
        strftime(buf, len, "%H:%M:%S", &a);
    else
        strftime(buf, len, "%m-%d %H:%M", &a);
}

/* a string field, its control characters escaped for the terminal */
static const char *str(const rt_json *o, const char *k)
{
    return cli_safe(rt_json_str(rt_json_get(o, k), ""));
}

static int64_t num(const rt_json *o, const char *k)
{
    int64_t v = 0;
    rt_json_get_int(o, k, &v);
    return v;
}

static void fmt_bytes(double b, char *buf, size_t len)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (b >= 1024 && i < 4) {
        b /= 1024;
        i++;
    }
    snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

int cli_show_nodes(const rt_json *d)
{
    const rt_json *n = rt_json_get(d, "nodes");
    printf("%-24s %-16s %-8s %5s %4s %-22s %9s %s\n", "AGENT", "HOST", "STATE", "SLOTS", "USED",
           "CPU", "MEMORY", "GPUS / CAPS");
    for (size_t i = 0; i < rt_json_len(n); i++) {
        const rt_json *a = rt_json_at(n, i), *caps = rt_json_get(a, "caps");
        char mem[32] = "-", gpus[256] = "";
        double mb = rt_json_num(rt_json_get(caps, "memory_bytes"), 0);
        if (mb > 0)
            fmt_bytes(mb, mem, sizeof mem);
        const rt_json *names = rt_json_get(caps, "gpu_names");
        size_t gl = 0;
        if (rt_json_len(names))
            gl += (size_t)snprintf(gpus, sizeof gpus, "%zux %s ", rt_json_len(names),
                                   cli_safe(rt_json_str(rt_json_at(names, 0), "GPU")));
        const char *capn[] = {"nccl", "rdma"};
        for (size_t k = 0; k < 2 && gl < sizeof gpus; k++)
            if (rt_json_bool(rt_json_get(caps, capn[k]), false))
                gl += (size_t)snprintf(gpus + gl, sizeof gpus - gl, "%s ", capn[k]);
        /* ringtrain's GEMM kernel; OpenBLAS's, for exec jobs ("own->set" when
         * the agent gives ranks a better core than OpenBLAS picked) */
        const char *gemm = str(caps, "gemm_kernel"), *blas = str(caps, "blas_core"),
                   *own = str(caps, "blas_own"), *set = str(caps, "blas_set");
        if (*gemm && gl < sizeof gpus)
            gl += (size_t)snprintf(gpus + gl, sizeof gpus - gl, "gemm:%s ", gemm);
        if (*blas && gl < sizeof gpus)
            gl += (size_t)snprintf(gpus + gl, sizeof gpus - gl, "blas:%s%s%s", *set ? own : "",
                                   *set ? "->" : "", blas);
        /* the job limits it enforces (memory_limit, cpu_limit), or none */
        const rt_json *lim = rt_json_get(caps, "limits");
        if (rt_json_len(lim) == 0 && gl < sizeof gpus)
            gl += (size_t)snprintf(gpus + gl, sizeof gpus - gl, "%slimits:none", gl ? " " : "");
        for (size_t k = 0; k < rt_json_len(lim) && gl < sizeof gpus; k++)
            gl += (size_t)snprintf(gpus + gl, sizeof gpus - gl, "%s%s",
                                   k ? "," : gl ? " limits:" : "limits:",
                                   cli_safe(rt_json_str(rt_json_at(lim, k), "?")));
        bool drain = rt_json_bool(rt_json_get(a, "draining"), false);
        char state[16];
        snprintf(state, sizeof state, "%s%s", str(a, "state"), drain ? ",drain" : "");
        printf("%-24s %-16.16s %-8s %5lld %4lld %-22.22s %9s %s\n", str(a, "agent"),
               str(a, "hostname"), state, (long long)num(a, "slots"), (long long)num(a, "used"),
               *str(caps, "cpu") ? str(caps, "cpu") : "-", mem, gpus);
    }
    return 0;
}

static double elapsed(const rt_json *j)
{
    double st = rt_json_num(rt_json_get(j, "started"), 0),
           fin = rt_json_num(rt_json_get(j, "finished"), 0);
    if (!(st > 0))
        return -1;
    return (fin > 0 ? fin : now_wall()) - st;
}

static void job_row(const rt_json *j, const char *lead)
{
    char sub[32], el[32] = "-", state[24], name[40];
    fmt_time(rt_json_num(rt_json_get(j, "created"), 0), sub, sizeof sub);
    double e = elapsed(j);
    if (e >= 0)
        cli_fmt_duration(e, el, sizeof el);
    int64_t pos = num(j, "queue_pos");
    if (pos > 0)
        snprintf(state, sizeof state, "%s#%lld", str(j, "state"), (long long)pos);
    else
        snprintf(state, sizeof state, "%s%s", str(j, "state"),
                 rt_json_bool(rt_json_get(j, "held"), false) ? ",held" : "");
    snprintf(name, sizeof name, "%s%s", lead, str(j, "name"));
    printf("%5lld %-14.14s %-10.10s %-10s %4lld %3lld %-11s %8s  %s\n", (long long)num(j, "id"),
           name, str(j, "user"), state, (long long)num(j, "np"), (long long)num(j, "attempt"), sub,
           el, str(j, "reason"));
}

int cli_show_jobs(const rt_json *d)
{
    const rt_json *n = rt_json_get(d, "jobs");
    printf("%5s %-14s %-10s %-10s %4s %3s %-11s %8s  %s\n", "ID", "NAME", "USER", "STATE", "NP",
           "ATT", "SUBMITTED", "ELAPSED", "REASON");
    /* a sweep's jobs under it (those of this page), the others in order */
    for (size_t i = 0; i < rt_json_len(n); i++) {
        const rt_json *j = rt_json_at(n, i);
        int64_t parent = num(j, "sweep");
        bool listed = false;
        for (size_t k = 0; parent > 0 && k < rt_json_len(n) && !listed; k++)
            listed = num(rt_json_at(n, k), "id") == parent;
        if (listed)
            continue;
        job_row(j, "");
        if (strcmp(str(j, "type"), "sweep") != 0)
            continue;
        for (size_t k = rt_json_len(n); k-- > 0;) /* oldest first */
            if (num(rt_json_at(n, k), "sweep") == num(j, "id"))
                job_row(rt_json_at(n, k), "  ");
    }
    if (rt_json_get(d, "next_before"))
        printf("(more: --before %lld)\n", (long long)num(d, "next_before"));
    return 0;
}

static void describe_exit(const rt_json *p, char *buf, size_t len)
{
    int64_t sig = num(p, "signal"), code = num(p, "exit_code");
    if (strcmp(str(p, "state"), "exited") != 0)
        snprintf(buf, len, "-");
    else if (sig < 0)
        snprintf(buf, len, "lost with its agent");
    else if (sig > 0)
        snprintf(buf, len, "signal %lld (%s)", (long long)sig, strsignal((int)sig));
    else
        snprintf(buf, len, "code %lld", (long long)code);
}

/* A progress report, for people: "epoch 3/20 step 120/288, 161 steps/s, loss 0.4498";
 * label: "progress" or "last epoch". */
static void show_progress(const char *label, const rt_json *p)
{
    if (rt_json_type_of(p) != RT_JSON_OBJECT)
        return;
    char line[512];
    size_t n = 0;
    int64_t epoch = num(p, "epoch"), epochs = num(p, "epochs"), step = num(p, "step"),
            steps = num(p, "steps");
    if (epochs > 0)
        n += (size_t)snprintf(line + n, sizeof line - n, "epoch %lld/%lld ", (long long)epoch,
                              (long long)epochs);
    if (steps > 0)
        n += (size_t)snprintf(line + n, sizeof line - n, "step %lld/%lld ", (long long)step,
                              (long long)steps);
    for (size_t i = 0; i < rt_json_len(p) && n < sizeof line - 40; i++) {
        const char *k = rt_json_key_at(p, i);
        const rt_json *v = rt_json_value_at(p, i);
        if (!strcmp(k, "epoch") || !strcmp(k, "epochs") || !strcmp(k, "step") ||
            !strcmp(k, "steps") || !strcmp(k, "kind") || rt_json_type_of(v) != RT_JSON_NUMBER)
            continue;
        n += (size_t)snprintf(line + n, sizeof line - n, "%s %.4g ", k, rt_json_num(v, 0));
    }
    if (n)
        printf("  %-10s %s\n", label, line);
}

/* Each rank's reported result: "<lead>R: VALUE", VALUE as compact JSON. */
static void print_results(const rt_json *d, const char *lead)
{
    const rt_json *rs = rt_json_get(d, "results");
    for (size_t i = 0; i < rt_json_len(rs); i++) {
        const rt_json *r = rt_json_at(rs, i);
        rt_jw w;
        rt_jw_init(&w);
        rt_jw_value(&w, rt_json_get(r, "value"));
        char *text = rt_jw_take(&w, NULL);
        printf("%s%lld: %s\n", lead, (long long)num(r, "rank"), text ? text : "?");
        free(text);
    }
}

int cli_show_results(const rt_json *d)
{
    const rt_json *j = rt_json_get(d, "job");
    if (!rt_json_len(rt_json_get(d, "results")))
        fprintf(stderr, "ringtrain: job %lld (attempt %lld) has no results: its ranks call "
                        "rt_report_result() / ringtrain.report_result()\n",
                (long long)num(j, "id"), (long long)num(j, "attempt"));
    print_results(d, "");
    return 0;
}

/* What a job runs, from its submission (spec_text: its JSON): the command,
 * the folder, the limits per rank. */
static void show_spec(const char *spec_text)
{
    rt_json *spec = NULL;
    char perr[RT_ERR_LEN];
    if (*spec_text && rt_json_parse(spec_text, strlen(spec_text), &spec, perr) == RT_OK) {
        const rt_json *argv = rt_json_get(spec, "argv");
        if (rt_json_len(argv)) {
            printf("  command:  ");
            for (size_t i = 0; i < rt_json_len(argv); i++)
                printf(" %s", cli_safe(rt_json_str(rt_json_at(argv, i), "")));
            printf("\n");
        }
        if (*str(spec, "cwd"))
            printf("  cwd:       %s\n", str(spec, "cwd"));
        /* per rank, in its cgroup on nodes that enforce them: the job file's
         * keys (an API client's submission may give them as JSON fields) */
        double mem = rt_json_num(rt_json_get(spec, RT_F_MEMORY_LIMIT), 0),
               cpus = rt_json_num(rt_json_get(spec, RT_F_CPU_LIMIT), 0);
        const char *config = str(spec, RT_F_CONFIG);
        if (*config) {
            rt_job_cfg jc;
            rt_cfg_errors e = {0};
            if (rt_cfg_load_string(&rt_job_schema, config, strlen(config), "job", NULL, &jc, &e) ==
                RT_OK) {
                mem = (double)jc.memory_limit;
                cpus = jc.cpu_limit;
            }
            rt_cfg_free(&rt_job_schema, &jc);
            rt_cfg_errors_free(&e);
        }
        if (mem > 0 || cpus > 0) {
            char m[32] = "", lim[96] = "";
            int n = 0;
            if (mem > 0) {
                fmt_bytes(mem, m, sizeof m);
                n = snprintf(lim, sizeof lim, "memory %s", m);
            }
            if (cpus > 0 && n >= 0 && (size_t)n < sizeof lim)
                snprintf(lim + n, sizeof lim - (size_t)n, "%s%.4g CPU%s", n ? ", " : "", cpus,
                         cpus == 1 ? "" : "s");
            printf("  limits:    %s per rank\n", lim);
        }
    }
    rt_json_free(spec);
}

/* The agents' figures per rank. */
static void show_usage(const rt_json *use)
{
    if (!rt_json_len(use))
        return;
    printf("  usage (from the agents, every few seconds):\n    %4s %8s %10s %10s %6s %6s %10s\n",
           "RANK", "CPU %", "CPU TIME", "RSS", "PROCS", "GPU %", "GPU MEM");
    for (size_t i = 0; i < rt_json_len(use); i++) {
        const rt_json *u = rt_json_at(use, i);
        char ct[32], gu[16] = "-", gm[24] = "-"; /* GPU: where the agent has NVML */
        cli_fmt_duration(rt_json_num(rt_json_get(u, "cpu_s"), 0), ct, sizeof ct);
        if (rt_json_get(u, "gpu_util")) {
            snprintf(gu, sizeof gu, "%.0f", rt_json_num(rt_json_get(u, "gpu_util"), 0));
            snprintf(gm, sizeof gm, "%.0f MB",
                     rt_json_num(rt_json_get(u, "gpu_mem_bytes"), 0) / 1e6);
        }
        printf("    %4lld %8.0f %10s %7.0f MB %6lld %6s %10s\n", (long long)num(u, "rank"),
               rt_json_num(rt_json_get(u, "cpu_pct"), 0), ct,
               rt_json_num(rt_json_get(u, "rss_bytes"), 0) / 1e6, (long long)num(u, "procs"), gu,
               gm);
    }
}

/* Where each rank runs, and how it ended. */
static void show_placement(const rt_json *pl)
{
    if (!rt_json_len(pl))
        return;
    printf("  %4s  %-16s %-20s %5s %5s %-4s %-21s %8s %-9s %s\n", "RANK", "HOST", "AGENT", "LOCAL",
           "CROSS", "GPU", "ADDRESS", "PID", "STATE", "EXIT");
    for (size_t i = 0; i < rt_json_len(pl); i++) {
        const rt_json *p = rt_json_at(pl, i);
        char lr[16], cr[16], ex[64];
        snprintf(lr, sizeof lr, "%lld/%lld", (long long)num(p, "local_rank"),
                 (long long)num(p, "local_size"));
        snprintf(cr, sizeof cr, "%lld/%lld", (long long)num(p, "cross_rank"),
                 (long long)num(p, "cross_size"));
        describe_exit(p, ex, sizeof ex);
        printf("  %4lld  %-16.16s %-20.20s %5s %5s %-4s %-21s %8lld %-9s %s\n",
               (long long)num(p, "rank"), str(p, "hostname"), str(p, "agent"), lr, cr,
               *str(p, "gpu") ? str(p, "gpu") : "-", str(p, "address"), (long long)num(p, "pid"),
               str(p, "state"), ex);
    }
}

size_t cli_events_after(const rt_json *d, int64_t seen, int64_t *total)
{
    *total = 0;
    rt_json_get_int(d, "events_total", total);
    const int64_t first = *total - (int64_t)rt_json_len(rt_json_get(d, "events"));
    return seen > first ? (size_t)(seen - first) : 0; /* ev[0] is event `first` of all */
}

/* What the CLI warned of before submitting (at most a few texts) */
static char *warned[4];

void cli_warned(const char *text)
{
    for (size_t i = 0; i < RT_ARRAY_LEN(warned); i++)
        if (!warned[i]) {
            warned[i] = strdup(text);
            return;
        }
}

static bool was_warned(const char *text)
{
    /* the coordinator keeps a warning's first SC_WARNING_TEXT_MAX bytes */
    for (size_t i = 0; i < RT_ARRAY_LEN(warned); i++)
        if (warned[i] && *text && !strncmp(warned[i], text, strlen(text)))
            return true;
    return false;
}

/* The events' "rank R: TEXT" (a rank's warning, which the coordinator
 * keeps as an event) */
void cli_show_warnings(const rt_json *d, int64_t id, int64_t *seen, bool midline)
{
    const rt_json *ev = rt_json_get(d, "events");
    int64_t total;
    for (size_t i = cli_events_after(d, *seen, &total); i < rt_json_len(ev); i++) {
        const rt_json *e = rt_json_at(ev, i);
        if (strcmp(rt_json_str(rt_json_get(e, "kind"), ""), "warning") != 0)
            continue;
        const char *msg = rt_json_str(rt_json_get(e, "message"), ""), *text = strstr(msg, ": ");
        if (text && was_warned(text + 2))
            continue;
        if (midline)
            printf("\n");
        fflush(stdout);
        fprintf(stderr, "ringtrain: job %lld: warning: %s\n", (long long)id, cli_safe(msg));
    }
    if (total > *seen)
        *seen = total;
}

/* The job's last 15 events. */
static void show_events(const rt_json *ev)
{
    size_t ne = rt_json_len(ev), from = ne > 15 ? ne - 15 : 0;
    if (ne)
        printf("  events%s:\n", from ? " (the last 15)" : "");
    for (size_t i = from; i < ne; i++) {
        const rt_json *e = rt_json_at(ev, i);
        char t[32];
        fmt_time(rt_json_num(rt_json_get(e, "time"), 0), t, sizeof t);
        printf("    %-11s %-10s %s\n", t, str(e, "kind"), str(e, "message"));
    }
}

int cli_show_job(const rt_json *d)
{
    const rt_json *j = rt_json_get(d, "job");
    char t1[32], t2[32], t3[32], el[32] = "-";
    printf("job %lld '%s' (%s, %lld ranks) of %s: %s", (long long)num(j, "id"), str(j, "name"),
           str(j, "type"), (long long)num(j, "np"), str(j, "user"), str(j, "state"));
    if (rt_json_get_str(j, "unix_user"))
        printf(", runs as Unix user %s", str(j, "unix_user"));
    if (num(j, "queue_pos") > 0)
        printf(", position %lld in the queue", (long long)num(j, "queue_pos"));
    if (num(j, "attempt") > 0)
        printf(", attempt %lld", (long long)num(j, "attempt"));
    if (num(j, "restarts") > 0)
        printf(" (%lld restart%s)", (long long)num(j, "restarts"),
               num(j, "restarts") == 1 ? "" : "s");
    printf("\n");
    fmt_time(rt_json_num(rt_json_get(j, "created"), 0), t1, sizeof t1);
    fmt_time(rt_json_num(rt_json_get(j, "started"), 0), t2, sizeof t2);
    fmt_time(rt_json_num(rt_json_get(j, "finished"), 0), t3, sizeof t3);
    if (elapsed(j) >= 0)
        cli_fmt_duration(elapsed(j), el, sizeof el);
    printf("  submitted %s, started %s, ended %s, elapsed %s\n", t1, t2, t3, el);
    show_spec(str(j, "spec"));
    if (*str(j, "reason"))
        printf("  reason:    %s\n", str(j, "reason"));
    if (num(j, "sweep") > 0)
        printf("  %s of sweep %lld (ringtrain status %lld)\n",
               num(j, "trial") > 0 ? "a trial" : "the last step", (long long)num(j, "sweep"),
               (long long)num(j, "sweep"));
    cli_show_sweep(d);
    const rt_json *prog = rt_json_get(j, "progress"), *last = rt_json_get(j, "last_epoch");
    show_progress("progress:", prog);
    /* mid-epoch the report is a step's: the last finished epoch's metrics beside it */
    if (strcmp(rt_json_str(rt_json_get(prog, "kind"), ""), "epoch") != 0)
        show_progress("last epoch:", last);
    const rt_json *ff = rt_json_get(j, "first_failure");
    const rt_json *tail = rt_json_get(ff, "tail");
    if (rt_json_len(tail)) {
        printf("  first failure: rank %lld, its last output:\n", (long long)num(ff, "rank"));
        for (size_t i = 0; i < rt_json_len(tail); i++)
            printf("    | %s\n", cli_safe(rt_json_str(rt_json_at(tail, i), "")));
    }
    show_usage(rt_json_get(d, "usage"));
    show_placement(rt_json_get(d, "placement"));
    if (rt_json_len(rt_json_get(d, "results"))) {
        printf("  results (ringtrain status %lld --results):\n", (long long)num(j, "id"));
        print_results(d, "    rank ");
    }
    show_events(rt_json_get(d, "events"));
    return 0;
}
