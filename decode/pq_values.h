/* pq_values.h — internal to decode/: decoders for the values section of a
 * page. Each decodes exactly n values from buf[0..len) into out[0..n) as
 * slices (see pq_column.h for the byte layout of each physical type).
 *
 * Slices point into buf, into the dictionary, or into *extra: a buffer the
 * decoder allocates when values must be materialised (booleans, delta
 * integers, DELTA_BYTE_ARRAY strings, BYTE_STREAM_SPLIT). The caller owns
 * *extra and must keep buf alive as long as the slices. Offsets in messages
 * are relative to buf. Thread-safe.
 */
#ifndef PQ_VALUES_H
#define PQ_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "pq_column.h"

/* Bytes per value of a fixed-width type (BOOLEAN: 1 once materialised),
 * 0 for BYTE_ARRAY, -1 for an unknown type. */
int64_t pq_value_width(const pq_column_desc *col);

/* PLAIN. For BOOLEAN the caller passes bools = n bytes to hold the 0/1
 * values (unused for other types). */
int pq_values_plain(const pq_column_desc *col, const uint8_t *buf, size_t len, uint32_t n,
                    pq_bytes *out, uint8_t *bools, pq_error *err);

/* PLAIN_DICTIONARY / RLE_DICTIONARY indices into dict. out[0..n) also serves
 * as the scratch the indices are decoded into (nothing else is allocated). */
int pq_values_dict(const uint8_t *buf, size_t len, uint32_t n, const pq_dictionary *dict,
                   pq_bytes *out, pq_error *err);

/* The same indices, their values packed back to back into out: width
 * bytes each (pq_packed_width; the dictionary's values are that wide), out
 * being n * max(width, 4) bytes, as it also serves as the indices' scratch. */
int pq_values_dict_packed(const uint8_t *buf, size_t len, uint32_t n, const pq_dictionary *dict,
                          uint32_t width, uint8_t *out, pq_error *err);
/* RLE-encoded BOOLEAN (4-byte length, then the hybrid with bit width 1). */
int pq_values_rle_bool(const uint8_t *buf, size_t len, uint32_t n, pq_bytes *out,
                       uint8_t **extra, size_t *extra_len, pq_error *err);

/* BYTE_STREAM_SPLIT for fixed-width types. */
int pq_values_byte_stream_split(const pq_column_desc *col, const uint8_t *buf, size_t len,
                                uint32_t n, pq_bytes *out, uint8_t **extra, size_t *extra_len,
                                pq_error *err);

/* DELTA_BINARY_PACKED for INT32 / INT64. */
int pq_values_delta_int(const pq_column_desc *col, const uint8_t *buf, size_t len, uint32_t n,
                        pq_bytes *out, uint8_t **extra, size_t *extra_len, pq_error *err);

/* DELTA_LENGTH_BYTE_ARRAY (BYTE_ARRAY). */
int pq_values_delta_length(const uint8_t *buf, size_t len, uint32_t n, pq_bytes *out,
                           pq_error *err);

/* DELTA_BYTE_ARRAY (BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY). */
int pq_values_delta_bytes(const pq_column_desc *col, const uint8_t *buf, size_t len, uint32_t n,
                          pq_bytes *out, uint8_t **extra, size_t *extra_len, pq_error *err);

#endif
