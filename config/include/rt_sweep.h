/* rt_sweep.h — a sweep's search space and its trials (docs/sweeps.md).
 *
 * A sweep is a training job file with `[job] type = sweep` and a [sweep]
 * section: how many trials, how many at once, the scheduler (asha, random,
 * grid), and one `space.SECTION.KEY = DISTRIBUTION` line per searched key:
 *
 *   uniform(lo, hi)       a number drawn evenly from [lo, hi]
 *   loguniform(lo, hi)    evenly in log space, 0 < lo < hi (an integer key:
 *                         rounded)
 *   int(lo, hi)           an integer from lo to hi, both included
 *   choice(a | b | c)     one of the values, as the file would write them
 *                         ("choice(512,256 | 1024,512,256)": lists)
 *
 * A trial's job is the sweep's file with its values set exactly as --set
 * sets them, so every value goes through the job schema; the sweep is
 * refused before anything is queued when a key is unknown, a bound or a
 * choice is out of the key's range, or a key belongs to another model
 * family — each message naming file:line and the key.  Sampling is a
 * function of (seed, trial, key): the same seed gives the same trials, and
 * adding a key leaves the others' values as they were; with `baseline`,
 * trial 1 has the file's own values.  Grid: every combination of choice()
 * keys, in order (the last key varies fastest). */
#ifndef RT_SWEEP_H
#define RT_SWEEP_H

#include <stdint.h>

#include "rt_config.h"
#include "rt_schemas.h"

enum { RT_SP_UNIFORM, RT_SP_LOGUNIFORM, RT_SP_INT, RT_SP_CHOICE };
enum { RT_SWEEP_ASHA = 0, RT_SWEEP_RANDOM = 1, RT_SWEEP_GRID = 2 };
enum { RT_SEARCH_RANDOM = 0, RT_SEARCH_TPE = 1 }; /* [sweep] search */

#define RT_SWEEP_MAX_DIMS 64
#define RT_SWEEP_MAX_CHOICES 64
#define RT_SWEEP_VALUE_MAX 256 /* a sampled value's text */

typedef struct rt_sweep_dim {
    char key[200]; /* section.key ("train.learning_rate") */
    int kind;      /* RT_SP_* */
    double lo, hi;
    bool integer; /* the key holds integers: values rounded */
    int nchoices;
    char **choices; /* owned */
    int line;       /* in the sweep's file (RT_CFG_LINE_SET: --set; RT_SWEEP_LINE_DEFAULT) */
    char when[32];  /* searched only in trials of this architecture ("": in every trial) */
} rt_sweep_dim;

typedef struct rt_sweep_space {
    int n;
    rt_sweep_dim *d; /* owned */
    int arch;        /* the dimension of model.architecture, or -1 */
} rt_sweep_space;

/* The space a sweep of asha or random searches when its file gives no
 * space.* line (rt_sweep_default.c; docs/sweeps.md "The default space"):
 * the searched keys of c's family — and of its numeric_embedding — as
 * "section.key" and a distribution's text, into out (at most max);
 * how many.  Where the file's one space.* line is
 * model.architecture = choice(...), each family's default space is searched
 * by the trials of that family (rt_sweep_dim.when). */
typedef struct rt_sweep_default {
    const char *key, *dist;
} rt_sweep_default;
#define RT_SWEEP_LINE_DEFAULT (-2) /* rt_sweep_dim.line of a default space's key */
int rt_sweep_default_space(const rt_job_cfg *c, rt_sweep_default *out, int max);
/* Whether c's trials search a default space: asha or random with no
 * space.* line, or with model.architecture's alone. */
bool rt_sweep_uses_default(const rt_job_cfg *c);

/* Whether dimension i is searched in a trial of these values: always, or
 * when the trial's architecture is its `when`. */
bool rt_sweep_dim_active(const rt_sweep_space *sp, int i, char (*vals)[RT_SWEEP_VALUE_MAX]);
/* The values of dimensions a trial does not search made empty (a trial of
 * tabm keeps no mlp key); an empty value leaves the file's. */
void rt_sweep_blank_inactive(const rt_sweep_space *sp, char (*vals)[RT_SWEEP_VALUE_MAX]);
/* Dimension d's distribution as a file writes it ("loguniform(1e-05, 0.01)") */
void rt_sweep_dim_text(const rt_sweep_dim *d, char *out, size_t len);

/* The space of c's [sweep] space.* keys (none given, asha or random: the
 * default space), each distribution parsed and its key checked against the
 * job schema (exists, not [job]/[sweep]/output.store, its kind fits the
 * key's type).  Messages name o's file:line (or the default space) and the
 * key. */
rt_status rt_sweep_space_parse(const rt_job_cfg *c, const rt_cfg_origin *o, rt_sweep_space *sp,
                               rt_cfg_errors *errs);
void rt_sweep_space_free(rt_sweep_space *sp);

/* How many trials the sweep runs: [sweep] trials, or the grid's size. */
int64_t rt_sweep_trials(const rt_job_cfg *c, const rt_sweep_space *sp);

/* Trial t's (0-based) value of every dimension, as text, into vals: those
 * its architecture does not search empty. */
void rt_sweep_sample(const rt_job_cfg *c, const rt_sweep_space *sp, int64_t t,
                     char (*vals)[RT_SWEEP_VALUE_MAX]);
/* The same with every dimension's value, whatever the architecture drawn */
void rt_sweep_sample_all(const rt_job_cfg *c, const rt_sweep_space *sp, int64_t t,
                         char (*vals)[RT_SWEEP_VALUE_MAX]);

/* A value of dimension d as the file would write it: integers whole
 * (rounded into the range), others with 4 significant digits. */
void rt_sweep_number_text(const rt_sweep_dim *d, double x, char out[RT_SWEEP_VALUE_MAX]);

/* [sweep] search = tpe (rt_sweep_tpe.c): a trial that has ended, as the
 * sampler sees it. */
typedef struct rt_sweep_obs {
    char (*vals)[RT_SWEEP_VALUE_MAX]; /* its values, one per dimension */
    double value;                     /* its best monitored value (finite) */
    bool completed;                   /* false: stopped early (ASHA, the time budget) */
    int64_t epochs;                   /* how far it got */
} rt_sweep_obs;
#define RT_TPE_STARTUP 10 /* trials drawn at random until this many have ended */

/* Trial t's values by TPE from the nobs trials that have ended (any
 * order): random search's values until RT_TPE_STARTUP have (and trial 0
 * with baseline); then each key's value the best of 24 candidates from the
 * good trials' Parzen estimator by the ratio of the good's density to the
 * others'.  Deterministic for the same (seed, t, obs). */
void rt_sweep_sample_tpe(const rt_job_cfg *c, const rt_sweep_space *sp, int64_t t,
                         const rt_sweep_obs *obs, int nobs, char (*vals)[RT_SWEEP_VALUE_MAX]);

/* Trial t's job file: the sweep's configuration as a training job, the
 * values set as --set sets them, its store STORE/trial-T (1-based), printed
 * whole.  NULL and the reasons in errs when a value does not pass the job
 * schema.  The caller frees the text. */
char *rt_sweep_trial_text(const rt_job_cfg *c, const rt_sweep_space *sp,
                          char (*vals)[RT_SWEEP_VALUE_MAX], int64_t t, rt_cfg_errors *errs);

/* The sweep's checks (the job schema's validate calls it for type = sweep):
 * its keys, its space, and every bound and choice through the schema. */
rt_status rt_sweep_validate(const rt_job_cfg *c, const rt_cfg_origin *o, rt_cfg_errors *errs);

/* ASHA's first rung: [sweep] grace_epochs, or where it is 0 [train] epochs
 * / reduction^3 rounded, at least 1. */
int64_t rt_sweep_grace(const rt_job_cfg *c);
/* ASHA's rungs: the epochs grace * reduction^k below [train] epochs, in
 * order, into out (at most max); how many. */
int rt_sweep_rungs(const rt_job_cfg *c, int64_t *out, int max);

/* Whether the monitored value is better higher ([train] monitor and
 * monitor_mode, as the trainer decides it). */
bool rt_job_monitor_max(const rt_job_cfg *c);

#endif
