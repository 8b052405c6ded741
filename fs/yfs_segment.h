/* yfs_segment.h — producing the bytes of one segment of an epoch plan.
 *
 * Frames the segment's units (yfs_units.h; several at once, finishing out
 * of order, with threads= > 1) and orders their records with
 * sh_segment_order (shuffle=row segments
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
#include "yfs_units.h"

/* A built segment: its records' framed bytes, left in the blocks they were
 * framed into, and where each record of the segment's order lies. Readers
 * copy ranges out of it (yfs_body_copy); nothing gathers the records into
 * one buffer, so a build holds its segment's bytes once, not twice (8
 * readers of 16 MiB segments needed 8 x 32 MiB at once). A shuffle=row
 * segment is one buffer: one piece. */
typedef struct yfs_body {
    uint64_t size;         /* framed bytes */
    uint32_t pieces;       /* records in serving order (1 for a single buffer) */
    const uint8_t **at;    /* pieces entries: where piece k's bytes are */
    uint64_t *ends;        /* pieces entries: the offset in the segment where piece k ends */
    yfs_unit *units;       /* owned blocks (num_units), or NULL */
    uint32_t num_units;
    uint8_t *data;         /* or one owned yfs_segment_alloc buffer of size bytes */
} yfs_body;

/* Copy len bytes of the segment from offset (offset + len <= size) to out.
 * Reads only: any number of threads may copy from one body at once. */
void yfs_body_copy(const yfs_body *b, uint64_t offset, uint8_t *out, uint64_t len);
void yfs_body_free(yfs_body *b);

/* What a built segment s holds (YFS_MEM_SEGMENTS): its framed units with
 * their record ends and the body's tables; a shuffle=row segment its buffer.
 * Known from the plan before any byte is read. */
uint64_t yfs_segment_held_bytes(const yfs_mount *m, const yfs_plan *plan, uint64_t s);
/* What a build of segment s holds besides that from its start to its end:
 * the slots of its units, its order arrays and the units its framing
 * threads put off (YFS_MEM_BUILD). The caller
 * reserves both with the segment, in one go (a prefetch that cannot have
 * all takes none, instead of taking room from others while it builds). */
uint64_t yfs_segment_build_bytes(const yfs_mount *m, const yfs_plan *plan, uint64_t s);

/* The threads a build started now frames its units with, at most 4: the
 * mount's workers, shared among the readers open (m->readers; rounded up,
 * at least one each) unless storage is slow (yfs_latency_slow) while the
 * cores have room (yfs_cpu.h). */
uint32_t yfs_segment_framing_threads(const yfs_mount *m);

/* On success *out holds segment s (plan->segments[s].bytes bytes); free it
 * with yfs_body_free. yfs_segment_held_bytes (YFS_MEM_SEGMENTS) and
 * yfs_segment_build_bytes (YFS_MEM_BUILD) must be reserved already (by the
 * caller, for hold, which the calling thread has entered); the build
 * releases the latter before it returns, success or not. Every other byte
 * the build allocates (raw and decoded pages at their real size) is
 * reserved for hold before it is allocated and released before this
 * returns. The build waits for room only holding nothing but hold's bytes
 * (yfs_budget.h). */
int yfs_segment_build(yfs_mount *m, yfs_plan *plan, uint64_t s, yfs_hold *hold, yfs_body *out,
                      pq_error *err);
#endif
