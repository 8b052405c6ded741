/* pq_delta.h — internal to decode/: the DELTA_BINARY_PACKED decoder, used
 * for INT32/INT64 values and as the length streams of DELTA_LENGTH_BYTE_ARRAY
 * and DELTA_BYTE_ARRAY. Thread-safe.
 */
#ifndef PQ_DELTA_H
#define PQ_DELTA_H

#include <stdint.h>

#include "pq_cursor.h"
#include "pq_error.h"

/* Decode one DELTA_BINARY_PACKED stream from *c into out[0..n). The stream's
 * header must declare exactly n values. On success *c is advanced past the
 * stream (through the last miniblock holding a value), so data that follows
 * the stream can be read next. `base` is the start of the section, for byte
 * offsets in messages. Arithmetic wraps in two's complement as the spec
 * requires; 32-bit callers truncate the results. */
int pq_delta_decode(pq_cursor *c, const uint8_t *base, uint32_t n, int64_t *out, pq_error *err);

#endif
