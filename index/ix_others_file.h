/* ix_others_file.h — the values of the columns beside the paged one
 * (ix_others.h), framed once and served from a file instead of memory.
 *
 * Per position p that has values (every column but the paged one's single
 * leaf), row r's value is bytes_p[ends_p[r - 1] .. ends_p[r]) (from 0 for
 * r == 0): the same content ix_others held in memory before, written once.
 * Values are read with pread, through a small window per framing thread
 * (ix_others_window, below) or straight into the caller's sink, so what
 * the process holds of them is the record being framed, already charged,
 * and the windows (invariant 4: nothing of this file stays resident
 * otherwise, whatever is read; mmap was not chosen because fault-around
 * maps 64 KiB around each touched value and mapped pages count in RSS
 * until released).
 *
 * Where it lives: beside the persistent index's cache file ("<cache
 * file>.others"), named by the same key, so that a re-mount of unchanged
 * files reads no footer and no column of them; with cache=none, or where
 * the cache directory cannot take it, an unlinked temporary file in
 * $TMPDIR (else /tmp) that disappears with the mount.
 *
 * Format (little-endian): a 64-byte header — "YFSOTHR" 0, version u32,
 * positions u32, rows u64, digest u64 (what the values are of: the index's
 * key and every file's identity, ix_build.c), the file's size u64, the
 * CRC-32 of the body u32, flags u32 (IX_OTHERS_FILE_CRC_CHECKED), 12 zero
 * bytes, the CRC-32 of the header's first 60 bytes and the table u32 — then a table of (ends_at, bytes_at,
 * bytes_len) u64 per position (zeros: no values), then the body: the
 * `any` bitmap ((rows / 64 + 1) u64), each position's ends (rows u64),
 * each position's bytes. A file is written under a temporary name, synced
 * and renamed, so concurrent mounts see a whole file or none; every mount
 * that builds one writes the same bytes. An existing file is used only
 * when its size, version, digest, header and body checksums and table are
 * right (the body's CRC costs one sequential read of the file per mount),
 * and, for a mount that checks page CRCs (crc=check), when the pages its
 * values came from had theirs checked too: a file a crc=skip mount built
 * serves crc=skip mounts only (a corrupt page beside the primary would
 * otherwise pass every later mount unchecked); else it is rebuilt. At read time every end is still checked against its
 * column's bytes, and a short read fails: a read never returns other bytes
 * than written.
 *
 * Reads (ix_others_file_value, _read) are thread-safe; building is not.
 */
#ifndef IX_OTHERS_FILE_H
#define IX_OTHERS_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "pq_error.h"

#define IX_OTHERS_FILE_VERSION 1
/* flags: the values were read with every page CRC checked (crc=check); a
 * file of version 1 without flags (written before them) counts as unchecked */
#define IX_OTHERS_FILE_CRC_CHECKED 1u

typedef struct ix_others_span {
    uint64_t ends_at;   /* 0: the position has no values */
    uint64_t bytes_at;
    uint64_t bytes_len;
} ix_others_span;

typedef struct ix_others_file {
    int fd;                 /* -1: none */
    char *path;             /* for messages: the file, or "a temporary file in DIR" */
    uint32_t positions;
    uint64_t rows;
    uint64_t digest;
    int crc_checked;        /* its values' page CRCs were checked (the header's flag) */
    uint64_t size;          /* bytes written so far, then the file's size */
    ix_others_span *spans;  /* per position */
    char *temp;             /* while building under a cache name: the temporary name */
    char *final;            /* ... and the name it is renamed to */
} ix_others_file;

/* Open path if it holds the values of `digest` for exactly the positions
 * has[0..positions) (1: the position has values) and rows, and, when
 * crc_checked, values whose page CRCs were checked; reading its any bitmap
 * into any[0 .. rows / 64 + 1). Returns 0, or -1 with the reason in err
 * (missing, of another digest, torn, corrupt, unchecked): the caller
 * builds it anew. */
int ix_others_file_open(ix_others_file *f, const char *path, uint64_t digest,
                        const uint8_t *has, uint32_t positions, uint64_t rows, int crc_checked,
                        uint64_t *any, pq_error *err);

/* Start a file for positions has[0..positions) and rows, its values to be
 * read with page CRCs checked or not (crc_checked, kept in its header):
 * under a temporary name beside `path`, renamed to it by
 * ix_others_file_seal; path NULL (or its directory not writable): an
 * unlinked temporary file in $TMPDIR or /tmp. Fails only when no file can
 * be made. */
int ix_others_file_create(ix_others_file *f, const char *path, uint64_t digest,
                          const uint8_t *has, uint32_t positions, uint64_t rows,
                          int crc_checked, pq_error *err);

/* Writing one position's values, row by row, in row order. */
typedef struct ix_others_out {
    ix_others_file *f;
    uint32_t p;
    uint8_t *buf;        /* values not written yet */
    size_t used, cap;
    uint64_t *ends;      /* ends not written yet */
    size_t num_ends;
    uint64_t end;        /* the position's bytes so far */
    uint64_t row;        /* next row */
} ix_others_out;

int ix_others_out_begin(ix_others_out *o, ix_others_file *f, uint32_t p, pq_error *err);
/* Room for the next row's value of n bytes (valid until the next call). */
uint8_t *ix_others_out_room(ix_others_out *o, size_t n, pq_error *err);
/* The next row's value: the n bytes just put at ix_others_out_room. */
int ix_others_out_row(ix_others_out *o, size_t n, pq_error *err);
/* Write what is pending; every row must have its value. Frees o's buffers
 * (also after a failure). */
int ix_others_out_end(ix_others_out *o, pq_error *err);
void ix_others_out_drop(ix_others_out *o);

/* Write the any bitmap, the table and the header (with the body's CRC,
 * read back), sync, and give the file its name. A failure to name it
 * leaves it unlinked, still serving this mount. */
int ix_others_file_seal(ix_others_file *f, const uint64_t *any, pq_error *err);

/* A window on the values of runs of consecutive rows, for one thread
 * framing the records of a unit or a page (their rows are consecutive):
 * it reads the ends of IX_OTHERS_WINDOW_ROWS rows of a position in one
 * pread, and IX_OTHERS_WINDOW_BYTES of its values in another, where each
 * record took two preads per position (10M records of id:text: 56 s
 * instead of 4 s an epoch, bench/results/remount_columns.md). It holds
 * about 4.6 KiB a position (ix_others_window_bytes), one per thread framing
 * records, so within invariant 4's 16 MiB beside the bound for up to 64
 * framing threads of 8 positions (2.4 MiB). Not thread-safe. */
#define IX_OTHERS_WINDOW_ROWS 64u
#define IX_OTHERS_WINDOW_BYTES 4096u

typedef struct ix_others_window ix_others_window;

/* A window on f's values; NULL when out of memory (values are then read
 * record by record). */
ix_others_window *ix_others_window_new(const ix_others_file *f);
uint64_t ix_others_window_bytes(uint32_t positions);
void ix_others_window_free(ix_others_window *w);

/* Row `row`'s value of position p: its offset and length in the
 * position's bytes, checked against them, through window w (NULL: none).
 * With `at`, also where its bytes are: in w (valid until w's next use), or
 * NULL when w does not hold them (no window, a value larger than one):
 * read them with ix_others_file_read. Fails naming the file. */
int ix_others_file_value(const ix_others_file *f, ix_others_window *w, uint32_t p,
                         uint64_t row, uint64_t *from, uint64_t *len, const uint8_t **at,
                         pq_error *err);
/* len bytes of position p's values from `from` into to; a short read fails
 * naming the file. */
int ix_others_file_read(const ix_others_file *f, uint32_t p, uint64_t from, uint64_t len,
                        uint8_t *to, pq_error *err);

void ix_others_file_close(ix_others_file *f);

#endif
