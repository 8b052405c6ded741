/* ix_build: from a dataset path to the global page index. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ix_internal.h"
#include "ix_parallel.h"

typedef struct build {
    const ix_options *opts;
    ix_source *sources;
    size_t num_sources;
    ix_index *ix;
    ix_scan *scans; /* one per chunk */
    ix_cache *cache;
    ix_cache_key *keys; /* one per file */
} build;

static int open_source(void *ctx, size_t i, pq_error *err)
{
    build *b = ctx;
    return ix_source_open(&b->sources[i], err);
}

/* The page pass's result from the persistent index: the cached pages with
 * global row numbers, provided they lie inside the file. */
static int reuse_chunk(ix_scan *scan, pq_error *err)
{
    const ix_cache_chunk *cc = scan->cached;
    uint64_t file_size = (uint64_t)scan->src->st.st_size;
    scan->pages = malloc((cc->num_pages ? cc->num_pages : 1) * sizeof *scan->pages);
    if (!scan->pages)
        return pq_error_set(err, "out of memory");
    for (uint32_t k = 0; k < cc->num_pages; k++) {
        ix_page pg = cc->pages[k];
        if (pg.offset > file_size || pg.length > file_size - pg.offset)
            return pq_error_set(err, "the persistent index places a page outside the file");
        pg.first_row += scan->first_row;
        scan->pages[k] = pg;
    }
    scan->num_pages = cc->num_pages;
    scan->dict_offset = cc->dict_offset;
    scan->dict_length = cc->dict_length;
    scan->has_offset_index = cc->has_offset_index;
    return 0;
}

static int scan_chunk(void *ctx, size_t i, pq_error *err)
{
    build *b = ctx;
    ix_scan *scan = &b->scans[i];
    if (scan->cached && reuse_chunk(scan, err) == 0)
        return 0;
    if (scan->cached) { /* the cache is untrusted: scan instead of failing */
        free(scan->pages);
        scan->pages = NULL;
        scan->cached = NULL;
    }
    if (ix_scan_chunk(scan, err) < 0)
        return pq_error_prefix(err, "%s: row group %u, column %s: ", scan->src->name,
                               scan->row_group, b->ix->column.path);
    return 0;
}

static int open_sources(build *b, pq_error *err)
{
    char **paths;
    size_t count;
    if (ix_list_files(b->opts->dataset, &paths, &count, err) < 0)
        return -1;
    b->sources = calloc(count, sizeof *b->sources);
    if (!b->sources) {
        for (size_t i = 0; i < count; i++)
            free(paths[i]);
        free(paths);
        return pq_error_set(err, "out of memory for %zu files", count);
    }
    /* Names in messages are relative to the dataset directory. */
    size_t root_len = strlen(b->opts->dataset);
    for (size_t i = 0; i < count; i++) {
        ix_source *s = &b->sources[i];
        s->path = paths[i];
        s->fd = -1;
        s->name = s->path;
        if (count > 1 || strcmp(s->path, b->opts->dataset) != 0)
            s->name = s->path + root_len + (s->path[root_len] == '/');
    }
    free(paths);
    b->num_sources = count;
    return ix_parallel_for(count, b->opts->threads, open_source, b, "youmufs: reading footers",
                           err);
}

static int copy_leaf(pq_leaf *dst, const pq_leaf *src)
{
    *dst = *src;
    dst->path = strdup(src->path);
    return dst->path ? 0 : -1;
}

/* Files and chunks of the index, and one scan job per chunk. */
static int plan_scans(build *b, pq_error *err)
{
    ix_index *ix = b->ix;
    size_t chunks = 0;
    for (size_t i = 0; i < b->num_sources; i++)
        chunks += (size_t)b->sources[i].meta.num_row_groups;
    if (chunks > UINT32_MAX)
        return pq_error_set(err, "too many row groups (%zu)", chunks);

    ix->files = calloc(b->num_sources, sizeof *ix->files);
    ix->chunks = calloc(chunks ? chunks : 1, sizeof *ix->chunks);
    b->scans = calloc(chunks ? chunks : 1, sizeof *b->scans);
    b->keys = calloc(b->num_sources, sizeof *b->keys);
    if (!ix->files || !ix->chunks || !b->scans || !b->keys)
        return pq_error_set(err, "out of memory for %zu column chunks", chunks);

    uint64_t row = 0;
    uint32_t c = 0;
    for (size_t i = 0; i < b->num_sources; i++) {
        ix_source *s = &b->sources[i];
        ix_file *f = &ix->files[i];
        ix->num_files++;
        f->path = s->path;
        s->path = NULL; /* now owned by the index */
        f->name = f->path + (s->name - f->path);
        f->fd = -1; /* taken over from the source once the scans are done */
        f->size = (uint64_t)s->st.st_size;
        f->mtime = s->st.st_mtim;
        f->ctime = s->st.st_ctim;
        f->first_row = row;
        f->first_chunk = c;
        const pq_leaf *leaf = &s->leaves[s->column];
        b->keys[i] = (ix_cache_key){ f->name, f->size, (int64_t)f->mtime.tv_sec,
                                     (int64_t)f->mtime.tv_nsec, s->footer_crc, row };
        const ix_cache_chunk *cached = ix_cache_lookup(
            b->cache, &b->keys[i], ix->framing.rowid, (uint32_t)s->meta.num_row_groups);
        for (int32_t g = 0; g < s->meta.num_row_groups; g++, c++) {
            const pq_row_group *rg = &s->meta.row_groups[g];
            const pq_column_meta *m = &rg->columns[s->column];
            if (rg->num_rows < 0)
                return pq_error_set(err, "%s: row group %d has %lld rows", f->name, g,
                                    (long long)rg->num_rows);
            if (m->encrypted)
                return pq_error_set(err, "%s: column %s is encrypted; youmufs cannot read "
                                    "encrypted Parquet", f->name, leaf->path);
            if (m->type != leaf->type)
                return pq_error_set(err, "%s: row group %d: column chunk type %d differs from "
                                    "the schema's %d", f->name, g, m->type, leaf->type);
            ix_chunk *ch = &ix->chunks[c];
            ch->file = (uint32_t)i;
            ch->row_group = (uint32_t)g;
            ch->desc = (pq_column_desc){ leaf->type, leaf->type_length, leaf->max_def,
                                         leaf->max_rep, m->codec };
            ch->first_row = row;
            ix_scan *scan = &b->scans[c];
            scan->src = s;
            scan->row_group = (uint32_t)g;
            scan->meta = m;
            scan->desc = ch->desc;
            scan->framing = &ix->framing;
            scan->verify_crc = ix->verify_crc;
            scan->cached = cached ? &cached[g] : NULL;
            scan->first_row = row;
            scan->num_rows = (uint64_t)rg->num_rows;
            row += (uint64_t)rg->num_rows;
        }
        f->num_chunks = c - f->first_chunk;
        f->num_rows = row - f->first_row;
    }
    ix->num_chunks = c;
    ix->num_rows = row;
    return 0;
}

/* Concatenate the scans' pages into the global page array. */
static int assemble(build *b, pq_error *err)
{
    ix_index *ix = b->ix;
    uint64_t total = 0;
    for (uint32_t c = 0; c < ix->num_chunks; c++)
        total += b->scans[c].num_pages;
    ix->pages = malloc((total ? total : 1) * sizeof *ix->pages);
    if (!ix->pages)
        return pq_error_set(err, "out of memory for %llu pages", (unsigned long long)total);

    uint64_t page = 0;
    for (uint32_t c = 0; c < ix->num_chunks; c++) {
        ix_scan *scan = &b->scans[c];
        ix_chunk *ch = &ix->chunks[c];
        ix_file *f = &ix->files[ch->file];
        if (ch->row_group == 0)
            f->first_page = page;
        uint64_t rows = 0;
        for (uint32_t k = 0; k < scan->num_pages; k++)
            rows += scan->pages[k].rows;
        const pq_row_group *rg = &scan->src->meta.row_groups[ch->row_group];
        if (rows != (uint64_t)rg->num_rows)
            return pq_error_set(err, "%s: row group %u: the pages of column %s hold %llu rows, "
                                "the row group has %lld", f->name, ch->row_group,
                                ix->column.path, (unsigned long long)rows,
                                (long long)rg->num_rows);
        ch->first_page = page;
        ch->num_pages = scan->num_pages;
        ch->dict_offset = scan->dict_offset;
        ch->dict_length = scan->dict_length;
        ch->has_offset_index = scan->has_offset_index;
        ix->offset_index_chunks += scan->has_offset_index;
        ix->metadata_sized_chunks += scan->from_metadata;
        ix->header_sized_pages += scan->pages_sized_by_header;
        ix->bytes_scanned += scan->bytes_read;
        for (uint32_t k = 0; k < scan->num_pages; k++) {
            ix->num_records += scan->pages[k].records;
            ix->framed_bytes += scan->pages[k].framed;
        }
        if (scan->num_pages) /* an empty row group has no page array at all */
            memcpy(ix->pages + page, scan->pages, scan->num_pages * sizeof *ix->pages);
        page += scan->num_pages;
    }
    /* Files without row groups start where the next file does. */
    for (uint32_t i = 0; i < ix->num_files; i++)
        if (ix->files[i].num_chunks == 0)
            ix->files[i].first_page = page;
    for (uint32_t i = ix->num_files; i-- > 1;)
        if (ix->files[i - 1].num_chunks == 0)
            ix->files[i - 1].first_page = ix->files[i].first_page;
    ix->num_pages = page;
    return 0;
}

/* What a cache file is for: the dataset, the column and everything that
 * changes a record's framed size. */
static char *cache_key(const build *b)
{
    const ix_options *o = b->opts;
    char *real = realpath(o->dataset, NULL);
    char *key;
    if (asprintf(&key, "dataset=%s\ncolumn=%s\nformat=%s rowid=%d dtype=%s sep=%d:%lld\n",
                 real ? real : o->dataset, b->ix->column.path, ix_format_name(o->frame.format),
                 o->frame.rowid, ix_dtype_name(o->frame.dtype), o->frame.has_sep,
                 (long long)o->frame.sep) < 0)
        key = NULL;
    free(real);
    return key;
}

static void open_cache(build *b)
{
    char *key = b->opts->cache_dir ? cache_key(b) : NULL;
    b->cache = ix_cache_open(key ? b->opts->cache_dir : NULL, key ? key : "",
                             b->ix->cache_note, sizeof b->ix->cache_note);
    free(key);
}

/* Rewrite the persistent index when any chunk was scanned, or files are
 * gone from the dataset. */
static void save_cache(build *b)
{
    ix_index *ix = b->ix;
    int stale = ix_cache_entries(b->cache) != ix->num_files;
    ix->files_cached = 0;
    for (uint32_t f = 0; f < ix->num_files; f++) {
        int reused = 1;
        for (uint32_t c = 0; c < ix->files[f].num_chunks; c++)
            reused &= b->scans[ix->files[f].first_chunk + c].cached != NULL;
        ix->files_cached += (uint32_t)reused;
        stale |= !reused;
    }
    if (!stale)
        return;
    pq_error err;
    if (ix_cache_save(b->cache, ix, b->keys, &err) < 0)
        snprintf(ix->cache_note, sizeof ix->cache_note, "%s", err.msg);
}

static int resolve_column(build *b, pq_error *err)
{
    ix_index *ix = b->ix;
    if (ix_resolve_column(&b->sources[0], b->opts->column, err) < 0)
        return -1;
    const pq_leaf *leaf = &b->sources[0].leaves[b->sources[0].column];
    for (size_t i = 1; i < b->num_sources; i++)
        if (ix_match_column(&b->sources[i], leaf, err) < 0)
            return -1;
    if (copy_leaf(&ix->column, leaf) < 0)
        return pq_error_set(err, "out of memory");
    if (ix_framing_init(&ix->framing, &b->opts->frame, leaf, err) < 0)
        return pq_error_prefix(err, "%s: ", b->sources[0].name);
    return 0;
}

int ix_build(const ix_options *opts, ix_index **out, pq_error *err)
{
    build b = { .opts = opts };
    ix_index *ix = calloc(1, sizeof *ix);
    if (!ix)
        return pq_error_set(err, "out of memory");
    b.ix = ix;
    int rc = -1;
    double t0 = ix_now();
    ix->verify_crc = !opts->skip_crc;
    if (!(ix->dataset = strdup(opts->dataset))) {
        pq_error_set(err, "out of memory");
        goto done;
    }
    if (open_sources(&b, err) < 0 || resolve_column(&b, err) < 0)
        goto done;
    open_cache(&b);
    if (!b.cache) {
        pq_error_set(err, "out of memory");
        goto done;
    }
    if (plan_scans(&b, err) < 0)
        goto done;
    double t1 = ix_now();
    ix->seconds_footers = t1 - t0;
    if (ix_parallel_for(ix->num_chunks, opts->threads, scan_chunk, &b,
                        opts->progress ? "youmufs: indexing pages" : NULL, err) < 0 ||
        assemble(&b, err) < 0)
        goto done;
    ix->seconds_pages = ix_now() - t1;
    for (uint32_t i = 0; i < ix->num_files; i++) {
        ix->files[i].fd = b.sources[i].fd;
        b.sources[i].fd = -1;
    }
    save_cache(&b);
    rc = 0;
done:
    for (size_t i = 0; i < b.num_sources; i++) {
        ix_source_release(&b.sources[i], 0);
        free(b.sources[i].path);
    }
    free(b.sources);
    for (uint32_t c = 0; b.scans && c < ix->num_chunks; c++)
        free(b.scans[c].pages);
    free(b.scans);
    free(b.keys);
    ix_cache_free(b.cache);
    if (rc < 0)
        ix_free(ix);
    else
        *out = ix;
    return rc;
}

void ix_free(ix_index *ix)
{
    if (!ix)
        return;
    for (uint32_t i = 0; i < ix->num_files; i++) {
        if (ix->files[i].fd >= 0)
            close(ix->files[i].fd);
        free(ix->files[i].path);
    }
    free(ix->files);
    free(ix->chunks);
    free(ix->pages);
    free(ix->column.path);
    ix_framing_free(&ix->framing);
    free(ix->dataset);
    free(ix);
}

/* Index in [lo, hi) of the last element whose uint64_t field at `field`
 * (a first_page prefix, sorted) is <= page. Used on files, then on the
 * chunks of one file: Youmu's layered binary search. */
static uint32_t last_at_or_before(const void *array, size_t stride, size_t field, uint32_t lo,
                                  uint32_t hi, uint64_t page)
{
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint64_t v;
        memcpy(&v, (const char *)array + (size_t)mid * stride + field, sizeof v);
        if (v <= page)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

uint32_t ix_locate(const ix_index *ix, uint64_t page)
{
    uint32_t file = last_at_or_before(ix->files, sizeof *ix->files,
                                      offsetof(ix_file, first_page), 0, ix->num_files, page);
    const ix_file *f = &ix->files[file];
    return last_at_or_before(ix->chunks, sizeof *ix->chunks, offsetof(ix_chunk, first_page),
                             f->first_chunk, f->first_chunk + f->num_chunks, page);
}

uint64_t ix_memory_bytes(const ix_index *ix)
{
    return sizeof *ix + ix->num_files * sizeof *ix->files +
           ix->num_chunks * sizeof *ix->chunks + ix->num_pages * sizeof *ix->pages;
}
