#include "sh_deal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

void sh_pieces_free(sh_pieces *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int push(sh_pieces *l, sh_piece p)
{
    assert(p.end >= p.first);
    if (l->n == l->cap) {
        uint64_t more = l->cap ? l->cap * 2 : 16;
        sh_piece *grown = realloc(l->v, more * sizeof *grown);
        if (!grown)
            return -1;
        l->v = grown;
        l->cap = more;
    }
    l->v[l->n++] = p;
    l->records += p.end - p.first;
    return 0;
}

/* A position in a list: piece i, record `at` of it (counted from the
 * piece's first record). */
typedef struct cursor {
    const sh_pieces *l;
    uint64_t i;
    uint32_t at;
} cursor;

/* Move the cursor `count` records on, appending them to dst (unless NULL).
 * Fewer are moved when the list ends first; wrap: start again at the front
 * instead (the list must then hold records). Returns -1 on allocation
 * failure. */
static int advance(cursor *c, uint64_t count, sh_pieces *dst, int wrap)
{
    assert(!wrap || c->l->records > 0);
    while (count > 0) {
        if (c->i == c->l->n) {
            if (!wrap)
                return 0;
            c->i = 0;
            c->at = 0;
        }
        const sh_piece *p = &c->l->v[c->i];
        uint32_t left = p->end - p->first - c->at;
        uint32_t take = count < left ? (uint32_t)count : left;
        if (take > 0 && dst &&
            push(dst, (sh_piece){ p->segment, p->first + c->at, p->first + c->at + take }) < 0)
            return -1;
        count -= take;
        c->at += take;
        if (c->at == p->end - p->first) {
            c->i++;
            c->at = 0;
        }
    }
    return 0;
}

/* The rest of the list from the cursor, appended to dst. */
static int rest(cursor *c, sh_pieces *dst)
{
    return advance(c, c->l->records, dst, 0);
}

int sh_epoch_stream(const sh_plan *plan, sh_pieces *out)
{
    memset(out, 0, sizeof *out);
    for (uint64_t s = 0; s < plan->num_segments; s++)
        if (push(out, (sh_piece){ s, 0, plan->segments[s].records }) < 0) {
            sh_pieces_free(out);
            return -1;
        }
    return 0;
}

/* Even parts of q records from the round-robin parts out[parts]. */
static int even_out(const sh_pieces *stream, uint64_t parts, sh_even even, sh_pieces *out)
{
    uint64_t total = stream->records;
    uint64_t q = even == SH_EVEN_DROP ? total / parts : total / parts + (total % parts != 0);
    sh_pieces spare = { 0 };
    int rc = 0;
    for (uint64_t i = 0; i < parts && rc == 0; i++) {
        if (out[i].records <= q)
            continue;
        sh_pieces all = out[i];
        memset(&out[i], 0, sizeof out[i]);
        cursor c = { &all, 0, 0 };
        rc = advance(&c, q, &out[i], 0) < 0 || rest(&c, &spare) < 0 ? -1 : 0;
        sh_pieces_free(&all);
    }
    if (rc == 0 && even == SH_EVEN_PAD) {
        cursor from_start = { stream, 0, 0 };
        uint64_t pad = parts * q - total;
        rc = pad > 0 ? advance(&from_start, pad, &spare, 1) : 0;
    }
    cursor take = { &spare, 0, 0 };
    for (uint64_t i = 0; i < parts && rc == 0; i++)
        if (out[i].records < q)
            rc = advance(&take, q - out[i].records, &out[i], 0);
#ifndef NDEBUG
    for (uint64_t i = 0; i < parts && rc == 0; i++)
        assert(out[i].records == q); /* the spare list always covers what parts lack */
#endif
    sh_pieces_free(&spare);
    return rc;
}

int sh_deal(const sh_pieces *stream, uint64_t parts, sh_even even, sh_pieces *out)
{
    assert(parts >= 1);
    memset(out, 0, parts * sizeof *out);
    int rc = 0;
    for (uint64_t p = 0; p < stream->n && rc == 0; p++)
        rc = push(&out[p % parts], stream->v[p]);
    if (rc == 0 && even != SH_EVEN_OFF)
        rc = even_out(stream, parts, even, out);
    if (rc < 0)
        for (uint64_t i = 0; i < parts; i++)
            sh_pieces_free(&out[i]);
    return rc;
}

/* Keep out[keep] of the parts[n], free the others. */
static void keep_one(sh_pieces *all, uint64_t n, uint64_t keep, sh_pieces *out)
{
    for (uint64_t i = 0; i < n; i++)
        if (i != keep)
            sh_pieces_free(&all[i]);
    *out = all[keep];
}

int sh_deal_part(const sh_plan *plan, uint64_t part, uint64_t parts, sh_even even,
                 sh_pieces *out)
{
    assert(part < parts);
    memset(out, 0, sizeof *out);
    sh_pieces stream;
    if (sh_epoch_stream(plan, &stream) < 0)
        return -1;
    sh_pieces *all = malloc(parts * sizeof *all);
    int rc = all ? sh_deal(&stream, parts, even, all) : -1;
    if (rc == 0)
        keep_one(all, parts, part, out);
    free(all);
    sh_pieces_free(&stream);
    return rc;
}

int sh_resume_part(const sh_plan *plan, uint64_t given_parts, uint64_t given, uint64_t part,
                   uint64_t parts, sh_even even, sh_pieces *out)
{
    assert(given_parts >= 1 && part < parts);
    memset(out, 0, sizeof *out);
    sh_pieces stream, left = { 0 };
    if (sh_epoch_stream(plan, &stream) < 0)
        return -1;
    sh_pieces *before = malloc(given_parts * sizeof *before);
    int rc = before ? sh_deal(&stream, given_parts, even, before) : -1;
    sh_pieces_free(&stream);
    if (rc < 0) {
        free(before);
        return -1;
    }
    for (uint64_t i = 0; i < given_parts; i++) {
        cursor c = { &before[i], 0, 0 };
        if (rc == 0)
            rc = advance(&c, given, NULL, 0) < 0 || rest(&c, &left) < 0 ? -1 : 0;
        sh_pieces_free(&before[i]);
    }
    free(before);
    sh_pieces *after = rc == 0 ? malloc(parts * sizeof *after) : NULL;
    rc = after ? sh_deal(&left, parts, even, after) : -1;
    if (rc == 0)
        keep_one(after, parts, part, out);
    free(after);
    sh_pieces_free(&left);
    return rc;
}
