/* gen_world.c — the generator's world: calendars (public holidays, school
 * holidays, promos), the real auxiliary files read in, or a synthetic world
 * made up and written out in the Kaggle formats. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "rt_csv.h"
#include "rt_prep.h"

/* The 16 states as in the bundle's state_names.csv (NI's code is "HB,NI"). */
static const char *const STATE_NAMES[16] = {
    "BadenWuerttemberg", "Bayern",          "Berlin",         "Brandenburg",
    "Bremen",            "Hamburg",         "Hessen",         "MecklenburgVorpommern",
    "Niedersachsen",     "NordrheinWestfalen", "RheinlandPfalz", "Saarland",
    "Sachsen",           "SachsenAnhalt",   "SchleswigHolstein", "Thueringen"};
static const char *const STATE_CODES[16] = {"BW", "BY", "BE", "BB", "HB", "HH", "HE", "MV",
                                            "HB,NI", "NW", "RP", "SL", "SN", "ST", "SH", "TH"};

static int day_of(const char *date)
{
    int32_t d;
    return rt_parse_date(date, &d) ? d : -1;
}

static bool state_in(const char *code, const char *list)
{
    const char *c = !strcmp(code, "HB,NI") ? "NI" : code;
    char buf[64];
    snprintf(buf, sizeof buf, " %s ", list);
    char key[8];
    snprintf(key, sizeof key, " %s ", c);
    return strstr(buf, key) != NULL;
}

/* ---- calendars --------------------------------------------------------------------- */

static void set_holiday(gen_world *w, int st, int day, char kind)
{
    int i = day - GEN_FIRST_DAY;
    if (i >= 0 && i < GEN_NDAYS)
        w->holiday[st * GEN_NDAYS + i] = kind;
}

static void set_school(gen_world *w, int st, int first, int ndays)
{
    for (int d = first; d < first + ndays; d++) {
        int i = d - GEN_FIRST_DAY;
        if (i >= 0 && i < GEN_NDAYS)
            w->school[st * GEN_NDAYS + i] = 1;
    }
}

static int ymd(int y, int m, int d)
{
    char b[16];
    snprintf(b, sizeof b, "%04d-%02d-%02d", y, m, d);
    return day_of(b);
}

void gen_calendars(gen_world *w)
{
    static const char *const easter[3] = {"2013-03-31", "2014-04-20", "2015-04-05"};
    static const char *const repentance[3] = {"2013-11-20", "2014-11-19", "2015-11-18"};
    for (int st = 0; st < w->nstates; st++) {
        const char *c = w->code[st];
        for (int i = 0; i < GEN_NDAYS; i++)
            w->holiday[st * GEN_NDAYS + i] = '0';
        for (int k = 0; k < 3; k++) {
            int y = 2013 + k, e = day_of(easter[k]);
            set_holiday(w, st, ymd(y, 1, 1), 'a');
            set_holiday(w, st, ymd(y, 5, 1), 'a');
            set_holiday(w, st, ymd(y, 10, 3), 'a');
            set_holiday(w, st, e - 2, 'b'); /* Good Friday, Easter Monday */
            set_holiday(w, st, e + 1, 'b');
            set_holiday(w, st, e + 39, 'a'); /* Ascension, Whit Monday */
            set_holiday(w, st, e + 50, 'a');
            set_holiday(w, st, ymd(y, 12, 25), 'c');
            set_holiday(w, st, ymd(y, 12, 26), 'c');
            if (state_in(c, "BW BY ST"))
                set_holiday(w, st, ymd(y, 1, 6), 'a');
            if (state_in(c, "BW BY HE NW RP SL"))
                set_holiday(w, st, e + 60, 'a'); /* Corpus Christi */
            if (state_in(c, "BY SL"))
                set_holiday(w, st, ymd(y, 8, 15), 'a');
            if (state_in(c, "BB MV SN ST TH"))
                set_holiday(w, st, ymd(y, 10, 31), 'a');
            if (state_in(c, "BW BY NW RP SL"))
                set_holiday(w, st, ymd(y, 11, 1), 'a');
            if (state_in(c, "SN"))
                set_holiday(w, st, day_of(repentance[k]), 'a');
            /* school holidays: Christmas, Easter, (Whitsun), summer, autumn;
             * the dates move by state and year as the real ones do */
            uint64_t s = w->seed ^ 0x5c400100u;
            int sh = (int)(gen_uniform(s, 1, (uint64_t)st, (uint64_t)y) * 5) - 2;
            set_school(w, st, ymd(y, 12, 23) + sh, 13 - sh);
            set_school(w, st, ymd(y, 1, 1), 4 + (sh > 0 ? sh : 0));
            set_school(w, st, e - 9 + (int)(gen_uniform(s, 2, (uint64_t)st, (uint64_t)y) * 7) - 3,
                       14);
            if (state_in(c, "BW BY"))
                set_school(w, st, e + 49, 10);
            set_school(w, st, ymd(y, 6, 20) + (int)(gen_uniform(s, 3, (uint64_t)st, (uint64_t)y) * 42),
                       42);
            set_school(w, st, ymd(y, 10, 1) + (int)(gen_uniform(s, 4, (uint64_t)st, (uint64_t)y) * 21),
                       11);
        }
    }
    /* promos: Monday to Friday of every other week, now and then shifted */
    int week_parity = 0;
    for (int i = 0; i < GEN_NDAYS; i++) {
        int day = GEN_FIRST_DAY + i;
        int wd = (int)(((day + 3) % 7 + 7) % 7); /* 0 = Monday */
        if (wd == 0 && gen_uniform(w->seed, 0x960, (uint64_t)(day / 7), 0) < 0.08)
            week_parity ^= 1; /* a shifted promo cycle */
        int week = (day - GEN_FIRST_DAY + 1) / 7; /* 2012-12-31 was a Monday */
        w->promo[i] = wd < 5 && ((week + week_parity) % 2 == 0);
    }
}

/* ---- the real auxiliary files -------------------------------------------------------- */

static rt_status open_aux(const char *dir, const char *stem, rt_csv **c, char *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.csv", dir, stem);
    if (rt_csv_open(path, c, err) == RT_OK)
        return RT_OK;
    snprintf(path, sizeof path, "%s/%s.csv.gz", dir, stem);
    return rt_csv_open(path, c, err);
}

/* Header positions of wanted columns; false (and err) when one is missing. */
static bool columns(rt_csv *c, const char *const *want, int n, int *pos, char *err)
{
    for (int k = 0; k < n; k++) {
        pos[k] = -1;
        for (size_t i = 0; i < rt_csv_nfields(c); i++)
            if (!strcmp(rt_csv_field(c, i, NULL), want[k]))
                pos[k] = (int)i;
        if (pos[k] < 0) {
            rt_err(err, RT_ERR_INVALID, "%s: no column %s", rt_csv_name(c), want[k]);
            return false;
        }
    }
    return true;
}

static int state_index(const gen_world *w, const char *code)
{
    for (int i = 0; i < w->nstates; i++)
        if (!strcmp(w->code[i], code))
            return i;
    return -1;
}

static const char *F(rt_csv *c, int i) { return rt_csv_field(c, (size_t)i, NULL); }

static rt_status read_states(gen_world *w, const char *dir, char *err)
{
    rt_csv *c = NULL;
    rt_status st = open_aux(dir, "state_names", &c, err);
    int pos[2];
    const char *want[] = {"StateName", "State"};
    if (st == RT_OK && (rt_csv_next(c, err) != 1 || !columns(c, want, 2, pos, err)))
        st = RT_ERR_INVALID;
    int r;
    while (st == RT_OK && (r = rt_csv_next(c, err)) == 1 && w->nstates < GEN_MAX_STATES) {
        snprintf(w->name[w->nstates], sizeof w->name[0], "%s", F(c, pos[0]));
        snprintf(w->code[w->nstates], sizeof w->code[0], "%s", F(c, pos[1]));
        w->nstates++;
    }
    rt_csv_close(c);
    return st;
}

static rt_status read_stores(gen_world *w, const char *dir, int max_stores, char *err)
{
    rt_csv *c = NULL;
    rt_status st = open_aux(dir, "store_states", &c, err);
    int states[2000];
    for (int i = 0; i < 2000; i++)
        states[i] = -1;
    int pos[10];
    const char *ws[] = {"Store", "State"};
    if (st == RT_OK && (rt_csv_next(c, err) != 1 || !columns(c, ws, 2, pos, err)))
        st = RT_ERR_INVALID;
    while (st == RT_OK && rt_csv_next(c, err) == 1) {
        int id = atoi(F(c, pos[0]));
        if (id > 0 && id < 2000)
            states[id] = state_index(w, F(c, pos[1]));
    }
    rt_csv_close(c);
    c = NULL;
    if (st == RT_OK)
        st = open_aux(dir, "store", &c, err);
    const char *want[] = {"Store", "StoreType", "Assortment", "CompetitionDistance",
                          "CompetitionOpenSinceMonth", "CompetitionOpenSinceYear", "Promo2",
                          "Promo2SinceWeek", "Promo2SinceYear", "PromoInterval"};
    if (st == RT_OK && (rt_csv_next(c, err) != 1 || !columns(c, want, 10, pos, err)))
        st = RT_ERR_INVALID;
    w->stores = calloc(2000, sizeof *w->stores);
    while (st == RT_OK && rt_csv_next(c, err) == 1 && w->nstores < max_stores) {
        gen_store *s = &w->stores[w->nstores];
        s->id = atoi(F(c, pos[0]));
        if (s->id <= 0 || s->id >= 2000 || states[s->id] < 0) {
            st = rt_err(err, RT_ERR_INVALID, "%s:%lld: store %s has no state in store_states",
                        rt_csv_name(c), (long long)rt_csv_line(c), F(c, pos[0]));
            break;
        }
        s->type = F(c, pos[1])[0];
        s->assort = F(c, pos[2])[0];
        s->dist = *F(c, pos[3]) ? atof(F(c, pos[3])) : -1;
        s->comp_month = atoi(F(c, pos[4]));
        s->comp_year = atoi(F(c, pos[5]));
        s->promo2 = atoi(F(c, pos[6]));
        s->p2_week = atoi(F(c, pos[7]));
        s->p2_year = atoi(F(c, pos[8]));
        snprintf(s->interval, sizeof s->interval, "%s", F(c, pos[9]));
        s->state = states[s->id];
        s->in_test = true;
        w->nstores++;
    }
    rt_csv_close(c);
    return st;
}

static rt_status read_weather(gen_world *w, const char *dir, char *err)
{
    for (int i = 0; i < GEN_MAX_STATES * GEN_NDAYS; i++)
        w->tmax[i] = NAN;
    rt_csv *c = NULL;
    rt_status st = open_aux(dir, "weather", &c, err);
    int pos[4];
    const char *want[] = {"file", "Date", "Max_TemperatureC", "Events"};
    if (st == RT_OK && (rt_csv_next(c, err) != 1 || !columns(c, want, 4, pos, err)))
        st = RT_ERR_INVALID;
    int r;
    while (st == RT_OK && (r = rt_csv_next(c, err)) == 1) {
        int sti = -1;
        for (int k = 0; k < w->nstates; k++)
            if (!strcmp(w->name[k], F(c, pos[0])))
                sti = k;
        int i = day_of(F(c, pos[1])) - GEN_FIRST_DAY;
        if (sti < 0 || i < 0 || i >= GEN_NDAYS)
            continue;
        const char *t = F(c, pos[2]);
        w->tmax[sti * GEN_NDAYS + i] = strcmp(t, "NA") && *t ? (float)atof(t) : NAN;
        snprintf(w->events[sti * GEN_NDAYS + i], sizeof w->events[0], "%s", F(c, pos[3]));
    }
    if (st == RT_OK && r < 0)
        st = RT_ERR_INVALID;
    rt_csv_close(c);
    return st;
}

/* A day takes the googletrend row whose week-start Sunday has the day's
 * calendar year and ISO week (prep.sql's join); tab[state][year - 2012][week]
 * holds the rows, state GEN_MAX_STATES being all of Germany. */
typedef int16_t trend_tab[GEN_MAX_STATES + 1][4][54];

static void trend_days(gen_world *w, trend_tab tab)
{
    for (int i = 0; i < GEN_NDAYS; i++) {
        char d[11];
        rt_format_date(GEN_FIRST_DAY + i, d);
        int y = atoi(d) - 2012, wk = rt_iso_week(d);
        w->trend_de[i] = tab[GEN_MAX_STATES][y][wk];
        for (int s = 0; s < w->nstates; s++)
            w->trend[s * GEN_NDAYS + i] = tab[s][y][wk];
    }
}

static void trend_put(trend_tab tab, int st, const char *week_start, int16_t v)
{
    int y = atoi(week_start), wk = rt_iso_week(week_start);
    if (y >= 2012 && y <= 2015 && wk > 0)
        tab[st][y - 2012][wk] = v;
}

static rt_status read_trend(gen_world *w, const char *dir, char *err)
{
    static trend_tab tab;
    memset(tab, 0xff, sizeof tab);
    rt_csv *c = NULL;
    rt_status st = open_aux(dir, "googletrend", &c, err);
    int pos[3];
    const char *want[] = {"file", "week", "trend"};
    if (st == RT_OK && (rt_csv_next(c, err) != 1 || !columns(c, want, 3, pos, err)))
        st = RT_ERR_INVALID;
    while (st == RT_OK && rt_csv_next(c, err) == 1) {
        const char *file = F(c, pos[0]);
        int sti = GEN_MAX_STATES; /* Rossmann_DE: all of Germany */
        if (!strncmp(file, "Rossmann_DE_", 12)) {
            const char *code = !strcmp(file + 12, "NI") ? "HB,NI" : file + 12;
            sti = state_index(w, code);
            if (sti < 0)
                continue;
        }
        char start[11];
        snprintf(start, sizeof start, "%.10s", F(c, pos[1]));
        trend_put(tab, sti, start, (int16_t)atoi(F(c, pos[2])));
    }
    rt_csv_close(c);
    trend_days(w, tab);
    return st;
}

static rt_status read_test_range(gen_world *w, const char *dir, char *err)
{
    rt_csv *c = NULL;
    rt_status st = open_aux(dir, "test", &c, err);
    int pos[1] = {-1};
    const char *want[] = {"Date"};
    if (st == RT_OK && (rt_csv_next(c, err) != 1 || !columns(c, want, 1, pos, err)))
        st = RT_ERR_INVALID;
    w->test_first = 1 << 30;
    w->test_last = 0;
    while (st == RT_OK && rt_csv_next(c, err) == 1) {
        int d = day_of(F(c, pos[0]));
        if (d > 0 && d < w->test_first)
            w->test_first = d;
        if (d > w->test_last)
            w->test_last = d;
    }
    rt_csv_close(c);
    if (st == RT_OK && w->test_last == 0)
        st = rt_err(err, RT_ERR_INVALID, "%s/test.csv has no dates", dir);
    return st;
}

rt_status gen_read_aux(gen_world *w, const char *dir, int max_stores, char *err)
{
    rt_status st = read_states(w, dir, err);
    if (st == RT_OK)
        st = read_stores(w, dir, max_stores, err);
    if (st == RT_OK)
        st = read_weather(w, dir, err);
    if (st == RT_OK)
        st = read_trend(w, dir, err);
    if (st == RT_OK)
        st = read_test_range(w, dir, err);
    return st;
}

/* ---- a synthetic world ------------------------------------------------------------------ */

static const char *const INTERVALS[3] = {"Jan,Apr,Jul,Oct", "Feb,May,Aug,Nov", "Mar,Jun,Sept,Dec"};
/* the twelve states that have stores, roughly as often as in store_states.csv */
static const char *const STORE_STATES[12] = {"NW", "BY", "SH", "HE", "BE", "SN",
                                             "BW", "ST", "RP", "TH", "HH", "HB,NI"};
static const double STORE_STATE_P[12] = {.26, .16, .10, .10, .08, .07, .07, .05, .04, .03, .025, .015};

void gen_synth_world(gen_world *w, int nstores)
{
    uint64_t s = w->seed ^ 0x5e1f0000u;
    w->nstates = 16;
    for (int i = 0; i < 16; i++) {
        snprintf(w->code[i], sizeof w->code[i], "%s", STATE_CODES[i]);
        snprintf(w->name[i], sizeof w->name[i], "%s", STATE_NAMES[i]);
    }
    w->stores = calloc((size_t)nstores, sizeof *w->stores);
    w->nstores = nstores;
    for (int i = 0; i < nstores; i++) {
        gen_store *st = &w->stores[i];
        uint64_t id = (uint64_t)i + 1;
        st->id = i + 1;
        double u = gen_uniform(s, 1, id, 0);
        st->type = u < 0.54 ? 'a' : u < 0.555 ? 'b' : u < 0.69 ? 'c' : 'd';
        u = gen_uniform(s, 2, id, 0);
        st->assort = st->type == 'b' ? (u < 0.5 ? 'b' : 'a') : (u < 0.54 ? 'a' : 'c');
        st->dist = gen_uniform(s, 3, id, 0) < 0.003
                       ? -1
                       : round(exp(log(2300) + 1.2 * gen_normal(s, 4, id, 0)) / 10) * 10 + 20;
        if (gen_uniform(s, 5, id, 0) < 0.68) {
            st->comp_month = 1 + (int)(gen_uniform(s, 6, id, 0) * 12);
            st->comp_year = 2015 - (int)(pow(gen_uniform(s, 7, id, 0), 2.5) * 25);
        }
        st->promo2 = gen_uniform(s, 8, id, 0) < 0.49;
        if (st->promo2) {
            st->p2_year = 2009 + (int)(gen_uniform(s, 9, id, 0) * 7);
            st->p2_week = 1 + (int)(gen_uniform(s, 10, id, 0) * 50);
            snprintf(st->interval, sizeof st->interval, "%s",
                     INTERVALS[(int)(gen_uniform(s, 11, id, 0) * 3)]);
        }
        u = gen_uniform(s, 12, id, 0);
        int k = 0;
        for (double acc = STORE_STATE_P[0]; k < 11 && u > acc; acc += STORE_STATE_P[++k]) {
        }
        st->state = state_index(w, STORE_STATES[k]);
        st->in_test = gen_uniform(s, 13, id, 0) < 0.77;
    }
    /* weather: a seasonal temperature with a state offset and day-to-day
     * persistence; rain, snow, fog and thunderstorms by season */
    for (int st = 0; st < 16; st++) {
        double off = 3 * gen_normal(s, 20, (uint64_t)st, 0) / 2, ar = 0;
        for (int i = 0; i < GEN_NDAYS; i++) {
            double doy = fmod(i, 365.25);
            ar = 0.7 * ar + 3.2 * gen_normal(s, 21, (uint64_t)st, (uint64_t)i);
            double t = 13.5 + 11 * sin(2 * M_PI * (doy - 105) / 365.25) + off + ar;
            int j = st * GEN_NDAYS + i;
            w->tmax[j] = (float)round(t);
            bool rain = gen_uniform(s, 22, (uint64_t)st, (uint64_t)i) < 0.38;
            bool snow = rain && t < 3, fog = gen_uniform(s, 23, (uint64_t)st, (uint64_t)i) < 0.06;
            bool thunder = rain && t > 23 && gen_uniform(s, 24, (uint64_t)st, (uint64_t)i) < 0.35;
            bool hail = rain && gen_uniform(s, 25, (uint64_t)st, (uint64_t)i) < 0.01;
            char *e = w->events[j];
            e[0] = '\0';
            const char *parts[5] = {fog ? "Fog" : NULL, rain && !snow ? "Rain" : NULL,
                                    snow ? "Snow" : NULL, hail ? "Hail" : NULL,
                                    thunder ? "Thunderstorm" : NULL};
            for (int p = 0; p < 5; p++)
                if (parts[p]) {
                    if (e[0])
                        strcat(e, "-");
                    strcat(e, parts[p]);
                }
        }
    }
    /* Google trend per state and week (DE last): seasonal, with noise */
    static trend_tab tab;
    memset(tab, 0xff, sizeof tab);
    for (int st = 0; st <= 16; st++)
        for (int k = 0; k < GEN_TREND_WEEKS; k++) {
            int sunday = GEN_TREND_FIRST + 7 * k;
            double doy = fmod(sunday - GEN_FIRST_DAY + 365.25, 365.25);
            double v = 62 + 9 * sin(2 * M_PI * (doy - 80) / 365.25) + (doy > 330 ? 12 : 0) +
                       4 * gen_normal(s, 30, (uint64_t)st, (uint64_t)k);
            int16_t t = (int16_t)fmax(0, fmin(100, round(v)));
            w->wtrend[st][k] = t;
            char d[11];
            rt_format_date(sunday, d);
            trend_put(tab, st == 16 ? GEN_MAX_STATES : st, d, t);
        }
    trend_days(w, tab);
    w->test_first = 16648; /* 2015-08-01 .. 2015-09-17, as in Kaggle's test.csv */
    w->test_last = 16695;
}
