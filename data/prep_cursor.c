/* prep_cursor.c — see prep_internal.h: the rows of a table that SQLite
 * holds as blocks of columns, read as one. */
#include <stdlib.h>
#include <string.h>

#include "prep_internal.h"

void prep_cursor_close(prep_cursor *cur)
{
    for (int b = 0; b < cur->nb; b++)
        sqlite3_finalize(cur->st[b]);
    free(cur->blk);
    free(cur->sql);
    memset(cur, 0, sizeof *cur);
}

/* Each of the n names' block (-1: none; the first where two have it) into
 * blk: each block's columns listed once and sorted — a lookup per name
 * through pragma_table_info read every block's columns for each name, and
 * a 8,300-column table spent 26 of its 35 s of prep there. */
static rt_status blocks_of(sqlite3 *db, char (*blocks)[64], int nb, const char *const *names, int n,
                           int *blk, char *err)
{
    for (int c = 0; c < n; c++)
        blk[c] = -1;
    for (int b = 0; b < nb; b++) {
        int k = 0;
        char(*have)[64] = prep_tables_columns(db, blocks + b, 1, &k);
        char(*sorted)[64] = have ? prep_sorted_names(have, k) : NULL;
        free(have);
        if (!sorted)
            return rt_err(err, RT_ERR_NOMEM, "out of memory");
        for (int c = 0; c < n; c++)
            if (blk[c] < 0 && prep_sorted_has(sorted, k, names[c]))
                blk[c] = b;
        free(sorted);
    }
    return RT_OK;
}

rt_status prep_cursor_open(sqlite3 *db, char (*blocks)[64], int nb, const char *table,
                           const char *const *names, int n, prep_cursor *cur, char *err)
{
    memset(cur, 0, sizeof *cur);
    if (nb > PREP_CURSOR_BLOCKS)
        return rt_err(err, RT_ERR_INVALID, "table %s: %d blocks, %d at most", table, nb,
                      PREP_CURSOR_BLOCKS);
    cur->blk = malloc(((size_t)n + 1) * sizeof *cur->blk);
    cur->sql = malloc(((size_t)n + 1) * sizeof *cur->sql);
    if (!cur->blk || !cur->sql) {
        prep_cursor_close(cur);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    int at[PREP_CURSOR_BLOCKS] = {0};
    rt_status bs = blocks_of(db, blocks, nb, names, n, cur->blk, err);
    if (bs != RT_OK) {
        prep_cursor_close(cur);
        return bs;
    }
    for (int c = 0; c < n; c++) {
        if (cur->blk[c] < 0) {
            prep_cursor_close(cur);
            return rt_err(err, RT_ERR_INVALID, "table %s has no column %s", table, names[c]);
        }
        cur->sql[c] = at[cur->blk[c]]++;
    }
    rt_status s = RT_OK;
    for (int b = 0; b < nb && s == RT_OK; b++) {
        size_t cap = 256 + (size_t)(at[b] + 1) * PREP_IDENT_LEN, ql = 0;
        char *q = malloc(cap), id[PREP_IDENT_LEN];
        if (!q) {
            s = rt_err(err, RT_ERR_NOMEM, "out of memory");
            break;
        }
        ql = (size_t)snprintf(q, cap, "SELECT ");
        for (int c = 0, k = 0; c < n; c++)
            if (cur->blk[c] == b)
                ql += (size_t)snprintf(q + ql, cap - ql, "%s%s", k++ ? ", " : "",
                                       prep_ident(names[c], id, sizeof id));
        if (at[b] == 0) /* a block none of the columns needs: its rows are counted all the same */
            ql += (size_t)snprintf(q + ql, cap - ql, "1");
        snprintf(q + ql, cap - ql, " FROM %s ORDER BY rowid", prep_ident(blocks[b], id, sizeof id));
        if (sqlite3_prepare_v2(db, q, -1, &cur->st[b], NULL) != SQLITE_OK)
            s = rt_err(err, RT_ERR_INVALID, "table %s: %s", blocks[b], sqlite3_errmsg(db));
        cur->nb = b + 1;
        free(q);
    }
    if (s != RT_OK)
        prep_cursor_close(cur);
    return s;
}

int prep_cursor_next(prep_cursor *cur, char (*blocks)[64], char *err)
{
    int got = 0;
    for (int b = 0; b < cur->nb; b++)
        got += sqlite3_step(cur->st[b]) == SQLITE_ROW;
    if (got == 0 || got == cur->nb)
        return got ? 1 : 0;
    rt_err(err, RT_ERR_INVALID,
           "the tables %s, %s, ... of one table have different numbers of rows: each must hold "
           "the same rows in the same order",
           blocks[0], cur->nb > 1 ? blocks[1] : "");
    return -1;
}

sqlite3_stmt *prep_cursor_col(const prep_cursor *cur, int c, int *k)
{
    *k = cur->sql[c];
    return cur->st[cur->blk[c]];
}
