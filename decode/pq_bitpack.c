#include "pq_bitpack.h"

#include <string.h>

static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Value at bit offset `bit`, one byte at a time (used near the end of src). */
static uint64_t gather(const uint8_t *src, size_t bit, int bw)
{
    uint64_t v = 0;
    int got = 0;
    while (got < bw) {
        int shift = (int)(bit & 7);
        int take = 8 - shift < bw - got ? 8 - shift : bw - got;
        uint64_t bits = (uint64_t)(src[bit >> 3] >> shift) & ((1u << take) - 1);
        v |= bits << got;
        got += take;
        bit += (size_t)take;
    }
    return v;
}

void pq_unpack32(const uint8_t *src, size_t src_len, int bw, size_t n, uint32_t *out)
{
    if (bw == 0) {
        memset(out, 0, n * sizeof *out);
        return;
    }
    const uint64_t mask = bw == 32 ? 0xffffffffu : (1ull << bw) - 1;
    size_t i = 0, bit = 0;
    /* A value starts at most 7 bits into a byte and spans at most 39 bits:
     * one unaligned 8-byte load covers it while 8 bytes remain. */
    for (; i < n && (bit >> 3) + 8 <= src_len; i++, bit += (size_t)bw)
        out[i] = (uint32_t)((load_le64(src + (bit >> 3)) >> (bit & 7)) & mask);
    for (; i < n; i++, bit += (size_t)bw)
        out[i] = (uint32_t)gather(src, bit, bw);
}

void pq_unpack64(const uint8_t *src, size_t src_len, int bw, size_t n, uint64_t *out)
{
    if (bw == 0) {
        memset(out, 0, n * sizeof *out);
        return;
    }
    const uint64_t mask = bw == 64 ? ~0ull : (1ull << bw) - 1;
    size_t i = 0, bit = 0;
    /* Up to 7 + 64 bits: a ninth byte completes the widest values. */
    for (; i < n && (bit >> 3) + 9 <= src_len; i++, bit += (size_t)bw) {
        const uint8_t *p = src + (bit >> 3);
        int shift = (int)(bit & 7);
        uint64_t v = load_le64(p) >> shift;
        if (shift + bw > 64)
            v |= (uint64_t)p[8] << (64 - shift);
        out[i] = v & mask;
    }
    for (; i < n; i++, bit += (size_t)bw)
        out[i] = gather(src, bit, bw);
}
