/* prep_infer.c — `ringtrain prep --from`: what each column of a table is,
 * from its values, as AutoGluon, pytorch-tabular and fastai infer it.
 *
 * While the table is imported every value is looked at once (prep_stats):
 * how many are missing, whether all the others are numbers, integers,
 * booleans or dates, and the distinct values (exactly up to DISTINCT_CAP).
 * Then each column gets a role, by these rules in order (prep_plan_make;
 * docs/prep.md quotes them):
 *
 *   1. named by --label, --test-column, --validation-column, --weight,
 *      --id: that role; by --drop: dropped; by --categorical, --continuous
 *      or --date: that kind;
 *   2. every value missing, or one value only: dropped (constant);
 *   3. dates (YYYY-MM-DD, optionally with a time): expanded into year,
 *      month, day, day of week and days since 1970 (fastai's add_datepart);
 *   4. numbers: integers with at most MAX_CARD (10) distinct values are
 *      categorical; integers unique per row and consecutive (1..n) are a
 *      row id, dropped; the rest continuous — missing values then become
 *      the column's mean over the non-test rows and a categorical
 *      indicator COL__na says which;
 *   5. booleans (true/false, yes/no, t/f, y/n) and text are categorical,
 *      but text unique per row (an id, a name) or mostly unique (over half
 *      of 100 rows or more: free text) is dropped.
 * A missing value is an empty field or one of pandas' NA spellings (NA,
 * N/A, NaN, null, None, #N/A, ...) or "?".
 *
 * The decisions become a feature script (prep_script.c), which prep runs
 * exactly as it runs a user's --sql script and writes beside the dataset. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "prep_internal.h"
#include "rt_config.h"

#define DISTINCT_CAP 1000
#define MAX_CARD 10
#define MOSTLY_UNIQUE_MIN 100

/* pandas' default na_values, and "?" (the UCI data sets' mark) */
const char *const prep_missing_marks[] = {
    "#N/A", "#N/A N/A", "#NA",  "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>",
    "N/A",  "NA",       "NULL", "NaN",     "None",     "n/a",  "nan",  "null",   "?",       NULL};

typedef struct col_stats {
    char *name;                           /* the table's (prep_header_names) */
    int64_t values, missing;              /* non-missing, missing */
    bool numeric, integer, boolean, date; /* every non-missing value is one */
    unsigned format;                      /* PREP_NUM_*: numbers written as formatted */
    unsigned orders; /* RT_DATE_Y|M|D: the orders every value is a date in (not ISO ones) */
    bool dots;       /* a date D.M.YYYY: day first where the values do not tell */
    double min, max;
    char **set; /* distinct non-missing texts, open addressing */
    size_t cap;
    int ntext;
    uint64_t *nums; /* distinct numbers' bits, open addressing (NUM_FREE: empty) */
    size_t ncap;
    int nnum;
    int n;            /* distinct values: ntext + nnum */
    bool over;        /* more than DISTINCT_CAP */
    char example[48]; /* a value that made it text */
} col_stats;

struct prep_stats {
    size_t ncols;
    int64_t rows;
    col_stats *c;
    bool decimal_comma; /* the fields are not comma-separated: 1,5 may be a number */
};

void prep_stats_decimal_comma(prep_stats *s, bool on) { s->decimal_comma = on; }

prep_stats *prep_stats_new(const char *const *names, size_t n)
{
    prep_stats *s = calloc(1, sizeof *s);
    if (!s || !(s->c = calloc(n ? n : 1, sizeof *s->c))) {
        free(s);
        return NULL;
    }
    s->ncols = n;
    for (size_t i = 0; i < n; i++) {
        col_stats *c = &s->c[i];
        if (!(c->name = strdup(names[i]))) {
            prep_stats_free(s);
            return NULL;
        }
        c->numeric = c->integer = c->boolean = c->date = true;
        c->orders = RT_DATE_Y | RT_DATE_M | RT_DATE_D;
        c->min = INFINITY;
        c->max = -INFINITY;
    }
    return s;
}

void prep_stats_free(prep_stats *s)
{
    for (size_t i = 0; s && i < s->ncols; i++) {
        for (size_t k = 0; k < s->c[i].cap; k++)
            free(s->c[i].set[k]);
        free(s->c[i].set);
        free(s->c[i].nums);
        free(s->c[i].name);
    }
    if (s)
        free(s->c);
    free(s);
}

bool prep_is_missing(const char *t)
{
    if (!t || !*t)
        return true;
    for (int i = 0; prep_missing_marks[i]; i++)
        if (!strcmp(t, prep_missing_marks[i]))
            return true;
    return false;
}

static bool boolean_word(const char *t)
{
    static const char *const w[] = {"true", "false", "yes", "no", "t", "f", "y", "n"};
    for (size_t i = 0; i < sizeof w / sizeof *w; i++)
        if (!strcasecmp(t, w[i]))
            return true;
    return false;
}

/* YYYY-MM-DD, or that and a time (" HH:MM..." or "THH:MM..."). */
static bool date_text(const char *t, size_t len)
{
    char d[11];
    int32_t days;
    if (len < 10)
        return false;
    memcpy(d, t, 10);
    d[10] = '\0';
    if (!rt_parse_date(d, &days))
        return false;
    return len == 10 || (len >= 16 && (t[10] == ' ' || t[10] == 'T') && t[13] == ':');
}

static void add_distinct(col_stats *c, const char *key)
{
    if (c->over)
        return;
    if ((size_t)(c->ntext + 1) * 2 > c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        char **set = calloc(cap, sizeof *set);
        if (!set) {
            c->over = true;
            return;
        }
        for (size_t i = 0; i < c->cap; i++)
            if (c->set[i]) {
                size_t j = rt_hash_str(c->set[i]) & (cap - 1);
                while (set[j])
                    j = (j + 1) & (cap - 1);
                set[j] = c->set[i];
            }
        free(c->set);
        c->set = set;
        c->cap = cap;
    }
    size_t j = rt_hash_str(key) & (c->cap - 1);
    for (; c->set[j]; j = (j + 1) & (c->cap - 1))
        if (!strcmp(c->set[j], key))
            return;
    if (c->n == DISTINCT_CAP) {
        c->over = true;
        return;
    }
    if (!(c->set[j] = strdup(key))) {
        c->over = true;
        return;
    }
    c->ntext++;
    c->n++;
}

/* A NaN's bits: a number here is never one (NaN is read as missing) */
#define NUM_FREE UINT64_MAX

/* Numbers apart from texts, by their bits: a distinct double is a distinct
 * shortest text (%.17g round-trips), without formatting or comparing one.
 * Measured on a 9,000-column table of 500 rows: formatting and comparing
 * the numbers' texts took a quarter of prep --from's time. */
static void add_distinct_num(col_stats *c, double x)
{
    if (c->over)
        return;
    uint64_t key;
    memcpy(&key, &x, sizeof key);
    if (key == NUM_FREE)
        key = 0x7ff8000000000000ull; /* (a NaN all the same) */
    if ((size_t)(c->nnum + 1) * 2 > c->ncap) {
        size_t cap = c->ncap ? c->ncap * 2 : 16;
        uint64_t *set = malloc(cap * sizeof *set);
        if (!set) {
            c->over = true;
            return;
        }
        memset(set, 0xff, cap * sizeof *set);
        for (size_t i = 0; i < c->ncap; i++)
            if (c->nums[i] != NUM_FREE) {
                size_t j = rt_hash_u64(c->nums[i]) & (cap - 1);
                while (set[j] != NUM_FREE)
                    j = (j + 1) & (cap - 1);
                set[j] = c->nums[i];
            }
        free(c->nums);
        c->nums = set;
        c->ncap = cap;
    }
    size_t j = rt_hash_u64(key) & (c->ncap - 1);
    for (; c->nums[j] != NUM_FREE; j = (j + 1) & (c->ncap - 1))
        if (c->nums[j] == key)
            return;
    if (c->n == DISTINCT_CAP) {
        c->over = true;
        return;
    }
    c->nums[j] = key;
    c->nnum++;
    c->n++;
}

static void add_number(col_stats *c, bool integer, double x)
{
    c->values++;
    c->boolean = c->boolean && integer && (x == 0 || x == 1);
    c->date = false;
    c->orders = 0;
    c->integer = c->integer && integer && fabs(x) < 9007199254740992.0;
    c->min = x < c->min ? x : c->min;
    c->max = x > c->max ? x : c->max;
    add_distinct_num(c, x);
}

void prep_stats_num(prep_stats *s, size_t col, bool integer, double x)
{
    add_number(&s->c[col], integer, x);
}

static void stats_text(col_stats *c, const char *t, size_t len, bool decimal_comma)
{
    double x;
    if (prep_is_missing(t)) {
        c->missing++;
        return;
    }
    if (prep_decimal(t, &x)) {
        add_number(c, x == floor(x), x);
        return;
    }
    unsigned what; /* $1,234.50, 45%; 1,5 and 1.234,5 where ';' separates */
    if (prep_formatted_number(t, decimal_comma ? ',' : '.', &x, &what)) {
        c->format |= what;
        add_number(c, x == floor(x), x);
        return;
    }
    c->values++;
    if (c->numeric && !c->example[0])
        snprintf(c->example, sizeof c->example, "%.40s", t);
    c->numeric = c->integer = false;
    c->boolean = c->boolean && boolean_word(t);
    c->date = c->date && date_text(t, len);
    if (c->orders) { /* a date of three numbers, in the orders it reads in */
        char sep;
        c->orders &= rt_date_orders(t, &sep);
        c->dots = c->dots || sep == '.';
    }
    add_distinct(c, t);
}

/* t: len bytes, not always NUL-terminated (a Parquet page's values are
 * back to back) */
void prep_stats_text(prep_stats *s, size_t col, const char *t, size_t len)
{
    char buf[256], *z = buf;
    if (t && len >= sizeof buf && !(z = malloc(len + 1))) {
        s->c[col].over = true; /* out of memory: no more distinct values counted */
        return;
    }
    if (t) {
        memcpy(z, t, len);
        z[len] = '\0';
    }
    stats_text(&s->c[col], t ? z : NULL, len, s->decimal_comma);
    if (z != buf)
        free(z);
}

void prep_stats_row(prep_stats *s) { s->rows++; }

/* ---- the roles ---------------------------------------------------------------------- */

static int find_col(const prep_stats *s, const char *name)
{
    for (size_t i = 0; i < s->ncols; i++)
        if (!strcmp(s->c[i].name, name))
            return (int)i;
    /* a name with commas, by the spelling its dataset name has (a flag's
     * list cannot hold a comma) */
    char ds[PREP_DATASET_NAME_MAX + 1];
    for (size_t i = 0; i < s->ncols; i++)
        if (strchr(s->c[i].name, ',') && strlen(s->c[i].name) == strlen(name) &&
            !prep_dataset_name(s->c[i].name, strlen(name), "", ds) && !strcmp(ds, name))
            return (int)i;
    return -1;
}

/* A column a flag names: its index, or an error with a suggestion. */
static rt_status named(const prep_stats *s, const char *flag, const char *name, int *at, char *err)
{
    *at = find_col(s, name);
    if (*at >= 0)
        return RT_OK;
    const char *best = NULL;
    size_t bestd = 3;
    for (size_t i = 0; i < s->ncols; i++) {
        size_t d = rt_edit_distance(s->c[i].name, name);
        if (d < bestd) {
            bestd = d;
            best = s->c[i].name;
        }
    }
    return rt_err(err, RT_ERR_INVALID, "%s %s: the table has no such column%s%s%s", flag, name,
                  best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
}

/* Each name of a comma-separated flag gets role r (and why). */
static rt_status by_flag(const prep_stats *s, prep_plan *pl, const char *flag, const char *list,
                         prep_role r, char *err)
{
    char buf[PREP_NAME_MAX + 16];
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        while (n > 0 && p[n - 1] == ' ')
            n--;
        while (n > 0 && *p == ' ')
            p++, n--;
        if (n >= sizeof buf)
            return rt_err(err, RT_ERR_INVALID, "%s: a column name of more than %d bytes", flag,
                          (int)sizeof buf - 1);
        if (n > 0) {
            memcpy(buf, p, n);
            buf[n] = '\0';
            int at;
            rt_status st = named(s, flag, buf, &at, err);
            if (st != RT_OK)
                return st;
            if (pl->c[at].given)
                return rt_err(err, RT_ERR_INVALID, "%s %s: the column already has a role (%s)",
                              flag, buf, pl->c[at].why);
            pl->c[at].role = r;
            pl->c[at].given = true;
            snprintf(pl->c[at].why, sizeof pl->c[at].why, "%s", flag);
        }
        p = e ? e + 1 : p + strlen(p);
    }
    return RT_OK;
}

static rt_status one_flag(const prep_stats *s, prep_plan *pl, const char *flag, const char *name,
                          prep_role r, int *idx, char *err)
{
    *idx = -1;
    if (!name)
        return RT_OK;
    rt_status st = by_flag(s, pl, flag, name, r, err);
    if (st == RT_OK)
        *idx = find_col(s, name);
    return st;
}

/* The role of a column no flag named, from its values (rules 2-5). */
/* The order a column's dates read in ('y', 'm', 'd'); where both month
 * and day first fit every value, day first for D.M.YYYY, else the US's */
static char date_order(const col_stats *c)
{
    return (c->orders & RT_DATE_Y) ? 'y'
           : (c->orders & (RT_DATE_M | RT_DATE_D)) != (RT_DATE_M | RT_DATE_D)
               ? (c->orders & RT_DATE_M ? 'm' : 'd')
           : c->dots ? 'd'
                     : 'm';
}

static void infer_one(const col_stats *c, int64_t rows, plan_col *pc)
{
    const int distinct = c->n + (c->missing > 0) + (c->over ? 1 << 20 : 0);
    if (c->values == 0) {
        pc->role = PREP_DROP;
        snprintf(pc->why, sizeof pc->why, "every value missing");
    } else if (distinct <= 1) {
        pc->role = PREP_DROP;
        snprintf(pc->why, sizeof pc->why, "one value only");
    } else if (c->numeric && c->integer && !c->over && c->n <= MAX_CARD) {
        pc->role = PREP_CAT_INT;
        snprintf(pc->why, sizeof pc->why, "integers, %d values", c->n);
    } else if (c->numeric && c->integer && c->missing == 0 && c->values == rows &&
               c->max - c->min + 1 == (double)rows && rows > MAX_CARD) {
        pc->role = PREP_DROP; /* checked to be unique by the caller's count */
        pc->maybe_id = true;
        snprintf(pc->why, sizeof pc->why, "a row id (%.0f..%.0f, one per row)", c->min, c->max);
    } else if (c->numeric) {
        pc->role = PREP_CONT;
        pc->impute = c->missing > 0;
        char f[64] = "";
        static const struct {
            unsigned bit;
            const char *word;
        } fw[] = {{PREP_NUM_CURRENCY, "currency"},
                  {PREP_NUM_GROUPS, "thousands"},
                  {PREP_NUM_PERCENT, "%"},
                  {PREP_NUM_COMMA, "decimal comma"},
                  {PREP_NUM_PARENS, "(-)"}};
        for (size_t k = 0; k < sizeof fw / sizeof *fw; k++)
            if (c->format & fw[k].bit)
                snprintf(f + strlen(f), sizeof f - strlen(f), "%s%s", f[0] ? ", " : " (",
                         fw[k].word);
        snprintf(pc->why, sizeof pc->why, "numbers%s%s%s", f, f[0] ? ")" : "",
                 pc->impute ? "; missing: mean, __na" : "");
    } else if (c->date) {
        pc->role = PREP_DATE;
        snprintf(pc->why, sizeof pc->why, "dates: year, month, day, weekday, days");
    } else if (c->orders) {
        pc->role = PREP_DATE;
        pc->date_order = date_order(c);
        snprintf(pc->why, sizeof pc->why, "dates (%s%s): year, month, ...",
                 pc->date_order == 'y'   ? "Y/M/D"
                 : pc->date_order == 'm' ? "M/D/Y"
                                         : "D/M/Y",
                 (c->orders & (RT_DATE_M | RT_DATE_D)) == (RT_DATE_M | RT_DATE_D)
                     ? (c->dots ? ", as dots are" : ", no day past 12: the US's")
                     : "");
    } else if (c->boolean) {
        pc->role = PREP_CAT;
        snprintf(pc->why, sizeof pc->why, "booleans");
    } else if (c->over || (c->values >= MOSTLY_UNIQUE_MIN && c->n * 2 > c->values)) {
        pc->role = PREP_DROP; /* the caller counts the distinct values when over */
        pc->maybe_text_id = true;
        snprintf(pc->why, sizeof pc->why, "text, mostly unique (%s%d values)",
                 c->over ? "over " : "", c->n);
    } else {
        pc->role = PREP_CAT;
        snprintf(pc->why, sizeof pc->why, "text, %d values", c->n);
    }
}

rt_status prep_plan_make(const prep_stats *s, const rt_prep_opts *o, prep_plan *pl, char *err)
{
    memset(pl, 0, sizeof *pl);
    pl->c = calloc(s->ncols ? s->ncols : 1, sizeof *pl->c);
    if (!pl->c)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    pl->ncols = s->ncols;
    pl->rows = s->rows;
    pl->label = pl->test_flag = pl->validation = pl->weight = pl->id = -1;
    for (size_t i = 0; i < s->ncols; i++) {
        pl->c[i].name = s->c[i].name;
        pl->c[i].stats = &s->c[i];
        pl->c[i].number = s->c[i].numeric && s->c[i].format ? (s->decimal_comma ? ',' : '.') : 0;
    }
    const struct {
        const char *flag, *name;
        prep_role role;
        int *idx;
    } ones[] = {{"--label", o->roles.label, PREP_LABEL, &pl->label},
                {"--test-column", o->infer.test_column, PREP_TEST, &pl->test_flag},
                {"--validation-column", o->roles.validation, PREP_VALID, &pl->validation},
                {"--weight", o->roles.weight, PREP_WEIGHT, &pl->weight},
                {"--id", o->roles.id, PREP_ID, &pl->id}};
    rt_status st = RT_OK;
    for (size_t k = 0; st == RT_OK && k < sizeof ones / sizeof *ones; k++)
        st = one_flag(s, pl, ones[k].flag, ones[k].name, ones[k].role, ones[k].idx, err);
    if (st == RT_OK && pl->label < 0)
        st = rt_err(err, RT_ERR_INVALID, "--from needs --label COL (the column to predict)");
    const struct {
        const char *flag, *list;
        prep_role role;
    } lists[] = {{"--drop", o->infer.drop, PREP_DROP},
                 {"--categorical", o->roles.categorical, PREP_CAT},
                 {"--continuous", o->roles.continuous, PREP_CONT},
                 {"--date", o->roles.date, PREP_DATE}};
    for (size_t k = 0; st == RT_OK && k < sizeof lists / sizeof *lists; k++)
        st = by_flag(s, pl, lists[k].flag, lists[k].list, lists[k].role, err);
    if (st != RT_OK) {
        prep_plan_free(pl);
        return st;
    }
    bool dated = false;
    for (size_t i = 0; i < s->ncols; i++) {
        plan_col *pc = &pl->c[i];
        const col_stats *c = &s->c[i];
        if (!pc->given) {
            infer_one(c, s->rows, pc);
            continue;
        }
        /* a given kind, shaped by the values: integers stay numbers, a
         * continuous column with gaps gets a mean and an indicator */
        if (pc->role == PREP_CAT && c->numeric && c->integer)
            pc->role = PREP_CAT_INT;
        if (pc->role == PREP_CONT)
            pc->impute = c->missing > 0 && c->numeric;
        if (pc->role == PREP_DATE && !c->date && c->orders)
            pc->date_order = date_order(c);
        if (pc->role == PREP_DATE && !dated) /* the first is the dataset's date */
            pc->keep_date = dated = true;    /* pl->date: its dataset name (prep_plan_name) */
    }
    /* the task, as prep_out.c's label_task will infer it (the script says
     * it only where a flag gave it) */
    const col_stats *lc = &s->c[pl->label];
    const bool cls = o->roles.task ? strcmp(o->roles.task, "regression") != 0
                                   : !lc->numeric || (lc->integer && !lc->over && lc->n <= 20);
    pl->classification = cls;
    snprintf(pl->label_transform, sizeof pl->label_transform, "%s",
             o->roles.label_transform ? o->roles.label_transform
             : cls                    ? "none"
                                      : "standardize");
    pl->val_fraction = pl->validation >= 0 ? 0 : o->infer.validation_fraction;
    pl->folds = pl->validation >= 0 ? 0 : o->folds;
    pl->fold = o->fold;
    pl->seed = o->seed;
    return RT_OK;
}

void prep_plan_free(prep_plan *pl)
{
    free(pl->c);
    pl->c = NULL;
}

const char *prep_role_name(prep_role r)
{
    static const char *const names[PREP_ROLE_COUNT] = {
        "dropped", "categorical", "categorical", "continuous", "date",
        "label",   "test flag",   "validation",  "weight",     "id"};
    return r >= 0 && r < PREP_ROLE_COUNT ? names[r] : "?";
}

const char *prep_kind_name(const struct col_stats *c)
{
    return c->values == 0             ? "empty"
           : c->numeric && c->integer ? "integer"
           : c->numeric               ? "number"
           : c->date || c->orders     ? "date"
           : c->boolean               ? "boolean"
                                      : "text";
}

/* Characters of UTF-8 text (its bytes but continuation bytes) */
static size_t chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* s in w characters: cut after w, or padded with blanks */
static void put_cell(FILE *f, const char *s, size_t w)
{
    size_t n = 0, b = 0;
    for (; s[b] && (n < w || ((unsigned char)s[b] & 0xC0) == 0x80); b++)
        n += ((unsigned char)s[b] & 0xC0) != 0x80;
    fprintf(f, "%.*s%*s", (int)b, s, (int)(w - n), "");
}

void prep_plan_print(const prep_plan *pl, FILE *f)
{
    size_t w = 6;
    for (size_t i = 0; i < pl->ncols; i++)
        w = chars(pl->c[i].name) > w ? chars(pl->c[i].name) : w;
    w = w > 40 ? 40 : w;
    fprintf(f, "%-*s %-8s %9s %8s  %-11s %s\n", (int)w, "column", "kind", "distinct", "missing",
            "role", "why");
    for (size_t i = 0; i < pl->ncols; i++) {
        const plan_col *pc = &pl->c[i];
        const col_stats *c = pc->stats;
        char d[24];
        if (c->over)
            snprintf(d, sizeof d, ">%d", DISTINCT_CAP);
        else
            snprintf(d, sizeof d, "%d", c->n);
        put_cell(f, pc->name, w);
        fprintf(f, " %-8s %9s %8lld  %-11s %s\n", prep_kind_name(c), d, (long long)c->missing,
                prep_role_name(pc->role), pc->why);
    }
    for (size_t i = 0; i < pl->ncols; i++) /* prep_plan_name's */
        if (pl->c[i].role != PREP_DROP && pl->c[i].role != PREP_TEST && pl->c[i].out[0] &&
            strcmp(pl->c[i].out, pl->c[i].name))
            fprintf(f,
                    "column %zu ('%s') is '%s' in the dataset (its names: at most %d bytes "
                    "with their suffixes, no commas, none twice)\n",
                    i + 1, pl->c[i].name, pl->c[i].out, PREP_DATASET_NAME_MAX);
}

int64_t prep_stats_missing(const struct col_stats *c) { return c->missing; }
bool prep_stats_numeric(const struct col_stats *c) { return c->numeric; }
