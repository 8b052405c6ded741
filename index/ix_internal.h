/* ix_internal.h — the steps of ix_build, shared between index/ files only. */
#ifndef IX_INTERNAL_H
#define IX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "ix_cache.h"
#include "ix_index.h"

/* ix_files.c: the dataset's Parquet files, sorted by path relative to the
 * root. *paths and every string are owned by the caller (free each, then
 * the array). A dataset that is a regular file yields just that file. */
int ix_list_files(const char *dataset, char ***paths, size_t *count, pq_error *err);

/* ix_source.c: one file being indexed: open, its footer parsed, its leaves. */
typedef struct ix_source {
    char *path;
    const char *name;   /* points into path: relative to the dataset root */
    int fd;             /* -1 when not open */
    struct stat st;
    pq_file_meta meta;
    pq_leaf *leaves;
    int num_leaves;
    int column;         /* chosen leaf, once resolved */
    uint32_t footer_crc;/* CRC-32 of the footer bytes: part of the file's cache key */
} ix_source;

/* Open the file and parse its footer. Errors are prefixed with the name. */
int ix_source_open(ix_source *s, pq_error *err);
/* Free metadata and leaves; close the fd unless keep_fd. */
void ix_source_release(ix_source *s, int keep_fd);

/* ix_column.c: choose the leaf of the first file (want == NULL: the only
 * string column), then find the same leaf in every other file. */
int ix_resolve_column(ix_source *first, const char *want, pq_error *err);
int ix_match_column(ix_source *s, const pq_leaf *column, pq_error *err);

/* ix_chunk_scan.c: the page pass over one column chunk. */
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
    const ix_cache_chunk *cached; /* the pass's result from the persistent index, or NULL */
    /* out */
    ix_page *pages;      /* page first_row values are global */
    uint32_t num_pages;
    int64_t dict_offset;
    uint32_t dict_length;
    int has_offset_index;
    int from_metadata;   /* pages sized from the page index alone, none decoded */
    uint32_t pages_sized_by_header; /* pages sized from their header, not decoded */
    uint64_t bytes_read;
} ix_scan;

/* Locate every data page of the chunk and decode it once to count records
 * and framed bytes. On success scan->pages is malloc'ed (caller frees). */
int ix_scan_chunk(ix_scan *scan, pq_error *err);

/* Read exactly len bytes at offset, or fail with a message naming `name`. */
int ix_pread_exact(int fd, const char *name, void *buf, size_t len, uint64_t offset,
                   pq_error *err);

#endif
