/* pq_tree.h — a field of several leaf columns, and its rows assembled from
 * the levels of all of them (Dremel record assembly across leaves).
 *
 * A struct of several fields, a list of structs (chat `messages`:
 * list<struct<role, content>>), a map (its keys and values) are one value
 * per row made of several leaf columns. Each leaf's nesting is a chain of
 * steps (pq_nest.h); the chains of the leaves of one field share their
 * steps down to where they part, at a struct's fields. pq_tree_add joins
 * them into a tree, leaf by leaf in schema order.
 *
 * pq_tree_walk takes one row's level entries of every leaf and emits the
 * row's value as events (open, field k of a struct, next element, null,
 * empty list, value of leaf k, close) a caller writes as it likes (JSON:
 * index/ix_frame.c). At a struct every leaf below it has the entries of
 * that struct; at a list, each leaf's entries are cut into elements where
 * the list's repetition level starts one, and every leaf must have as many.
 * Levels are untrusted: the walk checks every entry against the tree and
 * the leaves against each other, and fails with a message rather than emit
 * an unbalanced or inconsistent event. Pure; thread-safe on const data.
 */
#ifndef PQ_TREE_H
#define PQ_TREE_H

#include <stdint.h>

#include "pq_error.h"
#include "pq_nest.h"

typedef struct pq_tree_node {
    pq_step_kind kind;
    int16_t def, elem_def, rep; /* as the pq_step it stands for */
    int is_map;                 /* LIST: a map's list of key_value entries */
    int map_entry;              /* STRUCT: a map's entry, fields key then value */
    uint32_t leaf;              /* LEAF: its leaf (0, 1, ... in schema order) */
    int taken;                  /* LEAF: a leaf was added here */
    uint32_t lo, hi;            /* the leaves below: [lo, hi) */
    uint32_t num_children;      /* STRUCT: its fields; LIST: 1 (the element) */
    struct pq_tree_node **children;
    char **names;               /* STRUCT: the fields' names (owned) */
} pq_tree_node;

typedef struct pq_tree {
    pq_tree_node *root;
    uint32_t num_leaves;
    int16_t *max_def, *max_rep; /* per leaf */
    char *key;                  /* the field's dotted path (owned) */
} pq_tree;

/* Add the next leaf (in schema order) by its nesting below the field. Fails
 * when it does not fit the tree (another field, another level where the
 * chains share a node). */
int pq_tree_add(pq_tree *t, const pq_nest *leaf, pq_error *err);
/* After the last leaf: number the leaves below each node; fails for a map
 * entry that is not a key and a value. */
int pq_tree_finish(pq_tree *t, pq_error *err);
void pq_tree_free(pq_tree *t);

/* One row's entries of one leaf: defs NULL means all at the leaf's max_def,
 * reps NULL all 0; `values` values (the entries at max_def). */
typedef struct pq_tree_row {
    const uint16_t *defs, *reps;
    uint32_t entries;
    uint32_t values;
} pq_tree_row;

typedef enum pq_tree_event {
    PQ_TE_OPEN,  /* node: a STRUCT or LIST starts */
    PQ_TE_FIELD, /* node: field `index` of the STRUCT follows */
    PQ_TE_NEXT,  /* node: another element of the LIST follows */
    PQ_TE_NULL,  /* node: null in its place */
    PQ_TE_EMPTY, /* node: an empty LIST */
    PQ_TE_VALUE, /* node: a LEAF; value `value` of leaf `index` in the row */
    PQ_TE_CLOSE, /* node: the STRUCT or LIST ends */
} pq_tree_event;

/* Called once per event; a non-zero return stops the walk and is returned. */
typedef int (*pq_tree_emit)(void *ctx, pq_tree_event ev, const pq_tree_node *node,
                            uint32_t index, uint32_t value);

/* Walk one row: rows[k] are leaf k's entries of it. Returns 0, the
 * emitter's non-zero return, or -1 with a message when the levels are not
 * one row of this tree. */
int pq_tree_walk(const pq_tree *t, const pq_tree_row *rows, pq_tree_emit emit, void *ctx,
                 pq_error *err);

/* Whether the row is null: leaf 0's first entry is below the field's
 * definition level. */
int pq_tree_row_is_null(const pq_tree *t, const pq_tree_row *rows);

#endif
