#include "yfs_segment.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ix_read.h"
#include "ix_record.h"
#include "yfs_dicts.h"
#include "yfs_loads.h"
#include "yfs_rows.h"
#include "yfs_thread.h"

/* ix_dict_source over the mount's dictionary cache, loading for a hold. */
typedef struct dict_source {
    yfs_dicts *dicts;
    yfs_hold *hold;
} dict_source;

static int cached_dictionary(void *ctx, uint32_t chunk, const pq_dictionary **dict,
                             void **handle, pq_error *err)
{
    dict_source *src = ctx;
    yfs_dict *d;
    if (yfs_dicts_get(src->dicts, chunk, src->hold, dict, &d, err) < 0)
        return -1;
    *handle = d;
    return 0;
}

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
 * dictionary goes back to the cache at once. The copy's size is known only
 * once decoded; a thread holding a dictionary must not wait for room
 * (yfs_budget.h), so when the copy does not fit at once the page is let go
 * with its dictionary, the copy waited for, and the page decoded again. */
int yfs_page_records(yfs_mount *m, uint64_t page, const uint8_t *raw, uint64_t raw_len,
                     yfs_hold *hold, pq_page_values *values, ix_record *recs, pq_error *err)
{
    const ix_index *ix = m->ix;
    const ix_chunk *chunk = &ix->chunks[ix_locate(ix, page)];
    dict_source src = { m->dicts, hold };
    ix_dict_source dicts = { cached_dictionary, &src };
    uint64_t start = yfs_now_ns();
    uint64_t reserved = yfs_decode_bound(raw, raw_len), copy = 0;
    yfs_budget_reserve(m->budget, reserved, YFS_MEM_DECODED, YFS_DEMAND, hold);
    void *dict = NULL;
    int rc = ix_decode_page(ix, page, raw, &dicts, values, &dict, err);
    if (rc == 0 && dict) {
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

/* Rinas: the pages of a segment are fetched and decoded by up to this many
 * threads at once (the builder and helpers), each taking the next page not
 * yet taken, so they finish out of order. The result cannot depend on it:
 * every page decodes into its own slot, and its records go to the place the
 * index's record counts give them. */
#define DECODE_THREADS_MAX 4

typedef struct page_jobs {
    yfs_mount *m;
    yfs_plan *plan;
    yfs_hold *hold;          /* the build's reservations (yfs_budget.h) */
    const sh_segment *seg;
    pq_page_values *pages;   /* seg->units slots */
    ix_record *recs;
    const uint32_t *rec_at;  /* where each page's records go in recs */
    _Atomic uint32_t next;   /* the next page to take */
    _Atomic int failed;
    pthread_mutex_t lock;    /* guards err */
    pq_error err;            /* the first failure */
} page_jobs;

static void *decode_pages(void *arg)
{
    page_jobs *j = arg;
    for (;;) {
        uint32_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->seg->units || atomic_load(&j->failed))
            return NULL;
        uint64_t pos = j->seg->first + i, page = j->plan->plan.order[pos];
        uint8_t *raw = NULL;
        uint32_t len = 0;
        pq_error err;
        int rc = yfs_page_fetch(j->m, j->plan, pos, j->hold, &raw, &len, &err);
        if (rc == 0) {
            rc = yfs_page_records(j->m, page, raw, len, j->hold, &j->pages[i],
                                  j->recs + j->rec_at[i], &err);
            free(raw);
            yfs_budget_release(j->m->budget, len, YFS_MEM_RAW, j->hold);
        }
        if (rc < 0) {
            pthread_mutex_lock(&j->lock);
            if (!atomic_exchange(&j->failed, 1))
                j->err = err;
            pthread_mutex_unlock(&j->lock);
        }
    }
}

/* A helper thread: entered into the build's hold by the builder, it leaves
 * when done. */
static void *decode_pages_helper(void *arg)
{
    page_jobs *j = arg;
    decode_pages(j);
    yfs_hold_leave(j->m->budget, j->hold);
    return NULL;
}

/* Decode the segment's pages into pages[] and their records into recs, in
 * parallel when the mount has threads= to spare. */
static int decode_segment(yfs_mount *m, yfs_plan *plan, const sh_segment *seg, yfs_hold *hold,
                          pq_page_values *pages, ix_record *recs, pq_error *err)
{
    uint32_t *rec_at = malloc((seg->units ? seg->units : 1) * sizeof *rec_at);
    if (!rec_at)
        return pq_error_set(err, "out of memory for a segment of %u pages", seg->units);
    uint32_t at = 0;
    for (uint32_t i = 0; i < seg->units; i++) {
        rec_at[i] = at;
        at += m->ix->pages[plan->plan.order[seg->first + i]].records;
    }
    page_jobs j = { .m = m, .plan = plan, .hold = hold, .seg = seg, .pages = pages,
                    .recs = recs, .rec_at = rec_at };
    atomic_init(&j.next, 0);
    atomic_init(&j.failed, 0);
    pthread_mutex_init(&j.lock, NULL);

    uint32_t want = (uint32_t)(m->opts.threads < DECODE_THREADS_MAX ? m->opts.threads
                                                                    : DECODE_THREADS_MAX);
    pthread_t helper[DECODE_THREADS_MAX];
    uint32_t helpers = 0;
    while (helpers + 1 < want && helpers + 1 < seg->units) {
        yfs_hold_enter(m->budget, hold); /* before it runs: see yfs_budget.h */
        if (yfs_thread_create(&helper[helpers], decode_pages_helper, &j) != 0) {
            yfs_hold_leave(m->budget, hold);
            break; /* fewer helpers (even none) only slow the build down */
        }
        helpers++;
    }
    decode_pages(&j);
    /* Waiting for helpers is waiting for their room: out of the hold
     * meanwhile, so that helpers that all wait for room count as blocked. */
    yfs_hold_leave(m->budget, hold);
    for (uint32_t h = 0; h < helpers; h++)
        pthread_join(helper[h], NULL);
    yfs_hold_enter(m->budget, hold);

    pthread_mutex_destroy(&j.lock);
    free(rec_at);
    if (atomic_load(&j.failed)) {
        *err = j.err;
        return -1;
    }
    return 0;
}

/* Segment buffers are mapped, not taken from the heap: they are large and
 * live long, and freed heap memory between them would stay resident
 * (fragmentation) beyond the budget. MAP_POPULATE faults the pages in one
 * go, which costs less than a fault per page while framing. */
uint8_t *yfs_segment_alloc(uint64_t size)
{
    void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void yfs_segment_free(uint8_t *data, uint64_t size)
{
    if (data)
        munmap(data, size ? size : 1);
}

/* Framing visits the records of a segment in shuffled order, so each record
 * costs up to three dependent cache misses (its ix_record, its value slice,
 * the value's bytes) that the hardware prefetcher cannot foresee; unhidden,
 * they made a page-shuffled epoch cost ~40% more user CPU than shuffle=none
 * (bench/data/epoch-4g, youmufs cat: 7.8 s against 5.5 s; 5.7 s with this). The
 * order is known, so fetch ahead in stages: the record PREFETCH_RECORD
 * positions ahead, its value slice at PREFETCH_SLICE, its first value bytes
 * at PREFETCH_BYTES, a cache line at a time up to PREFETCH_MAX_BYTES (flat
 * columns only: a flat record has exactly one value,
 * while a list record may have none and its slice pointer must not be
 * followed). Each stage reads only what the one before brought in.
 * always_inline: GCC 12 at -O2 judges an out-of-line prefetch_ahead free of
 * side effects and deletes every call to it. */
enum { PREFETCH_RECORD = 24, PREFETCH_SLICE = 12, PREFETCH_BYTES = 4, PREFETCH_MAX_BYTES = 4096 };

static inline __attribute__((always_inline)) void
prefetch_ahead(const ix_record *recs, const uint32_t *order, uint32_t r, uint32_t n)
{
    if (r + PREFETCH_RECORD < n)
        __builtin_prefetch(&recs[order[r + PREFETCH_RECORD]]);
    if (r + PREFETCH_SLICE < n)
        __builtin_prefetch(recs[order[r + PREFETCH_SLICE]].values);
    if (r + PREFETCH_BYTES < n) {
        const ix_record *next = &recs[order[r + PREFETCH_BYTES]];
        if (!next->defs) {
            const uint8_t *bytes = next->values->ptr;
            uint32_t len = next->values->len < PREFETCH_MAX_BYTES ? next->values->len
                                                                  : PREFETCH_MAX_BYTES;
            for (uint32_t at = 0; at < len; at += 64)
                __builtin_prefetch(bytes + at);
        }
    }
}

uint8_t *yfs_frame_record(const ix_framing *f, const ix_record *rec, uint8_t *out, size_t room,
                          pq_error *err)
{
    /* The index promised the sizes; check them without rescanning values
     * unless the record might not fit. */
    size_t size;
    if (ix_frame_size_bound(f, rec) > room &&
        (ix_frame_measure(f, rec, &size, err) < 0 || size > room)) {
        pq_error_set(err, "records outgrow the bytes indexed at mount (a source file "
                     "changed?)");
        return NULL;
    }
    return ix_frame_write(f, rec, out, err);
}

static int frame(yfs_mount *m, const sh_plan *plan, uint64_t s, const ix_record *recs,
                 uint8_t **data, pq_error *err)
{
    const sh_segment *seg = &plan->segments[s];
    uint32_t *order = malloc((seg->records ? seg->records : 1) * sizeof *order);
    uint8_t *buf = yfs_segment_alloc(seg->bytes);
    if (!order || !buf) {
        free(order);
        yfs_segment_free(buf, seg->bytes);
        return pq_error_set(err, "out of memory for a %llu-byte segment",
                            (unsigned long long)seg->bytes);
    }
    sh_segment_order(&m->params, plan, s, order);
    const ix_framing *f = &m->ix->framing;
    uint8_t *out = buf, *end = buf + seg->bytes;
    int rc = 0;
    for (uint32_t r = 0; r < seg->records; r++) {
        prefetch_ahead(recs, order, r, seg->records);
        out = yfs_frame_record(f, &recs[order[r]], out, (size_t)(end - out), err);
        if (!out) {
            rc = -1;
            break;
        }
    }
    if (rc == 0 && out != end)
        rc = pq_error_set(err, "records fill %llu of the %llu bytes indexed at mount (a source "
                          "file changed?)", (unsigned long long)(out - buf),
                          (unsigned long long)seg->bytes);
    free(order);
    if (rc < 0) {
        yfs_segment_free(buf, seg->bytes);
        return -1;
    }
    *data = buf;
    return 0;
}

/* A page-ordered segment: decode its pages in plan order, then frame their
 * records in sh_segment_order. */
static int build_from_pages(yfs_mount *m, yfs_plan *plan, uint64_t s, yfs_hold *hold,
                            uint8_t **data, pq_error *err)
{
    const sh_segment *seg = &plan->plan.segments[s];

    /* The index knows every page's record count (decode_page enforces it),
     * so all buffers are sized before any byte is read: the page slots and
     * where their records go (decode_segment), the record list and the
     * order (frame). */
    uint64_t arrays = (uint64_t)(seg->units ? seg->units : 1) *
                          (sizeof(pq_page_values) + sizeof(uint32_t)) +
                      (uint64_t)(seg->records ? seg->records : 1) *
                          (sizeof(ix_record) + sizeof(uint32_t));
    yfs_budget_reserve(m->budget, arrays, YFS_MEM_BUILD, YFS_DEMAND, hold);
    pq_page_values *pages = calloc(seg->units ? seg->units : 1, sizeof *pages);
    ix_record *recs = malloc((seg->records ? seg->records : 1) * sizeof *recs);
    int rc = 0;
    if (!pages || !recs)
        rc = pq_error_set(err, "out of memory for a segment of %u records", seg->records);
    if (rc == 0)
        rc = decode_segment(m, plan, seg, hold, pages, recs, err);
    if (rc == 0)
        rc = frame(m, &plan->plan, s, recs, data, err);

    for (uint32_t i = 0; i < seg->units && pages; i++)
        yfs_page_values_drop(m, &pages[i], hold);
    free(pages);
    free(recs);
    yfs_budget_release(m->budget, arrays, YFS_MEM_BUILD, hold);
    return rc;
}

int yfs_segment_build(yfs_mount *m, yfs_plan *plan, uint64_t s, yfs_hold *hold, uint8_t **data,
                      pq_error *err)
{
    uint64_t start = yfs_now_ns();
    int rc = m->params.mode == SH_SHUFFLE_ROW
                 ? yfs_rows_build(m, &plan->plan, s, hold, data, err)
                 : build_from_pages(m, plan, s, hold, data, err);
    if (rc == 0)
        yfs_count(&m->stats.segments_built, 1);
    yfs_count(&m->stats.build_nanoseconds, yfs_now_ns() - start);
    return rc;
}
