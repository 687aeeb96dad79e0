/* rt_schemas.c — the tables of ringtrain's configuration files (see
 * rt_schemas.h).  Durations bounded to sane ranges; paths relative to the
 * file that names them. */
#include "rt_schemas.h"
#include "rt_run.h"
#include "rt_sweep.h"

#include <stdlib.h>
#include <string.h>

#define NO_LO RT_CFG_NOLIMIT_LO
#define NO_HI RT_CFG_NOLIMIT_HI

/* rt_model_keys.h's keys as [model] schema entries */
#define SCHEMA_I(n, def, lo, hi, fam, help) \
    RT_CFG_I("model", #n, #def, lo, hi, rt_job_cfg, n, help),
#define SCHEMA_F(n, def, lo, hi, fam, help) \
    RT_CFG_F("model", #n, #def, lo, hi, rt_job_cfg, n, help),
#define SCHEMA_B(n, def, fam, help) RT_CFG_B("model", #n, #def, rt_job_cfg, n, help),
#define SCHEMA_E(n, type, list, def, fam, help) \
    RT_CFG_E("model", #n, def, list(RT_NAME_STR, "|"), rt_job_cfg, n, help),

static const rt_cfg_key coord_keys[] = {
    RT_CFG_S("coordinator", "listen", "0.0.0.0:7070", rt_coord_cfg, listen,
             "address:port for the agents' control channel (TLS)"),
    RT_CFG_S("coordinator", "http_listen", "127.0.0.1:7071", rt_coord_cfg, http_listen,
             "address:port of the HTTP API, dashboard and /metrics (TLS)"),
    RT_CFG_P("coordinator", "cert", "coordinator.crt", rt_coord_cfg, cert,
             "certificate of the coordinator, signed by the cluster CA"),
    RT_CFG_P("coordinator", "key", "coordinator.key", rt_coord_cfg, key,
             "private key of that certificate"),
    RT_CFG_P("coordinator", "token_file", "token", rt_coord_cfg, token_file,
             "file holding the agents' registration token (the API does not take it)"),
    RT_CFG_B("coordinator", "require_enrollment", "false", rt_coord_cfg, require_enrollment,
             "agents must register with their own token (ringtrain token create NAME --role "
             "agent); the shared agents' token is refused"),
    RT_CFG_P("coordinator", "admin_token_file", "admin.token", rt_coord_cfg, admin_token_file,
             "file holding the API's admin token (init-cluster writes it; more tokens, with "
             "roles: ringtrain token create)"),
    RT_CFG_KEY("coordinator", "state_db", RT_CFG_PATH, "state.db", 0, 0, NULL, rt_coord_cfg,
               state_db,
               "SQLite database with agents, jobs, attempts, events and metrics (default: in the "
               "service's StateDirectory under systemd, else beside this file)",
               RT_CFG_IN_STATE_DIR),
    RT_CFG_KEY("coordinator", "state_key_file", RT_CFG_PATH, "state.key", 0, 0, NULL, rt_coord_cfg,
               state_key_file,
               "key the job environments (exec -x values, S3 credentials) are sealed with in "
               "the state database, made at the first start (default: where state_db is; "
               "keep it apart from the database's backups)",
               RT_CFG_IN_STATE_DIR),
    RT_CFG_D("coordinator", "heartbeat_interval", "2s", 10000, 60e6, rt_coord_cfg,
             heartbeat_interval_us, "how often agents report in"),
    RT_CFG_D("coordinator", "heartbeat_timeout", "10s", 50000, 600e6, rt_coord_cfg,
             heartbeat_timeout_us, "an agent silent this long is declared lost"),
    RT_CFG_D("coordinator", "http_timeout", "60s", 100000, 3600e6, rt_coord_cfg, http_timeout_us,
             "an API client silent this long in a request is dropped (log streams never are)"),
    RT_CFG_D("coordinator", "http_request_timeout", "10s", 100000, 3600e6, rt_coord_cfg,
             http_request_timeout_us,
             "an API client must send a whole request (headers and body) within this of "
             "connecting or of its last reply, however its bytes trickle in (log streams being "
             "sent have no deadline)"),
    RT_CFG_I("coordinator", "http_max_connections", "256", 1, 65536, rt_coord_cfg,
             http_max_connections, "API connections open at once; one more is closed"),
    RT_CFG_I("coordinator", "http_max_per_address", "32", 1, 65536, rt_coord_cfg,
             http_max_per_address, "API connections open at once from one address"),
    RT_CFG_D("coordinator", "prepare_timeout", "30s", 100000, 600e6, rt_coord_cfg,
             prepare_timeout_us, "how long agents get to set up a job's ranks"),
    RT_CFG_D("coordinator", "reconcile_timeout", "60s", 1000000, 3600e6, rt_coord_cfg,
             reconcile_timeout_us,
             "after a restart, how long agents get to report the ranks they still run"),
    RT_CFG_D("jobs", "default_queue_timeout", "0s", 0, 365 * 86400e6, rt_coord_cfg,
             default_queue_timeout_us,
             "how long a job may wait in the queue unless it says (0: as long as it takes)"),
    RT_CFG_I("jobs", "default_max_restarts", "0", 0, 1000, rt_coord_cfg, default_max_restarts,
             "restarts after a failure unless the job says"),
    RT_CFG_I("jobs", "max_queued_per_user", "1000", 1, 1000000, rt_coord_cfg, max_queued_per_user,
             "jobs one user may have waiting in the queue; one more is refused (as Slurm's "
             "MaxSubmitJobs): a submit token cannot fill the coordinator"),
    RT_CFG_I("jobs", "log_tail_lines", "20", 0, 1000, rt_coord_cfg, log_tail_lines,
             "lines of a failed rank's output kept in the job record"),
    RT_CFG_D("jobs", "job_retention", "30d", 0, 3650 * 86400e6, rt_coord_cfg, job_retention_us,
             "a finished job's record (attempts, placement, events, metrics, results) is deleted "
             "from the state database this long after it finished (0: kept for ever)"),
    RT_CFG_D("coordinator", "agent_retention", "7d", 0, 3650 * 86400e6, rt_coord_cfg,
             agent_retention_us,
             "an agent down this long, with no rank of a job still tracked, is forgotten: "
             "no longer listed in nodes or counted in /metrics (0: never)"),
    RT_CFG_E("logging", "level", "info", RT_LOG_LEVEL_CHOICES, rt_coord_cfg, log_level,
             "least important log level written"),
};
const rt_cfg_schema rt_coord_schema = {"coordinator.conf", coord_keys, RT_ARRAY_LEN(coord_keys),
                                       sizeof(rt_coord_cfg), NULL};

static const rt_cfg_key agent_keys[] = {
    RT_CFG_KEY("agent", "coordinator", RT_CFG_STRING, NULL, 0, 0, NULL, rt_agent_cfg, coordinator,
               "host:port of the coordinator's control channel", RT_CFG_REQUIRED),
    RT_CFG_S("agent", "server_name", NULL, rt_agent_cfg, server_name,
             "name the coordinator's certificate must carry (default: the host above)"),
    RT_CFG_P("agent", "ca", "ca.crt", rt_agent_cfg, ca, "the cluster CA certificate"),
    RT_CFG_P("agent", "token_file", "token", rt_agent_cfg, token_file,
             "file holding the agents' registration token"),
    RT_CFG_S("agent", "name", NULL, rt_agent_cfg, name,
             "this agent's name, unique on its host (default: the hostname)"),
    RT_CFG_S("agent", "host_id", NULL, rt_agent_cfg, host_id,
             "host identity for placement (default: hash of hostname and namespaces)"),
    RT_CFG_S("agent", "data_address", NULL, rt_agent_cfg, data_address,
             "IP address ranks listen on (default: this end of the control connection)"),
    RT_CFG_I("agent", "slots", "0", 0, 4096, rt_agent_cfg, slots,
             "ranks this node runs at once (0: one per GPU, or 1 without GPUs)"),
    RT_CFG_B("agent", "hide_token", "true", rt_agent_cfg, hide_token,
             "ranks see an empty file where token_file is (a user and mount namespace per rank; "
             "not for an agent running as root, whose ranks could undo it)"),
    RT_CFG_S("agent", "job_uids", NULL, rt_agent_cfg, job_uids,
             "FIRST-LAST: each job's ranks run as uid (and gid) FIRST + job id mod the range's "
             "size, 0700 work folders of their own (a uid no account uses; no other agent on "
             "the host may have an overlapping range, unless it is the same cluster's with the "
             "same range; the agent needs CAP_SETUID, CAP_SETGID, CAP_CHOWN and CAP_KILL, as "
             "the unit grants; default: "
             "jobs run as the agent's user unless their token names a Unix user)"),
    RT_CFG_B("agent", "allow_root_jobs", "false", rt_agent_cfg, allow_root_jobs,
             "an agent running as root without job_uids runs jobs as root (else it refuses "
             "them, unless their token names a Unix user)"),
    RT_CFG_Z("agent", "job_disk_limit", "0", 0, 1e15, rt_agent_cfg, job_disk_limit,
             "the most a job's files on this node may take: its work folder and, where it runs "
             "as a uid of its own, that uid's files in /tmp, /var/tmp and /dev/shm; measured "
             "every few seconds, beyond it the job's ranks here are stopped, saying so (0: no "
             "limit; a job's own disk_limit may ask for less)"),
    RT_CFG_Z("agent", "min_free_disk", "64M", 0, 1e15, rt_agent_cfg, min_free_disk,
             "when work_dir's filesystem has less than this free, the job whose files take the "
             "most there (1 MiB or more) is stopped, saying so (the kubelet's eviction; 0: "
             "never)"),
    RT_CFG_I("agent", "gpus", "-1", -1, 1024, rt_agent_cfg, gpus,
             "GPUs this node hands out, one per slot as CUDA_VISIBLE_DEVICES for exec jobs "
             "(-1: as many as the worker's probe finds; 0: none)"),
    RT_CFG_KEY("agent", "work_dir", RT_CFG_PATH, "work", 0, 0, NULL, rt_agent_cfg, work_dir,
               "per-job working folders and rendezvous files (default: work in the service's "
               "StateDirectory under systemd, else beside this file)",
               RT_CFG_IN_STATE_DIR),
    RT_CFG_KEY("agent", "log_dir", RT_CFG_PATH, "logs", 0, 0, NULL, rt_agent_cfg, log_dir,
               "per-rank output of the workers (default: the service's LogsDirectory under "
               "systemd, else logs beside this file)",
               RT_CFG_IN_LOGS_DIR),
    RT_CFG_P("agent", "worker", NULL, rt_agent_cfg, worker,
             "the training worker program (default: ringtrain-worker beside the agent)"),
    RT_CFG_Z("agent", "log_max_bytes", "64M", 4096, 1e12, rt_agent_cfg, log_max_bytes,
             "a rank's log file is rotated beyond this size"),
    RT_CFG_I("agent", "log_keep", "3", 0, 100, rt_agent_cfg, log_keep, "rotated log files kept"),
    RT_CFG_D("agent", "log_retention", "14d", 0, 3650 * 86400e6, rt_agent_cfg, log_retention_us,
             "a job's output and work folder are removed this long after they were last written, "
             "unless one of its ranks still runs here (0: kept for ever)"),
    RT_CFG_D("agent", "reconnect_max", "30s", 100000, 3600e6, rt_agent_cfg, reconnect_max_us,
             "longest pause between attempts to reach the coordinator"),
    RT_CFG_D("agent", "kill_grace", "3s", 0, 600e6, rt_agent_cfg, kill_grace_us,
             "time between SIGTERM and SIGKILL when stopping workers"),
    RT_CFG_S3_KEYS(rt_agent_cfg),
    RT_CFG_E("logging", "level", "info", RT_LOG_LEVEL_CHOICES, rt_agent_cfg, log_level,
             "least important log level written"),
};
const rt_cfg_schema rt_agent_schema = {"agent.conf", agent_keys, RT_ARRAY_LEN(agent_keys),
                                       sizeof(rt_agent_cfg), NULL};

static rt_status job_validate(const void *obj, const rt_cfg_origin *o, rt_cfg_errors *errs)
{
    const rt_job_cfg *j = obj;
    const char *fname = o->fname;
    rt_status st = RT_OK;
    if (j->min_np > j->np) {
        rt_cfg_errors_add(errs, "%s: [job] min_np: %lld is larger than np (%lld)", fname,
                          (long long)j->min_np, (long long)j->np);
        st = RT_ERR_INVALID;
    }
    if (j->type == RT_JOB_EXEC && j->command.n == 0) {
        rt_cfg_errors_add(errs, "%s: [job] command: an exec job needs a command", fname);
        st = RT_ERR_INVALID;
    }
    if (j->type == RT_JOB_TRAIN || j->type == RT_JOB_SWEEP) {
        if (!j->dataset) {
            rt_cfg_errors_add(errs,
                              "%s: [data] dataset: a training job needs the prepared "
                              "dataset's folder (ringtrain prep --out): in the file, or "
                              "--set data.dataset=DIR",
                              fname);
            st = RT_ERR_INVALID;
        }
        if (!j->store) {
            rt_cfg_errors_add(errs,
                              "%s: [output] store: a training job needs a folder for "
                              "checkpoints, history and predictions: in the file, or --set "
                              "output.store=DIR",
                              fname);
            st = RT_ERR_INVALID;
        }
    }
    if (rt_job_model_validate(j, o, errs) != RT_OK)
        st = RT_ERR_INVALID;
    if (j->beta1 >= 1 || j->beta2 >= 1) {
        rt_cfg_errors_add(errs, "%s: [train] beta1 and beta2 must be below 1", fname);
        st = RT_ERR_INVALID;
    }
    if (j->type != RT_JOB_SWEEP && j->space.n > 0) {
        char at[300];
        rt_cfg_errors_add(
            errs,
            "%s: [sweep] %s: a search space in a %s job: a sweep is "
            "[job] type = sweep",
            rt_cfg_where(&rt_job_schema, o, "sweep", j->space.names[0], at, sizeof at),
            j->space.names[0], j->type == RT_JOB_EXEC ? "exec" : "training");
        st = RT_ERR_INVALID;
    }
    if (st == RT_OK && j->type == RT_JOB_SWEEP && rt_sweep_validate(j, o, errs) != RT_OK)
        st = RT_ERR_INVALID;
    return st;
}

static const rt_cfg_key job_keys[] = {
    RT_CFG_S("job", "name", "job", rt_job_cfg, name, "a name for listings"),
    RT_CFG_E("job", "type", "train", "train|exec|sweep", rt_job_cfg, type,
             "train: the built-in trainer; exec: run `command` on every rank; sweep: trials of "
             "the training job with the [sweep] section's values (docs/sweeps.md)"),
    RT_CFG_I("job", "np", "1", 1, 65536, rt_job_cfg, np, "number of ranks"),
    RT_CFG_I("job", "min_np", "0", 0, 65536, rt_job_cfg, min_np,
             "after a failure, restart on as few as this many ranks (0: np)"),
    RT_CFG_I("job", "max_restarts", "0", 0, 1000, rt_job_cfg, max_restarts,
             "restarts after a failure before the job fails"),
    RT_CFG_I("job", "priority", "0", -1000, 1000, rt_job_cfg, priority,
             "queue order: higher first, then first come first served"),
    RT_CFG_D("job", "queue_timeout", "0s", 0, 365 * 86400e6, rt_job_cfg, queue_timeout_us,
             "longest wait for free slots, also before a restart (0: as long as it takes)"),
    RT_CFG_D("job", "deadline", "0s", 0, 365 * 86400e6, rt_job_cfg, deadline_us,
             "longest run time of the whole job (0: none); a job with one may start ahead of a "
             "larger waiting job it cannot delay"),
    RT_CFG_E("job", "transport", "auto", RT_RUN_TRANSPORTS, rt_job_cfg, transport,
             "data plane: auto uses NCCL when every rank has a GPU, shared memory (shm) when "
             "every rank is on one host, RDMA when present, else TCP"),
    RT_CFG_I("job", "sockets", RT_RUN_STR(RT_RUN_SOCKETS), 1, RT_RUN_SOCKETS_MAX, rt_job_cfg,
             sockets,
             "TCP connections to the right ring neighbour (with three ranks or more one more "
             "runs the other way round)"),
    RT_CFG_D("job", "collective_timeout", RT_RUN_STR(RT_RUN_TIMEOUT_S) "s", 1000, 86400e6,
             rt_job_cfg, collective_timeout_us,
             "deadline of every collective; a rank that does not arrive is named"),
    RT_CFG_B("job", "encrypt", "false", rt_job_cfg, encrypt, "AES-256-GCM on the data plane"),
    RT_CFG_B("job", "integrity", "true", rt_job_cfg, integrity,
             "AES-GMAC on every data-plane frame, payload in clear (false: plain frames, for a "
             "trusted network; encrypt implies it)"),
    RT_CFG_B("job", "hierarchical", "true", rt_job_cfg, hierarchical,
             "where every host runs the same number of ranks (two hosts or more): allreduce "
             "in shared memory within each host and across hosts on one ring per local rank, "
             "as Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE (false: one flat ring)"),
    RT_CFG_Z("job", "memory_limit", "0", 0, 1e15, rt_job_cfg, memory_limit,
             "per rank: the most memory (RAM and swap) the rank and everything it starts may "
             "use, enforced by its cgroup; beyond it the kernel's OOM killer ends the rank and "
             "the job says so (0: no limit; a node that cannot enforce it fails the rank)"),
    RT_CFG_F("job", "cpu_limit", "0", 0, 4096, rt_job_cfg, cpu_limit,
             "per rank: the CPU time the rank and everything it starts may use, in CPUs (1.5: "
             "one and a half cores), enforced by its cgroup (0: no limit; a node that cannot "
             "enforce it fails the rank)"),
    RT_CFG_Z("job", "disk_limit", "0", 0, 1e15, rt_job_cfg, disk_limit,
             "per node: the most the job's files there may take — its work folder "
             "($RT_WORK_DIR) and, where it runs as a uid of its own, its files in /tmp, "
             "/var/tmp and /dev/shm — measured every few seconds; beyond it the job's ranks "
             "there are stopped and the job says so (0: the agent's job_disk_limit; a job may "
             "ask for less, never more)"),
    RT_CFG_L(
        "job", "command", NULL, rt_job_cfg, command,
        "exec jobs: the program and its arguments, comma-separated; an argument with a "
        "comma in \"double quotes\"; a ';' after a space written \\; (\" ;\" starts a comment)"),

    RT_CFG_P("data", "dataset", NULL, rt_job_cfg, dataset,
             "prepared dataset folder (ringtrain prep --out), on every node"),
    RT_CFG_S("data", "label", NULL, rt_job_cfg, label, "label column (default: the manifest's)"),
    RT_CFG_L("data", "categorical", NULL, rt_job_cfg, categorical,
             "categorical columns (default: the manifest's; none: no columns)"),
    RT_CFG_L("data", "continuous", NULL, rt_job_cfg, continuous,
             "continuous columns (default: the manifest's; none: no columns)"),
    RT_CFG_S("data", "validation", NULL, rt_job_cfg, validation,
             "0/1 column marking validation rows (default: the manifest's)"),
    RT_CFG_S("data", "weight", NULL, rt_job_cfg, weight,
             "sample-weight column, multiplying each row's loss (default: the manifest's; "
             "none: no weights)"),
    RT_CFG_I("data", "stream_rows", "0", 0, (int64_t)1 << 31, rt_job_cfg, stream_rows,
             "0: each rank holds its training rows in memory; N: it reads them N rows (whole "
             "row groups) at a time, the next window read while the current one trains, the "
             "row groups' order shuffled each epoch and the rows within each window, so "
             "memory follows N (two windows), not the dataset; validation rows are read a row "
             "group at a time too"),
    RT_CFG_P("data", "cache", NULL, rt_job_cfg, cache,
             "a dataset in S3: a folder on each node to keep copies of its objects in (kept "
             "by the object's ETag: a changed object is fetched again), so that a restart or "
             "a later job on that node reads them from disk; default: none, every read goes "
             "to the bucket"),

    RT_CFG_E("model", "architecture", "rossmann", RT_ARCH_CHOICES, rt_job_cfg, architecture,
             "the model family (docs/models.md): rossmann (Horovod's Rossmann network), mlp, "
             "resnet, dcn2 (DCN-V2), ft_transformer or tabm (an ensemble of MLPs sharing their "
             "weights); each takes its own keys below"),
    RT_CFG_I("model", "embedding_dim", "10", 1, 1024, rt_job_cfg, embedding_dim,
             "width of every categorical embedding (embedding_rule = fixed)"),
    RT_CFG_L("model", "embedding_dims", NULL, rt_job_cfg, embedding_dims,
             "per column, COLUMN:WIDTH (Store:16, DayOfWeek:4): overrides the rule for it"),
    RT_CFG_E("model", "embedding_rule", "fixed", "fixed|fastai", rt_job_cfg, embedding_rule,
             "fixed: embedding_dim for every column; fastai: min(600, round(1.6 * n^0.56)) "
             "for a column of n values (fastai's emb_sz_rule)"),
    RT_CFG_E("model", "continuous_norm", "auto", "auto|" RT_CONT_NORM_CHOICES, rt_job_cfg,
             continuous_norm,
             "continuous inputs: a batch-norm layer, (x - mean) / std with the training rows' "
             "statistics (the dataset's manifest), as they are, quantile (each column mapped "
             "to a normal through its training rows' quantiles, sklearn's QuantileTransformer), "
             "or robust ((x - median) / IQR, then RealMLP's smooth clip x / sqrt(1 + (x/3)^2)); "
             "auto: batchnorm for "
             "rossmann (the Keras model's), standardize for the other families (a batch norm's "
             "moving averages need hundreds of steps before validation means anything)"),
    RT_CFG_L("model", "hidden", "1000, 1000, 1000, 500", rt_job_cfg, hidden,
             "rossmann, mlp: widths of the hidden layers (1 to 16)"),
    RT_CFG_L("model", "dropout", "0.5", rt_job_cfg, dropout,
             "rossmann: the rate after the last hidden layer; mlp: one rate for every hidden "
             "layer or one each; dcn2: the deep layers' (one, or one each); tabm: the blocks' "
             "(one, or one each; 0.1 when not set)"),
    RT_CFG_L("model", "batch_norm", "false", rt_job_cfg, batch_norm,
             "mlp: batch norm after each hidden layer's activation (one value, or one each)"),
    RT_CFG_E("model", "activation", "relu", RT_ACT_CHOICES, rt_job_cfg, activation,
             "mlp: the hidden layers' activation (gelu: the exact erf form)"),
    /* clang-format off */
    RT_MODEL_KEYS(SCHEMA_I, SCHEMA_F, SCHEMA_B, SCHEMA_E)
    /* clang-format on */
    RT_CFG_F("model", "head_scale_factor", "1.2", 0.01, 100, rt_job_cfg, head_scale_factor,
             "head scaled_sigmoid: output = factor * max label (in the label's transform) * "
             "sigmoid(z)"),
    RT_CFG_E("model", "head", "auto", "auto|" RT_HEAD_CHOICES, rt_job_cfg, head,
             "the output's head: scaled_sigmoid (Rossmann's; regression with mae) or linear "
             "(the output layer itself: logits for classification); auto: scaled_sigmoid "
             "for a regression with loss mae, else linear"),
    RT_CFG_E("model", "device", "auto", "auto|cpu|cuda", rt_job_cfg, device,
             "auto: the rank's GPU (local_rank) when there is one, else the CPU"),
    RT_CFG_I("model", "threads", "0", 0, 1024, rt_job_cfg, threads,
             "CPU threads per rank (0: the CPUs a rank may run on, its affinity mask and "
             "cgroup cpu.max, shared by the job's ranks on the host, or on the machine when "
             "several hosts are containers of one; the job's first log line says how many and "
             "why)"),
    RT_CFG_B("model", "tf32", "true", rt_job_cfg, tf32,
             "TF32 tensor cores for GPU GEMMs (false: exact FP32, as on the CPU)"),
    RT_CFG_E("model", "precision", "fp32", "fp32|bf16", rt_job_cfg, precision,
             "bf16: every GEMM's inputs rounded to bf16, its sums in FP32; parameters, Adam, "
             "losses, normalisation and the gradients' allreduce stay FP32 (mixed precision as "
             "PyTorch's autocast; the allreduce: [train] allreduce_precision).  CPUs with "
             "AVX512_BF16 (Zen 4, Cooper Lake, Sapphire Rapids on; AMX tiles where present) "
             "and GPUs from sm_80 "
             "(cuBLAS's FAST_16BF: bf16 tensor cores, in place of tf32); elsewhere the rank's "
             "first line says so and it runs FP32"),
    RT_CFG_B("model", "sync_batch_norm", "false", rt_job_cfg, sync_batch_norm,
             "every batch-norm layer with the statistics of all ranks' batches (np > 1, CPU "
             "workers): np ranks of batch B then train like one of batch np*B (a batch norm "
             "inside the network also sums its backward over the ranks, and the gradient "
             "buckets then wait for backward to finish)"),

    RT_CFG_I("train", "batch_size", "100", 1, 1 << 20, rt_job_cfg, batch_size,
             "rows per step on each rank"),
    RT_CFG_I("train", "epochs", "100", 1, 1000000, rt_job_cfg, epochs, "passes over the data"),
    RT_CFG_I("train", "steps_per_epoch", "0", 0, 1LL << 40, rt_job_cfg, steps_per_epoch,
             "0: enough for every rank to see each of its rows once"),
    RT_CFG_E("train", "loss", "auto", "auto|" RT_LOSS_CHOICES, rt_job_cfg, loss,
             "regression: mae, mse, huber, poisson (log input); binary: bce (with logits); "
             "multiclass: cross_entropy; auto: the task's (mae, bce, cross_entropy)"),
    RT_CFG_F("train", "huber_delta", "1", 1e-12, 1e12, rt_job_cfg, huber_delta,
             "loss huber: where the loss turns from squared to linear"),
    RT_CFG_F("train", "label_smoothing", "0", 0, 0.99, rt_job_cfg, label_smoothing,
             "classification: the target mixes the label with the uniform distribution "
             "(PyTorch's label_smoothing; bce: y (1 - s) + s/2, as Keras')"),
    RT_CFG_L("train", "class_weights", "none", rt_job_cfg, class_weights,
             "classification: none, balanced (rows / (classes * rows of the class), "
             "scikit-learn's), balanced_sqrt (its square root: gentler with rare classes), or "
             "one weight per class in the manifest's class order; each row's loss is "
             "multiplied by its class's weight"),
    RT_CFG_L("train", "metrics", NULL, rt_job_cfg, metrics,
             "computed on the validation rows each epoch (docs/tasks.md): "
             "classification's " RT_CLS_METRICS ", regression's " RT_REG_METRICS
             " (default: the task's)"),
    RT_CFG_F("train", "at_k", "0.1", 1e-9, 1e9, rt_job_cfg, at_k,
             "the ranking metrics' k (precision_at_k, recall_at_k, hits_at_k): the top k rows "
             "by the positive class's probability (a number of rows, or below 1 a fraction of "
             "the validation rows)"),
    RT_CFG_E("train", "optimizer", "adam", RT_OPTIM_CHOICES, rt_job_cfg, optimizer,
             "adam: Keras' Adam with L2 in the gradient (the seed's); adamw: PyTorch's AdamW "
             "(decoupled weight_decay); sgd: PyTorch's SGD (momentum, nesterov)"),
    RT_CFG_F("train", "learning_rate", "1e-4", 0, 10, rt_job_cfg, learning_rate,
             "the optimizer's step size (one_cycle: its peak)"),
    RT_CFG_F("train", "weight_decay", "0", 0, 10, rt_job_cfg, weight_decay,
             "adamw: decoupled weight decay; adam and sgd: added to the gradient "
             "(torch.optim.Adam's and SGD's weight_decay); only on dense "
             "kernels (not biases, norms, embeddings, tokens: rtdl's no_decay groups)"),
    RT_CFG_F("train", "momentum", "0", 0, 0.9999, rt_job_cfg, momentum, "sgd: momentum"),
    RT_CFG_B("train", "nesterov", "false", rt_job_cfg, nesterov, "sgd: Nesterov momentum"),
    RT_CFG_F("train", "clip_norm", "0", 0, 1e12, rt_job_cfg, clip_norm,
             "clip the global gradient norm (after the allreduce: the same on every rank) to "
             "this (0: no clipping; PyTorch's clip_grad_norm_)"),
    RT_CFG_F("train", "beta1", "0.9", 0, 1, rt_job_cfg, beta1, "Adam beta1"),
    RT_CFG_F("train", "beta2", "0.999", 0, 1, rt_job_cfg, beta2, "Adam beta2"),
    RT_CFG_F("train", "epsilon", "0", 0, 1, rt_job_cfg, epsilon,
             "Adam/AdamW epsilon (0: the family's default: 1e-8 as PyTorch's, but 1e-3 for "
             "rossmann, Horovod's Keras model)"),
    RT_CFG_B("train", "scale_lr", "false", rt_job_cfg, scale_lr,
             "multiply the learning rate by the number of ranks"),
    RT_CFG_E("train", "lr_schedule", "constant",
             "constant|cosine|step|exponential|one_cycle|plateau", rt_job_cfg, lr_schedule,
             "constant (the seed's); cosine decay to lr_min over the epochs; step: times "
             "lr_gamma every lr_step_epochs; exponential: times lr_gamma every epoch; "
             "one_cycle: PyTorch's OneCycleLR per step; plateau: times lr_gamma when the "
             "monitored metric has not improved for lr_patience epochs"),
    RT_CFG_F("train", "lr_gamma", "0.1", 1e-6, 1, rt_job_cfg, lr_gamma,
             "step, exponential, plateau: the learning rate's factor"),
    RT_CFG_I("train", "lr_step_epochs", "30", 1, 1000000, rt_job_cfg, lr_step_epochs,
             "step: epochs between decays"),
    RT_CFG_I("train", "lr_patience", "10", 0, 1000000, rt_job_cfg, lr_patience,
             "plateau: epochs without improvement before the rate drops"),
    RT_CFG_F("train", "lr_pct_start", "0.3", 0.001, 0.999, rt_job_cfg, lr_pct_start,
             "one_cycle: the share of the steps spent rising"),
    RT_CFG_F("train", "lr_div_factor", "25", 1, 1e9, rt_job_cfg, lr_div_factor,
             "one_cycle: the start is learning_rate / this"),
    RT_CFG_F("train", "lr_final_div_factor", "1e4", 1, 1e12, rt_job_cfg, lr_final_div_factor,
             "one_cycle: the end is the start / this"),
    RT_CFG_F("train", "lr_min", "0", 0, 10, rt_job_cfg, lr_min, "where cosine decay ends"),
    RT_CFG_F("train", "warmup_epochs", "0", 0, 1000, rt_job_cfg, warmup_epochs,
             "linear warmup from learning_rate/ranks (Horovod's LearningRateWarmupCallback)"),
    RT_CFG_I("train", "seed", "42", 0, NO_HI, rt_job_cfg, seed,
             "initialisation, shuffling and dropout"),
    RT_CFG_Z("train", "bucket_size", RT_RUN_STR(RT_RUN_BUCKET_MB) "M", 4096, 1e12, rt_job_cfg,
             bucket_bytes, "gradient allreduce bucket (fusion) size"),
    RT_CFG_E("train", "allreduce_precision", "fp32", "fp32|bf16", rt_job_cfg, allreduce_precision,
             "bf16: each gradient bucket is rounded to bf16 for its allreduce and widened back "
             "(half the bytes on the wire and through the integrity tags, about 3 significant "
             "digits; Horovod's Compression.fp16, in bf16); the update itself stays FP32.  CPU "
             "and GPU workers (NCCL's bfloat16, or the staged ring's)"),
    RT_CFG_I("train", "eval_batch_size", "4096", 1, 1 << 22, rt_job_cfg, eval_batch_size,
             "rows per forward pass in validation and prediction"),
    RT_CFG_S("train", "monitor", "val_loss", rt_job_cfg, monitor,
             "the metric that picks the best epoch (best.ckpt, the predictions) and stops "
             "training early, like Keras' ModelCheckpoint and EarlyStopping: loss, val_loss, or "
             "val_ and a metric the job computes (val_accuracy, val_auc, ...); without "
             "validation rows the training loss"),
    RT_CFG_E("train", "monitor_mode", "auto", "auto|min|max", rt_job_cfg, monitor_mode,
             "whether the monitored metric is better lower or higher; auto: higher "
             "for " RT_HIGHER_METRICS "lower for the losses and the other metrics"),
    RT_CFG_I("train", "early_stopping_patience", "0", 0, 1000000, rt_job_cfg,
             early_stopping_patience,
             "stop after this many epochs without an improvement of the monitored metric "
             "(0: train every epoch); decided once from the ranks' reduced metrics"),
    RT_CFG_F("train", "min_delta", "0", 0, 1e12, rt_job_cfg, min_delta,
             "the least change that counts as an improvement (best epoch and early stopping)"),
    RT_CFG_B("train", "restore_best", "true", rt_job_cfg, restore_best,
             "the predictions come from the best epoch's model (false: the last epoch's)"),
    RT_CFG_E("train", "checkpoint", "best", "best|last|none", rt_job_cfg, checkpoint,
             "best: best.ckpt by validation loss and last.ckpt each epoch; last: only "
             "last.ckpt; none: neither (no resume)"),
    RT_CFG_E("train", "resume", "auto", "auto|never", rt_job_cfg, resume,
             "auto: continue from the store's last.ckpt when there is one"),
    RT_CFG_D("train", "progress_every", "1s", 10000, 3600e6, rt_job_cfg, progress_every_us,
             "how often rank 0 reports the step to the coordinator"),
    RT_CFG_B("train", "trace", "false", rt_job_cfg, trace,
             "a timeline of every step (data, forward, backward per layer, each bucket's "
             "allreduce, the wait for the slowest rank, Adam) as Chrome trace JSON in "
             "STORE/trace/rank-R.json, rewritten every epoch (GPU steps: timed by CUDA events "
             "inside the step's graph)"),
    RT_CFG_I(
        "train", "trace_spans", "100000", 16, 1 << 26, rt_job_cfg, trace_spans,
        "spans each rank keeps for the timeline: the newest (about 100 bytes each in the file)"),

    RT_CFG_P("output", "store", NULL, rt_job_cfg, store,
             "folder for checkpoints, history.jsonl and predictions (shared by the ranks' "
             "rank 0 node)"),
    RT_CFG_B("output", "predict", "true", rt_job_cfg, predict,
             "write predictions for the test rows with the best model at the end"),
    RT_CFG_P("output", "predictions", NULL, rt_job_cfg, predictions,
             "predictions file (default: STORE/submission.csv)"),
    RT_CFG_B("output", "predict_validation", "false", rt_job_cfg, predict_validation,
             "also write the validation rows' predictions with the best model, beside their "
             "true labels, as STORE/validation_predictions.csv (to compute other metrics, pick a "
             "threshold or stack models)"),
    RT_CFG_B("output", "proba", "true", rt_job_cfg, proba,
             "classification: a probability column per class (p_NAME) after the class"),
    RT_CFG_F("output", "threshold", "0.5", 0, 1, rt_job_cfg, threshold,
             "binary: the probability of the positive class (the second) from which it is "
             "predicted"),
    RT_CFG_F("output", "prediction_range_factor", "10", 0, 1e12, rt_job_cfg,
             prediction_range_factor,
             "regression: predictions outside the training targets' range [lo, hi] by more than "
             "(this - 1) times its width are counted and the first named in the log (0: no "
             "check)"),
    RT_CFG_B("output", "clip_predictions", "false", rt_job_cfg, clip_predictions,
             "regression: write such predictions as the bound they passed"),

    RT_CFG_I("sweep", "trials", "0", 0, 2000, rt_job_cfg, sweep_trials,
             "how many configurations to train (asha and random: required; grid: every "
             "combination, this many if given)"),
    RT_CFG_I("sweep", "parallel", "4", 1, 10000, rt_job_cfg, sweep_parallel,
             "at most this many trials queued or running at once (each asks for the job's np)"),
    RT_CFG_E("sweep", "scheduler", "asha", "asha|random|grid", rt_job_cfg, sweep_scheduler,
             "asha: random configurations, each stopped at a rung (grace_epochs * "
             "reduction^k) unless it is in the top 1/reduction there; random: every "
             "configuration trains in full; grid: every combination of the choice() keys"),
    RT_CFG_E("sweep", "search", "random", "random|tpe", rt_job_cfg, sweep_search,
             "how asha and random scheduling draw each trial's values: random (a function of "
             "seed and trial), or tpe (the Tree-structured Parzen Estimator, Optuna's default "
             "sampler: after 10 trials have ended, values like the best tenth's)"),
    RT_CFG_I("sweep", "grace_epochs", "0", 0, 1000000, rt_job_cfg, grace_epochs,
             "asha: the first rung, in epochs (no trial stops before it); 0: [train] epochs / "
             "reduction^3 rounded, at least 1 (four rungs at most, as Determined derives its "
             "first)"),
    RT_CFG_I("sweep", "reduction", "3", 2, 100, rt_job_cfg, reduction,
             "asha: rungs grow by this factor and the top 1/reduction of a rung go on (ASHA's "
             "eta)"),
    RT_CFG_I("sweep", "max_failed_trials", "3", 0, 100000, rt_job_cfg, max_failed_trials,
             "the sweep fails, its running trials cancelled, when more trials than this fail"),
    RT_CFG_D("sweep", "time_budget", "0s", 0, 365 * 86400e6, rt_job_cfg, time_budget_us,
             "the sweep's time from its start (AutoGluon's time_limit, Ray Tune's "
             "time_budget_s): then no trial starts, the running ones stop as ASHA stops them "
             "(checkpoints kept) and the results are written from the trials that ran (0: none)"),
    RT_CFG_I("sweep", "seed", "0", 0, 9007199254740991.0, rt_job_cfg, sweep_seed,
             "the sampling's seed: the same seed gives the same trials"),
    RT_CFG_B("sweep", "baseline", "false", rt_job_cfg, sweep_baseline,
             "trial 1 trains the file's own values of the searched keys (Ray Tune's "
             "points_to_evaluate, Optuna's enqueue_trial): the sweep starts from the "
             "configuration you have; asha and random only"),
    RT_CFG_B("sweep", "ensemble", "false", rt_job_cfg, sweep_ensemble,
             "after the trials, their predictions weighted by the validation rows into "
             "STORE/ensemble (AutoGluon's weighted ensemble; `ringtrain ensemble`): every trial "
             "writes its validation predictions, those without predictions are left out"),
    RT_CFG_M("sweep", "space.", rt_job_cfg, space,
             "the search space, one key per line: space.train.learning_rate = "
             "loguniform(1e-4, 3e-3); uniform(lo, hi), int(lo, hi), choice(a | b | c); "
             "none (or model.architecture's alone): asha and random search the "
             "family's default space (docs/sweeps.md)"),
    RT_CFG_S3_KEYS(rt_job_cfg),
};
const rt_cfg_schema rt_job_schema = {"job file", job_keys, RT_ARRAY_LEN(job_keys),
                                     sizeof(rt_job_cfg), job_validate};

void rt_job_run_settings(const rt_job_cfg *j, rt_run_settings *s)
{
    rt_run_defaults(s);
    rt_cfg_enum_name(&rt_job_schema, "job", "transport", j->transport, s->transport,
                     sizeof s->transport);
    s->sockets = j->sockets;
    s->collective_timeout_ms = j->collective_timeout_us / 1000;
    s->encrypt = j->encrypt;
    s->integrity = j->integrity;
    s->hierarchical = j->hierarchical;
}

int rt_job_continuous_norm(const rt_job_cfg *j)
{
    if (j->continuous_norm > 0)
        return j->continuous_norm - 1;
    return j->architecture == RT_ARCH_ROSSMANN ? RT_CONT_BATCHNORM : RT_CONT_STANDARDIZE;
}

double rt_job_epsilon(const rt_job_cfg *j)
{
    if (j->epsilon > 0)
        return j->epsilon;
    return j->architecture == RT_ARCH_ROSSMANN ? 1e-3 : 1e-8;
}

void rt_s3_keys_setenv(const rt_s3_keys *k, bool overwrite)
{
    static const char *const addressing[] = {"auto", "path", "virtual"};
    if (k->endpoint && k->endpoint[0])
        setenv("AWS_ENDPOINT_URL", k->endpoint, overwrite);
    if (k->region && k->region[0])
        setenv("AWS_REGION", k->region, overwrite);
    if (k->ca_file && k->ca_file[0])
        setenv("AWS_CA_BUNDLE", k->ca_file, overwrite);
    if (k->addressing > 0 && k->addressing < 3)
        setenv("RINGTRAIN_S3_ADDRESSING", addressing[k->addressing], overwrite);
}
