/* test_s3.c — the S3 client (objstore/rt_s3.h): URIs, the credential
 * chain, the Signature Version 4 libcurl computes with our settings
 * against AWS's published vectors (a loopback listener records the
 * request), and every request against a real S3-compatible server on
 * loopback (scripts/s3-server.sh: s3rver): ranged GETs, PUT, HEAD, DELETE,
 * listings over several pages, multipart uploads visible only when
 * committed, aborts that leave nothing, a PUT cut short that stores
 * nothing (the server made to, as S3), TLS verified against the server's
 * CA, and the errors — a missing key, a missing bucket, an unknown access
 * key, a server gone in the middle of an upload. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "rt_file.h"
#include "s3_impl.h"
#include "test_util.h"

/* ---- URIs and credentials ----------------------------------------------------------- */

static void test_uri(void **state)
{
    (void)state;
    char b[64], k[1100], err[RT_ERR_LEN];
    assert_int_equal(rt_s3_uri_parse("s3://my-bucket/a/b.csv", b, sizeof b, k, sizeof k, err),
                     RT_OK);
    assert_string_equal(b, "my-bucket");
    assert_string_equal(k, "a/b.csv");
    assert_int_equal(rt_s3_uri_parse("s3://my.bucket.1", b, sizeof b, k, sizeof k, err), RT_OK);
    assert_string_equal(k, "");
    const char *bad[] = {"s3:/b/k",        "/data/x",        "s3://B/k", "s3://ab/k",
                         "s3://-bucket/k", "s3://bucket_/k", "s3:///k",  "s3://bucket/a\nb"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(rt_s3_uri_parse(bad[i], b, sizeof b, k, sizeof k, err), RT_ERR_INVALID);
        assert_non_null(strstr(err, "s3") || strstr(err, bad[i]) ? err : NULL);
    }
    assert_true(rt_s3_is_uri("s3://x") && !rt_s3_is_uri("/tmp/s3://x") && !rt_s3_is_uri(NULL));
    char j[RT_S3_URI_MAX];
    assert_true(rt_s3_uri_join(j, sizeof j, "s3://bkt/store", "best.ckpt"));
    assert_string_equal(j, "s3://bkt/store/best.ckpt");
    assert_true(rt_s3_uri_join(j, sizeof j, "s3://bkt/store/", "/best.ckpt"));
    assert_string_equal(j, "s3://bkt/store/best.ckpt");
    assert_false(rt_s3_uri_join(j, 10, "s3://bkt/store", "best.ckpt"));
}

static void test_credentials(void **state)
{
    (void)state;
    char dir[] = "/tmp/rt-s3-creds-XXXXXX", path[300], err[RT_ERR_LEN];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/credentials", dir);
    assert_true(tu_write_text(path,
                              "[default]\naws_access_key_id = DEFKEY\n"
                              "aws_secret_access_key = defsecret\n"
                              "[ci]\naws_access_key_id=CIKEY\naws_secret_access_key=cisecret\n"
                              "aws_session_token = citoken\n"
                              "[half]\naws_access_key_id = HALF\n"));
    rt_s3_cfg c;
    rt_s3_creds cr;
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_PROFILE");
    setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
    rt_s3_cfg_env(&c);
    assert_int_equal(rt_s3_creds_load(&c, &cr, err), RT_OK);
    assert_string_equal(cr.key_id, "DEFKEY");
    assert_string_equal(cr.secret, "defsecret");
    assert_string_equal(cr.token, "");
    setenv("AWS_PROFILE", "ci", 1); /* the profile, as the AWS CLI takes it */
    rt_s3_cfg_env(&c);
    assert_int_equal(rt_s3_creds_load(&c, &cr, err), RT_OK);
    assert_string_equal(cr.key_id, "CIKEY");
    assert_string_equal(cr.token, "citoken");
    setenv("AWS_PROFILE", "half", 1);
    rt_s3_cfg_env(&c);
    assert_int_equal(rt_s3_creds_load(&c, &cr, err), RT_ERR_AUTH);
    assert_non_null(strstr(err, "profile half"));
    setenv("AWS_PROFILE", "nope", 1);
    rt_s3_cfg_env(&c);
    assert_int_equal(rt_s3_creds_load(&c, &cr, err), RT_ERR_AUTH);
    assert_non_null(strstr(err, "AWS_ACCESS_KEY_ID"));
    /* the environment wins over the file */
    setenv("AWS_ACCESS_KEY_ID", "ENVKEY", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
    setenv("AWS_SESSION_TOKEN", "envtoken", 1);
    assert_int_equal(rt_s3_creds_load(&c, &cr, err), RT_OK);
    assert_string_equal(cr.key_id, "ENVKEY");
    assert_string_equal(cr.token, "envtoken");
    rt_s3_creds_clear(&cr);
    assert_string_equal(cr.secret, "");
    /* settings from the environment */
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9", 1);
    setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:10", 1);
    setenv("AWS_DEFAULT_REGION", "eu-west-3", 1);
    setenv("AWS_MAX_ATTEMPTS", "7", 1);
    rt_s3_cfg_env(&c);
    assert_string_equal(c.endpoint, "http://127.0.0.1:10");
    assert_string_equal(c.region, "eu-west-3");
    assert_int_equal(c.max_attempts, 7);
    const char *vars[] = {"AWS_ACCESS_KEY_ID",   "AWS_SECRET_ACCESS_KEY",       "AWS_SESSION_TOKEN",
                          "AWS_PROFILE",         "AWS_SHARED_CREDENTIALS_FILE", "AWS_ENDPOINT_URL",
                          "AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_REGION",          "AWS_MAX_ATTEMPTS"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        unsetenv(vars[i]);
    unlink(path);
    rmdir(dir);
}

/* ---- Signature Version 4 against AWS's published vectors --------------------------- */

typedef struct listener {
    int fd, port;
    char req[8192]; /* the request head as it arrived */
} listener;

static void *serve_one(void *arg)
{
    listener *l = arg;
    int c = accept(l->fd, NULL, NULL);
    if (c < 0)
        return NULL;
    size_t n = 0;
    while (n + 1 < sizeof l->req) {
        ssize_t k = read(c, l->req + n, sizeof l->req - 1 - n);
        if (k <= 0)
            break;
        n += (size_t)k;
        l->req[n] = '\0';
        if (strstr(l->req, "\r\n\r\n"))
            break;
    }
    const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    (void)!write(c, ok, strlen(ok));
    close(c);
    return NULL;
}

/* The Authorization libcurl sends for one request signed with s3_sign. */
static void signed_by_curl(const char *method, const char *url, const char *const *headers,
                           const char *sigv4, const rt_s3_creds *cr, char *auth, size_t len)
{
    listener l = {.fd = socket(AF_INET, SOCK_STREAM, 0)};
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    assert_int_equal(bind(l.fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(l.fd, 1), 0);
    getsockname(l.fd, (struct sockaddr *)&a, &al);
    pthread_t th;
    pthread_create(&th, NULL, serve_one, &l);
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    for (int i = 0; headers[i]; i++)
        h = curl_slist_append(h, headers[i]);
    h = s3_sign(c, sigv4, cr, h);
    char to[128], host[128];
    const char *hs = strstr(url, "://") + 3, *he = strchr(hs, '/');
    snprintf(host, sizeof host, "%.*s", (int)(he - hs), hs);
    snprintf(to, sizeof to, "%s:80:127.0.0.1:%d", host, ntohs(a.sin_port));
    struct curl_slist *connect_to = curl_slist_append(NULL, to);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CONNECT_TO, connect_to);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    if (strcmp(method, "GET") != 0) /* no body: no Content-Type of libcurl's */
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    pthread_join(th, NULL);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    curl_slist_free_all(connect_to);
    close(l.fd);
    const char *p = strcasestr(l.req, "\r\nAuthorization: ");
    assert_non_null(p);
    p += 17;
    const char *e = strstr(p, "\r\n");
    snprintf(auth, len, "%.*s", (int)(e - p), p);
}

static void test_sigv4_vectors(void **state)
{
    (void)state;
    /* aws-sig-v4-test-suite: AKIDEXAMPLE, 20150830T123600Z, us-east-1, "service" */
    rt_s3_creds suite = {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
    const char *date[] = {"X-Amz-Date: 20150830T123600Z", NULL};
    const struct {
        const char *name, *method, *url, *sig;
    } v[] = {
        {"get-vanilla", "GET", "http://example.amazonaws.com/",
         "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
        /* Debian 12's libcurl (7.88) signs the query as it is written, not
         * sorted: rt_s3 writes its queries in canonical order, as here */
        {"get-vanilla-query-order-key-case", "GET",
         "http://example.amazonaws.com/?Param1=value1&Param2=value2",
         "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
        {"post-vanilla", "POST", "http://example.amazonaws.com/",
         "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"},
    };
    char auth[1024], want[1024];
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        signed_by_curl(v[i].method, v[i].url, date, "aws:amz:us-east-1:service", &suite, auth,
                       sizeof auth);
        snprintf(want, sizeof want,
                 "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/"
                 "aws4_request, SignedHeaders=host;x-amz-date, Signature=%s",
                 v[i].sig);
        if (strcmp(auth, want) != 0)
            fail_msg("%s:\n got %s\nwant %s", v[i].name, auth, want);
    }
    /* Amazon S3's "GET Object" example of its Signature V4 documentation:
     * the range and the payload hash signed, as rt_s3 sends them */
    rt_s3_creds s3 = {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
    const char *hdr[] = {"X-Amz-Date: 20130524T000000Z", "Range: bytes=0-9",
                         "x-amz-content-sha256: "
                         "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                         NULL};
    signed_by_curl("GET", "http://examplebucket.s3.amazonaws.com/test.txt", hdr,
                   "aws:amz:us-east-1:s3", &s3, auth, sizeof auth);
    assert_string_equal(
        auth, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
              "aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
              "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

/* ---- against the server ------------------------------------------------------------------ */

static char g_dir[64], g_endpoint[128];
static bool g_up;

/* scripts/s3-server.sh start DIR [--tls]: its endpoint (and CA) */
static bool start_server(const char *dir, bool tls, char *endpoint, size_t len, char *ca,
                         size_t calen)
{
    char cmd[512], line[512] = "";
    snprintf(cmd, sizeof cmd, "%s/scripts/s3-server.sh start %s%s", RT_SOURCE_DIR, dir,
             tls ? " --tls" : "");
    FILE *p = popen(cmd, "r");
    if (!p)
        return false;
    if (!fgets(line, sizeof line, p))
        line[0] = '\0';
    if (pclose(p) != 0)
        return false;
    const char *e = strstr(line, "endpoint="), *c = strstr(line, "ca_file=");
    if (!e)
        return false;
    snprintf(endpoint, len, "%.*s", (int)strcspn(e + 9, " \n"), e + 9);
    if (ca && c)
        snprintf(ca, calen, "%.*s", (int)strcspn(c + 8, " \n"), c + 8);
    return true;
}

static void stop_server(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/scripts/s3-server.sh stop %s", RT_SOURCE_DIR, dir);
    (void)!system(cmd);
}

/* The server stopped and its folder removed. */
static void remove_server(const char *dir)
{
    stop_server(dir);
    rt_remove_tree(dir);
}

static int server_up(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/rt-s3-XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    setenv("S3_TEST_TOKEN", "valid-session-token", 1);
    setenv("S3_TEST_EXPIRED_TOKEN", "expired-session-token", 1);
    g_up = start_server(g_dir, false, g_endpoint, sizeof g_endpoint, NULL, 0);
    if (!g_up)
        fprintf(stderr, "test_s3: no S3 server (scripts/install-deps.sh installs s3rver)\n");
    return 0;
}

static int server_down(void **state)
{
    (void)state;
    remove_server(g_dir);
    return 0;
}

static rt_s3 *client(const char *key, const char *secret, const char *token, int attempts)
{
    if (!g_up)
        fail_msg("the S3 server did not start");
    rt_s3_cfg c;
    rt_s3_cfg_env(&c);
    snprintf(c.endpoint, sizeof c.endpoint, "%s", g_endpoint);
    c.part_size = RT_S3_PART_MIN;
    c.max_attempts = attempts;
    c.timeout_s = 10;
    rt_s3_creds cr = {0};
    snprintf(cr.key_id, sizeof cr.key_id, "%s", key);
    snprintf(cr.secret, sizeof cr.secret, "%s", secret);
    snprintf(cr.token, sizeof cr.token, "%s", token ? token : "");
    rt_s3 *s;
    char err[RT_ERR_LEN];
    if (rt_s3_open(&s, &c, &cr, err) != RT_OK)
        fail_msg("%s", err);
    return s;
}

static void test_objects(void **state)
{
    (void)state;
    rt_s3 *s = client("S3RVER", "S3RVER", NULL, 3);
    char err[RT_ERR_LEN], *d;
    size_t n;
    const char *uri = "s3://ringtrain/objects/a b+c.txt"; /* a key that needs encoding */
    const char text[] = "0123456789abcdefghij";
    assert_int_equal(rt_s3_put(s, uri, text, 20, err), RT_OK);
    int64_t size = 0;
    assert_int_equal(rt_s3_head(s, uri, &size, err), RT_OK);
    assert_int_equal(size, 20);
    assert_int_equal(rt_s3_get(s, uri, 0, -1, &d, &n, NULL, err), RT_OK);
    assert_int_equal(n, 20);
    assert_memory_equal(d, text, 20);
    free(d);
    assert_int_equal(rt_s3_get(s, uri, 5, 4, &d, &n, NULL, err), RT_OK); /* a ranged GET */
    assert_int_equal(n, 4);
    assert_memory_equal(d, "5678", 4);
    free(d);
    assert_int_equal(rt_s3_get(s, uri, 15, -1, &d, &n, NULL, err), RT_OK);
    assert_int_equal(n, 5);
    free(d);
    /* past the end: what was asked for is not all there (a truncated object) */
    rt_status st = rt_s3_get(s, uri, 10, 40, &d, &n, NULL, err);
    assert_true(st == RT_ERR_CORRUPT || st == RT_ERR_INVALID);
    fprintf(stderr, "past the end: %s\n", err);
    assert_non_null(strstr(err, uri));
    assert_int_equal(rt_s3_put(s, "s3://ringtrain/objects/empty", "", 0, err), RT_OK);
    assert_int_equal(rt_s3_get(s, "s3://ringtrain/objects/empty", 0, -1, &d, &n, NULL, err), RT_OK);
    assert_int_equal(n, 0);
    free(d);
    assert_int_equal(rt_s3_delete(s, uri, err), RT_OK);
    assert_int_equal(rt_s3_head(s, uri, &size, err), RT_ERR_NOTFOUND);
    assert_int_equal(rt_s3_get(s, uri, 0, -1, &d, &n, NULL, err), RT_ERR_NOTFOUND);
    fprintf(stderr, "no such key: %s\n", err);
    assert_non_null(strstr(err, "NoSuchKey"));
    assert_non_null(strstr(err, uri));
    assert_int_equal(rt_s3_delete(s, uri, err), RT_OK); /* gone already: as S3 */
    assert_int_equal(rt_s3_get(s, "s3://no-such-bucket/k", 0, -1, &d, &n, NULL, err),
                     RT_ERR_NOTFOUND);
    fprintf(stderr, "no such bucket: %s\n", err);
    assert_non_null(strstr(err, "NoSuchBucket"));
    rt_s3_close(s);
}

typedef struct seen {
    int n, stop_at;
    char first[RT_S3_URI_MAX], last[RT_S3_URI_MAX];
    int64_t bytes;
} seen;

static bool on_object(void *user, const char *uri, int64_t size)
{
    seen *v = user;
    if (v->n == 0)
        snprintf(v->first, sizeof v->first, "%s", uri);
    if (v->n > 0 && strcmp(uri, v->last) <= 0)
        fail_msg("listing out of order: %s after %s", uri, v->last);
    snprintf(v->last, sizeof v->last, "%s", uri);
    v->n++;
    v->bytes += size;
    return v->n != v->stop_at;
}

static void test_listing(void **state)
{
    (void)state;
    rt_s3 *s = client("S3RVER", "S3RVER", NULL, 3);
    char err[RT_ERR_LEN], uri[RT_S3_URI_MAX];
    const int N = 1003; /* more than one page of 1000 */
    for (int i = 0; i < N; i++) {
        snprintf(uri, sizeof uri, "s3://ringtrain/list/part-%05d", i);
        assert_int_equal(rt_s3_put(s, uri, "xy", 2, err), RT_OK);
    }
    assert_int_equal(rt_s3_put(s, "s3://ringtrain/listing-not", "z", 1, err), RT_OK);
    seen v = {0};
    rt_status lst = rt_s3_list(s, "s3://ringtrain/list/", on_object, &v, err);
    if (lst != RT_OK)
        fail_msg("%s", err);
    assert_int_equal(v.n, N);
    assert_int_equal(v.bytes, 2 * N);
    assert_string_equal(v.first, "s3://ringtrain/list/part-00000");
    assert_string_equal(v.last, "s3://ringtrain/list/part-01002");
    seen w = {.stop_at = 3};
    assert_int_equal(rt_s3_list(s, "s3://ringtrain/list/", on_object, &w, err), RT_OK);
    assert_int_equal(w.n, 3);
    seen none = {0};
    assert_int_equal(rt_s3_list(s, "s3://ringtrain/nothing-here/", on_object, &none, err), RT_OK);
    assert_int_equal(none.n, 0);
    rt_s3_stats st;
    rt_s3_get_stats(s, &st);
    fprintf(stderr, "listing: %lld requests, %lld retries\n", (long long)st.requests,
            (long long)st.retries);
    rt_s3_close(s);
}

static char *pattern(size_t n, unsigned seed)
{
    char *p = malloc(n);
    for (size_t i = 0; i < n; i++)
        p[i] = (char)((i * 2654435761u + seed) >> 13);
    return p;
}

static int64_t uploads_left(void)
{ /* the server's unfinished uploads (parts on its disk) */
    char cmd[256], line[64] = "0";
    snprintf(cmd, sizeof cmd,
             "find %s/data -path '*uploads*' -type f -name '[0-9]*' 2>/dev/null | wc -l", g_dir);
    FILE *p = popen(cmd, "r");
    if (p && !fgets(line, sizeof line, p))
        line[0] = '\0';
    if (p)
        pclose(p);
    return atoll(line);
}

static void test_multipart(void **state)
{
    (void)state;
    rt_s3 *s = client("S3RVER", "S3RVER", NULL, 3);
    char err[RT_ERR_LEN], *d;
    size_t n;
    const size_t total = 2 * RT_S3_PART_MIN + 12345;
    char *data = pattern(total, 7);
    const char *uri = "s3://ringtrain/store/last.ckpt";
    rt_s3_upload *u;
    assert_int_equal(rt_s3_upload_begin(s, uri, &u, err), RT_OK);
    for (size_t off = 0; off < total;) { /* odd-sized writes, as a checkpoint's */
        size_t k = total - off < 777777 ? total - off : 777777;
        assert_int_equal(rt_s3_upload_write(u, data + off, k, err), RT_OK);
        off += k;
    }
    int64_t size;
    /* the parts are up, the object is not there yet */
    assert_int_equal(rt_s3_head(s, uri, &size, err), RT_ERR_NOTFOUND);
    assert_int_equal(rt_s3_upload_commit(u, err), RT_OK);
    assert_int_equal(rt_s3_get(s, uri, 0, -1, &d, &n, NULL, err), RT_OK);
    assert_int_equal(n, total);
    assert_memory_equal(d, data, total);
    free(d);
    assert_int_equal(uploads_left(), 0);
    /* aborted after a part: nothing visible, nothing left */
    assert_int_equal(rt_s3_upload_begin(s, "s3://ringtrain/store/aborted", &u, err), RT_OK);
    assert_int_equal(rt_s3_upload_write(u, data, RT_S3_PART_MIN + 1, err), RT_OK);
    assert_true(uploads_left() > 0);
    rt_s3_upload_abort(u);
    assert_int_equal(uploads_left(), 0);
    assert_int_equal(rt_s3_head(s, "s3://ringtrain/store/aborted", &size, err), RT_ERR_NOTFOUND);
    /* smaller than a part: one PUT at commit */
    assert_int_equal(rt_s3_upload_begin(s, "s3://ringtrain/store/small", &u, err), RT_OK);
    assert_int_equal(rt_s3_upload_write(u, "tiny", 4, err), RT_OK);
    assert_int_equal(rt_s3_head(s, "s3://ringtrain/store/small", &size, err), RT_ERR_NOTFOUND);
    assert_int_equal(rt_s3_upload_commit(u, err), RT_OK);
    assert_int_equal(rt_s3_head(s, "s3://ringtrain/store/small", &size, err), RT_OK);
    assert_int_equal(size, 4);
    assert_int_equal(rt_s3_upload_begin(s, "s3://ringtrain/dir/", &u, err), RT_ERR_INVALID);
    free(data);
    rt_s3_close(s);
}

/* A PUT whose client goes away mid-body (a rank killed while it saves a
 * checkpoint): S3 stores nothing, the object stays what it was — the server
 * must too, or a resumed job reads a truncated checkpoint. */
typedef struct cut {
    const char *data;
    size_t sent, stop;
} cut;

static size_t cut_read(char *buf, size_t size, size_t nmemb, void *user)
{
    cut *c = user;
    if (c->sent >= c->stop)
        return CURL_READFUNC_ABORT; /* the connection closes mid-body */
    size_t k = size * nmemb < c->stop - c->sent ? size * nmemb : c->stop - c->sent;
    memcpy(buf, c->data + c->sent, k);
    c->sent += k;
    return k;
}

static void test_cut_put(void **state)
{
    (void)state;
    rt_s3 *s = client("S3RVER", "S3RVER", NULL, 1);
    char err[RT_ERR_LEN], url[300], *d;
    size_t n;
    const char *uri = "s3://ringtrain/cut/last.ckpt";
    char *old = pattern(1 << 20, 11), *new = pattern(8 << 20, 12);
    assert_int_equal(rt_s3_put(s, uri, old, 1 << 20, err), RT_OK);
    CURL *c = curl_easy_init();
    snprintf(url, sizeof url, "%s/ringtrain/cut/last.ckpt", g_endpoint);
    struct curl_slist *h = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    h = s3_sign(c, s->sigv4, &s->cr, h);
    cut body = {new, 0, 2 << 20}; /* 2 of the 8 MiB it announces */
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)(8 << 20));
    curl_easy_setopt(c, CURLOPT_READFUNCTION, cut_read);
    curl_easy_setopt(c, CURLOPT_READDATA, &body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    CURLcode rc = curl_easy_perform(c);
    assert_int_not_equal(rc, CURLE_OK);
    assert_int_equal(body.sent, 2 << 20);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    for (int i = 0; i < 3; i++) { /* now and after the server has seen the close */
        assert_int_equal(rt_s3_get(s, uri, 0, -1, &d, &n, NULL, err), RT_OK);
        assert_int_equal(n, 1 << 20);
        assert_memory_equal(d, old, 1 << 20);
        free(d);
        usleep(100000);
    }
    assert_int_equal(rt_s3_put(s, uri, new, 8 << 20, err), RT_OK); /* whole: stored */
    assert_int_equal(rt_s3_get(s, uri, 0, -1, &d, &n, NULL, err), RT_OK);
    assert_int_equal(n, 8 << 20);
    assert_memory_equal(d, new, 8 << 20);
    free(d);
    free(old);
    free(new);
    rt_s3_close(s);
}

static void test_credentials_refused(void **state)
{
    (void)state;
    char err[RT_ERR_LEN], *d;
    size_t n;
    rt_s3 *owner = client("S3RVER", "S3RVER", NULL, 1);
    assert_int_equal(rt_s3_put(owner, "s3://ringtrain/auth/k", "v", 1, err), RT_OK);
    rt_s3_close(owner);
    const struct {
        const char *key, *secret, *token, *code;
    } bad[] = {
        {"NOBODY", "S3RVER", NULL, "InvalidAccessKeyId"},
        {"S3RVER", "not-the-secret", NULL, "SignatureDoesNotMatch"},
        {"S3RVER", "S3RVER", "expired-session-token", "ExpiredToken"},
        {"S3RVER", "S3RVER", "forged-session-token", "InvalidToken"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        rt_s3 *s = client(bad[i].key, bad[i].secret, bad[i].token, 3);
        assert_int_equal(rt_s3_get(s, "s3://ringtrain/auth/k", 0, -1, &d, &n, NULL, err),
                         RT_ERR_AUTH);
        fprintf(stderr, "%s: %s\n", bad[i].code, err);
        assert_non_null(strstr(err, bad[i].code));
        assert_non_null(strstr(err, "s3://ringtrain/auth/k"));
        assert_null(strstr(err, bad[i].secret)); /* never the secret */
        if (bad[i].token)
            assert_null(strstr(err, bad[i].token));
        rt_s3_stats st;
        rt_s3_get_stats(s, &st);
        assert_int_equal(st.retries, 0); /* refused is not retried */
        rt_s3_close(s);
    }
    rt_s3 *s = client("S3RVER", "S3RVER", "valid-session-token", 1);
    assert_int_equal(rt_s3_get(s, "s3://ringtrain/auth/k", 0, -1, &d, &n, NULL, err), RT_OK);
    free(d);
    rt_s3_close(s);
}

/* A server gone in the middle of an upload: the write or the commit fails
 * naming the URI, after its retries; the object never appears. */
static void test_server_gone(void **state)
{
    (void)state;
    char dir[] = "/tmp/rt-s3-gone-XXXXXX", ep[128], err[RT_ERR_LEN];
    assert_non_null(mkdtemp(dir));
    assert_true(start_server(dir, false, ep, sizeof ep, NULL, 0));
    rt_s3_cfg c;
    rt_s3_cfg_env(&c);
    snprintf(c.endpoint, sizeof c.endpoint, "%s", ep);
    c.part_size = RT_S3_PART_MIN;
    c.max_attempts = 2;
    rt_s3_creds cr = {"S3RVER", "S3RVER", ""};
    rt_s3 *s;
    assert_int_equal(rt_s3_open(&s, &c, &cr, err), RT_OK);
    char *data = pattern(3 * RT_S3_PART_MIN, 3);
    rt_s3_upload *u;
    assert_int_equal(rt_s3_upload_begin(s, "s3://ringtrain/gone/ckpt", &u, err), RT_OK);
    assert_int_equal(rt_s3_upload_write(u, data, RT_S3_PART_MIN + 10, err), RT_OK);
    stop_server(dir);
    rt_status st = rt_s3_upload_write(u, data, 2 * RT_S3_PART_MIN, err);
    if (st == RT_OK)
        st = rt_s3_upload_commit(u, err);
    else
        rt_s3_upload_abort(u);
    assert_int_equal(st, RT_ERR_IO);
    fprintf(stderr, "server gone: %s\n", err);
    assert_non_null(strstr(err, "s3://ringtrain/gone/ckpt"));
    assert_non_null(strstr(err, "after 2 attempts"));
    rt_s3_close(s);
    /* back (on another port): no object */
    assert_true(start_server(dir, false, ep, sizeof ep, NULL, 0));
    snprintf(c.endpoint, sizeof c.endpoint, "%s", ep);
    assert_int_equal(rt_s3_open(&s, &c, &cr, err), RT_OK);
    int64_t size;
    assert_int_equal(rt_s3_head(s, "s3://ringtrain/gone/ckpt", &size, err), RT_ERR_NOTFOUND);
    rt_s3_close(s);
    remove_server(dir);
    free(data);
}

/* TLS: verified against the server's CA; without it, refused. */
static void test_tls(void **state)
{
    (void)state;
    char dir[] = "/tmp/rt-s3-tls-XXXXXX", ep[128], ca[300] = "", err[RT_ERR_LEN], *d;
    size_t n;
    assert_non_null(mkdtemp(dir));
    assert_true(start_server(dir, true, ep, sizeof ep, ca, sizeof ca));
    assert_true(!strncmp(ep, "https://", 8) && ca[0]);
    rt_s3_cfg c;
    rt_s3_cfg_env(&c);
    snprintf(c.endpoint, sizeof c.endpoint, "%s", ep);
    c.max_attempts = 1;
    rt_s3_creds cr = {"S3RVER", "S3RVER", ""};
    rt_s3 *s;
    assert_int_equal(rt_s3_open(&s, &c, &cr, err), RT_OK);
    assert_int_equal(rt_s3_put(s, "s3://ringtrain/tls/k", "v", 1, err), RT_ERR_IO);
    fprintf(stderr, "unknown CA: %s\n", err);
    assert_non_null(strstr(err, "certificate"));
    rt_s3_close(s);
    snprintf(c.ca_file, sizeof c.ca_file, "%s", ca);
    assert_int_equal(rt_s3_open(&s, &c, &cr, err), RT_OK);
    assert_int_equal(rt_s3_put(s, "s3://ringtrain/tls/k", "v", 1, err), RT_OK);
    assert_int_equal(rt_s3_get(s, "s3://ringtrain/tls/k", 0, -1, &d, &n, NULL, err), RT_OK);
    assert_int_equal(n, 1);
    free(d);
    rt_s3_close(s);
    remove_server(dir);
}

int main(void)
{
    tu_seed();
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest unit[] = {
        cmocka_unit_test(test_uri),
        cmocka_unit_test(test_credentials),
        cmocka_unit_test(test_sigv4_vectors),
    };
    const struct CMUnitTest server[] = {
        cmocka_unit_test(test_objects),
        cmocka_unit_test(test_listing),
        cmocka_unit_test(test_multipart),
        cmocka_unit_test(test_cut_put),
        cmocka_unit_test(test_credentials_refused),
        cmocka_unit_test(test_server_gone),
        cmocka_unit_test(test_tls),
    };
    int failed = cmocka_run_group_tests(unit, NULL, NULL);
    return failed + cmocka_run_group_tests(server, server_up, server_down);
}
