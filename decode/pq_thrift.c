#include "pq_thrift.h"

/* Thrift compact protocol, as written by every Parquet writer:
 *  - field header: one byte, high nibble = field id delta (1..15) from the
 *    previous field of the same struct, low nibble = type; a delta of 0 means
 *    the id follows as a zigzag varint.
 *  - booleans in a field header carry their value in the type (1 true,
 *    2 false); inside lists they take one byte each.
 *  - i16/i32/i64: zigzag varints; byte: 1 byte; double: 8 bytes LE.
 *  - binary: varint length, then the bytes.
 *  - list/set: one byte, high nibble = count (15 means a varint count
 *    follows), low nibble = element type.
 *  - map: varint count, then (if count > 0) one byte of key/value types. */

void pq_thrift_init(pq_thrift *t, const uint8_t *buf, size_t len)
{
    t->cur = pq_cursor_make(buf, len);
    t->base = buf;
    t->depth = 0;
    t->bool_value = 0;
}

size_t pq_thrift_offset(const pq_thrift *t)
{
    return (size_t)(t->cur.p - t->base);
}

static int truncated(pq_thrift *t, const char *what, pq_error *err)
{
    return pq_error_set(err, "thrift: %s at byte %zu is truncated (%zu bytes left)", what,
                        pq_thrift_offset(t), t->cur.left);
}

static int type_mismatch(pq_thrift *t, const char *want, uint8_t type, pq_error *err)
{
    return pq_error_set(err, "thrift: expected %s at byte %zu, found type %u", want,
                        pq_thrift_offset(t), type);
}

int pq_thrift_struct_begin(pq_thrift *t, pq_error *err)
{
    if (t->depth >= PQ_THRIFT_MAX_DEPTH)
        return pq_error_set(err, "thrift: structs nested deeper than %d at byte %zu",
                            PQ_THRIFT_MAX_DEPTH, pq_thrift_offset(t));
    t->last_id[t->depth++] = 0;
    t->bool_value = 0;
    return 0;
}

void pq_thrift_struct_end(pq_thrift *t)
{
    if (t->depth > 0)
        t->depth--;
}

int pq_thrift_field(pq_thrift *t, int16_t *id, uint8_t *type, pq_error *err)
{
    if (t->depth <= 0)
        return pq_error_set(err, "thrift: field read outside a struct at byte %zu",
                            pq_thrift_offset(t));
    size_t at = pq_thrift_offset(t);
    uint8_t b;
    if (!pq_cursor_u8(&t->cur, &b))
        return truncated(t, "field header", err);
    t->bool_value = 0;
    *type = b & 0x0f;
    if (*type == PQ_TT_STOP) {
        *id = 0;
        return 0;
    }
    if (*type > PQ_TT_STRUCT)
        return pq_error_set(err, "thrift: field header at byte %zu has unknown type %u", at,
                            *type);
    int16_t *last = &t->last_id[t->depth - 1];
    uint8_t delta = b >> 4;
    if (delta) {
        int32_t next = (int32_t)*last + delta;
        if (next > INT16_MAX)
            return pq_error_set(err, "thrift: field id overflows at byte %zu", at);
        *id = (int16_t)next;
    } else {
        int64_t v;
        if (!pq_cursor_zigzag(&t->cur, &v))
            return truncated(t, "field id", err);
        if (v < INT16_MIN || v > INT16_MAX)
            return pq_error_set(err, "thrift: field id %lld at byte %zu is out of range",
                                (long long)v, at);
        *id = (int16_t)v;
    }
    *last = *id;
    if (*type == PQ_TT_TRUE || *type == PQ_TT_FALSE)
        t->bool_value = *type;
    return 0;
}

int pq_thrift_bool(pq_thrift *t, uint8_t type, int *out, pq_error *err)
{
    if (type != PQ_TT_TRUE && type != PQ_TT_FALSE)
        return type_mismatch(t, "bool", type, err);
    if (t->bool_value) { /* value was in the field header */
        *out = t->bool_value == PQ_TT_TRUE;
        t->bool_value = 0;
        return 0;
    }
    uint8_t b;
    if (!pq_cursor_u8(&t->cur, &b))
        return truncated(t, "bool", err);
    *out = b == PQ_TT_TRUE;
    return 0;
}

static int read_varint_int(pq_thrift *t, uint8_t type, int64_t *out, pq_error *err)
{
    if (type == PQ_TT_BYTE) {
        uint8_t b;
        if (!pq_cursor_u8(&t->cur, &b))
            return truncated(t, "byte", err);
        *out = (int8_t)b;
        return 0;
    }
    if (!pq_cursor_zigzag(&t->cur, out))
        return truncated(t, "integer", err);
    return 0;
}

int pq_thrift_i32(pq_thrift *t, uint8_t type, int32_t *out, pq_error *err)
{
    if (type != PQ_TT_I32 && type != PQ_TT_I16 && type != PQ_TT_BYTE)
        return type_mismatch(t, "i32", type, err);
    size_t at = pq_thrift_offset(t);
    int64_t v = 0;
    if (read_varint_int(t, type, &v, err) < 0)
        return -1;
    if (v < INT32_MIN || v > INT32_MAX)
        return pq_error_set(err, "thrift: i32 at byte %zu is out of range (%lld)", at,
                            (long long)v);
    *out = (int32_t)v;
    return 0;
}

int pq_thrift_i64(pq_thrift *t, uint8_t type, int64_t *out, pq_error *err)
{
    if (type != PQ_TT_I64 && type != PQ_TT_I32 && type != PQ_TT_I16 && type != PQ_TT_BYTE)
        return type_mismatch(t, "i64", type, err);
    return read_varint_int(t, type, out, err);
}

int pq_thrift_binary(pq_thrift *t, uint8_t type, const uint8_t **out, uint32_t *len,
                     pq_error *err)
{
    if (type != PQ_TT_BINARY)
        return type_mismatch(t, "binary", type, err);
    size_t at = pq_thrift_offset(t);
    uint64_t n;
    if (!pq_cursor_uleb(&t->cur, &n))
        return truncated(t, "binary length", err);
    if (n > t->cur.left || n > UINT32_MAX)
        return pq_error_set(err,
                            "thrift: binary at byte %zu declares %llu bytes, only %zu left", at,
                            (unsigned long long)n, t->cur.left);
    pq_cursor_slice(&t->cur, (size_t)n, out);
    *len = (uint32_t)n;
    return 0;
}

int pq_thrift_list_begin(pq_thrift *t, uint8_t type, uint8_t *elem_type, uint32_t *count,
                         pq_error *err)
{
    if (type != PQ_TT_LIST && type != PQ_TT_SET)
        return type_mismatch(t, "list", type, err);
    size_t at = pq_thrift_offset(t);
    uint8_t b;
    if (!pq_cursor_u8(&t->cur, &b))
        return truncated(t, "list header", err);
    uint64_t n = b >> 4;
    if (n == 15 && !pq_cursor_uleb(&t->cur, &n))
        return truncated(t, "list size", err);
    *elem_type = b & 0x0f;
    /* An empty list may say element type 0 (fastparquet writes 0x00): it has
     * no elements to misread. */
    if ((*elem_type == PQ_TT_STOP && n != 0) || *elem_type > PQ_TT_STRUCT)
        return pq_error_set(err, "thrift: list at byte %zu has unknown element type %u", at,
                            *elem_type);
    /* Checked before anyone allocates for the elements: a double takes 8
     * bytes, every other element at least one (a varint, a binary's length,
     * a bool, a struct's stop field, a nested list's or map's header). */
    size_t min_bytes = *elem_type == PQ_TT_DOUBLE ? 8 : 1;
    if (n > t->cur.left / min_bytes)
        return pq_error_set(err,
                            "thrift: list at byte %zu declares %llu elements, only %zu bytes "
                            "left (an element takes at least %zu)",
                            at, (unsigned long long)n, t->cur.left, min_bytes);
    *count = (uint32_t)n;
    t->bool_value = 0;
    return 0;
}

static int skip_value(pq_thrift *t, uint8_t type, int nesting, pq_error *err);

/* pq_thrift_walk's callback for a struct being skipped: ctx is the struct's
 * nesting depth. */
static int skip_field(pq_thrift *t, int16_t id, uint8_t type, void *ctx, pq_error *err)
{
    (void)id;
    return skip_value(t, type, *(const int *)ctx + 1, err);
}

static int skip_struct(pq_thrift *t, int nesting, pq_error *err)
{
    return pq_thrift_walk(t, skip_field, &nesting, err);
}

static int skip_value(pq_thrift *t, uint8_t type, int nesting, pq_error *err)
{
    if (nesting > PQ_THRIFT_MAX_DEPTH)
        return pq_error_set(err, "thrift: values nested deeper than %d at byte %zu",
                            PQ_THRIFT_MAX_DEPTH, pq_thrift_offset(t));
    int64_t i64;
    int bv;
    switch (type) {
    case PQ_TT_TRUE:
    case PQ_TT_FALSE:
        return pq_thrift_bool(t, type, &bv, err);
    case PQ_TT_BYTE:
    case PQ_TT_I16:
    case PQ_TT_I32:
    case PQ_TT_I64:
        return read_varint_int(t, type, &i64, err);
    case PQ_TT_DOUBLE:
        if (!pq_cursor_skip(&t->cur, 8))
            return truncated(t, "double", err);
        return 0;
    case PQ_TT_BINARY: {
        const uint8_t *p;
        uint32_t n;
        return pq_thrift_binary(t, type, &p, &n, err);
    }
    case PQ_TT_LIST:
    case PQ_TT_SET: {
        uint8_t et;
        uint32_t n;
        if (pq_thrift_list_begin(t, type, &et, &n, err) < 0)
            return -1;
        for (uint32_t i = 0; i < n; i++) {
            t->bool_value = 0; /* list booleans are one byte each */
            if (skip_value(t, et, nesting + 1, err) < 0)
                return -1;
        }
        return 0;
    }
    case PQ_TT_MAP: {
        size_t at = pq_thrift_offset(t);
        uint64_t n;
        if (!pq_cursor_uleb(&t->cur, &n))
            return truncated(t, "map size", err);
        if (n == 0)
            return 0;
        uint8_t kv;
        if (!pq_cursor_u8(&t->cur, &kv))
            return truncated(t, "map types", err);
        uint8_t kt = kv >> 4, vt = kv & 0x0f;
        if (kt == PQ_TT_STOP || kt > PQ_TT_STRUCT || vt == PQ_TT_STOP || vt > PQ_TT_STRUCT)
            return pq_error_set(err, "thrift: map at byte %zu has unknown types %u/%u", at, kt,
                                vt);
        if (n > t->cur.left / 2)
            return pq_error_set(err,
                                "thrift: map at byte %zu declares %llu entries, only %zu bytes left",
                                at, (unsigned long long)n, t->cur.left);
        for (uint64_t i = 0; i < n; i++) {
            t->bool_value = 0;
            if (skip_value(t, kt, nesting + 1, err) < 0)
                return -1;
            t->bool_value = 0;
            if (skip_value(t, vt, nesting + 1, err) < 0)
                return -1;
        }
        return 0;
    }
    case PQ_TT_STRUCT:
        return skip_struct(t, nesting, err);
    default:
        return pq_error_set(err, "thrift: cannot skip unknown type %u at byte %zu", type,
                            pq_thrift_offset(t));
    }
}

int pq_thrift_skip(pq_thrift *t, uint8_t type, pq_error *err)
{
    return skip_value(t, type, t->depth, err);
}

int pq_thrift_walk(pq_thrift *t, pq_thrift_field_fn field, void *ctx, pq_error *err)
{
    if (pq_thrift_struct_begin(t, err) < 0)
        return -1;
    for (;;) {
        int16_t id = 0; /* set by pq_thrift_field; -O3 cannot see it */
        uint8_t type;
        if (pq_thrift_field(t, &id, &type, err) < 0)
            return -1;
        if (type == PQ_TT_STOP)
            break;
        if (field(t, id, type, ctx, err) < 0)
            return -1;
    }
    pq_thrift_struct_end(t);
    return 0;
}
