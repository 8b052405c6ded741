#include "yfs_view.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "yfs_budget.h"
#include "yfs_io.h"
#include "yfs_plans.h"

/* How far a reader's prefetch runs ahead: at most readahead= segments, and
 * at most this fraction (1/N) of the segment budget, so several readers
 * share the budget instead of one taking it all. */
#define PREFETCH_BUDGET_SHARE 4

/* A read this close to where the last one ended goes on reading the file
 * in order (the kernel's readahead may deliver a sequential reader's reads
 * a little out of order): the I/O engine reads ahead of it. A reader whose
 * reads jump (random access) gets no read-ahead: its window would be loads
 * nobody reads. */
#define SEQUENTIAL_SLACK (8u << 20)

struct yfs_view {
    yfs_mount *m;
    yfs_plan *plan;
    sh_part part;
    uint64_t io_next; /* the part's first segment whose loads are not queued (yfs_io.h,
                         which guards it: reads of one file may run at once) */
    _Atomic uint64_t read_end; /* where the last read ended */
};

int yfs_view_open(yfs_mount *m, uint64_t epoch, uint64_t part, uint64_t parts, yfs_view **out,
                  pq_error *err)
{
    if (parts == 0) {
        parts = 1;
        part = 0;
    }
    if (part >= parts)
        return pq_error_set(err, "part %llu of %llu does not exist", (unsigned long long)part,
                            (unsigned long long)parts);
    yfs_view *v = calloc(1, sizeof *v);
    if (!v)
        return pq_error_set(err, "out of memory");
    v->m = m;
    if (yfs_plans_get(m->plans, epoch, &v->plan, err) < 0) {
        free(v);
        return -1;
    }
    if (sh_part_build(&v->plan->plan, part, parts, &v->part) < 0) {
        yfs_plans_put(m->plans, v->plan);
        free(v);
        return pq_error_set(err, "out of memory");
    }
    *out = v;
    return 0;
}

void yfs_view_close(yfs_view *v)
{
    if (!v)
        return;
    yfs_io_forget(v->m->io, v);
    sh_part_free(&v->part);
    yfs_plans_put(v->m->plans, v->plan);
    free(v);
}

uint64_t yfs_view_size(const yfs_view *v)
{
    return sh_part_size(&v->part);
}

/* Queue the segments after the part's k-th for building. */
static void prefetch_after(yfs_view *v, uint64_t k)
{
    uint64_t allowance = yfs_mount_data_budget(v->m) / PREFETCH_BUDGET_SHARE;
    uint64_t queued = 0;
    for (uint64_t j = k + 1; j < v->part.count && j <= k + (uint64_t)v->m->opts.readahead; j++) {
        uint64_t s = sh_part_segment(&v->part, j);
        queued += v->plan->plan.segments[s].bytes;
        if (queued > allowance || yfs_cache_prefetch(v->m->cache, v->plan, s) < 0)
            break;
    }
}

int yfs_view_read(yfs_view *v, uint64_t offset, size_t size, uint8_t *out, size_t *got,
                  pq_error *err)
{
    uint64_t file_size = yfs_view_size(v);
    *got = 0;
    if (offset >= file_size || size == 0)
        return 0;
    if (size > file_size - offset)
        size = (size_t)(file_size - offset);

    uint64_t k = sh_part_find(&v->part, offset);
    size_t done = 0;
    while (done < size && k < v->part.count) {
        yfs_seg *seg;
        uint64_t s = sh_part_segment(&v->part, k);
        if (v->plan->plan.segments[s].bytes == 0) { /* all-null pages: nothing to serve */
            k++;
            continue;
        }
        if (yfs_cache_get(v->m->cache, v->plan, s, v, &seg, err) < 0)
            return -1;
        uint64_t within = offset + done - v->part.offsets[k];
        uint64_t avail = yfs_seg_size(seg) - within;
        size_t len = size - done < avail ? size - done : (size_t)avail;
        if (len == avail)
            yfs_cache_consumed(v->m->cache, seg);
        yfs_seg_copy(seg, within, out + done, len);
        yfs_cache_put(v->m->cache, seg);
        done += len;
        k++;
    }
    uint64_t before = atomic_exchange_explicit(&v->read_end, offset + done, memory_order_relaxed);
    uint64_t gap = offset > before ? offset - before : before - offset;
    yfs_io_ahead(v->m->io, v->plan, &v->part, k - 1, v, &v->io_next, gap <= SEQUENTIAL_SLACK);
    prefetch_after(v, k - 1);
    *got = done;
    return 0;
}
