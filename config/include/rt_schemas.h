/* rt_schemas.h — the configuration files of ringtrain, each one table
 * (rt_config.h): coordinator.conf, agent.conf, and job files.  Every key's
 * default, bounds and help text live in the tables in rt_schemas.c; `--print-
 * config` of each program prints them. */
#ifndef RT_SCHEMAS_H
#define RT_SCHEMAS_H

#include "rt_config.h"
#include "rt_model_keys.h"
#include "rt_model_names.h"

/* [s3]: where objects are and how to reach them (docs/storage.md), in a job
 * file, cli.conf and agent.conf alike: RT_CFG_S3_KEYS(struct) gives a struct's `s3`
 * member (an rt_s3_keys) its four keys.  rt_s3_keys_setenv puts the ones
 * given into the environment as the AWS tools' variables (and
 * RINGTRAIN_S3_ADDRESSING), over what is there or (overwrite false) only
 * where nothing is. */
typedef struct rt_s3_keys {
    char *endpoint, *region, *ca_file;
    int addressing; /* 0 auto, 1 path, 2 virtual (rt_s3_addressing) */
} rt_s3_keys;
#define RT_CFG_S3_KEYS(st)                                                                        \
    RT_CFG_S("s3", "endpoint", NULL, st, s3.endpoint,                                             \
             "the S3 endpoint, scheme://host[:port] (AWS_ENDPOINT_URL; default: AWS's for the "   \
             "region)"),                                                                          \
        RT_CFG_S("s3", "region", NULL, st, s3.region,                                             \
                 "the region requests are signed for (AWS_REGION; default us-east-1)"),           \
        RT_CFG_E("s3", "addressing", "auto", "auto|path|virtual", st, s3.addressing,              \
                 "path: ENDPOINT/BUCKET/KEY (MinIO, Ceph); virtual: BUCKET.HOST/KEY; auto: "      \
                 "virtual on AWS, path on another endpoint"),                                     \
        RT_CFG_P("s3", "ca_file", NULL, st, s3.ca_file,                                           \
                 "PEM bundle to verify the endpoint's certificate with (AWS_CA_BUNDLE; default: " \
                 "the system's)")
void rt_s3_keys_setenv(const rt_s3_keys *k, bool overwrite);

/* ---- coordinator.conf ------------------------------------------------------ */
typedef struct rt_coord_cfg {
    char *listen;      /* agents' control channel (TLS) */
    char *http_listen; /* HTTP API, dashboard, /metrics (TLS) */
    char *cert, *key;  /* the coordinator's certificate and private key */
    char *token_file;  /* the agents' registration token */
    char *admin_token_file; /* the API's bootstrap admin token */
    bool require_enrollment; /* agents need their own token (role agent) */
    char *state_db;    /* SQLite database */
    char *state_key_file; /* seals the job environments stored in it (coord_seal.c) */
    int64_t heartbeat_interval_us, heartbeat_timeout_us;
    int64_t http_timeout_us;
    int64_t http_request_timeout_us; /* a whole request within this (absolute) */
    int64_t http_max_connections, http_max_per_address;
    int64_t prepare_timeout_us;
    int64_t reconcile_timeout_us;
    int64_t default_queue_timeout_us;
    int64_t default_max_restarts;
    int64_t max_queued_per_user; /* waiting jobs one user may have (Slurm's MaxSubmitJobs) */
    int64_t log_tail_lines;
    int64_t job_retention_us;   /* a finished job's record is deleted this long after (0: never) */
    int64_t agent_retention_us; /* an agent down this long is forgotten (0: never) */
    int log_level;
} rt_coord_cfg;
extern const rt_cfg_schema rt_coord_schema;

/* ---- agent.conf ------------------------------------------------------------ */
typedef struct rt_agent_cfg {
    char *coordinator; /* host:port of the control channel */
    char *server_name; /* name in the coordinator's certificate (default: its host) */
    char *ca, *token_file;
    char *name;        /* this agent's name on its host (default: the hostname) */
    char *host_id;     /* override of the computed host hash */
    char *data_address; /* address ranks listen on (default: this end of the control connection) */
    int64_t slots;     /* 0: one per GPU, or one if there is none */
    int64_t gpus;      /* -1: as the worker's probe finds them */
    bool hide_token;   /* ranks see /dev/null where the token file is */
    char *job_uids;    /* "FIRST-LAST": a uid per job (agent_ident.c); NULL: the agent's */
    bool allow_root_jobs;    /* an agent running as root may run jobs as root */
    uint64_t job_disk_limit; /* per job, bytes (0: none): its files on this node */
    uint64_t min_free_disk;  /* below this free in work_dir, the largest job is stopped */
    char *work_dir, *log_dir;
    char *worker;      /* the training worker program (default: beside the agent) */
    uint64_t log_max_bytes;
    int64_t log_keep;
    int64_t log_retention_us; /* a finished job's logs and work folder go this long after
                                 they were last written (0: kept for ever) */
    int64_t reconnect_max_us;
    int64_t kill_grace_us;
    rt_s3_keys s3; /* the node's S3 settings for its ranks; a job's own win */
    int log_level;
} rt_agent_cfg;
extern const rt_cfg_schema rt_agent_schema;

/* ---- job files: [job] for every job; [data], [model], [train] and [output]
 * for training jobs (the trainer's Estimator parameters) ----------------------- */
/* Each enum below numbers its key's choices in rt_schemas.c, in order
 * (test_config.test_enum_name checks every one) */
enum { RT_JOB_TRAIN = 0, RT_JOB_EXEC = 1, RT_JOB_SWEEP = 2 };
enum { RT_DEV_AUTO = 0, RT_DEV_CPU = 1, RT_DEV_CUDA = 2 };
enum { RT_PREC_FP32 = 0, RT_PREC_BF16 = 1 };
enum { RT_CKPT_BEST = 0, RT_CKPT_LAST = 1, RT_CKPT_NONE = 2 };
enum { RT_MON_AUTO = 0, RT_MON_MIN = 1, RT_MON_MAX = 2 };
enum { RT_RESUME_AUTO = 0, RT_RESUME_NEVER = 1 };
enum { RT_LR_CONSTANT = 0, RT_LR_COSINE = 1, RT_LR_STEP = 2, RT_LR_EXPONENTIAL = 3,
       RT_LR_ONE_CYCLE = 4, RT_LR_PLATEAU = 5 };
enum { RT_EMB_RULE_FIXED = 0, RT_EMB_RULE_FASTAI = 1 };

/* rt_model_keys.h's keys as rt_job_cfg fields */
#define RT_JOB_KEY_I(n, def, lo, hi, fam, help) int64_t n;
#define RT_JOB_KEY_F(n, def, lo, hi, fam, help) double n;
#define RT_JOB_KEY_B(n, def, fam, help) bool n;
#define RT_JOB_KEY_E(n, type, list, def, fam, help) int n;

typedef struct rt_job_cfg {
    /* [job] */
    char *name;
    int type;
    int64_t np, min_np, max_restarts, priority;
    int64_t queue_timeout_us, deadline_us;
    int transport;
    int64_t sockets;
    int64_t collective_timeout_us;
    bool encrypt;
    bool integrity; /* AES-GMAC on every data-plane frame */
    bool hierarchical; /* allreduce within hosts, then across (hosts of several ranks) */
    uint64_t memory_limit; /* per rank, bytes (0: none): the rank's cgroup memory.max */
    double cpu_limit;      /* per rank, CPUs (0: none): the rank's cgroup cpu.max */
    uint64_t disk_limit;   /* per node, bytes (0: the agent's job_disk_limit) */
    rt_strlist command; /* exec jobs: the program and its arguments */
    /* [data] */
    char *dataset;
    char *label, *validation, *weight;  /* NULL: the manifest's */
    rt_strlist categorical, continuous; /* empty: the manifest's; "none": no columns */
    int64_t stream_rows;                /* 0: rows in memory; N: read N at a time */
    char *cache;                        /* S3: the objects' copies on this node (NULL: none) */
    /* [model]: the family and its keys (docs/models.md) */
    int architecture;              /* rt_arch (rt_model_names.h) */
    int64_t embedding_dim;
    rt_strlist embedding_dims;     /* "Column:width" */
    int embedding_rule;            /* RT_EMB_RULE_* */
    int continuous_norm;           /* 0 auto, else rt_cont_norm + 1 (rt_job_continuous_norm) */
    rt_strlist hidden;
    rt_strlist dropout;            /* one rate, or one per hidden (deep) layer */
    rt_strlist batch_norm;         /* one bool, or one per hidden layer */
    int activation;                /* rt_act - 1 */
    double head_scale_factor;
    /* the keys of rt_model_keys.h */
    RT_MODEL_KEYS(RT_JOB_KEY_I, RT_JOB_KEY_F, RT_JOB_KEY_B, RT_JOB_KEY_E)
    int head;                      /* 0 auto, else rt_head + 1 */
    int device;
    int64_t threads;
    bool tf32;
    int precision; /* RT_PREC_*: the GEMMs' inputs */
    bool sync_batch_norm;
    /* [train] */
    int64_t batch_size, epochs, steps_per_epoch, eval_batch_size, seed;
    int loss;                      /* 0 auto, else rt_loss + 1 */
    double huber_delta, label_smoothing;
    rt_strlist class_weights;      /* none, balanced, or one weight per class */
    rt_strlist metrics;            /* empty: the task's */
    int optimizer;                 /* rt_optim */
    double learning_rate, beta1, beta2, epsilon, lr_min, warmup_epochs;
    double weight_decay, momentum, clip_norm;
    bool nesterov;
    int lr_schedule;
    double lr_gamma, lr_pct_start, lr_div_factor, lr_final_div_factor;
    int64_t lr_step_epochs, lr_patience;
    bool scale_lr;
    uint64_t bucket_bytes;
    int allreduce_precision; /* RT_PREC_*: the gradients on the wire */
    int checkpoint, resume;
    char *monitor;    /* the metric that picks best.ckpt and stops early */
    int monitor_mode; /* RT_MON_* */
    int64_t early_stopping_patience; /* 0: never stop early */
    double min_delta;
    bool restore_best;
    int64_t progress_every_us;
    bool trace;          /* the timeline: STORE/trace/rank-R.json every epoch */
    int64_t trace_spans; /* spans kept per rank (the newest) */
    /* [output] */
    char *store, *predictions;
    bool predict, proba;
    double threshold;
    double at_k;                    /* [train] the ranking metrics' k: rows, or a fraction (< 1) */
    double prediction_range_factor; /* regression: flag predictions this far out (0: never) */
    bool predict_validation;        /* STORE/validation_predictions.csv too */
    bool clip_predictions;          /* and write them as the bound */
    /* [sweep] (type = sweep: rt_sweep.h, docs/sweeps.md) */
    int64_t sweep_trials, sweep_parallel;
    int sweep_scheduler; /* RT_SWEEP_ASHA, RANDOM, GRID */
    int sweep_search;    /* RT_SEARCH_RANDOM, TPE */
    int64_t grace_epochs, reduction, max_failed_trials, sweep_seed;
    bool sweep_baseline;    /* trial 1: the file's own values of the searched keys */
    bool sweep_ensemble;    /* the trials' predictions ensembled into STORE/ensemble */
    int64_t time_budget_us; /* the sweep's time: then its trials stop, results written (0: none) */
    rt_cfgmap space;        /* space.SECTION.KEY = DISTRIBUTION */
    /* [s3] */
    rt_s3_keys s3;
} rt_job_cfg;
extern const rt_cfg_schema rt_job_schema;
/* [train] epsilon, resolved: the job's, else its family's default (1e-8,
 * PyTorch's; 1e-3 for rossmann, the Keras model's). */
double rt_job_epsilon(const rt_job_cfg *j);
/* The job's ring settings (rt_run.h), "auto" not resolved yet. */
struct rt_run_settings;
void rt_job_run_settings(const rt_job_cfg *j, struct rt_run_settings *s);
/* [model] continuous_norm, resolved (an rt_cont_norm): the job's, else
 * batchnorm for rossmann, standardize for the other families. */
int rt_job_continuous_norm(const rt_job_cfg *j);
/* The [model] keys' cross checks (rt_schema_model.c): each family's keys
 * only with it, list lengths and values, heads dividing d_token. */
rt_status rt_job_model_validate(const rt_job_cfg *j, const rt_cfg_origin *o, rt_cfg_errors *errs);
/* The [model] lists parsed (after rt_job_model_validate passed): dropout
 * rates and batch-norm flags, n each (a single value repeated). */
void rt_job_model_rates(const rt_job_cfg *j, int n, float *dropout, bool *batch_norm);

/* Log levels as enum text, for the tables above. */
#define RT_LOG_LEVEL_CHOICES "error|warn|info|debug|trace"

#endif
