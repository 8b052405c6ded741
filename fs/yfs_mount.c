#include "yfs_mount.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ix_parallel.h"
#include "yfs_budget.h"
#include "yfs_cache.h"
#include "yfs_io.h"
#include "yfs_mix.h"
#include "yfs_mixture.h"
#include "yfs_streams.h"
#include "yfs_wants.h"
#include "yfs_dicts.h"
#include "yfs_pages.h"
#include "yfs_plans.h"
#include "yfs_rows.h"

/* A segment also closes at this many framed bytes, so that huge values
 * cannot make one segment huge. A constant, not derived from mem=: the bytes
 * of an epoch must not depend on the memory it is read with. */
#define SEGMENT_MAX_BYTES (16u << 20)
/* What yfs_untracked_budget keeps beyond an eighth of mem= (yfs_mount.h). */
#define UNTRACKED_FIXED (24u << 20)

uint64_t yfs_mount_dict_budget(const yfs_mount *m)
{
    return m->mem_part / 8;
}

uint64_t yfs_mount_loaded_budget(const yfs_mount *m)
{
    return m->params.chunk_bytes ? m->mem_part / 4 : 0;
}

uint64_t yfs_mount_framed_budget(const yfs_mount *m)
{
    return m->mem_part / 4;
}

void yfs_mount_set_mem_part(yfs_mount *m, uint64_t part)
{
    m->mem_part = part;
    yfs_pages_set_cap(m->loaded, yfs_mount_loaded_budget(m));
    yfs_pages_set_cap(m->framed, yfs_mount_framed_budget(m));
    yfs_dicts_set_cap(m->dicts, yfs_mount_dict_budget(m));
    yfs_streams_set_cap(m->streams, yfs_mount_framed_budget(m));
}

uint64_t yfs_untracked_budget(uint64_t mem)
{
    uint64_t share = mem / 8 * 3, grown = UNTRACKED_FIXED + mem / 8;
    return share < grown ? share : grown;
}

uint64_t yfs_mount_data_budget(const yfs_mount *m)
{
    return m->opts.mem - yfs_untracked_budget(m->opts.mem);
}

static uint64_t unit_count(const yfs_mount *m)
{
    return m->units.first_unit ? m->units.first_unit[m->ix->num_pages] : m->ix->num_pages;
}

int yfs_mount_shuffle_note(const yfs_mount *m, char *note, size_t len)
{
    /* a mixture: its sources' units against the mixture's buffer (a
     * source's segments hold its share of it, sh_mix_share_of) */
    uint64_t units = 0, records = 0, buffer = m->mix ? m->mix->buffer : m->opts.buffer;
    for (uint32_t i = 0; i < (m->mix ? m->mix->n : 1); i++) {
        const yfs_mount *s = m->mix ? m->mix->sources[i] : m;
        units += unit_count(s);
        records += s->ix->num_records;
    }
    if (m->opts.shuffle != SH_SHUFFLE_PAGE || records == 0)
        return 0;
    double per_unit = (double)records / (double)(units ? units : 1);
    if (units <= 4 || per_unit * 4 <= (double)buffer)
        return 0;
    snprintf(note, len, "shuffle quality: the epochs shuffle %llu units of %.0f records on "
             "average (pages of more than %d records are cut into units of %d) with "
             "buffer=%llu: a window of records mixes few pages, close to the source order. More "
             "and smaller pages (pyarrow data_page_size, DuckDB ROW_GROUP_SIZE) or a larger "
             "buffer would help; shuffle=row mixes fully, much slower",
             (unsigned long long)units, per_unit, IX_CUT_RECORDS, IX_UNIT_RECORDS,
             (unsigned long long)buffer);
    return 1;
}

uint64_t yfs_mount_index_bytes(const yfs_mount *m)
{
    if (m->mix) /* every source's (summed at open, before mix was set) */
        return m->mix->index_bytes;
    uint64_t per_page = sizeof *m->page_summary + sizeof *m->page_storage;
    uint64_t units = m->units.first_unit ? m->units.first_unit[m->ix->num_pages] : 0;
    if (m->units.first_unit)
        per_page += sizeof *m->units.first_unit;
    uint64_t rows = m->record_bytes ? m->ix->num_records * sizeof *m->record_bytes +
                                          (m->ix->num_pages + 1) * sizeof *m->page_first_record
                                    : 0;
    return ix_memory_bytes(m->ix) + m->ix->num_pages * per_page + rows +
           units * (sizeof *m->units.unit_records + sizeof *m->units.unit_bytes);
}

/* The plan's units from the index's cut pages: a page's units split its
 * records as ix_unit_first_record does, with the bytes the index measured;
 * an uncut page is one unit. Nothing when no page is cut. */
static int map_units(yfs_mount *m)
{
    const ix_index *ix = m->ix;
    yfs_unit_map *u = &m->units;
    if (ix->num_units == 0)
        return 0;
    uint64_t n = ix->num_pages, units = 0;
    if (!(u->first_unit = malloc((n + 1) * sizeof *u->first_unit)))
        return -1;
    for (uint32_t c = 0; c < ix->num_chunks; c++)
        for (uint64_t p = ix->chunks[c].first_page;
             p < ix->chunks[c].first_page + ix->chunks[c].num_pages; p++) {
            u->first_unit[p] = units;
            units += ix->chunks[c].cut ? ix_units_of(&ix->pages[p]) : 1;
        }
    u->first_unit[n] = units;
    u->unit_records = malloc((units ? units : 1) * sizeof *u->unit_records);
    u->unit_bytes = malloc((units ? units : 1) * sizeof *u->unit_bytes);
    if (!u->unit_records || !u->unit_bytes)
        return -1;
    uint64_t cut = 0; /* position in ix->unit_bytes */
    for (uint64_t p = 0; p < n; p++) {
        uint64_t first = u->first_unit[p];
        uint32_t count = (uint32_t)(u->first_unit[p + 1] - first), records = ix->pages[p].records;
        if (count == 1) {
            u->unit_records[first] = records;
            u->unit_bytes[first] = ix->pages[p].framed;
            continue;
        }
        for (uint32_t k = 0; k < count; k++) {
            u->unit_records[first + k] = ix_unit_first_record(records, count, k + 1) -
                                         ix_unit_first_record(records, count, k);
            u->unit_bytes[first + k] = ix->unit_bytes[cut++];
        }
    }
    assert(cut == ix->num_units);
    u->cut = (sh_cut){ u->first_unit, u->unit_records, u->unit_bytes };
    return 0;
}

ix_options yfs_index_options(const yfs_options *opts, const char *dataset, int progress)
{
    /* The page pass holds, per thread, a window of the chunk and the page it
     * decodes: pages whose whole decode would take more than a share of mem
     * are streamed (the index is the same either way). */
    uint64_t stream_page_bytes = opts->mem / (8 * (uint64_t)(opts->threads > 0 ? opts->threads : 1));
    if (stream_page_bytes < (1u << 20))
        stream_page_bytes = 1u << 20;
    if (stream_page_bytes > (16u << 20))
        stream_page_bytes = 16u << 20;
    return (ix_options){
        .dataset = dataset,
        .column = opts->column,
        .frame = opts->frame,
        .threads = opts->threads,
        .progress = progress,
        .skip_crc = opts->skip_crc,
        .stream_page_bytes = stream_page_bytes,
        .mem = opts->mem,
        .cache_dir = opts->cache_dir,
        .store = { opts->endpoint, opts->region, opts->no_sign },
    };
}

int yfs_mount_open(const yfs_options *opts, const char *dataset, int progress, yfs_mount **out,
                   pq_error *err)
{
    if (yfs_is_mixture(dataset))
        return yfs_mix_open(opts, dataset, progress, out, err);
    return yfs_mount_open_source(opts, dataset, progress, NULL, out, err);
}

int yfs_mount_open_source(const yfs_options *opts, const char *dataset, int progress,
                          yfs_budget *budget, yfs_mount **out, pq_error *err)
{
    yfs_mount *m = calloc(1, sizeof *m);
    if (!m)
        return pq_error_set(err, "out of memory");
    yfs_latency_init(&m->read_latency);
    yfs_cpu_init(&m->cpu, 0);
    m->opts = *opts;
    m->mem_part = opts->mem;
    m->workers = opts->threads;
    m->opts.column = opts->column ? strdup(opts->column) : NULL;
    m->opts.cache_dir = opts->cache_dir ? strdup(opts->cache_dir) : NULL;
    m->opts.endpoint = opts->endpoint ? strdup(opts->endpoint) : NULL;
    m->opts.region = opts->region ? strdup(opts->region) : NULL;

    double start = ix_now();
    ix_options io = yfs_index_options(opts, dataset, progress);
    if (ix_build(&io, &m->ix, err) < 0)
        goto fail;

    const ix_index *ix = m->ix;
    uint64_t n = ix->num_pages ? ix->num_pages : 1;
    m->page_summary = malloc(n * sizeof *m->page_summary);
    m->page_storage = malloc(n * sizeof *m->page_storage);
    if (!m->page_summary || !m->page_storage)
        goto oom;
    for (uint32_t c = 0; c < ix->num_chunks; c++) {
        for (uint64_t i = ix->chunks[c].first_page;
             i < ix->chunks[c].first_page + ix->chunks[c].num_pages; i++) {
            m->page_summary[i] = (sh_page){ ix->pages[i].framed, ix->pages[i].records };
            m->page_storage[i] = (sh_stored_page){ ix->pages[i].length, c };
        }
    }
    m->params = (sh_params){
        .seed = opts->seed,
        .mode = opts->shuffle,
        .buffer_rows = opts->buffer,
        .max_segment_bytes = SEGMENT_MAX_BYTES,
        /* shuffle=row reads pages on their own: it has no chunks */
        .chunk_bytes = opts->shuffle == SH_SHUFFLE_ROW ? 0 : opts->chunk,
        .virtual_chunks = SH_VIRTUAL_CHUNKS,
    };
    m->shares_budget = budget != NULL;
    if (!(m->budget = budget ? budget : yfs_budget_new(yfs_mount_data_budget(m), &m->stats)))
        goto oom;
    m->loaded = yfs_pages_new(m->budget, yfs_mount_loaded_budget(m), &m->stats);
    m->framed = yfs_pages_new(m->budget, yfs_mount_framed_budget(m), &m->stats);
    if (map_units(m) < 0)
        goto oom;
    m->dicts = yfs_dicts_new(ix, m->budget, yfs_mount_dict_budget(m), &m->stats);
    m->cache = yfs_cache_new(m);
    /* after the cache: its reclaimer (segments read to the end go first)
     * is called before this one */
    m->streams = m->dicts ? yfs_streams_new(m->budget, m->dicts, yfs_mount_framed_budget(m),
                                            &m->stats)
                          : NULL;
    m->wants = yfs_wants_new(m->budget);
    m->io = yfs_io_new(m, opts->io_depth);
    if (!m->dicts || !m->streams || !m->wants || !m->cache || !m->loaded || !m->framed ||
        !m->io)
        goto oom;
    if (m->params.mode == SH_SHUFFLE_ROW && yfs_rows_measure(m, err) < 0)
        goto fail;
    m->plans = yfs_plans_new(&m->params, m->page_summary,
                             m->units.first_unit && m->params.mode != SH_SHUFFLE_ROW
                                 ? &m->units.cut
                                 : NULL,
                             m->page_storage, ix->num_pages,
                             m->record_bytes, ix->num_records, m->budget, &m->stats);
    if (!m->plans)
        goto oom;
    m->index_seconds = ix_now() - start;
    clock_gettime(CLOCK_REALTIME, &m->mounted_at);
    *out = m;
    return 0;
oom:
    pq_error_set(err, "out of memory");
fail:
    yfs_mount_close(m);
    return -1;
}

/* The marks the page pass left at units (ix_unit_mark) go to the store of
 * paused streams, as if a stream had passed each: a build resumes its unit
 * from its mark from the first epoch on. Kept as far as the store's share
 * for marks goes (yfs_streams.h), the units in index order. */
static void seed_marks(yfs_mount *m)
{
    const ix_index *ix = m->ix;
    const yfs_unit_map *u = &m->units;
    if (!ix->unit_marks || !u->first_unit)
        return;
    uint64_t cut = 0; /* position in ix->unit_marks, as in map_units */
    for (uint64_t p = 0; p < ix->num_pages; p++) {
        uint64_t first = u->first_unit[p], count = u->first_unit[p + 1] - first;
        if (count == 1)
            continue;
        for (uint64_t k = 0; k < count; k++) {
            ix_stream_mark mark;
            if (ix_unit_mark_get(ix, p, cut + k, &mark))
                yfs_streams_mark(m->streams, first + k, &mark);
        }
        cut += count;
    }
}

int yfs_mount_start(yfs_mount *m, pq_error *err)
{
    seed_marks(m);
    if (m->mix && yfs_mix_start(m->mix, err) < 0)
        return -1;
    if (yfs_io_start(m->io, err) < 0)
        return -1;
    return yfs_cache_start(m->cache, m->workers, err);
}

void yfs_mount_stop(yfs_mount *m)
{
    if (!m)
        return;
    for (uint32_t i = 1; m->mix && m->mix->sources && i < m->mix->n; i++)
        yfs_mount_stop(m->mix->sources[i]);
    yfs_cache_stop(m->cache); /* first: its builds may wait for the engine's loads */
    yfs_io_stop(m->io);
}

void yfs_mount_close(yfs_mount *m)
{
    if (!m)
        return;
    /* A mixture's sources share m's accountant, whose reclaimers reach into
     * every source's caches and stores: no thread of any source may run
     * once one source is freed (a prefetch build of source 0 still running
     * at unmount dropped idle segments of a source freed before it). */
    yfs_mount_stop(m);
    yfs_mix_free(m->mix); /* the other sources first: they share m's accountant */
    yfs_cache_free(m->cache); /* first: its workers use plans and dictionaries */
    yfs_io_free(m->io);       /* then: its threads use plans and the stores */
    yfs_streams_free(m->streams); /* before the dictionaries its streams hold */
    yfs_wants_free(m->wants);
    yfs_dicts_free(m->dicts);
    yfs_plans_free(m->plans);
    yfs_pages_free(m->loaded);
    yfs_pages_free(m->framed);
    if (!m->shares_budget)
        yfs_budget_free(m->budget); /* last: everything above has released its bytes */
    free(m->page_summary);
    free(m->page_storage);
    free(m->units.first_unit);
    free(m->units.unit_records);
    free(m->units.unit_bytes);
    free(m->record_bytes);
    free(m->page_first_record);
    ix_free(m->ix);
    yfs_latency_destroy(&m->read_latency);
    yfs_cpu_destroy(&m->cpu);
    yfs_options_free(&m->opts);
    free(m);
}
