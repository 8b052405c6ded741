/* pq_nest: the nesting above a leaf read from hand-built schemas, and rows
 * assembled from their levels into a JSON-like text (the levels are what a
 * Parquet writer produces for the values in the comments: Dremel striping). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "pq_meta.h"
#include "pq_nest.h"

typedef struct node {
    const char *name;
    int repetition;
    int list; /* LIST annotation */
    int children;
} node;

/* A schema of one path: nodes[0] the top-level field, the last a leaf (INT32). */
static void nest_of(const node *nodes, int n, int named, pq_nest *out)
{
    pq_schema_element schema[16];
    memset(schema, 0, sizeof schema);
    schema[0] = (pq_schema_element){ .name = (char *)"root", .type = -1, .num_children = 1 };
    for (int i = 0; i < n; i++) {
        pq_schema_element *e = &schema[1 + i];
        e->name = (char *)nodes[i].name;
        e->repetition = nodes[i].repetition;
        e->type = i == n - 1 ? PQ_INT32 : -1;
        e->num_children = i == n - 1 ? 0 : 1;
        e->logical.kind = nodes[i].list ? PQ_LOGICAL_LIST : PQ_LOGICAL_NONE;
    }
    pq_file_meta m = { .num_schema = n + 1, .schema = schema };
    pq_leaf *leaves;
    int count;
    pq_error err;
    cr_assert_eq(pq_file_leaves(&m, &leaves, &count, &err), 0, "%s", err.msg);
    cr_assert_eq(pq_nest_of(&m, &leaves[0], named, out, &err), 0, "%s", err.msg);
    pq_leaves_free(leaves, count);
}

typedef struct text {
    char buf[512];
    size_t len;
    const pq_nest *n;
} text;

static int emit(void *ctx, pq_nest_event ev, const pq_step *step, uint32_t value)
{
    text *t = ctx;
    char piece[64];
    switch (ev) {
    case PQ_EV_OPEN:
        if (step->kind == PQ_STEP_STRUCT)
            snprintf(piece, sizeof piece, "{%s:", step->name);
        else
            snprintf(piece, sizeof piece, "[");
        break;
    case PQ_EV_CLOSE: snprintf(piece, sizeof piece, step->kind == PQ_STEP_STRUCT ? "}" : "]"); break;
    case PQ_EV_NEXT: snprintf(piece, sizeof piece, ","); break;
    case PQ_EV_NULL: snprintf(piece, sizeof piece, "null"); break;
    case PQ_EV_EMPTY: snprintf(piece, sizeof piece, "[]"); break;
    case PQ_EV_VALUE: snprintf(piece, sizeof piece, "v%u", value); break;
    }
    size_t k = strlen(piece);
    cr_assert_lt(t->len + k, sizeof t->buf);
    memcpy(t->buf + t->len, piece, k + 1);
    t->len += k;
    return 0;
}

static const char *walk(const pq_nest *n, const uint16_t *reps, const uint16_t *defs,
                        uint32_t entries, uint32_t values, pq_error *err)
{
    static text t;
    t.len = 0;
    t.buf[0] = '\0';
    t.n = n;
    return pq_nest_walk(n, defs, reps, entries, values, emit, &t, err) == 0 ? t.buf : NULL;
}

#define WALK(n, reps, defs, values, want)                                                  \
    do {                                                                                    \
        pq_error e_;                                                                        \
        const char *got_ = walk(n, reps, defs, sizeof(defs) / sizeof(defs[0]), values, &e_); \
        cr_assert_not_null(got_, "%s", e_.msg);                                             \
        cr_assert_str_eq(got_, want);                                                       \
    } while (0)

/* optional group ll (LIST) { repeated group list { optional group element (LIST) {
 *   repeated group list { optional int32 element; } } } } */
static const node LIST_OF_LISTS[] = {
    { "ll", PQ_OPTIONAL, 1, 1 }, { "list", PQ_REPEATED, 0, 1 },
    { "element", PQ_OPTIONAL, 1, 1 }, { "list", PQ_REPEATED, 0, 1 },
    { "element", PQ_OPTIONAL, 0, 0 },
};

Test(nest, list_of_lists_steps_and_rows)
{
    pq_nest n;
    nest_of(LIST_OF_LISTS, 5, 1, &n);
    cr_assert_str_eq(n.key, "ll");
    cr_assert_eq(n.num_steps, 3);
    cr_assert(n.steps[0].kind == PQ_STEP_LIST && n.steps[0].def == 1 &&
              n.steps[0].elem_def == 2 && n.steps[0].rep == 1);
    cr_assert(n.steps[1].kind == PQ_STEP_LIST && n.steps[1].def == 3 &&
              n.steps[1].elem_def == 4 && n.steps[1].rep == 2);
    cr_assert(n.steps[2].kind == PQ_STEP_LEAF && n.steps[2].def == 5);

    /* [[1, 2], [], null, [null]] */
    uint16_t r1[] = { 0, 2, 1, 1, 1 }, d1[] = { 5, 5, 3, 2, 4 };
    WALK(&n, r1, d1, 2, "[[v0,v1],[],null,[null]]");
    /* null, then [] */
    uint16_t r2[] = { 0 }, d2[] = { 0 }, d3[] = { 1 };
    WALK(&n, r2, d2, 0, "null");
    WALK(&n, r2, d3, 0, "[]");
    pq_nest_free(&n);
}

Test(nest, names_inside_a_list_serve_the_list)
{
    for (int named = 1; named <= 5; named++) {
        pq_nest n;
        nest_of(LIST_OF_LISTS, 5, named, &n);
        cr_assert_str_eq(n.key, "ll", "named %d", named);
        cr_assert_eq(n.num_steps, 3);
        pq_nest_free(&n);
    }
}

Test(nest, structs_and_a_list_inside_one)
{
    /* optional group s { required group t { optional group l (LIST) {
     *   repeated group list { required int32 element; } } } } */
    static const node nodes[] = {
        { "s", PQ_OPTIONAL, 0, 1 }, { "t", PQ_REQUIRED, 0, 1 }, { "l", PQ_OPTIONAL, 1, 1 },
        { "list", PQ_REPEATED, 0, 1 }, { "element", PQ_REQUIRED, 0, 0 },
    };
    pq_nest n;
    nest_of(nodes, 5, 1, &n);
    cr_assert_str_eq(n.key, "s");
    cr_assert_eq(n.num_steps, 4);
    cr_assert(n.steps[0].kind == PQ_STEP_STRUCT && !strcmp(n.steps[0].name, "t"));
    cr_assert(n.steps[1].kind == PQ_STEP_STRUCT && !strcmp(n.steps[1].name, "l"));
    uint16_t r[] = { 0, 1 }, d[] = { 3, 3 }, r0[] = { 0 }, dnull[] = { 0 }, dl[] = { 1 };
    WALK(&n, r, d, 2, "{t:{l:[v0,v1]}}");
    WALK(&n, r0, dnull, 0, "null");
    WALK(&n, r0, dl, 0, "{t:{l:null}}");
    pq_nest_free(&n);

    nest_of(nodes, 5, 3, &n); /* "s.t.l" and below: the list */
    cr_assert_str_eq(n.key, "s.t.l");
    cr_assert_eq(n.num_steps, 2);
    pq_nest_free(&n);
    nest_of(nodes, 5, 2, &n); /* "s.t": a struct */
    cr_assert_str_eq(n.key, "s.t");
    cr_assert_eq(n.num_steps, 3);
    pq_nest_free(&n);
}

Test(nest, legacy_two_level_lists)
{
    /* optional group a (LIST) { repeated int32 array; }: a list of non-null ints */
    static const node prim[] = { { "a", PQ_OPTIONAL, 1, 1 }, { "array", PQ_REPEATED, 0, 0 } };
    pq_nest n;
    nest_of(prim, 2, 1, &n);
    cr_assert_eq(n.num_steps, 2);
    cr_assert(n.steps[1].kind == PQ_STEP_LEAF && n.steps[1].def == 2);
    pq_nest_free(&n);
    /* optional group a (LIST) { repeated group array { optional int32 x; } }: structs */
    static const node grp[] = { { "a", PQ_OPTIONAL, 1, 1 }, { "array", PQ_REPEATED, 0, 1 },
                                { "x", PQ_OPTIONAL, 0, 0 } };
    nest_of(grp, 3, 1, &n);
    cr_assert_eq(n.num_steps, 3);
    cr_assert(n.steps[1].kind == PQ_STEP_STRUCT && !strcmp(n.steps[1].name, "x"));
    uint16_t r[] = { 0, 1 }, d[] = { 3, 2 };
    WALK(&n, r, d, 1, "[{x:v0},{x:null}]");
    pq_nest_free(&n);
    /* repeated group x (no LIST) { optional int32 y; }: a non-null list of structs */
    static const node bare[] = { { "x", PQ_REPEATED, 0, 1 }, { "y", PQ_OPTIONAL, 0, 0 } };
    nest_of(bare, 2, 1, &n);
    cr_assert_eq(n.num_steps, 3);
    cr_assert(n.steps[0].kind == PQ_STEP_LIST && n.steps[0].def == 0);
    uint16_t r0[] = { 0 }, d0[] = { 0 };
    WALK(&n, r0, d0, 0, "[]");
    pq_nest_free(&n);
}

Test(nest, hostile_levels_fail_with_a_message)
{
    pq_nest n;
    nest_of(LIST_OF_LISTS, 5, 1, &n);
    pq_error err;
    struct {
        uint16_t reps[3], defs[3];
        uint32_t entries, values;
        const char *says;
    } bad[] = {
        { { 1 }, { 5 }, 1, 1, "starts with repetition" },
        { { 0, 3 }, { 5, 5 }, 2, 2, "repetition level 3" },
        { { 0, 2 }, { 2, 5 }, 2, 1, "no element" },   /* the inner list was empty */
        { { 0, 1 }, { 0, 5 }, 2, 1, "no element" },   /* the row was null */
        { { 0, 1 }, { 5, 1 }, 2, 1, "no element" },   /* an element below its list */
        { { 0 }, { 6 }, 1, 1, "over the column's maximum" },
        { { 0, 1 }, { 5, 5 }, 2, 1, "more than the 1" },
        { { 0, 1 }, { 5, 5 }, 2, 3, "define 2 values, 3 given" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_null(walk(&n, bad[i].reps, bad[i].defs, bad[i].entries, bad[i].values, &err),
                       "case %zu", i);
        cr_assert(strstr(err.msg, bad[i].says), "case %zu: %s", i, err.msg);
    }
    cr_assert_null(walk(&n, NULL, NULL, 0, 0, &err));
    pq_nest_free(&n);
}
