/* SNAPPY decoded as a resumable state machine (pq_inflate_own.h): an
 * element (a literal or a copy) may span refills of the input and fills of
 * the window, so what is left of it is kept in f->u.sn.
 *
 * The format: a varint of the total length, then elements: a tag byte whose
 * low 2 bits say literal (length in the tag, or in 1-4 following bytes) or
 * copy with a 1-, 2- or 4-byte offset. A copy may reach back at most hist
 * bytes (the stream's snappy_window): the reference compressor copies only
 * within 64 KiB blocks, so a copy reaching further is refused as "beyond the
 * stream's window" and the caller decodes the page whole. */
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
    return 0;
}

/* Read the next element's tag and set f->u.sn.lit or copy/off; at = output
 * bytes decoded so far, left = bytes the page still declares. */
static int element(pq_inflate *f, uint64_t at, uint64_t left, pq_error *err)
{
    if (pq_inflate_need(f, 1, err) < 0)
        return -1;
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
    if (off > f->hist)
        return pq_error_set(err, "SNAPPY: copy at output byte %llu reaches %llu bytes "
                                 "back, beyond the stream's window of %zu bytes",
                            (unsigned long long)at, (unsigned long long)off, f->hist);
    f->u.sn.copy = len;
    f->u.sn.off = off;
    return 0;
}

int pq_inflate_snappy_fill(pq_inflate *f, size_t space, pq_error *err)
{
    uint8_t *dst = f->out + f->wr;
    size_t done = 0;
    while (done < space) {
        if (!f->u.sn.lit && !f->u.sn.copy &&
            element(f, f->ulen - f->out_left + done, f->out_left - done, err) < 0)
            return -1;
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
