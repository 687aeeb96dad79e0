/* trainer_store.c — see trainer_store.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_file.h"
#include "rt_json.h"
#include "rt_proto.h"
#include "trainer_store.h"

/* The store's files a job resumes from (rank 0 fetches them). */
static const char *const RESUME_FILES[] = {"last.ckpt", "best.ckpt", "history.jsonl"};

static rt_status client(rt_store *s, char *err)
{
    return s->s3 ? RT_OK : rt_s3_open_env(&s->s3, s->uri, err);
}

rt_status store_open(rt_store *s, const char *store, int rank, bool lead, char *err)
{
    memset(s, 0, sizeof *s);
    rt_status st;
    if (!rt_s3_is_uri(store)) {
        snprintf(s->dir, sizeof s->dir, "%s", store);
        /* the store is the job's own: one made first by another job could have
         * its checkpoint swapped (docs/security.md) */
        if (lead &&
            ((st = rt_mkdirs(store, err)) != RT_OK || (st = rt_own_dir_check(store, err)) != RT_OK))
            return st;
        return RT_OK;
    }
    char b[64], k[1100];
    if ((st = rt_s3_uri_parse(store, b, sizeof b, k, sizeof k, err)) != RT_OK)
        return st;
    snprintf(s->uri, sizeof s->uri, "%s", store);
    const char *work = getenv(RT_ENV_WORK_DIR), *tmp = getenv("TMPDIR");
    snprintf(s->dir, sizeof s->dir, "%s/ringtrain-store-%d-XXXXXX",
             work && work[0] ? work
             : tmp && tmp[0] ? tmp
                             : "/tmp",
             rank);
    if (!mkdtemp(s->dir))
        return rt_err(err, RT_ERR_IO, "a folder to mirror %s in: %s", store, strerror(errno));
    s->mirror_made = true;
    for (size_t i = 0; lead && i < sizeof RESUME_FILES / sizeof *RESUME_FILES; i++) {
        char uri[RT_S3_URI_MAX], path[1200], *data = NULL;
        size_t len = 0;
        int64_t size;
        if (!rt_s3_uri_join(uri, sizeof uri, store, RESUME_FILES[i]))
            return rt_err(err, RT_ERR_INVALID, "%s: too long a URI", store);
        snprintf(path, sizeof path, "%s/%s", s->dir, RESUME_FILES[i]);
        if ((st = client(s, err)) != RT_OK)
            return st;
        st = rt_s3_get(s->s3, uri, 0, -1, &data, &len, &size, err);
        if (st == RT_ERR_NOTFOUND)
            continue; /* a new store */
        if (st == RT_OK) {
            rt_iov part = {data, len};
            st = rt_write_atomic(path, &part, 1, err);
        }
        free(data);
        if (st != RT_OK)
            return st;
    }
    return RT_OK;
}

rt_status store_put(rt_store *s, const char *path, const char *uri, char *err)
{
    rt_status st = client(s, err);
    return st == RT_OK ? rt_s3_put_file(s->s3, path, uri, err) : st;
}

rt_status store_sync(rt_store *s, const char *name, char *err)
{
    if (!s->uri[0])
        return RT_OK;
    char path[1300], uri[RT_S3_URI_MAX];
    snprintf(path, sizeof path, "%s/%s", s->dir, name);
    if (!rt_s3_uri_join(uri, sizeof uri, s->uri, name))
        return rt_err(err, RT_ERR_INVALID, "%s/%s: too long a URI", s->uri, name);
    return store_put(s, path, uri, err);
}

/* Each piece in slices: a slice goes to the file and then to the upload,
 * which sends a part whenever it holds one. */
#define WRITE_SLICE (4u << 20)

rt_status store_write(rt_store *s, const char *name, const rt_iov *iov, int n, char *err)
{
    char path[1300], uri[RT_S3_URI_MAX];
    snprintf(path, sizeof path, "%s/%s", s->dir, name);
    if (!s->uri[0])
        return rt_write_atomic(path, iov, n, err);
    if (!rt_s3_uri_join(uri, sizeof uri, s->uri, name))
        return rt_err(err, RT_ERR_INVALID, "%s/%s: too long a URI", s->uri, name);
    rt_atomic_file f;
    rt_s3_upload *u = NULL;
    rt_status st = client(s, err);
    if (st == RT_OK && (st = rt_atomic_open(&f, path, err)) == RT_OK &&
        (st = rt_s3_upload_begin(s->s3, uri, &u, err)) != RT_OK)
        rt_atomic_abort(&f);
    if (st != RT_OK)
        return st;
    for (int i = 0; i < n && st == RT_OK; i++)
        for (size_t off = 0; off < iov[i].n && st == RT_OK; off += WRITE_SLICE) {
            const char *p = (const char *)iov[i].p + off;
            size_t k = iov[i].n - off < WRITE_SLICE ? iov[i].n - off : WRITE_SLICE;
            if ((st = rt_atomic_write(&f, p, k, err)) == RT_OK)
                st = rt_s3_upload_write(u, p, k, err);
        }
    if (st == RT_OK && (st = rt_atomic_commit(&f, err)) == RT_OK)
        return rt_s3_upload_commit(u, err); /* visible now, whole */
    rt_atomic_abort(&f);                    /* nothing when the file was aborted already */
    rt_s3_upload_abort(u);
    return st;
}

rt_status store_history_cut(rt_store *s, int64_t upto, char *err)
{
    char path[1300];
    snprintf(path, sizeof path, "%s/history.jsonl", s->dir);
    char *text = NULL;
    size_t len = 0;
    rt_status st = rt_read_file(path, 1u << 30, &text, &len, err);
    if (st == RT_ERR_NOTFOUND)
        return RT_OK;
    if (st != RT_OK)
        return st;
    char *out = malloc(len + 1);
    size_t ol = 0;
    for (char *line = text; out && line < text + len;) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        size_t ll = nl ? (size_t)(nl - line) : (size_t)(text + len - line);
        rt_json *j = NULL;
        char jerr[RT_ERR_LEN];
        int64_t e = -1;
        if (rt_json_parse(line, ll, &j, jerr) == RT_OK && rt_json_get_int(j, "epoch", &e) &&
            e <= upto) {
            memcpy(out + ol, line, ll);
            ol += ll;
            out[ol++] = '\n';
        }
        rt_json_free(j);
        line += ll + 1;
    }
    free(text);
    if (!out)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    rt_iov iov = {out, ol};
    st = rt_write_atomic(path, &iov, 1, err);
    free(out);
    return st == RT_OK ? store_sync(s, "history.jsonl", err) : st;
}

rt_status store_history_append(rt_store *s, const char *line, char *err)
{
    char path[1300];
    snprintf(path, sizeof path, "%s/history.jsonl", s->dir);
    FILE *f = fopen(path, "a");
    if (!f)
        return rt_err(err, RT_ERR_IO, "cannot append to %s", path);
    bool ok = fprintf(f, "%s\n", line) > 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (fclose(f) != 0 || !ok)
        return rt_err(err, RT_ERR_IO, "cannot write %s", path);
    return store_sync(s, "history.jsonl", err);
}

rt_status store_sync_dir(rt_store *s, const char *sub, char *err)
{
    if (!s->uri[0])
        return RT_OK;
    char dir[1300], uri[RT_S3_URI_MAX];
    int64_t files = 0;
    snprintf(dir, sizeof dir, "%s/%s", s->dir, sub);
    if (!rt_s3_uri_join(uri, sizeof uri, s->uri, sub))
        return rt_err(err, RT_ERR_INVALID, "%s/%s: too long a URI", s->uri, sub);
    rt_status st = client(s, err);
    return st == RT_OK ? rt_s3_put_tree(s->s3, dir, uri, NULL, &files, err) : st;
}

void store_close(rt_store *s)
{
    rt_s3_close(s->s3);
    s->s3 = NULL;
    if (s->mirror_made)
        rt_remove_tree(s->dir);
    s->mirror_made = false;
}
