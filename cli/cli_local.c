/* cli_local.c — `ringtrain run JOB.INI [--np N] [--set ...] [--keep]` and
 * `ringtrain exec --local --np N -- PROGRAM ARGS...`: a whole cluster on this
 * machine for one job.  Fresh TLS material and tokens (init-cluster) and a
 * state database go into a temporary folder; ringtrain-coordinator and one
 * ringtrain-agent with N slots are started on 127.0.0.1 as child processes
 * (they die with this one); the job is submitted and followed exactly as on
 * a cluster; then both daemons are stopped.  The folder is removed unless
 * the job failed or --keep was given; its daemon logs are in it. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "rt_addr.h"
#include "rt_file.h"
#include "rt_json.h"
#include "rt_time.h"

/* The daemon beside this program (installed, or build/bin), or on PATH. */
static bool find_binary(const char *name, char *out, size_t len)
{
    char self[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        const char *dir = dirname(self);
        snprintf(out, len, "%s/%s", dir, name);
        if (access(out, X_OK) == 0)
            return true;
    }
    const char *path = getenv("PATH");
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path ? path : "/usr/local/bin:/usr/bin:/bin");
    for (char *save, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, len, "%s/%s", d, name);
        if (access(out, X_OK) == 0)
            return true;
    }
    return false;
}

static pid_t spawn_daemon(const char *bin, const char *conf, const char *logpath)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        int fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        unsetenv("NOTIFY_SOCKET");
        execl(bin, bin, "--config", conf, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void stop_daemon(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 200; i++) { /* 10 s for a clean stop */
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static bool write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* The coordinator's and agent's configuration in dir, on two fresh ports,
 * and both daemons started; *hport is the API's port. */
static int start_daemons(const char *dir, int64_t np, const char *coord_bin, const char *agent_bin,
                         int *hport, pid_t *coord, pid_t *agent)
{
    int port[2];
    if (!rt_loopback_ports(2, port)) {
        fprintf(stderr, "ringtrain: cannot find two free ports on 127.0.0.1: %s\n",
                strerror(errno));
        return 1;
    }
    char text[2048], ccfg[700], acfg[700], path[700];
    snprintf(ccfg, sizeof ccfg, "%s/coordinator.conf", dir);
    snprintf(text, sizeof text,
             "[coordinator]\nlisten = 127.0.0.1:%d\nhttp_listen = 127.0.0.1:%d\n"
             "cert = coordinator.crt\nkey = coordinator.key\ntoken_file = token\n"
             "admin_token_file = admin.token\nstate_db = state.db\nheartbeat_interval = 1s\n"
             "heartbeat_timeout = 10s\n",
             port[0], port[1]);
    bool ok = write_file(ccfg, text);
    snprintf(acfg, sizeof acfg, "%s/agent.conf", dir);
    snprintf(text, sizeof text,
             "[agent]\ncoordinator = 127.0.0.1:%d\nca = ca.crt\ntoken_file = token\n"
             "name = local\nhost_id = local\ndata_address = 127.0.0.1\nslots = %lld\n"
             "work_dir = work\nlog_dir = logs\nreconnect_max = 1s\n"
             /* the jobs of one user's own command: as privileged as it, root or not */
             "allow_root_jobs = true\n",
             port[0], (long long)np);
    ok = ok && write_file(acfg, text);
    if (!ok) {
        fprintf(stderr, "ringtrain: cannot write the configuration into %s\n", dir);
        return 1;
    }
    snprintf(path, sizeof path, "%s/coordinator.log", dir);
    *coord = spawn_daemon(coord_bin, ccfg, path);
    snprintf(path, sizeof path, "%s/agent.log", dir);
    *agent = spawn_daemon(agent_bin, acfg, path);
    *hport = port[1];
    if (*coord < 0 || *agent < 0) {
        fprintf(stderr, "ringtrain: cannot start the local daemons: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

/* Wait (20 s at most) for the agent to register: 1 when it has, 0 when
 * the time is up, -1 when the coordinator exited first (*coord reaped and
 * set to -1), -2 when the agent did (*agent reaped and set to -1), -3 when
 * a signal interrupted us. */
static int wait_until_up(cli_conn *c, pid_t *coord, pid_t *agent)
{
    char err[RT_ERR_LEN];
    for (int i = 0; i < 200; i++) {
        http_resp r;
        if (http_request(c, "GET", "/v1/nodes", NULL, &r, err) == RT_OK) {
            bool up = r.status == 200 && strstr(r.body, "\"state\":\"up\"");
            free(r.body);
            if (up)
                return 1;
        }
        if (waitpid(*coord, NULL, WNOHANG) == *coord) {
            *coord = -1;
            return -1;
        }
        if (waitpid(*agent, NULL, WNOHANG) == *agent) {
            *agent = -1;
            return -2;
        }
        if (cli_interrupted())
            return -3;
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* A daemon's last lines (at most 4 KiB of its log), indented, on stderr. */
static void print_tail(const char *dir, const char *name)
{
    char path[700], buf[4097];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    long at = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
    fseek(f, at > 4096 ? at - 4096 : 0, SEEK_SET);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = at > 4096 && strchr(buf, '\n') ? strchr(buf, '\n') + 1 : buf;
    fprintf(stderr, "--- the end of %s:\n%s", path, p);
    if (n > 0 && buf[n - 1] != '\n')
        fputc('\n', stderr);
}

int cli_local(const cli_args *a, bool is_exec)
{
    /* the job first: a bad job file costs nothing */
    bool keep = cli_switch(a, "--keep");
    char *body = NULL;
    int64_t np = 1;
    int rc =
        is_exec ? cli_job_body_from_exec(a, &body, &np) : cli_job_body_from_file(a, &body, &np);
    if (rc != 0)
        return rc;
    rt_json *bj = NULL;
    char err[RT_ERR_LEN];
    if (rt_json_parse(body, strlen(body), &bj, err) != RT_OK)
        bj = NULL;
    bool exec_job = !strcmp(rt_json_str(rt_json_get(bj, "type"), ""), "exec");
    rt_json_free(bj);

    char coord_bin[1100], agent_bin[1100];
    if (!find_binary("ringtrain-coordinator", coord_bin, sizeof coord_bin) ||
        !find_binary("ringtrain-agent", agent_bin, sizeof agent_bin)) {
        fprintf(stderr, "ringtrain: cannot find ringtrain-coordinator and ringtrain-agent next "
                        "to this program or on PATH\n");
        free(body);
        return 1;
    }
    /* from here a signal (Ctrl-C, `timeout`'s SIGTERM, a closed terminal)
     * stops the daemons, cancels the job and says where the folder is */
    cli_catch_interrupts();
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char dir[512];
    snprintf(dir, sizeof dir, "%s/ringtrain-run-XXXXXX", tmp);
    if (!mkdtemp(dir)) {
        fprintf(stderr, "ringtrain: cannot create a temporary folder in %s: %s\n", tmp,
                strerror(errno));
        free(body);
        return 1;
    }
    if (rt_make_cluster(dir, NULL, 0, true, err) != RT_OK) {
        fprintf(stderr, "ringtrain: %s\n", err);
        free(body);
        return 1;
    }
    cli_conn c = {0};
    snprintf(c.host, sizeof c.host, "127.0.0.1");
    snprintf(c.server_name, sizeof c.server_name, "127.0.0.1");
    snprintf(c.ca, sizeof c.ca, "%s/ca.crt", dir);
    c.timeout_ms = 15000;
    char path[700];
    snprintf(path, sizeof path, "%s/admin.token", dir);
    rc = rt_token_load(path, c.token, err) == RT_OK ? 0 : 1;
    if (rc != 0) {
        fprintf(stderr, "ringtrain: %s\n", err);
        free(body);
        return 1;
    }
    pid_t coord = -1, agent = -1;
    int up = -1;
    /* a port found free may be taken before the coordinator binds it (by
     * another program binding ports of its own): then it exits, and the
     * daemons start again on other ports; their logs append */
    for (int attempt = 0; attempt < 3 && up == -1 && rc == 0; attempt++) {
        stop_daemon(agent);
        stop_daemon(coord);
        rc = start_daemons(dir, np, coord_bin, agent_bin, &c.port, &coord, &agent);
        if (rc == 0)
            up = wait_until_up(&c, &coord, &agent);
    }
    bool ready = rc == 0 && up == 1;
    /* (where rc != 0, start_daemons has said why) */
    if (up == -3) {
        rc = 128 + cli_interrupted();
        fprintf(stderr, "ringtrain: %s while the local cluster started; no job submitted\n",
                strsignal(cli_interrupted()));
    } else if (!ready && rc == 0) {
        if (up == -1)
            print_tail(dir, "coordinator.log");
        else if (up == -2)
            print_tail(dir, "agent.log");
        fprintf(stderr,
                "ringtrain: the local %s did not come up (logs in %s: coordinator.log, "
                "agent.log)\n",
                up == -1   ? "coordinator"
                : up == -2 ? "agent"
                           : "coordinator and agent",
                dir);
    }
    if (!ready) {
        rc = rc ? rc : 1;
        keep = true;
    } else {
        rc = cli_submit_and_follow(&c, body, true, exec_job, false, true);
    }
    free(body);
    stop_daemon(agent);
    stop_daemon(coord);
    if (rc != 0 || keep) {
        fprintf(stderr, "ringtrain: the local cluster's files are in %s (logs/ has every rank's "
                        "output)\n", dir);
    } else {
        rt_remove_tree(dir);
    }
    return rc;
}
