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

/* What a tag byte says, for both paths (the fast one then reads an element
 * without branching on its kind to find its length and offset): bits 0-6
 * the length (a literal's when it is <= 60), 7-9 the bytes that follow the
 * tag (a literal's length, a copy's offset), 10-12 a 1-byte-offset copy's
 * high offset bits. */
#define SN_E(len, more, high) ((uint16_t)((len) | (more) << 7 | (high) << 10))
#define SN_LIT(t) ((t) < 60 ? SN_E((t) + 1, 0, 0) : SN_E(0, (t) % 60 + 1, 0))
#define SN_TAG(t)                                                                        \
    ((t) % 4 == 0 ? SN_LIT((t) >> 2)                                                     \
     : (t) % 4 == 1 ? SN_E((((t) >> 2) & 7) + 4, 1, (t) >> 5)                           \
     : SN_E(((t) >> 2) + 1, (t) % 4 == 2 ? 2 : 4, 0))
#define SN_4(t) SN_TAG(t), SN_TAG((t) + 1), SN_TAG((t) + 2), SN_TAG((t) + 3)
#define SN_16(t) SN_4(t), SN_4((t) + 4), SN_4((t) + 8), SN_4((t) + 12)
#define SN_64(t) SN_16(t), SN_16((t) + 16), SN_16((t) + 32), SN_16((t) + 48)
static const uint16_t ELEMENT[256] = { SN_64(0), SN_64(64), SN_64(128), SN_64(192) };

/* The n (0-4) little-endian bytes at p; p[0..4) must be readable. */
static inline uint32_t le32(const uint8_t *p, size_t n)
{
    static const uint32_t mask[5] = { 0, 0xff, 0xffff, 0xffffff, 0xffffffff };
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                 (uint32_t)p[3] << 24;
    return v & mask[n];
}

/* Read the next element's tag and set f->u.sn.lit or copy/off; at = output
 * bytes decoded so far, left = bytes the page still declares. */
static int element(pq_inflate *f, uint64_t at, uint64_t left, pq_error *err)
{
    if (pq_inflate_need(f, 1, err) < 0)
        return -1;
    pq_inflate_note_restart(f, at, f->in_rd);
    uint8_t tag = f->in[f->in_rd];
    uint16_t e = ELEMENT[tag];
    size_t more = (e >> 7) & 7;
    if (pq_inflate_need(f, 1 + more, err) < 0)
        return -1;
    const uint8_t *p = f->in + f->in_rd + 1;
    uint32_t v = 0;
    if (f->in_wr - f->in_rd >= 5) { /* the usual case: one little-endian load */
        v = le32(p, more);
    } else {
        for (size_t i = 0; i < more; i++)
            v |= (uint32_t)p[i] << (8 * i);
    }
    f->in_rd += 1 + more;
    uint64_t len = e & 0x7f, off = 0;
    if ((tag & 3) == 0 && more)
        len = (uint64_t)v + 1;
    else if ((tag & 3) != 0)
        off = (uint64_t)(e >> 10) << 8 | v;
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
 * resumable path. Returns the new count of bytes done.
 *
 * The positions live in locals, written back to f once at the end: a store
 * through dst may alias any byte of *f, so with f->in_rd as the cursor the
 * compiler reloads and stores it around every copy. With that and a table
 * for the tag (ELEMENT), `stream_bench` over a file of DuckDB's text
 * streams 904-927 MB/s instead of 799-839 (4 runs each, interleaved;
 * libsnappy's whole decode of it, with its value walk: 619-664). */
#define FAST_SLACK 80

static size_t fast_elements(pq_inflate *f, uint8_t *dst, size_t space, size_t done)
{
    const uint8_t *const in = f->in, *const in_end = f->in + f->in_wr;
    const uint8_t *ip = in + f->in_rd;
    uint8_t *op = dst + done;
    uint8_t *const op_end = dst + space;
    /* dst's output offset, how far back from it copies may reach (the
     * restart point, the window) and the bytes the page declares from it */
    const uint64_t before = f->ulen - f->out_left, reach = before - f->base, declared = f->out_left;
    const size_t hist = f->hist;
    while (op_end - op >= FAST_SLACK && in_end - ip >= FAST_SLACK) {
        const uint64_t made = (uint64_t)(op - dst), left = declared - made;
        const uint8_t tag = ip[0];
        pq_inflate_note_restart(f, before + made, (size_t)(ip - in));
        const uint16_t e = ELEMENT[tag];
        size_t len = e & 0x7f, head = 1 + ((e >> 7) & 7);
        if ((tag & 3) == 0) {
            if (head > 1) { /* the length follows in head - 1 bytes */
                len = (size_t)le32(ip + 1, head - 1) + 1;
                if (len > (size_t)(op_end - op) || head + len > (size_t)(in_end - ip) ||
                    len > left)
                    break;
                memcpy(op, ip + head, len);
            } else {
                if (len > left)
                    break;
                memcpy(op, ip + 1, 64); /* len <= 60, both sides have 64 */
            }
            ip += head + len;
            op += len;
            continue;
        }
        size_t off = (size_t)(e >> 10) << 8 | le32(ip + 1, head - 1);
        if (len > left || off == 0 || off > reach + made || off > hist)
            break; /* element() reads it again, and says why */
        assert(off <= (size_t)(op - f->out)); /* the window keeps hist bytes */
        ip += head;
        if (off >= 16) { /* len <= 64: ends within the slack */
            memcpy(op, op - off, 16);
            for (size_t i = 16; i < len; i += 16)
                memcpy(op + i, op + i - off, 16);
        } else if (off >= 8) {
            for (size_t i = 0; i < len; i += 8)
                memcpy(op + i, op + i - off, 8);
        } else {
            pq_inflate_match(op, off, len);
        }
        op += len;
    }
    f->in_rd = (size_t)(ip - in);
    return (size_t)(op - dst);
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
