#include "ix_frame.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "ix_others_file.h"

/* ",\"_row\":" written before the row number in jsonl records. */
static const char ROWID_KEY[] = ",\"_row\":";
/* ",\"_source\":" written before a mixture source's number under rowid. */
static const char SOURCE_KEY[] = ",\"_source\":";
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

/* Store n bytes at the sink's position, or only count them. A write that
 * would pass a buffer's end stores nothing and leaves the sink counting.
 * p may be the sink's position itself (from place()): nothing to copy. */
static inline void put(ix_sink *s, const void *p, size_t n)
{
    if (s->at) {
        if (n <= (size_t)(s->end - s->at)) {
            if (p != s->at)
                memcpy(s->at, p, n);
            s->at += n;
        } else {
            s->at = NULL;
            s->passed_end = 1;
        }
    }
    s->size += n;
}

/* Where to build the next n bytes before put()ting them: in place when the
 * buffer has room (put then copies nothing), else in scratch. */
static inline uint8_t *place(ix_sink *s, size_t n, uint8_t *scratch)
{
    return s->at && n <= (size_t)(s->end - s->at) ? s->at : scratch;
}

static inline void put_byte(ix_sink *s, uint8_t b)
{
    put(s, &b, 1);
}

/* v[0..len) as a JSON string; binary escapes bytes >= 0x80 as \u00XX. */
static void json_string(ix_sink *s, const uint8_t *v, uint32_t len, int binary)
{
    static const char hex[] = "0123456789abcdef";
    put_byte(s, '"');
    uint32_t i = 0;
    while (i < len) {
        /* The run of bytes that need no escape goes in one piece. */
        uint32_t run = i + plain_run(v + i, len - i, binary);
        put(s, v + i, run - i);
        if (run == len)
            break;
        uint8_t b = v[run];
        uint8_t esc[6] = { '\\', 0 };
        size_t n = 2;
        switch (b) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = (uint8_t)hex[b >> 4];
            esc[5] = (uint8_t)hex[b & 15];
            n = 6;
        }
        put(s, esc, n);
        i = run + 1;
    }
    put_byte(s, '"');
}

/* open, then `"<key>":` for text key[0..len) (open 0: none), into a
 * malloc'ed, NUL-terminated string (*out, *out_len). The key is a column
 * name: escaped as text, never as binary. It is measured, then written. */
static int key_prefix(uint8_t open, const char *key, size_t len, char **out, size_t *out_len)
{
    ix_sink count = ix_sink_counter();
    if (open)
        put_byte(&count, open);
    json_string(&count, (const uint8_t *)key, (uint32_t)len, 0);
    put_byte(&count, ':');
    char *p = malloc(count.size + 1);
    if (!p)
        return -1;
    ix_sink sink = ix_sink_buffer((uint8_t *)p, count.size);
    if (open)
        put_byte(&sink, open);
    json_string(&sink, (const uint8_t *)key, (uint32_t)len, 0);
    put_byte(&sink, ':');
    assert(!sink.passed_end && sink.size == count.size);
    p[sink.size] = '\0';
    *out = p;
    *out_len = sink.size;
    return 0;
}

/* `{"<key>":` */
static int object_prefix(const char *key, size_t len, char **out, size_t *out_len)
{
    return key_prefix('{', key, len, out, out_len);
}

int ix_json_key(const char *key, size_t len, char **out, size_t *out_len)
{
    return key_prefix(0, key, len, out, out_len);
}

/* The record's prefix (the output field's key) and every struct step's. */
static int jsonl_prefixes(ix_framing *f, const char *key)
{
    const pq_nest *n = &f->nest;
    if (!key)
        key = n->key;
    if (object_prefix(key, strlen(key), &f->prefix, &f->prefix_len) < 0)
        return -1;
    f->step_prefix = calloc((size_t)n->num_steps, sizeof *f->step_prefix);
    f->step_prefix_len = calloc((size_t)n->num_steps, sizeof *f->step_prefix_len);
    if (!f->step_prefix || !f->step_prefix_len)
        return -1;
    for (int i = 0; i < n->num_steps; i++)
        if (n->steps[i].kind == PQ_STEP_STRUCT &&
            object_prefix(n->steps[i].name, strlen(n->steps[i].name), &f->step_prefix[i],
                          &f->step_prefix_len[i]) < 0)
            return -1;
    return 0;
}

/* Whether records are one value, or one list of values (raw's shapes). */
static int is_value_or_list(const pq_nest *n)
{
    return n->num_steps == 1 || (n->num_steps == 2 && n->steps[0].kind == PQ_STEP_LIST);
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

static int framing_setup(ix_framing *f, const ix_frame_options *o, const pq_leaf *leaf,
                         pq_nest *nest, pq_error *err)
{
    f->format = o->format;
    f->rowid = o->rowid;
    f->has_source = o->rowid && o->has_source;
    f->source = o->source;
    f->type = ix_value_type_of(leaf);
    if (nest) {
        f->nest = *nest;
        memset(nest, 0, sizeof *nest);
    } else if (pq_nest_simple(leaf, &f->nest, err) < 0) {
        return -1;
    }
    assert(f->nest.num_steps > 0 && f->nest.max_def == leaf->max_def &&
           f->nest.max_rep == leaf->max_rep);
    f->shape = (ix_shape){ leaf->max_def, leaf->max_rep, leaf->rep_def, f->nest.steps[0].def,
                           pq_nest_is_nested(&f->nest), NULL, 0 };
    if (o->rowid && o->format != IX_FORMAT_JSONL)
        return pq_error_set(err, "rowid: only format=jsonl can carry the row number");
    if (o->format != IX_FORMAT_RAW && (o->dtype != IX_DT_NONE || o->has_sep))
        return pq_error_set(err, "dtype= and sep= apply to format=raw only");
    switch (o->format) {
    case IX_FORMAT_JSONL:
        if (jsonl_prefixes(f, o->key) < 0)
            return pq_error_set(err, "out of memory");
        return 0;
    case IX_FORMAT_TEXT:
    case IX_FORMAT_LEN32:
        if (!ix_value_is_text(&f->type) || f->shape.nested)
            return pq_error_set(err, "column %s: format=%s writes string and binary values; "
                                "use format=jsonl%s", leaf->path, ix_format_name(o->format),
                                ix_value_is_text(&f->type) ? "" : " or format=raw");
        return 0;
    case IX_FORMAT_RAW:
        if (!is_value_or_list(&f->nest))
            return pq_error_set(err, "column %s: format=raw writes numbers and lists of "
                                "numbers, not structs or lists of lists; use format=jsonl",
                                f->nest.key);
        return raw_init(f, o, err) < 0 ? pq_error_prefix(err, "column %s: ", leaf->path) : 0;
    }
    return pq_error_set(err, "unknown format");
}

int ix_framing_init(ix_framing *f, const ix_frame_options *o, const pq_leaf *leaf,
                    pq_nest *nest, pq_error *err)
{
    memset(f, 0, sizeof *f);
    if (framing_setup(f, o, leaf, nest, err) < 0) {
        ix_framing_free(f); /* what it took over and allocated */
        return -1;
    }
    return 0;
}

void ix_framing_set_others(ix_framing *f, const ix_others *others)
{
    assert(f->format == IX_FORMAT_JSONL && others->own < others->columns);
    f->others = others;
    f->shape.others_any = others->any;
    f->shape.others_rows = others->rows;
}

struct ix_others_window *ix_framing_window(const ix_framing *f)
{
    return f->others ? ix_others_window_new(f->others->file) : NULL;
}

void ix_framing_free(ix_framing *f)
{
    for (int i = 0; f->step_prefix && i < f->nest.num_steps; i++)
        free(f->step_prefix[i]);
    free(f->step_prefix);
    free(f->step_prefix_len);
    pq_nest_free(&f->nest);
    free(f->prefix);
    memset(f, 0, sizeof *f);
}

/* The elements of a record in order: each present element's value, or NULL
 * for a null list element. A flat record has exactly one element. */
typedef struct elements {
    const ix_framing *f;
    const ix_record *r;
    uint32_t k;           /* next level entry */
    uint32_t next;        /* next value */
    pq_bytes value;       /* the element handed out last */
} elements;

static elements elements_of(const ix_framing *f, const ix_record *r)
{
    return (elements){ f, r, 0, 0, { NULL, 0 } };
}

/* 1 and the element in *elem, or 0 at the end. */
static int next_element(elements *it, const pq_bytes **elem)
{
    const ix_record *r = it->r;
    while (it->k < r->levels) {
        uint32_t k = it->k++;
        if (!r->defs || r->defs[k] == it->f->shape.max_def) {
            it->value = pq_value_at(&r->values, it->next++);
            *elem = &it->value;
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

/* JSON of one value of type t (NULL: null). */
static int json_typed(const ix_value_type *t, const pq_bytes *v, ix_sink *s, pq_error *err)
{
    if (!v) {
        put(s, "null", 4);
        return 0;
    }
    if (ix_value_is_text(t)) {
        json_string(s, v->ptr, v->len, t->kind == IX_KIND_BINARY);
        return 0;
    }
    char buf[IX_JSON_SCALAR_MAX];
    int n = ix_json_scalar(t, *v, buf, err);
    if (n < 0)
        return -1;
    put(s, buf, (size_t)n);
    return 0;
}

/* JSON of one element of the framing's column (NULL: null). */
static int json_element(const ix_framing *f, const pq_bytes *v, ix_sink *s, pq_error *err)
{
    return json_typed(&f->type, v, s, err);
}

/* The row number in decimal. */
static void decimal(ix_sink *s, uint64_t v)
{
    uint8_t digits[ROW_DIGITS_MAX];
    size_t i = sizeof digits;
    do {
        digits[--i] = (uint8_t)('0' + v % 10);
        v /= 10;
    } while (v);
    put(s, digits + i, sizeof digits - i);
}

/* A nested record's JSON, from the events of pq_nest_walk. */
typedef struct json_walk {
    const ix_framing *f;
    const ix_record *r;
    ix_sink *s;
    pq_error *err;
} json_walk;

static int json_event(void *ctx, pq_nest_event ev, const pq_step *step, uint32_t value)
{
    json_walk *w = ctx;
    size_t i = (size_t)(step - w->f->nest.steps);
    switch (ev) {
    case PQ_EV_OPEN:
        if (step->kind == PQ_STEP_STRUCT)
            put(w->s, w->f->step_prefix[i], w->f->step_prefix_len[i]);
        else
            put_byte(w->s, '[');
        return 0;
    case PQ_EV_CLOSE:
        put_byte(w->s, step->kind == PQ_STEP_STRUCT ? '}' : ']');
        return 0;
    case PQ_EV_NEXT: put_byte(w->s, ','); return 0;
    case PQ_EV_NULL: put(w->s, "null", 4); return 0;
    case PQ_EV_EMPTY: put(w->s, "[]", 2); return 0;
    case PQ_EV_VALUE: {
        assert(value < w->r->num_values);
        pq_bytes v = pq_value_at(&w->r->values, value);
        return json_element(w->f, &v, w->s, w->err);
    }
    }
    return 0;
}

/* One list of values as a JSON array: the elements directly, without the
 * general walk (which took about 10% more user CPU for `youmufs cat` of a
 * 400k-row list<int32> jsonl epoch). */
static int json_list(const ix_framing *f, const ix_record *r, ix_sink *s, pq_error *err)
{
    put_byte(s, '[');
    elements it = elements_of(f, r);
    const pq_bytes *elem;
    for (int first = 1; next_element(&it, &elem); first = 0) {
        if (!first)
            put_byte(s, ',');
        if (json_element(f, elem, s, err) < 0)
            return -1;
    }
    put_byte(s, ']');
    return 0;
}

/* The value of record r (after its key). */
static int json_value(const ix_framing *f, const ix_record *r, ix_sink *s, pq_error *err)
{
    if (f->shape.nested && is_value_or_list(&f->nest))
        return json_list(f, r, s, err);
    if (f->shape.nested) {
        json_walk w = { f, r, s, err };
        return pq_nest_walk(&f->nest, r->defs, r->reps, r->levels, r->num_values, json_event, &w,
                            err) != 0
                   ? -1
                   : 0;
    }
    pq_bytes v = pq_value_at(&r->values, 0);
    return json_element(f, &v, s, err);
}

int ix_frame_json_value(const ix_framing *f, const ix_record *r, ix_sink *s, pq_error *err)
{
    assert(f->format == IX_FORMAT_JSONL && !f->others);
    int rc = json_value(f, r, s, err);
    if (rc == 0 && s->passed_end)
        rc = pq_error_set(err, "the value does not fit in the room left for it");
    return rc < 0 ? pq_error_prefix(err, "row %llu: ", (unsigned long long)r->row) : 0;
}

/* Whether record r stands for a row where the framing's own column is null
 * (kept because another column has a value: ix_row_kept_by_others). */
static int is_null_here(const ix_framing *f, const ix_record *r)
{
    if (f->shape.nested)
        return r->defs && r->defs[0] < f->shape.null_def;
    return r->num_values == 0;
}

static int own_tree_value(const ix_framing *f, const ix_record *r, ix_sink *s, pq_error *err);

/* Row `row`'s value of position p, from the sink's window or read from the
 * file straight into its buffer (a counting sink only needs its length). */
static int put_held(const ix_others_file *file, uint32_t p, uint64_t row, ix_sink *s,
                    pq_error *err)
{
    uint64_t from, len;
    const uint8_t *held;
    if (ix_others_file_value(file, s->window, p, row, &from, &len, s->at ? &held : NULL,
                             err) < 0)
        return -1;
    if (s->at && len <= (uint64_t)(s->end - s->at)) {
        if (held)
            memcpy(s->at, held, len);
        else if (ix_others_file_read(file, p, from, len, s->at, err) < 0)
            return -1;
        s->at += len;
    } else if (s->at) {
        s->at = NULL;
        s->passed_end = 1;
    }
    s->size += len;
    return 0;
}

/* Every column's key and value, in the order given: the own column's from
 * r (and its sibling leaves held at mount), the others' as framed at mount. */
static int columns_values(const ix_framing *f, const ix_record *r, ix_sink *s, pq_error *err)
{
    const ix_others *o = f->others;
    if (r->row >= o->rows)
        return pq_error_set(err, "beyond the %llu rows indexed", (unsigned long long)o->rows);
    for (uint32_t p = 0; p < o->columns; p++) {
        put_byte(s, p == 0 ? '{' : ',');
        put(s, o->key[p], o->key_len[p]);
        if (p != o->own) {
            if (put_held(o->file, p, r->row, s, err) < 0)
                return -1;
        } else if (is_null_here(f, r)) {
            put(s, "null", 4);
        } else if (o->own_tree ? own_tree_value(f, r, s, err) < 0 : json_value(f, r, s, err) < 0) {
            return -1;
        }
    }
    return 0;
}

static int jsonl_record(const ix_framing *f, const ix_record *r, ix_sink *s, pq_error *err)
{
    if (f->others) {
        if (columns_values(f, r, s, err) < 0)
            return -1;
    } else {
        put(s, f->prefix, f->prefix_len);
        if (json_value(f, r, s, err) < 0)
            return -1;
    }
    if (f->rowid) {
        put(s, ROWID_KEY, sizeof ROWID_KEY - 1);
        decimal(s, r->row);
    }
    if (f->has_source) {
        put(s, SOURCE_KEY, sizeof SOURCE_KEY - 1);
        decimal(s, f->source);
    }
    put(s, "}\n", 2);
    return 0;
}

/* raw: the record's present elements as numbers, then sep; every value is
 * checked to fit the dtype. */
static int raw_record(const ix_framing *f, const ix_record *r, ix_sink *s, pq_error *err)
{
    size_t size = ix_dtype_size(f->dtype);
    uint8_t scratch[8];
    elements it = elements_of(f, r);
    const pq_bytes *elem;
    while (next_element(&it, &elem)) {
        if (!elem)
            continue; /* null elements are skipped */
        ix_number num;
        uint8_t *to = place(s, size, scratch);
        if (ix_number_of(&f->type, *elem, &num, err) < 0 ||
            ix_number_write(&num, f->dtype, to, err) < 0)
            return -1;
        put(s, to, size);
    }
    if (f->has_sep)
        put(s, f->sep, size);
    return 0;
}

static int text_record(const ix_record *r, ix_sink *s, pq_error *err)
{
    pq_bytes v = pq_value_at(&r->values, 0);
    if (memchr(v.ptr, '\n', v.len))
        return pq_error_set(err, "the value contains a newline, which format=text cannot "
                            "carry unambiguously; use format=jsonl or format=len32");
    put(s, v.ptr, v.len);
    put_byte(s, '\n');
    return 0;
}

static void len32_record(const ix_record *r, ix_sink *s)
{
    pq_bytes v = pq_value_at(&r->values, 0);
    uint8_t len[4];
    for (int i = 0; i < 4; i++)
        len[i] = (uint8_t)(v.len >> (8 * i));
    put(s, len, sizeof len);
    put(s, v.ptr, v.len);
}

int ix_frame(const ix_framing *f, const ix_record *r, ix_sink *s, pq_error *err)
{
    uint64_t start = s->size;
    int rc = 0;
    switch (f->format) {
    case IX_FORMAT_TEXT: rc = text_record(r, s, err); break;
    case IX_FORMAT_LEN32: len32_record(r, s); break;
    case IX_FORMAT_RAW: rc = raw_record(f, r, s, err); break;
    case IX_FORMAT_JSONL: rc = jsonl_record(f, r, s, err); break;
    }
    if (rc == 0 && s->passed_end)
        rc = pq_error_set(err, "its %llu bytes do not fit in the room left for it",
                          (unsigned long long)(s->size - start));
    return rc < 0 ? pq_error_prefix(err, "row %llu: ", (unsigned long long)r->row) : 0;
}

/* Fields of several leaves (ix_frame.h): JSON from the events of pq_tree_walk. */

int ix_tree_framing_init(ix_tree_framing *tf, pq_tree *tree, const pq_leaf *const *leaves,
                         pq_error *err)
{
    memset(tf, 0, sizeof *tf);
    tf->tree = *tree;
    memset(tree, 0, sizeof *tree);
    if (!(tf->types = calloc(tf->tree.num_leaves, sizeof *tf->types)))
        return pq_error_set(err, "out of memory");
    for (uint32_t k = 0; k < tf->tree.num_leaves; k++)
        tf->types[k] = ix_value_type_of(leaves[k]);
    return 0;
}

void ix_tree_framing_free(ix_tree_framing *tf)
{
    pq_tree_free(&tf->tree);
    free(tf->types);
    memset(tf, 0, sizeof *tf);
}

typedef struct tree_json {
    const ix_tree_framing *tf;
    const pq_value_list *values;
    ix_sink *s;
    pq_error *err;
} tree_json;

/* A map is a JSON object when its keys are strings (a text leaf), else an
 * array of [key, value] pairs. entry: the map's key_value struct. */
static int string_keys(const ix_tree_framing *tf, const pq_tree_node *entry)
{
    const pq_tree_node *key = entry->children[0];
    return key->kind == PQ_STEP_LEAF && ix_value_is_text(&tf->types[key->leaf]) &&
           tf->types[key->leaf].kind != IX_KIND_BINARY;
}

/* What opens (or closes) node n: a struct '{', a list '[', a map '{' or
 * '[' by its keys, a map entry nothing (an object's key: value) or '[' (a
 * pair). */
static char bracket(const pq_tree_node *n, int object_map, int open)
{
    char c;
    if (n->map_entry)
        c = object_map ? 0 : '[';
    else
        c = n->kind == PQ_STEP_STRUCT || object_map ? '{' : '[';
    return c && !open ? (char)(c + 2) : c; /* '{' + 2 == '}', '[' + 2 == ']' */
}

static int tree_event(void *ctx, pq_tree_event ev, const pq_tree_node *n, uint32_t index,
                      uint32_t value)
{
    tree_json *w = ctx;
    int object_map = n->is_map ? string_keys(w->tf, n->children[0])
                               : n->map_entry && string_keys(w->tf, n);
    switch (ev) {
    case PQ_TE_OPEN:
    case PQ_TE_CLOSE: {
        char b = bracket(n, object_map, ev == PQ_TE_OPEN);
        if (b)
            put_byte(w->s, (uint8_t)b);
        return 0;
    }
    case PQ_TE_FIELD:
        if (n->map_entry) {
            if (index == 1)
                put_byte(w->s, object_map ? ':' : ',');
            return 0;
        }
        if (index)
            put_byte(w->s, ',');
        json_string(w->s, (const uint8_t *)n->names[index], (uint32_t)strlen(n->names[index]),
                    0);
        put_byte(w->s, ':');
        return 0;
    case PQ_TE_NEXT: put_byte(w->s, ','); return 0;
    case PQ_TE_NULL: put(w->s, "null", 4); return 0;
    case PQ_TE_EMPTY: put(w->s, object_map ? "{}" : "[]", 2); return 0;
    case PQ_TE_VALUE: {
        pq_bytes v = pq_value_at(&w->values[index], value);
        return json_typed(&w->tf->types[index], &v, w->s, w->err);
    }

    }
    return 0;
}

int ix_frame_tree_value(const ix_tree_framing *tf, const pq_tree_row *rows,
                        const pq_value_list *values, ix_sink *s, pq_error *err)
{
    tree_json w = { tf, values, s, err };
    int rc = pq_tree_walk(&tf->tree, rows, tree_event, &w, err) != 0 ? -1 : 0;
    if (rc == 0 && s->passed_end)
        rc = pq_error_set(err, "the value does not fit in the room left for it");
    return rc;
}

static void put_u32(ix_sink *s, uint32_t v)
{
    uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    put(s, b, 4);
}

void ix_tree_siblings_put(const ix_tree_framing *tf, uint32_t own, const pq_tree_row *rows,
                          const pq_value_list *values, ix_sink *s)
{
    for (uint32_t j = 0; j < tf->tree.num_leaves; j++) {
        if (j == own)
            continue;
        const pq_tree_row *r = &rows[j];
        put_u32(s, r->entries);
        for (uint32_t i = 0; i < r->entries; i++) {
            uint16_t d = r->defs ? r->defs[i] : (uint16_t)tf->tree.max_def[j];
            uint8_t b[2] = { (uint8_t)d, (uint8_t)(d >> 8) };
            put(s, b, 2);
        }
        for (uint32_t i = 0; i < r->entries; i++) {
            uint16_t v = r->reps ? r->reps[i] : 0;
            uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
            put(s, b, 2);
        }
        put_u32(s, r->values);
        for (uint32_t i = 0; i < r->values; i++) {
            pq_bytes v = pq_value_at(&values[j], i);
            put_u32(s, v.len);
            put(s, v.ptr, v.len);
        }
    }
}

/* Reads back what ix_tree_siblings_put wrote (bytes made at mount: a
 * mismatch is a bug, still refused with a message rather than read past). */
typedef struct held {
    const uint8_t *at, *end;
} held;

static int get_u32(held *h, uint32_t *v)
{
    if (h->end - h->at < 4)
        return -1;
    *v = (uint32_t)h->at[0] | (uint32_t)h->at[1] << 8 | (uint32_t)h->at[2] << 16 |
         (uint32_t)h->at[3] << 24;
    h->at += 4;
    return 0;
}

static int get_levels(held *h, uint32_t n, uint16_t *out)
{
    if ((size_t)(h->end - h->at) / 2 < n)
        return -1;
    for (uint32_t i = 0; i < n; i++, h->at += 2)
        out[i] = (uint16_t)(h->at[0] | h->at[1] << 8);
    return 0;
}

static int get_leaf(held *h, pq_tree_row *row, uint16_t **levels, pq_bytes **values)
{
    uint32_t n, m;
    if (get_u32(h, &n) < 0 || (size_t)(h->end - h->at) / 4 < n)
        return -1;
    if (!(*levels = malloc(2 * (size_t)(n ? n : 1) * sizeof **levels)) ||
        get_levels(h, n, *levels) < 0 || get_levels(h, n, *levels + n) < 0 ||
        get_u32(h, &m) < 0 || (size_t)(h->end - h->at) / 4 < m ||
        !(*values = malloc((m ? m : 1) * sizeof **values)))
        return -1;
    for (uint32_t i = 0; i < m; i++) {
        uint32_t len;
        if (get_u32(h, &len) < 0 || (size_t)(h->end - h->at) < len)
            return -1;
        (*values)[i] = (pq_bytes){ h->at, len };
        h->at += len;
    }
    *row = (pq_tree_row){ *levels, *levels + n, n, m };
    return 0;
}

static int own_tree_value(const ix_framing *f, const ix_record *r, ix_sink *s, pq_error *err)
{
    const ix_others *o = f->others;
    const ix_tree_framing *tf = o->own_tree;
    uint32_t n = tf->tree.num_leaves;
    pq_tree_row *rows = calloc(n, sizeof *rows);
    pq_value_list *values = calloc(n, sizeof *values);
    uint16_t **levels = calloc(n, sizeof *levels);
    pq_bytes **vals = calloc(n, sizeof *vals);
    uint64_t from = 0, len = 0;
    const uint8_t *at = NULL;
    uint8_t *entries = NULL; /* when the window does not hold them */
    int rc = rows && values && levels && vals ? 0 : pq_error_set(err, "out of memory");
    if (rc == 0)
        rc = ix_others_file_value(o->file, s->window, o->own, r->row, &from, &len, &at, err);
    if (rc == 0 && !at && !(at = entries = malloc(len ? len : 1)))
        rc = pq_error_set(err, "out of memory");
    if (rc == 0 && entries)
        rc = ix_others_file_read(o->file, o->own, from, len, entries, err);
    held h = { at, at ? at + len : NULL };
    for (uint32_t j = 0; rc == 0 && j < n; j++) {
        if (j == o->own_leaf) {
            rows[j] = (pq_tree_row){ r->defs, r->reps, r->levels, r->num_values };
            values[j] = r->values;
        } else if (get_leaf(&h, &rows[j], &levels[j], &vals[j]) < 0) {
            rc = pq_error_set(err, "the held entries of field %s are damaged", tf->tree.key);
        } else {
            values[j] = pq_value_list_of(vals[j]);
        }
    }
    if (rc == 0)
        rc = ix_frame_tree_value(tf, rows, values, s, err);
    for (uint32_t j = 0; levels && vals && j < n; j++) {
        free(levels[j]);
        free(vals[j]);
    }
    free(entries);
    free(rows);
    free(values);
    free(levels);
    free(vals);
    return rc;
}
