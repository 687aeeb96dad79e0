/* rt_ensemble.h — a weighted ensemble of trained models (`ringtrain
 * ensemble`, docs/tasks.md): Caruana et al.'s ensemble selection ("Ensemble
 * selection from libraries of models", ICML 2004; AutoGluon's
 * WeightedEnsemble, auto-sklearn's EnsembleSelection) fitted on the
 * validation predictions each member's store holds ([output]
 * predict_validation = true), then applied to the members' test predictions
 * (submission.csv).
 *
 * The selection starts from an empty ensemble and, each round, adds (with
 * replacement) the member whose addition gives the best validation score of
 * the averaged predictions; the ensemble kept is the best-scoring prefix of
 * the rounds (the earliest at a tie), each member weighted by how often it
 * was picked in it.  Classification averages the class probabilities (the
 * class is the most probable); regression averages the values in the
 * label's unit. */
#ifndef RT_ENSEMBLE_H
#define RT_ENSEMBLE_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_status.h"

#define RT_ENS_MAX_MEMBERS 256
#define RT_ENS_MAX_ROUNDS 10000

/* The figure the selection minimises (higher-is-better ones negated). */
typedef enum rt_ens_metric {
    RT_ENS_AUTO = 0, /* log_loss for classification, rmse for regression */
    RT_ENS_LOG_LOSS,
    RT_ENS_ACCURACY,
    RT_ENS_AUC, /* binary: the second class's probability, ties counted half */
    RT_ENS_RMSE,
    RT_ENS_MAE,
    RT_ENS_RMSE_LOG, /* RMSE of log prediction against log label (positive values) */
} rt_ens_metric;

/* "log_loss", ... ; false for an unknown name */
bool rt_ens_metric_parse(const char *name, rt_ens_metric *m);
const char *rt_ens_metric_name(rt_ens_metric m);
/* "log_loss, accuracy, ..., rmse_log": every name but auto */
const char *rt_ens_metric_list(void);
bool rt_ens_metric_higher_better(rt_ens_metric m);

/* The selection's input: every member's predictions of the same rows. */
typedef struct rt_ens_problem {
    int nmembers;
    int64_t nrows;
    int ncols;                 /* classes (a probability each), or 1 (a regression's value) */
    const double *const *pred; /* member m: nrows x ncols */
    const int32_t *label;      /* classification: each row's class (0..ncols-1) */
    const double *target;      /* regression: each row's value */
    rt_ens_metric metric;      /* not AUTO */
} rt_ens_problem;

typedef struct rt_ens_fit {
    int rounds_kept;                   /* the best prefix's length */
    int counts[RT_ENS_MAX_MEMBERS];    /* picks of each member in it */
    double weight[RT_ENS_MAX_MEMBERS]; /* counts / rounds_kept */
    double member[RT_ENS_MAX_MEMBERS]; /* each member's own validation figure */
    int best;                          /* the best member alone (round 1's pick) */
    double ensemble;                   /* the ensemble's (the metric's own sign) */
} rt_ens_fit;

/* The metric of one prediction matrix (nrows x ncols) on p's rows, in the
 * metric's own sign. */
double rt_ens_score(const rt_ens_problem *p, const double *pred);
/* Pure: the selection of `rounds` rounds (1..RT_ENS_MAX_ROUNDS). */
rt_status rt_ens_select(const rt_ens_problem *p, int rounds, rt_ens_fit *fit, char *err);

/* The whole command: the members' stores (folders or s3:// prefixes) read,
 * checked against each other (the same task, classes, validation rows and
 * labels — bag: disjoint validation rows — test rows), the selection
 * fitted (bag: equal weights), and OUT/submission.csv,
 * OUT/validation_predictions.csv and OUT/ensemble.json written (OUT a
 * local folder, made when missing). */
typedef struct rt_ens_opts {
    const char *const *stores;
    int nstores;
    const char *out;
    int rounds;           /* 0: 25 */
    rt_ens_metric metric; /* AUTO: by the task */
    bool skip_incomplete; /* a store without either file is left out (a sweep's trials
                             that ASHA stopped), not an error */
    bool bag;             /* the members are the models of cross-validation folds (their validation
                 rows disjoint; bagging, AutoGluon's num_bag_folds): weighed alike, the
                 validation predictions out-of-fold (each row from the member that held
                 it out), the bag scored on them; no selection */
} rt_ens_opts;

typedef struct rt_ens_report {
    int nmembers, member[RT_ENS_MAX_MEMBERS];  /* the stores ensembled (indexes of opts') */
    int nskipped, skipped[RT_ENS_MAX_MEMBERS]; /* and those left out (skip_incomplete) */
    rt_ens_metric metric;
    int nclasses; /* 0: a regression */
    int64_t val_rows, test_rows;
    bool no_test;   /* the members' data set has no test rows: no submission.csv */
    rt_ens_fit fit; /* its counts and figures by member (not by store) */
    int rounds;
} rt_ens_report;

rt_status rt_ensemble_run(const rt_ens_opts *o, rt_ens_report *rep, char *err);

/* n members' predictions of the same rows (files as `ringtrain predict`
 * writes them, with class probabilities for a classifier; the first column
 * by any name, its values any text, --keep's columns after) weighted (the
 * weights sum to 1) into out, in the first's layout (proba false: the
 * class alone); the members checked against each other as above, the rows'
 * first fields equal. */
rt_status rt_ensemble_combine(const char *const *files, const double *weights, int n, bool proba,
                              const char *out, char *err);

/* One predictions file's text read as rt_ensemble_run reads a member's
 * (truth: validation_predictions.csv's layout, else submission.csv's;
 * loose: as rt_ensemble_combine reads `ringtrain predict --input`'s, any
 * first column, kept columns after): its rows, or the error naming
 * name:line (the fuzzer's entry). */
rt_status rt_ens_check_file(const void *data, size_t len, const char *name, bool truth, bool loose,
                            int64_t *rows, char *err);

#endif
