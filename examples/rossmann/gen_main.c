/* gen_main.c — rossmann-gen: writes a Rossmann bundle in the Kaggle formats.
 *
 *   rossmann-gen --out DIR [--aux DIR] [--stores N] [--days D] [--seed S]
 *                [--sigma X] [--truth FILE] [--quiet]
 *
 * With --aux (a folder with the real store, store_states, state_names,
 * googletrend, weather and test files, .csv or .csv.gz) it writes only
 * train.csv, for the first N stores of store.csv; without, all seven files
 * of a synthetic world with N stores.  train.csv covers the D days up to
 * 2015-07-31 (942: from 2013-01-01), rows by date descending, then store.
 * DIR/generator.json gets the summary: rows, the validation window (the
 * test period one year back), the noise floor (RMSPE of the true expected
 * sales against the drawn ones on the open validation days) and the
 * exp-RMSPE there of the per-store-and-weekday-mean baseline.  --truth
 * writes Store,Date,Truth,Sales of those validation days (Truth: the
 * expected sales before the noise). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "rt_file.h"
#include "rt_prep.h"

static void usage(void)
{
    fprintf(stderr, "usage: rossmann-gen --out DIR [--aux DIR] [--stores N] [--days D] "
                    "[--seed S] [--sigma X] [--truth FILE] [--quiet]\n");
}

int main(int argc, char **argv)
{
    const char *out = NULL, *aux = NULL, *truth_path = NULL;
    int stores = 1115, days = 942;
    uint64_t seed = 1;
    double sigma = 0.10;
    bool quiet = false;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--quiet"))
            quiet = true;
        else if (v && !strcmp(argv[i], "--out"))
            out = argv[++i];
        else if (v && !strcmp(argv[i], "--truth"))
            truth_path = argv[++i];
        else if (v && !strcmp(argv[i], "--aux"))
            aux = argv[++i];
        else if (v && !strcmp(argv[i], "--stores"))
            stores = atoi(argv[++i]);
        else if (v && !strcmp(argv[i], "--days"))
            days = atoi(argv[++i]);
        else if (v && !strcmp(argv[i], "--seed"))
            seed = strtoull(argv[++i], NULL, 10);
        else if (v && !strcmp(argv[i], "--sigma"))
            sigma = atof(argv[++i]);
        else {
            usage();
            return 2;
        }
    }
    /* the real store.csv has 1115 stores; a synthetic world any number (at
     * scale: 10620 stores x 942 days ~ 10M rows, for bench/data_scale.sh) */
    int max_stores = aux ? 1115 : 20000;
    if (!out || stores < 1 || stores > max_stores || days < 30 || days > 942 ||
        !(sigma >= 0 && sigma < 1)) {
        usage();
        fprintf(stderr, "(--stores 1..%d%s, --days 30..942, --sigma 0..1)\n", max_stores,
                aux ? " with --aux" : "");
        return 2;
    }
    char err[RT_ERR_LEN];
    if (rt_mkdirs(out, err) != RT_OK) {
        fprintf(stderr, "rossmann-gen: %s\n", err);
        return 1;
    }
    gen_world *w = calloc(1, sizeof *w);
    w->seed = seed;
    if (aux) {
        if (gen_read_aux(w, aux, stores, err) != RT_OK) {
            fprintf(stderr, "rossmann-gen: %s\n", err);
            return 1;
        }
    } else {
        gen_synth_world(w, stores);
    }
    gen_calendars(w);
    gen_store_traits(w);
    if (!aux && gen_write_aux(w, out, err) != RT_OK) {
        fprintf(stderr, "rossmann-gen: %s\n", err);
        return 1;
    }
    int first = GEN_TRAIN_LAST - days + 1;
    int vfirst = w->test_first - 365 + 1, vlast = w->test_last - 365; /* (min-365, max-365] */
    if (vfirst < first) {
        fprintf(stderr, "rossmann-gen: --days %d does not reach back to the validation window "
                        "(from %d days before 2015-07-31)\n", days, GEN_TRAIN_LAST - vfirst + 1);
        return 2;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/train.csv", out);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "rossmann-gen: cannot create %s\n", path);
        return 1;
    }
    fputs("\"Store\",\"DayOfWeek\",\"Date\",\"Sales\",\"Customers\",\"Open\",\"Promo\","
          "\"StateHoliday\",\"SchoolHoliday\"\n", f);
    /* baseline: mean Sales per (store, weekday) over the training rows */
    double *bsum = calloc((size_t)w->nstores * 7, sizeof *bsum);
    long *bcnt = calloc((size_t)w->nstores * 7, sizeof *bcnt);
    int vcap = w->nstores * (vlast - vfirst + 1) + 1, nv = 0;
    struct vrow {
        int store, wd, day;
        double sales, truth;
    } *vr = malloc((size_t)vcap * sizeof *vr);
    long rows = 0, open_rows = 0;
    for (int day = GEN_TRAIN_LAST; day >= first; day--) {
        char d[11];
        rt_format_date(day, d);
        int i = day - GEN_FIRST_DAY, wd = (int)(((day + 3) % 7 + 7) % 7);
        for (int k = 0; k < w->nstores; k++) {
            const gen_store *s = &w->stores[k];
            gen_day g = gen_store_day(w, s, day, sigma);
            int j = s->state * GEN_NDAYS + i;
            fprintf(f, "%d,%d,%s,%ld,%ld,%d,%d,\"%c\",\"%d\"\n", s->id, wd + 1, d, g.sales,
                    g.customers, g.open, w->promo[i], w->holiday[j], w->school[j]);
            rows++;
            open_rows += g.open;
            if (g.sales <= 0)
                continue; /* prep drops zero-sales rows: so do the metrics */
            if (day >= vfirst && day <= vlast) {
                vr[nv++] = (struct vrow){k, wd, day, (double)g.sales, g.truth};
            } else {
                bsum[k * 7 + wd] += (double)g.sales;
                bcnt[k * 7 + wd]++;
            }
        }
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "rossmann-gen: cannot write %s\n", path);
        return 1;
    }
    double floor2 = 0, base2 = 0;
    for (int r = 0; r < nv; r++) {
        double s = vr[r].sales;
        long c = bcnt[vr[r].store * 7 + vr[r].wd];
        double b = c ? bsum[vr[r].store * 7 + vr[r].wd] / (double)c : 0;
        floor2 += ((s - vr[r].truth) / s) * ((s - vr[r].truth) / s);
        base2 += ((s - b) / s) * ((s - b) / s);
    }
    FILE *tf = truth_path ? fopen(truth_path, "w") : NULL;
    if (truth_path && !tf) {
        fprintf(stderr, "rossmann-gen: cannot create %s\n", truth_path);
        return 1;
    }
    if (tf) {
        fputs("Store,Date,Truth,Sales\n", tf);
        for (int r = 0; r < nv; r++) {
            char d[11];
            rt_format_date(vr[r].day, d);
            fprintf(tf, "%d,%s,%.3f,%.0f\n", w->stores[vr[r].store].id, d, vr[r].truth,
                    vr[r].sales);
        }
        fclose(tf);
    }
    double noise_floor = nv ? sqrt(floor2 / nv) : 0, baseline = nv ? sqrt(base2 / nv) : 0;
    char v0[11], v1[11], t0[11];
    rt_format_date(vfirst, v0);
    rt_format_date(vlast, v1);
    rt_format_date(first, t0);
    snprintf(path, sizeof path, "%s/generator.json", out);
    f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "rossmann-gen: cannot create %s\n", path);
        return 1;
    }
    fprintf(f,
            "{\"seed\": %llu, \"stores\": %d, \"days\": %d, \"first_date\": \"%s\", "
            "\"last_date\": \"2015-07-31\", \"aux\": %s, \"sigma\": %.4f, \"rows\": %ld, "
            "\"open_rows\": %ld, \"validation\": {\"first\": \"%s\", \"last\": \"%s\", "
            "\"rows\": %d}, \"noise_floor\": %.6f, \"baseline\": %.6f}\n",
            (unsigned long long)seed, w->nstores, days, t0, aux ? "true" : "false", sigma, rows,
            open_rows, v0, v1, nv, noise_floor, baseline);
    fclose(f);
    if (!quiet)
        fprintf(stderr,
                "rossmann-gen: %s: %ld rows (%d stores x %d days, %ld open), validation %s..%s "
                "(%d rows): noise floor %.4f, store-weekday-mean baseline %.4f\n",
                out, rows, w->nstores, days, open_rows, v0, v1, nv, noise_floor, baseline);
    free(bsum);
    free(bcnt);
    free(vr);
    free(w->stores);
    free(w);
    return 0;
}
