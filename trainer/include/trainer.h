/* trainer.h — the training job (the Estimator): what every rank of a job
 * of type `train` runs, and prediction from a checkpoint.
 *
 * Data: rank r of N reads the dataset's training partitions p with
 * p mod N = r (so any N up to the partition count works, also after an
 * elastic restart), keeps the validation rows apart, and each epoch walks
 * its training rows in an order shuffled from (seed, epoch, rank) — held in
 * memory, or with [data] stream_rows read a window of row groups at a time
 * (trainer_stream.c).  Every
 * rank runs the same number of steps: steps_per_epoch, or by default
 * ceil(largest rank's rows / batch_size); a rank with fewer rows (and the
 * last batch) wraps around its shuffled rows, so every row is seen at
 * least once an epoch and none is dropped, and every batch is full (equal
 * batches keep the averaged gradient exact).
 *
 * Each epoch: train loss (MAE + L2, as Keras reports it), validation loss
 * and exp-RMSPE summed over the ranks; rank 0 appends them to
 * STORE/history.jsonl, reports them to the coordinator, and writes
 * STORE/best.ckpt when the validation loss improved and STORE/last.ckpt
 * (both atomically).  A job that starts again (a restart after a failure,
 * or the same store submitted again) resumes from last.ckpt: the next
 * epoch, the optimizer state, the best loss so far, the history cut back
 * to the checkpoint's epochs.  At the end rank 0 writes the predictions of
 * the best model for the test rows. */
#ifndef RT_TRAINER_H
#define RT_TRAINER_H

#include <stdio.h>

#include "rt_comm.h"
#include "rt_dataset.h"
#include "rt_dp.h"
#include "rt_schemas.h"

/* ---- rows in memory (trainer_data.c) ---------------------------------------- */

typedef struct rt_columns {
    int ncat, ncont;
    char cat[RT_MODEL_MAX_CAT][64];
    int32_t vocab[RT_MODEL_MAX_CAT];
    char cont[256][64];
    char label[64], validation[64], id[64];
} rt_columns;

/* Row-major rows: cat (n x ncat), cont (n x ncont), label, id (test rows). */
typedef struct rt_rows {
    int ncat, ncont;
    int64_t n, cap;
    int32_t *cat;
    float *cont;
    float *label;
    int32_t *id;
} rt_rows;

/* The job's columns (or the manifest's), checked against the manifest. */
rt_status rt_columns_resolve(const rt_dataset *ds, const rt_job_cfg *cfg, rt_columns *cols,
                             char *err);
/* This rank's training and validation rows (partitions p = rank mod size). */
rt_status rt_rows_load(const rt_dataset *ds, const rt_columns *cols, int rank, int size,
                       rt_rows *train, rt_rows *val, char *err);
/* Test rows [lo, lo + len) in the order of the test partitions, read a row
 * group at a time (memory: those rows and one group); ids_only: only their
 * ids (r->id). */
rt_status rt_rows_load_test_range(const rt_dataset *ds, const rt_columns *cols, int64_t lo,
                                  int64_t len, bool ids_only, rt_rows *r, char *err);
/* Every test row, with its id. */
rt_status rt_rows_load_test(const rt_dataset *ds, const rt_columns *cols, rt_rows *test,
                            char *err);
void rt_rows_free(rt_rows *r);
/* Copy rows idx[0..n) into contiguous batch buffers. */
void rt_rows_gather(const rt_rows *r, const int64_t *idx, int64_t n, int32_t *cat, float *cont,
                    float *label);
/* The epoch's order of n rows: a permutation from (seed, epoch, rank). */
void rt_shuffle(int64_t *perm, int64_t n, uint64_t seed, int64_t epoch, int rank);
/* Every categorical index of row group g of file (shard s, which has the
 * model's categorical columns) lies inside its column's vocabulary. */
rt_status rt_rows_check_vocab(const rt_shard *s, const rt_columns *c, const char *file, int g,
                              char *err);
/* Append the rows of shard s whose validation flag (vflag, NULL: all rows)
 * equals want_val to r. */
rt_status rt_rows_append(rt_rows *r, const rt_shard *s, const rt_columns *c, const uint8_t *vflag,
                         int want_val, const char *what, char *err);

/* ---- the model (trainer_model.c) ------------------------------------------------- */

/* The model of a job on a dataset: the [model] keys (checked by the
 * schema) with the columns' vocabularies and the label's range; refuses an
 * embedding width for a column the model does not have, naming the
 * closest, and standardisation without the manifest's statistics.  Errors
 * name the job file's line when o (the file's origin) is given.  The same
 * spec in the CLI (before anything is submitted) and the workers. */
rt_status rt_job_model_spec(const rt_job_cfg *cfg, const rt_cfg_origin *o, const rt_dataset *ds,
                            const rt_columns *cols, rt_model_spec *spec, char *err);
/* continuous_norm = standardize: the manifest's statistics of the training
 * rows into a new model (a resumed one has them from its checkpoint). */
rt_status rt_job_model_standardize(rt_model *m, const rt_dataset *ds, const rt_columns *cols,
                                   char *err);

/* ---- rows streamed a window at a time ([data] stream_rows; trainer_stream.c) ---- */

/* This rank's training rows read window_rows at a time: the row groups of
 * its partitions, in an order shuffled from (seed, epoch, rank) when they
 * do not fit one window, collected until the window holds window_rows
 * rows (the next window read meanwhile on a thread), which are shuffled as
 * rt_shuffle shuffles; when one window holds them all the order is
 * rt_rows_load's and the batches are exactly those of the rows in memory,
 * and its validation rows are loaded into val (the
 * same evaluation too); else val stays empty and rt_stream_validate
 * evaluates them a row group at a time. */
typedef struct rt_stream rt_stream;
rt_status rt_stream_open(const rt_dataset *ds, const rt_columns *c, int rank, int size,
                         int64_t window_rows, uint64_t seed, rt_stream **out, rt_rows *val,
                         int64_t *train_rows, int64_t *val_rows, char *err);
/* Forward passes over the streamed validation rows (the metrics add up in
 * the model, as one rt_dp_forward_eval over all of them would). */
rt_status rt_stream_validate(rt_stream *s, rt_dp *d, char *err);
/* Start an epoch; then batches of B rows (past the last row: the epoch's
 * first again, as rows in memory wrap around). */
rt_status rt_stream_epoch(rt_stream *s, int64_t epoch, char *err);
rt_status rt_stream_batch(rt_stream *s, int64_t B, int32_t *cat, float *cont, float *label,
                          char *err);
/* Whether the next window is read on a thread while the current one
 * trains (the default; memory: two windows); the batches are the same
 * either way. */
void rt_stream_set_prefetch(rt_stream *s, bool on);
/* The most rows a window held (memory: that times a row's bytes). */
int64_t rt_stream_peak_rows(const rt_stream *s);
void rt_stream_close(rt_stream *s);

/* ---- training (trainer.c) --------------------------------------------------- */

typedef struct rt_trainer_env {
    rt_comm *comm; /* NULL: one process */
    int rank, size, local_rank, local_size;
    int64_t attempt;
    FILE *log;     /* human-readable epoch lines (rank 0), or NULL */
    const char *transport;         /* the job's, as resolved: "tcp", "rdma", "shm" or "nccl"; NULL: tcp */
    int64_t collective_timeout_us; /* 0: 60 s */
} rt_trainer_env;

/* What a run did; the best-epoch fields are rank 0's (it keeps the history). */
typedef struct rt_train_result {
    int64_t first_epoch, epochs;      /* this run trained epochs first_epoch..epochs */
    double best_val_loss, best_val_exp_rmspe;
    int64_t best_epoch;
    double samples_per_s;             /* all ranks, over this run's epochs */
    int64_t predictions;              /* rows written (rank 0) */
} rt_train_result;

rt_status rt_train(const rt_job_cfg *cfg, const rt_trainer_env *env, rt_train_result *res,
                   char *err);

/* ---- prediction (predict.c) ----------------------------------------------------- */

/* Predictions of the model in d for the test rows, as CSV "Id,<label>"
 * sorted by id (exp() applied when the label was log-transformed), written
 * atomically to path. */
rt_status rt_predict_rows(rt_dp *d, const rt_rows *test, const char *label,
                          const char *label_transform, const char *path, char *err);
/* The same CSV from predictions already made (pred[i] for test row i). */
rt_status rt_predict_write(const rt_rows *test, const float *pred, const char *label,
                           const char *label_transform, const char *path, char *err);
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
} rt_predict_input_opts;
typedef struct rt_predict_input_report {
    int64_t rows, defaulted;
    int ncat;
    char cat[RT_MODEL_MAX_CAT][64];
    int64_t unknown[RT_MODEL_MAX_CAT]; /* values the model never saw, per column */
} rt_predict_input_report;
rt_status rt_predict_input(const rt_predict_input_opts *o, rt_predict_input_report *rep,
                           char *err);

/* `ringtrain predict`: a checkpoint and a dataset in, the CSV out. */
rt_status rt_predict_checkpoint(const char *ckpt_path, const char *dataset_dir, const char *path,
                                int threads, int64_t batch, int64_t *rows, char *err);

#endif
