/* pq_tree: fields of several leaves joined from hand-built nestings, rows
 * assembled from every leaf's levels into a JSON-like text (the levels are
 * what a Parquet writer produces for the values in the comments), and
 * hostile levels (leaves that disagree) refused with a message. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "pq_tree.h"

/* messages: optional list<optional struct<optional role, optional content>> */
static pq_step role_steps[] = {
    { PQ_STEP_LIST, 1, 2, 1, 0, NULL },
    { PQ_STEP_STRUCT, 3, 0, 0, 0, (char *)"role" },
    { PQ_STEP_LEAF, 4, 0, 0, 0, NULL },
};
static pq_step content_steps[] = {
    { PQ_STEP_LIST, 1, 2, 1, 0, NULL },
    { PQ_STEP_STRUCT, 3, 0, 0, 0, (char *)"content" },
    { PQ_STEP_LEAF, 4, 0, 0, 0, NULL },
};

static void messages_tree(pq_tree *t)
{
    pq_nest role = { role_steps, 3, 4, 1, (char *)"messages" };
    pq_nest content = { content_steps, 3, 4, 1, (char *)"messages" };
    pq_error err;
    memset(t, 0, sizeof *t);
    cr_assert_eq(pq_tree_add(t, &role, &err), 0, "%s", err.msg);
    cr_assert_eq(pq_tree_add(t, &content, &err), 0, "%s", err.msg);
    cr_assert_eq(pq_tree_finish(t, &err), 0, "%s", err.msg);
    cr_assert_eq(t->num_leaves, 2);
    cr_assert_eq(t->root->kind, PQ_STEP_LIST);
    cr_assert_eq(t->root->children[0]->num_children, 2);
}

typedef struct text {
    char buf[512];
    size_t len;
} text;

static void add(text *t, const char *s)
{
    size_t n = strlen(s);
    cr_assert_lt(t->len + n, sizeof t->buf);
    memcpy(t->buf + t->len, s, n + 1);
    t->len += n;
}

static int to_text(void *ctx, pq_tree_event ev, const pq_tree_node *n, uint32_t index,
                   uint32_t value)
{
    text *t = ctx;
    char v[32];
    switch (ev) {
    case PQ_TE_OPEN: add(t, n->kind == PQ_STEP_STRUCT ? "{" : "["); break;
    case PQ_TE_CLOSE: add(t, n->kind == PQ_STEP_STRUCT ? "}" : "]"); break;
    case PQ_TE_FIELD:
        if (index)
            add(t, ",");
        add(t, n->names[index]);
        add(t, ":");
        break;
    case PQ_TE_NEXT: add(t, ","); break;
    case PQ_TE_NULL: add(t, "null"); break;
    case PQ_TE_EMPTY: add(t, "[]"); break;
    case PQ_TE_VALUE:
        snprintf(v, sizeof v, "L%uv%u", index, value);
        add(t, v);
        break;
    }
    return 0;
}

/* Walk one row; returns the walk's status, the text in t. */
static int walk(const pq_tree *tree, const pq_tree_row *rows, text *t, pq_error *err)
{
    t->len = 0;
    t->buf[0] = '\0';
    return pq_tree_walk(tree, rows, to_text, t, err);
}

Test(tree, list_of_structs_rows)
{
    pq_tree tree;
    messages_tree(&tree);
    text t;
    pq_error err;
    /* [{"role":"u","content":"hi"},{"role":null,"content":"x"},null] */
    uint16_t rd[] = { 4, 3, 2 }, rr[] = { 0, 1, 1 }, cd[] = { 4, 4, 2 }, cr[] = { 0, 1, 1 };
    pq_tree_row rows[2] = { { rd, rr, 3, 1 }, { cd, cr, 3, 2 } };
    cr_assert_eq(walk(&tree, rows, &t, &err), 0, "%s", err.msg);
    cr_assert_str_eq(t.buf, "[{role:L0v0,content:L1v0},{role:null,content:L1v1},null]");
    cr_assert_not(pq_tree_row_is_null(&tree, rows));
    /* [] and null */
    uint16_t empty[] = { 1 }, none[] = { 0 }, zero[] = { 0 };
    pq_tree_row e[2] = { { empty, zero, 1, 0 }, { empty, zero, 1, 0 } };
    cr_assert_eq(walk(&tree, e, &t, &err), 0, "%s", err.msg);
    cr_assert_str_eq(t.buf, "[]");
    pq_tree_row n[2] = { { none, zero, 1, 0 }, { none, zero, 1, 0 } };
    cr_assert_eq(walk(&tree, n, &t, &err), 0, "%s", err.msg);
    cr_assert_str_eq(t.buf, "null");
    cr_assert(pq_tree_row_is_null(&tree, n));
    pq_tree_free(&tree);
}

Test(tree, leaves_that_disagree_are_refused)
{
    pq_tree tree;
    messages_tree(&tree);
    text t;
    pq_error err;
    /* role has two elements, content one */
    uint16_t rd[] = { 4, 4 }, rr[] = { 0, 1 }, cd[] = { 4 }, cr[] = { 0 };
    pq_tree_row a[2] = { { rd, rr, 2, 2 }, { cd, cr, 1, 1 } };
    cr_assert_eq(walk(&tree, a, &t, &err), -1);
    cr_assert(strstr(err.msg, "other elements"), "%s", err.msg);
    /* the list null for role, present for content */
    uint16_t nd[] = { 0 };
    pq_tree_row b[2] = { { nd, cr, 1, 0 }, { cd, cr, 1, 1 } };
    cr_assert_eq(walk(&tree, b, &t, &err), -1);
    cr_assert(strstr(err.msg, "disagree"), "%s", err.msg);
    /* a level over the leaf's maximum, a row starting with a repetition */
    uint16_t big[] = { 9 }, rep1[] = { 1 };
    pq_tree_row c[2] = { { big, cr, 1, 0 }, { cd, cr, 1, 1 } };
    cr_assert_eq(walk(&tree, c, &t, &err), -1);
    pq_tree_row d[2] = { { cd, rep1, 1, 1 }, { cd, cr, 1, 1 } };
    cr_assert_eq(walk(&tree, d, &t, &err), -1);
    /* more values claimed than the levels define, and fewer */
    pq_tree_row e[2] = { { cd, cr, 1, 2 }, { cd, cr, 1, 1 } };
    cr_assert_eq(walk(&tree, e, &t, &err), -1);
    pq_tree_row f[2] = { { cd, cr, 1, 0 }, { cd, cr, 1, 1 } };
    cr_assert_eq(walk(&tree, f, &t, &err), -1);
    /* a leaf without entries */
    pq_tree_row g[2] = { { cd, cr, 0, 0 }, { cd, cr, 1, 1 } };
    cr_assert_eq(walk(&tree, g, &t, &err), -1);
    pq_tree_free(&tree);
}

Test(tree, map_entry_and_mismatched_nestings)
{
    /* m: optional map<required key, optional value>: a list (is_map) of key_value */
    pq_step key_steps[] = { { PQ_STEP_LIST, 1, 2, 1, 1, NULL },
                            { PQ_STEP_STRUCT, 2, 0, 0, 0, (char *)"key" },
                            { PQ_STEP_LEAF, 2, 0, 0, 0, NULL } };
    pq_step value_steps[] = { { PQ_STEP_LIST, 1, 2, 1, 1, NULL },
                              { PQ_STEP_STRUCT, 2, 0, 0, 0, (char *)"value" },
                              { PQ_STEP_LEAF, 3, 0, 0, 0, NULL } };
    pq_nest key = { key_steps, 3, 2, 1, (char *)"m" };
    pq_nest value = { value_steps, 3, 3, 1, (char *)"m" };
    pq_tree tree = { 0 };
    pq_error err;
    cr_assert_eq(pq_tree_add(&tree, &key, &err), 0, "%s", err.msg);
    cr_assert_eq(pq_tree_add(&tree, &value, &err), 0, "%s", err.msg);
    cr_assert_eq(pq_tree_finish(&tree, &err), 0, "%s", err.msg);
    cr_assert(tree.root->is_map && tree.root->children[0]->map_entry);
    /* {"a": 1, "b": null} */
    uint16_t kd[] = { 2, 2 }, kr[] = { 0, 1 }, vd[] = { 3, 2 };
    pq_tree_row rows[2] = { { kd, kr, 2, 2 }, { vd, kr, 2, 1 } };
    text t;
    cr_assert_eq(walk(&tree, rows, &t, &err), 0, "%s", err.msg);
    cr_assert_str_eq(t.buf, "[{key:L0v0,value:L1v0},{key:L0v1,value:null}]");
    /* a leaf of another field, and one at another level where the chains meet */
    pq_nest other = { value_steps, 3, 3, 1, (char *)"n" };
    cr_assert_eq(pq_tree_add(&tree, &other, &err), -1);
    value_steps[0].def = 0;
    cr_assert_eq(pq_tree_add(&tree, &value, &err), -1);
    pq_tree_free(&tree);
    /* a map entry of one field is refused at finish */
    value_steps[0].def = 1;
    pq_tree lone = { 0 };
    cr_assert_eq(pq_tree_add(&lone, &key, &err), 0, "%s", err.msg);
    cr_assert_eq(pq_tree_finish(&lone, &err), -1);
    cr_assert(strstr(err.msg, "key and a value"), "%s", err.msg);
    pq_tree_free(&lone);
}
