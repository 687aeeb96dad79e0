/* test_ensemble.c — the weighted ensemble (rt_ensemble.h) on its own:
 *   - each metric against a plain reference of its definition on random
 *     predictions (AUC: the pairs ranked right, ties half);
 *   - the greedy selection against a reference written from Caruana et
 *     al.'s description on random problems (the same picks), and what holds
 *     whatever the data: the ensemble never scores worse than its best
 *     member, one member or identical ones weigh all on the first, two
 *     regressions erring in opposite directions are averaged half and half;
 *   - rt_ensemble_run on stores written here: the weighted mean written in
 *     the members' layout (a class name with a comma quoted), ensemble.json,
 *     and every malformed or mismatched input refused naming file and line. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "rt_ensemble.h"
#include "rt_file.h"
#include "rt_json.h"
#include "test_util.h"

/* ---- metrics ------------------------------------------------------------------ */

typedef struct problem {
    rt_ens_problem p;
    double *pred[8];
    int32_t *label;
    double *target;
} problem;

/* M members of n rows: K class probabilities (K > 0) or values (K = 0);
 * coarse values make ties */
static void make(problem *q, int M, int64_t n, int K, rt_ens_metric metric, tu_rng *rng)
{
    memset(q, 0, sizeof *q);
    const int w = K ? K : 1;
    q->label = malloc((size_t)n * sizeof *q->label);
    q->target = malloc((size_t)n * sizeof *q->target);
    for (int64_t i = 0; i < n; i++) {
        q->label[i] = K ? (int32_t)tu_int(rng, 0, K - 1) : 0;
        q->target[i] = 1 + 3 * tu_uniform(rng);
    }
    for (int m = 0; m < M; m++) {
        q->pred[m] = malloc((size_t)(n * w) * sizeof(double));
        for (int64_t i = 0; i < n; i++) {
            double s = 0;
            for (int k = 0; k < w; k++) {
                double v =
                    K ? floor(1 + 8 * tu_uniform(rng)) : q->target[i] + tu_range(rng, -1.5, 1.5);
                if (K && k == q->label[i] && tu_uniform(rng) < 0.6)
                    v += 6; /* a member right more often than not */
                q->pred[m][i * w + k] = K ? v : fmax(v, 0.05);
                s += v;
            }
            for (int k = 0; K && k < K; k++)
                q->pred[m][i * w + k] /= s;
        }
    }
    q->p = (rt_ens_problem){.nmembers = M,
                            .nrows = n,
                            .ncols = w,
                            .pred = (const double *const *)q->pred,
                            .label = q->label,
                            .target = q->target,
                            .metric = metric};
}

static void unmake(problem *q)
{
    for (int m = 0; m < q->p.nmembers; m++)
        free(q->pred[m]);
    free(q->label), free(q->target);
}

static double ref_metric(const rt_ens_problem *p, const double *x)
{
    const int K = p->ncols;
    const int64_t n = p->nrows;
    double s = 0, pairs = 0;
    for (int64_t i = 0; i < n; i++)
        switch (p->metric) {
        case RT_ENS_LOG_LOSS:
            s += -log(fmax(x[i * K + p->label[i]], 1e-15));
            break;
        case RT_ENS_ACCURACY: {
            int b = 0;
            for (int k = 0; k < K; k++)
                b = x[i * K + k] > x[i * K + b] ? k : b;
            s += b == p->label[i];
            break;
        }
        case RT_ENS_AUC:
            for (int64_t j = 0; p->label[i] == 1 && j < n; j++)
                if (p->label[j] == 0) {
                    pairs++;
                    s += x[i * K + 1] > x[j * K + 1] ? 1 : x[i * K + 1] == x[j * K + 1] ? 0.5 : 0;
                }
            break;
        case RT_ENS_RMSE:
            s += (x[i] - p->target[i]) * (x[i] - p->target[i]);
            break;
        case RT_ENS_MAE:
            s += fabs(x[i] - p->target[i]);
            break;
        case RT_ENS_RMSE_LOG:
            s += pow(log(x[i]) - log(p->target[i]), 2);
            break;
        default:
            break;
        }
    if (p->metric == RT_ENS_AUC)
        return s / pairs;
    return p->metric == RT_ENS_RMSE || p->metric == RT_ENS_RMSE_LOG ? sqrt(s / n) : s / n;
}

static void test_metrics(void **state)
{
    (void)state;
    tu_rng rng = tu_rng_make(__LINE__);
    const struct {
        rt_ens_metric m;
        int K;
    } cases[] = {{RT_ENS_LOG_LOSS, 3}, {RT_ENS_ACCURACY, 5}, {RT_ENS_AUC, 2},     {RT_ENS_RMSE, 0},
                 {RT_ENS_MAE, 0},      {RT_ENS_RMSE_LOG, 0}, {RT_ENS_LOG_LOSS, 2}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int rep = 0; rep < 5; rep++) {
            problem q;
            make(&q, 1, tu_int(&rng, 1, 300), cases[c].K, cases[c].m, &rng);
            const double got = rt_ens_score(&q.p, q.pred[0]), want = ref_metric(&q.p, q.pred[0]);
            if (!(fabs(got - want) <= 1e-12 * fmax(1, fabs(want))) &&
                !(isnan(want) && got == 0.5)) /* AUC of one class only: 0.5 */
                fail_msg("%s: %.15g, the definition %.15g", rt_ens_metric_name(cases[c].m), got,
                         want);
            unmake(&q);
        }
    rt_ens_metric m;
    assert_true(rt_ens_metric_parse("rmse_log", &m) && m == RT_ENS_RMSE_LOG);
    assert_false(rt_ens_metric_parse("rmsle", &m));
    assert_true(rt_ens_metric_higher_better(RT_ENS_AUC));
    assert_false(rt_ens_metric_higher_better(RT_ENS_LOG_LOSS));
}

/* ---- the selection --------------------------------------------------------------- */

/* Caruana et al. 2004, as written there: add the member that makes the
 * averaged ensemble best, with replacement; keep the best prefix */
static void ref_select(const rt_ens_problem *p, int rounds, int *counts, int *kept)
{
    const size_t cells = (size_t)(p->nrows * p->ncols);
    double *sum = calloc(cells, sizeof *sum), *avg = malloc(cells * sizeof *avg);
    int picks[64];
    double best = INFINITY, sign = rt_ens_metric_higher_better(p->metric) ? -1 : 1;
    for (int r = 0; r < rounds; r++) {
        int pick = -1;
        double pick_v = INFINITY;
        for (int m = 0; m < p->nmembers; m++) {
            for (size_t c = 0; c < cells; c++)
                avg[c] = (sum[c] + p->pred[m][c]) / (r + 1);
            double v = sign * ref_metric(p, avg);
            if (pick < 0 || v < pick_v)
                pick = m, pick_v = v;
        }
        for (size_t c = 0; c < cells; c++)
            sum[c] += p->pred[pick][c];
        picks[r] = pick;
        if (r == 0 || pick_v < best - 1e-12 * fabs(best)) /* past rounding */
            best = pick_v, *kept = r + 1;
    }
    memset(counts, 0, (size_t)p->nmembers * sizeof *counts);
    for (int r = 0; r < *kept; r++)
        counts[picks[r]]++;
    free(sum), free(avg);
}

static void test_select_reference(void **state)
{
    (void)state;
    tu_rng rng = tu_rng_make(__LINE__);
    const rt_ens_metric metrics[] = {RT_ENS_LOG_LOSS, RT_ENS_ACCURACY, RT_ENS_AUC,
                                     RT_ENS_RMSE,     RT_ENS_MAE,      RT_ENS_RMSE_LOG};
    char err[RT_ERR_LEN];
    for (size_t c = 0; c < sizeof metrics / sizeof *metrics; c++)
        for (int rep = 0; rep < 4; rep++) {
            const rt_ens_metric m = metrics[c];
            const int K = m == RT_ENS_AUC ? 2 : m <= RT_ENS_AUC ? 4 : 0;
            problem q;
            make(&q, 2 + rep, tu_int(&rng, 40, 240), K, m, &rng);
            rt_ens_fit fit;
            int counts[8], kept = 0;
            assert_int_equal(rt_ens_select(&q.p, 20, &fit, err), RT_OK);
            ref_select(&q.p, 20, counts, &kept);
            assert_int_equal(fit.rounds_kept, kept);
            int total = 0;
            double best = INFINITY;
            const double sign = rt_ens_metric_higher_better(m) ? -1 : 1;
            for (int i = 0; i < q.p.nmembers; i++) {
                assert_int_equal(fit.counts[i], counts[i]);
                total += fit.counts[i];
                best = fmin(best, sign * fit.member[i]);
                assert_true(fabs(fit.member[i] - ref_metric(&q.p, q.pred[i])) < 1e-12);
            }
            assert_int_equal(total, kept);
            for (int i = 0; i < q.p.nmembers; i++)
                assert_true(fit.weight[i] == (double)counts[i] / kept);
            assert_true(sign * fit.member[fit.best] == best); /* the best member alone */
            /* never worse than the best member alone: round 1 is that member */
            assert_true(sign * fit.ensemble <= best + 1e-12);
            unmake(&q);
        }
}

static void test_select_cases(void **state)
{
    (void)state;
    char err[RT_ERR_LEN];
    tu_rng rng = tu_rng_make(__LINE__);
    problem q;
    rt_ens_fit fit;
    /* one member; then three identical ones: all the weight on the first */
    make(&q, 1, 50, 3, RT_ENS_LOG_LOSS, &rng);
    assert_int_equal(rt_ens_select(&q.p, 25, &fit, err), RT_OK);
    assert_int_equal(fit.rounds_kept, 1);
    assert_int_equal(fit.counts[0], 1);
    assert_true(fit.ensemble == fit.member[0]);
    const double *same[3] = {q.pred[0], q.pred[0], q.pred[0]};
    rt_ens_problem p3 = q.p;
    p3.nmembers = 3;
    p3.pred = same;
    assert_int_equal(rt_ens_select(&p3, 25, &fit, err), RT_OK);
    assert_int_equal(fit.counts[0], 1);
    assert_int_equal(fit.counts[1] + fit.counts[2], 0);
    unmake(&q);

    /* two regressions off by +1 and -1 everywhere, a third off by 3 */
    enum { N = 30 };
    double y[N], a[N], b[N], c[N];
    for (int i = 0; i < N; i++)
        y[i] = i, a[i] = i + 1.0, b[i] = i - 1.0, c[i] = i + 3.0;
    const double *abc[3] = {c, a, b};
    rt_ens_problem r = {
        .nmembers = 3, .nrows = N, .ncols = 1, .pred = abc, .target = y, .metric = RT_ENS_RMSE};
    assert_int_equal(rt_ens_select(&r, 25, &fit, err), RT_OK);
    assert_int_equal(fit.rounds_kept, 2);
    assert_int_equal(fit.counts[0], 0);
    assert_int_equal(fit.counts[1], 1);
    assert_int_equal(fit.counts[2], 1);
    assert_true(fit.ensemble == 0);
    assert_true(fit.member[0] == 3 && fit.member[1] == 1);

    /* what cannot be fitted */
    assert_int_equal(rt_ens_select(&r, 0, &fit, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "rounds"));
    r.nrows = 0;
    assert_int_equal(rt_ens_select(&r, 5, &fit, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "no validation rows"));
}

/* ---- stores -------------------------------------------------------------------- */

static char dir[256];

static void put(const char *store, const char *name, const char *text)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, store);
    assert_int_equal(rt_mkdirs(path, NULL), RT_OK);
    snprintf(path, sizeof path, "%s/%s/%s", dir, store, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* a run over the given stores of dir (bag: --bag); its status, err filled */
static rt_status run_as(bool bag, const char *a, const char *b, rt_ens_metric metric,
                        rt_ens_report *rep, char *err)
{
    char pa[600], pb[600], out[600];
    snprintf(pa, sizeof pa, "%s/%s", dir, a);
    snprintf(pb, sizeof pb, "%s/%s", dir, b);
    snprintf(out, sizeof out, "%s/out", dir);
    const char *stores[2] = {pa, pb};
    rt_ens_opts o = {
        .stores = stores, .nstores = b ? 2 : 1, .out = out, .metric = metric, .bag = bag};
    return rt_ensemble_run(&o, rep, err);
}

static rt_status run(const char *a, const char *b, rt_ens_metric metric, rt_ens_report *rep,
                     char *err)
{
    return run_as(false, a, b, metric, rep, err);
}

#define VAL_HEAD "Id,true_kind,kind,p_a,\"p_b,c\"\n"
#define TEST_HEAD "Id,kind,p_a,\"p_b,c\"\n"

static int setup_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/test_ensemble-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
    (void)state;
    rt_remove_tree(dir);
    return 0;
}

static void test_run_classes(void **state)
{
    (void)state;
    /* member x is right on rows 1 and 2, y on rows 2 and 3: the mean is right on all */
    put("x", "validation_predictions.csv",
        VAL_HEAD "1,a,a,0.9,0.1\n2,\"b,c\",\"b,c\",0.2,0.8\n3,a,\"b,c\",0.4,0.6\n");
    put("y", "validation_predictions.csv",
        VAL_HEAD "1,a,\"b,c\",0.45,0.55\n2,\"b,c\",\"b,c\",0.3,0.7\n3,a,a,0.95,0.05\n");
    put("x", "submission.csv", TEST_HEAD "7,a,1,0\n9,\"b,c\",0.25,0.75\n");
    put("y", "submission.csv", TEST_HEAD "7,\"b,c\",0.5,0.5\n9,a,0.65,0.35\n");
    char err[RT_ERR_LEN];
    rt_ens_report rep;
    if (run("x", "y", RT_ENS_ACCURACY, &rep, err) != RT_OK)
        fail_msg("%s", err);
    assert_true(rep.nclasses > 0);
    assert_int_equal(rep.nclasses, 2);
    assert_int_equal(rep.val_rows, 3);
    assert_int_equal(rep.test_rows, 2);
    assert_int_equal(rep.fit.counts[0], 1);
    assert_int_equal(rep.fit.counts[1], 1);
    assert_true(rep.fit.ensemble == 1.0);
    assert_string_equal(slurp("out/submission.csv"),
                        TEST_HEAD "7,a,0.75,0.25\n9,\"b,c\",0.45,0.55\n");
    assert_string_equal(slurp("out/validation_predictions.csv"),
                        VAL_HEAD "1,a,a,0.675,0.325\n2,\"b,c\",\"b,c\",0.25,0.75\n"
                                 "3,a,a,0.675,0.325\n");
    const char *js = slurp("out/ensemble.json");
    rt_json *j = NULL;
    assert_int_equal(rt_json_parse(js, strlen(js), &j, err), RT_OK);
    assert_string_equal(rt_json_get_str(j, "metric"), "accuracy");
    assert_true(rt_json_num(rt_json_get(j, "val_accuracy"), 0) == 1.0);
    const rt_json *m = rt_json_get(j, "members");
    assert_int_equal(rt_json_len(m), 2);
    assert_true(rt_json_num(rt_json_get(rt_json_at(m, 1), "weight"), 0) == 0.5);
    rt_json_free(j);

    /* the default metric of classes: log loss, and AUC with two classes */
    assert_int_equal(run("x", "y", RT_ENS_AUTO, &rep, err), RT_OK);
    assert_int_equal(rep.metric, RT_ENS_LOG_LOSS);
    assert_int_equal(run("x", "y", RT_ENS_AUC, &rep, err), RT_OK);
    /* a regression's metric is refused, naming the task's */
    assert_int_equal(run("x", "y", RT_ENS_RMSE, &rep, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "log_loss, accuracy, auc"));
}

static void test_run_regression(void **state)
{
    (void)state;
    put("r1", "validation_predictions.csv", "Id,true_price,price\n1,100,110\n2,200,190\n");
    put("r2", "validation_predictions.csv", "Id,true_price,price\n1,100,90\n2,200,210\n");
    put("r1", "submission.csv", "Id,price\n5,300\n");
    put("r2", "submission.csv", "Id,price\n5,100\n");
    char err[RT_ERR_LEN];
    rt_ens_report rep;
    if (run("r1", "r2", RT_ENS_AUTO, &rep, err) != RT_OK)
        fail_msg("%s", err);
    assert_int_equal(rep.metric, RT_ENS_RMSE);
    assert_true(rep.fit.ensemble == 0);
    assert_string_equal(slurp("out/submission.csv"), "Id,price\n5,200\n");
    assert_int_equal(run("r1", "r2", RT_ENS_RMSE_LOG, &rep, err), RT_OK);
    put("r3", "validation_predictions.csv", "Id,true_price,price\n1,100,-4\n2,200,190\n");
    put("r3", "submission.csv", "Id,price\n5,300\n");
    assert_int_equal(run("r1", "r3", RT_ENS_RMSE_LOG, &rep, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "row Id 1 has the prediction -4"));
    assert_int_equal(run("r1", "r2", RT_ENS_AUC, &rep, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "rmse, mae, rmse_log"));
}

static void test_combine(void **state)
{
    (void)state;
    char err[RT_ERR_LEN], a[600], b[600], out[600];
    put("m", "a.csv", "row,kind,p_a,\"p_b,c\"\n1,a,1,0\n2,a,0.6,0.4\n");
    put("m", "b.csv", "row,kind,p_a,\"p_b,c\"\n1,\"b,c\",0,1\n2,\"b,c\",0.2,0.8\n");
    snprintf(a, sizeof a, "%s/m/a.csv", dir);
    snprintf(b, sizeof b, "%s/m/b.csv", dir);
    snprintf(out, sizeof out, "%s/m/out.csv", dir);
    const char *files[2] = {a, b};
    const double w[2] = {0.25, 0.75};
    if (rt_ensemble_combine(files, w, 2, true, out, err) != RT_OK)
        fail_msg("%s", err);
    assert_string_equal(slurp("m/out.csv"),
                        "row,kind,p_a,\"p_b,c\"\n1,\"b,c\",0.25,0.75\n2,\"b,c\",0.3,0.7\n");
    assert_int_equal(rt_ensemble_combine(files, w, 2, false, out, err), RT_OK);
    assert_string_equal(slurp("m/out.csv"), "row,kind\n1,\"b,c\"\n2,\"b,c\"\n");
    /* --input --id --keep's files: text keys in any order, kept columns carried */
    put("m", "k1.csv", "name,kind,p_a,p_b,note\nz,a,0.5,0.5,\"x,1\"\ny,b,0,1,y2\n");
    put("m", "k2.csv", "name,kind,p_a,p_b,note\nz,a,1,0,\"x,1\"\ny,b,0.5,0.5,y2\n");
    snprintf(a, sizeof a, "%s/m/k1.csv", dir);
    snprintf(b, sizeof b, "%s/m/k2.csv", dir);
    const double half[2] = {0.5, 0.5};
    assert_int_equal(rt_ensemble_combine(files, half, 2, true, out, err), RT_OK);
    assert_string_equal(slurp("m/out.csv"),
                        "name,kind,p_a,p_b,note\nz,a,0.75,0.25,\"x,1\"\ny,b,0.25,0.75,y2\n");
    assert_int_equal(rt_ensemble_combine(files, half, 2, false, out, err), RT_OK);
    assert_string_equal(slurp("m/out.csv"), "name,kind,note\nz,a,\"x,1\"\ny,b,y2\n");
    put("m", "k3.csv", "name,kind,p_a,p_b,note\nz,a,1,0,x\nw,b,0.5,0.5,y2\n");
    snprintf(b, sizeof b, "%s/m/k3.csv", dir);
    assert_int_equal(rt_ensemble_combine(files, half, 2, true, out, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "other Ids"));
    snprintf(a, sizeof a, "%s/m/a.csv", dir);
    put("m", "c.csv", "row,kind,p_a,\"p_b,c\"\n1,a,1,0\n"); /* a row short */
    snprintf(b, sizeof b, "%s/m/c.csv", dir);
    assert_int_equal(rt_ensemble_combine(files, w, 2, true, "/nonexistent/x.csv", err),
                     RT_ERR_INVALID);
    assert_non_null(strstr(err, "c.csv has 1 rows"));
}

static void test_run_refused(void **state)
{
    (void)state;
    char err[RT_ERR_LEN];
    rt_ens_report rep;
    const struct {
        const char *val, *test, *says;
    } bad[] = {
        {NULL, "Id,price\n5,1\n", "predict_validation = true"},
        {"Id,true_price,price\n1,100,110\n2,200,190\n", NULL, "no submission.csv"},
        {"Id,true_price,price\n1,100,110\n3,200,190\n", "Id,price\n5,1\n", "other Ids"},
        {"Id,true_price,price\n1,100,110\n", "Id,price\n5,1\n", "has 1 rows"},
        {"Id,true_price,price\n1,100,110\n2,201,190\n", "Id,price\n5,1\n",
         "row Id 2 has another true label"},
        {"Id,true_price,price\n1,100,110\n2,200,x\n", "Id,price\n5,1\n",
         "validation_predictions.csv:3: price 'x' is not a finite number"},
        {"Id,true_price,price\n1,100,110\n2,200,nan\n", "Id,price\n5,1\n", "not a finite"},
        {"Id,true_price,price\n1,100,110\n2,200\n", "Id,price\n5,1\n", ":3: 2 fields"},
        {"Id,true_price,price\n2,100,110\n1,200,190\n", "Id,price\n5,1\n", "Id 1 after 2"},
        {"Id,true_price,price\n1.5,100,110\n", "Id,price\n5,1\n", "'1.5' is not an integer"},
        {"Id,true_price,cost\n1,100,110\n2,200,190\n", "Id,price\n5,1\n", "column 3 is 'cost'"},
        {"Id,true_price,price\n1,100,110\n2,200,190\n", "Id,price\n6,1\n", "other Ids"},
        {"Id,true_price,price,p_a\n", "Id,price\n5,1\n", "one class probability"},
        {"Row,true_price,price\n", "Id,price\n5,1\n", "not a predictions file"},
        {"", "Id,price\n5,1\n", "is empty"},
        {"Id,true_price,price\n1,\"100\n", "Id,price\n5,1\n", "validation_predictions.csv:2"},
    };
    put("good", "validation_predictions.csv", "Id,true_price,price\n1,100,110\n2,200,190\n");
    put("good", "submission.csv", "Id,price\n5,300\n");
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char name[32];
        snprintf(name, sizeof name, "bad%zu", i);
        if (bad[i].val)
            put(name, "validation_predictions.csv", bad[i].val);
        if (bad[i].test)
            put(name, "submission.csv", bad[i].test);
        if (!bad[i].val && !bad[i].test)
            continue;
        err[0] = '\0';
        if (run("good", name, RT_ENS_AUTO, &rep, err) == RT_OK || !strstr(err, bad[i].says))
            fail_msg("case %zu: wanted '%s', got '%s'", i, bad[i].says, err);
    }
    /* classes: a true class without its column, a probability past 1,
     * and a classifier beside a regression */
    put("c1", "validation_predictions.csv", VAL_HEAD "1,z,a,0.9,0.1\n");
    put("c1", "submission.csv", TEST_HEAD "7,a,1,0\n");
    assert_int_equal(run("c1", NULL, RT_ENS_AUTO, &rep, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "true class 'z' has no p_ column"));
    put("c2", "validation_predictions.csv", VAL_HEAD "1,a,a,1.5,0.1\n");
    put("c2", "submission.csv", TEST_HEAD "7,a,1,0\n");
    assert_int_equal(run("c2", NULL, RT_ENS_AUTO, &rep, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "'1.5' is not a probability"));
    put("c3", "validation_predictions.csv", VAL_HEAD "1,a,a,0.9,0.1\n2,a,a,0.9,0.1\n");
    put("c3", "submission.csv", TEST_HEAD "5,a,1,0\n");
    assert_int_equal(run("good", "c3", RT_ENS_AUTO, &rep, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "the members must predict the same label"));
}

/* --bag: two folds' models (validation Ids 1, 3, 4 and 2, 5) */
static void test_bag(void **state)
{
    (void)state;
    put("f1", "validation_predictions.csv",
        VAL_HEAD "1,a,a,0.9,0.1\n3,\"b,c\",a,0.75,0.25\n4,a,a,0.7,0.3\n");
    put("f2", "validation_predictions.csv", VAL_HEAD "2,\"b,c\",\"b,c\",0.2,0.8\n5,a,a,0.8,0.2\n");
    put("f1", "submission.csv", TEST_HEAD "7,a,1,0\n9,\"b,c\",0.25,0.75\n");
    put("f2", "submission.csv", TEST_HEAD "7,\"b,c\",0.5,0.5\n9,a,0.65,0.35\n");
    char err[RT_ERR_LEN];
    rt_ens_report rep;
    if (run_as(true, "f1", "f2", RT_ENS_ACCURACY, &rep, err) != RT_OK)
        fail_msg("%s", err);
    assert_int_equal(rep.val_rows, 5);
    assert_int_equal(rep.test_rows, 2);
    assert_int_equal(rep.nclasses, 2);
    assert_true(rep.fit.weight[0] == 0.5 && rep.fit.weight[1] == 0.5);
    /* each model on its own fold (2 of 3, 2 of 2), the bag on all five rows */
    assert_true(fabs(rep.fit.member[0] - 2.0 / 3) < 1e-15);
    assert_true(rep.fit.member[1] == 1.0);
    assert_int_equal(rep.fit.best, 1);
    assert_true(rep.fit.ensemble == 0.8);
    /* the out-of-fold rows in Id order, each as its own fold's model said */
    assert_string_equal(slurp("out/validation_predictions.csv"),
                        VAL_HEAD "1,a,a,0.9,0.1\n2,\"b,c\",\"b,c\",0.2,0.8\n"
                                 "3,\"b,c\",a,0.75,0.25\n4,a,a,0.7,0.3\n5,a,a,0.8,0.2\n");
    assert_string_equal(slurp("out/submission.csv"),
                        TEST_HEAD "7,a,0.75,0.25\n9,\"b,c\",0.45,0.55\n");
    const char *js = slurp("out/ensemble.json");
    rt_json *j = NULL;
    assert_int_equal(rt_json_parse(js, strlen(js), &j, err), RT_OK);
    assert_true(rt_json_bool(rt_json_get(j, "bag"), false));
    assert_int_equal(rt_json_num(rt_json_get(j, "validation_rows"), 0), 5);
    assert_true(rt_json_num(rt_json_get(j, "val_accuracy"), 0) == 0.8);
    rt_json_free(j);
    /* the default metric, and AUC over the pooled rows */
    assert_int_equal(run_as(true, "f1", "f2", RT_ENS_AUTO, &rep, err), RT_OK);
    assert_int_equal(rep.metric, RT_ENS_LOG_LOSS);
    assert_int_equal(run_as(true, "f1", "f2", RT_ENS_AUC, &rep, err), RT_OK);
    assert_true(fabs(rep.fit.ensemble - 5.0 / 6) < 1e-15);

    /* the same folds without --bag: refused, naming it */
    assert_int_equal(run("f1", "f2", RT_ENS_AUTO, &rep, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "--bag"));
    /* a row in two folds, a fold without rows, other test rows, other classes */
    put("f3", "validation_predictions.csv", VAL_HEAD "2,a,a,0.9,0.1\n4,a,a,0.9,0.1\n");
    put("f3", "submission.csv", TEST_HEAD "7,a,1,0\n9,a,1,0\n");
    assert_int_equal(run_as(true, "f1", "f3", RT_ENS_AUTO, &rep, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "row Id 4 is a validation row of both"));
    assert_non_null(strstr(err, "f1/validation_predictions.csv and"));
    put("f4", "validation_predictions.csv", VAL_HEAD);
    put("f4", "submission.csv", TEST_HEAD "7,a,1,0\n9,a,1,0\n");
    assert_int_equal(run_as(true, "f1", "f4", RT_ENS_AUTO, &rep, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "f4/validation_predictions.csv has no rows"));
    put("f5", "validation_predictions.csv", VAL_HEAD "2,a,a,0.9,0.1\n");
    put("f5", "submission.csv", TEST_HEAD "7,a,1,0\n8,a,1,0\n");
    assert_int_equal(run_as(true, "f1", "f5", RT_ENS_AUTO, &rep, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "other Ids"));
    put("f6", "validation_predictions.csv", "Id,true_kind,kind,p_a,p_b\n2,a,a,0.9,0.1\n");
    put("f6", "submission.csv", "Id,kind,p_a,p_b\n7,a,1,0\n9,a,1,0\n");
    assert_int_equal(run_as(true, "f1", "f6", RT_ENS_AUTO, &rep, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "the members must predict the same label"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics),        cmocka_unit_test(test_select_reference),
        cmocka_unit_test(test_select_cases),   cmocka_unit_test(test_run_classes),
        cmocka_unit_test(test_run_regression), cmocka_unit_test(test_run_refused),
        cmocka_unit_test(test_combine),        cmocka_unit_test(test_bag),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
