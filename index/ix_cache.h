/* ix_cache.h — the persistent index: what the page pass learned about each
 * file, kept on disk so that the next mount of unchanged files skips it.
 *
 * One cache file per (dataset path, column, framing) in the cache directory,
 * named by a hash of those; any number of mounts and nodes may share the
 * directory. Inside, one entry per source file, valid only while the file
 * has the same name, size, mtime and footer bytes (a CRC of them) — and, under
 * rowid, the same first row, since row numbers change record sizes. Stale
 * entries are simply not used; the file is scanned again and the cache
 * rewritten.
 *
 * Format (little-endian): "YFSIDX" 0 0, version u32, the key text
 * (u32 length + bytes), u32 file count, the entries, then a CRC-32 of
 * everything before it. Writes go to a temporary file that is fsync'ed and
 * renamed over the old one, so readers see the old or the new file, never a
 * torn one. A cache file is untrusted input: it is read through pq_cursor,
 * and anything malformed makes it be ignored, never trusted.
 */
#ifndef IX_CACHE_H
#define IX_CACHE_H

#include <stdint.h>

#include "ix_index.h"

#define IX_CACHE_VERSION 2

/* A file's identity as the cache keys it. */
typedef struct ix_cache_key {
    const char *name;    /* relative to the dataset */
    uint64_t size;
    int64_t mtime_sec;
    int64_t mtime_nsec;
    uint32_t footer_crc;
    uint64_t first_row;  /* only compared under rowid */
} ix_cache_key;

/* The page pass's result for one file. */
typedef struct ix_cache_chunk {
    int64_t dict_offset;
    uint32_t dict_length;
    int has_offset_index;
    uint32_t num_pages;
    ix_page *pages;      /* first_row relative to the chunk */
} ix_cache_chunk;

typedef struct ix_cache ix_cache;

/* Open the cache for this dataset and framing: loads the existing cache file
 * if there is a valid one. Never fails: without a usable directory it is an
 * empty cache that does not save (*warning says why, or is ""). */
ix_cache *ix_cache_open(const char *dir, const char *dataset_key, char *warning,
                        size_t warning_cap);
void ix_cache_free(ix_cache *c);

/* Number of file entries loaded. */
uint32_t ix_cache_entries(const ix_cache *c);

/* The cached chunks of a file, if its entry matches key and has `chunks`
 * chunks; NULL otherwise. Valid until ix_cache_free. */
const ix_cache_chunk *ix_cache_lookup(const ix_cache *c, const ix_cache_key *key,
                                      int use_first_row, uint32_t chunks);

/* Replace the cache file with the given index's files and pages (their keys
 * in keys[], one per file). Returns 0, or -1 with a message (the mount goes
 * on without saving). */
int ix_cache_save(ix_cache *c, const ix_index *ix, const ix_cache_key *keys, pq_error *err);

#endif
