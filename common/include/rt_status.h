/* rt_status.h — the one status type shared by every ringtrain module.
 *
 * Library code never exits: it returns an rt_status and, where the caller
 * passed one, writes a sentence into a char err[RT_ERR_LEN] buffer.  Broken
 * invariants (a bug, not bad input) are RT_ASSERT and abort.
 * (Model: UCC's ucc_status.h; Redis anet error buffers.) */
#ifndef RT_STATUS_H
#define RT_STATUS_H

#include <stdarg.h>
#include <stddef.h>

#include "rt_build_config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rt_status {
    RT_OK = 0,
    RT_ERR_INVALID = -1,     /* bad argument, bad input, bad config */
    RT_ERR_NOMEM = -2,       /* allocation failed */
    RT_ERR_IO = -3,          /* system call, socket or file error; peer gone */
    RT_ERR_TIMEOUT = -4,     /* a deadline passed */
    RT_ERR_AUTH = -5,        /* authentication failed */
    RT_ERR_UNSUPPORTED = -6, /* not built in, or not possible here */
    RT_ERR_NOTFOUND = -7,    /* no such file, job, key, device */
    RT_ERR_CORRUPT = -8,     /* checksum or format check failed */
    RT_ERR_BROKEN = -9,      /* object unusable after an earlier failure */
    RT_ERR_ABORTED = -10,    /* cancelled by the caller or a peer */
    RT_ERR_PROTO = -11,      /* protocol violation by a peer */
    RT_ERR_DEVICE = -12,     /* CUDA / NCCL / verbs error */
    RT_ERR_EXISTS = -13,     /* already exists / already in use */
    RT_ERR_BUSY = -14,       /* resource temporarily unavailable */
} rt_status;

/* Length of every caller-supplied error buffer. */
#define RT_ERR_LEN 512

/* Short, static description of a status ("timeout"); never NULL. */
const char *rt_strerror(rt_status st);

/* printf into err (RT_ERR_LEN bytes) when err is not NULL; returns st so a
 * failing path reads `return rt_err(err, RT_ERR_IO, "...", ...);`. */
rt_status rt_err(char *err, rt_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
rt_status rt_verr(char *err, rt_status st, const char *fmt, va_list ap);

/* Prefix an existing message in place: "ctx: <old message>". */
void rt_err_prefix(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Broken invariant: print where and abort.  Active in every build type. */
void rt_assert_fail(const char *expr, const char *file, int line, const char *func)
    __attribute__((noreturn));
#define RT_ASSERT(cond)                                                          \
    do {                                                                         \
        if (__builtin_expect(!(cond), 0))                                        \
            rt_assert_fail(#cond, __FILE__, __LINE__, __func__);                 \
    } while (0)

#define RT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#ifdef __cplusplus
}
#endif

#endif
