/* test_cluster_logs.c — a job's output followed across a coordinator
 * restart, on a real cluster on loopback (issue 47.3): rank 1's log is
 * made unreadable (a link where its file was), so the agent answers every
 * request for it with an error, which the coordinator puts into the stream;
 * rank 0 prints numbered lines.  The coordinator is SIGKILLed while
 * `ringtrain logs --follow` reads, and started again; the follower
 * reconnects and resumes.  Every line of rank 0 must be there exactly once:
 * when the error line was counted as one of rank 0's (the rank was parsed
 * back from "[R] " text), the resumed stream skipped a real one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_harness.h"

#define LINES 60

typedef struct follower {
    cluster *c;
    int64_t id;
    char *out;
    int rc;
} follower;

static void *follow(void *arg)
{
    follower *f = arg;
    char ids[24];
    snprintf(ids, sizeof ids, "%lld", (long long)f->id);
    const char *args[] = {"logs", ids, "--follow", NULL};
    f->rc = cl_cli(f->c, &f->out, 120, args);
    return NULL;
}

static void test_follower_resumes_after_agent_error(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CL_CHECK(failed, cl_init(c, "logs"));
    CL_CHECK(failed, cl_start_coord(c, NULL, NULL));
    CL_CHECK(failed, cl_start_agent(c, 0, "a1", "A", 2, NULL));
    CL_CHECK(failed, cl_wait_agents_up(c, 1, 20000));
    char ini[600];
    snprintf(ini, sizeof ini, "%s/lines.ini", c->dir);
    FILE *f = fopen(ini, "w");
    CL_CHECK(failed, f != NULL);
    fprintf(f,
            "[job]\ntype = exec\nname = lines\nnp = 2\n"
            "command = /bin/sh, -c, "
            "if [ $RT_RANK = 1 ]; then l=%s/logs-a1/job-$RT_JOB_ID/attempt-$RT_ATTEMPT/rank-1.log; "
            "rm -f $l; ln -s /nonexistent $l; sleep 9; "
            "else sleep 0.5; for i in $(seq 1 %d); do echo line-$i; sleep 0.1; done; fi\n",
            c->dir, LINES);
    fclose(f);
    char *out = NULL;
    const char *sub[] = {"submit", ini, NULL};
    CL_CHECK(failed, cl_cli(c, &out, 30, sub) == 0);
    long long id = -1;
    const char *p = out ? strstr(out, "submitted job ") : NULL;
    CL_CHECK(failed, p && sscanf(p, "submitted job %lld", &id) == 1);
    free(out);
    rt_json *running = cl_wait_job(c, id, "running", 20000);
    CL_CHECK(failed, running != NULL);
    rt_json_free(running);
    cl_sleep_ms(700); /* rank 1's log is a link by now */
    follower fo = {c, id, NULL, -1};
    pthread_t th;
    pthread_create(&th, NULL, follow, &fo);
    cl_sleep_ms(2000); /* some of rank 0's lines, and the agent's error, are printed */
    cl_stop(&c->coord, SIGKILL);
    cl_sleep_ms(500);
    CL_CHECK(failed, cl_start_coord(c, NULL, NULL));
    pthread_join(th, NULL);
    fprintf(stderr, "the follower (rc %d):\n%s\n", fo.rc, fo.out ? fo.out : "");
    CL_CHECK(failed, fo.out && strstr(fo.out, "[agent A/a1: no output of rank 1 here"));
    CL_CHECK(failed, fo.out && strstr(fo.out, "reconnected"));
    for (int i = 1; i <= LINES; i++) { /* each of rank 0's lines once */
        char want[32];
        snprintf(want, sizeof want, "[0] line-%d\n", i);
        int n = 0;
        for (const char *q = fo.out; q && (q = strstr(q, want)); q += strlen(want))
            n++;
        if (n != 1)
            fprintf(stderr, "rank 0's line-%d was printed %d times\n", i, n);
        CL_CHECK(failed, n == 1);
    }
    free(fo.out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_follower_resumes_after_agent_error, cl_fixture_setup,
                                        cl_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
