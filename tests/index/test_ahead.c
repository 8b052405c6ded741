/* ix_ahead.h: a range read ahead in windows hands over exactly the file's
 * bytes, in order, whatever the sizes of the reads and however deep it
 * goes; counts each window once; deepens as far as it may when its
 * consumer waits; closes at any point; and a read that fails is reported
 * when the consumer reaches it, naming the file, every time after. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ix_ahead.h"
#include "ix_index.h"
#include "tix.h"

static ix_index *build(const char *dataset)
{
    ix_options o = { .dataset = dataset, .column = "text", .frame = { IX_FORMAT_JSONL },
                     .threads = 1 };
    ix_index *ix;
    pq_error err;
    cr_assert_eq(ix_build(&o, &ix, &err), 0, "%s: %s", dataset, err.msg);
    return ix;
}

/* The bytes [offset, offset + length) of the index's file 0, by pread. */
static uint8_t *file_bytes(const ix_index *ix, const char *dataset, uint64_t offset,
                           size_t length)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dataset, ix->files[0].name);
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0, "%s", path);
    uint8_t *buf = malloc(length);
    cr_assert_eq(pread(fd, buf, length, (off_t)offset), (ssize_t)length);
    close(fd);
    return buf;
}

Test(ahead, reads_of_any_size_give_the_files_bytes_in_order)
{
    ix_index *ix = build(TIX_SAMPLE);
    uint64_t offset = 4, length = ix->files[0].size - 12; /* inside the file, odd ends */
    uint8_t *want = file_bytes(ix, TIX_SAMPLE, offset, length);
    static const size_t windows[] = { 333, 4096, 1u << 20 };
    static const size_t reads[] = { 1, 7, 1000, 4096, 65536 };
    uint8_t *got = malloc(length);
    for (size_t w = 0; w < sizeof windows / sizeof *windows; w++)
        for (size_t r = 0; r < sizeof reads / sizeof *reads; r++) {
            pq_error err;
            ix_ahead *a = ix_ahead_open(ix, 0, offset, length, windows[w], IX_AHEAD_WINDOWS, &err);
            cr_assert_not_null(a, "%s", err.msg);
            uint64_t read = 0, at = 0;
            int moved = 0, waited = 0;
            while (at < length) {
                size_t n = length - at < reads[r] ? (size_t)(length - at) : reads[r];
                cr_assert_eq(ix_ahead_read(a, got + at, n, &read, &moved, &waited, &err), 0, "%s",
                             err.msg);
                at += n;
            }
            cr_assert_eq(ix_ahead_close(a), 0, "window %zu, reads of %zu: every window read "
                         "was consumed", windows[w], reads[r]);
            cr_assert(memcmp(got, want, length) == 0, "window %zu, reads of %zu: bytes differ",
                      windows[w], reads[r]);
            cr_assert_eq(read, length, "every window counted once");
            cr_assert_eq(moved, 0);
        }
    free(got);
    free(want);
    ix_free(ix);
}

/* A range extended while it is read (ix_ahead_extend: a stream whose stop
 * moves on, ix_stream_ahead_until) hands over the bytes a range opened that
 * long would have, counted once each, at whatever point it is extended:
 * before any read, in the middle, at the old end; one that ended in a
 * short window is not extended and keeps its bytes. */
Test(ahead, an_extended_range_gives_the_bytes_of_the_longer_one)
{
    ix_index *ix = build(TIX_SAMPLE);
    const size_t window = 4096;
    uint64_t offset = 4, length = ix->files[0].size - 12;
    uint64_t first = 3 * window; /* the range opened: whole windows */
    cr_assert_gt(length, first + window);
    uint8_t *want = file_bytes(ix, TIX_SAMPLE, offset, length);
    uint8_t *got = malloc(length);
    const uint64_t extend_at[] = { 0, window + 5, first };
    for (size_t e = 0; e < sizeof extend_at / sizeof *extend_at; e++) {
        pq_error err;
        ix_ahead *a = ix_ahead_open(ix, 0, offset, first, window, 2, &err);
        cr_assert_not_null(a, "%s", err.msg);
        uint64_t read = 0, at = 0, end = first;
        int moved = 0, waited = 0;
        while (at < length) {
            if (at == extend_at[e] && end == first) {
                cr_assert_eq(ix_ahead_extend(a, length), 0);
                end = length;
            }
            uint64_t stop = end > extend_at[e] && at < extend_at[e] ? extend_at[e] : end;
            size_t n = stop - at < 1000 ? (size_t)(stop - at) : 1000;
            cr_assert_eq(ix_ahead_read(a, got + at, n, &read, &moved, &waited, &err), 0, "%s",
                         err.msg);
            at += n;
        }
        ix_ahead_close(a);
        cr_assert(memcmp(got, want, length) == 0, "extended at %llu: bytes differ",
                  (unsigned long long)extend_at[e]);
        cr_assert_eq(read, length, "extended at %llu: every window counted once",
                     (unsigned long long)extend_at[e]);
    }
    pq_error err;
    ix_ahead *a = ix_ahead_open(ix, 0, offset, first + 100, window, 2, &err);
    cr_assert_not_null(a, "%s", err.msg);
    cr_assert_eq(ix_ahead_extend(a, length), -1, "a short last window is not extended");
    cr_assert_eq(ix_ahead_extend(a, first), -1, "nor a range shortened");
    uint64_t read = 0;
    int moved = 0, waited = 0;
    cr_assert_eq(ix_ahead_read(a, got, first + 100, &read, &moved, &waited, &err), 0, "%s",
                 err.msg);
    cr_assert(memcmp(got, want, first + 100) == 0);
    ix_ahead_close(a);
    free(got);
    free(want);
    ix_free(ix);
}

/* Storage slower than the consumer (2 ms a window): the consumer waits,
 * deepens at each wait up to the most, and gets the same bytes; a range of
 * fewer windows than that stops deepening once every window is in flight. */
Test(ahead, a_consumer_that_waits_deepens_it_to_the_most_with_the_same_bytes)
{
    setenv("YOUMUFS_READ_DELAY_US", "2000", 1); /* read once per process: this test's */
    ix_index *ix = build(TIX_SAMPLE);
    uint64_t length = ix->files[0].size;
    uint8_t *want = file_bytes(ix, TIX_SAMPLE, 0, length);
    uint8_t *got = malloc(length);
    /* 256 windows or so: a wait a round of depth windows, one window more
     * a wait, 120 of them to the most */
    size_t window = length / 256;
    cr_assert_gt(window, 0);
    for (unsigned depth = 1; depth <= IX_AHEAD_WINDOWS_MAX; depth *= 4) {
        pq_error err;
        ix_ahead *a = ix_ahead_open(ix, 0, 0, length, window, depth, &err);
        cr_assert_not_null(a, "%s", err.msg);
        cr_assert_eq(ix_ahead_depth(a), depth);
        uint64_t read = 0, at = 0;
        int moved = 0, waits = 0;
        while (at < length) {
            size_t n = length - at < window / 3 + 1 ? (size_t)(length - at) : window / 3 + 1;
            int waited = 0;
            cr_assert_eq(ix_ahead_read(a, got + at, n, &read, &moved, &waited, &err), 0, "%s",
                         err.msg);
            at += n;
            if (waited) {
                waits++;
                unsigned before = ix_ahead_depth(a);
                int rc = ix_ahead_deepen(a);
                cr_assert_eq(ix_ahead_depth(a), before + (rc == 0));
                cr_assert(rc == 0 || before == IX_AHEAD_WINDOWS_MAX ||
                              at / window + before >= (length + window - 1) / window,
                          "refused only at the most or with every window in flight");
            }
        }
        cr_assert_gt(waits, 0, "2 ms a window: the consumer waited");
        cr_assert_eq(ix_ahead_depth(a), IX_AHEAD_WINDOWS_MAX, "depth %u from %u",
                     ix_ahead_depth(a), depth);
        cr_assert_eq(ix_ahead_deepen(a), -1, "no deeper than the most");
        ix_ahead_close(a);
        cr_assert(memcmp(got, want, length) == 0, "from depth %u: bytes differ", depth);
        cr_assert_eq(read, length, "every window counted once");
    }
    free(got);
    free(want);
    ix_free(ix);
}

/* Closed early, it says how many bytes it read that were never consumed:
 * whole windows of those in flight, none consumed (the window being
 * consumed was counted in *bytes_read when its first byte was taken). */
Test(ahead, closing_before_the_end_stops_the_reads_and_counts_what_they_read_unused)
{
    ix_index *ix = build(TIX_SAMPLE);
    uint64_t length = ix->files[0].size;
    cr_assert_gt(length, 1000, "the sample holds more than the windows in flight");
    for (int stop = 0; stop < 4; stop++) { /* at open, mid-window, after a window; settled */
        pq_error err;
        ix_ahead *a = ix_ahead_open(ix, 0, 0, length, 100, IX_AHEAD_WINDOWS, &err);
        cr_assert_not_null(a, "%s", err.msg);
        uint8_t buf[150];
        uint64_t read = 0;
        int moved = 0, waited = 0;
        if (stop > 0)
            cr_assert_eq(ix_ahead_read(a, buf, stop == 2 ? 150 : 50, &read, &moved, &waited,
                                       &err), 0, "%s", err.msg);
        if (stop == 3) /* the reads in flight land (from the page cache: microseconds) */
            usleep(300 * 1000);
        uint64_t unused = ix_ahead_close(a);
        cr_assert_eq(read, stop == 0 ? 0u : stop == 2 ? 200u : 100u);
        cr_assert_eq(unused % 100, 0, "stop %d: whole windows, got %llu", stop,
                     (unsigned long long)unused);
        /* in flight: the 4 windows at open, 3 besides the one being consumed */
        cr_assert_leq(unused, stop == 0 ? 400u : 300u, "stop %d: %llu", stop,
                      (unsigned long long)unused);
        if (stop == 3)
            cr_assert_eq(unused, 300u, "windows 1-3 were read and never consumed");
    }
    ix_free(ix);
}

Test(ahead, a_failed_read_is_reported_where_it_occurred_and_after)
{
    char dataset[TIX_PATH], cache[TIX_PATH];
    tix_copy_sample(dataset, cache);
    ix_index *ix = build(dataset);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dataset, ix->files[0].name);
    /* the file shrinks under the index: every read of it fails */
    cr_assert_eq(truncate(path, (off_t)(ix->files[0].size / 2)), 0);
    pq_error err;
    ix_ahead *a = ix_ahead_open(ix, 0, 0, ix->files[0].size, 256, IX_AHEAD_WINDOWS, &err);
    cr_assert_not_null(a, "%s", err.msg);
    uint8_t buf[64];
    uint64_t read = 0;
    int moved = 0, waited = 0;
    for (int i = 0; i < 2; i++) {
        err.msg[0] = '\0';
        cr_assert_eq(ix_ahead_read(a, buf, sizeof buf, &read, &moved, &waited, &err), -1);
        cr_assert(strstr(err.msg, ix->files[0].name), "names the file: %s", err.msg);
    }
    cr_assert_eq(read, 0, "nothing read is counted");
    ix_ahead_close(a);
    ix_free(ix);
    tix_remove(dataset, cache);
}
