/* SNAPPY decoded as a resumable state machine (pq_inflate_own.h): an
 * element (a literal or a copy) may span refills of the input and fills of
 * the window, so what is left of it is kept in f->u.sn.
 *
 * The format: a varint of the total length, then elements: a tag byte whose
 * low 2 bits say literal (length in the tag, or in 1-4 following bytes) or
 * copy with a 1-, 2- or 4-byte offset. A copy may reach back at most hist
 * bytes (the stream's snappy_window): the reference compressor copies only
 * within 64 KiB blocks, so a copy reaching further is refused as "beyond the
 * stream's window" and the caller decodes the page whole. Each element that
 * starts a 64 KiB block of output is noted as a restart point
 * (pq_inflate.h); an inflate opened at one refuses copies reaching before
 * it. */
#include <assert.h>
#include <stdint.h>

#include "pq_cursor.h"
#include "pq_inflate_own.h"

int pq_inflate_snappy_open(pq_inflate *f, pq_error *err)
{
    if (pq_inflate_need(f, pq_inflate_min(f->clen, 5), err) < 0)
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
    pq_inflate_note_restart(f, 0, f->in_rd); /* the first element's */
    return 0;
}

/* Read the next element's tag and set f->u.sn.lit or copy/off; at = output
 * bytes decoded so far, left = bytes the page still declares. */
static int element(pq_inflate *f, uint64_t at, uint64_t left, pq_error *err)
{
    if (pq_inflate_need(f, 1, err) < 0)
        return -1;
    pq_inflate_note_restart(f, at, f->in_rd);
    uint8_t tag = f->in[f->in_rd];
    static const uint8_t extra[4] = { 0, 1, 2, 4 };
    size_t more = extra[tag & 3];
    uint64_t len, off = 0;
    if ((tag & 3) == 0 && (tag >> 2) >= 60)
        more = (size_t)(tag >> 2) - 59;
    if (pq_inflate_need(f, 1 + more, err) < 0)
        return -1;
    const uint8_t *p = f->in + f->in_rd + 1;
    uint32_t v = 0;
    if (f->in_wr - f->in_rd >= 5) { /* the usual case: one little-endian load */
        static const uint32_t mask[5] = { 0, 0xff, 0xffff, 0xffffff, 0xffffffff };
        v = ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
             (uint32_t)p[3] << 24) & mask[more];
    } else {
        for (size_t i = 0; i < more; i++)
            v |= (uint32_t)p[i] << (8 * i);
    }
    f->in_rd += 1 + more;
    switch (tag & 3) {
    case 0: len = more ? (uint64_t)v + 1 : (uint64_t)(tag >> 2) + 1; break;
    case 1: len = ((tag >> 2) & 7) + 4; off = (uint64_t)(tag >> 5) << 8 | v; break;
    default: len = (tag >> 2) + 1; off = v; break;
    }
    if (len > left)
        return pq_error_set(err, "SNAPPY: element at output byte %llu runs past the %llu "
                                 "bytes the page declares",
                            (unsigned long long)at, (unsigned long long)f->ulen);
    if ((tag & 3) == 0) {
        f->u.sn.lit = len;
        return 0;
    }
    if (off == 0 || off > at)
        return pq_error_set(err, "SNAPPY: copy at output byte %llu has offset %llu",
                            (unsigned long long)at, (unsigned long long)off);
    if (off > at - f->base)
        return pq_error_set(err, "SNAPPY: copy at output byte %llu reaches %llu bytes back, "
                                 "before the restart point at %llu (not resumable)",
                            (unsigned long long)at, (unsigned long long)off,
                            (unsigned long long)f->base);
    if (off > f->hist)
        return pq_error_set(err, "SNAPPY: copy at output byte %llu reaches %llu bytes "
                                 "back, beyond the stream's window of %zu bytes",
                            (unsigned long long)at, (unsigned long long)off, f->hist);
    f->u.sn.copy = len;
    f->u.sn.off = off;
    return 0;
}

/* The fast path: whole elements decoded in one go while the input holds
 * FAST_SLACK bytes and the window has FAST_SLACK bytes of room, so that a
 * short literal or copy moves in fixed-size blocks (a copy reaching at least
 * 16 bytes back in 16-byte steps, which never read what they write) that
 * may write past the element's end, never past dst + space: what they write
 * there is overwritten by the elements that follow. An element it cannot
 * take whole, or that is wrong (element() then says how), is left to the
 * resumable path. Returns the new count of bytes done. */
#define FAST_SLACK 80

static size_t fast_elements(pq_inflate *f, uint8_t *dst, size_t space, size_t done)
{
    const uint64_t before = f->ulen - f->out_left; /* bytes produced before dst */
    while (space - done >= FAST_SLACK && f->in_wr - f->in_rd >= FAST_SLACK) {
        const uint8_t *p = f->in + f->in_rd;
        uint8_t tag = p[0];
        uint64_t at = before + done, left = f->out_left - done;
        pq_inflate_note_restart(f, at, f->in_rd);
        if ((tag & 3) == 0) {
            size_t len = (size_t)(tag >> 2) + 1, head = 1;
            if (len > 60) { /* the length follows in len - 60 bytes */
                head += len - 60;
                uint32_t v = 0;
                for (size_t i = 1; i < head; i++)
                    v |= (uint32_t)p[i] << (8 * (i - 1));
                len = (size_t)v + 1;
                if (len > space - done || head + len > f->in_wr - f->in_rd || len > left)
                    return done;
                memcpy(dst + done, p + head, len);
            } else {
                if (len > left)
                    return done;
                memcpy(dst + done, p + 1, 64); /* len <= 60, both sides have 64 */
            }
            f->in_rd += head + len;
            done += len;
            continue;
        }
        size_t len, off;
        if ((tag & 3) == 1) {
            len = ((tag >> 2) & 7) + 4;
            off = (size_t)(tag >> 5) << 8 | p[1];
            f->in_rd += 2;
        } else if ((tag & 3) == 2) {
            len = (size_t)(tag >> 2) + 1;
            off = (size_t)p[1] | (size_t)p[2] << 8;
            f->in_rd += 3;
        } else {
            len = (size_t)(tag >> 2) + 1;
            off = (size_t)p[1] | (size_t)p[2] << 8 | (size_t)p[3] << 16 | (size_t)p[4] << 24;
            f->in_rd += 5;
        }
        if (len > left || off == 0 || off > at - f->base || off > f->hist) {
            f->in_rd = (size_t)(p - f->in); /* element() reads it again, and says why */
            return done;
        }
        assert(off <= f->wr + done); /* the window keeps hist bytes */
        uint8_t *d = dst + done;
        if (off >= 16) {
            for (size_t i = 0; i < len; i += 16) /* len <= 64: ends within the slack */
                memcpy(d + i, d + i - off, 16);
        } else {
            pq_inflate_match(d, off, len);
        }
        done += len;
    }
    return done;
}

int pq_inflate_snappy_fill(pq_inflate *f, size_t space, pq_error *err)
{
    uint8_t *dst = f->out + f->wr;
    size_t done = 0;
    while (done < space) {
        if (!f->u.sn.lit && !f->u.sn.copy) {
            done = fast_elements(f, dst, space, done);
            if (done == space)
                break;
            if (element(f, f->ulen - f->out_left + done, f->out_left - done, err) < 0)
                return -1;
        }
        if (f->u.sn.lit) {
            int64_t n = pq_inflate_literal(f, dst + done,
                                           pq_inflate_min(f->u.sn.lit, space - done), err);
            if (n < 0)
                return -1;
            f->u.sn.lit -= (uint64_t)n;
            done += (size_t)n;
        } else {
            size_t n = pq_inflate_min(f->u.sn.copy, space - done);
            assert(f->u.sn.off <= f->wr + done); /* the window keeps hist bytes */
            pq_inflate_match(dst + done, (size_t)f->u.sn.off, n);
            f->u.sn.copy -= n;
            done += n;
        }
    }
    return 0;
}
