/* prep_sqlfn.c — the SQL functions a feature script can call (docs/prep.md
 * section 2): iso_week, valid_date, rt_date, rt_number, rt_check, rt_bad_rows, rt_flag,
 * rt_missing and rt_hash, and the tables prep gives it (prep_options,
 * bad_rows). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "prep_internal.h"

static void fn_iso_week(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *s = (const char *)sqlite3_value_text(argv[0]);
    int w = s ? rt_iso_week(s) : -1;
    if (w < 0)
        sqlite3_result_null(ctx);
    else
        sqlite3_result_int(ctx, w);
}

static void fn_valid_date(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *s = (const char *)sqlite3_value_text(argv[0]);
    int32_t d;
    sqlite3_result_int(ctx, s && rt_parse_date(s, &d));
}

/* rt_date(text, order): 'YYYY-MM-DD' of a date of three numbers read in
 * order 'y', 'm' or 'd' (rt_parse_date_order), NULL when it is none */
static void fn_date(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *s = (const char *)sqlite3_value_text(argv[0]);
    const char *o = (const char *)sqlite3_value_text(argv[1]);
    int32_t d;
    char iso[11];
    if (!s || !o || !rt_parse_date_order(s, o[0], &d)) {
        sqlite3_result_null(ctx);
        return;
    }
    rt_format_date(d, iso);
    sqlite3_result_text(ctx, iso, 10, SQLITE_TRANSIENT);
}

/* rt_number(x, point): a number as a spreadsheet shows it ($1,234.50,
 * 45%, 1.234,5 with point ',') as a REAL; a plain number as it is; other
 * text as it is, for the shards' check to name (prep_formatted_number) */
static void fn_number(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *s = sqlite3_value_type(argv[0]) == SQLITE_TEXT
                        ? (const char *)sqlite3_value_text(argv[0])
                        : NULL;
    const char *pt = (const char *)sqlite3_value_text(argv[1]);
    double x;
    unsigned what;
    if (s && !prep_decimal(s, &x) && pt &&
        prep_formatted_number(s, pt[0] == ',' ? ',' : '.', &x, &what))
        sqlite3_result_double(ctx, x);
    else
        sqlite3_result_value(ctx, argv[0]);
}

static void fn_check(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) != SQLITE_NULL && sqlite3_value_int(argv[0])) {
        sqlite3_result_int(ctx, 1);
        return;
    }
    const char *msg = (const char *)sqlite3_value_text(argv[1]);
    sqlite3_result_error(ctx, msg ? msg : "a check failed", -1);
}

/* rt_flag(value, name, line): 1 or 0 for a flag (1/0, true/false, yes/no,
 * t/f, y/n in any case, or a number: nonzero), else an error naming the
 * column, line and value. */
static void fn_flag(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const int t = sqlite3_value_type(argv[0]);
    if (t == SQLITE_INTEGER || t == SQLITE_FLOAT) {
        sqlite3_result_int(ctx, sqlite3_value_double(argv[0]) != 0);
        return;
    }
    const char *s = (const char *)sqlite3_value_text(argv[0]);
    static const char *const yes[] = {"1", "true", "t", "yes", "y"}, *const no[] = {"0", "false",
                                                                                    "f", "no", "n"};
    for (size_t i = 0; s && i < 5; i++) {
        if (!strcasecmp(s, yes[i])) {
            sqlite3_result_int(ctx, 1);
            return;
        }
        if (!strcasecmp(s, no[i])) {
            sqlite3_result_int(ctx, 0);
            return;
        }
    }
    char msg[300];
    snprintf(msg, sizeof msg,
             "line %lld: the flag %s is '%.60s' (1 or 0, true or false, yes or no)",
             (long long)sqlite3_value_int64(argv[2]), (const char *)sqlite3_value_text(argv[1]),
             s ? s : "NULL");
    sqlite3_result_error(ctx, msg, -1);
}

/* rt_missing(x): 1 for NULL, '' and the marks of a missing value. */
static void fn_missing(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const int t = sqlite3_value_type(argv[0]);
    sqlite3_result_int(
        ctx, t == SQLITE_NULL ||
                 (t == SQLITE_TEXT && prep_is_missing((const char *)sqlite3_value_text(argv[0]))));
}

/* rt_hash(seed, n): a 64-bit mix of the two (SplitMix64), the same on every
 * machine: the order in which prep --from's split takes validation rows. */
static void fn_hash(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    uint64_t z = (uint64_t)sqlite3_value_int64(argv[0]) * 0x9e3779b97f4a7c15ull +
                 (uint64_t)sqlite3_value_int64(argv[1]);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    sqlite3_result_int64(ctx, (int64_t)(z >> 1)); /* non-negative */
}

static void fn_bad_rows(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    (void)argv;
    prep *p = sqlite3_user_data(ctx);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(p->db, "SELECT tbl, line, why FROM bad_rows ORDER BY tbl, line", -1, &st,
                           NULL) != SQLITE_OK) {
        sqlite3_result_error(ctx, sqlite3_errmsg(p->db), -1);
        return;
    }
    int64_t n = 0;
    char msg[2048] = "";
    size_t ml = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n < 5 && !p->o->skip_bad_rows) {
            const char *tbl = (const char *)sqlite3_column_text(st, 0);
            const char *file = tbl;
            bool by_row = false;
            for (int k = 0; tbl && k < p->rep->ntables; k++)
                if (!strcmp(p->rep->table[k], tbl)) {
                    file = p->files[k];
                    by_row = p->by_row[k];
                }
            ml += (size_t)snprintf(
                msg + ml, sizeof msg - ml, "%s%s%s%lld: %s", n ? "\n" : "", file ? file : "?",
                by_row ? ": row " : ":", (long long)sqlite3_column_int64(st, 1),
                sqlite3_column_text(st, 2) ? (const char *)sqlite3_column_text(st, 2) : "bad row");
            if (ml >= sizeof msg)
                ml = sizeof msg - 1;
        }
        n++;
    }
    sqlite3_finalize(st);
    if (n > 0 && !p->o->skip_bad_rows) {
        snprintf(msg + ml, sizeof msg - ml,
                 "\n(%lld bad row%s in all; --skip-bad-rows drops them and counts them)",
                 (long long)n, n == 1 ? "" : "s");
        sqlite3_result_error(ctx, msg, -1);
        return;
    }
    p->rep->bad_rows_skipped += n;
    sqlite3_result_int64(ctx, n);
}

/* What the feature script can call, and the tables it can read. */
void prep_add_functions(prep *p)
{
    sqlite3_create_function(p->db, "iso_week", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            fn_iso_week, NULL, NULL);
    sqlite3_create_function(p->db, "valid_date", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            fn_valid_date, NULL, NULL);
    sqlite3_create_function(p->db, "rt_date", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, fn_date,
                            NULL, NULL);
    sqlite3_create_function(p->db, "rt_number", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            fn_number, NULL, NULL);
    sqlite3_create_function(p->db, "rt_check", 2, SQLITE_UTF8, NULL, fn_check, NULL, NULL);
    sqlite3_create_function(p->db, "rt_bad_rows", 0, SQLITE_UTF8, p, fn_bad_rows, NULL, NULL);
    sqlite3_create_function(p->db, "rt_flag", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, fn_flag,
                            NULL, NULL);
    sqlite3_create_function(p->db, "rt_missing", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            fn_missing, NULL, NULL);
    sqlite3_create_function(p->db, "rt_hash", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, fn_hash,
                            NULL, NULL);
    char opts[200];
    snprintf(opts, sizeof opts,
             "CREATE TABLE prep_options(skip_bad_rows INTEGER); INSERT INTO prep_options "
             "VALUES(%d); CREATE TABLE bad_rows(tbl TEXT, line INTEGER, why TEXT);",
             p->o->skip_bad_rows ? 1 : 0);
    sqlite3_exec(p->db, opts, NULL, NULL, NULL);
}
