/* pq_stream against the whole-page decoder: every data page of every fixture
 * (itself checked against pyarrow by test_files.c), streamed through windows
 * of a few bytes to a few KiB with reads of varying sizes, must give the same
 * entries (levels and value bytes) as pq_page_decode, within the memory bound
 * it announced, and so must a fork of it taken at any entry (pq_stream_fork)
 * beside the original, and so must a stream resumed from a mark taken there
 * (pq_stream_mark_here; on large SNAPPY pages made here, reading the body
 * only from the mark's block on); bad and truncated bodies fail cleanly. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "pq_stream.h"
#include "tu.h"

typedef struct reader {
    const uint8_t *p;
    size_t len;      /* the body: the stream must never ask for more */
    size_t pos;
    size_t limit;    /* bytes served before reporting the end (truncation) */
    uint32_t seed;
    size_t max_read; /* 0: serve all that is asked, else 1..max_read at random */
    int seeks;       /* by a stream resumed from a mark (seek_body) */
    size_t seeked_to;
} reader;

static int read_body(void *ctx, uint8_t *buf, size_t want, size_t *got, pq_error *err)
{
    (void)err;
    reader *r = ctx;
    cr_assert(want >= 1 && r->pos + want <= r->len, "stream asked for %zu bytes at %zu of %zu",
              want, r->pos, r->len);
    size_t n = want;
    if (r->max_read) {
        r->seed = r->seed * 1103515245u + 12345u;
        size_t k = 1 + (r->seed >> 8) % r->max_read;
        n = n < k ? n : k;
    }
    size_t end = r->limit < r->len ? r->limit : r->len;
    if (r->pos + n > end)
        n = end - r->pos;
    memcpy(buf, r->p + r->pos, n);
    r->pos += n;
    *got = n;
    return 0;
}

static reader make_reader(const uint8_t *p, size_t len, size_t max_read)
{
    reader r = { p, len, 0, SIZE_MAX, 12345, max_read, 0, 0 };
    return r;
}

static int seek_body(void *ctx, uint64_t offset, pq_error *err)
{
    (void)err;
    reader *r = ctx;
    cr_assert_leq(offset, r->len, "seek to %llu of %zu", (unsigned long long)offset, r->len);
    r->pos = (size_t)offset;
    r->seeks++;
    r->seeked_to = (size_t)offset;
    return 0;
}

/* Stream one page and compare with pq_page_decode. Returns 1 when streamed,
 * 0 when the stream refused the page as not streamable. */
static int compare_page(const char *where, const pq_column_desc *col, const pq_page_header *h,
                        const uint8_t *body, const pq_dictionary *dict,
                        const pq_stream_opts *o, size_t max_read)
{
    pq_page_values pv;
    pq_error e1 = { "" }, e2 = { "" };
    int ok = pq_page_decode(col, h, body, (size_t)h->compressed_size, dict, &pv, &e1) == 0;
    reader r = make_reader(body, (size_t)h->compressed_size, max_read);
    size_t bound = pq_stream_memory_needed(h, col, o);
    pq_stream *s = pq_stream_open(col, h, dict, o, read_body, &r, &e2);
    if (!s) {
        if (ok) {
            cr_assert(strstr(e2.msg, "not streamable"), "%s: open failed on a valid page: %s",
                      where, e2.msg);
            pq_page_values_free(&pv);
        }
        return 0;
    }
    cr_assert_gt(bound, 0, "%s", where);
    size_t peak = pq_stream_bytes(s);
    uint32_t k = 0;
    for (uint32_t i = 0;; i++) {
        pq_stream_entry e;
        int rc = pq_stream_next(s, &e, &e2);
        size_t now = pq_stream_bytes(s);
        peak = now > peak ? now : peak;
        if (!ok) {
            cr_assert_neq(rc, 0, "%s: stream accepted a page the whole-page decoder refuses "
                                 "(%s)",
                          where, e1.msg);
            if (rc < 0)
                break;
            continue;
        }
        cr_assert_neq(rc, -1, "%s: entry %u: %s", where, i, e2.msg);
        if (rc == 0) {
            cr_assert_eq(i, pv.num_levels, "%s: %u entries, expected %u", where, i,
                         pv.num_levels);
            break;
        }
        cr_assert_lt(i, pv.num_levels, "%s: more entries than %u", where, pv.num_levels);
        cr_assert_eq(e.rep, pv.rep_levels ? pv.rep_levels[i] : 0, "%s: rep of entry %u", where,
                     i);
        cr_assert_eq(e.def, pv.def_levels ? pv.def_levels[i] : 0, "%s: def of entry %u", where,
                     i);
        cr_assert_eq(e.has_value, !pv.def_levels || pv.def_levels[i] == col->max_def);
        if (e.has_value) {
            cr_assert_lt(k, pv.num_values);
            pq_bytes value = pq_page_value(&pv, k++);
            const pq_bytes *v = &value;
            cr_assert_eq(e.value.len, v->len, "%s: value %u: %u bytes, expected %u", where,
                         k - 1, e.value.len, v->len);
            cr_assert(v->len == 0 || memcmp(e.value.ptr, v->ptr, v->len) == 0,
                      "%s: value %u differs", where, k - 1);
        }
    }
    cr_assert_leq(peak, bound, "%s: held %zu bytes, bound %zu", where, peak, bound);
    cr_assert_leq(pq_stream_bytes_max(s), bound, "%s", where);
    if (ok) {
        cr_assert_eq(k, pv.num_values, "%s", where);
        cr_assert_eq(r.pos, r.len, "%s: read %zu of %zu body bytes", where, r.pos, r.len);
        pq_page_values_free(&pv);
    }
    pq_stream_close(s);
    return 1;
}

/* The entries of the page from entry i (value k) on, as s hands them out,
 * against pq_page_decode's pv. */
static void expect_rest(const char *where, pq_stream *s, const pq_page_values *pv, uint32_t i,
                        uint32_t k)
{
    pq_stream_entry e;
    pq_error err = { "" };
    int rc;
    for (; (rc = pq_stream_next(s, &e, &err)) == 1; i++) {
        cr_assert_lt(i, pv->num_levels, "%s: more entries than %u", where, pv->num_levels);
        cr_assert_eq(e.rep, pv->rep_levels ? pv->rep_levels[i] : 0, "%s: entry %u", where, i);
        cr_assert_eq(e.def, pv->def_levels ? pv->def_levels[i] : 0, "%s: entry %u", where, i);
        if (e.has_value) {
            pq_bytes v = pq_page_value(pv, k++);
            cr_assert(e.value.len == v.len && (v.len == 0 || !memcmp(e.value.ptr, v.ptr, v.len)),
                      "%s: value %u differs", where, k - 1);
        }
    }
    cr_assert_eq(rc, 0, "%s: entry %u: %s", where, i, err.msg);
    cr_assert_eq(i, pv->num_levels, "%s: %u entries, expected %u", where, i, pv->num_levels);
}

/* Stream the page to entry `at`, fork there, run the original to its end,
 * then the fork: each must give the rest of pq_page_decode's entries, the
 * fork reading its own copy of the body from the original's place, and the
 * entry the original handed out last must hold its bytes in the fork.
 * Returns 1 when it forked, 0 when the codec is not forkable, -1 when the
 * page does not stream. */
static int check_fork(const char *where, const pq_column_desc *col, const pq_page_header *h,
                      const uint8_t *body, const pq_dictionary *dict, const pq_stream_opts *o,
                      size_t max_read, uint32_t at)
{
    pq_page_values pv;
    pq_error err = { "" };
    if (pq_page_decode(col, h, body, (size_t)h->compressed_size, dict, &pv, &err) < 0)
        return -1;
    reader r = make_reader(body, (size_t)h->compressed_size, max_read);
    pq_stream *s = pq_stream_open(col, h, dict, o, read_body, &r, &err);
    if (!s) {
        pq_page_values_free(&pv);
        return -1;
    }
    at = at < pv.num_levels ? at : pv.num_levels;
    pq_stream_entry last = { 0 };
    uint32_t k = 0;
    for (uint32_t i = 0; i < at; i++) {
        cr_assert_eq(pq_stream_next(s, &last, &err), 1, "%s: entry %u: %s", where, i, err.msg);
        k += last.has_value;
    }
    reader copy = r;
    pq_stream_entry forked_last = last;
    pq_stream *t = pq_stream_fork(s, h, &copy, at ? &forked_last : NULL, &err);
    if (!t) {
        cr_assert(strstr(err.msg, "not forkable"), "%s: %s", where, err.msg);
        cr_assert(col->codec == PQ_GZIP || col->codec == PQ_ZSTD || col->codec == PQ_BROTLI,
                  "%s: codec %d refused: %s", where, col->codec, err.msg);
        expect_rest(where, s, &pv, at, k);
    } else {
        cr_assert_eq(pq_stream_bytes(t), pq_stream_bytes(s), "%s", where);
        expect_rest(where, s, &pv, at, k);
        if (at > 0 && forked_last.has_value) {
            pq_bytes v = pq_page_value(&pv, k - 1);
            cr_assert(forked_last.value.len == v.len &&
                          (v.len == 0 || !memcmp(forked_last.value.ptr, v.ptr, v.len)),
                      "%s: the last entry's value in the fork differs", where);
        }
        expect_rest(where, t, &pv, at, k);
        cr_assert_eq(copy.pos, copy.len, "%s: the fork read %zu of %zu", where, copy.pos,
                     copy.len);
    }
    cr_assert_eq(r.pos, r.len, "%s", where);
    pq_stream_close(t);
    pq_stream_close(s);
    pq_page_values_free(&pv);
    return t != NULL;
}

/* Stream the page to entry `at`, mark it there, resume from the mark over a
 * fresh reader and expect the rest of pq_page_decode's entries. Returns 1
 * when marked (*from: the body offset the resumed stream read on from), 0
 * when not markable, -1 when the page does not stream. */
static int check_mark(const char *where, const pq_column_desc *col, const pq_page_header *h,
                      const uint8_t *body, const pq_dictionary *dict, const pq_stream_opts *o,
                      uint32_t at, size_t *from)
{
    pq_page_values pv;
    pq_error err = { "" };
    if (pq_page_decode(col, h, body, (size_t)h->compressed_size, dict, &pv, &err) < 0)
        return -1;
    reader r = make_reader(body, (size_t)h->compressed_size, 0);
    pq_stream *s = pq_stream_open(col, h, dict, o, read_body, &r, &err);
    if (!s) {
        pq_page_values_free(&pv);
        return -1;
    }
    at = at < pv.num_levels ? at : pv.num_levels;
    uint32_t k = 0;
    for (uint32_t i = 0; i < at; i++) {
        pq_stream_entry e;
        cr_assert_eq(pq_stream_next(s, &e, &err), 1, "%s: entry %u: %s", where, i, err.msg);
        k += e.has_value;
    }
    pq_stream_mark m;
    int marked = pq_stream_mark_here(s, &m);
    pq_stream_close(s);
    if (!marked) {
        int codec = h->type == PQ_PAGE_DATA_V2 && !h->is_compressed ? PQ_UNCOMPRESSED
                                                                     : col->codec;
        cr_assert(h->encoding != PQ_ENC_PLAIN || col->type == PQ_BOOLEAN ||
                      (codec != PQ_UNCOMPRESSED && codec != PQ_SNAPPY),
                  "%s: a PLAIN %s page not marked", where,
                  codec == PQ_SNAPPY ? "SNAPPY" : "UNCOMPRESSED");
        pq_page_values_free(&pv);
        return 0;
    }
    cr_assert_eq(m.pos, at, "%s", where);
    cr_assert_eq(m.seen, k, "%s", where);
    reader again = make_reader(body, (size_t)h->compressed_size, 777);
    pq_stream *t = pq_stream_resume(col, h, dict, o, read_body, seek_body, &again, &m, &err);
    cr_assert_not_null(t, "%s: resume: %s", where, err.msg);
    cr_assert_eq(again.seeks, 1, "%s", where);
    cr_assert_leq(pq_stream_bytes_max(t), pq_stream_memory_needed(h, col, o), "%s", where);
    expect_rest(where, t, &pv, at, k);
    cr_assert_eq(again.pos, again.len, "%s: read to %zu of %zu", where, again.pos, again.len);
    *from = again.seeked_to;
    pq_stream_close(t);
    pq_page_values_free(&pv);
    return 1;
}

/* ---- every page of every fixture ---- */

typedef struct walk {
    const char *file;
    int streamed[8];  /* per codec */
    int forked[8];    /* per codec, by check_fork */
    int marked[8];    /* per codec, by check_mark */
    int refused;
    int pages;
    int nopts;
    const pq_stream_opts *opts;
    const size_t *max_read;
} walk;

static int on_raw(void *ctx, const pq_leaf *leaf, const pq_column_desc *col,
                  const pq_page_header *h, const uint8_t *body, const pq_dictionary *dict,
                  pq_error *err)
{
    (void)err;
    walk *w = ctx;
    char where[512];
    w->pages++;
    for (int i = 0; i < w->nopts; i++) {
        snprintf(where, sizeof where, "%s %s page %d options %d", w->file, leaf->path, w->pages,
                 i);
        if (compare_page(where, col, h, body, dict, &w->opts[i], w->max_read[i]))
            w->streamed[col->codec & 7]++;
        else
            w->refused++;
    }
    /* forks at the first, a middle and the last entry, through small windows */
    const pq_stream_opts small = { .read_size = 1024, .out_size = 100 };
    const uint32_t ats[] = { 0, 1, (uint32_t)h->num_values / 2, (uint32_t)h->num_values };
    for (size_t i = 0; i < sizeof ats / sizeof ats[0]; i++) {
        snprintf(where, sizeof where, "%s %s page %d fork at %u", w->file, leaf->path,
                 w->pages, ats[i]);
        w->forked[col->codec & 7] += check_fork(where, col, h, body, dict, &small, 333,
                                                ats[i]) == 1;
        snprintf(where, sizeof where, "%s %s page %d mark at %u", w->file, leaf->path,
                 w->pages, ats[i]);
        size_t from;
        w->marked[col->codec & 7] += check_mark(where, col, h, body, dict, &small, ats[i],
                                                &from) == 1;
    }
    return 0;
}

static void walk_fixtures(walk *w, const pq_stream_opts *opts, const size_t *max_read, int n,
                          int *streamed, int *forked, int *marked, int *refused)
{
    size_t len;
    uint8_t *manifest = tu_fixture("MANIFEST", &len);
    cr_assert_not_null(manifest);
    char *text = malloc(len + 1);
    memcpy(text, manifest, len);
    text[len] = '\0';
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char parquet[256];
        cr_assert_eq(sscanf(line, "%255s", parquet), 1);
        size_t flen;
        uint8_t *data = tu_fixture(parquet, &flen);
        cr_assert_not_null(data, "%s", parquet);
        tu_file f;
        pq_error err = { "" };
        cr_assert_eq(tu_open(data, flen, &f, &err), 0, "%s: %s", parquet, err.msg);
        memset(w, 0, sizeof *w);
        w->file = parquet;
        w->opts = opts;
        w->max_read = max_read;
        w->nopts = n;
        for (int c = 0; c < f.nleaves; c++) {
            if (f.leaves[c].type == PQ_INT96)
                continue;
            cr_assert_eq(tu_walk_raw(&f, c, on_raw, w, &err), 0, "%s: %s", parquet, err.msg);
        }
        for (int c = 0; c < 8; c++) {
            streamed[c] += w->streamed[c];
            forked[c] += w->forked[c];
            marked[c] += w->marked[c];
        }
        *refused += w->refused;
        tu_close(&f);
        free(data);
    }
    free(text);
    free(manifest);
}

Test(stream, every_fixture_page_matches_the_whole_page_decoder)
{
    const pq_stream_opts opts[] = {
        { 0 },                                         /* defaults, whole reads */
        { .read_size = 64, .out_size = 64 },           /* the smallest windows */
        { .read_size = 1024, .out_size = 100 },        /* reads up to 1 KiB, tiny window */
        { .read_size = 4096, .out_size = 4096, .value_max = 1 << 20 },
    };
    const size_t max_read[] = { 0, 7, 1024, 333 };
    walk w;
    int streamed[8] = { 0 }, forked[8] = { 0 }, marked[8] = { 0 }, refused = 0;
    walk_fixtures(&w, opts, max_read, 4, streamed, forked, marked, &refused);
    int total = 0;
    for (int c = 0; c < 8; c++)
        total += streamed[c];
    cr_log_info("streamed %d page decodes (UNCOMPRESSED %d SNAPPY %d GZIP %d BROTLI %d LZ4 %d "
                "ZSTD %d LZ4_RAW %d), %d not streamable",
                total, streamed[PQ_UNCOMPRESSED], streamed[PQ_SNAPPY], streamed[PQ_GZIP],
                streamed[PQ_BROTLI], streamed[PQ_LZ4], streamed[PQ_ZSTD], streamed[PQ_LZ4_RAW],
                refused);
    const int codecs[] = { PQ_UNCOMPRESSED, PQ_SNAPPY, PQ_GZIP, PQ_BROTLI, PQ_LZ4, PQ_ZSTD,
                           PQ_LZ4_RAW };
    for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++)
        cr_expect_gt(streamed[codecs[i]], 0, "no page of codec %d streamed", codecs[i]);
    /* the codecs whose state is ours fork (the others' refusal is checked
     * page by page in check_fork) */
    const int forkable[] = { PQ_UNCOMPRESSED, PQ_SNAPPY, PQ_LZ4, PQ_LZ4_RAW };
    for (size_t i = 0; i < sizeof forkable / sizeof forkable[0]; i++)
        cr_expect_gt(forked[forkable[i]], 0, "no page of codec %d forked", forkable[i]);
    /* PLAIN pages with restart points resume from marks (the others' refusal
     * is checked page by page in check_mark) */
    cr_expect_gt(marked[PQ_UNCOMPRESSED], 0, "no UNCOMPRESSED page resumed from a mark");
    cr_expect_gt(marked[PQ_SNAPPY], 0, "no SNAPPY page resumed from a mark");
    cr_expect_gt(total, 4 * refused, "%d streamed, %d refused", total, refused);
}

/* ---- one page of a fixture, by file, column and page number ---- */

typedef struct page_ref {
    int want;        /* page index in the column (0-based) */
    int at;
    pq_column_desc col;
    pq_page_header h;
    uint8_t *body;   /* copy */
    int have_dict;
    pq_dictionary dict;
    const uint8_t *file_data;
} page_ref;

static int grab(void *ctx, const pq_leaf *leaf, const pq_column_desc *col,
                const pq_page_header *h, const uint8_t *body, const pq_dictionary *dict,
                pq_error *err)
{
    (void)leaf;
    (void)err;
    page_ref *p = ctx;
    if (p->at++ != p->want)
        return 0;
    p->col = *col;
    p->h = *h;
    p->body = malloc((size_t)h->compressed_size + 1);
    memcpy(p->body, body, (size_t)h->compressed_size);
    p->have_dict = dict != NULL;
    if (dict) {
        /* The walker frees its dictionary: keep a copy of the entries that
         * point into a copy of its storage. */
        p->dict.count = dict->count;
        p->dict.storage_len = dict->storage_len;
        p->dict.storage = malloc(dict->storage_len + 1);
        memcpy(p->dict.storage, dict->storage, dict->storage_len);
        p->dict.values = malloc((dict->count + 1) * sizeof *p->dict.values);
        for (uint32_t i = 0; i < dict->count; i++) {
            p->dict.values[i].len = dict->values[i].len;
            p->dict.values[i].ptr = p->dict.storage + (dict->values[i].ptr - dict->storage);
        }
    }
    return 0;
}

static void load_page(const char *file, const char *column, int index, page_ref *p)
{
    size_t len;
    uint8_t *data = tu_fixture(file, &len);
    cr_assert_not_null(data, "%s", file);
    tu_file f;
    pq_error err;
    cr_assert_eq(tu_open(data, len, &f, &err), 0, "%s", err.msg);
    int c = tu_find_leaf(&f, column);
    cr_assert_geq(c, 0, "%s: no column %s", file, column);
    memset(p, 0, sizeof *p);
    p->want = index;
    cr_assert_eq(tu_walk_raw(&f, c, grab, p, &err), 0, "%s", err.msg);
    cr_assert_not_null(p->body, "%s %s has no page %d", file, column, index);
    tu_close(&f);
    free(data);
}

static void free_page(page_ref *p)
{
    free(p->body);
    if (p->have_dict)
        pq_dictionary_free(&p->dict);
}

/* Decode to the end; returns 0, or -1 with the message. */
static int stream_all(page_ref *p, const pq_stream_opts *o, reader *r, pq_error *err,
                      uint32_t *longest)
{
    pq_stream *s = pq_stream_open(&p->col, &p->h, p->have_dict ? &p->dict : NULL, o, read_body,
                                  r, err);
    if (!s)
        return -1;
    pq_stream_entry e;
    int rc;
    while ((rc = pq_stream_next(s, &e, err)) == 1)
        if (longest && e.has_value && e.value.len > *longest)
            *longest = e.value.len;
    if (rc == -1) { /* and it stays failed */
        pq_error again;
        cr_assert_eq(pq_stream_next(s, &e, &again), -1);
        cr_assert_str_eq(again.msg, err->msg);
    }
    pq_stream_close(s);
    return rc;
}

Test(stream, truncated_bodies_fail_cleanly_at_every_length)
{
    static const struct { const char *file, *column; } pages[] = {
        { "gen_plain_v1_none.parquet", "s" },         { "gen_dict_v1_snappy.parquet", "s" },
        { "gen_dict_v2_gzip.parquet", "lst.list.element" },
        { "gen_plain_v2_brotli.parquet", "i64" },     { "gen_dict_v1_zstd_pageindex.parquet", "b" },
        { "gen_plain_v2_lz4.parquet", "bin" },        { "hadoop_lz4_compressed.parquet", "c0" },
        { "non_hadoop_lz4_compressed.parquet", "c0" }, { "stream_zstd.parquet", "cat" },
        { "gen_plain_v1_none.parquet", "lst.list.element" },
    };
    int checked = 0;
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
        page_ref p;
        load_page(pages[i].file, pages[i].column, 0, &p);
        size_t clen = (size_t)p.h.compressed_size;
        pq_stream_opts o = { .read_size = 64, .out_size = 64 };
        pq_error err;
        reader whole = make_reader(p.body, clen, 5);
        cr_assert_eq(stream_all(&p, &o, &whole, &err, NULL), 0, "%s %s: %s", pages[i].file,
                     pages[i].column, err.msg);
        for (size_t cut = 0; cut < clen; cut++) {
            reader r = make_reader(p.body, clen, 5);
            r.limit = cut;
            err.msg[0] = '\0';
            cr_assert_eq(stream_all(&p, &o, &r, &err, NULL), -1,
                         "%s %s: a body cut at %zu of %zu bytes decoded", pages[i].file,
                         pages[i].column, cut, clen);
            cr_assert_neq(err.msg[0], '\0');
            checked++;
        }
        free_page(&p);
    }
    cr_log_info("%d truncated bodies refused", checked);
}

static int find_big_text_page(const char *file, page_ref *p)
{
    for (int i = 0; i < 16; i++) {
        load_page(file, "text", i, p);
        uint32_t longest = 0;
        pq_error err;
        reader r = make_reader(p->body, (size_t)p->h.compressed_size, 0);
        cr_assert_eq(stream_all(p, NULL, &r, &err, &longest), 0, "%s", err.msg);
        if (longest == 20480)
            return i;
        free_page(p);
    }
    cr_assert_fail("%s: no page with a 20 KiB value", file);
    return -1;
}

Test(stream, values_wider_than_the_window_grow_it_up_to_value_max)
{
    const char *files[] = { "stream_none.parquet", "stream_snappy.parquet",
                            "stream_gzip.parquet", "stream_lz4.parquet", "stream_zstd.parquet",
                            "stream_brotli.parquet" };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        page_ref p;
        find_big_text_page(files[i], &p);
        pq_stream_opts small = { .read_size = 256, .out_size = 1024 };
        cr_assert_lt(small.out_size + PQ_STREAM_SNAPPY_WINDOW, (size_t)p.h.uncompressed_size);
        cr_assert(compare_page(files[i], &p.col, &p.h, p.body, NULL, &small, 100));
        pq_stream_opts tight = { .out_size = 1024, .value_max = 20479 };
        pq_error err;
        reader r = make_reader(p.body, (size_t)p.h.compressed_size, 0);
        cr_assert_eq(stream_all(&p, &tight, &r, &err, NULL), -1, "%s", files[i]);
        cr_assert(strstr(err.msg, "value limit"), "%s", err.msg);
        cr_assert(strstr(err.msg, "not streamable"), "%s", err.msg);
        free_page(&p);
    }
}

Test(stream, snappy_copy_beyond_the_window_fails)
{
    page_ref p;
    find_big_text_page("stream_snappy.parquet", &p);
    cr_assert_eq(p.col.codec, PQ_SNAPPY);
    pq_stream_opts o = { .snappy_window = 1024 }; /* the page repeats a 4 KiB block */
    pq_error err;
    reader r = make_reader(p.body, (size_t)p.h.compressed_size, 0);
    cr_assert_eq(stream_all(&p, &o, &r, &err, NULL), -1);
    cr_assert(strstr(err.msg, "beyond the stream's window"), "%s", err.msg);
    o.snappy_window = 0; /* the default, 64 KiB: copies reach up to 22 KiB back here */
    r = make_reader(p.body, (size_t)p.h.compressed_size, 0);
    cr_assert_eq(stream_all(&p, &o, &r, &err, NULL), 0, "%s", err.msg);
    free_page(&p);
}

Test(stream, brotli_window_over_the_limit_is_refused)
{
    page_ref p;
    load_page("stream_brotli.parquet", "ids.list.element", 0, &p);
    pq_stream_opts o = { .window_max = 512 };
    pq_error err;
    reader r = make_reader(p.body, (size_t)p.h.compressed_size, 0);
    cr_assert_eq(stream_all(&p, &o, &r, &err, NULL), -1);
    cr_assert(strstr(err.msg, "not streamable"), "%s", err.msg);
    free_page(&p);
}

Test(stream, skip_lands_on_the_same_entry)
{
    page_ref p;
    load_page("stream_gzip.parquet", "ids.list.element", 0, &p);
    pq_page_values pv;
    pq_error err;
    cr_assert_eq(pq_page_decode(&p.col, &p.h, p.body, (size_t)p.h.compressed_size, NULL, &pv,
                                &err),
                 0, "%s", err.msg);
    reader r = make_reader(p.body, (size_t)p.h.compressed_size, 100);
    pq_stream_opts o = { .out_size = 512 };
    pq_stream *s = pq_stream_open(&p.col, &p.h, NULL, &o, read_body, &r, &err);
    cr_assert_not_null(s, "%s", err.msg);
    uint32_t k = 0, at = 0;
    for (uint32_t step = 1; at < pv.num_levels; step = step * 3 + 1) {
        uint32_t n = step < pv.num_levels - at ? step : pv.num_levels - at - 1;
        cr_assert_eq(pq_stream_skip(s, n, &err), n, "%s", err.msg);
        for (uint32_t i = at; i < at + n; i++)
            k += pv.def_levels[i] == p.col.max_def;
        at += n;
        cr_assert_eq(pq_stream_position(s), at);
        pq_stream_entry e;
        cr_assert_eq(pq_stream_next(s, &e, &err), 1, "%s", err.msg);
        cr_assert_eq(e.def, pv.def_levels[at]);
        cr_assert_eq(e.rep, pv.rep_levels[at]);
        if (e.has_value) {
            cr_assert_eq(e.value.len, 8);
            cr_assert_eq(memcmp(e.value.ptr, pq_page_value(&pv, k).ptr, 8), 0);
            k++;
        }
        at++;
    }
    cr_assert_eq(pq_stream_skip(s, 5, &err), 0);
    pq_stream_close(s);
    pq_page_values_free(&pv);
    free_page(&p);
}

/* ---- a large synthetic page: memory stays within the bound ---- */

/* A v1 page of `lists` lists of `per` INT64 values: rep levels as RLE runs
 * (0 then per-1 ones), def levels one RLE run of max_def, PLAIN values i. */
static uint8_t *big_page(uint32_t lists, uint32_t per, size_t *len)
{
    size_t n = (size_t)lists * per;
    uint8_t *p = malloc(n * 8 + (size_t)lists * 8 + 64), *at = p + 4;
    for (uint32_t l = 0; l < lists; l++) {
        uint32_t ones = (per - 1) << 1;
        *at++ = 1 << 1; /* run of one 0 */
        *at++ = 0;
        do { /* uleb */
            *at++ = (uint8_t)((ones & 0x7f) | (ones > 0x7f ? 0x80 : 0));
            ones >>= 7;
        } while (ones);
        *at++ = 1;
    }
    uint32_t rep_len = (uint32_t)(at - p - 4);
    memcpy(p, &rep_len, 4);
    uint8_t *def = at;
    at += 4;
    uint64_t h = (uint64_t)n << 1;
    do {
        *at++ = (uint8_t)((h & 0x7f) | (h > 0x7f ? 0x80 : 0));
        h >>= 7;
    } while (h);
    *at++ = 3;
    uint32_t def_len = (uint32_t)(at - def - 4);
    memcpy(def, &def_len, 4);
    for (uint64_t i = 0; i < n; i++, at += 8)
        memcpy(at, &i, 8);
    *len = (size_t)(at - p);
    return p;
}

Test(stream, a_large_page_streams_within_its_bound)
{
    const uint32_t lists = 10000, per = 200; /* 2 M values, 16 MB of PLAIN INT64 */
    size_t ulen;
    uint8_t *raw = big_page(lists, per, &ulen);
    size_t cap = ZSTD_compressBound(ulen);
    uint8_t *z = malloc(cap);
    size_t clen = ZSTD_compress(z, cap, raw, ulen, 1);
    cr_assert(!ZSTD_isError(clen));
    pq_column_desc col = { PQ_INT64, 0, 3, 1, PQ_ZSTD };
    pq_page_header h = { .type = PQ_PAGE_DATA, .uncompressed_size = (int32_t)ulen,
                         .compressed_size = (int32_t)clen, .num_values = (int32_t)(lists * per),
                         .encoding = PQ_ENC_PLAIN, .def_encoding = PQ_ENC_RLE,
                         .rep_encoding = PQ_ENC_RLE };
    size_t bound = pq_stream_memory_needed(&h, &col, NULL);
    cr_log_info("page of %zu bytes (%zu compressed), %u values: bound %zu bytes", ulen, clen,
                lists * per, bound);
    cr_assert_lt(bound, (size_t)8 << 20, "bound %zu", bound);
    reader r = make_reader(z, clen, 0);
    pq_error err;
    pq_stream *s = pq_stream_open(&col, &h, NULL, NULL, read_body, &r, &err);
    cr_assert_not_null(s, "%s", err.msg);
    size_t peak = 0, after_open = pq_stream_bytes_max(s);
    cr_assert_leq(after_open, bound);
    pq_stream_entry e;
    uint64_t i = 0;
    int rc;
    while ((rc = pq_stream_next(s, &e, &err)) == 1) {
        size_t now = pq_stream_bytes(s);
        peak = now > peak ? now : peak;
        cr_assert_eq(e.rep, i % per != 0, "entry %llu", (unsigned long long)i);
        cr_assert_eq(e.def, 3);
        uint64_t v;
        memcpy(&v, e.value.ptr, 8);
        cr_assert_eq(v, i);
        i++;
    }
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(i, (uint64_t)lists * per);
    cr_assert_leq(peak, after_open);
    cr_log_info("held at most %zu bytes (bound after open %zu)", peak, after_open);
    pq_stream_close(s);

    /* The same bytes, compressed with an 8 MiB window: refused at the 2 MiB default. */
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_windowLog, 23);
    ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
    clen = ZSTD_compress2(cc, z, cap, raw, ulen);
    cr_assert(!ZSTD_isError(clen));
    ZSTD_freeCCtx(cc);
    h.compressed_size = (int32_t)clen;
    r = make_reader(z, clen, 0);
    cr_assert_null(pq_stream_open(&col, &h, NULL, NULL, read_body, &r, &err));
    cr_assert(strstr(err.msg, "not streamable"), "%s", err.msg);
    pq_stream_opts wide = { .window_max = (size_t)8 << 20 };
    r = make_reader(z, clen, 0);
    s = pq_stream_open(&col, &h, NULL, &wide, read_body, &r, &err);
    cr_assert_not_null(s, "%s", err.msg);
    cr_assert_eq(pq_stream_skip(s, (uint64_t)lists * per + 1, &err), (int64_t)lists * per,
                 "%s", err.msg);
    cr_assert_leq(pq_stream_bytes(s), pq_stream_memory_needed(&h, &col, &wide));
    pq_stream_close(s);

    /* Overlong and short bodies: the header's sizes must hold exactly. */
    h.uncompressed_size = (int32_t)ulen - 1;
    r = make_reader(z, clen, 0);
    s = pq_stream_open(&col, &h, NULL, &wide, read_body, &r, &err);
    cr_assert_not_null(s, "%s", err.msg);
    cr_assert_eq(pq_stream_skip(s, (uint64_t)lists * per, &err), -1);
    pq_stream_close(s);
    free(z);
    free(raw);
}

/* ---- levels over their maximum ---- */

/* Append a v1 level section of 2-bit RLE runs {count, value} to at. */
static uint8_t *level_section(uint8_t *at, const uint32_t (*runs)[2], int n)
{
    uint8_t *len_at = at;
    at += 4;
    for (int r = 0; r < n; r++) {
        uint32_t h = runs[r][0] << 1;
        do {
            *at++ = (uint8_t)((h & 0x7f) | (h > 0x7f ? 0x80 : 0));
            h >>= 7;
        } while (h);
        *at++ = (uint8_t)runs[r][1];
    }
    uint32_t len = (uint32_t)(at - len_at - 4);
    memcpy(len_at, &len, 4);
    return at;
}

/* A level past the column's maximum fails naming the levels, the entry and
 * the level, at open for definition levels (they are counted there) and at
 * the entry for repetition levels, the entries before it handed out. */
Test(stream, a_level_over_the_maximum_fails_naming_its_entry)
{
    enum { N = 600, BAD = 300 };
    static uint8_t body[N * 8 + 64];
    const uint32_t good_defs[][2] = { { N, 2 } };
    const uint32_t bad_defs[][2] = { { BAD, 2 }, { 1, 3 }, { N - BAD - 1, 2 } };
    const uint32_t bad_reps[][2] = { { 1, 0 }, { BAD - 1, 1 }, { 1, 3 }, { N - BAD - 1, 1 } };
    for (int rep = 0; rep < 2; rep++) {
        pq_column_desc col = { PQ_INT64, 0, 2, rep ? 2 : 0, PQ_UNCOMPRESSED };
        uint8_t *at = body;
        if (rep)
            at = level_section(at, bad_reps, 4);
        at = rep ? level_section(at, good_defs, 1) : level_section(at, bad_defs, 3);
        for (uint64_t i = 0; i < N; i++, at += 8)
            memcpy(at, &i, 8);
        size_t len = (size_t)(at - body);
        pq_page_header h = { .type = PQ_PAGE_DATA, .uncompressed_size = (int32_t)len,
                             .compressed_size = (int32_t)len, .num_values = N,
                             .encoding = PQ_ENC_PLAIN, .def_encoding = PQ_ENC_RLE,
                             .rep_encoding = PQ_ENC_RLE };
        reader r = make_reader(body, len, 0);
        pq_error err;
        pq_stream *s = pq_stream_open(&col, &h, NULL, NULL, read_body, &r, &err);
        const char *what = rep ? "repetition levels" : "definition levels";
        uint32_t taken = 0;
        if (s) {
            cr_assert(rep, "the definition levels are counted at open");
            pq_stream_entry e;
            while (pq_stream_next(s, &e, &err) == 1)
                taken++;
            pq_stream_close(s);
        }
        cr_assert_eq(taken, rep ? BAD : 0);
        char want[128];
        snprintf(want, sizeof want, "%s: level 3 of entry %d exceeds the maximum 2", what, BAD);
        cr_assert(strstr(err.msg, want), "%s (want %s)", err.msg, want);
    }
}

Test(stream, refuses_what_does_not_stream)
{
    pq_column_desc col = { PQ_INT64, 0, 0, 0, PQ_LZO };
    pq_page_header h = { .type = PQ_PAGE_DATA, .uncompressed_size = 8, .compressed_size = 8,
                         .num_values = 1, .encoding = PQ_ENC_PLAIN };
    pq_error err;
    reader r = make_reader((const uint8_t *)"12345678", 8, 0);
    cr_assert_eq(pq_stream_memory_needed(&h, &col, NULL), 0);
    cr_assert_null(pq_stream_open(&col, &h, NULL, NULL, read_body, &r, &err));
    cr_assert(strstr(err.msg, "not streamable"), "%s", err.msg);
    col.codec = PQ_UNCOMPRESSED;
    h.encoding = PQ_ENC_DELTA_BINARY_PACKED;
    cr_assert_null(pq_stream_open(&col, &h, NULL, NULL, read_body, &r, &err));
    cr_assert(strstr(err.msg, "not streamable"), "%s", err.msg);
    h.encoding = PQ_ENC_PLAIN;
    pq_stream_opts o = { .cap = 100 };
    cr_assert_null(pq_stream_open(&col, &h, NULL, &o, read_body, &r, &err));
    cr_assert(strstr(err.msg, "over the cap"), "%s", err.msg);
    pq_stream *s = pq_stream_open(&col, &h, NULL, NULL, read_body, &r, &err);
    cr_assert_not_null(s, "%s", err.msg);
    pq_stream_entry e;
    cr_assert_eq(pq_stream_next(s, &e, &err), 1);
    cr_assert_eq(memcmp(e.value.ptr, "12345678", 8), 0);
    cr_assert_eq(pq_stream_next(s, &e, &err), 0);
    cr_assert_eq(pq_stream_next(s, &e, &err), 0);
    pq_stream_close(s);
}

static uint32_t lcg_next(uint32_t *x)
{
    *x = *x * 1664525u + 1013904223u;
    return *x >> 8;
}

/* A SNAPPY body of n seeded random elements: literals with the length in
 * the tag and in 1 or 2 more bytes, copies with 1-, 2- and 4-byte offsets,
 * from 1 to 2,000 bytes back (overlapping ones too). raw receives what it
 * decompresses to, by a byte-by-byte copy; returns the body's length. */
static size_t random_snappy(uint32_t seed, size_t n, uint8_t *body, uint8_t *raw, size_t *ulen)
{
    size_t clen = 5, u = 0; /* body[0..4]: the length varint, written last */
    uint32_t x = seed;
#define NEXT() lcg_next(&x)
    for (size_t i = 0; i < n; i++) {
        uint32_t kind = u < 8 ? 0 : NEXT() % 5;
        if (kind == 0) {
            size_t len = NEXT() % 3 == 0 ? 61 + NEXT() % 400 : 1 + NEXT() % 60;
            if (len <= 60) {
                body[clen++] = (uint8_t)((len - 1) << 2);
            } else {
                body[clen++] = (uint8_t)(61 << 2); /* 2 length bytes follow */
                body[clen++] = (uint8_t)(len - 1);
                body[clen++] = (uint8_t)((len - 1) >> 8);
            }
            for (size_t k = 0; k < len; k++)
                raw[u + k] = body[clen + k] = (uint8_t)NEXT();
            clen += len;
            u += len;
            continue;
        }
        size_t reach = NEXT() % 2 ? 20 : 2000, off = 1 + NEXT() % reach, len;
        if (off > u)
            off = u;
        if (kind == 1 && off < 2048) { /* 1-byte offset: length 4..11 */
            len = 4 + NEXT() % 8;
            body[clen++] = (uint8_t)((off >> 8) << 5 | (len - 4) << 2 | 1);
            body[clen++] = (uint8_t)off;
        } else {
            len = 1 + NEXT() % 64;
            body[clen++] = (uint8_t)((len - 1) << 2 | (kind == 4 ? 3 : 2));
            for (int b = 0; b < (kind == 4 ? 4 : 2); b++)
                body[clen++] = (uint8_t)(off >> (8 * b));
        }
        for (size_t k = 0; k < len; k++, u++)
            raw[u] = raw[u - off];
    }
    size_t pad = (8 - u % 8) % 8; /* a last literal: whole INT64 values */
    if (pad) {
        body[clen++] = (uint8_t)((pad - 1) << 2);
        for (size_t k = 0; k < pad; k++)
            raw[u++] = body[clen++] = (uint8_t)NEXT();
    }
#undef NEXT
    *ulen = u;
    for (int b = 0; b < 5; b++) /* a 5-byte varint (padded with continuation bits) */
        body[b] = (uint8_t)((u >> (7 * b)) & 0x7f) | (b < 4 ? 0x80 : 0);
    return clen;
}

/* Every kind of SNAPPY element, decoded by the stream with windows and
 * reads small and large (the element-at-a-time path and the fast path that
 * takes whole elements when both sides have room): the bytes a naive
 * decoder gives, and libsnappy's. */
Test(stream, snappy_every_element_kind_at_every_window)
{
    enum { ELEMENTS = 4000 };
    uint8_t *body = malloc(ELEMENTS * 500), *raw = malloc(ELEMENTS * 500);
    cr_assert(body && raw);
    static const pq_stream_opts opts[] = {
        { .read_size = 64, .out_size = 64 },    { .read_size = 100, .out_size = 4096 },
        { .read_size = 4096, .out_size = 100 }, { 0 },
    };
    for (uint32_t seed = 1; seed <= 8; seed++) {
        size_t ulen, clen = random_snappy(seed, ELEMENTS, body, raw, &ulen);
        pq_column_desc col = { PQ_INT64, 0, 0, 0, PQ_SNAPPY };
        pq_page_header h = { .type = PQ_PAGE_DATA, .uncompressed_size = (int32_t)ulen,
                             .compressed_size = (int32_t)clen,
                             .num_values = (int32_t)(ulen / 8), .encoding = PQ_ENC_PLAIN };
        pq_page_values pv;
        pq_error err;
        cr_assert_eq(pq_page_decode(&col, &h, body, clen, NULL, &pv, &err), 0, "%s", err.msg);
        cr_assert_eq(pv.num_values, ulen / 8);
        for (uint32_t i = 0; i < pv.num_values; i++)
            cr_assert_eq(memcmp(pq_page_value(&pv, i).ptr, raw + 8 * i, 8), 0, "libsnappy, value %u", i);
        for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
            reader r = make_reader(body, clen, 0);
            pq_stream *s = pq_stream_open(&col, &h, NULL, &opts[k], read_body, &r, &err);
            cr_assert_not_null(s, "%s", err.msg);
            pq_stream_entry e;
            uint32_t i = 0;
            int rc;
            while ((rc = pq_stream_next(s, &e, &err)) == 1) {
                cr_assert_eq(memcmp(e.value.ptr, raw + 8 * i, 8), 0, "seed %u opts %zu value %u",
                             seed, k, i);
                i++;
            }
            cr_assert_eq(rc, 0, "seed %u opts %zu: %s", seed, k, err.msg);
            cr_assert_eq(i, ulen / 8, "seed %u opts %zu", seed, k);
            pq_stream_close(s);
        }
        pq_page_values_free(&pv);
    }
    free(body);
    free(raw);
}

/* SNAPPY copies that overlap what they copy (offset < length: the bytes
 * repeat with the offset's period), across fills of the smallest window and
 * reads of 1..7 bytes: the stream gives the bytes a naive byte-by-byte copy
 * gives, and pq_page_decode (libsnappy) agrees. */
Test(stream, snappy_overlapping_copies)
{
    static const struct { size_t off, len; } copies[] = {
        { 1, 64 }, { 3, 61 }, { 7, 59 }, { 16, 64 }, { 2, 5 }, { 64, 64 }, { 5, 56 },
    };
    uint8_t raw[1024], body[256];
    size_t ulen = 0, clen = 2; /* body[0..1]: the length varint, set below */
    const char *lit = "ABCDEFGHxyz";
    for (size_t i = 0; i < sizeof copies / sizeof copies[0]; i++) {
        size_t n = i == 0 ? 8 : i == 4 ? 3 : 0; /* literals before copies 0 and 4 */
        if (n) {
            body[clen++] = (uint8_t)((n - 1) << 2);
            memcpy(body + clen, lit + (i ? 8 : 0), n);
            memcpy(raw + ulen, lit + (i ? 8 : 0), n);
            clen += n;
            ulen += n;
        }
        body[clen++] = (uint8_t)((copies[i].len - 1) << 2 | 2); /* 2-byte offset */
        body[clen++] = (uint8_t)copies[i].off;
        body[clen++] = 0;
        for (size_t k = 0; k < copies[i].len; k++, ulen++)
            raw[ulen] = raw[ulen - copies[i].off];
    }
    cr_assert_eq(ulen % 8, 0, "%zu", ulen);
    cr_assert(ulen >= 128 && ulen < 16384, "%zu", ulen);
    body[0] = (uint8_t)(ulen | 0x80);
    body[1] = (uint8_t)(ulen >> 7);
    pq_column_desc col = { PQ_INT64, 0, 0, 0, PQ_SNAPPY };
    pq_page_header h = { .type = PQ_PAGE_DATA, .uncompressed_size = (int32_t)ulen,
                         .compressed_size = (int32_t)clen, .num_values = (int32_t)(ulen / 8),
                         .encoding = PQ_ENC_PLAIN };
    pq_page_values pv;
    pq_error err;
    cr_assert_eq(pq_page_decode(&col, &h, body, clen, NULL, &pv, &err), 0, "%s", err.msg);
    cr_assert_eq(pv.num_values, ulen / 8);
    const pq_stream_opts o = { .read_size = 64, .out_size = 64 };
    reader r = make_reader(body, clen, 7);
    pq_stream *s = pq_stream_open(&col, &h, NULL, &o, read_body, &r, &err);
    cr_assert_not_null(s, "%s", err.msg);
    pq_stream_entry e;
    uint32_t i = 0;
    int rc;
    while ((rc = pq_stream_next(s, &e, &err)) == 1) {
        cr_assert_eq(e.value.len, 8);
        cr_assert_eq(memcmp(e.value.ptr, raw + 8 * i, 8), 0, "value %u", i);
        cr_assert_eq(memcmp(pq_page_value(&pv, i).ptr, raw + 8 * i, 8), 0, "libsnappy, value %u", i);
        i++;
    }
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(i, ulen / 8);
    pq_stream_close(s);
    pq_page_values_free(&pv);
}

/* ---- large SNAPPY pages, made here ---- */

/* PLAIN BYTE_ARRAY values of 20..400 bytes of words and digits, n of them. */
static uint8_t *plain_strings(uint32_t n, size_t *len)
{
    static const char words[] = "parquet page stream mark shuffle epoch token record ";
    uint8_t *p = malloc((size_t)n * 404);
    size_t at = 0;
    uint32_t seed = 7;
    for (uint32_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        uint32_t vlen = 20 + (seed >> 8) % 381;
        memcpy(p + at, &vlen, 4); /* little-endian hosts only, as the decoder */
        uint32_t from = (seed >> 16) % (sizeof words - 1);
        for (uint32_t j = 0; j < vlen; j++) {
            seed = seed * 1103515245u + 12345u;
            p[at + 4 + j] = j % 9 == 0 ? (uint8_t)('0' + (seed >> 16) % 10)
                                       : (uint8_t)words[(from + j) % (sizeof words - 1)];
        }
        at += 4 + vlen;
    }
    *len = at;
    return p;
}

static uint8_t *snappy(const uint8_t *in, size_t len, size_t *out_len)
{
    *out_len = snappy_max_compressed_length(len);
    uint8_t *out = malloc(*out_len);
    cr_assert_eq(snappy_compress((const char *)in, len, (char *)out, out_len), SNAPPY_OK);
    return out;
}

/* Marks all over a page of n values: each resumed stream matches the
 * decoder, and reads the body from within a block (plus the varint and
 * levels) of its mark's value on. */
static void marks_over(const char *what, const pq_column_desc *col, const pq_page_header *h,
                       const uint8_t *body, size_t levels, size_t values_len)
{
    int far = 0;
    for (uint32_t at = 0; at <= (uint32_t)h->num_values; at += 997) {
        char where[128];
        snprintf(where, sizeof where, "%s, mark at %u", what, at);
        size_t from = 0;
        cr_assert_eq(check_mark(where, col, h, body, NULL, NULL, at, &from), 1, "%s", where);
        cr_assert_geq(from, levels, "%s", where);
        far += from > levels + 65536;
    }
    cr_assert_gt(far, 0, "%s: no mark read on from past its first block (%zu value bytes)",
                 what, values_len);
}

Test(stream, a_large_snappy_v1_page_resumes_from_the_block_of_its_mark)
{
    const uint32_t n = 20000;
    size_t raw_len, body_len;
    uint8_t *raw = plain_strings(n, &raw_len);
    uint8_t *body = snappy(raw, raw_len, &body_len);
    pq_column_desc col = { .type = PQ_BYTE_ARRAY, .codec = PQ_SNAPPY };
    pq_page_header h = { .type = PQ_PAGE_DATA, .uncompressed_size = (int32_t)raw_len,
                         .compressed_size = (int32_t)body_len, .num_values = (int32_t)n,
                         .encoding = PQ_ENC_PLAIN };
    marks_over("v1, required", &col, &h, body, 0, raw_len);
    free(body);
    free(raw);
}

Test(stream, a_large_snappy_v2_page_with_levels_resumes_from_the_block_of_its_mark)
{
    const uint32_t n = 20000;
    size_t raw_len, values_len;
    uint8_t *raw = plain_strings(n, &raw_len);
    uint8_t *values = snappy(raw, raw_len, &values_len);
    /* def levels: one RLE run of n ones (bit width 1: the value in a byte) */
    uint8_t levels[8];
    size_t lv = 0;
    for (uint32_t v = n << 1; ; v >>= 7) {
        levels[lv++] = (uint8_t)(v & 0x7f) | (v >= 0x80 ? 0x80 : 0);
        if (v < 0x80)
            break;
    }
    levels[lv++] = 1;
    uint8_t *body = malloc(lv + values_len);
    memcpy(body, levels, lv);
    memcpy(body + lv, values, values_len);
    pq_column_desc col = { .type = PQ_BYTE_ARRAY, .codec = PQ_SNAPPY, .max_def = 1 };
    pq_page_header h = { .type = PQ_PAGE_DATA_V2,
                         .uncompressed_size = (int32_t)(lv + raw_len),
                         .compressed_size = (int32_t)(lv + values_len),
                         .num_values = (int32_t)n, .num_rows = (int32_t)n,
                         .encoding = PQ_ENC_PLAIN, .def_levels_len = (int32_t)lv,
                         .is_compressed = 1 };
    marks_over("v2, optional", &col, &h, body, lv, raw_len);
    free(body);
    free(values);
    free(raw);
}

Test(stream, a_copy_across_blocks_is_not_resumable)
{
    /* a literal of 65,536 bytes, then at the block's start a copy of 4
     * bytes from 10 back: valid SNAPPY that no block compressor writes; as
     * 16,385 values of FIXED_LEN_BYTE_ARRAY(4) */
    const size_t lit = 65536, raw_len = lit + 4;
    uint8_t *body = malloc(raw_len + 16);
    size_t b = 0;
    for (size_t v = raw_len;; v >>= 7) { /* the length varint */
        body[b++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80)
            break;
    }
    body[b++] = 61 << 2; /* a literal whose length - 1 follows in 2 bytes */
    body[b++] = (uint8_t)((lit - 1) & 0xff);
    body[b++] = (uint8_t)((lit - 1) >> 8);
    for (size_t i = 0; i < lit; i++)
        body[b++] = (uint8_t)('a' + i % 26);
    body[b++] = (uint8_t)((4 - 1) << 2 | 2); /* a copy of 4, 2-byte offset 10 */
    body[b++] = 10;
    body[b++] = 0;
    pq_column_desc col = { .type = PQ_FIXED_LEN_BYTE_ARRAY, .type_length = 4,
                           .codec = PQ_SNAPPY };
    pq_page_header h = { .type = PQ_PAGE_DATA, .uncompressed_size = (int32_t)raw_len,
                         .compressed_size = (int32_t)b, .num_values = (int32_t)(raw_len / 4),
                         .encoding = PQ_ENC_PLAIN };
    /* read straight, the page is fine */
    reader r = make_reader(body, b, 0);
    pq_error err = { "" };
    pq_stream *s = pq_stream_open(&col, &h, NULL, NULL, read_body, &r, &err);
    cr_assert_not_null(s, "%s", err.msg);
    pq_stream_entry e;
    for (uint32_t i = 0; i < lit / 4; i++)
        cr_assert_eq(pq_stream_next(s, &e, &err), 1, "entry %u: %s", i, err.msg);
    pq_stream_mark m;
    cr_assert_eq(pq_stream_mark_here(s, &m), 1);
    cr_assert_eq(m.restart_u, lit, "the copy starts a block: a restart point");
    cr_assert_eq(pq_stream_next(s, &e, &err), 1, "%s", err.msg);
    cr_assert(e.value.len == 4 && !memcmp(e.value.ptr, body + b - 3 - 10, 4));
    pq_stream_close(s);
    /* resumed there, the copy reaches before the point */
    reader again = make_reader(body, b, 0);
    s = pq_stream_resume(&col, &h, NULL, NULL, read_body, seek_body, &again, &m, &err);
    int rc = s ? pq_stream_next(s, &e, &err) : -1;
    cr_assert_eq(rc, -1, "a value resumed across blocks was handed out");
    cr_assert(pq_stream_resume_instead(&err), "%s", err.msg);
    pq_stream_close(s);
    free(body);
}
