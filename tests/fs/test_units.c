/* yfs_units.h: a build that streams a page leaves a mark (yfs_streams.h)
 * at every unit its stream passes and at the unit where the stream pauses,
 * so that the unit a paused stream waits at can be resumed from its mark
 * when the stream is closed for room or by the store's cap (before, the
 * pause point had no mark, and its build streamed the page again from its
 * start). */
#include <criterion/criterion.h>

#include "tfs.h"
#include "yfs_plans.h"
#include "yfs_segment.h"
#include "yfs_streams.h"
#include "yfs_units.h"

/* One text page of 3,000 strings compressed with SNAPPY: cut into units. */
#define SNAPPY_PAGE YFS_SOURCE_DIR "/tests/data/stream/snappy_big_pages.parquet"

/* Build segment s of plan into a body freed at once. */
static void build_segment(yfs_mount *m, yfs_plan *plan, uint64_t s)
{
    yfs_hold h = { 0 };
    yfs_hold_enter(m->budget, &h);
    uint64_t held = yfs_segment_held_bytes(m, plan, s), work = yfs_segment_build_bytes(m, plan, s);
    yfs_budget_reserve(m->budget, held, YFS_MEM_SEGMENTS, YFS_DEMAND, &h);
    yfs_budget_reserve(m->budget, work, YFS_MEM_BUILD, YFS_DEMAND, &h);
    yfs_body body;
    pq_error err;
    cr_assert_eq(yfs_segment_build(m, plan, s, &h, &body, &err), 0, "%s", err.msg);
    yfs_body_free(&body);
    yfs_budget_release(m->budget, held, YFS_MEM_SEGMENTS, &h);
    yfs_hold_leave(m->budget, &h);
}

Test(units, a_stream_leaves_a_mark_at_the_unit_it_pauses_at)
{
    /* mem small enough that the page streams (its units park nowhere), large
     * enough that the streams store keeps its marks */
    yfs_mount *m = tfs_open(SNAPPY_PAGE, "column=text,cache=none,buffer=400", NULL, 8u << 20);
    cr_assert_not_null(m->units.cut.first_unit, "the page is not cut into units");
    yfs_plan *plan;
    pq_error err;
    cr_assert_eq(yfs_plans_get(m->plans, 0, &plan, &err), 0, "%s", err.msg);
    uint32_t checked = 0;
    for (uint64_t s = 0; s < plan->plan.num_segments; s++) {
        build_segment(m, plan, s);
        const sh_segment *seg = &plan->plan.segments[s];
        for (uint32_t i = 0; i < seg->units; i++) {
            uint32_t unit = plan->plan.unit_order[seg->first + i];
            uint32_t page = yfs_unit_page(m, unit);
            if (unit + 1 >= m->units.cut.first_unit[page + 1] ||
                yfs_plan_built(plan, unit + 1))
                continue; /* the page's last unit, or the next built already */
            cr_assert(yfs_streams_marked(m->streams, unit + 1),
                      "segment %llu framed unit %u: the stream paused at unit %u left no mark",
                      (unsigned long long)s, unit, unit + 1);
            checked++;
        }
    }
    cr_assert_gt(yfs_counter(&m->stats.pages_streamed), 0, "the page was decoded whole");
    cr_assert_gt(checked, 0, "no stream paused before a unit not built yet");
    yfs_plans_put(m->plans, plan);
    yfs_mount_close(m);
}
