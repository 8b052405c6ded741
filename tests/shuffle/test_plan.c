/* Properties of the epoch plan: a permutation of the pages, segments that
 * tile it, parts that partition the segments, determinism by seed. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "sh_deal.h"
#include "sh_plan.h"
#include "sh_random.h"

/* Pages with varied record counts and sizes, some empty. */
static sh_page *make_pages(uint64_t n)
{
    sh_page *p = calloc(n, sizeof *p);
    for (uint64_t i = 0; i < n; i++) {
        p[i].records = (uint32_t)((i * 7919) % 300);
        p[i].bytes = p[i].records * (40 + i % 13);
    }
    return p;
}

static sh_params params(uint64_t seed, sh_mode mode)
{
    return (sh_params){ .seed = seed, .mode = mode, .buffer_rows = 1000,
                        .max_segment_bytes = 1u << 20 };
}

/* Part i of n with even=off: whole segments only, so no record offsets are
 * needed. */
static int part_of(const sh_plan *plan, uint64_t i, uint64_t n, sh_part *pt)
{
    sh_pieces pieces;
    if (sh_deal_part(plan, i, n, SH_EVEN_OFF, &pieces) < 0)
        return -1;
    return sh_part_build(plan, pieces.v, pieces.n, NULL, NULL, pt);
}

Test(random, splitmix_and_xoshiro_are_the_documented_generators)
{
    /* SplitMix64's first output from state 0 is a published reference value;
     * the rest follows from the definitions, so plans match on every machine. */
    sh_rng r;
    sh_rng_init(&r, 0);
    cr_assert_eq(r.s[0], 0xe220a8397b1dcdafull);
    uint64_t first = sh_rng_next(&r);
    sh_rng_init(&r, 0);
    cr_assert_eq(sh_rng_next(&r), first, "same seed, same stream");
    cr_assert_neq(sh_derive_seed(1, 0, SH_PURPOSE_PAGES, 0),
                  sh_derive_seed(1, 1, SH_PURPOSE_PAGES, 0));
    cr_assert_neq(sh_derive_seed(1, 0, SH_PURPOSE_PAGES, 0),
                  sh_derive_seed(1, 0, SH_PURPOSE_ROWS, 0));
}

Test(random, bounded_draws_are_in_range_and_cover_it)
{
    sh_rng r;
    sh_rng_init(&r, 42);
    int seen[7] = { 0 };
    for (int i = 0; i < 7000; i++) {
        uint64_t v = sh_rng_below(&r, 7);
        cr_assert_lt(v, 7);
        seen[v]++;
    }
    for (int i = 0; i < 7; i++)
        cr_assert(seen[i] > 850 && seen[i] < 1150, "bucket %d has %d of 7000", i, seen[i]);
}

/* Every page once in the page order, every unit once in the unit order, and
 * segments that tile the unit order, each closed as soon as it is full. */
static void check_plan_cut(const sh_plan *plan, const sh_page *pages, const sh_cut *cut,
                           uint64_t n, const sh_params *p)
{
    char *seen = calloc(n ? n : 1, 1);
    for (uint64_t i = 0; i < n; i++) {
        cr_assert_lt(plan->order[i], n);
        cr_assert_eq(seen[plan->order[i]], 0, "page %u twice", plan->order[i]);
        seen[plan->order[i]] = 1;
    }
    free(seen);
    uint64_t units = cut ? cut->first_unit[n] : n;
    cr_assert_eq(plan->num_units, units);
    seen = calloc(units ? units : 1, 1);
    for (uint64_t i = 0; i < units; i++) {
        cr_assert_lt(plan->unit_order[i], units);
        cr_assert_eq(seen[plan->unit_order[i]], 0, "unit %u twice", plan->unit_order[i]);
        seen[plan->unit_order[i]] = 1;
    }
    free(seen);
    uint64_t pos = 0, bytes = 0, records = 0;
    for (uint64_t s = 0; s < plan->num_segments; s++) {
        const sh_segment *seg = &plan->segments[s];
        cr_assert_eq(seg->first, pos);
        cr_assert_gt(seg->units, 0);
        uint64_t sb = 0, sr = 0;
        sh_unit last = { 0 };
        for (uint32_t k = 0; k < seg->units; k++) {
            last = sh_unit_at(pages, cut, n, plan->unit_order[pos + k]);
            sb += last.bytes;
            sr += last.records;
        }
        cr_assert_eq(sb, seg->bytes);
        cr_assert_eq(sr, seg->records);
        uint64_t limit = p->buffer_rows;
        if ((plan->total_records + SH_MIN_SEGMENTS - 1) / SH_MIN_SEGMENTS < limit)
            limit = (plan->total_records + SH_MIN_SEGMENTS - 1) / SH_MIN_SEGMENTS;
        if (s + 1 < plan->num_segments)
            cr_assert(sr >= limit || sb >= p->max_segment_bytes);
        /* closed as soon as full: without its last unit it was not full */
        cr_assert(sr - last.records < limit && sb - last.bytes < p->max_segment_bytes);
        pos += seg->units;
        bytes += sb;
        records += sr;
    }
    cr_assert_eq(pos, units);
    cr_assert_eq(bytes, plan->total_bytes);
    cr_assert_eq(records, plan->total_records);
}

static void check_plan(const sh_plan *plan, const sh_page *pages, uint64_t n,
                       const sh_params *p)
{
    cr_assert_eq(plan->unit_order, plan->order, "no cut: units are the pages");
    check_plan_cut(plan, pages, NULL, n, p);
}

Test(plan, page_shuffle_is_a_permutation_tiled_by_segments)
{
    uint64_t n = 5000;
    sh_page *pages = make_pages(n);
    sh_params p = params(7, SH_SHUFFLE_PAGE);
    sh_plan plan;
    cr_assert_eq(sh_plan_build(&p, pages, NULL, NULL, n, 3, &plan), 0);
    check_plan(&plan, pages, n, &p);
    uint64_t fixed = 0;
    for (uint64_t i = 0; i < n; i++)
        fixed += plan.order[i] == i;
    cr_assert_lt(fixed, 20, "a shuffle leaves few pages in place, got %llu",
                 (unsigned long long)fixed);
    sh_plan_free(&plan);
    free(pages);
}

Test(plan, same_inputs_same_plan_and_different_seed_or_epoch_differ)
{
    uint64_t n = 2000;
    sh_page *pages = make_pages(n);
    sh_params p = params(1, SH_SHUFFLE_PAGE), q = params(2, SH_SHUFFLE_PAGE);
    sh_plan a, b, c, d;
    sh_plan_build(&p, pages, NULL, NULL, n, 0, &a);
    sh_plan_build(&p, pages, NULL, NULL, n, 0, &b);
    sh_plan_build(&q, pages, NULL, NULL, n, 0, &c);
    sh_plan_build(&p, pages, NULL, NULL, n, 1, &d);
    cr_assert_eq(memcmp(a.order, b.order, n * sizeof *a.order), 0);
    cr_assert_neq(memcmp(a.order, c.order, n * sizeof *a.order), 0);
    cr_assert_neq(memcmp(a.order, d.order, n * sizeof *a.order), 0);
    sh_plan_free(&a);
    sh_plan_free(&b);
    sh_plan_free(&c);
    sh_plan_free(&d);
    free(pages);
}

Test(plan, shuffle_none_is_the_natural_order)
{
    uint64_t n = 300;
    sh_page *pages = make_pages(n);
    sh_params p = params(9, SH_SHUFFLE_NONE);
    sh_plan plan;
    sh_plan_build(&p, pages, NULL, NULL, n, 5, &plan);
    check_plan(&plan, pages, n, &p);
    for (uint64_t i = 0; i < n; i++)
        cr_assert_eq(plan.order[i], i);
    uint32_t perm[2000];
    for (uint64_t s = 0; s < plan.num_segments; s++) {
        sh_segment_order(&p, &plan, s, perm);
        for (uint32_t r = 0; r < plan.segments[s].records; r++)
            cr_assert_eq(perm[r], r);
    }
    sh_plan_free(&plan);
    free(pages);
}

Test(plan, segment_order_is_a_seeded_permutation)
{
    uint64_t n = 400;
    sh_page *pages = make_pages(n);
    sh_params p = params(3, SH_SHUFFLE_PAGE);
    sh_plan plan;
    sh_plan_build(&p, pages, NULL, NULL, n, 0, &plan);
    cr_assert_gt(plan.num_segments, 2);
    for (uint64_t s = 0; s < plan.num_segments; s++) {
        uint32_t rec = plan.segments[s].records;
        uint32_t *a = malloc((rec + 1) * sizeof *a), *b = malloc((rec + 1) * sizeof *b);
        char *seen = calloc(rec + 1, 1);
        sh_segment_order(&p, &plan, s, a);
        sh_segment_order(&p, &plan, s, b);
        cr_assert_eq(memcmp(a, b, rec * sizeof *a), 0);
        uint32_t in_place = 0;
        for (uint32_t r = 0; r < rec; r++) {
            cr_assert_lt(a[r], rec);
            cr_assert_eq(seen[a[r]]++, 0);
            in_place += a[r] == r;
        }
        if (rec > 100)
            cr_assert_lt(in_place, rec / 10);
        free(a);
        free(b);
        free(seen);
    }
    sh_plan_free(&plan);
    free(pages);
}

Test(plan, parts_partition_the_segments_and_find_offsets)
{
    uint64_t n = 3000;
    sh_page *pages = make_pages(n);
    sh_params p = params(11, SH_SHUFFLE_PAGE);
    sh_plan plan;
    sh_plan_build(&p, pages, NULL, NULL, n, 2, &plan);
    uint64_t parts_list[] = { 1, 3, 8, 1000 };
    for (size_t t = 0; t < sizeof parts_list / sizeof parts_list[0]; t++) {
        uint64_t parts = parts_list[t], total = 0, count = 0;
        char *seen = calloc(plan.num_segments, 1);
        for (uint64_t i = 0; i < parts; i++) {
            sh_part pt;
            cr_assert_eq(part_of(&plan, i, parts, &pt), 0);
            for (uint64_t k = 0; k < pt.count; k++) {
                uint64_t s = sh_part_segment(&pt, k);
                cr_assert_lt(s, plan.num_segments);
                cr_assert_eq(seen[s]++, 0);
                cr_assert_eq(pt.offsets[k + 1] - pt.offsets[k], plan.segments[s].bytes);
                if (plan.segments[s].bytes) {
                    /* first and last byte of the segment map back to it */
                    cr_assert_eq(sh_part_find(&pt, pt.offsets[k]), k);
                    cr_assert_eq(sh_part_find(&pt, pt.offsets[k + 1] - 1), k);
                }
            }
            total += sh_part_size(&pt);
            count += pt.count;
            sh_part_free(&pt);
        }
        cr_assert_eq(count, plan.num_segments);
        cr_assert_eq(total, plan.total_bytes);
        free(seen);
    }
    sh_plan_free(&plan);
    free(pages);
}

Test(plan, small_datasets_still_get_many_segments)
{
    /* 200 pages of 10 records: far below one buffer of 1000 */
    sh_page pages[200];
    for (int i = 0; i < 200; i++)
        pages[i] = (sh_page){ 100, 10 };
    sh_params p = params(0, SH_SHUFFLE_PAGE);
    sh_plan plan;
    cr_assert_eq(sh_plan_build(&p, pages, NULL, NULL, 200, 0, &plan), 0);
    check_plan(&plan, pages, 200, &p);
    /* "about": segments close on page boundaries, so they overshoot a little */
    cr_assert_geq(plan.num_segments, SH_MIN_SEGMENTS / 2);
    sh_plan_free(&plan);
}

Test(plan, empty_and_single_page_inputs)
{
    sh_params p = params(0, SH_SHUFFLE_PAGE);
    sh_plan plan;
    cr_assert_eq(sh_plan_build(&p, NULL, NULL, NULL, 0, 0, &plan), 0);
    cr_assert_eq(plan.num_segments, 0);
    cr_assert_eq(plan.total_bytes, 0);
    sh_part pt;
    cr_assert_eq(part_of(&plan, 0, 1, &pt), 0);
    cr_assert_eq(sh_part_size(&pt), 0);
    sh_part_free(&pt);
    sh_plan_free(&plan);

    sh_page one = { 100, 3 };
    cr_assert_eq(sh_plan_build(&p, &one, NULL, NULL, 1, 0, &plan), 0);
    cr_assert_eq(plan.num_segments, 1);
    cr_assert_eq(plan.total_bytes, 100);
    sh_plan_free(&plan);
}
