/* rt_s3.c — the S3 client of rt_s3.h: URLs, one signed request with its
 * retries, the error text, and GET, HEAD, PUT, DELETE and ListObjectsV2.
 * (Model: the AWS SDKs' "standard" retry mode; Spark's s3a for what is
 * retried.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "rt_hex.h"
#include "s3_impl.h"

void s3_sha256_hex(const void *p, size_t n, char out[65])
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL);
    rt_hex_encode(md, 32, out);
    out[64] = '\0';
}

struct curl_slist *s3_sign(CURL *c, const char *sigv4, const rt_s3_creds *cr,
                           struct curl_slist *headers)
{
    curl_easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4);
    curl_easy_setopt(c, CURLOPT_USERNAME, cr->key_id);
    curl_easy_setopt(c, CURLOPT_PASSWORD, cr->secret);
    if (cr->token[0]) { /* temporary credentials: the token is sent, and signed */
        char h[sizeof cr->token + 32];
        snprintf(h, sizeof h, "x-amz-security-token: %s", cr->token);
        headers = curl_slist_append(headers, h);
        OPENSSL_cleanse(h, sizeof h);
    }
    return headers;
}

/* ---- XML (S3's answers: a few flat elements) ---------------------------------- */

const char *s3_xml_text(const char *from, const char *tag, char *out, size_t len)
{
    char open[80], close[80];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    const char *a = from ? strstr(from, open) : NULL;
    const char *b = a ? strstr(a + strlen(open), close) : NULL;
    if (!b)
        return NULL;
    static const struct {
        const char *ent;
        char c;
    } ents[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    size_t n = 0;
    for (const char *p = a + strlen(open); p < b && n + 1 < len;) {
        size_t k = 0;
        while (k < sizeof ents / sizeof *ents && strncmp(p, ents[k].ent, strlen(ents[k].ent)))
            k++;
        if (k < sizeof ents / sizeof *ents) {
            out[n++] = ents[k].c;
            p += strlen(ents[k].ent);
        } else {
            out[n++] = *p++;
        }
    }
    if (len)
        out[n] = '\0';
    return b + strlen(close);
}

/* ---- the client ------------------------------------------------------------------ */

rt_status rt_s3_open(rt_s3 **out, const rt_s3_cfg *c, const rt_s3_creds *cr, char *err)
{
    *out = NULL;
    if (c->endpoint[0] && strncmp(c->endpoint, "http://", 7) && strncmp(c->endpoint, "https://", 8))
        return rt_err(err, RT_ERR_INVALID, "S3 endpoint %s: not an http:// or https:// URL",
                      c->endpoint);
    if (c->part_size < RT_S3_PART_MIN || c->max_attempts < 1)
        return rt_err(err, RT_ERR_INVALID, "S3: part_size below 5 MiB or max_attempts below 1");
    static bool inited;
    if (!inited) { /* once, before any thread makes a client (curl_global_init is not thread-safe
                      before 7.84) */
        curl_global_init(CURL_GLOBAL_DEFAULT);
        inited = true;
    }
    rt_s3 *s = calloc(1, sizeof *s);
    if (!s || !(s->curl = curl_easy_init())) {
        free(s);
        return rt_err(err, RT_ERR_NOMEM, "out of memory for an S3 client");
    }
    s->cfg = *c;
    s->cr = *cr;
    if (!s->cfg.region[0])
        snprintf(s->cfg.region, sizeof s->cfg.region, "us-east-1");
    snprintf(s->sigv4, sizeof s->sigv4, "aws:amz:%s:s3", s->cfg.region);
    *out = s;
    return RT_OK;
}

rt_status rt_s3_open_env(rt_s3 **out, const char *uri, char *err)
{
    rt_s3_cfg c;
    rt_s3_creds cr;
    rt_s3_cfg_env(&c);
    char e[RT_ERR_LEN];
    rt_status st = rt_s3_creds_load(&c, &cr, e);
    if (st != RT_OK)
        return rt_err(err, st, "%s: %s", uri, e);
    st = rt_s3_open(out, &c, &cr, err);
    rt_s3_creds_clear(&cr);
    return st;
}

void rt_s3_close(rt_s3 *s)
{
    if (!s)
        return;
    curl_easy_cleanup(s->curl);
    rt_s3_creds_clear(&s->cr);
    free(s);
}

void rt_s3_get_stats(const rt_s3 *s, rt_s3_stats *st) { *st = s->st; }

/* The key URI-encoded as S3 wants it in a path: every byte but A-Z a-z 0-9
 * - _ . ~ and / as %XX. */
static bool encode_key(const char *key, char *out, size_t len)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        if (n + 4 > len)
            return false;
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-_.~/", *p))
            out[n++] = (char)*p;
        else
            n += (size_t)snprintf(out + n, len - n, "%%%02X", *p);
    }
    out[n] = '\0';
    return true;
}

static rt_status make_url(const rt_s3 *s, const char *uri, const char *query, char *url, size_t len,
                          char *err)
{
    char bucket[64], key[1100], ekey[3400], ep[600];
    rt_status st = rt_s3_uri_parse(uri, bucket, sizeof bucket, key, sizeof key, err);
    if (st != RT_OK)
        return st;
    if (!encode_key(key, ekey, sizeof ekey))
        return rt_err(err, RT_ERR_INVALID, "%s is too long", uri);
    if (s->cfg.endpoint[0])
        snprintf(ep, sizeof ep, "%s", s->cfg.endpoint);
    else
        snprintf(ep, sizeof ep, "https://s3.%s.amazonaws.com", s->cfg.region);
    size_t el = strlen(ep);
    while (el > 0 && ep[el - 1] == '/')
        ep[--el] = '\0';
    rt_s3_addressing a = s->cfg.addressing;
    if (a == RT_S3_ADDR_AUTO) /* AWS's own: virtual-hosted, unless the name has dots (TLS) */
        a = !s->cfg.endpoint[0] && !strchr(bucket, '.') ? RT_S3_ADDR_VIRTUAL : RT_S3_ADDR_PATH;
    int w;
    if (a == RT_S3_ADDR_VIRTUAL) {
        const char *host = strstr(ep, "://") + 3;
        w = snprintf(url, len, "%.*s%s.%s/%s%s%s", (int)(host - ep), ep, bucket, host, ekey,
                     query ? "?" : "", query ? query : "");
    } else {
        w = snprintf(url, len, "%s/%s/%s%s%s", ep, bucket, ekey, query ? "?" : "",
                     query ? query : "");
    }
    if (w < 0 || (size_t)w >= len)
        return rt_err(err, RT_ERR_INVALID, "%s: the request URL is too long", uri);
    return RT_OK;
}

static size_t on_body(char *p, size_t size, size_t n, void *user)
{
    s3_req *r = user;
    size_t k = size * n;
    return rt_buf_add(&r->resp, p, k) ? k : 0; /* 0: libcurl fails with CURLE_WRITE_ERROR */
}

static size_t on_header(char *p, size_t size, size_t n, void *user)
{
    s3_req *r = user;
    size_t k = size * n;
    if (k > 15 && !strncasecmp(p, "content-length:", 15) && !r->resp.p &&
        strcmp(r->method, "HEAD") != 0) {
        /* the body's room at once, not grown while it arrives (a shard: MiBs); a
         * length past 1 GiB, which a server could claim, grows as it comes */
        long long n = strtoll(p + 15, NULL, 10);
        if (n > 0 && n <= (1LL << 30))
            rt_buf_reserve(&r->resp, (size_t)n); /* out of memory: grown as it comes */
    }
    if (k > 14 && !strncasecmp(p, "content-range:", 14)) { /* bytes A-B/TOTAL */
        const char *slash = memchr(p, '/', k);
        if (slash)
            r->total = strtoll(slash + 1, NULL, 10);
    }
    if (k > 5 && !strncasecmp(p, "etag:", 5)) {
        const char *v = p + 5;
        while (*v == ' ')
            v++;
        size_t m = (size_t)(p + k - v);
        while (m > 0 && (v[m - 1] == '\r' || v[m - 1] == '\n'))
            m--;
        snprintf(r->etag, sizeof r->etag, "%.*s", (int)m, v);
    }
    return k;
}

void s3_req_free(s3_req *r) { rt_buf_free(&r->resp); }

/* Whether a failed attempt is worth another: the network, a timeout, the
 * server's 5xx, throttling. */
static bool retryable(CURLcode cc, long status, const char *code)
{
    if (cc != CURLE_OK)
        return cc == CURLE_COULDNT_CONNECT || cc == CURLE_OPERATION_TIMEDOUT ||
               cc == CURLE_SEND_ERROR || cc == CURLE_RECV_ERROR || cc == CURLE_GOT_NOTHING ||
               cc == CURLE_PARTIAL_FILE || cc == CURLE_COULDNT_RESOLVE_HOST ||
               cc == CURLE_SSL_CONNECT_ERROR;
    return status >= 500 || status == 429 || !strcmp(code, "SlowDown") ||
           !strcmp(code, "Throttling") || !strcmp(code, "RequestTimeout") ||
           !strcmp(code, "InternalError");
}

/* One attempt. */
static CURLcode attempt(rt_s3 *s, s3_req *r, const char *url, char *cerr)
{
    CURL *c = s->curl;
    curl_easy_reset(c);
    s3_req_free(r);
    r->status = 0;
    r->etag[0] = '\0';
    r->total = -1;
    struct curl_slist *h = NULL;
    char sha[65], line[128];
    s3_sha256_hex(r->body ? r->body : "", r->body ? r->blen : 0, sha);
    snprintf(line, sizeof line, "x-amz-content-sha256: %s", sha);
    h = curl_slist_append(h, line);
    if (r->off >= 0) {
        if (r->len >= 0)
            snprintf(line, sizeof line, "Range: bytes=%lld-%lld", (long long)r->off,
                     (long long)(r->off + r->len - 1));
        else
            snprintf(line, sizeof line, "Range: bytes=%lld-", (long long)r->off);
        h = curl_slist_append(h, line);
    }
    h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip */
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L); /* a silent server is a timeout */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)ceil(s->cfg.timeout_s));
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 512L * 1024); /* as large as libcurl takes */
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (s->cfg.ca_file[0])
        curl_easy_setopt(c, CURLOPT_CAINFO, s->cfg.ca_file);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    if (!strcmp(r->method, "HEAD")) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (!strcmp(r->method, "PUT") || !strcmp(r->method, "POST")) {
        snprintf(line, sizeof line, "Content-Type: %s",
                 r->ctype ? r->ctype : "application/octet-stream");
        h = curl_slist_append(h, line);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->blen);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body ? r->body : "");
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
    } else if (strcmp(r->method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
    }
    h = s3_sign(c, s->sigv4, &s->cr, h);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    CURLcode cc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_off_t cl = -1;
    curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
    r->length = (int64_t)cl;
    /* the signing options hold the secret: drop them from the handle */
    curl_easy_setopt(c, CURLOPT_PASSWORD, "");
    curl_slist_free_all(h);
    s->st.requests++;
    s->st.bytes_out += (int64_t)r->blen;
    s->st.bytes_in += (int64_t)r->resp.len;
    return cc;
}

/* AWS's standard mode: full jitter, the bound doubling from 1 s, at most 20 s. */
static void backoff(int attempt_no)
{
    double cap = fmin(20.0, ldexp(1.0, attempt_no)), u = (double)(rand() % 1000) / 1000.0;
    double t = u * cap;
    struct timespec ts = {(time_t)t, (long)((t - floor(t)) * 1e9)};
    nanosleep(&ts, NULL);
}

rt_status s3_request(rt_s3 *s, s3_req *r, char *err)
{
    char url[4200], cerr[CURL_ERROR_SIZE];
    rt_status st = make_url(s, r->uri, r->query, url, sizeof url, err);
    if (st != RT_OK)
        return st;
    char code[128] = "", msg[512] = "";
    CURLcode cc = CURLE_OK;
    for (int a = 1;; a++) {
        cerr[0] = '\0';
        code[0] = msg[0] = '\0';
        cc = attempt(s, r, url, cerr);
        if (cc == CURLE_OK && r->status >= 200 && r->status < 300 &&
            !(r->resp.p && strstr(r->resp.p, "<Error>"))) /* CompleteMultipartUpload's 200 error */
            return RT_OK;
        if (cc == CURLE_OK && r->resp.p) {
            s3_xml_text(r->resp.p, "Code", code, sizeof code);
            s3_xml_text(r->resp.p, "Message", msg, sizeof msg);
        }
        if (a >= s->cfg.max_attempts || !retryable(cc, r->status, code))
            break;
        s->st.retries++;
        backoff(a - 1);
    }
    char tries[40] = "";
    if (s->cfg.max_attempts > 1 && retryable(cc, r->status, code))
        snprintf(tries, sizeof tries, " (after %d attempts)", s->cfg.max_attempts);
    if (cc != CURLE_OK)
        return rt_err(err, cc == CURLE_OPERATION_TIMEDOUT ? RT_ERR_TIMEOUT : RT_ERR_IO,
                      "%s %s: %s%s%s%s", r->method, r->uri, curl_easy_strerror(cc),
                      cerr[0] ? ": " : "", cerr, tries);
    if (!code[0]) /* HEAD's answers have no body: the status's name */
        snprintf(code, sizeof code, "%s",
                 r->status == 404   ? "NotFound"
                 : r->status == 403 ? "Forbidden (HEAD: no reason given; a GET tells)"
                 : r->status == 400 ? "BadRequest"
                 : r->status == 416 ? "InvalidRange"
                 : r->status >= 500 ? "ServerError"
                                    : "");
    rt_status e = r->status == 404 ? RT_ERR_NOTFOUND
                  : r->status == 401 || r->status == 403 || !strcmp(code, "ExpiredToken") ||
                          !strcmp(code, "InvalidToken")
                      ? RT_ERR_AUTH
                  : r->status == 416 ? RT_ERR_INVALID
                                     : RT_ERR_IO;
    return rt_err(err, e, "%s %s: HTTP %ld%s%s%s%s%s", r->method, r->uri, r->status,
                  code[0] ? " " : "", code, msg[0] ? ": " : "", msg, tries);
}

/* ---- the simple requests ------------------------------------------------------------ */

rt_status rt_s3_get(rt_s3 *s, const char *uri, int64_t off, int64_t len, char **data, size_t *got,
                    int64_t *total, char *err)
{
    *data = NULL;
    *got = 0;
    if (total)
        *total = -1;
    if (len == 0) { /* S3 has no empty range */
        *data = calloc(1, 1);
        return *data ? RT_OK : rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    s3_req r = {.method = "GET", .uri = uri, .off = off, .len = len};
    if (off == 0 && len < 0)
        r.off = -1; /* the whole object */
    rt_status st = s3_request(s, &r, err);
    if (st != RT_OK) {
        s3_req_free(&r);
        return st;
    }
    if (len > 0 && (int64_t)r.resp.len != len) {
        s3_req_free(&r);
        return rt_err(err, RT_ERR_CORRUPT,
                      "GET %s: asked for %lld bytes at %lld, got %zu (the object is shorter, "
                      "or changed)",
                      uri, (long long)len, (long long)off, r.resp.len);
    }
    if (!r.resp.p && !(r.resp.p = calloc(1, 1)))
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    *data = r.resp.p;
    *got = r.resp.len;
    if (total) /* a whole object's answer has no range: its length is the size */
        *total = r.total >= 0 ? r.total : r.off < 0 ? (int64_t)r.resp.len : -1;
    return RT_OK;
}

rt_status rt_s3_get_first(rt_s3 *s, const char *uri, size_t max, char **data, size_t *got,
                          int64_t *total, char *err)
{
    *data = NULL;
    *got = 0;
    *total = -1;
    s3_req r = {.method = "GET", .uri = uri, .off = 0, .len = max > 0 ? (int64_t)max : 1};
    rt_status st = s3_request(s, &r, err);
    if (st == RT_ERR_INVALID && r.status == 416) { /* an empty object has no byte 0 */
        s3_req_free(&r);
        r = (s3_req){.method = "GET", .uri = uri, .off = -1};
        st = s3_request(s, &r, err);
    }
    /* a whole object's answer has no range: its length is the size */
    const int64_t size = r.total >= 0 ? r.total : (int64_t)r.resp.len;
    if (st == RT_OK && (r.resp.len > max || (r.resp.len < max && (int64_t)r.resp.len != size)))
        st = rt_err(err, RT_ERR_CORRUPT, "GET %s: %zu bytes of an object of %lld", uri, r.resp.len,
                    (long long)size);
    if (st == RT_OK && !r.resp.p && !(r.resp.p = calloc(1, 1)))
        st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    if (st != RT_OK) {
        s3_req_free(&r);
        return st;
    }
    *data = r.resp.p;
    *got = r.resp.len;
    *total = size;
    return RT_OK;
}

rt_status rt_s3_head_etag(rt_s3 *s, const char *uri, int64_t *size, char *etag, size_t len,
                          char *err)
{
    s3_req r = {.method = "HEAD", .uri = uri, .off = -1};
    rt_status st = s3_request(s, &r, err);
    s3_req_free(&r);
    *size = r.length;
    snprintf(etag, len, "%s", st == RT_OK ? r.etag : "");
    return st;
}

rt_status rt_s3_head(rt_s3 *s, const char *uri, int64_t *size, char *err)
{
    char etag[160];
    return rt_s3_head_etag(s, uri, size, etag, sizeof etag, err);
}

rt_status rt_s3_put(rt_s3 *s, const char *uri, const void *data, size_t len, char *err)
{
    s3_req r = {.method = "PUT", .uri = uri, .body = data, .blen = len, .off = -1};
    rt_status st = s3_request(s, &r, err);
    s3_req_free(&r);
    return st;
}

rt_status rt_s3_delete(rt_s3 *s, const char *uri, char *err)
{
    s3_req r = {.method = "DELETE", .uri = uri, .off = -1};
    rt_status st = s3_request(s, &r, err);
    s3_req_free(&r);
    return st == RT_ERR_NOTFOUND ? RT_OK : st;
}

void s3_encode_value(const char *v, char *out, size_t len)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)v; *p && n + 4 < len; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-_.~", *p))
            out[n++] = (char)*p;
        else
            n += (size_t)snprintf(out + n, len - n, "%%%02X", *p);
    }
    out[n] = '\0';
}

rt_status s3_list_page(const char *xml, const char *bucket, const char *prefix, rt_s3_list_fn fn,
                       void *user, char *token, size_t tlen, bool *more, bool *go, char *err)
{
    *more = false;
    *go = true;
    const size_t plen = strlen(prefix);
    for (const char *p = xml; *go && (p = strstr(p, "<Contents>")) != NULL;) {
        const char *end = strstr(p, "</Contents>");
        if (!end)
            return rt_err(err, RT_ERR_PROTO, "a listing S3 did not finish");
        end += strlen("</Contents>");
        /* this element alone: a tag missing here is not taken from the next one */
        char *one = strndup(p, (size_t)(end - p));
        char k[1100], sz[32], uri[RT_S3_URI_MAX + 80];
        const bool ok =
            one && s3_xml_text(one, "Key", k, sizeof k) && s3_xml_text(one, "Size", sz, sizeof sz);
        free(one);
        if (!ok)
            return rt_err(err, RT_ERR_PROTO, "a listed object without its key or size");
        if (strncmp(k, prefix, plen) != 0) /* a server answering for other keys */
            return rt_err(err, RT_ERR_PROTO, "S3 listed %.200s, which is not under the prefix", k);
        snprintf(uri, sizeof uri, "s3://%s/%s", bucket, k);
        *go = fn(user, uri, strtoll(sz, NULL, 10));
        p = end;
    }
    char trunc[16] = "";
    s3_xml_text(xml, "IsTruncated", trunc, sizeof trunc);
    *more = !strcmp(trunc, "true") && s3_xml_text(xml, "NextContinuationToken", token, tlen) &&
            token[0];
    return RT_OK;
}

rt_status rt_s3_list(rt_s3 *s, const char *prefix, rt_s3_list_fn fn, void *user, char *err)
{
    char bucket[64], key[1100], root[RT_S3_URI_MAX], token[1100] = "";
    rt_status st = rt_s3_uri_parse(prefix, bucket, sizeof bucket, key, sizeof key, err);
    if (st != RT_OK)
        return st;
    snprintf(root, sizeof root, "s3://%s/", bucket);
    for (;;) { /* one page of up to 1000 keys per request */
        char ekey[3400], etok[3400], q[7000];
        s3_encode_value(key, ekey, sizeof ekey);
        s3_encode_value(token, etok, sizeof etok);
        /* the parameters in canonical (sorted) order */
        snprintf(q, sizeof q, "%s%s%slist-type=2&prefix=%s", token[0] ? "continuation-token=" : "",
                 etok, token[0] ? "&" : "", ekey);
        s3_req r = {.method = "GET", .uri = root, .query = q, .off = -1};
        char e[RT_ERR_LEN];
        if ((st = s3_request(s, &r, e)) != RT_OK) {
            s3_req_free(&r);
            return rt_err(err, st, "listing %s: %s", prefix, e);
        }
        bool more = false, go = true;
        st = s3_list_page(r.resp.p ? r.resp.p : "", bucket, key, fn, user, token, sizeof token,
                          &more, &go, e);
        if (st != RT_OK) {
            s3_req_free(&r);
            return rt_err(err, st, "listing %s: %s", prefix, e);
        }
        s3_req_free(&r);
        if (!go || !more)
            return RT_OK;
    }
}
