/* ix_row.h — one row assembled from streamed level entries (pq_stream.h).
 *
 * A streamed page hands out one level entry at a time, its value valid only
 * until the next; a list row is many entries, and may go on in the next
 * page. An ix_row copies the entries of one row (their levels and values)
 * so the row can be measured or framed as an ix_record once its
 * last entry is seen. Its memory is bounded: the arrays never grow beyond
 * `max` bytes in all, and a row that needs more fails with a message that
 * says "not streamable" (the caller decodes the page whole instead).
 */
#ifndef IX_ROW_H
#define IX_ROW_H

#include <stddef.h>
#include <stdint.h>

#include "ix_record.h"
#include "pq_stream.h"

typedef int (*ix_row_grow_fn)(void *ctx, size_t more, pq_error *err);

typedef struct ix_row {
    uint16_t *defs;   /* one per entry; the array holds reps after defs_cap */
    uint16_t *reps;   /* one per entry: defs + defs_cap */
    pq_bytes *values; /* one per non-null value; ptr set by ix_row_record */
    uint8_t *bytes;   /* the values' bytes, back to back */
    uint32_t entries, num_values;
    size_t used;      /* bytes in `bytes` */
    size_t defs_cap, values_cap, bytes_cap; /* in elements */
    size_t max;       /* most bytes the three arrays may take together */
    ix_row_grow_fn grow; /* asked before the arrays grow, or NULL */
    void *grow_ctx;
} ix_row;

void ix_row_init(ix_row *r, size_t max);
/* Have grow(ctx, more, err) asked before the arrays take `more` bytes
 * beyond ix_row_bytes (a caller charging memory as it is taken); when it
 * returns -1 (with err set) the entry is not added and ix_row_add fails
 * with that error. */
void ix_row_on_grow(ix_row *r, ix_row_grow_fn grow, void *ctx);
/* Append one entry (its value when e->has_value). */
int ix_row_add(ix_row *r, const pq_stream_entry *e, pq_error *err);
/* The row as a record: returns 1 and fills *out (valid until the row
 * changes), or 0 when the row is a null list (no record). `row` is its
 * global row number. The row must hold at least one entry. */
int ix_row_record(ix_row *r, const ix_shape *shape, uint64_t row, ix_record *out);
/* Empty the row, keeping its memory. */
void ix_row_clear(ix_row *r);
/* Bytes the row's arrays take now (<= max). */
size_t ix_row_bytes(const ix_row *r);
void ix_row_free(ix_row *r);

#endif
