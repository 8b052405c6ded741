#include "ix_parallel.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef struct run {
    ix_task_fn fn;
    void *ctx;
    size_t n;

    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t done_cond;
    size_t next;          /* next task to claim */
    size_t done;          /* tasks finished (or abandoned after a failure) */
    int workers_left;
    size_t failed_index;  /* lowest failed index, n if none */
    pq_error failed_err;
    double task_seconds;  /* wall time of the tasks finished since the last growth tick */
    size_t task_count;    /* ... and how many they are */
} run;

double ix_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
    run *r = arg;
    pq_error err;
    pthread_mutex_lock(&r->lock);
    while (r->next < r->n && r->failed_index == r->n) {
        size_t i = r->next++;
        pthread_mutex_unlock(&r->lock);
        err.msg[0] = '\0';
        double t0 = ix_now();
        int rc = r->fn(r->ctx, i, &err);
        double t1 = ix_now();
        pthread_mutex_lock(&r->lock);
        r->done++;
        r->task_seconds += t1 - t0;
        r->task_count++;
        if (rc < 0 && i < r->failed_index) {
            r->failed_index = i;
            r->failed_err = err;
        }
    }
    r->workers_left--;
    pthread_cond_broadcast(&r->done_cond);
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* CPU time the process has used, in seconds. */
static double process_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Start up to `more` workers (r->lock held); returns how many started. */
static int start_workers(run *r, pthread_t *tids, int started, int more)
{
    int n = 0;
    while (n < more && pthread_create(&tids[started + n], NULL, worker, r) == 0) {
        n++;
        r->workers_left++;
    }
    return n;
}

int ix_parallel_for(size_t n, int threads, ix_task_fn fn, void *ctx, const char *label,
                    pq_error *err)
{
    return ix_parallel_for_growing(n, threads, threads, fn, ctx, label, err);
}

int ix_parallel_for_growing(size_t n, int threads, int max_threads, ix_task_fn fn, void *ctx,
                            const char *label, pq_error *err)
{
    if (n == 0)
        return 0;
    if (threads < 1)
        threads = 1;
    if ((size_t)threads > n)
        threads = (int)n;
    if (max_threads < threads)
        max_threads = threads;
    if ((size_t)max_threads > n)
        max_threads = (int)n;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    double busy = 0.75 * (double)(cores > 0 ? cores : 1); /* cores' worth of CPU: computing */

    run r = { .fn = fn, .ctx = ctx, .n = n, .failed_index = n };
    pthread_mutex_init(&r.lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&r.done_cond, &attr);
    pthread_condattr_destroy(&attr);

    pthread_t *tids = calloc((size_t)max_threads, sizeof *tids);
    int started = 0;
    pthread_mutex_lock(&r.lock);
    if (tids)
        started = start_workers(&r, tids, 0, threads);
    pthread_mutex_unlock(&r.lock);
    if (started == 0) /* no thread could be started: do the work here */
        worker(&r);

    double start = ix_now(), last_print = start;
    double tick_wall = start, tick_cpu = process_cpu();
    int printed = 0;
    pthread_mutex_lock(&r.lock);
    while (r.workers_left > 0) {
        int growing = started > 0 && started < max_threads && r.next < n &&
                      r.failed_index == n;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        if (growing) {
            until.tv_nsec += IX_GROW_TICK_US * 1000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
        } else {
            until.tv_sec += 1;
        }
        pthread_cond_timedwait(&r.done_cond, &r.lock, &until);
        double now = ix_now();
        if (growing && now - tick_wall >= IX_GROW_TICK_US / 1e6) {
            double cpu = process_cpu();
            /* Tasks slow (none finished, or a mean of a tick or more) while
             * the cores are not busy: they wait on storage. */
            int slow = r.task_count == 0 ||
                       r.task_seconds >= (double)r.task_count * IX_GROW_TICK_US / 1e6;
            if (slow && cpu - tick_cpu < busy * (now - tick_wall)) {
                int more = started < max_threads - started ? started : max_threads - started;
                started += start_workers(&r, tids, started, more);
            }
            tick_wall = now;
            tick_cpu = cpu;
            r.task_seconds = 0;
            r.task_count = 0;
        }
        if (label && now - start >= 1.0 && now - last_print >= 1.0) {
            fprintf(stderr, "\r%s: %zu/%zu", label, r.done, n);
            printed = 1;
            last_print = now;
        }
    }
    pthread_mutex_unlock(&r.lock);
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    free(tids);
    if (printed)
        fprintf(stderr, "\r%s: %zu/%zu done in %.1f s\n", label, r.done, n, ix_now() - start);

    pthread_cond_destroy(&r.done_cond);
    pthread_mutex_destroy(&r.lock);
    if (r.failed_index < n) {
        if (err)
            *err = r.failed_err;
        return -1;
    }
    return 0;
}
