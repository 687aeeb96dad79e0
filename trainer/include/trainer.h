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

#include "rt_rows.h"

/* ---- the model (trainer_model.c) ------------------------------------------------- */

/* The model of a job on a dataset: the [model] keys (checked by the
 * schema) with the columns' vocabularies and the label's range; refuses an
 * embedding width for a column the model does not have, naming the
 * closest, and standardisation without the manifest's statistics.  Errors
 * name the job file's line when o (the file's origin) is given.  The same
 * spec in the CLI (before anything is submitted) and the workers; its
 * cat_names are cols' (lent). */
rt_status rt_job_model_spec(const rt_job_cfg *cfg, const rt_cfg_origin *o, const rt_dataset *ds,
                            const rt_columns *cols, rt_model_spec *spec, char *err);
/* continuous_norm = standardize or quantile: the manifest's statistics or
 * quantiles of the training rows into a new model (a resumed one has them
 * from its checkpoint). */
rt_status rt_job_model_standardize(rt_model *m, const rt_dataset *ds, const rt_columns *cols,
                                   char *err);

/* ---- the task: loss, head, class weights, metrics, monitor (trainer_task.c) ---- */

/* the metrics (rt_metric) are listed once in rt_model_names.h */
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
    double at_k; /* the ranking metrics' k: rows (>= 1), or a fraction of them */
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

/* ---- a sweep's last step (sweep_finish.c) ------------------------------------------ */

/* The sweep's results (sweep.json beside job_ini, from the coordinator)
 * into its store: trials.jsonl and best/.  0, or 1 with the reason on
 * stderr. */
int rt_sweep_finish(const rt_job_cfg *cfg, const char *job_ini);

/* ---- threads (trainer_cpus.c) ---------------------------------------------------- */

/* A rank's default CPU threads ([model] threads = 0): the CPUs it may run
 * on (affinity mask, cgroup v2 cpu.max) divided among local_size ranks of
 * its job on the host — or machine_ranks, when more, the job's ranks on
 * every host (container, namespace) of this machine (RT_MACHINE_RANKS), or
 * node_slots, when more, the slots of its agent (RT_NODE_SLOTS: jobs side
 * by side, a sweep's trials, share the CPUs) — at least 1; why says so
 * (and when the machine is oversubscribed). */
int rt_default_threads(int local_size, int machine_ranks, int node_slots, char *why, size_t len);
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
    double best_val_loss;
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

#endif
