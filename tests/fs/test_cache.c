/* The segment cache's eviction order: segments read to the end go first; a
 * segment a reader is in the middle of outlives them even when used less
 * recently (plain LRU would drop it and build it again on the reader's next
 * request); it gives way at once to its own reader, and to others once
 * stale. */
#include <criterion/criterion.h>
#include <string.h>

#include "yfs_budget.h"
#include "yfs_cache.h"
#include "yfs_plans.h"
#include "yfs_segment.h"
#include "yfs_view.h"
#include "tfs.h"

static yfs_mount *open_sample(uint64_t mem)
{
    /* not started: no prefetch workers, every build is a demand build */
    return tfs_open_sample("buffer=300,cache=none,chunk=0,threads=1", NULL, mem);
}

/* A mount of the sample with the smallest mem whose accountant's limit is
 * at least need. The limit grows with mem, so bisect (lo too small, hi
 * enough). */
static yfs_mount *open_with_segment_budget(uint64_t need)
{
    uint64_t lo = need, hi = 4 * need;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        yfs_mount *probe = open_sample(mid);
        if (yfs_mount_data_budget(probe) >= need)
            hi = mid;
        else
            lo = mid;
        yfs_mount_close(probe);
    }
    yfs_mount *m = open_sample(hi);
    cr_assert_geq(yfs_mount_data_budget(m), need);
    return m;
}

/* Framed sizes of the first n segments of epoch 0, the rest of what
 * building each alone holds at its peak (its plan, dictionaries, decoded
 * pages, framed units, record lists), measured by the accountant, and of
 * that the dictionaries it loaded (the cache keeps them for the next build:
 * a build of a segment that shares them with the one before needs no room
 * for them). dicts may be NULL. */
static void first_segments(int n, uint64_t *bytes, uint64_t *work, uint64_t *dicts)
{
    uint64_t at = 0;
    for (int s = 0; s < n; s++) {
        yfs_mount *probe = open_sample(64u << 20);
        yfs_view *v;
        pq_error err;
        cr_assert_eq(yfs_view_open(probe, &(yfs_name){ 0 }, &v, &err), 0);
        yfs_plan *p;
        cr_assert_eq(yfs_plans_get(probe->plans, 0, &p, &err), 0);
        cr_assert_geq(p->plan.num_segments, (uint64_t)n);
        bytes[s] = p->plan.segments[s].bytes;
        yfs_plans_put(probe->plans, p);
        uint8_t byte;
        size_t got;
        cr_assert_eq(yfs_view_read(v, at, 1, &byte, &got, &err), 0);
        yfs_budget_snapshot snap;
        yfs_budget_snapshot_get(probe->budget, &snap);
        work[s] = snap.peak - bytes[s];
        if (dicts)
            dicts[s] = snap.bytes[YFS_MEM_DICTIONARIES];
        at += bytes[s];
        yfs_view_close(v);
        yfs_mount_close(probe);
    }
}

/* The dictionaries the first n segments of epoch 0 load together. */
static uint64_t dictionaries_of(int n, const uint64_t *bytes)
{
    yfs_mount *probe = open_sample(64u << 20);
    yfs_view *v;
    pq_error err;
    cr_assert_eq(yfs_view_open(probe, &(yfs_name){ 0 }, &v, &err), 0);
    uint64_t at = 0;
    for (int s = 0; s < n; s++) {
        uint8_t byte;
        size_t got;
        cr_assert_eq(yfs_view_read(v, at, 1, &byte, &got, &err), 0);
        at += bytes[s];
    }
    yfs_budget_snapshot snap;
    yfs_budget_snapshot_get(probe->budget, &snap);
    yfs_view_close(v);
    yfs_mount_close(probe);
    return snap.bytes[YFS_MEM_DICTIONARIES];
}

/* A mount with room to build segment 1 but not while segment 0 is kept. */
static yfs_mount *open_one_segment_at_a_time(uint64_t *s0)
{
    uint64_t bytes[2], work[2], dicts[2];
    first_segments(2, bytes, work, dicts);
    *s0 = bytes[0];
    /* segment 1 shares segment 0's dictionaries */
    uint64_t w1 = work[1] - dicts[1];
    yfs_mount *m = open_with_segment_budget(bytes[1] + w1 + bytes[0] / 2);
    cr_assert_lt(yfs_mount_data_budget(m), bytes[0] + bytes[1] + w1);
    return m;
}

/* Read [off, off+len) of v. */
static void touch(yfs_view *v, uint64_t off, size_t len)
{
    uint8_t *buf = malloc(len);
    size_t got;
    pq_error err;
    cr_assert_eq(yfs_view_read(v, off, len, buf, &got, &err), 0, "%s", err.msg);
    cr_assert_eq(got, len);
    free(buf);
}

Test(cache, half_read_segments_outlive_finished_ones)
{
    uint64_t bytes[3], work[3], dicts[3];
    first_segments(3, bytes, work, dicts);
    /* Room for every dictionary the three load, apart: dictionaries are
     * not what this test is about. */
    uint64_t s0 = bytes[0], s1 = bytes[1], s2 = bytes[2], w0 = work[0] - dicts[0],
             w2 = work[2] - dicts[2], d = dictionaries_of(3, bytes);
    pq_error err;

    /* A segment budget that holds segment 1 while segment 0 or 2 is built,
     * but not all three while segment 2 is built. */
    uint64_t need = (s1 + s0 + w0 > s1 + s2 + w2 ? s1 + s0 + w0 : s1 + s2 + w2) + d;
    uint64_t too_much = s0 + s1 + s2 + w2 + d;
    cr_assert_lt(need, too_much);
    yfs_mount *m = open_with_segment_budget(need);
    cr_assert_lt(yfs_mount_data_budget(m), too_much);
    yfs_view *v;
    cr_assert_eq(yfs_view_open(m, &(yfs_name){ 0 }, &v, &err), 0);

    touch(v, s0, 1);             /* segment 1: first byte only */
    touch(v, 0, (size_t)s0);     /* segment 0: read to its end, used more recently */
    touch(v, s0 + s1, 1);        /* segment 2: needs room for one */
    touch(v, s0 + 1, (size_t)s1 - 1); /* the rest of segment 1 */

    cr_assert_eq(yfs_counter(&m->stats.segments_built), 3,
                 "segment 1 was dropped and built again (%llu builds)",
                 (unsigned long long)yfs_counter(&m->stats.segments_built));
    /* segment 0 gave way, unless dropping idle dictionaries made room */
    cr_assert_leq(yfs_counter(&m->stats.segments_evicted), 1, "%llu evicted",
                  (unsigned long long)yfs_counter(&m->stats.segments_evicted));
    yfs_view_close(v);
    yfs_mount_close(m);
}

/* A reader that moves on (seeks) leaves its half-read segment to be dropped
 * at once when it needs room: it does not wait for it to go stale. */
Test(cache, a_reader_that_seeks_drops_its_own_half_read_segment)
{
    uint64_t s0;
    yfs_mount *m = open_one_segment_at_a_time(&s0);
    yfs_view *v;
    pq_error err;
    cr_assert_eq(yfs_view_open(m, &(yfs_name){ 0 }, &v, &err), 0);
    touch(v, 0, 1);  /* segment 0: first byte only */
    touch(v, s0, 1); /* segment 1 */
    cr_assert_eq(yfs_counter(&m->stats.memory_waits), 0);
    cr_assert_eq(yfs_counter(&m->stats.segments_evicted), 1);
    cr_assert_eq(yfs_counter(&m->stats.segments_built), 2);
    yfs_view_close(v);
    yfs_mount_close(m);
}

/* Another reader's half-read segment is not dropped at once: that reader
 * would build it again on its next request. The demand read waits for room,
 * and takes it when the segment goes stale (its reader paused), so the wait
 * ends; the paused reader then gets its segment built again, same bytes. */
Test(cache, another_readers_half_read_segment_is_dropped_only_when_stale)
{
    uint64_t s0;
    yfs_mount *m = open_one_segment_at_a_time(&s0);
    yfs_view *paused, *reader;
    pq_error err;
    cr_assert_eq(yfs_view_open(m, &(yfs_name){ 0 }, &paused, &err), 0);
    cr_assert_eq(yfs_view_open(m, &(yfs_name){ 0 }, &reader, &err), 0);

    uint8_t first[2], again;
    size_t got;
    cr_assert_eq(yfs_view_read(paused, 0, 2, first, &got, &err), 0);

    touch(reader, s0, 1); /* segment 1: waits until segment 0 is stale */
    cr_assert_geq(yfs_counter(&m->stats.memory_waits), 1, "segment 0 was dropped at once");
    cr_assert_eq(yfs_counter(&m->stats.segments_evicted), 1);

    cr_assert_eq(yfs_view_read(paused, 1, 1, &again, &got, &err), 0);
    cr_assert_eq(got, 1);
    cr_assert_eq(again, first[1], "segment 0 came back with other bytes");
    cr_assert_eq(yfs_counter(&m->stats.segments_built), 3);
    yfs_view_close(reader);
    yfs_view_close(paused);
    yfs_mount_close(m);
}

/* A prefetch's build short of room waits for the reader rather than drop a
 * prefetched segment the reader needs before the one it builds (it built
 * that one again: one reader of tokens at 10 ms a read built 78 segments of
 * 64). A reader holds segment 0 and other memory (`filler`); segments 1
 * and 2 are prefetched and unread; the prefetch of 3 is let in (its
 * segment and estimate just fit under the prefetch limit), but its build
 * needs more than that leaves. It waits until the reader has read segment
 * 0 to its end and let its other memory go: the reader then finds 1, 2 and
 * 3 built, each built once. */
Test(cache, a_prefetch_waits_for_its_reader_rather_than_drop_what_it_reads_first)
{
    uint64_t bytes[4], work[4];
    first_segments(4, bytes, work, NULL);
    /* Room for 1, 2 and the whole build of 3, and a quarter more. */
    uint64_t after = bytes[1] + bytes[2] + bytes[3] + work[3];
    yfs_mount *m = open_with_segment_budget(after + after / 4);
    uint64_t limit = yfs_mount_data_budget(m);
    pq_error err;
    cr_assert_eq(yfs_mount_start(m, &err), 0, "%s", err.msg);
    yfs_plan *p;
    cr_assert_eq(yfs_plans_get(m->plans, 0, &p, &err), 0);
    int reader;
    yfs_seg *first;
    cr_assert_eq(yfs_cache_get(m->cache, p, 0, &reader, &first, &err), 0, "%s", err.msg);
    for (uint64_t s = 1; s <= 2; s++) {
        cr_assert_eq(yfs_cache_prefetch(m->cache, p, s, &reader), 0, "prefetch of %llu refused",
                     (unsigned long long)s);
        for (int i = 0; i < 5000 && yfs_counter(&m->stats.segments_prefetched) < s; i++)
            tfs_sleep_ms(1);
        cr_assert_eq(yfs_counter(&m->stats.segments_prefetched), s);
    }
    /* The reader's other memory fills the prefetch limit (7/8 of the whole,
     * yfs_budget.h) but for what the prefetch of 3 reserves. */
    uint64_t prefetch_limit = limit - limit / 8;
    uint64_t three = yfs_segment_held_bytes(m, p, 3) + yfs_segment_build_bytes(m, p, 3);
    uint64_t used = yfs_budget_used(m->budget);
    cr_assert_leq(used + three, prefetch_limit);
    uint64_t filler = prefetch_limit - used - three;
    cr_assert_eq(yfs_budget_reserve(m->budget, filler, YFS_MEM_DECODED, YFS_TRY, NULL), 0);
    cr_assert_gt(bytes[3] + work[3] - three, limit / 8,
                 "the build of 3 fits in the room prefetches leave: nothing to test");

    cr_assert_eq(yfs_cache_prefetch(m->cache, p, 3, &reader), 0, "prefetch of 3 refused");
    yfs_budget_snapshot snap = { 0 };
    for (int i = 0; i < 5000 && yfs_counter(&m->stats.segments_prefetched) < 3 &&
                    (yfs_budget_snapshot_get(m->budget, &snap), snap.demand_waiting == 0);
         i++)
        tfs_sleep_ms(1);
    cr_assert_eq(snap.demand_waiting, 1, "the build of segment 3 did not wait for room");

    _Atomic uint64_t served = 0;
    uint64_t size = yfs_seg_size(first);
    yfs_cache_served(m->cache, first, &served, size, size, 1);
    yfs_cache_put(m->cache, first);
    yfs_budget_release(m->budget, filler, YFS_MEM_DECODED, NULL);
    for (int i = 0; i < 5000 && yfs_counter(&m->stats.segments_prefetched) < 3; i++)
        tfs_sleep_ms(1);
    for (uint64_t s = 1; s <= 3; s++) {
        yfs_seg *seg;
        cr_assert_eq(yfs_cache_get(m->cache, p, s, &reader, &seg, &err), 0, "%s", err.msg);
        yfs_cache_put(m->cache, seg);
    }
    cr_assert_eq(yfs_counter(&m->stats.segments_built), 4, "%llu builds of 4 segments",
                 (unsigned long long)yfs_counter(&m->stats.segments_built));
    yfs_plans_put(m->plans, p);
    yfs_mount_close(m);
}
