#include "ix_stream.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "ix_ahead.h"
#include "ix_checked.h"
#include "ix_claims.h"
#include "ix_row.h"
#include "pq_stream.h"

/* Page headers are short but may carry statistics: a first read of
 * HEADER_PROBE bytes, then up to HEADER_MAX (a longer header does not
 * stream). */
#define HEADER_PROBE ((size_t)64 << 10)
#define HEADER_MAX ((size_t)1 << 20)
#define RESUME_PROBE ((size_t)16 << 10)

enum { RUNNING, ENDED, FAILED };

struct ix_stream {
    const ix_index *ix;
    const ix_page *entry;
    const ix_chunk *chunk;
    uint32_t chunk_index;
    const ix_file *file;
    uint32_t file_index;
    ix_shape shape;
    const ix_dict_source *dicts;
    void **dict_handle;
    const pq_dictionary *dict;
    pq_stream_opts page_opts;
    size_t read_size;
    size_t window;      /* of the reads ahead */
    unsigned ahead_depth;     /* windows in flight, or to be when opened again */
    unsigned ahead_open;      /* windows the open reads ahead hold: ahead_depth, or
                               * fewer when their range is shorter */
    unsigned ahead_depth_max; /* what the cap leaves room for */
    /* ahead is open when ON; WHEN_SLOW until the first read decides; SHED:
     * the reads ahead were let go (ix_stream_shed), and the next read opens
     * them again */
    enum { AHEAD_NEVER, AHEAD_WHEN_SLOW, AHEAD_ON, AHEAD_SHED } ahead_state;
    uint64_t *bytes_read;
    ix_stream_grow_fn grow; /* charging as it goes (ix_stream.h), or NULL */
    void *grow_ctx;
    size_t granted;         /* with grow: >= ix_stream_committed */

    /* The entry's bytes [entry->offset, end) are read once, in order:
     * pos is the next file offset to read; buf[at, have) holds bytes read
     * and not yet used (a header probe reads on into the body). */
    uint64_t pos, end;
    ix_ahead *ahead;     /* the range's next windows in flight (NULL: read directly) */
    uint64_t ahead_from, ahead_stop; /* where the open reads ahead begin and end (<= end) */
    uint64_t ahead_until; /* reads ahead opened from now on stop here (0: at end) */
    /* A resumed stream over slow storage: its body's reads ahead, opened at
     * the mark's body_offset (early_at) before the header and levels are
     * read, taken over at the seek there (one round trip for both, not
     * two); ahead_stop is theirs meanwhile. */
    ix_ahead *ahead_early;
    uint64_t early_at;
    uint64_t unused; /* bytes read ahead and let go unconsumed (ix_stream_close) */
    uint8_t *buf;
    size_t buf_cap, have, at;
    /* zlib crc32 of the bytes read so far, taken only while the entry's CRC
     * is to be learned (unknown when a stream from the entry's start opened):
     * a stream that knew it at open and then sees the file move compares by
     * reading the entry again (vouch_by_rereading), as a resumed one does.
     * The CRC of every byte a stream read took a fifth of the CPU that
     * inflating SNAPPY did, for nothing once the CRC was known. */
    uint32_t crc;
    int crc_learning;
    int moved;     /* a read saw the ctime moved (ix_checked.h) */
    uint64_t first_read_ns; /* how long its first direct read took (0: none yet) */

    /* The page being decoded. */
    pq_page_header h;
    uint64_t page_offset;
    uint64_t body_left; /* body bytes not yet handed to ps */
    size_t opening;     /* the bound of the page whose stream is being opened,
                         * committed before ps exists (see open_page) */
    uint32_t body_crc;  /* of the body so far, when h has a CRC that is verified */
    int check_body_crc;
    unsigned page_no;   /* 0: the entry's first page */
    pq_stream *ps;

    /* Rows. A row is complete when the entry after it starts a row (or the
     * range ends); that entry waits in `pending` while the row is out. */
    ix_row row;
    int leading;        /* skipping entries of a row begun before the entry */
    int last_row;       /* a row started in a later page: the entry's rows are over */
    int row_out;        /* the row was handed out: clear it first */
    pq_stream_entry pending;
    int has_pending;
    uint8_t *pending_value; /* owned: a resumed stream's pending entry's value */
    /* Resumed from a mark (ix_stream_resume): the entry was read from the
     * marked page on; while the marked page opens, its mark. */
    int resumed;
    const pq_stream_mark *resume_at;
    int ahead_after_seek; /* the reads-ahead state to take once the resumed page seeks */
    pq_bytes flat_value;
    uint16_t flat_def;
    uint32_t rows, records;
    int state;
    pq_error failure;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Before committing `more` bytes: ask for what passes the grant (reads
 * ahead: may_refuse). */
static int commit(ix_stream *s, size_t more, int may_refuse, pq_error *err)
{
    if (!s->grow)
        return 0;
    size_t after = ix_stream_committed(s) + more;
    if (after <= s->granted)
        return 0;
    if (s->grow(s->grow_ctx, after - s->granted, may_refuse, err) < 0)
        return -1;
    s->granted = after;
    return 0;
}

/* ix_row_grow_fn: the row being assembled grows. */
static int row_grows(void *ctx, size_t more, pq_error *err)
{
    return commit(ctx, more, 0, err);
}

/* Where reads ahead opened at `from` end for a stop at `until` (0: none):
 * the entry's end, or `until` rounded up to whole windows from `from`, so
 * that every window but the entry's last is whole and the reads can go on
 * past it (ix_ahead_extend). */
static uint64_t ahead_end(const ix_stream *s, uint64_t from, uint64_t until)
{
    if (!until || until >= s->end)
        return s->end;
    uint64_t windows = until > from ? (until - from + s->window - 1) / s->window : 1;
    uint64_t stop = from + windows * s->window;
    return stop < s->end ? stop : s->end;
}

/* Start reading the rest of the range ahead (ix_stream.h says when). Out of
 * memory or threads, the stream reads on directly: only speed differs.
 * Refused room, it tries again at its next read. */
static void start_ahead(ix_stream *s)
{
    pq_error ignored;
    s->ahead_state = AHEAD_NEVER;
    if (s->end - s->pos <= s->window)
        return;
    if (s->ahead_until && s->ahead_until <= s->pos)
        s->ahead_until = 0; /* passed: the rest of the range is read ahead */
    uint64_t stop = ahead_end(s, s->pos, s->ahead_until);
    if (stop - s->pos <= s->window) { /* read directly up to it, ahead again after */
        s->ahead_state = AHEAD_SHED;
        return;
    }
    uint64_t windows = (stop - s->pos + s->window - 1) / s->window; /* > 1 */
    unsigned open = s->ahead_depth < windows ? s->ahead_depth : (unsigned)windows;
    if (commit(s, ix_ahead_bytes(s->window, open), 1, &ignored) < 0) {
        unsigned least = IX_AHEAD_WINDOWS < windows ? IX_AHEAD_WINDOWS : (unsigned)windows;
        if (open == least || commit(s, ix_ahead_bytes(s->window, least), 1, &ignored) < 0) {
            s->ahead_state = AHEAD_SHED;
            return;
        }
        s->ahead_depth = IX_AHEAD_WINDOWS;
        open = least;
    }
    s->ahead = ix_ahead_open(s->ix, s->file_index, s->pos, stop - s->pos, s->window, open,
                             &ignored);
    s->ahead_open = open;
    s->ahead_from = s->pos;
    s->ahead_stop = stop;
    if (s->ahead)
        s->ahead_state = AHEAD_ON;
}

/* The consumer waited for a window in flight, so it drained every window
 * in flight: a quarter more (one at least), as far as each is granted now
 * and a window of the entry is left to put in flight. A wait comes once
 * per round of depth windows, so the depth grows by a quarter a round trip
 * (4 to 16 in 7), where one a wait would take 12. */
static void deepen_ahead(ix_stream *s)
{
    pq_error ignored;
    unsigned more = s->ahead_depth / 4 ? s->ahead_depth / 4 : 1;
    while (more-- > 0 && s->ahead_open < s->ahead_depth_max &&
           s->ahead_stop - s->pos > (uint64_t)s->ahead_open * s->window &&
           commit(s, s->window, 1, &ignored) == 0 && ix_ahead_deepen(s->ahead) == 0) {
        s->ahead_open++;
        if (s->ahead_depth < s->ahead_open)
            s->ahead_depth = s->ahead_open;
    }
}

/* Read the next n bytes of the range (n <= what is left) into dst, checked,
 * taking their CRC. */
static int read_on(ix_stream *s, uint8_t *dst, size_t n, pq_error *err)
{
    int moved = 0;
    if (n == 0)
        return 0;
    if (s->ahead_state == AHEAD_ON && s->pos + n > s->ahead_stop) {
        /* the reads ahead end here (ix_stream_ahead_until): take what they
         * hold, then open them again from where they stopped */
        size_t head = (size_t)(s->ahead_stop - s->pos);
        if (read_on(s, dst, head, err) < 0)
            return -1;
        ix_stream_shed(s);
        return read_on(s, dst + head, n - head, err);
    }
    if (s->ahead_state == AHEAD_SHED)
        start_ahead(s);
    if (s->ahead_state == AHEAD_ON) {
        int waited = 0;
        if (ix_ahead_read(s->ahead, dst, n, s->bytes_read, &moved, &waited, err) < 0)
            return -1;
        if (waited)
            deepen_ahead(s);
    } else {
        uint64_t start = s->first_read_ns && s->ahead_state != AHEAD_WHEN_SLOW ? 0 : now_ns();
        if (ix_read_checked(s->ix, s->file_index, s->pos, dst, n, s->bytes_read, &moved,
                            err) < 0)
            return -1;
        uint64_t took = start ? now_ns() - start : 0;
        if (!s->first_read_ns && start)
            s->first_read_ns = took ? took : 1;
        if (s->ahead_state == AHEAD_WHEN_SLOW) { /* the first read decides */
            s->pos += n; /* the ahead starts after these bytes */
            if (took >= IX_AHEAD_SLOW_NS)
                start_ahead(s);
            else
                s->ahead_state = AHEAD_NEVER;
            s->pos -= n;
        }
    }
    if (s->crc_learning)
        s->crc = (uint32_t)crc32(s->crc, dst, (uInt)n);
    s->moved |= moved;
    s->pos += n;
    return 0;
}

/* Take up to want bytes of the entry, in order: first what buf holds, then
 * straight from the file into dst. */
static int take(ix_stream *s, uint8_t *dst, size_t want, size_t *got, pq_error *err)
{
    if (s->at < s->have) {
        size_t n = s->have - s->at < want ? s->have - s->at : want;
        memcpy(dst, s->buf + s->at, n);
        s->at += n;
        *got = n;
        return 0;
    }
    uint64_t left = s->end - s->pos;
    *got = want < left ? want : (size_t)left;
    return read_on(s, dst, *got, err);
}

/* Make at least `need` unused bytes available in buf (fewer at the end of
 * the range), reading on. */
static int fill(ix_stream *s, size_t need, pq_error *err)
{
    if (s->at > 0) {
        memmove(s->buf, s->buf + s->at, s->have - s->at);
        s->have -= s->at;
        s->at = 0;
    }
    if (need > s->buf_cap) {
        if (commit(s, need - s->buf_cap, 0, err) < 0)
            return -1;
        uint8_t *grown = realloc(s->buf, need);
        if (!grown)
            return pq_error_set(err, "out of memory for a %zu-byte page header", need);
        s->buf = grown;
        s->buf_cap = need;
    }
    if (s->have < need) {
        uint64_t left = s->end - s->pos;
        size_t n = need - s->have < left ? need - s->have : (size_t)left;
        if (read_on(s, s->buf + s->have, n, err) < 0)
            return -1;
        s->have += n;
    }
    return 0;
}

/* pq_stream_read_fn: the current page's body. */
static int read_body(void *ctx, uint8_t *dst, size_t want, size_t *got, pq_error *err)
{
    ix_stream *s = ctx;
    if (want > s->body_left)
        want = (size_t)s->body_left;
    *got = 0;
    if (want == 0)
        return 0;
    if (take(s, dst, want, got, err) < 0)
        return -1;
    s->body_left -= *got;
    if (s->check_body_crc)
        s->body_crc = (uint32_t)crc32(s->body_crc, dst, (uInt)*got);
    return 0;
}

/* pq_stream_seek_fn: the current page's body from byte `offset` on (a
 * resumed page's values, after its levels were read). The bytes buffered
 * and the reads ahead are let go; the reads ahead start again from there. */
static int seek_body(void *ctx, uint64_t offset, pq_error *err)
{
    ix_stream *s = ctx;
    uint64_t body = s->page_offset + s->h.header_len;
    if (offset > (uint64_t)s->h.compressed_size)
        return pq_error_set(err, "a seek to byte %llu of a %d-byte page body",
                            (unsigned long long)offset, s->h.compressed_size);
    s->pos = body + offset;
    s->at = s->have = 0;
    s->body_left = (uint64_t)s->h.compressed_size - offset;
    ix_stream_shed(s);
    if (s->ahead_early) { /* in flight since the resume began, if it starts here */
        assert(s->ahead_state != AHEAD_ON);
        ix_ahead *early = s->ahead_early;
        s->ahead_early = NULL;
        if (s->early_at == s->pos) {
            s->ahead = early;
            s->ahead_state = AHEAD_ON;
            return 0;
        }
        s->unused += ix_ahead_close(early);
    }
    if (s->resume_at) { /* the resumed page's body from the mark's block on */
        s->ahead_state = s->ahead_after_seek;
        if (s->ahead_state == AHEAD_ON)
            start_ahead(s);
    }
    return 0;
}

/* Parse the header of the page at the current position and open its
 * stream. */
static int open_page(ix_stream *s, pq_error *err)
{
    s->page_offset = s->pos - (s->have - s->at);
    uint64_t left = s->end - s->page_offset;
    /* a resumed page reads its header and levels here, then its body from
     * the mark's block: a shorter probe */
    size_t want = s->resume_at ? RESUME_PROBE : HEADER_PROBE;
    size_t probe = left < want ? (size_t)left : want;
    if (fill(s, probe, err) < 0)
        return -1;
    pq_page_header *h = &s->h;
    if (pq_page_header_parse(s->buf, s->have, h, err) < 0) {
        if (s->have == left)
            return -1;
        size_t more = left < HEADER_MAX ? (size_t)left : HEADER_MAX;
        if (fill(s, more, err) < 0)
            return -1;
        if (pq_page_header_parse(s->buf, s->have, h, err) < 0)
            return s->have == left ? -1
                                   : pq_error_set(err, "a page header of more than %zu bytes "
                                                  "(not streamable)", HEADER_MAX);
    }
    if (ix_page_claims_check(h, &s->chunk->bounds, s->ix->mem, err) < 0)
        return -1;
    uint64_t total = h->header_len + (uint64_t)h->compressed_size;
    /* the entry's pages tile its range exactly (ix_chunk_scan.c) */
    if (total > left || (s->chunk->desc.max_rep == 0 && total != left))
        return pq_error_set(err, "header and body take %llu bytes, the index says %llu (file "
                            "changed?)", (unsigned long long)total, (unsigned long long)left);
    if (h->type != PQ_PAGE_DATA && h->type != PQ_PAGE_DATA_V2)
        return pq_error_set(err, "not a data page (page type %d; file changed?)", h->type);
    /* a page over the cap does not open (pq_stream_open says why): nothing
     * to ask for */
    size_t page_bound = pq_stream_memory_needed(h, &s->chunk->desc, &s->page_opts);
    if (page_bound <= s->page_opts.cap && commit(s, page_bound, 0, err) < 0)
        return -1;
    if (ix_uses_dictionary(h) && !s->dict) {
        if (s->chunk->dict_offset < 0)
            return pq_error_set(err, "dictionary-encoded, but the chunk has no dictionary page");
        if (s->dicts->get(s->dicts->ctx, s->chunk_index, &s->dict, s->dict_handle, err) < 0)
            return -1;
    }
    s->at += h->header_len;
    s->body_left = (uint64_t)h->compressed_size;
    s->check_body_crc = s->ix->verify_crc && h->has_crc;
    s->body_crc = 0;
    if (s->resume_at && s->check_body_crc)
        return pq_error_set(err, "the page's CRC is verified: its body is read whole (not "
                                 "resumable)");
    /* The page's bound counts as committed while its stream opens: the
     * open reads, and a first read found slow starts the reads ahead
     * (start_ahead), which must be granted beside the page, not out of
     * its grant (at 2 ms a read the stream held 2 MiB over its grant). */
    s->opening = page_bound <= s->page_opts.cap ? page_bound : 0;
    const pq_dictionary *dict = ix_uses_dictionary(h) ? s->dict : NULL;
    s->ps = s->resume_at ? pq_stream_resume(&s->chunk->desc, h, dict, &s->page_opts, read_body,
                                            seek_body, s, s->resume_at, err)
                         : pq_stream_open(&s->chunk->desc, h, dict, &s->page_opts, read_body,
                                          s, err);
    s->opening = 0;
    assert(!s->grow || ix_stream_committed(s) <= s->granted);
    return s->ps ? 0 : -1;
}

/* The current page's entries are all out (its body checked by pq_stream):
 * check its Parquet CRC and go on to the next page. */
static int end_page(ix_stream *s, pq_error *err)
{
    assert(s->body_left == 0);
    pq_stream_close(s->ps);
    s->ps = NULL;
    s->page_no++;
    if (s->check_body_crc && s->body_crc != s->h.crc)
        return pq_error_set(err, "data page at offset %llu: CRC mismatch: header says 0x%08x, "
                            "the body has 0x%08x", (unsigned long long)s->page_offset,
                            s->h.crc, s->body_crc);
    return 0;
}

/* The next level entry of the range: 1, 0 at its end, -1. */
static int next_entry(ix_stream *s, pq_stream_entry *e, pq_error *err)
{
    for (;;) {
        if (!s->ps) {
            if (s->pos == s->end && s->at == s->have)
                return 0;
            if (open_page(s, err) < 0)
                return -1;
        }
        int rc = pq_stream_next(s->ps, e, err);
        if (rc != 0)
            return rc;
        if (end_page(s, err) < 0)
            return -1;
    }
}

/* Pass over n bytes of the range without decoding them (their CRCs are
 * taken as they are read; `body`: they are the current page's body). */
static int pass_over(ix_stream *s, uint64_t n, int body, pq_error *err)
{
    while (n > 0) {
        const uint8_t *p = s->buf + s->at;
        size_t got;
        if (s->at < s->have) {
            got = s->have - s->at < n ? s->have - s->at : (size_t)n;
            s->at += got;
        } else {
            s->at = s->have = 0;
            p = s->buf;
            if (take(s, s->buf, s->buf_cap < n ? s->buf_cap : (size_t)n, &got, err) < 0)
                return -1;
            if (got == 0)
                return pq_error_set(err, "the page runs past the range the index gives");
        }
        if (body && s->check_body_crc)
            s->body_crc = (uint32_t)crc32(s->body_crc, p, (uInt)got);
        n -= got;
    }
    return 0;
}

/* Read the rest of the range without decoding it: the current page's body
 * (for its CRC) and every byte after it (for the entry's). */
static int drain(ix_stream *s, pq_error *err)
{
    if (s->ps) {
        if (pass_over(s, s->body_left, 1, err) < 0)
            return -1;
        s->body_left = 0;
        if (end_page(s, err) < 0)
            return -1;
    }
    return pass_over(s, (s->have - s->at) + (s->end - s->pos), 0, err);
}

/* A stream that took no CRC (resumed: it read part of the entry; or one
 * that knew the CRC at open) learns none. When the bytes must be compared
 * (a read saw the ctime move and the CRC is known: a chmod, say), it reads
 * the whole entry again, undecoded, through its header buffer. */
static int vouch_by_rereading(ix_stream *s, pq_error *err)
{
    if (!(s->moved && ix_crc_needed(1, &s->entry->crc)))
        return 0;
    size_t cap = s->buf_cap ? s->buf_cap : RESUME_PROBE;
    uint8_t *buf = s->buf_cap ? s->buf : malloc(cap);
    if (!buf)
        return pq_error_set(err, "out of memory for a %zu-byte buffer", cap);
    s->at = s->have = 0; /* the buffer's bytes are not needed any more */
    uint32_t crc = 0;
    int moved, rc = 0;
    for (uint64_t at = s->entry->offset; rc == 0 && at < s->end;) {
        size_t n = s->end - at < cap ? (size_t)(s->end - at) : cap;
        rc = ix_read_checked(s->ix, s->file_index, at, buf, n, s->bytes_read, &moved, err);
        crc = (uint32_t)crc32(crc, buf, (uInt)n);
        at += n;
    }
    if (buf != s->buf)
        free(buf);
    return rc < 0 ? -1
                  : ix_crc_settle(s->file, 1, &s->entry->crc, crc ? crc : 1, "data page",
                                  s->entry->offset, err);
}

/* Check the entry's CRC once all its bytes were read, or read them all when
 * they must be compared. */
static int vouch(ix_stream *s, pq_error *err)
{
    int compare = s->crc_learning && s->moved && ix_crc_needed(1, &s->entry->crc);
    int page_crc = !s->resumed && s->ps && s->check_body_crc;
    if ((compare || page_crc) && drain(s, err) < 0)
        return -1;
    if (!s->crc_learning)
        return vouch_by_rereading(s, err);
    if (s->pos < s->end)
        return 0; /* stopped early; nothing to compare: the CRC is learned another time */
    return ix_crc_settle(s->file, s->moved, &s->entry->crc, s->crc ? s->crc : 1, "data page",
                         s->entry->offset, err);
}

static int fail(ix_stream *s, pq_error *err)
{
    s->state = FAILED;
    pq_error_prefix(err, "%s: data page at offset %llu: ", s->file->name,
                    (unsigned long long)s->entry->offset);
    s->failure = *err;
    return -1;
}

/* All the entry's records are out: hold them to the index. */
static int complete(ix_stream *s, pq_error *err)
{
    if (s->rows != s->entry->rows || s->records != s->entry->records)
        return pq_error_set(err, "holds other records than indexed (%u rows, %u records; the "
                            "index says %u and %u: file changed?)", s->rows, s->records,
                            s->entry->rows, s->entry->records);
    if (vouch(s, err) < 0)
        return -1;
    s->state = ENDED;
    return 0;
}

static int next_flat(ix_stream *s, ix_record *rec, pq_error *err)
{
    pq_stream_entry e;
    int rc;
    while ((rc = next_entry(s, &e, err)) == 1) {
        uint64_t row = s->entry->first_row + s->rows++;
        s->flat_value = e.value;
        s->flat_def = e.def;
        if (!ix_flat_record(&s->shape, pq_value_list_of(&s->flat_value), &s->flat_def, row, rec))
            continue; /* a null row: no record */
        s->records++;
        return 1;
    }
    return rc;
}

/* Hand out the row just completed, if it is a record; 0 if it is not. */
static int emit_row(ix_stream *s, ix_record *rec)
{
    uint64_t row = s->entry->first_row + s->rows++;
    if (!ix_row_record(&s->row, &s->shape, row, rec)) {
        ix_row_clear(&s->row);
        return 0;
    }
    s->records++;
    s->row_out = 1;
    return 1;
}

static int next_list(ix_stream *s, ix_record *rec, pq_error *err)
{
    if (s->row_out) {
        ix_row_clear(&s->row);
        s->row_out = 0;
    }
    if (s->has_pending) {
        s->has_pending = 0;
        if (s->last_row)
            return 0;
        if (ix_row_add(&s->row, &s->pending, err) < 0)
            return -1;
    }
    for (;;) {
        pq_stream_entry e;
        int rc = next_entry(s, &e, err);
        if (rc < 0)
            return -1;
        if (rc == 1 && e.rep != 0) {
            if (!s->leading && ix_row_add(&s->row, &e, err) < 0)
                return -1;
            continue;
        }
        /* a row starts here, or the range ends */
        if (s->leading) {
            if (rc == 0 || s->page_no > 0)
                return pq_error_set(err, "no row starts in the page (file changed?)");
            s->leading = 0;
        } else if (s->row.entries > 0) {
            if (rc == 1 && s->page_no > 0) {
                /* Only the range's last page may start a row (its last
                 * row's end): the entry's rows are over. */
                if (s->page_offset + s->h.header_len + (uint64_t)s->h.compressed_size != s->end)
                    return pq_error_set(err, "a row starts before the end of the range the "
                                         "index gives (file changed?)");
                s->last_row = 1;
            }
            if (rc == 1) {
                s->pending = e;
                s->has_pending = 1;
            }
            if (emit_row(s, rec))
                return 1;
            if (s->has_pending) {
                s->has_pending = 0;
                if (s->last_row)
                    return 0;
                if (ix_row_add(&s->row, &e, err) < 0)
                    return -1;
            }
            if (rc == 0)
                return 0;
            continue;
        }
        if (rc == 0)
            return 0;
        if (ix_row_add(&s->row, &e, err) < 0)
            return -1;
    }
}

int ix_stream_next(ix_stream *s, ix_record *rec, pq_error *err)
{
    if (s->state == FAILED) {
        *err = s->failure;
        return -1;
    }
    if (s->state == ENDED)
        return 0;
    int rc = s->shape.max_rep > 0 ? next_list(s, rec, err) : next_flat(s, rec, err);
    if (rc == 0 && complete(s, err) < 0)
        rc = -1;
    return rc < 0 ? fail(s, err) : rc;
}

int ix_stream_finish(ix_stream *s, pq_error *err)
{
    if (s->state == FAILED) {
        *err = s->failure;
        return -1;
    }
    if (s->state == ENDED)
        return 0;
    if (vouch(s, err) < 0)
        return fail(s, err);
    s->state = ENDED;
    return 0;
}

size_t ix_stream_cap(void)
{
    return IX_STREAM_CAP + ix_ahead_bytes(IX_AHEAD_WINDOW, IX_AHEAD_WINDOWS_MAX);
}

/* What the reads ahead hold: they are open only while AHEAD_ON. */
static size_t ahead_held(const ix_stream *s)
{
    return s->ahead_state == AHEAD_ON || s->ahead_early ? ix_ahead_bytes(s->window, s->ahead_open)
                                                        : 0;
}

/* A stream over entry `page`, its shares of the cap set, committed for
 * itself, at the entry's start with no page open; NULL on failure. */
static ix_stream *stream_new(const ix_index *ix, uint64_t page, const ix_dict_source *dicts,
                             void **dict_handle, const ix_stream_opts *opts,
                             uint64_t *bytes_read, pq_error *err)
{
    *dict_handle = NULL;
    ix_stream *s = calloc(1, sizeof *s);
    if (!s) {
        pq_error_set(err, "out of memory for a page stream");
        return NULL;
    }
    s->ix = ix;
    s->entry = &ix->pages[page];
    s->chunk_index = ix_locate(ix, page);
    s->chunk = &ix->chunks[s->chunk_index];
    s->file_index = s->chunk->file;
    s->file = &ix->files[s->file_index];
    s->shape = ix->framing.shape;
    s->dicts = dicts;
    s->dict_handle = dict_handle;
    s->bytes_read = bytes_read;
    s->pos = s->entry->offset;
    s->end = s->entry->offset + s->entry->length;
    s->crc_learning = ix_crc_needed(0, &s->entry->crc);
    ix_entry_head *head = opts ? opts->head : NULL;
    if (head && head->bytes) { /* read and checked already: as if by read_on */
        assert(head->len <= s->entry->length);
        s->buf = head->bytes;
        s->buf_cap = s->have = head->len;
        s->pos += head->len;
        if (s->crc_learning)
            s->crc = (uint32_t)crc32(s->crc, s->buf, (uInt)s->have);
        s->moved = head->moved;
        *head = (ix_entry_head){ 0 };
    }
    s->leading = s->shape.max_rep > 0;
    size_t cap = opts && opts->cap ? opts->cap : ix_stream_cap();
    s->read_size = opts && opts->read_size                  ? opts->read_size
                   : ix->store && ix->store->stream_read_bytes ? ix->store->stream_read_bytes
                                                              : IX_STREAM_READ_SIZE;
    /* The cap's shares: the reads ahead of an entry longer than a window,
     * as deep as the cap leaves room for beside IX_STREAM_CAP's parts, if
     * IX_AHEAD_WINDOWS deep at least (kept whether or not the stream comes
     * to read ahead, so that the other shares do not depend on timing); of
     * the rest a quarter for the row being assembled, the header buffer,
     * and the rest for the page's stream, of which a quarter each at most
     * for one value and for the levels. */
    s->window = opts && opts->window ? opts->window : IX_AHEAD_WINDOW;
    s->ahead_until = opts ? opts->ahead_until : 0;
    int ahead = opts ? opts->ahead : 0;
    s->ahead_state = AHEAD_NEVER;
    if (ahead >= 0 && s->entry->length > s->window &&
        cap >= IX_STREAM_CAP + ix_ahead_bytes(s->window, IX_AHEAD_WINDOWS)) {
        s->ahead_depth = IX_AHEAD_WINDOWS;
        s->ahead_depth_max = IX_AHEAD_WINDOWS_MAX;
        while (cap < IX_STREAM_CAP + ix_ahead_bytes(s->window, s->ahead_depth_max))
            s->ahead_depth_max--;
        cap -= ix_ahead_bytes(s->window, s->ahead_depth_max);
        s->ahead_state = AHEAD_WHEN_SLOW;
    }
    size_t row_max = cap / 4;
    size_t fixed = sizeof *s + row_max + HEADER_MAX;
    size_t page_cap = cap > fixed + (1u << 20) ? cap - fixed : (1u << 20);
    ix_row_init(&s->row, row_max);
    ix_row_on_grow(&s->row, row_grows, s);
    s->page_opts = (pq_stream_opts){ .read_size = s->read_size, .value_max = page_cap / 4,
                                     .levels_max = page_cap / 4, .cap = page_cap };
    s->grow = opts ? opts->grow : NULL;
    s->grow_ctx = opts ? opts->grow_ctx : NULL;
    if (commit(s, 0, 0, err) < 0) { /* the stream itself */
        fail(s, err);
        ix_stream_close(s);
        return NULL;
    }
    return s;
}

ix_stream *ix_stream_open(const ix_index *ix, uint64_t page, const ix_dict_source *dicts,
                          void **dict_handle, const ix_stream_opts *opts, uint64_t *bytes_read,
                          pq_error *err)
{
    ix_stream *s = stream_new(ix, page, dicts, dict_handle, opts, bytes_read, err);
    if (!s)
        return NULL;
    if (s->ahead_state == AHEAD_WHEN_SLOW && opts && opts->ahead > 0)
        start_ahead(s); /* the caller knows the storage is slow */
    if (open_page(s, err) < 0) {
        fail(s, err);
        ix_stream_close(s);
        return NULL;
    }
    return s;
}

ix_stream *ix_stream_resume(const ix_index *ix, uint64_t page, const ix_dict_source *dicts,
                            void **dict_handle, const ix_stream_opts *opts, ix_stream_mark *m,
                            uint64_t *bytes_read, pq_error *err)
{
    assert(!opts || !opts->head);
    ix_stream *s = stream_new(ix, page, dicts, dict_handle, opts, bytes_read, err);
    if (!s)
        return NULL;
    if (m->page_offset < s->pos || m->page_offset >= s->end) {
        pq_error_set(err, "a mark at offset %llu is not in the entry (not resumable)",
                     (unsigned long long)m->page_offset);
        fail(s, err);
        ix_stream_close(s);
        return NULL;
    }
    s->pos = m->page_offset;
    s->page_no = m->page_no;
    s->rows = m->rows;
    s->records = m->records;
    s->leading = 0;
    s->resumed = 1;
    s->crc_learning = 0; /* it reads part of the entry */
    if (m->has_pending) { /* its value is the stream's from now on */
        s->pending_value = m->value;
        s->pending = (pq_stream_entry){ .rep = m->rep, .def = m->def, .has_value = m->has_value,
                                        .value = { .ptr = m->value, .len = m->value_len } };
        s->has_pending = 1;
        m->value = NULL;
        m->value_len = 0;
    }
    /* no reads ahead of the header and levels: the body is read from the
     * mark's block, where seek_body starts them (at once when the caller
     * knows the storage is slow, else once a read is) */
    s->ahead_after_seek = s->ahead_state == AHEAD_WHEN_SLOW && opts && opts->ahead > 0
                              ? AHEAD_ON
                              : s->ahead_state;
    s->ahead_state = AHEAD_NEVER;
    if (s->ahead_after_seek == AHEAD_ON && m->body_offset > s->pos && m->body_offset < s->end) {
        /* the body's reads ahead from where the seek will go, at once */
        uint64_t page_at = s->pos;
        s->pos = m->body_offset;
        start_ahead(s);
        if (s->ahead_state == AHEAD_ON) {
            s->ahead_early = s->ahead;
            s->early_at = m->body_offset;
            s->ahead = NULL;
        }
        s->ahead_state = AHEAD_NEVER;
        s->pos = page_at;
    }
    s->resume_at = &m->at;
    if (open_page(s, err) < 0) {
        fail(s, err);
        ix_stream_close(s);
        return NULL;
    }
    s->resume_at = NULL;
    return s;
}

/* m's own copy of a pending entry's value: 0, or -1 out of memory. */
static int dup_value(ix_stream_mark *m, const uint8_t *value, uint32_t len)
{
    if (!(m->value = malloc(len)))
        return -1;
    memcpy(m->value, value, len);
    m->value_len = len;
    return 0;
}

int ix_unit_mark_get(const ix_index *ix, uint64_t page, uint64_t unit, ix_stream_mark *m)
{
    assert(page < ix->num_pages && unit < ix->num_units);
    const ix_unit_mark *um = ix->unit_marks ? &ix->unit_marks[unit] : NULL;
    if (!um || !um->body_offset)
        return 0;
    /* the unit's rows start in its entry's first page: the mark is there */
    *m = (ix_stream_mark){ .page_offset = ix->pages[page].offset, .body_offset = um->body_offset,
                           .rows = um->rows, .records = um->records, .at = um->at,
                           .has_pending = um->has_pending, .rep = um->rep, .def = um->def,
                           .has_value = um->has_value };
    return !um->value_len || dup_value(m, um->value, um->value_len) == 0;
}

int ix_stream_mark_here(const ix_stream *s, ix_stream_mark *m)
{
    if (!ix_stream_pausable(s) || !s->ps || s->leading || s->last_row ||
        (!s->row_out && s->row.entries > 0))
        return 0;
    const pq_bytes *v = s->has_pending && s->pending.has_value ? &s->pending.value : NULL;
    if (v && v->len > IX_STREAM_MARK_VALUE_MAX)
        return 0;
    *m = (ix_stream_mark){ .page_offset = s->page_offset, .page_no = s->page_no,
                           .rows = s->rows, .records = s->records,
                           .has_pending = s->has_pending };
    if (!pq_stream_mark_here(s->ps, &m->at))
        return 0;
    m->body_offset = s->page_offset + s->h.header_len + m->at.body_at;
    if (s->has_pending) {
        m->rep = s->pending.rep;
        m->def = s->pending.def;
        m->has_value = s->pending.has_value;
    }
    return !v || !v->len || dup_value(m, v->ptr, v->len) == 0;
}

int ix_stream_mark_copy(ix_stream_mark *to, const ix_stream_mark *from)
{
    *to = *from;
    to->value = NULL;
    to->value_len = 0;
    return from->value_len ? dup_value(to, from->value, from->value_len) : 0;
}

void ix_stream_mark_free(ix_stream_mark *m)
{
    free(m->value);
    m->value = NULL;
    m->value_len = 0;
}

size_t ix_stream_mark_bytes(const ix_stream_mark *m)
{
    return sizeof *m + m->value_len;
}

void ix_entry_head_free(ix_entry_head *head)
{
    free(head->bytes);
    *head = (ix_entry_head){ 0 };
}

int ix_entry_first_header(const ix_index *ix, uint64_t page, pq_page_header *h,
                          ix_entry_head *head, uint64_t *bytes_read, pq_error *err)
{
    const ix_page *p = &ix->pages[page];
    const ix_chunk *c = &ix->chunks[ix_locate(ix, page)];
    size_t len = p->length < IX_STREAM_HEADER_PEEK ? p->length : IX_STREAM_HEADER_PEEK;
    uint8_t *buf = malloc(len ? len : 1);
    int moved = 0;
    int rc = buf ? ix_read_checked(ix, c->file, p->offset, buf, len, bytes_read, &moved, err)
                 : pq_error_set(err, "out of memory for a page header");
    if (rc == 0 && pq_page_header_parse(buf, len, h, err) < 0)
        rc = pq_error_set(err, "a page header of more than %zu bytes (not streamable)", len);
    if (rc == 0 && head)
        *head = (ix_entry_head){ .bytes = buf, .len = len, .moved = moved };
    else
        free(buf);
    if (rc < 0)
        return pq_error_prefix(err, "%s: data page at offset %llu: ",
                               ix->files[c->file].name, (unsigned long long)p->offset);
    return 0;
}

size_t ix_stream_bytes(const ix_stream *s)
{
    return sizeof *s + ahead_held(s) + s->buf_cap + ix_row_bytes(&s->row) +
           (s->ps ? pq_stream_bytes(s->ps) : 0);
}

size_t ix_stream_committed(const ix_stream *s)
{
    return sizeof *s + ahead_held(s) + s->buf_cap + ix_row_bytes(&s->row) +
           (s->ps ? pq_stream_bytes_max(s->ps) : s->opening);
}

void ix_stream_charge(ix_stream *s, ix_stream_grow_fn grow, void *ctx, size_t granted)
{
    assert(!grow || granted >= ix_stream_committed(s));
    s->grow = grow;
    s->grow_ctx = ctx;
    s->granted = granted;
}

size_t ix_stream_sheddable(const ix_stream *s)
{
    return ahead_held(s);
}

size_t ix_stream_shed(ix_stream *s)
{
    size_t freed = ix_stream_sheddable(s);
    if (freed) {
        s->unused += ix_ahead_close(s->ahead);
        s->ahead = NULL;
        s->ahead_state = AHEAD_SHED;
    }
    return freed;
}

void ix_stream_ahead_until(ix_stream *s, uint64_t offset)
{
    s->ahead_until = offset;
    /* the reads ahead open go on to the new stop, from where they began */
    ix_ahead *open = s->ahead_state == AHEAD_ON ? s->ahead : s->ahead_early;
    uint64_t stop = open ? ahead_end(s, s->ahead_from, offset) : 0;
    if (open && stop > s->ahead_stop && ix_ahead_extend(open, stop - s->ahead_from) == 0)
        s->ahead_stop = stop;
}

uint64_t ix_stream_first_read_ns(const ix_stream *s)
{
    return s->first_read_ns;
}

int ix_stream_pausable(const ix_stream *s)
{
    return s->state == RUNNING && !s->moved && !(s->ps && s->check_body_crc);
}

ix_stream *ix_stream_fork(const ix_stream *s, pq_error *err)
{
    if (!ix_stream_pausable(s) || s->dict || (!s->row_out && s->row.entries > 0)) {
        pq_error_set(err, "a page stream %s is not forkable",
                     !ix_stream_pausable(s) ? "that may not pause"
                     : s->dict             ? "holding a dictionary"
                                           : "in the middle of a row");
        return NULL;
    }
    assert(!s->ahead_early); /* taken over or closed at the resumed page's seek */
    ix_stream *f = malloc(sizeof *f);
    uint8_t *buf = s->buf_cap ? malloc(s->buf_cap) : NULL;
    if (!f || (s->buf_cap && !buf)) {
        free(f);
        free(buf);
        pq_error_set(err, "out of memory for a page stream");
        return NULL;
    }
    *f = *s; /* positions, counts, CRCs and the page header: plain values */
    f->buf = buf;
    f->pending_value = NULL; /* a resumed stream's: the fork's own copy below */
    if (buf)
        memcpy(buf, s->buf, s->have);
    /* paused: read ahead again (from pos) once continued, charged and
     * bound anew by whoever continues it */
    f->ahead = NULL;
    f->unused = 0; /* s's to report */
    if (s->ahead_state == AHEAD_ON)
        f->ahead_state = AHEAD_SHED;
    f->grow = NULL;
    f->grow_ctx = NULL;
    f->granted = 0;
    f->dicts = NULL; /* all three given by ix_stream_rebind */
    f->dict_handle = NULL;
    f->bytes_read = NULL;
    /* the row handed out last is the caller's; the fork starts the next */
    ix_row_init(&f->row, s->row.max);
    ix_row_on_grow(&f->row, row_grows, f);
    f->row_out = 0;
    f->flat_value = (pq_bytes){ 0 };
    f->ps = NULL;
    if (s->ps && !(f->ps = pq_stream_fork(s->ps, &f->h, f, s->has_pending ? &f->pending : NULL,
                                          err))) {
        ix_stream_close(f);
        return NULL;
    }
    if (s->has_pending && s->pending_value && s->pending.value.ptr == s->pending_value) {
        if (!(f->pending_value = malloc(s->pending.value.len))) {
            ix_stream_close(f);
            pq_error_set(err, "out of memory for a page stream");
            return NULL;
        }
        memcpy(f->pending_value, s->pending_value, s->pending.value.len);
        f->pending.value.ptr = f->pending_value;
    }
    assert(ix_stream_bytes(f) <= ix_stream_bytes(s) - ahead_held(s));
    return f;
}

void ix_stream_rebind(ix_stream *s, const ix_dict_source *dicts, void **dict_handle,
                      uint64_t *bytes_read)
{
    s->dicts = dicts;
    s->dict_handle = dict_handle;
    s->bytes_read = bytes_read;
}

uint64_t ix_stream_close(ix_stream *s)
{
    if (!s)
        return 0;
    pq_stream_close(s->ps);
    uint64_t unused = s->unused + ix_ahead_close(s->ahead) + ix_ahead_close(s->ahead_early);
    ix_row_free(&s->row);
    free(s->pending_value);
    free(s->buf);
    free(s);
    return unused;
}
