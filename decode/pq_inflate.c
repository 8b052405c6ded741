/* Streaming decompressors over a bounded window (pq_inflate.h).
 *
 * The window is one linear buffer out[0..out_cap): the consumer reads
 * out[rd..wr), the codec writes at wr. When wr reaches the end, the buffer
 * slides: the bytes before min(rd, wr - hist) are dropped, so the unconsumed
 * bytes and the last `hist` bytes (where SNAPPY and LZ4 copies reach back)
 * stay. SNAPPY and LZ4 are decoded here, from their format descriptions, as
 * resumable state machines (a literal or a copy may span refills); GZIP,
 * ZSTD and BROTLI are their libraries' streaming decoders. */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createDStream_advanced, estimate, frame header */
#include "pq_inflate.h"

#include <assert.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <brotli/decode.h>
#include <zlib.h>
#include <zstd.h>

#include "pq_codec.h"
#include "pq_cursor.h"
#include "pq_meta.h"

#define LZ4_HISTORY ((size_t)64 << 10) /* LZ4 offsets are at most 65535 */
#define GZIP_BUDGET ((size_t)64 << 10) /* inflate state (~7 KiB) and its 32 KiB window */
#define ZSTD_SLACK ((size_t)4 << 10)
#define BROTLI_TABLES ((size_t)1 << 20) /* Huffman tables and context maps */
#define BROTLI_SLACK ((size_t)64 << 10)
#define ALLOC_HEADER 16 /* size prefix of a counted allocation, keeps 16-byte alignment */

enum { LZ4_TOKEN, LZ4_LITEXT, LZ4_LIT, LZ4_OFF, LZ4_MATEXT, LZ4_MATCH, LZ4_CHUNK, LZ4_BLOCK };

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
    union {
        z_stream z;
        ZSTD_DStream *zs;
        BrotliDecoderState *br;
        struct {             /* SNAPPY */
            uint64_t lit, copy, off;
        } sn;
        struct {             /* LZ4, LZ4_RAW */
            int state;
            uint8_t token;
            uint64_t blk_in;   /* compressed bytes left in the current block */
            uint64_t blk_out;  /* bytes the current block produced (copies stay inside) */
            uint64_t frame;    /* Hadoop: bytes left in the current outer block */
            uint64_t lit, match, off;
        } lz;
    } u;
};

/* ---- counted allocations for the libraries ---- */

static void *counted_alloc(void *opaque, size_t size)
{
    pq_inflate *f = opaque;
    if (size > SIZE_MAX - ALLOC_HEADER || size + ALLOC_HEADER > f->codec_budget - f->codec_bytes)
        return NULL;
    uint8_t *p = malloc(size + ALLOC_HEADER);
    if (!p)
        return NULL;
    memcpy(p, &size, sizeof size);
    f->codec_bytes += size + ALLOC_HEADER;
    return p + ALLOC_HEADER;
}

static void counted_free(void *opaque, void *address)
{
    pq_inflate *f = opaque;
    if (!address)
        return;
    uint8_t *p = (uint8_t *)address - ALLOC_HEADER;
    size_t size;
    memcpy(&size, p, sizeof size);
    assert(f->codec_bytes >= size + ALLOC_HEADER);
    f->codec_bytes -= size + ALLOC_HEADER;
    free(p);
}

static voidpf zlib_alloc(voidpf opaque, uInt items, uInt size)
{
    return (uint64_t)items * size > SIZE_MAX ? NULL : counted_alloc(opaque, (size_t)items * size);
}

static void zlib_free(voidpf opaque, voidpf address)
{
    counted_free(opaque, address);
}

/* ---- sizes ---- */

static size_t zstd_window_log(size_t window_max)
{
    size_t log = 0;
    while (log < 31 && ((size_t)2 << log) <= window_max)
        log++;
    return log < 10 ? 10 : log; /* ZSTD_WINDOWLOG_ABSOLUTEMIN */
}

/* BROTLI sizes its ring buffer to the smallest power of two that holds the
 * output so far, up to the stream's window: at most this. */
static size_t brotli_ring(uint64_t ulen, size_t window)
{
    size_t ring = 1024;
    while (ring < ulen && ring < window)
        ring <<= 1;
    return ring < window ? ring : window;
}

static size_t codec_budget(int codec, uint64_t ulen, const pq_stream_opts *o)
{
    switch (codec) {
    case PQ_GZIP: return GZIP_BUDGET;
    case PQ_ZSTD: return ZSTD_estimateDStreamSize((size_t)1 << zstd_window_log(o->window_max)) +
                         ZSTD_SLACK;
    case PQ_BROTLI: { /* growing the ring keeps the old one (half the size) during the copy */
        size_t ring = brotli_ring(ulen, o->window_max);
        return ring + ring / 2 + BROTLI_TABLES + BROTLI_SLACK;
    }
    default: return 0;
    }
}

static size_t history(int codec, uint64_t ulen, const pq_stream_opts *o)
{
    size_t h = codec == PQ_SNAPPY ? o->snappy_window
             : codec == PQ_LZ4 || codec == PQ_LZ4_RAW ? LZ4_HISTORY : 0;
    return ulen < h ? (size_t)ulen : h;
}

static size_t min_size(uint64_t a, size_t b)
{
    return a < b ? (size_t)a : b;
}

int pq_inflate_supported(int codec, pq_error *err)
{
    switch (codec) {
    case PQ_UNCOMPRESSED: case PQ_SNAPPY: case PQ_GZIP: case PQ_BROTLI: case PQ_ZSTD:
    case PQ_LZ4: case PQ_LZ4_RAW:
        return 0;
    default:
        return pq_error_set(err, "%s pages are not streamable", pq_codec_name(codec));
    }
}

/* The window: hist + out_size, no more than the section (plus one byte, so
 * an empty section still has somewhere to check that nothing comes). */
static void window_sizes(int codec, uint64_t ulen, size_t value_need, const pq_stream_opts *o,
                         size_t *hist, size_t *cap, size_t *max)
{
    *hist = history(codec, ulen, o);
    *cap = min_size(ulen + 1, *hist + o->out_size);
    size_t grown = *hist + min_size(ulen + 1, value_need);
    *max = grown > *cap ? grown : *cap;
}

size_t pq_inflate_bound(int codec, uint64_t clen, uint64_t ulen, size_t value_need,
                        const pq_stream_opts *o)
{
    size_t hist, cap, max;
    window_sizes(codec, ulen, value_need, o, &hist, &cap, &max);
    size_t in = codec == PQ_UNCOMPRESSED ? 0 : min_size(clen + 1, o->read_size);
    return sizeof(pq_inflate) + in + max + codec_budget(codec, ulen, o);
}

/* ---- compressed input ---- */

/* Compressed bytes not yet handed to the codec. */
static uint64_t in_unread(const pq_inflate *f)
{
    return f->in_left + (f->in_wr - f->in_rd);
}

static int truncated(const pq_inflate *f, pq_error *err)
{
    return pq_error_set(err, "%s: page body ends after %llu of its %llu compressed bytes",
                        pq_codec_name(f->codec), (unsigned long long)(f->clen - f->in_left),
                        (unsigned long long)f->clen);
}

/* Read more compressed bytes behind the unread ones; 0 when none are left. */
static int64_t refill(pq_inflate *f, pq_error *err)
{
    if (f->in_rd > 0) {
        memmove(f->in, f->in + f->in_rd, f->in_wr - f->in_rd);
        f->in_wr -= f->in_rd;
        f->in_rd = 0;
    }
    size_t want = min_size(f->in_left, f->in_cap - f->in_wr);
    if (want == 0)
        return 0;
    size_t got = 0;
    if (f->read(f->ctx, f->in + f->in_wr, want, &got, err) < 0)
        return -1;
    if (got == 0 || got > want)
        return truncated(f, err);
    f->in_wr += got;
    f->in_left -= got;
    return (int64_t)got;
}

/* At least n (<= in_cap) unread input bytes at f->in + f->in_rd, or -1 (a
 * body that ends first is truncated). */
static int need_in(pq_inflate *f, size_t n, pq_error *err)
{
    while (f->in_wr - f->in_rd < n) {
        int64_t got = refill(f, err);
        if (got < 0)
            return -1;
        if (got == 0)
            return pq_error_set(err, "%s: compressed body is truncated (%llu bytes)",
                                pq_codec_name(f->codec), (unsigned long long)f->clen);
    }
    return 0;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- SNAPPY: a varint of the total length, then elements: a tag byte
 * whose low 2 bits say literal (length in the tag or 1-4 following bytes),
 * or copy with a 1-, 2- or 4-byte offset. ---- */

static int snappy_start(pq_inflate *f, pq_error *err)
{
    if (need_in(f, min_size(f->clen, 5), err) < 0)
        return -1;
    pq_cursor c = pq_cursor_make(f->in + f->in_rd, f->in_wr - f->in_rd);
    uint64_t n;
    if (!pq_cursor_uleb(&c, &n) || n > UINT32_MAX)
        return pq_error_set(err, "SNAPPY: body of %llu bytes has no valid length header",
                            (unsigned long long)f->clen);
    if (n != f->ulen)
        return pq_error_set(err, "SNAPPY: body decompresses to %llu bytes, page header says "
                                 "%llu",
                            (unsigned long long)n, (unsigned long long)f->ulen);
    f->in_rd = f->in_wr - c.left;
    return 0;
}

static int snappy_fill(pq_inflate *f, size_t space, pq_error *err)
{
    uint8_t *dst = f->out + f->wr;
    size_t done = 0;
    while (done < space) {
        if (f->u.sn.lit) {
            if (f->in_rd == f->in_wr && need_in(f, 1, err) < 0)
                return -1;
            size_t n = min_size(f->u.sn.lit, space - done);
            n = n < f->in_wr - f->in_rd ? n : f->in_wr - f->in_rd;
            memcpy(dst + done, f->in + f->in_rd, n);
            f->in_rd += n;
            f->u.sn.lit -= n;
            done += n;
            continue;
        }
        if (f->u.sn.copy) {
            size_t n = min_size(f->u.sn.copy, space - done);
            const uint8_t *src = dst + done - f->u.sn.off;
            for (size_t i = 0; i < n; i++) /* may overlap: byte by byte */
                dst[done + i] = src[i];
            f->u.sn.copy -= n;
            done += n;
            continue;
        }
        if (need_in(f, 1, err) < 0)
            return -1;
        uint8_t tag = f->in[f->in_rd];
        static const uint8_t extra[4] = { 0, 1, 2, 4 };
        size_t more = extra[tag & 3];
        uint64_t len, off = 0;
        if ((tag & 3) == 0 && (tag >> 2) >= 60)
            more = (size_t)(tag >> 2) - 59;
        if (need_in(f, 1 + more, err) < 0)
            return -1;
        const uint8_t *p = f->in + f->in_rd + 1;
        uint32_t v = 0;
        for (size_t i = 0; i < more; i++)
            v |= (uint32_t)p[i] << (8 * i);
        f->in_rd += 1 + more;
        switch (tag & 3) {
        case 0: len = more ? (uint64_t)v + 1 : (uint64_t)(tag >> 2) + 1; break;
        case 1: len = ((tag >> 2) & 7) + 4; off = (uint64_t)(tag >> 5) << 8 | v; break;
        default: len = (tag >> 2) + 1; off = v; break;
        }
        uint64_t at = f->ulen - f->out_left + done; /* bytes decoded so far */
        if (len > f->out_left - done)
            return pq_error_set(err, "SNAPPY: element at output byte %llu runs past the %llu "
                                     "bytes the page declares",
                                (unsigned long long)at, (unsigned long long)f->ulen);
        if ((tag & 3) == 0) {
            f->u.sn.lit = len;
            continue;
        }
        if (off == 0 || off > at)
            return pq_error_set(err, "SNAPPY: copy at output byte %llu has offset %llu",
                                (unsigned long long)at, (unsigned long long)off);
        if (off > f->hist)
            return pq_error_set(err, "SNAPPY: copy at output byte %llu reaches %llu bytes "
                                     "back, beyond the stream's window of %zu bytes",
                                (unsigned long long)at, (unsigned long long)off, f->hist);
        assert(off <= f->wr + done); /* the window keeps hist bytes */
        f->u.sn.copy = len;
        f->u.sn.off = off;
    }
    return (int)(done > 0);
}

/* ---- LZ4 block format: sequences of [token: literal length (4 bits),
 * match length - 4 (4 bits)][more length bytes while 255][literals]
 * [2-byte offset][more match length bytes]; the last sequence has only
 * literals. The Hadoop framing wraps blocks in [BE32 outer length]
 * ([BE32 compressed length][block])+. ---- */

static int lz4_byte(pq_inflate *f, uint8_t *b, pq_error *err)
{
    if (f->u.lz.blk_in == 0)
        return pq_error_set(err, "%s: block ends inside a sequence", pq_codec_name(f->codec));
    if (need_in(f, 1, err) < 0)
        return -1;
    *b = f->in[f->in_rd++];
    f->u.lz.blk_in--;
    return 0;
}

static int lz4_fill(pq_inflate *f, size_t space, pq_error *err)
{
    uint8_t *dst = f->out + f->wr;
    size_t done = 0;
    uint8_t b;
    const char *name = pq_codec_name(f->codec);
    while (done < space) {
        /* Output room: the page, and for Hadoop the outer block. */
        uint64_t room = f->out_left - done;
        if (f->codec == PQ_LZ4 && f->u.lz.state != LZ4_BLOCK && f->u.lz.frame < room)
            room = f->u.lz.frame;
        switch (f->u.lz.state) {
        case LZ4_BLOCK:
            if (need_in(f, 4, err) < 0)
                return -1;
            f->u.lz.frame = be32(f->in + f->in_rd);
            f->in_rd += 4;
            if (f->u.lz.frame == 0 || f->u.lz.frame > f->out_left - done)
                return pq_error_set(err, "LZ4: Hadoop block of %llu bytes does not fit the "
                                         "page",
                                    (unsigned long long)f->u.lz.frame);
            f->u.lz.state = LZ4_CHUNK;
            break;
        case LZ4_CHUNK:
            if (need_in(f, 4, err) < 0)
                return -1;
            f->u.lz.blk_in = be32(f->in + f->in_rd);
            f->in_rd += 4;
            if (f->u.lz.blk_in == 0 || f->u.lz.blk_in > in_unread(f))
                return pq_error_set(err, "LZ4: Hadoop chunk of %llu bytes does not fit the "
                                         "body",
                                    (unsigned long long)f->u.lz.blk_in);
            f->u.lz.blk_out = 0;
            f->u.lz.state = LZ4_TOKEN;
            break;
        case LZ4_TOKEN:
            if (f->u.lz.blk_in == 0) { /* the block is complete */
                if (f->codec != PQ_LZ4)
                    return pq_error_set(err, "%s: block ends after %llu of %llu bytes", name,
                                        (unsigned long long)(f->ulen - f->out_left + done),
                                        (unsigned long long)f->ulen);
                if (f->u.lz.blk_out == 0)
                    return pq_error_set(err, "LZ4: empty Hadoop chunk");
                f->u.lz.state = f->u.lz.frame == 0 ? LZ4_BLOCK : LZ4_CHUNK;
                break;
            }
            if (lz4_byte(f, &f->u.lz.token, err) < 0)
                return -1;
            f->u.lz.lit = f->u.lz.token >> 4;
            f->u.lz.state = f->u.lz.lit == 15 ? LZ4_LITEXT : LZ4_LIT;
            break;
        case LZ4_LITEXT:
        case LZ4_MATEXT: {
            if (lz4_byte(f, &b, err) < 0)
                return -1;
            int lit = f->u.lz.state == LZ4_LITEXT;
            uint64_t *len = lit ? &f->u.lz.lit : &f->u.lz.match;
            *len += b;
            if (*len > room + 255)
                return pq_error_set(err, "%s: sequence longer than the page", name);
            if (b != 255)
                f->u.lz.state = lit ? LZ4_LIT : LZ4_MATCH;
            break;
        }
        case LZ4_LIT:
            if (f->u.lz.lit > room || f->u.lz.lit > f->u.lz.blk_in)
                return pq_error_set(err, "%s: %llu literals run past the page or the block",
                                    name, (unsigned long long)f->u.lz.lit);
            if (f->u.lz.lit) {
                if (f->in_rd == f->in_wr && need_in(f, 1, err) < 0)
                    return -1;
                size_t n = min_size(f->u.lz.lit, space - done);
                n = n < f->in_wr - f->in_rd ? n : f->in_wr - f->in_rd;
                memcpy(dst + done, f->in + f->in_rd, n);
                f->in_rd += n;
                f->u.lz.blk_in -= n;
                f->u.lz.blk_out += n;
                f->u.lz.lit -= n;
                done += n;
                if (f->codec == PQ_LZ4)
                    f->u.lz.frame -= n;
            }
            if (f->u.lz.lit == 0) /* the last sequence of a block has no match */
                f->u.lz.state = f->u.lz.blk_in == 0 ? LZ4_TOKEN : LZ4_OFF;
            break;
        case LZ4_OFF: {
            uint8_t lo, hi;
            if (lz4_byte(f, &lo, err) < 0 || lz4_byte(f, &hi, err) < 0)
                return -1;
            f->u.lz.off = (uint64_t)hi << 8 | lo;
            if (f->u.lz.off == 0 || f->u.lz.off > f->u.lz.blk_out)
                return pq_error_set(err, "%s: match offset %llu at block byte %llu", name,
                                    (unsigned long long)f->u.lz.off,
                                    (unsigned long long)f->u.lz.blk_out);
            assert(f->u.lz.off <= f->wr + done); /* hist covers 64 KiB or the block */
            f->u.lz.match = (uint64_t)(f->u.lz.token & 15) + 4;
            f->u.lz.state = (f->u.lz.token & 15) == 15 ? LZ4_MATEXT : LZ4_MATCH;
            break;
        }
        case LZ4_MATCH: {
            if (f->u.lz.match > room)
                return pq_error_set(err, "%s: match of %llu bytes runs past the page", name,
                                    (unsigned long long)f->u.lz.match);
            size_t n = min_size(f->u.lz.match, space - done);
            const uint8_t *src = dst + done - f->u.lz.off;
            for (size_t i = 0; i < n; i++)
                dst[done + i] = src[i];
            f->u.lz.match -= n;
            f->u.lz.blk_out += n;
            done += n;
            if (f->codec == PQ_LZ4)
                f->u.lz.frame -= n;
            if (f->u.lz.match == 0)
                f->u.lz.state = LZ4_TOKEN;
            break;
        }
        }
    }
    return (int)(done > 0);
}

/* ---- the libraries ---- */

/* Decompress into dst[0..space); *made = bytes produced. Sets f->ended when
 * the codec's stream is complete. Returns -1 on corrupt input. */
static int lib_fill(pq_inflate *f, uint8_t *dst, size_t space, size_t *made, pq_error *err)
{
    *made = 0;
    if (f->codec == PQ_UNCOMPRESSED) { /* straight from read into dst */
        size_t want = min_size(f->in_left, space), got = 0;
        if (want > 0 && f->read(f->ctx, dst, want, &got, err) < 0)
            return -1;
        if (want > 0 && (got == 0 || got > want))
            return truncated(f, err);
        f->in_left -= got;
        *made = got;
        f->ended = f->in_left == 0;
        return 0;
    }
    if (f->in_rd == f->in_wr && f->in_left > 0 && refill(f, err) < 0)
        return -1;
    size_t avail = f->in_wr - f->in_rd, used = 0;
    const char *name = pq_codec_name(f->codec);
    int progress;
    if (f->codec == PQ_GZIP) {
        if (f->ended) {
            if (avail == 0)
                return 0;
            if (inflateReset(&f->u.z) != Z_OK) /* another member follows */
                return pq_error_set(err, "GZIP: cannot reset zlib");
            f->ended = 0;
        }
        f->u.z.next_in = f->in + f->in_rd;
        f->u.z.avail_in = (uInt)avail;
        f->u.z.next_out = dst;
        f->u.z.avail_out = (uInt)space;
        int ret = inflate(&f->u.z, Z_NO_FLUSH);
        used = avail - f->u.z.avail_in;
        *made = space - f->u.z.avail_out;
        if (ret == Z_STREAM_END)
            f->ended = 1;
        else if (ret != Z_OK && ret != Z_BUF_ERROR)
            return pq_error_set(err, "GZIP: corrupt body at input byte %llu: %s",
                                (unsigned long long)(f->clen - f->in_left - avail),
                                f->u.z.msg ? f->u.z.msg : "inflate failed");
        progress = used > 0 || *made > 0 || ret == Z_STREAM_END;
    } else if (f->codec == PQ_ZSTD) {
        ZSTD_inBuffer in = { f->in + f->in_rd, avail, 0 };
        ZSTD_outBuffer out = { dst, space, 0 };
        size_t ret = ZSTD_decompressStream(f->u.zs, &out, &in);
        if (ZSTD_isError(ret))
            return pq_error_set(err, "ZSTD: %s (window limit %zu bytes)", ZSTD_getErrorName(ret),
                                f->window_limit);
        used = in.pos;
        *made = out.pos;
        f->ended = ret == 0;
        progress = used > 0 || *made > 0;
    } else {
        const uint8_t *next_in = f->in + f->in_rd;
        uint8_t *next_out = dst;
        size_t avail_in = avail, avail_out = space;
        BrotliDecoderResult r =
            BrotliDecoderDecompressStream(f->u.br, &avail_in, &next_in, &avail_out, &next_out,
                                          NULL);
        if (r == BROTLI_DECODER_RESULT_ERROR)
            return pq_error_set(err, "BROTLI: %s",
                                BrotliDecoderErrorString(BrotliDecoderGetErrorCode(f->u.br)));
        used = avail - avail_in;
        *made = space - avail_out;
        f->ended = r == BROTLI_DECODER_RESULT_SUCCESS;
        progress = used > 0 || *made > 0;
    }
    f->in_rd += used;
    if (!progress && f->in_left == 0 && f->in_rd == f->in_wr && !f->ended)
        return pq_error_set(err, "%s: compressed body of %llu bytes ends before the %llu "
                                 "bytes the page declares",
                            name, (unsigned long long)f->clen, (unsigned long long)f->ulen);
    return 0;
}

/* ---- the window ---- */

/* Produce at least one byte at wr (space for it is there). */
static int produce(pq_inflate *f, pq_error *err)
{
    size_t space = min_size(f->out_left, f->out_cap - f->wr);
    assert(space > 0);
    for (;;) {
        size_t made;
        if (f->codec == PQ_SNAPPY || f->codec == PQ_LZ4 || f->codec == PQ_LZ4_RAW) {
            int rc = f->codec == PQ_SNAPPY ? snappy_fill(f, space, err) : lz4_fill(f, space, err);
            if (rc < 0)
                return -1;
            made = space; /* our decoders fill all the space they are given */
        } else {
            uint64_t before = in_unread(f);
            if (lib_fill(f, f->out + f->wr, space, &made, err) < 0)
                return -1;
            if (made == 0 && in_unread(f) == before) /* a library that stops short */
                return pq_error_set(err, "%s: body decompresses to %llu bytes, page header "
                                         "says %llu",
                                    pq_codec_name(f->codec),
                                    (unsigned long long)(f->ulen - f->out_left),
                                    (unsigned long long)f->ulen);
        }
        if (made > 0) {
            f->wr += made;
            f->out_left -= made;
            return 0;
        }
    }
}

/* Room behind wr for need unconsumed bytes: slide, then grow. */
static int make_room(pq_inflate *f, size_t need, pq_error *err)
{
    if (f->wr < f->out_cap)
        return 0;
    size_t keep = f->wr - f->rd > f->hist ? f->wr - f->rd : f->hist;
    if (keep > f->wr)
        keep = f->wr;
    size_t from = f->wr - keep;
    if (from > 0) {
        memmove(f->out, f->out + from, keep);
        f->rd -= from;
        f->wr -= from;
        f->dropped += from;
    }
    if (f->wr < f->out_cap)
        return 0;
    size_t want = f->hist + need + 1;
    if (want > f->out_max)
        want = f->out_max;
    if (want <= f->out_cap)
        return pq_error_set(err, "a value of %zu bytes does not fit the stream's window of %zu "
                                 "bytes",
                            need, f->out_max);
    uint8_t *p = realloc(f->out, want);
    if (!p)
        return pq_error_set(err, "out of memory growing the stream window to %zu bytes", want);
    f->out = p;
    f->out_cap = want;
    return 0;
}

int64_t pq_inflate_ensure(pq_inflate *f, size_t need, const uint8_t **p, pq_error *err)
{
    while (f->wr - f->rd < need && f->out_left > 0) {
        if (make_room(f, need, err) < 0 || produce(f, err) < 0)
            return -1;
    }
    *p = f->out + f->rd;
    return (int64_t)(f->wr - f->rd);
}

void pq_inflate_consume(pq_inflate *f, size_t n)
{
    assert(n <= f->wr - f->rd);
    f->rd += n;
}

uint64_t pq_inflate_offset(const pq_inflate *f)
{
    return f->dropped + f->rd;
}

int pq_inflate_finish(pq_inflate *f, pq_error *err)
{
    while (f->out_left > 0) {
        f->rd = f->wr;
        if (make_room(f, 1, err) < 0 || produce(f, err) < 0)
            return -1;
    }
    f->rd = f->wr;
    const char *name = pq_codec_name(f->codec);
    if (f->codec == PQ_SNAPPY || f->codec == PQ_LZ4 || f->codec == PQ_LZ4_RAW) {
        /* A block may end with a sequence of no literals (an empty page's
         * block is just that token). */
        while (f->codec != PQ_SNAPPY && f->u.lz.state == LZ4_TOKEN && f->u.lz.blk_in > 0) {
            if (lz4_byte(f, &f->u.lz.token, err) < 0)
                return -1;
            if (f->u.lz.token >> 4 || f->u.lz.blk_in > 0)
                return pq_error_set(err, "%s: body decompresses to more than the %llu bytes "
                                         "the page header says",
                                    name, (unsigned long long)f->ulen);
        }
        int open_block = f->codec != PQ_SNAPPY &&
                         (f->u.lz.blk_in > 0 || (f->codec == PQ_LZ4 && f->u.lz.frame > 0) ||
                          (f->u.lz.state != LZ4_TOKEN && f->u.lz.state != LZ4_BLOCK));
        if (open_block || f->in_rd < f->in_wr || f->in_left > 0)
            return pq_error_set(err, "%s: %llu compressed bytes left after the page's %llu "
                                     "bytes",
                                name, (unsigned long long)in_unread(f),
                                (unsigned long long)f->ulen);
        return 0;
    }
    /* The library must end its stream on the last input byte, with no more
     * output: give it a scratch byte to find out. */
    while (!f->ended || f->in_rd < f->in_wr || f->in_left > 0) {
        uint8_t scratch[1];
        size_t made;
        uint64_t before = in_unread(f);
        if (lib_fill(f, scratch, sizeof scratch, &made, err) < 0)
            return -1;
        if (made > 0)
            return pq_error_set(err, "%s: body decompresses to more than the %llu bytes the "
                                     "page header says",
                                name, (unsigned long long)f->ulen);
        if (in_unread(f) == before && before > 0 && f->ended)
            return pq_error_set(err, "%s: %llu compressed bytes after the end of the stream",
                                name, (unsigned long long)before);
        if (in_unread(f) == before && !f->ended)
            return pq_error_set(err, "%s: compressed stream is incomplete", name);
    }
    return 0;
}

/* ---- open and close ---- */

/* RFC 7932 9.1: the window size is coded in the stream's first bits. */
static int brotli_window_ok(pq_inflate *f, size_t window_max, pq_error *err)
{
    if (need_in(f, min_size(f->clen, 1), err) < 0)
        return -1;
    if (f->clen == 0)
        return 0;
    uint8_t b = f->in[f->in_rd];
    int wbits = 16;
    if (b & 1) {
        int n = (b >> 1) & 7, m = (b >> 4) & 7;
        wbits = n ? 17 + n : m == 1 ? 99 : m ? 8 + m : 17;
    }
    if (wbits == 99)
        return pq_error_set(err, "BROTLI: large-window stream is not streamable");
    size_t ring = brotli_ring(f->ulen, (size_t)1 << wbits);
    if (ring > window_max)
        return pq_error_set(err, "BROTLI: window of %zu bytes exceeds the stream's limit of "
                                 "%zu bytes (not streamable at this limit)",
                            ring, window_max);
    return 0;
}

static int zstd_window_ok(pq_inflate *f, size_t window_max, pq_error *err)
{
    if (need_in(f, min_size(f->clen, ZSTD_FRAMEHEADERSIZE_MAX) , err) < 0)
        return -1;
    ZSTD_frameHeader fh;
    size_t r = ZSTD_getFrameHeader(&fh, f->in + f->in_rd, f->in_wr - f->in_rd);
    if (r != 0)
        return 0; /* not a frame header: the decoder says what is wrong */
    size_t limit = (size_t)1 << zstd_window_log(window_max);
    if (fh.frameType == ZSTD_frame && fh.windowSize > limit)
        return pq_error_set(err, "ZSTD: frame window of %llu bytes exceeds the stream's limit "
                                 "of %zu bytes (not streamable at this limit)",
                            (unsigned long long)fh.windowSize, limit);
    return 0;
}

static int open_codec(pq_inflate *f, int codec, const pq_stream_opts *o, pq_error *err)
{
    switch (codec) {
    case PQ_GZIP:
        f->u.z.zalloc = zlib_alloc;
        f->u.z.zfree = zlib_free;
        f->u.z.opaque = f;
        if (inflateInit2(&f->u.z, 15 + 32) != Z_OK)
            return pq_error_set(err, "GZIP: cannot initialise zlib");
        return 0;
    case PQ_ZSTD: {
        ZSTD_customMem mem = { counted_alloc, counted_free, f };
        if (!(f->u.zs = ZSTD_createDStream_advanced(mem)) ||
            ZSTD_isError(ZSTD_DCtx_setParameter(f->u.zs, ZSTD_d_windowLogMax,
                                                (int)zstd_window_log(o->window_max))))
            return pq_error_set(err, "ZSTD: cannot create a decompression stream");
        return zstd_window_ok(f, o->window_max, err);
    }
    case PQ_BROTLI:
        if (!(f->u.br = BrotliDecoderCreateInstance(counted_alloc, counted_free, f)))
            return pq_error_set(err, "BROTLI: cannot create a decoder");
        return brotli_window_ok(f, o->window_max, err);
    case PQ_LZ4: {
        /* Hadoop framing when the first lengths are plausible, else (old
         * parquet-cpp) one raw block; LZ4 frames do not stream here. */
        if (need_in(f, min_size(f->clen, 8), err) < 0)
            return -1;
        const uint8_t *p = f->in + f->in_rd;
        if (f->clen >= 4 && be32(p) == 0x184D2204u)
            return pq_error_set(err, "LZ4: framed LZ4 pages are not streamable");
        if (f->clen >= 8 && be32(p) > 0 && be32(p) <= f->ulen && be32(p + 4) > 0 &&
            be32(p + 4) <= f->clen - 8) {
            f->u.lz.state = LZ4_BLOCK;
            return 0;
        }
        f->codec = PQ_LZ4_RAW;
    }
    /* fall through */
    case PQ_LZ4_RAW:
        f->u.lz.state = LZ4_TOKEN;
        f->u.lz.blk_in = f->clen;
        return 0;
    case PQ_SNAPPY:
        return snappy_start(f, err);
    default:
        return 0;
    }
}

pq_inflate *pq_inflate_open(int codec, uint64_t clen, uint64_t ulen, size_t value_need,
                            const pq_stream_opts *o, pq_stream_read_fn read, void *ctx,
                            pq_error *err)
{
    if (pq_inflate_supported(codec, err) < 0)
        return NULL;
    if (clen == 0 && ulen == 0)
        codec = PQ_UNCOMPRESSED; /* an empty section: nothing to decompress */
    if (codec == PQ_UNCOMPRESSED && clen != ulen) {
        pq_error_set(err, "UNCOMPRESSED: body is %llu bytes, page header says %llu",
                     (unsigned long long)clen, (unsigned long long)ulen);
        return NULL;
    }
    pq_inflate *f = calloc(1, sizeof *f);
    if (!f) {
        pq_error_set(err, "out of memory for a page stream");
        return NULL;
    }
    f->codec = codec;
    f->read = read;
    f->ctx = ctx;
    f->clen = f->in_left = clen;
    f->ulen = f->out_left = ulen;
    window_sizes(codec, ulen, value_need, o, &f->hist, &f->out_cap, &f->out_max);
    f->codec_budget = codec_budget(codec, ulen, o);
    f->window_limit = (size_t)1 << zstd_window_log(o->window_max);
    f->in_cap = codec == PQ_UNCOMPRESSED ? 0 : min_size(clen + 1, o->read_size);
    f->out = malloc(f->out_cap);
    f->in = f->in_cap ? malloc(f->in_cap) : NULL;
    if (!f->out || (f->in_cap && !f->in)) {
        pq_error_set(err, "out of memory for a page stream window of %zu bytes", f->out_cap);
        pq_inflate_close(f);
        return NULL;
    }
    if (open_codec(f, codec, o, err) < 0) {
        pq_inflate_close(f);
        return NULL;
    }
    return f;
}

size_t pq_inflate_bytes(const pq_inflate *f)
{
    return sizeof *f + f->in_cap + f->out_cap + f->codec_bytes;
}

size_t pq_inflate_bytes_max(const pq_inflate *f)
{
    return sizeof *f + f->in_cap + f->out_max + f->codec_budget;
}

void pq_inflate_close(pq_inflate *f)
{
    if (!f)
        return;
    if (f->codec == PQ_GZIP && f->u.z.zalloc)
        inflateEnd(&f->u.z);
    else if (f->codec == PQ_ZSTD)
        ZSTD_freeDStream(f->u.zs);
    else if (f->codec == PQ_BROTLI && f->u.br)
        BrotliDecoderDestroyInstance(f->u.br);
    assert(f->codec_bytes == 0);
    free(f->in);
    free(f->out);
    free(f);
}
