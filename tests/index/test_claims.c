/* What a page header may claim (ix_claims.h), at mount and at read time. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ix_claims.h"
#include "ix_index.h"
#include "ix_read.h"
#include "tix.h"


static pq_page_header page(int type, int32_t uncompressed, int32_t compressed, int32_t values)
{
    return (pq_page_header){ .type = type, .uncompressed_size = uncompressed,
                             .compressed_size = compressed, .num_values = values };
}

Test(claims, each_rule_at_its_limit)
{
    const ix_chunk_bounds chunk = { .uncompressed = 64 << 20, .values = 1000 };
    pq_error err;
    pq_page_header h = page(PQ_PAGE_DATA, 64 << 20, 48 << 10, 1000);
    cr_assert_eq(ix_page_claims_check(&h, &chunk, &err), 0, "%s", err.msg);

    /* more than the chunk's whole uncompressed size */
    h = page(PQ_PAGE_DATA, (64 << 20) + 1, 48 << 10, 10);
    cr_assert_eq(ix_page_claims_check(&h, &chunk, &err), -1);
    cr_assert(strstr(err.msg, "claims 67108865 bytes uncompressed, more than the 67108864 of "
                              "its whole column chunk"), "%s", err.msg);

    /* the ratio: compressed x 1024 + 16 MiB, whatever the codec */
    const ix_chunk_bounds big = { .uncompressed = INT32_MAX, .values = 1000 };
    int32_t at_limit = 1000 * IX_MAX_COMPRESSION_RATIO + (int32_t)IX_RATIO_SLACK_BYTES;
    h = page(PQ_PAGE_DATA, at_limit, 1000, 10);
    cr_assert_eq(ix_page_claims_check(&h, &big, &err), 0, "%s", err.msg);
    h = page(PQ_PAGE_DATA, at_limit + 1, 1000, 10);
    cr_assert_eq(ix_page_claims_check(&h, &big, &err), -1);
    cr_assert(strstr(err.msg, "from 1000 compressed (over 1024x): refused as a decompression "
                              "bomb"), "%s", err.msg);
    h = page(PQ_PAGE_DICTIONARY, INT32_MAX, 10, 10); /* dictionaries too */
    cr_assert_eq(ix_page_claims_check(&h, &big, &err), -1);
    cr_assert(strstr(err.msg, "decompression bomb"), "%s", err.msg);

    /* a data page's values: at most the chunk's; a dictionary's entries are not level
     * entries and are bounded by its size alone */
    h = page(PQ_PAGE_DATA_V2, 100, 100, 1001);
    cr_assert_eq(ix_page_claims_check(&h, &chunk, &err), -1);
    cr_assert(strstr(err.msg, "claims 1001 values, more than the 1000 of its whole column "
                              "chunk"), "%s", err.msg);
    h = page(PQ_PAGE_DICTIONARY, 100, 100, 5000);
    cr_assert_eq(ix_page_claims_check(&h, &chunk, &err), 0, "%s", err.msg);
}

static int read_page(ix_index *ix, uint64_t p, pq_error *err)
{
    ix_dict_source dicts = { tix_load_dictionary, ix };
    void *handle;
    uint64_t read = 0;
    pq_page_values v;
    int rc = ix_read_page(ix, p, &dicts, &v, &handle, &read, err);
    if (rc == 0)
        pq_page_values_free(&v);
    tix_free_dictionary(handle);
    return rc;
}

/* The read path holds every header it parses to its chunk's bounds, which
 * the index keeps from the footer: pages the mount sized without seeing
 * their header (page index, persistent index) are checked there. */
Test(claims, the_read_path_checks_every_header)
{
    ix_options o = { .dataset = TIX_SAMPLE, .frame = { IX_FORMAT_JSONL }, .threads = 2 };
    ix_index *ix;
    pq_error err;
    cr_assert_eq(ix_build(&o, &ix, &err), 0, "%s", err.msg);
    cr_assert_gt(ix->num_pages, 0);
    for (uint32_t c = 0; c < ix->num_chunks; c++)
        cr_assert(ix->chunks[c].bounds.uncompressed > 0 && ix->chunks[c].bounds.values > 0,
                  "chunk %u has no bounds", c);
    cr_assert_eq(read_page(ix, 0, &err), 0, "%s", err.msg);

    /* a chunk that declares less than its first page claims */
    ix_chunk *c = &ix->chunks[ix_locate(ix, 0)];
    ix_chunk_bounds kept = c->bounds;
    c->bounds.uncompressed = 10;
    cr_assert_eq(read_page(ix, 0, &err), -1);
    cr_assert(strstr(err.msg, "part-0.parquet: ") && strstr(err.msg, "data page at offset ") &&
                  strstr(err.msg, "more than the 10 of its whole column chunk"),
              "%s", err.msg);
    c->bounds = kept;
    c->bounds.values = 1;
    cr_assert_eq(read_page(ix, 0, &err), -1);
    cr_assert(strstr(err.msg, "more than the 1 of its whole column chunk"), "%s", err.msg);
    c->bounds = kept;
    cr_assert_eq(read_page(ix, 0, &err), 0, "%s", err.msg);

    /* and its dictionary page */
    cr_assert_geq(c->dict_offset, 0, "the sample's chunks have dictionaries");
    pq_dictionary d;
    uint64_t read = 0;
    c->bounds.uncompressed = 1;
    cr_assert_eq(ix_read_dictionary(ix, ix_locate(ix, 0), &d, &read, &err), -1);
    cr_assert(strstr(err.msg, "dictionary page at offset") &&
                  strstr(err.msg, "more than the 1 of its whole column chunk"),
              "%s", err.msg);
    ix_free(ix);
}
