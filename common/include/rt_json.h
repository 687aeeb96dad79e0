/* rt_json.h — JSON for the control plane: a strict parser into a read-only
 * tree, and a writer that escapes correctly.  RFC 8259 text only: the parser
 * rejects trailing commas, comments, invalid UTF-8, lone surrogates and
 * "\u0000" (strings are C strings), and limits nesting to RT_JSON_MAX_DEPTH.
 * Errors say at which byte offset the text went wrong. */
#ifndef RT_JSON_H
#define RT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RT_JSON_MAX_DEPTH 64

typedef enum rt_json_type {
    RT_JSON_NULL,
    RT_JSON_BOOL,
    RT_JSON_NUMBER,
    RT_JSON_STRING,
    RT_JSON_ARRAY,
    RT_JSON_OBJECT,
} rt_json_type;

typedef struct rt_json rt_json;

/* Parse exactly one JSON value (surrounding whitespace allowed). */
rt_status rt_json_parse(const char *text, size_t len, rt_json **out, char *err);
void rt_json_free(rt_json *j);

rt_json_type rt_json_type_of(const rt_json *j);
/* Number of elements (array) or members (object); 0 otherwise. */
size_t rt_json_len(const rt_json *j);
const rt_json *rt_json_at(const rt_json *arr, size_t i);
const char *rt_json_key_at(const rt_json *obj, size_t i);
const rt_json *rt_json_value_at(const rt_json *obj, size_t i);
/* Member of an object by key (the first if repeated); NULL if absent or j
 * is not an object. */
const rt_json *rt_json_get(const rt_json *obj, const char *key);

/* Typed reads: the value, or def when j is NULL or of another type. */
const char *rt_json_str(const rt_json *j, const char *def);
double rt_json_num(const rt_json *j, double def);
bool rt_json_bool(const rt_json *j, bool def);
/* Integer reads succeed only for numbers that are whole and in range. */
bool rt_json_int(const rt_json *j, int64_t *out);
/* Shorthands for object members. */
const char *rt_json_get_str(const rt_json *obj, const char *key);
bool rt_json_get_int(const rt_json *obj, const char *key, int64_t *out);

/* ---- writer ------------------------------------------------------------- */

typedef struct rt_jw {
    char *buf;
    size_t len, cap;
    int depth;
    bool first[RT_JSON_MAX_DEPTH + 1]; /* no comma before the next item */
    bool after_key;
    bool failed; /* out of memory or misuse: rt_jw_take returns NULL */
} rt_jw;

void rt_jw_init(rt_jw *w);
void rt_jw_free(rt_jw *w);
void rt_jw_obj(rt_jw *w);     /* { */
void rt_jw_obj_end(rt_jw *w); /* } */
void rt_jw_arr(rt_jw *w);     /* [ */
void rt_jw_arr_end(rt_jw *w); /* ] */
void rt_jw_key(rt_jw *w, const char *key);
void rt_jw_str(rt_jw *w, const char *s); /* NULL writes null */
void rt_jw_strn(rt_jw *w, const char *s, size_t n);
void rt_jw_int(rt_jw *w, int64_t v);
void rt_jw_num(rt_jw *w, double v);
/* A float with the 9 significant digits that bring it back exactly. */
void rt_jw_numf(rt_jw *w, float v); /* non-finite numbers are written as null */
void rt_jw_bool(rt_jw *w, bool v);
void rt_jw_null(rt_jw *w);
/* Insert text that is already valid JSON (e.g. a stored document). */
void rt_jw_raw(rt_jw *w, const char *json);
/* Member shorthands. */
void rt_jw_kstr(rt_jw *w, const char *key, const char *s);
void rt_jw_kint(rt_jw *w, const char *key, int64_t v);
void rt_jw_knum(rt_jw *w, const char *key, double v);
void rt_jw_kbool(rt_jw *w, const char *key, bool v);
/* The text (NUL-terminated, caller frees) and its length; NULL on failure.
 * The writer is reset. */
char *rt_jw_take(rt_jw *w, size_t *len);

/* Write a value read from a tree back out (e.g. to forward a part). */
void rt_jw_value(rt_jw *w, const rt_json *j);

#ifdef __cplusplus
}
#endif
#endif
