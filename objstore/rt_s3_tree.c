/* rt_s3_tree.c — a local folder copied up under a prefix (rt_s3_put_tree):
 * its files as objects, big ones in parts, the one named `last` after all
 * the others (a dataset's manifest: readers find the shards it names); and
 * objects copied down (rt_s3_get_file, rt_s3_get_tree) in ranges. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_file.h"
#include "rt_s3.h"

rt_status rt_s3_put_file(rt_s3 *s, const char *path, const char *uri, char *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rt_err(err, errno == ENOENT ? RT_ERR_NOTFOUND : RT_ERR_IO, "cannot open %s: %s",
                      path, strerror(errno));
    rt_s3_upload *u;
    rt_status st = rt_s3_upload_begin(s, uri, &u, err);
    if (st != RT_OK) {
        close(fd);
        return st;
    }
    const size_t cap = (size_t)1 << 20;
    char *buf = malloc(cap);
    if (!buf)
        st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    while (buf) {
        ssize_t n = read(fd, buf, cap);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            st = rt_err(err, RT_ERR_IO, "cannot read %s: %s", path, strerror(errno));
        if (n <= 0)
            break;
        if ((st = rt_s3_upload_write(u, buf, (size_t)n, err)) != RT_OK)
            break;
    }
    close(fd);
    free(buf);
    if (st != RT_OK) {
        rt_s3_upload_abort(u);
        return st;
    }
    return rt_s3_upload_commit(u, err);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Every file of dir (its folders' too), but `last` at the top and the
 * names beginning with '.' (a prep's scratch database). */
static rt_status put_dir(rt_s3 *s, const char *dir, const char *uri, const char *last,
                         int64_t *files, char *err)
{
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, NULL, by_name);
    if (n < 0)
        return rt_err(err, RT_ERR_IO, "cannot list %s: %s", dir, strerror(errno));
    rt_status st = RT_OK;
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        char path[2048], to[RT_S3_URI_MAX];
        struct stat sb;
        if (st != RT_OK || name[0] == '.' || (last && !strcmp(name, last)))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (!rt_s3_uri_join(to, sizeof to, uri, name))
            st = rt_err(err, RT_ERR_INVALID, "%s/%s: the URI is too long", uri, name);
        else if (stat(path, &sb) != 0)
            st = rt_err(err, RT_ERR_IO, "cannot stat %s: %s", path, strerror(errno));
        else if (S_ISDIR(sb.st_mode))
            st = put_dir(s, path, to, NULL, files, err);
        else if (S_ISREG(sb.st_mode) && (st = rt_s3_put_file(s, path, to, err)) == RT_OK)
            ++*files;
    }
    for (int i = 0; i < n; i++)
        free(ents[i]);
    free(ents);
    return st;
}

rt_status rt_s3_put_tree(rt_s3 *s, const char *dir, const char *uri, const char *last,
                         int64_t *files, char *err)
{
    *files = 0;
    rt_status st = put_dir(s, dir, uri, last, files, err);
    if (st != RT_OK || !last)
        return st;
    char path[2048], to[RT_S3_URI_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, last);
    if (!rt_s3_uri_join(to, sizeof to, uri, last))
        return rt_err(err, RT_ERR_INVALID, "%s/%s: the URI is too long", uri, last);
    if ((st = rt_s3_put_file(s, path, to, err)) == RT_OK)
        ++*files;
    return st;
}

rt_status rt_s3_get_file(rt_s3 *s, const char *uri, const char *path, char *err)
{
    int64_t size = 0;
    rt_status st = rt_s3_head(s, uri, &size, err);
    if (st != RT_OK)
        return st;
    char tmp[2100];
    snprintf(tmp, sizeof tmp, "%s.part-%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return rt_err(err, RT_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    const int64_t block = 16 << 20; /* ranged GETs: memory stays at one block */
    for (int64_t off = 0; st == RT_OK && off < size; off += block) {
        char *data = NULL;
        size_t got = 0;
        int64_t n = size - off < block ? size - off : block;
        if ((st = rt_s3_get(s, uri, off, n, &data, &got, NULL, err)) != RT_OK)
            break;
        for (size_t w = 0; st == RT_OK && w < got;) {
            ssize_t k = write(fd, data + w, got - w);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0)
                st = rt_err(err, RT_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
            else
                w += (size_t)k;
        }
        free(data);
    }
    if (close(fd) != 0 && st == RT_OK)
        st = rt_err(err, RT_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    if (st == RT_OK && rename(tmp, path) != 0)
        st = rt_err(err, RT_ERR_IO, "cannot rename %s: %s", tmp, strerror(errno));
    if (st != RT_OK)
        unlink(tmp);
    return st;
}

typedef struct tree_get {
    rt_s3 *s;
    const char *prefix, *dir;
    int64_t files;
    rt_status st;
    char *err;
} tree_get;

/* A key's path below the prefix, as a relative path that stays inside the
 * folder: no empty, "." or ".." component (a bucket's keys are anyone's
 * text). */
static bool safe_rel(const char *rel)
{
    if (!*rel || *rel == '/')
        return false;
    for (const char *p = rel; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        p += n;
        if (*p == '/')
            p++;
        else
            break;
    }
    return rel[strlen(rel) - 1] != '/';
}

static bool get_one(void *user, const char *uri, int64_t size)
{
    (void)size;
    tree_get *t = user;
    const char *rel = uri + strlen(t->prefix);
    char path[2048], dir[2048];
    if (!strcmp(rel, "") || rel[strlen(rel) - 1] == '/')
        return true; /* a "folder" marker some tools write */
    if (!safe_rel(rel)) {
        t->st = rt_err(t->err, RT_ERR_INVALID,
                       "%s: a key that is no path below %s ('.', '..' or an empty part)", uri,
                       t->prefix);
        return false;
    }
    snprintf(path, sizeof path, "%s/%s", t->dir, rel);
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    if ((t->st = rt_mkdirs(dir, t->err)) == RT_OK &&
        (t->st = rt_s3_get_file(t->s, uri, path, t->err)) == RT_OK)
        t->files++;
    return t->st == RT_OK;
}

rt_status rt_s3_get_tree(rt_s3 *s, const char *uri, const char *dir, int64_t *files, char *err)
{
    char prefix[RT_S3_URI_MAX];
    size_t n = strlen(uri);
    snprintf(prefix, sizeof prefix, "%s%s", uri, n > 0 && uri[n - 1] == '/' ? "" : "/");
    tree_get t = {s, prefix, dir, 0, RT_OK, err};
    rt_status st = rt_mkdirs(dir, err);
    if (st == RT_OK)
        st = rt_s3_list(s, prefix, get_one, &t, err);
    *files = t.files;
    return st != RT_OK ? st : t.st;
}
