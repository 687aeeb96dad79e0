/* rt_net.c — see rt_net.h. */
#include "rt_net.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void rt_tls_describe(unsigned long e, char *buf, size_t len)
{
    /* OpenSSL 3 files the socket's errno as a "system library" error (or, from
     * some paths, as library 0): say it as the system does, not
     * "error:00000005:lib(0)::reason(5)" */
    if (ERR_SYSTEM_ERROR(e) || ERR_GET_LIB(e) == 0) {
        int sys = ERR_GET_REASON(e);
        snprintf(buf, len, "%s", sys ? strerror(sys) : "connection closed abruptly");
    } else if (ERR_GET_LIB(e) == ERR_LIB_SSL &&
               ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        snprintf(buf, len, "connection closed abruptly");
    } else {
        const char *r = ERR_reason_error_string(e);
        if (r)
            snprintf(buf, len, "%s", r);
        else
            ERR_error_string_n(e, buf, len);
    }
}

void rt_tls_error(char *buf, size_t len)
{
    unsigned long e = ERR_get_error();
    if (!e) {
        snprintf(buf, len, "unknown TLS error");
        return;
    }
    rt_tls_describe(e, buf, len);
    ERR_clear_error();
}

SSL_CTX *rt_tls_server_ctx(const char *cert_file, const char *key_file, char *err)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    char why[256];
    if (!ctx) {
        rt_tls_error(why, sizeof why);
        rt_err(err, RT_ERR_IO, "TLS: %s", why);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        rt_tls_error(why, sizeof why);
        rt_err(err, RT_ERR_IO, "cannot load certificate %s: %s", cert_file, why);
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        rt_tls_error(why, sizeof why);
        rt_err(err, RT_ERR_IO, "cannot load private key %s: %s", key_file, why);
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

SSL_CTX *rt_tls_client_ctx(const char *ca_file, char *err)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    char why[256];
    if (!ctx) {
        rt_tls_error(why, sizeof why);
        rt_err(err, RT_ERR_IO, "TLS: %s", why);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1) {
        rt_tls_error(why, sizeof why);
        rt_err(err, RT_ERR_IO, "cannot load CA certificate %s: %s", ca_file, why);
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

SSL *rt_tls_client_ssl(SSL_CTX *ctx, const char *host)
{
    SSL *ssl = SSL_new(ctx);
    if (!ssl)
        return NULL;
    SSL_set_tlsext_host_name(ssl, host);
    /* a literal IP is matched against IP SANs, a name against DNS SANs */
    X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
    if (X509_VERIFY_PARAM_set1_ip_asc(vp, host) != 1)
        SSL_set1_host(ssl, host);
    return ssl;
}

rt_status rt_token_load(const char *path, char token[RT_TOKEN_HEX + 1], char *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return rt_err(err, RT_ERR_NOTFOUND, "cannot read token file %s: %m", path);
    struct stat st;
    /* owner and group (the service's group, as for /etc/ringtrain under
     * systemd) may read it; anyone else may not */
    if (fstat(fileno(f), &st) == 0 && (st.st_mode & 007)) {
        fclose(f);
        return rt_err(err, RT_ERR_AUTH,
                      "token file %s is readable or writable by every user (mode %03o): chmod "
                      "640 it (group ringtrain) or 600",
                      path, (unsigned)(st.st_mode & 0777));
    }
    char line[256] = "";
    char *got = fgets(line, sizeof line, f);
    fclose(f);
    size_t n = got ? strlen(line) : 0;
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' '))
        line[--n] = '\0';
    if (n != RT_TOKEN_HEX || strspn(line, "0123456789abcdefABCDEF") != n)
        return rt_err(err, RT_ERR_INVALID, "token file %s does not hold a %d-digit hex token", path,
                      RT_TOKEN_HEX);
    memcpy(token, line, RT_TOKEN_HEX + 1);
    return RT_OK;
}

bool rt_token_equal(const char *a, const char *b)
{
    if (!a || !b || strlen(a) != RT_TOKEN_HEX || strlen(b) != RT_TOKEN_HEX)
        return false;
    return CRYPTO_memcmp(a, b, RT_TOKEN_HEX) == 0;
}

int rt_frame_pull(struct evbuffer *in, rt_json **out, char *err)
{
    return rt_frame_pull_max(in, RT_FRAME_MAX, out, err);
}

int rt_frame_pull_max(struct evbuffer *in, uint32_t max, rt_json **out, char *err)
{
    *out = NULL;
    if (evbuffer_get_length(in) < 4)
        return 0;
    unsigned char h[4];
    evbuffer_copyout(in, h, 4);
    uint32_t len =
        (uint32_t)h[0] | ((uint32_t)h[1] << 8) | ((uint32_t)h[2] << 16) | ((uint32_t)h[3] << 24);
    if (len == 0 || len > max) {
        rt_err(err, RT_ERR_PROTO, "frame of %u bytes (limit %u)", len, max);
        return -1;
    }
    if (evbuffer_get_length(in) < 4 + (size_t)len)
        return 0;
    evbuffer_drain(in, 4);
    char *body = malloc(len);
    if (!body) {
        rt_err(err, RT_ERR_NOMEM, "out of memory");
        return -1;
    }
    evbuffer_remove(in, body, len);
    rt_json *j = NULL;
    rt_status st = rt_json_parse(body, len, &j, err);
    free(body);
    if (st != RT_OK)
        return -1;
    if (rt_json_type_of(j) != RT_JSON_OBJECT || !rt_json_get_str(j, "type")) {
        rt_json_free(j);
        rt_err(err, RT_ERR_PROTO, "frame is not an object with a \"type\"");
        return -1;
    }
    *out = j;
    return 1;
}

rt_status rt_frame_push_text(struct bufferevent *bev, const char *text, size_t len)
{
    if (len > RT_FRAME_MAX)
        return RT_ERR_INVALID;
    unsigned char h[4] = {(unsigned char)len, (unsigned char)(len >> 8), (unsigned char)(len >> 16),
                          (unsigned char)(len >> 24)};
    struct evbuffer *out = bufferevent_get_output(bev);
    int r = evbuffer_add(out, h, 4) | evbuffer_add(out, text, len);
    return r == 0 ? RT_OK : RT_ERR_NOMEM;
}

rt_status rt_frame_push(struct bufferevent *bev, rt_jw *w)
{
    size_t len;
    char *text = rt_jw_take(w, &len);
    if (!text)
        return RT_ERR_NOMEM;
    rt_status st = rt_frame_push_text(bev, text, len);
    free(text);
    return st;
}
