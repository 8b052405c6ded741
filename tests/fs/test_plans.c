/* The plan cache (yfs_plans.h): one plan per epoch shared by its readers,
 * the same plan after it was dropped and rebuilt, at most 8 kept without
 * readers, every live plan charged to the accountant at its size, and the
 * units the files opened read. */
#include <criterion/criterion.h>
#include <string.h>

#include "yfs_budget.h"
#include "yfs_mount.h"
#include "sh_deal.h"
#include "yfs_plans.h"
#include "tfs.h"


Test(plans, one_plan_per_epoch_charged_at_its_size)
{
    yfs_mount *m = tfs_open_sample("cache=none,buffer=300,chunk=16K", NULL, 0);
    pq_error err;
    yfs_plan *a, *b;
    cr_assert_eq(yfs_plans_get(m->plans, 0, &a, &err), 0);
    cr_assert_eq(yfs_plans_get(m->plans, 0, &b, &err), 0);
    cr_assert_eq(a, b);
    /* the size covers the page order, the segments and the I/O schedule */
    const sh_plan *p = &a->plan;
    cr_assert_gt(p->schedule.num_loads, 0, "chunk=16K gives the plan loads");
    cr_assert_geq(yfs_plan_bytes(a), p->num_pages * 4 * 3 + p->num_segments * sizeof(sh_segment));
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_PLANS), yfs_plan_bytes(a));
    yfs_plans_put(m->plans, a);
    yfs_plans_put(m->plans, b);
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_PLANS), yfs_plan_bytes(a), "a kept plan is still charged");
    yfs_mount_close(m);
}

Test(plans, at_most_eight_kept_and_a_rebuilt_plan_is_the_same)
{
    yfs_mount *m = tfs_open_sample("cache=none,buffer=300,chunk=16K", NULL, 0);
    pq_error err;
    yfs_plan *p[10];
    uint32_t *order0 = NULL;
    uint64_t n0 = 0;
    for (uint64_t e = 0; e < 10; e++) { /* all held: the last two live unslotted */
        cr_assert_eq(yfs_plans_get(m->plans, e, &p[e], &err), 0);
        cr_assert_eq(p[e]->plan.epoch, e);
    }
    n0 = p[0]->plan.num_pages;
    order0 = malloc(n0 * sizeof *order0);
    memcpy(order0, p[0]->plan.order, n0 * sizeof *order0);
    cr_assert_neq(memcmp(p[0]->plan.order, p[1]->plan.order, n0 * sizeof *order0), 0,
                  "two epochs, one order");
    uint64_t one = yfs_plan_bytes(p[0]);
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_PLANS), 10 * one);
    for (int e = 0; e < 10; e++)
        yfs_plans_put(m->plans, p[e]);
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_PLANS), 8 * one, "more than 8 plans kept without readers");

    /* epochs 10..17 take every slot: epoch 0 is rebuilt, the same */
    for (uint64_t e = 10; e < 18; e++) {
        yfs_plan *q;
        cr_assert_eq(yfs_plans_get(m->plans, e, &q, &err), 0);
        yfs_plans_put(m->plans, q);
    }
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_PLANS), 8 * one);
    yfs_plan *again;
    cr_assert_eq(yfs_plans_get(m->plans, 0, &again, &err), 0);
    cr_assert_eq(again->plan.num_pages, n0);
    cr_assert_eq(memcmp(again->plan.order, order0, n0 * sizeof *order0), 0);
    yfs_plans_put(m->plans, again);
    free(order0);
    yfs_mount_close(m);
}

/* A plan's built bits: one per unit, set by whoever frames the unit into a
 * segment, per epoch; a plan rebuilt after it was dropped starts with none. */
Test(plans, built_units_are_marked_per_epoch)
{
    yfs_mount *m = tfs_open_sample("cache=none,buffer=300", NULL, 0);
    pq_error err;
    yfs_plan *a, *b;
    cr_assert_eq(yfs_plans_get(m->plans, 0, &a, &err), 0);
    cr_assert_eq(yfs_plans_get(m->plans, 1, &b, &err), 0);
    uint64_t n = a->plan.num_units;
    cr_assert_gt(n, 1);
    for (uint64_t u = 0; u < n; u++)
        cr_assert_not(yfs_plan_built(a, u));
    uint64_t marked[] = { 0, 63, 64, n - 1 }; /* within one word and across */
    for (int i = 0; i < 4; i++)
        if (marked[i] < n)
            yfs_plan_mark_built(a, marked[i]);
    for (uint64_t u = 0; u < n; u++) {
        int want = u == 0 || u == 63 || u == 64 || u == n - 1;
        cr_assert_eq(yfs_plan_built(a, u), want, "unit %llu", (unsigned long long)u);
        cr_assert_not(yfs_plan_built(b, u), "another epoch's plan");
    }
    yfs_plans_put(m->plans, a);
    yfs_plans_put(m->plans, b);
    yfs_mount_close(m);
}

/* Part `part` of `parts` of the plan's epoch, laid out (its pieces are
 * whole segments). */
static void part_of(const yfs_plan *p, uint64_t part, uint64_t parts, sh_part *out)
{
    sh_pieces pieces;
    cr_assert_eq(sh_deal_part(&p->plan, part, parts, SH_EVEN_OFF, &pieces), 0);
    cr_assert_eq(sh_part_build(&p->plan, pieces.v, pieces.n, NULL, NULL, out), 0);
}

/* The units a file opened on the mount reads (yfs_plan_note_part): before
 * any part is noted every unit counts as read here; once part 1 of 3 is,
 * exactly the units of its segments (1, 4, 7, ...); then part 0 of 3 adds
 * its own, and nothing noted is forgotten. */
Test(plans, the_units_of_the_parts_opened_are_read_here)
{
    yfs_mount *m = tfs_open_sample("cache=none,buffer=50", NULL, 0);
    pq_error err;
    yfs_plan *p;
    cr_assert_eq(yfs_plans_get(m->plans, 0, &p, &err), 0);
    const sh_plan *sp = &p->plan;
    cr_assert_gt(sp->num_segments, 6, "several segments per part");
    for (uint64_t u = 0; u < sp->num_units; u++)
        cr_assert(yfs_plan_read_here(p, u), "no part noted: every unit is read here");
    sh_part one, zero;
    part_of(p, 1, 3, &one);
    yfs_plan_note_part(p, &one);
    uint64_t read = 0;
    for (uint64_t s = 0; s < sp->num_segments; s++)
        for (uint32_t i = 0; i < sp->segments[s].units; i++) {
            uint64_t u = sp->unit_order[sp->segments[s].first + i];
            cr_assert_eq(yfs_plan_read_here(p, u), s % 3 == 1, "unit %llu of segment %llu",
                         (unsigned long long)u, (unsigned long long)s);
            read += s % 3 == 1;
        }
    cr_assert(read > 0 && read < sp->num_units);
    part_of(p, 0, 3, &zero);
    yfs_plan_note_part(p, &zero);
    for (uint64_t s = 0; s < sp->num_segments; s++)
        for (uint32_t i = 0; i < sp->segments[s].units; i++)
            cr_assert_eq(yfs_plan_read_here(p, sp->unit_order[sp->segments[s].first + i]),
                         s % 3 != 2);
    sh_part_free(&one);
    sh_part_free(&zero);
    yfs_plans_put(m->plans, p);
    yfs_mount_close(m);
}
