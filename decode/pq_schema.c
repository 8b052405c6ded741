/* Flattening the schema tree (pq_file_leaves, declared in pq_meta.h).
 *
 * The schema is a depth-first list: each group states how many children
 * follow. The walk is iterative with an explicit stack so that a hostile,
 * very deep schema cannot exhaust the C stack. */
#include <stdlib.h>
#include <string.h>

#include "pq_meta.h"

typedef struct frame {
    int32_t remaining; /* children of this group not yet visited */
    int16_t def, rep;  /* levels of this group */
    int16_t rep_def;   /* definition level of the innermost repeated node so far */
    int in_map;        /* some ancestor is annotated MAP */
    size_t path_len;   /* bytes of the dotted path up to this group */
} frame;

void pq_leaves_free(pq_leaf *leaves, int count)
{
    if (!leaves)
        return;
    for (int i = 0; i < count; i++)
        free(leaves[i].path);
    free(leaves);
}

int pq_file_leaves(const pq_file_meta *m, pq_leaf **out, int *count, pq_error *err)
{
    *out = NULL;
    *count = 0;
    if (m->num_schema <= 0)
        return pq_error_set(err, "schema is empty");
    if (m->schema[0].type >= 0)
        return pq_error_set(err, "schema root \"%s\" is a primitive, not a group",
                            m->schema[0].name);

    size_t n = (size_t)m->num_schema;
    frame *stack = malloc(n * sizeof *stack);
    pq_leaf *leaves = calloc(n, sizeof *leaves);
    size_t path_cap = 256;
    char *path = malloc(path_cap);
    int nleaves = 0;
    if (!stack || !leaves || !path) {
        pq_error_set(err, "out of memory flattening a schema of %zu elements", n);
        goto fail;
    }

    size_t sp = 0, i = 1, paths_bytes = 0;
    stack[sp++] = (frame){ m->schema[0].num_children, 0, 0, 0, 0, 0 };
    while (sp > 0) {
        frame *top = &stack[sp - 1];
        if (top->remaining == 0) {
            sp--;
            continue;
        }
        top->remaining--;
        if (i >= n) {
            pq_error_set(err, "schema ends after %zu elements but a group still expects "
                              "%d more children",
                         n, top->remaining + 1);
            goto fail;
        }
        const pq_schema_element *e = &m->schema[i];
        int def = top->def + (e->repetition != PQ_REQUIRED);
        int rep = top->rep + (e->repetition == PQ_REPEATED);
        int16_t rep_def = e->repetition == PQ_REPEATED ? (int16_t)def : top->rep_def;
        if (def > INT16_MAX || rep > INT16_MAX) {
            pq_error_set(err, "schema element %zu (\"%s\") is nested too deeply", i, e->name);
            goto fail;
        }

        size_t name_len = strlen(e->name);
        size_t len = top->path_len + (top->path_len ? 1 : 0) + name_len;
        if (len + 1 > path_cap) {
            while (len + 1 > path_cap)
                path_cap *= 2;
            char *grown = realloc(path, path_cap);
            if (!grown) {
                pq_error_set(err, "out of memory for a %zu-byte column path", len);
                goto fail;
            }
            path = grown;
        }
        if (top->path_len)
            path[top->path_len] = '.';
        memcpy(path + len - name_len, e->name, name_len);
        path[len] = '\0';

        if (e->type >= 0) {
            if (e->num_children > 0) {
                pq_error_set(err, "schema element %zu (\"%s\") has a type and %d children", i,
                             e->name, e->num_children);
                goto fail;
            }
            /* Every leaf copies the names of all its ancestors, so a footer
             * of a few hundred KB (one long group name, many leaves below
             * it) could otherwise ask for gigabytes. */
            paths_bytes += len + 1;
            if (paths_bytes > PQ_MAX_LEAF_PATH_BYTES) {
                pq_error_set(err, "column paths take more than %zu MiB in total (at schema "
                                  "element %zu, a %zu-byte path); refusing this schema",
                             PQ_MAX_LEAF_PATH_BYTES >> 20, i, len);
                goto fail;
            }
            pq_leaf *l = &leaves[nleaves];
            if (!(l->path = strdup(path))) {
                pq_error_set(err, "out of memory for a column path");
                goto fail;
            }
            nleaves++;
            l->schema_index = (int)i;
            l->type = e->type;
            l->type_length = e->type_length;
            l->logical = e->logical;
            l->max_def = (int16_t)def;
            l->max_rep = (int16_t)rep;
            l->rep_def = rep_def;
            l->in_map = top->in_map;
        } else {
            /* top may move when pushing, but the stack never grows past n. */
            stack[sp++] = (frame){ e->num_children, (int16_t)def, (int16_t)rep, rep_def,
                                   top->in_map || e->logical.kind == PQ_LOGICAL_MAP, len };
        }
        i++;
    }
    if (i != n) {
        pq_error_set(err, "schema tree ends at element %zu but the list has %zu elements", i,
                     n);
        goto fail;
    }
    free(stack);
    free(path);
    *out = leaves;
    *count = nleaves;
    return 0;

fail:
    free(stack);
    free(path);
    pq_leaves_free(leaves, nleaves);
    return -1;
}
