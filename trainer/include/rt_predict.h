/* rt_predict.h — predictions (predict.c): a trained model's for a
 * dataset's test rows (the job's submission.csv, `ringtrain predict
 * --dataset`) or for new raw data (`ringtrain predict --input`), in the
 * format the model's task asks for. */
#ifndef RT_PREDICT_H
#define RT_PREDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rt_dp.h"
#include "rt_model_names.h"
#include "rt_rows.h"

/* ---- prediction (predict.c) ----------------------------------------------------- */

/* What a predictions file holds: a regression's value (exp() with a log
 * label, mean + std * z with a standardised one) under the label's name, or
 * a classification's class name and, with proba, p_<class> per class. */
/* A regression's predictions far outside the training targets' range: how
 * many, and the first ones (ids, or row numbers for new data). */
#define RT_PRED_RANGE_SHOWN 5
typedef struct rt_pred_range {
    int64_t n;
    int64_t first[RT_PRED_RANGE_SHOWN];
    double value[RT_PRED_RANGE_SHOWN];
} rt_pred_range;

typedef struct rt_pred_format {
    const char *label, *label_transform;
    double label_mean, label_std;
    int n_out, nclasses;
    rt_loss loss;
    char **classes;
    bool proba;
    double threshold;
    /* a regression: the training targets' range [lo, hi] (lo > hi:
     * unknown); a value past it by more than (range_factor - 1) widths of
     * it is counted in *range (range_factor 0: never), and with clip
     * written as that bound */
    double lo, hi, range_factor;
    bool clip;
    rt_pred_range *range;
} rt_pred_format;
/* One row's regression value in the target's unit (de-standardised, exp
 * of a log label), before any clipping. */
double rt_pred_value(const rt_pred_format *f, const float *z);
/* Count v (of row id) if it is outside the allowed range; clipped value. */
double rt_pred_check_range(const rt_pred_format *f, int64_t id, double v);
/* "3 predictions outside ... (ids 17, 230, ...): ..." into buf ("" when none). */
void rt_pred_range_say(const rt_pred_format *f, const char *what, char *buf, size_t len);
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
/* The validation rows of every partition scored by the model in d (one
 * process: no collective), as "Id,true_LABEL,..." sorted by id (the row's
 * id where the training shards carry the id column, else its position):
 * the label as the rows hold it (class names; a regression's in the
 * target's unit), then the prediction as rt_predict_write writes it. */
rt_status rt_predict_validation(rt_dp *d, const rt_dataset *ds, const rt_columns *cols,
                                const rt_pred_format *f, const char *path, int64_t *rows,
                                char *err);
/* One row's prediction fields after its id (",value" or ",class,p...")
 * into buf; returns the length.  A regression's value is checked against
 * the range (rt_pred_check_range, as row id). */
size_t rt_pred_fields(const rt_pred_format *f, int64_t id, const float *z, char *buf, size_t len);
/* The header's fields after the id: the label's name (label_transform =
 * log: the target's, without a log_/log/ln_ prefix: log_price -> price),
 * then p_CLASS for each class. */
size_t rt_pred_header(const rt_pred_format *f, char *buf, size_t len);
/* s as one CSV field to f (quoted when it holds a comma, quote or line end;
 * NULL: nothing), whole whatever its length. */
void rt_pred_csv_put(FILE *f, const char *s);
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
    bool no_proba;       /* classification: only the class, no p_<class> columns */
    double range_factor; /* a regression's range check (rt_pred_format; 0: none) */
    bool clip;
} rt_predict_input_opts;
typedef struct rt_predict_input_report {
    int64_t rows, defaulted;
    int ncat;
    char (*cat)[64];        /* the ncat categorical columns' names (malloc'ed) */
    int64_t *unknown;       /* values the model never saw, per column (malloc'ed) */
    char range[RT_ERR_LEN]; /* rt_pred_range_say's ("" when none) */
} rt_predict_input_report;
/* rep is filled on success; rt_predict_input_report_free it either way. */
rt_status rt_predict_input(const rt_predict_input_opts *o, rt_predict_input_report *rep, char *err);
void rt_predict_input_report_free(rt_predict_input_report *rep);

/* `ringtrain predict`: a checkpoint and a dataset in, the CSV out; range
 * gets rt_pred_range_say's sentence ("" when none). */
typedef struct rt_pred_opts {
    bool proba;
    double range_factor; /* 0: no range check */
    bool clip;
} rt_pred_opts;
rt_status rt_predict_checkpoint(const char *ckpt_path, const char *dataset_dir, const char *path,
                                int threads, int64_t batch, const rt_pred_opts *po, int64_t *rows,
                                char *range, char *err);

#endif
