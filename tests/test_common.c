/* test_common.c — the small shared helpers: the host:port parser every
 * address goes through, hex encoding of secrets, and the token file's
 * permission rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_addr.h"
#include "rt_net.h"
#include "rt_file.h"
#include "rt_hex.h"
#include "rt_tmp.h"

static void addr_ok(const char *a, bool port0, const char *host, int port)
{
    char h[64] = "", err[RT_ERR_LEN] = "";
    int p = -1;
    if (rt_addr_parse(a, port0, h, sizeof h, &p, err) != RT_OK)
        fail_msg("'%s' rejected: %s", a, err);
    assert_string_equal(h, host);
    assert_int_equal(p, port);
}

static void addr_bad(const char *a, bool port0, const char *why)
{
    char h[64] = "", err[RT_ERR_LEN] = "";
    int p = -1;
    assert_int_equal(rt_addr_parse(a, port0, h, sizeof h, &p, err), RT_ERR_INVALID);
    if (!strstr(err, why))
        fail_msg("'%s': error '%s' does not say '%s'", a ? a : "(null)", err, why);
    assert_int_equal(p, -1); /* nothing written on failure */
}

static void test_addr(void **state)
{
    (void)state;
    addr_ok("coordinator.example.com:7070", false, "coordinator.example.com", 7070);
    addr_ok("10.0.0.5:1", false, "10.0.0.5", 1);
    addr_ok("[fe80::1]:65535", false, "fe80::1", 65535);
    addr_ok("127.0.0.1:0", true, "127.0.0.1", 0);
    addr_ok("[::]:0", true, "::", 0);
    addr_bad("127.0.0.1:0", false, "the port must be 1 to 65535");
    addr_bad("host", false, "no port");
    addr_bad(":7070", false, "no host");
    addr_bad("host:", false, "the port must be");
    addr_bad("host:65536", false, "the port must be");
    addr_bad("host:70x", false, "the port must be");
    addr_bad("host:-1", false, "the port must be");
    addr_bad("host:1234567", false, "the port must be");
    addr_bad("fe80::1:7070", false, "IPv6 address in brackets");
    addr_bad("[fe80::1]7070", false, "[v6-address]:port");
    addr_bad("[fe80::1", false, "[v6-address]:port");
    addr_bad("", false, "no port");
    addr_bad(NULL, false, "no port");
    char longname[200];
    memset(longname, 'a', sizeof longname);
    snprintf(longname + 150, 50, ":80");
    addr_bad(longname, false, "too long");
}

/* Ports for daemons: distinct, free (each binds again), and below the
 * kernel's ephemeral range where it leaves room, so that no outgoing
 * connection can take one before the daemon binds it. */
static void test_loopback_ports(void **state)
{
    (void)state;
    int lo = 32768, hi = 60999, p[8];
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        assert_int_equal(fscanf(f, "%d %d", &lo, &hi), 2);
        fclose(f);
    }
    for (int round = 0; round < 20; round++) {
        assert_true(rt_loopback_ports(8, p));
        for (int i = 0; i < 8; i++) {
            assert_true(p[i] > 0 && p[i] < 65536);
            if (lo >= 11000)
                assert_true(p[i] >= 10000 && p[i] < lo);
            for (int j = 0; j < i; j++)
                assert_int_not_equal(p[i], p[j]);
            int fd = socket(AF_INET, SOCK_STREAM, 0);
            struct sockaddr_in a = {.sin_family = AF_INET,
                                    .sin_port = htons((uint16_t)p[i]),
                                    .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
            assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
            close(fd);
        }
    }
    assert_false(rt_loopback_ports(0, p));
    assert_false(rt_loopback_ports(9, p));
}

/* The token may be read by its group (0640, group ringtrain, as the
 * README installs it under systemd), never by everyone. */
static void test_token_modes(void **state)
{
    (void)state;
    char path[] = "/tmp/rt-token-XXXXXX", token[RT_TOKEN_HEX + 1], err[RT_ERR_LEN];
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n";
    assert_int_equal(write(fd, hex, strlen(hex)), (ssize_t)strlen(hex));
    close(fd);
    const struct { mode_t mode; rt_status want; } cases[] = {
        {0600, RT_OK}, {0640, RT_OK}, {0644, RT_ERR_AUTH}, {0606, RT_ERR_AUTH}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        chmod(path, cases[i].mode);
        rt_status st = rt_token_load(path, token, err);
        if (st != cases[i].want)
            fail_msg("mode %03o: %d (%s)", (unsigned)cases[i].mode, st, st ? err : "ok");
        if (st != RT_OK)
            assert_non_null(strstr(err, "chmod 640"));
    }
    unlink(path);
}

/* rt_write_atomic: the content lands whole, with the umask's mode, through
 * no planted link, leaving no temporary file behind. */
static void test_write_atomic(void **state)
{
    (void)state;
    char dir[] = "/tmp/rt-atomic-XXXXXX", path[128], victim[128], link_path[128], err[RT_ERR_LEN];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/out.bin", dir);
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(link_path, sizeof link_path, "%s/linked", dir);
    FILE *f = fopen(victim, "w");
    fputs("untouched", f);
    fclose(f);
    mode_t old = umask(027);
    rt_iov parts[2] = {{"hello ", 6}, {"world", 5}};
    assert_int_equal(rt_write_atomic(path, parts, 2, err), RT_OK);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0640);
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(rt_read_file(path, 100, &data, &len, err), RT_OK);
    assert_string_equal(data, "hello world");
    free(data);
    /* the destination is a link to another file: the link is replaced, its
     * target is not written */
    assert_int_equal(symlink(victim, link_path), 0);
    assert_int_equal(rt_write_atomic(link_path, parts, 1, err), RT_OK);
    assert_int_equal(lstat(link_path, &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    assert_int_equal(rt_read_file(victim, 100, &data, &len, err), RT_OK);
    assert_string_equal(data, "untouched");
    free(data);
    umask(old);
    /* only the three files: no temporary left */
    char cmd[200];
    snprintf(cmd, sizeof cmd, "test \"$(ls %s | wc -l)\" = 3", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_hex(void **state)
{
    (void)state;
    uint8_t in[5] = {0x00, 0x0f, 0xa5, 0xff, 0x10}, out[5];
    char hex[11];
    rt_hex_encode(in, 5, hex);
    assert_string_equal(hex, "000fa5ff10");
    assert_int_equal(rt_hex_decode("000FA5ff10", out, 5), RT_OK);
    assert_memory_equal(in, out, 5);
    assert_int_equal(rt_hex_decode("000fa5ff1", out, 5), RT_ERR_INVALID);  /* short */
    assert_int_equal(rt_hex_decode("000fa5ff100", out, 5), RT_ERR_INVALID); /* long */
    assert_int_equal(rt_hex_decode("000fa5ff1g", out, 5), RT_ERR_INVALID);  /* not hex */
    assert_int_equal(rt_hex_decode(NULL, out, 5), RT_ERR_INVALID);
    uint8_t a[32] = {0}, b[32] = {0};
    rt_random_bytes(a, sizeof a);
    rt_random_bytes(b, sizeof b);
    assert_memory_not_equal(a, b, sizeof a);
}

static void touch(const char *dir, const char *name)
{
    char path[1300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("x", f);
    fclose(f);
}

static bool exists(const char *base, const char *name)
{
    char path[1300];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", base, name);
    return lstat(path, &sb) == 0;
}

/* rt_tmp: SIGTERM removes what is tracked (a folder of folders holding
 * more entries than one read of the folder returns, a file) and the
 * process still dies of SIGTERM; a link in a tracked folder is removed,
 * not followed; an untracked path stays; an ignored signal stays ignored
 * (nohup), the paths with it. */
static void test_tmp_signal(void **state)
{
    (void)state;
    char base[] = "/tmp/rt-tmp-XXXXXX", path[1300];
    assert_non_null(mkdtemp(base));
    snprintf(path, sizeof path, "%s/stage", base);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/stage/in-0", base);
    assert_int_equal(mkdir(path, 0700), 0);
    for (int i = 0; i < 300; i++) {
        char name[64];
        snprintf(name, sizeof name, "a-rather-long-file-name-to-fill-the-buffer-%03d.csv", i);
        touch(path, name);
    }
    snprintf(path, sizeof path, "%s/victim", base);
    assert_int_equal(mkdir(path, 0700), 0);
    touch(path, "kept");
    snprintf(path, sizeof path, "%s/stage/in-0/link", base);
    char victim[1300];
    snprintf(victim, sizeof victim, "%s/victim", base);
    assert_int_equal(symlink(victim, path), 0);
    snprintf(path, sizeof path, "%s/keep", base);
    assert_int_equal(mkdir(path, 0700), 0);
    touch(base, "db.sqlite");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char p[1300];
        snprintf(p, sizeof p, "%s/keep", base);
        int keep = rt_tmp_track(p);
        snprintf(p, sizeof p, "%s/stage", base);
        int a = rt_tmp_track(p);
        snprintf(p, sizeof p, "%s/db.sqlite", base);
        int b = rt_tmp_track(p);
        rt_tmp_untrack(keep);
        if (keep < 0 || a < 0 || b < 0)
            _exit(3);
        kill(getpid(), SIGTERM);
        _exit(4); /* not reached: SIGTERM ends it */
    }
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFSIGNALED(ws));
    assert_int_equal(WTERMSIG(ws), SIGTERM);
    assert_false(exists(base, "stage"));
    assert_false(exists(base, "db.sqlite"));
    assert_true(exists(base, "victim/kept"));
    assert_true(exists(base, "keep"));
    /* ignored before: still ignored, nothing removed */
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGINT, SIG_IGN);
        char p[1300];
        snprintf(p, sizeof p, "%s/keep", base);
        if (rt_tmp_track(p) < 0)
            _exit(3);
        kill(getpid(), SIGINT);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
    assert_true(exists(base, "keep"));
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", base);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_addr),         cmocka_unit_test(test_loopback_ports),
        cmocka_unit_test(test_hex),          cmocka_unit_test(test_token_modes),
        cmocka_unit_test(test_write_atomic), cmocka_unit_test(test_tmp_signal)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
