#include "pq_rle.h"

#include "pq_bitpack.h"
#include "pq_cursor.h"

int pq_bit_width(uint32_t max_value)
{
    int w = 0;
    while (max_value) {
        w++;
        max_value >>= 1;
    }
    return w;
}

/* A run header is a ULEB128 varint: low bit 1 = bit-packed run of
 * (header >> 1) groups of 8 values, low bit 0 = RLE run of (header >> 1)
 * copies of one value stored in ceil(bit_width / 8) little-endian bytes. */
int pq_rle_decode(const uint8_t *buf, size_t len, int bit_width, uint32_t count, uint32_t *out,
                  pq_error *err)
{
    if (bit_width < 0 || bit_width > 32)
        return pq_error_set(err, "RLE: bit width %d is outside 0..32", bit_width);
    pq_cursor c = pq_cursor_make(buf, len);
    uint32_t done = 0;
    while (done < count) {
        size_t at = len - c.left;
        uint64_t header;
        if (!pq_cursor_uleb(&c, &header))
            return pq_error_set(err, "RLE: run header at byte %zu is truncated (%u of %u "
                                     "values decoded)",
                                at, done, count);
        uint32_t want = count - done;
        if (header & 1) {
            uint64_t groups = header >> 1;
            /* Compare in values first so the byte count cannot overflow. */
            uint64_t values = groups > (UINT32_MAX / 8) ? UINT32_MAX : groups * 8;
            uint32_t take = values < want ? (uint32_t)values : want;
            size_t need = pq_packed_bytes(take, bit_width);
            if (need > c.left)
                return pq_error_set(err, "RLE: bit-packed run at byte %zu needs %zu more "
                                         "bytes, %zu left",
                                    at, need, c.left);
            pq_unpack32(c.p, c.left, bit_width, take, out + done);
            done += take;
            /* Skip the whole run, or what is left of it when the writer
             * dropped the padding of the final group. */
            uint64_t run_bytes = groups * (uint64_t)bit_width;
            pq_cursor_skip(&c, run_bytes < c.left ? (size_t)run_bytes : c.left);
        } else {
            uint64_t run = header >> 1;
            size_t vbytes = ((size_t)bit_width + 7) / 8;
            if (vbytes > c.left)
                return pq_error_set(err, "RLE: run at byte %zu needs %zu value bytes, %zu left",
                                    at, vbytes, c.left);
            uint32_t v = 0;
            for (size_t i = 0; i < vbytes; i++)
                v |= (uint32_t)c.p[i] << (8 * i);
            pq_cursor_skip(&c, vbytes);
            if (bit_width < 32 && v >> bit_width)
                return pq_error_set(err, "RLE: run at byte %zu repeats %u, which does not fit "
                                         "in %d bits",
                                    at, v, bit_width);
            uint32_t take = run < want ? (uint32_t)run : want;
            for (uint32_t i = 0; i < take; i++)
                out[done + i] = v;
            done += take;
        }
    }
    return 0;
}
