/* Framings: bytes written match the documented format exactly, and
 * measuring (a counting sink) always agrees with writing (a buffer sink),
 * and a buffer sink is never written past its end. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ix_frame.h"
#include "ix_others_file.h"

/* A flat leaf of the given physical type and annotation. */
static pq_leaf leaf_of(char *path, int type, int kind)
{
    pq_leaf l = { .path = path, .type = type, .max_def = 1 };
    l.logical.kind = kind;
    return l;
}

static void init(ix_framing *f, ix_format format, int rowid, int binary, const char *column)
{
    pq_leaf l = leaf_of((char *)column, PQ_BYTE_ARRAY,
                        binary ? PQ_LOGICAL_NONE : PQ_LOGICAL_STRING);
    ix_frame_options o = { .format = format, .rowid = rowid };
    pq_error err;
    cr_assert_eq(ix_framing_init(f, &o, &l, NULL, &err), 0, "%s", err.msg);
}

static size_t frame_size(const ix_framing *f, const ix_record *r)
{
    ix_sink count = ix_sink_counter();
    pq_error err;
    cr_assert_eq(ix_frame(f, r, &count, &err), 0, "%s", err.msg);
    cr_assert_not(count.passed_end);
    return (size_t)count.size;
}

/* Frame r into out[0..room), with a guard byte after it that must stay. */
static int frame_into(const ix_framing *f, const ix_record *r, uint8_t *out, size_t room,
                      ix_sink *s, pq_error *err)
{
    out[room] = 0xA5;
    *s = ix_sink_buffer(out, room);
    int rc = ix_frame(f, r, s, err);
    cr_assert_eq(out[room], 0xA5, "written past the room of %zu bytes", room);
    return rc;
}

static void check(const ix_framing *f, const char *value, size_t len, uint64_t row,
                  const char *expect, size_t expect_len)
{
    uint8_t out[257];
    pq_bytes v = { (const uint8_t *)value, (uint32_t)len };
    ix_record r = { pq_value_list_of(&v), NULL, NULL, 1, 1, row };
    pq_error err;
    size_t size = frame_size(f, &r);
    cr_assert_lt(size, sizeof out);
    ix_sink s;
    cr_assert_eq(frame_into(f, &r, out, size, &s, &err), 0, "%s", err.msg);
    cr_assert_eq(s.size, size, "size %zu, wrote %llu", size, (unsigned long long)s.size);
    cr_assert_eq(s.at, out + size);
    cr_assert_eq(size, expect_len, "got %.*s", (int)size, out);
    cr_assert_eq(memcmp(out, expect, expect_len), 0, "got %.*s", (int)size, out);
    /* One byte less room: the framing fails, naming the row, and stays inside. */
    if (size > 0) {
        cr_assert_eq(frame_into(f, &r, out, size - 1, &s, &err), -1);
        cr_assert(s.passed_end);
        cr_assert(strstr(err.msg, "do not fit"), "%s", err.msg);
    }
}
#define CHECK(f, value, row, expect) \
    check(f, value, sizeof(value) - 1, row, expect, sizeof(expect) - 1)

Test(frame, jsonl_escapes_like_json_dumps)
{
    ix_framing f;
    init(&f, IX_FORMAT_JSONL, 0, 0, "text");
    CHECK(&f, "plain", 0, "{\"text\":\"plain\"}\n");
    CHECK(&f, "", 0, "{\"text\":\"\"}\n");
    CHECK(&f, "a\"b\\c", 0, "{\"text\":\"a\\\"b\\\\c\"}\n");
    CHECK(&f, "l1\nl2\r\t\b\f", 0, "{\"text\":\"l1\\nl2\\r\\t\\b\\f\"}\n");
    CHECK(&f, "\x01\x1f\x7f", 0, "{\"text\":\"\\u0001\\u001f\x7f\"}\n");
    CHECK(&f, "caf\xc3\xa9 \xe2\x9c\x93", 0, "{\"text\":\"caf\xc3\xa9 \xe2\x9c\x93\"}\n");
    check(&f, "a\0b", 3, 0, "{\"text\":\"a\\u0000b\"}\n", 20);
    ix_framing_free(&f);
}

Test(frame, jsonl_rowid_and_escaped_key)
{
    ix_framing f;
    init(&f, IX_FORMAT_JSONL, 1, 0, "we\"ird");
    CHECK(&f, "v", 0, "{\"we\\\"ird\":\"v\",\"_row\":0}\n");
    CHECK(&f, "v", 9, "{\"we\\\"ird\":\"v\",\"_row\":9}\n");
    CHECK(&f, "v", 10, "{\"we\\\"ird\":\"v\",\"_row\":10}\n");
    CHECK(&f, "v", 18446744073709551615ull,
          "{\"we\\\"ird\":\"v\",\"_row\":18446744073709551615}\n");
    ix_framing_free(&f);
}

Test(frame, binary_columns_escape_high_bytes_as_latin1)
{
    ix_framing f;
    init(&f, IX_FORMAT_JSONL, 0, 1, "b");
    CHECK(&f, "\x80\xff" "A", 0, "{\"b\":\"\\u0080\\u00ffA\"}\n");
    ix_framing_free(&f);
}

Test(frame, text_refuses_newlines_and_numbers)
{
    ix_framing f;
    init(&f, IX_FORMAT_TEXT, 0, 0, "x");
    pq_bytes v = { (const uint8_t *)"a\nb", 3 };
    ix_record r = { pq_value_list_of(&v), NULL, NULL, 1, 1, 7 };
    ix_sink count = ix_sink_counter();
    pq_error err;
    cr_assert_eq(ix_frame(&f, &r, &count, &err), -1);
    cr_assert(strstr(err.msg, "newline") && strstr(err.msg, "row 7"), "%s", err.msg);
    ix_framing_free(&f);
    pq_leaf num = leaf_of("n", PQ_INT64, PQ_LOGICAL_NONE);
    ix_frame_options o = { .format = IX_FORMAT_TEXT };
    cr_assert_eq(ix_framing_init(&f, &o, &num, NULL, &err), -1);
    cr_assert(strstr(err.msg, "jsonl"), "%s", err.msg);
}

Test(frame, text_and_len32)
{
    ix_framing t, l;
    init(&t, IX_FORMAT_TEXT, 0, 0, "x");
    CHECK(&t, "hello", 5, "hello\n");
    init(&l, IX_FORMAT_LEN32, 0, 0, "x");
    check(&l, "hey", 3, 0, "\x03\0\0\0hey", 7);
    check(&l, "", 0, 0, "\0\0\0\0", 4);
    ix_framing_free(&t);
    ix_framing_free(&l);
}

Test(frame, format_names)
{
    ix_format f;
    cr_assert_eq(ix_format_parse("len32", &f), 0);
    cr_assert_eq(f, IX_FORMAT_LEN32);
    cr_assert_eq(ix_format_parse("csv", &f), -1);
    cr_assert_str_eq(ix_format_ext(IX_FORMAT_TEXT), "txt");
    cr_assert_str_eq(ix_format_ext(IX_FORMAT_RAW), "bin");
}

/* Reference escaper, one byte at a time, written independently of ix_frame. */
static size_t reference_escape(const uint8_t *v, size_t len, int binary, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        uint8_t b = v[i];
        const char *named = b == '"' ? "\\\"" : b == '\\' ? "\\\\" : b == '\n' ? "\\n"
                          : b == '\r' ? "\\r" : b == '\t' ? "\\t" : b == '\b' ? "\\b"
                          : b == '\f' ? "\\f" : NULL;
        if (named)
            n += (size_t)sprintf(out + n, "%s", named);
        else if (b < 0x20 || (binary && b >= 0x80))
            n += (size_t)sprintf(out + n, "\\u%04x", b);
        else
            out[n++] = (char)b;
    }
    return n;
}

Test(frame, word_at_a_time_scan_matches_a_bytewise_reference)
{
    srand(1);
    uint8_t value[64];
    char expect[64 * 6 + 64], got[64 * 6 + 64];
    for (int binary = 0; binary <= 1; binary++) {
        ix_framing f;
        init(&f, IX_FORMAT_JSONL, 0, binary, "k");
        for (int trial = 0; trial < 20000; trial++) {
            size_t len = (size_t)(rand() % 40);
            for (size_t i = 0; i < len; i++) /* mostly plain text, some of everything */
                value[i] = (uint8_t)(rand() % 4 ? 'a' + rand() % 26 : rand() % 256);
            size_t n = reference_escape(value, len, binary, expect);
            pq_bytes v = { value, (uint32_t)len };
            ix_record r = { pq_value_list_of(&v), NULL, NULL, 1, 1, 0 };
            size_t size = frame_size(&f, &r);
            cr_assert_eq(size, f.prefix_len + n + 4, "length %zu, trial %d", len, trial);
            pq_error err;
            ix_sink s;
            cr_assert_eq(frame_into(&f, &r, (uint8_t *)got, size, &s, &err), 0, "%s", err.msg);
            cr_assert_eq(s.size, size);
            cr_assert_eq(memcmp(got + f.prefix_len + 1, expect, n), 0, "trial %d", trial);
        }
        ix_framing_free(&f);
    }
}

/* Several columns: the framing's own column sits at others.own among keys
 * in the order given; the others' values come framed; a record of a row
 * where the own column is null (kept by ix_row_kept_by_others) says null. */
Test(frame, several_columns_in_order_with_nulls)
{
    ix_framing f;
    init(&f, IX_FORMAT_JSONL, 1, 0, "text");
    char *key[3];
    size_t key_len[3];
    pq_error err;
    const char *names[3] = { "id", "text", "s\"q" };
    for (int k = 0; k < 3; k++)
        cr_assert_eq(ix_json_key(names[k], strlen(names[k]), &key[k], &key_len[k]), 0);
    cr_assert_str_eq(key[2], "\"s\\\"q\":");
    /* rows 0..2: id 7, null, 9; s "a", null, [] */
    const char *values[3][3] = { { "7", "null", "9" }, { NULL }, { "\"a\"", "null", "[]" } };
    const uint8_t has[3] = { 1, 0, 1 };
    ix_others_file file;
    cr_assert_eq(ix_others_file_create(&file, NULL, 1, has, 3, 3, 1, &err), 0, "%s", err.msg);
    for (uint32_t p = 0; p < 3; p += 2) {
        ix_others_out out;
        cr_assert_eq(ix_others_out_begin(&out, &file, p, &err), 0, "%s", err.msg);
        for (int r = 0; r < 3; r++) {
            size_t n = strlen(values[p][r]);
            memcpy(ix_others_out_room(&out, n, &err), values[p][r], n);
            cr_assert_eq(ix_others_out_row(&out, n, &err), 0, "%s", err.msg);
        }
        cr_assert_eq(ix_others_out_end(&out, &err), 0, "%s", err.msg);
    }
    uint64_t any[1] = { 0x5 }; /* rows 0 and 2 */
    cr_assert_eq(ix_others_file_seal(&file, any, &err), 0, "%s", err.msg);
    ix_others o = { 3, 1, key, key_len, &file, 3, any, NULL, 0 };
    ix_framing_set_others(&f, &o);
    CHECK(&f, "x", 0, "{\"id\":7,\"text\":\"x\",\"s\\\"q\":\"a\",\"_row\":0}\n");
    CHECK(&f, "", 1, "{\"id\":null,\"text\":\"\",\"s\\\"q\":null,\"_row\":1}\n");

    /* A null of the own column: no record at row 1 (no other column has a
     * value), a record saying null at row 2, none beyond the rows indexed. */
    uint16_t def = 0;
    pq_bytes none = { NULL, 0 };
    ix_record r;
    cr_assert_eq(ix_flat_record(&f.shape, pq_value_list_of(&none), &def, 1, &r), 0);
    cr_assert_eq(ix_flat_record(&f.shape, pq_value_list_of(&none), &def, 64 * 9, &r), 0);
    cr_assert_eq(ix_flat_record(&f.shape, pq_value_list_of(&none), &def, 2, &r), 1);
    uint8_t out[128];
    ix_sink s = ix_sink_buffer(out, sizeof out);
    cr_assert_eq(ix_frame(&f, &r, &s, &err), 0, "%s", err.msg);
    const char want[] = "{\"id\":9,\"text\":null,\"s\\\"q\":[],\"_row\":2}\n";
    cr_assert_eq(s.size, sizeof want - 1);
    cr_assert_eq(memcmp(out, want, sizeof want - 1), 0, "%.*s", (int)s.size, out);

    /* A record beyond the rows the others hold is refused, naming it. */
    pq_bytes v = { (const uint8_t *)"x", 1 };
    ix_record far = { pq_value_list_of(&v), NULL, NULL, 1, 1, 3 };
    ix_sink count = ix_sink_counter();
    cr_assert_eq(ix_frame(&f, &far, &count, &err), -1);
    cr_assert(strstr(err.msg, "row 3"), "%s", err.msg);
    for (int k = 0; k < 3; k++)
        free(key[k]);
    ix_others_file_close(&file);
    ix_framing_free(&f);
}
