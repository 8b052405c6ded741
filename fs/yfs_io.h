/* yfs_io.h — the plan-driven I/O engine: the chunk loads the plan already
 * knows, kept in flight ahead of the readers, so that storage latency is
 * paid while earlier bytes are being served.
 *
 * After each read a reader (an open epoch or part file) tells the engine
 * where it is (yfs_io_ahead). The engine walks the reader's next segments
 * in the order the reader will read them, and queues every chunk load of
 * the plan's schedule (sh_redirect.h) their pages need that has not run,
 * past the segments the builds prefetch, up to a window in framed bytes:
 * what the readers are served while a few storage reads take their p99
 * latency (latency x bandwidth, remeasured as both move; at least 16 MiB a
 * reader), within half the reader's share of the store of loaded pages
 * (the store divided by the readers that queued loads and are not
 * forgotten): the other half keeps what the window's loads bring for later
 * (a chunk's pages are served over a long span of the order). The engine
 * issues a load only when the store has room, see below. I/O
 * threads pop the queue in order and run the loads (yfs_loads_run): each
 * load parks its pages in the mount's store of loaded pages (yfs_pages.h),
 * where the segment builds find them. The queue is first come, first
 * served: every reader queues only its own window, in need order, so the
 * queue interleaves the readers by when they will need each load. A build
 * that needs a load the engine has not started yet runs it itself at once
 * (it never waits behind the queue); one that needs a load in flight waits
 * for it (the time is counted: storage_wait_nanoseconds).
 *
 * Every reader tells the store of loaded pages where it reads
 * (yfs_pages_reader_at), so that the store keeps the pages needed soonest.
 * A page of the window whose load already ran but which the store let go
 * is queued to be read alone (yfs_loads_queue_page); the first of a chunk's
 * such pages a thread runs brings those near it (yfs_loads_run_page), and
 * their own entries are dropped unread, with no room made for them.
 *
 * Builds: when a segment build starts (yfs_io_build_starts), the loads and
 * pages alone its pages need go to the front of the queue, urgent: they
 * are issued at once, whatever the store's room, and the pages they bring
 * for that build are pinned in the store until it takes them; a load the
 * accountant refuses brings the build's page alone (yfs_loads_run), and its
 * other pages that builds want are queued in front to be read alone, side
 * by side (yfs_loads_queue_wanted). So a build waits for about one round
 * trip, not one per page.
 *
 * Memory: a load that is not urgent is issued only when what it brings has
 * room: its bytes fit in the store's room left after the loads already in
 * flight, made by dropping parked pages needed after it, and every load
 * needs the accountant to grant its bytes as a prefetch (yfs_budget.h).
 * Otherwise the engine waits until builds take parked pages. Pages so large
 * for mem that their builds likely stream them in windows (yfs_units.h)
 * are not loaded ahead.
 *
 * Depth: at most `depth` reads in flight. With io_depth=0 (the default) the
 * depth starts at YFS_IO_DEPTH_START and doubles whenever builds waited for
 * storage during an interval in which the engine had more reads queued
 * than in flight and memory did not stop it (or an urgent one waited for a
 * thread), up to YFS_IO_DEPTH_MAX: memory bounds what reads bring, not
 * their number (pages read alone are small); a fixed io_depth=N keeps N.
 * Threads are started as the depth grows.
 *
 * A pool of threads, not io_uring: measured side by side on this engine's
 * reads (1 MiB chunks, shuffled, depth 1 to 64, page cache warm and cold,
 * 0 to 50 ms added), io_uring was the pool's equal at depth 1 and behind
 * it at depth 8 and 64 (0.42-0.97 with latency), at the same CPU per GB
 * (bench/results/io_engine.md).
 *
 * Thread-safe: one mutex guards the queue and the depth.
 */
#ifndef YFS_IO_H
#define YFS_IO_H

#include <stdint.h>

#include "pq_error.h"
#include "sh_plan.h"

#define YFS_IO_DEPTH_START 8
#define YFS_IO_DEPTH_MAX 128

typedef struct yfs_mount yfs_mount;
typedef struct yfs_plan yfs_plan;
typedef struct yfs_io yfs_io;

/* An engine for m with a fixed depth (1..YFS_IO_DEPTH_MAX), or adaptive
 * (0). NULL when out of memory. Threads start with yfs_io_start. */
yfs_io *yfs_io_new(yfs_mount *m, int depth);
/* Before yfs_io_start: a mixture's source giving `count` of an epoch's
 * `records` takes that share of the depths (the fixed one, or the start and
 * the most), at least 1 each, so that its sources together run about as
 * many reads and threads as one dataset (at the whole depths each, eight
 * sources ran 150 threads, and the threads' switches cost b's mixture a
 * tenth of its time). */
void yfs_io_share(yfs_io *io, uint64_t count, uint64_t records);
int yfs_io_start(yfs_io *io, pq_error *err);
/* Stop the threads: loads in flight finish, queued ones stay queued.
 * Frees nothing; may be called again. */
void yfs_io_stop(yfs_io *io);
/* Stop the threads (yfs_io_stop) and free the queue. */
void yfs_io_free(yfs_io *io);

/* Reader `reader` of `plan`'s part `part` reads on from the part's piece
 * `from` (the first it has not read); *next (guarded by the engine's lock:
 * a reader's reads may run at once) is where its queueing stopped last time
 * (0 at open), and is advanced. Loads of pieces `from` onwards are queued,
 * up to the reader's window, when the reader reads in order (in_order); a
 * reader that jumped gets none, and its window starts again. Cheap when
 * nothing new is due. */
void yfs_io_ahead(yfs_io *io, yfs_plan *plan, const sh_part *part, uint64_t from,
                  const void *reader, uint64_t *next, int in_order);
/* Where reader `reader` of the plan's part reads on (its piece `from`), for
 * the store of loaded pages to keep what it needs (yfs_pages_reader_at);
 * yfs_io_ahead says it too. A reader says it at open, before its first
 * read: else the pages it needs first would count as stale while the other
 * readers' reads are past them. yfs_io_forget ends it. */
void yfs_io_reader_at(yfs_io *io, yfs_plan *plan, const sh_part *part, uint64_t from,
                      const void *reader);
/* Readers of the mount's segments were served `bytes` more (a view after
 * each read; a mixture's view, each source's share): the rate that sizes
 * the windows. */
void yfs_io_served(yfs_io *io, uint64_t bytes);
/* A build of segment s of plan starts: the loads of its pages that have not
 * started, and its pages to read alone, go to the front of the queue,
 * urgent (see Builds above), so that they are read at once rather than one
 * after another as the build reaches them; its pages waiting in the store
 * are pinned there. Cheap when the plan has no loads. */
void yfs_io_build_starts(yfs_io *io, yfs_plan *plan, uint64_t s);
/* The reader is gone: its queued loads that have not started leave the
 * queue. */
void yfs_io_forget(yfs_io *io, const void *reader);

typedef struct yfs_io_report {
    int depth;                 /* loads allowed in flight now */
    int fixed;                 /* io_depth= fixed it */
    uint64_t queued;           /* loads waiting in the queue */
} yfs_io_report;

void yfs_io_report_get(yfs_io *io, yfs_io_report *out);

#endif
