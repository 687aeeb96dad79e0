/* rt_ckpt.h — training checkpoints: the model spec, the flat parameters,
 * Adam's two moments and step, the batch-norm statistics, where training
 * stands (epochs done, best validation loss) and what the model needs from
 * the data (column names, label transform and maximum).
 *
 *   "RTCKPT1\0", u32 version (1), u32 header length, header (JSON),
 *   u64 raw length, u64 compressed length, zlib(params | m | v | buffers),
 *   u32 CRC32 of everything before it, "RTCKEND\0"
 *
 * Written atomically (temp file, fsync, rename, fsync of the folder); read
 * back only when magic, lengths, CRC and sizes all agree, so a torn or
 * damaged file is reported (naming the file and what is wrong) and never
 * loaded.  Resuming is exact: the shuffles and dropout masks are functions
 * of (seed, epoch, rank, step). */
#ifndef RT_CKPT_H
#define RT_CKPT_H

#include <stdint.h>

#include "rt_file.h"
#include "rt_model.h"

typedef struct rt_ckpt {
    rt_model_spec spec;
    int64_t epoch;        /* epochs completed */
    int64_t step;         /* Adam's step (the model's step counter) */
    int64_t world_size;   /* ranks that trained it (informative) */
    double best_val_loss; /* the monitored value ([train] monitor, val_loss by default) of
                             the best epoch so far (INFINITY when none) */
    char monitor[64];     /* its name ("val_loss" in a checkpoint from before it was kept) */
    int64_t best_epoch;
    double lr_factor;     /* lr_schedule = plateau: the reductions so far (1: none) */
    int64_t plateau_wait; /* and the epochs since its last improvement */
    double plateau_best;  /* its best value (NaN: none) */
    double max_label;
    char label_transform[16];
    char label[64];
    double label_mean, label_std; /* label_transform standardize */
    double label_lo, label_hi;    /* a regression's training targets' range (lo > hi: unknown) */
    char **classes;               /* classification: spec.n_classes names (owned when read;
                                     lent by the trainer when written) */
    int n_cont;
    char (*cont_names)[64]; /* n_cont (categorical names are in spec.cat_names); owned
                               when read, lent by the trainer when written */
    char (*cat_names)[64];  /* read: spec.n_cat names, which spec.cat_names lends (owned) */
    int64_t nparams, nbuffers;
    float *params, *adam_m, *adam_v, *buffers; /* owned */
    /* each categorical column's values in index order (NULL entries: SQL
     * NULL), so that data prepared again is scored with the categories the
     * model learnt; NULL for a checkpoint written without them.  Owned
     * (strdup'ed) when read; the trainer lends its dataset's when writing.
     * The array of spec.n_cat lists is the checkpoint's (NULL: none). */
    char ***values;
    bool values_owned;
} rt_ckpt;

/* Fill c from a model (state copied to host) and the given bookkeeping. */
rt_status rt_ckpt_from_model(rt_ckpt *c, rt_model *m, char *err);
rt_status rt_ckpt_write(const char *path, const rt_ckpt *c, char *err);
/* The bytes rt_ckpt_write writes, in pieces (magic and version, the header
 * JSON, the lengths, the compressed state, the CRC and end mark), for a
 * writer of its own (the store's: a file and an S3 upload in one pass);
 * name is for errors.  rt_ckpt_bytes_free after. */
#define RT_CKPT_PIECES 5
typedef struct rt_ckpt_bytes {
    rt_iov iov[RT_CKPT_PIECES]; /* point into the struct: do not copy it */
    unsigned char head[16], lens[16], tail[12];
    char *header;
    unsigned char *data;
} rt_ckpt_bytes;
rt_status rt_ckpt_encode(const rt_ckpt *c, rt_ckpt_bytes *b, const char *name, char *err);
void rt_ckpt_bytes_free(rt_ckpt_bytes *b);
/* RT_ERR_NOTFOUND when there is no file; RT_ERR_INVALID (a sentence naming
 * the file) when it is damaged. */
rt_status rt_ckpt_read(const char *path, rt_ckpt *c, char *err);
rt_status rt_ckpt_parse(const void *data, size_t len, const char *name, rt_ckpt *c, char *err);
/* Its header alone (the spec, label, classes, columns; no tensors, whose
 * CRC is not checked): what a checkpoint is of, for a file or an object
 * read in part.  RT_ERR_NOTFOUND as rt_ckpt_read. */
rt_status rt_ckpt_read_header(const char *path, rt_ckpt *c, char *err);
/* A job's store (a folder or an S3 prefix): the header of its best.ckpt,
 * else of its last.ckpt — the model its predictions came from — and that
 * file's path; RT_ERR_NOTFOUND naming the store when it has neither. */
rt_status rt_ckpt_find_header(const char *store, char *path, size_t len, rt_ckpt *c, char *err);
void rt_ckpt_free(rt_ckpt *c);
/* Whether c's tensor counts are m's (RT_ERR_CORRUPT naming both): every
 * path that copies a checkpoint's tensors checks this first. */
rt_status rt_ckpt_fits(const rt_ckpt *c, const rt_model *m, char *err);
/* Whether a model built from `spec` can take c's state; else a sentence. */
rt_status rt_ckpt_compatible(const rt_ckpt *c, const rt_model_spec *spec, char *err);
/* Whether a dataset's categorical values are the model's, index by index:
 * a dataset prepared again from other data can have vocabularies of the
 * same sizes that mean other things.  RT_ERR_INVALID naming the column and
 * the first value that differs; RT_OK also for a checkpoint without values
 * (older ones). */
typedef struct rt_dataset rt_dataset;
rt_status rt_ckpt_check_values(const rt_ckpt *c, const rt_dataset *ds, char *err);
/* Load c's state into m (params, moments, step, buffers). */
rt_status rt_ckpt_to_model(const rt_ckpt *c, rt_model *m, char *err);

#endif
