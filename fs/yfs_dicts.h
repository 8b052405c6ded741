/* yfs_dicts.h — cache of decoded dictionary pages, one per column chunk.
 *
 * A page-shuffled epoch reads pages of many chunks in turn; without this
 * cache every page would re-read and re-decode its chunk's dictionary. The
 * cache holds at most `budget` bytes of unreferenced dictionaries (least
 * recently used go first); referenced ones are never dropped. Thread-safe.
 */
#ifndef YFS_DICTS_H
#define YFS_DICTS_H

#include <stdint.h>

#include "ix_index.h"
#include "yfs_stats.h"

typedef struct yfs_dicts yfs_dicts;
typedef struct yfs_dict yfs_dict;

yfs_dicts *yfs_dicts_new(const ix_index *ix, uint64_t budget, yfs_stats *stats);
void yfs_dicts_free(yfs_dicts *c);

/* The decoded dictionary of `chunk` (which must have one), loading it if
 * needed. *handle must be given back with yfs_dicts_put. */
int yfs_dicts_get(yfs_dicts *c, uint32_t chunk, const pq_dictionary **dict, yfs_dict **handle,
                  pq_error *err);
void yfs_dicts_put(yfs_dicts *c, yfs_dict *handle);

#endif
