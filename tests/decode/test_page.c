#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pq_page.h"
#include "pq_thrift.h"
#include "tu.h"

/* A statistics struct, which the parser must skip. */
static void stats(tw *w, int16_t id)
{
    tw_field(w, id, PQ_TT_STRUCT);
    tw_begin(w);
    tw_field(w, 1, PQ_TT_BINARY);
    tw_binary(w, "zzz");
    tw_field(w, 2, PQ_TT_BINARY);
    tw_binary(w, "aaa");
    tw_i64f(w, 3, 0);
    tw_end(w);
}

static void v1_header(tw *w)
{
    tw_init(w);
    tw_i32f(w, 1, PQ_PAGE_DATA);
    tw_i32f(w, 2, 1000);
    tw_i32f(w, 3, 400);
    tw_i32f(w, 4, -123);
    tw_field(w, 5, PQ_TT_STRUCT);
    tw_begin(w);
    tw_i32f(w, 1, 77);
    tw_i32f(w, 2, PQ_ENC_RLE_DICTIONARY);
    tw_i32f(w, 3, PQ_ENC_RLE);
    tw_i32f(w, 4, PQ_ENC_BIT_PACKED);
    stats(w, 5);
    tw_end(w);
    tw_i32f(w, 99, 5); /* a field from a newer format version */
    tw_byte(w, 0);
}

Test(page, data_page_v1)
{
    tw w;
    v1_header(&w);
    w.buf[w.len] = 0xee; /* body bytes follow the header */
    pq_page_header h;
    pq_error err;
    cr_assert_eq(pq_page_header_parse(w.buf, w.len + 1, &h, &err), 0, "%s", err.msg);
    cr_assert_eq(h.type, PQ_PAGE_DATA);
    cr_assert_eq(h.uncompressed_size, 1000);
    cr_assert_eq(h.compressed_size, 400);
    cr_assert(h.has_crc && h.crc == (uint32_t)-123);
    cr_assert_eq(h.num_values, 77);
    cr_assert_eq(h.encoding, PQ_ENC_RLE_DICTIONARY);
    cr_assert_eq(h.def_encoding, PQ_ENC_RLE);
    cr_assert_eq(h.rep_encoding, PQ_ENC_BIT_PACKED);
    cr_assert_eq(h.header_len, w.len);
}

Test(page, dictionary_and_v2)
{
    tw w;
    tw_init(&w);
    tw_i32f(&w, 1, PQ_PAGE_DICTIONARY);
    tw_i32f(&w, 2, 10);
    tw_i32f(&w, 3, 10);
    tw_field(&w, 7, PQ_TT_STRUCT);
    tw_begin(&w);
    tw_i32f(&w, 1, 3);
    tw_i32f(&w, 2, PQ_ENC_PLAIN);
    tw_field(&w, 3, PQ_TT_TRUE);
    tw_end(&w);
    tw_byte(&w, 0);
    pq_page_header h;
    pq_error err;
    cr_assert_eq(pq_page_header_parse(w.buf, w.len, &h, &err), 0, "%s", err.msg);
    cr_assert(h.type == PQ_PAGE_DICTIONARY && h.num_values == 3 && h.encoding == PQ_ENC_PLAIN);

    tw_init(&w);
    tw_i32f(&w, 1, PQ_PAGE_DATA_V2);
    tw_i32f(&w, 2, 50);
    tw_i32f(&w, 3, 30);
    tw_field(&w, 8, PQ_TT_STRUCT);
    tw_begin(&w);
    tw_i32f(&w, 1, 12);
    tw_i32f(&w, 2, 2);
    tw_i32f(&w, 3, 12);
    tw_i32f(&w, 4, PQ_ENC_PLAIN);
    tw_i32f(&w, 5, 4);
    tw_i32f(&w, 6, 0);
    tw_field(&w, 7, PQ_TT_FALSE);
    stats(&w, 8);
    tw_end(&w);
    tw_byte(&w, 0);
    cr_assert_eq(pq_page_header_parse(w.buf, w.len, &h, &err), 0, "%s", err.msg);
    cr_assert_eq(h.type, PQ_PAGE_DATA_V2);
    cr_assert(h.num_values == 12 && h.num_nulls == 2 && h.num_rows == 12);
    cr_assert(h.def_levels_len == 4 && h.rep_levels_len == 0 && h.is_compressed == 0);
}

static int parse_one(void (*build)(tw *), pq_error *err)
{
    tw w;
    build(&w);
    pq_page_header h;
    return pq_page_header_parse(w.buf, w.len, &h, err);
}

static void missing_sub(tw *w)
{
    tw_init(w);
    tw_i32f(w, 1, PQ_PAGE_DATA);
    tw_i32f(w, 2, 10);
    tw_i32f(w, 3, 10);
    tw_byte(w, 0);
}

static void negative_size(tw *w)
{
    tw_init(w);
    tw_i32f(w, 1, PQ_PAGE_DICTIONARY);
    tw_i32f(w, 2, -1);
    tw_i32f(w, 3, 10);
    tw_field(w, 7, PQ_TT_STRUCT);
    tw_begin(w);
    tw_i32f(w, 1, 1);
    tw_i32f(w, 2, 0);
    tw_end(w);
    tw_byte(w, 0);
}

static void v2_levels_too_long(tw *w)
{
    tw_init(w);
    tw_i32f(w, 1, PQ_PAGE_DATA_V2);
    tw_i32f(w, 2, 50);
    tw_i32f(w, 3, 30);
    tw_field(w, 8, PQ_TT_STRUCT);
    tw_begin(w);
    tw_i32f(w, 1, 12);
    tw_i32f(w, 2, 0);
    tw_i32f(w, 3, 12);
    tw_i32f(w, 4, 0);
    tw_i32f(w, 5, 20);
    tw_i32f(w, 6, 20);
    tw_end(w);
    tw_byte(w, 0);
}

Test(page, invalid_headers)
{
    pq_error err;
    cr_assert_eq(parse_one(missing_sub, &err), -1);
    cr_assert(strstr(err.msg, "missing"), "%s", err.msg);
    cr_assert_eq(parse_one(negative_size, &err), -1);
    cr_assert(strstr(err.msg, "negative"), "%s", err.msg);
    cr_assert_eq(parse_one(v2_levels_too_long, &err), -1);
    cr_assert(strstr(err.msg, "levels take 40 bytes"), "%s", err.msg);
}

Test(page, every_truncation_fails)
{
    tw w;
    v1_header(&w);
    pq_error err;
    for (size_t n = 0; n < w.len; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, w.buf, n);
        pq_page_header h;
        cr_assert_eq(pq_page_header_parse(copy, n, &h, &err), -1, "length %zu", n);
        cr_assert(strncmp(err.msg, "page header", 11) == 0, "%s", err.msg);
        free(copy);
    }
}
