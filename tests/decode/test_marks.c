/* Marks (pq_stream.h): a stream resumed from a mark hands out exactly the
 * entries the marked stream handed out after it, as pq_page_decode has them,
 * on every page of every fixture and at several entries of each; and on
 * large SNAPPY pages (compressed here by libsnappy, in its 64 KiB blocks) it
 * reads the body only from the block of its mark on. A body whose copies
 * cross the blocks fails as "not resumable". */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pq_stream.h"
#include "tu.h"

/* A body served from memory, with the seek a resumed stream asks for. */
typedef struct body_reader {
    const uint8_t *p;
    size_t len;
    size_t pos;
    size_t served;   /* bytes handed to the stream in all */
    int seeks;
    size_t seeked_to;
} body_reader;

static int read_body(void *ctx, uint8_t *buf, size_t want, size_t *got, pq_error *err)
{
    (void)err;
    body_reader *r = ctx;
    cr_assert(want >= 1 && r->pos + want <= r->len, "stream asked for %zu bytes at %zu of %zu",
              want, r->pos, r->len);
    size_t n = want < 777 ? want : 777; /* short reads, as a file's may be */
    memcpy(buf, r->p + r->pos, n);
    r->pos += n;
    r->served += n;
    *got = n;
    return 0;
}

static int seek_body(void *ctx, uint64_t offset, pq_error *err)
{
    (void)err;
    body_reader *r = ctx;
    cr_assert_leq(offset, r->len, "seek to %llu of %zu", (unsigned long long)offset, r->len);
    r->pos = (size_t)offset;
    r->seeks++;
    r->seeked_to = (size_t)offset;
    return 0;
}

/* The entries from entry i (value k) on, as s hands them out, against pv. */
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
    cr_assert_eq(k, pv->num_values, "%s", where);
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
    body_reader r = { body, (size_t)h->compressed_size, 0, 0, 0, 0 };
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
    body_reader again = { body, (size_t)h->compressed_size, 0, 0, 0, 0 };
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

typedef struct walk {
    const char *file;
    int pages;
    int marked[8]; /* per codec */
} walk;

static int on_raw(void *ctx, const pq_leaf *leaf, const pq_column_desc *col,
                  const pq_page_header *h, const uint8_t *body, const pq_dictionary *dict,
                  pq_error *err)
{
    (void)err;
    walk *w = ctx;
    w->pages++;
    const pq_stream_opts opts[] = { { 0 }, { .read_size = 64, .out_size = 64 } };
    const uint32_t ats[] = { 0, 1, (uint32_t)h->num_values / 2, (uint32_t)h->num_values };
    for (size_t o = 0; o < sizeof opts / sizeof opts[0]; o++) {
        for (size_t i = 0; i < sizeof ats / sizeof ats[0]; i++) {
            char where[512];
            snprintf(where, sizeof where, "%s %s page %d options %zu mark at %u", w->file,
                     leaf->path, w->pages, o, ats[i]);
            size_t from;
            w->marked[col->codec & 7] +=
                check_mark(where, col, h, body, dict, &opts[o], ats[i], &from) == 1;
        }
    }
    return 0;
}

Test(marks, every_fixture_page_resumes_from_its_marks)
{
    size_t len;
    uint8_t *manifest = tu_fixture("MANIFEST", &len);
    cr_assert_not_null(manifest);
    char *text = malloc(len + 1);
    memcpy(text, manifest, len);
    text[len] = '\0';
    int marked[8] = { 0 };
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char parquet[256];
        cr_assert_eq(sscanf(line, "%255s", parquet), 1);
        size_t flen;
        uint8_t *data = tu_fixture(parquet, &flen);
        cr_assert_not_null(data, "%s", parquet);
        tu_file f;
        pq_error err = { "" };
        cr_assert_eq(tu_open(data, flen, &f, &err), 0, "%s: %s", parquet, err.msg);
        walk w = { .file = parquet };
        for (int c = 0; c < f.nleaves; c++) {
            if (f.leaves[c].type == PQ_INT96)
                continue;
            cr_assert_eq(tu_walk_raw(&f, c, on_raw, &w, &err), 0, "%s: %s", parquet, err.msg);
        }
        for (int c = 0; c < 8; c++)
            marked[c] += w.marked[c];
        tu_close(&f);
        free(data);
    }
    free(text);
    free(manifest);
    cr_log_info("marked and resumed: UNCOMPRESSED %d, SNAPPY %d", marked[PQ_UNCOMPRESSED],
                marked[PQ_SNAPPY]);
    cr_expect_gt(marked[PQ_UNCOMPRESSED], 0);
    cr_expect_gt(marked[PQ_SNAPPY], 0);
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

Test(marks, a_large_snappy_v1_page_resumes_from_the_block_of_its_mark)
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

Test(marks, a_large_snappy_v2_page_with_levels_resumes_from_the_block_of_its_mark)
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

Test(marks, a_copy_across_blocks_is_not_resumable)
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
    body_reader r = { body, b, 0, 0, 0, 0 };
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
    body_reader again = { body, b, 0, 0, 0, 0 };
    s = pq_stream_resume(&col, &h, NULL, NULL, read_body, seek_body, &again, &m, &err);
    int rc = s ? pq_stream_next(s, &e, &err) : -1;
    cr_assert_eq(rc, -1, "a value resumed across blocks was handed out");
    cr_assert(pq_stream_resume_instead(&err), "%s", err.msg);
    pq_stream_close(s);
    free(body);
}
