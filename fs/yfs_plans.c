#include "yfs_plans.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

/* Plans kept without readers: a plan costs ~4 bytes per page (shuffle=row:
 * per record). */
#define KEPT_PLANS 8

struct yfs_plans {
    const sh_params *params;
    const sh_page *pages;
    const sh_cut *cut;
    const sh_stored_page *stored;
    uint64_t num_pages;
    const uint32_t *record_bytes;
    uint64_t num_records;
    yfs_budget *budget;
    yfs_stats *stats;
    pthread_mutex_t lock;      /* guards everything below and every plan's refs/last_use */
    yfs_plan *slots[KEPT_PLANS];
    uint64_t clock;
};

yfs_plans *yfs_plans_new(const sh_params *params, const sh_page *pages, const sh_cut *cut,
                         const sh_stored_page *stored, uint64_t num_pages,
                         const uint32_t *record_bytes, uint64_t num_records, yfs_budget *budget,
                         yfs_stats *stats)
{
    yfs_plans *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->params = params;
    c->pages = pages;
    c->cut = cut;
    c->stored = stored;
    c->budget = budget;
    c->stats = stats;
    c->num_pages = num_pages;
    c->record_bytes = record_bytes;
    c->num_records = num_records;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

/* At least one word, so that an empty plan's bits are allocated too. */
static uint64_t built_words(const sh_plan *sp)
{
    return sp->num_units / 64 + 1;
}

uint64_t yfs_plan_bytes(const yfs_plan *p)
{
    const sh_plan *sp = &p->plan;
    uint64_t loads = sp->schedule.num_loads;
    return sizeof *p + sp->num_pages * sizeof *sp->order +
           2 * built_words(sp) * sizeof *p->built + /* built and read_here */
           (sp->unit_order != sp->order ? sp->num_units * sizeof *sp->unit_order : 0) +
           (sp->rows ? sp->total_records * sizeof *sp->rows : 0) +
           sp->num_segments * sizeof *sp->segments +
           (loads ? loads * (sizeof *sp->schedule.loads + 1) +
                        sp->num_pages * (sizeof *sp->schedule.source +
                                         sizeof *sp->schedule.position + 2)
                  : 0);
}

void yfs_plan_mark_built(yfs_plan *p, uint64_t unit)
{
    assert(unit < p->plan.num_units);
    atomic_fetch_or(&p->built[unit / 64], (uint64_t)1 << (unit % 64));
}

int yfs_plan_built(const yfs_plan *p, uint64_t unit)
{
    assert(unit < p->plan.num_units);
    return (int)(atomic_load(&p->built[unit / 64]) >> (unit % 64) & 1);
}

void yfs_plan_note_part(yfs_plan *p, const sh_part *part)
{
    const sh_plan *sp = &p->plan;
    uint64_t last = UINT64_MAX; /* pieces of one segment follow each other */
    for (uint64_t k = 0; k < part->count; k++) {
        uint64_t s = part->pieces[k].segment;
        if (s == last)
            continue;
        last = s;
        assert(s < sp->num_segments);
        const sh_segment *seg = &sp->segments[s];
        for (uint32_t i = 0; i < seg->units; i++) {
            uint64_t unit = sp->unit_order[seg->first + i];
            assert(unit < sp->num_units);
            atomic_fetch_or(&p->read_here[unit / 64], (uint64_t)1 << (unit % 64));
        }
    }
    atomic_store(&p->parts_noted, 1); /* after the bits: a unit is never taken for unread */
}

int yfs_plan_read_here(const yfs_plan *p, uint64_t unit)
{
    assert(unit < p->plan.num_units);
    return !atomic_load(&p->parts_noted) ||
           (int)(atomic_load(&p->read_here[unit / 64]) >> (unit % 64) & 1);
}

static void plan_free(yfs_plans *c, yfs_plan *p)
{
    yfs_budget_release(c->budget, yfs_plan_bytes(p), YFS_MEM_PLANS, NULL);
    free(p->built);
    free(p->read_here);
    yfs_loads_destroy(&p->loads);
    sh_plan_free(&p->plan);
    free(p);
}

void yfs_plans_free(yfs_plans *c)
{
    if (!c)
        return;
    for (int i = 0; i < KEPT_PLANS; i++)
        if (c->slots[i])
            plan_free(c, c->slots[i]);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

int yfs_plans_get(yfs_plans *c, uint64_t epoch, yfs_plan **out, pq_error *err)
{
    pthread_mutex_lock(&c->lock);
    int victim = -1;
    for (int i = 0; i < KEPT_PLANS; i++) {
        yfs_plan *p = c->slots[i];
        if (p && p->plan.epoch == epoch) {
            p->refs++;
            p->last_use = ++c->clock;
            pthread_mutex_unlock(&c->lock);
            *out = p;
            return 0;
        }
        if (!p)
            victim = i;
        else if (p->refs == 0 && (victim < 0 || (c->slots[victim] &&
                                                 p->last_use < c->slots[victim]->last_use)))
            victim = i;
    }
    /* Built under the lock: a plan takes milliseconds even for a million
     * pages, and building it twice would be worse. */
    yfs_plan *p = calloc(1, sizeof *p);
    int built = p && (c->params->mode == SH_SHUFFLE_ROW
                          ? sh_plan_build_rows(c->params, c->record_bytes, c->num_records, epoch,
                                               &p->plan)
                          : sh_plan_build(c->params, c->pages, c->cut, c->stored, c->num_pages,
                                          epoch, &p->plan)) == 0;
    if (built && (!(p->built = calloc(built_words(&p->plan), sizeof *p->built)) ||
                  !(p->read_here = calloc(built_words(&p->plan), sizeof *p->read_here)))) {
        free(p->built);
        sh_plan_free(&p->plan);
        built = 0;
    }
    if (!built || yfs_loads_init(&p->loads, p->plan.schedule.num_loads, p->plan.num_pages) < 0) {
        if (built) {
            free(p->built);
            free(p->read_here);
            sh_plan_free(&p->plan);
        }
        free(p);
        pthread_mutex_unlock(&c->lock);
        return pq_error_set(err, "out of memory building the plan of epoch %llu",
                            (unsigned long long)epoch);
    }
    yfs_count(&c->stats->redirections, p->plan.schedule.redirections);
    p->refs = 1;
    p->last_use = ++c->clock;
    if (victim >= 0) {
        if (c->slots[victim])
            plan_free(c, c->slots[victim]);
        c->slots[victim] = p;
    }
    /* With every slot in use the plan lives unslotted until its last put. */
    pthread_mutex_unlock(&c->lock);
    /* Charged after the lock is let go: the accountant's reclaimers take
     * the segment cache's lock, under which the cache takes this one. */
    yfs_budget_reserve(c->budget, yfs_plan_bytes(p), YFS_MEM_PLANS, YFS_FORCE, NULL);
    *out = p;
    return 0;
}

void yfs_plans_ref(yfs_plans *c, yfs_plan *p)
{
    pthread_mutex_lock(&c->lock);
    p->refs++;
    pthread_mutex_unlock(&c->lock);
}

void yfs_plans_put(yfs_plans *c, yfs_plan *p)
{
    pthread_mutex_lock(&c->lock);
    int slotted = 0;
    for (int i = 0; i < KEPT_PLANS; i++)
        slotted |= c->slots[i] == p;
    int last = --p->refs == 0;
    pthread_mutex_unlock(&c->lock);
    if (last && !slotted)
        plan_free(c, p);
}
