/* test_cluster_http.c — the HTTP API's connections are bounded (issue
 * 28.6), against a real coordinator on loopback with http_request_timeout
 * = 2 s and http_max_per_address = 6; hostile clients come from other
 * loopback addresses (127.0.0.2-4) so the harness's own calls (127.0.0.1)
 * show the API still answers:
 *   - a client that sends a header line every 300 ms is closed at the
 *     deadline although its bytes keep coming (evhttp's idle timer alone
 *     would hold it for http_timeout, 60 s);
 *   - a silent TCP connection (no TLS handshake) is closed at the deadline;
 *   - one that sends whole requests in time is answered, and its next
 *     request has a deadline of its own;
 *   - 20 connections from one address: the first 6 are served, the others
 *     refused as their handshake starts and counted in
 *     ringtrain_rejected_connections_total; once those 6 close, the address
 *     may connect again;
 *   - dashboard logins are bounded per token (issue 28.11: 28.7k logins
 *     grew the coordinator 5 MB): after 40 logins with one token the first
 *     session is refused and the newest 16 (AUTH_SESSIONS_PER_TOKEN) serve;
 *   - the CLI escapes what a job controls (issue 28.12: a job named
 *     "\e]0;pwned\a" retitled the terminal): names in tables always, a
 *     rank's output only on a terminal (a pty here) unless --raw;
 *   - every route of the API's table (coord_http.c's http_routes): refused
 *     without a token (401), refused with a token of the role below its
 *     own (403, naming both roles), and described in docs/protocol.md;
 *   - out of descriptors (the coordinator's limit lowered with prlimit):
 *     accept errors are logged a few times, not once per attempt, the
 *     coordinator does not spin, and it serves again once descriptors free. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <dirent.h>
#include <poll.h>
#include <pty.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "cluster_harness.h"
#include "coord.h"
#include "rt_file.h"
#include "rt_net.h"
#include "rt_time.h"

#define CHECK(cond) CL_CHECK(failed, cond)

static cluster *C;
static SSL_CTX *CTX;

/* TCP from src (a loopback address) to the API's port. */
static int tcp_from(const char *src)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in me = {.sin_family = AF_INET}, to = {.sin_family = AF_INET};
    inet_pton(AF_INET, src, &me.sin_addr);
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    to.sin_port = htons((uint16_t)C->hport);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (bind(fd, (struct sockaddr *)&me, sizeof me) != 0 ||
        connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A TLS connection from src, handshake done; NULL when refused. */
static SSL *tls_from(const char *src)
{
    int fd = tcp_from(src);
    if (fd < 0)
        return NULL;
    SSL *ssl = rt_tls_client_ssl(CTX, "127.0.0.1");
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) != 1) {
        ERR_clear_error();
        SSL_free(ssl);
        close(fd);
        return NULL;
    }
    return ssl;
}

static void tls_close(SSL *ssl)
{
    int fd = SSL_get_fd(ssl);
    SSL_free(ssl);
    close(fd);
}

/* Whether the coordinator has closed fd (EOF or reset now, nothing pending). */
static bool closed_now(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0)
        return false;
    char b[4096];
    ssize_t r = recv(fd, b, sizeof b, MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* Send a request over ssl and read the whole reply (Content-Length);
 * its status, or -1. */
static int request(SSL *ssl, const char *path)
{
    char req[512], buf[65536];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: "
                     "Bearer %s\r\n\r\n", path, C->conn.token);
    if (SSL_write(ssl, req, n) != n)
        return -1;
    size_t got = 0;
    const char *body = NULL;
    long want = -1;
    while (got < sizeof buf - 1) {
        int r = SSL_read(ssl, buf + got, (int)(sizeof buf - 1 - got));
        if (r <= 0)
            return -1;
        got += (size_t)r;
        buf[got] = '\0';
        if (!body && (body = strstr(buf, "\r\n\r\n"))) {
            body += 4;
            const char *cl = strcasestr(buf, "\r\nContent-Length:");
            want = cl ? strtol(cl + 17, NULL, 10) : 0;
        }
        if (body && (long)(buf + got - body) >= want)
            break;
    }
    int code = -1;
    sscanf(buf, "HTTP/1.1 %d", &code);
    return code;
}

/* One exchange over a new TLS connection from 127.0.0.1: its status, and
 * the rt_session cookie it set (into cookie, when given). */
static int exchange(const char *req, char cookie[80])
{
    SSL *ssl = tls_from("127.0.0.1");
    if (!ssl)
        return -1;
    char buf[16384];
    int code = -1, n = (int)strlen(req);
    size_t got = 0;
    if (SSL_write(ssl, req, n) == n)
        for (int r; got < sizeof buf - 1 && (r = SSL_read(ssl, buf + got,
                                                          (int)(sizeof buf - 1 - got))) > 0;) {
            got += (size_t)r;
            buf[got] = '\0';
            if (strstr(buf, "\r\n\r\n"))
                break;
        }
    buf[got] = '\0';
    sscanf(buf, "HTTP/1.1 %d", &code);
    const char *c = strstr(buf, "rt_session=");
    if (cookie && c)
        sscanf(c, "rt_session=%64[0-9a-f]", cookie);
    tls_close(ssl);
    return code;
}

static int login(char cookie[80])
{
    char req[512];
    char body[128];
    int bl = snprintf(body, sizeof body, "{\"token\":\"%s\"}", C->conn.token);
    snprintf(req, sizeof req, "POST /v1/session HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
             "application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", bl, body);
    cookie[0] = '\0';
    return exchange(req, cookie);
}

static int with_cookie(const char *cookie)
{
    char req[512];
    snprintf(req, sizeof req, "GET /v1/nodes HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: "
             "rt_session=%s\r\nConnection: close\r\n\r\n", cookie);
    return exchange(req, NULL);
}

static void test_sessions_bounded(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    C = &fx->c;
    CHECK(cl_init(C, "sessions"));
    CHECK(cl_start_coord(C, NULL, NULL));
    rt_json *up = NULL; /* the API answers */
    for (int i = 0; i < 100 && !(up = cl_get(C, "/v1/nodes")); i++)
        usleep(100000);
    CHECK(up != NULL);
    rt_json_free(up);
    CTX = rt_tls_client_ctx(C->conn.ca, NULL);
    CHECK(CTX != NULL);
    char cookies[40][80];
    for (int i = 0; i < 40; i++) {
        int code = login(cookies[i]);
        if (code != 200 || strlen(cookies[i]) != 64)
            fprintf(stderr, "login %d: HTTP %d, cookie '%s'\n", i, code, cookies[i]);
        CHECK(code == 200 && strlen(cookies[i]) == 64);
    }
    CHECK(with_cookie(cookies[0]) == 401);  /* the oldest logins have ended */
    CHECK(with_cookie(cookies[23]) == 401);
    CHECK(with_cookie(cookies[24]) == 200); /* the newest 16 serve */
    CHECK(with_cookie(cookies[39]) == 200);
    SSL_CTX_free(CTX);
    CTX = NULL;
}

static void test_cli_escapes(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    C = &fx->c;
    /* the escaping itself */
    CHECK(!strcmp(cli_safe("a\x1b]0;pwned\x07" "b\tc"), "a\\x1b]0;pwned\\x07b\tc"));
    CHECK(!strcmp(cli_safe("\xc2\x9b" "2J \x7f \xc3\xa9"), "\\x9b2J \\x7f \xc3\xa9")); /* C1 CSI, DEL; é kept */
    int master = -1, slave = -1;
    CHECK(openpty(&master, &slave, NULL, NULL, NULL) == 0);
    struct termios tio;
    tcgetattr(slave, &tio);
    cfmakeraw(&tio); /* the bytes as written */
    tcsetattr(slave, TCSANOW, &tio);
    FILE *tty = fdopen(slave, "w");
    const char out[] = "line\x1b[2J\r\n";
    char got[128] = "";
    CHECK(tty && cli_write_out(tty, out, sizeof out - 1) && fflush(tty) == 0);
    usleep(100000);
    ssize_t n = read(master, got, sizeof got - 1);
    got[n > 0 ? n : 0] = '\0';
    CHECK(!strcmp(got, "line\\x1b[2J\r\n")); /* on a terminal: escaped, lines kept */
    cli_raw = true;
    CHECK(cli_write_out(tty, out, sizeof out - 1) && fflush(tty) == 0);
    usleep(100000);
    n = read(master, got, sizeof got - 1);
    got[n > 0 ? n : 0] = '\0';
    CHECK(!strcmp(got, out)); /* --raw: as written */
    cli_raw = false;
    if (tty)
        fclose(tty);
    close(master);
    /* a job whose name and output hold escapes, through the real CLI (a pipe) */
    CHECK(cl_init(C, "escapes"));
    CHECK(cl_start_coord(C, NULL, NULL));
    CHECK(cl_start_agent(C, 0, "a1", "A", 1, NULL) && cl_wait_agents_up(C, 1, 20000));
    const char *args[] = {"exec", "--np", "1", "--name", "\x1b]0;pwned\x07", "--", "/bin/printf",
                          "out\\033]0;pwned\\007\\n", NULL};
    char *txt = NULL;
    CHECK(cl_cli(C, &txt, 60, args) == 0);
    free(txt);
    const char *jobs[] = {"jobs", NULL};
    CHECK(cl_cli(C, &txt, 30, jobs) == 0);
    CHECK(txt && strstr(txt, "\\x1b]0;pwned") && !strchr(txt, 0x1b)); /* the column cuts it */
    free(txt);
    const char *logs[] = {"logs", "1", NULL}; /* to a pipe: as the rank wrote it */
    CHECK(cl_cli(C, &txt, 30, logs) == 0);
    CHECK(txt && strstr(txt, "out\x1b]0;pwned\x07"));
    free(txt);
}

/* user + system CPU seconds of a process */
static double cpu_seconds(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (p)
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Lines of a daemon's log that hold text. */
static int log_lines(const cl_daemon *d, const char *text)
{
    FILE *f = fopen(d->log, "r");
    char line[4096];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, text) != NULL;
    if (f)
        fclose(f);
    return n;
}

static void test_http_limits(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    C = &fx->c;
    char err[RT_ERR_LEN];
    CHECK(cl_init(C, "http"));
    CHECK(cl_start_coord(C, "http_request_timeout = 2s\nhttp_max_per_address = 6\n", NULL));
    CHECK(cl_start_agent(C, 0, "a1", "A", 1, NULL) && cl_wait_agents_up(C, 1, 20000));
    CTX = rt_tls_client_ctx(C->conn.ca, err);
    CHECK(CTX != NULL);

    /* slow headers: a line every 300 ms, closed at ~2 s anyway */
    SSL *slow = tls_from("127.0.0.2");
    CHECK(slow != NULL);
    const char *start = "GET /v1/nodes HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    CHECK(SSL_write(slow, start, (int)strlen(start)) > 0);
    int64_t t0 = rt_now_ns();
    bool shut = false;
    for (int i = 0; i < 40 && !shut; i++) { /* 12 s at most */
        usleep(300000);
        shut = closed_now(SSL_get_fd(slow)) || SSL_write(slow, "X-Slow: 1\r\n", 11) <= 0;
    }
    double slow_s = (double)(rt_now_ns() - t0) / 1e9;
    fprintf(stderr, "slow headers: closed after %.1f s\n", slow_s);
    CHECK(shut && slow_s > 1.2 && slow_s < 5.0);
    tls_close(slow);

    /* a silent TCP connection: no handshake, closed at the deadline too */
    int quiet = tcp_from("127.0.0.3");
    CHECK(quiet >= 0);
    t0 = rt_now_ns();
    shut = false;
    for (int i = 0; i < 60 && !shut; i++) {
        usleep(100000);
        shut = closed_now(quiet);
    }
    fprintf(stderr, "silent connection: closed after %.1f s\n", (double)(rt_now_ns() - t0) / 1e9);
    CHECK(shut);
    close(quiet);

    /* whole requests in time: answered; the next one has its own deadline */
    SSL *good = tls_from("127.0.0.3");
    CHECK(good != NULL);
    CHECK(request(good, "/v1/nodes") == 200);
    usleep(1500000);
    CHECK(request(good, "/v1/nodes") == 200); /* 3 s after connecting: fine */
    tls_close(good);

    /* 20 from one address: 6 served, the rest refused at once */
    int64_t rejected0 = cl_metric(C, "ringtrain_rejected_connections_total");
    SSL *many[20];
    int open = 0;
    for (int i = 0; i < 20; i++)
        open += (many[i] = tls_from("127.0.0.4")) != NULL;
    fprintf(stderr, "20 connections from 127.0.0.4: %d handshakes done\n", open);
    CHECK(open == 6);
    rt_json *nodes = cl_get(C, "/v1/nodes"); /* another address is served meanwhile */
    CHECK(nodes != NULL);
    rt_json_free(nodes);
    CHECK(cl_metric(C, "ringtrain_rejected_connections_total") - rejected0 >= 14);
    for (int i = 0; i < 20; i++)
        if (many[i])
            tls_close(many[i]);
    SSL *again = NULL;
    for (int i = 0; i < 50 && !again; i++) { /* once the coordinator has seen them go */
        usleep(100000);
        again = tls_from("127.0.0.4");
    }
    CHECK(again != NULL);
    if (again) {
        CHECK(request(again, "/v1/nodes") == 200);
        tls_close(again);
    }

    /* out of descriptors: a handful of log lines and no spinning */
    pid_t pid = C->coord.pid;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    int nfd = 0;
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));)
        nfd += e->d_name[0] != '.';
    if (d)
        closedir(d);
    struct rlimit old, low = {(rlim_t)nfd + 3, 0};
    CHECK(prlimit(pid, RLIMIT_NOFILE, NULL, &old) == 0);
    low.rlim_max = old.rlim_max;
    CHECK(prlimit(pid, RLIMIT_NOFILE, &low, NULL) == 0);
    double cpu0 = cpu_seconds(pid);
    int fds[30];
    for (int i = 0; i < 30; i++)
        fds[i] = tcp_from("127.0.0.5");
    usleep(1500000);
    double spent = cpu_seconds(pid) - cpu0;
    int lines = log_lines(&C->coord, "accepting API connections failed");
    fprintf(stderr, "out of descriptors: %d log lines, %.2f CPU s in 1.5 s\n", lines, spent);
    CHECK(lines >= 1 && lines <= 4);
    CHECK(spent < 0.5);
    CHECK(prlimit(pid, RLIMIT_NOFILE, &old, NULL) == 0);
    for (int i = 0; i < 30; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    rt_json *back = NULL;
    for (int i = 0; i < 50 && !back; i++) {
        usleep(100000);
        back = cl_get(C, "/v1/nodes");
    }
    CHECK(back != NULL);
    rt_json_free(back);
    SSL_CTX_free(CTX);
}

/* One request with token (NULL: none); its status. */
static int call(const char *token, const char *method, const char *path)
{
    cli_conn c = C->conn;
    snprintf(c.token, sizeof c.token, "%s", token ? token : "");
    http_resp r = {0};
    char err[RT_ERR_LEN];
    int st = http_request(&c, method, path, !strcmp(method, "POST") ? "{}" : NULL, &r, err) == RT_OK
                 ? r.status
                 : -1;
    free(r.body);
    return st;
}

static void test_routes_walked(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    C = &fx->c;
    CHECK(cl_init(C, "routes"));
    CHECK(cl_start_coord(C, NULL, NULL));
    rt_json *up = NULL;
    for (int i = 0; i < 100 && !(up = cl_get(C, "/v1/nodes")); i++)
        usleep(100000);
    CHECK(up != NULL);
    rt_json_free(up);
    /* a token of each role below admin */
    static const char *const roles[] = {"metrics", "read", "submit"};
    char tok[3][RT_TOKEN_HEX + 1];
    for (int k = 0; k < 3; k++) {
        char *out = NULL;
        const char *args[] = {"token", "create", roles[k], "--role", roles[k], NULL};
        CHECK(cl_cli(C, &out, 30, args) == 0);
        snprintf(tok[k], sizeof tok[k], "%.*s", RT_TOKEN_HEX, out ? out : "");
        free(out);
    }
    char *doc = NULL;
    size_t len = 0;
    char err[RT_ERR_LEN];
    CHECK(rt_read_file(RT_PROTOCOL_MD, 1 << 20, &doc, &len, err) == RT_OK);
    for (size_t i = 0; i < http_nroutes; i++) {
        const http_route *r = &http_routes[i];
        /* the pattern as a request path, and as docs/protocol.md writes it */
        char path[128], documented[160];
        size_t n = 0, d = (size_t)snprintf(documented, sizeof documented, "| `%s ", r->method);
        for (const char *p = r->pattern; *p;) {
            const char *real = !strncmp(p, "{id}", 4) ? "7" : !strncmp(p, "{name}", 6) ? "x" : NULL;
            const char *doc_name = !strncmp(p, "{id}", 4) ? "ID" : "ID-OR-NAME";
            if (real) {
                n += (size_t)snprintf(path + n, sizeof path - n, "%s", real);
                d += (size_t)snprintf(documented + d, sizeof documented - d, "%s", doc_name);
                p = strchr(p, '}') + 1;
            } else {
                path[n++] = *p;
                documented[d++] = *p++;
            }
        }
        path[n] = documented[d] = '\0';
        int none = call(NULL, r->method, path);
        if (none != 401)
            fprintf(stderr, "%s %s without a token: HTTP %d\n", r->method, path, none);
        CHECK(none == 401);
        if (r->need > ROLE_METRICS) { /* the role below its own */
            int below = r->need == ROLE_READ ? 0 : r->need == ROLE_SUBMIT ? 1 : 2;
            int st = call(tok[below], r->method, path);
            if (st != 403)
                fprintf(stderr, "%s %s with a %s token: HTTP %d\n", r->method, path, roles[below],
                        st);
            CHECK(st == 403);
        }
        /* a row of its own: "| `GET /v1/jobs/ID`" or, with a query, "| `GET /v1/jobs?..." */
        char row[170], row_q[170];
        snprintf(row, sizeof row, "%s`", documented);
        snprintf(row_q, sizeof row_q, "%s?", documented);
        const bool there = doc && (strstr(doc, row) || strstr(doc, row_q));
        if (!there)
            fprintf(stderr, "%s %s is not in docs/protocol.md's table (%s)\n", r->method,
                    r->pattern, row);
        CHECK(there);
    }
    free(doc);
    /* a metrics token reads /metrics and nothing else */
    CHECK(call(tok[0], "GET", "/metrics") == 200);
    CHECK(call(tok[0], "GET", "/v1/session") == 403);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_routes_walked, cl_fixture_setup, cl_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_http_limits, cl_fixture_setup, cl_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_sessions_bounded, cl_fixture_setup,
                                        cl_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_cli_escapes, cl_fixture_setup, cl_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
