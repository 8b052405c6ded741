/* Value decoders and page decoding on hand-made buffers, including the
 * examples of Encodings.md (with block size 128: the spec's 8 is
 * illustrative and invalid in real files). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pq_column.h"
#include "pq_meta.h"
#include "pq_values.h"

static const pq_column_desc BA = { PQ_BYTE_ARRAY, 0, 0, 0, PQ_UNCOMPRESSED };

static void assert_str(pq_bytes v, const char *s)
{
    cr_assert_eq(v.len, strlen(s), "length %u, expected %zu (%s)", v.len, strlen(s), s);
    cr_assert_eq(memcmp(v.ptr, s, v.len), 0, "expected %s", s);
}

/* Heap copy of exactly n bytes so ASan sees overreads. */
static uint8_t *dup(const void *p, size_t n)
{
    uint8_t *q = malloc(n ? n : 1);
    memcpy(q, p, n);
    return q;
}

Test(values, plain_byte_array)
{
    const uint8_t raw[] = { 2, 0, 0, 0, 'h', 'i', 0, 0, 0, 0, 3, 0, 0, 0, 'a', 'b', 'c' };
    uint8_t *buf = dup(raw, sizeof raw);
    pq_bytes out[3];
    pq_error err;
    cr_assert_eq(pq_values_plain(&BA, buf, sizeof raw, 3, out, NULL, &err), 0, "%s", err.msg);
    assert_str(out[0], "hi");
    assert_str(out[1], "");
    assert_str(out[2], "abc");
    for (size_t n = 0; n < sizeof raw; n++) {
        cr_assert_eq(pq_values_plain(&BA, buf, n, 3, out, NULL, &err), -1);
        cr_assert(strstr(err.msg, "PLAIN BYTE_ARRAY"), "%s", err.msg);
    }
    buf[10] = 0xff; /* length 255 with 3 bytes left */
    cr_assert_eq(pq_values_plain(&BA, buf, sizeof raw, 3, out, NULL, &err), -1);
    cr_assert(strstr(err.msg, "value 2 of 3 at byte 10 declares 255 bytes, 3 left"), "%s",
              err.msg);
    free(buf);
}

Test(values, plain_fixed_and_boolean)
{
    const uint8_t raw[] = { 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff };
    pq_column_desc i32 = { PQ_INT32, 0, 0, 0, 0 };
    pq_bytes out[10];
    pq_error err;
    cr_assert_eq(pq_values_plain(&i32, raw, 8, 2, out, NULL, &err), 0);
    cr_assert(out[1].len == 4 && out[1].ptr == raw + 4);
    cr_assert_eq(pq_values_plain(&i32, raw, 8, 3, out, NULL, &err), -1);
    pq_column_desc flba = { PQ_FIXED_LEN_BYTE_ARRAY, 3, 0, 0, 0 };
    cr_assert_eq(pq_values_plain(&flba, raw, 8, 2, out, NULL, &err), 0);
    cr_assert(out[1].len == 3 && out[1].ptr == raw + 3);
    pq_column_desc b = { PQ_BOOLEAN, 0, 0, 0, 0 };
    const uint8_t bits[] = { 0x2d, 0x01 }; /* 1,0,1,1,0,1,0,0, 1 */
    uint8_t bools[9];
    cr_assert_eq(pq_values_plain(&b, bits, 2, 9, out, bools, &err), 0);
    const int want[] = { 1, 0, 1, 1, 0, 1, 0, 0, 1 };
    for (int i = 0; i < 9; i++)
        cr_assert(out[i].len == 1 && out[i].ptr[0] == want[i]);
    cr_assert_eq(pq_values_plain(&b, bits, 1, 9, out, bools, &err), -1);
}

/* Encodings.md DELTA_BINARY_PACKED example 2: 7 5 3 1 2 3 4 5. */
static const uint8_t DELTA_EX2[] = {
    0x80, 0x01, 4, 8, 14,        /* block 128, 4 miniblocks, 8 values, first 7 */
    3,                           /* min delta -2 */
    2, 0, 0, 0,                  /* widths: only miniblock 0 is used */
    0xc0, 0x3f, 0, 0, 0, 0, 0, 0 /* 0,0,0,3,3,3,3 on 2 bits, padded to 32 values */
};

Test(values, delta_binary_packed_spec_examples)
{
    /* example 1: 1 2 3 4 5 -> min delta 1, width 0, no miniblock data */
    const uint8_t ex1[] = { 0x80, 0x01, 4, 5, 2, 2, 0, 0, 0, 0 };
    pq_column_desc i32 = { PQ_INT32, 0, 0, 0, 0 };
    pq_bytes out[8];
    uint8_t *extra = NULL;
    size_t extra_len;
    pq_error err;
    cr_assert_eq(pq_values_delta_int(&i32, ex1, sizeof ex1, 5, out, &extra, &extra_len, &err),
                 0, "%s", err.msg);
    for (int i = 0; i < 5; i++) {
        int32_t v;
        memcpy(&v, out[i].ptr, 4);
        cr_assert_eq(v, i + 1);
    }
    free(extra);
    uint8_t *buf = dup(DELTA_EX2, sizeof DELTA_EX2);
    cr_assert_eq(pq_values_delta_int(&i32, buf, sizeof DELTA_EX2, 8, out, &extra, &extra_len,
                                     &err),
                 0, "%s", err.msg);
    const int32_t want[] = { 7, 5, 3, 1, 2, 3, 4, 5 };
    for (int i = 0; i < 8; i++) {
        int32_t v;
        memcpy(&v, out[i].ptr, 4);
        cr_assert_eq(v, want[i]);
    }
    free(extra);
    /* wrong value count, truncation */
    cr_assert_eq(pq_values_delta_int(&i32, buf, sizeof DELTA_EX2, 7, out, &extra, &extra_len,
                                     &err),
                 -1);
    cr_assert(strstr(err.msg, "declares 8 values, expected 7"), "%s", err.msg);
    /* Truncation fails until the bytes holding the 7 deltas are present;
     * a cut in the miniblock's zero padding is tolerated. */
    for (size_t n = 0; n < 12; n++)
        cr_assert_eq(pq_values_delta_int(&i32, buf, n, 8, out, &extra, &extra_len, &err), -1,
                     "length %zu", n);
    cr_assert_eq(pq_values_delta_int(&i32, buf, 12, 8, out, &extra, &extra_len, &err), 0);
    free(extra);
    free(buf);
}

Test(values, delta_binary_packed_wraps_int64)
{
    /* INT64_MAX then INT64_MIN: the delta wraps to +1. */
    const uint8_t raw[] = { 0x80, 0x01, 4, 2, 0xfe, 0xff, 0xff, 0xff, 0xff,
                            0xff, 0xff, 0xff, 0xff, 0x01, 2, 0, 0, 0, 0 };
    pq_column_desc i64 = { PQ_INT64, 0, 0, 0, 0 };
    pq_bytes out[2];
    uint8_t *extra;
    size_t extra_len;
    pq_error err;
    cr_assert_eq(pq_values_delta_int(&i64, raw, sizeof raw, 2, out, &extra, &extra_len, &err), 0,
                 "%s", err.msg);
    int64_t a, b;
    memcpy(&a, out[0].ptr, 8);
    memcpy(&b, out[1].ptr, 8);
    cr_assert(a == INT64_MAX && b == INT64_MIN);
    free(extra);
    /* a bad block size is refused */
    const uint8_t bad[] = { 100, 4, 2, 0 };
    cr_assert_eq(pq_values_delta_int(&i64, bad, sizeof bad, 2, out, &extra, &extra_len, &err),
                 -1);
    cr_assert(strstr(err.msg, "block size 100"), "%s", err.msg);
}

Test(values, delta_length_byte_array_spec_example)
{
    /* lengths 5 5 6 6: first 5, deltas 0 1 0 (min 0, width 1: bits 0,1,0) */
    uint8_t raw[64] = { 0x80, 0x01, 4, 4, 10, 0, 1, 0, 0, 0, 0x02, 0, 0, 0 };
    memcpy(raw + 14, "HelloWorldFoobarABCDEF", 22);
    pq_bytes out[4];
    pq_error err;
    cr_assert_eq(pq_values_delta_length(raw, 36, 4, out, &err), 0, "%s", err.msg);
    assert_str(out[0], "Hello");
    assert_str(out[1], "World");
    assert_str(out[2], "Foobar");
    assert_str(out[3], "ABCDEF");
    cr_assert_eq(pq_values_delta_length(raw, 35, 4, out, &err), -1);
    cr_assert(strstr(err.msg, "value 3"), "%s", err.msg);
}

Test(values, delta_byte_array_spec_example)
{
    /* axis axle babble babyhood: prefixes 0 2 0 3, suffix lengths 4 2 6 5 */
    uint8_t raw[128] = {
        0x80, 0x01, 4, 4, 0, /* prefixes: first 0 */
        3, 3, 0, 0, 0,       /* min delta -2, width 3 */
        0x44, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 4,0,5 on 3 bits */
        0x80, 0x01, 4, 4, 8, /* suffix lengths: first 4 */
        3, 3, 0, 0, 0,       /* min delta -2, width 3 */
        0x70, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0,6,1 on 3 bits */
    };
    size_t len = 44;
    memcpy(raw + len, "axislebabbleyhood", 17);
    len += 17;
    pq_bytes out[4];
    uint8_t *extra = NULL;
    size_t extra_len;
    pq_error err;
    cr_assert_eq(pq_values_delta_bytes(&BA, raw, len, 4, out, &extra, &extra_len, &err), 0, "%s",
                 err.msg);
    assert_str(out[0], "axis");
    assert_str(out[1], "axle");
    assert_str(out[2], "babble");
    assert_str(out[3], "babyhood");
    cr_assert_eq(extra_len, 4 + 4 + 6 + 8);
    free(extra);
    /* a prefix longer than the previous value is corrupt */
    raw[4] = 20; /* first prefix 10 */
    cr_assert_eq(pq_values_delta_bytes(&BA, raw, len, 4, out, &extra, &extra_len, &err), -1);
    cr_assert(strstr(err.msg, "prefix 10"), "%s", err.msg);
}

/* A dictionary page of three strings and RLE_DICTIONARY data pages. */
/* Decode the uncompressed PLAIN dictionary page of n values raw[0..len). */
static void decode_dict(const pq_column_desc *col, const void *raw, size_t len, int n,
                        pq_dictionary *d)
{
    pq_page_header h = { 0 };
    h.type = PQ_PAGE_DICTIONARY;
    h.uncompressed_size = h.compressed_size = (int32_t)len;
    h.num_values = n;
    h.encoding = PQ_ENC_PLAIN_DICTIONARY;
    pq_error err;
    cr_assert_eq(pq_dictionary_decode(col, &h, raw, len, d, &err), 0, "%s", err.msg);
}

static void make_dict(pq_dictionary *d)
{
    const uint8_t raw[] = { 3, 0, 0, 0, 'r', 'e', 'd', 5, 0, 0, 0, 'g', 'r', 'e', 'e', 'n',
                            4, 0, 0, 0, 'b', 'l', 'u', 'e' };
    decode_dict(&BA, raw, sizeof raw, 3, d);
    cr_assert_eq(d->count, 3);
    assert_str(d->values[1], "green");
    cr_assert_geq(pq_dictionary_bytes(d), sizeof raw);
}

Test(values, dictionary_page_and_indices)
{
    pq_dictionary d;
    make_dict(&d);
    /* v1 page, optional column: def levels 1,0,1,1,1 then indices 2,0,1,2 */
    pq_column_desc col = { PQ_BYTE_ARRAY, 0, 1, 0, PQ_UNCOMPRESSED };
    const uint8_t body[] = {
        3, 0, 0, 0, 0x03, 0x1d, 0x00, /* def levels: one bit-packed group */
        2,                            /* index bit width */
        0x03, 0x92, 0x00,             /* 2,0,1,2 on 2 bits, one group */
    };
    pq_page_header h = { 0 };
    h.type = PQ_PAGE_DATA;
    h.uncompressed_size = h.compressed_size = sizeof body;
    h.num_values = 5;
    h.encoding = PQ_ENC_RLE_DICTIONARY;
    h.def_encoding = h.rep_encoding = PQ_ENC_RLE;
    pq_page_values pv;
    pq_error err;
    cr_assert_eq(pq_page_decode(&col, &h, body, sizeof body, &d, &pv, &err), 0, "%s", err.msg);
    cr_assert_eq(pv.num_levels, 5);
    cr_assert_eq(pv.num_values, 4);
    cr_assert(pv.def_levels[0] == 1 && pv.def_levels[1] == 0 && pv.rep_levels == NULL);
    assert_str(pv.values[0], "blue");
    assert_str(pv.values[1], "red");
    assert_str(pv.values[2], "green");
    assert_str(pv.values[3], "blue");
    cr_assert_gt(pq_page_values_bytes(&pv), 0);
    /* owned values outlive the dictionary: a copy of it is decoded from,
     * then freed before the values are read again */
    pq_dictionary copy;
    make_dict(&copy);
    pq_page_values_free(&pv);
    cr_assert_eq(pq_page_decode(&col, &h, body, sizeof body, &copy, &pv, &err), 0, "%s", err.msg);
    size_t before = pq_page_values_bytes(&pv);
    cr_assert_eq(pq_page_values_own(&pv, &err), 0, "%s", err.msg);
    pq_dictionary_free(&copy);
    assert_str(pv.values[0], "blue");
    assert_str(pv.values[1], "red");
    assert_str(pv.values[2], "green");
    assert_str(pv.values[3], "blue");
    cr_assert_eq(pq_page_values_bytes(&pv), before + 4 + 3 + 5 + 4,
                 "the copied bytes are counted as the page's");
    pq_page_values_free(&pv);

    /* no dictionary */
    cr_assert_eq(pq_page_decode(&col, &h, body, sizeof body, NULL, &pv, &err), -1);
    cr_assert(strstr(err.msg, "no dictionary page"), "%s", err.msg);
    /* index out of range: 3 with a 3-entry dictionary */
    uint8_t bad[sizeof body];
    memcpy(bad, body, sizeof body);
    bad[9] = 0x93; /* 3,0,1,2 */
    cr_assert_eq(pq_page_decode(&col, &h, bad, sizeof bad, &d, &pv, &err), -1);
    cr_assert(strstr(err.msg, "index 3 of value 0 is out of range"), "%s", err.msg);
    /* a definition level above max_def */
    memcpy(bad, body, sizeof body);
    bad[4] = 0x02; /* RLE run of 1 ... */
    bad[5] = 0x02; /* ... of value 2 */
    cr_assert_eq(pq_page_decode(&col, &h, bad, sizeof bad, &d, &pv, &err), -1);
    pq_dictionary_free(&d);
}

Test(values, data_page_v2_levels_uncompressed)
{
    /* repeated-in-optional column (max_rep 1, max_def 2), zstd-free: the
     * values section is "compressed" with UNCOMPRESSED and is_compressed 0. */
    pq_column_desc col = { PQ_BYTE_ARRAY, 0, 2, 1, PQ_SNAPPY };
    const uint8_t body[] = {
        0x03, 0x04,       /* rep levels 0,0,1,0 (bit-packed, width 1) */
        0x03, 0x9a, 0x00, /* def levels 2,2,1,2 (width 2) */
        1, 0, 0, 0, 'a', 1, 0, 0, 0, 'b', 1, 0, 0, 0, 'c',
    };
    pq_page_header h = { 0 };
    h.type = PQ_PAGE_DATA_V2;
    h.uncompressed_size = h.compressed_size = sizeof body;
    h.num_values = 4;
    h.num_rows = 3;
    h.rep_levels_len = 2;
    h.def_levels_len = 3;
    h.encoding = PQ_ENC_PLAIN;
    h.is_compressed = 0;
    pq_page_values pv;
    pq_error err;
    cr_assert_eq(pq_page_decode(&col, &h, body, sizeof body, NULL, &pv, &err), 0, "%s", err.msg);
    cr_assert(pv.num_levels == 4 && pv.num_values == 3);
    cr_assert(pv.rep_levels[2] == 1 && pv.def_levels[2] == 1);
    assert_str(pv.values[2], "c");
    pq_page_values_free(&pv);
    /* compressed with SNAPPY is expected when is_compressed: this body is not snappy */
    h.is_compressed = 1;
    cr_assert_eq(pq_page_decode(&col, &h, body, sizeof body, NULL, &pv, &err), -1);
    cr_assert(strstr(err.msg, "SNAPPY"), "%s", err.msg);
}

Test(values, limits_and_unsupported)
{
    pq_page_header h = { 0 };
    h.type = PQ_PAGE_DATA;
    h.num_values = (int32_t)PQ_MAX_PAGE_VALUES + 1;
    uint8_t body[4] = { 0 };
    pq_page_values pv;
    pq_error err;
    cr_assert_eq(pq_page_decode(&BA, &h, body, 0, NULL, &pv, &err), -1);
    cr_assert(strstr(err.msg, "values is outside"), "%s", err.msg);
    h.num_values = 1;
    h.compressed_size = 10;
    cr_assert_eq(pq_page_decode(&BA, &h, body, 4, NULL, &pv, &err), -1);
    cr_assert(strstr(err.msg, "body is 4 bytes, header says 10"), "%s", err.msg);
    h.compressed_size = h.uncompressed_size = 4;
    h.encoding = 42;
    cr_assert_eq(pq_page_decode(&BA, &h, body, 4, NULL, &pv, &err), -1);
    cr_assert(strstr(err.msg, "not supported"), "%s", err.msg);
    h.type = PQ_PAGE_INDEX;
    cr_assert_eq(pq_page_decode(&BA, &h, body, 4, NULL, &pv, &err), -1);
}

Test(values, byte_stream_split)
{
    /* three floats AA BB CC DD / 00 11 22 33 / A3 B4 C5 D6 (Encodings.md) */
    const uint8_t raw[] = { 0xaa, 0x00, 0xa3, 0xbb, 0x11, 0xb4,
                            0xcc, 0x22, 0xc5, 0xdd, 0x33, 0xd6 };
    pq_column_desc f = { PQ_FLOAT, 0, 0, 0, 0 };
    pq_bytes out[3];
    uint8_t *extra;
    size_t extra_len;
    pq_error err;
    cr_assert_eq(pq_values_byte_stream_split(&f, raw, 12, 3, out, &extra, &extra_len, &err), 0);
    const uint8_t want[] = { 0xaa, 0xbb, 0xcc, 0xdd, 0x00, 0x11, 0x22, 0x33, 0xa3, 0xb4, 0xc5, 0xd6 };
    cr_assert_eq(memcmp(out[0].ptr, want, 12), 0);
    free(extra);
    cr_assert_eq(pq_values_byte_stream_split(&f, raw, 11, 3, out, &extra, &extra_len, &err), -1);
}

/* A flat v1 page of n values (no levels), uncompressed. */
static pq_page_header flat_page(int encoding, size_t body_len, int n)
{
    pq_page_header h = { 0 };
    h.type = PQ_PAGE_DATA;
    h.uncompressed_size = h.compressed_size = (int32_t)body_len;
    h.num_values = n;
    h.encoding = encoding;
    h.def_encoding = h.rep_encoding = PQ_ENC_RLE;
    return h;
}

static void assert_i64s(const pq_page_values *pv, const int64_t *want, uint32_t n)
{
    cr_assert_eq(pv->num_values, n);
    for (uint32_t i = 0; i < n; i++) {
        pq_bytes v = pq_page_value(pv, i);
        int64_t got;
        cr_assert_eq(v.len, 8);
        memcpy(&got, v.ptr, 8);
        cr_assert_eq(got, want[i], "value %u: %lld, expected %lld", i, (long long)got,
                     (long long)want[i]);
    }
}

/* Fixed-width values are packed (no slice per value): PLAIN ones where they
 * lie in the page, dictionary ones gathered out of the dictionary (so they
 * outlive it), and they stay packed when pages are cut and joined along rows. */
Test(values, fixed_width_values_are_packed)
{
    pq_column_desc i64 = { PQ_INT64, 0, 0, 0, PQ_UNCOMPRESSED };
    cr_assert_eq(pq_packed_width(&i64), 8);
    cr_assert_eq(pq_packed_width(&BA), 0);
    pq_column_desc boolean = { PQ_BOOLEAN, 0, 0, 0, PQ_UNCOMPRESSED };
    cr_assert_eq(pq_packed_width(&boolean), 0);
    pq_error err;

    const int64_t plain[] = { 1, 2, 3, 4 };
    uint8_t *plain_body = dup(plain, sizeof plain);
    pq_page_header h = flat_page(PQ_ENC_PLAIN, sizeof plain, 4);
    pq_page_values a;
    cr_assert_eq(pq_page_decode(&i64, &h, plain_body, sizeof plain, NULL, &a, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(a.width, 8);
    cr_assert_null(a.values);
    assert_i64s(&a, plain, 4);
    cr_assert_eq(pq_page_values_bytes(&a), sizeof plain, "the page's body, nothing per value");

    /* dictionary 10, 20, 30; indices 2, 0, 1 on 2 bits */
    const int64_t entries[] = { 10, 20, 30 };
    pq_dictionary d;
    decode_dict(&i64, entries, sizeof entries, 3, &d);
    const uint8_t indices[] = { 2, 0x03, 0x12, 0x00 };
    h = flat_page(PQ_ENC_RLE_DICTIONARY, sizeof indices, 3);
    pq_page_values b;
    cr_assert_eq(pq_page_decode(&i64, &h, indices, sizeof indices, &d, &b, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(pq_page_values_own(&b, &err), 0, "%s", err.msg);
    pq_dictionary_free(&d); /* the values are the page's own */
    const int64_t gathered[] = { 30, 10, 20 };
    assert_i64s(&b, gathered, 3);
    cr_assert_eq(pq_page_values_bytes(&b), sizeof indices + sizeof gathered);

    /* cut along rows and joined: still packed, the same values */
    pq_page_values_drop_front(&a, 1, 0);
    const int64_t dropped[] = { 2, 3, 4 };
    assert_i64s(&a, dropped, 3);
    cr_assert_eq(pq_page_values_append(&a, &b, 1, 3, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(a.width, 8);
    const int64_t joined[] = { 2, 3, 4, 10, 20 };
    assert_i64s(&a, joined, 5);
    free(plain_body); /* the joined values no longer point into the page */
    assert_i64s(&a, joined, 5);
    pq_page_values empty = { 0 };
    cr_assert_eq(pq_page_values_append(&empty, &b, 0, 2, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(empty.width, 8, "an empty page takes the packed values as they are");
    assert_i64s(&empty, gathered, 2);
    pq_page_values_free(&empty);
    pq_page_values_free(&a);
    pq_page_values_free(&b);

    /* values narrower than an index (FIXED_LEN_BYTE_ARRAY(2)) gathered too */
    pq_column_desc flba2 = { PQ_FIXED_LEN_BYTE_ARRAY, 2, 0, 0, PQ_UNCOMPRESSED };
    const uint8_t two[] = { 'a', 'b', 'c', 'd' };
    decode_dict(&flba2, two, sizeof two, 2, &d);
    const uint8_t narrow[] = { 1, 0x03, 0x05, 0x00 }; /* 1, 0, 1, 0 ... on 1 bit */
    h = flat_page(PQ_ENC_RLE_DICTIONARY, sizeof narrow, 3);
    cr_assert_eq(pq_page_decode(&flba2, &h, narrow, sizeof narrow, &d, &b, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(b.width, 2);
    assert_str(pq_page_value(&b, 0), "cd");
    assert_str(pq_page_value(&b, 1), "ab");
    assert_str(pq_page_value(&b, 2), "cd");
    pq_page_values_free(&b);
    pq_dictionary_free(&d);
}
