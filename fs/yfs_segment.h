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

/* On success *data is a malloc'ed buffer of plan->segments[s].bytes bytes. */
int yfs_segment_build(yfs_mount *m, yfs_plan *plan, uint64_t s, uint8_t **data,
                      pq_error *err);

#endif
