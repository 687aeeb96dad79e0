/* rank_harness.c — see rank_harness.h. */
#include "rank_harness.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void rh_fail(rh_result *res, const char *file, int line, const char *fmt, ...)
{
    if (res->failed)
        return;
    res->failed = true;
    int n = snprintf(res->msg, sizeof res->msg, "%s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->msg + n, sizeof res->msg - (size_t)n, fmt, ap);
    va_end(ap);
}

void rh_listeners(int n, int *fds, char **addrs)
{
    for (int r = 0; r < n; r++) {
        char err[RT_ERR_LEN];
        if (rt_listen_tcp("127.0.0.1", 0, &fds[r], &addrs[r], err) != RT_OK) {
            fprintf(stderr, "listen: %s\n", err);
            abort();
        }
    }
}

void rh_close_listeners(int n, int *fds, char **addrs)
{
    for (int r = 0; r < n; r++) {
        close(fds[r]);
        free(addrs[r]);
    }
}

typedef struct rank_arg {
    int rank;
    rt_comm_opts o;
    rh_fn fn;
    void *arg;
    rh_result res;
} rank_arg;

static void *rank_main(void *p)
{
    rank_arg *a = p;
    char err[RT_ERR_LEN];
    rt_comm *c = NULL;
    if (rt_comm_create(&a->o, &c, err) != RT_OK) {
        rh_fail(&a->res, __FILE__, __LINE__, "rank %d: rt_comm_create: %s", a->rank, err);
        return NULL;
    }
    a->fn(c, a->rank, a->arg, &a->res);
    rt_comm_destroy(c);
    return NULL;
}

bool rh_run(int n, rt_transport_kind kind, const rt_comm_opts *tmpl, rh_fn fn, void *arg,
            rh_result *out)
{
    int fds[64];
    char *addrs[64];
    rt_loopback_world *w = NULL;
    if (kind == RT_TRANSPORT_LOOPBACK)
        rt_loopback_world_create(n, &w);
    else
        rh_listeners(n, fds, addrs);
    rank_arg *ra = calloc((size_t)n, sizeof *ra);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    for (int r = 0; r < n; r++) {
        ra[r].rank = r;
        ra[r].o = *tmpl;
        ra[r].o.rank = r;
        ra[r].o.size = n;
        ra[r].o.transport = kind;
        ra[r].o.world = w;
        ra[r].o.peers = kind == RT_TRANSPORT_LOOPBACK ? NULL : (const char *const *)addrs;
        ra[r].o.listen_fd = kind == RT_TRANSPORT_LOOPBACK ? -1 : fds[r];
        ra[r].fn = fn;
        ra[r].arg = arg;
        pthread_create(&th[r], NULL, rank_main, &ra[r]);
    }
    bool ok = true;
    for (int r = 0; r < n; r++) {
        pthread_join(th[r], NULL);
        if (ra[r].res.failed && ok) {
            *out = ra[r].res;
            ok = false;
        }
    }
    free(ra);
    free(th);
    if (w)
        rt_loopback_world_destroy(w);
    else
        rh_close_listeners(n, fds, addrs);
    return ok;
}
