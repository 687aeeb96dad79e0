/* gpu_comm_none.c — builds without CUDA: device-memory collectives report that
 * they are not available. */
#include "rt_transport.h"

void rt_device_stage_free(rt_comm *c) { (void)c; }

bool rt_nccl_available(void) { return false; }

rt_status rt_nccl_create(rt_comm *c, void *s, rt_nccl **out, char *err)
{
    (void)c, (void)s;
    *out = NULL;
    return rt_err(err, RT_ERR_UNSUPPORTED, "this build has no CUDA/NCCL support");
}

void rt_nccl_destroy(rt_nccl *n) { (void)n; }

rt_status rt_nccl_allreduce(rt_nccl *n, void *b, size_t c, rt_ctype t, rt_redop op, char *err)
{
    (void)n, (void)b, (void)c, (void)t, (void)op;
    return rt_err(err, RT_ERR_UNSUPPORTED, "this build has no CUDA/NCCL support");
}

rt_status rt_nccl_broadcast(rt_nccl *n, void *b, size_t bytes, int root, char *err)
{
    (void)n, (void)b, (void)bytes, (void)root;
    return rt_err(err, RT_ERR_UNSUPPORTED, "this build has no CUDA/NCCL support");
}

rt_status rt_nccl_wait_stream(rt_nccl *n, void *s, int64_t t, char *err)
{
    (void)n, (void)s, (void)t;
    return rt_err(err, RT_ERR_UNSUPPORTED, "this build has no CUDA/NCCL support");
}

rt_status rt_nccl_wait(rt_nccl *n, int64_t t, char *err)
{
    (void)n, (void)t;
    return rt_err(err, RT_ERR_UNSUPPORTED, "this build has no CUDA/NCCL support");
}

rt_status rt_allreduce_device(rt_comm *c, void *b, size_t count, rt_ctype t, rt_redop op, void *s,
                              char *err)
{
    (void)c, (void)b, (void)count, (void)t, (void)op, (void)s;
    return rt_err(err, RT_ERR_UNSUPPORTED, "this build has no CUDA support");
}
