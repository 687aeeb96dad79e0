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
    char weight[64]; /* the sample-weight column, or "" */
} rt_columns;

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

/* ---- the task: loss, head, class weights, metrics, monitor (trainer_task.c) ---- */

enum {
    RT_METRIC_ACCURACY, RT_METRIC_BALANCED_ACCURACY, RT_METRIC_MACRO_F1, RT_METRIC_LOG_LOSS,
    RT_METRIC_AUC, RT_METRIC_RMSE, RT_METRIC_MAE, RT_METRIC_R2, RT_METRIC_EXP_RMSPE,
    RT_METRIC_COUNT
};
extern const char *const rt_metric_names[RT_METRIC_COUNT];
bool rt_metric_higher_better(int metric);

typedef struct rt_task_info {
    int task;                  /* rt_task */
    int nclasses;              /* classification: K */
    char **classes;            /* their names (the dataset's, lent) */
    rt_loss loss;
    rt_head head;
    int n_out;
    bool class_weighted, weighted;
    float class_weight[RT_MODEL_MAX_CLASSES];
    double label_mean, label_std; /* the model's label space -> the label's (standardize) */
    int nmetrics, metric[RT_METRIC_COUNT];
    char monitor[64];
    int monitor_metric;        /* -1: loss or val_loss */
    bool monitor_max;          /* higher is better */
} rt_task_info;

/* The job's task from [train] (loss, class_weights, metrics, monitor) and
 * [model] head on the dataset: errors name the key (FILE:LINE when o is
 * given), what does not fit and what would (a loss for another task, class
 * weights of the wrong count with the classes' names, a monitor the job
 * does not compute). */
rt_status rt_job_task(const rt_job_cfg *cfg, const rt_cfg_origin *o, const rt_dataset *ds,
                      const rt_columns *cols, rt_task_info *t, char *err);
/* A classification row's class probabilities p (nclasses) from its outputs
 * z, and its predicted class (binary: p[1] >= threshold). */
void rt_task_proba(const rt_task_info *t, const float *z, double *p);
int rt_task_predict_class(const rt_task_info *t, const double *p, double threshold);

/* Validation metrics: rows added on each rank, reduced over the ranks. */
typedef struct rt_metrics {
    const rt_task_info *t;
    double *sums;      /* confusion matrix and sums, or the regression's sums */
    int nsums;
    bool auc;          /* scores kept for AUC */
    float *scores;     /* per row: label, then K probabilities */
    int64_t nscores, cap;
} rt_metrics;
rt_status rt_metrics_init(rt_metrics *m, const rt_task_info *t, char *err);
void rt_metrics_free(rt_metrics *m);
void rt_metrics_reset(rt_metrics *m);
/* n rows of the model's outputs (n_out each) and their labels. */
rt_status rt_metrics_add(rt_metrics *m, const float *pred, const float *label, int64_t n,
                         char *err);
/* Every metric of t (out[i] for t->metric[i]; NaN without rows), the same
 * on every rank: sums allreduced, AUC's scores allgathered (a collective
 * when comm is not NULL and size > 1). */
rt_status rt_metrics_reduce(rt_metrics *m, rt_comm *comm, int size, double *out, char *err);

/* Evaluate rows: the loss into the model's accumulators (rt_dp_forward_eval
 * with their labels and weights) and, with metrics, every metric's sums. */
rt_status rt_eval_rows(rt_dp *d, const rt_rows *r, rt_metrics *metrics, char *err);

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

/* ---- threads (trainer_cpus.c) ---------------------------------------------------- */

/* A rank's default CPU threads ([model] threads = 0): the CPUs it may run
 * on (affinity mask, cgroup v2 cpu.max) divided among local_size ranks of
 * its job on the host — or machine_ranks, when more, the job's ranks on
 * every host (container, namespace) of this machine (RT_MACHINE_RANKS) —
 * at least 1; why says so (and when the machine is oversubscribed). */
int rt_default_threads(int local_size, int machine_ranks, char *why, size_t len);
/* The cgroup v2 cpu.max quota, in CPUs, of the process whose
 * /proc/PID/cgroup is self_cgroup, under the cgroup file system mounted at
 * cgroup_root: the smallest of its cgroup's and every parent's (0: none). */
double rt_cgroup_cpus(const char *cgroup_root, const char *self_cgroup);

/* ---- the learning rate and the monitor (trainer_sched.c) ---------------------- */

/* The learning rate of step k (0-based) of epoch e (1-based) on size ranks
 * with steps steps an epoch: [train] learning_rate (times size with
 * scale_lr), the lr_schedule (PyTorch's CosineAnnealingLR and OneCycleLR
 * stepped every batch, StepLR and ExponentialLR every epoch, plateau: times
 * factor), then warmup_epochs from lr / size. */
double rt_lr_at(const rt_job_cfg *c, int size, int64_t steps, int64_t e, int64_t k,
                double factor);

/* The monitored metric ([train] monitor) over the epochs: the best epoch
 * (Keras' EarlyStopping: better by more than min_delta), the plateau's
 * rate factor (ReduceLROnPlateau with threshold_mode 'abs') and the
 * decision to stop (early_stopping_patience epochs without a best). */
typedef struct rt_monitor {
    char name[64];
    bool max;               /* higher is better */
    double best;            /* +-INFINITY: none yet */
    int64_t best_epoch, since_best;
    double plateau_best, lr_factor;
    int64_t plateau_wait;
    bool stop;
    char why[200];          /* why it stopped, for the history and the log */
} rt_monitor;
void rt_monitor_init(rt_monitor *m, const char *name, bool max);
/* Epoch e's value (NaN: not better): whether it is the best so far. */
bool rt_monitor_update(rt_monitor *m, const rt_job_cfg *c, int64_t epoch, double v);
/* Rank 0's stop and rate factor on every rank (a broadcast when size > 1),
 * so that all ranks stop after the same epoch whatever they saw. */
rt_status rt_monitor_agree(rt_monitor *m, rt_comm *comm, int size, char *err);

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

/* One rank of a training job as ringtrain-worker and `ringtrain worker` run
 * it (worker_run.c): joins the ring of its agent's rendezvous or, under
 * srun, of the Slurm step (with the job file's ring settings), else trains
 * alone; trains; rank 0 says how it ended, a failing rank why (with its
 * host).  The exit status: 0, or 1. */
int rt_worker_run(const rt_job_cfg *cfg);

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
rt_status rt_predict_rows(rt_dp *d, const rt_rows *test, const rt_pred_format *f,
                          const char *path, char *err);
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
rt_status rt_predict_input(const rt_predict_input_opts *o, rt_predict_input_report *rep,
                           char *err);

/* `ringtrain predict`: a checkpoint and a dataset in, the CSV out. */
rt_status rt_predict_checkpoint(const char *ckpt_path, const char *dataset_dir, const char *path,
                                int threads, int64_t batch, bool proba, int64_t *rows, char *err);

#endif
