/* rt_probe.c — the program the cluster tests run on every rank through
 * `ringtrain exec`: joins the ring with rt_init_from_env(), prints where it
 * landed, checks an allreduce, reports progress, and then does what its
 * options ask:
 *   --fail-rank R --code C   rank R exits with code C after the allreduce
 *   --sleep S                every rank sleeps S seconds before exiting
 *   --sleep-rank R           ... only rank R sleeps (others finish)
 *   --sleep-attempt A        ... only in attempt A (a restarted job finishes)
 *   --rounds K               K allreduces, one per 100 ms (progress each)
 *   --result 1               every rank reports {"rank": R, "sum": S} as its
 *                            result (rt_report_result)
 * Unknown option pairs are ignored: the cluster tests pass a marker string
 * that finds leftover probes in /proc.
 *
 * It is also the example of the Run API: it includes nothing of ringtrain
 * but rt_comm.h, and tests/test_install.sh builds it outside the tree with
 * `cc rt_probe.c $(pkg-config --cflags --libs ringtrain)`. */
#define _POSIX_C_SOURCE 200809L /* nanosleep: it builds with -std=c17 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt_comm.h"

int main(int argc, char **argv)
{
    int fail_rank = -1, code = 0, sleep_rank = -1, sleep_attempt = -1, rounds = 1, result = 0;
    double sleep_s = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--fail-rank"))
            fail_rank = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--code"))
            code = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--sleep"))
            sleep_s = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--sleep-rank"))
            sleep_rank = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--sleep-attempt"))
            sleep_attempt = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--result"))
            result = atoi(argv[i + 1]);
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    rt_comm *c;
    rt_rank_info info;
    char err[RT_ERR_LEN];
    if (rt_init_from_env(&c, &info, err) != RT_OK) {
        fprintf(stderr, "probe: %s\n", err);
        return 10;
    }
    printf("rank=%d size=%d local_rank=%d local_size=%d cross_rank=%d cross_size=%d job=%lld "
           "attempt=%lld\n",
           info.rank, info.size, info.local_rank, info.local_size, info.cross_rank,
           info.cross_size, (long long)info.job_id, (long long)info.attempt);
    for (int k = 0; k < rounds; k++) {
        int64_t x = info.rank + 1;
        if (rt_allreduce(c, &x, 1, RT_C_I64, RT_SUM) != RT_OK) {
            fprintf(stderr, "probe: allreduce: %s\n", rt_comm_last_error(c));
            rt_comm_destroy(c);
            return 11;
        }
        if (x != (int64_t)info.size * (info.size + 1) / 2) {
            fprintf(stderr, "probe: allreduce gave %lld\n", (long long)x);
            return 12;
        }
        char prog[128];
        snprintf(prog, sizeof prog, "{\"kind\":\"step\",\"step\":%d,\"steps\":%d}", k + 1, rounds);
        rt_report_progress(prog);
        if (rounds > 1) {
            struct timespec ts = {0, 100000000};
            nanosleep(&ts, NULL);
        }
    }
    printf("allreduce ok: sum %d\n", info.size * (info.size + 1) / 2);
    if (result) {
        char res[96];
        snprintf(res, sizeof res, "{\"rank\": %d, \"sum\": %d}", info.rank,
                 info.size * (info.size + 1) / 2);
        if (rt_report_result(res, err) != RT_OK) {
            fprintf(stderr, "probe: %s\n", err);
            return 13;
        }
    }
    if (info.rank == fail_rank) {
        fprintf(stderr, "probe: rank %d failing on purpose with code %d\n", info.rank, code);
        rt_comm_destroy(c); /* a program that cleans up (a leak checker would fail it) */
        return code;
    }
    if (sleep_s > 0 && (sleep_rank < 0 || sleep_rank == info.rank) &&
        (sleep_attempt < 0 || sleep_attempt == info.attempt)) {
        struct timespec ts = {(time_t)sleep_s, (long)((sleep_s - (time_t)sleep_s) * 1e9)};
        nanosleep(&ts, NULL);
    }
    rt_comm_destroy(c);
    return 0;
}
