/* ix_cache.h — the persistent index: what the mount learned about each file
 * (from its footer and from the page pass), kept on disk so that the next
 * mount of an unchanged file neither parses its footer nor scans its pages.
 *
 * One cache file per (dataset path, column leaf, framing) in the cache
 * directory, named by a hash of those; any number of mounts and nodes may
 * share the directory. Inside, one entry per source file, valid only while
 * the file has the same name, size, mtime and footer bytes (their length and
 * CRC-32) — and, under rowid, the same first row, since row numbers change
 * record sizes. Stale entries are simply not used; the file is read again and
 * the cache rewritten. An entry also keeps the CRC-32 of every page's bytes
 * (0 where the page pass did not read them) and the ctime, device and inode
 * the file had then: a file found with another ctime may have been
 * rewritten in place with size, mtime and footer put back, so its pages are
 * compared with those checksums when read (ix_index.h, "Change detection").
 * A cache file of another format version is ignored and rewritten.
 *
 * Format (little-endian): "YFSIDX" 0 0, version u32, the key text
 * (u32 length + bytes), u32 file count, the entries in strictly increasing
 * name order, then a CRC-32 of everything before it. Writes go to a temporary
 * file that is fsync'ed and renamed over the old one, so readers see the old
 * or the new file, never a torn one. A cache file is untrusted input: it is
 * read through pq_cursor, every count is checked against the bytes left and
 * every page against the file size its entry names; anything malformed makes
 * the whole file be ignored, never trusted.
 */
#ifndef IX_CACHE_H
#define IX_CACHE_H

#include <stdint.h>

#include "ix_index.h"

#define IX_CACHE_VERSION 9 /* 4: page and dictionary checksums, ctime, device and inode;
                              5: shuffle units; 6: entries of any size are cut;
                              7: the dictionary page's claims; 8: marks at units;
                              9: lists' marks at units, with their pending entry */

/* A file's identity as the cache keys it. */
typedef struct ix_cache_key {
    const char *name;    /* relative to the dataset */
    uint64_t size;
    int64_t mtime_sec;
    int64_t mtime_nsec;
    uint32_t footer_len; /* the FileMetaData's length, as in the file's last 8 bytes */
    uint32_t footer_crc; /* CRC-32 of those footer_len bytes */
    uint64_t first_row;  /* only compared under rowid */
    /* Not part of the key: where the entry's checksums come from (ix_file.ctime_ns) */
    int64_t ctime_ns;
    uint64_t dev, ino;
} ix_cache_key;

/* What the mount needs of one column chunk: from the footer, its codec,
 * (for FIXED_LEN_BYTE_ARRAY) width and what its pages may claim; from the
 * page pass, its pages. Its row count is the sum of the pages' rows. */
typedef struct ix_cache_chunk {
    int codec;
    int32_t type_length;
    ix_chunk_bounds bounds;
    int64_t dict_offset;
    uint32_t dict_length;
    uint32_t dict_crc;    /* as ix_chunk.dict_crc; 0: not known */
    ix_dict_claims dict_claims; /* as ix_chunk.dict_claims */
    int has_offset_index;
    uint32_t num_pages;
    const ix_page *pages; /* first_row relative to the chunk; crc as ix_page.crc */
    uint64_t num_rows;
    int cut;              /* as ix_chunk.cut */
    uint32_t num_units;   /* the framed bytes of its cut entries' units (ix_index.h) */
    const uint64_t *unit_bytes;
    const ix_unit_mark *unit_marks; /* num_units entries, or NULL: none made */
} ix_cache_chunk;

/* One file's entry. Every page and dictionary lies inside `size` bytes. */
typedef struct ix_cache_file {
    const char *name;    /* not NUL-terminated: name_len bytes */
    uint32_t name_len;
    uint64_t size;
    int64_t mtime_sec, mtime_nsec;
    uint32_t footer_len, footer_crc;
    uint64_t first_row;
    int64_t ctime_ns;    /* the ctime, device and inode the file had when its */
    uint64_t dev, ino;   /* page checksums were taken (IX_CTIME_UNKNOWN: not known) */
    uint32_t num_chunks; /* one per row group */
    const ix_cache_chunk *chunks;
} ix_cache_file;

typedef struct ix_cache ix_cache;

/* Open the cache for this key (dataset, leaf and framing, as text): loads the
 * existing cache file if there is a valid one, with one read and no
 * allocation per entry. Never fails: without a usable directory it is an
 * empty cache that does not save (*warning says why, or is ""). */
ix_cache *ix_cache_open(const char *dir, const char *dataset_key, char *warning,
                        size_t warning_cap);
void ix_cache_free(ix_cache *c);

/* The cache file's path, or NULL when caching is off (files kept beside
 * it are named from it: ix_others.h). */
const char *ix_cache_path(const ix_cache *c);

/* Number of file entries loaded. */
uint32_t ix_cache_entries(const ix_cache *c);

/* The entry named key->name if it has key's size and mtime, else NULL. The
 * caller still compares the footer (footer_len, footer_crc) and, under rowid,
 * first_row. Valid until ix_cache_free; safe from several threads. */
const ix_cache_file *ix_cache_find(const ix_cache *c, const ix_cache_key *key);

/* Replace the cache file with the given index's files, chunks and pages
 * (their keys in keys[], one per file, in name order). With merge, the
 * entries the cache file holds now (written meanwhile by other processes,
 * `youmufs index --shard`) for files the index has not are kept: shards
 * build one cache file together. Writers take turns (an flock on
 * "<cache file>.lock" beside it). Returns 0, or -1 with a message (the mount
 * goes on without saving). */
int ix_cache_save(ix_cache *c, const ix_index *ix, const ix_cache_key *keys, int merge,
                  pq_error *err);

#endif
