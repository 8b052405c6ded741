/* ix_parallel_for_growing: threads added while tasks wait, the same
 * contract as ix_parallel_for (every task once, the lowest failed index). */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "ix_parallel.h"

#define TASKS 64

typedef struct tasks {
    atomic_int runs[TASKS];
    long sleep_ns;
    size_t fail_from; /* tasks at or after this index fail */
} tasks;

static int task(void *ctx, size_t i, pq_error *err)
{
    tasks *t = ctx;
    atomic_fetch_add(&t->runs[i], 1);
    struct timespec d = { 0, t->sleep_ns };
    nanosleep(&d, NULL);
    if (i >= t->fail_from)
        return pq_error_set(err, "task %zu failed", i);
    return 0;
}

Test(parallel, waiting_tasks_get_more_threads)
{
    static tasks t = { .sleep_ns = 20 * 1000 * 1000, .fail_from = TASKS };
    pq_error err;
    double start = ix_now();
    cr_assert_eq(ix_parallel_for_growing(TASKS, 1, TASKS, task, &t, NULL, &err), 0);
    double took = ix_now() - start;
    for (int i = 0; i < TASKS; i++)
        cr_assert_eq(atomic_load(&t.runs[i]), 1, "task %d", i);
    /* one thread would take 64 x 20 ms = 1.28 s */
    cr_assert_lt(took, 0.64, "%.3f s", took);
}

Test(parallel, the_lowest_failed_index_is_reported)
{
    static tasks t = { .sleep_ns = 1000 * 1000, .fail_from = 10 };
    pq_error err;
    cr_assert_eq(ix_parallel_for_growing(TASKS, 2, 16, task, &t, NULL, &err), -1);
    cr_assert_str_eq(err.msg, "task 10 failed");
    for (int i = 0; i < 10; i++)
        cr_assert_eq(atomic_load(&t.runs[i]), 1, "task %d", i);
}
