/* rt_data_io.h — where a dataset's bytes come from: a local file, or an
 * object in S3 when the path is an s3:// URI (objstore/rt_s3.h, with the
 * environment's settings and credentials).  Nothing of an object is copied
 * to local disk. */
#ifndef RT_DATA_IO_H
#define RT_DATA_IO_H

#include <stddef.h>
#include <stdint.h>

#include "rt_status.h"

/* [data] cache: a folder where the objects read are kept, as
 * DIR/BUCKET/KEY with their ETag beside them (KEY.etag), fetched again
 * when the object's ETag changed; NULL: none (every read goes to the
 * bucket).  For the process: the trainer sets it from its job. */
void rt_data_set_cache(const char *dir);

/* The whole file or object, at most max bytes (RT_ERR_INVALID past it),
 * NUL-terminated; RT_ERR_NOTFOUND when there is none. */
rt_status rt_data_read_file(const char *path, size_t max, char **data, size_t *len, char *err);

/* Random access: reads at offsets.  An object is read with ranged GETs of
 * at least RT_SRC_READAHEAD bytes, the last kept, so that many small reads
 * in order cost one request per block. */
#define RT_SRC_READAHEAD ((size_t)16 << 20)
typedef struct rt_src rt_src;
rt_status rt_src_open(const char *path, rt_src **out, int64_t *size, char *err);
rt_status rt_src_read_at(rt_src *s, void *buf, size_t n, int64_t off, char *err);
void rt_src_close(rt_src *s);

#endif
