/* yfs_segment.h — producing the bytes of one segment of an epoch plan.
 *
 * Reads and decodes the segment's pages (several at once, finishing out of
 * order, with threads= > 1), lists their records in plan order, orders them
 * with sh_segment_order and frames them (shuffle=row segments
 * are built by yfs_rows.h, from the pages their records are in). The result depends only
 * on the index, the plan parameters and (epoch, segment): never on timing or
 * on what else is cached (invariant 2). Its length is checked against the
 * size the index promised; a mismatch (a file changed under us) is an error,
 * never wrong bytes. Thread-safe.
 */
#ifndef YFS_SEGMENT_H
#define YFS_SEGMENT_H

#include <stdint.h>

#include "ix_record.h"
#include "yfs_budget.h"
#include "yfs_mount.h"
#include "yfs_plans.h"

/* What a build of segment s holds from its start to its end besides the
 * segment: its framed units and their record lists and order arrays
 * (YFS_MEM_BUILD). The caller reserves them with the segment, in one go
 * (a prefetch that cannot have both takes neither, instead of taking room
 * from others while it builds). */
uint64_t yfs_segment_build_bytes(const yfs_mount *m, const yfs_plan *plan, uint64_t s);

/* On success *data holds plan->segments[s].bytes bytes; free it with
 * yfs_segment_free. The segment's bytes (YFS_MEM_SEGMENTS) and
 * yfs_segment_build_bytes (YFS_MEM_BUILD) must be reserved already (by the
 * caller, for hold, which the calling thread has entered); the build
 * releases the latter before it returns, success or not. Every other byte
 * the build allocates (raw and decoded pages at their real size) is
 * reserved for hold before it is allocated and released before this
 * returns. The build waits for room only holding nothing but hold's bytes
 * (yfs_budget.h). */
int yfs_segment_build(yfs_mount *m, yfs_plan *plan, uint64_t s, yfs_hold *hold, uint8_t **data,
                      pq_error *err);
/* A zeroed, resident buffer of size bytes for a segment (NULL when out of
 * memory); give it back with yfs_segment_free. */
uint8_t *yfs_segment_alloc(uint64_t size);
void yfs_segment_free(uint8_t *data, uint64_t size);

/* Decode global page `page` from raw (its raw_len bytes) into values,
 * owning their bytes (a dictionary is not held), and list its records into
 * recs, with room for the page's indexed record count. Fails, naming the
 * file, when the page holds other records than indexed. The decoded page
 * is reserved for hold (entered by the caller) at the bound its headers give
 * (yfs_decode_bound) before decoding, and settled to its real size; on
 * success it stays charged until yfs_page_values_drop. */
int yfs_page_records(yfs_mount *m, uint64_t page, const uint8_t *raw, uint64_t raw_len,
                     yfs_hold *hold, pq_page_values *values, ix_record *recs, pq_error *err);
/* Free values from yfs_page_records and release their charge. */
void yfs_page_values_drop(yfs_mount *m, pq_page_values *values, yfs_hold *hold);

/* Frame rec at out, with room bytes left there; returns the end of the
 * record, or NULL if it does not fit (the index promised less: a source
 * changed) or cannot be framed. */
uint8_t *yfs_frame_record(const ix_framing *f, const ix_record *rec, uint8_t *out, size_t room,
                          pq_error *err);

#endif
