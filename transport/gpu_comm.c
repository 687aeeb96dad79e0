/* gpu_comm.c — collectives on GPU memory (CUDA builds only): the NCCL backend,
 * bootstrapped through our own ring, and the pinned-host staging path that
 * lets the TCP/RDMA transports reduce device buffers.
 *
 * NCCL is driven the way its documentation recommends for fault tolerance:
 * a non-blocking communicator (ncclCommInitRankConfig with blocking = 0),
 * every wait polls ncclCommGetAsyncError against a deadline (the
 * communicator's collective timeout), and a failed or timed-out
 * communicator is aborted — once — never finalized.  Before NCCL starts the
 * ranks agree over our ring that each has a GPU and that no two share one
 * (NCCL refuses duplicate GPUs), so a mixed or oversubscribed job gets a
 * clear error on every rank instead of a hang. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_run.h"
#include "reduce.h"
#include "rt_log.h"
#include "rt_transport.h"

#ifdef RT_HAVE_NCCL
#include <nccl.h>
#endif

/* ---- staging through pinned host memory ----------------------------------- */

#define STAGE_CHUNK (8u << 20) /* bytes per pipelined chunk */

/* Two pinned chunk buffers and their events, made on first use and kept with
 * the communicator (allocating and freeing pinned memory synchronises the
 * device, so never per call). */
typedef struct rt_stage {
    void *host[2];
    cudaEvent_t copied[2];
} rt_stage;

void rt_device_stage_free(rt_comm *c)
{
    rt_stage *s = c->stage;
    if (!s)
        return;
    for (int i = 0; i < 2; i++) {
        if (s->copied[i])
            cudaEventDestroy(s->copied[i]);
        if (s->host[i])
            cudaFreeHost(s->host[i]);
    }
    free(s);
    c->stage = NULL;
}

static rt_status stage_get(rt_comm *c, rt_stage **out, char *err)
{
    if (c->stage) {
        *out = c->stage;
        return RT_OK;
    }
    rt_stage *s = calloc(1, sizeof *s);
    if (!s)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    c->stage = s;
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < 2 && e == cudaSuccess; i++) {
        if ((e = cudaMallocHost(&s->host[i], STAGE_CHUNK)) == cudaSuccess)
            e = cudaEventCreateWithFlags(&s->copied[i], cudaEventDisableTiming);
    }
    if (e != cudaSuccess) {
        rt_device_stage_free(c);
        return rt_err(err, RT_ERR_DEVICE, "staging buffers (2 x %u MiB pinned): %s",
                      STAGE_CHUNK >> 20, cudaGetErrorString(e));
    }
    *out = s;
    return RT_OK;
}

#define CUDA_TRY(call, what)                                                         \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess && st == RT_OK)                                        \
            st = rt_err(err, RT_ERR_DEVICE, "%s: %s", what, cudaGetErrorString(e_)); \
    } while (0)

rt_status rt_allreduce_device(rt_comm *c, void *dev_buf, size_t count, rt_ctype t, rt_redop op,
                              void *cuda_stream, char *err)
{
    const size_t es = rt_ctype_size(t);
    if (es == 0)
        return rt_err(err, RT_ERR_INVALID, "unknown element type");
    if (count == 0)
        return RT_OK;
    cudaStream_t s = (cudaStream_t)cuda_stream;
    const size_t per = STAGE_CHUNK / es, nchunks = (count + per - 1) / per;
    rt_stage *sg = NULL;
    rt_status st = stage_get(c, &sg, err);
    /* chunk k uses host[k % 2]: copy k+1 out while chunk k is on the wire;
     * chunk k's copy back is queued before chunk k+2 may reuse its buffer */
    for (size_t k = 0; k < nchunks && st == RT_OK; k++) {
        if (k == 0) {
            size_t n0 = count < per ? count : per;
            CUDA_TRY(cudaMemcpyAsync(sg->host[0], dev_buf, n0 * es, cudaMemcpyDeviceToHost, s),
                     "cudaMemcpyAsync (stage out)");
            CUDA_TRY(cudaEventRecord(sg->copied[0], s), "cudaEventRecord");
        }
        if (k + 1 < nchunks) {
            size_t off = (k + 1) * per, n1 = count - off < per ? count - off : per;
            CUDA_TRY(cudaMemcpyAsync(sg->host[(k + 1) % 2], (char *)dev_buf + off * es, n1 * es,
                                     cudaMemcpyDeviceToHost, s),
                     "cudaMemcpyAsync (stage out)");
            CUDA_TRY(cudaEventRecord(sg->copied[(k + 1) % 2], s), "cudaEventRecord");
        }
        CUDA_TRY(cudaEventSynchronize(sg->copied[k % 2]), "copy to host");
        if (st != RT_OK)
            break;
        size_t off = k * per, n = count - off < per ? count - off : per;
        st = rt_allreduce(c, sg->host[k % 2], n, t, op);
        if (st != RT_OK) {
            rt_err(err, st, "%s", rt_comm_last_error(c));
            break;
        }
        CUDA_TRY(cudaMemcpyAsync((char *)dev_buf + off * es, sg->host[k % 2], n * es,
                                 cudaMemcpyHostToDevice, s),
                 "cudaMemcpyAsync (stage in)");
        /* the buffer is refilled by chunk k+2's copy-out, which the stream
         * orders after this copy-in */
    }
    cudaError_t e = cudaStreamSynchronize(s);
    if (e != cudaSuccess && st == RT_OK)
        st = rt_err(err, RT_ERR_DEVICE, "staging: %s", cudaGetErrorString(e));
    return st;
}

/* ---- NCCL --------------------------------------------------------------------- */

#ifdef RT_HAVE_NCCL

#if NCCL_VERSION_CODE < 21400
#error "ringtrain needs NCCL 2.14 or newer (non-blocking communicators, ncclCommFinalize)"
#endif

struct rt_nccl {
    ncclComm_t comm; /* NULL once aborted */
    rt_comm *boot;   /* the ring that bootstrapped it: broken with it by a peer */
    cudaStream_t stream;
    bool broken;
    int rank, size;
    int64_t timeout_us;
};

bool rt_nccl_available(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return n > 0;
}

static ncclDataType_t nccl_type(rt_ctype t)
{
    switch (t) {
    case RT_C_F32:
        return ncclFloat32;
    case RT_C_F64:
        return ncclFloat64;
    case RT_C_I32:
        return ncclInt32;
    case RT_C_I64:
        return ncclInt64;
    case RT_C_BF16:
        return ncclBfloat16;
    }
    return ncclFloat32;
}

static ncclRedOp_t nccl_op(rt_redop op)
{
    switch (op) {
    case RT_SUM:
        return ncclSum;
    case RT_AVG:
        return ncclAvg;
    case RT_MAX:
        return ncclMax;
    case RT_MIN:
        return ncclMin;
    }
    return ncclSum;
}

/* Abort once; the handle is gone afterwards. */
static void nccl_abort(rt_nccl *n)
{
    n->broken = true;
    if (n->comm) {
        ncclCommAbort(n->comm);
        n->comm = NULL;
    }
}

/* A collective that failed for a peer (NCCL's error from another rank, or
 * a peer that never arrived) breaks the bootstrap ring as well, as a ring
 * collective's failure would: the rank then exits as one that lost its
 * peers (RT_EXIT_PEER), and the coordinator waits for the failure it
 * follows. A local CUDA error does not. */
static rt_status peer_failure(rt_nccl *n, rt_status st, const char *err)
{
    rt_comm_fail(n->boot, st, -1, "%s", err);
    return st;
}

/* Poll the communicator until it leaves ncclInProgress or dl passes. */
static ncclResult_t nccl_settle(rt_nccl *n, rt_deadline_t dl)
{
    for (;;) {
        ncclResult_t a = ncclSuccess;
        ncclResult_t r = ncclCommGetAsyncError(n->comm, &a);
        if (r != ncclSuccess)
            return r;
        if (a != ncclInProgress)
            return a;
        if (rt_now_ns() >= dl)
            return ncclInProgress;
        usleep(200);
    }
}

/* What every rank tells the others before NCCL starts. */
typedef struct nccl_probe {
    int32_t ok; /* a CUDA device is current */
    int32_t pci_bus, pci_dev, pci_domain;
    char host[48];
} nccl_probe;

static rt_status nccl_check_ranks(rt_comm *c, char *err)
{
    const int size = c->size;
    nccl_probe me;
    memset(&me, 0, sizeof me);
    int dev = -1;
    struct cudaDeviceProp p;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&p, dev) == cudaSuccess) {
        me.ok = 1;
        me.pci_bus = p.pciBusID;
        me.pci_dev = p.pciDeviceID;
        me.pci_domain = p.pciDomainID;
    } else {
        cudaGetLastError();
    }
    gethostname(me.host, sizeof me.host - 1);
    nccl_probe *all = calloc((size_t)size, sizeof *all);
    if (!all)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    rt_status st = rt_allgather(c, &me, all, sizeof me);
    if (st != RT_OK) {
        free(all);
        return rt_err(err, st, "agreeing on NCCL: %s", rt_comm_last_error(c));
    }
    for (int r = 0; r < size && st == RT_OK; r++) {
        if (!all[r].ok) {
            st = rt_err(err, RT_ERR_UNSUPPORTED, "rank %d (%s) has no usable CUDA device", r,
                        all[r].host);
            break;
        }
        for (int q = 0; q < r; q++)
            if (strcmp(all[q].host, all[r].host) == 0 && all[q].pci_bus == all[r].pci_bus &&
                all[q].pci_dev == all[r].pci_dev && all[q].pci_domain == all[r].pci_domain) {
                st = rt_err(err, RT_ERR_UNSUPPORTED,
                            "ranks %d and %d share the GPU at PCI %04x:%02x:%02x on %s; NCCL needs "
                            "one GPU per rank",
                            q, r, all[r].pci_domain, all[r].pci_bus, all[r].pci_dev, all[r].host);
                break;
            }
    }
    free(all);
    return st;
}

rt_status rt_nccl_create(rt_comm *c, void *cuda_stream, rt_nccl **out, char *err)
{
    *out = NULL;
    rt_status st = nccl_check_ranks(c, err);
    if (st != RT_OK)
        return st;
    /* rank 0 draws the id; our ring (authenticated) carries it to the others */
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ncclResult_t r = ncclSuccess;
    int32_t ok = 1;
    if (c->rank == 0 && (r = ncclGetUniqueId(&id)) != ncclSuccess)
        ok = 0;
    /* a failed draw on rank 0 reaches everyone, as an all-zero id would hang them */
    if ((st = rt_broadcast(c, &ok, sizeof ok, 0)) == RT_OK && ok)
        st = rt_broadcast(c, &id, sizeof id, 0);
    if (st != RT_OK)
        return rt_err(err, st, "distributing the NCCL id: %s", rt_comm_last_error(c));
    if (!ok)
        return rt_err(err, RT_ERR_DEVICE, "ncclGetUniqueId failed on rank 0%s%s",
                      c->rank == 0 ? ": " : "", c->rank == 0 ? ncclGetErrorString(r) : "");
    rt_nccl *n = calloc(1, sizeof *n);
    if (!n)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    n->stream = (cudaStream_t)cuda_stream;
    n->boot = c;
    n->rank = c->rank;
    n->size = c->size;
    n->timeout_us = c->timeout_us > 0 ? c->timeout_us : RT_RUN_TIMEOUT_S * 1000000LL;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0; /* initialise in the background, under our deadline */
    r = ncclCommInitRankConfig(&n->comm, c->size, id, c->rank, &cfg);
    if (r == ncclInProgress || r == ncclSuccess)
        r = nccl_settle(n, rt_deadline_in_us(n->timeout_us));
    if (r != ncclSuccess) {
        const char *why = r == ncclInProgress ? "did not finish" : ncclGetErrorString(r);
        char detail[200] = "";
        if (r != ncclInProgress && n->comm)
            snprintf(detail, sizeof detail, " (%s)", ncclGetLastError(n->comm));
        if (n->comm)
            nccl_abort(n);
        free(n);
        return rt_err(err, r == ncclInProgress ? RT_ERR_TIMEOUT : RT_ERR_DEVICE,
                      "NCCL initialisation on rank %d of %d %s within %.3gs%s", c->rank, c->size,
                      why, (double)c->timeout_us / 1e6, detail);
    }
    RT_DEBUG("nccl", "rank %d/%d: NCCL communicator ready", c->rank, c->size);
    *out = n;
    return RT_OK;
}

void rt_nccl_destroy(rt_nccl *n)
{
    if (!n)
        return;
    if (n->comm && !n->broken) {
        /* flush, bounded: a peer gone at this point must not hang us */
        ncclResult_t r = ncclCommFinalize(n->comm);
        if (r == ncclInProgress || r == ncclSuccess)
            r = nccl_settle(n, rt_deadline_in_us(n->timeout_us));
        if (r == ncclSuccess)
            ncclCommDestroy(n->comm);
        else {
            RT_WARN("nccl", "rank %d: ncclCommFinalize %s; aborting the communicator", n->rank,
                    r == ncclInProgress ? "did not finish" : ncclGetErrorString(r));
            ncclCommAbort(n->comm);
        }
        n->comm = NULL;
    }
    nccl_abort(n);
    free(n);
}

/* A call on a non-blocking communicator may answer ncclInProgress: wait for it. */
static rt_status nccl_call(rt_nccl *n, ncclResult_t r, const char *what, char *err)
{
    if (r == ncclInProgress)
        r = nccl_settle(n, rt_deadline_in_us(n->timeout_us));
    if (r == ncclSuccess)
        return RT_OK;
    char detail[200];
    snprintf(detail, sizeof detail, "%s", ncclGetLastError(n->comm));
    nccl_abort(n);
    rt_err(err, RT_ERR_DEVICE, "%s on rank %d: %s%s%s", what, n->rank, ncclGetErrorString(r),
           detail[0] ? "; " : "", detail);
    return r == ncclRemoteError ? peer_failure(n, RT_ERR_DEVICE, err) : RT_ERR_DEVICE;
}

rt_status rt_nccl_allreduce(rt_nccl *n, void *dev_buf, size_t count, rt_ctype t, rt_redop op,
                            char *err)
{
    if (n->broken)
        return rt_err(err, RT_ERR_BROKEN, "the NCCL communicator was aborted");
    return nccl_call(
        n, ncclAllReduce(dev_buf, dev_buf, count, nccl_type(t), nccl_op(op), n->comm, n->stream),
        "ncclAllReduce", err);
}

rt_status rt_nccl_broadcast(rt_nccl *n, void *dev_buf, size_t bytes, int root, char *err)
{
    if (n->broken)
        return rt_err(err, RT_ERR_BROKEN, "the NCCL communicator was aborted");
    return nccl_call(n, ncclBroadcast(dev_buf, dev_buf, bytes, ncclUint8, root, n->comm, n->stream),
                     "ncclBroadcast", err);
}

rt_status rt_nccl_wait_stream(rt_nccl *n, void *cuda_stream, int64_t timeout_us, char *err)
{
    if (n->broken)
        return rt_err(err, RT_ERR_BROKEN, "the NCCL communicator was aborted");
    cudaStream_t s = cuda_stream ? (cudaStream_t)cuda_stream : n->stream;
    const rt_deadline_t dl = rt_deadline_in_us(timeout_us);
    /* spin by time, not by count: 64 queries were ~10 us, then each 20 us
     * sleep cost ~70 us with the timer's slack, longer than the tail of a
     * small step (an H100's whole step at batch 100 is ~200 us) */
    const int64_t spin_until = rt_now_ns() + 300000;
    for (;;) {
        cudaError_t e = cudaStreamQuery(s);
        if (e == cudaSuccess)
            return RT_OK;
        if (e != cudaErrorNotReady) {
            nccl_abort(n);
            return rt_err(err, RT_ERR_DEVICE, "CUDA stream: %s", cudaGetErrorString(e));
        }
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(n->comm, &async);
        if (async != ncclSuccess && async != ncclInProgress) {
            char detail[200];
            snprintf(detail, sizeof detail, "%s", ncclGetLastError(n->comm));
            nccl_abort(n);
            rt_err(err, RT_ERR_IO,
                   "NCCL reported an error on rank %d of %d: %s%s%s%s; communicator aborted",
                   n->rank, n->size, ncclGetErrorString(async), detail[0] ? " (" : "", detail,
                   detail[0] ? ")" : "");
            return peer_failure(n, RT_ERR_IO, err);
        }
        if (rt_now_ns() >= dl) {
            nccl_abort(n);
            rt_err(err, RT_ERR_TIMEOUT,
                   "NCCL collective did not complete within %.3gs on rank %d of %d (a peer did "
                   "not arrive); communicator aborted",
                   (double)timeout_us / 1e6, n->rank, n->size);
            return peer_failure(n, RT_ERR_TIMEOUT, err);
        }
        /* spin through a step's tail, then sleep so as not to take a core */
        if (rt_now_ns() > spin_until) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
}

rt_status rt_nccl_wait(rt_nccl *n, int64_t timeout_us, char *err)
{
    return rt_nccl_wait_stream(n, NULL, timeout_us, err);
}

#else /* CUDA without NCCL */

bool rt_nccl_available(void) { return false; }
rt_status rt_nccl_create(rt_comm *c, void *s, rt_nccl **out, char *err)
{
    (void)c, (void)s;
    *out = NULL;
    return rt_err(err, RT_ERR_UNSUPPORTED, "this build has no NCCL");
}
void rt_nccl_destroy(rt_nccl *n) { (void)n; }
rt_status rt_nccl_allreduce(rt_nccl *n, void *b, size_t c, rt_ctype t, rt_redop op, char *err)
{
    (void)n, (void)b, (void)c, (void)t, (void)op;
    return rt_err(err, RT_ERR_UNSUPPORTED, "this build has no NCCL");
}
rt_status rt_nccl_broadcast(rt_nccl *n, void *b, size_t bytes, int root, char *err)
{
    (void)n, (void)b, (void)bytes, (void)root;
    return rt_err(err, RT_ERR_UNSUPPORTED, "this build has no NCCL");
}
rt_status rt_nccl_wait_stream(rt_nccl *n, void *s, int64_t t, char *err)
{
    (void)n, (void)s, (void)t;
    return rt_err(err, RT_ERR_UNSUPPORTED, "this build has no NCCL");
}
rt_status rt_nccl_wait(rt_nccl *n, int64_t t, char *err)
{
    (void)n, (void)t;
    return rt_err(err, RT_ERR_UNSUPPORTED, "this build has no NCCL");
}
#endif
