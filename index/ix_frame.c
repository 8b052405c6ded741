#include "ix_frame.h"

#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* ",\"_row\":" written before the row number in jsonl records. */
static const char ROWID_KEY[] = ",\"_row\":";

int ix_format_parse(const char *name, ix_format *out)
{
    static const struct { const char *name; ix_format format; } formats[] = {
        { "jsonl", IX_FORMAT_JSONL }, { "text", IX_FORMAT_TEXT }, { "len32", IX_FORMAT_LEN32 },
    };
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        if (strcmp(name, formats[i].name) == 0) {
            *out = formats[i].format;
            return 0;
        }
    }
    return -1;
}

const char *ix_format_ext(ix_format format)
{
    switch (format) {
    case IX_FORMAT_JSONL: return "jsonl";
    case IX_FORMAT_TEXT: return "txt";
    case IX_FORMAT_LEN32: return "len32";
    }
    return "bin";
}

/* Extra bytes the JSON escape of a byte adds inside a string: 0 (copied as
 * is), 1 (\n, \", ...) or 5 (\u00XX for the other control bytes). In binary
 * mode bytes >= 0x80 also take 5 (see escape_extra). */
#define U 5 /* \u00XX */
static const uint8_t JSON_EXTRA[256] = {
    U, U, U, U, U, U, U, U, 1, 1, 1, U, 1, 1, U, U, /* \b \t \n \f \r */
    U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* '"' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, /* '\\' */
};
#undef U

static inline size_t escape_extra(uint8_t b, int binary)
{
    return JSON_EXTRA[b] + (size_t)(binary & (b >> 7)) * 5;
}

/* Whether any of the 8 bytes in w needs an escape: a byte below 0x20, '"',
 * '\\', or (binary) >= 0x80. The classic exact SWAR tests: (x - 0x01..) &
 * ~x & 0x80.. is non-zero iff some byte of x is zero; with 0x20.. for
 * "some byte below 0x20". */
static inline int word_needs_escape(uint64_t w, int binary)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');
    uint64_t hits = ((w - ones * 0x20) & ~w) | ((quote - ones) & ~quote) |
                    ((backslash - ones) & ~backslash);
    return ((hits & highs) | (binary ? w & highs : 0)) != 0;
}

/* Length of the leading run of v[0..len) that needs no escape. */
static uint32_t plain_run(const uint8_t *v, uint32_t len, int binary)
{
    uint32_t i = 0;
#ifdef __SSE2__
    /* 16 bytes a step; the mask of bytes needing an escape gives the
     * position of the first one directly. */
    const __m128i below = _mm_set1_epi8(0x1f), quote = _mm_set1_epi8('"'),
                  backslash = _mm_set1_epi8('\\');
    for (; i + 16 <= len; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(v + i));
        __m128i hits = _mm_or_si128(_mm_cmpeq_epi8(_mm_max_epu8(x, below), below),
                                    _mm_or_si128(_mm_cmpeq_epi8(x, quote),
                                                 _mm_cmpeq_epi8(x, backslash)));
        unsigned mask = (unsigned)_mm_movemask_epi8(hits);
        if (binary)
            mask |= (unsigned)_mm_movemask_epi8(x); /* high bit set: >= 0x80 */
        if (mask)
            return i + (uint32_t)__builtin_ctz(mask);
    }
#endif
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, v + i, sizeof w);
        if (word_needs_escape(w, binary))
            break;
    }
    while (i < len && escape_extra(v[i], binary) == 0)
        i++;
    return i;
}

static size_t json_string_size(const uint8_t *v, uint32_t len, int binary)
{
    size_t extra = 0;
    for (uint32_t i = 0; i < len; i++) {
        i += plain_run(v + i, len - i, binary);
        if (i < len)
            extra += escape_extra(v[i], binary);
    }
    return (size_t)len + extra + 2; /* quotes */
}

static uint8_t *json_string_write(const uint8_t *v, uint32_t len, int binary, uint8_t *out)
{
    static const char hex[] = "0123456789abcdef";
    *out++ = '"';
    uint32_t i = 0;
    while (i < len) {
        /* Copy the run of bytes that need no escape in one go. */
        uint32_t run = i + plain_run(v + i, len - i, binary);
        memcpy(out, v + i, run - i);
        out += run - i;
        if (run == len)
            break;
        uint8_t b = v[run];
        *out++ = '\\';
        switch (b) {
        case '"': *out++ = '"'; break;
        case '\\': *out++ = '\\'; break;
        case '\n': *out++ = 'n'; break;
        case '\r': *out++ = 'r'; break;
        case '\t': *out++ = 't'; break;
        case '\b': *out++ = 'b'; break;
        case '\f': *out++ = 'f'; break;
        default:
            *out++ = 'u';
            *out++ = '0';
            *out++ = '0';
            *out++ = (uint8_t)hex[b >> 4];
            *out++ = (uint8_t)hex[b & 15];
        }
        i = run + 1;
    }
    *out++ = '"';
    return out;
}

static size_t decimal_digits(uint64_t v)
{
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

int ix_framing_init(ix_framing *f, ix_format format, int rowid, int binary, const char *column)
{
    memset(f, 0, sizeof *f);
    f->format = format;
    f->rowid = rowid && format == IX_FORMAT_JSONL;
    f->binary = binary;
    if (format != IX_FORMAT_JSONL)
        return 0;
    /* The key is a column name: escape it as text, never as binary. */
    size_t name_len = strlen(column);
    size_t key_size = json_string_size((const uint8_t *)column, (uint32_t)name_len, 0);
    f->prefix = malloc(key_size + 3);
    if (!f->prefix)
        return -1;
    uint8_t *p = (uint8_t *)f->prefix;
    *p++ = '{';
    p = json_string_write((const uint8_t *)column, (uint32_t)name_len, 0, p);
    *p++ = ':';
    *p = '\0';
    f->prefix_len = (size_t)(p - (uint8_t *)f->prefix);
    return 0;
}

void ix_framing_free(ix_framing *f)
{
    free(f->prefix);
    memset(f, 0, sizeof *f);
}

size_t ix_frame_size(const ix_framing *f, const uint8_t *value, uint32_t len, uint64_t row)
{
    switch (f->format) {
    case IX_FORMAT_TEXT:
        return (size_t)len + 1;
    case IX_FORMAT_LEN32:
        return (size_t)len + 4;
    case IX_FORMAT_JSONL:
        break;
    }
    size_t n = f->prefix_len + json_string_size(value, len, f->binary) + 2; /* }\n */
    if (f->rowid)
        n += sizeof ROWID_KEY - 1 + decimal_digits(row);
    return n;
}

size_t ix_frame_size_bound(const ix_framing *f, uint32_t len)
{
    if (f->format != IX_FORMAT_JSONL)
        return ix_frame_size(f, NULL, len, 0);
    /* every byte escaped as \u00XX, the largest row number */
    return f->prefix_len + 6 * (size_t)len + 4 + (f->rowid ? sizeof ROWID_KEY - 1 + 20 : 0);
}

uint8_t *ix_frame_write(const ix_framing *f, const uint8_t *value, uint32_t len, uint64_t row,
                        uint8_t *out)
{
    switch (f->format) {
    case IX_FORMAT_TEXT:
        memcpy(out, value, len);
        out[len] = '\n';
        return out + len + 1;
    case IX_FORMAT_LEN32:
        out[0] = (uint8_t)len;
        out[1] = (uint8_t)(len >> 8);
        out[2] = (uint8_t)(len >> 16);
        out[3] = (uint8_t)(len >> 24);
        memcpy(out + 4, value, len);
        return out + 4 + len;
    case IX_FORMAT_JSONL:
        break;
    }
    memcpy(out, f->prefix, f->prefix_len);
    out = json_string_write(value, len, f->binary, out + f->prefix_len);
    if (f->rowid) {
        memcpy(out, ROWID_KEY, sizeof ROWID_KEY - 1);
        out += sizeof ROWID_KEY - 1;
        size_t digits = decimal_digits(row);
        for (size_t i = digits; i > 0; i--) {
            out[i - 1] = (uint8_t)('0' + row % 10);
            row /= 10;
        }
        out += digits;
    }
    *out++ = '}';
    *out++ = '\n';
    return out;
}
