/* yfs_latency.h — the latency of the last YFS_LATENCY_KEPT storage reads,
 * for stats.json's median and p99 (yfs_loads.h notes every chunk load and
 * page read alone, yfs_units.c the opening read of every page stream, from
 * its start or resumed from a mark; yfs_report.h shows them), and whether
 * storage is slow. Thread-safe (one mutex).
 */
#ifndef YFS_LATENCY_H
#define YFS_LATENCY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define YFS_LATENCY_KEPT 1024

typedef struct yfs_latency {
    pthread_mutex_t lock;            /* guards the two below, and writes of slow */
    uint64_t ns[YFS_LATENCY_KEPT];   /* a ring: read k is at k % YFS_LATENCY_KEPT */
    uint64_t count;                  /* reads noted so far */
    _Atomic uint32_t slow;           /* moving share of reads of YFS_LATENCY_SLOW_NS or
                                        more, in 1/65536, each read weighing an eighth */
} yfs_latency;

/* Storage this slow to answer (a network filesystem, an object store; the
 * page cache and local SSDs answer well under). */
#define YFS_LATENCY_SLOW_NS (1000u * 1000)

void yfs_latency_init(yfs_latency *l);
void yfs_latency_destroy(yfs_latency *l);
void yfs_latency_note(yfs_latency *l, uint64_t ns);
/* Whether most of the last reads took YFS_LATENCY_SLOW_NS or more (a
 * moving share, so a few reads slowed by a busy machine do not count; 0
 * before the first): cheap enough for every FUSE read, without the lock. */
int yfs_latency_slow(const yfs_latency *l);
/* Median and 99th percentile of the reads kept (0 before the first). */
void yfs_latency_get(yfs_latency *l, uint64_t *p50_ns, uint64_t *p99_ns);

#endif
