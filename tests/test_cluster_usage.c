/* test_cluster_usage.c — what the ranks of test_cluster.c's cluster use, as
 * their agents sample it: CPU time and resident memory from /proc, and GPU
 * memory and utilisation from NVML (a stand-in, tests/fake_nvml.c, on this
 * machine without a GPU), in the job's document, /metrics and `ringtrain
 * status`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_cluster.h"

/* ---- what ranks use ------------------------------------------------------------- */

/* Prometheus's own check of the exposition text (`promtool check metrics`:
 * syntax, types, help, naming); true also where promtool is not installed
 * (scripts/install-deps.sh installs it: Debian's prometheus package), said
 * on stderr. */
static bool promtool_ok(const char *text)
{
    if (system("command -v promtool > /dev/null 2>&1") != 0) {
        fprintf(stderr, "promtool not installed: /metrics not checked by it\n");
        return true;
    }
    char path[] = "/tmp/rt_metrics_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return false;
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "timeout 30 promtool check metrics < %s >&2", path);
    int rc = system(cmd);
    unlink(path);
    fprintf(stderr, "promtool check metrics: %s\n", rc == 0 ? "ok" : "FAILED (above)");
    return rc == 0;
}

/* Submit the job (its body freed) and wait until it runs; path: its document's address. */
static int64_t start_job(char *body, char *path, size_t len)
{
    CHECK(body != NULL);
    int64_t id = body ? cl_submit(&C, body) : -1;
    free(body);
    CHECK(id > 0);
    rt_json_free(cl_wait_job(&C, id, "running", 20000));
    snprintf(path, len, "/v1/jobs/%lld", (long long)id);
    return id;
}

/* `ringtrain status ID`'s output (NULL when it failed). */
static char *status_of(int64_t id)
{
    char *out = NULL, ids[24];
    snprintf(ids, sizeof ids, "%lld", (long long)id);
    const char *st[] = {"status", ids, NULL};
    if (cl_cli(&C, &out, 30, st) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* `ringtrain cancel ID`, and the job is cancelled. */
static void cancel_job(int64_t id)
{
    char *out = NULL, ids[24];
    snprintf(ids, sizeof ids, "%lld", (long long)id);
    const char *cancel[] = {"cancel", ids, NULL};
    CHECK(cl_cli(&C, &out, 30, cancel) == 0);
    free(out);
    rt_json_free(cl_wait_job(&C, id, "cancelled", 20000));
}

/* A rank that holds 64 MB and keeps a core busy: its agent's samples show
 * both in the job's document, and /metrics has its series while it runs,
 * with the loss and val_ metrics of the epoch line it reported. */
void test_rank_usage(void **state)
{
    (void)state;
    const char *busy = "import os, socket, time\n"
                       "x = bytearray(64 << 20)\n"
                       "s = socket.socket(fileno=int(os.environ['RT_CONTROL_FD']))\n"
                       "s.send(b'{\"kind\":\"epoch\",\"epoch\":1,\"epochs\":3,\"loss\":0.5,"
                       "\"val_auc\":0.75}\\n')\n"
                       "time.sleep(0.3)\n"
                       "s.send(b'{\"kind\":\"step\",\"epoch\":2,\"epochs\":3,\"step\":1,"
                       "\"steps\":9}\\n')\n"
                       "t = time.time()\n"
                       "while time.time() - t < 20: pass";
    char *body = cl_exec_body((const char *[]){"--name", "busy", "--np", "1", "--", "python3", "-c",
                                               busy, C.marker, NULL});
    char path[64];
    int64_t id = start_job(body, path, sizeof path);
    double cpu = 0, pct = 0, rss = 0;
    for (int i = 0; i < 100 && !(cpu > 1.0 && rss > 64e6); i++) {
        cl_sleep_ms(100);
        rt_json *d = cl_get(&C, path);
        const rt_json *u = rt_json_at(rt_json_get(d, "usage"), 0);
        cpu = rt_json_num(rt_json_get(u, "cpu_s"), 0);
        pct = rt_json_num(rt_json_get(u, "cpu_pct"), 0);
        rss = rt_json_num(rt_json_get(u, "rss_bytes"), 0);
        rt_json_free(d);
    }
    fprintf(stderr, "busy rank: %.2f CPU s, %.0f%% of a core, %.0f MB resident\n", cpu, pct, rss / 1e6);
    /* the rate is the last interval's share of a core: on 2 cores with other
     * tests beside it (ctest -j2) a busy loop may get 18% of one, so only
     * "busy" is asserted there; the CPU seconds say it spun */
    CHECK(cpu > 1.0 && pct > 0 && rss > 64e6);
    /* a rank without a GPU: NVML lists none of its processes, no GPU figures */
    rt_json *dd = cl_get(&C, path);
    CHECK(dd && !rt_json_get(rt_json_at(rt_json_get(dd, "usage"), 0), "gpu_util"));
    rt_json_free(dd);
    /* /metrics: the rank's two series while it runs */
    http_resp r = {0};
    char err[RT_ERR_LEN], want[96];
    CHECK(http_request(&C.conn, "GET", "/metrics", NULL, &r, err) == RT_OK && r.status == 200);
    snprintf(want, sizeof want, "ringtrain_rank_rss_bytes{job=\"%lld\",rank=\"0\",host=", (long long)id);
    CHECK(r.body && strstr(r.body, want));
    snprintf(want, sizeof want, "ringtrain_rank_cpu_seconds_total{job=\"%lld\",rank=\"0\"", (long long)id);
    CHECK(r.body && strstr(r.body, want));
    /* the epoch line it reported: its loss and validation metrics */
    snprintf(want, sizeof want, "ringtrain_job_epoch_metric{job=\"%lld\",metric=\"val_auc\"} 0.75",
             (long long)id);
    CHECK(r.body && strstr(r.body, want));
    CHECK(promtool_ok(r.body));
    free(r.body);
    /* and the CLI shows it, with the last epoch's metrics beside the step's report */
    char *out = status_of(id);
    CHECK(out && strstr(out, "usage (from the agents") != NULL);
    CHECK(out && strstr(out, "progress:  epoch 2/3 step 1/9") &&
          strstr(out, "last epoch: epoch 1/3") &&
          strstr(out, "val_auc 0.75"));
    free(out);
    cancel_job(id);
}

/* A rank whose busy child left its process group (setsid) for 3 s while the
 * rank sleeps: where the rank has a cgroup, its usage counts the child — its
 * process while it runs, its CPU time after it exited too (cpu.stat);
 * without one, only the process group (the sleeping shell) is seen, as
 * documented. */
void test_escaped_usage(void **state)
{
    (void)state;
    char *body = cl_exec_body((const char *[]){
        "--name", "escaped-busy", "--np", "1", "--", "sh", "-c",
        "setsid sh -c 'end=$(($(date +%s) + 3)); while [ $(date +%s) -lt $end ]; do :; done' &"
        " sleep 8",
        C.marker, NULL});
    char path[64];
    int64_t id = start_job(body, path, sizeof path);
    double cpu = 0, running = 0; /* the most CPU seen while the child ran */
    int64_t procs = 0, most_procs = 0;
    for (int i = 0; i < 70; i++) { /* 7 s: the busy child's 3 s and after */
        cl_sleep_ms(100);
        rt_json *d = cl_get(&C, path);
        const rt_json *u = rt_json_at(rt_json_get(d, "usage"), 0);
        cpu = rt_json_num(rt_json_get(u, "cpu_s"), cpu);
        if (rt_json_get_int(u, "procs", &procs) && procs > most_procs)
            most_procs = procs;
        if (procs >= 3 && cpu > running)
            running = cpu;
        rt_json_free(d);
        if (i == 30) { /* `ringtrain status` shows the processes too */
            char *out = status_of(id);
            CHECK(out && strstr(out, "PROCS"));
            free(out);
        }
    }
    const bool cg = agent_has_cgroups();
    fprintf(stderr, "rank with an escaped busy child (%s): %.2f CPU s while it ran, at most "
            "%lld processes\n", cg ? "cgroup" : "process group", running, (long long)most_procs);
    if (cg) /* sh, sleep and the child: the child's time as it runs (its parent waits for it
               only when it exits: the process group's sum sees it then only). sh and sleep
               use < 0.05 CPU s; the child's share of its 3 s depends on what else runs (0.69
               s in CI beside test_transport on 2 cores), so only "clearly counted" is
               asserted */
        CHECK(most_procs >= 3 && running > 0.25);
    else
        CHECK(most_procs <= 2); /* the group: sh and sleep */
    rt_json_free(cl_wait_job(&C, id, "succeeded", 20000));
}

/* Ranks with a GPU (host B's, CUDA_VISIBLE_DEVICES set) on agents whose NVML
 * (the stand-in, tests/fake_nvml.c: 256 MiB and 42% per process) lists their
 * processes: their GPU memory and utilisation in the job's usage, /metrics and
 * `ringtrain status`; the ranks on host A show none. */
void test_gpu_usage(void **state)
{
    (void)state;
    char *body = cl_exec_body((const char *[]){"--name", "gpus", "--np", "5", "--", "sh", "-c",
                                               "sleep 20", C.marker, NULL});
    char path[64];
    int64_t id = start_job(body, path, sizeof path);
    int with_gpu = 0, without = 0;
    for (int i = 0; i < 100 && with_gpu + without < 5; i++) {
        cl_sleep_ms(100);
        rt_json *d = cl_get(&C, path);
        const rt_json *use = rt_json_get(d, "usage");
        with_gpu = without = 0;
        for (size_t k = 0; k < rt_json_len(use); k++) {
            const rt_json *u = rt_json_at(use, k);
            int64_t rank = -1, util = -1, mem = -1;
            rt_json_get_int(u, "rank", &rank);
            if (!rt_json_get(u, "gpu_util")) {
                without += rank >= 0 && rank <= 2; /* host A */
                continue;
            }
            rt_json_get_int(u, "gpu_util", &util);
            rt_json_get_int(u, "gpu_mem_bytes", &mem);
            if (rank >= 3 && util == 42 && mem == 256 << 20) /* host B */
                with_gpu++;
            else
                fprintf(stderr, "rank %lld: GPU %lld%%, %lld bytes?\n", (long long)rank,
                        (long long)util, (long long)mem);
        }
        rt_json_free(d);
    }
    fprintf(stderr, "GPU use: %d ranks with 42%% and 256 MiB, %d without a GPU\n", with_gpu, without);
    CHECK(with_gpu == 2 && without == 3);
    http_resp r = {0};
    char err[RT_ERR_LEN], want[128];
    CHECK(http_request(&C.conn, "GET", "/metrics", NULL, &r, err) == RT_OK && r.status == 200);
    snprintf(want, sizeof want, "ringtrain_rank_gpu_memory_bytes{job=\"%lld\",rank=\"3\",host=",
             (long long)id);
    CHECK(r.body && strstr(r.body, want) && strstr(r.body, "# TYPE ringtrain_rank_gpu_utilization gauge"));
    snprintf(want, sizeof want, "ringtrain_rank_gpu_utilization{job=\"%lld\",rank=\"0\"", (long long)id);
    CHECK(r.body && !strstr(r.body, want));
    CHECK(promtool_ok(r.body));
    free(r.body);
    char *out = status_of(id);
    CHECK(out && strstr(out, "GPU MEM") && strstr(out, "268 MB"));
    free(out);
    cancel_job(id);
}

/* ---- limits ---------------------------------------------------------------------- */

/* 1 when every agent enforces the job limit ("memory", "cpu": the "limits"
 * of its capabilities in /v1/nodes), 0 when none does, -1 when they differ. */
static int agents_enforce(const char *limit)
{
    rt_json *nodes = cl_get(&C, "/v1/nodes");
    const rt_json *nl = rt_json_get(nodes, "nodes");
    int yes = 0, n = (int)rt_json_len(nl);
    for (int i = 0; i < n; i++) {
        const rt_json *lim = rt_json_get(rt_json_get(rt_json_at(nl, i), "caps"), "limits");
        for (size_t k = 0; k < rt_json_len(lim); k++)
            yes += !strcmp(rt_json_str(rt_json_at(lim, k), ""), limit);
    }
    rt_json_free(nodes);
    return n == 0 ? -1 : yes == n ? 1 : yes == 0 ? 0 : -1;
}

/* The newest job's state and reason. */
static void last_job(char *state, size_t sn, char *reason, size_t rn)
{
    rt_json *list = cl_get(&C, "/v1/jobs?limit=1");
    const rt_json *j = rt_json_at(rt_json_get(list, "jobs"), 0);
    snprintf(state, sn, "%s", rt_json_str(rt_json_get(j, "state"), ""));
    snprintf(reason, rn, "%s", rt_json_str(rt_json_get(j, "reason"), ""));
    rt_json_free(list);
}

/* A job's memory_limit and cpu_limit.  Where the agents enforce them: a rank
 * that fills 256 MiB under a 64 MiB limit is ended by the OOM killer and the
 * job's reason says so; two busy loops of 2 s under cpu_limit 0.5 get about
 * 1 s of CPU, not 4.  Where they cannot (cgroup v1 controllers, as on a
 * hybrid host), the submission is refused, saying so, and nothing runs: a
 * limit is never silently dropped.  (An agent given a limit it cannot
 * enforce fails the rank itself: test_sched has the coordinator's side.) */
void test_job_limits(void **state)
{
    (void)state;
    const int mem = agents_enforce("memory"), cpu = agents_enforce("cpu");
    fprintf(stderr, "the agents enforce memory_limit: %s, cpu_limit: %s\n",
            mem == 1 ? "yes" : mem == 0 ? "no" : "?", cpu == 1 ? "yes" : cpu == 0 ? "no" : "?");
    CHECK(mem >= 0 && cpu >= 0); /* agents of one host agree */
    char *out = NULL, st[32], reason[1024];
    const char *fill[] = {"exec", "--np", "1", "--memory-limit", "64M", "--", "sh", "-c",
                          "echo limited-rank-started; "
                          "exec dd if=/dev/zero of=/dev/null bs=256M count=1", NULL};
    const int before = njobs();
    CHECK(cl_cli(&C, &out, 60, fill) != 0);
    if (mem == 1) {
        last_job(st, sizeof st, reason, sizeof reason);
        fprintf(stderr, "memory_limit job: %s: %s\n", st, reason);
        CHECK(!strcmp(st, "failed") && out && strstr(out, "limited-rank-started"));
        CHECK(strstr(reason, "OOM killer") && strstr(reason, "memory_limit of 64.0 MiB"));
    } else {
        fprintf(stderr, "memory_limit job: %s", out ? out : "(no output)\n");
        CHECK(out && !strstr(out, "limited-rank-started") && njobs() == before);
        CHECK(strstr(out, "1 ranks with memory_limit, but the agents that can enforce it have "
                          "0 slots"));
    }
    free(out);
    const char *spin[] = {"exec", "--np", "1", "--cpu-limit", "0.5", "--", "sh", "-c",
                          "timeout 2 sh -c 'while :; do :; done' & "
                          "timeout 2 sh -c 'while :; do :; done'; wait; "
                          "echo cpu-times: $(times | tail -n 1)", NULL};
    int rc = cl_cli(&C, &out, 60, spin);
    if (cpu == 1) {
        int um = 0, sm = 0;
        double us = 0, ss = 0;
        const char *t = out ? strstr(out, "cpu-times: ") : NULL;
        CHECK(rc == 0 && t && sscanf(t, "cpu-times: %dm%lfs %dm%lfs", &um, &us, &sm, &ss) == 4);
        const double used = um * 60 + us + sm * 60 + ss;
        fprintf(stderr, "two busy loops of 2 s under cpu_limit 0.5: %.2f CPU s\n", used);
        CHECK(used > 0.3 && used < 1.6);
    } else {
        fprintf(stderr, "cpu_limit job: %s", out ? out : "(no output)\n");
        CHECK(rc != 0 && out && !strstr(out, "cpu-times:") && njobs() == before);
        CHECK(strstr(out, "with cpu_limit, but the agents that can enforce it have 0 slots"));
    }
    free(out);
}
