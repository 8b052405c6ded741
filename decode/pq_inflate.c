/* The window of pq_inflate (pq_inflate.h) and the dispatch to its codecs.
 *
 * The window is one linear buffer out[0..out_cap): the consumer reads
 * out[rd..wr), the codec writes at wr. When wr reaches the end, the buffer
 * slides: the bytes before min(rd, wr - hist) are dropped, so the unconsumed
 * bytes and the last `hist` bytes (where SNAPPY and LZ4 copies reach back)
 * stay. The compressed input is read into in[] in reads of read_size, or,
 * for UNCOMPRESSED, straight into the window. The codecs are in
 * pq_inflate_snappy.c and pq_inflate_lz4.c (our own resumable decoders) and
 * pq_inflate_lib.c (GZIP, ZSTD, BROTLI); pq_inflate_own.h is their
 * interface. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "pq_codec.h"
#include "pq_inflate_own.h"

#define LZ4_HISTORY ((size_t)64 << 10) /* LZ4 offsets are at most 65535 */

/* Decoded here, not by a library: they fill all the space they are given. */
static int own_codec(int codec)
{
    return codec == PQ_SNAPPY || codec == PQ_LZ4 || codec == PQ_LZ4_RAW;
}

/* ---- sizes ---- */

static size_t history(int codec, uint64_t ulen, const pq_stream_opts *o)
{
    size_t h = codec == PQ_SNAPPY ? o->snappy_window
             : codec == PQ_LZ4 || codec == PQ_LZ4_RAW ? LZ4_HISTORY : 0;
    return ulen < h ? (size_t)ulen : h;
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
    *cap = pq_inflate_min(ulen + 1, *hist + o->out_size);
    size_t grown = *hist + pq_inflate_min(ulen + 1, value_need);
    *max = grown > *cap ? grown : *cap;
}

static size_t in_size(int codec, uint64_t clen, const pq_stream_opts *o)
{
    return codec == PQ_UNCOMPRESSED ? 0 : pq_inflate_min(clen + 1, o->read_size);
}

size_t pq_inflate_bound(int codec, uint64_t clen, uint64_t ulen, size_t value_need,
                        const pq_stream_opts *o)
{
    size_t hist, cap, max;
    window_sizes(codec, ulen, value_need, o, &hist, &cap, &max);
    return sizeof(pq_inflate) + in_size(codec, clen, o) + max +
           pq_inflate_lib_budget(codec, ulen, o);
}

/* ---- compressed input ---- */

uint64_t pq_inflate_unread(const pq_inflate *f)
{
    return f->in_left + (f->in_wr - f->in_rd);
}

static int truncated(const pq_inflate *f, pq_error *err)
{
    return pq_error_set(err, "%s: page body ends after %llu of its %llu compressed bytes",
                        pq_codec_name(f->codec), (unsigned long long)(f->clen - f->in_left),
                        (unsigned long long)f->clen);
}

int64_t pq_inflate_refill(pq_inflate *f, pq_error *err)
{
    if (f->in_rd > 0) {
        memmove(f->in, f->in + f->in_rd, f->in_wr - f->in_rd);
        f->in_wr -= f->in_rd;
        f->in_rd = 0;
    }
    size_t want = pq_inflate_min(f->in_left, f->in_cap - f->in_wr);
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

int pq_inflate_need_more(pq_inflate *f, size_t n, pq_error *err)
{
    while (f->in_wr - f->in_rd < n) {
        int64_t got = pq_inflate_refill(f, err);
        if (got < 0)
            return -1;
        if (got == 0)
            return pq_error_set(err, "%s: compressed body is truncated (%llu bytes)",
                                pq_codec_name(f->codec), (unsigned long long)f->clen);
    }
    return 0;
}

/* UNCOMPRESSED: straight from read into dst. */
static int copy_fill(pq_inflate *f, uint8_t *dst, size_t space, size_t *made, pq_error *err)
{
    size_t want = pq_inflate_min(f->in_left, space), got = 0;
    if (want > 0 && f->read(f->ctx, dst, want, &got, err) < 0)
        return -1;
    if (want > 0 && (got == 0 || got > want))
        return truncated(f, err);
    f->in_left -= got;
    *made = got;
    return 0;
}

/* ---- the window ---- */

/* Produce at least one byte at wr (space for it is there), and no more
 * than the window beyond the history: a first fill does not fill the room
 * kept for history too (a resumed stream reads a few level bytes through a
 * small window, pq_stream.c). */
static int produce(pq_inflate *f, pq_error *err)
{
    size_t space = pq_inflate_min(f->out_left, f->out_cap - f->wr);
    if (f->out_cap > f->hist && space > f->out_cap - f->hist)
        space = f->out_cap - f->hist;
    assert(space > 0);
    for (;;) {
        size_t made = 0;
        if (own_codec(f->codec)) {
            int rc = f->codec == PQ_SNAPPY ? pq_inflate_snappy_fill(f, space, err)
                                           : pq_inflate_lz4_fill(f, space, err);
            if (rc < 0)
                return -1;
            made = space;
        } else {
            uint64_t before = pq_inflate_unread(f);
            int rc = f->codec == PQ_UNCOMPRESSED ? copy_fill(f, f->out + f->wr, space, &made, err)
                                                 : pq_inflate_lib_fill(f, f->out + f->wr, space,
                                                                       &made, err);
            if (rc < 0)
                return -1;
            if (made == 0 && pq_inflate_unread(f) == before) /* a library that stops short */
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
    if (f->codec == PQ_UNCOMPRESSED) { /* clen == ulen: every byte read was produced */
        assert(f->in_left == 0);
        return 0;
    }
    if (!own_codec(f->codec))
        return pq_inflate_lib_finish(f, err);
    int open_block = f->codec == PQ_SNAPPY ? 0 : pq_inflate_lz4_finish(f, err);
    if (open_block < 0)
        return -1;
    if (open_block || f->in_rd < f->in_wr || f->in_left > 0)
        return pq_error_set(err, "%s: %llu compressed bytes left after the page's %llu bytes",
                            pq_codec_name(f->codec), (unsigned long long)pq_inflate_unread(f),
                            (unsigned long long)f->ulen);
    return 0;
}

/* ---- open and close ---- */

/* An inflate over the section from compressed offset c, decompressed offset
 * u (0, 0: its start, header and all). */
static pq_inflate *inflate_new(int codec, uint64_t clen, uint64_t ulen, size_t value_need,
                               const pq_stream_opts *o, pq_stream_read_fn read, void *ctx,
                               uint64_t c, uint64_t u, pq_error *err)
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
    f->clen = clen;
    f->in_left = clen - c;
    f->ulen = ulen;
    f->out_left = ulen - u;
    f->dropped = f->base = u; /* offsets stay the section's */
    window_sizes(codec, ulen, value_need, o, &f->hist, &f->out_cap, &f->out_max);
    f->codec_budget = pq_inflate_lib_budget(codec, ulen, o);
    f->in_cap = in_size(codec, clen, o);
    f->out = malloc(f->out_cap);
    f->in = f->in_cap ? malloc(f->in_cap) : NULL;
    if (!f->out || (f->in_cap && !f->in)) {
        pq_error_set(err, "out of memory for a page stream window of %zu bytes", f->out_cap);
        pq_inflate_close(f);
        return NULL;
    }
    int rc = codec == PQ_UNCOMPRESSED || c > 0 ? 0 /* c > 0: past SNAPPY's length */
           : codec == PQ_SNAPPY ? pq_inflate_snappy_open(f, err)
           : codec == PQ_LZ4 || codec == PQ_LZ4_RAW ? pq_inflate_lz4_open(f, err)
                                                     : pq_inflate_lib_open(f, o, err);
    if (rc < 0) {
        pq_inflate_close(f);
        return NULL;
    }
    return f;
}

pq_inflate *pq_inflate_open(int codec, uint64_t clen, uint64_t ulen, size_t value_need,
                            const pq_stream_opts *o, pq_stream_read_fn read, void *ctx,
                            pq_error *err)
{
    return inflate_new(codec, clen, ulen, value_need, o, read, ctx, 0, 0, err);
}

int pq_inflate_restart(const pq_inflate *f, uint64_t at, uint64_t *c, uint64_t *u)
{
    if (f->codec == PQ_UNCOMPRESSED) {
        *c = *u = at;
        return 0;
    }
    if (f->codec != PQ_SNAPPY)
        return -1;
    for (unsigned k = 1; k <= f->rs_count; k++) { /* newest first */
        unsigned i = (f->rs_next + PQ_INFLATE_RESTARTS - k) % PQ_INFLATE_RESTARTS;
        if (f->rs_u[i] <= at) {
            *c = f->rs_c[i];
            *u = f->rs_u[i];
            return 0;
        }
    }
    return -1;
}

pq_inflate *pq_inflate_open_at(int codec, uint64_t clen, uint64_t ulen, size_t value_need,
                               const pq_stream_opts *o, pq_stream_read_fn read, void *ctx,
                               uint64_t c, uint64_t u, pq_error *err)
{
    if (clen == 0 && ulen == 0)
        codec = PQ_UNCOMPRESSED;
    if (codec != PQ_UNCOMPRESSED && codec != PQ_SNAPPY) {
        pq_error_set(err, "%s: no restart points (not resumable)", pq_codec_name(codec));
        return NULL;
    }
    /* the point came from an inflate over the same section; checked all
     * the same, so that a wrong one fails instead of reading out of range */
    if (c > clen || u > ulen || (codec == PQ_UNCOMPRESSED && c != u) ||
        (codec == PQ_SNAPPY && (c == 0 || u % PQ_SNAPPY_BLOCK != 0))) {
        pq_error_set(err, "%s: restart point (%llu, %llu) is not one of a %llu-byte section "
                          "(not resumable)",
                     pq_codec_name(codec), (unsigned long long)c, (unsigned long long)u,
                     (unsigned long long)clen);
        return NULL;
    }
    return inflate_new(codec, clen, ulen, value_need, o, read, ctx, c, u, err);
}

pq_inflate *pq_inflate_fork(const pq_inflate *f, void *ctx, const uint8_t **p, pq_error *err)
{
    if (f->codec != PQ_UNCOMPRESSED && !own_codec(f->codec)) {
        pq_error_set(err, "%s: a library decoder's state is not forkable",
                     pq_codec_name(f->codec));
        return NULL;
    }
    assert(f->codec_bytes == 0); /* our codecs allocate nothing beyond in and out */
    pq_inflate *g = malloc(sizeof *g);
    uint8_t *out = malloc(f->out_cap), *in = f->in_cap ? malloc(f->in_cap) : NULL;
    if (!g || !out || (f->in_cap && !in)) {
        free(g);
        free(out);
        free(in);
        pq_error_set(err, "out of memory for a copy of a page stream's window (%zu bytes)",
                     f->out_cap + f->in_cap);
        return NULL;
    }
    *g = *f; /* offsets and the codec's position: plain values */
    memcpy(out, f->out, f->wr);
    if (in)
        memcpy(in, f->in + f->in_rd, f->in_wr - f->in_rd);
    g->out = out;
    g->in = in;
    g->in_wr -= g->in_rd;
    g->in_rd = 0;
    g->ctx = ctx;
    uintptr_t at = p ? (uintptr_t)*p : 0, base = (uintptr_t)f->out;
    if (p && at >= base && at < base + f->wr)
        *p = out + (at - base);
    return g;
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
    pq_inflate_lib_close(f);
    free(f->in);
    free(f->out);
    free(f);
}
