/* noverbs.c — builds without libibverbs: no RDMA transport. */
#include "rt_comm.h"

bool rt_rdma_available(void) { return false; }
