/* sidelink.h — private to transport/: the TCP links of a transport whose data
 * travels elsewhere (RDMA queue pairs, shared memory).  The links (link.c)
 * are opened and authenticated as for TCP and then carry only control
 * records: abort records in both directions, the BYE of a normal close, and
 * the end of stream of a neighbour that died, which is how such a transport
 * notices a dead peer as promptly as TCP does.  Sealed (AES-GCM) when the
 * communicator encrypts or authenticates its frames. */
#ifndef RT_SIDELINK_H
#define RT_SIDELINK_H

#include "ctl.h"
#include "link.h"

typedef struct rt_sidelink {
    rt_links links;
    rt_gcm *seal_right, *open_right, *seal_left, *open_left;
    bool right_bye;    /* the right neighbour closed its communicator normally */
    bool right_closed; /* ... and its end of stream has been read */
    bool left_eof;     /* the failure last read was the left neighbour's end of stream */
} rt_sidelink;

/* Open one link per neighbour (rt_links_open) and make the control keys. */
rt_status rt_sidelink_open(rt_comm *c, rt_deadline_t dl, rt_sidelink *k, char *err);
/* Read what arrived on one link without blocking: RT_OK when nothing (or a
 * BYE, or the end of stream after one) came; RT_ERR_ABORTED with
 * c->abort_in filled; otherwise a failure blaming that neighbour. */
rt_status rt_sidelink_read(rt_comm *c, rt_sidelink *k, bool right, char *err);
/* Sleep up to ms (-1: no limit) for something on either link and read it. */
rt_status rt_sidelink_poll(rt_comm *c, rt_sidelink *k, int ms, char *err);
/* The ops of the same names, for transports built on a side link. */
rt_status rt_sidelink_await_abort(rt_comm *c, rt_sidelink *k, rt_deadline_t dl);
void rt_sidelink_abort(rt_comm *c, rt_sidelink *k, const rt_abort_info *info);
/* Say BYE to the left (unless the communicator is broken), close the links,
 * free the keys. */
void rt_sidelink_close(rt_comm *c, rt_sidelink *k);

#endif
