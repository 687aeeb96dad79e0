/* test_slurm.c — a Slurm job step's layout from its environment
 * (transport/rt_slurm.c): node lists expanded as `scontrol show hostnames`
 * does, and Horovod's ranks for block and cyclic placements, uneven nodes,
 * and the errors that name what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_slurm.h"

static void expect_hosts(const char *spec, const char *want)
{
    char **h = NULL, err[RT_ERR_LEN];
    int n = 0;
    if (rt_slurm_hostlist(spec, &h, &n, err) != RT_OK)
        fail_msg("%s: %s", spec, err);
    char got[2048] = "";
    for (int i = 0; i < n; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "", h[i]);
    rt_slurm_hostlist_free(h, n);
    if (strcmp(got, want) != 0)
        fail_msg("%s: got '%s', want '%s'", spec, got, want);
}

static void expect_bad(const char *spec, const char *says)
{
    char **h = NULL, err[RT_ERR_LEN];
    int n = 0;
    assert_int_equal(rt_slurm_hostlist(spec, &h, &n, err), RT_ERR_INVALID);
    assert_null(h);
    if (!strstr(err, says))
        fail_msg("%s: '%s' does not say '%s'", spec, err, says);
}

static void test_hostlist(void **state)
{
    (void)state;
    expect_hosts("node01", "node01");
    expect_hosts("node[01-04,07]", "node01 node02 node03 node04 node07");
    expect_hosts("a[8-11]", "a8 a9 a10 a11");
    expect_hosts("gpu[1-2]x,login,n[009-011]", "gpu1x gpu2x login n009 n010 n011");
    expect_hosts("rack[1-2]-n[1-2]", "rack1-n1 rack1-n2 rack2-n1 rack2-n2");
    expect_hosts("h[3]", "h3");
    expect_bad("node[1-", "unbalanced brackets");
    expect_bad("node[]", "an empty or unclosed [...] group");
    expect_bad("node[4-2]", "backwards");
    expect_bad("node[a-b]", "not a number range");
    expect_bad("a,,b", "empty");
    expect_bad("", "empty");
}

static void set_step(const char *procid, const char *localid, const char *nodeid,
                     const char *ntasks, const char *list, const char *per)
{
    setenv("SLURM_PROCID", procid, 1);
    setenv("SLURM_LOCALID", localid, 1);
    setenv("SLURM_NODEID", nodeid, 1);
    setenv("SLURM_NTASKS", ntasks, 1);
    setenv("SLURM_STEP_NODELIST", list, 1);
    setenv("SLURM_STEP_TASKS_PER_NODE", per, 1);
    setenv("SLURM_JOB_ID", "4242", 1);
    setenv("SLURM_STEP_ID", "3", 1);
}

static void test_layout(void **state)
{
    (void)state;
    char err[RT_ERR_LEN];
    rt_slurm_step s;
    /* srun -N 2 -n 4, block: ranks 0,1 on n01 and 2,3 on n02; rank 3 */
    set_step("3", "1", "1", "4", "n[01-02]", "2(x2)");
    assert_true(rt_slurm_detected());
    assert_int_equal(rt_slurm_layout(&s, err), RT_OK);
    assert_int_equal(s.rank, 3);
    assert_int_equal(s.size, 4);
    assert_int_equal(s.local_rank, 1);
    assert_int_equal(s.local_size, 2);
    assert_int_equal(s.cross_rank, 1);
    assert_int_equal(s.cross_size, 2);
    assert_int_equal(s.nhosts, 2);
    assert_string_equal(s.hosts[0], "n01");
    assert_int_equal(s.job_id, 4242);
    assert_int_equal(s.step_id, 3);
    assert_true(s.port >= 20000 && s.port < 40000);
    const int port = s.port;
    rt_slurm_free(&s);
    /* cyclic: rank 1 is n02's first task; the same ports for every task */
    set_step("1", "0", "1", "4", "n[01-02]", "2(x2)");
    assert_int_equal(rt_slurm_layout(&s, err), RT_OK);
    assert_int_equal(s.local_rank, 0);
    assert_int_equal(s.cross_rank, 1);
    assert_int_equal(s.port, port);
    rt_slurm_free(&s);
    /* uneven: 3 tasks on n1, 1 on n2; local rank 2 exists on n1 only */
    set_step("2", "2", "0", "4", "n[1-2]", "3,1");
    assert_int_equal(rt_slurm_layout(&s, err), RT_OK);
    assert_int_equal(s.local_size, 3);
    assert_int_equal(s.cross_rank, 0);
    assert_int_equal(s.cross_size, 1);
    rt_slurm_free(&s);
    /* what is wrong is named */
    set_step("4", "0", "0", "4", "n[1-2]", "2(x2)");
    assert_int_equal(rt_slurm_layout(&s, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "SLURM_PROCID 4"));
    set_step("0", "0", "0", "4", "n[1-2]", "2,1");
    assert_int_equal(rt_slurm_layout(&s, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "adds up to 3"));
    set_step("0", "0", "0", "4", "n[1-2]", "2(x3)");
    assert_int_equal(rt_slurm_layout(&s, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "does not give tasks for 2 nodes"));
    unsetenv("SLURM_NTASKS");
    assert_false(rt_slurm_detected());
    assert_int_equal(rt_slurm_layout(&s, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "SLURM_NTASKS is unset"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostlist),
        cmocka_unit_test(test_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
