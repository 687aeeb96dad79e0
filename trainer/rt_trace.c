/* rt_trace.c — see rt_trace.h. */
#include "rt_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_file.h"
#include "rt_json.h"
#include "rt_time.h"

typedef struct span {
    int64_t start_ns, end_ns, step;
    int32_t arg;
    uint8_t kind;
} span;

struct rt_trace {
    span *ring;
    size_t cap, next;
    int64_t recorded;
    int rank;
    int64_t origin_ns; /* the first span's start: the file's time zero */
    double origin_unix_us; /* the same moment on the wall clock: lines up the ranks' files */
};

static const char *const NAMES[RT_SPAN_COUNT] = {"data", "forward", "backward", "layer",
                                                 "allreduce", "wait", "optimizer", "eval"};

const char *rt_span_name(rt_span_kind k) { return k < RT_SPAN_COUNT ? NAMES[k] : "?"; }

rt_status rt_trace_create(size_t capacity, int rank, rt_trace **out, char *err)
{
    *out = NULL;
    if (capacity < 16 || capacity > ((size_t)1 << 26))
        return rt_err(err, RT_ERR_INVALID, "a trace holds 16 to 67108864 spans, not %zu", capacity);
    rt_trace *t = calloc(1, sizeof *t);
    if (t)
        t->ring = malloc(capacity * sizeof *t->ring);
    if (!t || !t->ring) {
        free(t);
        return rt_err(err, RT_ERR_NOMEM, "out of memory for a trace of %zu spans", capacity);
    }
    t->cap = capacity;
    t->rank = rank;
    *out = t;
    return RT_OK;
}

void rt_trace_destroy(rt_trace *t)
{
    if (!t)
        return;
    free(t->ring);
    free(t);
}

void rt_trace_span(rt_trace *t, rt_span_kind k, int64_t start_ns, int64_t end_ns, int64_t step,
                   int arg)
{
    if (!t)
        return;
    if (t->recorded == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        t->origin_ns = start_ns;
        t->origin_unix_us = (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3 -
                            (double)(rt_now_ns() - start_ns) / 1e3;
    }
    t->ring[t->next] = (span){start_ns, end_ns, step, arg, (uint8_t)k};
    t->next = (t->next + 1) % t->cap;
    t->recorded++;
}

int64_t rt_trace_recorded(const rt_trace *t) { return t ? t->recorded : 0; }

size_t rt_trace_held(const rt_trace *t)
{
    return !t ? 0 : (size_t)t->recorded < t->cap ? (size_t)t->recorded : t->cap;
}

rt_status rt_trace_write(const rt_trace *t, const char *path, char *err)
{
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, "displayTimeUnit", "ms");
    rt_jw_key(&w, "traceEvents");
    rt_jw_arr(&w);
    /* names: the rank's process and its two threads */
    const char *threads[2] = {"step", "allreduce"};
    char pname[32];
    snprintf(pname, sizeof pname, "rank %d", t->rank);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, "name", "process_name");
    rt_jw_kstr(&w, "ph", "M");
    rt_jw_kint(&w, "pid", t->rank);
    rt_jw_key(&w, "args");
    rt_jw_obj(&w);
    rt_jw_kstr(&w, "name", pname);
    rt_jw_obj_end(&w);
    rt_jw_obj_end(&w);
    for (int i = 0; i < 2; i++) {
        rt_jw_obj(&w);
        rt_jw_kstr(&w, "name", "thread_name");
        rt_jw_kstr(&w, "ph", "M");
        rt_jw_kint(&w, "pid", t->rank);
        rt_jw_kint(&w, "tid", i);
        rt_jw_key(&w, "args");
        rt_jw_obj(&w);
        rt_jw_kstr(&w, "name", threads[i]);
        rt_jw_obj_end(&w);
        rt_jw_obj_end(&w);
    }
    const size_t held = rt_trace_held(t), first = (size_t)t->recorded < t->cap ? 0 : t->next;
    for (size_t i = 0; i < held; i++) {
        const span *s = &t->ring[(first + i) % t->cap];
        rt_jw_obj(&w);
        char name[32];
        if (s->kind == RT_SPAN_LAYER || s->kind == RT_SPAN_ALLREDUCE)
            snprintf(name, sizeof name, "%s %d", NAMES[s->kind], s->arg);
        else
            snprintf(name, sizeof name, "%s", NAMES[s->kind]);
        rt_jw_kstr(&w, "name", name);
        rt_jw_kstr(&w, "cat", NAMES[s->kind]);
        rt_jw_kstr(&w, "ph", "X");
        rt_jw_knum(&w, "ts", (double)(s->start_ns - t->origin_ns) / 1e3);
        rt_jw_knum(&w, "dur", (double)(s->end_ns - s->start_ns) / 1e3);
        rt_jw_kint(&w, "pid", t->rank);
        rt_jw_kint(&w, "tid", s->kind == RT_SPAN_ALLREDUCE ? 1 : 0);
        rt_jw_key(&w, "args");
        rt_jw_obj(&w);
        rt_jw_kint(&w, "step", s->step);
        rt_jw_obj_end(&w);
        rt_jw_obj_end(&w);
    }
    rt_jw_arr_end(&w);
    rt_jw_kint(&w, "spans_recorded", t->recorded);
    rt_jw_knum(&w, "origin_unix_us", t->origin_unix_us);
    rt_jw_kint(&w, "spans_kept", (int64_t)held);
    rt_jw_obj_end(&w);
    size_t len;
    char *text = rt_jw_take(&w, &len);
    if (!text)
        return rt_err(err, RT_ERR_NOMEM, "out of memory writing %s", path);
    rt_iov part = {text, len};
    rt_status st = rt_write_atomic(path, &part, 1, err);
    free(text);
    return st;
}
