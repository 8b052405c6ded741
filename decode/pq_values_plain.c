/* PLAIN, dictionary, RLE boolean and BYTE_STREAM_SPLIT value decoders. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "pq_bitpack.h"
#include "pq_cursor.h"
#include "pq_meta.h"
#include "pq_rle.h"
#include "pq_values.h"

int64_t pq_value_width(const pq_column_desc *col)
{
    switch (col->type) {
    case PQ_BOOLEAN: return 1;
    case PQ_INT32: case PQ_FLOAT: return 4;
    case PQ_INT64: case PQ_DOUBLE: return 8;
    case PQ_INT96: return 12;
    case PQ_BYTE_ARRAY: return 0;
    case PQ_FIXED_LEN_BYTE_ARRAY: return col->type_length > 0 ? col->type_length : -1;
    default: return -1;
    }
}

/* BYTE_ARRAY: 4-byte little-endian length, then the bytes. One pass. */
static int plain_byte_array(const uint8_t *buf, size_t len, uint32_t n, pq_bytes *out,
                            pq_error *err)
{
    pq_cursor c = pq_cursor_make(buf, len);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t vlen;
        const uint8_t *p;
        if (!pq_cursor_le32(&c, &vlen))
            return pq_error_set(err, "PLAIN BYTE_ARRAY: length of value %u of %u at byte %zu "
                                     "is truncated (%zu bytes left)",
                                i, n, len - c.left, c.left);
        if (!pq_cursor_slice(&c, vlen, &p))
            return pq_error_set(err, "PLAIN BYTE_ARRAY: value %u of %u at byte %zu declares "
                                     "%u bytes, %zu left",
                                i, n, len - c.left - 4, vlen, c.left);
        out[i].ptr = p;
        out[i].len = vlen;
    }
    return 0;
}

int pq_values_plain(const pq_column_desc *col, const uint8_t *buf, size_t len, uint32_t n,
                    pq_bytes *out, uint8_t *bools, pq_error *err)
{
    int64_t w = pq_value_width(col);
    if (w < 0)
        return pq_error_set(err, "PLAIN: unsupported physical type %d (type_length %d)",
                            col->type, col->type_length);
    if (col->type == PQ_BYTE_ARRAY)
        return plain_byte_array(buf, len, n, out, err);
    if (col->type == PQ_BOOLEAN) {
        /* One bit per value, LSB first, as in the RLE hybrid's bit-packing. */
        size_t need = pq_packed_bytes(n, 1);
        if (need > len)
            return pq_error_set(err, "PLAIN BOOLEAN: %u values need %zu bytes, %zu present", n,
                                need, len);
        for (uint32_t i = 0; i < n; i++) {
            bools[i] = (buf[i >> 3] >> (i & 7)) & 1;
            out[i].ptr = bools + i;
            out[i].len = 1;
        }
        return 0;
    }
    uint64_t need = (uint64_t)n * (uint64_t)w;
    if (need > len)
        return pq_error_set(err, "PLAIN: %u values of %lld bytes need %llu bytes, %zu present",
                            n, (long long)w, (unsigned long long)need, len);
    for (uint32_t i = 0; i < n; i++) {
        out[i].ptr = buf + (size_t)i * (size_t)w;
        out[i].len = (uint32_t)w;
    }
    return 0;
}

/* One byte of bit width, then the RLE hybrid of n indices (no length
 * prefix), decoded into idx and checked against the dictionary. */
static int dict_indices(const uint8_t *buf, size_t len, uint32_t n, const pq_dictionary *dict,
                        uint32_t *idx, pq_error *err)
{
    if (!dict)
        return pq_error_set(err, "values are dictionary-encoded but the column chunk has no "
                                 "dictionary page");
    if (n == 0)
        return 0;
    if (len < 1)
        return pq_error_set(err, "dictionary indices: bit width byte is missing");
    int bw = buf[0];
    if (bw > 32)
        return pq_error_set(err, "dictionary indices: bit width %d is more than 32", bw);
    if (pq_rle_decode(buf + 1, len - 1, bw, n, idx, err) < 0)
        return pq_error_prefix(err, "dictionary indices: ");
    for (uint32_t i = 0; i < n; i++)
        if (idx[i] >= dict->count)
            return pq_error_set(err, "dictionary index %u of value %u is out of range "
                                     "(dictionary has %u entries)",
                                idx[i], i, dict->count);
    return 0;
}

int pq_values_dict(const uint8_t *buf, size_t len, uint32_t n, const pq_dictionary *dict,
                   pq_bytes *out, pq_error *err)
{
    /* The indices are decoded into out itself, checked, and expanded from
     * the last down: a slice is at least as wide as an index, so slice i
     * covers only indices >= i, all read by then (on 64-bit, 16 bytes cover
     * indices 4i..4i+3). No scratch array per page. */
    _Static_assert(sizeof *out >= sizeof(uint32_t), "a slice holds an index");
    uint32_t *idx = (uint32_t *)(void *)out;
    if (dict_indices(buf, len, n, dict, idx, err) < 0)
        return -1;
    for (uint32_t i = n; i-- > 0;)
        out[i] = dict->values[idx[i]];
    return 0;
}

int pq_values_dict_packed(const uint8_t *buf, size_t len, uint32_t n, const pq_dictionary *dict,
                          uint32_t width, uint8_t *out, pq_error *err)
{
    uint32_t *idx = (uint32_t *)(void *)out;
    if (dict_indices(buf, len, n, dict, idx, err) < 0)
        return -1;
    /* Expanded in place: value i takes bytes [i * width, (i + 1) * width),
     * index i bytes [4i, 4i + 4). Wider than an index, value i covers only
     * indices >= i, so the last goes first; narrower, only indices <= i, so
     * the first goes first. Either way each index is read before it is
     * overwritten. */
    int last_first = width >= sizeof *idx;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = last_first ? n - 1 - k : k;
        assert(dict->values[idx[i]].len == width);
        memcpy(out + (size_t)i * width, dict->values[idx[i]].ptr, width);
    }
    return 0;
}

int pq_values_rle_bool(const uint8_t *buf, size_t len, uint32_t n, pq_bytes *out,
                       uint8_t **extra, size_t *extra_len, pq_error *err)
{
    pq_cursor c = pq_cursor_make(buf, len);
    uint32_t rle_len;
    const uint8_t *rle;
    if (!pq_cursor_le32(&c, &rle_len) || !pq_cursor_slice(&c, rle_len, &rle))
        return pq_error_set(err, "RLE BOOLEAN: length prefix is truncated or larger than "
                                 "the %zu bytes present",
                            len);
    uint32_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    uint8_t *bools = malloc(n ? n : 1);
    if (!v || !bools) {
        free(v);
        free(bools);
        return pq_error_set(err, "out of memory for %u booleans", n);
    }
    if (pq_rle_decode(rle, rle_len, 1, n, v, err) < 0) {
        free(v);
        free(bools);
        return pq_error_prefix(err, "RLE BOOLEAN: ");
    }
    for (uint32_t i = 0; i < n; i++) {
        bools[i] = (uint8_t)v[i];
        out[i].ptr = bools + i;
        out[i].len = 1;
    }
    free(v);
    *extra = bools;
    *extra_len = n;
    return 0;
}

/* K = width streams of n bytes each; byte k of value i is stream k, byte i. */
int pq_values_byte_stream_split(const pq_column_desc *col, const uint8_t *buf, size_t len,
                                uint32_t n, pq_bytes *out, uint8_t **extra, size_t *extra_len,
                                pq_error *err)
{
    int64_t w = pq_value_width(col);
    if (w <= 0 || col->type == PQ_BOOLEAN || col->type == PQ_INT96)
        return pq_error_set(err, "BYTE_STREAM_SPLIT is not defined for physical type %d",
                            col->type);
    uint64_t total = (uint64_t)n * (uint64_t)w;
    if (total != len)
        return pq_error_set(err, "BYTE_STREAM_SPLIT: %u values of %lld bytes need exactly "
                                 "%llu bytes, the section has %zu",
                            n, (long long)w, (unsigned long long)total, len);
    uint8_t *dst = malloc(total ? (size_t)total : 1);
    if (!dst)
        return pq_error_set(err, "out of memory for %llu bytes of values",
                            (unsigned long long)total);
    size_t width = (size_t)w;
    for (size_t k = 0; k < width; k++) {
        const uint8_t *stream = buf + k * n;
        for (size_t i = 0; i < n; i++)
            dst[i * width + k] = stream[i];
    }
    for (uint32_t i = 0; i < n; i++) {
        out[i].ptr = dst + (size_t)i * width;
        out[i].len = (uint32_t)width;
    }
    *extra = dst;
    *extra_len = (size_t)total;
    return 0;
}
