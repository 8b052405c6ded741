/* yfs_records.h: the buffers segments and units are framed into. Each is
 * zeroed and resident when handed out and holds the bytes asked for and no
 * more, resident or mapped (nothing is left mapped once it is given back);
 * one of 2 MiB or more starts on a 2 MiB boundary, where the kernel can back
 * it with transparent huge pages. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "yfs_records.h"

#define MIB ((uint64_t)1 << 20)

/* The process's mapped and resident bytes (/proc/self/statm). */
static void memory_bytes(uint64_t *mapped, uint64_t *resident)
{
    FILE *f = fopen("/proc/self/statm", "r");
    cr_assert_not_null(f);
    unsigned long size = 0, rss = 0;
    cr_assert_eq(fscanf(f, "%lu %lu", &size, &rss), 2);
    fclose(f);
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    *mapped = (uint64_t)size * page;
    *resident = (uint64_t)rss * page;
}

static uint64_t page_rounded(uint64_t size)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    return (size + page - 1) / page * page;
}

/* No mapping at [p, p + one page): mincore fails with ENOMEM there. */
static int unmapped(const uint8_t *p)
{
    unsigned char vec;
    return mincore((void *)p, (size_t)sysconf(_SC_PAGESIZE), &vec) < 0 && errno == ENOMEM;
}

Test(segment_buffers, are_zeroed_and_writable_to_their_last_byte_and_huge_ones_are_aligned)
{
    const uint64_t sizes[] = { 1, 4095, 4096, 2 * MIB - 1, 2 * MIB, 2 * MIB + 1,
                               7 * MIB + 12345 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint64_t size = sizes[i];
        uint8_t *b = yfs_segment_alloc(size);
        cr_assert_not_null(b, "size %llu", (unsigned long long)size);
        for (uint64_t at = 0; at < size; at += 1021)
            cr_assert_eq(b[at], 0, "size %llu: byte %llu", (unsigned long long)size,
                         (unsigned long long)at);
        cr_assert_eq(b[size - 1], 0);
        b[size - 1] = 0x5a;
        b[0] = 0xa5;
        cr_assert_eq(b[0], 0xa5);
        cr_assert(size == 1 || b[size - 1] == 0x5a);
        if (size >= 2 * MIB) {
            cr_assert_eq((uintptr_t)b % (2 * MIB), 0, "size %llu at %p",
                         (unsigned long long)size, (void *)b);
        }
        yfs_segment_free(b, size);
        cr_assert(unmapped(b), "size %llu: still mapped after yfs_segment_free",
                  (unsigned long long)size);
    }
}

Test(segment_buffers, are_resident_when_handed_out_and_hold_no_more_than_asked_for)
{
    enum { N = 16 };
    const uint64_t size = 3 * MIB + 1; /* a whole huge page and a tail of small ones */
    uint8_t *b[N];
    uint64_t mapped0, before;
    memory_bytes(&mapped0, &before);
    for (int i = 0; i < N; i++)
        cr_assert_not_null(b[i] = yfs_segment_alloc(size));
    uint64_t mapped, resident;
    memory_bytes(&mapped, &resident);
    uint64_t grown = resident - before;
    cr_assert_geq(grown, N * size, "faulted in when handed out: %llu bytes for %d buffers",
                  (unsigned long long)grown, N);
    cr_assert_leq(grown, N * page_rounded(size) + 2 * MIB,
                  "no more than the bytes asked for: %llu bytes for %d of %llu",
                  (unsigned long long)grown, N, (unsigned long long)size);
    cr_assert_leq(mapped - mapped0, N * page_rounded(size) + 2 * MIB,
                  "no address space kept beyond the buffers: %llu bytes mapped for %d of %llu",
                  (unsigned long long)(mapped - mapped0), N, (unsigned long long)size);
    for (int i = 0; i < N; i++)
        yfs_segment_free(b[i], size);
    memory_bytes(&mapped, &resident);
    cr_assert_leq(resident, before + 2 * MIB, "all given back");
    cr_assert_leq(mapped, mapped0 + 2 * MIB, "no mapping left behind");
}
