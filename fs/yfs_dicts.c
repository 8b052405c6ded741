#include "yfs_dicts.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "ix_claims.h"
#include "ix_read.h"
#include "pq_page.h"
#include "yfs_list.h"

struct yfs_dict {
    uint32_t chunk;
    pq_dictionary dict;
    size_t bytes;
    int refs;              /* guarded by the cache lock, like the links */
    yfs_link lru;          /* in the LRU list while unreferenced */
};

struct yfs_dicts {
    const ix_index *ix;
    yfs_budget *budget;
    uint64_t cap;
    yfs_stats *stats;
    pthread_mutex_t lock;  /* guards everything below */
    yfs_dict **by_chunk;   /* ix->num_chunks slots */
    yfs_list lru;          /* unreferenced entries, least recently used first */
    uint64_t idle_bytes;   /* bytes of unreferenced entries */
};

static uint64_t reclaim(void *ctx, uint64_t need, int demand, const yfs_hold *asking);
static uint64_t idle(void *ctx, int demand, const yfs_hold *asking);

yfs_dicts *yfs_dicts_new(const ix_index *ix, yfs_budget *budget, uint64_t cap,
                         yfs_stats *stats)
{
    yfs_dicts *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->by_chunk = calloc(ix->num_chunks ? ix->num_chunks : 1, sizeof *c->by_chunk);
    if (!c->by_chunk) {
        free(c);
        return NULL;
    }
    c->ix = ix;
    c->budget = budget;
    c->cap = cap;
    c->stats = stats;
    pthread_mutex_init(&c->lock, NULL);
    yfs_budget_add_reclaimer(budget, reclaim, idle, c);
    return c;
}

void yfs_dicts_set_cap(yfs_dicts *c, uint64_t cap)
{
    pthread_mutex_lock(&c->lock);
    assert(c->idle_bytes == 0);
    c->cap = cap;
    pthread_mutex_unlock(&c->lock);
}

static void entry_free(yfs_dicts *c, yfs_dict *d)
{
    pq_dictionary_free(&d->dict);
    yfs_budget_release(c->budget, d->bytes, YFS_MEM_DICTIONARIES, NULL);
    free(d);
}

void yfs_dicts_free(yfs_dicts *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->ix->num_chunks; i++)
        if (c->by_chunk[i])
            entry_free(c, c->by_chunk[i]);
    free(c->by_chunk);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static void lru_unlink(yfs_dicts *c, yfs_dict *d)
{
    yfs_list_remove(&c->lru, &d->lru);
    c->idle_bytes -= d->bytes;
}

static yfs_dict *least_recent(const yfs_dicts *c)
{
    return c->lru.head ? YFS_CONTAINER(c->lru.head, yfs_dict, lru) : NULL;
}

/* Drop least recently used idle dictionaries until at most keep bytes of
 * them are left (lock held); returns the bytes freed. */
static uint64_t trim(yfs_dicts *c, uint64_t keep)
{
    uint64_t freed = 0;
    yfs_dict *d;
    while (c->idle_bytes > keep && (d = least_recent(c))) {
        lru_unlink(c, d);
        c->by_chunk[d->chunk] = NULL;
        freed += d->bytes;
        entry_free(c, d);
    }
    return freed;
}

/* Idle dictionaries kept while builds still run (a demand reservation at
 * YFS_RECLAIM_DEMAND or _IMPATIENT): the most recently used, up to half the
 * cache. An idle dictionary is only a saving of I/O, but the decodes of a
 * page-shuffled epoch come back to the same few chunks again and again:
 * dropped for every decode short of room, 8 dicts of tokens (list<int64>,
 * one row group per file) were read 174 times in an epoch's first 200 MB,
 * each time inside a decode holding its memory, at 50 ms a read; dropped
 * whenever a wait ran out of patience, 250 times for 280 pages. All go
 * when nobody running could make room or a wait runs out of patience twice
 * (YFS_RECLAIM_ALL). */
static uint64_t kept_idle(const yfs_dicts *c, int demand)
{
    return demand == YFS_RECLAIM_ALL ? 0 : c->cap / 2;
}

/* A demand read short of room. */
static uint64_t reclaim(void *ctx, uint64_t need, int demand, const yfs_hold *asking)
{
    (void)asking; /* the same for every activity */
    yfs_dicts *c = ctx;
    if (!demand)
        return 0;
    pthread_mutex_lock(&c->lock);
    uint64_t keep = kept_idle(c, demand);
    for (uint64_t freed = 0; freed < need && least_recent(c) && c->idle_bytes > keep;)
        freed += trim(c, c->idle_bytes - least_recent(c)->bytes);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* What reclaim drops for a demand read at that level: the idle
 * dictionaries past those it keeps. */
static uint64_t idle(void *ctx, int demand, const yfs_hold *asking)
{
    (void)asking; /* the same for every activity */
    yfs_dicts *c = ctx;
    pthread_mutex_lock(&c->lock);
    uint64_t keep = kept_idle(c, demand);
    uint64_t bytes = c->idle_bytes > keep ? c->idle_bytes - keep : 0;
    pthread_mutex_unlock(&c->lock);
    return bytes;
}

/* Bytes a decoded dictionary may take, from its page header: the
 * decompressed page, booleans materialised after it, a slice per entry and
 * the cache entry; reserved once the page is read and its header parsed
 * (ix_read_dictionary_sized), before it is decoded. The header comes with
 * the page's one read: an earlier version peeked at it with a read of its
 * own, a second request per dictionary to an object store. */
typedef struct dict_charge {
    yfs_dicts *c;
    yfs_hold *hold;
    uint64_t bound; /* reserved as YFS_MEM_DICTIONARIES; 0 until then */
} dict_charge;

static void charge_decoded(void *ctx, const pq_page_header *h)
{
    dict_charge *d = ctx;
    assert(d->bound == 0); /* called once per read */
    if (h->uncompressed_size < 0 || h->num_values < 0)
        return; /* the decode refuses it */
    d->bound = ix_page_hold_bytes(h, 0) + sizeof(yfs_dict);
    yfs_budget_reserve(d->c->budget, d->bound, YFS_MEM_DICTIONARIES, YFS_DEMAND, d->hold);
}

int yfs_dicts_get(yfs_dicts *c, uint32_t chunk, yfs_hold *hold, const pq_dictionary **dict,
                  yfs_dict **handle, pq_error *err)
{
    pthread_mutex_lock(&c->lock);
    yfs_dict *d = c->by_chunk[chunk];
    if (d) {
        if (d->refs++ == 0)
            lru_unlink(c, d);
        pthread_mutex_unlock(&c->lock);
        *dict = &d->dict;
        *handle = d;
        return 0;
    }
    pthread_mutex_unlock(&c->lock);

    /* Load without the lock; if another thread loaded the same dictionary
     * meanwhile, keep theirs. */
    uint32_t raw = c->ix->chunks[chunk].dict_length;
    dict_charge charge = { c, hold, 0 };
    yfs_budget_reserve(c->budget, raw, YFS_MEM_RAW, YFS_DEMAND, hold);
    yfs_dict *fresh = calloc(1, sizeof *fresh);
    uint64_t bytes_read = 0;
    int rc = fresh ? ix_read_dictionary_sized(c->ix, chunk, charge_decoded, &charge,
                                              &fresh->dict, &bytes_read, err)
                   : pq_error_set(err, "out of memory for a dictionary");
    yfs_budget_release(c->budget, raw, YFS_MEM_RAW, hold); /* freed by now */
    uint64_t bound = charge.bound;
    if (rc < 0) {
        yfs_budget_release(c->budget, bound, YFS_MEM_DICTIONARIES, hold);
        free(fresh);
        return -1;
    }
    yfs_count(&c->stats->bytes_read, bytes_read);
    yfs_count(&c->stats->dictionaries_loaded, 1);
    fresh->chunk = chunk;
    fresh->bytes = pq_dictionary_bytes(&fresh->dict) + sizeof *fresh;
    /* Settled to its size, and owned by the cache from now on. */
    yfs_budget_settle(c->budget, bound, fresh->bytes, YFS_MEM_DICTIONARIES, hold);
    yfs_budget_transfer(c->budget, fresh->bytes, YFS_MEM_DICTIONARIES, hold,
                        YFS_MEM_DICTIONARIES, NULL);

    pthread_mutex_lock(&c->lock);
    d = c->by_chunk[chunk];
    if (d) {
        if (d->refs++ == 0)
            lru_unlink(c, d);
    } else {
        d = c->by_chunk[chunk] = fresh;
        d->refs = 1;
        fresh = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    if (fresh)
        entry_free(c, fresh);
    *dict = &d->dict;
    *handle = d;
    return 0;
}

void yfs_dicts_put(yfs_dicts *c, yfs_dict *d)
{
    pthread_mutex_lock(&c->lock);
    if (--d->refs == 0) {
        yfs_list_push(&c->lru, &d->lru);
        c->idle_bytes += d->bytes;
        trim(c, c->cap);
    }
    pthread_mutex_unlock(&c->lock);
}

static int source_get(void *ctx, uint32_t chunk, const pq_dictionary **dict, void **handle,
                      pq_error *err)
{
    yfs_dict_source *src = ctx;
    yfs_dict *d;
    if (yfs_dicts_get(src->dicts, chunk, src->hold, dict, &d, err) < 0)
        return -1;
    *handle = d;
    return 0;
}

ix_dict_source yfs_dicts_source(yfs_dict_source *ctx)
{
    return (ix_dict_source){ source_get, ctx };
}
