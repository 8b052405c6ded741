/* pq_thrift.h — reader for the Thrift compact protocol, the encoding of all
 * Parquet metadata (FileMetaData, PageHeader, OffsetIndex).
 *
 * The reader walks fields of a struct one at a time; callers switch on the
 * field id, read the values they know and pq_thrift_skip() the rest, so newer
 * writers' extra fields are ignored. Nesting is bounded (PQ_THRIFT_MAX_DEPTH)
 * so hostile input cannot exhaust the stack. All reads are bounds-checked
 * through pq_cursor; on failure the functions return -1 with a message that
 * names the byte offset from the start of the buffer.
 */
#ifndef PQ_THRIFT_H
#define PQ_THRIFT_H

#include <stdint.h>

#include "pq_cursor.h"
#include "pq_error.h"

#define PQ_THRIFT_MAX_DEPTH 32

/* Compact protocol type ids (as on the wire). */
enum {
    PQ_TT_STOP = 0,
    PQ_TT_TRUE = 1,
    PQ_TT_FALSE = 2,
    PQ_TT_BYTE = 3,
    PQ_TT_I16 = 4,
    PQ_TT_I32 = 5,
    PQ_TT_I64 = 6,
    PQ_TT_DOUBLE = 7,
    PQ_TT_BINARY = 8,
    PQ_TT_LIST = 9,
    PQ_TT_SET = 10,
    PQ_TT_MAP = 11,
    PQ_TT_STRUCT = 12,
};

typedef struct pq_thrift {
    pq_cursor cur;
    const uint8_t *base; /* start of the buffer, for offsets in messages */
    int depth;
    int16_t last_id[PQ_THRIFT_MAX_DEPTH]; /* previous field id per open struct */
    uint8_t bool_value; /* value of the last boolean field header (TRUE/FALSE) */
} pq_thrift;

void pq_thrift_init(pq_thrift *t, const uint8_t *buf, size_t len);

/* Enter a struct (call before reading its first field; also for the top level). */
int pq_thrift_struct_begin(pq_thrift *t, pq_error *err);
/* Leave a struct after pq_thrift_field() reported PQ_TT_STOP. */
void pq_thrift_struct_end(pq_thrift *t);

/* Next field header of the current struct. *type is PQ_TT_STOP at the end. */
int pq_thrift_field(pq_thrift *t, int16_t *id, uint8_t *type, pq_error *err);

/* Values. Each checks that `type` (from the field or list header) matches. */
int pq_thrift_bool(pq_thrift *t, uint8_t type, int *out, pq_error *err);
int pq_thrift_i32(pq_thrift *t, uint8_t type, int32_t *out, pq_error *err);
int pq_thrift_i64(pq_thrift *t, uint8_t type, int64_t *out, pq_error *err);
/* Binary/string: *out points into the buffer (not NUL-terminated). */
int pq_thrift_binary(pq_thrift *t, uint8_t type, const uint8_t **out, uint32_t *len,
                     pq_error *err);
/* List or set header. In the compact protocol every list element takes at
 * least one byte (booleans and empty structs included; a double 8), so a
 * *count the bytes left cannot hold fails here, before any caller allocates.
 * A count that passes is still only a claim: a 1-byte element may become a
 * much larger structure, so callers grow their arrays as elements parse
 * rather than allocate *count of them up front. */
int pq_thrift_list_begin(pq_thrift *t, uint8_t type, uint8_t *elem_type, uint32_t *count,
                         pq_error *err);

/* Read a whole struct (the top level, or a field or list element whose type
 * was PQ_TT_STRUCT): enter it, hand each field to `field` up to the end,
 * leave it. `field` reads the field's value with the functions above (or
 * pq_thrift_skip()s it) and returns 0, or -1 with err set to stop the walk.
 * Every struct reader of the decoder is such a callback. */
typedef int (*pq_thrift_field_fn)(pq_thrift *t, int16_t id, uint8_t type, void *ctx,
                                  pq_error *err);
int pq_thrift_walk(pq_thrift *t, pq_thrift_field_fn field, void *ctx, pq_error *err);

/* Skip one value of the given type, including nested structs/lists/maps. */
int pq_thrift_skip(pq_thrift *t, uint8_t type, pq_error *err);

/* Bytes consumed so far. */
size_t pq_thrift_offset(const pq_thrift *t);

#endif
