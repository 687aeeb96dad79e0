/* fusion.c — the fused gradient allreduce (PyTorch DDP's bucketing, Horovod's
 * tensor fusion): one flat float buffer cut into buckets of bucket_bytes
 * from its end, since backward finishes the last layer's gradients first.
 * As backward reports ranges final (rt_fusion_ready), a communication thread
 * allreduces each bucket as soon as every element of it, and every bucket
 * before it, is ready, while backward keeps computing.  Buckets go strictly
 * in index order (as in PyTorch DDP): every rank runs the same sequence of
 * allreduces even if its ranges were reported in another order.
 * rt_fusion_wait() returns when the round's buckets are done.  (The GPU
 * path cuts at layer ends instead: trainer/rt_dp_gpu.c's grads_hook says
 * why.)
 *
 * Threads: begin/ready/wait come from one thread (the trainer); the
 * communication thread is the only user of the communicator during a round,
 * so the trainer must not call collectives between begin and wait. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_log.h"
#include "rt_time.h"
#include "rt_transport.h"

typedef struct bucket {
    size_t off, len, ready;
    int64_t start_ns, end_ns; /* its allreduce in the last round (CLOCK_MONOTONIC) */
} bucket;

struct rt_fusion {
    rt_comm *c;
    float *buf;
    uint16_t *half;    /* rt_fusion_set_bf16: the buckets in bfloat16 on the wire */
    size_t count, per; /* elements, elements per bucket */
    int nb;
    bucket *b;
    int completed; /* buckets allreduced this round (they go in index order) */
    rt_status st;
    char err[RT_ERR_LEN];
    bool stop;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
};

static void *comm_thread(void *arg)
{
    rt_fusion *f = arg;
    pthread_mutex_lock(&f->mu);
    for (;;) {
        while (!f->stop && !(f->completed < f->nb && f->b[f->completed].ready == f->b[f->completed].len))
            pthread_cond_wait(&f->work, &f->mu);
        if (f->stop)
            break;
        int i = f->completed;
        rt_status prev = f->st;
        uint16_t *half = f->half;
        pthread_mutex_unlock(&f->mu);
        const int64_t t0 = rt_now_ns();
        /* after a failure the rest of the round is skipped: the caller gets
         * the first error and the communicator is broken anyway */
        rt_status st = prev;
        float *p = f->buf + f->b[i].off;
        if (prev == RT_OK && half) {
            uint16_t *h = half + f->b[i].off;
            rt_bf16_from_f32(h, p, f->b[i].len);
            st = rt_allreduce(f->c, h, f->b[i].len, RT_C_BF16, RT_SUM);
            if (st == RT_OK)
                rt_bf16_to_f32(p, h, f->b[i].len);
        } else if (prev == RT_OK) {
            st = rt_allreduce(f->c, p, f->b[i].len, RT_C_F32, RT_SUM);
        }
        pthread_mutex_lock(&f->mu);
        f->b[i].start_ns = t0;
        f->b[i].end_ns = rt_now_ns();
        if (st != RT_OK && f->st == RT_OK) {
            f->st = st;
            snprintf(f->err, sizeof f->err, "%s", rt_comm_last_error(f->c));
        }
        f->completed++;
        pthread_cond_broadcast(&f->done);
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

rt_status rt_fusion_create(rt_comm *c, float *buf, size_t count, size_t bucket_bytes,
                           rt_fusion **out, char *err)
{
    *out = NULL;
    if (bucket_bytes < 4)
        return rt_err(err, RT_ERR_INVALID, "bucket size %zu is below one float", bucket_bytes);
    rt_fusion *f = calloc(1, sizeof *f);
    if (!f)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    f->c = c;
    f->buf = buf;
    f->count = count;
    f->per = bucket_bytes / 4;
    f->nb = count == 0 ? 0 : (int)((count + f->per - 1) / f->per);
    f->b = calloc((size_t)(f->nb ? f->nb : 1), sizeof *f->b);
    if (!f->b) {
        free(f);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    /* bucket i covers [count - (i+1)*per, count - i*per), clipped at 0 */
    for (int i = 0; i < f->nb; i++) {
        size_t end = count - (size_t)i * f->per;
        f->b[i].off = end > f->per ? end - f->per : 0;
        f->b[i].len = end - f->b[i].off;
    }
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->work, NULL);
    pthread_cond_init(&f->done, NULL);
    f->completed = f->nb; /* no round in progress */
    if (pthread_create(&f->th, NULL, comm_thread, f) != 0) {
        pthread_mutex_destroy(&f->mu);
        pthread_cond_destroy(&f->work);
        pthread_cond_destroy(&f->done);
        free(f->b);
        free(f);
        return rt_err(err, RT_ERR_IO, "cannot start the communication thread");
    }
    *out = f;
    return RT_OK;
}

void rt_fusion_destroy(rt_fusion *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    f->stop = true; /* an unfinished round is abandoned (its buckets never all became ready) */
    pthread_cond_broadcast(&f->work);
    pthread_mutex_unlock(&f->mu);
    pthread_join(f->th, NULL);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->work);
    pthread_cond_destroy(&f->done);
    free(f->half);
    free(f->b);
    free(f);
}

rt_status rt_fusion_set_bf16(rt_fusion *f, bool on, char *err)
{
    rt_status st = RT_OK;
    pthread_mutex_lock(&f->mu);
    RT_ASSERT(f->completed == f->nb); /* between rounds */
    if (!on) {
        free(f->half);
        f->half = NULL;
    } else if (!f->half && !(f->half = malloc((f->count ? f->count : 1) * sizeof *f->half))) {
        st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_unlock(&f->mu);
    return st;
}

int rt_fusion_buckets(const rt_fusion *f) { return f->nb; }

int rt_fusion_completed(rt_fusion *f)
{
    pthread_mutex_lock(&f->mu);
    int n = f->completed;
    pthread_mutex_unlock(&f->mu);
    return n;
}

void rt_fusion_begin(rt_fusion *f)
{
    pthread_mutex_lock(&f->mu);
    /* the previous round was waited for (or never started a bucket) */
    RT_ASSERT(f->completed == f->nb || f->completed == 0);
    for (int i = 0; i < f->nb; i++)
        f->b[i].ready = 0;
    f->completed = 0;
    f->st = RT_OK;
    f->err[0] = '\0';
    pthread_mutex_unlock(&f->mu);
}

void rt_fusion_ready(rt_fusion *f, size_t off, size_t count)
{
    RT_ASSERT(off <= f->count && count <= f->count - off);
    if (count == 0)
        return;
    /* buckets touched: from the one holding the range's last element */
    int first = (int)((f->count - (off + count)) / f->per);
    int last = (int)((f->count - 1 - off) / f->per);
    pthread_mutex_lock(&f->mu);
    bool any = false;
    for (int i = first; i <= last; i++) {
        bucket *b = &f->b[i];
        size_t lo = off > b->off ? off : b->off;
        size_t hi = off + count < b->off + b->len ? off + count : b->off + b->len;
        if (hi <= lo)
            continue;
        b->ready += hi - lo;
        RT_ASSERT(b->ready <= b->len); /* every element is reported once */
        any = any || b->ready == b->len;
    }
    if (any)
        pthread_cond_signal(&f->work);
    pthread_mutex_unlock(&f->mu);
}

rt_status rt_fusion_wait(rt_fusion *f, char *err)
{
    pthread_mutex_lock(&f->mu);
    int ready = 0;
    while (ready < f->nb && f->b[ready].ready == f->b[ready].len)
        ready++;
    if (ready < f->nb) {
        /* let the buckets already started finish, then report the misuse */
        while (f->completed < ready)
            pthread_cond_wait(&f->done, &f->mu);
        pthread_mutex_unlock(&f->mu);
        return rt_err(err, RT_ERR_INVALID,
                      "rt_fusion_wait: bucket %d of %d was never completely reported ready", ready,
                      f->nb);
    }
    while (f->completed < f->nb)
        pthread_cond_wait(&f->done, &f->mu);
    rt_status st = f->st;
    if (st != RT_OK)
        rt_err(err, st, "%s", f->err);
    pthread_mutex_unlock(&f->mu);
    return st;
}

bool rt_fusion_bucket_time(rt_fusion *f, int i, int64_t *start_ns, int64_t *end_ns)
{
    if (!f || i < 0 || i >= f->nb)
        return false;
    pthread_mutex_lock(&f->mu);
    bool done = i < f->completed;
    *start_ns = f->b[i].start_ns;
    *end_ns = f->b[i].end_ns;
    pthread_mutex_unlock(&f->mu);
    return done;
}
