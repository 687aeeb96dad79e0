/* rt_transport.h — private to transport/: the communicator's struct and the
 * small interface every transport implements.  The ring algorithms (ring.c)
 * see only this table, never a socket or a queue pair.
 *
 * A transport moves framed messages between this rank and its two ring
 * neighbours: sends go to the right neighbour, receives come from the left
 * (and, where the transport has them, the other way round too).
 * Operations are posted (at most RT_RING_WINDOW outstanding per direction)
 * and complete in the order they were posted; wait() makes progress until
 * something completes or the deadline passes.  Each frame carries the
 * collective's sequence number and the frame index, which the receiver
 * checks against what it posted.
 * (Model: Redis ConnectionType, Gloo transport::Pair.) */
#ifndef RT_TRANSPORT_H
#define RT_TRANSPORT_H

#include "rt_comm.h"
#include "rt_time.h"
#include "wire.h"

#define RT_RING_WINDOW 64 /* frames posted ahead in each direction */
#define RT_RING_TMP 2     /* reduce-scatter receive buffers: one filling, one reducing */

typedef struct rt_transport_ops {
    const char *name;
    /* Connect to both neighbours before dl. */
    rt_status (*connect)(rt_comm *c, rt_deadline_t dl, char *err);
    /* Queue one frame of len bytes to the right neighbour; buf must stay
     * untouched until the send completes. */
    rt_status (*post_send)(rt_comm *c, const void *buf, size_t len, uint32_t seq, uint32_t seg);
    /* Queue receipt of the next frame from the left neighbour into buf: it
     * must be tagged (seq, seg) and carry exactly len bytes. */
    rt_status (*post_recv)(rt_comm *c, void *buf, size_t len, uint32_t seq, uint32_t seg);
    /* Optional (NULL where the transport has none): the same the other way
     * round, frames to the left neighbour and from the right, on links of
     * their own, when has_left() says they are open (three ranks or more).
     * wait() counts their completions in c->left_sent and c->right_recvd. */
    bool (*has_left)(rt_comm *c);
    rt_status (*post_send_left)(rt_comm *c, const void *buf, size_t len, uint32_t seq,
                                uint32_t seg);
    rt_status (*post_recv_right)(rt_comm *c, void *buf, size_t len, uint32_t seq, uint32_t seg);
    /* Progress until at least one posted operation completes (counts added
     * to *nsend, *nrecv) or dl passes (RT_ERR_TIMEOUT).  On a failure: the
     * status, a message in err, and c->fail_culprit set to the rank blamed;
     * RT_ERR_ABORTED means an abort record from another rank is in
     * c->abort_in. */
    rt_status (*wait)(rt_comm *c, rt_deadline_t dl, int *nsend, int *nrecv, char *err);
    /* Wait only for an abort record from another rank until dl: RT_ERR_ABORTED
     * with c->abort_in filled, or RT_ERR_TIMEOUT.  Used after a local
     * failure, to prefer a better-placed rank's diagnosis. */
    rt_status (*await_abort)(rt_comm *c, rt_deadline_t dl);
    /* Withdraw every posted operation: after a failed collective the
     * caller's buffers may go away, and no peer may write into them. */
    void (*cancel)(rt_comm *c);
    /* Best effort, never blocks: pass an abort record on to the neighbours. */
    void (*abort)(rt_comm *c, const rt_abort_info *info);
    /* Release everything; called once, also after a failed connect. */
    void (*close)(rt_comm *c);
} rt_transport_ops;

/* Frames after the handshake carry a GCM tag: encrypted, or authenticated
 * only (integrity: AES-GMAC, payload in clear). */
static inline bool rt_comm_sealed(const rt_comm_opts *o) { return o->encrypt || o->integrity; }

extern const rt_transport_ops rt_tcp_ops;
extern const rt_transport_ops rt_loopback_ops;
extern const rt_transport_ops rt_shm_ops;
#ifdef RT_HAVE_IBVERBS
extern const rt_transport_ops rt_verbs_ops;
#endif

struct rt_comm {
    rt_comm_opts o;
    char **peers; /* owned copies of o.peers (TCP/RDMA) */
    int rank, size, left, right;
    const rt_transport_ops *ops;
    void *tp; /* the transport's state */
    bool connected;

    /* failure state: the first error sticks */
    bool broken;
    rt_status broken_st;
    char err[RT_ERR_LEN];
    int fail_culprit;       /* set by wait() on failure */
    rt_abort_info abort_in; /* set by wait() on RT_ERR_ABORTED */

    uint32_t seq;          /* collective sequence number */
    int64_t timeout_us;
    uint64_t recv_frames;  /* frames received in the current collective */
    int left_sent, right_recvd; /* the other way round: completions counted by wait() */

    /* buffers allocated at create: the collectives allocate nothing */
    void *tmp[RT_RING_TMP];
    size_t tmp_bytes;
    void *small; /* size * small_bytes, for small allreduces */
    void *stage; /* gpu_comm.c: pinned buffers of rt_allreduce_device, made on first use */
    char listen_addr[96];

    /* hierarchy (hier.c): this host's ranks and this local rank's ring
     * across hosts, both NULL when there is none */
    rt_comm *local, *cross;
    int sub_fd[2];           /* their listening sockets, closed after them; -1: none */
    int adopted_fd;          /* o.listen_fd when the comm owns it (rt_comm_adopt_listen) */
    int *granks;             /* job ranks of a communicator inside one (owned), or NULL */
    rt_abort_info abort_out; /* the record this rank sent when it failed */
};

/* Make c own the listening socket it was given (o.listen_fd): closed by
 * rt_comm_destroy after the transport. For a socket the library opened
 * itself (rt_init_from_env under Slurm); an agent's fd 3 stays the
 * caller's. */
void rt_comm_adopt_listen(rt_comm *c);

/* Record the first failure (message, status, culprit), mark the
 * communicator broken, pass an abort record on, log it; returns st. */
rt_status rt_comm_fail(rt_comm *c, rt_status st, int culprit, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Same for an abort record received from another rank: the message says
 * who reported it, and the record is passed on unchanged. */
rt_status rt_comm_fail_forward(rt_comm *c, const rt_abort_info *a);
/* c fails as `from` (a communicator of the same hierarchy) failed: the same
 * status and message, and its abort record passed on over c's links; logged
 * once, by from. */
void rt_comm_fail_like(rt_comm *c, const rt_comm *from);
/* The job's number for rank r of c (r itself outside a hierarchy). */
int rt_comm_grank(const rt_comm *c, int r);
/* Hierarchical allreduce (ring.c), for rt_allreduce when c->cross is set;
 * op is SUM, MAX or MIN (rt_allreduce scales an average afterwards). */
rt_status rt_hier_allreduce(rt_comm *c, void *buf, size_t count, rt_ctype t, rt_redop op);
/* Free c->stage (gpu_comm.c; nothing in builds without CUDA). */
void rt_device_stage_free(rt_comm *c);
/* "rank 3 (127.0.0.1:4000)" or "rank 3" when there is no address. */
const char *rt_comm_peer_name(const rt_comm *c, int rank, char *buf, size_t len);

#endif
