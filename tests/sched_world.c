/* sched_world.c — see sched_world.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sched_world.h"

#include "rt_run.h"

/* Key bytes the tests can predict. */
static void fake_random(uint8_t *out, size_t len)
{
    static uint8_t c;
    for (size_t i = 0; i < len; i++)
        out[i] = c++;
}

void world_init(world *w)
{
    memset(w, 0, sizeof *w);
    sc_config cfg = {.prepare_timeout_us = 30000000,
                     .reconcile_timeout_us = 60000000,
                     .default_max_restarts = 0,
                     .default_queue_timeout_us = 0,
                     .random = fake_random};
    sched_init(&w->S, &cfg);
    w->now = (sc_clock){.mono_ns = 1000000000LL, .wall = 1.7e9};
}

rt_json *parse(const char *text)
{
    rt_json *j = NULL;
    char err[RT_ERR_LEN];
    if (rt_json_parse(text, strlen(text), &j, err) != RT_OK)
        fail_msg("bad JSON in the test: %s: %s", err, text);
    return j;
}

/* Run the actions as the core would, with every agent answering at once:
 * prepare -> prepared (addresses), start -> started.  Repeats until quiet. */
void settle(world *w)
{
    for (int round = 0; round < 100; round++) {
        int n;
        const sc_action *acts = sched_actions(&w->S, &n);
        if (n == 0)
            return;
        /* copy the frames out: answering appends new actions */
        char **frames = calloc((size_t)n, sizeof *frames);
        char (*agents)[SC_KEY_LEN] = calloc((size_t)n, SC_KEY_LEN);
        int nf = 0;
        for (int i = 0; i < n; i++) {
            if (acts[i].kind == SC_SAVE_JOB)
                w->saved_jobs++;
            if (acts[i].kind != SC_SEND)
                continue;
            frames[nf] = strdup(acts[i].text);
            snprintf(agents[nf++], SC_KEY_LEN, "%s", acts[i].agent);
        }
        sched_actions_clear(&w->S);
        for (int i = 0; i < nf; i++) {
            rt_json *m = parse(frames[i]);
            sc_agent *a = sched_agent(&w->S, agents[i]);
            char err[RT_ERR_LEN];
            rt_msg t = rt_msg_check(m, RT_TO_AGENT, err);
            if (t == RT_MSG_COUNT) {
                fail_msg("the scheduler sent a bad frame (%s): %s", err, frames[i]);
                continue;
            }
            w->sent[t]++;
            if (t == RT_MSG_PREPARE && a && a->up) {
                char buf[8192];
                int64_t job = 0, att = 0;
                rt_json_get_int(m, RT_F_JOB, &job);
                rt_json_get_int(m, RT_F_ATTEMPT, &att);
                int len = snprintf(buf, sizeof buf,
                                   "{\"type\":\"prepared\",\"job\":%lld,\"attempt\":%lld,\"ranks\":[",
                                   (long long)job, (long long)att);
                const rt_json *rk = rt_json_get(m, RT_F_RANKS);
                for (size_t k = 0; k < rt_json_len(rk) && len < 8000; k++) {
                    int64_t r = 0;
                    rt_json_get_int(rt_json_at(rk, k), RT_F_RANK, &r);
                    len += snprintf(buf + len, sizeof buf - (size_t)len,
                                    "%s{\"rank\":%lld,\"addr\":\"127.0.0.1:%lld\"}", k ? "," : "",
                                    (long long)r, 20000 + (long long)r);
                }
                snprintf(buf + len, sizeof buf - (size_t)len, "]}");
                rt_json *p = parse(buf);
                sched_on_prepared(&w->S, a, p, w->now);
                rt_json_free(p);
            } else if (t == RT_MSG_START && a && a->up) {
                int64_t job = 0, att = 0, size = 0;
                rt_json_get_int(m, RT_F_JOB, &job);
                rt_json_get_int(m, RT_F_ATTEMPT, &att);
                rt_json_get_int(m, RT_F_SIZE, &size);
                rt_run_settings rs;
                rt_run_defaults(&rs);
                char rerr[RT_ERR_LEN];
                if (rt_run_read_json(m, &rs, rerr) != RT_OK)
                    fail_msg("the start frame's ring settings: %s", rerr);
                snprintf(w->transport, sizeof w->transport, "%s", rs.transport);
                w->mem_limit = -1;
                rt_json_get_int(m, RT_F_MEMORY_LIMIT, &w->mem_limit);
                w->cpu_limit = rt_json_num(rt_json_get(m, RT_F_CPU_LIMIT), -1);
                w->sockets = rs.sockets;
                w->collective_timeout_ms = rs.collective_timeout_ms;
                w->encrypt = rs.encrypt;
                sc_job *j = sched_job(&w->S, job);
                for (int r = 0; j && r < j->cur_np; r++) {
                    if (j->ranks[r].ag != a)
                        continue;
                    char buf[256];
                    snprintf(buf, sizeof buf,
                             "{\"type\":\"started\",\"job\":%lld,\"attempt\":%lld,\"rank\":%d,"
                             "\"pid\":%d}",
                             (long long)job, (long long)att, r, 1000 + r);
                    rt_json *s = parse(buf);
                    sched_on_started(&w->S, a, s, w->now);
                    rt_json_free(s);
                }
            }
            rt_json_free(m);
            free(frames[i]);
        }
        free(frames);
        free(agents);
    }
    fail_msg("the scheduler did not settle");
}

static sc_agent *hello(world *w, const char *host, const char *name, int slots, const char *running,
                       const char *caps, const char *machine)
{
    char buf[4096], err[RT_ERR_LEN];
    snprintf(
        buf, sizeof buf,
        "{\"type\":\"hello\",\"token\":\"t\",\"proto\":%d,\"version\":\"x\",\"host_id\":\"%s\","
        "\"name\":\"%s\",\"hostname\":\"%s-host\",\"slots\":%d,\"address\":\"127.0.0.1\","
        "\"machine\":\"%s\",\"caps\":%s,\"running\":%s,\"exited\":[]}",
        RT_PROTO_VERSION, host, name, host, slots, machine, caps, running ? running : "[]");
    rt_json *m = parse(buf);
    sc_agent *a = sched_agent_up(&w->S, m, w->now, err);
    rt_json_free(m);
    if (!a)
        fail_msg("agent %s/%s refused: %s", host, name, err);
    settle(w);
    return a;
}

sc_agent *agent_hello(world *w, const char *host, const char *name, int slots, const char *running,
                      const char *caps)
{
    return hello(w, host, name, slots, running, caps, "");
}

sc_agent *agent_on_machine(world *w, const char *host, const char *name, int slots,
                           const char *machine)
{
    return hello(w, host, name, slots, NULL, "{}", machine);
}

sc_agent *agent_up_with(world *w, const char *host, const char *name, int slots,
                               const char *running)
{
    return agent_hello(w, host, name, slots, running, "{}");
}

sc_agent *agent_up(world *w, const char *host, const char *name, int slots)
{
    return agent_up_with(w, host, name, slots, NULL);
}

int64_t submit_ok(world *w, const char *extra, int np)
{
    char buf[1024], err[RT_ERR_LEN];
    snprintf(buf, sizeof buf,
             "{\"type\":\"exec\",\"name\":\"t\",\"np\":%d,\"argv\":[\"/bin/true\"]%s%s}", np,
             extra && *extra ? "," : "", extra ? extra : "");
    int64_t id = 0;
    if (sched_submit(&w->S, buf, strlen(buf), "tester", NULL, w->now, &id, err) != RT_OK)
        fail_msg("submission refused: %s", err);
    settle(w);
    return id;
}

int job_state(world *w, int64_t id)
{
    sc_job *j = sched_job(&w->S, id);
    return j ? (int)j->state : -1;
}

/* Rank r of job id's attempt att exits with code (no settle). */
static void exit_one(world *w, sc_job *j, int att, int r, int code)
{
    char buf[256];
    snprintf(buf, sizeof buf,
             "{\"type\":\"exited\",\"job\":%lld,\"attempt\":%d,\"rank\":%d,\"code\":%d,"
             "\"signal\":0,\"tail\":[]}",
             (long long)j->id, att, r, code);
    rt_json *m = parse(buf);
    sched_on_exited(&w->S, j->ranks[r].ag, m, w->now);
    rt_json_free(m);
}

void exit_rank(world *w, int64_t id, int r, int code)
{
    sc_job *j = sched_job(&w->S, id);
    assert_non_null(j);
    exit_one(w, j, j->attempt, r, code);
    settle(w);
}

/* Every rank of job id exits with code (0: success). */
void finish_job(world *w, int64_t id, int code)
{
    sc_job *j = sched_job(&w->S, id);
    assert_non_null(j);
    int att = j->attempt, np = j->cur_np;
    for (int r = 0; r < np; r++) {
        j = sched_job(&w->S, id);
        if (j && j->ranks[r].state != RS_EXITED)
            exit_one(w, j, att, r, code);
    }
    settle(w);
}

void tick(world *w, double seconds)
{
    w->now.mono_ns += (int64_t)(seconds * 1e9);
    w->now.wall += seconds;
    sched_tick(&w->S, w->now);
    settle(w);
}

void world_free(world *w)
{
    sched_free(&w->S);
}
