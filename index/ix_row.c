#include "ix_row.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

void ix_row_init(ix_row *r, size_t max)
{
    memset(r, 0, sizeof *r);
    r->max = max;
}

void ix_row_on_grow(ix_row *r, ix_row_grow_fn grow, void *ctx)
{
    r->grow = grow;
    r->grow_ctx = ctx;
}

size_t ix_row_bytes(const ix_row *r)
{
    return r->defs_cap * 2 * sizeof *r->defs + r->values_cap * sizeof *r->values +
           r->bytes_cap;
}

/* Make room for `need` elements of `size` bytes in *array (capacity *cap),
 * doubling, within the row's limit. */
static int reserve(ix_row *r, void **array, size_t *cap, size_t need, size_t size,
                   pq_error *err)
{
    if (need <= *cap)
        return 0;
    size_t grown = *cap ? *cap : 64;
    while (grown < need)
        grown *= 2;
    size_t others = ix_row_bytes(r) - *cap * size;
    if (grown * size + others > r->max) {
        grown = need; /* the least that fits, if any */
        if (need > (r->max - others) / size || others > r->max)
            return pq_error_set(err, "a row of more than %zu bytes once assembled (not "
                                "streamable at this limit)", r->max);
    }
    if (r->grow && r->grow(r->grow_ctx, (grown - *cap) * size, err) < 0)
        return -1;
    void *p = realloc(*array, grown * size);
    if (!p)
        return pq_error_set(err, "out of memory for a row of %zu entries", need);
    *array = p;
    *cap = grown;
    return 0;
}

/* Room for one more entry e in every array, growing them as needed. */
static int make_room(ix_row *r, const pq_stream_entry *e, pq_error *err)
{
    if (r->entries < r->defs_cap && r->num_values < r->values_cap &&
        e->value.len <= r->bytes_cap - r->used)
        return 0; /* the common case, once per level entry */
    /* defs and reps share one array: defs[0..cap), then reps[0..cap) */
    size_t old_cap = r->defs_cap;
    if (reserve(r, (void **)&r->defs, &r->defs_cap, (size_t)r->entries + 1,
                2 * sizeof *r->defs, err) < 0)
        return -1;
    if (r->defs_cap != old_cap)
        memmove(r->defs + r->defs_cap, r->defs + old_cap, r->entries * sizeof *r->defs);
    r->reps = r->defs + r->defs_cap;
    if (!e->has_value)
        return 0;
    return reserve(r, (void **)&r->values, &r->values_cap, (size_t)r->num_values + 1,
                   sizeof *r->values, err) < 0 ||
                   reserve(r, (void **)&r->bytes, &r->bytes_cap, r->used + e->value.len, 1,
                           err) < 0
               ? -1
               : 0;
}

int ix_row_add(ix_row *r, const pq_stream_entry *e, pq_error *err)
{
    if (make_room(r, e, err) < 0)
        return -1;
    r->defs[r->entries] = e->def;
    r->reps[r->entries++] = e->rep;
    if (!e->has_value)
        return 0;
    if (e->value.len)
        memcpy(r->bytes + r->used, e->value.ptr, e->value.len);
    r->values[r->num_values++] = (pq_bytes){ NULL, e->value.len };
    r->used += e->value.len;
    return 0;
}

int ix_row_record(ix_row *r, const ix_shape *shape, uint64_t row, ix_record *out)
{
    /* a null row: its first entry is defined below the output field (ix_record.c) */
    if (r->entries == 0 || !ix_row_is_record(shape, r->defs[0] < shape->null_def, row))
        return 0;
    /* the bytes may have moved since the values were added */
    static const uint8_t none[1];
    size_t at = 0;
    for (uint32_t k = 0; k < r->num_values; k++) {
        r->values[k].ptr = r->bytes ? r->bytes + at : none;
        at += r->values[k].len;
    }
    assert(shape->max_rep > 0 || r->entries == 1);
    *out = (ix_record){ pq_value_list_of(r->values), shape->nested ? r->defs : NULL,
                        shape->max_rep > 0 ? r->reps : NULL, r->entries, r->num_values, row };
    return 1;
}

void ix_row_clear(ix_row *r)
{
    r->entries = r->num_values = 0;
    r->used = 0;
}

void ix_row_free(ix_row *r)
{
    free(r->defs);
    free(r->values);
    free(r->bytes);
    ix_row_init(r, r->max);
}
