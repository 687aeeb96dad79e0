/* test_prep.c — `ringtrain prep` with examples/rossmann/prep.sql on a small
 * hand-made Rossmann bundle (two stores around Christmas 2014, with the
 * files' real quirks), its output checked against values computed by hand
 * from the seed's definitions; then bad rows, skipped rows, lost rows in
 * the joins, and the partitioning. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_dataset.h"
#include "rt_prep.h"
#include "test_util.h"

static char dir[64], in[128], out[128];

static void put(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", in, name);
    assert_true(tu_write_text(path, text));
}

static int day_of(const char *s)
{
    int32_t d = 0;
    assert_true(rt_parse_date(s, &d));
    return d;
}

/* Trend of a state file for the week starting on `sunday`: a code we can
 * recognise (HE 10+, NI 40+, DE 70+, plus the Sunday's day of the month). */
static int trend_of(int base, const char *sunday) { return base + atoi(sunday + 8); }

static const char *const SUNDAYS[6] = {"2014-01-05", "2014-12-21", "2014-12-28",
                                       "2015-01-04", "2015-01-11", "2015-12-27"};

/* Writes the bundle; skip_weather: a day whose weather row is left out. */
static void write_bundle(const char *skip_weather, const char *extra_train)
{
    put("state_names.csv", "StateName,State\nHessen,HE\nNiedersachsen,\"HB,NI\"\n");
    put("store.csv",
        "\"Store\",\"StoreType\",\"Assortment\",\"CompetitionDistance\","
        "\"CompetitionOpenSinceMonth\",\"CompetitionOpenSinceYear\",\"Promo2\","
        "\"Promo2SinceWeek\",\"Promo2SinceYear\",\"PromoInterval\"\n"
        "1,\"c\",\"a\",1270,9,2014,0,,,\"\"\n"
        "2,\"a\",\"a\",570,,,1,14,2014,\"Jan,Apr,Jul,Oct\"\n");
    put("store_states.csv", "Store,State\r\n1,HE\r\n2,\"HB,NI\"\r\n");
    char buf[1 << 16];
    size_t n = (size_t)snprintf(buf, sizeof buf, "file,week,trend\n");
    const char *files[3] = {"Rossmann_DE_HE", "Rossmann_DE_NI", "Rossmann_DE"};
    const int base[3] = {10, 40, 70};
    for (int f = 0; f < 3; f++) {
        for (int k = 0; k < 6; k++) {
            char end[11];
            rt_format_date(day_of(SUNDAYS[k]) + 6, end);
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s,%s - %s,%d\n", files[f],
                                  SUNDAYS[k], end, trend_of(base[f], SUNDAYS[k]));
        }
        if (f == 2)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "\n"); /* as in the bundle */
    }
    put("googletrend.csv", buf);
    /* weather: Max_TemperatureC = day of month, CloudCover NA on the 1st,
     * "Rain" on even days; a blank line after each state's block */
    n = (size_t)snprintf(buf, sizeof buf,
                         "file,\"Date\",\"Max_TemperatureC\",\"Mean_TemperatureC\","
                         "\"Min_TemperatureC\",\"Max_Humidity\",\"Mean_Humidity\",\"Min_Humidity\","
                         "\"Max_Wind_SpeedKm_h\",\"Mean_Wind_SpeedKm_h\",\"CloudCover\","
                         "\"Events\"\n");
    const char *names[2] = {"Hessen", "Niedersachsen"};
    int ranges[2][2] = {{day_of("2014-12-20"), day_of("2015-01-10")},
                        {day_of("2015-12-21"), day_of("2015-12-23")}};
    for (int s = 0; s < 2; s++) {
        for (int r = 0; r < 2; r++)
            for (int d = ranges[r][0]; d <= ranges[r][1]; d++) {
                char date[11];
                rt_format_date(d, date);
                if (skip_weather && !strcmp(date, skip_weather) && s == 1)
                    continue;
                int dom = atoi(date + 8);
                n += (size_t)snprintf(buf + n, sizeof buf - n, "%s,%s,%d,%d,%d,90,80,70,20,10,",
                                      names[s], date, dom, dom - 3, dom - 6);
                n += (size_t)snprintf(buf + n, sizeof buf - n, dom == 1 ? "NA," : "%d,", dom % 8);
                n += (size_t)snprintf(buf + n, sizeof buf - n, "\"%s\"\n", dom % 2 ? "" : "Rain");
            }
        n += (size_t)snprintf(buf + n, sizeof buf - n, "\n");
    }
    put("weather.csv", buf);
    /* train: both stores, 2014-12-20 .. 2015-01-10, dates descending as Kaggle's */
    n = (size_t)snprintf(buf, sizeof buf,
                         "\"Store\",\"DayOfWeek\",\"Date\",\"Sales\",\"Customers\",\"Open\","
                         "\"Promo\",\"StateHoliday\",\"SchoolHoliday\"\n");
    if (extra_train)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s", extra_train);
    for (int d = ranges[0][1]; d >= ranges[0][0]; d--) {
        char date[11];
        rt_format_date(d, date);
        int wd = (int)(((d + 3) % 7 + 7) % 7) + 1; /* 1 = Monday */
        const char *hol = !strcmp(date, "2014-12-25") || !strcmp(date, "2014-12-26") ? "c"
                          : !strcmp(date, "2015-01-01")                          ? "a"
                                                                                 : "0";
        bool promo = wd <= 5 && ((d >= day_of("2014-12-22") && d <= day_of("2014-12-26")) ||
                                 (d >= day_of("2015-01-05") && d <= day_of("2015-01-09")));
        bool school1 = d >= day_of("2014-12-22") && d <= day_of("2015-01-05");
        for (int s = 1; s <= 2; s++) {
            bool open = wd != 7 && hol[0] == '0';
            int sales = !open ? 0 : s == 1 ? 1000 + (d - ranges[0][0]) : 2000;
            if (s == 2 && !strcmp(date, "2015-01-07"))
                sales = 0; /* open, nothing sold */
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%d,%d,%s,%d,%d,%d,%d,\"%s\",\"%d\"\n",
                                  s, wd, date, sales, sales / 10, open, promo, hol,
                                  s == 1 && school1);
        }
    }
    put("train.csv", buf);
    put("test.csv",
        "\"Id\",\"Store\",\"DayOfWeek\",\"Date\",\"Open\",\"Promo\",\"StateHoliday\","
        "\"SchoolHoliday\"\n"
        "1,1,3,2015-12-23,1,0,\"0\",\"0\"\n"
        "2,2,3,2015-12-23,,0,\"0\",\"0\"\n"
        "3,1,2,2015-12-22,1,0,\"0\",\"0\"\n"
        "4,2,2,2015-12-22,1,0,\"0\",\"0\"\n"
        "5,1,1,2015-12-21,1,1,\"0\",\"0\"\n"
        "6,2,1,2015-12-21,1,1,\"0\",\"0\"\n");
}

static int rm_one(const char *p, const struct stat *s, int f, struct FTW *w)
{
    (void)s, (void)f, (void)w;
    return remove(p);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/rt_prep_XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(in, sizeof in, "%s/in", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    return mkdir(in, 0755);
}

static int teardown(void **state)
{
    (void)state;
    nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
    return 0;
}

static rt_status prep(int parts, bool skip, rt_prep_report *rep, char *err)
{
    rt_prep_opts o = {.input_dir = in, .sql_path = RT_PREP_SQL, .out_dir = out,
                      .partitions = parts, .skip_bad_rows = skip, .quiet = true};
    return rt_prep_run(&o, rep, err);
}

/* Value of column `name` in the row of (store, date) of a shard. */
typedef struct found {
    const rt_shard *s;
    int64_t row;
} found;

static found find_row(const rt_dataset *ds, const rt_shard *s, const char *store, const char *date)
{
    const rt_ds_column *sc = rt_dataset_column(ds, "Store");
    int32_t si = -1;
    for (int32_t v = 0; v < sc->vocab_size; v++)
        if (sc->vocab[v] && !strcmp(sc->vocab[v], store))
            si = v;
    const int32_t *st = rt_shard_find(s, "Store")->data, *dt = rt_shard_find(s, "Date")->data;
    for (int64_t r = 0; r < s->nrows; r++)
        if (st[r] == si && dt[r] == day_of(date))
            return (found){s, r};
    fail_msg("no row for store %s on %s", store, date);
    return (found){s, -1};
}

static float f32(found f, const char *col) { return ((const float *)rt_shard_find(f.s, col)->data)[f.row]; }

/* The vocabulary value of a categorical column in the row. */
static const char *cat(const rt_dataset *ds, found f, const char *col)
{
    int32_t v = ((const int32_t *)rt_shard_find(f.s, col)->data)[f.row];
    const char *s = rt_dataset_column(ds, col)->vocab[v];
    return s ? s : "NULL";
}

static void test_hand_checked(void **state)
{
    (void)state;
    write_bundle(NULL, NULL);
    rt_prep_report rep;
    char err[RT_ERR_LEN];
    if (prep(1, false, &rep, err) != RT_OK)
        fail_msg("%s", err);
    /* 2 stores x 22 days = 44 rows; closed: 3 Sundays + 3 holidays each = 12;
     * store 2 sold nothing on 2015-01-07: 31 rows with sales */
    assert_int_equal(rep.train_rows + rep.validation_rows, 31);
    assert_int_equal(rep.validation_rows, 4); /* 2014-12-22 and -23, both stores */
    assert_int_equal(rep.test_rows, 6);
    rt_dataset *ds = NULL;
    assert_int_equal(rt_dataset_open(out, &ds, err), RT_OK);
    assert_int_equal(rt_dataset_columns(ds, RT_ROLE_CATEGORICAL, NULL, 0), 18);
    assert_int_equal(rt_dataset_columns(ds, RT_ROLE_CONTINUOUS, NULL, 0), 18);
    assert_true(ds->max_label == 2000);
    assert_string_equal(ds->label_transform, "log");
    /* vocabularies: sorted as the seed sorts them, NULL first */
    const rt_ds_column *pi = rt_dataset_column(ds, "PromoInterval");
    assert_int_equal(pi->vocab_size, 2);
    assert_null(pi->vocab[0]);
    assert_string_equal(pi->vocab[1], "Jan,Apr,Jul,Oct");
    const rt_ds_column *stt = rt_dataset_column(ds, "State");
    assert_string_equal(stt->vocab[0], "HB,NI");
    assert_string_equal(stt->vocab[1], "HE");
    /* every holiday row is a closed day, dropped with the zero sales */
    assert_int_equal(rt_dataset_column(ds, "StateHoliday")->vocab_size, 1);
    assert_int_equal(rt_dataset_column(ds, "Year")->vocab_size, 2); /* 2014, 2015 */
    rt_shard *tr = NULL, *te = NULL;
    assert_int_equal(rt_dataset_read_part(ds, 0, false, &tr, err), RT_OK);
    assert_int_equal(rt_dataset_read_part(ds, 0, true, &te, err), RT_OK);

    /* store 1 on Tuesday 2014-12-23 */
    found f = find_row(ds, tr, "1", "2014-12-23");
    assert_string_equal(cat(ds, f, "Year"), "2014");
    assert_string_equal(cat(ds, f, "Month"), "12");
    assert_string_equal(cat(ds, f, "Day"), "23");
    assert_string_equal(cat(ds, f, "Week"), "52");
    assert_string_equal(cat(ds, f, "DayOfWeek"), "2");
    assert_string_equal(cat(ds, f, "State"), "HE");
    assert_string_equal(cat(ds, f, "StoreType"), "c");
    assert_string_equal(cat(ds, f, "Promo"), "1");
    assert_string_equal(cat(ds, f, "SchoolHoliday"), "1");
    assert_string_equal(cat(ds, f, "StateHoliday"), "0");
    assert_string_equal(cat(ds, f, "Events"), "NULL"); /* "" on odd days */
    assert_string_equal(cat(ds, f, "PromoInterval"), "NULL");
    /* competition since 2014-09-15: 99 days -> 3 months */
    assert_string_equal(cat(ds, f, "CompetitionMonthsOpen"), "3");
    assert_string_equal(cat(ds, f, "CompetitionOpenSinceYear"), "2014");
    assert_string_equal(cat(ds, f, "Promo2Weeks"), "0");
    assert_string_equal(cat(ds, f, "Promo2SinceYear"), "1900");
    assert_true(f32(f, "CompetitionDistance") == 1270);
    assert_true(f32(f, "Max_TemperatureC") == 23);
    assert_true(f32(f, "CloudCover") == 23 % 8);
    /* Tuesday 2014-12-23: ISO week 52 of calendar year 2014, joined (as the
     * seed joins year and week) with the trend row of Sunday 2014-12-28 */
    assert_true(f32(f, "trend") == trend_of(10, "2014-12-28"));
    assert_true(f32(f, "trend_de") == trend_of(70, "2014-12-28"));
    /* next state holiday 2014-12-25 (-2); no earlier one: the store's first day */
    assert_true(f32(f, "BeforeStateHoliday") == -2);
    assert_true(f32(f, "AfterStateHoliday") == 3);
    assert_true(f32(f, "BeforePromo") == 0 && f32(f, "AfterPromo") == 0);
    assert_true(f32(f, "BeforeSchoolHoliday") == 0 && f32(f, "AfterSchoolHoliday") == 0);
    assert_true(fabsf(f32(f, "Sales") - logf(1000 + 3)) < 1e-6f);
    assert_int_equal(((const uint8_t *)rt_shard_find(tr, "Validation")->data)[f.row], 1);

    /* store 2 on Tuesday 2015-01-06 */
    f = find_row(ds, tr, "2", "2015-01-06");
    assert_string_equal(cat(ds, f, "Week"), "2");
    assert_string_equal(cat(ds, f, "State"), "HB,NI");
    assert_string_equal(cat(ds, f, "Promo2SinceYear"), "2014");
    assert_string_equal(cat(ds, f, "PromoInterval"), "Jan,Apr,Jul,Oct");
    assert_string_equal(cat(ds, f, "Events"), "Rain");
    /* promo2 since week 14 of 2014 = 2014-04-02: 279 days, capped at 175 -> 25 weeks */
    assert_string_equal(cat(ds, f, "Promo2Weeks"), "25");
    /* no competition date: 1900, 0 months */
    assert_string_equal(cat(ds, f, "CompetitionOpenSinceYear"), "1900");
    assert_string_equal(cat(ds, f, "CompetitionMonthsOpen"), "0");
    assert_true(f32(f, "trend") == trend_of(40, "2015-01-11"));
    /* last state holiday 2015-01-01 (+5); none later: the store's last day
     * over train and test together, 2015-12-23 (-351) */
    assert_true(f32(f, "AfterStateHoliday") == 5);
    assert_true(f32(f, "BeforeStateHoliday") == -351);
    assert_true(f32(f, "AfterPromo") == 0 && f32(f, "BeforePromo") == 0); /* a promo day */
    assert_int_equal(((const uint8_t *)rt_shard_find(tr, "Validation")->data)[f.row], 0);
    /* Saturday 2015-01-10: the last promo was Friday (+1); the next is in the
     * test period, 2015-12-21 */
    f = find_row(ds, tr, "2", "2015-01-10");
    assert_true(f32(f, "AfterPromo") == 1);
    assert_true(f32(f, "BeforePromo") == day_of("2015-01-10") - day_of("2015-12-21"));

    /* Monday 2014-12-29: ISO week 1 of 2015 in calendar 2014 joins 2014's
     * week 1, the trend row of Sunday 2014-01-05 (the seed's quirk) */
    f = find_row(ds, tr, "1", "2014-12-29");
    assert_string_equal(cat(ds, f, "Week"), "1");
    assert_true(f32(f, "trend") == trend_of(10, "2014-01-05"));

    /* the test rows: ids kept, features joined, the missing Open harmless */
    f = find_row(ds, te, "2", "2015-12-23");
    assert_int_equal(((const int32_t *)rt_shard_find(te, "Id")->data)[f.row], 2);
    assert_true(f32(f, "trend") == trend_of(40, "2015-12-27"));
    assert_true(f32(f, "AfterStateHoliday") == day_of("2015-12-23") - day_of("2015-01-01"));
    assert_null(rt_shard_find(te, "Sales"));
    /* every continuous column's mean and std over the training rows, the
     * validation rows left out (continuous_norm = standardize) */
    const rt_shard_col *vf = rt_shard_find(tr, "Validation");
    const char *names[] = {"CompetitionDistance", "trend", "AfterStateHoliday"};
    for (int k = 0; k < 3; k++) {
        const rt_ds_column *dc = rt_dataset_column(ds, names[k]);
        const float *v = rt_shard_find(tr, names[k])->data;
        double n = 0, sum = 0, sq = 0;
        for (int64_t r = 0; r < tr->nrows; r++)
            if (!((const uint8_t *)vf->data)[r])
                n++, sum += v[r];
        for (int64_t r = 0; r < tr->nrows; r++)
            if (!((const uint8_t *)vf->data)[r])
                sq += (v[r] - sum / n) * (v[r] - sum / n);
        assert_true(dc->has_stats && n == 27);
        assert_true(fabs(dc->mean - sum / n) <= 1e-9 * (1 + fabs(sum / n)));
        assert_true(fabs(dc->std - sqrt(sq / n)) <= 1e-9 * (1 + sqrt(sq / n)));
    }
    rt_shard_free(tr);
    rt_shard_free(te);
    rt_dataset_free(ds);
}

static void test_bad_rows(void **state)
{
    (void)state;
    /* a date that is not a date, on line 2 of train.csv */
    write_bundle(NULL, "1,5,2015-02-30,100,10,1,0,\"0\",\"0\"\n");
    rt_prep_report rep;
    char err[RT_ERR_LEN];
    assert_int_equal(prep(1, false, &rep, err), RT_ERR_INVALID);
    fprintf(stderr, "bad date: %s\n", err);
    assert_non_null(strstr(err, "train.csv:2: Date '2015-02-30' is not a YYYY-MM-DD date"));
    assert_non_null(strstr(err, "--skip-bad-rows"));
    assert_int_equal(prep(1, true, &rep, err), RT_OK);
    assert_int_equal(rep.bad_rows_skipped, 1);
    assert_int_equal(rep.train_rows + rep.validation_rows, 31);

    /* a row with a field missing */
    write_bundle(NULL, "1,5,2015-01-02,100,10,1,0,\"0\"\n");
    assert_int_equal(prep(1, false, &rep, err), RT_ERR_INVALID);
    fprintf(stderr, "short row: %s\n", err);
    assert_non_null(strstr(err, "train.csv:2: 8 fields, the header has 9"));
    assert_int_equal(prep(1, true, &rep, err), RT_OK);
    int64_t skipped = 0;
    for (int t = 0; t < rep.ntables; t++)
        skipped += rep.skipped[t];
    assert_int_equal(skipped, 1);

    /* broken quoting stops the prep even with skipping (nothing after it is reliable) */
    write_bundle(NULL, "1,5,\"2015-01-02,100,10,1,0,\"0\",\"0\"\n");
    assert_int_equal(prep(1, true, &rep, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "train.csv:2"));
}

static void test_lost_rows(void **state)
{
    (void)state;
    /* Niedersachsen has no weather on 2015-01-03: store 2's row is lost in
     * the join, and the prep says so instead of training on less */
    write_bundle("2015-01-03", NULL);
    rt_prep_report rep;
    char err[RT_ERR_LEN];
    assert_int_equal(prep(1, false, &rep, err), RT_ERR_INVALID);
    fprintf(stderr, "lost rows: %s\n", err);
    assert_non_null(strstr(err, "lost rows in the joins of train: 44 rows in, 43 after"));
    /* an unfinished prep leaves no manifest: no half dataset is mistaken for one */
    rt_dataset *ds = NULL;
    assert_int_equal(rt_dataset_open(out, &ds, err), RT_ERR_NOTFOUND);
    /* a missing input file is named */
    char path[256];
    snprintf(path, sizeof path, "%s/weather.csv", in);
    unlink(path);
    assert_int_equal(prep(1, false, &rep, err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "no such table: weather"));
    assert_non_null(strstr(err, "weather.csv"));
}

/* A column the script's meta names but its table lacks is refused with a
 * suggestion (SQLite would read the unknown "name" as a constant string). */
static void test_misspelled_column(void **state)
{
    (void)state;
    char in2[160], sql[160], out2[160], path[200];
    snprintf(in2, sizeof in2, "%s/in2", dir);
    snprintf(out2, sizeof out2, "%s/out2", dir);
    snprintf(sql, sizeof sql, "%s/typo.sql", dir);
    mkdir(in2, 0755);
    snprintf(path, sizeof path, "%s/t.csv", in2);
    FILE *f = fopen(path, "w");
    fputs("a,b,label,valid\n1,,2.0,false\n2,1.5,3.0,TRUE\n", f);
    fclose(f);
#define SCRIPT_FMT                                                                                 \
    "CREATE TABLE feat AS SELECT CAST(a AS INTEGER) AS a, CASE WHEN b = '' THEN NULL ELSE"         \
    " CAST(b AS REAL) END AS b, CAST(label AS REAL) AS label, valid FROM t;\n"                      \
    "CREATE TABLE meta(key, value);\n"                                                             \
    "INSERT INTO meta VALUES ('train_table', 'feat'), ('label', 'label'), ('max_label', 10),"      \
    " ('categorical', '%s'), ('continuous', 'b'), ('validation', 'valid'),"                        \
    " ('label_transform', '%s');\n"
    rt_prep_report rep;
    char err[RT_ERR_LEN];
    rt_prep_opts o = {.input_dir = in2, .sql_path = sql, .out_dir = out2, .partitions = 1,
                      .quiet = true};
    f = fopen(sql, "w");
    fprintf(f, SCRIPT_FMT, "aa", "none");
    fclose(f);
    assert_int_equal(rt_prep_run(&o, &rep, err), RT_ERR_INVALID);
    fprintf(stderr, "misspelled: %s\n", err);
    assert_non_null(strstr(err, "meta names column 'aa' (categorical), but table feat has no such "
                                "column; did you mean 'a'?"));
    f = fopen(sql, "w");
    fprintf(f, SCRIPT_FMT, "a", "none");
    fclose(f);
    assert_int_equal(rt_prep_run(&o, &rep, err), RT_OK);
    /* "TRUE"/"false" are flags; a NULL continuous value is counted, not hidden */
    assert_int_equal(rep.validation_rows, 1);
    assert_int_equal(rep.cont_defaulted, 1);
    /* a raw label where the log is expected: named, with its row */
    f = fopen(sql, "w");
    fprintf(f, SCRIPT_FMT, "a", "log");
    fclose(f);
    assert_int_equal(rt_prep_run(&o, &rep, err), RT_ERR_INVALID);
    fprintf(stderr, "raw label: %s\n", err);
    assert_non_null(strstr(err, "feat row 2: the label label is 3, above ln(max_label) = 2.30259"));
}

static void test_partitions(void **state)
{
    (void)state;
    write_bundle(NULL, NULL);
    rt_prep_report rep;
    char err[RT_ERR_LEN];
    assert_int_equal(prep(3, false, &rep, err), RT_OK);
    rt_dataset *ds = NULL;
    assert_int_equal(rt_dataset_open(out, &ds, err), RT_OK);
    assert_int_equal(ds->nparts, 3);
    int64_t total = 0, lo = 1 << 30, hi = 0;
    for (int p = 0; p < 3; p++) {
        rt_shard *s = NULL;
        assert_int_equal(rt_dataset_read_part(ds, p, false, &s, err), RT_OK);
        total += s->nrows;
        lo = s->nrows < lo ? s->nrows : lo;
        hi = s->nrows > hi ? s->nrows : hi;
        rt_shard_free(s);
    }
    assert_int_equal(total, 31);
    assert_true(hi - lo <= 1); /* dealt round-robin */
    rt_dataset_free(ds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_checked),
        cmocka_unit_test(test_bad_rows),
        cmocka_unit_test(test_lost_rows),
        cmocka_unit_test(test_partitions),
        cmocka_unit_test(test_misspelled_column),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
