/* prep_number.c — numbers as text: plain ones (prep_decimal) and the ones
 * a spreadsheet writes as it shows them (prep_formatted_number): a
 * currency symbol before or after, groups of thousands, a percent sign,
 * an accountant's parentheses for a negative amount, a decimal comma. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "prep_internal.h"

/* Clinger's fast path: a decimal of at most 15 digits and no exponent is
 * m / 10^k with m and 10^k exact doubles (m < 2^53, k <= 22), so one
 * correctly rounded division gives strtod's result.  Measured on a
 * 9,000-column table of numbers written to 3 places: strtod was a tenth of
 * prep --from's time. */
static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

bool prep_decimal(const char *t, double *x)
{
    const char *p = t;
    const bool neg = *p == '-';
    if (*p == '+' || *p == '-')
        p++;
    int digits = 0, frac = 0;
    uint64_t m = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++)
        m = m * 10 + (uint64_t)(*p - '0');
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++, digits++, frac++)
            m = m * 10 + (uint64_t)(*p - '0');
    if (!digits)
        return false;
    if (!*p && digits <= 15) { /* (m wrapped past 20 digits: not used then) */
        double v = (double)m / POW10[frac];
        *x = neg ? -v : v;
        return true;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p)
        return false;
    *x = strtod(t, NULL);
    return isfinite(*x);
}

/* The length of the first of the n words at p that ends by end, or 0 */
static size_t word_at(const char *p, const char *end, const char *const *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p < end && (size_t)(end - p) >= strlen(w[i]) && !strncmp(p, w[i], strlen(w[i])))
            return strlen(w[i]);
    return 0;
}

/* The length of the space at p (a blank, a no-break space U+00A0 or a
 * narrow one U+202F, as locales group thousands and set off a symbol), or 0 */
static size_t space_at(const char *p, const char *end)
{
    static const char *const sp[] = {" ", "\xC2\xA0", "\xE2\x80\xAF"};
    return word_at(p, end, sp, 3);
}

/* The length of the currency symbol at p ($ € £ ¥ ₹), or 0 */
static size_t currency_at(const char *p, const char *end)
{
    static const char *const sym[] = {"$", "\xE2\x82\xAC", "\xC2\xA3", "\xC2\xA5", "\xE2\x82\xB9"};
    return word_at(p, end, sym, 5);
}

bool prep_formatted_number(const char *t, char point, double *x, unsigned *what)
{
    const char group = point == ',' ? '.' : ',';
    const size_t len = strlen(t);
    if (len >= 64) /* no amount a sheet shows is that long */
        return false;
    const char *p = t, *end = t + len;
    while (*p == ' ') /* an accountant's format pads with blanks */
        p++;
    while (end > p && end[-1] == ' ')
        end--;
    unsigned w = 0;
    bool neg = false;
    char digits[80];
    size_t nd = 0;
    for (int pass = 0; pass < 3; pass++) { /* a sign, a '(' and a symbol, in any order */
        if (!neg && (*p == '-' || *p == '+'))
            neg = *p++ == '-';
        if (!(w & PREP_NUM_PARENS) && *p == '(' && end > p + 1 && end[-1] == ')') {
            w |= PREP_NUM_PARENS; /* (1,234.00): negative */
            neg = true;
            p++, end--;
        }
        size_t k = currency_at(p, end);
        if (k && !(w & PREP_NUM_CURRENCY)) {
            w |= PREP_NUM_CURRENCY;
            p += k;
            p += space_at(p, end);
        }
    }
    /* digits in groups of three after a separator, the first of one to three */
    int run = 0, groups = 0;
    for (; p < end; p++) {
        if (*p >= '0' && *p <= '9') {
            if (nd + 2 >= sizeof digits)
                return false;
            digits[nd++] = *p;
            run++;
            continue;
        }
        size_t sp = space_at(p, end);
        const bool sep = *p == group || *p == '\'' || sp;
        if (!sep || run == 0 || run > 3 || (groups > 0 && run != 3))
            break;
        if (sp) { /* a space before the symbol or % ends the number */
            const char *q = p + sp;
            if (q >= end || !(*q >= '0' && *q <= '9'))
                break;
            p += sp - 1;
        }
        groups++, run = 0;
        w |= PREP_NUM_GROUPS;
    }
    if (nd == 0 || (groups > 0 && run != 3))
        return false;
    if (p < end && *p == point) { /* the fraction */
        digits[nd++] = '.';
        int frac = 0;
        for (p++; p < end && *p >= '0' && *p <= '9'; p++, frac++) {
            if (nd + 2 >= sizeof digits)
                return false;
            digits[nd++] = *p;
        }
        if (frac == 0)
            return false;
        if (point == ',')
            w |= PREP_NUM_COMMA;
    }
    p += space_at(p, end);
    size_t k = currency_at(p, end);
    if (k && !(w & PREP_NUM_CURRENCY)) { /* 12,50 € */
        w |= PREP_NUM_CURRENCY;
        p += k;
        p += space_at(p, end);
    }
    double scale = 1;
    if (p < end && *p == '%') {
        w |= PREP_NUM_PERCENT;
        scale = 0.01;
        p++;
    }
    if (p != end || w == 0)
        return false;
    digits[nd] = '\0';
    *x = (neg ? -1 : 1) * strtod(digits, NULL) * scale;
    *what = w;
    return isfinite(*x);
}
