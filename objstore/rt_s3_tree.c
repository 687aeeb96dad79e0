/* rt_s3_tree.c — a local folder copied up under a prefix (rt_s3_put_tree):
 * its files as objects, big ones in parts, the one named `last` after all
 * the others (a dataset's manifest: readers find the shards it names). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
