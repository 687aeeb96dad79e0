/* cli_data.c — the CLI's local data commands (no coordinator involved):
 *
 *   ringtrain prep --input DIR --sql FILE --out DIR [--partitions N]
 *                  [--skip-bad-rows] [--keep-db FILE] [--rows-per-group N] [--quiet]
 *   ringtrain predict --model CKPT --dataset DIR --out FILE [--threads N] [--batch N]
 *   ringtrain model summary CKPT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rt_ckpt.h"
#include "rt_prep.h"
#include "trainer.h"

int cli_prep(const cli_args *a)
{
    rt_prep_opts o = {.partitions = 1};
    int64_t n;
    o.skip_bad_rows = cli_switch(a, "--skip-bad-rows");
    o.quiet = cli_switch(a, "--quiet");
    o.input_dir = cli_value(a, "--input");
    o.sql_path = cli_value(a, "--sql");
    o.out_dir = cli_value(a, "--out");
    o.db_path = cli_value(a, "--keep-db");
    int r1 = cli_int(a, "--partitions", 1, 100000, &n);
    if (r1 > 0)
        o.partitions = (int)n;
    int r2 = cli_int(a, "--rows-per-group", 1, 1 << 24, &n);
    if (r2 > 0)
        o.rows_per_group = n;
    if (r1 < 0 || r2 < 0)
        return 2;
    if (!o.input_dir || !o.sql_path || !o.out_dir) {
        fprintf(stderr, "ringtrain prep: --input, --sql and --out are needed\n");
        cli_usage(a->cmd, stderr);
        return 2;
    }
    rt_prep_report rep;
    char err[RT_ERR_LEN];
    if (rt_prep_run(&o, &rep, err) != RT_OK) {
        fprintf(stderr, "ringtrain prep: %s\n", err);
        return 1;
    }
    int64_t skipped = rep.bad_rows_skipped;
    for (int t = 0; t < rep.ntables; t++)
        skipped += rep.skipped[t];
    printf("prepared %s: %lld training rows, %lld validation rows, %lld test rows in %d "
           "partition%s (%.1f s)",
           o.out_dir, (long long)rep.train_rows, (long long)rep.validation_rows,
           (long long)rep.test_rows, o.partitions, o.partitions == 1 ? "" : "s", rep.seconds);
    if (skipped)
        printf("; %lld malformed or bad rows skipped", (long long)skipped);
    if (rep.cont_defaulted)
        printf("; %lld continuous values were NULL or not numbers and became 0",
               (long long)rep.cont_defaulted);
    printf("\n");
    if (!rep.has_validation)
        fprintf(stderr, "ringtrain prep: warning: the script names no validation column: "
                        "training will have no validation loss and keep the best epoch by its "
                        "training loss\n");
    else if (rep.validation_rows == 0)
        fprintf(stderr, "ringtrain prep: warning: the validation column marks no row: training "
                        "will have no validation loss (its values must be 1/0, true/false or "
                        "yes/no)\n");
    return 0;
}

int cli_predict(const cli_args *a)
{
    const char *model = cli_value(a, "--model"), *dataset = cli_value(a, "--dataset"),
               *out = cli_value(a, "--out");
    int64_t threads = 0, batch = 4096;
    if (cli_int(a, "--threads", 0, 1024, &threads) < 0 ||
        cli_int(a, "--batch", 1, 1 << 22, &batch) < 0)
        return 2;
    if (!model || !dataset || !out) {
        fprintf(stderr, "ringtrain predict: --model, --dataset and --out are needed\n");
        cli_usage(a->cmd, stderr);
        return 2;
    }
    int64_t rows = 0;
    char err[RT_ERR_LEN];
    if (rt_predict_checkpoint(model, dataset, out, (int)threads, batch, &rows, err) != RT_OK) {
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
    rt_kctx *ctx = NULL;
    rt_model *m = NULL;
    int rc = 0;
    if (rt_kctx_create(RT_DEVICE_CPU, 1, &ctx, err) != RT_OK ||
        rt_model_create(&ck.spec, ctx, 1, &m, err) != RT_OK) {
        fprintf(stderr, "ringtrain model: %s\n", err);
        rc = 1;
    } else {
        rt_model_summary(m, stdout);
    }
    rt_model_destroy(m);
    rt_kctx_destroy(ctx);
    rt_ckpt_free(&ck);
    return rc;
}
