/* ix_ahead.h — one byte range of a source file, read in order, its next
 * windows read ahead in parallel.
 *
 * A page stream (ix_stream.h) consumes an entry's bytes in order, a few
 * hundred KiB at a time, decoding between reads. Over storage that answers
 * in milliseconds (a network filesystem, an object store) one read at a time
 * caps a stream at read size / latency (2 MiB per 50 ms: 40 MB/s), and DuckDB's
 * pages of tens of MB are all streamed. An ix_ahead keeps the range's next
 * `windows` windows in flight, each read by a thread of its own, so a
 * stream's bytes arrive at windows x window / latency and its decoding
 * overlaps the waiting.
 *
 * Each window is read with ix_read_checked (the file checked before and
 * after, the delay and retries of ix_pread.h), at the time it is read ahead;
 * its outcome (the bytes, whether the file's ctime moved, or the error) is
 * handed over in order by ix_ahead_read, so the caller sees what reading the
 * range in order would have given it, including the first error, at the
 * place it occurred. A window read ahead and never consumed is not counted
 * in *bytes_read (the ranges are read to their end, or given up on failure).
 *
 * Memory: windows x window bytes of buffers (ix_ahead_bytes), allocated at
 * open. Ranges of a window or less are read directly, without threads.
 * Not thread-safe (one consumer); the threads are joined by ix_ahead_close.
 */
#ifndef IX_AHEAD_H
#define IX_AHEAD_H

#include <stddef.h>
#include <stdint.h>

#include "ix_index.h"
#include "pq_error.h"

/* Windows kept in flight ahead of the consumer, and their default size:
 * four reads of 1 MiB bring 80 MB/s per stream at 50 ms (of 256 KiB, 20). */
#define IX_AHEAD_WINDOWS 4u
#define IX_AHEAD_WINDOW ((size_t)1 << 20)

typedef struct ix_ahead ix_ahead;

/* What an ix_ahead of `window`-byte windows holds at most. */
size_t ix_ahead_bytes(size_t window);

/* Read [offset, offset + length) of `file` ahead, in windows of `window`
 * bytes. NULL when out of memory or when a thread cannot start (err set). */
ix_ahead *ix_ahead_open(const ix_index *ix, uint32_t file, uint64_t offset, uint64_t length,
                        size_t window, pq_error *err);

/* The range's next n bytes (n <= what is left) into dst, as
 * ix_read_checked would have read them: *moved set when the file's ctime
 * moved during the read of any of them, *bytes_read increased by the bytes
 * of each window when it is first consumed. -1 with err naming the file and
 * the offset; every later call fails the same way. */
int ix_ahead_read(ix_ahead *a, void *dst, size_t n, uint64_t *bytes_read, int *moved,
                  pq_error *err);

/* Stop the reads ahead (one in progress finishes), join the threads and
 * free everything. NULL is a no-op. */
void ix_ahead_close(ix_ahead *a);

#endif
