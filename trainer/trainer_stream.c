/* trainer_stream.c — see trainer.h: a rank's training rows a window at a
 * time, so its memory follows [data] stream_rows, not the dataset. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer.h"

typedef struct group_ref {
    int reader, group, part;
} group_ref;

struct rt_stream {
    const rt_dataset *ds;
    const rt_columns *c;
    int nreaders;
    rt_shard_reader **rd;
    int ngroups;
    group_ref *groups;
    int64_t window_rows, train_rows, val_rows, peak;
    rt_rows vwin; /* validation rows of one row group (when they are streamed too) */
    uint64_t seed;
    int rank;
    int64_t epoch;
    int64_t *order; /* the epoch's row-group order */
    int next;       /* the next window's first group, in order */
    bool prefetch;  /* read the next window while this one trains */
    struct {        /* the window read ahead, on its own thread */
        pthread_t th;
        bool on;
        int start, used, end;
        int64_t epoch;
        rt_rows rows;
        rt_status st;
        char err[RT_ERR_LEN];
    } pf;
    bool one_window; /* every training row fits one window: loaded once, reshuffled */
    bool loaded;
    rt_rows win;
    int64_t *perm, perm_cap, pos;
};

/* A partition's reader, its columns checked against what the model reads. */
static rt_status open_part(rt_stream *s, int p, rt_shard_reader **out, char *err)
{
    const rt_ds_part *part = &s->ds->parts[p];
    char path[1300];
    snprintf(path, sizeof path, "%s/%s", s->ds->dir, part->file);
    rt_status st = rt_shard_reader_open(path, out, err);
    if (st != RT_OK)
        return st;
    if (rt_shard_reader_rows(*out) != part->rows)
        return rt_err(err, RT_ERR_INVALID, "%s has %lld rows, the manifest says %lld", path,
                      (long long)rt_shard_reader_rows(*out), (long long)part->rows);
    const int cap = s->c->ncat + s->c->ncont + 3;
    const char **need = malloc((size_t)cap * sizeof *need);
    rt_col_type *type = malloc((size_t)cap * sizeof *type);
    if (!need || !type) {
        free(need);
        free(type);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    int n = 0;
    for (int i = 0; i < s->c->ncat; i++)
        need[n] = s->c->cat[i], type[n++] = RT_COL_I32;
    for (int i = 0; i < s->c->ncont; i++)
        need[n] = s->c->cont[i], type[n++] = RT_COL_F32;
    need[n] = s->c->label, type[n++] = RT_COL_F32;
    if (s->c->weight[0])
        need[n] = s->c->weight, type[n++] = RT_COL_F32;
    if (s->c->validation[0])
        need[n] = s->c->validation, type[n++] = RT_COL_U8;
    st = RT_OK;
    for (int k = 0; k < n && st == RT_OK; k++) {
        const rt_shard_col *found = NULL;
        for (int i = 0; i < rt_shard_reader_ncols(*out) && !found; i++)
            if (!strcmp(rt_shard_reader_col(*out, i)->name, need[k]))
                found = rt_shard_reader_col(*out, i);
        if (!found)
            st = rt_err(err, RT_ERR_INVALID, "%s has no column %s", path, need[k]);
        else if (found->type != type[k])
            st = rt_err(err, RT_ERR_INVALID, "%s: column %s is %s, not %s", path, need[k],
                        rt_col_type_name(found->type), rt_col_type_name(type[k]));
    }
    free(need);
    free(type);
    return st;
}

/* Appends group g's rows with validation flag want_val to r. */
static rt_status load_group(rt_stream *s, const group_ref *g, rt_rows *r, int want_val,
                            char *err)
{
    rt_shard *sh = NULL;
    rt_status st = rt_shard_reader_group(s->rd[g->reader], g->group, &sh, err);
    if (st != RT_OK)
        return st;
    const rt_shard_col *v = s->c->validation[0] ? rt_shard_find(sh, s->c->validation) : NULL;
    char file[1300];
    snprintf(file, sizeof file, "%s/%s", s->ds->dir, s->ds->parts[g->part].file);
    st = rt_rows_check_vocab(sh, s->c, file, g->group, err);
    if (st == RT_OK && (want_val == 0 || v))
        st = rt_rows_append(r, sh, s->c, v ? v->data : NULL, want_val,
                            want_val ? "validation" : "training", err);
    rt_shard_free(sh);
    return st;
}

rt_status rt_stream_open(const rt_dataset *ds, const rt_columns *c, int rank, int size,
                         int64_t window_rows, uint64_t seed, rt_stream **out, rt_rows *val,
                         int64_t *train_rows, int64_t *val_rows, char *err)
{
    *out = NULL;
    memset(val, 0, sizeof *val);
    val->ncat = c->ncat;
    val->ncont = c->ncont;
    if (ds->nparts < size)
        return rt_err(err, RT_ERR_INVALID,
                      "%s has %d training partition%s for %d ranks: prep it again with "
                      "--partitions %d (or a multiple)",
                      ds->dir, ds->nparts, ds->nparts == 1 ? "" : "s", size, size);
    rt_stream *s = calloc(1, sizeof *s);
    if (!s)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    s->ds = ds;
    s->c = c;
    s->window_rows = window_rows;
    s->seed = seed;
    s->rank = rank;
    s->win.ncat = s->vwin.ncat = s->pf.rows.ncat = c->ncat;
    s->win.ncont = s->vwin.ncont = s->pf.rows.ncont = c->ncont;
    bool stdz = false;
    rt_label_transform_parse(ds->label_transform, NULL, &stdz, NULL);
    if (stdz) {
        s->win.label_mean = s->vwin.label_mean = s->pf.rows.label_mean = val->label_mean =
            ds->label_mean;
        s->win.label_std = s->vwin.label_std = s->pf.rows.label_std = val->label_std =
            ds->label_std;
    }
    s->prefetch = true;
    int nparts = (ds->nparts - rank + size - 1) / size;
    s->rd = calloc((size_t)nparts + 1, sizeof *s->rd);
    rt_status st = s->rd ? RT_OK : rt_err(err, RT_ERR_NOMEM, "out of memory");
    for (int p = rank; p < ds->nparts && st == RT_OK; p += size) {
        st = open_part(s, p, &s->rd[s->nreaders], err);
        if (s->rd[s->nreaders])
            s->nreaders++;
        if (st == RT_OK) {
            s->train_rows += ds->parts[p].rows - ds->parts[p].validation_rows;
            s->ngroups += rt_shard_reader_groups(s->rd[s->nreaders - 1]);
        }
    }
    if (st == RT_OK) {
        s->groups = calloc((size_t)s->ngroups + 1, sizeof *s->groups);
        s->order = calloc((size_t)s->ngroups + 1, sizeof *s->order);
        if (!s->groups || !s->order)
            st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    int k = 0;
    for (int r = 0; st == RT_OK && r < s->nreaders; r++)
        for (int g = 0; g < rt_shard_reader_groups(s->rd[r]); g++)
            s->groups[k++] = (group_ref){r, g, rank + r * size};
    for (int p = rank; p < ds->nparts; p += size)
        s->val_rows += c->validation[0] ? ds->parts[p].validation_rows : 0;
    /* one window: the validation rows in memory, as rt_rows_load keeps them
     * (the same evaluation, bit for bit); else read a row group at a time
     * by rt_stream_validate.  Either way every group is read once here, so
     * a damaged one is found before training. */
    s->one_window = s->train_rows <= window_rows;
    for (int g = 0; st == RT_OK && g < s->ngroups; g++) {
        rt_rows *into = s->one_window ? val : &s->vwin;
        if (!s->one_window)
            s->vwin.n = 0;
        st = load_group(s, &s->groups[g], into, 1, err);
    }
    if (st != RT_OK) {
        rt_stream_close(s);
        rt_rows_free(val);
        return st;
    }
    *train_rows = s->train_rows;
    *val_rows = s->val_rows;
    *out = s;
    return RT_OK;
}

rt_status rt_stream_validate(rt_stream *s, rt_dp *d, rt_metrics *metrics, char *err)
{
    if (s->one_window || !s->c->validation[0])
        return RT_OK; /* the caller evaluates the rows rt_stream_open loaded */
    rt_status st = RT_OK;
    for (int g = 0; st == RT_OK && g < s->ngroups; g++) {
        s->vwin.n = 0;
        st = load_group(s, &s->groups[g], &s->vwin, 1, err);
        if (st == RT_OK && s->vwin.n > 0)
            st = rt_eval_rows(d, &s->vwin, metrics, err);
    }
    return st;
}

/* A window from group `start` of the epoch's order (past the last: the
 * first): groups until it holds window_rows training rows, or the order
 * ends; a window of only validation rows goes on from the first group.
 * *used: where it began; *end: the next window's start. */
static rt_status fill(rt_stream *s, int start, rt_rows *w, int *used, int *end, char *err)
{
    w->n = 0;
    if (start >= s->ngroups)
        start = 0;
    for (;;) {
        *used = start;
        int g = start;
        rt_status st = RT_OK;
        while (st == RT_OK && g < s->ngroups && (w->n == 0 || w->n < s->window_rows))
            st = load_group(s, &s->groups[s->order[g++]], w, 0, err);
        if (st != RT_OK)
            return st;
        if (w->n > 0) {
            *end = g;
            return RT_OK;
        }
        if (start == 0)
            return rt_err(err, RT_ERR_INVALID, "this rank has no training rows");
        start = 0;
    }
}

static void *prefetch_main(void *arg)
{
    rt_stream *s = arg;
    s->pf.st = fill(s, s->pf.start, &s->pf.rows, &s->pf.used, &s->pf.end, s->pf.err);
    return NULL;
}

/* Wait for the window being read ahead, if any; it stays usable only while
 * its start and epoch are still the ones asked for. */
static void prefetch_join(rt_stream *s)
{
    if (s->pf.on)
        pthread_join(s->pf.th, NULL);
    s->pf.on = false;
}

/* The next window: read ahead while the current one trains (when it could
 * not be, read now), then shuffled from (seed + its first group, epoch,
 * rank) — the first window of an epoch exactly as rows in memory are. */
static rt_status next_window(rt_stream *s, char *err)
{
    if (s->one_window && s->loaded) {
        s->pos = 0;
        return RT_OK; /* the same rows; rt_stream_epoch reshuffled them */
    }
    if (s->train_rows == 0)
        return rt_err(err, RT_ERR_INVALID, "this rank has no training rows");
    int used = 0, end = 0;
    rt_status st;
    bool ready = s->pf.on && s->pf.start == s->next && s->pf.epoch == s->epoch;
    prefetch_join(s);
    if (ready) {
        st = s->pf.st;
        if (st != RT_OK)
            snprintf(err, RT_ERR_LEN, "%s", s->pf.err);
        rt_rows t = s->win;
        s->win = s->pf.rows;
        s->pf.rows = t;
        used = s->pf.used;
        end = s->pf.end;
    } else {
        st = fill(s, s->next, &s->win, &used, &end, err);
    }
    if (st != RT_OK)
        return st;
    if (s->win.n > s->perm_cap) {
        free(s->perm);
        s->perm_cap = s->win.n;
        if (!(s->perm = malloc((size_t)s->perm_cap * sizeof *s->perm)))
            return rt_err(err, RT_ERR_NOMEM, "out of memory for a window of %lld rows",
                          (long long)s->win.n);
    }
    rt_shuffle(s->perm, s->win.n, s->seed + (uint64_t)used * 0x9e3779b97f4a7c15ull, s->epoch,
               s->rank);
    s->next = end;
    s->pos = 0;
    s->loaded = true;
    if (s->win.n > s->peak)
        s->peak = s->win.n;
    if (!s->one_window && s->prefetch) { /* the window after this one, meanwhile */
        s->pf.start = s->next;
        s->pf.epoch = s->epoch;
        s->pf.on = pthread_create(&s->pf.th, NULL, prefetch_main, s) == 0;
    }
    return RT_OK;
}

rt_status rt_stream_epoch(rt_stream *s, int64_t epoch, char *err)
{
    prefetch_join(s); /* read ahead in the last epoch's order: not this one's */
    s->epoch = epoch;
    s->next = 0;
    if (s->one_window) /* rows_load's order */
        for (int g = 0; g < s->ngroups; g++)
            s->order[g] = g;
    else /* the row groups' order, from (seed, epoch, rank) as well */
        rt_shuffle(s->order, s->ngroups, s->seed ^ 0x2545f4914f6cdd1dull, epoch, s->rank);
    if (s->one_window && s->loaded) {
        rt_shuffle(s->perm, s->win.n, s->seed, epoch, s->rank);
        s->pos = 0;
        return RT_OK;
    }
    return next_window(s, err);
}

void rt_stream_set_prefetch(rt_stream *s, bool on)
{
    prefetch_join(s);
    s->prefetch = on;
}

rt_status rt_stream_batch(rt_stream *s, int64_t B, int32_t *cat, float *cont, float *label,
                          float *weight, char *err)
{
    for (int64_t b = 0; b < B;) {
        if (s->pos == s->win.n) {
            rt_status st = next_window(s, err);
            if (st != RT_OK)
                return st;
        }
        int64_t take = s->win.n - s->pos < B - b ? s->win.n - s->pos : B - b;
        rt_rows_gather(&s->win, s->perm + s->pos, take, cat + b * s->c->ncat,
                       cont + b * s->c->ncont, label + b, weight ? weight + b : NULL);
        s->pos += take;
        b += take;
    }
    return RT_OK;
}

int64_t rt_stream_peak_rows(const rt_stream *s)
{
    return s->peak;
}

void rt_stream_close(rt_stream *s)
{
    if (!s)
        return;
    prefetch_join(s);
    rt_rows_free(&s->pf.rows);
    for (int r = 0; r < s->nreaders; r++)
        rt_shard_reader_close(s->rd[r]);
    free(s->rd);
    free(s->groups);
    free(s->order);
    free(s->perm);
    rt_rows_free(&s->win);
    rt_rows_free(&s->vwin);
    free(s);
}
