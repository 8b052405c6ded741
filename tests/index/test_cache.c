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
#include <zlib.h>

#include "ix_cache.h"
#include "ix_index.h"
#include "tix.h"

static char dataset[TIX_PATH], cache[TIX_PATH];

/* A private copy of the sample dataset and an empty cache directory. */
static void setup(void)
{
    tix_copy_sample(dataset, cache);
}

static void teardown(void)
{
    tix_remove(dataset, cache);
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

/* Files and chunks too: a cached file's come from the cache, not its footer. */
static void assert_same_pages(const ix_index *a, const ix_index *b)
{
    cr_assert_eq(a->num_files, b->num_files);
    for (uint32_t i = 0; i < a->num_files; i++) {
        const ix_file *x = &a->files[i], *y = &b->files[i];
        cr_assert(x->num_rows == y->num_rows && x->first_row == y->first_row &&
                  x->first_page == y->first_page && x->first_chunk == y->first_chunk &&
                  x->num_chunks == y->num_chunks && x->size == y->size,
                  "file %u differs", i);
    }
    cr_assert_eq(a->num_chunks, b->num_chunks);
    for (uint32_t c = 0; c < a->num_chunks; c++) {
        const ix_chunk *x = &a->chunks[c], *y = &b->chunks[c];
        cr_assert(x->file == y->file && x->row_group == y->row_group &&
                  memcmp(&x->desc, &y->desc, sizeof x->desc) == 0 &&
                  memcmp(&x->bounds, &y->bounds, sizeof x->bounds) == 0 &&
                  memcmp(&x->dict_claims, &y->dict_claims, sizeof x->dict_claims) == 0 &&
                  x->dict_offset == y->dict_offset && x->dict_length == y->dict_length &&
                  x->has_offset_index == y->has_offset_index && x->first_row == y->first_row &&
                  x->first_page == y->first_page && x->num_pages == y->num_pages,
                  "chunk %u differs", c);
    }
    cr_assert_eq(a->num_rows, b->num_rows);
    cr_assert_eq(a->num_records, b->num_records);
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
    char cmd[2 * TIX_PATH];
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
    cr_assert_eq(second->bytes_scanned, 0, "no page is read again");
    /* the sample's chunks have dictionaries: their claims come back from the cache */
    cr_assert_gt(first->chunks[0].dict_claims.values, 0);
    assert_same_pages(first, second);
    ix_free(first);
    ix_free(second);
}

Test(cache, damaged_cache_files_are_ignored)
{
    ix_index *first = build(0);
    char path[2 * TIX_PATH];
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
    char path[2 * TIX_PATH];
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
    char cmd[3 * TIX_PATH];
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

/* Flip one byte of the footer of part-<n> (inside the ARROW:schema value,
 * which youmufs does not read), keeping the file's size and mtime. */
static void rewrite_footer_keeping_mtime(int n)
{
    char path[2 * TIX_PATH];
    snprintf(path, sizeof path, "%s/part-%d.parquet", dataset, n);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    static uint8_t buf[1 << 17];
    cr_assert_leq((size_t)st.st_size, sizeof buf);
    int fd = open(path, O_RDWR);
    cr_assert_eq(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
    const char key[] = "ARROW:schema";
    uint8_t *at = memmem(buf, (size_t)st.st_size, key, sizeof key - 1);
    cr_assert_not_null(at);
    at += sizeof key - 1 + 3 + 10; /* past the key, the value's type and length: base64 */
    *at = *at == 'A' ? 'B' : 'A';
    cr_assert_eq(pwrite(fd, at, 1, at - buf), 1);
    close(fd);
    struct timespec times[2] = { st.st_atim, st.st_mtim };
    cr_assert_eq(utimensat(AT_FDCWD, path, times, 0), 0);
    struct stat now;
    cr_assert_eq(stat(path, &now), 0);
    cr_assert(now.st_size == st.st_size && now.st_mtim.tv_sec == st.st_mtim.tv_sec &&
              now.st_mtim.tv_nsec == st.st_mtim.tv_nsec);
}

Test(cache, a_new_footer_with_the_same_size_and_mtime_is_read_again)
{
    ix_index *first = build(0);
    rewrite_footer_keeping_mtime(1);
    ix_index *ix = build(0);
    cr_assert_eq(ix->files_cached, ix->num_files - 1, "part-1's entry is not reused");
    assert_same_pages(first, ix);
    ix_index *again = build(0);
    cr_assert_eq(again->files_cached, again->num_files, "its new entry is");
    ix_free(first);
    ix_free(ix);
    ix_free(again);
}

Test(cache, a_new_first_footer_is_read_again)
{
    ix_free(build(0));
    rewrite_footer_keeping_mtime(0);
    ix_index *ix = build(0);
    cr_assert_eq(ix->files_cached, ix->num_files - 1);
    ix_free(ix);
}

/* Byte offset in the cache file of the first entry's fields (see
 * ix_cache.h and put_index in ix_cache.c). */
enum {
    AT_VERSION = 8,
    /* from the end of the first entry's name */
    AT_SIZE = 0,
    AT_NUM_CHUNKS = 64,
    AT_DICT_OFFSET = 76,
    AT_NUM_PAGES = 96,
    AT_PAGE_OFFSET = 100,
    AT_PAGE_LENGTH = 116,
    AT_PAGE_RECORDS = 124,
};

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Overwrite a field of the cache file and fix its CRC: a well-formed file
 * that lies. after_name: `at` counts from the end of the first entry's name. */
static void patch_cache(int after_name, size_t at, uint64_t value, int bytes)
{
    char path[2 * TIX_PATH];
    cache_file(path, sizeof path);
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    static uint8_t buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf, f);
    cr_assert(len > 32 && len < sizeof buf);
    if (after_name) {
        size_t entry = 8 + 4 + 4 + get_le32(buf + 12) + 4;
        at += entry + 4 + get_le32(buf + entry);
    }
    cr_assert_leq(at + (size_t)bytes, len - 4);
    put_le(buf + at, value, bytes);
    put_le(buf + len - 4, (uint32_t)crc32(0, buf, (uInt)(len - 4)), 4);
    rewind(f);
    cr_assert_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
}

/* Each lie is caught: by the parse, which ignores the whole cache file, or
 * (a wrong size) by the lookup, which ignores the entry. Either way the index
 * is the one built without a cache. */
Test(cache, a_well_formed_cache_file_that_lies_is_ignored)
{
    struct {
        int after_name;
        size_t at;
        uint64_t value;
        int bytes;
        uint32_t files_ignored; /* 0: all of them */
        const char *what;
    } lies[] = {
        { 0, AT_VERSION, IX_CACHE_VERSION - 1, 4, 0, "an older format version" },
        { 1, AT_NUM_CHUNKS, 0xffffffffu, 4, 0, "more chunks than bytes" },
        { 1, AT_NUM_PAGES, 0x10000000u, 4, 0, "more pages than bytes" },
        { 1, AT_PAGE_OFFSET, 1ull << 40, 8, 0, "a page beyond the file's end" },
        { 1, AT_PAGE_LENGTH, 0xfffffff0u, 4, 0, "a page longer than the file" },
        { 1, AT_PAGE_RECORDS, 0xffffffffu, 4, 0, "more records than rows" },
        { 1, AT_DICT_OFFSET, (uint64_t)-2, 8, 0, "a negative dictionary offset" },
        { 1, AT_SIZE, 1ull << 40, 8, 1, "a file size the file does not have" },
    };
    ix_index *fresh = build(0);
    for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
        patch_cache(lies[i].after_name, lies[i].at, lies[i].value, lies[i].bytes);
        ix_index *ix = build(0);
        uint32_t ignored = lies[i].files_ignored ? lies[i].files_ignored : ix->num_files;
        cr_assert_eq(ix->files_cached, ix->num_files - ignored, "%s is trusted", lies[i].what);
        assert_same_pages(fresh, ix);
        ix_free(ix); /* rewrote a truthful cache file */
    }
    ix_free(fresh);
}
