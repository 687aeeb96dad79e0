/* test_cluster_fault.c — what a cluster does when its daemons die, each
 * case on a fresh cluster on loopback:
 *   - kill -9 of an agent mid-job: detected, the job restarts on the slots
 *     left (max_restarts = 1) and succeeds; when too few slots are left it
 *     fails with "needs N slots, M free ..." after queue_timeout;
 *   - kill -9 of the coordinator mid-job and a restart: the job, its events
 *     and the exits that happened meanwhile are all there, the outcome is
 *     recorded, the agents registered again;
 *   - sd_notify through a real NOTIFY_SOCKET: READY=1, STATUS=, WATCHDOG=1
 *     at half WATCHDOG_USEC, STOPPING=1, all from the daemon's own pid; and
 *     SIGTERM to an agent with a running worker stops the worker and reports
 *     its exit before the agent leaves;
 *   - 20 jobs over three agents whose last rank fails as it starts: every
 *     abort reaches ranks being spawned, and no agent stops itself;
 *   - 40 silent connections: past 16 per address closed at once, the
 *     registered agent unaffected;
 *   - per-agent tokens: bound to their name, no API credential, revoked at once;
 *   - two hosts of two ranks: the ranks build the hierarchical allreduce
 *     through rt_init_from_env (and keep one ring with --flat).
 * (Followers across restarts and the chaos run: test_cluster_chaos.c; the
 * agents' log files: test_cluster_logs.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster_harness.h"
#include "rt_file.h"
#include "rt_time.h"

#define CHECK(cond) CL_CHECK(failed, cond)

/* `ringtrain exec --np NP --max-restarts R --queue-timeout Q ... -- rt_probe
 * PROBE_ARGS --marker M`, built by the CLI's own code. */
static char *exec_body(const cluster *c, int np, int max_restarts, int queue_timeout_ms,
                       const char *const *probe_args)
{
    char n[16], r[16], q[32];
    snprintf(n, sizeof n, "%d", np);
    snprintf(r, sizeof r, "%d", max_restarts);
    snprintf(q, sizeof q, "%dms", queue_timeout_ms);
    const char *args[32] = {"--name",
                            "fault",
                            "--np",
                            n,
                            "--max-restarts",
                            r,
                            "--queue-timeout",
                            q,
                            "--transport",
                            "tcp",
                            "--collective-timeout",
                            "10s",
                            "--",
                            CL_PROBE};
    int k = 14;
    for (int i = 0; probe_args[i] && k < 28; i++)
        args[k++] = probe_args[i];
    args[k++] = "--marker";
    args[k++] = c->marker;
    args[k] = NULL;
    return cl_exec_body(args);
}

static const rt_json *placement_of(const rt_json *doc, int rank)
{
    const rt_json *pl = rt_json_get(doc, "placement");
    return rank < (int)rt_json_len(pl) ? rt_json_at(pl, (size_t)rank) : NULL;
}

/* ---- kill -9 of an agent ------------------------------------------------------------- */

static void test_agent_killed(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CHECK(cl_init(c, "agentkill"));
    CHECK(cl_start_coord(c, NULL, NULL));
    CHECK(cl_start_agent(c, 0, "a1", "A", 2, NULL) && cl_start_agent(c, 1, "a2", "A", 1, NULL) &&
          cl_start_agent(c, 2, "b1", "B", 2, NULL));
    CHECK(cl_wait_agents_up(c, 3, 20000));

    /* np = 3 lands on A/a1 (ranks 0, 1) and A/a2 (rank 2); attempt 1 sleeps */
    char *body =
        exec_body(c, 3, 1, 20000, (const char *[]){"--sleep", "60", "--sleep-attempt", "1", NULL});
    int64_t id = cl_submit(c, body);
    free(body);
    CHECK(id > 0);
    rt_json *doc = cl_wait_job(c, id, "running", 20000);
    CHECK(doc != NULL);
    CHECK(!strcmp(rt_json_get_str(placement_of(doc, 0), "agent"), "A/a1"));
    CHECK(!strcmp(rt_json_get_str(placement_of(doc, 2), "agent"), "A/a2"));
    rt_json_free(doc);
    cl_sleep_ms(300); /* the probes are past their allreduce, asleep */

    int64_t t0 = rt_now_ns();
    cl_stop(&c->agent[0], SIGKILL);
    /* detected, the attempt failed, restarted on A/a2 + B/b1, finished */
    doc = cl_wait_job(c, id, NULL, 30000);
    double secs = (double)(rt_now_ns() - t0) / 1e9;
    CHECK(doc != NULL);
    fprintf(stderr, "after kill -9 of A/a1: job %s in %.1f s\n", cl_job_state(doc), secs);
    CHECK(!strcmp(cl_job_state(doc), "succeeded"));
    int64_t attempt = 0, restarts = 0;
    rt_json_get_int(rt_json_get(doc, "job"), "attempt", &attempt);
    rt_json_get_int(rt_json_get(doc, "job"), "restarts", &restarts);
    CHECK(attempt == 2 && restarts == 1);
    const rt_json *atts = rt_json_get(doc, "attempts");
    CHECK(rt_json_len(atts) == 2);
    const char *why1 = rt_json_get_str(rt_json_at(atts, 0), "reason");
    fprintf(stderr, "attempt 1: %s\n", why1);
    CHECK(strstr(why1, "A/a1") && strstr(why1, "lost"));
    CHECK(!strcmp(rt_json_get_str(placement_of(doc, 0), "agent"), "A/a2"));
    CHECK(!strcmp(rt_json_get_str(placement_of(doc, 1), "agent"), "B/b1"));
    CHECK(!strcmp(rt_json_get_str(placement_of(doc, 2), "agent"), "B/b1"));
    rt_json_free(doc);
    CHECK(cl_wait_no_marker(c, 10000) == 0);

    /* now 3 slots are left (A/a2, B/b1); lose B/b1 mid-job: a restart
     * needs 3 slots, 1 is free, and after queue_timeout the job fails */
    body = exec_body(c, 3, 1, 2000, (const char *[]){"--sleep", "60", NULL});
    id = cl_submit(c, body);
    free(body);
    CHECK(id > 0);
    doc = cl_wait_job(c, id, "running", 20000);
    CHECK(doc != NULL);
    rt_json_free(doc);
    cl_sleep_ms(300);
    cl_stop(&c->agent[2], SIGKILL);
    doc = cl_wait_job(c, id, NULL, 30000);
    CHECK(doc != NULL);
    const char *reason = rt_json_get_str(rt_json_get(doc, "job"), "reason");
    fprintf(stderr, "too few slots: %s: %s\n", cl_job_state(doc), reason);
    CHECK(!strcmp(cl_job_state(doc), "failed"));
    CHECK(strstr(reason, "needs 3 slots, 1 free on 1 agent") != NULL);
    CHECK(strstr(reason, "attempt 1 had failed: agent B/b1") != NULL);
    atts = rt_json_get(doc, "attempts");
    CHECK(strstr(rt_json_get_str(rt_json_at(atts, 0), "reason"), "B/b1") != NULL);
    rt_json_free(doc);
    CHECK(cl_wait_no_marker(c, 10000) == 0);
    rt_json *nodes = cl_get(c, "/v1/nodes");
    int64_t used = -1;
    for (size_t i = 0; i < rt_json_len(rt_json_get(nodes, "nodes")); i++) {
        const rt_json *n = rt_json_at(rt_json_get(nodes, "nodes"), i);
        if (!strcmp(rt_json_get_str(n, "agent"), "A/a2"))
            rt_json_get_int(n, "used", &used);
    }
    rt_json_free(nodes);
    CHECK(used == 0); /* the surviving agent's slot is free again */
}

/* ---- kill -9 of the coordinator ------------------------------------------------------ */

static void test_coordinator_restart(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CHECK(cl_init(c, "coordkill"));
    CHECK(cl_start_coord(c, NULL, NULL));
    CHECK(cl_start_agent(c, 0, "a1", "A", 2, NULL) && cl_start_agent(c, 1, "b1", "B", 1, NULL));
    CHECK(cl_wait_agents_up(c, 2, 20000));

    /* the ranks finish 2 s in, while the coordinator is away */
    char *body = exec_body(c, 3, 0, 20000, (const char *[]){"--sleep", "2", NULL});
    int64_t id = cl_submit(c, body);
    free(body);
    CHECK(id > 0);
    rt_json *doc = cl_wait_job(c, id, "running", 20000);
    CHECK(doc != NULL);
    size_t nevents = rt_json_len(rt_json_get(doc, "events"));
    char *before = NULL;
    {
        rt_jw w;
        rt_jw_init(&w);
        rt_jw_value(&w, rt_json_get(doc, "events"));
        before = rt_jw_take(&w, NULL);
    }
    rt_json_free(doc);
    cl_stop(&c->coord, SIGKILL);
    CHECK(cl_wait_no_marker(c, 20000) == 0); /* they finish meanwhile */
    CHECK(cl_start_coord(c, NULL, NULL));
    CHECK(cl_wait_agents_up(c, 2, 20000));
    doc = cl_wait_job(c, id, NULL, 20000);
    CHECK(doc != NULL);
    fprintf(stderr, "after the coordinator restart: job %s (%s)\n", cl_job_state(doc),
            rt_json_get_str(rt_json_get(doc, "job"), "reason"));
    CHECK(!strcmp(cl_job_state(doc), "succeeded"));
    int64_t attempt = 0;
    rt_json_get_int(rt_json_get(doc, "job"), "attempt", &attempt);
    CHECK(attempt == 1);
    /* the events from before the crash are all there, in order, and more */
    const rt_json *ev = rt_json_get(doc, "events");
    CHECK(rt_json_len(ev) > nevents);
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_arr(&w);
    for (size_t i = 0; i < nevents; i++)
        rt_jw_value(&w, rt_json_at(ev, i));
    rt_jw_arr_end(&w);
    char *after = rt_jw_take(&w, NULL);
    CHECK(!strcmp(before, after));
    free(before);
    free(after);
    for (int r = 0; r < 3; r++) {
        int64_t code = -1;
        rt_json_get_int(placement_of(doc, r), "exit_code", &code);
        CHECK(code == 0 && !strcmp(rt_json_get_str(placement_of(doc, r), "state"), "exited"));
    }
    rt_json_free(doc);

    /* and the restarted coordinator runs new jobs on the same agents */
    char *out = NULL;
    const char *args[] = {"exec", "--np", "3", "--", CL_PROBE, "--marker", c->marker, NULL};
    CHECK(cl_cli(c, &out, 60, args) == 0);
    free(out);
}

/* ---- sd_notify and SIGTERM ----------------------------------------------------------- */

typedef struct note {
    pid_t pid;
    char text[512];
    int64_t t_ns;
} note;

/* Collect datagrams for ms milliseconds; sender pid from SCM_CREDENTIALS. */
static int collect(int fd, note *notes, int max, int n, int ms)
{
    int64_t end = rt_now_ns() + (int64_t)ms * 1000000;
    while (n < max && rt_now_ns() < end) {
        struct timeval tv = {0, 50000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        char buf[512];
        char ctl[CMSG_SPACE(sizeof(struct ucred))];
        struct iovec iov = {buf, sizeof buf - 1};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                            .msg_controllen = sizeof ctl};
        ssize_t r = recvmsg(fd, &mh, 0);
        if (r <= 0)
            continue;
        buf[r] = '\0';
        note *nt = &notes[n++];
        nt->pid = -1;
        nt->t_ns = rt_now_ns();
        snprintf(nt->text, sizeof nt->text, "%s", buf);
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_CREDENTIALS) {
                struct ucred uc;
                memcpy(&uc, CMSG_DATA(cm), sizeof uc);
                nt->pid = uc.pid;
            }
    }
    return n;
}

static int count_notes(const note *notes, int n, pid_t pid, const char *prefix)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += notes[i].pid == pid && strstr(notes[i].text, prefix) != NULL;
    return k;
}

static void test_sd_notify_and_sigterm(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CHECK(cl_init(c, "notify"));
    char sock[300], env_sock[320];
    snprintf(sock, sizeof sock, "%s/notify", c->dir);
    snprintf(env_sock, sizeof env_sock, "NOTIFY_SOCKET=%s", sock);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
    int one = 1;
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    CHECK(setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) == 0);
    /* a 2 s watchdog: WATCHDOG=1 is due every second */
    const char *env[] = {env_sock, "WATCHDOG_USEC=2000000", NULL};
    CHECK(cl_start_coord(c, NULL, env));
    CHECK(cl_start_agent(c, 0, "a1", "A", 1, env));
    CHECK(cl_wait_agents_up(c, 1, 20000));
    static note notes[512];
    int n = collect(fd, notes, 512, 0, 3500);
    pid_t cp = c->coord.pid, ap = c->agent[0].pid;
    for (int i = 0; i < n; i++)
        if (strncmp(notes[i].text, "WATCHDOG", 8) != 0)
            fprintf(stderr, "notify from %s: %s\n",
                    notes[i].pid == cp ? "coordinator" : notes[i].pid == ap ? "agent" : "?",
                    notes[i].text);
    for (int k = 0; k < 2; k++) {
        pid_t p = k ? ap : cp;
        CHECK(count_notes(notes, n, p, "READY=1") == 1);
        CHECK(count_notes(notes, n, p, "STATUS=") >= 1);
        int wd = count_notes(notes, n, p, "WATCHDOG=1");
        fprintf(stderr, "%s: %d WATCHDOG=1 in 3.5 s\n", k ? "agent" : "coordinator", wd);
        CHECK(wd >= 3 && wd <= 8);
        /* never more than the 2 s watchdog apart (and at most ~1.2 s) */
        int64_t last = 0;
        for (int i = 0; i < n; i++)
            if (notes[i].pid == p && strstr(notes[i].text, "WATCHDOG=1")) {
                if (last)
                    CHECK(notes[i].t_ns - last < 1400000000LL);
                last = notes[i].t_ns;
            }
    }
    CHECK(count_notes(notes, n, -1, "") == 0); /* every message came from a daemon */
    /* the agent's STATUS tracks its workers */
    char *body = exec_body(c, 1, 0, 20000, (const char *[]){"--sleep", "60", NULL});
    int64_t id = cl_submit(c, body);
    free(body);
    rt_json *doc = cl_wait_job(c, id, "running", 20000);
    CHECK(doc != NULL);
    rt_json_free(doc);
    n = collect(fd, notes, 512, 0, 500);
    CHECK(count_notes(notes, n, ap, "1 worker running") >= 1);

    /* SIGTERM: STOPPING=1, the worker is stopped and its exit reported, the
     * agent exits 0 well within its stop timeout */
    kill(ap, SIGTERM);
    int64_t t0 = rt_now_ns();
    int st = -1;
    while (waitpid(ap, &st, WNOHANG) == 0 && rt_now_ns() - t0 < 10000000000LL)
        cl_sleep_ms(20);
    double secs = (double)(rt_now_ns() - t0) / 1e9;
    c->agent[0].pid = 0;
    fprintf(stderr, "agent stopped by SIGTERM in %.2f s, status %d\n", secs, st);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(secs < 5);
    CHECK(cl_count_marker(c) == 0);
    n = collect(fd, notes, 512, 0, 300);
    CHECK(count_notes(notes, n, ap, "STOPPING=1") == 1);
    doc = cl_wait_job(c, id, NULL, 10000);
    CHECK(doc != NULL);
    const char *reason = rt_json_get_str(rt_json_get(doc, "job"), "reason");
    fprintf(stderr, "job after the agent's SIGTERM: %s: %s\n", cl_job_state(doc), reason);
    CHECK(!strcmp(cl_job_state(doc), "failed"));
    CHECK(strstr(reason, "signal 15") != NULL); /* the worker's exit, not a lost agent */
    rt_json_free(doc);

    int cst = cl_stop(&c->coord, SIGTERM);
    CHECK(WIFEXITED(cst) && WEXITSTATUS(cst) == 0);
    n = collect(fd, notes, 512, 0, 300);
    CHECK(count_notes(notes, n, cp, "STOPPING=1") == 1);
    close(fd);
}

/* A rank that cannot be started (its program is not on that node's PATH)
 * aborts the job while the other agents are still spawning theirs: the
 * abort's SIGTERM then reaches processes between fork and exec.  (Before
 * the agent reset signal handling in the child, such a signal ran the
 * agent's own handler, and healthy agents stopped themselves.) */
static void test_spawn_failure_agents_stay_up(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CHECK(cl_init(c, "spawnfail"));
    CHECK(cl_start_coord(c, NULL, NULL));
    char probe_dir[512], path_ok[700];
    snprintf(probe_dir, sizeof probe_dir, "%s", CL_PROBE);
    *strrchr(probe_dir, '/') = '\0';
    snprintf(path_ok, sizeof path_ok, "PATH=%s:/usr/bin:/bin", probe_dir);
    const char *with[] = {path_ok, NULL}, *without[] = {"PATH=/usr/bin:/bin", NULL};
    CHECK(cl_start_agent(c, 0, "a1", "A", 2, with) && cl_start_agent(c, 1, "b1", "B", 2, with) &&
          cl_start_agent(c, 2, "c1", "C", 2, without));
    CHECK(cl_wait_agents_up(c, 3, 20000));
    for (int rep = 0; rep < 20 && !*failed; rep++) {
        /* no environment from here: each agent's own PATH finds rt_probe, or not */
        char *body = cl_exec_body((const char *[]){
            "--name", "spawnfail", "--np", "5", "--max-restarts", "0", "--transport", "tcp",
            "--collective-timeout", "10s", "--no-default-env", "--", "rt_probe", "--sleep", "30",
            "--marker", c->marker, NULL});
        CHECK(body != NULL);
        int64_t id = cl_submit(c, body);
        free(body);
        CHECK(id > 0);
        rt_json *doc = cl_wait_job(c, id, NULL, 30000);
        CHECK(doc && !strcmp(cl_job_state(doc), "failed"));
        rt_json_free(doc);
        for (int a = 0; a < 3; a++)
            CHECK(kill(c->agent[a].pid, 0) == 0); /* still running */
    }
    CHECK(cl_wait_agents_up(c, 3, 5000));
    CHECK(cl_wait_no_marker(c, 20000) == 0);
}

/* 40 silent connections to the control port: past 16 from one address
 * they are closed at once; the registered agent keeps running jobs; once
 * the flood is gone a new agent registers. */
static void test_connection_flood(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CHECK(cl_one_agent(c, "flood", NULL, 1));
    enum { N = 40 };
    int fd[N];
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->cport)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    for (int i = 0; i < N; i++) {
        fd[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (fd[i] >= 0 && connect(fd[i], (struct sockaddr *)&sa, sizeof sa) != 0) {
            close(fd[i]);
            fd[i] = -1;
        }
        cl_sleep_ms(5);
    }
    cl_sleep_ms(500);
    int closed = 0;
    for (int i = 0; i < N; i++) {
        struct pollfd p = {fd[i], POLLIN, 0};
        char b;
        if (fd[i] < 0 || (poll(&p, 1, 0) == 1 && recv(fd[i], &b, 1, MSG_DONTWAIT) == 0))
            closed++;
    }
    fprintf(stderr, "%d of %d silent connections closed at once\n", closed, N);
    CHECK(closed >= N - 16);
    /* the registered agent is not held up by it */
    char *out = NULL;
    const char *args[] = {"exec", "--np", "1", "--", "sh", "-c", "echo still-working", NULL};
    CHECK(cl_cli(c, &out, 60, args) == 0 && strstr(out, "[0] still-working"));
    free(out);
    for (int i = 0; i < N; i++)
        if (fd[i] >= 0)
            close(fd[i]);
    CHECK(cl_start_agent(c, 1, "a2", "A", 1, NULL));
    CHECK(cl_wait_agents_up(c, 2, 20000));
}

/* exec given SIGTERM at any moment from its start exits 128 + 15 and
 * leaves no job running: one it created is cancelled (a signal while its
 * POST is answered is held until then); while it connects (here to a
 * stopped coordinator) it stops at once, saying nothing was sent. */
static void test_exec_signalled_while_submitting(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CHECK(cl_one_agent(c, "sigsubmit", NULL, 1));
    char *out = NULL;
    const char *ex[] = {"exec", "--np", "1", "--", "sh", "-c", "sleep 60", NULL};
    /* its handshake left unanswered; the signal well after the CLI's start
     * (0.4 s on this machine, most of it loading the CUDA libraries) */
    CHECK(kill(c->coord.pid, SIGSTOP) == 0);
    int rc = cl_cli_signal(c, &out, 30, SIGTERM, 3000, ex);
    kill(c->coord.pid, SIGCONT);
    if (rc != 128 + SIGTERM || !strstr(out, "while connecting to the coordinator"))
        fprintf(stderr, "exec signalled while connecting: rc %d: %s\n", rc, out);
    CHECK(rc == 128 + SIGTERM && strstr(out, "nothing was sent"));
    free(out);
    rt_json *jobs = cl_get(c, "/v1/jobs?limit=50");
    CHECK(jobs && rt_json_len(rt_json_get(jobs, "jobs")) == 0);
    rt_json_free(jobs);
    /* before, while and after it submits */
    const int after_ms[] = {0, 200, 350, 400, 450, 500, 550, 600, 800, 1500};
    for (size_t i = 0; i < sizeof after_ms / sizeof *after_ms; i++) {
        rc = cl_cli_signal(c, &out, 30, SIGTERM, after_ms[i], ex);
        if (rc != 128 + SIGTERM)
            fprintf(stderr, "exec signalled after %d ms: rc %d: %s\n", after_ms[i], rc, out);
        CHECK(rc == 128 + SIGTERM);
        free(out);
    }
    jobs = cl_get(c, "/v1/jobs?limit=50");
    const rt_json *list = rt_json_get(jobs, "jobs");
    CHECK(jobs != NULL);
    for (size_t i = 0; i < rt_json_len(list); i++) {
        int64_t id = 0;
        rt_json_get_int(rt_json_at(list, i), "id", &id);
        rt_json *d = cl_wait_job(c, id, NULL, 20000);
        const char *st = d ? cl_job_state(d) : "(no answer)";
        if (strcmp(st, "cancelled") != 0)
            fprintf(stderr, "job %lld: %s, not cancelled\n", (long long)id, st);
        CHECK(!strcmp(st, "cancelled"));
        rt_json_free(d);
    }
    rt_json_free(jobs);
}

/* Whether file holds text (waits up to ms for it to appear). */
static bool log_says(const char *file, const char *text, int ms)
{
    for (int t = 0; t <= ms; t += 100) {
        FILE *f = fopen(file, "r");
        char buf[65536];
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = '\0';
        if (strstr(buf, text))
            return true;
        cl_sleep_ms(100);
    }
    return false;
}

/* Per-agent tokens: an enrolled name needs its own token, which is bound to
 * that name, refused by the API, and when revoked drops the agent at once. */
static void test_agent_enrollment(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CHECK(cl_init(c, "enroll"));
    CHECK(cl_start_coord(c, NULL, NULL));
    CHECK(cl_wait_agents_up(c, 0, 20000)); /* the coordinator answers */
    char *out = NULL;
    const char *mk[] = {"token", "create", "a1", "--role", "agent", NULL};
    CHECK(cl_cli(c, &out, 30, mk) == 0);
    char *nl = out ? strchr(out, '\n') : NULL;
    if (nl)
        *nl = '\0';
    char tokfile[400];
    snprintf(tokfile, sizeof tokfile, "%s/a1.token", c->dir);
    FILE *f = fopen(tokfile, "w");
    fprintf(f, "%s\n", out ? out : "");
    fclose(f);
    chmod(tokfile, 0600);
    char secret[80];
    snprintf(secret, sizeof secret, "%s", out ? out : "");
    free(out);
    /* the shared agents' token no longer registers the name a1 */
    CHECK(cl_start_agent(c, 0, "a1", "A", 1, NULL));
    CHECK(log_says(c->agent[0].log, "must present its own token", 10000));
    cl_stop(&c->agent[0], SIGTERM);
    /* its own token does */
    c->agent_extra = "token_file = a1.token\n";
    CHECK(cl_start_agent(c, 0, "a1", "A", 1, NULL));
    CHECK(cl_wait_agents_up(c, 1, 20000));
    /* ... for the name a1 only */
    CHECK(cl_start_agent(c, 1, "b1", "B", 1, NULL));
    c->agent_extra = NULL;
    CHECK(log_says(c->agent[1].log, "made for another agent's name", 10000));
    cl_stop(&c->agent[1], SIGTERM);
    /* it is no API credential */
    cli_conn as_agent = c->conn;
    snprintf(as_agent.token, sizeof as_agent.token, "%s", secret);
    http_resp r = {0};
    char err[RT_ERR_LEN];
    CHECK(http_request(&as_agent, "GET", "/v1/nodes", NULL, &r, err) == RT_OK && r.status == 401);
    free(r.body);
    /* revoked: the agent is dropped at once and stays out */
    const char *rv[] = {"token", "revoke", "a1", NULL};
    CHECK(cl_cli(c, &out, 30, rv) == 0);
    free(out);
    bool down = false;
    for (int i = 0; i < 50 && !down; i++) {
        cl_sleep_ms(100);
        rt_json *n = cl_get(c, "/v1/nodes");
        down = !strcmp(rt_json_str(rt_json_get(rt_json_at(rt_json_get(n, "nodes"), 0), "state"), ""),
                       "down");
        rt_json_free(n);
    }
    CHECK(down);
    CHECK(log_says(c->agent[0].log, "wrong cluster token", 10000));
}

/* ---- two hosts of two ranks: the hierarchical allreduce --------------------------- */

/* The ranks find the grid through rt_init_from_env (rank 0 says so), their
 * allreduces are right, and `--flat` keeps the one ring. */
static void test_hierarchical_job(void **state)
{
    cl_fixture *fx = *state;
    bool *failed = &fx->failed;
    cluster *c = &fx->c;
    CHECK(cl_init(c, "hier"));
    CHECK(cl_start_coord(c, NULL, NULL));
    CHECK(cl_start_agent(c, 0, "a1", "A", 2, NULL) && cl_start_agent(c, 1, "b1", "B", 2, NULL));
    CHECK(cl_wait_agents_up(c, 2, 20000));
    for (int flat = 0; flat < 2; flat++) {
        const char *args[] = {"exec", "--np", "4", "--transport", "tcp", "--", CL_PROBE,
                              "--rounds", "3", "--marker", c->marker, NULL, NULL};
        if (flat) { /* the switch goes before the "--" */
            memmove(&args[6], &args[5], 7 * sizeof *args);
            args[5] = "--flat";
        }
        char *out = NULL;
        int rc = cl_cli(c, &out, 60, args);
        if (rc != 0 || !strstr(out, "[3] allreduce ok: sum 10"))
            fprintf(stderr, "exec%s output:\n%s\n", flat ? " --flat" : "", out ? out : "");
        CHECK(rc == 0);
        for (int r = 0; r < 4; r++) {
            char want[64];
            snprintf(want, sizeof want, "[%d] allreduce ok: sum 10", r);
            CHECK(strstr(out, want) != NULL);
        }
        bool hier = strstr(out, "hierarchical allreduce: 2 hosts x 2 ranks (shm within a host, "
                                "tcp across hosts)") != NULL;
        if (hier == (bool)flat)
            fprintf(stderr, "exec%s output:\n%s\n", flat ? " --flat" : "", out);
        CHECK(hier == !flat);
        free(out);
    }
    CHECK(cl_wait_no_marker(c, 10000) == 0);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]); /* e.g. test_agent_killed */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_agent_killed, cl_fixture_setup, cl_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_coordinator_restart, cl_fixture_setup,
                                        cl_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_sd_notify_and_sigterm, cl_fixture_setup,
                                        cl_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_spawn_failure_agents_stay_up, cl_fixture_setup,
                                        cl_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_connection_flood, cl_fixture_setup,
                                        cl_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_exec_signalled_while_submitting, cl_fixture_setup,
                                        cl_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_agent_enrollment, cl_fixture_setup,
                                        cl_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_hierarchical_job, cl_fixture_setup,
                                        cl_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
