/* cli.h — private to the `ringtrain` CLI (coordinator/cli_*.c). */
#ifndef RT_CLI_H
#define RT_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "rt_net.h"

/* Where the coordinator's API is and how to prove who we are. */
typedef struct cli_conn {
    char host[256];
    int port;
    char server_name[256];
    char ca[1024];
    char token[RT_TOKEN_HEX + 1];
    int timeout_ms;
} cli_conn;

typedef struct http_resp {
    int status;
    char *body; /* NUL-terminated; caller frees */
    size_t len;
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

/* Connection settings from flags, environment and ~/.config/ringtrain/cli.conf. */
rt_status cli_conn_load(cli_conn *c, const char *coordinator, const char *ca,
                        const char *token_file, const char *server_name, char *err);

/* init_cluster.c: CA, coordinator certificate, token, example configs. */
int cli_init_cluster(int argc, char **argv);
rt_status rt_make_cluster(const char *dir, const char *const *sans, int nsans, bool force,
                          char *err);

/* cli_data.c: local data commands. */
int cli_prep(int argc, char **argv);
int cli_predict(int argc, char **argv);
int cli_model(int argc, char **argv);

/* cli_local.c: `run` and `exec --local`. */
int cli_local(int argc, char **argv, bool is_exec);

/* cli_jobs.c: the JSON job description from a job file (errors printed
 * with file:line; returns 2 and submits nothing) or from exec's arguments. */
int cli_job_body_from_file(int argc, char **argv, char **body);
int cli_job_body_from_exec(int argc, char **argv, char **body);
int cli_submit_and_follow(const cli_conn *c, const char *body, bool follow, bool exec_output,
                          bool json);

#endif
