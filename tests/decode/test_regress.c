/* Regressions for hostile inputs found by fuzzing or review (tests/fuzz/). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pq_meta.h"

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
