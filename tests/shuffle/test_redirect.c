/* Redox chunk redirection: every page served exactly once, loads that are
 * contiguous runs of storage read exactly once, a schedule consistent with
 * the order, memory bounded by the virtual chunks, and far fewer I/Os than
 * pages. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "sh_plan.h"
#include "sh_redirect.h"

/* n pages of 1..64 KiB in runs (column chunks) of 1..40 pages. */
static sh_stored_page *make_stored(uint64_t n, uint64_t seed)
{
    sh_stored_page *s = calloc(n, sizeof *s);
    sh_rng r;
    sh_rng_init(&r, seed);
    uint32_t run = 0, left = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (left == 0) {
            run++;
            left = 1 + (uint32_t)sh_rng_below(&r, 40);
        }
        left--;
        s[i].run = run;
        s[i].stored = 1024 + sh_rng_below(&r, 63 * 1024);
    }
    return s;
}

static uint32_t *shuffled(uint64_t n, uint64_t seed)
{
    uint32_t *order = malloc(n * sizeof *order);
    for (uint64_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    sh_rng r;
    sh_rng_init(&r, seed);
    sh_permute_u32(&r, order, n);
    return order;
}

/* The schedule agrees with the order, each load is one contiguous run of
 * storage within the chunk size, and every page is served once. Returns the
 * pages read by all loads together. */
static uint64_t check_schedule(const sh_stored_page *st, uint64_t n, uint64_t chunk,
                               const uint32_t *order, const sh_schedule *s)
{
    uint8_t *seen = calloc(n, 1);
    for (uint64_t i = 0; i < n; i++) {
        cr_assert_lt(order[i], n);
        cr_assert_eq(seen[order[i]], 0, "page %u served twice", order[i]);
        seen[order[i]] = 1;
        cr_assert_eq(s->position[order[i]], i);
        uint32_t l = s->source[i];
        cr_assert_lt(l, s->num_loads);
        const sh_load *load = &s->loads[l];
        cr_assert(order[i] >= load->first_page && order[i] < load->first_page + load->pages,
                  "position %llu: page %u is not in its load", (unsigned long long)i, order[i]);
        cr_assert(load->position <= i && i <= load->last);
    }
    uint64_t read = 0;
    for (uint64_t l = 0; l < s->num_loads; l++) {
        const sh_load *load = &s->loads[l];
        if (l > 0)
            cr_assert_gt(load->position, s->loads[l - 1].position, "one load per request");
        cr_assert_eq(s->source[load->position], l, "a load is triggered by a page it brings");
        uint64_t bytes = 0;
        for (uint32_t p = load->first_page; p < load->first_page + load->pages; p++) {
            cr_assert_eq(st[p].run, st[load->first_page].run, "a load stays within one run");
            bytes += st[p].stored;
        }
        cr_assert(load->pages == 1 || bytes <= chunk, "a multi-page load fits the chunk");
        read += load->pages;
    }
    free(seen);
    return read;
}

/* The most pages brought but not yet served at any position. */
static uint64_t peak_held(const sh_schedule *s, uint64_t n)
{
    uint64_t live = 0, peak = 0, next_load = 0;
    for (uint64_t i = 0; i < n; i++) {
        while (next_load < s->num_loads && s->loads[next_load].position == i) {
            for (uint64_t j = i; j < n; j++) /* pages this load brings */
                live += s->source[j] == next_load;
            next_load++;
        }
        if (live > peak)
            peak = live;
        live--;
    }
    return peak;
}

/* Pages brought but not yet served never exceed one per virtual chunk slot. */
static void check_memory(const sh_schedule *s, uint64_t n)
{
    cr_assert_leq(peak_held(s, n), (uint64_t)SH_VIRTUAL_CHUNKS * SH_CHUNK_MAX_PAGES);
}

Test(redirect, serves_every_page_once_with_a_consistent_schedule)
{
    uint64_t sizes[] = { 1, 7, 300, 5000 };
    uint64_t chunks[] = { 1, 64 << 10, 256 << 10, 1 << 20, 1ull << 40 };
    for (size_t a = 0; a < sizeof sizes / sizeof *sizes; a++) {
        for (size_t b = 0; b < sizeof chunks / sizeof *chunks; b++) {
            uint64_t n = sizes[a];
            sh_stored_page *st = make_stored(n, a * 10 + b);
            uint32_t *order = shuffled(n, b);
            sh_rng rng;
            sh_rng_init(&rng, 99);
            sh_schedule s;
            cr_assert_eq(sh_redirect(st, n, chunks[b], SH_VIRTUAL_CHUNKS, &rng, order, &s), 0);
            cr_assert_eq(check_schedule(st, n, chunks[b], order, &s), n,
                         "every page is read exactly once");
            if (n <= 300)
                check_memory(&s, n);
            sh_schedule_free(&s);
            free(order);
            free(st);
        }
    }
}

Test(redirect, natural_order_stays_natural_and_reads_each_chunk_once)
{
    uint64_t n = 3000, chunk = 512 << 10;
    sh_stored_page *st = make_stored(n, 5);
    uint32_t *order = malloc(n * sizeof *order);
    for (uint64_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    sh_schedule s;
    cr_assert_eq(sh_redirect(st, n, chunk, SH_VIRTUAL_CHUNKS, NULL, order, &s), 0);
    for (uint64_t i = 0; i < n; i++)
        cr_assert_eq(order[i], i);
    cr_assert_eq(s.redirections, 0);
    cr_assert_eq(check_schedule(st, n, chunk, order, &s), n, "no page is read twice");
    sh_schedule_free(&s);
    free(order);
    free(st);
}

Test(redirect, shuffled_order_needs_few_loads_and_no_waste)
{
    /* 20,000 pages of ~32 KiB in 1 MiB chunks (~30 pages each): without
     * redirection a shuffled order needs one I/O per page. */
    uint64_t n = 20000, chunk = 1 << 20;
    sh_stored_page *st = make_stored(n, 11);
    uint32_t *order = shuffled(n, 12);
    sh_rng rng;
    sh_rng_init(&rng, 13);
    sh_schedule s;
    cr_assert_eq(sh_redirect(st, n, chunk, SH_VIRTUAL_CHUNKS, &rng, order, &s), 0);
    uint64_t read = check_schedule(st, n, chunk, order, &s);
    cr_assert_lt(s.num_loads, n / 5, "%llu loads for %llu pages",
                 (unsigned long long)s.num_loads, (unsigned long long)n);
    cr_assert_eq(read, n, "pages read %llu for %llu served", (unsigned long long)read,
                 (unsigned long long)n);
    cr_assert_gt(s.redirections, n / 2);
    sh_schedule_free(&s);
    free(order);
    free(st);
}

Test(redirect, plan_is_deterministic_and_depends_on_the_epoch)
{
    uint64_t n = 2000;
    sh_stored_page *st = make_stored(n, 21);
    sh_page *pages = calloc(n, sizeof *pages);
    for (uint64_t i = 0; i < n; i++)
        pages[i] = (sh_page){ .bytes = 100, .records = 10 };
    sh_params p = { .seed = 4, .mode = SH_SHUFFLE_PAGE, .buffer_rows = 1000,
                    .max_segment_bytes = 1 << 20, .chunk_bytes = 256 << 10 };
    sh_plan a, b, c;
    cr_assert_eq(sh_plan_build(&p, pages, NULL, st, n, 0, &a), 0);
    cr_assert_eq(sh_plan_build(&p, pages, NULL, st, n, 0, &b), 0);
    cr_assert_eq(sh_plan_build(&p, pages, NULL, st, n, 1, &c), 0);
    cr_assert_eq(memcmp(a.order, b.order, n * sizeof *a.order), 0);
    cr_assert_eq(a.schedule.num_loads, b.schedule.num_loads);
    cr_assert_neq(memcmp(a.order, c.order, n * sizeof *a.order), 0);
    check_schedule(st, n, p.chunk_bytes, a.order, &a.schedule);
    sh_plan_free(&a);
    sh_plan_free(&b);
    sh_plan_free(&c);
    free(pages);
    free(st);
}

/* A mixture's source of few chunks (one file) gets its share of the
 * virtual chunks: with one per physical chunk nothing is redirected, and a
 * chunk's pages wait for requests spread over the whole epoch; with fewer,
 * pages are redirected and what waits is bounded by their slots. */
Test(redirect, fewer_virtual_chunks_redirect_a_dataset_of_few_chunks)
{
    uint64_t n = 2000, chunk = 1 << 20;
    sh_stored_page *st = calloc(n, sizeof *st);
    for (uint64_t i = 0; i < n; i++)
        st[i] = (sh_stored_page){ .stored = 64 << 10, .run = 1 }; /* 16 pages a chunk */
    uint32_t virtuals[] = { SH_VIRTUAL_CHUNKS, 8, 2, 1 }; /* of 125 chunks */
    for (size_t k = 0; k < sizeof virtuals / sizeof *virtuals; k++) {
        uint32_t *order = shuffled(n, 3);
        sh_rng rng;
        sh_rng_init(&rng, 17);
        sh_schedule s;
        cr_assert_eq(sh_redirect(st, n, chunk, virtuals[k], &rng, order, &s), 0);
        cr_assert_eq(check_schedule(st, n, chunk, order, &s), n, "each chunk read once");
        cr_assert_leq(peak_held(&s, n), (uint64_t)virtuals[k] * 16,
                      "%u virtual chunks hold at most their slots", virtuals[k]);
        cr_assert_gt(s.redirections, n / 2, "%u virtual chunks: %llu redirections", virtuals[k],
                     (unsigned long long)s.redirections);
        sh_schedule_free(&s);
        free(order);
    }
    /* 40 chunks: a virtual chunk each at the default, so no page is
     * redirected and the first loads' pages wait long */
    uint64_t few = 40 * 16;
    uint32_t *order = shuffled(few, 3);
    sh_rng rng;
    sh_rng_init(&rng, 17);
    sh_schedule s;
    cr_assert_eq(sh_redirect(st, few, chunk, SH_VIRTUAL_CHUNKS, &rng, order, &s), 0);
    cr_assert_eq(s.redirections, 0);
    cr_assert_gt(peak_held(&s, few), few / 2, "loads bring pages needed much later");
    sh_schedule_free(&s);
    free(order);
    order = shuffled(few, 3);
    cr_assert_eq(sh_redirect(st, few, chunk, 5, &rng, order, &s), 0);
    cr_assert_gt(s.redirections, few / 2);
    cr_assert_leq(peak_held(&s, few), 5 * 16);
    sh_schedule_free(&s);
    free(order);
    free(st);
}
