/* Regressions for hostile inputs found by fuzzing or review (tests/fuzz/). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pq_column.h"
#include "pq_meta.h"
#include "pq_values.h"

/* One group with a 100 KB name and 1000 leaves below it: every leaf path
 * repeats the group's name, 100 MB in all from a footer of ~100 KB. Before
 * the bound on total path bytes a 580 KB footer of this shape took > 2 GB. */
Test(regress, schema_paths_are_bounded)
{
    enum { LEAVES = 1000, NAME = 100000 };
    pq_schema_element *s = calloc(LEAVES + 2, sizeof *s);
    char *big = malloc(NAME + 1);
    cr_assert(s && big);
    memset(big, 'a', NAME);
    big[NAME] = '\0';
    s[0] = (pq_schema_element){ .name = "root", .type = -1, .num_children = 1 };
    s[1] = (pq_schema_element){ .name = big, .type = -1, .num_children = LEAVES };
    for (int i = 0; i < LEAVES; i++)
        s[i + 2] = (pq_schema_element){ .name = "x", .type = PQ_INT32 };
    pq_file_meta m = { .num_schema = LEAVES + 2, .schema = s };

    pq_leaf *leaves;
    int n;
    pq_error err;
    cr_assert_eq(pq_file_leaves(&m, &leaves, &n, &err), -1);
    cr_assert(strstr(err.msg, "column paths take more than"), "%s", err.msg);
    cr_assert_null(leaves);

    /* The same shape with a short group name is fine. */
    s[1].name = "g";
    cr_assert_eq(pq_file_leaves(&m, &leaves, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(n, LEAVES);
    cr_assert_str_eq(leaves[LEAVES - 1].path, "g.x");
    pq_leaves_free(leaves, n);
    free(big);
    free(s);
}

/* DELTA_BINARY_PACKED of n values: `first`, then every delta `step`: one
 * miniblock of 128 per block, bit width 0, so each block is two bytes. */
static size_t constant_steps(uint8_t *out, uint32_t n, int64_t first, int64_t step)
{
    size_t len = 0;
    uint64_t v;
    out[len++] = 0x80; /* block size 128 */
    out[len++] = 0x01;
    out[len++] = 0x01; /* one miniblock */
    for (v = n; v >= 0x80; v >>= 7)
        out[len++] = (uint8_t)(v | 0x80);
    out[len++] = (uint8_t)v;
    for (v = (uint64_t)((first << 1) ^ (first >> 63)); v >= 0x80; v >>= 7)
        out[len++] = (uint8_t)(v | 0x80);
    out[len++] = (uint8_t)v;
    for (uint32_t b = 0; b < (n - 1 + 127) / 128; b++) {
        out[len++] = (uint8_t)((step << 1) ^ (step >> 63)); /* min delta, zigzag */
        out[len++] = 0;                                      /* bit width 0 */
    }
    return len;
}

/* DELTA_BYTE_ARRAY whose every value repeats the whole previous one plus a
 * byte: 41 KB of page describe 800 MB of values. Refused before allocating
 * (the page limit alone, 2 GiB, would let it through). */
Test(regress, delta_byte_array_expansion_is_bounded)
{
    enum { N = 40000 };
    uint8_t *page = malloc(2 * 1024 + N);
    size_t len = constant_steps(page, N, 0, 1);   /* prefix lengths 0, 1, 2, ... */
    len += constant_steps(page + len, N, 1, 0);   /* suffix lengths all 1 */
    memset(page + len, 'a', N);                   /* the suffixes */
    len += N;
    cr_assert_gt((uint64_t)N * (N + 1) / 2, PQ_MAX_EXPANDED_PAGE_BYTES);
    pq_column_desc col = { .type = PQ_BYTE_ARRAY };
    pq_bytes *values = malloc(N * sizeof *values);
    uint8_t *extra = NULL;
    size_t extra_len = 0;
    pq_error err;
    cr_assert_eq(pq_values_delta_bytes(&col, page, len, N, values, &extra, &extra_len, &err), -1);
    cr_assert(strstr(err.msg, "expand"), "%s", err.msg);
    cr_assert_null(extra);
    /* the same page with 2,000 values is fine: 2 MB expanded */
    len = constant_steps(page, 2000, 0, 1);
    len += constant_steps(page + len, 2000, 1, 0);
    memset(page + len, 'a', 2000);
    len += 2000;
    cr_assert_eq(pq_values_delta_bytes(&col, page, len, 2000, values, &extra, &extra_len, &err),
                 0, "%s", err.msg);
    cr_assert_eq(values[1999].len, 2000);
    free(extra);
    free(values);
    free(page);
}
