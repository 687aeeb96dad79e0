/* rt_status.c — status strings and error-buffer helpers (see rt_status.h). */
#include "rt_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *rt_strerror(rt_status st)
{
    switch (st) {
    case RT_OK: return "ok";
    case RT_ERR_INVALID: return "invalid argument or input";
    case RT_ERR_NOMEM: return "out of memory";
    case RT_ERR_IO: return "I/O error";
    case RT_ERR_TIMEOUT: return "timeout";
    case RT_ERR_AUTH: return "authentication failed";
    case RT_ERR_UNSUPPORTED: return "not supported";
    case RT_ERR_NOTFOUND: return "not found";
    case RT_ERR_CORRUPT: return "corrupt data";
    case RT_ERR_BROKEN: return "object is broken by an earlier error";
    case RT_ERR_ABORTED: return "aborted";
    case RT_ERR_PROTO: return "protocol error";
    case RT_ERR_DEVICE: return "device error";
    case RT_ERR_EXISTS: return "already exists";
    case RT_ERR_BUSY: return "busy";
    }
    return "unknown status";
}

rt_status rt_verr(char *err, rt_status st, const char *fmt, va_list ap)
{
    if (err)
        vsnprintf(err, RT_ERR_LEN, fmt, ap);
    return st;
}

rt_status rt_err(char *err, rt_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rt_verr(err, st, fmt, ap);
    va_end(ap);
    return st;
}

void rt_err_prefix(char *err, const char *fmt, ...)
{
    if (!err)
        return;
    char pre[RT_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t pl = strlen(pre);
    size_t ol = strnlen(err, RT_ERR_LEN - 1);
    /* result: pre ": " old, truncated to the buffer */
    if (pl + 2 >= RT_ERR_LEN) {
        memcpy(err, pre, RT_ERR_LEN - 1);
        err[RT_ERR_LEN - 1] = '\0';
        return;
    }
    size_t keep = ol < RT_ERR_LEN - 1 - pl - 2 ? ol : RT_ERR_LEN - 1 - pl - 2;
    memmove(err + pl + 2, err, keep);
    memcpy(err, pre, pl);
    err[pl] = ':';
    err[pl + 1] = ' ';
    err[pl + 2 + keep] = '\0';
}

void rt_assert_fail(const char *expr, const char *file, int line, const char *func)
{
    fprintf(stderr, "ringtrain: assertion failed: %s (%s:%d, %s)\n", expr, file, line, func);
    fflush(stderr);
    abort();
}
