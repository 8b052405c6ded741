/* GZIP, ZSTD and BROTLI for pq_inflate (pq_inflate_own.h): their libraries'
 * streaming decoders, which keep their own history. Every allocation they
 * make goes through counted_alloc, which refuses beyond f->codec_budget, so
 * pq_inflate_bound holds whatever the stream says: a ZSTD frame or BROTLI
 * stream whose window exceeds opts->window_max is refused at open as "not
 * streamable" (the page can still be decoded whole). */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createDStream_advanced, estimate, frame header */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pq_codec.h"
#include "pq_inflate_own.h"

#define GZIP_BUDGET ((size_t)64 << 10) /* inflate state (~7 KiB) and its 32 KiB window */
#define ZSTD_SLACK ((size_t)4 << 10)
#define BROTLI_TABLES ((size_t)1 << 20) /* Huffman tables and context maps */
#define BROTLI_SLACK ((size_t)64 << 10)
#define ALLOC_HEADER 16 /* size prefix of a counted allocation, keeps 16-byte alignment */

/* ---- counted allocations ---- */

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

size_t pq_inflate_lib_budget(int codec, uint64_t ulen, const pq_stream_opts *o)
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

/* ---- open ---- */

/* RFC 7932 9.1: the window size is coded in the stream's first bits. */
static int brotli_window_ok(pq_inflate *f, size_t window_max, pq_error *err)
{
    if (pq_inflate_need(f, pq_inflate_min(f->clen, 1), err) < 0)
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

static int zstd_window_ok(pq_inflate *f, pq_error *err)
{
    if (pq_inflate_need(f, pq_inflate_min(f->clen, ZSTD_FRAMEHEADERSIZE_MAX), err) < 0)
        return -1;
    ZSTD_frameHeader fh;
    size_t r = ZSTD_getFrameHeader(&fh, f->in + f->in_rd, f->in_wr - f->in_rd);
    if (r != 0)
        return 0; /* not a frame header: the decoder says what is wrong */
    if (fh.frameType == ZSTD_frame && fh.windowSize > f->window_limit)
        return pq_error_set(err, "ZSTD: frame window of %llu bytes exceeds the stream's limit "
                                 "of %zu bytes (not streamable at this limit)",
                            (unsigned long long)fh.windowSize, f->window_limit);
    return 0;
}

int pq_inflate_lib_open(pq_inflate *f, const pq_stream_opts *o, pq_error *err)
{
    switch (f->codec) {
    case PQ_GZIP:
        f->u.z.zalloc = zlib_alloc;
        f->u.z.zfree = zlib_free;
        f->u.z.opaque = f;
        if (inflateInit2(&f->u.z, 15 + 32) != Z_OK)
            return pq_error_set(err, "GZIP: cannot initialise zlib");
        return 0;
    case PQ_ZSTD: {
        ZSTD_customMem mem = { counted_alloc, counted_free, f };
        size_t log = zstd_window_log(o->window_max);
        f->window_limit = (size_t)1 << log;
        if (!(f->u.zs = ZSTD_createDStream_advanced(mem)) ||
            ZSTD_isError(ZSTD_DCtx_setParameter(f->u.zs, ZSTD_d_windowLogMax, (int)log)))
            return pq_error_set(err, "ZSTD: cannot create a decompression stream");
        return zstd_window_ok(f, err);
    }
    default:
        assert(f->codec == PQ_BROTLI);
        if (!(f->u.br = BrotliDecoderCreateInstance(counted_alloc, counted_free, f)))
            return pq_error_set(err, "BROTLI: cannot create a decoder");
        return brotli_window_ok(f, o->window_max, err);
    }
}

/* ---- decompress ---- */

static int gzip_fill(pq_inflate *f, size_t avail, uint8_t *dst, size_t space, size_t *used,
                     size_t *made, pq_error *err)
{
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
    *used = avail - f->u.z.avail_in;
    *made = space - f->u.z.avail_out;
    if (ret == Z_STREAM_END)
        f->ended = 1;
    else if (ret != Z_OK && ret != Z_BUF_ERROR)
        return pq_error_set(err, "GZIP: corrupt body at input byte %llu: %s",
                            (unsigned long long)(f->clen - f->in_left - avail),
                            f->u.z.msg ? f->u.z.msg : "inflate failed");
    return *used > 0 || *made > 0 || ret == Z_STREAM_END;
}

static int zstd_fill(pq_inflate *f, size_t avail, uint8_t *dst, size_t space, size_t *used,
                     size_t *made, pq_error *err)
{
    ZSTD_inBuffer in = { f->in + f->in_rd, avail, 0 };
    ZSTD_outBuffer out = { dst, space, 0 };
    size_t ret = ZSTD_decompressStream(f->u.zs, &out, &in);
    if (ZSTD_isError(ret))
        return pq_error_set(err, "ZSTD: %s (window limit %zu bytes)", ZSTD_getErrorName(ret),
                            f->window_limit);
    *used = in.pos;
    *made = out.pos;
    f->ended = ret == 0;
    return *used > 0 || *made > 0;
}

static int brotli_fill(pq_inflate *f, size_t avail, uint8_t *dst, size_t space, size_t *used,
                       size_t *made, pq_error *err)
{
    const uint8_t *next_in = f->in + f->in_rd;
    uint8_t *next_out = dst;
    size_t avail_in = avail, avail_out = space;
    BrotliDecoderResult r =
        BrotliDecoderDecompressStream(f->u.br, &avail_in, &next_in, &avail_out, &next_out, NULL);
    if (r == BROTLI_DECODER_RESULT_ERROR)
        return pq_error_set(err, "BROTLI: %s",
                            BrotliDecoderErrorString(BrotliDecoderGetErrorCode(f->u.br)));
    *used = avail - avail_in;
    *made = space - avail_out;
    f->ended = r == BROTLI_DECODER_RESULT_SUCCESS;
    return *used > 0 || *made > 0;
}

int pq_inflate_lib_fill(pq_inflate *f, uint8_t *dst, size_t space, size_t *made, pq_error *err)
{
    *made = 0;
    if (f->in_rd == f->in_wr && f->in_left > 0 && pq_inflate_refill(f, err) < 0)
        return -1;
    size_t avail = f->in_wr - f->in_rd, used = 0;
    int progress = f->codec == PQ_GZIP ? gzip_fill(f, avail, dst, space, &used, made, err)
                 : f->codec == PQ_ZSTD ? zstd_fill(f, avail, dst, space, &used, made, err)
                                       : brotli_fill(f, avail, dst, space, &used, made, err);
    if (progress < 0)
        return -1;
    f->in_rd += used;
    if (!progress && f->in_left == 0 && f->in_rd == f->in_wr && !f->ended)
        return pq_error_set(err, "%s: compressed body of %llu bytes ends before the %llu "
                                 "bytes the page declares",
                            pq_codec_name(f->codec), (unsigned long long)f->clen,
                            (unsigned long long)f->ulen);
    return 0;
}

int pq_inflate_lib_finish(pq_inflate *f, pq_error *err)
{
    /* The library must end its stream on the last input byte, with no more
     * output: give it a scratch byte to find out. */
    const char *name = pq_codec_name(f->codec);
    while (!f->ended || f->in_rd < f->in_wr || f->in_left > 0) {
        uint8_t scratch[1];
        size_t made;
        uint64_t before = pq_inflate_unread(f);
        if (pq_inflate_lib_fill(f, scratch, sizeof scratch, &made, err) < 0)
            return -1;
        if (made > 0)
            return pq_error_set(err, "%s: body decompresses to more than the %llu bytes the "
                                     "page header says",
                                name, (unsigned long long)f->ulen);
        if (pq_inflate_unread(f) == before && before > 0 && f->ended)
            return pq_error_set(err, "%s: %llu compressed bytes after the end of the stream",
                                name, (unsigned long long)before);
        if (pq_inflate_unread(f) == before && !f->ended)
            return pq_error_set(err, "%s: compressed stream is incomplete", name);
    }
    return 0;
}

void pq_inflate_lib_close(pq_inflate *f)
{
    if (f->codec == PQ_GZIP && f->u.z.zalloc)
        inflateEnd(&f->u.z);
    else if (f->codec == PQ_ZSTD)
        ZSTD_freeDStream(f->u.zs);
    else if (f->codec == PQ_BROTLI && f->u.br)
        BrotliDecoderDestroyInstance(f->u.br);
    assert(f->codec_bytes == 0);
}
