/* ctl.h — private to transport/: what the TCP and the RDMA transports share
 * besides the links: the queues of posted operations, and the control
 * records they exchange besides data — ABORT (a failure record that
 * travels round the ring) and BYE (a normal close, so that the end of
 * stream after it is not taken for a crash).
 *
 * A control record is a frame header and, for ABORT, an abort record
 * (wire.h).  When the communicator encrypts, every record is sealed with
 * AES-256-GCM like data frames, and an unsealed one is refused: no frame
 * after the handshake is accepted without authentication. */
#ifndef RT_CTL_H
#define RT_CTL_H

#include "rt_transport.h"

#define RT_CTL_MAX (RT_FRAME_HDR_LEN + RT_ABORT_MAX_LEN + RT_GCM_TAG_LEN)

/* Encode a BYE (a == NULL) or an ABORT record into out, sealed with `seal`
 * when it is not NULL; its length, or 0 if sealing failed. */
size_t rt_ctl_encode(uint8_t out[RT_CTL_MAX], uint32_t seq, const rt_abort_info *a, rt_gcm *seal);

/* From a control record's header: the header fields and how many bytes
 * follow it.  RT_ERR_PROTO when it is not a control record, when it is not
 * sealed although `sealed` (encryption) or sealed although not, or when it
 * is longer than any abort record. */
rt_status rt_ctl_body_len(const uint8_t hdr[RT_FRAME_HDR_LEN], bool sealed, rt_frame_hdr *h,
                          size_t *body_len, char *err);

/* A whole record (header h/hdr, then body_len bytes of body): opened with
 * `open` when it is not NULL (RT_ERR_AUTH when it was altered); an ABORT
 * fills *a (RT_OK), a BYE returns RT_OK with a->status 0. */
rt_status rt_ctl_decode(const rt_frame_hdr *h, const uint8_t hdr[RT_FRAME_HDR_LEN],
                        const uint8_t *body, size_t body_len, rt_gcm *open, rt_abort_info *a,
                        char *err);

/* ---- posted operations ---------------------------------------------------------
 * A window of RT_RING_WINDOW operations per direction, in posting order:
 * op i lives in slot i % RT_RING_WINDOW.  `done` counts the operations
 * finished from the first (the slot of op i is free once op i + WINDOW may
 * be posted), `seen` those already reported to the caller of wait(). */
typedef struct rt_post {
    void *p;
    size_t len;
    uint32_t seq, seg;
    bool done;
} rt_post;

typedef struct rt_postq {
    rt_post op[RT_RING_WINDOW];
    uint64_t posted, done, seen;
} rt_postq;

static inline void rt_postq_push(rt_postq *q, void *p, size_t len, uint32_t seq, uint32_t seg)
{
    RT_ASSERT(q->posted - q->done < RT_RING_WINDOW);
    q->op[q->posted % RT_RING_WINDOW] = (rt_post){p, len, seq, seg, false};
    q->posted++;
}

static inline rt_post *rt_postq_at(rt_postq *q, uint64_t i) { return &q->op[i % RT_RING_WINDOW]; }

/* Move `done` over the operations marked done, in order. */
static inline void rt_postq_advance(rt_postq *q)
{
    while (q->done < q->posted && q->op[q->done % RT_RING_WINDOW].done)
        q->done++;
}

/* How many finished since the last call (and remember them as reported). */
static inline int rt_postq_report(rt_postq *q)
{
    int n = (int)(q->done - q->seen);
    q->seen = q->done;
    return n;
}

/* Forget every posted operation (after a failure: the caller's buffers may
 * go away, and nothing may be written into them). */
static inline void rt_postq_cancel(rt_postq *q) { q->done = q->seen = q->posted; }

#endif
