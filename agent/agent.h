/* agent.h — private to agent/: the agent's model and the functions its
 * files share.
 *
 *   agent_core.c   connection to the coordinator (TLS, hello, heartbeats,
 *                  reconnect with backoff), one handler per protocol
 *                  message, the node probe, systemd notifications
 *   agent_proc.c   workers: prepare (bind the rank's data socket), start
 *                  (fork/exec in its own process group with the rendezvous
 *                  environment), output capture, reaping, abort
 *   agent_logs.c   per-rank log files with rotation, streaming to the
 *                  coordinator, the tail kept for failure reports
 *   agent_link.c   the bottom: frames to the coordinator, and the exits
 *                  kept while it is away
 *   hostid.c       the host hash
 *
 * core uses proc and logs; proc and logs use link; nothing uses core.
 * One libevent thread. */
#ifndef RT_AGENT_H
#define RT_AGENT_H

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "rt_json.h"
#include "rt_net.h"
#include "rt_proto.h"
#include "rt_schemas.h"

#define TAIL_LINES 20
#define TAIL_LINE_LEN 240

typedef struct agentd agentd;

typedef struct worker {
    agentd *ag;
    int64_t job, attempt;
    int rank, size, local_rank, local_size, cross_rank, cross_size;
    int machine_ranks; /* this job's ranks on this machine, of every agent here (0: unknown) */
    int listen_fd; /* bound at prepare, handed to the worker */
    int master_fd; /* rank 0: holds MASTER_PORT from prepare until the rank starts */
    int master_port, node_rank, nodes;
    char gpu[64]; /* the rank's CUDA_VISIBLE_DEVICES, "" when none */
    char addr[96];
    char shm_tag[RT_SHM_TAG_HEX + 1]; /* its ring key's (rt_shm_tag); "" until its rendezvous */
    pid_t pid;     /* 0 until started */
    bool started, reaped, out_eof, reported;
    int code, sig;
    int out_fd, ctl_fd;
    struct event *out_ev, *ctl_ev;
    /* output */
    FILE *log;
    char log_path[512];
    uint64_t log_bytes;
    char tail[TAIL_LINES][TAIL_LINE_LEN];
    int tail_next, tail_count;
    char partial[TAIL_LINE_LEN]; /* the last line, not yet ended */
    size_t partial_len;
    /* control messages (JSON lines) from the worker */
    char ctl_buf[65536];
    size_t ctl_fill;
    double ctl_tokens;     /* progress lines it may still send now (PROGRESS_RATE/s) */
    int64_t ctl_refill_ns; /* when the bucket was last topped up */
    int64_t ctl_dropped;   /* progress lines dropped for the rate, bad lines */
    double ctl_etokens;    /* epoch and result lines it may still send (EPOCH_RATE/s) */
    int64_t ctl_unreported; /* lines dropped since the coordinator was last told */
    int64_t ctl_results;    /* result lines seen */
    int64_t kill_at_ns; /* SIGKILL after SIGTERM, when nonzero */
    int64_t reaped_ns;
    char workdir[512];  /* work_dir/job-N: the agent's (rendezvous, job.ini) */
    char jobwork[600];  /* workdir/work: the job's own folder (RT_WORK_DIR) */
    /* whom the rank runs as (agent_ident.c): as_job false: the agent's user */
    bool as_job;
    uid_t uid;
    gid_t gid;
    int ngroups;
    gid_t groups[64];
    char who[80];       /* "user alice" or "uid 1900000007", for messages */
    char login[40];     /* USER: "alice", or "job-N" for a job uid */
    char home[512];     /* HOME: the user's ("": a job uid's is its work folder) */
    char cg_dir[600];   /* its cgroup ("" when none: agent_cgroup.c) */
    char cg_procs[640]; /* cg_dir/cgroup.procs, for the child to enter */
    bool own_uid;       /* as_job with a uid of the job's own (job_uids), not a Unix user's */
    int64_t ident_job;  /* whose id picks that uid: the job's, or its sweep's (every job of
                           a sweep runs as one uid) */
    int64_t mem_limit;  /* the job's memory_limit (0: none), in bytes */
    int64_t disk_limit; /* the job's disk_limit (0: none; agent_disk.c), in bytes */
    double cpu_limit;   /* the job's cpu_limit (0: none), in CPUs */
    int64_t oom_kills;  /* processes of the rank the OOM killer ended (memory.events) */
    char why[300];      /* why it did not start, or what ended it, for the coordinator */
    struct worker *next;
} worker;

typedef struct log_req {
    int64_t req, job, attempt;
    int rank;
    bool follow, lines; /* lines: whole lines only (a stream of every rank) */
    int64_t skip;       /* lines (lines) or bytes a reconnecting follower already has */
    int fd;
    char path[512];
    char line[4096]; /* lines mode: the line being assembled */
    size_t line_len;
    struct log_req *next;
} log_req;

#define CG_MAX_PENDING 256
typedef struct cg_pending { /* a rank's cgroup to remove once empty */
    char dir[600];
    int64_t since_ns;
} cg_pending;

struct agentd {
    rt_agent_cfg cfg;
    char token[RT_TOKEN_HEX + 1];
    char host_id[80], name[80], hostname[256];
    char machine[40]; /* the kernel's boot id: agents that share it share the CPUs */
    char coord_host[256], server_name[256];
    int coord_port;
    struct event_base *base;
    SSL_CTX *ssl;
    struct bufferevent *bev;
    bool connected, welcomed;
    char status_text[400]; /* the last STATUS= line's state, and its worker count */
    int status_live;
    int64_t heartbeat_ms;
    int64_t backoff_us;
    int attempts;
    struct event *reconnect, *heartbeat, *tick, *sigterm, *sigint, *sigchld;
    char data_addr[96];
    int slots, gpus;
    bool cuda, nccl, rdma;
    char *caps;  /* the node's capabilities (the worker's probe), a JSON object */
    char blas_set[32]; /* OPENBLAS_CORETYPE for ranks ("": OpenBLAS's own pick) */
    char worker_exe[1024];
    char lib_path[1100]; /* the libringtrain beside this agent, for ranks (RT_LIBRARY); "" */
    worker *workers;
    log_req *logs;
    /* every rank exit of the last RT_RECENT_EXITS_S seconds (JSON objects),
     * repeated in each hello: an exit sent to a coordinator that died before
     * committing it is delivered again (the coordinator ignores repeats) */
    char **recent_exits;
    int64_t *recent_ns;
    int nrecent;
    bool stopping;
    int64_t stop_deadline_ns;
    int64_t usage_ns;        /* when the ranks' usage was last sent */
    int64_t sweep_ns;        /* when old jobs' folders were last looked for */
    int64_t leftovers_ns;    /* when orphans of finished ranks were last looked for */
    bool token_hidden;       /* ranks start with token_file hidden (hide_token works here) */
    bool ids_on;             /* job_uids: each job's ranks run as a uid of their own */
    uid_t uid_lo, uid_hi;    /* its range */
    int uid_claim_fd;        /* its claim on this host (agent_ident.c's claim_range), or -1 */
    pid_t helpers[64];       /* children cleaning up, measuring or reaping (agent_clean.c) */
    int nhelpers;
    char launch_exe[1024];    /* ringtrain-launch, beside the agent (launch.h) */
    struct disk_watch *disks; /* running jobs' files, measured (agent_disk.c) */
    int64_t disk_ns;          /* when disk_tick last looked */
    bool reserve_held;        /* work_dir holds the agent's reserve file */
    int64_t hello_ns;        /* when the hello went out on this connection (0: none) */
    int64_t bye_deadline_ns; /* set once "bye" is queued: exit when written */
    bool cg_on;              /* ranks get cgroups of their own under cg_base */
    char cg_base[512];
    unsigned long cg_ns;     /* the agent's PID namespace, in the cgroups' names */
    bool cg_mem, cg_cpu;     /* memory_limit / cpu_limit can be enforced */
    char cg_mem_why[300], cg_cpu_why[300]; /* and why not, when they cannot */
    cg_pending cg_pending[CG_MAX_PENDING];
    int cg_npending;
};

/* agent_core.c */
rt_status agent_create(const rt_agent_cfg *cfg, agentd **out, char *err);
int agent_run(agentd *ag);
void agent_destroy(agentd *ag);
/* The receivers of the messages the coordinator sends, indexed by rt_msg
 * (NULL for those an agent never receives); test_protocol checks it. */
typedef void (*agent_handler)(agentd *ag, const rt_json *m);
extern const agent_handler agent_handlers[RT_MSG_COUNT];

/* agent_link.c */
/* Send to the coordinator (consumes w); while disconnected it is dropped. */
bool agent_send(agentd *ag, rt_jw *w);
/* agent_proc.c: tell the coordinator how many progress lines of w were
 * dropped since it was last told (a {"kind":"dropped"} progress frame). */
void progress_flush_dropped(worker *w);
/* An exit report: sent when connected, and kept for 10 minutes either way. */
void agent_send_exit(agentd *ag, rt_jw *w);
/* The kept exits as a JSON array (into w), for the hello. */
/* the recent exits for a hello, the newest that fit in budget bytes */
void agent_backlog_json(agentd *ag, rt_jw *w, size_t budget);
/* agent_usage.c: "usage": [{job, attempt, rank, cpu_s, rss_bytes, procs}]
 * of every running rank's process group, from /proc */
void usage_json(agentd *ag, rt_jw *w);
/* Kill the agent's orphaned descendants whose rank no longer runs here (the
 * agent is a child subreaper: a process that left its rank's group comes
 * back to it when its parent dies). */
void proc_kill_leftovers(agentd *ag);
/* agent_cgroup.c: a cgroup (v2) per rank, where the agent can make them.
 * cg_init finds out (and empties the cgroups of agents that no longer run);
 * cg_prepare makes the rank's before fork, with the job's memory_limit and
 * cpu_limit (w->mem_limit, w->cpu_limit) — an error when the job has a limit
 * this node cannot enforce; *in_cgroup false: none; the child calls
 * cg_enter(w->cg_procs) before exec (async-signal-safe; -1 on failure);
 * cg_oom_kills reads how many of the rank's processes the OOM killer ended;
 * cg_release kills what is left in it once the rank's process has exited
 * and removes it (cg_tick retries the removal). */
void cg_init(agentd *ag);
rt_status cg_prepare(agentd *ag, worker *w, bool *in_cgroup, char *err);
int cg_enter(const char *procs);
int64_t cg_oom_kills(const worker *w);
/* The value of key in a cgroup's flat-keyed file (cpu.stat, memory.events); -1 if none. */
int64_t cg_key(const char *dir, const char *file, const char *key);
void cg_release(agentd *ag, worker *w);
void cg_tick(agentd *ag);
/* agent_ident.c: whom a job's ranks run as (docs/security.md).
 * ident_init reads [agent] job_uids and proves, with `ringtrain-launch
 * probe`, that the agent can become such a uid, that the uid reaches
 * work_dir, cannot read the token and can have it hidden (sets
 * ag->token_hidden); an error when not.  Without job_uids it finds out
 * whether the token can be hidden from ranks of the agent's own user.
 * ident_for sets w->as_job, own_uid, uid, gid, groups and who before fork:
 * the Unix user the job's token names (m's unix_user), else the job's uid
 * from the range, else the agent's own (refused for an agent running as
 * root unless [agent] allow_root_jobs).  The child becomes it only by
 * exec'ing ringtrain-launch (launch.h), which never holds this process's
 * memory.  ident_leftover: whether pid runs as a job uid no live rank here
 * holds. */
rt_status ident_init(agentd *ag, char *err);
rt_status ident_for(agentd *ag, worker *w, const rt_json *m, char *err);
/* Whether another job's rank here still runs as w's uid (a sweep's jobs
 * share their sweep's). */
bool ident_shared(const agentd *ag, const worker *w);
bool ident_leftover(const agentd *ag, const char *pid);
void ident_reaped(agentd *ag, pid_t pid); /* proc_reap: a helper has ended */
/* agent_clean.c: removing what jobs leave, and measuring what they hold,
 * in children that take the job's uid for file access only (setfsuid: the
 * job can neither signal nor trace them), never following a link.
 * clean_job: the folder path (emptied, then removed as the agent) and, with
 * own_uid, its entries in /tmp, /var/tmp and /dev/shm — first, with reap,
 * every process of uid (ringtrain-launch reap: only where no other agent of
 * this machine runs a rank of the job).  clean_shm: the shared-memory
 * names of w's attempt (and w's ring key: another cluster's job of the same
 * number is not touched).  clean_measure: a child writing one clean_usage to
 * *fd (the read end, the caller's to close); its pid, or -1.
 * clean_stale_work: at start, what jobs left in work_dir before a restart.
 * Every child is tracked in ag->helpers and reaped by proc_reap. */
typedef struct clean_usage {
    bool ok;   /* the walk ran as the job's files' owner */
    bool deep; /* folders nested deeper than it measures */
    int64_t bytes, files;
} clean_usage;
void clean_job(agentd *ag, int64_t job, uid_t uid, gid_t gid, bool own_uid, bool reap,
               const char *path);
void clean_shm(agentd *ag, const worker *w, bool as_job);
pid_t clean_measure(agentd *ag, uid_t uid, gid_t gid, bool own_uid, const char *path, int *fd);
void clean_stale_work(agentd *ag);
/* agent_disk.c: a running job's files against its disk_limit and the
 * node's min_free_disk (disk_tick, from the agent's tick); the reserve the
 * agent's own writes fall back on when work_dir's filesystem is full
 * (disk_reserve_release: true when it freed some). */
void disk_tick(agentd *ag);
bool disk_reserve_release(agentd *ag);
void disk_free_all(agentd *ag);
/* agent_files.c: what the agent writes for a rank, through directory fds and
 * O_NOFOLLOW|O_EXCL (nothing job-writable is opened by path): the job's
 * folder work_dir/job-N (the agent's; 0711 when the job has a uid of its
 * own, else 0700), its work/ (the job's, 0700), rank-R.rendezvous and
 * job.ini (0400, the job's).  files_clean, once a rank has been reported:
 * its rendezvous goes; after the job's last rank here, job.ini and the
 * job's work folder (clean_job: whatever modes the job set). */
rt_status files_prepare(agentd *ag, worker *w, const rt_json *m, const char *type, char *rdv,
                        size_t rdv_len, char *cfgpath, size_t cfg_len, char *err);
void files_clean(agentd *ag, worker *w);
/* agent_env.c: a NULL-terminated list of strings (argv, the environment) */
typedef struct strv {
    char **v;
    int n, cap;
} strv;
void strv_add(strv *s, char *item); /* takes item (NULL: nothing) */
void strv_free(strv *s);
/* A rank's environment (see agent_env.c) into *env; w->gpu set. */
void rank_env(agentd *ag, worker *w, const rt_json *m, const char *type, const char *rdv,
              strv *env);
/* The file a rank's program name stands for, looked up in the PATH of the
 * rank's environment (as srun and horovodrun do; execvpe would search the
 * agent's own), relative entries from cwd: malloc'ed, or NULL when prog is a
 * path or nothing is found (the rank then fails: No such file or directory;
 * a script without #! is not handed to /bin/sh as execvpe would). */
char *program_path(const char *prog, char *const *env, const char *cwd);
/* Send the exits recorded at or after since_ns: those that came between the
 * hello (which listed the older ones) and the welcome. */
void agent_backlog_since(agentd *ag, int64_t since_ns);
void agent_backlog_free(agentd *ag);

/* agent_proc.c */
void proc_prepare(agentd *ag, const rt_json *m);
/* agent_spawn.c: start worker w's process for the start message m — its
 * identity, files, command, environment, descriptors and cgroup, then
 * fork; *out_fd and *ctl_fd are the read ends of its output pipe and
 * control socket.  On error nothing it made is left open. */
rt_status proc_launch(agentd *ag, worker *w, const rt_json *m, pid_t *pid, int *out_fd, int *ctl_fd,
                      char *err);
void proc_start(agentd *ag, const rt_json *m);
void proc_abort(agentd *ag, int64_t job, int64_t attempt, const char *reason);
void proc_reap(agentd *ag);
void proc_tick(agentd *ag);
void proc_stop_all(agentd *ag);
/* Stop every rank of job here, each reporting why as its exit's reason. */
void proc_fail_job(agentd *ag, int64_t job, const char *why);
int proc_live(const agentd *ag);
int proc_unreported(const agentd *ag); /* started workers whose exit is not sent yet */
/* {"job":..,"attempt":..,"rank":..,"pid":..} of every running worker */
void proc_running_json(agentd *ag, rt_jw *w);
void worker_free(worker *w);

/* agent_logs.c */
rt_status rank_log_create(worker *w, char *err);
void log_write(worker *w, const char *data, size_t n);
void log_tail_json(const worker *w, rt_jw *jw);
void logs_request(agentd *ag, const rt_json *m);
void logs_cancel(agentd *ag, int64_t req);
void logs_pump(agentd *ag); /* send what is new to every open stream */
void logs_drop_all(agentd *ag);
/* Remove the log and work folders (job-N) of jobs with no rank here whose
 * files were last written more than log_retention ago; looks every
 * log_retention / 4 (1 s to 10 min). */
void logs_sweep(agentd *ag);

/* agent_probe.c: the node's capabilities (ag->caps, cuda, nccl, gpus, rdma),
 * from `WORKER --probe` */
void agent_probe(agentd *ag);

/* hostid.c */
void rt_host_id(char *out, size_t len);
/* The machine: the running kernel's boot id, the same in every container and
 * namespace on it ("" when unreadable). */
void rt_machine_id(char *out, size_t len);

#endif
