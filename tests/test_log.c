/* test_log.c — level filtering happens before formatting, tags, and the
 * journald <N> prefixes when JOURNAL_STREAM names our stderr. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "rt_log.h"

static char captured[8][512];
static int ncaptured;

static void sink(void *user, rt_log_level lvl, const char *line)
{
    (void)user;
    (void)lvl;
    if (ncaptured < 8)
        snprintf(captured[ncaptured++], sizeof captured[0], "%s", line);
}

static int side_effects;
static int count_call(void) { return ++side_effects; }

static void test_levels_and_tags(void **state)
{
    (void)state;
    ncaptured = 0;
    rt_log_set_sink(sink, NULL);
    rt_log_set_level(RT_LL_INFO);
    RT_DEBUG("tcp", "hidden %d", count_call());
    assert_int_equal(side_effects, 0); /* arguments not evaluated when filtered */
    assert_int_equal(ncaptured, 0);
    RT_INFO("tcp", "connected to %s", "peer");
    rt_log_set_rank(3);
    RT_WARN("ring", "slow\nrank");
    rt_log_set_rank(-1);
    assert_int_equal(ncaptured, 2);
    assert_non_null(strstr(captured[0], "INFO  [tcp] connected to peer"));
    assert_non_null(strstr(captured[1], "WARN  [ring r3] slow rank")); /* newline flattened */
    rt_log_set_level(RT_LL_TRACE);
    RT_TRACE("x", "%d", count_call());
    assert_int_equal(side_effects, 1);
    rt_log_set_sink(NULL, NULL);

    rt_log_level l;
    assert_int_equal(rt_log_parse_level("DEBUG", &l), RT_OK);
    assert_int_equal(l, RT_LL_DEBUG);
    assert_int_equal(rt_log_parse_level("warning", &l), RT_OK);
    assert_int_equal(l, RT_LL_WARN);
    assert_int_equal(rt_log_parse_level("loud", &l), RT_ERR_INVALID);
}

/* Run one emit with stderr redirected to a file; return what was written. */
static void emit_to_file(const char *journal_stream_mode, char *out, size_t len)
{
    char path[] = "/tmp/rt_log_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    struct stat st;
    fstat(fd, &st);
    char js[64];
    if (strcmp(journal_stream_mode, "match") == 0)
        snprintf(js, sizeof js, "%lu:%lu", (unsigned long)st.st_dev, (unsigned long)st.st_ino);
    else
        snprintf(js, sizeof js, "1:1"); /* inherited from a parent, not ours */
    setenv("JOURNAL_STREAM", js, 1);
    rt_log_detect_journal();
    rt_log_set_level(RT_LL_INFO);
    RT_ERROR("agent", "worker %d died", 2);
    RT_INFO("agent", "ready");
    dup2(saved, STDERR_FILENO);
    close(saved);
    unsetenv("JOURNAL_STREAM");
    rt_log_detect_journal();
    FILE *f = fopen(path, "r");
    size_t n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    fclose(f);
    close(fd);
    unlink(path);
}

static void test_journal_prefix(void **state)
{
    (void)state;
    char buf[1024];
    emit_to_file("match", buf, sizeof buf);
    assert_string_equal(buf, "<3>[agent] worker 2 died\n<6>[agent] ready\n");
    emit_to_file("other", buf, sizeof buf);
    assert_null(strstr(buf, "<3>"));
    assert_non_null(strstr(buf, "ERROR [agent] worker 2 died\n"));
    assert_non_null(strstr(buf, "Z INFO  [agent] ready\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels_and_tags),
        cmocka_unit_test(test_journal_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
