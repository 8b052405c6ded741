/* yfs_latency.h — the latency of the last YFS_LATENCY_KEPT storage reads,
 * for stats.json's median and p99 (yfs_loads.h notes every read of a
 * source, yfs_report.h shows them). Thread-safe (one mutex).
 */
#ifndef YFS_LATENCY_H
#define YFS_LATENCY_H

#include <pthread.h>
#include <stdint.h>

#define YFS_LATENCY_KEPT 1024

typedef struct yfs_latency {
    pthread_mutex_t lock;            /* guards the two below */
    uint64_t ns[YFS_LATENCY_KEPT];   /* a ring: read k is at k % YFS_LATENCY_KEPT */
    uint64_t count;                  /* reads noted so far */
} yfs_latency;

void yfs_latency_init(yfs_latency *l);
void yfs_latency_destroy(yfs_latency *l);
void yfs_latency_note(yfs_latency *l, uint64_t ns);
/* Median and 99th percentile of the reads kept (0 before the first). */
void yfs_latency_get(yfs_latency *l, uint64_t *p50_ns, uint64_t *p99_ns);

#endif
