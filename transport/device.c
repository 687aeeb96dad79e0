/* device.c — collectives on GPU memory (CUDA builds only): the NCCL backend,
 * bootstrapped through our own ring, and the pinned-host staging path that
 * lets the TCP/RDMA transports reduce device buffers. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_log.h"
#include "rt_transport.h"
#include "reduce.h"

#ifdef RT_HAVE_NCCL
#include <nccl.h>
#endif

/* ---- staging through pinned host memory ----------------------------------- */

#define STAGE_CHUNK (8u << 20) /* bytes per pipelined chunk */

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
    void *host[2] = {NULL, NULL};
    cudaEvent_t copied[2] = {NULL, NULL};
    rt_status st = RT_OK;
    cudaError_t e;
    for (int i = 0; i < 2 && st == RT_OK; i++) {
        if ((e = cudaMallocHost(&host[i], STAGE_CHUNK)) != cudaSuccess ||
            (e = cudaEventCreateWithFlags(&copied[i], cudaEventDisableTiming)) != cudaSuccess)
            st = rt_err(err, RT_ERR_DEVICE, "staging buffers: %s", cudaGetErrorString(e));
    }
    /* chunk k uses host[k % 2]: copy k+1 out while chunk k is on the wire;
     * chunk k's copy back is queued before chunk k+2 may reuse its buffer */
    for (size_t k = 0; k < nchunks && st == RT_OK; k++) {
        if (k == 0) {
            size_t n0 = count < per ? count : per;
            cudaMemcpyAsync(host[0], dev_buf, n0 * es, cudaMemcpyDeviceToHost, s);
            cudaEventRecord(copied[0], s);
        }
        if (k + 1 < nchunks) {
            size_t off = (k + 1) * per, n1 = count - off < per ? count - off : per;
            cudaMemcpyAsync(host[(k + 1) % 2], (char *)dev_buf + off * es, n1 * es,
                            cudaMemcpyDeviceToHost, s);
            cudaEventRecord(copied[(k + 1) % 2], s);
        }
        if ((e = cudaEventSynchronize(copied[k % 2])) != cudaSuccess) {
            st = rt_err(err, RT_ERR_DEVICE, "copy to host: %s", cudaGetErrorString(e));
            break;
        }
        size_t off = k * per, n = count - off < per ? count - off : per;
        st = rt_allreduce(c, host[k % 2], n, t, op);
        if (st != RT_OK) {
            rt_err(err, st, "%s", rt_comm_last_error(c));
            break;
        }
        cudaMemcpyAsync((char *)dev_buf + off * es, host[k % 2], n * es, cudaMemcpyHostToDevice, s);
        /* the buffer is refilled by chunk k+2's copy-out, which the stream
         * orders after this copy-in */
    }
    if ((e = cudaStreamSynchronize(s)) != cudaSuccess && st == RT_OK)
        st = rt_err(err, RT_ERR_DEVICE, "staging: %s", cudaGetErrorString(e));
    for (int i = 0; i < 2; i++) {
        if (copied[i])
            cudaEventDestroy(copied[i]);
        if (host[i])
            cudaFreeHost(host[i]);
    }
    return st;
}

/* ---- NCCL --------------------------------------------------------------------- */

#ifdef RT_HAVE_NCCL

struct rt_nccl {
    ncclComm_t comm;
    cudaStream_t stream;
    bool broken;
    int rank;
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
    case RT_C_F32: return ncclFloat32;
    case RT_C_F64: return ncclFloat64;
    case RT_C_I32: return ncclInt32;
    case RT_C_I64: return ncclInt64;
    }
    return ncclFloat32;
}

static ncclRedOp_t nccl_op(rt_redop op)
{
    switch (op) {
    case RT_SUM: return ncclSum;
    case RT_AVG: return ncclAvg;
    case RT_MAX: return ncclMax;
    case RT_MIN: return ncclMin;
    }
    return ncclSum;
}

rt_status rt_nccl_create(rt_comm *c, void *cuda_stream, rt_nccl **out, char *err)
{
    *out = NULL;
    if (!rt_nccl_available())
        return rt_err(err, RT_ERR_UNSUPPORTED, "no CUDA device for NCCL");
    /* rank 0 draws the id; our ring (authenticated) carries it to the others */
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ncclResult_t r = ncclSuccess;
    if (c->rank == 0 && (r = ncclGetUniqueId(&id)) != ncclSuccess)
        return rt_err(err, RT_ERR_DEVICE, "ncclGetUniqueId: %s", ncclGetErrorString(r));
    rt_status st = rt_broadcast(c, &id, sizeof id, 0);
    if (st != RT_OK)
        return rt_err(err, st, "distributing the NCCL id: %s", rt_comm_last_error(c));
    rt_nccl *n = calloc(1, sizeof *n);
    if (!n)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    n->stream = (cudaStream_t)cuda_stream;
    n->rank = c->rank;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 1;
    r = ncclCommInitRankConfig(&n->comm, c->size, id, c->rank, &cfg);
    if (r != ncclSuccess) {
        free(n);
        return rt_err(err, RT_ERR_DEVICE, "ncclCommInitRank (rank %d of %d): %s", c->rank,
                      c->size, ncclGetErrorString(r));
    }
    *out = n;
    return RT_OK;
}

void rt_nccl_destroy(rt_nccl *n)
{
    if (!n)
        return;
    if (n->broken)
        ncclCommAbort(n->comm);
    else {
        ncclCommFinalize(n->comm);
        ncclCommDestroy(n->comm);
    }
    free(n);
}

rt_status rt_nccl_allreduce(rt_nccl *n, void *dev_buf, size_t count, rt_ctype t, rt_redop op,
                            char *err)
{
    if (n->broken)
        return rt_err(err, RT_ERR_BROKEN, "the NCCL communicator was aborted");
    ncclResult_t r = ncclAllReduce(dev_buf, dev_buf, count, nccl_type(t), nccl_op(op), n->comm,
                                   n->stream);
    return r == ncclSuccess ? RT_OK
                            : rt_err(err, RT_ERR_DEVICE, "ncclAllReduce: %s", ncclGetErrorString(r));
}

rt_status rt_nccl_broadcast(rt_nccl *n, void *dev_buf, size_t bytes, int root, char *err)
{
    if (n->broken)
        return rt_err(err, RT_ERR_BROKEN, "the NCCL communicator was aborted");
    ncclResult_t r = ncclBroadcast(dev_buf, dev_buf, bytes, ncclUint8, root, n->comm, n->stream);
    return r == ncclSuccess ? RT_OK
                            : rt_err(err, RT_ERR_DEVICE, "ncclBroadcast: %s", ncclGetErrorString(r));
}

rt_status rt_nccl_wait(rt_nccl *n, int64_t timeout_us, char *err)
{
    const rt_deadline_t dl = rt_deadline_in_us(timeout_us);
    for (;;) {
        cudaError_t e = cudaStreamQuery(n->stream);
        if (e == cudaSuccess)
            return RT_OK;
        if (e != cudaErrorNotReady) {
            n->broken = true;
            return rt_err(err, RT_ERR_DEVICE, "CUDA stream: %s", cudaGetErrorString(e));
        }
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(n->comm, &async);
        if (async != ncclSuccess && async != ncclInProgress) {
            n->broken = true;
            ncclCommAbort(n->comm);
            return rt_err(err, RT_ERR_IO, "NCCL reported an error on rank %d: %s", n->rank,
                          ncclGetErrorString(async));
        }
        if (rt_now_ns() >= dl) {
            n->broken = true;
            ncclCommAbort(n->comm);
            return rt_err(err, RT_ERR_TIMEOUT,
                          "NCCL collective did not complete within %.3gs on rank %d (a peer did "
                          "not arrive); communicator aborted",
                          (double)timeout_us / 1e6, n->rank);
        }
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
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
rt_status rt_nccl_wait(rt_nccl *n, int64_t t, char *err)
{
    (void)n, (void)t;
    return rt_err(err, RT_ERR_UNSUPPORTED, "this build has no NCCL");
}
#endif
