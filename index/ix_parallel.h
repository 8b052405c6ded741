/* ix_parallel.h — run n independent tasks on a few threads (mount-time work:
 * footers, page passes).
 *
 * Tasks are claimed in index order by `threads` workers. After the first
 * failure no new task starts; the error reported is the one of the lowest
 * failed index, so the message does not depend on timing. When `label` is not
 * NULL and the work takes more than a second, progress ("label: 12/40") is
 * printed on stderr by the calling thread, which otherwise just waits.
 */
#ifndef IX_PARALLEL_H
#define IX_PARALLEL_H

#include <stddef.h>

#include "pq_error.h"

typedef int (*ix_task_fn)(void *ctx, size_t index, pq_error *err);

int ix_parallel_for(size_t n, int threads, ix_task_fn fn, void *ctx, const char *label,
                    pq_error *err);

/* ix_parallel_for for tasks that may wait on storage: it starts with
 * `threads` workers and, while tasks are left, doubles them (up to
 * max_threads) after every tick of IX_GROW_TICK_US in which the tasks were
 * slow (none finished, or they took a tick or more on average) while the
 * process used less than 3/4 of the online cores: the workers wait, not
 * compute, so more reads can be in flight. Over fast storage (short tasks,
 * or busy cores) no thread is added; over storage that answers in
 * milliseconds max_threads are reached within a few ticks. Same contract
 * otherwise. */
#define IX_GROW_TICK_US 2000
int ix_parallel_for_growing(size_t n, int threads, int max_threads, ix_task_fn fn, void *ctx,
                            const char *label, pq_error *err);

/* Seconds on a monotonic clock (for the timings in index.json). */
double ix_now(void);

#endif
