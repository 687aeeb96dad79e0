/* ring.h — private to transport/: what ring.c shares with the plans that
 * use both rings (ring_both.c). */
#ifndef RT_RING_H
#define RT_RING_H

#include "rt_transport.h"

/* Turn a transport failure into the communicator's error (ring.c): an
 * abort record from a better-placed rank if one arrives shortly, else this
 * rank's view of rank `from`, the neighbour it waited on; recvd frames had
 * arrived in collective seq. */
rt_status ring_failure(rt_comm *c, rt_status st, const char *msg, size_t recvd, uint32_t seq,
                       int from);

/* Transports that link each rank to both neighbours (has_left), ring_both.c:
 * the small path both ways round: all holds n buffers of `bytes`, this
 * rank's in place; on return every slot is filled. */
rt_status gather_both(rt_comm *c, char *all, size_t bytes);
/* Four ranks, up to small_bytes: recursive doubling on neighbour pairs;
 * tmp holds `bytes`. */
rt_status pairs4(rt_comm *c, char *buf, char *tmp, size_t count, size_t es, rt_ctype t,
                 rt_redop op);
/* Four ranks, above it: recursive halving, then doubling, on neighbour
 * pairs, in segments of max_segment_bytes. */
rt_status halving4(rt_comm *c, char *buf, size_t count, size_t es, rt_ctype t, rt_redop op);

#endif
