/* Page CRC checks (pq_page_check_crc).
 *
 * Fixtures: the *checksum*.parquet files are copies of apache/parquet-testing
 * data/ (Apache License 2.0, see fixtures/LICENSE-parquet-testing.txt),
 * written by parquet-mr with page checksums on. Per its README,
 * datapage_v1-corrupt-checksum.parquet has a bad CRC on page 0 of column "a"
 * and on page 1 of column "b"; every other page of these files matches. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pq_page.h"
#include "pq_thrift.h"
#include "tu.h"

/* The outcome of one page's check. */
typedef struct crc_page {
    int type;
    int has_crc;
    int ok;
    size_t offset; /* of the page header in the file */
} crc_page;

typedef struct crc_chunk {
    int count;
    crc_page pages[64];
} crc_chunk;

/* Walk the pages of one column chunk (header, then compressed_size bytes of
 * body) and check each page's CRC. */
static void check_chunk(const uint8_t *data, size_t len, const pq_column_meta *cm,
                        crc_chunk *out)
{
    memset(out, 0, sizeof *out);
    int64_t start = cm->data_page_offset;
    if (cm->dictionary_page_offset >= 0 && cm->dictionary_page_offset < start)
        start = cm->dictionary_page_offset;
    cr_assert(start >= 0 && (uint64_t)start + (uint64_t)cm->total_compressed_size <= len);
    size_t pos = (size_t)start, end = pos + (size_t)cm->total_compressed_size;
    while (pos < end) {
        pq_page_header h;
        pq_error err;
        cr_assert_eq(pq_page_header_parse(data + pos, end - pos, &h, &err), 0, "%s", err.msg);
        size_t body = pos + h.header_len;
        cr_assert_leq((size_t)h.compressed_size, end - body);
        cr_assert_lt(out->count, 64);
        crc_page *p = &out->pages[out->count++];
        p->type = h.type;
        p->has_crc = h.has_crc;
        p->offset = pos;
        p->ok = pq_page_check_crc(&h, data + body, end - body, &err) == 0;
        if (!p->ok)
            cr_assert(strstr(err.msg, "CRC mismatch"), "%s", err.msg);
        pos = body + (size_t)h.compressed_size;
    }
}

/* Every page that carries a CRC matches (every page carries one unless
 * some_without_crc), dictionary pages included when want_dict_pages; the
 * pages also decode. */
static void all_pages_good(const char *name, int want_dict_pages, int some_without_crc)
{
    size_t len;
    uint8_t *data = tu_fixture(name, &len);
    cr_assert(data, "missing fixture %s", name);
    tu_file f;
    pq_error err;
    cr_assert_eq(tu_open(data, len, &f, &err), 0, "%s: %s", name, err.msg);
    int dict_pages = 0, with_crc = 0;
    for (int32_t g = 0; g < f.meta.num_row_groups; g++) {
        for (int c = 0; c < f.nleaves; c++) {
            crc_chunk ch;
            check_chunk(data, len, &f.meta.row_groups[g].columns[c], &ch);
            cr_assert_gt(ch.count, 0);
            for (int i = 0; i < ch.count; i++) {
                cr_assert(ch.pages[i].has_crc || some_without_crc,
                          "%s: column %d page %d has no CRC", name, c, i);
                cr_assert(ch.pages[i].ok, "%s: column %d page %d: CRC mismatch", name, c, i);
                with_crc += ch.pages[i].has_crc;
                dict_pages += ch.pages[i].type == PQ_PAGE_DICTIONARY && ch.pages[i].has_crc;
            }
        }
    }
    cr_assert_gt(with_crc, 0);
    if (want_dict_pages)
        cr_assert_eq(dict_pages, f.nleaves * f.meta.num_row_groups,
                     "%s: expected a (checksummed) dictionary page per chunk", name);
    for (int c = 0; c < f.nleaves; c++)
        cr_assert_eq(tu_walk_column(&f, c, NULL, NULL, &err), 0, "%s: %s", name, err.msg);
    tu_close(&f);
    free(data);
}

Test(crc, datapage_v1_uncompressed)
{
    all_pages_good("datapage_v1-uncompressed-checksum.parquet", 0, 0);
}

Test(crc, datapage_v1_snappy)
{
    all_pages_good("datapage_v1-snappy-compressed-checksum.parquet", 0, 0);
}

Test(crc, plain_dict_uncompressed)
{
    all_pages_good("plain-dict-uncompressed-checksum.parquet", 1, 0);
}

/* Its dictionary pages carry CRCs; its v2 data pages do not (their headers
 * have no field 4, whatever the parquet-testing README says). */
Test(crc, rle_dict_snappy)
{
    all_pages_good("rle-dict-snappy-checksum.parquet", 1, 1);
}

Test(crc, corrupt_file_fails_on_the_right_pages)
{
    size_t len;
    uint8_t *data = tu_fixture("datapage_v1-corrupt-checksum.parquet", &len);
    cr_assert(data);
    tu_file f;
    pq_error err;
    cr_assert_eq(tu_open(data, len, &f, &err), 0, "%s", err.msg);
    cr_assert_eq(f.nleaves, 2);
    cr_assert_eq(f.meta.num_row_groups, 1);
    crc_chunk a, b;
    check_chunk(data, len, &f.meta.row_groups[0].columns[0], &a);
    check_chunk(data, len, &f.meta.row_groups[0].columns[1], &b);
    cr_assert_eq(a.count, 2);
    cr_assert_eq(b.count, 2);
    for (int i = 0; i < 2; i++)
        cr_assert(a.pages[i].has_crc && b.pages[i].has_crc);
    cr_assert(!a.pages[0].ok, "column a page 0 should fail");
    cr_assert(a.pages[1].ok, "column a page 1 should pass");
    cr_assert(b.pages[0].ok, "column b page 0 should pass");
    cr_assert(!b.pages[1].ok, "column b page 1 should fail");
    tu_close(&f);
    free(data);
}

/* Dictionary pages are checksummed too: flip one body byte of the first
 * chunk's dictionary page and only that page fails. */
Test(crc, corrupt_dictionary_page)
{
    size_t len;
    uint8_t *data = tu_fixture("plain-dict-uncompressed-checksum.parquet", &len);
    cr_assert(data);
    tu_file f;
    pq_error err;
    cr_assert_eq(tu_open(data, len, &f, &err), 0, "%s", err.msg);
    const pq_column_meta *cm = &f.meta.row_groups[0].columns[0];
    cr_assert_geq(cm->dictionary_page_offset, 0);
    pq_page_header h;
    size_t pos = (size_t)cm->dictionary_page_offset;
    cr_assert_eq(pq_page_header_parse(data + pos, len - pos, &h, &err), 0, "%s", err.msg);
    cr_assert_eq(h.type, PQ_PAGE_DICTIONARY);
    cr_assert_gt(h.compressed_size, 0);
    data[pos + h.header_len + (size_t)h.compressed_size / 2] ^= 0x01;

    crc_chunk ch;
    check_chunk(data, len, cm, &ch);
    cr_assert_geq(ch.count, 2);
    cr_assert_eq(ch.pages[0].type, PQ_PAGE_DICTIONARY);
    cr_assert(!ch.pages[0].ok);
    for (int i = 1; i < ch.count; i++)
        cr_assert(ch.pages[i].ok);
    cr_assert_eq(pq_page_check_crc(&h, data + pos + h.header_len, (size_t)h.compressed_size,
                                   &err),
                 -1);
    cr_assert(strstr(err.msg, "dictionary page: CRC mismatch"), "%s", err.msg);
    tu_close(&f);
    free(data);
}

/* A hand-made data page header with the given CRC field (or none). */
static void header(tw *w, int32_t size, int with_crc, uint32_t crc)
{
    tw_init(w);
    tw_i32f(w, 1, PQ_PAGE_DATA);
    tw_i32f(w, 2, size);
    tw_i32f(w, 3, size);
    if (with_crc)
        tw_i32f(w, 4, (int32_t)crc); /* thrift i32: the CRC's bit pattern, signed */
    tw_field(w, 5, PQ_TT_STRUCT);
    tw_begin(w);
    tw_i32f(w, 1, 9);
    tw_i32f(w, 2, PQ_ENC_PLAIN);
    tw_i32f(w, 3, PQ_ENC_RLE);
    tw_i32f(w, 4, PQ_ENC_RLE);
    tw_end(w);
    tw_byte(w, 0);
}

/* "123456789" is CRC-32's standard check string: 0xCBF43926, which is
 * negative as an i32 and so also exercises the sign of the thrift field. */
static const uint8_t check_body[] = "123456789";
#define CHECK_CRC 0xcbf43926u

Test(crc, hand_made_match)
{
    tw w;
    header(&w, 9, 1, CHECK_CRC);
    pq_page_header h;
    pq_error err;
    cr_assert_eq(pq_page_header_parse(w.buf, w.len, &h, &err), 0, "%s", err.msg);
    cr_assert(h.has_crc);
    cr_assert_eq(h.crc, CHECK_CRC);
    cr_assert_eq(pq_page_check_crc(&h, check_body, 9, &err), 0, "%s", err.msg);
    /* Bytes after the body (the next page) are not part of the checksum. */
    cr_assert_eq(pq_page_check_crc(&h, (const uint8_t *)"123456789xyz", 12, &err), 0, "%s",
                 err.msg);
}

Test(crc, hand_made_mismatch_names_both_values)
{
    tw w;
    header(&w, 9, 1, 0x12345678u);
    pq_page_header h;
    pq_error err;
    cr_assert_eq(pq_page_header_parse(w.buf, w.len, &h, &err), 0, "%s", err.msg);
    cr_assert_eq(pq_page_check_crc(&h, check_body, 9, &err), -1);
    cr_assert(strstr(err.msg, "data page: CRC mismatch"), "%s", err.msg);
    cr_assert(strstr(err.msg, "0x12345678"), "%s", err.msg);
    cr_assert(strstr(err.msg, "0xcbf43926"), "%s", err.msg);
    cr_assert(strstr(err.msg, "9-byte"), "%s", err.msg);
}

Test(crc, no_crc_always_passes)
{
    tw w;
    header(&w, 9, 0, 0);
    pq_page_header h;
    pq_error err;
    cr_assert_eq(pq_page_header_parse(w.buf, w.len, &h, &err), 0, "%s", err.msg);
    cr_assert(!h.has_crc);
    cr_assert_eq(pq_page_check_crc(&h, (const uint8_t *)"garbage!!", 9, &err), 0);
    cr_assert_eq(pq_page_check_crc(&h, NULL, 0, NULL), 0);
}

Test(crc, truncated_body_fails)
{
    tw w;
    header(&w, 9, 1, CHECK_CRC);
    pq_page_header h;
    pq_error err;
    cr_assert_eq(pq_page_header_parse(w.buf, w.len, &h, &err), 0, "%s", err.msg);
    cr_assert_eq(pq_page_check_crc(&h, check_body, 8, &err), -1);
    cr_assert(strstr(err.msg, "8 bytes"), "%s", err.msg);
    cr_assert_eq(pq_page_check_crc(&h, check_body, 8, NULL), -1); /* NULL err is allowed */
}

Test(crc, empty_body)
{
    /* The CRC-32 of no bytes is 0. */
    tw w;
    header(&w, 0, 1, 0);
    pq_page_header h;
    pq_error err;
    cr_assert_eq(pq_page_header_parse(w.buf, w.len, &h, &err), 0, "%s", err.msg);
    cr_assert_eq(pq_page_check_crc(&h, NULL, 0, &err), 0, "%s", err.msg);
    header(&w, 0, 1, 1);
    cr_assert_eq(pq_page_header_parse(w.buf, w.len, &h, &err), 0, "%s", err.msg);
    cr_assert_eq(pq_page_check_crc(&h, NULL, 0, &err), -1);
}
