/* yfs_dicts.h — cache of decoded dictionary pages, one per column chunk.
 *
 * A page-shuffled epoch reads pages of many chunks in turn; without this
 * cache every page would re-read and re-decode its chunk's dictionary. Every
 * dictionary, in use or idle, is charged to the mount's accountant
 * (yfs_budget.h) at its decoded size. The cache keeps at most `cap` bytes
 * of unreferenced dictionaries (least recently used go first), and a demand
 * reservation short of room drops idle ones too; referenced ones are never
 * dropped. Loading one reserves its raw page and a bound of its decoded
 * size from its page header (demand reservations of the caller's hold)
 * before reading it, and settles to the real size once decoded. Thread-safe
 * (one mutex; it calls the accountant under it, never the reverse).
 */
#ifndef YFS_DICTS_H
#define YFS_DICTS_H

#include <stdint.h>

#include "ix_index.h"
#include "ix_read.h"
#include "yfs_budget.h"
#include "yfs_stats.h"

typedef struct yfs_dicts yfs_dicts;
typedef struct yfs_dict yfs_dict;

/* Registers a reclaimer with budget (before any reservation). */
yfs_dicts *yfs_dicts_new(const ix_index *ix, yfs_budget *budget, uint64_t cap,
                         yfs_stats *stats);
void yfs_dicts_free(yfs_dicts *c);
/* Change the cap, before any dictionary is loaded (yfs_pages_set_cap). */
void yfs_dicts_set_cap(yfs_dicts *c, uint64_t cap);

/* The decoded dictionary of `chunk` (which must have one), loading it if
 * needed; a load's reservations are made for hold (entered by the caller,
 * or NULL when the caller holds nothing). *handle must be given back with
 * yfs_dicts_put. The caller must not wait for room while it holds one
 * (yfs_budget.h). */
int yfs_dicts_get(yfs_dicts *c, uint32_t chunk, yfs_hold *hold, const pq_dictionary **dict,
                  yfs_dict **handle, pq_error *err);
void yfs_dicts_put(yfs_dicts *c, yfs_dict *handle);

/* An ix_dict_source (ix_read.h) over the cache, loading for hold: its
 * handles are yfs_dict handles, given back with yfs_dicts_put. */
typedef struct yfs_dict_source {
    yfs_dicts *dicts;
    yfs_hold *hold;
} yfs_dict_source;
ix_dict_source yfs_dicts_source(yfs_dict_source *ctx);

#endif
