/* prep_script.c — the feature script of `ringtrain prep --from`: the
 * decisions of prep_infer.c written as the SQL a user would have written.
 * prep runs it exactly as a --sql script and keeps it as out/prep.sql, so
 * `ringtrain prep --input DIR --sql out/prep.sql --out out` makes the same
 * dataset (test_prep_infer), and a user who disagrees edits it.
 *
 *   rt_rows    one row per input row: rt_id (the row's number), _line, the
 *              test flag (rt_test), the label and the feature columns as
 *              the plan shapes them (missing marks to NULL, integers cast,
 *              means and __na indicators, dates expanded)
 *   rt_train   the rows that are not test rows, with rt_validation: within
 *              each class (a classification), the rows ordered by
 *              rt_hash(seed, _line), the first round(fraction x rows) of
 *              them, never all of a class
 *   rt_test    the test rows (--test-column), or the --test file's rows
 *   meta       what a script's meta names
 *
 * A table wider than SQLite allows (2000 columns) is imported as blocks
 * t, t__2, ...; the script then makes rt_rows, rt_rows__2, ... of at most
 * OUT_BLOCK columns, joined on _line, and meta lists them all. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prep_internal.h"

#define OUT_BLOCK 1500

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool failed;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k =
            b->failed ? 0 : vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (b->failed || k < 0)
            return;
        if (b->p && (size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = (b->cap + (size_t)k + 1) * 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->failed = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
}

/* 'text' as an SQL string literal */
static void put_lit(sbuf *b, const char *s)
{
    put(b, "'");
    for (; *s; s++)
        put(b, *s == '\'' ? "''" : "%c", *s);
    put(b, "'");
}

const char *prep_col_ref(const plan_col *c, int block, char *buf, size_t len)
{
    char id[PREP_IDENT_LEN], q[16] = "";
    if (block > 0)
        snprintf(q, sizeof q, "s%d.", block);
    prep_ident(c->name, id, sizeof id);
    if (c->date_order)
        snprintf(buf, len, "rt_date(%s%s, '%c')", q, id, c->date_order);
    else if (c->number)
        snprintf(buf, len, "rt_number(%s%s, '%c')", q, id, c->number);
    else
        snprintf(buf, len, "%s%s", q, id);
    return buf;
}

/* the column as the script reads it from its block sK */
static void put_ref(sbuf *b, const plan_col *c)
{
    char ref[PREP_REF_LEN];
    put(b, "%s", prep_col_ref(c, c->block + 1, ref, sizeof ref));
}

/* rt_missing(x): NULL, "" or a missing-value mark (prep_is_missing) */
static void put_missing(sbuf *b, const plan_col *c)
{
    put(b, "rt_missing(");
    put_ref(b, c);
    put(b, ")");
}

/* One output column: its expression, its name, its role in meta. */
typedef struct outc {
    const plan_col *c;
    const char *what;   /* the expression's kind: "", "na", "year", ... */
    const char *suffix; /* what its name adds to the column's: "", "__na", ... */
    char name[PREP_DATASET_NAME_MAX + 1];
    int kind; /* 0: not a feature; 1: categorical; 2: continuous */
} outc;

static void put_expr(sbuf *b, const outc *o)
{
    const plan_col *c = o->c;
    char id[140];
    if (!strcmp(o->what, "year") || !strcmp(o->what, "month") || !strcmp(o->what, "day") ||
        !strcmp(o->what, "weekday")) {
        const char *f = !strcmp(o->what, "year")    ? "%Y"
                        : !strcmp(o->what, "month") ? "%m"
                        : !strcmp(o->what, "day")   ? "%d"
                                                    : "%w";
        put(b, "CAST(strftime('%s', ", f);
        put_ref(b, c);
        put(b, ") AS INTEGER)");
    } else if (!strcmp(o->what, "days")) {
        put(b, "CAST(julianday(substr(");
        put_ref(b, c);
        put(b, ", 1, 10)) - 2440587.5 AS INTEGER)");
    } else if (!strcmp(o->what, "date")) {
        put(b, "substr(");
        put_ref(b, c);
        put(b, ", 1, 10)");
    } else if (!strcmp(o->what, "ln")) { /* a log label: the script takes the log */
        put(b, "CASE WHEN CAST(");
        put_ref(b, c);
        put(b, " AS REAL) > 0 THEN ln(CAST(");
        put_ref(b, c);
        put(b, " AS REAL)) ELSE rt_check(0, 'label_transform log: the label ' || ");
        put_lit(b, c->name);
        put(b, " || ' is ' || coalesce(");
        put_ref(b, c);
        put(b, ", 'NULL') || ' at line ' || _line || ', not a positive number') END");
    } else if (!strcmp(o->what, "na")) {
        put(b, "CASE WHEN ");
        put_missing(b, c);
        put(b, " THEN 1 ELSE 0 END");
    } else if (!strcmp(o->what, "flag")) {
        put(b, "rt_flag(");
        put_ref(b, c);
        put(b, ", ");
        put_lit(b, c->name);
        put(b, ", _line)");
    } else if ((c->role == PREP_CAT || c->role == PREP_CAT_INT || c->role == PREP_CONT) &&
               (prep_stats_missing(c->stats) > 0 || c->role == PREP_CAT_INT)) {
        put(b, "CASE WHEN ");
        put_missing(b, c);
        put(b, " THEN %s ELSE ", c->role == PREP_CONT && c->impute ? c->mean : "NULL");
        if (c->role == PREP_CAT_INT)
            put(b, "CAST(");
        put_ref(b, c);
        if (c->role == PREP_CAT_INT)
            put(b, " AS INTEGER)");
        put(b, " END");
    } else {
        put_ref(b, c);
    }
    put(b, " AS %s", prep_ident(o->name, id, sizeof id));
}

static bool add_out(outc **v, int *n, int *cap, const plan_col *c, const char *what,
                    const char *suffix, int kind)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        outc *g = realloc(*v, (size_t)*cap * sizeof *g);
        if (!g)
            return false;
        *v = g;
    }
    outc *o = &(*v)[(*n)++];
    o->c = c;
    o->what = what;
    o->kind = kind;
    o->suffix = suffix;
    snprintf(o->name, sizeof o->name, "%s%s", c->out, suffix);
    return true;
}

/* The source tables a table is read as: a wide table's blocks by name */
static int src_blocks(const prep_plan *pl) { return pl->name_blocks ? pl->name_blocks : 1; }

/* Column c's feature outputs (none for a role that has none) */
static bool add_features(outc **v, int *n, int *cap, const plan_col *c)
{
    switch (c->role) {
    case PREP_CAT:
    case PREP_CAT_INT:
        return add_out(v, n, cap, c, "", "", 1);
    case PREP_CONT:
        return add_out(v, n, cap, c, "", "", 2) &&
               (!c->impute || add_out(v, n, cap, c, "na", "__na", 1));
    case PREP_DATE:
        return add_out(v, n, cap, c, "year", "__year", 2) &&
               add_out(v, n, cap, c, "month", "__month", 1) &&
               add_out(v, n, cap, c, "day", "__day", 2) &&
               add_out(v, n, cap, c, "weekday", "__weekday", 1) &&
               add_out(v, n, cap, c, "days", "__days", 2);
    default:
        return true;
    }
}

/* The outputs of the plan: specials first (block 1), then the features,
 * those of the first source block first (a wide table's blocks by name
 * hold columns from all over the table: an output block of columns in the
 * table's order would join every source block; in the blocks' order it
 * joins one or two — 12.6 against 5.5 s for rt_rows at 4096 columns). */
static outc *outputs(const prep_plan *pl, int *n, int *nspecial)
{
    outc *v = NULL;
    int cap = 0;
    bool ok = true;
    *n = 0;
    const int specials[] = {pl->label, pl->weight, pl->validation, pl->id};
    for (size_t k = 0; ok && k < sizeof specials / sizeof *specials; k++)
        if (specials[k] >= 0)
            ok = add_out(&v, n, &cap, &pl->c[specials[k]],
                         k == 0 && strstr(pl->label_transform, "log") ? "ln" : "", "", 0);
    if (ok && pl->test_flag >= 0) {
        ok = add_out(&v, n, &cap, &pl->c[pl->test_flag], "flag", "", 0);
        if (ok)
            snprintf(v[*n - 1].name, sizeof v[0].name, "rt_test");
    }
    for (size_t i = 0; ok && i < pl->ncols; i++)
        if (pl->c[i].keep_date)
            ok = add_out(&v, n, &cap, &pl->c[i], "date", "", 0);
    *nspecial = *n;
    for (int b = 0; ok && b < src_blocks(pl); b++)
        for (size_t i = 0; ok && i < pl->ncols; i++)
            if (pl->c[i].block == b)
                ok = add_features(&v, n, &cap, &pl->c[i]);
    if (!ok) {
        free(v);
        return NULL;
    }
    return v;
}

/* SELECT of the outputs [lo, hi) — the first block with rt_id and the
 * specials [0, nspecial) — FROM the source blocks they read, joined on
 * _line, into table name.  A --test file's rows (test) have no label,
 * weight, validation column or test flag. */
static void put_rows(sbuf *b, const char *name, const outc *v, int lo, int hi, bool first,
                     int nspecial, const char *src, bool test, const prep_plan *pl)
{
    bool need[PREP_MAX_BLOCKS] = {false};
    char id[140], bn[80];
    put(b, "CREATE TABLE %s AS\nSELECT ", prep_ident(name, id, sizeof id));
    if (first)
        put(b, "ROW_NUMBER() OVER (ORDER BY _line) AS rt_id, ");
    put(b, "_line");
    for (int k = first ? 0 : lo; k < hi; k++) {
        const plan_col *c = v[k].c;
        if (k < nspecial && test &&
            (c == &pl->c[pl->label] || c->role == PREP_WEIGHT || c->role == PREP_VALID ||
             c->role == PREP_TEST))
            continue;
        if (k == nspecial && first)
            k = lo; /* the specials done: this block's features */
        if (k >= hi)
            break;
        put(b, ",\n  ");
        put_expr(b, &v[k]);
        need[v[k].c->block] = true;
    }
    int base = -1;
    const int nsrc = src_blocks(pl);
    for (int s = 0; s < nsrc; s++)
        if (need[s] && base < 0)
            base = s;
    if (base < 0)
        base = 0;
    prep_block_name(src, base, bn, sizeof bn);
    put(b, "\nFROM %s AS s%d", prep_ident(bn, id, sizeof id), base + 1);
    for (int s = base + 1; s < nsrc; s++)
        if (need[s]) {
            prep_block_name(src, s, bn, sizeof bn);
            put(b, " JOIN %s AS s%d USING (_line)", prep_ident(bn, id, sizeof id), s + 1);
        }
    put(b, "\nORDER BY _line;\n");
}

/* The blocks of outputs, [lo[k], lo[k + 1]) each, the specials in the
 * first; how many. */
static int out_blocks(int n, int nsp, int lo[PREP_MAX_BLOCKS + 1])
{
    int nb = 0;
    for (int k = nsp; k < n || nb == 0; nb++) {
        lo[nb] = k;
        k += OUT_BLOCK - (nb == 0 ? nsp : 0);
        if (nb + 1 == PREP_MAX_BLOCKS)
            k = n;
    }
    lo[nb] = n;
    return nb;
}

/* stem,stem__2,... for nb blocks */
static void put_blocks(sbuf *b, const char *stem, int nb)
{
    for (int k = 0; k < nb; k++)
        put(b, k ? ",%s__%d" : "%s", stem, k + 1);
}

/* meta's categorical and continuous lists */
static void put_kinds(sbuf *b, const outc *v, int n)
{
    for (int kind = 1; kind <= 2; kind++) {
        put(b, ",\n  ('%s', ", kind == 1 ? "categorical" : "continuous");
        sbuf l = {0};
        int cnt = 0;
        for (int k = 0; k < n; k++)
            if (v[k].kind == kind)
                put(&l, "%s%s", cnt++ ? "," : "", v[k].name);
        put_lit(b, l.p ? l.p : "");
        b->failed = b->failed || l.failed;
        free(l.p);
        put(b, ")");
    }
}

/* meta's first rows: its tables (blocks of stem; test: NULL for none),
 * label and id */
static void put_meta_head(sbuf *b, const char *train, const char *test, int nb, const prep_plan *pl)
{
    put(b, "CREATE TABLE meta(key, value);\nINSERT INTO meta VALUES\n  ('train_table', '");
    put_blocks(b, train, nb);
    put(b, "')");
    if (test) {
        put(b, ",\n  ('test_table', '");
        put_blocks(b, test, nb);
        put(b, "')");
    }
    put(b, ",\n  ('label', ");
    put_lit(b, pl->c[pl->label].out);
    put(b, "),\n  ('id', ");
    put_lit(b, pl->id >= 0 ? pl->c[pl->id].out : "rt_id");
    put(b, ")");
}

/* meta's feature lists and its end; the script (malloc'ed), or NULL when
 * out of memory (v freed either way) */
static char *put_meta_end(sbuf *b, outc *v, int n)
{
    put_kinds(b, v, n);
    put(b, ";\n");
    free(v);
    if (b->failed) {
        free(b->p);
        return NULL;
    }
    return b->p;
}

/* rt_validation over the rows of rt_train: within each class, the first
 * round(f x n) rows by rt_hash(seed, _line), never all n; or (--fold K/F)
 * every F-th of them from the K-th, 0-based. */
static void put_validation(sbuf *b, const prep_plan *pl)
{
    char id[140], part[200] = "";
    if (pl->classification)
        snprintf(part, sizeof part, "PARTITION BY %s ",
                 prep_ident(pl->c[pl->label].out, id, sizeof id));
    if (pl->folds) {
        put(b,
            ",\n  CASE WHEN (ROW_NUMBER() OVER (%sORDER BY rt_hash(%llu, _line), _line) - 1) %% %d "
            "= %d THEN 1 ELSE 0 END AS rt_validation",
            part, (unsigned long long)pl->seed, pl->folds, pl->fold);
        return;
    }
    put(b,
        ",\n  CASE WHEN ROW_NUMBER() OVER (%sORDER BY rt_hash(%llu, _line), _line) <= "
        "min(CAST(round(%.17g * COUNT(*) OVER (%s)) AS INTEGER), COUNT(*) OVER (%s) - 1) "
        "THEN 1 ELSE 0 END AS rt_validation",
        part, (unsigned long long)pl->seed, pl->val_fraction, part, part);
}

/* The most bytes c's dataset name may take: its outputs add a suffix. */
static size_t name_room(const plan_col *c)
{
    const size_t most = PREP_DATASET_NAME_MAX;
    return c->role == PREP_DATE                ? most - strlen("__weekday")
           : c->role == PREP_CONT && c->impute ? most - strlen("__na")
                                               : most;
}

rt_status prep_plan_name(prep_plan *pl, char *err)
{
    for (size_t i = 0; i < pl->ncols; i++)
        prep_dataset_name(pl->c[i].name, name_room(&pl->c[i]), "", pl->c[i].out);
    int n = 0, nsp = 0;
    outc *v = outputs(pl, &n, &nsp);
    int *next = malloc(((size_t)n + pl->ncols + 1) * sizeof *next), *head = next ? next + n : NULL;
    prep_names taken = {0};
    if (!v || !next || !prep_names_init(&taken, (size_t)n + 4)) {
        free(v);
        free(next);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    /* each column's outputs as a list: head[i] its first, next[k] the one after k */
    for (size_t i = 0; i < pl->ncols; i++)
        head[i] = -1;
    for (int k = n - 1; k >= 0; k--) {
        const size_t i = (size_t)(v[k].c - pl->c);
        next[k] = head[i];
        head[i] = k;
    }
    /* the names the script makes, then each column's outputs in the order
     * outputs() lists them (the specials first) */
    static const char *const made[] = {"_line", "rt_id", "rt_test", "rt_validation"};
    for (size_t k = 0; k < sizeof made / sizeof *made; k++)
        prep_names_add(&taken, made[k]);
    for (int k = 0; k < n; k++) {
        plan_col *c = (plan_col *)v[k].c;
        const size_t i = (size_t)(c - pl->c);
        if (head[i] != k || (pl->test_flag >= 0 && i == (size_t)pl->test_flag))
            continue; /* not its first output; the test flag's is rt_test, made */
        for (unsigned again = 0;; again++) {
            bool clash = false;
            for (int j = k; j >= 0; j = next[j]) {
                snprintf(v[j].name, sizeof v[j].name, "%s%s", c->out, v[j].suffix);
                clash = clash || prep_names_has(&taken, v[j].name);
            }
            if (!clash)
                break;
            char tail[32];
            if (again)
                snprintf(tail, sizeof tail, "~%zu.%u", i + 1, again);
            else
                snprintf(tail, sizeof tail, "~%zu", i + 1);
            prep_dataset_name(c->name, name_room(c), tail, c->out);
        }
        for (int j = k; j >= 0; j = next[j])
            prep_names_add(&taken, v[j].name);
        if (c->keep_date)
            snprintf(pl->date, sizeof pl->date, "%s", c->out);
    }
    prep_names_free(&taken);
    free(next);
    free(v);
    return RT_OK;
}

/* A wide table's head lines: its inputs' blocks by name (prep_read_script
 * reads the first), for the table in and its rows out. */
static void put_name_blocks(sbuf *b, const prep_plan *pl, int n)
{
    if (!pl->name_blocks)
        return;
    put(b,
        "%s%d\n"
        "-- (SQLite takes 2000 columns at most in one table: an input is read as t, t__2, ...,\n"
        "-- each column in the one its name hashes to, whatever the file's order, as ringtrain\n"
        "-- prep and predict do when they read this line; the %d columns made are tables of\n"
        "-- %d joined on _line, which meta lists.)\n",
        PREP_NAME_BLOCKS + 1, pl->name_blocks, n, OUT_BLOCK);
}

char *prep_script(const prep_plan *pl, const rt_prep_opts *o, const char *table,
                  const char *test_table, const char *commands, const char *decided)
{
    int n = 0, nsp = 0;
    outc *v = outputs(pl, &n, &nsp);
    if (!v)
        return NULL;
    sbuf b = {0};
    put(&b,
        "-- prep.sql: what `ringtrain prep --from` decided, as a feature script.\n"
        "-- Made by: %s\n"
        "-- rt_missing(x) is true for NULL, '' and the marks of a missing value\n"
        "-- (NA, N/A, NaN, null, None, #N/A, ?, ...: docs/prep.md).\n"
        "-- Run again (after an edit, say) with\n"
        "--   ringtrain prep --input DIR --sql prep.sql --out DATASET\n"
        "-- where DIR holds the input file%s (table %s%s%s).\n",
        commands, test_table ? "s" : "", table, test_table ? " and " : "",
        test_table ? test_table : "");
    put_name_blocks(&b, pl, n);
    put(&b, "--\n-- What prep decided, column by column (docs/prep.md says by which rules):\n");
    for (const char *l = decided; *l;) {
        const char *e = strchr(l, '\n');
        int len = e ? (int)(e - l) : (int)strlen(l);
        put(&b, "--   %.*s\n", len, l);
        l += len + (e != NULL);
    }
    int lo[PREP_MAX_BLOCKS + 1];
    const int nb = out_blocks(n, nsp, lo);
    const char *srcs[2] = {table, test_table};
    const char *stems[2] = {"rt_rows", "rt_test_rows"};
    for (int t = 0; t < 2 && srcs[t]; t++)
        for (int k = 0; k < nb; k++) {
            char name[80];
            prep_block_name(stems[t], k, name, sizeof name);
            put_rows(&b, name, v, lo[k], lo[k + 1], k == 0, nsp, srcs[t], t == 1, pl);
        }
    /* training and test rows */
    const char *where_train = pl->test_flag >= 0 ? " WHERE rt_test = 0" : "";
    put(&b, "CREATE TABLE rt_train AS\nSELECT *");
    if (pl->val_fraction > 0 || pl->folds)
        put_validation(&b, pl);
    put(&b, "\nFROM rt_rows%s\nORDER BY _line;\n", where_train);
    if (prep_stats_missing(pl->c[pl->label].stats) > 0) { /* said with the lines, not row 1 */
        char id[140], miss[200];
        snprintf(miss, sizeof miss, "FROM rt_train WHERE rt_missing(%s)",
                 prep_ident(pl->c[pl->label].out, id, sizeof id));
        put(&b, "SELECT rt_check(NOT EXISTS (SELECT 1 %s), 'the label ' || ", miss);
        put_lit(&b, pl->c[pl->label].name);
        put(&b,
            " || ' is missing in ' || (SELECT count(*) %s) || ' training rows (the first on line "
            "' || (SELECT min(_line) %s) || '): leave them out of the file, or make them rows to "
            "predict (--test-column COL)');\n",
            miss, miss);
    }
    const bool has_test = pl->test_flag >= 0 || test_table;
    if (pl->test_flag >= 0)
        put(&b,
            "CREATE TABLE rt_test AS SELECT * FROM rt_rows WHERE rt_test = 1 ORDER BY _line;\n");
    else if (test_table)
        put(&b, "CREATE TABLE rt_test AS SELECT * FROM rt_test_rows ORDER BY _line;\n");
    for (int k = 1; k < nb; k++) {
        put(&b,
            "CREATE TABLE rt_train__%d AS SELECT f.* FROM rt_rows__%d AS f JOIN rt_train "
            "USING (_line) ORDER BY _line;\n",
            k + 1, k + 1);
        if (has_test)
            put(&b,
                "CREATE TABLE rt_test__%d AS SELECT f.* FROM %s__%d AS f JOIN rt_test "
                "USING (_line) ORDER BY _line;\n",
                k + 1, pl->test_flag >= 0 ? "rt_rows" : "rt_test_rows", k + 1);
    }
    if (pl->test_flag >= 0) {
        put(&b, "SELECT rt_check((SELECT count(*) FROM rt_train) > 0, 'every row is a test row (' "
                "|| ");
        put_lit(&b, pl->c[pl->test_flag].name);
        put(&b, " || ')');\n");
    }
    put_meta_head(&b, "rt_train", has_test ? "rt_test" : NULL, nb, pl);
    if (pl->validation >= 0) {
        put(&b, ",\n  ('validation', ");
        put_lit(&b, pl->c[pl->validation].out);
        put(&b, ")");
    } else if (pl->val_fraction > 0 || pl->folds) {
        put(&b, ",\n  ('validation', 'rt_validation')");
    }
    const char *kv[][2] = {{"weight", pl->weight >= 0 ? pl->c[pl->weight].out : NULL},
                           {"date", pl->date[0] ? pl->date : NULL},
                           {"task", o->roles.task},
                           {"positive_class", o->roles.positive_class},
                           {"label_transform", pl->classification ? NULL : pl->label_transform}};
    for (size_t k = 0; k < sizeof kv / sizeof *kv; k++)
        if (kv[k][1]) {
            put(&b, ",\n  ('%s', ", kv[k][0]);
            put_lit(&b, kv[k][1]);
            put(&b, ")");
        }
    if (!pl->classification && o->roles.max_label > 0)
        put(&b, ",\n  ('max_label', %.17g)", o->roles.max_label);
    else if (!pl->classification && !strstr(pl->label_transform, "standardize")) {
        char id[140]; /* the largest target: the label's, or exp of a log label's */
        const bool lg = strstr(pl->label_transform, "log") != NULL;
        put(&b, ",\n  ('max_label', (SELECT %smax(CAST(%s AS REAL))%s FROM rt_train))",
            lg ? "exp(" : "", prep_ident(pl->c[pl->label].out, id, sizeof id), lg ? ")" : "");
    }
    return put_meta_end(&b, v, n);
}

char *prep_score_script(const prep_plan *pl, const char *commands)
{
    int n = 0, nsp = 0, lo[PREP_MAX_BLOCKS + 1];
    outc *v = outputs(pl, &n, &nsp);
    if (!v)
        return NULL;
    const int nb = out_blocks(n, nsp, lo);
    sbuf b = {0};
    put(&b,
        PREP_SCORE_MARK
        " the features prep.sql makes, for new rows — a file with the training\n"
        "-- table's columns, the label (and weight, validation and test flag columns) left\n"
        "-- out if it likes — to be scored by a model trained on the dataset:\n"
        "--   ringtrain predict --model STORE/best.ckpt --input new.csv --sql score.sql --out "
        "p.csv\n"
        "-- The file is table input; a column's gaps get the training rows' mean, as in\n"
        "-- prep.sql, and the model's vocabularies map the categories. Made by: %s\n",
        commands);
    put_name_blocks(&b, pl, n);
    for (int k = 0; k < nb; k++) {
        char name[80];
        prep_block_name("rt_score", k, name, sizeof name);
        put_rows(&b, name, v, lo[k], lo[k + 1], k == 0, nsp, "input", true, pl);
    }
    put_meta_head(&b, "rt_score", "rt_score", nb, pl);
    return put_meta_end(&b, v, n);
}
