/* fuzz_prep.c — `ringtrain prep --from` on an arbitrary CSV: the column
 * inference, the script it generates and the shards it writes must end in a
 * dataset or in an error that says something, never a crash, a hang or a
 * leak.  The input is the file as it is; its first header field is the label.
 * The first byte, when it is a digit, picks options instead (lenient, no
 * validation split, the second column the test flag), so the corpus reaches
 * each branch.  Where it made a dataset, the script it wrote runs again
 * through --sql with --fold 1/3 (the script's split rewritten, or
 * rt_validation added).  Wide (thousands of columns) and ragged inputs are
 * in the seed corpus. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_prep.h"

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (unlink(p) != 0)
            remove_tree(p);
    }
    closedir(d);
    rmdir(dir);
}

/* The n-th (0-based) header field, unquoted; empty when there is none. */
static void header_field(const uint8_t *data, size_t size, int n, char *out, size_t len)
{
    size_t i = 0, k = 0;
    for (int f = 0; f < n && i < size; i++)
        if (data[i] == ',')
            f++;
        else if (data[i] == '\n')
            break;
    while (i < size && data[i] != ',' && data[i] != '\n' && data[i] != '\r' && k + 1 < len)
        if (data[i] != '"')
            out[k++] = (char)data[i++];
        else
            i++;
    out[k] = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int mode = size > 0 && data[0] >= '0' && data[0] <= '9' ? data[0] - '0' : -1;
    if (mode >= 0) {
        data++;
        size--;
    }
    char dir[] = "/tmp/fuzz_prep_XXXXXX";
    if (!mkdtemp(dir))
        return 0;
    char in[64], path[80], out[64], out2[64], sql[80], label[256], flag[256];
    snprintf(in, sizeof in, "%s/in", dir);
    snprintf(path, sizeof path, "%s/t.csv", in);
    snprintf(out, sizeof out, "%s/ds", dir);
    snprintf(out2, sizeof out2, "%s/fold", dir);
    snprintf(sql, sizeof sql, "%s/prep.sql", out);
    FILE *f = mkdir(in, 0700) == 0 ? fopen(path, "wb") : NULL;
    if (!f || fwrite(data, 1, size, f) != size) {
        if (f)
            fclose(f);
        remove_tree(dir);
        return 0;
    }
    fclose(f);
    header_field(data, size, 0, label, sizeof label);
    header_field(data, size, 1, flag, sizeof flag);
    rt_prep_opts o = {.out_dir = out, .partitions = 1 + (mode > 0 && (mode & 4)), .quiet = true};
    o.train_parquet = path;
    o.roles.label = label;
    o.lenient = mode > 0 && (mode & 1);
    o.infer.validation_fraction = mode > 0 && (mode & 2) ? 0 : 0.2;
    o.infer.test_column = mode > 0 && (mode & 8) ? flag : NULL;
    o.seed = 7;
    o.infer.command = "fuzz";
    rt_prep_report rep;
    char err[RT_ERR_LEN] = "";
    rt_status st = rt_prep_run(&o, &rep, err);
    if (st != RT_OK && err[0] == '\0')
        abort(); /* every failure says what */
    /* the script it wrote, its split made fold 1 of 3 (prep_fold.c) */
    if (st == RT_OK) {
        rt_prep_opts s = {.input_dir = in,
                          .sql_path = sql,
                          .out_dir = out2,
                          .partitions = 1,
                          .quiet = true,
                          .lenient = o.lenient,
                          .folds = 3,
                          .fold = 1,
                          .seed = 7};
        err[0] = '\0';
        if (rt_prep_run(&s, &rep, err) != RT_OK && err[0] == '\0')
            abort();
    }
    remove_tree(dir);
    return 0;
}
