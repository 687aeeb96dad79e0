/* test_units.c — value parsers: sizes, durations, integers, numbers,
 * booleans, lists, their formatting round trips, and the edit distance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "rt_config.h"

static void size_ok(const char *text, uint64_t want)
{
    uint64_t v = 12345;
    char err[RT_ERR_LEN] = "";
    rt_status st = rt_parse_size(text, &v, err);
    if (st != RT_OK)
        fail_msg("'%s' rejected: %s", text, err);
    if (v != want)
        fail_msg("'%s' -> %llu, want %llu", text, (unsigned long long)v, (unsigned long long)want);
}

static void size_bad(const char *text, const char *why)
{
    uint64_t v = 777;
    char err[RT_ERR_LEN] = "";
    assert_int_equal(rt_parse_size(text, &v, err), RT_ERR_INVALID);
    assert_int_equal(v, 777); /* untouched on error */
    if (!strstr(err, why))
        fail_msg("'%s': error '%s' lacks '%s'", text, err, why);
}

static void test_sizes(void **state)
{
    (void)state;
    size_ok("0", 0);
    size_ok("4096", 4096);
    size_ok("64M", 64ull << 20);
    size_ok("64MiB", 64ull << 20);
    size_ok("64mb", 64ull << 20);
    size_ok("1G", 1ull << 30);
    size_ok("  25 M  ", 25ull << 20);
    size_ok("1.5K", 1536);
    size_ok("0.5G", 512ull << 20);
    size_ok("2T", 2ull << 40);
    size_ok("17B", 17);
    size_ok("+8k", 8192);
    size_ok("16777215T", 16777215ull << 40);
    size_ok("18446744073709551615", UINT64_MAX);
    size_bad("", "empty");
    size_bad("   ", "empty");
    size_bad("-1", "negative");
    size_bad("-64M", "negative");
    size_bad("18446744073709551616", "too large");
    size_bad("16777216T", "too large");
    size_bad("99999999999999999999999G", "too large");
    size_bad("64Q", "unknown unit 'Q'");
    size_bad("64 M B", "unknown unit");
    size_bad("M", "no number");
    size_bad("1.1", "not a whole number of bytes");
    size_bad("0.1K", "not a whole number of bytes");
    size_bad("6 4M", "unknown unit");
    size_bad("1e3", "unknown unit");
}

static void dur_ok(const char *text, int64_t want_us)
{
    int64_t v = -5;
    char err[RT_ERR_LEN] = "";
    if (rt_parse_duration(text, &v, err) != RT_OK)
        fail_msg("'%s' rejected: %s", text, err);
    if (v != want_us)
        fail_msg("'%s' -> %lld us, want %lld", text, (long long)v, (long long)want_us);
}

static void dur_bad(const char *text, const char *why)
{
    int64_t v = -5;
    char err[RT_ERR_LEN] = "";
    assert_int_equal(rt_parse_duration(text, &v, err), RT_ERR_INVALID);
    assert_int_equal(v, -5);
    if (!strstr(err, why))
        fail_msg("'%s': error '%s' lacks '%s'", text, err, why);
}

static void test_durations(void **state)
{
    (void)state;
    dur_ok("500ms", 500000);
    dur_ok("30s", 30000000);
    dur_ok("30", 30000000);
    dur_ok("5m", 300000000);
    dur_ok("5min", 300000000);
    dur_ok("1h30m", 5400000000LL);
    dur_ok("1h 30m 15s", 5415000000LL);
    dur_ok("1.5s", 1500000);
    dur_ok("250us", 250);
    dur_ok("2d", 172800000000LL);
    dur_ok(" 0s ", 0);
    dur_ok("0.001ms", 1);
    dur_bad("", "empty");
    dur_bad("-5s", "negative");
    dur_bad("5 parsecs", "unknown unit 'parsecs'");
    dur_bad("0.0001ms", "not a whole number of microseconds");
    dur_bad("1h30", "missing unit");
    dur_bad("s", "expected a number");
    dur_bad("999999999999999999d", "too large");
    dur_bad("106751992d", "too large"); /* > INT64_MAX us */
    dur_ok("106751991d", 106751991LL * 86400000000LL);
    dur_bad("1m-5s", "expected a number");
}

static void test_format_roundtrip(void **state)
{
    (void)state;
    const uint64_t sizes[] = {0, 1, 1000, 1024, 1536, 25ull << 20, 3ull << 30, 5ull << 40,
                              (1ull << 40) * 1024, UINT64_MAX};
    for (size_t i = 0; i < RT_ARRAY_LEN(sizes); i++) {
        char buf[64];
        uint64_t back;
        rt_format_size(sizes[i], buf, sizeof buf);
        assert_int_equal(rt_parse_size(buf, &back, NULL), RT_OK);
        assert_true(back == sizes[i]);
    }
    char b[64];
    rt_format_size(64ull << 20, b, sizeof b);
    assert_string_equal(b, "64M");
    const int64_t durs[] = {0, 1, 999, 1000, 1500000, 60000000, 90000000, 5415000001LL,
                            86400000000LL * 3 + 7};
    for (size_t i = 0; i < RT_ARRAY_LEN(durs); i++) {
        int64_t back;
        rt_format_duration(durs[i], b, sizeof b);
        assert_int_equal(rt_parse_duration(b, &back, NULL), RT_OK);
        assert_true(back == durs[i]);
    }
    rt_format_duration(90000000, b, sizeof b);
    assert_string_equal(b, "1m30s");
    rt_format_duration(500000, b, sizeof b);
    assert_string_equal(b, "500ms");
}

static void test_scalars(void **state)
{
    (void)state;
    int64_t i;
    double d;
    bool b;
    assert_int_equal(rt_parse_int(" -42 ", &i, NULL), RT_OK);
    assert_int_equal(i, -42);
    assert_int_equal(rt_parse_int("9223372036854775807", &i, NULL), RT_OK);
    assert_int_equal(rt_parse_int("9223372036854775808", &i, NULL), RT_ERR_INVALID);
    assert_int_equal(rt_parse_int("12abc", &i, NULL), RT_ERR_INVALID);
    assert_int_equal(rt_parse_int("1.0", &i, NULL), RT_ERR_INVALID);
    assert_int_equal(rt_parse_int("", &i, NULL), RT_ERR_INVALID);
    assert_int_equal(rt_parse_double("1e-4", &d, NULL), RT_OK);
    assert_true(d == 1e-4);
    assert_int_equal(rt_parse_double("nan", &d, NULL), RT_ERR_INVALID);
    assert_int_equal(rt_parse_double("inf", &d, NULL), RT_ERR_INVALID);
    assert_int_equal(rt_parse_double("1e999", &d, NULL), RT_ERR_INVALID);
    assert_int_equal(rt_parse_double("0.5x", &d, NULL), RT_ERR_INVALID);
    const char *yes[] = {"true", "YES", "on", "1", " True "};
    const char *no[] = {"false", "No", "OFF", "0"};
    for (size_t k = 0; k < RT_ARRAY_LEN(yes); k++) {
        assert_int_equal(rt_parse_bool(yes[k], &b, NULL), RT_OK);
        assert_true(b);
    }
    for (size_t k = 0; k < RT_ARRAY_LEN(no); k++) {
        assert_int_equal(rt_parse_bool(no[k], &b, NULL), RT_OK);
        assert_false(b);
    }
    assert_int_equal(rt_parse_bool("2", &b, NULL), RT_ERR_INVALID);
    assert_int_equal(rt_parse_bool("", &b, NULL), RT_ERR_INVALID);
}

static void test_lists(void **state)
{
    (void)state;
    rt_strlist l;
    char err[RT_ERR_LEN];
    assert_int_equal(rt_strlist_parse(" Store , DayOfWeek,Year ", &l, err), RT_OK);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.items[0], "Store");
    assert_string_equal(l.items[1], "DayOfWeek");
    assert_string_equal(l.items[2], "Year");
    assert_int_equal(rt_strlist_index(&l, "Year"), 2);
    assert_int_equal(rt_strlist_index(&l, "Month"), -1);
    rt_strlist_free(&l);
    assert_int_equal(rt_strlist_parse("   ", &l, err), RT_OK);
    assert_int_equal(l.n, 0);
    rt_strlist_free(&l);
    assert_int_equal(rt_strlist_parse("a,,b", &l, err), RT_ERR_INVALID);
    assert_string_equal(err, "item 2 is empty");
    assert_int_equal(rt_strlist_parse("a,b,", &l, err), RT_ERR_INVALID);
    assert_string_equal(err, "item 3 is empty");
    /* quoting: commas and spaces kept, escapes, an empty quoted argument */
    assert_int_equal(rt_strlist_parse("sh, -c, \"echo a, b; echo c\" , \"\", x\\;y, \"q\\\"\"", &l, err), RT_OK);
    assert_int_equal(l.n, 6);
    assert_string_equal(l.items[0], "sh");
    assert_string_equal(l.items[2], "echo a, b; echo c");
    assert_string_equal(l.items[3], "");
    assert_string_equal(l.items[4], "x;y");
    assert_string_equal(l.items[5], "q\"");
    rt_strlist_free(&l);
    /* what an INI comment leaves of `command = sh, -c, "echo a ; echo b"` */
    assert_int_equal(rt_strlist_parse("sh, -c, \"echo a", &l, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "item 3: the quote is not closed"));
    assert_int_equal(rt_strlist_parse("\"a\" b", &l, err), RT_ERR_INVALID);
    assert_string_equal(err, "item 1: text after the closing quote");
}

static void test_edit_distance(void **state)
{
    (void)state;
    assert_int_equal(rt_edit_distance("batch_size", "batch_size"), 0);
    assert_int_equal(rt_edit_distance("batch_sise", "batch_size"), 1);
    assert_int_equal(rt_edit_distance("epcohs", "epochs"), 1); /* transposition */
    assert_int_equal(rt_edit_distance("", "abc"), 3);
    assert_int_equal(rt_edit_distance("Epochs", "epochs"), 0); /* case-insensitive */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),      cmocka_unit_test(test_durations),
        cmocka_unit_test(test_format_roundtrip), cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_lists),      cmocka_unit_test(test_edit_distance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
