/* prep_internal.h — shared by rt_prep.c (import, script) and rt_prep_out.c
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
    double max_label;
    int ncat, ncont;
    char cat[PREP_MAX_COLS][64], cont[PREP_MAX_COLS][64];
} prep_meta;

/* Write the shards and the manifest from the feature tables. */
rt_status prep_write_dataset(sqlite3 *db, const prep_meta *m, const rt_prep_opts *o,
                             rt_prep_report *rep, char *err);

/* "name" quoted as an SQL identifier into buf. */
const char *prep_ident(const char *name, char *buf, size_t len);

#endif
