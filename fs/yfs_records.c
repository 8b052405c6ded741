#include "yfs_records.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ix_read.h"
#include "yfs_dicts.h"

static uint64_t value_bytes(const pq_page_values *v)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < v->num_values; i++)
        total += v->values[i].len;
    return total;
}

void yfs_page_values_drop(yfs_mount *m, pq_page_values *values, yfs_hold *hold)
{
    yfs_budget_release(m->budget, pq_page_values_bytes(values), YFS_MEM_DECODED, hold);
    pq_page_values_free(values);
}

/* Values decoded from a dictionary point into it, and a page-shuffled
 * segment's pages come from as many column chunks: holding their
 * dictionaries until framing held dozens at once (pyarrow writes up to 1 MiB
 * each). So such values are copied into the page's own memory and the
 * dictionary goes back to the cache at once. A fixed-width column's values
 * are packed (pq_packed_width): gathered out of the dictionary as they are
 * decoded, within the bound reserved with the decode. Otherwise
 * its size is known only once decoded; a thread holding a dictionary must
 * not wait for room (yfs_budget.h), so when the copy does not fit at once
 * the page is let go with its dictionary, the copy waited for, and the page
 * decoded again (for tokens, list<int64>, that was every page at once when
 * memory was short: 8 parts at mem=256M decoded each page twice and read its
 * dictionary again in between, the dictionary having been dropped for the
 * wait). */
int yfs_page_records(yfs_mount *m, uint64_t page, const uint8_t *raw, uint64_t raw_len,
                     yfs_hold *hold, pq_page_values *values, ix_record *recs, pq_error *err)
{
    const ix_index *ix = m->ix;
    const ix_chunk *chunk = &ix->chunks[ix_locate(ix, page)];
    yfs_dict_source src = { m->dicts, hold };
    ix_dict_source dicts = yfs_dicts_source(&src);
    uint64_t start = yfs_now_ns();
    uint32_t width = pq_packed_width(&chunk->desc);
    uint64_t reserved = yfs_decode_bound(raw, raw_len, width), copy = 0;
    yfs_budget_reserve(m->budget, reserved, YFS_MEM_DECODED, YFS_DEMAND, hold);
    void *dict = NULL;
    int rc = ix_decode_page(ix, page, raw, &dicts, values, &dict, err);
    if (rc == 0 && dict && !width) {
        copy = value_bytes(values);
        if (yfs_budget_reserve(m->budget, copy, YFS_MEM_DECODED, YFS_TRY, hold) < 0) {
            pq_page_values_free(values);
            yfs_dicts_put(m->dicts, dict);
            dict = NULL;
            yfs_budget_reserve(m->budget, copy, YFS_MEM_DECODED, YFS_DEMAND, hold);
            rc = ix_decode_page(ix, page, raw, &dicts, values, &dict, err);
        }
        reserved += copy;
    }
    if (rc == 0 && dict && pq_page_values_own(values, err) < 0) {
        pq_page_values_free(values);
        rc = -1;
    }
    if (dict)
        yfs_dicts_put(m->dicts, dict);
    yfs_count(&m->stats.decode_nanoseconds, yfs_now_ns() - start);
    if (rc < 0) {
        yfs_budget_release(m->budget, reserved, YFS_MEM_DECODED, hold);
        return -1;
    }
    yfs_budget_settle(m->budget, reserved, pq_page_values_bytes(values), YFS_MEM_DECODED, hold);
    const ix_page *p = &ix->pages[page];
    yfs_count(&m->stats.pages_decoded, 1);
    yfs_count(&m->stats.page_bytes, p->length);

    uint32_t count, rows;
    if (ix_page_records(&ix->framing.shape, values, p->first_row, recs, p->records, &count,
                        &rows, err) < 0 ||
        (count != p->records || rows != p->rows)) {
        yfs_page_values_drop(m, values, hold);
        return pq_error_prefix(err, "%s: data page at offset %llu: %s",
                               ix->files[chunk->file].name, (unsigned long long)p->offset,
                               count != p->records || rows != p->rows
                                   ? "holds other records than indexed (file changed?)"
                                   : "");
    }
    return 0;
}


/* Segment buffers are mapped, not taken from the heap: they are large and
 * live long, and freed heap memory between them would stay resident
 * (fragmentation) beyond the budget. They are faulted in at once
 * (MAP_POPULATE, MADV_POPULATE_WRITE), which costs less than a fault per
 * page while framing.
 *
 * One of a huge page or more starts on a huge page's boundary and asks for
 * transparent huge pages: each whole 2 MiB of it is then one page, zeroed,
 * mapped and freed once, where small pages cost a fault and a free each
 * (8 parts of DuckDB's text: 77 thousand faults an epoch instead of 400
 * thousand, system time per GB 0.47-0.55 s instead of 0.68-0.78). The mapping
 * is exactly the size asked for (what is past its last whole huge page is
 * in small pages), so what is resident is what was asked for, as before.
 * Where the kernel gives no huge pages (THP off, memory fragmented) the
 * pages are small and nothing else changes. */
#define HUGE_PAGE ((size_t)2 << 20)

static uint8_t *map_huge_aligned(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t length = (size + page - 1) / page * page;
    /* a huge page more than needed, then the parts before the boundary and
     * past the length given back (never touched: never resident) */
    uint8_t *p = mmap(NULL, length + HUGE_PAGE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    size_t head = (HUGE_PAGE - (uintptr_t)p % HUGE_PAGE) % HUGE_PAGE;
    if (head > 0)
        munmap(p, head);
    munmap(p + head + length, HUGE_PAGE - head);
    p += head;
    assert((uintptr_t)p % HUGE_PAGE == 0);
    /* failures change no byte: small pages, or faults as they are written */
    madvise(p, length, MADV_HUGEPAGE);
    madvise(p, length, MADV_POPULATE_WRITE);
    return p;
}

uint8_t *yfs_segment_alloc(uint64_t size)
{
    if (size >= HUGE_PAGE && size <= SIZE_MAX - 2 * HUGE_PAGE)
        return map_huge_aligned((size_t)size);
    void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void yfs_segment_free(uint8_t *data, uint64_t size)
{
    if (data)
        munmap(data, size ? size : 1);
}

int yfs_frame_record(const ix_framing *f, const ix_record *rec, ix_sink *s, pq_error *err)
{
    if (ix_frame(f, rec, s, err) < 0)
        return pq_error_prefix(err, "records differ from those indexed at mount (a source "
                               "file changed?): ");
    return 0;
}
