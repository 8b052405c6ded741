#include "yfs_mixview.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "sh_deal.h"
#include "sh_mix.h"
#include "yfs_ahead.h"
#include "yfs_budget.h"
#include "yfs_cache.h"
#include "yfs_io.h"
#include "yfs_plans.h"

/* A piece's segment number carries the index of its run (of sh_mix_runs)
 * above this bit, so the pieces of several passes form one stream. */
#define RUN_SHIFT 40
#define SEGMENT_MASK ((1ull << RUN_SHIFT) - 1)

/* Positions per block: an internal grain (the bytes do not depend on it).
 * A block is laid out whole before any of its bytes is served, so each of
 * its records' segments is built first: blocks hold about BLOCK_BYTES of the
 * file, from BLOCK_MIN to BLOCK_MAX positions (4096 positions of int32 lists
 * were 24 MB, every source's next two segments, which one reader's
 * allowance to prepare ahead hardly covered: the reader built them
 * itself). */
#define BLOCK_MAX 4096
#define BLOCK_MIN 256
#define BLOCK_BYTES (1u << 20)

#define UNKNOWN UINT64_MAX

/* Consecutive pieces of a share that come from one pass. */
typedef struct leg {
    yfs_plan *plan;         /* the source's plan of that pass, held */
    sh_part part;
    uint64_t *first_record; /* part.count + 1: records before each piece */
    _Atomic uint64_t *served; /* part.count: bytes of each piece copied out so far by
                                 reads of the file (a byte read twice counts twice) */
} leg;

/* What the file takes of one source. */
typedef struct share {
    yfs_mount *m;
    leg *legs;
    uint32_t num_legs;
    uint64_t *leg_record; /* num_legs + 1: records before each leg */
    uint64_t *leg_byte;   /* num_legs + 1: bytes before each leg */
    uint64_t ahead_leg;   /* the leg prepared ahead (yfs_ahead.h); under the view's lock */
    uint64_t io_next;     /* its engine position (yfs_io.h guards it) */
} share;

/* Where record k of a share is: leg, piece, record of the piece's segment. */
typedef struct place {
    const leg *l;
    uint64_t piece;
    uint32_t record;
    uint64_t share_byte; /* bytes of the share before the piece */
} place;

/* The layout of one block (lay_out): the byte start of every position. A
 * read lays out its block in a free layout, or shares the one a read of the
 * same block laid out; once laid out it is read-only until its last user
 * lets it go. */
typedef struct layout {
    uint64_t block;   /* the block laid out; UNKNOWN: none */
    int users;        /* reads using it */
    int ready;        /* laid out (else its first user is laying it out) */
    /* the fields above are guarded by the view's lock; the arrays below are
     * allocated when a read first needs the layout (one reader uses one) */
    uint64_t *start;  /* block + 1: bytes of the block before each position */
    uint32_t *pos;    /* block: positions of source i's records of the block, from
                         base[i] on, in record order */
    uint32_t base[SH_MIX_MAX_SOURCES + 1];
    uint64_t *sizes;  /* block: scratch for record sizes */
    /* The segment cache's reader of source i (yfs_cache_get) is &reader[i]:
     * a read's own, so the cache never takes a segment one read is in the
     * middle of as left behind by another read of the same source (reads of
     * one file run at once). */
    char reader[SH_MIX_MAX_SOURCES];
} layout;

/* Layouts per open file: reads of one file laying out distinct blocks at
 * once (more wait for one to be let go). */
#define LAYOUTS 4

struct yfs_mixview {
    yfs_mix *mx;
    uint32_t n;
    share *shares;
    uint64_t *counts; /* records of each share: the turns' counts */
    uint64_t records, size, blocks;
    uint64_t block;   /* positions per block */
    uint64_t *taken;  /* (blocks + 1) x n: records of each source before block b */
    int64_t *credit;  /* (blocks + 1) x n: the turns' credits before block b */
    uint64_t charged; /* bytes of taken, credit, offset and the layouts allocated,
                         charged to the accountant as a plan's (YFS_MEM_PLANS): they live
                         while the file is open; grows under the lock */
    /* blocks + 1: where block b starts; UNKNOWN until learned. Written once
     * with the one value every read that learns it computes: no lock. */
    _Atomic uint64_t *offset;
    _Atomic uint64_t last_block; /* the block the last read started in (a hint) */
    _Atomic uint64_t read_end;   /* where the last read ended */
    pthread_mutex_t lock;  /* guards the layouts' block, users, ready, and the shares'
                              ahead_leg */
    pthread_cond_t laid;   /* a layout was laid out or let go */
    layout lays[LAYOUTS];
};

static uint64_t search(const uint64_t *prefix, uint64_t count, uint64_t k)
{
    /* the last i < count with prefix[i] <= k */
    uint64_t lo = 0, hi = count;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (prefix[mid] <= k)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static uint64_t share_records(const share *s)
{
    return s->leg_record[s->num_legs];
}

static place locate(const share *s, uint64_t k)
{
    assert(k < share_records(s));
    uint64_t L = search(s->leg_record, s->num_legs, k);
    const leg *l = &s->legs[L];
    uint64_t p = search(l->first_record, l->part.count, k - s->leg_record[L]);
    uint64_t r = k - s->leg_record[L] - l->first_record[p];
    assert(r < (uint64_t)(l->part.pieces[p].end - l->part.pieces[p].first));
    return (place){ l, p, (uint32_t)(l->part.pieces[p].first + r),
                    s->leg_byte[L] + l->part.offsets[p] };
}

/* The reader a segment cache sees is the share, not the view: a view reads
 * a segment of every source at once, and the cache drops what the reader
 * asking left half-read first (with the view as reader, a block's segment
 * of one source was dropped for the next source's and built again). */
typedef struct offset_ctx {
    yfs_mount *m;
    yfs_plan *plan;
    const void *reader;
    pq_error *err;
} offset_ctx;

static int record_offset(void *ctx, uint64_t s, uint32_t record, uint64_t *out)
{
    offset_ctx *c = ctx;
    yfs_seg *seg;
    if (yfs_cache_get(c->m->cache, c->plan, s, c->reader, &seg, c->err) < 0)
        return -1;
    *out = yfs_seg_record_start(seg, record);
    yfs_cache_put(c->m->cache, seg);
    return 0;
}

/* Where record k of the share starts in the share's bytes (k == records:
 * its size). Builds the record's segment unless the record starts a piece. */
static int share_byte(const share *s, uint64_t k, uint64_t *out, pq_error *err)
{
    if (k == share_records(s)) {
        *out = s->leg_byte[s->num_legs];
        return 0;
    }
    place p = locate(s, k);
    const sh_piece *pc = &p.l->part.pieces[p.piece];
    if (p.record == pc->first) {
        *out = p.share_byte;
        return 0;
    }
    uint64_t at;
    offset_ctx c = { s->m, p.l->plan, s, err };
    if (record_offset(&c, pc->segment, p.record, &at) < 0)
        return -1;
    *out = p.share_byte + at - p.l->part.starts[p.piece];
    return 0;
}

/* ---- opening: the shares ---- */

static void share_free(share *s)
{
    if (s->m)
        yfs_io_forget(s->m->io, s);
    for (uint32_t L = 0; s->legs && L < s->num_legs; L++) {
        sh_part_free(&s->legs[L].part);
        free(s->legs[L].first_record);
        free(s->legs[L].served);
        if (s->legs[L].plan)
            yfs_plans_put(s->m->plans, s->legs[L].plan);
    }
    free(s->legs);
    free(s->leg_record);
    free(s->leg_byte);
}

/* The pieces dealt[first, end) (all of run `run`) as leg L of the share. */
static int make_leg(share *s, yfs_plan *plan, const sh_piece *dealt,
                    uint64_t count, pq_error *err)
{
    leg *l = &s->legs[s->num_legs];
    sh_piece *pieces = malloc((count ? count : 1) * sizeof *pieces);
    l->first_record = malloc((count + 1) * sizeof *l->first_record);
    l->served = yfs_cache_served_new(count);
    if (!pieces || !l->first_record || !l->served) {
        free(pieces);
        free(l->first_record);
        free(l->served);
        *l = (leg){ 0 };
        return pq_error_set(err, "out of memory");
    }
    l->first_record[0] = 0;
    for (uint64_t k = 0; k < count; k++) {
        pieces[k] = dealt[k];
        pieces[k].segment &= SEGMENT_MASK;
        l->first_record[k + 1] = l->first_record[k] + (dealt[k].end - dealt[k].first);
    }
    yfs_plans_ref(s->m->plans, plan);
    l->plan = plan;
    s->num_legs++;
    offset_ctx c = { s->m, plan, s, err };
    err->msg[0] = '\0';
    if (sh_part_build(&plan->plan, pieces, count, record_offset, &c, &l->part) < 0)
        return err->msg[0] ? -1 : pq_error_set(err, "out of memory");
    yfs_plan_note_part(plan, &l->part);
    uint64_t L = s->num_legs - 1;
    s->leg_record[L + 1] = s->leg_record[L] + l->first_record[count];
    s->leg_byte[L + 1] = s->leg_byte[L] + sh_part_size(&l->part);
    return 0;
}

/* Source i's stream of the epoch: the runs sh_mix_runs says it takes, with
 * their plans held (one per run). */
typedef struct stream {
    yfs_plan **plans;
    uint64_t num_runs;
    sh_pieces pieces;
} stream;

static void stream_free(yfs_mount *m, stream *st)
{
    for (uint64_t r = 0; st->plans && r < st->num_runs; r++)
        yfs_plans_put(m->plans, st->plans[r]);
    free(st->plans);
    sh_pieces_free(&st->pieces);
}

static int open_stream(yfs_mixview *v, uint32_t i, uint64_t epoch, stream *st, pq_error *err)
{
    yfs_mount *m = v->mx->sources[i];
    uint64_t count = v->mx->counts[i], size = m->ix->num_records;
    uint64_t max_runs = sh_mix_runs_max(size ? size : 1, count) + 1;
    sh_mix_run *runs = malloc(max_runs * sizeof *runs);
    st->plans = calloc(max_runs, sizeof *st->plans);
    if (!runs || !st->plans) {
        free(runs);
        return pq_error_set(err, "out of memory");
    }
    uint64_t num_runs = sh_mix_runs(size, count, epoch, runs);
    int rc = 0;
    for (uint64_t r = 0; rc == 0 && r < num_runs; r++) {
        if (yfs_plans_get(m->plans, runs[r].pass, &st->plans[r], err) < 0) {
            rc = -1;
            break;
        }
        st->num_runs++;
        if (sh_epoch_slice(&st->plans[r]->plan, runs[r].first, runs[r].end, r << RUN_SHIFT,
                           &st->pieces) < 0)
            rc = pq_error_set(err, "out of memory");
    }
    free(runs);
    return rc;
}

/* The records each source's part p of n (with even=) gave when the file
 * `epoch-K.part-p-of-n` was read for its first `given` records: the turns
 * over those parts' counts, `given` of them. given[i * n + p], n x sources
 * entries. */
static int given_by_parts(yfs_mixview *v, const stream *st, uint64_t n, uint64_t given_each,
                          uint64_t *given, pq_error *err)
{
    uint64_t counts[SH_MIX_MAX_SOURCES];
    int64_t credit[SH_MIX_MAX_SOURCES];
    for (uint64_t p = 0; p < n; p++) {
        for (uint32_t i = 0; i < v->n; i++) {
            counts[i] = sh_deal_count(&st[i].pieces, p, n, v->mx->even);
            given[i * n + p] = 0;
        }
        sh_mix_turns t;
        if (sh_mix_turns_init(&t, counts, v->n, credit) < 0)
            return pq_error_set(err, "too many records");
        for (uint64_t k = 0; k < given_each && k < t.total; k++)
            given[sh_mix_turns_next(&t) * n + p]++;
    }
    return 0;
}

/* What the file named n takes of each source's stream, into mine[]: the
 * stream itself, its part, or its part of what the resumed parts left. */
static int deal_streams(yfs_mixview *v, const yfs_name *n, stream *st, sh_pieces *mine,
                        pq_error *err)
{
    sh_even even = v->mx->even;
    uint64_t *given = NULL;
    if (n->given_parts > 0) {
        if (n->given_parts > UINT64_MAX / sizeof *given / v->n ||
            !(given = malloc(n->given_parts * v->n * sizeof *given)))
            return pq_error_set(err, "out of memory");
        if (given_by_parts(v, st, n->given_parts, n->given, given, err) < 0) {
            free(given);
            return -1;
        }
    }
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < v->n; i++) {
        sh_pieces left = { 0 };
        if (n->parts == 0) {
            mine[i] = st[i].pieces;
            memset(&st[i].pieces, 0, sizeof st[i].pieces);
        } else if (n->given_parts == 0) {
            rc = sh_deal_one(&st[i].pieces, n->part, n->parts, even, &mine[i]);
        } else {
            rc = sh_resume_left(&st[i].pieces, n->given_parts, given + i * n->given_parts, even,
                                &left);
            if (rc == 0)
                rc = sh_deal_one(&left, n->part, n->parts, even, &mine[i]);
        }
        sh_pieces_free(&left);
    }
    free(given);
    return rc < 0 ? pq_error_set(err, "out of memory") : 0;
}

/* Source i's share: the pieces `mine` (of the runs of st) as legs. */
static int open_share(yfs_mixview *v, uint32_t i, const stream *st, const sh_pieces *mine,
                      pq_error *err)
{
    share *s = &v->shares[i];
    s->m = v->mx->sources[i];
    /* at most a leg per piece */
    s->legs = calloc(mine->n ? mine->n : 1, sizeof *s->legs);
    s->leg_record = calloc(mine->n + 1, sizeof *s->leg_record);
    s->leg_byte = calloc(mine->n + 1, sizeof *s->leg_byte);
    int rc = s->legs && s->leg_record && s->leg_byte ? 0 : pq_error_set(err, "out of memory");
    for (uint64_t k = 0; rc == 0 && k < mine->n;) {
        uint64_t run = mine->v[k].segment >> RUN_SHIFT, end = k;
        while (end < mine->n && mine->v[end].segment >> RUN_SHIFT == run)
            end++;
        assert(run < st->num_runs);
        rc = make_leg(s, st->plans[run], mine->v + k, end - k, err);
        k = end;
    }
    if (rc < 0)
        return -1;
    v->counts[i] = share_records(s);
    return 0;
}

/* Every source's share of the file named n. */
static int open_shares(yfs_mixview *v, const yfs_name *n, pq_error *err)
{
    stream *st = calloc(v->n, sizeof *st);
    sh_pieces *mine = calloc(v->n, sizeof *mine);
    int rc = st && mine ? 0 : pq_error_set(err, "out of memory");
    uint32_t failed = 0; /* the source an error is about */
    for (uint32_t i = 0; rc == 0 && i < v->n; i++)
        if ((rc = open_stream(v, i, n->epoch, &st[i], err)) < 0)
            failed = i;
    if (rc == 0)
        rc = deal_streams(v, n, st, mine, err);
    for (uint32_t i = 0; rc == 0 && i < v->n; i++)
        if ((rc = open_share(v, i, &st[i], &mine[i], err)) < 0)
            failed = i;
    for (uint32_t i = 0; st && mine && i < v->n; i++) {
        stream_free(v->mx->sources[i], &st[i]);
        sh_pieces_free(&mine[i]);
    }
    free(st);
    free(mine);
    return rc < 0 ? pq_error_prefix(err, "source %u: ", failed) : 0;
}

/* The turns' state before every block. */
static int checkpoints(yfs_mixview *v, pq_error *err)
{
    uint32_t n = v->n;
    uint64_t avg = v->records ? v->size / v->records : 0;
    v->block = avg ? BLOCK_BYTES / avg : BLOCK_MAX;
    v->block = v->block < BLOCK_MIN ? BLOCK_MIN : v->block > BLOCK_MAX ? BLOCK_MAX : v->block;
    v->blocks = (v->records + v->block - 1) / v->block;
    v->charged = (v->blocks + 1) * (n * (sizeof *v->taken + sizeof *v->credit) + sizeof *v->offset);
    yfs_budget_reserve(v->mx->sources[0]->budget, v->charged, YFS_MEM_PLANS, YFS_FORCE, NULL);
    v->taken = calloc((v->blocks + 1) * n, sizeof *v->taken);
    v->credit = calloc((v->blocks + 1) * n, sizeof *v->credit);
    v->offset = malloc((v->blocks + 1) * sizeof *v->offset);
    if (!v->taken || !v->credit || !v->offset)
        return pq_error_set(err, "out of memory");
    sh_mix_turns t;
    if (sh_mix_turns_init(&t, v->counts, n, v->credit) < 0)
        return pq_error_set(err, "too many records");
    uint64_t *taken = v->taken;
    for (uint64_t b = 0; b < v->blocks; b++) {
        /* row b keeps the state before block b; the turns go on in row b + 1 */
        uint64_t *next = taken + n;
        memcpy(next, taken, n * sizeof *next);
        memcpy(v->credit + (b + 1) * n, t.credit, n * sizeof *t.credit);
        t.credit = v->credit + (b + 1) * n;
        uint64_t left = v->records - b * v->block, positions = left < v->block ? left : v->block;
        for (uint64_t k = 0; k < positions; k++)
            next[sh_mix_turns_next(&t)]++;
        taken = next;
    }
    for (uint32_t i = 0; i < n; i++)
        assert(taken[i] == v->counts[i]);
    for (uint64_t b = 0; b <= v->blocks; b++)
        atomic_init(&v->offset[b], UNKNOWN);
    atomic_store(&v->offset[0], 0);
    atomic_store(&v->offset[v->blocks], v->size);
    return 0;
}

int yfs_mixview_open(yfs_mix *mx, const yfs_name *n, yfs_mixview **out, pq_error *err)
{
    if (n->parts != 0 && n->part >= n->parts)
        return pq_error_set(err, "part %llu of %llu does not exist", (unsigned long long)n->part,
                            (unsigned long long)n->parts);
    yfs_mixview *v = calloc(1, sizeof *v);
    if (!v)
        return pq_error_set(err, "out of memory");
    v->mx = mx;
    v->n = mx->n;
    pthread_mutex_init(&v->lock, NULL);
    pthread_cond_init(&v->laid, NULL);
    for (int k = 0; k < LAYOUTS; k++)
        v->lays[k].block = UNKNOWN;
    v->shares = calloc(mx->n, sizeof *v->shares);
    v->counts = calloc(mx->n, sizeof *v->counts);
    int rc = v->shares && v->counts
                 ? 0
                 : pq_error_set(err, "out of memory");
    if (rc == 0)
        rc = open_shares(v, n, err);
    for (uint32_t i = 0; rc == 0 && i < mx->n; i++) {
        v->records += v->counts[i];
        v->size += v->shares[i].leg_byte[v->shares[i].num_legs];
    }
    if (rc == 0)
        rc = checkpoints(v, err);
    if (rc < 0) {
        yfs_mixview_close(v);
        return -1;
    }
    for (uint32_t i = 0; i < v->n; i++) { /* where each source reads from (yfs_io.h) */
        share *sh = &v->shares[i];
        if (share_records(sh) > 0)
            yfs_io_reader_at(sh->m->io, sh->legs[0].plan, &sh->legs[0].part, 0, sh);
    }
    *out = v;
    return 0;
}

void yfs_mixview_close(yfs_mixview *v)
{
    if (!v)
        return;
    for (uint32_t i = 0; v->shares && i < v->n; i++)
        share_free(&v->shares[i]);
    free(v->shares);
    free(v->counts);
    free(v->taken);
    free(v->credit);
    if (v->charged)
        yfs_budget_release(v->mx->sources[0]->budget, v->charged, YFS_MEM_PLANS, NULL);
    free(v->offset);
    for (int k = 0; k < LAYOUTS; k++) {
        assert(v->lays[k].users == 0);
        free(v->lays[k].start);
        free(v->lays[k].pos);
        free(v->lays[k].sizes);
    }
    pthread_cond_destroy(&v->laid);
    pthread_mutex_destroy(&v->lock);
    free(v);
}

uint64_t yfs_mixview_size(const yfs_mixview *v)
{
    return v->size;
}

/* ---- reading ---- */

/* Where block b starts (learned once; reads may learn it at once). */
static int block_offset(yfs_mixview *v, uint64_t b, uint64_t *out, pq_error *err)
{
    uint64_t at = atomic_load_explicit(&v->offset[b], memory_order_relaxed);
    if (at == UNKNOWN) {
        at = 0;
        for (uint32_t i = 0; i < v->n; i++) {
            uint64_t byte;
            if (share_byte(&v->shares[i], v->taken[b * v->n + i], &byte, err) < 0)
                return -1;
            at += byte;
        }
        atomic_store_explicit(&v->offset[b], at, memory_order_relaxed);
    }
    *out = at;
    return 0;
}

/* The block holding byte x (< size). Learning a block's offset builds a
 * segment of every source where the block starts, so the search probes
 * near where the reader is: from the block the last read started in (or
 * block 0) it gallops forward, 1, 2, 4, ... blocks, then bisects the last
 * step. A sequential reader probes the next block or two; a bisection of
 * the whole file built segments far ahead of a read at offset 0 (DuckDB
 * text: every source's one page streamed three times instead of once). */
static int find_block(yfs_mixview *v, uint64_t x, uint64_t *out, pq_error *err)
{
    uint64_t lo = 0, hi = v->blocks, at;
    uint64_t last = atomic_load_explicit(&v->last_block, memory_order_relaxed);
    if (block_offset(v, last, &at, err) < 0)
        return -1;
    if (at <= x)
        lo = last;
    else
        hi = last;
    for (uint64_t from = lo, step = 1; from + step < hi; step *= 2) {
        if (block_offset(v, from + step, &at, err) < 0)
            return -1;
        if (at > x) {
            hi = from + step;
            break;
        }
        lo = from + step;
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (block_offset(v, mid, &at, err) < 0)
            return -1;
        if (at <= x)
            lo = mid;
        else
            hi = mid;
    }
    *out = lo;
    return 0;
}

/* Call fn for records [k0, k1) of share i, each with its segment held and
 * its index counted from `base`; one segment held at a time, asked for as
 * the layout's reader of the source. fn returns the bytes of the record it
 * copied out. consume: count them for the cache (yfs_cache_served), which
 * may drop a segment first once every byte of its last piece was copied
 * out. */
typedef uint64_t (*record_fn)(const layout *lay, uint32_t i, const yfs_seg *seg,
                              uint32_t record, uint64_t index, void *ctx);

static int each_record(const yfs_mixview *v, layout *lay, uint32_t i, uint64_t k0, uint64_t k1,
                       uint64_t base, int consume, record_fn fn, void *ctx, pq_error *err)
{
    const share *s = &v->shares[i];
    for (uint64_t k = k0; k < k1;) {
        place p = locate(s, k);
        const sh_piece *pc = &p.l->part.pieces[p.piece];
        uint64_t in_piece = pc->end - p.record;
        uint64_t take = k1 - k < in_piece ? k1 - k : in_piece;
        yfs_seg *seg;
        if (yfs_cache_get(s->m->cache, p.l->plan, pc->segment, &lay->reader[i], &seg, err) < 0)
            return -1;
        uint64_t copied = 0;
        for (uint64_t j = 0; j < take; j++)
            copied += fn(lay, i, seg, p.record + (uint32_t)j, k - base + j, ctx);
        if (consume) {
            yfs_io_served(s->m->io, copied);
            yfs_cache_served(s->m->cache, seg, &p.l->served[p.piece], copied,
                             p.l->part.offsets[p.piece + 1] - p.l->part.offsets[p.piece],
                             pc->end == p.l->plan->plan.segments[pc->segment].records);
        }
        yfs_cache_put(s->m->cache, seg);
        k += take;
    }
    return 0;
}

static uint64_t measure(const layout *lay, uint32_t i, const yfs_seg *seg, uint32_t record,
                        uint64_t index, void *ctx)
{
    (void)ctx;
    lay->sizes[lay->base[i] + index] =
        yfs_seg_record_start(seg, record + 1) - yfs_seg_record_start(seg, record);
    return 0;
}

/* Lay block b out in lay, which is the caller's alone. */
static int lay_out(const yfs_mixview *v, layout *lay, uint64_t b, pq_error *err)
{
    uint32_t n = v->n;
    const uint64_t *t0 = v->taken + b * n, *t1 = t0 + n;
    lay->base[0] = 0;
    for (uint32_t i = 0; i < n; i++)
        lay->base[i + 1] = lay->base[i] + (uint32_t)(t1[i] - t0[i]);
    uint32_t positions = lay->base[n];
    assert(positions <= v->block);
    for (uint32_t i = 0; i < n; i++)
        if (each_record(v, lay, i, t0[i], t1[i], t0[i], 0, measure, NULL, err) < 0)
            return -1;
    int64_t credit[SH_MIX_MAX_SOURCES];
    uint32_t next[SH_MIX_MAX_SOURCES];
    sh_mix_turns t;
    sh_mix_turns_init(&t, v->counts, n, credit); /* cannot fail: it did at open */
    memcpy(credit, v->credit + b * n, n * sizeof *credit);
    memcpy(next, lay->base, n * sizeof *next);
    lay->start[0] = 0;
    for (uint32_t p = 0; p < positions; p++) {
        uint32_t i = sh_mix_turns_next(&t);
        lay->pos[next[i]] = p;
        lay->start[p + 1] = lay->start[p] + lay->sizes[next[i]++];
    }
    for (uint32_t i = 0; i < n; i++)
        assert(next[i] == lay->base[i + 1]);
    return 0;
}

/* Allocate lay's arrays (under the lock). The file's first layout is a
 * constant of the open file, as its one layout was when reads of a file
 * ran one at a time (up to 80 KiB, outside the budget: charged, it took a tenth
 * of mem=2M's room and doubled a backwards read's time); the others exist
 * only for reads at once and are charged as the checkpoints are. */
static int layout_alloc(yfs_mixview *v, layout *lay, pq_error *err)
{
    assert(!lay->start && lay->users == 0);
    int first = 1;
    for (int k = 0; k < LAYOUTS; k++)
        first &= v->lays[k].start == NULL;
    uint64_t bytes = first ? 0
                           : (v->block + 1) * sizeof *lay->start +
                                 v->block * (sizeof *lay->pos + sizeof *lay->sizes);
    yfs_budget_reserve(v->mx->sources[0]->budget, bytes, YFS_MEM_PLANS, YFS_FORCE, NULL);
    lay->start = malloc((v->block + 1) * sizeof *lay->start);
    lay->pos = malloc(v->block * sizeof *lay->pos);
    lay->sizes = malloc(v->block * sizeof *lay->sizes);
    if (lay->start && lay->pos && lay->sizes) {
        v->charged += bytes;
        return 0;
    }
    free(lay->start);
    free(lay->pos);
    free(lay->sizes);
    lay->start = NULL;
    lay->pos = NULL;
    lay->sizes = NULL;
    yfs_budget_release(v->mx->sources[0]->budget, bytes, YFS_MEM_PLANS, NULL);
    return pq_error_set(err, "out of memory");
}

/* The layout of block b for a read, laid out: shared with the reads of b,
 * or laid out here in a layout no read uses (an allocated one first); let
 * it go with let_go. Waits, holding no segment, while b's is being laid out
 * or every layout is in use by reads of other blocks (their reads end
 * without waiting for a layout). NULL on failure. */
static layout *take_layout(yfs_mixview *v, uint64_t b, pq_error *err)
{
    pthread_mutex_lock(&v->lock);
    layout *lay;
    for (;;) {
        layout *unused = NULL;
        lay = NULL;
        for (int k = 0; k < LAYOUTS; k++) {
            layout *l = &v->lays[k];
            if (l->block == b)
                lay = l;
            else if (l->users == 0 && (!unused || (!unused->start && l->start)))
                unused = l;
        }
        if (lay && lay->ready) {
            lay->users++;
            pthread_mutex_unlock(&v->lock);
            return lay;
        }
        if (!lay && unused) {
            lay = unused;
            break;
        }
        pthread_cond_wait(&v->laid, &v->lock);
    }
    /* ours to lay out: reads of b wait for it meanwhile */
    int rc = lay->start ? 0 : layout_alloc(v, lay, err);
    lay->block = b;
    lay->users = 1;
    lay->ready = 0;
    pthread_mutex_unlock(&v->lock);
    if (rc == 0)
        rc = lay_out(v, lay, b, err);
    pthread_mutex_lock(&v->lock);
    if (rc == 0) {
        lay->ready = 1;
    } else { /* the error is this read's; a read of b waiting lays it out again */
        lay->block = UNKNOWN;
        lay->users = 0;
    }
    pthread_cond_broadcast(&v->laid);
    pthread_mutex_unlock(&v->lock);
    return rc == 0 ? lay : NULL;
}

static void let_go(yfs_mixview *v, layout *lay)
{
    pthread_mutex_lock(&v->lock);
    assert(lay->users > 0 && lay->ready);
    if (--lay->users == 0)
        pthread_cond_broadcast(&v->laid);
    pthread_mutex_unlock(&v->lock);
}

/* Copy of the block's bytes [lo, hi) into out. */
typedef struct copy_ctx {
    uint64_t lo, hi;
    uint8_t *out;
} copy_ctx;

static uint64_t copy_record(const layout *lay, uint32_t i, const yfs_seg *seg,
                            uint32_t record, uint64_t index, void *ctx)
{
    copy_ctx *c = ctx;
    uint32_t p = lay->pos[lay->base[i] + index];
    uint64_t from = lay->start[p], to = lay->start[p + 1];
    uint64_t a = from > c->lo ? from : c->lo, e = to < c->hi ? to : c->hi;
    if (a >= e)
        return 0;
    memcpy(c->out + (a - c->lo), yfs_seg_record(seg, record) + (a - from), e - a);
    return e - a;
}

/* Copy block b's bytes [lo, hi) (block-relative) into out, b laid out in lay. */
static int copy_block(const yfs_mixview *v, layout *lay, uint64_t b, uint64_t lo, uint64_t hi,
                      uint8_t *out, pq_error *err)
{
    uint32_t positions = lay->base[v->n];
    uint64_t first = 0, last = positions; /* positions whose bytes meet [lo, hi) */
    while (first < positions && lay->start[first + 1] <= lo)
        first++;
    while (last > first && lay->start[last - 1] >= hi)
        last--;
    copy_ctx c = { lo, hi, out };
    const uint64_t *t0 = v->taken + b * v->n;
    for (uint32_t i = 0; i < v->n; i++) {
        /* source i's records among positions [first, last) */
        uint64_t k0 = UNKNOWN, k1 = 0;
        for (uint32_t j = lay->base[i]; j < lay->base[i + 1]; j++)
            if (lay->pos[j] >= first && lay->pos[j] < last) {
                k0 = k0 == UNKNOWN ? j - lay->base[i] : k0;
                k1 = j - lay->base[i] + 1;
            }
        if (k0 == UNKNOWN)
            continue;
        if (each_record(v, lay, i, t0[i] + k0, t0[i] + k1, t0[i], 1, copy_record, &c, err) < 0)
            return -1;
    }
    return 0;
}

/* Keep each source's next segments prepared from where its records of
 * block b start (b <= blocks): every source is a reader of its share's part (yfs_ahead.h),
 * its allowance the source's share of one reader's. Under the lock. */
static void prepare_ahead(yfs_mixview *v, uint64_t b, int in_order)
{
    for (uint32_t i = 0; i < v->n; i++) {
        share *s = &v->shares[i];
        uint64_t k = b < v->blocks ? v->taken[b * v->n + i] : share_records(s);
        if (k >= share_records(s))
            continue;
        place p = locate(s, k);
        /* A piece k does not start was laid out with block b - 1: as for a
         * plain file's reader (yfs_view.c), pieces begun are not counted
         * against the allowance (with eight sources, their begun segments
         * took most of their allowances) */
        uint64_t from = p.record == p.l->part.pieces[p.piece].first ? p.piece : p.piece + 1;
        uint64_t L = (uint64_t)(p.l - s->legs);
        if (L != s->ahead_leg) { /* a new pass: its engine window starts again */
            yfs_io_forget(s->m->io, s);
            s->ahead_leg = L;
            s->io_next = 0;
        }
        uint64_t allowance = yfs_mount_data_budget(s->m) / YFS_AHEAD_BUDGET_SHARE / v->records *
                             v->counts[i];
        yfs_ahead(s->m, p.l->plan, &p.l->part, from, allowance, s, &s->io_next, in_order);
    }
}

/* Nothing is prepared for the file's first block: ask for every source's
 * first segment at once, so that the workers build them side by side while
 * the read builds the one it needs first (it built all of them, one after
 * the other: 0.45 s before the first byte of a mixture of eight sources of
 * int32 lists). Only those: deeper ones would share the cores with them. */
static void prepare_start(yfs_mixview *v)
{
    for (uint32_t i = 0; i < v->n; i++) {
        const share *s = &v->shares[i];
        if (share_records(s) > 0 && s->m->opts.readahead > 0)
            yfs_cache_prefetch(s->m->cache, s->legs[0].plan, s->legs[0].part.pieces[0].segment,
                               s);
    }
}

/* Copy [offset, offset + size) (within the file) into out: reads of one
 * file run at once, each laying out (or sharing) the layouts of its blocks. */
static int read_blocks(yfs_mixview *v, uint64_t offset, size_t size, uint8_t *out,
                       uint64_t *last, pq_error *err)
{
    size_t done = 0;
    while (done < size) {
        uint64_t x = offset + done, start, end, b;
        if (find_block(v, x, &b, err) < 0 || block_offset(v, b, &start, err) < 0 ||
            block_offset(v, b + 1, &end, err) < 0)
            return -1;
        atomic_store_explicit(&v->last_block, b, memory_order_relaxed);
        layout *lay = take_layout(v, b, err);
        if (!lay)
            return -1;
        assert(start <= x && x < end && end - start == lay->start[lay->base[v->n]]);
        uint64_t hi = end - x < size - done ? end : x + (size - done);
        int rc = copy_block(v, lay, b, x - start, hi - start, out + done, err);
        let_go(v, lay);
        if (rc < 0)
            return -1;
        done += (size_t)(hi - x);
        *last = b;
    }
    return 0;
}

int yfs_mixview_read(yfs_mixview *v, uint64_t offset, size_t size, uint8_t *out, size_t *got,
                     pq_error *err)
{
    *got = 0;
    if (offset >= v->size || size == 0)
        return 0;
    if (size > v->size - offset)
        size = (size_t)(v->size - offset);
    if (offset == 0)
        prepare_start(v);
    uint64_t last = 0;
    if (read_blocks(v, offset, size, out, &last, err) < 0)
        return -1;
    uint64_t before = atomic_exchange_explicit(&v->read_end, offset + size, memory_order_relaxed);
    uint64_t gap = offset > before ? offset - before : before - offset;
    pthread_mutex_lock(&v->lock);
    prepare_ahead(v, last + 1, gap <= YFS_AHEAD_SEQUENTIAL_SLACK);
    pthread_mutex_unlock(&v->lock);
    *got = size;
    return 0;
}
