/* rt_prep.h — `ringtrain prep`: CSV and Parquet files in, a dataset
 * (rt_dataset.h) out.
 *
 * 1. Every *.csv / *.csv.gz of the input folder becomes a table named after
 *    the file (train.csv -> train): one column per header field, values as
 *    text, empty fields NULL, plus `_line` (the record's line in the file).
 *    So does every *.parquet file, and every folder of Parquet part files
 *    (Spark's output; `train/` or `train.parquet/` -> train): values keep
 *    their Parquet type (rt_parquet.h), `_line` is the row's number.
 *    A malformed record is an error naming file and line; with
 *    skip_bad_rows a record with the wrong number of fields is skipped and
 *    counted instead (a quoting error still stops the prep: the rest of the
 *    file cannot be read reliably).
 * 2. The feature SQL script runs over them (SQLite, statement by
 *    statement; an error names the statement's line in the script).  It can
 *    call functions ringtrain adds:
 *      iso_week(date)            ISO 8601 week number (Spark's weekofyear)
 *      valid_date(text)          1 for a real YYYY-MM-DD date, else 0
 *      rt_check(ok, message)     stops the prep with message unless ok
 *      rt_bad_rows()             call after filling table bad_rows(tbl,
 *                                line, why): stops the prep naming the
 *                                first bad rows, or, with skip_bad_rows,
 *                                returns their count (the script deletes
 *                                them; table prep_options(skip_bad_rows)
 *                                tells it whether to)
 *    and must leave a table meta(key, value) naming its result:
 *      train_table, test_table   the feature tables (test is optional)
 *      categorical, continuous   comma-separated column lists
 *      label, label_transform (log|none), max_label, validation, id, date
 * 3. Vocabularies of the categorical columns over train and test together,
 *    sorted as SQLite orders the values (NULL first), then the rows, in the
 *    tables' row order, dealt round-robin into `partitions` training shards
 *    and one test shard, and manifest.json last. */
#ifndef RT_PREP_H
#define RT_PREP_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_prep_opts {
    const char *input_dir;
    const char *sql_path;
    const char *out_dir;
    int partitions;          /* training shards (>= 1) */
    bool skip_bad_rows;
    int64_t rows_per_group;  /* shard row groups (0: 65536) */
    const char *db_path;     /* keep the SQLite database here (NULL: see db_mode) */
    /* Where SQLite works when db_path is NULL: "memory", "disk" (a temporary
     * file in out_dir, removed at the end; sorts spill to SQLite's temporary
     * folder; memory stays near its 256 MiB page cache), or "auto"/NULL:
     * disk when working in memory would take more than RT_PREP_MEMORY_MAX or
     * a quarter of the memory available (estimated as RT_PREP_MEMORY_FACTOR
     * times the inputs' bytes, compressed files counted 5x: measured 18x
     * with the Rossmann script). */
    const char *db_mode;
    bool quiet;              /* no progress lines on stderr */
    /* A text value that is not a number in a continuous column: an error
     * naming the column, row and value; lenient: missing (0), counted per
     * column in the report. */
    bool lenient;
    /* Already-featurised Parquet instead of input_dir + sql_path (`prep
     * --from-parquet`, Horovod's fit_on_parquet): train_parquet (a file or a
     * Spark folder) becomes table train, test_parquet (optional) table test,
     * and `roles` fill the meta table a script would leave (max_label 0:
     * the label column's largest value, exp of it with label_transform log). */
    const char *train_parquet, *test_parquet;
    /* --fold K/F: the validation rows are fold K (0..F-1) of F cross-validation
     * folds of the training rows — within each class for a classification,
     * every F-th row from the K-th in rt_hash(seed, _line) order — instead of
     * the script's own validation column (a column rt_validation added where
     * it names none) or --from's fraction; folds 0: none. */
    int folds, fold;
    uint64_t seed; /* of the folds and of --from's fraction */
    struct {
        const char *label, *categorical, *continuous, *validation, *id, *date, *label_transform;
        const char *task, *weight; /* regression|binary|multiclass (NULL: inferred); weights */
        double max_label;
        const char *positive_class; /* binary: the class the model scores (NULL: the minority) */
    } roles;
    /* --from: every column not named by a role is given one from its values
     * (prep_infer.c: the rules), and prep writes the feature script it ran
     * as out_dir/prep.sql */
    struct {
        const char *test_column;    /* rows whose flag is true are the test rows */
        const char *drop;           /* comma-separated columns left out */
        double validation_fraction; /* held out of the training rows (stratified by class for
                                       a classification; 0: none) unless roles.validation or
                                       folds, in rt_hash(seed, _line) order */
        const char *command;        /* the command line, for the script's first lines */
    } infer;
} rt_prep_opts;

#define RT_PREP_MAX_TABLES 32
typedef struct rt_prep_defaulted { /* a continuous column's missing values */
    char name[64];
    int64_t missing, text; /* NULL values; text values made missing (lenient) */
} rt_prep_defaulted;
#define RT_PREP_MEMORY_MAX (2ll << 30)
#define RT_PREP_MEMORY_FACTOR 20
typedef struct rt_prep_report {
    int ntables;
    char table[RT_PREP_MAX_TABLES][64];
    int64_t rows_in[RT_PREP_MAX_TABLES];   /* records imported */
    int64_t skipped[RT_PREP_MAX_TABLES];   /* malformed records skipped */
    int64_t bad_rows_skipped;              /* rows the script dropped via rt_bad_rows() */
    int64_t train_rows, validation_rows, test_rows;
    int64_t cont_defaulted;  /* continuous values that were NULL or not numbers: 0 in the shards */
    int ndefaulted;          /* the (at most 8) columns with most of them */
    rt_prep_defaulted defaulted[8];
    char positive_class[64]; /* binary: the class the model scores */
    char positive_why[96];   /* "the minority: 26.5% of the training rows", "meta positive_class" */
    bool has_validation;     /* meta names a validation column */
    bool score_sql;          /* --from wrote out/score.sql (new rows' features) */
    bool db_on_disk;         /* where SQLite worked */
    char task[16];           /* regression, binary or multiclass */
    char task_why[160];      /* how it was decided (meta's key, or what inferred it) */
    int nclasses;            /* classification: the label's classes */
    int64_t input_bytes;     /* inputs' bytes as db_mode auto counts them (compressed 5x) */
    double seconds;
} rt_prep_report;

rt_status rt_prep_run(const rt_prep_opts *o, rt_prep_report *rep, char *err);

/* New data for a trained model (`ringtrain predict --input`): with
 * o->sql_path, o->input_dir's tables and the script as prep runs them, and
 * the rows of the script's test table (else its training table); without,
 * o->input_dir is one table (a .csv/.csv.gz/.parquet file or a folder of
 * Parquet files).  fn gets each row's columns `cols`, as text (NULL for SQL
 * NULL), in the table's order; a column the table lacks is an error with a
 * suggestion. */
typedef rt_status (*rt_prep_row_fn)(void *arg, int64_t row, const char *const *text,
                                    char *err);
rt_status rt_prep_scan(const rt_prep_opts *o, const char *const *cols, int ncols,
                       rt_prep_row_fn fn, void *arg, char *err);

/* ISO 8601 week of a 'YYYY-MM-DD' date (1..53), or -1 when it is not one. */
int rt_iso_week(const char *date);
/* Days since 1970-01-01 of a 'YYYY-MM-DD' date; false when it is not a
 * valid date. */
bool rt_parse_date(const char *s, int32_t *days);
/* A date written as three numbers — "YYYY/MM/DD" or "A/B/YYYY" with '/',
 * '.' or '-' between them (1- or 2-digit A, B, month and day), a time
 * after a space or 'T' allowed — in part[] as written; returns 'y' (year
 * first), the separator ('/', '.', '-') of a year-last one, or 0 when s is
 * none of them. */
char rt_date_parts(const char *s, int part[3]);
/* Days since 1970-01-01 of such a date read in order 'y' (year, month,
 * day), 'm' (month, day, year: the US's) or 'd' (day, month, year); false
 * when it is not a valid date in that order. */
bool rt_parse_date_order(const char *s, char order, int32_t *days);
/* The orders s reads as a valid date in, from one parse: RT_DATE_Y (year
 * first), RT_DATE_M (M/D/YYYY), RT_DATE_D (D/M/YYYY); 0 for none; *kind
 * (when not NULL): rt_date_parts' answer. */
#define RT_DATE_Y 1u
#define RT_DATE_M 2u
#define RT_DATE_D 4u
unsigned rt_date_orders(const char *s, char *kind);
/* 'YYYY-MM-DD' of days since 1970-01-01 (buf: 11 bytes). */
void rt_format_date(int32_t days, char *buf);

#ifdef __cplusplus
}
#endif
#endif
