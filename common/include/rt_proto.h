/* rt_proto.h — the control protocol, written once: every message between
 * an agent and the coordinator (its wire name, direction and required
 * fields), the field names, the environment an agent gives a rank and the
 * keys of a rank's rendezvous file.  Both sides of every process boundary
 * use these names; docs/protocol.md describes each message and a test keeps
 * the two in step and checks that every message has a receiver.
 *
 * Frames (rt_net.h): a 4-byte little-endian length, then a JSON object with
 * a string "type".  Unknown fields are ignored; a frame whose type is
 * unknown, or that lacks a required field or has it with the wrong JSON
 * type, is a protocol error: the connection is closed and the reason
 * logged. */
#ifndef RT_PROTO_H
#define RT_PROTO_H

#include <stdbool.h>

#include "rt_json.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the control protocol (the agent's hello carries it; the
 * coordinator refuses another). */
#define RT_PROTO_VERSION 2
/* The largest control frame (its JSON text), either way; a frame that would
 * be larger is not sent: the job or the hello is refused with the reason. */
#define RT_FRAME_MAX (1u << 20)
/* Before an agent has registered, its frames (the hello) are at most this:
 * a stranger cannot make the coordinator parse megabytes before the token
 * is checked.  The agent fits its hello (the exits it repeats) into it. */
#define RT_HELLO_MAX (256u << 10)

/* An attempt's data-plane identity (rt_comm_opts.job_id): in the handshake,
 * and in the names of its shared-memory segments, "/dev/shm/" RT_SHM_PREFIX
 * "<16 hex of it>-<rt_shm_tag><16 random hex>", which the agent removes when
 * the attempt's last rank on the node has exited (a rank killed while setting
 * up its ring may leave one).  Two clusters on one host number their jobs
 * alike (from 1): the tag, from the attempt's ring key, keeps one's agent
 * from removing the other's live segments. */
static inline uint64_t rt_attempt_id(int64_t job, int64_t attempt)
{
    return ((uint64_t)job << 16) ^ (uint64_t)attempt;
}
#define RT_SHM_PREFIX "ringtrain-"
/* The hierarchical allreduce's rings (transport/hier.c) take the attempt's
 * id XOR these: within a host (over shared memory) and across hosts. */
#define RT_HIER_SALT_LOCAL 0x4c4f43414c000001ull /* "LOCAL" */
#define RT_HIER_SALT_CROSS 0x43524f5353000002ull /* "CROSS" */
/* The tag: the first 16 hex digits of SHA-256("ringtrain-shm:" key_hex),
 * key_hex the ring key in lower-case hex (the rendezvous file's "key"; any
 * case is lowered first); it names no part of the key. */
#define RT_SHM_TAG_HEX 16
void rt_shm_tag(const char *key_hex, char tag[RT_SHM_TAG_HEX + 1]);

typedef enum rt_msg {
    /* agent -> coordinator */
    RT_MSG_HELLO = 0, /* register: token, identity, slots, capabilities, ranks running */
    RT_MSG_HEARTBEAT, /* alive */
    RT_MSG_BYE,       /* stopping on purpose */
    RT_MSG_PREPARED,  /* the ranks of an attempt have data-plane sockets (or an error) */
    RT_MSG_STARTED,   /* one rank's process runs */
    RT_MSG_EXITED,    /* one rank's process ended: code or signal, last lines */
    RT_MSG_PROGRESS,  /* a rank's progress report (relayed from the rank) */
    RT_MSG_LOG_DATA,  /* a chunk of a rank's output for an open log stream */
    /* coordinator -> agent */
    RT_MSG_WELCOME,   /* registered */
    RT_MSG_ERROR,     /* refused: the reason; the connection closes */
    RT_MSG_PREPARE,   /* bind data-plane sockets for these ranks of an attempt */
    RT_MSG_START,     /* start the prepared ranks: peers, key, program */
    RT_MSG_ABORT,     /* stop every rank of an attempt */
    RT_MSG_LOG_OPEN,  /* stream a rank's output */
    RT_MSG_LOG_CLOSE, /* stop streaming */
    RT_MSG_COUNT
} rt_msg;

typedef enum rt_msg_dir { RT_TO_COORD = 1, RT_TO_AGENT = 2 } rt_msg_dir;

typedef struct rt_msg_info {
    const char *name;   /* the "type" on the wire */
    rt_msg_dir dir;
    /* Required fields with their JSON type, space-separated "name:t" where
     * t is i (integer), n (number), s (string), b (bool), a (array) or o
     * (object). */
    const char *fields;
    const char *purpose; /* one line, for docs and logs */
} rt_msg_info;

/* The table, indexed by rt_msg. */
extern const rt_msg_info rt_msgs[RT_MSG_COUNT];

/* Wire name -> message; RT_MSG_COUNT when unknown (or name is NULL). */
rt_msg rt_msg_parse(const char *name);
const char *rt_msg_name(rt_msg m);
/* The message's type, if it is a known message travelling in direction dir
 * with every required field of the right type; otherwise RT_MSG_COUNT and a
 * sentence in err ("'prepared' without an integer \"attempt\""). */
rt_msg rt_msg_check(const rt_json *m, rt_msg_dir dir, char *err);

/* ---- field names ------------------------------------------------------------ */
#define RT_F_TYPE "type"
#define RT_F_TOKEN "token"
#define RT_F_PROTO "proto"
#define RT_F_VERSION "version"
#define RT_F_HOST_ID "host_id"
#define RT_F_NAME "name"
#define RT_F_HOSTNAME "hostname"
#define RT_F_SLOTS "slots"
#define RT_F_ADDRESS "address"
#define RT_F_CAPS "caps"       /* {cuda, nccl, rdma, gpus, gpu_names, cpu, ...} */
#define RT_F_RUNNING "running" /* [{job, attempt, rank, pid}] */
#define RT_F_EXITED "exited"   /* [exited messages the coordinator missed] */
#define RT_F_AGENT "agent"
#define RT_F_HEARTBEAT_MS "heartbeat_ms"
#define RT_F_REASON "reason"
#define RT_F_WORKERS "workers"
#define RT_F_JOB "job"
#define RT_F_ATTEMPT "attempt"
#define RT_F_SIZE "size"
#define RT_F_RANK "rank"
#define RT_F_RANKS "ranks" /* prepare: [{rank, local_rank, ...}]; prepared: [{rank, addr}] */
#define RT_F_LOCAL_RANK "local_rank"
#define RT_F_LOCAL_SIZE "local_size"
#define RT_F_MACHINE "machine"
#define RT_F_MACHINE_RANKS "machine_ranks"
#define RT_F_CROSS_RANK "cross_rank"
#define RT_F_CROSS_SIZE "cross_size"
#define RT_F_ADDR "addr"
#define RT_F_ERROR "error"
#define RT_F_JOB_TYPE "job_type" /* "train" or "exec" */
#define RT_F_KEY "key"           /* the attempt's data-plane secret, hex */
/* the ring's settings (transport, sockets, ...) are rt_run.h's list */
#define RT_F_PEERS "peers"
#define RT_F_ARGV "argv"
#define RT_F_ENV "env"
#define RT_F_CWD "cwd"
#define RT_F_UNIX_USER "unix_user"
#define RT_F_CONFIG "config"
/* a sweep's trial or last step: its sweep's id and its number (0: the last
 * step), in its submission; start: the job whose id picks the ranks' uid
 * (job_uids: every job of a sweep runs as the sweep's), and the last step's
 * results (the agent writes them beside job.ini as sweep.json) */
#define RT_F_SWEEP "sweep"
#define RT_F_TRIAL "trial"
#define RT_F_IDENTITY_JOB "identity_job"
#define RT_F_SWEEP_RESULTS "sweep_results"
/* how the reason of a trial its sweep's time budget stopped begins (the
 * coordinator writes it, `ringtrain status` reads it) */
#define RT_SWEEP_BUDGET_STOP "stopped by the sweep's time budget"
#define RT_F_PID "pid"
#define RT_F_CODE "code"
/* A training rank's exit code when a collective with its peers failed (a
 * peer gone, a timeout): another rank's failure is the cause, when one
 * comes (docs/cluster.md "Failures") */
#define RT_EXIT_PEER 75
#define RT_F_SIGNAL "signal"
#define RT_F_TAIL "tail"
#define RT_F_DATA "data"
#define RT_F_REQ "req"
#define RT_F_FOLLOW "follow"
#define RT_F_LINES "lines" /* log_open: whole lines only (every rank's stream) */
#define RT_F_SKIP "skip"
#define RT_F_EOF "eof"
#define RT_F_NODE_RANK "node_rank"     /* prepare: the rank's host, 0.. in placement order */
#define RT_F_NODES "nodes"             /* prepare: how many hosts the attempt spans */
#define RT_F_MASTER_PORT "master_port" /* prepared (rank 0) and start: MASTER_PORT */
#define RT_F_MAX_RESTARTS "max_restarts"
#define RT_F_GPU "gpu" /* started: the rank's CUDA_VISIBLE_DEVICES */
#define RT_F_MEMORY_LIMIT "memory_limit_bytes" /* start: per rank (absent: none) */
#define RT_F_CPU_LIMIT "cpu_limit"             /* start: CPUs per rank (absent: none) */
#define RT_F_DISK_LIMIT "disk_limit_bytes"     /* start: per node (absent: the agent's) */
#define RT_F_USAGE "usage" /* heartbeat: [{job, attempt, rank, cpu_s, rss_bytes, procs}] */

/* ---- what an agent gives each rank it starts --------------------------------- */
#define RT_ENV_RANK "RT_RANK"
#define RT_ENV_SIZE "RT_SIZE"
#define RT_ENV_LOCAL_RANK "RT_LOCAL_RANK"
#define RT_ENV_LOCAL_SIZE "RT_LOCAL_SIZE"
#define RT_ENV_MACHINE_RANKS "RT_MACHINE_RANKS"
#define RT_ENV_NODE_SLOTS "RT_NODE_SLOTS" /* the agent's slots: ranks side by side share CPUs */
#define RT_ENV_CROSS_RANK "RT_CROSS_RANK"
#define RT_ENV_CROSS_SIZE "RT_CROSS_SIZE"
#define RT_ENV_JOB_ID "RT_JOB_ID"
#define RT_ENV_ATTEMPT "RT_ATTEMPT"
#define RT_ENV_RENDEZVOUS_FILE "RT_RENDEZVOUS_FILE" /* JSON, mode 0400: the keys below */
#define RT_ENV_LISTEN_FD "RT_LISTEN_FD"             /* the bound data-plane socket (3) */
#define RT_ENV_CONTROL_FD "RT_CONTROL_FD"           /* progress lines to the agent (4) */
#define RT_ENV_WORK_DIR "RT_WORK_DIR"
#define RT_ENV_LIBRARY "RT_LIBRARY" /* the agent's libringtrain (the Python binding loads it) */
#define RT_LISTEN_FD_NUM 3
#define RT_CONTROL_FD_NUM 4

/* ---- a job's states: as the API, the database, the CLI and the dashboard
 * (served in GET /v1/session) name them; one table (rt_proto.c) ---------------- */
typedef enum rt_job_state {
    RT_JS_QUEUED,
    RT_JS_STARTING,
    RT_JS_RUNNING,
    RT_JS_RESTARTING,
    RT_JS_SUCCEEDED, /* the last three are terminal */
    RT_JS_FAILED,
    RT_JS_CANCELLED,
    RT_JS_COUNT
} rt_job_state;
const char *rt_job_state_name(int s); /* "?" when out of range */
int rt_job_state_parse(const char *name); /* -1 when unknown */
bool rt_job_state_terminal(int s);

/* A name a job gives (a metric or progress key, a tag): 1 to
 * RT_NAME_MAX bytes of [A-Za-z0-9_.-].  Checked where it enters (the
 * coordinator drops and counts the others); shown escaped everywhere. */
#define RT_NAME_MAX 64
bool rt_name_ok(const char *s);
/* "queued, starting, ..., cancelled", for messages */
const char *rt_job_state_list(void);

/* The rendezvous file: {job, attempt, rank, size, local_rank, local_size,
 * cross_rank, cross_size, peers, key, transport, sockets,
 * collective_timeout_ms, encrypt, integrity, hierarchical} — the RT_F_ names above. */

#ifdef __cplusplus
}
#endif
/* The keys of a training rank's progress lines (rt_report_progress; the
 * epoch's also its history.jsonl line): what the coordinator (the step
 * chart, ASHA's monitor, /metrics), the CLI and sweeps read.  The
 * dashboard's names are web/app.js's PROGRESS_KEYS, the same. */
#define RT_P_KIND "kind"         /* "step", "epoch" or "warning" (its "text": an event) */
#define RT_P_LOSS "loss"         /* step: the epoch's mean loss so far; epoch: its mean */
#define RT_P_VAL_LOSS "val_loss" /* epoch: on the validation rows (null without) */
#define RT_P_VAL_PREFIX "val_"   /* epoch: val_ + a metric's name */
#define RT_P_SAMPLES_PER_S "samples_per_s"
#define RT_P_STEPS_PER_S "steps_per_s"

#endif
