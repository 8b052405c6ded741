/* fuzz_page — page headers, codecs, levels and value decoders.
 *
 * Input layout:
 *   byte 0  physical type (mod 8)
 *   byte 1  max_def = b % 3, max_rep = (b / 3) % 2
 *   byte 2  codec (mod 8; 3 = LZO, which must be refused cleanly)
 *   byte 3  FIXED_LEN_BYTE_ARRAY type_length (0 is invalid on purpose)
 *   then up to MAX_PAGES pages as in a column chunk: a thrift PageHeader
 *   followed by compressed_page_size bytes of body. A dictionary page
 *   (re)sets the dictionary; data pages v1/v2 are decoded against it.
 *
 * Each page's CRC is checked (the result is ignored: the fuzzer could not
 * get past a matching CRC). Decoded values are read byte by byte so that
 * ASan catches a slice that points outside its storage.
 *
 * To keep memory per input bounded, a header declaring more than
 * MAX_UNCOMPRESSED bytes or MAX_VALUES values ends the input (return 0)
 * before anything is allocated for it. DELTA_BYTE_ARRAY is bounded
 * separately: its values are materialised, and a value may repeat up to the
 * whole section as the prefix of the next, so a page can expand to
 * num_values * uncompressed_size bytes (the decoder only stops at
 * PQ_MAX_EXPANDED_PAGE_BYTES, 256 MiB). Such pages are skipped when that
 * product exceeds MAX_MATERIALISED. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_column.h"
#include "pq_column.h"
#include "pq_meta.h"
#include "pq_page.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PAGES 16
#define MAX_UNCOMPRESSED (64u << 20)
#define MAX_VALUES (1u << 22)
#define MAX_MATERIALISED ((uint64_t)256 << 20)

static int64_t fixed_width(const pq_column_desc *col)
{
    switch (col->type) {
    case PQ_BOOLEAN: return 1;
    case PQ_INT32: case PQ_FLOAT: return 4;
    case PQ_INT64: case PQ_DOUBLE: return 8;
    case PQ_INT96: return 12;
    case PQ_FIXED_LEN_BYTE_ARRAY: return col->type_length;
    default: return -1; /* BYTE_ARRAY: any length */
    }
}

static void check_values(const pq_column_desc *col, const pq_page_header *h,
                         const pq_page_values *pv)
{
    if (pv->num_levels != (uint32_t)h->num_values || pv->num_values > pv->num_levels)
        abort();
    volatile uint32_t sink = 0;
    for (uint32_t i = 0; i < pv->num_levels; i++) {
        if (pv->def_levels && pv->def_levels[i] > col->max_def)
            abort();
        if (pv->rep_levels && pv->rep_levels[i] > col->max_rep)
            abort();
    }
    int64_t w = fixed_width(col);
    for (uint32_t i = 0; i < pv->num_values; i++) {
        pq_bytes value = pq_page_value(pv, i);
        const pq_bytes *v = &value;
        if (w >= 0 && v->len != (uint32_t)w)
            abort();
        for (uint32_t b = 0; b < v->len; b++)
            sink += v->ptr[b];
    }
    (void)sink;
}

static void check_dictionary(const pq_dictionary *d)
{
    volatile uint32_t sink = 0;
    for (uint32_t i = 0; i < d->count; i++)
        for (uint32_t b = 0; b < d->values[i].len; b++)
            sink += d->values[i].ptr[b];
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < FUZZ_COLUMN_BYTES)
        return 0;
    pq_column_desc col = fuzz_column(data);
    const uint8_t *p = data + FUZZ_COLUMN_BYTES;
    size_t left = size - FUZZ_COLUMN_BYTES;

    pq_dictionary dict;
    int have_dict = 0;
    pq_error err;
    for (int page = 0; page < MAX_PAGES && left > 0; page++) {
        pq_page_header h;
        if (pq_page_header_parse(p, left, &h, &err) < 0)
            break;
        if (h.header_len > left)
            abort();
        const uint8_t *body = p + h.header_len;
        size_t body_left = left - h.header_len;
        if ((size_t)h.compressed_size > body_left)
            break; /* the caller's check: the body must lie in the chunk */
        if ((uint32_t)h.uncompressed_size > MAX_UNCOMPRESSED ||
            (uint32_t)h.num_values > MAX_VALUES)
            break;
        if (h.encoding == PQ_ENC_DELTA_BYTE_ARRAY &&
            (uint64_t)h.num_values * (uint64_t)h.uncompressed_size > MAX_MATERIALISED)
            break;
        /* A copy of exactly compressed_size bytes, so that ASan reports any
         * read past the body instead of silently reading the next page. */
        size_t blen = (size_t)h.compressed_size;
        uint8_t *copy = malloc(blen ? blen : 1);
        if (!copy)
            break;
        memcpy(copy, body, blen);
        (void)pq_page_check_crc(&h, copy, blen, &err);

        if (h.type == PQ_PAGE_DICTIONARY) {
            pq_dictionary d;
            if (pq_dictionary_decode(&col, &h, copy, blen, &d, &err) == 0) {
                check_dictionary(&d);
                if (have_dict)
                    pq_dictionary_free(&dict);
                dict = d;
                have_dict = 1;
            }
        } else if (h.type == PQ_PAGE_DATA || h.type == PQ_PAGE_DATA_V2) {
            pq_page_values pv;
            if (pq_page_decode(&col, &h, copy, blen, have_dict ? &dict : NULL, &pv, &err) ==
                0) {
                check_values(&col, &h, &pv);
                pq_page_values_free(&pv);
            }
        }
        /* Values may point into the dictionary, never into the body: the
         * copy can go now (the dictionary keeps its own storage). */
        free(copy);
        p = body + h.compressed_size;
        left = body_left - (size_t)h.compressed_size;
    }
    if (have_dict)
        pq_dictionary_free(&dict);
    return 0;
}
