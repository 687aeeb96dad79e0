/* trainer_sched.c — see trainer.h: the learning rate of every step (the
 * schedules, PyTorch's lr_scheduler formulas) and the monitor that picks
 * the best epoch, reduces the rate on a plateau and stops early, decided by
 * rank 0 for every rank. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "trainer.h"

double rt_lr_at(const rt_job_cfg *c, int size, int64_t steps, int64_t e, int64_t k,
                double factor)
{
    double lr = c->learning_rate * (c->scale_lr ? size : 1);
    const double done = (double)(e - 1) + (double)k / (double)steps; /* epochs done */
    if (c->lr_schedule == RT_LR_COSINE) /* CosineAnnealingLR(T_max = epochs * steps), per step */
        lr = c->lr_min + 0.5 * (lr - c->lr_min) * (1 + cos(M_PI * done / (double)c->epochs));
    else if (c->lr_schedule == RT_LR_STEP) /* StepLR, stepped each epoch */
        lr *= pow(c->lr_gamma, (double)((e - 1) / c->lr_step_epochs));
    else if (c->lr_schedule == RT_LR_EXPONENTIAL) /* ExponentialLR, each epoch */
        lr *= pow(c->lr_gamma, (double)(e - 1));
    else if (c->lr_schedule == RT_LR_PLATEAU) /* ReduceLROnPlateau: the monitor's factor */
        lr *= factor;
    else if (c->lr_schedule == RT_LR_ONE_CYCLE) { /* OneCycleLR (cos), per step */
        /* phase one ends at step pct_start * total - 1, phase two at total - 1 */
        const double total = (double)(c->epochs * steps), last = total - 1.0;
        const double step = (double)((e - 1) * steps + k), up = c->lr_pct_start * total - 1.0;
        const double lo = lr / c->lr_div_factor, end = lo / c->lr_final_div_factor;
        if (step <= up)
            lr = lo + (lr - lo) * (1 - cos(M_PI * step / up)) / 2;
        else
            lr = end + (lr - end) * (1 + cos(M_PI * (step - up) / (last - up))) / 2;
    }
    if (done < c->warmup_epochs) { /* Horovod's warm-up from lr / size */
        const double from = 1.0 / size;
        lr *= from + (1 - from) * done / c->warmup_epochs;
    }
    return lr;
}

void rt_monitor_init(rt_monitor *m, const char *name, bool max)
{
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->max = max;
    m->best = m->plateau_best = max ? -INFINITY : INFINITY;
    m->lr_factor = 1.0;
}

static bool better(const rt_monitor *m, double v, double than, double delta)
{
    return m->max ? v > than + delta : v < than - delta;
}

bool rt_monitor_update(rt_monitor *m, const rt_job_cfg *c, int64_t epoch, double v)
{
    const double delta = c->min_delta;
    /* Keras' EarlyStopping: an improvement beats the best by more than
     * min_delta; a NaN never does */
    const bool best = isfinite(v) && (!isfinite(m->best) || better(m, v, m->best, delta));
    if (best) {
        m->best = v;
        m->best_epoch = epoch;
        m->since_best = 0;
    } else {
        m->since_best++;
    }
    /* ReduceLROnPlateau(threshold_mode = 'abs', threshold = min_delta) */
    if (c->lr_schedule == RT_LR_PLATEAU && isfinite(v)) {
        if (!isfinite(m->plateau_best) || better(m, v, m->plateau_best, delta)) {
            m->plateau_best = v;
            m->plateau_wait = 0;
        } else if (++m->plateau_wait > c->lr_patience) {
            m->lr_factor *= c->lr_gamma;
            m->plateau_wait = 0;
        }
    }
    if (c->early_stopping_patience > 0 && m->since_best >= c->early_stopping_patience &&
        epoch < c->epochs && !m->stop) {
        m->stop = true;
        snprintf(m->why, sizeof m->why,
                 "early stopping: %s has not improved for %lld epochs (best %.6g at epoch %lld)",
                 m->name, (long long)m->since_best, m->best, (long long)m->best_epoch);
    }
    return best;
}

rt_status rt_monitor_agree(rt_monitor *m, rt_comm *comm, int size, char *err)
{
    if (!comm || size <= 1)
        return RT_OK;
    /* ranks deciding apart would hang (horovod/horovod#3140): rank 0's words */
    double dec[2] = {m->stop ? 1.0 : 0.0, m->lr_factor};
    rt_status st = rt_broadcast(comm, dec, sizeof dec, 0);
    if (st != RT_OK)
        return rt_err(err, st, "%s", rt_comm_last_error(comm));
    m->stop = dec[0] != 0;
    m->lr_factor = dec[1];
    return RT_OK;
}
