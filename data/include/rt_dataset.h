/* rt_dataset.h — a prepared dataset: a folder with manifest.json and shard
 * files (rt_shard.h).  The manifest names every column with its role and
 * type, the vocabulary of each categorical column (index = position), the
 * label's transform and maximum, and the row counts of every partition:
 *
 *   {"format": "ringtrain-dataset", "version": 1, "task": "regression",
 *    "label": "Sales", "label_transform": "log", "max_label": 41551,
 *    "validation": "Validation", "id": "Id", "date": "Date",
 *    "columns": [{"name": "Store", "role": "categorical", "type": "i32",
 *                 "vocab": ["1", "10", ...]},
 *                {"name": "Promo2Weeks", "role": "continuous", "type": "f32",
 *                 "mean": 9.4, "std": 12.1, "quantiles": [0, 0, 1.5, ...]}, ...],
 *   (a classification's label column: "vocab" holds its classes, index =
 *   position, and "class_rows" their training rows; "weight" names a
 *   sample-weight column; label_transform standardize adds "label_mean"
 *   and "label_std"; a regression's "label_range" is [lo, hi] of the
 *   training rows' targets)
 *    "partitions": [{"file": "train-00000.rts", "rows": 422000,
 *                    "validation_rows": 20000}, ...],
 *    "test": [{"file": "test-00000.rts", "rows": 41088}],
 *    "rows": {"train": ..., "validation": ..., "test": ...}, "source": {...}}
 *
 * Training partitions hold the training and the validation rows (flagged
 * by the validation column); test partitions have the id column instead of
 * the label.  The manifest is written last: a folder without one is an
 * unfinished prep. */
#ifndef RT_DATASET_H
#define RT_DATASET_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_shard.h"
#include "rt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rt_col_role {
    RT_ROLE_CATEGORICAL = 0,
    RT_ROLE_CONTINUOUS,
    RT_ROLE_LABEL,
    RT_ROLE_VALIDATION,
    RT_ROLE_ID,
    RT_ROLE_DATE,
    RT_ROLE_WEIGHT,
} rt_col_role;
const char *rt_col_role_name(rt_col_role r);

typedef struct rt_ds_column {
    char name[RT_SHARD_NAME_LEN];
    rt_col_role role;
    rt_col_type type;
    int32_t vocab_size; /* categorical: indices are 0 .. vocab_size-1; a classification's
                           label: its classes (the label holds the index as an f32) */
    char **vocab;       /* the values (NULL entries were SQL NULL) */
    /* continuous: mean and (population) standard deviation over the
     * training rows, validation rows left out ([model] continuous_norm =
     * standardize); has_stats false in a manifest written without them */
    bool has_stats;
    double mean, std;
    int64_t *class_rows; /* a classification's label: training rows of each class */
    /* continuous: nquantiles ascending quantiles of the training rows (with
     * a little noise; [model] continuous_norm = quantile); 0 and NULL in a
     * manifest written without them */
    int32_t nquantiles;
    float *quantiles;
} rt_ds_column;

typedef struct rt_ds_part {
    char file[128];
    int64_t rows, validation_rows;
} rt_ds_part;

typedef struct rt_dataset {
    char dir[1024];
    int ncols;
    rt_ds_column *cols;
    char label[RT_SHARD_NAME_LEN], validation[RT_SHARD_NAME_LEN], id[RT_SHARD_NAME_LEN],
        date[RT_SHARD_NAME_LEN];
    char label_transform[16]; /* rt_label_transform_parse's: "log,standardize", ... */
    double max_label;         /* before the transform (regression; 0 when not given) */
    int task;                 /* rt_task (rt_model_names.h) */
    char weight[RT_SHARD_NAME_LEN]; /* the sample-weight column, or "" */
    double label_mean, label_std;   /* label_transform standardize: the training rows' */
    double label_lo, label_hi;      /* regression: the training rows' labels' range, in the
                                       target's unit (exp of a log label); lo > hi: unknown */
    int nparts, ntest;
    rt_ds_part *parts, *test;
    int64_t train_rows, validation_rows, test_rows;
    char *source_json;   /* where it came from (a JSON object), or NULL */
    rt_name_index index; /* cols by name (rt_dataset_column); zeroed: none */
} rt_dataset;

/* A label_transform: "none", "log" (the label column holds log(target):
 * predictions are exp of the model's), "standardize" (the trainer fits
 * (label - mean) / std over the training rows and writes predictions back
 * in the label's unit) or both, "log,standardize" (the log first).  The
 * flags (either may be NULL), or RT_ERR_INVALID saying what it takes. */
rt_status rt_label_transform_parse(const char *s, bool *log, bool *standardize, char *err);

/* Read dir/manifest.json; errors name the file and what is wrong. */
rt_status rt_dataset_open(const char *dir, rt_dataset **out, char *err);
/* Write ds->dir/manifest.json atomically. */
rt_status rt_dataset_write_manifest(const rt_dataset *ds, char *err);
void rt_dataset_free(rt_dataset *ds);
const rt_ds_column *rt_dataset_column(const rt_dataset *ds, const char *name);
/* Columns of a role, in manifest order; returns the count. */
int rt_dataset_columns(const rt_dataset *ds, rt_col_role role, const rt_ds_column **out, int max);
/* Read a partition (test: a test partition) and check it against the
 * manifest: every column the manifest expects, with its type, and the row
 * count. */
rt_status rt_dataset_read_part(const rt_dataset *ds, int part, bool test, rt_shard **out,
                               char *err);

#ifdef __cplusplus
}
#endif
#endif
