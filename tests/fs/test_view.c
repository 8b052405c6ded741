/* An epoch file read without a mount (yfs_view.h): a segment counts as read
 * to its end only once every byte the file takes of it was copied out
 * (tfs_check_read_backwards), as for a mixture's files (test_mixview.c). */
#include <criterion/criterion.h>

#include "tfs.h"

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
