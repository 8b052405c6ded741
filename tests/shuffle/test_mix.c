/* A mixture's counts, runs and turns (sh_mix.h), checked against the rules
 * stated there by independent computations. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "sh_mix.h"
#include "sh_random.h"

/* The largest remainder method as stated, the other way round: sort the
 * sources by (remainder descending, number ascending) and give the first
 * R - (sum of floors) of them one more. */
static uint64_t rem_of(uint64_t r, uint64_t w, uint64_t total)
{
    return (uint64_t)((unsigned __int128)r * w % total);
}

static void oracle_counts(const uint64_t *w, uint32_t n, uint64_t r, uint64_t *out)
{
    uint64_t total = 0, given = 0;
    for (uint32_t i = 0; i < n; i++)
        total += w[i];
    uint32_t *by = malloc(n * sizeof *by);
    for (uint32_t i = 0; i < n; i++) {
        out[i] = (uint64_t)((unsigned __int128)r * w[i] / total);
        given += out[i];
        by[i] = i;
    }
    for (uint32_t i = 1; i < n; i++) /* insertion sort: stable, so ties keep number order */
        for (uint32_t j = i; j > 0 && rem_of(r, w[by[j]], total) > rem_of(r, w[by[j - 1]], total);
             j--) {
            uint32_t x = by[j];
            by[j] = by[j - 1];
            by[j - 1] = x;
        }
    for (uint64_t k = 0; k < r - given; k++)
        out[by[k]]++;
    free(by);
}

Test(mix, counts_of_the_issue_example)
{
    uint64_t w[3] = { 5, 3, 2 }, c[3];
    cr_assert_eq(sh_mix_counts(w, 3, 1000000, c), 0);
    cr_assert(c[0] == 500000 && c[1] == 300000 && c[2] == 200000);
    /* 7 records of three equal weights: 2.33 each, one left for source 0 */
    uint64_t e[3] = { 1, 1, 1 };
    cr_assert_eq(sh_mix_counts(e, 3, 7, c), 0);
    cr_assert(c[0] == 3 && c[1] == 2 && c[2] == 2);
    /* 0.7 / 0.3 of 11 records: 7.7 and 3.3 round to 8 and 3 */
    uint64_t f[2] = { 7, 3 };
    cr_assert_eq(sh_mix_counts(f, 2, 11, c), 0);
    cr_assert(c[0] == 8 && c[1] == 3);
}

Test(mix, counts_refuse_no_weight)
{
    uint64_t w[3] = { 0, 0, 0 }, c[3];
    cr_assert_eq(sh_mix_counts(w, 3, 10, c), -1);
    cr_assert_eq(sh_mix_counts(w, 0, 10, c), -1);
    uint64_t big[2] = { UINT64_MAX, 1 };
    cr_assert_eq(sh_mix_counts(big, 2, 10, c), -1);
    uint64_t one[2] = { 0, 4 }; /* a zero weight among others contributes nothing */
    cr_assert_eq(sh_mix_counts(one, 2, 10, c), 0);
    cr_assert(c[0] == 0 && c[1] == 10);
}

Test(mix, counts_sum_exactly_and_round_each_share)
{
    sh_rng rng;
    sh_rng_init(&rng, 42);
    uint64_t w[12], c[12], o[12];
    for (int trial = 0; trial < 20000; trial++) {
        uint32_t n = 1 + (uint32_t)sh_rng_below(&rng, 12);
        uint64_t r = trial % 3 == 0 ? sh_rng_below(&rng, 50) : sh_rng_next(&rng) >> 20;
        uint64_t total = 0;
        for (uint32_t i = 0; i < n; i++)
            total += w[i] = trial % 2 ? sh_rng_below(&rng, 10) : sh_rng_next(&rng) >> 34;
        if (total == 0)
            w[0] = total = 1;
        cr_assert_eq(sh_mix_counts(w, n, r, c), 0);
        oracle_counts(w, n, r, o);
        uint64_t sum = 0;
        for (uint32_t i = 0; i < n; i++) {
            sum += c[i];
            cr_assert_eq(c[i], o[i], "trial %d source %u", trial, i);
            /* floor or ceil of the share: |c x W - R x w| < W */
            unsigned __int128 lhs = (unsigned __int128)c[i] * total,
                              rhs = (unsigned __int128)r * w[i];
            cr_assert(lhs > rhs ? lhs - rhs < total : rhs - lhs < total);
        }
        cr_assert_eq(sum, r);
    }
}

/* Every position of every epoch is the position epoch x count + k of the
 * endless sequence of passes, record (pos mod size) of pass (pos / size). */
static void check_runs(uint64_t size, uint64_t count, uint64_t epoch)
{
    sh_mix_run *runs = malloc((sh_mix_runs_max(size, count) + 1) * sizeof *runs);
    uint64_t n = sh_mix_runs(size, count, epoch, runs), pos = epoch * count;
    cr_assert_leq(n, sh_mix_runs_max(size, count));
    for (uint64_t k = 0; k < n; k++) {
        cr_assert_lt(runs[k].first, runs[k].end);
        cr_assert_leq(runs[k].end, size);
        for (uint64_t r = runs[k].first; r < runs[k].end; r++, pos++) {
            cr_assert_eq(runs[k].pass, pos / size);
            cr_assert_eq(r, pos % size);
        }
    }
    cr_assert_eq(pos, (epoch + 1) * count);
    free(runs);
}

Test(mix, runs_follow_the_sequence_of_passes)
{
    for (uint64_t size = 1; size <= 12; size++)
        for (uint64_t count = 0; count <= 40; count++)
            for (uint64_t epoch = 0; epoch < 9; epoch++)
                check_runs(size, count, epoch);
    check_runs(1000003, 17, 123456789);
}

Test(mix, runs_cover_a_large_source_over_successive_epochs)
{
    /* 10 records, 3 an epoch: epochs 0..3 hold pass 0 once (and 2 of pass 1) */
    int seen[10] = { 0 };
    sh_mix_run runs[8];
    for (uint64_t e = 0; e < 4; e++) {
        uint64_t n = sh_mix_runs(10, 3, e, runs);
        for (uint64_t k = 0; k < n; k++)
            for (uint64_t r = runs[k].first; r < runs[k].end; r++)
                if (runs[k].pass == 0)
                    seen[r]++;
    }
    for (int r = 0; r < 10; r++)
        cr_assert_eq(seen[r], 1);
}

Test(mix, runs_repeat_a_small_source_in_new_passes)
{
    /* 10 records, 25 an epoch: passes 0, 1 whole and half of 2; then the
     * other half of 2 and passes 3, 4 */
    sh_mix_run runs[8];
    cr_assert_eq(sh_mix_runs(10, 25, 0, runs), 3);
    cr_assert(runs[0].pass == 0 && runs[1].pass == 1 && runs[2].pass == 2);
    cr_assert(runs[2].first == 0 && runs[2].end == 5);
    cr_assert_eq(sh_mix_runs(10, 25, 1, runs), 3);
    cr_assert(runs[0].pass == 2 && runs[0].first == 5 && runs[2].pass == 4);
}

Test(mix, sources_get_their_own_seeds)
{
    cr_assert_neq(sh_mix_source_seed(0, 0), sh_mix_source_seed(0, 1));
    cr_assert_neq(sh_mix_source_seed(0, 0), sh_mix_source_seed(1, 0));
    cr_assert_eq(sh_mix_source_seed(7, 3), sh_mix_source_seed(7, 3));
}

Test(mix, shares_of_segment_limits)
{
    /* 5:3:2 of 100,000 records at buffer=10000 */
    cr_assert_eq(sh_mix_share_of(10000, 50000, 100000), 5000);
    cr_assert_eq(sh_mix_share_of(10000, 30000, 100000), 3000);
    cr_assert_eq(sh_mix_share_of(10000, 20000, 100000), 2000);
    /* rounded up, never 0, whole buffer for the only source */
    cr_assert_eq(sh_mix_share_of(10000, 1, 3), 3334);
    cr_assert_eq(sh_mix_share_of(10, 1, 1000000), 1);
    cr_assert_eq(sh_mix_share_of(10000, 0, 1000000), 1);
    cr_assert_eq(sh_mix_share_of(10000, 777, 777), 10000);
    /* no overflow at the largest buffer and counts */
    cr_assert_eq(sh_mix_share_of(UINT32_MAX, UINT64_MAX / 2, UINT64_MAX), 2147483648u);
}

/* Run every turn of counts[0..n); check the counts, and that after every
 * prefix of t turns source i has taken within 1 of t x c_i / T. Returns the
 * turns (caller frees). */
static uint32_t *run_turns(const uint64_t *counts, uint32_t n, uint64_t *total_out)
{
    int64_t credit[16];
    uint64_t taken[16] = { 0 };
    sh_mix_turns t;
    cr_assert_eq(sh_mix_turns_init(&t, counts, n, credit), 0);
    uint32_t *turns = malloc((t.total ? t.total : 1) * sizeof *turns);
    for (uint64_t k = 0; k < t.total; k++) {
        turns[k] = sh_mix_turns_next(&t);
        cr_assert_lt(turns[k], n);
        taken[turns[k]]++;
        for (uint32_t i = 0; i < n; i++) {
            /* |taken x T - (k+1) x c| < T */
            int64_t d = (int64_t)(taken[i] * t.total) - (int64_t)((k + 1) * counts[i]);
            cr_assert_lt(d < 0 ? -d : d, (int64_t)t.total, "source %u after %llu turns", i,
                         (unsigned long long)k + 1);
        }
    }
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(taken[i], counts[i]);
    *total_out = t.total;
    return turns;
}

Test(mix, turns_keep_every_prefix_within_one)
{
    sh_rng rng;
    sh_rng_init(&rng, 9);
    uint64_t counts[16];
    for (int trial = 0; trial < 400; trial++) {
        uint32_t n = 1 + (uint32_t)sh_rng_below(&rng, 12);
        for (uint32_t i = 0; i < n; i++)
            counts[i] = sh_rng_below(&rng, trial % 2 ? 8 : 300);
        uint64_t total;
        free(run_turns(counts, n, &total));
    }
}

Test(mix, turns_hold_weights_in_every_window)
{
    /* The issue's acceptance shape: 5:3:2, every window of 10,000 turns
     * within 3 percentage points; in fact within 2 turns of its share. */
    uint64_t counts[3] = { 500000, 300000, 200000 }, total;
    uint32_t *turns = run_turns(counts, 3, &total);
    enum { W = 10000 };
    uint64_t in[3] = { 0 };
    for (uint64_t k = 0; k < total; k++) {
        in[turns[k]]++;
        if (k >= W)
            in[turns[k - W]]--;
        if (k + 1 < W)
            continue;
        for (int i = 0; i < 3; i++) {
            int64_t share = (int64_t)(W * counts[i] / total);
            int64_t d = (int64_t)in[i] - share;
            cr_assert_leq(d < 0 ? -d : d, 2, "source %d window ending at %llu", i,
                          (unsigned long long)k);
        }
    }
    free(turns);
}

Test(mix, turns_refuse_overflowing_counts)
{
    uint64_t counts[2] = { 1ull << 61, 1ull << 61 };
    int64_t credit[2];
    sh_mix_turns t;
    cr_assert_eq(sh_mix_turns_init(&t, counts, 2, credit), -1);
}
