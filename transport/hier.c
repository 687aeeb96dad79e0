/* hier.c — the two-level communicator behind the hierarchical allreduce
 * (rt_comm.h; the allreduce itself is in ring.c).
 *
 * Set-up, a collective over the job's ring c: each rank opens two listening
 * sockets — one on 127.0.0.1 for its host's shared-memory communicator (whose
 * TCP links carry set-up and aborts), one on the address the job already
 * reaches it at for the ring across hosts — and the ranks allgather their
 * place (local rank, ranks per host) and the two addresses over c, which is
 * authenticated.  Every rank then takes the same decision from the same
 * table: a grid of H >= 2 hosts of L >= 2 contiguous ranks builds both
 * communicators, anything else keeps the flat ring.  The new communicators
 * use the job's key with their own connection identity (job id salted), so
 * no connection can be taken for another's, and name the job's ranks in
 * every message (rt_comm_opts.global_ranks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_addr.h"
#include "rt_log.h"
#include "rt_proto.h"
#include "rt_transport.h"

typedef struct hier_rec {
    int32_t local_rank, local_size, ok;
    char local_addr[64];
    char cross_addr[160];
} hier_rec;

/* Open this rank's two listening sockets; false (logged) when it cannot. */
static bool open_listeners(rt_comm *c, hier_rec *me, int fd[2])
{
    char host[256], e[RT_ERR_LEN], *a = NULL;
    int port;
    rt_status st = rt_listen_tcp("127.0.0.1", 0, &fd[0], &a, e);
    if (st == RT_OK && strlen(a) >= sizeof me->local_addr)
        st = rt_err(e, RT_ERR_INVALID, "address %s is too long", a);
    if (st == RT_OK)
        snprintf(me->local_addr, sizeof me->local_addr, "%s", a);
    free(a);
    a = NULL;
    if (st == RT_OK)
        st = rt_addr_parse(c->peers[c->rank], true, host, sizeof host, &port, e);
    if (st == RT_OK)
        st = rt_listen_tcp(host, 0, &fd[1], &a, e);
    if (st == RT_OK && strlen(a) >= sizeof me->cross_addr)
        st = rt_err(e, RT_ERR_INVALID, "address %s is too long", a);
    if (st == RT_OK)
        snprintf(me->cross_addr, sizeof me->cross_addr, "%s", a);
    free(a);
    if (st != RT_OK)
        RT_WARN("comm", "rank %d: no hierarchical allreduce: %s", c->rank, e);
    return st == RT_OK;
}

/* Why the table is not a grid of contiguous hosts of L ranks, or NULL. */
static const char *not_a_grid(const rt_comm *c, const hier_rec *all, char *why, size_t len)
{
    const int L = all[0].local_size;
    if (L < 2)
        return "one rank per host";
    if (c->size % L != 0 || c->size / L < 2)
        return "every rank is on one host";
    for (int r = 0; r < c->size; r++) {
        if (all[r].local_size != L) {
            snprintf(why, len, "hosts run different numbers of ranks (%d and %d)", L,
                     all[r].local_size);
            return why;
        }
        if (all[r].local_rank != r % L) {
            snprintf(why, len, "rank %d is local rank %d of its host, not %d", r,
                     all[r].local_rank, r % L);
            return why;
        }
        if (!all[r].ok) {
            snprintf(why, len, "rank %d could not open its sockets (its log says why)", r);
            return why;
        }
    }
    return NULL;
}

/* One of the two communicators: the ranks first + k * stride, k < n. */
static rt_status make_sub(rt_comm *c, const hier_rec *all, bool local, int first, int stride,
                          int n, int fd, rt_comm **out, char *err)
{
    const char **peers = calloc((size_t)n, sizeof *peers);
    int *granks = calloc((size_t)n, sizeof *granks);
    if (!peers || !granks) {
        free(peers);
        free(granks);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; k < n; k++) {
        granks[k] = first + k * stride;
        peers[k] = local ? all[granks[k]].local_addr : all[granks[k]].cross_addr;
    }
    rt_comm_opts o = c->o;
    o.transport = local ? RT_TRANSPORT_SHM : c->o.transport;
    o.rank = (c->rank - first) / stride;
    o.size = n;
    o.peers = peers;
    o.listen_fd = fd;
    o.job_id = c->o.job_id ^ (local ? RT_HIER_SALT_LOCAL : RT_HIER_SALT_CROSS);
    o.global_ranks = granks;
    rt_status st = rt_comm_create(&o, out, err);
    if (st != RT_OK)
        rt_err_prefix(err, "hierarchical allreduce: the ring %s", local ? "within this host"
                                                                         : "across hosts");
    free(peers);
    free(granks);
    return st;
}

rt_status rt_comm_hierarchy(rt_comm *c, int local_rank, int local_size, char *err)
{
    if (c->broken)
        return rt_err(err, RT_ERR_BROKEN, "%s", c->err);
    if (c->size == 1 || c->cross)
        return RT_OK;
    hier_rec *all = calloc((size_t)c->size, sizeof *all);
    if (!all)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    const bool netted = c->o.transport == RT_TRANSPORT_TCP || c->o.transport == RT_TRANSPORT_RDMA;
    hier_rec me = {.local_rank = local_rank, .local_size = local_size};
    int fd[2] = {-1, -1};
    /* sockets only where this rank's own view can be part of a grid */
    if (netted && local_size > 1 && local_size < c->size && c->size % local_size == 0 &&
        local_rank == c->rank % local_size)
        me.ok = open_listeners(c, &me, fd);
    rt_status st = rt_allgather(c, &me, all, sizeof me);
    char whybuf[160];
    const char *why = st != RT_OK ? NULL
                      : !netted   ? "the job's ring is not over the network"
                                  : not_a_grid(c, all, whybuf, sizeof whybuf);
    const int L = all[0].local_size;
    if (st != RT_OK) {
        rt_err(err, st, "%s", c->err);
    } else if (!why) {
        st = make_sub(c, all, true, c->rank - c->rank % L, 1, L, fd[0], &c->local, err);
        if (st == RT_OK)
            st = make_sub(c, all, false, c->rank % L, L, c->size / L, fd[1], &c->cross, err);
        if (st != RT_OK) {
            rt_comm_destroy(c->local);
            c->local = NULL;
        }
    }
    free(all);
    if (st == RT_OK && !why) {
        c->sub_fd[0] = fd[0];
        c->sub_fd[1] = fd[1];
        if (c->rank == 0)
            RT_INFO("comm", "hierarchical allreduce: %d hosts x %d ranks (shm within a host, "
                            "%s across hosts)", c->size / L, L, c->cross->ops->name);
        return RT_OK;
    }
    for (int i = 0; i < 2; i++)
        if (fd[i] >= 0)
            close(fd[i]);
    if (why && c->rank == 0 && netted)
        RT_INFO("comm", "flat allreduce: %s", why);
    return st;
}

int rt_comm_hierarchy_local_size(const rt_comm *c) { return c->local ? c->local->size : 0; }
