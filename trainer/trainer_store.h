/* trainer_store.h — private to trainer/: the job's [output] store, a
 * folder or a prefix in S3.  In S3 the trainer writes the files as it does
 * in a folder, into a mirror in the rank's work folder (or TMPDIR): a
 * checkpoint by store_write, a multipart upload fed as the file is written
 * that appears whole, the rest by store_sync after it is written (the
 * history rewritten whole: S3 has no append).  At the start rank 0 fetches last.ckpt,
 * best.ckpt and history.jsonl, when the prefix has them, so a job resumes
 * on any host from the newest complete checkpoint.  (Horovod's Store keeps
 * a remote store's checkpoints the same way: a local run folder synced
 * up.) */
#ifndef RT_TRAINER_STORE_H
#define RT_TRAINER_STORE_H

#include <stdbool.h>

#include "rt_file.h"
#include "rt_s3.h"
#include "rt_status.h"

typedef struct rt_store {
    char dir[1100];          /* where the files are written: the store, or its mirror */
    char uri[RT_S3_URI_MAX]; /* the store in S3; "": a folder */
    rt_s3 *s3;               /* opened by the first sync (a rank's own) */
    bool mirror_made;
} rt_store;

/* A folder: made (rank 0, lead) and checked to be the job's own.  S3: the
 * mirror made, and (lead) the store's files fetched into it. */
rt_status store_open(rt_store *s, const char *store, int rank, bool lead, char *err);
/* name written whole from its pieces: dir/name atomically and, in S3,
 * uri/name in the same pass (each part goes up as soon as it is written;
 * the object appears at the end, whole, or not at all). */
rt_status store_write(rt_store *s, const char *name, const rt_iov *iov, int n, char *err);
/* dir/name up to uri/name (nothing for a folder). */
rt_status store_sync(rt_store *s, const char *name, char *err);
/* Every file under dir/sub up to uri/sub (nothing for a folder). */
rt_status store_sync_dir(rt_store *s, const char *sub, char *err);
/* A local file up to an s3:// URI (predictions = s3://...). */
rt_status store_put(rt_store *s, const char *path, const char *uri, char *err);
/* history.jsonl: its lines of epochs <= upto kept (0: none; a fresh start),
 * or one line appended, then synced (S3: the whole file put again). */
rt_status store_history_cut(rt_store *s, int64_t upto, char *err);
rt_status store_history_append(rt_store *s, const char *line, char *err);
/* The client closed, the mirror removed. */
void store_close(rt_store *s);

#endif
