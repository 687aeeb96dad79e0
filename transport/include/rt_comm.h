/* rt_comm.h — the communicator and its collectives: allreduce, broadcast,
 * allgather, reduce-scatter, barrier, and the bucketed fused allreduce the
 * trainer uses for gradients.
 *
 * The ring algorithms are written once (ring.c) against a small transport
 * interface (rt_transport.h) implemented by TCP, shared memory (ranks of
 * one host), RDMA (libibverbs, when built in) and an in-process loopback
 * (ranks as threads, for tests).
 * Every data-plane connection is authenticated with a versioned hello and a
 * mutual HMAC-SHA256 challenge over the per-job key; payloads can be
 * encrypted with AES-256-GCM.
 *
 * Failure semantics: every wait has a deadline.  A timeout, a dead peer or
 * an abort arriving from another rank makes the collective return
 * RT_ERR_TIMEOUT, RT_ERR_IO or RT_ERR_ABORTED with a message naming the
 * rank (and address) that failed; the abort travels around the ring so
 * every rank returns promptly.  The communicator is then broken: later
 * calls return RT_ERR_BROKEN with the first message.  A communicator is used
 * by one thread at a time.
 * (Model: Gloo's AllreduceRing/transport::Pair; UCC's init/post/test.) */
#ifndef RT_COMM_H
#define RT_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_comm rt_comm;
typedef struct rt_loopback_world rt_loopback_world;

typedef enum rt_transport_kind {
    RT_TRANSPORT_TCP = 0,
    RT_TRANSPORT_LOOPBACK = 1,
    RT_TRANSPORT_RDMA = 2,
    RT_TRANSPORT_SHM = 3, /* ranks of one host: shared memory, TCP links for set-up and aborts */
} rt_transport_kind;

#define RT_COMM_KEY_LEN 32

typedef struct rt_comm_opts {
    int rank, size;
    rt_transport_kind transport;
    /* TCP/RDMA: "host:port" of every rank, in ring (rank) order.  Rank r
     * listens on peers[r] (or on listen_fd) and connects to peers[r+1]. */
    const char *const *peers;
    int listen_fd;                 /* an already listening socket, or -1 */
    rt_loopback_world *world;      /* LOOPBACK: the shared in-process world */
    uint64_t job_id;
    uint8_t key[RT_COMM_KEY_LEN];  /* per-job secret for HMAC (and AES-GCM) */
    bool encrypt;                  /* AES-256-GCM on every frame */
    int sockets;                   /* TCP connections per neighbour (>= 1) */
    size_t max_segment_bytes;      /* largest frame (>= 4 KiB); the chunked ring
                                    * cuts at most 64 KiB (ring.c, RT_RING_SEG) */
    size_t small_bytes;            /* allreduce at or below this (and at most
                                    * small_bytes·n/(4(n-2)) for n > 2 ranks):
                                    * allgather whole buffers, reduce in rank order */
    int64_t connect_timeout_us;    /* ring set-up deadline */
    int64_t timeout_us;            /* collective_timeout: each collective's deadline */
    int64_t spin_us;               /* busy-poll this long before sleeping in poll() */
    size_t socket_buffer;          /* SO_SNDBUF/SO_RCVBUF; 0 keeps the kernel's autotuning */
    int64_t yield_us;              /* after the spin, give the core to others (sched_yield)
                                    * this long before sleeping: for ranks that share cores
                                    * (RT_COMM_SHARED_YIELD_US), where a wake-up from poll()
                                    * costs more than the wait; 0 by default */
    bool integrity;                /* AES-GMAC on every frame, payload in clear (default
                                    * on; encrypt implies it): a peer on the path cannot
                                    * alter a gradient unseen */
    const int *global_ranks;       /* rank numbers for messages and abort records (size
                                    * entries): the job's ranks of a communicator inside
                                    * a hierarchy; NULL: its own */
} rt_comm_opts;

/* What ringtrain's launcher sets when a host has more ranks than cores:
 * spin 0, yield this long (bench/allreduce --np 4 on 2 cores, 4 KiB: 285 ->
 * 100 us). */
#define RT_COMM_SHARED_YIELD_US 1000

/* Defaults: TCP, 1 socket, 512 KiB segments, 64 KiB small threshold,
 * 60 s connect and collective timeouts, 50 us spin, autotuned buffers,
 * integrity on, encryption off. */
void rt_comm_opts_defaults(rt_comm_opts *o);

/* Build the communicator: listen (unless listen_fd is given), connect to
 * the right neighbour and accept the left one (authenticated; strangers are
 * dropped and logged), allocate every buffer the collectives need.  Blocks
 * until connected or connect_timeout_us passes. */
rt_status rt_comm_create(const rt_comm_opts *o, rt_comm **out, char *err);
/* Close connections and free everything; NULL is fine. */
void rt_comm_destroy(rt_comm *c);

int rt_comm_rank(const rt_comm *c);
int rt_comm_size(const rt_comm *c);
bool rt_comm_broken(const rt_comm *c);
/* The first error's message ("" when none). */
const char *rt_comm_last_error(const rt_comm *c);
/* Listening address actually bound ("127.0.0.1:40123"), TCP only. */
const char *rt_comm_listen_addr(const rt_comm *c);
/* Change the collective deadline (e.g. short in tests). */
void rt_comm_set_timeout(rt_comm *c, int64_t timeout_us);

/* RT_C_BF16: bfloat16 held in uint16_t (the top half of a float32); each
 * reduction adds in FP32 and rounds to nearest even (rt_bf16_from_f32). */
typedef enum rt_ctype {
    RT_C_F32 = 0,
    RT_C_F64 = 1,
    RT_C_I32 = 2,
    RT_C_I64 = 3,
    RT_C_BF16 = 4
} rt_ctype;
typedef enum rt_redop { RT_SUM = 0, RT_AVG = 1, RT_MAX = 2, RT_MIN = 3 } rt_redop;
size_t rt_ctype_size(rt_ctype t);
/* n floats to bfloat16, rounded to nearest even (NaN stays NaN), and back. */
void rt_bf16_from_f32(uint16_t *dst, const float *src, size_t n);
void rt_bf16_to_f32(float *dst, const uint16_t *src, size_t n);

/* In place: buf (count elements) becomes the reduction over all ranks.
 * Bitwise identical on every rank, and from run to run for a fixed size
 * (fixed reduction order).  RT_AVG divides by the size (float types). */
rt_status rt_allreduce(rt_comm *c, void *buf, size_t count, rt_ctype t, rt_redop op);
/* buf (bytes) on every rank becomes root's. */
rt_status rt_broadcast(rt_comm *c, void *buf, size_t bytes, int root);
/* recv (size * bytes) gets every rank's send block in rank order; send may
 * alias recv + rank*bytes. */
rt_status rt_allgather(rt_comm *c, const void *send, void *recv, size_t bytes);
/* buf holds size blocks of count elements and is used as workspace; out
 * (count elements) receives the reduction of block `rank` over all ranks. */
rt_status rt_reduce_scatter(rt_comm *c, void *buf, void *out, size_t count, rt_ctype t,
                            rt_redop op);
/* Returns when every rank has entered it. */
rt_status rt_barrier(rt_comm *c);

/* ---- hierarchical allreduce (Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE) -----
 * Collective over c (every rank calls it): where every host runs the same
 * number L > 1 of ranks, contiguous (rank = host * L + local_rank, as
 * ringtrain's scheduler places them), and there are two hosts or more, c
 * gains two communicators: the L ranks of its host over shared memory, and
 * the ranks with its local_rank on every host over c's transport.  From then
 * on rt_allreduce (and the fused allreduce) runs in three steps: a
 * reduce-scatter within the host, an allreduce of this rank's 1/L across
 * hosts (L such rings side by side), an allgather within the host; the
 * other collectives keep c's ring.  Results are the same bits on every rank
 * and from run to run, though not the same bits as the flat ring's.  A
 * failure anywhere breaks c and both communicators and reaches every rank.
 * Returns RT_OK with c unchanged when the ranks do not form such a grid (the
 * log says why), and an error when a communicator could not be built. */
rt_status rt_comm_hierarchy(rt_comm *c, int local_rank, int local_size, char *err);
/* Ranks per host of the hierarchy, or 0 when c has none. */
int rt_comm_hierarchy_local_size(const rt_comm *c);

/* ---- fused, bucketed allreduce of one flat float buffer ------------------
 * The buffer is cut into buckets of bucket_bytes from its end (gradients
 * become ready from the last layer back), each bucket allreduced (sum) on a
 * communication thread as soon as all its elements have been marked ready,
 * in the order they became ready.  Backward keeps running meanwhile. */
typedef struct rt_fusion rt_fusion;

rt_status rt_fusion_create(rt_comm *c, float *buf, size_t count, size_t bucket_bytes,
                           rt_fusion **out, char *err);
void rt_fusion_destroy(rt_fusion *f);
/* Allreduce the buckets in bfloat16 (Horovod's Compression.fp16, in bf16):
 * each is rounded to bf16, summed in bf16 round the ring (FP32 adds, one
 * rounding per hop) and widened back in place: half the bytes on the wire,
 * about 3 significant digits. Between rounds only. */
rt_status rt_fusion_set_bf16(rt_fusion *f, bool on, char *err);
/* Start a round: every element is not ready. */
void rt_fusion_begin(rt_fusion *f);
/* Elements [off, off+count) are final; buckets they complete start.  Thread:
 * the one that called rt_fusion_begin. */
void rt_fusion_ready(rt_fusion *f, size_t off, size_t count);
/* Wait for every bucket of the round; the first error of the round. */
rt_status rt_fusion_wait(rt_fusion *f, char *err);
/* Number of buckets, and of buckets completed in this round (tests, logs). */
int rt_fusion_buckets(const rt_fusion *f);
int rt_fusion_completed(rt_fusion *f);
/* When bucket i's allreduce of the current (or last) round ran, on
 * CLOCK_MONOTONIC (rt_now_ns); false if it has not run this round. For
 * timelines. */
bool rt_fusion_bucket_time(rt_fusion *f, int i, int64_t *start_ns, int64_t *end_ns);

/* ---- device buffers (CUDA builds) ----------------------------------------
 * NCCL for GPU buffers when every rank has a GPU and NCCL is built in: the
 * NCCL communicator is created from a ncclUniqueId that rank 0 draws and
 * sends to the others over our own authenticated ring (never MPI).
 * Operations are enqueued on the given cudaStream_t; rt_nccl_wait() is the
 * deadline-bounded wait (a timeout aborts the NCCL communicator). */
typedef struct rt_nccl rt_nccl;

/* True when NCCL is built in and a GPU is visible. */
bool rt_nccl_available(void);
/* Collective over c (every rank): NCCL communicator on the current device.
 * The ranks first agree over c that each has a GPU and no two share one
 * (RT_ERR_UNSUPPORTED on every rank otherwise, naming the ranks); NCCL then
 * initialises within c's collective timeout (RT_ERR_TIMEOUT otherwise). */
rt_status rt_nccl_create(rt_comm *c, void *cuda_stream, rt_nccl **out, char *err);
void rt_nccl_destroy(rt_nccl *n);
/* In place on device memory; enqueued on the stream given at create. */
rt_status rt_nccl_allreduce(rt_nccl *n, void *dev_buf, size_t count, rt_ctype t, rt_redop op,
                            char *err);
rt_status rt_nccl_broadcast(rt_nccl *n, void *dev_buf, size_t bytes, int root, char *err);
/* Wait for everything enqueued on the stream, at most timeout_us; on timeout
 * or an asynchronous NCCL error the communicator is aborted (broken). */
rt_status rt_nccl_wait(rt_nccl *n, int64_t timeout_us, char *err);
/* The same for another stream whose work depends on n's collectives (the
 * compute stream after a join): NCCL errors are watched while waiting. */
rt_status rt_nccl_wait_stream(rt_nccl *n, void *cuda_stream, int64_t timeout_us, char *err);

/* Allreduce of device memory over c's host transport, staging through
 * pinned host buffers in pipelined chunks (copy-out of chunk i+1 and
 * copy-in of chunk i-1 overlap the network reduction of chunk i).  For GPUs
 * without NCCL (or NCCL disabled).  Synchronous; RT_ERR_UNSUPPORTED in a
 * build without CUDA. */
rt_status rt_allreduce_device(rt_comm *c, void *dev_buf, size_t count, rt_ctype t, rt_redop op,
                              void *cuda_stream, char *err);

/* True when the RDMA transport is built in and a verbs device is present. */
bool rt_rdma_available(void);

/* ---- in-process loopback world (tests, single-process runs) -------------- */
rt_status rt_loopback_world_create(int size, rt_loopback_world **out);
void rt_loopback_world_destroy(rt_loopback_world *w);

/* ---- the Run API: joining a job's ring from a program an agent started ----
 * The agent passes the rank's place in the job in the environment (RT_RANK,
 * RT_SIZE, RT_LOCAL_RANK, RT_LOCAL_SIZE, RT_CROSS_RANK, RT_CROSS_SIZE,
 * RT_JOB_ID, RT_ATTEMPT), the peers and the job key in RT_RENDEZVOUS_FILE,
 * the already bound data-plane socket as RT_LISTEN_FD and a channel to the
 * agent as RT_CONTROL_FD.  (Horovod's hvd.init(), torchrun's env://.) */
typedef struct rt_rank_info {
    int rank, size, local_rank, local_size, cross_rank, cross_size;
    int64_t job_id, attempt;
    char transport[16]; /* tcp, rdma or nccl (NCCL runs over the ring's bootstrap) */
    int64_t collective_timeout_us;
} rt_rank_info;

/* Build this rank's communicator (blocks until the ring is connected or the
 * collective timeout passes).  RT_ERR_NOTFOUND when not started by an agent. */
rt_status rt_init_from_env(rt_comm **out, rt_rank_info *info, char *err);
/* Send one JSON object (a single line, no newline) to the agent, which
 * relays it to the coordinator as progress; non-blocking, best effort.
 * {"kind": "warning", "text": T} becomes an event of the job (`ringtrain
 * status`, the dashboard; docs/protocol.md).  A no-op when not started by
 * an agent. */
void rt_report_progress(const char *json_object);
/* Report this rank's result (any JSON value, at most 60 KiB), as
 * horovod.spark.run returns each rank's value: kept with the job's current
 * attempt (`ringtrain status JOB --results`, GET /v1/jobs/ID "results"); a
 * later call replaces it.  Delivered before the rank's exit.  RT_ERR_INVALID
 * for text that is not one JSON value, RT_ERR_NOTFOUND when not started by
 * an agent, RT_ERR_IO when the agent cannot be reached (5 s). */
rt_status rt_report_result(const char *json_value, char *err);

/* The version of the library in use (CMakeLists.txt's project version, the
 * project's one); RT_VERSION (rt_build_config.h) is the one a program was
 * compiled against. */
const char *rt_version(void);

/* ---- helpers exposed for tests and benchmarks ------------------------------ */

/* Balanced split of total into parts: part i is [*off, *off + *len).  Parts
 * differ in length by at most one; a length of 0 is an ordinary case. */
void rt_split(size_t total, size_t parts, size_t i, size_t *off, size_t *len);

/* Bind and listen on host:port (port 0 picks one); *addr_out gets
 * "host:port" (caller frees).  For launchers that must know the addresses
 * before starting ranks. */
rt_status rt_listen_tcp(const char *host, int port, int *fd_out, char **addr_out, char *err);

#ifdef __cplusplus
}
#endif
#endif
