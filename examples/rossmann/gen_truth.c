/* gen_truth.c — the ground truth: every store's hidden traits and the
 * expected sales of a store-day (README.md here writes the model out). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gen.h"
#include "rt_prep.h"

/* ---- counter-based randomness (splitmix64 over the mixed inputs) ------------- */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t gen_hash(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    return mix(mix(mix(mix(seed) ^ a) ^ b) ^ c);
}

double gen_uniform(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    return (double)(gen_hash(seed, a, b, c) >> 11) * 0x1.0p-53;
}

double gen_normal(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    double u1 = gen_uniform(seed, a, b, c * 2 + 0x51ull), u2 = gen_uniform(seed, a, b, c * 2 + 0x52ull);
    return sqrt(-2.0 * log(u1 + 0x1.0p-60)) * cos(2 * M_PI * u2);
}

/* ---- traits ------------------------------------------------------------------------ */

static int type_index(char t) { return t >= 'a' && t <= 'd' ? t - 'a' : 0; }

/* Weekday profiles (log), Monday first, by store type. */
static const double DOW[4][7] = {
    {0.10, 0.00, -0.04, -0.03, 0.03, -0.08, 0.00}, /* a */
    {0.00, -0.02, -0.03, -0.02, 0.05, 0.10, 0.25},  /* b: station and tourist shops */
    {0.14, 0.02, -0.05, -0.04, 0.06, -0.15, 0.00},  /* c */
    {0.08, 0.00, -0.03, -0.02, 0.05, -0.02, 0.00},  /* d */
};
static const double TYPE_BASE[4] = {1.00, 1.90, 1.05, 1.00};
static const double PROMO[4] = {0.28, 0.10, 0.22, 0.32};
static const double SCHOOL[4] = {-0.02, 0.08, -0.04, 0.01};
static const double RAIN[4] = {-0.04, 0.05, -0.04, -0.03};
static const double HEAT[4] = {-0.05, 0.04, -0.03, -0.05};

void gen_store_traits(gen_world *w)
{
    uint64_t seed = w->seed ^ 0x7a175u;
    for (int i = 0; i < w->nstores; i++) {
        gen_store *s = &w->stores[i];
        uint64_t id = (uint64_t)s->id;
        int t = type_index(s->type);
        double assort = s->assort == 'b' ? 1.10 : s->assort == 'c' ? 1.15 : 1.0;
        s->base = 4200 * TYPE_BASE[t] * assort * exp(0.30 * gen_normal(seed, 1, id, 0));
        for (int d = 0; d < 7; d++) /* the store x weekday interaction */
            s->dow[d] = DOW[t][d] + 0.03 * gen_normal(seed, 2, id, (uint64_t)d);
        s->promo = PROMO[t] + 0.06 * gen_normal(seed, 3, id, 0);
        s->school = SCHOOL[t] + 0.03 * gen_normal(seed, 4, id, 0);
        s->rain = RAIN[t] + 0.02 * gen_normal(seed, 5, id, 0);
        s->heat = HEAT[t];
        s->basket = 6 + 7 * gen_uniform(seed, 6, id, 0);
        s->sunday_open = s->type == 'b' || gen_uniform(seed, 7, id, 0) < 0.01;
        if (gen_uniform(seed, 8, id, 0) < 0.03) { /* refurbishment: closed for a while */
            s->refurb_first = 200 + (int)(gen_uniform(seed, 9, id, 0) * 600);
            s->refurb_days = 30 + (int)(gen_uniform(seed, 10, id, 0) * 120);
        }
    }
}

/* ---- a store-day --------------------------------------------------------------------- */

int gen_days_to_holiday(const gen_world *w, int state, int day)
{
    int i = day - GEN_FIRST_DAY;
    for (int k = 1; k <= 3 && i + k < GEN_NDAYS; k++)
        if (w->holiday[state * GEN_NDAYS + i + k] != '0')
            return k;
    return 0;
}

static int days_after_holiday(const gen_world *w, int state, int day)
{
    int i = day - GEN_FIRST_DAY;
    for (int k = 1; k <= 2 && i - k >= 0; k++)
        if (w->holiday[state * GEN_NDAYS + i - k] != '0')
            return k;
    return 0;
}

static bool promo2_active(const gen_store *s, int day, int month)
{
    if (!s->promo2 || s->p2_year < 1900)
        return false;
    char jan1[11];
    snprintf(jan1, sizeof jan1, "%04d-01-01", s->p2_year);
    int32_t start;
    if (!rt_parse_date(jan1, &start) || day < start + (s->p2_week - 1) * 7)
        return false;
    static const char *const MON[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sept", "Oct", "Nov", "Dec"};
    char list[32];
    snprintf(list, sizeof list, ",%s,", s->interval);
    char key[8];
    snprintf(key, sizeof key, ",%s,", MON[month - 1]);
    return strstr(list, key) != NULL;
}

gen_day gen_store_day(const gen_world *w, const gen_store *s, int day, double sigma)
{
    gen_day r = {0};
    int i = day - GEN_FIRST_DAY, st = s->state, j = st * GEN_NDAYS + i;
    int wd = (int)(((day + 3) % 7 + 7) % 7); /* 0 = Monday */
    uint64_t seed = w->seed ^ 0xda75u, id = (uint64_t)s->id;
    char date[11];
    rt_format_date(day, date);
    int month = (date[5] - '0') * 10 + (date[6] - '0'), dom = (date[8] - '0') * 10 + (date[9] - '0');
    bool refurb = s->refurb_days > 0 && i >= s->refurb_first && i < s->refurb_first + s->refurb_days;
    bool holiday = w->holiday[j] != '0';
    if (refurb || (wd == 6 && !s->sunday_open) || (holiday && s->type != 'b') ||
        gen_uniform(seed, 1, id, (uint64_t)day) < 0.004)
        return r; /* closed: Open 0, no sales, no customers */
    r.open = 1;
    double L = log(s->base) + s->dow[wd];
    if (w->promo[i])
        L += s->promo + (wd == 0 ? 0.05 : 0.0);
    if (promo2_active(s, day, month))
        L += 0.03;
    static const double BEFORE[3] = {0.15, 0.08, 0.04}, AFTER[2] = {0.10, 0.04};
    int b = gen_days_to_holiday(w, st, day), a = days_after_holiday(w, st, day);
    if (b)
        L += BEFORE[b - 1];
    if (a)
        L += AFTER[a - 1];
    if (w->school[j])
        L += s->school;
    double doy = i % 365;
    L += 0.04 * sin(2 * M_PI * doy / 365.25) + 0.03 * cos(2 * M_PI * doy / 365.25);
    if (month == 12 && dom <= 24)
        L += 0.30 * (dom / 24.0) * (dom / 24.0); /* Christmas shopping */
    if (month == 1 && dom <= 10)
        L -= 0.06;
    if (s->dist >= 0) { /* a competitor nearby takes a share, growing over 6 months */
        double opened = 1e9;
        if (s->comp_year > 1900 && s->comp_month >= 1) {
            char since[11];
            snprintf(since, sizeof since, "%04d-%02d-15", s->comp_year, s->comp_month);
            int32_t d0;
            if (rt_parse_date(since, &d0))
                opened = day - d0;
        }
        if (opened >= 0)
            L -= 0.20 * exp(-s->dist / 2500.0) * fmin(1.0, opened / 180.0);
    }
    const char *ev = w->events[j];
    if (strstr(ev, "Rain") || strstr(ev, "Thunderstorm"))
        L += s->rain;
    if (strstr(ev, "Snow"))
        L -= 0.07;
    if (!isnan(w->tmax[j]) && w->tmax[j] >= 27)
        L += s->heat;
    if (w->trend[j] >= 0)
        L += 0.004 * (w->trend[j] - 62);
    r.truth = exp(L);
    double sales = r.truth * exp(sigma * gen_normal(seed, 2, id, (uint64_t)day));
    r.sales = lround(sales);
    r.customers = lround(sales / s->basket * exp(0.05 * gen_normal(seed, 3, id, (uint64_t)day)));
    if (gen_uniform(seed, 4, id, (uint64_t)day) < 1e-4)
        r.sales = r.customers = 0; /* open, but nothing sold (Kaggle has such rows) */
    return r;
}
