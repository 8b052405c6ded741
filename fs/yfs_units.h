/* yfs_units.h — the framed records of one shuffle unit (shuffle/sh_units.h,
 * index/ix_index.h): what a built segment is made of (yfs_segment.h).
 *
 * A unit's records, framed back to back in record order, with the end of
 * each, in a block the build allocates before it frames anything: the page
 * is decoded, the unit framed, the decoded page let go, and the segment
 * serves its records from the blocks in shuffled order. So a build holds
 * its segment's bytes and one decoded page per decode thread, not every
 * decoded page of the segment: for lists of numbers a decoded page is many
 * times its framed size (4 bytes of levels and the 8-byte value, packed, for
 * each 2-byte token of raw u16).
 *
 * A page cut into several units is decoded for the first of them a build
 * needs; its other units are framed from the same decode into the blocks of
 * the running builds that want them (yfs_wants.h), else parked in the
 * mount's store of framed units (yfs_pages.h, keyed by unit) for the builds
 * that serve them next (the plan serves a page's units close together). A
 * parked unit dropped for memory is framed again from its page: only the
 * work differs, never the bytes.
 *
 * A page whose whole decode (raw bytes, decompressed body, value slices,
 * levels) would take more than a quarter of the data budget, or whose
 * units could not all wait in the framed store (its framed bytes pass the
 * page's share of it, when paused streams fit: yfs_units.c) is streamed
 * (index/ix_stream.h): read in windows and framed record by record, holding
 * at most ix_stream_cap instead (charged for what it commits to, page by
 * page: stream_grows in yfs_units.c), framing the page's other units it
 * passes into the blocks that want them or parking them as the framed store
 * allows, leaving a mark at the first record of each unit it passes
 * (yfs_streams.h: a later build resumes the page there, from the mark's
 * SNAPPY block, instead of from its start), and stopping after the last
 * unit it keeps (paused there: yfs_streams.h). A page that turns out not to stream (a codec or
 * encoding pq_stream does not handle, a row over its limit) is decoded
 * whole, over the budget if it must: mem= cannot bound that page. So the
 * decoded form of one page no longer bounds memory; its framed units do.
 * Thread-safe.
 */
#ifndef YFS_UNITS_H
#define YFS_UNITS_H

#include <stdint.h>

#include "yfs_budget.h"
#include "yfs_mount.h"
#include "yfs_plans.h"

typedef struct yfs_unit {
    uint32_t records;
    uint64_t size;         /* framed bytes */
    const uint64_t *ends;  /* records entries: the end of each record in bytes */
    const uint8_t *bytes;  /* size bytes */
    uint8_t *block;        /* owned: ends, then bytes */
    int mapped;            /* block is mapped (yfs_segment_alloc), else malloc'ed */
} yfs_unit;

/* Register the slots units[] (seg->units, zeroed) of the units of the
 * segment that share their page with other units (yfs_wants.h): whoever
 * decodes or streams their pages from now on frames them into them,
 * allocating the block when it does (its bytes are reserved by the caller
 * already: a build reserves all its units' blocks at once before framing
 * any, so that builds that could not finish do not start). Blocks are
 * allocated when framed, not before: a build waiting for room holds no
 * block it has not filled. Every slot is unregistered by yfs_units_finish;
 * the blocks go with yfs_unit_drop. */
void yfs_units_prepare(yfs_mount *m, yfs_plan *plan, const sh_segment *seg, yfs_unit *units);
/* Unregister the blocks (waiting while another thread frames into one, as
 * a thread of hold). */
void yfs_units_finish(yfs_mount *m, yfs_plan *plan, const sh_segment *seg, yfs_hold *hold,
                      yfs_unit *units);

/* Frame the records of unit `unit` of the plan's input into out (a slot
 * from yfs_units_prepare), unless another's decode or stream did. Every
 * other byte it takes (raw and decoded pages, streams) is reserved for hold,
 * entered by the caller. Fails, naming the file, when the page holds other
 * records or bytes than the index says (a source changed). */
int yfs_unit_get(yfs_mount *m, yfs_plan *plan, uint32_t unit, yfs_hold *hold, yfs_unit *out,
                 pq_error *err);
/* The bytes unit `unit`'s framed records take with their ends. */
uint64_t yfs_unit_block_size(const yfs_mount *m, uint32_t unit);
/* The page unit `unit` is (a part of). */
uint32_t yfs_unit_page(const yfs_mount *m, uint32_t unit);
/* Whether a file open on the mount reads records of global page `page`
 * (some unit of it is read here: yfs_plan_read_here). */
int yfs_page_read_here(const yfs_mount *m, const yfs_plan *plan, uint32_t page);
/* The unit's page in *page, and 1 when that page is likely decoded whole
 * (its raw bytes fetched through the plan's loads), 0 when it is likely
 * streamed in windows (a page large for mem). A guess for reading ahead: a
 * wrong one costs a read, never a byte served. */
int yfs_unit_likely_whole(const yfs_mount *m, uint32_t unit, uint32_t *page);
/* Whether framing the unit now would wait for a stream of its page that
 * another build uses (yfs_streams_wait), which may frame the unit meanwhile. */
int yfs_unit_stream_busy(const yfs_mount *m, uint32_t unit);
/* Free the unit's block (its charge is the caller's to release). */
void yfs_unit_drop(yfs_unit *u);

#endif
