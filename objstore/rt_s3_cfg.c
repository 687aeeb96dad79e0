/* rt_s3_cfg.c — the settings, credentials and URIs of rt_s3.h, taken the
 * way the AWS CLI and SDKs take them. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>
#include <openssl/crypto.h>

#include "rt_s3.h"

void rt_s3_cfg_env(rt_s3_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->max_attempts = 3;
    c->timeout_s = 60;
    c->part_size = (size_t)16 << 20;
    const char *v;
    if ((v = getenv("AWS_ENDPOINT_URL_S3")) && *v)
        snprintf(c->endpoint, sizeof c->endpoint, "%s", v);
    else if ((v = getenv("AWS_ENDPOINT_URL")) && *v)
        snprintf(c->endpoint, sizeof c->endpoint, "%s", v);
    if (((v = getenv("AWS_REGION")) && *v) || ((v = getenv("AWS_DEFAULT_REGION")) && *v))
        snprintf(c->region, sizeof c->region, "%s", v);
    if ((v = getenv("AWS_CA_BUNDLE")) && *v)
        snprintf(c->ca_file, sizeof c->ca_file, "%s", v);
    if ((v = getenv("AWS_PROFILE")) && *v)
        snprintf(c->profile, sizeof c->profile, "%s", v);
    if ((v = getenv("AWS_MAX_ATTEMPTS")) && atoi(v) >= 1 && atoi(v) <= 20)
        c->max_attempts = atoi(v);
    if ((v = getenv("RINGTRAIN_S3_ADDRESSING")) && *v) /* [s3] addressing, when given */
        c->addressing = !strcmp(v, "path")      ? RT_S3_ADDR_PATH
                        : !strcmp(v, "virtual") ? RT_S3_ADDR_VIRTUAL
                                                : RT_S3_ADDR_AUTO;
}

void rt_s3_creds_clear(rt_s3_creds *cr) { OPENSSL_cleanse(cr, sizeof *cr); }

typedef struct file_ctx {
    const char *profile;
    rt_s3_creds *cr;
    bool seen; /* the profile's section */
} file_ctx;

static int on_entry(void *user, const char *section, const char *name, const char *value)
{
    file_ctx *f = user;
    if (strcmp(section, f->profile) != 0)
        return 1;
    f->seen = true;
    if (!strcmp(name, "aws_access_key_id"))
        snprintf(f->cr->key_id, sizeof f->cr->key_id, "%s", value);
    else if (!strcmp(name, "aws_secret_access_key"))
        snprintf(f->cr->secret, sizeof f->cr->secret, "%s", value);
    else if (!strcmp(name, "aws_session_token"))
        snprintf(f->cr->token, sizeof f->cr->token, "%s", value);
    return 1;
}

rt_status rt_s3_creds_load(const rt_s3_cfg *c, rt_s3_creds *cr, char *err)
{
    memset(cr, 0, sizeof *cr);
    const char *id = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
    if (id && *id && secret && *secret) {
        const char *token = getenv("AWS_SESSION_TOKEN");
        snprintf(cr->key_id, sizeof cr->key_id, "%s", id);
        snprintf(cr->secret, sizeof cr->secret, "%s", secret);
        snprintf(cr->token, sizeof cr->token, "%s", token ? token : "");
        return RT_OK;
    }
    char path[1200];
    const char *file = getenv("AWS_SHARED_CREDENTIALS_FILE"), *home = getenv("HOME");
    if (file && *file)
        snprintf(path, sizeof path, "%s", file);
    else
        snprintf(path, sizeof path, "%s/.aws/credentials", home && *home ? home : "");
    const char *profile = c->profile[0] ? c->profile : "default";
    file_ctx f = {profile, cr, false};
    FILE *fp = fopen(path, "r");
    int line = fp ? ini_parse_file(fp, on_entry, &f) : 0;
    if (fp)
        fclose(fp);
    if (line > 0) {
        rt_s3_creds_clear(cr);
        return rt_err(err, RT_ERR_INVALID, "%s:%d: not a credentials file's line", path, line);
    }
    if (cr->key_id[0] && cr->secret[0])
        return RT_OK;
    rt_s3_creds_clear(cr);
    if (f.seen)
        return rt_err(err, RT_ERR_AUTH,
                      "profile %s of %s has no aws_access_key_id and aws_secret_access_key",
                      profile, path);
    return rt_err(err, RT_ERR_AUTH,
                  "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
                  "give profile %s in %s",
                  profile, path);
}

bool rt_s3_is_uri(const char *s) { return s && !strncmp(s, "s3://", 5); }

/* S3's bucket naming rules: 3 to 63 of a-z 0-9 . -, a letter or digit at
 * both ends (dots only with path-style addressing, which we allow). */
static bool bucket_ok(const char *b, size_t n)
{
    if (n < 3 || n > 63 || !isalnum((unsigned char)b[0]) || !isalnum((unsigned char)b[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)b[i]) || isdigit((unsigned char)b[i]) || b[i] == '-' ||
              b[i] == '.'))
            return false;
    return true;
}

rt_status rt_s3_uri_parse(const char *uri, char *bucket, size_t blen, char *key, size_t klen,
                          char *err)
{
    if (!rt_s3_is_uri(uri))
        return rt_err(err, RT_ERR_INVALID, "%s is not an s3://BUCKET/KEY URI", uri);
    const char *b = uri + 5, *slash = strchr(b, '/');
    size_t n = slash ? (size_t)(slash - b) : strlen(b);
    if (!bucket_ok(b, n))
        return rt_err(err, RT_ERR_INVALID,
                      "%s: '%.*s' is not a bucket name (3 to 63 of a-z, 0-9, '.' and '-', a "
                      "letter or digit first and last)",
                      uri, (int)(n > 80 ? 80 : n), b);
    const char *k = slash ? slash + 1 : "";
    if (n + 1 > blen || strlen(k) + 1 > klen || strlen(k) > 1024)
        return rt_err(err, RT_ERR_INVALID, "%s is too long (S3's keys: 1024 bytes)", uri);
    for (const char *p = k; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return rt_err(err, RT_ERR_INVALID, "%s: a key with a control character", uri);
    memcpy(bucket, b, n);
    bucket[n] = '\0';
    memcpy(key, k, strlen(k) + 1);
    return RT_OK;
}

bool rt_s3_uri_join(char *out, size_t len, const char *uri, const char *name)
{
    size_t n = strlen(uri);
    const bool slash = n > 0 && uri[n - 1] == '/';
    while (*name == '/')
        name++;
    int w = snprintf(out, len, "%s%s%s", uri, slash ? "" : "/", name);
    return w >= 0 && (size_t)w < len;
}
