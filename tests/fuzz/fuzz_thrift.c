/* fuzz_thrift — the thrift compact reader on arbitrary bytes.
 *
 * Two passes over the same input: pq_thrift_skip of the whole input as a
 * struct (what every parser does with unknown fields), then a walk that
 * reads each value with the typed readers (bool, i32, i64, binary, list
 * headers) and recurses into structs and lists, skipping maps. Both must
 * fail cleanly or stay inside the buffer; on success the reported offset
 * must be within it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pq_thrift.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int walk_value(pq_thrift *t, uint8_t type, int nesting, pq_error *err);

/* pq_thrift_walk's callback: ctx is the struct's nesting depth. */
static int walk_field(pq_thrift *t, int16_t id, uint8_t type, void *ctx, pq_error *err)
{
    (void)id;
    return walk_value(t, type, *(const int *)ctx + 1, err);
}

static int walk_struct(pq_thrift *t, int nesting, pq_error *err)
{
    return pq_thrift_walk(t, walk_field, &nesting, err);
}

static int walk_value(pq_thrift *t, uint8_t type, int nesting, pq_error *err)
{
    /* Deeper than the reader's own limit: let pq_thrift_skip handle it. */
    if (nesting > PQ_THRIFT_MAX_DEPTH)
        return pq_thrift_skip(t, type, err);
    switch (type) {
    case PQ_TT_TRUE:
    case PQ_TT_FALSE: {
        int b;
        return pq_thrift_bool(t, type, &b, err);
    }
    case PQ_TT_BYTE:
    case PQ_TT_I16:
    case PQ_TT_I32: {
        int32_t v;
        return pq_thrift_i32(t, type, &v, err);
    }
    case PQ_TT_I64: {
        int64_t v;
        return pq_thrift_i64(t, type, &v, err);
    }
    case PQ_TT_BINARY: {
        const uint8_t *p;
        uint32_t n;
        if (pq_thrift_binary(t, type, &p, &n, err) < 0)
            return -1;
        /* Touch the slice so ASan checks it lies inside the input. */
        volatile uint8_t sink = 0;
        for (uint32_t i = 0; i < n; i++)
            sink ^= p[i];
        (void)sink;
        return 0;
    }
    case PQ_TT_LIST:
    case PQ_TT_SET: {
        uint8_t et;
        uint32_t n;
        if (pq_thrift_list_begin(t, type, &et, &n, err) < 0)
            return -1;
        for (uint32_t i = 0; i < n; i++) {
            /* Booleans inside lists take one byte each: use skip, which
             * knows that, instead of pq_thrift_bool (field-header form). */
            int rc = et == PQ_TT_TRUE || et == PQ_TT_FALSE ? pq_thrift_skip(t, et, err)
                                                           : walk_value(t, et, nesting + 1, err);
            if (rc < 0)
                return -1;
        }
        return 0;
    }
    case PQ_TT_STRUCT:
        return walk_struct(t, nesting, err);
    default: /* maps, doubles, unknown types */
        return pq_thrift_skip(t, type, err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pq_error err;
    pq_thrift t;

    pq_thrift_init(&t, data, size);
    if (pq_thrift_skip(&t, PQ_TT_STRUCT, &err) == 0 && pq_thrift_offset(&t) > size)
        abort();

    pq_thrift_init(&t, data, size);
    if (walk_struct(&t, 0, &err) == 0 && pq_thrift_offset(&t) > size)
        abort();
    return 0;
}
