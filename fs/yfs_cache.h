/* yfs_cache.h — the segment cache and its prefetch workers.
 *
 * Segments (the framed records of one segment of one epoch plan,
 * yfs_segment.h's bodies) are built on
 * demand by the reading thread, or ahead of time by workers when the read
 * path asks for a prefetch. A segment's bytes, with what its build holds
 * from start to end (yfs_segment_build_bytes), are reserved with the
 * mount's accountant (yfs_budget.h) in one go before it is built, and its
 * build reserves every other byte it allocates (yfs_segment.h). So a
 * prefetch that could not also have its build's room does not start (a
 * prefetch's build that took room as it went dropped other readers' next
 * segments, and they built them again). Room is made:
 *   - for a prefetch: by dropping idle segments that a reader has read to
 *     the end (least recently used first); the accountant refuses it when
 *     that is not enough or a demand read waits (prefetched or half-read
 *     segments are never dropped for a prefetch); once its build starts, a
 *     prefetch's build reserves as a demand read does (a reader may be
 *     waiting for it);
 *   - for a demand read, cheapest loss first: those; segments the readers
 *     asking left half-read; queued prefetches; segments untouched for a
 *     second (their readers paused or left); prefetched segments no reader
 *     has asked for yet, the most recently built first (the furthest ahead
 *     of their readers), but for a prefetch's build that no reader waits
 *     for, none that its reader reads before the segment it builds (it
 *     would build them again: the build waits instead).
 *     Then it waits in the accountant until readers
 *     finish, builds end, or segments go stale. It goes ahead over
 *     budget only by the accountant's rule (nothing else can make room:
 *     e.g. a segment larger than the whole budget).
 * Readers wait for room holding no segment (yfs_view.h), and everything
 * else that holds room ends without waiting for room, goes stale, or waits
 * by the accountant's rule, so waits end.
 * A segment still waiting in the prefetch queue when a reader needs it is
 * taken over and built by the reader at once. A failed build is not kept:
 * the error goes to everyone waiting for it and the next read retries.
 * Thread-safe: one mutex guards the table, the LRU list and the queue.
 */
#ifndef YFS_CACHE_H
#define YFS_CACHE_H

#include <stdatomic.h>
#include <stdint.h>

#include "yfs_mount.h"
#include "yfs_plans.h"

typedef struct yfs_seg yfs_seg;

/* Reserves through m->budget and registers a reclaimer with it. */
yfs_cache *yfs_cache_new(yfs_mount *m);
/* Start `threads` prefetch workers (none are running before this). */
int yfs_cache_start(yfs_cache *c, int threads, pq_error *err);
/* Stop the workers: a build running finishes, queued jobs stay queued.
 * Frees nothing; may be called again. */
void yfs_cache_stop(yfs_cache *c);
/* Stop the workers (yfs_cache_stop) and free everything. No reader may be
 * active. */
void yfs_cache_free(yfs_cache *c);

/* Segment s of the plan, built if needed; release with yfs_cache_put. The
 * caller must not hold another segment (see above). reader (not NULL)
 * identifies the reader asking, say its open file: segments it left
 * half-read may make room for it at once. */
int yfs_cache_get(yfs_cache *c, yfs_plan *plan, uint64_t s, const void *reader, yfs_seg **out,
                  pq_error *err);
void yfs_cache_put(yfs_cache *c, yfs_seg *seg);
/* A reader copied `bytes` more of its piece of the segment (a piece of a
 * part, sh_plan.h: piece_bytes in all) out of seg, which it holds; *served
 * is its count of that piece's bytes copied out so far (0 at first; a byte
 * copied twice counts twice). Once every byte of a piece that ends the
 * segment (ends_segment) is copied out, the segment counts as read to its
 * end: it may be dropped first. Not when a read copies the piece's last
 * bytes: reads of one file run at once and out of order (the kernel's
 * readahead), and one that copied a segment's end before another copied
 * its middle made the cache drop the segment that other read still needed
 * (a mixture of DuckDB text, 256K readahead: pages of 50 MB streamed again
 * for segments built twice). */
void yfs_cache_served(yfs_cache *c, yfs_seg *seg, _Atomic uint64_t *served, uint64_t bytes,
                      uint64_t piece_bytes, int ends_segment);
/* The counts of yfs_cache_served for a reader of `pieces` pieces, each 0
 * (malloc'ed: the caller frees them), or NULL when out of memory. */
_Atomic uint64_t *yfs_cache_served_new(uint64_t pieces);
/* Ask the workers to build segment s ahead of `reader` (best effort; as
 * for yfs_cache_get, say its open file). Returns 0 if it is already
 * present or was queued, -1 if refused (no memory budget left, queue full,
 * or no workers). */
int yfs_cache_prefetch(yfs_cache *c, yfs_plan *plan, uint64_t s, const void *reader);

/* Copy len bytes of the segment from offset (within its size) to out. */
void yfs_seg_copy(const yfs_seg *seg, uint64_t offset, uint8_t *out, uint64_t len);
uint64_t yfs_seg_size(const yfs_seg *seg);
/* Where record `record` (0..records: records gives the size) of a segment
 * built from units starts, in serving order. Not for shuffle=row segments
 * (one piece: their record sizes are in the mount's record_bytes). */
uint64_t yfs_seg_record_start(const yfs_seg *seg, uint32_t record);
/* The framed bytes of record `record` (< records) of a segment built from
 * units, in place: a record is one piece of its body (yfs_segment.h), so
 * this costs no search, where yfs_seg_copy searches the pieces. */
const uint8_t *yfs_seg_record(const yfs_seg *seg, uint32_t record);

#endif
