/* rt_predict.h — predictions (predict.c): a trained model's for a
 * dataset's test rows (the job's submission.csv, `ringtrain predict
 * --dataset`) or for new raw data (`ringtrain predict --input`), in the
 * format the model's task asks for. */
#ifndef RT_PREDICT_H
#define RT_PREDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_dp.h"
#include "rt_model_names.h"
#include "rt_rows.h"

/* ---- prediction (predict.c) ----------------------------------------------------- */

/* What a predictions file holds: a regression's value (exp() with a log
 * label, mean + std * z with a standardised one) under the label's name, or
 * a classification's class name and, with proba, p_<class> per class. */
typedef struct rt_pred_format {
    const char *label, *label_transform;
    double label_mean, label_std;
    int n_out, nclasses;
    rt_loss loss;
    char **classes;
    bool proba;
    double threshold;
} rt_pred_format;
/* The format of a checkpoint's model (proba on, threshold 0.5). */
typedef struct rt_ckpt rt_ckpt;
void rt_pred_format_of(const rt_ckpt *ck, rt_pred_format *f);
/* Predictions of the model in d for the test rows, as CSV "Id,..." sorted
 * by id, written atomically to path. */
rt_status rt_predict_rows(rt_dp *d, const rt_rows *test, const rt_pred_format *f, const char *path,
                          char *err);
/* The same CSV from predictions already made (n_out values per test row). */
rt_status rt_predict_write(const rt_rows *test, const float *pred, const rt_pred_format *f,
                           const char *path, char *err);
/* One row's prediction fields after its id (",value" or ",class,p...")
 * into buf; returns the length. */
size_t rt_pred_fields(const rt_pred_format *f, const float *z, char *buf, size_t len);
/* The header's fields after the id: the label's name (label_transform =
 * log: the target's, without a log_/log/ln_ prefix: log_price -> price),
 * then p_CLASS for each class. */
size_t rt_pred_header(const rt_pred_format *f, char *buf, size_t len);
/* `ringtrain predict --input`: new raw data scored with the checkpoint's
 * own vocabularies.  The input is read as prep reads it (rt_prep_scan: the
 * training's feature script over a folder of tables with sql, else one
 * file or Parquet folder of featurised rows); each categorical value is
 * looked up in the values the model learnt — one it never saw gets an
 * extra embedding row, the mean of the column's learnt rows, and is
 * counted; continuous NULLs and non-numbers become 0, counted.  The CSV
 * keeps the input's row order: the id column (or the row's number), the
 * prediction (exp() with a log label), then the columns of keep. */
typedef struct rt_predict_input_opts {
    const char *model, *input, *sql, *out, *id;
    const char *const *keep;
    int nkeep, threads;
    int64_t batch;
    bool no_proba; /* classification: only the class, no p_<class> columns */
} rt_predict_input_opts;
typedef struct rt_predict_input_report {
    int64_t rows, defaulted;
    int ncat;
    char cat[RT_MODEL_MAX_CAT][64];
    int64_t unknown[RT_MODEL_MAX_CAT]; /* values the model never saw, per column */
} rt_predict_input_report;
rt_status rt_predict_input(const rt_predict_input_opts *o, rt_predict_input_report *rep, char *err);

/* `ringtrain predict`: a checkpoint and a dataset in, the CSV out. */
rt_status rt_predict_checkpoint(const char *ckpt_path, const char *dataset_dir, const char *path,
                                int threads, int64_t batch, bool proba, int64_t *rows, char *err);

#endif
