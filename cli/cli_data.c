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

static bool parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

int cli_prep(int argc, char **argv)
{
    rt_prep_opts o = {.partitions = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        if (!strcmp(a, "--skip-bad-rows"))
            o.skip_bad_rows = true;
        else if (!strcmp(a, "--quiet"))
            o.quiet = true;
        else if (v && !strcmp(a, "--input"))
            o.input_dir = argv[++i];
        else if (v && !strcmp(a, "--sql"))
            o.sql_path = argv[++i];
        else if (v && !strcmp(a, "--out"))
            o.out_dir = argv[++i];
        else if (v && !strcmp(a, "--keep-db"))
            o.db_path = argv[++i];
        else if (v && !strcmp(a, "--partitions") && parse_int(v, 1, 100000, &n)) {
            o.partitions = (int)n;
            i++;
        } else if (v && !strcmp(a, "--rows-per-group") && parse_int(v, 1, 1 << 24, &n)) {
            o.rows_per_group = n;
            i++;
        } else {
            fprintf(stderr, "ringtrain prep: unexpected or invalid argument '%s'\n"
                            "usage: ringtrain prep --input DIR --sql FILE --out DIR "
                            "[--partitions N] [--skip-bad-rows] [--keep-db FILE]\n", a);
            return 2;
        }
    }
    if (!o.input_dir || !o.sql_path || !o.out_dir) {
        fprintf(stderr, "ringtrain prep: --input, --sql and --out are needed\n");
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
    printf("\n");
    return 0;
}

int cli_predict(int argc, char **argv)
{
    const char *model = NULL, *dataset = NULL, *out = NULL;
    long threads = 0, batch = 4096;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v && !strcmp(argv[i], "--model"))
            model = argv[++i];
        else if (v && !strcmp(argv[i], "--dataset"))
            dataset = argv[++i];
        else if (v && !strcmp(argv[i], "--out"))
            out = argv[++i];
        else if (v && !strcmp(argv[i], "--threads") && parse_int(v, 0, 1024, &threads))
            i++;
        else if (v && !strcmp(argv[i], "--batch") && parse_int(v, 1, 1 << 22, &batch))
            i++;
        else {
            fprintf(stderr, "ringtrain predict: unexpected or invalid argument '%s'\n"
                            "usage: ringtrain predict --model CKPT --dataset DIR --out FILE "
                            "[--threads N] [--batch N]\n", argv[i]);
            return 2;
        }
    }
    if (!model || !dataset || !out) {
        fprintf(stderr, "ringtrain predict: --model, --dataset and --out are needed\n");
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

int cli_model(int argc, char **argv)
{
    if (argc != 3 || strcmp(argv[1], "summary") != 0) {
        fprintf(stderr, "usage: ringtrain model summary CKPT\n");
        return 2;
    }
    rt_ckpt ck;
    char err[RT_ERR_LEN];
    if (rt_ckpt_read(argv[2], &ck, err) != RT_OK) {
        fprintf(stderr, "ringtrain model: %s\n", err);
        return 1;
    }
    printf("%s: after epoch %lld (step %lld, %lld rank%s); best epoch %lld, val_loss %.6f\n",
           argv[2], (long long)ck.epoch, (long long)ck.step, (long long)ck.world_size,
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
