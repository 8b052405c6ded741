#include "yfs_latency.h"

#include <stdlib.h>
#include <string.h>

void yfs_latency_init(yfs_latency *l)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->lock, NULL);
}

void yfs_latency_destroy(yfs_latency *l)
{
    pthread_mutex_destroy(&l->lock);
}

void yfs_latency_note(yfs_latency *l, uint64_t ns)
{
    pthread_mutex_lock(&l->lock);
    uint32_t slow = atomic_load_explicit(&l->slow, memory_order_relaxed);
    uint32_t now = ns >= YFS_LATENCY_SLOW_NS ? 65536u : 0;
    slow = l->count == 0 ? now : slow - slow / 8 + now / 8;
    atomic_store_explicit(&l->slow, slow, memory_order_relaxed);
    l->ns[l->count++ % YFS_LATENCY_KEPT] = ns;
    pthread_mutex_unlock(&l->lock);
}

int yfs_latency_slow(const yfs_latency *l)
{
    return atomic_load_explicit(&l->slow, memory_order_relaxed) > 32768u;
}

static int ascending(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

void yfs_latency_get(yfs_latency *l, uint64_t *p50_ns, uint64_t *p99_ns)
{
    uint64_t sorted[YFS_LATENCY_KEPT];
    pthread_mutex_lock(&l->lock);
    size_t n = l->count < YFS_LATENCY_KEPT ? (size_t)l->count : YFS_LATENCY_KEPT;
    memcpy(sorted, l->ns, n * sizeof *sorted);
    pthread_mutex_unlock(&l->lock);
    *p50_ns = *p99_ns = 0;
    if (n == 0)
        return;
    qsort(sorted, n, sizeof *sorted, ascending);
    *p50_ns = sorted[n / 2];
    *p99_ns = sorted[n * 99 / 100];
}
