/* cli_s3.c — the CLI's paths in S3 (docs/storage.md): what prep and
 * predict read is copied down into a local folder (prep loads it into
 * SQLite anyway), what they write is written there and put up when done;
 * the folder (in TMPDIR) is removed by cli_s3_done, or by rt_tmp's handler
 * if a signal ends the CLI first. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rt_file.h"
#include "rt_tmp.h"

static rt_status stage(cli_s3 *c, const char *uri, char *err)
{
    rt_status st = RT_OK;
    if (!c->s3 && (st = rt_s3_open_env(&c->s3, uri, err)) != RT_OK)
        return st;
    if (c->stage[0])
        return RT_OK;
    const char *tmp = getenv("TMPDIR");
    snprintf(c->stage, sizeof c->stage, "%s/ringtrain-s3-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(c->stage)) {
        c->stage[0] = '\0';
        return rt_err(err, RT_ERR_IO, "cannot make a folder for %s in: %s", uri, strerror(errno));
    }
    c->tmp_slot = rt_tmp_track(c->stage) + 1;
    return RT_OK;
}

/* The last part of a URI's key ("s3://b/raw/" -> "raw"). */
static void base_name(const char *uri, char *out, size_t len)
{
    size_t n = strlen(uri);
    while (n > 5 && uri[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 5 && uri[b - 1] != '/')
        b--;
    snprintf(out, len, "%.*s", (int)(n - b), uri + b);
    if (!out[0] || !strcmp(out, ".") || !strcmp(out, ".."))
        snprintf(out, len, "object");
}

static bool first_only(void *user, const char *uri, int64_t size)
{
    (void)user, (void)uri, (void)size;
    return false;
}

rt_status cli_s3_out_dir(cli_s3 *c, const char *uri, char *local, size_t len, char *err)
{
    char b[64], k[1100];
    rt_status st = rt_s3_uri_parse(uri, b, sizeof b, k, sizeof k, err);
    /* the credentials and the bucket refused before the work, not after */
    if (st != RT_OK || (st = stage(c, uri, err)) != RT_OK ||
        (st = rt_s3_list(c->s3, uri, first_only, NULL, err)) != RT_OK)
        return st;
    snprintf(local, len, "%s/out", c->stage);
    return rt_mkdirs(local, err);
}

rt_status cli_s3_out_file(cli_s3 *c, const char *uri, char *local, size_t len, char *err)
{
    char b[64], k[1100], name[256];
    rt_status st = rt_s3_uri_parse(uri, b, sizeof b, k, sizeof k, err);
    if (st == RT_OK && (!k[0] || k[strlen(k) - 1] == '/'))
        st = rt_err(err, RT_ERR_INVALID, "%s names no object (a key ending in a name)", uri);
    if (st != RT_OK || (st = stage(c, uri, err)) != RT_OK ||
        (st = rt_s3_list(c->s3, uri, first_only, NULL, err)) != RT_OK)
        return st;
    base_name(uri, name, sizeof name);
    snprintf(local, len, "%s/%s", c->stage, name);
    return RT_OK;
}

rt_status cli_s3_fetch(cli_s3 *c, const char *uri, bool as_dir, char *local, size_t len, char *err)
{
    char b[64], k[1100], name[256];
    rt_status st = rt_s3_uri_parse(uri, b, sizeof b, k, sizeof k, err);
    if (st != RT_OK || (st = stage(c, uri, err)) != RT_OK)
        return st;
    base_name(uri, name, sizeof name);
    snprintf(local, len, "%s/in-%d/%s", c->stage, c->fetched++, name);
    int64_t size, files = 0;
    if (k[0] && k[strlen(k) - 1] != '/' && (st = rt_s3_head(c->s3, uri, &size, err)) == RT_OK) {
        char dir[1200]; /* an object: a file of the same name (in a folder of its own) */
        snprintf(dir, sizeof dir, "%s/in-%d", c->stage, c->fetched - 1);
        if ((st = rt_mkdirs(dir, err)) == RT_OK)
            st = rt_s3_get_file(c->s3, uri, local, err);
        if (as_dir)
            snprintf(local, len, "%s", dir);
        return st;
    }
    if (st != RT_OK && st != RT_ERR_NOTFOUND)
        return st;
    /* a prefix: its objects, a folder of the same name */
    if ((st = rt_s3_get_tree(c->s3, uri, local, &files, err)) != RT_OK)
        return st;
    return files > 0
               ? RT_OK
               : rt_err(err, RT_ERR_NOTFOUND, "%s: no such object, and no object under it", uri);
}

rt_status cli_s3_put(cli_s3 *c, const char *path, const char *uri, char *err)
{
    rt_status st = stage(c, uri, err);
    return st == RT_OK ? rt_s3_put_file(c->s3, path, uri, err) : st;
}

void cli_s3_done(cli_s3 *c)
{
    rt_s3_close(c->s3);
    c->s3 = NULL;
    rt_tmp_untrack(c->tmp_slot - 1);
    c->tmp_slot = 0;
    if (c->stage[0])
        rt_remove_tree(c->stage);
    c->stage[0] = '\0';
}
