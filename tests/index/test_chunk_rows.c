/* ix_chunk_rows: a column chunk handed out page by page as runs of whole
 * rows must be exactly the chunk's level entries and values, in order, cut
 * only at row starts, and hold the rows that continue over pages whole.
 * The oracle decodes every page of the chunk on its own (pq_page_decode)
 * and joins their entries. Files: rows continued over many pages
 * (tests/data/stream: hand-written pages of 7 and 50 entries, DuckDB's
 * token lists), and decode fixtures with nulls, nested lists, dictionaries,
 * v2 pages and checksums. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ix_chunk_rows.h"
#include "ix_chunks_ahead.h"
#include "ix_internal.h"

#define FIXTURES YFS_SOURCE_DIR "/tests/decode/fixtures/"
#define STREAM_DATA YFS_SOURCE_DIR "/tests/data/stream/"

/* The entries of a chunk, joined: levels, and an FNV-1a hash a value. */
typedef struct entries {
    uint16_t *def, *rep;
    uint64_t *value;
    uint64_t levels, values;
    uint32_t pages_starting_mid_row;
} entries;

static uint64_t hash_value(const pq_bytes *b)
{
    uint64_t h = 0xcbf29ce484222325ull ^ b->len;
    for (uint32_t i = 0; i < b->len; i++)
        h = (h ^ b->ptr[i]) * 0x100000001b3ull;
    return h;
}

static void add(entries *e, const pq_page_values *v)
{
    e->def = realloc(e->def, (e->levels + v->num_levels + 1) * sizeof *e->def);
    e->rep = realloc(e->rep, (e->levels + v->num_levels + 1) * sizeof *e->rep);
    e->value = realloc(e->value, (e->values + v->num_values + 1) * sizeof *e->value);
    cr_assert(e->def && e->rep && e->value);
    for (uint32_t i = 0; i < v->num_levels; i++) {
        e->def[e->levels + i] = v->def_levels ? v->def_levels[i] : 0;
        e->rep[e->levels + i] = v->rep_levels ? v->rep_levels[i] : 0;
    }
    for (uint32_t i = 0; i < v->num_values; i++) {
        pq_bytes value = pq_page_value(v, i);
        e->value[e->values + i] = hash_value(&value);
    }
    e->levels += v->num_levels;
    e->values += v->num_values;
}

static void entries_free(entries *e)
{
    free(e->def);
    free(e->rep);
    free(e->value);
}

/* The oracle: every page of the chunk decoded on its own. */
static void oracle(const ix_source *s, int leaf, int32_t g, entries *out)
{
    const pq_leaf *l = &s->leaves[leaf];
    const pq_column_meta *m = &s->meta.row_groups[g].columns[leaf];
    int64_t start = m->data_page_offset;
    if (m->dictionary_page_offset > 0 && m->dictionary_page_offset < start)
        start = m->dictionary_page_offset;
    size_t len = (size_t)m->total_compressed_size;
    uint8_t *buf = malloc(len);
    pq_error err;
    cr_assert(buf && ix_store_read(s->store, s->fd, s->name, buf, len, (uint64_t)start, &err) == 0);
    pq_column_desc desc = { l->type, l->type_length, l->max_def, l->max_rep, m->codec };
    pq_dictionary dict;
    int has_dict = 0;
    for (size_t off = 0; off < len;) {
        pq_page_header h;
        cr_assert(pq_page_header_parse(buf + off, len - off, &h, &err) == 0, "%s", err.msg);
        const uint8_t *body = buf + off + h.header_len;
        if (h.type == PQ_PAGE_DICTIONARY) {
            cr_assert(pq_dictionary_decode(&desc, &h, body, (size_t)h.compressed_size, &dict,
                                           &err) == 0, "%s", err.msg);
            has_dict = 1;
        } else if (h.type == PQ_PAGE_DATA || h.type == PQ_PAGE_DATA_V2) {
            pq_page_values v;
            cr_assert(pq_page_decode(&desc, &h, body, (size_t)h.compressed_size,
                                     has_dict ? &dict : NULL, &v, &err) == 0, "%s", err.msg);
            out->pages_starting_mid_row += v.num_levels && v.rep_levels && v.rep_levels[0];
            add(out, &v);
            pq_page_values_free(&v);
        }
        off += h.header_len + (size_t)h.compressed_size;
    }
    if (has_dict)
        pq_dictionary_free(&dict);
    free(buf);
}

/* Leaf `leaf` of row group g read by ix_chunk_rows (the chunk read ahead
 * into memory, or read by the reader itself) against the oracle's entries. */
static void check_chunk(const char *path, const ix_source *s, int leaf, int32_t g, int ahead,
                        const entries *want)
{
    pq_error err;
    ix_chunk_rows cr;
    uint64_t bytes_read = 0, rows = 0;
    ix_chunk_ref ref = { s, leaf, g, NULL };
    if (ahead)
        cr_assert(ix_chunks_read_ahead(&ref, 1, UINT64_MAX, 1, 4, &bytes_read, &err) == 0,
                  "%s: %s", path, err.msg);
    cr_assert(ix_chunk_rows_open(&cr, s, leaf, g, 16u << 20, 1, &bytes_read, ref.bytes,
                                 &err) == 0, "%s: %s", path, err.msg);
    entries got = { 0 };
    pq_page_values run;
    int rc;
    while ((rc = ix_chunk_rows_next(&cr, &run, &err)) == 1) {
        cr_assert(run.num_levels > 0, "%s: an empty run", path);
        for (uint32_t i = 0; i < run.num_levels; i++)
            rows += !run.rep_levels || run.rep_levels[i] == 0;
        cr_assert(!run.rep_levels || run.rep_levels[0] == 0,
                  "%s: leaf %d, row group %d: a run starts inside a row", path, leaf, g);
        add(&got, &run);
    }
    cr_assert(rc == 0, "%s: leaf %d, row group %d: %s", path, leaf, g, err.msg);
    cr_assert_eq(rows, (uint64_t)s->meta.row_groups[g].num_rows,
                 "%s: leaf %d, row group %d: %llu rows", path, leaf, g, (unsigned long long)rows);
    cr_assert_eq(got.levels, want->levels, "%s: leaf %d: %llu entries, pages hold %llu", path,
                 leaf, (unsigned long long)got.levels, (unsigned long long)want->levels);
    cr_assert_eq(got.values, want->values, "%s: leaf %d", path, leaf);
    cr_assert(memcmp(got.def, want->def, got.levels * sizeof *got.def) == 0 &&
                  memcmp(got.rep, want->rep, got.levels * sizeof *got.rep) == 0 &&
                  memcmp(got.value, want->value, got.values * sizeof *got.value) == 0,
              "%s: leaf %d, row group %d: entries differ from the pages'", path, leaf, g);
    cr_assert(bytes_read > 0 || rows == 0);
    ix_chunk_rows_close(&cr);
    entries_free(&got);
}

/* Every leaf of every row group of the file at path (check_chunk, read
 * ahead and not); returns the pages that start inside a row. */
static uint32_t check_file(const char *path)
{
    ix_sources ss = { 0 };
    ix_store_options so = { 0 };
    pq_error err;
    cr_assert(ix_sources_list(&ss, path, &so, &err) == 0, "%s: %s", path, err.msg);
    const ix_source *s = &ss.files[0];
    uint32_t mid_row = 0;
    for (int32_t g = 0; g < s->meta.num_row_groups; g++)
        for (int leaf = 0; leaf < s->num_leaves; leaf++) {
            entries want = { 0 };
            oracle(s, leaf, g, &want);
            mid_row += want.pages_starting_mid_row;
            for (int ahead = 0; ahead < 2; ahead++)
                check_chunk(path, s, leaf, g, ahead, &want);
            entries_free(&want);
        }
    ix_sources_free(&ss);
    return mid_row;
}

Test(chunk_rows, rows_continued_over_pages_are_handed_out_whole)
{
    static const char *const files[] = {
        STREAM_DATA "legacy_two_level_7.parquet",
        STREAM_DATA "legacy_bare_50.parquet",
        STREAM_DATA "duckdb_tokens.parquet",
    };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        cr_assert(check_file(files[i]) > 0, "%s: the premise: pages that start inside a row",
                  files[i]);
}

Test(chunk_rows, every_leaf_of_the_decode_fixtures)
{
    static const char *const files[] = {
        FIXTURES "nested_lists.snappy.parquet",
        FIXTURES "nulls.snappy.parquet",
        FIXTURES "datapage_v2.snappy.parquet",
        FIXTURES "gen_dict_v1_zstd_pageindex.parquet",
        FIXTURES "datapage_v1-snappy-compressed-checksum.parquet",
        FIXTURES "delta_length_byte_array.parquet",
        STREAM_DATA "duckdb_text.parquet",
    };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        check_file(files[i]);
}

Test(chunk_rows, a_page_whose_body_fails_its_crc_names_its_offset)
{
    ix_sources ss = { 0 };
    ix_store_options so = { 0 };
    pq_error err;
    const char *path = FIXTURES "datapage_v1-corrupt-checksum.parquet";
    cr_assert(ix_sources_list(&ss, path, &so, &err) == 0, "%s", err.msg);
    for (int verify = 1; verify >= 0; verify--) {
        ix_chunk_rows cr;
        uint64_t bytes_read = 0;
        cr_assert(ix_chunk_rows_open(&cr, &ss.files[0], 0, 0, 0, verify, &bytes_read, NULL,
                                     &err) == 0);
        pq_page_values run;
        int rc;
        uint64_t levels = 0;
        while ((rc = ix_chunk_rows_next(&cr, &run, &err)) == 1)
            levels += run.num_levels;
        if (verify)
            cr_assert(rc < 0 && strstr(err.msg, "CRC mismatch") &&
                          strstr(err.msg, "page at file offset 4"),
                      "%s", rc < 0 ? err.msg : "no error");
        else
            cr_assert(rc == 0 && levels == (uint64_t)ss.files[0].meta.row_groups[0].num_rows,
                      "crc skipped: %d, %llu entries", rc, (unsigned long long)levels);
        ix_chunk_rows_close(&cr);
    }
    ix_sources_free(&ss);
}
