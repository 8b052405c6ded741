/* ix_ahead.h — one byte range of a source file, read in order, its next
 * windows read ahead in parallel.
 *
 * A page stream (ix_stream.h) consumes an entry's bytes in order, a few
 * hundred KiB at a time, decoding between reads. Over storage that answers
 * in milliseconds (a network filesystem, an object store) one read at a time
 * caps a stream at read size / latency (2 MiB per 50 ms: 40 MB/s), and DuckDB's
 * pages of tens of MB are all streamed. An ix_ahead keeps the range's next
 * `depth` windows in flight, each read by a thread of its own, so a
 * stream's bytes arrive at depth x window / latency and its decoding
 * overlaps the waiting. The consumer deepens it (ix_ahead_deepen) when it
 * finds it waits for windows in flight: how deep a stream needs to go
 * depends on how fast it decodes, which differs by shape and by how many
 * streams share the CPUs (8 parts of DuckDB's text at 50 ms: 150 MB/s with
 * 4 windows per stream, 290 with 12).
 *
 * Each window is read with ix_read_checked (the file checked before and
 * after, the delay and retries of ix_pread.h), at the time it is read ahead;
 * its outcome (the bytes, whether the file's ctime moved, or the error) is
 * handed over in order by ix_ahead_read, so the caller sees what reading the
 * range in order would have given it, including the first error, at the
 * place it occurred. A window read ahead and never consumed is not counted
 * in *bytes_read (the ranges are read to their end, or given up on failure).
 *
 * Memory: depth x window bytes of buffers (ix_ahead_bytes), allocated when
 * a window is added. Ranges of a window or less are read directly, without
 * threads.
 * Not thread-safe (one consumer); the threads are joined by ix_ahead_close.
 */
#ifndef IX_AHEAD_H
#define IX_AHEAD_H

#include <stddef.h>
#include <stdint.h>

#include "ix_index.h"
#include "pq_error.h"

/* Windows kept in flight ahead of the consumer at first, at most, and their
 * default size: four reads of 1 MiB bring 80 MB/s per stream at 50 ms (of
 * 256 KiB, 20), sixteen 320. */
#define IX_AHEAD_WINDOWS 4u
#define IX_AHEAD_WINDOWS_MAX 16u
#define IX_AHEAD_WINDOW ((size_t)1 << 20)

typedef struct ix_ahead ix_ahead;

/* What an ix_ahead of `depth` windows of `window` bytes holds at most. */
size_t ix_ahead_bytes(size_t window, unsigned depth);

/* Read [offset, offset + length) of `file` ahead, `depth` windows of
 * `window` bytes at a time (1 <= depth <= IX_AHEAD_WINDOWS_MAX). NULL when
 * out of memory or when a thread cannot start (err set). */
ix_ahead *ix_ahead_open(const ix_index *ix, uint32_t file, uint64_t offset, uint64_t length,
                        size_t window, unsigned depth, pq_error *err);

/* The range's next n bytes (n <= what is left) into dst, as
 * ix_read_checked would have read them: *moved set when the file's ctime
 * moved during the read of any of them, *bytes_read increased by the bytes
 * of each window when it is first consumed, *waited set when a window it
 * needed (but the range's first) was still being read: storage, not the
 * consumer, set the pace.
 * -1 with err naming the file and the offset; every later call fails the
 * same way. */
int ix_ahead_read(ix_ahead *a, void *dst, size_t n, uint64_t *bytes_read, int *moved,
                  int *waited, pq_error *err);

/* Keep one more window in flight from now on. -1 at IX_AHEAD_WINDOWS_MAX,
 * when every window of the range is in flight or read already, or out of
 * memory or threads: the reads go on as they were. */
int ix_ahead_deepen(ix_ahead *a);
/* The range goes on to `length` bytes from its offset (more than it had):
 * windows past the old end are read ahead as the consumer frees slots, in
 * the same windows a range opened that long would have. -1, and nothing
 * changes, when the old range ended in a short window (its bytes are read
 * to that end already, or being read). */
int ix_ahead_extend(ix_ahead *a, uint64_t length);
/* Windows kept in flight. */
unsigned ix_ahead_depth(const ix_ahead *a);

/* Stop the reads ahead (one in progress finishes), join the threads and
 * free everything. Returns the bytes read from storage for windows never
 * consumed (not in any *bytes_read of ix_ahead_read: a consumer that lets
 * its reads ahead go before their end counts them so). NULL: 0. */
uint64_t ix_ahead_close(ix_ahead *a);

#endif
