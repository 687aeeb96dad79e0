/* test_protocol.c — the control protocol is written once and kept so: the
 * message table is well formed, every message has a receiver on the side
 * it is sent to (the coordinator's and the agent's handler tables) and none
 * on the other, rt_msg_check accepts and refuses what it should, and
 * docs/protocol.md describes every message with its required fields and
 * every variable a rank receives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent.h"
#include "coord.h"
#include "rt_file.h"
#include "rt_proto.h"
#include "rt_rendezvous.h"
#include "rt_run.h"

static void test_table(void **state)
{
    (void)state;
    for (int m = 0; m < RT_MSG_COUNT; m++) {
        const rt_msg_info *i = &rt_msgs[m];
        assert_non_null(i->name);
        assert_true(i->dir == RT_TO_COORD || i->dir == RT_TO_AGENT);
        assert_int_equal(rt_msg_parse(i->name), m);
        for (int k = 0; k < m; k++)
            assert_string_not_equal(rt_msgs[k].name, i->name);
        /* "name:t name:t ...", t one of inbsao */
        for (const char *f = i->fields; *f;) {
            size_t n = strcspn(f, ":");
            assert_true(n > 0 && f[n] == ':' && strchr("inbsao", f[n + 1]) && f[n + 1]);
            f += n + 2;
            assert_true(*f == ' ' || *f == '\0');
            while (*f == ' ')
                f++;
        }
    }
    assert_int_equal(rt_msg_parse("teleport"), RT_MSG_COUNT);
    assert_int_equal(rt_msg_parse(NULL), RT_MSG_COUNT);
}

static void test_every_message_has_a_receiver(void **state)
{
    (void)state;
    for (int m = 0; m < RT_MSG_COUNT; m++) {
        bool to_coord = rt_msgs[m].dir == RT_TO_COORD;
        if (to_coord != (coord_handlers[m] != NULL))
            fail_msg("'%s': %s", rt_msgs[m].name,
                     to_coord ? "the coordinator has no handler for it"
                              : "the coordinator handles a message it is never sent");
        if (!to_coord != (agent_handlers[m] != NULL))
            fail_msg("'%s': %s", rt_msgs[m].name,
                     !to_coord ? "the agent has no handler for it"
                               : "the agent handles a message it is never sent");
    }
}

static rt_json *parse(const char *text)
{
    rt_json *j = NULL;
    char err[RT_ERR_LEN];
    assert_int_equal(rt_json_parse(text, strlen(text), &j, err), RT_OK);
    return j;
}

static void check_refused(const char *text, rt_msg_dir dir, const char *why)
{
    char err[RT_ERR_LEN] = "";
    rt_json *j = parse(text);
    assert_int_equal(rt_msg_check(j, dir, err), RT_MSG_COUNT);
    if (!strstr(err, why))
        fail_msg("%s: error '%s' does not say '%s'", text, err, why);
    rt_json_free(j);
}

static void test_check(void **state)
{
    (void)state;
    char err[RT_ERR_LEN];
    rt_json *j = parse("{\"type\":\"started\",\"job\":1,\"attempt\":2,\"rank\":0,\"pid\":77,"
                       "\"extra\":\"ignored\"}");
    assert_int_equal(rt_msg_check(j, RT_TO_COORD, err), RT_MSG_STARTED);
    rt_json_free(j);
    check_refused("{\"type\":\"started\",\"job\":1,\"attempt\":2,\"rank\":0}", RT_TO_COORD,
                  "'started' without an integer \"pid\"");
    check_refused("{\"type\":\"started\",\"job\":1,\"attempt\":2.5,\"rank\":0,\"pid\":1}",
                  RT_TO_COORD, "integer \"attempt\"");
    check_refused("{\"type\":\"started\",\"job\":\"1\",\"attempt\":2,\"rank\":0,\"pid\":1}",
                  RT_TO_COORD, "integer \"job\"");
    check_refused("{\"type\":\"abort\",\"job\":1,\"attempt\":1,\"reason\":\"x\"}", RT_TO_COORD,
                  "unknown message type 'abort'"); /* right message, wrong direction */
    check_refused("{\"type\":\"teleport\"}", RT_TO_AGENT, "unknown message type 'teleport'");
    check_refused("{\"job\":1}", RT_TO_AGENT, "unknown message type '(none)'");
    check_refused("{\"type\":\"log_data\",\"req\":1,\"rank\":0,\"eof\":1}", RT_TO_COORD,
                  "a boolean \"eof\"");
    check_refused("{\"type\":\"prepare\",\"job\":1,\"attempt\":1,\"size\":2,\"ranks\":{}}",
                  RT_TO_AGENT, "an array \"ranks\"");
}

/* docs/protocol.md: a "#### `name`" section per message naming each of
 * its required fields, and every RT_ENV_ variable. */
/* One table of job states: names round-trip, the terminal ones are the
 * last three, the scheduler's enum is the same numbers. */
static void test_job_states(void **state)
{
    (void)state;
    for (int s = 0; s < RT_JS_COUNT; s++) {
        assert_int_equal(rt_job_state_parse(rt_job_state_name(s)), s);
        assert_int_equal(rt_job_state_terminal(s), s >= RT_JS_SUCCEEDED);
        assert_non_null(strstr(rt_job_state_list(), rt_job_state_name(s)));
    }
    assert_int_equal(rt_job_state_parse("done"), -1);
    assert_string_equal(rt_job_state_name(RT_JS_COUNT), "?");
    assert_false(rt_job_state_terminal(-1));
    assert_string_equal(rt_job_state_name(RT_JS_RESTARTING), "restarting");
}

static void test_documented(void **state)
{
    (void)state;
    char *doc = NULL;
    size_t len = 0;
    char err[RT_ERR_LEN];
    assert_int_equal(rt_read_file(RT_DOCS_DIR "/protocol.md", 1 << 20, &doc, &len, err), RT_OK);
    for (int m = 0; m < RT_MSG_COUNT; m++) {
        char head[64];
        snprintf(head, sizeof head, "#### `%s`\n", rt_msgs[m].name);
        const char *sec = strstr(doc, head);
        if (!sec)
            fail_msg("docs/protocol.md has no section %s", head);
        const char *end = strstr(sec + strlen(head), "\n#");
        size_t slen = end ? (size_t)(end - sec) : strlen(sec);
        for (const char *f = rt_msgs[m].fields; *f;) {
            size_t n = strcspn(f, ":");
            char want[64];
            snprintf(want, sizeof want, "`%.*s`", (int)n, f);
            char *s = strndup(sec, slen);
            if (!strstr(s, want))
                fail_msg("docs/protocol.md: the section of '%s' does not name its field %s",
                         rt_msgs[m].name, want);
            free(s);
            f += n + 2;
            while (*f == ' ')
                f++;
        }
    }
    const char *env[] = {RT_ENV_RANK,       RT_ENV_SIZE,         RT_ENV_LOCAL_RANK,
                         RT_ENV_LOCAL_SIZE, RT_ENV_CROSS_RANK,   RT_ENV_CROSS_SIZE,
                         RT_ENV_JOB_ID,     RT_ENV_ATTEMPT,      RT_ENV_RENDEZVOUS_FILE,
                         RT_ENV_LISTEN_FD,  RT_ENV_CONTROL_FD,   RT_ENV_WORK_DIR,
                         RT_ENV_LIBRARY,    RT_ENV_MACHINE_RANKS};
    for (size_t i = 0; i < sizeof env / sizeof *env; i++) {
        char want[64];
        snprintf(want, sizeof want, "`%s`", env[i]);
        if (!strstr(doc, want))
            fail_msg("docs/protocol.md does not describe %s", want);
    }
    free(doc);
}

/* The rendezvous file: what the agent formats the rank parses back; the
 * defaults where the start message said nothing; what is not one rank's
 * place is refused, naming the field. */
static void test_rendezvous_file(void **state)
{
    (void)state;
    rt_rendezvous r, back;
    rt_rendezvous_defaults(&r);
    char *peers[3] = {"10.0.0.1:4000", "10.0.0.2:4001", "[fd00::3]:4002"};
    r.job = 42;
    r.attempt = 3;
    r.rank = 2;
    r.size = 3;
    r.local_rank = 0;
    r.local_size = 1;
    r.cross_rank = 2;
    r.cross_size = 3;
    r.peers = peers;
    memset(r.key, 'a', 64);
    r.key[64] = '\0';
    snprintf(r.run.transport, sizeof r.run.transport, "rdma");
    r.run.sockets = 4;
    r.run.collective_timeout_ms = 1234;
    r.run.encrypt = true;
    r.run.integrity = false;
    r.run.hierarchical = false;
    size_t len = 0;
    char *text = rt_rendezvous_format(&r, &len);
    char err[RT_ERR_LEN];
    assert_non_null(text);
    assert_int_equal(rt_rendezvous_parse(text, len, &back, err), RT_OK);
    assert_true(back.job == 42 && back.attempt == 3 && back.rank == 2 && back.size == 3 &&
                back.cross_rank == 2 && back.cross_size == 3 && back.local_size == 1);
    for (int i = 0; i < 3; i++)
        assert_string_equal(back.peers[i], peers[i]);
    assert_string_equal(back.key, r.key);
    assert_string_equal(back.run.transport, "rdma");
    assert_true(back.run.sockets == 4 && back.run.collective_timeout_ms == 1234 &&
                back.run.encrypt && !back.run.integrity && !back.run.hierarchical);
    rt_rendezvous_free(&back);
    free(text);
    /* only the place and the key: the rest is the defaults, written once */
#define BARE                                                                            \
    "{\"job\":1,\"attempt\":1,\"rank\":0,\"size\":1,\"local_rank\":0,\"local_size\":1," \
    "\"cross_rank\":0,\"cross_size\":1,\"peers\":[\"a:1\"],\"key\":\"%s\"}"
    char buf[512];
    snprintf(buf, sizeof buf, BARE, r.key);
    assert_int_equal(rt_rendezvous_parse(buf, strlen(buf), &back, err), RT_OK);
    rt_rendezvous d;
    rt_rendezvous_defaults(&d);
    assert_memory_equal(&back.run, &d.run, sizeof d.run); /* the defaults, from one place */
    rt_rendezvous_free(&back);
    const struct {
        const char *from, *to, *says;
    } bad[] = {{"\"rank\":0", "\"rank\":1", "rank 1 and 1 peers for 1 ranks"},
               {"\"peers\":[\"a:1\"]", "\"peers\":[]", "0 peers"},
               {"\"size\":1", "\"size\":0", "no valid \"size\""},
               {"\"job\":1", "\"job\":\"1\"", "no valid \"job\""},
               {"\"key\"", "\"sockets\":17,\"key\"", "\"sockets\" is not a number from 1 to 16"},
               {"\"key\"", "\"transport\":\"udp\",\"key\"",
                "\"transport\" is not tcp, shm, rdma, nccl or auto"}};
    for (size_t i = 0; i < RT_ARRAY_LEN(bad); i++) {
        char b2[600];
        const char *at = strstr(buf, bad[i].from);
        assert_non_null(at);
        snprintf(b2, sizeof b2, "%.*s%s%s", (int)(at - buf), buf, bad[i].to,
                 at + strlen(bad[i].from));
        assert_int_equal(rt_rendezvous_parse(b2, strlen(b2), &back, err), RT_ERR_INVALID);
        rt_rendezvous_free(&back);
        if (!strstr(err, bad[i].says))
            fail_msg("'%s': %s", b2, err);
    }
    /* a Slurm step's path: every setting through RINGTRAIN_* and back, by the list */
    rt_run_settings a, b2;
    rt_run_defaults(&b2);
    a = r.run;
    a.collective_timeout_ms = 5000; /* the environment says whole seconds */
    rt_run_setenv(&a);
    assert_int_equal(rt_run_getenv(&b2, err), RT_OK);
    assert_memory_equal(&a, &b2, sizeof a);
    setenv("RINGTRAIN_ENCRYPT", "maybe", 1);
    assert_int_equal(rt_run_getenv(&b2, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "RINGTRAIN_ENCRYPT is 'maybe': 1 or 0"));
    for (size_t i = 0; i < rt_run_nfields; i++)
        unsetenv(rt_run_fields[i].env);
    snprintf(buf, sizeof buf, BARE, "abc");
    assert_int_equal(rt_rendezvous_parse(buf, strlen(buf), &back, err), RT_ERR_INVALID);
    rt_rendezvous_free(&back);
    assert_non_null(strstr(err, "no valid \"key\""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),      cmocka_unit_test(test_every_message_has_a_receiver),
        cmocka_unit_test(test_check),      cmocka_unit_test(test_documented),
        cmocka_unit_test(test_job_states), cmocka_unit_test(test_rendezvous_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
