/* rt_s3.h — datasets, stores and predictions in S3-compatible object
 * storage (AWS S3, MinIO, Ceph RGW): s3://BUCKET/KEY URIs, settings and
 * credentials the way the AWS tools take them, and the requests ringtrain
 * makes — ranged GETs, PUTs, HEAD, DELETE, ListObjectsV2 and multipart
 * uploads that become visible only when complete (docs/storage.md).
 *
 * Requests go through libcurl, which signs them (CURLOPT_AWS_SIGV4: AWS
 * Signature Version 4, checked against AWS's published vectors in
 * tests/test_s3.c); the body's SHA-256 is sent as x-amz-content-sha256.
 * TLS is verified (the system's CAs, or ca_file).  A request is retried
 * with exponential backoff and full jitter on a connection failure, a
 * timeout, 5xx, 429 and S3's throttling codes, at most max_attempts times
 * in all (AWS's standard retry mode: 3); every error names the URI and
 * what S3 said (its Code and Message), never a credential.
 *
 * A client is one connection (reused between requests) and is not
 * thread-safe: a thread takes its own. */
#ifndef RT_S3_H
#define RT_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_status.h"

#define RT_S3_URI_MAX 1100
#define RT_S3_PART_MIN ((size_t)5 << 20) /* S3's smallest part but the last */

typedef enum rt_s3_addressing {
    RT_S3_ADDR_AUTO = 0, /* virtual-hosted on AWS, path-style on another endpoint */
    RT_S3_ADDR_PATH = 1,
    RT_S3_ADDR_VIRTUAL = 2,
} rt_s3_addressing;

/* Where the objects are and how to reach them: an [s3] section (agent.conf,
 * cli.conf, a job file) over the environment (rt_s3_cfg_env). */
typedef struct rt_s3_cfg {
    char endpoint[512]; /* scheme://host[:port]; empty: AWS's for the region */
    char region[64];    /* the signing region (us-east-1 when none is set) */
    rt_s3_addressing addressing;
    char ca_file[1024]; /* PEM bundle to verify the server with; empty: the system's */
    char profile[128];  /* of the shared credentials file; empty: "default" */
    int max_attempts;   /* tries of a request in all (>= 1) */
    double timeout_s;   /* one attempt's bound on silence: no byte for this long */
    size_t part_size;   /* multipart uploads' part (>= RT_S3_PART_MIN) */
} rt_s3_cfg;

typedef struct rt_s3_creds {
    char key_id[256];
    char secret[256];
    char token[4096]; /* a session token (temporary credentials), or empty */
} rt_s3_creds;

/* Defaults, then the AWS tools' variables: AWS_ENDPOINT_URL (and
 * AWS_ENDPOINT_URL_S3, which wins), AWS_REGION (else AWS_DEFAULT_REGION),
 * AWS_CA_BUNDLE, AWS_PROFILE, AWS_MAX_ATTEMPTS; and RINGTRAIN_S3_ADDRESSING
 * (auto, path, virtual: an [s3] section's addressing). */
void rt_s3_cfg_env(rt_s3_cfg *c);

/* The standard chain: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
 * AWS_SESSION_TOKEN, else the profile's entries in the shared credentials
 * file (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials).
 * RT_ERR_AUTH naming where it looked when there are none. */
rt_status rt_s3_creds_load(const rt_s3_cfg *c, rt_s3_creds *cr, char *err);
/* Wipe credentials from memory. */
void rt_s3_creds_clear(rt_s3_creds *cr);

/* Whether s names an object store location (starts with s3://). */
bool rt_s3_is_uri(const char *s);
/* s3://BUCKET[/KEY]: the bucket (a valid S3 bucket name) and the key
 * (possibly empty); RT_ERR_INVALID saying what is wrong. */
rt_status rt_s3_uri_parse(const char *uri, char *bucket, size_t blen, char *key, size_t klen,
                          char *err);
/* uri + "/" + name, without a doubled slash; false when it does not fit. */
bool rt_s3_uri_join(char *out, size_t len, const char *uri, const char *name);

typedef struct rt_s3 rt_s3;

rt_status rt_s3_open(rt_s3 **out, const rt_s3_cfg *c, const rt_s3_creds *cr, char *err);
/* A client with the environment's settings and credentials (rt_s3_cfg_env,
 * rt_s3_creds_load); uri names what it is for in an error. */
rt_status rt_s3_open_env(rt_s3 **out, const char *uri, char *err);
void rt_s3_close(rt_s3 *s);

/* The object's bytes [off, off + len) (len < 0: to its end) into a new
 * buffer (*data, freed by the caller; one NUL after the *got bytes), and
 * the object's size when total is not NULL.  RT_ERR_NOTFOUND when there is
 * no such object; fewer bytes than len there is RT_ERR_CORRUPT. */
rt_status rt_s3_get(rt_s3 *s, const char *uri, int64_t off, int64_t len, char **data, size_t *got,
                    int64_t *total, char *err);
/* The object's first max bytes, or all of it when it is smaller, and its
 * size: one GET (a reader's first block). */
rt_status rt_s3_get_first(rt_s3 *s, const char *uri, size_t max, char **data, size_t *got,
                          int64_t *total, char *err);
/* The object's size; RT_ERR_NOTFOUND when there is none. */
rt_status rt_s3_head(rt_s3 *s, const char *uri, int64_t *size, char *err);
/* The same, and its ETag (quotes kept; "" when the server gave none). */
rt_status rt_s3_head_etag(rt_s3 *s, const char *uri, int64_t *size, char *etag, size_t len,
                          char *err);
/* One PUT of len bytes (up to 5 GiB: S3's limit for one request). */
rt_status rt_s3_put(rt_s3 *s, const char *uri, const void *data, size_t len, char *err);
/* Remove the object (none there is not an error, as in S3). */
rt_status rt_s3_delete(rt_s3 *s, const char *uri, char *err);

/* Each object under the prefix (a URI; "s3://b/dir/" lists dir's tree),
 * in key order, as its full URI and size; fn returns false to stop. */
typedef bool (*rt_s3_list_fn)(void *user, const char *uri, int64_t size);
rt_status rt_s3_list(rt_s3 *s, const char *prefix, rt_s3_list_fn fn, void *user, char *err);

/* An object written in parts as it is produced (a multipart upload, begun
 * at the first full part), visible only after commit: S3's
 * CompleteMultipartUpload is atomic, as rename is on a filesystem.  An
 * object of less than one part is one PUT at commit.  Abort (or a failed
 * write or commit) aborts the upload on the server: nothing is left; a
 * process killed between begin and commit leaves its parts until the
 * bucket's lifecycle rule for incomplete uploads removes them
 * (docs/storage.md). */
typedef struct rt_s3_upload rt_s3_upload;
rt_status rt_s3_upload_begin(rt_s3 *s, const char *uri, rt_s3_upload **out, char *err);
rt_status rt_s3_upload_write(rt_s3_upload *u, const void *data, size_t len, char *err);
/* Makes the object visible and frees u, whatever the outcome. */
rt_status rt_s3_upload_commit(rt_s3_upload *u, char *err);
void rt_s3_upload_abort(rt_s3_upload *u);

/* A local file as the object uri (in parts when big; visible when whole). */
rt_status rt_s3_put_file(rt_s3 *s, const char *path, const char *uri, char *err);
/* Every file under dir as the object of the same relative name under uri,
 * the file named last (when not NULL) after all the others; names
 * beginning with '.' are skipped.  *files: how many went up. */
rt_status rt_s3_put_tree(rt_s3 *s, const char *dir, const char *uri, const char *last,
                         int64_t *files, char *err);

/* The object into a new file at path (written beside it, then renamed;
 * ranged GETs of 16 MiB: memory stays at one). */
rt_status rt_s3_get_file(rt_s3 *s, const char *uri, const char *path, char *err);
/* Every object under the prefix uri (a "folder": uri/...) into dir at its
 * path below the prefix; a key that is no such path ('..', '.', an empty
 * part) is refused.  *files: how many came down. */
rt_status rt_s3_get_tree(rt_s3 *s, const char *uri, const char *dir, int64_t *files, char *err);

/* Requests made since open (for the docs' costs and the tests). */
typedef struct rt_s3_stats {
    int64_t requests, retries, bytes_in, bytes_out;
} rt_s3_stats;
void rt_s3_get_stats(const rt_s3 *s, rt_s3_stats *st);

#endif
