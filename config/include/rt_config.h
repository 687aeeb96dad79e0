/* rt_config.h — table-driven INI configuration (agent.conf, coordinator.conf,
 * job files).
 *
 * A schema is a const table of keys; each key names its section, name, type,
 * default (written as it would be in the file), bounds, help text and where
 * the value lands in the caller's struct.  The same table parses the file,
 * validates every value, fills defaults, reports missing required keys and
 * prints the effective configuration (--print-config).  Every error names
 * file:line, the key and what was expected; unknown keys and sections get the
 * closest known name as a hint.  Parsing sits on inih.
 * (Model: Redis createIntConfig() tables; UCC config tables with help.) */
#ifndef RT_CONFIG_H
#define RT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rt_status.h"

typedef enum rt_cfg_type {
    RT_CFG_INT,      /* int64_t */
    RT_CFG_FLOAT,    /* double (finite) */
    RT_CFG_BOOL,     /* bool: true/false, yes/no, on/off, 1/0 */
    RT_CFG_STRING,   /* char *, owned by the struct; NULL when unset */
    RT_CFG_PATH,     /* char *; a relative path is resolved against the file's folder */
    RT_CFG_LIST,     /* rt_strlist: comma-separated, items trimmed, none empty */
    RT_CFG_SIZE,     /* uint64_t bytes: "64M", "1.5G", "4096" (K/M/G/T are 1024-based) */
    RT_CFG_DURATION, /* int64_t microseconds: "500ms", "30s", "5m", "1h30m"; bare = seconds */
    RT_CFG_ENUM,     /* int: index into the key's "a|b|c" choices */
    /* rt_cfgmap: every key whose name starts with the key's name (which
     * ends in '.': "space."), each with its text and line, in file order;
     * the values are the caller's to check */
    RT_CFG_MAP,
} rt_cfg_type;

typedef struct rt_strlist {
    char **items; /* owned */
    size_t n;
} rt_strlist;

typedef struct rt_cfgmap {
    size_t n;
    char **names;  /* whole names ("space.train.learning_rate"), owned */
    char **values; /* owned */
    int *lines;    /* the line each was set on (RT_CFG_LINE_SET: --set) */
} rt_cfgmap;
/* The value of name in the map, or NULL. */
const char *rt_cfgmap_get(const rt_cfgmap *m, const char *name);

#define RT_CFG_REQUIRED 0x1u /* must be present in the file; def is ignored */
/* A PATH whose default is relative to the service's state (logs) folder when
 * systemd gives one ($STATE_DIRECTORY, $LOGS_DIRECTORY), else to the file. */
#define RT_CFG_IN_STATE_DIR 0x2u
#define RT_CFG_IN_LOGS_DIR 0x4u

typedef struct rt_cfg_key {
    const char *section;
    const char *name;
    rt_cfg_type type;
    const char *def;     /* default in file syntax; NULL = unset (NULL / 0 / empty) */
    double min, max;     /* bounds for INT, FLOAT, SIZE (bytes), DURATION (us) */
    const char *choices; /* ENUM only: "sum|average" */
    size_t offset;       /* offsetof(struct, field) */
    const char *help;
    unsigned flags;
} rt_cfg_key;

#define RT_CFG_NOLIMIT_LO (-1.0e300)
#define RT_CFG_NOLIMIT_HI (1.0e300)

/* Entry builders: keep tables one line per key. */
#define RT_CFG_KEY(sec, nm, ty, def, lo, hi, ch, st, fld, help, fl)                       \
    { sec, nm, ty, def, lo, hi, ch, offsetof(st, fld), help, fl }
#define RT_CFG_I(sec, nm, def, lo, hi, st, fld, help) \
    RT_CFG_KEY(sec, nm, RT_CFG_INT, def, lo, hi, NULL, st, fld, help, 0)
#define RT_CFG_F(sec, nm, def, lo, hi, st, fld, help) \
    RT_CFG_KEY(sec, nm, RT_CFG_FLOAT, def, lo, hi, NULL, st, fld, help, 0)
#define RT_CFG_B(sec, nm, def, st, fld, help) \
    RT_CFG_KEY(sec, nm, RT_CFG_BOOL, def, 0, 0, NULL, st, fld, help, 0)
#define RT_CFG_S(sec, nm, def, st, fld, help) \
    RT_CFG_KEY(sec, nm, RT_CFG_STRING, def, 0, 0, NULL, st, fld, help, 0)
#define RT_CFG_P(sec, nm, def, st, fld, help) \
    RT_CFG_KEY(sec, nm, RT_CFG_PATH, def, 0, 0, NULL, st, fld, help, 0)
#define RT_CFG_L(sec, nm, def, st, fld, help) \
    RT_CFG_KEY(sec, nm, RT_CFG_LIST, def, 0, 0, NULL, st, fld, help, 0)
#define RT_CFG_Z(sec, nm, def, lo, hi, st, fld, help) \
    RT_CFG_KEY(sec, nm, RT_CFG_SIZE, def, lo, hi, NULL, st, fld, help, 0)
#define RT_CFG_D(sec, nm, def, lo, hi, st, fld, help) \
    RT_CFG_KEY(sec, nm, RT_CFG_DURATION, def, lo, hi, NULL, st, fld, help, 0)
#define RT_CFG_E(sec, nm, def, choices, st, fld, help) \
    RT_CFG_KEY(sec, nm, RT_CFG_ENUM, def, 0, 0, choices, st, fld, help, 0)
#define RT_CFG_M(sec, prefix, st, fld, help) \
    RT_CFG_KEY(sec, prefix, RT_CFG_MAP, NULL, 0, 0, NULL, st, fld, help, 0)

typedef struct rt_cfg_errors rt_cfg_errors;

/* Where a parsed object's values came from, for the cross-key checks'
 * messages: the file's name and, per key of the schema, the line that set
 * it (0: not in the file; lines NULL: unknown, e.g. after --set). */
typedef struct rt_cfg_origin {
    const char *fname;
    const int *lines;
} rt_cfg_origin;

typedef struct rt_cfg_schema {
    const char *what;        /* "job file", for messages */
    const rt_cfg_key *keys;
    size_t nkeys;
    size_t struct_size;
    /* Optional cross-key checks after a successful parse; add messages with
     * rt_cfg_errors_add() (rt_cfg_where names the place) and return
     * RT_ERR_INVALID. */
    rt_status (*validate)(const void *obj, const rt_cfg_origin *o, rt_cfg_errors *errs);
} rt_cfg_schema;

/* ---- error list ---------------------------------------------------------- */

/* Collected messages, one per problem, in file order.  At most
 * RT_CFG_MAX_ERRORS are kept; the last then says how many were left out. */
#define RT_CFG_MAX_ERRORS 50
struct rt_cfg_errors {
    size_t n;
    size_t dropped;
    char *msg[RT_CFG_MAX_ERRORS];
};
void rt_cfg_errors_add(rt_cfg_errors *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rt_cfg_errors_print(const rt_cfg_errors *e, FILE *f);
/* All messages joined by newlines into buf (truncated to len). */
void rt_cfg_errors_join(const rt_cfg_errors *e, char *buf, size_t len);
void rt_cfg_errors_free(rt_cfg_errors *e);

/* ---- loading ------------------------------------------------------------- */

/* Zero *obj (schema->struct_size bytes) and fill every default. */
void rt_cfg_init(const rt_cfg_schema *s, void *obj);

/* Parse the file at path into *obj (rt_cfg_init is called first).
 * Returns RT_OK, or RT_ERR_INVALID with messages in errs (which the caller
 * zero-initialises and frees), or RT_ERR_IO/RT_ERR_NOTFOUND when the file
 * cannot be read (also described in errs).  *obj must be released with
 * rt_cfg_free() in every case. */
/* Whether a path key's value stands as it is: absolute, or an object
 * store's URI (s3://BUCKET/KEY: docs/storage.md); any other is relative to
 * the file (or, given with --set, to the working folder). */
bool rt_cfg_path_absolute(const char *value);

rt_status rt_cfg_load_file(const rt_cfg_schema *s, const char *path, void *obj,
                           rt_cfg_errors *errs);

/* The same, and where each key was set: *lines (the caller frees it; NULL
 * when the file could not be read) holds, per key of the schema, the line
 * that set it or 0 — an rt_cfg_origin's lines for later checks. */
rt_status rt_cfg_load_file_at(const rt_cfg_schema *s, const char *path, void *obj,
                              rt_cfg_errors *errs, int **lines);

/* The same without the schema's cross-key checks and required keys (each
 * value is still checked): for a file that --set completes before
 * rt_cfg_validate runs.  A line of RT_CFG_LINE_SET in *lines means a key
 * --set gave (rt_cfg_where then names it so). */
#define RT_CFG_LINE_SET (-1)
rt_status rt_cfg_load_file_unchecked(const rt_cfg_schema *s, const char *path, void *obj,
                                     rt_cfg_errors *errs, int **lines);

/* Same, from text; fname is used in messages, basedir resolves relative
 * paths (NULL: leave them as written). */
rt_status rt_cfg_load_string(const rt_cfg_schema *s, const char *text, size_t len,
                             const char *fname, const char *basedir, void *obj,
                             rt_cfg_errors *errs);

/* Override one key: "section.key" = value (command-line --set).  Errors are
 * named "command line". */
rt_status rt_cfg_set(const rt_cfg_schema *s, void *obj, const char *dotted,
                     const char *value, rt_cfg_errors *errs);

/* Print the effective configuration as INI that loads back to the same
 * values; with_help adds each key's help text as a comment. */
void rt_cfg_print(const rt_cfg_schema *s, const void *obj, FILE *f, bool with_help);
/* Same into a malloc'd string (caller frees); NULL on allocation failure. */
char *rt_cfg_print_string(const rt_cfg_schema *s, const void *obj);
/* The schema as Markdown tables, one per section (docs/config.md). */
void rt_cfg_print_reference(const rt_cfg_schema *s, FILE *f);

/* Release owned strings and lists; the struct itself is the caller's. */
void rt_cfg_free(const rt_cfg_schema *s, void *obj);

/* The key of section.name: the key of that name, else a map key
 * (RT_CFG_MAP) whose prefix name starts. */
const rt_cfg_key *rt_cfg_find(const rt_cfg_schema *s, const char *section, const char *name);
/* The name of an ENUM key's choice v ("tcp" of "tcp|rdma|..."), into buf;
 * "?" when the key is not an enum or v is out of range. */
const char *rt_cfg_enum_name(const rt_cfg_schema *s, const char *section, const char *name, int v,
                             char *buf, size_t len);
/* The value of an ENUM key's choice text (1 for "rdma" of "tcp|rdma|..."),
 * or -1 (not a choice, not an enum key). */
int rt_cfg_enum_value(const rt_cfg_schema *s, const char *section, const char *name,
                      const char *text);

/* "file:line" where section.name was set, else "file" (into buf). */
const char *rt_cfg_where(const rt_cfg_schema *s, const rt_cfg_origin *o, const char *section,
                         const char *name, char *buf, size_t len);
/* obj's value of section.name as the file would write it (malloc'd; NULL
 * for no such key). */
char *rt_cfg_value_text(const rt_cfg_schema *s, const void *obj, const char *section,
                        const char *name);
/* Whether obj's value of section.name is its default's (as written). */
bool rt_cfg_is_default(const rt_cfg_schema *s, const void *obj, const char *section,
                       const char *name);
/* Run the schema's cross-key checks on obj (messages name o's file). */
rt_status rt_cfg_validate(const rt_cfg_schema *s, const void *obj, const rt_cfg_origin *o,
                          rt_cfg_errors *errs);

/* ---- value parsers (also used by CLI flags) ------------------------------ */

/* Each parses the whole text (leading/trailing blanks allowed) or fails with
 * a reason in err (RT_ERR_LEN) and RT_ERR_INVALID. */
rt_status rt_parse_int(const char *text, int64_t *out, char *err);
rt_status rt_parse_double(const char *text, double *out, char *err);
rt_status rt_parse_bool(const char *text, bool *out, char *err);
rt_status rt_parse_size(const char *text, uint64_t *out, char *err);
rt_status rt_parse_duration(const char *text, int64_t *out_us, char *err);

/* Shortest text that parses back to the same value ("64M", "1m30s"). */
void rt_format_size(uint64_t bytes, char *buf, size_t len);
void rt_format_duration(int64_t us, char *buf, size_t len);

/* Damerau–Levenshtein (optimal string alignment) distance, for hints. */
size_t rt_edit_distance(const char *a, const char *b);
/* FNV-1a of a NUL-terminated string (hash tables of names and values). */
uint64_t rt_hash_str(const char *s);
/* SplitMix64's output function of x (hash tables of numbers, seeds). */
uint64_t rt_hash_u64(uint64_t x);

void rt_strlist_free(rt_strlist *l);
/* Split comma-separated text into a list (items trimmed).  An empty text is
 * an empty list; an empty item is an error.  "double quotes" keep commas and
 * spaces in an item; \" \\ \, \; escape a character; an unclosed quote is
 * an error. */
rt_status rt_strlist_parse(const char *text, rt_strlist *out, char *err);
/* Index of item in l, or -1. */
long rt_strlist_index(const rt_strlist *l, const char *item);

#endif
