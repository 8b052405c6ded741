#include "yfs_cache.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "yfs_budget.h"
#include "yfs_list.h"
#include "yfs_segment.h"
#include "yfs_thread.h"

#define BUCKETS 4096
#define QUEUE_CAP 256
/* An idle segment that no reader has finished is dropped for a demand read
 * only after this long untouched (see make_room, reclaim). */
#define STALE_NS (1000u * 1000u * 1000u)

/* CANCELLED: a queued prefetch dropped for a demand read (reclaim). */
enum seg_state { QUEUED, BUILDING, READY, FAILED, CANCELLED };

/* What a built segment holds (yfs_segment_held_bytes, YFS_MEM_SEGMENTS)
 * is reserved for as long as it is in the table: in its hold while QUEUED
 * or BUILDING (the build's other reservations join it), owned by no hold
 * once READY. Its build's yfs_segment_build_bytes (YFS_MEM_BUILD) are
 * reserved with it, in its hold, from then until the build releases them. */
struct yfs_seg {
    uint64_t epoch, index;   /* key */
    uint64_t size;           /* framed bytes, known from the plan */
    uint64_t held;           /* yfs_segment_held_bytes */
    uint64_t work;           /* yfs_segment_build_bytes */
    yfs_hold hold;           /* the build's reservations (yfs_budget.h) */
    yfs_body body;           /* READY only */
    /* Fields below are guarded by the cache lock. */
    enum seg_state state;
    int refs;                /* readers, a building thread, the queue */
    int consumed;            /* a reader has read to its end */
    int served;              /* handed to a reader at least once (else prefetched, unread) */
    const void *reader;      /* the reader it was last handed to */
    const void *ahead_of;    /* the reader whose readahead asked for it (a prefetch) */
    const void *builder;     /* the reader that builds it itself, or NULL (a worker) */
    uint64_t touched_ns;     /* last built or handed to a reader (CLOCK_MONOTONIC) */
    yfs_plan *plan;          /* the queue's plan reference, while QUEUED */
    pq_error err;            /* FAILED only */
    yfs_seg *chain;          /* hash bucket chain (QUEUED, BUILDING, READY) */
    yfs_link lru;            /* in the LRU list: READY with refs == 0 */
    yfs_link building;       /* in the list of builds: BUILDING, its build running */
};

struct yfs_cache {
    yfs_mount *m;
    yfs_budget *budget;
    pthread_mutex_t lock;    /* guards everything below and the seg fields above */
    pthread_cond_t changed;  /* a segment left BUILDING */
    pthread_cond_t work;     /* the queue got a job, or stopping */
    yfs_seg *buckets[BUCKETS];
    yfs_list lru;            /* idle READY segments, least recently used first */
    yfs_list builds;         /* segments whose build runs now: the asking hold's
                              * build (speculating) and the readers building
                              * their own (OWN victims) are found here */
    yfs_seg *queue[QUEUE_CAP];
    size_t queue_head, queue_len;
    pthread_t *workers;
    int num_workers;
    int stopping;
};

static size_t bucket_of(uint64_t epoch, uint64_t index)
{
    uint64_t h = (epoch * 0x9e3779b97f4a7c15ull) ^ (index * 0xc2b2ae3d27d4eb4full);
    return (size_t)((h ^ (h >> 29)) % BUCKETS);
}

static yfs_seg *find(yfs_cache *c, uint64_t epoch, uint64_t index)
{
    for (yfs_seg *e = c->buckets[bucket_of(epoch, index)]; e; e = e->chain)
        if (e->epoch == epoch && e->index == index)
            return e;
    return NULL;
}

/* Remove e from the table and release its reservation (lock held); e must
 * no longer be QUEUED or BUILDING (its size out of its hold). */
static void table_remove(yfs_cache *c, yfs_seg *e)
{
    yfs_seg **p = &c->buckets[bucket_of(e->epoch, e->index)];
    while (*p != e)
        p = &(*p)->chain;
    *p = e->chain;
    yfs_budget_release(c->budget, e->held, YFS_MEM_SEGMENTS, NULL);
}

static void seg_free(yfs_seg *e)
{
    yfs_body_free(&e->body);
    free(e);
}

/* Drop one reference (lock held). An idle READY segment joins the LRU list
 * (and may be evicted: waiters for room are woken); a FAILED or CANCELLED
 * one (already out of the table) is freed. */
static void release(yfs_cache *c, yfs_seg *e)
{
    if (--e->refs > 0)
        return;
    if (e->state == READY) {
        yfs_budget_notify(c->budget);
        yfs_list_push(&c->lru, &e->lru);
    } else if (e->state == FAILED || e->state == CANCELLED) {
        seg_free(e);
    }
}

/* Which idle segments a pass of evict drops. */
enum victims {
    CONSUMED,    /* read to the end by a reader */
    OWN,         /* last handed to a reader asking, not read to the end (it has
                    moved on: it seeks, or builds its next segment) */
    STALE,       /* untouched since stale_before (its reader paused or left) */
    UNREAD,      /* prefetched, not asked for by any reader yet */
};

typedef struct victim_filter {
    enum victims victims;
    const void *reader;      /* OWN: the reader asking, or NULL: those building (in builds) */
    const yfs_list *builds;  /* OWN */
    uint64_t stale_before;   /* STALE */
    const yfs_seg *keep_before; /* UNREAD: not those its reader reads before it (or NULL) */
} victim_filter;

/* Whether prefetch a is read before prefetch b by the reader whose
 * readahead asked for both: a reader's part takes the segments of its
 * epoch in index order (sh_plan.h). */
static int read_before(const yfs_seg *a, const yfs_seg *b)
{
    return a->ahead_of == b->ahead_of && a->epoch == b->epoch && a->index < b->index;
}

/* Whether reader r builds a segment itself now (lock held). */
static int building_own(const yfs_list *builds, const void *r)
{
    for (const yfs_link *at = builds->head; at; at = at->next) {
        const void *builder = YFS_CONTAINER(at, yfs_seg, building)->builder;
        if (builder && builder == r)
            return 1;
    }
    return 0;
}

static int may_drop(const yfs_seg *e, const victim_filter *f)
{
    switch (f->victims) {
    case CONSUMED:
        return e->consumed;
    case OWN:
        return e->served &&
               (f->reader ? e->reader == f->reader : building_own(f->builds, e->reader));
    case STALE:
        return e->touched_ns < f->stale_before;
    case UNREAD:
        return !e->served && !(f->keep_before && read_before(e, f->keep_before));
    }
    return 0;
}

/* Drop idle segments that pass f until `need` bytes are freed, least
 * recently used first, except for UNREAD: most recently built first, the
 * furthest ahead of their readers (dropping the oldest dropped the very
 * segment a reader was about to read, and it built it again). Returns the
 * bytes freed. */
static uint64_t evict(yfs_cache *c, uint64_t need, const victim_filter *f)
{
    uint64_t freed = 0;
    int newest_first = f->victims == UNREAD;
    yfs_link *at = newest_first ? c->lru.tail : c->lru.head;
    while (freed < need && at) {
        yfs_seg *e = YFS_CONTAINER(at, yfs_seg, lru);
        at = newest_first ? at->prev : at->next;
        if (may_drop(e, f)) {
            yfs_list_remove(&c->lru, &e->lru);
            freed += e->held;
            table_remove(c, e);
            seg_free(e);
            yfs_count(&c->m->stats.segments_evicted, 1);
        }
    }
    return freed;
}

/* Take queued e out of the queue (lock held), with the queue's reference,
 * which passes to the caller, and return the plan reference the queue held
 * for it. Left in the queue, a segment taken over by a reader kept the
 * queue's reference until a worker popped it: with every worker waiting for
 * room, that READY segment was never let go, and nothing else could free it
 * (a mem=640K test deadlocked so). */
static yfs_plan *unqueue(yfs_cache *c, yfs_seg *e)
{
    size_t k = 0;
    while (c->queue[(c->queue_head + k) % QUEUE_CAP] != e)
        k++;
    assert(k < c->queue_len);
    for (; k + 1 < c->queue_len; k++)
        c->queue[(c->queue_head + k) % QUEUE_CAP] = c->queue[(c->queue_head + k + 1) % QUEUE_CAP];
    c->queue_len--;
    yfs_plan *plan = e->plan;
    e->plan = NULL;
    return plan;
}

/* Cancel queued prefetches, the most recently queued first, until `need`
 * bytes are freed (lock held); returns the bytes freed. */
static uint64_t cancel_queued(yfs_cache *c, uint64_t need)
{
    uint64_t freed = 0;
    for (size_t i = c->queue_len; freed < need && i-- > 0;) {
        yfs_seg *e = c->queue[(c->queue_head + i) % QUEUE_CAP];
        if (e->state != QUEUED)
            continue;
        e->state = CANCELLED; /* the worker that pops it frees it */
        yfs_budget_release(c->budget, e->work, YFS_MEM_BUILD, &e->hold);
        yfs_budget_transfer(c->budget, e->held, YFS_MEM_SEGMENTS, &e->hold, YFS_MEM_SEGMENTS,
                            NULL);
        table_remove(c, e);
        freed += e->held + e->work;
    }
    return freed;
}

/* Make room (lock held) for a demand reservation of `need` bytes by `reader`
 * (NULL: by the readers building a segment themselves now), dropping what
 * costs least first: segments read to their end; those these readers left
 * half-read; queued prefetches (no work lost yet); segments untouched for
 * STALE_NS; prefetched segments not read yet (speculation gives way to
 * demand), furthest ahead first, but none that the reader of `speculating`
 * (a prefetch's build that no reader waits for, or NULL) reads before it: it
 * needs them sooner than what is built, and would build them again (one
 * reader of tokens at 10 ms a read dropped 14 of 64 segments so, 0.71 of the
 * throughput without latency); such a build waits for room instead. Other
 * readers' prefetches may go: parts are read at their own pace, so an index
 * says nothing of which of two readers needs its segment first. A segment
 * another reader is in the middle of is idle between that reader's requests,
 * and dropping it makes the reader build it again at once (with 8 readers in
 * mem=64M, every segment was built ~18 times): it goes only once stale.
 * Returns the bytes freed. */
static uint64_t drop_for_demand(yfs_cache *c, uint64_t need, const void *reader,
                                const yfs_seg *speculating)
{
    victim_filter f = { .victims = CONSUMED };
    uint64_t freed = evict(c, need, &f);
    f = (victim_filter){ .victims = OWN, .reader = reader, .builds = &c->builds };
    if (freed < need)
        freed += evict(c, need - freed, &f);
    if (freed < need)
        freed += cancel_queued(c, need - freed);
    uint64_t now = yfs_now_ns();
    f = (victim_filter){ .victims = STALE, .stale_before = now > STALE_NS ? now - STALE_NS : 0 };
    if (freed < need)
        freed += evict(c, need - freed, &f);
    f = (victim_filter){ .victims = UNREAD, .keep_before = speculating };
    if (freed < need)
        freed += evict(c, need - freed, &f);
    return freed;
}

/* Make room (lock held) for a demand read by `reader` of `need` bytes,
 * before it reserves them. */
static void make_room(yfs_cache *c, uint64_t need, const void *reader)
{
    drop_for_demand(c, yfs_budget_shortfall(c->budget, need), reader, NULL);
}

/* What drop_for_demand would drop for the readers building now and for
 * speculating with need unbounded (lock held), without dropping it. */
static uint64_t droppable_for_demand(const yfs_cache *c, const yfs_seg *speculating)
{
    uint64_t now = yfs_now_ns(), bytes = 0;
    victim_filter own = { .victims = OWN, .builds = &c->builds };
    victim_filter stale = { .victims = STALE, .stale_before = now > STALE_NS ? now - STALE_NS : 0 };
    victim_filter unread = { .victims = UNREAD, .keep_before = speculating };
    for (const yfs_link *at = c->lru.head; at; at = at->next) {
        const yfs_seg *e = YFS_CONTAINER(at, yfs_seg, lru);
        int drop = e->consumed || may_drop(e, &own) || may_drop(e, &stale) ||
                   may_drop(e, &unread);
        bytes += drop ? e->held : 0;
    }
    for (size_t i = 0; i < c->queue_len; i++) {
        const yfs_seg *e = c->queue[(c->queue_head + i) % QUEUE_CAP];
        bytes += e->state == QUEUED ? e->held + e->work : 0;
    }
    return bytes;
}

/* The build that reserves through hold `asking` at level `demand`, when it
 * is a prefetch's that no reader has asked for yet (lock held), else NULL:
 * what drop_for_demand keeps for it. Not when everything idle must go
 * (YFS_RECLAIM_ALL: nothing else could make room). */
static const yfs_seg *speculating(const yfs_cache *c, const yfs_hold *asking, int demand)
{
    if (!asking || demand >= YFS_RECLAIM_ALL)
        return NULL;
    for (const yfs_link *at = c->builds.head; at; at = at->next) {
        const yfs_seg *e = YFS_CONTAINER(at, yfs_seg, building);
        if (&e->hold == asking)
            return e->served ? NULL : e;
    }
    return NULL;
}

/* The accountant's count of what reclaim frees for a demand reservation. */
static uint64_t idle(void *ctx, int demand, const yfs_hold *asking)
{
    yfs_cache *c = ctx;
    pthread_mutex_lock(&c->lock);
    uint64_t bytes = droppable_for_demand(c, speculating(c, asking, demand));
    pthread_mutex_unlock(&c->lock);
    return bytes;
}

/* The accountant's reclaimer: for a prefetch only segments read to their
 * end go; for a demand reservation what drop_for_demand drops for the
 * readers building now and for the build asking. Returns when the least
 * recently used idle segment goes stale. */
static uint64_t reclaim(void *ctx, uint64_t need, int demand, const yfs_hold *asking)
{
    yfs_cache *c = ctx;
    pthread_mutex_lock(&c->lock);
    victim_filter f = { .victims = CONSUMED };
    if (demand)
        drop_for_demand(c, need, NULL, speculating(c, asking, demand));
    else
        evict(c, need, &f);
    /* At the latest when the least recently used goes stale; not sooner
     * than a millisecond (room freed here may have been taken meanwhile). */
    uint64_t now = yfs_now_ns();
    const yfs_link *oldest = c->lru.head;
    uint64_t retry =
        demand && oldest ? YFS_CONTAINER(oldest, yfs_seg, lru)->touched_ns + STALE_NS + 1 : 0;
    if (retry && retry < now + 1000000u)
        retry = now + 1000000u;
    pthread_mutex_unlock(&c->lock);
    return retry;
}

/* A new entry for segment s, in no table yet (lock not needed). */
static yfs_seg *seg_new(yfs_cache *c, yfs_plan *plan, uint64_t s)
{
    yfs_seg *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->epoch = plan->plan.epoch;
    e->index = s;
    e->size = plan->plan.segments[s].bytes;
    e->held = yfs_segment_held_bytes(c->m, plan, s);
    e->work = yfs_segment_build_bytes(c->m, plan, s);
    e->refs = 1;
    return e;
}

/* Reserve e's segment and its build's working memory in one go, in e's
 * hold (see struct yfs_seg); returns what yfs_budget_reserve does. */
static int reserve(yfs_cache *c, yfs_seg *e, yfs_mem_mode mode)
{
    if (yfs_budget_reserve(c->budget, e->held + e->work, YFS_MEM_SEGMENTS, mode, &e->hold) < 0)
        return -1;
    yfs_budget_transfer(c->budget, e->work, YFS_MEM_SEGMENTS, &e->hold, YFS_MEM_BUILD, &e->hold);
    return 0;
}

/* Give back what reserve took for e, whose build never ran. */
static void unreserve(yfs_cache *c, yfs_seg *e)
{
    yfs_budget_release(c->budget, e->work, YFS_MEM_BUILD, &e->hold);
    yfs_budget_release(c->budget, e->held, YFS_MEM_SEGMENTS, &e->hold);
}

/* Put e, reserved for in its hold, into the table in `state` (lock held). */
static void insert(yfs_cache *c, yfs_seg *e, enum seg_state state)
{
    size_t b = bucket_of(e->epoch, e->index);
    e->state = state;
    e->chain = c->buckets[b];
    c->buckets[b] = e;
}

/* Give up an entry that never joined the table, and its reservation. */
static void discard(yfs_cache *c, yfs_seg *e)
{
    unreserve(c, e);
    yfs_hold_leave(c->budget, &e->hold);
    free(e);
}

/* Build e (state BUILDING, its hold entered by this thread, lock NOT held),
 * then publish the result. A build frees MiBs of working memory in the
 * middle of the heap, where malloc keeps it resident: yfs_budget_trim_heap
 * hands it back when the bound needs it. */
static int build(yfs_cache *c, yfs_seg *e, yfs_plan *plan, pq_error *err)
{
    pthread_mutex_lock(&c->lock);
    yfs_list_push(&c->builds, &e->building);
    pthread_mutex_unlock(&c->lock);
    yfs_body body;
    int rc = yfs_segment_build(c->m, plan, e->index, &e->hold, &body, &e->err);
    yfs_budget_trim_heap(c->budget);
    /* The build released all but what the segment holds, which the cache
     * keeps. */
    yfs_budget_transfer(c->budget, e->held, YFS_MEM_SEGMENTS, &e->hold, YFS_MEM_SEGMENTS, NULL);
    yfs_hold_leave(c->budget, &e->hold);
    pthread_mutex_lock(&c->lock);
    yfs_list_remove(&c->builds, &e->building);
    if (rc == 0) {
        e->body = body;
        e->state = READY;
        e->touched_ns = yfs_now_ns();
    } else {
        e->state = FAILED;
        table_remove(c, e);
        if (err)
            *err = e->err;
    }
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
    return rc;
}

int yfs_cache_get(yfs_cache *c, yfs_plan *plan, uint64_t s, const void *reader, yfs_seg **out,
                  pq_error *err)
{
    yfs_stats *st = &c->m->stats;
    uint64_t need = yfs_segment_held_bytes(c->m, plan, s) + yfs_segment_build_bytes(c->m, plan, s);
    yfs_seg *fresh = NULL; /* reserved for, not in the table yet */
    pthread_mutex_lock(&c->lock);
    yfs_seg *e;
    for (;;) {
        e = find(c, plan->plan.epoch, s);
        if (fresh && e) { /* built or queued by another meanwhile */
            discard(c, fresh);
            fresh = NULL;
        }
        if (e && e->state == READY) {
            if (e->refs++ == 0)
                yfs_list_remove(&c->lru, &e->lru);
            e->touched_ns = yfs_now_ns();
            e->served = 1;
            e->reader = reader;
            pthread_mutex_unlock(&c->lock);
            yfs_count(&st->segment_hits, 1);
            *out = e;
            return 0;
        }
        if (e && e->state == BUILDING) {
            e->refs++;
            e->served = 1;
            e->reader = reader;
            yfs_count(&st->segment_waits, 1);
            yfs_count(&st->reads_waiting, 1);
            while (e->state == BUILDING)
                pthread_cond_wait(&c->changed, &c->lock);
            yfs_uncount(&st->reads_waiting, 1);
            int rc = 0;
            if (e->state == FAILED) {
                rc = -1;
                if (err)
                    *err = e->err;
                release(c, e);
            }
            pthread_mutex_unlock(&c->lock);
            if (rc == 0)
                *out = e;
            return rc;
        }
        if (e) { /* queued: taken over here, with its reservation and the queue's reference */
            yfs_plans_put(c->m->plans, unqueue(c, e));
            e->state = BUILDING;
            yfs_hold_enter(c->budget, &e->hold);
            break;
        }
        if (fresh) {
            insert(c, fresh, BUILDING);
            e = fresh;
            break;
        }
        /* Absent, and to be built here once reserved. The accountant's wait
         * happens without the cache lock (its reclaimers take it) and with
         * no segment held (yfs_view.h). */
        make_room(c, need, reader);
        pthread_mutex_unlock(&c->lock);
        if (!(fresh = seg_new(c, plan, s)))
            return pq_error_set(err, "out of memory");
        yfs_hold_enter(c->budget, &fresh->hold);
        reserve(c, fresh, YFS_DEMAND);
        pthread_mutex_lock(&c->lock);
    }
    yfs_count(&st->segment_misses, 1);
    e->served = 1;
    e->reader = reader;
    e->builder = reader;
    pthread_mutex_unlock(&c->lock);
    int rc = build(c, e, plan, err);
    if (rc < 0) {
        pthread_mutex_lock(&c->lock);
        release(c, e);
        pthread_mutex_unlock(&c->lock);
        return -1;
    }
    *out = e;
    return 0;
}

void yfs_cache_served(yfs_cache *c, yfs_seg *e, _Atomic uint64_t *served, uint64_t bytes,
                      uint64_t piece_bytes, int ends_segment)
{
    if (atomic_fetch_add(served, bytes) + bytes < piece_bytes || !ends_segment)
        return;
    pthread_mutex_lock(&c->lock);
    e->consumed = 1;
    pthread_mutex_unlock(&c->lock);
}

_Atomic uint64_t *yfs_cache_served_new(uint64_t pieces)
{
    _Atomic uint64_t *served = malloc((pieces ? pieces : 1) * sizeof *served);
    for (uint64_t k = 0; served && k < pieces; k++)
        atomic_init(&served[k], 0);
    return served;
}

void yfs_cache_put(yfs_cache *c, yfs_seg *e)
{
    pthread_mutex_lock(&c->lock);
    release(c, e);
    pthread_mutex_unlock(&c->lock);
}

int yfs_cache_prefetch(yfs_cache *c, yfs_plan *plan, uint64_t s, const void *reader)
{
    pthread_mutex_lock(&c->lock);
    int present = find(c, plan->plan.epoch, s) != NULL;
    int open = c->num_workers > 0 && c->queue_len < QUEUE_CAP;
    pthread_mutex_unlock(&c->lock);
    if (present)
        return 0;
    yfs_seg *e = open ? seg_new(c, plan, s) : NULL;
    if (!e)
        return -1;
    if (reserve(c, e, YFS_PREFETCH) < 0) {
        free(e);
        return -1;
    }
    e->ahead_of = reader;
    pthread_mutex_lock(&c->lock);
    int rc = 0;
    if (find(c, plan->plan.epoch, s) || c->queue_len == QUEUE_CAP) {
        rc = find(c, plan->plan.epoch, s) ? 0 : -1;
        unreserve(c, e);
        free(e);
    } else {
        insert(c, e, QUEUED);
        yfs_plans_ref(c->m->plans, plan);
        e->plan = plan;
        c->queue[(c->queue_head + c->queue_len++) % QUEUE_CAP] = e;
        pthread_cond_signal(&c->work);
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static void *worker(void *arg)
{
    yfs_cache *c = arg;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (c->queue_len == 0 && !c->stopping)
            pthread_cond_wait(&c->work, &c->lock);
        if (c->stopping)
            break;
        yfs_seg *e = c->queue[c->queue_head];
        c->queue_head = (c->queue_head + 1) % QUEUE_CAP;
        c->queue_len--;
        yfs_plan *plan = e->plan;
        e->plan = NULL;
        if (e->state == QUEUED) {
            e->state = BUILDING;
            yfs_hold_enter(c->budget, &e->hold);
            pthread_mutex_unlock(&c->lock);
            if (build(c, e, plan, NULL) == 0)
                yfs_count(&c->m->stats.segments_prefetched, 1);
            pthread_mutex_lock(&c->lock);
        }
        release(c, e); /* the queue's reference */
        pthread_mutex_unlock(&c->lock);
        yfs_plans_put(c->m->plans, plan);
        pthread_mutex_lock(&c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

yfs_cache *yfs_cache_new(yfs_mount *m)
{
    yfs_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->m = m;
    c->budget = m->budget;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->changed, NULL);
    pthread_cond_init(&c->work, NULL);
    yfs_budget_add_reclaimer(c->budget, reclaim, idle, c);
    return c;
}

int yfs_cache_start(yfs_cache *c, int threads, pq_error *err)
{
    c->workers = calloc((size_t)threads, sizeof *c->workers);
    if (!c->workers)
        return pq_error_set(err, "out of memory");
    for (int i = 0; i < threads; i++) {
        if (yfs_thread_create(&c->workers[i], worker, c) != 0)
            return pq_error_set(err, "cannot start prefetch worker %d", i);
        pthread_mutex_lock(&c->lock);
        c->num_workers++;
        pthread_mutex_unlock(&c->lock);
    }
    return 0;
}

void yfs_cache_stop(yfs_cache *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->stopping = 1;
    pthread_cond_broadcast(&c->work);
    int workers = c->num_workers;
    c->num_workers = 0; /* no prefetch is queued from now on */
    pthread_mutex_unlock(&c->lock);
    for (int i = 0; i < workers; i++)
        pthread_join(c->workers[i], NULL);
}

void yfs_cache_free(yfs_cache *c)
{
    if (!c)
        return;
    yfs_cache_stop(c);
    free(c->workers);
    /* Jobs never started still hold their plans; cancelled ones are in no
     * table. */
    for (; c->queue_len; c->queue_len--, c->queue_head = (c->queue_head + 1) % QUEUE_CAP) {
        yfs_seg *e = c->queue[c->queue_head];
        yfs_plans_put(c->m->plans, e->plan);
        if (e->state == CANCELLED)
            seg_free(e);
    }
    for (size_t b = 0; b < BUCKETS; b++) {
        for (yfs_seg *e = c->buckets[b], *next; e; e = next) {
            next = e->chain;
            if (e->state == QUEUED) {
                yfs_budget_release(c->budget, e->work, YFS_MEM_BUILD, &e->hold);
                yfs_budget_transfer(c->budget, e->held, YFS_MEM_SEGMENTS, &e->hold,
                                    YFS_MEM_SEGMENTS, NULL);
            }
            yfs_budget_release(c->budget, e->held, YFS_MEM_SEGMENTS, NULL);
            seg_free(e);
        }
    }
    pthread_cond_destroy(&c->work);
    pthread_cond_destroy(&c->changed);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void yfs_seg_copy(const yfs_seg *seg, uint64_t offset, uint8_t *out, uint64_t len)
{
    yfs_body_copy(&seg->body, offset, out, len);
}

uint64_t yfs_seg_size(const yfs_seg *seg)
{
    return seg->size;
}

uint64_t yfs_seg_record_start(const yfs_seg *seg, uint32_t record)
{
    assert(seg->body.pieces > 0 && record <= seg->body.pieces);
    return record ? seg->body.ends[record - 1] : 0;
}

const uint8_t *yfs_seg_record(const yfs_seg *seg, uint32_t record)
{
    assert(record < seg->body.pieces);
    return seg->body.at[record];
}
