/* yfs_records.h — the leaf of the read path: a page's bytes -> its records
 * (framed by ix_frame), and the resident buffers framed bytes go in. Both
 * segment builders call it: the units of a page-shuffled segment
 * (yfs_units.h) and the records of a shuffle=row segment (yfs_rows.h); it
 * calls neither. Thread-safe.
 */
#ifndef YFS_RECORDS_H
#define YFS_RECORDS_H

#include <stdint.h>

#include "ix_record.h"
#include "pq_column.h"
#include "yfs_budget.h"
#include "yfs_mount.h"

/* A zeroed, resident buffer of size bytes for a segment or a unit (NULL
 * when out of memory), no more mapped or resident than that; one of 2 MiB
 * or more starts on a 2 MiB boundary, in transparent huge pages where the
 * kernel has them. Give it back with yfs_segment_free. */
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

/* Frame rec into s at read time (ix_frame): the index measured it at mount,
 * so a failure means the source no longer holds what was indexed, and the
 * message says so. */
int yfs_frame_record(const ix_framing *f, const ix_record *rec, ix_sink *s, pq_error *err);

#endif
