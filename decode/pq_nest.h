/* pq_nest.h — the nesting above one leaf column, and its values assembled
 * from repetition and definition levels (Dremel record assembly).
 *
 * A field the user names may hold structs and lists at any depth above its
 * leaf. pq_nest_of reads that structure from the schema the way Arrow (and so
 * pyarrow) reads it, by the backward-compatibility rules of the Parquet
 * LogicalTypes specification: a LIST-annotated group's repeated child is the
 * list; in the standard 3-level form the child's only field is the element,
 * in the legacy 2-level forms (a repeated primitive, a repeated group of
 * several fields, or one named "array" or "<list>_tuple") the repeated node
 * is itself the (non-null) element; a repeated field outside a LIST is a
 * non-null list of non-null elements; a MAP-annotated group is a list
 * (is_map) whose element is its repeated key_value group, a struct of the
 * key and the value; any other group is a struct.
 *
 * The result is a chain of steps from the named field down to the leaf.
 * pq_nest_walk turns the level entries of one row into events (open a struct
 * or list, next element, null, empty list, value, close) a caller writes as
 * it likes (JSON: index/ix_frame.c). Levels are untrusted: a walk checks
 * every entry against the chain and fails with a message rather than emit an
 * unbalanced or out-of-range event. Pure, thread-safe on distinct or const
 * data.
 */
#ifndef PQ_NEST_H
#define PQ_NEST_H

#include <stdint.h>

#include "pq_error.h"
#include "pq_meta.h"

typedef enum pq_step_kind {
    PQ_STEP_STRUCT, /* an object holding the next step under `name` */
    PQ_STEP_LIST,   /* an array whose elements are the next step */
    PQ_STEP_LEAF,   /* the value (always the last step) */
} pq_step_kind;

typedef struct pq_step {
    pq_step_kind kind;
    int16_t def;      /* the node is present (not null) when an entry's def >= def */
    int16_t elem_def; /* LIST: the list has an element when def >= elem_def (else empty) */
    int16_t rep;      /* LIST: the repetition level that starts its next element */
    int is_map;       /* LIST: a MAP's key_value list (its element: a struct of key, value) */
    char *name;       /* STRUCT: the field the next step is (owned) */
} pq_step;

typedef struct pq_nest {
    pq_step *steps;   /* [0] is the output field; [num_steps - 1] the leaf */
    int num_steps;
    int16_t max_def, max_rep;
    char *key;        /* dotted path of the output field (owned) */
} pq_nest;

/* The nesting of `leaf` (a leaf of m) below the field named by the first
 * `named_depth` components of its path (1: the top-level field). When the
 * named field lies inside a list or map (a leaf's path such as
 * "ids.list.element"), the output field is raised to the list itself (the
 * LIST group, or the repeated field of a bare list; a map): a value inside
 * a list is not one value per row. A map's key and value are two leaves:
 * the nesting of either is one path of the map (pq_tree.h joins them). On
 * success *out is owned by the caller (pq_nest_free). */
int pq_nest_of(const pq_file_meta *m, const pq_leaf *leaf, int named_depth, pq_nest *out,
               pq_error *err);
/* The nesting of a leaf as its levels alone describe it: the leaf itself
 * (max_rep 0) or one list of it (max_rep 1, by leaf->rep_def); key: the
 * leaf's path, or its first component for a list. Fails for max_rep > 1. */
int pq_nest_simple(const pq_leaf *leaf, pq_nest *out, pq_error *err);
void pq_nest_free(pq_nest *n);
/* Whether two nestings are the same: key, steps, levels and field names. */
int pq_nest_equal(const pq_nest *a, const pq_nest *b);
/* Whether records need their levels to be written: some list or struct
 * above the leaf (else a record is just its value). */
int pq_nest_is_nested(const pq_nest *n);

typedef enum pq_nest_event {
    PQ_EV_OPEN,  /* step: a STRUCT or LIST starts */
    PQ_EV_NEXT,  /* another element of the innermost open list follows */
    PQ_EV_NULL,  /* step: a null in place of that step's node */
    PQ_EV_EMPTY, /* step: an empty LIST */
    PQ_EV_VALUE, /* value: the index of the leaf value (0, 1, ... in order) */
    PQ_EV_CLOSE, /* step: the STRUCT or LIST ends */
} pq_nest_event;

/* Called once per event; a non-zero return stops the walk and is returned. */
typedef int (*pq_nest_emit)(void *ctx, pq_nest_event ev, const pq_step *step, uint32_t value);

/* Walk one row: `entries` level entries (defs NULL: all max_def; reps NULL:
 * all 0), holding `values` leaf values (the entries whose def is max_def).
 * Emits the row's value of the output field (a NULL event if it is null).
 * Returns 0, the emitter's non-zero return, or -1 with a message when the
 * levels do not form one row of this nesting (a level out of range, a
 * repetition of a list that is not open, an element below its list's
 * definition level, another number of values). */
int pq_nest_walk(const pq_nest *n, const uint16_t *defs, const uint16_t *reps, uint32_t entries,
                 uint32_t values, pq_nest_emit emit, void *ctx, pq_error *err);

#endif
