/* pq_thrift.h — the Thrift compact protocol, read side only, as Parquet's
 * footer and page headers use it.  Every read is bounded by the buffer;
 * a malformed input sets `bad` (with what was wrong) and all later reads
 * return zeros, so callers check `bad` once at the end of a struct. */
#ifndef PQ_THRIFT_H
#define PQ_THRIFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    TC_STOP = 0,
    TC_TRUE = 1,
    TC_FALSE = 2,
    TC_BYTE = 3,
    TC_I16 = 4,
    TC_I32 = 5,
    TC_I64 = 6,
    TC_DOUBLE = 7,
    TC_BINARY = 8,
    TC_LIST = 9,
    TC_SET = 10,
    TC_MAP = 11,
    TC_STRUCT = 12
};

typedef struct tc {
    const uint8_t *p, *end;
    int depth;
    const char *bad; /* NULL while the input is well formed */
} tc;

/* The next field of the current struct: false at its end (or on bad input).
 * *last is the previous field id (start a struct with 0). */
bool tc_field(tc *t, int16_t *last, int *type);
/* An integer field of any integer wire type (a bool field gives 0/1). */
int64_t tc_int(tc *t, int type);
/* A binary/string field: pointer into the buffer and its length. */
const uint8_t *tc_binary(tc *t, int type, size_t *len);
/* A list or set header: element type and count (bounded by what is left). */
bool tc_list(tc *t, int type, int *elem, size_t *n);
/* Skips a value of the given wire type (nested at most 32 deep). */
void tc_skip(tc *t, int type);
/* Enter / leave a nested struct (depth bound). */
bool tc_enter(tc *t, int type);
void tc_leave(tc *t);

#endif
