#include "yfs_rows.h"

#include <stdlib.h>
#include <string.h>

#include "yfs_loads.h"
#include "yfs_records.h"

/* The decoded records of one page, read on its own. */
typedef struct page_records {
    pq_page_values values;
    ix_record *recs;
    uint32_t cap; /* room in recs */
} page_records;

/* Read and decode one page into pr, its memory reserved for hold. */
static int load_page(yfs_mount *m, uint64_t page, yfs_hold *hold, page_records *pr,
                     pq_error *err)
{
    uint32_t n = m->ix->pages[page].records;
    if (n > pr->cap) {
        yfs_budget_reserve(m->budget, (uint64_t)(n - pr->cap) * sizeof *pr->recs, YFS_MEM_BUILD,
                           YFS_DEMAND, hold);
        ix_record *grown = realloc(pr->recs, n * sizeof *grown);
        if (!grown) {
            yfs_budget_release(m->budget, (uint64_t)(n - pr->cap) * sizeof *pr->recs,
                               YFS_MEM_BUILD, hold);
            return pq_error_set(err, "out of memory for a page of %u records", n);
        }
        pr->recs = grown;
        pr->cap = n;
    }
    uint8_t *raw;
    uint32_t len;
    if (yfs_page_read(m, page, hold, &raw, &len, err) < 0)
        return -1;
    int rc = yfs_page_records(m, page, raw, len, hold, &pr->values, pr->recs, err);
    free(raw);
    yfs_budget_release(m->budget, len, YFS_MEM_RAW, hold);
    return rc;
}

static void page_records_free(yfs_mount *m, page_records *pr, yfs_hold *hold)
{
    free(pr->recs);
    yfs_budget_release(m->budget, (uint64_t)pr->cap * sizeof *pr->recs, YFS_MEM_BUILD, hold);
}

int yfs_rows_measure(yfs_mount *m, pq_error *err)
{
    const ix_index *ix = m->ix;
    if (ix->num_records > UINT32_MAX)
        return pq_error_set(err, "shuffle=row: %llu records; at most %u are supported",
                            (unsigned long long)ix->num_records, UINT32_MAX);
    m->record_bytes = malloc((ix->num_records ? ix->num_records : 1) * sizeof *m->record_bytes);
    m->page_first_record = malloc((ix->num_pages + 1) * sizeof *m->page_first_record);
    if (!m->record_bytes || !m->page_first_record)
        return pq_error_set(err, "out of memory for the size of %llu records",
                            (unsigned long long)ix->num_records);
    page_records pr = { 0 };
    yfs_hold hold = { 0 }; /* the mount's own: nothing else holds memory yet */
    yfs_hold_enter(m->budget, &hold);
    uint64_t next = 0;
    int rc = 0;
    for (uint64_t page = 0; rc == 0 && page < ix->num_pages; page++) {
        m->page_first_record[page] = next;
        if (ix->pages[page].records == 0)
            continue;
        if (next + ix->pages[page].records > ix->num_records) {
            rc = pq_error_set(err, "pages hold more records than the index counted");
            break;
        }
        if ((rc = load_page(m, page, &hold, &pr, err)) < 0)
            break;
        for (uint32_t k = 0; k < ix->pages[page].records; k++) {
            ix_sink count = ix_sink_counter();
            if ((rc = ix_frame(&ix->framing, &pr.recs[k], &count, err)) < 0)
                break;
            m->record_bytes[next++] = (uint32_t)count.size; /* < a page's 2 GiB */
        }
        yfs_page_values_drop(m, &pr.values, &hold);
    }
    m->page_first_record[ix->num_pages] = next;
    page_records_free(m, &pr, &hold);
    yfs_hold_leave(m->budget, &hold);
    memset(&m->stats, 0, sizeof m->stats); /* no reader or worker runs yet */
    return rc;
}

/* One record of a segment: its number in the dataset and its place in the
 * segment's order. */
typedef struct wanted {
    uint32_t record, slot;
} wanted;

static int by_record(const void *a, const void *b)
{
    uint32_t x = ((const wanted *)a)->record, y = ((const wanted *)b)->record;
    return (x > y) - (x < y);
}

/* The page holding record r: the last page whose first record is <= r and
 * that holds any (pages without records share their successor's start). */
static uint64_t page_of(const yfs_mount *m, uint64_t r)
{
    uint64_t lo = 0, hi = m->ix->num_pages;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (m->page_first_record[mid] <= r)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

int yfs_rows_build(yfs_mount *m, const sh_plan *plan, uint64_t s, yfs_hold *hold,
                   uint8_t **data, pq_error *err)
{
    const sh_segment *seg = &plan->segments[s];
    uint32_t n = seg->records;
    uint64_t arrays = (uint64_t)(n ? n : 1) * sizeof(wanted) + ((uint64_t)n + 1) * sizeof(uint64_t);
    yfs_budget_reserve(m->budget, arrays, YFS_MEM_BUILD, YFS_DEMAND, hold);
    wanted *want = malloc((n ? n : 1) * sizeof *want);
    uint64_t *offset = malloc(((uint64_t)n + 1) * sizeof *offset);
    uint8_t *buf = yfs_segment_alloc(seg->bytes);
    page_records pr = { 0 };
    int rc = 0;
    if (!want || !offset || !buf) {
        rc = pq_error_set(err, "out of memory for a segment of %u records", n);
        goto out;
    }
    /* Slot i starts where the records served before it end. */
    offset[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = plan->rows[seg->first + i];
        want[i] = (wanted){ r, i };
        offset[i + 1] = offset[i] + m->record_bytes[r];
    }
    qsort(want, n, sizeof *want, by_record);

    const ix_framing *f = &m->ix->framing;
    for (uint32_t k = 0; rc == 0 && k < n;) {
        uint64_t page = page_of(m, want[k].record);
        uint64_t first = m->page_first_record[page], end = m->page_first_record[page + 1];
        if ((rc = load_page(m, page, hold, &pr, err)) < 0)
            break;
        for (; rc == 0 && k < n && want[k].record < end; k++) {
            size_t size = (size_t)(offset[want[k].slot + 1] - offset[want[k].slot]);
            ix_sink slot = ix_sink_buffer(buf + offset[want[k].slot], size);
            rc = yfs_frame_record(f, &pr.recs[want[k].record - first], &slot, err);
            if (rc == 0 && slot.size != size)
                rc = pq_error_set(err, "a record fills %llu of the %zu bytes measured at mount "
                                  "(a source file changed?)", (unsigned long long)slot.size,
                                  size);
        }
        yfs_page_values_drop(m, &pr.values, hold);
    }
out:
    page_records_free(m, &pr, hold);
    free(want);
    free(offset);
    yfs_budget_release(m->budget, arrays, YFS_MEM_BUILD, hold);
    if (rc < 0) {
        yfs_segment_free(buf, seg->bytes);
        return -1;
    }
    *data = buf;
    return 0;
}
