/* shm.c — the shared-memory transport, for ranks that share a host.
 *
 * Bootstrap: the same authenticated TCP links as the TCP transport (one per
 * neighbour, sidelink.c).  Each rank creates the segment its left neighbour
 * will write into (POSIX shared memory, mode 0600, named by the attempt, its
 * ring key's tag and 64 random bits — rt_proto.h — its pages reserved with posix_fallocate so a full /dev/shm is an error now
 * rather than a SIGBUS later), sends the name to the left over the link, and
 * opens the segment named by its right neighbour after checking that it is
 * owned by this user and has the size announced.  Once both neighbours have
 * opened theirs the names are unlinked: nothing else can open them, and the
 * memory goes when the last rank unmaps it, even after a SIGKILL.  The links
 * stay open for abort records, the BYE of a normal close and the end of
 * stream of a neighbour that died.
 *
 * Data: a segment is a ring of `nslots` slots of (16-byte frame header +
 * max_segment_bytes).  The sender copies frame i into slot i % nslots and
 * publishes it by advancing `head` (release); the receiver checks the
 * header against what it posted, copies the payload out and advances
 * `tail`, the sender's credit.  Waiting spins for spin_us, yields for
 * yield_us, then sleeps on a futex in the segment (the other side wakes it
 * only when it says it sleeps), waking every few milliseconds to read the
 * links.  Frames never leave the host: they are not sealed (the segment is
 * readable by this user only), even when the job encrypts its TCP frames.
 * (Model: Open MPI's vader BTL copy-in/copy-out fast boxes.) */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <openssl/crypto.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rt_hex.h"
#include "rt_log.h"
#include "rt_proto.h"
#include "sidelink.h"

#define SEG_MAGIC 0x314d4853544e5252ull /* "RRNTSHM1" */
#define SEG_BUDGET (8u << 20)           /* bytes of slots per segment, at most */
#define MAX_SLOTS 16
#define REC_LEN 96                      /* the record sent to the left neighbour */
#define NAME_LEN 64
#define SLEEP_MS 2                      /* longest futex sleep between link checks */

typedef struct shm_seg {
    uint64_t magic;
    uint32_t nslots, slot_bytes;
    _Alignas(64) _Atomic uint32_t head; /* frames published by the sender */
    _Atomic uint32_t recv_sleeps;       /* the receiver sleeps on head */
    _Alignas(64) _Atomic uint32_t tail; /* frames consumed by the receiver */
    _Atomic uint32_t send_sleeps;       /* the sender sleeps on tail */
    _Alignas(64) uint8_t slots[];
} shm_seg;

typedef struct shm_state {
    rt_sidelink side;
    shm_seg *in, *out; /* from the left (ours), to the right (the right's) */
    size_t in_bytes, out_bytes;  /* mapped sizes */
    uint32_t in_slots, out_slots; /* each chosen by the segment's maker (receiver) */
    uint32_t slot_bytes;
    char in_name[NAME_LEN];
    bool in_linked; /* in_name still exists in /dev/shm */
    rt_postq sq, rq;
} shm_state;

static size_t seg_bytes(uint32_t nslots, uint32_t slot_bytes)
{
    return sizeof(shm_seg) + (size_t)nslots * slot_bytes;
}

static void futex_wait(_Atomic uint32_t *w, uint32_t seen, int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, seen, &ts, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w) { syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, 1, NULL, NULL, 0); }

/* ---- connect ------------------------------------------------------------- */

static rt_status create_in(rt_comm *c, shm_state *s, char *err)
{
    uint8_t rnd[8];
    if (rt_random(rnd, sizeof rnd) != RT_OK)
        return rt_err(err, RT_ERR_IO, "no random bytes for a shared-memory name");
    char hex[2 * sizeof rnd + 1], key[2 * RT_COMM_KEY_LEN + 1], tag[RT_SHM_TAG_HEX + 1];
    rt_hex_encode(rnd, sizeof rnd, hex);
    rt_hex_encode(c->o.key, RT_COMM_KEY_LEN, key);
    rt_shm_tag(key, tag);
    OPENSSL_cleanse(key, sizeof key);
    /* the attempt's id and tag first: an agent removes what a rank killed
     * during set-up left behind (RT_SHM_PREFIX), its cluster's only */
    snprintf(s->in_name, sizeof s->in_name, "/" RT_SHM_PREFIX "%016llx-%s%s",
             (unsigned long long)c->o.job_id, tag, hex);
    int fd = shm_open(s->in_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return rt_err(err, RT_ERR_IO, "cannot create shared memory %s: %s", s->in_name,
                      strerror(errno));
    s->in_linked = true;
    /* as many slots as fit the budget, and a sixteenth of what /dev/shm has
     * free (the other ranks of the host need theirs: a container's default
     * is 64 MiB); at least 2, fewer than planned when it fills up now */
    size_t budget = SEG_BUDGET;
    struct statvfs vfs;
    if (fstatvfs(fd, &vfs) == 0 && (size_t)vfs.f_bavail * vfs.f_frsize / 16 < budget)
        budget = (size_t)vfs.f_bavail * vfs.f_frsize / 16;
    size_t want = budget / s->slot_bytes;
    s->in_slots = (uint32_t)(want < 2 ? 2 : want > MAX_SLOTS ? MAX_SLOTS : want);
    int e;
    while ((e = posix_fallocate(fd, 0, (off_t)seg_bytes(s->in_slots, s->slot_bytes))) == ENOSPC &&
           s->in_slots > 2) {
        s->in_slots /= 2;
        if (ftruncate(fd, 0) != 0)
            break;
    }
    if (e != 0) {
        close(fd);
        return rt_err(err, e == ENOSPC ? RT_ERR_NOMEM : RT_ERR_IO,
                      "cannot reserve %zu KiB of shared memory in /dev/shm: %s (a container's "
                      "--shm-size too small? or set transport = tcp)",
                      seg_bytes(s->in_slots, s->slot_bytes) >> 10, strerror(e));
    }
    s->in_bytes = seg_bytes(s->in_slots, s->slot_bytes);
    void *p = mmap(NULL, s->in_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return rt_err(err, RT_ERR_IO, "mmap of shared memory: %s", strerror(errno));
    s->in = p;
    s->in->nslots = s->in_slots;
    s->in->slot_bytes = s->slot_bytes;
    atomic_store(&s->in->head, 0);
    atomic_store(&s->in->tail, 0);
    s->in->magic = SEG_MAGIC;
    return RT_OK;
}

/* The right neighbour's segment, named in its record: ours only if this
 * user owns it and its size and layout are the ones agreed. */
static rt_status open_out(rt_comm *c, shm_state *s, const uint8_t rec[REC_LEN], char *err)
{
    const char *who = s->side.links.right_name;
    char name[NAME_LEN];
    memcpy(name, rec + 16, NAME_LEN);
    name[NAME_LEN - 1] = '\0';
    uint64_t magic;
    uint32_t nslots, slot_bytes;
    memcpy(&magic, rec, 8);
    memcpy(&nslots, rec + 8, 4);
    memcpy(&slot_bytes, rec + 12, 4);
    c->fail_culprit = c->right;
    if (magic != SEG_MAGIC || strncmp(name, "/" RT_SHM_PREFIX, strlen(RT_SHM_PREFIX) + 1) != 0 ||
        strchr(name + 1, '/'))
        return rt_err(err, RT_ERR_PROTO, "%s sent no shared-memory record (another transport?)",
                      who);
    if (nslots < 2 || nslots > MAX_SLOTS || slot_bytes != s->slot_bytes)
        return rt_err(err, RT_ERR_PROTO,
                      "%s uses another slot layout (%u slots of %u bytes, here slots of %u: "
                      "max_segment_bytes differs?)",
                      who, nslots, slot_bytes, s->slot_bytes);
    s->out_slots = nslots;
    s->out_bytes = seg_bytes(nslots, slot_bytes);
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return rt_err(err, RT_ERR_IO,
                      "cannot open the shared memory of %s: %s (transport = shm needs every "
                      "rank on this host, in the same /dev/shm)",
                      who, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077) ||
        (size_t)st.st_size != s->out_bytes) {
        close(fd);
        return rt_err(err, RT_ERR_AUTH,
                      "the shared memory of %s is not this user's private segment of %zu bytes",
                      who, s->out_bytes);
    }
    void *p = mmap(NULL, s->out_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return rt_err(err, RT_ERR_IO, "mmap of %s's shared memory: %s", who, strerror(errno));
    s->out = p;
    if (s->out->magic != SEG_MAGIC || s->out->nslots != s->out_slots ||
        s->out->slot_bytes != s->slot_bytes)
        return rt_err(err, RT_ERR_PROTO, "the shared memory of %s has another layout", who);
    return RT_OK;
}

static rt_status shm_connect(rt_comm *c, rt_deadline_t dl, char *err)
{
    shm_state *s = calloc(1, sizeof *s);
    if (!s)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    c->tp = s;
    s->slot_bytes = (uint32_t)((RT_FRAME_HDR_LEN + c->o.max_segment_bytes + 63) & ~(size_t)63);
    rt_status st = rt_sidelink_open(c, dl, &s->side, err);
    if (st == RT_OK)
        st = create_in(c, s, err);
    if (st != RT_OK)
        return st;
    /* our segment's name to the left; the right's name from the right */
    uint8_t rec[REC_LEN] = {0}, peer[REC_LEN];
    uint64_t magic = SEG_MAGIC;
    memcpy(rec, &magic, 8);
    memcpy(rec + 8, &s->in_slots, 4);
    memcpy(rec + 12, &s->slot_bytes, 4);
    memcpy(rec + 16, s->in_name, strlen(s->in_name));
    int fr = s->side.links.out[0], fl = s->side.links.in[0];
    st = rt_sock_write_full(fl, rec, REC_LEN, dl, err);
    if (st == RT_OK)
        st = rt_sock_read_full(fr, peer, REC_LEN, dl, err);
    if (st == RT_OK)
        st = open_out(c, s, peer, err);
    /* tell the right whether we could open its segment, hear the same from
     * the left: then our name can go */
    char ok = st == RT_OK ? 'R' : 'E', left_ok = 'E';
    char why[RT_ERR_LEN];
    rt_status wst = rt_sock_write_full(fr, &ok, 1, dl, why);
    if (st != RT_OK)
        return st;
    if (wst != RT_OK)
        return rt_err(err, wst, "%s", why);
    st = rt_sock_read_full(fl, &left_ok, 1, dl, err);
    shm_unlink(s->in_name);
    s->in_linked = false;
    if (st != RT_OK)
        return st;
    if (left_ok != 'R') {
        c->fail_culprit = c->left;
        return rt_err(err, RT_ERR_IO, "%s could not open this rank's shared memory (see its log)",
                      s->side.links.left_name);
    }
    RT_DEBUG("shm", "rank %d: %u slots in, %u out, of %u bytes", c->rank, s->in_slots,
             s->out_slots, s->slot_bytes);
    return RT_OK;
}

static void shm_close(rt_comm *c)
{
    shm_state *s = c->tp;
    if (!s)
        return;
    rt_sidelink_close(c, &s->side);
    if (s->in_linked)
        shm_unlink(s->in_name);
    if (s->in)
        munmap(s->in, s->in_bytes);
    if (s->out)
        munmap(s->out, s->out_bytes);
    free(s);
    c->tp = NULL;
}

/* ---- data ------------------------------------------------------------------ */

static rt_status shm_post_send(rt_comm *c, const void *buf, size_t len, uint32_t seq, uint32_t seg)
{
    shm_state *s = c->tp;
    RT_ASSERT(len <= c->o.max_segment_bytes);
    rt_postq_push(&s->sq, (void *)buf, len, seq, seg);
    return RT_OK;
}

static rt_status shm_post_recv(rt_comm *c, void *buf, size_t len, uint32_t seq, uint32_t seg)
{
    shm_state *s = c->tp;
    RT_ASSERT(len <= c->o.max_segment_bytes);
    rt_postq_push(&s->rq, buf, len, seq, seg);
    return RT_OK;
}

/* Copy every posted send that has a free slot; the caller's buffer is free
 * once its bytes are in the slot. */
static bool issue_sends(shm_state *s)
{
    shm_seg *o = s->out;
    uint32_t tail = atomic_load_explicit(&o->tail, memory_order_acquire);
    bool any = false;
    while (s->sq.done < s->sq.posted && (uint32_t)s->sq.done - tail < s->out_slots) {
        const rt_post *op = rt_postq_at(&s->sq, s->sq.done);
        uint8_t *dst = o->slots + (size_t)(s->sq.done % s->out_slots) * s->slot_bytes;
        rt_frame_hdr h = {RT_FRAME_DATA, 0, op->seq, op->seg, (uint32_t)op->len};
        rt_frame_encode(&h, dst);
        if (op->len)
            memcpy(dst + RT_FRAME_HDR_LEN, op->p, op->len);
        s->sq.done++;
        atomic_store_explicit(&o->head, (uint32_t)s->sq.done, memory_order_release);
        any = true;
    }
    if (any) {
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&o->recv_sleeps, memory_order_relaxed))
            futex_wake(&o->head);
    }
    return any;
}

/* Copy out every frame that has arrived and has a posted receive, after
 * checking its header against the post. */
static rt_status consume(rt_comm *c, shm_state *s, bool *any, char *err)
{
    shm_seg *in = s->in;
    uint32_t head = atomic_load_explicit(&in->head, memory_order_acquire);
    while (s->rq.done < s->rq.posted && (uint32_t)s->rq.done != head) {
        const rt_post *op = rt_postq_at(&s->rq, s->rq.done);
        const uint8_t *src = in->slots + (size_t)(s->rq.done % s->in_slots) * s->slot_bytes;
        uint8_t hb[RT_FRAME_HDR_LEN];
        memcpy(hb, src, sizeof hb); /* the peer's memory: read the header once */
        rt_frame_hdr h;
        char why[RT_ERR_LEN];
        if ((uint32_t)(head - (uint32_t)s->rq.done) > s->in_slots) {
            c->fail_culprit = c->left;
            return rt_err(err, RT_ERR_PROTO, "%s published %u frames into %u slots",
                          s->side.links.left_name, head - (uint32_t)s->rq.done, s->in_slots);
        }
        if (rt_frame_decode(hb, RT_FRAME_HDR_LEN, &h, why) != RT_OK) {
            c->fail_culprit = c->left;
            return rt_err(err, RT_ERR_PROTO, "bad frame from %s: %s", s->side.links.left_name, why);
        }
        if (h.op != RT_FRAME_DATA || h.seq != op->seq || h.seg != op->seg || h.len != op->len) {
            c->fail_culprit = c->left;
            return rt_err(err, RT_ERR_PROTO,
                          "%s sent frame %u of collective #%u (%u bytes), expected frame %u of "
                          "#%u (%zu bytes): the ranks called different collectives",
                          s->side.links.left_name, h.seg, h.seq, h.len, op->seg, op->seq, op->len);
        }
        if (op->len)
            memcpy(op->p, src + RT_FRAME_HDR_LEN, op->len);
        s->rq.done++;
        atomic_store_explicit(&in->tail, (uint32_t)s->rq.done, memory_order_release);
        *any = true;
    }
    if (*any) {
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&in->send_sleeps, memory_order_relaxed))
            futex_wake(&in->tail);
    }
    return RT_OK;
}

/* Sleep until the word we need moves (or ms pass): new data when a receive
 * waits for it, else a free slot for a send. */
static void sleep_on_segment(shm_state *s, int ms)
{
    bool recv_waits = s->rq.done < s->rq.posted;
    bool send_waits = s->sq.done < s->sq.posted;
    _Atomic uint32_t *word, *flag;
    uint32_t seen;
    if (recv_waits) {
        word = &s->in->head;
        flag = &s->in->recv_sleeps;
        seen = (uint32_t)s->rq.done;
        if (send_waits && ms > 0)
            ms = 1; /* a credit for the send would not wake us: look again soon */
    } else if (send_waits) {
        word = &s->out->tail;
        flag = &s->out->send_sleeps;
        seen = (uint32_t)s->sq.done - s->out_slots; /* the slot we need frees when tail passes */
    } else {
        return;
    }
    atomic_store(flag, 1);
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load(word) == seen)
        futex_wait(word, seen, ms);
    atomic_store(flag, 0);
}

static rt_status shm_wait(rt_comm *c, rt_deadline_t dl, int *nsend, int *nrecv, char *err)
{
    shm_state *s = c->tp;
    const int64_t spin_end = rt_now_ns() + c->o.spin_us * 1000;
    const int64_t yield_end = spin_end + c->o.yield_us * 1000;
    for (unsigned iter = 0;; iter++) {
        bool any = issue_sends(s);
        rt_status st = consume(c, s, &any, err);
        if (st != RT_OK)
            return st;
        if (any || s->sq.done > s->sq.seen || s->rq.done > s->rq.seen) {
            *nsend += rt_postq_report(&s->sq);
            *nrecv += rt_postq_report(&s->rq);
            return RT_OK;
        }
        if (s->side.right_bye && s->sq.done < s->sq.posted) {
            c->fail_culprit = c->right;
            return rt_err(err, RT_ERR_IO, "%s closed its communicator while this rank still had "
                                          "data for it", s->side.links.right_name);
        }
        int64_t now = rt_now_ns();
        bool sleep = now >= yield_end;
        /* the links: on every sleep, and now and then while spinning.  A
         * neighbour that finished closes its link right after publishing its
         * last frames, which may land between our look at the segment and
         * this: take them first (unlike TCP, data and end of stream do not
         * share one ordered stream); fail only when nothing more came.  And
         * its end of stream fails nothing while no receive waits on it: this
         * rank may have all it needs from the left and only sends to finish
         * (n = 8, once on CI: rank 3 failed so while rank 4 was slow to
         * take its last frames) */
        if ((sleep || (iter & 1023) == 1023) && (st = rt_sidelink_poll(c, &s->side, 0, err)) != RT_OK) {
            bool more = false;
            char why[RT_ERR_LEN];
            if (consume(c, s, &more, why) == RT_OK && more) {
                *nsend += rt_postq_report(&s->sq);
                *nrecv += rt_postq_report(&s->rq);
                return RT_OK;
            }
            if (!(s->side.left_eof && s->rq.done == s->rq.posted))
                return st;
        }
        if (now >= dl)
            return rt_err(err, RT_ERR_TIMEOUT, "timed out");
        if (now < spin_end)
            continue;
        if (!sleep) { /* ranks sharing cores: let the others run */
            sched_yield();
            continue;
        }
        int ms = rt_deadline_ms_left(dl);
        sleep_on_segment(s, ms < SLEEP_MS ? (ms > 0 ? ms : 1) : SLEEP_MS);
    }
}

static rt_status shm_await_abort(rt_comm *c, rt_deadline_t dl)
{
    return rt_sidelink_await_abort(c, &((shm_state *)c->tp)->side, dl);
}

static void shm_cancel(rt_comm *c)
{
    shm_state *s = c->tp;
    if (!s)
        return;
    /* frames are copied out only into posted buffers: forgetting the posts
     * keeps later arrivals out of the caller's memory */
    rt_postq_cancel(&s->sq);
    rt_postq_cancel(&s->rq);
}

static void shm_abort(rt_comm *c, const rt_abort_info *info)
{
    shm_state *s = c->tp;
    if (s)
        rt_sidelink_abort(c, &s->side, info);
}

const rt_transport_ops rt_shm_ops = {
    .name = "shm",
    .connect = shm_connect,
    .post_send = shm_post_send,
    .post_recv = shm_post_recv,
    .wait = shm_wait,
    .await_abort = shm_await_abort,
    .cancel = shm_cancel,
    .abort = shm_abort,
    .close = shm_close,
};
