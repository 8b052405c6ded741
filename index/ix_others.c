/* ix_others: the other columns of a record of several, decoded at mount. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ix_others.h"

int ix_columns_several(const ix_source *first, const char *spec)
{
    if (!spec || !strchr(spec, ':'))
        return 0;
    for (int i = 0; i < first->num_leaves; i++) {
        const char *path = first->leaves[i].path;
        size_t n = strlen(spec);
        if (strncmp(path, spec, n) == 0 && (path[n] == '\0' || path[n] == '.'))
            return 0;
    }
    return 1;
}

/* How large leaf `leaf`'s values are likely to be beside the others': a
 * string, binary or list leaf before any fixed-width one (a text of few
 * distinct values is small in the file, not once framed), then by the
 * uncompressed bytes of its chunks in the file. */
static int64_t leaf_weight(const ix_source *s, int leaf)
{
    const pq_leaf *l = &s->leaves[leaf];
    int64_t bytes = 0; /* halved sizes, saturated: the footer's figures are untrusted */
    for (int32_t g = 0; g < s->meta.num_row_groups; g++) {
        int64_t chunk = s->meta.row_groups[g].columns[leaf].total_uncompressed_size;
        if (chunk > 0)
            bytes = bytes > INT64_MAX / 2 - chunk / 2 ? INT64_MAX / 2 : bytes + chunk / 2;
    }
    int wide = l->type == PQ_BYTE_ARRAY || l->max_rep > 0;
    return bytes + (wide ? INT64_MAX / 2 : 0);
}

/* Names of spec, split at ':' into a malloc'ed copy (*copy) and
 * names[0..count). */
static int split_names(const char *spec, char **copy, char ***names, uint32_t *count)
{
    uint32_t n = 1;
    for (const char *p = spec; *p; p++)
        n += *p == ':';
    *copy = strdup(spec);
    *names = calloc(n, sizeof **names);
    if (!*copy || !*names)
        return -1;
    char *at = *copy;
    for (uint32_t k = 0; k < n; k++) {
        (*names)[k] = at;
        char *colon = strchr(at, ':');
        if (colon) {
            *colon = '\0';
            at = colon + 1;
        }
    }
    *count = n;
    return 0;
}

/* Resolve names[0..count) in first: leaves, fields (nests[k], owned by the
 * caller), and the primary. */
static int resolve_names(ix_source *first, char **names, ix_column_set *set, pq_nest *nests,
                         pq_error *err)
{
    int64_t most = -1;
    for (uint32_t k = 0; k < set->columns; k++) {
        if (!names[k][0])
            return pq_error_set(err, "column=: an empty name between ':'");
        if (ix_resolve_column(first, names[k], &nests[k], err) < 0)
            return -1;
        set->leaf[k] = first->column;
        for (uint32_t j = 0; j < k; j++)
            if (strcmp(nests[j].key, nests[k].key) == 0)
                return pq_error_set(err, "column=: %s is named twice", nests[k].key);
        int64_t bytes = leaf_weight(first, set->leaf[k]);
        if (bytes > most) {
            most = bytes;
            set->own = k;
        }
    }
    first->column = set->leaf[set->own];
    return 0;
}

static int keys_init(ix_others *o, const pq_nest *nests)
{
    o->key = calloc(o->columns, sizeof *o->key);
    o->key_len = calloc(o->columns, sizeof *o->key_len);
    o->bytes = calloc(o->columns, sizeof *o->bytes);
    o->ends = calloc(o->columns, sizeof *o->ends);
    if (!o->key || !o->key_len || !o->bytes || !o->ends)
        return -1;
    for (uint32_t k = 0; k < o->columns; k++)
        if (ix_json_key(nests[k].key, strlen(nests[k].key), &o->key[k], &o->key_len[k]) < 0)
            return -1;
    return 0;
}

/* "columns=<field> <leaf> type def rep logical...\n" for every position. */
static char *columns_key(const ix_source *first, const ix_column_set *set, const pq_nest *nests)
{
    char *key = strdup("");
    for (uint32_t k = 0; key && k < set->columns; k++) {
        const pq_leaf *l = &first->leaves[set->leaf[k]];
        const pq_logical *t = &l->logical;
        char *longer;
        if (asprintf(&longer, "%scolumns=%s %s %d:%d def=%d rep=%d:%d logical=%d:%d:%d:%d:%d:"
                     "%d:%d\n", key, nests[k].key, l->path, l->type, (int)l->type_length,
                     l->max_def, l->max_rep, l->rep_def, t->kind, (int)t->scale,
                     (int)t->precision, t->bit_width, t->is_signed, t->unit, t->utc) < 0)
            longer = NULL;
        free(key);
        key = longer;
    }
    return key;
}

int ix_columns_resolve(ix_source *first, const char *spec, const ix_frame_options *fo,
                       ix_column_set *set, pq_nest *own_nest, pq_error *err)
{
    memset(set, 0, sizeof *set);
    char *copy = NULL, **names = NULL;
    pq_nest *nests = NULL;
    int rc = -1;
    if (split_names(spec, &copy, &names, &set->columns) < 0 ||
        !(nests = calloc(set->columns, sizeof *nests)) ||
        !(set->leaf = calloc(set->columns, sizeof *set->leaf)) ||
        !(set->framing = calloc(set->columns, sizeof *set->framing))) {
        pq_error_set(err, "out of memory");
        goto done;
    }
    if (fo->format != IX_FORMAT_JSONL) {
        pq_error_set(err, "column=%s names %u columns; format=%s takes one (several columns "
                     "are one JSON object per row: format=jsonl)", spec, set->columns,
                     ix_format_name(fo->format));
        goto done;
    }
    if (resolve_names(first, names, set, nests, err) < 0)
        goto done;
    set->values.columns = set->columns;
    set->values.own = set->own;
    if (keys_init(&set->values, nests) < 0) {
        pq_error_set(err, "out of memory");
        goto done;
    }
    const ix_frame_options alone = { .format = IX_FORMAT_JSONL };
    for (uint32_t k = 0; k < set->columns; k++) {
        if (k == set->own)
            continue;
        if (ix_framing_init(&set->framing[k], &alone, &first->leaves[set->leaf[k]], &nests[k],
                            err) < 0) {
            pq_error_prefix(err, "%s: ", first->name);
            goto done;
        }
    }
    if (!(set->key = columns_key(first, set, nests))) {
        pq_error_set(err, "out of memory");
        goto done;
    }
    *own_nest = nests[set->own];
    memset(&nests[set->own], 0, sizeof nests[set->own]);
    rc = 0;
done:
    for (uint32_t k = 0; nests && k < set->columns; k++)
        pq_nest_free(&nests[k]);
    free(nests);
    free(names);
    free(copy);
    return rc;
}

/* The values of one other column, filled row by row. */
typedef struct column_fill {
    const ix_framing *f;
    uint64_t *held, max; /* the set's bytes held so far, and its limit (0: none) */
    uint8_t *bytes;
    uint64_t used, cap;
    uint64_t *ends;  /* one per row of the dataset */
    uint64_t *any;
    uint64_t row;    /* next global row to fill */
} column_fill;

static int put_value(column_fill *c, const ix_record *r, pq_error *err)
{
    ix_sink count = ix_sink_counter();
    if (!r)
        count.size = 4; /* null */
    else if (ix_frame_json_value(c->f, r, &count, err) < 0)
        return -1;
    *c->held += count.size + sizeof *c->ends;
    if (c->max && *c->held > c->max)
        return pq_error_set(err, "the values of the columns beside the primary take more than "
                            "mem=%llu bytes held in memory (%llu bytes at row %llu); give "
                            "a larger mem= or fewer columns", (unsigned long long)c->max,
                            (unsigned long long)*c->held, (unsigned long long)c->row);
    if (c->used + count.size > c->cap) {
        uint64_t cap = c->cap ? c->cap : 4096;
        while (cap < c->used + count.size)
            cap *= 2;
        uint8_t *grown = realloc(c->bytes, cap);
        if (!grown)
            return pq_error_set(err, "out of memory for the values of several columns");
        c->bytes = grown;
        c->cap = cap;
    }
    if (r) {
        ix_sink sink = ix_sink_buffer(c->bytes + c->used, count.size);
        if (ix_frame_json_value(c->f, r, &sink, err) < 0)
            return -1;
        assert(sink.size == count.size);
        c->any[c->row >> 6] |= (uint64_t)1 << (c->row & 63);
    } else {
        memcpy(c->bytes + c->used, "null", 4);
    }
    c->used += count.size;
    c->ends[c->row++] = c->used;
    return 0;
}

/* The rows of v (whole rows), whose first is global row c->row. */
static int put_rows(column_fill *c, const pq_page_values *v, uint64_t rows_left, pq_error *err)
{
    ix_record *recs = malloc((v->num_levels ? v->num_levels : 1) * sizeof *recs);
    if (!recs)
        return pq_error_set(err, "out of memory");
    uint32_t count, rows;
    int rc = ix_page_records(&c->f->shape, v, c->row, recs, v->num_levels, &count, &rows, err);
    if (rc == 0 && rows > rows_left)
        rc = pq_error_set(err, "the pages hold more rows than the row group");
    uint64_t end = c->row + rows;
    for (uint32_t k = 0; rc == 0 && c->row < end;)
        rc = put_value(c, k < count && recs[k].row == c->row ? &recs[k++] : NULL, err);
    free(recs);
    return rc;
}

/* A column chunk's bytes, read whole. */
static int read_chunk(const ix_source *s, const pq_column_meta *m, uint8_t **buf,
                      size_t *len, pq_error *err)
{
    int64_t start = m->data_page_offset;
    if (m->dictionary_page_offset > 0 && m->dictionary_page_offset < start)
        start = m->dictionary_page_offset;
    if (start < 4 || m->total_compressed_size <= 0 ||
        (uint64_t)m->total_compressed_size > (uint64_t)s->st.st_size ||
        (uint64_t)start > (uint64_t)s->st.st_size - (uint64_t)m->total_compressed_size)
        return pq_error_set(err, "the column chunk's bytes (offset %lld, %lld bytes) lie "
                            "outside the file", (long long)start,
                            (long long)m->total_compressed_size);
    *len = (size_t)m->total_compressed_size;
    *buf = malloc(*len);
    if (!*buf)
        return pq_error_set(err, "out of memory for a column chunk of %zu bytes", *len);
    return ix_store_read(s->store, s->fd, s->name, *buf, *len, (uint64_t)start, err);
}

/* Rows whose last entries may follow on the next page wait in `carry`. */
typedef struct chunk_walk {
    column_fill *fill;
    const pq_column_desc *desc;
    pq_page_values carry;
    uint64_t rows_left;
} chunk_walk;

static int put_whole(chunk_walk *w, const pq_page_values *v, pq_error *err)
{
    uint64_t before = w->fill->row;
    if (put_rows(w->fill, v, w->rows_left, err) < 0)
        return -1;
    w->rows_left -= w->fill->row - before;
    return 0;
}

/* One decoded data page: complete the carried row, put the rows it
 * completes, carry its last row (a repeated column's may go on). */
static int take_page(chunk_walk *w, const pq_page_values *v, pq_error *err)
{
    int16_t max_def = w->desc->max_def;
    if (w->desc->max_rep == 0)
        return put_whole(w, v, err);
    uint32_t first = ix_row_start(v, 0);
    if (first > 0 && !w->carry.num_levels)
        return pq_error_set(err, "a page starts in the middle of a row that no page began");
    if (w->carry.num_levels &&
        pq_page_values_append(&w->carry, v, 0, first, max_def, err) < 0)
        return -1;
    if (first == v->num_levels)
        return 0; /* the carried row goes on */
    if (w->carry.num_levels) {
        if (put_whole(w, &w->carry, err) < 0)
            return -1;
        pq_page_values_free(&w->carry);
        memset(&w->carry, 0, sizeof w->carry);
    }
    uint32_t last = ix_last_row_start(v);
    pq_page_values rows = ix_entries_view(v, max_def, first, last);
    if (put_whole(w, &rows, err) < 0)
        return -1;
    return pq_page_values_append(&w->carry, v, last, v->num_levels, max_def, err);
}

static int walk_chunk(chunk_walk *w, const uint8_t *buf, size_t len,
                      const ix_chunk_bounds *bounds, pq_error *err)
{
    pq_dictionary dict = { 0 };
    int has_dict = 0, rc = 0;
    for (size_t off = 0; rc == 0 && off < len && w->rows_left > 0;) {
        pq_page_header h;
        if (pq_page_header_parse(buf + off, len - off, &h, err) < 0 ||
            ix_page_claims_check(&h, bounds, err) < 0) {
            rc = pq_error_prefix(err, "page at chunk byte %zu: ", off);
            break;
        }
        size_t body = off + h.header_len;
        if ((uint64_t)h.compressed_size > len - body) {
            rc = pq_error_set(err, "page at chunk byte %zu: its %d bytes pass the chunk's end",
                              off, h.compressed_size);
            break;
        }
        if (h.type == PQ_PAGE_DICTIONARY) {
            if (has_dict)
                pq_dictionary_free(&dict);
            rc = pq_dictionary_decode(w->desc, &h, buf + body, (size_t)h.compressed_size,
                                      &dict, err);
            has_dict = rc == 0;
        } else if (h.type == PQ_PAGE_DATA || h.type == PQ_PAGE_DATA_V2) {
            pq_page_values v;
            rc = pq_page_decode(w->desc, &h, buf + body, (size_t)h.compressed_size,
                                has_dict ? &dict : NULL, &v, err);
            if (rc == 0) {
                rc = take_page(w, &v, err);
                pq_page_values_free(&v);
            }
        }
        off = body + (size_t)h.compressed_size;
    }
    if (rc == 0 && w->carry.num_levels)
        rc = put_whole(w, &w->carry, err);
    if (rc == 0 && w->rows_left)
        rc = pq_error_set(err, "the pages hold %llu rows fewer than the row group",
                          (unsigned long long)w->rows_left);
    if (has_dict)
        pq_dictionary_free(&dict);
    pq_page_values_free(&w->carry);
    return rc;
}

/* The column at position k in file s, row group g. */
static int load_chunk(column_fill *fill, const ix_source *s, int leaf, int32_t g,
                      uint64_t *bytes_read, pq_error *err)
{
    const pq_leaf *l = &s->leaves[leaf];
    const pq_row_group *rg = &s->meta.row_groups[g];
    const pq_column_meta *m = &rg->columns[leaf];
    if (m->encrypted)
        return pq_error_set(err, "column %s is encrypted; youmufs cannot read encrypted "
                            "Parquet", l->path);
    if (m->type != l->type)
        return pq_error_set(err, "column chunk type %d differs from the schema's %d", m->type,
                            l->type);
    if (rg->num_rows < 0)
        return pq_error_set(err, "a negative row count");
    pq_column_desc desc = { l->type, l->type_length, l->max_def, l->max_rep, m->codec };
    ix_chunk_bounds bounds = { m->total_uncompressed_size, m->num_values };
    chunk_walk w = { fill, &desc, { 0 }, (uint64_t)rg->num_rows };
    uint8_t *buf = NULL;
    size_t len = 0;
    if (fill->max && m->total_compressed_size > 0 &&
        (uint64_t)m->total_compressed_size > fill->max)
        return pq_error_set(err, "a column chunk of %lld bytes beside the primary is more "
                            "than mem=%llu bytes", (long long)m->total_compressed_size,
                            (unsigned long long)fill->max);
    int rc = rg->num_rows == 0 ? 0 : read_chunk(s, m, &buf, &len, err);
    *bytes_read += len;
    if (rc == 0 && rg->num_rows > 0)
        rc = walk_chunk(&w, buf, len, &bounds, err);
    free(buf);
    return rc;
}

static int load_column(ix_column_set *set, uint32_t k, ix_sources *ss, uint64_t max,
                       pq_error *err)
{
    ix_others *o = &set->values;
    column_fill fill = { .f = &set->framing[k], .held = &set->held, .max = max, .any = o->any };
    if (!(fill.ends = malloc((o->rows ? o->rows : 1) * sizeof *fill.ends)))
        return pq_error_set(err, "out of memory for the values of several columns");
    const pq_leaf *column = &ss->files[0].leaves[set->leaf[k]];
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < ss->count; i++) {
        const ix_source *s = &ss->files[i];
        int leaf;
        rc = ix_find_column(s, column, &fill.f->nest, &leaf, err);
        for (int32_t g = 0; rc == 0 && g < s->meta.num_row_groups; g++)
            if (load_chunk(&fill, s, leaf, g, &set->bytes_read, err) < 0)
                rc = pq_error_prefix(err, "%s: row group %d, column %s: ", s->name, g,
                                     column->path);
    }
    /* the values' bytes, grown by doubling, are trimmed to what they hold */
    uint8_t *trimmed = fill.used ? realloc(fill.bytes, fill.used) : NULL;
    o->bytes[k] = trimmed ? trimmed : fill.bytes;
    o->ends[k] = fill.ends;
    assert(rc < 0 || fill.row == o->rows);
    return rc;
}

int ix_columns_load(ix_column_set *set, ix_sources *ss, uint64_t max, pq_error *err)
{
    ix_others *o = &set->values;
    o->rows = 0;
    for (size_t i = 0; i < ss->count; i++) {
        ix_source *s = &ss->files[i];
        /* a file from the persistent index: its primary's pages are known,
         * the other columns are read from its footer's chunks */
        if (!s->has_footer && ix_source_read_footer(s, NULL, err) < 0)
            return -1;
        o->rows += ix_source_rows(s);
    }
    if (!(o->any = calloc(o->rows / 64 + 1, sizeof *o->any)))
        return pq_error_set(err, "out of memory for the values of several columns");
    for (uint32_t k = 0; k < set->columns; k++)
        if (k != set->own && load_column(set, k, ss, max, err) < 0)
            return -1;
    return 0;
}

uint64_t ix_columns_bytes(const ix_column_set *set)
{
    const ix_others *o = &set->values;
    uint64_t bytes = (o->rows / 64 + 1) * sizeof *o->any;
    for (uint32_t k = 0; k < set->columns; k++) {
        if (k == set->own || !o->ends || !o->ends[k])
            continue;
        bytes += o->rows * sizeof *o->ends[k];
        if (o->rows)
            bytes += o->ends[k][o->rows - 1];
    }
    return bytes;
}

void ix_columns_free(ix_column_set *set)
{
    ix_others *o = &set->values;
    for (uint32_t k = 0; k < set->columns; k++) {
        if (o->key)
            free(o->key[k]);
        if (o->bytes)
            free(o->bytes[k]);
        if (o->ends)
            free(o->ends[k]);
        if (set->framing && k != set->own)
            ix_framing_free(&set->framing[k]);
    }
    free(o->key);
    free(o->key_len);
    free(o->bytes);
    free(o->ends);
    free(o->any);
    free(set->leaf);
    free(set->framing);
    free(set->key);
    memset(set, 0, sizeof *set);
}
