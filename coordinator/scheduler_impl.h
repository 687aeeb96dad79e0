/* scheduler_impl.h — private to the scheduler (scheduler*.c): the helpers its
 * three files share.  Each appends actions (scheduler.h) and changes the model;
 * none does I/O. */
#ifndef RT_SCHEDULER_IMPL_H
#define RT_SCHEDULER_IMPL_H

#include "scheduler.h"

/* actions */
void sc_emit(sched *S, sc_act_kind kind, int64_t job, const char *agent, const char *tag,
             char *text);
void sc_event(sched *S, const sc_job *j, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void sc_job_saved(sched *S, const sc_job *j);
void sc_attempt_saved(sched *S, const sc_job *j, const char *state, const char *reason);
void sc_rank_saved(sched *S, const sc_job *j, int r);
void sc_agent_saved(sched *S, const sc_agent *a);

/* a rank holds a slot of its agent until it has exited */
void sc_rank_bind(sc_rank *s, sc_agent *a);
void sc_rank_exit(sc_rank *s);
sc_agent *sc_agent_new(sched *S, const char *key);
void sc_job_free(sc_job *j);

/* messages to agents */
void sc_send_abort(sched *S, sc_job *j, const char *reason);
void sc_send_abort_attempt(sched *S, const sc_agent *a, int64_t job, int64_t attempt,
                           const char *reason);
void sc_send_start(sched *S, sc_job *j, sc_clock now);

/* outcomes */
void sc_start_attempt(sched *S, sc_job *j, int np, sc_clock now);
void sc_finish(sched *S, sc_job *j, int state, const char *reason, sc_clock now);
/* The attempt failed: stop every rank, then restart or fail the job; the
 * restart counts against max_restarts unless `counted` is false. */
void sc_attempt_failed(sched *S, sc_job *j, const char *reason, bool counted, sc_clock now);
/* The attempt's first failure, a JSON object (consumes w). */
void sc_set_first_failure(sc_job *j, rt_jw *w);
void sc_peer_failure_clear(sc_job *j);

/* placement and the queue (scheduler_queue.c) */
/* Whether agent a enforces the limits job j has (memory_limit, cpu_limit;
 * any agent for a job without), and their names for messages. */
bool sc_enforces(const sc_agent *a, const sc_job *j);
const char *sc_limits_name(const sc_job *j);
/* Place np ranks of j host by host on the free slots of up, undrained agents
 * that enforce its limits (given spare, only agents spare cannot use); false
 * with the reason ("needs 4 slots, 3 free on 2 agents (3 known)"). */
bool sc_place(sched *S, sc_job *j, int np, const sc_job *spare, char *why, size_t whylen);
/* Start what can start, in queue order, with backfill; queue positions,
 * reasons and queue timeouts. */
void sc_queue_pass(sched *S, sc_clock now);

/* the submission (scheduler_spec.c): s — its "config" text through the job
 * schema, or the JSON fields an API client gives, through the same schema —
 * into j->cfg and the fields the scheduler uses (type, np, min_np, limits,
 * name ...); an error naming the field or the file's line. */
rt_status sc_parse_spec(const sched *S, sc_job *j, const rt_json *s, char *err);

/* sweeps (scheduler_sweep.c) */
/* j->sweep for a sweep job whose cfg is parsed (its space, trials, rungs). */
rt_status sc_sweep_init(sc_job *j, char *err);
void sc_sweep_free(sc_sweep *w);
/* Each unfinished sweep: trials submitted up to `parallel`, its end. */
void sc_sweep_pass(sched *S, sc_clock now);
/* j reached a terminal state (sc_finish): a trial's record, a sweep's
 * trials cancelled, the last step ending its sweep. */
void sc_sweep_job_ended(sched *S, sc_job *j, sc_clock now);
/* A trial's epoch line from its rank 0: its best value and ASHA's rungs. */
void sc_sweep_epoch(sched *S, sc_job *j, const rt_json *data, sc_clock now);
/* a rank of a trial its sweep stopped has exited (j->asha_stop) */
void sc_sweep_stopped_exit(sched *S, sc_job *j);
void sc_trial_saved(sched *S, const sc_job *sweep, int n);
/* A job of the sweep's (a trial, or its last step): queued as the sweep's
 * user and Unix user, with no queue pass (the caller is in one). */
rt_status sc_submit_child(sched *S, const sc_job *sweep, const char *body, size_t len, sc_clock now,
                          int64_t *id, char *err);

#endif
