/* pq_cursor.h — the single reader of untrusted bytes.
 *
 * A cursor is a pointer plus the number of bytes left. Every read checks the
 * bytes left first and fails (returns false, cursor unchanged) instead of
 * reading past the end, so decoders never do raw pointer arithmetic on data
 * that came from a file. Header-only; no allocation; thread-compatible.
 */
#ifndef PQ_CURSOR_H
#define PQ_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct pq_cursor {
    const uint8_t *p;
    size_t left;
} pq_cursor;

static inline pq_cursor pq_cursor_make(const void *p, size_t n)
{
    pq_cursor c = { (const uint8_t *)p, n };
    return c;
}

static inline bool pq_cursor_u8(pq_cursor *c, uint8_t *out)
{
    if (c->left < 1)
        return false;
    *out = c->p[0];
    c->p++;
    c->left--;
    return true;
}

/* Little-endian fixed-width integers (Parquet's PLAIN encoding, length prefixes). */
static inline bool pq_cursor_le32(pq_cursor *c, uint32_t *out)
{
    if (c->left < 4)
        return false;
    *out = (uint32_t)c->p[0] | (uint32_t)c->p[1] << 8 | (uint32_t)c->p[2] << 16 |
           (uint32_t)c->p[3] << 24;
    c->p += 4;
    c->left -= 4;
    return true;
}

static inline bool pq_cursor_le64(pq_cursor *c, uint64_t *out)
{
    uint32_t lo, hi;
    pq_cursor save = *c;
    if (!pq_cursor_le32(c, &lo) || !pq_cursor_le32(c, &hi)) {
        *c = save;
        return false;
    }
    *out = (uint64_t)hi << 32 | lo;
    return true;
}

/* ULEB128 varint as used by thrift compact and the Parquet RLE/delta encodings.
 * At most 10 bytes; a longer or truncated varint fails. */
static inline bool pq_cursor_uleb(pq_cursor *c, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < 10; i++) {
        if (i >= c->left)
            return false;
        uint8_t b = c->p[i];
        if (i == 9 && b > 1)
            return false; /* would overflow 64 bits */
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            c->p += i + 1;
            c->left -= i + 1;
            *out = v;
            return true;
        }
    }
    return false;
}

static inline bool pq_cursor_zigzag(pq_cursor *c, int64_t *out)
{
    uint64_t u;
    if (!pq_cursor_uleb(c, &u))
        return false;
    *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return true;
}

/* A slice of n bytes: *out points into the underlying buffer. */
static inline bool pq_cursor_slice(pq_cursor *c, size_t n, const uint8_t **out)
{
    if (c->left < n)
        return false;
    *out = c->p;
    c->p += n;
    c->left -= n;
    return true;
}

static inline bool pq_cursor_skip(pq_cursor *c, size_t n)
{
    const uint8_t *ignored;
    return pq_cursor_slice(c, n, &ignored);
}

#endif
