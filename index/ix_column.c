#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ix_internal.h"

static int is_string_leaf(const pq_leaf *l)
{
    return l->type == PQ_BYTE_ARRAY && l->logical.kind == PQ_LOGICAL_STRING && l->max_rep == 0;
}

/* Appends ", name" entries of the leaves accepted by `keep` to buf. */
static void list_leaves(const ix_source *s, int (*keep)(const pq_leaf *), char *buf, size_t cap)
{
    size_t used = strlen(buf);
    for (int i = 0; i < s->num_leaves && used < cap; i++) {
        if (keep && !keep(&s->leaves[i]))
            continue;
        int n = snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", s->leaves[i].path);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

/* Does leaf l answer to the user's column name: its exact dotted path, or a
 * prefix naming the group above it ("input_ids" for "input_ids.list.element"). */
static int names_leaf(const pq_leaf *l, const char *want)
{
    size_t n = strlen(want);
    return strncmp(l->path, want, n) == 0 && (l->path[n] == '\0' || l->path[n] == '.');
}

/* Components of a dotted name. */
static int depth_of(const char *name)
{
    int n = 1;
    for (const char *p = name; *p; p++)
        n += *p == '.';
    return n;
}

/* Leaves of s below field `key` (or that leaf itself). */
static uint32_t leaves_of(const ix_source *s, const char *key)
{
    uint32_t n = 0;
    for (int i = 0; i < s->num_leaves; i++)
        n += (uint32_t)names_leaf(&s->leaves[i], key);
    return n;
}

/* The output field of the chosen leaf (pq_nest_of): 0 when the field is of
 * that one leaf, 1 when it has several (a struct of several fields, a list
 * of them, a map). */
static int field_of(const ix_source *s, const pq_leaf *l, const char *want, pq_nest *nest,
                    pq_error *err)
{
    if (pq_nest_of(&s->meta, l, depth_of(want ? want : l->path), nest, err) < 0)
        return pq_error_prefix(err, "%s: ", s->name);
    return leaves_of(s, nest->key) > 1;
}

int ix_field_nests(const ix_source *s, const char *key, int **leaves, pq_nest **nests,
                   uint32_t *count, pq_error *err)
{
    uint32_t n = leaves_of(s, key), k = 0;
    *leaves = calloc(n ? n : 1, sizeof **leaves);
    *nests = calloc(n ? n : 1, sizeof **nests);
    *count = 0;
    if (!*leaves || !*nests)
        return pq_error_set(err, "out of memory");
    for (int i = 0; i < s->num_leaves && k < n; i++) {
        if (!names_leaf(&s->leaves[i], key))
            continue;
        if (pq_nest_of(&s->meta, &s->leaves[i], depth_of(key), &(*nests)[k], err) < 0)
            return pq_error_prefix(err, "%s: ", s->name);
        (*leaves)[k] = i;
        *count = ++k;
    }
    return 0;
}

int ix_resolve_column(ix_source *first, const char *want, pq_nest *nest, pq_error *err)
{

    char names[PQ_ERROR_MAX / 2] = "";
    int found = -1, first_found = -1, matches = 0;
    for (int i = 0; i < first->num_leaves; i++) {
        const pq_leaf *l = &first->leaves[i];
        if (want && strcmp(l->path, want) == 0) {
            found = first_found = i; /* an exact path wins over any prefix match */
            matches = 1;
            break;
        }
        if (want ? names_leaf(l, want) : is_string_leaf(l)) {
            found = i;
            first_found = first_found < 0 ? i : first_found;
            matches++;
        }
    }

    if (matches == 1) {
        first->column = found;
        return field_of(first, &first->leaves[found], want, nest, err);
    }
    if (want && matches > 1) {
        /* a group: one field of several leaves when they are all below it */
        int rc = field_of(first, &first->leaves[first_found], want, nest, err);
        if (rc < 0)
            return -1;
        if (rc == 1 && leaves_of(first, nest->key) == (uint32_t)matches) {
            first->column = first_found;
            return 1;
        }
        pq_nest_free(nest);
    }
    if (want && matches == 0) {
        list_leaves(first, NULL, names, sizeof names);
        return pq_error_set(err, "%s: no column named '%s'; columns: %s", first->name, want,
                            names);
    }
    if (want)
        return pq_error_set(err, "%s: '%s' names %d leaf columns; give the full dotted path",
                            first->name, want, matches);
    if (matches == 0) {
        list_leaves(first, NULL, names, sizeof names);
        return pq_error_set(err, "%s: no string column to serve by default; choose one with "
                            "-o column=NAME from: %s", first->name, names);
    }
    list_leaves(first, is_string_leaf, names, sizeof names);
    return pq_error_set(err, "%s: several string columns (%s); choose one with -o column=NAME",
                        first->name, names);
}

int ix_match_column(ix_source *s, const pq_leaf *column, const pq_nest *field, pq_error *err)
{
    return ix_find_column(s, column, field, &s->column, err);
}

int ix_find_column(const ix_source *s, const pq_leaf *column, const pq_nest *field, int *leaf,
                   pq_error *err)
{
    for (int i = 0; i < s->num_leaves; i++) {
        const pq_leaf *l = &s->leaves[i];
        if (strcmp(l->path, column->path) != 0)
            continue;
        if (l->type != column->type || l->max_def != column->max_def ||
            l->max_rep != column->max_rep)
            return pq_error_set(err, "%s: column %s has a different type or nesting than in "
                                "the first file (type %d, def %d, rep %d vs type %d, def %d, "
                                "rep %d)", s->name, l->path, l->type, l->max_def, l->max_rep,
                                column->type, column->max_def, column->max_rep);
        pq_nest here;
        if (pq_nest_of(&s->meta, l, depth_of(field->key), &here, err) < 0)
            return pq_error_prefix(err, "%s: ", s->name);
        int same = pq_nest_equal(&here, field);
        pq_nest_free(&here);
        if (!same)
            return pq_error_set(err, "%s: field %s is nested differently than in the first "
                                "file (other list or struct levels above column %s)", s->name,
                                field->key, l->path);
        *leaf = i;
        return 0;
    }
    return pq_error_set(err, "%s: has no column %s (the first file has it)", s->name,
                        column->path);
}
