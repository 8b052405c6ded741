/* sh_plan.h — the epoch plan: which records an epoch file holds, in which
 * order, and how its bytes split into segments.
 *
 * A plan is a pure function of the page summary (records and framed bytes
 * per page, from the index), the parameters, and the epoch number. It does
 * no I/O and reads no clock, so every mount on every machine computes the
 * same plan (invariant 2, determinism) before any data is read.
 *
 * Construction (shuffle=page):
 *   1. the pages are permuted with Fisher-Yates seeded by
 *      sh_derive_seed(seed, epoch, SH_PURPOSE_PAGES, 0);
 *   2. with chunk_bytes > 0, Redox chunk redirection (sh_redirect.h) turns
 *      that permutation of requests into the served order and the I/O
 *      schedule, its candidate draws seeded by
 *      sh_derive_seed(seed, epoch, SH_PURPOSE_CHUNKS, 0);
 *   3. pages of many records are cut into units (sh_units.h): the units of
 *      a few pages at a time are interleaved, keeping the page order, with
 *      draws seeded by sh_derive_seed(seed, epoch, SH_PURPOSE_UNITS, 0).
 *      Without cut pages, units are the pages and their order is the page
 *      order;
 *   4. consecutive units of that order form segments: a segment is closed
 *      once it holds at least `buffer_rows` records or `max_segment_bytes`
 *      framed bytes (a segment always holds at least one unit). On a small
 *      dataset the record limit shrinks to total/SH_MIN_SEGMENTS (rounded
 *      up), so that an epoch has enough segments to give every part some;
 *   5. the records of segment s are served in the order given by
 *      sh_segment_order(), a permutation seeded by
 *      sh_derive_seed(seed, epoch, SH_PURPOSE_ROWS, s) — Youmu's buffer
 *      shuffle, made seekable because each segment is shuffled on its own.
 * shuffle=none keeps the natural page order and the natural record order
 * (its schedule loads the chunks in storage order).
 *
 * Construction (shuffle=row, Youmu's fully random baseline): the records
 * themselves (numbered in index order: pages in order, records in page
 * order) are permuted with Fisher-Yates seeded by
 * sh_derive_seed(seed, epoch, SH_PURPOSE_RECORDS, 0), and consecutive
 * records of that order form segments under the same limits. It needs the
 * framed size of every record, so that segment sizes (and so every offset)
 * are exact before any segment is built. A segment's records come from
 * anywhere in the dataset: building one decodes a page per record, or
 * nearly, which is the cost this mode exists to show.
 *
 * Parts: part i of n holds segments i, i+n, i+2n, ... in that order, so the
 * n parts together hold every segment exactly once; even= and elastic
 * resume cut segments into pieces (sh_deal.h).
 *
 * Thread-safety: building is reentrant; a built plan is immutable and may be
 * read by any number of threads.
 */
#ifndef SH_PLAN_H
#define SH_PLAN_H

#include <stdint.h>

#include "sh_redirect.h"
#include "sh_units.h"

/* A dataset with few records is still cut into about this many segments. */
#define SH_MIN_SEGMENTS 64

typedef enum sh_mode { SH_SHUFFLE_PAGE = 0, SH_SHUFFLE_NONE = 1, SH_SHUFFLE_ROW = 2 } sh_mode;

/* Per-page input, in global page order (index order). */
typedef struct sh_page {
    uint64_t bytes;   /* framed bytes of the page's records */
    uint32_t records; /* records (non-null values) in the page */
} sh_page;

/* Pages cut into units (sh_units.h): page p has units first_unit[p] ..
 * first_unit[p+1]-1 (at least one; first_unit has num_pages+1 ascending
 * entries, first_unit[0] == 0), holding its records in that order: unit u
 * holds unit_records[u] records of unit_bytes[u] framed bytes (a page's
 * units add up to its records and bytes). */
typedef struct sh_cut {
    const uint64_t *first_unit;
    const uint32_t *unit_records;
    const uint64_t *unit_bytes;
} sh_cut;

typedef struct sh_params {
    uint64_t seed;
    sh_mode mode;
    uint64_t buffer_rows;       /* records per segment (>= 1) */
    uint64_t max_segment_bytes; /* framed bytes per segment (>= 1) */
    uint64_t chunk_bytes;       /* Redox physical chunk size; 0: no chunks, no redirection */
    uint32_t virtual_chunks;    /* Redox virtual chunks (sh_redirect.h); 0: SH_VIRTUAL_CHUNKS */
} sh_params;

typedef struct sh_segment {
    uint64_t first;   /* position in sh_plan.unit_order of the segment's first unit;
                         shuffle=row: in sh_plan.rows of its first record */
    uint32_t units;   /* number of units (0 for shuffle=row) */
    uint32_t records; /* records in the segment */
    uint64_t bytes;   /* framed bytes */
} sh_segment;

typedef struct sh_plan {
    uint64_t epoch;
    uint64_t num_pages;
    uint32_t *order;        /* num_pages global page numbers, the epoch's page order
                               (shuffle=row: NULL, num_pages 0) */
    uint64_t num_units;
    uint32_t *unit_order;   /* num_units unit numbers, the epoch's unit order (the same
                               array as order when no page is cut) */
    uint32_t *rows;         /* shuffle=row: total_records record numbers, the epoch's
                               record order; else NULL */
    uint64_t num_segments;
    sh_segment *segments;
    uint64_t total_bytes;
    uint64_t total_records;
    sh_schedule schedule;   /* the I/O schedule; no loads when chunk_bytes is 0 */
} sh_plan;

/* Build the plan of `epoch`. `stored` (storage facts per page) is needed
 * when p->chunk_bytes > 0, else may be NULL; `cut` is NULL when no page is
 * cut into units (and must then outlive the plan's users, as pages do).
 * Returns 0, or -1 on allocation failure (or a segment that would exceed
 * 2^32-1 records, or 2^32 units or more). The caller frees with
 * sh_plan_free. */
int sh_plan_build(const sh_params *p, const sh_page *pages, const sh_cut *cut,
                  const sh_stored_page *stored, uint64_t num_pages, uint64_t epoch,
                  sh_plan *out);

/* Unit u of the plan's input: its page, the page's record where it starts,
 * its records and framed bytes. */
typedef struct sh_unit {
    uint32_t page;
    uint32_t first_record;
    uint32_t records;
    uint64_t bytes;
} sh_unit;
sh_unit sh_unit_at(const sh_page *pages, const sh_cut *cut, uint64_t num_pages, uint32_t u);
/* Build the shuffle=row plan of `epoch` from the framed size of each of
 * num_records records (fewer than 2^32). Returns 0, or -1 on allocation
 * failure or too many records. */
int sh_plan_build_rows(const sh_params *p, const uint32_t *record_bytes, uint64_t num_records,
                       uint64_t epoch, sh_plan *out);
void sh_plan_free(sh_plan *plan);

/* The order in which segment `s` serves its records: fills perm[0..records)
 * with a permutation of 0..records-1 (identity for shuffle=none, and for
 * shuffle=row, whose order is in plan->rows already). Record r of a segment
 * is the r-th record when its pages are read in plan order. */
void sh_segment_order(const sh_params *p, const sh_plan *plan, uint64_t s, uint32_t *perm);

/* A run of consecutive records of one segment, counted in the segment's
 * serving order (sh_segment_order): what part files are made of (sh_deal.h). */
typedef struct sh_piece {
    uint64_t segment;
    uint32_t first; /* first record */
    uint32_t end;   /* one past the last (end >= first) */
} sh_piece;

/* A part file's layout: its pieces back to back. A whole segment's bytes
 * are known from the plan; where a record inside a segment starts is not
 * (only a built segment knows its records' sizes), so the caller supplies
 * it for the pieces that cut a segment. */
typedef struct sh_part {
    uint64_t count;    /* pieces in the part */
    sh_piece *pieces;  /* owned */
    uint64_t *starts;  /* count entries: where piece k's bytes start in its segment */
    uint64_t *offsets; /* count+1 entries: offsets[k] = byte offset of the part's k-th piece */
} sh_part;

/* Where record `record` (0..records of the segment: records gives its size)
 * of segment `segment` starts, in bytes from the segment's start, in *out.
 * Returns 0, or -1 with ctx's own error report. */
typedef int (*sh_record_offset_fn)(void *ctx, uint64_t segment, uint32_t record, uint64_t *out);

/* Lay out `count` pieces (their array is taken over, freed with the part,
 * even on failure). record_offset is called for the pieces that are not a
 * whole segment (it may be NULL when there is none). Returns 0, or -1 on
 * allocation failure or when record_offset fails. */
int sh_part_build(const sh_plan *plan, sh_piece *pieces, uint64_t count,
                  sh_record_offset_fn record_offset, void *ctx, sh_part *out);
void sh_part_free(sh_part *pt);

static inline uint64_t sh_part_size(const sh_part *pt)
{
    return pt->offsets[pt->count];
}

/* Plan segment number of the part's k-th piece. */
static inline uint64_t sh_part_segment(const sh_part *pt, uint64_t k)
{
    return pt->pieces[k].segment;
}

/* k such that the part's k-th piece holds byte `offset`; offset < size.
 * Empty pieces are skipped: the result always has bytes at `offset`. */
uint64_t sh_part_find(const sh_part *pt, uint64_t offset);

#endif
