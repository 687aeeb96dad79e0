/* reduce.h — private to transport/: element-wise reductions. */
#ifndef RT_REDUCE_H
#define RT_REDUCE_H

#include <stddef.h>

#include "rt_comm.h"

/* dst[i] = dst[i] op src[i] (RT_AVG sums; the caller divides). */
void rt_reduce(void *dst, const void *src, size_t n, rt_ctype t, rt_redop op);
/* dst[i] *= f. */
void rt_scale(void *dst, size_t n, rt_ctype t, double f);

#endif
