/* cli_data.c — the CLI's local data commands (no coordinator involved):
 *
 *   ringtrain prep --input DIR --sql FILE --out DIR [--partitions N]
 *                  [--skip-bad-rows] [--keep-db FILE] [--rows-per-group N] [--quiet]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rt_prep.h"

static bool parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

int cli_prep(int argc, char **argv)
{
    rt_prep_opts o = {.partitions = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        if (!strcmp(a, "--skip-bad-rows"))
            o.skip_bad_rows = true;
        else if (!strcmp(a, "--quiet"))
            o.quiet = true;
        else if (v && !strcmp(a, "--input"))
            o.input_dir = argv[++i];
        else if (v && !strcmp(a, "--sql"))
            o.sql_path = argv[++i];
        else if (v && !strcmp(a, "--out"))
            o.out_dir = argv[++i];
        else if (v && !strcmp(a, "--keep-db"))
            o.db_path = argv[++i];
        else if (v && !strcmp(a, "--partitions") && parse_int(v, 1, 100000, &n)) {
            o.partitions = (int)n;
            i++;
        } else if (v && !strcmp(a, "--rows-per-group") && parse_int(v, 1, 1 << 24, &n)) {
            o.rows_per_group = n;
            i++;
        } else {
            fprintf(stderr, "ringtrain prep: unexpected or invalid argument '%s'\n"
                            "usage: ringtrain prep --input DIR --sql FILE --out DIR "
                            "[--partitions N] [--skip-bad-rows] [--keep-db FILE]\n", a);
            return 2;
        }
    }
    if (!o.input_dir || !o.sql_path || !o.out_dir) {
        fprintf(stderr, "ringtrain prep: --input, --sql and --out are needed\n");
        return 2;
    }
    rt_prep_report rep;
    char err[RT_ERR_LEN];
    if (rt_prep_run(&o, &rep, err) != RT_OK) {
        fprintf(stderr, "ringtrain prep: %s\n", err);
        return 1;
    }
    int64_t skipped = rep.bad_rows_skipped;
    for (int t = 0; t < rep.ntables; t++)
        skipped += rep.skipped[t];
    printf("prepared %s: %lld training rows, %lld validation rows, %lld test rows in %d "
           "partition%s (%.1f s)",
           o.out_dir, (long long)rep.train_rows, (long long)rep.validation_rows,
           (long long)rep.test_rows, o.partitions, o.partitions == 1 ? "" : "s", rep.seconds);
    if (skipped)
        printf("; %lld malformed or bad rows skipped", (long long)skipped);
    printf("\n");
    return 0;
}

