/* s3_get.c — reading objects from S3 the ways ringtrain does, timed: each
 * URI whole (a shard read in memory: one GET) or in 16 MiB ranged GETs (the
 * streaming reader's blocks, RT_SRC_READAHEAD); prints bytes, seconds and MB/s.  With --put
 * FILE, the file put up N times as URI-0..N-1 instead (multipart past 16
 * MiB), timed too.  The environment's S3 settings and credentials.
 *   s3_get [--ranges] URI...        s3_get --put FILE N URI-PREFIX */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_s3.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    char err[RT_ERR_LEN];
    rt_s3 *s;
    if (argc < 2) {
        fprintf(stderr, "usage: s3_get [--ranges] URI... | s3_get --put FILE N URI-PREFIX\n");
        return 2;
    }
    if (rt_s3_open_env(&s, argv[argc - 1], err) != RT_OK) {
        fprintf(stderr, "s3_get: %s\n", err);
        return 1;
    }
    double t0 = now(), bytes = 0;
    if (!strcmp(argv[1], "--put") && argc == 5) {
        const int n = atoi(argv[3]);
        for (int i = 0; i < n; i++) {
            char uri[RT_S3_URI_MAX];
            snprintf(uri, sizeof uri, "%s-%d", argv[4], i);
            if (rt_s3_put_file(s, argv[2], uri, err) != RT_OK) {
                fprintf(stderr, "s3_get: %s\n", err);
                return 1;
            }
        }
        FILE *f = fopen(argv[2], "rb");
        if (f && fseek(f, 0, SEEK_END) == 0)
            bytes = (double)ftell(f) * n;
        if (f)
            fclose(f);
    } else {
        const bool ranges = !strcmp(argv[1], "--ranges");
        for (int i = ranges ? 2 : 1; i < argc; i++) {
            int64_t size = 0;
            char *d = NULL;
            size_t got = 0;
            rt_status st = rt_s3_get_first(s, argv[i], ranges ? (size_t)16 << 20 : (size_t)1 << 40,
                                           &d, &got, &size, err);
            bytes += (double)got;
            free(d);
            for (int64_t off = (int64_t)got; st == RT_OK && off < size; off += (int64_t)got) {
                int64_t n = size - off < (16 << 20) ? size - off : (16 << 20);
                st = rt_s3_get(s, argv[i], off, n, &d, &got, NULL, err);
                bytes += (double)got;
                free(d);
            }
            if (st != RT_OK) {
                fprintf(stderr, "s3_get: %s\n", err);
                return 1;
            }
        }
    }
    double t = now() - t0;
    rt_s3_stats st;
    rt_s3_get_stats(s, &st);
    printf("bytes=%.0f seconds=%.3f MBps=%.1f requests=%lld\n", bytes, t, bytes / t / 1e6,
           (long long)st.requests);
    rt_s3_close(s);
    return 0;
}
