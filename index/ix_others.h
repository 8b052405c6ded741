/* ix_others.h — records of several columns (column=a:b:c, format=jsonl),
 * and fields of several leaf columns (a struct of several fields, a list of
 * structs such as chat `messages`, a map: their rows assembled from all
 * their leaves, pq_tree.h).
 *
 * A record is one row: {"a":..,"b":..,"c":..}, keys in the order given, a
 * null field `null`, a row skipped only when every column is null there.
 * One leaf, the primary, is the one the index pages (ix_index.h): its
 * pages are the shuffle units, and the plan, the read path and the sizes
 * are those of a single column. The primary is the leaf, of all the
 * columns' leaves, whose values are likely the largest (the long text
 * beside an id, a conversation's contents): a string, binary or list leaf
 * before a fixed-width one, then the most uncompressed bytes in the first
 * file; so what is held beside it is the smallest.
 *
 * The rest is read column chunk by column chunk, page by page
 * (ix_chunk_rows.h: whatever a chunk's size, a page and a row at a time; the
 * next files' chunks read ahead at once, ix_chunks_ahead.h), and written
 * once into a file (ix_others_file.h) the primary's framing reads
 * from (ix_framing_set_others): each other column's rows as JSON (`7`,
 * `"a"`, `null`, `[1,2]`, `{"role":..}`), and, when the primary is a leaf
 * of a field of several, the other leaves' level entries and values of
 * each row (ix_tree_siblings_put), which the framing joins to the primary
 * record's to assemble the field. A record reads its values from the file
 * straight into the bytes it is framed in, which the read path charged
 * before: so they cost no memory beyond one bit a row (`any`, part of the
 * index's memory, ix_memory_bytes, and so of invariant 4's bound), however
 * large, and no mem= limit applies to them. The file sits beside the
 * persistent index's cache file, under the same key (every column and
 * leaf, ix_column_set.key, and every file's identity): a re-mount of
 * unchanged files reuses it and reads no footer and no column of them;
 * with cache=none it is a temporary file that goes with the mount.
 *
 * Not thread-safe while building; immutable afterwards.
 */
#ifndef IX_OTHERS_H
#define IX_OTHERS_H

#include <stdint.h>

#include "ix_frame.h"
#include "ix_internal.h"
#include "ix_others_file.h"

/* A field of several leaves (a struct of several fields, a list of
 * structs, a map), named at one position. */
typedef struct ix_column_tree {
    uint32_t count;          /* its leaves; 0: the position is a field of one leaf */
    int *leaves;             /* in the first file, in schema order */
    pq_nest *nests;          /* each leaf's nesting below the field */
    ix_tree_framing framing; /* its rows as JSON */
} ix_column_tree;

typedef struct ix_column_set {
    uint32_t columns;    /* names given (>= 1) */
    uint32_t own;        /* the primary's position */
    uint32_t own_leaf;   /* of a field of several leaves there: the primary's leaf in it
                          * (the others are held as entries: ix_tree_siblings_put) */
    int *leaf;           /* per position: its leaf (of a field of several, the first) */
    ix_framing *framing; /* per position of one leaf but own: jsonl of its values alone */
    ix_column_tree *trees; /* per position: a field of several leaves, or count 0 */
    ix_others values;    /* the others' values, once loaded */
    ix_others_file file; /* where values.file points */
    int reused;          /* the file was found whole: nothing was read from the sources */
    char note[PQ_ERROR_MAX]; /* why a file found was not used, or "" */
    uint64_t bytes_read; /* from the sources by the load (0 when reused) */
    char *key;           /* for the persistent index's key: every column and its leaf as
                          * the first file describes it, one line each */
} ix_column_set;

/* Whether spec names several columns: it holds ':' and is no column's name
 * in the first file. (A field of several leaves, named alone, is found by
 * ix_resolve_column.) */
int ix_columns_several(const ix_source *first, const char *spec);

/* Resolve every name of spec (split at ':') in the first file; choose the
 * primary (first->column is set to it, *own_nest is its field, the caller's
 * to free). Fails naming the column for an unknown or repeated name, and
 * for a format other than jsonl. */
int ix_columns_resolve(ix_source *first, const char *spec, const ix_frame_options *fo,
                       ix_column_set *set, pq_nest *own_nest, pq_error *err);

/* How a load of the other columns reads: each of its column chunk readers
 * holds pages and rows of at most ix_hold_max(mem) each (ix_chunk_rows.h),
 * and the chunks of the next files, read ahead at once on threads..io_depth
 * threads (ix_chunks_ahead.h), at most half of ix_hold_max(mem); footers
 * not parsed yet are read at once too, their parse holding a CPU token of
 * gate (ix_gate.h; NULL: none). */
typedef struct ix_load_limits {
    uint64_t mem;   /* the mount's mem= (0: no limit) */
    int verify_crc;
    int threads;    /* >= 1 */
    int io_depth;   /* >= threads */
    ix_gate *gate;
} ix_load_limits;

/* The other columns' values (set->values): from the file at path when it
 * holds them whole for `digest` (what they are of: ix_build.c), reading
 * nothing of the sources; else read from every file page by page (in
 * global row order; a footer not parsed yet, of a file from the persistent
 * index, is read) into a new file there (path NULL: a temporary file).
 * Errors name the file, row group, column and page. */
int ix_columns_load(ix_column_set *set, ix_sources *ss, const char *path, uint64_t digest,
                    const ix_load_limits *lim, pq_error *err);

/* Heap bytes held: the any bitmap (for ix_memory_bytes). */
uint64_t ix_columns_bytes(const ix_column_set *set);
void ix_columns_free(ix_column_set *set);

#endif
