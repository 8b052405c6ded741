/* ix_others: the other columns of a record of several, decoded at mount. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ix_chunk_rows.h"
#include "ix_chunks_ahead.h"
#include "ix_parallel.h"
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

/* A field of several leaves at position k: its tree, from the first file. */
static int resolve_tree(ix_source *first, ix_column_set *set, uint32_t k, const char *key,
                        pq_error *err)
{
    pq_tree tree = { 0 };
    ix_column_tree *t = &set->trees[k];
    int rc = ix_field_nests(first, key, &t->leaves, &t->nests, &t->count, err);
    for (uint32_t j = 0; rc == 0 && j < t->count; j++)
        rc = pq_tree_add(&tree, &t->nests[j], err);
    if (rc == 0)
        rc = pq_tree_finish(&tree, err);
    const pq_leaf **leaves = calloc(t->count ? t->count : 1, sizeof *leaves);
    if (rc == 0 && !leaves)
        rc = pq_error_set(err, "out of memory");
    for (uint32_t j = 0; rc == 0 && j < t->count; j++)
        leaves[j] = &first->leaves[t->leaves[j]];
    if (rc == 0)
        rc = ix_tree_framing_init(&t->framing, &tree, leaves, err);
    free(leaves);
    pq_tree_free(&tree);
    return rc < 0 ? pq_error_prefix(err, "%s: ", first->name) : 0;
}

/* Resolve names[0..count) in first: leaves, fields (nests[k], owned by the
 * caller; of a field of several leaves, its first leaf's), and the
 * primary: the heaviest leaf of every column (of a field of several leaves:
 * own_leaf of it, its other leaves held). */
static int resolve_names(ix_source *first, char **names, ix_column_set *set, pq_nest *nests,
                         pq_error *err)
{
    int64_t most = -1;
    int primary = -1;
    for (uint32_t k = 0; k < set->columns; k++) {
        if (!names[k][0])
            return pq_error_set(err, "column=: an empty name between ':'");
        int several = ix_resolve_column(first, names[k], &nests[k], err);
        if (several < 0)
            return -1;
        set->leaf[k] = first->column;
        for (uint32_t j = 0; j < k; j++)
            if (strcmp(nests[j].key, nests[k].key) == 0)
                return pq_error_set(err, "column=: %s is named twice", nests[k].key);
        if (several && resolve_tree(first, set, k, nests[k].key, err) < 0)
            return -1;
        uint32_t leaves = several ? set->trees[k].count : 1;
        for (uint32_t j = 0; j < leaves; j++) {
            int leaf = several ? set->trees[k].leaves[j] : set->leaf[k];
            int64_t w = leaf_weight(first, leaf);
            if (w > most) {
                most = w;
                set->own = k;
                set->own_leaf = j;
                primary = leaf;
            }
        }
    }
    first->column = primary; /* ix_resolve_column set it to each name's leaf in turn */
    return 0;
}

static int keys_init(ix_others *o, const pq_nest *nests)
{
    o->key = calloc(o->columns, sizeof *o->key);
    o->key_len = calloc(o->columns, sizeof *o->key_len);
    if (!o->key || !o->key_len)
        return -1;
    for (uint32_t k = 0; k < o->columns; k++)
        if (ix_json_key(nests[k].key, strlen(nests[k].key), &o->key[k], &o->key_len[k]) < 0)
            return -1;
    return 0;
}

/* Append "columns=<field> <leaf> type def rep logical...\n" of leaf l. */
static char *key_line(char *key, const char *field, const pq_leaf *l)
{
    const pq_logical *t = &l->logical;
    char *longer;
    if (asprintf(&longer, "%scolumns=%s %s %d:%d def=%d rep=%d:%d logical=%d:%d:%d:%d:%d:%d:"
                 "%d\n", key, field, l->path, l->type, (int)l->type_length, l->max_def,
                 l->max_rep, l->rep_def, t->kind, (int)t->scale, (int)t->precision,
                 t->bit_width, t->is_signed, t->unit, t->utc) < 0)
        longer = NULL;
    free(key);
    return longer;
}

/* Every column's every leaf, for the persistent index's key. */
static char *columns_key(const ix_source *first, const ix_column_set *set, const pq_nest *nests)
{
    char *key = strdup("");
    for (uint32_t k = 0; key && k < set->columns; k++) {
        const ix_column_tree *t = &set->trees[k];
        if (!t->count)
            key = key_line(key, nests[k].key, &first->leaves[set->leaf[k]]);
        for (uint32_t j = 0; key && j < t->count; j++)
            key = key_line(key, nests[k].key, &first->leaves[t->leaves[j]]);
    }
    return key;
}

/* The primary's nesting when it is a leaf of a field of several leaves:
 * its own below the field. */
static int leaf_nest(const ix_column_set *set, int leaf, pq_nest *out, pq_error *err)
{
    for (uint32_t k = 0; k < set->columns; k++)
        for (uint32_t j = 0; j < set->trees[k].count; j++)
            if (set->trees[k].leaves[j] == leaf) {
                const pq_nest *n = &set->trees[k].nests[j];
                *out = *n;
                out->key = strdup(n->key);
                out->steps = malloc((size_t)n->num_steps * sizeof *out->steps);
                if (!out->key || !out->steps) {
                    free(out->key);
                    free(out->steps);
                    memset(out, 0, sizeof *out);
                    return pq_error_set(err, "out of memory");
                }
                for (int i = 0; i < n->num_steps; i++) {
                    out->steps[i] = n->steps[i];
                    if (n->steps[i].name && !(out->steps[i].name = strdup(n->steps[i].name))) {
                        out->num_steps = i;
                        pq_nest_free(out);
                        return pq_error_set(err, "out of memory");
                    }
                }
                return 0;
            }
    return pq_error_set(err, "the primary leaf is in no column");
}

int ix_columns_resolve(ix_source *first, const char *spec, const ix_frame_options *fo,
                       ix_column_set *set, pq_nest *own_nest, pq_error *err)
{
    memset(set, 0, sizeof *set);
    set->file.fd = -1; /* no values file until ix_columns_load */
    char *copy = NULL, **names = NULL;
    pq_nest *nests = NULL;
    int rc = -1;
    if (split_names(spec, &copy, &names, &set->columns) < 0 ||
        !(nests = calloc(set->columns, sizeof *nests)) ||
        !(set->leaf = calloc(set->columns, sizeof *set->leaf)) ||
        !(set->framing = calloc(set->columns, sizeof *set->framing)) ||
        !(set->trees = calloc(set->columns, sizeof *set->trees))) {
        pq_error_set(err, "out of memory");
        goto done;
    }
    if (fo->format != IX_FORMAT_JSONL) {
        pq_error_set(err, "column=%s: format=%s takes one column of one leaf (several "
                     "columns, and fields of several leaves, are JSON: format=jsonl)", spec,
                     ix_format_name(fo->format));
        goto done;
    }
    if (resolve_names(first, names, set, nests, err) < 0)
        goto done;
    set->values.columns = set->columns;
    set->values.own = set->own;
    if (keys_init(&set->values, nests) < 0 || !(set->key = columns_key(first, set, nests))) {
        pq_error_set(err, "out of memory");
        goto done;
    }
    const ix_frame_options alone = { .format = IX_FORMAT_JSONL };
    for (uint32_t k = 0; k < set->columns; k++) {
        if (k == set->own || set->trees[k].count)
            continue;
        if (ix_framing_init(&set->framing[k], &alone, &first->leaves[set->leaf[k]], &nests[k],
                            err) < 0) {
            pq_error_prefix(err, "%s: ", first->name);
            goto done;
        }
    }
    if (!set->trees[set->own].count) {
        *own_nest = nests[set->own];
        memset(&nests[set->own], 0, sizeof nests[set->own]);
    } else {
        if (leaf_nest(set, first->column, own_nest, err) < 0)
            goto done;
        set->values.own_tree = &set->trees[set->own].framing;
        set->values.own_leaf = set->own_leaf;
    }
    rc = 0;
done:
    for (uint32_t k = 0; nests && k < set->columns; k++)
        pq_nest_free(&nests[k]);
    free(nests);
    free(names);
    free(copy);
    return rc;
}

/* The values of one position, written row by row to the file. */
typedef struct column_fill {
    ix_others_out out;
    int own;             /* the primary's field: its other leaves' entries, no any bit */
    uint32_t own_leaf;
    uint64_t *any;
    uint64_t row;        /* next global row to fill */
} column_fill;

/* How one row's value is framed (a one-leaf record or a tree row). */
typedef struct value_src {
    const ix_framing *f;      /* one leaf: its record r */
    const ix_record *r;
    const ix_tree_framing *t; /* several: rows and values per leaf */
    const pq_tree_row *rows;
    const pq_value_list *values;
    int siblings;             /* the primary's field: every leaf's entries but own_leaf */
    uint32_t own_leaf;
} value_src;

static int frame_src(const value_src *v, ix_sink *s, pq_error *err)
{
    if (v->f)
        return ix_frame_json_value(v->f, v->r, s, err);
    if (v->siblings) {
        ix_tree_siblings_put(v->t, v->own_leaf, v->rows, v->values, s);
        return s->passed_end ? pq_error_set(err, "held entries pass their room") : 0;
    }
    return ix_frame_tree_value(v->t, v->rows, v->values, s, err);
}

/* The next row's value (v NULL: null). */
static int put_value(column_fill *c, const value_src *v, pq_error *err)
{
    ix_sink count = ix_sink_counter();
    if (!v)
        count.size = 4; /* null */
    else if (frame_src(v, &count, err) < 0)
        return -1;
    uint8_t *room = ix_others_out_room(&c->out, count.size, err);
    if (!room)
        return -1;
    if (v) {
        ix_sink sink = ix_sink_buffer(room, count.size);
        if (frame_src(v, &sink, err) < 0)
            return -1;
        assert(sink.size == count.size);
        if (!c->own)
            c->any[c->row >> 6] |= (uint64_t)1 << (c->row & 63);
    } else {
        memcpy(room, "null", 4);
    }
    c->row++;
    return ix_others_out_row(&c->out, count.size, err);
}

/* One leaf's rows of the row group, run by run. */
static int put_leaf_rows(column_fill *c, const ix_framing *f, ix_chunk_rows *cr,
                         uint64_t rows_want, pq_error *err)
{
    uint64_t end = c->row + rows_want;
    ix_record *recs = NULL;
    size_t cap = 0;
    pq_page_values run;
    int rc, got;
    while ((got = rc = ix_chunk_rows_next(cr, &run, err)) == 1) {
        if (run.num_levels > cap) {
            free(recs);
            cap = run.num_levels;
            if (!(recs = malloc(cap * sizeof *recs))) {
                rc = pq_error_set(err, "out of memory");
                break;
            }
        }
        uint32_t count = 0, rows = 0;
        if ((rc = ix_page_records(&f->shape, &run, c->row, recs, run.num_levels, &count, &rows,
                                  err)) < 0)
            break;
        if (rows > end - c->row) {
            rc = pq_error_set(err, "the pages hold more rows than the row group's %llu",
                              (unsigned long long)rows_want);
            break;
        }
        uint64_t run_end = c->row + rows;
        for (uint32_t k = 0; rc == 0 && c->row < run_end;) {
            value_src src = { .f = f, .r = k < count ? &recs[k] : NULL };
            rc = put_value(c, k < count && recs[k].row == c->row ? (k++, &src) : NULL, err);
        }
        if (rc < 0)
            break;
    }
    if (got == 0 && c->row != end)
        rc = pq_error_set(err, "the pages hold %llu rows, the row group %llu",
                          (unsigned long long)(rows_want - (end - c->row)),
                          (unsigned long long)rows_want);
    free(recs);
    return rc < 0 ? -1 : 0;
}

/* One leaf of a field of several, handed out row by row. */
typedef struct leaf_cursor {
    ix_chunk_rows rows;
    pq_page_values run; /* the current run of whole rows */
    uint32_t at, value; /* its next entry, and the value that entry's row starts at */
} leaf_cursor;

/* The next row's entries of leaf j: 1, or 0 when the leaf has no more. */
static int leaf_next_row(leaf_cursor *lc, int16_t max_def, pq_tree_row *row,
                         pq_value_list *values, pq_error *err)
{
    const pq_page_values *v = &lc->run;
    if (lc->at >= v->num_levels) {
        int got = ix_chunk_rows_next(&lc->rows, &lc->run, err);
        if (got <= 0)
            return got;
        lc->at = lc->value = 0;
    }
    uint32_t b = lc->at, e = b + 1, vals = 0;
    while (e < v->num_levels && v->rep_levels && v->rep_levels[e] != 0)
        e++;
    for (uint32_t i = b; i < e; i++)
        vals += !v->def_levels || v->def_levels[i] == max_def;
    if (lc->value + vals > v->num_values)
        return pq_error_set(err, "its levels define more values than it holds");
    *row = (pq_tree_row){ v->def_levels ? v->def_levels + b : NULL,
                          v->rep_levels ? v->rep_levels + b : NULL, e - b, vals };
    pq_value_list all = pq_page_value_list(v);
    *values = pq_value_list_from(&all, lc->value);
    lc->at = e;
    lc->value += vals;
    return 1;
}

/* Rows of a field of several leaves: lc[j] reads leaf j (all but the
 * primary's own leaf, when the field is the primary's). */
static int put_tree_rows(column_fill *c, const ix_tree_framing *tf, leaf_cursor *lc,
                         uint64_t rows_want, pq_error *err)
{
    uint32_t n = tf->tree.num_leaves;
    pq_tree_row *rows = calloc(n, sizeof *rows);
    pq_value_list *values = calloc(n, sizeof *values);
    int rc = rows && values ? 0 : pq_error_set(err, "out of memory");
    for (uint64_t r = 0; rc == 0 && r < rows_want; r++) {
        for (uint32_t j = 0; rc == 0 && j < n; j++) {
            if (c->own && j == c->own_leaf)
                continue; /* paged: its entries come with each record */
            int got = leaf_next_row(&lc[j], tf->tree.max_def[j], &rows[j], &values[j], err);
            if (got == 0)
                rc = pq_error_set(err, "leaf %u holds fewer rows than the row group's %llu", j,
                                  (unsigned long long)rows_want);
            else if (got < 0)
                rc = pq_error_prefix(err, "leaf %u: ", j);
        }
        if (rc)
            break;
        value_src src = { .t = tf, .rows = rows, .values = values, .siblings = c->own,
                          .own_leaf = c->own_leaf };
        int null = !c->own && pq_tree_row_is_null(&tf->tree, rows);
        rc = put_value(c, null ? NULL : &src, err);
    }
    for (uint32_t j = 0; rc == 0 && j < n; j++) {
        pq_tree_row row;
        pq_value_list vals;
        int got = c->own && j == c->own_leaf ? 0
                                             : leaf_next_row(&lc[j], tf->tree.max_def[j], &row,
                                                             &vals, err);
        if (got > 0)
            rc = pq_error_set(err, "leaf %u holds more rows than the row group's %llu", j,
                              (unsigned long long)rows_want);
        else if (got < 0)
            rc = pq_error_prefix(err, "leaf %u: ", j);
    }
    free(rows);
    free(values);
    return rc;
}

/* Position k's values in row group g of s. refs: the row group's chunks of
 * the position's leaves (its own leaf left out), read ahead or not, in
 * leaf order; each one's bytes are handed to its reader. */
static int load_group(ix_column_set *set, uint32_t k, column_fill *fill, const ix_source *s,
                      int32_t g, ix_chunk_ref *refs, const ix_load_limits *lim, pq_error *err)
{
    const ix_column_tree *t = &set->trees[k];
    uint32_t n = t->count ? t->count : 1;
    leaf_cursor *lc = calloc(n, sizeof *lc);
    if (!lc)
        return pq_error_set(err, "out of memory");
    uint64_t rows = (uint64_t)s->meta.row_groups[g].num_rows;
    int rc = 0;
    for (uint32_t j = 0; rc == 0 && j < n; j++)
        if (!(fill->own && j == fill->own_leaf)) {
            assert(refs->s == s && refs->g == g);
            rc = ix_chunk_rows_open(&lc[j].rows, s, refs->leaf, g, lim->mem, lim->verify_crc,
                                    &set->bytes_read, refs->bytes, err);
            refs++->bytes = NULL; /* the reader's now */
        }
    if (rc == 0 && rows > 0)
        rc = t->count ? put_tree_rows(fill, &t->framing, lc, rows, err)
                      : put_leaf_rows(fill, &set->framing[k], &lc[0].rows, rows, err);
    for (uint32_t j = 0; j < n; j++)
        ix_chunk_rows_close(&lc[j].rows);
    free(lc);
    return rc;
}

/* The leaves of position k in s (as many as in the first file). */
static int find_leaves(const ix_column_set *set, uint32_t k, const ix_source *first,
                       const ix_source *s, int *leaves, pq_error *err)
{
    const ix_column_tree *t = &set->trees[k];
    if (!t->count)
        return ix_find_column(s, &first->leaves[set->leaf[k]], &set->framing[k].nest,
                              &leaves[0], err);
    for (uint32_t j = 0; j < t->count; j++)
        if (ix_find_column(s, &first->leaves[t->leaves[j]], &t->nests[j], &leaves[j], err) < 0)
            return -1;
    return 0;
}

/* The chunks of position k that a batch of files reads, in file, row group
 * and leaf order (ix_chunks_ahead.h). */
typedef struct batch {
    ix_chunk_ref *refs;
    size_t num, cap;
    uint64_t bytes;      /* compressed bytes of them all */
} batch;

/* Most files a batch lists, whatever their bytes. */
#define BATCH_FILES 4096u

static int batch_add(batch *b, const ix_source *s, int leaf, int32_t g, pq_error *err)
{
    if (b->num == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        ix_chunk_ref *grown = realloc(b->refs, cap * sizeof *grown);
        if (!grown)
            return pq_error_set(err, "out of memory");
        b->refs = grown;
        b->cap = cap;
    }
    b->refs[b->num++] = (ix_chunk_ref){ s, leaf, g, NULL };
    int64_t size = s->meta.row_groups[g].columns[leaf].total_compressed_size;
    b->bytes += size > 0 ? (uint64_t)size : 0;
    return 0;
}

/* List the chunks of position k of files [from, *to): from the file `from`
 * on, while the batch's bytes stay within budget (one file at least). */
static int batch_list(batch *b, const ix_column_set *set, uint32_t k, const ix_sources *ss,
                      size_t from, size_t *to, uint64_t budget, int *leaves, pq_error *err)
{
    const ix_column_tree *t = &set->trees[k];
    uint32_t n = t->count ? t->count : 1;
    int own = k == set->own;
    b->num = 0;
    b->bytes = 0;
    size_t f = from;
    for (; f < ss->count && f - from < BATCH_FILES && (f == from || b->bytes <= budget); f++) {
        const ix_source *s = &ss->files[f];
        if (find_leaves(set, k, &ss->files[0], s, leaves, err) < 0)
            return pq_error_prefix(err, "%s: ", s->name);
        for (int32_t g = 0; g < s->meta.num_row_groups; g++)
            for (uint32_t j = 0; j < n; j++)
                if (!(own && j == set->own_leaf) && batch_add(b, s, leaves[j], g, err) < 0)
                    return -1;
    }
    *to = f;
    return 0;
}

/* What a load reads ahead at once: half of what mem= lets one page hold. */
static uint64_t ahead_budget(const ix_load_limits *lim)
{
    return (lim->mem ? ix_hold_max(lim->mem) : IX_HOLD_SLACK_BYTES * IX_HOLD_PARTS) / 2;
}

static int load_column(ix_column_set *set, uint32_t k, ix_sources *ss,
                       const ix_load_limits *lim, pq_error *err)
{
    ix_others *o = &set->values;
    column_fill fill = { .own = k == set->own, .own_leaf = set->own_leaf, .any = o->any };
    uint32_t n = set->trees[k].count ? set->trees[k].count : 1;
    int *leaves = calloc(n, sizeof *leaves);
    if (!leaves)
        return pq_error_set(err, "out of memory for the values of several columns");
    batch b = { 0 };
    uint64_t budget = ahead_budget(lim);
    int rc = ix_others_out_begin(&fill.out, &set->file, k, err);
    const char *field = (const char *)o->key[k];
    for (size_t from = 0, to = 0; rc == 0 && from < ss->count; from = to) {
        rc = batch_list(&b, set, k, ss, from, &to, budget, leaves, err);
        if (rc == 0)
            rc = ix_chunks_read_ahead(b.refs, b.num, budget, lim->threads, lim->io_depth,
                                      &set->bytes_read, err);
        ix_chunk_ref *refs = b.refs;
        for (size_t i = from; rc == 0 && i < to; i++) {
            const ix_source *s = &ss->files[i];
            for (int32_t g = 0; rc == 0 && g < s->meta.num_row_groups; g++) {
                if (load_group(set, k, &fill, s, g, refs, lim, err) < 0)
                    rc = pq_error_prefix(err, "%s: row group %d, field %.*s: ", s->name, g,
                                         (int)o->key_len[k] - 1, field);
                refs += n - (fill.own ? 1 : 0);
            }
        }
        ix_chunks_free(b.refs, b.num);
    }
    free(b.refs);
    free(leaves);
    if (rc == 0)
        return ix_others_out_end(&fill.out, err);
    ix_others_out_drop(&fill.out);
    return -1;
}

typedef struct footers {
    ix_sources *ss;
    ix_gate *gate;
} footers;

static int read_footer(void *ctx, size_t index, pq_error *err)
{
    footers *fs = ctx;
    ix_source *s = &fs->ss->files[index];
    return s->has_footer ? 0 : ix_source_read_footer(s, fs->gate, err);
}

/* Decode every file's other columns into a new file (ix_others_file.h). */
static int build_file(ix_column_set *set, ix_sources *ss, const char *path, uint64_t digest,
                      const uint8_t *has, const ix_load_limits *lim, pq_error *err)
{
    ix_others *o = &set->values;
    /* the files from the persistent index: their primary's pages are
     * known, the other columns are read from their footers' chunks */
    footers fs = { ss, lim->gate };
    if (ix_parallel_for_growing(ss->count, lim->threads, lim->io_depth, read_footer, &fs, NULL,
                                err) < 0)
        return -1;
    if (ix_others_file_create(&set->file, path, digest, has, set->columns, o->rows,
                              lim->verify_crc, err) < 0)
        return -1;
    for (uint32_t k = 0; k < set->columns; k++)
        if (has[k] && load_column(set, k, ss, lim, err) < 0)
            return -1;
    return ix_others_file_seal(&set->file, o->any, err);
}

int ix_columns_load(ix_column_set *set, ix_sources *ss, const char *path, uint64_t digest,
                    const ix_load_limits *lim, pq_error *err)
{
    ix_others *o = &set->values;
    o->rows = 0;
    for (size_t i = 0; i < ss->count; i++)
        o->rows += ix_source_rows(&ss->files[i]);
    uint8_t *has = calloc(set->columns, 1);
    if (!has || !(o->any = calloc(o->rows / 64 + 1, sizeof *o->any))) {
        free(has);
        return pq_error_set(err, "out of memory for the values of several columns");
    }
    for (uint32_t k = 0; k < set->columns; k++)
        has[k] = k != set->own || set->trees[k].count;
    pq_error why;
    set->note[0] = '\0';
    set->reused = path && ix_others_file_open(&set->file, path, digest, has, set->columns,
                                              o->rows, lim->verify_crc, o->any, &why) == 0;
    if (path && !set->reused && access(path, F_OK) == 0)
        memcpy(set->note, why.msg, sizeof set->note); /* why it was rebuilt */
    int rc = 0;
    if (!set->reused) {
        memset(o->any, 0, (o->rows / 64 + 1) * sizeof *o->any);
        rc = build_file(set, ss, path, digest, has, lim, err);
    }
    free(has);
    o->file = &set->file;
    return rc;
}

uint64_t ix_columns_bytes(const ix_column_set *set)
{
    return (set->values.rows / 64 + 1) * sizeof *set->values.any;
}

void ix_columns_free(ix_column_set *set)
{
    ix_others *o = &set->values;
    for (uint32_t k = 0; k < set->columns; k++) {
        if (o->key)
            free(o->key[k]);
        if (set->framing && k != set->own)
            ix_framing_free(&set->framing[k]);
        if (set->trees) {
            ix_column_tree *t = &set->trees[k];
            ix_tree_framing_free(&t->framing);
            for (uint32_t j = 0; t->nests && j < t->count; j++)
                pq_nest_free(&t->nests[j]);
            free(t->nests);
            free(t->leaves);
        }
    }
    free(o->key);
    free(o->key_len);
    free(o->any);
    ix_others_file_close(&set->file);
    free(set->leaf);
    free(set->framing);
    free(set->trees);
    free(set->key);
    memset(set, 0, sizeof *set);
}
