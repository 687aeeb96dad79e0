/* rt_worker.h — the training worker: what `ringtrain-agent worker JOB.INI`
 * runs on every rank of a training job (prep'd shards in, checkpoints,
 * history and predictions out).  It joins its job's ring through
 * rt_init_from_env(). */
#ifndef RT_WORKER_H
#define RT_WORKER_H

int rt_worker_main(int argc, char **argv);

#endif
