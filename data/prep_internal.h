/* prep_internal.h — shared by rt_prep.c (import, script) and prep_out.c
 * (vocabularies, shards, manifest). */
#ifndef RT_PREP_INTERNAL_H
#define RT_PREP_INTERNAL_H

#include <sqlite3.h>
#include <stdio.h>

#include "rt_prep.h"

/* A feature table may be several SQLite tables of the same rows in the
 * same order (meta's train_table "train,train__2"): SQLite takes at most
 * 2000 columns in a table or a SELECT, and a wide input is imported as
 * blocks of PREP_BLOCK_COLS columns (t, t__2, ...). */
#define PREP_MAX_BLOCKS 64
#define PREP_BLOCK_COLS 1000
#define PREP_SQLITE_MAX_COLS 1999 /* SQLITE_MAX_COLUMN (2000), less the rowid's room */

/* A source column's name (a header's, a Parquet schema's) is at most
 * PREP_NAME_MAX bytes, and prep_header_names' renaming adds at most 15;
 * quoted as an SQL identifier it fits PREP_IDENT_LEN.  A dataset's column
 * names are 1 to PREP_DATASET_NAME_MAX bytes without commas. */
#define PREP_NAME_MAX 255
#define PREP_IDENT_LEN (2 * (PREP_NAME_MAX + 15) + 3)
#define PREP_DATASET_NAME_MAX 63

/* ---- names (prep_names.c) ---- */

/* A set of names compared as SQLite compares them (ASCII case ignored); it
 * keeps the pointers it is given. */
typedef struct prep_names {
    const char **slot;
    size_t cap;
} prep_names;
bool prep_names_init(prep_names *ns, size_t n); /* room for n names */
void prep_names_free(prep_names *ns);
bool prep_names_has(const prep_names *ns, const char *name);
void prep_names_add(prep_names *ns, const char *name); /* one not in it */
/* The table's names of a header's (nf of them; *out malloc'ed, each name
 * too): empty ones "Unnamed: I", repeated ones and _line NAME.1, NAME.2, ...;
 * where says where the header is and what what it is ("header", "schema"),
 * for the lines that say what was renamed (unless quiet) and the errors. */
rt_status prep_header_names(const char *where, const char *what, const char *const *raw, size_t nf,
                            bool quiet, char ***out, char *err);
/* name as a dataset's column name in out (PREP_DATASET_NAME_MAX + 1 bytes),
 * followed by tail: commas and control characters as '_', cut at a UTF-8
 * character's boundary so that with tail it takes at most `most` bytes;
 * true when out is name itself. */
bool prep_dataset_name(const char *name, size_t most, const char *tail, char *out);

/* A --from table wider than SQLite's 2000 columns is read as K blocks (t,
 * t__2, ...), each column in the one its name puts it, whatever a file's
 * width and order — its --test file's, the new rows' of its score.sql —
 * as its scripts say on a line PREP_NAME_BLOCKS K (prep_read_script):
 * block prep_name_block(name, K), from the FNV-1a hash of the name with
 * ASCII letters lower-cased (SQLite's matching); K =
 * prep_name_blocks(the training table's columns) = columns / 1500 + 2,
 * about 1000 columns a block (1455 at the widest, 64,000): one of the most
 * a table holds (1999) would be over 14 standard deviations out. */
#define PREP_NAME_BLOCKS "\n-- Input tables by column name: "
int prep_name_block(const char *name, int k);
int prep_name_blocks(size_t ncols);
/* A script file (*sql, malloc'ed) and what its head says: whether it is
 * --from's score.sql (PREP_SCORE_MARK first), and into how many blocks by
 * name it reads its inputs (0: by position). */
rt_status prep_read_script(const char *path, char **sql, bool *score, int *name_blocks, char *err);

/* What the script's meta table says. */
typedef struct prep_meta {
    char train_table[PREP_MAX_BLOCKS * 64], test_table[PREP_MAX_BLOCKS * 64];
    int ntrain, ntest; /* the blocks of each, in order */
    char train_blocks[PREP_MAX_BLOCKS][64], test_blocks[PREP_MAX_BLOCKS][64];
    char label[64], label_transform[32], validation[64], id[64], date[64];
    char task[16], weight[64]; /* task "": inferred from the label's values */
    char positive_class[64];   /* binary: the class the model scores (""): the minority */
    double max_label;
    bool max_given; /* meta names max_label (not --from-parquet's own): a regression */
    int ncat, ncont;
    char (*cat)[64], (*cont)[64]; /* malloc'ed (prep_meta_free) */
} prep_meta;
void prep_meta_free(prep_meta *m);

/* ---- --from's inference (prep_infer.c) and its script (prep_script.c) ---- */

typedef struct prep_stats prep_stats;
struct col_stats;
/* A table's columns, looked at while it is imported (n names). */
prep_stats *prep_stats_new(const char *const *names, size_t n);
void prep_stats_text(prep_stats *s, size_t col, const char *text, size_t len); /* NULL: NULL */
void prep_stats_num(prep_stats *s, size_t col, bool integer, double x);        /* typed */
void prep_stats_row(prep_stats *s);
/* Fields not separated by commas: a value 1,5 is the number 1.5 (Excel's
 * CSV where the comma is the decimal mark), 1.234,5 1234.5. */
void prep_stats_decimal_comma(prep_stats *s, bool on);

/* prep_number.c: a plain number (digits, an optional point and exponent,
 * as SQLite reads one), and one as a spreadsheet shows it — $1,234.50,
 * 12,50 €, 1.234,5 (point ','), 45% (0.45), (1,234.00) (negative), 1'234 —
 * with `point` the decimal mark ('.' or ','; groups by the other, a space
 * or '\''; under 64 bytes); *what says which of these it had (PREP_NUM_*,
 * never 0). */
enum {
    PREP_NUM_CURRENCY = 1,
    PREP_NUM_GROUPS = 2,
    PREP_NUM_PERCENT = 4,
    PREP_NUM_COMMA = 8,
    PREP_NUM_PARENS = 16
};
bool prep_decimal(const char *t, double *x);
bool prep_formatted_number(const char *t, char point, double *x, unsigned *what);
void prep_stats_free(prep_stats *s);
/* NULL, "" or a missing-value mark (prep_missing_marks: NA, N/A, NaN, ?, ...) */
bool prep_is_missing(const char *text);
extern const char *const prep_missing_marks[];

typedef enum prep_role {
    PREP_DROP,
    PREP_CAT,     /* categorical, values as they are */
    PREP_CAT_INT, /* categorical integers (CAST AS INTEGER) */
    PREP_CONT,
    PREP_DATE, /* expanded */
    PREP_LABEL,
    PREP_TEST, /* the test flag */
    PREP_VALID,
    PREP_WEIGHT,
    PREP_ID,
    PREP_ROLE_COUNT
} prep_role;

typedef struct plan_col {
    const char *name;                    /* the source column's (the stats') */
    char out[PREP_DATASET_NAME_MAX + 1]; /* its dataset name (prep_plan_name) */
    const struct col_stats *stats;
    prep_role role;
    bool given;                   /* a flag named it */
    bool impute;                  /* continuous with missing values: the mean, and an indicator */
    bool keep_date;               /* --date: also the dataset's date column */
    char number;                  /* numbers as formatted: read through rt_number(x, number) */
    char date_order;              /* dates not ISO: read through rt_date(x, order) */
    bool maybe_id, maybe_text_id; /* dropped if their distinct values say so (prep_from) */
    char mean[40];                /* impute: the mean of the non-test rows, as SQL text */
    char why[80];
    int block; /* the source table block that holds it */
} plan_col;

typedef struct prep_plan {
    size_t ncols;
    int64_t rows;
    plan_col *c;
    int label, test_flag, validation, weight, id; /* columns, or -1 */
    bool classification;
    char label_transform[32];
    char date[64]; /* --date's column, kept */
    double val_fraction;
    int folds, fold; /* the validation rows are fold `fold` of `folds` (0: the fraction) */
    uint64_t seed;
    int name_blocks; /* a wide table: its K blocks by name (c[].block), else 0 (one block) */
} prep_plan;

rt_status prep_plan_make(const prep_stats *s, const rt_prep_opts *o, prep_plan *pl, char *err);
void prep_plan_free(prep_plan *pl);
void prep_plan_print(const prep_plan *pl, FILE *f);
const char *prep_role_name(prep_role r);
int64_t prep_stats_missing(const struct col_stats *c);
bool prep_stats_numeric(const struct col_stats *c);

/* How the scripts read column c of source block `block` (1-based, 0: the
 * name alone): sK."col"; rt_number(sK."col", ',') for numbers written
 * with a decimal comma, a currency, groups or '%' ('.': a decimal point);
 * rt_date(sK."col", 'm') for dates as M/D/YYYY ('d', 'y').
 * buf: PREP_REF_LEN bytes. */
#define PREP_REF_LEN (PREP_IDENT_LEN + 40)
const char *prep_col_ref(const plan_col *c, int block, char *buf, size_t len);

/* Each column's dataset name (plan_col.out) and the plan's date column's,
 * once the roles are settled: a column's own name where it is one (at most
 * PREP_DATASET_NAME_MAX bytes with the longest suffix its outputs get:
 * __na, __weekday, ...; no comma), else prep_dataset_name's; where an output
 * would repeat another's name or a name the script makes (rt_id, _line,
 * rt_test, rt_validation), the later column's name ends in ~I, I its place
 * in the table. */
rt_status prep_plan_name(prep_plan *pl, char *err);

/* The feature script of a plan (malloc'ed): the source table (for a wide
 * table its pl->name_blocks blocks, table, table__2, ...) and an optional
 * test table (as many), each into the feature tables and the meta table,
 * as a user's script would. */
char *prep_script(const prep_plan *pl, const rt_prep_opts *o, const char *table,
                  const char *test_table, const char *commands, const char *decided);

/* The scoring script of a plan (malloc'ed): the features of new rows, table
 * input, without the label, weight, validation or test flag columns, as
 * table rt_score (and rt_score__2, ...), meta naming it as both tables —
 * what `ringtrain predict --input FILE --sql score.sql` reads; a wide
 * table's (pl->name_blocks) reads its input by name as well. */
#define PREP_SCORE_MARK "-- score.sql:"
char *prep_score_script(const prep_plan *pl, const char *commands);

/* One prep: the database, the options, what it reports. */
typedef struct prep {
    sqlite3 *db;
    const rt_prep_opts *o;
    rt_prep_report *rep;
    char files[RT_PREP_MAX_TABLES][300]; /* file name of each table, for messages */
    bool by_row[RT_PREP_MAX_TABLES];     /* _line is a row number (Parquet), not a line */
    const char *what; /* what named the meta table: the script, or --from-parquet */
    int stats_slot;   /* the table slot + 1 whose values are looked at (0: none) */
    prep_stats *stats;
    int name_blocks;   /* a wide table's columns into blocks: 0 by position, K by name (below) */
    bool wide_by_name; /* (--from) a table wider than SQLite's: by name, name_blocks set */
} prep;

/* prep_import.c: every input of o->input_dir as a table; --from-parquet's
 * tables and meta; one CSV or Parquet path (a file, or a folder of part
 * files) as table `table` in slot. */
rt_status prep_import_all(prep *p, char *err);
rt_status prep_import_csv(prep *p, const char *path, const char *table, int slot, char *err);
rt_status prep_import_parquet(prep *p, const char *path, const char *table, int slot,
                              char *err);

/* prep_from.c: --from's tables imported, their columns inferred, the
 * feature script written (out_dir/prep.sql) and run. */
rt_status prep_from(prep *p, char *err);
/* prep_fold.c: --sql with --fold K/F: m->validation (added as rt_validation
 * where the script names none) made fold K of F of the training rows. */
rt_status prep_fold(prep *p, prep_meta *m, char *err);
/* rt_prep.c: run the SQL text (its statements in order; errors name path:line). */
rt_status prep_run_sql(prep *p, const char *path, const char *sql, char *err);
/* The script's meta table read into m (checked: its tables exist, ...). */
rt_status prep_read_meta(prep *p, prep_meta *m, char *err);
/* The column names of the tables (ntables of them; *n of them), or NULL when
 * out of memory; *n is 0 when none of them exists. */
char (*prep_tables_columns(sqlite3 *db, char (*tables)[64], int ntables, int *n))[64];
/* Whether want is one of the n names (*found); if not, the nearest within
 * two edits (a suggestion), or NULL. */
const char *prep_closest(char (*have)[64], int n, const char *want, bool *found);
/* whether path is a CSV file or a folder of CSV part files */
bool prep_is_csv_input(const char *path);

/* prep_vocab.c: a categorical column's vocabulary, value -> index by
 * "type:text" key (prep_value_key); the training rows' values of col (or
 * the label's classes, by prep_label_task, which also settles the task and,
 * for a binary task, puts the positive class second). */
typedef struct prep_vocab {
    char **values; /* by index; NULL for SQL NULL */
    int32_t n;
    char **keys; /* hash table */
    int32_t *idx;
    size_t cap;
} prep_vocab;
void prep_value_key(sqlite3_stmt *st, int col, char *buf, size_t len);
int32_t prep_vocab_find(const prep_vocab *v, const char *key);
void prep_vocab_free(prep_vocab *v);
rt_status prep_build_vocab(sqlite3 *db, const prep_meta *m, const char *col, prep_vocab *v,
                           char *err);
rt_status prep_label_task(sqlite3 *db, const prep_meta *m, rt_prep_report *rep, prep_vocab *v,
                          char *err);
/* A class's key (every spelling of a number one key); a
 * validation flag (0/1, true/false, yes/no, t/f, y/n); a number; an id.
 * False when the cell is none of these. */
bool prep_class_key(sqlite3_stmt *st, int c, char *buf, size_t len);
bool prep_flag_value(sqlite3_stmt *st, int c, uint8_t *out);
bool prep_number_value(sqlite3_stmt *st, int c, float *out);
bool prep_id_value(sqlite3_stmt *st, int c, int32_t *out); /* an integer within 32 bits */
/* Rows of a table (-1 on error). */
int64_t prep_count_rows(sqlite3 *db, const char *table);

/* ---- the continuous columns' quantiles (prep_quantile.c) ---------------------- */

#define PREP_QUANTILE_SAMPLE 100000   /* rows kept per column, at most */
#define PREP_QUANTILE_BUDGET 20000000 /* and over every column (80 MB) */
#define PREP_QUANTILE_TOTAL 1000000   /* quantiles in a manifest, at most */
typedef struct prep_sample {
    float *v;
    int64_t n, len, cap; /* rows seen, slots allocated, slots at most */
    int ncont;           /* continuous columns of the dataset */
} prep_sample;
rt_status prep_quantile_init(prep_sample *s, int ncont, char *err);
/* A training row's value of the column (its index in `column`). */
rt_status prep_quantile_add(prep_sample *s, uint64_t column, double x, char *err);
/* The quantiles of the sample with the noise (1e-3 * std): *out (malloc'd)
 * holds *nq = prep_quantile_count(rows, ncont) ascending values, or NULL when the
 * column had no training rows. */
rt_status prep_quantile_finish(prep_sample *s, double std, float **out, int32_t *nq, char *err);
void prep_quantile_free(prep_sample *s);
int32_t prep_quantile_count(int64_t rows, int ncont);
/* The standard normal value added (times the noise) to the k-th smallest
 * sampled value. */
double prep_quantile_noise(int64_t k);

/* Write the shards and the manifest from the feature tables. */
rt_status prep_write_dataset(sqlite3 *db, const prep_meta *m, const rt_prep_opts *o,
                             rt_prep_report *rep, char *err);
/* A sorted copy of n names (NULL: out of memory), and whether want is one
 * of them: a name looked up among thousands (prep_closest computes edit
 * distances on its way, and is for the names not found). */
char (*prep_sorted_names(char (*have)[64], int n))[64];
bool prep_sorted_has(char (*sorted)[64], int n, const char *want);
/* The block of the tables (n of them) that has column col, or -1. */
int prep_block_of(sqlite3 *db, char (*tables)[64], int n, const char *col);

/* prep_cursor.c: the rows of a table held as blocks of columns (meta's
 * "train,train__2"; an input with its score.sql's rows beside it), each
 * block the same rows in the same order: one statement per block with the
 * named columns that live in it (each in the first block that has it),
 * stepped in lockstep in rowid order.  table names the whole in errors. */
#define PREP_CURSOR_BLOCKS (2 * PREP_MAX_BLOCKS)
typedef struct prep_cursor {
    int nb;
    sqlite3_stmt *st[PREP_CURSOR_BLOCKS];
    int *blk, *sql; /* per column: its block, and its column in that block's statement */
} prep_cursor;
rt_status prep_cursor_open(sqlite3 *db, char (*blocks)[64], int nb, const char *table,
                           const char *const *names, int n, prep_cursor *cur, char *err);
/* The next row of every block: 1, 0 at the end, -1 (and err) when the
 * blocks do not have the same rows. */
int prep_cursor_next(prep_cursor *cur, char (*blocks)[64], char *err);
/* Column c's statement, and its column k there. */
sqlite3_stmt *prep_cursor_col(const prep_cursor *cur, int c, int *k);
void prep_cursor_close(prep_cursor *cur);

/* prep_sqlfn.c: the SQL functions and tables a feature script can use,
 * registered in p->db. */
void prep_add_functions(prep *p);
/* "name" quoted as an SQL identifier into buf. */
const char *prep_ident(const char *name, char *buf, size_t len);
/* Block b's table name of table: table, table__2, ... */
void prep_block_name(const char *table, int b, char *out, size_t len);

#endif
