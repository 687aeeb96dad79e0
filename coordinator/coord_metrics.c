/* coord_metrics.c — GET /metrics: the cluster, the queue and each running
 * rank (CPU, memory and, where the agent has NVML, GPU) in Prometheus's text
 * exposition format, from the scheduler's state in memory and the job counts
 * in the database. */
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <string.h>

#include "coord.h"

/* A label value as Prometheus's text format wants it: \, " and newline escaped. */
static const char *prom_label(const char *in, char *out, size_t len)
{
    size_t k = 0;
    for (; *in && k + 3 < len; in++) {
        if (*in == '\\' || *in == '"' || *in == '\n')
            out[k++] = '\\';
        out[k++] = *in == '\n' ? 'n' : *in;
    }
    out[k] = '\0';
    return out;
}

/* The latest epoch's loss and validation metrics of each running job
 * (val_loss, val_accuracy, val_auc, ...: what the job computes). */
static void epoch_metrics(coord *co, struct evbuffer *b)
{
    evbuffer_add_printf(b, "# HELP ringtrain_job_epoch_metric A running job's loss and validation "
                           "metrics after its latest epoch.\n"
                           "# TYPE ringtrain_job_epoch_metric gauge\n");
    for (sc_job *j = co->S.jobs; j; j = j->next) {
        rt_json *e = NULL;
        char err[RT_ERR_LEN], name[140];
        if (j->state != JOB_RUNNING || !j->last_epoch ||
            rt_json_parse(j->last_epoch, strlen(j->last_epoch), &e, err) != RT_OK)
            continue;
        for (size_t i = 0; i < rt_json_len(e); i++) {
            const char *k = rt_json_key_at(e, i);
            const rt_json *v = rt_json_value_at(e, i);
            if (rt_json_type_of(v) == RT_JSON_NUMBER &&
                (!strcmp(k, RT_P_LOSS) || !strncmp(k, RT_P_VAL_PREFIX, 4)))
                evbuffer_add_printf(b, "ringtrain_job_epoch_metric{job=\"%lld\",metric=\"%s\"} %.9g\n",
                                    (long long)j->id, prom_label(k, name, sizeof name),
                                    rt_json_num(v, 0));
        }
        rt_json_free(e);
    }
}

/* Per rank of the running jobs only: as many series as busy slots. */
static void rank_metrics(coord *co, struct evbuffer *b)
{
    char host[520];
    static const char *const help[4] = {
        "# HELP ringtrain_rank_cpu_seconds_total CPU time of a running rank's processes.\n"
        "# TYPE ringtrain_rank_cpu_seconds_total counter\n",
        "# HELP ringtrain_rank_rss_bytes Resident memory of a running rank's processes.\n"
        "# TYPE ringtrain_rank_rss_bytes gauge\n",
        "# HELP ringtrain_rank_gpu_utilization SM utilisation of a running rank's GPU processes, "
        "percent (NVML).\n# TYPE ringtrain_rank_gpu_utilization gauge\n",
        "# HELP ringtrain_rank_gpu_memory_bytes GPU memory of a running rank's processes (NVML).\n"
        "# TYPE ringtrain_rank_gpu_memory_bytes gauge\n"};
    static const char *const name[4] = {"ringtrain_rank_cpu_seconds_total",
                                        "ringtrain_rank_rss_bytes",
                                        "ringtrain_rank_gpu_utilization",
                                        "ringtrain_rank_gpu_memory_bytes"};
    for (int k = 0; k < 4; k++) {
        bool any = false; /* the GPU series only where some rank reports them */
        for (sc_job *j = co->S.jobs; j; j = j->next)
            for (int r = 0; j->state == JOB_RUNNING && r < j->cur_np; r++) {
                const sc_rank *s = &j->ranks[r];
                if (!s->usage_ns || s->state != RS_RUNNING || (k >= 2 && s->gpu_util < 0))
                    continue;
                if (!any)
                    evbuffer_add_printf(b, "%s", help[k]);
                any = true;
                double v = k == 0 ? s->cpu_s
                           : k == 1 ? (double)s->rss_bytes
                           : k == 2 ? (double)s->gpu_util
                                    : (double)s->gpu_mem_bytes;
                evbuffer_add_printf(b, "%s{job=\"%lld\",rank=\"%d\",host=\"%s\"} %.*f\n",
                                    name[k], (long long)j->id, r,
                                    prom_label(s->hostname, host, sizeof host), k == 0 ? 3 : 0, v);
            }
        if (!any && k < 2)
            evbuffer_add_printf(b, "%s", help[k]);
    }
}

void http_metrics(coord *co, struct evhttp_request *req)
{
    int up = 0, known = 0, slots = 0, used = 0, draining = 0;
    for (sc_agent *a = co->S.agents; a; a = a->next) {
        known++;
        if (a->up) {
            up++;
            slots += a->slots;
            used += a->used;
            draining += a->draining;
        }
    }
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b,
                        "# HELP ringtrain_agents_up Agents connected to the coordinator.\n"
                        "# TYPE ringtrain_agents_up gauge\nringtrain_agents_up %d\n"
                        "# HELP ringtrain_agents_known Agents ever registered.\n"
                        "# TYPE ringtrain_agents_known gauge\nringtrain_agents_known %d\n"
                        "# HELP ringtrain_agents_draining Connected agents taking no new ranks.\n"
                        "# TYPE ringtrain_agents_draining gauge\nringtrain_agents_draining %d\n"
                        "# HELP ringtrain_slots Slots of connected agents.\n"
                        "# TYPE ringtrain_slots gauge\nringtrain_slots{state=\"free\"} %d\n"
                        "ringtrain_slots{state=\"used\"} %d\n",
                        up, known, draining, slots - used, used);
    int counts[JOB_CANCELLED + 1];
    cdb_job_counts(co, counts);
    evbuffer_add_printf(b, "# HELP ringtrain_jobs Jobs by state.\n# TYPE ringtrain_jobs gauge\n");
    for (int s = 0; s <= JOB_CANCELLED; s++)
        evbuffer_add_printf(b, "ringtrain_jobs{state=\"%s\"} %d\n", job_state_name(s), counts[s]);
    evbuffer_add_printf(b, "# HELP ringtrain_job_steps_per_second Training steps per second.\n"
                           "# TYPE ringtrain_job_steps_per_second gauge\n");
    for (sc_job *j = co->S.jobs; j; j = j->next)
        if (j->state == JOB_RUNNING)
            evbuffer_add_printf(b, "ringtrain_job_steps_per_second{job=\"%lld\"} %.3f\n",
                                (long long)j->id, j->steps_per_s);
    evbuffer_add_printf(b, "# HELP ringtrain_sweep_trials A sweep's trials by state (sweeps in "
                           "memory: unfinished, or ended in the last minute).\n"
                           "# TYPE ringtrain_sweep_trials gauge\n");
    for (sc_job *j = co->S.jobs; j; j = j->next) {
        if (j->type != RT_JOB_SWEEP || !j->sweep)
            continue;
        int by[TRIAL_CANCELLED + 1] = {0};
        for (int64_t i = 0; i < j->sweep->ntrials; i++)
            by[j->sweep->t[i].state]++;
        for (int s = 0; s <= TRIAL_CANCELLED; s++)
            evbuffer_add_printf(b, "ringtrain_sweep_trials{sweep=\"%lld\",state=\"%s\"} %d\n",
                                (long long)j->id, trial_state_name(s), by[s]);
    }
    epoch_metrics(co, b);
    rank_metrics(co, b);
    evbuffer_add_printf(b,
                        "# HELP ringtrain_rejected_connections_total Control connections "
                        "refused (TLS, token, frames).\n"
                        "# TYPE ringtrain_rejected_connections_total counter\n"
                        "ringtrain_rejected_connections_total %lld\n"
                        "# HELP ringtrain_db_errors_total Failed writes to the state database.\n"
                        "# TYPE ringtrain_db_errors_total counter\n"
                        "ringtrain_db_errors_total %lld\n",
                        (long long)co->rejected_connections, (long long)co->db_errors);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4");
    evhttp_send_reply(req, 200, NULL, b);
    evbuffer_free(b);
}
