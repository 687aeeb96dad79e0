/* tcp_ceiling — the physical ceiling the allreduce is measured against, in
 * the same run and on the same link:
 *
 *   tcp_ceiling --np N [--seconds S] [--chunk BYTES] [--json]
 *
 * Ring bandwidth: N processes on 127.0.0.1, each streaming to its right
 * neighbour while receiving from its left (the traffic pattern of a ring
 * allreduce, without framing or reduction), non-blocking sockets with
 * TCP_NODELAY and the kernel's buffer autotuning, from a buffer that stays
 * in cache.  Two I/O strategies (poll() before every call; or try first and
 * poll only when stuck, the allreduce's own) times three chunk sizes (bytes
 * per send/recv call: 256K, 1M, 4M, or --chunk) are run and the best is
 * reported: the ceiling is the most this link gave, not one setting of it.  Per-link bandwidth is the
 * slowest rank's received bytes per second.
 * Latency: ranks 0 and 1 ping-pong 8-byte messages with busy polling; the
 * half round trip is the median over 20,000 exchanges. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_launch.h"
#include "rt_addr.h"
#include "rt_comm.h"
#include "rt_time.h"

typedef struct cfg {
    double seconds;
    size_t chunk;
    bool poll_first; /* sleep in poll() before every call, or only when stuck */
} cfg;

typedef struct rec {
    int ok;
    double recv_gbps;
    double half_rtt_us;
} rec;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int connect_to(const char *addr)
{
    char host[64];
    int port = 0;
    if (rt_addr_parse(addr, false, host, sizeof host, &port, NULL) != RT_OK)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int tries = 0; tries < 500; tries++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            return tune(fd);
        close(fd);
        usleep(10000);
    }
    return -1;
}

static int accept_one(int lfd)
{
    struct pollfd p = {lfd, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0)
        return -1;
    return tune(accept(lfd, NULL, NULL));
}

static int rank_main(int r, int n, int lfd, char **addrs, void *vrec, void *arg)
{
    const cfg *c = arg;
    rec *out = vrec;
    /* ring: connect right, accept left (n = 1: nothing to measure) */
    if (n < 2)
        return 0;
    int right = -1, left = -1;
    if (r == 0) {
        right = connect_to(addrs[(r + 1) % n]);
        left = accept_one(lfd);
    } else {
        left = accept_one(lfd);
        right = connect_to(addrs[(r + 1) % n]);
    }
    if (right < 0 || left < 0)
        return 1;
    int f1 = fcntl(right, F_GETFL, 0), f2 = fcntl(left, F_GETFL, 0);
    fcntl(right, F_SETFL, f1 | O_NONBLOCK);
    fcntl(left, F_SETFL, f2 | O_NONBLOCK);
    char *sbuf = malloc(c->chunk), *rbuf = malloc(c->chunk);
    memset(sbuf, 1, c->chunk);
    /* bandwidth: stream for `seconds`, count what arrives */
    const int64_t end = rt_now_ns() + (int64_t)(c->seconds * 1e9);
    const int64_t start = rt_now_ns();
    size_t received = 0;
    int64_t last_recv = start;
    bool sending = true, open_in = true;
    while (open_in) {
        int64_t now = rt_now_ns();
        if (sending && now >= end) {
            shutdown(right, SHUT_WR);
            sending = false;
        }
        bool moved = false;
        if (c->poll_first) {
            struct pollfd p[2] = {{left, POLLIN, 0}, {right, (short)(sending ? POLLOUT : 0), 0}};
            if (poll(p, 2, 100) < 0)
                break;
        }
        ssize_t k = recv(left, rbuf, c->chunk, MSG_DONTWAIT);
        if (k == 0)
            open_in = false;
        else if (k > 0) {
            moved = true;
            if (now < end) {
                received += (size_t)k;
                last_recv = now;
            }
        }
        if (sending) {
            k = send(right, sbuf, c->chunk, MSG_DONTWAIT | MSG_NOSIGNAL);
            moved = moved || k > 0;
        }
        if (!moved && open_in && !c->poll_first) {
            struct pollfd p[2] = {{left, POLLIN, 0}, {right, (short)(sending ? POLLOUT : 0), 0}};
            if (poll(p, 2, 100) < 0)
                break;
        }
        if (!sending && now > end + 5000000000LL)
            break; /* a neighbour that never closes: stop anyway */
    }
    out->recv_gbps = (double)received / ((double)(last_recv - start) / 1e9) / 1e9;
    close(right);
    close(left);
    /* latency between ranks 0 and 1 on fresh blocking-free sockets */
    out->half_rtt_us = 0;
    if (r <= 1) {
        int fd = r == 0 ? connect_to(addrs[1]) : accept_one(lfd);
        if (fd < 0)
            return 1;
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
        const int rounds = 20000;
        double *t = malloc(rounds * sizeof(double));
        char msg[8] = {0};
        for (int i = 0; i < rounds + 1000; i++) {
            int64_t t0 = rt_now_ns();
            if (r == 0) {
                while (send(fd, msg, 8, MSG_NOSIGNAL) != 8)
                    ;
                size_t got = 0;
                while (got < 8) {
                    ssize_t k = recv(fd, msg + got, 8 - got, 0);
                    if (k > 0)
                        got += (size_t)k;
                    else if (k == 0)
                        return 1;
                }
            } else {
                size_t got = 0;
                while (got < 8) {
                    ssize_t k = recv(fd, msg + got, 8 - got, 0);
                    if (k > 0)
                        got += (size_t)k;
                    else if (k == 0)
                        return 1;
                }
                while (send(fd, msg, 8, MSG_NOSIGNAL) != 8)
                    ;
            }
            if (i >= 1000)
                t[i - 1000] = (double)(rt_now_ns() - t0) / 2e3;
        }
        qsort(t, rounds, sizeof *t, cmp_double);
        out->half_rtt_us = t[rounds / 2];
        free(t);
        close(fd);
    }
    free(sbuf);
    free(rbuf);
    out->ok = 1;
    return 0;
}

int main(int argc, char **argv)
{
    cfg c = {.seconds = 2.0, .chunk = 0};
    int np = 2;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--np") && i + 1 < argc)
            np = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            c.seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--chunk") && i + 1 < argc)
            c.chunk = (size_t)strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--json"))
            json = true;
        else {
            fprintf(stderr, "usage: tcp_ceiling --np N [--seconds S] [--chunk BYTES] [--json]\n");
            return 2;
        }
    }
    if (np < 2) {
        fprintf(stderr, "tcp_ceiling: needs --np 2 or more\n");
        return 2;
    }
    rec *recs = calloc((size_t)np, sizeof *recs);
    const size_t sweep[] = {256u << 10, 1u << 20, 4u << 20};
    size_t nsweep = c.chunk ? 2 : 6;
    double best = 0, lat = 0;
    size_t best_chunk = 0;
    for (size_t i = 0; i < nsweep; i++) {
        cfg one = c;
        one.chunk = c.chunk ? c.chunk : sweep[i / 2];
        one.poll_first = i % 2 == 0;
        if (bl_launch(np, rank_main, &one, recs, sizeof *recs, 600) != 0) {
            fprintf(stderr, "tcp_ceiling: a rank failed\n");
            return 1;
        }
        double minbw = 1e30;
        for (int r = 0; r < np; r++)
            minbw = recs[r].recv_gbps < minbw ? recs[r].recv_gbps : minbw;
        if (!json)
            printf("  chunk %7zu, %-10s: per-link %.3f GB/s\n", one.chunk,
                   one.poll_first ? "poll first" : "try first", minbw);
        if (minbw > best) {
            best = minbw;
            best_chunk = one.chunk;
        }
        if (i == 0 || recs[0].half_rtt_us < lat)
            lat = recs[0].half_rtt_us;
    }
    if (json)
        printf("{\"np\":%d,\"link_gbps\":%.4f,\"chunk\":%zu,\"half_rtt_us\":%.2f}\n", np, best,
               best_chunk, lat);
    else
        printf("tcp ring ceiling, np=%d: per-link %.3f GB/s (best chunk %zu), small-message half "
               "round trip %.2f us\n",
               np, best, best_chunk, lat);
    free(recs);
    return 0;
}
