#include "yfs_pages.h"

#include <pthread.h>
#include <stdlib.h>

#include "yfs_list.h"

#define BUCKETS 8192

typedef struct entry {
    uint64_t epoch;
    uint32_t page, len;
    uint8_t *raw;
    struct entry *chain;       /* hash bucket */
    yfs_link age;              /* insertion order: the oldest is dropped first */
} entry;

struct yfs_pages {
    yfs_budget *budget;
    uint64_t cap;
    yfs_stats *stats;
    pthread_mutex_t lock; /* guards everything below */
    entry *buckets[BUCKETS];
    yfs_list age;         /* every entry, oldest first */
    uint64_t bytes;
};

static size_t bucket_of(uint64_t epoch, uint32_t page)
{
    uint64_t h = (epoch * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)page * 0xc2b2ae3d27d4eb4full);
    return (size_t)((h ^ (h >> 31)) % BUCKETS);
}

static uint64_t reclaim(void *ctx, uint64_t need, int demand);
static uint64_t idle(void *ctx);

yfs_pages *yfs_pages_new(yfs_budget *budget, uint64_t cap, yfs_stats *stats)
{
    yfs_pages *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->budget = budget;
    s->cap = cap;
    s->stats = stats;
    pthread_mutex_init(&s->lock, NULL);
    yfs_budget_add_reclaimer(budget, reclaim, idle, s);
    return s;
}

/* Unlink e from its bucket and the age list (lock held); the caller owns it. */
static void unlink_entry(yfs_pages *s, entry *e)
{
    entry **p = &s->buckets[bucket_of(e->epoch, e->page)];
    while (*p != e)
        p = &(*p)->chain;
    *p = e->chain;
    yfs_list_remove(&s->age, &e->age);
    s->bytes -= e->len;
}

static entry *oldest(const yfs_pages *s)
{
    return s->age.head ? YFS_CONTAINER(s->age.head, entry, age) : NULL;
}

/* Drop the oldest entry (there is one; lock held). */
static void drop_oldest(yfs_pages *s)
{
    entry *old = oldest(s);
    unlink_entry(s, old);
    free(old->raw);
    yfs_budget_release(s->budget, old->len, YFS_MEM_PARKED, NULL);
    free(old);
    yfs_count(&s->stats->loaded_pages_dropped, 1);
}

/* A demand read short of room: parked pages are only a saving of I/O. */
static uint64_t reclaim(void *ctx, uint64_t need, int demand)
{
    yfs_pages *s = ctx;
    if (!demand)
        return 0;
    pthread_mutex_lock(&s->lock);
    for (uint64_t freed = 0; freed < need && oldest(s);) {
        freed += oldest(s)->len;
        drop_oldest(s);
    }
    pthread_mutex_unlock(&s->lock);
    return 0;
}

/* What reclaim drops for a demand read: every parked page. */
static uint64_t idle(void *ctx)
{
    yfs_pages *s = ctx;
    pthread_mutex_lock(&s->lock);
    uint64_t bytes = s->bytes;
    pthread_mutex_unlock(&s->lock);
    return bytes;
}

void yfs_pages_free(yfs_pages *s)
{
    if (!s)
        return;
    while (oldest(s))
        drop_oldest(s);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

void yfs_pages_put(yfs_pages *s, uint64_t epoch, uint32_t page, uint8_t *raw, uint32_t len,
                   yfs_hold *hold)
{
    entry *e = len <= s->cap ? malloc(sizeof *e) : NULL;
    if (!e) {
        free(raw);
        yfs_budget_release(s->budget, len, YFS_MEM_RAW, hold);
        yfs_count(&s->stats->loaded_pages_dropped, 1);
        return;
    }
    *e = (entry){ .epoch = epoch, .page = page, .len = len, .raw = raw };
    pthread_mutex_lock(&s->lock);
    size_t b = bucket_of(epoch, page);
    for (entry *same = s->buckets[b]; same; same = same->chain) {
        if (same->epoch == epoch && same->page == page) { /* loaded again by a rebuilt plan */
            pthread_mutex_unlock(&s->lock);
            free(raw);
            yfs_budget_release(s->budget, len, YFS_MEM_RAW, hold);
            free(e);
            return;
        }
    }
    while (s->bytes + len > s->cap && oldest(s))
        drop_oldest(s);
    yfs_budget_transfer(s->budget, len, YFS_MEM_RAW, hold, YFS_MEM_PARKED, NULL);
    e->chain = s->buckets[b];
    s->buckets[b] = e;
    yfs_list_push(&s->age, &e->age);
    s->bytes += len;
    pthread_mutex_unlock(&s->lock);
}

uint8_t *yfs_pages_take(yfs_pages *s, uint64_t epoch, uint32_t page, yfs_hold *hold,
                        uint32_t *len)
{
    pthread_mutex_lock(&s->lock);
    entry *e = s->buckets[bucket_of(epoch, page)];
    while (e && (e->epoch != epoch || e->page != page))
        e = e->chain;
    uint8_t *raw = NULL;
    if (e) {
        unlink_entry(s, e);
        raw = e->raw;
        *len = e->len;
        yfs_budget_transfer(s->budget, e->len, YFS_MEM_PARKED, NULL, YFS_MEM_RAW, hold);
        free(e);
    }
    pthread_mutex_unlock(&s->lock);
    return raw;
}

uint64_t yfs_pages_room(yfs_pages *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t room = s->cap - s->bytes;
    pthread_mutex_unlock(&s->lock);
    return room;
}
