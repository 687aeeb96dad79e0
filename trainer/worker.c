/* worker.c — `ringtrain-agent worker JOB.INI`: one rank of a training job.
 * Started by an agent it joins the job's ring (rt_init_from_env); started
 * by hand it trains alone (rank 0 of 1), which is handy for a first look at
 * a job file.  Exit status 0 when the job's work is done, 1 with the reason
 * on stderr (the coordinator shows the last lines), 2 for a bad job file. */
#include <stdio.h>
#include <string.h>

#include "rt_comm.h"
#include "rt_log.h"
#include "rt_schemas.h"
#include "rt_worker.h"
#include "trainer.h"

int rt_worker_main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ringtrain-agent worker JOB.INI\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    rt_job_cfg cfg;
    rt_cfg_errors e = {0};
    if (rt_cfg_load_file(&rt_job_schema, argv[1], &cfg, &e) != RT_OK) {
        fprintf(stderr, "worker: %s is not a valid job file:\n", argv[1]);
        rt_cfg_errors_print(&e, stderr);
        rt_cfg_errors_free(&e);
        rt_cfg_free(&rt_job_schema, &cfg);
        return 2;
    }
    if (cfg.type != RT_JOB_TRAIN) {
        fprintf(stderr, "worker: %s is not a training job\n", argv[1]);
        rt_cfg_free(&rt_job_schema, &cfg);
        return 2;
    }
    char err[RT_ERR_LEN];
    rt_comm *comm = NULL;
    rt_rank_info info = {.rank = 0, .size = 1, .local_rank = 0, .local_size = 1, .attempt = 1};
    rt_status st = rt_init_from_env(&comm, &info, err);
    if (st == RT_ERR_NOTFOUND) {
        st = RT_OK; /* not started by an agent: one rank */
        info = (rt_rank_info){.rank = 0, .size = 1, .local_rank = 0, .local_size = 1, .attempt = 1};
    }
    rt_log_set_rank(info.rank);
    rt_train_result res;
    if (st == RT_OK) {
        rt_trainer_env env = {comm, info.rank, info.size, info.local_rank, info.local_size,
                              info.attempt, info.rank == 0 ? stdout : NULL};
        st = rt_train(&cfg, &env, &res, err);
    }
    if (st != RT_OK)
        fprintf(stderr, "worker (rank %d of %d): %s\n", info.rank, info.size, err);
    else if (info.rank == 0)
        printf("trainer: done: epochs %lld..%lld, best epoch %lld (val_loss %.4f), %.0f "
               "samples/s\n",
               (long long)res.first_epoch, (long long)res.epochs, (long long)res.best_epoch,
               res.best_val_loss, res.samples_per_s);
    rt_comm_destroy(comm);
    rt_cfg_free(&rt_job_schema, &cfg);
    return st == RT_OK ? 0 : 1;
}
