/* Sub-page shuffle units (sh_units.h): every unit once, each page's units
 * in record order, at most SH_OPEN_PAGES pages open at a time, the page
 * order kept, windows that mix pages; and plans over cut pages. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "sh_plan.h"
#include "sh_units.h"

/* Pages of varied sizes, some cut into many units, some into one. */
typedef struct cut_pages {
    uint64_t n;
    sh_page *pages;
    uint64_t *first_unit;
    uint32_t *unit_records;
    uint64_t *unit_bytes;
    sh_cut cut;
} cut_pages;

static cut_pages make_cut(uint64_t n)
{
    cut_pages c = { .n = n };
    c.pages = calloc(n, sizeof *c.pages);
    c.first_unit = calloc(n + 1, sizeof *c.first_unit);
    for (uint64_t i = 0; i < n; i++) {
        c.pages[i].records = i % 5 == 0 ? 10000 : (uint32_t)((i * 7919) % 700);
        uint32_t units = c.pages[i].records > 2048 ? (c.pages[i].records + 511) / 512 : 1;
        c.first_unit[i + 1] = c.first_unit[i] + units;
    }
    c.unit_bytes = calloc(c.first_unit[n] ? c.first_unit[n] : 1, sizeof *c.unit_bytes);
    c.unit_records = calloc(c.first_unit[n] ? c.first_unit[n] : 1, sizeof *c.unit_records);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t units = c.first_unit[i + 1] - c.first_unit[i];
        for (uint64_t u = c.first_unit[i]; u < c.first_unit[i + 1]; u++) {
            uint64_t k = u - c.first_unit[i];
            c.unit_records[u] = (uint32_t)(c.pages[i].records * (k + 1) / units -
                                           c.pages[i].records * k / units);
            c.unit_bytes[u] = 1 + u % 97 * 31;
            c.pages[i].bytes += c.unit_bytes[u];
        }
    }
    c.cut = (sh_cut){ c.first_unit, c.unit_records, c.unit_bytes };
    return c;
}

static void free_cut(cut_pages *c)
{
    free(c->pages);
    free(c->first_unit);
    free(c->unit_records);
    free(c->unit_bytes);
}

/* The page of unit u. */
static uint64_t page_of(const cut_pages *c, uint32_t u)
{
    uint64_t p = 0;
    while (c->first_unit[p + 1] <= u)
        p++;
    return p;
}

Test(units, interleave_serves_every_unit_once_in_record_order_with_few_pages_open)
{
    cut_pages c = make_cut(400);
    uint32_t *order = calloc(c.n, sizeof *order);
    for (uint64_t i = 0; i < c.n; i++)
        order[i] = (uint32_t)((i * 211) % c.n); /* a permutation: 211 is prime to 400 */
    uint64_t units = c.first_unit[c.n];
    uint32_t *out = malloc(units * sizeof *out);
    sh_rng rng;
    sh_rng_init(&rng, 9);
    sh_units_order(order, c.n, c.first_unit, &rng, out);

    char *seen = calloc(units, 1);
    uint64_t *next = calloc(c.n, sizeof *next), *rank = calloc(c.n, sizeof *rank);
    uint64_t *last_pos = calloc(c.n, sizeof *last_pos), *first_pos = calloc(c.n, sizeof *first_pos);
    for (uint64_t i = 0; i < c.n; i++) {
        next[i] = c.first_unit[i];
        rank[order[i]] = i;
        first_pos[i] = UINT64_MAX;
    }
    for (uint64_t i = 0; i < units; i++) {
        cr_assert_lt(out[i], units);
        cr_assert_eq(seen[out[i]], 0, "unit %u twice", out[i]);
        seen[out[i]] = 1;
        uint64_t p = page_of(&c, out[i]);
        cr_assert_eq(out[i], next[p], "page %llu: units out of record order",
                     (unsigned long long)p);
        next[p]++;
        if (first_pos[p] == UINT64_MAX)
            first_pos[p] = i;
        last_pos[p] = i;
    }
    /* pages open in page order: a unit served at position i belongs to one of
     * the first (pages closed before i) + SH_OPEN_PAGES pages of the order */
    uint64_t closed = 0;
    for (uint64_t i = 0; i < units; i++) {
        uint64_t p = page_of(&c, out[i]);
        cr_assert_lt(rank[p], closed + SH_OPEN_PAGES, "position %llu: page order not kept",
                     (unsigned long long)i);
        closed += last_pos[p] == i;
    }
    /* never more than SH_OPEN_PAGES pages open at once */
    for (uint64_t i = 0; i < units; i++) {
        uint32_t open = 0;
        for (uint64_t p = 0; p < c.n; p++)
            open += first_pos[p] <= i && i <= last_pos[p];
        cr_assert_leq(open, SH_OPEN_PAGES, "%u pages open at position %llu", open,
                      (unsigned long long)i);
    }
    /* and they do interleave: the units of a cut page are not all adjacent */
    uint64_t spread = 0;
    for (uint64_t p = 0; p < c.n; p += 5)
        spread += last_pos[p] - first_pos[p] + 1 > c.first_unit[p + 1] - c.first_unit[p];
    cr_assert_gt(spread, c.n / 5 * 9 / 10, "cut pages interleaved: %llu of %llu",
                 (unsigned long long)spread, (unsigned long long)(c.n / 5));
    free(seen), free(next), free(rank), free(last_pos), free(first_pos), free(out), free(order);
    free_cut(&c);
}

Test(units, without_rng_units_follow_the_page_order)
{
    cut_pages c = make_cut(50);
    uint32_t *order = calloc(c.n, sizeof *order);
    for (uint64_t i = 0; i < c.n; i++)
        order[i] = (uint32_t)(c.n - 1 - i);
    uint32_t *out = malloc(c.first_unit[c.n] * sizeof *out);
    sh_units_order(order, c.n, c.first_unit, NULL, out);
    uint64_t k = 0;
    for (uint64_t i = 0; i < c.n; i++)
        for (uint64_t u = c.first_unit[order[i]]; u < c.first_unit[order[i] + 1]; u++)
            cr_assert_eq(out[k++], u);
    free(out), free(order);
    free_cut(&c);
}

static sh_params params(uint64_t seed, sh_mode mode)
{
    return (sh_params){ .seed = seed, .mode = mode, .buffer_rows = 4000,
                        .max_segment_bytes = 1u << 24 };
}

Test(units, plans_over_cut_pages_serve_every_record_once_and_are_deterministic)
{
    cut_pages c = make_cut(300);
    sh_params p = params(3, SH_SHUFFLE_PAGE);
    sh_plan a, b, d;
    cr_assert_eq(sh_plan_build(&p, c.pages, &c.cut, NULL, c.n, 0, &a), 0);
    cr_assert_eq(sh_plan_build(&p, c.pages, &c.cut, NULL, c.n, 0, &b), 0);
    cr_assert_eq(sh_plan_build(&p, c.pages, &c.cut, NULL, c.n, 1, &d), 0);
    cr_assert_eq(a.num_units, c.first_unit[c.n]);
    cr_assert_eq(memcmp(a.unit_order, b.unit_order, a.num_units * sizeof *a.unit_order), 0);
    cr_assert_neq(memcmp(a.unit_order, d.unit_order, a.num_units * sizeof *a.unit_order), 0);
    cr_assert_eq(a.num_segments, b.num_segments);
    /* every record of every page exactly once, through the units */
    uint64_t records = 0;
    for (uint64_t i = 0; i < c.n; i++)
        records += c.pages[i].records;
    cr_assert_eq(a.total_records, records);
    uint32_t *taken = calloc(c.n, sizeof *taken);
    for (uint64_t i = 0; i < a.num_units; i++) {
        sh_unit u = sh_unit_at(c.pages, &c.cut, c.n, a.unit_order[i]);
        cr_assert_eq(u.page, page_of(&c, a.unit_order[i]));
        cr_assert_leq(u.first_record + u.records, c.pages[u.page].records);
        taken[u.page] += u.records;
    }
    for (uint64_t i = 0; i < c.n; i++)
        cr_assert_eq(taken[i], c.pages[i].records);
    free(taken);
    sh_plan_free(&a), sh_plan_free(&b), sh_plan_free(&d);

    /* shuffle=none keeps pages and units in natural order */
    sh_params none = params(3, SH_SHUFFLE_NONE);
    cr_assert_eq(sh_plan_build(&none, c.pages, &c.cut, NULL, c.n, 0, &a), 0);
    for (uint64_t i = 0; i < a.num_units; i++)
        cr_assert_eq(a.unit_order[i], i);
    sh_plan_free(&a);
    free_cut(&c);
}

Test(units, windows_of_cut_pages_mix_many_pages)
{
    /* 64 pages of 10,000 records each (DuckDB's page size), cut into units of
     * at most 512: a 10,000-record segment holds records of many pages, where
     * a page-granular order gives it one or two. */
    uint64_t n = 64;
    sh_page *pages = calloc(n, sizeof *pages);
    uint64_t *first = calloc(n + 1, sizeof *first);
    for (uint64_t i = 0; i < n; i++) {
        pages[i] = (sh_page){ 10000 * 100, 10000 };
        first[i + 1] = first[i] + 20;
    }
    uint64_t *bytes = calloc(first[n], sizeof *bytes);
    uint32_t *records = calloc(first[n], sizeof *records);
    for (uint64_t u = 0; u < first[n]; u++) {
        bytes[u] = 500 * 100;
        records[u] = 500;
    }
    sh_cut cut = { first, records, bytes };
    sh_params p = params(11, SH_SHUFFLE_PAGE);
    p.buffer_rows = 10000;
    sh_plan plan;
    cr_assert_eq(sh_plan_build(&p, pages, &cut, NULL, n, 0, &plan), 0);
    uint64_t distinct_total = 0;
    for (uint64_t s = 0; s < plan.num_segments; s++) {
        char seen[64] = { 0 };
        uint32_t distinct = 0;
        for (uint32_t k = 0; k < plan.segments[s].units; k++) {
            sh_unit u = sh_unit_at(pages, &cut, n, plan.unit_order[plan.segments[s].first + k]);
            distinct += !seen[u.page];
            seen[u.page] = 1;
        }
        distinct_total += distinct;
    }
    double mean = (double)distinct_total / (double)plan.num_segments;
    cr_assert_gt(mean, 5.0, "pages per 10,000-record segment: %.2f", mean);
    sh_plan_free(&plan);
    free(pages), free(first), free(bytes), free(records);
}
