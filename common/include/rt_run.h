/* rt_run.h — a job's ring settings, defined once (issue 47.1): each one's
 * [job] key in the job file, its field in the start frame, the rendezvous
 * file and the API's JSON, its variable in a Slurm step's environment
 * (RINGTRAIN_*), its default and its bounds.  The job schema takes its
 * defaults from the RT_RUN_* macros; the coordinator's start frame, the
 * agent's rendezvous file, the worker under srun and rt_init_from_env move
 * the settings with these functions only, so a setting added here reaches
 * the rank with no code naming it on the way. */
#ifndef RT_RUN_H
#define RT_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_json.h"
#include "rt_status.h"

/* defaults and bounds (the schema's text defaults are made from these) */
#define RT_RUN_SOCKETS 1
#define RT_RUN_SOCKETS_MAX 16
#define RT_RUN_TIMEOUT_S 60 /* a collective's deadline */
#define RT_RUN_BUCKET_MB 25 /* the gradients' fusion buckets (Horovod's 64, PyTorch DDP's 25) */
/* The transports a job may name (the job file's choices, in its order) */
#define RT_RUN_TRANSPORTS "tcp|rdma|nccl|shm|auto"
#define RT_RUN_STR_(x) #x
#define RT_RUN_STR(x) RT_RUN_STR_(x)

typedef struct rt_run_settings {
    char transport[16]; /* tcp, shm, rdma, nccl, or auto (before rt_run_resolve_transport) */
    int64_t sockets;    /* TCP connections per neighbour */
    int64_t collective_timeout_ms;
    bool encrypt, integrity, hierarchical;
} rt_run_settings;

enum { RT_RUN_TEXT, RT_RUN_INT, RT_RUN_MS, RT_RUN_BOOL };
typedef struct rt_run_field {
    const char *key;  /* the job file's: "job.sockets" */
    const char *json; /* start frame, rendezvous file, the API's fields: "sockets" */
    const char *env;  /* a Slurm step's: "RINGTRAIN_SOCKETS" */
    int kind;         /* RT_RUN_*: MS is milliseconds in JSON, seconds in the environment */
    size_t offset;
    int64_t lo, hi;
} rt_run_field;
extern const rt_run_field rt_run_fields[];
extern const size_t rt_run_nfields;

/* tcp, 1 socket, 60 s, integrity and hierarchical on, no encryption */
void rt_run_defaults(rt_run_settings *s);
/* Every setting as a member of the open JSON object w. */
void rt_run_write_json(const rt_run_settings *s, rt_jw *w);
/* The settings o has into s (absent ones keep s's); an error names the field. */
rt_status rt_run_read_json(const rt_json *o, rt_run_settings *s, char *err);
/* Every setting as RINGTRAIN_* (the worker before a Slurm step's ring). */
void rt_run_setenv(const rt_run_settings *s);
/* RINGTRAIN_* into s (unset ones keep s's); an error names the variable. */
rt_status rt_run_getenv(rt_run_settings *s, char *err);

/* "auto" resolved, for a job's ranks: NCCL for a training job whose every
 * rank has a GPU and NCCL, shared memory when every rank is on one host,
 * RDMA when every agent has a device, else TCP (a static name).  Another
 * choice is returned as it is: want itself. */
const char *rt_run_resolve_transport(const char *want, bool all_gpu_nccl, bool one_host, int np,
                                     bool all_rdma);
/* Whether a resolved transport is NCCL's (the trainer's GPU path). */
bool rt_run_is_nccl(const char *transport);

#endif
