#include "yfs_ahead.h"

#include <stdatomic.h>

#include "yfs_budget.h"
#include "yfs_cache.h"
#include "yfs_io.h"
#include "yfs_units.h"

uint64_t yfs_ahead_view_allowance(const yfs_mount *m, const yfs_plan *plan, const sh_part *part,
                                  uint64_t from)
{
    if (from >= part->count)
        return yfs_ahead_allowance(m, 0, 0);
    const sh_segment *seg = &plan->plan.segments[sh_part_segment(part, from)];
    uint32_t page;
    int streamed =
        seg->units > 0 && !yfs_unit_likely_whole(m, plan->plan.unit_order[seg->first], &page);
    return yfs_ahead_allowance(m, streamed, seg->bytes);
}

uint64_t yfs_ahead_allowance(const yfs_mount *m, int streamed, uint64_t next)
{
    int readers = atomic_load_explicit(&m->readers, memory_order_relaxed);
    int slow = yfs_latency_slow(&m->read_latency);
    uint64_t budget = yfs_mount_data_budget(m), quarter = budget / YFS_AHEAD_BUDGET_SHARE;
    if (readers <= 1)
        return slow && streamed ? budget / YFS_AHEAD_ALONE_SHARE : quarter;
    if (!slow)
        return quarter;
    uint64_t room = yfs_budget_prefetch_limit(m->budget), loads = yfs_mount_loaded_budget(m);
    uint64_t fair = room > loads ? (room - loads) / (uint64_t)readers : 0;
    fair = fair < quarter ? fair : quarter;
    return fair > next ? fair : next;
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
