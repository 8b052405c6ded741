/* ix_window: a column chunk read sequentially through one buffer. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ix_window.h"

/* Page headers are short but may carry statistics with long min/max values:
 * try a small read first, then a large one. */
#define HEADER_PROBE_BYTES (64u << 10)
#define HEADER_MAX_BYTES (16u << 20)

void ix_window_init(ix_window *w, const ix_source *src, uint64_t begin, uint64_t end,
                    size_t min_read, uint64_t *bytes_read, ix_gate *gate)
{
    assert(begin <= end && min_read > 0);
    *w = (ix_window){ .src = src, .begin = begin, .end = end, .min_read = min_read,
                      .bytes_read = bytes_read, .gate = gate };
}

void ix_window_adopt(ix_window *w, uint8_t *buf, size_t len)
{
    assert(!w->gate && len <= w->end - w->begin);
    free(w->buf);
    w->buf = buf;
    w->cap = w->len = len;
    w->base = w->begin;
}

int ix_window_holds(const ix_window *w, uint64_t off, uint64_t len)
{
    return off >= w->base && off + len <= w->base + w->len;
}

const uint8_t *ix_window_get(ix_window *w, uint64_t off, size_t len, pq_error *err)
{
    assert(off <= w->end && len <= w->end - off);
    if (ix_window_holds(w, off, len))
        return w->buf + (off - w->base);
    size_t want = len > w->min_read ? len : w->min_read;
    if (want > w->end - off)
        want = (size_t)(w->end - off);
    /* The read waits on storage without a CPU token (ix_gate.h), and so
     * does the charge for a larger buffer. */
    ix_gate_cpu_leave(w->gate);
    if (want > w->cap) { /* what the window held is not kept: let it go first */
        free(w->buf);
        w->buf = NULL;
        w->cap = w->len = 0;
        ix_gate_take(w->gate, &w->charged, want + w->extra);
        if (!(w->buf = malloc(want ? want : 1))) {
            ix_gate_cpu_enter(w->gate);
            pq_error_set(err, "%s: out of memory for a %zu-byte read", w->src->name, want);
            return NULL;
        }
        w->cap = want;
    }
    assert(!w->gate || w->charged == w->cap + w->extra);
    int rc = ix_store_read(w->src->store, w->src->fd, w->src->name, w->buf, want, off, err);
    ix_gate_cpu_enter(w->gate);
    if (rc < 0) {
        w->len = 0;
        return NULL;
    }
    *w->bytes_read += want;
    w->base = off;
    w->len = want;
    return w->buf;
}

int ix_window_header(ix_window *w, uint64_t off, pq_page_header *h, pq_error *err)
{
    uint64_t left = w->end - off;
    size_t probe = left < HEADER_PROBE_BYTES ? (size_t)left : HEADER_PROBE_BYTES;
    const uint8_t *p = ix_window_get(w, off, probe, err);
    if (!p)
        return -1;
    if (pq_page_header_parse(p, probe, h, err) == 0)
        return 0;
    if (left <= probe)
        return -1;
    size_t more = left < HEADER_MAX_BYTES ? (size_t)left : HEADER_MAX_BYTES;
    if (!(p = ix_window_get(w, off, more, err)))
        return -1;
    return pq_page_header_parse(p, more, h, err);
}

int ix_body_init(ix_body *r, ix_window *w, const pq_page_header *h, uint64_t off, size_t step,
                 int check, pq_error *err)
{
    assert(step > 0);
    *r = (ix_body){ w, off + h->header_len, off + h->header_len + (uint64_t)h->compressed_size,
                    step, (uint32_t)crc32(0L, Z_NULL, 0), check && h->has_crc,
                    (uint32_t)crc32(0L, Z_NULL, 0) };
    const uint8_t *header = ix_window_get(w, off, h->header_len, err);
    if (!header)
        return -1;
    r->crc = (uint32_t)crc32(r->crc, header, (uInt)h->header_len);
    return 0;
}

int ix_body_read(void *ctx, uint8_t *buf, size_t want, size_t *got, pq_error *err)
{
    ix_body *r = ctx;
    ix_window *w = r->w;
    size_t n = want < r->step ? want : r->step;
    if (n > r->end - r->pos)
        n = (size_t)(r->end - r->pos);
    if (r->pos >= w->base && r->pos < w->base + w->len) {
        size_t held = (size_t)(w->base + w->len - r->pos);
        n = n < held ? n : held;
        memcpy(buf, w->buf + (r->pos - w->base), n);
    } else if (n > 0) {
        if (ix_store_read(w->src->store, w->src->fd, w->src->name, buf, n, r->pos, err) < 0)
            return -1;
        *w->bytes_read += n;
    }
    r->crc = (uint32_t)crc32(r->crc, buf, (uInt)n);
    if (r->check)
        r->body_crc = (uint32_t)crc32(r->body_crc, buf, (uInt)n);
    r->pos += n;
    *got = n;
    return 0;
}

int ix_body_check_crc(const pq_page_header *h, const ix_body *r, pq_error *err)
{
    assert(r->pos == r->end);
    if (!r->check || r->body_crc == h->crc)
        return 0;
    return pq_error_set(err, "data page: CRC mismatch: header says 0x%08x, the %d-byte body has "
                        "0x%08x", (unsigned)h->crc, h->compressed_size, (unsigned)r->body_crc);
}

void ix_body_blame_crc(const pq_page_header *h, ix_body *r, pq_error *err)
{
    if (!r->check)
        return;
    uint8_t *buf = malloc(r->step);
    pq_error ignored;
    size_t got = 1;
    while (buf && r->pos < r->end && got > 0)
        if (ix_body_read(r, buf, r->step, &got, &ignored) < 0)
            break;
    free(buf);
    if (r->pos == r->end)
        ix_body_check_crc(h, r, err);
}

void ix_window_free(ix_window *w)
{
    free(w->buf);
    w->buf = NULL;
    w->cap = w->len = 0;
    ix_gate_give(w->gate, &w->charged);
}
