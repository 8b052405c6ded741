/* ix_record.h — the records of a decoded page.
 *
 * A record is one row of the column that is not null: for a flat column one
 * value, for a list column the row's list (possibly empty, possibly with
 * null elements). Records point into the page's decoded values and levels,
 * so they live as long as the pq_page_values they came from.
 */
#ifndef IX_RECORD_H
#define IX_RECORD_H

#include <stdint.h>

#include "pq_column.h"
#include "pq_error.h"

/* The column's level structure (from its pq_leaf and pq_nest). */
typedef struct ix_shape {
    int16_t max_def;
    int16_t max_rep;  /* 0: one level entry per row */
    int16_t rep_def;  /* one list (max_rep 1): definition level at which an element exists */
    int16_t null_def; /* a row is a record when its first entry's def >= null_def */
    int nested;       /* records carry their levels (lists, structs: pq_nest_is_nested) */
    /* Several columns per record (ix_others.h): bit r of others_any (for
     * global rows r < others_rows) says another column has a value at row
     * r, and the row is then a record even when this column is null there;
     * NULL: one column, null rows are no records. */
    const uint64_t *others_any;
    uint64_t others_rows;
} ix_shape;

/* Whether another column of the record has a value at `row`. */
static inline int ix_row_kept_by_others(const ix_shape *shape, uint64_t row)
{
    return shape->others_any && row < shape->others_rows &&
           (shape->others_any[row >> 6] >> (row & 63) & 1);
}

/* Whether a row is a record, the served column being null there or not
 * (own_null): one column, when it is not null; several, when any is not. */
static inline int ix_row_is_record(const ix_shape *shape, int own_null, uint64_t row)
{
    return !own_null || ix_row_kept_by_others(shape, row);
}

typedef struct ix_record {
    pq_value_list values;   /* the record's non-null leaf values, in order */
    const uint16_t *defs;   /* nested: definition levels of its entries (NULL: all max_def);
                             * NULL when not nested */
    const uint16_t *reps;   /* repetition levels of its entries; NULL when max_rep is 0 */
    uint32_t levels;        /* level entries (an empty list has one; 1 when max_rep is 0) */
    uint32_t num_values;    /* values[0..num_values) */
    uint64_t row;           /* global row number */
} ix_record;

/* One list (max_rep 1): element k of the record is a value when defs[k] ==
 * max_def, a null element when defs[k] >= rep_def, and absent (the list is
 * empty) otherwise. Deeper nesting: pq_nest_walk. */

/* The record of a row of a column without repetition, its one entry of
 * definition level *def (NULL: max_def) and value the first of `value`
 * (read only when *def is max_def): 1 and *out (pointing to the value and
 * *def), or 0 for a null row that no other column keeps. */
static inline int ix_flat_record(const ix_shape *shape, pq_value_list value,
                                 const uint16_t *def, uint64_t row, ix_record *out)
{
    int has_value = !def || *def == shape->max_def;
    if (!ix_row_is_record(shape, !has_value && (!shape->nested || *def < shape->null_def), row))
        return 0;
    /* nested: a struct above the leaf may be a record with a null value;
     * several columns: a record whose num_values is 0 (flat) or whose first
     * def is below null_def (nested) is null in this column */
    *out = (ix_record){ value, shape->nested ? def : NULL, NULL, 1, (uint32_t)has_value, row };
    return 1;
}

/* The records of a decoded page whose first row is `first_row`, in page
 * order, into out[0..cap). *count is the number of records, *rows the
 * number of rows (null rows included). Fails if there are more than cap
 * records, or if the values start in the middle of a row (rows that span
 * pages are re-cut first: ix_row_start, pq_page_values_append). */
int ix_page_records(const ix_shape *shape, const pq_page_values *v, uint64_t first_row,
                    ix_record *out, uint32_t cap, uint32_t *count, uint32_t *rows,
                    pq_error *err);

/* Rows that span pages. A row starts at a level entry of repetition level
 * 0; a page of a repeated column may begin with entries of a row begun on
 * an earlier page and end with a row that goes on in the next. */
/* The first entry at or after `from` that starts a row (v->num_levels if
 * none); every entry starts a row in a flat column. */
uint32_t ix_row_start(const pq_page_values *v, uint32_t from);
/* The last entry that starts a row (v->num_levels if none). */
uint32_t ix_last_row_start(const pq_page_values *v);
/* Entries [begin, end) of v as values of their own, pointing into v's
 * arrays (not owned: never freed). */
pq_page_values ix_entries_view(const pq_page_values *v, int16_t max_def, uint32_t begin,
                               uint32_t end);

#endif
