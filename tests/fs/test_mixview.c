/* A mixture's files read without a mount (yfs_mixview.h): reads of one file
 * run at once and in any order, and a segment counts as read to its end
 * (the cache may drop it first) only once every byte it gives the file was
 * copied out. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs.h"
#include "yfs_budget.h"
#include "yfs_mix.h"
#include "yfs_view.h"

/* The sample's three files as three sources weighted by their rows; small
 * segments (buffer=300: about 100 records a source's segment), and no
 * chunk loads (the mount is not started: no engine would run them). */
static yfs_mount *open_mixture(const char **path)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"sources\": [{\"path\": \"%s/part-0.parquet\", \"weight\": 1200},"
             " {\"path\": \"%s/part-1.parquet\", \"weight\": 900},"
             " {\"path\": \"%s/part-2.parquet\", \"weight\": 1400}]}",
             TFS_SAMPLE, TFS_SAMPLE, TFS_SAMPLE);
    *path = tfs_write_mix(text);
    return tfs_open(*path, "buffer=300,chunk=0", NULL, 0);
}

/* Segments built by every source. */
static uint64_t built(const yfs_mount *m)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < m->mix->n; i++)
        n += yfs_counter(&m->mix->sources[i]->stats.segments_built);
    return n;
}

static void read_exactly(yfs_view *v, uint64_t off, size_t len, uint8_t *out)
{
    size_t got;
    pq_error err;
    cr_assert_eq(yfs_view_read(v, off, len, out, &got, &err), 0, "%s", err.msg);
    cr_assert_eq(got, len);
}

/* What a prefetch asking for all the room frees: only segments read to
 * their end (yfs_cache.h). */
static void drop_what_was_read_to_the_end(yfs_mount *m)
{
    uint64_t limit = yfs_budget_limit(m->budget);
    if (yfs_budget_reserve(m->budget, limit, YFS_MEM_SEGMENTS, YFS_PREFETCH, NULL) == 0)
        yfs_budget_release(m->budget, limit, YFS_MEM_SEGMENTS, NULL);
}

Test(mixview, a_segment_read_backwards_is_built_once)
{
    const char *path;
    yfs_mount *m = open_mixture(&path);
    yfs_view *v;
    pq_error err;
    cr_assert_eq(yfs_view_open(m, &(yfs_name){ 0 }, &v, &err), 0, "%s", err.msg);
    uint64_t size = yfs_view_size(v), half = size / 2;
    uint8_t *whole = malloc(size), *backwards = malloc(size);
    cr_assert(whole && backwards);
    read_exactly(v, 0, size, whole);
    uint64_t in_order = built(m); /* each segment of the file once: memory is ample */
    yfs_view_close(v);
    yfs_mount_close(m);

    /* The second half first, as the kernel's readahead may send it: it
     * copies the last records of the segments under the middle of the file
     * (one a source), not their first ones. Those must outlive a prefetch's
     * call for room, or the first half builds them again. */
    m = open_mixture(&path);
    cr_assert_eq(yfs_view_open(m, &(yfs_name){ 0 }, &v, &err), 0, "%s", err.msg);
    read_exactly(v, half, size - half, backwards + half);
    drop_what_was_read_to_the_end(m);
    read_exactly(v, 0, half, backwards);
    cr_assert_eq(memcmp(whole, backwards, size), 0, "the bytes differ from a read in order");
    cr_assert_eq(built(m), in_order, "%llu segments built, %llu reading in order",
                 (unsigned long long)built(m), (unsigned long long)in_order);
    yfs_view_close(v);
    yfs_mount_close(m);
    tfs_remove_mix(path);
    free(whole);
    free(backwards);
}
