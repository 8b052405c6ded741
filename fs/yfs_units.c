#include "yfs_units.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "ix_ahead.h"
#include "ix_others_file.h"
#include "ix_record.h"
#include "ix_stream.h"
#include "pq_stream.h"
#include "yfs_dicts.h"
#include "yfs_loads.h"
#include "yfs_pages.h"
#include "yfs_records.h"
#include "yfs_streams.h"
#include "yfs_wants.h"

/* The need of a parked framed unit: no reader registers with the framed
 * store, so it drops the units waiting longest first, whatever their need
 * (yfs_pages.h); the plan serves a page's units close together. */
#define FRAMED_NEED 0

/* A unit's block: the end of each record (8 bytes each), then the bytes. */
static uint64_t block_size(const sh_unit *u)
{
    return (uint64_t)u->records * sizeof(uint64_t) + u->bytes;
}

static void unit_from_block(yfs_unit *out, const sh_unit *u, uint8_t *block)
{
    *out = (yfs_unit){ .records = u->records, .size = u->bytes, .block = block,
                       .ends = (const uint64_t *)block,
                       .bytes = block + (uint64_t)u->records * sizeof(uint64_t) };
}

/* Framing a unit's records into its block, one after the other. */
typedef struct unit_writer {
    const ix_framing *framing;
    uint64_t *ends;
    ix_sink bytes; /* the block's bytes, after the ends */
    uint64_t size;
    uint32_t records;
} unit_writer;

static unit_writer writer_for(const ix_framing *f, const sh_unit *u, uint8_t *block)
{
    uint8_t *bytes = block + (uint64_t)u->records * sizeof(uint64_t);
    return (unit_writer){ f, (uint64_t *)block, ix_sink_buffer(bytes, u->bytes), u->bytes, 0 };
}

static int writer_put(unit_writer *w, const ix_record *rec, pq_error *err)
{
    if (yfs_frame_record(w->framing, rec, &w->bytes, err) < 0)
        return -1;
    w->ends[w->records++] = w->bytes.size;
    return 0;
}

/* The unit's records are all framed: they must fill its bytes exactly. */
static int writer_done(const unit_writer *w, pq_error *err)
{
    if (w->bytes.size != w->size)
        return pq_error_set(err, "records fill %llu of the %llu bytes indexed at mount (a "
                            "source file changed?)", (unsigned long long)w->bytes.size,
                            (unsigned long long)w->size);
    return 0;
}

/* Frame the unit's records (recs holds its page's) into block; their rows
 * are consecutive, so the others' values come through one window. */
static int frame_unit(const ix_framing *f, const ix_record *recs, const sh_unit *u,
                      uint8_t *block, pq_error *err)
{
    unit_writer w = writer_for(f, u, block);
    w.bytes.window = ix_framing_window(f);
    int rc = 0;
    for (uint32_t r = 0; rc == 0 && r < u->records; r++)
        rc = writer_put(&w, &recs[u->first_record + r], err);
    ix_others_window_free(w.bytes.window);
    return rc < 0 ? -1 : writer_done(&w, err);
}

/* The page's raw bytes: through the plan's chunk loads when it has them. */
static int fetch(yfs_mount *m, yfs_plan *plan, uint32_t page, yfs_hold *hold, uint8_t **raw,
                 uint32_t *len, pq_error *err)
{
    const sh_schedule *sched = &plan->plan.schedule;
    if (sched->num_loads)
        return yfs_page_fetch(m, plan, sched->position[page], hold, raw, len, err);
    return yfs_page_read(m, page, hold, raw, len, err);
}

/* A block for a unit to park (yfs_pages.h keeps blocks of 32-bit sizes),
 * reserved in `mode` (YFS_PREFETCH or YFS_TRY: never waiting), or NULL when
 * there is no room. */
static uint8_t *park_block_new(yfs_mount *m, uint64_t size, yfs_mem_mode mode, yfs_hold *hold)
{
    assert(mode == YFS_PREFETCH || mode == YFS_TRY);
    if (size > UINT32_MAX || yfs_budget_reserve(m->budget, size, YFS_MEM_RAW, mode, hold) < 0)
        return NULL;
    uint8_t *block = malloc(size ? size : 1);
    if (!block)
        yfs_budget_release(m->budget, size, YFS_MEM_RAW, hold);
    return block;
}

/* A block from park_block_new that will not be parked after all. */
static void park_block_drop(yfs_mount *m, uint8_t *block, uint64_t size, yfs_hold *hold)
{
    free(block);
    yfs_budget_release(m->budget, size, YFS_MEM_RAW, hold);
}

/* A block a build frames into: large ones are mapped, like segments, so
 * that freeing them returns their pages instead of leaving holes in the
 * heap that stay resident (fragmentation). Parked blocks (yfs_pages.h frees
 * them) are always malloc'ed. */
#define MAPPED_BLOCK_BYTES (256u << 10)

static uint8_t *block_alloc(uint64_t size, int *mapped)
{
    *mapped = size >= MAPPED_BLOCK_BYTES;
    return *mapped ? yfs_segment_alloc(size) : malloc(size ? size : 1);
}

static void block_free(uint8_t *block, uint64_t size, int mapped)
{
    if (mapped)
        yfs_segment_free(block, size);
    else
        free(block);
}

/* A new block for unit u in out (its bytes reserved by the caller). */
static int unit_block(const sh_unit *u, yfs_unit *out, pq_error *err)
{
    int mapped;
    uint8_t *block = block_alloc(block_size(u), &mapped);
    if (!block)
        return pq_error_set(err, "out of memory for a %llu-byte unit",
                            (unsigned long long)block_size(u));
    unit_from_block(out, u, block);
    out->mapped = mapped;
    return 0;
}

/* Another build's slot for unit v (u), FILLING for the caller and with its
 * block allocated (reserved by that build), or NULL: not wanted, or no
 * memory for the block. */
static yfs_unit *claim_wanted(yfs_mount *m, uint32_t v, const sh_unit *u)
{
    yfs_unit *slot = yfs_wants_claim(m->wants, v);
    pq_error ignored;
    if (slot && !slot->block && unit_block(u, slot, &ignored) < 0) {
        yfs_wants_end(m->wants, v, slot, 0);
        return NULL;
    }
    return slot;
}

/* Whether unit v is still to be framed for a file open on this mount: not
 * built yet, and read here (yfs_plan_note_part). Only such units are worth
 * framing in passing, parking or leaving a copy at. */
static int still_wanted(const yfs_plan *plan, uint64_t v)
{
    return !yfs_plan_built(plan, v) && yfs_plan_read_here(plan, v);
}

/* The page's other units, framed from the same decode: into the blocks of
 * the builds that want them (yfs_wants.h), else parked for the builds that
 * serve them later, as far as memory allows without waiting. */
static void park_others(yfs_mount *m, yfs_plan *plan, uint32_t unit, const sh_unit *want,
                        const ix_record *recs, yfs_hold *hold)
{
    const yfs_unit_map *map = &m->units;
    for (uint64_t v = map->cut.first_unit[want->page]; v < map->cut.first_unit[want->page + 1];
         v++) {
        if (v == unit || !still_wanted(plan, v))
            continue;
        sh_unit u = sh_unit_at(m->page_summary, &map->cut, m->ix->num_pages, (uint32_t)v);
        pq_error ignored; /* whoever needs the unit frames it again, and reports */
        yfs_unit *wanted = claim_wanted(m, (uint32_t)v, &u);
        if (wanted) {
            int ok = frame_unit(&m->ix->framing, recs, &u, wanted->block, &ignored) == 0;
            yfs_wants_end(m->wants, (uint32_t)v, wanted, ok);
            continue;
        }
        uint64_t size = block_size(&u);
        uint8_t *block = park_block_new(m, size, YFS_PREFETCH, hold);
        if (!block)
            continue;
        if (frame_unit(&m->ix->framing, recs, &u, block, &ignored) < 0) {
            park_block_drop(m, block, size, hold);
            continue;
        }
        yfs_pages_put(m->framed, plan->plan.epoch, (uint32_t)v, FRAMED_NEED, block, (uint32_t)size,
                      hold);
    }
}

uint64_t yfs_unit_block_size(const yfs_mount *m, uint32_t unit)
{
    const sh_cut *cut = m->units.cut.first_unit ? &m->units.cut : NULL;
    sh_unit u = sh_unit_at(m->page_summary, cut, m->ix->num_pages, unit);
    return block_size(&u);
}



/* Decode the unit's page whole and frame the unit into its block (and the
 * page's others into the blocks that want them, or parked). */
static int frame_from_page(yfs_mount *m, yfs_plan *plan, uint32_t unit, const sh_unit *u,
                           yfs_hold *hold, yfs_unit *out, pq_error *err)
{
    const ix_page *p = &m->ix->pages[u->page];
    uint64_t recs_bytes = (uint64_t)(p->records ? p->records : 1) * sizeof(ix_record);
    yfs_budget_reserve(m->budget, recs_bytes, YFS_MEM_BUILD, YFS_DEMAND, hold);
    ix_record *recs = malloc(recs_bytes);
    uint8_t *raw = NULL;
    uint32_t len = 0;
    pq_page_values values;
    int rc = recs ? fetch(m, plan, u->page, hold, &raw, &len, err)
                  : pq_error_set(err, "out of memory for %u records", p->records);
    if (rc == 0) {
        rc = yfs_page_records(m, u->page, raw, len, hold, &values, recs, err);
        free(raw);
        yfs_budget_release(m->budget, len, YFS_MEM_RAW, hold);
    }
    if (rc == 0) {
        rc = frame_unit(&m->ix->framing, recs, u, out->block, err);
        const uint64_t *first = m->units.cut.first_unit;
        if (rc == 0 && first && first[u->page + 1] - first[u->page] > 1)
            park_others(m, plan, unit, u, recs, hold);
        yfs_page_values_drop(m, &values, hold);
    }
    free(recs);
    yfs_budget_release(m->budget, recs_bytes, YFS_MEM_BUILD, hold);
    return rc;
}

/* Streaming (ix_stream.h). A page whose whole decode would take more than
 * a quarter of the data budget is streamed instead: its bytes are read in
 * windows and its records framed as they come, so a build holds at most
 * ix_stream_cap for it (charged as it goes: stream_grows), not the page's
 * raw bytes, decompressed body, value slices and levels (600 MB for one of
 * DuckDB's pages of 15.6 M tokens). */
static uint64_t whole_decode_share(const yfs_mount *m)
{
    return yfs_mount_data_budget(m) / 4;
}

/* A cut page framed to more than this is streamed even when its units
 * could park (see units_park): its whole decode costs more than its stream.
 * DuckDB's text, pages of ~100 MB framed, one reader at mem=4G: 339 MB/s
 * decoded whole (each page decoded 2.8 times: park blocks are prefetch
 * reservations, refused while builds hold the decodes), 884 streamed. */
#define WHOLE_FRAMED_MAX (16u << 20)

/* Whether a whole decode of the page serves its units (and it is framed to
 * at most WHOLE_FRAMED_MAX): a page cut into several units has the others
 * framed from the same decode and parked in the framed store for the builds
 * that serve them next, and the plan interleaves the units of SH_OPEN_PAGES
 * pages at a time. A page whose framed bytes pass its share of that store
 * cannot park them all: its later units decode it again, page after page
 * (DuckDB's text at mem=1G, pages of ~100 MB framed against a 32 MB share,
 * one reader: each 50 MB page read about 80 times, 12 MB/s against 760 at
 * mem=512M). Such a page is better streamed, whatever its decode would take,
 * when the streams of SH_OPEN_PAGES pages can pause between its units (in
 * the store of paused streams, which has the framed store's room): a paused
 * stream goes on where it stopped. Else (mem=32M) streams closed for room
 * read their pages again from the start, more than the decodes cost. A
 * paused stream is weighed without its reads ahead, which go first when
 * room is short (yfs_streams.h) and exist only over slow storage: weighed
 * with 4 MiB of them, pages of 11 MB framed at mem=96M were decoded whole,
 * one reader read its files 27 times. */
#define PAUSED_STREAM_BYTES ((uint64_t)1 << 20) /* DuckDB's text 0.66 MB, tokens 1.1 */

static int units_park(const yfs_mount *m, uint32_t page)
{
    const uint64_t *first = m->units.cut.first_unit;
    uint64_t framed_store = yfs_mount_framed_budget(m), framed = m->ix->pages[page].framed;
    return !first || first[page + 1] - first[page] <= 1 ||
           (framed <= framed_store / SH_OPEN_PAGES && framed <= WHOLE_FRAMED_MAX) ||
           SH_OPEN_PAGES * PAUSED_STREAM_BYTES > framed_store;
}

/* Entries this small are decoded whole without weighing their headers: even
 * a page of 2-byte tokens decodes to less than the share. */
static int worth_weighing(const yfs_mount *m, uint32_t page)
{
    uint64_t share = whole_decode_share(m);
    const ix_page *p = &m->ix->pages[page];
    return p->length > share / 16 || p->framed > share / 16 || !units_park(m, page);
}

int yfs_page_read_here(const yfs_mount *m, const yfs_plan *plan, uint32_t page)
{
    const uint64_t *first = m->units.cut.first_unit;
    if (!first)
        return yfs_plan_read_here(plan, page); /* a unit a page */
    for (uint64_t u = first[page]; u < first[page + 1]; u++)
        if (yfs_plan_read_here(plan, u))
            return 1;
    return 0;
}

uint32_t yfs_unit_page(const yfs_mount *m, uint32_t unit)
{
    const sh_cut *cut = m->units.cut.first_unit ? &m->units.cut : NULL;
    return cut ? sh_unit_at(m->page_summary, cut, m->ix->num_pages, unit).page : unit;
}

int yfs_unit_likely_whole(const yfs_mount *m, uint32_t unit, uint32_t *page)
{
    *page = yfs_unit_page(m, unit);
    /* Well inside the share, by what the index knows without its headers
     * (pages weighed at the share's sixteenth would exclude pyarrow's 1 MiB
     * pages at mem=64M, though they are decoded whole). */
    const ix_page *p = &m->ix->pages[*page];
    uint64_t share = whole_decode_share(m);
    return p->length <= share / 4 && p->framed <= share / 2 && units_park(m, *page);
}

int yfs_unit_stream_busy(const yfs_mount *m, uint32_t unit)
{
    /* unit_get waits for streams only when pages are cut into units */
    return m->units.cut.first_unit && yfs_streams_busy(m->streams, yfs_unit_page(m, unit), unit);
}

/* The whole decode of the entry whose first page has header h: its raw
 * bytes and, scaled to all its pages, what decoding takes. */
static uint64_t whole_decode_bytes(const ix_index *ix, uint64_t page, const pq_page_header *h)
{
    const ix_page *p = &ix->pages[page];
    uint64_t first = h->header_len + (uint64_t)h->compressed_size;
    uint64_t pages_worth = first ? (p->length + first - 1) / first : 1;
    uint32_t width = pq_packed_width(&ix->chunks[ix_locate(ix, page)].desc);
    return p->length + yfs_decode_bound_page(h, width) * pages_worth;
}

/* A paused copy of a stream (ix_stream_fork), left at a unit it passes
 * over that no build takes: whoever frames that unit later continues the
 * copy instead of streaming the page again from its start. */
typedef struct stream_copy {
    int wanted;       /* take a copy at the unit's first record */
    ix_stream *s;     /* the copy taken, or NULL */
    uint64_t charged; /* YFS_MEM_DECODED reserved for it in the build's hold */
} stream_copy;

/* Copy s into c where it stands, if memory allows without waiting (a copy
 * saves reading, it is not needed) and s may fork (ix_stream.h). */
static void copy_stream(yfs_mount *m, ix_stream *s, yfs_hold *hold, stream_copy *c)
{
    uint64_t bytes = ix_stream_bytes(s) - ix_stream_sheddable(s); /* a copy's most */
    pq_error ignored;
    if (!ix_stream_pausable(s) ||
        yfs_budget_reserve(m->budget, bytes, YFS_MEM_DECODED, YFS_TRY, hold) < 0)
        return;
    if (!(c->s = ix_stream_fork(s, &ignored))) {
        yfs_budget_release(m->budget, bytes, YFS_MEM_DECODED, hold);
        return;
    }
    c->charged = bytes;
}

/* Pause the copies taken (copy[k] of unit from + k) with the page's
 * streams when keep, else close them. */
static void keep_copies(yfs_mount *m, uint32_t page, uint64_t from, uint32_t units,
                        stream_copy *copy, int keep, yfs_hold *hold)
{
    for (uint32_t k = 0; copy && k < units; k++) {
        if (!copy[k].s)
            continue;
        if (keep) {
            yfs_streams_put(m->streams, page, from + k, copy[k].s, NULL, copy[k].charged, hold);
            yfs_count(&m->stats.streams_forked, 1);
        } else {
            yfs_count_unused(&m->stats, ix_stream_close(copy[k].s));
            yfs_budget_release(m->budget, copy[k].charged, YFS_MEM_DECODED, hold);
        }
    }
}

/* Leave a mark (yfs_streams.h) at the unit s stands at, when it has none
 * and s may be marked here. */
static void note_mark(yfs_mount *m, const ix_stream *s, uint64_t unit)
{
    ix_stream_mark mark;
    if (!yfs_streams_marked(m->streams, unit) && ix_stream_mark_here(s, &mark))
        yfs_streams_mark(m->streams, unit, &mark);
}

/* Past the SNAPPY block a mark is in, by more than a block's compressed
 * size (64 KiB of values, a few bytes more at worst). */
#define AHEAD_STOP_SLACK ((uint64_t)128 << 10)

/* The file offset near which unit v's bytes begin in its page: its mark's
 * block, when a mark is kept, else where its framed bytes begin scaled to
 * the entry's bytes (a guess: the entry's records compress about alike). */
static uint64_t unit_begins(yfs_mount *m, uint64_t v, uint64_t first_unit)
{
    uint64_t at;
    if (yfs_streams_mark_offset(m->streams, v, &at))
        return at;
    const sh_cut *cut = &m->units.cut;
    uint32_t page = yfs_unit_page(m, (uint32_t)v);
    const ix_page *p = &m->ix->pages[page];
    uint64_t before = 0;
    for (uint64_t w = first_unit; w < v; w++)
        before += sh_unit_at(m->page_summary, cut, m->ix->num_pages, (uint32_t)w).bytes;
    return p->offset + (p->framed ? (uint64_t)((double)p->length * before / p->framed) : 0);
}

/* Where a stream framing `unit` of its page stops reading ahead
 * (ix_stream_ahead_until), moved on at each later unit it frames
 * (frame_stream): at the start of the first later unit no file here still
 * wants, where it pauses at the latest (unless a running build claims that
 * unit meanwhile); 0, no stop, when every later unit of the page is
 * wanted: the stream goes through them all, and its reads ahead deepen as
 * its framing needs (one reader of DuckDB's text at 50 ms a read lost a
 * tenth with a stop past the next unit). On a node that reads one part of
 * 8 the next unit is another part's: without a stop a stream resumed at its
 * unit read 4 MiB ahead for 1.3 MB of DuckDB's text, and one that read on
 * past its stop read ahead to its entry's end (bench/results/node_parts.md). */
static uint64_t ahead_stop(yfs_mount *m, const yfs_plan *plan, uint64_t unit,
                           uint64_t first_unit, uint64_t end_unit)
{
    for (uint64_t v = unit + 1; v < end_unit; v++)
        if (!still_wanted(plan, v))
            return unit_begins(m, v, first_unit) + AHEAD_STOP_SLACK;
    return 0;
}

/* Frame `units` units of the page (whose first unit is first_unit) from
 * the stream s, positioned at the first record of unit `from`, into the
 * blocks given (block[k] for unit from + k; NULL: passed over), leaving a
 * copy of s at each unit whose
 * copy[k] is wanted; from the build's unit `unit` on, the reads ahead go
 * on to each unit's stop (ahead_stop). Stops after the last unit that has
 * a block, and returns how many units it went through, or -1. */
static int64_t frame_stream(yfs_mount *m, const yfs_plan *plan, ix_stream *s, uint64_t unit,
                            uint64_t first_unit, uint64_t from, uint32_t units, uint8_t **block,
                            stream_copy *copy, yfs_hold *hold, pq_error *err)
{
    const sh_cut *cut = m->units.cut.first_unit ? &m->units.cut : NULL;
    uint32_t last = units;
    while (last > 0 && !block[last - 1])
        last--;
    ix_others_window *window = ix_framing_window(&m->ix->framing);
    int rc = 1;
    for (uint32_t k = 0; rc > 0 && k < last; k++) {
        sh_unit u = sh_unit_at(m->page_summary, cut, m->ix->num_pages, (uint32_t)(from + k));
        unit_writer w = block[k] ? writer_for(&m->ix->framing, &u, block[k]) : (unit_writer){ 0 };
        w.bytes.window = window;
        if (copy[k].wanted)
            copy_stream(m, s, hold, &copy[k]);
        note_mark(m, s, from + k);
        if (from + k > unit)
            ix_stream_ahead_until(s, ahead_stop(m, plan, from + k, first_unit, from + units));
        for (uint32_t r = 0; rc > 0 && r < u.records; r++) {
            ix_record rec;
            rc = ix_stream_next(s, &rec, err);
            if (rc == 0)
                rc = pq_error_set(err, "fewer records than indexed (file changed?)");
            if (rc > 0 && block[k] && writer_put(&w, &rec, err) < 0)
                rc = -1;
        }
        if (rc > 0 && block[k] && writer_done(&w, err) < 0)
            rc = -1;
    }
    ix_others_window_free(window);
    return rc < 0 ? -1 : (int64_t)last;
}

/* A stream positioned at unit `from` of the page, with what it holds. */
typedef struct page_stream {
    ix_stream *s;
    uint64_t from;
    void *dict;        /* the dictionary handle it took, or NULL */
    uint64_t charged;  /* YFS_MEM_DECODED reserved for it in the build's hold */
    uint64_t read;     /* bytes it read for this build */
    yfs_dict_source src;
    ix_dict_source dicts;
    yfs_budget *budget;
    yfs_hold *hold;
} page_stream;

/* ix_stream_grow_fn. A stream is charged at what it commits to, and grows
 * its charge as it goes (at a page, a longer header, a longer row), not at
 * its cap: a paused stream of DuckDB's tokens commits about 1 MiB where its
 * cap is 12, and with 8 readers at mem=256M charging the caps closed 70-90
 * paused streams an epoch for room, each read again from its page's start
 * (bench/results/stream_charge.md). Reads ahead (4 to 16 MiB over slow storage)
 * are taken only when they fit now: a stream refused them reads on
 * directly, slower, instead of waiting for room. The wait here may come
 * while the stream frames units other builds wait for (yfs_wants.h): their
 * waits count as blocked for the accountant, so it lets this one through
 * over the limit when nothing else could make room. */
static int stream_grows(void *ctx, size_t more, int may_refuse, pq_error *err)
{
    page_stream *ps = ctx;
    (void)err; /* a demand reservation is never refused; reads ahead go without */
    if (yfs_budget_reserve(ps->budget, more, YFS_MEM_DECODED, may_refuse ? YFS_TRY : YFS_DEMAND,
                           ps->hold) < 0)
        return -1;
    ps->charged += more;
    return 0;
}

/* The first of the units [from, unit) a running build waits for, else
 * unit. A stream paused at `from` would frame the units before it for
 * nobody now on its way (parking them as room allows), and would no longer
 * be there for the builds that need them later. */
static uint64_t first_waited(yfs_mount *m, uint64_t from, uint64_t unit)
{
    for (uint64_t v = from; v < unit; v++)
        if (yfs_wants_waiting(m->wants, (uint32_t)v))
            return v;
    return unit;
}

/* When the mark of unit `at` of the page is kept: what yfs_streams_take
 * handed over in ps goes back, and ps is a stream resumed from the mark
 * (yfs_streams.h), positioned at `at`. 1 then, 0 when no mark is kept (ps
 * untouched), -1 when the resumed stream failed. */
static int stream_from_mark(yfs_mount *m, uint32_t page, uint64_t at, uint64_t stop,
                            yfs_hold *hold, page_stream *ps, pq_error *err)
{
    ix_stream_mark mark;
    if (!yfs_streams_take_mark(m->streams, page, at, &mark))
        return 0;
    if (ps->s) /* paused again where it was, for another unit */
        yfs_streams_put(m->streams, page, ps->from, ps->s, ps->dict, ps->charged, hold);
    yfs_streams_end(m->streams, page, ps->from);
    ps->from = at; /* charged as it goes from nothing, as a new stream */
    ps->dict = NULL;
    ps->charged = 0;
    ix_stream_opts opts = { .grow = stream_grows, .grow_ctx = ps,
                            .ahead = yfs_latency_slow(&m->read_latency), .ahead_until = stop };
    ps->s = ix_stream_resume(m->ix, page, &ps->dicts, &ps->dict, &opts, &mark, &ps->read, err);
    /* the read of the page's header, timed: a node whose units all resume
     * from the page pass's marks opens no page from its start, and would
     * never learn that its storage is slow (reads ahead, the depth of
     * prefetches and the threads of builds follow it) */
    if (ps->s && ix_stream_first_read_ns(ps->s))
        yfs_latency_note(&m->read_latency, ix_stream_first_read_ns(ps->s));
    ix_stream_mark_free(&mark);
    if (!ps->s) {
        yfs_streams_end(m->streams, page, at);
        return -1;
    }
    yfs_count(&m->stats.streams_from_marks, 1);
    return 1;
}

/* The stream of the page paused at the latest unit up to `unit`, or a new
 * one over the page (positioned at its first unit); but a stream resumed
 * from a mark (yfs_streams.h) where that one would first pass units no
 * running build waits for (first_waited: the paused stream stays where
 * their builds will want it): the mark of the first unit on the way that a
 * build waits for, or of the unit itself, or, instead of a new stream, the
 * unit's mark. A node reading one part of 8 of small SNAPPY pages read 0.21
 * to 0.65 of the files for its part, streams paused at a unit it had framed
 * going on through twenty units of other parts to a later unit of its own
 * because a build waited for one on the way. Not for lists: a list's resume
 * reads its page's levels again (pq_stream.h), and a node's part of
 * DuckDB's tokens fetched 8-25% more so. Its reads ahead stop where it is
 * likely to pause (ahead_stop). Returns 1 when the page is
 * better decoded whole after all (its first header says it is small
 * enough), 0, or -1. */
static int stream_for(yfs_mount *m, yfs_plan *plan, const sh_unit *u, uint32_t unit,
                      uint64_t first_unit, uint64_t end_unit, yfs_hold *hold, page_stream *ps,
                      pq_error *err)
{
    uint64_t stop = ahead_stop(m, plan, unit, first_unit, end_unit);
    ps->src = (yfs_dict_source){ m->dicts, hold };
    ps->dicts = yfs_dicts_source(&ps->src);
    ps->budget = m->budget;
    ps->hold = hold;
    ps->s = yfs_streams_take(m->streams, u->page, unit, first_unit, hold, &ps->from, &ps->dict,
                             &ps->charged);
    if (unit > ps->from) {
        uint64_t at = first_waited(m, ps->from, unit);
        if (at < unit && m->ix->framing.shape.max_rep > 0)
            at = ps->from; /* a list's resume reads its page's levels again */
        int marked = at > ps->from ? stream_from_mark(m, u->page, at, stop, hold, ps, err) : 0;
        if (marked == 0 && !ps->s && at != unit)
            marked = stream_from_mark(m, u->page, unit, stop, hold, ps, err);
        if (marked != 0)
            return marked < 0 ? -1 : 0;
    }
    if (ps->s) { /* charged for what it holds: what it commits to is reserved */
        ix_stream_rebind(ps->s, &ps->dicts, &ps->dict, &ps->read);
        uint64_t committed = ix_stream_committed(ps->s);
        if (committed > ps->charged) {
            yfs_budget_reserve(m->budget, committed - ps->charged, YFS_MEM_DECODED, YFS_DEMAND,
                               hold);
            ps->charged = committed;
        }
        ix_stream_charge(ps->s, stream_grows, ps, ps->charged);
        ix_stream_ahead_until(ps->s, stop);
        return 0;
    }
    /* The page's stream from its first unit is ours to open (builds that
     * need its later units wait for it meanwhile). A page that cannot park
     * its units is streamed whatever its first header says (below): over
     * storage known to be slow, its stream opens with its reads ahead from
     * the entry's start, the header in their first window, one round trip
     * where a first read of the header took two (one reader of DuckDB's
     * text at 50 ms a read: its first byte 45 ms sooner, 697 MB/s against
     * 634, bench/results/streams_c_ceiling.md). */
    if (yfs_latency_slow(&m->read_latency) && !units_park(m, u->page)) {
        ix_stream_opts opts = { .grow = stream_grows, .grow_ctx = ps, .ahead = 1,
                                .ahead_until = stop };
        ps->s = ix_stream_open(m->ix, u->page, &ps->dicts, &ps->dict, &opts, &ps->read, err);
        if (ps->s)
            return 0;
        yfs_streams_end(m->streams, u->page, first_unit);
        return pq_stream_whole_instead(err) ? 1 : -1;
    }
    pq_page_header h;
    ix_entry_head head = { 0 };
    uint64_t start = yfs_now_ns();
    int peeked = ix_entry_first_header(m->ix, u->page, &h, &head, &ps->read, err);
    yfs_latency_note(&m->read_latency, yfs_now_ns() - start); /* a storage read, timed */
    int rc = peeked < 0 ? (pq_stream_whole_instead(err) ? 1 : -1)
                        : whole_decode_bytes(m->ix, u->page, &h) <= whole_decode_share(m) &&
                              units_park(m, u->page);
    if (rc == 0) {
        /* over storage known to be slow, reading ahead from the start
         * saves the round trip of a first read that would decide it */
        ix_stream_opts opts = { .grow = stream_grows, .grow_ctx = ps,
                                .ahead = yfs_latency_slow(&m->read_latency), .head = &head,
                                .ahead_until = stop };
        ps->s = ix_stream_open(m->ix, u->page, &ps->dicts, &ps->dict, &opts, &ps->read, err);
        if (!ps->s)
            rc = -1; /* what it was granted goes in stream_done */
    }
    ix_entry_head_free(&head);
    if (rc != 0)
        yfs_streams_end(m->streams, u->page, first_unit);
    return rc;
}

/* Done with the stream: pause it at unit `next` of the page when it may be
 * (pause), else close it, giving back its dictionary and charge. */
static void stream_done(yfs_mount *m, uint32_t page, page_stream *ps, int pause, uint64_t next,
                        yfs_hold *hold)
{
    yfs_count(&m->stats.bytes_read, ps->read);
    if (pause && ps->s && ix_stream_pausable(ps->s)) {
        ix_stream_charge(ps->s, NULL, NULL, 0); /* whoever continues it charges it anew */
        yfs_streams_put(m->streams, page, next, ps->s, ps->dict, ps->charged, hold);
    } else {
        yfs_count_unused(&m->stats, ix_stream_close(ps->s));
        if (ps->dict)
            yfs_dicts_put(m->dicts, ps->dict);
        yfs_budget_release(m->budget, ps->charged, YFS_MEM_DECODED, hold);
    }
    if (ps->s)
        yfs_streams_end(m->streams, page, ps->from);
}

/* Frame the unit from its page's stream into its block, with the page's
 * other units the stream passes: into the blocks of the builds that want
 * them (yfs_wants.h). The units it passes over before the unit (builds
 * running at once ask for a page's units out of order) are parked as far as
 * a page's share of the framed store and the room left allow (YFS_TRY: a
 * build needs each of them soon). At the first of each run of units it
 * passes over and keeps nowhere, it leaves a paused copy of itself
 * (copy_stream): the build that needs them later reads on from there,
 * where it would otherwise stream the page again from its start (25 MB for
 * DuckDB's pages; 8 parts of DuckDB's text at 50 ms a read and mem=256M
 * lost 100-170 units an epoch so, each opening of a page read 2.7 x its
 * bytes: bench/results/stream_copies.md).
 * Past the unit, the stream is paused at the next unit nobody waits for:
 * parking units ahead instead cost DuckDB's text 1.45 x its bytes read at
 * mem=256M, one reader (parked units dropped for room stream their page
 * again), and pausing costs a stream's few hundred KiB. Returns 1 when the
 * page is better decoded whole, 2 when another framed the unit meanwhile, 0,
 * or -1. */
static int frame_streamed(yfs_mount *m, yfs_plan *plan, uint32_t unit, const sh_unit *u,
                          yfs_hold *hold, yfs_unit *out, pq_error *err)
{
    const sh_cut *cut = m->units.cut.first_unit ? &m->units.cut : NULL;
    uint64_t first_unit = cut ? cut->first_unit[u->page] : unit;
    uint64_t end_unit = cut ? cut->first_unit[u->page + 1] : unit + 1;
    page_stream ps = { 0 };
    int rc = stream_for(m, plan, u, unit, first_unit, end_unit, hold, &ps, err);
    /* with the stream in hand, the unit is ours to frame, unless another
     * build's decode or stream framed it meanwhile */
    if (rc == 0 && yfs_wants_begin(m->wants, unit, out, hold)) {
        stream_done(m, u->page, &ps, 1, ps.from, hold);
        return 2;
    }
    int begun = rc == 0;
    if (rc == 0 && !out->block)
        rc = unit_block(u, out, err);
    uint32_t units = rc == 0 ? (uint32_t)(end_unit - ps.from) : 0;
    uint8_t **block = rc == 0 ? calloc(units, sizeof *block) : NULL;
    yfs_unit **wanted = rc == 0 ? calloc(units, sizeof *wanted) : NULL;
    stream_copy *copy = rc == 0 ? calloc(units, sizeof *copy) : NULL;
    if (rc == 0 && (!block || !wanted || !copy))
        rc = pq_error_set(err, "out of memory for %u units", units);
    uint64_t parked = 0, share = yfs_mount_framed_budget(m) / SH_OPEN_PAGES;
    int lost = 0; /* the unit before was passed over and kept nowhere */
    for (uint32_t k = 0; rc == 0 && k < units; k++) {
        uint64_t v = ps.from + k;
        sh_unit uv = sh_unit_at(m->page_summary, cut, m->ix->num_pages, (uint32_t)v);
        uint64_t size = block_size(&uv);
        if (v == unit) {
            block[k] = out->block;
        } else if ((wanted[k] = claim_wanted(m, (uint32_t)v, &uv))) {
            block[k] = wanted[k]->block;
        } else if (v > unit) {
            break; /* the stream pauses here */
        } else if (still_wanted(plan, v) && parked + size <= share &&
                   (block[k] = park_block_new(m, size, YFS_TRY, hold))) {
            parked += size;
        } else if (still_wanted(plan, v)) { /* kept nowhere: one copy for a run */
            copy[k].wanted = !lost && !yfs_streams_marked(m->streams, v);
            lost = 1;
            continue;
        } else {
            continue; /* built, or read by no file here: neither ends nor starts a run */
        }
        lost = 0;
    }
    int64_t through = rc == 0 ? frame_stream(m, plan, ps.s, unit, first_unit, ps.from, units, block,
                                           copy, hold, err)
                              : -1;
    if (rc == 0 && through < 0)
        rc = -1;
    if (rc == 0 && through == units) { /* the page's last unit: the entry ends */
        ix_record rec;
        int end = ix_stream_next(ps.s, &rec, err);
        rc = end == 1 ? pq_error_set(err, "more records than indexed (file changed?)") : end;
    }
    int pause = rc == 0 && through < units;
    if (pause && !ix_stream_pausable(ps.s))
        rc = ix_stream_finish(ps.s, err);
    if (pause && rc == 0)
        note_mark(m, ps.s, ps.from + (uint64_t)through);
    /* before the stream is let go: a build waiting for it (yfs_streams_wait)
     * looks for a paused stream at or before its unit once it is */
    keep_copies(m, u->page, ps.from, units, copy, rc == 0, hold);
    stream_done(m, u->page, &ps, pause, ps.from + (uint64_t)through, hold);
    if (rc == 0 && ps.from == first_unit)
        yfs_count(&m->stats.pages_streamed, 1);
    if (rc == 0)
        yfs_count(&m->stats.page_bytes, ps.read);
    for (uint32_t k = 0; block && k < units; k++) {
        uint64_t v = ps.from + k;
        if (!block[k] || v == unit)
            continue;
        sh_unit uv = sh_unit_at(m->page_summary, cut, m->ix->num_pages, (uint32_t)v);
        uint64_t size = block_size(&uv);
        if (wanted[k])
            yfs_wants_end(m->wants, (uint32_t)v, wanted[k], rc == 0);
        else if (rc == 0)
            yfs_pages_put(m->framed, plan->plan.epoch, (uint32_t)v, FRAMED_NEED, block[k],
                          (uint32_t)size, hold);
        else
            park_block_drop(m, block[k], size, hold);
    }
    free(block);
    free(wanted);
    free(copy);
    if (begun)
        yfs_wants_end(m->wants, unit, out, rc == 0);
    return rc;
}

static int unit_get(yfs_mount *m, yfs_plan *plan, uint32_t unit, yfs_hold *hold, yfs_unit *out,
                    pq_error *err)
{
    const yfs_unit_map *map = &m->units;
    sh_unit u = sh_unit_at(m->page_summary, map->cut.first_unit ? &map->cut : NULL,
                           m->ix->num_pages, unit);
    int weigh = worth_weighing(m, u.page);
    do {
        if (yfs_wants_begin(m->wants, unit, out, hold))
            return 0; /* framed into out by another's decode or stream */
        uint32_t len;
        uint8_t *block = map->cut.first_unit
                             ? yfs_pages_take(m->framed, plan->plan.epoch, unit, hold, &len)
                             : NULL;
        int ok = block && len == block_size(&u); /* a parked block is the unit's size */
        if (block) /* it comes with its charge: the caller's reservation covers it */
            yfs_budget_release(m->budget, len, YFS_MEM_RAW, hold);
        if (ok && !out->block) {
            unit_from_block(out, &u, block);
        } else {
            if (ok)
                memcpy(out->block, block, len);
            free(block);
        }
        yfs_wants_end(m->wants, unit, out, ok);
        if (ok)
            return 0;
        /* a build streaming the page may frame the unit, park it or pause at it */
    } while (weigh && map->cut.first_unit && yfs_streams_wait(m->streams, u.page, unit, hold));
    if (weigh) {
        int rc = frame_streamed(m, plan, unit, &u, hold, out, err);
        if (rc < 0 && pq_stream_resume_instead(err)) {
            /* a stream resumed from a mark met SNAPPY copies that cross its
             * blocks: the page's marks and paused streams are forgotten and
             * the unit streamed from the page's start (marks left on the
             * page again fail the same way: only the work differs) */
            const uint64_t *first = map->cut.first_unit;
            yfs_streams_forget_page(m->streams, u.page, first ? first[u.page] : unit,
                                    first ? first[u.page + 1] : unit + 1);
            rc = frame_streamed(m, plan, unit, &u, hold, out, err);
        }
        if (rc == 2)
            return 0;
        if (rc <= 0 && (rc == 0 || !pq_stream_whole_instead(err)))
            return rc;
    }
    if (yfs_wants_begin(m->wants, unit, out, hold))
        return 0;
    int rc = out->block ? 0 : unit_block(&u, out, err);
    if (rc == 0)
        rc = frame_from_page(m, plan, unit, &u, hold, out, err);
    yfs_wants_end(m->wants, unit, out, rc == 0);
    return rc;
}

int yfs_unit_get(yfs_mount *m, yfs_plan *plan, uint32_t unit, yfs_hold *hold, yfs_unit *out,
                 pq_error *err)
{
    int rc = unit_get(m, plan, unit, hold, out, err);
    if (rc == 0)
        yfs_plan_mark_built(plan, unit);
    return rc;
}

void yfs_unit_drop(yfs_unit *u)
{
    if (u->block)
        block_free(u->block, u->records * sizeof(uint64_t) + u->size, u->mapped);
    memset(u, 0, sizeof *u);
}

void yfs_units_prepare(yfs_mount *m, yfs_plan *plan, const sh_segment *seg, yfs_unit *units)
{
    const sh_cut *cut = m->units.cut.first_unit ? &m->units.cut : NULL;
    for (uint32_t i = 0; cut && i < seg->units; i++) {
        uint32_t unit = plan->plan.unit_order[seg->first + i];
        sh_unit u = sh_unit_at(m->page_summary, cut, m->ix->num_pages, unit);
        if (cut->first_unit[u.page + 1] - cut->first_unit[u.page] > 1)
            yfs_wants_add(m->wants, unit, &units[i]); /* else only this build frames it */
    }
}

void yfs_units_finish(yfs_mount *m, yfs_plan *plan, const sh_segment *seg, yfs_hold *hold,
                      yfs_unit *units)
{
    if (!m->units.cut.first_unit)
        return;
    for (uint32_t i = 0; i < seg->units; i++)
        yfs_wants_remove(m->wants, plan->plan.unit_order[seg->first + i], &units[i], hold);
}
