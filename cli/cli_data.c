/* cli_data.c — the CLI's local data commands (no coordinator involved):
 *
 *   ringtrain prep --input DIR --sql FILE --out DIR [--partitions N]
 *                  [--skip-bad-rows] [--keep-db FILE] [--rows-per-group N] [--quiet]
 *   ringtrain prep --from PATH --label COL --out DIR [--test PATH | --test-column COL]
 *                  [--validation F | --validation-column COL] [--categorical COLS] ...
 *   ringtrain predict --model CKPT --dataset DIR --out FILE [--threads N] [--batch N]
 *   ringtrain model summary CKPT [--tensors]
 *
 * and the model check of a job file before `submit` and `run` send it. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "rt_ckpt.h"
#include "rt_ensemble.h"
#include "rt_file.h"
#include "rt_json.h"
#include "rt_config.h"
#include "rt_dataset.h"
#include "rt_dp.h"
#include "rt_prep.h"
#include "rt_schemas.h"
#include "rt_predict.h"
#include "rt_tmp.h"
#include "trainer.h"

/* --from's column roles: the flags, else the [data] keys of --job.
 * Strings from the job file are kept in bufs (freed by the caller). */
static int featurised_roles(const cli_args *a, rt_prep_opts *o, char **bufs)
{
    o->roles.label = cli_value(a, "--label");
    o->roles.categorical = cli_value(a, "--categorical");
    o->roles.continuous = cli_value(a, "--continuous");
    o->roles.validation = cli_value(a, "--validation-column");
    o->infer.test_column = cli_value(a, "--test-column");
    o->infer.drop = cli_value(a, "--drop");
    o->infer.validation_fraction = o->roles.validation ? 0 : 0.2;
    const char *vf = cli_value(a, "--validation");
    if (vf) {
        char *end;
        double f = strtod(vf, &end);
        if (*end || end == vf || !(f >= 0 && f < 1)) {
            fprintf(stderr,
                    "ringtrain prep: --validation %s: the fraction of the training rows "
                    "held out, 0 to below 1 (a column of 0/1 flags is "
                    "--validation-column COL)\n",
                    vf);
            return 2;
        }
        if (o->roles.validation) {
            fprintf(stderr, "ringtrain prep: --validation and --validation-column both say which "
                            "rows validate: give one\n");
            return 2;
        }
        o->infer.validation_fraction = f;
    }
    if (o->folds && (vf || o->roles.validation)) {
        fprintf(stderr, "ringtrain prep: --fold and %s both say which rows validate: give one\n",
                vf ? "--validation" : "--validation-column");
        return 2;
    }
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
    /* --validation F or --fold K/F given: the flag wins over the job's column */
    if (!o->roles.validation && j.validation && !cli_value(a, "--validation") &&
        !cli_value(a, "--fold"))
        o->roles.validation = bufs[3] = strdup(j.validation);
    rt_cfg_free(&rt_job_schema, &j);
    return 0;
}

/* --fold K/F and --seed S into o; 0, or the exit status after saying what
 * is wrong. */
static int fold_options(const cli_args *a, rt_prep_opts *o)
{
    const char *fold = cli_value(a, "--fold");
    if (fold) {
        /* digits, '/', digits: no sign, space or anything after */
        char *slash, *end = NULL;
        const long k = strtol(fold, &slash, 10);
        const long f =
            *slash == '/' && isdigit((unsigned char)slash[1]) ? strtol(slash + 1, &end, 10) : 0;
        if (!isdigit((unsigned char)fold[0]) || !end || *end || f < 2 || f > 1000 || k >= f) {
            fprintf(stderr,
                    "ringtrain prep: --fold %s: K/F, fold K (0 to F-1) of F cross-validation "
                    "folds, F 2 to 1000 (e.g. --fold 0/5)\n",
                    fold);
            return 2;
        }
        o->folds = (int)f;
        o->fold = (int)k;
    }
    int64_t seed = 0;
    if (cli_int(a, "--seed", 0, INT64_MAX / 2, &seed) < 0)
        return 2;
    if (cli_value(a, "--seed") && !fold && !o->train_parquet) {
        fprintf(stderr, "ringtrain prep: --seed orders the rows of --fold's folds (or of --from's "
                        "split): with --sql, give --fold K/F too\n");
        return 2;
    }
    o->seed = (uint64_t)seed;
    return 0;
}

/* prep's flags into o (the roles of --from: featurised_roles, their strings
 * in bufs); 0, or the exit status after saying what is wrong. */
static int prep_options(const cli_args *a, rt_prep_opts *o, char **bufs)
{
    int64_t n;
    o->skip_bad_rows = cli_switch(a, "--skip-bad-rows");
    o->quiet = cli_switch(a, "--quiet");
    o->input_dir = cli_value(a, "--input");
    o->sql_path = cli_value(a, "--sql");
    o->out_dir = cli_value(a, "--out");
    o->db_path = cli_value(a, "--keep-db");
    o->db_mode = cli_value(a, "--db");
    o->lenient = cli_switch(a, "--lenient");
    o->roles.positive_class = cli_value(a, "--positive-class");
    int r1 = cli_int(a, "--partitions", 1, 100000, &n);
    if (r1 > 0)
        o->partitions = (int)n;
    int r2 = cli_int(a, "--rows-per-group", 1, 1 << 24, &n);
    if (r2 > 0)
        o->rows_per_group = n;
    if (r1 < 0 || r2 < 0)
        return 2;
    o->train_parquet =
        cli_value(a, "--from") ? cli_value(a, "--from") : cli_value(a, "--from-parquet");
    o->test_parquet = cli_value(a, "--test");
    if (o->train_parquet && (o->input_dir || o->sql_path)) {
        fprintf(stderr, "ringtrain prep: --from replaces --input and --sql (its data "
                        "are featurised already); give one or the other\n");
        return 2;
    }
    static const char *const from_only[] = {"--test",
                                            "--test-column",
                                            "--label",
                                            "--job",
                                            "--categorical",
                                            "--continuous",
                                            "--drop",
                                            "--validation",
                                            "--validation-column",
                                            "--id",
                                            "--date",
                                            "--weight",
                                            "--task",
                                            "--label-transform",
                                            "--max-label",
                                            "--positive-class"};
    for (size_t i = 0; !o->train_parquet && i < sizeof from_only / sizeof *from_only; i++)
        if (cli_value(a, from_only[i])) {
            fprintf(stderr,
                    "ringtrain prep: %s goes with --from (with --sql, the script's meta "
                    "table names the roles: docs/prep.md)\n",
                    from_only[i]);
            return 2;
        }
    if (o->train_parquet ? !o->out_dir : (!o->input_dir || !o->sql_path || !o->out_dir)) {
        fprintf(stderr, "ringtrain prep: %s\n",
                o->train_parquet ? "--out is needed"
                                 : "--input, --sql and --out are needed (or --from and --out)");
        cli_usage(a->cmd, stderr);
        return 2;
    }
    if (fold_options(a, o))
        return 2;
    return o->train_parquet ? featurised_roles(a, o, bufs) : 0;
}

/* rt_prep_run, with S3 where a path is an s3:// URI: the inputs copied
 * down, the dataset prepared in a local folder and copied up (the manifest
 * last: a reader finds every shard).  o->out_dir is as given after it. */
static rt_status prep_run_s3(rt_prep_opts *o, rt_prep_report *rep, char *err)
{
    char local[4][1300], outdir[1300];
    const char *out = o->out_dir;
    cli_s3 s3 = {0};
    rt_status st = RT_OK;
    const char **paths[4] = {&o->input_dir, &o->train_parquet, &o->test_parquet, &o->sql_path};
    for (int i = 0; i < 4 && st == RT_OK; i++)
        if (rt_s3_is_uri(*paths[i]) &&
            (st = cli_s3_fetch(&s3, *paths[i], i == 0, local[i], sizeof local[i], err)) == RT_OK)
            *paths[i] = local[i];
    if (st == RT_OK && rt_s3_is_uri(out) &&
        (st = cli_s3_out_dir(&s3, out, outdir, sizeof outdir, err)) == RT_OK)
        o->out_dir = outdir;
    if (st == RT_OK)
        st = rt_prep_run(o, rep, err);
    int64_t files = 0;
    if (st == RT_OK && rt_s3_is_uri(out))
        st = rt_s3_put_tree(s3.s3, outdir, out, "manifest.json", &files, err);
    cli_s3_done(&s3);
    o->out_dir = out;
    return st;
}

/* The line that says what prep made, and its warnings. */
static void prep_said(const rt_prep_opts *o, const rt_prep_report *rep)
{
    int64_t skipped = rep->bad_rows_skipped;
    for (int t = 0; t < rep->ntables; t++)
        skipped += rep->skipped[t];
    char task[400];
    if (rep->nclasses > 0)
        snprintf(task, sizeof task, "%s, %d classes, %s", rep->task, rep->nclasses, rep->task_why);
    else
        snprintf(task, sizeof task, "%s, %s", rep->task, rep->task_why);
    if (rep->positive_class[0])
        snprintf(task + strlen(task), sizeof task - strlen(task), "; positive class '%s' (%s)",
                 rep->positive_class, rep->positive_why);
    char fold[64] = "";
    if (o->folds)
        snprintf(fold, sizeof fold, " (fold %d of %d)", o->fold, o->folds);
    printf("prepared %s (%s): %lld training rows, %lld validation rows%s, %lld test rows in %d "
           "partition%s (%.1f s)",
           o->out_dir, task, (long long)rep->train_rows, (long long)rep->validation_rows, fold,
           (long long)rep->test_rows, o->partitions, o->partitions == 1 ? "" : "s", rep->seconds);
    if (skipped)
        printf("; %lld malformed or bad rows skipped", (long long)skipped);
    if (rep->cont_defaulted) {
        printf("; %lld continuous values were missing and became 0:",
               (long long)rep->cont_defaulted);
        for (int i = 0; i < rep->ndefaulted; i++)
            printf("%s %s %lld%s", i ? "," : "", rep->defaulted[i].name,
                   (long long)(rep->defaulted[i].missing + rep->defaulted[i].text),
                   rep->defaulted[i].text ? " (text: --lenient)" : "");
        if (rep->ndefaulted == 8)
            printf(", ...");
    }
    printf("\n");
    if (o->train_parquet)
        printf("the script prep ran is %s/prep.sql: edit it and prep again with --input DIR "
               "--sql %s/prep.sql\n",
               o->out_dir, o->out_dir);
    if (rep->score_sql)
        printf("new rows (no label needed) are scored with: ringtrain predict --model "
               "STORE/best.ckpt --input NEW.csv --sql %s/score.sql --out predictions.csv\n",
               o->out_dir);
    if (!rep->has_validation)
        fprintf(stderr,
                "ringtrain prep: warning: %s: "
                "training will have no validation loss and keep the best epoch by its "
                "training loss\n",
                o->train_parquet ? "no validation rows (--validation 0)"
                                 : "the script names no validation column");
    else if (rep->validation_rows == 0)
        fprintf(stderr, "ringtrain prep: warning: the validation column marks no row: training "
                        "will have no validation loss (its values must be 1/0, true/false or "
                        "yes/no)\n");
}

int cli_prep(const cli_args *a)
{
    rt_prep_opts o = {.partitions = 1};
    char *bufs[4] = {0};
    int rc = prep_options(a, &o, bufs);
    if (rc) {
        for (int i = 0; i < 4; i++)
            free(bufs[i]);
        return rc;
    }
    char command[2048] = "ringtrain prep"; /* for the script's first lines */
    for (const cli_flag *f = a->cmd->flags; f->name; f++) {
        const char *v = cli_value(a, f->name);
        size_t n = strlen(command);
        if (v && f->kind == CLI_SWITCH)
            snprintf(command + n, sizeof command - n, " %s", f->name);
        else if (v && !v[strcspn(v, " \t\n'\"\\$`;&|<>()*?[]#~!")])
            snprintf(command + n, sizeof command - n, " %s %s", f->name, v);
        else if (v) { /* quoted for a shell: 'a b', and ' as '\'' */
            snprintf(command + n, sizeof command - n, " %s '", f->name);
            for (const char *c = v; *c; c++) {
                n = strlen(command);
                snprintf(command + n, sizeof command - n, "%s", *c == '\'' ? "'\\''" : "");
                n = strlen(command);
                if (*c != '\'' && n + 1 < sizeof command) /* a line break: not in a comment */
                    command[n] = (unsigned char)*c < 0x20 ? '?' : *c, command[n + 1] = '\0';
            }
            n = strlen(command);
            snprintf(command + n, sizeof command - n, "'");
        }
    }
    o.infer.command = command;
    rt_prep_report rep;
    char err[RT_ERR_LEN];
    rt_status st = prep_run_s3(&o, &rep, err);
    for (int i = 0; i < 4; i++)
        free(bufs[i]);
    if (st != RT_OK) {
        fprintf(stderr, "ringtrain prep: %s\n", err);
        return 1;
    }
    prep_said(&o, &rep);
    return 0;
}

/* --range-factor F (default 10; 0: no check). */
static int range_factor(const cli_args *a, double *out)
{
    *out = 10;
    const char *v = cli_value(a, "--range-factor");
    char *end = NULL;
    if (v && (*out = strtod(v, &end), !end || *end || !(*out >= 0))) {
        fprintf(stderr, "ringtrain predict: --range-factor %s: a number >= 0 (0: no check)\n", v);
        return 2;
    }
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

/* --keep's columns into keep: 0, or 2 with the problem printed */
static int keep_cols(const cli_args *a, rt_strlist *keep)
{
    char err[RT_ERR_LEN];
    const char *kv = cli_value(a, "--keep");
    if (kv && rt_strlist_parse(kv, keep, err) != RT_OK) {
        fprintf(stderr, "ringtrain predict: --keep: %s\n", err);
        return 2;
    }
    return 0;
}

/* --input: the rows of new raw data (a local file or folder) to out; shown:
 * what the message names (an S3 URI, when out is its local stand-in). */
static int predict_input(const cli_args *a, const char *model, const char *out, int threads,
                         int64_t batch, const char *input, const char *shown)
{
    rt_predict_input_opts o = {.model = model,
                               .input = input,
                               .sql = cli_value(a, "--sql"),
                               .out = out,
                               .id = cli_value(a, "--id"),
                               .threads = threads,
                               .batch = batch,
                               .no_proba = no_proba(a),
                               .clip = cli_switch(a, "--clip")};
    rt_strlist keep = {0};
    if (range_factor(a, &o.range_factor) != 0 || keep_cols(a, &keep) != 0)
        return 2;
    char err[RT_ERR_LEN];
    o.keep = (const char *const *)keep.items;
    o.nkeep = (int)keep.n;
    rt_predict_input_report rep;
    rt_status st = rt_predict_input(&o, &rep, err);
    rt_strlist_free(&keep);
    if (st != RT_OK) {
        rt_predict_input_report_free(&rep);
        fprintf(stderr, "ringtrain predict: %s\n", err);
        return 1;
    }
    printf("wrote %lld predictions to %s\n", (long long)rep.rows, shown);
    for (int i = 0; i < rep.ncat; i++)
        if (rep.unknown[i])
            printf("  %s: %lld value%s the model never saw (%.2f%% of the rows) scored with "
                   "the mean of its learnt embeddings\n",
                   rep.cat[i], (long long)rep.unknown[i], rep.unknown[i] == 1 ? "" : "s",
                   rep.rows ? 100.0 * (double)rep.unknown[i] / (double)rep.rows : 0.0);
    if (rep.defaulted)
        printf("  %lld continuous values were NULL or not numbers and became 0\n",
               (long long)rep.defaulted);
    if (rep.range[0])
        printf("  %s\n", rep.range);
    rt_predict_input_report_free(&rep);
    return 0;
}

/* --dataset: a prepared dataset's test rows to out (shown: as predict_input). */
static int predict_dataset(const cli_args *a, const char *model, const char *dataset,
                           const char *out, int threads, int64_t batch, const char *shown)
{
    int64_t rows = 0;
    char err[RT_ERR_LEN], range[RT_ERR_LEN];
    rt_pred_opts po = {.proba = !no_proba(a), .clip = cli_switch(a, "--clip")};
    if (range_factor(a, &po.range_factor) != 0)
        return 2;
    if (rt_predict_checkpoint(model, dataset, out, threads, batch, &po, &rows, range, err) !=
        RT_OK) {
        fprintf(stderr, "ringtrain predict: %s\n", err);
        return 1;
    }
    printf("wrote %lld predictions to %s\n", (long long)rows, shown);
    if (range[0])
        printf("  %s\n", range);
    return 0;
}

/* --model names an ensemble (a folder with ensemble.json, or the file):
 * the path of its ensemble.json into json, else false */
static bool ensemble_model(const char *model, char *json, size_t len)
{
    size_t n = strlen(model);
    if (n >= 13 && !strcmp(model + n - 13, "ensemble.json")) {
        snprintf(json, len, "%s", model);
        return true;
    }
    struct stat sb;
    if (stat(model, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return false;
    snprintf(json, len, "%s/ensemble.json", model);
    return stat(json, &sb) == 0;
}

/* Each member of the ensemble whose weight is not 0 predicts (its best.ckpt,
 * else last.ckpt: what its submission.csv came from) into the folder tmp,
 * then rt_ensemble_combine weighs them into out. */
static int predict_ensemble(const cli_args *a, const char *json, const char *dataset,
                            const char *input, const char *out, int threads, int64_t batch,
                            const char *shown)
{
    char err[RT_ERR_LEN], tmp[1200];
    char *text = NULL;
    size_t len = 0;
    rt_json *j = NULL;
    rt_strlist keep = {0};
    double rf = 0;
    if (range_factor(a, &rf) != 0 || keep_cols(a, &keep) != 0)
        return 2;
    rt_status st = rt_read_file(json, 64u << 20, &text, &len, err);
    if (st == RT_OK)
        st = rt_json_parse(text, len, &j, err);
    free(text);
    const rt_json *ms = j ? rt_json_get(j, "members") : NULL;
    const size_t nm = rt_json_len(ms);
    if (st == RT_OK && (nm == 0 || nm > RT_ENS_MAX_MEMBERS))
        st = rt_err(err, RT_ERR_INVALID, "%s lists %zu members (1 to %d)", json, nm,
                    RT_ENS_MAX_MEMBERS);
    const char *t = getenv("TMPDIR");
    snprintf(tmp, sizeof tmp, "%s/ringtrain-ensemble-XXXXXX", t && t[0] ? t : "/tmp");
    bool made = false;
    if (st == RT_OK && !(made = mkdtemp(tmp) != NULL))
        st = rt_err(err, RT_ERR_IO, "cannot make a folder in %s: %s", tmp, strerror(errno));
    const int tmp_slot = made ? rt_tmp_track(tmp) : -1;
    char(*files)[1300] = calloc(nm ? nm : 1, sizeof *files);
    const char **fp = calloc(nm ? nm : 1, sizeof *fp);
    double *w = calloc(nm ? nm : 1, sizeof *w);
    int n = 0;
    if (st == RT_OK && (!files || !fp || !w))
        st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; st == RT_OK && i < nm; i++) {
        const rt_json *mi = rt_json_at(ms, i);
        const char *store = rt_json_get_str(mi, "store");
        const double wi = rt_json_num(rt_json_get(mi, "weight"), -1);
        if (!store || !(wi >= 0 && wi <= 1)) {
            st = rt_err(err, RT_ERR_INVALID, "%s: member %zu has no store or weight", json, i + 1);
            break;
        }
        if (wi == 0)
            continue;
        char ck[1300];
        rt_ckpt h;
        if ((st = rt_ckpt_find_header(store, ck, sizeof ck, &h, err)) != RT_OK)
            break;
        rt_ckpt_free(&h);
        snprintf(files[n], sizeof files[n], "%s/member-%zu.csv", tmp, i + 1);
        int64_t rows = 0;
        char range[RT_ERR_LEN];
        if (input) {
            rt_predict_input_opts o = {.model = ck,
                                       .input = input,
                                       .sql = cli_value(a, "--sql"),
                                       .out = files[n],
                                       .id = cli_value(a, "--id"),
                                       .keep = (const char *const *)keep.items,
                                       .nkeep = (int)keep.n,
                                       .threads = threads,
                                       .batch = batch,
                                       .range_factor = rf,
                                       .clip = cli_switch(a, "--clip")};
            rt_predict_input_report rep;
            st = rt_predict_input(&o, &rep, err);
            rt_predict_input_report_free(&rep);
        } else {
            rt_pred_opts po = {.proba = true, .range_factor = rf, .clip = cli_switch(a, "--clip")};
            st = rt_predict_checkpoint(ck, dataset, files[n], threads, batch, &po, &rows, range,
                                       err);
        }
        if (st == RT_OK) {
            printf("  member %zu (weight %.3f): %s\n", i + 1, wi, cli_safe(ck));
            fp[n] = files[n];
            w[n++] = wi;
        }
    }
    if (st == RT_OK)
        st = rt_ensemble_combine(fp, w, n, !no_proba(a), out, err);
    rt_tmp_untrack(tmp_slot);
    if (made)
        rt_remove_tree(tmp);
    rt_json_free(j);
    rt_strlist_free(&keep);
    free(files), free(fp), free(w);
    if (st != RT_OK) {
        if (err[0])
            fprintf(stderr, "ringtrain predict: %s\n", err);
        return 1;
    }
    printf("wrote the ensemble's predictions (%d member%s) to %s\n", n, n == 1 ? "" : "s", shown);
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
    /* S3: the raw input copied down, the predictions written here and put up */
    cli_s3 s3 = {0};
    char err[RT_ERR_LEN], lin[1300], lout[1300];
    const char *in = input, *to = out;
    rt_status st = RT_OK;
    if (rt_s3_is_uri(input) && (st = cli_s3_fetch(&s3, input, true, lin, sizeof lin, err)) == RT_OK)
        in = lin;
    if (st == RT_OK && rt_s3_is_uri(out) &&
        (st = cli_s3_out_file(&s3, out, lout, sizeof lout, err)) == RT_OK)
        to = lout;
    int rc = 1;
    char ens[1300];
    if (st != RT_OK)
        fprintf(stderr, "ringtrain predict: %s\n", err);
    else if (ensemble_model(model, ens, sizeof ens))
        rc = predict_ensemble(a, ens, dataset, in, to, (int)threads, batch, out);
    else if (input)
        rc = predict_input(a, model, to, (int)threads, batch, in, out);
    else
        rc = predict_dataset(a, model, dataset, to, (int)threads, batch, out);
    if (rc == 0 && to != out && (st = cli_s3_put(&s3, to, out, err)) != RT_OK) {
        fprintf(stderr, "ringtrain predict: %s\n", err);
        rc = 1;
    }
    cli_s3_done(&s3);
    return rc;
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
    printf("%s: after epoch %lld (step %lld, %lld rank%s); best epoch %lld, %s %.6f\n", path,
           (long long)ck.epoch, (long long)ck.step, (long long)ck.world_size,
           ck.world_size == 1 ? "" : "s", (long long)ck.best_epoch, cli_safe(ck.monitor),
           ck.best_val_loss);
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

/* Before a job whose batch norms would evaluate with moving statistics
 * still near their start (rt_model_bn_lag), a warning: its steps are the
 * epochs times the steps of the rank with the most training rows (each
 * reads the partitions p = rank mod np). */
static void bn_lag_warning(const rt_job_cfg *j, const rt_dataset *ds, const rt_model_spec *spec)
{
    rt_model_memory mem;
    char err[RT_ERR_LEN], lag[400];
    if (rt_model_spec_memory(spec, 1, NULL, &mem, err) != RT_OK || !mem.batch_norms)
        return;
    int64_t most = 0;
    for (int64_t r = 0; r < j->np && r < ds->nparts; r++) {
        int64_t rows = 0;
        for (int p = (int)r; p < ds->nparts; p += (int)j->np)
            rows += ds->parts[p].rows - ds->parts[p].validation_rows;
        most = rows > most ? rows : most;
    }
    const int64_t steps =
        j->steps_per_epoch > 0 ? j->steps_per_epoch : (most + j->batch_size - 1) / j->batch_size;
    if (rt_model_bn_lag(spec->bn_momentum, j->epochs * steps, lag, sizeof lag)) {
        fprintf(stderr, "ringtrain: warning: %s\n", lag);
        cli_warned(lag);
    }
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
        rt_dp_opts d;
        rt_dp_opts_defaults(&d);
        d.max_batch = j->batch_size > j->eval_batch_size ? j->batch_size : j->eval_batch_size;
        d.mem_share = (int)j->np;
        rt_kctx_set_bf16(ctx, j->precision == RT_PREC_BF16); /* where this CPU can */
        st = rt_dp_check_memory(spec, ctx, &d, err);
        rt_kctx_destroy(ctx);
    }
    if (st == RT_OK)
        bn_lag_warning(j, ds, spec);
    if (st != RT_OK)
        fprintf(stderr, "ringtrain: %s does not fit its dataset%s:\n%s\n", o->fname,
                strcmp(a->cmd->name, "worker") != 0 ? "; nothing was submitted" : "", err);
    if (cols)
        rt_columns_free(cols);
    free(cols);
    free(spec);
    rt_dataset_free(ds);
    return st == RT_OK ? 0 : 2;
}

/* The table of members and the ensemble's figure */
static void ensemble_table(const rt_ens_opts *o, const rt_ens_report *r, const char *out)
{
    const char *metric = rt_ens_metric_name(r->metric);
    if (o->bag)
        printf("%d fold%s bagged, %lld out-of-fold validation rows, %s (each fold's own rows, "
               "then all)\n",
               r->nmembers, r->nmembers == 1 ? "" : "s", (long long)r->val_rows, metric);
    else
        printf("%d member%s, %lld validation rows, %s: the best %d of %d rounds kept\n",
               r->nmembers, r->nmembers == 1 ? "" : "s", (long long)r->val_rows, metric,
               r->fit.rounds_kept, r->rounds);
    printf("  %6s  %12s  %s\n", "weight", metric, "store");
    for (int i = 0; i < r->nmembers; i++)
        printf("  %6.3f  %12.6f  %s\n", r->fit.weight[i], r->fit.member[i],
               cli_safe(o->stores[r->member[i]]));
    printf("  %6s  %12.6f  the %s\n", "", r->fit.ensemble,
           o->bag ? "bag, out of fold" : "ensemble");
    for (int i = 0; i < r->nskipped; i++)
        printf("  left out (no predictions): %s\n", cli_safe(o->stores[r->skipped[i]]));
    if (r->no_test)
        printf("the members' data set has no test rows: wrote %s/validation_predictions.csv and "
               "ensemble.json (ringtrain predict --model %s --input ... scores new rows)\n",
               cli_safe(out), cli_safe(out));
    else
        printf("wrote %lld test predictions to %s/submission.csv (and validation_predictions.csv, "
               "ensemble.json)\n",
               (long long)r->test_rows, cli_safe(out));
}

int cli_ensemble(const cli_args *a)
{
    const char *out = cli_value(a, "--out"), *mname = cli_value(a, "--metric");
    int64_t rounds = 25;
    if (cli_int(a, "--rounds", 1, RT_ENS_MAX_ROUNDS, &rounds) < 0)
        return 2;
    rt_ens_opts o = {.stores = (const char *const *)a->pos,
                     .nstores = a->npos,
                     .out = out,
                     .rounds = (int)rounds,
                     .skip_incomplete = cli_switch(a, "--skip-incomplete"),
                     .bag = cli_switch(a, "--bag")};
    if (!out) {
        fprintf(stderr, "ringtrain ensemble: --out DIR is needed\n");
        cli_usage(a->cmd, stderr);
        return 2;
    }
    if (o.bag && cli_value(a, "--rounds")) {
        fprintf(stderr, "ringtrain ensemble: --rounds is the selection's; --bag weighs the folds' "
                        "models alike\n");
        return 2;
    }
    if (mname && (!rt_ens_metric_parse(mname, &o.metric) || o.metric == RT_ENS_AUTO)) {
        fprintf(stderr, "ringtrain ensemble: --metric %s: one of %s\n", cli_safe(mname),
                rt_ens_metric_list());
        return 2;
    }
    if (a->npos > RT_ENS_MAX_MEMBERS) {
        fprintf(stderr, "ringtrain ensemble: %d stores: at most %d\n", a->npos, RT_ENS_MAX_MEMBERS);
        return 2;
    }
    /* S3: written into a local folder, then put up */
    cli_s3 s3 = {0};
    char err[RT_ERR_LEN], local[1300];
    rt_status st = RT_OK;
    if (rt_s3_is_uri(out) && (st = cli_s3_out_dir(&s3, out, local, sizeof local, err)) == RT_OK)
        o.out = local;
    rt_ens_report rep;
    if (st == RT_OK)
        st = rt_ensemble_run(&o, &rep, err);
    static const char *const files[] = {"validation_predictions.csv", "submission.csv",
                                        "ensemble.json"};
    for (size_t i = 0; st == RT_OK && o.out != out && i < sizeof files / sizeof *files; i++) {
        char from[1400], to[1400];
        snprintf(from, sizeof from, "%s/%s", o.out, files[i]);
        st = rt_s3_uri_join(to, sizeof to, out, files[i])
                 ? cli_s3_put(&s3, from, to, err)
                 : rt_err(err, RT_ERR_INVALID, "%s: too long a URI", out);
    }
    cli_s3_done(&s3);
    if (st != RT_OK) {
        fprintf(stderr, "ringtrain ensemble: %s\n", err);
        return 1;
    }
    ensemble_table(&o, &rep, out);
    return 0;
}
