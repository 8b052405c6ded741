#include "yfs_cache.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "yfs_segment.h"
#include "yfs_thread.h"

#define BUCKETS 4096
#define QUEUE_CAP 256
/* An idle segment that no reader has finished is dropped for a demand read
 * only after this long untouched (see make_room). */
#define STALE_NS (1000u * 1000u * 1000u)

enum seg_state { QUEUED, BUILDING, READY, FAILED };

struct yfs_seg {
    uint64_t epoch, index;   /* key */
    uint64_t size;           /* framed bytes, known from the plan */
    uint64_t work;           /* working memory reserved while QUEUED or BUILDING */
    uint8_t *data;           /* READY only */
    /* Fields below are guarded by the cache lock. */
    enum seg_state state;
    int refs;                /* readers, a building thread, the queue */
    int consumed;            /* a reader has read to its end */
    int served;              /* handed to a reader at least once (else prefetched, unread) */
    const void *reader;      /* the reader it was last handed to */
    uint64_t touched_ns;     /* last built or handed to a reader (CLOCK_MONOTONIC) */
    yfs_plan *plan;          /* held while QUEUED or BUILDING */
    pq_error err;            /* FAILED only */
    yfs_seg *chain;          /* hash bucket chain (QUEUED, BUILDING, READY) */
    yfs_seg *prev, *next;    /* LRU list: READY with refs == 0 */
};

struct yfs_cache {
    yfs_mount *m;
    uint64_t budget;
    pthread_mutex_t lock;    /* guards everything below and the seg fields above */
    pthread_cond_t changed;  /* a segment left BUILDING, or became idle (evictable) */
    pthread_cond_t work;     /* the queue got a job, or stopping */
    yfs_seg *buckets[BUCKETS];
    yfs_seg *lru_head, *lru_tail; /* head: least recently used */
    uint64_t bytes;          /* sizes and work of every segment in the table */
    yfs_seg *queue[QUEUE_CAP];
    size_t queue_head, queue_len;
    pthread_t *workers;
    int num_workers;
    int stopping;
    int waiting_for_room;    /* demand reads waiting in yfs_cache_get */
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

static void table_remove(yfs_cache *c, yfs_seg *e)
{
    yfs_seg **p = &c->buckets[bucket_of(e->epoch, e->index)];
    while (*p != e)
        p = &(*p)->chain;
    *p = e->chain;
    c->bytes -= e->size + e->work;
}

static void lru_unlink(yfs_cache *c, yfs_seg *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->lru_head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->lru_tail = e->prev;
    e->prev = e->next = NULL;
}

static void seg_free(yfs_seg *e)
{
    yfs_segment_free(e->data, e->size);
    free(e);
}

/* Drop one reference (lock held). An idle READY segment joins the LRU list
 * (and may be evicted: waiters for room are woken); a FAILED one (already
 * out of the table) is freed. */
static void release(yfs_cache *c, yfs_seg *e)
{
    if (--e->refs > 0)
        return;
    if (e->state == READY) {
        pthread_cond_broadcast(&c->changed);
        e->prev = c->lru_tail;
        e->next = NULL;
        if (c->lru_tail)
            c->lru_tail->next = e;
        else
            c->lru_head = e;
        c->lru_tail = e;
    } else if (e->state == FAILED) {
        seg_free(e);
    }
}

/* Which idle segments make_room may drop. */
enum victims {
    CONSUMED,      /* read to the end by a reader */
    SPECULATIVE,   /* and prefetched ones no reader has asked for yet, and those
                      last read by the reader asking (it has moved on) */
    STALE,         /* and any untouched since stale_before */
};

typedef struct victim_filter {
    enum victims victims;
    const void *reader;
    uint64_t stale_before;
} victim_filter;

static int may_drop(const yfs_seg *e, const victim_filter *f)
{
    return e->consumed ||
           (f->victims >= SPECULATIVE && (!e->served || e->reader == f->reader)) ||
           (f->victims == STALE && e->touched_ns < f->stale_before);
}

/* Drop idle segments that pass f, least recently used first, while over
 * budget. */
static void evict(yfs_cache *c, uint64_t need, const victim_filter *f)
{
    yfs_seg *e = c->lru_head;
    while (c->bytes + need > c->budget && e) {
        yfs_seg *next = e->next;
        if (may_drop(e, f)) {
            lru_unlink(c, e);
            table_remove(c, e);
            seg_free(e);
            yfs_count(&c->m->stats.segments_evicted, 1);
        }
        e = next;
    }
}

/* Make room for `need` more bytes (lock held) for a demand read by `reader`,
 * or for a prefetch (reader NULL); returns whether the budget is met.
 * Segments read to their end go first, and a prefetch drops nothing
 * else; nor does it take room while a demand read waits for some. A demand
 * read then drops prefetched segments not yet asked for (speculation gives
 * way to demand), and those its own reader left half-read (it seeks). A
 * segment another reader is in the middle of is idle between that reader's
 * requests, and dropping it makes the reader build it again at once (with 8
 * readers in mem=64M, every segment was built ~18 times); a demand read
 * drops it only once stale, STALE_NS untouched (its reader paused or left),
 * and until then waits for readers to finish segments. */
static int make_room(yfs_cache *c, uint64_t need, const void *reader)
{
    victim_filter f = { CONSUMED, reader, 0 };
    evict(c, need, &f);
    if (!reader)
        return c->waiting_for_room == 0 && c->bytes + need <= c->budget;
    f.victims = SPECULATIVE;
    evict(c, need, &f);
    if (c->bytes + need > c->budget) {
        uint64_t now = yfs_now_ns();
        f.victims = STALE;
        f.stale_before = now > STALE_NS ? now - STALE_NS : 0;
        evict(c, need, &f);
    }
    return c->bytes + need <= c->budget;
}

/* Wait for the cache to change (lock held), or until the least recently
 * used idle segment goes stale, whichever comes first. */
static void wait_for_room(yfs_cache *c)
{
    if (!c->lru_head) {
        pthread_cond_wait(&c->changed, &c->lock);
        return;
    }
    uint64_t wake = c->lru_head->touched_ns + STALE_NS + 1;
    struct timespec at = { (time_t)(wake / 1000000000u), (long)(wake % 1000000000u) };
    pthread_cond_timedwait(&c->changed, &c->lock, &at);
}

static yfs_seg *insert(yfs_cache *c, yfs_plan *plan, uint64_t s, enum seg_state state)
{
    yfs_seg *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->epoch = plan->plan.epoch;
    e->index = s;
    e->size = plan->plan.segments[s].bytes;
    e->work = yfs_segment_work(&plan->plan, s);
    e->state = state;
    e->refs = 1;
    size_t b = bucket_of(e->epoch, s);
    e->chain = c->buckets[b];
    c->buckets[b] = e;
    c->bytes += e->size + e->work;
    return e;
}

/* Build e (state BUILDING, lock NOT held), then publish the result.
 * A build frees MiBs of working memory in the middle of the heap, where
 * malloc keeps it resident for reuse. When readers wait for room that memory
 * is counted as free but still occupies RAM (8 readers in mem=64M peaked at
 * 99 MiB, 75 MiB with this), so it is handed back to the system. */
static int build(yfs_cache *c, yfs_seg *e, yfs_plan *plan, pq_error *err)
{
    uint8_t *data = NULL;
    int rc = yfs_segment_build(c->m, plan, e->index, &data, &e->err);
    pthread_mutex_lock(&c->lock);
    int short_of_memory = c->waiting_for_room > 0;
    pthread_mutex_unlock(&c->lock);
    if (short_of_memory)
        malloc_trim(0);
    pthread_mutex_lock(&c->lock);
    c->bytes -= e->work;
    e->work = 0;
    if (rc == 0) {
        e->data = data;
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
    uint64_t need = plan->plan.segments[s].bytes + yfs_segment_work(&plan->plan, s);
    pthread_mutex_lock(&c->lock);
    yfs_seg *e;
    for (;;) {
        e = find(c, plan->plan.epoch, s);
        if (e && e->state == READY) {
            if (e->refs++ == 0)
                lru_unlink(c, e);
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
            while (e->state == BUILDING)
                pthread_cond_wait(&c->changed, &c->lock);
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
        /* Absent (or queued) and to be built here, within the budget but
         * for the exception in the header. */
        if (e || make_room(c, need, reader) || c->bytes == 0)
            break;
        yfs_count(&st->memory_waits, 1);
        c->waiting_for_room++;
        wait_for_room(c);
        c->waiting_for_room--;
    }

    /* A queued entry keeps the queue's reference; the worker drops it when
     * it finds the entry no longer QUEUED. */
    yfs_count(&st->segment_misses, 1);
    if (e) {
        e->refs++;
        e->state = BUILDING;
    } else if (!(e = insert(c, plan, s, BUILDING))) {
        pthread_mutex_unlock(&c->lock);
        return pq_error_set(err, "out of memory");
    }
    e->served = 1;
    e->reader = reader;
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

void yfs_cache_consumed(yfs_cache *c, yfs_seg *e)
{
    pthread_mutex_lock(&c->lock);
    e->consumed = 1;
    pthread_mutex_unlock(&c->lock);
}

void yfs_cache_put(yfs_cache *c, yfs_seg *e)
{
    pthread_mutex_lock(&c->lock);
    release(c, e);
    pthread_mutex_unlock(&c->lock);
}

int yfs_cache_prefetch(yfs_cache *c, yfs_plan *plan, uint64_t s)
{
    pthread_mutex_lock(&c->lock);
    int rc = 0;
    if (find(c, plan->plan.epoch, s))
        goto out;
    rc = -1;
    if (c->num_workers == 0 || c->queue_len == QUEUE_CAP ||
        !make_room(c, plan->plan.segments[s].bytes + yfs_segment_work(&plan->plan, s), NULL))
        goto out;
    yfs_seg *e = insert(c, plan, s, QUEUED);
    if (!e)
        goto out;
    yfs_plans_ref(c->m->plans, plan);
    e->plan = plan;
    c->queue[(c->queue_head + c->queue_len++) % QUEUE_CAP] = e;
    pthread_cond_signal(&c->work);
    rc = 0;
out:
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

yfs_cache *yfs_cache_new(yfs_mount *m, uint64_t budget)
{
    yfs_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->m = m;
    c->budget = budget;
    pthread_mutex_init(&c->lock, NULL);
    pthread_condattr_t monotonic; /* wait_for_room's deadline is CLOCK_MONOTONIC */
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&c->changed, &monotonic);
    pthread_condattr_destroy(&monotonic);
    pthread_cond_init(&c->work, NULL);
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

void yfs_cache_free(yfs_cache *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->stopping = 1;
    pthread_cond_broadcast(&c->work);
    pthread_mutex_unlock(&c->lock);
    for (int i = 0; i < c->num_workers; i++)
        pthread_join(c->workers[i], NULL);
    free(c->workers);
    /* Jobs never started still hold their plans. */
    for (; c->queue_len; c->queue_len--, c->queue_head = (c->queue_head + 1) % QUEUE_CAP)
        yfs_plans_put(c->m->plans, c->queue[c->queue_head]->plan);
    for (size_t b = 0; b < BUCKETS; b++) {
        for (yfs_seg *e = c->buckets[b], *next; e; e = next) {
            next = e->chain;
            seg_free(e);
        }
    }
    pthread_cond_destroy(&c->work);
    pthread_cond_destroy(&c->changed);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

const uint8_t *yfs_seg_data(const yfs_seg *seg)
{
    return seg->data;
}

uint64_t yfs_seg_size(const yfs_seg *seg)
{
    return seg->size;
}
