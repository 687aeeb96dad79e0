/* rt_schemas.h — the configuration files of ringtrain, each one table
 * (rt_config.h): coordinator.conf, agent.conf, and job files.  Every key's
 * default, bounds and help text live in the tables in rt_schemas.c; `--print-
 * config` of each program prints them. */
#ifndef RT_SCHEMAS_H
#define RT_SCHEMAS_H

#include "rt_config.h"

/* ---- coordinator.conf ------------------------------------------------------ */
typedef struct rt_coord_cfg {
    char *listen;      /* agents' control channel (TLS) */
    char *http_listen; /* HTTP API, dashboard, /metrics (TLS) */
    char *cert, *key;  /* the coordinator's certificate and private key */
    char *token_file;  /* cluster token (agents and API clients) */
    char *state_db;    /* SQLite database */
    int64_t heartbeat_interval_us, heartbeat_timeout_us;
    int64_t prepare_timeout_us;
    int64_t default_start_timeout_us;
    int64_t default_max_restarts;
    int64_t log_tail_lines;
    int log_level;
} rt_coord_cfg;
extern const rt_cfg_schema rt_coord_schema;

/* ---- agent.conf ------------------------------------------------------------ */
typedef struct rt_agent_cfg {
    char *coordinator; /* host:port of the control channel */
    char *server_name; /* name in the coordinator's certificate (default: its host) */
    char *ca, *token_file;
    char *name;        /* this agent's name on its host (default: the hostname) */
    char *host_id;     /* override of the computed host hash */
    char *data_address; /* address ranks listen on (default: this end of the control connection) */
    int64_t slots;     /* 0: one per GPU, or one if there is none */
    char *work_dir, *log_dir;
    uint64_t log_max_bytes;
    int64_t log_keep;
    int64_t reconnect_max_us;
    int64_t kill_grace_us;
    int log_level;
} rt_agent_cfg;
extern const rt_cfg_schema rt_agent_schema;

/* ---- job files: [job] (every job); the training sections come from the
 * training issue and extend the same table ----------------------------------- */
enum { RT_JOB_TRAIN = 0, RT_JOB_EXEC = 1 };
enum { RT_TP_TCP = 0, RT_TP_RDMA = 1, RT_TP_NCCL = 2, RT_TP_AUTO = 3 };

typedef struct rt_job_cfg {
    /* [job] */
    char *name;
    int type;
    int64_t np, min_np, max_restarts;
    int64_t start_timeout_us, deadline_us;
    int transport;
    int64_t sockets;
    int64_t collective_timeout_us;
    bool encrypt;
    rt_strlist command; /* exec jobs: the program and its arguments */
} rt_job_cfg;
extern const rt_cfg_schema rt_job_schema;

/* Log levels as enum text, for the tables above. */
#define RT_LOG_LEVEL_CHOICES "error|warn|info|debug|trace"

#endif
