/* The segment cache's eviction order: with room for two segments, a
 * segment a reader is in the middle of outlives one already read to its end,
 * even when it was used less recently (plain LRU would drop it and build it
 * again on the reader's next request). */
#include <criterion/criterion.h>
#include <string.h>

#include "yfs_plans.h"
#include "yfs_segment.h"
#include "yfs_view.h"

#define SAMPLE YFS_SOURCE_DIR "/examples/sample"

static yfs_mount *open_sample(uint64_t mem)
{
    yfs_options o;
    yfs_options_init(&o);
    pq_error err;
    char *rest = NULL;
    cr_assert_eq(yfs_options_apply_list(&o, "buffer=300,cache=none,chunk=0", &rest, &err), 0);
    o.mem = mem;
    yfs_mount *m;
    cr_assert_eq(yfs_mount_open(&o, SAMPLE, 0, &m, &err), 0, "%s", err.msg);
    yfs_options_free(&o);
    return m; /* not started: no prefetch workers, every build is a demand build */
}

/* Read [off, off+len) of v and drop the extents. */
static void touch(yfs_mount *m, yfs_view *v, uint64_t off, size_t len)
{
    yfs_extent ext[YFS_MAX_EXTENTS];
    int n;
    pq_error err;
    cr_assert_eq(yfs_view_read(v, off, len, ext, YFS_MAX_EXTENTS, &n, &err), 0, "%s", err.msg);
    yfs_extents_release(m, ext, n);
}

Test(cache, half_read_segments_outlive_finished_ones)
{
    /* sizes of the first three segments of epoch 0, and their builds' work */
    yfs_mount *probe = open_sample(64u << 20);
    yfs_plan *p;
    pq_error err;
    cr_assert_eq(yfs_plans_get(probe->plans, 0, &p, &err), 0);
    cr_assert_geq(p->plan.num_segments, 3);
    uint64_t s0 = p->plan.segments[0].bytes, s1 = p->plan.segments[1].bytes,
             s2 = p->plan.segments[2].bytes, w0 = yfs_segment_work(&p->plan, 0),
             w2 = yfs_segment_work(&p->plan, 2);
    yfs_plans_put(probe->plans, p);
    yfs_mount_close(probe);

    /* A segment budget that holds segment 1 while segment 0 or 2 is built,
     * but not all three while segment 2 is built. */
    uint64_t need = s1 + s0 + w0 > s1 + s2 + w2 ? s1 + s0 + w0 : s1 + s2 + w2;
    uint64_t too_much = s0 + s1 + s2 + w2;
    cr_assert_lt(need, too_much);
    uint64_t mem = need + need / 7 - 16; /* the segment budget is 7/8 of mem with chunk=0 */
    yfs_mount *m = NULL;
    for (;; mem++) { /* the smallest mem whose segment budget is at least need */
        m = open_sample(mem);
        if (yfs_mount_segment_budget(m) >= need)
            break;
        yfs_mount_close(m);
    }
    cr_assert_lt(yfs_mount_segment_budget(m), too_much);
    yfs_view *v;
    cr_assert_eq(yfs_view_open(m, 0, 0, 0, &v, &err), 0);

    touch(m, v, s0, 1);             /* segment 1: first byte only */
    touch(m, v, 0, (size_t)s0);     /* segment 0: read to its end, used more recently */
    touch(m, v, s0 + s1, 1);        /* segment 2: needs room for one */
    touch(m, v, s0 + 1, (size_t)s1 - 1); /* the rest of segment 1 */

    cr_assert_eq(yfs_counter(&m->stats.segments_built), 3,
                 "segment 1 was dropped and built again (%llu builds)",
                 (unsigned long long)yfs_counter(&m->stats.segments_built));
    cr_assert_eq(yfs_counter(&m->stats.segments_evicted), 1);
    yfs_view_close(v);
    yfs_mount_close(m);
}
