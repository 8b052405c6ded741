/* ix_build: from a dataset path to the global page index. */
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ix_internal.h"
#include "ix_others.h"
#include "ix_parallel.h"

typedef struct build {
    const ix_options *opts;
    ix_sources ss;
    ix_index *ix;
    ix_scan *scans;     /* one per chunk; run only for chunks of files not cached */
    uint32_t *todo;     /* the chunks the page pass scans */
    uint32_t num_todo;
    ix_cache *cache;
    char *key;          /* the cache's key; NULL: cache=none */
    ix_cache_key *keys; /* one per file */
    uint64_t *first_rows; /* sharded: each kept file's first row in the whole dataset */
    ix_gate gate;       /* the page pass: opts->threads decode, io_depth read (ix_gate.h) */
} build;

static int scan_chunk(void *ctx, size_t i, pq_error *err)
{
    build *b = ctx;
    ix_scan *scan = &b->scans[b->todo[i]];
    ix_gate_cpu_enter(scan->gate);
    int rc = ix_scan_chunk(scan, err);
    ix_gate_cpu_leave(scan->gate);
    if (rc < 0)
        return pq_error_prefix(err, "%s: row group %u, column %s: ", scan->src->name,
                               scan->row_group, b->ix->column.path);
    return 0;
}

static int copy_leaf(pq_leaf *dst, const pq_leaf *src)
{
    *dst = *src;
    dst->path = strdup(src->path);
    return dst->path ? 0 : -1;
}

/* The chunks of a file its cache entry describes: nothing to scan. */
static void plan_cached(build *b, const ix_source *s, uint32_t c)
{
    ix_index *ix = b->ix;
    for (uint32_t g = 0; g < s->cached->num_chunks; g++, c++) {
        const ix_cache_chunk *cc = &s->cached->chunks[g];
        ix_chunk *ch = &ix->chunks[c];
        ch->desc = (pq_column_desc){ ix->column.type, cc->type_length, ix->column.max_def,
                                     ix->column.max_rep, cc->codec };
        ch->bounds = cc->bounds;
        b->scans[c] = (ix_scan){
            .src = s,
            .row_group = g,
            .num_rows = cc->num_rows,
            .num_pages = cc->num_pages,
            .dict_offset = cc->dict_offset,
            .dict_length = cc->dict_length,
            .dict_crc = cc->dict_crc,
            .dict_claims = cc->dict_claims,
            .has_offset_index = cc->has_offset_index,
        };
    }
}

/* The chunks of a file whose footer was parsed: one scan each. */
static int plan_parsed(build *b, const ix_source *s, uint32_t c, uint64_t row, pq_error *err)
{
    ix_index *ix = b->ix;
    const pq_leaf *leaf = &s->leaves[s->column];
    for (int32_t g = 0; g < s->meta.num_row_groups; g++, c++) {
        const pq_row_group *rg = &s->meta.row_groups[g];
        const pq_column_meta *m = &rg->columns[s->column];
        if (m->encrypted)
            return pq_error_set(err, "%s: column %s is encrypted; youmufs cannot read "
                                "encrypted Parquet", s->name, leaf->path);
        if (m->type != leaf->type)
            return pq_error_set(err, "%s: row group %d: column chunk type %d differs from "
                                "the schema's %d", s->name, g, m->type, leaf->type);
        ix_chunk *ch = &ix->chunks[c];
        ch->desc = (pq_column_desc){ leaf->type, leaf->type_length, leaf->max_def,
                                     leaf->max_rep, m->codec };
        ch->bounds = (ix_chunk_bounds){ m->total_uncompressed_size, m->num_values };
        b->scans[c] = (ix_scan){
            .src = s,
            .row_group = (uint32_t)g,
            .meta = m,
            .desc = ch->desc,
            .framing = &ix->framing,
            .verify_crc = ix->verify_crc,
            .first_row = row,
            .num_rows = (uint64_t)rg->num_rows,
            .stream_page_bytes = b->opts->stream_page_bytes,
            .mem = b->opts->mem,
            .gate = &b->gate,
        };
        b->todo[b->num_todo++] = c;
        row += (uint64_t)rg->num_rows;
    }
    return 0;
}

/* The ctime at which the file held the bytes its pages describe (ix_file.ctime_ns):
 * now, for a file scanned now; for a file from the persistent index, the
 * ctime its entry was made at, if it is still the same inode and ctime. Any
 * other cached file may have been rewritten in place since (with size, mtime
 * and footer put back): its pages are then compared with their checksums
 * on every read. */
static int64_t known_ctime(const ix_source *s)
{
    int64_t now = ix_ctime_ns(&s->st.st_ctim);
    const ix_cache_file *e = s->cached;
    if (!e)
        return now;
    return e->ctime_ns == now && e->dev == (uint64_t)s->st.st_dev &&
                   e->ino == (uint64_t)s->st.st_ino
               ? now
               : IX_CTIME_UNKNOWN;
}

/* Files and chunks of the index, and one scan job per chunk not cached. */
static int plan_scans(build *b, pq_error *err)
{
    ix_index *ix = b->ix;
    size_t chunks = 0, n = b->ss.count;
    for (size_t i = 0; i < n; i++) {
        const ix_source *s = &b->ss.files[i];
        chunks += s->cached ? s->cached->num_chunks : (size_t)s->meta.num_row_groups;
    }
    if (chunks > UINT32_MAX)
        return pq_error_set(err, "too many row groups (%zu)", chunks);

    ix->files = calloc(n, sizeof *ix->files);
    ix->chunks = calloc(chunks ? chunks : 1, sizeof *ix->chunks);
    b->scans = calloc(chunks ? chunks : 1, sizeof *b->scans);
    b->todo = malloc((chunks ? chunks : 1) * sizeof *b->todo);
    b->keys = calloc(n, sizeof *b->keys);
    if (!ix->files || !ix->chunks || !b->scans || !b->todo || !b->keys)
        return pq_error_set(err, "out of memory for %zu column chunks", chunks);

    uint64_t row = 0;
    uint32_t c = 0;
    for (size_t i = 0; i < n; i++) {
        ix_source *s = &b->ss.files[i];
        ix_file *f = &ix->files[i];
        if (b->first_rows)
            row = b->first_rows[i];
        ix->num_files++;
        f->path = s->path;
        s->path = NULL; /* now owned by the index */
        f->name = f->path + (s->name - f->path);
        f->fd = -1; /* taken over from the source once the scans are done */
        f->size = (uint64_t)s->st.st_size;
        f->mtime = s->st.st_mtim;
        f->dev = (uint64_t)s->st.st_dev;
        f->ino = (uint64_t)s->st.st_ino;
        f->ctime_ns = known_ctime(s);
        /* the footer was read (parsed, or compared with the cache's) at this ctime */
        atomic_init(&f->footer_ok_ctime, ix_ctime_ns(&s->st.st_ctim));
        f->footer_len = s->footer_len;
        f->footer_crc = s->footer_crc;
        f->first_row = row;
        f->first_chunk = c;
        f->num_chunks = s->cached ? s->cached->num_chunks : (uint32_t)s->meta.num_row_groups;
        f->num_rows = ix_source_rows(s);
        b->keys[i] = (ix_cache_key){ f->name, f->size, (int64_t)f->mtime.tv_sec,
                                     (int64_t)f->mtime.tv_nsec, s->footer_len, s->footer_crc,
                                     row, f->ctime_ns, f->dev, f->ino };
        if (s->cached)
            plan_cached(b, s, c);
        else if (plan_parsed(b, s, c, row, err) < 0)
            return -1;
        for (uint32_t g = 0; g < f->num_chunks; g++, c++) {
            ix->chunks[c].file = (uint32_t)i;
            ix->chunks[c].row_group = g;
            ix->chunks[c].first_row = row;
            row += b->scans[c].num_rows;
        }
    }
    ix->num_chunks = c;
    ix->num_rows = row;
    return 0;
}

/* The pages of chunk c, with global row numbers, at dst. */
static void place_pages(const build *b, uint32_t c, ix_page *dst)
{
    const ix_scan *scan = &b->scans[c];
    const ix_chunk *ch = &b->ix->chunks[c];
    if (!scan->src->cached) {
        if (scan->num_pages) /* an empty row group has no page array at all */
            memcpy(dst, scan->pages, scan->num_pages * sizeof *dst);
        return;
    }
    const ix_cache_chunk *cc = &scan->src->cached->chunks[ch->row_group];
    for (uint32_t k = 0; k < cc->num_pages; k++) {
        dst[k] = cc->pages[k];
        dst[k].first_row += ch->first_row;
    }
}

/* The units of chunk c's cut entries (ix_index.h), at dst, after checking
 * that they are as many as its entries call for and add up to their bytes;
 * their marks at marks_dst (NULL: the index keeps none; zeroed: none
 * made). */
static int place_units(const build *b, uint32_t c, const ix_page *pages, uint64_t *dst,
                       ix_unit_mark *marks_dst, pq_error *err)
{
    const ix_scan *scan = &b->scans[c];
    const ix_chunk *ch = &b->ix->chunks[c];
    if (!ch->cut)
        return 0;
    const uint64_t *units = scan->unit_bytes;
    const ix_unit_mark *marks = scan->unit_marks;
    uint64_t n = scan->num_units, at = 0;
    if (scan->src->cached) {
        const ix_cache_chunk *cc = &scan->src->cached->chunks[ch->row_group];
        units = cc->unit_bytes;
        marks = cc->unit_marks;
        n = cc->num_units;
    }
    if (marks_dst && marks)
        memcpy(marks_dst, marks, n * sizeof *marks);
    for (uint32_t k = 0; k < scan->num_pages; k++) {
        uint32_t count = ix_units_of(&pages[k]);
        if (count == 1)
            continue;
        uint64_t bytes = 0;
        for (uint32_t u = 0; u < count && at + u < n; u++)
            bytes += units[at + u];
        if (at + count > n || bytes != pages[k].framed)
            return pq_error_set(err, "%s: row group %u: the shuffle units of the page at offset "
                                "%llu do not add up (persistent index damaged?)",
                                b->ix->files[ch->file].name, ch->row_group,
                                (unsigned long long)pages[k].offset);
        memcpy(dst + at, units + at, count * sizeof *dst);
        at += count;
    }
    if (at != n)
        return pq_error_set(err, "%s: row group %u: %llu shuffle units for %llu",
                            b->ix->files[ch->file].name, ch->row_group, (unsigned long long)n,
                            (unsigned long long)at);
    return 0;
}

/* Whether a chunk brings marks at its units (ix_unit_mark). */
static int any_marks(const build *b)
{
    for (uint32_t c = 0; c < b->ix->num_chunks; c++) {
        const ix_scan *scan = &b->scans[c];
        const ix_cache_file *cached = scan->src->cached;
        if (cached ? cached->chunks[b->ix->chunks[c].row_group].unit_marks != NULL
                   : scan->unit_marks != NULL)
            return 1;
    }
    return 0;
}

/* The number of shuffle units chunk c brings. */
static uint64_t chunk_units(const build *b, uint32_t c)
{
    const ix_scan *scan = &b->scans[c];
    if (scan->src->cached)
        return scan->src->cached->chunks[b->ix->chunks[c].row_group].num_units;
    return scan->num_units;
}

/* The records' memory at this mount (ix_claims.h), from what the index
 * keeps: a page whose records frame to more than ix_hold_max(mem) on
 * average has one that does. The page pass refuses each such record as it
 * measures it; this catches the pages of files from the persistent index,
 * which an `index` or a mount with more mem= measured. */
static int records_fit(const ix_index *ix, pq_error *err)
{
    if (!ix->mem)
        return 0;
    for (uint32_t c = 0; c < ix->num_chunks; c++)
        for (uint64_t k = 0; k < ix->chunks[c].num_pages; k++) {
            const ix_page *p = &ix->pages[ix->chunks[c].first_page + k];
            if (!p->records)
                continue;
            uint64_t average = p->framed / p->records + (p->framed % p->records != 0);
            if (average <= ix_hold_max(ix->mem))
                continue;
            char what[256];
            int n = snprintf(what, sizeof what, "row group %u, column %s: page at offset %llu: ",
                             ix->chunks[c].row_group, ix->column.path,
                             (unsigned long long)p->offset);
            size_t at = n > 0 && (size_t)n < sizeof what ? (size_t)n : 0;
            if (p->records == 1)
                snprintf(what + at, sizeof what - at, "its record frames to %llu bytes",
                         (unsigned long long)p->framed);
            else
                snprintf(what + at, sizeof what - at, "its %u records frame to %llu bytes, "
                         "one to at least %llu", p->records, (unsigned long long)p->framed,
                         (unsigned long long)average);
            ix_hold_check(average, ix->mem, what, err);
            return pq_error_prefix(err, "%s: ", ix->files[ix->chunks[c].file].name);
        }
    return 0;
}

/* The dictionaries' memory at this mount (ix_claims.h), from the claims
 * the index keeps: the page pass refuses a dictionary page it reads that
 * mem= cannot hold; this catches those of files from the persistent index,
 * which an `index` or a mount with more mem= read, with the same message,
 * at mount rather than at every read. */
static int dicts_fit(const ix_index *ix, pq_error *err)
{
    for (uint32_t c = 0; c < ix->num_chunks; c++) {
        const ix_chunk *ch = &ix->chunks[c];
        if (ix_dict_claims_check(&ch->dict_claims, ix->mem, err) < 0) {
            pq_error_prefix(err, "page at offset %lld: ", (long long)ch->dict_offset);
            return pq_error_prefix(err, "%s: row group %u, column %s: ",
                                   ix->files[ch->file].name, ch->row_group, ix->column.path);
        }
    }
    return 0;
}

/* Concatenate the chunks' pages into the global page array, and their units
 * into the global unit array. */
static int assemble(build *b, pq_error *err)
{
    ix_index *ix = b->ix;
    uint64_t total = 0, units = 0;
    for (uint32_t c = 0; c < ix->num_chunks; c++) {
        total += b->scans[c].num_pages;
        units += chunk_units(b, c);
    }
    ix->pages = malloc((total ? total : 1) * sizeof *ix->pages);
    ix->unit_bytes = malloc((units ? units : 1) * sizeof *ix->unit_bytes);
    if (!ix->pages || !ix->unit_bytes)
        return pq_error_set(err, "out of memory for %llu pages", (unsigned long long)total);
    if (any_marks(b) && !(ix->unit_marks = calloc(units ? units : 1, sizeof *ix->unit_marks)))
        return pq_error_set(err, "out of memory for %llu shuffle units", (unsigned long long)units);

    uint64_t page = 0;
    for (uint32_t c = 0; c < ix->num_chunks; c++) {
        ix_scan *scan = &b->scans[c];
        ix_chunk *ch = &ix->chunks[c];
        ix_file *f = &ix->files[ch->file];
        if (ch->row_group == 0)
            f->first_page = page;
        ix_page *pages = ix->pages + page;
        place_pages(b, c, pages);
        uint64_t rows = 0;
        for (uint32_t k = 0; k < scan->num_pages; k++) {
            rows += pages[k].rows;
            ix->num_records += pages[k].records;
            ix->framed_bytes += pages[k].framed;
        }
        if (rows != scan->num_rows)
            return pq_error_set(err, "%s: row group %u: the pages of column %s hold %llu rows, "
                                "the row group has %llu", f->name, ch->row_group,
                                ix->column.path, (unsigned long long)rows,
                                (unsigned long long)scan->num_rows);
        ch->first_page = page;
        ch->num_pages = scan->num_pages;
        ch->dict_offset = scan->dict_offset;
        ch->dict_length = scan->dict_length;
        atomic_init(&ch->dict_crc, scan->dict_crc);
        ch->dict_claims = scan->dict_claims;
        ch->has_offset_index = scan->has_offset_index;
        ch->cut = scan->src->cached ? scan->src->cached->chunks[ch->row_group].cut : scan->cut;
        if (place_units(b, c, pages, ix->unit_bytes + ix->num_units,
                        ix->unit_marks ? ix->unit_marks + ix->num_units : NULL, err) < 0)
            return -1;
        ix->num_units += chunk_units(b, c);
        ix->offset_index_chunks += scan->has_offset_index;
        ix->metadata_sized_chunks += scan->from_metadata;
        ix->header_sized_pages += scan->pages_sized_by_header;
        ix->streamed_pages += scan->pages_streamed;
        ix->bytes_scanned += scan->bytes_read;
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

/* What a cache file is for: the dataset, the column's leaf as the first file
 * describes it (every other file's was matched to it) and everything else
 * that changes a record's framed size. A mixture's jsonl key and "_source"
 * are in it only when they change a record (so a source mounted alone or in
 * a mixture without rowid shares the entry, and older entries stay valid). */
static char *cache_key(const build *b)
{
    const ix_options *o = b->opts;
    const pq_leaf *l = &b->ix->column;
    const pq_logical *t = &l->logical;
    char *real = realpath(o->dataset, NULL);
    const char *other_key = o->frame.format == IX_FORMAT_JSONL && o->frame.key &&
                                    strcmp(o->frame.key, b->ix->framing.nest.key) != 0
                                ? o->frame.key
                                : NULL;
    char source[32] = "";
    if (b->ix->framing.has_source)
        snprintf(source, sizeof source, " source=%u", b->ix->framing.source);
    char *key;
    /* several columns: every one, since the others' values are in the framed sizes */
    const char *others = b->ix->columns ? b->ix->columns->key : "";
    /* an object store's server too (ix_store.h); a path's real path names it */
    const ix_store *store = b->ss.store;
    char *origin = NULL;
    if (store && store->origin && asprintf(&origin, "store=%s\n", store->origin) < 0)
        origin = NULL;
    if (asprintf(&key, "dataset=%s\n%s%scolumn=%s\nleaf=%d:%d def=%d rep=%d:%d map=%d "
                 "logical=%d:%d:%d:%d:%d:%d:%d\nfield=%s\n"
                 "format=%s rowid=%d dtype=%s sep=%d:%lld%s%s%s\n",
                 real ? real : o->dataset, origin ? origin : "", others, l->path, l->type,
                 (int)l->type_length, l->max_def, l->max_rep, l->rep_def, l->in_map, t->kind,
                 (int)t->scale, (int)t->precision, t->bit_width, t->is_signed, t->unit, t->utc,
                 b->ix->framing.nest.key, ix_format_name(o->frame.format),
                 o->frame.rowid, ix_dtype_name(o->frame.dtype), o->frame.has_sep,
                 (long long)o->frame.sep, other_key ? " key=" : "", other_key ? other_key : "",
                 source) < 0)
        key = NULL;
    free(origin);
    free(real);
    return key;
}

static void open_cache(build *b)
{
    b->key = b->opts->cache_dir ? cache_key(b) : NULL;
    b->cache = ix_cache_open(b->key ? b->opts->cache_dir : NULL, b->key ? b->key : "",
                             b->ix->cache_note, sizeof b->ix->cache_note);
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const uint8_t *)p)[i]) * 0x100000001b3ull;
    return h;
}

/* What the other columns' values are of: the cache's key (the dataset, every
 * column and leaf, the framing) and every file's identity, in order, as the
 * persistent index knows it (name, size, mtime, footer). */
static uint64_t others_digest(const build *b)
{
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv1a(h, b->key, strlen(b->key) + 1);
    for (size_t i = 0; i < b->ss.count; i++) {
        const ix_source *s = &b->ss.files[i];
        uint64_t id[5] = { (uint64_t)s->st.st_size, (uint64_t)s->st.st_mtim.tv_sec,
                           (uint64_t)s->st.st_mtim.tv_nsec, s->footer_len, s->footer_crc };
        h = fnv1a(h, s->name, strlen(s->name) + 1);
        h = fnv1a(h, id, sizeof id);
    }
    return h;
}

/* Several columns: their values, from the file beside the persistent
 * index (reused when whole, else built there), or a temporary file. */
static int load_others(build *b, pq_error *err)
{
    ix_index *ix = b->ix;
    const char *cache = ix_cache_path(b->cache);
    char *path = NULL;
    if (cache && asprintf(&path, "%s.others", cache) < 0)
        return pq_error_set(err, "out of memory");
    int threads = b->opts->threads > 0 ? b->opts->threads : 1;
    ix_load_limits lim = { b->opts->mem, ix->verify_crc, threads,
                           ix_io_depth(b->opts, b->ss.store), &b->gate };
    int rc = ix_columns_load(ix->columns, &b->ss, path, path ? others_digest(b) : 0, &lim, err);
    free(path);
    return rc;
}

/* Rewrite the persistent index when any file was read afresh, or files are
 * gone from the dataset; a shard's files are merged into it. */
static void save_cache(build *b)
{
    ix_index *ix = b->ix;
    int sharded = b->first_rows != NULL;
    ix->files_cached = 0;
    for (size_t i = 0; i < b->ss.count; i++)
        ix->files_cached += b->ss.files[i].cached != NULL;
    if (ix->files_cached == ix->num_files &&
        (sharded || ix_cache_entries(b->cache) == ix->num_files))
        return;
    pq_error err;
    if (ix_cache_save(b->cache, ix, b->keys, sharded, &err) < 0)
        snprintf(ix->cache_note, sizeof ix->cache_note, "%s", err.msg);
}

/* Keep the files of shard opts->shard of opts->shards (file k is in shard
 * k mod shards), each with its first row in the whole dataset (rowid
 * records carry it, so a shard's framed sizes are those of a mount). */
static int keep_shard(build *b, pq_error *err)
{
    ix_sources *ss = &b->ss;
    b->first_rows = malloc((ss->count ? ss->count : 1) * sizeof *b->first_rows);
    if (!b->first_rows)
        return pq_error_set(err, "out of memory");
    uint64_t row = 0;
    size_t kept = 0;
    for (size_t k = 0; k < ss->count; k++) {
        uint64_t rows = ix_source_rows(&ss->files[k]);
        if (k % b->opts->shards == b->opts->shard) {
            b->first_rows[kept] = row;
            ss->files[kept++] = ss->files[k];
        } else {
            ix_source_release(&ss->files[k]);
            free(ss->files[k].path);
        }
        row += rows;
    }
    ss->count = kept;
    return 0;
}

/* Several columns (ix_others.h): resolved in the first file, the primary
 * chosen (first->column), its field in *nest. */
static int resolve_columns(build *b, pq_nest *nest, pq_error *err)
{
    ix_index *ix = b->ix;
    if (!(ix->columns = calloc(1, sizeof *ix->columns)))
        return pq_error_set(err, "out of memory");
    return ix_columns_resolve(&b->ss.files[0], b->opts->column, &b->opts->frame, ix->columns,
                              nest, err);
}

/* The column, from the first file. */
static int resolve_column(build *b, pq_error *err)
{
    ix_index *ix = b->ix;
    ix_source *first = &b->ss.files[0];
    pq_nest nest;
    int several = ix_columns_several(first, b->opts->column);
    if (!several) {
        several = ix_resolve_column(first, b->opts->column, &nest, err);
        if (several < 0)
            return -1;
        if (several) /* a field of several leaves */
            pq_nest_free(&nest);
    }
    if (several && resolve_columns(b, &nest, err) < 0)
        return -1;
    const pq_leaf *leaf = &first->leaves[first->column];
    if (copy_leaf(&ix->column, leaf) < 0) {
        pq_nest_free(&nest);
        return pq_error_set(err, "out of memory");
    }
    if (ix_framing_init(&ix->framing, &b->opts->frame, leaf, &nest, err) < 0)
        return pq_error_prefix(err, "%s: ", first->name);
    return 0;
}

int ix_io_depth(const ix_options *opts, const ix_store *store)
{
    int depth = opts->io_depth > 0 ? opts->io_depth : IX_IO_DEPTH;
    if (opts->io_depth <= 0 && store && store->max_reads > 0 && store->max_reads < depth)
        depth = store->max_reads;
    return depth > opts->threads ? depth : opts->threads;
}

/* What the page pass's windows may hold at once (ix_gate.h): a full window
 * per decoding thread, as before reads went deep, shared by the scans
 * decoding and the reads in flight (small chunks take small windows, so
 * many of those are in flight at once). Twice that put a mount of 8 readers'
 * dataset at mem=64M 34 MiB over its bound (test_memory). */
static uint64_t io_bytes(int threads)
{
    return (uint64_t)threads * IX_SCAN_WINDOW_BYTES;
}

int ix_build(const ix_options *opts, ix_index **out, pq_error *err)
{
    build b = { .opts = opts };
    ix_index *ix = calloc(1, sizeof *ix);
    if (!ix)
        return pq_error_set(err, "out of memory");
    b.ix = ix;
    int threads = opts->threads > 0 ? opts->threads : 1;
    ix_gate_init(&b.gate, threads, io_bytes(threads));
    int rc = -1;
    double t0 = ix_now();
    ix->verify_crc = !opts->skip_crc;
    ix->mem = opts->mem;
    if (!(ix->dataset = strdup(opts->dataset))) {
        pq_error_set(err, "out of memory");
        goto done;
    }
    if (ix_sources_list(&b.ss, opts->dataset, &opts->store, err) < 0 ||
        resolve_column(&b, err) < 0)
        goto done;
    open_cache(&b);
    if (!b.cache) {
        pq_error_set(err, "out of memory");
        goto done;
    }
    int depth = ix_io_depth(opts, b.ss.store);
    if (ix_sources_load(&b.ss, b.cache, &ix->column, &ix->framing.nest, ix->framing.rowid,
                        threads, depth, &b.gate, err) < 0)
        goto done;
    /* Several columns: the others' values of every file, before a shard
     * keeps its own. The primary's records are framed with the others'
     * values of the same row, found by global row number, and a shard's
     * files keep their global first rows (keep_shard): so the sizes a shard
     * measures are a mount's. Each shard finds or builds the values of
     * every file, as a mount does (ix_others.h); the page pass over the
     * primary, the costly part, is what is sharded. */
    if (ix->columns) {
        if (load_others(&b, err) < 0)
            goto done;
        ix->bytes_scanned += ix->columns->bytes_read;
        ix_framing_set_others(&ix->framing, &ix->columns->values);
    }
    if (opts->shards > 1 && keep_shard(&b, err) < 0)
        goto done;
    if (plan_scans(&b, err) < 0)
        goto done;
    double t1 = ix_now();
    ix->seconds_footers = t1 - t0;
    if (ix_parallel_for_growing(b.num_todo, threads, depth, scan_chunk, &b,
                        opts->progress ? "youmufs: indexing pages" : NULL, err) < 0 ||
        assemble(&b, err) < 0 || dicts_fit(ix, err) < 0 || records_fit(ix, err) < 0)
        goto done;
    ix->seconds_pages = ix_now() - t1;
    for (uint32_t i = 0; i < ix->num_files; i++) {
        ix->files[i].fd = b.ss.files[i].fd;
        b.ss.files[i].fd = -1;
    }
    ix->store = b.ss.store;
    b.ss.store = NULL;
    save_cache(&b);
    rc = 0;
done:
    for (uint32_t c = 0; b.scans && c < ix->num_chunks; c++) {
        free(b.scans[c].pages);
        free(b.scans[c].unit_bytes);
        free(b.scans[c].unit_marks);
    }
    free(b.scans);
    free(b.todo);
    free(b.keys);
    free(b.key);
    free(b.first_rows);
    ix_sources_free(&b.ss);
    ix_cache_free(b.cache);
    ix_gate_destroy(&b.gate);
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
            ix_store_close(ix->store, ix->files[i].fd);
        free(ix->files[i].path);
    }
    ix_store_free(ix->store);
    free(ix->files);
    free(ix->chunks);
    free(ix->pages);
    free(ix->unit_bytes);
    free(ix->unit_marks);
    free(ix->column.path);
    ix_framing_free(&ix->framing);
    if (ix->columns)
        ix_columns_free(ix->columns);
    free(ix->columns);
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
           ix->num_chunks * sizeof *ix->chunks + ix->num_pages * sizeof *ix->pages +
           ix->num_units * sizeof *ix->unit_bytes +
           (ix->unit_marks ? ix->num_units * sizeof *ix->unit_marks : 0) +
           (ix->columns ? ix_columns_bytes(ix->columns) : 0);
}
