/* scheduler.h — private to coordinator/: the cluster's model (agents, jobs,
 * ranks) and the scheduler that decides over it.  The scheduler is a pure
 * state machine: it takes events (a submission, an agent's hello, a rank's
 * exit, the clock ticking) with the time passed in, changes the model and
 * appends what must happen as actions — frames to send to agents, rows to
 * write, events to record.  It opens no socket, runs no SQL and reads no
 * clock; the coordinator's core performs the actions (writes first, in one
 * transaction, then sends), and tests drive it in-process.
 * (Model: etcd's raft library, which hands its caller a Ready batch.)
 *
 * Placement (Horovod's get_host_assignments): agents are grouped by host
 * id; hosts are taken in order, each filled with as many ranks as its free
 * slots allow, so ranks are contiguous per host and the ring's hops stay
 * local.  local_rank/local_size: position and count on the host;
 * cross_rank/cross_size: position and count of the host among the hosts
 * that have a rank with that local_rank.
 *
 * Gang start: every agent of an attempt first binds its ranks' data-plane
 * sockets ("prepare", answered with the addresses); only when all have
 * answered does any rank start ("start", with every address and the
 * attempt's key).
 *
 * The queue: waiting jobs in order — restarting jobs first (they were
 * running), then by priority (higher first), then by submission (FIFO).
 * Held jobs are skipped.  The first job that cannot start is the head; a
 * later job may start before it (backfill) only when that cannot delay the
 * head: the head's start time is estimated from the deadlines of the
 * running jobs (EASY backfill, as Slurm's), and a later job may use free
 * slots if it has a deadline and ends before that time, or if it needs no
 * more slots than the head will leave over then.  With no estimate (a
 * running job without a deadline blocks the head) nothing overtakes it.
 * A job waits without limit unless it has a queue_timeout; a job that asks
 * for more slots than the whole cluster has is refused when submitted.
 *
 * Life cycle: queued -> starting -> running -> succeeded | failed |
 * cancelled, with restarting in between when a failure leaves restarts
 * (elastic: down to min_np ranks).  The first failure of an attempt (rank,
 * host, exit code or signal, last lines) is kept; the other ranks are
 * aborted.  After a coordinator restart the unfinished jobs come back from
 * the database and are reconciled with what the agents report when they
 * reconnect. */
#ifndef RT_SCHEDULER_H
#define RT_SCHEDULER_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_json.h"
#include "rt_proto.h"
#include "rt_schemas.h"
#include "rt_status.h"

#define SC_KEY_LEN 200 /* "host_id/name" */

typedef struct sc_clock {
    int64_t mono_ns; /* CLOCK_MONOTONIC: in-memory timers */
    double wall;     /* unix seconds: what is stored (queue times, deadlines) */
} sc_clock;

typedef struct sc_agent {
    char key[SC_KEY_LEN]; /* host_id/name, unique */
    char host_id[80], name[80], hostname[256], addr[96];
    char machine[40]; /* its kernel's boot id: agents that share one share the CPUs ("": unknown) */
    int slots, used;
    bool up, draining;
    bool cuda, nccl, rdma;
    bool lim_mem, lim_cpu; /* enforces memory_limit / cpu_limit (caps "limits") */
    int gpus;
    char *caps;   /* the hello's capabilities object, as JSON text */
    double since; /* wall time of the last up/down change */
    void *conn;   /* the core's connection; never touched here */
    struct sc_agent *next;
} sc_agent;

/* rt_proto.h's states (their names are there, once) */
enum job_state {
    JOB_QUEUED = RT_JS_QUEUED,
    JOB_STARTING = RT_JS_STARTING,
    JOB_RUNNING = RT_JS_RUNNING,
    JOB_RESTARTING = RT_JS_RESTARTING,
    JOB_SUCCEEDED = RT_JS_SUCCEEDED,
    JOB_FAILED = RT_JS_FAILED,
    JOB_CANCELLED = RT_JS_CANCELLED,
};
const char *job_state_name(int state);
int job_state_parse(const char *name); /* -1 when unknown */
bool job_state_terminal(int state);

/* a job's type: the job schema's RT_JOB_* (rt_schemas.h); a sweep holds no
 * ranks: its trials are jobs of their own (scheduler_sweep.c) */
const char *job_type_name(int type);

enum rank_state { RS_NONE, RS_PREPARING, RS_PREPARED, RS_STARTING, RS_RUNNING, RS_EXITED };
const char *rank_state_name(int state);
int rank_state_parse(const char *name);

typedef struct sc_rank {
    sc_agent *ag; /* NULL while its agent is unknown (after a restart) */
    char agent_key[SC_KEY_LEN], host_id[80], hostname[256];
    int local_rank, local_size, cross_rank, cross_size;
    int machine_ranks; /* the job's ranks on its agent's machine, of every host there */
    char gpu[64];      /* the GPU(s) its agent gave it ("" when none) */
    char addr[96];
    int64_t pid;
    int state;
    int exit_code, exit_signal; /* exit_signal -1: lost with its agent */
    /* what it uses (its agent's last sample; memory only) */
    double cpu_s, cpu_pct; /* CPU seconds so far; percent of one core lately */
    int64_t rss_bytes;
    int procs;        /* its processes (its cgroup's, or its process group's) */
    int64_t usage_ns; /* when sampled (0: never) */
    int gpu_util;     /* SM utilisation, %, from NVML (-1: none reported) */
    int64_t gpu_mem_bytes;
} sc_rank;

#define SC_WARNINGS_MAX 8        /* the ranks' warnings said as a job's events per attempt */
#define SC_WARNING_TEXT_MAX 1000 /* the bytes of one kept */

/* how long a training rank's RT_EXIT_PEER waits for the failure that
 * caused it (sc_job.peer_failure) */
#define SC_PEER_GRACE_S 10

typedef struct sc_job {
    int64_t id;
    char name[128], user[64];
    char unix_user[33]; /* its ranks run as this Unix user (the token's; "": agent's choice) */
    /* the submission's Idempotency-Key header ("": none): a POST of the same
     * key by the same user answers with this job instead of a second one */
    char idem_key[65];
    int type;       /* RT_JOB_* */
    char *spec;     /* the submission, JSON text (stored) */
    rt_json *specj; /* parsed */
    rt_job_cfg cfg; /* its configuration, by the job schema (scheduler_spec.c) */
    /* from the submission (cfg's, as the scheduler uses them) */
    int np, min_np, max_restarts, priority;
    int64_t queue_timeout_us, deadline_us; /* 0: none */
    bool need_mem, need_cpu; /* memory_limit / cpu_limit: only agents that enforce it */
    /* state */
    enum job_state state;
    bool held;
    char reason[1024];
    char last_failure[700]; /* why the last attempt failed (kept through a restart) */
    int attempt, restarts, cur_np;
    double created, started, finished; /* wall; started: first attempt running */
    double queued_at;                  /* wall: waiting since (submission, or the failure) */
    double attempt_started;            /* wall: this attempt running (deadline) */
    int queue_pos;                     /* 1-based among waiting jobs; 0 otherwise */
    int64_t prepare_deadline_ns;
    uint8_t key[32]; /* data-plane secret of the current attempt */
    int master_port; /* reserved by rank 0's agent for MASTER_PORT (0: none) */
    sc_rank *ranks;  /* cur_np of them */
    int prepared, running, exited_ok;
    bool have_failure;
    bool reconciling;    /* restored after a coordinator restart */
    bool launch_unsure;  /* restored while starting: the launch may not have reached every
                           agent, so this attempt's failure uses no restart */
    char *first_failure; /* JSON object */
    /* a training rank that exited RT_EXIT_PEER while no failure was decided:
     * its failure (JSON, sentence), held until another rank's own failure
     * takes its place, every rank has exited, or SC_PEER_GRACE_S passed */
    char *peer_failure, *peer_why;
    int64_t peer_at_ns;
    char *progress;   /* latest progress JSON from rank 0 */
    char *last_epoch; /* its latest epoch line (loss, val_loss, val_<metric>) */
    int bad_names;    /* progress lines that had keys or values dropped (said 3 times) */
    int warnings;     /* the ranks' warnings said as events (SC_WARNINGS_MAX) this attempt */
    double steps_per_s;
    struct sc_steps *steps; /* the current epoch, step by step (NULL: no report yet) */
    struct sc_sweep *sweep; /* a sweep: its trials (NULL for other jobs) */
    int64_t sweep_id;       /* a trial or a sweep's last step: its sweep (0: none) */
    int trial;              /* a trial's number (1-based); 0: the sweep's last step */
    bool asha_stop;         /* a trial its sweep stopped (ASHA, the time budget): not a failure */
    struct sc_job *next;
} sc_job;

/* ---- sweeps (scheduler_sweep.c) ----------------------------------------------
 * A sweep (type = sweep) is a job without ranks.  It submits its trials —
 * ordinary training jobs of the sweep's user, priority and Unix identity,
 * with the sweep's id and their number in their submission — at most
 * `parallel` unfinished at once, and stops each at ASHA's rungs unless it is
 * in the top 1/reduction there (Li et al. 2018, the asynchronous stopping
 * rule).  When every trial has ended, one last job (np 1, the sweep's file)
 * writes trials.jsonl and best/ into the sweep's store on a node, as the
 * sweep's user; the sweep ends with it.  Every change is an SC_SAVE_TRIAL
 * action; a restarted coordinator reads the trials back. */
enum trial_state {
    TRIAL_PENDING,
    TRIAL_RUNNING,
    TRIAL_STOPPED,
    TRIAL_COMPLETED,
    TRIAL_FAILED,
    TRIAL_CANCELLED
};
const char *trial_state_name(int state);
int trial_state_parse(const char *name); /* -1 when unknown */

#define SC_MAX_RUNGS 24
typedef struct sc_trial {
    int n;             /* 1-based */
    int64_t job;       /* its job (0: not submitted yet) */
    char *params;      /* JSON object: "section.key": "value", as set */
    char (*vals)[256]; /* params by dimension (RT_SWEEP_VALUE_MAX), once read (NULL: not yet) */
    int state;         /* enum trial_state */
    int rung;          /* the rungs it passed or stopped at: -1 none yet */
    int64_t epochs;    /* epochs run (its last epoch line) */
    double best;       /* its best monitor value so far (NAN: none) */
    int64_t best_epoch;
    double rung_val[SC_MAX_RUNGS]; /* its best value up to each rung's epoch (NAN: not reached) */
    char reason[400];              /* why it stopped or failed */
} sc_trial;

typedef struct sc_sweep {
    void *space;     /* rt_sweep_space */
    int64_t ntrials; /* how many it runs */
    int parallel, max_failed, scheduler, reduction;
    bool maximize; /* the monitor is better higher */
    char monitor[64];
    int nrungs;
    int64_t rung_epoch[SC_MAX_RUNGS];
    sc_trial *t;        /* ntrials of them */
    int64_t finish_job; /* the last step's job (0: not yet) */
    int best;           /* the best trial's number (0: none) */
    int64_t budget_us;  /* [sweep] time_budget (0: none) */
    bool out_of_time;   /* it ran out: no trial starts, the running ones were stopped */
} sc_sweep;

/* Rank 0's step reports of the current epoch (attempt), for the live
 * per-step curve: at most SC_STEP_POINTS, thinned by half (every other
 * point, then every other report) when full.  Memory only. */
#define SC_STEP_POINTS 240
typedef struct sc_steps {
    int64_t attempt, epoch;
    int n, stride, since;
    struct {
        int64_t step;
        double loss; /* rank 0's mean loss this epoch so far (NAN: not reported) */
        double steps_per_s;
    } p[SC_STEP_POINTS];
} sc_steps;

/* ---- actions -------------------------------------------------------------- */

typedef enum sc_act_kind {
    SC_SEND,         /* agent, text: a frame for that agent (dropped if it is down) */
    SC_SAVE_AGENT,   /* agent */
    SC_SAVE_JOB,     /* job: the job's row */
    SC_SAVE_ATTEMPT, /* job, attempt, tag = state, text = reason */
    SC_SAVE_RANKS,   /* job: the placement of its current attempt */
    SC_SAVE_RANK,    /* job, rank */
    SC_EVENT,        /* job, tag = kind, text = message */
    SC_METRIC,       /* job, attempt, text = the epoch's JSON */
    SC_RESULT,       /* job, attempt, rank, text = the rank's result (JSON) */
    SC_SAVE_TRIAL,   /* job = the sweep, rank = the trial's number (0: the sweep's own record) */
} sc_act_kind;

typedef struct sc_action {
    sc_act_kind kind;
    int64_t job;
    int attempt, rank;
    char agent[SC_KEY_LEN];
    char tag[24];
    char *text; /* owned by the action list */
} sc_action;

typedef struct sc_config {
    int64_t prepare_timeout_us;   /* agents' time to prepare an attempt's ranks */
    int64_t reconcile_timeout_us; /* agents' time to report back after a coordinator restart */
    int default_max_restarts;
    int max_queued_per_user;          /* waiting jobs of one user (0: no limit) */
    int64_t default_queue_timeout_us; /* 0: wait as long as it takes */
    int64_t retire_after_us;          /* a finished job leaves memory this long after (0: 60 s) */
    /* random bytes for the attempts' keys (tests may make them predictable) */
    void (*random)(uint8_t *out, size_t len);
} sc_config;

typedef struct sched {
    sc_config cfg;
    sc_agent *agents;
    sc_job *jobs;    /* unfinished jobs, and finished ones until retired */
    int64_t next_id; /* the next job's id (never reused: stored) */
    int64_t reconcile_until_ns;
    sc_action *out;
    int nout, capout;
} sched;

void sched_init(sched *S, const sc_config *cfg);
void sched_free(sched *S);
/* The actions appended since the last clear, in order. */
const sc_action *sched_actions(const sched *S, int *n);
void sched_actions_clear(sched *S);

sc_job *sched_job(sched *S, int64_t id);
sc_agent *sched_agent(sched *S, const char *key);
/* Slots of all known agents (up or down), and the free slots of the up,
 * undrained ones. */
int sched_total_slots(const sched *S);
int sched_free_slots(const sched *S);

/* ---- events ---------------------------------------------------------------- */

/* A submission (the JSON the CLI sends); the job is queued or refused
 * (RT_ERR_INVALID with the reason).  A sweep's trials are submitted by the
 * scheduler itself: a submission naming a sweep is refused. */
rt_status sched_submit(sched *S, const char *body, size_t len, const char *user,
                       const char *unix_user, sc_clock now, int64_t *id, char *err);
rt_status sched_cancel(sched *S, int64_t id, sc_clock now, char *err);
/* Keep a waiting job from starting (hold) or let it start again. */
rt_status sched_hold(sched *S, int64_t id, bool hold, sc_clock now, char *err);
/* No new ranks on the agent (running ones finish), or undo that.  `who` is
 * the agent's key or its name when that is unique. */
rt_status sched_drain(sched *S, const char *who, bool drain, sc_clock now, char *err);

/* A hello that passed the core's checks (credential, fields): the agent's
 * record, created or brought up; NULL with the reason when it is refused. */
sc_agent *sched_agent_up(sched *S, const rt_json *hello, sc_clock now, char *err);
/* The agent's connection is gone (lost: a failure for its ranks) or it left
 * on purpose with a bye (its ranks' exits were reported before). */
void sched_agent_down(sched *S, sc_agent *a, const char *why, sc_clock now);
void sched_on_prepared(sched *S, sc_agent *a, const rt_json *m, sc_clock now);
void sched_on_started(sched *S, sc_agent *a, const rt_json *m, sc_clock now);
void sched_on_exited(sched *S, sc_agent *a, const rt_json *m, sc_clock now);
void sched_on_progress(sched *S, sc_agent *a, const rt_json *m, sc_clock now);
/* A heartbeat's "usage" of this agent's running ranks (CPU, memory). */
void sched_on_usage(sched *S, sc_agent *a, const rt_json *m, sc_clock now);
/* Timers: queue pass, prepare and queue timeouts, deadlines, reconciling. */
void sched_tick(sched *S, sc_clock now);

/* ---- restoring (coord_db.c) ---------------------------------------------------- */

/* Forget agents down since before cutoff (wall seconds) that no job in
 * memory has a rank on; their keys into keys (at most max).  Returns how
 * many were forgotten. */
int sched_forget_agents(sched *S, double cutoff, char (*keys)[SC_KEY_LEN], int max);
/* A known agent from the database: down (since: its last change, wall
 * seconds) until it says hello. */
sc_agent *sched_restore_agent(sched *S, const char *key, const char *host_id, const char *name,
                              const char *hostname, int slots, bool draining, double since);
/* An unfinished job from the database; its spec is parsed again (NULL and
 * the reason when it cannot be).  Jobs that were placed get their ranks
 * from sched_restore_rank and are reconciled for reconcile_timeout. */
sc_job *sched_restore_job(sched *S, int64_t id, const char *spec, const char *user, int state,
                          const char *reason, int attempt, int restarts, bool held, double created,
                          double started, double queued_at, double attempt_started, sc_clock now,
                          char *err);
/* A rank whose stored state is "exited" keeps its exit (its agent may have
 * forgotten it); any other is unknown until its agent reports. */
/* A sweep's trial from the database (after its sweep's job): its record
 * as stored; then the sweep's own (its last step's job, its best trial). */
void sched_restore_trial(sched *S, sc_job *sweep, int n, int64_t job, const char *params,
                         const char *state, int rung, int64_t epochs, double best,
                         int64_t best_epoch, const char *rung_vals, const char *reason);
void sched_restore_sweep(sched *S, sc_job *sweep, int64_t finish_job, int best);
void sched_restore_rank(sched *S, sc_job *j, int rank, const char *agent_key, const char *host_id,
                        const char *hostname, int local_rank, int local_size, int cross_rank,
                        int cross_size, const char *addr, int64_t pid, const char *state,
                        int exit_code, int exit_signal, const char *gpu);

#endif
