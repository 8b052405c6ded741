/* ix_claims.h — what a page header may claim, checked before anything is
 * allocated for the page.
 *
 * A page header is untrusted, and its uncompressed size and value count
 * decide what decoding the page allocates. Each is held to what the page's
 * column chunk declares in the footer (ix_chunk_bounds) and to what the
 * page's own compressed bytes can honestly hold:
 *   - uncompressed size <= the chunk's total_uncompressed_size;
 *   - uncompressed size <= compressed size x IX_MAX_COMPRESSION_RATIO
 *     + IX_RATIO_SLACK_BYTES (a decompression bomb otherwise);
 *   - a data page's value count <= the chunk's num_values.
 * One rule for the whole index: the mount's page pass applies it to every
 * header it walks (ix_chunk_scan.c), and the read path to every header it
 * parses (ix_read.c), which covers the pages the mount sized without seeing
 * their headers (from the page index, or from the persistent index). With
 * it, what one page may allocate is bounded by its chunk's declared size and
 * by the bytes actually on disk, well below the decoder's absolute ceiling
 * (PQ_MAX_PAGE_BYTES, pq_column.h). Pure and thread-safe.
 */
#ifndef IX_CLAIMS_H
#define IX_CLAIMS_H

#include <stdint.h>

#include "pq_error.h"
#include "pq_page.h"

/* Real data stays far below this ratio (runs of one value reach a few
 * hundred); the slack lets a small page of such runs through. */
#define IX_MAX_COMPRESSION_RATIO 1024
#define IX_RATIO_SLACK_BYTES (16u << 20)

/* What the footer declares of a column chunk, as its pages are held to it
 * (kept per chunk in the index and in the persistent index). */
typedef struct ix_chunk_bounds {
    int64_t uncompressed; /* ColumnMetaData.total_uncompressed_size (headers included) */
    int64_t values;       /* ColumnMetaData.num_values: level entries of all its data pages */
} ix_chunk_bounds;

/* 0 if the header's claims fit the chunk, else -1 with a message that says
 * which claim and what it exceeds (the caller adds file and offset). */
int ix_page_claims_check(const pq_page_header *h, const ix_chunk_bounds *chunk,
                         pq_error *err);

#endif
