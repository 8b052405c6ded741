/* ix_index.h — the dataset at mount: its files, the chosen column, and the
 * global page index.
 *
 * ix_build() lists the dataset (a directory: every *.parquet below it, sorted
 * by path; or a single file), reads every footer (in parallel), resolves the
 * column, and builds the global page index: for every data page of the column,
 * in file / row group / page order, where it is, how many rows and records
 * (non-null values) it holds and the exact size of its records in the chosen
 * framing. Page locations come from the OffsetIndex when a chunk has one and
 * from walking the page headers otherwise. Framed sizes need the values, so
 * every page is decoded once at mount (in parallel, with progress on stderr
 * after a second). With a cache directory (ix_cache.h), a file unchanged
 * since an earlier build comes from the persistent index instead: its footer
 * bytes are read to recognise it, but neither parsed nor followed to a page.
 *
 * Global page numbers are the positions in `pages`. ix_locate() maps one to
 * its file and column chunk by layered binary search (files by their first
 * page, then chunks of that file by theirs), as in Youmu's index translation.
 *
 * The index keeps every source file open read-only (fd) for the read path and
 * remembers its size and mtime: a file that changed since mount is detected
 * by ix_check_file() and reported instead of served.
 *
 * Ownership: ix_build returns a heap index freed by ix_free (which closes the
 * files). After build the index is immutable and safe to share across threads.
 */
#ifndef IX_INDEX_H
#define IX_INDEX_H

#include <stdint.h>
#include <time.h>

#include "ix_claims.h"
#include "ix_frame.h"
#include "pq_column.h"
#include "pq_error.h"
#include "pq_meta.h"

typedef struct ix_file {
    char *path;         /* as opened */
    char *name;         /* relative to the dataset root, for messages */
    int fd;
    uint64_t size;
    struct timespec mtime;
    struct timespec ctime; /* no one can set it back: catches in-place rewrites that restore mtime */
    uint64_t num_rows;
    uint64_t first_row;  /* global row number of the file's first row */
    uint64_t first_page; /* global page number of the file's first page */
    uint32_t first_chunk;
    uint32_t num_chunks; /* one per row group */
} ix_file;

typedef struct ix_chunk {
    uint32_t file;
    uint32_t row_group;
    pq_column_desc desc;
    int64_t dict_offset;  /* file offset of the dictionary page header, -1 if none */
    uint32_t dict_length; /* header + body */
    ix_chunk_bounds bounds; /* what its pages may claim: checked at every read (ix_claims.h) */
    int has_offset_index;
    uint64_t first_row;
    uint64_t first_page;
    uint32_t num_pages;
} ix_chunk;

typedef struct ix_page {
    uint64_t offset;    /* file offset of the page header */
    uint64_t first_row; /* global row number of the page's first row */
    uint64_t framed;    /* bytes of the page's records in the mount's framing */
    uint32_t length;    /* header + compressed body */
    uint32_t rows;
    uint32_t records;   /* records: non-null rows */
} ix_page;

typedef struct ix_options {
    const char *dataset;
    const char *column;  /* NULL: the dataset's only string column */
    ix_frame_options frame;
    int threads;         /* >= 1 */
    int progress;        /* report progress on stderr after a second */
    int skip_crc;        /* do not verify page CRCs (they are verified where present) */
    const char *cache_dir; /* persistent index directory (ix_cache.h), NULL for none */
} ix_options;

typedef struct ix_index {
    char *dataset;
    pq_leaf column;      /* the resolved leaf (path, type, levels) */
    ix_framing framing;
    int verify_crc;      /* check page CRCs when reading */

    uint32_t num_files;
    ix_file *files;
    uint32_t num_chunks;
    ix_chunk *chunks;
    uint64_t num_pages;
    ix_page *pages;

    uint64_t num_rows;
    uint64_t num_records;
    uint64_t framed_bytes;   /* sum of pages[].framed: the whole epoch's size */
    uint64_t bytes_scanned;  /* bytes read from storage while building */
    int offset_index_chunks; /* chunks whose pages came from an OffsetIndex */
    int metadata_sized_chunks; /* ... and whose sizes came from it too: no page decoded */
    uint64_t header_sized_pages; /* pages sized from their header alone, not decoded */
    double seconds_footers;  /* wall time to list files and read footers */
    double seconds_pages;    /* wall time of the page pass */
    uint32_t files_cached;   /* files whose pages came from the persistent index */
    char cache_note[PQ_ERROR_MAX]; /* why the persistent index was not used or saved, or "" */
} ix_index;

int ix_build(const ix_options *opts, ix_index **out, pq_error *err);
void ix_free(ix_index *ix);

/* Layered binary search: the chunk (and through it the file) holding global
 * page `page` (< num_pages). */
uint32_t ix_locate(const ix_index *ix, uint64_t page);

/* 0 if the file still has the size and mtime seen at mount; else -1 with a
 * message naming the file. */
int ix_check_file(const ix_index *ix, uint32_t file, pq_error *err);

/* Heap bytes of the index (for memory accounting and index.json). */
uint64_t ix_memory_bytes(const ix_index *ix);

#endif
