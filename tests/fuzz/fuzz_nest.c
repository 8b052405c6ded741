/* fuzz_nest — record assembly from repetition and definition levels.
 *
 * Input layout:
 *   byte 0  nodes n = 1 + b % 8 on the path from the top-level field to the
 *           leaf; byte 1: how many of them the column name names (1 + b % n)
 *   n bytes one per node: repetition (b % 3: required, optional, repeated),
 *           LIST annotation (bit 2, groups only), name (b >> 3 picks one of
 *           "list", "element", "array", "f_tuple", "f", "item"); the last
 *           node is an INT32 leaf, every other a group of one child
 *   1 byte  values given for a row: the defined entries, or off by (b % 3) - 1
 *   rest    level entries as (rep, def) byte pairs, cut into rows where rep
 *           is 0; levels are taken modulo (max + 2), so out-of-range levels
 *           occur too.
 *
 * The schema goes through pq_file_leaves and pq_nest_of (either may refuse
 * it); every row through pq_nest_walk, whose events must be balanced: OPEN
 * and CLOSE nest properly over STRUCT and LIST steps, NEXT only inside an
 * open list, VALUE indexes 0, 1, ... below the values given, and a walk that
 * succeeds has consumed all of them. Anything else aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pq_meta.h"
#include "pq_nest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_NODES 8
#define MAX_ENTRIES 4096

typedef struct check {
    const pq_nest *n;
    int stack[2 * MAX_NODES + 2]; /* open steps */
    int depth;
    uint32_t next_value, values;
} check;

static int on_event(void *ctx, pq_nest_event ev, const pq_step *step, uint32_t value)
{
    check *c = ctx;
    int s = (int)(step - c->n->steps);
    if (s < 0 || s >= c->n->num_steps)
        abort();
    switch (ev) {
    case PQ_EV_OPEN:
        if (step->kind == PQ_STEP_LEAF || c->depth == (int)(sizeof c->stack / sizeof c->stack[0]))
            abort();
        if (c->depth > 0 && c->stack[c->depth - 1] >= s)
            abort();
        c->stack[c->depth++] = s;
        break;
    case PQ_EV_CLOSE:
        if (c->depth == 0 || c->stack[--c->depth] != s)
            abort();
        break;
    case PQ_EV_NEXT:
        if (step->kind != PQ_STEP_LIST || c->depth == 0 || c->stack[c->depth - 1] != s)
            abort();
        break;
    case PQ_EV_EMPTY:
        if (step->kind != PQ_STEP_LIST)
            abort();
        break;
    case PQ_EV_NULL:
        break;
    case PQ_EV_VALUE:
        if (step->kind != PQ_STEP_LEAF || value != c->next_value || value >= c->values)
            abort();
        c->next_value++;
        break;
    }
    return 0;
}

static void walk_rows(const pq_nest *n, const uint8_t *p, size_t len, int value_skew)
{
    uint16_t defs[MAX_ENTRIES], reps[MAX_ENTRIES];
    uint32_t entries = 0;
    for (size_t i = 0; i + 1 < len && entries < MAX_ENTRIES; i += 2) {
        reps[entries] = (uint16_t)(p[i] % (n->max_rep + 2));
        defs[entries] = (uint16_t)(p[i + 1] % (n->max_def + 2));
        entries++;
    }
    uint32_t start = 0;
    while (start < entries) {
        uint32_t end = start + 1, defined = defs[start] == n->max_def;
        while (end < entries && reps[end] != 0)
            defined += defs[end++] == n->max_def;
        uint32_t values = value_skew < 0 && defined == 0 ? 0 : defined + (uint32_t)value_skew;
        check c = { .n = n, .values = values };
        pq_error err;
        int rc = pq_nest_walk(n, defs + start, reps + start, end - start, values, on_event, &c,
                              &err);
        if (rc == 0 && (c.depth != 0 || c.next_value != values))
            abort();
        if (rc != 0 && rc != -1)
            abort();
        start = end;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *names[] = { "list", "element", "array", "f_tuple", "f", "item" };
    if (size < 3)
        return 0;
    int nodes = 1 + data[0] % MAX_NODES;
    if (size < (size_t)(3 + nodes))
        return 0;
    int named = 1 + data[1] % nodes;
    pq_schema_element schema[MAX_NODES + 1];
    memset(schema, 0, sizeof schema);
    schema[0] = (pq_schema_element){ .name = (char *)"root", .type = -1,
                                     .repetition = PQ_REQUIRED, .num_children = 1 };
    for (int i = 0; i < nodes; i++) {
        uint8_t b = data[2 + i];
        pq_schema_element *e = &schema[1 + i];
        e->name = (char *)names[(b >> 3) % 6];
        e->repetition = b % 3 == 0 ? PQ_REQUIRED : b % 3 == 1 ? PQ_OPTIONAL : PQ_REPEATED;
        int leaf = i == nodes - 1;
        e->type = leaf ? PQ_INT32 : -1;
        e->num_children = leaf ? 0 : 1;
        if (!leaf && (b & 4))
            e->logical.kind = PQ_LOGICAL_LIST;
    }
    int value_skew = data[2 + nodes] % 3 - 1;
    pq_file_meta m = { .num_schema = nodes + 1, .schema = schema };
    pq_leaf *leaves;
    int count;
    pq_error err;
    if (pq_file_leaves(&m, &leaves, &count, &err) < 0)
        return 0;
    if (count != 1)
        abort();
    pq_nest n;
    if (pq_nest_of(&m, &leaves[0], named, &n, &err) == 0) {
        if (n.num_steps < 1 || n.steps[n.num_steps - 1].kind != PQ_STEP_LEAF)
            abort();
        walk_rows(&n, data + 3 + nodes, size - 3 - (size_t)nodes, value_skew);
        pq_nest_free(&n);
    }
    pq_leaves_free(leaves, count);
    return 0;
}
