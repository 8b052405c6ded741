/* ix_value.h — what one leaf value means and how it is written: as JSON
 * text (jsonl) or as a little-endian number of a chosen dtype (raw).
 *
 * Values arrive as pq_bytes in their PLAIN physical form (pq_column.h): the
 * rules are in tests/CONTRACT-TYPES.md. JSON text matches Python's
 * json.dumps of the value pyarrow reads (floats: shortest round-trip repr;
 * NaN, Infinity), or an ISO-8601 string for dates and times. Pure functions,
 * thread-safe.
 */
#ifndef IX_VALUE_H
#define IX_VALUE_H

#include <stddef.h>
#include <stdint.h>

#include "pq_column.h"
#include "pq_error.h"
#include "pq_meta.h"

typedef enum ix_kind {
    IX_KIND_STRING,    /* UTF-8 text: JSON string */
    IX_KIND_BINARY,    /* bytes: JSON string, >= 0x80 as \u0080..\u00ff */
    IX_KIND_BOOL,
    IX_KIND_INT,       /* signed INT32/INT64 */
    IX_KIND_UINT,      /* unsigned INT32/INT64 */
    IX_KIND_FLOAT,     /* FLOAT, DOUBLE, FLOAT16 */
    IX_KIND_DECIMAL,
    IX_KIND_DATE,
    IX_KIND_TIME,
    IX_KIND_TIMESTAMP, /* INT64 in a unit, or INT96 */
    IX_KIND_UUID,
} ix_kind;

typedef struct ix_value_type {
    ix_kind kind;
    int physical;      /* PQ_INT32, ... */
    int bits;          /* INT, UINT: 8, 16, 32 or 64 */
    int32_t scale;     /* DECIMAL */
    int unit;          /* TIME, TIMESTAMP: PQ_UNIT_* (INT96: nanos) */
    int utc;           /* TIMESTAMP: append Z */
} ix_value_type;

/* The type of a leaf's values. */
ix_value_type ix_value_type_of(const pq_leaf *leaf);
int ix_value_is_text(const ix_value_type *t);   /* STRING or BINARY */

/* Longest JSON text of a non-text value. */
#define IX_JSON_SCALAR_MAX 96
/* Decimals of more bytes than this are refused (38 digits need 16). */
#define IX_DECIMAL_MAX_BYTES 32

/* JSON text of a non-text value into buf (IX_JSON_SCALAR_MAX bytes).
 * Returns its length, or -1 with a message if the value cannot be written
 * (wrong width for its type, a decimal too long). */
int ix_json_scalar(const ix_value_type *t, pq_bytes v, char *buf, pq_error *err);

/* raw framing: little-endian numbers of one dtype. */
typedef enum ix_dtype {
    IX_DT_NONE = 0, /* not chosen: the column's own */
    IX_DT_I8, IX_DT_U8, IX_DT_I16, IX_DT_U16, IX_DT_I32, IX_DT_U32, IX_DT_I64, IX_DT_U64,
    IX_DT_F32, IX_DT_F64,
} ix_dtype;

int ix_dtype_parse(const char *name, ix_dtype *out);
const char *ix_dtype_name(ix_dtype dt);
size_t ix_dtype_size(ix_dtype dt);
/* The dtype a numeric column has by itself; -1 with a message if the type
 * cannot be written raw (text, decimal, ...). */
int ix_dtype_default(const ix_value_type *t, ix_dtype *out, pq_error *err);
/* Whether values of type t may be written as dt at all (floats never as
 * integers); per-value range is checked by ix_raw_convert. */
int ix_dtype_accepts(const ix_value_type *t, ix_dtype dt, pq_error *err);

/* A number to write in raw framing: an integer or a float, from a value or
 * from the sep= option. */
typedef struct ix_number {
    int is_float;
    int is_unsigned;   /* integer: u holds the value */
    int64_t i;
    uint64_t u;
    double f;
} ix_number;

int ix_number_of(const ix_value_type *t, pq_bytes v, ix_number *out, pq_error *err);
/* Write n as dt (ix_dtype_size bytes). Fails if an integer does not fit, or
 * an integer is not exactly representable as the float dtype. */
int ix_number_write(const ix_number *n, ix_dtype dt, uint8_t *out, pq_error *err);

#endif
