/* pq_thrift.c — see pq_thrift.h. */
#include "pq_thrift.h"

static void fail(tc *t, const char *why)
{
    if (!t->bad)
        t->bad = why;
    t->p = t->end;
}

static uint64_t varint(tc *t)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (t->p >= t->end) {
            fail(t, "truncated integer");
            return 0;
        }
        uint8_t b = *t->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    fail(t, "integer longer than 10 bytes");
    return 0;
}

static int64_t zigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

bool tc_field(tc *t, int16_t *last, int *type)
{
    if (t->bad || t->p >= t->end) {
        fail(t, "truncated struct");
        return false;
    }
    uint8_t b = *t->p++;
    if (b == TC_STOP)
        return false;
    *type = b & 0x0f;
    int delta = b >> 4;
    int64_t id = delta ? *last + delta : zigzag(varint(t));
    if (*type > TC_STRUCT || id < -32768 || id > 32767) {
        fail(t, "bad field header");
        return false;
    }
    *last = (int16_t)id;
    return !t->bad;
}

int64_t tc_int(tc *t, int type)
{
    switch (type) {
    case TC_TRUE:
        return 1;
    case TC_FALSE:
        return 0;
    case TC_BYTE:
        if (t->p >= t->end) {
            fail(t, "truncated byte");
            return 0;
        }
        return (int8_t)*t->p++;
    case TC_I16:
    case TC_I32:
    case TC_I64:
        return zigzag(varint(t));
    default:
        fail(t, "a field has the wrong type");
        return 0;
    }
}

const uint8_t *tc_binary(tc *t, int type, size_t *len)
{
    *len = 0;
    if (type != TC_BINARY) {
        fail(t, "a field has the wrong type");
        return NULL;
    }
    uint64_t n = varint(t);
    if (t->bad || n > (uint64_t)(t->end - t->p)) {
        fail(t, "string longer than the input");
        return NULL;
    }
    const uint8_t *s = t->p;
    t->p += n;
    *len = (size_t)n;
    return s;
}

bool tc_list(tc *t, int type, int *elem, size_t *n)
{
    *n = 0;
    if (type != TC_LIST && type != TC_SET) {
        fail(t, "a field has the wrong type");
        return false;
    }
    if (t->p >= t->end) {
        fail(t, "truncated list");
        return false;
    }
    uint8_t b = *t->p++;
    uint64_t size = b >> 4;
    *elem = b & 0x0f;
    if (size == 15)
        size = varint(t);
    /* every element takes at least one byte, except a list of bools is
     * one byte each too: the count cannot exceed what is left */
    if (t->bad || size > (uint64_t)(t->end - t->p) || *elem > TC_STRUCT || *elem == TC_STOP) {
        fail(t, "bad list header");
        return false;
    }
    *n = (size_t)size;
    return true;
}

bool tc_enter(tc *t, int type)
{
    if (type != TC_STRUCT) {
        fail(t, "a field has the wrong type");
        return false;
    }
    if (++t->depth > 32) {
        fail(t, "nested more than 32 deep");
        return false;
    }
    return !t->bad;
}

void tc_leave(tc *t) { t->depth--; }

/* Inside a list or map a bool is a whole byte, not a field type. */
static int elem_wire(int type) { return type == TC_TRUE || type == TC_FALSE ? TC_BYTE : type; }

void tc_skip(tc *t, int type)
{
    size_t n, len;
    int elem;
    switch (type) {
    case TC_TRUE:
    case TC_FALSE:
    case TC_BYTE:
    case TC_I16:
    case TC_I32:
    case TC_I64:
        tc_int(t, type);
        return;
    case TC_DOUBLE:
        if (t->end - t->p < 8)
            fail(t, "truncated double");
        else
            t->p += 8;
        return;
    case TC_BINARY:
        tc_binary(t, type, &len);
        return;
    case TC_LIST:
    case TC_SET:
        if (!tc_list(t, type, &elem, &n) || !tc_enter(t, TC_STRUCT))
            return;
        for (size_t i = 0; i < n && !t->bad; i++)
            tc_skip(t, elem_wire(elem));
        tc_leave(t);
        return;
    case TC_MAP: {
        uint64_t size = varint(t);
        if (size == 0 || t->bad)
            return;
        if (t->p >= t->end || size > (uint64_t)(t->end - t->p)) {
            fail(t, "bad map header");
            return;
        }
        uint8_t kv = *t->p++;
        if (!tc_enter(t, TC_STRUCT))
            return;
        for (uint64_t i = 0; i < size && !t->bad; i++) {
            tc_skip(t, elem_wire(kv >> 4));
            tc_skip(t, elem_wire(kv & 0x0f));
        }
        tc_leave(t);
        return;
    }
    case TC_STRUCT: {
        if (!tc_enter(t, type))
            return;
        int16_t last = 0;
        int ft;
        while (tc_field(t, &last, &ft))
            tc_skip(t, ft);
        tc_leave(t);
        return;
    }
    default:
        fail(t, "unknown wire type");
    }
}
