/* rt_date.c — civil dates <-> days since 1970-01-01 (proleptic Gregorian,
 * after H. Hinnant's days_from_civil) and ISO 8601 week numbers. */
#include <stdio.h>
#include <string.h>

#include "rt_prep.h"

static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

static bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

bool rt_parse_date(const char *s, int32_t *days)
{
    if (!s || strlen(s) != 10 || s[4] != '-' || s[7] != '-')
        return false;
    for (int i = 0; i < 10; i++)
        if (i != 4 && i != 7 && (s[i] < '0' || s[i] > '9'))
            return false;
    int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
    int m = (s[5] - '0') * 10 + (s[6] - '0'), d = (s[8] - '0') * 10 + (s[9] - '0');
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || d < 1 || d > mdays[m - 1] + (m == 2 && leap(y)))
        return false;
    *days = (int32_t)days_from_civil(y, m, d);
    return true;
}

/* y-m-d as days, false when it is no date */
static bool civil_days(int y, int m, int d, int32_t *days)
{
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1 || y > 9999 || m < 1 || m > 12 || d < 1 || d > mdays[m - 1] + (m == 2 && leap(y)))
        return false;
    *days = (int32_t)days_from_civil(y, m, d);
    return true;
}

/* 1 to n digits at *p as a number (*p moved past them), or -1 */
static int digits(const char **p, int n)
{
    int v = 0, k = 0;
    for (; k < n && **p >= '0' && **p <= '9'; k++, (*p)++)
        v = v * 10 + (**p - '0');
    return k ? v : -1;
}

char rt_date_parts(const char *s, int part[3])
{
    const char *p = s;
    if ((part[0] = digits(&p, 4)) < 0)
        return 0;
    const size_t w0 = (size_t)(p - s);
    const char sep = *p;
    if ((sep != '/' && sep != '.' && sep != '-') || w0 == 3)
        return 0;
    p++;
    if ((part[1] = digits(&p, 2)) < 0 || *p != sep)
        return 0;
    p++;
    const char *y = p;
    if ((part[2] = digits(&p, 4)) < 0)
        return 0;
    const size_t w2 = (size_t)(p - y);
    if ((w0 == 4) == (w2 == 4) || (w2 != 4 && w2 > 2)) /* the year is one end, 4 digits */
        return 0;
    if (*p && !((*p == ' ' || *p == 'T') && p[1] >= '0' && p[1] <= '9'))
        return 0; /* a time may follow */
    return w0 == 4 ? 'y' : sep;
}

/* The days of the parts rt_date_parts wrote (kind: what it returned) read
 * in order 'y', 'm' or 'd'; false when they are no date in that order. */
static bool order_days(const int v[3], char kind, char order, int32_t *days)
{
    if (!kind || (kind == 'y') != (order == 'y'))
        return false;
    return order == 'y'   ? civil_days(v[0], v[1], v[2], days)
           : order == 'm' ? civil_days(v[2], v[0], v[1], days)
           : order == 'd' ? civil_days(v[2], v[1], v[0], days)
                          : false;
}

bool rt_parse_date_order(const char *s, char order, int32_t *days)
{
    int v[3];
    return order_days(v, s ? rt_date_parts(s, v) : 0, order, days);
}

unsigned rt_date_orders(const char *s, char *kind)
{
    int v[3];
    int32_t d;
    const char k = s ? rt_date_parts(s, v) : 0;
    if (kind)
        *kind = k;
    return (order_days(v, k, 'y', &d) ? RT_DATE_Y : 0) |
           (order_days(v, k, 'm', &d) ? RT_DATE_M : 0) |
           (order_days(v, k, 'd', &d) ? RT_DATE_D : 0);
}

void rt_format_date(int32_t days, char *buf)
{
    int y, m, d;
    civil_from_days(days, &y, &m, &d);
    snprintf(buf, 11, "%04d-%02d-%02d", y % 10000, m, d);
}

int rt_iso_week(const char *date)
{
    int32_t days;
    if (!rt_parse_date(date, &days))
        return -1;
    int wd = (int)(((days + 3) % 7 + 7) % 7) + 1; /* 1 = Monday; 1970-01-01 was a Thursday */
    int64_t thursday = (int64_t)days - (wd - 1) + 3; /* its week's Thursday decides the year */
    int y, m, d;
    civil_from_days(thursday, &y, &m, &d);
    return (int)((thursday - days_from_civil(y, 1, 1)) / 7) + 1;
}
