#include "pq_rle.h"

#include <assert.h>
#include <string.h>

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
 * copies of one value stored in ceil(bit_width / 8) little-endian bytes.
 * A run is capped at the values still wanted, so a writer that dropped the
 * padding of the final group is accepted and nothing after `count` is read. */
void pq_rle_iter_init(pq_rle_iter *it, int bit_width, uint32_t count)
{
    memset(it, 0, sizeof *it);
    it->bit_width = bit_width;
    it->count = count;
}

static int read_header(pq_rle_iter *it, pq_cursor *c, pq_error *err)
{
    size_t at = it->at, before = c->left;
    uint64_t header;
    if (!pq_cursor_uleb(c, &header))
        return pq_error_set(err, "RLE: run header at byte %zu is truncated (%u of %u values "
                                 "decoded)",
                            at, it->done, it->count);
    it->at += before - c->left;
    uint32_t want = it->count - it->done;
    it->packed = header & 1;
    if (it->packed) {
        uint64_t groups = header >> 1;
        /* Compare in values so the count cannot overflow. */
        uint64_t values = groups > (UINT32_MAX / 8) ? UINT32_MAX : groups * 8;
        it->run_left = values < want ? (uint32_t)values : want;
        return 0;
    }
    uint64_t run = header >> 1;
    size_t vbytes = ((size_t)it->bit_width + 7) / 8;
    if (vbytes > c->left)
        return pq_error_set(err, "RLE: run at byte %zu needs %zu value bytes, %zu left", at,
                            vbytes, c->left);
    uint32_t v = 0;
    for (size_t i = 0; i < vbytes; i++)
        v |= (uint32_t)c->p[i] << (8 * i);
    pq_cursor_skip(c, vbytes);
    it->at += vbytes;
    if (it->bit_width < 32 && v >> it->bit_width)
        return pq_error_set(err, "RLE: run at byte %zu repeats %u, which does not fit in %d "
                                 "bits",
                            at, v, it->bit_width);
    it->value = v;
    it->run_left = run < want ? (uint32_t)run : want;
    return 0;
}

int64_t pq_rle_iter_read(pq_rle_iter *it, pq_cursor *c, uint32_t *out, uint32_t max,
                         pq_error *err)
{
    const int bw = it->bit_width;
    if (bw < 0 || bw > 32)
        return pq_error_set(err, "RLE: bit width %d is outside 0..32", bw);
    uint32_t got = 0;
    int header_read = 0;
    while (got < max && it->done < it->count) {
        if (it->ibuf < it->nbuf) {
            uint32_t n = (uint32_t)(it->nbuf - it->ibuf);
            n = n < max - got ? n : max - got;
            memcpy(out + got, it->buf + it->ibuf, n * sizeof *out);
            it->ibuf = (uint8_t)(it->ibuf + n);
            got += n;
            it->done += n;
            continue;
        }
        if (it->run_left == 0) {
            if (got > 0 || header_read)
                break;
            header_read = 1;
            if (read_header(it, c, err) < 0)
                return -1;
            continue;
        }
        uint32_t n = it->run_left < max - got ? it->run_left : max - got;
        if (!it->packed) {
            for (uint32_t i = 0; i < n; i++)
                out[got + i] = it->value;
            it->run_left -= n;
            got += n;
            it->done += n;
            continue;
        }
        /* Whole groups straight into out, as many as the cursor holds. */
        size_t groups = n / 8;
        if (bw > 0 && groups > c->left / (size_t)bw)
            groups = c->left / (size_t)bw;
        if (groups > 0) {
            pq_unpack32(c->p, c->left, bw, groups * 8, out + got);
            pq_cursor_skip(c, groups * (size_t)bw);
            it->at += groups * (size_t)bw;
            it->run_left -= (uint32_t)groups * 8;
            got += (uint32_t)groups * 8;
            it->done += (uint32_t)groups * 8;
            continue;
        }
        /* One group (or the final, shorter one) through buf. */
        uint32_t k = it->run_left < 8 ? it->run_left : 8;
        size_t need = pq_packed_bytes(k, bw);
        if (need > c->left) {
            if (got > 0)
                break;
            return pq_error_set(err, "RLE: bit-packed run at byte %zu needs %zu more bytes, "
                                     "%zu left",
                                it->at, need, c->left);
        }
        pq_unpack32(c->p, c->left, bw, k, it->buf);
        pq_cursor_skip(c, need);
        it->at += need;
        it->run_left -= k;
        it->nbuf = (uint8_t)k;
        it->ibuf = 0;
    }
    return got;
}

int pq_rle_iter_run(pq_rle_iter *it, pq_cursor *c, uint32_t *value, uint32_t *left,
                    pq_error *err)
{
    if (it->bit_width < 0 || it->bit_width > 32)
        return pq_error_set(err, "RLE: bit width %d is outside 0..32", it->bit_width);
    if (it->ibuf < it->nbuf)
        return 0; /* a bit-packed group's values are being handed out */
    while (it->run_left == 0 && it->done < it->count)
        if (read_header(it, c, err) < 0)
            return -1;
    if (it->run_left == 0 || it->packed)
        return 0;
    *value = it->value;
    *left = it->run_left;
    return 1;
}

void pq_rle_iter_skip_run(pq_rle_iter *it, uint32_t n)
{
    assert(!it->packed && it->ibuf == it->nbuf && n <= it->run_left);
    it->run_left -= n;
    it->done += n;
}

int pq_rle_decode(const uint8_t *buf, size_t len, int bit_width, uint32_t count, uint32_t *out,
                  pq_error *err)
{
    if (bit_width < 0 || bit_width > 32)
        return pq_error_set(err, "RLE: bit width %d is outside 0..32", bit_width);
    pq_rle_iter it;
    pq_rle_iter_init(&it, bit_width, count);
    pq_cursor c = pq_cursor_make(buf, len);
    /* Every call consumes a byte or yields a value, so this ends. */
    while (it.done < count)
        if (pq_rle_iter_read(&it, &c, out + it.done, count - it.done, err) < 0)
            return -1;
    return 0;
}
