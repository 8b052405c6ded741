#include <criterion/criterion.h>

#include "pq_cursor.h"

Test(cursor, fixed_width_little_endian)
{
    const uint8_t b[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    pq_cursor c = pq_cursor_make(b, sizeof b);
    uint32_t v32;
    uint64_t v64;
    uint8_t v8;
    cr_assert(pq_cursor_u8(&c, &v8) && v8 == 1);
    cr_assert(pq_cursor_le32(&c, &v32) && v32 == 0x05040302u);
    cr_assert(!pq_cursor_le64(&c, &v64), "4 bytes left, le64 must fail");
    cr_assert_eq(c.left, 4, "failed read must not move the cursor");
    cr_assert(pq_cursor_le32(&c, &v32) && v32 == 0x09080706u);
    cr_assert(!pq_cursor_u8(&c, &v8));
}

Test(cursor, uleb_and_zigzag)
{
    const uint8_t b[] = { 0xe5, 0x8e, 0x26, 0x03, 0x7f };
    pq_cursor c = pq_cursor_make(b, sizeof b);
    uint64_t v;
    int64_t z;
    cr_assert(pq_cursor_uleb(&c, &v) && v == 624485);
    cr_assert(pq_cursor_zigzag(&c, &z) && z == -2);
    cr_assert(pq_cursor_zigzag(&c, &z) && z == -64);
    cr_assert_eq(c.left, 0);

    const uint8_t max[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
    c = pq_cursor_make(max, sizeof max);
    cr_assert(pq_cursor_uleb(&c, &v) && v == UINT64_MAX);

    const uint8_t over[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 };
    c = pq_cursor_make(over, sizeof over);
    cr_assert(!pq_cursor_uleb(&c, &v), "a varint above 64 bits must fail");

    const uint8_t trunc[] = { 0x80, 0x80 };
    c = pq_cursor_make(trunc, sizeof trunc);
    cr_assert(!pq_cursor_uleb(&c, &v));
    cr_assert_eq(c.left, 2);

    const uint8_t eleven[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0 };
    c = pq_cursor_make(eleven, sizeof eleven);
    cr_assert(!pq_cursor_uleb(&c, &v), "more than 10 bytes must fail");
}

Test(cursor, slices)
{
    const uint8_t b[] = "abcdef";
    pq_cursor c = pq_cursor_make(b, 6);
    const uint8_t *p;
    cr_assert(pq_cursor_slice(&c, 2, &p) && p == b);
    cr_assert(!pq_cursor_slice(&c, 5, &p));
    cr_assert(pq_cursor_skip(&c, 4));
    cr_assert(pq_cursor_slice(&c, 0, &p));
    cr_assert(!pq_cursor_skip(&c, 1));
    cr_assert(!pq_cursor_slice(&c, SIZE_MAX, &p));
}
