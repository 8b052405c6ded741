/* The read path without a mount: random reads equal a sequential read,
 * parts partition the epoch, and everything is deterministic. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tfs.h"
#include "yfs_view.h"

/* The sample, started (prefetch workers run). */
static yfs_mount *open_sample(const char *extra)
{
    /* small segments and little memory, so reads cross segments and evict */
    yfs_mount *m = tfs_open_sample("buffer=300,mem=1M,threads=2", extra, 0);
    pq_error err;
    cr_assert_eq(yfs_mount_start(m, &err), 0, "%s", err.msg);
    return m;
}

/* Read [off, off+len) of a view into out; returns bytes read. */
static size_t read_range(yfs_view *v, uint64_t off, size_t len, uint8_t *out)
{
    size_t done = 0;
    while (done < len) {
        size_t got;
        pq_error err;
        cr_assert_eq(yfs_view_read(v, off + done, len - done, out + done, &got, &err), 0, "%s",
                     err.msg);
        if (got == 0)
            break;
        done += got;
    }
    return done;
}

static uint8_t *read_file(yfs_mount *m, uint64_t epoch, uint64_t part, uint64_t parts,
                          uint64_t *size)
{
    yfs_view *v;
    pq_error err;
    yfs_name n = { .epoch = epoch, .part = part, .parts = parts };
    cr_assert_eq(yfs_view_open(m, &n, &v, &err), 0, "%s", err.msg);
    *size = yfs_view_size(v);
    uint8_t *buf = malloc(*size + 1);
    cr_assert_eq(read_range(v, 0, *size + 100, buf), *size, "reads stop at the size");
    yfs_view_close(v);
    return buf;
}

Test(read_path, random_reads_equal_the_sequential_read)
{
    yfs_mount *m = open_sample(NULL);
    uint64_t size;
    uint8_t *whole = read_file(m, 0, 0, 0, &size);
    cr_assert_eq(size, m->ix->framed_bytes);

    yfs_view *v;
    pq_error err;
    cr_assert_eq(yfs_view_open(m, &(yfs_name){ 0 }, &v, &err), 0);
    uint8_t *piece = malloc(70000);
    srand(5);
    for (int i = 0; i < 300; i++) {
        uint64_t off = (uint64_t)rand() % size;
        size_t len = (size_t)(rand() % 70000);
        size_t got = read_range(v, off, len, piece);
        size_t expect = off + len > size ? (size_t)(size - off) : len;
        cr_assert_eq(got, expect);
        cr_assert_eq(memcmp(piece, whole + off, got), 0, "bytes differ at offset %llu",
                     (unsigned long long)off);
    }
    yfs_view_close(v);
    free(piece);
    free(whole);
    yfs_mount_close(m);
}

/* Multiset of lines, as a sorted array of pointers into buf. */
static int by_line(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **sorted_lines(char *buf, uint64_t size, size_t *count)
{
    size_t n = 0;
    for (uint64_t i = 0; i < size; i++)
        n += buf[i] == '\n';
    char **lines = malloc((n + 1) * sizeof *lines);
    size_t k = 0;
    char *start = buf;
    for (uint64_t i = 0; i < size; i++) {
        if (buf[i] == '\n') {
            buf[i] = '\0';
            lines[k++] = start;
            start = buf + i + 1;
        }
    }
    qsort(lines, n, sizeof *lines, by_line);
    *count = n;
    return lines;
}

Test(read_path, parts_together_hold_exactly_the_epoch)
{
    yfs_mount *m = open_sample("rowid");
    uint64_t size;
    char *whole = (char *)read_file(m, 1, 0, 0, &size);
    size_t n_whole;
    char **expect = sorted_lines(whole, size, &n_whole);
    cr_assert_eq(n_whole, m->ix->num_records);

    uint64_t parts_list[] = { 1, 3, 8 };
    for (int t = 0; t < 3; t++) {
        uint64_t parts = parts_list[t], total = 0;
        char *all = malloc(size + 1);
        for (uint64_t i = 0; i < parts; i++) {
            uint64_t ps;
            uint8_t *p = read_file(m, 1, i, parts, &ps);
            memcpy(all + total, p, ps);
            total += ps;
            free(p);
        }
        cr_assert_eq(total, size);
        size_t n;
        char **got = sorted_lines(all, total, &n);
        cr_assert_eq(n, n_whole);
        for (size_t k = 0; k < n; k++)
            cr_assert_str_eq(got[k], expect[k]);
        free(got);
        free(all);
    }
    free(expect);
    free(whole);
    yfs_mount_close(m);
}

Test(read_path, epochs_differ_and_repeat_exactly)
{
    yfs_mount *m = open_sample(NULL);
    uint64_t s0, s1, s0b;
    uint8_t *e0 = read_file(m, 0, 0, 0, &s0);
    uint8_t *e1 = read_file(m, 1, 0, 0, &s1);
    yfs_mount_close(m);
    m = open_sample("threads=1,mem=64M");
    uint8_t *e0b = read_file(m, 0, 0, 0, &s0b);
    cr_assert_eq(s0, s1);
    cr_assert_neq(memcmp(e0, e1, s0), 0, "epochs 0 and 1 have different orders");
    cr_assert_eq(s0, s0b);
    cr_assert_eq(memcmp(e0, e0b, s0), 0, "same epoch, other threads and memory: same bytes");
    free(e0);
    free(e1);
    free(e0b);
    yfs_mount_close(m);
}
