/* LZ4 decoded as a resumable state machine (pq_inflate_own.h): a length, a
 * literal run or a match may span refills of the input and fills of the
 * window, so the decoder keeps its state (LZ4_*) in f->u.lz and takes one
 * step per turn of pq_inflate_lz4_fill.
 *
 * The block format: sequences of [token: literal length (4 bits), match
 * length - 4 (4 bits)][more literal length bytes while 255][literals]
 * [2-byte little-endian offset][more match length bytes while 255]; the last
 * sequence has only literals. Offsets are at most 65535 and stay inside the
 * block, so 64 KiB of history (hist) is enough.
 *
 * PQ_LZ4_RAW is one block, the whole body. PQ_LZ4 is the Hadoop framing:
 * ([BE32 outer length]([BE32 compressed length][block])+)+, where the
 * blocks of an outer block decompress to exactly its outer length. Old
 * parquet-cpp labelled one raw block LZ4: pq_inflate_lz4_open tells them
 * apart; LZ4 frames (magic 0x184D2204) are not streamable. */
#include <assert.h>
#include <stdint.h>

#include "pq_codec.h"
#include "pq_inflate_own.h"

/* Where the next compressed byte belongs. */
enum { LZ4_TOKEN, LZ4_LITEXT, LZ4_LIT, LZ4_OFF, LZ4_MATEXT, LZ4_MATCH, LZ4_CHUNK, LZ4_BLOCK };

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int pq_inflate_lz4_open(pq_inflate *f, pq_error *err)
{
    if (f->codec == PQ_LZ4) {
        /* Hadoop framing when the first lengths are plausible, else one raw
         * block. */
        if (pq_inflate_need(f, pq_inflate_min(f->clen, 8), err) < 0)
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
    f->u.lz.state = LZ4_TOKEN;
    f->u.lz.blk_in = f->clen;
    return 0;
}

/* The next byte of the current block. */
static int block_byte(pq_inflate *f, uint8_t *b, pq_error *err)
{
    if (f->u.lz.blk_in == 0)
        return pq_error_set(err, "%s: block ends inside a sequence", pq_codec_name(f->codec));
    if (pq_inflate_need(f, 1, err) < 0)
        return -1;
    *b = f->in[f->in_rd++];
    f->u.lz.blk_in--;
    return 0;
}

/* A Hadoop length: the next 4 input bytes, big-endian. */
static int hadoop_length(pq_inflate *f, uint64_t *len, pq_error *err)
{
    if (pq_inflate_need(f, 4, err) < 0)
        return -1;
    *len = be32(f->in + f->in_rd);
    f->in_rd += 4;
    return 0;
}

/* n bytes were written to the window: account for them in the block and
 * the outer block. */
static void produced(pq_inflate *f, size_t n)
{
    f->u.lz.blk_out += n;
    if (f->codec == PQ_LZ4)
        f->u.lz.frame -= n;
}

/* One step of the state machine, writing at dst in the window (room: bytes
 * the page and, inside a Hadoop block, the outer block still take; space:
 * bytes this fill still wants). Returns bytes
 * written, or -1. */
static int64_t step(pq_inflate *f, uint8_t *dst, uint64_t room, size_t space, pq_error *err)
{
    const char *name = pq_codec_name(f->codec);
    uint8_t b = 0; /* set by block_byte; -O3 cannot see it */
    switch (f->u.lz.state) {
    case LZ4_BLOCK:
        if (hadoop_length(f, &f->u.lz.frame, err) < 0)
            return -1;
        if (f->u.lz.frame == 0 || f->u.lz.frame > room)
            return pq_error_set(err, "LZ4: Hadoop block of %llu bytes does not fit the page",
                                (unsigned long long)f->u.lz.frame);
        f->u.lz.state = LZ4_CHUNK;
        return 0;
    case LZ4_CHUNK:
        if (hadoop_length(f, &f->u.lz.blk_in, err) < 0)
            return -1;
        if (f->u.lz.blk_in == 0 || f->u.lz.blk_in > pq_inflate_unread(f))
            return pq_error_set(err, "LZ4: Hadoop chunk of %llu bytes does not fit the body",
                                (unsigned long long)f->u.lz.blk_in);
        f->u.lz.blk_out = 0;
        f->u.lz.state = LZ4_TOKEN;
        return 0;
    case LZ4_TOKEN:
        if (f->u.lz.blk_in == 0) { /* the block is complete */
            if (f->codec != PQ_LZ4) /* room is then what the page still takes */
                return pq_error_set(err, "%s: block ends after %llu of %llu bytes", name,
                                    (unsigned long long)(f->ulen - room),
                                    (unsigned long long)f->ulen);
            if (f->u.lz.blk_out == 0)
                return pq_error_set(err, "LZ4: empty Hadoop chunk");
            f->u.lz.state = f->u.lz.frame == 0 ? LZ4_BLOCK : LZ4_CHUNK;
            return 0;
        }
        if (block_byte(f, &f->u.lz.token, err) < 0)
            return -1;
        f->u.lz.lit = f->u.lz.token >> 4;
        f->u.lz.state = f->u.lz.lit == 15 ? LZ4_LITEXT : LZ4_LIT;
        return 0;
    case LZ4_LITEXT:
    case LZ4_MATEXT: {
        if (block_byte(f, &b, err) < 0)
            return -1;
        int lit = f->u.lz.state == LZ4_LITEXT;
        uint64_t *len = lit ? &f->u.lz.lit : &f->u.lz.match;
        *len += b;
        if (*len > room + 255)
            return pq_error_set(err, "%s: sequence longer than the page", name);
        if (b != 255)
            f->u.lz.state = lit ? LZ4_LIT : LZ4_MATCH;
        return 0;
    }
    case LZ4_LIT: {
        if (f->u.lz.lit > room || f->u.lz.lit > f->u.lz.blk_in)
            return pq_error_set(err, "%s: %llu literals run past the page or the block", name,
                                (unsigned long long)f->u.lz.lit);
        int64_t n = 0;
        if (f->u.lz.lit) {
            n = pq_inflate_literal(f, dst, pq_inflate_min(f->u.lz.lit, space), err);
            if (n < 0)
                return -1;
            f->u.lz.blk_in -= (uint64_t)n;
            f->u.lz.lit -= (uint64_t)n;
            produced(f, (size_t)n);
        }
        if (f->u.lz.lit == 0) /* the last sequence of a block has no match */
            f->u.lz.state = f->u.lz.blk_in == 0 ? LZ4_TOKEN : LZ4_OFF;
        return n;
    }
    case LZ4_OFF: {
        uint8_t lo = 0, hi = 0; /* set by block_byte; -O3 cannot see it */
        if (block_byte(f, &lo, err) < 0 || block_byte(f, &hi, err) < 0)
            return -1;
        f->u.lz.off = (uint64_t)hi << 8 | lo;
        if (f->u.lz.off == 0 || f->u.lz.off > f->u.lz.blk_out)
            return pq_error_set(err, "%s: match offset %llu at block byte %llu", name,
                                (unsigned long long)f->u.lz.off,
                                (unsigned long long)f->u.lz.blk_out);
        f->u.lz.match = (uint64_t)(f->u.lz.token & 15) + 4;
        f->u.lz.state = (f->u.lz.token & 15) == 15 ? LZ4_MATEXT : LZ4_MATCH;
        return 0;
    }
    default: { /* LZ4_MATCH */
        assert(f->u.lz.state == LZ4_MATCH);
        if (f->u.lz.match > room)
            return pq_error_set(err, "%s: match of %llu bytes runs past the page", name,
                                (unsigned long long)f->u.lz.match);
        size_t n = pq_inflate_min(f->u.lz.match, space);
        assert(f->u.lz.off <= (size_t)(dst - f->out)); /* hist covers 64 KiB or the block */
        pq_inflate_match(dst, (size_t)f->u.lz.off, n);
        f->u.lz.match -= n;
        produced(f, n);
        if (f->u.lz.match == 0)
            f->u.lz.state = LZ4_TOKEN;
        return (int64_t)n;
    }
    }
}

int pq_inflate_lz4_fill(pq_inflate *f, size_t space, pq_error *err)
{
    size_t done = 0;
    while (done < space) {
        /* Output room: the page, and for Hadoop the outer block. */
        uint64_t room = f->out_left - done;
        if (f->codec == PQ_LZ4 && f->u.lz.state != LZ4_BLOCK && f->u.lz.frame < room)
            room = f->u.lz.frame;
        int64_t n = step(f, f->out + f->wr + done, room, space - done, err);
        if (n < 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

int pq_inflate_lz4_finish(pq_inflate *f, pq_error *err)
{
    /* A block may end with a sequence of no literals (an empty page's block
     * is just that token). */
    while (f->u.lz.state == LZ4_TOKEN && f->u.lz.blk_in > 0) {
        if (block_byte(f, &f->u.lz.token, err) < 0)
            return -1;
        if (f->u.lz.token >> 4 || f->u.lz.blk_in > 0)
            return pq_error_set(err, "%s: body decompresses to more than the %llu bytes the "
                                     "page header says",
                                pq_codec_name(f->codec), (unsigned long long)f->ulen);
    }
    return f->u.lz.blk_in > 0 || (f->codec == PQ_LZ4 && f->u.lz.frame > 0) ||
           (f->u.lz.state != LZ4_TOKEN && f->u.lz.state != LZ4_BLOCK);
}
