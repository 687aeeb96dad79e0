/* rt_slurm.h — a Slurm job step as ringtrain sees it (issue 31, the first
 * piece: the layout; the rendezvous over the first host and the key file
 * are to come).  Private to transport/.
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

/* Whether this process looks like a task of a Slurm job step. */
bool rt_slurm_detected(void);
/* The step's layout from the environment; an error naming the variable. */
rt_status rt_slurm_layout(rt_slurm_step *s, char *err);
void rt_slurm_free(rt_slurm_step *s);
/* A Slurm node list ("node[01-04,07],gpu-a[1-2]x,login") expanded as
 * `scontrol show hostnames` does: ranges keep their zero padding, several
 * bracket groups in one name multiply, order kept. */
rt_status rt_slurm_hostlist(const char *spec, char ***names, int *n, char *err);
void rt_slurm_hostlist_free(char **names, int n);

#endif
