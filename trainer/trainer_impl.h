/* trainer_impl.h — private to trainer/: a training run's state, shared by
 * trainer.c (set-up, epochs, checkpoints) and trainer_end.c (the final
 * predictions). */
#ifndef RT_TRAINER_IMPL_H
#define RT_TRAINER_IMPL_H

#include "rt_trace.h"
#include "trainer.h"
#include "trainer_store.h"

typedef struct trainer {
    const rt_job_cfg *cfg;
    const rt_trainer_env *env;
    rt_dataset *ds;
    rt_columns cols;
    rt_rows train, val;
    rt_stream *stream;    /* [data] stream_rows: training rows a window at a time */
    int64_t ntrain, nval; /* this rank's rows (in train/val, or streamed) */
    rt_model_spec spec;
    rt_dp *dp;
    rt_adam_hp hp;
    int64_t steps, start_epoch;
    rt_store store; /* [output] store: a folder, or S3 through a mirror */
    char path_last[1200], path_best[1200], path_trace[1200];
    rt_trace *trace; /* [train] trace */
    rt_task_info task;
    rt_metrics vm;      /* the validation metrics */
    bool class_weights; /* rows weigh differently: the loss is divided by the global weight */
    rt_monitor mon;     /* the best epoch, the plateau, early stopping */
} trainer;

/* trainer_end.c: every rank scores its share of the test rows (and, with
 * predict_validation, the validation rows) with the best model; rank 0
 * writes the file (in S3: put up whole) and fills res. */
rt_status trainer_predict_end(trainer *t, rt_train_result *res, char *err);

#endif
