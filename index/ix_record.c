#include <assert.h>

#include "ix_record.h"

static int too_many(uint32_t cap, pq_error *err)
{
    return pq_error_set(err, "page has more records than the %u its index entry says (file "
                        "changed?)", cap);
}

static int flat_records(const ix_shape *shape, const pq_page_values *v, uint64_t first_row,
                        ix_record *out, uint32_t cap, uint32_t *count, pq_error *err)
{
    uint32_t k = 0, value = 0;
    pq_value_list values = pq_page_value_list(v);
    for (uint32_t i = 0; i < v->num_levels; i++) {
        const uint16_t *def = v->def_levels ? &v->def_levels[i] : NULL;
        int has_value = !def || *def == shape->max_def;
        if (has_value && value == v->num_values)
            break; /* more defined entries than values: the decoder refuses those */
        ix_record rec;
        if (ix_flat_record(shape, pq_value_list_from(&values, value), def, first_row + i,
                           &rec)) {
            if (k == cap)
                return too_many(cap, err);
            out[k++] = rec;
        }
        value += (uint32_t)has_value;
    }
    *count = k;
    return 0;
}

static int list_records(const ix_shape *shape, const pq_page_values *v, uint64_t first_row,
                        ix_record *out, uint32_t cap, uint32_t *count, uint32_t *rows,
                        pq_error *err)
{
    const uint16_t *rep = v->rep_levels, *def = v->def_levels;
    if (v->num_levels > 0 && rep[0] != 0)
        return pq_error_set(err, "values start in the middle of a row (repetition level %u)",
                            rep[0]);
    uint32_t k = 0, row = 0, value = 0;
    pq_value_list values = pq_page_value_list(v);
    for (uint32_t i = 0; i < v->num_levels; row++) {
        uint32_t start = i, first_value = value;
        do {
            value += !def || def[i] == shape->max_def;
            i++;
        } while (i < v->num_levels && rep[i] != 0);
        /* a null row: one entry defined below the output field */
        if (!ix_row_is_record(shape, def && def[start] < shape->null_def, first_row + row))
            continue;
        if (k == cap)
            return too_many(cap, err);
        out[k++] = (ix_record){ pq_value_list_from(&values, first_value), def ? def + start : NULL, rep + start,
                                i - start, value - first_value, first_row + row };
    }
    if (value != v->num_values)
        return pq_error_set(err, "levels define %u values, the page holds %u", value,
                            v->num_values);
    *count = k;
    *rows = row;
    return 0;
}

int ix_page_records(const ix_shape *shape, const pq_page_values *v, uint64_t first_row,
                    ix_record *out, uint32_t cap, uint32_t *count, uint32_t *rows,
                    pq_error *err)
{
    if (shape->max_rep == 0) {
        *rows = v->num_levels;
        return flat_records(shape, v, first_row, out, cap, count, err);
    }
    return list_records(shape, v, first_row, out, cap, count, rows, err);
}

uint32_t ix_row_start(const pq_page_values *v, uint32_t from)
{
    if (!v->rep_levels)
        return from < v->num_levels ? from : v->num_levels;
    uint32_t i = from;
    while (i < v->num_levels && v->rep_levels[i] != 0)
        i++;
    return i;
}

uint32_t ix_last_row_start(const pq_page_values *v)
{
    if (!v->rep_levels)
        return v->num_levels ? v->num_levels - 1 : 0;
    for (uint32_t i = v->num_levels; i-- > 0;)
        if (v->rep_levels[i] == 0)
            return i;
    return v->num_levels;
}

pq_page_values ix_entries_view(const pq_page_values *v, int16_t max_def, uint32_t begin,
                               uint32_t end)
{
    assert(begin <= end && end <= v->num_levels);
    uint32_t first_value = 0, values = 0;
    for (uint32_t i = 0; i < end; i++) {
        int defined = !v->def_levels || v->def_levels[i] == max_def;
        first_value += i < begin && defined;
        values += i >= begin && defined;
    }
    return (pq_page_values){
        .num_levels = end - begin,
        .num_values = values,
        .def_levels = v->def_levels ? v->def_levels + begin : NULL,
        .rep_levels = v->rep_levels ? v->rep_levels + begin : NULL,
        .values = v->width ? NULL : v->values + first_value,
        .packed = v->width ? v->packed + (size_t)first_value * v->width : NULL,
        .width = v->width,
    };
}
