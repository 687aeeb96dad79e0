/* sweep_finish.c — a sweep's last step (docs/sweeps.md): one rank, on a
 * node that sees the sweep's store, as the sweep's user, writes what the
 * coordinator recorded of every trial (sweep.json, beside job.ini) into
 *
 *   STORE/trials.jsonl   one line per trial: its number, job, values,
 *                        state (stopped at rung r, stopped by the time
 *                        budget, completed, failed, cancelled), epochs
 *                        run, best value and its epoch
 *   STORE/best/          the best trial's best.ckpt (or last.ckpt),
 *                        history.jsonl and predictions — made from its
 *                        checkpoint when ASHA stopped it before it wrote
 *                        them — and best.ini, its complete job file with
 *                        its store at STORE/best/retrain, which `ringtrain
 *                        run best.ini` trains again as it is;
 *   STORE/ensemble/      ([sweep] ensemble) the trials' predictions
 *                        weighted by the validation rows (rt_ensemble.h).
 *
 * Everything is written atomically; a second run (a restarted last step)
 * writes the same.  A store in S3: the trials' files are read from the
 * bucket, what this step writes goes into a mirror (trainer_store.h) and
 * up, best/'s files before trials.jsonl. */
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_data_io.h"
#include "rt_ensemble.h"
#include "rt_file.h"
#include "rt_json.h"
#include "rt_proto.h"
#include "rt_predict.h"
#include "trainer.h"
#include "trainer_store.h"

#define MAX_FILE (1ll << 36) /* 64 GiB: a checkpoint is read whole to be copied */

/* from (a file or an object) to the file to; RT_ERR_NOTFOUND when from is
 * not there. */
static rt_status copy_file(const char *from, const char *to, char *err)
{
    char *data = NULL;
    size_t len = 0;
    rt_status st = rt_data_read_file(from, (size_t)MAX_FILE, &data, &len, err);
    if (st == RT_OK) {
        rt_iov iov = {data, len};
        st = rt_write_atomic(to, &iov, 1, err);
    }
    free(data);
    return st;
}

/* one line per trial, in trial order */
static rt_status write_trials(const rt_json *res, const char *store, char *err)
{
    char *all = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&all, &len);
    if (!out)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    const rt_json *ts = rt_json_get(res, "trials");
    const char *monitor = rt_json_str(rt_json_get(res, "monitor"), RT_P_VAL_LOSS);
    for (size_t i = 0; i < rt_json_len(ts); i++) {
        const rt_json *t = rt_json_at(ts, i);
        int64_t n = 0, job = 0, rung = -1, epochs = 0, be = 0;
        rt_json_get_int(t, "trial", &n);
        rt_json_get_int(t, "job", &job);
        rt_json_get_int(t, "rung", &rung);
        rt_json_get_int(t, "epochs", &epochs);
        rt_json_get_int(t, "best_epoch", &be);
        const char *state = rt_json_str(rt_json_get(t, "state"), "?");
        char st_text[48];
        const char *by = rt_json_str(rt_json_get(t, "stopped_by"), "asha");
        if (!strcmp(state, "stopped") && !strcmp(by, "time budget"))
            snprintf(st_text, sizeof st_text, "stopped by the time budget");
        else if (!strcmp(state, "stopped"))
            snprintf(st_text, sizeof st_text, "stopped at rung %lld", (long long)rung);
        else
            snprintf(st_text, sizeof st_text, "%s", state);
        rt_jw w;
        rt_jw_init(&w);
        rt_jw_obj(&w);
        rt_jw_kint(&w, "trial", n);
        rt_jw_kint(&w, "job", job);
        rt_jw_key(&w, "params");
        rt_jw_value(&w, rt_json_get(t, "params"));
        rt_jw_kstr(&w, "state", st_text);
        rt_jw_kint(&w, "rung", rung);
        rt_jw_kint(&w, "epochs", epochs);
        rt_jw_kstr(&w, "monitor", monitor);
        rt_jw_knum(&w, "best", rt_json_num(rt_json_get(t, "best"), NAN));
        rt_jw_kint(&w, "best_epoch", be);
        if (rt_json_get_str(t, "reason"))
            rt_jw_kstr(&w, "reason", rt_json_get_str(t, "reason"));
        char store_n[64];
        snprintf(store_n, sizeof store_n, "trial-%lld", (long long)n);
        rt_jw_kstr(&w, "store", store_n);
        rt_jw_obj_end(&w);
        char *line = rt_jw_take(&w, NULL);
        if (line)
            fprintf(out, "%s\n", line);
        free(line);
    }
    if (fclose(out) != 0 || !all) {
        free(all);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    char *text = all;
    char path[4200];
    snprintf(path, sizeof path, "%s/trials.jsonl", store);
    rt_iov iov = {text, len};
    rt_status st = rt_write_atomic(path, &iov, 1, err);
    free(text);
    return st;
}

/* best.ini (written into the folder best): the best trial's job file,
 * trained again into STORE/best/retrain */
static rt_status write_best_ini(const char *text, const char *store, const char *best, char *err)
{
    rt_job_cfg j;
    rt_cfg_errors e = {0};
    char retrain[4200];
    snprintf(retrain, sizeof retrain, "%s/best/retrain", store);
    rt_status st = rt_cfg_load_string(&rt_job_schema, text, strlen(text), "best.ini", NULL, &j, &e);
    if (st == RT_OK)
        st = rt_cfg_set(&rt_job_schema, &j, "output.store", retrain, &e);
    char *out = st == RT_OK ? rt_cfg_print_string(&rt_job_schema, &j) : NULL;
    if (!out && st == RT_OK)
        st = RT_ERR_NOMEM;
    if (st != RT_OK) {
        char all[RT_ERR_LEN];
        rt_cfg_errors_join(&e, all, sizeof all);
        rt_err(err, st, "the best trial's job file: %s", all);
    }
    rt_cfg_errors_free(&e);
    rt_cfg_free(&rt_job_schema, &j);
    if (st != RT_OK)
        return st;
    char path[4200];
    snprintf(path, sizeof path, "%s/best.ini", best);
    const char *head = "; the sweep's best trial, as it trained; `ringtrain run best.ini` trains "
                       "it again into best/retrain\n";
    rt_iov iov[2] = {{head, strlen(head)}, {out, strlen(out)}};
    st = rt_write_atomic(path, iov, 2, err);
    free(out);
    return st;
}

/* best/ from the best trial's store (under store: a folder or a prefix in
 * S3), written into sdir/best (the store itself, or its mirror). */
static rt_status write_best(const rt_job_cfg *cfg, const rt_json *res, const char *store,
                            const char *sdir, char *err)
{
    int64_t b = 0;
    rt_json_get_int(res, "best", &b);
    if (b < 1)
        return rt_err(err, RT_ERR_INVALID, "sweep.json names no best trial");
    char from[4200], best[4200], a[4400], z[4400];
    snprintf(from, sizeof from, "%s/trial-%lld", store, (long long)b);
    snprintf(best, sizeof best, "%s/best", sdir);
    rt_status st = rt_mkdirs(best, err);
    if (st == RT_OK)
        st = rt_own_dir_check(best, err);
    /* the checkpoint: its best epoch's, else its last */
    const char *ck = "best.ckpt";
    snprintf(a, sizeof a, "%s/best.ckpt", from);
    snprintf(z, sizeof z, "%s/best.ckpt", best);
    if (st == RT_OK && (st = copy_file(a, z, err)) == RT_ERR_NOTFOUND) {
        ck = "last.ckpt";
        snprintf(a, sizeof a, "%s/last.ckpt", from);
        if ((st = copy_file(a, z, err)) == RT_ERR_NOTFOUND)
            st = rt_err(err, RT_ERR_NOTFOUND, "%s has no best.ckpt nor last.ckpt", from);
    }
    static const char *const files[] = {"history.jsonl", "submission.csv",
                                        "validation_predictions.csv"};
    bool have_pred = false;
    for (size_t i = 0; st == RT_OK && i < sizeof files / sizeof *files; i++) {
        snprintf(a, sizeof a, "%s/%s", from, files[i]);
        snprintf(z, sizeof z, "%s/%s", best, files[i]);
        if ((st = copy_file(a, z, err)) == RT_OK)
            have_pred = have_pred || i == 1;
        else if (st == RT_ERR_NOTFOUND)
            st = RT_OK; /* a trial stopped early has no predictions */
    }
    /* stopped before it predicted: the predictions from its checkpoint —
     * where the dataset has test rows (a trial of one without writes none) */
    bool test_rows = false;
    if (st == RT_OK && !have_pred && cfg->predict && cfg->dataset) {
        rt_dataset *ds = NULL;
        char e2[RT_ERR_LEN];
        test_rows = rt_dataset_open(cfg->dataset, &ds, e2) != RT_OK || ds->ntest > 0;
        rt_dataset_free(ds); /* not opened: rt_predict_checkpoint says why */
        if (!test_rows)
            printf("sweep: %s has no test rows: best/ holds no predictions\n", cfg->dataset);
    }
    if (test_rows) {
        rt_pred_opts po = {.proba = cfg->proba,
                           .range_factor = cfg->prediction_range_factor,
                           .clip = cfg->clip_predictions};
        int64_t rows = 0;
        char range[RT_ERR_LEN] = "";
        snprintf(a, sizeof a, "%s/best.ckpt", best);
        snprintf(z, sizeof z, "%s/submission.csv", best);
        st = rt_predict_checkpoint(a, cfg->dataset, z, 0, cfg->eval_batch_size, &po, &rows, range,
                                   err);
        if (st == RT_OK)
            printf("sweep: trial %lld stopped before predicting: %lld predictions from its "
                   "checkpoint%s%s\n",
                   (long long)b, (long long)rows, range[0] ? "; " : "", range);
    }
    const char *text = rt_json_get_str(res, "best_config");
    if (st == RT_OK && text)
        st = write_best_ini(text, store, best, err);
    if (st == RT_OK)
        printf("sweep: best/ holds trial %lld's %s, history%s, and best.ini\n", (long long)b, ck,
               have_pred || test_rows ? " and predictions" : "");
    return st;
}

/* [sweep] ensemble: the trials that predicted, weighted by their validation
 * predictions (rt_ensemble.h), into sdir/ensemble.  Not having one (no
 * trial predicted) is said, and the sweep's results stand without it. */
static bool write_ensemble(const rt_json *res, const char *store, const char *sdir)
{
    const size_t n = rt_json_len(rt_json_get(res, "trials"));
    char(*names)[4200] = calloc(n ? n : 1, sizeof *names);
    const char **stores = calloc(n ? n : 1, sizeof *stores);
    char out[4200], err[RT_ERR_LEN] = "out of memory";
    rt_ens_report rep;
    rt_status st = names && stores && n <= RT_ENS_MAX_MEMBERS ? RT_OK : RT_ERR_NOMEM;
    if (n > RT_ENS_MAX_MEMBERS)
        rt_err(err, st = RT_ERR_INVALID, "%zu trials: at most %d can be ensembled", n,
               RT_ENS_MAX_MEMBERS);
    for (size_t i = 0; st == RT_OK && i < n; i++) {
        snprintf(names[i], sizeof names[i], "%s/trial-%zu", store, i + 1);
        stores[i] = names[i];
    }
    snprintf(out, sizeof out, "%s/ensemble", sdir);
    rt_ens_opts o = {.stores = stores, .nstores = (int)n, .out = out, .skip_incomplete = true};
    if (st == RT_OK)
        st = rt_ensemble_run(&o, &rep, err);
    if (st == RT_OK)
        printf("sweep: ensemble/ weighs %d trial%s by their validation predictions: val_%s "
               "%.6f (the best of them alone %.6f); %d left out without predictions\n",
               rep.nmembers, rep.nmembers == 1 ? "" : "s", rt_ens_metric_name(rep.metric),
               rep.fit.ensemble, rep.fit.member[rep.fit.best], rep.nskipped);
    else
        printf("sweep: no ensemble: %s\n", err);
    free(names);
    free(stores);
    return st == RT_OK;
}

int rt_sweep_finish(const rt_job_cfg *cfg, const char *job_ini)
{
    char dir[4096], path[4200], err[RT_ERR_LEN];
    snprintf(dir, sizeof dir, "%s", job_ini);
    snprintf(path, sizeof path, "%s/sweep.json", dirname(dir));
    char *text = NULL;
    size_t len = 0;
    rt_json *res = NULL;
    rt_status st = rt_read_file(path, 64u << 20, &text, &len, err);
    if (st == RT_OK)
        st = rt_json_parse(text, len, &res, err);
    free(text);
    if (st == RT_OK && !cfg->store)
        st = rt_err(err, RT_ERR_INVALID, "the sweep has no [output] store");
    rt_store store = {0};
    if (st == RT_OK)
        st = store_open(&store, cfg->store, 0, true, err);
    if (st == RT_OK)
        st = write_trials(res, store.dir, err);
    if (st == RT_OK)
        st = write_best(cfg, res, cfg->store, store.dir, err);
    if (st == RT_OK) /* S3: best/ up before trials.jsonl, which says the sweep is done */
        st = store_sync_dir(&store, "best", err);
    if (st == RT_OK && cfg->sweep_ensemble && write_ensemble(res, cfg->store, store.dir))
        st = store_sync_dir(&store, "ensemble", err);
    if (st == RT_OK && (st = store_sync(&store, "trials.jsonl", err)) == RT_OK)
        printf("sweep: %s/trials.jsonl: %zu trials\n", cfg->store,
               rt_json_len(rt_json_get(res, "trials")));
    store_close(&store);
    rt_json_free(res);
    if (st != RT_OK) {
        fprintf(stderr, "sweep: the results of the sweep could not be written: %s\n", err);
        return 1;
    }
    return 0;
}
