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
    cr_assert_eq(ix_page_claims_check(&h, &chunk, 0, &err), 0, "%s", err.msg);

    /* more than the chunk's whole uncompressed size */
    h = page(PQ_PAGE_DATA, (64 << 20) + 1, 48 << 10, 10);
    cr_assert_eq(ix_page_claims_check(&h, &chunk, 0, &err), -1);
    cr_assert(strstr(err.msg, "claims 67108865 bytes uncompressed, more than the 67108864 of "
                              "its whole column chunk"), "%s", err.msg);

    /* no compression ratio: a page claiming 2 GiB from 10 bytes passes the claims (a data
     * page may stream); held whole, it must fit the mount's memory */
    const ix_chunk_bounds big = { .uncompressed = INT64_MAX, .values = 1000 };
    h = page(PQ_PAGE_DATA, INT32_MAX, 10, 10);
    cr_assert_eq(ix_page_claims_check(&h, &big, (uint64_t)256 << 20, &err), 0, "%s", err.msg);
    cr_assert_eq(ix_page_hold_check(&h, 0, (uint64_t)256 << 20, &err), -1);
    cr_assert(strstr(err.msg, "a data page of 2147483647 bytes uncompressed (10 compressed): "
                              "holding it takes 2147484047 bytes, more than mem=256M allows"),
              "%s", err.msg);
    cr_assert(strstr(err.msg, "it needs mem=8177M or more"), "%s", err.msg);
    cr_assert_eq(ix_page_hold_check(&h, 0, 0, &err), 0, "no mem=: no limit");

    /* a dictionary page is held whole: the claims check its memory */
    h = page(PQ_PAGE_DICTIONARY, (1 << 30) + 4, 1627, 1);
    cr_assert_eq(ix_page_claims_check(&h, &big, (uint64_t)256 << 20, &err), -1);
    cr_assert(strstr(err.msg, "a dictionary page of 1073741828 bytes uncompressed (1627 "
                              "compressed)") && strstr(err.msg, "it needs mem=4081M or more"),
              "%s", err.msg);
    cr_assert_eq(ix_page_claims_check(&h, &big, (uint64_t)4081 << 20, &err), 0, "%s", err.msg);
    cr_assert_eq(ix_page_claims_check(&h, &big, (uint64_t)4080 << 20, &err), -1);
    cr_assert_eq(ix_page_claims_check(&h, &big, (uint64_t)4 << 30, &err), 0, "%s", err.msg);

    /* a data page's values: at most the chunk's; a dictionary's entries are not level
     * entries and are bounded by its size alone */
    h = page(PQ_PAGE_DATA_V2, 100, 100, 1001);
    cr_assert_eq(ix_page_claims_check(&h, &chunk, 0, &err), -1);
    cr_assert(strstr(err.msg, "claims 1001 values, more than the 1000 of its whole column "
                              "chunk"), "%s", err.msg);
    h = page(PQ_PAGE_DICTIONARY, 100, 100, 5000);
    cr_assert_eq(ix_page_claims_check(&h, &chunk, 0, &err), 0, "%s", err.msg);
}

/* The limit and what a message asks for agree: the mem= named is the least
 * that holds the bytes, in MiB; a small mount holds a writer's usual 1 MiB page. */
Test(claims, the_mem_needed_is_the_least_that_holds)
{
    uint64_t mib = (uint64_t)1 << 20;
    cr_assert_eq(ix_hold_max(0), UINT64_MAX);
    cr_assert_geq(ix_hold_max(mib), 4 * mib, "mem=1M holds a 1 MiB page and its entries");
    for (uint64_t bytes = 1; bytes < ((uint64_t)1 << 34); bytes = bytes * 3 + 7) {
        uint64_t need = ix_mem_needed(bytes);
        cr_assert_eq(need % mib, 0);
        cr_assert_geq(ix_hold_max(need), bytes, "%llu", (unsigned long long)bytes);
        cr_assert(need == mib || ix_hold_max(need - mib) < bytes, "%llu",
                  (unsigned long long)bytes);
    }
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
