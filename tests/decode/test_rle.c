#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pq_rle.h"

/* Test-side encoder: a run header (ULEB128). */
static size_t uleb(uint64_t header, uint8_t *out)
{
    size_t len = 0;
    do {
        uint8_t b = header & 0x7f;
        header >>= 7;
        out[len++] = b | (header ? 0x80 : 0);
    } while (header);
    return len;
}

/* Test-side encoder: values as one bit-packed run (padded to groups of 8). */
static size_t pack_run(const uint32_t *v, uint32_t n, int bw, uint8_t *out)
{
    uint32_t groups = (n + 7) / 8;
    size_t len = uleb((uint64_t)groups << 1 | 1, out);
    size_t bytes = (size_t)groups * (size_t)bw;
    memset(out + len, 0, bytes);
    for (uint32_t i = 0; i < n; i++)
        for (int b = 0; b < bw; b++)
            if (v[i] >> b & 1) {
                size_t bit = (size_t)i * bw + b;
                out[len + bit / 8] |= (uint8_t)(1u << (bit % 8));
            }
    return len + bytes;
}

Test(rle, spec_bit_packing_example)
{
    /* Encodings.md: 0..7 with bit width 3 packs to 10001000 11000110 11111010. */
    const uint8_t buf[] = { 0x03, 0x88, 0xc6, 0xfa };
    uint32_t out[8];
    pq_error err;
    cr_assert_eq(pq_rle_decode(buf, sizeof buf, 3, 8, out, &err), 0, "%s", err.msg);
    for (uint32_t i = 0; i < 8; i++)
        cr_assert_eq(out[i], i);
}

Test(rle, rle_runs_and_mixed)
{
    /* RLE run of 5 x 0x0102 (width 10: 2 bytes), then bit-packed 8 x width 10. */
    uint8_t buf[64] = { 5 << 1, 0x02, 0x01 };
    uint32_t vals[8] = { 0, 1, 1023, 512, 7, 100, 1000, 3 };
    size_t len = 3 + pack_run(vals, 8, 10, buf + 3);
    uint32_t out[13];
    pq_error err;
    cr_assert_eq(pq_rle_decode(buf, len, 10, 13, out, &err), 0, "%s", err.msg);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(out[i], 0x0102);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(out[5 + i], vals[i]);
    /* Fewer values than the runs hold: the rest is ignored. */
    cr_assert_eq(pq_rle_decode(buf, len, 10, 7, out, &err), 0);
    cr_assert_eq(out[6], 1);
}

Test(rle, every_width_round_trips)
{
    uint32_t vals[100], out[100];
    uint8_t buf[600];
    pq_error err;
    for (int bw = 0; bw <= 32; bw++) {
        uint64_t mask = bw == 32 ? 0xffffffffu : (1ull << bw) - 1;
        uint32_t x = 0x9e3779b9u;
        for (int i = 0; i < 100; i++) {
            x = x * 1664525u + 1013904223u;
            vals[i] = (uint32_t)(x & mask);
        }
        if (bw > 0)
            vals[7] = (uint32_t)mask; /* the widest value */
        size_t len = pack_run(vals, 100, bw, buf);
        /* Exactly-sized heap copy so ASan catches overreads of the fast path. */
        uint8_t *copy = malloc(len);
        memcpy(copy, buf, len);
        cr_assert_eq(pq_rle_decode(copy, len, bw, 100, out, &err), 0, "width %d: %s", bw,
                     err.msg);
        for (int i = 0; i < 100; i++)
            cr_assert_eq(out[i], vals[i], "width %d value %d", bw, i);
        /* RLE run of the widest value. */
        uint8_t r[6] = { 9 << 1 };
        for (int b = 0; b < (bw + 7) / 8; b++)
            r[1 + b] = (uint8_t)(mask >> (8 * b));
        cr_assert_eq(pq_rle_decode(r, 1 + (bw + 7) / 8, bw, 9, out, &err), 0, "%s", err.msg);
        cr_assert_eq(out[8], (uint32_t)mask);
        free(copy);
    }
}

Test(rle, truncated_and_invalid)
{
    uint32_t out[64];
    pq_error err;
    /* bit-packed run of 2 groups at width 6 needs 12 bytes; give 5 */
    const uint8_t short_pack[] = { 0x05, 1, 2, 3, 4, 5 };
    cr_assert_eq(pq_rle_decode(short_pack, sizeof short_pack, 6, 16, out, &err), -1);
    cr_assert(strstr(err.msg, "needs"), "%s", err.msg);
    /* RLE run whose value is missing */
    const uint8_t no_value[] = { 0x08 };
    cr_assert_eq(pq_rle_decode(no_value, 1, 8, 4, out, &err), -1);
    /* runs end before count */
    const uint8_t few[] = { 0x04, 0x01 };
    cr_assert_eq(pq_rle_decode(few, 2, 1, 3, out, &err), -1);
    cr_assert(strstr(err.msg, "2 of 3"), "%s", err.msg);
    /* value wider than the bit width */
    const uint8_t wide[] = { 0x04, 0x05 };
    cr_assert_eq(pq_rle_decode(wide, 2, 2, 2, out, &err), -1);
    /* bit width out of range */
    cr_assert_eq(pq_rle_decode(wide, 2, 33, 1, out, &err), -1);
    /* a huge bit-packed run header must not overflow or hang */
    const uint8_t huge[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
    cr_assert_eq(pq_rle_decode(huge, sizeof huge, 3, 64, out, &err), -1);
    cr_assert_eq(pq_rle_decode(huge, sizeof huge, 0, 64, out, &err), 0, "width 0 needs no bytes");
    /* zero count decodes nothing */
    cr_assert_eq(pq_rle_decode(NULL, 0, 5, 0, out, &err), 0);
}

Test(rle, bit_width)
{
    cr_assert_eq(pq_bit_width(0), 0);
    cr_assert_eq(pq_bit_width(1), 1);
    cr_assert_eq(pq_bit_width(2), 2);
    cr_assert_eq(pq_bit_width(255), 8);
    cr_assert_eq(pq_bit_width(256), 9);
    cr_assert_eq(pq_bit_width(UINT32_MAX), 32);
}

/* Test-side encoder: an RLE run of n copies of a value of one byte. */
static size_t rle_run(uint32_t n, uint8_t value, uint8_t *out)
{
    size_t len = uleb((uint64_t)n << 1, out);
    out[len++] = value;
    return len;
}

/* The RLE runs of a sequence taken at once where they stand (pq_rle_iter_run,
 * pq_rle_iter_skip_run), its bit-packed groups read: the values skipped and
 * read are the sequence's, a zero-length run is passed, a run is capped at
 * `count`, and a skip stops where a read goes on. */
Test(rle, runs_are_skipped_at_once_and_the_rest_read)
{
    uint8_t buf[64];
    size_t len = rle_run(1000, 3, buf);
    len += rle_run(0, 1, buf + len);
    uint32_t packed[8] = { 0, 3, 1, 3, 3, 2, 0, 3 };
    len += pack_run(packed, 8, 2, buf + len);
    len += rle_run(100, 1, buf + len);
    enum { COUNT = 1000 + 8 + 60 }; /* the last run capped at 60 */
    uint32_t want[COUNT];
    pq_error err;
    cr_assert_eq(pq_rle_decode(buf, len, 2, COUNT, want, &err), 0, "%s", err.msg);
    for (uint32_t skip_first = 0; skip_first <= 1000; skip_first += 250) {
        pq_rle_iter it;
        pq_rle_iter_init(&it, 2, COUNT);
        pq_cursor c = pq_cursor_make(buf, len);
        uint32_t got[COUNT], at = 0, value, left, runs = 0;
        while (it.done < COUNT) {
            int run = pq_rle_iter_run(&it, &c, &value, &left, &err);
            cr_assert_geq(run, 0, "%s", err.msg);
            if (run) {
                cr_assert_geq(left, 1);
                /* the first run partly skipped, partly read */
                uint32_t n = runs++ == 0 && skip_first < left ? skip_first : left;
                pq_rle_iter_skip_run(&it, n);
                for (uint32_t i = 0; i < n; i++)
                    got[at++] = value;
                if (n < left) {
                    int64_t r = pq_rle_iter_read(&it, &c, got + at, left - n, &err);
                    cr_assert_eq(r, (int64_t)(left - n), "%s", err.msg);
                    at += (uint32_t)r;
                }
                continue;
            }
            int64_t r = pq_rle_iter_read(&it, &c, got + at, COUNT - at, &err);
            cr_assert_gt(r, 0, "%s", err.msg);
            at += (uint32_t)r;
        }
        cr_assert_eq(at, COUNT);
        cr_assert_eq(want[999], 3);
        cr_assert_eq(want[1001], 3); /* the packed group's second */
        cr_assert_eq(want[COUNT - 1], 1);
        cr_assert_eq(memcmp(got, want, sizeof want), 0, "skipping %u of the first run",
                     skip_first);
        cr_assert_eq(pq_rle_iter_run(&it, &c, &value, &left, &err), 0, "done: no run");
    }
}
