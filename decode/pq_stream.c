/* Entry-by-entry page decoding in bounded memory (pq_stream.h).
 *
 * Layout of a data page body (parquet.thrift, Encodings.md):
 *   v1: compressed( [rep: LE32 length + RLE hybrid] [def: same] [values] ),
 *       each level section present only when its maximum level is > 0;
 *   v2: [rep levels][def levels] uncompressed, lengths in the header, then
 *       the values section, compressed when is_compressed.
 * The levels come before all values, but the entries need a level pair and
 * a value together, so the encoded level bytes are held (a few bits per
 * entry; counted in the bound, refused beyond opts.levels_max) while the
 * values stream through the window of a pq_inflate. */
#include "pq_stream.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "pq_inflate.h"
#include "pq_meta.h"
#include "pq_rle.h"
#include "pq_values.h"

#define LEVEL_BATCH 256
#define INDEX_BATCH 64
#define LEVELS_READ ((size_t)4 << 10) /* a resumed v1 page's windows for its levels */

typedef struct level_iter {
    uint8_t *bytes;   /* owned: the encoded section */
    size_t len;
    pq_cursor c;
    pq_rle_iter it;
    uint32_t buf[LEVEL_BATCH];
    uint32_t n, i;
} level_iter;

struct pq_stream {
    const pq_column_desc *col;
    const pq_page_header *h;
    const pq_dictionary *dict;
    pq_stream_opts o;
    pq_inflate *f;
    level_iter rep, def;
    size_t bound;          /* pq_stream_memory_needed of the page */
    uint32_t entries, pos;
    uint32_t present, seen;/* values the def levels call for, and handed out */
    int64_t width;         /* bytes per value; 0 for BYTE_ARRAY */
    int dict_enc;
    pq_rle_iter idx;       /* dictionary indices */
    uint32_t idx_buf[INDEX_BATCH], idx_n, idx_i;
    uint8_t bool_byte, bool_bit, bool_val;
    int state;             /* 0 running, 1 ended, -1 failed (msg holds why) */
    pq_error failed;
};

static pq_stream_opts resolve(const pq_stream_opts *in)
{
    pq_stream_opts o = in ? *in : (pq_stream_opts){ 0 };
    if (!o.read_size)
        o.read_size = PQ_STREAM_READ_SIZE;
    if (o.read_size < 64)
        o.read_size = 64; /* room for any header a codec peeks at */
    if (!o.out_size)
        o.out_size = PQ_STREAM_OUT_SIZE;
    if (o.out_size < 64)
        o.out_size = 64; /* a codec call per few bytes would crawl */
    if (!o.snappy_window)
        o.snappy_window = PQ_STREAM_SNAPPY_WINDOW;
    if (!o.window_max)
        o.window_max = PQ_STREAM_WINDOW_MAX;
    if (!o.levels_max)
        o.levels_max = PQ_STREAM_LEVELS_MAX;
    if (!o.value_max)
        o.value_max = PQ_STREAM_VALUE_MAX;
    if (!o.cap)
        o.cap = SIZE_MAX;
    return o;
}

/* What pq_page_decode would check first, plus what streams. */
static int check_page(const pq_page_header *h, const pq_column_desc *col, pq_error *err)
{
    if (h->type != PQ_PAGE_DATA && h->type != PQ_PAGE_DATA_V2)
        return pq_error_set(err, "page type %d is not a data page", h->type);
    if (h->num_values < 0 || (uint32_t)h->num_values > PQ_MAX_PAGE_VALUES)
        return pq_error_set(err, "%d values is outside 0..%u", h->num_values,
                            PQ_MAX_PAGE_VALUES);
    if (h->uncompressed_size < 0 || (size_t)h->uncompressed_size > PQ_MAX_PAGE_BYTES ||
        h->compressed_size < 0)
        return pq_error_set(err, "sizes out of range (uncompressed %d, compressed %d)",
                            h->uncompressed_size, h->compressed_size);
    if (col->max_def < 0 || col->max_rep < 0)
        return pq_error_set(err, "negative maximum levels in the column description");
    if (h->type == PQ_PAGE_DATA_V2 &&
        (h->rep_levels_len < 0 || h->def_levels_len < 0 ||
         (int64_t)h->rep_levels_len + h->def_levels_len > h->compressed_size ||
         (int64_t)h->rep_levels_len + h->def_levels_len > h->uncompressed_size))
        return pq_error_set(err, "level lengths %d + %d do not fit the page",
                            h->rep_levels_len, h->def_levels_len);
    if (h->type == PQ_PAGE_DATA &&
        ((col->max_rep > 0 && h->rep_encoding != PQ_ENC_RLE) ||
         (col->max_def > 0 && h->def_encoding != PQ_ENC_RLE)))
        return pq_error_set(err, "levels that are not RLE-encoded are not streamable");
    if (h->encoding == PQ_ENC_PLAIN) {
        if (pq_value_width(col) < 0)
            return pq_error_set(err, "PLAIN: unsupported physical type %d (type_length %d)",
                                col->type, col->type_length);
    } else if (h->encoding != PQ_ENC_PLAIN_DICTIONARY && h->encoding != PQ_ENC_RLE_DICTIONARY) {
        return pq_error_set(err, "value encoding %d (neither PLAIN nor dictionary) is not "
                                 "streamable", h->encoding);
    }
    return pq_inflate_supported(h->type == PQ_PAGE_DATA_V2 && !h->is_compressed
                                    ? PQ_UNCOMPRESSED : col->codec,
                                err);
}

/* The values section as the inflate sees it, and the window it needs. */
typedef struct section {
    int codec;
    uint64_t clen, ulen;
    size_t value_need, levels;
} section;

static section page_section(const pq_page_header *h, const pq_column_desc *col,
                            const pq_stream_opts *o)
{
    section s;
    int v1 = h->type == PQ_PAGE_DATA;
    size_t lv = v1 ? 0 : (size_t)h->rep_levels_len + (size_t)h->def_levels_len;
    s.codec = !v1 && !h->is_compressed ? PQ_UNCOMPRESSED : col->codec;
    s.clen = (uint64_t)h->compressed_size - lv;
    s.ulen = (uint64_t)h->uncompressed_size - lv;
    int64_t w = pq_value_width(col);
    if (h->encoding != PQ_ENC_PLAIN)
        s.value_need = PQ_RLE_STEP_BYTES;
    else if (w == 0)
        s.value_need = o->value_max + 4;
    else
        s.value_need = (size_t)w;
    if (v1 && s.value_need < 4)
        s.value_need = 4; /* the level sections' length prefixes */
    if (!v1)
        s.levels = lv;
    else if (col->max_rep > 0 || col->max_def > 0)
        s.levels = s.ulen < o->levels_max ? (size_t)s.ulen : o->levels_max;
    else
        s.levels = 0;
    return s;
}

size_t pq_stream_memory_needed(const pq_page_header *h, const pq_column_desc *col,
                               const pq_stream_opts *opts)
{
    if (check_page(h, col, NULL) < 0)
        return 0;
    pq_stream_opts o = resolve(opts);
    section sec = page_section(h, col, &o);
    return sizeof(pq_stream) + pq_inflate_bound(sec.codec, sec.clen, sec.ulen, sec.value_need, &o) +
           sec.levels;
}

/* ---- levels ---- */

static void level_start(level_iter *l, int max, uint32_t count)
{
    l->c = pq_cursor_make(l->bytes, l->len);
    pq_rle_iter_init(&l->it, pq_bit_width((uint32_t)max), count);
    l->n = l->i = 0;
}

/* The next batch of levels into l->buf (out of line: level_next's fast
 * path is a load and a compare, inlined where each entry is taken). */
static __attribute__((noinline)) int level_refill(level_iter *l, const char *what,
                                                   pq_error *err)
{
    while (l->i == l->n) {
        int64_t n = pq_rle_iter_read(&l->it, &l->c, l->buf, LEVEL_BATCH, err);
        if (n < 0)
            return pq_error_prefix(err, "%s: ", what);
        l->n = (uint32_t)n;
        l->i = 0;
    }
    return 0;
}

static __attribute__((noinline, cold)) int level_over(const level_iter *l, uint32_t v, int max,
                                                      const char *what, pq_error *err)
{
    return pq_error_set(err, "%s: level %u of entry %u exceeds the maximum %d", what, v,
                        l->it.done - (l->n - l->i) - 1, max);
}

static inline int level_next(level_iter *l, int max, uint16_t *out, const char *what,
                             pq_error *err)
{
    if (l->i == l->n && level_refill(l, what, err) < 0)
        return -1;
    uint32_t v = l->buf[l->i++];
    if (v > (uint32_t)max)
        return level_over(l, v, max, what, err);
    *out = (uint16_t)v;
    return 0;
}

/* How many of the next `count` levels equal `max`, each checked as
 * level_next would: an RLE run at once (a page's levels are mostly runs:
 * a stream resumed at a mark near the end of one of DuckDB's pages of
 * tokens passes millions), bit-packed ones a batch at a time. */
static int levels_at_max(level_iter *l, int max, uint32_t count, uint32_t *at_max,
                         const char *what, pq_error *err)
{
    uint32_t k = 0;
    while (count > 0) {
        if (l->i == l->n) {
            uint32_t value, left;
            int run = pq_rle_iter_run(&l->it, &l->c, &value, &left, err);
            if (run < 0)
                return pq_error_prefix(err, "%s: ", what);
            if (run > 0 && value <= (uint32_t)max) {
                uint32_t n = left < count ? left : count;
                pq_rle_iter_skip_run(&l->it, n);
                k += value == (uint32_t)max ? n : 0;
                count -= n;
                continue;
            }
            if (level_refill(l, what, err) < 0) /* a run over the maximum is named there */
                return -1;
        }
        uint32_t n = l->n - l->i < count ? l->n - l->i : count;
        const uint32_t *b = l->buf + l->i;
        uint32_t over = 0;
        for (uint32_t j = 0; j < n; j++) {
            k += b[j] == (uint32_t)max;
            over |= b[j] > (uint32_t)max;
        }
        if (over) { /* the first one over, named as level_next names it */
            uint32_t j = 0;
            while (b[j] <= (uint32_t)max)
                j++;
            l->i += j + 1;
            return level_over(l, b[j], max, what, err);
        }
        l->i += n;
        count -= n;
    }
    *at_max = k;
    return 0;
}

/* Copy n bytes from the read function (v2 levels are not compressed). */
static int read_raw(pq_stream_read_fn read, void *ctx, uint8_t *dst, size_t n, pq_error *err)
{
    for (size_t at = 0; at < n;) {
        size_t got = 0;
        if (read(ctx, dst + at, n - at, &got, err) < 0)
            return -1;
        if (got == 0 || got > n - at)
            return pq_error_set(err, "page body ends after %zu of %zu level bytes", at, n);
        at += got;
    }
    return 0;
}

/* v1: a LE32 length, then that many bytes, from the decompressed body. */
static int read_section(pq_stream *s, level_iter *l, size_t *budget, const char *what,
                        pq_error *err)
{
    const uint8_t *p;
    int64_t avail = pq_inflate_ensure(s->f, 4, &p, err);
    if (avail < 0)
        return -1;
    uint32_t len;
    pq_cursor c = pq_cursor_make(p, (size_t)avail);
    if (!pq_cursor_le32(&c, &len))
        return pq_error_set(err, "%s: 4-byte length is truncated (%lld bytes left)", what,
                            (long long)avail);
    if (len > *budget)
        return pq_error_set(err, "%s: %u bytes exceed the stream's level limit of %zu (not "
                                 "streamable at this limit)",
                            what, len, *budget);
    pq_inflate_consume(s->f, 4);
    if (len && !(l->bytes = malloc(len)))
        return pq_error_set(err, "%s: out of memory for %u bytes", what, len);
    l->len = len;
    *budget -= len;
    for (size_t at = 0; at < len;) {
        avail = pq_inflate_ensure(s->f, 1, &p, err);
        if (avail < 0)
            return -1;
        if (avail == 0)
            return pq_error_set(err, "%s: length %u exceeds the %zu bytes left", what, len, at);
        size_t n = (size_t)avail < len - at ? (size_t)avail : len - at;
        memcpy(l->bytes + at, p, n);
        pq_inflate_consume(s->f, n);
        at += n;
    }
    return 0;
}

static int open_levels(pq_stream *s, pq_stream_read_fn read, void *ctx, pq_error *err)
{
    const pq_page_header *h = s->h;
    if (h->type == PQ_PAGE_DATA_V2) {
        s->rep.len = (size_t)h->rep_levels_len;
        s->def.len = (size_t)h->def_levels_len;
        s->rep.bytes = s->rep.len ? malloc(s->rep.len) : NULL;
        s->def.bytes = s->def.len ? malloc(s->def.len) : NULL;
        if ((s->rep.len && !s->rep.bytes) || (s->def.len && !s->def.bytes))
            return pq_error_set(err, "out of memory for %zu level bytes",
                                s->rep.len + s->def.len);
        if (read_raw(read, ctx, s->rep.bytes, s->rep.len, err) < 0 ||
            read_raw(read, ctx, s->def.bytes, s->def.len, err) < 0)
            return -1;
    }
    return 0;
}

/* v1: the level sections, from the start of the inflate. */
static int read_v1_levels(pq_stream *s, pq_error *err)
{
    const pq_column_desc *col = s->col;
    size_t budget = page_section(s->h, col, &s->o).levels;
    if (col->max_rep > 0 && read_section(s, &s->rep, &budget, "repetition levels", err) < 0)
        return -1;
    if (col->max_def > 0 && read_section(s, &s->def, &budget, "definition levels", err) < 0)
        return -1;
    return 0;
}

/* v1 level sections come out of the inflate; then count the values the def
 * levels call for (one pass over the held bytes, checking them). */
static int count_present(pq_stream *s, pq_error *err)
{
    const pq_column_desc *col = s->col;
    if (s->h->type == PQ_PAGE_DATA && read_v1_levels(s, err) < 0)
        return -1;
    s->present = s->entries;
    if (col->max_def > 0) {
        level_start(&s->def, col->max_def, s->entries);
        if (levels_at_max(&s->def, col->max_def, s->entries, &s->present, "definition levels",
                          err) < 0)
            return -1;
        level_start(&s->def, col->max_def, s->entries);
    }
    if (col->max_rep > 0)
        level_start(&s->rep, col->max_rep, s->entries);
    return 0;
}

static const char *page_kind(const pq_page_header *h)
{
    return h->type == PQ_PAGE_DATA_V2 ? "data page v2" : "data page";
}

/* A stream over the page, checked and sized, holding nothing yet. */
static pq_stream *stream_new(const pq_column_desc *col, const pq_page_header *h,
                             const pq_dictionary *dict, const pq_stream_opts *opts,
                             pq_error *err)
{
    const char *what = page_kind(h);
    if (check_page(h, col, err) < 0) {
        pq_error_prefix(err, "%s: ", what);
        return NULL;
    }
    pq_stream_opts o = resolve(opts);
    size_t bound = pq_stream_memory_needed(h, col, &o);
    if (bound > o.cap) {
        pq_error_set(err, "%s: streaming needs %zu bytes, over the cap of %zu (not streamable "
                          "at this limit)",
                     what, bound, o.cap);
        return NULL;
    }
    if (h->encoding != PQ_ENC_PLAIN && !dict && h->num_values > 0) {
        pq_error_set(err, "%s: values are dictionary-encoded but the column chunk has no "
                          "dictionary page",
                     what);
        return NULL;
    }
    pq_stream *s = calloc(1, sizeof *s);
    if (!s) {
        pq_error_set(err, "%s: out of memory for a page stream", what);
        return NULL;
    }
    s->col = col;
    s->h = h;
    s->dict = dict;
    s->o = o;
    s->bound = bound;
    s->entries = (uint32_t)h->num_values;
    s->width = pq_value_width(col);
    s->dict_enc = h->encoding != PQ_ENC_PLAIN;
    return s;
}

pq_stream *pq_stream_open(const pq_column_desc *col, const pq_page_header *h,
                          const pq_dictionary *dict, const pq_stream_opts *opts,
                          pq_stream_read_fn read, void *ctx, pq_error *err)
{
    pq_stream *s = stream_new(col, h, dict, opts, err);
    if (!s)
        return NULL;
    section sec = page_section(h, col, &s->o);
    if (open_levels(s, read, ctx, err) < 0 ||
        !(s->f = pq_inflate_open(sec.codec, sec.clen, sec.ulen, sec.value_need, &s->o, read,
                                 ctx, err)) ||
        count_present(s, err) < 0) {
        pq_stream_close(s);
        pq_error_prefix(err, "%s: ", page_kind(h));
        return NULL;
    }
    assert(pq_stream_bytes(s) <= pq_stream_bytes_max(s) && pq_stream_bytes_max(s) <= s->bound);
    return s;
}

/* ---- marks ---- */

/* Values a mark can come back to: PLAIN, each value's bytes where the
 * previous one's end (BOOLEAN packs 8 to a byte; dictionary indices run in
 * RLE runs), in a section with restart points. */
static int markable(const pq_stream *s, int codec)
{
    return !s->dict_enc && s->col->type != PQ_BOOLEAN &&
           (codec == PQ_UNCOMPRESSED || codec == PQ_SNAPPY);
}

int pq_stream_mark_here(const pq_stream *s, pq_stream_mark *m)
{
    uint64_t at, c, u;
    section sec = page_section(s->h, s->col, &s->o);
    if (s->state != 0 || !markable(s, sec.codec))
        return 0;
    at = pq_inflate_offset(s->f);
    if (pq_inflate_restart(s->f, at, &c, &u) < 0)
        return 0;
    int v1 = s->h->type == PQ_PAGE_DATA;
    *m = (pq_stream_mark){ .pos = s->pos, .seen = s->seen, .present = s->present,
                           .value_at = at, .restart_c = c, .restart_u = u,
                           .body_at = (v1 ? 0 : sec.levels) + c };
    return 1;
}

/* Position s, opened by stream_new, at mark m (pq_stream_resume). */
static int resume(pq_stream *s, pq_stream_read_fn read, pq_stream_seek_fn seek, void *ctx,
                  const pq_stream_mark *m, pq_error *err)
{
    const pq_column_desc *col = s->col;
    int v1 = s->h->type == PQ_PAGE_DATA;
    section sec = page_section(s->h, col, &s->o);
    if (!markable(s, sec.codec))
        return pq_error_set(err, "its values have no marks (not resumable)");
    if (m->pos > s->entries || m->present > s->entries || m->seen > m->present ||
        m->seen > m->pos || m->restart_u > m->value_at || m->value_at > sec.ulen ||
        m->body_at != (v1 ? 0 : sec.levels) + m->restart_c)
        return pq_error_set(err, "a mark at entry %u is not one of this page's (not resumable)",
                            m->pos);
    if (open_levels(s, read, ctx, err) < 0)
        return -1;
    if (v1 && (col->max_rep > 0 || col->max_def > 0)) { /* the body's first bytes */
        /* decompressed through small windows, so that little past them is:
         * a flat column's levels are usually a few bytes, and are read
         * through small windows too. A list's hold a level or two per
         * value, tens of KiB compressed in one of DuckDB's pages of tokens,
         * which 4 KiB reads took in 8 round trips a resume: they are read
         * in the stream's own. */
        pq_stream_opts small = s->o;
        small.out_size = small.out_size < LEVELS_READ ? small.out_size : LEVELS_READ;
        if (col->max_rep == 0)
            small.read_size = small.read_size < LEVELS_READ ? small.read_size : LEVELS_READ;
        s->f = pq_inflate_open(sec.codec, sec.clen, sec.ulen, sec.value_need, &small, read, ctx,
                               err);
        if (!s->f || read_v1_levels(s, err) < 0)
            return -1;
        pq_inflate_close(s->f);
        s->f = NULL;
    }
    if (seek(ctx, m->body_at, err) < 0 ||
        !(s->f = pq_inflate_open_at(sec.codec, sec.clen, sec.ulen, sec.value_need, &s->o, read,
                                    ctx, m->restart_c, m->restart_u, err)))
        return -1;
    for (uint64_t left = m->value_at - m->restart_u; left > 0;) {
        const uint8_t *p;
        int64_t avail = pq_inflate_ensure(s->f, 1, &p, err);
        if (avail < 0)
            return -1;
        if (avail == 0)
            return pq_error_set(err, "the section ends before the mark at byte %llu",
                                (unsigned long long)m->value_at);
        size_t n = (uint64_t)avail < left ? (size_t)avail : (size_t)left;
        pq_inflate_consume(s->f, n);
        left -= n;
    }
    /* the levels of the entries before the mark: their values must be the
     * mark's (the count of the whole page is the mark's, from the open) */
    if (col->max_rep > 0)
        level_start(&s->rep, col->max_rep, s->entries);
    if (col->max_def > 0)
        level_start(&s->def, col->max_def, s->entries);
    uint32_t seen = m->pos, reps_at_max; /* without def levels every entry is a value */
    if ((col->max_rep > 0 && levels_at_max(&s->rep, col->max_rep, m->pos, &reps_at_max,
                                           "repetition levels", err) < 0) ||
        (col->max_def > 0 &&
         levels_at_max(&s->def, col->max_def, m->pos, &seen, "definition levels", err) < 0))
        return -1;
    if (seen != m->seen)
        return pq_error_set(err, "%u values before the mark at entry %u, the mark says %u",
                            seen, m->pos, m->seen);
    s->pos = m->pos;
    s->seen = m->seen;
    s->present = m->present;
    return 0;
}

pq_stream *pq_stream_resume(const pq_column_desc *col, const pq_page_header *h,
                            const pq_dictionary *dict, const pq_stream_opts *opts,
                            pq_stream_read_fn read, pq_stream_seek_fn seek, void *ctx,
                            const pq_stream_mark *m, pq_error *err)
{
    pq_stream *s = stream_new(col, h, dict, opts, err);
    if (!s)
        return NULL;
    if (resume(s, read, seek, ctx, m, err) < 0) {
        pq_stream_close(s);
        pq_error_prefix(err, "%s: resumed at entry %u: ", page_kind(h), m->pos);
        return NULL;
    }
    assert(pq_stream_bytes(s) <= pq_stream_bytes_max(s) && pq_stream_bytes_max(s) <= s->bound);
    return s;
}

int pq_stream_resume_instead(const pq_error *err)
{
    return strstr(err->msg, "not resumable") != NULL;
}

/* ---- values ---- */

static int value_plain(pq_stream *s, pq_bytes *v, pq_error *err)
{
    const uint8_t *p;
    int64_t avail;
    if (s->col->type == PQ_BOOLEAN) { /* one bit per value, LSB first */
        if (s->bool_bit == 0) {
            if ((avail = pq_inflate_ensure(s->f, 1, &p, err)) < 0)
                return -1;
            if (avail < 1)
                return pq_error_set(err, "PLAIN BOOLEAN: section ends at value %u", s->seen);
            s->bool_byte = p[0];
            pq_inflate_consume(s->f, 1);
        }
        s->bool_val = (s->bool_byte >> s->bool_bit) & 1;
        s->bool_bit = (uint8_t)((s->bool_bit + 1) & 7);
        v->ptr = &s->bool_val;
        v->len = 1;
        return 0;
    }
    size_t head = s->width ? 0 : 4, len = (size_t)s->width;
    if ((avail = pq_inflate_ensure(s->f, head ? 4 : len, &p, err)) < 0)
        return -1;
    if (head) {
        uint32_t n;
        pq_cursor c = pq_cursor_make(p, (size_t)avail);
        if (!pq_cursor_le32(&c, &n))
            return pq_error_set(err, "PLAIN BYTE_ARRAY: length of value %u at byte %llu is "
                                     "truncated",
                                s->seen, (unsigned long long)pq_inflate_offset(s->f));
        if (n > s->o.value_max)
            return pq_error_set(err, "PLAIN BYTE_ARRAY: value %u of %u bytes exceeds the "
                                     "stream's value limit of %zu (not streamable at this "
                                     "limit)",
                                s->seen, n, s->o.value_max);
        len = n;
        if ((avail = pq_inflate_ensure(s->f, 4 + len, &p, err)) < 0)
            return -1;
    }
    if ((size_t)avail < head + len)
        return pq_error_set(err, "PLAIN: value %u at byte %llu needs %zu bytes, %lld left",
                            s->seen, (unsigned long long)pq_inflate_offset(s->f), head + len,
                            (long long)avail);
    v->ptr = p + head;
    v->len = (uint32_t)len;
    pq_inflate_consume(s->f, head + len);
    return 0;
}

static int value_dict(pq_stream *s, pq_bytes *v, pq_error *err)
{
    const uint8_t *p;
    int64_t avail;
    if (s->seen == 0) { /* one byte of bit width, then the hybrid runs */
        if ((avail = pq_inflate_ensure(s->f, 1, &p, err)) < 0)
            return -1;
        if (avail < 1)
            return pq_error_set(err, "dictionary indices: bit width byte is missing");
        if (p[0] > 32)
            return pq_error_set(err, "dictionary indices: bit width %d is more than 32", p[0]);
        pq_rle_iter_init(&s->idx, p[0], s->present);
        pq_inflate_consume(s->f, 1);
    }
    while (s->idx_i == s->idx_n) {
        if ((avail = pq_inflate_ensure(s->f, PQ_RLE_STEP_BYTES, &p, err)) < 0)
            return -1;
        pq_cursor c = pq_cursor_make(p, (size_t)avail);
        int64_t n = pq_rle_iter_read(&s->idx, &c, s->idx_buf, INDEX_BATCH, err);
        if (n < 0)
            return pq_error_prefix(err, "dictionary indices: ");
        pq_inflate_consume(s->f, (size_t)avail - c.left);
        s->idx_n = (uint32_t)n;
        s->idx_i = 0;
    }
    uint32_t i = s->idx_buf[s->idx_i++];
    if (i >= s->dict->count)
        return pq_error_set(err, "dictionary index %u of value %u is out of range (dictionary "
                                 "has %u entries)",
                            i, s->seen, s->dict->count);
    *v = s->dict->values[i];
    return 0;
}

static int fail(pq_stream *s, pq_error *err)
{
    const char *what = s->h->type == PQ_PAGE_DATA_V2 ? "data page v2" : "data page";
    pq_error_prefix(err, "%s: entry %u of %u: ", what, s->pos, s->entries);
    s->state = -1;
    if (err)
        s->failed = *err;
    else
        pq_error_set(&s->failed, "%s: failed earlier", what);
    return -1;
}

int pq_stream_next(pq_stream *s, pq_stream_entry *e, pq_error *err)
{
    if (s->state != 0) {
        if (s->state < 0 && err)
            *err = s->failed;
        return s->state > 0 ? 0 : -1;
    }
    const pq_column_desc *col = s->col;
    if (s->pos == s->entries) {
        assert(s->seen == s->present); /* each present entry took one value */
        if (pq_inflate_finish(s->f, err) < 0)
            return fail(s, err);
        s->state = 1;
        return 0;
    }
    memset(e, 0, sizeof *e);
    if ((col->max_rep > 0 &&
         level_next(&s->rep, col->max_rep, &e->rep, "repetition levels", err) < 0) ||
        (col->max_def > 0 &&
         level_next(&s->def, col->max_def, &e->def, "definition levels", err) < 0))
        return fail(s, err);
    e->has_value = e->def == col->max_def;
    if (e->has_value) {
        if ((s->dict_enc ? value_dict(s, &e->value, err) : value_plain(s, &e->value, err)) < 0)
            return fail(s, err);
        s->seen++;
    }
    s->pos++;
    assert(pq_stream_bytes(s) <= s->bound);
    return 1;
}

int64_t pq_stream_skip(pq_stream *s, uint64_t n, pq_error *err)
{
    pq_stream_entry e;
    uint64_t done = 0;
    for (; done < n; done++) {
        int rc = pq_stream_next(s, &e, err);
        if (rc < 0)
            return -1;
        if (rc == 0)
            break;
    }
    return (int64_t)done;
}

/* A copy of the level section l, its cursor at the same byte. */
static int level_copy(level_iter *to, const level_iter *from)
{
    *to = *from;
    if (!from->bytes)
        return 0;
    if (!(to->bytes = malloc(from->len)))
        return -1;
    memcpy(to->bytes, from->bytes, from->len);
    if (from->c.p) /* set by level_start, within bytes */
        to->c.p = to->bytes + (from->c.p - from->bytes);
    return 0;
}

pq_stream *pq_stream_fork(const pq_stream *s, const pq_page_header *h, void *ctx,
                          pq_stream_entry *last, pq_error *err)
{
    if (s->state != 0) {
        pq_error_set(err, "a page stream that %s is not forkable",
                     s->state > 0 ? "ended" : "failed");
        return NULL;
    }
    pq_stream *t = malloc(sizeof *t);
    if (!t) {
        pq_error_set(err, "out of memory for a page stream");
        return NULL;
    }
    *t = *s;
    t->h = h;
    t->f = NULL;
    t->rep.bytes = t->def.bytes = NULL;
    const uint8_t *value = last && last->has_value ? last->value.ptr : NULL;
    if (level_copy(&t->rep, &s->rep) < 0 || level_copy(&t->def, &s->def) < 0) {
        pq_error_set(err, "out of memory for %zu level bytes", s->rep.len + s->def.len);
        pq_stream_close(t);
        return NULL;
    }
    if (!(t->f = pq_inflate_fork(s->f, ctx, &value, err))) {
        pq_stream_close(t);
        return NULL;
    }
    if (value == &s->bool_val)
        value = &t->bool_val;
    if (last && last->has_value)
        last->value.ptr = value; /* else in the dictionary, shared */
    assert(pq_stream_bytes(t) == pq_stream_bytes(s));
    return t;
}

uint32_t pq_stream_present(const pq_stream *s)
{
    return s->present;
}

int pq_stream_rows_starting(const pq_stream *s, uint16_t min_def, uint32_t *rows,
                            pq_error *err)
{
    const pq_column_desc *col = s->col;
    /* copies: their bytes are held as long as s, walked from the start */
    level_iter rep = s->rep, def = s->def;
    if (col->max_rep > 0)
        level_start(&rep, col->max_rep, s->entries);
    if (col->max_def > 0)
        level_start(&def, col->max_def, s->entries);
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->entries; i++) {
        uint16_t r = 0, d = 0;
        if ((col->max_rep > 0 &&
             level_next(&rep, col->max_rep, &r, "repetition levels", err) < 0) ||
            (col->max_def > 0 && level_next(&def, col->max_def, &d, "definition levels", err) < 0))
            return -1;
        n += r == 0 && d >= min_def;
    }
    *rows = n;
    return 0;
}

uint32_t pq_stream_position(const pq_stream *s)
{
    return s->pos;
}

uint32_t pq_stream_entries(const pq_stream *s)
{
    return s->entries;
}

size_t pq_stream_bytes(const pq_stream *s)
{
    return sizeof *s + s->rep.len + s->def.len + (s->f ? pq_inflate_bytes(s->f) : 0);
}

size_t pq_stream_bytes_max(const pq_stream *s)
{
    return sizeof *s + s->rep.len + s->def.len + (s->f ? pq_inflate_bytes_max(s->f) : 0);
}

void pq_stream_close(pq_stream *s)
{
    if (!s)
        return;
    pq_inflate_close(s->f);
    free(s->rep.bytes);
    free(s->def.bytes);
    free(s);
}

int pq_stream_whole_instead(const pq_error *err)
{
    return strstr(err->msg, "not streamable") || strstr(err->msg, "beyond the stream's window");
}
