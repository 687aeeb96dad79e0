/* coord_seal.c — a job's environment values sealed in the state database.
 *
 * A job's "env" carries what its submitter would not show anyone: `exec -x
 * SECRET=...` values and, for a job whose data or store is in S3, the
 * submitter's S3 credentials (issue 46: "never in ... the stored job text").
 * The coordinator keeps them in memory as submitted; in the jobs table each
 * value is sealed with AES-256-GCM under the coordinator's state key
 * (`state_key_file`, 32 random bytes made at the first start, 0600), the
 * value's job id and name as associated data, so a sealed value copied to
 * another job or name does not open.  A copy of state.db (a backup, a dump
 * sent with a bug report) holds the names and no value; the key is what
 * opens them, kept apart from the database where an admin puts it.
 *
 * Sealed:  "rtseal1:" hex(nonce[12] | ciphertext | tag[16]).
 * A value without the prefix is one stored before sealing (schema < 8):
 * cseal_migrate seals those once. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coord.h"
#include "rt_hex.h"
#include "rt_log.h"
#include "rt_proto.h"

#define SEAL_PREFIX "rtseal1:"
#define SEAL_NONCE 12
#define SEAL_TAG 16
#define SEAL_MAX_VALUE ((size_t)64 << 20) /* a submission is far smaller */

/* Made once, 0600, O_EXCL: two coordinators starting on one folder
 * cannot each write a different key. */
static rt_status create_key(const char *path, char *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno == EEXIST ? RT_OK
                               : rt_err(err, RT_ERR_IO, "cannot create state key %s: %m", path);
    uint8_t key[32];
    char hex[RT_TOKEN_HEX + 2];
    rt_random_bytes(key, sizeof key);
    rt_hex_encode(key, sizeof key, hex);
    OPENSSL_cleanse(key, sizeof key);
    strcat(hex, "\n");
    size_t n = strlen(hex);
    bool ok = write(fd, hex, n) == (ssize_t)n && fsync(fd) == 0;
    OPENSSL_cleanse(hex, sizeof hex);
    if (close(fd) != 0 || !ok) {
        unlink(path);
        return rt_err(err, RT_ERR_IO, "cannot write state key %s: %m", path);
    }
    RT_INFO("coord",
            "made the state key %s (it opens the job environments stored in the state "
            "database: keep it, and keep it apart from copies of the database)",
            path);
    return RT_OK;
}

rt_status cseal_load(coord *co, const char *path, char *err)
{
    struct stat st;
    rt_status s = RT_OK;
    if (stat(path, &st) != 0 && errno == ENOENT)
        s = create_key(path, err);
    char hex[RT_TOKEN_HEX + 1];
    if (s == RT_OK)
        s = rt_token_load(path, hex, err);
    if (s == RT_OK && rt_hex_decode(hex, co->seal_key, sizeof co->seal_key) != RT_OK)
        s = rt_err(err, RT_ERR_INVALID, "%s is not a key in hex", path);
    OPENSSL_cleanse(hex, sizeof hex);
    if (s != RT_OK) {
        rt_err_prefix(err, "[coordinator] state_key_file (the key of the job environments "
                           "stored in the state database)");
        return s;
    }
    return RT_OK;
}

static void aad_of(char *aad, size_t n, int64_t job, const char *name)
{
    snprintf(aad, n, "ringtrain env %lld %s", (long long)job, name);
}

/* GCM over in[0..n) with AAD; enc: out gets ciphertext and tag after it. */
static bool gcm(const coord *co, bool enc, const uint8_t nonce[SEAL_NONCE], const char *aad,
                const uint8_t *in, size_t n, uint8_t *out, uint8_t tag[SEAL_TAG])
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int len = 0;
    bool ok = c && EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) == 1 &&
              EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, SEAL_NONCE, NULL) == 1 &&
              EVP_CipherInit_ex(c, NULL, NULL, co->seal_key, nonce, enc) == 1 &&
              EVP_CipherUpdate(c, NULL, &len, (const uint8_t *)aad, (int)strlen(aad)) == 1 &&
              (n == 0 || EVP_CipherUpdate(c, out, &len, in, (int)n) == 1) &&
              (enc || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, SEAL_TAG, tag) == 1) &&
              EVP_CipherFinal_ex(c, out + n, &len) == 1 &&
              (!enc || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, SEAL_TAG, tag) == 1);
    EVP_CIPHER_CTX_free(c);
    return ok;
}

/* The sealed text of one value (malloc'd), NULL when out of memory. */
static char *seal_value(const coord *co, int64_t job, const char *name, const char *v)
{
    size_t n = strlen(v);
    size_t raw = SEAL_NONCE + n + SEAL_TAG;
    uint8_t *buf = malloc(raw);
    char *out = malloc(sizeof SEAL_PREFIX + 2 * raw);
    char aad[256];
    aad_of(aad, sizeof aad, job, name);
    bool ok = buf && out;
    if (ok) {
        rt_random_bytes(buf, SEAL_NONCE);
        ok = gcm(co, true, buf, aad, (const uint8_t *)v, n, buf + SEAL_NONCE, buf + SEAL_NONCE + n);
    }
    if (ok) {
        memcpy(out, SEAL_PREFIX, sizeof SEAL_PREFIX);
        rt_hex_encode(buf, raw, out + sizeof SEAL_PREFIX - 1);
    }
    if (buf)
        OPENSSL_cleanse(buf, raw);
    free(buf);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

/* The plain value (malloc'd) of a sealed one; NULL if it does not open. */
static char *open_value(const coord *co, int64_t job, const char *name, const char *s)
{
    const char *hex = s + strlen(SEAL_PREFIX);
    size_t h = strlen(hex);
    if (h % 2 || h / 2 < SEAL_NONCE + SEAL_TAG || h / 2 > SEAL_MAX_VALUE)
        return NULL;
    size_t raw = h / 2, n = raw - SEAL_NONCE - SEAL_TAG;
    uint8_t *buf = malloc(raw);
    char *out = malloc(n + 1);
    char aad[256];
    aad_of(aad, sizeof aad, job, name);
    bool ok = buf && out && rt_hex_decode(hex, buf, raw) == RT_OK &&
              gcm(co, false, buf, aad, buf + SEAL_NONCE, n, (uint8_t *)out, buf + SEAL_NONCE + n) &&
              memchr(out, '\0', n) == NULL;
    free(buf);
    if (!ok) {
        if (out)
            OPENSSL_cleanse(out, n);
        free(out);
        return NULL;
    }
    out[n] = '\0';
    return out;
}

static bool is_sealed(const char *v) { return v && !strncmp(v, SEAL_PREFIX, strlen(SEAL_PREFIX)); }

/* The spec with its top-level "env" values mapped (seal, or open);
 * *unopened counts the values that would not open. */
static char *map_env(const coord *co, int64_t job, const char *spec, bool seal, int *unopened,
                     char *err)
{
    if (!strstr(spec, "\"" RT_F_ENV "\"")) /* nothing to map: most jobs */
        return strdup(spec);
    rt_json *d = NULL;
    if (rt_json_parse(spec, strlen(spec), &d, err) != RT_OK)
        return NULL;
    const rt_json *env = rt_json_get(d, RT_F_ENV);
    if (!env || rt_json_type_of(env) != RT_JSON_OBJECT || rt_json_len(env) == 0) {
        rt_json_free(d);
        return strdup(spec);
    }
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    for (size_t i = 0; i < rt_json_len(d); i++) {
        const char *k = rt_json_key_at(d, i);
        const rt_json *v = rt_json_value_at(d, i);
        rt_jw_key(&w, k);
        if (v != env) {
            rt_jw_value(&w, v);
            continue;
        }
        rt_jw_obj(&w);
        for (size_t e = 0; e < rt_json_len(env); e++) {
            const char *name = rt_json_key_at(env, e);
            const char *val = rt_json_str(rt_json_value_at(env, e), "");
            char *m = NULL;
            if (seal && !(m = is_sealed(val) ? strdup(val) : seal_value(co, job, name, val)))
                w.failed = true; /* never the value in clear instead */
            else if (!seal && is_sealed(val) && !(m = open_value(co, job, name, val)))
                (*unopened)++;
            rt_jw_key(&w, name);
            rt_jw_str(&w, m ? m : val);
            if (m)
                OPENSSL_cleanse(m, strlen(m));
            free(m);
        }
        rt_jw_obj_end(&w);
    }
    rt_jw_obj_end(&w);
    rt_json_free(d);
    char *out = rt_jw_take(&w, NULL);
    if (!out)
        rt_err(err, RT_ERR_NOMEM, "out of memory");
    return out;
}

char *cseal_spec(const coord *co, int64_t job, const char *spec)
{
    char err[RT_ERR_LEN];
    int unopened = 0;
    char *s = spec ? map_env(co, job, spec, true, &unopened, err) : NULL;
    if (spec && !s)
        RT_ERROR("db", "job %lld: its environment cannot be sealed (%s): not stored",
                 (long long)job, err);
    return s;
}

char *cseal_open_spec(const coord *co, int64_t job, const char *stored, char *err)
{
    int unopened = 0;
    char *s = stored ? map_env(co, job, stored, false, &unopened, err) : NULL;
    if (s && unopened) {
        free(s);
        rt_err(err, RT_ERR_AUTH,
               "%d of its environment values do not open with this coordinator's state key "
               "(%s): the key was replaced, or the database belongs to another coordinator",
               unopened, co->cfg.state_key_file);
        return NULL;
    }
    return s;
}

rt_status cseal_migrate(coord *co, char *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(co->db, "SELECT id, spec FROM jobs WHERE spec LIKE '%\"env\"%'", -1, &st,
                           NULL) != SQLITE_OK)
        return rt_err(err, RT_ERR_IO, "state database: %s", sqlite3_errmsg(co->db));
    int n = 0;
    bool ok = true;
    while (ok && sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        char *s = cseal_spec(co, id, cdb_col(st, 1));
        ok = s && cdb_exec(co, "UPDATE jobs SET spec=? WHERE id=?", "ti", s, id);
        free(s);
        n++;
    }
    sqlite3_finalize(st);
    if (!ok)
        return rt_err(err, RT_ERR_IO, "state database: sealing the stored job environments failed");
    if (n)
        RT_INFO("db", "sealed the environments of %d stored jobs", n);
    return RT_OK;
}
