/* frame_order.h — private to transport/: the order in which a pipelined ring sends
 * its frames.  A collective of S steps, each cut into J segments, has S·J
 * frames (s, j).  They go out by anti-diagonal d = s + j, step ascending
 * within a diagonal:
 *
 *     d=0: (0,0)   d=1: (0,1) (1,0)   d=2: (0,2) (1,1) (2,0)   ...
 *
 * Frame (s, j) forwards what frame (s-1, j) brought, which is one diagonal
 * earlier: each segment is passed on right after it is received and reduced,
 * while it is still in cache, and the steps overlap as in a wavefront. */
#ifndef RT_FRAME_ORDER_H
#define RT_FRAME_ORDER_H

#include <stddef.h>

/* Frame index f -> (step, segment). */
void rt_frame_order_frame(size_t S, size_t J, size_t f, size_t *s, size_t *j);
/* (step, segment) -> frame index. */
size_t rt_frame_order_index(size_t S, size_t J, size_t s, size_t j);

#endif
