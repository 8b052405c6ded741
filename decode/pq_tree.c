#include "pq_tree.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static pq_tree_node *node_of(const pq_step *s)
{
    pq_tree_node *n = calloc(1, sizeof *n);
    if (n)
        *n = (pq_tree_node){ .kind = s->kind, .def = s->def, .elem_def = s->elem_def,
                             .rep = s->rep, .is_map = s->is_map };
    return n;
}

static int same_step(const pq_tree_node *n, const pq_step *s)
{
    return n->kind == s->kind && n->def == s->def && n->elem_def == s->elem_def &&
           n->rep == s->rep && n->is_map == s->is_map;
}

/* Child `name` of STRUCT node n (NULL name: a LIST's element), made from
 * step s when it is not there yet. */
static pq_tree_node *child_of(pq_tree_node *n, const char *name, const pq_step *s)
{
    for (uint32_t i = 0; i < n->num_children; i++)
        if (!name || strcmp(n->names[i], name) == 0)
            return n->children[i];
    pq_tree_node **children = realloc(n->children, (n->num_children + 1) * sizeof *children);
    if (!children)
        return NULL;
    n->children = children;
    if (name) {
        char **names = realloc(n->names, (n->num_children + 1) * sizeof *names);
        if (!names)
            return NULL;
        n->names = names;
        if (!(names[n->num_children] = strdup(name)))
            return NULL;
    }
    if (!(children[n->num_children] = node_of(s))) {
        if (name)
            free(n->names[n->num_children]);
        return NULL;
    }
    return children[n->num_children++];
}

int pq_tree_add(pq_tree *t, const pq_nest *leaf, pq_error *err)
{
    assert(leaf->num_steps > 0 && leaf->steps[leaf->num_steps - 1].kind == PQ_STEP_LEAF);
    if (!t->root) {
        if (!(t->root = node_of(&leaf->steps[0])) || !(t->key = strdup(leaf->key)))
            return pq_error_set(err, "out of memory");
    } else if (strcmp(t->key, leaf->key) != 0 || !same_step(t->root, &leaf->steps[0])) {
        return pq_error_set(err, "field %s: a leaf of another field or nesting (%s)", t->key,
                            leaf->key);
    }
    int16_t *max_def = realloc(t->max_def, (t->num_leaves + 1) * sizeof *max_def);
    if (max_def)
        t->max_def = max_def;
    int16_t *max_rep = max_def ? realloc(t->max_rep, (t->num_leaves + 1) * sizeof *max_rep)
                               : NULL;
    if (!max_rep)
        return pq_error_set(err, "out of memory");
    t->max_rep = max_rep;
    pq_tree_node *n = t->root;
    for (int i = 0; i + 1 < leaf->num_steps; i++) {
        const pq_step *s = &leaf->steps[i], *next = &leaf->steps[i + 1];
        if (n->kind == PQ_STEP_LEAF)
            return pq_error_set(err, "field %s: a leaf where another leaf has a group",
                                t->key);
        pq_tree_node *c = child_of(n, s->kind == PQ_STEP_STRUCT ? s->name : NULL, next);
        if (!c)
            return pq_error_set(err, "out of memory");
        if (!same_step(c, next))
            return pq_error_set(err, "field %s: its leaves are nested differently below "
                                "one node", t->key);
        n = c;
    }
    if (n->kind != PQ_STEP_LEAF || n->taken)
        return pq_error_set(err, "field %s: two leaves at one place", t->key);
    n->taken = 1;
    n->leaf = t->num_leaves;
    t->max_def[t->num_leaves] = leaf->max_def;
    t->max_rep[t->num_leaves] = leaf->max_rep;
    t->num_leaves++;
    return 0;
}

/* Number the leaves below n in order; they must come in schema order. */
static int number(pq_tree_node *n, uint32_t *next, pq_error *err)
{
    n->lo = *next;
    if (n->kind == PQ_STEP_LEAF) {
        if (n->leaf != *next)
            return pq_error_set(err, "leaves out of schema order");
        ++*next;
    }
    for (uint32_t i = 0; i < n->num_children; i++) {
        if (n->is_map) {
            n->children[i]->map_entry = 1;
            if (n->children[i]->kind != PQ_STEP_STRUCT || n->children[i]->num_children != 2)
                return pq_error_set(err, "a map entry that is not a key and a value");
        }
        if (number(n->children[i], next, err) < 0)
            return -1;
    }
    n->hi = *next;
    if (n->hi == n->lo)
        return pq_error_set(err, "a group without a leaf");
    return 0;
}

int pq_tree_finish(pq_tree *t, pq_error *err)
{
    uint32_t next = 0;
    if (!t->root)
        return pq_error_set(err, "a field without leaves");
    if (number(t->root, &next, err) < 0)
        return pq_error_prefix(err, "field %s: ", t->key);
    assert(next == t->num_leaves);
    return 0;
}

static void free_node(pq_tree_node *n)
{
    if (!n)
        return;
    for (uint32_t i = 0; i < n->num_children; i++) {
        free_node(n->children[i]);
        if (n->names)
            free(n->names[i]);
    }
    free(n->children);
    free(n->names);
    free(n);
}

void pq_tree_free(pq_tree *t)
{
    free_node(t->root);
    free(t->max_def);
    free(t->max_rep);
    free(t->key);
    memset(t, 0, sizeof *t);
}

/* The walk: rows, and per leaf the next value. */
typedef struct walk {
    const pq_tree *t;
    const pq_tree_row *rows;
    uint32_t *value;
    pq_tree_emit emit;
    void *ctx;
    pq_error *err;
} walk;

static uint16_t def_at(const walk *w, uint32_t k, uint32_t i)
{
    return w->rows[k].defs ? w->rows[k].defs[i] : (uint16_t)w->t->max_def[k];
}

static uint16_t rep_at(const walk *w, uint32_t k, uint32_t i)
{
    return w->rows[k].reps ? w->rows[k].reps[i] : 0;
}

/* Every leaf below n has one entry in [b, e), defined below `level`: n is
 * null (or an empty list) there. 1 if so, 0 if no leaf is, -1 if they
 * disagree. */
static int all_below(const walk *w, const pq_tree_node *n, const uint32_t *b, const uint32_t *e,
                     int16_t level)
{
    int below = def_at(w, n->lo, b[n->lo]) < level;
    for (uint32_t k = n->lo; k < n->hi; k++)
        if ((def_at(w, k, b[k]) < level) != below || (below && e[k] - b[k] != 1))
            return -1;
    return below;
}

static int emit_node(walk *w, const pq_tree_node *n, const uint32_t *b, const uint32_t *e);

static int emit_list(walk *w, const pq_tree_node *n, const uint32_t *b, const uint32_t *e)
{
    uint32_t leaves = w->t->num_leaves;
    uint32_t *p = malloc(3 * (size_t)leaves * sizeof *p);
    if (!p)
        return pq_error_set(w->err, "out of memory");
    uint32_t *eb = p + leaves, *ee = eb + leaves;
    memcpy(p + n->lo, b + n->lo, (n->hi - n->lo) * sizeof *p);
    int rc = w->emit(w->ctx, PQ_TE_OPEN, n, 0, 0);
    for (int first = 1; rc == 0 && p[n->lo] < e[n->lo]; first = 0) {
        for (uint32_t k = n->lo; rc == 0 && k < n->hi; k++) {
            uint32_t q = p[k] + 1;
            if (p[k] >= e[k] || def_at(w, k, p[k]) < n->elem_def) {
                rc = pq_error_set(w->err, "leaves with other elements of one list");
                break;
            }
            while (q < e[k] && rep_at(w, k, q) > n->rep)
                q++;
            if (q < e[k] && rep_at(w, k, q) < n->rep)
                rc = pq_error_set(w->err, "repetition level %u inside a list of level %d",
                                  rep_at(w, k, q), n->rep);
            eb[k] = p[k];
            ee[k] = q;
            p[k] = q;
        }
        if (rc == 0 && !first)
            rc = w->emit(w->ctx, PQ_TE_NEXT, n, 0, 0);
        if (rc == 0)
            rc = emit_node(w, n->children[0], eb, ee);
    }
    for (uint32_t k = n->lo; rc == 0 && k < n->hi; k++)
        if (p[k] != e[k])
            rc = pq_error_set(w->err, "leaves with other elements of one list");
    if (rc == 0)
        rc = w->emit(w->ctx, PQ_TE_CLOSE, n, 0, 0);
    free(p);
    return rc;
}

static int emit_node(walk *w, const pq_tree_node *n, const uint32_t *b, const uint32_t *e)
{
    int null = all_below(w, n, b, e, n->def);
    if (null < 0)
        return pq_error_set(w->err, "its leaves disagree on whether a value is null");
    if (null)
        return w->emit(w->ctx, PQ_TE_NULL, n, 0, 0);
    switch (n->kind) {
    case PQ_STEP_LEAF: {
        uint32_t k = n->leaf;
        if (e[k] - b[k] != 1)
            return pq_error_set(w->err, "a leaf value of %u entries", e[k] - b[k]);
        if (w->value[k] >= w->rows[k].values)
            return pq_error_set(w->err, "the levels define more than the %u values given",
                                w->rows[k].values);
        return w->emit(w->ctx, PQ_TE_VALUE, n, k, w->value[k]++);
    }
    case PQ_STEP_STRUCT: {
        int rc = w->emit(w->ctx, PQ_TE_OPEN, n, 0, 0);
        for (uint32_t i = 0; rc == 0 && i < n->num_children; i++) {
            rc = w->emit(w->ctx, PQ_TE_FIELD, n, i, 0);
            if (rc == 0)
                rc = emit_node(w, n->children[i], b, e);
        }
        return rc ? rc : w->emit(w->ctx, PQ_TE_CLOSE, n, 0, 0);
    }
    case PQ_STEP_LIST: {
        int empty = all_below(w, n, b, e, n->elem_def);
        if (empty < 0)
            return pq_error_set(w->err, "its leaves disagree on whether a list is empty");
        return empty ? w->emit(w->ctx, PQ_TE_EMPTY, n, 0, 0) : emit_list(w, n, b, e);
    }
    }
    return pq_error_set(w->err, "unknown node");
}

int pq_tree_walk(const pq_tree *t, const pq_tree_row *rows, pq_tree_emit emit, void *ctx,
                 pq_error *err)
{
    uint32_t leaves = t->num_leaves;
    for (uint32_t k = 0; k < leaves; k++) {
        if (rows[k].entries == 0)
            return pq_error_set(err, "leaf %u has no level entry in the row", k);
        for (uint32_t i = 0; i < rows[k].entries; i++) {
            uint16_t d = rows[k].defs ? rows[k].defs[i] : 0;
            uint16_t r = rows[k].reps ? rows[k].reps[i] : 0;
            if (d > t->max_def[k] || r > t->max_rep[k] || (i == 0) != (r == 0))
                return pq_error_set(err, "leaf %u: level entry %u (repetition %u, definition "
                                    "%u) out of its row", k, i, r, d);
        }
    }
    uint32_t *b = calloc(3 * (size_t)leaves, sizeof *b);
    if (!b)
        return pq_error_set(err, "out of memory");
    uint32_t *e = b + leaves, *value = e + leaves;
    for (uint32_t k = 0; k < leaves; k++)
        e[k] = rows[k].entries;
    walk w = { t, rows, value, emit, ctx, err };
    int rc = emit_node(&w, t->root, b, e);
    for (uint32_t k = 0; rc == 0 && k < leaves; k++)
        if (value[k] != rows[k].values)
            rc = pq_error_set(err, "leaf %u: the levels define %u values, %u given", k,
                              value[k], rows[k].values);
    free(b);
    return rc;
}

int pq_tree_row_is_null(const pq_tree *t, const pq_tree_row *rows)
{
    return rows[0].defs && rows[0].entries && rows[0].defs[0] < t->root->def;
}
