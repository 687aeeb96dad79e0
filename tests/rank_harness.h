/* rank_harness.h — run N ranks as threads of the test process, each with its
 * own communicator over the loopback transport or real TCP sockets on
 * 127.0.0.1.  Rank threads must not use cmocka's assert macros (they
 * longjmp on the calling thread); they report through RH_CHECK, and the
 * main thread fails the test afterwards. */
#ifndef RT_RANK_HARNESS_H
#define RT_RANK_HARNESS_H

#include <stdbool.h>

#include "rt_comm.h"

typedef struct rh_result {
    bool failed;
    char msg[512];
} rh_result;

typedef void (*rh_fn)(rt_comm *c, int rank, void *arg, rh_result *res);

/* First failure of a rank thread: record and return from the rank body. */
#define RH_CHECK(res, cond, ...)                                                                 \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            rh_fail((res), __FILE__, __LINE__, __VA_ARGS__);                                     \
            return;                                                                              \
        }                                                                                        \
    } while (0)

void rh_fail(rh_result *res, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Listening sockets on 127.0.0.1 with kernel-chosen ports; addrs[r] is
 * "127.0.0.1:port" (freed by rh_close_listeners). */
void rh_listeners(int n, int *fds, char **addrs);
void rh_close_listeners(int n, int *fds, char **addrs);

/* Run fn on n ranks over `kind` with options tmpl (rank, size, peers,
 * listen_fd and world are filled in).  Returns false (with the first
 * failure in *out) when a rank's create or body failed. */
bool rh_run(int n, rt_transport_kind kind, const rt_comm_opts *tmpl, rh_fn fn, void *arg,
            rh_result *out);

#endif
