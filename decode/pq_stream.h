/* pq_stream.h — decoding one data page in bounded memory, entry by entry.
 *
 * pq_page_decode (pq_column.h) holds a whole page: its decompressed body, a
 * 16-byte slice per value and the level arrays, about 400 MB for a 125 MB
 * page of 15.6 M INT64 list elements as DuckDB writes them. A pq_stream
 * decodes the same page while holding a few windows: the compressed body is
 * pulled from the caller in reads of opts.read_size bytes, decompressed into
 * a window of opts.out_size bytes (plus the codec's history), and handed out
 * one level entry at a time: {rep, def, and the value when def == max_def}.
 * Row assembly (rep == 0 starts a row) is the caller's business.
 *
 * Memory contract. pq_stream_memory_needed(h, col, opts) is computed from
 * the page header alone; the stream never holds more (every allocation,
 * including the codec library's, goes through a counting allocator that
 * refuses beyond its share of that bound), so a caller charges that bound
 * to its budget before pq_stream_open and may release down to
 * pq_stream_bytes_max(s) once open (the levels are then known), and
 * pq_stream_bytes(s) is what is held right now. The bound is
 *
 *   sizeof(pq_stream) + in + out_max + codec + levels, where
 *   in      = opts.read_size (0 for UNCOMPRESSED), at most the section
 *   hist    = SNAPPY: min(snappy_window, U); LZ4, LZ4_RAW: min(64 KiB, U); else 0
 *   out_max = min(hist + out_size, U) grown, for one value wider than that,
 *             to hist + min(value_max + 4, U) (BYTE_ARRAY; fixed width: width)
 *   codec   = GZIP 64 KiB; ZSTD ZSTD_estimateDStreamSize(2^floor(log2 window_max))
 *             + 4 KiB; BROTLI 1.5 ring + 1 MiB (Huffman tables) + 64 KiB, where
 *             ring = min(window_max, the power of two >= max(U, 1 KiB))
 *   levels  = v2: the header's level lengths; v1: min(levels_max, U)
 *
 * with U the decompressed bytes of the values section (v1: the whole body).
 * At the defaults below, a 125 MB ZSTD page of INT64 list elements is bounded
 * by about 2.6 MiB plus its levels (7.1 MiB before open, with levels_max; 3.0
 * MiB after: test_stream.c measures 1.4 MiB held); a 50 MB SNAPPY page of
 * strings by 0.4 MiB of windows plus value_max (one value may be that wide)
 * plus its levels: callers that charge the bound choose value_max.
 *
 * What streams (anything else fails in pq_stream_open with a message that
 * says "not streamable", and the caller decodes the page whole instead):
 *   codecs    UNCOMPRESSED; SNAPPY (our decoder, keeping snappy_window bytes
 *             of history: the reference compressor copies only within 64 KiB
 *             blocks; a copy reaching further back fails with "beyond the
 *             stream's window"); GZIP (zlib, gzip or zlib headers, members
 *             back to back); ZSTD (frames with a window over window_max are
 *             refused); BROTLI (streams whose window exceeds window_max are
 *             refused, large-window streams too); LZ4_RAW (our block
 *             decoder, 64 KiB history); LZ4 with the Hadoop framing (raw
 *             blocks as old parquet-cpp wrote them are detected too; LZ4
 *             frames are not streamable).
 *   levels    RLE (v1 and v2); the deprecated BIT_PACKED levels are not.
 *   values    PLAIN for every physical type; PLAIN_DICTIONARY and
 *             RLE_DICTIONARY against the chunk's pq_dictionary.
 *
 * Untrusted input: every length is checked; the values must be exactly those
 * the levels call for, and at the end the body must have decompressed to
 * exactly the header's size from exactly compressed_size bytes. A truncated,
 * overlong or corrupt body fails with a message (no crash, no partial result
 * passed off as the page). Not thread-safe per stream; distinct streams may
 * run on distinct threads (a pq_dictionary may be shared read-only).
 */
#ifndef PQ_STREAM_H
#define PQ_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "pq_column.h"
#include "pq_error.h"
#include "pq_page.h"

/* Pull the next bytes of the page body (the compressed_size bytes after the
 * header, in order). Fill buf with up to `want` (>= 1) bytes and set *got;
 * fewer is fine, *got == 0 means the body ends here (the stream reports it
 * truncated). Return 0, or -1 with a message in err (e.g. a failed pread). The
 * stream never asks for more than the body's compressed_size in all. */
typedef int (*pq_stream_read_fn)(void *ctx, uint8_t *buf, size_t want, size_t *got,
                                 pq_error *err);

/* Limits; a 0 field takes the default. */
typedef struct pq_stream_opts {
    size_t read_size;     /* compressed bytes asked of read at once; default 64 KiB, min 64 */
    size_t out_size;      /* decompressed window beyond the history; default 256 KiB, min 64 */
    size_t snappy_window; /* SNAPPY history kept; default 64 KiB */
    size_t window_max;    /* largest ZSTD / BROTLI window accepted; default 2 MiB */
    size_t levels_max;    /* v1: most encoded level bytes held; default 4 MiB */
    size_t value_max;     /* largest BYTE_ARRAY value; default 16 MiB */
    size_t cap;           /* open fails when the bound exceeds this; default no cap */
} pq_stream_opts;

#define PQ_STREAM_READ_SIZE ((size_t)64 << 10)
#define PQ_STREAM_OUT_SIZE ((size_t)256 << 10)
#define PQ_STREAM_SNAPPY_WINDOW ((size_t)64 << 10)
#define PQ_STREAM_WINDOW_MAX ((size_t)2 << 20)
#define PQ_STREAM_LEVELS_MAX ((size_t)4 << 20)
#define PQ_STREAM_VALUE_MAX ((size_t)16 << 20)

typedef struct pq_stream pq_stream;

/* One level entry. value is set when has_value (def == max_def) and stays
 * valid until the next pq_stream_next / pq_stream_skip / pq_stream_close; it
 * points into the stream's window or into the dictionary. BOOLEAN values are
 * one byte 0 or 1; fixed-width types their PLAIN bytes (see pq_column.h). */
typedef struct pq_stream_entry {
    uint16_t rep;
    uint16_t def;
    int has_value;
    pq_bytes value;
} pq_stream_entry;

/* Upper bound, in bytes, of everything a stream over this page will hold
 * (formula above). 0 when the page cannot stream (unsupported codec or
 * encoding, sizes out of range); pq_stream_open then says why. Pure. */
size_t pq_stream_memory_needed(const pq_page_header *h, const pq_column_desc *col,
                               const pq_stream_opts *opts);

/* Open a stream over a data page (v1 or v2) whose header h was parsed with
 * pq_page_header_parse. col, h and dict must outlive the stream (dict: when
 * the page is dictionary-encoded; else may be NULL); opts may be NULL. Reads
 * the level bytes (v2: raw from the body; v1: from the decompressed body) and
 * checks them. On failure returns NULL with the reason in err, having
 * released everything; a message containing "not streamable" or "beyond the
 * stream's window" means the page is valid as far as is known and can be
 * decoded whole. */
pq_stream *pq_stream_open(const pq_column_desc *col, const pq_page_header *h,
                          const pq_dictionary *dict, const pq_stream_opts *opts,
                          pq_stream_read_fn read, void *ctx, pq_error *err);

/* Whether a failure of pq_stream_open or pq_stream_next (its message in
 * err) leaves the page valid as far as is known, so that decoding it whole
 * serves instead: "not streamable", "beyond the stream's window". */
int pq_stream_whole_instead(const pq_error *err);

/* The next entry: returns 1 and fills *e, 0 at the end (the body then
 * checked to the last byte), -1 on bad input or a read failure; after -1 or 0
 * every later call returns the same. */
int pq_stream_next(pq_stream *s, pq_stream_entry *e, pq_error *err);

/* Skip up to n entries (fewer at the end); returns how many were skipped, or
 * -1. The values are still decoded: they are where the next ones begin. */
int64_t pq_stream_skip(pq_stream *s, uint64_t n, pq_error *err);

/* A copy of s at its current position, for a caller that wants to come
 * back to this place of the page later while s goes on: the copy reads
 * the rest of the body through read(ctx, ...) (s's read function, with
 * the caller's new ctx), parses no header again (h: the page's header as
 * the copy's caller keeps it, equal to s's) and holds what s holds
 * (pq_stream_bytes). last (may be NULL) is the entry s handed out last: its
 * value is moved to the copy's window. Forks only codecs whose state is
 * ours (UNCOMPRESSED, SNAPPY, LZ4, LZ4_RAW); otherwise, or for a stream
 * that ended or failed, NULL with "not forkable" in err (out of memory:
 * NULL, err set). */
pq_stream *pq_stream_fork(const pq_stream *s, const pq_page_header *h, void *ctx,
                          pq_stream_entry *last, pq_error *err);

/* Marks: coming back to a place of the page later for the price of a few
 * numbers, where a fork (above) holds the stream's windows. A mark is taken
 * between entries; a stream resumed from it reads the page's level bytes
 * again (v1: the first bytes of the body), then only the body from the
 * values' restart point at or before the mark (pq_inflate.h: the start of
 * the 64 KiB block of decompressed values the mark is in; any byte for
 * UNCOMPRESSED), and hands out the same entries the marked stream would
 * have. Only PLAIN values of a type other than BOOLEAN, in UNCOMPRESSED or
 * SNAPPY sections, are marked (pq_stream_mark returns 0 otherwise, and
 * when the restart point left the stream's memory). A SNAPPY body whose
 * copies cross its blocks (the format allows it; no writer checked does)
 * fails in the resumed stream with "not resumable": its caller streams the
 * page from its start instead (pq_stream_resume_instead). */
typedef struct pq_stream_mark {
    uint32_t pos;        /* entries handed out before the mark */
    uint32_t seen;       /* values among them */
    uint32_t present;    /* values in the page (its def levels counted at open) */
    uint64_t value_at;   /* decompressed offset of the next value in the section */
    uint64_t restart_c;  /* the restart point: compressed offset in the section */
    uint64_t restart_u;  /* and decompressed offset, <= value_at */
    uint64_t body_at;    /* the body byte a stream resumed here reads its values from
                          * (v2: the levels before the section, then restart_c) */
} pq_stream_mark;
/* 1 and *m set when s can be marked where it stands, else 0. */
int pq_stream_mark_here(const pq_stream *s, pq_stream_mark *m);
/* Move the caller's reader to body byte `offset` (from the body's start, v2
 * levels included): its next read delivers the bytes from there. */
typedef int (*pq_stream_seek_fn)(void *ctx, uint64_t offset, pq_error *err);
/* A stream over the page of pq_stream_open's arguments, positioned at mark
 * m: read delivers the body from its start; the stream reads the level
 * bytes, calls seek once, and reads on from there. Holds no more than
 * pq_stream_open's stream (pq_stream_memory_needed). NULL with err set on
 * failure (a message with "not resumable": stream the page from its start
 * instead). */
pq_stream *pq_stream_resume(const pq_column_desc *col, const pq_page_header *h,
                            const pq_dictionary *dict, const pq_stream_opts *opts,
                            pq_stream_read_fn read, pq_stream_seek_fn seek, void *ctx,
                            const pq_stream_mark *m, pq_error *err);
/* Whether a failure (its message in err) of a resumed stream leaves the
 * page valid as far as is known, so that streaming it from its start
 * serves instead. */
int pq_stream_resume_instead(const pq_error *err);
/* Values the page's definition levels call for (its entries that are not
 * null), counted when it opened. */
uint32_t pq_stream_present(const pq_stream *s);
/* Entries of the page that start a row (repetition level 0; every entry of
 * a column that does not repeat) defined at min_def or deeper (0: every
 * row) into *rows, from the levels held since open, whatever the stream's
 * position: a walk over them. -1 when they are malformed (err set). */
int pq_stream_rows_starting(const pq_stream *s, uint16_t min_def, uint32_t *rows,
                            pq_error *err);
/* Entries handed out or skipped so far, and in all (h->num_values). */
uint32_t pq_stream_position(const pq_stream *s);
uint32_t pq_stream_entries(const pq_stream *s);

/* Bytes held now, and the most the stream can hold from now on (<= the
 * pq_stream_memory_needed of its page; tighter once the levels are known). */
size_t pq_stream_bytes(const pq_stream *s);
size_t pq_stream_bytes_max(const pq_stream *s);

/* Release everything. NULL is fine. */
void pq_stream_close(pq_stream *s);

#endif
