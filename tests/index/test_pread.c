/* Reads of a source with transient errors retried (ix_pread.h), against a
 * scripted source: no file, no mount. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

#include "ix_pread.h"
#include "ix_store.h"

#define FILE_BYTES 100

/* A source of FILE_BYTES bytes (byte k is k) whose first `fail` reads fail:
 * with errno `error`, or, when error is 0, as a short read (0 bytes). Every
 * read after that returns at most `chunk` bytes (0: all asked). */
typedef struct script {
    int fail;
    int error;
    size_t chunk;
    int64_t size;  /* what size() says */
    int calls;
} script;

static ssize_t script_pread(void *ctx, void *buf, size_t len, uint64_t offset)
{
    script *s = ctx;
    s->calls++;
    if (s->fail > 0) {
        s->fail--;
        if (s->error) {
            errno = s->error;
            return -1;
        }
        return 0;
    }
    if (offset >= FILE_BYTES)
        return 0;
    size_t n = len < FILE_BYTES - offset ? len : (size_t)(FILE_BYTES - offset);
    if (s->chunk && n > s->chunk)
        n = s->chunk;
    for (size_t k = 0; k < n; k++)
        ((uint8_t *)buf)[k] = (uint8_t)(offset + k);
    return (ssize_t)n;
}

static int64_t script_size(void *ctx)
{
    return ((script *)ctx)->size;
}

static const ix_retry_policy quick = { 5, 1, 4, 0 };

static int read_script(script *s, size_t len, uint64_t offset, uint8_t *buf, int *tries,
                       pq_error *err)
{
    ix_read_ops ops = { script_pread, script_size, s, NULL };
    return ix_read_retry(&ops, "a.parquet", buf, len, offset, &quick, tries, err);
}

static void assert_bytes(const uint8_t *buf, size_t len, uint64_t offset)
{
    for (size_t k = 0; k < len; k++)
        cr_assert_eq(buf[k], (uint8_t)(offset + k), "byte %zu", k);
}

Test(pread, each_transient_error_is_retried_until_the_read_succeeds)
{
    const int errors[] = { EINTR, EAGAIN, ETIMEDOUT, ESTALE, 0 /* short read */ };
    for (size_t e = 0; e < sizeof errors / sizeof *errors; e++)
        for (int k = 0; k < quick.tries; k++) {
            script s = { .fail = k, .error = errors[e], .size = FILE_BYTES };
            uint8_t buf[40];
            int tries = -1;
            pq_error err = { "" };
            cr_assert_eq(read_script(&s, sizeof buf, 10, buf, &tries, &err), 0,
                         "errno %d, %d failures: %s", errors[e], k, err.msg);
            cr_assert_eq(tries, k);
            cr_assert_eq(s.calls, k + 1);
            assert_bytes(buf, sizeof buf, 10);
        }
}

Test(pread, gives_up_after_the_bound_naming_file_offset_and_error)
{
    script s = { .fail = 1000, .error = EAGAIN, .size = FILE_BYTES };
    uint8_t buf[40];
    int tries = -1;
    pq_error err;
    cr_assert_eq(read_script(&s, sizeof buf, 10, buf, &tries, &err), -1);
    cr_assert_eq(s.calls, quick.tries);
    cr_assert_eq(tries, quick.tries);
    cr_assert(strstr(err.msg, "a.parquet: read of 40 bytes at offset 10 failed after 5 tries"),
              "%s", err.msg);
    cr_assert(strstr(err.msg, strerror(EAGAIN)), "%s", err.msg);
}

Test(pread, short_reads_before_the_end_give_up_after_the_bound)
{
    script s = { .fail = 1000, .error = 0, .size = FILE_BYTES };
    uint8_t buf[40];
    pq_error err;
    cr_assert_eq(read_script(&s, sizeof buf, 10, buf, NULL, &err), -1);
    cr_assert_eq(s.calls, quick.tries);
    cr_assert(strstr(err.msg, "a.parquet: read of 40 bytes at offset 10 failed after 5 tries: "
                              "short read: no byte at offset 10 of a 100-byte file"),
              "%s", err.msg);
}

Test(pread, partial_reads_go_on_where_they_stopped)
{
    script s = { .chunk = 7, .size = FILE_BYTES };
    uint8_t buf[90];
    int tries = -1;
    pq_error err = { "" };
    cr_assert_eq(read_script(&s, sizeof buf, 3, buf, &tries, &err), 0, "%s", err.msg);
    cr_assert_eq(tries, 0);
    cr_assert_eq(s.calls, (90 + 6) / 7);
    assert_bytes(buf, sizeof buf, 3);
}

Test(pread, the_real_end_fails_at_once)
{
    script s = { .size = FILE_BYTES };
    uint8_t buf[40];
    pq_error err;
    cr_assert_eq(read_script(&s, sizeof buf, 80, buf, NULL, &err), -1);
    cr_assert_eq(s.calls, 2); /* 20 bytes, then the end: no retry */
    cr_assert(strstr(err.msg, "a.parquet: file ends before byte 120 (wanted 40 bytes at offset "
                              "80)"), "%s", err.msg);
}

Test(pread, other_errors_fail_at_once)
{
    script s = { .fail = 1, .error = EIO, .size = FILE_BYTES };
    uint8_t buf[40];
    pq_error err;
    cr_assert_eq(read_script(&s, sizeof buf, 0, buf, NULL, &err), -1);
    cr_assert_eq(s.calls, 1);
    cr_assert(strstr(err.msg, "a.parquet: read of 40 bytes at offset 0 failed: "), "%s", err.msg);
    cr_assert(strstr(err.msg, strerror(EIO)), "%s", err.msg);
}

Test(pread, an_unknown_size_counts_as_a_short_read)
{
    script s = { .fail = 2, .error = 0, .size = -1 };
    uint8_t buf[10];
    int tries = -1;
    pq_error err = { "" };
    cr_assert_eq(read_script(&s, sizeof buf, 0, buf, &tries, &err), 0, "%s", err.msg);
    cr_assert_eq(tries, 2);
    assert_bytes(buf, sizeof buf, 0);
}

Test(pread, backoff_doubles_up_to_its_cap)
{
    /* 4 waits of 1, 2, 4, 4 ms under { 5, 1000, 4000 }: at least 11 ms. */
    const ix_retry_policy slow = { 5, 1000, 4000, 0 };
    script s = { .fail = 1000, .error = ESTALE, .size = FILE_BYTES };
    ix_read_ops ops = { script_pread, script_size, &s, NULL };
    uint8_t buf[4];
    pq_error err;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    cr_assert_eq(ix_read_retry(&ops, "a.parquet", buf, sizeof buf, 0, &slow, NULL, &err), -1);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    cr_assert_geq(ms, 11.0);
    cr_assert_eq(s.calls, 5);
}

Test(pread, a_real_file_reads_exactly_through_its_store_and_names_a_truncation)
{
    char path[] = "/tmp/yfs-pread-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    uint8_t data[FILE_BYTES];
    for (int k = 0; k < FILE_BYTES; k++)
        data[k] = (uint8_t)k;
    cr_assert_eq(write(fd, data, sizeof data), (ssize_t)sizeof data);
    close(fd);
    ix_store *store;
    pq_error err = { "" };
    cr_assert_eq(ix_store_open(path, NULL, &store, &err), 0, "%s", err.msg);
    cr_assert_eq(ix_store_is_remote(path), 0);
    struct stat st;
    int handle;
    cr_assert_eq(ix_store_open_object(store, ix_store_name(store, path), &handle, &st, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(st.st_size, FILE_BYTES);
    uint8_t buf[50];
    cr_assert_eq(ix_store_read(store, handle, "f.parquet", buf, sizeof buf, 25, &err), 0, "%s",
                 err.msg);
    assert_bytes(buf, sizeof buf, 25);
    cr_assert_eq(ix_store_read(store, handle, "f.parquet", buf, sizeof buf, 60, &err), -1);
    cr_assert(strstr(err.msg, "f.parquet: file ends before byte 110"), "%s", err.msg);
    ix_store_close(store, handle);
    ix_store_free(store);
    unlink(path);
}
