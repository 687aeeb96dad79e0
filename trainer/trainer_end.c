/* trainer_end.c — the end of a training run (trainer_impl.h): the best
 * model's predictions, scored by every rank, written by rank 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_ckpt.h"
#include "rt_file.h"
#include "rt_predict.h"
#include "trainer_impl.h"

/* This rank's share of the total test rows (only those are read) scored,
 * every share gathered into pred (rank 0's; total values) in row order.
 * Scores do not depend on how rows are batched, so the file is the one a
 * single rank would write (test_train_job compares it with `ringtrain
 * predict`). */
static rt_status predict_shared(trainer *t, int64_t total, float *pred, char *err)
{
    const int size = t->env->size, rank = t->env->rank;
    const size_t K = (size_t)t->spec.n_out;
    size_t lo, len, blk = (size_t)(total + size - 1) / (size_t)size * K;
    rt_split((size_t)total, (size_t)size, (size_t)rank, &lo, &len);
    float *all = calloc(blk * (size_t)size + 1, sizeof *all);
    if (!all)
        return rt_err(err, RT_ERR_NOMEM, "out of memory for %lld predictions", (long long)total);
    rt_rows mine = {0};
    rt_status st =
        rt_rows_load_test_range(t->ds, &t->cols, (int64_t)lo, (int64_t)len, false, &mine, err);
    if (st == RT_OK)
        st = rt_dp_forward_eval(t->dp, mine.cat, mine.cont, NULL, mine.n, all + (size_t)rank * blk,
                                err);
    rt_rows_free(&mine);
    if (st == RT_OK && size > 1 &&
        (st = rt_allgather(t->env->comm, all + (size_t)rank * blk, all, blk * sizeof *all)) !=
            RT_OK)
        st = rt_err(err, st, "%s", rt_comm_last_error(t->env->comm));
    for (int r = 0; st == RT_OK && r < size; r++) {
        rt_split((size_t)total, (size_t)size, (size_t)r, &lo, &len);
        memcpy(pred + lo * K, all + (size_t)r * blk, len * K * sizeof *pred);
    }
    free(all);
    return st;
}

/* Rank 0's status st of a step only it ran, told to every rank: st on rank
 * 0, "rank 0 could not WHAT" on the others when it failed. */
static rt_status rank0_outcome(trainer *t, rt_status st, const char *what, char *err)
{
    int32_t ok = st == RT_OK;
    rt_status bst = rt_broadcast(t->env->comm, &ok, sizeof ok, 0);
    if (bst != RT_OK)
        return rt_err(err, bst, "%s", rt_comm_last_error(t->env->comm));
    if (ok)
        return RT_OK;
    return t->env->rank == 0 ? st : rt_err(err, RT_ERR_ABORTED, "rank 0 could not %s", what);
}

/* Every rank: the best model (rank 0 reads its checkpoint and hands it to
 * the others, whose hosts may not see the store), each rank scores its
 * share, rank 0 writes the file. */
rt_status trainer_predict_end(trainer *t, rt_train_result *res, char *err)
{
    const bool lead = t->env->rank == 0;
    if (lead && t->cfg->predict && t->ds->ntest == 0 && t->env->log)
        fprintf(t->env->log,
                "predictions: none: %s has no test rows (its script names no "
                "test_table)\n",
                t->cfg->dataset);
    const bool test_rows = t->cfg->predict && t->ds->ntest > 0;
    if (!test_rows && !t->cfg->predict_validation)
        return RT_OK;
    /* written as a file (in S3: into the store's mirror, then put up whole) */
    char path[1200];
    const char *pred_uri =
        t->cfg->predictions && rt_s3_is_uri(t->cfg->predictions) ? t->cfg->predictions : NULL;
    if (t->cfg->predictions && *t->cfg->predictions && !pred_uri)
        snprintf(path, sizeof path, "%s", t->cfg->predictions);
    else
        snprintf(path, sizeof path, "%s/%s", t->store.dir,
                 pred_uri ? "predictions.csv" : "submission.csv");
    /* the best model: its checkpoint, else the model as it is */
    rt_ckpt ck = {0};
    rt_status st = RT_OK;
    if (lead && t->cfg->checkpoint == RT_CKPT_BEST && t->cfg->restore_best &&
        rt_ckpt_read(t->path_best, &ck, err) == RT_OK) {
        st = rt_ckpt_to_model(&ck, rt_dp_model(t->dp), err);
        rt_ckpt_free(&ck);
    }
    if (t->env->size > 1) { /* whether rank 0 has it, then the model itself */
        if ((st = rank0_outcome(t, st, "load the best model", err)) != RT_OK)
            return st;
        if ((st = rt_dp_broadcast_state(t->dp, 0, false, err)) != RT_OK)
            return st;
    }
    rt_pred_range out = {0};
    rt_pred_format f = {t->cols.label,
                        t->ds->label_transform,
                        t->ds->label_mean,
                        t->ds->label_std,
                        t->spec.n_out,
                        t->task.nclasses,
                        t->spec.loss,
                        t->task.classes,
                        t->cfg->proba,
                        t->cfg->threshold,
                        .lo = t->ds->label_lo,
                        .hi = t->ds->label_hi,
                        .range_factor = t->cfg->prediction_range_factor,
                        .clip = t->cfg->clip_predictions,
                        .range = &out};
    if (st == RT_OK && lead && t->cfg->predict_validation) { /* rank 0 alone: every partition's */
        char vpath[1300];
        int64_t n = 0;
        snprintf(vpath, sizeof vpath, "%s/validation_predictions.csv", t->store.dir);
        st = rt_predict_validation(t->dp, t->ds, &t->cols, &f, vpath, &n, err);
        if (st == RT_OK)
            st = store_sync(&t->store, "validation_predictions.csv", err);
        if (st == RT_OK && t->env->log)
            fprintf(t->env->log, "predictions: %lld validation rows to %s\n", (long long)n, vpath);
    }
    if (t->env->size > 1 && /* rank 0 wrote them, or failed: the others learn which */
        (st = rank0_outcome(t, st, "predict", err)) != RT_OK)
        return st;
    if (st != RT_OK || !test_rows)
        return st;
    out = (rt_pred_range){0};
    /* each rank reads only its share of the test rows; rank 0 their ids too */
    int64_t total = 0;
    for (int p = 0; p < t->ds->ntest; p++)
        total += t->ds->test[p].rows;
    rt_rows test = {0};
    float *pred = NULL;
    const size_t K = (size_t)t->spec.n_out;
    if (st == RT_OK && !(pred = malloc((size_t)(total ? total : 1) * K * sizeof *pred)))
        st = rt_err(err, RT_ERR_NOMEM, "out of memory for %lld predictions", (long long)total);
    if (st == RT_OK)
        st = predict_shared(t, total, pred, err);
    if (st == RT_OK && lead)
        st = rt_rows_load_test_range(t->ds, &t->cols, 0, total, true, &test, err);
    if (st == RT_OK && lead)
        st = rt_predict_write(&test, pred, &f, path, err);
    if (st == RT_OK && lead && pred_uri)
        st = store_put(&t->store, path, pred_uri, err);
    else if (st == RT_OK && lead && !(t->cfg->predictions && *t->cfg->predictions))
        st = store_sync(&t->store, "submission.csv", err);
    char said[RT_ERR_LEN];
    rt_pred_range_say(&f, "ids", said, sizeof said);
    if (st == RT_OK && lead && said[0] && t->env->log)
        fprintf(t->env->log, "predictions: %s\n", said);
    if (st == RT_OK) {
        res->predictions = total;
        if (lead && t->env->log)
            fprintf(t->env->log,
                    "predictions: %lld rows to %s%s%s (best epoch %lld, scored by %d rank%s)\n",
                    (long long)total,
                    pred_uri          ? pred_uri
                    : t->store.uri[0] ? t->store.uri
                                      : path,
                    t->store.uri[0] && !pred_uri ? "/" : "",
                    t->store.uri[0] && !pred_uri ? "submission.csv" : "",
                    (long long)t->mon.best_epoch, t->env->size, t->env->size == 1 ? "" : "s");
    }
    free(pred);
    rt_rows_free(&test);
    return st;
}
