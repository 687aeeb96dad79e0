/* prep_names.c — the names of prep's columns.
 *
 * A header's (or a Parquet schema's) names become the input table's column
 * names as pandas' read_csv makes them: an empty name is "Unnamed: I" (I the
 * column's 0-based place), and a repeated one — SQLite's names ignore case —
 * or the reserved "_line" gets ".1", ".2", ... (the first number that makes
 * it unique); prep says which it renamed.  A name is up to PREP_NAME_MAX
 * bytes.  `prep --input DIR --sql` and --from import alike, so the script
 * --from writes runs again on the same files.
 *
 * --from's dataset names (prep_plan_name, prep_script.c) are the columns'
 * own where they can be — prep_dataset_name() makes one of any name. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "prep_internal.h"

/* ---- a set of names, compared as SQLite compares them (ASCII case ignored) ---- */

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint64_t)tolower((unsigned char)*s)) * 1099511628211ull;
    return h;
}

bool prep_names_init(prep_names *ns, size_t n)
{
    ns->cap = 16;
    while (ns->cap < 2 * n + 2)
        ns->cap *= 2;
    ns->slot = calloc(ns->cap, sizeof *ns->slot);
    return ns->slot != NULL;
}

void prep_names_free(prep_names *ns)
{
    free(ns->slot);
    ns->slot = NULL;
}

bool prep_names_has(const prep_names *ns, const char *name)
{
    for (size_t i = name_hash(name) & (ns->cap - 1);; i = (i + 1) & (ns->cap - 1)) {
        if (!ns->slot[i])
            return false;
        if (!strcasecmp(ns->slot[i], name))
            return true;
    }
}

void prep_names_add(prep_names *ns, const char *name)
{
    size_t i = name_hash(name) & (ns->cap - 1);
    while (ns->slot[i] && strcasecmp(ns->slot[i], name))
        i = (i + 1) & (ns->cap - 1);
    ns->slot[i] = name; /* at most n names: the table never fills */
}

/* ---- a header's names as the table's ---- */

rt_status prep_header_names(const char *where, const char *what, const char *const *raw, size_t nf,
                            bool quiet, char ***out, char *err)
{
    *out = NULL;
    for (size_t i = 0; i < nf; i++)
        if (strlen(raw[i]) > PREP_NAME_MAX)
            return rt_err(err, RT_ERR_INVALID,
                          "%s: column %zu of the %s ('%.40s...') is longer than %d bytes", where,
                          i + 1, what, raw[i], PREP_NAME_MAX);
    char **names = calloc(nf + 1, sizeof *names);
    prep_names given = {0}, used = {0};
    if (!names || !prep_names_init(&given, nf) || !prep_names_init(&used, nf)) {
        free(names);
        prep_names_free(&given);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < nf; i++)
        if (raw[i][0])
            prep_names_add(&given, raw[i]);
    size_t renamed = 0;
    rt_status st = RT_OK;
    for (size_t i = 0; i < nf && st == RT_OK; i++) {
        char base[PREP_NAME_MAX + 1], cand[PREP_NAME_MAX + 16];
        const bool empty = !raw[i][0];
        if (empty)
            snprintf(base, sizeof base, "Unnamed: %zu", i);
        else
            snprintf(base, sizeof base, "%s", raw[i]);
        snprintf(cand, sizeof cand, "%s", base);
        bool taken = prep_names_has(&used, cand) || !strcasecmp(cand, "_line") ||
                     (empty && prep_names_has(&given, cand));
        for (unsigned k = 1; taken; k++) {
            snprintf(cand, sizeof cand, "%s.%u", base, k);
            taken = prep_names_has(&used, cand) || prep_names_has(&given, cand);
        }
        if (!(names[i] = strdup(cand))) {
            st = rt_err(err, RT_ERR_NOMEM, "out of memory");
            break;
        }
        prep_names_add(&used, names[i]);
        if (!strcmp(names[i], raw[i]))
            continue;
        if (!quiet && renamed < 10)
            fprintf(stderr, "prep: %s: column %zu of the %s %s: named '%s'\n", where, i + 1, what,
                    empty                        ? "has no name"
                    : !strcasecmp(base, "_line") ? "is the reserved name _line"
                                                 : "repeats a name (SQLite ignores case)",
                    names[i]);
        renamed++;
    }
    if (!quiet && renamed > 10)
        fprintf(stderr, "prep: %s: %zu more columns of the %s renamed as pandas does\n", where,
                renamed - 10, what);
    prep_names_free(&given);
    prep_names_free(&used);
    if (st != RT_OK) {
        for (size_t i = 0; i < nf; i++)
            free(names[i]);
        free(names);
        return st;
    }
    *out = names;
    return RT_OK;
}

/* ---- a dataset's name of any name ---- */

bool prep_dataset_name(const char *name, size_t most, const char *tail, char *out)
{
    const size_t tl = strlen(tail);
    size_t cut = strlen(name);
    if (most > PREP_DATASET_NAME_MAX)
        most = PREP_DATASET_NAME_MAX;
    if (cut + tl > most) {
        cut = most > tl ? most - tl : 0;
        while (cut > 0 && ((unsigned char)name[cut] & 0xC0) == 0x80)
            cut--; /* not inside a UTF-8 character */
        while (cut > 0 && name[cut - 1] == ' ')
            cut--;
    }
    bool same = cut == strlen(name) && !tl;
    for (size_t i = 0; i < cut; i++) {
        const unsigned char ch = (unsigned char)name[i];
        out[i] = ch == ',' || ch < 0x20 || ch == 0x7F ? '_' : (char)ch;
        same = same && out[i] == name[i];
    }
    memcpy(out + cut, tail, tl + 1);
    if (!out[0]) /* a name of nothing but what cut away */
        snprintf(out, PREP_DATASET_NAME_MAX + 1, "c%s", tail);
    return same;
}

int prep_name_block(const char *name, int k)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
        h ^= (uint32_t)(*c >= 'A' && *c <= 'Z' ? *c + ('a' - 'A') : *c);
        h *= 16777619u;
    }
    return (int)(h % (uint32_t)k);
}

int prep_name_blocks(size_t ncols)
{
    const size_t k = ncols / 1500 + 2;
    return k < PREP_MAX_BLOCKS ? (int)k : PREP_MAX_BLOCKS;
}
