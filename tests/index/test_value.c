/* Value rendering: JSON text of numbers, decimals, dates and times as
 * tests/CONTRACT-TYPES.md fixes it, and raw conversion with range checks. */
#include <criterion/criterion.h>
#include <string.h>

#include "ix_value.h"

static void expect_json(const ix_value_type *t, const void *bytes, uint32_t len,
                        const char *expect)
{
    char buf[IX_JSON_SCALAR_MAX];
    pq_error err;
    pq_bytes v = { bytes, len };
    int n = ix_json_scalar(t, v, buf, &err);
    cr_assert_geq(n, 0, "%s", err.msg);
    cr_assert_eq((size_t)n, strlen(expect), "got %.*s, want %s", n, buf, expect);
    cr_assert_eq(memcmp(buf, expect, (size_t)n), 0, "got %.*s, want %s", n, buf, expect);
}

static void expect_double(double x, const char *expect)
{
    ix_value_type t = { .kind = IX_KIND_FLOAT, .physical = PQ_DOUBLE };
    expect_json(&t, &x, 8, expect);
}

Test(value, doubles_print_like_python_repr)
{
    expect_double(0.1, "0.1");
    expect_double(1.0, "1.0");
    expect_double(-2.5, "-2.5");
    expect_double(100.0, "100.0");
    expect_double(1e15, "1000000000000000.0");
    expect_double(1e16, "1e+16");
    expect_double(1.5e-7, "1.5e-07");
    expect_double(0.0001, "0.0001");
    expect_double(0.00001, "1e-05");
    expect_double(123456789012345680.0, "1.2345678901234568e+17");
    expect_double(5e-324, "5e-324");
    expect_double(1.7976931348623157e308, "1.7976931348623157e+308");
    expect_double(-0.0, "-0.0");
    expect_double(0.0, "0.0");
    expect_double(1.0 / 0.0, "Infinity");
    expect_double(-1.0 / 0.0, "-Infinity");
    expect_double(0.0 / 0.0, "NaN");
}

Test(value, floats_are_widened_first)
{
    ix_value_type t = { .kind = IX_KIND_FLOAT, .physical = PQ_FLOAT };
    float f = 0.1f;
    expect_json(&t, &f, 4, "0.10000000149011612");
    ix_value_type half = { .kind = IX_KIND_FLOAT, .physical = PQ_FIXED_LEN_BYTE_ARRAY };
    uint8_t one_and_half[2] = { 0x00, 0x3e }; /* 1.5 in binary16, little-endian */
    expect_json(&half, one_and_half, 2, "1.5");
}

Test(value, integers_signed_and_unsigned)
{
    ix_value_type i32 = { .kind = IX_KIND_INT, .physical = PQ_INT32 };
    int32_t m = -7;
    expect_json(&i32, &m, 4, "-7");
    ix_value_type u32 = { .kind = IX_KIND_UINT, .physical = PQ_INT32 };
    uint32_t big = 4000000000u;
    expect_json(&u32, &big, 4, "4000000000");
    ix_value_type b = { .kind = IX_KIND_BOOL, .physical = PQ_BOOLEAN };
    expect_json(&b, "\1", 1, "true");
    expect_json(&b, "\0", 1, "false");
}

Test(value, decimals_keep_their_scale)
{
    ix_value_type d = { .kind = IX_KIND_DECIMAL, .physical = PQ_INT32, .scale = 2 };
    int32_t v = -1250;
    expect_json(&d, &v, 4, "-12.50");
    v = 5;
    expect_json(&d, &v, 4, "0.05");
    v = 0;
    expect_json(&d, &v, 4, "0.00");
    /* big-endian two's complement, 16 bytes: -1 with scale 3 */
    ix_value_type f = { .kind = IX_KIND_DECIMAL, .physical = PQ_FIXED_LEN_BYTE_ARRAY, .scale = 3 };
    uint8_t minus_one[16];
    memset(minus_one, 0xff, sizeof minus_one);
    expect_json(&f, minus_one, 16, "-0.001");
    /* 10^38 - 1 (38 nines), the largest DECIMAL(38) */
    uint8_t max38[16] = { 0x4b, 0x3b, 0x4c, 0xa8, 0x5a, 0x86, 0xc4, 0x7a,
                          0x09, 0x8a, 0x22, 0x3f, 0xff, 0xff, 0xff, 0xff };
    ix_value_type z = { .kind = IX_KIND_DECIMAL, .physical = PQ_FIXED_LEN_BYTE_ARRAY };
    expect_json(&z, max38, 16, "99999999999999999999999999999999999999");
}

Test(value, dates_times_and_timestamps)
{
    ix_value_type date = { .kind = IX_KIND_DATE, .physical = PQ_INT32 };
    int32_t days = 19782; /* 2024-02-29 */
    expect_json(&date, &days, 4, "\"2024-02-29\"");
    days = -1;
    expect_json(&date, &days, 4, "\"1969-12-31\"");
    ix_value_type ts = { .kind = IX_KIND_TIMESTAMP, .physical = PQ_INT64,
                         .unit = PQ_UNIT_MICROS, .utc = 1 };
    int64_t us = -1; /* one microsecond before the epoch */
    expect_json(&ts, &us, 8, "\"1969-12-31T23:59:59.999999Z\"");
    ix_value_type t = { .kind = IX_KIND_TIME, .physical = PQ_INT32, .unit = PQ_UNIT_MILLIS };
    int32_t ms = 3723004; /* 01:02:03.004 */
    expect_json(&t, &ms, 4, "\"01:02:03.004\"");
    /* INT96: nanoseconds of the day, then the Julian day (2440589 = 1970-01-02) */
    ix_value_type i96 = { .kind = IX_KIND_TIMESTAMP, .physical = PQ_INT96 };
    uint8_t v[12] = { 0 };
    v[0] = 1; /* 1 ns */
    uint32_t jd = 2440589;
    memcpy(v + 8, &jd, 4);
    expect_json(&i96, v, 12, "\"1970-01-02T00:00:00.000000001\"");
}

Test(value, raw_conversion_checks_ranges)
{
    ix_value_type i64 = { .kind = IX_KIND_INT, .physical = PQ_INT64, .bits = 64 };
    int64_t big = 70000, neg = -1;
    ix_number n;
    pq_error err;
    uint8_t out[8];
    cr_assert_eq(ix_number_of(&i64, (pq_bytes){ (const uint8_t *)&big, 8 }, &n, &err), 0);
    cr_assert_eq(ix_number_write(&n, IX_DT_U32, out, &err), 0);
    cr_assert_eq(out[0] | out[1] << 8 | out[2] << 16, 70000);
    cr_assert_eq(ix_number_write(&n, IX_DT_U16, out, &err), -1);
    cr_assert(strstr(err.msg, "70000") && strstr(err.msg, "u16"), "%s", err.msg);
    cr_assert_eq(ix_number_of(&i64, (pq_bytes){ (const uint8_t *)&neg, 8 }, &n, &err), 0);
    cr_assert_eq(ix_number_write(&n, IX_DT_U8, out, &err), -1);
    cr_assert_eq(ix_number_write(&n, IX_DT_I8, out, &err), 0);
    cr_assert_eq(out[0], 0xff);
    cr_assert_eq(ix_number_write(&n, IX_DT_F32, out, &err), 0, "small ints are exact floats");
    ix_number huge = { .i = (1ll << 53) + 1 };
    cr_assert_eq(ix_number_write(&huge, IX_DT_F64, out, &err), -1, "2^53+1 is not a double");
    ix_value_type dbl = { .kind = IX_KIND_FLOAT, .physical = PQ_DOUBLE };
    cr_assert_eq(ix_dtype_accepts(&dbl, IX_DT_I32, &err), -1);
    ix_value_type str = { .kind = IX_KIND_STRING, .physical = PQ_BYTE_ARRAY };
    ix_dtype dt;
    cr_assert_eq(ix_dtype_default(&str, &dt, &err), -1);
}
