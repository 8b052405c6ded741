/* A mixture's files read without a mount (yfs_mixview.h): a segment counts
 * as read to its end only once every byte it gives the file was copied out
 * (tfs_check_read_backwards). */
#include <criterion/criterion.h>
#include <stdio.h>

#include "tfs.h"
#include "yfs_mix.h"

/* The sample's three files as three sources weighted by their rows, in a
 * mixture file written by the test. */
static const char *mix_path;

/* Small segments (buffer=300: about 100 records a source's segment), and
 * no chunk loads (the mount is not started: no engine would run them). */
static yfs_mount *open_mixture(void)
{
    return tfs_open(mix_path, "buffer=300,chunk=0", NULL, 0);
}

/* Segments built by every source. */
static uint64_t built(yfs_mount *m)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < m->mix->n; i++)
        n += yfs_counter(&m->mix->sources[i]->stats.segments_built);
    return n;
}

Test(mixview, a_segment_read_backwards_is_built_once)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"sources\": [{\"path\": \"%s/part-0.parquet\", \"weight\": 1200},"
             " {\"path\": \"%s/part-1.parquet\", \"weight\": 900},"
             " {\"path\": \"%s/part-2.parquet\", \"weight\": 1400}]}",
             TFS_SAMPLE, TFS_SAMPLE, TFS_SAMPLE);
    mix_path = tfs_write_mix(text);
    tfs_check_read_backwards(open_mixture, built);
    tfs_remove_mix(mix_path);
}
