/* DELTA_BINARY_PACKED integers, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY. */
#include <stdlib.h>
#include <string.h>

#include "pq_cursor.h"
#include "pq_delta.h"
#include "pq_meta.h"
#include "pq_values.h"

static int64_t *alloc_i64(uint32_t n, pq_error *err)
{
    int64_t *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    if (!p)
        pq_error_set(err, "out of memory for %u delta-encoded integers", n);
    return p;
}

static void store_le(uint8_t *dst, uint64_t v, int bytes)
{
    for (int b = 0; b < bytes; b++)
        dst[b] = (uint8_t)(v >> (8 * b));
}

int pq_values_delta_int(const pq_column_desc *col, const uint8_t *buf, size_t len, uint32_t n,
                        pq_bytes *out, uint8_t **extra, size_t *extra_len, pq_error *err)
{
    if (col->type != PQ_INT32 && col->type != PQ_INT64)
        return pq_error_set(err, "DELTA_BINARY_PACKED is not defined for physical type %d",
                            col->type);
    int w = col->type == PQ_INT32 ? 4 : 8;
    int64_t *v = alloc_i64(n, err);
    if (!v)
        return -1;
    pq_cursor c = pq_cursor_make(buf, len);
    if (pq_delta_decode(&c, buf, n, v, err) < 0) {
        free(v);
        return -1;
    }
    /* Rewrite in place as little-endian bytes: value i moves to bytes
     * [i*w, i*w + w), which never overlaps a value not yet read. */
    uint8_t *bytes = (uint8_t *)v;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t x = (uint64_t)v[i];
        store_le(bytes + (size_t)i * w, x, w);
        out[i].ptr = bytes + (size_t)i * w;
        out[i].len = (uint32_t)w;
    }
    *extra = bytes;
    *extra_len = (size_t)n * (size_t)w;
    return 0;
}

int pq_values_delta_length(const uint8_t *buf, size_t len, uint32_t n, pq_bytes *out,
                           pq_error *err)
{
    int64_t *lens = alloc_i64(n, err);
    if (!lens)
        return -1;
    pq_cursor c = pq_cursor_make(buf, len);
    int rc = 0;
    if (pq_delta_decode(&c, buf, n, lens, err) < 0) {
        rc = pq_error_prefix(err, "DELTA_LENGTH_BYTE_ARRAY lengths: ");
    } else {
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *p;
            if (lens[i] < 0 || lens[i] > UINT32_MAX ||
                !pq_cursor_slice(&c, (size_t)lens[i], &p)) {
                rc = pq_error_set(err, "DELTA_LENGTH_BYTE_ARRAY: value %u at byte %zu has "
                                       "length %lld, %zu bytes left",
                                  i, len - c.left, (long long)lens[i], c.left);
                break;
            }
            out[i].ptr = p;
            out[i].len = (uint32_t)lens[i];
        }
    }
    free(lens);
    return rc;
}

/* Each value is the first prefix[i] bytes of the previous value followed by
 * suffix i; suffixes are a DELTA_LENGTH_BYTE_ARRAY after the prefix lengths. */
int pq_values_delta_bytes(const pq_column_desc *col, const uint8_t *buf, size_t len, uint32_t n,
                          pq_bytes *out, uint8_t **extra, size_t *extra_len, pq_error *err)
{
    if (col->type != PQ_BYTE_ARRAY && col->type != PQ_FIXED_LEN_BYTE_ARRAY)
        return pq_error_set(err, "DELTA_BYTE_ARRAY is not defined for physical type %d",
                            col->type);
    int64_t *prefix = alloc_i64(n, err);
    int64_t *suffix = prefix ? alloc_i64(n, err) : NULL;
    uint8_t *dst = NULL;
    int rc = -1;
    if (!suffix)
        goto done;
    pq_cursor c = pq_cursor_make(buf, len);
    if (pq_delta_decode(&c, buf, n, prefix, err) < 0) {
        pq_error_prefix(err, "DELTA_BYTE_ARRAY prefix lengths: ");
        goto done;
    }
    if (pq_delta_decode(&c, buf, n, suffix, err) < 0) {
        pq_error_prefix(err, "DELTA_BYTE_ARRAY suffix lengths: ");
        goto done;
    }

    /* First pass: validate every length and size the output. */
    uint64_t total = 0, suffix_total = 0, prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (prefix[i] < 0 || (uint64_t)prefix[i] > prev || suffix[i] < 0 ||
            suffix[i] > UINT32_MAX) {
            pq_error_set(err, "DELTA_BYTE_ARRAY: value %u has prefix %lld (previous value is "
                              "%llu bytes) and suffix %lld",
                         i, (long long)prefix[i], (unsigned long long)prev, (long long)suffix[i]);
            goto done;
        }
        uint64_t vlen = (uint64_t)prefix[i] + (uint64_t)suffix[i];
        if (vlen > UINT32_MAX || (col->type == PQ_FIXED_LEN_BYTE_ARRAY &&
                                  vlen != (uint64_t)col->type_length)) {
            pq_error_set(err, "DELTA_BYTE_ARRAY: value %u is %llu bytes long", i,
                         (unsigned long long)vlen);
            goto done;
        }
        total += vlen;
        suffix_total += (uint64_t)suffix[i];
        if (total > PQ_MAX_EXPANDED_PAGE_BYTES) {
            pq_error_set(err, "DELTA_BYTE_ARRAY: values expand to more than the %llu bytes "
                         "allowed for one page", (unsigned long long)PQ_MAX_EXPANDED_PAGE_BYTES);
            goto done;
        }
        prev = vlen;
    }
    if (suffix_total > c.left) {
        pq_error_set(err, "DELTA_BYTE_ARRAY: suffixes need %llu bytes at byte %zu, %zu left",
                     (unsigned long long)suffix_total, len - c.left, c.left);
        goto done;
    }

    if (!(dst = malloc(total ? (size_t)total : 1))) {
        pq_error_set(err, "out of memory for %llu bytes of values", (unsigned long long)total);
        goto done;
    }
    size_t pos = 0;
    const uint8_t *prev_ptr = dst;
    for (uint32_t i = 0; i < n; i++) {
        size_t p = (size_t)prefix[i], s = (size_t)suffix[i];
        const uint8_t *src = c.p; /* in bounds: checked against suffix_total */
        pq_cursor_skip(&c, s);
        memmove(dst + pos, prev_ptr, p);
        memcpy(dst + pos + p, src, s);
        out[i].ptr = dst + pos;
        out[i].len = (uint32_t)(p + s);
        prev_ptr = dst + pos;
        pos += p + s;
    }
    *extra = dst;
    *extra_len = (size_t)total;
    dst = NULL;
    rc = 0;
done:
    free(dst);
    free(prefix);
    free(suffix);
    return rc;
}
