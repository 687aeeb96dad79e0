/* test_cluster_hostile.c — hostile clients of test_cluster.c's coordinator:
 * plain TCP (an HTTP request, random bytes) on its TLS control port; over
 * TLS a wrong cluster token, a frame past the 1 MiB limit, a frame that is
 * not JSON or not an object, a message before hello, and the right token
 * from a stranger who then speaks nonsense; the HTTP API without a token or
 * with a wrong one, and the CLI's word for it.  Each is rejected and
 * counted, and the coordinator and its agents go on serving. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "test_cluster.h"

/* ---- hostile clients on the control port ------------------------------------------ */

static int tcp_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Send raw bytes over plain TCP; true when the coordinator closes on us
 * within 5 s (read gives EOF or a reset, not a timeout). */
static bool plain_rejected(const void *bytes, size_t n)
{
    int fd = tcp_connect(C.cport);
    if (fd < 0)
        return false;
    ssize_t w = write(fd, bytes, n);
    (void)w;
    char buf[4096];
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0) {
    }
    bool closed = r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    close(fd);
    return closed;
}

/* Over TLS (the real CA and name): send a frame, collect what comes back
 * until the coordinator closes; true when it closed within 5 s. */
static bool tls_rejected(const void *frame, size_t n, char *reply, size_t rlen)
{
    char err[RT_ERR_LEN];
    SSL_CTX *ctx = rt_tls_client_ctx(C.conn.ca, err);
    int fd = tcp_connect(C.cport);
    if (!ctx || fd < 0)
        return false;
    SSL *ssl = rt_tls_client_ssl(ctx, "127.0.0.1");
    SSL_set_fd(ssl, fd);
    bool closed = false;
    size_t got = 0;
    if (SSL_connect(ssl) == 1 && SSL_write(ssl, frame, (int)n) > 0) {
        for (;;) {
            int r = SSL_read(ssl, reply + got, (int)(rlen - 1 - got));
            if (r > 0) {
                got += (size_t)r;
                if (got + 1 >= rlen)
                    break;
                continue;
            }
            int e = SSL_get_error(ssl, r);
            closed = e == SSL_ERROR_ZERO_RETURN ||
                     (e == SSL_ERROR_SYSCALL && errno != EAGAIN && errno != EWOULDBLOCK) ||
                     e == SSL_ERROR_SSL;
            break;
        }
    }
    reply[got] = '\0';
    if (got < 4)
        memset(reply, 0, 5);
    ERR_clear_error();
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    close(fd);
    return closed;
}

static size_t make_frame(char *buf, const char *json)
{
    uint32_t n = (uint32_t)strlen(json);
    buf[0] = (char)(n & 0xff);
    buf[1] = (char)(n >> 8 & 0xff);
    buf[2] = (char)(n >> 16 & 0xff);
    buf[3] = (char)(n >> 24);
    memcpy(buf + 4, json, n);
    return n + 4;
}

void test_hostile_clients(void **state)
{
    (void)state;
    int64_t rejected0 = cl_metric(&C, "ringtrain_rejected_connections_total");
    CHECK(rejected0 >= 0);
    char buf[8192], reply[4096];

    /* plain TCP to the TLS port: an HTTP request, then random bytes */
    const char http[] = "GET /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n";
    CHECK(plain_rejected(http, sizeof http - 1));
    char rnd[2048];
    FILE *ur = fopen("/dev/urandom", "r");
    CHECK(ur && fread(rnd, 1, sizeof rnd, ur) == sizeof rnd);
    fclose(ur);
    CHECK(plain_rejected(rnd, sizeof rnd));

    /* TLS, then: a hello with the wrong token (told why, then closed) */
    size_t n = make_frame(buf, "{\"type\":\"hello\",\"token\":\"00000000000000000000000000000000"
                               "00000000000000000000000000000000\",\"host_id\":\"X\",\"name\":"
                               "\"x\",\"slots\":64}");
    CHECK(tls_rejected(buf, n, reply, sizeof reply));
    CHECK(strstr(reply + 4, "wrong cluster token") != NULL); /* after the length */
    /* a length above the 1 MiB limit */
    memcpy(buf, "\x00\x00\x20\x00", 4); /* 2 MiB */
    memset(buf + 4, 'x', 100);
    CHECK(tls_rejected(buf, 104, reply, sizeof reply));
    /* a frame that is not JSON, and one that is JSON but not an object */
    n = make_frame(buf, "{\"type\":\"hello\",\"token\":");
    CHECK(tls_rejected(buf, n, reply, sizeof reply));
    n = make_frame(buf, "[1,2,3]");
    CHECK(tls_rejected(buf, n, reply, sizeof reply));
    /* a well-formed message of a type nobody sends before hello */
    n = make_frame(buf, "{\"type\":\"exited\",\"job\":1,\"attempt\":1,\"rank\":0,\"code\":0}");
    CHECK(tls_rejected(buf, n, reply, sizeof reply));
    CHECK(strstr(reply + 4, "before hello") != NULL);
    /* the right token from a stranger who then speaks nonsense: closed, and
     * the impostor agent is down, not the real ones */
    char hello[512];
    snprintf(hello, sizeof hello,
             "{\"type\":\"hello\",\"token\":\"%s\",\"host_id\":\"Z\",\"name\":\"z\",\"slots\":1}",
             C.agent_token);
    n = make_frame(buf, hello);
    n += make_frame(buf + n, "{\"type\":\"teleport\"}");
    CHECK(tls_rejected(buf, n, reply, sizeof reply));

    /* the coordinator counted them, still serves, and its agents still work */
    cl_sleep_ms(300);
    int64_t rejected = cl_metric(&C, "ringtrain_rejected_connections_total");
    fprintf(stderr, "rejected connections: %lld -> %lld\n", (long long)rejected0,
            (long long)rejected);
    CHECK(rejected - rejected0 >= 8);
    CHECK(cl_metric(&C, "ringtrain_agents_up") == 3);
    char *out = NULL;
    const char *args[] = {"exec", "--np", "5", "--", CL_PROBE, "--marker", C.marker, NULL};
    CHECK(cl_cli(&C, &out, 60, args) == 0);
    free(out);

    /* the HTTP API: no token, a wrong token */
    cli_conn bad = C.conn;
    memset(bad.token, 'f', RT_TOKEN_HEX);
    http_resp r = {0};
    char err[RT_ERR_LEN];
    CHECK(http_request(&bad, "GET", "/v1/jobs", NULL, &r, err) == RT_OK);
    CHECK(r.status == 401);
    free(r.body);
    bad.token[0] = '\0';
    CHECK(http_request(&bad, "GET", "/v1/nodes", NULL, &r, err) == RT_OK);
    CHECK(r.status == 401);
    free(r.body);
    /* and the CLI says so plainly */
    char tokpath[400];
    snprintf(tokpath, sizeof tokpath, "%s/wrong-token", C.dir);
    FILE *tf = fopen(tokpath, "w");
    fprintf(tf, "%.64s\n", "abababababababababababababababababababababababababababababababab");
    fclose(tf);
    chmod(tokpath, 0600);
    const char *jargs[] = {"jobs", "--token-file", tokpath, NULL};
    CHECK(cl_cli(&C, &out, 30, jargs) != 0);
    fprintf(stderr, "jobs with a wrong token: %s", out);
    CHECK(strstr(out, "token") != NULL);
    free(out);
}
