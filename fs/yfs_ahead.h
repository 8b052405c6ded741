/* yfs_ahead.h — what a reader of a part of a plan (sh_part) keeps prepared
 * ahead of where it reads: the plan says exactly what comes next (NoPFS).
 *
 * After each read, a reader that reads on from piece `from` of its part
 * asks the segment cache to build the segments of pieces from, from+1, ...
 * (at most readahead= of them, and at most `allowance` framed bytes of
 * them: several readers share the budget instead of one taking it all),
 * and tells the I/O engine where it is (yfs_io_ahead), which keeps the
 * chunk loads of the segments after those in flight. An epoch or part file
 * (yfs_view.h) is one such reader; a mixture's file (yfs_mixview.h) is one
 * per source, each over its own source's part.
 *
 * Thread-safe as the cache and the engine are; *io_next is guarded by the
 * engine (yfs_io.h).
 */
#ifndef YFS_AHEAD_H
#define YFS_AHEAD_H

#include <stdint.h>

#include "yfs_mount.h"
#include "yfs_plans.h"

void yfs_ahead(yfs_mount *m, yfs_plan *plan, const sh_part *part, uint64_t from,
               uint64_t allowance, const void *reader, uint64_t *io_next, int in_order);

/* The prefetch allowance of one reader: this fraction (1/N) of the mount's
 * segment budget, at most (several readers share the budget instead of one
 * taking it all; a mixture's sources share their reader's). */
#define YFS_AHEAD_BUDGET_SHARE 4
/* ... and when one file is open for reading alone over slow storage (most
 * recent reads took YFS_LATENCY_SLOW_NS or more) and its next segment's
 * pages are likely streamed (yfs_ahead_view_allowance): its builds take a few
 * round trips each and nothing loads their pages ahead (yfs_io.h), so more
 * of them must run ahead (DuckDB's text, one reader, 50 ms a read,
 * mem=256M: 363 MB/s with a quarter, 480 with a half; again on 2026-12-04
 * 517-531 against 662-681). Not from fast storage, where builds are
 * decoding, not waiting: the segments held ahead leave less room for them
 * (pyarrow's tokens, one reader, 0 ms: 129 MB/s with a half against 139);
 * nor for pages the I/O engine loads ahead, whose store the segments would
 * take (one reader at 50 ms: pyarrow's tokens 140-142 MB/s with a half,
 * 160-163 with a quarter; 64 KiB text pages 727-735 against 770-783).
 * Figures in bench/results/latency_patience.md and latency_fair_share.md. */
#define YFS_AHEAD_ALONE_SHARE 2

/* The allowance of a reader of m's epoch or part files whose next segment
 * (of `next` framed bytes) is (`streamed` 1) or is not mostly of streamed
 * pages. YFS_AHEAD_BUDGET_SHARE of the data budget over fast storage. Over
 * slow storage (yfs_latency_slow of the mount's reads): while it is the
 * only one open, YFS_AHEAD_ALONE_SHARE for streamed pages; with several
 * open, its fair part of what prefetches may fill
 * (yfs_budget_prefetch_limit) less the store of loaded pages
 * (yfs_mount_loaded_budget), at most the quarter, and at least its next
 * segment (the accountant still refuses that when there is no room).
 * Every reader also holds the segment it reads, and over slow storage the
 * I/O engine's loads ahead are what hide the latency: segments prefetched
 * past the fair part took the store's room, and builds waited for storage
 * instead (8 parts of pyarrow's 64 KiB text pages at mem=256M, 50 ms a
 * read: 522-544 MB/s with a quarter each, 659-674 with the fair part,
 * against 804-845 without latency). Over fast storage builds decode rather
 * than wait, and segments further ahead keep the cores busy (8 parts of
 * pyarrow's tokens, 0 ms: 189-204 MB/s with a quarter, 181-188 with the
 * fair part). Figures in bench/results/latency_fair_share.md. */
uint64_t yfs_ahead_allowance(const yfs_mount *m, int streamed, uint64_t next);
/* yfs_ahead_allowance for a reader reading on from piece `from` of its
 * part: whether that piece's segment is likely of streamed pages is
 * guessed from its first unit (yfs_unit_likely_whole: a wrong guess costs
 * speed, never a byte); shuffle=row segments count as not streamed. */
uint64_t yfs_ahead_view_allowance(const yfs_mount *m, const yfs_plan *plan, const sh_part *part,
                                  uint64_t from);

/* A read this close to where the last one ended goes on reading the file
 * in order (the kernel's readahead may deliver a sequential reader's reads
 * a little out of order): the I/O engine reads ahead of it. A reader whose
 * reads jump (random access) gets no read-ahead: its window would be loads
 * nobody reads. */
#define YFS_AHEAD_SEQUENTIAL_SLACK (8u << 20)

#endif
