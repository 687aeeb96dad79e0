/* bench_launch.c — see bench_launch.h. */
#include "bench_launch.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_comm.h"

int bl_launch(int n, bl_rank_fn fn, void *arg, void *recs, size_t rec_size, int timeout_s)
{
    int fds[256];
    char *addrs[256];
    if (n < 1 || n > 256)
        return 1;
    for (int r = 0; r < n; r++) {
        char err[RT_ERR_LEN];
        if (rt_listen_tcp("127.0.0.1", 0, &fds[r], &addrs[r], err) != RT_OK) {
            fprintf(stderr, "listen: %s\n", err);
            return 1;
        }
    }
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
            int code = fn(r, n, fds[r], addrs, rec, arg);
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
