#include "yfs_pages.h"

#include <pthread.h>
#include <stdlib.h>

#define BUCKETS 8192

typedef struct entry {
    uint64_t epoch;
    uint32_t page, len;
    uint8_t *raw;
    struct entry *chain;       /* hash bucket */
    struct entry *older, *newer; /* insertion order: the oldest is dropped first */
} entry;

struct yfs_pages {
    uint64_t budget;
    yfs_stats *stats;
    pthread_mutex_t lock; /* guards everything below */
    entry *buckets[BUCKETS];
    entry *oldest, *newest;
    uint64_t bytes;
};

static size_t bucket_of(uint64_t epoch, uint32_t page)
{
    uint64_t h = (epoch * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)page * 0xc2b2ae3d27d4eb4full);
    return (size_t)((h ^ (h >> 31)) % BUCKETS);
}

yfs_pages *yfs_pages_new(uint64_t budget, yfs_stats *stats)
{
    yfs_pages *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->budget = budget;
    s->stats = stats;
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

/* Unlink e from its bucket and the age list (lock held); the caller owns it. */
static void unlink_entry(yfs_pages *s, entry *e)
{
    entry **p = &s->buckets[bucket_of(e->epoch, e->page)];
    while (*p != e)
        p = &(*p)->chain;
    *p = e->chain;
    if (e->older)
        e->older->newer = e->newer;
    else
        s->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        s->newest = e->older;
    s->bytes -= e->len;
}

void yfs_pages_free(yfs_pages *s)
{
    if (!s)
        return;
    for (entry *e = s->oldest, *next; e; e = next) {
        next = e->newer;
        free(e->raw);
        free(e);
    }
    pthread_mutex_destroy(&s->lock);
    free(s);
}

void yfs_pages_put(yfs_pages *s, uint64_t epoch, uint32_t page, uint8_t *raw, uint32_t len)
{
    entry *e = len <= s->budget ? malloc(sizeof *e) : NULL;
    if (!e) {
        free(raw);
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
            free(e);
            return;
        }
    }
    while (s->bytes + len > s->budget && s->oldest) {
        entry *old = s->oldest;
        unlink_entry(s, old);
        free(old->raw);
        free(old);
        yfs_count(&s->stats->loaded_pages_dropped, 1);
    }
    e->chain = s->buckets[b];
    s->buckets[b] = e;
    e->older = s->newest;
    if (s->newest)
        s->newest->newer = e;
    else
        s->oldest = e;
    s->newest = e;
    s->bytes += len;
    pthread_mutex_unlock(&s->lock);
}

uint8_t *yfs_pages_take(yfs_pages *s, uint64_t epoch, uint32_t page)
{
    pthread_mutex_lock(&s->lock);
    entry *e = s->buckets[bucket_of(epoch, page)];
    while (e && (e->epoch != epoch || e->page != page))
        e = e->chain;
    uint8_t *raw = NULL;
    if (e) {
        unlink_entry(s, e);
        raw = e->raw;
        free(e);
    }
    pthread_mutex_unlock(&s->lock);
    return raw;
}
