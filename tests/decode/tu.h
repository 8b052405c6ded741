/* tu.h — helpers shared by the decode tests: fixture files, a minimal
 * column-chunk walker (the real page walker belongs to index/), and the
 * .expect format of make_fixtures.py. */
#ifndef TU_H
#define TU_H

#include <stddef.h>
#include <stdint.h>

#include "pq_column.h"
#include "pq_meta.h"

#ifndef YFS_SOURCE_DIR
#define YFS_SOURCE_DIR "."
#endif
#define TU_FIXTURES YFS_SOURCE_DIR "/tests/decode/fixtures/"

/* Read a whole file (malloc'd, exactly *len bytes). NULL if unreadable. */
uint8_t *tu_read(const char *path, size_t *len);
uint8_t *tu_fixture(const char *name, size_t *len);

typedef struct tu_file {
    const uint8_t *data;
    size_t len;
    pq_file_meta meta;
    pq_leaf *leaves;
    int nleaves;
} tu_file;

/* Locate and parse the footer of data[0..len) and flatten the schema. */
int tu_open(const uint8_t *data, size_t len, tu_file *f, pq_error *err);
void tu_close(tu_file *f);
int tu_find_leaf(const tu_file *f, const char *path);

/* Decode every page of leaf `col` in every row group, calling fn for each
 * data page. Returns -1 on the first decode error or when fn returns -1. */
typedef int (*tu_page_fn)(void *ctx, const pq_leaf *leaf, const pq_page_values *pv);
int tu_walk_column(const tu_file *f, int col, tu_page_fn fn, void *ctx, pq_error *err);
/* The same walk, handing each data page over undecoded: its header, its
 * body (h->compressed_size bytes) and the chunk's dictionary (or NULL). */
typedef int (*tu_raw_fn)(void *ctx, const pq_leaf *leaf, const pq_column_desc *col,
                         const pq_page_header *h, const uint8_t *body, const pq_dictionary *dict,
                         pq_error *err);
int tu_walk_raw(const tu_file *f, int col, tu_raw_fn fn, void *ctx, pq_error *err);

/* One section of an .expect file. Lines point into the loaded buffer. */
typedef struct tu_expect_col {
    char *path;
    char *mode;  /* "flat", "leaf" or "decimal" */
    size_t count;
    char **lines;
} tu_expect_col;

typedef struct tu_expect {
    char *buf;
    int ncols;
    tu_expect_col *cols;
} tu_expect;

int tu_expect_load(const char *name, tu_expect *e);
void tu_expect_free(tu_expect *e);
/* Does an expected line ("=escaped" or "#hex") equal the bytes? */
int tu_line_equals(const char *line, const uint8_t *p, size_t n);

/* A tiny thrift compact writer for hand-built metadata in tests. */
typedef struct tw {
    uint8_t buf[8192];
    size_t len;
    int depth;
    int16_t last[128];
} tw;

void tw_init(tw *w);                              /* opens the top-level struct */
void tw_byte(tw *w, uint8_t b);
void tw_uleb(tw *w, uint64_t v);
void tw_zigzag(tw *w, int64_t v);                 /* i16/i32/i64 values */
void tw_field(tw *w, int16_t id, uint8_t type);   /* short or long form */
void tw_begin(tw *w);                             /* a nested struct value */
void tw_end(tw *w);                               /* STOP, close the struct */
void tw_binary(tw *w, const char *s);
void tw_list(tw *w, uint8_t elem_type, uint32_t n);
/* Shorthands: field + value. */
void tw_i32f(tw *w, int16_t id, int64_t v);
void tw_i64f(tw *w, int16_t id, int64_t v);

#endif
