/* yfs_rows.h — shuffle=row, Youmu's fully random baseline: every record of
 * the dataset in one seeded permutation (sh_plan_build_rows).
 *
 * Offsets must be exact before anything is served (invariant 3), and a
 * segment's records come from anywhere, so the framed size of every record
 * is measured once at mount: a decode pass over the whole dataset, kept as
 * 4 bytes per record (m->record_bytes) next to the index. A segment is then
 * built by reading each page that holds some of its records, in page order,
 * one page at a time, and framing each record straight into its place in
 * the segment. That costs about one page read and decode per record, which
 * is the point of the baseline: it shows what page shuffling saves.
 */
#ifndef YFS_ROWS_H
#define YFS_ROWS_H

#include <stdint.h>

#include "sh_plan.h"
#include "yfs_budget.h"
#include "yfs_mount.h"

/* Measure every record: fills m->record_bytes and m->page_first_record.
 * Fails, naming the file, on a page that cannot be read or decoded, or a
 * dataset of 2^32 records or more. The pass's reads are not counted in
 * m->stats (they belong to the mount, not to an epoch). */
int yfs_rows_measure(yfs_mount *m, pq_error *err);

/* Build segment s of a shuffle=row plan into a yfs_segment_alloc buffer of
 * plan->segments[s].bytes bytes, with the memory rules of yfs_segment_build
 * (reservations for hold). */
int yfs_rows_build(yfs_mount *m, const sh_plan *plan, uint64_t s, yfs_hold *hold,
                   uint8_t **data, pq_error *err);

#endif
