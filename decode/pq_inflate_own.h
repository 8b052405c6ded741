/* pq_inflate_own.h — private to the pq_inflate*.c files: the state of one
 * inflate (pq_inflate.h) and the interface between its parts.
 *
 *   pq_inflate.c         the window, the compressed input buffer, dispatch
 *                        to a codec, open and close; UNCOMPRESSED
 *   pq_inflate_lib.c     GZIP, ZSTD, BROTLI through their libraries'
 *                        streaming decoders, allocating through a counting
 *                        allocator within codec_budget
 *   pq_inflate_snappy.c  SNAPPY, our resumable decoder
 *   pq_inflate_lz4.c     LZ4_RAW and LZ4 (Hadoop framing), our resumable
 *                        decoder
 *
 * The window is out[0..out_cap): the consumer reads out[rd..wr), a codec
 * writes at wr. Our own decoders may copy from up to hist bytes before the
 * byte they write: pq_inflate.c keeps those bytes in the window when it
 * slides. The compressed input is in[in_rd..in_wr); in_left bytes of the
 * body are still with the caller's read function. Every function that can
 * fail returns -1 with a message in err (pq_error_set), else >= 0.
 */
#ifndef PQ_INFLATE_OWN_H
#define PQ_INFLATE_OWN_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <brotli/decode.h>
#include <zlib.h>
#include <zstd.h>

#include "pq_inflate.h"
#include "pq_meta.h" /* PQ_SNAPPY ... */

struct pq_inflate {
    int codec;               /* PQ_LZ4 means the Hadoop framing */
    pq_stream_read_fn read;
    void *ctx;
    uint64_t clen, ulen;
    uint64_t in_left;        /* compressed bytes not yet read */
    uint64_t out_left;       /* decompressed bytes not yet produced */
    uint64_t dropped;        /* bytes slid out of the window */
    uint8_t *in;
    size_t in_cap, in_rd, in_wr;
    uint8_t *out;
    size_t out_cap, out_max, hist, rd, wr;
    size_t codec_bytes, codec_budget; /* counted allocations of the library codecs */
    size_t window_limit;     /* ZSTD: largest frame window accepted */
    int ended;               /* the library codec reported the end of its stream */
    /* Restart points (pq_inflate.h): the decompressed offset this inflate
     * started at, before which no copy may reach (0 unless opened with
     * pq_inflate_open_at), and a ring of the latest SNAPPY elements that
     * begin a block of PQ_SNAPPY_BLOCK output bytes, as section offsets. */
    uint64_t base;
    uint64_t rs_c[PQ_INFLATE_RESTARTS], rs_u[PQ_INFLATE_RESTARTS];
    unsigned rs_next, rs_count;
    union {
        z_stream z;
        ZSTD_DStream *zs;
        BrotliDecoderState *br;
        struct {             /* SNAPPY: what is left of the current element */
            uint64_t lit, copy, off;
        } sn;
        struct {             /* LZ4, LZ4_RAW */
            int state;         /* see pq_inflate_lz4.c */
            uint8_t token;
            uint64_t blk_in;   /* compressed bytes left in the current block */
            uint64_t blk_out;  /* bytes the current block produced (copies stay inside) */
            uint64_t frame;    /* Hadoop: bytes left in the current outer block */
            uint64_t lit, match, off;
        } lz;
    } u;
};

static inline size_t pq_inflate_min(uint64_t a, size_t b)
{
    return a < b ? (size_t)a : b;
}

/* The block size of the reference SNAPPY compressor, which compresses its
 * input in blocks of this many bytes, each on its own. */
#define PQ_SNAPPY_BLOCK ((uint64_t)64 << 10)

/* A SNAPPY element whose tag is at in[tag] starts at output offset `at`:
 * at a block's start it is a restart point. Inline: once per element. */
static inline void pq_inflate_note_restart(pq_inflate *f, uint64_t at, size_t tag)
{
    if (at % PQ_SNAPPY_BLOCK != 0)
        return;
    unsigned last = (f->rs_next + PQ_INFLATE_RESTARTS - 1) % PQ_INFLATE_RESTARTS;
    if (f->rs_count > 0 && f->rs_u[last] == at)
        return; /* the fast path gave the element back to element() */
    f->rs_c[f->rs_next] = f->clen - f->in_left - (f->in_wr - tag);
    f->rs_u[f->rs_next] = at;
    f->rs_next = (f->rs_next + 1) % PQ_INFLATE_RESTARTS;
    if (f->rs_count < PQ_INFLATE_RESTARTS)
        f->rs_count++;
}

/* ---- pq_inflate.c: the compressed input ---- */

/* Compressed bytes not yet handed to the codec. */
uint64_t pq_inflate_unread(const pq_inflate *f);
/* Read more compressed bytes behind the unread ones: how many, 0 when the
 * body has none left. */
int64_t pq_inflate_refill(pq_inflate *f, pq_error *err);
/* pq_inflate_need's refill loop. */
int pq_inflate_need_more(pq_inflate *f, size_t n, pq_error *err);

/* The three below run once or more per SNAPPY or LZ4 element: inline, with
 * the common case first. */

/* At least n (<= in_cap) unread bytes at in + in_rd; a body that ends first
 * is truncated. */
static inline int pq_inflate_need(pq_inflate *f, size_t n, pq_error *err)
{
    return f->in_wr - f->in_rd >= n ? 0 : pq_inflate_need_more(f, n, err);
}

/* Copy 1..n (n >= 1) literal bytes from the input to dst (as many as are
 * buffered, at least one); returns how many. */
static inline int64_t pq_inflate_literal(pq_inflate *f, uint8_t *dst, uint64_t n, pq_error *err)
{
    assert(n > 0);
    if (pq_inflate_need(f, 1, err) < 0)
        return -1;
    size_t k = pq_inflate_min(n, f->in_wr - f->in_rd);
    memcpy(dst, f->in + f->in_rd, k);
    f->in_rd += k;
    return (int64_t)k;
}

/* Copy n bytes to dst from off (>= 1) bytes before it, which the window
 * holds. When they overlap (off < n), the bytes repeat with period off: each
 * memcpy doubles the run it copies from, and never overlaps itself. */
static inline void pq_inflate_match(uint8_t *dst, size_t off, size_t n)
{
    assert(off > 0);
    const uint8_t *src = dst - off;
    for (size_t d = off; n > 0; d += d) { /* d: distance from src to dst */
        size_t k = n < d ? n : d;
        memcpy(dst, src, k);
        dst += k;
        n -= k;
    }
}

/* ---- pq_inflate_lib.c: GZIP, ZSTD, BROTLI ---- */

/* Bytes the library's counted allocations may take (0 for other codecs). */
size_t pq_inflate_lib_budget(int codec, uint64_t ulen, const pq_stream_opts *o);
int pq_inflate_lib_open(pq_inflate *f, const pq_stream_opts *o, pq_error *err);
/* Decompress into dst[0..space); *made = bytes produced (maybe 0 while the
 * codec takes input). Sets f->ended when the codec's stream is complete. */
int pq_inflate_lib_fill(pq_inflate *f, uint8_t *dst, size_t space, size_t *made, pq_error *err);
/* After the last byte: the stream must end exactly on the last input byte. */
int pq_inflate_lib_finish(pq_inflate *f, pq_error *err);
void pq_inflate_lib_close(pq_inflate *f);

/* ---- pq_inflate_snappy.c, pq_inflate_lz4.c: our own decoders ---- */

/* Read what comes before the first element (SNAPPY: the length varint,
 * checked against ulen; LZ4: detect the Hadoop framing, else fall back to
 * one raw block, setting f->codec to PQ_LZ4_RAW). */
int pq_inflate_snappy_open(pq_inflate *f, pq_error *err);
int pq_inflate_lz4_open(pq_inflate *f, pq_error *err);
/* Fill exactly out[wr..wr + space) (space <= out_left). */
int pq_inflate_snappy_fill(pq_inflate *f, size_t space, pq_error *err);
int pq_inflate_lz4_fill(pq_inflate *f, size_t space, pq_error *err);
/* After the last byte: read a trailing empty sequence, then 1 when a block
 * or frame is still open (compressed bytes left over), 0 when all closed. */
int pq_inflate_lz4_finish(pq_inflate *f, pq_error *err);

#endif
