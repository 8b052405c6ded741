/* An epoch file read without a mount (yfs_view.h): a segment counts as read
 * to its end only once every byte the file takes of it was copied out
 * (tfs_check_read_backwards), as for a mixture's files (test_mixview.c). */
#include <criterion/criterion.h>

#include "tfs.h"
#include "sh_deal.h"
#include "yfs_ahead.h"
#include "yfs_plans.h"
#include "yfs_view.h"

/* Small segments (buffer=300: about 300 records each, a dozen in the
 * sample's epoch), and no chunk loads (the mount is not started: no engine
 * would run them). */
static yfs_mount *open_sample(void)
{
    return tfs_open_sample("buffer=300,chunk=0", NULL, 0);
}

static uint64_t built(yfs_mount *m)
{
    return yfs_counter(&m->stats.segments_built);
}

/* Fails before 2026-11-26's fix: 9 segments built, 8 reading in order. */
Test(view, a_segment_read_backwards_is_built_once)
{
    tfs_check_read_backwards(open_sample, built);
}

/* With many files open over slow storage, each may prefetch its fair part
 * of what prefetches may fill less the store of loaded pages (yfs_ahead.h):
 * together they leave the I/O engine's loads their room. Over fast
 * storage, or with two, a quarter each. */
Test(view, many_readers_over_slow_storage_leave_the_loaded_store_its_room)
{
    yfs_mount *m = tfs_open_sample("buffer=300,mem=256M", NULL, 0);
    uint64_t budget = yfs_mount_data_budget(m), quarter = budget / YFS_AHEAD_BUDGET_SHARE;
    uint64_t room = yfs_budget_prefetch_limit(m->budget), loads = yfs_mount_loaded_budget(m);
    cr_assert_gt(loads, 0);
    enum { PARTS = 8 };
    yfs_view *v[PARTS];
    pq_error err;
    for (uint32_t i = 0; i < PARTS; i++)
        cr_assert_eq(yfs_view_open(m, &(yfs_name){ .part = i, .parts = PARTS }, &v[i], &err), 0,
                     "%s", err.msg);
    for (int i = 0; i < 16; i++)
        yfs_latency_note(&m->read_latency, YFS_LATENCY_SLOW_NS / 10);
    cr_assert_eq(yfs_ahead_allowance(m, 0, 0), quarter, "fast storage");
    for (int i = 0; i < 16; i++)
        yfs_latency_note(&m->read_latency, 50 * YFS_LATENCY_SLOW_NS);
    uint64_t each = yfs_ahead_allowance(m, 0, 0);
    cr_assert_eq(yfs_ahead_allowance(m, 1, 0), each, "streamed pages alike");
    cr_assert_eq(yfs_ahead_allowance(m, 0, each + 1), each + 1, "the next segment, at least");
    cr_assert_lt(each, quarter);
    cr_assert_leq(PARTS * each + loads, room);
    cr_assert_gt(PARTS * (each + 1) + loads, room, "the whole fair part: %lu", (unsigned long)each);
    for (uint32_t i = 2; i < PARTS; i++)
        yfs_view_close(v[i]);
    cr_assert_eq(yfs_ahead_allowance(m, 0, 0), quarter, "two readers");
    yfs_view_close(v[0]);
    yfs_view_close(v[1]);
    yfs_mount_close(m);
}

/* What a lone reader of epoch 0 over slow storage may prefetch from its
 * first piece, at mem bytes, as a share (1/N) of the data budget. */
static uint64_t lone_share_over_slow_storage(uint64_t mem)
{
    yfs_mount *m = tfs_open_sample("buffer=300", NULL, mem);
    for (int i = 0; i < 16; i++)
        yfs_latency_note(&m->read_latency, 50 * YFS_LATENCY_SLOW_NS);
    yfs_plan *plan;
    pq_error err;
    cr_assert_eq(yfs_plans_get(m->plans, 0, &plan, &err), 0, "%s", err.msg);
    sh_pieces pieces;
    sh_part part;
    cr_assert_eq(sh_deal_part(&plan->plan, 0, 1, SH_EVEN_OFF, &pieces), 0);
    cr_assert_eq(sh_part_build(&plan->plan, pieces.v, pieces.n, NULL, NULL, &part), 0);
    uint64_t share = yfs_mount_data_budget(m) / yfs_ahead_view_allowance(m, plan, &part, 0);
    sh_part_free(&part);
    yfs_plans_put(m->plans, plan);
    yfs_mount_close(m);
    return share;
}

/* The sample's pages are decoded whole at the default mem= (the I/O engine
 * loads them ahead: a quarter) and likely streamed when mem= is a few
 * pages (half the budget). */
Test(view, a_lone_reader_over_slow_storage_guesses_streamed_pages_from_its_next_segment)
{
    cr_assert_eq(lone_share_over_slow_storage(0), YFS_AHEAD_BUDGET_SHARE);
    cr_assert_eq(lone_share_over_slow_storage(64u << 10), YFS_AHEAD_ALONE_SHARE);
}

/* A file open alone over slow storage may prefetch half the data budget
 * for segments of streamed pages, a quarter for pages the I/O engine loads
 * ahead; over fast storage, or with two files open at once, a quarter each
 * (yfs_ahead.h); closing one gives the other its half again. */
Test(view, a_reader_alone_over_slow_storage_prefetches_streamed_pages_with_half_the_budget)
{
    yfs_mount *m = open_sample();
    uint64_t budget = yfs_mount_data_budget(m), half = budget / YFS_AHEAD_ALONE_SHARE,
             quarter = budget / YFS_AHEAD_BUDGET_SHARE;
    cr_assert_lt(quarter, half);
    yfs_view *a, *b;
    pq_error err;
    cr_assert_eq(yfs_view_open(m, &(yfs_name){ 0 }, &a, &err), 0, "%s", err.msg);
    for (int i = 0; i < 16; i++)
        yfs_latency_note(&m->read_latency, YFS_LATENCY_SLOW_NS / 10);
    cr_assert_eq(yfs_ahead_allowance(m, 1, 0), quarter, "fast storage");
    for (int i = 0; i < 16; i++)
        yfs_latency_note(&m->read_latency, 50 * YFS_LATENCY_SLOW_NS);
    cr_assert_eq(yfs_ahead_allowance(m, 1, 0), half, "slow storage, one reader");
    cr_assert_eq(yfs_ahead_allowance(m, 0, 0), quarter, "slow storage, pages loaded ahead");
    cr_assert_eq(yfs_view_open(m, &(yfs_name){ .epoch = 1, .part = 1, .parts = 2 }, &b, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(yfs_ahead_allowance(m, 1, 0), quarter, "two readers");
    yfs_view_close(a);
    cr_assert_eq(yfs_ahead_allowance(m, 1, 0), half);
    yfs_view_close(b);
    yfs_mount_close(m);
}
