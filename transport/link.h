/* link.h — private to transport/: the authenticated connections of one rank
 * to its ring neighbours, shared by the TCP transport (which moves its data
 * over them) and the RDMA transport (which uses them to bootstrap its queue
 * pairs and to carry abort records).
 *
 * rt_links_open listens (or adopts listen_fd), opens n connections to the
 * right neighbour as handshake initiator while accepting n from the left as
 * responder (strangers are refused and logged and do not count), then keeps
 * a thread refusing every later connection until rt_links_close.  With
 * nrev > 0 (three ranks or more) it also opens nrev connections the other
 * way round: to the left neighbour (out_rev) and from the right (in_rev),
 * connection indices n .. n+nrev-1 in the handshake. */
#ifndef RT_LINK_H
#define RT_LINK_H

#include <pthread.h>

#include "rt_transport.h"
#include "sock.h"

#define RT_MAX_SOCKETS 16

typedef struct rt_links {
    int n;
    int listen_fd;
    bool own_listen;
    int out[RT_MAX_SOCKETS], in[RT_MAX_SOCKETS]; /* to the right, from the left */
    rt_hs_result out_hs[RT_MAX_SOCKETS], in_hs[RT_MAX_SOCKETS];
    int nrev;
    int out_rev[RT_MAX_SOCKETS], in_rev[RT_MAX_SOCKETS]; /* to the left, from the right */
    rt_hs_result out_rev_hs[RT_MAX_SOCKETS], in_rev_hs[RT_MAX_SOCKETS];
    rt_hs_params hs;
    pthread_t acceptor;
    bool acceptor_running;
    int stop_pipe[2];
    char left_name[160], right_name[160];
} rt_links;

/* On failure the links are closed again and err says which neighbour. */
rt_status rt_links_open(rt_comm *c, int n, int nrev, rt_deadline_t dl, rt_links *L, char *err);
void rt_links_close(rt_links *L);

#endif
