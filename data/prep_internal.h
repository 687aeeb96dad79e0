/* prep_internal.h — shared by rt_prep.c (import, script) and prep_out.c
 * (vocabularies, shards, manifest). */
#ifndef RT_PREP_INTERNAL_H
#define RT_PREP_INTERNAL_H

#include <sqlite3.h>

#include "rt_prep.h"

#define PREP_MAX_COLS 256

/* What the script's meta table says. */
typedef struct prep_meta {
    char train_table[128], test_table[128];
    char label[64], label_transform[16], validation[64], id[64], date[64];
    char task[16], weight[64]; /* task "": inferred from the label's values */
    double max_label;
    bool max_given; /* meta names max_label (not --from-parquet's own): a regression */
    int ncat, ncont;
    char cat[PREP_MAX_COLS][64], cont[PREP_MAX_COLS][64];
} prep_meta;

/* One prep: the database, the options, what it reports. */
typedef struct prep {
    sqlite3 *db;
    const rt_prep_opts *o;
    rt_prep_report *rep;
    char files[RT_PREP_MAX_TABLES][300]; /* file name of each table, for messages */
    bool by_row[RT_PREP_MAX_TABLES];     /* _line is a row number (Parquet), not a line */
    const char *what; /* what named the meta table: the script, or --from-parquet */
} prep;

/* prep_import.c: every input of o->input_dir as a table; --from-parquet's
 * tables and meta; one CSV or Parquet path (a file, or a folder of part
 * files) as table `table` in slot. */
rt_status prep_import_all(prep *p, char *err);
rt_status prep_import_featurised(prep *p, char *err);
rt_status prep_import_csv(prep *p, const char *path, const char *table, int slot, char *err);
rt_status prep_import_parquet(prep *p, const char *path, const char *table, int slot,
                              char *err);

/* Write the shards and the manifest from the feature tables. */
rt_status prep_write_dataset(sqlite3 *db, const prep_meta *m, const rt_prep_opts *o,
                             rt_prep_report *rep, char *err);

/* "name" quoted as an SQL identifier into buf. */
const char *prep_ident(const char *name, char *buf, size_t len);

#endif
