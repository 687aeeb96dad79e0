/* test_cluster_sweep.c — a sweep on a real cluster on loopback (a
 * coordinator, two agents of 2 slots), on satimage prepared by `prep
 * --from` (../shared/data/tabular):
 *   - chaos: the coordinator SIGKILLed twice while the trials run, started
 *     again on the same database — every trial is recorded once (one job
 *     each, none run twice), the last step writes trials.jsonl and best/,
 *     the sweep succeeds;
 *   - `ringtrain status` shows the trials sorted by the monitor, `ringtrain
 *     jobs` lists them under their sweep, /metrics counts them by state;
 *   - a sweep whose space does not fit the job schema is refused before
 *     anything is queued, naming file:line and key; so is one whose store
 *     holds an earlier sweep;
 *   - a time budget stops the running trials and cancels the rest, and the
 *     results come from the trials that ran;
 *   - on a dataset without test rows the results hold no predictions;
 *   - a sweep given by --set alone searches its family's default space;
 *   - a rank's warning is one of its job's events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster_harness.h"
#include "rt_time.h"

static cluster C;
static bool failed_once;
static char ds_dir[300];

#define CHECK(cond) CL_CHECK(&failed_once, cond)

static int group_setup(void **state)
{
    (void)state;
    struct stat sb;
    if (stat(RT_SATIMAGE, &sb) != 0) {
        fprintf(stderr, "test_cluster_sweep: %s is missing (../shared/data)\n", RT_SATIMAGE);
        return -1;
    }
    if (!cl_init(&C, "sweep"))
        return -1;
    snprintf(ds_dir, sizeof ds_dir, "%s/sat", C.dir);
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "%s prep --from %s --label classes --test-column is_test --out %s --quiet "
             "> /dev/null 2>&1",
             RT_TEST_CLI, RT_SATIMAGE, ds_dir);
    if (system(cmd) != 0)
        return -1;
    if (!cl_start_coord(&C, NULL, NULL) || !cl_start_agent(&C, 0, "a1", "A", 2, NULL) ||
        !cl_start_agent(&C, 1, "b1", "B", 2, NULL) || !cl_wait_agents_up(&C, 2, 20000)) {
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

static const char *sweep_file_with(const char *name, const char *dataset, int epochs, int trials,
                                   int parallel, const char *extra)
{
    static char path[400];
    snprintf(path, sizeof path, "%s/%s.ini", C.dir, name);
    FILE *f = fopen(path, "w");
    fprintf(f,
            "[job]\nname = %s\ntype = sweep\nnp = 1\n[data]\ndataset = %s\n"
            "[model]\narchitecture = mlp\nhidden = 64\nthreads = 1\n"
            "[train]\nepochs = %d\nbatch_size = 32\nmonitor = val_accuracy\n"
            "[output]\nstore = %s/%s\n"
            "[sweep]\ntrials = %d\nparallel = %d\ngrace_epochs = 3\nseed = 7\n"
            "space.train.learning_rate = loguniform(1e-4, 1e-2)\n"
            "space.model.hidden = choice(64 | 32 | 128)\n%s",
            name, dataset, epochs, C.dir, name, trials, parallel, extra ? extra : "");
    fclose(f);
    return path;
}

static const char *sweep_file(const char *name, const char *extra)
{
    return sweep_file_with(name, ds_dir, 24, 10, 4, extra);
}

static bool exists(const char *dir, const char *name)
{
    char p[700];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0;
}

/* how many times what is in text (NULL: none) */
static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *q = text ? strstr(text, what) : NULL; q; q = strstr(q + 1, what))
        n++;
    return n;
}

static void test_sweep_survives_coordinator_kills(void **state)
{
    (void)state;
    char *out = NULL;
    const long long id = cl_submit_file(&C, sweep_file("chaos", NULL));
    CHECK(id > 0);
    /* two kills while trials run: after the 2nd and the 6th trial ended */
    char path[64], metric[96];
    snprintf(path, sizeof path, "/v1/jobs/%lld", id);
    for (int k = 0; k < 2; k++) {
        int ended = 0;
        for (int wait = 0; wait < 600 && ended < (k == 0 ? 2 : 6); wait++) {
            cl_sleep_ms(100);
            rt_json *d = cl_get(&C, path);
            const rt_json *ts = rt_json_get(rt_json_get(d, "sweep"), "trial_list");
            ended = 0;
            for (size_t i = 0; i < rt_json_len(ts); i++) {
                const char *st = rt_json_str(rt_json_get(rt_json_at(ts, i), "state"), "");
                ended += strcmp(st, "running") != 0 && strcmp(st, "pending") != 0;
            }
            rt_json_free(d);
        }
        CHECK(ended >= (k == 0 ? 2 : 6) && ended < 10); /* the kill lands mid-sweep */
        if (k == 0) {                                   /* /metrics: its trials by state */
            snprintf(metric, sizeof metric,
                     "ringtrain_sweep_trials{sweep=\"%lld\",state=\"running\"}", id);
            CHECK(cl_metric(&C, metric) > 0);
        }
        cl_stop(&C.coord, SIGKILL);
        cl_sleep_ms(300);
        CHECK(cl_start_coord(&C, NULL, NULL));
    }
    rt_json *d = cl_wait_job(&C, id, "succeeded", 240000);
    if (!d || strcmp(cl_job_state(d), "succeeded") != 0)
        fprintf(stderr, "the sweep: %s\n",
                d ? rt_json_str(rt_json_get(rt_json_get(d, "job"), "reason"), "") : "no answer");
    CHECK(d && !strcmp(cl_job_state(d), "succeeded"));
    const rt_json *sw = rt_json_get(d, "sweep"), *ts = rt_json_get(sw, "trial_list");
    CHECK(rt_json_len(ts) == 10);
    int64_t finish = 0, best = 0;
    rt_json_get_int(sw, "finish_job", &finish);
    rt_json_get_int(sw, "best_trial", &best);
    CHECK(finish > 0 && best >= 1 && best <= 10);
    /* every trial once: one job each, every one ended, none submitted twice */
    rt_json *list = cl_get(&C, "/v1/jobs?limit=200");
    int trials = 0, steps = 0;
    for (size_t i = 0; i < rt_json_len(rt_json_get(list, "jobs")); i++) {
        const rt_json *j = rt_json_at(rt_json_get(list, "jobs"), i);
        int64_t s = 0, t = 0;
        rt_json_get_int(j, "sweep", &s);
        rt_json_get_int(j, "trial", &t);
        if (s != id)
            continue;
        trials += t > 0;
        steps += t == 0;
        CHECK(!strcmp(rt_json_str(rt_json_get(j, "state"), ""), "succeeded") ||
              !strcmp(rt_json_str(rt_json_get(j, "state"), ""), "failed"));
    }
    rt_json_free(list);
    if (trials != 10 || steps != 1)
        fprintf(stderr, "%d trial jobs and %d last steps for 10 trials\n", trials, steps);
    CHECK(trials == 10 && steps == 1);
    for (size_t i = 0; i < rt_json_len(ts); i++) {
        const char *st = rt_json_str(rt_json_get(rt_json_at(ts, i), "state"), "");
        CHECK(!strcmp(st, "completed") || !strcmp(st, "stopped"));
    }
    rt_json_free(d);
    /* the results in the store */
    char store[400], best_dir[420], line[4096];
    snprintf(store, sizeof store, "%s/chaos", C.dir);
    snprintf(best_dir, sizeof best_dir, "%s/best", store);
    CHECK(exists(best_dir, "best.ckpt") && exists(best_dir, "best.ini") &&
          exists(best_dir, "history.jsonl") && exists(best_dir, "submission.csv"));
    snprintf(line, sizeof line, "%s/trials.jsonl", store);
    FILE *f = fopen(line, "r");
    int lines = 0;
    while (f && fgets(line, sizeof line, f))
        lines += strstr(line, "\"trial\":") != NULL;
    if (f)
        fclose(f);
    CHECK(lines == 10);
    /* people's views */
    char ids[24];
    snprintf(ids, sizeof ids, "%lld", id);
    const char *sargs[] = {"status", ids, NULL};
    CHECK(cl_cli(&C, &out, 30, sargs) == 0);
    CHECK(out && strstr(out, "TRIAL") && strstr(out, "val_accuracy") && strstr(out, "best:"));
    free(out);
    const char *jargs[] = {"jobs", NULL};
    CHECK(cl_cli(&C, &out, 30, jargs) == 0);
    CHECK(out && strstr(out, "  chaos-trial-"));
    free(out);
}

static void test_bad_space_refused(void **state)
{
    (void)state;
    char *out = NULL;
    const char *args[] = {"submit",
                          sweep_file("bad", "space.model.dropout = uniform(0.5, 1.5)\n"
                                            "space.train.nosuch = int(1, 4)\n"),
                          NULL};
    CHECK(cl_cli(&C, &out, 30, args) == 2);
    CHECK(out && strstr(out, "bad.ini:25: [sweep] space.train.nosuch: no job key train.nosuch"));
    free(out);
    const char *args2[] = {"submit",
                           sweep_file("bad2", "space.model.dropout = uniform(0.5, 1.5)\n"), NULL};
    CHECK(cl_cli(&C, &out, 30, args2) == 2);
    CHECK(out && strstr(out, "bad2.ini:24: [sweep] space.model.dropout: the upper bound 1.5: "
                             "[model] dropout"));
    free(out);
    rt_json *list = cl_get(&C, "/v1/jobs?limit=200");
    for (size_t i = 0; i < rt_json_len(rt_json_get(list, "jobs")); i++)
        CHECK(
            strncmp(rt_json_str(rt_json_get(rt_json_at(rt_json_get(list, "jobs"), i), "name"), ""),
                    "bad", 3) != 0); /* nothing was queued */
    rt_json_free(list);
}

/* the chaos sweep's store again: its trials would resume the old ones */
static void test_store_reuse_refused(void **state)
{
    (void)state;
    char *out = NULL;
    const char *args[] = {"submit", sweep_file("chaos", NULL), NULL};
    CHECK(cl_cli(&C, &out, 30, args) == 2);
    CHECK(out && strstr(out, "holds an earlier sweep") && strstr(out, "nothing was submitted"));
    free(out);
}

/* [sweep] time_budget on real trials: long ones (2000 epochs), 2 at a
 * time; after 10 s the running ones are aborted and recorded as stopped by
 * the budget, the others cancelled, and the last step writes trials.jsonl
 * and best/ from the trials that ran. */
static void test_time_budget(void **state)
{
    (void)state;
    char *out = NULL;
    const long long id =
        cl_submit_file(&C, sweep_file_with("budget", ds_dir, 2000, 10, 2,
                                           "scheduler = random\ntime_budget = 10s\n"));
    CHECK(id > 0);
    double t0 = rt_now_s();
    rt_json *d = cl_wait_job(&C, id, "succeeded", 120000);
    const double took = rt_now_s() - t0;
    if (!d || strcmp(cl_job_state(d), "succeeded") != 0)
        fprintf(stderr, "the budget sweep: %s\n",
                d ? rt_json_str(rt_json_get(rt_json_get(d, "job"), "reason"), "") : "no answer");
    CHECK(d && !strcmp(cl_job_state(d), "succeeded"));
    CHECK(took >= 9.5 && took < 90); /* not before its budget, not long after */
    rt_json_free(d);
    char line[4096];
    snprintf(line, sizeof line, "%s/budget/trials.jsonl", C.dir);
    FILE *f = fopen(line, "r");
    int stopped = 0, cancelled = 0, other = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (strstr(line, "\"state\":\"stopped by the time budget\"") &&
            strstr(line, "stopped by the sweep's time budget (10s) after"))
            stopped++;
        else if (strstr(line, "\"state\":\"cancelled\"") && strstr(line, "not started"))
            cancelled++;
        else {
            other++;
            fprintf(stderr, "trials.jsonl: %s", line);
        }
    }
    if (f)
        fclose(f);
    if (stopped != 2 || cancelled != 8 || other)
        fprintf(stderr, "trials.jsonl: %d stopped, %d cancelled, %d else\n", stopped, cancelled,
                other);
    CHECK(stopped == 2 && cancelled == 8 && other == 0);
    snprintf(line, sizeof line, "%s/budget/best", C.dir);
    CHECK(exists(line, "best.ckpt") && exists(line, "best.ini"));
    /* `ringtrain status`: the two stopped trials' rung column says why */
    char ids[24];
    snprintf(ids, sizeof ids, "%lld", id);
    const char *sargs[] = {"status", ids, NULL};
    CHECK(cl_cli(&C, &out, 30, sargs) == 0);
    const int budget = count(out, "stopped    budget");
    if (budget != 2)
        fprintf(stderr, "status:\n%s\n", out ? out : "");
    CHECK(budget == 2);
    free(out);
}

/* A dataset without test rows: the sweep's best/ holds its model and
 * best.ini, and no predictions (its results step predicted before, and
 * failed the sweep: "has no test rows to predict"). */
static void test_no_test_rows(void **state)
{
    (void)state;
    char cmd[1200], ds[400];
    snprintf(ds, sizeof ds, "%s/sat_notest", C.dir);
    snprintf(cmd, sizeof cmd,
             "%s prep --from %s --label classes --drop is_test --out %s --quiet > /dev/null 2>&1",
             RT_TEST_CLI, RT_SATIMAGE, ds);
    CHECK(system(cmd) == 0);
    const long long id =
        cl_submit_file(&C, sweep_file_with("notest", ds, 2, 3, 3, "scheduler = random\n"));
    CHECK(id > 0);
    rt_json *d = cl_wait_job(&C, id, "succeeded", 120000);
    if (!d || strcmp(cl_job_state(d), "succeeded") != 0)
        fprintf(stderr, "the sweep without test rows: %s\n",
                d ? rt_json_str(rt_json_get(rt_json_get(d, "job"), "reason"), "") : "no answer");
    CHECK(d && !strcmp(cl_job_state(d), "succeeded"));
    rt_json_free(d);
    char best[400];
    snprintf(best, sizeof best, "%s/notest/best", C.dir);
    CHECK(exists(best, "best.ckpt") && exists(best, "best.ini") && exists(best, "history.jsonl"));
    CHECK(!exists(best, "submission.csv"));
}

/* `ringtrain submit` of a 4-trial sweep given by --set alone into
 * C.dir/NAME on the prepared table, with one more --set (NULL: none):
 * the job's id (0: refused), what the CLI printed into *out. */
static long long submit_set_sweep(const char *name, const char *set, char **out)
{
    char dsset[440], stset[440];
    snprintf(dsset, sizeof dsset, "data.dataset=%s", ds_dir);
    snprintf(stset, sizeof stset, "output.store=%s/%s", C.dir, name);
    const char *args[] = {"submit",
                          "--np",
                          "1",
                          "--set",
                          "job.type=sweep",
                          "--set",
                          "sweep.trials=4",
                          "--set",
                          "sweep.parallel=2",
                          "--set",
                          dsset,
                          "--set",
                          stset,
                          "--set",
                          "model.threads=1",
                          "--set",
                          "train.epochs=3",
                          "--set",
                          "train.monitor=val_accuracy",
                          set ? "--set" : NULL,
                          set,
                          NULL};
    if (cl_cli(&C, out, 30, args) != 0)
        return 0;
    const char *sub = *out ? strstr(*out, "submitted job ") : NULL;
    return sub ? atoll(sub + strlen("submitted job ")) : 0;
}

/* The sweep's record once it succeeded (NULL, said, when it did not) */
static rt_json *sweep_succeeded(long long id, const char *what)
{
    rt_json *d = cl_wait_job(&C, id, "succeeded", 180000);
    if (!d || strcmp(cl_job_state(d), "succeeded") != 0)
        fprintf(stderr, "%s: %s\n", what,
                d ? rt_json_str(rt_json_get(rt_json_get(d, "job"), "reason"), "") : "no answer");
    CHECK(d && !strcmp(cl_job_state(d), "succeeded"));
    return d;
}

/* Whether the file holds the line (its newline included) */
static bool has_line(const char *path, const char *want)
{
    FILE *f = fopen(path, "r");
    char line[512];
    bool found = false;
    while (f && fgets(line, sizeof line, f))
        found |= !strcmp(line, want);
    if (f)
        fclose(f);
    return found;
}

/* A sweep given by --set alone on the table prep --from made (the README's
 * one command): no space.* line, so its trials search mlp's default space
 * — said before submitting, each trial's values those keys', within their
 * ranges, trained with AdamW — and the sweep writes its best/. */
static void test_default_space(void **state)
{
    (void)state;
    char *out = NULL;
    const long long id = submit_set_sweep("default", "model.architecture=mlp", &out);
    CHECK(out && strstr(out, "has no [sweep] space.* line: its trials search mlp's default "
                             "space (docs/sweeps.md):\n  space.model.hidden = choice("));
    free(out);
    CHECK(id > 0);
    rt_json *d = sweep_succeeded(id, "the default-space sweep");
    const rt_json *ts = rt_json_get(rt_json_get(d, "sweep"), "trial_list");
    CHECK(rt_json_len(ts) == 4);
    for (size_t i = 0; i < rt_json_len(ts); i++) {
        const rt_json *p = rt_json_get(rt_json_at(ts, i), "params");
        const char *lr = rt_json_str(rt_json_get(p, "train.learning_rate"), "");
        const char *drop = rt_json_str(rt_json_get(p, "model.dropout"), "");
        CHECK(atof(lr) >= 1e-5 && atof(lr) <= 1e-2 && atof(drop) >= 0 && atof(drop) <= 0.5);
        CHECK(rt_json_str(rt_json_get(p, "model.hidden"), NULL) != NULL);
        CHECK(rt_json_str(rt_json_get(p, "train.weight_decay"), NULL) != NULL);
        CHECK(!strcmp(rt_json_str(rt_json_get(p, "train.optimizer"), ""), "adamw"));
    }
    rt_json_free(d);
    /* `ringtrain status`: the one-value choice said once, not on each row */
    char ids[24];
    snprintf(ids, sizeof ids, "%lld", id);
    const char *sargs[] = {"status", ids, NULL};
    CHECK(cl_cli(&C, &out, 30, sargs) == 0);
    CHECK(count(out, "\n  every trial: optimizer=adamw\n") == 1 && count(out, "optimizer=") == 1);
    free(out);
    char best[420];
    snprintf(best, sizeof best, "%s/default/best", C.dir);
    CHECK(exists(best, "best.ckpt") && exists(best, "best.ini"));
    snprintf(best, sizeof best, "%s/default/best/best.ini", C.dir);
    CHECK(has_line(best, "optimizer = adamw\n"));
}

/* model.architecture = choice(mlp | dcn2) as the sweep's one space.* line:
 * each trial searches its family's default space — said before
 * submitting —, its values that family's keys alone (the records, the
 * trials' jobs), and best.ini is the best trial's family. */
static void test_architecture_choice(void **state)
{
    (void)state;
    char *out = NULL;
    const long long id =
        submit_set_sweep("families", "sweep.space.model.architecture=choice(mlp | dcn2)", &out);
    CHECK(out && strstr(out, "searches model.architecture alone: each trial searches its "
                             "architecture's default space (docs/sweeps.md):\n"));
    CHECK(out && strstr(out, "  space.model.cross_layers = int(1, 8)    ; dcn2\n"));
    free(out);
    CHECK(id > 0);
    rt_json *d = sweep_succeeded(id, "the sweep of two families");
    const rt_json *ts = rt_json_get(rt_json_get(d, "sweep"), "trial_list");
    CHECK(rt_json_len(ts) == 4);
    const double best = rt_json_num(rt_json_get(rt_json_get(d, "sweep"), "best_trial"), 0);
    int fam[2] = {0, 0};
    char want[64] = "";
    for (size_t i = 0; i < rt_json_len(ts); i++) {
        const rt_json *t = rt_json_at(ts, i), *p = rt_json_get(t, "params");
        const char *arch = rt_json_str(rt_json_get(p, "model.architecture"), "");
        const bool dcn2 = !strcmp(arch, "dcn2");
        CHECK(dcn2 || !strcmp(arch, "mlp"));
        fam[dcn2]++;
        CHECK((rt_json_get(p, "model.hidden") != NULL) == !dcn2); /* mlp's alone */
        const int cross = atoi(rt_json_str(rt_json_get(p, "model.cross_layers"), "0"));
        CHECK(dcn2 ? cross >= 1 && cross <= 8 : cross == 0);
        CHECK(!strcmp(rt_json_str(rt_json_get(p, "train.optimizer"), ""), "adamw"));
        const char *st = rt_json_str(rt_json_get(t, "state"), "");
        CHECK(!strcmp(st, "completed") || !strcmp(st, "stopped"));
        if (rt_json_num(rt_json_get(t, "trial"), 0) == best)
            snprintf(want, sizeof want, "architecture = %s\n", arch);
    }
    if (fam[0] == 0 || fam[1] == 0)
        fprintf(stderr, "families drawn: %d mlp, %d dcn2\n", fam[0], fam[1]);
    CHECK(fam[0] > 0 && fam[1] > 0); /* seed 0's four trials: both */
    rt_json_free(d);
    char path[420];
    snprintf(path, sizeof path, "%s/families/best/best.ini", C.dir);
    if (!want[0] || !has_line(path, want))
        fprintf(stderr, "%s has no '%s'\n", path, want);
    CHECK(want[0] && has_line(path, want));
}

/* A rank's warning reaches the job's events (`ringtrain status`, the
 * dashboard), not only its log: the Rossmann network's batch norms (its
 * layers narrowed: the test's time) on 2 epochs of 14 steps keep most of
 * their start. */
static void test_rank_warning_is_an_event(void **state)
{
    (void)state;
    char path[400], *out = NULL;
    snprintf(path, sizeof path, "%s/bnlag.ini", C.dir);
    FILE *f = fopen(path, "w");
    fprintf(f,
            "[job]\nname = bnlag\nnp = 1\n[data]\ndataset = %s\n[model]\nthreads = 1\n"
            "hidden = 64, 32\n"
            "[train]\nepochs = 2\nbatch_size = 256\n[output]\nstore = %s/bnlag\n",
            ds_dir, C.dir);
    fclose(f);
    const long long id = cl_submit_file(&C, path);
    CHECK(id > 0);
    rt_json *d = cl_wait_job(&C, id, "succeeded", 120000);
    CHECK(d && !strcmp(cl_job_state(d), "succeeded"));
    int said = 0;
    const rt_json *ev = rt_json_get(d, "events");
    for (size_t i = 0; i < rt_json_len(ev); i++) {
        const rt_json *e = rt_json_at(ev, i);
        said += !strcmp(rt_json_str(rt_json_get(e, "kind"), ""), "warning") &&
                !strncmp(rt_json_str(rt_json_get(e, "message"), ""),
                         "rank 0: the batch norm's moving statistics", 42);
    }
    rt_json_free(d);
    CHECK(said == 1);
    char ids[24];
    snprintf(ids, sizeof ids, "%lld", id);
    const char *sargs[] = {"status", ids, NULL};
    CHECK(cl_cli(&C, &out, 30, sargs) == 0);
    CHECK(out && strstr(out, "warning    rank 0: the batch norm's"));
    free(out);
    /* followed: said once — by the CLI before submitting, its rank's same
     * warning not again */
    char store2[440];
    snprintf(store2, sizeof store2, "output.store=%s/bnlag2", C.dir);
    const char *fargs[] = {"submit", path, "--follow", "--set", store2, NULL};
    CHECK(cl_cli(&C, &out, 120, fargs) == 0);
    const int n = count(out, "the batch norm's moving statistics");
    if (n != 1)
        fprintf(stderr, "submit --follow:\n%s\n", out ? out : "");
    CHECK(n == 1);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_space_refused),
        cmocka_unit_test(test_sweep_survives_coordinator_kills),
        cmocka_unit_test(test_store_reuse_refused),
        cmocka_unit_test(test_time_budget),
        cmocka_unit_test(test_no_test_rows),
        cmocka_unit_test(test_default_space),
        cmocka_unit_test(test_architecture_choice),
        cmocka_unit_test(test_rank_warning_is_an_event),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
