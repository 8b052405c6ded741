/* pq_bitpack.h — internal to decode/: unpacking of little-endian bit-packed
 * integers (the packing of the RLE hybrid, PLAIN booleans and the delta
 * miniblocks): value i occupies bits [i*bw, (i+1)*bw) counted from the least
 * significant bit of byte 0.
 *
 * The caller checks that src holds at least pq_packed_bytes(n, bw) bytes;
 * these functions never read beyond src_len. Thread-safe.
 */
#ifndef PQ_BITPACK_H
#define PQ_BITPACK_H

#include <stddef.h>
#include <stdint.h>

/* Bytes holding n values of bw bits. n * bw must not overflow (n < 2^32). */
static inline size_t pq_packed_bytes(size_t n, int bw)
{
    return (n * (size_t)bw + 7) / 8;
}

/* Unpack n values of bw bits (0..32). */
void pq_unpack32(const uint8_t *src, size_t src_len, int bw, size_t n, uint32_t *out);

/* Unpack n values of bw bits (0..64). */
void pq_unpack64(const uint8_t *src, size_t src_len, int bw, size_t n, uint64_t *out);

#endif
