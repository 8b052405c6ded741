/* Shuffle units of the index (ix_index.h): an entry of many records is cut
 * into units whose framed bytes are exactly those of its records, measured
 * again here by decoding the page; the persistent index keeps them. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ix_index.h"
#include "ix_read.h"
#include "tix.h"

/* column a: 2 pages of 2,560 required int32 rows, each cut into 5 units */
#define FIXTURE YFS_SOURCE_DIR "/tests/decode/fixtures/datapage_v1-uncompressed-checksum.parquet"

static int no_dictionary(void *ctx, uint32_t chunk, const pq_dictionary **dict, void **handle,
                         pq_error *err)
{
    (void)ctx, (void)chunk, (void)dict, (void)handle;
    return pq_error_set(err, "unexpected dictionary");
}

/* Every cut entry's units: as many as ix_units_of says, records split evenly,
 * bytes equal to the framed sizes of their records decoded afresh. Returns
 * the number of entries cut. */
static uint64_t check_units(const ix_index *ix)
{
    uint64_t unit = 0, cut = 0;
    for (uint64_t p = 0; p < ix->num_pages; p++) {
        const ix_page *pg = &ix->pages[p];
        const ix_chunk *ch = &ix->chunks[ix_locate(ix, p)];
        uint32_t units = ix_units_of(pg);
        if (!ch->cut || units == 1)
            continue;
        cut++;
        ix_dict_source dicts = { no_dictionary, NULL };
        void *handle;
        uint64_t read = 0;
        pq_error err;
        pq_page_values v;
        cr_assert_eq(ix_read_page(ix, p, &dicts, &v, &handle, &read, &err), 0, "%s", err.msg);
        ix_record *recs = calloc(pg->records, sizeof *recs);
        uint32_t count, rows;
        cr_assert_eq(ix_page_records(&ix->framing.shape, &v, pg->first_row, recs, pg->records,
                                     &count, &rows, &err), 0, "%s", err.msg);
        cr_assert_eq(count, pg->records);
        uint64_t total = 0;
        for (uint32_t k = 0; k < units; k++) {
            uint32_t a = ix_unit_first_record(pg->records, units, k);
            uint32_t b = ix_unit_first_record(pg->records, units, k + 1);
            cr_assert_leq(b - a, IX_UNIT_RECORDS);
            uint64_t bytes = 0;
            for (uint32_t r = a; r < b; r++) {
                ix_sink count = ix_sink_counter();
                cr_assert_eq(ix_frame(&ix->framing, &recs[r], &count, &err), 0);
                bytes += count.size;
            }
            cr_assert_lt(unit, ix->num_units);
            cr_assert_eq(ix->unit_bytes[unit], bytes, "page %llu unit %u",
                         (unsigned long long)p, k);
            total += bytes;
            unit++;
        }
        cr_assert_eq(total, pg->framed);
        free(recs);
        pq_page_values_free(&v);
    }
    cr_assert_eq(unit, ix->num_units, "every unit belongs to a cut entry");
    return cut;
}

static ix_options opts(ix_format format, const char *cache)
{
    ix_options o = { .dataset = FIXTURE, .column = "a", .frame = { format }, .threads = 2,
                     .cache_dir = cache };
    o.frame.rowid = format == IX_FORMAT_JSONL;
    return o;
}

Test(units, pages_of_many_records_are_cut_into_units_of_their_records)
{
    /* jsonl with _row: measured record by record; raw: every record alike */
    ix_format formats[] = { IX_FORMAT_JSONL, IX_FORMAT_RAW };
    for (int f = 0; f < 2; f++) {
        ix_options o = opts(formats[f], NULL);
        ix_index *ix;
        pq_error err;
        cr_assert_eq(ix_build(&o, &ix, &err), 0, "%s", err.msg);
        cr_assert_eq(check_units(ix), 2, "format %d: the two 2,560-row pages are cut", f);
        cr_assert_eq(ix->num_units, 2 * 5);
        ix_free(ix);
    }
}

Test(units, the_persistent_index_keeps_the_units)
{
    char dir[TIX_PATH];
    tix_temp_dir(dir, "units");
    ix_options o = opts(IX_FORMAT_JSONL, dir);
    ix_index *first, *again;
    pq_error err;
    cr_assert_eq(ix_build(&o, &first, &err), 0, "%s", err.msg);
    cr_assert_eq(ix_build(&o, &again, &err), 0, "%s", err.msg);
    cr_assert_eq(again->files_cached, 1, "the second build comes from the persistent index");
    cr_assert_eq(again->num_units, first->num_units);
    cr_assert_eq(memcmp(again->unit_bytes, first->unit_bytes,
                        first->num_units * sizeof *first->unit_bytes), 0);
    cr_assert_eq(check_units(again), 2);
    ix_free(first);
    ix_free(again);
    tix_remove(dir, "");
}
