/* yfs_segment.h: how many threads a build frames its units with. One
 * reader has all the mount's workers; readers open at once over fast
 * storage share them, at least one each (builds are then work for the
 * cores, and each framing thread holds a decoded page or a stream at its
 * bound); over slow storage every build has them all (they keep its reads
 * in flight at once), unless the cores are busy (more threads do no more
 * work then: each holds a stream or a decoded page). */
#include <criterion/criterion.h>
#include <stdatomic.h>

#include "yfs_segment.h"

/* cpu_percent: the process's share of its 2 cores over the last window */
static uint32_t framing_threads_of(int workers, int readers, uint64_t read_ns,
                                   unsigned cpu_percent)
{
    yfs_mount m = { .workers = workers };
    atomic_init(&m.readers, readers);
    yfs_latency_init(&m.read_latency);
    for (int i = 0; read_ns && i < 64; i++)
        yfs_latency_note(&m.read_latency, read_ns);
    const uint64_t second = 1000u * 1000 * 1000;
    yfs_cpu_init(&m.cpu, 2);
    yfs_cpu_note(&m.cpu, second, 0);
    yfs_cpu_note(&m.cpu, 2 * second, 2 * second * cpu_percent / 100);
    uint32_t threads = yfs_segment_framing_threads(&m);
    yfs_cpu_destroy(&m.cpu);
    yfs_latency_destroy(&m.read_latency);
    return threads;
}

static uint32_t framing_threads(int workers, int readers, uint64_t read_ns)
{
    return framing_threads_of(workers, readers, read_ns, 100);
}

Test(segment, readers_open_at_once_over_fast_storage_share_the_framing_threads)
{
    const uint64_t fast = 30 * 1000; /* ns */
    cr_assert_eq(framing_threads(4, 0, 0), 4, "no reader open (a prefetch): all of them");
    cr_assert_eq(framing_threads(4, 1, fast), 4);
    cr_assert_eq(framing_threads(4, 2, fast), 2);
    cr_assert_eq(framing_threads(4, 3, fast), 2, "rounded up");
    cr_assert_eq(framing_threads(4, 8, fast), 1, "at least one each");
    cr_assert_eq(framing_threads(4, 8, 0), 1, "before the first read: fast");
    cr_assert_eq(framing_threads(16, 8, fast), 2);
    cr_assert_eq(framing_threads(64, 1, fast), 4, "at most 4");
    cr_assert_eq(framing_threads(1, 1, fast), 1);
}

Test(segment, over_slow_storage_every_build_frames_with_all_the_threads_while_the_cores_have_room)
{
    const uint64_t slow = 50 * 1000 * 1000; /* ns */
    cr_assert_eq(framing_threads_of(4, 8, slow, 60), 4);
    cr_assert_eq(framing_threads_of(4, 2, slow, 60), 4);
    cr_assert_eq(framing_threads_of(64, 8, slow, 60), 4, "at most 4");
    cr_assert_eq(framing_threads_of(4, 8, slow, 0), 4, "the cores idle");
}

Test(segment, over_slow_storage_builds_share_the_threads_while_the_cores_are_busy)
{
    const uint64_t slow = 50 * 1000 * 1000, fast = 30 * 1000; /* ns */
    cr_assert_eq(framing_threads_of(4, 8, slow, 95), 1, "at least one each");
    cr_assert_eq(framing_threads_of(4, 2, slow, 95), 2);
    cr_assert_eq(framing_threads_of(4, 8, slow, 74), 4, "just under busy: all of them");
    cr_assert_eq(framing_threads_of(4, 8, slow, 75), 1, "busy from 75%");
    cr_assert_eq(framing_threads_of(4, 1, slow, 95), 4, "one reader: all of them");
    cr_assert_eq(framing_threads_of(4, 0, slow, 95), 4, "no reader open (a prefetch): all of them");
    cr_assert_eq(framing_threads_of(4, 8, fast, 60), 1, "fast storage: shared, busy or not");
}
