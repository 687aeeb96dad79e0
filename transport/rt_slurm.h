/* rt_slurm.h — a Slurm job step as ringtrain sees it: its layout from
 * srun's environment, the step's key and the rendezvous over its first
 * node (docs/slurm.md).  Private to transport/; rt_init_from_env uses it.
 *
 * From srun's environment: SLURM_PROCID (rank), SLURM_NTASKS (size),
 * SLURM_LOCALID (local rank), SLURM_NODEID (this task's node, an index
 * into the node list), SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST),
 * SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE: "2(x3),1"),
 * SLURM_JOB_ID and SLURM_STEP_ID.  local_size is the tasks on this node;
 * cross_rank / cross_size are Horovod's: among the nodes that have a task
 * of this local rank, this node's index and their number — the same
 * whether Slurm placed ranks in blocks or cyclically. */
#ifndef RT_SLURM_H
#define RT_SLURM_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_status.h"

typedef struct rt_slurm_step {
    int rank, size, local_rank, local_size, cross_rank, cross_size;
    int node;     /* SLURM_NODEID: index into hosts */
    char **hosts; /* the step's nodes, expanded, in Slurm's order */
    int nhosts;
    int64_t job_id, step_id;
    int port; /* the rendezvous port on hosts[0], from the job and step ids */
} rt_slurm_step;

/* Whether this process looks like a task of a Slurm job step (srun's: the
 * batch script itself, which has no SLURM_STEP_ID, is not one). */
bool rt_slurm_detected(void);
/* The step's layout from the environment; an error naming the variable. */
rt_status rt_slurm_layout(rt_slurm_step *s, char *err);
void rt_slurm_free(rt_slurm_step *s);

/* rt_slurm_rdv.c.  The rendezvous tries ports port .. port + RT_SLURM_PORTS - 1
 * (the first free one on the first node), so a port held by another program
 * does not stop the step. */
#define RT_SLURM_PORTS 8
/* The key file: RINGTRAIN_KEY_FILE, else $XDG_CONFIG_HOME/ringtrain/slurm.key,
 * else ~/.config/ringtrain/slurm.key. */
rt_status rt_slurm_key_path(char *out, size_t len, char *err);
/* The step's key, HMAC-SHA256(file, "ringtrain slurm step JOB.STEP"), from
 * the key file — made (32 random bytes, 0600) when missing; refused when
 * another user owns it or others may read it. */
rt_status rt_slurm_key(const char *path, int64_t job, int64_t step, uint8_t out[32], char *err);
/* Every task's data address: task 0 of node 0 listens on hosts[0]:port,
 * the others send theirs (with a MAC under the step's key) and get the list
 * back; *listen_fd is this task's data-plane socket (every address, port
 * peers[rank]'s).  Within timeout_us, else an error naming the missing tasks
 * (on the first task; the others learn it from there). */
rt_status rt_slurm_rendezvous(const rt_slurm_step *s, const uint8_t key[32], int64_t timeout_us,
                              int *listen_fd, char ***peers, char *err);
void rt_slurm_peers_free(char **peers, int n);
/* A Slurm node list ("node[01-04,07],gpu-a[1-2]x,login") expanded as
 * `scontrol show hostnames` does: ranges keep their zero padding, several
 * bracket groups in one name multiply, order kept. */
rt_status rt_slurm_hostlist(const char *spec, char ***names, int *n, char *err);
void rt_slurm_hostlist_free(char **names, int n);

#endif
