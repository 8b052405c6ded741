/* pq_inflate.h — internal to decode/: one page section decompressed as a
 * stream of bytes in a bounded window, for pq_stream.c.
 *
 * The compressed bytes come from the caller's read function (pq_stream.h) in
 * reads of opts->read_size; the decompressed bytes appear in a window of
 * out_size bytes plus the codec's history (the bytes SNAPPY and LZ4 copies
 * may reach back to; the library codecs keep their history themselves). The
 * consumer asks for n contiguous bytes (pq_inflate_ensure), reads them and
 * says how many it used (pq_inflate_consume); bytes it has not consumed stay
 * put until it does. A request wider than the window grows it up to the
 * value_need given at open; the window never grows further.
 *
 * Memory: pq_inflate_bound is everything an inflate holds, its own struct
 * included; the library codecs allocate through a counting allocator that
 * refuses beyond their share. opts must have its defaults filled in (see
 * pq_stream.c). Not thread-safe per inflate.
 *
 * Implemented by pq_inflate.c (the window) and one file per codec family;
 * pq_inflate_own.h says which.
 */
#ifndef PQ_INFLATE_H
#define PQ_INFLATE_H

#include <stddef.h>
#include <stdint.h>

#include "pq_error.h"
#include "pq_stream.h"

typedef struct pq_inflate pq_inflate;

/* 0 when the codec streams, else -1 with a "not streamable" message. */
int pq_inflate_supported(int codec, pq_error *err);

/* Bytes an inflate of clen compressed / ulen decompressed bytes may hold,
 * when the consumer asks for at most value_need contiguous bytes at once. */
size_t pq_inflate_bound(int codec, uint64_t clen, uint64_t ulen, size_t value_need,
                        const pq_stream_opts *opts);

pq_inflate *pq_inflate_open(int codec, uint64_t clen, uint64_t ulen, size_t value_need,
                            const pq_stream_opts *opts, pq_stream_read_fn read, void *ctx,
                            pq_error *err);

/* Make at least need (<= value_need) contiguous bytes available at *p and
 * return how many are there (>= need), or fewer when the section ends first
 * (0 at its end); -1 on error. */
int64_t pq_inflate_ensure(pq_inflate *f, size_t need, const uint8_t **p, pq_error *err);

/* The consumer used n bytes of what ensure made available. */
void pq_inflate_consume(pq_inflate *f, size_t n);

/* Decompressed bytes consumed so far (for messages). */
uint64_t pq_inflate_offset(const pq_inflate *f);

/* Decompress and drop what is left, then check that the section was exactly
 * ulen bytes from exactly clen compressed bytes. */
int pq_inflate_finish(pq_inflate *f, pq_error *err);

/* A copy of f at its current position, reading on through ctx (with f's
 * read function): the two go on independently. *p (p may be NULL), a
 * pointer into f's window as ensure gave it, is moved to the same byte of
 * the copy's. Our own codecs and UNCOMPRESSED only: a library decoder's
 * state is opaque, and the copy fails with "not forkable". NULL on failure
 * (err set). */
pq_inflate *pq_inflate_fork(const pq_inflate *f, void *ctx, const uint8_t **p, pq_error *err);

/* Restart points. A SNAPPY section compressed in independent blocks of 64
 * KiB of output, as the reference compressor does (and every writer
 * checked: DuckDB, parquet-cpp, polars, fastparquet, parquet-mr, Impala),
 * decompresses from the start of any block with no history: an element
 * begins there and no copy reaches before it. pq_inflate_restart gives the
 * latest such point this inflate passed at or before decompressed offset
 * `at` (*u <= at), with *c the compressed offset of its element within the
 * section; for UNCOMPRESSED every offset is one. -1 when none is known
 * (other codecs; a point older than the last PQ_INFLATE_RESTARTS).
 * pq_inflate_open_at opens an inflate there: read delivers the section's
 * compressed bytes from c on. The format promises no blocks: a copy that
 * reaches before u fails with "before the restart point" and "not
 * resumable" (pq_stream_resume_instead). */
#define PQ_INFLATE_RESTARTS 32u
int pq_inflate_restart(const pq_inflate *f, uint64_t at, uint64_t *c, uint64_t *u);
pq_inflate *pq_inflate_open_at(int codec, uint64_t clen, uint64_t ulen, size_t value_need,
                               const pq_stream_opts *opts, pq_stream_read_fn read, void *ctx,
                               uint64_t c, uint64_t u, pq_error *err);
size_t pq_inflate_bytes(const pq_inflate *f);
size_t pq_inflate_bytes_max(const pq_inflate *f);
void pq_inflate_close(pq_inflate *f);

#endif
