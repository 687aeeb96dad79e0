/* worker_run.c — see trainer.h: one rank of a training job, as
 * ringtrain-worker and `ringtrain worker` run it: join the ring (an agent's
 * rendezvous, a Slurm step's, or none: one rank), train, say how it ended. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_data_io.h"
#include "rt_comm.h"
#include "rt_kernels.h"
#include "rt_log.h"
#include "rt_proto.h"
#include "rt_schemas.h"
#include "rt_run.h"
#include "trainer.h"

/* Under srun the ring's settings are the job file's, handed to
 * rt_init_from_env as RINGTRAIN_* (docs/slurm.md); transport = auto on
 * GPUs with NCCL is NCCL, as the coordinator resolves it. */
static void slurm_settings(const rt_job_cfg *cfg)
{
    if (getenv(RT_ENV_RANK) || !getenv("SLURM_PROCID"))
        return;
    rt_run_settings rs;
    rt_job_run_settings(cfg, &rs);
    if (!strcmp(rs.transport, "auto") && cfg->device != RT_DEV_CPU && rt_cuda_available() &&
        rt_cuda_device_count_visible() > 0 && rt_nccl_available())
        snprintf(rs.transport, sizeof rs.transport, "nccl");
    rt_run_setenv(&rs); /* "auto" left to rt_init_from_env: shm on one node, else tcp */
}

int rt_worker_run(const rt_job_cfg *cfg)
{
    char err[RT_ERR_LEN], host[256] = "?";
    gethostname(host, sizeof host - 1);
    rt_comm *comm = NULL;
    rt_rank_info info = {.rank = 0, .size = 1, .local_rank = 0, .local_size = 1, .attempt = 1};
    slurm_settings(cfg);
    rt_s3_keys_setenv(&cfg->s3, true); /* the job's [s3] over the environment's */
    rt_data_set_cache(cfg->cache);
    rt_status st = rt_init_from_env(&comm, &info, err);
    if (st == RT_ERR_NOTFOUND && getenv("SLURM_JOB_ID"))
        st = RT_ERR_INVALID; /* a Slurm batch script: the job wants srun's tasks, not one rank */
    if (st == RT_ERR_NOTFOUND) {
        st = RT_OK; /* started by neither an agent nor srun: one rank */
        info = (rt_rank_info){.rank = 0, .size = 1, .local_rank = 0, .local_size = 1, .attempt = 1};
    }
    rt_log_set_rank(info.rank);
    rt_train_result res;
    if (st == RT_OK) {
        rt_trainer_env env = {comm,
                              info.rank,
                              info.size,
                              info.local_rank,
                              info.local_size,
                              info.attempt,
                              info.rank == 0 ? stdout : NULL,
                              info.transport[0] ? info.transport : NULL,
                              info.collective_timeout_us};
        st = rt_train(cfg, &env, &res, err);
    }
    if (st != RT_OK)
        fprintf(stderr, "worker (rank %d of %d, on %s): %s\n", info.rank, info.size, host, err);
    else if (info.rank == 0)
        printf("trainer: done: epochs %lld..%lld, best epoch %lld (%s %.4f), %.0f samples/s\n",
               (long long)res.first_epoch, (long long)res.epochs, (long long)res.best_epoch,
               cfg->monitor, res.best_val_loss, res.samples_per_s);
    /* a collective that failed (a peer gone, a timeout): another rank's
     * failure is most often the cause, and the coordinator waits for it */
    const bool peers = st != RT_OK && comm && rt_comm_broken(comm);
    rt_comm_destroy(comm);
    return st == RT_OK ? 0 : peers ? RT_EXIT_PEER : 1;
}
