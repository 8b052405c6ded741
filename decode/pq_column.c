/* Page decoding: decompression, levels, and dispatch to the value decoders
 * of pq_values_*.c. */
#include "pq_column.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "pq_codec.h"
#include "pq_cursor.h"
#include "pq_meta.h"
#include "pq_rle.h"
#include "pq_values.h"

static const char *encoding_name(int e)
{
    switch (e) {
    case PQ_ENC_PLAIN: return "PLAIN";
    case PQ_ENC_PLAIN_DICTIONARY: return "PLAIN_DICTIONARY";
    case PQ_ENC_RLE: return "RLE";
    case PQ_ENC_BIT_PACKED: return "BIT_PACKED";
    case PQ_ENC_DELTA_BINARY_PACKED: return "DELTA_BINARY_PACKED";
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY: return "DELTA_LENGTH_BYTE_ARRAY";
    case PQ_ENC_DELTA_BYTE_ARRAY: return "DELTA_BYTE_ARRAY";
    case PQ_ENC_RLE_DICTIONARY: return "RLE_DICTIONARY";
    case PQ_ENC_BYTE_STREAM_SPLIT: return "BYTE_STREAM_SPLIT";
    default: return "unknown";
    }
}

/* Checks common to dictionary and data pages: declared sizes within limits
 * and the body at least as long as the header says. */
static int check_sizes(const pq_page_header *h, size_t body_len, const char *what,
                       pq_error *err)
{
    if (h->num_values < 0 || (uint32_t)h->num_values > PQ_MAX_PAGE_VALUES)
        return pq_error_set(err, "%s: %d values is outside 0..%u", what, h->num_values,
                            PQ_MAX_PAGE_VALUES);
    if (h->uncompressed_size < 0 || (size_t)h->uncompressed_size > PQ_MAX_PAGE_BYTES ||
        h->compressed_size < 0)
        return pq_error_set(err, "%s: sizes out of range (uncompressed %d, compressed %d)",
                            what, h->uncompressed_size, h->compressed_size);
    if (body_len < (size_t)h->compressed_size)
        return pq_error_set(err, "%s: body is %zu bytes, header says %d", what, body_len,
                            h->compressed_size);
    return 0;
}

int pq_dictionary_decode(const pq_column_desc *col, const pq_page_header *h, const uint8_t *body,
                         size_t body_len, pq_dictionary *out, pq_error *err)
{
    memset(out, 0, sizeof *out);
    if (h->type != PQ_PAGE_DICTIONARY)
        return pq_error_set(err, "dictionary page: page type is %d, not a dictionary", h->type);
    if (check_sizes(h, body_len, "dictionary page", err) < 0)
        return -1;
    if (h->encoding != PQ_ENC_PLAIN && h->encoding != PQ_ENC_PLAIN_DICTIONARY)
        return pq_error_set(err, "dictionary page: encoding %s (%d) is not PLAIN",
                            encoding_name(h->encoding), h->encoding);
    uint32_t n = (uint32_t)h->num_values;
    size_t ulen = (size_t)h->uncompressed_size;
    /* BOOLEAN values are materialised as bytes after the decompressed page. */
    size_t bools = col->type == PQ_BOOLEAN ? n : 0;
    out->storage = malloc(ulen + bools ? ulen + bools : 1);
    out->values = malloc((size_t)(n ? n : 1) * sizeof *out->values);
    if (!out->storage || !out->values) {
        pq_dictionary_free(out);
        return pq_error_set(err, "dictionary page: out of memory for %u entries", n);
    }
    out->storage_len = ulen + bools;
    if (pq_decompress(col->codec, body, (size_t)h->compressed_size, out->storage, ulen, err) <
            0 ||
        pq_values_plain(col, out->storage, ulen, n, out->values, out->storage + ulen, err) < 0) {
        pq_dictionary_free(out);
        return pq_error_prefix(err, "dictionary page: ");
    }
    out->count = n;
    return 0;
}

void pq_dictionary_free(pq_dictionary *d)
{
    if (!d)
        return;
    free(d->values);
    free(d->storage);
    memset(d, 0, sizeof *d);
}

size_t pq_dictionary_bytes(const pq_dictionary *d)
{
    return d->storage_len + (size_t)d->count * sizeof *d->values;
}

/* Deprecated BIT_PACKED levels (v1 only): no length prefix, values packed
 * from the most significant bit of each byte. */
static int levels_bit_packed(pq_cursor *c, int bw, uint32_t n, uint32_t *out, pq_error *err)
{
    size_t need = ((size_t)n * (size_t)bw + 7) / 8;
    const uint8_t *p;
    if (!pq_cursor_slice(c, need, &p))
        return pq_error_set(err, "BIT_PACKED levels need %zu bytes, %zu left", need, c->left);
    size_t bit = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = 0;
        for (int b = 0; b < bw; b++, bit++)
            v = v << 1 | ((p[bit >> 3] >> (7 - (bit & 7))) & 1);
        out[i] = v;
    }
    return 0;
}

/* Decode n levels with maximum max into levels[], via scratch. v1 RLE levels
 * carry a 4-byte length prefix; v2 levels are exactly the given section. */
static int decode_levels(pq_cursor *c, int v1, int encoding, int max, uint32_t n,
                         uint32_t *scratch, uint16_t *levels, const char *what, pq_error *err)
{
    int bw = pq_bit_width((uint32_t)max);
    if (v1 && encoding == PQ_ENC_BIT_PACKED) {
        if (levels_bit_packed(c, bw, n, scratch, err) < 0)
            return pq_error_prefix(err, "%s: ", what);
    } else if (v1 && encoding != PQ_ENC_RLE) {
        return pq_error_set(err, "%s: encoding %s (%d) is not RLE or BIT_PACKED", what,
                            encoding_name(encoding), encoding);
    } else {
        uint32_t len = (uint32_t)c->left;
        const uint8_t *p;
        if (v1 && !pq_cursor_le32(c, &len))
            return pq_error_set(err, "%s: 4-byte length is truncated (%zu bytes left)", what,
                                c->left);
        if (!pq_cursor_slice(c, len, &p))
            return pq_error_set(err, "%s: length %u exceeds the %zu bytes left", what, len,
                                c->left);
        if (pq_rle_decode(p, len, bw, n, scratch, err) < 0)
            return pq_error_prefix(err, "%s: ", what);
    }
    for (uint32_t i = 0; i < n; i++) {
        if (scratch[i] > (uint32_t)max)
            return pq_error_set(err, "%s: level %u of entry %u exceeds the maximum %d", what,
                                scratch[i], i, max);
        levels[i] = (uint16_t)scratch[i];
    }
    return 0;
}

static int decode_values(const pq_column_desc *col, int encoding, const uint8_t *buf,
                         size_t len, const pq_dictionary *dict, pq_page_values *out,
                         pq_error *err)
{
    uint32_t n = out->num_values;
    switch (encoding) {
    case PQ_ENC_PLAIN:
        if (col->type == PQ_BOOLEAN) {
            if (!(out->extra = malloc(n ? n : 1)))
                return pq_error_set(err, "out of memory for %u booleans", n);
            out->extra_len = n;
        }
        return pq_values_plain(col, buf, len, n, out->values, out->extra, err);
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY:
        return pq_values_dict(buf, len, n, dict, out->values, err);
    case PQ_ENC_RLE:
        if (col->type != PQ_BOOLEAN)
            break;
        return pq_values_rle_bool(buf, len, n, out->values, &out->extra, &out->extra_len, err);
    case PQ_ENC_DELTA_BINARY_PACKED:
        return pq_values_delta_int(col, buf, len, n, out->values, &out->extra, &out->extra_len,
                                   err);
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
        if (col->type != PQ_BYTE_ARRAY)
            break;
        return pq_values_delta_length(buf, len, n, out->values, err);
    case PQ_ENC_DELTA_BYTE_ARRAY:
        return pq_values_delta_bytes(col, buf, len, n, out->values, &out->extra,
                                     &out->extra_len, err);
    case PQ_ENC_BYTE_STREAM_SPLIT:
        return pq_values_byte_stream_split(col, buf, len, n, out->values, &out->extra,
                                           &out->extra_len, err);
    default:
        break;
    }
    return pq_error_set(err, "value encoding %s (%d) is not supported for physical type %d",
                        encoding_name(encoding), encoding, col->type);
}

uint32_t pq_packed_width(const pq_column_desc *col)
{
    int64_t w = pq_value_width(col);
    return col->type == PQ_BOOLEAN || w <= 0 || w > INT32_MAX ? 0 : (uint32_t)w;
}

/* The bytes of out's n slices, each width wide, packed into a buffer of its
 * own (the encodings whose decoders produce slices: DELTA_BINARY_PACKED and
 * BYTE_STREAM_SPLIT materialise their values anyway). */
static int pack_slices(pq_page_values *out, uint32_t width, pq_error *err)
{
    uint32_t n = out->num_values;
    uint8_t *packed = malloc(n ? (size_t)n * width : 1);
    if (!packed)
        return pq_error_set(err, "out of memory for %u values", n);
    for (uint32_t i = 0; i < n; i++) {
        assert(out->values[i].len == width);
        memcpy(packed + (size_t)i * width, out->values[i].ptr, width);
    }
    free(out->values);
    free(out->extra);
    out->values = NULL;
    out->extra = packed;
    out->extra_len = (size_t)n * width;
    out->packed = packed;
    out->width = width;
    return 0;
}

/* The values of a packed column (pq_packed_width), with out->extra holding
 * n_entries * max(width, 4) bytes (the levels' scratch until now): PLAIN
 * values are used where they lie, dictionary values gathered into extra;
 * other encodings decode to slices, then are packed. */
static int decode_packed(const pq_column_desc *col, int encoding, const uint8_t *buf,
                         size_t len, const pq_dictionary *dict, pq_page_values *out,
                         uint32_t width, pq_error *err)
{
    uint32_t n = out->num_values;
    size_t bytes = (size_t)n * width;
    if (encoding == PQ_ENC_PLAIN) {
        if (bytes > len)
            return pq_error_set(err, "PLAIN: %u values of %u bytes need %zu bytes, %zu present",
                                n, width, bytes, len);
        free(out->extra);
        out->extra = NULL;
        out->extra_len = 0;
        out->packed = buf;
    } else if (encoding == PQ_ENC_PLAIN_DICTIONARY || encoding == PQ_ENC_RLE_DICTIONARY) {
        if (pq_values_dict_packed(buf, len, n, dict, width, out->extra, err) < 0)
            return -1;
        uint8_t *fit = realloc(out->extra, bytes ? bytes : 1); /* shrinking */
        if (fit)
            out->extra = fit;
        out->extra_len = bytes;
        out->packed = out->extra;
    } else {
        free(out->extra);
        out->extra = NULL;
        out->extra_len = 0;
        if (!(out->values = malloc((size_t)(n ? n : 1) * sizeof *out->values)))
            return pq_error_set(err, "out of memory for %u values", n);
        if (decode_values(col, encoding, buf, len, dict, out, err) < 0)
            return -1;
        return pack_slices(out, width, err);
    }
    out->width = width;
    return 0;
}

/* Levels, then values. v1: the whole body is compressed; after
 * decompression come the repetition levels, the definition levels (each
 * with a 4-byte length when the column has them) and the values. v2: the
 * levels are stored uncompressed at the start of the body with lengths in
 * the header, and only the values section is compressed (if is_compressed). */
static int decode_page(const pq_column_desc *col, const pq_page_header *h, const uint8_t *body,
                       const pq_dictionary *dict, pq_page_values *out, pq_error *err)
{
    const int v1 = h->type == PQ_PAGE_DATA;
    const uint32_t n = (uint32_t)h->num_values;
    pq_cursor levels;         /* where the levels are read from */
    const uint8_t *values;    /* uncompressed values section */
    size_t values_len;
    size_t clen = (size_t)h->compressed_size, ulen = (size_t)h->uncompressed_size;

    if (v1) {
        if (!(out->storage = malloc(ulen ? ulen : 1)))
            return pq_error_set(err, "out of memory for a %zu-byte page", ulen);
        out->storage_len = ulen;
        if (pq_decompress(col->codec, body, clen, out->storage, ulen, err) < 0)
            return -1;
        levels = pq_cursor_make(out->storage, ulen);
    } else {
        size_t lv = (size_t)h->rep_levels_len + (size_t)h->def_levels_len;
        levels = pq_cursor_make(body, lv);
        ulen -= lv;
        if (!(out->storage = malloc(ulen ? ulen : 1)))
            return pq_error_set(err, "out of memory for a %zu-byte page", ulen);
        out->storage_len = ulen;
        int codec = h->is_compressed ? col->codec : PQ_UNCOMPRESSED;
        if (pq_decompress(codec, body + lv, clen - lv, out->storage, ulen, err) < 0)
            return pq_error_prefix(err, "values section: ");
    }

    /* The values' memory, for one value per level entry at most: the value
     * slices, or for a packed column the packed values (at least 4 bytes an
     * entry), is first the levels' uint32 scratch, then shrunk to the
     * values the definition levels define. So a page allocates no scratch
     * of its own. */
    _Static_assert(sizeof *out->values >= sizeof(uint32_t), "a slice holds a level");
    uint32_t width = pq_packed_width(col);
    size_t per_entry = width ? (width > sizeof(uint32_t) ? width : sizeof(uint32_t))
                             : sizeof *out->values;
    void *values_memory = malloc((size_t)(n ? n : 1) * per_entry);
    if (!values_memory)
        return pq_error_set(err, "out of memory for %u values", n);
    if (width) {
        out->extra = values_memory;
        out->extra_len = (size_t)n * per_entry;
    } else {
        out->values = values_memory;
    }
    uint32_t *scratch = values_memory;
    if (col->max_rep > 0 || col->max_def > 0) {
        out->rep_levels = col->max_rep > 0 ? malloc((size_t)(n ? n : 1) * sizeof(uint16_t)) : NULL;
        out->def_levels = col->max_def > 0 ? malloc((size_t)(n ? n : 1) * sizeof(uint16_t)) : NULL;
        if ((col->max_rep > 0 && !out->rep_levels) || (col->max_def > 0 && !out->def_levels))
            return pq_error_set(err, "out of memory for %u levels", n);
    }
    int rc = 0;
    if (col->max_rep > 0) {
        pq_cursor rep = levels;
        if (!v1) {
            rep.left = (size_t)h->rep_levels_len;
            pq_cursor_skip(&levels, rep.left);
        }
        rc = decode_levels(&rep, v1, h->rep_encoding, col->max_rep, n, scratch,
                           out->rep_levels, "repetition levels", err);
        if (v1)
            levels = rep;
    } else if (!v1) {
        pq_cursor_skip(&levels, (size_t)h->rep_levels_len);
    }
    if (rc == 0 && col->max_def > 0) {
        pq_cursor def = levels;
        if (!v1)
            def.left = (size_t)h->def_levels_len;
        rc = decode_levels(&def, v1, h->def_encoding, col->max_def, n, scratch,
                           out->def_levels, "definition levels", err);
        if (v1)
            levels = def;
    }
    if (rc < 0)
        return -1;

    if (v1) {
        values = levels.p;
        values_len = levels.left;
    } else {
        values = out->storage;
        values_len = ulen;
    }
    out->num_levels = n;
    out->num_values = n;
    if (col->max_def > 0) {
        uint32_t present = 0;
        for (uint32_t i = 0; i < n; i++)
            present += out->def_levels[i] == col->max_def;
        out->num_values = present;
    }
    if (width) {
        if (decode_packed(col, h->encoding, values, values_len, dict, out, width, err) < 0)
            return pq_error_prefix(err, "values (%s): ", encoding_name(h->encoding));
        return 0;
    }
    if (out->num_values < n) { /* shrinking: on failure the larger block stays */
        pq_bytes *fit = realloc(out->values, (size_t)(out->num_values ? out->num_values : 1) *
                                                 sizeof *out->values);
        if (fit)
            out->values = fit;
    }
    if (decode_values(col, h->encoding, values, values_len, dict, out, err) < 0)
        return pq_error_prefix(err, "values (%s): ", encoding_name(h->encoding));
    return 0;
}

int pq_page_decode(const pq_column_desc *col, const pq_page_header *h, const uint8_t *body,
                   size_t body_len, const pq_dictionary *dict, pq_page_values *out,
                   pq_error *err)
{
    memset(out, 0, sizeof *out);
    const char *what = h->type == PQ_PAGE_DATA_V2 ? "data page v2" : "data page";
    if (h->type != PQ_PAGE_DATA && h->type != PQ_PAGE_DATA_V2)
        return pq_error_set(err, "page type %d is not a data page", h->type);
    if (check_sizes(h, body_len, what, err) < 0)
        return -1;
    if (col->max_def < 0 || col->max_rep < 0)
        return pq_error_set(err, "%s: negative maximum levels in the column description", what);
    if (h->type == PQ_PAGE_DATA_V2 &&
        ((int64_t)h->rep_levels_len + h->def_levels_len > h->compressed_size ||
         (int64_t)h->rep_levels_len + h->def_levels_len > h->uncompressed_size ||
         h->rep_levels_len < 0 || h->def_levels_len < 0))
        return pq_error_set(err, "%s: level lengths %d + %d do not fit the page", what,
                            h->rep_levels_len, h->def_levels_len);
    if (decode_page(col, h, body, dict, out, err) < 0) {
        pq_page_values_free(out);
        return pq_error_prefix(err, "%s: ", what);
    }
    return 0;
}

void pq_page_values_free(pq_page_values *v)
{
    if (!v)
        return;
    free(v->def_levels);
    free(v->rep_levels);
    free(v->values);
    free(v->storage);
    free(v->extra);
    memset(v, 0, sizeof *v);
}

int pq_page_values_own(pq_page_values *v, pq_error *err)
{
    if (v->width)
        return 0;
    size_t total = 0;
    for (uint32_t i = 0; i < v->num_values; i++)
        total += v->values[i].len;
    uint8_t *copy = malloc(total ? total : 1), *at = copy;
    if (!copy)
        return pq_error_set(err, "out of memory copying %zu bytes of page values", total);
    for (uint32_t i = 0; i < v->num_values; i++) {
        if (v->values[i].len)
            memcpy(at, v->values[i].ptr, v->values[i].len);
        v->values[i].ptr = at;
        at += v->values[i].len;
    }
    free(v->extra);
    v->extra = copy;
    v->extra_len = total;
    return 0;
}

size_t pq_page_values_bytes(const pq_page_values *v)
{
    size_t levels = (v->def_levels ? 2 : 0) + (v->rep_levels ? 2 : 0);
    return v->storage_len + v->extra_len + (size_t)v->num_levels * levels +
           (v->width ? 0 : (size_t)v->num_values * sizeof *v->values);
}

/* Values defined by level entries [begin, end). */
static uint32_t values_in(const pq_page_values *v, uint32_t begin, uint32_t end, int16_t max_def)
{
    if (!v->def_levels)
        return end - begin;
    uint32_t n = 0;
    for (uint32_t i = begin; i < end; i++)
        n += v->def_levels[i] == max_def;
    return n;
}

void pq_page_values_drop_front(pq_page_values *v, uint32_t entries, int16_t max_def)
{
    assert(entries <= v->num_levels);
    uint32_t values = values_in(v, 0, entries, max_def);
    uint32_t levels_left = v->num_levels - entries;
    if (v->def_levels)
        memmove(v->def_levels, v->def_levels + entries, levels_left * sizeof *v->def_levels);
    if (v->rep_levels)
        memmove(v->rep_levels, v->rep_levels + entries, levels_left * sizeof *v->rep_levels);
    if (v->width)
        v->packed += (size_t)values * v->width;
    else
        memmove(v->values, v->values + values, (v->num_values - values) * sizeof *v->values);
    v->num_levels = levels_left;
    v->num_values -= values;
}

/* Grow *array (of `have` elements of `size` bytes) to `want` elements. */
static int grow(void *array, size_t have, size_t want, size_t size)
{
    void **p = array;
    if (want <= have && *p)
        return 0;
    void *grown = realloc(*p, (want ? want : 1) * size);
    if (!grown)
        return -1;
    *p = grown;
    return 0;
}

/* dst's packed values as slices into the same bytes (dst keeps owning them). */
static int unpack(pq_page_values *v)
{
    pq_bytes *slices = malloc((size_t)(v->num_values ? v->num_values : 1) * sizeof *slices);
    if (!slices)
        return -1;
    for (uint32_t i = 0; i < v->num_values; i++)
        slices[i] = pq_page_value(v, i);
    free(v->values);
    v->values = slices;
    v->packed = NULL;
    v->width = 0;
    return 0;
}

int pq_page_values_append(pq_page_values *dst, const pq_page_values *src, uint32_t begin,
                          uint32_t end, int16_t max_def, pq_error *err)
{
    assert(begin <= end && end <= src->num_levels);
    assert(!dst->def_levels == !src->def_levels || dst->num_levels == 0);
    uint32_t entries = end - begin, first_value = values_in(src, 0, begin, max_def);
    uint32_t values = values_in(src, begin, end, max_def);
    if ((uint64_t)dst->num_levels + entries > PQ_MAX_PAGE_VALUES)
        return pq_error_set(err, "a row continued over several pages has more than %u entries",
                            PQ_MAX_PAGE_VALUES);
    /* Packed stays packed: dst's values and the new ones go into one new
     * extra. Otherwise the new value bytes go at the end of a new extra and
     * slices into the old extra are moved along with it. */
    int packed = src->width && (dst->num_values == 0 || dst->width == src->width);
    if (!packed && dst->width && unpack(dst) < 0)
        return pq_error_set(err, "out of memory joining a row continued on the next page");
    size_t bytes = 0;
    for (uint32_t i = first_value; i < first_value + values; i++)
        bytes += pq_page_value(src, i).len;
    size_t kept = packed ? (size_t)dst->num_values * src->width : dst->extra_len;

    uint8_t *old_extra = dst->extra;
    uint8_t *extra = malloc(kept + bytes ? kept + bytes : 1);
    size_t levels = (size_t)dst->num_levels + entries;
    if (!extra ||
        (src->def_levels && grow(&dst->def_levels, 0, levels, sizeof *dst->def_levels) < 0) ||
        (src->rep_levels && grow(&dst->rep_levels, 0, levels, sizeof *dst->rep_levels) < 0) ||
        (!packed && grow(&dst->values, 0, (size_t)dst->num_values + values,
                         sizeof *dst->values) < 0)) {
        free(extra);
        return pq_error_set(err, "out of memory joining a row continued on the next page");
    }
    if (packed) {
        if (dst->num_values)
            memcpy(extra, dst->packed, kept);
        if (bytes)
            memcpy(extra + kept, src->packed + (size_t)first_value * src->width, bytes);
        /* nothing points into the decompressed body any more */
        free(dst->values);
        free(dst->storage);
        dst->values = NULL;
        dst->storage = NULL;
        dst->storage_len = 0;
        dst->packed = extra;
        dst->width = src->width;
    } else {
        if (dst->extra_len)
            memcpy(extra, old_extra, dst->extra_len);
        uintptr_t lo = (uintptr_t)old_extra, hi = lo + dst->extra_len;
        for (uint32_t i = 0; i < dst->num_values && old_extra; i++) {
            uintptr_t at = (uintptr_t)dst->values[i].ptr;
            if (at >= lo && at < hi)
                dst->values[i].ptr = extra + (at - lo);
        }
        uint8_t *out = extra + dst->extra_len;
        for (uint32_t i = 0; i < values; i++) {
            pq_bytes b = pq_page_value(src, first_value + i);
            if (b.len)
                memcpy(out, b.ptr, b.len);
            dst->values[dst->num_values + i] = (pq_bytes){ out, b.len };
            out += b.len;
        }
    }
    if (src->def_levels)
        memcpy(dst->def_levels + dst->num_levels, src->def_levels + begin,
               entries * sizeof *dst->def_levels);
    if (src->rep_levels)
        memcpy(dst->rep_levels + dst->num_levels, src->rep_levels + begin,
               entries * sizeof *dst->rep_levels);
    free(old_extra);
    dst->extra = extra;
    dst->extra_len = kept + bytes;
    dst->num_levels += entries;
    dst->num_values += values;
    return 0;
}
