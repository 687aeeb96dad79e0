/* test_json.c — the control plane's JSON: parsing valid documents, exact
 * errors for each kind of invalid text, limits, and writer/parser round
 * trips including escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_json.h"

static rt_json *parse_ok(const char *text)
{
    rt_json *j = NULL;
    char err[RT_ERR_LEN] = "";
    if (rt_json_parse(text, strlen(text), &j, err) != RT_OK)
        fail_msg("'%s' rejected: %s", text, err);
    return j;
}

static void parse_bad(const char *text, const char *want)
{
    rt_json *j = NULL;
    char err[RT_ERR_LEN] = "";
    assert_int_equal(rt_json_parse(text, strlen(text), &j, err), RT_ERR_INVALID);
    assert_null(j);
    if (strcmp(err, want) != 0)
        fail_msg("'%s': error '%s', wanted '%s'", text, err, want);
}

static void test_parse(void **state)
{
    (void)state;
    rt_json *j = parse_ok(" {\"type\":\"hello\",\"slots\":4,\"caps\":{\"cuda\":true,\"gpus\":[0,1]},"
                          "\"ratio\":-1.5e2,\"none\":null,\"esc\":\"a\\\"b\\\\c\\n\\u00e9\\ud83d\\ude00\"} ");
    assert_int_equal(rt_json_type_of(j), RT_JSON_OBJECT);
    assert_string_equal(rt_json_get_str(j, "type"), "hello");
    int64_t v;
    assert_true(rt_json_get_int(j, "slots", &v));
    assert_int_equal(v, 4);
    const rt_json *caps = rt_json_get(j, "caps");
    assert_true(rt_json_bool(rt_json_get(caps, "cuda"), false));
    assert_int_equal(rt_json_len(rt_json_get(caps, "gpus")), 2);
    assert_true(rt_json_int(rt_json_at(rt_json_get(caps, "gpus"), 1), &v) && v == 1);
    assert_true(rt_json_num(rt_json_get(j, "ratio"), 0) == -150.0);
    assert_true(rt_json_int(rt_json_get(j, "ratio"), &v) && v == -150); /* whole */
    assert_int_equal(rt_json_type_of(rt_json_get(j, "none")), RT_JSON_NULL);
    assert_string_equal(rt_json_get_str(j, "esc"), "a\"b\\c\n\xc3\xa9\xf0\x9f\x98\x80");
    assert_null(rt_json_get(j, "missing"));
    assert_null(rt_json_get_str(j, "slots")); /* wrong type */
    rt_json_free(j);
    j = parse_ok("9007199254740993");
    assert_true(rt_json_int(j, &v) && v == 9007199254740993LL); /* exact beyond 2^53 */
    rt_json_free(j);
    j = parse_ok("1.5");
    assert_false(rt_json_int(j, &v));
    rt_json_free(j);
    j = parse_ok("[]");
    assert_int_equal(rt_json_len(j), 0);
    rt_json_free(j);
}

static void test_errors(void **state)
{
    (void)state;
    parse_bad("", "invalid JSON at byte 0: value expected");
    parse_bad("{\"a\":1,}", "invalid JSON at byte 7: object key expected");
    parse_bad("[1,2,]", "invalid JSON at byte 5: unexpected character");
    parse_bad("{\"a\" 1}", "invalid JSON at byte 5: ':' expected");
    parse_bad("{\"a\":1 \"b\":2}", "invalid JSON at byte 7: ',' or '}' expected");
    parse_bad("\"abc", "invalid JSON at byte 1: unterminated string");
    parse_bad("\"a\\qb\"", "invalid JSON at byte 3: unknown escape");
    parse_bad("\"\\ud800\"", "invalid JSON at byte 7: lone surrogate in \\u escape");
    parse_bad("\"\\u0000\"", "invalid JSON at byte 7: \\u0000 is not supported");
    parse_bad("\"\xff\"", "invalid JSON at byte 1: invalid UTF-8 in string");
    parse_bad("\"a\nb\"", "invalid JSON at byte 2: control character in string");
    parse_bad("01", "invalid JSON at byte 1: trailing characters after the value");
    parse_bad("1.", "invalid JSON at byte 2: digit expected after '.'");
    parse_bad("-", "invalid JSON at byte 1: bad number");
    parse_bad("1e999", "invalid JSON at byte 5: number out of range");
    parse_bad("tru", "invalid JSON at byte 0: unexpected character");
    parse_bad("{} {}", "invalid JSON at byte 3: trailing characters after the value");
    char deep[200];
    memset(deep, '[', 100);
    deep[100] = '\0';
    parse_bad(deep, "invalid JSON at byte 64: nested too deeply");
}

static void test_writer_roundtrip(void **state)
{
    (void)state;
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, "type", "exited");
    rt_jw_kint(&w, "code", -3);
    rt_jw_knum(&w, "loss", 0.125);
    rt_jw_kbool(&w, "ok", false);
    rt_jw_key(&w, "lines");
    rt_jw_arr(&w);
    rt_jw_str(&w, "tab\there \"quoted\" \x01 caf\xc3\xa9");
    rt_jw_str(&w, "bad \xff utf8");
    rt_jw_strn(&w, "nul\0byte", 8); /* a rank's raw output: what the parser takes */
    rt_jw_null(&w);
    rt_jw_arr_end(&w);
    rt_jw_key(&w, "nan");
    rt_jw_num(&w, 0.0 / 0.0);
    rt_jw_obj_end(&w);
    size_t len;
    char *text = rt_jw_take(&w, &len);
    assert_non_null(text);
    assert_string_equal(text,
                        "{\"type\":\"exited\",\"code\":-3,\"loss\":0.125,\"ok\":false,\"lines\":"
                        "[\"tab\\there \\\"quoted\\\" \\u0001 caf\xc3\xa9\",\"bad \\ufffd utf8\","
                        "\"nul\\ufffdbyte\",null],\"nan\":null}");
    rt_json *j = parse_ok(text);
    assert_string_equal(rt_json_str(rt_json_at(rt_json_get(j, "lines"), 0), NULL),
                        "tab\there \"quoted\" \x01 caf\xc3\xa9");
    /* write the tree back: the same except that the replacement character
     * escaped as \ufffd is now written as its UTF-8 bytes; from there on
     * writing and parsing are exact inverses */
    rt_jw_init(&w);
    rt_jw_value(&w, j);
    char *again = rt_jw_take(&w, NULL);
    assert_non_null(strstr(again, "bad \xef\xbf\xbd utf8"));
    rt_json *k = parse_ok(again);
    rt_jw_init(&w);
    rt_jw_value(&w, k);
    char *third = rt_jw_take(&w, NULL);
    assert_string_equal(third, again);
    rt_json_free(k);
    free(third);
    free(again);
    free(text);
    rt_json_free(j);
    /* misuse is reported, not silently wrong */
    rt_jw_init(&w);
    rt_jw_obj(&w);
    assert_null(rt_jw_take(&w, NULL)); /* unbalanced */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_writer_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
