#include "yfs_ahead.h"

#include <stdatomic.h>

#include "yfs_cache.h"
#include "yfs_io.h"

uint64_t yfs_ahead_allowance(const yfs_mount *m)
{
    int alone = atomic_load_explicit(&m->readers, memory_order_relaxed) <= 1 &&
                yfs_latency_slow(&m->read_latency);
    return yfs_mount_data_budget(m) / (alone ? YFS_AHEAD_ALONE_SHARE : YFS_AHEAD_BUDGET_SHARE);
}

void yfs_ahead(yfs_mount *m, yfs_plan *plan, const sh_part *part, uint64_t from,
               uint64_t allowance, const void *reader, uint64_t *io_next, int in_order)
{
    yfs_io_ahead(m->io, plan, part, from, reader, io_next, in_order);
    uint64_t queued = 0;
    for (uint64_t j = from; j < part->count && j < from + (uint64_t)m->opts.readahead; j++) {
        uint64_t s = sh_part_segment(part, j);
        queued += plan->plan.segments[s].bytes;
        if (queued > allowance || yfs_cache_prefetch(m->cache, plan, s, reader) < 0)
            break;
    }
}
