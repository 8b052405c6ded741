/* pq_codec.h — page decompression for every Parquet codec.
 *
 * UNCOMPRESSED, SNAPPY, GZIP (zlib; gzip or zlib headers, concatenated
 * members), BROTLI, ZSTD, LZ4_RAW (one LZ4 block), LZ4 (the deprecated
 * Hadoop framing: big-endian 4-byte uncompressed and compressed lengths
 * before each block; files written by older writers that labelled a raw LZ4
 * block or an LZ4 frame as LZ4 are accepted by falling back to those). LZO is
 * refused with a clear message.
 *
 * The output size is known from the page header and must be matched exactly:
 * producing fewer or more bytes is an error, never silent truncation, so a
 * corrupt or hostile body cannot write past dst or leave it half-filled.
 * Thread-safe (no shared state).
 */
#ifndef PQ_CODEC_H
#define PQ_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "pq_error.h"

/* Decompress src[0..src_len) into exactly dst_len bytes at dst. */
int pq_decompress(int codec, const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                  pq_error *err);

/* Human-readable codec name ("ZSTD"), or "codec <n>" for unknown values
 * (returned string is static or in a thread-local buffer). */
const char *pq_codec_name(int codec);

#endif
