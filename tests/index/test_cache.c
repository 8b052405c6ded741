/* The persistent index: reused when files are unchanged, ignored when the
 * cache file is damaged, per-file invalidation when a file changes. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "ix_index.h"

#define SAMPLE YFS_SOURCE_DIR "/examples/sample"

static char dataset[64], cache[64];

/* A private copy of the sample dataset and an empty cache directory. */
static void setup(void)
{
    strcpy(dataset, "/tmp/yfs-cache-ds-XXXXXX");
    strcpy(cache, "/tmp/yfs-cache-dir-XXXXXX");
    cr_assert_not_null(mkdtemp(dataset));
    cr_assert_not_null(mkdtemp(cache));
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp %s/*.parquet %s/", SAMPLE, dataset);
    cr_assert_eq(system(cmd), 0);
}

static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", dataset, cache);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(cache, .init = setup, .fini = teardown);

static ix_index *build(int rowid)
{
    ix_options o = { .dataset = dataset, .frame = { .format = IX_FORMAT_JSONL, .rowid = rowid },
                     .threads = 2, .cache_dir = cache };
    ix_index *ix;
    pq_error err;
    cr_assert_eq(ix_build(&o, &ix, &err), 0, "%s", err.msg);
    return ix;
}

static void assert_same_pages(const ix_index *a, const ix_index *b)
{
    cr_assert_eq(a->num_pages, b->num_pages);
    for (uint64_t p = 0; p < a->num_pages; p++) {
        const ix_page *x = &a->pages[p], *y = &b->pages[p];
        cr_assert(x->offset == y->offset && x->first_row == y->first_row &&
                  x->framed == y->framed && x->length == y->length && x->rows == y->rows &&
                  x->records == y->records, "page %llu differs", (unsigned long long)p);
    }
    cr_assert_eq(a->framed_bytes, b->framed_bytes);
}

/* The one cache file in the cache directory. */
static void cache_file(char *path, size_t cap)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls %s/*.yfsidx", cache);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(fgets(path, (int)cap, p), "no cache file written");
    pclose(p);
    path[strcspn(path, "\n")] = '\0';
}

Test(cache, second_build_reuses_every_file)
{
    ix_index *first = build(0);
    cr_assert_eq(first->files_cached, 0);
    ix_index *second = build(0);
    cr_assert_eq(second->files_cached, second->num_files);
    assert_same_pages(first, second);
    ix_free(first);
    ix_free(second);
}

Test(cache, damaged_cache_files_are_ignored)
{
    ix_index *first = build(0);
    char path[256];
    cache_file(path, sizeof path);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    /* flip one byte in the middle, then truncate: both must be ignored */
    int fd = open(path, O_RDWR);
    uint8_t b;
    cr_assert_eq(pread(fd, &b, 1, st.st_size / 2), 1);
    b ^= 0x40;
    cr_assert_eq(pwrite(fd, &b, 1, st.st_size / 2), 1);
    close(fd);
    ix_index *flipped = build(0);
    cr_assert_eq(flipped->files_cached, 0, "a damaged cache is not trusted");
    assert_same_pages(first, flipped);
    cr_assert_eq(truncate(path, st.st_size / 3), 0);
    ix_index *cut = build(0);
    cr_assert_eq(cut->files_cached, 0);
    assert_same_pages(first, cut);
    ix_index *again = build(0);
    cr_assert_eq(again->files_cached, again->num_files, "the rebuilt cache is valid");
    ix_free(first);
    ix_free(flipped);
    ix_free(cut);
    ix_free(again);
}

Test(cache, a_changed_file_is_scanned_again)
{
    ix_free(build(0));
    char path[256];
    snprintf(path, sizeof path, "%s/part-1.parquet", dataset);
    struct timeval later[2] = { { 2000000000, 0 }, { 2000000000, 0 } };
    cr_assert_eq(utimes(path, later), 0);
    ix_index *ix = build(0);
    cr_assert_eq(ix->files_cached, ix->num_files - 1);
    ix_free(ix);
}

Test(cache, rowid_entries_follow_row_numbers)
{
    ix_free(build(1));
    /* a file added at the end leaves every row number in place */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp %s/part-2.parquet %s/zz.parquet", dataset, dataset);
    cr_assert_eq(system(cmd), 0);
    ix_index *appended = build(1);
    cr_assert_eq(appended->files_cached, 3);
    ix_free(appended);
    /* a new first file shifts every row number, and so every "_row" size */
    snprintf(cmd, sizeof cmd, "cp %s/part-2.parquet %s/a.parquet", dataset, dataset);
    cr_assert_eq(system(cmd), 0);
    ix_index *ix = build(1);
    cr_assert_eq(ix->files_cached, 0);
    ix_index *fresh;
    ix_options o = { .dataset = dataset, .frame = { .format = IX_FORMAT_JSONL, .rowid = 1 },
                     .threads = 2 };
    pq_error err;
    cr_assert_eq(ix_build(&o, &fresh, &err), 0, "%s", err.msg);
    assert_same_pages(ix, fresh);
    ix_free(ix);
    ix_free(fresh);
}
