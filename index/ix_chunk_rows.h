/* ix_chunk_rows.h — one leaf's column chunk of one row group, read page by
 * page and handed out as runs of whole rows (ix_others.c: the columns beside
 * the paged one, written once into the values file).
 *
 * What a reader holds at once, whatever the chunk's size: the window of
 * compressed bytes (ix_window.h: at least IX_CHUNK_ROWS_READ_BYTES, else
 * one page), the chunk's dictionary, one piece of a data page, and, when a
 * row of a repeated column goes on over pieces, that row's entries copied
 * out of them (ix_row_start, pq_page_values_append). A piece is a data page
 * decoded whole when that takes at most IX_CHUNK_ROWS_WHOLE_BYTES and fits
 * ix_hold_max(mem) (ix_claims.h: judged from its header, before anything is
 * allocated); a larger page (DuckDB writes pages of 16 M list elements,
 * 130 MB decompressed) is streamed (pq_stream.h) and handed out in pieces
 * of about IX_CHUNK_ROWS_PIECE_BYTES. A row going on over pieces is held to
 * ix_hold_max(mem) as it grows. So a reader holds at most about four times
 * ix_hold_max(mem), that is mem= and its slack. Page CRCs are checked
 * where the writer stored them (unless verify_crc is 0). Untrusted bytes
 * fail with a message naming the page's file offset (the caller adds the
 * file, row group and column).
 *
 * A run is a view (ix_entries_view): its levels and values point into the
 * reader and stay valid until the reader's next call. Not thread-safe per
 * object.
 */
#ifndef IX_CHUNK_ROWS_H
#define IX_CHUNK_ROWS_H

#include <stdint.h>

#include "ix_claims.h"
#include "ix_internal.h"
#include "ix_window.h"
#include "pq_column.h"
#include "pq_stream.h"

/* The least one read of the chunk asks for: a few pages of common writers
 * (1 MiB pages) a round trip over slow storage, within invariant 4's slack. */
#define IX_CHUNK_ROWS_READ_BYTES ((size_t)4 << 20)
/* A data page whose whole decode (ix_page_hold_bytes) takes more streams. */
#define IX_CHUNK_ROWS_WHOLE_BYTES ((uint64_t)16 << 20)
/* A streamed page's piece: about this many bytes of values, at most
 * IX_CHUNK_ROWS_PIECE_ENTRIES level entries. */
#define IX_CHUNK_ROWS_PIECE_BYTES ((size_t)1 << 20)
#define IX_CHUNK_ROWS_PIECE_ENTRIES 65536u

typedef struct ix_chunk_rows {
    const char *path;       /* the leaf's path in the schema, for messages */
    pq_column_desc desc;
    ix_chunk_bounds bounds;
    uint64_t mem;           /* the mount's mem= (0: no limit) */
    int verify_crc;
    ix_window w;
    uint64_t next;          /* file offset of the next page header; w.end: none left */
    pq_dictionary dict;
    int has_dict;
    pq_page_values page;    /* the piece being handed out: a page decoded whole, or
                             * entries of the page streaming (values in page.extra) */
    pq_stream *stream;      /* the page streaming, or NULL */
    pq_page_header stream_h;/* ... its header */
    uint64_t stream_off;    /* ... its file offset */
    ix_body body;           /* ... its body, read in order */
    uint32_t streamed;      /* ... its entries handed out in pieces so far */
    uint32_t at;            /* its first entry not handed out: a row's start */
    pq_page_values carry;   /* a row going on over pages: its entries so far (owned) */
    int carry_out;          /* carry was handed out: emptied at the next call */
} ix_chunk_rows;

/* The byte range [*begin, *begin + *len) of leaf `leaf`'s chunk in row
 * group g of s (parsed footer): from its dictionary page, or its first data
 * page; empty for a row group of no rows. Fails when it lies outside the
 * file. */
int ix_chunk_range(const ix_source *s, int leaf, int32_t g, uint64_t *begin, uint64_t *len,
                   pq_error *err);

/* A reader of leaf `leaf` of s in row group g; bytes read are added to
 * *bytes_read. `bytes`, when not NULL, is the chunk's whole range, read
 * ahead (ix_chunks_ahead.h): the reader takes it over (frees it, also on
 * failure) and reads nothing more. Refuses an encrypted chunk, a type
 * other than the schema's, and a chunk outside the file. */
int ix_chunk_rows_open(ix_chunk_rows *cr, const ix_source *s, int leaf, int32_t g,
                       uint64_t mem, int verify_crc, uint64_t *bytes_read, uint8_t *bytes,
                       pq_error *err);

/* The next run of one or more whole rows into *run: 1; 0 when every row of
 * the chunk has been handed out (*run empty); -1 on error. */
int ix_chunk_rows_next(ix_chunk_rows *cr, pq_page_values *run, pq_error *err);

void ix_chunk_rows_close(ix_chunk_rows *cr);

#endif
