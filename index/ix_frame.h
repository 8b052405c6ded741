/* ix_frame.h — how one record is written into an epoch file (the framings
 * README.md states; value rules in tests/CONTRACT-TYPES.md). The index measures
 * every record at mount (so st_size is exact before any read, and values a
 * framing cannot carry are refused then); the read path writes them. Both
 * are ix_frame, into two kinds of sink, so sizes and bytes cannot disagree.
 *
 *   jsonl  {"<key>":<value>}\n, with ,"_row":<row> before the } under rowid
 *          (and ,"_source":<i> after it for source i of a mixture).
 *          Strings as JSON strings (`"` `\` and bytes < 0x20 escaped, the
 *          rest copied; binary columns escape bytes >= 0x80 as \u0080..
 *          \u00ff, so value.encode("latin-1") recovers them); numbers, dates
 *          and times per ix_value.h; lists as arrays with null elements,
 *          structs as objects, nested at any depth (pq_nest.h).
 *   text   value bytes, then \n (a value containing \n is refused).
 *   len32  4-byte little-endian length, then the value bytes.
 *   raw    the record's numbers little-endian in one dtype, null elements
 *          skipped, then the sep= value if given.
 * text and len32 serve flat string/binary columns, raw numeric columns and
 * lists of numbers, jsonl everything. A framing is immutable after init and
 * may be shared by threads.
 */
#ifndef IX_FRAME_H
#define IX_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "ix_record.h"
#include "ix_value.h"
#include "pq_nest.h"
#include "pq_tree.h"

typedef enum ix_format {
    IX_FORMAT_JSONL = 0,
    IX_FORMAT_TEXT,
    IX_FORMAT_LEN32,
    IX_FORMAT_RAW,
} ix_format;

typedef struct ix_frame_options {
    ix_format format;
    int rowid;       /* jsonl: append "_row" */
    ix_dtype dtype;  /* raw: IX_DT_NONE for the column's own */
    int has_sep;     /* raw: append sep after each record */
    int64_t sep;
    const char *key; /* jsonl: the record's key; NULL: the output field's name */
    int has_source;  /* jsonl with rowid: also append "_source":<source> (mixtures) */
    uint32_t source;
} ix_frame_options;

/* The other columns of a record of several (column=a:b:c, jsonl only;
 * built by ix_others.h, which owns it): the record is one object whose keys
 * follow the order given; the framing's own column sits at `own`, the
 * others' values come framed already, one JSON value per global row. */
typedef struct ix_others {
    uint32_t columns;        /* in the record, the framing's own included, if written */
    uint32_t own;            /* position of the framing's own column */
    char **key;              /* per position: `"<key>":`, escaped */
    size_t *key_len;
    /* per position that has values (not `own` of one leaf): row r's
     * value, read from the file at each record (ix_others_file.h) */
    const struct ix_others_file *file;
    uint64_t rows;           /* rows of the dataset */
    uint64_t *any;           /* bit r: some other column is not null at row r */
    /* The own column a field of several leaves (ix_others.h): the framing's
     * leaf is own_leaf of own_tree, and position own's values are the other leaves'
     * entries of each row (ix_tree_siblings_put), which the framing joins
     * to its record's. NULL: the own column is of its one leaf. */
    const struct ix_tree_framing *own_tree;
    uint32_t own_leaf;
} ix_others;

typedef struct ix_framing {
    ix_format format;
    int rowid;
    int has_source;  /* with rowid: "_source":<source> after "_row" */
    uint32_t source;
    ix_value_type type;
    ix_shape shape;
    pq_nest nest;    /* the output field's steps down to the leaf (owned) */
    char *prefix;    /* jsonl: {"<escaped key>": */
    size_t prefix_len;
    char **step_prefix;      /* jsonl: per step, {"<field>": for a struct, else NULL */
    size_t *step_prefix_len;
    ix_dtype dtype;  /* raw */
    int has_sep;
    uint8_t sep[8];  /* raw: the separator's bytes in dtype */
    const ix_others *others; /* several columns (jsonl), else NULL; not owned */
} ix_framing;

/* Parse "jsonl" | "text" | "len32" | "raw". Returns -1 for anything else. */
int ix_format_parse(const char *name, ix_format *out);
const char *ix_format_name(ix_format format);
/* File extension of a format: "jsonl", "txt", "len32", "bin". */
const char *ix_format_ext(ix_format format);

/* Set up the framing of `leaf`'s values below the output field `nest`
 * (pq_nest_of), which the framing takes over (*nest is left empty); NULL:
 * the leaf's own levels say it (pq_nest_simple). Fails with a message when
 * the format cannot carry the column (text of numbers, raw of strings or
 * structs, a dtype that floats cannot take, a sep that does not fit the
 * dtype), having released what it took over (f is left empty). */
int ix_framing_init(ix_framing *f, const ix_frame_options *o, const pq_leaf *leaf,
                    pq_nest *nest, pq_error *err);
void ix_framing_free(ix_framing *f);
/* Make f (jsonl) frame records of several columns: its own column's value
 * at others->own, the others' from others, which must outlive f. Rows
 * where f's column is null become records when another column has a value. */
void ix_framing_set_others(ix_framing *f, const ix_others *others);

/* Where framed bytes go. Measuring a record is framing it into a counting
 * sink; writing it is framing it into a bounded buffer, where framing fails
 * rather than pass the buffer's end. The same code does both, so a size
 * measured at mount and the bytes written at read time cannot disagree. */
typedef struct ix_sink {
    uint8_t *at;     /* next byte to store; NULL: counting only */
    uint8_t *end;    /* the end of the buffer */
    uint64_t size;   /* bytes framed into the sink so far */
    int passed_end;  /* a write did not fit: nothing from it on was stored */
    /* several columns: the others' values are read through it (one thread's:
     * ix_framing_window), or record by record when NULL */
    struct ix_others_window *window;
} ix_sink;

static inline ix_sink ix_sink_counter(void)
{
    return (ix_sink){ NULL, NULL, 0, 0, NULL };
}

/* A sink storing into buf[0..room). */
static inline ix_sink ix_sink_buffer(uint8_t *buf, size_t room)
{
    return (ix_sink){ buf, buf + room, 0, 0, NULL };
}

/* For a thread framing records of consecutive rows (a unit, a page) with
 * f: a window on f's others (ix_others_file.h) to set in its sinks, which
 * the thread frees with ix_others_window_free; NULL when f has no others
 * (or out of memory: values are then read record by record). */
struct ix_others_window *ix_framing_window(const ix_framing *f);

/* Frame record r into s (s->size grows by the record's framed size).
 * Returns 0, or -1 with a message naming the row for a value the framing
 * cannot carry (a newline in text, a number outside the raw dtype) and for
 * a record that does not fit in a buffer sink (bytes before its end may
 * have been stored). */
int ix_frame(const ix_framing *f, const ix_record *r, ix_sink *s, pq_error *err);
/* The JSON value of record r alone, as jsonl frames it after its key
 * (f: jsonl, without others); fails as ix_frame does. */
int ix_frame_json_value(const ix_framing *f, const ix_record *r, ix_sink *s, pq_error *err);
/* `"<key>":` for text key[0..len), escaped, into a malloc'ed NUL-terminated
 * string (*out, *out_len); -1 when out of memory. */
int ix_json_key(const char *key, size_t len, char **out, size_t *out_len);


/* A field of several leaf columns (a struct of several fields, a list of
 * structs, a map: pq_tree.h), written as jsonl writes values: structs as
 * objects, lists as arrays, a map as an object when its keys are strings
 * and as an array of [key, value] pairs otherwise, nulls as null. */
typedef struct ix_tree_framing {
    pq_tree tree;          /* owned */
    ix_value_type *types;  /* per leaf */
} ix_tree_framing;

/* Take over *tree (left empty) with leaves[k] the leaf of tree leaf k. */
int ix_tree_framing_init(ix_tree_framing *tf, pq_tree *tree, const pq_leaf *const *leaves,
                         pq_error *err);
void ix_tree_framing_free(ix_tree_framing *tf);
/* The JSON value of one row: rows[k] and values[k] are leaf k's entries and
 * values in it. Fails on levels that are not one row of the tree (pq_tree_walk), a value
 * its type refuses, a buffer sink without room. */
int ix_frame_tree_value(const ix_tree_framing *tf, const pq_tree_row *rows,
                        const pq_value_list *values, ix_sink *s, pq_error *err);
/* One row's entries and values of every leaf but `own`, in a form the
 * framing of leaf `own` reads back (ix_others.own_tree): per leaf, u32
 * entries, their u16 defs and u16 reps, u32 values, each as u32 length and
 * bytes (little-endian). */
void ix_tree_siblings_put(const ix_tree_framing *tf, uint32_t own, const pq_tree_row *rows,
                          const pq_value_list *values, ix_sink *s);

#endif
