/* yfs_cpu.h: the process's share of its cores, window by window. */
#include <criterion/criterion.h>
#include <time.h>

#include "yfs_cpu.h"

#define MS (1000u * 1000)

Test(cpu, a_window_of_cpu_time_near_the_cores_is_busy)
{
    yfs_cpu c;
    yfs_cpu_init(&c, 2);
    cr_assert_not(yfs_cpu_busy(&c), "no verdict before a window ends");
    yfs_cpu_note(&c, 1000 * MS, 50 * MS);
    yfs_cpu_note(&c, 1400 * MS, 800 * MS);
    cr_assert_not(yfs_cpu_busy(&c), "a window shorter than YFS_CPU_WINDOW_NS gives none");
    /* 600 ms on the wall, 1.0 s of CPU time since the window began: 83% of 2 cores */
    yfs_cpu_note(&c, 1600 * MS, 1050 * MS);
    cr_assert(yfs_cpu_busy(&c));
    /* the next window: 0.6 s of CPU over 1 s, 30% of 2 cores */
    yfs_cpu_note(&c, 2600 * MS, 1650 * MS);
    cr_assert_not(yfs_cpu_busy(&c));
    yfs_cpu_destroy(&c);
}

Test(cpu, the_share_is_of_the_cores_given)
{
    yfs_cpu one, four;
    yfs_cpu_init(&one, 1);
    yfs_cpu_init(&four, 4);
    for (int i = 0; i < 2; i++) { /* 0.9 s of CPU over 1 s */
        yfs_cpu_note(&one, (uint64_t)(1 + i) * 1000 * MS, (uint64_t)i * 900 * MS);
        yfs_cpu_note(&four, (uint64_t)(1 + i) * 1000 * MS, (uint64_t)i * 900 * MS);
    }
    cr_assert(yfs_cpu_busy(&one));
    cr_assert_not(yfs_cpu_busy(&four), "a fourth of four cores");
    yfs_cpu_destroy(&one);
    yfs_cpu_destroy(&four);
}

Test(cpu, sampling_a_process_that_spins_finds_its_core_busy)
{
    yfs_cpu c;
    yfs_cpu_init(&c, 1);
    yfs_cpu_sample(&c);
    struct timespec start, now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
    do /* spin for 0.6 s of CPU time on this one thread */
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) <
           600L * 1000 * 1000);
    yfs_cpu_sample(&c);
    cr_assert(yfs_cpu_busy(&c));
    yfs_cpu_destroy(&c);
}
