/* pq_rle.h — the RLE / bit-packing hybrid encoding, used for definition and
 * repetition levels, dictionary indices and RLE booleans.
 *
 * Runs are either RLE (a repeated value) or bit-packed groups of 8 values;
 * the decoder checks every run header against the bytes left and never
 * writes more than `count` outputs. Thread-safe.
 */
#ifndef PQ_RLE_H
#define PQ_RLE_H

#include <stddef.h>
#include <stdint.h>

#include "pq_error.h"

/* Decode exactly `count` values of `bit_width` bits (0..32) from buf[0..len)
 * into out. Fails if the data ends before `count` values. Bit-packed groups
 * may pad past `count`; the padding is ignored. */
int pq_rle_decode(const uint8_t *buf, size_t len, int bit_width, uint32_t count, uint32_t *out,
                  pq_error *err);

/* Bits needed to represent max_value (0 for 0). */
int pq_bit_width(uint32_t max_value);

#endif
