/* gen_aux.c — the synthetic auxiliary files, byte for byte in the formats of
 * the Kaggle/fast.ai bundle: quoted headers and strings, CRLF in
 * store_states.csv, "HB,NI", blank lines after blocks, NA, missing Open. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gen.h"
#include "rt_prep.h"

static FILE *create(const char *dir, const char *name, char *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        rt_err(err, RT_ERR_IO, "cannot create %s", path);
    return f;
}

static const char *csv_code(const char *code, char *buf, size_t len)
{
    snprintf(buf, len, strchr(code, ',') ? "\"%s\"" : "%s", code);
    return buf;
}

static rt_status finish(FILE *f, const char *name, char *err)
{
    bool ok = !ferror(f);
    if (fclose(f) != 0 || !ok)
        return rt_err(err, RT_ERR_IO, "cannot write %s", name);
    return RT_OK;
}

static rt_status write_stores(const gen_world *w, const char *dir, char *err)
{
    FILE *f = create(dir, "store.csv", err);
    if (!f)
        return RT_ERR_IO;
    fputs("\"Store\",\"StoreType\",\"Assortment\",\"CompetitionDistance\","
          "\"CompetitionOpenSinceMonth\",\"CompetitionOpenSinceYear\",\"Promo2\","
          "\"Promo2SinceWeek\",\"Promo2SinceYear\",\"PromoInterval\"\n", f);
    for (int i = 0; i < w->nstores; i++) {
        const gen_store *s = &w->stores[i];
        fprintf(f, "%d,\"%c\",\"%c\",", s->id, s->type, s->assort);
        if (s->dist >= 0)
            fprintf(f, "%.0f", s->dist);
        if (s->comp_year)
            fprintf(f, ",%d,%d,", s->comp_month, s->comp_year);
        else
            fputs(",,,", f);
        if (s->promo2)
            fprintf(f, "1,%d,%d,\"%s\"\n", s->p2_week, s->p2_year, s->interval);
        else
            fputs("0,,,\"\"\n", f);
    }
    rt_status st = finish(f, "store.csv", err);
    if (st != RT_OK || !(f = create(dir, "store_states.csv", err)))
        return RT_ERR_IO;
    fputs("Store,State\r\n", f);
    char b[16];
    for (int i = 0; i < w->nstores; i++)
        fprintf(f, "%d,%s\r\n", w->stores[i].id,
                csv_code(w->code[w->stores[i].state], b, sizeof b));
    st = finish(f, "store_states.csv", err);
    if (st != RT_OK || !(f = create(dir, "state_names.csv", err)))
        return RT_ERR_IO;
    fputs("StateName,State\n", f);
    for (int s = 0; s < w->nstates; s++)
        fprintf(f, "%s,%s\n", w->name[s], csv_code(w->code[s], b, sizeof b));
    return finish(f, "state_names.csv", err);
}

static rt_status write_trend(const gen_world *w, const char *dir, char *err)
{
    FILE *f = create(dir, "googletrend.csv", err);
    if (!f)
        return RT_ERR_IO;
    fputs("file,week,trend\n", f);
    /* the bundle's block order: Sachsen first, then all of Germany (followed
     * by a blank line), then the other states alphabetically */
    static const char *const order[] = {"SN", "DE", "BE", "BW", "BY", "HE", "HH",
                                        "NI", "NW", "RP", "SH", "SL", "ST", "TH"};
    for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
        int st = GEN_MAX_STATES;
        if (strcmp(order[k], "DE") != 0) {
            st = -1;
            for (int s = 0; s < w->nstates; s++)
                if (!strcmp(w->code[s], !strcmp(order[k], "NI") ? "HB,NI" : order[k]))
                    st = s;
            if (st < 0)
                continue;
        }
        for (int i = 0; i < GEN_TREND_WEEKS; i++) {
            char a[11], z[11];
            rt_format_date(GEN_TREND_FIRST + 7 * i, a);
            rt_format_date(GEN_TREND_FIRST + 7 * i + 6, z);
            fprintf(f, "Rossmann_DE%s%s,%s - %s,%d\n", st == GEN_MAX_STATES ? "" : "_",
                    st == GEN_MAX_STATES ? "" : order[k], a, z,
                    w->wtrend[st == GEN_MAX_STATES ? 16 : st][i]);
        }
        if (st == GEN_MAX_STATES)
            fputs("\n", f);
    }
    return finish(f, "googletrend.csv", err);
}

static rt_status write_weather(const gen_world *w, const char *dir, char *err)
{
    FILE *f = create(dir, "weather.csv", err);
    if (!f)
        return RT_ERR_IO;
    fputs("file,\"Date\",\"Max_TemperatureC\",\"Mean_TemperatureC\",\"Min_TemperatureC\","
          "\"Dew_PointC\",\"MeanDew_PointC\",\"Min_DewpointC\",\"Max_Humidity\","
          "\"Mean_Humidity\",\"Min_Humidity\",\"Max_Sea_Level_PressurehPa\","
          "\"Mean_Sea_Level_PressurehPa\",\"Min_Sea_Level_PressurehPa\",\"Max_VisibilityKm\","
          "\"Mean_VisibilityKm\",\"Min_VisibilitykM\",\"Max_Wind_SpeedKm_h\","
          "\"Mean_Wind_SpeedKm_h\",\"Max_Gust_SpeedKm_h\",\"Precipitationmm\",\"CloudCover\","
          "\"Events\",\"WindDirDegrees\"\n", f);
    uint64_t s = w->seed ^ 0x3ea7u;
    for (int st = 0; st < w->nstates; st++) {
        for (int i = 0; i < GEN_NDAYS; i++) {
            int j = st * GEN_NDAYS + i;
            char d[11];
            rt_format_date(GEN_FIRST_DAY + i, d);
            double t = w->tmax[j], u[8];
            for (int k = 0; k < 8; k++)
                u[k] = gen_uniform(s, (uint64_t)k, (uint64_t)st, (uint64_t)i);
            bool rain = strstr(w->events[j], "Rain") || strstr(w->events[j], "Snow");
            int hum = 60 + (int)(u[0] * 30) + (rain ? 8 : 0);
            int ti = (int)lround(t); /* integers, as the files have them (no "-0") */
            fprintf(f, "%s,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,", w->name[st], d, ti,
                    ti - 4 - (int)lround(u[1] * 3), ti - 8 - (int)lround(u[2] * 4), ti - 6, ti - 8,
                    ti - 11,
                    hum > 100 ? 100 : hum, hum - 10, hum - 30, 1018 + (int)(u[3] * 14) - 7,
                    1014 + (int)(u[3] * 14) - 7, 1010 + (int)(u[3] * 14) - 7);
            if (u[4] < 0.024)
                fputs("NA,NA,NA,", f);
            else
                fprintf(f, "%d,%d,%d,", 31, 10 + (int)(u[4] * 10), 3 + (int)(u[4] * 6));
            int wind = 8 + (int)(u[5] * 30);
            fprintf(f, "%d,%d,", wind, wind / 2 + 2);
            if (u[6] < 0.77)
                fputs("NA,", f);
            else
                fprintf(f, "%d,", wind + 15);
            fprintf(f, "%.2f,", rain ? round(u[7] * 800) / 100 : 0.0);
            if (u[6] > 0.93)
                fputs("NA,", f);
            else
                fprintf(f, "%d,", rain ? 5 + (int)(u[1] * 3.9) : (int)(u[2] * 7));
            fprintf(f, "\"%s\",%d\n", w->events[j], (int)(u[5] * 360));
        }
        fputs("\n", f); /* a blank line after each state's block */
    }
    return finish(f, "weather.csv", err);
}

static rt_status write_test(const gen_world *w, const char *dir, char *err)
{
    FILE *f = create(dir, "test.csv", err);
    if (!f)
        return RT_ERR_IO;
    fputs("\"Id\",\"Store\",\"DayOfWeek\",\"Date\",\"Open\",\"Promo\",\"StateHoliday\","
          "\"SchoolHoliday\"\n", f);
    long id = 1;
    /* one store's Open is missing on its weekdays of the last two weeks */
    int missing = -1;
    for (int i = 0; i < w->nstores && missing < 0; i++)
        if (w->stores[i].in_test && i >= w->nstores / 2)
            missing = w->stores[i].id;
    for (int day = w->test_last; day >= w->test_first; day--) {
        char d[11];
        rt_format_date(day, d);
        int i = day - GEN_FIRST_DAY, wd = (int)(((day + 3) % 7 + 7) % 7);
        for (int k = 0; k < w->nstores; k++) {
            const gen_store *s = &w->stores[k];
            if (!s->in_test)
                continue;
            gen_day g = gen_store_day(w, s, day, 0.0);
            int j = s->state * GEN_NDAYS + i;
            fprintf(f, "%ld,%d,%d,%s,", id++, s->id, wd + 1, d);
            if (!(s->id == missing && wd < 6 && day > w->test_last - 14))
                fprintf(f, "%d", g.open);
            fprintf(f, ",%d,\"%c\",\"%d\"\n", w->promo[i], w->holiday[j], w->school[j]);
        }
    }
    return finish(f, "test.csv", err);
}

rt_status gen_write_aux(const gen_world *w, const char *dir, char *err)
{
    rt_status st = write_stores(w, dir, err);
    if (st == RT_OK)
        st = write_trend(w, dir, err);
    if (st == RT_OK)
        st = write_weather(w, dir, err);
    if (st == RT_OK)
        st = write_test(w, dir, err);
    return st;
}
