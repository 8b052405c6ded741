/* yfs_pages.h — loaded pages waiting to be served (Redox's filled virtual
 * chunk slots).
 *
 * A chunk load reads several pages in one I/O; the page that triggered it is
 * served at once, the others wait here, as raw bytes (header and compressed
 * body), until the segment that serves them takes them. Keyed by (epoch,
 * global page). Every page is charged to the mount's accountant as a
 * parked page (yfs_budget.h); the store keeps at most `cap` bytes: when a
 * new page does not fit, the pages waiting longest are dropped, and a demand
 * reservation short of room drops them too, oldest first (whoever needs one
 * later reads it on its own: correctness never depends on this store). A
 * taken page leaves the store. Thread-safe (one mutex; it calls the
 * accountant under it, never the reverse).
 */
#ifndef YFS_PAGES_H
#define YFS_PAGES_H

#include <stdint.h>

#include "yfs_budget.h"
#include "yfs_stats.h"

typedef struct yfs_pages yfs_pages;

/* Registers a reclaimer with budget (before any reservation). */
yfs_pages *yfs_pages_new(yfs_budget *budget, uint64_t cap, yfs_stats *stats);
void yfs_pages_free(yfs_pages *s);

/* Keep raw[0..len) (malloc'ed, charged as YFS_MEM_RAW to hold: the store
 * owns it and its charge from now on, and frees it at once when len alone
 * exceeds the cap). */
void yfs_pages_put(yfs_pages *s, uint64_t epoch, uint32_t page, uint8_t *raw, uint32_t len,
                   yfs_hold *hold);

/* The waiting page (its charge moved to hold as YFS_MEM_RAW, *len set),
 * handed to the caller, who frees it and releases the charge; or NULL. */
uint8_t *yfs_pages_take(yfs_pages *s, uint64_t epoch, uint32_t page, yfs_hold *hold,
                        uint32_t *len);

/* Bytes the store can take before it drops a page for room (the I/O engine
 * issues loads only into this room). */
uint64_t yfs_pages_room(yfs_pages *s);

#endif
