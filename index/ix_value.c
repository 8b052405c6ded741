#include "ix_value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Days from 1970-01-01 to the Julian day number INT96 timestamps count. */
#define UNIX_EPOCH_JULIAN_DAY 2440588

ix_value_type ix_value_type_of(const pq_leaf *leaf)
{
    const pq_logical *l = &leaf->logical;
    ix_value_type t = { .physical = leaf->type, .scale = l->scale, .unit = l->unit,
                        .utc = l->utc };
    switch (l->kind) {
    case PQ_LOGICAL_STRING: t.kind = IX_KIND_STRING; return t;
    case PQ_LOGICAL_DECIMAL: t.kind = IX_KIND_DECIMAL; return t;
    case PQ_LOGICAL_DATE: t.kind = IX_KIND_DATE; return t;
    case PQ_LOGICAL_TIME: t.kind = IX_KIND_TIME; return t;
    case PQ_LOGICAL_TIMESTAMP: t.kind = IX_KIND_TIMESTAMP; return t;
    case PQ_LOGICAL_UUID: t.kind = IX_KIND_UUID; return t;
    case PQ_LOGICAL_FLOAT16: t.kind = IX_KIND_FLOAT; return t;
    case PQ_LOGICAL_INTEGER:
        t.kind = l->is_signed ? IX_KIND_INT : IX_KIND_UINT;
        t.bits = l->bit_width;
        return t;
    default:
        break;
    }
    switch (leaf->type) {
    case PQ_BOOLEAN: t.kind = IX_KIND_BOOL; break;
    case PQ_INT32: t.kind = IX_KIND_INT; t.bits = 32; break;
    case PQ_INT64: t.kind = IX_KIND_INT; t.bits = 64; break;
    case PQ_FLOAT: case PQ_DOUBLE: t.kind = IX_KIND_FLOAT; break;
    case PQ_INT96: t.kind = IX_KIND_TIMESTAMP; t.unit = PQ_UNIT_NANOS; break;
    default: t.kind = IX_KIND_BINARY; break;
    }
    return t;
}

int ix_value_is_text(const ix_value_type *t)
{
    return t->kind == IX_KIND_STRING || t->kind == IX_KIND_BINARY;
}

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Python's repr of a double: the shortest digits that read back as x, in
 * fixed notation for decimal exponents -4..15 (with at least one digit
 * after the point), else d.ddde+XX. */
static int float_repr(double x, char *buf)
{
    if (isnan(x))
        return sprintf(buf, "NaN");
    if (isinf(x))
        return sprintf(buf, x > 0 ? "Infinity" : "-Infinity");
    if (x == 0)
        return sprintf(buf, signbit(x) ? "-0.0" : "0.0");
    char sci[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(sci, sizeof sci, "%.*e", p - 1, x);
        if (strtod(sci, NULL) == x)
            break;
    }
    /* sci is [-]d[.ddd]e(+|-)XX: take the digits and the exponent */
    char digits[24];
    int n = 0, neg = sci[0] == '-';
    const char *s = sci + neg;
    for (; *s != 'e'; s++)
        if (*s != '.')
            digits[n++] = *s;
    int exp = atoi(s + 1);
    char *out = buf;
    if (neg)
        *out++ = '-';
    if (exp < -4 || exp >= 16) {
        *out++ = digits[0];
        if (n > 1) {
            *out++ = '.';
            memcpy(out, digits + 1, (size_t)n - 1);
            out += n - 1;
        }
        out += sprintf(out, "e%c%02d", exp < 0 ? '-' : '+', abs(exp));
    } else if (exp >= 0) {
        for (int i = 0; i <= exp || i < n; i++) {
            if (i == exp + 1)
                *out++ = '.';
            *out++ = i < n ? digits[i] : '0';
        }
        if (n <= exp + 1)
            out += sprintf(out, ".0");
    } else {
        out += sprintf(out, "0.");
        for (int i = 0; i < -exp - 1; i++)
            *out++ = '0';
        memcpy(out, digits, (size_t)n);
        out += n;
    }
    *out = '\0';
    return (int)(out - buf);
}

static double half_to_double(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v;
    if (exp == 0)
        v = ldexp(mant, -24); /* subnormal */
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexp(mant + 1024, exp - 25);
    return sign ? -v : v;
}

/* Decimal digits of the unscaled value: a little-endian INT32/INT64, or
 * big-endian two's complement bytes (FIXED_LEN_BYTE_ARRAY, BYTE_ARRAY). */
static int decimal_digits(const ix_value_type *t, pq_bytes v, char *digits, int *neg,
                          pq_error *err)
{
    uint8_t mag[IX_DECIMAL_MAX_BYTES];
    size_t n = v.len;
    if (t->physical == PQ_INT32 || t->physical == PQ_INT64) {
        for (size_t i = 0; i < n; i++) /* to big-endian */
            mag[i] = v.ptr[n - 1 - i];
    } else {
        if (n > IX_DECIMAL_MAX_BYTES)
            return pq_error_set(err, "a %u-byte decimal is longer than the %d bytes supported",
                                v.len, IX_DECIMAL_MAX_BYTES);
        memcpy(mag, v.ptr, n);
    }
    *neg = n > 0 && (mag[0] & 0x80);
    if (*neg) { /* two's complement negation: invert, add one */
        int carry = 1;
        for (size_t i = n; i-- > 0;) {
            int b = (uint8_t)~mag[i] + carry;
            mag[i] = (uint8_t)b;
            carry = b >> 8;
        }
    }
    /* Repeated division by 10 of the base-256 number, least digit first. */
    int len = 0;
    size_t first = 0;
    do {
        while (first < n && mag[first] == 0)
            first++;
        unsigned rem = 0;
        for (size_t i = first; i < n; i++) {
            unsigned cur = rem << 8 | mag[i];
            mag[i] = (uint8_t)(cur / 10);
            rem = cur % 10;
        }
        digits[len++] = (char)('0' + rem);
        while (first < n && mag[first] == 0)
            first++;
    } while (first < n);
    for (int i = 0; i < len / 2; i++) { /* most significant first */
        char c = digits[i];
        digits[i] = digits[len - 1 - i];
        digits[len - 1 - i] = c;
    }
    digits[len] = '\0';
    return len;
}

static int decimal_text(const ix_value_type *t, pq_bytes v, char *buf, pq_error *err)
{
    char digits[IX_DECIMAL_MAX_BYTES * 3 + 2];
    int neg = 0, n = decimal_digits(t, v, digits, &neg, err);
    if (n < 0)
        return -1;
    int32_t scale = t->scale;
    int int_digits = scale > 0 ? (n > scale ? n - scale : 1) : n;
    long total = neg + int_digits + (scale > 0 ? 1 + scale : -(long)scale);
    if (scale < 0 && n == 1 && digits[0] == '0')
        total = 1 + neg; /* zero stays 0 */
    if (total >= IX_JSON_SCALAR_MAX)
        return pq_error_set(err, "decimal with scale %d does not fit in %d characters", scale,
                            IX_JSON_SCALAR_MAX);
    char *out = buf;
    if (neg)
        *out++ = '-';
    if (scale <= 0) {
        memcpy(out, digits, (size_t)n);
        out += n;
        for (int i = 0; i < -scale && !(n == 1 && digits[0] == '0'); i++)
            *out++ = '0';
    } else {
        int pad = scale + 1 - n; /* leading zeros: 0.05 */
        for (int i = 0; i < pad; i++) {
            *out++ = '0';
            if (i == 0)
                *out++ = '.';
        }
        for (int i = 0; i < n; i++) {
            if (pad <= 0 && i == n - scale)
                *out++ = '.';
            *out++ = digits[i];
        }
    }
    *out = '\0';
    return (int)(out - buf);
}

/* Proleptic Gregorian civil date of a day count from 1970-01-01: the days
 * are shifted to an era starting 0000-03-01 so leap days fall at the end of
 * a year, then split into 400-year eras, years, and month/day by the
 * 153-day five-month cycle of month lengths from March. */
static void civil_date(int64_t days, int64_t *y, int *m, int *d)
{
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static int date_text(int64_t days, char *buf)
{
    int64_t y;
    int m, d;
    civil_date(days, &y, &m, &d);
    return sprintf(buf, "%04lld-%02d-%02d", (long long)y, m, d);
}

static const int64_t PER_SECOND[] = { 1, 1000, 1000000, 1000000000 };
static const int FRACTION_DIGITS[] = { 0, 3, 6, 9 };

/* HH:MM:SS.fff of a count of `unit` since midnight (0 <= v < a day). */
static int time_text(int64_t v, int unit, char *buf)
{
    int64_t per_s = PER_SECOND[unit], s = v / per_s;
    return sprintf(buf, "%02lld:%02lld:%02lld.%0*lld", (long long)(s / 3600),
                   (long long)(s / 60 % 60), (long long)(s % 60), FRACTION_DIGITS[unit],
                   (long long)(v % per_s));
}

/* floor division, for instants before 1970 */
static int64_t floor_div(int64_t a, int64_t b, int64_t *rem)
{
    int64_t q = a / b, r = a % b;
    if (r < 0) {
        q--;
        r += b;
    }
    *rem = r;
    return q;
}

static int timestamp_text(int64_t days, int64_t in_day, int unit, int utc, char *buf)
{
    int n = sprintf(buf, "\"");
    n += date_text(days, buf + n);
    buf[n++] = 'T';
    n += time_text(in_day, unit, buf + n);
    return n + sprintf(buf + n, "%s\"", utc ? "Z" : "");
}

static int expect_width(pq_bytes v, uint32_t want, pq_error *err)
{
    if (v.len != want)
        return pq_error_set(err, "value of %u bytes where %u were expected", v.len, want);
    return 0;
}

static int physical_width(int physical)
{
    switch (physical) {
    case PQ_BOOLEAN: return 1;
    case PQ_INT32: case PQ_FLOAT: return 4;
    case PQ_INT64: case PQ_DOUBLE: return 8;
    case PQ_INT96: return 12;
    }
    return 0;
}

int ix_json_scalar(const ix_value_type *t, pq_bytes v, char *buf, pq_error *err)
{
    int width = physical_width(t->physical);
    if (width && expect_width(v, (uint32_t)width, err) < 0)
        return -1;
    const uint8_t *p = v.ptr;
    switch (t->kind) {
    case IX_KIND_BOOL:
        return sprintf(buf, p[0] ? "true" : "false");
    case IX_KIND_INT:
        return sprintf(buf, "%lld", width == 4 ? (long long)(int32_t)le(p, 4)
                                              : (long long)(int64_t)le(p, 8));
    case IX_KIND_UINT:
        return sprintf(buf, "%llu", (unsigned long long)le(p, width));
    case IX_KIND_FLOAT: {
        double x;
        if (t->physical == PQ_FIXED_LEN_BYTE_ARRAY) {
            if (expect_width(v, 2, err) < 0)
                return -1;
            x = half_to_double((uint16_t)le(p, 2));
        } else if (width == 4) {
            uint32_t bits = (uint32_t)le(p, 4);
            float f;
            memcpy(&f, &bits, sizeof f);
            x = f;
        } else {
            uint64_t bits = le(p, 8);
            memcpy(&x, &bits, sizeof x);
        }
        return float_repr(x, buf);
    }
    case IX_KIND_DECIMAL:
        return decimal_text(t, v, buf, err);
    case IX_KIND_DATE: {
        int n = sprintf(buf, "\"");
        n += date_text((int32_t)le(p, 4), buf + n);
        return n + sprintf(buf + n, "\"");
    }
    case IX_KIND_TIME: {
        int64_t x = width == 4 ? (int32_t)le(p, 4) : (int64_t)le(p, 8);
        int unit = t->unit ? t->unit : PQ_UNIT_MILLIS;
        if (x < 0 || x >= 86400 * PER_SECOND[unit])
            return pq_error_set(err, "time of day %lld is outside a day", (long long)x);
        int n = sprintf(buf, "\"");
        n += time_text(x, unit, buf + n);
        return n + sprintf(buf + n, "\"");
    }
    case IX_KIND_TIMESTAMP: {
        int64_t days, in_day;
        if (t->physical == PQ_INT96) { /* nanoseconds of the day, then the Julian day */
            in_day = (int64_t)le(p, 8);
            days = (int64_t)(int32_t)le(p + 8, 4) - UNIX_EPOCH_JULIAN_DAY;
            if (in_day < 0 || in_day >= 86400 * PER_SECOND[PQ_UNIT_NANOS])
                return pq_error_set(err, "INT96 timestamp with %lld ns in a day",
                                    (long long)in_day);
            return timestamp_text(days, in_day, PQ_UNIT_NANOS, 0, buf);
        }
        int unit = t->unit ? t->unit : PQ_UNIT_MILLIS;
        days = floor_div((int64_t)le(p, 8), 86400 * PER_SECOND[unit], &in_day);
        return timestamp_text(days, in_day, unit, t->utc, buf);
    }
    case IX_KIND_UUID: {
        if (expect_width(v, 16, err) < 0)
            return -1;
        static const char hex[] = "0123456789abcdef";
        char *out = buf;
        *out++ = '"';
        for (int i = 0; i < 16; i++) { /* 8-4-4-4-12 hex digits */
            if (i == 4 || i == 6 || i == 8 || i == 10)
                *out++ = '-';
            *out++ = hex[p[i] >> 4];
            *out++ = hex[p[i] & 15];
        }
        *out++ = '"';
        *out = '\0';
        return (int)(out - buf);
    }
    case IX_KIND_STRING:
    case IX_KIND_BINARY:
        break;
    }
    return pq_error_set(err, "text values are not scalars");
}
