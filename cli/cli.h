/* cli.h — private to the `ringtrain` CLI (cli/cli_*.c).
 *
 *   cli_main.c    the command table, main, the commands that read the
 *                 coordinator's state (nodes, jobs, status, logs) or change a
 *                 job or node (cancel, hold, release, drain, resume)
 *   cli_args.c    the one argument parser every command goes through
 *   cli_show.c    how nodes, jobs and a job's status are printed
 *   cli_jobs.c    job descriptions from job files and exec's arguments;
 *                 submitting and following
 *   cli_local.c   `run` and `exec --local`: a one-machine cluster
 *   cli_http.c    the HTTP/TLS client
 *   cli_data.c    prep, predict, model summary, ensemble
 *   init_cluster.c  the cluster's CA, certificates and token */
#ifndef RT_CLI_H
#define RT_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rt_buf.h"
#include "rt_s3.h"
#include "rt_net.h"

/* ---- commands and their arguments (cli_args.c) ------------------------------- */

typedef enum cli_flag_kind { CLI_SWITCH, CLI_VALUE, CLI_LIST } cli_flag_kind;

typedef struct cli_flag {
    const char *name; /* "--np" */
    cli_flag_kind kind;
    const char *metavar; /* "N" */
    const char *help;
    const char *alias; /* "-f" or NULL */
} cli_flag;

#define CLI_MAX_FLAGS 40
#define CLI_MAX_LIST 64

typedef struct cli_args cli_args;
typedef struct cli_cmd {
    const char *name, *usage, *summary;
    const cli_flag *flags; /* terminated by a NULL name */
    int min_pos, max_pos;  /* positional arguments (max -1: any number) */
    bool rest;             /* takes PROGRAM ARGS... after -- */
    bool rest_required;
    bool connects;         /* talks to the coordinator: accepts the connection flags */
    int (*run)(const cli_args *a);
} cli_cmd;

/* cli_flags.c: each command's flags (a table ends with a NULL name) */
extern const cli_flag CLI_SUBMIT_FLAGS[], CLI_RUN_FLAGS[], CLI_WORKER_FLAGS[], CLI_EXEC_FLAGS[],
    CLI_JOBS_FLAGS[], CLI_JSON_FLAGS[], CLI_TRACE_FLAGS[], CLI_MODEL_FLAGS[], CLI_TOKEN_FLAGS[],
    CLI_STATUS_FLAGS[], CLI_LOGS_FLAGS[], CLI_INIT_FLAGS[], CLI_PREP_FLAGS[], CLI_PREDICT_FLAGS[],
    CLI_ENSEMBLE_FLAGS[];

struct cli_args {
    const cli_cmd *cmd;
    const char *value[CLI_MAX_FLAGS]; /* CLI_VALUE: the value; CLI_SWITCH: "1" when given */
    const char *list[CLI_MAX_FLAGS][CLI_MAX_LIST];
    int nlist[CLI_MAX_FLAGS];
    char **pos;
    int npos;
    char **rest; /* after -- */
    int nrest;
    bool help;   /* --help was given and printed */
};

/* Parse argv (after the command's name) against cmd's flags: 0, or 2 with
 * the problem printed (unknown flag with a suggestion, missing value,
 * wrong number of arguments). */
int cli_parse(const cli_cmd *cmd, int argc, char **argv, cli_args *a);
void cli_args_free(cli_args *a);
void cli_usage(const cli_cmd *cmd, FILE *f);
/* A flag's value (NULL when not given), whether a switch was given, and
 * every value of a repeatable flag. */
const char *cli_value(const cli_args *a, const char *name);
bool cli_switch(const cli_args *a, const char *name);
/* What reaches the terminal (issue 28.12: a job named "\e]0;pwned\a"
 * retitled it).  cli_safe: s with its control characters as \xNN, for
 * tables and names (one of 8 rotating buffers, cut at 1 KiB).
 * cli_write_out: a rank's output to f, escaped likewise (newlines, tabs and
 * carriage returns kept) when f is a terminal and --raw was not given;
 * false when f would not take it. */
extern bool cli_raw;
const char *cli_safe(const char *s);
bool cli_write_out(FILE *f, const char *data, size_t n);
int cli_list(const cli_args *a, const char *name, const char *const **items);
/* An integer flag: 1 and *out, 0 when not given, -1 (printed) when it is
 * not a whole number in [lo, hi]. */
int cli_int(const cli_args *a, const char *name, int64_t lo, int64_t hi, int64_t *out);
/* The first positional argument as a job id; -1 (printed) when it is not. */
int cli_job_id(const cli_args *a, int64_t *id);

/* Where the coordinator's API is and how to prove who we are. */
typedef struct cli_conn {
    char host[256];
    int port;
    char server_name[256];
    char ca[1024];
    char token[RT_TOKEN_HEX + 1];
    int timeout_ms;
    int retry_ms;     /* keep trying a refused or unreachable connection this long (0: not) */
    int connect_retry_ms, reconnect_ms; /* cli.conf: connect_retry, reconnect_timeout */
    /* once connected, hold SIGINT, SIGTERM and SIGHUP until the answer is
     * read (delivered then): a request that creates something is known to
     * have done so or not (exec's POST) */
    bool hold_signals;
    /* sent as Idempotency-Key when not empty: a POST sent again with it
     * names the job the first one made, if it made one */
    char idem_key[65];
} cli_conn;

typedef struct http_resp {
    int status;
    char *body; /* NUL-terminated; caller frees */
    size_t len;
    bool reached; /* the connection was made (a request failed after may have been done) */
} http_resp;

/* One request; err says why there is no response at all. */
rt_status http_request(const cli_conn *c, const char *method, const char *path, const char *body,
                       http_resp *out, char *err);
/* A streamed GET: fn gets the body as it arrives (chunked or not) and may
 * return nonzero to stop; also stops when *stop becomes true (checked once a
 * second while the stream is idle). */
typedef int (*http_chunk_fn)(void *user, const char *data, size_t n);
rt_status http_stream(const cli_conn *c, const char *path, http_chunk_fn fn, void *user,
                      volatile sig_atomic_t *stop, int *status, char *err);
/* The "error" member of a JSON error body, or the body itself. */
const char *http_error_text(const http_resp *r, char *buf, size_t len);

/* Connection settings from the connection flags of a, the environment and
 * ~/.config/ringtrain/cli.conf. */
rt_status cli_conn_load(cli_conn *c, const cli_args *a, char *err);
/* The configuration reference of cli.conf (for config-reference). */
void cli_conf_reference(FILE *f);

/* init_cluster.c: CA, coordinator certificate, token, example configs. */
int cli_init_cluster(const cli_args *a);
rt_status rt_make_cluster(const char *dir, const char *const *sans, int nsans, bool force,
                          char *err);

/* cli_data.c: local data commands. */
/* cli_s3.c: the CLI's paths in S3.  A local folder (in TMPDIR, made on
 * first use): what is read is copied down into it, what is written is
 * written there and put up; cli_s3_done removes it (a signal that ends
 * the CLI before then, rt_tmp's handler). */
typedef struct cli_s3 {
    char stage[1100];
    rt_s3 *s3;
    int fetched;
    int tmp_slot; /* rt_tmp's slot + 1; 0: none */
} cli_s3;
/* An output prefix (prep --out): the credentials and bucket checked by
 * listing it (refused before the work), the local folder to write in. */
rt_status cli_s3_out_dir(cli_s3 *c, const char *uri, char *local, size_t len, char *err);
/* An output object (predict --out): checked the same way, the local file. */
rt_status cli_s3_out_file(cli_s3 *c, const char *uri, char *local, size_t len, char *err);
/* An input: an object copied down as a file of its name, else the
 * prefix's objects as a folder of its name; *local: what to read (as_dir:
 * a folder always, the object's file in one of its own). */
rt_status cli_s3_fetch(cli_s3 *c, const char *uri, bool as_dir, char *local, size_t len, char *err);
rt_status cli_s3_put(cli_s3 *c, const char *path, const char *uri, char *err);
void cli_s3_done(cli_s3 *c);

int cli_prep(const cli_args *a);
int cli_predict(const cli_args *a);
int cli_model(const cli_args *a);
int cli_ensemble(const cli_args *a);
/* A training job's model against its dataset, when this machine can read
 * the dataset: 0, or 2 with the reasons printed (nothing is submitted). */
typedef struct rt_job_cfg rt_job_cfg;
typedef struct rt_cfg_origin rt_cfg_origin;
int cli_check_job_model(const cli_args *a, const rt_job_cfg *j, const rt_cfg_origin *o);

/* cli_local.c: `run` and `exec --local`. */
int cli_local(const cli_args *a, bool is_exec);

/* cli_jobs.c: the JSON job description from a job file (errors printed
 * with file:line; returns 2 and submits nothing) or from exec's arguments. */
int cli_job_body_from_file(const cli_args *a, char **body, int64_t *np);
/* The job file a->pos[0] with --set (and np, when not NULL) into *j, checked
 * as a submission is (the model against its dataset too); 0, or 2 with the
 * reasons printed, "is not a valid job file" followed by nothing. */
int cli_job_load(const cli_args *a, const char *np, const char *nothing, rt_job_cfg *j);
int cli_job_body_from_exec(const cli_args *a, char **body, int64_t *np);
/* Ctrl-C while following: cancel the job (exec, run: the job is this
 * command) or detach from it (submit --follow: the job keeps running). */
int cli_submit_and_follow(const cli_conn *c, const char *body, bool follow, bool exec_output,
                          bool json, bool cancel_on_interrupt);

/* cli_stream.c: SIGINT, SIGTERM and SIGHUP caught for a follower (an
 * ignored SIGTERM or SIGHUP stays ignored); cli_interrupted: the signal
 * caught, 0 if none; cli_interrupted_rc: the shell's 128 + that signal
 * (SIGINT's if none). */
void cli_catch_interrupts(void);
int cli_interrupted(void);
int cli_interrupted_rc(void);
/* Job id's document; NULL with *lost set when the coordinator could not be
 * reached (it may be restarting), NULL alone when it answered no. */
rt_json *cli_get_job(const cli_conn *c, int64_t id, bool *lost, char *err);
/* Wait, with backoff, until the coordinator answers again (it restarted)
 * or c->reconnect_ms passes; true when it answers. */
bool cli_reconnect(const cli_conn *c, int64_t id, const char *why);

/* What a follower has printed of a stream, so that after a reconnect it
 * asks only for the rest: complete lines per rank of an all-ranks stream,
 * or bytes of one rank's — counted from the NDJSON objects' rank field
 * (the coordinator's and agents' notes are objects without one), never
 * from the text: a note counted as a rank's line made a resumed stream
 * skip a real one. */
typedef struct cli_stream_pos {
    bool prefixed; /* every rank: lines printed led by "[R] " */
    int64_t bytes;
    int64_t *lines;
    int nranks;
    rt_buf pend; /* an NDJSON line not complete yet */
} cli_stream_pos;
/* Empty p (its memory freed) for a stream of every rank (prefixed) or one. */
void cli_stream_pos_reset(cli_stream_pos *p, bool prefixed);
/* Stream job id's output (rank < 0: every rank, lines led by "[R] ") to
 * stdout from where pos says, following or not, resuming after a
 * coordinator restart; RT_OK when the stream ended normally. */
rt_status cli_stream_logs(const cli_conn *c, int64_t id, int rank, int64_t attempt, bool follow,
                          cli_stream_pos *pos, int *status, char *err);
/* Whether stdout was found closed (`ringtrain logs 3 | head`). */
bool cli_stdout_closed(void);
/* `ringtrain logs`: every rank's output (rank < 0) or one's, of the latest
 * attempt or attempt N, whole or followed (resumed across a coordinator
 * restart).  Exit status. */
int cli_logs(const cli_conn *c, int64_t id, int rank, int64_t attempt, bool follow);

/* cli_show.c: the coordinator's documents as tables; exit status. */
int cli_show_nodes(const rt_json *d);
int cli_show_jobs(const rt_json *d);
int cli_show_job(const rt_json *d);
/* cli_sweep.c: a sweep's document (GET /v1/jobs/ID): its trials as a table
 * sorted by the monitor, best first; its new trial events as lines (seen:
 * how many of its events were looked at), each with the best so far. */
void cli_show_sweep(const rt_json *d);
void cli_sweep_events(const rt_json *d, int64_t *seen);
/* The index in job document d's "events" (the newest of events_total) of
 * the first event after the first `seen` of all; *total: events_total. */
size_t cli_events_after(const rt_json *d, int64_t seen, int64_t *total);
/* A warning the CLI printed before submitting (cli_data.c's checks), so
 * that following the job does not say the rank's same warning again. */
void cli_warned(const char *text);
/* Job id's warning events after the first *seen events (then all seen),
 * on stderr, but those the CLI said before submitting; midline: a
 * progress line is on the terminal, a newline first. */
void cli_show_warnings(const rt_json *d, int64_t id, int64_t *seen, bool midline);
/* `ringtrain token create|list|revoke` (cli_tokens.c) */
int cli_token(const cli_args *a);
/* `ringtrain trace STORE --out FILE` (cli_trace.c) */
int cli_trace(const cli_args *a);
/* status --results: "R: VALUE" per rank that reported one */
int cli_show_results(const rt_json *d);
/* "3m04s", "2h05m", "4d03h" */
void cli_fmt_duration(double seconds, char *buf, size_t len);

#endif
