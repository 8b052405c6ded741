/* yfs_segment.h — producing the bytes of one segment of an epoch plan.
 *
 * Reads and decodes the segment's pages in plan order, lists their records,
 * orders them with sh_segment_order and frames them. The result depends only
 * on the index, the plan parameters and (epoch, segment): never on timing or
 * on what else is cached (invariant 2). Its length is checked against the
 * size the index promised; a mismatch (a file changed under us) is an error,
 * never wrong bytes. Thread-safe.
 */
#ifndef YFS_SEGMENT_H
#define YFS_SEGMENT_H

#include <stdint.h>

#include "yfs_mount.h"
#include "yfs_plans.h"

/* On success *data holds plan->segments[s].bytes bytes; free it with
 * yfs_segment_free. */
int yfs_segment_build(yfs_mount *m, yfs_plan *plan, uint64_t s, uint8_t **data,
                      pq_error *err);
void yfs_segment_free(uint8_t *data, uint64_t size);

/* Memory a build of segment s needs besides the segment itself, for the
 * memory budget: its decoded pages (their values are about as large as
 * their framed records, or smaller) and its record lists. An estimate: the
 * exact figure is known only after decoding. */
uint64_t yfs_segment_work(const sh_plan *plan, uint64_t s);

#endif
