/* ix_internal.h — the steps of ix_build, shared between index/ files only. */
#ifndef IX_INTERNAL_H
#define IX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "ix_cache.h"
#include "ix_gate.h"
#include "ix_index.h"
#include "ix_store.h" /* ix_store_read: every read of a source */
#include "pq_nest.h"

/* ix_source.c: one file being indexed: open, and either recognised by the
 * persistent index or its footer parsed. */
typedef struct ix_source {
    char *path;
    const char *name;   /* points into path: relative to the dataset root */
    ix_store *store;    /* where it lives (the sources' store) */
    int fd;             /* its handle in the store (a descriptor for POSIX); -1 when not open */
    struct stat st;
    const ix_cache_file *cached; /* the file's entry in the persistent index, or NULL */
    int has_footer;     /* meta and leaves are parsed */
    pq_file_meta meta;
    pq_leaf *leaves;
    int num_leaves;
    int column;         /* chosen leaf, once resolved */
    uint32_t footer_len;/* FileMetaData bytes ... */
    uint32_t footer_crc;/* ... and their CRC-32: part of the file's cache key */
} ix_source;

/* Open the object in its store and take its identity (ix_store.h). Errors
 * are prefixed with the name. */
int ix_source_open(ix_source *s, pq_error *err);
/* 1 if the object open as handle in store, of size bytes, still ends with
 * a footer of footer_len bytes whose CRC-32 is footer_crc (one read of
 * footer_len + 8 bytes), else 0. Used at mount (the persistent index) and
 * when a source's ctime moves (ix_check_file). */
int ix_footer_is(ix_store *store, int handle, const char *name, uint64_t size,
                 uint32_t footer_len, uint32_t footer_crc);
/* Read and parse the footer and the schema's leaves (sets has_footer,
 * footer_len, footer_crc). The parse holds a CPU token of `gate`, and a
 * footer too large for one read of the file's end is charged to its bytes
 * (ix_gate.h; NULL: no limit). Errors are prefixed with the name. */
int ix_source_read_footer(ix_source *s, ix_gate *gate, pq_error *err);
/* Free metadata and leaves; close the handle if still open. */
void ix_source_release(ix_source *s);

/* ix_sources.c: the dataset's files. */
typedef struct ix_sources {
    ix_store *store;    /* owned; handed to the index by ix_build */
    ix_source *files;   /* in path order */
    size_t count;
} ix_sources;

/* Open the dataset's store, list its objects, open the first and parse its
 * footer (it resolves the column). On failure ix_sources_free still frees
 * what was made. */
int ix_sources_list(ix_sources *ss, const char *dataset, const ix_store_options *so,
                    pq_error *err);
/* Open every file, on threads growing up to io_depth while they wait on
 * storage (ix_parallel_for_growing), each footer parsed holding a CPU token
 * of `gate` (ix_gate.h; NULL: no limit). A file the persistent index recognises
 * (same name, size, mtime and footer; under rowid the same first row) gets
 * its entry in `cached` and no footer parse; every other one has its footer
 * parsed and `column` found in it, under the same nesting `field`. */
int ix_sources_load(ix_sources *ss, const ix_cache *cache, const pq_leaf *column,
                    const pq_nest *field, int rowid,
                    int threads, int io_depth, ix_gate *gate, pq_error *err);
/* Rows of a loaded file, from its cache entry or its footer. */
uint64_t ix_source_rows(const ix_source *s);
/* Release every file (closing the handles still owned) and the store, if
 * still owned. */
void ix_sources_free(ix_sources *ss);

/* ix_column.c: choose the leaf of the first file (want == NULL: the only
 * string column) and the field it is served as (*nest, pq_nest_of: the
 * caller owns it), then find the same leaf in every other file.
 * ix_resolve_column returns 0 for a field of that one leaf, 1 for a field of
 * several leaves (a struct of several fields, a list of them, a map: *nest
 * is its first leaf's, first->column that leaf), -1 with a message. */
int ix_resolve_column(ix_source *first, const char *want, pq_nest *nest, pq_error *err);
/* The leaves of field `key` in s, in schema order: their indices and
 * nestings below the field (*leaves, *nests: malloc'ed, the caller frees
 * the nests and both arrays, also on failure; *count of them). */
int ix_field_nests(const ix_source *s, const char *key, int **leaves, pq_nest **nests,
                   uint32_t *count, pq_error *err);
int ix_match_column(ix_source *s, const pq_leaf *column, const pq_nest *field, pq_error *err);
/* The same search without choosing: *leaf is the index of the leaf in s. */
int ix_find_column(const ix_source *s, const pq_leaf *column, const pq_nest *field, int *leaf,
                   pq_error *err);

/* ix_chunk_scan.c: the page pass over one column chunk. It reads the chunk
 * through a window of this many bytes (fewer for a smaller chunk). */
#define IX_SCAN_WINDOW_BYTES (8u << 20)
typedef struct ix_scan {
    /* in */
    const ix_source *src;
    uint32_t row_group;
    const pq_column_meta *meta;
    pq_column_desc desc;
    const ix_framing *framing;
    int verify_crc;
    uint64_t first_row;  /* global row of the chunk's first row (for rowid sizes) */
    uint64_t num_rows;   /* rows of the row group */
    uint64_t stream_page_bytes; /* ix_options.stream_page_bytes */
    uint64_t mem;        /* ix_options.mem: pages decoded whole and records (ix_claims.h) */
    ix_gate *gate;       /* the caller holds one of its CPU tokens (ix_gate.h); NULL: none */
    /* out */
    ix_page *pages;      /* page first_row values are global */
    uint32_t num_pages;
    int64_t dict_offset;
    uint32_t dict_length;
    uint32_t dict_crc;   /* ix_page_crc of the dictionary page, 0 if not read */
    ix_dict_claims dict_claims; /* its header's; all 0 if not read */
    int has_offset_index;
    int from_metadata;   /* pages sized from the page index alone, none decoded */
    uint32_t pages_sized_by_header; /* pages sized from their header, not decoded */
    uint32_t pages_streamed; /* pages decoded entry by entry (pq_stream.h), not whole */
    int cut;             /* the entries of many records are cut into units (ix_index.h) */
    uint64_t *unit_bytes;/* cut: the units' framed bytes, in entry order (malloc'ed) */
    ix_unit_mark *unit_marks; /* num_units entries beside them, or NULL: none made */
    uint64_t num_units;
    uint64_t bytes_read;
} ix_scan;

/* Locate every data page of the chunk and decode it once to count records
 * and framed bytes. A page whose whole decode would take more than
 * stream_page_bytes (about its compressed and uncompressed size and 40
 * bytes per level entry) is streamed instead, and so is every later page of
 * the chunk; the result is the same, except that a page entry spanning
 * several streamed pages gets crc 0 (learned at its first read). Streaming
 * holds at most a few tens of MiB (pq_stream's bound, capped, and two rows
 * of at most 4 MiB each); a page that cannot stream within that is decoded
 * whole, unless a row longer than that continues over streamed pages: then
 * the scan fails, naming the page. On success scan->pages is malloc'ed
 * (caller frees). */
int ix_scan_chunk(ix_scan *scan, pq_error *err);

#endif
