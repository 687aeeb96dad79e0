/* s3_impl.h — private to objstore/: the client and one signed request
 * (rt_s3.c), for the multipart uploads (rt_s3_upload.c) and the tests. */
#ifndef RT_S3_IMPL_H
#define RT_S3_IMPL_H

#include <curl/curl.h>

#include "rt_buf.h"
#include "rt_s3.h"

struct rt_s3 {
    rt_s3_cfg cfg;
    rt_s3_creds cr;
    CURL *curl; /* one connection, reused */
    char sigv4[160];
    rt_s3_stats st;
};

/* One request: what to send, and what came back. */
typedef struct s3_req {
    const char *method; /* GET, PUT, HEAD, DELETE, POST */
    const char *uri;    /* s3://BUCKET/KEY: the object (errors name it) */
    const char *query;  /* "a=b&c=d", values URI-encoded; NULL: none */
    const void *body;   /* PUT and POST */
    size_t blen;
    const char *ctype; /* the body's Content-Type (NULL: application/octet-stream) */
    int64_t off, len;  /* GET's range: off < 0 none; len < 0 to the end */
    /* the response */
    long status;
    rt_buf resp;    /* the answer's body, NUL-terminated (p NULL when empty) */
    int64_t length; /* Content-Length (-1: none) */
    int64_t total;  /* the object's size from Content-Range (-1: none) */
    char etag[160]; /* ETag, quotes kept */
} s3_req;

/* Send r (retried as rt_s3.h says); RT_OK for a 2xx answer, else an error
 * naming the method, the URI and S3's Code and Message (404:
 * RT_ERR_NOTFOUND, 401/403 and expired tokens: RT_ERR_AUTH).  The caller
 * frees r->resp (s3_req_free). */
rt_status s3_request(rt_s3 *s, s3_req *r, char *err);
void s3_req_free(s3_req *r);

/* libcurl's Signature Version 4 on c for region and service, with cr's
 * key (and session token: the header list grows by it). */
struct curl_slist *s3_sign(CURL *c, const char *sigv4, const rt_s3_creds *cr,
                           struct curl_slist *headers);

/* The text of <tag>...</tag> at or after from (entities decoded) into out;
 * a pointer past the closing tag, or NULL when there is none. */
const char *s3_xml_text(const char *from, const char *tag, char *out, size_t len);

/* A query value URI-encoded: every byte but A-Z a-z 0-9 - _ . ~ as %XX. */
void s3_encode_value(const char *v, char *out, size_t len);

/* One page of a ListObjectsV2 answer: fn for each object (whose key must
 * start with prefix, the listing's), *go false once fn said stop, *more
 * and the next token when there is another page.  RT_ERR_PROTO when the
 * answer is not such a page. */
rt_status s3_list_page(const char *xml, const char *bucket, const char *prefix, rt_s3_list_fn fn,
                       void *user, char *token, size_t tlen, bool *more, bool *go, char *err);

/* Hex SHA-256 of n bytes (65 chars with the NUL). */
void s3_sha256_hex(const void *p, size_t n, char out[65]);

#endif
