#include <criterion/criterion.h>
#include <string.h>

#include "pq_thrift.h"
#include "tu.h"

/* Read every field of a struct and skip it; returns -1 on error. */
static int skip_all(const uint8_t *buf, size_t len, pq_error *err)
{
    pq_thrift t;
    pq_thrift_init(&t, buf, len);
    return pq_thrift_skip(&t, PQ_TT_STRUCT, err);
}

Test(thrift, fields_values_and_ids)
{
    tw w;
    tw_init(&w);
    tw_i32f(&w, 1, -7);                  /* short form */
    tw_i64f(&w, 3, 1LL << 40);
    tw_field(&w, 4, PQ_TT_BINARY);
    tw_binary(&w, "hello");
    tw_field(&w, 5, PQ_TT_TRUE);
    tw_field(&w, 6, PQ_TT_FALSE);
    tw_i32f(&w, 40, 123);                /* delta > 15: long form */
    tw_i32f(&w, 2, 9);                   /* id going down: long form */
    tw_field(&w, 7, PQ_TT_LIST);
    tw_list(&w, PQ_TT_I32, 20);          /* count > 14: varint count */
    for (int i = 0; i < 20; i++)
        tw_zigzag(&w, i - 10);
    tw_field(&w, 8, PQ_TT_LIST);
    tw_list(&w, PQ_TT_TRUE, 3);          /* booleans in lists: one byte each */
    tw_byte(&w, 1);
    tw_byte(&w, 2);
    tw_byte(&w, 1);
    tw_byte(&w, 0);                      /* STOP */

    pq_thrift t;
    pq_error err;
    pq_thrift_init(&t, w.buf, w.len);
    cr_assert_eq(pq_thrift_struct_begin(&t, &err), 0);
    int16_t id;
    uint8_t ty;
    int32_t i32;
    int64_t i64;
    int b;
    const uint8_t *p;
    uint32_t n;
    cr_assert_eq(pq_thrift_field(&t, &id, &ty, &err), 0);
    cr_assert(id == 1 && ty == PQ_TT_I32);
    cr_assert(pq_thrift_i32(&t, ty, &i32, &err) == 0 && i32 == -7);
    cr_assert(pq_thrift_field(&t, &id, &ty, &err) == 0 && id == 3);
    cr_assert(pq_thrift_i64(&t, ty, &i64, &err) == 0 && i64 == 1LL << 40);
    cr_assert(pq_thrift_field(&t, &id, &ty, &err) == 0 && id == 4);
    cr_assert(pq_thrift_i32(&t, ty, &i32, &err) == -1, "binary read as i32 must fail");
    cr_assert(strstr(err.msg, "expected i32"), "%s", err.msg);
    cr_assert(pq_thrift_binary(&t, ty, &p, &n, &err) == 0 && n == 5 && !memcmp(p, "hello", 5));
    cr_assert(pq_thrift_field(&t, &id, &ty, &err) == 0 && id == 5);
    cr_assert(pq_thrift_bool(&t, ty, &b, &err) == 0 && b == 1);
    cr_assert(pq_thrift_field(&t, &id, &ty, &err) == 0 && id == 6);
    cr_assert(pq_thrift_bool(&t, ty, &b, &err) == 0 && b == 0);
    cr_assert(pq_thrift_field(&t, &id, &ty, &err) == 0 && id == 40);
    cr_assert(pq_thrift_i32(&t, ty, &i32, &err) == 0 && i32 == 123);
    cr_assert(pq_thrift_field(&t, &id, &ty, &err) == 0 && id == 2);
    cr_assert(pq_thrift_i32(&t, ty, &i32, &err) == 0 && i32 == 9);
    cr_assert(pq_thrift_field(&t, &id, &ty, &err) == 0 && id == 7);
    uint8_t et;
    cr_assert(pq_thrift_list_begin(&t, ty, &et, &n, &err) == 0 && et == PQ_TT_I32 && n == 20);
    for (int i = 0; i < 20; i++)
        cr_assert(pq_thrift_i32(&t, et, &i32, &err) == 0 && i32 == i - 10);
    cr_assert(pq_thrift_field(&t, &id, &ty, &err) == 0 && id == 8);
    cr_assert(pq_thrift_list_begin(&t, ty, &et, &n, &err) == 0 && n == 3);
    int want[] = { 1, 0, 1 };
    for (int i = 0; i < 3; i++)
        cr_assert(pq_thrift_bool(&t, et, &b, &err) == 0 && b == want[i]);
    cr_assert(pq_thrift_field(&t, &id, &ty, &err) == 0 && ty == PQ_TT_STOP);
    pq_thrift_struct_end(&t);
    cr_assert_eq(pq_thrift_offset(&t), w.len);

    /* The same bytes skip cleanly as one struct. */
    cr_assert_eq(skip_all(w.buf, w.len, &err), 0, "%s", err.msg);
}

Test(thrift, skips_nested_structs_maps_doubles)
{
    tw w;
    tw_init(&w);
    tw_field(&w, 1, PQ_TT_STRUCT);
    tw_begin(&w);
    tw_field(&w, 1, PQ_TT_DOUBLE);
    for (int i = 0; i < 8; i++)
        tw_byte(&w, 0x11);
    tw_field(&w, 2, PQ_TT_MAP);
    tw_uleb(&w, 2);
    tw_byte(&w, PQ_TT_BINARY << 4 | PQ_TT_STRUCT);
    tw_binary(&w, "k1");
    tw_byte(&w, 0); /* empty struct */
    tw_binary(&w, "k2");
    tw_byte(&w, 0);
    tw_field(&w, 3, PQ_TT_MAP);
    tw_uleb(&w, 0); /* empty map: no type byte */
    tw_field(&w, 4, PQ_TT_BYTE);
    tw_byte(&w, 0xff);
    tw_end(&w);
    tw_i32f(&w, 2, 5);
    tw_byte(&w, 0);
    pq_error err;
    cr_assert_eq(skip_all(w.buf, w.len, &err), 0, "%s", err.msg);
}

Test(thrift, every_truncation_fails_cleanly)
{
    tw w;
    tw_init(&w);
    tw_i32f(&w, 1, 100000);
    tw_field(&w, 2, PQ_TT_BINARY);
    tw_binary(&w, "some text");
    tw_field(&w, 3, PQ_TT_LIST);
    tw_list(&w, PQ_TT_STRUCT, 2);
    tw_begin(&w);
    tw_i64f(&w, 1, -5);
    tw_end(&w);
    tw_begin(&w);
    tw_field(&w, 9, PQ_TT_TRUE);
    tw_end(&w);
    tw_byte(&w, 0);
    pq_error err;
    cr_assert_eq(skip_all(w.buf, w.len, &err), 0, "%s", err.msg);
    for (size_t n = 0; n < w.len; n++) {
        /* A heap copy of exactly n bytes so ASan sees any overread. */
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, w.buf, n);
        err.msg[0] = '\0';
        cr_assert_eq(skip_all(copy, n, &err), -1, "truncated to %zu bytes must fail", n);
        cr_assert(strstr(err.msg, "byte"), "message names the offset: %s", err.msg);
        free(copy);
    }
}

Test(thrift, deep_nesting_is_refused)
{
    tw w;
    tw_init(&w);
    for (int i = 0; i < 100; i++) {
        tw_field(&w, 1, PQ_TT_STRUCT);
        tw_begin(&w);
    }
    for (int i = 0; i < 101; i++)
        tw_byte(&w, 0);
    pq_error err;
    cr_assert_eq(skip_all(w.buf, w.len, &err), -1);
    cr_assert(strstr(err.msg, "deeper"), "%s", err.msg);

    /* Lists of lists nest without structs. */
    tw_init(&w);
    tw_field(&w, 1, PQ_TT_LIST);
    for (int i = 0; i < 100; i++)
        tw_list(&w, PQ_TT_LIST, 1);
    tw_list(&w, PQ_TT_I32, 0);
    tw_byte(&w, 0);
    cr_assert_eq(skip_all(w.buf, w.len, &err), -1);
    cr_assert(strstr(err.msg, "deeper"), "%s", err.msg);
}

Test(thrift, hostile_counts_and_types)
{
    pq_error err;
    /* list of 1000 i32 with 3 bytes left */
    const uint8_t big_list[] = { 0x19, 0xf5, 0xe8, 0x07, 0x00, 0x00 };
    cr_assert_eq(skip_all(big_list, sizeof big_list, &err), -1);
    cr_assert(strstr(err.msg, "1000 elements"), "%s", err.msg);
    /* binary of 2^40 bytes */
    const uint8_t big_bin[] = { 0x18, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0x00 };
    cr_assert_eq(skip_all(big_bin, sizeof big_bin, &err), -1);
    /* unknown type 13 in a field header */
    const uint8_t bad_type[] = { 0x1d, 0x00 };
    cr_assert_eq(skip_all(bad_type, sizeof bad_type, &err), -1);
    cr_assert(strstr(err.msg, "unknown type"), "%s", err.msg);
    /* i32 out of range */
    tw w;
    tw_init(&w);
    tw_i64f(&w, 1, 1LL << 40);
    tw_byte(&w, 0);
    pq_thrift t;
    pq_thrift_init(&t, w.buf, w.len);
    int16_t id;
    uint8_t ty;
    int32_t v;
    pq_thrift_struct_begin(&t, &err);
    pq_thrift_field(&t, &id, &ty, &err);
    cr_assert_eq(pq_thrift_i32(&t, PQ_TT_I32, &v, &err), -1);
    cr_assert(strstr(err.msg, "out of range"), "%s", err.msg);
    /* field read outside a struct */
    pq_thrift_init(&t, w.buf, w.len);
    cr_assert_eq(pq_thrift_field(&t, &id, &ty, &err), -1);
}

Test(thrift, list_count_bounded_by_element_size)
{
    pq_error err;
    /* list of 2 doubles with 10 bytes left: each takes 8 */
    const uint8_t doubles[] = { 0x19, 0x27, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0 };
    cr_assert_eq(skip_all(doubles, sizeof doubles, &err), -1);
    cr_assert(strstr(err.msg, "2 elements, only 10 bytes left (an element takes at least 8)"), "%s",
              err.msg);
    /* one double fits */
    const uint8_t one[] = { 0x19, 0x17, 1, 2, 3, 4, 5, 6, 7, 8, 0 };
    cr_assert_eq(skip_all(one, sizeof one, &err), 0, "%s", err.msg);
    /* 2^30 structs in 3 bytes */
    const uint8_t structs[] = { 0x19, 0xfc, 0x80, 0x80, 0x80, 0x80, 0x04, 0x00, 0x00, 0x00 };
    cr_assert_eq(skip_all(structs, sizeof structs, &err), -1);
    cr_assert(strstr(err.msg, "declares 1073741824 elements, only 3 bytes left"), "%s",
              err.msg);
}
