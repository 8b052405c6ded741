/* Dealing an epoch's records into parts: even=off/pad/drop and elastic
 * resume (sh_deal.h), checked record by record against the plan. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "sh_deal.h"
#include "sh_plan.h"

/* A plan over pages of uneven record counts (some empty), so segments and
 * so the parts of even=off differ in length. */
static void make_plan(uint64_t num_pages, uint64_t buffer, sh_plan *plan)
{
    sh_page *pages = calloc(num_pages, sizeof *pages);
    for (uint64_t i = 0; i < num_pages; i++) {
        pages[i].records = (uint32_t)((i * 7919) % 211);
        pages[i].bytes = pages[i].records * 10;
    }
    sh_params p = { .seed = 5, .mode = SH_SHUFFLE_PAGE, .buffer_rows = buffer,
                    .max_segment_bytes = 1u << 30 };
    cr_assert_eq(sh_plan_build(&p, pages, NULL, NULL, num_pages, 3, plan), 0);
    free(pages);
}

/* Record numbers: record r of segment s is first_record[s] + r. */
typedef struct numbering {
    uint64_t *first_record;
    uint64_t total;
} numbering;

static numbering number_records(const sh_plan *plan)
{
    numbering nb = { calloc(plan->num_segments + 1, sizeof(uint64_t)), 0 };
    for (uint64_t s = 0; s < plan->num_segments; s++) {
        nb.first_record[s] = nb.total;
        nb.total += plan->segments[s].records;
    }
    return nb;
}

/* Count every record of l in seen[]; returns how many records l has. */
static uint64_t count_records(const numbering *nb, const sh_pieces *l, uint64_t skip,
                              uint32_t *seen)
{
    uint64_t n = 0;
    for (uint64_t k = 0; k < l->n; k++)
        for (uint32_t r = l->v[k].first; r < l->v[k].end; r++, n++)
            if (n >= skip)
                seen[nb->first_record[l->v[k].segment] + r]++;
    return n;
}

/* The record at position `at` of the epoch's order. */
static uint64_t epoch_record(const numbering *nb, uint64_t at)
{
    return at % nb->total; /* the epoch stream is the records in numbering order */
}

static void check_even(const sh_plan *plan, uint64_t parts, sh_even even)
{
    numbering nb = number_records(plan);
    uint32_t *seen = calloc(nb.total, sizeof *seen);
    uint64_t q = even == SH_EVEN_DROP ? nb.total / parts : (nb.total + parts - 1) / parts;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < parts; i++) {
        sh_pieces l;
        cr_assert_eq(sh_deal_part(plan, i, parts, even, &l), 0);
        uint64_t got = count_records(&nb, &l, 0, seen);
        cr_assert_eq(got, l.records);
        if (even == SH_EVEN_OFF)
            cr_assert_leq(got, q + 1000, "part %llu", (unsigned long long)i);
        else
            cr_assert_eq(got, q, "part %llu of %llu: %llu records, %llu expected",
                         (unsigned long long)i, (unsigned long long)parts,
                         (unsigned long long)got, (unsigned long long)q);
        sum += got;
        sh_pieces_free(&l);
    }
    /* pad: the first parts*q - total records of the epoch twice, the rest
     * once; drop: total - parts*q records left out, the rest once; off:
     * every record once. */
    uint32_t *expect = calloc(nb.total, sizeof *expect);
    for (uint64_t r = 0; r < nb.total; r++)
        expect[r] = 1;
    if (even == SH_EVEN_PAD)
        for (uint64_t k = 0; k < parts * q - nb.total; k++)
            expect[epoch_record(&nb, k)]++;
    uint64_t missing = 0;
    for (uint64_t r = 0; r < nb.total; r++) {
        if (even == SH_EVEN_DROP) {
            cr_assert_leq(seen[r], 1);
            missing += seen[r] == 0;
        } else {
            cr_assert_eq(seen[r], expect[r], "record %llu seen %u times, expected %u",
                         (unsigned long long)r, seen[r], expect[r]);
        }
    }
    if (even == SH_EVEN_DROP)
        cr_assert_eq(missing, nb.total - parts * q);
    cr_assert_eq(sum, even == SH_EVEN_OFF ? nb.total : parts * q);
    free(expect);
    free(seen);
    free(nb.first_record);
}

Test(deal, even_parts_hold_equal_counts_padded_or_dropped_exactly)
{
    sh_plan plan;
    make_plan(900, 700, &plan);
    cr_assert_gt(plan.num_segments, 64);
    uint64_t parts_list[] = { 1, 3, 8, 64, 1000 };
    for (size_t t = 0; t < sizeof parts_list / sizeof parts_list[0]; t++)
        for (sh_even e = SH_EVEN_OFF; e <= SH_EVEN_DROP; e++)
            check_even(&plan, parts_list[t], e);
    sh_plan_free(&plan);
}

Test(deal, padding_a_tiny_epoch_wraps_around)
{
    sh_page one = { 30, 3 };
    sh_params p = { .seed = 1, .mode = SH_SHUFFLE_PAGE, .buffer_rows = 10,
                    .max_segment_bytes = 1u << 20 };
    sh_plan plan;
    cr_assert_eq(sh_plan_build(&p, &one, NULL, NULL, 1, 0, &plan), 0);
    check_even(&plan, 8, SH_EVEN_PAD);   /* 3 records into 8 parts of 1 */
    check_even(&plan, 8, SH_EVEN_DROP);  /* 8 empty parts */
    sh_plan_free(&plan);
    cr_assert_eq(sh_plan_build(&p, NULL, NULL, NULL, 0, 0, &plan), 0);
    check_even(&plan, 3, SH_EVEN_PAD);   /* nothing to pad with: empty parts */
    sh_plan_free(&plan);
}

Test(deal, even_off_parts_are_the_strided_segments)
{
    sh_plan plan;
    make_plan(400, 500, &plan);
    for (uint64_t i = 0; i < 5; i++) {
        sh_pieces l;
        cr_assert_eq(sh_deal_part(&plan, i, 5, SH_EVEN_OFF, &l), 0);
        for (uint64_t k = 0; k < l.n; k++) {
            cr_assert_eq(l.v[k].segment, i + 5 * k);
            cr_assert_eq(l.v[k].first, 0);
            cr_assert_eq(l.v[k].end, plan.segments[i + 5 * k].records);
        }
        sh_pieces_free(&l);
    }
    sh_plan_free(&plan);
}

/* The first `given` records of each of the n parts plus the m resumed parts
 * hold every record exactly once (even=off); with pad/drop the resumed parts
 * are equal. */
static void check_resume(const sh_plan *plan, uint64_t n, uint64_t given, uint64_t m,
                         sh_even even)
{
    numbering nb = number_records(plan);
    uint32_t *seen = calloc(nb.total, sizeof *seen);
    uint64_t before = 0;
    for (uint64_t i = 0; i < n; i++) {
        sh_pieces l;
        cr_assert_eq(sh_deal_part(plan, i, n, SH_EVEN_OFF, &l), 0);
        /* count the first `given` records only: mark all, then unmark the rest */
        uint32_t *part_seen = calloc(nb.total, sizeof *part_seen);
        count_records(&nb, &l, given, part_seen);
        uint32_t *all = calloc(nb.total, sizeof *all);
        uint64_t got = count_records(&nb, &l, 0, all);
        before += got < given ? got : given;
        for (uint64_t r = 0; r < nb.total; r++)
            seen[r] += all[r] - part_seen[r];
        free(all);
        free(part_seen);
        sh_pieces_free(&l);
    }
    uint64_t after = 0, first_count = UINT64_MAX;
    for (uint64_t j = 0; j < m; j++) {
        sh_pieces l;
        cr_assert_eq(sh_resume_part(plan, n, given, j, m, even, &l), 0);
        uint64_t got = count_records(&nb, &l, 0, seen);
        if (first_count == UINT64_MAX)
            first_count = got;
        if (even != SH_EVEN_OFF)
            cr_assert_eq(got, first_count, "resumed parts of unequal length");
        after += got;
        sh_pieces_free(&l);
    }
    if (even == SH_EVEN_OFF) {
        cr_assert_eq(before + after, nb.total);
        for (uint64_t r = 0; r < nb.total; r++)
            cr_assert_eq(seen[r], 1, "(%llu,%llu,%llu) record %llu seen %u times",
                         (unsigned long long)n, (unsigned long long)given,
                         (unsigned long long)m, (unsigned long long)r, seen[r]);
    }
    free(seen);
    free(nb.first_record);
}

Test(deal, resumed_parts_hold_exactly_what_is_left)
{
    sh_plan plan;
    make_plan(900, 700, &plan);
    uint64_t nm[][2] = { { 4, 2 }, { 2, 3 }, { 8, 8 }, { 3, 64 } };
    uint64_t givens[] = { 0, 1, 699, 700, 5000, 12345, 1u << 30 };
    for (size_t t = 0; t < sizeof nm / sizeof nm[0]; t++)
        for (size_t g = 0; g < sizeof givens / sizeof givens[0]; g++)
            for (sh_even e = SH_EVEN_OFF; e <= SH_EVEN_DROP; e++)
                check_resume(&plan, nm[t][0], givens[g], nm[t][1], e);
    sh_plan_free(&plan);
}

Test(deal, a_million_parts_deal_one_part_without_a_list_per_part)
{
    sh_plan plan;
    make_plan(900, 700, &plan);
    uint64_t parts = (1u << 20) - 1;
    sh_pieces l;
    for (sh_even e = SH_EVEN_OFF; e <= SH_EVEN_DROP; e++) {
        cr_assert_eq(sh_deal_part(&plan, parts - 1, parts, e, &l), 0);
        cr_assert_eq(l.records, e == SH_EVEN_PAD ? 1 : 0, "even=%d: %llu records", (int)e,
                     (unsigned long long)l.records);
        sh_pieces_free(&l);
    }
    cr_assert_eq(sh_resume_part(&plan, parts, 0, 1, 2, SH_EVEN_OFF, &l), 0);
    cr_assert_gt(l.records, 0);
    sh_pieces_free(&l);
    sh_plan_free(&plan);
}

Test(deal, counts_are_the_dealt_parts_records)
{
    sh_plan plan;
    make_plan(900, 700, &plan);
    sh_pieces stream;
    cr_assert_eq(sh_epoch_stream(&plan, &stream), 0);
    uint64_t partss[] = { 1, 3, 8, 64, 5000 };
    for (size_t t = 0; t < sizeof partss / sizeof partss[0]; t++)
        for (sh_even e = SH_EVEN_OFF; e <= SH_EVEN_DROP; e++)
            for (uint64_t i = 0; i < partss[t]; i += 1 + partss[t] / 7) {
                sh_pieces l;
                cr_assert_eq(sh_deal_one(&stream, i, partss[t], e, &l), 0);
                cr_assert_eq(sh_deal_count(&stream, i, partss[t], e), l.records);
                sh_pieces_free(&l);
            }
    sh_pieces_free(&stream);
    sh_plan_free(&plan);
}

/* Each part gave its own count: what is left is each part without its
 * first given[p] records, in part order. */
Test(deal, what_is_left_after_uneven_givens)
{
    sh_plan plan;
    make_plan(900, 700, &plan);
    sh_pieces stream;
    cr_assert_eq(sh_epoch_stream(&plan, &stream), 0);
    numbering nb = number_records(&plan);
    uint64_t given[5] = { 0, 17, 700, 1u << 30, 3 };
    for (sh_even e = SH_EVEN_OFF; e <= SH_EVEN_DROP; e++) {
        sh_pieces left;
        cr_assert_eq(sh_resume_left(&stream, 5, given, e, &left), 0);
        uint32_t *want = calloc(nb.total, sizeof *want), *got = calloc(nb.total, sizeof *got);
        uint64_t expect = 0;
        for (uint64_t p = 0; p < 5; p++) {
            sh_pieces l;
            cr_assert_eq(sh_deal_one(&stream, p, 5, e, &l), 0);
            uint64_t had = count_records(&nb, &l, given[p], want);
            expect += had > given[p] ? had - given[p] : 0;
            sh_pieces_free(&l);
        }
        cr_assert_eq(count_records(&nb, &left, 0, got), expect);
        cr_assert_eq(left.records, expect);
        cr_assert_eq(memcmp(want, got, nb.total * sizeof *want), 0);
        free(want);
        free(got);
        sh_pieces_free(&left);
    }
    free(nb.first_record);
    sh_pieces_free(&stream);
    sh_plan_free(&plan);
}
