#include "ix_frame.h"

#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* ",\"_row\":" written before the row number in jsonl records. */
static const char ROWID_KEY[] = ",\"_row\":";
/* Digits of the largest row number. */
#define ROW_DIGITS_MAX 20

int ix_format_parse(const char *name, ix_format *out)
{
    static const struct { const char *name; ix_format format; } formats[] = {
        { "jsonl", IX_FORMAT_JSONL }, { "text", IX_FORMAT_TEXT }, { "len32", IX_FORMAT_LEN32 },
        { "raw", IX_FORMAT_RAW },
    };
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        if (strcmp(name, formats[i].name) == 0) {
            *out = formats[i].format;
            return 0;
        }
    }
    return -1;
}

const char *ix_format_name(ix_format format)
{
    switch (format) {
    case IX_FORMAT_JSONL: return "jsonl";
    case IX_FORMAT_TEXT: return "text";
    case IX_FORMAT_LEN32: return "len32";
    case IX_FORMAT_RAW: return "raw";
    }
    return "?";
}

const char *ix_format_ext(ix_format format)
{
    switch (format) {
    case IX_FORMAT_JSONL: return "jsonl";
    case IX_FORMAT_TEXT: return "txt";
    case IX_FORMAT_LEN32: return "len32";
    case IX_FORMAT_RAW: return "bin";
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

/* The jsonl key: a list column is known by the field that holds the list
 * ("input_ids" for input_ids.list.element), any other by its dotted path. */
static int jsonl_prefix(ix_framing *f, const pq_leaf *leaf)
{
    size_t name_len = strlen(leaf->path);
    if (leaf->max_rep > 0) {
        const char *dot = strchr(leaf->path, '.');
        if (dot)
            name_len = (size_t)(dot - leaf->path);
    }
    /* The key is a column name: escape it as text, never as binary. */
    size_t key_size = json_string_size((const uint8_t *)leaf->path, (uint32_t)name_len, 0);
    f->prefix = malloc(key_size + 3);
    if (!f->prefix)
        return -1;
    uint8_t *p = (uint8_t *)f->prefix;
    *p++ = '{';
    p = json_string_write((const uint8_t *)leaf->path, (uint32_t)name_len, 0, p);
    *p++ = ':';
    *p = '\0';
    f->prefix_len = (size_t)(p - (uint8_t *)f->prefix);
    return 0;
}

static int raw_init(ix_framing *f, const ix_frame_options *o, pq_error *err)
{
    if (o->dtype == IX_DT_NONE) {
        if (ix_dtype_default(&f->type, &f->dtype, err) < 0)
            return -1;
    } else {
        if (ix_dtype_accepts(&f->type, o->dtype, err) < 0)
            return -1;
        f->dtype = o->dtype;
    }
    f->has_sep = o->has_sep;
    if (o->has_sep) {
        ix_number sep = { .i = o->sep };
        if (ix_number_write(&sep, f->dtype, f->sep, err) < 0)
            return pq_error_prefix(err, "sep=%lld: ", (long long)o->sep);
    }
    return 0;
}

int ix_framing_init(ix_framing *f, const ix_frame_options *o, const pq_leaf *leaf,
                    pq_error *err)
{
    memset(f, 0, sizeof *f);
    f->format = o->format;
    f->rowid = o->rowid;
    f->type = ix_value_type_of(leaf);
    f->shape = (ix_shape){ leaf->max_def, leaf->max_rep, leaf->rep_def };
    if (o->rowid && o->format != IX_FORMAT_JSONL)
        return pq_error_set(err, "rowid: only format=jsonl can carry the row number");
    if (o->format != IX_FORMAT_RAW && (o->dtype != IX_DT_NONE || o->has_sep))
        return pq_error_set(err, "dtype= and sep= apply to format=raw only");
    switch (o->format) {
    case IX_FORMAT_JSONL:
        if (jsonl_prefix(f, leaf) < 0)
            return pq_error_set(err, "out of memory");
        return 0;
    case IX_FORMAT_TEXT:
    case IX_FORMAT_LEN32:
        if (!ix_value_is_text(&f->type) || leaf->max_rep > 0)
            return pq_error_set(err, "column %s: format=%s writes string and binary values; "
                                "use format=jsonl%s", leaf->path, ix_format_name(o->format),
                                ix_value_is_text(&f->type) ? "" : " or format=raw");
        return 0;
    case IX_FORMAT_RAW:
        return raw_init(f, o, err) < 0 ? pq_error_prefix(err, "column %s: ", leaf->path) : 0;
    }
    return pq_error_set(err, "unknown format");
}

void ix_framing_free(ix_framing *f)
{
    free(f->prefix);
    memset(f, 0, sizeof *f);
}

/* The elements of a record in order: each present element's value, or NULL
 * for a null list element. A flat record has exactly one element. */
typedef struct elements {
    const ix_framing *f;
    const ix_record *r;
    uint32_t k;           /* next level entry */
    const pq_bytes *next; /* next value */
} elements;

static elements elements_of(const ix_framing *f, const ix_record *r)
{
    return (elements){ f, r, 0, r->values };
}

/* 1 and the element in *elem, or 0 at the end. */
static int next_element(elements *it, const pq_bytes **elem)
{
    const ix_record *r = it->r;
    while (it->k < r->levels) {
        uint32_t k = it->k++;
        if (!r->defs || r->defs[k] == it->f->shape.max_def) {
            *elem = it->next++;
            return 1;
        }
        if (r->defs[k] >= it->f->shape.rep_def) {
            *elem = NULL;
            return 1;
        }
        /* otherwise the one entry of an empty list */
    }
    return 0;
}

static int is_list(const ix_framing *f)
{
    return f->shape.max_rep > 0;
}

/* JSON of one element (NULL: null) appended at out, or only measured when
 * out is NULL. Returns the length, -1 on a value that cannot be written. */
static long json_element(const ix_framing *f, const pq_bytes *v, uint8_t *out, pq_error *err)
{
    if (!v) {
        if (out)
            memcpy(out, "null", 4);
        return 4;
    }
    if (ix_value_is_text(&f->type)) {
        int binary = f->type.kind == IX_KIND_BINARY;
        if (!out)
            return (long)json_string_size(v->ptr, v->len, binary);
        return json_string_write(v->ptr, v->len, binary, out) - out;
    }
    char buf[IX_JSON_SCALAR_MAX];
    int n = ix_json_scalar(&f->type, *v, buf, err);
    if (n > 0 && out)
        memcpy(out, buf, (size_t)n);
    return n;
}

/* jsonl: the record written at out, or only measured (out NULL). */
static long jsonl_record(const ix_framing *f, const ix_record *r, uint8_t *out, pq_error *err)
{
    long n = (long)f->prefix_len;
    if (out)
        memcpy(out, f->prefix, f->prefix_len);
    if (is_list(f)) {
        if (out)
            out[n] = '[';
        n++;
    }
    elements it = elements_of(f, r);
    const pq_bytes *elem;
    for (int first = 1; next_element(&it, &elem); first = 0) {
        if (!first) {
            if (out)
                out[n] = ',';
            n++;
        }
        long m = json_element(f, elem, out ? out + n : NULL, err);
        if (m < 0)
            return pq_error_prefix(err, "row %llu: ", (unsigned long long)r->row);
        n += m;
    }
    if (is_list(f)) {
        if (out)
            out[n] = ']';
        n++;
    }
    if (f->rowid) {
        size_t digits = decimal_digits(r->row);
        if (out) {
            memcpy(out + n, ROWID_KEY, sizeof ROWID_KEY - 1);
            uint64_t row = r->row;
            for (size_t i = digits; i > 0; i--) {
                out[n + (long)(sizeof ROWID_KEY - 1 + i - 1)] = (uint8_t)('0' + row % 10);
                row /= 10;
            }
        }
        n += (long)(sizeof ROWID_KEY - 1 + digits);
    }
    if (out) {
        out[n] = '}';
        out[n + 1] = '\n';
    }
    return n + 2;
}

/* raw: the record's present elements as numbers, then sep; written at out
 * or only measured (out NULL; still checks every value fits the dtype). */
static long raw_record(const ix_framing *f, const ix_record *r, uint8_t *out, pq_error *err)
{
    size_t size = ix_dtype_size(f->dtype);
    long n = 0;
    uint8_t scratch[8];
    elements it = elements_of(f, r);
    const pq_bytes *elem;
    while (next_element(&it, &elem)) {
        if (!elem)
            continue; /* null elements are skipped */
        ix_number num;
        if (ix_number_of(&f->type, *elem, &num, err) < 0 ||
            ix_number_write(&num, f->dtype, out ? out + n : scratch, err) < 0)
            return pq_error_prefix(err, "row %llu: ", (unsigned long long)r->row);
        n += (long)size;
    }
    if (f->has_sep) {
        if (out)
            memcpy(out + n, f->sep, size);
        n += (long)size;
    }
    return n;
}

static long frame(const ix_framing *f, const ix_record *r, uint8_t *out, pq_error *err)
{
    const pq_bytes *v = r->values;
    switch (f->format) {
    case IX_FORMAT_TEXT:
        if (!out && memchr(v->ptr, '\n', v->len))
            return pq_error_set(err, "row %llu: the value contains a newline, which format=text "
                                "cannot carry unambiguously; use format=jsonl or format=len32",
                                (unsigned long long)r->row);
        if (out) {
            memcpy(out, v->ptr, v->len);
            out[v->len] = '\n';
        }
        return (long)v->len + 1;
    case IX_FORMAT_LEN32:
        if (out) {
            for (int i = 0; i < 4; i++)
                out[i] = (uint8_t)(v->len >> (8 * i));
            memcpy(out + 4, v->ptr, v->len);
        }
        return (long)v->len + 4;
    case IX_FORMAT_RAW:
        return raw_record(f, r, out, err);
    case IX_FORMAT_JSONL:
        break;
    }
    return jsonl_record(f, r, out, err);
}

int ix_frame_measure(const ix_framing *f, const ix_record *r, size_t *size, pq_error *err)
{
    long n = frame(f, r, NULL, err);
    if (n < 0)
        return -1;
    *size = (size_t)n;
    return 0;
}

size_t ix_frame_size_bound(const ix_framing *f, const ix_record *r)
{
    if (f->format != IX_FORMAT_JSONL) {
        if (f->format == IX_FORMAT_RAW) /* every entry a value, and sep */
            return (r->levels + 1) * ix_dtype_size(f->dtype);
        return (size_t)r->values->len + 4;
    }
    size_t n = f->prefix_len + 4 + (f->rowid ? sizeof ROWID_KEY - 1 + ROW_DIGITS_MAX : 0);
    if (!ix_value_is_text(&f->type))
        return n + (size_t)r->levels * (IX_JSON_SCALAR_MAX + 1);
    /* every byte escaped as \u00XX, quotes and a comma; or "null," */
    elements it = elements_of(f, r);
    const pq_bytes *elem;
    while (next_element(&it, &elem))
        n += elem ? 6 * (size_t)elem->len + 3 : 5;
    return n;
}

uint8_t *ix_frame_write(const ix_framing *f, const ix_record *r, uint8_t *out, pq_error *err)
{
    long n = frame(f, r, out, err);
    return n < 0 ? NULL : out + n;
}
