/* cluster_harness.c — see cluster_harness.h. */
#include "cluster_harness.h"

#include "rt_addr.h"
#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rt_time.h"

const char *const CL_PROBE = RT_TEST_PROBE;

void cl_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* fork/exec argv with extra environment, output to `log` (or a pipe when
 * pipe_out is not NULL); dies with the test process. */
static pid_t spawn(const char *const *argv, const char *const *env, const char *log, int *pipe_out)
{
    int p[2] = {-1, -1};
    if (pipe_out && pipe2(p, O_CLOEXEC) != 0)
        return -1;
    pid_t parent = getpid();
    /* the child dies with the test, but only when the main thread forks it:
     * PDEATHSIG fires when the forking *thread* ends, and a daemon started by
     * a helper thread (a coordinator restart) must outlive that thread */
    bool main_thread = gettid() == parent;
    pid_t pid = fork();
    if (pid == 0) {
        if (main_thread)
            prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(126);
        int fd = pipe_out ? p[1] : open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        unsetenv("NOTIFY_SOCKET");
        unsetenv("WATCHDOG_USEC");
        unsetenv("JOURNAL_STREAM");
        for (int i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (pipe_out) {
        close(p[1]);
        *pipe_out = p[0];
        if (pid < 0)
            close(p[0]);
    }
    return pid;
}

bool cl_init(cluster *c, const char *tag)
{
    memset(c, 0, sizeof *c);
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(c->dir, sizeof c->dir, "%s/rt-%s-XXXXXX", tmp, tag);
    if (!mkdtemp(c->dir)) {
        fprintf(stderr, "cl_init: mkdtemp: %s\n", strerror(errno));
        return false;
    }
    snprintf(c->marker, sizeof c->marker, "rtmark-%s-%d-%lld", tag, (int)getpid(),
             (long long)(rt_now_ns() % 1000000000LL));
    char *out = NULL;
    const char *args[] = {"init-cluster", c->dir, "--force", NULL};
    int rc = cl_cli(c, &out, 60, args);
    if (rc != 0) {
        fprintf(stderr, "cl_init: init-cluster failed (%d): %s\n", rc, out ? out : "");
        free(out);
        return false;
    }
    free(out);
    int port[2];
    if (!rt_loopback_ports(2, port)) {
        fprintf(stderr, "cl_init: no two free ports on 127.0.0.1\n");
        return false;
    }
    c->cport = port[0];
    c->hport = port[1];
    snprintf(c->conn.host, sizeof c->conn.host, "127.0.0.1");
    snprintf(c->conn.server_name, sizeof c->conn.server_name, "127.0.0.1");
    c->conn.port = c->hport;
    snprintf(c->conn.ca, sizeof c->conn.ca, "%s/ca.crt", c->dir);
    c->conn.timeout_ms = 10000;
    char path[400], err[RT_ERR_LEN];
    /* the API's admin token for the tests' requests and CLI; the agents' */
    snprintf(path, sizeof path, "%s/admin.token", c->dir);
    rt_status st = rt_token_load(path, c->conn.token, err);
    snprintf(path, sizeof path, "%s/token", c->dir);
    if (st != RT_OK || rt_token_load(path, c->agent_token, err) != RT_OK) {
        fprintf(stderr, "cl_init: %s\n", err);
        return false;
    }
    return c->cport > 0 && c->hport > 0;
}

/* A daemon's DIR/STEM.conf and DIR/STEM.log (dir may lie in the same
 * cluster struct as d: built on the side, then copied). */
static void daemon_files(cl_daemon *d, const char *dir, const char *stem)
{
    char conf[sizeof d->conf], log[sizeof d->log];
    snprintf(conf, sizeof conf, "%s/%s.conf", dir, stem);
    snprintf(log, sizeof log, "%s/%s.log", dir, stem);
    memcpy(d->conf, conf, sizeof conf);
    memcpy(d->log, log, sizeof log);
}

bool cl_start_coord(cluster *c, const char *extra, const char *const *env)
{
    cl_daemon *d = &c->coord;
    if (!d->conf[0]) {
        daemon_files(d, c->dir, "coordinator");
        char text[4096];
        snprintf(text, sizeof text,
                 "[coordinator]\nlisten = 127.0.0.1:%d\nhttp_listen = 127.0.0.1:%d\n"
                 "state_db = state.db\nheartbeat_interval = 200ms\nheartbeat_timeout = 2s\n"
                 "%s[logging]\nlevel = debug\n",
                 c->cport, c->hport, extra ? extra : "");
        if (!tu_write_text(d->conf, text))
            return false;
    }
    const char *argv[] = {RT_TEST_COORD, "--config", d->conf, NULL};
    d->pid = spawn(argv, env, d->log, NULL);
    return d->pid > 0;
}

bool cl_start_agent(cluster *c, int i, const char *name, const char *host_id, int slots,
                    const char *const *env)
{
    if (i >= CL_MAX_AGENTS)
        return false;
    cl_daemon *d = &c->agent[i];
    if (i >= c->nagents)
        c->nagents = i + 1;
    char stem[80];
    snprintf(stem, sizeof stem, "agent-%s", name);
    daemon_files(d, c->dir, stem);
    char text[2048];
    snprintf(text, sizeof text,
             "[agent]\ncoordinator = 127.0.0.1:%d\nname = %s\nhost_id = %s\n"
             "data_address = 127.0.0.1\nslots = %d\nwork_dir = work-%s\nlog_dir = logs-%s\n"
             "reconnect_max = 300ms\nkill_grace = 1s\nallow_root_jobs = true\n%s"
             "[logging]\nlevel = debug\n",
             c->cport, name, host_id, slots, name, name, c->agent_extra ? c->agent_extra : "");
    if (!tu_write_text(d->conf, text))
        return false;
    const char *argv[] = {RT_TEST_AGENT, "--config", d->conf, NULL};
    d->pid = spawn(argv, env, d->log, NULL);
    return d->pid > 0;
}

int cl_stop(cl_daemon *d, int sig)
{
    if (d->pid <= 0)
        return 0;
    kill(d->pid, sig);
    int st = 0;
    for (int i = 0; i < 200; i++) {
        if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
            d->pid = 0;
            return st;
        }
        cl_sleep_ms(50);
    }
    fprintf(stderr, "cl_stop: %s did not stop within 10 s of signal %d; killing it\n", d->conf,
            sig);
    kill(d->pid, SIGKILL);
    waitpid(d->pid, &st, 0);
    d->pid = 0;
    return -1;
}

rt_json *cl_get(cluster *c, const char *path)
{
    http_resp r = {0};
    char err[RT_ERR_LEN];
    if (http_request(&c->conn, "GET", path, NULL, &r, err) != RT_OK) {
        fprintf(stderr, "GET %s: %s\n", path, err);
        return NULL;
    }
    rt_json *j = NULL;
    if (r.status != 200 || rt_json_parse(r.body, r.len, &j, err) != RT_OK) {
        fprintf(stderr, "GET %s: status %d: %.300s\n", path, r.status, r.body ? r.body : "");
        j = NULL;
    }
    free(r.body);
    return j;
}

char *cl_exec_body(const char *const *args)
{
    static const cli_cmd exec = {.name = "exec",
                                 .flags = CLI_EXEC_FLAGS,
                                 .rest = true,
                                 .rest_required = true,
                                 .connects = true};
    int argc = 0;
    while (args[argc])
        argc++;
    char **argv = calloc((size_t)argc + 1, sizeof *argv);
    if (!argv)
        return NULL;
    for (int i = 0; i < argc; i++)
        argv[i] = (char *)args[i];
    cli_args a;
    char *body = NULL;
    if (cli_parse(&exec, argc, argv, &a) != 0 || cli_job_body_from_exec(&a, &body, NULL) != 0)
        body = NULL;
    cli_args_free(&a);
    free(argv);
    return body;
}

int64_t cl_submit(cluster *c, const char *body)
{
    http_resp r = {0};
    char err[RT_ERR_LEN];
    if (http_request(&c->conn, "POST", "/v1/jobs", body, &r, err) != RT_OK) {
        fprintf(stderr, "POST /v1/jobs: %s\n", err);
        return -1;
    }
    rt_json *j = NULL;
    int64_t id = -1;
    if (r.status / 100 != 2 || rt_json_parse(r.body, r.len, &j, err) != RT_OK ||
        !rt_json_get_int(j, "id", &id))
        fprintf(stderr, "POST /v1/jobs: status %d: %.300s\n", r.status, r.body ? r.body : "");
    rt_json_free(j);
    free(r.body);
    return id;
}

bool cl_wait_agents_up(cluster *c, int n, int timeout_ms)
{
    int64_t end = rt_now_ns() + (int64_t)timeout_ms * 1000000;
    int up = 0;
    while (rt_now_ns() < end) {
        http_resp r = {0};
        char err[RT_ERR_LEN];
        rt_json *j = NULL;
        bool answered = false;
        up = 0;
        if (http_request(&c->conn, "GET", "/v1/nodes", NULL, &r, err) == RT_OK &&
            r.status == 200 && rt_json_parse(r.body, r.len, &j, err) == RT_OK) {
            answered = true;
            const rt_json *nodes = rt_json_get(j, "nodes");
            for (size_t i = 0; i < rt_json_len(nodes); i++)
                up += !strcmp(rt_json_str(rt_json_get(rt_json_at(nodes, i), "state"), ""), "up");
        }
        rt_json_free(j);
        free(r.body);
        if (answered && up >= n)
            return true;
        cl_sleep_ms(100);
    }
    fprintf(stderr, "cl_wait_agents_up: %d of %d agents up after %d ms\n", up, n, timeout_ms);
    return false;
}

const char *cl_job_state(const rt_json *doc)
{
    return rt_json_str(rt_json_get(rt_json_get(doc, "job"), "state"), "");
}

rt_json *cl_wait_job(cluster *c, int64_t id, const char *state, int timeout_ms)
{
    int64_t end = rt_now_ns() + (int64_t)timeout_ms * 1000000;
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    char last[64] = "?";
    while (rt_now_ns() < end) {
        rt_json *j = cl_get(c, path);
        if (j) {
            const char *s = cl_job_state(j);
            snprintf(last, sizeof last, "%s", s);
            bool terminal = !strcmp(s, "succeeded") || !strcmp(s, "failed") ||
                            !strcmp(s, "cancelled");
            if (state ? !strcmp(s, state) : terminal)
                return j;
            rt_json_free(j);
        }
        cl_sleep_ms(100);
    }
    fprintf(stderr, "cl_wait_job: job %lld still '%s' after %d ms (wanted %s)\n", (long long)id,
            last, timeout_ms, state ? state : "a final state");
    return NULL;
}

const char *cl_agent_exe(void) { return RT_TEST_AGENT; }

static int cli_run(cluster *c, char **out, int timeout_s, int sig, int sig_after_ms, int stall_ms,
                   const char *const *args);

int cl_cli(cluster *c, char **out, int timeout_s, const char *const *args)
{
    return cli_run(c, out, timeout_s, 0, -1, 0, args);
}

int64_t cl_submit_file(cluster *c, const char *ini)
{
    char *out = NULL;
    const char *args[] = {"submit", ini, NULL};
    long long id = -1;
    const int rc = cl_cli(c, &out, 30, args);
    const char *p = out ? strstr(out, "submitted job ") : NULL;
    if (rc != 0 || !p || sscanf(p, "submitted job %lld", &id) != 1) {
        fprintf(stderr, "submit %s: exit %d: %s\n", ini, rc, out ? out : "");
        id = -1;
    }
    free(out);
    return id;
}

int cl_cli_sigint(cluster *c, char **out, int timeout_s, int sigint_after_ms, const char *const *args)
{
    return cli_run(c, out, timeout_s, SIGINT, sigint_after_ms, 0, args);
}

int cl_cli_signal(cluster *c, char **out, int timeout_s, int sig, int after_ms,
                  const char *const *args)
{
    return cli_run(c, out, timeout_s, sig, after_ms, 0, args);
}

int cl_cli_stalled(cluster *c, char **out, int timeout_s, int stall_ms, const char *const *args)
{
    return cli_run(c, out, timeout_s, 0, -1, stall_ms, args);
}

static int cli_run(cluster *c, char **out, int timeout_s, int sig, int sig_after_ms, int stall_ms,
                   const char *const *args)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = RT_TEST_CLI;
    for (int i = 0; args[i] && n < 63; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    static char e1[320], e2[320], e3[320];
    snprintf(e1, sizeof e1, "RINGTRAIN_COORDINATOR=127.0.0.1:%d", c->hport);
    snprintf(e2, sizeof e2, "RINGTRAIN_CA=%s/ca.crt", c->dir);
    snprintf(e3, sizeof e3, "RINGTRAIN_TOKEN_FILE=%s/admin.token", c->dir);
    const char *env[] = {e1, e2, e3, "RINGTRAIN_CLI_CONFIG=/nonexistent/cli.conf", NULL};
    int fd = -1;
    pid_t pid = spawn(argv, env, NULL, &fd);
    if (pid < 0)
        return -1;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    const int64_t start = rt_now_ns(), end = start + (int64_t)timeout_s * 1000000000LL;
    bool timed_out = false;
    for (;;) {
        int64_t left_ms = (end - rt_now_ns()) / 1000000;
        if (left_ms <= 0) {
            timed_out = true;
            break;
        }
        if (sig_after_ms >= 0 && rt_now_ns() - start >= (int64_t)sig_after_ms * 1000000) {
            kill(pid, sig); /* Ctrl-C, `timeout`, a closed terminal */
            sig_after_ms = -1;
        }
        if (rt_now_ns() - start < (int64_t)stall_ms * 1000000) { /* its output left unread */
            cl_sleep_ms(50);
            continue;
        }
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, (int)(left_ms > 100 ? 100 : left_ms)) <= 0)
            continue;
        if (len + 1024 > cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    int st = 0;
    if (timed_out) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        fprintf(stderr, "cl_cli: `ringtrain %s ...` timed out after %d s; output so far:\n%s\n",
                args[0], timeout_s, buf);
        *out = buf;
        return -1;
    }
    waitpid(pid, &st, 0);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int cl_count_marker(const cluster *c)
{
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[300], cmd[8192];
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            continue;
        ssize_t r = read(fd, cmd, sizeof cmd - 1);
        close(fd);
        if (r <= 0)
            continue; /* zombies and kernel threads have no command line */
        for (ssize_t i = 0; i < r; i++)
            if (cmd[i] == '\0')
                cmd[i] = ' ';
        cmd[r] = '\0';
        if (strstr(cmd, c->marker))
            n++;
    }
    closedir(d);
    return n;
}

int cl_wait_no_marker(const cluster *c, int timeout_ms)
{
    int64_t end = rt_now_ns() + (int64_t)timeout_ms * 1000000;
    int n;
    while ((n = cl_count_marker(c)) > 0 && rt_now_ns() < end)
        cl_sleep_ms(50);
    return n;
}

static void dump_tail(const char *path, int lines)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    size_t start = n;
    for (int k = 0; start > 0 && k <= lines; start--)
        if (buf[start - 1] == '\n')
            k++;
    fprintf(stderr, "---- %s (last %d lines) ----\n%s\n", path, lines, buf + start);
}

static int rm_one(const char *p, const struct stat *s, int f, struct FTW *w)
{
    (void)s, (void)f, (void)w;
    return remove(p);
}

/* A sanitizer's report in a daemon's log. */
static bool sanitizer_report(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, "ERROR: AddressSanitizer") || strstr(line, "ERROR: LeakSanitizer") ||
                strstr(line, "runtime error:");
    fclose(f);
    return found;
}

int cl_fixture_setup(void **state)
{
    cl_fixture *f = calloc(1, sizeof *f);
    *state = f;
    return f ? 0 : -1;
}

int cl_fixture_teardown(void **state)
{
    cl_fixture *f = *state;
    bool ok = cl_destroy(&f->c, f->failed);
    free(f);
    return ok ? 0 : -1;
}

bool cl_destroy(cluster *c, bool dump)
{
    bool ok = true;
    cl_daemon *all[CL_MAX_AGENTS + 1];
    int n = 0;
    for (int i = 0; i < c->nagents; i++)
        all[n++] = &c->agent[i];
    all[n++] = &c->coord;
    for (int i = 0; i < n; i++) {
        bool running = all[i]->pid > 0;
        int st = cl_stop(all[i], SIGTERM);
        if (running && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
            fprintf(stderr, "cl_destroy: %s did not stop cleanly on SIGTERM (status %#x)\n",
                    all[i]->conf, st);
            ok = false;
        }
        if (all[i]->log[0] && sanitizer_report(all[i]->log)) {
            fprintf(stderr, "cl_destroy: sanitizer report in %s\n", all[i]->log);
            ok = false;
        }
    }
    if (dump || !ok) {
        dump_tail(c->coord.log, 40);
        for (int i = 0; i < c->nagents; i++)
            dump_tail(c->agent[i].log, 25);
        fprintf(stderr, "cluster files kept in %s\n", c->dir);
    } else if (getenv("RT_TEST_KEEP")) {
        fprintf(stderr, "cluster files kept in %s (RT_TEST_KEEP)\n", c->dir);
    } else if (c->dir[0]) {
        nftw(c->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    }
    return ok;
}

int64_t cl_metric(cluster *c, const char *name)
{
    http_resp r = {0};
    char err[RT_ERR_LEN], key[128];
    int64_t v = -1;
    snprintf(key, sizeof key, "\n%s ", name);
    if (http_request(&c->conn, "GET", "/metrics", NULL, &r, err) == RT_OK && r.body) {
        const char *p = strstr(r.body, key);
        if (p)
            v = strtoll(p + strlen(key), NULL, 10);
    }
    free(r.body);
    return v;
}

bool cl_one_agent(cluster *c, const char *tag, const char *agent_extra, int slots)
{
    if (!cl_init(c, tag)) /* which clears c */
        return false;
    c->agent_extra = agent_extra;
    return cl_start_coord(c, NULL, NULL) && cl_start_agent(c, 0, "a1", "A", slots, NULL) &&
           cl_wait_agents_up(c, 1, 20000);
}
