/* Fetching pages (yfs_loads.h): through chunk loads or alone, every page
 * comes back as the bytes on disk, each raw page charged to its caller at
 * its length, parked pages all taken in the end; when the accountant
 * refuses a chunk's memory the pages are read alone, same bytes. Also: the
 * decode bound of every page (yfs_decode_bound) covers its decoded size. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ix_read.h"
#include "yfs_budget.h"
#include "yfs_loads.h"
#include "yfs_mount.h"
#include "yfs_pages.h"
#include "yfs_plans.h"
#include "yfs_records.h"
#include "sh_deal.h"
#include "tfs.h"

static yfs_budget_snapshot snap(yfs_mount *m)
{
    yfs_budget_snapshot s;
    yfs_budget_snapshot_get(m->budget, &s);
    return s;
}

/* The page's bytes as stored: read from its file by path, not by the index. */
static uint8_t *on_disk(const yfs_mount *m, uint32_t page)
{
    const ix_index *ix = m->ix;
    const ix_page *p = &ix->pages[page];
    const char *name = ix->files[ix->chunks[ix_locate(ix, page)].file].name;
    char path[4096];
    snprintf(path, sizeof path, "%s%s", name[0] == '/' ? "" : TFS_SAMPLE "/", name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    uint8_t *buf = malloc(p->length);
    cr_assert_eq(fseek(f, (long)p->offset, SEEK_SET), 0);
    cr_assert_eq(fread(buf, 1, p->length, f), p->length);
    fclose(f);
    return buf;
}

/* Fetch every page of epoch 0 in plan order; returns chunk loads run. */
static uint64_t fetch_all(yfs_mount *m)
{
    yfs_plan *plan;
    pq_error err;
    cr_assert_eq(yfs_plans_get(m->plans, 0, &plan, &err), 0);
    yfs_hold h = { 0 };
    yfs_hold_enter(m->budget, &h);
    for (uint64_t pos = 0; pos < plan->plan.num_pages; pos++) {
        uint8_t *raw;
        uint32_t len;
        cr_assert_eq(yfs_page_fetch(m, plan, pos, &h, &raw, &len, &err), 0, "%s", err.msg);
        uint32_t page = plan->plan.order[pos];
        cr_assert_eq(len, m->ix->pages[page].length);
        cr_assert_eq(snap(m).bytes[YFS_MEM_RAW], len, "the raw page is not charged at its length");
        cr_assert_eq(h.bytes, len);
        uint8_t *want = on_disk(m, page);
        cr_assert_eq(memcmp(raw, want, len), 0, "page %u: other bytes than on disk", page);
        free(want);
        free(raw);
        yfs_budget_release(m->budget, len, YFS_MEM_RAW, &h);
    }
    yfs_hold_leave(m->budget, &h);
    cr_assert_eq(snap(m).bytes[YFS_MEM_PARKED], 0, "parked pages never taken");
    cr_assert_eq(snap(m).bytes[YFS_MEM_CHUNKS], 0);
    yfs_plans_put(m->plans, plan);
    return yfs_counter(&m->stats.chunk_loads);
}

Test(loads, chunk_loads_bring_the_bytes_on_disk)
{
    yfs_mount *m = tfs_open_sample("cache=none,chunk=32K", NULL, 0);
    cr_assert_gt(fetch_all(m), 0, "no chunk was loaded");
    cr_assert_gt(yfs_counter(&m->stats.pages_from_chunks), 0);
    cr_assert_gt(snap(m).peak_bytes[YFS_MEM_CHUNKS], 0);
    yfs_mount_close(m);
}

Test(loads, refused_chunk_memory_means_pages_read_alone)
{
    /* memory that stays (charged as a plan) leaves room for no chunk: every
     * load is refused, and pages are read alone, over the limit (nothing
     * else could make room) */
    yfs_mount *m = tfs_open_sample("cache=none,chunk=32K", NULL, 0);
    uint64_t filler = yfs_budget_limit(m->budget) - 1000;
    yfs_budget_reserve(m->budget, filler, YFS_MEM_PLANS, YFS_FORCE, NULL);
    cr_assert_eq(fetch_all(m), 0);
    cr_assert_eq(yfs_counter(&m->stats.pages_read_alone), m->ix->num_pages);
    cr_assert_gt(snap(m).prefetch_refused, 0);
    yfs_budget_release(m->budget, filler, YFS_MEM_PLANS, NULL);
    yfs_mount_close(m);
}

/* A file of many small pages (pages of 7 level entries), in chunks of 4K. */
#define SMALL_CHUNKS YFS_SOURCE_DIR "/tests/data/stream/legacy_two_level_7.parquet"
#define SMALL_CHUNKS_OPTIONS "cache=none,chunk=4K,column=ids"

/* Fetch the pages of part `part` of `parts` of epoch 0, noted as the part a
 * file opened on the mount reads (yfs_plan_note_part), in part order: the
 * bytes on disk. Returns the bytes the mount read from storage. */
static uint64_t fetch_part(yfs_mount *m, uint64_t part, uint64_t parts)
{
    yfs_plan *plan;
    pq_error err;
    cr_assert_eq(yfs_plans_get(m->plans, 0, &plan, &err), 0);
    sh_pieces pieces;
    sh_part pt;
    cr_assert_eq(sh_deal_part(&plan->plan, part, parts, SH_EVEN_OFF, &pieces), 0);
    cr_assert_eq(sh_part_build(&plan->plan, pieces.v, pieces.n, NULL, NULL, &pt), 0);
    yfs_plan_note_part(plan, &pt);
    yfs_hold h = { 0 };
    yfs_hold_enter(m->budget, &h);
    for (uint64_t k = 0; k < pt.count; k++) {
        const sh_segment *seg = &plan->plan.segments[pt.pieces[k].segment];
        for (uint32_t i = 0; i < seg->units; i++) {
            uint32_t page = plan->plan.unit_order[seg->first + i];
            uint8_t *raw;
            uint32_t len;
            cr_assert_eq(yfs_page_fetch(m, plan, plan->plan.schedule.position[page], &h, &raw,
                                        &len, &err), 0, "%s", err.msg);
            uint8_t *want = on_disk(m, page);
            cr_assert_eq(len, m->ix->pages[page].length);
            cr_assert_eq(memcmp(raw, want, len), 0, "page %u: other bytes than on disk", page);
            free(want);
            free(raw);
            yfs_budget_release(m->budget, len, YFS_MEM_RAW, &h);
        }
    }
    yfs_hold_leave(m->budget, &h);
    sh_part_free(&pt);
    yfs_plans_put(m->plans, plan);
    return yfs_counter(&m->stats.bytes_read);
}

/* A mount whose files read one part of 8 reads no chunk whose pages they
 * read hold less than half its bytes (it reads the runs of those pages
 * instead) and parks no page they do not read: it fetches about its share
 * (a node of a cluster read all the files for its eighth), the bytes on
 * disk. The whole epoch as one part loads chunks as before. */
Test(loads, a_load_brings_only_the_pages_the_files_open_here_read)
{
    yfs_mount *m = tfs_open(SMALL_CHUNKS, SMALL_CHUNKS_OPTIONS ",buffer=5", NULL, 0);
    uint64_t before = yfs_counter(&m->stats.bytes_read); /* the mount's own reads */
    uint64_t read = fetch_part(m, 3, 8) - before;
    uint64_t pages = 0;
    for (uint64_t q = 0; q < m->ix->num_pages; q++)
        pages += m->ix->pages[q].length;
    cr_assert_lt(read, pages / 4, "read %llu of %llu page bytes for one part of 8",
                 (unsigned long long)read, (unsigned long long)pages);
    cr_assert_eq(snap(m).bytes[YFS_MEM_PARKED], 0, "other parts' pages parked");
    yfs_mount_close(m);
    m = tfs_open(SMALL_CHUNKS, SMALL_CHUNKS_OPTIONS ",buffer=5", NULL, 0);
    fetch_part(m, 0, 1);
    cr_assert_gt(yfs_counter(&m->stats.chunk_loads), 0, "the whole epoch loads chunks");
    yfs_mount_close(m);
}

/* SMALL_CHUNKS, and its epoch 0's plan (*plan, referenced). */
static yfs_mount *open_small_chunks(yfs_plan **plan)
{
    yfs_mount *m = tfs_open(SMALL_CHUNKS, SMALL_CHUNKS_OPTIONS, NULL, 0);
    pq_error err;
    cr_assert_eq(yfs_plans_get(m->plans, 0, plan, &err), 0, "%s", err.msg);
    return m;
}

/* Leave the test's hold h (every charge released), and close the plan
 * and the mount of open_small_chunks. */
static void close_small_chunks(yfs_mount *m, yfs_plan *plan, yfs_hold *h)
{
    cr_assert_eq(h->bytes, 0, "a charge not released");
    yfs_hold_leave(m->budget, h);
    yfs_plans_put(m->plans, plan);
    yfs_mount_close(m);
}

/* A load the engine runs for a build under way (yfs_loads_run with the
 * build's position) whose chunk memory refuses, reserved as a prefetch:
 * the build's page is read alone at once, a try reservation (the build
 * needs it anyway), and parked for it; its load runs later for the other
 * pages and does not park that page again. Before, the load was only
 * refused, and every build so refused read its pages one round trip after
 * another (8 parts of 64 KiB pages at 50 ms a read and mem=256M: 0.3 x the
 * figure without latency). Non-urgent, the same page is a prefetch: refused. */
Test(loads, a_build_refused_its_chunk_gets_its_page_alone_at_once)
{
    yfs_plan *plan;
    yfs_mount *m = open_small_chunks(&plan);
    pq_error err;
    const sh_schedule *sched = &plan->plan.schedule;
    uint64_t pos = 0; /* a position whose load brings other pages too */
    while (pos < plan->plan.num_pages && sched->loads[sched->source[pos]].pages < 2)
        pos++;
    cr_assert_lt(pos, plan->plan.num_pages, "no load of several pages");
    uint32_t load = sched->source[pos], page = plan->plan.order[pos];
    /* an eighth of the limit free: no prefetch fits, a page does */
    uint64_t filler = yfs_budget_limit(m->budget) - yfs_budget_limit(m->budget) / 8;
    yfs_budget_reserve(m->budget, filler, YFS_MEM_PLANS, YFS_FORCE, NULL);
    yfs_hold h = { 0 };
    yfs_hold_enter(m->budget, &h);

    cr_assert_eq(yfs_loads_queue(&plan->loads, load), 1);
    cr_assert_eq(yfs_loads_run(m, plan, load, pos, 0, &h), -1,
                 "a prefetch's page was read although memory refused it");
    cr_assert_eq(yfs_counter(&m->stats.pages_read_alone), 0);

    yfs_loads_want(&plan->loads, pos);
    cr_assert_eq(yfs_loads_queue(&plan->loads, load), 1, "the refused load is not free again");
    cr_assert_eq(yfs_loads_run(m, plan, load, pos, 1, &h), 1);
    cr_assert_eq(yfs_counter(&m->stats.chunk_loads), 0);
    cr_assert_eq(yfs_counter(&m->stats.pages_read_alone), 1);
    cr_assert(yfs_pages_holds(m->loaded, 0, page), "the build's page is not parked");
    yfs_budget_release(m->budget, filler, YFS_MEM_PLANS, NULL);

    /* the build takes it from the store: no other read */
    uint8_t *raw, *want = on_disk(m, page);
    uint32_t len;
    cr_assert_eq(yfs_page_fetch(m, plan, pos, &h, &raw, &len, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(yfs_counter(&m->stats.pages_read_alone), 1);
    cr_assert_eq(yfs_counter(&m->stats.chunk_loads), 0);
    cr_assert_eq(memcmp(raw, want, len), 0, "other bytes than on disk");
    free(raw);
    free(want);
    yfs_budget_release(m->budget, len, YFS_MEM_RAW, &h);

    /* the load runs for the other pages, and parks them but not that one */
    cr_assert_eq(yfs_loads_queue(&plan->loads, load), 1);
    cr_assert_eq(yfs_loads_run(m, plan, load, UINT64_MAX, 0, &h), 1);
    cr_assert_eq(yfs_counter(&m->stats.chunk_loads), 1);
    cr_assert_not(yfs_pages_holds(m->loaded, 0, page), "the page was parked twice");
    for (uint32_t q = sched->loads[load].first_page;
         q < sched->loads[load].first_page + sched->loads[load].pages; q++)
        if (q != page && sched->source[sched->position[q]] == load)
            cr_assert(yfs_pages_holds(m->loaded, 0, q), "page %u of the load not parked", q);
    close_small_chunks(m, plan, &h);
}

/* A build's refused load brought the page it was queued for alone; the
 * load's other pages the build wants are queued to be read alone, each
 * once, and run; a page the build fetches itself meanwhile is not read
 * again by the engine. */
Test(loads, a_refused_loads_other_wanted_pages_are_queued_alone)
{
    yfs_plan *plan;
    yfs_mount *m = open_small_chunks(&plan);
    pq_error err;
    const sh_schedule *sched = &plan->plan.schedule;
    uint64_t pos = 0; /* a position whose load serves three pages or more */
    uint64_t others[8];
    size_t n_others = 0;
    for (; pos < plan->plan.num_pages && n_others < 2; pos++) {
        const sh_load *ld = &sched->loads[sched->source[pos]];
        n_others = 0;
        for (uint32_t q = ld->first_page; q < ld->first_page + ld->pages && n_others < 8; q++) {
            uint32_t at = sched->position[q];
            if (at != pos && sched->source[at] == sched->source[pos])
                others[n_others++] = at;
        }
    }
    cr_assert_geq(n_others, 2, "no load serving three pages");
    pos--;
    uint32_t load = sched->source[pos];
    uint64_t filler = yfs_budget_limit(m->budget) - yfs_budget_limit(m->budget) / 8;
    yfs_budget_reserve(m->budget, filler, YFS_MEM_PLANS, YFS_FORCE, NULL);
    yfs_hold h = { 0 };
    yfs_hold_enter(m->budget, &h);

    uint64_t got[8];
    yfs_loads_want(&plan->loads, pos);
    yfs_loads_want(&plan->loads, others[0]);
    yfs_loads_want(&plan->loads, others[1]);
    cr_assert_eq(yfs_loads_queue(&plan->loads, load), 1);
    cr_assert_eq(yfs_loads_queue_wanted(&plan->plan, &plan->loads, load, got, 8), 0,
                 "queued alone while the load is queued");
    cr_assert_eq(yfs_loads_run(m, plan, load, pos, 1, &h), 1);
    cr_assert_eq(yfs_counter(&m->stats.chunk_loads), 0, "memory did not refuse the load");
    cr_assert_eq(yfs_loads_queue_wanted(&plan->plan, &plan->loads, load, got, 8), 2,
                 "not the two other wanted pages");
    cr_assert(got[0] != pos && got[1] != pos);
    cr_assert_eq(yfs_loads_queue_wanted(&plan->plan, &plan->loads, load, got, 8), 0,
                 "queued twice");
    uint64_t first = got[0], second = got[1];

    /* the build fetches the second itself before the engine reads it */
    uint8_t *raw, *want = on_disk(m, plan->plan.order[second]);
    uint32_t len;
    cr_assert_eq(yfs_page_fetch(m, plan, second, &h, &raw, &len, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(memcmp(raw, want, len), 0, "other bytes than on disk");
    free(raw);
    free(want);
    yfs_budget_release(m->budget, len, YFS_MEM_RAW, &h);
    uint64_t alone = yfs_counter(&m->stats.pages_read_alone);
    cr_assert_eq(yfs_loads_run_page(m, &plan->plan, &plan->loads, second, 1, &h), 0,
                 "the engine read a page its build had");
    cr_assert_eq(yfs_counter(&m->stats.pages_read_alone), alone);
    cr_assert_not(yfs_pages_holds(m->loaded, 0, plan->plan.order[second]));

    cr_assert_eq(yfs_loads_run_page(m, &plan->plan, &plan->loads, first, 1, &h), 1);
    cr_assert(yfs_pages_holds(m->loaded, 0, plan->plan.order[first]), "not parked");
    cr_assert_eq(yfs_counter(&m->stats.pages_read_alone), alone + 1);
    cr_assert_eq(yfs_counter(&m->stats.reads_together), 0, "the build's page read again");
    yfs_budget_release(m->budget, filler, YFS_MEM_PLANS, NULL);

    uint8_t *parked;
    cr_assert_eq(yfs_page_fetch(m, plan, first, &h, &parked, &len, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(yfs_counter(&m->stats.pages_read_alone), alone + 1,
                 "the parked page read again");
    free(parked);
    yfs_budget_release(m->budget, len, YFS_MEM_RAW, &h);
    /* the build of pos takes its page too */
    cr_assert_eq(yfs_page_fetch(m, plan, pos, &h, &parked, &len, &err), 0,
                 "%s", err.msg);
    free(parked);
    yfs_budget_release(m->budget, len, YFS_MEM_RAW, &h);
    close_small_chunks(m, plan, &h);
}

/* A position of the small chunks' plan whose load serves at least `min`
 * pages, all of them (order positions, in storage order) to served[]
 * (room for SH_CHUNK_MAX_PAGES); returns how many. */
static size_t load_serving(const yfs_plan *plan, size_t min, uint64_t *served)
{
    const sh_schedule *sched = &plan->plan.schedule;
    for (uint32_t load = 0; load < sched->num_loads; load++) {
        const sh_load *ld = &sched->loads[load];
        size_t n = 0;
        for (uint32_t q = ld->first_page; q < ld->first_page + ld->pages; q++)
            if (sched->source[sched->position[q]] == load)
                served[n++] = sched->position[q];
        if (n >= min)
            return n;
    }
    cr_assert_fail("no load serving %zu pages", min);
    return 0;
}

/* Each page of the plan at the given positions, fetched as a build does,
 * is the bytes on disk. */
static void fetch_same_as_disk(yfs_mount *m, yfs_plan *plan, const uint64_t *pos, size_t n,
                               yfs_hold *h)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t *raw, *want = on_disk(m, plan->plan.order[pos[i]]);
        uint32_t len;
        pq_error err;
        cr_assert_eq(yfs_page_fetch(m, plan, pos[i], h, &raw, &len, &err),
                     0, "%s", err.msg);
        cr_assert_eq(memcmp(raw, want, len), 0, "position %llu: other bytes than on disk",
                     (unsigned long long)pos[i]);
        free(raw);
        free(want);
        yfs_budget_release(m->budget, len, YFS_MEM_RAW, h);
    }
}

/* The engine's queued reads of pages of one load, near each other on
 * storage, are one storage read of no more than twice their bytes: every
 * page parked with the bytes on disk, none read again by its own queue
 * entry or by its build. */
Test(loads, a_loads_pages_queued_alone_are_read_together)
{
    yfs_plan *plan;
    yfs_mount *m = open_small_chunks(&plan);
    uint64_t served[SH_CHUNK_MAX_PAGES];
    size_t n = load_serving(plan, 4, served);
    uint32_t load = plan->plan.schedule.source[served[0]];
    yfs_hold h = { 0 };
    yfs_hold_enter(m->budget, &h);
    /* a build refused the load: it read its page alone, and wants the rest */
    uint64_t filler = yfs_budget_limit(m->budget) - yfs_budget_limit(m->budget) / 8;
    yfs_budget_reserve(m->budget, filler, YFS_MEM_PLANS, YFS_FORCE, NULL);
    for (size_t i = 0; i < n; i++)
        yfs_loads_want(&plan->loads, served[i]);
    cr_assert_eq(yfs_loads_queue(&plan->loads, load), 1);
    cr_assert_eq(yfs_loads_run(m, plan, load, served[0], 1, &h), 1);
    yfs_budget_release(m->budget, filler, YFS_MEM_PLANS, NULL);
    uint64_t got[SH_CHUNK_MAX_PAGES];
    cr_assert_eq(yfs_loads_queue_wanted(&plan->plan, &plan->loads, load, got, n), n - 1);
    for (size_t i = 0; i < n - 1; i++)
        cr_assert(yfs_loads_page_queued(&plan->loads, got[i]));
    uint64_t reads = yfs_counter(&m->stats.pages_read_alone);
    uint64_t bytes = yfs_counter(&m->stats.bytes_read);

    cr_assert_eq(yfs_loads_run_page(m, &plan->plan, &plan->loads, got[1], 1, &h), 1);
    cr_assert_eq(yfs_counter(&m->stats.reads_together), 1);
    cr_assert_eq(yfs_counter(&m->stats.pages_read_together), n - 1, "not every queued page");
    cr_assert_eq(yfs_counter(&m->stats.pages_read_alone), reads);
    for (size_t i = 0; i < n; i++)
        cr_assert(yfs_pages_holds(m->loaded, 0, plan->plan.order[served[i]]),
                  "position %llu not parked", (unsigned long long)served[i]);
    for (size_t i = 0; i < n - 1; i++) { /* the engine drops their entries unread */
        cr_assert_not(yfs_loads_page_queued(&plan->loads, got[i]));
        cr_assert_eq(yfs_loads_run_page(m, &plan->plan, &plan->loads, got[i], 1, &h), 0,
                     "read again by its own entry");
    }
    uint64_t range = 0;
    for (size_t i = 1; i < n; i++)
        range += m->ix->pages[plan->plan.order[served[i]]].length;
    cr_assert_leq(yfs_counter(&m->stats.bytes_read) - bytes, 2 * range);

    fetch_same_as_disk(m, plan, served, n, &h);
    cr_assert_eq(yfs_counter(&m->stats.pages_read_alone), reads, "a parked page read again");
    cr_assert_eq(yfs_counter(&m->stats.reads_together), 1);
    close_small_chunks(m, plan, &h);
}

/* Two queued pages of one load far apart for their size (the first and
 * the last of a load of many) are not read together: the range would be
 * mostly bytes nobody asked for. */
Test(loads, pages_far_apart_for_their_size_are_read_alone)
{
    yfs_plan *plan;
    yfs_mount *m = open_small_chunks(&plan);
    uint64_t served[SH_CHUNK_MAX_PAGES];
    size_t n = load_serving(plan, 6, served);
    uint32_t load = plan->plan.schedule.source[served[0]];
    yfs_hold h = { 0 };
    yfs_hold_enter(m->budget, &h);
    cr_assert_eq(yfs_loads_queue(&plan->loads, load), 1);
    cr_assert_eq(yfs_loads_run(m, plan, load, UINT64_MAX, 0, &h), 1);
    uint64_t ends[2] = { served[0], served[n - 1] };
    for (size_t i = 0; i < 2; i++) { /* the store lets them go: queued to be read alone */
        uint32_t len;
        uint8_t *raw = yfs_pages_take(m->loaded, 0, plan->plan.order[ends[i]], &h, &len);
        cr_assert_not_null(raw, "the load did not park position %llu",
                           (unsigned long long)ends[i]);
        free(raw);
        yfs_budget_release(m->budget, len, YFS_MEM_RAW, &h);
        cr_assert_eq(yfs_loads_queue_page(m, &plan->plan, &plan->loads, ends[i]), 1);
    }
    cr_assert_eq(yfs_loads_run_page(m, &plan->plan, &plan->loads, ends[0], 0, &h), 1);
    cr_assert_eq(yfs_counter(&m->stats.reads_together), 0, "read with bytes nobody wants");
    cr_assert_eq(yfs_counter(&m->stats.pages_read_alone), 1);
    cr_assert_eq(yfs_loads_run_page(m, &plan->plan, &plan->loads, ends[1], 0, &h), 1);
    cr_assert_eq(yfs_counter(&m->stats.pages_read_alone), 2);
    /* the rest of the load's pages are taken, and the two come back as on disk */
    fetch_same_as_disk(m, plan, served + 1, n - 2, &h);
    fetch_same_as_disk(m, plan, ends, 2, &h);
    cr_assert_eq(yfs_counter(&m->stats.pages_read_alone), 2);
    close_small_chunks(m, plan, &h);
}

/* Decode every page of the sample's column `column` as the read path does,
 * checking the bound from its headers against what the decode holds. */
static void bound_covers_pages(const char *column, uint32_t want_width)
{
    yfs_mount *m = tfs_open_sample("cache=none,chunk=0", column, 0);
    yfs_hold h = { 0 };
    yfs_hold_enter(m->budget, &h);
    for (uint32_t page = 0; page < m->ix->num_pages; page++) {
        uint8_t *raw;
        uint32_t len;
        pq_error err;
        cr_assert_eq(yfs_page_read(m, page, &h, &raw, &len, &err), 0, "%s", err.msg);
        uint32_t width = pq_packed_width(&m->ix->chunks[ix_locate(m->ix, page)].desc);
        cr_assert_eq(width, want_width);
        uint64_t bound = yfs_decode_bound(raw, len, width);
        pq_page_values v;
        ix_record *recs = malloc((m->ix->pages[page].records + 1) * sizeof *recs);
        cr_assert_eq(yfs_page_records(m, page, raw, len, &h, &v, recs, &err), 0, "%s", err.msg);
        cr_assert_eq(v.width, width, "page %u: packed as its column says", page);
        /* slices: all but values copied out of a dictionary (reserved once
         * known); packed: everything */
        cr_assert_geq(bound, pq_page_values_bytes(&v) - (width ? 0 : v.extra_len), "page %u",
                      page);
        cr_assert_eq(snap(m).bytes[YFS_MEM_DECODED], pq_page_values_bytes(&v),
                     "page %u: not charged at its real size", page);
        yfs_page_values_drop(m, &v, &h);
        free(recs);
        free(raw);
        yfs_budget_release(m->budget, len, YFS_MEM_RAW, &h);
    }
    cr_assert_eq(h.bytes, 0);
    yfs_hold_leave(m->budget, &h);
    yfs_mount_close(m);
}

Test(loads, the_header_bound_covers_every_decoded_page)
{
    bound_covers_pages("column=text", 0);
    bound_covers_pages("column=id", 8); /* INT64, dictionary-encoded: packed */
}
