#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "pq_meta.h"
#include "pq_page.h"
#include "pq_thrift.h"
#include "tu.h"

Test(meta, footer_locate)
{
    uint8_t tail[8] = { 100, 0, 0, 0, 'P', 'A', 'R', '1' };
    uint64_t off;
    uint32_t len;
    pq_error err;
    cr_assert_eq(pq_footer_locate(tail, 1000, &off, &len, &err), 0);
    cr_assert(off == 892 && len == 100);
    cr_assert_eq(pq_footer_locate(tail, 111, &off, &len, &err), -1);
    cr_assert(strstr(err.msg, "footer length 100"), "%s", err.msg);
    cr_assert_eq(pq_footer_locate(tail, 11, &off, &len, &err), -1);
    memcpy(tail + 4, "PARE", 4);
    cr_assert_eq(pq_footer_locate(tail, 1000, &off, &len, &err), -1);
    cr_assert(strstr(err.msg, "encrypted"), "%s", err.msg);
    memcpy(tail + 4, "ABCD", 4);
    cr_assert_eq(pq_footer_locate(tail, 1000, &off, &len, &err), -1);
    cr_assert(strstr(err.msg, "not a Parquet file"), "%s", err.msg);
}

Test(meta, generated_file_schema_and_leaves)
{
    size_t len;
    uint8_t *data = tu_fixture("gen_dict_v1_zstd_pageindex.parquet", &len);
    cr_assert_not_null(data);
    tu_file f;
    pq_error err;
    cr_assert_eq(tu_open(data, len, &f, &err), 0, "%s", err.msg);
    cr_assert_eq(f.meta.num_rows, 80);
    cr_assert_eq(f.meta.num_row_groups, 2);
    cr_assert(f.meta.created_by && strstr(f.meta.created_by, "parquet-cpp-arrow"));
    cr_assert_eq(f.nleaves, 10);
    const pq_leaf *s = &f.leaves[tu_find_leaf(&f, "s")];
    cr_assert(s->type == PQ_BYTE_ARRAY && s->logical.kind == PQ_LOGICAL_STRING);
    cr_assert(s->max_def == 1 && s->max_rep == 0);
    const pq_leaf *bin = &f.leaves[tu_find_leaf(&f, "bin")];
    cr_assert_eq(bin->logical.kind, PQ_LOGICAL_NONE);
    const pq_leaf *fx = &f.leaves[tu_find_leaf(&f, "fixed")];
    cr_assert(fx->type == PQ_FIXED_LEN_BYTE_ARRAY && fx->type_length == 3);
    int li = tu_find_leaf(&f, "lst.list.element");
    cr_assert_geq(li, 0);
    cr_assert(f.leaves[li].max_def == 3 && f.leaves[li].max_rep == 1);
    cr_assert_str_eq(f.meta.schema[f.leaves[li].schema_index].name, "element");

    /* OffsetIndex: every location points at a data page header whose
     * header + body size is the location's size. */
    int multi = 0;
    for (int c = 0; c < f.nleaves; c++) {
        const pq_column_meta *cm = &f.meta.row_groups[1].columns[c];
        cr_assert_geq(cm->offset_index_offset, 0, "column %d has no offset index", c);
        cr_assert_leq((uint64_t)cm->offset_index_offset + cm->offset_index_length, len);
        pq_offset_index oi;
        cr_assert_eq(pq_offset_index_parse(data + cm->offset_index_offset,
                                           (size_t)cm->offset_index_length, &oi, &err),
                     0, "%s", err.msg);
        cr_assert_geq(oi.count, 1);
        multi += oi.count > 1;
        cr_assert_eq(oi.pages[0].first_row_index, 0);
        for (int32_t p = 0; p < oi.count; p++) {
            pq_page_header h;
            cr_assert_eq(pq_page_header_parse(data + oi.pages[p].offset,
                                              len - (size_t)oi.pages[p].offset, &h, &err),
                         0, "%s", err.msg);
            cr_assert_eq(h.type, PQ_PAGE_DATA);
            cr_assert_eq((int64_t)h.header_len + h.compressed_size, oi.pages[p].compressed_size);
        }
        pq_offset_index_free(&oi);
    }
    cr_assert_gt(multi, 0, "small pages: some chunk has several");
    tu_close(&f);
    free(data);
}

/* FileMetaData with the given schema (name, type or -1, num_children) and
 * one row group holding `chunks` BYTE_ARRAY chunks. */
typedef struct node { const char *name; int type; int children; int rep; } node;

static size_t build_meta(tw *w, const node *nodes, int n, int chunks)
{
    tw_init(w);
    tw_i32f(w, 1, 1);
    tw_field(w, 2, PQ_TT_LIST);
    tw_list(w, PQ_TT_STRUCT, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        tw_begin(w);
        if (nodes[i].type >= 0)
            tw_i32f(w, 1, nodes[i].type);
        if (i > 0)
            tw_i32f(w, 3, nodes[i].rep);
        tw_field(w, 4, PQ_TT_BINARY);
        tw_binary(w, nodes[i].name);
        if (nodes[i].children)
            tw_i32f(w, 5, nodes[i].children);
        if (nodes[i].type == PQ_BYTE_ARRAY) {
            tw_field(w, 10, PQ_TT_STRUCT); /* LogicalType STRING */
            tw_begin(w);
            tw_field(w, 1, PQ_TT_STRUCT);
            tw_begin(w);
            tw_end(w);
            tw_end(w);
        }
        tw_end(w);
    }
    tw_i64f(w, 3, 5);
    tw_field(w, 4, PQ_TT_LIST);
    tw_list(w, PQ_TT_STRUCT, 1);
    tw_begin(w);
    tw_field(w, 1, PQ_TT_LIST);
    tw_list(w, PQ_TT_STRUCT, (uint32_t)chunks);
    for (int c = 0; c < chunks; c++) {
        tw_begin(w);
        tw_i64f(w, 2, 0);
        tw_field(w, 3, PQ_TT_STRUCT);
        tw_begin(w);
        tw_i32f(w, 1, PQ_BYTE_ARRAY);
        tw_field(w, 2, PQ_TT_LIST);
        tw_list(w, PQ_TT_I32, 1);
        tw_zigzag(w, 0);
        tw_field(w, 3, PQ_TT_LIST);
        tw_list(w, PQ_TT_BINARY, 1);
        tw_binary(w, "x");
        tw_i32f(w, 4, PQ_ZSTD);
        tw_i64f(w, 5, 5);
        tw_i64f(w, 6, 100);
        tw_i64f(w, 7, 50);
        tw_i64f(w, 9, 4);
        tw_end(w);
        tw_end(w);
    }
    tw_i64f(w, 2, 100);
    tw_i64f(w, 3, 5);
    tw_end(w);
    tw_field(w, 6, PQ_TT_BINARY);
    tw_binary(w, "hand");
    tw_byte(w, 0);
    return w->len;
}

Test(meta, hand_built_nested_schema)
{
    const node nodes[] = {
        { "root", -1, 2, 0 },
        { "a", -1, 1, PQ_OPTIONAL },
        { "list", -1, 1, PQ_REPEATED },
        { "item", PQ_BYTE_ARRAY, 0, PQ_OPTIONAL },
        { "b", PQ_BYTE_ARRAY, 0, PQ_REQUIRED },
    };
    tw w;
    build_meta(&w, nodes, 5, 2);
    pq_file_meta m;
    pq_error err;
    cr_assert_eq(pq_file_meta_parse(w.buf, w.len, &m, &err), 0, "%s", err.msg);
    cr_assert_str_eq(m.created_by, "hand");
    cr_assert_eq(m.row_groups[0].columns[0].codec, PQ_ZSTD);
    cr_assert_eq(m.row_groups[0].columns[0].dictionary_page_offset, -1);
    pq_leaf *l;
    int n;
    cr_assert_eq(pq_file_leaves(&m, &l, &n, &err), 0);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(l[0].path, "a.list.item");
    cr_assert(l[0].max_def == 3 && l[0].max_rep == 1 && l[0].logical.kind == PQ_LOGICAL_STRING);
    cr_assert_str_eq(l[1].path, "b");
    cr_assert(l[1].max_def == 0 && l[1].max_rep == 0);
    pq_leaves_free(l, n);
    pq_file_meta_free(&m);

    /* one chunk for two leaves */
    build_meta(&w, nodes, 5, 1);
    cr_assert_eq(pq_file_meta_parse(w.buf, w.len, &m, &err), -1);
    cr_assert(strstr(err.msg, "1 column chunks but the schema has 2"), "%s", err.msg);

    /* children count beyond the schema */
    node bad[5];
    memcpy(bad, nodes, sizeof bad);
    bad[0].children = 3;
    build_meta(&w, bad, 5, 2);
    cr_assert_eq(pq_file_meta_parse(w.buf, w.len, &m, &err), -1);
    cr_assert(strstr(err.msg, "schema ends"), "%s", err.msg);
    /* elements left over after the tree */
    bad[0].children = 1;
    build_meta(&w, bad, 5, 2);
    cr_assert_eq(pq_file_meta_parse(w.buf, w.len, &m, &err), -1);
    cr_assert(strstr(err.msg, "tree ends"), "%s", err.msg);
}

Test(meta, every_footer_truncation_fails)
{
    const node nodes[] = { { "root", -1, 1, 0 }, { "b", PQ_BYTE_ARRAY, 0, PQ_OPTIONAL } };
    tw w;
    build_meta(&w, nodes, 2, 1);
    pq_file_meta m;
    pq_error err;
    cr_assert_eq(pq_file_meta_parse(w.buf, w.len, &m, &err), 0, "%s", err.msg);
    pq_file_meta_free(&m);
    for (size_t n = 0; n < w.len; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, w.buf, n);
        cr_assert_eq(pq_file_meta_parse(copy, n, &m, &err), -1, "length %zu", n);
        cr_assert(strncmp(err.msg, "FileMetaData: ", 14) == 0, "%s", err.msg);
        free(copy);
    }
}

/* Caps this test's address space at its current size plus `extra` bytes
 * (Criterion runs each test in its own process), so that an allocation of
 * more fails instead of succeeding lazily. Returns 0, or -1 under ASan, whose
 * shadow memory needs terabytes of address space. */
static int limit_address_space(size_t extra)
{
#if defined(__SANITIZE_ADDRESS__)
    (void)extra;
    return -1;
#else
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    cr_assert_not_null(f);
    cr_assert_eq(fscanf(f, "%lu", &pages), 1);
    fclose(f);
    struct rlimit r;
    cr_assert_eq(getrlimit(RLIMIT_AS, &r), 0);
    r.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + extra;
    cr_assert_eq(setrlimit(RLIMIT_AS, &r), 0);
    return 0;
#endif
}

/* A footer whose list counts claim far more elements than its bytes could
 * back fails at the list header, naming the count, before anything is
 * allocated for the elements (2^30 row groups would be 24 GiB). */
Test(meta, list_count_beyond_the_bytes_fails_before_allocating)
{
    int limited = limit_address_space(16u << 20) == 0;
    tw w;
    tw_init(&w);
    tw_i32f(&w, 1, 1);
    tw_field(&w, 4, PQ_TT_LIST);
    tw_list(&w, PQ_TT_STRUCT, 1u << 30);
    tw_byte(&w, 0x19); /* three bytes of a first row group */
    tw_byte(&w, 0x00);
    tw_byte(&w, 0x00);
    pq_file_meta m;
    pq_error err;
    cr_assert_eq(pq_file_meta_parse(w.buf, w.len, &m, &err), -1);
    cr_assert(strstr(err.msg, "FileMetaData: thrift: list at byte") &&
                  strstr(err.msg, "declares 1073741824 elements") &&
                  strstr(err.msg, "only 3 bytes left"),
              "%s (address space limited: %d)", err.msg, limited);
    /* the same for an OffsetIndex's page locations and a ColumnIndex's null
     * counts */
    const uint8_t oi[] = { 0x19, 0xfc, 0x80, 0x80, 0x80, 0x80, 0x04, 0x00, 0x00 };
    pq_offset_index o;
    cr_assert_eq(pq_offset_index_parse(oi, sizeof oi, &o, &err), -1);
    cr_assert(strstr(err.msg, "declares 1073741824 elements"), "%s", err.msg);
    const uint8_t ci[] = { 0x59, 0xf6, 0x80, 0x80, 0x80, 0x80, 0x04, 0x02, 0x00 };
    pq_column_index c;
    cr_assert_eq(pq_column_index_parse(ci, sizeof ci, &c, &err), -1);
    cr_assert(strstr(err.msg, "declares 1073741824 elements"), "%s", err.msg);
}

/* A count the bytes allow (each element takes one byte or more) is still
 * not allocated up front: a 3-byte column chunk becomes a 96-byte structure,
 * so 1 MiB claiming a million chunks would be ~96 MiB. The array grows with
 * the chunks that parse; here 1000 parse and the next one is garbage, within
 * an address space of 16 MiB more than the test has. */
Test(meta, list_grows_with_the_elements_that_parse)
{
    enum { CLAIMED = 1000000, GOOD = 1000 };
    size_t len = 1u << 20;
    uint8_t *buf = malloc(len);
    cr_assert_not_null(buf);
    memset(buf, 0xff, len); /* 0xff: a field header of unknown type 15 */
    tw w;
    tw_init(&w);
    tw_i32f(&w, 1, 1);
    tw_field(&w, 4, PQ_TT_LIST);
    tw_list(&w, PQ_TT_STRUCT, 1);
    tw_begin(&w);
    tw_field(&w, 1, PQ_TT_LIST);
    tw_list(&w, PQ_TT_STRUCT, CLAIMED);
    memcpy(buf, w.buf, w.len);
    size_t at = w.len;
    for (int i = 0; i < GOOD; i++) { /* ColumnChunk { 8: crypto_metadata {} } */
        buf[at++] = 0x8c;
        buf[at++] = 0x00;
        buf[at++] = 0x00;
    }
    cr_assert_gt(len - w.len, (size_t)CLAIMED, "the claim must pass the bytes-left check");
    int limited = limit_address_space(16u << 20) == 0;
    pq_file_meta m;
    pq_error err;
    cr_assert_eq(pq_file_meta_parse(buf, len, &m, &err), -1);
    cr_assert(strstr(err.msg, "column chunk 1000: ") && strstr(err.msg, "unknown type 15"),
              "%s (address space limited: %d)", err.msg, limited);
    free(buf);
}
