#include "pq_nest.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* One node of the path from the root to the leaf, with its levels. */
typedef struct node {
    const pq_schema_element *e;
    int16_t def, rep; /* levels of the node itself (counting it) */
} node;

void pq_nest_free(pq_nest *n)
{
    if (!n)
        return;
    for (int i = 0; i < n->num_steps; i++)
        free(n->steps[i].name);
    free(n->steps);
    free(n->key);
    memset(n, 0, sizeof *n);
}

int pq_nest_equal(const pq_nest *a, const pq_nest *b)
{
    if (a->num_steps != b->num_steps || a->max_def != b->max_def || a->max_rep != b->max_rep ||
        strcmp(a->key, b->key) != 0)
        return 0;
    for (int i = 0; i < a->num_steps; i++) {
        const pq_step *x = &a->steps[i], *y = &b->steps[i];
        if (x->kind != y->kind || x->def != y->def || x->elem_def != y->elem_def ||
            x->rep != y->rep || x->is_map != y->is_map || (x->name != NULL) != (y->name != NULL) ||
            (x->name && strcmp(x->name, y->name) != 0))
            return 0;
    }
    return 1;
}

int pq_nest_is_nested(const pq_nest *n)
{
    return n->num_steps > 1;
}

/* The nodes from the top-level field down to schema element `target`
 * (already validated as a tree by pq_file_leaves). *len nodes into path
 * (room for m->num_schema). */
static int path_to(const pq_file_meta *m, int target, node *path, int *len, pq_error *err)
{
    int32_t *remaining = malloc((size_t)m->num_schema * sizeof *remaining);
    if (!remaining)
        return pq_error_set(err, "out of memory walking the schema");
    int sp = 0;
    remaining[sp++] = m->schema[0].num_children;
    for (int i = 1; i < m->num_schema; i++) {
        while (sp > 0 && remaining[sp - 1] == 0)
            sp--;
        if (sp == 0)
            break;
        remaining[sp - 1]--;
        const pq_schema_element *e = &m->schema[i];
        node up = sp > 1 ? path[sp - 2] : (node){ NULL, 0, 0 };
        path[sp - 1] = (node){ e, (int16_t)(up.def + (e->repetition != PQ_REQUIRED)),
                               (int16_t)(up.rep + (e->repetition == PQ_REPEATED)) };
        if (i == target) {
            free(remaining);
            *len = sp;
            return 0;
        }
        if (e->type < 0)
            remaining[sp++] = e->num_children;
    }
    free(remaining);
    return pq_error_set(err, "schema element %d is not in the schema tree", target);
}

static int is_repeated(const node *n)
{
    return n->e->repetition == PQ_REPEATED;
}

static int is_group(const node *n)
{
    return n->e->type < 0;
}

/* Arrow's rule for a LIST group's repeated child r: is r itself the
 * element (legacy 2-level list) rather than the holder of it? */
static int repeated_is_element(const node *list, const node *r)
{
    if (!is_group(r) || r->e->num_children != 1 || strcmp(r->e->name, "array") == 0)
        return 1;
    size_t n = strlen(list->e->name);
    return strncmp(r->e->name, list->e->name, n) == 0 && strcmp(r->e->name + n, "_tuple") == 0;
}

static int add_step(pq_nest *n, pq_step s, pq_error *err)
{
    if (s.name && !(s.name = strdup(s.name)))
        return pq_error_set(err, "out of memory");
    n->steps[n->num_steps++] = s;
    return 0;
}

/* Steps for path[i..len): the node at i as a value (a repeated node here is
 * a bare list, or the element of a 2-level list when as_element). */
static int build_steps(pq_nest *n, const node *path, int i, int len, pq_error *err)
{
    int as_element = 0;
    while (i < len) {
        const node *at = &path[i];
        if (is_repeated(at) && !as_element) {
            /* a repeated field outside a LIST: a non-null list of it */
            if (add_step(n, (pq_step){ PQ_STEP_LIST, (int16_t)(at->def - 1), at->def, at->rep,
                                       0, NULL }, err) < 0)
                return -1;
            as_element = 1;
            continue;
        }
        as_element = 0;
        if (!is_group(at))
            return add_step(n, (pq_step){ PQ_STEP_LEAF, at->def, 0, 0, 0, NULL }, err);
        if (i + 1 >= len)
            return pq_error_set(err, "group %s has no leaf below it", at->e->name);
        const node *child = &path[i + 1];
        if (at->e->logical.kind == PQ_LOGICAL_MAP && !is_repeated(at)) {
            /* its repeated key_value group is the element: a struct of key and value */
            if (!is_repeated(child) || !is_group(child) || at->e->num_children != 1)
                return pq_error_set(err, "MAP group %s does not hold exactly one repeated "
                                    "group", at->e->name);
            if (add_step(n, (pq_step){ PQ_STEP_LIST, at->def, child->def, child->rep, 1, NULL },
                         err) < 0)
                return -1;
            i++;
            as_element = 1;
            continue;
        }
        if (at->e->logical.kind == PQ_LOGICAL_LIST && !is_repeated(at)) {
            if (!is_repeated(child) || at->e->num_children != 1)
                return pq_error_set(err, "LIST group %s does not hold exactly one repeated "
                                    "field", at->e->name);
            if (add_step(n, (pq_step){ PQ_STEP_LIST, at->def, child->def, child->rep, 0, NULL },
                         err) < 0)
                return -1;
            i++; /* the repeated child */
            if (repeated_is_element(at, child))
                as_element = 1; /* it is the element itself (a value or a struct) */
            else
                i++;            /* its only field is the element */
            continue;
        }
        if (add_step(n, (pq_step){ PQ_STEP_STRUCT, at->def, 0, 0, 0, child->e->name }, err) < 0)
            return -1;
        i++;
    }
    return pq_error_set(err, "the schema path ends above its leaf");
}

/* Where the output starts: the named node, or the list above it. */
static int output_node(const node *path, int len, int named)
{
    for (int j = 0; j < len && j < named; j++) {
        if (!is_repeated(&path[j]))
            continue;
        int c = j > 0 && is_group(&path[j - 1]) &&
                        (path[j - 1].e->logical.kind == PQ_LOGICAL_LIST ||
                         path[j - 1].e->logical.kind == PQ_LOGICAL_MAP)
                    ? j - 1
                    : j;
        return named - 1 > c ? c : named - 1;
    }
    return named - 1;
}

static int make_key(pq_nest *n, const node *path, int out, pq_error *err)
{
    size_t len = 0;
    for (int i = 0; i <= out; i++)
        len += strlen(path[i].e->name) + 1;
    if (!(n->key = malloc(len)))
        return pq_error_set(err, "out of memory");
    char *p = n->key;
    for (int i = 0; i <= out; i++) {
        size_t k = strlen(path[i].e->name);
        if (i)
            *p++ = '.';
        memcpy(p, path[i].e->name, k);
        p += k;
    }
    *p = '\0';
    return 0;
}

int pq_nest_of(const pq_file_meta *m, const pq_leaf *leaf, int named_depth, pq_nest *out,
               pq_error *err)
{
    memset(out, 0, sizeof *out);
    node *path = malloc((size_t)m->num_schema * sizeof *path);
    int len = 0;
    if (!path)
        return pq_error_set(err, "out of memory walking the schema");
    if (path_to(m, leaf->schema_index, path, &len, err) < 0)
        goto fail;
    if (named_depth < 1 || named_depth > len) {
        pq_error_set(err, "column %s: %d path components named, the leaf has %d", leaf->path,
                     named_depth, len);
        goto fail;
    }
    /* at most two steps per node: a bare repeated group is a list and a struct */
    int first = output_node(path, len, named_depth);
    out->steps = calloc((size_t)(2 * (len - first)), sizeof *out->steps);
    out->max_def = leaf->max_def;
    out->max_rep = leaf->max_rep;
    if (!out->steps) {
        pq_error_set(err, "out of memory");
        goto fail;
    }
    if (make_key(out, path, first, err) < 0 || build_steps(out, path, first, len, err) < 0) {
        pq_error_prefix(err, "column %s: ", leaf->path);
        goto fail;
    }
    assert(out->steps[out->num_steps - 1].kind == PQ_STEP_LEAF &&
           out->steps[out->num_steps - 1].def == leaf->max_def);
    free(path);
    return 0;
fail:
    free(path);
    pq_nest_free(out);
    return -1;
}

int pq_nest_simple(const pq_leaf *leaf, pq_nest *out, pq_error *err)
{
    memset(out, 0, sizeof *out);
    if (leaf->max_rep > 1)
        return pq_error_set(err, "column %s: %d repetition levels need the schema", leaf->path,
                            leaf->max_rep);
    size_t key_len = strlen(leaf->path);
    const char *dot = strchr(leaf->path, '.');
    if (leaf->max_rep == 1 && dot)
        key_len = (size_t)(dot - leaf->path);
    out->steps = calloc(2, sizeof *out->steps);
    out->key = strndup(leaf->path, key_len);
    if (!out->steps || !out->key) {
        pq_nest_free(out);
        return pq_error_set(err, "out of memory");
    }
    if (leaf->max_rep == 1)
        out->steps[out->num_steps++] = (pq_step){ PQ_STEP_LIST, (int16_t)(leaf->rep_def - 1),
                                                  leaf->rep_def, 1, 0, NULL };
    out->steps[out->num_steps++] = (pq_step){ PQ_STEP_LEAF, leaf->max_def, 0, 0, 0, NULL };
    out->max_def = leaf->max_def;
    out->max_rep = leaf->max_rep;
    return 0;
}

/* The walk's state: steps[0..open) are open containers. */
typedef struct walk {
    const pq_nest *n;
    pq_nest_emit emit;
    void *ctx;
    int open;
    uint32_t value, values;
} walk;

static int close_to(walk *w, int depth)
{
    while (w->open > depth) {
        w->open--;
        int rc = w->emit(w->ctx, PQ_EV_CLOSE, &w->n->steps[w->open], 0);
        if (rc)
            return rc;
    }
    return 0;
}

/* Descend from step s for an entry of definition level d. */
static int descend(walk *w, int s, uint16_t d, pq_error *err)
{
    for (;; s++) {
        assert(s < w->n->num_steps);
        const pq_step *st = &w->n->steps[s];
        if (d < st->def)
            return w->emit(w->ctx, PQ_EV_NULL, st, 0);
        if (st->kind == PQ_STEP_LEAF) {
            if (w->value >= w->values)
                return pq_error_set(err, "the levels define more than the %u values given",
                                    w->values);
            return w->emit(w->ctx, PQ_EV_VALUE, st, w->value++);
        }
        if (st->kind == PQ_STEP_LIST && d < st->elem_def)
            return w->emit(w->ctx, PQ_EV_EMPTY, st, 0);
        int rc = w->emit(w->ctx, PQ_EV_OPEN, st, 0);
        if (rc)
            return rc;
        w->open = s + 1;
    }
}

/* The LIST step whose elements repetition level r repeats, or -1. */
static int list_of_rep(const pq_nest *n, uint16_t r)
{
    for (int s = 0; s < n->num_steps; s++)
        if (n->steps[s].kind == PQ_STEP_LIST && n->steps[s].rep == r)
            return s;
    return -1;
}

int pq_nest_walk(const pq_nest *n, const uint16_t *defs, const uint16_t *reps, uint32_t entries,
                 uint32_t values, pq_nest_emit emit, void *ctx, pq_error *err)
{
    walk w = { n, emit, ctx, 0, 0, values };
    if (entries == 0)
        return pq_error_set(err, "a row without level entries");
    for (uint32_t k = 0; k < entries; k++) {
        uint16_t d = defs ? defs[k] : (uint16_t)n->max_def;
        uint16_t r = reps ? reps[k] : 0;
        if (d > n->max_def)
            return pq_error_set(err, "definition level %u over the column's maximum %d", d,
                                n->max_def);
        int rc, s = 0;
        if (k > 0) {
            int list = r == 0 || r > n->max_rep ? -1 : list_of_rep(n, r);
            if (list < 0)
                return pq_error_set(err, "level entry %u of a row has repetition level %u "
                                    "(1..%d expected)", k, r, n->max_rep);
            if (list >= w.open || d < n->steps[list].elem_def)
                return pq_error_set(err, "level entry %u repeats a list that has no element "
                                    "there (repetition %u, definition %u)", k, r, d);
            if ((rc = close_to(&w, list + 1)) != 0 ||
                (rc = emit(ctx, PQ_EV_NEXT, &n->steps[list], 0)) != 0)
                return rc;
            s = list + 1;
        } else if (r != 0) {
            return pq_error_set(err, "a row starts with repetition level %u", r);
        }
        if ((rc = descend(&w, s, d, err)) != 0)
            return rc;
    }
    int rc = close_to(&w, 0);
    if (rc)
        return rc;
    if (w.value != values)
        return pq_error_set(err, "the levels define %u values, %u given", w.value, values);
    return 0;
}
