/* yfs_pages.h — pages waiting to be served: the loaded pages of chunk loads
 * (Redox's filled virtual chunk slots) and the framed units of cut pages.
 *
 * A chunk load reads several pages in one I/O; the page that triggered it is
 * served at once, the others wait here, as raw bytes (header and compressed
 * body), until the segment that serves them takes them. Keyed by (epoch,
 * key: a global page, or a unit of the framed store). Every entry is
 * charged to the mount's accountant as a parked page (yfs_budget.h). A taken
 * entry leaves the store. Correctness never depends on this store: whoever
 * needs an entry that is not here reads (or frames) it on its own.
 *
 * What is kept. Each entry carries its need: the order position at which it
 * is served (smaller: sooner). Readers tell the store where they read on
 * (yfs_pages_reader_at). An entry is stale when no reader reads its epoch
 * or every reader of its epoch is past its need. The store keeps at most
 * `cap` bytes; making room drops, in this order, a stale entry (the oldest
 * of an epoch nobody reads, else the one needed soonest if every reader is
 * past it), then the entry needed last (largest (epoch, need)) while it is
 * needed after what the room is for: Belady's rule. With several readers
 * the store holds only part of what their chunk loads bring; the pages to
 * let go are those needed furthest ahead, not those loaded first (which
 * are, under redirection, the ones needed soonest). A page needed after
 * everything a full store holds is not kept. A prefetch reservation short
 * of room drops stale entries (when readers are registered); a demand one
 * drops in the order above, any need. Needs of different epochs compare by
 * epoch first. A store no reader registers with (the framed store) finds
 * every entry stale and drops the entries waiting longest first.
 *
 * Pinned entries: those a build under way will take (yfs_pages_pin,
 * yfs_pages_put_pinned). Making room never drops them, and they are kept
 * beyond `cap` (the accountant still bounds their bytes); they go once
 * stale, or for a demand reservation after everything else.
 * Thread-safe (one mutex; it calls the accountant under it, never the
 * reverse).
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
/* Change the cap, before the store keeps anything (a mixture's source
 * learns its share of memory after its stores are made, yfs_mix.h). */
void yfs_pages_set_cap(yfs_pages *s, uint64_t cap);

/* Keep raw[0..len) (malloc'ed, charged as YFS_MEM_RAW to hold), needed at
 * order position `need` of its epoch: the store owns it and its charge from
 * now on, and frees it at once when it finds no room for it (see above). */
void yfs_pages_put(yfs_pages *s, uint64_t epoch, uint32_t key, uint64_t need, uint8_t *raw,
                   uint32_t len, yfs_hold *hold);

/* The same for an entry a build under way will take (yfs_pages_pin): kept
 * whatever the cap. */
void yfs_pages_put_pinned(yfs_pages *s, uint64_t epoch, uint32_t key, uint64_t need,
                          uint8_t *raw, uint32_t len, yfs_hold *hold);

/* The waiting entry (its charge moved to hold as YFS_MEM_RAW, *len set),
 * handed to the caller, who frees it and releases the charge; or NULL. */
uint8_t *yfs_pages_take(yfs_pages *s, uint64_t epoch, uint32_t key, yfs_hold *hold,
                        uint32_t *len);

/* Whether the entry waits here. */
int yfs_pages_holds(yfs_pages *s, uint64_t epoch, uint32_t key);

/* Make `bytes` of room for what is needed at (epoch, need), dropping stale
 * entries and those needed after it: 1 when the room is there, 0 when
 * everything kept is needed sooner (the I/O engine issues a load only into
 * room). */
int yfs_pages_make_room(yfs_pages *s, uint64_t bytes, uint64_t epoch, uint64_t need);

/* A build under way will take the entry: it is no longer dropped for room,
 * only for a demand reservation or once stale. */
void yfs_pages_pin(yfs_pages *s, uint64_t epoch, uint32_t key);

/* `reader` reads epoch `epoch` on from order position `at`: what it needs
 * is at `at` or after. */
void yfs_pages_reader_at(yfs_pages *s, const void *reader, uint64_t epoch, uint64_t at);
/* The reader is gone (a reader never registered is ignored). */
void yfs_pages_reader_gone(yfs_pages *s, const void *reader);

#endif
