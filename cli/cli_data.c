/* cli_data.c — the CLI's local data commands (no coordinator involved):
 *
 *   ringtrain prep --input DIR --sql FILE --out DIR [--partitions N]
 *                  [--skip-bad-rows] [--keep-db FILE] [--rows-per-group N] [--quiet]
 *   ringtrain prep --from-parquet PATH [--test PATH] --out DIR [--job FILE]
 *                  [--label COL] [--categorical COLS] [--continuous COLS] ...
 *   ringtrain predict --model CKPT --dataset DIR --out FILE [--threads N] [--batch N]
 *   ringtrain model summary CKPT [--tensors]
 *
 * and the model check of a job file before `submit` and `run` send it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rt_ckpt.h"
#include "rt_config.h"
#include "rt_dataset.h"
#include "rt_dp.h"
#include "rt_prep.h"
#include "rt_schemas.h"
#include "rt_predict.h"
#include "trainer.h"

/* --from-parquet's column roles: the flags, else the [data] keys of --job.
 * Strings from the job file are kept in bufs (freed by the caller). */
static int featurised_roles(const cli_args *a, rt_prep_opts *o, char **bufs)
{
    o->roles.label = cli_value(a, "--label");
    o->roles.categorical = cli_value(a, "--categorical");
    o->roles.continuous = cli_value(a, "--continuous");
    o->roles.validation = cli_value(a, "--validation");
    o->roles.id = cli_value(a, "--id");
    o->roles.date = cli_value(a, "--date");
    o->roles.label_transform = cli_value(a, "--label-transform");
    o->roles.task = cli_value(a, "--task");
    o->roles.weight = cli_value(a, "--weight");
    const char *max = cli_value(a, "--max-label");
    if (max) {
        char *end;
        o->roles.max_label = strtod(max, &end);
        if (*end || !(o->roles.max_label > 0)) {
            fprintf(stderr, "ringtrain prep: --max-label %s: a positive number, please\n", max);
            return 2;
        }
    }
    const char *job = cli_value(a, "--job");
    if (!job)
        return 0;
    rt_job_cfg j;
    rt_cfg_errors e = {0};
    if (rt_cfg_load_file(&rt_job_schema, job, &j, &e) != RT_OK) {
        rt_cfg_errors_print(&e, stderr);
        rt_cfg_errors_free(&e);
        return 2;
    }
    rt_cfg_errors_free(&e);
    const rt_strlist *lists[2] = {&j.categorical, &j.continuous};
    const char **dst[2] = {&o->roles.categorical, &o->roles.continuous};
    for (int k = 0; k < 2; k++) {
        if (*dst[k] || lists[k]->n == 0)
            continue;
        size_t len = 1;
        for (size_t i = 0; i < lists[k]->n; i++)
            len += strlen(lists[k]->items[i]) + 1;
        bufs[k] = calloc(1, len);
        for (size_t i = 0; i < lists[k]->n; i++)
            if (strcmp(lists[k]->items[i], "none") != 0)
                strcat(strcat(bufs[k], bufs[k][0] ? "," : ""), lists[k]->items[i]);
        *dst[k] = bufs[k];
    }
    if (!o->roles.label && j.label)
        o->roles.label = bufs[2] = strdup(j.label);
    if (!o->roles.validation && j.validation)
        o->roles.validation = bufs[3] = strdup(j.validation);
    rt_cfg_free(&rt_job_schema, &j);
    return 0;
}

int cli_prep(const cli_args *a)
{
    rt_prep_opts o = {.partitions = 1};
    char *bufs[4] = {0};
    int64_t n;
    o.skip_bad_rows = cli_switch(a, "--skip-bad-rows");
    o.quiet = cli_switch(a, "--quiet");
    o.input_dir = cli_value(a, "--input");
    o.sql_path = cli_value(a, "--sql");
    o.out_dir = cli_value(a, "--out");
    o.db_path = cli_value(a, "--keep-db");
    o.db_mode = cli_value(a, "--db");
    int r1 = cli_int(a, "--partitions", 1, 100000, &n);
    if (r1 > 0)
        o.partitions = (int)n;
    int r2 = cli_int(a, "--rows-per-group", 1, 1 << 24, &n);
    if (r2 > 0)
        o.rows_per_group = n;
    if (r1 < 0 || r2 < 0)
        return 2;
    o.train_parquet = cli_value(a, "--from") ? cli_value(a, "--from") : cli_value(a, "--from-parquet");
    o.test_parquet = cli_value(a, "--test");
    if (o.train_parquet && (o.input_dir || o.sql_path)) {
        fprintf(stderr, "ringtrain prep: --from replaces --input and --sql (its data "
                        "are featurised already); give one or the other\n");
        return 2;
    }
    if (!o.train_parquet && (o.test_parquet || cli_value(a, "--label") || cli_value(a, "--job"))) {
        fprintf(stderr, "ringtrain prep: --test, --label, --job and the other role flags go "
                        "with --from (with --sql, the script's meta table names them)\n");
        return 2;
    }
    if (o.train_parquet ? !o.out_dir : (!o.input_dir || !o.sql_path || !o.out_dir)) {
        fprintf(stderr, "ringtrain prep: %s\n", o.train_parquet
                            ? "--out is needed"
                            : "--input, --sql and --out are needed (or --from and --out)");
        cli_usage(a->cmd, stderr);
        return 2;
    }
    if (o.train_parquet) {
        int rc = featurised_roles(a, &o, bufs);
        if (rc) {
            for (int i = 0; i < 4; i++)
                free(bufs[i]);
            return rc;
        }
    }
    rt_prep_report rep;
    char err[RT_ERR_LEN];
    rt_status st = rt_prep_run(&o, &rep, err);
    for (int i = 0; i < 4; i++)
        free(bufs[i]);
    if (st != RT_OK) {
        fprintf(stderr, "ringtrain prep: %s\n", err);
        return 1;
    }
    int64_t skipped = rep.bad_rows_skipped;
    for (int t = 0; t < rep.ntables; t++)
        skipped += rep.skipped[t];
    char task[200];
    if (rep.nclasses > 0)
        snprintf(task, sizeof task, "%s, %d classes, %s", rep.task, rep.nclasses, rep.task_why);
    else
        snprintf(task, sizeof task, "%s, %s", rep.task, rep.task_why);
    printf("prepared %s (%s): %lld training rows, %lld validation rows, %lld test rows in %d "
           "partition%s (%.1f s)",
           o.out_dir, task, (long long)rep.train_rows, (long long)rep.validation_rows,
           (long long)rep.test_rows, o.partitions, o.partitions == 1 ? "" : "s", rep.seconds);
    if (skipped)
        printf("; %lld malformed or bad rows skipped", (long long)skipped);
    if (rep.cont_defaulted)
        printf("; %lld continuous values were NULL or not numbers and became 0",
               (long long)rep.cont_defaulted);
    printf("\n");
    if (!rep.has_validation)
        fprintf(stderr, "ringtrain prep: warning: %s: "
                        "training will have no validation loss and keep the best epoch by its "
                        "training loss\n",
                o.train_parquet ? "no validation column (--validation)"
                                : "the script names no validation column");
    else if (rep.validation_rows == 0)
        fprintf(stderr, "ringtrain prep: warning: the validation column marks no row: training "
                        "will have no validation loss (its values must be 1/0, true/false or "
                        "yes/no)\n");
    return 0;
}

/* predict --input: new raw data, the model's own vocabularies. */
/* --proba false: a classification's class only. */
static bool no_proba(const cli_args *a)
{
    const char *v = cli_value(a, "--proba");
    bool on = true;
    char e[RT_ERR_LEN];
    if (v && rt_parse_bool(v, &on, e) != RT_OK)
        on = true;
    return !on;
}

static int predict_input(const cli_args *a, const char *model, const char *out, int threads,
                         int64_t batch)
{
    rt_predict_input_opts o = {.model = model, .input = cli_value(a, "--input"),
                               .sql = cli_value(a, "--sql"), .out = out,
                               .id = cli_value(a, "--id"), .threads = threads, .batch = batch,
                               .no_proba = no_proba(a)};
    rt_strlist keep = {0};
    char err[RT_ERR_LEN];
    const char *kv = cli_value(a, "--keep");
    if (kv && rt_strlist_parse(kv, &keep, err) != RT_OK) {
        fprintf(stderr, "ringtrain predict: --keep: %s\n", err);
        return 2;
    }
    o.keep = (const char *const *)keep.items;
    o.nkeep = (int)keep.n;
    rt_predict_input_report rep;
    rt_status st = rt_predict_input(&o, &rep, err);
    rt_strlist_free(&keep);
    if (st != RT_OK) {
        fprintf(stderr, "ringtrain predict: %s\n", err);
        return 1;
    }
    printf("wrote %lld predictions to %s\n", (long long)rep.rows, out);
    for (int i = 0; i < rep.ncat; i++)
        if (rep.unknown[i])
            printf("  %s: %lld value%s the model never saw (%.2f%% of the rows) scored with "
                   "the mean of its learnt embeddings\n",
                   rep.cat[i], (long long)rep.unknown[i], rep.unknown[i] == 1 ? "" : "s",
                   rep.rows ? 100.0 * (double)rep.unknown[i] / (double)rep.rows : 0.0);
    if (rep.defaulted)
        printf("  %lld continuous values were NULL or not numbers and became 0\n",
               (long long)rep.defaulted);
    return 0;
}

int cli_predict(const cli_args *a)
{
    const char *model = cli_value(a, "--model"), *dataset = cli_value(a, "--dataset"),
               *out = cli_value(a, "--out"), *input = cli_value(a, "--input");
    int64_t threads = 0, batch = 4096;
    if (cli_int(a, "--threads", 0, 1024, &threads) < 0 ||
        cli_int(a, "--batch", 1, 1 << 22, &batch) < 0)
        return 2;
    if (!model || !out || !dataset == !input) {
        fprintf(stderr, "ringtrain predict: --model, --out and one of --dataset (prepared) or "
                        "--input (new raw data) are needed\n");
        cli_usage(a->cmd, stderr);
        return 2;
    }
    if (!input && (cli_value(a, "--sql") || cli_value(a, "--id") || cli_value(a, "--keep"))) {
        fprintf(stderr, "ringtrain predict: --sql, --id and --keep go with --input\n");
        return 2;
    }
    if (input)
        return predict_input(a, model, out, (int)threads, batch);
    int64_t rows = 0;
    char err[RT_ERR_LEN];
    if (rt_predict_checkpoint(model, dataset, out, (int)threads, batch, !no_proba(a), &rows,
                              err) != RT_OK) {
        fprintf(stderr, "ringtrain predict: %s\n", err);
        return 1;
    }
    printf("wrote %lld predictions to %s\n", (long long)rows, out);
    return 0;
}

int cli_model(const cli_args *a)
{
    if (strcmp(a->pos[0], "summary") != 0) {
        fprintf(stderr, "ringtrain model: no subcommand '%s': ringtrain model summary CKPT\n",
                a->pos[0]);
        return 2;
    }
    const char *path = a->pos[1];
    rt_ckpt ck;
    char err[RT_ERR_LEN];
    if (rt_ckpt_read(path, &ck, err) != RT_OK) {
        fprintf(stderr, "ringtrain model: %s\n", err);
        return 1;
    }
    printf("%s: after epoch %lld (step %lld, %lld rank%s); best epoch %lld, val_loss %.6f\n",
           path, (long long)ck.epoch, (long long)ck.step, (long long)ck.world_size,
           ck.world_size == 1 ? "" : "s", (long long)ck.best_epoch, ck.best_val_loss);
    printf("label %s (%s, max %.6g); %d categorical, %d continuous columns\n", ck.label,
           ck.label_transform, ck.max_label, ck.spec.n_cat, ck.n_cont);
    printf("architecture %s\n", rt_arch_names[ck.spec.arch]);
    rt_kctx *ctx = NULL;
    rt_model *m = NULL;
    int rc = 0;
    if (rt_kctx_create(RT_DEVICE_CPU, 1, &ctx, err) != RT_OK ||
        rt_model_create(&ck.spec, ctx, 1, &m, err) != RT_OK) {
        fprintf(stderr, "ringtrain model: %s\n", err);
        rc = 1;
    } else {
        rt_model_summary(m, stdout);
        if (cli_value(a, "--tensors"))
            rt_model_summary_tensors(m, stdout);
    }
    rt_model_destroy(m);
    rt_kctx_destroy(ctx);
    rt_ckpt_free(&ck);
    return rc;
}

/* A training job's model on its dataset, when this machine can read the
 * dataset (else its workers check it): the columns, the model's keys
 * against them, and for `ringtrain run` (every rank here) whether np
 * models fit this machine's memory.  0, or 2 with the reasons printed. */
int cli_check_job_model(const cli_args *a, const rt_job_cfg *j, const rt_cfg_origin *o)
{
    rt_dataset *ds = NULL;
    char err[RT_ERR_LEN];
    if (j->type != RT_JOB_TRAIN || !j->dataset || rt_dataset_open(j->dataset, &ds, err) != RT_OK)
        return 0;
    rt_columns *cols = calloc(1, sizeof *cols);
    rt_model_spec *spec = calloc(1, sizeof *spec);
    rt_status st = cols && spec ? RT_OK : rt_err(err, RT_ERR_NOMEM, "out of memory");
    if (st == RT_OK)
        st = rt_columns_resolve(ds, j, cols, err);
    if (st == RT_OK)
        st = rt_job_model_spec(j, o, ds, cols, spec, err);
    if (st == RT_OK && ds->nparts < j->np) /* each rank reads whole partitions */
        st = rt_err(err, RT_ERR_INVALID,
                    "np = %lld ranks, but %s has %d training partition%s (each rank reads whole "
                    "partitions): prep it again with --partitions %lld (or a multiple), or ask "
                    "for at most %d rank%s", (long long)j->np, j->dataset, ds->nparts,
                    ds->nparts == 1 ? "" : "s", (long long)j->np, ds->nparts,
                    ds->nparts == 1 ? "" : "s");
    rt_kctx *ctx = NULL;
    if (st == RT_OK && !strcmp(a->cmd->name, "run") && j->device != RT_DEV_CUDA &&
        rt_kctx_create(RT_DEVICE_CPU, 1, &ctx, NULL) == RT_OK) {
        int64_t rows = j->batch_size > j->eval_batch_size ? j->batch_size : j->eval_batch_size;
        st = rt_dp_check_memory(spec, ctx, rows, (int)j->np, err);
        rt_kctx_destroy(ctx);
    }
    if (st != RT_OK)
        fprintf(stderr, "ringtrain: %s does not fit its dataset%s:\n%s\n", o->fname,
                strcmp(a->cmd->name, "worker") != 0 ? "; nothing was submitted" : "", err);
    free(cols);
    free(spec);
    rt_dataset_free(ds);
    return st == RT_OK ? 0 : 2;
}
