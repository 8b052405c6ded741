#include "sh_deal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

void sh_pieces_free(sh_pieces *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

int sh_pieces_push(sh_pieces *l, sh_piece p)
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
            sh_pieces_push(dst, (sh_piece){ p->segment, p->first + c->at, p->first + c->at + take }) < 0)
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
        if (sh_pieces_push(out, (sh_piece){ s, 0, plan->segments[s].records }) < 0) {
            sh_pieces_free(out);
            return -1;
        }
    return 0;
}

/* Called with each part of a deal, in part order; nonzero stops the deal
 * (returned by it). The part's list is only lent for the call. */
typedef int (*part_fn)(void *ctx, uint64_t part, const sh_pieces *l);

/* The round-robin part `i` of `parts`: pieces i, i+parts, ... of stream,
 * the first `keep` records of it into head (if not NULL), the rest into
 * tail (if not NULL). Returns the part's records, or -1 with no memory. */
static int64_t strided(const sh_pieces *stream, uint64_t i, uint64_t parts, uint64_t keep,
                       sh_pieces *head, sh_pieces *tail)
{
    uint64_t records = 0;
    for (uint64_t p = i; p < stream->n; p += parts) {
        sh_piece pc = stream->v[p];
        uint32_t len = pc.end - pc.first;
        uint64_t room = records < keep ? keep - records : 0;
        uint32_t to_head = room < len ? (uint32_t)room : len;
        sh_piece first = { pc.segment, pc.first, pc.first + to_head };
        sh_piece after = { pc.segment, pc.first + to_head, pc.end };
        if ((to_head && head && sh_pieces_push(head, first) < 0) ||
            (to_head < len && tail && sh_pieces_push(tail, after) < 0))
            return -1;
        records += len;
    }
    return (int64_t)records;
}

/* Deal `stream` into `parts` parts (sh_deal.h), handing each to fn in part
 * order. Memory: the spare list and one part at a time, never a list per
 * part (a million parts cost no more than one). */
static int deal_each(const sh_pieces *stream, uint64_t parts, sh_even even, part_fn fn, void *ctx)
{
    assert(parts >= 1);
    uint64_t total = stream->records;
    uint64_t q = even == SH_EVEN_OFF    ? UINT64_MAX
                 : even == SH_EVEN_DROP ? total / parts
                                        : total / parts + (total % parts != 0);
    sh_pieces spare = { 0 }, part = { 0 };
    int rc = 0;
    /* The records past q of every part, in part order, then the padding. */
    for (uint64_t i = 0; i < parts && even != SH_EVEN_OFF && rc == 0; i++)
        rc = strided(stream, i, parts, q, NULL, &spare) < 0 ? -1 : 0;
    if (rc == 0 && even == SH_EVEN_PAD && parts * q > total) {
        cursor from_start = { stream, 0, 0 };
        rc = advance(&from_start, parts * q - total, &spare, 1);
    }
    cursor take = { &spare, 0, 0 };
    for (uint64_t i = 0; i < parts && rc == 0; i++) {
        part.n = part.records = 0;
        int64_t had = strided(stream, i, parts, q, &part, NULL);
        if (had < 0)
            rc = -1;
        else if ((uint64_t)had < q && even != SH_EVEN_OFF)
            rc = advance(&take, q - (uint64_t)had, &part, 0);
        /* the spare list always covers what parts lack */
        assert(rc < 0 || even == SH_EVEN_OFF || part.records == q);
        if (rc == 0)
            rc = fn(ctx, i, &part);
    }
    sh_pieces_free(&spare);
    sh_pieces_free(&part);
    return rc;
}

/* Keeps a copy of one part. */
typedef struct keep_ctx {
    uint64_t want;
    sh_pieces *out;
} keep_ctx;

#define FOUND 1

static int keep_part(void *ctx, uint64_t part, const sh_pieces *l)
{
    keep_ctx *k = ctx;
    if (part != k->want)
        return 0;
    for (uint64_t j = 0; j < l->n; j++)
        if (sh_pieces_push(k->out, l->v[j]) < 0)
            return -1;
    return FOUND;
}

int sh_deal_one(const sh_pieces *stream, uint64_t part, uint64_t parts, sh_even even,
                sh_pieces *out)
{
    assert(part < parts);
    memset(out, 0, sizeof *out);
    keep_ctx k = { part, out };
    if (deal_each(stream, parts, even, keep_part, &k) < 0) {
        sh_pieces_free(out);
        return -1;
    }
    return 0;
}

int sh_deal_part(const sh_plan *plan, uint64_t part, uint64_t parts, sh_even even,
                 sh_pieces *out)
{
    sh_pieces stream;
    if (sh_epoch_stream(plan, &stream) < 0)
        return -1;
    int rc = sh_deal_one(&stream, part, parts, even, out);
    sh_pieces_free(&stream);
    return rc;
}

/* Appends what is left of each part after its first records given. */
typedef struct rest_ctx {
    const uint64_t *given; /* per part, or NULL: `each` for every part */
    uint64_t each;
    sh_pieces *left;
} rest_ctx;

static int keep_rest(void *ctx, uint64_t part, const sh_pieces *l)
{
    rest_ctx *r = ctx;
    cursor c = { l, 0, 0 };
    uint64_t given = r->given ? r->given[part] : r->each;
    return advance(&c, given, NULL, 0) < 0 || rest(&c, r->left) < 0 ? -1 : 0;
}

static int resume_left(const sh_pieces *stream, uint64_t given_parts, const uint64_t *given,
                       uint64_t each, sh_even even, sh_pieces *left)
{
    assert(given_parts >= 1);
    memset(left, 0, sizeof *left);
    rest_ctx r = { given, each, left };
    if (deal_each(stream, given_parts, even, keep_rest, &r) < 0) {
        sh_pieces_free(left);
        return -1;
    }
    return 0;
}

int sh_resume_left(const sh_pieces *stream, uint64_t given_parts, const uint64_t *given,
                   sh_even even, sh_pieces *left)
{
    return resume_left(stream, given_parts, given, 0, even, left);
}

uint64_t sh_deal_count(const sh_pieces *stream, uint64_t part, uint64_t parts, sh_even even)
{
    assert(part < parts);
    uint64_t total = stream->records;
    if (even == SH_EVEN_DROP)
        return total / parts;
    if (even == SH_EVEN_PAD)
        return total / parts + (total % parts != 0);
    uint64_t records = 0;
    for (uint64_t p = part; p < stream->n; p += parts)
        records += stream->v[p].end - stream->v[p].first;
    return records;
}

int sh_resume_part(const sh_plan *plan, uint64_t given_parts, uint64_t given, uint64_t part,
                   uint64_t parts, sh_even even, sh_pieces *out)
{
    assert(given_parts >= 1 && part < parts);
    memset(out, 0, sizeof *out);
    sh_pieces stream, left;
    if (sh_epoch_stream(plan, &stream) < 0)
        return -1;
    int rc = resume_left(&stream, given_parts, NULL, given, even, &left);
    sh_pieces_free(&stream);
    if (rc == 0)
        rc = sh_deal_one(&left, part, parts, even, out);
    sh_pieces_free(&left);
    return rc;
}

int sh_epoch_slice(const sh_plan *plan, uint64_t first, uint64_t end, uint64_t tag,
                   sh_pieces *out)
{
    assert(first <= end && end <= plan->total_records);
    uint64_t at = 0; /* records before segment s */
    for (uint64_t s = 0; s < plan->num_segments && at < end; s++) {
        uint64_t records = plan->segments[s].records;
        if (at + records > first) {
            uint64_t from = first > at ? first - at : 0;
            uint64_t to = end - at < records ? end - at : records;
            if (sh_pieces_push(out, (sh_piece){ tag | s, (uint32_t)from, (uint32_t)to }) < 0)
                return -1;
        }
        at += records;
    }
    return 0;
}
