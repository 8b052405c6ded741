#include "pq_delta.h"

#include "pq_bitpack.h"

/* Layout (Encodings.md, DELTA_BINARY_PACKED):
 *   header: <block size> <miniblocks per block> <total count> <first value (zigzag)>
 *   block:  <min delta (zigzag)> <one bit-width byte per miniblock> <miniblocks>
 * Each miniblock holds block_size / miniblocks deltas minus min delta, packed
 * LSB-first. The last miniblock holding values is padded to full size; the
 * miniblocks after it in the final block have a width byte but no data. */

#define PQ_DELTA_MAX_BLOCK ((uint64_t)1 << 31)

int pq_delta_decode(pq_cursor *c, const uint8_t *base, uint32_t n, int64_t *out, pq_error *err)
{
    size_t at = (size_t)(c->p - base);
    uint64_t block_size, mb_count, total;
    int64_t first;
    if (!pq_cursor_uleb(c, &block_size) || !pq_cursor_uleb(c, &mb_count) ||
        !pq_cursor_uleb(c, &total) || !pq_cursor_zigzag(c, &first))
        return pq_error_set(err, "DELTA_BINARY_PACKED: header at byte %zu is truncated", at);
    if (block_size == 0 || block_size % 128 || block_size > PQ_DELTA_MAX_BLOCK ||
        mb_count == 0 || block_size % mb_count || (block_size / mb_count) % 32)
        return pq_error_set(err,
                            "DELTA_BINARY_PACKED: header at byte %zu has block size %llu with "
                            "%llu miniblocks; expected a multiple of 128 split into miniblocks "
                            "of a multiple of 32 values",
                            at, (unsigned long long)block_size, (unsigned long long)mb_count);
    if (total != n)
        return pq_error_set(err,
                            "DELTA_BINARY_PACKED: header at byte %zu declares %llu values, "
                            "expected %u",
                            at, (unsigned long long)total, n);
    if (n == 0)
        return 0;

    uint64_t mb_values = block_size / mb_count;
    uint64_t value = (uint64_t)first;
    uint64_t *u = (uint64_t *)out; /* same object, unsigned view for wrapping sums */
    u[0] = value;
    uint32_t done = 1;
    while (done < n) {
        at = (size_t)(c->p - base);
        int64_t min_delta;
        const uint8_t *widths;
        if (!pq_cursor_zigzag(c, &min_delta) || !pq_cursor_slice(c, (size_t)mb_count, &widths))
            return pq_error_set(err,
                                "DELTA_BINARY_PACKED: block header at byte %zu is truncated "
                                "(%u of %u values decoded)",
                                at, done, n);
        for (uint64_t m = 0; m < mb_count && done < n; m++) {
            int bw = widths[m];
            if (bw > 64)
                return pq_error_set(err,
                                    "DELTA_BINARY_PACKED: miniblock %llu of the block at byte "
                                    "%zu has bit width %d (more than 64)",
                                    (unsigned long long)m, at, bw);
            uint32_t take = n - done < mb_values ? n - done : (uint32_t)mb_values;
            size_t need = pq_packed_bytes(take, bw);
            if (need > c->left)
                return pq_error_set(err,
                                    "DELTA_BINARY_PACKED: miniblock at byte %zu needs %zu "
                                    "bytes, %zu left",
                                    (size_t)(c->p - base), need, c->left);
            pq_unpack64(c->p, c->left, bw, take, u + done);
            for (uint32_t i = 0; i < take; i++) {
                value += (uint64_t)min_delta + u[done + i];
                u[done + i] = value;
            }
            done += take;
            /* A full miniblock is mb_values * bw / 8 bytes (mb_values is a
             * multiple of 32); tolerate a writer that cut the padding. */
            size_t full = (size_t)(mb_values * (uint64_t)bw / 8);
            pq_cursor_skip(c, full < c->left ? full : c->left);
        }
    }
    return 0;
}
