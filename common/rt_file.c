/* rt_file.c — see rt_file.h. */
#include "rt_file.h"

#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_time.h"

static rt_status write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return RT_ERR_IO;
        c += w;
        n -= (size_t)w;
    }
    return RT_OK;
}

rt_status rt_atomic_open(rt_atomic_file *f, const char *path, char *err)
{
    f->fd = -1;
    if (snprintf(f->path, sizeof f->path, "%s", path) >= (int)sizeof f->path)
        return rt_err(err, RT_ERR_INVALID, "%s: path too long", path);
    for (int tries = 0; f->fd < 0 && tries < 16; tries++) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
            r = (uint64_t)rt_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)tries;
        if (snprintf(f->tmp, sizeof f->tmp, "%s.tmp-%016llx", path, (unsigned long long)r) >=
            (int)sizeof f->tmp)
            return rt_err(err, RT_ERR_INVALID, "%s: path too long", path);
        f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (f->fd < 0 && errno != EEXIST)
            break;
    }
    if (f->fd < 0)
        return rt_err(err, RT_ERR_IO, "cannot create %s: %s", f->tmp, strerror(errno));
    return RT_OK;
}

void rt_atomic_abort(rt_atomic_file *f)
{
    if (f->fd >= 0) {
        close(f->fd);
        unlink(f->tmp);
    }
    f->fd = -1;
}

rt_status rt_atomic_write(rt_atomic_file *f, const void *p, size_t n, char *err)
{
    if (f->fd < 0)
        return rt_err(err, RT_ERR_BROKEN, "%s: written after an error", f->path);
    if (write_all(f->fd, p, n) != RT_OK) {
        rt_status st = rt_err(err, RT_ERR_IO, "cannot write %s: %s", f->tmp,
                              strerror(errno ? errno : EIO));
        rt_atomic_abort(f);
        return st;
    }
    return RT_OK;
}

rt_status rt_atomic_commit(rt_atomic_file *f, char *err)
{
    if (f->fd < 0)
        return rt_err(err, RT_ERR_BROKEN, "%s: committed after an error", f->path);
    rt_status st = RT_OK;
    if (fsync(f->fd) != 0)
        st = rt_err(err, RT_ERR_IO, "cannot fsync %s: %s", f->tmp, strerror(errno));
    if (close(f->fd) != 0 && st == RT_OK)
        st = rt_err(err, RT_ERR_IO, "cannot close %s: %s", f->tmp, strerror(errno));
    f->fd = -1;
    if (st == RT_OK && rename(f->tmp, f->path) != 0)
        st = rt_err(err, RT_ERR_IO, "cannot rename %s to %s: %s", f->tmp, f->path,
                    strerror(errno));
    if (st != RT_OK) {
        unlink(f->tmp);
        return st;
    }
    /* the rename itself must survive a crash: sync the folder */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", f->path);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return RT_OK;
}

rt_status rt_write_atomic(const char *path, const rt_iov *parts, int nparts, char *err)
{
    rt_atomic_file f;
    rt_status st = rt_atomic_open(&f, path, err);
    for (int i = 0; i < nparts && st == RT_OK; i++)
        st = rt_atomic_write(&f, parts[i].p, parts[i].n, err);
    return st == RT_OK ? rt_atomic_commit(&f, err) : st;
}

rt_status rt_read_file(const char *path, size_t max, char **data, size_t *len, char *err)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rt_err(err, errno == ENOENT ? RT_ERR_NOTFOUND : RT_ERR_IO, "cannot open %s: %s",
                      path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return rt_err(err, RT_ERR_IO, "%s is not a regular file", path);
    }
    if ((uint64_t)sb.st_size > max) {
        close(fd);
        return rt_err(err, RT_ERR_INVALID, "%s is %lld bytes, more than the %zu allowed", path,
                      (long long)sb.st_size, max);
    }
    size_t n = (size_t)sb.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        close(fd);
        return rt_err(err, RT_ERR_NOMEM, "%s: out of memory for %zu bytes", path, n);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (got != n) {
        free(buf);
        return rt_err(err, RT_ERR_IO, "cannot read %s: %s", path,
                      got < n ? "file shrank while reading" : strerror(errno));
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return RT_OK;
}

rt_status rt_mkdirs(const char *path, char *err)
{
    char p[4096];
    if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p)
        return rt_err(err, RT_ERR_INVALID, "%s: path too long", path);
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, 0755) != 0 && errno != EEXIST)
                return rt_err(err, RT_ERR_IO, "cannot create folder %s: %s", p, strerror(errno));
            *s = c;
            if (c == '\0')
                break;
        }
    }
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return rt_err(err, RT_ERR_IO, "%s exists and is not a folder", path);
    return RT_OK;
}

rt_status rt_own_dir_check(const char *path, char *err)
{
    char *real = realpath(path, NULL);
    if (!real)
        return rt_err(err, RT_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat sb;
    rt_status st = RT_OK;
    const uid_t me = geteuid();
    const gid_t mygid = getegid();
    if (stat(real, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        st = rt_err(err, RT_ERR_IO, "%s is not a folder", path);
    } else if (sb.st_uid != me) {
        st = rt_err(err, RT_ERR_AUTH,
                    "the folder %s belongs to uid %u, not to this job (uid %u): a job writes only "
                    "a folder it made or was given (another job may have made this one to swap "
                    "its files); choose a new path, or have its owner chown or remove it",
                    path, (unsigned)sb.st_uid, (unsigned)me);
    } else if ((sb.st_mode & S_IWOTH) || ((sb.st_mode & S_IWGRP) && sb.st_gid != mygid)) {
        st = rt_err(err, RT_ERR_AUTH,
                    "the folder %s can be written by others (mode %04o, group %u): anyone "
                    "could replace what the job writes there; chmod go-w it",
                    path, (unsigned)(sb.st_mode & 07777), (unsigned)sb.st_gid);
    }
    /* every folder above: no one but its owner may rename entries in it,
     * unless it is sticky (then only an entry's owner may) */
    for (char *slash = strrchr(real, '/'); st == RT_OK && slash; slash = strrchr(real, '/')) {
        *slash = '\0';
        const char *up = real[0] ? real : "/";
        if (stat(up, &sb) != 0)
            break;
        const bool others =
            (sb.st_mode & S_IWOTH) || ((sb.st_mode & S_IWGRP) && sb.st_gid != mygid);
        if (others && !(sb.st_mode & S_ISVTX) && sb.st_uid != me)
            st = rt_err(err, RT_ERR_AUTH,
                        "%s (above %s) can be written by others and is not sticky (mode %04o): "
                        "anyone could replace the folder the job writes in; chmod +t or go-w it",
                        up, path, (unsigned)(sb.st_mode & 07777));
        if (!real[0])
            break;
    }
    free(real);
    return st;
}

static int remove_one(const char *path, const struct stat *sb, int type, struct FTW *f)
{
    (void)sb, (void)f;
    if (type == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

void rt_remove_tree(const char *path) { nftw(path, remove_one, 16, FTW_PHYS | FTW_DEPTH); }
