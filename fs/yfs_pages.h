/* yfs_pages.h — loaded pages waiting to be served (Redox's filled virtual
 * chunk slots).
 *
 * A chunk load reads several pages in one I/O; the page that triggered it is
 * served at once, the others wait here, as raw bytes (header and compressed
 * body), until the segment that serves them takes them. Keyed by (epoch,
 * global page). The bytes held stay within the budget: when a new page does
 * not fit, the pages waiting longest are dropped (whoever needs one later
 * reads it on its own: correctness never depends on this store). A taken
 * page leaves the store. Thread-safe (one mutex).
 */
#ifndef YFS_PAGES_H
#define YFS_PAGES_H

#include <stdint.h>

#include "yfs_stats.h"

typedef struct yfs_pages yfs_pages;

yfs_pages *yfs_pages_new(uint64_t budget, yfs_stats *stats);
void yfs_pages_free(yfs_pages *s);

/* Keep raw[0..len) (malloc'ed; the store owns it from now on, and frees it
 * at once when len alone exceeds the budget). */
void yfs_pages_put(yfs_pages *s, uint64_t epoch, uint32_t page, uint8_t *raw, uint32_t len);

/* The waiting page, handed to the caller (who frees it), or NULL. */
uint8_t *yfs_pages_take(yfs_pages *s, uint64_t epoch, uint32_t page);

#endif
