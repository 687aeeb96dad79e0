/* gen.h — rossmann-gen, the Rossmann data generator (see README.md here for
 * the ground truth it draws Sales from).
 *
 * The world is the calendar 2013-01-01 .. 2015-09-17 (the days of the
 * Kaggle files, train and test): per state the public and school holidays,
 * the weather and the Google trend; per day the promo; per store its
 * attributes from store.csv and its hidden traits (base level, weekday
 * profile, promo and school-holiday response, basket size, closures).
 * Every random quantity is a hash of (seed, what, store or state, day), so
 * a store's rows do not depend on which other stores are generated. */
#ifndef ROSSMANN_GEN_H
#define ROSSMANN_GEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "rt_status.h"

#define GEN_FIRST_DAY 15706 /* 2013-01-01 in days since 1970-01-01 */
#define GEN_NDAYS 990       /* .. 2015-09-17 */
#define GEN_TRAIN_LAST 16647 /* 2015-07-31 */
#define GEN_MAX_STATES 16
#define GEN_TREND_FIRST 15676 /* 2012-12-02, the first week of googletrend.csv */
#define GEN_TREND_WEEKS 148

typedef struct gen_store {
    int id;
    char type, assort;           /* a..d, a..c */
    double dist;                 /* CompetitionDistance, < 0 when NA */
    int comp_month, comp_year;   /* 0 when NA */
    int promo2, p2_week, p2_year;
    char interval[24];           /* PromoInterval text, "" when none */
    int state;                   /* index into gen_world.code */
    bool in_test;                /* appears in test.csv (synthetic mode) */
    /* hidden traits */
    double base, dow[7], promo, school, rain, heat, basket;
    bool sunday_open;
    int refurb_first, refurb_days; /* a closure stretch (days from GEN_FIRST_DAY), 0 days: none */
} gen_store;

typedef struct gen_world {
    uint64_t seed;
    int nstates;
    char code[GEN_MAX_STATES][8];   /* "BE", "HB,NI", ... */
    char name[GEN_MAX_STATES][40];  /* "Berlin", "Niedersachsen", ... */
    int nstores;
    gen_store *stores;
    /* per state and day (index state * GEN_NDAYS + day) */
    char holiday[GEN_MAX_STATES * GEN_NDAYS];      /* '0', 'a', 'b', 'c' */
    uint8_t school[GEN_MAX_STATES * GEN_NDAYS];
    float tmax[GEN_MAX_STATES * GEN_NDAYS];        /* Max_TemperatureC (NAN when NA) */
    char events[GEN_MAX_STATES * GEN_NDAYS][32];   /* "" when none */
    int16_t trend[GEN_MAX_STATES * GEN_NDAYS];     /* the state's trend of the day's week, -1 NA */
    int16_t trend_de[GEN_NDAYS];
    int16_t wtrend[GEN_MAX_STATES + 1][GEN_TREND_WEEKS]; /* synthetic googletrend rows (DE last) */
    uint8_t promo[GEN_NDAYS];
    int test_first, test_last;                     /* days since 1970 of test.csv's range */
} gen_world;

/* ---- counter-based randomness -------------------------------------------------- */
uint64_t gen_hash(uint64_t seed, uint64_t a, uint64_t b, uint64_t c);
double gen_uniform(uint64_t seed, uint64_t a, uint64_t b, uint64_t c);  /* [0, 1) */
double gen_normal(uint64_t seed, uint64_t a, uint64_t b, uint64_t c);   /* N(0, 1) */

/* ---- gen_world.c ---------------------------------------------------------------- */
/* The calendars (holidays, school holidays, promos) for the states in w. */
void gen_calendars(gen_world *w);
/* Read the real auxiliary files of dir (store, store_states, state_names,
 * googletrend, weather, test; .csv or .csv.gz) into w: stores, states,
 * weather, trend, test range. */
rt_status gen_read_aux(gen_world *w, const char *dir, int max_stores, char *err);
/* Make up stores, states, weather and trend (synthetic mode). */
void gen_synth_world(gen_world *w, int nstores);
/* Write the synthetic auxiliary files (Kaggle formats) into dir. */
rt_status gen_write_aux(const gen_world *w, const char *dir, char *err);

/* ---- gen_truth.c ---------------------------------------------------------------- */
/* Hidden traits of every store. */
void gen_store_traits(gen_world *w);
/* One store-day: open?, the true expected sales (0 when closed), the
 * drawn Sales and Customers. */
typedef struct gen_day {
    int open;            /* 0 or 1 */
    double truth;        /* exp(log f) before noise */
    long sales, customers;
} gen_day;
gen_day gen_store_day(const gen_world *w, const gen_store *s, int day, double sigma);
/* Days until the state's next public holiday (1..), or 0 when none within 3. */
int gen_days_to_holiday(const gen_world *w, int state, int day);

#endif
