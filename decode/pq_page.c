#include "pq_page.h"

#include <string.h>

#include <zlib.h>

#include "pq_thrift.h"

/* Field ids from parquet.thrift: PageHeader {1 type, 2 uncompressed_page_size,
 * 3 compressed_page_size, 4 crc, 5 data_page_header, 6 index_page_header,
 * 7 dictionary_page_header, 8 data_page_header_v2}. */

/* What a sub-header's field callback (pq_thrift_walk) fills, and the bits
 * of the required fields it saw. */
typedef struct sub_walk {
    pq_page_header *h;
    unsigned seen;
} sub_walk;

static int read_int(pq_thrift *t, uint8_t ft, int *out, pq_error *err)
{
    int32_t v;
    if (pq_thrift_i32(t, ft, &v, err) < 0)
        return -1;
    *out = v;
    return 0;
}

/* DataPageHeader {1 num_values, 2 encoding, 3 definition_level_encoding,
 * 4 repetition_level_encoding, 5 statistics}. */
static int v1_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    sub_walk *w = ctx;
    pq_page_header *h = w->h;
    switch (id) {
    case 1: w->seen |= 1; return pq_thrift_i32(t, ft, &h->num_values, err);
    case 2: w->seen |= 2; return read_int(t, ft, &h->encoding, err);
    case 3: w->seen |= 4; return read_int(t, ft, &h->def_encoding, err);
    case 4: w->seen |= 8; return read_int(t, ft, &h->rep_encoding, err);
    default: return pq_thrift_skip(t, ft, err);
    }
}

/* DictionaryPageHeader {1 num_values, 2 encoding, 3 is_sorted}. */
static int dict_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    sub_walk *w = ctx;
    pq_page_header *h = w->h;
    switch (id) {
    case 1: w->seen |= 1; return pq_thrift_i32(t, ft, &h->num_values, err);
    case 2: w->seen |= 2; return read_int(t, ft, &h->encoding, err);
    default: return pq_thrift_skip(t, ft, err);
    }
}

/* DataPageHeaderV2 {1 num_values, 2 num_nulls, 3 num_rows, 4 encoding,
 * 5 definition_levels_byte_length, 6 repetition_levels_byte_length,
 * 7 is_compressed (default true), 8 statistics}. */
static int v2_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    sub_walk *w = ctx;
    pq_page_header *h = w->h;
    switch (id) {
    case 1: w->seen |= 1; return pq_thrift_i32(t, ft, &h->num_values, err);
    case 2: w->seen |= 2; return pq_thrift_i32(t, ft, &h->num_nulls, err);
    case 3: w->seen |= 4; return pq_thrift_i32(t, ft, &h->num_rows, err);
    case 4: w->seen |= 8; return read_int(t, ft, &h->encoding, err);
    case 5: w->seen |= 16; return pq_thrift_i32(t, ft, &h->def_levels_len, err);
    case 6: w->seen |= 32; return pq_thrift_i32(t, ft, &h->rep_levels_len, err);
    case 7: return pq_thrift_bool(t, ft, &h->is_compressed, err);
    default: return pq_thrift_skip(t, ft, err);
    }
}

/* The PageHeader's fields, and which of the required ones were seen: bits
 * of the top level and per sub-header (by page type). */
typedef struct header_walk {
    pq_page_header *h;
    unsigned top;
    sub_walk sub[4];   /* by page type: 0 data, 2 dictionary, 3 data v2 */
    int have_sub[4];
} header_walk;

static int header_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    header_walk *w = ctx;
    pq_page_header *h = w->h;
    int32_t crc;
    switch (id) {
    case 1: w->top |= 1; return read_int(t, ft, &h->type, err);
    case 2: w->top |= 2; return pq_thrift_i32(t, ft, &h->uncompressed_size, err);
    case 3: w->top |= 4; return pq_thrift_i32(t, ft, &h->compressed_size, err);
    case 4:
        if (pq_thrift_i32(t, ft, &crc, err) < 0)
            return -1;
        h->has_crc = 1;
        h->crc = (uint32_t)crc;
        return 0;
    case 5: w->have_sub[0] = 1; return pq_thrift_walk(t, v1_field, &w->sub[0], err);
    case 7: w->have_sub[2] = 1; return pq_thrift_walk(t, dict_field, &w->sub[2], err);
    case 8: w->have_sub[3] = 1; return pq_thrift_walk(t, v2_field, &w->sub[3], err);
    default: return pq_thrift_skip(t, ft, err); /* 6: index page, others: newer */
    }
}

static const char *page_type_name(int type)
{
    switch (type) {
    case PQ_PAGE_DATA: return "data page";
    case PQ_PAGE_INDEX: return "index page";
    case PQ_PAGE_DICTIONARY: return "dictionary page";
    case PQ_PAGE_DATA_V2: return "data page v2";
    default: return "page";
    }
}

int pq_page_header_parse(const uint8_t *buf, size_t len, pq_page_header *out, pq_error *err)
{
    pq_page_header h;
    memset(&h, 0, sizeof h);
    h.type = -1;
    h.is_compressed = 1;
    h.def_encoding = PQ_ENC_RLE;
    h.rep_encoding = PQ_ENC_RLE;

    header_walk w = { .h = &h };
    for (int k = 0; k < 4; k++)
        w.sub[k].h = &h;
    pq_thrift t;
    pq_thrift_init(&t, buf, len);
    if (pq_thrift_walk(&t, header_field, &w, err) < 0)
        return pq_error_prefix(err, "page header: ");
    h.header_len = pq_thrift_offset(&t);

    if (w.top != 7)
        return pq_error_set(err, "page header: lacks a required field (type, "
                                 "uncompressed_page_size, compressed_page_size)");
    const char *name = page_type_name(h.type);
    if (h.uncompressed_size < 0 || h.compressed_size < 0)
        return pq_error_set(err, "%s header: negative size (uncompressed %d, compressed %d)",
                            name, h.uncompressed_size, h.compressed_size);
    static const unsigned need[4] = { 0xf, 0, 0x3, 0x3f };
    if (h.type == PQ_PAGE_DATA || h.type == PQ_PAGE_DICTIONARY || h.type == PQ_PAGE_DATA_V2) {
        if (!w.have_sub[h.type])
            return pq_error_set(err, "%s header: sub-header (field %d) is missing", name,
                                h.type == PQ_PAGE_DATA ? 5 : h.type == PQ_PAGE_DICTIONARY ? 7 : 8);
        if ((w.sub[h.type].seen & need[h.type]) != need[h.type])
            return pq_error_set(err, "%s header: sub-header lacks a required field", name);
        if (h.num_values < 0)
            return pq_error_set(err, "%s header: num_values is %d", name, h.num_values);
    }
    if (h.type == PQ_PAGE_DATA_V2) {
        if (h.num_nulls < 0 || h.num_rows < 0 || h.num_nulls > h.num_values)
            return pq_error_set(err, "data page v2 header: num_nulls %d / num_rows %d do not "
                                     "fit num_values %d",
                                h.num_nulls, h.num_rows, h.num_values);
        if (h.def_levels_len < 0 || h.rep_levels_len < 0)
            return pq_error_set(err, "data page v2 header: negative level lengths (%d, %d)",
                                h.rep_levels_len, h.def_levels_len);
        int64_t levels = (int64_t)h.def_levels_len + h.rep_levels_len;
        if (levels > h.compressed_size || levels > h.uncompressed_size)
            return pq_error_set(err, "data page v2 header: levels take %lld bytes but the page "
                                     "has %d compressed / %d uncompressed",
                                (long long)levels, h.compressed_size, h.uncompressed_size);
    }
    *out = h;
    return 0;
}

int pq_page_check_crc(const pq_page_header *h, const uint8_t *body, size_t body_len,
                      pq_error *err)
{
    if (!h->has_crc)
        return 0;
    if (h->compressed_size < 0 || body_len < (size_t)h->compressed_size)
        return pq_error_set(err, "%s: cannot check the CRC: body is %zu bytes, header says %d",
                            page_type_name(h->type), body_len, h->compressed_size);
    /* The header stores the CRC as a thrift i32; the parser kept its bit
     * pattern in h->crc, which is what zlib's unsigned CRC-32 is compared to. */
    size_t n = (size_t)h->compressed_size;
    uint32_t got = (uint32_t)crc32_z(0L, body, n); /* 0 is zlib's initial value */
    if (got != h->crc)
        return pq_error_set(err, "%s: CRC mismatch: header says 0x%08x, the %zu-byte body has "
                                 "0x%08x",
                            page_type_name(h->type), (unsigned)h->crc, n, (unsigned)got);
    return 0;
}
