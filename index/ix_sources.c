/* The dataset's files at mount: listed, opened, and each one either
 * recognised by the persistent index or its footer parsed. */
#include <stdlib.h>
#include <string.h>

#include "ix_internal.h"
#include "ix_parallel.h"

int ix_sources_list(ix_sources *ss, const char *dataset, const ix_store_options *so,
                    pq_error *err)
{
    char **paths;
    size_t count;
    *ss = (ix_sources){ 0 };
    if (ix_store_open(dataset, so, &ss->store, err) < 0 ||
        ix_store_list(ss->store, dataset, &paths, &count, err) < 0)
        return -1;
    ss->files = calloc(count, sizeof *ss->files);
    if (!ss->files) {
        for (size_t i = 0; i < count; i++)
            free(paths[i]);
        free(paths);
        return pq_error_set(err, "out of memory for %zu files", count);
    }
    for (size_t i = 0; i < count; i++) {
        ix_source *s = &ss->files[i];
        s->path = paths[i];
        s->store = ss->store;
        s->fd = -1;
        s->name = ix_store_name(ss->store, s->path);
    }
    free(paths);
    ss->count = count;
    /* The first file's footer resolves the column and so names the cache. */
    if (ix_source_open(&ss->files[0], err) < 0 ||
        ix_source_read_footer(&ss->files[0], NULL, err) < 0)
        return -1;
    return 0;
}

typedef struct load {
    ix_sources *ss;
    const ix_cache *cache;
    const pq_leaf *column;
    const pq_nest *field;
    int recognise; /* first pass: look the files up in the persistent index */
    ix_gate *gate;
} load;

/* The file's entry, if the persistent index has one for its name, size,
 * change token and footer. A file whose footer is parsed already (the first
 * one) compares its CRC; any other is checked with one read of its footer,
 * unless its token names its content (an ETag: ix_store.h), which the
 * listing gave already. */
static const ix_cache_file *recognise(const load *l, const ix_source *s)
{
    ix_cache_key key = { .name = s->name,
                         .size = (uint64_t)s->st.st_size,
                         .mtime_sec = (int64_t)s->st.st_mtim.tv_sec,
                         .mtime_nsec = (int64_t)s->st.st_mtim.tv_nsec };
    const ix_cache_file *e = ix_cache_find(l->cache, &key);
    if (!e)
        return NULL;
    if (s->has_footer)
        return e->footer_len == s->footer_len && e->footer_crc == s->footer_crc ? e : NULL;
    if (s->store->strong_token)
        return e;
    return ix_footer_is(s->store, s->fd, s->name, (uint64_t)s->st.st_size, e->footer_len, e->footer_crc)
               ? e
               : NULL;
}

static int load_source(void *ctx, size_t i, pq_error *err)
{
    load *l = ctx;
    ix_source *s = &l->ss->files[i];
    if (s->fd < 0 && ix_source_open(s, err) < 0)
        return -1;
    if (l->recognise && (s->cached = recognise(l, s))) {
        s->footer_len = s->cached->footer_len;
        s->footer_crc = s->cached->footer_crc;
    }
    if (s->cached)
        return 0;
    if (!s->has_footer && ix_source_read_footer(s, l->gate, err) < 0)
        return -1;
    for (int32_t g = 0; g < s->meta.num_row_groups; g++)
        if (s->meta.row_groups[g].num_rows < 0)
            return pq_error_set(err, "%s: row group %d has %lld rows", s->name, g,
                                (long long)s->meta.row_groups[g].num_rows);
    ix_gate_cpu_enter(l->gate);
    int rc = ix_match_column(s, l->column, l->field, err);
    ix_gate_cpu_leave(l->gate);
    return rc;
}

uint64_t ix_source_rows(const ix_source *s)
{
    uint64_t rows = 0;
    if (s->cached)
        for (uint32_t c = 0; c < s->cached->num_chunks; c++)
            rows += s->cached->chunks[c].num_rows;
    else
        for (int32_t g = 0; g < s->meta.num_row_groups; g++)
            rows += (uint64_t)s->meta.row_groups[g].num_rows;
    return rows;
}

/* Under rowid a record's size depends on its row number: entries saved with
 * another first row (files added or removed before them) are dropped.
 * Returns how many were. */
static size_t drop_shifted(ix_sources *ss)
{
    size_t dropped = 0;
    uint64_t row = 0;
    for (size_t i = 0; i < ss->count; i++) {
        ix_source *s = &ss->files[i];
        uint64_t rows = ix_source_rows(s);
        if (s->cached && s->cached->first_row != row) {
            s->cached = NULL;
            dropped++;
        }
        row += rows;
    }
    return dropped;
}

int ix_sources_load(ix_sources *ss, const ix_cache *cache, const pq_leaf *column,
                    const pq_nest *field, int rowid, int threads, int io_depth, ix_gate *gate,
                    pq_error *err)
{
    load l = { ss, cache, column, field, 1, gate };
    if (ix_parallel_for_growing(ss->count, threads, io_depth, load_source, &l, "youmufs: reading footers",
                        err) < 0)
        return -1;
    if (!rowid || drop_shifted(ss) == 0)
        return 0;
    l.recognise = 0; /* parse the footers of the files just dropped */
    return ix_parallel_for_growing(ss->count, threads, io_depth, load_source, &l, "youmufs: reading footers",
                           err);
}

void ix_sources_free(ix_sources *ss)
{
    for (size_t i = 0; i < ss->count; i++) {
        ix_source_release(&ss->files[i]);
        free(ss->files[i].path);
    }
    free(ss->files);
    ix_store_free(ss->store);
    *ss = (ix_sources){ 0 };
}
