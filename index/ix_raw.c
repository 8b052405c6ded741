/* The raw framing's numbers: dtypes, the numeric value of a leaf value, and
 * checked conversion to a dtype (declared in ix_value.h). */
#include <math.h>
#include <string.h>

#include "ix_value.h"

static const struct {
    const char *name;
    size_t size;
    int is_float, is_signed;
} DTYPES[] = {
    [IX_DT_I8] = { "i8", 1, 0, 1 },   [IX_DT_U8] = { "u8", 1, 0, 0 },
    [IX_DT_I16] = { "i16", 2, 0, 1 }, [IX_DT_U16] = { "u16", 2, 0, 0 },
    [IX_DT_I32] = { "i32", 4, 0, 1 }, [IX_DT_U32] = { "u32", 4, 0, 0 },
    [IX_DT_I64] = { "i64", 8, 0, 1 }, [IX_DT_U64] = { "u64", 8, 0, 0 },
    [IX_DT_F32] = { "f32", 4, 1, 1 }, [IX_DT_F64] = { "f64", 8, 1, 1 },
};

int ix_dtype_parse(const char *name, ix_dtype *out)
{
    for (int dt = IX_DT_I8; dt <= IX_DT_F64; dt++) {
        if (strcmp(name, DTYPES[dt].name) == 0) {
            *out = (ix_dtype)dt;
            return 0;
        }
    }
    return -1;
}

const char *ix_dtype_name(ix_dtype dt)
{
    return dt == IX_DT_NONE ? "none" : DTYPES[dt].name;
}

size_t ix_dtype_size(ix_dtype dt)
{
    return dt == IX_DT_NONE ? 0 : DTYPES[dt].size;
}

static int is_integer_kind(const ix_value_type *t)
{
    return t->kind == IX_KIND_BOOL || t->kind == IX_KIND_INT || t->kind == IX_KIND_UINT ||
           t->kind == IX_KIND_DATE || t->kind == IX_KIND_TIME ||
           (t->kind == IX_KIND_TIMESTAMP && t->physical == PQ_INT64);
}

int ix_dtype_default(const ix_value_type *t, ix_dtype *out, pq_error *err)
{
    int wide = t->physical == PQ_INT64;
    switch (t->kind) {
    case IX_KIND_BOOL: *out = IX_DT_U8; return 0;
    case IX_KIND_INT:
        *out = t->bits == 8 ? IX_DT_I8 : t->bits == 16 ? IX_DT_I16 : wide ? IX_DT_I64 : IX_DT_I32;
        return 0;
    case IX_KIND_UINT:
        *out = t->bits == 8 ? IX_DT_U8 : t->bits == 16 ? IX_DT_U16 : wide ? IX_DT_U64 : IX_DT_U32;
        return 0;
    case IX_KIND_FLOAT: *out = t->physical == PQ_DOUBLE ? IX_DT_F64 : IX_DT_F32; return 0;
    case IX_KIND_DATE: case IX_KIND_TIME: case IX_KIND_TIMESTAMP:
        if (is_integer_kind(t)) {
            *out = wide ? IX_DT_I64 : IX_DT_I32;
            return 0;
        }
        break;
    default:
        break;
    }
    return pq_error_set(err, "format=raw writes numbers; this column holds %s values "
                        "(use format=jsonl)",
                        ix_value_is_text(t) ? "string or binary" : "non-numeric");
}

int ix_dtype_accepts(const ix_value_type *t, ix_dtype dt, pq_error *err)
{
    ix_dtype own;
    if (ix_dtype_default(t, &own, err) < 0)
        return -1;
    if (t->kind == IX_KIND_FLOAT && !DTYPES[dt].is_float)
        return pq_error_set(err, "dtype=%s: a floating-point column cannot be written as "
                            "integers (use f32 or f64)", DTYPES[dt].name);
    return 0;
}

static uint64_t le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

int ix_number_of(const ix_value_type *t, pq_bytes v, ix_number *out, pq_error *err)
{
    memset(out, 0, sizeof *out);
    size_t width = t->physical == PQ_BOOLEAN ? 1
                   : t->physical == PQ_INT32 || t->physical == PQ_FLOAT ? 4
                   : t->physical == PQ_INT64 || t->physical == PQ_DOUBLE ? 8 : 0;
    if (width == 0 || v.len != width)
        return pq_error_set(err, "value of %u bytes is not a number of this column", v.len);
    uint64_t bits = le(v.ptr, width);
    if (t->kind == IX_KIND_FLOAT) {
        out->is_float = 1;
        if (width == 4) {
            float f;
            uint32_t b32 = (uint32_t)bits;
            memcpy(&f, &b32, sizeof f);
            out->f = f;
        } else {
            memcpy(&out->f, &bits, sizeof out->f);
        }
    } else if (t->kind == IX_KIND_UINT || t->kind == IX_KIND_BOOL) {
        out->is_unsigned = 1;
        out->u = width == 4 ? (uint32_t)bits : bits;
    } else {
        out->i = width == 4 ? (int32_t)(uint32_t)bits : (int64_t)bits;
    }
    return 0;
}

static void put_le(uint64_t v, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)(v >> (8 * i));
}

int ix_number_write(const ix_number *n, ix_dtype dt, uint8_t *out, pq_error *err)
{
    size_t size = DTYPES[dt].size;
    if (DTYPES[dt].is_float) {
        double d;
        if (n->is_float) {
            d = n->f;
        } else {
            d = n->is_unsigned ? (double)n->u : (double)n->i;
            /* exactly representable, in the chosen width too */
            int exact = n->is_unsigned ? d < 18446744073709551616.0 && (uint64_t)d == n->u
                                       : d < 9223372036854775808.0 && (int64_t)d == n->i;
            if (!exact || (dt == IX_DT_F32 && (double)(float)d != d))
                return pq_error_set(err, "value %lld is not exactly representable as %s",
                                    n->is_unsigned ? (long long)n->u : (long long)n->i,
                                    DTYPES[dt].name);
        }
        if (dt == IX_DT_F32) {
            float f = (float)d;
            uint32_t bits;
            memcpy(&bits, &f, sizeof bits);
            put_le(bits, 4, out);
        } else {
            uint64_t bits;
            memcpy(&bits, &d, sizeof bits);
            put_le(bits, 8, out);
        }
        return 0;
    }
    if (n->is_float)
        return pq_error_set(err, "a floating-point value cannot be written as %s",
                            DTYPES[dt].name);
    int bits = (int)size * 8;
    if (DTYPES[dt].is_signed) {
        int64_t lo = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
        int64_t hi = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
        int fits = n->is_unsigned ? n->u <= (uint64_t)hi : n->i >= lo && n->i <= hi;
        if (!fits)
            goto range;
        put_le(n->is_unsigned ? n->u : (uint64_t)n->i, size, out);
    } else {
        uint64_t hi = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
        int fits = n->is_unsigned ? n->u <= hi : n->i >= 0 && (uint64_t)n->i <= hi;
        if (!fits)
            goto range;
        put_le(n->is_unsigned ? n->u : (uint64_t)n->i, size, out);
    }
    return 0;
range:
    if (n->is_unsigned)
        return pq_error_set(err, "value %llu does not fit dtype=%s", (unsigned long long)n->u,
                            DTYPES[dt].name);
    return pq_error_set(err, "value %lld does not fit dtype=%s", (long long)n->i,
                        DTYPES[dt].name);
}
