#include "sh_plan.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sh_random.h"

/* Records per segment: buffer_rows, or fewer on a small dataset. */
static uint64_t segment_record_limit(const sh_params *p, uint64_t total_records)
{
    uint64_t small_share = (total_records + SH_MIN_SEGMENTS - 1) / SH_MIN_SEGMENTS;
    uint64_t limit = p->buffer_rows < small_share ? p->buffer_rows : small_share;
    return limit ? limit : 1;
}

sh_unit sh_unit_at(const sh_page *pages, const sh_cut *cut, uint64_t num_pages, uint32_t u)
{
    if (!cut)
        return (sh_unit){ u, 0, pages[u].records, pages[u].bytes };
    /* the page p with first_unit[p] <= u < first_unit[p+1] */
    uint64_t lo = 0, hi = num_pages;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (cut->first_unit[mid] <= u)
            lo = mid;
        else
            hi = mid;
    }
    assert(u < cut->first_unit[lo + 1]);
    uint32_t first = 0;
    for (uint64_t v = cut->first_unit[lo]; v < u; v++)
        first += cut->unit_records[v];
    assert(first + cut->unit_records[u] <= pages[lo].records);
    return (sh_unit){ (uint32_t)lo, first, cut->unit_records[u], cut->unit_bytes[u] };
}

static int build_segments(const sh_params *p, const sh_page *pages, const sh_cut *cut,
                          sh_plan *plan)
{
    uint64_t limit = segment_record_limit(p, plan->total_records);

    /* At most one segment per unit; shrink once the count is known. */
    uint64_t cap = plan->num_units ? plan->num_units : 1;
    sh_segment *segs = malloc(cap * sizeof *segs);
    if (!segs)
        return -1;

    uint64_t n = 0, total = 0;
    sh_segment cur = { 0, 0, 0, 0 };
    for (uint64_t i = 0; i < plan->num_units; i++) {
        sh_unit u = sh_unit_at(pages, cut, plan->num_pages, plan->unit_order[i]);
        if ((uint64_t)cur.records + u.records > UINT32_MAX) {
            free(segs);
            return -1;
        }
        if (cur.units == 0)
            cur.first = i;
        cur.units++;
        cur.records += u.records;
        cur.bytes += u.bytes;
        if (cur.records >= limit || cur.bytes >= p->max_segment_bytes) {
            total += cur.bytes;
            segs[n++] = cur;
            cur.units = cur.records = 0;
            cur.bytes = 0;
        }
    }
    if (cur.units) {
        total += cur.bytes;
        segs[n++] = cur;
    }

    sh_segment *shrunk = realloc(segs, (n ? n : 1) * sizeof *segs);
    plan->segments = shrunk ? shrunk : segs;
    plan->num_segments = n;
    plan->total_bytes = total;
    return 0;
}

/* The unit order from the page order: the page order itself when no page
 * is cut, else the interleaving of sh_units.h. */
static int order_units(const sh_params *p, const sh_cut *cut, uint64_t epoch, sh_plan *plan)
{
    if (!cut) {
        plan->num_units = plan->num_pages;
        plan->unit_order = plan->order;
        return 0;
    }
    plan->num_units = cut->first_unit[plan->num_pages];
    if (plan->num_units > UINT32_MAX)
        return -1;
    plan->unit_order = malloc((plan->num_units ? plan->num_units : 1) * sizeof *plan->unit_order);
    if (!plan->unit_order)
        return -1;
    sh_rng rng;
    sh_rng_init(&rng, sh_derive_seed(p->seed, epoch, SH_PURPOSE_UNITS, 0));
    sh_units_order(plan->order, plan->num_pages, cut->first_unit,
                   p->mode == SH_SHUFFLE_PAGE ? &rng : NULL, plan->unit_order);
    return 0;
}

int sh_plan_build(const sh_params *p, const sh_page *pages, const sh_cut *cut,
                  const sh_stored_page *stored, uint64_t num_pages, uint64_t epoch,
                  sh_plan *out)
{
    memset(out, 0, sizeof *out);
    if (num_pages > UINT32_MAX)
        return -1;
    out->epoch = epoch;
    out->num_pages = num_pages;
    out->order = malloc((num_pages ? num_pages : 1) * sizeof *out->order);
    if (!out->order)
        return -1;
    for (uint64_t i = 0; i < num_pages; i++) {
        out->order[i] = (uint32_t)i;
        out->total_records += pages[i].records;
    }
    if (p->mode == SH_SHUFFLE_PAGE) {
        sh_rng rng;
        sh_rng_init(&rng, sh_derive_seed(p->seed, epoch, SH_PURPOSE_PAGES, 0));
        sh_permute_u32(&rng, out->order, num_pages);
    }
    if (p->chunk_bytes > 0) {
        sh_rng rng;
        sh_rng_init(&rng, sh_derive_seed(p->seed, epoch, SH_PURPOSE_CHUNKS, 0));
        uint32_t virtual_chunks = p->virtual_chunks ? p->virtual_chunks : SH_VIRTUAL_CHUNKS;
        if (sh_redirect(stored, num_pages, p->chunk_bytes, virtual_chunks,
                        p->mode == SH_SHUFFLE_PAGE ? &rng : NULL, out->order, &out->schedule) < 0) {
            sh_plan_free(out);
            return -1;
        }
    }
    if (order_units(p, cut, epoch, out) < 0 || build_segments(p, pages, cut, out) < 0) {
        sh_plan_free(out);
        return -1;
    }
    return 0;
}

/* Append seg to the growing array *segs of *n entries (room for *cap). */
static int push_segment(sh_segment **segs, uint64_t *n, uint64_t *cap, sh_segment seg)
{
    if (*n == *cap) {
        uint64_t more = *cap ? *cap * 2 : 64;
        sh_segment *grown = realloc(*segs, more * sizeof *grown);
        if (!grown)
            return -1;
        *segs = grown;
        *cap = more;
    }
    (*segs)[(*n)++] = seg;
    return 0;
}

/* Segments of consecutive records of plan->rows, closed like page
 * segments; units stays 0. */
static int build_row_segments(const sh_params *p, const uint32_t *record_bytes, sh_plan *plan)
{
    uint64_t limit = segment_record_limit(p, plan->total_records);
    uint64_t n = 0, cap = 0, total = 0;
    sh_segment *segs = NULL, cur = { 0, 0, 0, 0 };
    for (uint64_t i = 0; i < plan->total_records; i++) {
        if (cur.records == 0)
            cur.first = i;
        cur.records++;
        cur.bytes += record_bytes[plan->rows[i]];
        if (cur.records >= limit || cur.bytes >= p->max_segment_bytes ||
            i + 1 == plan->total_records) {
            total += cur.bytes;
            if (push_segment(&segs, &n, &cap, cur) < 0) {
                free(segs);
                return -1;
            }
            cur.records = 0;
            cur.bytes = 0;
        }
    }
    plan->segments = segs;
    plan->num_segments = n;
    plan->total_bytes = total;
    return 0;
}

int sh_plan_build_rows(const sh_params *p, const uint32_t *record_bytes, uint64_t num_records,
                       uint64_t epoch, sh_plan *out)
{
    memset(out, 0, sizeof *out);
    if (num_records > UINT32_MAX)
        return -1;
    out->epoch = epoch;
    out->total_records = num_records;
    out->rows = malloc((num_records ? num_records : 1) * sizeof *out->rows);
    if (!out->rows)
        return -1;
    for (uint64_t i = 0; i < num_records; i++)
        out->rows[i] = (uint32_t)i;
    sh_rng rng;
    sh_rng_init(&rng, sh_derive_seed(p->seed, epoch, SH_PURPOSE_RECORDS, 0));
    sh_permute_u32(&rng, out->rows, num_records);
    if (build_row_segments(p, record_bytes, out) < 0) {
        sh_plan_free(out);
        return -1;
    }
    return 0;
}

void sh_plan_free(sh_plan *plan)
{
    free(plan->rows);
    if (plan->unit_order != plan->order)
        free(plan->unit_order);
    free(plan->order);
    free(plan->segments);
    sh_schedule_free(&plan->schedule);
    memset(plan, 0, sizeof *plan);
}

void sh_segment_order(const sh_params *p, const sh_plan *plan, uint64_t s, uint32_t *perm)
{
    uint32_t n = plan->segments[s].records;
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    if (p->mode != SH_SHUFFLE_PAGE)
        return;
    sh_rng rng;
    sh_rng_init(&rng, sh_derive_seed(p->seed, plan->epoch, SH_PURPOSE_ROWS, s));
    sh_permute_u32(&rng, perm, n);
}

int sh_part_build(const sh_plan *plan, sh_piece *pieces, uint64_t count,
                  sh_record_offset_fn record_offset, void *ctx, sh_part *out)
{
    memset(out, 0, sizeof *out);
    out->count = count;
    out->pieces = pieces;
    out->starts = malloc((count ? count : 1) * sizeof *out->starts);
    out->offsets = malloc((count + 1) * sizeof *out->offsets);
    if (!out->starts || !out->offsets) {
        sh_part_free(out);
        return -1;
    }
    uint64_t offset = 0;
    for (uint64_t k = 0; k < count; k++) {
        const sh_piece *p = &pieces[k];
        assert(p->segment < plan->num_segments);
        const sh_segment *seg = &plan->segments[p->segment];
        assert(p->first <= p->end && p->end <= seg->records);
        uint64_t start = 0, end = seg->bytes;
        if ((p->first != 0 && record_offset(ctx, p->segment, p->first, &start) < 0) ||
            (p->end != seg->records && record_offset(ctx, p->segment, p->end, &end) < 0)) {
            sh_part_free(out);
            return -1;
        }
        assert(start <= end && end <= seg->bytes);
        out->starts[k] = start;
        out->offsets[k] = offset;
        offset += end - start;
    }
    out->offsets[count] = offset;
    return 0;
}

void sh_part_free(sh_part *pt)
{
    free(pt->pieces);
    free(pt->starts);
    free(pt->offsets);
    memset(pt, 0, sizeof *pt);
}

uint64_t sh_part_find(const sh_part *pt, uint64_t offset)
{
    /* The last k with offsets[k] <= offset: skips empty segments, whose
     * offset equals the next one's. */
    uint64_t lo = 0, hi = pt->count;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (pt->offsets[mid] <= offset)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}
