/* bench_launch.c — see bench_launch.h. */
#include "bench_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_comm.h"

#define MAX_HOSTS 64

static int per_host, nhost;
static int host_ns[MAX_HOSTS]; /* an open /run/netns/NAME per host */
static char *host_addr[MAX_HOSTS];

bool bl_hosts(int ranks_per_host, int nhosts, char *const *netns, char *const *addr)
{
    if (ranks_per_host < 1 || nhosts < 1 || nhosts > MAX_HOSTS) {
        fprintf(stderr, "hosts: %d hosts of %d ranks (1..%d hosts)\n", nhosts, ranks_per_host,
                MAX_HOSTS);
        return false;
    }
    for (int h = 0; h < nhosts; h++) {
        char path[256];
        snprintf(path, sizeof path, "/run/netns/%s", netns[h]);
        host_ns[h] = open(path, O_RDONLY | O_CLOEXEC);
        if (host_ns[h] < 0) {
            fprintf(stderr, "hosts: network namespace %s: %s\n", path, strerror(errno));
            return false;
        }
        host_addr[h] = addr[h];
    }
    per_host = ranks_per_host;
    nhost = nhosts;
    return true;
}

/* Enter rank r's host's namespace (nothing without hosts). */
static bool enter_host(int r)
{
    if (!nhost)
        return true;
    if (r / per_host >= nhost) {
        fprintf(stderr, "hosts: rank %d is past the last of %d hosts of %d\n", r, nhost, per_host);
        return false;
    }
    if (setns(host_ns[r / per_host], CLONE_NEWNET) != 0) {
        fprintf(stderr, "hosts: rank %d: setns: %s\n", r, strerror(errno));
        return false;
    }
    return true;
}

int bl_launch(int n, bl_rank_fn fn, void *arg, void *recs, size_t rec_size, int timeout_s)
{
    int fds[256];
    char *addrs[256];
    if (n < 1 || n > 256)
        return 1;
    int home = nhost ? open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC) : -1;
    if (nhost && home < 0) {
        fprintf(stderr, "hosts: /proc/self/ns/net: %s\n", strerror(errno));
        return 1;
    }
    for (int r = 0; r < n; r++) {
        char err[RT_ERR_LEN];
        /* a socket stays in the namespace it was made in */
        if (!enter_host(r))
            return 1;
        if (rt_listen_tcp(nhost ? host_addr[r / per_host] : "127.0.0.1", 0, &fds[r], &addrs[r],
                          err) != RT_OK) {
            fprintf(stderr, "listen: %s\n", err);
            return 1;
        }
    }
    if (nhost && setns(home, CLONE_NEWNET) != 0) {
        fprintf(stderr, "hosts: back to this namespace: %s\n", strerror(errno));
        return 1;
    }
    if (home >= 0)
        close(home);
    int pipes[256][2];
    pid_t pids[256];
    for (int r = 0; r < n; r++) {
        if (pipe(pipes[r]) != 0)
            return 1;
        pids[r] = fork();
        if (pids[r] == 0) {
            for (int k = 0; k < n; k++)
                if (k != r)
                    close(fds[k]);
            char *rec = calloc(1, rec_size);
            int code = enter_host(r) ? fn(r, n, fds[r], addrs, rec, arg) : 1;
            ssize_t w = write(pipes[r][1], rec, rec_size);
            (void)w;
            free(rec);
            _exit(code);
        }
        close(pipes[r][1]);
    }
    for (int r = 0; r < n; r++)
        close(fds[r]);
    int status = 0;
    for (int r = 0; r < n; r++) {
        struct pollfd p = {pipes[r][0], POLLIN, 0};
        size_t got = 0;
        while (got < rec_size && poll(&p, 1, timeout_s * 1000) > 0) {
            ssize_t k = read(pipes[r][0], (char *)recs + (size_t)r * rec_size + got, rec_size - got);
            if (k <= 0)
                break;
            got += (size_t)k;
        }
        if (got < rec_size) {
            fprintf(stderr, "rank %d did not report\n", r);
            status = 1;
        }
        close(pipes[r][0]);
    }
    for (int r = 0; r < n; r++) {
        int ws = 0;
        if (status)
            kill(pids[r], SIGKILL);
        waitpid(pids[r], &ws, 0);
        if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
            status = 1;
        free(addrs[r]);
    }
    return status;
}
