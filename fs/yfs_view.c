#include "yfs_view.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "sh_deal.h"
#include "yfs_ahead.h"
#include "yfs_budget.h"
#include "yfs_io.h"
#include "yfs_mixview.h"
#include "yfs_plans.h"

struct yfs_view {
    yfs_mount *m;
    yfs_mixview *mix; /* a mixture's file (yfs_mixview.h): nothing below is used */
    yfs_plan *plan;
    sh_part part;
    uint64_t io_next; /* the part's first segment whose loads are not queued (yfs_io.h,
                         which guards it: reads of one file may run at once) */
    _Atomic uint64_t *served; /* part.count: bytes of each piece copied out so far
                                 (yfs_cache_served) */
    _Atomic uint64_t read_end; /* where the last read ended */
};

/* Where a record of a segment starts, for the pieces of a part that cut a
 * segment (sh_part_build). */
typedef struct offset_ctx {
    yfs_view *v;
    pq_error *err;
} offset_ctx;

static int record_offset(void *ctx, uint64_t s, uint32_t record, uint64_t *out)
{
    offset_ctx *c = ctx;
    yfs_mount *m = c->v->m;
    const sh_plan *plan = &c->v->plan->plan;
    const sh_segment *seg = &plan->segments[s];
    assert(record <= seg->records);
    if (plan->rows) { /* shuffle=row: every record's size is known */
        uint64_t at = 0;
        for (uint32_t r = 0; r < record; r++)
            at += m->record_bytes[plan->rows[seg->first + r]];
        *out = at;
        return 0;
    }
    yfs_seg *built;
    if (yfs_cache_get(m->cache, c->v->plan, s, c->v, &built, c->err) < 0)
        return -1;
    *out = yfs_seg_record_start(built, record);
    yfs_cache_put(m->cache, built);
    return 0;
}

/* The pieces of the file named n. */
static int file_pieces(yfs_mount *m, const sh_plan *plan, const yfs_name *n, sh_pieces *out)
{
    if (n->parts == 0)
        return sh_epoch_stream(plan, out);
    if (n->given_parts == 0)
        return sh_deal_part(plan, n->part, n->parts, m->opts.even, out);
    return sh_resume_part(plan, n->given_parts, n->given, n->part, n->parts, m->opts.even, out);
}

int yfs_view_open(yfs_mount *m, const yfs_name *n, yfs_view **out, pq_error *err)
{
    if (n->parts != 0 && n->part >= n->parts)
        return pq_error_set(err, "part %llu of %llu does not exist", (unsigned long long)n->part,
                            (unsigned long long)n->parts);
    yfs_view *v = calloc(1, sizeof *v);
    if (!v)
        return pq_error_set(err, "out of memory");
    v->m = m;
    if (m->mix) {
        if (yfs_mixview_open(m->mix, n, &v->mix, err) < 0) {
            free(v);
            return -1;
        }
        *out = v;
        return 0;
    }
    if (yfs_plans_get(m->plans, n->epoch, &v->plan, err) < 0) {
        free(v);
        return -1;
    }
    sh_pieces pieces;
    offset_ctx ctx = { v, err };
    err->msg[0] = '\0';
    if (file_pieces(m, &v->plan->plan, n, &pieces) < 0 ||
        sh_part_build(&v->plan->plan, pieces.v, pieces.n, record_offset, &ctx, &v->part) < 0) {
        yfs_plans_put(m->plans, v->plan);
        free(v);
        return err->msg[0] ? -1 : pq_error_set(err, "out of memory");
    }
    if (!(v->served = yfs_cache_served_new(v->part.count))) {
        sh_part_free(&v->part);
        yfs_plans_put(m->plans, v->plan);
        free(v);
        return pq_error_set(err, "out of memory");
    }
    yfs_plan_note_part(v->plan, &v->part);
    yfs_io_reader_at(m->io, v->plan, &v->part, 0, v);
    atomic_fetch_add_explicit(&m->readers, 1, memory_order_relaxed);
    *out = v;
    return 0;
}

void yfs_view_close(yfs_view *v)
{
    if (!v)
        return;
    if (v->mix) {
        yfs_mixview_close(v->mix);
        free(v);
        return;
    }
    yfs_io_forget(v->m->io, v);
    atomic_fetch_sub_explicit(&v->m->readers, 1, memory_order_relaxed);
    free(v->served);
    sh_part_free(&v->part);
    yfs_plans_put(v->m->plans, v->plan);
    free(v);
}

uint64_t yfs_view_size(const yfs_view *v)
{
    if (v->mix)
        return yfs_mixview_size(v->mix);
    return sh_part_size(&v->part);
}

int yfs_view_read(yfs_view *v, uint64_t offset, size_t size, uint8_t *out, size_t *got,
                  pq_error *err)
{
    if (v->mix)
        return yfs_mixview_read(v->mix, offset, size, out, got, err);
    uint64_t file_size = yfs_view_size(v);
    *got = 0;
    if (offset >= file_size || size == 0)
        return 0;
    if (size > file_size - offset)
        size = (size_t)(file_size - offset);

    uint64_t k = sh_part_find(&v->part, offset);
    size_t done = 0;
    while (done < size && k < v->part.count) {
        uint64_t piece = v->part.offsets[k + 1] - v->part.offsets[k];
        if (piece == 0) { /* all-null pages, or an empty cut: nothing to serve */
            k++;
            continue;
        }
        yfs_seg *seg;
        uint64_t s = sh_part_segment(&v->part, k);
        if (yfs_cache_get(v->m->cache, v->plan, s, v, &seg, err) < 0)
            return -1;
        uint64_t start = v->part.starts[k], end = start + piece;
        uint64_t within = start + offset + done - v->part.offsets[k];
        uint64_t avail = end - within;
        size_t len = size - done < avail ? size - done : (size_t)avail;
        yfs_seg_copy(seg, within, out + done, len);
        yfs_cache_served(v->m->cache, seg, &v->served[k], len, piece, end == yfs_seg_size(seg));
        yfs_cache_put(v->m->cache, seg);
        done += len;
        k++;
    }
    yfs_io_served(v->m->io, done);
    uint64_t before = atomic_exchange_explicit(&v->read_end, offset + done, memory_order_relaxed);
    uint64_t gap = offset > before ? offset - before : before - offset;
    uint64_t allowance = yfs_ahead_view_allowance(v->m, v->plan, &v->part, k);
    yfs_ahead(v->m, v->plan, &v->part, k, allowance, v, &v->io_next,
              gap <= YFS_AHEAD_SEQUENTIAL_SLACK);
    *got = done;
    return 0;
}
