#include "yfs_pages.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

#include "yfs_list.h"

#define BUCKETS 8192

typedef struct entry {
    uint64_t epoch, need;
    uint32_t key, len;
    uint8_t *raw;
    struct entry *chain;       /* hash bucket */
    yfs_link age;              /* insertion order, in the age list or the pinned one */
    size_t at[2];              /* index in each heap (not pinned) */
    int pinned;
} entry;

typedef struct heap {
    struct entry **v;
    size_t n, cap;
} heap;

typedef struct reader_at {
    const void *reader;
    uint64_t epoch, at;
} reader_at;

struct yfs_pages {
    yfs_budget *budget;
    uint64_t cap;
    yfs_stats *stats;
    pthread_mutex_t lock; /* guards everything below */
    entry *buckets[BUCKETS];
    yfs_list age;         /* every entry not pinned, oldest first */
    yfs_list pinned;      /* the pinned entries, oldest first: in neither heap */
    heap heaps[2];        /* every entry, by (epoch, need): the soonest and the last on top */
    uint64_t bytes;
    reader_at *readers;
    size_t num_readers, readers_cap;
};

static size_t bucket_of(uint64_t epoch, uint32_t key)
{
    uint64_t h = (epoch * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)key * 0xc2b2ae3d27d4eb4full);
    return (size_t)((h ^ (h >> 31)) % BUCKETS);
}

/* ---- two heaps over the entries by (epoch, need) ---- */

enum { SOONEST, LAST }; /* a min-heap and a max-heap */

/* a is needed after b */
static int later(const entry *a, const entry *b)
{
    return a->epoch != b->epoch ? a->epoch > b->epoch : a->need > b->need;
}

/* a belongs above b in heap h */
static int above(int h, const entry *a, const entry *b)
{
    return h == LAST ? later(a, b) : later(b, a);
}

static void heap_set(heap *hp, int h, size_t i, entry *e)
{
    hp->v[i] = e;
    e->at[h] = i;
}

static void sift_up(heap *hp, int h, size_t i)
{
    entry *e = hp->v[i];
    for (; i > 0 && above(h, e, hp->v[(i - 1) / 2]); i = (i - 1) / 2)
        heap_set(hp, h, i, hp->v[(i - 1) / 2]);
    heap_set(hp, h, i, e);
}

static void sift_down(heap *hp, int h, size_t i)
{
    entry *e = hp->v[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= hp->n)
            break;
        if (c + 1 < hp->n && above(h, hp->v[c + 1], hp->v[c]))
            c++;
        if (!above(h, hp->v[c], e))
            break;
        heap_set(hp, h, i, hp->v[c]);
        i = c;
    }
    heap_set(hp, h, i, e);
}

/* Room for one more entry in both heaps: 0, or -1 when out of memory. */
static int heaps_grow(yfs_pages *s)
{
    for (int h = SOONEST; h <= LAST; h++) {
        heap *hp = &s->heaps[h];
        if (hp->n < hp->cap)
            continue;
        size_t cap = hp->cap ? 2 * hp->cap : 256;
        entry **grown = realloc(hp->v, cap * sizeof *grown);
        if (!grown)
            return -1;
        hp->v = grown;
        hp->cap = cap;
    }
    return 0;
}

static void heaps_add(yfs_pages *s, entry *e)
{
    for (int h = SOONEST; h <= LAST; h++) {
        heap *hp = &s->heaps[h];
        assert(hp->n < hp->cap);
        hp->v[hp->n++] = e;
        sift_up(hp, h, hp->n - 1);
    }
}

static void heaps_remove(yfs_pages *s, entry *e)
{
    for (int h = SOONEST; h <= LAST; h++) {
        heap *hp = &s->heaps[h];
        size_t i = e->at[h];
        assert(i < hp->n && hp->v[i] == e);
        entry *last = hp->v[--hp->n];
        if (last == e)
            continue;
        heap_set(hp, h, i, last);
        sift_up(hp, h, i);
        sift_down(hp, h, last->at[h]);
    }
}

static entry *heap_top(const yfs_pages *s, int h)
{
    return s->heaps[h].n ? s->heaps[h].v[0] : NULL;
}

/* ---- readers ---- */

/* Whether a reader reads epoch (lock held). */
static int epoch_read(const yfs_pages *s, uint64_t epoch)
{
    for (size_t i = 0; i < s->num_readers; i++)
        if (s->readers[i].epoch == epoch)
            return 1;
    return 0;
}

/* Whether e is needed by no reader (lock held). */
static int stale(const yfs_pages *s, const entry *e)
{
    for (size_t i = 0; i < s->num_readers; i++)
        if (s->readers[i].epoch == e->epoch && s->readers[i].at <= e->need)
            return 0;
    return 1;
}

void yfs_pages_reader_at(yfs_pages *s, const void *reader, uint64_t epoch, uint64_t at)
{
    pthread_mutex_lock(&s->lock);
    size_t i = 0;
    while (i < s->num_readers && s->readers[i].reader != reader)
        i++;
    if (i == s->num_readers && s->num_readers == s->readers_cap) {
        size_t cap = s->readers_cap ? 2 * s->readers_cap : 16;
        reader_at *grown = realloc(s->readers, cap * sizeof *grown);
        if (!grown) { /* unrecorded, its pages count as stale: only I/O is lost */
            pthread_mutex_unlock(&s->lock);
            return;
        }
        s->readers = grown;
        s->readers_cap = cap;
    }
    if (i == s->num_readers)
        s->num_readers++;
    s->readers[i] = (reader_at){ reader, epoch, at };
    pthread_mutex_unlock(&s->lock);
}

void yfs_pages_reader_gone(yfs_pages *s, const void *reader)
{
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->num_readers; i++)
        if (s->readers[i].reader == reader) {
            s->readers[i] = s->readers[--s->num_readers];
            break;
        }
    pthread_mutex_unlock(&s->lock);
}

/* ---- entries ---- */

static uint64_t reclaim(void *ctx, uint64_t need, int demand, const yfs_hold *asking);
static uint64_t idle(void *ctx, int demand, const yfs_hold *asking);

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

void yfs_pages_set_cap(yfs_pages *s, uint64_t cap)
{
    pthread_mutex_lock(&s->lock);
    assert(s->bytes == 0);
    s->cap = cap;
    pthread_mutex_unlock(&s->lock);
}

/* Unlink e from its bucket, the age list and the heap (lock held); the
 * caller owns it. */
static void unlink_entry(yfs_pages *s, entry *e)
{
    entry **p = &s->buckets[bucket_of(e->epoch, e->key)];
    while (*p != e)
        p = &(*p)->chain;
    *p = e->chain;
    if (e->pinned) {
        yfs_list_remove(&s->pinned, &e->age);
    } else {
        yfs_list_remove(&s->age, &e->age);
        heaps_remove(s, e);
    }
    s->bytes -= e->len;
}

static void drop(yfs_pages *s, entry *e)
{
    unlink_entry(s, e);
    free(e->raw);
    yfs_budget_release(s->budget, e->len, YFS_MEM_PARKED, NULL);
    free(e);
    yfs_count(&s->stats->loaded_pages_dropped, 1);
}

/* A stale entry, or NULL (lock held): the oldest pinned one or the oldest,
 * if no reader reads its epoch, else the one needed soonest, if every
 * reader is past it. */
static entry *stale_one(const yfs_pages *s)
{
    entry *pinned = s->pinned.head ? YFS_CONTAINER(s->pinned.head, entry, age) : NULL;
    if (pinned && stale(s, pinned))
        return pinned;
    entry *oldest = s->age.head ? YFS_CONTAINER(s->age.head, entry, age) : NULL;
    if (oldest && !epoch_read(s, oldest->epoch))
        return oldest;
    entry *soonest = heap_top(s, SOONEST);
    return soonest && stale(s, soonest) ? soonest : NULL;
}

/* The entry to drop for room for what is needed at (epoch, need), or NULL
 * when every entry is needed sooner; any = 1: whatever is needed (lock
 * held). */
static entry *victim(const yfs_pages *s, uint64_t epoch, uint64_t need, int any)
{
    entry *e = stale_one(s);
    if (e)
        return e;
    entry *last = heap_top(s, LAST);
    entry room_for = { .epoch = epoch, .need = need };
    return last && (any || later(last, &room_for)) ? last : NULL;
}

/* Drop entries until `bytes` fit (lock held): 1 when they do. */
static int room_for(yfs_pages *s, uint64_t bytes, uint64_t epoch, uint64_t need, int any)
{
    while (s->bytes + bytes > s->cap) { /* pinned entries may hold more than cap */
        entry *e = victim(s, epoch, need, any);
        if (!e)
            return 0;
        drop(s, e);
    }
    return 1;
}

/* A reservation short of room: stale entries are worth nothing to anyone;
 * for a demand read, parked pages are only a saving of I/O. */
static uint64_t reclaim(void *ctx, uint64_t need, int demand, const yfs_hold *asking)
{
    (void)asking; /* the same for every activity */
    yfs_pages *s = ctx;
    pthread_mutex_lock(&s->lock);
    /* Without readers nothing is known to be worthless (the framed store). */
    if (!demand && s->num_readers == 0)
        need = 0;
    for (uint64_t freed = 0; freed < need;) {
        entry *e = demand ? victim(s, 0, 0, 1) : stale_one(s);
        if (!e && demand && s->pinned.head) /* the builds read them again */
            e = YFS_CONTAINER(s->pinned.head, entry, age);
        if (!e)
            break;
        freed += e->len;
        drop(s, e);
    }
    pthread_mutex_unlock(&s->lock);
    return 0;
}

/* What reclaim drops for a demand read: every parked page. */
static uint64_t idle(void *ctx, int demand, const yfs_hold *asking)
{
    (void)asking; /* the same for every activity */
    (void)demand; /* the same at every level */
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
    while (heap_top(s, LAST))
        drop(s, heap_top(s, LAST));
    while (s->pinned.head)
        drop(s, YFS_CONTAINER(s->pinned.head, entry, age));
    free(s->heaps[SOONEST].v);
    free(s->heaps[LAST].v);
    free(s->readers);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* The entry of (epoch, key), or NULL (lock held). */
static entry *find(const yfs_pages *s, uint64_t epoch, uint32_t key)
{
    entry *e = s->buckets[bucket_of(epoch, key)];
    while (e && (e->epoch != epoch || e->key != key))
        e = e->chain;
    return e;
}

/* Give up a page the store does not keep. */
static void refuse(yfs_pages *s, uint8_t *raw, uint32_t len, yfs_hold *hold)
{
    free(raw);
    yfs_budget_release(s->budget, len, YFS_MEM_RAW, hold);
    yfs_count(&s->stats->loaded_pages_dropped, 1);
}

/* yfs_pages_put, or yfs_pages_put_pinned (pinned = 1). */
static void put(yfs_pages *s, uint64_t epoch, uint32_t key, uint64_t need, uint8_t *raw,
                uint32_t len, yfs_hold *hold, int pinned)
{
    entry *e = len <= s->cap ? malloc(sizeof *e) : NULL;
    if (!e) {
        refuse(s, raw, len, hold);
        return;
    }
    *e = (entry){ .epoch = epoch, .need = need, .key = key, .len = len, .raw = raw,
                  .pinned = pinned };
    pthread_mutex_lock(&s->lock);
    size_t b = bucket_of(epoch, key);
    entry *same = find(s, epoch, key);
    /* Kept once (a rebuilt plan may load a page again), and only into room. */
    if (same || (!pinned && (heaps_grow(s) < 0 || !room_for(s, len, epoch, need, 0)))) {
        pthread_mutex_unlock(&s->lock);
        free(e);
        if (same) {
            free(raw);
            yfs_budget_release(s->budget, len, YFS_MEM_RAW, hold);
        } else {
            refuse(s, raw, len, hold);
        }
        return;
    }
    yfs_budget_transfer(s->budget, len, YFS_MEM_RAW, hold, YFS_MEM_PARKED, NULL);
    e->chain = s->buckets[b];
    s->buckets[b] = e;
    if (pinned) {
        yfs_list_push(&s->pinned, &e->age);
    } else {
        yfs_list_push(&s->age, &e->age);
        heaps_add(s, e);
    }
    s->bytes += len;
    pthread_mutex_unlock(&s->lock);
}

void yfs_pages_put(yfs_pages *s, uint64_t epoch, uint32_t key, uint64_t need, uint8_t *raw,
                   uint32_t len, yfs_hold *hold)
{
    put(s, epoch, key, need, raw, len, hold, 0);
}

void yfs_pages_put_pinned(yfs_pages *s, uint64_t epoch, uint32_t key, uint64_t need,
                          uint8_t *raw, uint32_t len, yfs_hold *hold)
{
    put(s, epoch, key, need, raw, len, hold, 1);
}

int yfs_pages_holds(yfs_pages *s, uint64_t epoch, uint32_t key)
{
    pthread_mutex_lock(&s->lock);
    int held = find(s, epoch, key) != NULL;
    pthread_mutex_unlock(&s->lock);
    return held;
}

uint8_t *yfs_pages_take(yfs_pages *s, uint64_t epoch, uint32_t key, yfs_hold *hold,
                        uint32_t *len)
{
    pthread_mutex_lock(&s->lock);
    entry *e = find(s, epoch, key);
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

void yfs_pages_pin(yfs_pages *s, uint64_t epoch, uint32_t key)
{
    pthread_mutex_lock(&s->lock);
    entry *e = find(s, epoch, key);
    if (e && !e->pinned) {
        yfs_list_remove(&s->age, &e->age);
        heaps_remove(s, e);
        yfs_list_push(&s->pinned, &e->age);
        e->pinned = 1;
    }
    pthread_mutex_unlock(&s->lock);
}

int yfs_pages_make_room(yfs_pages *s, uint64_t bytes, uint64_t epoch, uint64_t need)
{
    pthread_mutex_lock(&s->lock);
    int ok = bytes <= s->cap && room_for(s, bytes, epoch, need, 0);
    pthread_mutex_unlock(&s->lock);
    return ok;
}
