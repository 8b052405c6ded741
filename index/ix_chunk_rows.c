/* ix_chunk_rows: a column chunk's rows, piece by piece (ix_chunk_rows.h). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ix_chunk_rows.h"
#include "ix_record.h"

/* What a streamed page's body is read in, beyond the window: each read is
 * a round trip over slow storage (a 125 MB page, 125 of them at 1 MiB, 500
 * at 256 KiB, one after another). The stream's bound grows with its read
 * size (pq_stream.h: `in`), so where 1 MiB would take it over the cap of a
 * small mem= (ZSTD at mem=1M) the read shrinks to fit, down to
 * STREAM_READ_MIN_BYTES; a page that does not stream even at that is
 * decoded whole instead, as before. */
#define STREAM_READ_BYTES ((size_t)1 << 20)
#define STREAM_READ_MIN_BYTES ((size_t)256 << 10)

int ix_chunk_range(const ix_source *s, int leaf, int32_t g, uint64_t *begin, uint64_t *len,
                   pq_error *err)
{
    const pq_row_group *rg = &s->meta.row_groups[g];
    const pq_column_meta *m = &rg->columns[leaf];
    *begin = *len = 0;
    if (rg->num_rows < 0)
        return pq_error_set(err, "a negative row count");
    if (rg->num_rows == 0)
        return 0;
    uint64_t size = (uint64_t)s->st.st_size;
    int64_t start = m->data_page_offset;
    if (m->dictionary_page_offset > 0 && m->dictionary_page_offset < start)
        start = m->dictionary_page_offset;
    if (start < 4 || m->total_compressed_size <= 0 ||
        (uint64_t)m->total_compressed_size > size ||
        (uint64_t)start > size - (uint64_t)m->total_compressed_size)
        return pq_error_set(err, "column %s: the chunk's bytes (offset %lld, %lld bytes) lie "
                            "outside the file", s->leaves[leaf].path, (long long)start,
                            (long long)m->total_compressed_size);
    *begin = (uint64_t)start;
    *len = (uint64_t)m->total_compressed_size;
    return 0;
}

int ix_chunk_rows_open(ix_chunk_rows *cr, const ix_source *s, int leaf, int32_t g,
                       uint64_t mem, int verify_crc, uint64_t *bytes_read, uint8_t *bytes,
                       pq_error *err)
{
    const pq_leaf *l = &s->leaves[leaf];
    const pq_column_meta *m = &s->meta.row_groups[g].columns[leaf];
    memset(cr, 0, sizeof *cr);
    cr->path = l->path;
    cr->desc = (pq_column_desc){ l->type, l->type_length, l->max_def, l->max_rep, m->codec };
    cr->bounds = (ix_chunk_bounds){ m->total_uncompressed_size, m->num_values };
    cr->mem = mem;
    cr->verify_crc = verify_crc;
    uint64_t begin, len;
    int rc = 0;
    if (m->encrypted)
        rc = pq_error_set(err, "column %s is encrypted; youmufs cannot read encrypted Parquet",
                          l->path);
    else if (m->type != l->type)
        rc = pq_error_set(err, "column %s: chunk type %d differs from the schema's %d", l->path,
                          m->type, l->type);
    else
        rc = ix_chunk_range(s, leaf, g, &begin, &len, err);
    if (rc < 0) {
        free(bytes);
        return -1;
    }
    ix_window_init(&cr->w, s, begin, begin + len, IX_CHUNK_ROWS_READ_BYTES, bytes_read, NULL);
    if (bytes)
        ix_window_adopt(&cr->w, bytes, (size_t)len);
    cr->next = begin;
    return 0;
}

/* Entries [begin, end) of the piece join the row going on over pieces. */
static int carry_add(ix_chunk_rows *cr, uint32_t begin, uint32_t end, pq_error *err)
{
    if (pq_page_values_append(&cr->carry, &cr->page, begin, end, cr->desc.max_def, err) < 0)
        return -1;
    char what[64];
    uint64_t bytes = pq_page_values_bytes(&cr->carry);
    snprintf(what, sizeof what, "a row going on over pages (%llu bytes so far)",
             (unsigned long long)bytes);
    return ix_hold_check(bytes, cr->mem, what, err);
}

static const pq_dictionary *dictionary(const ix_chunk_rows *cr)
{
    return cr->has_dict ? &cr->dict : NULL;
}

/* The data page at off (header h) decoded whole into cr->page, without its
 * first `skip` entries (handed out already by a stream that could not go
 * on). */
static int decode_whole(ix_chunk_rows *cr, const pq_page_header *h, uint64_t off, uint32_t skip,
                        pq_error *err)
{
    uint64_t total = h->header_len + (uint64_t)h->compressed_size;
    const uint8_t *page;
    if (ix_page_hold_check(h, pq_packed_width(&cr->desc), cr->mem, err) < 0 ||
        !(page = ix_window_get(&cr->w, off, (size_t)total, err)))
        return -1;
    const uint8_t *body = page + h->header_len;
    if ((cr->verify_crc && pq_page_check_crc(h, body, (size_t)h->compressed_size, err) < 0) ||
        pq_page_decode(&cr->desc, h, body, (size_t)h->compressed_size, dictionary(cr),
                       &cr->page, err) < 0)
        return -1;
    if (skip > cr->page.num_levels)
        return pq_error_set(err, "data page: %u level entries decoded whole, %u streamed",
                            cr->page.num_levels, skip);
    pq_page_values_drop_front(&cr->page, skip, cr->desc.max_def);
    return 0;
}

/* opts->read_size for the page h: STREAM_READ_BYTES, less what takes the
 * stream's bound over opts->cap (0: no cap), at least STREAM_READ_MIN_BYTES. */
static void stream_read_size(const ix_chunk_rows *cr, const pq_page_header *h,
                             pq_stream_opts *opts)
{
    opts->read_size = STREAM_READ_BYTES;
    size_t need = pq_stream_memory_needed(h, &cr->desc, opts);
    if (!opts->cap || need <= opts->cap)
        return;
    size_t over = need - opts->cap;
    opts->read_size = over < STREAM_READ_BYTES - STREAM_READ_MIN_BYTES
                          ? STREAM_READ_BYTES - over : STREAM_READ_MIN_BYTES;
    /* the bound shrinks with read_size only down to the body's size */
    if (pq_stream_memory_needed(h, &cr->desc, opts) > opts->cap)
        opts->read_size = STREAM_READ_MIN_BYTES;
}

/* Stream the data page at off (header h): 1, or 0 when it cannot stream
 * (nothing held: decode it whole instead). */
static int start_stream(ix_chunk_rows *cr, const pq_page_header *h, uint64_t off,
                        pq_error *err)
{
    size_t cap = cr->mem ? (size_t)ix_hold_max(cr->mem) : 0;
    pq_stream_opts opts = { .value_max = cap / 4, .levels_max = cap / 4, .cap = cap };
    stream_read_size(cr, h, &opts);
    if (ix_body_init(&cr->body, &cr->w, h, off, opts.read_size, cr->verify_crc, err) < 0)
        return -1;
    cr->stream_h = *h; /* the stream keeps a pointer to its header */
    cr->stream = pq_stream_open(&cr->desc, &cr->stream_h, dictionary(cr), &opts, ix_body_read,
                                &cr->body, err);
    if (cr->stream) {
        cr->stream_off = off;
        cr->streamed = 0;
        return 1;
    }
    if (pq_stream_whole_instead(err))
        return 0;
    ix_body_blame_crc(h, &cr->body, err);
    return -1;
}

static void end_stream(ix_chunk_rows *cr)
{
    pq_stream_close(cr->stream);
    cr->stream = NULL;
}

/* The next piece of the page streaming into cr->page: its next level
 * entries, their values' bytes copied into page.extra. 1, or 0 when the
 * page is done (its body checked to the last byte and its CRC). A stream
 * that cannot go on (pq_stream_whole_instead) gives way to the page
 * decoded whole, less what was handed out. */
static int stream_piece(ix_chunk_rows *cr, pq_error *err)
{
    pq_page_values *v = &cr->page;
    int16_t max_def = cr->desc.max_def;
    size_t cap = IX_CHUNK_ROWS_PIECE_ENTRIES, extra_cap = IX_CHUNK_ROWS_PIECE_BYTES;
    if ((max_def > 0 && !(v->def_levels = malloc(cap * sizeof *v->def_levels))) ||
        (cr->desc.max_rep > 0 && !(v->rep_levels = malloc(cap * sizeof *v->rep_levels))) ||
        !(v->values = malloc(cap * sizeof *v->values)) || !(v->extra = malloc(extra_cap)))
        return pq_error_set(err, "out of memory for a piece of a streamed page");
    int rc = 1;
    while (v->num_levels < cap && v->extra_len < IX_CHUNK_ROWS_PIECE_BYTES) {
        pq_stream_entry e;
        if ((rc = pq_stream_next(cr->stream, &e, err)) <= 0)
            break;
        if (v->def_levels)
            v->def_levels[v->num_levels] = e.def;
        if (v->rep_levels)
            v->rep_levels[v->num_levels] = e.rep;
        v->num_levels++;
        if (!e.has_value)
            continue;
        if (e.value.len > extra_cap - v->extra_len) {
            size_t want = v->extra_len + e.value.len;
            uint8_t *grown = realloc(v->extra, want);
            if (!grown) {
                rc = pq_error_set(err, "out of memory for a value of %u bytes", e.value.len);
                break;
            }
            v->extra = grown;
            extra_cap = want;
        }
        memcpy(v->extra + v->extra_len, e.value.ptr, e.value.len);
        v->values[v->num_values++] = (pq_bytes){ NULL, e.value.len };
        v->extra_len += e.value.len;
    }
    if (rc == 0)
        rc = ix_body_check_crc(&cr->stream_h, &cr->body, err);
    if (rc < 0) {
        pq_page_values_free(v);
        memset(v, 0, sizeof *v);
        pq_page_header h = cr->stream_h;
        int whole = pq_stream_whole_instead(err);
        if (!whole)
            ix_body_blame_crc(&h, &cr->body, err);
        end_stream(cr);
        return whole ? (decode_whole(cr, &h, cr->stream_off, cr->streamed, err) < 0 ? -1 : 1)
                     : -1;
    }
    /* the values' bytes lie back to back in extra, in order */
    size_t at = 0;
    for (uint32_t i = 0; i < v->num_values; i++) {
        v->values[i].ptr = v->extra + at;
        at += v->values[i].len;
    }
    cr->streamed += v->num_levels;
    if (rc == 1)
        return 1;
    end_stream(cr);
    if (v->num_levels > 0)
        return 1;
    pq_page_values_free(v);
    memset(v, 0, sizeof *v);
    return 0;
}

/* The next piece into cr->page (a dictionary page on the way is decoded
 * into cr->dict): 1, or 0 when the chunk has no more. */
static int next_piece(ix_chunk_rows *cr, pq_error *err)
{
    if (cr->stream) {
        int rc = stream_piece(cr, err);
        if (rc != 0)
            return rc < 0 ? pq_error_prefix(err, "page at file offset %llu: ",
                                            (unsigned long long)cr->stream_off)
                          : 1;
    }
    while (cr->next < cr->w.end) {
        uint64_t off = cr->next;
        pq_page_header h;
        if (ix_window_header(&cr->w, off, &h, err) < 0 ||
            ix_page_claims_check(&h, &cr->bounds, cr->mem, err) < 0)
            goto bad;
        if ((uint64_t)h.compressed_size > cr->w.end - off - h.header_len) {
            pq_error_set(err, "its %d bytes pass the column chunk's end", h.compressed_size);
            goto bad;
        }
        cr->next = off + h.header_len + (uint64_t)h.compressed_size;
        if (h.type == PQ_PAGE_DICTIONARY) {
            const uint8_t *page;
            if (cr->has_dict) {
                pq_error_set(err, "a second dictionary page in the column chunk");
                goto bad;
            }
            if (!(page = ix_window_get(&cr->w, off, (size_t)(cr->next - off), err)) ||
                (cr->verify_crc && pq_page_check_crc(&h, page + h.header_len,
                                                     (size_t)h.compressed_size, err) < 0) ||
                pq_dictionary_decode(&cr->desc, &h, page + h.header_len,
                                     (size_t)h.compressed_size, &cr->dict, err) < 0)
                goto bad;
            cr->has_dict = 1;
            continue;
        }
        if (h.type != PQ_PAGE_DATA && h.type != PQ_PAGE_DATA_V2)
            continue; /* an index page: nothing of the rows */
        uint64_t hold = ix_page_hold_bytes(&h, pq_packed_width(&cr->desc));
        uint64_t max = ix_hold_max(cr->mem);
        if (hold > IX_CHUNK_ROWS_WHOLE_BYTES || (cr->mem && hold > max)) {
            int rc = start_stream(cr, &h, off, err);
            if (rc < 0)
                goto bad;
            if (rc == 1) {
                if ((rc = stream_piece(cr, err)) < 0)
                    goto bad;
                if (rc == 0)
                    continue; /* a page of no entries */
                return 1;
            }
        }
        if (decode_whole(cr, &h, off, 0, err) < 0)
            goto bad;
        return 1;
    bad:
        return pq_error_prefix(err, "page at file offset %llu: ", (unsigned long long)off);
    }
    return 0;
}

static pq_page_values whole(const pq_page_values *v, int16_t max_def)
{
    return ix_entries_view(v, max_def, 0, v->num_levels);
}

int ix_chunk_rows_next(ix_chunk_rows *cr, pq_page_values *run, pq_error *err)
{
    int16_t max_def = cr->desc.max_def;
    memset(run, 0, sizeof *run);
    if (cr->carry_out) {
        pq_page_values_free(&cr->carry);
        memset(&cr->carry, 0, sizeof cr->carry);
        cr->carry_out = 0;
    }
    for (;;) {
        if (cr->at < cr->page.num_levels) {
            /* cr->at starts a row; the piece's last row may go on in the
             * next piece, unless none follows or the column is flat */
            int more = cr->desc.max_rep > 0 && (cr->stream || cr->next < cr->w.end);
            uint32_t last = more ? ix_last_row_start(&cr->page) : cr->page.num_levels;
            if (last > cr->at && last <= cr->page.num_levels) {
                *run = ix_entries_view(&cr->page, max_def, cr->at, last);
                cr->at = last;
                return 1;
            }
            if (carry_add(cr, cr->at, cr->page.num_levels, err) < 0)
                return -1;
            cr->at = cr->page.num_levels;
        }
        pq_page_values_free(&cr->page);
        memset(&cr->page, 0, sizeof cr->page);
        cr->at = 0;
        int got = next_piece(cr, err);
        if (got < 0)
            return -1;
        if (got == 0) {
            if (!cr->carry.num_levels)
                return 0;
            *run = whole(&cr->carry, max_def);
            cr->carry_out = 1;
            return 1;
        }
        uint32_t start = ix_row_start(&cr->page, 0);
        if (start > 0) { /* the piece goes on with the row before */
            if (!cr->carry.num_levels)
                return pq_error_set(err, "column %s: a data page begins inside a row that "
                                    "no page before it started", cr->path);
            if (carry_add(cr, 0, start, err) < 0)
                return -1;
        }
        cr->at = start;
        if (cr->carry.num_levels && start < cr->page.num_levels) { /* that row is whole */
            *run = whole(&cr->carry, max_def);
            cr->carry_out = 1;
            return 1;
        }
    }
}

void ix_chunk_rows_close(ix_chunk_rows *cr)
{
    end_stream(cr);
    pq_page_values_free(&cr->page);
    pq_page_values_free(&cr->carry);
    if (cr->has_dict)
        pq_dictionary_free(&cr->dict);
    ix_window_free(&cr->w);
    memset(cr, 0, sizeof *cr);
}
