/* ix_window.h — a column chunk read sequentially through one buffer.
 *
 * The mount's readers of whole column chunks (the page pass,
 * ix_chunk_scan.c; the rows of the columns beside the paged one,
 * ix_chunk_rows.c) walk a chunk's pages front to back. A window holds the
 * bytes of one read of at least `min_read` bytes (clipped to the chunk), so
 * that small pages cost one read per window and a page larger than it one
 * read of its own. Reads never leave [begin, end): callers check a range
 * against `end` before asking for it.
 *
 * Under a gate (ix_gate.h) the buffer's capacity plus `extra` (a decoded
 * dictionary the caller charges with it) is charged before it is allocated,
 * and the reads wait on storage without a CPU token; gate NULL: no charge.
 * Not thread-safe: one window per walker.
 */
#ifndef IX_WINDOW_H
#define IX_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "ix_internal.h"
#include "pq_page.h"

typedef struct ix_window {
    const ix_source *src;
    uint64_t begin, end;  /* the chunk's byte range in the file */
    size_t min_read;      /* the least one read asks for (the chunk's end allowing) */
    uint64_t base;        /* file offset of buf[0] */
    size_t len;           /* bytes held from base */
    uint8_t *buf;
    size_t cap;
    uint64_t *bytes_read; /* grows by every byte read */
    ix_gate *gate;
    uint64_t extra;       /* charged with cap: set by the caller, taken at the next growth */
    uint64_t charged;     /* == cap + extra under a gate */
} ix_window;

/* A window on [begin, end) of src. */
void ix_window_init(ix_window *w, const ix_source *src, uint64_t begin, uint64_t end,
                    size_t min_read, uint64_t *bytes_read, ix_gate *gate);

/* Hand the window a buffer (malloc'ed; the window frees it) that holds
 * [begin, begin + len) already: no read is needed for that range. */
void ix_window_adopt(ix_window *w, uint8_t *buf, size_t len);

/* Make [off, off + len) available and return it (valid until the next
 * call); NULL with a message naming the file when the read fails or memory
 * is short. off + len must not pass w->end. */
const uint8_t *ix_window_get(ix_window *w, uint64_t off, size_t len, pq_error *err);

/* Whether [off, off + len) is held now (no read needed). */
int ix_window_holds(const ix_window *w, uint64_t off, uint64_t len);

/* Parse the page header at off: a short read first, then a longer one for
 * a header with long statistics. */
int ix_window_header(ix_window *w, uint64_t off, pq_page_header *h, pq_error *err);

/* A page body read in order for a pq_stream (pq_stream_read_fn): from the
 * window where it holds the bytes, straight from the file elsewhere, at
 * most `step` bytes a call; taking on the way the CRC-32 of the header and
 * body (crc: ix_page_crc's) and, when `check`, of the body alone (the
 * Parquet page CRC). */
typedef struct ix_body {
    ix_window *w;
    uint64_t pos, end; /* file offsets: next byte, end of the body */
    size_t step;
    uint32_t crc;
    int check;
    uint32_t body_crc;
} ix_body;

/* The body of the page at off whose header is h (its header bytes are
 * read through w for crc). Fails when the header cannot be read. */
int ix_body_init(ix_body *r, ix_window *w, const pq_page_header *h, uint64_t off, size_t step,
                 int check, pq_error *err);
/* pq_stream_read_fn over an ix_body (ctx). */
int ix_body_read(void *ctx, uint8_t *buf, size_t want, size_t *got, pq_error *err);
/* The Parquet page CRC of the body, once every byte of it went through r:
 * pq_page_check_crc's rule and message. */
int ix_body_check_crc(const pq_page_header *h, const ix_body *r, pq_error *err);
/* A page that failed to decode: read the rest of its body, so that a body
 * that does not match its CRC is reported as such (a corrupt page fails
 * its decode somewhere; the CRC says why): err is replaced then. */
void ix_body_blame_crc(const pq_page_header *h, ix_body *r, pq_error *err);

/* Free the buffer and give its charge back (the caller frees what `extra`
 * stood for first). */
void ix_window_free(ix_window *w);

#endif
