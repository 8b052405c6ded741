/* ix_chunk_whole: one leaf's column chunk decoded whole (ix_others.c's source). */
#include <stdlib.h>
#include <string.h>

#include "ix_chunk_whole.h"

void ix_chunk_whole_free(ix_chunk_whole *cv)
{
    for (uint32_t i = 0; i < cv->num_pages; i++)
        pq_page_values_free(&cv->pages[i]);
    free(cv->pages);
    if (cv->has_dict)
        pq_dictionary_free(&cv->dict);
    free(cv->all.def_levels);
    free(cv->all.rep_levels);
    free(cv->all.values);
    memset(cv, 0, sizeof *cv);
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

static int keep_page(ix_chunk_whole *cv, pq_page_values *v, pq_error *err)
{
    pq_page_values *grown = realloc(cv->pages, (cv->num_pages + 1) * sizeof *grown);
    if (!grown) {
        pq_page_values_free(v);
        return pq_error_set(err, "out of memory");
    }
    cv->pages = grown;
    cv->pages[cv->num_pages++] = *v;
    return 0;
}

/* Decode every page of the chunk in buf[0..len). */
static int decode_pages(ix_chunk_whole *cv, const pq_column_desc *desc, const uint8_t *buf,
                        size_t len, const ix_chunk_bounds *bounds, uint64_t mem, pq_error *err)
{
    for (size_t off = 0; off < len;) {
        pq_page_header h;
        if (pq_page_header_parse(buf + off, len - off, &h, err) < 0 ||
            ix_page_claims_check(&h, bounds, mem, err) < 0 || ix_page_hold_check(&h, mem, err) < 0)
            return pq_error_prefix(err, "page at chunk byte %zu: ", off);
        size_t body = off + h.header_len;
        if ((uint64_t)h.compressed_size > len - body)
            return pq_error_set(err, "page at chunk byte %zu: its %d bytes pass the chunk's "
                                "end", off, h.compressed_size);
        if (h.type == PQ_PAGE_DICTIONARY) {
            if (cv->has_dict)
                return pq_error_set(err, "a second dictionary page at chunk byte %zu", off);
            if (pq_dictionary_decode(desc, &h, buf + body, (size_t)h.compressed_size,
                                     &cv->dict, err) < 0)
                return -1;
            cv->has_dict = 1;
        } else if (h.type == PQ_PAGE_DATA || h.type == PQ_PAGE_DATA_V2) {
            pq_page_values v;
            if (pq_page_decode(desc, &h, buf + body, (size_t)h.compressed_size,
                               cv->has_dict ? &cv->dict : NULL, &v, err) < 0 ||
                keep_page(cv, &v, err) < 0)
                return -1;
        }
        off = body + (size_t)h.compressed_size;
    }
    return 0;
}

/* Join the pages' entries and values into cv->all. */
static int join_pages(ix_chunk_whole *cv, const pq_column_desc *desc, pq_error *err)
{
    uint64_t levels = 0, values = 0;
    for (uint32_t i = 0; i < cv->num_pages; i++) {
        levels += cv->pages[i].num_levels;
        values += cv->pages[i].num_values;
    }
    if (levels > UINT32_MAX)
        return pq_error_set(err, "more than 2^32 level entries in a chunk");
    pq_page_values *a = &cv->all;
    size_t n = levels ? (size_t)levels : 1;
    if ((desc->max_def > 0 && !(a->def_levels = malloc(n * sizeof *a->def_levels))) ||
        (desc->max_rep > 0 && !(a->rep_levels = malloc(n * sizeof *a->rep_levels))) ||
        !(a->values = malloc((values ? (size_t)values : 1) * sizeof *a->values)))
        return pq_error_set(err, "out of memory");
    for (uint32_t i = 0; i < cv->num_pages; i++) {
        const pq_page_values *p = &cv->pages[i];
        if (a->def_levels)
            memcpy(a->def_levels + a->num_levels, p->def_levels,
                   p->num_levels * sizeof *a->def_levels);
        if (a->rep_levels)
            memcpy(a->rep_levels + a->num_levels, p->rep_levels,
                   p->num_levels * sizeof *a->rep_levels);
        memcpy(a->values + a->num_values, p->values, p->num_values * sizeof *a->values);
        a->num_levels += p->num_levels;
        a->num_values += p->num_values;
    }
    return 0;
}

int ix_chunk_whole_load(ix_chunk_whole *cv, const ix_source *s, int leaf, int32_t g,
                        uint64_t max, uint64_t *bytes_read, pq_error *err)
{
    const pq_leaf *l = &s->leaves[leaf];
    const pq_row_group *rg = &s->meta.row_groups[g];
    const pq_column_meta *m = &rg->columns[leaf];
    memset(cv, 0, sizeof *cv);
    if (m->encrypted)
        return pq_error_set(err, "column %s is encrypted; youmufs cannot read encrypted "
                            "Parquet", l->path);
    if (m->type != l->type)
        return pq_error_set(err, "column %s: chunk type %d differs from the schema's %d",
                            l->path, m->type, l->type);
    if (rg->num_rows < 0)
        return pq_error_set(err, "a negative row count");
    if (rg->num_rows == 0)
        return 0;
    if (max && m->total_compressed_size > 0 && (uint64_t)m->total_compressed_size > max)
        return pq_error_set(err, "column %s: a chunk of %lld bytes beside the primary is more "
                            "than mem=%llu bytes", l->path, (long long)m->total_compressed_size,
                            (unsigned long long)max);
    pq_column_desc desc = { l->type, l->type_length, l->max_def, l->max_rep, m->codec };
    ix_chunk_bounds bounds = { m->total_uncompressed_size, m->num_values };
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = read_chunk(s, m, &buf, &len, err);
    *bytes_read += len;
    if (rc == 0)
        rc = decode_pages(cv, &desc, buf, len, &bounds, max, err);
    free(buf);
    if (rc == 0)
        rc = join_pages(cv, &desc, err);
    return rc < 0 ? pq_error_prefix(err, "column %s: ", l->path) : 0;
}

