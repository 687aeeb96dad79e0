/* rt_data_io.c — see rt_data_io.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_data_io.h"
#include "rt_file.h"
#include "rt_s3.h"

static char *g_cache; /* [data] cache */

void rt_data_set_cache(const char *dir)
{
    free(g_cache);
    g_cache = dir && dir[0] ? strdup(dir) : NULL;
}

/* With a cache: the object's copy there, fetched when missing or when its
 * ETag changed; *local its path.  false: no cache (read the bucket). */
static bool cached(const char *uri, char *local, size_t len, rt_status *st, char *err)
{
    if (!g_cache)
        return false;
    char b[64], k[1100], etag[160], tagpath[1400], *old = NULL;
    size_t olen = 0;
    int64_t size = 0;
    rt_s3 *s = NULL;
    if ((*st = rt_s3_uri_parse(uri, b, sizeof b, k, sizeof k, err)) != RT_OK)
        return true;
    if (strstr(k, "..") || !k[0] || k[strlen(k) - 1] == '/') {
        *st = rt_err(err, RT_ERR_INVALID, "%s: not a key to keep in [data] cache", uri);
        return true;
    }
    snprintf(local, len, "%s/%s/%s", g_cache, b, k);
    snprintf(tagpath, sizeof tagpath, "%s.etag", local);
    if ((*st = rt_s3_open_env(&s, uri, err)) == RT_OK)
        *st = rt_s3_head_etag(s, uri, &size, etag, sizeof etag, err);
    struct stat sb;
    const bool fresh =
        *st == RT_OK && etag[0] && stat(local, &sb) == 0 && sb.st_size == (off_t)size &&
        rt_read_file(tagpath, 4096, &old, &olen, err) == RT_OK && strcmp(old, etag) == 0;
    free(old);
    if (*st == RT_OK && !fresh) { /* fetched into the cache, its ETag beside it */
        char dir[1400];
        snprintf(dir, sizeof dir, "%s", local);
        *strrchr(dir, '/') = '\0';
        rt_iov tag = {etag, strlen(etag)};
        if ((*st = rt_mkdirs(dir, err)) == RT_OK &&
            (*st = rt_s3_get_file(s, uri, local, err)) == RT_OK && etag[0])
            *st = rt_write_atomic(tagpath, &tag, 1, err);
    }
    rt_s3_close(s);
    return true;
}

rt_status rt_data_read_file(const char *path, size_t max, char **data, size_t *len, char *err)
{
    char local[1300];
    rt_status cst;
    if (rt_s3_is_uri(path) && cached(path, local, sizeof local, &cst, err))
        return cst == RT_OK ? rt_read_file(local, max, data, len, err) : cst;
    if (!rt_s3_is_uri(path))
        return rt_read_file(path, max, data, len, err);
    *data = NULL;
    *len = 0;
    rt_s3 *s;
    rt_status st = rt_s3_open_env(&s, path, err);
    if (st != RT_OK)
        return st;
    st = rt_s3_get(s, path, 0, -1, data, len, NULL, err); /* one GET: an error has S3's reason */
    rt_s3_close(s);
    if (st == RT_OK && *len > max) {
        free(*data);
        *data = NULL;
        return rt_err(err, RT_ERR_INVALID, "%s: %zu bytes, more than the %zu it may have", path,
                      *len, max);
    }
    return st;
}

struct rt_src {
    int fd;    /* a local file, or -1 */
    rt_s3 *s3; /* an object */
    char uri[RT_S3_URI_MAX];
    int64_t size;
    char *block; /* the last range read */
    int64_t boff;
    size_t blen;
};

rt_status rt_src_open(const char *path, rt_src **out, int64_t *size, char *err)
{
    *out = NULL;
    rt_src *s = calloc(1, sizeof *s);
    if (!s)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    s->fd = -1;
    rt_status st = RT_OK;
    char local[1300];
    if (rt_s3_is_uri(path) && cached(path, local, sizeof local, &st, err)) {
        if (st != RT_OK) {
            rt_src_close(s);
            return st;
        }
        path = local; /* the copy in [data] cache, read as a file */
    }
    if (rt_s3_is_uri(path)) {
        snprintf(s->uri, sizeof s->uri, "%s", path);
        /* the first block, and the object's size from its Content-Range */
        if ((st = rt_s3_open_env(&s->s3, path, err)) == RT_OK)
            st = rt_s3_get_first(s->s3, path, RT_SRC_READAHEAD, &s->block, &s->blen, &s->size, err);
    } else {
        struct stat sb;
        s->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (s->fd < 0)
            st = rt_err(err, errno == ENOENT ? RT_ERR_NOTFOUND : RT_ERR_IO, "cannot open %s: %s",
                        path, strerror(errno));
        else if (fstat(s->fd, &sb) != 0 || !S_ISREG(sb.st_mode))
            st = rt_err(err, RT_ERR_IO, "%s is not a regular file", path);
        else
            s->size = (int64_t)sb.st_size;
    }
    if (st != RT_OK) {
        rt_src_close(s);
        return st;
    }
    *size = s->size;
    *out = s;
    return RT_OK;
}

rt_status rt_src_read_at(rt_src *s, void *buf, size_t n, int64_t off, char *err)
{
    if (off < 0 || off > s->size || (int64_t)n > s->size - off)
        return rt_err(err, RT_ERR_INVALID, "%s: %zu bytes at %lld, past its end (%lld bytes)",
                      s->s3 ? s->uri : "a file", n, (long long)off, (long long)s->size);
    unsigned char *p = buf;
    if (!s->s3) {
        while (n > 0) {
            ssize_t r = pread(s->fd, p, n, (off_t)off);
            if (r <= 0)
                return rt_err(err, RT_ERR_IO, "read: %s", r < 0 ? strerror(errno) : "cut short");
            p += r;
            n -= (size_t)r;
            off += r;
        }
        return RT_OK;
    }
    if (n == 0)
        return RT_OK;
    if (off < s->boff || off + (int64_t)n > s->boff + (int64_t)s->blen) {
        size_t want = n > RT_SRC_READAHEAD ? n : RT_SRC_READAHEAD;
        if ((int64_t)want > s->size - off)
            want = (size_t)(s->size - off);
        free(s->block);
        s->block = NULL;
        s->blen = 0;
        rt_status st = rt_s3_get(s->s3, s->uri, off, (int64_t)want, &s->block, &s->blen, NULL, err);
        if (st != RT_OK)
            return st;
        s->boff = off;
    }
    memcpy(p, s->block + (off - s->boff), n);
    return RT_OK;
}

void rt_src_close(rt_src *s)
{
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    rt_s3_close(s->s3);
    free(s->block);
    free(s);
}
