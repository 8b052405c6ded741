#include "ix_parallel.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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
        int rc = r->fn(r->ctx, i, &err);
        pthread_mutex_lock(&r->lock);
        r->done++;
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

int ix_parallel_for(size_t n, int threads, ix_task_fn fn, void *ctx, const char *label,
                    pq_error *err)
{
    if (n == 0)
        return 0;
    if (threads < 1)
        threads = 1;
    if ((size_t)threads > n)
        threads = (int)n;

    run r = { .fn = fn, .ctx = ctx, .n = n, .failed_index = n };
    pthread_mutex_init(&r.lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&r.done_cond, &attr);
    pthread_condattr_destroy(&attr);

    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    int started = 0;
    pthread_mutex_lock(&r.lock);
    for (int t = 0; tids && t < threads; t++) {
        if (pthread_create(&tids[t], NULL, worker, &r) != 0)
            break;
        started++;
        r.workers_left++;
    }
    pthread_mutex_unlock(&r.lock);
    if (started == 0) /* no thread could be started: do the work here */
        worker(&r);

    double start = ix_now();
    int printed = 0;
    pthread_mutex_lock(&r.lock);
    while (r.workers_left > 0) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += 1;
        int rc = pthread_cond_timedwait(&r.done_cond, &r.lock, &until);
        if (rc == ETIMEDOUT && label && ix_now() - start >= 1.0) {
            fprintf(stderr, "\r%s: %zu/%zu", label, r.done, n);
            printed = 1;
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
