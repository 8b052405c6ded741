#include "yfs_ahead.h"

#include "yfs_cache.h"
#include "yfs_io.h"

void yfs_ahead(yfs_mount *m, yfs_plan *plan, const sh_part *part, uint64_t from,
               uint64_t allowance, const void *reader, uint64_t *io_next, int in_order)
{
    yfs_io_ahead(m->io, plan, part, from, reader, io_next, in_order);
    uint64_t queued = 0;
    for (uint64_t j = from; j < part->count && j < from + (uint64_t)m->opts.readahead; j++) {
        uint64_t s = sh_part_segment(part, j);
        queued += plan->plan.segments[s].bytes;
        if (queued > allowance || yfs_cache_prefetch(m->cache, plan, s) < 0)
            break;
    }
}
