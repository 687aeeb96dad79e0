/* test_prep_real.c — prep.sql on the real Rossmann auxiliary files
 * (../shared/data/rossmann: store, store_states, state_names, googletrend,
 * weather, test) with a train.csv from rossmann-gen for 40 stores: every
 * row survives the joins, the test set is the real 41,088 rows, the
 * validation rows are the test period one year back.  Skips (77) where the
 * files are not beside the repository. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_csv.h"
#include "rt_dataset.h"
#include "rt_prep.h"

#define CHECK(c)                                                                                \
    do {                                                                                       \
        if (!(c)) {                                                                            \
            fprintf(stderr, "FAILED: %s (line %d)\n", #c, __LINE__);                          \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

int main(void)
{
    struct stat sb;
    if (stat(RT_SHARED_ROSSMANN "/store.csv.gz", &sb) != 0) {
        printf("SKIP: no real auxiliary files at %s\n", RT_SHARED_ROSSMANN);
        return 77;
    }
    char dir[] = "/tmp/rt_prep_real_XXXXXX";
    CHECK(mkdtemp(dir));
    char in[128], out[128], cmd[2048];
    snprintf(in, sizeof in, "%s/in", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    CHECK(mkdir(in, 0755) == 0);
    const char *files[] = {"store", "store_states", "state_names", "googletrend", "weather", "test"};
    for (int i = 0; i < 6; i++) {
        char from[512], to[512];
        snprintf(from, sizeof from, "%s/%s.csv.gz", RT_SHARED_ROSSMANN, files[i]);
        snprintf(to, sizeof to, "%s/%s.csv.gz", in, files[i]);
        CHECK(symlink(from, to) == 0);
    }
    snprintf(cmd, sizeof cmd, "%s --out %s --aux %s --stores 40 --quiet", RT_TEST_GEN, in,
             RT_SHARED_ROSSMANN);
    CHECK(system(cmd) == 0);
    /* what prep must keep: every row of train.csv with Sales > 0 */
    char path[256], err[RT_ERR_LEN];
    snprintf(path, sizeof path, "%s/train.csv", in);
    rt_csv *c = NULL;
    CHECK(rt_csv_open(path, &c, err) == RT_OK && rt_csv_next(c, err) == 1);
    long rows = 0, sold = 0;
    while (rt_csv_next(c, err) == 1) {
        rows++;
        sold += atol(rt_csv_field(c, 3, NULL)) > 0;
    }
    rt_csv_close(c);
    CHECK(rows == 40 * 942);
    rt_prep_opts o = {.input_dir = in, .sql_path = RT_PREP_SQL, .out_dir = out, .partitions = 2,
                      .quiet = true};
    rt_prep_report rep;
    if (rt_prep_run(&o, &rep, err) != RT_OK) {
        fprintf(stderr, "prep: %s\n", err);
        return 1;
    }
    printf("prep on the real files: %lld + %lld rows (of %ld with sales), %lld test rows, %.1f s\n",
           (long long)rep.train_rows, (long long)rep.validation_rows, sold,
           (long long)rep.test_rows, rep.seconds);
    CHECK(rep.train_rows + rep.validation_rows == sold);
    CHECK(rep.test_rows == 41088);
    rt_dataset *ds = NULL;
    CHECK(rt_dataset_open(out, &ds, err) == RT_OK);
    CHECK(rt_dataset_columns(ds, RT_ROLE_CATEGORICAL, NULL, 0) == 18);
    CHECK(rt_dataset_columns(ds, RT_ROLE_CONTINUOUS, NULL, 0) == 18);
    CHECK(rt_dataset_column(ds, "StoreType")->vocab_size == 4);
    const rt_ds_column *ev = rt_dataset_column(ds, "Events");
    CHECK(ev->vocab[0] == NULL && ev->vocab_size > 10);
    const rt_ds_column *st = rt_dataset_column(ds, "State");
    int hbni = 0;
    for (int i = 0; i < st->vocab_size; i++)
        hbni += st->vocab[i] && !strcmp(st->vocab[i], "HB,NI");
    CHECK(hbni == 1);
    /* validation rows: 2014-08-02 .. 2014-09-17 and nothing else */
    int32_t lo = 0, hi = 0, vmin = 1 << 30, vmax = 0;
    rt_parse_date("2014-08-02", &lo);
    rt_parse_date("2014-09-17", &hi);
    for (int p = 0; p < ds->nparts; p++) {
        rt_shard *s = NULL;
        CHECK(rt_dataset_read_part(ds, p, false, &s, err) == RT_OK);
        const int32_t *d = rt_shard_find(s, "Date")->data;
        const uint8_t *v = rt_shard_find(s, "Validation")->data;
        for (int64_t r = 0; r < s->nrows; r++) {
            CHECK(((d[r] >= lo && d[r] <= hi) ? 1 : 0) == v[r]);
            if (v[r]) {
                vmin = d[r] < vmin ? d[r] : vmin;
                vmax = d[r] > vmax ? d[r] : vmax;
            }
        }
        rt_shard_free(s);
    }
    CHECK(vmin == lo && vmax == hi);
    rt_dataset_free(ds);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    printf("ok\n");
    return 0;
}
