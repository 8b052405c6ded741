/* Properties of the shuffle=row plan: a permutation of all records, cut into
 * segments of at most buffer_rows records whose sizes are the sums of their
 * records' sizes, the same for the same inputs, and far from the natural
 * order. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "sh_plan.h"

#define RECORDS 50000u

static uint32_t *record_sizes(void)
{
    uint32_t *b = malloc(RECORDS * sizeof *b);
    for (uint32_t i = 0; i < RECORDS; i++)
        b[i] = 1 + (i * 2654435761u) % 900; /* long-tailed enough, never 0 */
    return b;
}

static sh_params row_params(uint64_t seed)
{
    return (sh_params){ .seed = seed, .mode = SH_SHUFFLE_ROW, .buffer_rows = 1000,
                        .max_segment_bytes = 1u << 20 };
}

Test(rows, every_record_once_in_segments_that_tile_the_order)
{
    uint32_t *bytes = record_sizes();
    sh_params p = row_params(7);
    sh_plan plan;
    cr_assert_eq(sh_plan_build_rows(&p, bytes, RECORDS, 3, &plan), 0);
    cr_assert_eq(plan.total_records, RECORDS);
    cr_assert_null(plan.order);

    uint8_t *seen = calloc(RECORDS, 1);
    for (uint32_t i = 0; i < RECORDS; i++) {
        cr_assert_lt(plan.rows[i], RECORDS);
        cr_assert_eq(seen[plan.rows[i]]++, 0, "record %u served twice", plan.rows[i]);
    }
    uint64_t next = 0, total = 0;
    for (uint64_t s = 0; s < plan.num_segments; s++) {
        const sh_segment *seg = &plan.segments[s];
        cr_assert_eq(seg->first, next, "segment %llu does not follow its predecessor",
                     (unsigned long long)s);
        cr_assert_eq(seg->units, 0);
        cr_assert(seg->records >= 1 && seg->records <= p.buffer_rows);
        uint64_t sum = 0;
        for (uint32_t r = 0; r < seg->records; r++)
            sum += bytes[plan.rows[seg->first + r]];
        cr_assert_eq(seg->bytes, sum);
        total += sum;
        next += seg->records;
    }
    cr_assert_eq(next, RECORDS);
    cr_assert_eq(plan.total_bytes, total);

    /* served in plan->rows order: the per-segment order is the identity */
    uint32_t perm[1000];
    sh_segment_order(&p, &plan, 1, perm);
    for (uint32_t r = 0; r < plan.segments[1].records; r++)
        cr_assert_eq(perm[r], r);

    /* far from the natural order: a segment's records are spread over the
     * whole dataset, not a neighbourhood of it */
    uint32_t lo = RECORDS, hi = 0;
    for (uint32_t r = 0; r < plan.segments[0].records; r++) {
        uint32_t g = plan.rows[plan.segments[0].first + r];
        lo = g < lo ? g : lo;
        hi = g > hi ? g : hi;
    }
    cr_assert_gt(hi - lo, RECORDS * 9 / 10, "segment 0 spans records %u..%u only", lo, hi);
    free(seen);
    free(bytes);
    sh_plan_free(&plan);
}

Test(rows, same_inputs_same_order_other_epoch_or_seed_another)
{
    uint32_t *bytes = record_sizes();
    sh_params p = row_params(7), q = row_params(8);
    sh_plan a, b, other_epoch, other_seed;
    cr_assert_eq(sh_plan_build_rows(&p, bytes, RECORDS, 3, &a), 0);
    cr_assert_eq(sh_plan_build_rows(&p, bytes, RECORDS, 3, &b), 0);
    cr_assert_eq(sh_plan_build_rows(&p, bytes, RECORDS, 4, &other_epoch), 0);
    cr_assert_eq(sh_plan_build_rows(&q, bytes, RECORDS, 3, &other_seed), 0);
    uint32_t same = 0, same_epoch = 0, same_seed = 0;
    for (uint32_t i = 0; i < RECORDS; i++) {
        same += a.rows[i] == b.rows[i];
        same_epoch += a.rows[i] == other_epoch.rows[i];
        same_seed += a.rows[i] == other_seed.rows[i];
    }
    cr_assert_eq(same, RECORDS);
    cr_assert_lt(same_epoch, 100);
    cr_assert_lt(same_seed, 100);
    cr_assert_eq(a.num_segments, b.num_segments);
    free(bytes);
    sh_plan_free(&a);
    sh_plan_free(&b);
    sh_plan_free(&other_epoch);
    sh_plan_free(&other_seed);
}

Test(rows, huge_records_close_segments_by_bytes_and_empty_input_is_empty)
{
    /* 640 records: the small-dataset share allows 10 per segment, but two
     * of these pass the 1 MiB segment cap */
    uint32_t bytes[640];
    for (int i = 0; i < 640; i++)
        bytes[i] = 600u << 10;
    sh_params p = row_params(1);
    sh_plan plan;
    cr_assert_eq(sh_plan_build_rows(&p, bytes, 640, 0, &plan), 0);
    cr_assert_eq(plan.num_segments, 320);
    for (int s = 0; s < 320; s++)
        cr_assert_eq(plan.segments[s].records, 2);
    sh_plan_free(&plan);

    cr_assert_eq(sh_plan_build_rows(&p, bytes, 0, 0, &plan), 0);
    cr_assert_eq(plan.num_segments, 0);
    cr_assert_eq(plan.total_bytes, 0);
    sh_plan_free(&plan);
}
