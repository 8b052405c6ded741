#include "yfs_streams.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Streams in use remembered for yfs_streams_wait (more are simply not
 * waited for), and the longest such a wait lasts. */
#define MAX_IN_USE 64
#define WAIT_MAX_NS (2000ull * 1000u * 1000u)

typedef struct paused {
    uint32_t page;
    uint64_t unit;
    ix_stream *stream;
    void *dict;
    uint64_t bytes; /* charged as YFS_MEM_PARKED to no hold */
} paused;

struct yfs_streams {
    yfs_budget *budget;
    yfs_dicts *dicts;
    uint64_t cap;
    yfs_stats *stats;
    pthread_mutex_t lock; /* guards what follows */
    paused *list;         /* oldest first; few: a paused stream takes MiBs */
    size_t count, room;
    uint64_t bytes;
    pthread_cond_t ended; /* a stream in use was paused or closed */
    struct in_use {
        uint32_t page;
        uint64_t from;
    } busy[MAX_IN_USE];   /* streams in use (builds' framing threads: few) */
    size_t num_busy;
};

static void close_paused(yfs_streams *st, paused *p)
{
    ix_stream_close(p->stream);
    if (p->dict)
        yfs_dicts_put(st->dicts, p->dict);
    yfs_budget_release(st->budget, p->bytes, YFS_MEM_PARKED, NULL);
}

/* Unlink the oldest paused streams until `bytes` more fit under `limit`
 * (lock held); they are copied to out (room for st->count) for the caller
 * to close once the lock is released. Returns how many. */
static size_t unlink_oldest(yfs_streams *st, uint64_t bytes, uint64_t limit, paused *out)
{
    size_t n = 0;
    while (n < st->count && st->bytes + bytes > limit) {
        out[n] = st->list[n];
        st->bytes -= out[n].bytes;
        n++;
    }
    memmove(st->list, st->list + n, (st->count - n) * sizeof *st->list);
    st->count -= n;
    return n;
}

static void close_all(yfs_streams *st, paused *victims, size_t n)
{
    for (size_t i = 0; i < n; i++)
        close_paused(st, &victims[i]);
    yfs_count(&st->stats->streams_closed, n);
}

/* A demand read short of room, out of patience (yfs_budget.h): a paused
 * stream saves reading and decoding its page up to where it stopped, so it
 * is closed only once the builds running freed nothing for a while (8
 * parts of DuckDB's text at 50 ms a read, mem=256M: 152 streams of its 16
 * pages an epoch when closed at once, about 110 so; at 0 ms 408 MB/s
 * against 290). A stream closed gives its dictionary back to the cache,
 * idle now: the returned time (now) has the waiter call the reclaimers
 * again, so that the dictionary cache's drops it too. */
static uint64_t reclaim(void *ctx, uint64_t need, int demand)
{
    yfs_streams *st = ctx;
    if (demand < YFS_RECLAIM_IMPATIENT)
        return 0;
    pthread_mutex_lock(&st->lock);
    paused *victims = st->count ? malloc(st->count * sizeof *victims) : NULL;
    size_t n = 0;
    if (victims) {
        uint64_t keep = st->bytes > need ? st->bytes - need : 0;
        n = unlink_oldest(st, 0, keep, victims);
    }
    pthread_mutex_unlock(&st->lock);
    int dicts = 0;
    for (size_t i = 0; i < n; i++)
        dicts |= victims[i].dict != NULL;
    close_all(st, victims, n);
    free(victims);
    return dicts ? yfs_now_ns() : 0;
}

/* What reclaim closes for a demand read out of patience: every paused
 * stream (their dictionaries, idle once closed, are the dictionary cache's
 * to count). */
static uint64_t idle(void *ctx, int demand)
{
    yfs_streams *st = ctx;
    if (demand < YFS_RECLAIM_IMPATIENT)
        return 0;
    pthread_mutex_lock(&st->lock);
    uint64_t bytes = st->bytes;
    pthread_mutex_unlock(&st->lock);
    return bytes;
}

yfs_streams *yfs_streams_new(yfs_budget *budget, yfs_dicts *dicts, uint64_t cap,
                             yfs_stats *stats)
{
    yfs_streams *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->budget = budget;
    st->dicts = dicts;
    st->cap = cap;
    st->stats = stats;
    pthread_mutex_init(&st->lock, NULL);
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&st->ended, &monotonic);
    pthread_condattr_destroy(&monotonic);
    yfs_budget_add_reclaimer(budget, reclaim, idle, st);
    return st;
}

void yfs_streams_set_cap(yfs_streams *st, uint64_t cap)
{
    pthread_mutex_lock(&st->lock);
    assert(st->count == 0);
    st->cap = cap;
    pthread_mutex_unlock(&st->lock);
}

void yfs_streams_free(yfs_streams *st)
{
    if (!st)
        return;
    close_all(st, st->list, st->count);
    free(st->list);
    assert(st->num_busy == 0);
    pthread_cond_destroy(&st->ended);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

void yfs_streams_put(yfs_streams *st, uint32_t page, uint64_t unit, ix_stream *s, void *dict,
                     uint64_t charged, yfs_hold *hold)
{
    uint64_t bytes = ix_stream_bytes(s);
    assert(bytes <= charged); /* what it holds is within its bound */
    yfs_budget_release(st->budget, charged - bytes, YFS_MEM_DECODED, hold);
    paused p = { page, unit, s, dict, bytes };
    pthread_mutex_lock(&st->lock);
    paused *victims = malloc((st->count + 1) * sizeof *victims);
    size_t n = 0;
    if (bytes <= st->cap && victims && st->count == st->room) {
        size_t room = st->room ? 2 * st->room : 8;
        paused *grown = realloc(st->list, room * sizeof *grown);
        if (grown) {
            st->list = grown;
            st->room = room;
        }
    }
    int kept = bytes <= st->cap && victims && st->count < st->room;
    if (kept) {
        n = unlink_oldest(st, bytes, st->cap, victims);
        yfs_budget_transfer(st->budget, bytes, YFS_MEM_DECODED, hold, YFS_MEM_PARKED, NULL);
        st->list[st->count++] = p;
        st->bytes += bytes;
    }
    pthread_mutex_unlock(&st->lock);
    if (!kept) {
        ix_stream_close(s);
        if (dict)
            yfs_dicts_put(st->dicts, dict);
        yfs_budget_release(st->budget, bytes, YFS_MEM_DECODED, hold);
        n = 0;
        yfs_count(&st->stats->streams_closed, 1);
    }
    close_all(st, victims, n);
    free(victims);
}

/* Lock held: page's stream from unit `from` is in use. */
static void mark_in_use(yfs_streams *st, uint32_t page, uint64_t from)
{
    if (st->num_busy < MAX_IN_USE)
        st->busy[st->num_busy++] = (struct in_use){ page, from };
}

ix_stream *yfs_streams_take(yfs_streams *st, uint32_t page, uint64_t unit, uint64_t first_unit,
                            yfs_hold *hold, uint64_t *at, void **dict, uint64_t *charged)
{
    ix_stream *s = NULL;
    pthread_mutex_lock(&st->lock);
    size_t best = st->count;
    for (size_t i = 0; i < st->count; i++) {
        const paused *p = &st->list[i];
        if (p->page == page && p->unit <= unit && (best == st->count || p->unit > st->list[best].unit))
            best = i;
    }
    *at = first_unit;
    if (best < st->count) {
        paused *p = &st->list[best];
        s = p->stream;
        *at = p->unit;
        *dict = p->dict;
        *charged = p->bytes;
        st->bytes -= p->bytes;
        yfs_budget_transfer(st->budget, p->bytes, YFS_MEM_PARKED, NULL, YFS_MEM_DECODED, hold);
        memmove(p, p + 1, (st->count - best - 1) * sizeof *p);
        st->count--;
    }
    mark_in_use(st, page, *at);
    pthread_mutex_unlock(&st->lock);
    if (s)
        yfs_count(&st->stats->streams_resumed, 1);
    return s;
}

void yfs_streams_end(yfs_streams *st, uint32_t page, uint64_t from)
{
    pthread_mutex_lock(&st->lock);
    for (size_t i = 0; i < st->num_busy; i++) {
        if (st->busy[i].page == page && st->busy[i].from == from) {
            st->busy[i] = st->busy[--st->num_busy];
            break;
        }
    }
    pthread_cond_broadcast(&st->ended);
    pthread_mutex_unlock(&st->lock);
}

/* Lock held: whether a stream of page positioned at or before unit is in use. */
static int in_use_before(const yfs_streams *st, uint32_t page, uint64_t unit)
{
    for (size_t i = 0; i < st->num_busy; i++)
        if (st->busy[i].page == page && st->busy[i].from <= unit)
            return 1;
    return 0;
}

int yfs_streams_wait(yfs_streams *st, uint32_t page, uint64_t unit)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t deadline = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec + WAIT_MAX_NS;
    struct timespec at = { (time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u) };
    int waited = 0;
    pthread_mutex_lock(&st->lock);
    while (in_use_before(st, page, unit)) {
        if (pthread_cond_timedwait(&st->ended, &st->lock, &at) != 0) {
            waited = 0; /* too long: the caller streams the page itself */
            break;
        }
        waited = 1;
    }
    pthread_mutex_unlock(&st->lock);
    return waited;
}
