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

/* A column's name and its block, sorted by name */
typedef struct named {
    char *name;
    int blk;
} named;

static int cmp_named(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : x->blk - y->blk; /* a name in two blocks: the first */
}

/* Each of the n names' block (-1: none) into blk: the blocks' columns
 * listed once and sorted — a lookup per name through pragma_table_info
 * read every block's columns for each name, and a 8,300-column table spent
 * 26 of its 35 s of prep there. */
static rt_status blocks_of(sqlite3 *db, char (*blocks)[64], int nb, const char *const *names, int n,
                           int *blk, char *err)
{
    sqlite3_stmt *st = NULL;
    named *all = NULL;
    size_t len = 0, cap = 0;
    rt_status s = RT_OK;
    if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1)", -1, &st, NULL) !=
        SQLITE_OK)
        return rt_err(err, RT_ERR_INVALID, "%s", sqlite3_errmsg(db));
    for (int b = 0; b < nb && s == RT_OK; b++) {
        sqlite3_bind_text(st, 1, blocks[b], -1, SQLITE_STATIC);
        while (s == RT_OK && sqlite3_step(st) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(st, 0);
            named *more =
                len < cap ? all : realloc(all, (cap = cap ? 2 * cap : 1024) * sizeof *all);
            if (!more || !name || !(more[len].name = strdup(name)))
                s = rt_err(err, RT_ERR_NOMEM, "out of memory");
            else
                more[len++].blk = b;
            all = more ? more : all;
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (s == RT_OK && len)
        qsort(all, len, sizeof *all, cmp_named);
    for (int c = 0; s == RT_OK && c < n; c++) {
        /* the first entry of the name: a lower bound */
        size_t lo = 0, hi = len;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (strcmp(all[mid].name, names[c]) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        blk[c] = lo < len && !strcmp(all[lo].name, names[c]) ? all[lo].blk : -1;
    }
    for (size_t i = 0; i < len; i++)
        free(all[i].name);
    free(all);
    return s;
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
