/* rt_file.h — whole-file I/O with the guarantees checkpoints, shards and
 * predictions need: a write is atomic (a temporary file beside the target,
 * written, fsync'ed, renamed over it, the folder fsync'ed) so a reader sees
 * the old file or the new one, never a torn one; a read is bounded. */
#ifndef RT_FILE_H
#define RT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "rt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Write the pieces (in order) as path, atomically: into a new file of a
 * random name beside it (O_EXCL | O_NOFOLLOW: never through a link someone
 * planted), created with mode 0644 less the umask, synced, then renamed over
 * path and the folder synced. */
typedef struct rt_iov {
    const void *p;
    size_t n;
} rt_iov;
rt_status rt_write_atomic(const char *path, const rt_iov *parts, int nparts, char *err);

/* The same, written piece by piece (a file too large to hold in memory):
 * open, write as often as needed, then commit (sync, rename, sync the
 * folder) or abort (the temporary file is removed).  After an error the
 * file is aborted already. */
typedef struct rt_atomic_file {
    int fd;
    char tmp[4096], path[4096];
} rt_atomic_file;
rt_status rt_atomic_open(rt_atomic_file *f, const char *path, char *err);
rt_status rt_atomic_write(rt_atomic_file *f, const void *p, size_t n, char *err);
rt_status rt_atomic_commit(rt_atomic_file *f, char *err);
void rt_atomic_abort(rt_atomic_file *f);

/* Read all of path (at most max bytes, else RT_ERR_INVALID); *data is
 * malloc'ed with a NUL after the *len bytes. */
rt_status rt_read_file(const char *path, size_t max, char **data, size_t *len, char *err);

/* mkdir -p with mode 0755 (existing folders are fine). */
rt_status rt_mkdirs(const char *path, char *err);
/* rm -rf path (symbolic links removed, not followed); what could not be
 * removed stays, silently. */
void rt_remove_tree(const char *path);

/* Whether the folder path is this process's own to write results in (a
 * job's store): owned by its effective uid, writable by nobody else (nor
 * by a group other than its own), and below folders in which nobody else
 * could replace it (each either writable only by its owner, or sticky).
 * RT_ERR_AUTH with what is wrong and what to do when not: another job
 * could have made it first and swap what this one writes. */
rt_status rt_own_dir_check(const char *path, char *err);

#ifdef __cplusplus
}
#endif
#endif
