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
#include "yfs_mount.h"
#include "yfs_plans.h"

/* On success *data holds plan->segments[s].bytes bytes; free it with
 * yfs_segment_free. */
int yfs_segment_build(yfs_mount *m, yfs_plan *plan, uint64_t s, uint8_t **data,
                      pq_error *err);
/* A zeroed, resident buffer of size bytes for a segment (NULL when out of
 * memory); give it back with yfs_segment_free. */
uint8_t *yfs_segment_alloc(uint64_t size);
void yfs_segment_free(uint8_t *data, uint64_t size);

/* Decode global page `page` from raw (its ix_page.length bytes) into values,
 * owning their bytes (a dictionary is not held), and list its records into
 * recs, with room for the page's indexed record count. Fails, naming the
 * file, when the page holds other records than indexed. */
int yfs_page_records(yfs_mount *m, uint64_t page, const uint8_t *raw, pq_page_values *values,
                     ix_record *recs, pq_error *err);

/* Frame rec at out, with room bytes left there; returns the end of the
 * record, or NULL if it does not fit (the index promised less: a source
 * changed) or cannot be framed. */
uint8_t *yfs_frame_record(const ix_framing *f, const ix_record *rec, uint8_t *out, size_t room,
                          pq_error *err);

/* Memory a build of segment s needs besides the segment itself, for the
 * memory budget: its decoded pages (their values are about as large as
 * their framed records, or smaller) and its record lists. An estimate: the
 * exact figure is known only after decoding. */
uint64_t yfs_segment_work(const sh_plan *plan, uint64_t s);

#endif
