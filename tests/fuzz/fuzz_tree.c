/* fuzz_tree — record assembly across the leaves of one field (pq_tree).
 *
 * The field is fixed: m: optional list<optional struct<optional a,
 * optional map<required key, optional value>>>, three leaves (a, key,
 * value) of max def 4, 5, 6 and max rep 1, 2, 2.
 * Input layout, per leaf in turn:
 *   1 byte  entries n (b % 16)
 *   1 byte  values given: the defined entries, or off by (b % 3) - 1
 *   2n bytes (rep, def) pairs, taken modulo (max + 2): out-of-range levels
 *           occur too
 * The row goes through pq_tree_walk, whose events must be balanced: OPEN
 * and CLOSE nest over STRUCT and LIST nodes, FIELD indexes a field of the
 * open struct in order, NEXT only inside an open list, VALUE indexes each
 * leaf's values 0, 1, ... below the number given, and a walk that succeeds
 * has consumed every leaf's values. Anything else aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pq_tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LEAVES 3
#define MAX_ENTRIES 16
#define DEPTH 16

typedef struct check {
    const pq_tree_node *stack[DEPTH];
    int depth;
    uint32_t next[LEAVES], values[LEAVES];
} check;

static int on_event(void *ctx, pq_tree_event ev, const pq_tree_node *n, uint32_t index,
                    uint32_t value)
{
    check *c = ctx;
    const pq_tree_node *top = c->depth ? c->stack[c->depth - 1] : NULL;
    switch (ev) {
    case PQ_TE_OPEN:
        if (n->kind == PQ_STEP_LEAF || c->depth == DEPTH)
            abort();
        c->stack[c->depth++] = n;
        break;
    case PQ_TE_CLOSE:
        if (top != n)
            abort();
        c->depth--;
        break;
    case PQ_TE_FIELD:
        if (top != n || n->kind != PQ_STEP_STRUCT || index >= n->num_children)
            abort();
        break;
    case PQ_TE_NEXT:
        if (top != n || n->kind != PQ_STEP_LIST)
            abort();
        break;
    case PQ_TE_VALUE:
        if (n->kind != PQ_STEP_LEAF || index >= LEAVES || index != n->leaf ||
            value != c->next[index] || value >= c->values[index])
            abort();
        c->next[index]++;
        break;
    case PQ_TE_NULL:
    case PQ_TE_EMPTY:
        break;
    }
    return 0;
}

static void tree_of(pq_tree *t)
{
    static pq_step a[] = { { PQ_STEP_LIST, 1, 2, 1, 0, NULL },
                           { PQ_STEP_STRUCT, 3, 0, 0, 0, (char *)"a" },
                           { PQ_STEP_LEAF, 4, 0, 0, 0, NULL } };
    static pq_step key[] = { { PQ_STEP_LIST, 1, 2, 1, 0, NULL },
                             { PQ_STEP_STRUCT, 3, 0, 0, 0, (char *)"m" },
                             { PQ_STEP_LIST, 4, 5, 2, 1, NULL },
                             { PQ_STEP_STRUCT, 5, 0, 0, 0, (char *)"key" },
                             { PQ_STEP_LEAF, 5, 0, 0, 0, NULL } };
    static pq_step value[] = { { PQ_STEP_LIST, 1, 2, 1, 0, NULL },
                               { PQ_STEP_STRUCT, 3, 0, 0, 0, (char *)"m" },
                               { PQ_STEP_LIST, 4, 5, 2, 1, NULL },
                               { PQ_STEP_STRUCT, 5, 0, 0, 0, (char *)"value" },
                               { PQ_STEP_LEAF, 6, 0, 0, 0, NULL } };
    pq_nest nests[LEAVES] = { { a, 3, 4, 1, (char *)"f" }, { key, 5, 5, 2, (char *)"f" },
                              { value, 5, 6, 2, (char *)"f" } };
    pq_error err;
    memset(t, 0, sizeof *t);
    for (int k = 0; k < LEAVES; k++)
        if (pq_tree_add(t, &nests[k], &err) < 0)
            abort();
    if (pq_tree_finish(t, &err) < 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pq_tree t;
    tree_of(&t);
    uint16_t defs[LEAVES][MAX_ENTRIES], reps[LEAVES][MAX_ENTRIES];
    pq_tree_row rows[LEAVES];
    check c = { .depth = 0 };
    size_t at = 0;
    for (int k = 0; k < LEAVES; k++) {
        uint32_t n = at < size ? data[at++] % MAX_ENTRIES : 0;
        int off = at < size ? data[at++] % 3 - 1 : 0;
        uint32_t defined = 0;
        for (uint32_t i = 0; i < n; i++) {
            reps[k][i] = at < size ? data[at++] % (uint16_t)(t.max_rep[k] + 2) : 0;
            defs[k][i] = at < size ? data[at++] % (uint16_t)(t.max_def[k] + 2) : 0;
            defined += defs[k][i] == t.max_def[k];
        }
        c.values[k] = (uint32_t)((int64_t)defined + off < 0 ? 0 : (int64_t)defined + off);
        rows[k] = (pq_tree_row){ defs[k], reps[k], n, c.values[k] };
    }
    pq_error err;
    int rc = pq_tree_walk(&t, rows, on_event, &c, &err);
    if (rc == 0) {
        if (c.depth != 0)
            abort();
        for (int k = 0; k < LEAVES; k++)
            if (c.next[k] != c.values[k])
                abort();
    }
    pq_tree_free(&t);
    return 0;
}
