/* emu.h — verbsemu's model, shared by verbs.c (the libibverbs calls) and
 * nic.c (the emulated adapter: a thread per process that moves RDMA writes
 * between processes over Unix sockets).  README.md says what it checks.
 *
 * One big lock (emu.lock) guards everything below; the application's calls
 * and the adapter thread take it.  Objects embed the rdma-core struct first,
 * so that the inline wrappers of <infiniband/verbs.h> (ibv_post_send ->
 * qp->context->ops.post_send, ibv_poll_cq, ...) reach our functions. */
#ifndef VERBSEMU_EMU_H
#define VERBSEMU_EMU_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define EMU_MAX_QPS 4096

/* The queues below are singly linked FIFOs (head, tail, and each item's
 * link field): EMU_PUSH appends x at the tail, EMU_POP unlinks the head
 * (which the caller has already taken). */
#define EMU_PUSH(head, tail, x, link) \
    do {                              \
        (x)->link = NULL;             \
        if (tail)                     \
            (tail)->link = (x);       \
        else                          \
            (head) = (x);             \
        (tail) = (x);                 \
    } while (0)
#define EMU_POP(head, tail, link) \
    do {                          \
        (head) = (head)->link;    \
        if (!(head))              \
            (tail) = NULL;        \
    } while (0)

/* A work request of a send queue, from post to completion. */
typedef struct emu_swr {
    uint64_t wr_id, raddr, seq;
    uint32_t rkey, imm, len, lkey;
    uint64_t laddr;
    bool imm_on, signaled;
    struct emu_swr *next;
} emu_swr;

typedef struct emu_rwr {
    uint64_t wr_id;
    struct emu_rwr *next;
} emu_rwr;

/* A message held at the receiver: a WRITE WITH IMMEDIATE that found no
 * posted receive (RC's receiver-not-ready), or one queued behind it. */
typedef struct emu_held {
    struct emu_conn *from;
    uint32_t src_qpn, rkey, imm, len;
    uint64_t raddr, seq;
    bool imm_on;
    int64_t give_up_ns; /* RNR retries exhausted then (0: rnr_retry 7, never) */
    uint8_t *data;
    struct emu_held *next;
} emu_held;

/* A byte stream to another process's adapter (outgoing: one per QP that
 * sends; incoming: accepted), with buffered, non-blocking output. */
typedef struct emu_conn {
    int fd;
    bool out;         /* made by a QP of ours to send */
    struct emu_qp *qp; /* its QP, when outgoing */
    uint8_t *in;
    size_t in_len, in_cap;
    uint8_t *obuf;
    size_t o_len, o_off, o_cap;
    bool dead;
    struct emu_conn *next;
} emu_conn;

typedef struct emu_cq {
    struct ibv_cq cq;
    struct ibv_wc *ring;
    int cap, head, count;
    bool armed, overrun;
    int events_sent, events_acked; /* returned by ibv_get_cq_event; acknowledged */
    struct emu_cq *next_event; /* in its channel's queue of events to deliver */
    int64_t event_at_ns;       /* a delayed event: when (0: none scheduled) */
} emu_cq;

typedef struct emu_qp {
    struct ibv_qp qp;
    struct ibv_qp_cap cap;
    int access;        /* qp_access_flags */
    bool sig_all;      /* sq_sig_all: every send completes */
    uint32_t dest_qpn;
    uint8_t dgid[16];
    uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
    emu_swr *sq_head, *sq_tail; /* posted, not yet on the wire */
    emu_swr *wait_head, *wait_tail; /* on the wire, waiting for the peer's answer */
    int sq_count;
    emu_rwr *rq_head, *rq_tail;
    int rq_count;
    emu_held *held_head, *held_tail;
    emu_conn *conn; /* outgoing */
    uint64_t next_seq;
    int64_t fail_at_ns; /* the peer is gone: outstanding work fails then */
    bool destroyed;
} emu_qp;

typedef struct emu_mr {
    struct ibv_mr mr;
    int access;
    struct emu_mr *next;
} emu_mr;

typedef struct emu_channel {
    struct ibv_comp_channel ch;
    int wfd; /* the pipe's write end: one byte per delivered event */
    emu_cq *q_head, *q_tail; /* events written, not yet taken */
} emu_channel;

typedef struct emu_state {
    pthread_mutex_t lock;
    bool up;
    int users; /* open contexts */
    pthread_t thread;
    int wake[2];  /* a pipe: wakes the adapter thread */
    int listen_fd;
    int epfd;
    uint8_t gid[16];
    emu_qp *qps[EMU_MAX_QPS]; /* by qp_num - 1 */
    uint32_t next_qpn;
    emu_mr *mrs;
    uint32_t next_key;
    emu_conn *conns;
    emu_cq *cqs[256];
    int ncqs;
    uint64_t rng;       /* VERBSEMU_SEED: late and coalesced channel events */
    int max_delay_us;   /* an event comes up to this late (VERBSEMU_EVENT_DELAY_US) */
    bool stopping;
} emu_state;

extern emu_state emu;

/* nic.c */
int nic_start(void);            /* the adapter: listener and thread (lock held) */
void nic_stop(void);            /* (lock not held) */
void nic_kick(void);            /* work was posted: wake the thread */
void nic_qp_gone(emu_qp *q);    /* a QP is destroyed: its connection goes */
void nic_deliver_held(emu_qp *q); /* receives were posted: take held messages */
/* verbs.c */
void emu_due_events(int64_t now, int64_t *next); /* delayed channel events */
void emu_complete(emu_cq *c, const struct ibv_wc *wc); /* a completion, and its event */
void emu_qp_error(emu_qp *q, enum ibv_wc_status first, uint64_t first_wr); /* to ERR, flush */
emu_mr *emu_mr_find(uint32_t key, bool remote);
uint64_t emu_rand(void);
int64_t emu_now_ns(void);
void emu_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
