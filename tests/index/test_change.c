/* Change detection without a mount (ix_index.h, "Change detection"): what
 * changes no byte (chmod, a hard link) keeps reads working; a page rewritten
 * in place with the file's size, mtime and footer put back is caught by its
 * checksum; a footer rewrite, a new mtime or size by the file check; page
 * checksums are learned only while the ctime is the index's; the persistent
 * index keeps them, and a cached file found with another ctime is compared. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "ix_index.h"
#include "tix.h"
#include "ix_read.h"

static char dataset[TIX_PATH], cache[TIX_PATH];

static void setup(void)
{
    tix_copy_sample(dataset, cache);
}

static void teardown(void)
{
    tix_remove(dataset, cache);
}

TestSuite(change, .init = setup, .fini = teardown);

static ix_index *build(int cached)
{
    ix_options o = { .dataset = dataset, .frame = { .format = IX_FORMAT_JSONL }, .threads = 2,
                     .cache_dir = cached ? cache : NULL };
    ix_index *ix;
    pq_error err;
    cr_assert_eq(ix_build(&o, &ix, &err), 0, "%s", err.msg);
    return ix;
}

/* The file the tests change: part-1.parquet (two row groups). */
#define FILE_NO 1

static const char *path_of(const ix_index *ix, uint32_t file)
{
    return ix->files[file].path;
}

/* Read global page p through the read path into a fresh buffer (NULL on
 * error, with err set). */
static uint8_t *read_page_raw(const ix_index *ix, uint64_t p, pq_error *err)
{
    const ix_page *pg = &ix->pages[p];
    uint32_t file = ix->chunks[ix_locate(ix, p)].file;
    uint8_t *buf = malloc(pg->length);
    uint64_t bytes = 0;
    if (ix_read_range(ix, file, pg->offset, buf, pg->length, p, 1, &bytes, err) < 0) {
        free(buf);
        return NULL;
    }
    cr_assert_eq(bytes, pg->length);
    return buf;
}

/* Every page of the file reads back with the given bytes. */
static void assert_file_reads(const ix_index *ix, uint32_t file, uint8_t **want)
{
    const ix_file *f = &ix->files[file];
    uint64_t end = file + 1 < ix->num_files ? ix->files[file + 1].first_page : ix->num_pages;
    for (uint64_t p = f->first_page; p < end; p++) {
        pq_error err;
        uint8_t *got = read_page_raw(ix, p, &err);
        cr_assert_not_null(got, "page %llu: %s", (unsigned long long)p, err.msg);
        cr_assert_eq(memcmp(got, want[p - f->first_page], ix->pages[p].length), 0);
        free(got);
    }
}

static uint8_t **read_file_pages(const ix_index *ix, uint32_t file)
{
    const ix_file *f = &ix->files[file];
    uint64_t end = file + 1 < ix->num_files ? ix->files[file + 1].first_page : ix->num_pages;
    uint8_t **pages = calloc(end - f->first_page, sizeof *pages);
    for (uint64_t p = f->first_page; p < end; p++) {
        pq_error err;
        pages[p - f->first_page] = read_page_raw(ix, p, &err);
        cr_assert_not_null(pages[p - f->first_page], "%s", err.msg);
    }
    return pages;
}

static void free_pages(const ix_index *ix, uint32_t file, uint8_t **pages)
{
    uint64_t end = file + 1 < ix->num_files ? ix->files[file + 1].first_page : ix->num_pages;
    for (uint64_t p = ix->files[file].first_page; p < end; p++)
        free(pages[p - ix->files[file].first_page]);
    free(pages);
}

/* XOR one byte at `at` of the file in place, keeping its size and putting
 * its atime and mtime back: only the ctime shows it. */
static void flip_byte_keep_mtime(const char *path, uint64_t at)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    int fd = open(path, O_RDWR);
    cr_assert_geq(fd, 0);
    uint8_t b;
    cr_assert_eq(pread(fd, &b, 1, (off_t)at), 1);
    b ^= 0x5a;
    cr_assert_eq(pwrite(fd, &b, 1, (off_t)at), 1);
    close(fd);
    struct timespec times[2] = { st.st_atim, st.st_mtim };
    cr_assert_eq(utimensat(AT_FDCWD, path, times, 0), 0);
    struct stat now;
    cr_assert_eq(stat(path, &now), 0);
    cr_assert(now.st_size == st.st_size && now.st_mtim.tv_sec == st.st_mtim.tv_sec &&
              now.st_mtim.tv_nsec == st.st_mtim.tv_nsec && now.st_ino == st.st_ino);
}

/* ctimes have the kernel's tick as resolution: wait one out so a change shows. */
static void next_tick(void)
{
    usleep(20000);
}

Test(change, crc_of_zero_is_kept_as_one)
{
    /* bytes whose CRC-32 is 0 (solved for the last four) */
    const uint8_t zero[] = { 'y', 'o', 'u', 'm', 'u', 'f', 's', 233, 251, 8, 32 };
    cr_assert_eq((uint32_t)crc32(0, zero, sizeof zero), 0);
    cr_assert_eq(ix_page_crc(zero, sizeof zero), 1);
    cr_assert_eq(ix_page_crc((const uint8_t *)"a", 1), (uint32_t)crc32(0, (const Bytef *)"a", 1));
}

Test(change, every_page_decoded_at_mount_has_its_checksum)
{
    ix_index *ix = build(0);
    cr_assert_gt(ix->num_pages, 0);
    for (uint64_t p = 0; p < ix->num_pages; p++) {
        const ix_page *pg = &ix->pages[p];
        const ix_file *f = &ix->files[ix->chunks[ix_locate(ix, p)].file];
        uint8_t *buf = malloc(pg->length);
        cr_assert_eq(pread(f->fd, buf, pg->length, (off_t)pg->offset), (ssize_t)pg->length);
        cr_assert_eq(atomic_load(&pg->crc), ix_page_crc(buf, pg->length), "page %llu",
                     (unsigned long long)p);
        free(buf);
    }
    ix_free(ix);
}

Test(change, chmod_and_a_hard_link_keep_every_read_exact)
{
    ix_index *ix = build(0);
    uint8_t **before = read_file_pages(ix, FILE_NO);
    const char *path = path_of(ix, FILE_NO);
    pq_error err;
    cr_assert_eq(ix_check_file(ix, FILE_NO, &err), 0, "%s", err.msg);

    next_tick();
    cr_assert_eq(chmod(path, 0600), 0);
    cr_assert_eq(ix_check_file(ix, FILE_NO, &err), 1, "a chmod is a ctime move, not a change");
    assert_file_reads(ix, FILE_NO, before);

    next_tick();
    char link_path[2 * TIX_PATH];
    snprintf(link_path, sizeof link_path, "%s.link", path);
    cr_assert_eq(link(path, link_path), 0);
    assert_file_reads(ix, FILE_NO, before);
    next_tick();
    cr_assert_eq(unlink(link_path), 0);
    assert_file_reads(ix, FILE_NO, before);

    /* deleted: the open descriptor still reads the indexed inode */
    next_tick();
    cr_assert_eq(unlink(path), 0);
    assert_file_reads(ix, FILE_NO, before);
    free_pages(ix, FILE_NO, before);
    ix_free(ix);
}

Test(change, a_page_rewritten_with_size_mtime_and_footer_kept_fails_by_its_checksum)
{
    ix_index *ix = build(0);
    const ix_file *f = &ix->files[FILE_NO];
    cr_assert_geq(f->num_chunks, 2);
    const ix_chunk *first = &ix->chunks[f->first_chunk];
    uint64_t p = first->first_page, other = ix->chunks[f->first_chunk + 1].first_page;
    const ix_page *pg = &ix->pages[p];
    uint8_t **before = read_file_pages(ix, FILE_NO);

    next_tick();
    flip_byte_keep_mtime(f->path, pg->offset + pg->length / 2);
    pq_error err;
    cr_assert_eq(ix_check_file(ix, FILE_NO, &err), 1, "the footer is unchanged: %s", err.msg);
    cr_assert_null(read_page_raw(ix, p, &err), "the changed page is served");
    char want[128];
    snprintf(want, sizeof want, "data page at offset %llu no longer has the bytes indexed",
             (unsigned long long)pg->offset);
    cr_assert(strstr(err.msg, "part-1.parquet") && strstr(err.msg, want), "%s", err.msg);

    /* the file's other pages still read, exactly */
    uint8_t *got = read_page_raw(ix, other, &err);
    cr_assert_not_null(got, "%s", err.msg);
    cr_assert_eq(memcmp(got, before[other - f->first_page], ix->pages[other].length), 0);
    free(got);

    /* a chunk load covering the changed page fails as a whole */
    const ix_page *last = &ix->pages[p + first->num_pages - 1];
    uint64_t len = last->offset + last->length - pg->offset, bytes = 0;
    uint8_t *range = malloc(len);
    cr_assert_lt(ix_read_range(ix, FILE_NO, pg->offset, range, len, p, first->num_pages, &bytes,
                               &err), 0);
    free(range);

    /* the dictionary of the chunk, if any, still reads */
    if (first->dict_offset >= 0) {
        pq_dictionary d;
        cr_assert_eq(ix_read_dictionary(ix, f->first_chunk, &d, &bytes, &err), 0, "%s", err.msg);
        pq_dictionary_free(&d);
    }
    free_pages(ix, FILE_NO, before);
    ix_free(ix);
}

/* Flip one byte inside the footer's ARROW:schema value (youmufs does not read
 * it), as tests/index/test_cache.c does: same size and mtime. */
static void flip_footer_byte(const char *path)
{
    static uint8_t buf[1 << 17];
    int fd = open(path, O_RDONLY);
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    cr_assert(n > 0 && (size_t)n < sizeof buf);
    const char key[] = "ARROW:schema";
    uint8_t *at = memmem(buf, (size_t)n, key, sizeof key - 1);
    cr_assert_not_null(at);
    flip_byte_keep_mtime(path, (uint64_t)(at - buf) + sizeof key - 1 + 3 + 10);
}

Test(change, a_rewritten_footer_or_a_new_mtime_fails_the_file)
{
    ix_index *ix = build(0);
    pq_error err;
    next_tick();
    flip_footer_byte(path_of(ix, FILE_NO));
    cr_assert_eq(ix_check_file(ix, FILE_NO, &err), -1);
    cr_assert(strstr(err.msg, "part-1.parquet") && strstr(err.msg, "changed since mount"), "%s",
              err.msg);
    cr_assert_null(read_page_raw(ix, ix->files[FILE_NO].first_page, &err));

    /* a new mtime (touch -m) is a change even if no byte is */
    const char *p0 = path_of(ix, 0);
    cr_assert_eq(utimensat(AT_FDCWD, p0, NULL, 0), 0);
    cr_assert_eq(ix_check_file(ix, 0, &err), -1);
    cr_assert(strstr(err.msg, "part-0.parquet"), "%s", err.msg);
    /* so is a new size */
    const char *p2 = path_of(ix, 2);
    struct stat st;
    cr_assert_eq(stat(p2, &st), 0);
    cr_assert_eq(truncate(p2, st.st_size + 1), 0);
    cr_assert_eq(ix_check_file(ix, 2, &err), -1);
    ix_free(ix);
}

Test(change, checksums_are_learned_only_while_the_ctime_is_the_indexs)
{
    ix_index *ix = build(0);
    uint64_t p = ix->files[FILE_NO].first_page;
    ix_page *pg = &ix->pages[p];
    uint32_t truth = atomic_load(&pg->crc);
    pq_error err;

    /* as a page sized from metadata: unknown, learned at its first read */
    atomic_store(&pg->crc, 0);
    free(read_page_raw(ix, p, &err));
    cr_assert_eq(atomic_load(&pg->crc), truth, "learned at the first read");

    /* once the ctime moved, an unknown checksum is not learned, and the
     * footer check is all that guards the page: the documented limit */
    atomic_store(&pg->crc, 0);
    next_tick();
    cr_assert_eq(chmod(path_of(ix, FILE_NO), 0600), 0);
    uint8_t *got = read_page_raw(ix, p, &err);
    cr_assert_not_null(got, "%s", err.msg);
    free(got);
    cr_assert_eq(atomic_load(&pg->crc), 0, "not learned after a ctime move");
    next_tick();
    flip_byte_keep_mtime(path_of(ix, FILE_NO), pg->offset + pg->length / 2);
    got = read_page_raw(ix, p, &err);
    cr_assert_not_null(got, "an unknown checksum cannot catch this (ix_index.h): %s", err.msg);
    free(got);
    /* the same page with its checksum known is caught */
    atomic_store(&pg->crc, truth);
    cr_assert_null(read_page_raw(ix, p, &err));
    ix_free(ix);
}

Test(change, the_persistent_index_keeps_checksums_and_is_compared_after_a_rewrite)
{
    ix_index *first = build(1);
    ix_index *again = build(1);
    cr_assert_eq(again->files_cached, again->num_files);
    cr_assert_eq(again->num_pages, first->num_pages);
    for (uint64_t p = 0; p < first->num_pages; p++)
        cr_assert_eq(atomic_load(&again->pages[p].crc), atomic_load(&first->pages[p].crc));
    for (uint32_t c = 0; c < first->num_chunks; c++)
        cr_assert_eq(atomic_load(&again->chunks[c].dict_crc),
                     atomic_load(&first->chunks[c].dict_crc));
    for (uint32_t i = 0; i < again->num_files; i++)
        cr_assert_eq(again->files[i].ctime_ns, first->files[i].ctime_ns,
                     "same inode, same ctime: the checksums are the file's");
    ix_free(again);

    /* unmounted; a page rewritten with size, mtime and footer put back */
    const ix_page *pg = &first->pages[first->files[FILE_NO].first_page];
    uint64_t changed = pg->offset + pg->length / 2, page = first->files[FILE_NO].first_page;
    next_tick();
    flip_byte_keep_mtime(path_of(first, FILE_NO), changed);
    ix_free(first);

    ix_index *ix = build(1);
    cr_assert_eq(ix->files_cached, ix->num_files, "size, mtime and footer still match");
    cr_assert_eq(ix->files[FILE_NO].ctime_ns, IX_CTIME_UNKNOWN);
    cr_assert_neq(ix->files[0].ctime_ns, IX_CTIME_UNKNOWN);
    pq_error err;
    cr_assert_null(read_page_raw(ix, page, &err), "the cache's page is trusted");
    cr_assert(strstr(err.msg, "part-1.parquet") && strstr(err.msg, "no longer has the bytes"),
              "%s", err.msg);
    uint8_t *ok = read_page_raw(ix, page + 1 < ix->num_pages ? page + 1 : 0, &err);
    cr_assert_not_null(ok, "%s", err.msg);
    free(ok);
    ix_free(ix);
}
