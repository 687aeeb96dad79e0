/* test_train_job.c — training jobs end to end on a real cluster on loopback
 * (coordinator + one agent with 2 slots), on a small synthetic Rossmann
 * bundle from rossmann-gen, prepped with examples/rossmann/prep.sql:
 *   - determinism: the same job twice, once with 1 CPU thread per rank and
 *     evaluation batches of 4096, once with 2 threads and batches of 50,
 *     gives bitwise-identical history (timings aside), checkpoints and
 *     predictions (scored by both ranks); `ringtrain predict` from best.ckpt reproduces
 *     submission.csv with other thread counts and batch sizes too;
 *   - a worker killed mid-training (max_restarts = 1): the job resumes from
 *     the last checkpoint and its history continues instead of restarting;
 *   - a damaged checkpoint or shard fails the job with a message naming the
 *     file and the damage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_harness.h"
#include "rt_file.h"
#include "rt_time.h"

static cluster C;
static bool failed_once;
static char ds_dir[300];

#define CHECK(cond) CL_CHECK(&failed_once, cond)

static int run_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run_cmd(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

static int group_setup(void **state)
{
    (void)state;
    if (!cl_init(&C, "train"))
        return -1;
    snprintf(ds_dir, sizeof ds_dir, "%s/dataset", C.dir);
    /* 12 synthetic stores, all 942 days; two partitions */
    if (run_cmd("%s --out %s/data --stores 12 --quiet", RT_TEST_GEN, C.dir) != 0 ||
        run_cmd("%s prep --input %s/data --sql %s --out %s --partitions 2 --quiet > /dev/null",
                RT_TEST_CLI, C.dir, RT_PREP_SQL, ds_dir) != 0)
        return -1;
    if (!cl_start_coord(&C, NULL, NULL) || !cl_start_agent(&C, 0, "a1", "A", 2, NULL) ||
        !cl_wait_agents_up(&C, 1, 20000)) {
        cl_destroy(&C, true);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    return cl_destroy(&C, failed_once) ? 0 : -1;
}

/* A job file for store `name` with `epochs`; returns its path. */
/* threads per rank and evaluation batch: results must not depend on them */
static const char *job_file_with(const char *name, int epochs, int threads, int eval_batch)
{
    static char path[400];
    snprintf(path, sizeof path, "%s/%s.ini", C.dir, name);
    FILE *f = fopen(path, "w");
    fprintf(f,
            "[job]\nname = %s\ntype = train\nnp = 2\nmax_restarts = 1\n"
            "[data]\ndataset = %s\n"
            "[model]\nhidden = 128, 64\nembedding_dim = 8\ndropout = 0.2\nthreads = %d\n"
            "[train]\nbatch_size = 64\nepochs = %d\nlearning_rate = 1e-3\nseed = 5\n"
            "eval_batch_size = %d\n"
            "[output]\nstore = %s/%s\n",
            name, ds_dir, threads, epochs, eval_batch, C.dir, name);
    fclose(f);
    return path;
}

static const char *job_file(const char *name, int epochs)
{
    return job_file_with(name, epochs, 1, 4096);
}

static char *slurp(const char *path)
{
    char *data = NULL, err[RT_ERR_LEN];
    size_t len;
    return rt_read_file(path, 1u << 30, &data, &len, err) == RT_OK ? data : NULL;
}

/* The history without the fields that measure time. */
static char *history_values(const char *store)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s/history.jsonl", C.dir, store);
    char *h = slurp(path);
    if (!h)
        return NULL;
    const char *drop[] = {"\"seconds\":", "\"samples_per_s\":", "\"steps_per_s\":",
                          "\"slowest_rank\":", "\"wait_ms_per_step_min\":",
                          "\"wait_ms_per_step_max\":"};
    for (size_t k = 0; k < RT_ARRAY_LEN(drop); k++)
        for (char *p = h; (p = strstr(p, drop[k]));) {
            char *e = p + strlen(drop[k]);
            while (*e && *e != ',' && *e != '}')
                e++;
            memmove(p + strlen(drop[k]), e, strlen(e) + 1);
            p += strlen(drop[k]);
        }
    return h;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

static void test_determinism_and_predict(void **state)
{
    (void)state;
    int64_t a = cl_submit_file(&C, job_file("runA", 3)),
            b = cl_submit_file(&C, job_file_with("runB", 3, 2, 50));
    CHECK(a > 0 && b > 0);
    rt_json *ja = cl_wait_job(&C, a, NULL, 120000), *jb = cl_wait_job(&C, b, NULL, 120000);
    CHECK(ja && jb);
    CHECK(!strcmp(cl_job_state(ja), "succeeded") && !strcmp(cl_job_state(jb), "succeeded"));
    rt_json_free(ja);
    rt_json_free(jb);
    /* both ranks on one host: "auto" chose shared memory */
    char aid[24], *lo = NULL;
    snprintf(aid, sizeof aid, "%lld", (long long)a);
    const char *la[] = {"logs", aid, "--rank", "0", NULL};
    CHECK(cl_cli(&C, &lo, 30, la) == 0);
    if (!lo || !strstr(lo, "ring of 2 ranks up over shm"))
        fprintf(stderr, "rank 0's log:\n%s\n", lo ? lo : "");
    CHECK(lo && strstr(lo, "ring of 2 ranks up over shm"));
    /* both ranks scored the test rows; the file is compared with a
     * single-process `ringtrain predict` below */
    CHECK(lo && strstr(lo, "scored by 2 ranks"));
    free(lo);
    char *ha = history_values("runA"), *hb = history_values("runB");
    CHECK(ha && hb);
    CHECK(count_lines(ha) == 3);
    if (strcmp(ha, hb) != 0)
        fprintf(stderr, "histories differ:\n%s---\n%s", ha, hb);
    CHECK(!strcmp(ha, hb));
    free(ha);
    free(hb);
    const char *files[] = {"last.ckpt", "best.ckpt", "submission.csv"};
    for (int i = 0; i < 3; i++) {
        char pa[600], pb[600];
        snprintf(pa, sizeof pa, "%s/runA/%s", C.dir, files[i]);
        snprintf(pb, sizeof pb, "%s/runB/%s", C.dir, files[i]);
        CHECK(run_cmd("cmp -s %s %s", pa, pb) == 0);
    }
    /* predictions from the checkpoint, by the CLI, match the job's */
    char best[600], csv[600], sub[600];
    snprintf(best, sizeof best, "%s/runA/best.ckpt", C.dir);
    snprintf(csv, sizeof csv, "%s/predicted.csv", C.dir);
    snprintf(sub, sizeof sub, "%s/runA/submission.csv", C.dir);
    char *out = NULL;
    const char *pargs[] = {"predict", "--model", best, "--dataset", ds_dir, "--out", csv, NULL};
    CHECK(cl_cli(&C, &out, 60, pargs) == 0);
    free(out);
    CHECK(run_cmd("cmp -s %s %s", csv, sub) == 0);
    const char *pargs2[] = {"predict", "--model", best,     "--dataset", ds_dir, "--out", csv,
                            "--threads", "1", "--batch", "77", NULL};
    CHECK(cl_cli(&C, &out, 60, pargs2) == 0);
    free(out);
    CHECK(run_cmd("cmp -s %s %s", csv, sub) == 0);
    char *s = slurp(sub);
    CHECK(s && !strncmp(s, "Id,Sales\n1,", 11));
    free(s);
    const char *margs[] = {"model", "summary", best, "--tensors", NULL};
    CHECK(cl_cli(&C, &out, 30, margs) == 0);
    CHECK(strstr(out, "architecture rossmann") && strstr(out, "dense_1") &&
          strstr(out, "emb_Store") && strstr(out, "dense_1/kernel"));
    free(out);
    /* the same job again into its finished store: it says there is nothing
     * left to train */
    int64_t again = cl_submit_file(&C, job_file("runA", 3));
    rt_json *jr = cl_wait_job(&C, again, NULL, 120000);
    CHECK(jr && !strcmp(cl_job_state(jr), "succeeded"));
    rt_json_free(jr);
    char ids[24];
    snprintf(ids, sizeof ids, "%lld", (long long)again);
    const char *lg[] = {"logs", ids, "--rank", "0", NULL};
    CHECK(cl_cli(&C, &out, 30, lg) == 0);
    CHECK(strstr(out, "already holds all 3 epochs this job asks for") != NULL);
    free(out);
}

/* [train] trace: each rank's timeline has every kind of span, stays within
 * trace_spans however many steps ran, and `ringtrain trace` merges the
 * ranks into one Chrome trace; the epoch names the slowest rank. */
static void test_trace(void **state)
{
    (void)state;
    char path[400];
    snprintf(path, sizeof path, "%s/traced.ini", C.dir);
    FILE *f = fopen(path, "w");
    fprintf(f,
            "[job]\nname = traced\ntype = train\nnp = 2\n[data]\ndataset = %s\n"
            "[model]\nhidden = 32, 16\nembedding_dim = 4\nthreads = 1\n"
            "[train]\nbatch_size = 64\nepochs = 2\nsteps_per_epoch = 40\nbucket_size = 8K\n"
            "trace = true\ntrace_spans = 400\nmonitor = val_exp_rmspe\n"
            "[output]\nstore = %s/traced\n",
            ds_dir, C.dir);
    fclose(f);
    int64_t id = cl_submit_file(&C, path);
    CHECK(id > 0);
    rt_json *j = cl_wait_job(&C, id, NULL, 120000);
    CHECK(j && !strcmp(cl_job_state(j), "succeeded"));
    rt_json_free(j);
    static const char *const kinds[] = {"data", "forward", "backward", "layer", "allreduce",
                                        "wait", "optimizer", "eval"};
    for (int r = 0; r < 2; r++) {
        char p[600], err[RT_ERR_LEN];
        snprintf(p, sizeof p, "%s/traced/trace/rank-%d.json", C.dir, r);
        char *text = slurp(p);
        rt_json *doc = NULL;
        CHECK(text && rt_json_parse(text, strlen(text), &doc, err) == RT_OK);
        const rt_json *ev = rt_json_get(doc, "traceEvents");
        int64_t recorded = 0, kept = 0;
        rt_json_get_int(doc, "spans_recorded", &recorded);
        rt_json_get_int(doc, "spans_kept", &kept);
        /* 80 steps of 8+ spans each were recorded; the newest 400 are kept */
        fprintf(stderr, "rank %d: %lld spans recorded, %lld kept, %zu events in the file\n", r,
                (long long)recorded, (long long)kept, rt_json_len(ev));
        CHECK(recorded > 640 && kept == 400 && rt_json_len(ev) == 403);
        for (size_t k = 0; k < RT_ARRAY_LEN(kinds); k++) {
            bool seen = false;
            for (size_t i = 0; i < rt_json_len(ev) && !seen; i++) {
                const rt_json *e = rt_json_at(ev, i);
                int64_t pid = -1;
                rt_json_get_int(e, "pid", &pid);
                seen = pid == r && !strcmp(rt_json_str(rt_json_get(e, "cat"), ""), kinds[k]);
            }
            if (!seen)
                fprintf(stderr, "rank %d: no %s span\n", r, kinds[k]);
            CHECK(seen);
        }
        rt_json_free(doc);
        free(text);
    }
    char store[400], merged[400];
    snprintf(store, sizeof store, "%s/traced", C.dir);
    snprintf(merged, sizeof merged, "%s/merged.json", C.dir);
    char *out = NULL;
    const char *args[] = {"trace", store, "--out", merged, NULL};
    CHECK(cl_cli(&C, &out, 60, args) == 0);
    CHECK(strstr(out, "806 spans of 2 ranks") != NULL);
    free(out);
    /* by job id: the store of the job's file, asked of the coordinator */
    char ids[24], by_id[400];
    snprintf(ids, sizeof ids, "%lld", (long long)id);
    snprintf(by_id, sizeof by_id, "%s/by-id.json", C.dir);
    const char *args_id[] = {"trace", ids, "--out", by_id, "--rank", "1", NULL};
    CHECK(cl_cli(&C, &out, 60, args_id) == 0);
    CHECK(strstr(out, "403 spans of 1 rank") != NULL);
    free(out);
    const char *args_none[] = {"trace", "999999", "--out", by_id, NULL};
    CHECK(cl_cli(&C, &out, 60, args_none) == 3);
    free(out);
    char *m = slurp(merged);
    CHECK(m && strstr(m, "\"pid\":0") && strstr(m, "\"pid\":1") && strstr(m, "\"name\":\"allreduce 0\""));
    free(m);
    snprintf(path, sizeof path, "%s/traced/history.jsonl", C.dir);
    char *h = slurp(path);
    CHECK(h && strstr(h, "\"slowest_rank\":"));
    /* monitor = val_exp_rmspe: an epoch is "best" when it lowers that */
    double lowest = INFINITY;
    for (char *line = h; line && *line;) {
        char *nl = strchr(line, '\n');
        rt_json *e = NULL;
        char err[RT_ERR_LEN];
        CHECK(rt_json_parse(line, nl ? (size_t)(nl - line) : strlen(line), &e, err) == RT_OK);
        double v = rt_json_num(rt_json_get(e, "val_exp_rmspe"), NAN);
        CHECK(rt_json_bool(rt_json_get(e, "best"), false) == (v < lowest));
        if (v < lowest)
            lowest = v;
        rt_json_free(e);
        line = nl ? nl + 1 : NULL;
    }
    free(h);
}

/* --set output.store=RELATIVE is relative to where the command runs, not to
 * the job file (nor to `ringtrain run`'s temporary folder). */
static void test_relative_set(void **state)
{
    (void)state;
    char cwd[1024], rel[64], want[1200];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(rel, sizeof rel, "relset-%d", (int)getpid());
    char *out = NULL, set[128];
    snprintf(set, sizeof set, "output.store=%s", rel);
    const char *args[] = {"submit", job_file("relset", 1), "--set", set, "--follow", NULL};
    CHECK(cl_cli(&C, &out, 120, args) == 0);
    /* without a terminal: the epoch's line, then the summary */
    CHECK(out && strstr(out, "epoch 1/1") && strstr(out, "best epoch 1 of 1: loss "));
    free(out);
    snprintf(want, sizeof want, "%s/%s/history.jsonl", cwd, rel);
    CHECK(access(want, F_OK) == 0);
    run_cmd("rm -rf %s/%s", cwd, rel);
}

static void test_kill_and_resume(void **state)
{
    (void)state;
    const int E = 40;
    int64_t id = cl_submit_file(&C, job_file("resume", E));
    CHECK(id > 0);
    char hist[600];
    snprintf(hist, sizeof hist, "%s/resume/history.jsonl", C.dir);
    /* wait for two epochs, then kill -9 rank 1 */
    int64_t end = rt_now_ns() + 120000000000LL;
    char *h = NULL;
    while (rt_now_ns() < end) {
        free(h);
        h = slurp(hist);
        if (h && count_lines(h) >= 2)
            break;
        cl_sleep_ms(20);
    }
    CHECK(h && count_lines(h) >= 2);
    free(h);
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    rt_json *doc = cl_get(&C, path);
    int64_t pid = 0;
    rt_json_get_int(rt_json_at(rt_json_get(doc, "placement"), 1), "pid", &pid);
    rt_json_free(doc);
    CHECK(pid > 0);
    CHECK(kill((pid_t)pid, SIGKILL) == 0);
    doc = cl_wait_job(&C, id, NULL, 180000);
    CHECK(doc != NULL);
    fprintf(stderr, "after killing rank 1 (pid %lld): %s, %s\n", (long long)pid,
            cl_job_state(doc), rt_json_str(rt_json_get(rt_json_get(doc, "job"), "reason"), ""));
    CHECK(!strcmp(cl_job_state(doc), "succeeded"));
    int64_t attempt = 0;
    rt_json_get_int(rt_json_get(doc, "job"), "attempt", &attempt);
    CHECK(attempt == 2);
    rt_json_free(doc);
    /* the history: epochs 1..E once each, in order; the second attempt
     * starts after the first one's last checkpoint, not at epoch 1 */
    h = slurp(hist);
    CHECK(h && count_lines(h) == E);
    int first_of_2 = 0, e = 0;
    double val1 = 0, val_resumed = 0;
    for (char *line = h; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        int ep = 0, at = 0;
        const char *p = strstr(line, "\"epoch\":"), *q = strstr(line, "\"attempt\":");
        CHECK(p && q);
        ep = atoi(p + 8);
        at = atoi(q + 10);
        CHECK(ep == ++e);
        double v = atof(strstr(line, "\"val_loss\":") + 11);
        if (ep == 1)
            val1 = v;
        if (at == 2 && !first_of_2) {
            first_of_2 = ep;
            val_resumed = v;
        }
    }
    free(h);
    fprintf(stderr, "resumed at epoch %d (val_loss %.4f; epoch 1 had %.4f)\n", first_of_2,
            val_resumed, val1);
    CHECK(first_of_2 > 1);
    CHECK(val_resumed < val1); /* it continued from the trained model */
}

static void test_damage(void **state)
{
    (void)state;
    /* runA's last.ckpt with one byte flipped: resuming from it must fail */
    char ck[600];
    snprintf(ck, sizeof ck, "%s/runA/last.ckpt", C.dir);
    CHECK(run_cmd("printf '\\x55' | dd of=%s bs=1 seek=300 conv=notrunc status=none", ck) == 0);
    char ini[400];
    snprintf(ini, sizeof ini, "%s", job_file("runA", 5));
    char *out = NULL;
    const char *args[] = {"submit", ini, "--set", "job.max_restarts=0", "--follow", NULL};
    int rc = cl_cli(&C, &out, 120, args);
    fprintf(stderr, "resume from a damaged checkpoint: rc %d\n%s", rc, out);
    CHECK(rc != 0);
    CHECK(strstr(out, "last.ckpt is damaged") && strstr(out, "CRC mismatch"));
    free(out);

    /* a shard cut short */
    char shard[600];
    snprintf(shard, sizeof shard, "%s/train-00001.rts", ds_dir);
    CHECK(run_cmd("truncate -s -100 %s", shard) == 0);
    const char *args2[] = {"submit", job_file("runC", 2), "--set", "job.max_restarts=0",
                           "--follow", NULL};
    rc = cl_cli(&C, &out, 120, args2);
    fprintf(stderr, "a truncated shard: rc %d\n%s", rc, out);
    CHECK(rc != 0);
    CHECK(strstr(out, "train-00001.rts is truncated"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_determinism_and_predict),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_relative_set),
        cmocka_unit_test(test_kill_and_resume),
        cmocka_unit_test(test_damage),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
