/* The mount-time page pass over one column chunk: find every data page (from
 * the OffsetIndex, or by walking page headers), decode it once, and record
 * its rows, records and framed size. The chunk is read sequentially through
 * a window of a few MiB, so the pass costs one large read per window.
 *
 * Large pages (a whole decode would take more than ix_scan.stream_page_bytes)
 * are not decoded whole but streamed (pq_stream.h): their body is read in
 * small reads, straight from the file, and their rows assembled entry by
 * entry (ix_row.h), so the pass holds a few MiB whatever the page size. The
 * entries it makes are the same either way. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ix_gate.h"
#include "ix_internal.h"
#include "ix_others_file.h"
#include "ix_row.h"
#include "ix_window.h"
#include "pq_page.h"
#include "pq_stream.h"

/* Streaming (see the top): the default ix_scan.stream_page_bytes; what a
 * whole decode is taken to cost per level entry (value slice, levels and a
 * record: about what the read path charges, yfs_decode_bound); the reads a
 * stream asks for; the most one assembled row may take (a row continued
 * from the page before, and one of this page, may be held at once); and the
 * most a stream may hold (its windows, levels and one value of up to
 * PQ_STREAM_VALUE_MAX). A page over a limit is decoded whole. */
#define STREAM_PAGE_BYTES ((uint64_t)16 << 20)
#define WHOLE_BYTES_PER_ENTRY 40u
#define STREAM_READ_BYTES ((size_t)256 << 10)
#define STREAM_ROW_BYTES ((size_t)4 << 20)
#define STREAM_CAP_BYTES ((size_t)32 << 20)

/* The marks at the units of an entry (ix_unit_mark), made as its page
 * streams: its units' first records split from the records its levels say
 * start in the page (values a flat page's call for, rows a list's start). */
typedef struct entry_marks {
    ix_unit_mark *at; /* `units` entries (the first never set), or NULL */
    uint32_t units, records;
    uint32_t next;    /* the unit whose mark is to be made next */
} entry_marks;

static void entry_marks_drop(entry_marks *em)
{
    free(em->at);
    *em = (entry_marks){ 0 };
}

typedef struct scan_state {
    ix_scan *scan;
    ix_window w;
    pq_page_header dict_header; /* of the dictionary page at scan->dict_offset */
    pq_dictionary dict;
    int dict_decoded;   /* decoded once a page needs it */
    uint64_t rows_seen; /* rows of the chunk's pages so far */
    uint32_t cap;
    /* Repeated columns: the last row of the latest page may go on in the
     * next pages. Its entries so far (copied out of their pages) wait in
     * open_row until a page starts a new row; then it is measured into the
     * index entry it started in, whose byte range grows to cover the pages
     * it continued in. */
    int row_open;
    pq_page_values open_row;
    uint32_t open_entry; /* scan->pages index of the entry the open row belongs to */
    /* Framed sizes of the records of the entry being measured, in record
     * order, for its shuffle units (ix_index.h). */
    uint32_t *sizes;
    uint32_t num_sizes, sizes_cap;
    /* Once a page of the chunk has streamed, every later one streams too (or,
     * if it cannot, is decoded whole), and the open row lives in `open`
     * instead of open_row. `row` assembles the rows of the page streaming. */
    int streaming;
    ix_row open, row;
    /* The framed sizes of the records of the page streaming, kept apart
     * until the page is done (a page that cannot stream is then taken again
     * whole): they become `sizes` then. */
    uint32_t *page_sizes;
    uint32_t page_sizes_cap;
    /* several columns: the others' values of the records measured, read
     * through one window (their rows are consecutive) */
    ix_others_window *window;
    /* The marks at the units of the page streaming, and (lists) of the open
     * entry, whose last row goes on in the pages after it: they are its
     * units' once it is measured with as many records as they were split
     * for. */
    entry_marks page_marks, open_marks;
    uint64_t page_body; /* the file offset of the page's body */
} scan_state;

static int add_page(scan_state *st, const ix_page *pg, pq_error *err)
{
    ix_scan *scan = st->scan;
    if (scan->num_pages == st->cap) {
        uint32_t cap = st->cap ? st->cap * 2 : 16;
        ix_page *grown = realloc(scan->pages, cap * sizeof *grown);
        if (!grown)
            return pq_error_set(err, "out of memory for the page index");
        scan->pages = grown;
        st->cap = cap;
    }
    scan->pages[scan->num_pages++] = *pg;
    return 0;
}

/* Framed bytes of a page with `records` records and `value_bytes` bytes of
 * values, when the framing's sizes follow from counts alone (len32 of text,
 * raw in the column's own dtype, of a flat column); -1 otherwise. */
static int64_t size_from_counts(const ix_scan *scan, uint64_t records, int64_t value_bytes)
{
    const ix_framing *f = scan->framing;
    if (f->shape.nested)
        return -1;
    if (f->format == IX_FORMAT_LEN32)
        return value_bytes < 0 ? -1 : (int64_t)(4 * records) + value_bytes;
    ix_dtype own;
    if (f->format == IX_FORMAT_RAW && ix_dtype_default(&f->type, &own, NULL) == 0 &&
        own == f->dtype)
        return (int64_t)(records * ix_dtype_size(f->dtype) * (f->has_sep ? 2 : 1));
    return -1;
}

/* Append one framed size to *sizes (*num of them, room for *cap). */
static int append_size(uint32_t **sizes, uint32_t *num, uint32_t *cap, uint32_t size,
                       pq_error *err)
{
    if (*num == *cap) {
        uint32_t grown_cap = *cap ? *cap * 2 : 64;
        uint32_t *grown = realloc(*sizes, grown_cap * sizeof *grown);
        if (!grown)
            return pq_error_set(err, "out of memory measuring a page");
        *sizes = grown;
        *cap = grown_cap;
    }
    (*sizes)[(*num)++] = size;
    return 0;
}

/* Measure one record into pg (records, framed) and append its framed size,
 * refusing values the framing cannot carry (a newline in text, a number
 * outside the raw dtype), and a record larger than the mount's mem= can
 * build a segment of (ix_claims.h). */
static int take_record(const scan_state *st, const ix_record *r, ix_page *pg, uint32_t **sizes,
                       uint32_t *num, uint32_t *cap, pq_error *err)
{
    const ix_scan *scan = st->scan;
    ix_sink count = ix_sink_counter();
    count.window = st->window;
    if (ix_frame(scan->framing, r, &count, err) < 0)
        return -1;
    if (count.size > UINT32_MAX)
        return pq_error_set(err, "row %llu frames to %llu bytes, over 4 GiB",
                            (unsigned long long)r->row, (unsigned long long)count.size);
    if (count.size > ix_hold_max(scan->mem)) {
        char what[96];
        snprintf(what, sizeof what, "row %llu frames to a record of %llu bytes",
                 (unsigned long long)r->row, (unsigned long long)count.size);
        return ix_hold_check(count.size, scan->mem, what, err);
    }
    uint32_t size = (uint32_t)count.size;
    pg->records++;
    pg->framed += size;
    return append_size(sizes, num, cap, size, err);
}

/* The page's records: count them and their rows (pg->rows), and sum their
 * framed sizes (pg->records, pg->framed; st->sizes). */
static int measure_records(scan_state *st, const pq_page_values *v, ix_page *pg, pq_error *err)
{
    const ix_framing *f = st->scan->framing;
    /* a page has at most one record per level entry */
    ix_record *recs = malloc((v->num_levels ? v->num_levels : 1) * sizeof *recs);
    if (!recs)
        return pq_error_set(err, "out of memory measuring a page");
    uint32_t count;
    int rc = ix_page_records(&f->shape, v, pg->first_row, recs, v->num_levels, &count,
                             &pg->rows, err);
    pg->framed = 0;
    pg->records = 0;
    for (uint32_t k = 0; rc == 0 && k < count; k++)
        rc = take_record(st, &recs[k], pg, &st->sizes, &st->num_sizes, &st->sizes_cap, err);
    free(recs);
    return rc;
}

/* The assembled row r as the next row of pg: pg->rows grows by one, and by
 * its record unless it is a null list. */
static int take_row(scan_state *st, ix_row *r, ix_page *pg, uint32_t **sizes, uint32_t *num,
                    uint32_t *cap, pq_error *err)
{
    const ix_framing *f = st->scan->framing;
    ix_record rec;
    int rc = 0;
    if (ix_row_record(r, &f->shape, pg->first_row + pg->rows, &rec))
        rc = take_record(st, &rec, pg, sizes, num, cap, err);
    pg->rows++;
    return rc;
}

/* Append the framed bytes of the units of entry `e` (ix_index.h) to the
 * scan's, from the sizes of its records (NULL: each takes `uniform` bytes);
 * an entry of few records has one unit and nothing is appended. */
static int add_units(scan_state *st, const ix_page *e, const uint32_t *sizes, uint64_t uniform,
                     const entry_marks *em, pq_error *err)
{
    ix_scan *scan = st->scan;
    uint32_t units = ix_units_of(e);
    const ix_unit_mark *marks =
        em && em->at && em->units == units && em->records == e->records ? em->at : NULL;
    int marked = 0; /* a page pq_stream cannot mark (a dictionary's, say) brings none */
    for (uint32_t k = 1; marks && k < units && !marked; k++)
        marked = marks[k].body_offset != 0;
    if (!marked)
        marks = NULL;
    if (units == 1)
        return 0;
    uint64_t *grown = realloc(scan->unit_bytes, (scan->num_units + units) * sizeof *grown);
    if (!grown)
        return pq_error_set(err, "out of memory for the shuffle units");
    scan->unit_bytes = grown;
    if (marks || scan->unit_marks) { /* the units before the first marked have none */
        ix_unit_mark *m = realloc(scan->unit_marks, (scan->num_units + units) * sizeof *m);
        if (!m)
            return pq_error_set(err, "out of memory for the shuffle units");
        if (!scan->unit_marks)
            memset(m, 0, scan->num_units * sizeof *m);
        scan->unit_marks = m;
        for (uint32_t k = 0; k < units; k++)
            m[scan->num_units + k] = marks ? marks[k] : (ix_unit_mark){ 0 };
    }
    for (uint32_t k = 0; k < units; k++) {
        uint32_t a = ix_unit_first_record(e->records, units, k);
        uint32_t b = ix_unit_first_record(e->records, units, k + 1);
        uint64_t bytes = (uint64_t)(b - a) * uniform;
        for (uint32_t r = a; sizes && r < b; r++)
            bytes += sizes[r];
        scan->unit_bytes[scan->num_units++] = bytes;
    }
    return 0;
}

/* The entry at `index` has all its records measured (st->sizes): note its
 * units and start over for the next. */
static int entry_measured(scan_state *st, uint32_t index, const entry_marks *em, pq_error *err)
{
    const ix_page *e = &st->scan->pages[index];
    assert(st->num_sizes == e->records);
    st->num_sizes = 0;
    return add_units(st, e, st->sizes, 0, em, err);
}

/* An entry sized without measuring its records: its units are known when
 * every record frames to the same size (raw of a flat column in its own
 * dtype), else the chunk's entries are not cut. */
static int entry_sized(scan_state *st, uint32_t index, pq_error *err)
{
    ix_scan *scan = st->scan;
    const ix_page *e = &scan->pages[index];
    int64_t one = size_from_counts(scan, 1, -1);
    if (one < 0 || scan->framing->format != IX_FORMAT_RAW) {
        scan->cut = 0;
        return 0;
    }
    return add_units(st, e, NULL, (uint64_t)one, NULL, err);
}

/* Rows that span pages (repeated columns; v1 pages without a page index
 * may cut a row anywhere). An index entry stands for the rows that START in
 * one page: its byte range runs from that page to the end of the page where
 * its last row ends, so the read path finds a whole row in it. A page in
 * which no row starts gets no entry of its own. */

/* Measure the open row into its entry and close it. */
static int close_row(scan_state *st, pq_error *err)
{
    if (!st->row_open)
        return 0;
    ix_page *entry = &st->scan->pages[st->open_entry];
    ix_page row = { .first_row = entry->first_row + entry->rows - 1 };
    int rc = st->streaming
                 ? take_row(st, &st->open, &row, &st->sizes, &st->num_sizes, &st->sizes_cap, err)
                 : measure_records(st, &st->open_row, &row, err);
    if (rc == 0 && row.rows != 1)
        rc = pq_error_set(err, "a row continued over pages decodes as %u rows", row.rows);
    if (rc == 0) {
        entry->records += row.records;
        entry->framed += row.framed;
        rc = entry_measured(st, st->open_entry, &st->open_marks, err);
    }
    pq_page_values_free(&st->open_row);
    ix_row_clear(&st->open);
    entry_marks_drop(&st->open_marks);
    st->row_open = 0;
    return rc;
}

/* Append entries [begin, end) of the decoded page v to the open row. */
static int open_append(scan_state *st, const pq_page_values *v, uint32_t begin, uint32_t end,
                       pq_error *err)
{
    int16_t max_def = st->scan->desc.max_def;
    if (!st->streaming)
        return pq_page_values_append(&st->open_row, v, begin, end, max_def, err);
    uint32_t value = 0;
    for (uint32_t i = 0; i < begin; i++)
        value += !v->def_levels || v->def_levels[i] == max_def;
    for (uint32_t i = begin; i < end; i++) {
        pq_stream_entry e = {
            .rep = v->rep_levels ? v->rep_levels[i] : 0,
            .def = v->def_levels ? v->def_levels[i] : 0,
            .has_value = !v->def_levels || v->def_levels[i] == max_def,
        };
        if (e.has_value)
            e.value = pq_page_value(v, value++);
        if (ix_row_add(&st->open, &e, err) < 0)
            return pq_error_prefix(err, "a row that continues on the next page, held while "
                                   "the column chunk streams: ");
    }
    return 0;
}

/* Index the decoded page of a repeated column that starts at file offset
 * pg->offset and ends at page_end: continue the open row, close it, and add
 * an entry for the rows that start here, the last of which stays open. */
static int take_rows(scan_state *st, const pq_page_values *v, ix_page *pg, uint64_t page_end,
                     pq_error *err)
{
    int16_t max_def = st->scan->desc.max_def;
    uint32_t first = ix_row_start(v, 0), n = v->num_levels;
    if (first > 0 || n == 0) {
        if (!st->row_open)
            return pq_error_set(err, "the page starts in the middle of a row, but no earlier "
                                "page of the column chunk left one open");
        ix_page *entry = &st->scan->pages[st->open_entry];
        if (page_end - entry->offset > UINT32_MAX)
            return pq_error_set(err, "a row continues over more than 4 GiB of pages");
        entry->length = (uint32_t)(page_end - entry->offset);
        if (open_append(st, v, 0, first, err) < 0)
            return -1;
        if (first == n)
            return 0; /* no row starts here: the open row goes on */
    }
    if (close_row(st, err) < 0)
        return -1;
    uint32_t last = ix_last_row_start(v);
    pq_page_values whole = ix_entries_view(v, max_def, first, last);
    if (measure_records(st, &whole, pg, err) < 0)
        return -1;
    pg->rows += 1; /* the last row, measured once it ends */
    if (open_append(st, v, last, n, err) < 0)
        return -1;
    st->row_open = 1;
    st->open_entry = st->scan->num_pages;
    st->rows_seen += pg->rows;
    return add_page(st, pg, err);
}

/* Note where the dictionary page is; it is decoded only if a page needs it
 * (pages sized from their headers do not). */
static int take_dictionary(scan_state *st, uint64_t off, const pq_page_header *h,
                           pq_error *err)
{
    if (st->scan->dict_offset >= 0)
        return pq_error_set(err, "second dictionary page at offset %llu",
                            (unsigned long long)off);
    if (st->scan->num_pages > 0)
        return pq_error_set(err, "dictionary page at offset %llu after data pages",
                            (unsigned long long)off);
    st->dict_header = *h;
    st->scan->dict_claims = ix_dict_claims_of(h);
    st->scan->dict_offset = (int64_t)off;
    st->scan->dict_length = (uint32_t)(h->header_len + (size_t)h->compressed_size);
    return 0;
}

/* The chunk's dictionary, decoded on first use; NULL (not an error) when the
 * chunk has none: decoding a dictionary-encoded page then says so. */
static int dictionary(scan_state *st, const pq_dictionary **out, pq_error *err)
{
    ix_scan *scan = st->scan;
    *out = NULL;
    if (scan->dict_offset < 0)
        return 0;
    if (!st->dict_decoded) {
        const pq_page_header *h = &st->dict_header;
        const uint8_t *page = ix_window_get(&st->w, (uint64_t)scan->dict_offset, scan->dict_length, err);
        if (!page)
            return -1;
        /* A dictionary larger than a window (at most ix_hold_max(mem):
         * check_claims) is charged to the gate with the window, before it
         * is decoded, until the chunk is done: the page pass then decodes
         * such dictionaries one at a time (a request over the gate's bytes
         * runs alone), not one per thread. Smaller ones stay within what
         * the windows leave (as before). The window keeps its bytes while
         * the charge waits. */
        uint64_t hold = ix_page_hold_bytes(h, 0);
        if (st->w.gate && hold > IX_SCAN_WINDOW_BYTES) {
            ix_gate_cpu_leave(st->w.gate);
            st->w.extra = hold;
            ix_gate_take(st->w.gate, &st->w.charged, st->w.cap + st->w.extra);
            ix_gate_cpu_enter(st->w.gate);
        }
        const uint8_t *body = page + h->header_len;
        if ((scan->verify_crc && pq_page_check_crc(h, body, (size_t)h->compressed_size, err) < 0) ||
            pq_dictionary_decode(&scan->desc, h, body, (size_t)h->compressed_size, &st->dict,
                                 err) < 0)
            return pq_error_prefix(err, "dictionary page at offset %lld: ",
                                   (long long)scan->dict_offset);
        st->dict_decoded = 1;
    }
    *out = &st->dict;
    return 0;
}

/* The framed size of a data page when its header alone determines it:
 * PLAIN values of a flat column, in a v2 page (levels apart) or a v1 page of
 * a required column (the body is only values), for len32 (a BYTE_ARRAY
 * value's PLAIN form is its 4-byte length and bytes, just as len32 frames it)
 * or raw in the column's own dtype. Returns 1 and fills pg, or 0. */
static int sized_by_header(const ix_scan *scan, const pq_page_header *h, ix_page *pg)
{
    int v2 = h->type == PQ_PAGE_DATA_V2;
    if (h->encoding != PQ_ENC_PLAIN || scan->desc.max_rep > 0 || (!v2 && scan->desc.max_def > 0))
        return 0;
    int32_t nulls = v2 ? h->num_nulls : 0;
    int64_t plain = (int64_t)h->uncompressed_size - (v2 ? h->def_levels_len + h->rep_levels_len : 0);
    if (h->num_values < 0 || nulls < 0 || nulls > h->num_values || plain < 0 ||
        (v2 && h->num_rows != h->num_values))
        return 0;
    uint64_t records = (uint64_t)(h->num_values - nulls);
    int64_t value_bytes = scan->desc.type == PQ_BYTE_ARRAY ? plain - 4 * (int64_t)records : plain;
    int64_t framed = size_from_counts(scan, records, value_bytes);
    if (framed < 0)
        return 0;
    pg->rows = (uint32_t)h->num_values;
    pg->records = (uint32_t)records;
    pg->framed = (uint64_t)framed;
    return 1;
}

/* Checks what a header claims against what the chunk's metadata and the
 * page's own size allow, before anything is allocated for it: the rule the
 * read path applies too (ix_claims.h). */
static int check_claims(const scan_state *st, const pq_page_header *h, pq_error *err)
{
    const pq_column_meta *m = st->scan->meta;
    ix_chunk_bounds chunk = { m->total_uncompressed_size, m->num_values };
    return ix_page_claims_check(h, &chunk, st->scan->mem, err);
}

/* ---- streaming a large page (see the top) ---- */

/* Whether the page at hand streams: it would cost more than the limit to
 * decode whole, or an earlier page of the chunk streamed. */
static int should_stream(const scan_state *st, const pq_page_header *h, uint64_t total)
{
    if (st->streaming)
        return 1;
    uint64_t limit = st->scan->stream_page_bytes ? st->scan->stream_page_bytes
                                                 : STREAM_PAGE_BYTES;
    uint64_t entries = h->num_values > 0 ? (uint64_t)h->num_values : 0;
    return total + (uint64_t)h->uncompressed_size + entries * WHOLE_BYTES_PER_ENTRY > limit;
}

/* The page streaming in s is at `records` records, its next entry to hand
 * out (a flat column's), or `pending`, read already (a list's: the entry
 * that starts a row): when that is the first record of its next unit, mark
 * it there (ix_unit_mark). */
static void mark_unit_start(scan_state *st, const pq_stream *s, const ix_page *pg,
                            uint32_t records, const pq_stream_entry *pending)
{
    entry_marks *em = &st->page_marks;
    if (!em->at || em->next >= em->units ||
        records != ix_unit_first_record(em->records, em->units, em->next))
        return;
    ix_unit_mark *um = &em->at[em->next++];
    size_t len = pending && pending->has_value ? pending->value.len : 0;
    pq_stream_mark m;
    if (len > IX_UNIT_MARK_VALUE_MAX || !pq_stream_mark_here(s, &m))
        return;
    *um = (ix_unit_mark){ .body_offset = st->page_body + m.body_at, .rows = pg->rows,
                          .records = records, .at = m };
    if (pending) {
        um->has_pending = 1;
        um->rep = pending->rep;
        um->def = pending->def;
        um->has_value = pending->has_value != 0;
        um->value_len = (uint8_t)len;
        if (len)
            memcpy(um->value, pending->value.ptr, len);
    }
}

/* The entries of the streaming page s, rows assembled (repeated columns)
 * or taken one per entry (flat), into pg and st->page_sizes (*num sizes).
 * *started: a row starts in the page. Rows continued from the page before
 * go on in st->open; the rows that start here are assembled in st->row. */
static int stream_rows(scan_state *st, pq_stream *s, ix_page *pg, uint32_t *num, int *started,
                       pq_error *err)
{
    const ix_framing *f = st->scan->framing;
    int repeated = st->scan->desc.max_rep > 0;
    pq_stream_entry e;
    int rc;
    for (;;) {
        if (!repeated)
            mark_unit_start(st, s, pg, *num, NULL);
        if ((rc = pq_stream_next(s, &e, err)) != 1)
            break;
        if (!repeated) {
            ix_record rec;
            if (ix_flat_record(&f->shape, pq_value_list_of(&e.value), &e.def, pg->first_row + pg->rows, &rec) &&
                take_record(st, &rec, pg, &st->page_sizes, num, &st->page_sizes_cap, err) < 0)
                return -1;
            pg->rows++;
            continue;
        }
        if (e.rep == 0) {
            if (*started && take_row(st, &st->row, pg, &st->page_sizes, num,
                                     &st->page_sizes_cap, err) < 0)
                return -1;
            ix_row_clear(&st->row);
            *started = 1;
            mark_unit_start(st, s, pg, *num, &e);
        } else if (!*started && !st->row_open) {
            return pq_error_set(err, "the page starts in the middle of a row, but no earlier "
                                "page of the column chunk left one open");
        }
        if (ix_row_add(*started ? &st->row : &st->open, &e, err) < 0)
            return -1;
    }
    return rc;
}

/* Copy the whole path's open row (a pq_page_values) into st->open, once,
 * when the chunk starts streaming. Fails when the row is too long. */
static int start_streaming(scan_state *st, pq_error *err)
{
    assert(!st->streaming);
    st->streaming = 1;
    if (st->row_open && open_append(st, &st->open_row, 0, st->open_row.num_levels, err) < 0) {
        ix_row_clear(&st->open);
        st->streaming = 0;
        return -1;
    }
    pq_page_values_free(&st->open_row);
    return 0;
}

/* Stream the data page at `off` (header h, total bytes of header and body)
 * into the index: pg comes filled with offset, length and first_row.
 * Returns 1 when done, 0 when the page cannot stream (nothing changed: the
 * caller decodes it whole), -1 on error. */
static int stream_page(scan_state *st, const pq_page_header *h, uint64_t off, uint64_t total,
                       ix_page *pg, pq_error *err)
{
    ix_scan *scan = st->scan;
    const pq_dictionary *dict = NULL;
    if ((h->encoding == PQ_ENC_PLAIN_DICTIONARY || h->encoding == PQ_ENC_RLE_DICTIONARY) &&
        dictionary(st, &dict, err) < 0)
        return -1;
    ix_body r;
    if (ix_body_init(&r, &st->w, h, off, STREAM_READ_BYTES, scan->verify_crc, err) < 0)
        return -1;
    assert(r.end == off + total);
    pq_stream_opts opts = { .read_size = STREAM_READ_BYTES, .cap = STREAM_CAP_BYTES };
    pq_stream *s = pq_stream_open(&scan->desc, h, dict, &opts, ix_body_read, &r, err);
    if (!s) {
        if (pq_stream_whole_instead(err))
            return 0;
        ix_body_blame_crc(h, &r, err);
        return -1;
    }
    if (!st->streaming && start_streaming(st, err) < 0) {
        pq_stream_close(s);
        return 0;
    }
    assert(!st->page_marks.at);
    /* Marks at its units (not a page whose CRC is verified: a stream reads
     * its body whole), split for the records its levels call for: a flat
     * page's values, a list's rows that start here and are not null (a row
     * kept by another column's value makes one more: its marks are then
     * dropped, as the records counted differ). */
    uint32_t starting = 0;
    pq_error ignored; /* malformed levels fail the page's stream itself */
    int16_t null_def = scan->framing->shape.null_def;
    if (!(scan->verify_crc && h->has_crc) &&
        (scan->desc.max_rep == 0
             ? (starting = pq_stream_present(s), 1)
             : pq_stream_rows_starting(s, null_def > 0 ? (uint16_t)null_def : 0, &starting,
                                       &ignored) == 0)) {
        uint32_t units = ix_units_of(&(ix_page){ .records = starting });
        entry_marks *em = &st->page_marks;
        if (units > 1 && (em->at = calloc(units, sizeof *em->at))) {
            *em = (entry_marks){ .at = em->at, .units = units, .records = starting, .next = 1 };
            st->page_body = off + h->header_len;
        }
    }

    /* What the page may change before it is done: the open row grows (put
     * back as it was if the page cannot stream after all). */
    uint32_t open_entries = st->open.entries, open_values = st->open.num_values;
    size_t open_used = st->open.used;
    uint32_t num = 0;
    int started = 0;
    ix_row_clear(&st->row);
    int rc = stream_rows(st, s, pg, &num, &started, err);
    pq_stream_close(s);
    if (rc == 0)
        rc = ix_body_check_crc(h, &r, err);
    if (rc < 0) {
        entry_marks_drop(&st->page_marks);
        ix_row_clear(&st->row);
        if (!pq_stream_whole_instead(err)) {
            ix_body_blame_crc(h, &r, err);
            return -1;
        }
        st->open.entries = open_entries;
        st->open.num_values = open_values;
        st->open.used = open_used;
        *pg = (ix_page){ .offset = pg->offset, .first_row = pg->first_row,
                         .length = pg->length };
        return 0;
    }
    scan->pages_streamed++;

    /* The page is done: the same bookkeeping as take_rows. */
    uint32_t page_crc = r.crc ? r.crc : 1;
    if (scan->desc.max_rep > 0) {
        if (!started && !st->row_open)
            return pq_error_set(err, "the page starts in the middle of a row, but no earlier "
                                "page of the column chunk left one open");
        if (st->open.entries > open_entries || !started) {
            /* the open row went on here: its entry now ends with this page */
            ix_page *entry = &scan->pages[st->open_entry];
            if (off + total - entry->offset > UINT32_MAX)
                return pq_error_set(err, "a row continues over more than 4 GiB of pages");
            entry->length = (uint32_t)(off + total - entry->offset);
            atomic_store(&entry->crc, 0);
        }
        if (!started) {
            entry_marks_drop(&st->page_marks);
            return 1;
        }
        if (close_row(st, err) < 0) {
            entry_marks_drop(&st->page_marks);
            return -1;
        }
        pg->rows++; /* the last row, measured once it ends */
        ix_row swap = st->open;
        st->open = st->row;
        st->row = swap;
        ix_row_clear(&st->row);
        st->row_open = 1;
        st->open_entry = scan->num_pages;
        st->open_marks = st->page_marks; /* its entry is measured once its last row ends */
        st->page_marks = (entry_marks){ 0 };
    }
    /* the page's record sizes become the entry's */
    assert(st->num_sizes == 0);
    uint32_t *sizes = st->sizes, cap = st->sizes_cap;
    st->sizes = st->page_sizes;
    st->sizes_cap = st->page_sizes_cap;
    st->num_sizes = num;
    st->page_sizes = sizes;
    st->page_sizes_cap = cap;
    atomic_init(&pg->crc, page_crc);
    st->rows_seen += pg->rows;
    if (add_page(st, pg, err) < 0)
        return -1;
    /* a repeated column's entry is measured once its last row ends */
    rc = scan->desc.max_rep == 0 ? entry_measured(st, scan->num_pages - 1, &st->page_marks, err)
                                 : 0;
    entry_marks_drop(&st->page_marks);
    return rc < 0 ? -1 : 1;
}

/* Handle the page whose header starts at `off`; *next is where the following
 * page starts. expect_len: the page's total length from the OffsetIndex, or 0. */
static int visit_page(scan_state *st, uint64_t off, uint32_t expect_len, uint64_t *next,
                      pq_error *err)
{
    pq_page_header h;
    if (ix_window_header(&st->w, off, &h, err) < 0)
        return pq_error_prefix(err, "page header at offset %llu: ", (unsigned long long)off);
    uint64_t total = h.header_len + (uint64_t)h.compressed_size;
    if (total > st->w.end - off)
        return pq_error_set(err, "page at offset %llu: %llu bytes of header and body run past "
                            "the end of the column chunk (%llu bytes left)",
                            (unsigned long long)off, (unsigned long long)total,
                            (unsigned long long)(st->w.end - off));
    if (check_claims(st, &h, err) < 0)
        return pq_error_prefix(err, "page at offset %llu: ", (unsigned long long)off);
    if (expect_len && total != expect_len)
        return pq_error_set(err, "page at offset %llu: header and body take %llu bytes, the "
                            "offset index says %u", (unsigned long long)off,
                            (unsigned long long)total, expect_len);
    *next = off + total;

    /* Change detection (ix_index.h): the CRC of a page's bytes, taken here
     * wherever the window holds them already; 0 (learned at the page's first
     * read) elsewhere. */
    const uint8_t *held = ix_window_holds(&st->w, off, total)
                              ? st->w.buf + (off - st->w.base)
                              : NULL;
    if (h.type == PQ_PAGE_DICTIONARY) {
        if (take_dictionary(st, off, &h, err) < 0)
            return -1;
        st->scan->dict_crc = held ? ix_page_crc(held, (size_t)total) : 0;
        return 0;
    }
    if (h.type != PQ_PAGE_DATA && h.type != PQ_PAGE_DATA_V2)
        return 0; /* index pages and unknown page types carry no values */
    ix_page pg = {
        .offset = off,
        .first_row = st->scan->first_row + st->rows_seen,
        .length = (uint32_t)total,
    };
    /* Sized from the header: the body is neither read nor decoded here; its
     * CRC, counts and sizes are checked when it is read. */
    if (sized_by_header(st->scan, &h, &pg)) {
        atomic_init(&pg.crc, held ? ix_page_crc(held, (size_t)total) : 0);
        st->scan->pages_sized_by_header++;
        st->rows_seen += pg.rows;
        if (add_page(st, &pg, err) < 0)
            return -1;
        return entry_sized(st, st->scan->num_pages - 1, err);
    }
    if (should_stream(st, &h, total)) {
        int streamed = stream_page(st, &h, off, total, &pg, err);
        if (streamed < 0)
            return pq_error_prefix(err, "data page at offset %llu: ", (unsigned long long)off);
        if (streamed)
            return 0;
    }
    if (ix_page_hold_check(&h, pq_packed_width(&st->scan->desc), st->scan->mem, err) < 0) /* decoded whole: ix_claims.h */
        return pq_error_prefix(err, "data page at offset %llu: ", (unsigned long long)off);
    const uint8_t *page = ix_window_get(&st->w, off, (size_t)total, err);
    if (!page)
        return -1;
    atomic_init(&pg.crc, ix_page_crc(page, (size_t)total));
    const uint8_t *body = page + h.header_len;
    if (st->scan->verify_crc && pq_page_check_crc(&h, body, (size_t)h.compressed_size, err) < 0)
        return pq_error_prefix(err, "page at offset %llu: ", (unsigned long long)off);
    const pq_dictionary *dict = NULL;
    pq_page_values v;
    if ((h.encoding == PQ_ENC_PLAIN_DICTIONARY || h.encoding == PQ_ENC_RLE_DICTIONARY) &&
        dictionary(st, &dict, err) < 0)
        return -1;
    if (pq_page_decode(&st->scan->desc, &h, body, (size_t)h.compressed_size, dict, &v, err) < 0)
        return pq_error_prefix(err, "data page at offset %llu: ", (unsigned long long)off);
    if (st->scan->desc.max_rep > 0) {
        uint32_t before = st->scan->num_pages;
        int rc = take_rows(st, &v, &pg, off + total, err);
        pq_page_values_free(&v);
        if (rc < 0)
            return pq_error_prefix(err, "data page at offset %llu: ", (unsigned long long)off);
        /* The entries whose byte range now ends with this page (the one
         * added, and the one whose row continued here) get the CRC of their
         * whole range, if the window still holds it. */
        for (uint32_t k = before ? before - 1 : 0; k < st->scan->num_pages; k++) {
            ix_page *e = &st->scan->pages[k];
            if (e->offset + e->length != off + total)
                continue;
            int whole = ix_window_holds(&st->w, e->offset, e->length);
            atomic_init(&e->crc, whole ? ix_page_crc(st->w.buf + (e->offset - st->w.base),
                                                     e->length)
                                       : 0);
        }
        return 0;
    }
    int rc = measure_records(st, &v, &pg, err);
    pq_page_values_free(&v);
    if (rc < 0)
        return pq_error_prefix(err, "data page at offset %llu: ", (unsigned long long)off);
    st->rows_seen += pg.rows;
    if (add_page(st, &pg, err) < 0)
        return -1;
    return entry_measured(st, st->scan->num_pages - 1, NULL, err);
}

static int walk_headers(scan_state *st, pq_error *err)
{
    uint64_t off = st->w.begin;
    while (off < st->w.end)
        if (visit_page(st, off, 0, &off, err) < 0)
            return -1;
    return 0;
}

/* Read a page index structure ([offset, offset+len) of the file) and parse
 * it with `parse` into out. */
typedef int (*index_parser)(const uint8_t *buf, size_t len, void *out, pq_error *err);

static int read_page_index(scan_state *st, int64_t offset, int32_t len, index_parser parse,
                           void *out, const char *what, pq_error *err)
{
    const ix_source *src = st->scan->src;
    if (len <= 0 || (uint64_t)offset + (uint64_t)len > (uint64_t)src->st.st_size)
        return pq_error_set(err, "%s at %lld (%d bytes) lies outside the file", what,
                            (long long)offset, len);
    uint8_t *buf = malloc((size_t)len);
    if (!buf)
        return pq_error_set(err, "out of memory for the %s", what);
    int rc = ix_gate_pread(st->scan->gate, src->store, src->fd, src->name, buf, (size_t)len,
                           (uint64_t)offset, err);
    if (rc == 0 && parse(buf, (size_t)len, out, err) < 0)
        rc = pq_error_prefix(err, "%s: ", what);
    free(buf);
    st->scan->bytes_read += (uint64_t)len;
    return rc;
}

static int parse_offset_index(const uint8_t *buf, size_t len, void *out, pq_error *err)
{
    return pq_offset_index_parse(buf, len, out, err);
}

static int parse_column_index(const uint8_t *buf, size_t len, void *out, pq_error *err)
{
    return pq_column_index_parse(buf, len, out, err);
}

/* The pages of the chunk from its page index alone, when it says enough to
 * size every record: rows from the first-row indexes, records from the
 * null counts (required columns and chunks whose statistics count no nulls
 * have none), value bytes from the size statistics. Returns 1 if done, 0 if the page index does not say enough,
 * -1 on a contradiction. Nothing here is trusted further than the read path
 * checks it: a page that decodes to other counts or sizes fails its read. */
static int pages_from_metadata(scan_state *st, const pq_offset_index *oi, pq_error *err)
{
    ix_scan *scan = st->scan;
    const pq_column_meta *m = scan->meta;
    /* pyarrow (26) undercounts the value bytes of DELTA_BYTE_ARRAY pages in
     * its size statistics: such chunks are decoded to be sized. */
    int trusted_bytes = oi->unencoded_bytes && !(m->encodings & (1u << PQ_ENC_DELTA_BYTE_ARRAY));
    if (size_from_counts(scan, 0, trusted_bytes ? 0 : -1) < 0)
        return 0;
    pq_column_index ci = { 0 };
    /* Null counts per page: none when the chunk has no nulls at all, else
     * from the ColumnIndex. */
    if (scan->desc.max_def > 0 && m->null_count != 0) {
        if (m->column_index_offset < 0 ||
            read_page_index(st, m->column_index_offset, m->column_index_length,
                            parse_column_index, &ci, "column index", err) < 0 ||
            !ci.null_counts || ci.count != oi->count) {
            pq_column_index_free(&ci);
            return 0; /* no null counts: decode to count the records */
        }
    }
    int rc = 1;
    for (int32_t k = 0; rc == 1 && k < oi->count; k++) {
        const pq_page_location *loc = &oi->pages[k];
        uint64_t end = k + 1 < oi->count ? (uint64_t)oi->pages[k + 1].first_row_index
                                         : scan->num_rows;
        int64_t nulls = ci.null_counts ? ci.null_counts[k] : 0;
        if (loc->offset < (int64_t)st->w.begin || (uint64_t)loc->offset >= st->w.end ||
            loc->compressed_size <= 0 ||
            (uint64_t)loc->compressed_size > st->w.end - (uint64_t)loc->offset) {
            rc = pq_error_set(err, "offset index entry %d (offset %lld, %d bytes) is outside "
                              "the column chunk", k, (long long)loc->offset,
                              loc->compressed_size);
            break;
        }
        if (loc->first_row_index < 0 || end < (uint64_t)loc->first_row_index ||
            end - (uint64_t)loc->first_row_index > UINT32_MAX || nulls < 0 ||
            (uint64_t)nulls > end - (uint64_t)loc->first_row_index) {
            rc = pq_error_set(err, "page index entry %d: rows %lld..%llu with %lld nulls do not "
                              "add up", k, (long long)loc->first_row_index,
                              (unsigned long long)end, (long long)nulls);
            break;
        }
        uint32_t rows = (uint32_t)(end - (uint64_t)loc->first_row_index);
        ix_page pg = {
            .offset = (uint64_t)loc->offset,
            .first_row = scan->first_row + (uint64_t)loc->first_row_index,
            .length = (uint32_t)loc->compressed_size,
            .rows = rows,
            .records = rows - (uint32_t)nulls,
        };
        int64_t framed = size_from_counts(scan, pg.records,
                                          trusted_bytes ? oi->unencoded_bytes[k] : -1);
        if (framed < 0) {
            rc = pq_error_set(err, "page index entry %d: negative value bytes", k);
            break;
        }
        pg.framed = (uint64_t)framed;
        if (add_page(st, &pg, err) < 0 || entry_sized(st, st->scan->num_pages - 1, err) < 0)
            rc = -1;
        st->rows_seen = end;
    }
    pq_column_index_free(&ci);
    /* The bytes before the first page hold the dictionary page, if any. */
    if (rc == 1 && oi->count > 0 && (uint64_t)oi->pages[0].offset > st->w.begin) {
        scan->dict_offset = (int64_t)st->w.begin;
        scan->dict_length = (uint32_t)((uint64_t)oi->pages[0].offset - st->w.begin);
    }
    scan->from_metadata = rc == 1;
    return rc;
}

static int follow_offset_index(scan_state *st, pq_error *err)
{
    const pq_column_meta *m = st->scan->meta;
    pq_offset_index oi = { 0 };
    int rc = read_page_index(st, m->offset_index_offset, m->offset_index_length,
                             parse_offset_index, &oi, "offset index", err);
    if (rc == 0) {
        int done = pages_from_metadata(st, &oi, err);
        if (done != 0) {
            pq_offset_index_free(&oi);
            return done < 0 ? -1 : 0;
        }
    }

    /* Pages before the first listed one: the dictionary page, if any. */
    uint64_t off = st->w.begin;
    for (int32_t i = 0; rc == 0 && i < oi.count; i++) {
        const pq_page_location *loc = &oi.pages[i];
        if (loc->offset < (int64_t)off || (uint64_t)loc->offset >= st->w.end ||
            loc->compressed_size <= 0) {
            rc = pq_error_set(err, "offset index entry %d (offset %lld, %d bytes) is outside "
                              "the column chunk or out of order", i, (long long)loc->offset,
                              loc->compressed_size);
            break;
        }
        while (rc == 0 && off < (uint64_t)loc->offset)
            rc = visit_page(st, off, 0, &off, err);
        if (rc == 0 && (uint64_t)loc->first_row_index != st->rows_seen)
            rc = pq_error_set(err, "offset index entry %d starts at row %lld, but the pages "
                              "before it hold %llu rows", i, (long long)loc->first_row_index,
                              (unsigned long long)st->rows_seen);
        if (rc == 0)
            rc = visit_page(st, off, (uint32_t)loc->compressed_size, &off, err);
    }
    pq_offset_index_free(&oi);
    return rc;
}

int ix_scan_chunk(ix_scan *scan, pq_error *err)
{
    const pq_column_meta *m = scan->meta;
    uint64_t file_size = (uint64_t)scan->src->st.st_size;
    scan->pages = NULL;
    scan->num_pages = 0;
    scan->unit_bytes = NULL;
    scan->unit_marks = NULL;
    scan->num_units = 0;
    scan->cut = 1;
    scan->dict_offset = -1;
    scan->dict_length = 0;
    scan->dict_claims = (ix_dict_claims){ 0 };
    scan->has_offset_index = m->offset_index_offset >= 0;

    /* An empty row group (writers emit one for an empty table) has no pages;
     * its offsets are often placeholders such as 0. */
    if (m->num_values == 0)
        return 0;

    /* The chunk starts at its dictionary page when there is one. Some writers
     * store dictionary_page_offset 0 for "none", so only a plausible offset
     * before the first data page counts. */
    int64_t begin = m->data_page_offset;
    if (m->dictionary_page_offset >= 4 && m->dictionary_page_offset < begin)
        begin = m->dictionary_page_offset;
    if (begin < 4)
        return pq_error_set(err, "column chunk starts at offset %lld, inside the 4-byte "
                            "magic at the start of the file", (long long)begin);
    if (m->total_compressed_size <= 0 ||
        (uint64_t)begin + (uint64_t)m->total_compressed_size > file_size)
        return pq_error_set(err, "column chunk at offset %lld with %lld bytes does not fit in "
                            "the %llu-byte file", (long long)begin,
                            (long long)m->total_compressed_size,
                            (unsigned long long)file_size);

    scan_state st = { .scan = scan, .window = ix_framing_window(scan->framing) };
    ix_row_init(&st.open, STREAM_ROW_BYTES);
    ix_row_init(&st.row, STREAM_ROW_BYTES);
    ix_window_init(&st.w, scan->src, (uint64_t)begin,
                   (uint64_t)begin + (uint64_t)m->total_compressed_size, IX_SCAN_WINDOW_BYTES,
                   &scan->bytes_read, scan->gate);

    int rc = scan->has_offset_index ? follow_offset_index(&st, err) : walk_headers(&st, err);
    if (rc == 0 && close_row(&st, err) < 0)
        rc = pq_error_prefix(err, "the last row of the column chunk: ");
    pq_page_values_free(&st.open_row);
    ix_row_free(&st.open);
    ix_row_free(&st.row);
    free(st.sizes);
    free(st.page_sizes);
    entry_marks_drop(&st.page_marks);
    entry_marks_drop(&st.open_marks);
    ix_others_window_free(st.window);
    if (rc < 0 || !scan->cut) {
        free(scan->unit_bytes);
        scan->unit_bytes = NULL;
        free(scan->unit_marks);
        scan->unit_marks = NULL;
        scan->num_units = 0;
    }
    if (rc == 0 && !scan->from_metadata && (int64_t)st.rows_seen != m->num_values &&
        scan->desc.max_rep == 0)
        rc = pq_error_set(err, "the pages hold %llu values, the column metadata says %lld",
                          (unsigned long long)st.rows_seen, (long long)m->num_values);
    if (st.dict_decoded) /* before its charge goes back (dictionary()) */
        pq_dictionary_free(&st.dict);
    ix_window_free(&st.w);
    if (rc < 0) {
        free(scan->pages);
        scan->pages = NULL;
        scan->num_pages = 0;
    }
    return rc;
}
