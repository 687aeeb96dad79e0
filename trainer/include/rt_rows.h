/* rt_rows.h — a training job's rows (trainer/): the job's columns
 * resolved against the dataset, a rank's rows in memory (trainer_data.c),
 * or streamed a window of row groups at a time ([data] stream_rows;
 * trainer_stream.c).  The loop is trainer.h's, prediction rt_predict.h's. */
#ifndef RT_ROWS_H
#define RT_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_dataset.h"
#include "rt_model.h"
#include "rt_schemas.h"
#include "rt_shard.h"

/* ---- rows in memory (trainer_data.c) ---------------------------------------- */

typedef struct rt_columns {
    int ncat, ncont;
    char (*cat)[64];  /* ncat names (malloc'ed: rt_columns_free) */
    int32_t *vocab;   /* their vocabularies' sizes */
    char (*cont)[64]; /* ncont names */
    char label[64], validation[64], id[64];
    char weight[64]; /* the sample-weight column, or "" */
} rt_columns;
/* Room for ncat and ncont names (zeroed counts); false when out of memory. */
bool rt_columns_alloc(rt_columns *c, int ncat, int ncont);
void rt_columns_free(rt_columns *c);

/* Row-major rows: cat (n x ncat), cont (n x ncont), label (standardised
 * when the dataset's label_transform says so), weight (NULL without a
 * weight column), id (test rows). */
typedef struct rt_rows {
    int ncat, ncont;
    int64_t n, cap;
    int32_t *cat;
    float *cont;
    float *label;
    float *weight;
    int32_t *id;
    double label_mean, label_std; /* label = (raw - mean) / std (0 and 1: as it is) */
} rt_rows;

/* The job's columns (or the manifest's), checked against the manifest
 * (rt_columns_free releases them, also after an error). */
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
rt_status rt_rows_load_test(const rt_dataset *ds, const rt_columns *cols, rt_rows *test, char *err);
void rt_rows_free(rt_rows *r);
/* Copy rows idx[0..n) into contiguous batch buffers (weight: NULL, or
 * where their weights go). */
void rt_rows_gather(const rt_rows *r, const int64_t *idx, int64_t n, int32_t *cat, float *cont,
                    float *label, float *weight);
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
typedef struct rt_metrics rt_metrics; /* trainer.h: the task's sums */
rt_status rt_stream_open(const rt_dataset *ds, const rt_columns *c, int rank, int size,
                         int64_t window_rows, uint64_t seed, rt_stream **out, rt_rows *val,
                         int64_t *train_rows, int64_t *val_rows, char *err);
/* Forward passes over the streamed validation rows (the metrics add up in
 * the model, as one rt_dp_forward_eval over all of them would, and in
 * metrics when not NULL). */
rt_status rt_stream_validate(rt_stream *s, rt_dp *d, rt_metrics *metrics, char *err);
/* Start an epoch; then batches of B rows (past the last row: the epoch's
 * first again, as rows in memory wrap around). */
rt_status rt_stream_epoch(rt_stream *s, int64_t epoch, char *err);
rt_status rt_stream_batch(rt_stream *s, int64_t B, int32_t *cat, float *cont, float *label,
                          float *weight, char *err);
/* Whether the next window is read on a thread while the current one
 * trains (the default; memory: two windows); the batches are the same
 * either way. */
void rt_stream_set_prefetch(rt_stream *s, bool on);
/* The most rows a window held (memory: that times a row's bytes). */
int64_t rt_stream_peak_rows(const rt_stream *s);
void rt_stream_close(rt_stream *s);

#endif
