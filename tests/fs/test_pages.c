/* The store of loaded pages waiting to be served (yfs_pages.h): a page
 * comes back whole and once, its charge moves with it; without readers the
 * cap drops the oldest; with readers it keeps the pages needed soonest and
 * drops stale ones first; pinned pages stay; a demand read short of room
 * drops parked pages. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "yfs_pages.h"

static uint64_t kind(yfs_budget *b, yfs_mem_kind k)
{
    yfs_budget_snapshot s;
    yfs_budget_snapshot_get(b, &s);
    return s.bytes[k];
}

/* A raw page of len bytes filled with `fill`, charged to h. */
static uint8_t *page(yfs_budget *b, yfs_hold *h, uint32_t len, int fill)
{
    cr_assert_eq(yfs_budget_reserve(b, len, YFS_MEM_RAW, YFS_DEMAND, h), 0);
    uint8_t *p = malloc(len);
    memset(p, fill, len);
    return p;
}

Test(pages, a_page_comes_back_once_with_its_charge)
{
    yfs_stats st = { 0 };
    yfs_budget *b = yfs_budget_new(1000, &st);
    yfs_pages *s = yfs_pages_new(b, 500, &st);
    yfs_hold h = { 0 };
    yfs_hold_enter(b, &h);
    uint8_t *p = page(b, &h, 100, 7);
    yfs_pages_put(s, 3, 42, 0, p, 100, &h);
    cr_assert_eq(kind(b, YFS_MEM_RAW), 0);
    cr_assert_eq(kind(b, YFS_MEM_PARKED), 100);
    cr_assert_eq(h.bytes, 0);

    uint32_t len = 0;
    cr_assert_null(yfs_pages_take(s, 4, 42, &h, &len), "another epoch's page");
    cr_assert_null(yfs_pages_take(s, 3, 41, &h, &len), "another page");
    uint8_t *got = yfs_pages_take(s, 3, 42, &h, &len);
    cr_assert_eq(got, p);
    cr_assert_eq(len, 100);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(got[i], 7);
    cr_assert_eq(kind(b, YFS_MEM_PARKED), 0);
    cr_assert_eq(kind(b, YFS_MEM_RAW), 100);
    cr_assert_eq(h.bytes, 100);
    cr_assert_null(yfs_pages_take(s, 3, 42, &h, &len), "taken twice");
    free(got);
    yfs_budget_release(b, 100, YFS_MEM_RAW, &h);
    yfs_hold_leave(b, &h);
    yfs_pages_free(s);
    yfs_budget_free(b);
}

Test(pages, the_cap_drops_the_oldest_and_a_page_larger_than_it)
{
    yfs_stats st = { 0 };
    yfs_budget *b = yfs_budget_new(1000, &st);
    yfs_pages *s = yfs_pages_new(b, 250, &st);
    yfs_hold h = { 0 };
    yfs_hold_enter(b, &h);
    for (uint32_t q = 0; q < 3; q++)
        yfs_pages_put(s, 0, q, q, page(b, &h, 100, (int)q), 100, &h);
    cr_assert_eq(yfs_counter(&st.loaded_pages_dropped), 1);
    cr_assert_eq(kind(b, YFS_MEM_PARKED), 200);
    uint32_t len;
    cr_assert_null(yfs_pages_take(s, 0, 0, &h, &len), "the oldest was kept");
    yfs_pages_put(s, 0, 9, 9, page(b, &h, 300, 9), 300, &h); /* larger than the cap */
    cr_assert_eq(yfs_counter(&st.loaded_pages_dropped), 2);
    cr_assert_eq(kind(b, YFS_MEM_PARKED), 200);
    cr_assert_eq(kind(b, YFS_MEM_RAW), 0);
    yfs_pages_put(s, 0, 1, 1, page(b, &h, 100, 1), 100, &h); /* loaded again: kept once */
    cr_assert_eq(kind(b, YFS_MEM_PARKED), 200);
    cr_assert_eq(h.bytes, 0);
    yfs_hold_leave(b, &h);
    yfs_pages_free(s); /* releases what it still holds */
    cr_assert_eq(yfs_budget_used(b), 0);
    yfs_budget_free(b);
}

Test(pages, a_demand_read_short_of_room_drops_parked_pages)
{
    yfs_stats st = { 0 };
    yfs_budget *b = yfs_budget_new(300, &st);
    yfs_pages *s = yfs_pages_new(b, 300, &st);
    yfs_hold h = { 0 };
    yfs_hold_enter(b, &h);
    for (uint32_t q = 0; q < 3; q++)
        yfs_pages_put(s, 0, q, q, page(b, &h, 100, (int)q), 100, &h);
    /* a prefetch does not drop them */
    cr_assert_eq(yfs_budget_reserve(b, 150, YFS_MEM_SEGMENTS, YFS_PREFETCH, NULL), -1);
    cr_assert_eq(kind(b, YFS_MEM_PARKED), 300);
    /* a demand read drops the oldest two, no more, and does not wait */
    cr_assert_eq(yfs_budget_reserve(b, 150, YFS_MEM_SEGMENTS, YFS_DEMAND, NULL), 0);
    cr_assert_eq(kind(b, YFS_MEM_PARKED), 100);
    cr_assert_eq(yfs_counter(&st.memory_waits), 0);
    uint32_t len;
    cr_assert_null(yfs_pages_take(s, 0, 0, &h, &len));
    cr_assert_null(yfs_pages_take(s, 0, 1, &h, &len));
    uint8_t *last = yfs_pages_take(s, 0, 2, &h, &len);
    cr_assert_not_null(last);
    free(last);
    yfs_budget_release(b, 100, YFS_MEM_RAW, &h);
    yfs_budget_release(b, 150, YFS_MEM_SEGMENTS, NULL);
    yfs_hold_leave(b, &h);
    yfs_pages_free(s);
    yfs_budget_free(b);
}

Test(pages, with_a_reader_the_pages_needed_soonest_are_kept)
{
    yfs_stats st = { 0 };
    yfs_budget *b = yfs_budget_new(10000, &st);
    yfs_pages *s = yfs_pages_new(b, 300, &st);
    yfs_hold h = { 0 };
    yfs_hold_enter(b, &h);
    int reader;
    yfs_pages_reader_at(s, &reader, 0, 10);
    /* needed at 50, 20, 40: full */
    yfs_pages_put(s, 0, 1, 50, page(b, &h, 100, 1), 100, &h);
    yfs_pages_put(s, 0, 2, 20, page(b, &h, 100, 2), 100, &h);
    yfs_pages_put(s, 0, 3, 40, page(b, &h, 100, 3), 100, &h);
    /* one needed at 30 drops the one needed last (50), though it came first */
    yfs_pages_put(s, 0, 4, 30, page(b, &h, 100, 4), 100, &h);
    cr_assert(!yfs_pages_holds(s, 0, 1) && yfs_pages_holds(s, 0, 2) && yfs_pages_holds(s, 0, 3) && yfs_pages_holds(s, 0, 4));
    /* one needed after everything it holds is not kept */
    yfs_pages_put(s, 0, 5, 60, page(b, &h, 100, 5), 100, &h);
    cr_assert(!yfs_pages_holds(s, 0, 5) && yfs_pages_holds(s, 0, 3));
    cr_assert_eq(yfs_counter(&st.loaded_pages_dropped), 2);
    /* room for a load needed at 45: nothing is needed later */
    cr_assert_eq(yfs_pages_make_room(s, 100, 0, 45), 0);
    cr_assert(yfs_pages_holds(s, 0, 3));
    /* for one needed at 25: the page needed at 40 goes */
    cr_assert_eq(yfs_pages_make_room(s, 100, 0, 25), 1);
    cr_assert(!yfs_pages_holds(s, 0, 3) && yfs_pages_holds(s, 0, 2) && yfs_pages_holds(s, 0, 4));
    cr_assert_eq(kind(b, YFS_MEM_PARKED), 200);
    cr_assert_eq(h.bytes, 0);
    yfs_hold_leave(b, &h);
    yfs_pages_free(s);
    cr_assert_eq(yfs_budget_used(b), 0);
    yfs_budget_free(b);
}

Test(pages, stale_pages_go_first_and_for_a_prefetch)
{
    yfs_stats st = { 0 };
    yfs_budget *b = yfs_budget_new(800, &st);
    yfs_pages *s = yfs_pages_new(b, 300, &st);
    yfs_hold h = { 0 };
    yfs_hold_enter(b, &h);
    int r1, r2;
    yfs_pages_reader_at(s, &r1, 0, 0);
    yfs_pages_reader_at(s, &r2, 0, 100);
    yfs_pages_put(s, 0, 1, 5, page(b, &h, 100, 1), 100, &h);   /* r1 needs it */
    yfs_pages_put(s, 0, 2, 500, page(b, &h, 100, 2), 100, &h); /* needed last */
    yfs_pages_put(s, 7, 3, 1, page(b, &h, 100, 3), 100, &h);   /* an epoch nobody reads */
    /* room for one needed at 600: only the stale page may go */
    cr_assert_eq(yfs_pages_make_room(s, 100, 0, 600), 1);
    cr_assert(!yfs_pages_holds(s, 7, 3) && yfs_pages_holds(s, 0, 1) && yfs_pages_holds(s, 0, 2));
    /* r1 reads on past 5: that page is stale now, and a prefetch short of
     * room drops it, but not the page a reader still needs */
    yfs_pages_reader_at(s, &r1, 0, 200);
    cr_assert_eq(yfs_budget_reserve(b, 650, YFS_MEM_SEGMENTS, YFS_PREFETCH, NULL), -1);
    cr_assert(!yfs_pages_holds(s, 0, 1) && yfs_pages_holds(s, 0, 2));
    /* both readers gone: every page is stale */
    yfs_pages_reader_gone(s, &r1);
    yfs_pages_reader_gone(s, &r2);
    yfs_pages_reader_at(s, &r1, 1, 0); /* another epoch's reader */
    cr_assert_eq(yfs_pages_make_room(s, 300, 1, 0), 1);
    cr_assert(!yfs_pages_holds(s, 0, 2));
    cr_assert_eq(kind(b, YFS_MEM_PARKED), 0);
    yfs_hold_leave(b, &h);
    yfs_pages_free(s);
    yfs_budget_free(b);
}

Test(pages, pinned_pages_stay_until_taken_or_a_demand_read)
{
    yfs_stats st = { 0 };
    yfs_budget *b = yfs_budget_new(1000, &st);
    yfs_pages *s = yfs_pages_new(b, 200, &st);
    yfs_hold h = { 0 };
    yfs_hold_enter(b, &h);
    int reader;
    yfs_pages_reader_at(s, &reader, 0, 0);
    yfs_pages_put(s, 0, 1, 90, page(b, &h, 100, 1), 100, &h);
    yfs_pages_pin(s, 0, 1);
    /* pinned beyond the cap */
    yfs_pages_put_pinned(s, 0, 2, 80, page(b, &h, 100, 2), 100, &h);
    yfs_pages_put_pinned(s, 0, 3, 70, page(b, &h, 100, 3), 100, &h);
    cr_assert_eq(kind(b, YFS_MEM_PARKED), 300);
    /* making room drops no pinned page, though they are needed late */
    cr_assert_eq(yfs_pages_make_room(s, 100, 0, 10), 0);
    yfs_pages_put(s, 0, 4, 10, page(b, &h, 100, 4), 100, &h);
    cr_assert(!yfs_pages_holds(s, 0, 4) && yfs_pages_holds(s, 0, 1) && yfs_pages_holds(s, 0, 2) && yfs_pages_holds(s, 0, 3));
    uint32_t len;
    uint8_t *got = yfs_pages_take(s, 0, 2, &h, &len);
    cr_assert_not_null(got);
    cr_assert_eq(got[0], 2);
    free(got);
    yfs_budget_release(b, 100, YFS_MEM_RAW, &h);
    /* a demand read that needs them drops them */
    cr_assert_eq(yfs_budget_reserve(b, 1000, YFS_MEM_SEGMENTS, YFS_DEMAND, NULL), 0);
    cr_assert(!yfs_pages_holds(s, 0, 1) && !yfs_pages_holds(s, 0, 3));
    cr_assert_eq(kind(b, YFS_MEM_PARKED), 0);
    yfs_budget_release(b, 1000, YFS_MEM_SEGMENTS, NULL);
    yfs_hold_leave(b, &h);
    yfs_pages_free(s);
    yfs_budget_free(b);
}
