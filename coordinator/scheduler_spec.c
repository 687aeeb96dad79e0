/* scheduler_spec.c — a submission as the scheduler holds it: the job's
 * configuration parsed by the job schema (config/rt_schemas.c) into
 * j->cfg, once, whether it came as the job file's text ("config", what the
 * CLI sends for every job) or as the JSON fields an API client (or a job
 * stored before the CLI sent "config" for exec jobs) gives.  Those fields are
 * [job] keys by another name: their values go through the same schema, so
 * bounds, units and defaults are written in one place. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_proto.h"
#include "rt_run.h"
#include "rt_schemas.h"
#include "scheduler.h"
#include "scheduler_impl.h"

enum unit { U_INT, U_MS, U_NUM, U_BOOL, U_STR };

/* The JSON name of each [job] key a submission may give without "config"
 * (and the ring's settings, rt_run_fields). */
static const struct {
    const char *field, *key;
    enum unit unit;
} FIELDS[] = {
    {.field = "name", .key = "job.name", .unit = U_STR},
    {.field = "np", .key = "job.np", .unit = U_INT},
    {.field = "min_np", .key = "job.min_np", .unit = U_INT},
    {.field = "max_restarts", .key = "job.max_restarts", .unit = U_INT},
    {.field = "priority", .key = "job.priority", .unit = U_INT},
    {.field = "queue_timeout_ms", .key = "job.queue_timeout", .unit = U_MS},
    {.field = "deadline_ms", .key = "job.deadline", .unit = U_MS},
    {.field = RT_F_MEMORY_LIMIT, .key = "job.memory_limit", .unit = U_INT},
    {.field = RT_F_CPU_LIMIT, .key = "job.cpu_limit", .unit = U_NUM},
    {.field = RT_F_DISK_LIMIT, .key = "job.disk_limit", .unit = U_INT},
};

/* The JSON value as the text rt_cfg_set parses; false when its JSON type
 * is not the field's. */
static bool field_text(const rt_json *v, enum unit u, char *buf, size_t len)
{
    int64_t i;
    switch (u) {
    case U_INT:
    case U_MS:
        if (!rt_json_int(v, &i))
            return false;
        snprintf(buf, len, "%lld%s", (long long)i, u == U_MS ? "ms" : "");
        return true;
    case U_NUM:
        if (rt_json_type_of(v) != RT_JSON_NUMBER)
            return false;
        snprintf(buf, len, "%.17g", rt_json_num(v, 0));
        return true;
    case U_BOOL:
        if (rt_json_type_of(v) != RT_JSON_BOOL)
            return false;
        snprintf(buf, len, "%s", rt_json_bool(v, false) ? "true" : "false");
        return true;
    case U_STR:
        if (!rt_json_str(v, NULL))
            return false;
        snprintf(buf, len, "%s", rt_json_str(v, ""));
        return true;
    }
    return false;
}

static const char *const UNIT_NAME[] = {"an integer", "an integer (milliseconds)", "a number",
                                        "true or false", "a string"};

/* A submission without "config": the schema's defaults (the coordinator's
 * for max_restarts and queue_timeout), then each field through the schema. */
static rt_status cfg_from_fields(const sched *S, const rt_json *s, const char *type, rt_job_cfg *c,
                                 char *err)
{
    rt_cfg_init(&rt_job_schema, c);
    rt_cfg_errors e = {0};
    char buf[4096];
    rt_cfg_set(&rt_job_schema, c, "job.type", type, &e);
    rt_cfg_set(&rt_job_schema, c, "job.name", type, &e);
    c->max_restarts = S->cfg.default_max_restarts;
    c->queue_timeout_us = S->cfg.default_queue_timeout_us;
    /* the [job] keys above, then the ring's settings (their names: rt_run.h) */
    static const enum unit RUN_UNIT[] = {
        [RT_RUN_TEXT] = U_STR, [RT_RUN_INT] = U_INT, [RT_RUN_MS] = U_MS, [RT_RUN_BOOL] = U_BOOL};
    const size_t nf = RT_ARRAY_LEN(FIELDS);
    for (size_t f = 0; f < nf + rt_run_nfields; f++) {
        const char *field = f < nf ? FIELDS[f].field : rt_run_fields[f - nf].json,
                   *key = f < nf ? FIELDS[f].key : rt_run_fields[f - nf].key;
        const enum unit unit = f < nf ? FIELDS[f].unit : RUN_UNIT[rt_run_fields[f - nf].kind];
        const rt_json *v = rt_json_get(s, field);
        if (!v)
            continue;
        if (!field_text(v, unit, buf, sizeof buf))
            return rt_err(err, RT_ERR_INVALID, "\"%s\" must be %s", field, UNIT_NAME[unit]);
        if (rt_cfg_set(&rt_job_schema, c, key, buf, &e) != RT_OK) {
            char all[RT_ERR_LEN];
            rt_cfg_errors_join(&e, all, sizeof all);
            rt_cfg_errors_free(&e);
            return rt_err(err, RT_ERR_INVALID, "\"%s\" (%s): %s", field, key, all);
        }
    }
    rt_cfg_errors_free(&e);
    if (!rt_json_get(s, "np"))
        return rt_err(err, RT_ERR_INVALID, "\"np\" must be given (or the job's \"config\")");
    return RT_OK;
}

static rt_status exec_fields(const rt_json *s, char *err)
{
    const rt_json *argv = rt_json_get(s, RT_F_ARGV);
    if (rt_json_len(argv) == 0 || rt_json_type_of(argv) != RT_JSON_ARRAY)
        return rt_err(err, RT_ERR_INVALID, "an exec job needs a non-empty \"argv\" array");
    for (size_t i = 0; i < rt_json_len(argv); i++)
        if (!rt_json_str(rt_json_at(argv, i), NULL))
            return rt_err(err, RT_ERR_INVALID, "\"argv\" must hold strings");
    const rt_json *env = rt_json_get(s, RT_F_ENV);
    if (env && rt_json_type_of(env) != RT_JSON_OBJECT)
        return rt_err(err, RT_ERR_INVALID, "\"env\" must be an object of strings");
    for (size_t i = 0; i < rt_json_len(env); i++)
        if (!rt_json_str(rt_json_value_at(env, i), NULL))
            return rt_err(err, RT_ERR_INVALID, "\"env\" must be an object of strings");
    const rt_json *cwd = rt_json_get(s, RT_F_CWD);
    if (cwd && (!rt_json_str(cwd, NULL) || rt_json_str(cwd, "")[0] != '/'))
        return rt_err(err, RT_ERR_INVALID, "\"cwd\" must be an absolute path");
    return RT_OK;
}

rt_status sc_parse_spec(const sched *S, sc_job *j, const rt_json *s, char *err)
{
    if (rt_json_type_of(s) != RT_JSON_OBJECT)
        return rt_err(err, RT_ERR_INVALID, "a job is a JSON object");
    const char *type = rt_json_get_str(s, RT_F_TYPE), *cfg = rt_json_get_str(s, RT_F_CONFIG);
    if (!type ||
        (strcmp(type, "exec") != 0 && strcmp(type, "train") != 0 && strcmp(type, "sweep") != 0))
        return rt_err(err, RT_ERR_INVALID, "\"type\" must be \"exec\", \"train\" or \"sweep\"");
    j->type = !strcmp(type, "exec")    ? RT_JOB_EXEC
              : !strcmp(type, "sweep") ? RT_JOB_SWEEP
                                       : RT_JOB_TRAIN;
    if (j->type != RT_JOB_EXEC && !cfg)
        return rt_err(err, RT_ERR_INVALID, "a %s job needs its \"config\" text", type);
    /* a sweep's trial or last step (the coordinator's own submissions) */
    int64_t sweep = 0, trial = -1;
    if (rt_json_get(s, RT_F_SWEEP) &&
        (!rt_json_get_int(s, RT_F_SWEEP, &sweep) || sweep < 1 ||
         !rt_json_get_int(s, RT_F_TRIAL, &trial) || trial < 0 || trial > 100000))
        return rt_err(err, RT_ERR_INVALID,
                      "\"sweep\" and \"trial\" must be a job id and a "
                      "trial number");
    j->sweep_id = sweep;
    j->trial = trial > 0 ? (int)trial : 0;
    rt_cfg_free(&rt_job_schema, &j->cfg);
    rt_status st = RT_OK;
    if (cfg) {
        rt_cfg_errors e = {0};
        if (rt_cfg_load_string(&rt_job_schema, cfg, strlen(cfg), "job", NULL, &j->cfg, &e) !=
            RT_OK) {
            char all[RT_ERR_LEN];
            rt_cfg_errors_join(&e, all, sizeof all);
            st = rt_err(err, RT_ERR_INVALID, "%s", all);
        }
        rt_cfg_errors_free(&e);
        /* the type given and the file's agree; a sweep's last step is the
         * sweep's file run by one rank as a training job */
        const bool last_step =
            j->sweep_id && j->trial == 0 && j->type == RT_JOB_TRAIN && j->cfg.type == RT_JOB_SWEEP;
        if (st == RT_OK && j->cfg.type != (int)j->type && !last_step) {
            char ct[16];
            st =
                rt_err(err, RT_ERR_INVALID, "\"type\" is %s but its config says type = %s", type,
                       rt_cfg_enum_name(&rt_job_schema, "job", "type", j->cfg.type, ct, sizeof ct));
        }
    } else {
        st = cfg_from_fields(S, s, type, &j->cfg, err);
    }
    if (st == RT_OK && j->type == RT_JOB_EXEC)
        st = exec_fields(s, err);
    if (st == RT_OK && j->cfg.min_np > j->cfg.np)
        st = rt_err(err, RT_ERR_INVALID, "min_np (%lld) must be at most np (%lld)",
                    (long long)j->cfg.min_np, (long long)j->cfg.np);
    if (st != RT_OK)
        return st;
    const rt_job_cfg *c = &j->cfg;
    j->np = (int)c->np;
    j->min_np = (int)c->min_np;
    j->max_restarts = (int)c->max_restarts;
    j->priority = (int)c->priority;
    j->queue_timeout_us = c->queue_timeout_us;
    j->deadline_us = c->deadline_us;
    j->need_mem = c->memory_limit > 0;
    j->need_cpu = c->cpu_limit > 0;
    snprintf(j->name, sizeof j->name, "%s", c->name ? c->name : type);
    return RT_OK;
}
