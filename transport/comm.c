/* comm.c — communicator life cycle: option checks, buffer planning, connect
 * through the chosen transport, failure recording and teardown. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_run.h"
#include "rt_addr.h"
#include "rt_log.h"
#include "ghash.h"
#include "rt_transport.h"

void rt_comm_opts_defaults(rt_comm_opts *o)
{
    memset(o, 0, sizeof *o);
    o->rank = 0;
    o->size = 1;
    o->transport = RT_TRANSPORT_TCP;
    o->listen_fd = -1;
    o->sockets = 1;
    o->max_segment_bytes = 512u << 10;
    o->small_bytes = 64u << 10;
    o->connect_timeout_us = RT_RUN_TIMEOUT_S * 1000000LL;
    o->timeout_us = RT_RUN_TIMEOUT_S * 1000000LL;
    o->spin_us = 50;
    o->yield_us = 0;
    o->integrity = true;
    o->socket_buffer = 0;
}

size_t rt_ctype_size(rt_ctype t)
{
    switch (t) {
    case RT_C_F32:
    case RT_C_I32:
        return 4;
    case RT_C_F64:
    case RT_C_I64:
        return 8;
    case RT_C_BF16:
        return 2;
    }
    return 0;
}

void rt_split(size_t total, size_t parts, size_t i, size_t *off, size_t *len)
{
    RT_ASSERT(parts > 0 && i < parts);
    /* the first total % parts parts get one extra element */
    size_t q = total / parts, r = total % parts;
    *off = i * q + (i < r ? i : r);
    *len = q + (i < r ? 1 : 0);
}

int rt_comm_grank(const rt_comm *c, int r)
{
    return c->granks && r >= 0 && r < c->size ? c->granks[r] : r;
}

const char *rt_comm_peer_name(const rt_comm *c, int rank, char *buf, size_t len)
{
    if (rank < 0 || rank >= c->size)
        snprintf(buf, len, "an unknown rank");
    else if (c->peers && c->peers[rank])
        snprintf(buf, len, "rank %d (%s)", rt_comm_grank(c, rank), c->peers[rank]);
    else
        snprintf(buf, len, "rank %d", rt_comm_grank(c, rank));
    return buf;
}

rt_status rt_comm_fail(rt_comm *c, rt_status st, int culprit, const char *fmt, ...)
{
    if (c->broken)
        return c->broken_st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    c->broken = true;
    c->broken_st = st;
    RT_ERROR("comm", "rank %d: %s", rt_comm_grank(c, c->rank), c->err);
    rt_abort_info *info = &c->abort_out;
    *info = (rt_abort_info){.origin = rt_comm_grank(c, c->rank),
                            .culprit = culprit >= 0 ? rt_comm_grank(c, culprit) : -1,
                            .status = st};
    size_t rl = strnlen(c->err, RT_ABORT_REASON_MAX); /* truncation is fine on the wire */
    memcpy(info->reason, c->err, rl);
    info->reason[rl] = '\0';
    if (c->connected && c->ops && c->ops->abort)
        c->ops->abort(c, info);
    return st;
}

rt_status rt_comm_fail_forward(rt_comm *c, const rt_abort_info *a)
{
    if (c->broken)
        return c->broken_st;
    rt_status st = a->status < 0 ? (rt_status)a->status : RT_ERR_ABORTED;
    snprintf(c->err, sizeof c->err, "%s (reported by rank %d)", a->reason, a->origin);
    c->broken = true;
    c->broken_st = st;
    c->abort_out = *a;
    RT_ERROR("comm", "rank %d: %s", rt_comm_grank(c, c->rank), c->err);
    if (c->connected && c->ops && c->ops->abort)
        c->ops->abort(c, a);
    return st;
}

void rt_comm_fail_like(rt_comm *c, const rt_comm *from)
{
    if (c->broken || !from->broken)
        return;
    memcpy(c->err, from->err, sizeof c->err);
    c->broken = true;
    c->broken_st = from->broken_st;
    c->abort_out = from->abort_out;
    if (c->connected && c->ops && c->ops->abort)
        c->ops->abort(c, &c->abort_out);
}

static rt_status check_opts(const rt_comm_opts *o, char *err)
{
    if (o->size < 1 || o->size > 65536)
        return rt_err(err, RT_ERR_INVALID, "world size %d is out of range [1, 65536]", o->size);
    if (o->rank < 0 || o->rank >= o->size)
        return rt_err(err, RT_ERR_INVALID, "rank %d is out of range [0, %d)", o->rank, o->size);
    if (o->sockets < 1 || o->sockets > 16)
        return rt_err(err, RT_ERR_INVALID, "sockets per neighbour %d is out of range [1, 16]",
                      o->sockets);
    if (o->max_segment_bytes < 4096 || o->max_segment_bytes > RT_FRAME_MAX_LEN / 2)
        return rt_err(err, RT_ERR_INVALID, "max_segment_bytes %zu is out of range [4K, 32M]",
                      o->max_segment_bytes);
    if (o->small_bytes > o->max_segment_bytes)
        return rt_err(err, RT_ERR_INVALID, "small_bytes %zu exceeds max_segment_bytes %zu",
                      o->small_bytes, o->max_segment_bytes);
    if (o->timeout_us <= 0 || o->connect_timeout_us <= 0)
        return rt_err(err, RT_ERR_INVALID, "timeouts must be positive");
    switch (o->transport) {
    case RT_TRANSPORT_LOOPBACK:
        if (!o->world)
            return rt_err(err, RT_ERR_INVALID, "the loopback transport needs a world");
        break;
    case RT_TRANSPORT_TCP:
    case RT_TRANSPORT_RDMA:
    case RT_TRANSPORT_SHM:
        if (o->size > 1 && !o->peers)
            return rt_err(err, RT_ERR_INVALID, "the %s transport needs the peer addresses",
                          o->transport == RT_TRANSPORT_TCP    ? "tcp"
                          : o->transport == RT_TRANSPORT_SHM ? "shm"
                                                              : "rdma");
        for (int i = 0; o->size > 1 && i < o->size; i++) {
            char host[256];
            int port;
            if (rt_addr_parse(o->peers[i], i == o->rank, host, sizeof host, &port, err) != RT_OK) {
                rt_err_prefix(err, "peer address of rank %d", i);
                return RT_ERR_INVALID;
            }
        }
        break;
    default:
        return rt_err(err, RT_ERR_INVALID, "unknown transport %d", (int)o->transport);
    }
#ifndef RT_HAVE_IBVERBS
    if (o->transport == RT_TRANSPORT_RDMA)
        return rt_err(err, RT_ERR_UNSUPPORTED, "this build has no RDMA (libibverbs) support");
#endif
    return RT_OK;
}

rt_status rt_comm_create(const rt_comm_opts *o, rt_comm **out, char *err)
{
    *out = NULL;
    rt_status st = check_opts(o, err);
    if (st != RT_OK)
        return st;
    rt_comm *c = calloc(1, sizeof *c);
    if (!c)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    c->o = *o;
    c->o.peers = NULL;
    c->o.global_ranks = NULL;
    c->rank = o->rank;
    c->size = o->size;
    c->left = (o->rank + o->size - 1) % o->size;
    c->right = (o->rank + 1) % o->size;
    c->timeout_us = o->timeout_us;
    c->fail_culprit = -1;
    c->sub_fd[0] = c->sub_fd[1] = -1;
    c->adopted_fd = -1;
    switch (o->transport) {
    case RT_TRANSPORT_LOOPBACK: c->ops = &rt_loopback_ops; break;
    case RT_TRANSPORT_SHM: c->ops = &rt_shm_ops; break;
#ifdef RT_HAVE_IBVERBS
    case RT_TRANSPORT_RDMA: c->ops = &rt_verbs_ops; break;
#endif
    default: c->ops = &rt_tcp_ops; break;
    }
    if (o->peers) {
        c->peers = calloc((size_t)o->size, sizeof *c->peers);
        for (int i = 0; c->peers && i < o->size; i++)
            c->peers[i] = strdup(o->peers[i]);
        for (int i = 0; c->peers && i < o->size; i++)
            if (!c->peers[i])
                st = RT_ERR_NOMEM;
        if (!c->peers)
            st = RT_ERR_NOMEM;
    }
    if (st == RT_OK && o->global_ranks) {
        if ((c->granks = malloc((size_t)o->size * sizeof *c->granks)))
            memcpy(c->granks, o->global_ranks, (size_t)o->size * sizeof *c->granks);
        else
            st = RT_ERR_NOMEM;
    }
    /* every buffer the collectives will use, now */
    c->tmp_bytes = o->max_segment_bytes;
    for (int i = 0; st == RT_OK && i < RT_RING_TMP; i++)
        if (!(c->tmp[i] = aligned_alloc(64, (c->tmp_bytes + 63) & ~(size_t)63)))
            st = RT_ERR_NOMEM;
    size_t small = ((size_t)o->size * (o->small_bytes ? o->small_bytes : 64) + 63) & ~(size_t)63;
    if (st == RT_OK && !(c->small = aligned_alloc(64, small)))
        st = RT_ERR_NOMEM;
    if (st != RT_OK) {
        rt_comm_destroy(c);
        return rt_err(err, st, "out of memory");
    }
    if (o->size > 1) {
        st = c->ops->connect(c, rt_deadline_in_us(o->connect_timeout_us), err);
        if (st != RT_OK) {
            rt_comm_destroy(c);
            return st;
        }
    }
    c->connected = true;
    if (c->rank == 0 && c->size > 1 && !c->granks) {
        /* once per ring, in rank 0's log, with the GHASH that tags (ghash.h) */
        const bool tagged = !strcmp(c->ops->name, "tcp") && o->integrity && !o->encrypt;
        RT_INFO("comm", "ring of %d ranks up over %s%s%s%s", c->size, c->ops->name,
                tagged ? ", frames tagged (AES-GMAC, GHASH " : "", tagged ? rt_gmac_impl() : "",
                tagged ? ")" : "");
    } else {
        RT_DEBUG("comm", "rank %d/%d connected over %s", c->rank, c->size, c->ops->name);
    }
    *out = c;
    return RT_OK;
}

void rt_comm_destroy(rt_comm *c)
{
    if (!c)
        return;
    rt_comm_destroy(c->local);
    rt_comm_destroy(c->cross);
    for (int i = 0; i < 2; i++)
        if (c->sub_fd[i] >= 0)
            close(c->sub_fd[i]);
    if (c->ops && c->size > 1)
        c->ops->close(c);
    if (c->adopted_fd >= 0)
        close(c->adopted_fd);
    for (int i = 0; c->peers && i < c->size; i++)
        free(c->peers[i]);
    free(c->peers);
    free(c->granks);
    for (int i = 0; i < RT_RING_TMP; i++)
        free(c->tmp[i]);
    free(c->small);
    rt_device_stage_free(c);
    free(c);
}

void rt_comm_adopt_listen(rt_comm *c) { c->adopted_fd = c->o.listen_fd; }

int rt_comm_rank(const rt_comm *c) { return c->rank; }
int rt_comm_size(const rt_comm *c) { return c->size; }
bool rt_comm_broken(const rt_comm *c) { return c->broken; }
const char *rt_comm_last_error(const rt_comm *c) { return c->err; }
const char *rt_comm_listen_addr(const rt_comm *c) { return c->listen_addr; }
void rt_comm_set_timeout(rt_comm *c, int64_t timeout_us) { c->timeout_us = timeout_us; }
