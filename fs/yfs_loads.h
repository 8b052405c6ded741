/* yfs_loads.h — where the read path gets a page's bytes: executing the
 * plan's I/O schedule (Redox chunk loads, sh_redirect.h).
 *
 * Each load of the schedule runs at most once per plan: the first segment
 * build that needs a page it brings reads the whole physical chunk in one
 * I/O, keeps the page it needs, and leaves the chunk's other brought pages
 * in the mount's store of loaded pages (yfs_pages.h) for the segments that
 * serve them; builds that need the same load meanwhile wait for it. A page
 * whose load already ran but which is no longer in the store (dropped for
 * memory, or taken by an earlier build of the same segment) is read on its
 * own, as is every page when the plan has no schedule (chunk=0). The bytes
 * are the same either way: only the I/O differs.
 * Memory (yfs_budget.h): a page handed out is charged as YFS_MEM_RAW to the
 * caller's hold; reading it alone is a demand reservation (it may wait). A
 * chunk load's buffer and the copies of its pages are speculative: when the
 * accountant refuses them the load, or the copy, is skipped and the page
 * is read alone when needed. So a load never waits for room, and builds
 * waiting for a load wait for a thread that does not wait.
 * The I/O engine (yfs_io.h) runs loads ahead of the builds: it queues a
 * load (yfs_loads_queue), and runs it later (yfs_loads_run) unless a build
 * needed it first and ran it itself. A page whose load already ran but
 * which is not in the store (dropped for a page needed sooner) the engine
 * reads alone ahead of its build the same way (yfs_loads_queue_page,
 * yfs_loads_run_page), parking it; a build that needs it while that read is
 * in flight waits for it. Time builds spend waiting for a load or a page,
 * or running one, is counted as storage_wait_nanoseconds. Thread-safe.
 */
#ifndef YFS_LOADS_H
#define YFS_LOADS_H

#include <pthread.h>
#include <stdint.h>

#include "pq_error.h"
#include "sh_plan.h"
#include "yfs_budget.h"

typedef struct yfs_mount yfs_mount;
typedef struct yfs_plan yfs_plan;

/* The most pages one read of pages queued alone brings (yfs_loads_run_page). */
#define YFS_LOADS_TOGETHER_MAX 32

/* Progress of one plan's loads. */
typedef struct yfs_loads {
    pthread_mutex_t lock;
    pthread_cond_t finished; /* a load or a page left the LOADING state */
    uint8_t *state;          /* per load: not started, queued, loading, done */
    uint8_t *alone;          /* per order position: the engine's read of the page alone,
                                in the same states (done: read, or taken by its build) */
    uint8_t *wanted;         /* per order position: a build under way will fetch the page
                                (parked pinned, yfs_pages_put_pinned); cleared as it does */
} yfs_loads;

int yfs_loads_init(yfs_loads *l, uint64_t num_loads, uint64_t num_positions);
void yfs_loads_destroy(yfs_loads *l);

/* The raw bytes (header and compressed body: the page's ix_page.length) of
 * the page at order position `pos` of the plan (its loads' progress in
 * plan->loads), malloc'ed for the caller and charged to hold (entered by
 * the caller) as *len bytes of YFS_MEM_RAW: the caller frees them and
 * releases the charge.
 * A load brings only the pages the files open on the mount read
 * (yfs_page_read_here; those of a part opened while it reads as room
 * allows, each reserved as it is handed out): when they hold less than
 * half its chunk's bytes it
 * reads each run of them near each other in one read instead of the chunk
 * (a node that reads one part of 8 of 64 KiB pages fetched all the files,
 * 816 MB, for its 205 MB). */
int yfs_page_fetch(yfs_mount *m, yfs_plan *plan, uint64_t pos, yfs_hold *hold, uint8_t **raw,
                   uint32_t *len, pq_error *err);
/* The same for global page `page`, read on its own. */
int yfs_page_read(yfs_mount *m, uint64_t page, yfs_hold *hold, uint8_t **raw, uint32_t *len,
                  pq_error *err);

/* The bytes load l of the plan reads in one I/O, or 0 when it is not read
 * whole (its pages are read alone). */
uint64_t yfs_load_bytes(const yfs_mount *m, const sh_plan *plan, uint64_t l);
/* Mark load l queued for the engine if it has not started: 1 if it was
 * marked, 0 if it had already been queued, run or started. */
int yfs_loads_queue(yfs_loads *loads, uint64_t l);
/* A queued load leaves the queue without running (it may run later). */
void yfs_loads_unqueue(yfs_loads *loads, uint64_t l);
/* Run queued load l ahead of its builds, its pages parked (reserved as a
 * prefetch through hold, entered by the caller). When memory refuses the
 * load, the page at order position `pos` it was queued for is read alone
 * and parked instead, as a prefetch, or, for a build under way (for_build),
 * as a try reservation (yfs_budget.h: the build needs it anyway); the load
 * goes back to not started, and runs later for its other pages without
 * parking that one again. (A build whose loads were all refused read its
 * pages one after another: 8 parts of 64 KiB pages at 50 ms a read and
 * mem=256M served 0.3 x their figure without latency, 0.44 x with this;
 * bench/results/latency_budget.md.) Returns
 * 1 when the load, or the page, was read (or the load cannot be read: its
 * page offsets do not ascend); 0 when the load was no longer queued (a
 * build took it); -1 when neither was read (a build will). A load that
 * cannot be read reads the page at `pos` alone the same way, and is done:
 * its other pages are read alone when queued (yfs_loads_queue_page). */
int yfs_loads_run(yfs_mount *m, yfs_plan *plan, uint64_t l, uint64_t pos, int for_build,
                  yfs_hold *hold);

/* After load l, queued for a build under way, was refused memory
 * (yfs_loads_run returned -1): mark the other pages it serves that a build
 * under way wants (yfs_loads_want) and nobody reads yet queued to be read
 * alone, so that the engine reads them side by side instead of the build
 * one after another. Their order positions go to pos (room for max), the
 * engine queues them (yfs_loads_run_page); returns how many. None while a
 * build runs the load itself. */
size_t yfs_loads_queue_wanted(const sh_plan *plan, yfs_loads *loads, uint64_t l, uint64_t *pos,
                              size_t max);
/* Mark the page at order position pos queued to be read alone ahead when
 * its load has run, the page is not waiting in the store and it was not
 * queued before: 1 if it was marked. */
int yfs_loads_queue_page(yfs_mount *m, const sh_plan *plan, yfs_loads *loads, uint64_t pos);
/* A build under way will fetch the page at pos: parked from now on, it is
 * pinned until then. */
void yfs_loads_want(yfs_loads *loads, uint64_t pos);
/* A queued page leaves the queue without being read. */
void yfs_loads_unqueue_page(yfs_loads *loads, uint64_t pos);
/* Whether the page at pos is still queued to be read alone: not when it
 * came with another queued page of its load (yfs_loads_run_page) or its
 * build fetched it. */
int yfs_loads_page_queued(yfs_loads *loads, uint64_t pos);
/* Read the queued page at pos alone and park it, reserved as yfs_loads_run
 * reserves a refused load's page; the same returns. The other pages of its
 * load queued to be read alone come in the same storage read when they lie
 * near it (the range at most twice their bytes, at most
 * YFS_LOADS_TOGETHER_MAX pages; reserved as a prefetch with the range's
 * buffer, else pos's page is read alone): pages of one chunk let go for
 * memory, or a refused load's pages a build wants, cost one request
 * instead of one each (counted as reads_together and pages_read_together,
 * not as pages_read_alone). Their own queue entries then find them taken
 * (0). */
int yfs_loads_run_page(yfs_mount *m, const sh_plan *plan, yfs_loads *loads, uint64_t pos,
                       int for_build, yfs_hold *hold);

#endif
