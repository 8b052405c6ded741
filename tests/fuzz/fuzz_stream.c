/* fuzz_stream — pq_stream (streaming page decode) against pq_page_decode.
 *
 * Input layout, as fuzz_page (its seed corpus fits): byte 0 physical type
 * (mod 8), byte 1 max_def = b % 3 and max_rep = (b / 3) % 2, byte 2 codec
 * (mod 8), byte 3 FIXED_LEN_BYTE_ARRAY type_length; then pages as in a
 * column chunk (thrift PageHeader, compressed_page_size bytes of body). A
 * dictionary page (re)sets the dictionary. Byte 3 also picks the stream's
 * windows (read size, window size, read pattern), so the same page is cut in
 * many ways.
 *
 * Each data page is streamed from a copy of exactly its body, with reads of
 * varying size, and:
 *   - the stream never holds more than pq_stream_memory_needed (abort);
 *   - it never asks the read function for bytes past the body (abort);
 *   - when both decoders accept the page, the entries are identical (abort).
 * The stream may accept a page the whole-page decoder refuses or the reverse
 * (their codecs differ on what they forgive, e.g. LZ4's end-of-block rules,
 * trailing gzip bytes); neither is a finding. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_column.h"
#include "pq_column.h"
#include "pq_meta.h"
#include "pq_page.h"
#include "pq_stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PAGES 16
#define MAX_UNCOMPRESSED (64u << 20)
#define MAX_VALUES (1u << 22)
#define MAX_STREAMED (8u << 20) /* 64-byte windows: 128 K codec calls at most */

typedef struct reader {
    const uint8_t *p;
    size_t len, pos;
    uint32_t seed;
    size_t max_read;
} reader;

static int read_body(void *ctx, uint8_t *buf, size_t want, size_t *got, pq_error *err)
{
    (void)err;
    reader *r = ctx;
    if (want == 0 || want > r->len - r->pos)
        abort(); /* the stream asked past the body */
    size_t n = want;
    if (r->max_read) {
        r->seed = r->seed * 1103515245u + 12345u;
        size_t k = 1 + (r->seed >> 8) % r->max_read;
        n = n < k ? n : k;
    }
    memcpy(buf, r->p + r->pos, n);
    r->pos += n;
    *got = n;
    return 0;
}

static void stream_page(const pq_column_desc *col, const pq_page_header *h, const uint8_t *body,
                        const pq_dictionary *dict, uint8_t knob)
{
    pq_page_values pv;
    pq_error err;
    int whole = pq_page_decode(col, h, body, (size_t)h->compressed_size, dict, &pv, &err) == 0;
    static const size_t outs[4] = { 64, 100, 1024, 0 };
    pq_stream_opts o = { .read_size = (size_t)64 << (knob & 3), .out_size = outs[(knob >> 2) & 3],
                         .snappy_window = (size_t)1024 << ((knob >> 4) & 7) };
    reader r = { body, (size_t)h->compressed_size, 0, knob, (knob & 0x80) ? 0 : 100 };
    size_t bound = pq_stream_memory_needed(h, col, &o);
    pq_stream *s = pq_stream_open(col, h, dict, &o, read_body, &r, &err);
    if (s) {
        uint32_t k = 0;
        pq_stream_entry e;
        int rc;
        for (uint32_t i = 0; (rc = pq_stream_next(s, &e, &err)) == 1; i++) {
            if (pq_stream_bytes(s) > bound || i >= (uint32_t)h->num_values)
                abort();
            volatile uint8_t sink = 0;
            for (uint32_t b = 0; e.has_value && b < e.value.len; b++)
                sink ^= e.value.ptr[b];
            (void)sink;
            if (!whole)
                continue;
            if ((pv.rep_levels && e.rep != pv.rep_levels[i]) ||
                (pv.def_levels && e.def != pv.def_levels[i]))
                abort();
            if (e.has_value) {
                pq_bytes value = pq_page_value(&pv, k++);
                const pq_bytes *v = &value;
                if (v->len != e.value.len || (v->len && memcmp(v->ptr, e.value.ptr, v->len)))
                    abort();
            }
        }
        if (rc == 0 && whole && k != pv.num_values)
            abort();
        pq_stream_close(s);
    }
    if (whole)
        pq_page_values_free(&pv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < FUZZ_COLUMN_BYTES)
        return 0;
    pq_column_desc col = fuzz_column(data);
    const uint8_t *p = data + FUZZ_COLUMN_BYTES;
    size_t left = size - FUZZ_COLUMN_BYTES;
    pq_dictionary dict;
    int have_dict = 0;
    pq_error err;
    for (int page = 0; page < MAX_PAGES && left > 0; page++) {
        pq_page_header h;
        if (pq_page_header_parse(p, left, &h, &err) < 0)
            break;
        const uint8_t *body = p + h.header_len;
        size_t body_left = left - h.header_len;
        if ((size_t)h.compressed_size > body_left ||
            (uint32_t)h.uncompressed_size > MAX_UNCOMPRESSED ||
            (uint32_t)h.num_values > MAX_VALUES || h.encoding == PQ_ENC_DELTA_BYTE_ARRAY)
            break; /* fuzz_page's limits: the whole-page decoder runs too */
        size_t blen = (size_t)h.compressed_size;
        uint8_t *copy = malloc(blen ? blen : 1);
        if (!copy)
            break;
        memcpy(copy, body, blen);
        if (h.type == PQ_PAGE_DICTIONARY) {
            pq_dictionary d;
            if (pq_dictionary_decode(&col, &h, copy, blen, &d, &err) == 0) {
                if (have_dict)
                    pq_dictionary_free(&dict);
                dict = d;
                have_dict = 1;
            }
        } else if ((h.type == PQ_PAGE_DATA || h.type == PQ_PAGE_DATA_V2) &&
                   (uint32_t)h.uncompressed_size <= MAX_STREAMED) {
            stream_page(&col, &h, copy, have_dict ? &dict : NULL, data[3]);
        }
        free(copy);
        p = body + h.compressed_size;
        left = body_left - (size_t)h.compressed_size;
    }
    if (have_dict)
        pq_dictionary_free(&dict);
    return 0;
}
