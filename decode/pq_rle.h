/* pq_rle.h — the RLE / bit-packing hybrid encoding, used for definition and
 * repetition levels, dictionary indices and RLE booleans.
 *
 * Runs are either RLE (a repeated value) or bit-packed groups of 8 values;
 * the decoder checks every run header against the bytes left and never
 * writes more than `count` outputs. Thread-safe.
 */
#ifndef PQ_RLE_H
#define PQ_RLE_H

#include <stddef.h>
#include <stdint.h>

#include "pq_cursor.h"
#include "pq_error.h"

/* Decode exactly `count` values of `bit_width` bits (0..32) from buf[0..len)
 * into out. Fails if the data ends before `count` values. Bit-packed groups
 * may pad past `count`; the padding is ignored. */
int pq_rle_decode(const uint8_t *buf, size_t len, int bit_width, uint32_t count, uint32_t *out,
                  pq_error *err);

/* Incremental decoding of the same runs, for data that arrives in windows
 * (pq_stream.h): each call takes what it needs from a cursor the caller may
 * refill between calls, and hands out up to `max` of the `count` values.
 *
 * A call reads at most one run header, and only when it has handed out
 * nothing yet; it stops early (returning fewer than max, possibly 0 after a
 * zero-length run) when the cursor lacks the bytes of the next group. A call
 * that has handed out nothing and finds the cursor short fails. So a caller
 * that streams must offer at least PQ_RLE_STEP_BYTES bytes (or all that is
 * left of the data) for every call to make progress; a caller with all the
 * data in one buffer just calls until `done == count` (each call consumes a
 * byte or yields a value). Offsets in messages count from the first byte the
 * iterator consumed. */
#define PQ_RLE_STEP_BYTES 42 /* a 10-byte run header and one 32-byte group */

typedef struct pq_rle_iter {
    int bit_width;
    uint32_t count;    /* values in all */
    uint32_t done;     /* values handed out */
    uint32_t run_left; /* values of the current run not yet unpacked (<= count - done) */
    uint32_t value;    /* the value of the current RLE run */
    int packed;        /* the current run is bit-packed */
    uint8_t nbuf, ibuf;/* buf[ibuf..nbuf): unpacked values of a group not yet handed out */
    uint32_t buf[8];
    size_t at;         /* bytes consumed so far */
} pq_rle_iter;

/* bit_width must be 0..32 (checked by pq_rle_iter_read). */
void pq_rle_iter_init(pq_rle_iter *it, int bit_width, uint32_t count);
/* Hand out up to max values into out; returns how many (0..max), or -1. */
int64_t pq_rle_iter_read(pq_rle_iter *it, pq_cursor *c, uint32_t *out, uint32_t max,
                         pq_error *err);

/* For callers that count or skip values rather than take them (a stream
 * resumed at a mark skips a page's levels up to it): whether the next values
 * are those of an RLE run, reading the next run's header first when the
 * iterator stands between runs (a zero-length run is passed). 1 then, with
 * the run's value and how many of its values are left (>= 1); 0 when the
 * next values are bit-packed or all `count` are done; -1 on error. The
 * cursor is the one pq_rle_iter_read would be given. */
int pq_rle_iter_run(pq_rle_iter *it, pq_cursor *c, uint32_t *value, uint32_t *left,
                    pq_error *err);
/* Take n of the current RLE run's values without handing them out: n at most
 * the `left` pq_rle_iter_run gave, with no read since. */
void pq_rle_iter_skip_run(pq_rle_iter *it, uint32_t n);
/* Bits needed to represent max_value (0 for 0). */
int pq_bit_width(uint32_t max_value);

#endif
