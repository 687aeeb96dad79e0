/* rt_s3_upload.c — rt_s3.h's uploads: the bytes gathered into parts of
 * part_size, a multipart upload begun at the first full part, each part
 * sent as it fills, CompleteMultipartUpload at commit (the object appears
 * whole, or not at all); AbortMultipartUpload on abort or any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3_impl.h"

struct rt_s3_upload {
    rt_s3 *s;
    char uri[RT_S3_URI_MAX];
    char id[1100]; /* the multipart upload's id ("": none begun yet) */
    char *buf;     /* the part being gathered */
    size_t fill, cap;
    char (*etags)[160]; /* of the parts sent, 1.. */
    int nparts, partcap;
    bool failed;
};

rt_status rt_s3_upload_begin(rt_s3 *s, const char *uri, rt_s3_upload **out, char *err)
{
    *out = NULL;
    char b[64], k[1100];
    rt_status st = rt_s3_uri_parse(uri, b, sizeof b, k, sizeof k, err);
    if (st != RT_OK)
        return st;
    if (!k[0] || k[strlen(k) - 1] == '/')
        return rt_err(err, RT_ERR_INVALID, "%s names no object (a key ending in a name)", uri);
    rt_s3_upload *u = calloc(1, sizeof *u);
    if (!u || !(u->buf = malloc(s->cfg.part_size))) {
        free(u);
        return rt_err(err, RT_ERR_NOMEM, "out of memory for an upload's part");
    }
    u->s = s;
    u->cap = s->cfg.part_size;
    snprintf(u->uri, sizeof u->uri, "%s", uri);
    *out = u;
    return RT_OK;
}

/* Send the gathered bytes as the next part (beginning the upload first). */
static rt_status send_part(rt_s3_upload *u, char *err)
{
    rt_status st;
    if (!u->id[0]) {
        s3_req r = {.method = "POST", .uri = u->uri, .query = "uploads=", .off = -1};
        if ((st = s3_request(u->s, &r, err)) == RT_OK &&
            !s3_xml_text(r.resp.p, "UploadId", u->id, sizeof u->id))
            st = rt_err(err, RT_ERR_PROTO, "POST %s?uploads: S3's answer has no UploadId", u->uri);
        s3_req_free(&r);
        if (st != RT_OK)
            return st;
    }
    if (u->nparts == 10000)
        return rt_err(err, RT_ERR_INVALID,
                      "%s: more than 10000 parts of %zu bytes (S3's limit): a larger part_size",
                      u->uri, u->cap);
    if (u->nparts == u->partcap) {
        int cap = u->partcap ? 2 * u->partcap : 16;
        void *e = realloc(u->etags, (size_t)cap * sizeof *u->etags);
        if (!e)
            return rt_err(err, RT_ERR_NOMEM, "out of memory");
        u->etags = e;
        u->partcap = cap;
    }
    char q[3500], id[3400];
    s3_encode_value(u->id, id, sizeof id);
    snprintf(q, sizeof q, "partNumber=%d&uploadId=%s", u->nparts + 1, id);
    s3_req r = {
        .method = "PUT", .uri = u->uri, .query = q, .body = u->buf, .blen = u->fill, .off = -1};
    if ((st = s3_request(u->s, &r, err)) == RT_OK && !r.etag[0])
        st = rt_err(err, RT_ERR_PROTO, "PUT %s part %d: S3's answer has no ETag", u->uri,
                    u->nparts + 1);
    if (st == RT_OK)
        snprintf(u->etags[u->nparts++], sizeof *u->etags, "%s", r.etag);
    s3_req_free(&r);
    u->fill = 0;
    return st;
}

rt_status rt_s3_upload_write(rt_s3_upload *u, const void *data, size_t len, char *err)
{
    if (u->failed)
        return rt_err(err, RT_ERR_BROKEN, "%s: the upload failed before", u->uri);
    const char *p = data;
    while (len > 0) {
        size_t k = u->cap - u->fill < len ? u->cap - u->fill : len;
        memcpy(u->buf + u->fill, p, k);
        u->fill += k;
        p += k;
        len -= k;
        /* a full part goes when more follows: the last part may be short */
        if (u->fill == u->cap && len > 0) {
            rt_status st = send_part(u, err);
            if (st != RT_OK) {
                u->failed = true;
                return st;
            }
        }
    }
    return RT_OK;
}

static void free_upload(rt_s3_upload *u)
{
    free(u->buf);
    free(u->etags);
    free(u);
}

void rt_s3_upload_abort(rt_s3_upload *u)
{
    if (!u)
        return;
    if (u->id[0]) { /* the parts sent are removed with the upload */
        char q[3500], id[3400], err[RT_ERR_LEN];
        s3_encode_value(u->id, id, sizeof id);
        snprintf(q, sizeof q, "uploadId=%s", id);
        s3_req r = {.method = "DELETE", .uri = u->uri, .query = q, .off = -1};
        if (s3_request(u->s, &r, err) != RT_OK)
            fprintf(stderr, "s3: could not abort the upload of %s: %s\n", u->uri, err);
        s3_req_free(&r);
    }
    free_upload(u);
}

rt_status rt_s3_upload_commit(rt_s3_upload *u, char *err)
{
    rt_status st = RT_OK;
    if (u->failed)
        st = rt_err(err, RT_ERR_BROKEN, "%s: the upload failed before", u->uri);
    else if (!u->id[0]) /* less than one part: one PUT */
        st = rt_s3_put(u->s, u->uri, u->buf, u->fill, err);
    else if (u->fill > 0)
        st = send_part(u, err);
    if (st == RT_OK && u->id[0]) {
        size_t cap = 128 + (size_t)u->nparts * 240, n = 0;
        char *x = malloc(cap);
        if (!x) {
            st = rt_err(err, RT_ERR_NOMEM, "out of memory");
        } else {
            n += (size_t)snprintf(x + n, cap - n, "<CompleteMultipartUpload>");
            for (int i = 0; i < u->nparts; i++)
                n += (size_t)snprintf(x + n, cap - n,
                                      "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>",
                                      i + 1, u->etags[i]);
            n += (size_t)snprintf(x + n, cap - n, "</CompleteMultipartUpload>");
            char q[3500], id[3400];
            s3_encode_value(u->id, id, sizeof id);
            snprintf(q, sizeof q, "uploadId=%s", id);
            s3_req r = {.method = "POST",
                        .uri = u->uri,
                        .query = q,
                        .body = x,
                        .blen = n,
                        .ctype = "application/xml",
                        .off = -1};
            st = s3_request(u->s, &r, err);
            s3_req_free(&r);
            free(x);
        }
    }
    if (st != RT_OK && u->id[0]) {
        u->failed = true;
        rt_s3_upload_abort(u); /* frees u */
        return st;
    }
    free_upload(u);
    return st;
}
