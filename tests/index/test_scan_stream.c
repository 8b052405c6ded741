/* The page pass streams large pages (ix_scan_chunk, pq_stream.h, ix_row.h):
 * the index it builds must be the one a whole decode of every page builds.
 * Each dataset is indexed three times: never streaming (stream_page_bytes
 * UINT64_MAX: the whole-decode oracle), streaming every page that can
 * (stream_page_bytes 1) and at the default; every field of every page entry,
 * the chunks' cut flags and the shuffle units' bytes must agree. A page
 * entry's crc may be 0 in one build where the other knows it (it is learned
 * at the first read), never another value. Datasets: the sample, the decode
 * fixtures (parquet-testing files and our own: several codecs, v1 and v2
 * pages, dictionaries, nulls, lists), the files of tests/data/stream (rows
 * that continue over pages, hand-written and by DuckDB; make_fixtures.py)
 * and, when present, more of /work/shared/parquet-testing. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ix_index.h"
#include "pq_page.h"

#define FIXTURES YFS_SOURCE_DIR "/tests/decode/fixtures/"
#define STREAM_DATA YFS_SOURCE_DIR "/tests/data/stream/"
#define PARQUET_TESTING "/work/shared/parquet-testing/data/"

#define WHOLE UINT64_MAX /* never stream */
#define STREAM_ALL 1     /* stream whatever can */
#define DEFAULT 0

typedef struct scan_case {
    const char *path;
    const char *column;
    ix_format format;
    ix_dtype dtype;   /* raw */
    int has_sep;
    int rowid;
    int must_stream;  /* streaming every page must stream some */
    int must_span;    /* some entry covers a row continued over pages */
} scan_case;

static ix_index *build(const scan_case *c, uint64_t stream_page_bytes, pq_error *err)
{
    ix_options o = {
        .dataset = c->path,
        .column = c->column,
        .frame = { .format = c->format, .rowid = c->rowid, .dtype = c->dtype,
                   .has_sep = c->has_sep, .sep = 50256 },
        .threads = 2,
        .stream_page_bytes = stream_page_bytes,
    };
    ix_index *ix = NULL;
    return ix_build(&o, &ix, err) == 0 ? ix : NULL;
}

static void same_index(const ix_index *a, const ix_index *b, const char *what)
{
    cr_assert_eq(a->num_pages, b->num_pages, "%s: %llu entries, whole decode %llu", what,
                 (unsigned long long)b->num_pages, (unsigned long long)a->num_pages);
    uint64_t crcs = 0;
    for (uint64_t p = 0; p < a->num_pages; p++) {
        const ix_page *x = &a->pages[p], *y = &b->pages[p];
        cr_assert(x->offset == y->offset && x->first_row == y->first_row &&
                      x->framed == y->framed && x->length == y->length && x->rows == y->rows &&
                      x->records == y->records,
                  "%s: entry %llu: offset %llu/%llu first_row %llu/%llu framed %llu/%llu "
                  "length %u/%u rows %u/%u records %u/%u (whole/streamed)",
                  what, (unsigned long long)p, (unsigned long long)x->offset,
                  (unsigned long long)y->offset, (unsigned long long)x->first_row,
                  (unsigned long long)y->first_row, (unsigned long long)x->framed,
                  (unsigned long long)y->framed, x->length, y->length, x->rows, y->rows,
                  x->records, y->records);
        uint32_t cx = atomic_load(&x->crc), cy = atomic_load(&y->crc);
        cr_assert(cx == cy || cx == 0 || cy == 0, "%s: entry %llu: crc 0x%08x, whole 0x%08x",
                  what, (unsigned long long)p, cy, cx);
        crcs += cy != 0;
    }
    cr_assert(a->num_pages == 0 || crcs > 0, "%s: the streamed build knows no crc", what);
    cr_assert_eq(a->num_chunks, b->num_chunks, "%s", what);
    for (uint32_t c = 0; c < a->num_chunks; c++)
        cr_assert_eq(a->chunks[c].cut, b->chunks[c].cut, "%s: chunk %u cut", what, c);
    cr_assert_eq(a->num_rows, b->num_rows, "%s", what);
    cr_assert_eq(a->num_records, b->num_records, "%s", what);
    cr_assert_eq(a->framed_bytes, b->framed_bytes, "%s", what);
    cr_assert_eq(a->num_units, b->num_units, "%s: units", what);
    cr_assert(a->num_units == 0 ||
                  memcmp(a->unit_bytes, b->unit_bytes, a->num_units * sizeof *a->unit_bytes) == 0,
              "%s: unit bytes differ", what);
}

/* Some entry's byte range is longer than its first page: a row continued. */
static int spans_pages(const ix_index *ix)
{
    for (uint64_t p = 0; p < ix->num_pages; p++) {
        const ix_page *pg = &ix->pages[p];
        const ix_file *f = &ix->files[ix->chunks[ix_locate(ix, p)].file];
        uint8_t head[4096];
        size_t want = pg->length < sizeof head ? pg->length : sizeof head;
        cr_assert_eq(pread(f->fd, head, want, (off_t)pg->offset), (ssize_t)want);
        pq_page_header h;
        pq_error err;
        cr_assert_eq(pq_page_header_parse(head, want, &h, &err), 0, "%s", err.msg);
        if (pg->length > h.header_len + (uint64_t)h.compressed_size)
            return 1;
    }
    return 0;
}

static void check_case(const scan_case *c)
{
    char what[512];
    snprintf(what, sizeof what, "%s column %s format %s%s", c->path,
             c->column ? c->column : "(default)", ix_format_name(c->format),
             c->rowid ? " rowid" : "");
    pq_error err_whole, err_stream, err_default;
    ix_index *whole = build(c, WHOLE, &err_whole);
    ix_index *streamed = build(c, STREAM_ALL, &err_stream);
    ix_index *dflt = build(c, DEFAULT, &err_default);
    if (!whole) {
        /* not a file the index takes: it must not take it streamed either */
        cr_assert_null(streamed, "%s: streamed build succeeds where the whole decode fails (%s)",
                       what, err_whole.msg);
        cr_assert_null(dflt, "%s", what);
        cr_assert(!c->must_stream, "%s: %s", what, err_whole.msg);
        return;
    }
    cr_assert_not_null(streamed, "%s: streamed build fails: %s", what, err_stream.msg);
    cr_assert_not_null(dflt, "%s: default build fails: %s", what, err_default.msg);
    cr_assert_eq(whole->streamed_pages, 0, "%s", what);
    if (c->must_stream)
        cr_assert_gt(streamed->streamed_pages, 0, "%s: no page streamed", what);
    if (c->must_span)
        cr_assert(spans_pages(whole), "%s: no row continues over pages: nothing tested", what);
    same_index(whole, streamed, what);
    same_index(whole, dflt, what);
    ix_free(whole);
    ix_free(streamed);
    ix_free(dflt);
}

static void check_cases(const scan_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        check_case(&cases[i]);
}

#define JSONL IX_FORMAT_JSONL, IX_DT_NONE, 0
#define RAW_U16_SEP IX_FORMAT_RAW, IX_DT_U16, 1

Test(scan_stream, rows_that_continue_over_pages)
{
    static const scan_case cases[] = {
        { STREAM_DATA "duckdb_tokens.parquet", "input_ids", RAW_U16_SEP, 0, 1, 1 },
        { STREAM_DATA "legacy_two_level_7.parquet", "ids", JSONL, 1, 1, 1 },
        { STREAM_DATA "legacy_two_level_7.parquet", "ids", RAW_U16_SEP, 0, 1, 1 },
        { STREAM_DATA "legacy_bare_50.parquet", "ids", JSONL, 1, 1, 1 },
        { STREAM_DATA "legacy_bare_50.parquet", "ids", IX_FORMAT_RAW, IX_DT_NONE, 0, 0, 1, 1 },
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
}

Test(scan_stream, duckdb_text_and_the_sample)
{
    static const scan_case cases[] = {
        { STREAM_DATA "duckdb_text.parquet", "text", JSONL, 1, 1, 0 },
        { STREAM_DATA "duckdb_text.parquet", "text", IX_FORMAT_TEXT, IX_DT_NONE, 0, 0, 1, 0 },
        { YFS_SOURCE_DIR "/examples/sample", NULL, JSONL, 0, 1, 0 },
        { YFS_SOURCE_DIR "/examples/sample", NULL, IX_FORMAT_TEXT, IX_DT_NONE, 0, 0, 1, 0 },
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
}

Test(scan_stream, codecs_page_versions_dictionaries_and_nulls)
{
    static const char *codecs[] = { "none", "snappy", "zstd", "gzip", "brotli", "lz4" };
    for (size_t k = 0; k < sizeof codecs / sizeof codecs[0]; k++) {
        char path[512];
        snprintf(path, sizeof path, FIXTURES "stream_%s.parquet", codecs[k]);
        scan_case cases[] = {
            { path, "ids", JSONL, 1, 1, 0 },
            { path, "ids", RAW_U16_SEP, 0, 1, 0 },
            { path, "text", JSONL, 0, 1, 0 },
            { path, "cat", IX_FORMAT_TEXT, IX_DT_NONE, 0, 0, 1, 0 },
        };
        check_cases(cases, sizeof cases / sizeof cases[0]);
    }
    /* gen_*: PLAIN, dictionary and DELTA pages (not streamable: decoded
     * whole), v1 and v2, none/snappy/zstd/gzip/brotli/lz4 */
    static const char *gen[] = { "plain_v1_none", "dict_v1_snappy", "dict_v2_gzip",
                                 "plain_v2_brotli", "dict_v1_zstd_pageindex", "plain_v2_lz4",
                                 "delta_v1_zstd", "delta_v2_none" };
    static const char *gen_columns[] = { "s", "req", "bin", "i64", "f64" };
    for (size_t k = 0; k < sizeof gen / sizeof gen[0]; k++) {
        char path[512];
        snprintf(path, sizeof path, FIXTURES "gen_%s.parquet", gen[k]);
        for (size_t c = 0; c < sizeof gen_columns / sizeof gen_columns[0]; c++) {
            scan_case one = { path, gen_columns[c], JSONL, 1, 0, 0 };
            check_case(&one);
        }
    }
}

Test(scan_stream, parquet_testing_files)
{
    static const scan_case cases[] = {
        { FIXTURES "datapage_v2.snappy.parquet", "a", JSONL, 0, 1, 0 },
        { FIXTURES "datapage_v2.snappy.parquet", "e", JSONL, 0, 0, 0 },
        { FIXTURES "nulls.snappy.parquet", "b_struct.b_c_int", JSONL, 0, 1, 0 },
        { FIXTURES "dict-page-offset-zero.parquet", "l_partkey", JSONL, 0, 1, 0 },
        { FIXTURES "rle-dict-snappy-checksum.parquet", "binary_field", JSONL, 0, 1, 0 },
        { FIXTURES "plain-dict-uncompressed-checksum.parquet", "long_field", JSONL, 0, 1, 0 },
        { FIXTURES "datapage_v1-snappy-compressed-checksum.parquet", "a", JSONL, 0, 1, 0 },
        { FIXTURES "concatenated_gzip_members.parquet", "long_col", JSONL, 0, 1, 0 },
        { FIXTURES "hadoop_lz4_compressed.parquet", "v11", JSONL, 0, 1, 0 },
        { FIXTURES "non_hadoop_lz4_compressed.parquet", "v11", JSONL, 0, 0, 0 },
        { FIXTURES "lz4_raw_compressed.parquet", "v11", JSONL, 0, 1, 0 },
        { FIXTURES "byte_stream_split.zstd.parquet", "f64", JSONL, 0, 0, 0 },
        { FIXTURES "delta_length_byte_array.parquet", "FRUIT", JSONL, 0, 0, 0 },
        { FIXTURES "rle_boolean_encoding.parquet", "datatype_boolean", JSONL, 0, 0, 0 },
        { FIXTURES "fixed_length_byte_array.parquet", "flba_field", JSONL, 0, 0, 0 },
        { FIXTURES "page_v2_empty_compressed.parquet", "integer_column", JSONL, 0, 0, 0 },
        { FIXTURES "datapage_v2_empty_datapage.snappy.parquet", "value", JSONL, 0, 0, 0 },
        { FIXTURES "nested_lists.snappy.parquet", NULL, JSONL, 0, 0, 0 },
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
    static const scan_case shared[] = {
        { PARQUET_TESTING "list_columns.parquet", "int64_list", JSONL, 1, 0, 0 },
        { PARQUET_TESTING "list_columns.parquet", "utf8_list", JSONL, 0, 0, 0 },
        { PARQUET_TESTING "null_list.parquet", "emptylist", JSONL, 0, 0, 0 },
        { PARQUET_TESTING "repeated_no_annotation.parquet", "phoneNumbers.phone.number", JSONL, 0,
          0, 0 },
        { PARQUET_TESTING "int32_with_null_pages.parquet", "int32_field", JSONL, 0, 0, 0 },
        { PARQUET_TESTING "alltypes_tiny_pages.parquet", "string_col", JSONL, 1, 0, 0 },
        { PARQUET_TESTING "hadoop_lz4_compressed_larger.parquet", "a", JSONL, 0, 0, 0 },
        { PARQUET_TESTING "lz4_raw_compressed_larger.parquet", "a", JSONL, 0, 0, 0 },
        { PARQUET_TESTING "large_string_map.brotli.parquet", NULL, JSONL, 0, 0, 0 },
    };
    for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++)
        if (access(shared[i].path, R_OK) == 0)
            check_case(&shared[i]);
}

/* A page whose body does not match its CRC fails the streamed build as it
 * fails the whole decode: with a CRC mismatch, not a decode error. */
Test(scan_stream, a_corrupt_page_is_a_crc_mismatch)
{
    scan_case c = { FIXTURES "datapage_v1-corrupt-checksum.parquet", "a", JSONL, 0, 0, 0 };
    pq_error err;
    cr_assert_null(build(&c, WHOLE, &err));
    cr_assert_not_null(strstr(err.msg, "CRC mismatch"), "%s", err.msg);
    cr_assert_null(build(&c, STREAM_ALL, &err));
    cr_assert_not_null(strstr(err.msg, "CRC mismatch"), "%s", err.msg);
}
