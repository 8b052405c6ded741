/* pq_page.h — Parquet page headers (PageHeader with its data page v1,
 * dictionary page and data page v2 sub-headers).
 *
 * Pure parsing of bytes handed in; thread-safe. Sizes are validated to be
 * non-negative and, for v2, the level lengths to fit inside the page; whether
 * the page body fits in the column chunk is the caller's check.
 */
#ifndef PQ_PAGE_H
#define PQ_PAGE_H

#include <stddef.h>
#include <stdint.h>

#include "pq_error.h"

enum { PQ_PAGE_DATA = 0, PQ_PAGE_INDEX = 1, PQ_PAGE_DICTIONARY = 2, PQ_PAGE_DATA_V2 = 3 };

/* Encodings (parquet.thrift Encoding). */
enum {
    PQ_ENC_PLAIN = 0,
    PQ_ENC_PLAIN_DICTIONARY = 2,
    PQ_ENC_RLE = 3,
    PQ_ENC_BIT_PACKED = 4,
    PQ_ENC_DELTA_BINARY_PACKED = 5,
    PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
    PQ_ENC_DELTA_BYTE_ARRAY = 7,
    PQ_ENC_RLE_DICTIONARY = 8,
    PQ_ENC_BYTE_STREAM_SPLIT = 9,
};

typedef struct pq_page_header {
    int type;                 /* PQ_PAGE_* */
    int32_t uncompressed_size;/* body size after decompression */
    int32_t compressed_size;  /* body size on disk (after the header) */
    int has_crc;
    uint32_t crc;
    size_t header_len;        /* bytes the header itself took */

    /* Data pages (v1 and v2) and dictionary pages. */
    int32_t num_values;       /* level entries (data) or dictionary entries */
    int encoding;             /* value encoding */

    /* v1 only */
    int def_encoding;
    int rep_encoding;

    /* v2 only */
    int32_t num_nulls;
    int32_t num_rows;
    int32_t def_levels_len;   /* bytes of uncompressed definition levels */
    int32_t rep_levels_len;   /* bytes of uncompressed repetition levels */
    int is_compressed;        /* v2: whether the values section is compressed (default 1) */
} pq_page_header;

/* Parse one page header from buf[0..len). Fails if the header is truncated
 * (the caller may retry with more bytes when it knows more exist), has a
 * negative size, or lacks the sub-header its type requires. */
int pq_page_header_parse(const uint8_t *buf, size_t len, pq_page_header *out, pq_error *err);

/* Verify the page's checksum (PageHeader field 4, `crc`), when it has one.
 *
 * Per parquet.thrift, the checksum is the standard CRC-32 (zlib's crc32(),
 * polynomial 0x04C11DB7 as in gzip) of the page exactly as stored after its
 * header: the h->compressed_size bytes of the body, i.e. after compression
 * (and encryption). Every page type may carry one: dictionary pages, data
 * pages v1 and v2 (for v2 the uncompressed level bytes are covered too).
 *
 * body points at the first byte after the header; body_len is how many bytes
 * are available there and must be at least h->compressed_size (only those
 * are checksummed, extra bytes are ignored).
 *
 * Returns 0 when h has no CRC or the CRC matches. Returns -1 when it does not
 * match (message: "data page: CRC mismatch: header says 0x1234abcd, the
 * 20480-byte body has 0x9f00e1c2") or when body_len is shorter than
 * h->compressed_size. Whether a mismatch is fatal, and which file and offset
 * to name, is the caller's decision (prepend them with pq_error_prefix).
 * Pure and thread-safe; one pass over the body (zlib's crc32, GB/s). */
int pq_page_check_crc(const pq_page_header *h, const uint8_t *body, size_t body_len,
                      pq_error *err);

#endif
