/* ix_chunks_ahead.h — the column chunks a loader reads next, read ahead
 * many at once.
 *
 * The loads of the columns beside the paged one (ix_others.c) go through
 * every file's chunks in order, one reader at a time (ix_chunk_rows.h).
 * Over storage that answers in milliseconds, one read at a time costs a
 * round trip per file: 10 s for 200 files at 50 ms, where the page pass of
 * the paged column takes 0.2 s. So the loader lists the chunks of its next
 * files and has them read here at once, on threads that grow while the
 * reads wait (ix_parallel_for_growing), then decodes them in order from
 * memory.
 *
 * What is read: in list order, every chunk of at most
 * IX_CHUNK_ROWS_READ_BYTES (one window of a reader: a larger one is read by
 * its reader, a window at a time) while the sum read stays within `budget`;
 * the rest are left to their readers. Not thread-safe per list.
 */
#ifndef IX_CHUNKS_AHEAD_H
#define IX_CHUNKS_AHEAD_H

#include <stddef.h>
#include <stdint.h>

#include "ix_internal.h"

typedef struct ix_chunk_ref {
    const ix_source *s; /* its footer parsed */
    int leaf;
    int32_t g;
    uint8_t *bytes;     /* the chunk's range (ix_chunk_range), read ahead; NULL: not read.
                         * The caller's: handed to ix_chunk_rows_open, or freed */
} ix_chunk_ref;

/* Read the chunks of refs[0..n) that the rule above takes, on `threads`
 * growing to io_depth threads; *bytes_read grows by what is read. On
 * failure (the error of the first chunk in list order that failed, naming
 * its file) the bytes read so far stay in refs for the caller to free. */
int ix_chunks_read_ahead(ix_chunk_ref *refs, size_t n, uint64_t budget, int threads,
                         int io_depth, uint64_t *bytes_read, pq_error *err);

/* Free every refs[i].bytes and set it to NULL. */
void ix_chunks_free(ix_chunk_ref *refs, size_t n);

#endif
