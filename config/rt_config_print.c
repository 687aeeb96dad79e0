/* rt_config_print.c — a parsed configuration written back out (see
 * rt_config.h): the effective file (--print-config), the Markdown
 * reference of a schema (docs/config.md), where a key was set, and whether
 * a value is its default (compared as the file would write them). */
#include "rt_config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_internal.h"

static void print_value(const rt_cfg_key *k, const void *obj, FILE *f)
{
    char buf[64];
    switch (k->type) {
    case RT_CFG_INT:
        fprintf(f, "%" PRId64, *(const int64_t *)cfg_cfield(obj, k));
        break;
    case RT_CFG_FLOAT: { /* the shortest text that reads back the same (0.05, not
                            0.050000000000000003) */
        const double v = *(const double *)cfg_cfield(obj, k);
        for (int p = 1; p <= 17; p++) {
            snprintf(buf, sizeof buf, "%.*g", p, v);
            if (strtod(buf, NULL) == v || p == 17)
                break;
        }
        fputs(buf, f);
        break;
    }
    case RT_CFG_BOOL:
        fputs(*(const bool *)cfg_cfield(obj, k) ? "true" : "false", f);
        break;
    case RT_CFG_SIZE:
        rt_format_size(*(const uint64_t *)cfg_cfield(obj, k), buf, sizeof buf);
        fputs(buf, f);
        break;
    case RT_CFG_DURATION:
        rt_format_duration(*(const int64_t *)cfg_cfield(obj, k), buf, sizeof buf);
        fputs(buf, f);
        break;
    case RT_CFG_ENUM:
        cfg_choice_name(k->choices, *(const int *)cfg_cfield(obj, k), buf, sizeof buf);
        fputs(buf, f);
        break;
    case RT_CFG_STRING:
    case RT_CFG_PATH: {
        const char *v = *(char *const *)cfg_cfield(obj, k);
        fputs(v ? v : "", f);
        break;
    }
    case RT_CFG_LIST: {
        const rt_strlist *l = cfg_cfield(obj, k);
        for (size_t i = 0; i < l->n; i++)
            fprintf(f, "%s%s", i ? ", " : "", l->items[i]);
        break;
    }
    case RT_CFG_MAP: { /* its entries' values, one per line (compared, not loaded) */
        const rt_cfgmap *m = cfg_cfield(obj, k);
        for (size_t i = 0; i < m->n; i++)
            fprintf(f, "%s%s = %s", i ? "\n" : "", m->names[i], m->values[i]);
        break;
    }
    }
}

/* Whether key i is the first of its section in the table (sections print
 * in order of first appearance). */
static bool opens_section(const rt_cfg_schema *s, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (strcmp(s->keys[j].section, s->keys[i].section) == 0)
            return false;
    return true;
}

void rt_cfg_print(const rt_cfg_schema *s, const void *obj, FILE *f, bool with_help)
{
    for (size_t i = 0; i < s->nkeys; i++) {
        const char *sec = s->keys[i].section;
        if (!opens_section(s, i))
            continue;
        if (sec[0])
            fprintf(f, "%s[%s]\n", i ? "\n" : "", sec);
        for (size_t j = i; j < s->nkeys; j++) {
            const rt_cfg_key *k = &s->keys[j];
            if (strcmp(k->section, sec) != 0)
                continue;
            if (with_help)
                fprintf(f, "; %s%s\n", k->help, (k->flags & RT_CFG_REQUIRED) ? " (required)" : "");
            if (k->type == RT_CFG_MAP) { /* its entries, each a line of its own */
                const rt_cfgmap *m = cfg_cfield(obj, k);
                for (size_t e = 0; e < m->n; e++)
                    fprintf(f, "%s = %s\n", m->names[e], m->values[e]);
                continue;
            }
            fprintf(f, "%s = ", k->name);
            print_value(k, obj, f);
            fputc('\n', f);
        }
    }
}

static const char *type_word(const rt_cfg_key *k)
{
    static const char *const w[] = {"integer", "number", "bool",     "string", "path",
                                    "list",    "size",   "duration", "choice", "one key each"};
    return (unsigned)k->type < sizeof w / sizeof *w ? w[k->type] : "?";
}

void rt_cfg_print_reference(const rt_cfg_schema *s, FILE *f)
{
    for (size_t i = 0; i < s->nkeys; i++) {
        const char *sec = s->keys[i].section;
        if (!opens_section(s, i))
            continue;
        fprintf(f, "\n`[%s]`\n\n| key | type | default | meaning |\n| --- | --- | --- | --- |\n", sec);
        for (size_t j = i; j < s->nkeys; j++) {
            const rt_cfg_key *k = &s->keys[j];
            if (strcmp(k->section, sec) != 0)
                continue;
            char range[160] = "";
            if (k->type == RT_CFG_ENUM) { /* `a` / `b`: a bare | would split the table */
                size_t n = (size_t)snprintf(range, sizeof range, ": `");
                for (const char *c = k->choices; *c && n + 8 < sizeof range; c++)
                    n += (size_t)snprintf(range + n, sizeof range - n, "%s",
                                          *c == '|' ? "` / `" : (char[]){*c, 0});
                snprintf(range + n, sizeof range - n, "`");
            }
            else if ((k->type == RT_CFG_INT || k->type == RT_CFG_FLOAT) &&
                     (k->min > RT_CFG_NOLIMIT_LO || k->max < RT_CFG_NOLIMIT_HI)) {
                char lo[48], hi[48]; /* integers in full: 1048576, not 1.04858e+06 */
                cfg_format_bound(k, k->min, lo, sizeof lo);
                cfg_format_bound(k, k->max, hi, sizeof hi);
                if (k->max >= RT_CFG_NOLIMIT_HI) /* one bound: not "0 to 1e300" in full */
                    snprintf(range, sizeof range, " (%s or more)", lo);
                else if (k->min <= RT_CFG_NOLIMIT_LO)
                    snprintf(range, sizeof range, " (at most %s)", hi);
                else
                    snprintf(range, sizeof range, " (%s to %s)", lo, hi);
            }
            const char *def = (k->flags & RT_CFG_REQUIRED) ? "required"
                              : k->def && k->def[0]         ? k->def
                                                            : "";
            fprintf(f, "| `%s%s` | %s%s | %s%s%s | ", k->name,
                    k->type == RT_CFG_MAP ? "SECTION.KEY" : "", type_word(k), range,
                    def[0] && strcmp(def, "required") ? "`" : "", def,
                    def[0] && strcmp(def, "required") ? "`" : "");
            for (const char *h = k->help; *h; h++) /* a bare | would split the row */
                fputs(*h == '|' ? "\\|" : (char[]){*h, 0}, f);
            fputs(" |\n", f);
        }
    }
}

char *rt_cfg_print_string(const rt_cfg_schema *s, const void *obj)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    rt_cfg_print(s, obj, f, false);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

const char *rt_cfg_where(const rt_cfg_schema *s, const rt_cfg_origin *o, const char *section,
                         const char *name, char *buf, size_t len)
{
    const rt_cfg_key *k = rt_cfg_find(s, section, name);
    const int line = k && o->lines ? o->lines[k - s->keys] : 0;
    if (line > 0)
        snprintf(buf, len, "%s:%d", o->fname, line);
    else if (line == RT_CFG_LINE_SET)
        snprintf(buf, len, "--set %s.%s", section, name);
    else
        snprintf(buf, len, "%s", o->fname);
    return buf;
}

/* A key's value as the file would write it (malloc'd). */
static char *value_text(const rt_cfg_key *k, const void *obj)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    print_value(k, obj, f);
    fclose(f);
    return buf;
}

char *rt_cfg_value_text(const rt_cfg_schema *s, const void *obj, const char *section,
                        const char *name)
{
    const rt_cfg_key *k = rt_cfg_find(s, section, name);
    return k && k->type != RT_CFG_MAP ? value_text(k, obj) : NULL;
}

bool rt_cfg_is_default(const rt_cfg_schema *s, const void *obj, const char *section,
                       const char *name)
{
    const rt_cfg_key *k = rt_cfg_find(s, section, name);
    if (!k)
        return true;
    void *def = calloc(1, s->struct_size);
    if (!def)
        return true;
    rt_cfg_init(s, def);
    char *a = value_text(k, obj), *b = value_text(k, def);
    bool same = a && b && strcmp(a, b) == 0;
    free(a);
    free(b);
    rt_cfg_free(s, def);
    free(def);
    return same;
}

rt_status rt_cfg_validate(const rt_cfg_schema *s, const void *obj, const rt_cfg_origin *o,
                          rt_cfg_errors *errs)
{
    return s->validate ? s->validate(obj, o, errs) : RT_OK;
}
