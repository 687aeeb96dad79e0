/* rt_run.c — a job's ring settings, their one list (see rt_run.h). */
#include "rt_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define F(key, json, env, kind, field, lo, hi)                         \
    {                                                                  \
        key, json, env, kind, offsetof(rt_run_settings, field), lo, hi \
    }
const rt_run_field rt_run_fields[] = {
    F("job.transport", "transport", "RINGTRAIN_TRANSPORT", RT_RUN_TEXT, transport, 0, 0),
    F("job.sockets", "sockets", "RINGTRAIN_SOCKETS", RT_RUN_INT, sockets, 1, RT_RUN_SOCKETS_MAX),
    F("job.collective_timeout", "collective_timeout_ms", "RINGTRAIN_TIMEOUT", RT_RUN_MS,
      collective_timeout_ms, 1, INT64_MAX / 1000000),
    F("job.encrypt", "encrypt", "RINGTRAIN_ENCRYPT", RT_RUN_BOOL, encrypt, 0, 1),
    F("job.integrity", "integrity", "RINGTRAIN_INTEGRITY", RT_RUN_BOOL, integrity, 0, 1),
    F("job.hierarchical", "hierarchical", "RINGTRAIN_HIERARCHICAL", RT_RUN_BOOL, hierarchical, 0,
      1),
};
#undef F
const size_t rt_run_nfields = sizeof rt_run_fields / sizeof *rt_run_fields;

static void *at(rt_run_settings *s, const rt_run_field *f) { return (char *)s + f->offset; }
static const void *cat(const rt_run_settings *s, const rt_run_field *f)
{
    return (const char *)s + f->offset;
}

void rt_run_defaults(rt_run_settings *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->transport, sizeof s->transport, "tcp");
    s->sockets = RT_RUN_SOCKETS;
    s->collective_timeout_ms = RT_RUN_TIMEOUT_S * 1000;
    s->integrity = true;
    s->hierarchical = true;
}

void rt_run_write_json(const rt_run_settings *s, rt_jw *w)
{
    for (size_t i = 0; i < rt_run_nfields; i++) {
        const rt_run_field *f = &rt_run_fields[i];
        switch (f->kind) {
        case RT_RUN_TEXT:
            rt_jw_kstr(w, f->json, cat(s, f));
            break;
        case RT_RUN_INT:
        case RT_RUN_MS:
            rt_jw_kint(w, f->json, *(const int64_t *)cat(s, f));
            break;
        default:
            rt_jw_kbool(w, f->json, *(const bool *)cat(s, f));
        }
    }
}

static bool transport_ok(const char *t)
{
    const char *c = RT_RUN_TRANSPORTS;
    size_t n = strlen(t);
    for (const char *p = c; n > 0 && (p = strstr(p, t)); p++)
        if ((p == c || p[-1] == '|') && (p[n] == '|' || p[n] == '\0'))
            return true;
    return false;
}

rt_status rt_run_read_json(const rt_json *o, rt_run_settings *s, char *err)
{
    for (size_t i = 0; i < rt_run_nfields; i++) {
        const rt_run_field *f = &rt_run_fields[i];
        const rt_json *v = rt_json_get(o, f->json);
        if (!v)
            continue;
        int64_t x = 0;
        switch (f->kind) {
        case RT_RUN_TEXT:
            if (!rt_json_str(v, NULL) || !transport_ok(rt_json_str(v, "")))
                return rt_err(err, RT_ERR_INVALID, "\"%s\" is not tcp, shm, rdma, nccl or auto",
                              f->json);
            snprintf(at(s, f), sizeof s->transport, "%s", rt_json_str(v, ""));
            break;
        case RT_RUN_INT:
        case RT_RUN_MS:
            if (!rt_json_int(v, &x) || x < f->lo || x > f->hi)
                return rt_err(err, RT_ERR_INVALID, "\"%s\" is not a number from %lld to %lld",
                              f->json, (long long)f->lo, (long long)f->hi);
            *(int64_t *)at(s, f) = x;
            break;
        default:
            if (rt_json_type_of(v) != RT_JSON_BOOL)
                return rt_err(err, RT_ERR_INVALID, "\"%s\" is not true or false", f->json);
            *(bool *)at(s, f) = rt_json_bool(v, false);
        }
    }
    return RT_OK;
}

void rt_run_setenv(const rt_run_settings *s)
{
    char v[64];
    for (size_t i = 0; i < rt_run_nfields; i++) {
        const rt_run_field *f = &rt_run_fields[i];
        switch (f->kind) {
        case RT_RUN_TEXT:
            snprintf(v, sizeof v, "%s", (const char *)cat(s, f));
            break;
        case RT_RUN_INT:
            snprintf(v, sizeof v, "%lld", (long long)*(const int64_t *)cat(s, f));
            break;
        case RT_RUN_MS: /* whole seconds, rounded up */
            snprintf(v, sizeof v, "%lld", (long long)((*(const int64_t *)cat(s, f) + 999) / 1000));
            break;
        default:
            snprintf(v, sizeof v, "%d", *(const bool *)cat(s, f) ? 1 : 0);
        }
        setenv(f->env, v, 1);
    }
}

rt_status rt_run_getenv(rt_run_settings *s, char *err)
{
    for (size_t i = 0; i < rt_run_nfields; i++) {
        const rt_run_field *f = &rt_run_fields[i];
        const char *v = getenv(f->env);
        if (!v || !*v)
            continue;
        char *end = NULL;
        errno = 0;
        long long x = f->kind == RT_RUN_TEXT ? 0 : strtoll(v, &end, 10);
        switch (f->kind) {
        case RT_RUN_TEXT:
            if (!transport_ok(v))
                return rt_err(err, RT_ERR_INVALID, "%s is '%s': tcp, shm, rdma, nccl or auto",
                              f->env, v);
            snprintf(at(s, f), sizeof s->transport, "%s", v);
            break;
        case RT_RUN_INT:
        case RT_RUN_MS: {
            const int64_t lo = f->kind == RT_RUN_MS ? 1 : f->lo,
                          hi = f->kind == RT_RUN_MS ? 86400 : f->hi; /* seconds */
            if (*end || errno || x < lo || x > hi)
                return rt_err(err, RT_ERR_INVALID, "%s is '%s': a number from %lld to %lld%s",
                              f->env, v, (long long)lo, (long long)hi,
                              f->kind == RT_RUN_MS ? " (seconds)" : "");
            *(int64_t *)at(s, f) = f->kind == RT_RUN_MS ? x * 1000 : x;
            break;
        }
        default: {
            const bool yes = !strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"),
                       no = !strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no");
            if (!yes && !no)
                return rt_err(err, RT_ERR_INVALID, "%s is '%s': 1 or 0 (true/false, yes/no)",
                              f->env, v);
            *(bool *)at(s, f) = yes;
        }
        }
    }
    return RT_OK;
}

const char *rt_run_resolve_transport(const char *want, bool all_gpu_nccl, bool one_host, int np,
                                     bool all_rdma)
{
    if (strcmp(want, "auto") != 0)
        return want;
    return all_gpu_nccl ? "nccl" : one_host && np > 1 ? "shm" : all_rdma ? "rdma" : "tcp";
}

bool rt_run_is_nccl(const char *transport) { return transport && !strcmp(transport, "nccl"); }
