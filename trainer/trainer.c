/* trainer.c — see trainer.h: setting up (columns, rows, model, resume),
 * the epochs, the history and the checkpoints; the final predictions are
 * trainer_end.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_ckpt.h"
#include "rt_file.h"
#include "rt_json.h"
#include "rt_log.h"
#include "rt_proto.h"
#include "rt_run.h"
#include "rt_time.h"
#include "trainer.h"
#include "trainer_impl.h"

/* ---- set-up ------------------------------------------------------------------------ */

/* The device, the same on every rank: with device = auto the job uses its
 * GPUs only if every rank has one; with device = cuda a rank without one
 * fails the job on every rank, naming it. */
static rt_status pick_device(const trainer *t, rt_device *dev, char *err)
{
    int dc = t->cfg->device;
    const rt_trainer_env *env = t->env;
    int32_t gpu = rt_cuda_available() && rt_cuda_device_count_visible() > 0;
    int32_t *all = calloc((size_t)env->size, sizeof *all);
    if (!all)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    rt_status st = RT_OK;
    if (env->size > 1 && (st = rt_allgather(env->comm, &gpu, all, sizeof gpu)) != RT_OK) {
        free(all);
        return rt_err(err, st, "agreeing on the device: %s", rt_comm_last_error(env->comm));
    }
    if (env->size == 1)
        all[0] = gpu;
    int missing = -1;
    for (int r = 0; r < env->size && missing < 0; r++)
        if (!all[r])
            missing = r;
    free(all);
    if (dc == RT_DEV_CUDA && missing >= 0)
        return rt_err(err, RT_ERR_UNSUPPORTED, "[model] device = cuda, but rank %d has %s", missing,
                      rt_cuda_available() || missing != env->rank ? "no visible GPU"
                                                                  : "a build without CUDA");
    *dev = (dc == RT_DEV_CPU || missing >= 0) ? RT_DEVICE_CPU : RT_DEVICE_CUDA;
    if (dc == RT_DEV_AUTO && missing >= 0 && env->rank == 0 && env->log && gpu)
        fprintf(env->log, "trainer: rank %d has no GPU: every rank trains on its CPU\n", missing);
    if (*dev == RT_DEVICE_CUDA)
        return rt_cuda_set_device(env->local_rank % rt_cuda_device_count_visible(), err);
    return RT_OK;
}

/* ---- resume or start --------------------------------------------------------------- */

/* What rank 0 found, sent to every rank. */
typedef struct start_msg {
    int32_t status; /* 0 fine, 1 failed */
    int32_t resumed;
    int64_t epoch, best_epoch, plateau_wait;
    double best_val_loss, lr_factor, plateau_best;
    char why[RT_ERR_LEN]; /* rank 0's reason: every rank reports it, whichever is seen first */
} start_msg;

static rt_status bcast(trainer *t, void *buf, size_t n, char *err)
{
    if (!t->env->comm || t->env->size == 1)
        return RT_OK;
    rt_status st = rt_broadcast(t->env->comm, buf, n, 0);
    return st == RT_OK ? RT_OK : rt_err(err, st, "%s", rt_comm_last_error(t->env->comm));
}

static rt_status resume_or_start(trainer *t, char *err)
{
    start_msg msg = {.best_val_loss = INFINITY, .lr_factor = 1.0, .plateau_best = NAN};
    rt_status st = RT_OK;
    char *why = msg.why;
    if (t->env->rank == 0) {
        rt_ckpt ck = {0};
        bool want = t->cfg->resume == RT_RESUME_AUTO && t->cfg->checkpoint != RT_CKPT_NONE;
        rt_status r = want ? rt_ckpt_read(t->path_last, &ck, why) : RT_ERR_NOTFOUND;
        if (r == RT_OK && ((r = rt_ckpt_compatible(&ck, &t->spec, why)) != RT_OK ||
                           (r = rt_ckpt_check_values(&ck, t->ds, why)) != RT_OK)) {
            char more[RT_ERR_LEN];
            snprintf(more, sizeof more, "%s: %s (use another store, or resume = never)",
                     t->path_last, why);
            snprintf(why, RT_ERR_LEN, "%s", more);
        }
        if (r == RT_OK)
            r = rt_ckpt_to_model(&ck, rt_dp_model(t->dp), why);
        if (r == RT_OK) {
            msg.resumed = 1;
            msg.epoch = ck.epoch;
            msg.best_epoch = ck.best_epoch;
            /* the best value of another metric (the job's monitor changed) is no
             * bar for this one: the next epoch is the best so far */
            msg.best_val_loss = strcmp(ck.monitor, t->mon.name) == 0 ? ck.best_val_loss : NAN;
            msg.lr_factor = ck.lr_factor;
            msg.plateau_wait = ck.plateau_wait;
            msg.plateau_best = ck.plateau_best;
            r = store_history_cut(&t->store, ck.epoch, why);
        } else if (r == RT_ERR_NOTFOUND) {
            r = store_history_cut(&t->store, 0, why); /* a fresh start: a fresh history */
        }
        msg.status = r == RT_OK ? 0 : 1;
        rt_ckpt_free(&ck);
    }
    if ((st = bcast(t, &msg, sizeof msg, err)) != RT_OK)
        return st;
    if (msg.status != 0)
        return t->env->rank == 0 ? rt_err(err, RT_ERR_INVALID, "%s", msg.why)
                                 : rt_err(err, RT_ERR_INVALID, "rank 0 could not start: %s", msg.why);
    t->start_epoch = msg.epoch + 1;
    if (msg.resumed) { /* the monitor where the checkpoint left it */
        if (isfinite(msg.best_val_loss))
            t->mon.best = msg.best_val_loss;
        t->mon.best_epoch = msg.best_epoch;
        t->mon.since_best = msg.epoch - msg.best_epoch;
        t->mon.lr_factor = msg.lr_factor;
        t->mon.plateau_wait = msg.plateau_wait;
        if (isfinite(msg.plateau_best))
            t->mon.plateau_best = msg.plateau_best;
    }
    /* like hvd.broadcast_variables: everyone starts from rank 0's state */
    return rt_dp_broadcast_state(t->dp, 0, msg.resumed != 0, err);
}

/* The dataset, its columns, the rows (in memory or streamed), the
 * network's spec and the task. */
static rt_status load_data(trainer *t, char *err)
{
    const rt_job_cfg *cfg = t->cfg;
    const rt_trainer_env *env = t->env;
    rt_status st = rt_dataset_open(cfg->dataset, &t->ds, err);
    if (st == RT_OK)
        st = rt_columns_resolve(t->ds, cfg, &t->cols, err);
    if (st == RT_OK && cfg->stream_rows > 0)
        st = rt_stream_open(t->ds, &t->cols, env->rank, env->size, cfg->stream_rows,
                            (uint64_t)cfg->seed, &t->stream, &t->val, &t->ntrain, &t->nval,
                            err);
    else if (st == RT_OK) {
        st = rt_rows_load(t->ds, &t->cols, env->rank, env->size, &t->train, &t->val, err);
        t->ntrain = t->train.n;
        t->nval = t->val.n;
    }
    if (st == RT_OK)
        st = rt_job_model_spec(cfg, NULL, t->ds, &t->cols, &t->spec, err);
    if (st == RT_OK)
        st = rt_job_task(cfg, NULL, t->ds, &t->cols, &t->task, err);
    if (st == RT_OK)
        st = rt_metrics_init(&t->vm, &t->task, err);
    t->class_weights = t->spec.weighted || t->spec.class_weighted;
    rt_monitor_init(&t->mon, t->task.monitor, t->task.monitor_max);
    return st;
}

/* The data-parallel model on its device, with its threads (and why so
 * many: threads_why). */
static rt_status create_model(trainer *t, rt_device *dev, char *threads_why, size_t len, char *err)
{
    const rt_job_cfg *cfg = t->cfg;
    const rt_trainer_env *env = t->env;
    rt_status st = pick_device(t, dev, err);
    snprintf(threads_why, len, "[model] threads");
    const char *machine = getenv(RT_ENV_MACHINE_RANKS); /* the agent's, when hosts share CPUs */
    const char *slots = getenv(RT_ENV_NODE_SLOTS);      /* the agent's slots */
    int threads = cfg->threads > 0
                      ? (int)cfg->threads
                      : rt_default_threads(env->local_size, machine ? atoi(machine) : 0,
                                           slots ? atoi(slots) : 0, threads_why, len);
    rt_dp_opts o;
    rt_dp_opts_defaults(&o);
    o.device = *dev;
    o.threads = threads;
    o.tf32 = cfg->tf32;
    o.bf16 = cfg->precision == RT_PREC_BF16;
    o.sync_batch_norm = cfg->sync_batch_norm;
    o.bucket_bytes = (size_t)cfg->bucket_bytes;
    o.allreduce_bf16 = cfg->allreduce_precision == RT_PREC_BF16;
    o.max_batch = cfg->batch_size > cfg->eval_batch_size ? cfg->batch_size : cfg->eval_batch_size;
    o.nccl = rt_run_is_nccl(env->transport);
    o.timeout_us = env->collective_timeout_us;
    o.mem_share = *dev == RT_DEVICE_CPU ? env->local_size : 1;
    if (st == RT_OK)
        st = rt_dp_create(&t->spec, &o, env->size > 1 ? env->comm : NULL, &t->dp, err);
    if (st == RT_OK)
        st = rt_job_model_standardize(rt_dp_model(t->dp), t->ds, &t->cols, err);
    return st;
}

/* The store (a folder, or its mirror of a prefix in S3), the trace, the
 * checkpoints' paths. */
static rt_status open_store(trainer *t, char *err)
{
    const rt_job_cfg *cfg = t->cfg;
    const rt_trainer_env *env = t->env;
    rt_status st = store_open(&t->store, cfg->store, env->rank, env->rank == 0, err);
    if (st != RT_OK) {
        rt_err_prefix(err, "[output] store");
        return st;
    }
    const char *sdir = t->store.dir;
    if (cfg->trace) { /* every rank writes its own timeline into the store */
        char dir[1200];
        snprintf(dir, sizeof dir, "%s/trace", sdir);
        snprintf(t->path_trace, sizeof t->path_trace, "%s/rank-%d.json", dir, env->rank);
        if ((st = rt_mkdirs(dir, err)) != RT_OK ||
            (st = rt_trace_create((size_t)cfg->trace_spans, env->rank, &t->trace, err)) != RT_OK)
            return st;
        rt_dp_set_trace(t->dp, t->trace);
    }
    snprintf(t->path_last, sizeof t->path_last, "%s/last.ckpt", sdir);
    snprintf(t->path_best, sizeof t->path_best, "%s/best.ckpt", sdir);
    return RT_OK;
}

/* A warning of the job's: in the rank's log, and to the coordinator as a
 * progress line of kind "warning", which it shows as the job's event
 * (`ringtrain status`, the dashboard) — a job submitted where the CLI
 * could not read the dataset would say it in the log alone. */
static void warn(const rt_trainer_env *env, const char *text)
{
    fprintf(env->log, "trainer: warning: %s\n", text);
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, RT_P_KIND, "warning");
    rt_jw_kstr(&w, "text", text);
    rt_jw_obj_end(&w);
    char *line = rt_jw_take(&w, NULL);
    if (line)
        rt_report_progress(line);
    free(line);
}

/* Rank 0's first line: the ranks, rows, steps, parameters, optimizer and
 * where it runs (device, threads and why, GEMM kernel, precision); then
 * the classes' weights when they are weighted. */
static void log_start(const trainer *t, rt_device dev, const char *threads_why)
{
    const rt_job_cfg *cfg = t->cfg;
    const rt_trainer_env *env = t->env;
    char where[600], stream[96] = "";
    if (t->stream)
        snprintf(stream, sizeof stream, ", training rows read %lld at a time",
                 (long long)cfg->stream_rows);
    rt_kctx *kc = rt_model_kctx(rt_dp_model(t->dp));
    if (dev == RT_DEVICE_CUDA) {
        char name[160];
        snprintf(where, sizeof where, "%s, gradients %s%s", rt_cuda_device_name(name, sizeof name),
                 rt_dp_gradient_path(t->dp), cfg->tf32 && !rt_kctx_bf16(kc) ? ", TF32" : "");
    } else {
        snprintf(where, sizeof where, "CPU, %d thread%s (%s), GEMM kernel %s", rt_kctx_threads(kc),
                 rt_kctx_threads(kc) == 1 ? "" : "s", threads_why,
                 rt_kctx_bf16(kc) ? rt_cpu_bf16_kernel() : rt_cpu_gemm_kernel());
    }
    if (cfg->precision == RT_PREC_BF16) /* what ran, where bf16 was asked for */
        snprintf(where + strlen(where), sizeof where - strlen(where), ", %s",
                 rt_kctx_bf16(kc) ? "precision bf16 (GEMM inputs; FP32 sums)"
                 : dev == RT_DEVICE_CUDA
                     ? "precision fp32: this GPU has no bf16 tensor cores (sm_80 on)"
                     : "precision fp32: this CPU has no AVX512_BF16");
    char opt[32];
    rt_cfg_enum_name(&rt_job_schema, "train", "optimizer", cfg->optimizer, opt, sizeof opt);
    fprintf(env->log,
            "trainer: %d rank%s, %lld training + %lld validation rows on rank 0, %lld steps "
            "of %lld rows per epoch, %lld parameters, %d gradient bucket%s%s%s%s; %s learning "
            "rate %g%s, epsilon %g%s; %s\n",
            env->size, env->size == 1 ? "" : "s", (long long)t->ntrain, (long long)t->nval,
            (long long)t->steps, (long long)cfg->batch_size,
            (long long)rt_model_num_params(rt_dp_model(t->dp)), rt_dp_buckets(t->dp),
            rt_dp_buckets(t->dp) == 1 ? "" : "s",
            cfg->allreduce_precision == RT_PREC_BF16 && env->size > 1 ? " allreduced in bf16" : "",
            cfg->sync_batch_norm && env->size > 1 ? ", synchronized batch norm" : "", stream, opt,
            (double)t->hp.lr, cfg->scale_lr ? " (scaled by the ranks)" : "", (double)t->hp.eps,
            cfg->epsilon > 0 ? "" : " (the family's default)", where);
    char lag[400];
    if (rt_model_batch_norms(rt_dp_model(t->dp)) > 0 &&
        rt_model_bn_lag(t->spec.bn_momentum, (int64_t)cfg->epochs * t->steps, lag, sizeof lag))
        warn(env, lag);
    if (t->task.class_weighted) { /* the weights each class's rows are given */
        fprintf(env->log, "trainer: class weights:");
        for (int k = 0; k < t->task.nclasses; k++)
            fprintf(env->log, "%s %s %.4g", k ? "," : "", t->task.classes[k],
                    (double)t->task.class_weight[k]);
        fprintf(env->log, "\n");
    }
}

static rt_status setup(trainer *t, char *err)
{
    const rt_job_cfg *cfg = t->cfg;
    const rt_trainer_env *env = t->env;
    rt_device dev = RT_DEVICE_CPU;
    char threads_why[300];
    rt_status st = load_data(t, err);
    if (st == RT_OK)
        st = create_model(t, &dev, threads_why, sizeof threads_why, err);
    if (st == RT_OK)
        st = open_store(t, err);
    if (st != RT_OK)
        return st;
    /* steps per epoch: enough for the rank with the most rows */
    int64_t most = t->ntrain;
    if (env->size > 1 && (st = rt_allreduce(env->comm, &most, 1, RT_C_I64, RT_MAX)) != RT_OK)
        return rt_err(err, st, "%s", rt_comm_last_error(env->comm));
    if (most == 0)
        return rt_err(err, RT_ERR_INVALID, "%s has no training rows", cfg->dataset);
    if (t->ntrain == 0)
        return rt_err(err, RT_ERR_INVALID, "rank %d has no training rows (its partitions of %s "
                                           "hold only validation rows)", env->rank, cfg->dataset);
    t->steps = cfg->steps_per_epoch > 0 ? cfg->steps_per_epoch
                                        : (most + cfg->batch_size - 1) / cfg->batch_size;
    t->hp = (rt_adam_hp){.lr = (float)(cfg->learning_rate * (cfg->scale_lr ? env->size : 1)),
                         .beta1 = (float)cfg->beta1,
                         .beta2 = (float)cfg->beta2,
                         .eps = (float)rt_job_epsilon(cfg),
                         .grad_scale = 1.0f,
                         .kind = cfg->optimizer,
                         .weight_decay = (float)cfg->weight_decay,
                         .momentum = (float)cfg->momentum,
                         .nesterov = cfg->nesterov,
                         .clip_norm = (float)cfg->clip_norm};
    if (env->rank == 0 && env->log)
        log_start(t, dev, threads_why);
    return resume_or_start(t, err);
}

/* ---- one epoch ------------------------------------------------------------------------ */

typedef struct epoch_stats {
    double loss, val_loss, l2, seconds, samples_per_s; /* loss: the rows' mean, l2 apart */
    double metric[RT_METRIC_COUNT]; /* the task's metrics (t->task.metric) on validation */
    int64_t val_rows;
    /* who held the others up: the rank that waited least for the last
     * bucket, and the most any rank waited, per step */
    int slowest_rank;
    double wait_min_ms, wait_max_ms;
} epoch_stats;

/* Rank 0's progress: where the epoch is, how fast, and the mean loss of
 * its rows so far this epoch (the model's running sums; "mae", the mean
 * absolute error of the default loss, by its first name: the dashboard
 * draws it step by step). */
static void report_step(trainer *t, int64_t epoch, int64_t step, double rate)
{
    char buf[360], loss[48] = "";
    double m[RT_MODEL_NMETRICS];
    char err[RT_ERR_LEN];
    if (rt_model_metrics_read(rt_dp_model(t->dp), m, err) == RT_OK && m[1] > 0 && isfinite(m[0]))
        snprintf(loss, sizeof loss, ",\"" RT_P_LOSS "\":%.6g", m[0] / m[1]);
    snprintf(buf, sizeof buf,
             "{\"" RT_P_KIND "\":\"step\",\"epoch\":%lld,\"epochs\":%lld,\"step\":%lld,"
             "\"steps\":%lld,\"" RT_P_STEPS_PER_S "\":%.3f%s}",
             (long long)epoch, (long long)t->cfg->epochs, (long long)step, (long long)t->steps,
             rate, loss);
    rt_report_progress(buf);
}

/* Weighted rows: the loss of the step is divided by the weight of every
 * rank's batch (one allreduce of a double), so that ranks whose rows weigh
 * more count for more, as one process with the global batch would. */
static rt_status loss_norm(trainer *t, const float *blabel, int64_t B, char *err)
{
    const rt_model_spec *s = &t->spec; /* the kernel's row weights, on the host */
    const rt_loss_desc d = {.kind = s->loss,
                            .K = s->n_out,
                            .huber_delta = s->huber_delta,
                            .smoothing = s->label_smoothing,
                            .class_w = s->class_weighted ? s->class_weight : NULL};
    double w = rt_loss_weight(&d, blabel, s->weighted ? blabel + B : NULL, B);
    rt_status st = RT_OK;
    if (t->env->size > 1 && (st = rt_allreduce(t->env->comm, &w, 1, RT_C_F64, RT_SUM)) != RT_OK)
        return rt_err(err, st, "%s", rt_comm_last_error(t->env->comm));
    /* the gradients are summed over the ranks, then divided by size */
    /* every row weighs 0: 0 leaves the kernel its batch's weight, which is 0 too (no step) */
    t->hp.loss_norm = w > 0 ? (float)((double)t->env->size / w) : 0.0f;
    return RT_OK;
}

static rt_status run_epoch(trainer *t, int64_t epoch, int64_t *perm, int32_t *bcat, float *bcont,
                           float *blabel, int64_t *idx, epoch_stats *es, char *err)
{
    const int64_t B = t->cfg->batch_size, n = t->train.n;
    rt_status st = RT_OK;
    if (t->stream)
        st = rt_stream_epoch(t->stream, epoch, err);
    else
        rt_shuffle(perm, n, (uint64_t)t->cfg->seed, epoch, t->env->rank);
    double t0 = rt_now_s(), last_report = t0;
    for (int64_t k = 0; k < t->steps && st == RT_OK; k++) {
        const int64_t g0 = t->trace ? rt_now_ns() : 0;
        if (t->stream) {
            if ((st = rt_stream_batch(t->stream, B, bcat, bcont, blabel,
                                      t->spec.weighted ? blabel + B : NULL, err)) != RT_OK)
                break;
        } else {
            for (int64_t b = 0; b < B; b++) /* wrap around the shuffled rows */
                idx[b] = perm[(k * B + b) % n];
            rt_rows_gather(&t->train, idx, B, bcat, bcont, blabel,
                           t->spec.weighted ? blabel + B : NULL);
        }
        if (t->trace)
            rt_trace_span(t->trace, RT_SPAN_DATA, g0, rt_now_ns(), (epoch - 1) * t->steps + k, 0);
        t->hp.lr = (float)rt_lr_at(t->cfg, t->env->size, t->steps, epoch, k, t->mon.lr_factor);
        if (t->class_weights && (st = loss_norm(t, blabel, B, err)) != RT_OK)
            break;
        st = rt_dp_step(t->dp, bcat, bcont, blabel, B, &t->hp, err);
        double now = rt_now_s();
        /* every progress_every, and the epoch's last step (its curve ends there) */
        if (t->env->rank == 0 &&
            (now - last_report >= (double)t->cfg->progress_every_us / 1e6 || k + 1 == t->steps)) {
            report_step(t, epoch, k + 1, (double)(k + 1) / (now - t0));
            last_report = now;
        }
    }
    if (st != RT_OK)
        return st;
    double m[RT_MODEL_NMETRICS];
    if ((st = rt_dp_metrics_allreduce(t->dp, m, err)) != RT_OK)
        return st;
    es->loss = m[1] > 0 ? m[0] / m[1] : NAN;
    es->seconds = rt_now_s() - t0;
    rt_dp_trace_flush(t->dp); /* the GPU steps' last spans (and waits) */
    /* the straggler: every rank's wait for its last bucket, per step */
    double waits[4096];
    es->slowest_rank = -1;
    if (t->env->size > 1 && t->env->size <= 4096) {
        double mine = rt_dp_wait_seconds(t->dp) * 1e3 / (double)t->steps;
        if ((st = rt_dp_allgather_f64(t->dp, mine, waits, err)) != RT_OK)
            return st;
        es->slowest_rank = 0;
        es->wait_max_ms = waits[0];
        for (int r = 1; r < t->env->size; r++) {
            if (waits[r] < waits[es->slowest_rank])
                es->slowest_rank = r;
            if (waits[r] > es->wait_max_ms)
                es->wait_max_ms = waits[r];
        }
        es->wait_min_ms = waits[es->slowest_rank];
    }
    const int64_t e0 = t->trace ? rt_now_ns() : 0;
    es->samples_per_s = (double)(t->steps * B * t->env->size) / es->seconds;
    /* epoch end: the ranks' batch-norm statistics agree, then validation */
    if ((st = rt_dp_sync_buffers(t->dp, err)) != RT_OK)
        return st;
    rt_metrics *vm = &t->vm;
    rt_metrics_reset(vm);
    if (t->stream && (st = rt_stream_validate(t->stream, t->dp, vm, err)) != RT_OK)
        return st;
    if ((st = rt_eval_rows(t->dp, &t->val, vm, err)) != RT_OK)
        return st;
    if ((st = rt_dp_metrics_allreduce(t->dp, m, err)) != RT_OK)
        return st;
    for (int i = 0; i < t->task.nmetrics; i++)
        es->metric[i] = NAN;
    if ((st = rt_metrics_reduce(vm, t->env->comm, t->env->size, es->metric, err)) != RT_OK)
        return st;
    es->val_rows = (int64_t)m[1];
    es->val_loss = m[1] > 0 ? m[0] / m[1] : NAN;
    if (t->trace) {
        rt_trace_span(t->trace, RT_SPAN_EVAL, e0, rt_now_ns(), epoch * t->steps, 0);
        char name[64];
        snprintf(name, sizeof name, "trace/rank-%d.json", t->env->rank);
        if ((st = rt_trace_write(t->trace, t->path_trace, err)) != RT_OK ||
            (st = store_sync(&t->store, name, err)) != RT_OK)
            return st;
    }
    return rt_model_l2_penalty(rt_dp_model(t->dp), &es->l2, err);
}

/* The value of metric k this epoch. */
static double metric_value(const trainer *t, const epoch_stats *es, int k)
{
    for (int i = 0; i < t->task.nmetrics; i++)
        if (t->task.metric[i] == k)
            return es->metric[i];
    return NAN;
}

/* Rank 0 after an epoch: history, checkpoints, progress, a log line. */
static rt_status after_epoch(trainer *t, int64_t epoch, const epoch_stats *es, char *err)
{
    double loss = es->loss + es->l2;
    /* no validation rows: no val_loss (null in the history), and the
     * training loss picks the best model */
    double val_loss = es->val_rows > 0 ? es->val_loss + es->l2 : NAN;
    /* [train] monitor: what "best" means (the checkpoint keeps its best value) */
    const rt_task_info *tk = &t->task;
    double mon = val_loss;
    if (!strcmp(tk->monitor, RT_P_LOSS) || es->val_rows == 0)
        mon = loss;
    else if (tk->monitor_metric >= 0)
        mon = metric_value(t, es, tk->monitor_metric);
    const bool best = rt_monitor_update(&t->mon, t->cfg, epoch, mon);
    rt_jw w; /* non-finite numbers (no validation rows) are written as null */
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, RT_P_KIND, "epoch");
    rt_jw_kint(&w, "epoch", epoch);
    rt_jw_kint(&w, "epochs", t->cfg->epochs);
    rt_jw_kint(&w, "step", t->steps);
    rt_jw_kint(&w, "steps", t->steps);
    rt_jw_knum(&w, RT_P_LOSS, loss);
    rt_jw_knum(&w, "l2", es->l2);
    rt_jw_knum(&w, RT_P_VAL_LOSS, val_loss);
    for (int i = 0; i < tk->nmetrics; i++) {
        const int k = tk->metric[i];
        char key[48];
        snprintf(key, sizeof key, RT_P_VAL_PREFIX "%s", rt_metric_names[k]);
        rt_jw_knum(&w, key, es->val_rows > 0 ? es->metric[i] : NAN);
    }
    if (t->cfg->lr_schedule == RT_LR_PLATEAU)
        rt_jw_knum(&w, "lr", (double)(float)rt_lr_at(t->cfg, t->env->size, t->steps, epoch + 1,
                                                     0, t->mon.lr_factor));
    if (t->mon.stop)
        rt_jw_kstr(&w, "stopped", t->mon.why);
    rt_jw_knum(&w, "seconds", es->seconds);
    rt_jw_knum(&w, RT_P_SAMPLES_PER_S, es->samples_per_s);
    rt_jw_knum(&w, RT_P_STEPS_PER_S, (double)t->steps / es->seconds);
    rt_jw_kint(&w, "world_size", t->env->size);
    if (es->slowest_rank >= 0) { /* the others waited this long for it, per step */
        rt_jw_kint(&w, "slowest_rank", es->slowest_rank);
        rt_jw_knum(&w, "wait_ms_per_step_min", es->wait_min_ms);
        rt_jw_knum(&w, "wait_ms_per_step_max", es->wait_max_ms);
    }
    rt_jw_kint(&w, "attempt", t->env->attempt);
    rt_jw_kbool(&w, "best", best);
    rt_jw_obj_end(&w);
    char *line = rt_jw_take(&w, NULL);
    if (!line)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    /* S3: the history rewritten whole, then the checkpoints (last after best) */
    rt_status st = store_history_append(&t->store, line, err);
    if (st == RT_OK && t->cfg->checkpoint != RT_CKPT_NONE) {
        rt_ckpt ck = {0};
        st = rt_ckpt_from_model(&ck, rt_dp_model(t->dp), err);
        ck.epoch = epoch;
        ck.world_size = t->env->size;
        ck.best_val_loss = t->mon.best;
        snprintf(ck.monitor, sizeof ck.monitor, "%s", t->mon.name);
        ck.best_epoch = t->mon.best_epoch;
        ck.lr_factor = t->mon.lr_factor;
        ck.plateau_wait = t->mon.plateau_wait;
        ck.plateau_best = t->mon.plateau_best;
        ck.max_label = t->ds->max_label;
        snprintf(ck.label_transform, sizeof ck.label_transform, "%s", t->ds->label_transform);
        snprintf(ck.label, sizeof ck.label, "%s", t->cols.label);
        ck.label_mean = t->ds->label_mean;
        ck.label_lo = t->ds->label_lo;
        ck.label_hi = t->ds->label_hi;
        ck.label_std = t->ds->label_std;
        ck.classes = t->task.classes; /* lent */
        ck.n_cont = t->cols.ncont;
        if (st == RT_OK && t->cols.ncat > 0 &&
            !(ck.values = calloc((size_t)t->cols.ncat, sizeof *ck.values)))
            st = rt_err(err, RT_ERR_NOMEM, "out of memory");
        for (int i = 0; ck.values && i < t->cols.ncat; i++) { /* lent: the categories' values */
            const rt_ds_column *dc = rt_dataset_column(t->ds, t->cols.cat[i]);
            ck.values[i] = dc ? dc->vocab : NULL;
        }
        ck.cont_names = t->cols.cont; /* lent */
        rt_ckpt_bytes b;
        if (st == RT_OK && (st = rt_ckpt_encode(&ck, &b, t->path_last, err)) == RT_OK) {
            if (best && t->cfg->checkpoint == RT_CKPT_BEST)
                st = store_write(&t->store, "best.ckpt", b.iov, RT_CKPT_PIECES, err);
            if (st == RT_OK)
                st = store_write(&t->store, "last.ckpt", b.iov, RT_CKPT_PIECES, err);
            rt_ckpt_bytes_free(&b);
        }
        rt_ckpt_free(&ck);
    }
    rt_report_progress(line);
    free(line);
    if (t->env->log) {
        char shown[200] = "";
        for (int i = 0, n = 0; i < tk->nmetrics && i < 4; i++)
            n += snprintf(shown + n, sizeof shown - (size_t)n, " val_%s %.4f",
                          rt_metric_names[tk->metric[i]], es->metric[i]);
        char vl[40] = " (no validation rows)";
        if (es->val_rows > 0)
            snprintf(vl, sizeof vl, " val_loss %.4f", val_loss);
        fprintf(t->env->log, "epoch %lld/%lld: loss %.4f%s%s (%.0f samples/s, %.1f s)%s\n",
                (long long)epoch, (long long)t->cfg->epochs, loss, vl,
                es->val_rows > 0 ? shown : "", es->samples_per_s, es->seconds, best ? " *" : "");
        if (t->mon.stop)
            fprintf(t->env->log, "trainer: %s\n", t->mon.why);
        if (es->slowest_rank >= 0 && es->wait_max_ms - es->wait_min_ms > 1.0)
            fprintf(t->env->log,
                    "epoch %lld: rank %d was the slowest: the others waited up to %.1f ms a step "
                    "for it (it waited %.1f)\n",
                    (long long)epoch, es->slowest_rank, es->wait_max_ms, es->wait_min_ms);
        fflush(t->env->log);
    }
    return st;
}

rt_status rt_train(const rt_job_cfg *cfg, const rt_trainer_env *env, rt_train_result *res,
                   char *err)
{
    memset(res, 0, sizeof *res);
    trainer t = {.cfg = cfg, .env = env};
    rt_status st = setup(&t, err);
    const int64_t B = cfg->batch_size;
    int64_t *perm = malloc((size_t)(t.train.n ? t.train.n : 1) * sizeof *perm);
    int64_t *idx = malloc((size_t)B * sizeof *idx);
    int32_t *bcat = malloc((size_t)B * (size_t)(t.cols.ncat ? t.cols.ncat : 1) * 4);
    float *bcont = malloc((size_t)B * (size_t)(t.cols.ncont ? t.cols.ncont : 1) * 4);
    float *blabel = malloc((size_t)B * 8); /* the labels, then the weights */
    if (st == RT_OK && (!perm || !idx || !bcat || !bcont || !blabel))
        st = rt_err(err, RT_ERR_NOMEM, "out of memory for the batches");
    res->first_epoch = t.start_epoch;
    double samples = 0, seconds = 0;
    if (st == RT_OK && env->rank == 0 && env->log && t.start_epoch > cfg->epochs)
        fprintf(env->log,
                "trainer: %s already holds all %lld epochs this job asks for (its last.ckpt is "
                "after epoch %lld): nothing left to train, only the predictions are written "
                "again; for a new training use another store, `resume = never`, or more "
                "epochs\n",
                cfg->store, (long long)cfg->epochs, (long long)(t.start_epoch - 1));
    else if (st == RT_OK && env->rank == 0 && env->log && t.start_epoch > 1)
        fprintf(env->log, "trainer: resumed from %s after epoch %lld\n", t.path_last,
                (long long)(t.start_epoch - 1));
    for (int64_t e = t.start_epoch; st == RT_OK && e <= cfg->epochs; e++) {
        epoch_stats es;
        if ((st = run_epoch(&t, e, perm, bcat, bcont, blabel, idx, &es, err)) != RT_OK)
            break;
        if (env->rank == 0) /* the history, the checkpoints and the best epoch are rank 0's */
            st = after_epoch(&t, e, &es, err);
        /* rank 0's decisions for every rank: stop early, the plateau's rate */
        if (st == RT_OK && (st = rt_monitor_agree(&t.mon, env->comm, env->size, err)) != RT_OK)
            break;
        samples += es.samples_per_s * es.seconds;
        seconds += es.seconds;
        res->epochs = e;
        if (t.mon.stop)
            break;
    }
    res->best_val_loss = t.mon.best;
    res->best_epoch = t.mon.best_epoch;
    res->samples_per_s = seconds > 0 ? samples / seconds : 0;
    if (st == RT_OK)
        st = trainer_predict_end(&t, res, err);
    free(perm);
    free(idx);
    free(bcat);
    free(bcont);
    free(blabel);
    rt_dp_destroy(t.dp);
    rt_trace_destroy(t.trace);
    rt_rows_free(&t.train);
    rt_rows_free(&t.val);
    rt_columns_free(&t.cols);
    rt_stream_close(t.stream);
    rt_metrics_free(&t.vm);
    rt_dataset_free(t.ds);
    store_close(&t.store);
    return st;
}
