#include "yfs_units.h"

#include <stdlib.h>
#include <string.h>

#include "ix_record.h"
#include "yfs_loads.h"
#include "yfs_pages.h"
#include "yfs_segment.h"

/* A unit's block: the end of each record (8 bytes each), then the bytes. */
static uint64_t block_size(const sh_unit *u)
{
    return (uint64_t)u->records * sizeof(uint64_t) + u->bytes;
}

static void unit_from_block(yfs_unit *out, const sh_unit *u, uint8_t *block)
{
    *out = (yfs_unit){ .records = u->records, .size = u->bytes, .block = block,
                       .ends = (const uint64_t *)block,
                       .bytes = block + (uint64_t)u->records * sizeof(uint64_t) };
}

/* Frame the unit's records (recs holds its page's) into block. */
static int frame_unit(const ix_framing *f, const ix_record *recs, const sh_unit *u,
                      uint8_t *block, pq_error *err)
{
    uint64_t *ends = (uint64_t *)block;
    uint8_t *bytes = block + (uint64_t)u->records * sizeof(uint64_t), *out = bytes;
    uint8_t *end = bytes + u->bytes;
    for (uint32_t r = 0; r < u->records; r++) {
        out = yfs_frame_record(f, &recs[u->first_record + r], out, (size_t)(end - out), err);
        if (!out)
            return -1;
        ends[r] = (uint64_t)(out - bytes);
    }
    if (out != end)
        return pq_error_set(err, "records fill %llu of the %llu bytes indexed at mount (a "
                            "source file changed?)", (unsigned long long)(out - bytes),
                            (unsigned long long)u->bytes);
    return 0;
}

/* The page's raw bytes: through the plan's chunk loads when it has them. */
static int fetch(yfs_mount *m, yfs_plan *plan, uint32_t page, yfs_hold *hold, uint8_t **raw,
                 uint32_t *len, pq_error *err)
{
    const sh_schedule *sched = &plan->plan.schedule;
    if (sched->num_loads)
        return yfs_page_fetch(m, plan, sched->position[page], hold, raw, len, err);
    return yfs_page_read(m, page, hold, raw, len, err);
}

/* The page's other units, framed from the same decode and parked for the
 * builds that serve them, as far as memory allows without waiting. */
static void park_others(yfs_mount *m, yfs_plan *plan, uint32_t unit, const sh_unit *want,
                        const ix_record *recs, yfs_hold *hold)
{
    const yfs_unit_map *map = &m->units;
    for (uint64_t v = map->cut.first_unit[want->page]; v < map->cut.first_unit[want->page + 1];
         v++) {
        if (v == unit)
            continue;
        sh_unit u = sh_unit_at(m->page_summary, &map->cut, m->ix->num_pages, (uint32_t)v);
        uint64_t size = block_size(&u);
        if (size > UINT32_MAX ||
            yfs_budget_reserve(m->budget, size, YFS_MEM_RAW, YFS_PREFETCH, hold) < 0)
            continue;
        uint8_t *block = malloc(size ? size : 1);
        pq_error ignored; /* whoever needs the unit frames it again, and reports */
        if (!block || frame_unit(&m->ix->framing, recs, &u, block, &ignored) < 0) {
            free(block);
            yfs_budget_release(m->budget, size, YFS_MEM_RAW, hold);
            continue;
        }
        yfs_pages_put(m->framed, plan->plan.epoch, (uint32_t)v, block, (uint32_t)size, hold);
    }
}

uint64_t yfs_unit_block_size(const yfs_mount *m, uint32_t unit)
{
    const sh_cut *cut = m->units.cut.first_unit ? &m->units.cut : NULL;
    sh_unit u = sh_unit_at(m->page_summary, cut, m->ix->num_pages, unit);
    return block_size(&u);
}

/* A block a build frames into: large ones are mapped, like segments, so
 * that freeing them returns their pages instead of leaving holes in the
 * heap that stay resident (fragmentation). Parked blocks (yfs_pages.h frees
 * them) are always malloc'ed. */
#define MAPPED_BLOCK_BYTES (256u << 10)

/* Decode the unit's page and frame the unit (and park the page's others). */
static int frame_from_page(yfs_mount *m, yfs_plan *plan, uint32_t unit, const sh_unit *u,
                           yfs_hold *hold, yfs_unit *out, pq_error *err)
{
    const ix_page *p = &m->ix->pages[u->page];
    uint64_t recs_bytes = (uint64_t)(p->records ? p->records : 1) * sizeof(ix_record);
    yfs_budget_reserve(m->budget, recs_bytes, YFS_MEM_BUILD, YFS_DEMAND, hold);
    ix_record *recs = malloc(recs_bytes);
    uint8_t *raw = NULL;
    uint32_t len = 0;
    pq_page_values values;
    int rc = recs ? fetch(m, plan, u->page, hold, &raw, &len, err)
                  : pq_error_set(err, "out of memory for %u records", p->records);
    if (rc == 0) {
        rc = yfs_page_records(m, u->page, raw, len, hold, &values, recs, err);
        free(raw);
        yfs_budget_release(m->budget, len, YFS_MEM_RAW, hold);
    }
    if (rc == 0) {
        uint64_t size = block_size(u); /* reserved by the caller */
        int mapped = size >= MAPPED_BLOCK_BYTES;
        uint8_t *block = mapped ? yfs_segment_alloc(size) : malloc(size ? size : 1);
        rc = block ? frame_unit(&m->ix->framing, recs, u, block, err)
                   : pq_error_set(err, "out of memory for a %llu-byte unit",
                                  (unsigned long long)size);
        if (rc == 0) {
            unit_from_block(out, u, block);
            out->mapped = mapped;
        } else if (mapped) {
            yfs_segment_free(block, size);
        } else {
            free(block);
        }
        const uint64_t *first = m->units.cut.first_unit;
        if (rc == 0 && first && first[u->page + 1] - first[u->page] > 1)
            park_others(m, plan, unit, u, recs, hold);
        yfs_page_values_drop(m, &values, hold);
    }
    free(recs);
    yfs_budget_release(m->budget, recs_bytes, YFS_MEM_BUILD, hold);
    return rc;
}

int yfs_unit_get(yfs_mount *m, yfs_plan *plan, uint32_t unit, yfs_hold *hold, yfs_unit *out,
                 pq_error *err)
{
    const yfs_unit_map *map = &m->units;
    sh_unit u = sh_unit_at(m->page_summary, map->cut.first_unit ? &map->cut : NULL,
                           m->ix->num_pages, unit);
    if (map->cut.first_unit) {
        uint32_t len;
        uint8_t *block = yfs_pages_take(m->framed, plan->plan.epoch, unit, hold, &len);
        if (block) {
            /* it comes with its charge: the caller's reservation for it goes */
            yfs_budget_release(m->budget, len, YFS_MEM_RAW, hold);
            if (len == block_size(&u)) {
                unit_from_block(out, &u, block);
                return 0;
            }
            free(block); /* cannot happen: its size is the unit's */
        }
    }
    return frame_from_page(m, plan, unit, &u, hold, out, err);
}

void yfs_unit_drop(yfs_unit *u)
{
    if (u->mapped)
        yfs_segment_free(u->block, u->records * sizeof(uint64_t) + u->size);
    else
        free(u->block);
    memset(u, 0, sizeof *u);
}
